/* statetool history: a stack's generations (Pulumi's backups and update history, the .bak). */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char help[] =
	"usage: statetool history [options] --backend URL --stack NAME\n"
	"       statetool history [options] STACKFILE\n"
	"\n"
	"List the generations of a stack of a DIY backend, newest first: the current\n"
	"state (current), its .bak (bak), the copies Pulumi's DIY backend keeps after each\n"
	"update and statetool after each change (.pulumi/backups/PROJECT/STACK/\n"
	"STACK.UNIXNANO.json[.gz|.zst]), and the states Pulumi keeps beside its update\n"
	"records (.pulumi/history/PROJECT/STACK/STACK-UNIXNANO.checkpoint.json, with the\n"
	"update's kind, result and message from the .history.json beside it). Each with\n"
	"its ID (what `restore --generation` and `diff #STACK@ID` take), time (UTC; from\n"
	"the name, else the object's modification time), size in bytes ('-', null: a store\n"
	"whose listing has none, PostgreSQL) and resource\n"
	"count (- when it cannot be read as a state).\n"
	"\n"
	"Options:\n"
	"  --backend URL -s, --stack NAME   the stack\n"
	"  --json             one JSON document\n"
	"  --max-size SIZE    refuse files that inflate beyond SIZE (default 4G)\n"
	"  -h, --help         show this help\n";

static const char *kind_name(st_generation_kind k)
{
	switch (k) {
	case ST_GEN_CURRENT: return "current";
	case ST_GEN_BAK: return "bak";
	case ST_GEN_BACKUP: return "backup";
	default: return "update";
	}
}

