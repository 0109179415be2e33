/* Edit sessions through the library: copy on write, diffs, rollback, integrity refusal,
 * dependents, repair (determinism, cycles). */
#include "testutil.h"


static size_t idx_of(st_state *s, const char *q)
{
	size_t *h = NULL, n = 0, i;
	assert_int_equal(st_state_find(s, q, &h, &n, NULL), ST_OK);
	i = h[0];
	free(h);
	return i;
}

static char *dump(st_state *s)
{
	char *out;
	size_t len;
	assert_int_equal(st_state_dump(s, NULL, &out, &len, NULL), ST_OK);
	return out;
}

static void test_cow_diff_and_rollback(void **state)
{
	(void)state;
	st_state *s = tu_load("edit/base.json");
	char *before = dump(s);
	json_t *orig = json_array_get(st_state_resources(s, 0), 11);
	json_incref(orig);
	st_edit *e;
	st_changes ch = {0};
	st_diff d;
	size_t i = idx_of(s, "logs"), changed;
	assert_int_equal(st_edit_begin(&e, s, &ch, NULL), ST_OK);
	assert_int_equal(st_edit_set_flag(e, (st_handle[]){tu_handle(e, i)}, 1, "protect", 1, &changed, NULL), ST_OK);
	assert_int_equal(changed, 1);
	/* the original object is untouched: the state holds a copy */
	assert_false(json_is_true(json_object_get(orig, "protect")));
	assert_true(json_array_get(st_state_resources(s, 0), 11) != orig);
	assert_int_equal(st_edit_commit(e, &d, NULL, NULL), ST_OK);
	assert_int_equal(d.count, 1);
	assert_int_equal(d.items[0].kind, '~');
	assert_int_equal(d.items[0].nfields, 1);
	assert_string_equal(d.items[0].fields[0], "protect");
	st_diff_clear(&d);
	st_edit_rollback(e);
	char *after = dump(s);
	assert_string_equal(before, after);
	free(after);
	st_edit_free(e);
	st_changes_clear(&ch);
	json_decref(orig);
	free(before);
	st_state_free(s);
}

static void test_integrity_refusal_rolls_back(void **state)
{
	(void)state;
	st_state *s = tu_load("edit/late-provider.json");
	char *before = dump(s);
	st_edit *e;
	st_problems p = {0};
	st_error err;
	size_t n;
	st_error_clear(&err);
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_replace_provider(
				 e,
				 "urn:pulumi:dev::shop::pulumi:providers:aws::default_6_0_0::"
				 "a1a1a1a1-0000-4000-8000-000000000001",
				 "urn:pulumi:dev::shop::pulumi:providers:aws::late::"
				 "a1a1a1a1-0000-4000-8000-000000000009",
				 &n, NULL),
			 ST_OK);
	assert_int_equal(n, 4);
	assert_int_equal(st_edit_commit(e, NULL, &p, &err), ST_EINTEGRITY);
	assert_non_null(strstr(err.message, "state edit produced an invalid snapshot"));
	assert_int_equal(p.count, 4);
	assert_string_equal(p.items[0].rule, "integrity/provider-unknown");
	char *after = dump(s);
	assert_string_equal(before, after); /* rolled back */
	free(after);
	free(before);
	st_problems_clear(&p);
	st_edit_free(e);
	st_state_free(s);
}

/* A forward reference (an invalid state) still makes a dependent: the search runs to a fixed
 * point. */
