/*
 * Go's decoding as Pulumi's loader meets it: the parsers' messages (time.Time, semver, property
 * paths, base64, config keys) and what a state load refuses, with Go's words and the JSON
 * Pointer of the value.
 */
#include "testutil.h"
#include <sodium.h>

static void expect(char *got, const char *want)
{
	if (!want) {
		if (got)
			fprintf(stderr, "unexpected error: %s\n", got);
		assert_null(got);
		return;
	}
	assert_non_null(got);
	if (strcmp(got, want))
		fprintf(stderr, "got:  %s\nwant: %s\n", got, want);
	assert_string_equal(got, want);
	free(got);
}

#define TIME(s) st__go_time_error(s, strlen(s))
#define L "\"2006-01-02T15:04:05Z07:00\""

static void test_time(void **state)
{
	(void)state;
	expect(TIME("2024-01-02T03:04:05Z"), NULL);
	expect(TIME("2024-01-02T03:04:05.123456789+01:00"), NULL);
	expect(TIME("2024-02-29T23:59:59-07:00"), NULL);
	/* time.Parse is lenient where RFC 3339 is not (Go's strict check is disabled) */
	expect(TIME("2024-01-02T3:04:05Z"), NULL);
	expect(TIME("2024-01-02T03:04:05,5Z"), NULL);
	expect(TIME("2024-01-02T03:04:05+24:00"), NULL);
	expect(TIME(""), "parsing time \"\" as " L ": cannot parse \"\" as \"2006\"");
	expect(TIME("yesterday"),
	       "parsing time \"yesterday\" as " L ": cannot parse \"yesterday\" as \"2006\"");
	expect(TIME("2024-13-01T00:00:00Z"), "parsing time \"2024-13-01T00:00:00Z\": month out of "
					     "range");
	expect(TIME("2023-02-29T00:00:00Z"), "parsing time \"2023-02-29T00:00:00Z\": day out of "
					     "range");
	expect(TIME("2024-01-02T25:00:00Z"), "parsing time \"2024-01-02T25:00:00Z\": hour out of "
					     "range");
	expect(TIME("2024-01-02T03:60:00Z"), "parsing time \"2024-01-02T03:60:00Z\": minute out of "
					     "range");
	expect(TIME("2024-01-02T03:04:05+25:00"),
	       "parsing time \"2024-01-02T03:04:05+25:00\": time zone offset hour out of range");
	expect(TIME("2024-01-02"),
	       "parsing time \"2024-01-02\" as " L ": cannot parse \"\" as \"T\"");
	expect(TIME("2024-01-02 03:04:05Z"),
	       "parsing time \"2024-01-02 03:04:05Z\" as " L ": cannot parse \" 03:04:05Z\" as "
	       "\"T\"");
	expect(TIME("2024-01-02T03:04:05"),
	       "parsing time \"2024-01-02T03:04:05\" as " L ": cannot parse \"\" as \"Z07:00\"");
	expect(TIME("2024-1-02T03:04:05Z"),
	       "parsing time \"2024-1-02T03:04:05Z\" as " L ": cannot parse \"1-02T03:04:05Z\" "
	       "as \"01\"");
	expect(TIME("2024-01-02T03:04:05Zjunk"),
	       "parsing time \"2024-01-02T03:04:05Zjunk\": extra text: \"junk\"");
	expect(TIME("2024-01-02T03:04:05Z\xc3\xa9"),
	       "parsing time \"2024-01-02T03:04:05Z\\xc3\\xa9\": extra text: \"\\xc3\\xa9\"");
}

#define SEMVER(s, t) st__go_semver_error(s, strlen(s), t)

