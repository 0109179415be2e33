/* The SQLite index through the library: a backend keeps one stack's rows current from an
 * already-loaded state (st_index_update_state), then asks the same questions as the CLI. */
#include "testutil.h"
#include "index/ix.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct rows {
	size_t n;
	char urns[32][256];
};

static int collect(void *ctx, int ncols, const char *const *names, const char *const *values)
{
	struct rows *r = ctx;
	int i;
	for (i = 0; i < ncols; i++)
		if (strcmp(names[i], "urn") == 0 && r->n < 32)
			snprintf(r->urns[r->n++], sizeof r->urns[0], "%s", values[i] ? values[i] : "");
	return 0;
}

static size_t count_sql(st_index *ix, const char *sql)
{
	struct rows r = {0};
	assert_int_equal(st_index_sql(ix, sql, collect, &r, NULL), ST_OK);
	return r.n;
}


static void test_update_state_and_query(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), *db = NULL;
	st_index *ix = NULL;
	st_error err;
	struct rows r = {0};
	st_index_query q = ST_INDEX_QUERY_INIT;
	assert_true(asprintf(&db, "%s/ix.sqlite", dir) > 0);
	st_error_clear(&err);
	assert_int_equal(st_index_open(&ix, db, 0, NULL, &err), ST_OK);

	st_state *s = tu_load("edit/base.json");
	assert_int_equal(st_index_update_state(ix, "organization/shop/dev", NULL, s, &err), ST_OK);

	q.type = "aws:ec2/instance:Instance";
	assert_int_equal(st_index_query_run(ix, &q, collect, &r, &err), ST_OK);
	assert_int_equal(r.n, 2); /* the live server and its delete: true copy */
	assert_string_equal(r.urns[0], "urn:pulumi:dev::shop::my:index:App$aws:ec2/instance:Instance::server");

	q = (st_index_query)ST_INDEX_QUERY_INIT;
	memset(&r, 0, sizeof r);
	q.protected_only = 1;
	assert_int_equal(st_index_query_run(ix, &q, collect, &r, &err), ST_OK);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.urns[0], "urn:pulumi:dev::shop::my:index:App$my:index:Web$aws:s3/bucket:Bucket::assets");

	q = (st_index_query)ST_INDEX_QUERY_INIT;
	memset(&r, 0, sizeof r);
	q.dependents_of = "urn:pulumi:dev::shop::my:index:App$my:index:Web$aws:s3/bucket:Bucket::assets";
	assert_int_equal(st_index_query_run(ix, &q, collect, &r, &err), ST_OK);
	assert_int_equal(r.n, 3); /* the policy, and the server (twice) through it */

	/* the state changes (a backend saved it): its rows are replaced, not added to */
	size_t idx[1] = {12}, deleted = 0; /* the audit log group, nothing depends on it */
	st_edit *e = NULL;
	assert_int_equal(st_edit_begin(&e, s, NULL, &err), ST_OK);
	assert_int_equal(st_edit_delete(e, (st_handle[]){tu_handle(e, idx[0])}, 1, 0, &deleted, &err), ST_OK);
	assert_int_equal(deleted, 1);
	assert_int_equal(st_edit_commit(e, NULL, NULL, &err), ST_OK);
	st_edit_free(e);
	assert_int_equal(st_index_update_state(ix, "organization/shop/dev", NULL, s, &err), ST_OK);
	assert_int_equal(count_sql(ix, "SELECT urn FROM resources"), 12);
	assert_int_equal(count_sql(ix, "SELECT urn FROM resources WHERE urn LIKE '%::audit'"), 0);
	assert_int_equal(count_sql(ix, "SELECT urn FROM stacks s JOIN resources r ON r.stack_id = s.id "
				       "WHERE s.qname = 'organization/shop/dev'"), 12);

	/* a write through st_index_sql is refused and changes nothing */
	struct rows none = {0};
	assert_int_equal(st_index_sql(ix, "DELETE FROM resources", collect, &none, &err), ST_EREFUSED);
	assert_int_equal(count_sql(ix, "SELECT urn FROM resources"), 12);

	st_state_free(s);
	st_index_close(ix);

	/* reopened read-only: the rows are there */
	assert_int_equal(st_index_open(&ix, db, 1, NULL, &err), ST_OK);
	assert_int_equal(count_sql(ix, "SELECT urn FROM resources"), 12);
	st_index_close(ix);
	free(db);
	tu_rmdir(dir);
}

