/* The promises of lib/statetool.h, one test each: st_state_touch drops what the state derived
 * from its tree; every fallible function accepts err == NULL and returns the same code as with
 * an error record; a NULL handle aborts. */
#include "testutil.h"

#include <signal.h>
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
	assert_int_equal(st_edit_set_flag(e, &target, 1, "protect", 1, &changed, NULL), ST_OK);
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
	st_move_opts mo = {0};
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
	assert_string_equal(err.message, "cannot tell the source's stack and project; add "
			    "--source-stack PROJECT/STACK");
	st_move_report_clear(&mr);
	assert_int_equal(st_import(b, NULL, doc, NULL, &ir, NULL, NULL), ST_EINVAL);
	st_import_report_clear(&ir);
	st_error_clear(&err);
	assert_int_equal(st_import(b, NULL, doc, NULL, &ir, NULL, &err), ST_EINVAL);
	assert_string_equal(err.message, "cannot tell the destination's stack and project: it "
			    "names none; add --dest-stack PROJECT/STACK");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_touch_drops_derived_data),
		cmocka_unit_test(test_touch_rebinds_envelope),
		cmocka_unit_test(test_move_import_err_null),
		cmocka_unit_test(test_version),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
