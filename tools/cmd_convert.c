/* statetool convert: another envelope, layout, escaping or compression; same content. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char help[] =
	"usage: statetool convert [options] IN -o OUT\n"
	"       statetool convert [options] --backend URL --stack NAME\n"
	"\n"
	"Rewrite a state in Pulumi's own bytes. With no option the output is byte-identical\n"
	"to a file Pulumi wrote: the layout (compact or indented), HTML escaping, trailing\n"
	"newline, compression, envelope and version of IN are kept. For gzip and zstd that\n"
	"holds for the text inside: the compressed bytes are zlib's or libzstd's (a gzip\n"
	"header as Go's), so a file converted in place into the form it has is left as it is.\n"
	"\n"
	"Options:\n"
	"  -o, --output OUT        where to write; an existing OUT is replaced atomically\n"
	"                          and kept as OUT.bak. '-' = standard output: the bytes\n"
	"                          OUT would hold, compression included (a gzip IN comes\n"
	"                          out gzip: --no-gzip decompresses); IN may be '-'\n"
	"  --envelope KIND         'export' ({\"version\",\"deployment\"}, as pulumi stack\n"
	"                          export prints) or 'checkpoint' (a DIY backend file); a new\n"
	"                          envelope takes current Pulumi's layout for it\n"
	"  --checkpoint-stack NAME the checkpoint's stack (organization/PROJECT/STACK, or\n"
	"                          PROJECT/STACK, STACK; names checked as --stack checks\n"
	"                          them); by default taken from the root stack resource's URN\n"
	"  --compact | --indent    compact (DIY backend files) or 4-space indented (export)\n"
	"  --gzip | --zstd | --no-gzip\n"
	"                          compress the output with gzip or zstd (as Pulumi's\n"
	"                          .json.gz and .json.zst), or not at all\n"
	"  --escape-html | --no-escape-html\n"
	"                          write <, >, & as \\u003c, \\u003e, \\u0026 (older Pulumi)\n"
	"                          (two flags of one of these groups: a usage error)\n"
	"  --canonical             as Go marshals Pulumi's types: their field order (a\n"
	"                          version 1 or 2 state keeps its own), the fields Go always\n"
	"                          writes (their zero value when missing), empty omitempty\n"
	"                          fields dropped, Pulumi's keys, the features recomputed,\n"
	"                          times as Go marshals them (RFC3339Nano: 05.12Z);\n"
	"                          members no Pulumi type has are kept, after the others\n"
	"  --backend URL -s, --stack NAME   read IN from a DIY backend stack instead;\n"
	"                          without -o the stack itself is rewritten (under its lock,\n"
	"                          its .bak and a backup made as every change makes them):\n"
	"                          e.g. --envelope checkpoint for a stack export that lies in\n"
	"                          a backend, which Pulumi cannot load\n"
	"  --max-size SIZE         refuse input that inflates beyond SIZE (default 4G)\n"
	"  --allow-duplicate-keys  write a state whose file repeats object keys as Pulumi\n"
	"                          reads it (a later object merged into the earlier one,\n"
	"                          else the last value); refused otherwise\n"
	"  --json                  the result as one JSON document: {\"format_version\": 1,\n"
	"                          \"command\": \"convert\", \"input\", \"output\", \"written\"\n"
	"                          (false when OUT holds that content already), \"envelope\",\n"
	"                          \"compression\", \"version\"}; a failure too (its \"error\":\n"
	"                          code, message, position). With -o - it goes to stderr\n"
	"  -h, --help              show this help\n";

enum { OPT_CP_STACK = 2000 };

/* Would the state, written to `path`, give back the content the file holds now (the same
 * text, the same compression)? */
static int same_as_file(st_state *s, const char *path)
{
	char *text = NULL, *old = NULL;
	size_t tlen = 0, olen = 0;
	st_compression comp;
	int same;
	st_state_fix_magic(s);
	if (st_state_dump(s, NULL, &text, &tlen, NULL) != ST_OK ||
	    st_file_read(path, 0, &old, &olen, &comp, NULL) != ST_OK) {
		free(text);
		return 0;
	}
	same = comp == st_state_compression(s) && olen == tlen && !memcmp(old, text, tlen);
	free(text);
	free(old);
	return same;
}

