/*
 * Validation rules. fixtures/validate/ holds one state per rule, each breaking exactly that
 * rule; expected.txt lists the exact problems (severity, rule, JSON Pointer) of each. Also: the
 * real Pulumi checkpoints (which fail ordering), user schemas, import files, the library API.
 */
#include "testutil.h"

#include <dirent.h>

static st_schema *builtin;

static int setup(void **state)
{
	(void)state;
	return st_schema_builtin(&builtin, NULL);
}

static int teardown(void **state)
{
	(void)state;
	st_schema_free(builtin);
	return 0;
}

static st_state *load(const char *rel)
{
	char *p = tu_fixture(rel);
	st_state *s = NULL;
	st_error err;
	st_error_clear(&err);
	if (st_state_load_file(&s, p, NULL, &err) != ST_OK) {
		fprintf(stderr, "%s: %s\n", p, err.message);
		fail();
	}
	free(p);
	return s;
}

static void problems_of(st_state *s, st_problems *out)
{
	st_validate_opts o = ST_VALIDATE_OPTS_INIT;
	o.schema = builtin;
	assert_int_equal(st_validate(s, &o, out, NULL), ST_OK);
}

/* As `statetool validate` does: a state that does not load reports what the reader and the
 * decoder found (*s is then NULL). */
static void problems_of_file(const char *rel, st_state **s, st_problems *out)
{
	char *p = tu_fixture(rel);
	json_t *doc = NULL;
	st_problems lp = {0};
	st_style style;
	st_error err;
	st_error_clear(&err);
	*s = NULL;
	assert_int_equal(st_json_load_file(&doc, p, 0, NULL, &style, &lp, &err), ST_OK);
	if (st_state_from_json(s, doc, &style, &lp, p, &err) == ST_OK) {
		problems_of(*s, out);
	} else {
		assert_true(lp.errors > 0); /* a load failure is explained by its problems */
		for (size_t i = 0; i < lp.count; i++)
			st_problems_add(out, lp.items[i].severity, lp.items[i].rule,
					lp.items[i].pointer, lp.items[i].urn, "%s",
					lp.items[i].message);
	}
	st_problems_clear(&lp);
	free(p);
}

static void test_rule_fixtures(void **state)
{
	(void)state;
	char *exp_path = tu_fixture("validate/expected.txt");
	FILE *f = fopen(exp_path, "r");
	char line[1024], current[256] = "";
	char *want[16], *got[64];
	size_t nwant = 0, ncases = 0;
	assert_non_null(f);

	for (int more = 1; more;) {
		char name[256] = "", sev[32], rule[128], ptr[512];
		more = fgets(line, sizeof(line), f) != NULL;
		if (more && (line[0] == '#' || sscanf(line, "%255s %31s %127s %511s", name, sev, rule,
						      ptr) != 4))
			continue;
		if (current[0] && (!more || strcmp(name, current))) {
			/* Compare the finished case. */
			char *rel = st_asprintf("validate/%s.json", current);
			st_state *s = NULL;
			st_problems p = {0};
			problems_of_file(rel, &s, &p);
			size_t ngot = 0;
			for (size_t i = 0; i < p.count && ngot < 64; i++)
				got[ngot++] = st_asprintf("%s %s %s",
							  p.items[i].severity == ST_SEV_ERROR
								  ? "error" : "warning",
							  p.items[i].rule, p.items[i].pointer);
			int same = ngot == nwant;
			for (size_t i = 0; same && i < nwant; i++) {
				int found = 0;
				for (size_t k = 0; k < ngot; k++)
					if (!strcmp(want[i], got[k]))
						found = 1;
				same = found;
			}
			if (!same) {
				fprintf(stderr, "case %s: expected %zu problems:\n", current, nwant);
				for (size_t i = 0; i < nwant; i++)
					fprintf(stderr, "  %s\n", want[i]);
				fprintf(stderr, "got %zu:\n", ngot);
				for (size_t i = 0; i < ngot; i++)
					fprintf(stderr, "  %s (%s)\n", got[i], p.items[i].message);
				fail();
			}
			/* every resource-level problem names its resource's URN */
			for (size_t i = 0; i < p.count; i++)
				if (strstr(p.items[i].pointer, "/resources/") &&
				    strcmp(p.items[i].rule, "integrity/missing-urn") &&
				    strcmp(p.items[i].rule, "urn/invalid"))
					assert_non_null(p.items[i].urn);
			for (size_t i = 0; i < ngot; i++)
				free(got[i]);
			for (size_t i = 0; i < nwant; i++)
				free(want[i]);
			nwant = 0;
			ncases++;
			st_problems_clear(&p);
			st_state_free(s);
			free(rel);
		}
		if (!more)
			break;
		snprintf(current, sizeof(current), "%s", name);
		if (strcmp(sev, "-"))
			want[nwant++] = st_asprintf("%s %s %s", sev, rule, ptr);
	}
	fclose(f);
	free(exp_path);
	assert_true(ncases >= 45);
}