static void test_dependents_fixpoint(void **state)
{
	(void)state;
	const char *text =
		"{\"version\":3,\"deployment\":{\"manifest\":{\"time\":\"2024-01-02T03:04:05Z\",\"magic\":\"\","
		"\"version\":\"\"},\"resources\":["
		"{\"urn\":\"urn:pulumi:s::p::a:b:C::x\",\"custom\":false,\"type\":\"a:b:C\","
		"\"dependencies\":[\"urn:pulumi:s::p::a:b:C::y\"]},"
		"{\"urn\":\"urn:pulumi:s::p::a:b:C::y\",\"custom\":false,\"type\":\"a:b:C\","
		"\"deletedWith\":\"urn:pulumi:s::p::a:b:C::z\"},"
		"{\"urn\":\"urn:pulumi:s::p::a:b:C::z\",\"custom\":false,\"type\":\"a:b:C\"}]}}";
	st_state *s;
	st_edit *e;
	st_error err;
	size_t z = 2, deleted;
	assert_int_equal(st_state_load_buffer(&s, text, strlen(text), "t", NULL, NULL), ST_OK);
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_edit_delete(e, (st_handle[]){tu_handle(e, z)}, 1, 0, &deleted, &err), ST_EREFUSED);
	assert_non_null(strstr(err.message, "\"x\""));
	assert_non_null(strstr(err.message, "\"y\""));
	assert_int_equal(st_edit_delete(e, (st_handle[]){tu_handle(e, z)}, 1, ST_DELETE_TARGET_DEPENDENTS, &deleted, NULL),
			 ST_OK);
	assert_int_equal(deleted, 3);
	assert_null(st_state_resources(s, 0));
	st_edit_free(e);
	st_state_free(s);
}

static void test_repair_cycle_and_determinism(void **state)
{
	(void)state;
	const char *cyc =
		"{\"version\":3,\"deployment\":{\"resources\":["
		"{\"urn\":\"urn:pulumi:s::p::a:b:C::x\",\"custom\":false,\"type\":\"a:b:C\","
		"\"dependencies\":[\"urn:pulumi:s::p::a:b:C::y\"]},"
		"{\"urn\":\"urn:pulumi:s::p::a:b:C::y\",\"custom\":false,\"type\":\"a:b:C\","
		"\"dependencies\":[\"urn:pulumi:s::p::a:b:C::x\"]}]}}";
	st_state *s;
	st_edit *e;
	st_error err;
	assert_int_equal(st_state_load_buffer(&s, cyc, strlen(cyc), "t", NULL, NULL), ST_OK);
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_edit_repair(e, &err), ST_EINTEGRITY);
	assert_non_null(strstr(err.message, "snapshot has cyclic dependencies"));
	st_edit_free(e);
	st_state_free(s);
	/* the same input, twice, gives the same bytes */
	char *out[2];
	for (int k = 0; k < 2; k++) {
		s = tu_load("pulumi/todo.json");
		assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
		assert_int_equal(st_edit_repair(e, NULL), ST_OK);
		assert_int_equal(st_edit_commit(e, NULL, NULL, NULL), ST_OK);
		st_problems p = {0};
		st_integrity_check(s, &p, NULL);
		assert_int_equal(p.errors, 0);
		st_problems_clear(&p);
		out[k] = dump(s);
		st_edit_free(e);
		st_state_free(s);
	}
	assert_string_equal(out[0], out[1]);
	free(out[0]);
	free(out[1]);
}

static void test_rename_rewrites_everything(void **state)
{
	(void)state;
	st_state *s = tu_load("edit/base.json");
	st_edit *e;
	st_diff d;
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_rename(e, tu_handle(e, idx_of(s, "assets")), "static", NULL), ST_OK);
	assert_int_equal(st_edit_commit(e, &d, NULL, NULL), ST_OK);
	/* assets removed + static added; the policy changed in dependencies and
	 * propertyDependencies */
	int minus = 0, plus = 0, tilde = 0;
	for (size_t i = 0; i < d.count; i++) {
		minus += d.items[i].kind == '-';
		plus += d.items[i].kind == '+';
		if (d.items[i].kind == '~') {
			tilde++;
			assert_non_null(strstr(d.items[i].urn, "assets-policy"));
			assert_int_equal(d.items[i].nfields, 2);
		}
	}
	assert_int_equal(minus, 1);
	assert_int_equal(plus, 1);
	assert_int_equal(tilde, 1);
	st_diff_clear(&d);
	json_t *pol = json_array_get(st_state_resources(s, 0), idx_of(s, "assets-policy"));
	assert_string_equal(json_string_value(json_array_get(json_object_get(pol, "dependencies"), 0)),
			    "urn:pulumi:dev::shop::my:index:App$my:index:Web$aws:s3/bucket:Bucket::static");
	st_edit_free(e);
	st_state_free(s);
}

