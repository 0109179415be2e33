/* The promises of lib/statetool.h, one test each: st_state_touch drops what the state derived
 * from its tree; every fallible function accepts err == NULL and returns the same code as with
 * an error record; a NULL handle aborts. */
#include "testutil.h"
#include "contract.h"

#include <fcntl.h>
#include <stddef.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

static const char two_resources[] =
	"{\"version\":3,\"deployment\":{\"manifest\":{\"time\":\"2024-01-01T00:00:00Z\","
	"\"magic\":\"\",\"version\":\"\"},\"resources\":["
	"{\"urn\":\"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev\",\"custom\":false,"
	"\"type\":\"pulumi:pulumi:Stack\"},"
	"{\"urn\":\"urn:pulumi:dev::p::m:i:R::a\",\"custom\":true,\"id\":\"a\","
	"\"type\":\"m:i:R\",\"parent\":\"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev\"},"
	"{\"urn\":\"urn:pulumi:dev::p::m:i:R::b\",\"custom\":true,\"id\":\"b\","
	"\"type\":\"m:i:R\",\"parent\":\"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev\"}]}}";

static st_state *load_text(const char *text)
{
	st_state *s = NULL;
	assert_int_equal(st_state_load_buffer(&s, text, strlen(text), "t.json", NULL, NULL),
			 ST_OK);
	return s;
}

/* An edit through the borrowed pointers (taint set on one resource), st_state_touch, then an
 * edit session that changes another resource: the commit declares the feature the first edit
 * brought in (version 4, ["taint"]), as st_state_apply_features on the same tree would. */
static void test_touch_drops_derived_data(void **unused)
{
	(void)unused;
	st_state *s = load_text(two_resources);
	json_t *res = st_state_resources(s, 0), *features;
	st_edit *e = NULL;
	size_t target = 2, changed = 0;

	assert_int_equal(st_state_version(s), 3);
	json_object_set_new(json_array_get(res, 1), "taint", json_true());
	st_state_touch(s);
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_set_flag(e, (st_handle[]){tu_handle(e, target)}, 1, "protect", 1, &changed, NULL), ST_OK);
	assert_int_equal(changed, 1);
	assert_int_equal(st_edit_commit(e, NULL, NULL, NULL), ST_OK);
	st_edit_free(e);
	assert_int_equal(st_state_version(s), 4);
	features = st_state_features(s);
	assert_non_null(features);
	assert_int_equal(json_array_size(features), 1);
	assert_string_equal(json_string_value(json_array_get(features, 0)), "taint");
	st_state_free(s);
}

/* The envelope, version and deployment are read again: a checkpoint replaced through the root
 * is the one st_state_deployment then finds. */
static void test_touch_rebinds_envelope(void **unused)
{
	(void)unused;
	st_state *s = load_text("{\"version\":3,\"checkpoint\":{\"stack\":\"organization/p/dev\","
				"\"latest\":{\"manifest\":{},\"resources\":[]}}}");
	json_t *root = st_state_root(s);

	assert_int_equal(st_state_envelope(s), ST_ENVELOPE_CHECKPOINT);
	json_object_del(root, "checkpoint");
	json_object_set_new(root, "deployment", tu_json("{\"manifest\":{},\"resources\":[{}]}"));
	st_state_touch(s);
	assert_int_equal(st_state_envelope(s), ST_ENVELOPE_EXPORT);
	assert_int_equal(json_array_size(st_state_resources(s, 0)), 1);
	assert_null(st_state_checkpoint_stack(s));
	st_state_free(s);
}

/* st_move and st_import tell a stack that names none in a message of their own, with err
 * NULL as with an error record (they wrote through err to replace the first error). */
