/* Loading, saving, envelopes, versions, features and migration of deployment states. */
#include "testutil.h"

static const char *const pulumi_written[] = {"checkpoint-v0.json", "checkpoint-v3.json",
					     "checkpoint-secrets.json", "crawler.json", "todo.json",
					     NULL};

static char *tu_fixture_p(const char *name)
{
	char *r = NULL;
	if (asprintf(&r, "pulumi/%s", name) < 0)
		return NULL;
	char *p = tu_fixture(r);
	free(r);
	return p;
}

static st_state *load_fixture(const char *name)
{
	char *p = tu_fixture_p(name);
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

static st_state *load_text(const char *text, int want, const char *want_msg)
{
	st_state *s = NULL;
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st_state_load_buffer(&s, text, strlen(text), "t.json", NULL, &err), want);
	if (want_msg && !strstr(err.message, want_msg)) {
		fprintf(stderr, "message '%s' lacks '%s'\n", err.message, want_msg);
		fail();
	}
	return s;
}

/* Files Pulumi's writer produced come back byte for byte, indented and via compact. */
static void test_round_trip_pulumi_files(void **state)
{
	(void)state;
	for (int i = 0; pulumi_written[i]; i++) {
		char *p = tu_fixture_p(pulumi_written[i]);
		size_t len, olen, clen;
		char *orig = tu_read(p, &len), *out = NULL, *compact = NULL;
		st_state *s = load_fixture(pulumi_written[i]), *c = NULL;
		st_style st;

		assert_int_equal(st_state_dump(s, NULL, &out, &olen, NULL), ST_OK);
		assert_int_equal(olen, len);
		assert_memory_equal(out, orig, len);
		/* the compact form, then back to the original's style */
		st = *st_state_style(s);
		st.compact = 1;
		st.trailing_newline = 0;
		assert_int_equal(st_state_dump(s, &st, &compact, &clen, NULL), ST_OK);
		assert_null(memchr(compact, '\n', clen));
		assert_int_equal(st_state_load_buffer(&c, compact, clen, "c", NULL, NULL), ST_OK);
		assert_int_equal(st_state_style(c)->compact, 1);
		free(out);
		assert_int_equal(st_state_dump(c, st_state_style(s), &out, &olen, NULL), ST_OK);
		assert_int_equal(olen, len);
		assert_memory_equal(out, orig, len);
		free(out);
		free(compact);
		free(orig);
		free(p);
		st_state_free(s);
		st_state_free(c);
	}
}

static void test_envelopes_and_versions(void **state)
{
	(void)state;
	st_state *s = load_fixture("checkpoint-v0.json");
	assert_int_equal(st_state_envelope(s), ST_ENVELOPE_CHECKPOINT);
	assert_int_equal(st_state_version(s), 0);
	assert_int_equal(json_array_size(st_state_resources(s, 0)), 30);
	st_state_free(s);
	s = load_fixture("checkpoint-v4.json");
	assert_int_equal(st_state_version(s), 4);
	assert_string_equal(json_string_value(json_array_get(st_state_features(s), 0)),
			    "refreshBeforeUpdate");
	st_state_free(s);
	s = load_fixture("valid-deployment-v3.json");
	assert_int_equal(st_state_envelope(s), ST_ENVELOPE_EXPORT);
	assert_int_equal(st_state_version(s), 3);
	st_state_free(s);

	char *p = tu_fixture_p("checkpoint-v4-unsupported-feature.json");
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st_state_load_file(&s, p, NULL, &err), ST_EFEATURE);
	assert_string_equal(err.message, "this stack's deployment needs support for the "
					 "following features: unsupported-feature");
	assert_string_equal(err.pointer, "/features");
	free(p);

	load_text("{\"version\":5,\"deployment\":{}}", ST_EVERSION,
		  "this stack's deployment version is too new");
	load_text("{\"deployment\":{}}", ST_EVERSION, "this stack's deployment is too old");
	load_text("{\"version\":7,\"checkpoint\":{}}", ST_EVERSION,
		  "unsupported checkpoint version 7");
	load_text("[1,2]", ST_EFORMAT, "top-level value is not an object");
	load_text("{\"foo\":1}", ST_EFORMAT, "expected a 'deployment' member");
	load_text("{\"version\":3,\"deployment\":{\"resources\":[1]}}", ST_EFORMAT,
		  "json: cannot unmarshal number into Go struct field DeploymentV3.resources of "
		  "type apitype.ResourceV3");
	load_text("{\"version\":4,\"features\":[\"b\",\"taint\",\"a\"],\"deployment\":null}",
		  ST_EFEATURE, "following features: b, a");
	/* A stack never deployed. */
	s = load_text("{\"version\":3,\"deployment\":null}", ST_OK, NULL);
	assert_null(st_state_deployment(s));
	assert_null(st_state_resources(s, 0));
	st_state_free(s);
	/* A checkpoint that is null: Go's json.Unmarshal("null") leaves the CheckpointV3 empty and
	 * the DIY backend loads a stack with no deployment (checkpoint.go, diy/state.go). Loaded as
	 * an empty checkpoint object, which holds what an edit adds and is written as {}. */
	for (int v = 1; v <= 4; v++) {
		char text[64], *out = NULL;
		size_t olen;
		snprintf(text, sizeof(text), "{\"version\":%d,\"checkpoint\":null}", v);
		s = load_text(text, ST_OK, NULL);
		assert_int_equal(st_state_envelope(s), ST_ENVELOPE_CHECKPOINT);
		assert_int_equal(st_state_version(s), v);
		assert_int_equal(st_state_load_problems(s)->count, 0);
		assert_null(st_state_deployment(s));
		assert_null(st_state_checkpoint_stack(s));
		assert_non_null(st_state_resources(s, 1));
		assert_non_null(json_object_get(json_object_get(json_object_get(st_state_root(s),
								 "checkpoint"), "latest"),
						"resources"));
		st_state_free(s);
		s = load_text(text, ST_OK, NULL);
		assert_int_equal(st_state_dump(s, NULL, &out, &olen, NULL), ST_OK);
		snprintf(text, sizeof(text), "{\"version\":%d,\"checkpoint\":{}}", v);
		assert_int_equal(olen, strlen(text));
		assert_memory_equal(out, text, olen);
		free(out);
		st_state_free(s);
	}
}

