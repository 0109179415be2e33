/* Allocation failure: the Nth allocation fails (this program replaces malloc, calloc, realloc
 * and free for the whole process, so jansson's, zlib's, SQLite's and statetool's own
 * allocations all count), for every N through whole operations: load and save, validate (with
 * and without schemas), an edit (delete and rename), secrets encrypt, rekey and verify, an
 * index update, repair, move, import and show (st_resource_text, st_resource_json). Each run
 * must either succeed with the right result or fail cleanly: an error code and message, no leak
 * (every allocation made during the run is freed), the file on disk unchanged and, for the
 * in-memory operations, the states as they were. Long sweeps are sampled (see SWEEP_ALL): the
 * whole program takes about half a minute, most of it the index's syncs and the one passphrase
 * key derivation per err NULL run. */
#include "testutil.h"

#include <dlfcn.h>
#include <regex.h>

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

/* regcomp's own allocations are neither failed nor counted (nor regfree's frees): glibc (2.36)
 * leaks one of them when an allocation inside it fails (REG_ESPACE), which is not ours to fix.
 * So the sweeps never see REG_ESPACE (the library maps it to ST_ENOMEM). */
int regcomp(regex_t *re, const char *pattern, int cflags)
{
	static int (*real)(regex_t *, const char *, int);
	int was = counting, rc;
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "regcomp");
	counting = 0;
	rc = real(re, pattern, cflags);
	counting = was;
	return rc;
}

void regfree(regex_t *re)
{
	static void (*real)(regex_t *);
	int was = counting;
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "regfree");
	counting = 0;
	real(re);
	counting = was;
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

/* load, rename a parent whose children's URNs are rebuilt (edit/noncanon.json), save */
static int op_rename_children(const char *path, const char *out)
{
	(void)out;
	st_state *s = NULL;
	st_edit *e = NULL;
	st_handle app;
	st_error_clear(&err);
	int rc = st_state_load_file(&s, path, NULL, &err);
	if (rc == ST_OK)
		rc = st_edit_begin(&e, s, NULL, &err);
	if (rc == ST_OK)
		rc = st_edit_handle_at(e, 2, &app, &err);
	if (rc == ST_OK)
		rc = st_edit_rename(e, app, "main", &err);
	if (rc == ST_OK)
		rc = st_edit_commit(e, NULL, NULL, &err);
	st_edit_free(e);
	if (rc == ST_OK)
		rc = st_state_save(s, NULL, NULL, &err);
	st_state_free(s);
	return rc;
}

/* Sweeps longer than this are sampled: every N up to SWEEP_ALL, then evenly spaced N up to the
 * last allocation, about SWEEP_RUNS runs in all (the SQLite index makes thousands of
 * allocations, and each of its runs syncs the database: failing each of them once would take
 * minutes). A sweep may ask for fewer runs (the index: 600, each N up to 300). */
#define SWEEP_ALL 1500
#define SWEEP_RUNS 2500

/* Runs `op` on a file holding `text` with allocation N failing, for every N (or a sample). A
 * run that succeeds must leave what the reference run left (src when in_place, else out); one
 * that fails must say why, leak nothing, leave src as it was and write no output. */