static void test_move_import_err_null(void **unused)
{
	(void)unused;
	st_state *a = NULL, *b = NULL;
	st_move_opts mo = ST_MOVE_OPTS_INIT;
	st_move_report mr;
	st_import_report ir;
	st_error err;
	json_t *doc = tu_json("{\"resources\":[{\"type\":\"m:i:R\",\"name\":\"x\","
			      "\"id\":\"x\"}]}");
	const char *pat = "*";

	mo.patterns = &pat;
	mo.npatterns = 1;
	assert_int_equal(st_state_new(&a, NULL), ST_OK);
	assert_int_equal(st_state_new(&b, NULL), ST_OK);
	assert_int_equal(st_move(a, NULL, b, NULL, &mo, &mr, NULL), ST_EINVAL);
	st_move_report_clear(&mr);
	st_error_clear(&err);
	assert_int_equal(st_move(a, NULL, b, NULL, &mo, &mr, &err), ST_EINVAL);
	assert_string_equal(err.message, "cannot tell the source's stack and project: it has no "
			    "resources and no name of its own; add --source-stack PROJECT/STACK");
	st_move_report_clear(&mr);
	assert_int_equal(st_import(b, NULL, doc, NULL, &ir, NULL, NULL), ST_EINVAL);
	st_import_report_clear(&ir);
	st_error_clear(&err);
	assert_int_equal(st_import(b, NULL, doc, NULL, &ir, NULL, &err), ST_EINVAL);
	assert_string_equal(err.message, "cannot tell the destination's stack and project: it "
			    "has no resources and no name of its own; add --dest-stack "
			    "PROJECT/STACK");
	st_import_report_clear(&ir);
	/* another error of the names' is passed on as it was */
	mo.source_stack = "bad name/x/y/z";
	st_error_clear(&err);
	assert_int_equal(st_move(a, NULL, b, NULL, &mo, &mr, &err), ST_EINVAL);
	assert_true(strstr(err.message, "bad name") != NULL);
	st_move_report_clear(&mr);
	json_decref(doc);
	st_state_free(a);
	st_state_free(b);
}

static int drain(void *ctx, const char *p, size_t n)
{
	(void)ctx;
	(void)p;
	(void)n;
	return 0;
}

/* st_buf_take always hands back a string: an empty buffer gives "" (its fresh memory was not
 * terminated), and so does one whose bytes went to its sink. */
static void test_buf_take_terminated(void **unused)
{
	st_buf b;
	size_t len = 99;
	char *junk = malloc(256), *d;
	(void)unused;
	/* the allocator will likely hand this memory back: make it not look like a string */
	memset(junk, 'x', 256);
	free(junk);
	st_buf_init(&b);
	d = st_buf_take(&b, &len);
	assert_non_null(d);
	assert_int_equal(len, 0);
	assert_string_equal(d, "");
	free(d);

	st_buf_init(&b);
	b.sink = drain;
	st_buf_add(&b, "abc", 3);
	assert_int_equal(st_buf_flush(&b), 0);
	d = st_buf_take(&b, &len);
	assert_non_null(d);
	assert_int_equal(len, 0);
	assert_string_equal(d, "");
	free(d);
}

/* The library's version at run time is the header's. */
static void test_version(void **unused)
{
	char buf[32];
	(void)unused;
	assert_int_equal(st_version(), ST_VERSION_NUMBER);
	assert_string_equal(st_version_string(), ST_VERSION);
	snprintf(buf, sizeof(buf), "%lu.%lu.%lu", st_version() >> 16, st_version() >> 8 & 0xff,
		 st_version() & 0xff);
	assert_string_equal(buf, ST_VERSION);
}

/* A state of n resources, as text. */
static char *state_text(int n)
{
	st_buf b;
	st_buf_init(&b);
	st_buf_adds(&b, "{\"version\":3,\"deployment\":{\"manifest\":{},\"resources\":[");
	for (int i = 0; i < n; i++)
		st_buf_printf(&b, "%s{\"urn\":\"urn:pulumi:dev::p::m:i:R::r%d\",\"custom\":true,"
				  "\"id\":\"i%d\",\"type\":\"m:i:R\"}", i ? "," : "", i, i);
	st_buf_adds(&b, "]}}");
	return st_buf_take(&b, NULL);
}

