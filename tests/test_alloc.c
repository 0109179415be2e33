/* Allocation failure: the Nth allocation fails (this program replaces malloc, calloc, realloc
 * and free for the whole process, so jansson's, zlib's and statetool's own allocations all
 * count), for every N through a load, a validation, an edit and a save. Each run must either
 * succeed with the right result or fail cleanly: an error code and message, no leak (every
 * allocation made during the run is freed), and the file on disk unchanged. */
#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__)
#define SKIP_ALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SKIP_ALLOC 1
#endif
#endif

#ifndef SKIP_ALLOC
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static long fail_at = -1; /* the allocation that fails (1-based); -1: none */
static long calls;        /* allocations since counting began */
static long live;         /* allocated minus freed since counting began */
static int counting;
static long trap;

static int should_fail(void)
{
	if (!counting)
		return 0;
	calls++;
	if (calls == fail_at && trap == fail_at)
		abort(); /* ALLOC_TRAP=N: stop where allocation N fails, for a debugger */
	return calls == fail_at;
}

void *malloc(size_t n)
{
	if (should_fail())
		return NULL;
	void *p = __libc_malloc(n);
	if (p && counting)
		live++;
	return p;
}

void *calloc(size_t a, size_t b)
{
	if (should_fail())
		return NULL;
	void *p = __libc_calloc(a, b);
	if (p && counting)
		live++;
	return p;
}

void *realloc(void *old, size_t n)
{
	if (!old)
		return malloc(n);
	if (n == 0) {
		free(old);
		return NULL;
	}
	if (should_fail())
		return NULL;
	return __libc_realloc(old, n);
}

void free(void *p)
{
	if (p && counting)
		live--;
	__libc_free(p);
}

static void begin(long n)
{
	calls = 0;
	live = 0;
	fail_at = n;
	counting = 1;
}

static void end(void)
{
	counting = 0;
	fail_at = -1;
}

static st_error err; /* the last operation's error */

typedef int (*op_fn)(const char *path, const char *out);

/* load, save elsewhere */
static int op_load_save(const char *path, const char *out)
{
	st_state *s = NULL;
	st_error_clear(&err);
	int rc = st_state_load_file(&s, path, NULL, &err);
	if (rc == ST_OK)
		rc = st_state_save(s, out, NULL, &err);
	st_state_free(s);
	return rc;
}

/* load, validate (integrity rules only: the schemas are op_validate_schema's) */
static int op_validate(const char *path, const char *out)
{
	(void)out;
	st_state *s = NULL;
	st_problems p = {0};
	st_error_clear(&err);
	int rc = st_state_load_file(&s, path, NULL, &err);
	if (rc == ST_OK) {
		st_validate_opts o = ST_VALIDATE_OPTS_INIT;
		o.skip_schema = 1;
		rc = st_validate(s, &o, &p, &err);
		if (rc == ST_OK && p.errors != 0)
			fail_msg("validation found %zu errors in a valid state (allocation %ld failed): %s", p.errors, fail_at, p.items[0].message);
	}
	st_problems_clear(&p);
	st_state_free(s);
	return rc;
}

/* load, validate with the built-in schemas (compiled once, outside the sweep) */
static st_schema *builtin;
static int op_validate_schema(const char *path, const char *out)
{
	(void)out;
	st_state *s = NULL;
	st_problems p = {0};
	st_error_clear(&err);
	int rc = st_state_load_file(&s, path, NULL, &err);
	if (rc == ST_OK) {
		st_validate_opts o = ST_VALIDATE_OPTS_INIT;
		o.schema = builtin;
		rc = st_validate(s, &o, &p, &err);
		if (rc == ST_OK && p.errors != 0)
			fail_msg("schema validation found %zu errors in a valid state (allocation %ld "
				 "failed): %s", p.errors, fail_at, p.items[0].message);
	}
	st_problems_clear(&p);
	st_state_free(s);
	return rc;
}