/* The rows of an index, one line each, in a fixed order. */
static int dump_row(void *ctx, int ncols, const char *const *names, const char *const *values)
{
	st_buf *b = ctx;
	(void)names;
	for (int i = 0; i < ncols; i++)
		st_buf_printf(b, "%s%s", i ? "," : "", values[i] ? values[i] : "-");
	st_buf_addc(b, '\n');
	return 0;
}

/* Indexes the backend `dir` into a new index `db` with `threads` (st_set_threads); its rows. */
static char *index_with(const char *dir, const char *db, int threads, st_index_stats *stats,
			size_t *nfail)
{
	st_backend *b = NULL;
	st_index *ix = NULL;
	st_problems fails = {0};
	st_error err;
	st_buf out;

	st_buf_init(&out);
	st_error_clear(&err);
	assert_int_equal(st_set_threads(threads, &err), ST_OK);
	assert_int_equal(st_backend_open(&b, dir, &err), ST_OK);
	assert_int_equal(st_index_open(&ix, db, 0, NULL, &err), ST_OK);
	assert_int_equal(st_index_update_backend(ix, b, NULL, NULL, stats, &fails, &err), ST_OK);
	*nfail = fails.count;
	for (size_t i = 0; i < fails.count; i++)
		st_buf_printf(&out, "failed: %s\n", fails.items[i].message);
	st_problems_clear(&fails);
	assert_int_equal(st_index_sql(ix, "SELECT s.qname, r.position, r.urn, r.type, r.id, r.parent, "
				      "r.provider FROM resources r JOIN stacks s ON s.id = r.stack_id "
				      "ORDER BY s.qname, r.position", dump_row, &out, &err), ST_OK);
	assert_int_equal(st_index_sql(ix, "SELECT type, id, n FROM id_counts ORDER BY type, id",
				      dump_row, &out, &err), ST_OK);
	st_index_close(ix);
	st_backend_free(b);
	assert_int_equal(st_set_threads(0, &err), ST_OK);
	return st_buf_take(&out, NULL);
}


/* A DIY backend in dir: stacks s0..s(n-1) of project p, each a provider and a bucket whose ID
 * repeats every third stack; stack `bad` cannot be read (-1: none). */
static void make_backend(const char *dir, int n, int bad)
{
	char path[512];
	snprintf(path, sizeof path, "%s/.pulumi/stacks/p", dir);
	assert_int_equal(st_mkdir_p(path, 0755, NULL), ST_OK);
	snprintf(path, sizeof path, "%s/.pulumi/meta.yaml", dir);
	tu_write(path, "version: 1\n", 11);
	for (int i = 0; i < n; i++) {
		char json[1024];
		int len = snprintf(json, sizeof json,
			"{\"version\":3,\"checkpoint\":{\"stack\":\"organization/p/s%d\",\"latest\":{"
			"\"manifest\":{\"time\":\"2024-01-01T00:00:00Z\",\"magic\":\"\",\"version\":"
			"\"v3.0.0\"},\"resources\":[{\"urn\":\"urn:pulumi:s%d::p::pulumi:providers:aws::"
			"default\",\"custom\":true,\"id\":\"prov-%d\",\"type\":\"pulumi:providers:aws\"},"
			"{\"urn\":\"urn:pulumi:s%d::p::aws:s3/bucket:Bucket::b\",\"custom\":true,\"id\":"
			"\"bucket-%d\",\"type\":\"aws:s3/bucket:Bucket\",\"provider\":\"urn:pulumi:s%d::p::"
			"pulumi:providers:aws::default::prov-%d\"}]}}}",
			i, i, i, i, i % 3, i, i);
		snprintf(path, sizeof path, "%s/.pulumi/stacks/p/s%d.json", dir, i);
		/* one stack that cannot be read, among the others */
		if (i == bad)
			tu_write(path, "{\"version\":3,", 13);
		else
			tu_write(path, json, (size_t)len);
	}
}