/* Go matches a struct's keys in any case: every struct of a state is read so (maps are not),
 * an unchanged state is written back as it was, a changed one with Pulumi's keys. */
static void test_keys_in_any_case(void **state)
{
	(void)state;
	char *p = tu_fixture("case/keys-any-case.json");
	size_t len, olen;
	char *orig = tu_read(p, &len), *out = NULL;
	st_state *s = tu_load("case/keys-any-case.json");
	json_t *dep = st_state_deployment(s), *res = st_state_resources(s, 0), *r, *x;
	st_problems pr = {0};
	st_validate_opts vo = ST_VALIDATE_OPTS_INIT;

	assert_int_equal(st_state_envelope(s), ST_ENVELOPE_CHECKPOINT);
	assert_int_equal(st_state_version(s), 3);
	assert_string_equal(st_state_checkpoint_stack(s), "organization/p/dev");
	assert_string_equal(st_json_str(json_object_get(dep, "manifest"), "version"), "v3.100.0");
	x = json_object_get(json_object_get(dep, "manifest"), "plugins");
	assert_string_equal(st_json_str(json_array_get(x, 0), "path"), "/x");
	x = json_object_get(dep, "secrets_providers");
	assert_string_equal(st_json_str(x, "type"), "passphrase");
	assert_non_null(json_object_get(json_object_get(x, "state"), "Salt")); /* raw JSON */
	assert_non_null(json_object_get(json_object_get(s->container, "config"), "p:Key"));
	assert_int_equal(json_array_size(res), 3);
	r = json_array_get(res, 0);
	assert_string_equal(st_json_str(r, "urn"), "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev");
	assert_false(st_json_bool(r, "custom"));
	assert_non_null(json_object_get(json_object_get(r, "outputs"), "URN")); /* a map */
	assert_string_equal(st_json_str(json_array_get(res, 1), "id"), "pid");
	r = json_array_get(res, 2);
	assert_non_null(st_json_str(r, "parent"));
	assert_non_null(st_json_str(r, "provider"));
	assert_non_null(json_object_get(json_object_get(r, "inputs"), "Tags"));
	assert_non_null(json_object_get(json_object_get(r, "propertyDependencies"), "Tags"));
	assert_non_null(json_object_get(json_object_get(r, "customTimeouts"), "create"));
	assert_non_null(st_json_str(json_array_get(json_object_get(r, "stackTrace"), 0),
				    "sourcePosition"));
	assert_non_null(json_object_get(json_object_get(r, "resourceHooks"), "beforeCreate"));
	assert_non_null(json_object_get(r, "hideDiff"));
	assert_non_null(json_object_get(r, "created"));
	x = json_array_get(json_object_get(dep, "pending_operations"), 0);
	assert_string_equal(st_json_str(x, "type"), "creating");
	assert_non_null(st_json_str(json_object_get(x, "resource"), "urn"));
	x = json_object_get(json_object_get(dep, "metadata"), "integrity_error");
	assert_non_null(json_object_get(json_object_get(x, "env_vars"), "PULUMI_X"));
	x = json_array_get(json_object_get(dep, "snippets"), 0);
	assert_string_equal(st_json_str(x, "uuid"), "u1");
	assert_non_null(json_object_get(json_object_get(x, "references"), "Ref"));
	x = json_object_get(x, "descriptor");
	assert_string_equal(st_json_str(x, "downloadURL"), "https://x");
	assert_string_equal(st_json_str(json_object_get(x, "parameterization"), "value"), "AA==");
	x = json_object_get(json_object_get(dep, "extensions"), "Ext1");
	assert_string_equal(st_json_str(x, "name"), "e");

	/* nothing for validate to say: no unknown fields */
	vo.skip_schema = 0;
	assert_int_equal(st_validate(s, &vo, &pr, NULL), ST_OK);
	assert_int_equal(pr.count, 0);
	st_problems_clear(&pr);

	/* unchanged: the bytes as they were */
	assert_int_equal(st_state_dump(s, NULL, &out, &olen, NULL), ST_OK);
	assert_int_equal(olen, len);
	assert_memory_equal(out, orig, len);
	free(out);

	/* changed: Pulumi's keys, in the same places; maps as they were */
	json_object_set_new(json_array_get(res, 0), "protect", json_true());
	assert_int_equal(st_state_dump(s, NULL, &out, &olen, NULL), ST_OK);
	static const char *const gone[] = {
		"\"Version\"", "\"CHECKPOINT\"", "\"Stack\"", "\"Config\"", "\"LATEST\"",
		"\"Manifest\"", "\"Time\"", "\"Magic\"", "\"Plugins\"", "\"Path\"",
		"\"Secrets_Providers\"", "\"State\"", "\"Resources\"", "\"URN\": \"urn",
		"\"Custom\"", "\"ID\"", "\"Parent\"", "\"Provider\"", "\"Inputs\"", "\"Outputs\"",
		"\"PropertyDependencies\"", "\"CustomTimeouts\"", "\"Create\"", "\"StackTrace\"",
		"\"SourcePosition\"", "\"ResourceHooks\"", "\"HideDiff\"", "\"Created\"",
		"\"Pending_Operations\"", "\"Resource\"", "\"TYPE\"", "\"Metadata\"",
		"\"Integrity_Error\"", "\"Env_Vars\"", "\"Snippets\"", "\"UUID\"", "\"Code\"",
		"\"Descriptor\"", "\"DownloadURL\"", "\"Parameterization\"", "\"Value\"",
		"\"References\"", "\"Extensions\"", NULL};
	for (int i = 0; gone[i]; i++) {
		if (strstr(out, gone[i]))
			fprintf(stderr, "still written: %s\n", gone[i]);
		assert_null(strstr(out, gone[i]));
	}
	static const char *const kept[] = {
		"\"URN\": \"a map key: kept\"", "\"Salt\"", "\"beforeCreate\"", "\"Ext1\"",
		"\"p:Key\"", "\"Tags\"", "\"PULUMI_X\"", "\"Ref\"", "\"stack\": \"organization/p/dev\"",
		"\"downloadURL\": \"https://x\"", "\"secrets_providers\"", NULL};
	for (int i = 0; kept[i]; i++)
		assert_non_null(strstr(out, kept[i]));
	free(out);
	free(orig);
	free(p);
	st_state_free(s);

	/* keys naming one field: the last wins (U+017F folds to 's', U+212A to 'k'; a fullwidth
	 * letter does not fold), each earlier one reported as lost */
	s = load_text("{\"version\":3,\"checkpoint\":{\"stack\":\"a\",\"Stack\":\"b\","
		      "\"\\u017ftack\":\"c\",\"stac\\u212a\":\"d\",\"\\uff33tack\":\"e\","
		      "\"latest\":null}}",
		      ST_OK, NULL);
	assert_string_equal(st_state_checkpoint_stack(s), "d");
	assert_non_null(json_object_get(s->container, "\xef\xbc\xb3tack"));
	const st_problems *lp = st_state_load_problems(s);
	size_t dups = 0;
	for (size_t i = 0; i < lp->count; i++)
		dups += !strcmp(lp->items[i].rule, "json/duplicate-key");
	assert_int_equal(dups, 3);
	st_state_free(s);

	/* the envelope too: an export */
	s = load_text("{\"VERSION\":3,\"Deployment\":{\"Resources\":[]}}", ST_OK, NULL);
	assert_int_equal(st_state_envelope(s), ST_ENVELOPE_EXPORT);
	assert_int_equal(st_state_version(s), 3);
	assert_non_null(st_state_resources(s, 0));
	st_state_free(s);
}