static void sweep_text(const char *what, const char *text, size_t olen, op_fn op, int in_place,
		       long max_runs)
{
	long all = max_runs ? max_runs / 2 : SWEEP_ALL, most = max_runs ? max_runs : SWEEP_RUNS;
	const char *only = getenv("ALLOC_ONLY"); /* with ALLOC_TRAP: the sweep to debug */
	if (only && strcmp(only, what) != 0)
		return;
	char *dir = tu_tmpdir(), *src = NULL, *out = NULL, *want = NULL;
	const char *orig = text;
	size_t wlen = 0;
	long total, n, step = 1, runs = 0, failed_runs = 0;
	assert_true(asprintf(&src, "%s/state.json", dir) > 0);
	assert_true(asprintf(&out, "%s/out.json", dir) > 0);

	/* a first run, not counted, for what is made once per process (SQLite's caches) */
	tu_write(src, orig, olen);
	op(src, out);
	/* the reference run: how many allocations, and what a success writes */
	tu_write(src, orig, olen);
	begin(-1);
	if (op(src, out) != ST_OK)
		fail_msg("%s: the reference run failed: %s", what, err.message);
	end();
	total = calls;
	assert_int_equal(live, 0);
	want = tu_read(in_place ? src : out, &wlen);

	for (n = 1; n <= total; n += step) {
		if (n > all && total > most)
			step = (total - all) / (most - all) + 1;
		runs++;
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
	if (want == NULL && !in_place && strstr(what, "validate") == NULL &&
	    strstr(what, "verify") == NULL)
		fail_msg("%s wrote nothing", what);
	printf("alloc: %s: %ld allocations, %s %ld failed once: %ld runs failed cleanly, %ld "
	       "succeeded anyway, no leak, no file changed\n",
	       what, total, runs < total ? "a sample of" : "each of", runs, failed_runs,
	       runs - failed_runs);
	free(want);
	free(src);
	free(out);
	tu_rmdir(dir);
}

static void sweep_capped(const char *what, op_fn op, int in_place, long max_runs)
{
	char *fx = tu_fixture("edit/base.json"), *orig;
	size_t olen = 0;
	orig = tu_read(fx, &olen);
	free(fx);
	assert_non_null(orig);
	sweep_text(what, orig, olen, op, in_place, max_runs);
	free(orig);
}

static void sweep(const char *what, op_fn op, int in_place)
{
	sweep_capped(what, op, in_place, 0);
}

/* ---- secrets: encrypt, rekey, verify (the b64 provider and callbacks of the test's: the
 * passphrase provider's key derivation, a million PBKDF2 rounds, would make each run take a
 * third of a second; its AES-GCM is the same code whichever key) ---- */

/* The state's own secrets manager (b64). */
static int open_secrets(st_state *s, st_secrets **sec)
{
	json_t *sp = json_object_get(st_state_deployment(s), "secrets_providers");
	return st_secrets_open(sec, sp, NULL, 0, &err);
}

/* load, encrypt the plaintext secrets in a session, commit, save elsewhere */
static int op_secrets_encrypt(const char *path, const char *out)
{
	st_state *s = NULL;
	st_secrets *sec = NULL;
	st_edit *e = NULL;
	size_t n = 0;
	st_error_clear(&err);
	int rc = st_state_load_file(&s, path, NULL, &err);
	if (rc == ST_OK)
		rc = open_secrets(s, &sec);
	if (rc == ST_OK)
		rc = st_edit_begin(&e, s, NULL, &err);
	if (rc == ST_OK)
		rc = st_edit_secrets_encrypt(e, sec, &n, &err);
	if (rc == ST_OK)
		rc = st_edit_commit(e, NULL, NULL, &err);
	if (rc == ST_OK && n != 2)
		fail_msg("encrypt: %zu secrets encrypted (allocation %ld failed)", n, fail_at);
	st_edit_free(e);
	if (rc == ST_OK)
		rc = st_state_save(s, out, NULL, &err);
	st_secrets_free(sec);
	st_state_free(s);
	return rc;
}

static int rev_encrypt(void *ctx, const char *pt, size_t len, char **ct, st_error *e)
{
	(void)ctx;
	if (!(*ct = malloc(len + 5)))
		return st__err(e, ST_ENOMEM, "out of memory");
	memcpy(*ct, "rev:", 4);
	for (size_t i = 0; i < len; i++)
		(*ct)[4 + i] = pt[len - 1 - i];
	(*ct)[4 + len] = '\0';
	return ST_OK;
}

static int rev_decrypt(void *ctx, const char *ct, char **pt, size_t *len, st_error *e)
{
	(void)ctx;
	*len = strlen(ct) - 4;
	if (!(*pt = malloc(*len + 1)))
		return st__err(e, ST_ENOMEM, "out of memory");
	for (size_t i = 0; i < *len; i++)
		(*pt)[i] = ct[4 + *len - 1 - i];
	(*pt)[*len] = '\0';
	return ST_OK;
}

/* load, rekey every secret from b64 to the test's "rev" provider, commit, save elsewhere */
static int op_secrets_rekey(const char *path, const char *out)
{
	st_state *s = NULL;
	st_secrets *from = NULL, *to = NULL;
	st_secrets_callbacks cb = ST_SECRETS_CALLBACKS_INIT;
	st_edit *e = NULL;
	size_t n = 0;
	cb.encrypt = rev_encrypt;
	cb.decrypt = rev_decrypt;
	st_error_clear(&err);
	int rc = st_state_load_file(&s, path, NULL, &err);
	if (rc == ST_OK)
		rc = open_secrets(s, &from);
	if (rc == ST_OK)
		rc = st_secrets_custom(&to, "rev", &cb, &err);
	if (rc == ST_OK)
		rc = st_edit_begin(&e, s, NULL, &err);
	if (rc == ST_OK)
		rc = st_edit_secrets_rekey(e, from, to, &n, &err);
	if (rc == ST_OK)
		rc = st_edit_commit(e, NULL, NULL, &err);
	if (rc == ST_OK && n != 2)
		fail_msg("rekey: %zu secrets re-encrypted (allocation %ld failed)", n, fail_at);
	st_edit_free(e);
	if (rc == ST_OK)
		rc = st_state_save(s, out, NULL, &err);
	st_secrets_free(from);
	st_secrets_free(to);
	st_state_free(s);
	return rc;
}

/* load, decrypt every secret without changing anything */
static int op_secrets_verify(const char *path, const char *out)
{
	st_state *s = NULL;
	st_secrets *sec = NULL;
	st_problems p = {0};
	size_t n = 0;
	(void)out;
	st_error_clear(&err);
	int rc = st_state_load_file(&s, path, NULL, &err);
	if (rc == ST_OK)
		rc = open_secrets(s, &sec);
	if (rc == ST_OK)
		rc = st_secrets_verify(s, sec, &p, &n, &err);
	if (rc == ST_OK && (p.count != 0 || n != 2))
		fail_msg("verify: %zu problems for %zu secrets (allocation %ld failed): %s", p.count,
			 n, fail_at, p.count ? p.items[0].message : "");
	st_problems_clear(&p);
	st_secrets_free(sec);
	st_state_free(s);
	return rc;
}

/* A state with two plaintext secrets under the b64 provider, and (encrypted) its encryption. */
static char *secrets_text(int encrypted, size_t *len)
{
	static const char text[] =
		"{\"version\":3,\"deployment\":{\"manifest\":{\"time\":\"2024-01-02T03:04:05Z\","
		"\"magic\":\"\",\"version\":\"\"},\"secrets_providers\":{\"type\":\"b64\"},"
		"\"resources\":[{\"urn\":\"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev\","
		"\"custom\":false,\"type\":\"pulumi:pulumi:Stack\"},"
		"{\"urn\":\"urn:pulumi:dev::p::m:i:R::db\",\"custom\":true,\"id\":\"db-1\","
		"\"type\":\"m:i:R\",\"parent\":\"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev\","
		"\"inputs\":{\"user\":\"admin\",\"password\":{\"" ST_SIG_KEY "\":\"" ST_SIG_SECRET
		"\",\"plaintext\":\"\\\"hunter2\\\"\"}},\"outputs\":{\"user\":\"admin\","
		"\"tags\":[{\"k\":{\"" ST_SIG_KEY "\":\"" ST_SIG_SECRET "\",\"plaintext\":"
		"\"\\\"v\\\"\"}}]}}]}}";
	st_state *s = NULL;
	char *out = NULL;
	assert_int_equal(st_state_load_buffer(&s, text, sizeof(text) - 1, "s.json", NULL, NULL),
			 ST_OK);
	if (encrypted) {
		st_secrets *sec = NULL;
		st_edit *e = NULL;
		size_t n = 0;
		assert_int_equal(open_secrets(s, &sec), ST_OK);
		assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
		assert_int_equal(st_edit_secrets_encrypt(e, sec, &n, NULL), ST_OK);
		assert_int_equal(n, 2);
		assert_int_equal(st_edit_commit(e, NULL, NULL, NULL), ST_OK);
		st_edit_free(e);
		st_secrets_free(sec);
	}
	assert_int_equal(st_state_dump(s, NULL, &out, len, NULL), ST_OK);
	st_state_free(s);
	return out;
}

/* ---- the index: a fresh index updated from the file; on success its rows (but the times,
 * which change with each run) are what the sweep compares ---- */

static int dump_row(void *ctx, int ncols, const char *const *names, const char *const *values)
{
	FILE *f = ctx;
	for (int i = 0; i < ncols; i++)
		fprintf(f, "%s=%s%s", names[i], values[i] ? values[i] : "NULL",
			i + 1 < ncols ? "|" : "\n");
	return 0;
}

static void dump_index(const char *db, const char *out)
{
	static const char *const queries[] = {
		"SELECT qname, project, stack, path, size, sha256, version, envelope, resources "
		"FROM stacks ORDER BY qname",
		"SELECT * FROM resources ORDER BY stack_id, position",
		"SELECT * FROM edges ORDER BY 1, 2, 3, 4, 5",
		"SELECT * FROM providers ORDER BY 1, 2",
		"SELECT * FROM pending ORDER BY 1, 2, 3",
		"SELECT * FROM secrets ORDER BY 1, 2, 3",
	};
	st_index *ix = NULL;
	FILE *f = fopen(out, "w");
	assert_non_null(f);
	assert_int_equal(st_index_open(&ix, db, 1, NULL, NULL), ST_OK);
	for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++)
		assert_int_equal(st_index_sql(ix, queries[i], dump_row, f, NULL), ST_OK);
	st_index_close(ix);
	fclose(f);
}