/* The stacks st_index_stale names, "KIND QNAME" a line. */
static char *stale_list(st_index *ix, st_backend *b)
{
	st_index_stale_stack *st = NULL;
	size_t n = 0;
	st_buf out;
	st_buf_init(&out);
	assert_int_equal(st_index_stale(ix, b, &st, &n, NULL), ST_OK);
	for (size_t i = 0; i < n; i++)
		st_buf_printf(&out, "%c %s\n", st[i].kind, st[i].qname);
	st_index_stale_free(st, n);
	st_buf_addc(&out, '\0');
	return st_buf_take(&out, NULL);
}

/* Sets a file's modification time (seconds, nanoseconds). */
static void set_mtime(const char *path, time_t sec, long nsec)
{
	struct timespec ts[2] = {{0, UTIME_OMIT}, {sec, nsec}};
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* The staleness check compares each listed key's place with the index's in pieces
 * (st__ix_place_init: head + key + tail): the same answer as making the place
 * (st__ix_where_at) for keys of a local store named by an absolute path, by a relative one
 * with "." and ".." (from a current directory and from none) and of object stores. */
static void test_place_cut(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), abs1[600], abs2[600], old[4096];
	snprintf(abs1, sizeof abs1, "%s/b", dir);
	snprintf(abs2, sizeof abs2, "%s/b/", dir);
	const char *const urls[] = {abs1, abs2, "b/./c/../d", "./b", "..",
				    "s3://bkt/pre/fix?region=eu-west-1&anonymous=true",
				    "gs://bkt?anonymous=true"};
	assert_non_null(getcwd(old, sizeof old));
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(mkdir("b", 0700), 0);
	assert_int_equal(mkdir("b/c", 0700), 0);
	assert_int_equal(mkdir("b/d", 0700), 0);
	static const char *const keys[] = {".pulumi/stacks/p/s1.json", "a", "x/y.json.gz",
					   ".pulumi/stacks/s..json"};
	static const char *const cwds[] = {"/home/u/w", "/", NULL};
	for (size_t u = 0; u < sizeof(urls) / sizeof(urls[0]); u++) {
		st_store *st = NULL;
		st_error err;
		st_error_clear(&err);
		if (st_store_open(&st, urls[u], &err) != ST_OK)
			fail_msg("%s: %s", urls[u], err.message);
		for (size_t c = 0; c < sizeof(cwds) / sizeof(cwds[0]); c++) {
			ix_scope sc;
			assert_int_equal(st__ix_place_init(&sc, st, cwds[c]), ST_OK);
			for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
				char *w = st__ix_where_at(st, keys[k], cwds[c]);
				assert_non_null(w);
				if (!st__ix_place_is(&sc, w, keys[k]))
					fail_msg("%s from %s: %s is not %s + %s + %s", urls[u],
						 cwds[c] ? cwds[c] : "(none)", w, sc.head, keys[k],
						 sc.tail);
				/* another key's place is not this one's */
				assert_false(st__ix_place_is(&sc, w, "a/b"));
				free(w);
			}
			st__ix_scope_free(&sc);
		}
		st_store_free(st);
	}
	assert_int_equal(chdir(old), 0);
	free(dir);
}

/* st_index_stale looks at every stack's file, not at its directory: a file written in place
 * (same size, a new time; the directory's time as it was), a file replaced by another of the
 * same size and time (a new inode), a new stack and a removed one are each named, once,
 * sorted; nothing is named once the index is updated. */