/* A key given twice, as Go's encoding/json decodes it (fixtures/dupkey: each state and what
 * Go 1.19 made of it, re-encoded): the state loaded and canonicalized is Go's tree (the
 * manifest's magic aside, which canonicalizing recomputes). */
static json_t *dupkey_go(const char *name, st_state **sp)
{
	char rel[96], *p;
	json_t *want = NULL;
	st_error err;
	st_error_clear(&err);
	snprintf(rel, sizeof(rel), "dupkey/%s.json", name);
	p = tu_fixture(rel);
	assert_int_equal(st_state_load_file(sp, p, NULL, &err), ST_OK);
	free(p);
	snprintf(rel, sizeof(rel), "dupkey/%s.go.json", name);
	p = tu_fixture(rel);
	assert_int_equal(st_json_load_file(&want, p, 0, NULL, NULL, NULL, &err), ST_OK);
	free(p);
	return want;
}

static void drop_magic(json_t *root)
{
	json_t *m = json_object_get(json_object_get(json_object_get(json_object_get(root,
		"checkpoint"), "latest"), "manifest"), "magic");
	if (m)
		json_object_del(json_object_get(json_object_get(json_object_get(root, "checkpoint"),
								"latest"), "manifest"), "magic");
}

/* The message of the json/duplicate-key warning at `ptr` (NULL: none). */
static const char *dup_msg(const st_state *s, const char *ptr)
{
	const st_problems *lp = st_state_load_problems(s);
	for (size_t i = 0; i < lp->count; i++)
		if (!strcmp(lp->items[i].rule, "json/duplicate-key") &&
		    !strcmp(lp->items[i].pointer, ptr))
			return lp->items[i].message;
	return NULL;
}

static void test_dupkey_as_go(void **state)
{
	(void)state;
	static const char *const names[] = {"base", "envelope-checkpoint", "envelope-case",
		"latest-twice", "latest-null", "resources-twice", "resources-thrice",
		"resources-empty", "inputs-twice", "key-in-inputs", "inputs-case", "manifest-twice",
		"pending-twice", "nulls", "config-twice", "maps-slices", "nul-keys", NULL};
	for (int i = 0; names[i]; i++) {
		st_state *s = NULL;
		json_t *want = dupkey_go(names[i], &s);
		st_state_canonicalize(s);
		drop_magic(want);
		drop_magic(s->root);
		if (!st__json_equal(s->root, want)) {
			char *got = json_dumps(s->root, JSON_SORT_KEYS);
			fprintf(stderr, "%s: got %s\n", names[i], got);
			free(got);
			fail();
		}
		json_decref(want);
		st_state_free(s);
	}
}

/* A struct whose keys name one field twice is rebuilt: a member no field names keeps its key's
 * bytes whole, "\u0000" and what follows included (jansson's json_object_update cut it). */
static void test_dupkey_rebuild_nul_member(void **state)
{
	(void)state;
	st_state *s = load_text("{\"version\":3,\"checkpoint\":{\"stack\":\"dev\",\"latest\":{"
				"\"resources\":[{\"urn\":\"urn:pulumi:dev::p::t:m:R::a\",\"x\\u0000y\":1,"
				"\"inputs\":{\"a\":1},\"Inputs\":{\"b\\u0000c\":2}}]}}}",
				ST_OK, NULL);
	json_t *r = json_array_get(st_state_resources(s, 0), 0), *want = NULL;
	const char *w = "{\"urn\":\"urn:pulumi:dev::p::t:m:R::a\",\"x\\u0000y\":1,"
			"\"inputs\":{\"a\":1,\"b\\u0000c\":2}}";
	assert_int_equal(st_json_parse(&want, w, strlen(w), NULL, NULL, NULL, NULL, NULL), ST_OK);
	assert_true(st__json_equal(r, want));
	json_decref(want);
	st_state_free(s);
}

