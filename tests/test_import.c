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

/* The default provider created gets the package's values of the stack's configuration as
 * Pulumi's GetPackageConfig gives them: strings as yaml.v3 resolves the scalars and
 * encoding/json writes them (after LoadProjectStackBytes's round trip), mappings and lists as
 * their JSON; other packages' keys left out. A secure value without config_secrets is asked
 * for, nothing changed; a caller of version 1 (a struct that ends before the config) still
 * imports. */
static const char config_text[] =
	"config:\n"
	"  aws:a: 1_000\n  aws:b: 0o17\n  aws:c: 017\n  aws:d: 08\n"
	"  aws:e: 99999999999999999999\n  aws:f: 18446744073709551615\n  aws:g: -0.0\n"
	"  aws:h: 1e400\n  aws:i: .5\n  aws:j: 2001-12-14\n  aws:k: yes\n  aws:l: 1e21\n"
	"  aws:m: 1.5e-7\n  aws:n: [18446744073709551615, 0b+1]\n  aws:o: \"08\"\n"
	"  aws:p: |\n    line\n  aws:q: &A {y: 'a&b', x: 1}\n  aws:r: *A\n  aws:s: ~\n"
	"  aws:t: FALSE\n  gcp:project: p\n  shop:name: x\n";

static void test_config_default_provider(void **unused)
{
	(void)unused;
	static const char spec[] = "{\"resources\": [{\"type\": \"aws:s3/bucket:Bucket\", \"name\":"
				   " \"b\", \"id\": \"1\", \"version\": \"7.0.0\"}]}";
	st_state *s = tu_load("edit/base.json");
	json_t *doc = tu_json(spec);
	json_t *want = tu_json(
		"{\"a\": \"1000\", \"b\": \"15\", \"c\": \"15\", \"d\": \"8\", \"e\":"
		" \"100000000000000000000\", \"f\": \"18446744073709551615\", \"g\": \"0\", \"h\":"
		" \"1e400\", \"i\": \"0.5\", \"j\": \"2001-12-14\", \"k\": \"yes\", \"l\": \"1e+21\","
		" \"m\": \"1.5e-7\", \"n\": \"[18446744073709552000,1]\", \"o\": \"08\", \"p\":"
		" \"line\\n\", \"q\": \"{\\\"x\\\":1,\\\"y\\\":\\\"a\\\\u0026b\\\"}\", \"r\":"
		" \"{\\\"x\\\":1,\\\"y\\\":\\\"a\\\\u0026b\\\"}\", \"s\": \"\", \"t\": \"false\","
		" \"version\": \"7.0.0\", \"__internal\": {}}");
	st_import_opts o = ST_IMPORT_OPTS_INIT, *v1;
	st_import_report rep;
	st_edit *e;
	st_handle h;
	st_error err;
	char *before, *after;
	o.no_read = 1;
	o.config = config_text;
	o.config_len = strlen(config_text);
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_import(e, doc, &o, &rep, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_handle_of(e, "urn:pulumi:dev::shop::pulumi:providers:aws::"
					   "default_7_0_0", &h, NULL),
			 ST_OK);
	assert_true(json_equal(json_object_get(st_edit_resource(e, h), "inputs"), want));
	st_import_report_clear(&rep);
	st_edit_free(e);
	st_state_free(s);

	/* a secure value of the package, no key to open it: asked for, nothing changed */
	s = tu_load("pulumi/valid-deployment-v3.json");
	before = dump(s);
	o.config = "config:\n  aws:k:\n    secure: v1:AAAA\n";
	o.config_len = strlen(o.config);
	st_error_clear(&err);
	assert_int_equal(st_import(s, NULL, doc, &o, &rep, NULL, &err), ST_EPASSPHRASE);
	assert_int_equal(rep.needs_secrets, 1);
	assert_string_equal(err.message, "config 'aws:k' is a secure value: the config's secrets "
			    "provider must be opened");
	after = dump(s);
	assert_string_equal(before, after);
	free(after);
	free(before);
	st_import_report_clear(&rep);
	st_state_free(s);

	/* version 1: only the struct's first part is read (ASan sees a read past it) */
	s = tu_load("edit/base.json");
	v1 = malloc(offsetof(st_import_opts, config));
	o.version = 1;
	memcpy(v1, &o, offsetof(st_import_opts, config));
	assert_int_equal(st_import(s, NULL, doc, v1, &rep, NULL, NULL), ST_OK);
	assert_int_equal(rep.nadded, 2);
	st_import_report_clear(&rep);
	free(v1);
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
		cmocka_unit_test(test_config_default_provider),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
