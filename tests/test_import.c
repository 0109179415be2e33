/* Import as an operation of an edit session: a failure leaves the state (or the session) as
 * it was, byte for byte; secrets to encrypt are asked for, not guessed at. */
#include "testutil.h"

static char *dump(st_state *s)
{
	char *out;
	size_t len;
	assert_int_equal(st_state_dump(s, NULL, &out, &len, NULL), ST_OK);
	return out;
}

/* A reader that answers twice, then fails. */
static int reader(void *ctx, const json_t *req, json_t **resp, st_error *err)
{
	int *calls = ctx;
	(void)req;
	if (++*calls > 2)
		return st__err(err, ST_EUNSUPPORTED, "the reader could not read it");
	*resp = tu_json("{\"inputs\": {\"a\": 1}, \"outputs\": {\"a\": 1, \"b\": 2}}");
	return ST_OK;
}

/* New default providers, a root stack and two resources are added before the third spec's
 * read fails: all of it goes again. */
static const char three[] =
	"{\"resources\": [{\"type\": \"aws:s3/bucket:Bucket\", \"name\": \"one\", \"id\": \"1\","
	" \"version\": \"7.0.0\"}, {\"type\": \"x:y:Z\", \"name\": \"two\", \"id\": \"2\"},"
	" {\"type\": \"x:y:Z\", \"name\": \"three\", \"id\": \"3\"}]}";

static void test_failed_import_changes_nothing(void **unused)
{
	/* the v1 checkpoint is migrated by the session, then refused (Pulumi's integrity check
	 * fails on it): the migration is undone too */
	static const char *const fixtures[] = {"edit/base.json", "pulumi/checkpoint-v1.json",
					       "pulumi/valid-deployment-v3.json"};
	static const int want[] = {ST_EUNSUPPORTED, ST_EINTEGRITY, ST_EUNSUPPORTED};
	(void)unused;
	for (size_t f = 0; f < 3; f++) {
		st_state *s = tu_load(fixtures[f]);
		json_t *doc = tu_json(three);
		char *before = dump(s), *after;
		st_import_opts o = ST_IMPORT_OPTS_INIT;
		st_import_report rep;
		st_error err;
		int calls = 0;
		o.read = reader;
		o.read_ctx = &calls;
		o.dest_stack = "shop/dev";
		st_error_clear(&err);
		assert_int_equal(st_import(s, NULL, doc, &o, &rep, NULL, &err), want[f]);
		if (want[f] == ST_EUNSUPPORTED) {
			assert_string_equal(err.message, "the reader could not read it");
			assert_int_equal(calls, 3);
		}
		assert_int_equal(rep.nadded, 0);
		assert_int_equal(rep.added.count, 0);
		after = dump(s);
		assert_string_equal(before, after);
		free(after);
		free(before);
		st_import_report_clear(&rep);
		json_decref(doc);
		st_state_free(s);
	}
}

/* In a session: a failed import keeps what the previous operation did; a later one chains. */
static void test_import_in_a_session(void **unused)
{
	(void)unused;
	st_state *s = tu_load("edit/base.json");
	json_t *doc = tu_json(three);
	st_import_opts o = ST_IMPORT_OPTS_INIT;
	st_import_report rep;
	st_edit *e;
	st_handle h;
	st_diff d;
	char *mid, *after;
	int calls = 0;
	o.read = reader;
	o.read_ctx = &calls;
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_set_flag(e, (st_handle[]){tu_handle(e, 12)}, 1, "protect", 1, NULL,
					  NULL),
			 ST_OK);
	mid = dump(s);
	assert_int_equal(st_edit_import(e, doc, &o, &rep, NULL, NULL), ST_EUNSUPPORTED);
	after = dump(s);
	assert_string_equal(mid, after);
	free(after);
	st_import_report_clear(&rep);
	/* the same file without the failing spec */
	json_array_remove(json_object_get(doc, "resources"), 2);
	calls = 0;
	assert_int_equal(st_edit_import(e, doc, &o, &rep, NULL, NULL), ST_OK);
	assert_int_equal(rep.nadded, 4); /* two default providers, two resources */
	assert_int_equal(st_edit_handle_of(e, "urn:pulumi:dev::shop::x:y:Z::two", &h, NULL), ST_OK);
	assert_string_equal(st_json_str(st_edit_resource(e, h), "id"), "2");
	assert_int_equal(st_edit_commit(e, &d, NULL, NULL), ST_OK);
	assert_int_equal(d.count, 5); /* four added, one protected */
	st_diff_clear(&d);
	st_import_report_clear(&rep);
	st_edit_free(e);
	free(mid);
	json_decref(doc);
	st_state_free(s);
}

