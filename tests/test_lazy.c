/* The lazy load (lib/json/skim.c, lib/state/lazy.c): spans, fallbacks, two threads, and the
 * lazy path against the full one on every fixture. */
#include "testutil.h"

#include <dirent.h>

static st_schema *schema;

static void same_problems(const st_problems *a, const st_problems *b, const char *what)
{
	if (a->count != b->count)
		fprintf(stderr, "%s: %zu problems lazily, %zu in full\n", what, a->count, b->count);
	assert_int_equal(a->count, b->count);
	assert_int_equal(a->errors, b->errors);
	for (size_t i = 0; i < a->count; i++) {
		assert_int_equal(a->items[i].severity, b->items[i].severity);
		assert_string_equal(a->items[i].rule, b->items[i].rule);
		assert_string_equal(a->items[i].pointer, b->items[i].pointer);
		assert_string_equal(a->items[i].message, b->items[i].message);
		if (a->items[i].urn || b->items[i].urn) {
			assert_non_null(a->items[i].urn);
			assert_non_null(b->items[i].urn);
			assert_string_equal(a->items[i].urn, b->items[i].urn);
		}
	}
}

/* What a skeleton keeps of a property map holding special values (the test's own reading of
 * skim.c's rule): the signature objects whole, the way to them, null for other elements. */
static int expect_pruned(json_t *v)
{
	int keep = 0;
	if (json_is_object(v)) {
		const char *k;
		json_t *m;
		void *tmp;
		if (json_object_get(v, ST_SIG_KEY))
			return 1;
		json_object_foreach_safe(v, tmp, k, m) {
			if (expect_pruned(m))
				keep = 1;
			else
				json_object_del(v, k);
		}
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++) {
			if (expect_pruned(json_array_get(v, i)))
				keep = 1;
			else
				json_array_set_new(v, i, json_null());
		}
	}
	return keep;
}

static long pruned_maps; /* skeletons with pruned maps seen */

/* A skeleton's inputs/outputs: absent, or (special values in them) the full map pruned. */
static void check_skeleton_maps(json_t *lr, json_t *fr)
{
	static const char *const maps[] = {"inputs", "outputs"};
	for (int m = 0; m < 2; m++) {
		json_t *lv = json_object_get(lr, maps[m]), *want;
		if (!lv)
			continue;
		want = json_deep_copy(json_object_get(fr, maps[m]));
		assert_true(expect_pruned(want));
		assert_true(st__json_equal(lv, want));
		json_decref(want);
		pruned_maps++;
	}
}

/* The writer's bytes for a resource of s (full) at its depth in s's style. */
static char *written(st_state *s, json_t *res, size_t *len)
{
	st_buf b;
	size_t depth = st_state_envelope(s) == ST_ENVELOPE_EXPORT ? 3 : 4;
	st_buf_init(&b);
	assert_int_equal(st__json_write_at(&b, res, st_state_style(s), ST_K_RESOURCE, depth),
			 ST_OK);
	return st_buf_take(&b, len);
}

/* Both loads of the same outcome; returns the lazy state's registered count (or -1 when both
 * failed alike). Checks: errors, load problems, every span == the writer's bytes for the full
 * resource, validate's report, and the tree once inflated. */