static void test_stale(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), db[512], path[1024], tmp[1024], dpath[512], *got;
	st_backend *b = NULL;
	st_index *ix = NULL;
	st_index_stats stats;
	struct stat sd, sb;

	make_backend(dir, 5, -1);
	snprintf(db, sizeof db, "%s/ix.sqlite", dir);
	snprintf(dpath, sizeof dpath, "%s/.pulumi/stacks/p", dir);
	assert_int_equal(st_backend_open(&b, dir, NULL), ST_OK);
	assert_int_equal(st_index_open(&ix, db, 0, NULL, NULL), ST_OK);
	assert_int_equal(st_index_update_backend(ix, b, NULL, NULL, &stats, NULL, NULL), ST_OK);
	assert_int_equal(stats.parsed, 5);
	got = stale_list(ix, b);
	assert_string_equal(got, "");
	free(got);

	/* s1: its time changes, its size and its directory's time do not */
	assert_int_equal(stat(dpath, &sd), 0);
	snprintf(path, sizeof path, "%s/s1.json", dpath);
	set_mtime(path, 1000000000, 5);
	struct stat sd2;
	assert_int_equal(stat(dpath, &sd2), 0);
	assert_true(sd2.st_mtim.tv_sec == sd.st_mtim.tv_sec && sd2.st_mtim.tv_nsec == sd.st_mtim.tv_nsec);
	got = stale_list(ix, b);
	assert_string_equal(got, "~ organization/p/s1\n");
	free(got);
	/* s2: replaced by a copy with its size and time (only its inode differs) */
	snprintf(path, sizeof path, "%s/s2.json", dpath);
	snprintf(tmp, sizeof tmp, "%s/copy", dir);
	size_t len = 0;
	char *data = tu_read(path, &len);
	assert_int_equal(stat(path, &sb), 0);
	tu_write(tmp, data, len);
	free(data);
	set_mtime(tmp, sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec);
	assert_int_equal(rename(tmp, path), 0);
	/* s3 gone, s9 new */
	snprintf(path, sizeof path, "%s/s3.json", dpath);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof path, "%s/s4.json", dpath);
	snprintf(tmp, sizeof tmp, "%s/s9.json", dpath);
	data = tu_read(path, &len);
	tu_write(tmp, data, len);
	free(data);
	/* s4: a newer variant beside it is its object now: the stack changed (audit25b E19: it
	 * was "not in the index"); s0: an older one is not (each stack named once whatever its
	 * variants) */
	char gz4[1024], gz5[1024];
	snprintf(gz4, sizeof gz4, "%s/s4.json.gz", dpath);
	snprintf(gz5, sizeof gz5, "%s/s0.json.zst", dpath);
	tu_write(gz4, "x", 1);
	tu_write(gz5, "x", 1);
	set_mtime(gz5, 1000000000, 0);
	got = stale_list(ix, b);
	assert_string_equal(got, "~ organization/p/s1\n~ organization/p/s2\n- organization/p/s3\n"
				 "~ organization/p/s4\n+ organization/p/s9\n");
	free(got);
	assert_int_equal(unlink(gz4), 0);
	assert_int_equal(unlink(gz5), 0);

	/* brought up to date: nothing to name */
	assert_int_equal(st_index_update_backend(ix, b, NULL, NULL, &stats, NULL, NULL), ST_OK);
	assert_int_equal(stats.removed, 1);
	got = stale_list(ix, b);
	assert_string_equal(got, "");
	free(got);
	st_index_close(ix);
	st_backend_free(b);
	tu_rmdir(dir);
}

/* Removes the file ctx names once the backend is listed (a `pulumi stack rm` then). */
static void rm_after_listing(void *ctx, const char *op, int step)
{
	if (!strcmp(op, "index") && step == 3)
		assert_int_equal(unlink(ctx), 0);
}

/* A stack listed and then gone before it is read is taken as removed, with a note: not a
 * failure (audit28 D8). */