/* load, delete a resource and rename another in an edit session, commit, save in place */
static int op_edit(const char *path, const char *out)
{
	(void)out;
	st_state *s = NULL;
	st_edit *e = NULL;
	st_handle del[1], logs;
	size_t deleted = 0;
	st_error_clear(&err);
	int rc = st_state_load_file(&s, path, NULL, &err);
	if (rc == ST_OK)
		rc = st_edit_begin(&e, s, NULL, &err);
	if (rc == ST_OK)
		rc = st_edit_handle_at(e, 12, &del[0], &err);
	if (rc == ST_OK)
		rc = st_edit_handle_at(e, 11, &logs, &err);
	if (rc == ST_OK)
		rc = st_edit_delete(e, del, 1, 0, &deleted, &err);
	if (rc == ST_OK)
		rc = st_edit_rename(e, logs, "logs2", &err);
	if (rc == ST_OK)
		rc = st_edit_commit(e, NULL, NULL, &err);
	st_edit_free(e);
	if (rc == ST_OK)
		rc = st_state_save(s, NULL, NULL, &err);
	st_state_free(s);
	return rc;
}

static void sweep(const char *what, op_fn op, int in_place)
{
	const char *only = getenv("ALLOC_ONLY"); /* with ALLOC_TRAP: the sweep to debug */
	if (only && strcmp(only, what) != 0)
		return;
	char *dir = tu_tmpdir(), *src = NULL, *out = NULL, *want = NULL, *orig = NULL;
	size_t olen = 0, wlen = 0;
	long total, n, failed_runs = 0;
	assert_true(asprintf(&src, "%s/state.json", dir) > 0);
	assert_true(asprintf(&out, "%s/out.json", dir) > 0);
	char *fx = tu_fixture("edit/base.json");
	orig = tu_read(fx, &olen);
	free(fx);
	assert_non_null(orig);

	/* the reference run: how many allocations, and what a success writes */
	tu_write(src, orig, olen);
	begin(-1);
	assert_int_equal(op(src, out), ST_OK);
	end();
	total = calls;
	assert_int_equal(live, 0);
	want = tu_read(in_place ? src : out, &wlen);

	for (n = 1; n <= total; n++) {
		tu_write(src, orig, olen);
		unlink(out);
		char *bak = NULL;
		assert_true(asprintf(&bak, "%s.bak", src) > 0);
		unlink(bak);
		begin(n);
		int rc = op(src, out);
		end();
		if (rc != ST_OK && !err.message[0])
			fail_msg("%s: allocation %ld of %ld failed: error %d without a message", what,
				 n, total, rc);
		if (live != 0)
			fail_msg("%s: allocation %ld of %ld failed: %ld allocation(s) leaked (rc %d)",
				 what, n, total, live, rc);
		size_t len;
		char *now = tu_read(in_place ? src : out, &len);
		if (rc == ST_OK && want) {
			if (!now || len != wlen || memcmp(now, want, len) != 0)
				fail_msg("%s: allocation %ld failed, the call succeeded, but wrote "
					 "something else", what, n);
		} else if (rc != ST_OK) {
			failed_runs++;
			char *s = tu_read(src, &len);
			if (!s || len != olen || memcmp(s, orig, len) != 0)
				fail_msg("%s: allocation %ld failed and the state file changed", what, n);
			free(s);
			if (!in_place && access(out, F_OK) == 0)
				fail_msg("%s: allocation %ld failed and an output was left", what, n);
		}
		free(now);
		free(bak);
	}
	if (want == NULL && !in_place && strstr(what, "validate") == NULL)
		fail_msg("%s wrote nothing", what);
	printf("alloc: %s: %ld allocations, each failed once: %ld runs failed cleanly, %ld "
	       "succeeded anyway, no leak, no file changed\n",
	       what, total, failed_runs, total - failed_runs);
	free(want);
	free(orig);
	free(src);
	free(out);
	tu_rmdir(dir);
}

static void test_load_save(void **unused)
{
	(void)unused;
	sweep("load+save", op_load_save, 0);
}

static void test_validate(void **unused)
{
	(void)unused;
	sweep("load+validate", op_validate, 0);
}

static void test_validate_schema(void **unused)
{
	(void)unused;
	if (!builtin)
		assert_int_equal(st_schema_builtin(&builtin, NULL), ST_OK);
	sweep("load+schema-validate", op_validate_schema, 0);
}

static void test_edit(void **unused)
{
	(void)unused;
	sweep("load+edit+save", op_edit, 1);
}