/* What each json/duplicate-key warning says Go made of the key. */
static void test_dupkey_messages(void **state)
{
	(void)state;
	st_state *s = NULL;
	json_t *want;

	want = dupkey_go("inputs-twice", &s);
	assert_string_equal(dup_msg(s, "/checkpoint/latest/resources/0/inputs"),
			    "duplicate object key 'inputs': merged into the earlier value, as Pulumi "
			    "does");
	json_decref(want);
	st_state_free(s);

	want = dupkey_go("key-in-inputs", &s);
	assert_string_equal(dup_msg(s, "/checkpoint/latest/resources/0/inputs/b"),
			    "duplicate object key 'b': the last value is kept, as Pulumi does; "
			    "earlier values are lost on save");
	json_decref(want);
	st_state_free(s);

	want = dupkey_go("nulls", &s);
	assert_string_equal(dup_msg(s, "/checkpoint/latest/resources/0/id"),
			    "duplicate object key 'id': the earlier value is kept, as Pulumi does; "
			    "the later value is lost on save");
	assert_string_equal(dup_msg(s, "/checkpoint/latest/resources/0/inputs"),
			    "duplicate object key 'inputs': the last value is kept, as Pulumi does; "
			    "earlier values are lost on save");
	assert_string_equal(dup_msg(s, "/checkpoint/latest/resources/0/customTimeouts"),
			    "duplicate object key 'customTimeouts': merged into the earlier value, "
			    "as Pulumi does");
	json_decref(want);
	st_state_free(s);

	want = dupkey_go("inputs-case", &s);
	assert_string_equal(dup_msg(s, "/checkpoint/latest/resources/0/Inputs"),
			    "duplicate object key 'Inputs' (the field 'inputs'): merged into the "
			    "earlier value, as Pulumi does");
	json_decref(want);
	st_state_free(s);

	want = dupkey_go("envelope-checkpoint", &s);
	assert_string_equal(dup_msg(s, "/checkpoint"),
			    "duplicate object key 'checkpoint': the last value is kept, as Pulumi "
			    "does; earlier values are lost on save");
	json_decref(want);
	st_state_free(s);

	want = dupkey_go("latest-twice", &s);
	assert_string_equal(dup_msg(s, "/checkpoint/latest"),
			    "duplicate object key 'latest': merged into the earlier value, as Pulumi "
			    "does");
	json_decref(want);
	st_state_free(s);
}

static void test_unknown_fields_kept(void **state)
{
	(void)state;
	const char *text = "{\"version\":3,\"deployment\":{\"manifest\":{\"time\":"
			   "\"2024-01-02T03:04:05Z\",\"magic\":"
			   "\"\",\"version\":\"\"},\"resources\":[{\"urn\":\"urn:pulumi:s::p::a:b:C"
			   "::n\",\"custom\":false,\"type\":\"a:b:C\",\"futureField\":{\"z\":1,"
			   "\"a\":2}}],\"futureTop\":true},\"extra\":1}";
	st_state *s = load_text(text, ST_OK, NULL);
	char *out;
	size_t len;
	st_style st;
	st_style_checkpoint(&st);
	assert_int_equal(st_state_dump(s, &st, &out, &len, NULL), ST_OK);
	assert_string_equal(out, text);
	free(out);
	st_state_free(s);
}

/* checkpoint-v1.json migrated by statetool gives the resources of checkpoint-v3.json, which is
 * the same data migrated by Pulumi. */
static void test_migrate_v1_like_pulumi(void **state)
{
	(void)state;
	st_state *s = load_fixture("checkpoint-v1.json"), *p = load_fixture("checkpoint-v3.json");
	st_changes ch = {0};
	assert_int_equal(st_state_migrate(s, &ch, NULL), ST_OK);
	assert_int_equal(st_state_version(s), 3);
	assert_true(ch.count > 0);
	assert_true(json_equal(st_state_resources(s, 0), st_state_resources(p, 0)));
	assert_string_equal(st_state_checkpoint_stack(s), "");
	json_t *m = json_object_get(st_state_deployment(s), "manifest");
	assert_string_equal(st_json_str(m, "time"), "0001-01-01T00:00:00Z");
	st_changes_clear(&ch);
	st_state_free(s);
	st_state_free(p);
}

static void test_migrate_v2_property_dependencies(void **state)
{
	(void)state;
	st_state *s = load_text(
		"{\"version\":2,\"deployment\":{\"manifest\":{\"time\":\"2024-01-02T03:04:05Z\",\"magic\":\"\","
		"\"version\":\"\"},\"resources\":[{\"urn\":\"urn:pulumi:s::p::a:b:C::x\","
		"\"custom\":true,\"id\":\"1\",\"type\":\"a:b:C\",\"inputs\":{\"k\":1,\"j\":2},"
		"\"dependencies\":[\"urn:pulumi:s::p::a:b:C::y\"],\"external\":false}],"
		"\"pending_operations\":[{\"resource\":{\"urn\":\"urn:pulumi:s::p::a:b:C::x\","
		"\"custom\":true,\"type\":\"a:b:C\"},\"type\":\"creating\"}]}}",
		ST_OK, NULL);
	assert_int_equal(st_state_migrate(s, NULL, NULL), ST_OK);
	char *out;
	size_t len;
	st_style st;
	st_style_checkpoint(&st);
	assert_int_equal(st_state_dump(s, &st, &out, &len, NULL), ST_OK);
	assert_string_equal(out,
		"{\"version\":3,\"deployment\":{\"manifest\":{\"time\":\"2024-01-02T03:04:05Z\",\"magic\":\"\","
		"\"version\":\"\"},\"resources\":[{\"urn\":\"urn:pulumi:s::p::a:b:C::x\","
		"\"custom\":true,\"id\":\"1\",\"type\":\"a:b:C\",\"inputs\":{\"j\":2,\"k\":1},"
		"\"dependencies\":[\"urn:pulumi:s::p::a:b:C::y\"],\"propertyDependencies\":{"
		"\"j\":[\"urn:pulumi:s::p::a:b:C::y\"],\"k\":[\"urn:pulumi:s::p::a:b:C::y\"]}}],"
		"\"pending_operations\":[{\"resource\":{\"urn\":\"urn:pulumi:s::p::a:b:C::x\","
		"\"custom\":true,\"type\":\"a:b:C\"},\"type\":\"creating\"}],\"metadata\":{}}}");
	free(out);
	st_state_free(s);
}

/* Version 1 fields Pulumi drops while decoding (audit26a A4): an old propertyDependencies is
 * replaced by Pulumi's fill from dependencies (the "filled" line was untrue when the old map
 * was kept); other unknown fields are kept, each line saying Pulumi drops it; the secrets
 * provider's says Pulumi then cannot decrypt. */