static void test_gone_after_listing(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), db[512], gone[512], *got;
	st_backend *b = NULL;
	st_index *ix = NULL;
	st_index_stats stats;
	st_problems failures = {0};
	st_changes notes = {0};
	st_hooks h = ST_HOOKS_INIT;

	make_backend(dir, 3, -1);
	snprintf(db, sizeof db, "%s/ix.sqlite", dir);
	snprintf(gone, sizeof gone, "%s/.pulumi/stacks/p/s1.json", dir);
	assert_int_equal(st_backend_open(&b, dir, NULL), ST_OK);
	assert_int_equal(st_index_open(&ix, db, 0, &notes, NULL), ST_OK);
	assert_int_equal(st_index_update_backend(ix, b, NULL, NULL, &stats, NULL, NULL), ST_OK);
	assert_int_equal(stats.parsed, 3);
	set_mtime(gone, 1000000000, 0); /* changed since: it is read */
	h.step = rm_after_listing;
	h.ctx = gone;
	assert_int_equal(st_set_hooks(&h, NULL), ST_OK);
	int rc = st_index_update_backend(ix, b, NULL, NULL, &stats, &failures, NULL);
	st_set_hooks(NULL, NULL);
	assert_int_equal(rc, ST_OK);
	assert_int_equal(failures.count, 0);
	assert_int_equal(stats.stacks, 3);
	assert_int_equal(stats.removed, 1);
	assert_int_equal(stats.failed, 0);
	assert_int_equal(stats.unchanged, 2);
	assert_int_equal(notes.count, 1);
	assert_string_equal(notes.lines[0], "organization/p/s1: gone from the backend since it was "
			    "listed (removed meanwhile): taken as removed");
	got = stale_list(ix, b);
	assert_string_equal(got, ""); /* the index is the backend */
	free(got);
	st_changes_clear(&notes);
	st_index_close(ix);
	st_backend_free(b);
	tu_rmdir(dir);
}

/* Ends the process at the 250th stack about to be committed (the first batch of 200 is). */
static void kill_at_250(void *ctx, const char *op, int step)
{
	static int n;
	(void)ctx;
	if (!strcmp(op, "index") && step == 1 && ++n == 250)
		_exit(9);
}

/* Stacks read and parsed on a second thread while the first writes: the same rows, counts and
 * failures as on one thread (the site's count proves the second thread ran). */
static void test_update_two_threads(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), db1[512], db2[512], *one, *two;
	st_index_stats s1, s2;
	size_t f1, f2;

	make_backend(dir, 20, 7);
	snprintf(db1, sizeof db1, "%s/one.sqlite", dir);
	snprintf(db1, sizeof db1, "%s/one.sqlite", dir);
	snprintf(db2, sizeof db2, "%s/two.sqlite", dir);
	unsigned long before = st__two_count(ST__T_INDEX);
	one = index_with(dir, db1, 1, &s1, &f1);
	assert_int_equal(st__two_count(ST__T_INDEX), before);
	two = index_with(dir, db2, 2, &s2, &f2);
	assert_int_equal(st__two_count(ST__T_INDEX), before + 1);
	assert_string_equal(one, two);
	assert_int_equal(s1.parsed, 19);
	assert_int_equal(s2.parsed, 19);
	assert_int_equal(s2.failed, 1);
	assert_int_equal(f1, 1);
	assert_int_equal(f2, 1);
	assert_non_null(strstr(two, "aws:s3/bucket:Bucket,bucket-0,7\n"));
	assert_non_null(strstr(two, "failed: organization/p/s7: "));
	free(one);
	free(two);
	tu_rmdir(dir);
}

/* The index's own SQL objects (tables, views, indexes), to compare two indexes' shapes. */
static char *objects(const char *db)
{
	st_index *ix = NULL;
	st_buf out;
	st_buf_init(&out);
	assert_int_equal(st_index_open(&ix, db, 1, NULL, NULL), ST_OK);
	assert_int_equal(st_index_sql(ix, "SELECT type, name FROM sqlite_master WHERE name NOT "
				      "LIKE 'sqlite_%' ORDER BY type, name", dump_row, &out, NULL),
			 ST_OK);
	assert_int_equal(st_index_sql(ix, "SELECT key FROM meta WHERE key = 'bulk'", dump_row, &out,
				      NULL), ST_OK);
	st_index_close(ix);
	return st_buf_take(&out, NULL);
}