/* What the hooks saw. */
typedef struct seen {
	char steps[64];  /* "write:1 write:2 ..." */
	int phases;      /* named phases */
	int starts;      /* NULL phases */
	int saw_fsync;   /* the phase "write: fsync" */
} seen;

static void on_phase(void *ctx, const char *name)
{
	seen *w = ctx;
	if (!name) {
		w->starts++;
		return;
	}
	w->phases++;
	if (!strcmp(name, "write: fsync"))
		w->saw_fsync = 1;
}

static void on_step(void *ctx, const char *op, int step)
{
	seen *w = ctx;
	size_t n = strlen(w->steps);
	snprintf(w->steps + n, sizeof(w->steps) - n, "%s%s:%d", n ? " " : "", op, step);
}

/* The library reads no STATETOOL_* variable: with STATETOOL_CRASH_AT naming a step and
 * STATETOOL_TIMINGS set, a write neither dies nor prints; what the CLI made of them goes
 * through the hooks, which see every step of the write and its phases. */
static void test_no_environment_hooks_instead(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), *p = st_path_join(dir, "s.json"), *errf = st_path_join(dir, "e");
	st_hooks h = ST_HOOKS_INIT;
	seen w;
	st_state *s = load_text(two_resources);
	int saved = dup(2), fd;
	struct stat sb;

	setenv("STATETOOL_CRASH_AT", "write:1", 1);
	setenv("STATETOOL_TIMINGS", "1", 1);
	setenv("STATETOOL_THREADS", "x", 1);
	fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	fflush(stderr);
	dup2(fd, 2);
	assert_int_equal(st_state_save(s, p, NULL, NULL), ST_OK);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd);
	assert_int_equal(stat(errf, &sb), 0);
	assert_int_equal(sb.st_size, 0); /* nothing printed */
	unsetenv("STATETOOL_CRASH_AT");
	unsetenv("STATETOOL_TIMINGS");
	unsetenv("STATETOOL_THREADS");

	memset(&w, 0, sizeof(w));
	h.phase = on_phase;
	h.step = on_step;
	h.ctx = &w;
	assert_int_equal(st_set_hooks(&h, NULL), ST_OK);
	assert_int_equal(st_state_save(s, p, NULL, NULL), ST_OK);
	assert_string_equal(w.steps, "write:1 write:2 bak:1 write:3 write:4");
	assert_int_equal(w.saw_fsync, 1);
	st_state_free(s);
	s = NULL;
	assert_int_equal(st_state_load_file(&s, p, NULL, NULL), ST_OK);
	assert_int_equal(w.starts, 1);
	assert_true(w.phases >= 4);
	/* removed: nothing more is seen */
	assert_int_equal(st_set_hooks(NULL, NULL), ST_OK);
	assert_int_equal(st_state_save(s, p, NULL, NULL), ST_OK);
	assert_string_equal(w.steps, "write:1 write:2 bak:1 write:3 write:4");
	st_state_free(s);
	free(p);
	free(errf);
	tu_rmdir(dir);
}

/* The locks hook: the count of lock objects being written or held, from before the write to
 * after the delete; a lock refused (another holds it) goes back; a version 1 st_hooks (no
 * `locks`) is read only as far as version 1 goes (a heap block of that size). */
static size_t locks_seen[16], nlocks_seen;

static void on_locks(void *ctx, size_t n)
{
	(void)ctx;
	if (nlocks_seen < 16)
		locks_seen[nlocks_seen++] = n;
}