static void test_semver(void **state)
{
	(void)state;
	expect(SEMVER("1.2.3", 0), NULL);
	expect(SEMVER("1.2.3-beta.1+build.5", 0), NULL);
	expect(SEMVER("", 0), "Version string empty");
	expect(SEMVER("1.2", 0), "No Major.Minor.Patch elements found");
	expect(SEMVER("v1.2.3", 0), "Invalid character(s) found in major number \"v1\"");
	expect(SEMVER("01.2.3", 0), "Major number must not contain leading zeroes \"01\"");
	expect(SEMVER("1.02.3", 0), "Minor number must not contain leading zeroes \"02\"");
	expect(SEMVER("1..3", 0), "strconv.ParseUint: parsing \"\": invalid syntax");
	expect(SEMVER("1.2.x", 0), "Invalid character(s) found in patch number \"x\"");
	expect(SEMVER("1.2.3-", 0), "Prerelease is empty");
	expect(SEMVER("1.2.3-01", 0),
	       "Numeric PreRelease version must not contain leading zeroes \"01\"");
	expect(SEMVER("1.2.3-a_b", 0), "Invalid character(s) found in prerelease \"a_b\"");
	expect(SEMVER("1.2.3+", 0), "Build meta data is empty");
	expect(SEMVER("1.2.3+a.b!", 0), "Invalid character(s) found in build meta data \"b!\"");
	expect(SEMVER("99999999999999999999.0.0", 0),
	       "strconv.ParseUint: parsing \"99999999999999999999\": value out of range");
	/* ParseTolerant: spaces, a "v" and a missing minor or patch */
	expect(SEMVER(" v3.152.0 ", 1), NULL);
	expect(SEMVER("v1.2", 1), NULL);
	expect(SEMVER("1", 1), NULL);
	expect(SEMVER("1.2-beta", 1), "Short version cannot contain PreRelease/Build meta data");
	expect(SEMVER("1.2.3.4", 1), "Invalid character(s) found in patch number \"3.4\"");
	expect(SEMVER("latest", 1), "Invalid character(s) found in major number \"latest\"");
}

#define PATH(s) st__go_property_path_error(s, strlen(s))

static void test_property_path(void **state)
{
	(void)state;
	expect(PATH(""), NULL);
	expect(PATH("a.b[0].c"), NULL);
	expect(PATH("[\"key with \\\" and .\"][1]"), NULL);
	expect(PATH("a[*].b"), NULL);
	expect(PATH("a[-1]"), NULL);
	expect(PATH("a.[0]"), NULL); /* tolerated, as from old providers */
	expect(PATH("foo-bar"), NULL);
	expect(PATH(".a"), "expected property path to start with a name or index");
	expect(PATH("a."), "expected property path to end with a name or index");
	expect(PATH("a["), "missing closing bracket in array index");
	expect(PATH("a[\"x"), "missing closing quote in property name");
	expect(PATH("a[\"x\""), "missing closing bracket in property access");
	expect(PATH("a[\"x\"b]"), "missing closing bracket in property access");
	expect(PATH("a[x]"), "invalid array index: strconv.ParseInt: parsing \"x\": invalid syntax");
	expect(PATH("a[]"), "invalid array index: strconv.ParseInt: parsing \"\": invalid syntax");
	expect(PATH("a[99999999999999999999]"), "invalid array index: strconv.ParseInt: parsing "
						"\"99999999999999999999\": value out of range");
}

#define B64(s) st__go_base64_error(s, strlen(s))

static void test_base64(void **state)
{
	(void)state;
	expect(B64(""), NULL);
	expect(B64("AA=="), NULL);
	expect(B64("QUJD"), NULL);
	expect(B64("AA\n=="), NULL);
	expect(B64("AAA"), "illegal base64 data at input byte 0");
	expect(B64("A"), "illegal base64 data at input byte 0");
	expect(B64("A==="), "illegal base64 data at input byte 1");
	expect(B64("AA=A"), "illegal base64 data at input byte 2");
	expect(B64("AA="), "illegal base64 data at input byte 3");
	expect(B64("AA==AA=="), "illegal base64 data at input byte 4");
	expect(B64("A@=="), "illegal base64 data at input byte 1");
	expect(B64("AAAA-A=="), "illegal base64 data at input byte 4");
}

/* The decoder agrees with the validator on every case, decodes what Go decodes, and is the
 * inverse of the encoder at every length, with new lines anywhere. */