/* A first build of 100 stacks or more (300 here) drops the secondary indexes and counts nothing while it
 * writes, and makes them at its end: the same rows, counts and indexes as a build stack by
 * stack (one stack first, then the others: no first build). */
static void test_first_build(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), db1[512], db2[512], path[512], *bulk, *inc, *o1, *o2;
	st_index_stats s1, s2;
	size_t f1, f2;

	make_backend(dir, 300, 280);
	snprintf(db1, sizeof db1, "%s/bulk.sqlite", dir);
	snprintf(db2, sizeof db2, "%s/inc.sqlite", dir);
	bulk = index_with(dir, db1, 0, &s1, &f1);
	/* the other: one stack alone first (two backends never share a stack's name) */
	st_backend *b1 = NULL;
	st_index *ix1 = NULL;
	assert_int_equal(st_backend_open(&b1, dir, NULL), ST_OK);
	assert_int_equal(st_index_open(&ix1, db2, 0, NULL, NULL), ST_OK);
	assert_int_equal(st_index_update_stack(ix1, b1, "organization/p/s0", &s2, NULL, NULL), ST_OK);
	assert_int_equal(s2.parsed, 1);
	st_index_close(ix1);
	st_backend_free(b1);
	inc = index_with(dir, db2, 0, &s2, &f2);
	assert_int_equal(s1.parsed, 299);
	assert_int_equal(s2.parsed, 298);
	assert_int_equal(s2.unchanged, 1); /* s0, indexed first */
	assert_int_equal(s2.removed, 0);
	assert_string_equal(bulk, inc);
	assert_non_null(strstr(bulk, "aws:s3/bucket:Bucket,bucket-0,100\n"));
	o1 = objects(db1);
	o2 = objects(db2);
	assert_string_equal(o1, o2);
	assert_non_null(strstr(o1, "index,resource_rows_type_id\n"));
	assert_null(strstr(o1, "bulk"));
	free(o1);
	free(o2);
	free(bulk);
	free(inc);

	/* a first build killed after its first batch: the next writable open makes its indexes
	 * and counts */
	snprintf(path, sizeof path, "%s/killed.sqlite", dir);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		st_hooks h = ST_HOOKS_INIT;
		h.step = kill_at_250;
		st_set_hooks(&h, NULL);
		st_backend *b = NULL;
		st_index *ix = NULL;
		if (st_backend_open(&b, dir, NULL) == ST_OK && st_index_open(&ix, path, 0, NULL, NULL) == ST_OK)
			st_index_update_backend(ix, b, NULL, NULL, NULL, NULL, NULL);
		_exit(3); /* not killed: the test fails */
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 9);
	o1 = objects(path);
	assert_non_null(strstr(o1, "bulk")); /* killed with the mark */
	assert_null(strstr(o1, "index,resource_rows_type_id\n"));
	free(o1);
	st_index *ix = NULL;
	assert_int_equal(st_index_open(&ix, path, 0, NULL, NULL), ST_OK);
	st_index_close(ix);
	o1 = objects(path);
	o2 = objects(db2);
	assert_string_equal(o1, o2); /* the indexes made, the mark gone */
	free(o1);
	free(o2);
	/* and the counts are those of the rows written */
	assert_int_equal(st_index_open(&ix, path, 1, NULL, NULL), ST_OK);
	assert_int_equal(count_sql(ix, "SELECT urn FROM resources WHERE stack_id IS NULL"), 0);
	struct rows r = {0};
	assert_int_equal(st_index_sql(ix, "SELECT (SELECT sum(n) FROM id_counts) = (SELECT count(*) "
				      "FROM resources WHERE custom <> 0 AND id IS NOT NULL AND id != '' "
				      "AND \"delete\" = 0) AND (SELECT count(*) FROM stacks) = 200 AS urn",
				      collect, &r, NULL), ST_OK);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.urns[0], "1");
	st_index_close(ix);
	tu_rmdir(dir);
}