/* Pulumi's own checkpoints put parents after children: the report says so, by rule, and
 * nothing else is an error. */
static void test_pulumi_checkpoints_fail_ordering(void **state)
{
	(void)state;
	static const struct {
		const char *file;
		size_t order_errors;
	} cases[] = {{"pulumi/checkpoint-v0.json", 23}, {"pulumi/checkpoint-v1.json", 23},
		     {"pulumi/checkpoint-v3.json", 23}, {"pulumi/checkpoint-secrets.json", 23},
		     {"pulumi/checkpoint-v4.json", 23}, {"pulumi/crawler.json", 23},
		     {"pulumi/todo.json", 40}};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		st_state *s = load(cases[k].file);
		st_problems p = {0};
		problems_of(s, &p);
		size_t order = 0;
		for (size_t i = 0; i < p.count; i++) {
			if (p.items[i].severity != ST_SEV_ERROR)
				continue;
			assert_string_equal(p.items[i].rule, "integrity/parent-order");
			assert_non_null(strstr(p.items[i].message, "'s parent "));
			assert_non_null(strstr(p.items[i].message, " comes after it"));
			order++;
		}
		assert_int_equal(order, cases[k].order_errors);
		assert_int_equal(p.errors, cases[k].order_errors);
		st_problems_clear(&p);
		st_state_free(s);
	}
	/* The first one, exactly, after the warning that its provider is Pulumi's test one. */
	st_state *s = load("pulumi/checkpoint-v3.json");
	st_problems p = {0};
	problems_of(s, &p);
	assert_string_equal(p.items[0].rule, "secrets/test-provider");
	assert_string_equal(p.items[0].pointer, "/checkpoint/latest/secrets_providers/type");
	assert_string_equal(p.items[1].message,
			    "child resource urn:pulumi:foo::countdown::aws:sns/topic:Topic::countDown's "
			    "parent urn:pulumi:foo::countdown::cloud:topic:Topic::countDown comes after "
			    "it");
	assert_string_equal(p.items[1].pointer, "/checkpoint/latest/resources/0/parent");
	assert_string_equal(p.items[1].urn,
			    "urn:pulumi:foo::countdown::aws:sns/topic:Topic::countDown");
	st_problems_clear(&p);
	st_state_free(s);
}

static void test_user_schemas(void **state)
{
	(void)state;
	st_state *s = load("pulumi/valid-deployment-v3.json");
	st_schema *tags;
	st_problems p = {0};
	st_validate_opts o = ST_VALIDATE_OPTS_INIT;
	json_t *doc = tu_json("{\"if\":{\"properties\":{\"custom\":{\"const\":true},\"type\":{\"not\":"
			      "{\"pattern\":\"^pulumi:providers:\"}}}},\"then\":{\"properties\":"
			      "{\"inputs\":{\"required\":[\"tags\"]}},\"required\":[\"inputs\"]}}");
	assert_int_equal(st_schema_new(&tags, NULL), ST_OK);
	assert_int_equal(st_schema_add(tags, doc, NULL, NULL), ST_OK);
	json_decref(doc);
	o.schema = builtin;
	o.resource_schemas = &tags;
	o.nresource_schemas = 1;
	assert_int_equal(st_validate(s, &o, &p, NULL), ST_OK);
	assert_int_equal(p.count, 0); /* the bucket has tags */
	json_object_del(json_object_get(json_array_get(st_state_resources(s, 0), 3), "inputs"),
			"tags");
	assert_int_equal(st_validate(s, &o, &p, NULL), ST_OK);
	assert_int_equal(p.count, 1);
	assert_string_equal(p.items[0].rule, "resource-schema/required");
	assert_string_equal(p.items[0].pointer, "/deployment/resources/3/inputs");
	assert_string_equal(p.items[0].message, "missing required field 'tags'");
	assert_string_equal(p.items[0].urn,
			    "urn:pulumi:dev::proj::my:index:Comp$aws:s3/bucket:Bucket::b");
	st_problems_clear(&p);
	st_schema_free(tags);
	st_state_free(s);
}