static long long b64d(const char *s, char *out)
{
	return st__go_base64_decode(s, strlen(s), (unsigned char *)out);
}

static void test_base64_decode(void **state)
{
	static const char *const cases[] = {"", "AA==", "QUJD", "AA\n==", "AAA", "A", "A===",
					    "AA=A", "AA=", "AA==AA==", "A@==", "AAAA-A==",
					    "QUJD\r\nRA==\n", "QUJD\"", "QUJDRA=\n=", "QUJDRA=\n"};
	char out[64];
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *e = B64(cases[i]);
		assert_int_equal(b64d(cases[i], out) < 0, e != NULL);
		free(e);
	}
	assert_int_equal(b64d("QUJD\r\nRA==\n", out), 4);
	assert_memory_equal(out, "ABCD", 4);
	assert_int_equal(b64d("AP8QgA==", out), 4);
	assert_memory_equal(out, "\0\xff\x10\x80", 4);
	/* unused bits of the last quantum are not checked (StdEncoding is not Strict) */
	assert_int_equal(b64d("QR==", out), 1);
	assert_int_equal(out[0], 'A');
	assert_int_equal(b64d("QUK=", out), 2);
	assert_memory_equal(out, "AB", 2);
	for (size_t n = 0; n < 200; n++) {
		unsigned char bin[200], got[200 + 3];
		char enc[400], nl[800];
		size_t k = 0;
		randombytes_buf(bin, n);
		sodium_bin2base64(enc, sizeof(enc), bin, n, sodium_base64_VARIANT_ORIGINAL);
		assert_int_equal(st__go_base64_decode(enc, strlen(enc), got), (long long)n);
		assert_memory_equal(got, bin, n);
		for (size_t i = 0; enc[i]; i++) {
			if (i % 7 == (n % 7))
				nl[k++] = (n & 1) ? '\n' : '\r';
			nl[k++] = enc[i];
		}
		nl[k++] = '\n';
		assert_int_equal(st__go_base64_decode(nl, k, got), (long long)n);
		assert_memory_equal(got, bin, n);
		if (n % 3) { /* without its padding: refused, as Go refuses it */
			size_t m = strlen(enc);
			while (enc[m - 1] == '=')
				m--;
			assert_int_equal(st__go_base64_decode(enc, m, got), -1);
		}
	}
}

static void test_small_parsers(void **state)
{
	(void)state;
	unsigned long long v = 0;
	assert_true(st__go_config_key_ok("aws:region", 10));
	assert_true(st__go_config_key_ok("aws:config:region", 17));
	assert_false(st__go_config_key_ok("region", 6));
	assert_false(st__go_config_key_ok("a:b:c", 5));
	expect(st__go_parse_hex64_error("7FF8000000000001", 16, &v), NULL);
	assert_true(v == 0x7ff8000000000001ULL);
	expect(st__go_parse_hex64_error("7ff", 3, &v), NULL);
	assert_true(v == 0x7ff);
	expect(st__go_parse_hex64_error("", 0, &v), "strconv.ParseUint: parsing \"\": invalid "
						    "syntax");
	expect(st__go_parse_hex64_error("0x7ff", 5, &v),
	       "strconv.ParseUint: parsing \"0x7ff\": invalid syntax");
	expect(st__go_parse_hex64_error("1ffffffffffffffff", 17, &v),
	       "strconv.ParseUint: parsing \"1ffffffffffffffff\": value out of range");
	assert_true(st__go_int_literal("3", 1));
	assert_true(st__go_int_literal("-0", 2));
	assert_false(st__go_int_literal("3.0", 3));
	assert_false(st__go_int_literal("3e0", 3));
	assert_false(st__go_int_literal("9223372036854775808", 19));
	st_buf b;
	st_buf_init(&b);
	st__go_quote(&b, "a\"\\\n\x01\xff\xc3\xa9\xe2\x80\xa8", 11);
	assert_string_equal(b.data, "\"a\\\"\\\\\\n\\x01\\xff\xc3\xa9\\u2028\"");
	st_buf_free(&b);
}