/* The plan of a query as st_index_query_run builds it (SQLite), its steps a line each. */
static char *plan_of(st_index *ix, const st_index_query *q)
{
	st_buf sql, out;
	const char *binds[16];
	char *owned[16];
	int nb, no;

	st_buf_init(&sql);
	st_buf_init(&out);
	st_buf_adds(&sql, "EXPLAIN QUERY PLAN ");
	assert_int_equal(st__ix_query_sql(q, 0, &sql, binds, &nb, owned, &no), ST_OK);
	for (int i = 0; i < no; i++)
		free(owned[i]);
	/* (the placeholders unbound: NULL, which changes no plan here) */
	assert_int_equal(st_index_sql(ix, sql.data, dump_row, &out, NULL), ST_OK);
	st_buf_free(&sql);
	return st_buf_take(&out, NULL);
}

/* Schema 6: --protected (alone, or with a stack, a URN glob, a type, an ID) reads a protected
 * row's URN, parent and provider from the row, and on SQLite from the covering partial index
 * alone: no URN looked up in urns per row, no row of resource_rows read. */
static void test_protected_plan(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), db[512], *plan;
	st_index *ix = NULL;
	st_index_query q = ST_INDEX_QUERY_INIT;
	struct rows r = {0};

	snprintf(db, sizeof db, "%s/ix.sqlite", dir);
	assert_int_equal(st_index_open(&ix, db, 0, NULL, NULL), ST_OK);
	st_state *s = tu_load("edit/base.json");
	assert_int_equal(st_index_update_state(ix, "organization/shop/dev", NULL, s, NULL), ST_OK);
	assert_int_equal(st_index_update_state(ix, "organization/shop/prod", NULL, s, NULL), ST_OK);
	st_state_free(s);

	q.protected_only = 1;
	plan = plan_of(ix, &q);
	assert_non_null(strstr(plan, "USING COVERING INDEX resource_rows_protect"));
	assert_null(strstr(plan, " u "));
	assert_null(strstr(plan, "urns"));
	assert_null(strstr(plan, "PRIMARY KEY"));
	free(plan);
	q.stack = "shop/dev";
	plan = plan_of(ix, &q);
	assert_non_null(strstr(plan, "USING COVERING INDEX resource_rows_protect"));
	assert_null(strstr(plan, "PRIMARY KEY"));
	free(plan);
	q.stack = NULL;
	q.urn_glob = "*::assets";
	plan = plan_of(ix, &q);
	assert_non_null(strstr(plan, "USING COVERING INDEX resource_rows_protect"));
	assert_null(strstr(plan, "PRIMARY KEY"));
	free(plan);
	/* and its rows: the URN from the row */
	assert_int_equal(st_index_query_run(ix, &q, collect, &r, NULL), ST_OK);
	assert_int_equal(r.n, 2);
	assert_string_equal(r.urns[0], "urn:pulumi:dev::shop::my:index:App$my:index:Web$aws:s3/bucket:Bucket::assets");
	assert_string_equal(r.urns[1], r.urns[0]);
	/* a filter that needs the URNs' table: through urns, as before */
	q.urn_glob = NULL;
	q.pending_only = 1;
	plan = plan_of(ix, &q);
	assert_non_null(strstr(plan, "PRIMARY KEY"));
	free(plan);
	st_index_close(ix);
	tu_rmdir(dir);
}

/* An update that finds its index damaged before its first write (PRAGMA quick_check) starts
 * again on a new one: what the first pass reported is dropped, its counts too, so each stack
 * that cannot be read is reported once. */