static void test_locks_hook(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), *p = st_path_join(dir, "s.json");
	st_hooks h = ST_HOOKS_INIT;
	void *v1;
	st_lock *a = NULL, *b = NULL;
	st_error err;

	tu_write(p, "{}", 2);
	h.locks = on_locks;
	assert_int_equal(st_set_hooks(&h, NULL), ST_OK);
	assert_int_equal(st_lock_file(&a, p, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_lock_file(&b, p, &err), ST_ELOCKED);
	assert_int_equal(st_lock_release(a, NULL), ST_OK);
	assert_int_equal(nlocks_seen, 4);
	assert_int_equal(locks_seen[0], 1); /* taking a */
	assert_int_equal(locks_seen[1], 2); /* taking b */
	assert_int_equal(locks_seen[2], 1); /* b refused */
	assert_int_equal(locks_seen[3], 0); /* a released */
	h.version = 1;
	v1 = malloc(offsetof(st_hooks, locks));
	assert_non_null(v1);
	memcpy(v1, &h, offsetof(st_hooks, locks));
	assert_int_equal(st_set_hooks(v1, NULL), ST_OK);
	free(v1);
	assert_int_equal(st_lock_file(&a, p, NULL), ST_OK);
	assert_int_equal(st_lock_release(a, NULL), ST_OK);
	assert_int_equal(nlocks_seen, 4); /* version 1: no locks hook */
	assert_int_equal(st_set_hooks(NULL, NULL), ST_OK);
	free(p);
	tu_rmdir(dir);
}

/* The `threads` of the load and write options decide, whatever the process-wide choice: 1
 * keeps the parse and the writer on one thread, 2 splits them (counted), 0 follows
 * st_set_threads. Values beyond 2 are refused. */
static void test_threads_options(void **unused)
{
	(void)unused;
	char *text = state_text(1200), *dir = tu_tmpdir(), *p = st_path_join(dir, "s.json");
	size_t len = strlen(text);
	st_load_opts lo = ST_LOAD_OPTS_INIT;
	st_write_opts wo = ST_WRITE_OPTS_INIT;
	st_state *s = NULL;
	st_error err;
	unsigned long splits, wsplits;

	st__json_split_test(64);
	for (int proc = 1; proc <= 2; proc++) {
		assert_int_equal(st_set_threads(proc, NULL), ST_OK);
		/* 1: one thread, whatever the process-wide choice */
		splits = st__json_splits();
		wsplits = st__json_write_splits();
		lo.threads = 1;
		wo.threads = 1;
		assert_int_equal(st_state_load_buffer(&s, text, len, "s.json", &lo, NULL), ST_OK);
		assert_int_equal(st_state_save(s, p, &wo, NULL), ST_OK);
		st_state_free(s);
		assert_int_equal(st__json_splits(), splits);
		assert_int_equal(st__json_write_splits(), wsplits);
		/* 2: two threads, whatever the process-wide choice */
		lo.threads = 2;
		wo.threads = 2;
		assert_int_equal(st_state_load_buffer(&s, text, len, "s.json", &lo, NULL), ST_OK);
		assert_int_equal(st_state_save(s, p, &wo, NULL), ST_OK);
		st_state_free(s);
		assert_int_equal(st__json_splits(), splits + 1);
		assert_int_equal(st__json_write_splits(), wsplits + 1);
		/* 0: the process-wide choice */
		lo.threads = 0;
		wo.threads = 0;
		assert_int_equal(st_state_load_buffer(&s, text, len, "s.json", &lo, NULL), ST_OK);
		assert_int_equal(st_state_save(s, p, &wo, NULL), ST_OK);
		st_state_free(s);
		assert_int_equal(st__json_splits(), splits + 1 + (proc == 2));
		assert_int_equal(st__json_write_splits(), wsplits + 1 + (proc == 2));
	}
	st_set_threads(0, NULL);
	st__json_split_test(0);
	/* the file is the text, whichever way it was written */
	{
		char *back = tu_read(p, NULL);
		assert_string_equal(back, text);
		free(back);
	}
	st_error_clear(&err);
	lo.threads = 3;
	assert_int_equal(st_state_load_buffer(&s, text, len, "s.json", &lo, &err), ST_EINVAL);
	assert_null(s);
	assert_string_equal(err.message,
			    "threads must be 0 (automatic), 1 (one thread) or 2 (two), not 3");
	assert_int_equal(st_set_threads(-1, NULL), ST_EINVAL);
	free(text);
	free(p);
	tu_rmdir(dir);
}

