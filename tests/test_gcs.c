/*
 * The gs:// store (lib/store/gcs*.c):
 *  - the RS256 JWT against a vector signed with OpenSSL's command line (fixtures/gcs), from a
 *    PKCS#8 and a PKCS#1 key; keys that are no RSA key refused without quoting them;
 *  - the URL and the environment, table-driven, in Pulumi's order (GOOGLE_CREDENTIALS,
 *    GOOGLE_OAUTH_ACCESS_TOKEN, GOOGLE_APPLICATION_CREDENTIALS, gcloud's well-known file;
 *    STORAGE_EMULATOR_HOST), errors naming the variables and never a secret;
 *  - on tests/gcsfake.js (a fake of the JSON API and of the token endpoint, started here: no GCS
 *    emulator starts offline; never skipped): one token exchange for many requests and a bearer
 *    token on every request, create-only as ifGenerationMatch=0, wrong credentials, a missing
 *    bucket, an unreachable endpoint and a server failing half-way (bounded retries, nothing
 *    changed, no token or key in a message).
 */
#include "testutil.h"

#include "gcsfake.h"
#include "store/gcs.h"
#include "store/http.h"

#define EMAIL GCSFAKE_SA_EMAIL

static char *slurp(const char *name)
{
	char *path = st_asprintf("%s/gcs/%s", FIXTURES, name), *data = NULL;
	size_t len = 0;
	assert_int_equal(st_file_read(path, 0, &data, &len, NULL, NULL), ST_OK);
	free(path);
	return data;
}

/* ---- the JWT ---- */

static void test_jwt_vector(void **state)
{
	char *vec = slurp("jwt-vector.txt"), *pem = slurp("sa-key.pem"), *pem1 = slurp("sa-key-pkcs1.pem");
	char *ec = slurp("ec-key.pem"), *jwt = NULL;
	st_error err;
	(void)state;
	vec[strcspn(vec, "\n")] = '\0';
	assert_int_equal(st__gcs_jwt(&jwt, EMAIL, GCSFAKE_SA_KID, ST_GCS_SCOPE_RW, ST_GCS_TOKEN_URI,
				     1699999990, pem, "the test key", NULL),
			 ST_OK);
	assert_string_equal(jwt, vec);
	free(jwt);
	assert_int_equal(st__gcs_jwt(&jwt, EMAIL, GCSFAKE_SA_KID, ST_GCS_SCOPE_RW, ST_GCS_TOKEN_URI,
				     1699999990, pem1, "the test key", NULL),
			 ST_OK);
	assert_string_equal(jwt, vec);
	free(jwt);
	jwt = NULL;
	st_error_clear(&err);
	assert_int_equal(st__gcs_jwt(&jwt, EMAIL, NULL, ST_GCS_SCOPE_RW, ST_GCS_TOKEN_URI, 1, ec,
				     "service account 'x'", &err),
			 ST_EINVAL);
	assert_null(jwt);
	assert_string_equal(err.message, "gs: the private_key of service account 'x' is not an RSA key");
	st_error_clear(&err);
	assert_int_equal(st__gcs_jwt(&jwt, EMAIL, NULL, ST_GCS_SCOPE_RW, ST_GCS_TOKEN_URI, 1,
				     "-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n",
				     "service account 'x'", &err),
			 ST_EINVAL);
	assert_null(strstr(err.message, "c2VjcmV0"));
	assert_null(strstr(err.message, "BEGIN"));
	free(vec);
	free(pem);
	free(pem1);
	free(ec);
}

/* ---- the configuration ---- */

typedef struct env_tab {
	const char *v[8][2];
} env_tab;

static const char *tab_env(void *ctx, const char *name)
{
	env_tab *t = ctx;
	for (int i = 0; i < 8 && t->v[i][0]; i++)
		if (!strcmp(t->v[i][0], name))
			return t->v[i][1];
	return NULL;
}

static char *sa_json; /* a service account key file's JSON (token_uri: Google's) */

typedef struct cfg_case {
	const char *url;
	env_tab env;
	int rc;
	st_gcs_auth auth;
	const char *bucket, *prefix, *api;
	const char *note; /* the note (success) or the message (failure), exactly */
} cfg_case;

#define E(...) {{__VA_ARGS__}}
#define NOHOME {"HOME", "/nonexistent-statetool-home"}
#define CREDS {"GOOGLE_CREDENTIALS", "@SA"}
#define TOKEN {"GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.SECRET-TOKEN"}
#define API "https://storage.googleapis.com/storage/v1"
#define SA_NOTE "service account '" EMAIL "' from GOOGLE_CREDENTIALS, tokens from " ST_GCS_TOKEN_URI

