/* statetool graph: a state's resources and their edges as Graphviz DOT (or SVG through dot). */
#include "cli.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { OPT_URN = 3100, OPT_TYPE, OPT_FORMAT };

static const char help[] =
	"usage: statetool graph [options] STATE\n"
	"       statetool graph [options] --backend URL --stack NAME\n"
	"\n"
	"The resources of a state and the edges between them as a Graphviz DOT graph:\n"
	"one node per URN (label: name and type; box: custom resource, ellipse:\n"
	"component, hexagon: provider; dashed outline: only copies marked delete: true),\n"
	"in state order, and from each resource, in this order, an edge to:\n"
	"  its parent             solid, black            (kind=parent)\n"
	"  its provider           bold, blue              (kind=provider)\n"
	"  each dependency        dashed, labelled with the properties that depend on it\n"
	"                         (dependencies and propertyDependencies) (kind=dependency)\n"
	"  deletedWith            dotted, red             (kind=deletedWith)\n"
	"  each replaceWith       dotted, orange          (kind=replaceWith)\n"
	"A reference to a URN the state does not hold gets a node of its own, drawn\n"
	"dashed and grey (label: \"missing\"). A URN with several copies (a live one and\n"
	"copies marked delete: true) is one node with the edges of all its copies, each\n"
	"kind and target once; one only a delete: true copy holds carries copy=delete.\n"
	"\n"
	"Options:\n"
	"  --urn GLOB         keep the resources whose URN matches (fnmatch: *, ?, [...]);\n"
	"                     repeatable (any matches)\n"
	"  --type TYPE        keep the resources of this type (a glob too); repeatable\n"
	"                     With both, a resource must match both. Only edges between\n"
	"                     kept resources are drawn: an edge to a resource filtered out\n"
	"                     is dropped, and a comment at the top of the graph counts them.\n"
	"  --format dot|svg   DOT (the default), or SVG made by Graphviz's `dot -Tsvg`\n"
	"                     (an error when dot is not installed)\n"
	"  -o, --output FILE  write to FILE ('-' = standard output); a name ending in .svg\n"
	"                     implies --format svg (--format dot with it: a usage error)\n"
	"  --max-size SIZE    refuse files that inflate beyond SIZE (default 4G)\n"
	"  --backend URL -s, --stack NAME   a stack of a DIY backend\n"
	"  -h, --help         show this help\n";

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static int jbool(const json_t *o, const char *k)
{
	return json_is_true(json_object_get(o, k));
}

typedef struct gopts {
	char **urns, **types;
	int nurns, ntypes;
} gopts;

static int any_match(char **globs, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (fnmatch(globs[i], s, 0) == 0)
			return 1;
	return 0;
}

static int kept(const gopts *g, const char *urn, const char *type)
{
	return (!g->nurns || any_match(g->urns, g->nurns, urn)) &&
	       (!g->ntypes || any_match(g->types, g->ntypes, type ? type : ""));
}