/* An invalid state may still be edited: the report compares the errors before and after
 * (counted from the original resources, which copy on write kept). */
static void test_invalid_state_error_counts(void **state)
{
	(void)state;
	st_state *s = tu_load("validate/dependency-missing.json");
	st_changes report = {0};
	st_edit *e;
	size_t t = 2, changed = 0, found = 0;
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st_edit_begin(&e, s, &report, &err), ST_OK);
	assert_int_equal(st_edit_set_flag(e, (st_handle[]){tu_handle(e, t)}, 1, "protect", 1, &changed, &err), ST_OK);
	assert_int_equal(changed, 1);
	assert_int_equal(st_edit_commit(e, NULL, NULL, &err), ST_OK);
	for (size_t i = 0; i < report.count; i++)
		if (!strcmp(report.lines[i], "the state had 1 integrity error before and has 1 "
					     "after (run statetool validate)"))
			found++;
	assert_int_equal(found, 1);
	st_edit_free(e);
	st_changes_clear(&report);
	/* a second session on the edited state adds an error: allowed (the state was invalid
	 * already), and the counts are of that session's start and end */
	assert_int_equal(st_edit_begin(&e, s, &report, &err), ST_OK);
	{
		json_t *dep = json_deep_copy(st_state_deployment(s));
		json_t *c = json_array_get(json_object_get(dep, "resources"), 2);
		json_object_set_new(c, "dependencies", json_pack("[s]", "urn:pulumi:dev::proj::x:y:Z::nope"));
		assert_int_equal(st_edit_replace_deployment(e, dep, &err), ST_OK);
	}
	assert_int_equal(st_edit_commit(e, NULL, NULL, &err), ST_OK);
	found = 0;
	for (size_t i = 0; i < report.count; i++)
		if (!strcmp(report.lines[i], "the state had 1 integrity error before and has 2 "
					     "after (run statetool validate)"))
			found++;
	assert_int_equal(found, 1);
	st_edit_free(e);
	st_changes_clear(&report);
	st_state_free(s);
}

/* A 700-resource state: a stack, a provider, then components each with two children, the
 * second depending on the first. */
static st_state *big_state(void)
{
	st_buf b;
	st_state *s = NULL;
	st_buf_init(&b);
	st_buf_adds(&b, "{\"version\":3,\"deployment\":{\"manifest\":{},\"resources\":["
			"{\"urn\":\"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev\",\"custom\":false,"
			"\"type\":\"pulumi:pulumi:Stack\"}");
	for (int i = 0; i < 233; i++) {
		st_buf_printf(&b, ",{\"urn\":\"urn:pulumi:dev::p::m:i:C::c%d\",\"custom\":false,"
				  "\"type\":\"m:i:C\",\"parent\":\"urn:pulumi:dev::p::pulumi:pulumi:"
				  "Stack::p-dev\"}", i);
		for (int k = 0; k < 2; k++)
			st_buf_printf(&b, ",{\"urn\":\"urn:pulumi:dev::p::m:i:C$m:i:R::r%d-%d\","
					  "\"custom\":false,\"type\":\"m:i:R\",\"parent\":\"urn:pulumi:"
					  "dev::p::m:i:C::c%d\",\"inputs\":{\"x\":[{\"y\":%d}]}%s}",
				      i, k, i, k, k ? ",\"dependencies\":[\"urn:pulumi:dev::p::m:i:"
						      "C$m:i:R::r0-0\"]" : "");
	}
	st_buf_adds(&b, "]}}");
	assert_int_equal(st_state_load_buffer(&s, b.data, b.len, "big.json", NULL, NULL), ST_OK);
	st_buf_free(&b);
	return s;
}

/* A 700-resource state whose resource 10 carries `r10` and resource 20 `r20` (extra members,
 * JSON text after a comma; at 610 and 620 when `late`), loaded from text or (from_json) built
 * from a tree. */