static const cfg_case cfg_cases[] = {
	{"gs://state", E(NOHOME, CREDS), ST_OK, ST_GCS_SERVICE_ACCOUNT, "state", "", API,
	 "credentials: " SA_NOTE},
	{"gs://state/a/b", E(NOHOME, CREDS, TOKEN), ST_OK, ST_GCS_SERVICE_ACCOUNT, "state", "a/b/", API,
	 "credentials: " SA_NOTE},
	{"gs://state/", E(NOHOME, TOKEN, {"GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent"}), ST_OK,
	 ST_GCS_TOKEN, "state", "", API,
	 "credentials: the access token in GOOGLE_OAUTH_ACCESS_TOKEN (GOOGLE_CREDENTIALS unset)"},
	{"gs://state", E(NOHOME, TOKEN, {"GOOGLE_STORAGE_CUSTOM_ENDPOINT", "http://127.0.0.1:9/storage/v1/"}),
	 ST_OK, ST_GCS_TOKEN, "state", "", "http://127.0.0.1:9/storage/v1",
	 "credentials: the access token in GOOGLE_OAUTH_ACCESS_TOKEN (GOOGLE_CREDENTIALS unset), "
	 "endpoint http://127.0.0.1:9/storage/v1 from GOOGLE_STORAGE_CUSTOM_ENDPOINT"},
	{"gs://state", E(NOHOME, TOKEN, {"STORAGE_EMULATOR_HOST", "localhost:4443"}), ST_OK,
	 ST_GCS_ANONYMOUS, "state", "", "http://localhost:4443/storage/v1",
	 "no credentials: the emulator http://localhost:4443/storage/v1 from STORAGE_EMULATOR_HOST"},
	{"gs://state?anonymous=true", E(NOHOME), ST_OK, ST_GCS_ANONYMOUS, "state", "", API,
	 "no credentials (anonymous=true)"},
	/* errors */
	{"gs://state", E(NOHOME), ST_EUNSUPPORTED, 0, NULL, NULL, NULL,
	 "gs: no credentials: set GOOGLE_CREDENTIALS (a key file's JSON), GOOGLE_OAUTH_ACCESS_TOKEN "
	 "or GOOGLE_APPLICATION_CREDENTIALS (a key file's path), or run 'gcloud auth "
	 "application-default login' (read: those three variables and "
	 "/nonexistent-statetool-home/.config/gcloud/application_default_credentials.json; the "
	 "metadata server of Compute Engine, which Pulumi asks last, is not asked)"},
	{"gs://", E(NOHOME, TOKEN), ST_EINVAL, 0, NULL, NULL, NULL,
	 "gs: 'gs://' names no bucket (gs://BUCKET[/PREFIX])"},
};

static void test_config(void **state)
{
	(void)state;
	char *key = slurp("sa-key.pem");
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", "service_account",
			      "project_id", "p", "private_key_id", GCSFAKE_SA_KID, "private_key", key,
			      "client_email", EMAIL, "client_id", "1");
	sa_json = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	for (size_t i = 0; i < sizeof(cfg_cases) / sizeof(cfg_cases[0]); i++) {
		const cfg_case *c = &cfg_cases[i];
		env_tab env = c->env;
		st_gcs_cfg cfg;
		st_error err;
		for (int k = 0; k < 8 && env.v[k][0]; k++)
			if (!strcmp(env.v[k][1], "@SA"))
				env.v[k][1] = sa_json;
		st_error_clear(&err);
		int rc = st__gcs_config(&cfg, c->url, tab_env, &env, &err);
		if (rc != c->rc)
			fail_msg("case %zu (%s): rc %d, expected %d: %s", i, c->url, rc, c->rc,
				 err.message);
		if (rc == ST_OK) {
			assert_int_equal(cfg.auth, c->auth);
			assert_string_equal(cfg.bucket, c->bucket);
			assert_string_equal(cfg.prefix, c->prefix);
			assert_string_equal(cfg.api, c->api);
			if (strcmp(cfg.note, c->note))
				fail_msg("case %zu: note\n%s\nexpected\n%s", i, cfg.note, c->note);
			if (c->auth == ST_GCS_SERVICE_ACCOUNT) {
				assert_string_equal(cfg.client_email, EMAIL);
				assert_string_equal(cfg.private_key, key);
				assert_string_equal(cfg.scope, ST_GCS_SCOPE_RW);
			}
		} else if (strcmp(err.message, c->note)) {
			fail_msg("case %zu: message\n%s\nexpected\n%s", i, err.message, c->note);
		}
		assert_null(strstr(rc == ST_OK ? cfg.note : err.message, "SECRET"));
		assert_null(strstr(rc == ST_OK ? cfg.note : err.message, "PRIVATE KEY"));
		st__gcs_cfg_free(&cfg);
	}
	/* GOOGLE_CREDENTIALS that is no key file: named, never quoted */
	env_tab bad = E(NOHOME, {"GOOGLE_CREDENTIALS", "{\"type\":\"service_account\",\"private_key\":"
						       "\"SECRET\"}"});
	st_gcs_cfg cfg;
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st__gcs_config(&cfg, "gs://b", tab_env, &bad, &err), ST_EINVAL);
	assert_non_null(strstr(err.message, "$GOOGLE_CREDENTIALS"));
	assert_null(strstr(err.message, "SECRET"));
	st__gcs_cfg_free(&cfg);
	free(key);
	free(sa_json);
}