static void test_import_file_schema(void **state)
{
	(void)state;
	st_problems p = {0};
	json_t *good = tu_json("{\"nameTable\":{\"c\":\"urn:pulumi:dev::p::a:b:C::c\"},\"resources\":"
			       "[{\"type\":\"aws:s3/bucket:Bucket\",\"name\":\"b\",\"id\":\"b-1\","
			       "\"parent\":\"c\",\"version\":\"6.0.0\",\"properties\":[\"bucket\"]}]}");
	json_t *bad = tu_json("{\"resources\":[{\"type\":1,\"name\":\"b\",\"id\":\"x\",\"bogus\":1}]}");
	assert_int_equal(st_validate_import_file(good, builtin, &p, NULL), ST_OK);
	assert_int_equal(p.count, 0);
	assert_int_equal(st_validate_import_file(bad, builtin, &p, NULL), ST_OK);
	assert_int_equal(p.count, 1); /* Pulumi cannot decode it: that is all */
	assert_string_equal(p.items[0].rule, "decode/type");
	assert_string_equal(p.items[0].pointer, "/resources/0/type");
	assert_string_equal(p.items[0].message, "json: cannot unmarshal number into Go struct field "
						"importSpec.resources.type of type tokens.Type");
	st_problems_clear(&p);
	json_object_set_new(json_array_get(json_object_get(bad, "resources"), 0), "type",
			    json_string("a:b:C"));
	assert_int_equal(st_validate_import_file(bad, builtin, &p, NULL), ST_OK);
	assert_int_equal(p.count, 1);
	assert_string_equal(p.items[0].rule, "schema/additionalProperties");
	assert_int_equal(p.items[0].severity, ST_SEV_WARNING);
	st_problems_clear(&p);
	json_decref(good);
	json_decref(bad);
}

/* On a big state the schemas and the integrity rules run on two threads: the problems are the
 * same, in the same order, as on one. Each rule fixture gets 600 resources more (after its own,
 * so its problems keep their pointers) and one more problem among them. */
/* The same problems in the same order: counts, severities, rules, pointers, messages, URNs. */
static void assert_same_problems(const st_problems *one, const st_problems *two)
{
	assert_int_equal(one->count, two->count);
	assert_int_equal(one->errors, two->errors);
	assert_int_equal(one->warnings, two->warnings);
	for (size_t i = 0; i < one->count; i++) {
		assert_int_equal(one->items[i].severity, two->items[i].severity);
		assert_string_equal(one->items[i].rule, two->items[i].rule);
		assert_string_equal(one->items[i].pointer, two->items[i].pointer);
		assert_string_equal(one->items[i].message, two->items[i].message);
		if (one->items[i].urn || two->items[i].urn)
			assert_string_equal(one->items[i].urn, two->items[i].urn);
	}
}

/* A plain component resource, f-i, to make a fixture big. */
static json_t *filler(int i)
{
	char *u = NULL;
	json_t *r;
	assert_true(asprintf(&u, "urn:pulumi:dev::proj::pkg:index:Filler::f-%d", i) > 0);
	r = json_pack("{s:s, s:b, s:s, s:{s:s}}", "urn", u, "custom", 0, "type",
		      "pkg:index:Filler", "inputs", "k", "v");
	free(u);
	assert_non_null(r);
	return r;
}

