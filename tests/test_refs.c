/* Pulumi's references between resources: the one walker (lib/state/refs.c), its order, its
 * rewrites and removals, the provider reference format, and every caller seeing every field. */
#include "testutil.h"

/*
 * Pulumi's reference fields: ResourceV3's parent, dependencies, propertyDependencies,
 * deletedWith and replaceWith (pkg/resource/state.go GetAllDependencies) and provider. When
 * Pulumi adds one, it goes here and into the table of lib/state/refs.c; the tests below then
 * check that every caller (delete, rename, move, the index, the integrity check) sees it.
 */
static const struct {
	st_ref_kind kind;
	const char *field;
} pulumi_fields[] = {
	{ST_REF_PARENT, "parent"},
	{ST_REF_DEPENDENCY, "dependencies"},
	{ST_REF_PROPERTY_DEPENDENCY, "propertyDependencies"},
	{ST_REF_DELETED_WITH, "deletedWith"},
	{ST_REF_REPLACE_WITH, "replaceWith"},
	{ST_REF_PROVIDER, "provider"},
};
#define NPF (sizeof(pulumi_fields) / sizeof(pulumi_fields[0]))

#define U(n) "urn:pulumi:dev::p::t:m:R::" n

static void test_fields_enumerated(void **unused)
{
	unsigned all = 0;
	(void)unused;
	for (size_t i = 0; i < NPF; i++) {
		assert_string_equal(st__ref_field_name(pulumi_fields[i].kind), pulumi_fields[i].field);
		all |= pulumi_fields[i].kind;
	}
	assert_int_equal(all, ST_REF_ALL);
	assert_int_equal(ST_REF_URNS, ST_REF_ALL & ~(unsigned)ST_REF_PROVIDER);
	/* no kind beyond the table */
	for (unsigned bit = 1; bit < 0x100; bit <<= 1)
		assert_true((bit & ST_REF_ALL) ? st__ref_field_name((st_ref_kind)bit) != NULL
					       : st__ref_field_name((st_ref_kind)bit) == NULL);
}

typedef struct seen {
	char lines[32][160];
	size_t n;
	const char *remove; /* remove references to this */
	const char *stop;   /* stop at this */
} seen;

static int record(void *p, st_ref *ref)
{
	seen *s = p;
	snprintf(s->lines[s->n++], sizeof(s->lines[0]), "%s %s %ld %s", ref->field,
		 ref->key ? ref->key : "-", ref->index, ref->value);
	if (s->stop && !strcmp(ref->value, s->stop))
		return ST_REF_STOP;
	if (s->remove && !strcmp(ref->value, s->remove))
		return ST_REF_REMOVE;
	return ST_REF_NEXT;
}

/* Members in a scrambled order; the walk's order is fixed. */
static const char resource_text[] =
	"{\"provider\": \"" U("prov") "::id\", \"replaceWith\": [\"" U("r1") "\"],"
	" \"urn\": \"" U("me") "\", \"deletedWith\": \"" U("dw") "\","
	" \"propertyDependencies\": {\"zeta\": [\"" U("z") "\"], \"alpha\": [\"" U("a1") "\", \"\","
	" 7, \"" U("a2") "\"]}, \"dependencies\": [\"" U("d1") "\", \"" U("x") "\"],"
	" \"parent\": \"" U("parent") "\", \"inputs\": {\"parent\": \"not a reference\"}}";