/* ---- on the fake ---- */

static gcsfake fake = {-1, -1, 0};
static char *dir, *key_file, *wrong_file, *endpoint;

static void net_retries(int n)
{
	st_net_opts o = ST_NET_OPTS_INIT;
	o.retries = n;
	o.backoff_ms = 1;
	assert_int_equal(st_set_net(&o, NULL), ST_OK);
}

/* gs://BUCKET/p through the fake's token endpoint with the key file `kf` (NULL: the access token
 * `token`), the endpoint `ep` (NULL: the fake's). */
static st_store *open_fake(const char *bucket, const char *kf, const char *token, const char *ep,
			   st_error *err)
{
	st_store *s = NULL;
	char *url = st_asprintf("gs://%s/p", bucket);
	unsetenv("GOOGLE_CREDENTIALS");
	unsetenv("STORAGE_EMULATOR_HOST");
	unsetenv("GOOGLE_BACKEND_STORAGE_CUSTOM_ENDPOINT");
	if (kf)
		setenv("GOOGLE_APPLICATION_CREDENTIALS", kf, 1);
	else
		unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	if (token)
		setenv("GOOGLE_OAUTH_ACCESS_TOKEN", token, 1);
	else
		unsetenv("GOOGLE_OAUTH_ACCESS_TOKEN");
	setenv("GOOGLE_STORAGE_CUSTOM_ENDPOINT", ep ? ep : endpoint, 1);
	st_error_clear(err);
	int rc = st_store_open(&s, url, err);
	if (rc != ST_OK)
		fail_msg("%s", err->message);
	unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	unsetenv("GOOGLE_OAUTH_ACCESS_TOKEN");
	unsetenv("GOOGLE_STORAGE_CUSTOM_ENDPOINT");
	free(url);
	return s;
}

static void expect_content(st_store *s, const char *key, const char *text)
{
	char *data = NULL;
	size_t len = 0;
	assert_int_equal(st_store_read(s, key, 0, &data, &len, NULL, NULL), ST_OK);
	assert_int_equal(len, strlen(text));
	assert_memory_equal(data, text, len);
	free(data);
}

static int fake_up(void **state)
{
	static const char *const args[] = {"--bucket", "b", "--token", "ya29.FIXED", NULL};
	(void)state;
	fake = gcsfake_start(args);
	dir = tu_tmpdir();
	/* both named key-PORT.json: the wrong one moved aside first */
	char *w = gcsfake_key_file(&fake, dir, "wrong-key.pem");
	wrong_file = st_asprintf("%s/wrong.json", dir);
	assert_int_equal(rename(w, wrong_file), 0);
	free(w);
	key_file = gcsfake_key_file(&fake, dir, "sa-key.pem");
	endpoint = st_asprintf("http://127.0.0.1:%d/storage/v1/", fake.port);
	return 0;
}

static int fake_down(void **state)
{
	(void)state;
	gcsfake_stop(&fake);
	tu_rmdir(dir);
	free(key_file);
	free(wrong_file);
	free(endpoint);
	return 0;
}

/* A service account: its JWT checked by the fake (signature, claims, scope), one exchange for
 * every request, each request with a valid bearer token; create-only is ifGenerationMatch=0. */