static void test_rebuilt_failures(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), db[512], bad[512], good[512], good2[512];
	char *src = tu_fixture("edit/base.json");
	const char *one[] = {good}, *two[] = {bad, good2}; /* good2: new, so the update writes */
	size_t len = 0;
	char *data = tu_read(src, &len);
	st_problems failures = {0};
	st_index *ix = NULL;
	struct stat sb;
	int fd;

	snprintf(db, sizeof db, "%s/ix.sqlite", dir);
	snprintf(bad, sizeof bad, "%s/a-bad.json", dir);
	snprintf(good, sizeof good, "%s/b-good.json", dir);
	snprintf(good2, sizeof good2, "%s/c-good.json", dir);
	tu_write(good, data, len);
	tu_write(good2, data, len);
	tu_write(bad, "{\"version\": 3, \"deployment\": ", 29);
	assert_int_equal(st_index_open(&ix, db, 0, NULL, NULL), ST_OK);
	assert_int_equal(st_index_update_files(ix, one, 1, 0, NULL, NULL, NULL, NULL, NULL), ST_OK);
	st_index_close(ix);
	/* the last page damaged: an open reads the schema's page alone and finds nothing */
	assert_int_equal(stat(db, &sb), 0);
	assert_true(sb.st_size > 8192);
	memset(data, 0x5a, 4096);
	assert_true((fd = open(db, O_WRONLY)) >= 0);
	assert_int_equal(pwrite(fd, data, 4096, sb.st_size - 4096), 4096);
	close(fd);
	assert_int_equal(st_index_open(&ix, db, 0, NULL, NULL), ST_OK);
	assert_int_equal(st_index_update_files(ix, two, 2, 0, NULL, NULL, NULL, &failures, NULL),
			 ST_OK);
	st_index_close(ix);
	assert_int_equal(access(strcat(db, ".corrupt"), F_OK), 0); /* it was found and moved */
	assert_int_equal(failures.count, 1);
	assert_int_equal(failures.errors + failures.warnings, 1);
	st_problems_clear(&failures);
	free(data);
	free(src);
	tu_rmdir(dir);
}

static int flags_row(void *ctx, int ncols, const char *const *names, const char *const *v)
{
	int f[5];
	char text[IX_FLAGS_MAX];
	(void)names;
	assert_int_equal(ncols, 6);
	for (int i = 0; i < 5; i++)
		f[i] = atoi(v[i]);
	assert_int_equal(st__ix_flags_text(text, f), strlen(v[5]));
	assert_string_equal(text, v[5]);
	++*(int *)ctx;
	return 0;
}

/* The flags' text SQLite's queries make in C (st__ix_flags_text) is the text PostgreSQL's SQL
 * makes, for each of the 32 combinations (custom, protect, delete, taint, external). */
static void test_flags_text(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), db[512];
	st_index *ix = NULL;
	int n = 0;

	snprintf(db, sizeof db, "%s/ix.sqlite", dir);
	assert_int_equal(st_index_open(&ix, db, 0, NULL, NULL), ST_OK);
	assert_int_equal(
		st_index_sql(ix,
			     "WITH b(v) AS (VALUES (0), (1)) SELECT c.v, p.v, d.v, t.v, e.v, "
			     "trim((CASE WHEN c.v <> 0 THEN 'custom' ELSE 'component' END) || "
			     "(CASE WHEN p.v <> 0 THEN ',protect' ELSE '' END) || "
			     "(CASE WHEN d.v <> 0 THEN ',delete' ELSE '' END) || "
			     "(CASE WHEN t.v <> 0 THEN ',taint' ELSE '' END) || "
			     "(CASE WHEN e.v <> 0 THEN ',external' ELSE '' END)) "
			     "FROM b c, b p, b d, b t, b e",
			     flags_row, &n, NULL),
		ST_OK);
	assert_int_equal(n, 32);
	st_index_close(ix);
	tu_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_update_state_and_query),
		cmocka_unit_test(test_update_two_threads),
		cmocka_unit_test(test_first_build),
		cmocka_unit_test(test_place_cut),
		cmocka_unit_test(test_stale),
		cmocka_unit_test(test_gone_after_listing),
		cmocka_unit_test(test_protected_plan),
		cmocka_unit_test(test_flags_text),
		cmocka_unit_test(test_rebuilt_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