/* Every options struct carries its version: the library refuses one it does not know (a
 * struct filled without its _INIT macro has 0) and accepts its own. */
static void test_options_versions(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), *p = st_path_join(dir, "s.json");
	st_state *s = load_text(two_resources), *d = NULL;
	st_error err;
	st_load_opts lo = ST_LOAD_OPTS_INIT;
	st_write_opts wo = ST_WRITE_OPTS_INIT;
	st_validate_opts vo = ST_VALIDATE_OPTS_INIT;
	st_move_opts mo = ST_MOVE_OPTS_INIT;
	st_import_opts io = ST_IMPORT_OPTS_INIT;
	st_schema_opts so = ST_SCHEMA_OPTS_INIT;
	st_parse_limits pl = ST_PARSE_LIMITS_INIT;
	st_secrets_callbacks cb = ST_SECRETS_CALLBACKS_INIT;
	st_hooks h = ST_HOOKS_INIT;
	st_problems probs = {0};
	st_move_report mr;
	st_import_report ir;
	st_schema *sc = NULL;
	st_secrets *sec = NULL;
	st_edit *e = NULL;
	json_t *v = NULL, *doc = tu_json("{\"resources\":[]}");
	const char *pat = "nothing";

	/* the initialisers give the current versions, which are accepted */
	assert_int_equal(lo.version, ST_LOAD_OPTS_VERSION);
	assert_int_equal(st_state_save(s, p, &wo, NULL), ST_OK);
	assert_int_equal(st_state_load_file(&d, p, &lo, NULL), ST_OK);
	st_state_free(d);
	assert_int_equal(st_validate(s, &vo, &probs, NULL), ST_OK);
	assert_int_equal(st_set_hooks(&h, NULL), ST_OK);
	st_problems_clear(&probs);
#define REFUSED(call, what)                                                                      \
	do {                                                                                     \
		st_error_clear(&err);                                                            \
		assert_int_equal((call), ST_EINVAL);                                             \
		assert_non_null(strstr(err.message, "unsupported options version 0 of " what));   \
	} while (0)
	lo.version = wo.version = vo.version = mo.version = io.version = so.version = 0;
	pl.version = cb.version = h.version = 0;
	REFUSED(st_state_load_file(&d, p, &lo, &err), "st_load_opts");
	REFUSED(st_state_load_buffer(&d, "{}", 2, "x", &lo, &err), "st_load_opts");
	REFUSED(st_state_save(s, p, &wo, &err), "st_write_opts");
	REFUSED(st_file_write_atomic(p, "x", 1, &wo, &err), "st_write_opts");
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	REFUSED(st_edit_commit_save(e, p, &wo, 0, NULL, NULL, NULL, &err), "st_write_opts");
	st_edit_free(e);
	REFUSED(st_validate(s, &vo, &probs, &err), "st_validate_opts");
	mo.patterns = &pat;
	mo.npatterns = 1;
	REFUSED(st_move(s, NULL, s, NULL, &mo, &mr, &err), "st_move_opts");
	st_move_report_clear(&mr);
	REFUSED(st_import(s, NULL, doc, &io, &ir, NULL, &err), "st_import_opts");
	st_import_report_clear(&ir);
	assert_int_equal(st_schema_new(&sc, NULL), ST_OK);
	REFUSED(st_schema_validate(sc, NULL, doc, &so, NULL, &err), "st_schema_opts");
	REFUSED(st_json_parse(&v, "{}", 2, "x", &pl, NULL, NULL, &err), "st_parse_limits");
	REFUSED(st_json_load_file(&v, p, 0, &pl, NULL, NULL, &err), "st_parse_limits");
	REFUSED(st_secrets_custom(&sec, "x", &cb, &err), "st_secrets_callbacks");
	REFUSED(st_set_hooks(&h, &err), "st_hooks");
	/* a version 1 st_write_opts (a caller built before exact_mode) is read only as far as
	 * version 1 goes: a heap block of exactly that size, so an over-read is an ASan/valgrind
	 * error */
	{
		size_t v1 = offsetof(st_write_opts, exact_mode);
		st_write_opts o = ST_WRITE_OPTS_INIT;
		void *old = malloc(v1);
		assert_non_null(old);
		o.version = 1;
		o.backup = 1;
		memcpy(old, &o, v1);
		assert_int_equal(st_state_save(s, p, old, NULL), ST_OK);
		assert_int_equal(st_file_write_atomic(p, "x", 1, old, NULL), ST_OK);
		free(old);
	}
	/* a version from the future, too */
	wo.version = ST_WRITE_OPTS_VERSION + 1;
	st_error_clear(&err);
	assert_int_equal(st_state_save(s, p, &wo, &err), ST_EINVAL);
	assert_null(d);
	assert_null(v);
	assert_null(sec);
	st_set_hooks(NULL, NULL);
	st_schema_free(sc);
	json_decref(doc);
	st_state_free(s);
	free(p);
	tu_rmdir(dir);
}