static int op_index_update(const char *path, const char *out)
{
	char db[4200], journal[4300];
	st_index *ix = NULL;
	st_index_stats stats;
	st_problems failures = {0};
	const char *paths[1] = {path};
	snprintf(db, sizeof(db), "%s.sqlite", out);
	snprintf(journal, sizeof(journal), "%s-journal", db);
	unlink(db);
	unlink(journal);
	st_error_clear(&err);
	int rc = st_index_open(&ix, db, 0, NULL, &err);
	if (rc == ST_OK)
		rc = st_index_update_files(ix, paths, 1, 1, NULL, NULL, &stats, &failures, &err);
	if (rc == ST_OK && (failures.count || stats.parsed != 1))
		fail_msg("index: %zu failures, %zu parsed (allocation %ld failed): %s",
			 failures.count, stats.parsed, fail_at,
			 failures.count ? failures.items[0].message : "");
	st_problems_clear(&failures);
	st_index_close(ix);
	end(); /* what follows is the test's */
	if (rc == ST_OK)
		dump_index(db, out);
	return rc;
}

static void test_secrets_encrypt(void **unused)
{
	size_t len;
	char *text = secrets_text(0, &len);
	(void)unused;
	sweep_text("secrets-encrypt", text, len, op_secrets_encrypt, 0, 0);
	free(text);
}