static void test_fake_service_account(void **state)
{
	st_error err;
	st_store_write_opts o = ST_STORE_WRITE_OPTS_INIT;
	(void)state;
	st_store *s = open_fake("b", key_file, NULL, NULL, &err);
	gcsfake_log_clear(&fake);
	assert_int_equal(st_store_write(s, "a.json", "one", 3, NULL, NULL), ST_OK);
	expect_content(s, "a.json", "one");
	/* a listing and a stat tell the same size, time (milliseconds, as Pulumi compares them)
	 * and tag; a read the same size and tag, and the time to the second (Last-Modified) */
	st_store_entry *ents = NULL;
	size_t n = 0, len = 0;
	st_store_info st, rd;
	char *data = NULL;
	assert_int_equal(st_store_list(s, "", 0, &ents, &n, NULL), ST_OK);
	assert_int_equal(n, 1);
	assert_string_equal(ents[0].key, "a.json");
	assert_int_equal(st_store_stat(s, "a.json", &st, NULL), ST_OK);
	assert_int_equal(st_store_read(s, "a.json", 0, &data, &len, &rd, NULL), ST_OK);
	free(data);
	assert_int_equal(ents[0].info.size, 3);
	assert_int_equal(st.size, 3);
	assert_int_equal(rd.size, 3);
	assert_true(ents[0].info.mtime_ns > 0);
	assert_int_equal(st.mtime_ns, ents[0].info.mtime_ns);
	assert_int_equal(rd.mtime_ns, ents[0].info.mtime_ns / 1000000000LL * 1000000000LL);
	assert_true(ents[0].info.etag[0] != '\0');
	assert_string_equal(st.etag, ents[0].info.etag);
	assert_string_equal(rd.etag, ents[0].info.etag);
	st_store_entries_free(ents, n);
	o.flags = ST_STORE_CREATE_ONLY;
	st_error_clear(&err);
	assert_int_equal(st_store_write(s, "a.json", "two", 3, &o, &err), ST_EEXIST);
	assert_string_equal(err.message, "'gs://b/p/a.json' exists already");
	expect_content(s, "a.json", "one");
	assert_int_equal(st_store_write(s, "c.json", "new", 3, &o, NULL), ST_OK);
	assert_int_equal(st_store_copy(s, "a.json", "a.json.bak", NULL), ST_OK);
	expect_content(s, "a.json.bak", "one");
	assert_int_equal(st_store_delete(s, "c.json", NULL), ST_OK);
	char *log = gcsfake_log(&fake);
	assert_int_equal(gcsfake_count(log, "\"path\":\"/token\""), 1);
	assert_int_equal(gcsfake_count(log, "\"auth\":\"none\""), 1); /* the token request */
	assert_int_equal(gcsfake_count(log, "\"auth\":\"invalid\""), 0);
	assert_int_equal(gcsfake_count(log, "ifGenerationMatch=0"), 2);
	assert_int_equal(gcsfake_count(log, "uploadType=media"), 3);
	assert_int_equal(gcsfake_count(log, "/rewriteTo/"), 1);
	free(log);
	st_store_free(s);
}

/* A token is kept until ten seconds before it expires: one that lives 5 s is fetched again for
 * every request, one that lives an hour once. */
static void test_fake_token_expiry(void **state)
{
	st_error err;
	char *log;
	(void)state;
	gcsfake_ctl(&fake, "config", "{\"tokenTtl\": 5}");
	st_store *s = open_fake("b", key_file, NULL, NULL, &err);
	gcsfake_log_clear(&fake);
	expect_content(s, "a.json", "one");
	expect_content(s, "a.json", "one");
	expect_content(s, "a.json", "one");
	log = gcsfake_log(&fake);
	assert_int_equal(gcsfake_count(log, "\"path\":\"/token\""), 3);
	assert_int_equal(gcsfake_count(log, "\"auth\":\"invalid\""), 0);
	free(log);
	st_store_free(s);
	gcsfake_ctl(&fake, "config", "{\"tokenTtl\": 3600}");
	s = open_fake("b", key_file, NULL, NULL, &err);
	gcsfake_log_clear(&fake);
	expect_content(s, "a.json", "one");
	expect_content(s, "a.json", "one");
	log = gcsfake_log(&fake);
	assert_int_equal(gcsfake_count(log, "\"path\":\"/token\""), 1);
	free(log);
	st_store_free(s);
}