/* A state that does not load: the code, Go's message and its pointer; the load problems hold
 * every reason. */
static void refused(const char *text, const char *msg, const char *ptr)
{
	st_state *s = NULL;
	st_error err;
	json_t *doc = NULL;
	st_problems lp = {0};
	st_error_clear(&err);
	assert_int_equal(st_state_load_buffer(&s, text, strlen(text), "t.json", NULL, &err),
			 ST_EFORMAT);
	if (strcmp(err.message, msg))
		fprintf(stderr, "got:  %s\nwant: %s\n", err.message, msg);
	assert_string_equal(err.message, msg);
	assert_string_equal(err.pointer, ptr);
	/* the same through the public reader and st_state_from_json, with the problems */
	assert_int_equal(st_json_parse(&doc, text, strlen(text), "t.json", NULL, NULL, &lp, NULL),
			 ST_OK);
	assert_int_equal(st_state_from_json(&s, doc, NULL, &lp, "t.json", NULL), ST_EFORMAT);
	int found = 0;
	for (size_t i = 0; i < lp.count; i++)
		if (!strcmp(lp.items[i].message, msg) && !strcmp(lp.items[i].pointer, ptr) &&
		    !strncmp(lp.items[i].rule, "decode/", 7))
			found = 1;
	assert_true(found);
	st_problems_clear(&lp);
}

#define MANIFEST "\"manifest\":{\"time\":\"2024-01-02T03:04:05Z\",\"magic\":\"\",\"version\":\"\"}"
#define RES(extra)                                                                           \
	"{\"version\":3,\"deployment\":{" MANIFEST ",\"resources\":[{\"urn\":\"urn:pulumi:s::p" \
	"::a:b:C::n\",\"custom\":true,\"id\":\"i\",\"type\":\"a:b:C\"" extra "}]}}"