/* NULL handles: a sample of the entry points, each in a child that must die of SIGABRT. */
static void null_state_version(void) { st_state_version(NULL); }
static void null_state_save(void) { st_state_save(NULL, "x", NULL, NULL); }
static void null_state_resources(void) { st_state_resources(NULL, 1); }
static void null_edit_begin(void)
{
	st_edit *e;
	st_edit_begin(&e, NULL, NULL, NULL);
}
static void null_edit_commit(void) { st_edit_commit(NULL, NULL, NULL, NULL); }
static void null_validate(void)
{
	st_problems p = {0};
	st_validate(NULL, NULL, &p, NULL);
}
static void null_move_dst(void)
{
	st_state *a = NULL;
	st_move_opts o = ST_MOVE_OPTS_INIT;
	st_move_report r;
	st_state_new(&a, NULL);
	st_move(a, NULL, NULL, NULL, &o, &r, NULL);
}
static void null_secrets_encrypt(void)
{
	char *ct;
	st_secrets_encrypt(NULL, "x", 1, &ct, NULL);
}
static void null_backend_list(void)
{
	st_stack_info *i;
	size_t n;
	st_backend_list(NULL, &i, &n, NULL);
}
static void null_index_sql(void) { st_index_sql(NULL, "SELECT 1", NULL, NULL, NULL); }
static void null_store_read(void)
{
	char *d;
	size_t n;
	st_store_read(NULL, "k", 0, &d, &n, NULL, NULL);
}
static void null_schema_validate(void) { st_schema_validate(NULL, NULL, NULL, NULL, NULL, NULL); }

/* Does text hold `line` (with its newline) as a whole line? */
static int has_line(const char *text, const char *line)
{
	for (const char *p = text; (p = strstr(p, line)); p++)
		if (p == text || p[-1] == '\n')
			return 1;
	return 0;
}

/* Every required pointer of every public function (tests/nullargs.h, generated from the
 * header by tests/nullargs.sh): NULL there, a non-NULL dummy everywhere else. The argument is
 * checked before any other is used, so the dummies are never read. */