/* The --json result (in filter mode on stderr: stdout carries the state). */
static int print_doc(st_state *s, const cli_target *t, const char *out, int written)
{
	static const char *const comp[] = {"none", "gzip", "zstd"};
	const char *in = cli_target_where(t);
	st_compression c = st_state_compression(s);
	json_t *doc = json_pack(
		"{s:i, s:s, s:s, s:s, s:b, s:s, s:s, s:i}", "format_version", CLI_JSON_FORMAT,
		"command", "convert", "input", in ? in : "-", "output", out, "written", written,
		"envelope", st_state_envelope(s) == ST_ENVELOPE_CHECKPOINT ? "checkpoint" : "export",
		"compression", (unsigned)c < 3 ? comp[c] : "none", "version", st_state_version(s));
	int rc = doc ? cli_print_json(doc) : EXIT_FAIL;
	json_decref(doc);
	return rc;
}

/* What the command line asks for. */
typedef struct args {
	const char *out, *cp_stack;
	int envelope, layout, compress, html, canonical, allow_dups, json;
} args;

static int parse(int argc, char **argv, cli_target *t, args *a)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"stack", required_argument, NULL, OPT_STACK},
		{"output", required_argument, NULL, 'o'},
		{"envelope", required_argument, NULL, OPT_ENVELOPE},
		{"checkpoint-stack", required_argument, NULL, OPT_CP_STACK},
		{"compact", no_argument, NULL, OPT_COMPACT},
		{"indent", no_argument, NULL, OPT_INDENT},
		{"gzip", no_argument, NULL, OPT_GZIP},
		{"no-gzip", no_argument, NULL, OPT_NO_GZIP},
		{"zstd", no_argument, NULL, OPT_ZSTD},
		{"escape-html", no_argument, NULL, OPT_ESCAPE_HTML},
		{"no-escape-html", no_argument, NULL, OPT_NO_ESCAPE_HTML},
		{"canonical", no_argument, NULL, OPT_CANONICAL},
		{"max-size", required_argument, NULL, OPT_MAX_SIZE},
		{"allow-duplicate-keys", no_argument, NULL, OPT_ALLOW_DUPLICATE_KEYS},
		{"json", no_argument, NULL, OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	/* the flag that set each choice: another flag for it conflicts */
	const char *layout_by = NULL, *compress_by = NULL, *html_by = NULL, **by;
	int c;
	while ((c = cli_getopt(argc, argv, "ho:", opts)) != -1) {
		if (cli_target_option(t, c, optarg))
			continue;
		by = c == OPT_COMPACT || c == OPT_INDENT		     ? &layout_by
		     : c == OPT_GZIP || c == OPT_ZSTD || c == OPT_NO_GZIP   ? &compress_by
		     : c == OPT_ESCAPE_HTML || c == OPT_NO_ESCAPE_HTML ? &html_by
									 : NULL;
		if (by) {
			const char *flag = argv[optind - 1];
			for (size_t i = 0; opts[i].name; i++)
				if (opts[i].val == c)
					flag = opts[i].name;
			if (*by && strcmp(*by, flag))
				return cli_usage("convert", "give --%s or --%s, not both", *by, flag);
			*by = flag;
		}
		switch (c) {
		case 'o': a->out = optarg; break;
		case OPT_ENVELOPE:
			if (!strcmp(optarg, "export"))
				a->envelope = ST_ENVELOPE_EXPORT;
			else if (!strcmp(optarg, "checkpoint"))
				a->envelope = ST_ENVELOPE_CHECKPOINT;
			else
				return cli_usage("convert", "--envelope is 'export' or 'checkpoint', "
							    "not '%s'", optarg);
			break;
		case OPT_CP_STACK: a->cp_stack = optarg; break;
		case OPT_COMPACT: a->layout = 1; break;
		case OPT_INDENT: a->layout = 0; break;
		case OPT_GZIP: a->compress = ST_COMPRESS_GZIP; break;
		case OPT_ZSTD: a->compress = ST_COMPRESS_ZSTD; break;
		case OPT_NO_GZIP: a->compress = ST_COMPRESS_NONE; break;
		case OPT_ESCAPE_HTML: a->html = 1; break;
		case OPT_NO_ESCAPE_HTML: a->html = 0; break;
		case OPT_CANONICAL: a->canonical = 1; break;
		case OPT_ALLOW_DUPLICATE_KEYS: a->allow_dups = 1; break;
		case OPT_JSON: a->json = 1; break;
		case 'h': return cli_help(help);
		default: return cli_usage("convert", "bad option");
		}
	}
	if (argc - optind > 1)
		return cli_usage("convert", "too many arguments");
	if (!a->out && !t->stack)
		return cli_usage("convert", "missing -o OUT");
	if (!a->out && optind < argc)
		return cli_usage("convert", "give IN or --stack, not both (without -o, the stack "
					    "is rewritten)");
	if (a->cp_stack && !cli_stack_ref_valid(a->cp_stack))
		return EXIT_USAGE;
	t->arg = optind < argc ? argv[optind] : NULL;
	return -1;
}

