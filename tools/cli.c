/* Helpers shared by the subcommands. */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *cli_prog = "statetool";

/* The first error the command reported, for the --json document of a failure (cli_json_fail). */
static struct {
	int set;
	const char *code;
	char message[2048], file[512], pointer[512];
	int line, column;
} first_err;

/* A JSON document was written to stdout (cli_print_json). */
static volatile sig_atomic_t json_printed;

static const char *code_name(int code)
{
	static const char *const names[] = {"io",	   "parse",	 "format",   "version",
					    "feature",	   "integrity",	 "not-found", "ambiguous",
					    "locked",	   "invalid",	 "no-memory", "secrets",
					    "passphrase",  "conflict",	 "limit",    "unsupported",
					    "refused",	   "exists",	 "auth",     "outcome-unknown"};
	if (code <= -1 && code >= -(int)(sizeof(names) / sizeof(names[0])))
		return names[-code - 1];
	return "error";
}

static void record(const char *code, const char *msg, const st_error *err)
{
	if (first_err.set)
		return;
	first_err.set = 1;
	first_err.code = code;
	snprintf(first_err.message, sizeof(first_err.message), "%s", msg);
	if (err) {
		snprintf(first_err.file, sizeof(first_err.file), "%s", err->file);
		snprintf(first_err.pointer, sizeof(first_err.pointer), "%s", err->pointer);
		first_err.line = err->line;
		first_err.column = err->column;
	}
}

/* The --json document of a failure. */
static json_t *fail_doc(const char *cmd, int rc, const char *code, const char *message)
{
	json_t *doc = json_object(), *e = json_object();

	json_object_set_new(doc, "format_version", json_integer(CLI_JSON_FORMAT));
	json_object_set_new(doc, "command", json_string(cmd));
	json_object_set_new(doc, "ok", json_false());
	json_object_set_new(doc, "exit_code", json_integer(rc));
	json_object_set_new(e, "code", json_string(code));
	json_object_set_new(e, "message", json_string(message));
	json_object_set_new(doc, "error", e);
	return doc;
}

void cli_json_fail(const char *cmd, int rc)
{
	json_t *doc, *e;

	if (!cli_json_mode || rc == EXIT_OK || json_printed)
		return;
	doc = fail_doc(cmd, rc,
		       first_err.set ? first_err.code : rc == EXIT_USAGE ? "usage" : "error",
		       first_err.set ? first_err.message : "the command failed");
	e = json_object_get(doc, "error");
	if (first_err.file[0])
		json_object_set_new(e, "file", json_string(first_err.file));
	if (first_err.pointer[0])
		json_object_set_new(e, "pointer", json_string(first_err.pointer));
	if (first_err.line > 0) {
		json_object_set_new(e, "line", json_integer(first_err.line));
		json_object_set_new(e, "column", json_integer(first_err.column));
	}
	cli_print_json(doc);
	json_decref(doc);
}

/* SIGBUS: another program truncated a file while the command was reading it through a
 * mapping (the library checks a mapped file before it writes and after its last byte, not at
 * every read). The command stops at once. What it was writing is still a temporary file, and
 * a move's journal is finished or undone by the next command on its stacks, so no state is
 * left half-written; a lock the command took stays, so the message names how to remove it.
 * A signal handler may only write(2): the messages are made before (bus_prepare, again when
 * a lock is taken). Another SIGBUS (a misaligned access: a bug) is left to the default. */
#define BUS_MESSAGE                                                                             \
	"a file was truncated by another program while statetool was reading it (SIGBUS); no "  \
	"state was left half-written"
static const char *bus_cmd;
static char bus_line[1024];
static size_t bus_line_len;
static char *volatile bus_json;
static volatile size_t bus_json_len;

static char bus_unlocks[600]; /* how to remove the locks taken: "`statetool unlock X`" ... */
static int bus_nlocks;