static void test_migrate_v1_dropped_fields(void **state)
{
	(void)state;
	st_state *s = load_text(
		"{\"version\":1,\"deployment\":{\"manifest\":{\"time\":\"2024-01-02T03:04:05Z\",\"magic\":\"\","
		"\"version\":\"\"},\"secrets_providers\":{\"type\":\"b64\"},\"resources\":[{\"urn\":"
		"\"urn:pulumi:s::p::a:b:C::x\",\"custom\":true,\"id\":\"1\",\"type\":\"a:b:C\","
		"\"inputs\":{\"k\":1},\"dependencies\":[\"urn:pulumi:s::p::a:b:C::y\"],"
		"\"propertyDependencies\":{\"k\":[]},\"provider\":\"urn:pulumi:s::p::pulumi:providers:a::d::1\"}]}}",
		ST_OK, NULL);
	st_changes ch = {0};
	char *out;
	size_t len;
	st_style st;
	assert_int_equal(st_state_migrate(s, &ch, NULL), ST_OK);
	assert_int_equal(ch.count, 5);
	assert_string_equal(ch.lines[0], "urn:pulumi:s::p::a:b:C::x: filled 'propertyDependencies' "
			    "for 1 input from 'dependencies' (1)");
	assert_string_equal(ch.lines[1], "urn:pulumi:s::p::a:b:C::x: dropped field "
			    "'propertyDependencies' unknown to version 1, as Pulumi does (filled from "
			    "'dependencies' instead)");
	assert_string_equal(ch.lines[2], "urn:pulumi:s::p::a:b:C::x: kept field 'provider' unknown "
			    "to version 1 (Pulumi drops it when it reads version 1)");
	assert_string_equal(ch.lines[3], "kept deployment field 'secrets_providers' unknown to "
			    "version 1 (Pulumi drops it when it reads version 1, and cannot decrypt the "
			    "state's secrets then)");
	st_style_checkpoint(&st);
	assert_int_equal(st_state_dump(s, &st, &out, &len, NULL), ST_OK);
	assert_non_null(strstr(out, "\"propertyDependencies\":{\"k\":[\"urn:pulumi:s::p::a:b:C::y\"]}"));
	free(out);
	st_changes_clear(&ch);
	st_state_free(s);
}

static void test_envelope_conversion(void **state)
{
	(void)state;
	st_state *s = load_fixture("valid-deployment-v3.json");
	st_state *d = load_fixture("valid-checkpoint-v3-diy.json");
	assert_int_equal(st_state_set_envelope(s, ST_ENVELOPE_CHECKPOINT, NULL, NULL), ST_OK);
	assert_string_equal(st_state_checkpoint_stack(s), "organization/proj/dev");
	assert_true(json_equal(st_state_root(s), st_state_root(d)));
	assert_int_equal(st_state_style(s)->compact, 1);
	assert_int_equal(st_state_set_envelope(s, ST_ENVELOPE_EXPORT, NULL, NULL), ST_OK);
	st_state *e = load_fixture("valid-deployment-v3.json");
	assert_true(json_equal(st_state_root(s), st_state_root(e)));
	st_state_free(s);
	st_state_free(d);
	st_state_free(e);
	/* no resources, no name */
	s = load_text("{\"version\":3,\"deployment\":null}", ST_OK, NULL);
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st_state_set_envelope(s, ST_ENVELOPE_CHECKPOINT, NULL, &err), ST_EINVAL);
	assert_string_equal(err.message, "cannot tell the stack's name for the checkpoint envelope: "
			    "the state has no resources to take it from"); /* (no CLI option named) */
	assert_int_equal(st_state_set_envelope(s, ST_ENVELOPE_CHECKPOINT, "organization/p/s", NULL),
			 ST_OK);
	st_state_free(s);
}

static void test_features_and_magic(void **state)
{
	(void)state;
	st_state *s = load_fixture("valid-deployment-v3.json");
	char magic[65];
	st_magic_for_version("v3.100.0", magic);
	assert_string_equal(magic, st_json_str(json_object_get(st_state_deployment(s), "manifest"),
					       "magic"));
	/* the real example from Pulumi issue #6215 */
	st_magic_for_version("v2.19.0-alpha.1611602537+g0f06e0393.dirty", magic);
	assert_memory_equal(magic, "72fc43d0", 8);
	assert_string_equal(magic + 60, "1fad");
	st_magic_for_version("", magic);
	assert_string_equal(magic, "");

	json_t *r = json_array_get(st_state_resources(s, 0), 3);
	json_object_set_new(r, "taint", json_true());
	json_object_set_new(r, "replaceWith", json_pack("[s]", "urn:pulumi:dev::proj::x:y:Z::q"));
	assert_int_equal(st_state_apply_features(s), 2);
	assert_int_equal(st_state_version(s), 4);
	json_t *f = st_state_features(s);
	assert_string_equal(json_string_value(json_array_get(f, 0)), "replaceWith");
	assert_string_equal(json_string_value(json_array_get(f, 1)), "taint");
	json_object_del(r, "taint");
	json_object_del(r, "replaceWith");
	assert_int_equal(st_state_apply_features(s), 0);
	assert_int_equal(st_state_version(s), 3);
	assert_null(st_state_features(s));
	st_state_free(s);
}

/* The features as Pulumi computes them on a write (SerializeDeploymentWithMetadata). */
static const char *features_of(const char *deployment, const char *head)
{
	static char buf[256];
	char *text = st_asprintf("{%s\"deployment\":{\"manifest\":{\"time\":\"2024-01-02T03:04:05Z\","
				 "\"magic\":\"\",\"version\":\"\"},%s}}",
				 head, deployment);
	st_state *s = load_text(text, ST_OK, NULL);
	json_t *f;
	size_t i;
	st_state_apply_features(s);
	snprintf(buf, sizeof(buf), "v%d", st_state_version(s));
	f = st_state_features(s);
	for (i = 0; i < json_array_size(f); i++) {
		strncat(buf, " ", sizeof(buf) - strlen(buf) - 1);
		strncat(buf, json_string_value(json_array_get(f, i)), sizeof(buf) - strlen(buf) - 1);
	}
	st_state_free(s);
	free(text);
	return buf;
}