static long compare(st_state *lz, int lrc, st_error *lerr, st_state *fl, int frc,
		    st_error *ferr, const char *what)
{
	st_problems pl = {0}, pf = {0};
	json_t *lres, *fres;
	long n;

	if (lrc != frc)
		fprintf(stderr, "%s: lazy %d (%s), full %d (%s)\n", what, lrc, lerr->message, frc,
			ferr->message);
	assert_int_equal(lrc, frc);
	if (frc != ST_OK) {
		assert_string_equal(lerr->message, ferr->message);
		assert_string_equal(lerr->pointer, ferr->pointer);
		assert_string_equal(lerr->file, ferr->file);
		assert_int_equal(lerr->line, ferr->line);
		assert_int_equal(lerr->column, ferr->column);
		return -1;
	}
	n = (long)st__lazy_count(lz);
	same_problems(st_state_load_problems(lz), st_state_load_problems(fl), what);
	assert_memory_equal(st_state_style(lz), st_state_style(fl), sizeof(st_style));
	lres = st_state_resources(lz, 0);
	fres = st_state_resources(fl, 0);
	assert_int_equal(json_array_size(lres), json_array_size(fres));
	for (size_t i = 0; i < json_array_size(lres); i++) {
		const char *p;
		size_t len, wl;
		if (!st__lazy_span(lz, json_array_get(lres, i), &p, &len))
			continue;
		check_skeleton_maps(json_array_get(lres, i), json_array_get(fres, i));
		char *w = written(fl, json_array_get(fres, i), &wl);
		assert_int_equal(len, wl);
		assert_memory_equal(p, w, len);
		free(w);
	}
	st_validate_opts o = ST_VALIDATE_OPTS_INIT;
	o.schema = schema;
	assert_int_equal(st_validate(lz, &o, &pl, NULL), ST_OK);
	assert_int_equal(st_validate(fl, &o, &pf, NULL), ST_OK);
	same_problems(&pl, &pf, what);
	st_problems_clear(&pl);
	st_problems_clear(&pf);
	assert_int_equal(st__lazy_inflate_all(lz, NULL), ST_OK);
	assert_int_equal(st__lazy_count(lz), 0);
	assert_true(st__json_equal(st_state_root(lz), st_state_root(fl)));
	return n;
}

/* A text both ways (a copy for the lazy load, which takes it). */
static long diff_text(const char *text, size_t len, const st_load_opts *opts)
{
	st_state *lz = NULL, *fl = NULL;
	st_error lerr, ferr;
	char *copy = malloc(len + 1);
	long n;
	memcpy(copy, text, len);
	copy[len] = '\0';
	st_error_clear(&lerr);
	st_error_clear(&ferr);
	int frc = st_state_load_buffer(&fl, text, len, "t.json", opts, &ferr);
	int lrc = st__state_load_lazy_text(&lz, copy, len, "t.json", opts, &lerr);
	n = compare(lz, lrc, &lerr, fl, frc, &ferr, "text");
	st_state_free(lz);
	st_state_free(fl);
	return n;
}

static long diff_str(const char *text)
{
	return diff_text(text, strlen(text), NULL);
}

/* ---- every fixture ---- */

static long total_lazy, files;

static void diff_file(const char *path)
{
	st_state *lz = NULL, *fl = NULL;
	st_error lerr, ferr;
	st_error_clear(&lerr);
	st_error_clear(&ferr);
	int frc = st_state_load_file(&fl, path, NULL, &ferr);
	int lrc = st__state_load_lazy(&lz, path, NULL, &lerr);
	long n = compare(lz, lrc, &lerr, fl, frc, &ferr, path);
	if (n > 0)
		total_lazy += n;
	files++;
	st_state_free(lz);
	st_state_free(fl);
}

static void walk(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		char *p = NULL;
		struct stat sb;
		size_t nl = strlen(e->d_name);
		if (e->d_name[0] == '.')
			continue;
		assert_true(asprintf(&p, "%s/%s", dir, e->d_name) > 0);
		if (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
			walk(p);
		else if ((nl > 5 && !strcmp(e->d_name + nl - 5, ".json")) ||
			 (nl > 8 && !strcmp(e->d_name + nl - 8, ".json.gz")))
			diff_file(p);
		free(p);
	}
	closedir(d);
}

static void test_fixtures(void **state)
{
	(void)state;
	walk(FIXTURES);
	assert_true(files > 100);
	assert_true(total_lazy > 100); /* the lazy path ran, on real states among them */
	assert_true(pruned_maps > 10);  /* and kept special values pruned in some */
}

/* ---- spans and fallbacks on one small state ---- */