/* The envelope, layout, escaping and compression asked for. */
static int reshape(st_state *s, const args *a)
{
	st_error err;
	st_style *st;
	st_error_clear(&err);
	if ((a->envelope || a->cp_stack) &&
	    st_state_set_envelope(s, a->envelope ? (st_envelope)a->envelope : st_state_envelope(s),
				  a->cp_stack, &err) != ST_OK) {
		if (err.code == ST_EINVAL && !a->cp_stack)
			cli_errorf("%s; give it with --checkpoint-stack organization/PROJECT/STACK",
				   err.message);
		else
			cli_error(&err);
		return EXIT_FAIL;
	}
	if (a->canonical)
		st_state_canonicalize(s);
	st = st_state_style(s);
	if (a->layout == 1) {
		st->compact = 1;
		st->trailing_newline = 0;
	} else if (a->layout == 0) {
		st->compact = 0;
		st->trailing_newline = 1;
		if (!st->indent[0])
			strcpy(st->indent, "    ");
	}
	if (a->html >= 0)
		st->escape_html = a->html;
	if (a->compress >= 0)
		st_state_set_compression(s, (st_compression)a->compress);
	return EXIT_OK;
}

/* Takes away the folders make_parents made, innermost first, while they are empty. */
static void unmake_parents(const char *path, const char *made)
{
	char *p = made ? strdup(path) : NULL, *sl;
	while (p && (sl = strrchr(p, '/')) && (size_t)(sl - p) >= strlen(made)) {
		*sl = '\0';
		if (rmdir(p) != 0)
			break;
	}
	free(p);
}

/* Makes the missing folders of `path` (a new project's in a backend, as Pulumi makes it on
 * stack init); *made: the outermost one made (new), or NULL. -1 with errno on failure (and
 * nothing made left behind). */
static int make_parents(const char *path, char **made)
{
	char *p = strdup(path), *sl;
	int saved;
	*made = NULL;
	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	for (sl = strchr(p + 1, '/'); sl; sl = strchr(sl + 1, '/')) {
		*sl = '\0';
		if (mkdir(p, 0755) == 0 && !*made && !(*made = strdup(p)))
			errno = ENOMEM;
		if (errno && errno != EEXIST) {
			saved = errno;
			free(p);
			unmake_parents(path, *made); /* what this call made goes again */
			free(*made);
			*made = NULL;
			errno = saved;
			return -1;
		}
		errno = 0;
		*sl = '/';
	}
	free(p);
	return 0;
}

/* To standard output (filter mode), or atomically (with a .bak) to a file unless it would
 * come back with the same content (a compressed one would get other bytes; it keeps its own). */
static int write_out(st_state *s, cli_target *t, const args *a, int inplace, int *written,
		     int in_backend)
{
	st_error err;
	st_error_clear(&err);
	if (t->filter) {
		/* -o -: the bytes -o FILE would hold, compression included */
		if (st_state_compression(s) != ST_COMPRESS_NONE && cli_stdout_isatty())
			return cli_usage("convert", "refusing to write compressed data to a "
						    "terminal; give --no-gzip, or -o FILE");
		*written = 1;
		return cli_save(t, s, NULL);
	}
	*written = 1;
	if (inplace && same_as_file(s, a->out)) {
		*written = 0;
		return EXIT_OK;
	}
	st_write_opts wo = ST_WRITE_OPTS_INIT;
	char *made = NULL;
	wo.backup = 1;
	wo.threads = cli_threads;
	errno = 0;
	if (in_backend && make_parents(a->out, &made) != 0) {
		cli_errorf("cannot create the folders of '%s': %s", a->out, strerror(errno));
		return EXIT_FAIL;
	}
	if (st_state_save(s, a->out, &wo, &err) != ST_OK) {
		unmake_parents(a->out, made);
		free(made);
		cli_error(&err);
		return EXIT_FAIL;
	}
	free(made);
	return EXIT_OK;
}