static void test_secrets_rekey(void **unused)
{
	size_t len;
	char *text = secrets_text(1, &len);
	(void)unused;
	sweep_text("secrets-rekey", text, len, op_secrets_rekey, 0, 0);
	free(text);
}

static void test_secrets_verify(void **unused)
{
	size_t len;
	char *text = secrets_text(1, &len);
	(void)unused;
	sweep_text("secrets-verify", text, len, op_secrets_verify, 0, 0);
	free(text);
}

static void test_index_update(void **unused)
{
	(void)unused;
	sweep_capped("index-update", op_index_update, 0, 600);
}

/* ---- repair, move, import ---- */

/* load, repair in a session, commit, save in place */
static int op_repair(const char *path, const char *out)
{
	st_state *s = NULL;
	st_edit *e = NULL;
	(void)out;
	st_error_clear(&err);
	int rc = st_state_load_file(&s, path, NULL, &err);
	if (rc == ST_OK)
		rc = st_edit_begin(&e, s, NULL, &err);
	if (rc == ST_OK)
		rc = st_edit_repair(e, &err);
	if (rc == ST_OK)
		rc = st_edit_commit(e, NULL, NULL, &err);
	st_edit_free(e);
	if (rc == ST_OK)
		rc = st_state_save(s, NULL, NULL, &err);
	st_state_free(s);
	return rc;
}

/* The test's own work inside an operation, not counted: pause() ... resume(). What is made
 * while paused must be freed while paused, and what is made counted freed counted. */
static int was_counting;
static void pause_count(void)
{
	was_counting = counting;
	counting = 0;
}