static void test_two_threads_same_problems(void **state)
{
	(void)state;
	char *dir = tu_fixture("validate");
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		char rel[512];
		st_state *s;
		json_t *res;
		st_problems one = {0}, two = {0};
		st_validate_opts o = ST_VALIDATE_OPTS_INIT;
		if (!strstr(de->d_name, ".json"))
			continue;
		snprintf(rel, sizeof(rel), "validate/%s", de->d_name);
		problems_of_file(rel, &s, &one);
		st_problems_clear(&one);
		if (!s)
			continue; /* it does not load: nothing to check on two threads */
		res = st_state_resources(s, 1);
		if (!res) {
			st_state_free(s);
			continue;
		}
		for (int i = 0; i < 600; i++) {
			json_t *r = filler(i);
			if (i == 300) /* a dependency on a missing resource */
				json_object_set_new(r, "dependencies", json_pack("[s]", "urn:nope"));
			json_array_append_new(res, r);
		}
		o.schema = builtin;
		st_set_threads(1, NULL);
		unsigned long runs = st__two_count(ST__T_VALIDATE);
		assert_int_equal(st_validate(s, &o, &one, NULL), ST_OK);
		assert_int_equal(st__two_count(ST__T_VALIDATE), runs);
		st_set_threads(2, NULL);
		assert_int_equal(st_validate(s, &o, &two, NULL), ST_OK);
		st_set_threads(0, NULL);
		/* the schemas ran on the second thread */
		assert_int_equal(st__two_count(ST__T_VALIDATE), runs + 1);
		assert_true(one.count >= 1); /* the fixture's own, if any, and the filler's */
		assert_same_problems(&one, &two);
		st_problems_clear(&one);
		st_problems_clear(&two);
		st_state_free(s);
		n++;
	}
	closedir(d);
	free(dir);
	assert_true(n >= 30);
}

/* A big state's property walk runs on a second thread: the same problems in the same order as
 * one thread, with property problems and reference problems of the same resources (and of
 * resources around them) interleaved, in both halves, and the ciphertext count carried on to
 * the pending operations' resources. */
static void test_property_walk_two_threads(void **state)
{
	static const char *const cases[] = {"secrets-no-provider", "secrets-malformed",
					     "secrets-plaintext", "secrets-ciphertext-format",
					     "unknown-signature", "valid"};
	(void)state;
	for (size_t t = 0; t < sizeof(cases) / sizeof(cases[0]); t++) {
		char rel[256];
		st_state *s;
		json_t *res;
		st_problems one = {0}, two = {0};
		st_validate_opts o = ST_VALIDATE_OPTS_INIT;
		size_t walk_problems = 0;
		snprintf(rel, sizeof(rel), "validate/%s.json", cases[t]);
		s = load(rel);
		res = st_state_resources(s, 1);
		for (int i = 0; i < 6000; i++) {
			json_t *r = filler(i);
			if (i % 1500 == 7) /* a property problem and reference problems around it */
				json_object_set_new(
					r, "inputs",
					json_pack("{s:{s:s, s:s}, s:[{s:s}]}", "pw",
						  "4dabf18193072939515e22adb298388d",
						  "1b47061264138c4ac30d75fd1eb44270", "plaintext", "x",
						  "odd", "4dabf18193072939515e22adb298388d", "nope"));
			if (i % 1500 == 7 || i % 1500 == 8)
				json_object_set_new(r, "dependencies", json_pack("[s]", "urn:nope"));
			if (i % 1500 == 7)
				json_object_set_new(r, "parent", json_string("urn:missing"));
			json_array_append_new(res, r);
		}
		o.skip_schema = 1;
		st_set_threads(1, NULL);
		unsigned long runs = st__two_count(ST__T_INTEGRITY);
		assert_int_equal(st_validate(s, &o, &one, NULL), ST_OK);
		assert_int_equal(st__two_count(ST__T_INTEGRITY), runs);
		st_set_threads(2, NULL);
		assert_int_equal(st_validate(s, &o, &two, NULL), ST_OK);
		st_set_threads(0, NULL);
		/* the walk ran on the second thread */
		assert_int_equal(st__two_count(ST__T_INTEGRITY), runs + 1);
		assert_same_problems(&one, &two);
		for (size_t i = 0; i < one.count; i++) {
			if (!strcmp(one.items[i].rule, "secrets/plaintext") ||
			    !strcmp(one.items[i].rule, "property/unknown-signature"))
				walk_problems++;
		}
		/* four filler resources with two walk problems each, and 3 x 4 reference ones */
		assert_true(walk_problems >= 8);
		assert_true(one.errors >= 4 * 3);
		st_problems_clear(&one);
		st_problems_clear(&two);
		st_state_free(s);
	}
}