#define BYTES "{\"4dabf18193072939515e22adb298388d\":\"803fd3297a5875dc03ca845dda5d2a98\"," \
	      "\"value\":\"/w==\"}"
#define RES(members)                                                                        \
	"{\"urn\":\"urn:pulumi:s::p::a:b:C::n\",\"custom\":false,\"type\":\"a:b:C\"" members "}"

static void test_features_as_pulumi(void **state)
{
	(void)state;
	/* a pending operation's resource counts only for byteString */
	assert_string_equal(features_of("\"pending_operations\":[{\"resource\":" RES(
					    ",\"taint\":true,\"refreshBeforeUpdate\":true,\"viewOf\":"
					    "\"u\",\"replaceWith\":[\"u\"],\"resourceHooks\":{\"x\":[]}")
					    ",\"type\":\"updating\"}]", "\"version\":3,"),
			    "v3");
	assert_string_equal(features_of("\"pending_operations\":[{\"resource\":" RES(
					    ",\"outputs\":{\"b\":" BYTES "}") ",\"type\":\"creating\"}]",
					"\"version\":3,"),
			    "v4 byteString");
	/* a bytestring in replacementTrigger counts */
	assert_string_equal(features_of("\"resources\":[" RES(",\"replacementTrigger\":[" BYTES "]") "]",
					"\"version\":3,"),
			    "v4 byteString");
	/* inside a plaintext secret (Pulumi looks at the plaintext), and in a secret nested in it,
	 * whose "ciphertext" is plain JSON under Pulumi's no-op encrypter */
	assert_string_equal(
		features_of("\"resources\":[" RES(",\"inputs\":{\"s\":{\"4dabf18193072939515e22adb29"
						  "8388d\":\"1b47061264138c4ac30d75fd1eb44270\","
						  "\"plaintext\":\"{\\\"4dabf18193072939515e22adb298"
						  "388d\\\":\\\"803fd3297a5875dc03ca845dda5d2a98\\\","
						  "\\\"value\\\":\\\"/w==\\\"}\"}}") "]",
			    "\"version\":3,"),
		"v4 byteString");
	assert_string_equal(
		features_of("\"resources\":[" RES(",\"inputs\":{\"s\":{\"4dabf18193072939515e22adb29"
						  "8388d\":\"1b47061264138c4ac30d75fd1eb44270\","
						  "\"plaintext\":\"[{\\\"4dabf18193072939515e22adb29"
						  "8388d\\\":\\\"1b47061264138c4ac30d75fd1eb44270\\\","
						  "\\\"ciphertext\\\":\\\"{\\\\\\\"4dabf18193072939515e22"
						  "adb298388d\\\\\\\":\\\\\\\"803fd3297a5875dc03ca845dda"
						  "5d2a98\\\\\\\",\\\\\\\"value\\\\\\\":\\\\\\\"/w==\\\\\\\"}"
						  "\\\"}]\"}}") "]",
			    "\"version\":3,"),
		"v4 byteString");
	/* a plaintext without one: nothing */
	assert_string_equal(
		features_of("\"resources\":[" RES(",\"inputs\":{\"s\":{\"4dabf18193072939515e22adb29"
						  "8388d\":\"1b47061264138c4ac30d75fd1eb44270\","
						  "\"plaintext\":\"\\\"hunter2\\\"\"}}") "]",
			    "\"version\":3,"),
		"v3");
	/* a ciphertext statetool cannot look into: byteString, which the state had, is kept */
	assert_string_equal(
		features_of("\"resources\":[" RES(",\"inputs\":{\"s\":{\"4dabf18193072939515e22adb29"
						  "8388d\":\"1b47061264138c4ac30d75fd1eb44270\","
						  "\"ciphertext\":\"v1:a:b\"}}") "]",
			    "\"version\":4,\"features\":[\"byteString\"],"),
		"v4 byteString");
	/* ... but not added when the state did not have it, nor kept without a ciphertext */
	assert_string_equal(
		features_of("\"resources\":[" RES(",\"inputs\":{\"s\":{\"4dabf18193072939515e22adb29"
						  "8388d\":\"1b47061264138c4ac30d75fd1eb44270\","
						  "\"ciphertext\":\"v1:a:b\"}}") "]",
			    "\"version\":3,"),
		"v3");
	assert_string_equal(features_of("\"resources\":[" RES("") "]",
					"\"version\":4,\"features\":[\"byteString\",\"taint\"],"),
			    "v3");
}

static void canonical_is(const char *in, const char *want)
{
	st_state *s = load_text(in, ST_OK, NULL);
	char *out;
	size_t len;
	st_style st;
	st_style_checkpoint(&st);
	st_state_canonicalize(s);
	assert_int_equal(st_state_dump(s, &st, &out, &len, NULL), ST_OK);
	if (strcmp(out, want))
		fprintf(stderr, "got:  %s\nwant: %s\n", out, want);
	assert_string_equal(out, want);
	free(out);
	st_state_free(s);
}

#define CT_MANIFEST                                                                         \
	"\"manifest\":{\"time\":\"2024-01-02T03:04:05Z\",\"magic\":\"\",\"version\":\"\"}"

/* Go's output for every struct: its order, fields without omitempty always written, empty
 * omitempty ones dropped, the features recomputed; members Pulumi has no field for kept. */