static void test_order_and_kinds(void **unused)
{
	json_t *r = tu_json(resource_text);
	seen s = {0};
	(void)unused;
	assert_int_equal(st__ref_foreach(r, ST_REF_ALL | ST_REF_SORTED, record, &s), 0);
	const char *want[] = {
		"parent - -1 " U("parent"),
		"dependencies - 0 " U("d1"),
		"dependencies - 1 " U("x"),
		"propertyDependencies alpha 0 " U("a1"),
		"propertyDependencies alpha 3 " U("a2"),
		"propertyDependencies zeta 0 " U("z"),
		"deletedWith - -1 " U("dw"),
		"replaceWith - 0 " U("r1"),
		"provider - -1 " U("prov") "::id",
	};
	assert_int_equal(s.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < s.n; i++)
		assert_string_equal(s.lines[i], want[i]);
	/* properties as held without ST_REF_SORTED; a mask selects kinds */
	memset(&s, 0, sizeof(s));
	assert_int_equal(st__ref_foreach(r, ST_REF_PROPERTY_DEPENDENCY | ST_REF_PROVIDER, record,
					 &s),
			 0);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.lines[0], "propertyDependencies zeta 0 " U("z"));
	assert_string_equal(s.lines[3], "provider - -1 " U("prov") "::id");
	/* stop */
	memset(&s, 0, sizeof(s));
	s.stop = U("x");
	assert_int_equal(st__ref_foreach(r, ST_REF_ALL, record, &s), 1);
	assert_int_equal(s.n, 3);
	json_decref(r);
}

/* The walk over fields the caller found (the integrity check's): found[k] is the member
 * for kind 1u << k; the same references in the same order as st__ref_foreach. */
static void test_foreach_found(void **unused)
{
	json_t *r = tu_json(resource_text), *found[ST_REF_NFIELDS];
	seen a = {0}, b = {0};
	(void)unused;
	for (size_t k = 0; k < ST_REF_NFIELDS; k++)
		found[k] = json_object_get(r, st__ref_field_name((st_ref_kind)(1u << k)));
	assert_int_equal(st__ref_foreach(r, ST_REF_ALL | ST_REF_SORTED, record, &a), 0);
	assert_int_equal(st__ref_foreach_found(r, found, ST_REF_ALL | ST_REF_SORTED, record, &b),
			 0);
	assert_int_equal(a.n, 9);
	assert_int_equal(b.n, a.n);
	for (size_t i = 0; i < a.n; i++)
		assert_string_equal(b.lines[i], a.lines[i]);
	/* a field not given is not walked, whatever r holds */
	memset(&b, 0, sizeof(b));
	found[0] = NULL;
	assert_int_equal(st__ref_foreach_found(r, found, ST_REF_PARENT | ST_REF_DEPENDENCY,
					       record, &b),
			 0);
	assert_int_equal(b.n, 2);
	assert_string_equal(b.lines[0], "dependencies - 0 " U("d1"));
	json_decref(r);
}

static void test_remove_and_set(void **unused)
{
	json_t *r = tu_json(resource_text), *orig = json_deep_copy(r), *c;
	seen s = {0};
	(void)unused;
	/* removal on a copy: the original is untouched */
	c = st__ref_copy(r);
	assert_non_null(c);
	s.remove = U("x");
	assert_int_equal(st__ref_foreach(c, ST_REF_ALL, record, &s), 0);
	assert_true(json_equal(r, orig));
	assert_int_equal(json_array_size(json_object_get(c, "dependencies")), 1);
	/* an emptied dependencies or replaceWith list goes; a property's list stays */
	memset(&s, 0, sizeof(s));
	s.remove = U("d1");
	st__ref_foreach(c, ST_REF_ALL, record, &s);
	assert_null(json_object_get(c, "dependencies"));
	memset(&s, 0, sizeof(s));
	s.remove = U("z");
	st__ref_foreach(c, ST_REF_ALL, record, &s);
	assert_int_equal(json_array_size(json_object_get(json_object_get(c, "propertyDependencies"),
							 "zeta")),
			 0);
	assert_non_null(json_object_get(json_object_get(c, "propertyDependencies"), "zeta"));
	memset(&s, 0, sizeof(s));
	s.remove = U("dw");
	st__ref_foreach(c, ST_REF_ALL, record, &s);
	assert_null(json_object_get(c, "deletedWith"));
	json_decref(c);
	/* rewriting through maps */
	c = st__ref_copy(r);
	st_strmap urns, refs;
	int created;
	st_strmap_init(&urns);
	st_strmap_init(&refs);
	st_strmap_put(&urns, U("x"), &created)->p = (void *)U("y");
	st_strmap_put(&urns, U("parent"), &created)->p = (void *)U("p2");
	st_strmap_put(&refs, U("prov") "::id", &created)->p = (void *)(U("prov2") "::id");
	size_t n = 0;
	assert_int_equal(st__ref_rewrite(c, &urns, &refs, &n), ST_OK);
	assert_int_equal(n, 3);
	assert_string_equal(st_json_str(c, "parent"), U("p2"));
	assert_string_equal(json_string_value(json_array_get(json_object_get(c, "dependencies"), 1)),
			    U("y"));
	assert_string_equal(st_json_str(c, "provider"), U("prov2") "::id");
	assert_true(json_equal(r, orig));
	/* without a provider map the provider is not looked at */
	n = 0;
	assert_int_equal(st__ref_rewrite(c, &refs, NULL, &n), ST_OK);
	assert_int_equal(n, 0);
	assert_true(st__refers(c, &urns, NULL, NULL, NULL) == 0); /* all rewritten */
	assert_true(st__refers(r, &urns, NULL, NULL, NULL) == 1);
	assert_true(st__refers(r, &refs, NULL, NULL, NULL) == 0);
	assert_true(st__refers(r, &urns, NULL, &refs, NULL) == 1);
	st_strmap_free(&urns);
	st_strmap_free(&refs);
	json_decref(c);
	json_decref(orig);
	json_decref(r);
}