static st_state *marked_state(const char *r10, const char *r20, int from_json, int late)
{
	int a = late ? 610 : 10, z = late ? 620 : 20;
	st_buf b;
	st_state *s = NULL;
	st_buf_init(&b);
	st_buf_adds(&b, "{\"version\":3,\"deployment\":{\"manifest\":{},\"resources\":[");
	for (int i = 0; i < 700; i++)
		st_buf_printf(&b, "%s{\"urn\":\"urn:pulumi:dev::p::m:i:R::r%d\",\"custom\":true,"
				  "\"id\":\"i%d\",\"type\":\"m:i:R\",\"inputs\":{\"x\":[{\"y\":%d}]}%s%s}",
			      i ? "," : "", i, i, i, i == a || i == z ? "," : "",
			      i == a ? r10 : i == z ? r20 : "");
	st_buf_adds(&b, "]}}");
	if (from_json) {
		json_t *root = json_loadb(b.data, b.len, 0, NULL);
		st_style st;
		st_style_export(&st);
		st.compact = 1;
		assert_non_null(root);
		assert_int_equal(st_state_from_json(&s, root, &st, NULL, "m.json", NULL), ST_OK);
	} else {
		assert_int_equal(st_state_load_buffer(&s, b.data, b.len, "m.json", NULL, NULL),
				 ST_OK);
	}
	st_buf_free(&b);
	return s;
}

/* An edit's commit looks only at the resources it changed for the features the loaded document
 * holds no mark of; a feature used by a resource the edit did not touch is still declared
 * (version 4), on one thread and two, by commit and by commit_save; a mark that is not a use
 * (a property named "taint") changes nothing. */
static void test_features_of_untouched(void **state)
{
	(void)state;
	static const struct {
		const char *r10, *r20;
		int from_json, late; /* late: the marks in the half a second thread parses */
		const char *expect; /* the envelope's start after the edit */
	} cases[] = {
		{"\"taint\":true", "\"outputs\":{\"b\":{\"" ST_SIG_KEY "\":\"" ST_SIG_BYTESTRING
		 "\",\"value\":\"AAE=\"}}", 0, 0,
		 "{\"version\":4,\"features\":[\"byteString\",\"taint\"],"},
		{"\"taint\":true", "\"outputs\":{\"b\":{\"" ST_SIG_KEY "\":\"" ST_SIG_BYTESTRING
		 "\",\"value\":\"AAE=\"}}", 0, 1,
		 "{\"version\":4,\"features\":[\"byteString\",\"taint\"],"},
		{"\"taint\":true", "\"outputs\":{\"b\":{\"" ST_SIG_KEY "\":\"" ST_SIG_BYTESTRING
		 "\",\"value\":\"AAE=\"}}", 1, 0,
		 "{\"version\":4,\"features\":[\"byteString\",\"taint\"],"},
		{"\"outputs\":{\"taint\":true}", "\"outputs\":{\"s\":\"" ST_SIG_BYTESTRING "\"}", 0, 0,
		 "{\"version\":3,\"deployment\""},
		{"\"protect\":true", "\"outputs\":{}", 0, 0, "{\"version\":3,\"deployment\""},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		for (int way = 0; way < 4; way++) {
			st_state *s;
			char *dir = tu_tmpdir(), *p = st_path_join(dir, "f.json"), *out;
			size_t target = 300, deleted = 0, len;
			st_edit *e;
			st_set_threads(way & 1 ? 2 : 1, NULL);
			if (cases[k].late)
				st__json_split_test(1000);
			size_t splits = st__json_splits();
			s = marked_state(cases[k].r10, cases[k].r20, cases[k].from_json,
					 cases[k].late);
			st__json_split_test(0);
			if (cases[k].late && (way & 1))
				assert_int_equal(st__json_splits(), splits + 1);
			assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
			assert_int_equal(st_edit_delete(e, (st_handle[]){tu_handle(e, target)}, 1, 0, &deleted, NULL), ST_OK);
			assert_int_equal(deleted, 1);
			if (way & 2) {
				int written = 0;
				assert_int_equal(st_edit_commit_save(e, p, NULL, 0, NULL, NULL,
								     &written, NULL),
						 ST_OK);
				assert_int_equal(written, 1);
				out = tu_read(p, &len);
			} else {
				assert_int_equal(st_edit_commit(e, NULL, NULL, NULL), ST_OK);
				assert_int_equal(st_state_dump(s, NULL, &out, &len, NULL), ST_OK);
			}
			st_set_threads(0, NULL);
			if (strncmp(out, cases[k].expect, strlen(cases[k].expect)))
				fail_msg("case %zu, way %d: %.80s", k, way, out);
			free(out);
			st_edit_free(e);
			st_state_free(s);
			free(p);
			tu_rmdir(dir);
		}
	}
	/* a feature the edit brings in is found in what it changed */
	st_state *s = marked_state("\"protect\":true", "\"outputs\":{}", 0, 0);
	st_edit *e;
	char *out;
	size_t len, t = 30, changed = 0;
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_set_flag(e, (st_handle[]){tu_handle(e, t)}, 1, "taint", 1, &changed, NULL), ST_OK);
	assert_int_equal(st_edit_commit(e, NULL, NULL, NULL), ST_OK);
	assert_int_equal(st_state_dump(s, NULL, &out, &len, NULL), ST_OK);
	assert_non_null(strstr(out, "{\"version\":4,\"features\":[\"taint\"],"));
	free(out);
	st_edit_free(e);
	st_state_free(s);
}