static void dq(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* The URN of a provider reference <urn>::<id>. New. */
static char *prov_urn(const char *ref)
{
	const char *p = strstr(ref, "::"), *last = NULL;
	while (p) {
		last = p;
		p = strstr(p + 2, "::");
	}
	return last ? strndup(ref, (size_t)(last - ref)) : strdup(ref);
}

typedef struct gctx {
	FILE *f;
	json_t *nodes;   /* URN -> resource (the live copy, else the first) */
	json_t *keep;    /* URN -> true for kept nodes */
	json_t *missing; /* URN -> true: referenced, not in the state (kept if it matches) */
	json_t *copies;  /* URN -> [the other copies] */
	json_t *drawn;   /* the node's edges drawn so far: "KIND\nTO" -> true */
	int copy;        /* the edges are a delete: true copy's, the node's a live one */
	const gopts *g;
	size_t dropped;
	int pass; /* 0: count and find missing nodes, 1: print */
} gctx;

static void edge(gctx *c, const char *from, const char *to, const char *kind, const char *attrs,
		 const char *label)
{
	if (!json_object_get(c->nodes, to)) {
		if (c->pass == 0 && kept(c->g, to, NULL))
			json_object_set_new(c->missing, to, json_true());
	}
	/* one edge of a kind to a target per node, whichever of its copies holds it */
	char *key = malloc(strlen(kind) + strlen(to) + 2);
	if (!key)
		return;
	sprintf(key, "%s\n%s", kind, to);
	if (json_object_get(c->drawn, key)) {
		free(key);
		return;
	}
	json_object_set_new(c->drawn, key, json_true());
	free(key);
	if (!json_object_get(c->keep, to) && !json_object_get(c->missing, to)) {
		if (c->pass == 0)
			c->dropped++;
		return;
	}
	if (c->pass == 0)
		return;
	fputc('\t', c->f);
	dq(c->f, from);
	fputs(" -> ", c->f);
	dq(c->f, to);
	fprintf(c->f, " [kind=%s, %s%s", kind, attrs, c->copy ? ", copy=delete" : "");
	if (label && *label) {
		fputs(", label=", c->f);
		dq(c->f, label);
	}
	fputs("];\n", c->f);
}

static void edges_of(gctx *c, json_t *r)
{
	const char *urn = jstr(r, "urn"), *s;
	json_t *deps = json_object_get(r, "dependencies"), *pd = json_object_get(r, "propertyDependencies");
	json_t *targets = json_object(), *v, *x;
	size_t i, k;
	const char *key;

	if ((s = jstr(r, "parent")) && *s)
		edge(c, urn, s, "parent", "style=solid, color=black", NULL);
	if ((s = jstr(r, "provider")) && *s) {
		char *p = prov_urn(s);
		if (p)
			edge(c, urn, p, "provider", "style=bold, color=blue", NULL);
		free(p);
	}
	/* dependency targets in order: dependencies, then propertyDependencies' others; each
	 * labelled with the sorted property keys that depend on it */
	json_array_foreach(deps, i, v)
		if (json_is_string(v) && !json_object_get(targets, json_string_value(v)))
			json_object_set_new(targets, json_string_value(v), json_string(""));
	const char **pkeys = malloc((json_object_size(pd) + 1) * sizeof(*pkeys));
	size_t np = 0;
	json_object_foreach(pd, key, x)
		if (pkeys)
			pkeys[np++] = key;
	for (size_t a = 0; pkeys && a < np; a++)
		for (size_t b = a + 1; b < np; b++)
			if (strcmp(pkeys[a], pkeys[b]) > 0) {
				const char *t = pkeys[a];
				pkeys[a] = pkeys[b];
				pkeys[b] = t;
			}
	for (k = 0; pkeys && k < np; k++) {
		json_array_foreach(json_object_get(pd, pkeys[k]), i, v) {
			if (!json_is_string(v))
				continue;
			json_t *lab = json_object_get(targets, json_string_value(v));
			const char *old = lab ? json_string_value(lab) : "";
			char *nl = malloc(strlen(old) + strlen(pkeys[k]) + 2);
			if (!nl)
				continue;
			size_t ol = strlen(old), kl = strlen(pkeys[k]);
			int last = ol >= kl && !strcmp(old + ol - kl, pkeys[k]) &&
				   (ol == kl || old[ol - kl - 1] == ',');
			if (*old && !last)
				sprintf(nl, "%s,%s", old, pkeys[k]);
			else
				strcpy(nl, *old ? old : pkeys[k]);
			json_object_set_new(targets, json_string_value(v), json_string(nl));
			free(nl);
		}
	}
	free(pkeys);
	json_object_foreach(targets, key, x)
		edge(c, urn, key, "dependency", "style=dashed", json_string_value(x));
	json_decref(targets);
	if ((s = jstr(r, "deletedWith")) && *s)
		edge(c, urn, s, "deletedWith", "style=dotted, color=red", NULL);
	json_array_foreach(json_object_get(r, "replaceWith"), i, v)
		if (json_is_string(v))
			edge(c, urn, json_string_value(v), "replaceWith", "style=dotted, color=orange",
			     NULL);
}

static void node(FILE *f, const char *urn, json_t *r)
{
	st_urn u;
	const char *type = jstr(r, "type");
	char *name = st_urn_parse(urn, &u) == ST_OK ? strndup(u.name, u.name_len) : strdup(urn);
	char *label = name ? malloc(strlen(name) + strlen(type ? type : "") + 2) : NULL;
	const char *shape = st_type_is_provider(type ? type : "") ? "hexagon"
			    : json_is_true(json_object_get(r, "custom")) ? "box" : "ellipse";
	if (!label) {
		free(name);
		return;
	}
	sprintf(label, "%s\n%s", name, type ? type : "");
	fputc('\t', f);
	dq(f, urn);
	fputs(" [label=", f);
	dq(f, label);
	fprintf(f, ", shape=%s%s];\n", shape, jbool(r, "delete") ? ", style=dashed" : "");
	free(name);
	free(label);
}

static int write_dot(FILE *f, st_state *s, const gopts *g)
{
	json_t *res = st_state_resources(s, 0), *r;
	gctx c = {f, json_object(), json_object(), json_object(), json_object(), NULL, 0, g, 0, 0};
	size_t i;
	const char *urn;

	json_array_foreach(res, i, r) {
		const char *u = jstr(r, "urn");
		json_t *have;
		if (!u)
			continue;
		have = json_object_get(c.nodes, u);
		if (!have || (jbool(have, "delete") && !jbool(r, "delete")))
			json_object_set(c.nodes, u, r);
		if (have) { /* the copy not drawn as the node: its edges are drawn too */
			json_t *o = json_object_get(c.copies, u);
			if (!o)
				json_object_set_new(c.copies, u, o = json_array());
			json_array_append(o, have == json_object_get(c.nodes, u) ? r : have);
		}
		if (kept(g, u, jstr(r, "type")))
			json_object_set_new(c.keep, u, json_true());
	}
	for (c.pass = 0; c.pass < 2; c.pass++) {
		if (c.pass == 1) {
			fprintf(f, "digraph state {\n");
			if (g->nurns || g->ntypes)
				fprintf(f, "\t// filtered: %zu resources kept, %zu edges to resources "
					   "filtered out dropped\n",
					json_object_size(c.keep), c.dropped);
			fprintf(f, "\trankdir=LR;\n\tnode [fontsize=10];\n\tedge [fontsize=8];\n");
			json_object_foreach(c.nodes, urn, r)
				if (json_object_get(c.keep, urn))
					node(f, urn, r);
			json_object_foreach(c.missing, urn, r) {
				fputc('\t', f);
				dq(f, urn);
				fputs(" [label=\"missing\", style=dashed, color=grey];\n", f);
			}
		}
		json_object_foreach(c.nodes, urn, r) {
			json_t *o;
			size_t k;
			if (!json_object_get(c.keep, urn))
				continue;
			c.drawn = json_object();
			c.copy = 0;
			edges_of(&c, r);
			json_array_foreach(json_object_get(c.copies, urn), k, o) {
				c.copy = jbool(o, "delete") && !jbool(r, "delete");
				edges_of(&c, o);
			}
			json_decref(c.drawn);
		}
	}
	fprintf(f, "}\n");
	json_decref(c.nodes);
	json_decref(c.keep);
	json_decref(c.missing);
	json_decref(c.copies);
	return ferror(f) ? -1 : 0;
}

/* Is `dot` on $PATH? */
static int have_dot(void)
{
	const char *path = getenv("PATH");
	char buf[4096];
	if (!path)
		return 0;
	while (*path) {
		const char *e = strchr(path, ':');
		size_t n = e ? (size_t)(e - path) : strlen(path);
		snprintf(buf, sizeof(buf), "%.*s/dot", (int)n, n ? path : ".");
		if (access(buf, X_OK) == 0)
			return 1;
		path += n + (e ? 1 : 0);
	}
	return 0;
}

/* Runs dot -Tsvg [-o out] with the DOT text on its standard input. */
static int run_dot(const char *dot, size_t len, const char *out)
{
	int fds[2], status;
	pid_t pid;
	if (pipe(fds)) {
		cli_errorf("cannot run dot: %s", strerror(errno));
		return EXIT_FAIL;
	}
	fflush(stdout);
	if ((pid = fork()) < 0) {
		cli_errorf("cannot run dot: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return EXIT_FAIL;
	}
	if (pid == 0) {
		dup2(fds[0], 0);
		close(fds[0]);
		close(fds[1]);
		if (out)
			execlp("dot", "dot", "-Tsvg", "-o", out, (char *)NULL);
		else
			execlp("dot", "dot", "-Tsvg", (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fds[1], dot + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(fds[1]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		cli_errorf("dot failed (exit status %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

int cmd_graph(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"stack", required_argument, NULL, OPT_STACK},
		{"max-size", required_argument, NULL, OPT_MAX_SIZE},
		{"urn", required_argument, NULL, OPT_URN},
		{"type", required_argument, NULL, OPT_TYPE},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	cli_target t = {0};
	gopts g = {0};
	const char *format = NULL, *out = NULL;
	int c, rc;
	st_state *s = NULL;
	char *text = NULL;
	size_t len = 0;

	g.urns = calloc((size_t)argc + 1, sizeof(char *));
	g.types = calloc((size_t)argc + 1, sizeof(char *));
	if (!g.urns || !g.types) {
		rc = EXIT_FAIL;
		goto out;
	}
	while ((c = cli_getopt(argc, argv, "ho:", opts)) != -1) {
		if (cli_target_option(&t, c, optarg))
			continue;
		switch (c) {
		case OPT_URN: g.urns[g.nurns++] = optarg; break;
		case OPT_TYPE: g.types[g.ntypes++] = optarg; break;
		case OPT_FORMAT: format = optarg; break;
		case 'o': out = optarg; break;
		case 'h': rc = cli_help(help); goto out;
		default: rc = cli_usage("graph", "bad option"); goto out;
		}
	}
	if (format && strcmp(format, "dot") && strcmp(format, "svg")) {
		rc = cli_usage("graph", "unknown format '%s' (dot or svg)", format);
		goto out;
	}
	int svg_name = out && strlen(out) > 4 && !strcmp(out + strlen(out) - 4, ".svg");
	if (format && !strcmp(format, "dot") && svg_name) {
		rc = cli_usage("graph", "give --format dot or -o '%s' (a .svg name means --format "
					"svg), not both",
			       out);
		goto out;
	}
	if (!format)
		format = svg_name ? "svg" : "dot";
	if (argc - optind > 1 || (argc - optind == 1) == !!t.stack) {
		rc = cli_usage("graph", t.stack ? "too many arguments" : "missing STATE");
		goto out;
	}
	t.arg = optind < argc ? argv[optind] : NULL;
	if (!strcmp(format, "svg") && !have_dot()) {
		cli_errorf("--format svg needs Graphviz's dot, which is not installed (not on "
			   "PATH): install graphviz, or write DOT (--format dot)");
		rc = EXIT_FAIL;
		goto out;
	}
	if ((rc = cli_target_resolve(&t, "graph", 1)) != EXIT_OK || (rc = cli_load(&t, &s)))
		goto out;
	FILE *mem = open_memstream(&text, &len);
	if (!mem || write_dot(mem, s, &g) || fclose(mem)) {
		cli_errorf("out of memory");
		rc = EXIT_FAIL;
		goto out;
	}
	if (!strcmp(format, "svg"))
		rc = run_dot(text, len, out && strcmp(out, "-") ? out : NULL);
	else
		rc = cli_write_output(out ? out : "-", text, len);
out:
	free(text);
	free(g.urns);
	free(g.types);
	st_state_free(s);
	cli_target_free(&t);
	return rc;
}