static void test_provider_refs(void **unused)
{
	(void)unused;
	char *a = st__provider_ref("urn:x", "id1"), *b = st__provider_ref("urn:x", ""),
	     *c = st__provider_ref("urn:x", NULL);
	assert_string_equal(a, "urn:x::id1");
	assert_string_equal(b, "urn:x::" ST_UNKNOWN_ID);
	assert_string_equal(c, b);
	assert_int_equal(st__provider_ref_urn_len(a, strlen(a)), 5);
	assert_int_equal(st__provider_ref_urn_len("a::b::c", 7), 4);
	assert_int_equal(st__provider_ref_urn_len("nothing", 7), 0);
	json_t *p = tu_json("{\"urn\": \"urn:pulumi:d::p::pulumi:providers:aws::default\","
			    " \"type\": \"pulumi:providers:aws\", \"id\": \"9\"}");
	json_t *q = tu_json("{\"urn\": \"u\", \"type\": \"aws:s3:Bucket\", \"id\": \"9\"}");
	char *pr = st__provider_ref_of(p);
	assert_string_equal(pr, "urn:pulumi:d::p::pulumi:providers:aws::default::9");
	assert_null(st__provider_ref_of(q));
	free(pr);
	json_decref(p);
	json_decref(q);
	free(a);
	free(b);
	free(c);
}


/* A state of three resources (the root stack, A, B) where B refers to A through `field` only;
 * with `b_first`, B comes before A (so the reference points forwards). */