static void fmt_time(long long ns, char *buf, size_t n)
{
	time_t t = (time_t)(ns / 1000000000LL);
	struct tm tm;
	if (ns <= 0 || !gmtime_r(&t, &tm)) {
		snprintf(buf, n, "-");
		return;
	}
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The update's "kind, result: message" (new), or NULL. */
static char *update_note(const json_t *u)
{
	const char *kind = json_string_value(json_object_get(u, "kind"));
	const char *result = json_string_value(json_object_get(u, "result"));
	const char *msg = json_string_value(json_object_get(u, "message"));
	char *s = NULL;
	if (!u)
		return NULL;
	if (asprintf(&s, "%s%s%s%s%s", kind ? kind : "update", result ? ", " : "",
		     result ? result : "", msg && *msg ? ": " : "", msg && *msg ? msg : "") < 0)
		return NULL;
	return s;
}

/* A plain file has no generations: its .bak, when there is one, is what restore puts back. */
static int no_generations(const char *path)
{
	struct stat sb;
	char *bak = NULL;
	int has_bak = asprintf(&bak, "%s.bak", path) >= 0 && stat(bak, &sb) == 0;
	free(bak);
	if (has_bak)
		cli_errorf("'%s' is not a stack of a DIY backend: a file has no generations (only "
			   "%s.bak: `statetool restore %s` puts it back)",
			   path, path, path);
	else
		cli_errorf("'%s' is not a stack of a DIY backend: a file has no generations (and it "
			   "has no .bak)",
			   path);
	return EXIT_FAIL;
}

int cmd_history(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"stack", required_argument, NULL, OPT_STACK},
		{"json", no_argument, NULL, OPT_JSON},
		{"max-size", required_argument, NULL, OPT_MAX_SIZE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	cli_target t = {0};
	int c, rc, json = 0;
	st_generation *g = NULL;
	size_t n = 0, i;
	long long *counts = NULL;
	st_error err;

	st_error_clear(&err);
	while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
		if (cli_target_option(&t, c, optarg))
			continue;
		switch (c) {
		case OPT_JSON: json = 1; break;
		case 'h': return cli_help(help);
		default: return cli_usage("history", "bad option");
		}
	}
	if (argc - optind > 1 || (argc - optind == 1) == !!t.stack)
		return cli_usage("history", t.stack ? "too many arguments" : "missing --stack");
	t.arg = optind < argc ? argv[optind] : NULL;
	if ((rc = cli_target_resolve(&t, "history", 0)) != EXIT_OK)
		goto out;
	if (!t.backend && !t.exists) {
		rc = cli_target_missing(&t);
		goto out;
	}
	if (!t.backend) {
		rc = no_generations(t.path);
		goto out;
	}
	if (st_backend_generations(t.backend, t.qname, &g, &n, &err) != ST_OK) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto out;
	}
	if (!n && !t.exists) { /* a mistyped stack: nothing of it at all */
		rc = cli_target_missing(&t);
		goto out;
	}
	counts = calloc(n + 1, sizeof(*counts));
	if (!counts) {
		rc = EXIT_FAIL;
		goto out;
	}
	for (i = 0; i < n; i++) {
		st_load_opts lo = ST_LOAD_OPTS_INIT;
		st_state *s = NULL;
		lo.max_size = t.max_size;
		counts[i] = -1;
		if (st_backend_generation_load(t.backend, t.qname, g[i].id, &lo, &s, NULL) == ST_OK)
			counts[i] = (long long)json_array_size(st_state_resources(s, 0));
		st_state_free(s);
	}
	if (json) {
		json_t *arr = json_array();
		for (i = 0; i < n; i++) {
			char tb[32], tn[48];
			fmt_time(g[i].time_ns, tb, sizeof(tb));
			if (g[i].time_ns > 0 && strlen(tb) == 20)
				snprintf(tn, sizeof(tn), "%.19s.%09lldZ", tb, g[i].time_ns % 1000000000LL);
			else
				snprintf(tn, sizeof(tn), "%s", tb);
			/* a store whose listing has no sizes (postgres): unknown, null */
			json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o}", "id", g[i].id, "kind",
					      kind_name(g[i].kind), "key", g[i].key, "time", tn,
					      "size", g[i].size >= 0 ? json_integer(g[i].size)
								     : json_null());
			if (o && counts[i] >= 0)
				json_object_set_new(o, "resources", json_integer(counts[i]));
			else if (o)
				json_object_set_new(o, "resources", json_null());
			if (o && g[i].update)
				json_object_set(o, "update", g[i].update);
			json_array_append_new(arr, o);
		}
		json_t *doc = json_pack("{s:i, s:s, s:o}", "format_version", CLI_JSON_FORMAT,
					"stack", t.qname, "generations", arr);
		rc = cli_print_json(doc);
		json_decref(doc);
		goto out;
	}
	if (!n) {
		printf("no generations of %s\n", t.qname);
		goto out;
	}
	size_t wid = 2;
	for (i = 0; i < n; i++)
		if (strlen(g[i].id) > wid)
			wid = strlen(g[i].id);
	printf("%-*s  %-20s  %10s  %9s  %s\n", (int)wid, "ID", "TIME", "SIZE", "RESOURCES", "KIND");
	for (i = 0; i < n; i++) {
		char tb[32], cb[24], sb[24] = "-";
		char *note = update_note(g[i].update);
		fmt_time(g[i].time_ns, tb, sizeof(tb));
		if (counts[i] >= 0)
			snprintf(cb, sizeof(cb), "%lld", counts[i]);
		else
			snprintf(cb, sizeof(cb), "-");
		if (g[i].size >= 0)
			snprintf(sb, sizeof(sb), "%lld", g[i].size);
		printf("%-*s  %-20s  %10s  %9s  %s%s%s%s\n", (int)wid, g[i].id, tb, sb, cb,
		       kind_name(g[i].kind), note ? " (" : "", note ? note : "", note ? ")" : "");
		free(note);
	}
out:
	free(counts);
	st_generations_free(g, n);
	cli_target_free(&t);
	return rc;
}

static const char *first_urn(json_t *res)
{
	return json_string_value(json_object_get(json_array_get(res, 0), "urn"));
}