struct na_case {
	const char *func, *arg;
	void (*call)(void);
};
static _Alignas(64) unsigned char na_dummy[4096];
static const st_handle na_handle;
static void na_fn(void) {}
#define NA(T) ((T)(void *)na_dummy)
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat"
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-security"
#pragma GCC diagnostic ignored "-Wformat-extra-args"
#endif
#include "nullargs.h"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/* Runs call in a child with stderr to errf; returns its wait status. */
static int run_child(void (*call)(void), const char *errf)
{
	int status;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		struct rlimit no_core = {0, 0};
		setrlimit(RLIMIT_CORE, &no_core);
		dup2(fd, 2);
		call();
		_exit(0); /* not reached when the argument is checked */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void test_null_handles_abort(void **unused)
{
	(void)unused;
	static const struct {
		const char *name;
		void (*call)(void);
		const char *message;
	} cases[] = {
		{"st_state_version", null_state_version,
		 "libstatetool: st_state_version: 'state' must not be NULL\n"},
		{"st_state_save", null_state_save, NULL},
		{"st_state_resources", null_state_resources, NULL},
		{"st_edit_begin", null_edit_begin, NULL},
		{"st_edit_commit", null_edit_commit, NULL},
		{"st_validate", null_validate, NULL},
		{"st_move", null_move_dst, "libstatetool: st_move: 'dst' must not be NULL\n"},
		{"st_secrets_encrypt", null_secrets_encrypt, NULL},
		{"st_backend_list", null_backend_list, NULL},
		{"st_index_sql", null_index_sql, NULL},
		{"st_store_read", null_store_read, NULL},
		{"st_schema_validate", null_schema_validate, NULL},
	};
	char *dir = tu_tmpdir(), *errf = st_path_join(dir, "stderr");

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int status = run_child(cases[i].call, errf);
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT) {
			fprintf(stderr, "%s(NULL) did not abort\n", cases[i].name);
			fail();
		}
		if (cases[i].message) {
			/* a line of its own (valgrind, when it runs the test, adds its lines) */
			char *text = tu_read(errf, NULL);
			assert_non_null(text);
			assert_true(has_line(text, cases[i].message));
			free(text);
		}
	}
	free(errf);
	tu_rmdir(dir);
}

/* "libstatetool: FUNC: 'ARG' must not be NULL" (ARG may go on, as in 'targets || !n'). */
static void test_null_args_generated(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), *errf = st_path_join(dir, "stderr");
	size_t bad = 0, n = sizeof(na_cases) / sizeof(na_cases[0]);

	assert_true(n > 300);
	for (size_t i = 0; i < n; i++) {
		int status = run_child(na_cases[i].call, errf);
		char *text = tu_read(errf, NULL), want[256], *at;
		snprintf(want, sizeof(want), "libstatetool: %s: '%s", na_cases[i].func,
			 na_cases[i].arg);
		at = text ? strstr(text, want) : NULL;
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT || !at ||
		    (at[strlen(want)] != '\'' && at[strlen(want)] != ' ') ||
		    (at != text && at[-1] != '\n')) {
			fprintf(stderr, "%s(%s NULL): %s %d, stderr: %.100s\n", na_cases[i].func,
				na_cases[i].arg, WIFSIGNALED(status) ? "signal" : "exit",
				WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
				text ? text : "");
			bad++;
		}
		free(text);
	}
	free(errf);
	tu_rmdir(dir);
	assert_int_equal(bad, 0);
}

/* An enum out of range or a flag bit the function does not know: ST_EINVAL with a message
 * naming it, nothing done (before the fix, st_state_set_envelope(9) returned ST_OK). */