/* Plaintext secrets without a secrets manager (a spec's, or the providerInputs of a provider
 * to create): asked for, nothing changed. */
static void test_needs_secrets(void **unused)
{
	static const char *const docs[] = {
		"{\"resources\": [{\"type\": \"a:b:C\", \"name\": \"db\", \"id\": \"1\", \"outputs\":"
		" {\"pw\": {\"" ST_SIG_KEY "\": \"" ST_SIG_SECRET "\", \"plaintext\": \"\\\"x\\\"\"}}}]}",
		"{\"nameTable\": {\"p\": \"urn:pulumi:dev::proj::pulumi:providers:aws::p\"},"
		" \"providerInputs\": {\"p\": {\"key\": {\"" ST_SIG_KEY "\": \"" ST_SIG_SECRET "\","
		" \"plaintext\": \"\\\"x\\\"\"}}}, \"resources\": [{\"type\": \"aws:s3/bucket:Bucket\","
		" \"name\": \"b\", \"id\": \"1\", \"provider\": \"p\", \"outputs\": {}}]}"};
	(void)unused;
	for (size_t k = 0; k < 2; k++) {
		st_state *s = tu_load("pulumi/valid-deployment-v3.json");
		json_t *doc = tu_json(docs[k]);
		char *before = dump(s), *after;
		st_import_opts o = ST_IMPORT_OPTS_INIT;
		st_import_report rep;
		st_error err;
		st_error_clear(&err);
		assert_int_equal(st_import(s, NULL, doc, &o, &rep, NULL, &err), ST_EPASSPHRASE);
		assert_int_equal(rep.needs_secrets, 1);
		assert_string_equal(err.message, "the import holds secrets to encrypt: the "
				    "destination's secrets provider must be opened (opts->secrets)");
		after = dump(s);
		assert_string_equal(before, after);
		st_import_report_clear(&rep);
		free(before);
		free(after);
		json_decref(doc);
		st_state_free(s);
	}
}

/* A provider nameTable names and the state lacks is created (deploy/import.go), with the
 * providerInputs of its name and its first user's plugin: here a parameterized one, whose base
 * plugin goes under __internal (providers.SetProviderParameterization). */
static void test_named_provider_created(void **unused)
{
	(void)unused;
	st_state *s = tu_load("edit/base.json");
	json_t *doc = tu_json(
		"{\"nameTable\": {\"p\": \"urn:pulumi:dev::shop::pulumi:providers:tfx::p\"},"
		" \"providerInputs\": {\"p\": {\"token\": \"t\"}},"
		" \"resources\": [{\"type\": \"tfx:index:Thing\", \"name\": \"a\", \"id\": \"1\","
		" \"provider\": \"p\", \"version\": \"0.1.0\", \"parameterization\": {\"pluginName\":"
		" \"terraform-provider\", \"pluginVersion\": \"0.8.0\", \"value\": \"AA==\"}}]}");
	json_t *want = tu_json("{\"__internal\": {\"name\": \"terraform-provider\", \"version\":"
			       " \"0.8.0\", \"parameterization\": \"AA==\"}, \"token\": \"t\","
			       " \"version\": \"0.1.0\"}");
	st_import_opts o = ST_IMPORT_OPTS_INIT;
	st_import_report rep;
	st_edit *e;
	st_handle h;
	const json_t *p;
	o.no_read = 1;
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_import(e, doc, &o, &rep, NULL, NULL), ST_OK);
	assert_int_equal(rep.nadded, 2);
	assert_int_equal(st_edit_handle_of(e, "urn:pulumi:dev::shop::pulumi:providers:tfx::p", &h,
					   NULL),
			 ST_OK);
	p = st_edit_resource(e, h);
	assert_true(json_equal(json_object_get(p, "inputs"), want));
	json_object_del(want, "__internal");
	assert_true(json_equal(json_object_get(p, "outputs"), want));
	assert_null(json_object_get(p, "parent"));
	st_import_report_clear(&rep);
	st_edit_free(e);
	json_decref(want);
	json_decref(doc);
	st_state_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_failed_import_changes_nothing),
		cmocka_unit_test(test_import_in_a_session),
		cmocka_unit_test(test_needs_secrets),
		cmocka_unit_test(test_named_provider_created),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