static void resume_count(void)
{
	counting = was_counting;
}

/* The text of a state, or NULL (call while paused). */
static char *text_of(st_state *s)
{
	char *t = NULL;
	size_t len;
	return s && st_state_dump(s, NULL, &t, &len, NULL) == ST_OK ? t : NULL;
}

/* After a failed in-memory operation: the state must be as it was (the header's promise). */
static void same_as_before(const char *what, st_state *s, const char *before)
{
	char *now = text_of(s);
	if (!now || strcmp(now, before) != 0)
		fail_msg("%s: allocation %ld failed and the state in memory changed", what, fail_at);
	free(now);
}

static const char empty_dest[] = "{\"version\":3,\"deployment\":{\"manifest\":{\"time\":"
				 "\"2024-01-02T03:04:05Z\",\"magic\":\"\",\"version\":\"\"}}}";

/* load the source and an empty destination, move the Web component (its children come with
 * it, its provider is copied, edges to it are cut), in memory; on success both texts go to
 * out, on failure both must be as they were */
static int op_move(const char *path, const char *out)
{
	st_state *src = NULL, *dst = NULL;
	st_move_opts o = ST_MOVE_OPTS_INIT;
	st_move_report r;
	const char *pat = "urn:pulumi:dev::shop::my:index:App$my:index:Web::web";
	char *before_src = NULL, *before_dst = NULL;
	o.patterns = &pat;
	o.npatterns = 1;
	o.dest_stack = "shop/prod";
	memset(&r, 0, sizeof(r));
	st_error_clear(&err);
	int rc = st_state_load_file(&src, path, NULL, &err);
	if (rc == ST_OK)
		rc = st_state_load_buffer(&dst, empty_dest, sizeof(empty_dest) - 1, "dst.json",
					  NULL, &err);
	if (rc == ST_OK) {
		pause_count();
		before_src = text_of(src);
		before_dst = text_of(dst);
		resume_count();
		rc = st_move(src, NULL, dst, NULL, &o, &r, &err);
		st_move_report_clear(&r);
		pause_count();
		if (rc == ST_OK) {
			char *a = text_of(src), *b = text_of(dst);
			FILE *f = fopen(out, "w");
			if (!a || !b || !f)
				fail_msg("move: cannot write the result");
			fputs(a, f);
			fputc('\n', f);
			fputs(b, f);
			fclose(f);
			free(a);
			free(b);
		} else {
			same_as_before("move (source)", src, before_src);
			same_as_before("move (destination)", dst, before_dst);
		}
		free(before_src);
		free(before_dst);
		resume_count();
	}
	st_state_free(src);
	st_state_free(dst);
	return rc;
}

/* import two resources (one under the other, through nameTable; the existing aws provider
 * reused) in memory; on success the state, its resources' times removed, goes to out; on
 * failure it must be as it was */
static int op_import(const char *path, const char *out)
{
	static const char spec[] =
		"{\"nameTable\":{\"app\":\"urn:pulumi:dev::shop::my:index:App::app\"},"
		"\"resources\":[{\"type\":\"aws:s3/bucket:Bucket\",\"name\":\"imported\","
		"\"id\":\"imp-1\",\"version\":\"6.0.0\",\"parent\":\"app\"},"
		"{\"type\":\"aws:s3/bucketPolicy:BucketPolicy\",\"name\":\"imp-policy\","
		"\"id\":\"imp-2\",\"version\":\"6.0.0\",\"parent\":\"imported\","
		"\"inputs\":{\"bucket\":\"imp-1\"}}]}";
	st_state *s = NULL;
	st_import_opts o = ST_IMPORT_OPTS_INIT;
	st_import_report r;
	st_problems probs = {0};
	json_t *doc = NULL;
	char *before = NULL;
	o.no_read = 1;
	memset(&r, 0, sizeof(r));
	st_error_clear(&err);
	int rc = st_state_load_file(&s, path, NULL, &err);
	if (rc == ST_OK && !(doc = json_loads(spec, 0, NULL)))
		rc = st__err(&err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK) {
		pause_count();
		before = text_of(s);
		resume_count();
		rc = st_import(s, NULL, doc, &o, &r, &probs, &err);
		if (rc == ST_OK && probs.count)
			fail_msg("import: %zu problems (allocation %ld failed): %s", probs.count,
				 fail_at, probs.items[0].message);
		st_import_report_clear(&r);
		st_problems_clear(&probs);
		pause_count();
		if (rc == ST_OK) {
			json_t *x, *c;
			size_t i;
			char *t;
			/* the times of the new resources, in copies made while paused */
			c = json_deep_copy(st_state_root(s));
			json_array_foreach(json_object_get(json_object_get(c, "deployment"),
							   "resources"), i, x) {
				json_object_del(x, "created");
				json_object_del(x, "modified");
			}
			t = json_dumps(c, JSON_COMPACT | JSON_PRESERVE_ORDER);
			json_decref(c);
			FILE *f = fopen(out, "w");
			fputs(t, f);
			fclose(f);
			free(t);
		} else {
			same_as_before("import", s, before);
		}
		free(before);
		resume_count();
	}
	json_decref(doc);
	st_state_free(s);
	return rc;
}