/* The read-only passes of delete and rename on a big state run on two threads: the same
 * answers as one thread, with what they find in either half. */
static void test_scans_two_threads(void **state)
{
	(void)state;
	st_buf b;
	st_buf_init(&b);
	st_buf_adds(&b, "{\"version\":3,\"deployment\":{\"manifest\":{},\"resources\":[");
	for (int i = 0; i < 6000; i++)
		st_buf_printf(&b, "%s{\"urn\":\"urn:pulumi:dev::p::m:i:R::r%d\",\"custom\":true,"
				  "\"id\":\"i%d\",\"type\":\"m:i:R\"%s}",
			      i ? "," : "", i, i,
			      i == 20 || i == 5500 ? ",\"dependencies\":[\"urn:pulumi:dev::p::m:i:R::r10\"]"
						   : "");
	st_buf_adds(&b, "]}}");
	for (int t = 0; t < 2; t++) {
		st_state *s;
		st_edit *e;
		st_changes rep = {0};
		st_error err;
		size_t target = 10, leaf = 5999, deleted = 0;
		unsigned long scans;
		st_set_threads(t ? 2 : 1, NULL);
		assert_int_equal(st_state_load_buffer(&s, b.data, b.len, "big.json", NULL, NULL), ST_OK);
		scans = st__two_count(ST__T_REFSCAN);
		/* r10 has dependents in both halves: refused, both named, in file order */
		st_error_clear(&err);
		assert_int_equal(st_edit_begin(&e, s, &rep, NULL), ST_OK);
		assert_int_equal(st_edit_delete(e, (st_handle[]){tu_handle(e, target)}, 1, 0, &deleted, &err), ST_EREFUSED);
		const char *m20 = strstr(err.message, "::r20)"), *m5500 = strstr(err.message, "::r5500)");
		assert_non_null(m20);
		assert_non_null(m5500);
		assert_true(m20 < m5500);
		/* a leaf goes alone */
		assert_int_equal(st_edit_delete(e, (st_handle[]){tu_handle(e, leaf)}, 1, 0, &deleted, NULL), ST_OK);
		assert_int_equal(deleted, 1);
		/* a rename onto a URN taken in the second half is refused */
		st_error_clear(&err);
		assert_int_equal(st_edit_rename(e, tu_handle(e, target), "r5990", &err), ST_ECONFLICT);
		/* a rename rewrites the references in both halves */
		assert_int_equal(st_edit_rename(e, tu_handle(e, target), "ten", NULL), ST_OK);
		assert_int_equal(st_edit_commit(e, NULL, NULL, NULL), ST_OK);
		size_t rewrote = 0;
		for (size_t i = 0; i < rep.count; i++)
			if (strstr(rep.lines[i], ": rewrote 1 reference"))
				rewrote++;
		assert_int_equal(rewrote, 2);
		/* the scans ran on two threads (t 1), and only then */
		if (t)
			assert_true(st__two_count(ST__T_REFSCAN) > scans);
		else
			assert_int_equal(st__two_count(ST__T_REFSCAN), scans);
		json_t *res = st_state_resources(s, 0);
		assert_string_equal(json_string_value(json_array_get(json_object_get(
					    json_array_get(res, 5500), "dependencies"), 0)),
				    "urn:pulumi:dev::p::m:i:R::ten");
		assert_string_equal(json_string_value(json_array_get(json_object_get(
					    json_array_get(res, 20), "dependencies"), 0)),
				    "urn:pulumi:dev::p::m:i:R::ten");
		st_set_threads(0, NULL);
		st_edit_free(e);
		st_changes_clear(&rep);
		st_state_free(s);
	}
	st_buf_free(&b);
}

