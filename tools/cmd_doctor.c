/* statetool doctor: every problem of a whole DIY backend, each with the command that fixes it. */
#include "cli.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help[] =
	"usage: statetool doctor --backend URL [options]\n"
	"\n"
	"Look at every stack and object of a DIY backend (read-only, on any store) and report\n"
	"every problem in one report, each with the command that fixes it:\n"
	"  unreadable     a stack that cannot be read\n"
	"  integrity      integrity errors (statetool validate's rules, no schemas)\n"
	"  place          a state in the wrong place or the wrong envelope\n"
	"  pending        pending operations left by an interrupted update\n"
	"  lock           a stale lock: its process is gone from this host, it cannot be\n"
	"                 parsed, or it is older than --lock-age\n"
	"  legacy-layout  the legacy layout, which Pulumi refuses\n"
	"  legacy-stack   a legacy stack file in the project layout (Pulumi does not see it;\n"
	"                 one that names no project: upgrade --project STACK=NAME)\n"
	"  legacy-lock    a lock folder of the legacy layout in the project layout\n"
	"  stray-variant  a .json beside the .json.gz (or .zst) Pulumi reads\n"
	"  stack-name     a stack named '.' or '..': Pulumi accepts and lists it, statetool's\n"
	"                 commands do not open it (rename it with Pulumi)\n"
	"  journal        what an interrupted statetool operation left: a journal (and a\n"
	"                 staged object beside it), completed by any command on the stack; a\n"
	"                 staged object alone, only by move --recover with the move's two\n"
	"                 stacks (the fix names the other as OTHER_URL and OTHER_STACK); a\n"
	"                 journal whose own lock is held (not stale): in progress, no fix\n"
	"  rename         an interrupted stack rename (one problem; the old stack is not\n"
	"                 checked and the rename's own locks are not stale: it finishes them)\n"
	"  duplicate-id   one type and physical ID in two stacks, each through a provider of\n"
	"                 the same inputs (its version aside): both may manage one cloud\n"
	"                 resource (providers, external reads, pending deletes and a copy of\n"
	"                 another stack left out); the fix names a delete from either stack\n"
	"  index-stale    the backend's index (or --db) is out of date\n"
	"  temporary      a temporary file of a write (of a directory backend) untouched for\n"
	"                 over an hour: an interrupted statetool write left it\n"
	"\n"
	"Options:\n"
	"  --backend URL      the backend (default $PULUMI_BACKEND_URL)\n"
	"  --db PATH          the index to compare (default: the backend's own index, when\n"
	"                     there is one)\n"
	"  --lock-age HOURS   a lock older than this is stale (default 24; 0: never by age)\n"
	"  --json             one JSON document: {\"format_version\":1,\"backend\",\"stacks\",\n"
	"                     \"problems\":[{\"kind\",\"stack\",\"where\",\"message\",\"fix\"}]}\n"
	"  -h, --help         show this help\n"
	"\n"
	"Progress (\"doctor: N/M stacks\") on standard error when it is a terminal.\n"
	"Exit status 0 when nothing is wrong (\"no problems found\"), 1 when something is,\n"
	"2 on a usage error.\n";

static void on_progress(void *ctx, size_t done, size_t total)
{
	(void)ctx;
	fprintf(stderr, "\rdoctor: %zu/%zu stacks", done, total);
	if (done == total)
		fputs("\r\033[K", stderr);
	fflush(stderr);
}

static void print_json(st_backend *b, const st_doctor_report *r)
{
	json_t *doc = json_object(), *arr = json_array();
	json_object_set_new(doc, "format_version", json_integer(CLI_JSON_FORMAT));
	json_object_set_new(doc, "backend", json_string(st_backend_url(b)));
	json_object_set_new(doc, "stacks", json_integer((json_int_t)r->stacks));
	for (size_t i = 0; i < r->count; i++) {
		const st_doctor_finding *f = &r->items[i];
		json_t *o = json_object();
		json_object_set_new(o, "kind", json_string(f->kind));
		json_object_set_new(o, "stack", f->stack ? json_string(f->stack) : json_null());
		json_object_set_new(o, "where", f->where ? json_string(f->where) : json_null());
		json_object_set_new(o, "message", json_string(f->message));
		json_object_set_new(o, "fix", *f->fix ? json_string(f->fix) : json_null());
		json_array_append_new(arr, o);
	}
	json_object_set_new(doc, "problems", arr);
	cli_print_json(doc);
	json_decref(doc);
}