static void bus_prepare(void)
{
	char msg[900];
	char *doc_text = NULL, *old = bus_json;
	size_t doc_len = 0;
	int n;

	if (bus_nlocks)
		snprintf(msg, sizeof(msg), "%s, but the lock%s it took may remain: remove %s with "
			 "%s; then run the command again", BUS_MESSAGE, bus_nlocks > 1 ? "s" : "",
			 bus_nlocks > 1 ? "them" : "it", bus_unlocks);
	else
		snprintf(msg, sizeof(msg), "%s: run the command again", BUS_MESSAGE);
	n = snprintf(bus_line, sizeof(bus_line), "%s: error: %s\n", cli_prog, msg);
	bus_line_len = n < 0 ? 0 : (size_t)n < sizeof(bus_line) ? (size_t)n : sizeof(bus_line) - 1;
	if (!cli_json_mode)
		return;
	json_t *doc = fail_doc(bus_cmd, EXIT_FAIL, "conflict", msg);
	if (doc && st_json_dump(doc, NULL, &doc_text, &doc_len, NULL) == ST_OK) {
		bus_json = NULL;
		bus_json_len = doc_len;
		bus_json = doc_text;
		free(old);
	}
	json_decref(doc);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	ssize_t w;

	(void)uc;
	if (si->si_code != BUS_ADRERR && si->si_code != SI_USER) {
		signal(sig, SIG_DFL); /* the faulting access runs again, now to the default */
		return;
	}
	if (bus_json && !json_printed)
		w = write(STDOUT_FILENO, bus_json, bus_json_len);
	w = write(STDERR_FILENO, bus_line, bus_line_len);
	(void)w;
	_exit(EXIT_FAIL);
}