/* On a big state commit checks integrity on this thread while another computes the diff and
 * the features: the same diff and the same bytes as on one thread. */
static void test_commit_two_threads(void **state)
{
	(void)state;
	char *out[2];
	st_diff d[2];
	for (int t = 0; t < 2; t++) {
		st_state *s = big_state();
		st_edit *e;
		size_t target = 2, taint = 5, changed = 0;
		size_t len;
		unsigned long runs = st__two_count(ST__T_COMMIT);
		st_set_threads(t ? 2 : 1, NULL);
		assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
		assert_int_equal(st_edit_rename(e, tu_handle(e, target), "moved", NULL), ST_OK); /* r0-0 */
		assert_int_equal(st_edit_set_flag(e, (st_handle[]){tu_handle(e, taint)}, 1, "taint", 1, &changed, NULL), ST_OK);
		assert_int_equal(st_edit_commit(e, &d[t], NULL, NULL), ST_OK);
		/* the threaded path ran (t 1), and only then */
		assert_int_equal(st__two_count(ST__T_COMMIT), runs + (unsigned long)t);
		st_set_threads(0, NULL);
		assert_int_equal(st_state_dump(s, NULL, &out[t], &len, NULL), ST_OK);
		st_edit_free(e);
		st_state_free(s);
	}
	assert_string_equal(out[0], out[1]);
	assert_non_null(strstr(out[0], "{\"version\":4,\"features\":[\"taint\"],"));
	assert_true(d[0].count >= 233); /* the renamed resource and every dependent */
	assert_int_equal(d[0].count, d[1].count);
	for (size_t i = 0; i < d[0].count; i++) {
		assert_int_equal(d[0].items[i].kind, d[1].items[i].kind);
		assert_string_equal(d[0].items[i].urn, d[1].items[i].urn);
		assert_int_equal(d[0].items[i].nfields, d[1].items[i].nfields);
	}
	for (int t = 0; t < 2; t++) {
		st_diff_clear(&d[t]);
		free(out[t]);
	}
}

/* st_edit_commit_save: the bytes of commit then save, the check running beside the write; a
 * failing check leaves the file and the state as they were, and no temporary file. */