#define HEAD                                                                                 \
	"{\n    \"version\": 3,\n    \"deployment\": {\n        \"manifest\": {\n"              \
	"            \"time\": \"2026-01-01T00:00:00Z\",\n            \"magic\": \"\",\n"     \
	"            \"version\": \"v3.0.0\"\n        },\n        \"resources\": [\n"
#define STACK                                                                                \
	"            {\n                \"urn\": \"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev\",\n" \
	"                \"custom\": false,\n                \"type\": \"pulumi:pulumi:Stack\"\n" \
	"            },\n"
#define RES_OPEN                                                                              \
	"            {\n                \"urn\": \"urn:pulumi:dev::p::aws:s3/bucket:Bucket::b\",\n" \
	"                \"custom\": true,\n                \"id\": \"b-1\",\n"                  \
	"                \"type\": \"aws:s3/bucket:Bucket\",\n                \"inputs\": "
#define RES_CLOSE                                                                             \
	",\n                \"parent\": \"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev\"\n"    \
	"            }\n"
#define TAIL "        ]\n    }\n}\n"

/* The state with one bucket whose inputs are `inputs` (text as it stands in the file). */
static char *with_inputs(const char *inputs)
{
	st_buf b;
	st_buf_init(&b);
	st_buf_adds(&b, HEAD STACK RES_OPEN);
	st_buf_adds(&b, inputs);
	st_buf_adds(&b, RES_CLOSE TAIL);
	return st_buf_take(&b, NULL);
}

static long diff_inputs(const char *inputs)
{
	char *t = with_inputs(inputs);
	long n = diff_str(t);
	free(t);
	return n;
}

static void test_span_exact(void **state)
{
	(void)state;
	const char *in = "{\n                    \"a\": 1,\n                    \"b\": [\n"
			 "                        \"x\",\n                        2.5\n"
			 "                    ],\n                    \"c\": {}\n                }";
	char *t = with_inputs(in);
	st_state *s = NULL;
	const char *p;
	size_t len;
	const char *want = strstr(t, RES_OPEN);

	assert_int_equal(st__state_load_lazy_text(&s, strdup(t), strlen(t), "t", NULL, NULL), ST_OK);
	assert_int_equal(st__lazy_count(s), 1); /* the stack has no inputs: loaded as it is */
	json_t *res = st_state_resources(s, 0);
	assert_int_equal(st__lazy_span(s, json_array_get(res, 0), &p, &len), 0);
	assert_int_equal(st__lazy_span(s, json_array_get(res, 1), &p, &len), 1);
	/* from the resource's '{' to its '}' */
	assert_int_equal(len, strlen(RES_OPEN) - 12 + strlen(in) + strlen(RES_CLOSE) - 1);
	assert_memory_equal(p, want + 12, len);
	assert_null(json_object_get(json_array_get(res, 1), "inputs"));
	assert_string_equal(json_string_value(json_object_get(json_array_get(res, 1), "id")), "b-1");
	/* inflation: the full object in place, in the text's order, registration dropped */
	assert_int_equal(st__lazy_inflate(s, 1, NULL), ST_OK);
	assert_int_equal(st__lazy_count(s), 0);
	json_t *r = json_array_get(res, 1);
	assert_int_equal(st__lazy_span(s, r, &p, &len), 0);
	assert_true(json_real_value(json_object_get(json_object_get(r, "inputs"), "a")) == 1.0);
	const char *k = json_object_iter_key(json_object_iter_next(r, json_object_iter_next(
		r, json_object_iter_next(r, json_object_iter_next(r, json_object_iter(r))))));
	assert_string_equal(k, "inputs");
	st_state_free(s);
	free(t);
	/* the differential on it too */
	assert_int_equal(diff_inputs(in), 1);
}