static void test_canonicalize(void **state)
{
	(void)state;
	canonical_is("{\"deployment\":{\"resources\":[{\"protect\":false,\"type\":\"a:b:C\",\"urn\":\"u\","
		     "\"custom\":false,\"id\":\"\",\"zzz\":1,\"dependencies\":[],\"customTimeouts\":"
		     "{\"create\":0},\"replacementTrigger\":null,\"taint\":true}],\"manifest\":{"
		     "\"version\":\"\",\"magic\":\"\",\"time\":\"2024-01-02T03:04:05Z\"}},\"version\":3}",
		     "{\"version\":4,\"features\":[\"taint\"],\"deployment\":{" CT_MANIFEST
		     ",\"resources\":[{\"urn\":\"u\",\"custom\":false,\"type\":\"a:b:C\","
		     "\"taint\":true,\"zzz\":1}],\"metadata\":{}}}");
	/* plugins' path and version, a descriptor's name, a parameterization's fields, an
	 * extension's version and value; an empty references map dropped; a pointer to an empty
	 * struct kept */
	canonical_is("{\"version\":4,\"features\":[\"snippets-prototype\"],\"checkpoint\":{\"stack\":"
		     "\"s\",\"latest\":{\"manifest\":{\"time\":\"2024-01-02T03:04:05Z\",\"magic\":\"\","
		     "\"version\":\"\",\"plugins\":[{\"type\":\"resource\",\"name\":\"aws\"}]},"
		     "\"secrets_providers\":{},\"snippets\":[{\"uuid\":\"u\",\"descriptor\":{"
		     "\"parameterization\":{}},\"references\":{}}],\"extensions\":{\"e\":{\"name\":"
		     "\"x\"}},\"metadata\":{\"integrity_error\":{}}}}}",
		     "{\"version\":4,\"features\":[\"snippets-prototype\"],\"checkpoint\":{\"stack\":"
		     "\"s\",\"latest\":{\"manifest\":{\"time\":\"2024-01-02T03:04:05Z\",\"magic\":\"\","
		     "\"version\":\"\",\"plugins\":[{\"name\":\"aws\",\"path\":\"\",\"type\":"
		     "\"resource\",\"version\":\"\"}]},\"secrets_providers\":{\"type\":\"\"},"
		     "\"metadata\":{\"integrity_error\":{}},\"snippets\":[{\"uuid\":\"u\",\"name\":\"\","
		     "\"type\":\"\",\"code\":\"\",\"descriptor\":{\"name\":\"\",\"parameterization\":{"
		     "\"name\":\"\",\"version\":\"0.0.0\",\"value\":null}}}],\"extensions\":{\"e\":{"
		     "\"name\":\"x\",\"version\":\"\",\"value\":null}}}}}");
	/* version 2: empty pending operations dropped too, the V2 resource's order */
	canonical_is("{\"version\":2,\"deployment\":{\"pending_operations\":[],\"manifest\":{\"time\":"
		     "\"2024-01-02T03:04:05Z\",\"magic\":\"\",\"version\":\"\"},\"resources\":[{"
		     "\"provider\":\"p\",\"external\":true,\"type\":\"a:b:C\",\"urn\":\"u\",\"custom\":"
		     "true}]}}",
		     "{\"version\":2,\"deployment\":{" CT_MANIFEST ",\"resources\":[{\"urn\":\"u\","
		     "\"custom\":true,\"type\":\"a:b:C\",\"external\":true,\"provider\":\"p\"}]}}");
	/* version 0 (a CheckpointV1): the V1 resource's order, defaults in it, dependencies and
	 * initErrors always written */
	canonical_is("{\"target\":\"t\",\"latest\":{\"time\":\"x\",\"resources\":[{\"outputs\":{\"a\":1},"
		     "\"defaults\":{\"b\":2},\"inputs\":{\"c\":3},\"type\":\"a:b:C\",\"id\":\"i\","
		     "\"custom\":true,\"urn\":\"u\"}]}}",
		     "{\"stack\":\"\",\"latest\":{\"manifest\":{\"time\":\"0001-01-01T00:00:00Z\","
		     "\"magic\":\"\",\"version\":\"\"},\"resources\":[{\"urn\":\"u\",\"custom\":true,"
		     "\"id\":\"i\",\"type\":\"a:b:C\",\"inputs\":{\"c\":3},\"defaults\":{\"b\":2},"
		     "\"outputs\":{\"a\":1},\"dependencies\":null,\"initErrors\":null}],\"time\":"
		     "\"x\"},\"target\":\"t\"}");
}