/* ---- err may be NULL: the functions only an allocation failure makes fail ----
 * (tests/contract_err.c has a refused input for every other fallible function). Each is run
 * with allocation N failing, for N = 1, 2, ... until it succeeds, once with an error record and
 * once without: the same result both ways, the record holding that code and a message. */

static st_state *base_state(void)
{
	st_state *s = tu_load("edit/base.json");
	return s;
}

static const char v1_text[] = "{\"version\":1,\"deployment\":{\"manifest\":{\"time\":"
			      "\"2020-01-01T00:00:00Z\",\"magic\":\"\",\"version\":\"\"},"
			      "\"resources\":[{\"urn\":\"urn:pulumi:dev::p::m:i:R::a\","
			      "\"custom\":true,\"id\":\"a\",\"type\":\"m:i:R\",\"defaults\":{}}]}}";

static int o_json_dump(st_state *s, st_error *er)
{
	char *out = NULL;
	size_t len;
	int rc = st_json_dump(st_state_root(s), NULL, &out, &len, er);
	free(out);
	return rc;
}

static int o_schema_new(st_state *s, st_error *er)
{
	st_schema *sc = NULL;
	int rc = st_schema_new(&sc, er);
	(void)s;
	st_schema_free(sc);
	return rc;
}

static int o_schema_add(st_state *s, st_error *er)
{
	st_schema *sc = NULL;
	json_t *doc = json_object();
	int rc;
	(void)s;
	if (!doc)
		return ST_OK - 100; /* the case's own setup failed */
	rc = st_schema_new(&sc, NULL);
	if (rc == ST_OK)
		rc = st_schema_add(sc, doc, "urn:test", er);
	else
		rc = ST_OK - 100; /* the setup failed: try the next N */
	json_decref(doc);
	st_schema_free(sc);
	return rc;
}

static int o_state_new(st_state *s, st_error *er)
{
	st_state *n = NULL;
	int rc = st_state_new(&n, er);
	(void)s;
	st_state_free(n);
	return rc;
}

static int o_state_dump(st_state *s, st_error *er)
{
	char *out = NULL;
	size_t len;
	int rc = st_state_dump(s, NULL, &out, &len, er);
	free(out);
	return rc;
}

static int o_schema_builtin(st_state *s, st_error *er)
{
	st_schema *sc = NULL;
	int rc = st_schema_builtin(&sc, er);
	(void)s;
	st_schema_free(sc);
	return rc;
}

static int o_integrity_check(st_state *s, st_error *er)
{
	st_problems p = {0};
	int rc = st_integrity_check(s, &p, er);
	st_problems_clear(&p);
	return rc;
}

/* on a state of its own (version 1, migrated) */
static int o_state_migrate(st_state *unused, st_error *er)
{
	st_state *s = NULL;
	int rc;
	(void)unused;
	if (st_state_load_buffer(&s, v1_text, strlen(v1_text), "v1.json", NULL, NULL) != ST_OK)
		return ST_OK - 100;
	rc = st_state_migrate(s, NULL, er);
	st_state_free(s);
	return rc;
}

static int o_edit_begin(st_state *unused, st_error *er)
{
	st_state *s = NULL;
	st_edit *e = NULL;
	int rc;
	(void)unused;
	if (st_state_load_buffer(&s, v1_text, strlen(v1_text), "v1.json", NULL, NULL) != ST_OK)
		return ST_OK - 100;
	rc = st_edit_begin(&e, s, NULL, er);
	st_edit_free(e);
	st_state_free(s);
	return rc;
}

static int o_edit_pending_clear(st_state *s, st_error *er)
{
	st_edit *e = NULL;
	size_t n = 0;
	int rc;
	if (st_edit_begin(&e, s, NULL, NULL) != ST_OK)
		return ST_OK - 100;
	rc = st_edit_pending_clear(e, NULL, 0, &n, er);
	st_edit_rollback(e);
	st_edit_free(e);
	return rc;
}

static int o_secrets_new_passphrase(st_state *s, st_error *er)
{
	st_secrets *sec = NULL;
	int rc = st_secrets_new_passphrase(&sec, "pw", 2, er);
	(void)s;
	st_secrets_free(sec);
	return rc;
}