static void test_canonical_values(void **state)
{
	(void)state;
	/* what the writer writes is kept lazily */
	assert_int_equal(diff_inputs("{\n                    \"s\": \"a\\\"b\"\n                }"), 1);
	assert_int_equal(diff_inputs("{\n                    \"s\": \"\\u0001\"\n                }"), 1);
	assert_int_equal(diff_inputs("{\n                    \"s\": \"\\b\"\n                }"), 1);
	assert_int_equal(diff_inputs("{\n                    \"s\": \"\\u2028\"\n                }"), 1);
	assert_int_equal(diff_inputs("{\n                    \"s\": \"\\u003c\"\n                }"), 1);
	assert_int_equal(diff_inputs("{\n                    \"s\": \"\xc3\xa9\"\n                }"), 1);
	assert_int_equal(diff_inputs("{}"), 1);
	assert_int_equal(diff_inputs("{\n                    \"s\": \"a\\\"b\\\\c\\n\\t\\r\\u0001\\b"
				     "\\u2028 \\u003c \xc3\xa9\"\n                }"), 1);
	assert_int_equal(diff_inputs("{\n                    \"n\": -12,\n                    "
				     "\"o\": 0.000001,\n                    \"p\": 1e+21,\n"
				     "                    \"q\": 1.5e-7,\n                    "
				     "\"r\": 123456789012345680\n                }"),
			 1);
	assert_int_equal(diff_inputs("{\n                    \"A\": null,\n                    "
				     "\"a\": true,\n                    \"aa\": false,\n"
				     "                    \"b\": []\n                }"),
			 1);
}

/* Each text the writer would not write: not registered, and everything as the full load. */
static void test_fallbacks(void **state)
{
	static const char *const bad[] = {
		/* whitespace */
		"{ \"a\": 1 }",
		"{\n                   \"a\": 1\n                }",
		"{\n                    \"a\":1\n                }",
		"{\n                    \"a\": 1\n                }  ",
		"{\n                    \"a\": [ ]\n                }",
		"{\n\t\"a\": 1\n                }",
		/* key order, duplicates */
		"{\n                    \"b\": 1,\n                    \"a\": 2\n                }",
		"{\n                    \"a\": 1,\n                    \"a\": 2\n                }",
		"{\n                    \"a\": {\n                        \"y\": 1,\n"
		"                        \"x\": 1\n                    }\n                }",
		/* escapes */
		"{\n                    \"a\": \"\\/\"\n                }",
		"{\n                    \"a\": \"\\u0041\"\n                }",
		"{\n                    \"a\": \"\\u001F\"\n                }",
		"{\n                    \"a\": \"\\u000a\"\n                }",
		"{\n                    \"a\": \"\xe2\x80\xa8\"\n                }",
		"{\n                    \"a\": \"\\ud800\"\n                }",
		"{\n                    \"\\u0061\": 1\n                }",
		/* numbers */
		"{\n                    \"a\": 1.50\n                }",
		"{\n                    \"a\": 1.0\n                }",
		"{\n                    \"a\": 1e2\n                }",
		"{\n                    \"a\": 1E+21\n                }",
		"{\n                    \"a\": 0.0000001\n                }",
		"{\n                    \"a\": -0.0\n                }",
		/* invalid UTF-8 */
		"{\n                    \"a\": \"\xff\"\n                }",
		"{\n                    \"a\": \"\xc3\"\n                }",
		/* not an object */
		"null",
		/* the map twice (the full parse warns json/duplicate-key and keeps the last; the
		 * scan once skipped both and kept the resource with no warning) */
		"{\n                    \"a\": 1\n                },\n                \"inputs\": {}",
		"{},\n                \"inputs\": {}",
		"null,\n                \"inputs\": {}",
		"{},\n                \"inputs\": null",
		"{},\n                \"outputs\": {},\n                \"inputs\": {}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		long n = diff_inputs(bad[i]);
		if (n != 0)
			fprintf(stderr, "case %zu: %ld lazily\n", i, n);
		assert_int_equal(n, 0);
	}
}