/* Wrong credentials: the key is not the account's, the token unknown. */
static void test_fake_wrong_credentials(void **state)
{
	st_error err;
	char *data = NULL, *k;
	size_t len;
	(void)state;
	st_store *s = open_fake("b", wrong_file, NULL, NULL, &err);
	st_error_clear(&err);
	assert_int_equal(st_store_read(s, "a.json", 0, &data, &len, NULL, &err), ST_EAUTH);
	k = st_asprintf("gs: token exchange '" EMAIL "' on 127.0.0.1:%d failed: HTTP 400 "
			"invalid_grant: Invalid JWT Signature.; credentials: service account '" EMAIL
			"' from the file '%s' named by GOOGLE_APPLICATION_CREDENTIALS, tokens from "
			"http://127.0.0.1:%d/token (GOOGLE_CREDENTIALS, GOOGLE_OAUTH_ACCESS_TOKEN "
			"unset), endpoint http://127.0.0.1:%d/storage/v1 from "
			"GOOGLE_STORAGE_CUSTOM_ENDPOINT",
			fake.port, wrong_file, fake.port, fake.port);
	assert_string_equal(err.message, k);
	free(k);
	assert_int_equal(st_store_write(s, "a.json", "x", 1, NULL, NULL), ST_EAUTH);
	st_store_free(s);

	s = open_fake("b", NULL, "ya29.NOT-A-TOKEN", NULL, &err);
	st_error_clear(&err);
	assert_int_equal(st_store_write(s, "a.json", "x", 1, NULL, &err), ST_EAUTH);
	assert_non_null(strstr(err.message, "HTTP 401 authError: Invalid Credentials; credentials: "
					    "the access token in GOOGLE_OAUTH_ACCESS_TOKEN"));
	assert_null(strstr(err.message, "NOT-A-TOKEN"));
	st_store_free(s);
	s = open_fake("b", key_file, NULL, NULL, &err);
	expect_content(s, "a.json", "one");
	st_store_free(s);
}

/* A missing bucket is no missing object; an unreachable endpoint is retried a bounded time. */
static void test_fake_missing_bucket_unreachable(void **state)
{
	st_error err;
	char *data = NULL;
	size_t len;
	st_store_entry *ents = NULL;
	(void)state;
	st_store *s = open_fake("nob", NULL, "ya29.FIXED", NULL, &err);
	st_error_clear(&err);
	assert_int_equal(st_store_read(s, "k", 0, &data, &len, NULL, &err), ST_EIO);
	char *k = st_asprintf("gs: objects.get 'nob/p/k' on 127.0.0.1:%d failed: HTTP 404 notFound: "
			      "The specified bucket does not exist.; credentials: the access token in "
			      "GOOGLE_OAUTH_ACCESS_TOKEN (GOOGLE_CREDENTIALS unset), endpoint "
			      "http://127.0.0.1:%d/storage/v1 from GOOGLE_STORAGE_CUSTOM_ENDPOINT",
			      fake.port, fake.port);
	assert_string_equal(err.message, k);
	free(k);
	assert_null(strstr(err.message, "FIXED"));
	assert_int_equal(st_store_stat(s, "k", NULL, NULL), ST_EIO);
	assert_int_equal(st_store_delete(s, "k", NULL), ST_EIO);
	assert_int_equal(st_store_list(s, "", 0, &ents, &len, NULL), ST_EIO);
	assert_int_equal(st_store_write(s, "k", "x", 1, NULL, NULL), ST_EIO);
	st_store_free(s);

	net_retries(1);
	s = open_fake("b", NULL, "ya29.FIXED", "http://127.0.0.1:9/storage/v1", &err);
	st_set_net(NULL, NULL);
	unsigned long before = st__http_attempts();
	st_error_clear(&err);
	assert_int_equal(st_store_read(s, "k", 0, &data, &len, NULL, &err), ST_EIO);
	assert_int_equal(st__http_attempts() - before, 2);
	assert_non_null(strstr(err.message, "gs: cannot reach 127.0.0.1:9 (objects.get 'b/p/k'): "));
	assert_non_null(strstr(err.message, "(2 attempts); credentials: the access token in "
					    "GOOGLE_OAUTH_ACCESS_TOKEN (GOOGLE_CREDENTIALS unset), "
					    "endpoint http://127.0.0.1:9/storage/v1 from "
					    "GOOGLE_STORAGE_CUSTOM_ENDPOINT"));
	st_store_free(s);
}