static void test_repair(void **unused)
{
	char *fx = tu_fixture("validate/parent-order.json"), *text;
	size_t len = 0;
	(void)unused;
	text = tu_read(fx, &len);
	free(fx);
	assert_non_null(text);
	sweep_text("repair", text, len, op_repair, 1, 0);
	free(text);
}

static void test_move(void **unused)
{
	(void)unused;
	sweep("move", op_move, 0);
}

static void test_import(void **unused)
{
	(void)unused;
	sweep("import", op_import, 0);
}

/* An allocation the test itself made failed: the operation's error. */
static int oom_err(void)
{
	err.code = ST_ENOMEM;
	snprintf(err.message, sizeof(err.message), "out of memory");
	return ST_ENOMEM;
}

/* load, each resource as `pulumi state get` prints it (text and --output json, secrets shown
 * through the state's b64 manager), all of it written to out */
static int op_resource_show(const char *path, const char *out)
{
	st_state *s = NULL;
	st_secrets *sec = NULL;
	json_t *all = NULL, *r;
	char *text = NULL;
	size_t i, len = 0;
	st_error_clear(&err);
	int rc = st_state_load_file(&s, path, NULL, &err);
	if (rc == ST_OK)
		rc = open_secrets(s, &sec);
	if (rc == ST_OK && !(all = json_array()))
		rc = oom_err();
	json_array_foreach(rc == ST_OK ? st_state_resources(s, 0) : NULL, i, r) {
		json_t *doc = NULL;
		for (unsigned flags = 0; flags <= ST_TEXT_SHOW_SECRETS && rc == ST_OK; flags++) {
			if ((rc = st_resource_json(r, flags, sec, &doc, &err)) == ST_OK &&
			    json_array_append_new(all, doc))
				rc = oom_err();
			if (rc == ST_OK &&
			    (rc = st_resource_text(r, flags, sec, &text, &len, &err)) == ST_OK) {
				if (json_array_append_new(all, json_stringn(text, len)))
					rc = oom_err();
				free(text);
			}
		}
		if (rc != ST_OK)
			break;
	}
	text = NULL;
	if (rc == ST_OK)
		rc = st_json_dump(all, NULL, &text, &len, &err);
	if (rc == ST_OK)
		rc = st_file_write_atomic(out, text, len, NULL, &err);
	free(text);
	json_decref(all);
	st_secrets_free(sec);
	st_state_free(s);
	return rc;
}