/* Special values: the resource stays lazy, its maps pruned to them, and every check finds
 * each at its pointer (a malformed secret in an array, a ciphertext without a provider). */
static void test_special_values(void **state)
{
	long before = pruned_maps;
	(void)state;
	assert_int_equal(
		diff_inputs("{\n                    \"a\": {\n                        "
			    "\"4dabf18193072939515e22adb298388d\": \"1b47061264138c4ac30d75fd1eb44270\",\n"
			    "                        \"ciphertext\": \"x\"\n                    },\n"
			    "                    \"b\": 1\n                }"),
		1);
	assert_int_equal(
		diff_inputs("{\n                    \"list\": [\n                        1,\n"
			    "                        {\n                            \"x\": 2\n"
			    "                        },\n                        {\n"
			    "                            \"4dabf18193072939515e22adb298388d\": "
			    "\"1b47061264138c4ac30d75fd1eb44270\"\n                        },\n"
			    "                        {\n                            "
			    "\"4dabf18193072939515e22adb298388d\": \"nope\"\n"
			    "                        }\n                    ],\n"
			    "                    \"z\": \"y\"\n                }"),
		1);
	assert_true(pruned_maps >= before + 2);
}

/* A member above the resources given twice (the deployment, its resources, the checkpoint):
 * the full parse keeps the last, and the scan's records of the first copy's resources (freed)
 * once stayed in the side table (found by test_lazydiff: never inflated, a stale address).
 * Now the text is parsed again in full. */
static void test_duplicate_envelope(void **state)
{
	char *t = with_inputs("{\n                    \"a\": 1\n                }");
	char *res = strstr(t, "        \"resources\": [");
	char *end = strstr(t, TAIL);
	st_buf b;
	(void)state;
	assert_non_null(res);
	assert_non_null(end);
	/* "resources" twice in the deployment */
	st_buf_init(&b);
	st_buf_add(&b, t, (size_t)(end - t));
	st_buf_adds(&b, "        ],\n");
	st_buf_add(&b, res, (size_t)(end - res));
	st_buf_adds(&b, TAIL);
	assert_int_equal(diff_text(b.data, b.len, NULL), 0);
	st_buf_free(&b);
	/* the whole deployment twice */
	char *dep = strstr(t, "    \"deployment\": {");
	assert_non_null(dep);
	st_buf_init(&b);
	st_buf_add(&b, t, (size_t)(end - t));
	st_buf_adds(&b, "        ]\n    },\n");
	st_buf_add(&b, dep, strlen(dep));
	assert_int_equal(diff_text(b.data, b.len, NULL), 0);
	st_buf_free(&b);
	/* a later key of another case names the same field (Go matches keys without case): the
	 * scan's skeletons were in the first, which the decoder drops (they were freed while
	 * still recorded: a use after free under ASan) */
	const char *later[] = {"        \"Resources\": null\n", "        \"Resources\": []\n"};
	for (size_t i = 0; i < 2; i++) {
		st_buf_init(&b);
		st_buf_add(&b, t, (size_t)(end - t));
		st_buf_adds(&b, "        ],\n");
		st_buf_adds(&b, later[i]);
		st_buf_adds(&b, TAIL + strlen("        ]\n"));
		assert_int_equal(diff_text(b.data, b.len, NULL), 0);
		st_buf_free(&b);
	}
	st_buf_init(&b);
	st_buf_add(&b, t, (size_t)(end - t));
	st_buf_adds(&b, "        ]\n    },\n    \"Deployment\": {}\n}\n");
	assert_int_equal(diff_text(b.data, b.len, NULL), 0);
	st_buf_free(&b);
	free(t);
}

/* A property value nested past the schema walk's 1,000 levels: the full load's validate warns
 * schema/depth; the scan once skipped it, and the lazy report lacked the warning (found by
 * test_lazydiff). Now it is not proved, and the resource is parsed in full. */