/* The stack a generation names (new): its checkpoint's `stack`, else (an export) its first
 * URN's, in the form of `qname` (organization/PROJECT/STACK, or STACK in the legacy layout). */
static char *generation_stack(st_state *gen, const char *qname)
{
	json_t *cp = json_object_get(st_state_root(gen), "checkpoint");
	const char *s = json_string_value(json_object_get(cp, "stack"));
	json_t *res = st_state_resources(gen, 0);
	char *out = NULL;
	st_urn u;

	if (s)
		return strdup(s);
	if (!json_array_size(res) || st_urn_parse(first_urn(res), &u) != ST_OK)
		return NULL;
	if (!strchr(qname, '/'))
		return strndup(u.stack, u.stack_len);
	if (asprintf(&out, "organization/%.*s/%.*s", (int)u.project_len, u.project,
		     (int)u.stack_len, u.stack) < 0)
		out = NULL;
	return out;
}

/* PROJECT and STACK of organization/PROJECT/STACK (both new; *project NULL in the legacy
 * layout, where the name is STACK alone). 0 when it is neither form. */
static int split_qname(const char *q, char **project, char **stack)
{
	const char *p, *s;

	*project = *stack = NULL;
	if (!strchr(q, '/'))
		return (*stack = strdup(q)) != NULL;
	if (strncmp(q, "organization/", 13) || !(s = strchr(p = q + 13, '/')) ||
	    strchr(s + 1, '/'))
		return 0;
	*project = strndup(p, (size_t)(s - p));
	*stack = strdup(s + 1);
	return *project && *stack;
}

int cli_generation_renamed(st_backend *b, const char *stack, st_state *gen, const char *id,
			   const char *verb)
{
	char *qname = NULL, *was = NULL, *op = NULL, *os = NULL, *np = NULL, *ns = NULL;
	char *urn_project = NULL, *q2 = NULL, *bak = NULL;
	int exists = 1, rc = EXIT_OK;
	size_t count = 0;
	st_error err;
	st_urn u;

	st_error_clear(&err);
	/* the stack's own object and its .bak are not carried over by a rename */
	if (!gen || !strcmp(id, "current") || !strcmp(id, "bak") ||
	    st_backend_resolve(b, stack, &qname, &exists, NULL) != ST_OK)
		goto out;
	/* another stack's name, in the layout of this one, that the backend has no stack of
	 * now but the .bak `stack rename` leaves of the old object (a living stack's copy, a
	 * hand-placed file stay refused by the place check) */
	if (!(was = generation_stack(gen, qname)) || !strcmp(was, qname) ||
	    !split_qname(was, &op, &os) || !split_qname(qname, &np, &ns) || !op != !np ||
	    st_backend_resolve(b, was, &q2, &exists, NULL) != ST_OK || exists ||
	    st_backend_stack_bak(b, q2, &bak, &exists, NULL) != ST_OK || !exists)
		goto out;
	/* legacy references carry no project; the URNs do: the rewrite is scoped to it, as
	 * `stack rename` scopes it */
	if (!op && json_array_size(st_state_resources(gen, 0)) &&
	    st_urn_parse(first_urn(st_state_resources(gen, 0)), &u) == ST_OK)
		urn_project = strndup(u.project, u.project_len);
	if (st_state_rename_stack(gen, ns, np, os, op ? op : urn_project, &count, &err) != ST_OK) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto out;
	}
	fprintf(stderr,
		"%s: note: generation %s is of %s, a former name of %s (a stack rename carried "
		"it over; that stack is gone, its .bak left): %s as the rename makes it (%zu "
		"URN%s rewritten)\n",
		cli_prog, id, was, qname, verb, count, count == 1 ? "" : "s");
out:
	free(qname);
	free(was);
	free(op);
	free(os);
	free(np);
	free(ns);
	free(urn_project);
	free(q2);
	free(bak);
	return rc;
}