static void test_bad_enums_and_flags(void **unused)
{
	(void)unused;
	st_state *s = load_text(two_resources);
	char *dir = tu_tmpdir(), *text = NULL, *before = NULL, *after = NULL;
	st_store *store = NULL;
	st_backend *b = NULL;
	st_edit *e = NULL;
	st_error err;
	json_t *j = NULL;
	size_t *idx = NULL, n = 0, len = 0;
	st_store_entry *ents = NULL;
	st_problems p = {0};
	const json_t *r = json_array_get(st_state_resources(s, 0), 1);

	assert_int_equal(st_state_dump(s, NULL, &before, &len, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_state_set_envelope(s, (st_envelope)9, NULL, &err), ST_EINVAL);
	assert_string_equal(err.message, "unknown envelope 9 (the envelopes are ST_ENVELOPE_EXPORT "
					 "and ST_ENVELOPE_CHECKPOINT)");
	assert_int_equal(st_state_envelope(s), ST_ENVELOPE_EXPORT);
	assert_int_equal(st_state_dump(s, NULL, &after, &len, NULL), ST_OK);
	assert_string_equal(before, after);
	st_error_clear(&err);
	assert_int_equal(st_state_find_ex(s, "type=m:i:R", 4, &idx, &n, &err), ST_EINVAL);
	assert_string_equal(err.message,
			    "unknown bits 0x4 in flags 0x4 (the flags are 0 or ST_FIND_LIVE)");
	assert_null(idx);
	st_error_clear(&err);
	assert_int_equal(st_check_place(s, "p/dev", 9, &p, &err), ST_EINVAL);
	assert_string_equal(err.message, "unknown bits 0x8 in flags 0x9 (the flags are "
					 "ST_PLACE_ALL and ST_PLACE_EXPORTS)");
	assert_int_equal(p.count, 0);
	st_error_clear(&err);
	assert_int_equal(st_resource_text(r, 2, NULL, &text, &len, &err), ST_EINVAL);
	assert_non_null(strstr(err.message, "unknown bits 0x2 in flags 0x2"));
	assert_null(text);
	st_error_clear(&err);
	assert_int_equal(st_resource_json(r, 3, NULL, &j, &err), ST_EINVAL);
	assert_non_null(strstr(err.message, "unknown bits 0x2 in flags 0x3"));
	assert_null(j);
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_edit_delete(e, (st_handle[]){tu_handle(e, 1)}, 1, 4, &n, &err),
			 ST_EINVAL);
	assert_non_null(strstr(err.message, "unknown bits 0x4 in flags 0x4"));
	assert_int_equal(st_edit_commit(e, NULL, NULL, NULL), ST_OK);
	st_edit_free(e);
	assert_int_equal(json_array_size(st_state_resources(s, 0)), 3);
	assert_int_equal(st_store_open(&store, dir, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_store_list(store, "", 2, &ents, &n, &err), ST_EINVAL);
	assert_non_null(strstr(err.message, "unknown bits 0x2 in flags 0x2"));
	st_error_clear(&err);
	assert_int_equal(st_journal_recover_key(store, "k", NULL, 0, 4, NULL, &err), ST_EINVAL);
	assert_non_null(strstr(err.message, "ST_JOURNAL_CLEAN_STAGED"));
	assert_int_equal(st_backend_open(&b, dir, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_backend_recover(b, "p/dev", NULL, 0, 4, NULL, &err), ST_EINVAL);
	assert_non_null(strstr(err.message, "ST_JOURNAL_CLEAN_STAGED"));
	assert_int_equal(st_problems_add(&p, (st_severity)7, "r", "", NULL, "x"), ST_EINVAL);
	assert_int_equal(p.count, 0);
	st_backend_free(b);
	st_store_free(store);
	free(before);
	free(after);
	st_state_free(s);
	tu_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_touch_drops_derived_data),
		cmocka_unit_test(test_touch_rebinds_envelope),
		cmocka_unit_test(test_move_import_err_null),
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_no_environment_hooks_instead),
		cmocka_unit_test(test_locks_hook),
		cmocka_unit_test(test_threads_options),
		cmocka_unit_test(test_options_versions),
		cmocka_unit_test(test_null_handles_abort),
		cmocka_unit_test(test_null_args_generated),
		cmocka_unit_test(test_bad_enums_and_flags),
		cmocka_unit_test(test_err_null_everywhere),
		cmocka_unit_test(test_buf_take_terminated),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