static void test_deep_value(void **state)
{
	st_buf b;
	(void)state;
	st_buf_init(&b);
	st_buf_adds(&b, "{\"version\":3,\"checkpoint\":{\"stack\":\"organization/p/dev\",\"latest\":{"
			"\"manifest\":{\"time\":\"2026-01-01T00:00:00Z\",\"magic\":\"\",\"version\":"
			"\"\"},\"resources\":[{\"urn\":\"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev"
			"\",\"custom\":false,\"type\":\"pulumi:pulumi:Stack\",\"outputs\":{\"a\":");
	for (int i = 0; i < 1000; i++)
		st_buf_addc(&b, '[');
	st_buf_addc(&b, '1');
	for (int i = 0; i < 1000; i++)
		st_buf_addc(&b, ']');
	st_buf_adds(&b, "}}]}}}");
	assert_int_equal(diff_text(b.data, b.len, NULL), 0);
	st_buf_free(&b);
}

/* Broken texts: the same error, line and column as the full load. */
static void test_errors(void **state)
{
	static const char *const broken[] = {
		"{\n                    \"a\": 1,\n                }",
		"{\n                    \"a\": tru\n                }",
		"{\n                    \"a\": \"\x01\"\n                }",
		"{\n                    \"a\": 1e999\n                }",
		"{\n                    \"a\": [1,]\n                }",
		"{\n                    \"a\": \"\\x\"\n                }",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++)
		assert_int_equal(diff_inputs(broken[i]), -1);
	/* truncated anywhere in a resource */
	char *t = with_inputs("{\n                    \"a\": [\n                        1\n"
			      "                    ]\n                }");
	size_t at = (size_t)(strstr(t, "\"a\"") - t);
	for (size_t cut = at - 20; cut < at + 60; cut++)
		assert_int_equal(diff_text(t, cut, NULL), -1);
	free(t);
}

/* The style decides: \u003c is canonical only with HTML escaping on (no raw '<' anywhere),
 * \u0008 only when the file never writes \b. */
static void test_style(void **state)
{
	char *t;
	(void)state;
	/* a raw '<' in another resource turns HTML escaping off: the escaped one is not canonical */
	t = with_inputs("{\n                    \"a\": \"\\u003c\"\n                }");
	char *at = strstr(t, "p-dev\",\n");
	assert_non_null(at);
	st_buf ub;
	st_buf_init(&ub);
	st_buf_add(&ub, t, (size_t)(at + 5 - t));
	st_buf_adds(&ub, "<");
	st_buf_adds(&ub, at + 5);
	char *u = st_buf_take(&ub, NULL);
	/* urn "...::p-dev<" of the stack (the parent no longer matches: only a warning) */
	assert_int_equal(diff_str(u), 0);
	free(u);
	free(t);
	/* \u0008 alone: short_bf off, canonical */
	assert_int_equal(diff_inputs("{\n                    \"a\": \"\\u0008\"\n                }"), 1);
	/* \u0008 with a \b elsewhere: not canonical; the whole text is loaded in full */
	t = with_inputs("{\n                    \"a\": \"\\u0008\",\n                    \"b\": \"\\b\"\n"
			"                }");
	assert_int_equal(diff_str(t), 0);
	free(t);
	/* compact (a checkpoint as the DIY backend writes it) */
	assert_int_equal(
		diff_str("{\"version\":3,\"checkpoint\":{\"stack\":\"organization/p/dev\",\"latest\":{"
			 "\"manifest\":{\"time\":\"2026-01-01T00:00:00Z\",\"magic\":\"\",\"version\":"
			 "\"\"},\"resources\":[{\"urn\":\"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev"
			 "\",\"custom\":false,\"type\":\"pulumi:pulumi:Stack\",\"outputs\":{\"a\":[1,"
			 "{\"b\":\"c\"}]}}]}}}"),
		1);
	/* a member other than inputs/outputs not as the writer writes it */
	t = with_inputs("{}");
	at = strstr(t, "\"custom\": true");
	at[9] = '\t';
	assert_int_equal(diff_str(t), 0); /* Go accepts the tab; the writer writes a space */
	free(t);
}