static void test_load_refuses(void **state)
{
	(void)state;
	/* the envelope's version is a Go int (a checkpoint file's first decode: "place 1") */
	refused("{\"version\":3.0,\"checkpoint\":{\"stack\":\"s\"}}",
		"place 1: json: cannot unmarshal number 3.0 into Go struct field "
		"VersionedCheckpoint.version of type int",
		"/version");
	refused("{\"deployment\":null,\"Version\":3e0}",
		"json: cannot unmarshal number 3e0 into Go struct field UntypedDeployment.version "
		"of type int",
		"/Version");
	refused("{\"version\":\"3\",\"deployment\":null}",
		"json: cannot unmarshal string into Go struct field UntypedDeployment.version of "
		"type int",
		"/version");
	refused("{\"version\":3,\"features\":\"taint\",\"deployment\":null}",
		"json: cannot unmarshal string into Go struct field UntypedDeployment.features of "
		"type []string",
		"/features");
	refused("{\"version\":3,\"checkpoint\":\"x\"}",
		"json: cannot unmarshal string into Go value of type apitype.CheckpointV3",
		"/checkpoint");
	refused("{\"version\":3,\"checkpoint\":{\"stack\":1}}",
		"json: cannot unmarshal number into Go struct field CheckpointV3.stack of type "
		"tokens.QName",
		"/checkpoint/stack");
	refused("{\"version\":2,\"checkpoint\":{\"latest\":{\"resources\":{}}}}",
		"json: cannot unmarshal object into Go struct field DeploymentV2.latest.resources "
		"of type []apitype.ResourceV2",
		"/checkpoint/latest/resources");
	refused("{\"version\":3,\"checkpoint\":{\"config\":{\"region\":\"x\"}}}",
		"could not unmarshal map: could not parse region as a configuration key "
		"(configuration keys should be of the form `<namespace>:<name>`)",
		"/checkpoint/config/region");
	/* times */
	refused("{\"version\":3,\"deployment\":{\"manifest\":{\"time\":\"now\"}}}",
		"parsing time \"now\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"now\" as "
		"\"2006\"",
		"/deployment/manifest/time");
	refused(RES(",\"created\":\"2024-01-02\""),
		"parsing time \"2024-01-02\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"\" as "
		"\"T\"",
		"/deployment/resources/0/created");
	refused(RES(",\"Modified\":1700000000"), "Time.UnmarshalJSON: input is not a JSON string",
		"/deployment/resources/0/Modified");
	/* property paths, and ignoreChanges' strings */
	refused(RES(",\"hideDiff\":[\"a\",\".b\"]"),
		"expected property path to start with a name or index",
		"/deployment/resources/0/hideDiff/1");
	refused(RES(",\"hideDiff\":[[\"a\",0]]"),
		"json: cannot unmarshal array into Go struct field ResourceV3.resources.hideDiff of "
		"type resource.PropertyPath",
		"/deployment/resources/0/hideDiff/0");
	refused(RES(",\"ignoreChanges\":[\"a\",5]"),
		"json: cannot unmarshal number into Go struct field ResourceV3.resources."
		"ignoreChanges of type string",
		"/deployment/resources/0/ignoreChanges/1");
	/* other types */
	refused(RES(",\"custom\":\"yes\""),
		"json: cannot unmarshal string into Go struct field ResourceV3.resources.custom of "
		"type bool",
		"/deployment/resources/0/custom");
	refused(RES(",\"customTimeouts\":{\"create\":\"1m\"}"),
		"json: cannot unmarshal string into Go struct field CustomTimeouts.resources."
		"customTimeouts.create of type float64",
		"/deployment/resources/0/customTimeouts/create");
	refused(RES(",\"inputs\":[]"),
		"json: cannot unmarshal array into Go struct field ResourceV3.resources.inputs of "
		"type map[string]interface {}",
		"/deployment/resources/0/inputs");
	refused(RES(",\"propertyDependencies\":{\"a\":[1]}"),
		"json: cannot unmarshal number into Go struct field ResourceV3.resources."
		"propertyDependencies of type urn.URN",
		"/deployment/resources/0/propertyDependencies/a/0");
	refused("{\"version\":3,\"deployment\":{\"pending_operations\":[{\"resource\":{\"urn\":"
		"true},\"type\":\"creating\"}]}}",
		"json: cannot unmarshal bool into Go struct field ResourceV3.pending_operations."
		"resource.urn of type urn.URN",
		"/deployment/pending_operations/0/resource/urn");
	/* snippets and extensions: semver and base64 */
	refused("{\"version\":3,\"deployment\":{\"snippets\":[{\"uuid\":\"u\",\"descriptor\":{"
		"\"name\":\"aws\",\"version\":\"v6.0.0\"}}]}}",
		"Invalid character(s) found in major number \"v6\"",
		"/deployment/snippets/0/descriptor/version");
	refused("{\"version\":3,\"deployment\":{\"snippets\":[{\"descriptor\":{\"parameterization"
		"\":{\"name\":\"x\",\"version\":null}}}]}}",
		"Version string empty",
		"/deployment/snippets/0/descriptor/parameterization/version");
	refused("{\"version\":3,\"deployment\":{\"extensions\":{\"e\":{\"value\":\"AAA\"}}}}",
		"illegal base64 data at input byte 0", "/deployment/extensions/e/value");
	refused("{\"version\":3,\"deployment\":{\"extensions\":{\"e\":{\"value\":[1,256]}}}}",
		"json: cannot unmarshal number 256 into Go struct field Extension.extensions.value "
		"of type uint8",
		"/deployment/extensions/e/value/1");
	/* a later error that stops Go's decoder wins over an earlier kept one */
	refused(RES(",\"custom\":1,\"created\":\"x\""),
		"parsing time \"x\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"x\" as "
		"\"2006\"",
		"/deployment/resources/0/created");
}

