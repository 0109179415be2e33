/* statetool validate: every problem of states, import files or a whole backend, in one run. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
	"usage: statetool validate [options] [FILE...]\n"
	"       statetool validate [options] --backend URL [--stack NAME]\n"
	"\n"
	"Check deployment states (either envelope, versions 0 to 4, plain, gzip or zstd; '-'\n"
	"reads standard input) and `pulumi import --file` documents as Pulumi decodes them\n"
	"(keys of its structures in any case; what Go's decoder refuses, rules decode/...),\n"
	"against statetool's JSON Schemas and Pulumi's integrity rules, and report every\n"
	"problem in one run: severity, rule, message, JSON Pointer and URN. A document is\n"
	"taken for what Pulumi would decode it as: a state, an import file, or neither (an\n"
	"error). Data after the document is read as Pulumi reads it: after an export or\n"
	"an import file not read (`pulumi stack import`, `pulumi import --file`: a warning,\n"
	"json/trailing-data), after a checkpoint an error. With --backend and no --stack,\n"
	"every stack of the backend is checked; with no FILE and no --backend, the backend\n"
	"of $PULUMI_BACKEND_URL or of the project's Pulumi.yaml. The rules are listed in\n"
	"statetool(1). A state file, or a stack from any store, is loaded lazily: property\n"
	"values written as statetool writes them are checked as JSON, and only their\n"
	"secrets and other special values built (the same report, less time and memory).\n"
	"\n"
	"Options:\n"
	"  --backend URL          a DIY backend (PATH, file://, s3://, azblob://, gs://,\n"
	"                         postgres://)\n"
	"  -s, --stack NAME       one stack of the backend\n"
	"  --json                 print one JSON document with every file's problems\n"
	"  --strict               count warnings as errors\n"
	"  --schema FILE          also check each document against FILE (JSON Schema\n"
	"                         2020-12); may be repeated\n"
	"  --resource-schema FILE also check each resource against FILE (e.g. to demand\n"
	"                         tags); may be repeated\n"
	"  --no-schema            skip the built-in schemas (integrity rules only)\n"
	"  -q, --quiet            print only each file's summary line\n"
	"  --max-size SIZE        refuse files that inflate beyond SIZE (default 4G)\n"
	"  -h, --help             show this help\n"
	"\n"
	"The report goes to standard output (--json: one document), diagnostics to standard\n"
	"error. Exit status: 0 no errors (warnings allowed\n"
	"unless --strict), 1 errors found, 2 usage error.\n";

enum { OPT_RESOURCE_SCHEMA = 3000, OPT_NO_SCHEMA };

typedef struct vrun {
	int json, strict, quiet;
	size_t max_size;
	st_validate_opts vo;
	json_t *files; /* --json output */
	size_t errors, warnings;
	unsigned place_flags; /* ST_PLACE_EXPORTS for a Pulumi Cloud stack */
} vrun;

static const char *load_rule(int code)
{
	switch (code) {
	case ST_EPARSE: return "json/syntax";
	case ST_ELIMIT: return "json/limit";
	case ST_EVERSION: return "state/version";
	case ST_EFEATURE: return "state/feature";
	case ST_EFORMAT: return "state/format";
	case ST_EUNSUPPORTED: return "file/unsupported";
	case ST_ENOMEM: return "internal/out-of-memory";
	default: return "file/unreadable";
	}
}