static void test_commit_save(void **state)
{
	(void)state;
	char *dir = tu_tmpdir(), *p1 = st_path_join(dir, "a.json"), *p2 = st_path_join(dir, "b.json");
	size_t target = 2, changed = 0;
	st_edit *e;
	st_diff d1, d2;
	int written = 0;
	char *a, *b, *before;
	size_t alen, blen, len;

	/* one way: commit, then save */
	st_state *s = big_state();
	assert_int_equal(st_state_save(s, p1, NULL, NULL), ST_OK);
	assert_int_equal(st_state_save(s, p2, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_rename(e, tu_handle(e, target), "moved", NULL), ST_OK);
	assert_int_equal(st_edit_commit(e, &d1, NULL, NULL), ST_OK);
	assert_int_equal(st_state_save(s, p1, NULL, NULL), ST_OK);
	st_edit_free(e);
	st_state_free(s);
	/* the other: at once, on two threads */
	s = big_state();
	st_set_threads(2, NULL);
	unsigned long runs = st__two_count(ST__T_COMMIT_SAVE);
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_rename(e, tu_handle(e, target), "moved", NULL), ST_OK);
	assert_int_equal(st_edit_commit_save(e, p2, NULL, 0, &d2, NULL, &written, NULL), ST_OK);
	st_edit_free(e);
	assert_int_equal(written, 1);
	/* the check ran on the second thread */
	assert_int_equal(st__two_count(ST__T_COMMIT_SAVE), runs + 1);
	a = tu_read(p1, &alen);
	b = tu_read(p2, &blen);
	assert_int_equal(alen, blen);
	assert_memory_equal(a, b, alen);
	assert_int_equal(d1.count, d2.count);
	free(a);
	free(b);
	st_diff_clear(&d1);
	st_diff_clear(&d2);
	/* nothing changed: nothing written */
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_commit_save(e, p2, NULL, 0, NULL, NULL, &written, NULL), ST_OK);
	assert_int_equal(written, 0);
	st_edit_free(e);
	/* an edit that breaks the state: refused, the file, the state and the envelope as they
	 * were (a taint would have made it version 4) */
	b = tu_read(p2, &blen);
	assert_int_equal(st_state_dump(s, NULL, &before, &len, NULL), ST_OK);
	{
		st_error err;
		st_problems probs = {0};
		size_t taint = 5;
		json_t *dep;
		st_error_clear(&err);
		assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
		assert_int_equal(st_edit_set_flag(e, (st_handle[]){tu_handle(e, taint)}, 1, "taint", 1, &changed, NULL), ST_OK);
		dep = json_deep_copy(st_state_deployment(s));
		json_object_set_new(json_array_get(json_object_get(dep, "resources"), 7),
				    "parent", json_string("urn:pulumi:dev::p::m:i:C::gone"));
		assert_int_equal(st_edit_replace_deployment(e, dep, NULL), ST_OK);
		assert_int_equal(st_edit_commit_save(e, p2, NULL, 0, NULL, &probs, &written, &err),
				 ST_EINTEGRITY);
		assert_int_equal(written, 0);
		assert_non_null(strstr(err.message, "state edit produced an invalid snapshot"));
		assert_true(probs.count >= 1);
		assert_string_equal(probs.items[0].rule, "integrity/parent-missing");
		st_problems_clear(&probs);
		st_edit_free(e);
	}
	st_set_threads(0, NULL);
	{
		char *after, *now;
		size_t nlen;
		assert_int_equal(st_state_dump(s, NULL, &after, &len, NULL), ST_OK);
		assert_string_equal(after, before);
		now = tu_read(p2, &nlen);
		assert_int_equal(nlen, blen);
		assert_memory_equal(now, b, blen);
		free(now);
		free(after);
		assert_int_equal(tu_count_entries(dir, "tmp"), 0); /* no temporary file */
	}
	free(before);
	free(b);
	st_state_free(s);
	free(p1);
	free(p2);
	tu_rmdir(dir);
}


/* Operations chain by handle: a handle names its resource after an earlier delete shifted the
 * indexes and after its own rename; a deleted resource's handle names nothing; an operation
 * that fails leaves the session as the previous one left it. */
