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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_update_state_and_query),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