static void report(vrun *v, const char *name, st_problems *p, long long nres, const char *kind)
{
	size_t errors = p->errors, warnings = p->warnings;
	if (v->strict) {
		errors += warnings;
		warnings = 0;
	}
	v->errors += errors;
	v->warnings += warnings;
	if (v->json) {
		json_t *f = json_object(), *arr = json_array();
		json_object_set_new(f, "file", json_string(name));
		json_object_set_new(f, "kind", json_string(kind));
		json_object_set_new(f, "valid", json_boolean(errors == 0));
		json_object_set_new(f, "errors", json_integer((json_int_t)errors));
		json_object_set_new(f, "warnings", json_integer((json_int_t)warnings));
		if (nres >= 0)
			json_object_set_new(f, "resources", json_integer(nres));
		for (size_t i = 0; i < p->count; i++) {
			st_problem *q = &p->items[i];
			json_t *o = json_object();
			int err = q->severity == ST_SEV_ERROR || v->strict;
			json_object_set_new(o, "severity", json_string(err ? "error" : "warning"));
			json_object_set_new(o, "rule", json_string(q->rule));
			json_object_set_new(o, "message", json_string(q->message));
			json_object_set_new(o, "pointer", json_string(q->pointer));
			json_object_set_new(o, "urn", q->urn ? json_string(q->urn) : json_null());
			json_array_append_new(arr, o);
		}
		json_object_set_new(f, "problems", arr);
		json_array_append_new(v->files, f);
		return;
	}
	if (!v->quiet) {
		for (size_t i = 0; i < p->count; i++) {
			st_problem *q = &p->items[i];
			int err = q->severity == ST_SEV_ERROR || v->strict;
			printf("%s: %s: [%s] %s\n", name, err ? "error" : "warning", q->rule,
				q->message);
			if (q->pointer[0])
				printf("    at %s\n", q->pointer);
		}
	}
	printf("%s: %s, %zu error%s, %zu warning%s", name, errors ? "invalid" : "valid",
		errors, errors == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s");
	if (nres >= 0)
		printf(" (%lld resource%s)", nres, nres == 1 ? "" : "s");
	putchar('\n');
}


/* The checks of a loaded state: st_validate, then where it lies in a backend (`place`, or
 * NULL), what it says, and that its URNs agree. */
static int check_state(vrun *v, st_state *s, const char *place, st_problems *p, st_error *err)
{
	int rc = st_validate(s, &v->vo, p, err);
	if (rc == ST_OK && place)
		rc = st_check_place(s, place, v->place_flags, p, err);
	return rc;
}

/* Why a document could not be checked, as a problem of its own. */
static void add_failure(st_problems *p, int rc, const st_error *err)
{
	char where[64] = "";
	if (err->line)
		snprintf(where, sizeof(where), " (line %d, column %d)", err->line, err->column);
	st_problems_add(p, ST_SEV_ERROR, load_rule(rc), err->pointer, NULL, "%s%s", err->message,
			where);
}

/* The report of a lazy load (rc: how it went, s stolen), as validate_lazy and validate_stack
 * make it. 0 (nothing reported) when the document is no state that loads: the caller then
 * reads it as a document (import files, Go's decoding errors). */
static int lazy_report(vrun *v, int rc, st_state *s, st_error *err, const char *shown,
		       const char *place)
{
	st_problems p = {0};
	long long nres = -1;

	if (rc == ST_EFORMAT || rc == ST_EVERSION || rc == ST_EFEATURE ||
	    (rc == ST_OK && st_doc_kind_of(st_state_root(s)) != ST_DOC_STATE)) {
		st_state_free(s);
		return 0;
	}
	if (rc == ST_OK) {
		nres = (long long)json_array_size(st_state_resources(s, 0));
		rc = check_state(v, s, place, &p, err);
	}
	if (rc != ST_OK)
		add_failure(&p, rc, err);
	report(v, shown, &p, nres, "state");
	st_problems_clear(&p);
	cli_state_done(s);
	return 1;
}

/*
 * A file loaded as a lazy state (the property values the checks cannot look into stay in the
 * mapped text): the same report in less time and memory. 0 when the file is not for it (standard
 * input; --schema and --resource-schema look into values) or when it is no state that loads
 * (see lazy_report). A file that is not JSON or over a limit fails here exactly as there, and is
 * reported here.
 */
static int validate_lazy(vrun *v, const char *path, const char *shown, const char *place)
{
	st_load_opts lo = ST_LOAD_OPTS_INIT;
	st_state *s = NULL;
	st_error err;
	int rc;

	if (!strcmp(path, "-") || v->vo.nextra || v->vo.nresource_schemas)
		return 0;
	lo.max_size = v->max_size;
	lo.lazy = 1;
	st_error_clear(&err);
	rc = st_state_load_file(&s, path, &lo, &err);
	return lazy_report(v, rc, s, &err, shown, place);
}

/* Checks one parsed document (rc: how its reading went, err why not; doc stolen) named
 * `shown`; `place` is the stack it is in a backend, or NULL (see st_check_place). */
static void validate_doc(vrun *v, int rc, st_error *err, json_t *doc, st_style *style,
			 st_problems *lp, const char *shown, const char *place)
{
	st_problems p = {0};
	st_state *s = NULL;
	long long nres = -1;
	const char *kind = "state";

	if (rc == ST_OK && st_doc_kind_of(doc) == ST_DOC_IMPORT) {
		/* An import file, as `pulumi import --file` reads and checks it (the names of a
		 * stack and project only place the URNs it builds) */
		kind = "import";
		/* the reader's list: keys given twice decode as Go decodes them */
		rc = st_import_check(doc, NULL, NULL, v->vo.schema, lp, err);
		for (size_t i = 0; i < lp->count; i++)
			st_problems_add(&p, lp->items[i].severity, lp->items[i].rule,
					lp->items[i].pointer, lp->items[i].urn, "%s",
					lp->items[i].message);
		nres = (long long)json_array_size(json_object_get(doc, "resources"));
		json_decref(doc);
	} else if (rc == ST_OK && st_doc_kind_of(doc) == ST_DOC_NEITHER) {
		kind = "unknown";
		st_problems_add(&p, ST_SEV_ERROR, "file/not-pulumi", "", NULL,
				"neither a Pulumi deployment state (no 'deployment', 'checkpoint' or "
				"'latest' member) nor a `pulumi import --file` document (no "
				"'resources' or 'nameTable' member)");
		json_decref(doc);
	} else if (rc == ST_OK) {
		rc = st_state_from_json(&s, doc, style, lp, shown, err);
		if (rc == ST_OK) {
			nres = (long long)json_array_size(st_state_resources(s, 0));
			rc = check_state(v, s, place, &p, err);
		} else if (lp->errors) {
			/* Pulumi cannot decode it: each reason, with its rule and place */
			for (size_t i = 0; i < lp->count; i++)
				st_problems_add(&p, lp->items[i].severity, lp->items[i].rule,
						lp->items[i].pointer, lp->items[i].urn, "%s",
						lp->items[i].message);
			rc = ST_OK;
		}
	}
	if (rc != ST_OK)
		add_failure(&p, rc, err);
	report(v, shown, &p, nres, kind);
	st_problems_clear(&p);
	cli_state_done(s);
}

/* A file named on the command line ("-": standard input); one inside a DIY backend is checked
 * against its place there too. */
static void validate_one(vrun *v, const char *path, const char *shown)
{
	st_parse_limits lim = ST_PARSE_LIMITS_INIT;
	json_t *doc = NULL;
	st_style style;
	st_problems lp = {0};
	st_error err;
	char *root = NULL, *stack = NULL;
	int rc;

	st_error_clear(&err);
	if (strcmp(path, "-"))
		st_backend_locate(path, &root, &stack);
	if (validate_lazy(v, path, shown, stack)) {
		free(root);
		free(stack);
		return;
	}
	/* the first value, as `pulumi stack import` and `pulumi import --file` read it (a
	 * checkpoint with data after it: refused by st_state_from_json, as json.Unmarshal) */
	lim.first_value = ST_PARSE_FIRST_VALUE;
	rc = st_json_load_file(&doc, path, v->max_size, &lim, &style, &lp, &err);
	validate_doc(v, rc, &err, doc, &style, &lp, shown, stack);
	st_problems_clear(&lp);
	free(root);
	free(stack);
}

/* A stack of a backend, read through the backend (its store may have no local path): lazily
 * when it can (see validate_lazy), else as a document. */
static void validate_stack(vrun *v, st_backend *b, const char *stack, const char *key,
			   const char *shown)
{
	json_t *doc = NULL;
	st_style style;
	st_problems lp = {0};
	st_error err;
	int rc;

	st_error_clear(&err);
	if (strcmp(st_backend_kind(b), "cloud") && !v->vo.nextra && !v->vo.nresource_schemas) {
		/* a DIY backend's stack, on any store: lazily, as a file is */
		st_load_opts lo = ST_LOAD_OPTS_INIT;
		st_state *s = NULL;
		lo.max_size = v->max_size;
		lo.lazy = 1;
		lo.key = key; /* the object resolving or listing found: not listed again */
		rc = st_backend_load(b, stack, &lo, &s, &err);
		if (lazy_report(v, rc, s, &err, shown, stack))
			return;
		st_error_clear(&err);
	}
	rc = st_backend_load_json(b, stack, v->max_size, &doc, &style, &lp, NULL, &err);
	v->place_flags = strcmp(st_backend_kind(b), "cloud") ? 0 : ST_PLACE_EXPORTS;
	validate_doc(v, rc, &err, doc, &style, &lp, shown, stack);
	v->place_flags = 0;
	st_problems_clear(&lp);
}

static int load_user_schema(const char *path, st_schema ***list, size_t *n)
{
	char *buf;
	size_t len;
	json_t *doc = NULL;
	st_schema *s = NULL;
	st_error err;
	st_error_clear(&err);
	if (st_file_read(path, 0, &buf, &len, NULL, &err) != ST_OK) {
		cli_error(&err);
		return -1;
	}
	int rc = st_json_parse(&doc, buf, len, path, NULL, NULL, NULL, &err);
	free(buf);
	if (rc == ST_OK)
		rc = st_schema_new(&s, &err);
	if (rc == ST_OK)
		rc = st_schema_add(s, doc, NULL, &err);
	if (rc == ST_OK)
		rc = st_schema_compile(s, &err);
	json_decref(doc);
	if (rc) {
		if (!err.file[0])
			snprintf(err.file, sizeof(err.file), "%s", path);
		cli_error(&err);
		st_schema_free(s);
		return -1;
	}
	*list = realloc(*list, (*n + 1) * sizeof(**list));
	(*list)[(*n)++] = s;
	return 0;
}

/* Every stack of the backend at `url`, then a summary line (not with --json). */
static int validate_backend(vrun *v, const char *url)
{
	st_backend *b = NULL;
	st_stack_info *infos = NULL;
	size_t n = 0;
	st_error err;
	int rc;
	st_error_clear(&err);
	if ((rc = cli_backend_open(&b, url)) != EXIT_OK)
		return rc;
	if (st_backend_list(b, &infos, &n, &err) != ST_OK) {
		cli_error(&err);
		st_backend_free(b);
		return err.code == ST_EINVAL ? EXIT_USAGE : EXIT_FAIL;
	}
	for (size_t i = 0; i < n; i++)
		validate_stack(v, b, infos[i].qname, infos[i].key, infos[i].qname);
	if (!v->json)
		printf("%zu stack%s checked: %zu error%s, %zu warning%s\n", n, n == 1 ? "" : "s",
		       v->errors, v->errors == 1 ? "" : "s", v->warnings,
		       v->warnings == 1 ? "" : "s");
	st_stack_infos_free(infos, n);
	st_backend_free(b);
	return EXIT_OK;
}

/* --json: one document with every file's problems (the files array is taken). */
static void print_report(vrun *v)
{
	json_t *doc = json_object();
	json_object_set_new(doc, "format_version", json_integer(CLI_JSON_FORMAT));
	json_object_set_new(doc, "valid", json_boolean(v->errors == 0));
	json_object_set_new(doc, "errors", json_integer((json_int_t)v->errors));
	json_object_set_new(doc, "warnings", json_integer((json_int_t)v->warnings));
	json_object_set_new(doc, "files", v->files);
	v->files = NULL;
	cli_print_json(doc);
	json_decref(doc);
}

int cmd_validate(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"stack", required_argument, NULL, OPT_STACK},
		{"json", no_argument, NULL, OPT_JSON},
		{"strict", no_argument, NULL, OPT_STRICT},
		{"schema", required_argument, NULL, OPT_SCHEMA},
		{"resource-schema", required_argument, NULL, OPT_RESOURCE_SCHEMA},
		{"no-schema", no_argument, NULL, OPT_NO_SCHEMA},
		{"quiet", no_argument, NULL, 'q'},
		{"max-size", required_argument, NULL, OPT_MAX_SIZE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	vrun v;
	cli_target t = {0};
	int c, rc = EXIT_OK;
	st_error err;
	st_schema *builtin = NULL;
	char *dflt = NULL;

	memset(&v, 0, sizeof(v));
	v.vo = (st_validate_opts)ST_VALIDATE_OPTS_INIT;
	st_error_clear(&err);
	while ((c = cli_getopt(argc, argv, "hq", opts)) != -1) {
		if (cli_target_option(&t, c, optarg))
			continue;
		switch (c) {
		case OPT_JSON: v.json = 1; break;
		case OPT_STRICT: v.strict = 1; break;
		case 'q': v.quiet = 1; break;
		case OPT_NO_SCHEMA: v.vo.skip_schema = 1; break;
		case OPT_SCHEMA:
			if (load_user_schema(optarg, &v.vo.extra, &v.vo.nextra) < 0) {
				rc = EXIT_USAGE;
				goto out;
			}
			break;
		case OPT_RESOURCE_SCHEMA:
			if (load_user_schema(optarg, &v.vo.resource_schemas,
					     &v.vo.nresource_schemas) < 0) {
				rc = EXIT_USAGE;
				goto out;
			}
			break;
		case 'h': rc = cli_help(help); goto out;
		default: rc = cli_usage("validate", "bad option"); goto out;
		}
	}
	v.max_size = t.max_size;
	if (optind == argc && !t.backend_url && !t.stack &&
	    st_backend_default_url(&dflt, NULL, NULL) == ST_OK)
		t.backend_url = dflt; /* the whole backend a Pulumi command would use */
	if (optind == argc && !t.backend_url && !t.stack) {
		rc = cli_usage("validate", "nothing to validate: give FILE... or --backend URL");
		goto out;
	}
	if (optind < argc && (t.backend_url || t.stack)) {
		rc = cli_usage("validate", "give files or --backend/--stack, not both");
		goto out;
	}
	if (st_schema_builtin(&builtin, &err) != ST_OK) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto out;
	}
	v.vo.schema = builtin;
	if (v.json)
		v.files = json_array();
	if (optind < argc) {
		for (int i = optind; i < argc; i++)
			validate_one(&v, argv[i], strcmp(argv[i], "-") ? argv[i] : "<stdin>");
	} else if (t.stack) {
		if ((rc = cli_target_resolve(&t, "validate", 1)) != EXIT_OK)
			goto out;
		validate_stack(&v, t.backend, t.qname, t.key, t.stack);
	} else if ((rc = validate_backend(&v, t.backend_url)) != EXIT_OK) {
		goto out;
	}
	if (v.json)
		print_report(&v);
	rc = v.errors ? EXIT_FAIL : EXIT_OK;
out:
	for (size_t i = 0; i < v.vo.nextra; i++)
		st_schema_free(v.vo.extra[i]);
	for (size_t i = 0; i < v.vo.nresource_schemas; i++)
		st_schema_free(v.vo.resource_schemas[i]);
	free(v.vo.extra);
	free(v.vo.resource_schemas);
	json_decref(v.files);
	st_schema_free(builtin);
	cli_target_free(&t);
	free(dflt);
	return rc;
}