static int o_secrets_verify(st_state *s, st_error *er)
{
	st_secrets *sec = NULL;
	st_problems p = {0};
	json_t *sp = json_pack("{s:s}", "type", "b64");
	size_t n = 0;
	int rc;
	if (!sp || st_secrets_open(&sec, sp, NULL, 0, NULL) != ST_OK) {
		json_decref(sp);
		return ST_OK - 100;
	}
	rc = st_secrets_verify(s, sec, &p, &n, er);
	st_problems_clear(&p);
	st_secrets_free(sec);
	json_decref(sp);
	return rc;
}

static int o_import_check(st_state *s, st_error *er)
{
	json_t *doc = json_pack("{s:[{s:s,s:s,s:s}]}", "resources", "type", "m:i:R", "name", "x",
				"id", "x");
	st_problems p = {0};
	int rc;
	(void)s;
	if (!doc)
		return ST_OK - 100;
	rc = st_import_check(doc, "dev", "shop", NULL, &p, er);
	st_problems_clear(&p);
	json_decref(doc);
	return rc;
}

static char *backend_dir;
static int o_backend_list(st_state *s, st_error *er)
{
	st_backend *b = NULL;
	st_stack_info *infos = NULL;
	size_t n = 0;
	int rc;
	(void)s;
	if (st_backend_open(&b, backend_dir, NULL) != ST_OK)
		return ST_OK - 100;
	rc = st_backend_list(b, &infos, &n, er);
	st_stack_infos_free(infos, n);
	st_backend_free(b);
	return rc;
}

typedef struct oom_case {
	const char *name;
	int (*call)(st_state *s, st_error *er);
} oom_case;

#define OOM(fn) {"st_" #fn, o_##fn}
static const oom_case oom_cases[] = {
	OOM(json_dump), OOM(schema_new), OOM(schema_add), OOM(state_new), OOM(state_dump),
	OOM(schema_builtin), OOM(integrity_check), OOM(state_migrate), OOM(edit_begin),
	OOM(edit_pending_clear), OOM(secrets_new_passphrase), OOM(secrets_verify),
	OOM(backend_list), OOM(import_check),
};

static void test_err_null_oom(void **unused)
{
	(void)unused;
	st_state *s = base_state();
	char *dir = tu_tmpdir(), *p;

	/* a backend with one stack, for st_backend_list */
	backend_dir = dir;
	assert_true(asprintf(&p, "%s/.pulumi/stacks/shop", dir) > 0);
	assert_int_equal(st_mkdir_p(p, 0700, NULL), ST_OK);
	free(p);
	assert_true(asprintf(&p, "%s/.pulumi/meta.yaml", dir) > 0);
	tu_write(p, "version: 1\n", 11);
	free(p);
	assert_true(asprintf(&p, "%s/.pulumi/stacks/shop/dev.json", dir) > 0);
	tu_write(p, "{}", 2);
	free(p);
	for (size_t i = 0; i < sizeof(oom_cases) / sizeof(oom_cases[0]); i++) {
		long n, failures = 0;
		for (n = 1;; n++) {
			int with, without;
			st_error_clear(&err);
			begin(n);
			with = oom_cases[i].call(s, &err);
			end();
			begin(n);
			without = oom_cases[i].call(s, NULL);
			end();
			if (with == ST_OK - 100 || without == ST_OK - 100)
				continue; /* the allocation that failed was the case's own setup */
			if (with != without || (with != ST_OK && (err.code != with || !err.message[0])))
				fail_msg("%s: allocation %ld failed: %d with an error record (code %d, "
					 "'%s'), %d without", oom_cases[i].name, n, with, err.code,
					 err.message, without);
			if (with == ST_OK && calls < n)
				break; /* no allocation N: every failure point was seen */
			failures += with != ST_OK;
		}
		printf("alloc: err NULL: %s: %ld allocations, %ld failed the same both ways\n",
		       oom_cases[i].name, n - 1, failures);
	}
	st_state_free(s);
	tu_rmdir(dir);
}

int main(void)
{
	trap = getenv("ALLOC_TRAP") ? atol(getenv("ALLOC_TRAP")) : 0;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_save),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_validate_schema),
		cmocka_unit_test(test_edit),
		cmocka_unit_test(test_err_null_oom),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void)
{
	printf("test_alloc: skipped under AddressSanitizer (it replaces malloc itself)\n");
	return 77;
}
#endif
