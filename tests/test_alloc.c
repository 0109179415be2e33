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

/* load, validate (integrity rules and the built-in schemas, compiled in the run) */
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
	size_t del[1] = {12}, deleted = 0;
	st_error_clear(&err);
	int rc = st_state_load_file(&s, path, NULL, &err);
	if (rc == ST_OK)
		rc = st_edit_begin(&e, s, NULL, &err);
	if (rc == ST_OK)
		rc = st_edit_delete(e, del, 1, 0, &deleted, &err);
	if (rc == ST_OK)
		rc = st_edit_rename(e, 11, "logs2", &err);
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

int main(void)
{
	trap = getenv("ALLOC_TRAP") ? atol(getenv("ALLOC_TRAP")) : 0;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_save),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_validate_schema),
		cmocka_unit_test(test_edit),
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
