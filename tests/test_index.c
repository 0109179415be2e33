/* The SQLite index through the library: a backend keeps one stack's rows current from an
 * already-loaded state (st_index_update_state), then asks the same questions as the CLI. */
#include "testutil.h"

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

/* Stacks read and parsed on a second thread while the first writes: the same rows, counts and
 * failures as on one thread (the site's count proves the second thread ran). */
static void test_update_two_threads(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), path[512], db1[512], db2[512], *one, *two;
	st_index_stats s1, s2;
	size_t f1, f2;

	snprintf(path, sizeof path, "%s/.pulumi/stacks/p", dir);
	assert_int_equal(st_mkdir_p(path, 0755, NULL), ST_OK);
	snprintf(path, sizeof path, "%s/.pulumi/meta.yaml", dir);
	tu_write(path, "version: 1\n", 11);
	for (int i = 0; i < 20; i++) {
		char json[1024];
		int n = snprintf(json, sizeof json,
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
		if (i == 7)
			tu_write(path, "{\"version\":3,", 13);
		else
			tu_write(path, json, (size_t)n);
	}
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_update_state_and_query),
		cmocka_unit_test(test_update_two_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