/* Many resources on two threads: the second thread's skeletons merged in order. */
static void test_two_threads(void **state)
{
	st_buf b;
	st_load_opts o = ST_LOAD_OPTS_INIT;
	unsigned long before = st__two_count(ST__T_SKIM), splits = st__json_splits();
	(void)state;
	st_buf_init(&b);
	st_buf_adds(&b, HEAD STACK);
	for (int i = 0; i < 400; i++)
		st_buf_printf(&b,
			      "            {\n                \"urn\": \"urn:pulumi:dev::p::t:m:R::r%d\",\n"
			      "                \"custom\": true,\n                \"id\": \"%d\",\n"
			      "                \"type\": \"t:m:R\",\n                \"outputs\": {\n"
			      "                    \"k\": %d\n                }\n            }%s\n",
			      i, i, i, i < 399 ? "," : "");
	st_buf_adds(&b, TAIL);
	st__json_split_test(64);
	o.threads = 2;
	assert_int_equal(diff_text(b.data, b.len, &o), 400);
	st__json_split_test(0);
	assert_true(st__two_count(ST__T_SKIM) > before);
	assert_true(st__json_splits() > splits);
	st_buf_free(&b);
}

/* The second thread's array is not the resources (a big array elsewhere, of objects that look
 * like resources): its skeletons are not kept, the text is parsed in full. */
static void test_two_threads_other_array(void **state)
{
	st_buf b;
	st_load_opts o = ST_LOAD_OPTS_INIT;
	unsigned long before = st__two_count(ST__T_SKIM);
	(void)state;
	st_buf_init(&b);
	st_buf_adds(&b, HEAD STACK);
	st_buf_adds(&b, RES_OPEN "{\n                    \"a\": 1\n                }" RES_CLOSE);
	st_buf_adds(&b, "        ],\n        \"junk\": [\n");
	for (int i = 0; i < 400; i++)
		st_buf_printf(&b,
			      "            {\n                \"urn\": \"urn:pulumi:dev::p::t:m:R::r%d\",\n"
			      "                \"custom\": true,\n                \"type\": \"t:m:R\",\n"
			      "                \"outputs\": {\n                    \"k\": %d\n"
			      "                }\n            }%s\n",
			      i, i, i < 399 ? "," : "");
	st_buf_adds(&b, TAIL);
	st__json_split_test(64);
	o.threads = 2;
	assert_int_equal(diff_text(b.data, b.len, &o), 0);
	st__json_split_test(0);
	assert_true(st__two_count(ST__T_SKIM) > before);
	st_buf_free(&b);
}

/* A legacy checkpoint (no version, "latest" at the top: its resources array is not one the
 * first thread scans) on two threads: the second thread made skeletons in it, which the merge
 * dropped; with none of the first thread's they were once left in the tree, their inputs and
 * outputs lost (validate checked too little, an edit wrote the state without them; found by
 * test_lazydiff). Now the text is parsed again in full. */
static void test_two_threads_legacy(void **state)
{
	st_buf b;
	st_load_opts o = ST_LOAD_OPTS_INIT;
	unsigned long before = st__two_count(ST__T_SKIM);
	(void)state;
	st_buf_init(&b);
	st_buf_adds(&b, "{\n    \"target\": \"foo\",\n    \"latest\": {\n"
			"        \"time\": \"2017-11-08T11:59:08-08:00\",\n        \"resources\": [\n");
	for (int i = 0; i < 400; i++)
		st_buf_printf(&b,
			      "            {\n                \"urn\": \"urn:pulumi:foo::p::t:m:R::r%d\",\n"
			      "                \"custom\": true,\n                \"id\": \"%d\",\n"
			      "                \"type\": \"t:m:R\",\n                \"outputs\": {\n"
			      "                    \"k\": %d\n                }\n            }%s\n",
			      i, i, i, i < 399 ? "," : "");
	st_buf_adds(&b, "        ]\n    }\n}\n");
	st__json_split_test(64);
	o.threads = 2;
	assert_int_equal(diff_text(b.data, b.len, &o), 0);
	st__json_split_test(0);
	assert_true(st__two_count(ST__T_SKIM) > before);
	st_buf_free(&b);
}