/* Where Go's decoder takes a null for the zero value (st__go_null_zero, behind schema/null):
 * the Go type through both envelopes and their raw members, case-folded keys, slices and
 * maps; not an interface{}, a json.RawMessage, a semver.Version, a value that is not null or a
 * place Go's types do not reach. */
static void test_null_zero(void **state)
{
	json_t *exp = json_loads("{\"version\": 4, \"Features\": null, \"deployment\": {"
				 "\"manifest\": {\"time\": null}, \"secrets_providers\": "
				 "{\"type\": null, \"state\": null}, \"resources\": [{\"urn\": null,"
				 " \"inputs\": {\"x\": null}, \"propertyDependencies\": {\"a/b\": "
				 "[null]}, \"future\": null, \"hideDiff\": [null]}], \"snippets\": "
				 "[{\"descriptor\": {\"parameterization\": {\"version\": null}}}]}}",
				 0, NULL);
	json_t *cp = json_loads("{\"version\": 2, \"checkpoint\": {\"latest\": {"
				"\"resources\": [{\"dependencies\": [null]}]}}}",
				0, NULL);
	static const struct {
		const char *ptr, *go;
	} want[] = {
		{"/Features", "[]string"},
		{"/deployment/manifest/time", "time.Time"},
		{"/deployment/secrets_providers/type", "string"},
		{"/deployment/resources/0/urn", "urn.URN"},
		{"/deployment/resources/0/propertyDependencies/a~1b/0", "urn.URN"},
		{"/deployment/resources/0/hideDiff/0", "resource.PropertyPath"},
		{"/deployment/secrets_providers/state", NULL}, /* json.RawMessage */
		{"/deployment/resources/0/inputs/x", NULL},    /* interface{} */
		{"/deployment/resources/0/future", NULL},      /* no such field */
		{"/deployment/snippets/0/descriptor/parameterization/version", NULL}, /* semver */
		{"/deployment/manifest", NULL},                /* not a null */
		{"/deployment/resources/x/urn", NULL},
		{"/deployment/resources/1/urn", NULL},
	};
	(void)state;
	assert_non_null(exp);
	assert_non_null(cp);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const char *go = st__go_null_zero(exp, ST__G_UNTYPED, 4, want[i].ptr);
		if (!want[i].go)
			assert_null(go);
		else
			assert_string_equal(go, want[i].go);
	}
	/* version 2: the checkpoint's raw member decoded as a CheckpointV2 */
	assert_string_equal(st__go_null_zero(cp, ST__G_VERSIONED, 2,
					     "/checkpoint/latest/resources/0/dependencies/0"),
			    "urn.URN");
	json_decref(exp);
	json_decref(cp);
}

/* The secrets provider as Pulumi constructs it on load, with no ciphertext in the state:
 * Pulumi's messages (OfType, the providers' json.Unmarshal of their state, the passphrase
 * salt's form); what needs a passphrase or a login to find out is not judged. */