/* No -o, a stack: rewritten in its backend, as every change is written (lock, .bak, backup). */
static int convert_stack(cli_target *t, const args *a)
{
	st_state *s = NULL;
	st_lock *lock = NULL;
	int rc;

	if ((rc = cli_target_resolve(t, "convert", 1)) != EXIT_OK)
		return rc;
	if (cli_target_is_cloud(t))
		return cli_usage("convert", "a Pulumi Cloud stack is written by Pulumi Cloud: give "
					    "-o OUT");
	if ((rc = cli_lock(t, &lock)) != EXIT_OK)
		return rc;
	if ((rc = cli_load(t, &s)) == EXIT_OK &&
	    (rc = cli_refuse_lossy(s, cli_target_name(t), a->allow_dups)) == EXIT_OK &&
	    (rc = reshape(s, a)) == EXIT_OK &&
	    (rc = cli_refuse_misplaced(s, t, cli_target_name(t))) == EXIT_OK &&
	    (rc = cli_save(t, s, NULL)) == EXIT_OK && a->json)
		rc = print_doc(s, t, cli_target_where(t), 1);
	else if (rc == EXIT_OK)
		printf("converted %s\n", cli_target_name(t));
	cli_unlock(t, lock);
	cli_state_done(s);
	return rc;
}

int cmd_convert(int argc, char **argv)
{
	cli_target t = {0}, ot = {0};
	args a = {NULL, NULL, 0, -1, -1, -1, 0, 0, 0};
	int inplace = 0, rc, written = 0;
	st_state *s = NULL;
	st_lock *lock = NULL;

	if ((rc = parse(argc, argv, &t, &a)) != -1)
		return rc;
	if (!a.out) {
		rc = convert_stack(&t, &a);
		cli_target_free(&t);
		return rc;
	}
	t.out = a.out;
	/* -o -: filter mode, the bytes a file write would make, to stdout once made */
	if ((rc = cli_filter_begin(&t)) != EXIT_OK ||
	    (rc = cli_target_resolve(&t, "convert", 1)) != EXIT_OK)
		goto done;
	/* Converting in place: hold the lock for the whole read-modify-write. Writing into a
	 * stack of a DIY backend by its path: hold that stack's lock, as Pulumi would. */
	{
		char pa[PATH_MAX], pb[PATH_MAX];
		const char *in = cli_target_where(&t);
		inplace = strcmp(a.out, "-") && in && realpath(in, pa) && realpath(a.out, pb) &&
			  !strcmp(pa, pb);
		if (inplace && (rc = cli_lock(&t, &lock)) != EXIT_OK)
			goto done;
		ot.arg = a.out;
		if (!lock && strcmp(a.out, "-") &&
		    (rc = cli_target_resolve(&ot, "convert", 0)) != EXIT_OK)
			goto done;
		/* as the commands that read a backend: a store with no .pulumi is no backend (a
		 * mistyped path?), not one to start (see BACKENDS in the manual) */
		if (ot.backend && !st_backend_present(ot.backend)) {
			cli_errorc("not-found", "no Pulumi backend at '%s': it has no .pulumi "
						"directory (a mistyped path?)",
				   st_backend_url(ot.backend));
			rc = EXIT_FAIL;
			goto done;
		}
		if (ot.backend && (rc = cli_lock(&ot, &lock)) != EXIT_OK)
			goto done;
	}
	if ((rc = cli_load(&t, &s)) != EXIT_OK ||
	    (rc = cli_refuse_lossy(s, cli_target_name(&t), a.allow_dups)) != EXIT_OK ||
	    (rc = reshape(s, &a)) != EXIT_OK)
		goto done;
	/* written into a stack of a backend: it must be that stack's state */
	if (ot.backend && (rc = cli_refuse_misplaced(s, &ot, a.out)) != EXIT_OK)
		goto done;
	rc = write_out(s, &t, &a, inplace, &written, ot.backend != NULL);
	if (rc == EXIT_OK && a.json)
		rc = print_doc(s, &t, a.out, written);
done:
	cli_unlock(ot.backend ? &ot : &t, lock);
	cli_target_free(&ot);
	cli_state_done(s);
	cli_target_free(&t);
	return rc;
}
