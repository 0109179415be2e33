/*
 * The JSON Schema Test Suite (draft 2020-12), every file. A group whose schema uses a keyword
 * statetool does not implement, or a document it was not given (remote references), cannot be
 * compiled: its cases are counted as skipped, never as passed. Every other case must pass.
 * Prints passed/skipped/failed per keyword file.
 */
#include "testutil.h"

#include <dirent.h>

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_suite(void **state)
{
	(void)state;
	char *dir = tu_fixture("json-schema-test-suite/draft2020-12");
	DIR *d = opendir(dir);
	struct dirent *de;
	char *names[128];
	size_t nn = 0, total_pass = 0, total_skip = 0, total_fail = 0;

	assert_non_null(d);
	while ((de = readdir(d)) && nn < 128)
		if (strstr(de->d_name, ".json"))
			names[nn++] = strdup(de->d_name);
	closedir(d);
	qsort(names, nn, sizeof(*names), cmp_str);
	assert_true(nn >= 40);
	printf("%-32s %6s %6s %6s\n", "keyword file", "passed", "skipped", "failed");
	for (size_t f = 0; f < nn; f++) {
		char *path = st_asprintf("%s/%s", dir, names[f]);
		size_t len = 0, pass = 0, skip = 0, failn = 0, gi;
		char *text = tu_read(path, &len);
		json_t *groups = NULL, *g;
		assert_int_equal(st_json_parse(&groups, text, len, path, NULL, NULL, NULL, NULL),
				 ST_OK);
		json_array_foreach(groups, gi, g) {
			json_t *tests = json_object_get(g, "tests"), *t;
			st_schema *s = NULL;
			st_error err;
			size_t ti;
			st_error_clear(&err);
			assert_int_equal(st_schema_new(&s, NULL), ST_OK);
			int rc = st_schema_add(s, json_object_get(g, "schema"), NULL, &err);
			if (rc == ST_OK)
				rc = st_schema_compile(s, &err);
			if (rc != ST_OK) {
				assert_int_equal(rc, ST_EUNSUPPORTED);
				skip += json_array_size(tests);
				st_schema_free(s);
				continue;
			}
			json_array_foreach(tests, ti, t) {
				int n = st_schema_validate(s, NULL, json_object_get(t, "data"), NULL,
							   NULL, NULL);
				int want = json_is_true(json_object_get(t, "valid"));
				assert_true(n >= 0);
				if ((n == 0) == want) {
					pass++;
				} else {
					failn++;
					printf("FAILED %s: %s / %s\n", names[f],
					       json_string_value(json_object_get(g, "description")),
					       json_string_value(json_object_get(t, "description")));
				}
			}
			st_schema_free(s);
		}
		printf("%-32s %6zu %6zu %6zu\n", names[f], pass, skip, failn);
		total_pass += pass;
		total_skip += skip;
		total_fail += failn;
		json_decref(groups);
		free(text);
		free(path);
		free(names[f]);
	}
	printf("%-32s %6zu %6zu %6zu\n", "total", total_pass, total_skip, total_fail);
	free(dir);
	assert_int_equal(total_fail, 0);
	assert_true(total_pass > 900);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_suite),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