static void test_find(void **state)
{
	(void)state;
	st_state *s = load_fixture("valid-deployment-v3.json");
	size_t *hits = NULL, n = 0;
	st_error err;
	assert_int_equal(st_state_find(s, "urn:pulumi:dev::proj::my:index:Comp::c", &hits, &n, NULL),
			 ST_OK);
	assert_int_equal(n, 1);
	assert_int_equal(hits[0], 2);
	free(hits);
	assert_int_equal(st_state_find(s, "b", &hits, &n, NULL), ST_OK);
	assert_int_equal(hits[0], 3);
	free(hits);
	assert_int_equal(st_state_find(s, "my:index:Comp$aws:s3/bucket:Bucket::b", &hits, &n, NULL),
			 ST_OK);
	assert_int_equal(hits[0], 3);
	free(hits);
	assert_int_equal(st_state_find(s, "aws:s3/bucket:Bucket::b", &hits, &n, NULL), ST_OK);
	assert_int_equal(hits[0], 3);
	free(hits);
	assert_int_equal(st_state_find(s, "proj::my:index:Comp::c", &hits, &n, NULL), ST_OK);
	assert_int_equal(hits[0], 2);
	free(hits);
	/* whole segments only: a tail cut inside a type, a name or the stack finds nothing */
	static const char *const cut[] = {"Comp$aws:s3/bucket:Bucket::b", "Bucket::b", ":b",
					  "::b", "ev::proj::my:index:Comp::c", "omp::c"};
	for (size_t k = 0; k < sizeof(cut) / sizeof(cut[0]); k++) {
		st_error_clear(&err);
		assert_int_equal(st_state_find(s, cut[k], &hits, &n, &err), ST_ENOTFOUND);
	}
	assert_int_equal(st_state_find(s, "#1", &hits, &n, NULL), ST_OK);
	assert_int_equal(hits[0], 1);
	free(hits);
	st_error_clear(&err);
	assert_int_equal(st_state_find(s, "bb", &hits, &n, &err), ST_ENOTFOUND);
	assert_non_null(strstr(err.message, "No such resource \"bb\" exists in the current state"));
	assert_non_null(strstr(err.message, "Did you mean:\n  urn:pulumi:dev::proj::my:index:Comp"
					    "$aws:s3/bucket:Bucket::b"));
	st_error_clear(&err);
	assert_int_equal(st_state_find(s, "#9", &hits, &n, &err), ST_ENOTFOUND);
	st_state_free(s);
	/* Pulumi's distance is over runes, every letter folded (unicode.ToLower): "äöü" is
	 * U+00C4 U+00D6 U+00DC (three bytes apart from it in UTF-8, beyond len/4) */
	s = load_text("{\"version\":3,\"deployment\":{\"resources\":[{\"urn\":\"urn:pulumi:s::p::a:b:C"
		      "::\u00c4\u00d6\u00dc\",\"type\":\"a:b:C\"}]}}", ST_OK, NULL);
	st_error_clear(&err);
	assert_int_equal(st_state_find(s, "\xc3\xa4\xc3\xb6\xc3\xbc", &hits, &n, &err), ST_ENOTFOUND);
	assert_non_null(strstr(err.message, "Did you mean:\n  urn:pulumi:s::p::a:b:C::\xc3\x84\xc3\x96"
					    "\xc3\x9c\n"));
	st_error_clear(&err); /* each invalid byte is one rune, U+FFFD: three edits from the name */
	assert_int_equal(st_state_find(s, "\xff\xfe", &hits, &n, &err), ST_ENOTFOUND);
	assert_null(strstr(err.message, "Did you mean"));
	st_state_free(s);
	/* two resources share a name */
	s = load_text("{\"version\":3,\"deployment\":{\"resources\":[{\"urn\":\"urn:pulumi:s::p::a:b:C"
		      "::n\",\"type\":\"a:b:C\"},{\"urn\":\"urn:pulumi:s::p::a:b:D::n\",\"type\":"
		      "\"a:b:D\"}]}}", ST_OK, NULL);
	st_error_clear(&err);
	assert_int_equal(st_state_find(s, "n", &hits, &n, &err), ST_EAMBIGUOUS);
	assert_non_null(strstr(err.message, "'n' matches 2 resources"));
	assert_non_null(strstr(err.message, "#1 urn:pulumi:s::p::a:b:D::n"));
	st_state_free(s);
	/* the examples: "ev" is no stack "proj-dev", "t-2" no "legacy-bucket-2" */
	s = load_text("{\"version\":3,\"deployment\":{\"resources\":[{\"urn\":\"urn:pulumi:dev::p::"
		      "pulumi:pulumi:Stack::proj-dev\",\"type\":\"pulumi:pulumi:Stack\"},{\"urn\":"
		      "\"urn:pulumi:dev::p::a:b:C::legacy-bucket-2\",\"type\":\"a:b:C\"}]}}",
		      ST_OK, NULL);
	assert_int_equal(st_state_find(s, "ev", &hits, &n, NULL), ST_ENOTFOUND);
	assert_int_equal(st_state_find(s, "t-2", &hits, &n, NULL), ST_ENOTFOUND);
	assert_int_equal(st_state_find(s, "legacy-bucket-2", &hits, &n, NULL), ST_OK);
	assert_int_equal(hits[0], 1);
	free(hits);
	assert_int_equal(st_state_find(s, "a:b:C::legacy-bucket-2", &hits, &n, NULL), ST_OK);
	free(hits);
	st_state_free(s);
}

static void test_urns_and_provider_refs(void **state)
{
	(void)state;
	st_urn u;
	assert_int_equal(st_urn_parse("urn:pulumi:dev::proj::a:b:C$d:e:F::name::with::colons", &u),
			 ST_OK);
	assert_int_equal(u.stack_len, 3);
	assert_memory_equal(u.type, "d:e:F", 5);
	assert_int_equal(u.type_len, 5);
	assert_string_equal(u.name, "name::with::colons");
	assert_int_equal(st_urn_parse("urn:pulumi:dev::proj::a:b:C", &u), ST_EINVAL);
	assert_int_equal(st_urn_parse("urn:other:dev::proj::a:b:C::n", &u), ST_EINVAL);
	char *x = st_urn_new("s", "p", "a:b:C$d:e:F", "g:h:I", "n");
	assert_string_equal(x, "urn:pulumi:s::p::a:b:C$d:e:F$g:h:I::n");
	free(x);
	x = st_urn_new("s", "p", ST_ROOT_STACK_TYPE, "g:h:I", "n");
	assert_string_equal(x, "urn:pulumi:s::p::g:h:I::n");
	free(x);
	char *urn, *id;
	st_error err;
	assert_int_equal(st_provider_ref_parse("urn:pulumi:s::p::pulumi:providers:aws::default::abc",
					       &urn, &id, NULL), ST_OK);
	assert_string_equal(urn, "urn:pulumi:s::p::pulumi:providers:aws::default");
	assert_string_equal(id, "abc");
	free(urn);
	free(id);
	st_error_clear(&err);
	assert_int_equal(st_provider_ref_parse("nocolons", &urn, &id, &err), ST_EINVAL);
	assert_string_equal(err.message, "expected '::' in provider reference 'nocolons'");
	st_error_clear(&err);
	assert_int_equal(st_provider_ref_parse("urn:pulumi:s::p::aws:x:Y::n::id", &urn, &id, &err),
			 ST_EINVAL);
	assert_string_equal(err.message,
			    "invalid module in type: expected 'pulumi:providers', got 'aws:x'");
	st_error_clear(&err);
	assert_int_equal(st_provider_ref_parse("urn:pulumi:s::p::pulumi:providers:::n::id", &urn,
					       &id, &err), ST_EINVAL);
	assert_string_equal(err.message, "provider URNs must specify a type name");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_pulumi_files),
		cmocka_unit_test(test_envelopes_and_versions),
		cmocka_unit_test(test_unknown_fields_kept),
		cmocka_unit_test(test_dupkey_as_go),
		cmocka_unit_test(test_dupkey_messages),
		cmocka_unit_test(test_dupkey_rebuild_nul_member),
		cmocka_unit_test(test_keys_in_any_case),
		cmocka_unit_test(test_migrate_v1_like_pulumi),
		cmocka_unit_test(test_migrate_v2_property_dependencies),
		cmocka_unit_test(test_migrate_v1_dropped_fields),
		cmocka_unit_test(test_envelope_conversion),
		cmocka_unit_test(test_features_and_magic),
		cmocka_unit_test(test_features_as_pulumi),
		cmocka_unit_test(test_canonicalize),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_urns_and_provider_refs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