static void fail_plan(const char *json)
{
	gcsfake_ctl(&fake, "fail", json);
}

/* A server failing half-way: bounded retries, nothing changed where a write did not end. */
static void test_fake_faults(void **state)
{
	st_error err;
	st_store_write_opts o = ST_STORE_WRITE_OPTS_INIT;
	char *data = NULL, *log;
	size_t len;
	(void)state;
	net_retries(2);
	st_store *s = open_fake("b", key_file, NULL, NULL, &err);
	st_set_net(NULL, NULL);
	st_store *direct = open_fake("b", NULL, "ya29.FIXED", NULL, &err);
	assert_int_equal(st_store_write(direct, "s.json", "old", 3, NULL, NULL), ST_OK);

	/* the token endpoint busy once: asked again */
	fail_plan("[{\"path\":\"/token\",\"action\":\"status\",\"status\":503}]");
	expect_content(s, "s.json", "old");
	/* every attempt of an upload gets 503: three attempts, an error, the old object */
	fail_plan("[{\"path\":\"/upload/\",\"action\":\"status\",\"status\":503,\"times\":9}]");
	gcsfake_log_clear(&fake);
	st_error_clear(&err);
	assert_int_equal(st_store_write(s, "s.json", "new", 3, NULL, &err), ST_EIO);
	log = gcsfake_log(&fake);
	assert_int_equal(gcsfake_count(log, "\"fault\":\"status\""), 3);
	free(log);
	assert_non_null(strstr(err.message, "gs: objects.insert 'b/p/s.json' on "));
	assert_non_null(strstr(err.message, "failed: HTTP 503 backendError: Backend Error (3 "
					    "attempts); credentials: service account"));
	assert_null(strstr(err.message, "ya29"));
	fail_plan("[]");
	expect_content(direct, "s.json", "old");
	/* no answer, then an answer: written */
	fail_plan("[{\"path\":\"/upload/\",\"action\":\"drop\"}]");
	assert_int_equal(st_store_write(s, "s.json", "new2", 4, NULL, NULL), ST_OK);
	expect_content(direct, "s.json", "new2");
	/* a create-only write whose answer was lost finds its own object: done */
	o.flags = ST_STORE_CREATE_ONLY;
	fail_plan("[{\"path\":\"/upload/\",\"action\":\"lose\"}]");
	assert_int_equal(st_store_write(s, "lock.json", "mine", 4, &o, NULL), ST_OK);
	expect_content(direct, "lock.json", "mine");
	/* ... and someone else's: refused */
	assert_int_equal(st_store_write(direct, "lock2.json", "theirs", 6, NULL, NULL), ST_OK);
	fail_plan("[{\"path\":\"/upload/\",\"action\":\"lose\"}]");
	assert_int_equal(st_store_write(s, "lock2.json", "mine", 4, &o, NULL), ST_EEXIST);
	expect_content(direct, "lock2.json", "theirs");
	/* a read cut short: read again */
	fail_plan("[{\"method\":\"GET\",\"path\":\"/o/p%2Fs.json\",\"action\":\"cut\"}]");
	expect_content(s, "s.json", "new2");
	/* a delete whose answer was lost: done */
	fail_plan("[{\"method\":\"DELETE\",\"action\":\"lose\"}]");
	assert_int_equal(st_store_delete(s, "lock2.json", NULL), ST_OK);
	assert_int_equal(st_store_delete(direct, "lock2.json", NULL), ST_ENOTFOUND);
	/* a read without answers: bounded */
	fail_plan("[{\"method\":\"GET\",\"action\":\"drop\",\"times\":9}]");
	st_error_clear(&err);
	assert_int_equal(st_store_read(s, "s.json", 0, &data, &len, NULL, &err), ST_EIO);
	assert_non_null(strstr(err.message, "(3 attempts); credentials: service account"));
	fail_plan("[]");
	expect_content(direct, "s.json", "new2");
	st_store_free(s);
	st_store_free(direct);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jwt_vector),
		cmocka_unit_test(test_config),
	};
	const struct CMUnitTest fake_tests[] = {
		cmocka_unit_test(test_fake_service_account),
		cmocka_unit_test(test_fake_token_expiry),
		cmocka_unit_test(test_fake_wrong_credentials),
		cmocka_unit_test(test_fake_missing_bucket_unreachable),
		cmocka_unit_test(test_fake_faults),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	return rc | cmocka_run_group_tests(fake_tests, fake_up, fake_down);
}