static void test_chain_by_handle(void **state)
{
	(void)state;
	st_state *s = tu_load("edit/base.json");
	st_edit *e;
	st_handle backup, logs, server, none = {0};
	st_error err;
	size_t n;
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_handle_at(e, 9, &backup, NULL), ST_OK);
	assert_int_equal(st_edit_handle_of(e, "urn:pulumi:dev::shop::aws:cloudwatch/logGroup:"
					      "LogGroup::logs", &logs, NULL), ST_OK);
	/* of two copies of a URN the live one */
	assert_int_equal(st_edit_handle_of(e, "urn:pulumi:dev::shop::my:index:App$aws:ec2/"
					      "instance:Instance::server", &server, NULL), ST_OK);
	assert_false(json_is_true(json_object_get(st_edit_resource(e, server), "delete")));
	st_error_clear(&err);
	assert_int_equal(st_edit_handle_of(e, "urn:pulumi:dev::shop::x:y:Z::nothing", &none, &err),
			 ST_ENOTFOUND);
	assert_int_equal(st_edit_handle_at(e, 13, &none, NULL), ST_ENOTFOUND);
	assert_null(st_edit_resource(e, none));

	assert_int_equal(st_edit_delete(e, &backup, 1, 0, &n, NULL), ST_OK);
	assert_int_equal(n, 1);
	assert_null(st_edit_resource(e, backup));
	/* logs moved from index 11 to 10; its handle follows it */
	assert_int_equal(st_edit_rename(e, logs, "logs2", NULL), ST_OK);
	assert_string_equal(st_json_str(st_edit_resource(e, logs), "urn"),
			    "urn:pulumi:dev::shop::aws:cloudwatch/logGroup:LogGroup::logs2");
	assert_ptr_equal(st_edit_resource(e, logs), json_array_get(st_state_resources(s, 0), 10));
	assert_int_equal(st_edit_set_flag(e, &logs, 1, "protect", 1, &n, NULL), ST_OK);
	assert_int_equal(n, 1);
	assert_true(json_is_true(json_object_get(st_edit_resource(e, logs), "protect")));
	/* the deleted resource's handle */
	st_error_clear(&err);
	assert_int_equal(st_edit_delete(e, &backup, 1, 0, &n, &err), ST_ENOTFOUND);
	assert_int_equal(st_edit_rename(e, backup, "b", NULL), ST_ENOTFOUND);
	/* a failing operation changes nothing */
	char *before = dump(s);
	st_error_clear(&err);
	assert_int_equal(st_edit_rename(e, logs, "audit", &err), ST_ECONFLICT);
	char *after = dump(s);
	assert_string_equal(before, after);
	free(before);
	free(after);
	st_diff d;
	assert_int_equal(st_edit_commit(e, &d, NULL, NULL), ST_OK);
	assert_int_equal(d.count, 3); /* backup and logs gone, logs2 added */
	st_diff_clear(&d);
	st_edit_free(e);
	st_state_free(s);
}

/* A rollback puts back every member of the deployment, the envelope's version and features,
 * and the absence of what the session added: the bytes are the original ones, after a commit
 * too. */
static void test_rollback_is_byte_exact(void **state)
{
	(void)state;
	st_state *s = tu_load("edit/base.json");
	char *before = dump(s), *after;
	st_edit *e;
	json_t *dep;
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_set_flag(e, (st_handle[]){tu_handle(e, 11)}, 1, "taint", 1, NULL,
					  NULL),
			 ST_OK);
	dep = json_copy(st_state_deployment(s));
	json_object_del(dep, "manifest");
	assert_int_equal(st_edit_replace_deployment(e, dep, NULL), ST_OK);
	assert_int_equal(st_edit_commit(e, NULL, NULL, NULL), ST_OK); /* version 4: taint */
	assert_int_equal(st_state_version(s), 4);
	st_edit_rollback(e);
	after = dump(s);
	assert_string_equal(before, after);
	free(after);
	/* the session goes on after a rollback */
	assert_int_equal(st_edit_delete(e, (st_handle[]){tu_handle(e, 12)}, 1, 0, NULL, NULL),
			 ST_OK);
	assert_int_equal(json_array_size(st_state_resources(s, 0)), 12);
	st_edit_rollback(e);
	after = dump(s);
	assert_string_equal(before, after);
	free(after);
	st_edit_free(e);
	free(before);
	st_state_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cow_diff_and_rollback),
		cmocka_unit_test(test_chain_by_handle),
		cmocka_unit_test(test_rollback_is_byte_exact),
		cmocka_unit_test(test_integrity_refusal_rolls_back),
		cmocka_unit_test(test_invalid_state_error_counts),
		cmocka_unit_test(test_commit_two_threads),
		cmocka_unit_test(test_commit_save),
		cmocka_unit_test(test_features_of_untouched),
		cmocka_unit_test(test_scans_two_threads),
		cmocka_unit_test(test_dependents_fixpoint),
		cmocka_unit_test(test_repair_cycle_and_determinism),
		cmocka_unit_test(test_rename_rewrites_everything),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