void cli_catch_sigbus(const char *cmd)
{
	struct sigaction sa;

	bus_cmd = cmd;
	bus_prepare();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

void cli_error(const st_error *err)
{
	const char *msg = err->message[0] ? err->message : st_strerror(err->code);
	record(code_name(err->code), msg, err);
	fprintf(stderr, "%s: error: ", cli_prog);
	if (err->file[0] && err->line > 0)
		fprintf(stderr, "%s:%d:%d: ", err->file, err->line, err->column);
	else if (err->file[0] && !strstr(msg, err->file))
		fprintf(stderr, "%s: ", err->file);
	fputs(msg, stderr);
	if (err->pointer[0])
		fprintf(stderr, " (at %s)", err->pointer);
	fputc('\n', stderr);
}

void cli_errorf(const char *fmt, ...)
{
	va_list ap;
	char msg[1024];
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	record("error", msg, NULL);
	fprintf(stderr, "%s: error: ", cli_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_errorc(const char *code, const char *fmt, ...)
{
	va_list ap;
	char msg[1024];
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	record(code, msg, NULL);
	fprintf(stderr, "%s: error: %s\n", cli_prog, msg);
}

void cli_warnf(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: warning: ", cli_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	char msg[1024];
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	record("usage", msg, NULL);
	fprintf(stderr, "%s: error: ", cli_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s %s --help' for more information.\n", cli_prog, cmd ? cmd : "");
	return EXIT_USAGE;
}

int cli_help(const char *text)
{
	fputs(text, stdout);
	return EXIT_OK;
}

int cli_parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;
	if (*s < '0' || *s > '9')
		return -1; /* strtoull takes a sign and spaces ("-5" a huge number) */
	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end || v == 0)
		return -1;
	if (errno == ERANGE || v > (unsigned long long)SIZE_MAX >> shift)
		return -2;
	*out = (size_t)v << shift;
	return 0;
}

int cli_stack_ref_valid(const char *ref)
{
	const char *s1 = strchr(ref, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	const char *proj = s2 ? s1 + 1 : s1 ? ref : NULL, *stack = s2 ? s2 + 1 : s1 ? s1 + 1 : ref;
	char project[128];

	if (s2 && strchr(s2 + 1, '/')) {
		cli_errorf("invalid stack name '%s': expected organization/project/stack, "
			   "project/stack or stack", ref);
		return 0;
	}
	if (s2 && (s1 - ref != 12 || strncmp(ref, "organization", 12))) {
		cli_errorf("invalid stack name '%s': a DIY backend's organization is always "
			   "'organization'", ref);
		return 0;
	}
	if (proj) {
		size_t n = (size_t)((s2 ? s2 : s1) - proj);
		snprintf(project, sizeof(project), "%.*s", (int)(n < 127 ? n : 127), proj);
		if (n > 100 || !st_project_name_valid(project))
			return (cli_errorf("invalid project name '%.*s' in '%s': names may only contain "
					   "alphanumerics, hyphens, underscores and periods (at most "
					   "100, not '.' or '..')",
					   (int)n, proj, ref), 0);
	}
	if (!st_stack_name_valid(stack))
		return (cli_errorf("invalid stack name '%s' in '%s': names may only contain "
				   "alphanumerics, hyphens, underscores and periods (at most 100, "
				   "not '.' or '..')",
				   stack, ref), 0);
	return 1;
}

int cli_target_option(cli_target *t, int opt, const char *arg)
{
	switch (opt) {
	case OPT_BACKEND:
		t->backend_url = arg;
		return 1;
	case OPT_STACK:
		t->stack = arg;
		return 1;
	case OPT_MAX_SIZE:
		switch (cli_parse_size(arg, &t->max_size)) {
		case 0: break;
		case -2:
			cli_errorf("invalid --max-size '%s' (too large)", arg);
			exit(EXIT_USAGE);
		default:
			cli_errorf("invalid --max-size '%s' (use bytes or a K, M, G suffix)", arg);
			exit(EXIT_USAGE);
		}
		return 1;
	default:
		return 0;
	}
}

/* The stack's object now (size -1: none). */
static void stack_info(cli_target *t, st_store_info *si)
{
	char *key = NULL;
	int exists = 0;

	memset(si, 0, sizeof(*si));
	si->size = -1;
	if (st_backend_stack_key(t->backend, t->qname, &key, &exists, NULL) == ST_OK && exists &&
	    st_store_stat(st_backend_store(t->backend), key, si, NULL) != ST_OK) {
		memset(si, 0, sizeof(*si));
		si->size = -1;
	}
	free(key);
}

/* Notes the stack's object when its backend has an index (a local file that exists). */
static void index_watch(cli_target *t)
{
	char *p = st_backend_store(t->backend) ? st_index_default_path(t->backend) : NULL;
	if (!p || access(p, F_OK) != 0) {
		free(p);
		return;
	}
	t->index_path = p;
	/* the object resolving the stack found (no second listing) */
	memset(&t->seen, 0, sizeof(t->seen));
	t->seen.size = -1;
	if (t->exists && t->key &&
	    st_store_stat(st_backend_store(t->backend), t->key, &t->seen, NULL) != ST_OK) {
		memset(&t->seen, 0, sizeof(t->seen));
		t->seen.size = -1;
	}
}

/* Updates the index at `p` for stacks of `b` statetool changed. Never fails the command: the
 * index is a cache, and a failure only makes it stale (query says so). */
static void index_update(const char *p, st_backend *b, const char *const *qnames, size_t n)
{
	st_index *ix = NULL;
	st_changes notes = {0};
	st_problems fails = {0};
	st_error err;
	size_t i = 0;
	int rc;

	st_error_clear(&err);
	rc = st_index_open(&ix, p, 0, &notes, &err);
	for (; rc == ST_OK && i < n; i++)
		rc = st_index_update_stack(ix, b, qnames[i], NULL, &fails, &err);
	if (rc != ST_OK)
		cli_warnf("the index '%s' was not updated for '%s': %s", p,
			  qnames[i < n ? i : n - 1], err.message);
	for (size_t k = 0; k < fails.count; k++)
		cli_warnf("the index '%s': %s", p, fails.items[k].message);
	st_problems_clear(&fails);
	st_changes_clear(&notes);
	st_index_close(ix);
}

/* Brings the index up to date for a stack statetool changed (one stat when it did not). */
static void index_touch(cli_target *t)
{
	st_store_info now;

	stack_info(t, &now);
	if (now.size == t->seen.size && now.mtime_ns == t->seen.mtime_ns &&
	    !strcmp(now.etag, t->seen.etag))
		return;
	index_update(t->index_path, t->backend, (const char *const *)&t->qname, 1);
}

void cli_index_stacks(st_backend *b, const char *const *qnames, size_t n)
{
	char *p = st_backend_store(b) ? st_index_default_path(b) : NULL;

	if (p && n && access(p, F_OK) == 0)
		index_update(p, b, qnames, n);
	free(p);
}

/* A stack that does not resolve: its backend missing, or no state file in it (not-found). */
static int stack_missing(const cli_target *t, const char *ref)
{
	if (!st_backend_present(t->backend))
		cli_errorc("not-found", "no Pulumi backend at '%s': it has no .pulumi directory (a "
				       "mistyped path?)",
			   st_backend_url(t->backend));
	else
		cli_errorc("not-found", "stack '%s' has no state file in backend '%s'", ref,
			   st_backend_url(t->backend));
	return EXIT_FAIL;
}

/* A missing stack may be the new side of an interrupted move (its journal beside the key) or
 * stack rename (its marker): ended first, as a command on either stack ends it; then resolved. */
static int recover_missing(cli_target *t, const char *ref, int *exists)
{
	st_changes ch = {0};
	st_error err;
	int rc;

	st_error_clear(&err);
	rc = st_backend_recover(t->backend, t->qname, NULL, 0, 0, &ch, &err);
	for (size_t i = 0; i < ch.count; i++)
		fprintf(stderr, "%s: note: %s\n", cli_prog, ch.lines[i]);
	if (rc == ST_OK && ch.count) {
		free(t->qname);
		free(t->key);
		t->qname = t->key = NULL;
		rc = st_backend_resolve_key(t->backend, ref, &t->qname, &t->key, exists, &err);
	}
	st_changes_clear(&ch);
	if (rc != ST_OK)
		cli_error(&err);
	return rc == ST_OK ? EXIT_OK : EXIT_FAIL;
}

/* Opens the backend and resolves the stack; `ref` names it. */
static int resolve_stack(cli_target *t, const char *url, const char *ref, int must_exist)
{
	st_error err;
	int exists = 0;

	st_error_clear(&err);
	/* one listing tells the name, the object and where it is (the load reads that object) */
	if (st_backend_open(&t->backend, url, &err) != ST_OK ||
	    st_backend_resolve_key(t->backend, ref, &t->qname, &t->key, &exists, &err) != ST_OK) {
		cli_error(&err);
		return err.code == ST_EINVAL ? EXIT_USAGE : EXIT_FAIL;
	}
	if (must_exist && !exists && st_backend_store(t->backend) &&
	    recover_missing(t, ref, &exists) != EXIT_OK)
		return EXIT_FAIL;
	t->exists = exists;
	if (t->key)
		t->where = st_store_where(st_backend_store(t->backend), t->key);
	else
		t->where = strdup(t->qname);
	if (!t->where) {
		cli_errorf("out of memory");
		return EXIT_FAIL;
	}
	index_watch(t);
	if (must_exist && !t->exists)
		return stack_missing(t, ref);
	return EXIT_OK;
}

int cli_target_missing(const cli_target *t)
{
	if (t->backend)
		return stack_missing(t, t->stack ? t->stack : t->qname);
	cli_errorc("not-found", "cannot open '%s': No such file or directory", t->path);
	return EXIT_FAIL;
}

int cli_target_resolve(cli_target *t, const char *cmd, int must_exist)
{
	char *root = NULL, *ref = NULL;
	int rc;

	if (t->arg && t->stack)
		return cli_usage(cmd, "give either a STATE file or --stack, not both");
	if (!t->arg && !t->stack) {
		if (t->backend_url)
			return cli_usage(cmd, "--backend needs --stack NAME");
		return cli_usage(cmd, "missing STATE (a file, %sor --backend URL --stack NAME)",
				 t->no_stdin ? "" : "'-' for standard input, ");
	}
	if (t->stack)
		return resolve_stack(t, t->backend_url, t->stack, must_exist);
	if (t->backend_url)
		return cli_usage(cmd, "--backend goes with --stack, not with a STATE file");
	/* A stack's file named by its path is that stack: Pulumi's lock, its backend's rules. */
	if (strcmp(t->arg, "-") && st_backend_locate(t->arg, &root, &ref)) {
		rc = resolve_stack(t, root, ref, must_exist);
		free(root);
		free(ref);
		return rc;
	}
	t->path = strdup(t->arg);
	t->exists = strcmp(t->arg, "-") == 0 || access(t->arg, F_OK) == 0;
	if (must_exist && !t->exists)
		return cli_target_missing(t);
	return EXIT_OK;
}

void cli_target_free(cli_target *t)
{
	cli_filter_end(t);
	if (t->index_path && t->backend)
		index_touch(t);
	free(t->index_path);
	t->index_path = NULL;
	st_backend_free(t->backend);
	free(t->path);
	free(t->qname);
	free(t->where);
	free(t->key);
	free(t->locked);
	t->locked = NULL;
	t->key = NULL;
	t->backend = NULL;
	t->path = NULL;
	t->qname = NULL;
	t->where = NULL;
}

int cli_target_is_cloud(const cli_target *t)
{
	return t && t->backend && !strcmp(st_backend_kind(t->backend), "cloud");
}

const char *cli_target_names(const cli_target *t, char *buf, size_t n)
{
	const char *q = t->backend ? t->qname : NULL;
	if (q && cli_target_is_cloud(t)) { /* ORG/PROJECT/STACK */
		snprintf(buf, n, "%s", strchr(q, '/') + 1);
		return buf;
	}
	if (!q || strncmp(q, "organization/", 13) || !strchr(q + 13, '/'))
		return NULL;
	snprintf(buf, n, "%s", q + 13);
	return buf;
}

int cli_refuse_other_names(const cli_target *t, const char *names, const char *cmd,
			   const char *opt)
{
	char buf[256];
	const char *own, *slash;
	int same;

	if (!names || !t->backend)
		return EXIT_OK;
	if ((own = cli_target_names(t, buf, sizeof(buf))))
		same = !strcmp(own, names);
	else /* the legacy layout: a stack's name alone */
		same = t->qname && (slash = strchr(names, '/')) && !strcmp(slash + 1, t->qname);
	if (same)
		return EXIT_OK;
	return cli_usage(cmd,
			 "%s %s names another stack than %s: a stack of a backend belongs to the "
			 "stack and project its place names, as Pulumi sees it (leave %s out)",
			 opt, names, own ? own : t->qname ? t->qname : "the stack", opt);
}

const char *cli_target_where(const cli_target *t)
{
	return t->backend ? t->where : t->path;
}

void cli_target_forget(cli_target *t)
{
	free(t->key);
	t->key = NULL;
}

int cli_recover(cli_target *t, st_store *known)
{
	st_changes ch = {0};
	st_error err;
	int rc = ST_OK;

	st_error_clear(&err);
	if (t->backend)
		rc = st_backend_recover(t->backend, t->qname, known ? &known : NULL, known ? 1 : 0,
					0, &ch, &err);
	else if (t->path && strcmp(t->path, "-") && st_journal_pending(t->path, NULL))
		rc = st_journal_recover(t->path, &ch, &err);
	for (size_t i = 0; i < ch.count; i++)
		fprintf(stderr, "%s: note: %s\n", cli_prog, ch.lines[i]);
	if (ch.count)
		cli_target_forget(t);
	st_changes_clear(&ch);
	if (rc != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

const char *cli_target_name(const cli_target *t)
{
	if (t->stack)
		return t->stack;
	if (t->arg)
		return strcmp(t->arg, "-") ? t->arg : "<stdin>";
	return t->qname ? t->qname : "?";
}

int cli_load(cli_target *t, st_state **out)
{
	return cli_load_ex(t, out, 0);
}

int cli_load_ex(cli_target *t, st_state **out, int lazy)
{
	st_error err;
	st_load_opts opts = ST_LOAD_OPTS_INIT;

	st_error_clear(&err);
	opts.max_size = t->max_size;
	opts.threads = cli_threads;
	opts.lazy = lazy && cli_lazy;
	/* An interrupted move (or other two-stack operation, or stack rename) is completed
	 * first; cli_lock did it already for a stack it locked (no one can start one since) */
	if (!t->recovered && cli_recover(t, NULL) != EXIT_OK)
		return EXIT_FAIL;
	/* the object resolving found, not listed again (dropped when the recovery changed it) */
	opts.key = t->exists ? t->key : NULL;
	if (t->backend ? st_backend_load(t->backend, t->qname, &opts, out, &err)
		       : st_state_load_file(out, t->path, &opts, &err)) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

int cli_lock(cli_target *t, st_lock **out)
{
	st_error err;
	int rc;

	st_error_clear(&err);
	/* an interrupted operation's own locks are not in the way: it is completed first */
	if (t->backend && !t->recovered) {
		if (cli_recover(t, NULL) != EXIT_OK)
			return EXIT_FAIL;
		t->recovered = 1;
	}
	if (t->backend)
		rc = st_lock_stack(out, t->backend, t->qname, &err);
	else
		rc = st_lock_file(out, t->path, &err);
	if (rc) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	cli_target_forget(t); /* a writer may have changed the object before the lock */
	if (bus_cmd) { /* the SIGBUS message names the lock (a URL may hold a password: not) */
		size_t used = strlen(bus_unlocks);
		snprintf(bus_unlocks + used, sizeof(bus_unlocks) - used,
			 t->backend ? "%s`statetool unlock -s %s` (and its --backend)"
				    : "%s`statetool unlock %s`",
			 used ? " and " : "", t->backend ? t->qname : t->path);
		bus_nlocks++;
		bus_prepare();
	}
	return EXIT_OK;
}

void cli_unlock(const cli_target *t, st_lock *lock)
{
	st_error err;

	st_error_clear(&err);
	if (!lock || st_lock_release(lock, &err) == ST_OK)
		return;
	/* (a URL may hold a password: the stack's name, not its backend's URL) */
	if (t->backend)
		fprintf(stderr,
			"%s: warning: %s; remove it with `statetool unlock -s %s` (and its "
			"--backend)\n",
			cli_prog, err.message, t->qname);
	else
		fprintf(stderr, "%s: warning: %s; remove it with `statetool unlock %s`\n", cli_prog,
			err.message, t->path);
}

void cli_dry_lock(cli_target *t)
{
	st_error err;
	int rc;

	if (t->filter || (!t->backend && !t->path))
		return;
	st_error_clear(&err);
	rc = t->backend ? st_lock_check_stack(t->backend, t->qname, &err)
			: st_lock_check_file(t->path, &err);
	if (rc != ST_ELOCKED)
		return; /* (a store that cannot be listed fails the run itself) */
	fprintf(stderr, "%s: note: the real run would be refused: %s\n", cli_prog, err.message);
	free(t->locked);
	t->locked = strdup(err.message);
}

void cli_dry_locked_json(json_t *doc, const cli_target *t)
{
	if (t->locked)
		json_object_set_new(doc, "locked", json_string(t->locked));
}

/* After a save into the backend: the stack's object may have another name now (a change of
 * compression, PULUMI_DIY_BACKEND_GZIP/ZSTD): messages name the one written. */
static void saved_where(cli_target *t)
{
	char *key = NULL, *w;
	int exists = 0;

	if (st_backend_stack_key(t->backend, t->qname, &key, &exists, NULL) == ST_OK && exists &&
	    (w = st_store_where(st_backend_store(t->backend), key))) {
		free(t->where);
		t->where = w;
		cli_target_forget(t);
	}
	free(key);
}

int cli_save(cli_target *t, st_state *s, int *code)
{
	st_error err;
	int rc;

	st_error_clear(&err);
	if (t->backend && !t->filter) {
		rc = st_backend_save(t->backend, t->qname, s, NULL, &err);
		if (rc == ST_OK && st_backend_store(t->backend))
			saved_where(t);
	} else {
		st_write_opts wo = ST_WRITE_OPTS_INIT;
		wo.backup = !t->filter;
		wo.threads = cli_threads;
		rc = st_state_save(s, cli_save_path(t), &wo, &err);
	}
	if (code)
		*code = rc;
	if (rc) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	return cli_filter_emit(t);
}

int cli_print_json(const json_t *v)
{
	char *out;
	size_t len;
	st_error err;

	st_error_clear(&err);
	if (st_json_dump(v, NULL, &out, &len, &err) != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	fwrite(out, 1, len, stdout);
	free(out);
	json_printed = 1;
	return EXIT_OK;
}

void cli_json_begun(void)
{
	json_printed = 1;
}

int cli_write_output(const char *path, const char *data, size_t len)
{
	if (!strcmp(path, "-"))
		return cli_stdout_write(data, len);
	st_error err;
	st_write_opts wo = ST_WRITE_OPTS_INIT;
	st_error_clear(&err);
	wo.backup = 1;
	wo.threads = cli_threads;
	if (st_file_write_atomic(path, data, len, &wo, &err) != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

int cli_refuse_lossy(const st_state *s, const char *name, int allow)
{
	const st_problems *p = st_state_load_problems(s);
	size_t n = 0;
	const char *first = NULL;

	for (size_t i = 0; i < p->count; i++) {
		if (!strcmp(p->items[i].rule, "json/number-range")) {
			cli_errorf("refusing to write: '%s' holds a number beyond the float64 range "
				   "at %s, which Pulumi never decodes there but statetool cannot "
				   "write back (json/number-range); nothing written",
				   name, p->items[i].pointer);
			return EXIT_FAIL;
		}
		if (!strcmp(p->items[i].rule, "json/trailing-data"))
			cli_warnf("'%s' has data after the document, which `pulumi stack import` "
				  "does not read: what is written leaves it out",
				  name);
		if (strcmp(p->items[i].rule, "json/duplicate-key"))
			continue;
		if (!n++)
			first = p->items[i].pointer;
	}
	if (!n)
		return EXIT_OK;
	if (allow) {
		cli_warnf("'%s' has %zu duplicate object key%s (first at %s); each is written as "
			  "Pulumi reads it (statetool validate tells what is kept)",
			  name, n, n == 1 ? "" : "s", first);
		return EXIT_OK;
	}
	cli_errorf("refusing to write: '%s' has %zu duplicate object key%s (first at %s); saving "
		   "would write one value for each, as Pulumi reads it (an object merged into the "
		   "earlier one, else the last value), and lose the others. Fix them by hand "
		   "(statetool validate lists them), or pass --allow-duplicate-keys to write what "
		   "Pulumi reads",
		   name, n, n == 1 ? "" : "s", first);
	return EXIT_FAIL;
}

int cli_refuse_misplaced(st_state *s, const cli_target *t, const char *name)
{
	const char *place = t && t->backend ? t->qname : NULL;
	unsigned flags = ST_PLACE_ALL;
	st_problems p = {0};
	st_error err;

	if (cli_target_is_cloud(t))
		flags |= ST_PLACE_EXPORTS;
	st_error_clear(&err);
	if (st_check_place(s, place, flags, &p, &err) != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	if (!p.count)
		return EXIT_OK;
	cli_errorf("refusing to change '%s': it is not where it claims to be (nothing written; "
		   "`statetool validate` lists the mismatches):",
		   name);
	for (size_t i = 0; i < p.count; i++)
		cli_problem(&p.items[i]);
	st_problems_clear(&p);
	return EXIT_FAIL;
}

/* The states cli_state_done kept (a move has two); reachable, so leak checkers do not
 * count them. */
static st_state *kept[2];

#define KEEP_MIN_RESOURCES 5000

void cli_state_done(st_state *s)
{
	if (!s)
		return;
	if (json_array_size(st_state_resources(s, 0)) < KEEP_MIN_RESOURCES) {
		st_state_free(s);
		return;
	}
	st_state_free(kept[0]);
	kept[0] = kept[1];
	kept[1] = s;
}

/* ---- options every command shares (cli_getopt) ---- */

int cli_json_mode;

#define MAX_OPTS 64

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
	static const struct option *src;
	static struct option all[MAX_OPTS + 2];
	static char shorts[64];
	static int stack_val, yes_val, json_val;
	int c, li;

	if (src != longopts || optind <= 1) {
		size_t n = 0, k;
		src = longopts;
		stack_val = yes_val = json_val = 0;
		for (; longopts && longopts[n].name; n++) {
			if (n >= MAX_OPTS)
				abort(); /* a command with more options than this table holds */
			all[n] = longopts[n];
			if (!strcmp(longopts[n].name, "stack"))
				stack_val = longopts[n].val;
			else if (!strcmp(longopts[n].name, "yes"))
				yes_val = longopts[n].val;
			else if (!strcmp(longopts[n].name, "json"))
				json_val = longopts[n].val;
		}
		if (!yes_val)
			all[n++] = (struct option){"yes", no_argument, NULL, 'y'};
		memset(&all[n], 0, sizeof(all[n]));
		k = (size_t)snprintf(shorts, sizeof(shorts), "%s%s%s", shortopts,
				     stack_val && !strchr(shortopts, 's') ? "s:" : "",
				     strchr(shortopts, 'y') ? "" : "y");
		if (k >= sizeof(shorts))
			abort();
	}
	for (;;) {
		li = -1;
		c = getopt_long(argc, argv, shorts, all, &li);
		if (c == 's' && stack_val && !strchr(shortopts, 's'))
			return stack_val;
		if (c == 'y' && !strchr(shortopts, 'y')) {
			if (yes_val)
				return yes_val;
			continue; /* --yes: statetool never asks, so there is nothing to skip */
		}
		if (c == json_val && json_val && li >= 0)
			cli_json_mode = 1;
		return c;
	}
}

int cli_backend_open(st_backend **out, const char *url)
{
	st_error err;

	st_error_clear(&err);
	*out = NULL;
	if (st_backend_open(out, url, &err) != ST_OK) {
		cli_error(&err);
		return err.code == ST_EINVAL ? EXIT_USAGE : EXIT_FAIL;
	}
	if (!st_backend_present(*out)) {
		cli_errorf("no Pulumi backend at '%s': it has no .pulumi directory (a mistyped path?)",
			   st_backend_url(*out));
		st_backend_free(*out);
		*out = NULL;
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* Display width of UTF-8 text: one column per character (no wide-character tables). */
static size_t text_width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		w += ((unsigned char)*s & 0xC0) != 0x80;
	return w;
}

void cli_print_table(const json_t *rows)
{
	size_t ncols = 0, *width;
	const json_t *row, *cell;
	size_t i, k;

	json_array_foreach(rows, i, row)
		if (json_array_size(row) > ncols)
			ncols = json_array_size(row);
	if (!ncols || !(width = calloc(ncols, sizeof(*width))))
		return;
	json_array_foreach(rows, i, row)
		json_array_foreach(row, k, cell) {
			size_t w = text_width(json_string_value(cell) ? json_string_value(cell) : "");
			if (w > width[k])
				width[k] = w;
		}
	json_array_foreach(rows, i, row) {
		size_t n = json_array_size(row);
		json_array_foreach(row, k, cell) {
			const char *v = json_string_value(cell) ? json_string_value(cell) : "";
			fputs(v, stdout);
			if (k + 1 < n)
				printf("%*s", (int)(width[k] - text_width(v) + 2), "");
		}
		putchar('\n');
	}
	free(width);
}

void cli_problem_at(const st_problem *q)
{
	if (q->pointer && q->pointer[0])
		fprintf(stderr, "    at %s\n", q->pointer);
}

void cli_problem(const st_problem *q)
{
	fprintf(stderr, "  [%s] %s\n", q->rule, q->message);
	cli_problem_at(q);
}