static void test_secrets_provider(void **state)
{
	static const struct {
		const char *sp, *msg; /* msg NULL: no problem */
	} cases[] = {
		{"{\"type\":\"foo\"}", "no known secrets provider for type \"foo\""},
		{"{\"type\":\"Passphrase\",\"state\":{}}",
		 "no known secrets provider for type \"Passphrase\""},
		{"{\"type\":\"passphrase\"}", "constructing secrets manager of type \"passphrase\": "
					      "unmarshalling state: unexpected end of JSON input"},
		{"{\"type\":\"passphrase\",\"state\":null}",
		 "constructing secrets manager of type \"passphrase\": constructing secrets "
		 "manager: malformed state value"},
		{"{\"type\":\"passphrase\",\"state\":[1]}",
		 "constructing secrets manager of type \"passphrase\": unmarshalling state: json: "
		 "cannot unmarshal array into Go value of type passphrase.localSecretsManagerState"},
		{"{\"type\":\"passphrase\",\"state\":{\"SALT\":5}}",
		 "constructing secrets manager of type \"passphrase\": unmarshalling state: json: "
		 "cannot unmarshal number into Go struct field localSecretsManagerState.salt of type "
		 "string"},
		{"{\"type\":\"passphrase\",\"state\":{\"salt\":\"v2:AAAA:x\"}}",
		 "constructing secrets manager of type \"passphrase\": constructing secrets "
		 "manager: unknown state version"},
		{"{\"type\":\"passphrase\",\"state\":{\"salt\":\"v1:AA!A:x\"}}",
		 "constructing secrets manager of type \"passphrase\": constructing secrets "
		 "manager: illegal base64 data at input byte 2"},
		/* the last key Go folds to salt wins; a later null leaves it */
		{"{\"type\":\"passphrase\",\"state\":{\"salt\":\"x\",\"Salt\":\"v1:AAAA:y\","
		 "\"SALT\":null}}",
		 NULL},
		{"{\"type\":\"service\",\"state\":\"u\"}",
		 "constructing secrets manager of type \"service\": unmarshalling state: json: "
		 "cannot unmarshal string into Go value of type "
		 "service.serviceSecretsManagerState"},
		{"{\"type\":\"cloud\",\"state\":{\"url\":\"awskms://k\"}}", NULL},
		{"{\"type\":\"\"}", NULL},
	};
	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char *text = st_asprintf("{\"version\":3,\"deployment\":{\"manifest\":{\"time\":"
					 "\"2024-01-02T03:04:05Z\",\"magic\":\"\",\"version\":\"\"},"
					 "\"secrets_providers\":%s}}",
					 cases[k].sp);
		st_state *s = NULL;
		st_problems p = {0};
		st_validate_opts o = ST_VALIDATE_OPTS_INIT;
		o.skip_schema = 1;
		assert_int_equal(st_state_load_buffer(&s, text, strlen(text), "t", NULL, NULL),
				 ST_OK);
		assert_int_equal(st_validate(s, &o, &p, NULL), ST_OK);
		if (!cases[k].msg) {
			assert_int_equal(p.count, 0);
		} else {
			assert_int_equal(p.count, 1);
			assert_string_equal(p.items[0].rule, "secrets/provider");
			assert_string_equal(p.items[0].message, cases[k].msg);
		}
		st_problems_clear(&p);
		st_state_free(s);
		free(text);
	}
}

/* The errors come in the order Pulumi's load meets them: DeserializeResource's (any resource)
 * before VerifyIntegrity's, with DeserializeResource's words; on one thread and on two. */
static void test_load_order(void **state)
{
	static const char *const want[] = {"error integrity/missing-type /deployment/resources/3",
					   "error integrity/parent-order /deployment/resources/2/parent",
					   "error integrity/dependency-order "
					   "/deployment/resources/2/dependencies/0"};
	(void)state;
	for (int threads = 1; threads <= 2; threads++) {
		st_state *s = load("validate/order-deser-first.json");
		st_problems p = {0};
		st_set_threads(threads, NULL);
		if (threads == 2) /* a big state: the schemas beside the integrity rules */
			for (int i = 0; i < 600; i++)
				json_array_append_new(st_state_resources(s, 1), filler(i));
		unsigned long runs = st__two_count(ST__T_VALIDATE);
		problems_of(s, &p);
		st_set_threads(0, NULL);
		assert_int_equal(st__two_count(ST__T_VALIDATE), runs + (threads == 2));
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			char *got = st_asprintf("%s %s %s",
						p.items[i].severity == ST_SEV_ERROR ? "error" : "warning",
						p.items[i].rule, p.items[i].pointer);
			assert_string_equal(got, want[i]);
			free(got);
		}
		st_problems_clear(&p);
		st_state_free(s);
	}
	st_state *s = load("validate/missing-urn.json");
	st_problems p = {0};
	problems_of(s, &p);
	assert_int_equal(p.count, 1);
	assert_string_equal(p.items[0].message, "resource missing required 'urn' field");
	assert_string_equal(p.items[0].pointer, "/deployment/resources/3");
	st_problems_clear(&p);
	st_state_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_fixtures),
		cmocka_unit_test(test_pulumi_checkpoints_fail_ordering),
		cmocka_unit_test(test_user_schemas),
		cmocka_unit_test(test_import_file_schema),
		cmocka_unit_test(test_two_threads_same_problems),
		cmocka_unit_test(test_property_walk_two_threads),
		cmocka_unit_test(test_null_zero),
		cmocka_unit_test(test_secrets_provider),
		cmocka_unit_test(test_load_order),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