/* ---- white space the layout does not have ---- */

/* The text with one white space character inserted at every `every`-th place between tokens
 * (after { [ : , and before } ] ,), starting at place `first`, cycling space, tab, newline and
 * carriage return: valid JSON still, in no layout the writer has. */
static char *with_white_space(const char *t, size_t len, size_t every, size_t first,
			      size_t *out_len)
{
	static const char ws[] = " \t\n\r";
	st_buf b;
	size_t place = 0, k = 0;
	int in_str = 0;
	st_buf_init(&b);
	for (size_t i = 0; i < len; i++) {
		char c = t[i];
		if (in_str) {
			st_buf_addc(&b, c);
			if (c == '\\' && i + 1 < len)
				st_buf_addc(&b, t[++i]);
			else if (c == '"')
				in_str = 0;
			continue;
		}
		if ((c == '}' || c == ']' || c == ',') && place++ % every == first)
			st_buf_addc(&b, ws[k++ % 4]);
		st_buf_addc(&b, c);
		if (c == '"')
			in_str = 1;
		if ((c == '{' || c == '[' || c == ':' || c == ',') && place++ % every == first)
			st_buf_addc(&b, ws[k++ % 4]);
	}
	return st_buf_take(&b, out_len);
}

/* Extra white space anywhere (Python's json.dumps writes one line with ": " and ", "): the lazy
 * load gives what the full load gives, never a syntax error of its own (once it took a space
 * after a resource member's colon for the value). */
static void test_white_space(void **state)
{
	static const char *const names[] = {"01-kloudlib-local.json",
					    "04-kloudlib-backup-big-56res.json",
					    "25-random-password.json", "30-azure-network.json"};
	(void)state;
	for (size_t f = 0; f < sizeof(names) / sizeof(*names); f++) {
		char *path = NULL, *text = NULL;
		size_t len;
		st_error err;
		assert_true(asprintf(&path, "%s/realworld/%s", FIXTURES, names[f]) > 0);
		st_error_clear(&err);
		assert_int_equal(st_file_read(path, 0, &text, &len, NULL, &err), ST_OK);
		for (size_t first = 0; first < 6; first++) {
			size_t wl;
			char *w = with_white_space(text, len, 23, first * 4, &wl);
			assert_true(wl > len);
			diff_text(w, wl, NULL);
			free(w);
		}
		free(text);
		free(path);
	}
	/* Python's layout, whole */
	assert_int_equal(diff_str("{\"version\": 3, \"deployment\": {\"manifest\": {\"time\": "
				  "\"2026-01-01T00:00:00Z\", \"magic\": \"\", \"version\": \"\"}, "
				  "\"resources\": [{\"urn\": "
				  "\"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev\", \"custom\": "
				  "false, \"type\": \"pulumi:pulumi:Stack\", \"outputs\": {\"a\": "
				  "1}}]}}"),
			 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_span_exact),
		cmocka_unit_test(test_canonical_values),
		cmocka_unit_test(test_fallbacks),
		cmocka_unit_test(test_special_values),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_duplicate_envelope),
		cmocka_unit_test(test_deep_value),
		cmocka_unit_test(test_style),
		cmocka_unit_test(test_two_threads),
		cmocka_unit_test(test_two_threads_other_array),
		cmocka_unit_test(test_two_threads_legacy),
		cmocka_unit_test(test_fixtures),
		cmocka_unit_test(test_white_space),
	};
	assert_int_equal(st_schema_builtin(&schema, NULL), ST_OK);
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	st_schema_free(schema);
	return rc;
}