static st_state *state_with(size_t f, int b_first)
{
	const char *field = pulumi_fields[f].field;
	int prov = pulumi_fields[f].kind == ST_REF_PROVIDER;
	const char *aurn = prov ? "urn:pulumi:dev::p::pulumi:providers:t::a" : U("a");
	char ref[256], a[512], b[512], text[2048];
	json_t *bj;
	if (prov)
		snprintf(ref, sizeof(ref), "\"%s::pid\"", aurn);
	else if (pulumi_fields[f].kind == ST_REF_PARENT || pulumi_fields[f].kind == ST_REF_DELETED_WITH)
		snprintf(ref, sizeof(ref), "\"%s\"", aurn);
	else if (pulumi_fields[f].kind == ST_REF_PROPERTY_DEPENDENCY)
		snprintf(ref, sizeof(ref), "{\"k\": [\"%s\"]}", aurn);
	else
		snprintf(ref, sizeof(ref), "[\"%s\"]", aurn);
	snprintf(a, sizeof(a),
		 "{\"urn\": \"%s\", \"custom\": true, \"id\": \"%s\", \"type\": \"%s\","
		 " \"parent\": \"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev\"}",
		 aurn, prov ? "pid" : "ida", prov ? "pulumi:providers:t" : "t:m:R");
	bj = tu_json("{}");
	json_object_set_new(bj, "urn", json_string(pulumi_fields[f].kind == ST_REF_PARENT
							   ? "urn:pulumi:dev::p::t:m:R$t:m:R::b"
							   : U("b")));
	json_object_set_new(bj, "custom", json_true());
	json_object_set_new(bj, "id", json_string("idb"));
	json_object_set_new(bj, "type", json_string("t:m:R"));
	if (pulumi_fields[f].kind != ST_REF_PARENT)
		json_object_set_new(bj, "parent",
				    json_string("urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev"));
	json_object_set_new(bj, field, tu_json(ref));
	char *bt = json_dumps(bj, JSON_COMPACT);
	snprintf(b, sizeof(b), "%s", bt);
	free(bt);
	json_decref(bj);
	snprintf(text, sizeof(text),
		 "{\"version\": 3, \"deployment\": {\"manifest\": {\"time\": "
		 "\"2024-01-01T00:00:00Z\", \"magic\": \"\", \"version\": \"\"}, \"resources\": ["
		 "{\"urn\": \"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev\", \"custom\": false,"
		 " \"type\": \"pulumi:pulumi:Stack\"}, %s, %s]}}",
		 b_first ? b : a, b_first ? a : b);
	st_state *s = NULL;
	st_error err;
	st_error_clear(&err);
	if (st_state_load_buffer(&s, text, strlen(text), "test", NULL, &err) != ST_OK) {
		fprintf(stderr, "%s\n%s\n", text, err.message);
		fail();
	}
	return s;
}

static int has_rule(const st_problems *p, const char *prefix)
{
	for (size_t i = 0; i < p->count; i++)
		if (!strncmp(p->items[i].rule, prefix, strlen(prefix)))
			return 1;
	return 0;
}

/* Delete refuses for every field, rename rewrites every field, the integrity check sees every
 * field point forwards, repair orders by every field. */
static void test_every_caller_sees_every_field(void **unused)
{
	(void)unused;
	for (size_t f = 0; f < NPF; f++) {
		st_state *s = state_with(f, 0);
		st_edit *e;
		st_error err;
		size_t a = 1, deleted;
		st_problems p = {0};
		const char *field = pulumi_fields[f].field;
		st_error_clear(&err);
		assert_int_equal(st_integrity_check(s, &p, NULL), ST_OK);
		assert_int_equal(p.errors, 0);
		st_problems_clear(&p);
		assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
		if (st_edit_delete(e, (st_handle[]){tu_handle(e, a)}, 1, 0, &deleted, &err) !=
		    ST_EREFUSED) {
			fprintf(stderr, "delete misses %s\n", field);
			fail();
		}
		assert_int_equal(st_edit_rename(e, tu_handle(e, a), "a2", NULL), ST_OK);
		json_t *b = json_array_get(st_state_resources(s, 0), 2);
		char *text = json_dumps(json_object_get(b, field), JSON_ENCODE_ANY);
		if (!strstr(text, "::a2")) {
			fprintf(stderr, "rename misses %s: %s\n", field, text);
			fail();
		}
		free(text);
		st_edit_rollback(e);
		st_edit_free(e);
		st_state_free(s);

		s = state_with(f, 1);
		assert_int_equal(st_integrity_check(s, &p, NULL), ST_OK);
		if (!has_rule(&p, "integrity/")) {
			fprintf(stderr, "the integrity check misses %s\n", field);
			fail();
		}
		st_problems_clear(&p);
		assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
		assert_int_equal(st_edit_repair(e, NULL), ST_OK);
		json_t *first = json_array_get(st_state_resources(s, 0), 1);
		assert_true(strstr(st_json_str(first, "urn"), "::a") != NULL);
		st_edit_free(e);
		st_state_free(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields_enumerated),
		cmocka_unit_test(test_order_and_kinds),
		cmocka_unit_test(test_foreach_found),
		cmocka_unit_test(test_remove_and_set),
		cmocka_unit_test(test_provider_refs),
		cmocka_unit_test(test_every_caller_sees_every_field),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