static void print_text(const st_doctor_report *r)
{
	for (size_t i = 0; i < r->count; i++) {
		const st_doctor_finding *f = &r->items[i];
		printf("%s: %s: %s\n", f->stack ? f->stack : "backend", f->kind, f->message);
		if (f->where)
			printf("  at: %s\n", f->where);
		if (*f->fix) /* (none for an operation in progress) */
			printf("  fix: %s\n", f->fix);
	}
	if (!r->count)
		printf("no problems found (%zu stack%s checked)\n", r->stacks,
		       r->stacks == 1 ? "" : "s");
	else
		printf("%zu problem%s found (%zu stack%s checked)\n", r->count,
		       r->count == 1 ? "" : "s", r->stacks, r->stacks == 1 ? "" : "s");
}

/* Is the query parameter `p` (n bytes, up to '=') named `name` once %-decoded, as Go's
 * url.ParseQuery decodes it ('+' a space)? */
static int param_is(const char *p, size_t n, const char *name)
{
	size_t i = 0;
	for (; i < n && *name; name++) {
		int c = (unsigned char)p[i];
		if (c == '%' && i + 2 < n && isxdigit((unsigned char)p[i + 1]) &&
		    isxdigit((unsigned char)p[i + 2])) {
			char hex[3] = {p[i + 1], p[i + 2], 0};
			c = (int)strtol(hex, NULL, 16);
			i += 3;
		} else {
			c = c == '+' ? ' ' : c;
			i++;
		}
		if (c != (unsigned char)*name)
			return 0;
	}
	return i == n && !*name;
}

/* The secrets a backend URL carries, which every message leaves out: 1, a password
 * (scheme://user:password@host..., or postgres://'s ?password=); 2, postgres://'s
 * ?sslpassword= (the client key's). */
static int url_secrets(const char *url)
{
	const char *a = url ? strstr(url, "://") : NULL, *end, *at, *q;
	int found = 0;
	if (!a)
		return 0;
	a += 3;
	end = a + strcspn(a, "/?#");
	at = memchr(a, '@', (size_t)(end - a));
	if (at && memchr(a, ':', (size_t)(at - a)))
		found |= 1;
	if (strncmp(url, "postgres://", 11) || !(q = strchr(end, '?')))
		return found;
	for (q++; *q && *q != '#';) {
		size_t n = strcspn(q, "&;#"), nl = strcspn(q, "=&;#");
		if (param_is(q, nl < n ? nl : n, "password"))
			found |= 1;
		if (param_is(q, nl < n ? nl : n, "sslpassword"))
			found |= 2;
		q += n;
		if (*q == '&' || *q == ';')
			q++;
	}
	return found;
}

int cmd_doctor(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"db", required_argument, NULL, 'd'},
		{"lock-age", required_argument, NULL, 'a'},
		{"json", no_argument, NULL, OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	st_doctor_opts o = ST_DOCTOR_OPTS_INIT;
	st_doctor_report r = {0};
	const char *url = NULL;
	st_backend *b = NULL;
	int json = 0, c, rc, secrets;
	st_error err;
	char *end;
	double hours;

	st_error_clear(&err);
	while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
		switch (c) {
		case OPT_BACKEND: url = optarg; break;
		case OPT_JSON: json = 1; break;
		case 'd': o.index_path = optarg; break;
		case 'a':
			hours = strtod(optarg, &end);
			/* (NaN fails every comparison: !(>= 0) refuses it) */
			if (end == optarg || *end || !(hours >= 0 && hours <= 1e6))
				return cli_usage("doctor", "invalid --lock-age '%s': hours", optarg);
			/* whole seconds, a positive age at least one (0 would mean the default) */
			o.lock_max_age = hours == 0 ? -1 : (long long)(hours * 3600);
			if (hours > 0 && (double)o.lock_max_age < hours * 3600)
				o.lock_max_age++; /* rounded up */
			break;
		case 'h': return cli_help(help);
		default: return cli_usage("doctor", "bad option");
		}
	}
	if (optind < argc)
		return cli_usage("doctor", "unexpected argument '%s'", argv[optind]);
	if (isatty(STDERR_FILENO))
		o.progress = on_progress;
	if ((rc = cli_backend_open(&b, url)) != EXIT_OK)
		return rc;
	if (st_backend_doctor(b, &o, &r, &err) != ST_OK) {
		cli_error(&err);
		st_backend_free(b);
		return err.code == ST_EINVAL ? EXIT_USAGE : EXIT_FAIL;
	}
	if (json)
		print_json(b, &r);
	else
		print_text(&r);
	secrets = url_secrets(url ? url : getenv("PULUMI_BACKEND_URL"));
	if (!json && r.count && (secrets & 1))
		printf("note: the fixes name the backend without its password, as every message "
		       "does: give it with PGPASSWORD or ~/.pgpass when you run them\n");
	if (!json && r.count && (secrets & 2))
		printf("note: the fixes name the backend without its sslpassword, as every "
		       "message does: add it to the URL when you run them\n");
	rc = r.count ? EXIT_FAIL : EXIT_OK;
	st_doctor_report_free(&r);
	st_backend_free(b);
	return rc;
}