/* What Go accepts is accepted. */
static void test_load_accepts(void **state)
{
	(void)state;
	static const char *const ok[] = {
		RES(",\"created\":null,\"hideDiff\":[null,\"a[0]\"],\"ignoreChanges\":[\"[x\"]"),
		RES(",\"resourceHooks\":{\"beforeSomethingNew\":[\"h\"]}"),
		RES(",\"extensionRef\":\"e\",\"replacementTrigger\":[1,{\"a\":null}]"),
		"{\"version\":1,\"checkpoint\":{\"stack\":\"s\",\"latest\":null}}",
		"{\"version\":3,\"deployment\":{" MANIFEST ",\"pending_operations\":[{\"resource\":"
		"{\"urn\":\"u\",\"type\":\"t\"},\"type\":\"importing\"}],\"extensions\":{\"e\":{"
		"\"value\":[1,2]}}}}",
		"{\"version\":3,\"deployment\":{\"manifest\":{\"time\":null,\"plugins\":[{\"name\":"
		"\"c\",\"type\":\"converter\"},{\"name\":\"t\",\"type\":\"tool\"}]}}}",
		NULL};
	for (int i = 0; ok[i]; i++) {
		st_state *s = NULL;
		st_error err;
		st_error_clear(&err);
		if (st_state_load_buffer(&s, ok[i], strlen(ok[i]), "t.json", NULL, &err) != ST_OK)
			fprintf(stderr, "%s: %s\n", ok[i], err.message);
		assert_non_null(s);
		st_state_free(s);
	}
}

/* An import file is decoded as `pulumi import --file` decodes it: its structs' keys in any
 * case (respelt), its maps as they are. */
static void test_import_file_keys(void **state)
{
	(void)state;
	st_problems p = {0};
	json_t *doc = NULL;
	const char *text =
		"{\"NameTable\":{\"App\":\"urn:pulumi:s::p::a:b:C::app\"},\"RESOURCES\":[{\"Type\":"
		"\"a:b:C\",\"Name\":\"n\",\"Id\":\"i\",\"Parent\":\"App\",\"PluginDownloadURL\":"
		"\"https://x\",\"Inputs\":{\"Key\":1},\"Parameterization\":{\"PluginName\":\"p\","
		"\"PluginVersion\":\"1.0.0\",\"Value\":\"AA==\"}},{\"type\":\"a:b:C\",\"name\":"
		"\"m\",\"id\":\"j\",\"EXTENSION\":{\"Name\":\"e\",\"Version\":\"1\",\"VALUE\":"
		"\"AA==\"}}]}";
	assert_int_equal(st_json_parse(&doc, text, strlen(text), "t", NULL, NULL, NULL, NULL), ST_OK);
	assert_int_equal(st_validate_import_file(doc, NULL, &p, NULL), ST_OK);
	for (size_t i = 0; i < p.count; i++)
		fprintf(stderr, "%s %s %s\n", p.items[i].rule, p.items[i].pointer, p.items[i].message);
	assert_int_equal(p.count, 0);
	json_t *r = json_array_get(json_object_get(doc, "resources"), 0);
	assert_non_null(json_object_get(json_object_get(doc, "nameTable"), "App")); /* a map */
	assert_string_equal(st_json_str(r, "pluginDownloadUrl"), "https://x");
	assert_non_null(json_object_get(json_object_get(r, "inputs"), "Key"));
	assert_string_equal(st_json_str(json_object_get(r, "parameterization"), "pluginName"), "p");
	r = json_array_get(json_object_get(doc, "resources"), 1);
	assert_string_equal(st_json_str(json_object_get(r, "extension"), "value"), "AA==");
	json_decref(doc);
}

/* A big state is decoded on two threads: the same problems in the same order, the same error,
 * the same renames. */