static void test_resource_show(void **unused)
{
	(void)unused;
	char *fx = tu_fixture("show/rich.json"), *orig;
	size_t olen = 0;
	orig = tu_read(fx, &olen);
	free(fx);
	assert_non_null(orig);
	sweep_text("show (text and json)", orig, olen, op_resource_show, 0, 0);
	free(orig);
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
	char *fx = tu_fixture("edit/noncanon.json"), *text;
	size_t len = 0;
	text = tu_read(fx, &len);
	free(fx);
	assert_non_null(text);
	sweep_text("load+rename-children+save", text, len, op_rename_children, 1, 0);
	free(text);
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

static int o_json_dump_at(st_state *s, st_error *er)
{
	char *out = NULL;
	size_t len;
	int rc = st_json_dump_at(st_state_root(s), NULL, 2, &out, &len, er);
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

static int o_edit_pending_import(st_state *s, st_error *er)
{
	st_edit *e = NULL;
	const char *urn = "urn:pulumi:dev::shop::aws:sqs/queue:Queue::queue", *id = "q-1";
	int rc;
	if (st_edit_begin(&e, s, NULL, NULL) != ST_OK)
		return ST_OK - 100;
	rc = st_edit_pending_import(e, &urn, &id, 1, er);
	st_edit_rollback(e);
	st_edit_free(e);
	/* the sweep's state has no pending create: "did not correspond to a pending create" is
	 * the call's normal outcome (what the sweep compares is the failures before it) */
	if (rc == ST_ENOTFOUND && er) {
		st_error_clear(er);
		rc = ST_OK;
	}
	if (rc == ST_ENOTFOUND)
		rc = ST_OK;
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

static int o_state_autonames(st_state *s, st_error *er)
{
	json_t *m = NULL;
	int rc = st_state_autonames(s, &m, er);
	json_decref(m);
	return rc;
}

static char *index_file;
static int o_index_stale(st_state *s, st_error *er)
{
	st_backend *b = NULL;
	st_index *ix = NULL;
	st_index_stale_stack *st = NULL;
	size_t n = 0;
	int rc;
	(void)s;
	if (st_backend_open(&b, backend_dir, NULL) != ST_OK)
		return ST_OK - 100;
	if (st_index_open(&ix, index_file, 1, NULL, NULL) != ST_OK) {
		st_backend_free(b);
		return ST_OK - 100;
	}
	rc = st_index_stale(ix, b, &st, &n, er);
	st_index_stale_free(st, n);
	st_index_close(ix);
	st_backend_free(b);
	return rc;
}

static int o_state_compare(st_state *s, st_error *er)
{
	json_t *d = NULL;
	int rc = st_state_compare(s, s, &d, er);
	json_decref(d);
	return rc;
}

typedef struct oom_case {
	const char *name;
	int (*call)(st_state *s, st_error *er);
} oom_case;

#define OOM(fn) {"st_" #fn, o_##fn}
static const oom_case oom_cases[] = {
	OOM(json_dump), OOM(json_dump_at), OOM(schema_new), OOM(schema_add), OOM(state_new),
	OOM(state_dump),
	OOM(schema_builtin), OOM(integrity_check), OOM(state_migrate), OOM(edit_begin),
	OOM(edit_pending_clear), OOM(edit_pending_import), OOM(secrets_new_passphrase),
	OOM(secrets_verify), OOM(backend_list), OOM(import_check), OOM(state_autonames),
	OOM(index_stale), OOM(state_compare),
};

static void test_err_null_oom(void **unused)
{
	(void)unused;
	if (getenv("ALLOC_ONLY") && strcmp(getenv("ALLOC_ONLY"), "err-null"))
		return;
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
	/* an empty index, for st_index_stale (the stack is not in it) */
	{
		st_index *ix = NULL;
		assert_true(asprintf(&index_file, "%s/index.sqlite", dir) > 0);
		assert_int_equal(st_index_open(&ix, index_file, 0, NULL, NULL), ST_OK);
		st_index_close(ix);
	}
	for (size_t i = 0; i < sizeof(oom_cases) / sizeof(oom_cases[0]); i++) {
		long n, failures = 0, runs = 0, step = 1;
		/* beyond 200 (the schema compilers make thousands), every seventh N */
		for (n = 1;; n += step, step = n > 200 ? 7 : 1) {
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
			runs++;
		}
		printf("alloc: err NULL: %s: %ld allocations, %ld of them made to fail: %ld calls "
		       "failed, the same way with err NULL\n", oom_cases[i].name, calls, runs,
		       failures);
	}
	st_state_free(s);
	free(index_file);
	index_file = NULL;
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
		cmocka_unit_test(test_secrets_encrypt),
		cmocka_unit_test(test_secrets_rekey),
		cmocka_unit_test(test_secrets_verify),
		cmocka_unit_test(test_index_update),
		cmocka_unit_test(test_repair),
		cmocka_unit_test(test_move),
		cmocka_unit_test(test_import),
		cmocka_unit_test(test_resource_show),
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