static void test_two_threads(void **state)
{
	(void)state;
	st_buf b;
	st_error err[2];
	st_problems lp[2] = {{0}, {0}};
	st_buf_init(&b);
	st_buf_adds(&b, "{\"version\":3,\"deployment\":{\"resources\":[");
	for (int i = 0; i < 9000; i++) {
		/* a kept error in the first half, one that stops Go in the second */
		st_buf_printf(&b, "%s{\"%s\":\"urn:pulumi:s::p::a:b:C::r%d\",\"custom\":%s,"
			      "\"type\":\"a:b:C\"%s}",
			      i ? "," : "", i % 7 ? "urn" : "URN", i, i == 2000 ? "1" : "true",
			      i == 6000 ? ",\"created\":\"x\"" : "");
	}
	st_buf_adds(&b, "]}}");
	for (int k = 0; k < 2; k++) {
		json_t *doc = NULL;
		st_state *s = NULL;
		unsigned long runs;
		st_set_threads(k ? 2 : 1, NULL);
		st_error_clear(&err[k]);
		assert_int_equal(st_json_parse(&doc, b.data, b.len, "t", NULL, NULL, &lp[k], NULL),
				 ST_OK);
		runs = st__two_count(ST__T_DECODE);
		assert_int_equal(st_state_from_json(&s, doc, NULL, &lp[k], "t", &err[k]),
				 ST_EFORMAT);
		/* the threaded path ran (k 1), and only then */
		assert_int_equal(st__two_count(ST__T_DECODE), runs + (unsigned long)k);
	}
	st_set_threads(0, NULL);
	assert_string_equal(err[0].message, "parsing time \"x\" as \"2006-01-02T15:04:05Z07:00\": "
					    "cannot parse \"x\" as \"2006\"");
	assert_string_equal(err[0].pointer, "/deployment/resources/6000/created");
	assert_string_equal(err[1].message, err[0].message);
	assert_string_equal(err[1].pointer, err[0].pointer);
	assert_int_equal(lp[0].count, 2);
	assert_int_equal(lp[1].count, lp[0].count);
	for (size_t i = 0; i < lp[0].count; i++) {
		assert_string_equal(lp[0].items[i].pointer, lp[1].items[i].pointer);
		assert_string_equal(lp[0].items[i].message, lp[1].items[i].message);
	}
	assert_string_equal(lp[0].items[0].pointer, "/deployment/resources/2000/custom");
	st_problems_clear(&lp[0]);
	st_problems_clear(&lp[1]);
	st_buf_free(&b);

	/* renames on both halves: the state written unchanged keeps its bytes */
	st_buf_init(&b);
	st_buf_adds(&b, "{\"version\":3,\"deployment\":{\"manifest\":{\"time\":"
		       "\"2024-01-02T03:04:05Z\",\"magic\":\"\",\"version\":\"\"},\"resources\":[");
	for (int i = 0; i < 9000; i++)
		st_buf_printf(&b, "%s{\"%s\":\"urn:pulumi:s::p::a:b:C::r%d\",\"custom\":true,"
			      "\"type\":\"a:b:C\"}",
			      i ? "," : "", i % 7 ? "urn" : "URN", i);
	st_buf_adds(&b, "],\"metadata\":{}}}");
	st_set_threads(2, NULL);
	st_state *s = NULL;
	char *out;
	size_t olen;
	st_style st;
	st_style_checkpoint(&st);
	unsigned long runs = st__two_count(ST__T_DECODE);
	assert_int_equal(st_state_load_buffer(&s, b.data, b.len, "t", NULL, NULL), ST_OK);
	st_set_threads(0, NULL);
	assert_int_equal(st__two_count(ST__T_DECODE), runs + 1); /* both halves renamed */
	assert_non_null(st_json_str(json_array_get(st_state_resources(s, 0), 7000), "urn"));
	assert_int_equal(st_state_dump(s, &st, &out, &olen, NULL), ST_OK);
	assert_int_equal(olen, b.len);
	assert_memory_equal(out, b.data, b.len);
	free(out);
	st_state_free(s);
	st_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time),         cmocka_unit_test(test_semver),
		cmocka_unit_test(test_property_path), cmocka_unit_test(test_base64),
		cmocka_unit_test(test_base64_decode),
		cmocka_unit_test(test_small_parsers), cmocka_unit_test(test_load_refuses),
		cmocka_unit_test(test_load_accepts), cmocka_unit_test(test_two_threads),
		cmocka_unit_test(test_import_file_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
