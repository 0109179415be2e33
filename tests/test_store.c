/*
 * The store conformance suite: every case runs against every store in `stores` (a fresh, empty
 * store each time): the file store, S3 on the test servers' radosgw, Azure Blob Storage on their
 * Azurite with Shared Key and with a SAS token, PostgreSQL (skipped when they are not running, a
 * failure then when $CI is set), Google Cloud Storage on tests/gcsfake.js (started here, never
 * skipped) with a service account key and as STORAGE_EMULATOR_HOST. A new implementation adds
 * one line there, or is run
 * without a rebuild by naming a URL whose store is empty and may be filled:
 *   STATETOOL_TEST_STORE_URL=s3://bucket/prefix?endpoint=... tests/test_store
 * (each case then works under its own random key prefix inside it).
 */
#include "testutil.h"

#include "gcsfake.h"
#include "servers.h"
#include "store/azblob.h"
#include "store/gcs.h"
#include "store/s3.h"
#include "store/store_impl.h"

#include <dirent.h>
#include <fcntl.h>
#include <sodium.h>
#include <time.h>

typedef struct fixture {
	st_store *s;
	char *dir; /* the file store's directory, removed after */
	char pre[40]; /* every key of the case starts with it ("" or "run-XXXX/") */
} fixture;

typedef struct store_kind {
	const char *name;
	int (*open)(fixture *f);
} store_kind;

static int open_file_store(fixture *f)
{
	f->dir = tu_tmpdir();
	return st_store_open(&f->s, f->dir, NULL);
}

static int open_file_url_store(fixture *f)
{
	char *url;
	int rc;
	f->dir = tu_tmpdir();
	url = st_asprintf("file://%s", f->dir);
	rc = st_store_open(&f->s, url, NULL);
	free(url);
	return rc;
}

static int open_env_store(fixture *f)
{
	const char *url = getenv("STATETOOL_TEST_STORE_URL");
	char rnd[17];
	if (!url || !*url)
		return 1; /* not asked for: skipped */
	st_error err;
	int rc;
	st_random_hex(rnd, 8);
	snprintf(f->pre, sizeof(f->pre), "run-%s/", rnd);
	st_error_clear(&err);
	rc = st_store_open(&f->s, url, &err);
	if (rc != ST_OK)
		print_error("%s\n", err.message);
	return rc;
}

/* S3 on the test servers' radosgw: a fresh key prefix in one bucket for each case, pages of 2
 * keys so listings go through continuation tokens. */
static int open_s3_store(fixture *f)
{
	static int said;
	char *ep = tu_server_var("ST_TEST_S3_ENDPOINT"), *ak = tu_server_var("ST_TEST_S3_ACCESS_KEY");
	char *sk = tu_server_var("ST_TEST_S3_SECRET_KEY"), *region = tu_server_var("ST_TEST_S3_REGION");
	char rnd[17], *url;
	st_error err;
	int rc = 1;

	if (!ep || !ak || !sk) {
		if (tu_servers_required())
			fail_msg("no S3 test server (ST_TEST_S3_* in the servers' env file) and $CI "
				 "is set: a skip is a failure there");
		if (!said++)
			print_message("s3: skipped, no test server (sh tests/servers/ctl start "
				      "radosgw)\n");
		goto out;
	}
	setenv("AWS_ACCESS_KEY_ID", ak, 1);
	setenv("AWS_SECRET_ACCESS_KEY", sk, 1);
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_PROFILE");
	st_random_hex(rnd, 8);
	url = st_asprintf("s3://statetool-conformance/case-%s?endpoint=%s&use_path_style=true&"
			  "region=%s",
			  rnd, ep, region ? region : "us-east-1");
	st_error_clear(&err);
	rc = st_store_open(&f->s, url, &err);
	if (rc == ST_OK)
		rc = st__s3_create_bucket(f->s, &err);
	if (rc != ST_OK)
		fail_msg("s3: %s", err.message);
	st__s3_max_keys = 2;
	free(url);
out:
	free(ep);
	free(ak);
	free(sk);
	free(region);
	return rc;
}

/* Azure Blob Storage on Azurite (sh tests/servers/ctl start azurite): a container of this run's
 * own, named by the emulator's path form (a 127.0.0.1 domain), Shared Key from
 * AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY; each case under its own prefix. Without Azurite:
 * skipped, except in CI. */
static char *azurite_container;
static int azurite_state; /* 0: not tried, 1: there, -1: skipped */

/* A service SAS for a container (version 2021-08-06, all permissions, valid for an hour), as
 * "Create a service SAS" describes it: URL-encoded query parameters, new. */
static char *azurite_sas(const char *account, const char *key_b64, const char *container)
{
	unsigned char key[64], mac[crypto_auth_hmacsha256_BYTES];
	char se[32], sig[64], *sts, *out;
	size_t klen = 0;
	time_t t = time(NULL) + 3600;
	struct tm tm;
	crypto_auth_hmacsha256_state st;
	st_buf b;
	assert_int_equal(sodium_base642bin(key, sizeof(key), key_b64, strlen(key_b64), NULL, &klen,
					   NULL, sodium_base64_VARIANT_ORIGINAL),
			 0);
	gmtime_r(&t, &tm);
	strftime(se, sizeof(se), "%Y-%m-%dT%H:%M:%SZ", &tm);
	sts = st_asprintf("racwdl\n\n%s\n/blob/%s/%s\n\n\n\n2021-08-06\nc\n\n\n\n\n\n\n", se,
			  account, container);
	crypto_auth_hmacsha256_init(&st, key, klen);
	crypto_auth_hmacsha256_update(&st, (unsigned char *)sts, strlen(sts));
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_bin2base64(sig, sizeof(sig), mac, sizeof(mac), sodium_base64_VARIANT_ORIGINAL);
	st_buf_init(&b);
	st_buf_adds(&b, "sv=2021-08-06&sr=c&sp=racwdl&se=");
	st__azblob_url_encode(&b, se, strlen(se), 0);
	st_buf_adds(&b, "&sig=");
	st__azblob_url_encode(&b, sig, strlen(sig), 0);
	out = st_buf_take(&b, NULL);
	free(sts);
	return out;
}

static int open_azurite(fixture *f, int sas)
{
	char *ep, *acct, *key, *url = NULL;
	char rnd[17];
	int rc;
	if (azurite_state < 0)
		return 1;
	ep = tu_server_var("ST_TEST_AZURE_ENDPOINT");
	acct = tu_server_var("ST_TEST_AZURE_ACCOUNT");
	key = tu_server_var("ST_TEST_AZURE_KEY");
	if (!ep || !acct || !key || strncmp(ep, "http://", 7)) {
		free(ep);
		free(acct);
		free(key);
		if (tu_servers_required())
			fail_msg("no Azurite (ST_TEST_AZURE_* in the servers' env file) and $CI is "
				 "set: a skip is a failure there");
		print_message("azblob: skipped, no test server (sh tests/servers/ctl start "
			      "azurite)\n");
		azurite_state = -1;
		return 1;
	}
	if (!azurite_container) {
		st_random_hex(rnd, 8);
		azurite_container = st_asprintf("conformance-%s", rnd);
	}
	/* the variables are read when a store opens, and only then */
	unsetenv("AZURE_STORAGE_CONNECTION_STRING");
	unsetenv("AZURE_STORAGE_SAS_TOKEN");
	if (sas && azurite_state > 0) {
		char *token = azurite_sas(acct, key, azurite_container);
		unsetenv("AZURE_STORAGE_KEY");
		setenv("AZURE_STORAGE_ACCOUNT", acct, 1);
		setenv("AZURE_STORAGE_SAS_TOKEN", token, 1);
		free(token);
	} else {
		setenv("AZURE_STORAGE_ACCOUNT", acct, 1);
		setenv("AZURE_STORAGE_KEY", key, 1);
	}
	/* http://127.0.0.1:PORT/ACCOUNT: the domain is 127.0.0.1:PORT */
	url = st_asprintf("azblob://%s/base/dir?domain=%.*s&protocol=http", azurite_container,
			  (int)strcspn(ep + 7, "/"), ep + 7);
	rc = sas && azurite_state <= 0 ? ST_EIO : st_store_open(&f->s, url, NULL);
	unsetenv("AZURE_STORAGE_ACCOUNT");
	unsetenv("AZURE_STORAGE_KEY");
	unsetenv("AZURE_STORAGE_SAS_TOKEN");
	if (rc == ST_OK && !azurite_state) {
		st_error err;
		st_error_clear(&err);
		if ((rc = st__azblob_container_create(f->s, &err)) != ST_OK)
			fprintf(stderr, "cannot create the container: %s\n", err.message);
		azurite_state = rc == ST_OK ? 1 : 0;
	}
	st_random_hex(rnd, 8);
	snprintf(f->pre, sizeof(f->pre), "run-%s/", rnd);
	free(url);
	free(ep);
	free(acct);
	free(key);
	return rc;
}

static int open_azurite_store(fixture *f) { return open_azurite(f, 0); }
static int open_azurite_sas_store(fixture *f) { return open_azurite(f, 1); }

/* PostgreSQL on the test servers' cluster: one table, a fresh key prefix for each case (under
 * the database name, the prefix Pulumi gives every key). */
static int open_pg_store(fixture *f)
{
	static int said;
	char *url = tu_server_var("ST_TEST_PG_URL"), *full, rnd[17];
	st_error err;
	int rc;

	if (!url) {
		if (tu_servers_required())
			fail_msg("no PostgreSQL test server (ST_TEST_PG_URL in the servers' env file) "
				 "and $CI is set: a skip is a failure there");
		if (!said++)
			print_message("postgres: skipped, no test server (sh tests/servers/ctl start "
				      "postgres)\n");
		return 1;
	}
	st_random_hex(rnd, 8);
	snprintf(f->pre, sizeof(f->pre), "run-%s/", rnd);
	full = st_asprintf("%s?sslmode=disable&table=statetool_conformance", url);
	st_error_clear(&err);
	rc = st_store_open(&f->s, full, &err);
	if (rc != ST_OK)
		fail_msg("postgres: %s", err.message);
	free(full);
	free(url);
	return rc;
}

/* gs:// on tests/gcsfake.js: one fake that wants the test service account's tokens (its key
 * file named by GOOGLE_APPLICATION_CREDENTIALS, the fake's JSON API by
 * GOOGLE_STORAGE_CUSTOM_ENDPOINT), one without authentication reached as STORAGE_EMULATOR_HOST;
 * each case under its own prefix of bucket "conformance", pages of 2 objects. */
static gcsfake gcs_fakes[2] = {{-1, -1, 0}, {-1, -1, 0}};
static char *gcs_dir;

static int open_gcs(fixture *f, int emulator)
{
	static const char *const auth_args[] = {"--bucket", "conformance", NULL};
	static const char *const emu_args[] = {"--bucket", "conformance", "--no-auth", NULL};
	gcsfake *g = &gcs_fakes[emulator];
	char rnd[17], *url, *ep = NULL, *key = NULL;
	st_error err;
	int rc;

	if (g->pid < 0)
		*g = gcsfake_start(emulator ? emu_args : auth_args);
	if (!gcs_dir)
		gcs_dir = tu_tmpdir();
	unsetenv("GOOGLE_CREDENTIALS");
	unsetenv("GOOGLE_OAUTH_ACCESS_TOKEN");
	unsetenv("GOOGLE_BACKEND_STORAGE_CUSTOM_ENDPOINT");
	if (emulator) {
		ep = st_asprintf("127.0.0.1:%d", g->port);
		setenv("STORAGE_EMULATOR_HOST", ep, 1);
	} else {
		key = gcsfake_key_file(g, gcs_dir, "sa-key.pem");
		ep = st_asprintf("http://127.0.0.1:%d/storage/v1/", g->port);
		setenv("GOOGLE_APPLICATION_CREDENTIALS", key, 1);
		setenv("GOOGLE_STORAGE_CUSTOM_ENDPOINT", ep, 1);
	}
	st_random_hex(rnd, 8);
	url = st_asprintf("gs://conformance/case-%s", rnd);
	st_error_clear(&err);
	rc = st_store_open(&f->s, url, &err);
	if (rc != ST_OK)
		fail_msg("gs: %s", err.message);
	unsetenv("STORAGE_EMULATOR_HOST");
	unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	unsetenv("GOOGLE_STORAGE_CUSTOM_ENDPOINT");
	st__gcs_test_page(2);
	free(url);
	free(ep);
	free(key);
	return rc;
}

static int open_gcs_store(fixture *f) { return open_gcs(f, 0); }
static int open_gcs_emulator_store(fixture *f) { return open_gcs(f, 1); }

static const store_kind stores[] = {
	{"file (plain path)", open_file_store},
	{"file:// URL", open_file_url_store},
	{"s3 (the test servers' radosgw)", open_s3_store},
	{"postgres (the test servers' PostgreSQL)", open_pg_store},
	{"$STATETOOL_TEST_STORE_URL", open_env_store},
	{"azblob:// on Azurite", open_azurite_store},
	{"azblob:// on Azurite with a SAS token only", open_azurite_sas_store},
	{"gs:// on tests/gcsfake.js with a service account key", open_gcs_store},
	{"gs:// on tests/gcsfake.js as STORAGE_EMULATOR_HOST", open_gcs_emulator_store},
};

static char *K(const fixture *f, const char *key)
{
	static char buf[4][512];
	static int i;
	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s%s", f->pre, key);
	return buf[i];
}

static void put(const fixture *f, const char *key, const char *text)
{
	assert_int_equal(st_store_write(f->s, K(f, key), text, strlen(text), NULL, NULL), ST_OK);
}

static void expect(const fixture *f, const char *key, const char *text)
{
	char *data = NULL;
	size_t len = 0;
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st_store_read(f->s, K(f, key), 0, &data, &len, NULL, &err), ST_OK);
	assert_int_equal(len, strlen(text));
	assert_memory_equal(data, text, len);
	assert_int_equal(data[len], '\0');
	free(data);
}

static void expect_missing(const fixture *f, const char *key)
{
	char *data = NULL;
	size_t len = 0;
	assert_int_equal(st_store_read(f->s, K(f, key), 0, &data, &len, NULL, NULL), ST_ENOTFOUND);
	assert_null(data);
}

/* The keys a listing of `prefix` gives, joined by spaces, the case's prefix taken off. */
static char *keys_of(const fixture *f, const char *prefix, unsigned flags)
{
	st_store_entry *e = NULL;
	size_t n = 0, pl = strlen(f->pre);
	st_buf b;
	assert_int_equal(st_store_list(f->s, K(f, prefix), flags, &e, &n, NULL), ST_OK);
	st_buf_init(&b);
	for (size_t i = 0; i < n; i++) {
		assert_true(strncmp(e[i].key, f->pre, pl) == 0);
		st_buf_printf(&b, "%s%s", i ? " " : "", e[i].key + pl);
	}
	st_store_entries_free(e, n);
	if (!b.len) {
		st_buf_free(&b);
		return strdup("");
	}
	return st_buf_take(&b, NULL);
}

/* ---- the cases ---- */

static void case_roundtrip(fixture *f)
{
	st_store_info a, b;
	char *data;
	size_t len;
	put(f, "a/b/one.json", "{\"x\":1}");
	expect(f, "a/b/one.json", "{\"x\":1}");
	assert_int_equal(st_store_read(f->s, K(f, "a/b/one.json"), 0, &data, &len, &a, NULL), ST_OK);
	free(data);
	assert_int_equal(a.size, 7);
	assert_true(a.mtime_ns > 0);
	assert_true(a.etag[0] != '\0');
	assert_int_equal(st_store_stat(f->s, K(f, "a/b/one.json"), &b, NULL), ST_OK);
	assert_int_equal(b.size, 7);
	assert_string_equal(a.etag, b.etag);
	/* an empty object is an object */
	put(f, "empty", "");
	expect(f, "empty", "");
	/* binary bytes, NULs included */
	assert_int_equal(st_store_write(f->s, K(f, "bin"), "\0\1\2\xff", 4, NULL, NULL), ST_OK);
	assert_int_equal(st_store_read(f->s, K(f, "bin"), 0, &data, &len, NULL, NULL), ST_OK);
	assert_int_equal(len, 4);
	assert_memory_equal(data, "\0\1\2\xff", 4);
	free(data);
}

static void case_missing(fixture *f)
{
	st_store_info info;
	expect_missing(f, "nothing/here.json");
	assert_int_equal(st_store_stat(f->s, K(f, "nothing"), &info, NULL), ST_ENOTFOUND);
	put(f, "dir/x", "1");
	/* a "directory" is no object */
	assert_int_equal(st_store_stat(f->s, K(f, "dir"), &info, NULL), ST_ENOTFOUND);
	assert_int_equal(st_store_delete(f->s, K(f, "nothing"), NULL), ST_ENOTFOUND);
}

static void case_replace(fixture *f)
{
	st_store_info a, b;
	put(f, "s.json", "old");
	assert_int_equal(st_store_stat(f->s, K(f, "s.json"), &a, NULL), ST_OK);
	put(f, "s.json", "the new content");
	expect(f, "s.json", "the new content");
	assert_int_equal(st_store_stat(f->s, K(f, "s.json"), &b, NULL), ST_OK);
	assert_int_equal(b.size, 15);
	assert_string_not_equal(a.etag, b.etag);
	/* nothing else appeared beside it */
	char *k = keys_of(f, "", 0);
	assert_string_equal(k, "s.json");
	free(k);
}

static void case_create_only(fixture *f)
{
	st_store_write_opts o = ST_STORE_WRITE_OPTS_INIT;
	st_error err;
	o.flags = ST_STORE_CREATE_ONLY;
	assert_int_equal(st_store_write(f->s, K(f, "locks/a.json"), "mine", 4, &o, NULL), ST_OK);
	expect(f, "locks/a.json", "mine");
	st_error_clear(&err);
	assert_int_equal(st_store_write(f->s, K(f, "locks/a.json"), "theirs", 6, &o, &err),
			 ST_EEXIST);
	assert_int_equal(err.code, ST_EEXIST);
	expect(f, "locks/a.json", "mine");
	char *k = keys_of(f, "locks/", 0);
	assert_string_equal(k, "locks/a.json");
	free(k);
}

static void case_list(fixture *f)
{
	char *k;
	put(f, "stacks/p/b.json", "1");
	put(f, "stacks/p/a.json.gz", "2");
	put(f, "stacks/p/a.json", "3");
	put(f, "stacks/p/a.json.zst", "4");
	put(f, "stacks/q/deep/x.json", "5");
	put(f, "stacks/top.json", "6");
	put(f, "stacksX", "7");
	k = keys_of(f, "stacks/", 0);
	assert_string_equal(k, "stacks/p/a.json stacks/p/a.json.gz stacks/p/a.json.zst "
			       "stacks/p/b.json stacks/q/deep/x.json stacks/top.json");
	free(k);
	/* a prefix need not end at a '/' */
	k = keys_of(f, "stacks/p/a.json", 0);
	assert_string_equal(k, "stacks/p/a.json stacks/p/a.json.gz stacks/p/a.json.zst");
	free(k);
	/* by levels: objects of the level and each sub-level once */
	k = keys_of(f, "stacks/", ST_STORE_LIST_DIRS);
	assert_string_equal(k, "stacks/p/ stacks/q/ stacks/top.json");
	free(k);
	k = keys_of(f, "nothing/", 0);
	assert_string_equal(k, "");
	free(k);
	/* sizes come with the listing, but for postgres:// (-1: unknown; its listing reads no
	 * object's data) */
	st_store_entry *e;
	size_t n;
	char *where = st_store_where(f->s, "");
	int sizes = where && strncmp(where, "postgres://", 11) != 0;
	free(where);
	assert_int_equal(st_store_list(f->s, K(f, "stacks/top"), 0, &e, &n, NULL), ST_OK);
	assert_int_equal(n, 1);
	assert_int_equal(e[0].info.size, sizes ? 1 : -1);
	assert_true(e[0].info.mtime_ns > 0);
	assert_true(e[0].info.etag[0] != '\0');
	st_store_entries_free(e, n);
	/* by levels needs a level */
	assert_int_equal(st_store_list(f->s, K(f, "stacks"), ST_STORE_LIST_DIRS, &e, &n, NULL),
			 ST_EINVAL);
}

static void case_delete(fixture *f)
{
	put(f, "a/x", "1");
	put(f, "a/y", "2");
	assert_int_equal(st_store_delete(f->s, K(f, "a/x"), NULL), ST_OK);
	expect_missing(f, "a/x");
	expect(f, "a/y", "2");
	char *k = keys_of(f, "a/", 0);
	assert_string_equal(k, "a/y");
	free(k);
	assert_int_equal(st_store_delete(f->s, K(f, "a/x"), NULL), ST_ENOTFOUND);
}

static void case_copy(fixture *f)
{
	put(f, "s.json", "content");
	put(f, "s.json.bak", "older");
	assert_int_equal(st_store_copy(f->s, K(f, "s.json"), K(f, "s.json.bak"), NULL), ST_OK);
	expect(f, "s.json.bak", "content");
	assert_int_equal(st_store_copy(f->s, K(f, "s.json"), K(f, "other/dir/s.json"), NULL), ST_OK);
	expect(f, "other/dir/s.json", "content");
	/* the copy is independent of its source */
	put(f, "s.json", "changed");
	expect(f, "s.json.bak", "content");
	expect(f, "other/dir/s.json", "content");
	assert_int_equal(st_store_copy(f->s, K(f, "none"), K(f, "x"), NULL), ST_ENOTFOUND);
	expect_missing(f, "x");
	assert_int_equal(st_store_copy(f->s, K(f, "s.json"), K(f, "s.json"), NULL), ST_EINVAL);
}

static void case_bad_keys(fixture *f)
{
	static const char *const bad[] = {"",        "/abs",   "a//b",    "a/",      "../x",
					  "a/../b",  "./a",    "a/./b",   "..",      ".",
					  "a\\b",    "a\nb",   "a\tb",    "a\x7f",   "a\x01"};
	char *data;
	size_t len;
	st_error err;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char key[64];
		snprintf(key, sizeof(key), "%s%s", bad[i][0] == '/' ? "" : f->pre, bad[i]);
		assert_false(st_store_key_valid(key));
		st_error_clear(&err);
		assert_int_equal(st_store_write(f->s, key, "x", 1, NULL, &err), ST_EINVAL);
		assert_non_null(strstr(err.message, "invalid key"));
		assert_int_equal(st_store_read(f->s, key, 0, &data, &len, NULL, NULL), ST_EINVAL);
		assert_int_equal(st_store_delete(f->s, key, NULL), ST_EINVAL);
		assert_int_equal(st_store_copy(f->s, key, K(f, "ok"), NULL), ST_EINVAL);
		assert_int_equal(st_store_stat(f->s, key, NULL, NULL), ST_EINVAL);
	}
	assert_int_equal(st_store_list(f->s, "../", 0, &(st_store_entry *){NULL}, &len, NULL),
			 ST_EINVAL);
	assert_true(st_store_key_valid("a/b.c/.hidden/..x/x.."));
	/* nothing was written anywhere */
	char *k = keys_of(f, "", 0);
	assert_string_equal(k, "");
	free(k);
}

static int refuse(void *ctx)
{
	(*(int *)ctx)++;
	return ST_EINTEGRITY;
}

static int accept_(void *ctx)
{
	(*(int *)ctx)++;
	return ST_OK;
}

static void case_proceed(fixture *f)
{
	st_store_write_opts o = ST_STORE_WRITE_OPTS_INIT;
	int calls = 0;
	put(f, "s.json", "old");
	o.proceed = refuse;
	o.proceed_ctx = &calls;
	char *bak = strdup(K(f, "s.json.bak"));
	o.backup_key = bak;
	assert_int_equal(st_store_write(f->s, K(f, "s.json"), "new", 3, &o, NULL), ST_EINTEGRITY);
	assert_int_equal(calls, 1);
	expect(f, "s.json", "old");
	expect_missing(f, "s.json.bak"); /* no backup either */
	char *k = keys_of(f, "", 0);
	assert_string_equal(k, "s.json");
	free(k);
	/* a refused create leaves nothing */
	assert_int_equal(st_store_write(f->s, K(f, "new.json"), "n", 1, &o, NULL), ST_EINTEGRITY);
	expect_missing(f, "new.json");
	/* accepted: the hook ran once, the backup holds the old content */
	o.proceed = accept_;
	assert_int_equal(st_store_write(f->s, K(f, "s.json"), "new", 3, &o, NULL), ST_OK);
	assert_int_equal(calls, 3);
	expect(f, "s.json", "new");
	expect(f, "s.json.bak", "old");
	/* a backup of nothing is no error */
	assert_int_equal(st_store_write(f->s, K(f, "fresh"), "f", 1, &o, NULL), ST_OK);
	expect_missing(f, "s.json.bak.bak");
	free(bak);
}

typedef struct chunks {
	int n;
	int fail_at;
} chunks;

static int fill_chunks(void *ctx, st_store_writer *w, st_error *err)
{
	chunks *c = ctx;
	char line[32];
	for (int i = 0; i < c->n; i++) {
		if (i == c->fail_at)
			return st__err(err, ST_ENOMEM, "out of memory");
		snprintf(line, sizeof(line), "line %04d\n", i);
		int rc = st_store_writer_write(w, line, strlen(line), err);
		if (rc)
			return rc;
	}
	return ST_OK;
}

static void case_fill(fixture *f)
{
	chunks c = {2000, -1};
	char *data;
	size_t len;
	st_error err;
	assert_int_equal(st_store_write_fill(f->s, K(f, "big"), fill_chunks, &c, NULL, NULL), ST_OK);
	assert_int_equal(st_store_read(f->s, K(f, "big"), 0, &data, &len, NULL, NULL), ST_OK);
	assert_int_equal(len, 2000 * 10);
	assert_memory_equal(data + 1999 * 10, "line 1999\n", 10);
	free(data);
	/* a fill that fails half-way changes nothing */
	c.fail_at = 1000;
	st_error_clear(&err);
	assert_int_equal(st_store_write_fill(f->s, K(f, "big"), fill_chunks, &c, NULL, &err),
			 ST_ENOMEM);
	assert_int_equal(st_store_read(f->s, K(f, "big"), 0, &data, &len, NULL, NULL), ST_OK);
	assert_int_equal(len, 2000 * 10);
	free(data);
	char *k = keys_of(f, "", 0);
	assert_string_equal(k, "big");
	free(k);
	/* the read limit */
	st_error_clear(&err);
	assert_int_equal(st_store_read(f->s, K(f, "big"), 100, &data, &len, NULL, &err), ST_ELIMIT);
	assert_null(data);
}

/* Keys with the characters URLs, XML and shells treat specially are keys like any other. */
static void case_odd_keys(fixture *f)
{
	static const char *const keys[] = {"sp ace/a+b=c&d.json", "q?x#y%20z;w,v@u:t$s!r",
					   "\xc3\xbc/\xc3\xb1 \xe2\x82\xac.json", "x'y\"z<a>&amp;",
					   "~tilde/-._*()[]{}|^`"};
	size_t n = sizeof(keys) / sizeof(keys[0]);
	for (size_t i = 0; i < n; i++) {
		assert_true(st_store_key_valid(keys[i]));
		put(f, keys[i], keys[i]);
	}
	for (size_t i = 0; i < n; i++) {
		st_store_info info;
		expect(f, keys[i], keys[i]);
		assert_int_equal(st_store_stat(f->s, K(f, keys[i]), &info, NULL), ST_OK);
		assert_int_equal(info.size, (long long)strlen(keys[i]));
	}
	char *k = keys_of(f, "", 0);
	assert_string_equal(k, "q?x#y%20z;w,v@u:t$s!r sp ace/a+b=c&d.json x'y\"z<a>&amp; "
			       "~tilde/-._*()[]{}|^` \xc3\xbc/\xc3\xb1 \xe2\x82\xac.json");
	free(k);
	k = keys_of(f, "sp ace/a+", 0);
	assert_string_equal(k, "sp ace/a+b=c&d.json");
	free(k);
	k = keys_of(f, "", ST_STORE_LIST_DIRS);
	assert_string_equal(k, "q?x#y%20z;w,v@u:t$s!r sp ace/ x'y\"z<a>&amp; ~tilde/ \xc3\xbc/");
	free(k);
	assert_int_equal(st_store_copy(f->s, K(f, keys[0]), K(f, "copy of/a+b c"), NULL), ST_OK);
	expect(f, "copy of/a+b c", keys[0]);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(st_store_delete(f->s, K(f, keys[i]), NULL), ST_OK);
	k = keys_of(f, "", 0);
	assert_string_equal(k, "copy of/a+b c");
	free(k);
}

typedef void (*case_fn)(fixture *f);

static void run_everywhere(case_fn fn)
{
	for (size_t i = 0; i < sizeof(stores) / sizeof(stores[0]); i++) {
		fixture f;
		memset(&f, 0, sizeof(f));
		int rc = stores[i].open(&f);
		if (rc == 1)
			continue;
		if (rc != ST_OK)
			fail_msg("cannot open store %s", stores[i].name);
		fn(&f);
		st_store_free(f.s);
		if (f.dir) {
			tu_rmdir(f.dir);
		}
	}
}

#define CASE(name)                                                                            \
	static void test_##name(void **state)                                                 \
	{                                                                                      \
		(void)state;                                                                   \
		run_everywhere(case_##name);                                                   \
	}
CASE(roundtrip)
CASE(missing)
CASE(replace)
CASE(create_only)
CASE(list)
CASE(delete)
CASE(copy)
CASE(bad_keys)
CASE(proceed)
CASE(fill)
CASE(odd_keys)

/* ---- the file store's own guarantees ---- */

static void test_open_errors(void **state)
{
	st_store *s = NULL;
	st_error err;
	(void)state;
	st_error_clear(&err);
	assert_int_equal(st_store_open(&s, "/nonexistent/statetool-store", &err), ST_ENOTFOUND);
	assert_null(s);
	st_error_clear(&err);
	assert_int_equal(st_store_open(&s, "ftp://x", &err), ST_EUNSUPPORTED);
	assert_string_equal(err.message,
			    "backend 'ftp://x' is not supported: statetool works on DIY backends in a "
			    "local directory (file://PATH), S3 (s3://BUCKET), Azure Blob Storage "
			    "(azblob://CONTAINER), Google Cloud Storage (gs://BUCKET) and PostgreSQL "
			    "(postgres://)");
	st_error_clear(&err);
	assert_int_equal(st_store_open(&s, "file://", &err), ST_EINVAL);
	char *dir = tu_tmpdir(), *url = st_asprintf("file://%s", dir);
	assert_int_equal(st_store_open(&s, url, NULL), ST_OK);
	assert_string_equal(st_store_url(s), url);
	assert_string_equal(st_store_scheme(s), "file");
	st_store_free(s);
	st_store_free(NULL);
	free(url);
	tu_rmdir(dir);
}

/* file:// URLs as Pulumi reads them: the query is gocloud fileblob's parameters (checked as
 * fileblob checks them, an unknown one refused), the path before it percent-decoded. */
static void test_file_url(void **state)
{
	static const struct {
		const char *tail, *msg;
	} bad[] = {
		{"?foo=bar", "file: invalid query parameter \"foo\" (file:// takes no_tmp_dir, "
			     "create_dir, dir_file_mode, metadata, base_url and secret_key_path)"},
		{"?no_tmp_dir=true&=x", "file: invalid query parameter \"\" (file:// takes"},
		{"?metadata=sidecar", "file: invalid value \"sidecar\" for query parameter "
				      "\"metadata\": skip (or nothing) is expected"},
		{"?dir_file_mode=0o789", "file: invalid value \"0o789\" for query parameter "
					 "\"dir_file_mode\": a file mode (0755, 0o755, 493...) is "
					 "expected"},
		{"?dir_file_mode=0x100000000", "\"dir_file_mode\": a file mode"},
		{"?base_url=/show", "file: the query parameters \"base_url\" and \"secret_key_path\" "
				    "go together"},
		{"/x%zz", "file: the path of 'file://DIR/x%zz' has a malformed %-escape"},
		{"/x%00y", "file: the path of 'file://DIR/x%00y' has a NUL (%00)"},
	};
	char *dir = tu_tmpdir(), *sub = st_asprintf("%s/a b+c", dir), *url, *w;
	st_store *s = NULL;
	st_error err;
	(void)state;
	assert_int_equal(mkdir(sub, 0755), 0);
	/* %20 is a space, '+' in a path a plus; the query is fileblob's, and changes nothing */
	url = st_asprintf("file://%s/a%%20b+c?no_tmp_dir=false&create_dir=1&dir_file_mode=0o755&"
			  "metadata=skip&base_url=%%2Fshow&secret_key_path=k&a%%zz=dropped&x;y=1",
			  dir);
	st_error_clear(&err);
	if (st_store_open(&s, url, &err) != ST_OK)
		fail_msg("%s: %s", url, err.message);
	w = st_store_where(s, "k");
	char *where = st_asprintf("%s/a b+c/k", dir);
	assert_string_equal(w, where);
	free(where);
	free(w);
	assert_string_equal(st_store_url(s), url); /* as given, for messages */
	st_store_free(s);
	free(url);
	/* `~` is expanded before the path is decoded, as Pulumi's massageBlobPath expands it:
	 * file://~/ is $HOME, file://%7E/ a directory named `~` (review25 L5) */
	char *home = getenv("HOME") ? st_strdup(getenv("HOME")) : NULL;
	assert_int_equal(setenv("HOME", dir, 1), 0);
	assert_int_equal(st_store_open(&s, "file://~/a%20b+c", NULL), ST_OK);
	w = st_store_where(s, "k");
	where = st_asprintf("%s/a b+c/k", dir);
	assert_string_equal(w, where);
	free(where);
	free(w);
	st_store_free(s);
	char cwd[4096], *tdir = st_asprintf("%s/~", dir), *tsub = st_asprintf("%s/~/a b+c", dir);
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(mkdir(tdir, 0755), 0);
	assert_int_equal(mkdir(tsub, 0755), 0);
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(setenv("HOME", "/nonexistent", 1), 0);
	assert_int_equal(st_store_open(&s, "file://%7E/a%20b+c", NULL), ST_OK);
	w = st_store_where(s, "k");
	assert_string_equal(w, "~/a b+c/k");
	free(w);
	st_store_free(s);
	assert_int_equal(st_store_open(&s, "file://%7e", NULL), ST_OK);
	w = st_store_where(s, "k");
	assert_string_equal(w, "~/k");
	free(w);
	st_store_free(s);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(rmdir(tsub), 0);
	assert_int_equal(rmdir(tdir), 0);
	free(tsub);
	free(tdir);
	if (home)
		assert_int_equal(setenv("HOME", home, 1), 0);
	else
		unsetenv("HOME");
	free(home);
	/* a '#' ends the path as it ends it in the URL fileblob opens */
	url = st_asprintf("file://%s/a%%20b+c#frag", dir);
	assert_int_equal(st_store_open(&s, url, NULL), ST_OK);
	st_store_free(s);
	free(url);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *d = strstr(bad[i].msg, "DIR");
		char *want = d ? st_asprintf("%.*s%s%s", (int)(d - bad[i].msg), bad[i].msg, dir, d + 3)
			       : st_strdup(bad[i].msg);
		url = st_asprintf("file://%s%s", dir, bad[i].tail);
		st_error_clear(&err);
		s = NULL;
		assert_int_equal(st_store_open(&s, url, &err), ST_EINVAL);
		assert_null(s);
		if (!strstr(err.message, want))
			fail_msg("%s:\n got  %s\n want %s", url, err.message, want);
		free(want);
		free(url);
	}
	assert_int_equal(rmdir(sub), 0);
	free(sub);
	tu_rmdir(dir);
}

static void test_file_store_links_and_modes(void **state)
{
	char *dir = tu_tmpdir(), *p, *q;
	st_store *s;
	st_error err;
	struct stat sb;
	char *data;
	size_t len;
	(void)state;
	assert_int_equal(st_store_open(&s, dir, NULL), ST_OK);
	assert_int_equal(st_store_write(s, "d/f", "1", 1, NULL, NULL), ST_OK);
	p = st_asprintf("%s/d/f", dir);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0644);
	/* an existing file keeps its mode */
	assert_int_equal(chmod(p, 0600), 0);
	assert_int_equal(st_store_write(s, "d/f", "2", 1, NULL, NULL), ST_OK);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	/* symbolic links under the root: never read or written through */
	q = st_asprintf("%s/link", dir);
	assert_int_equal(symlink(p, q), 0);
	st_error_clear(&err);
	assert_int_equal(st_store_read(s, "link", 0, &data, &len, NULL, &err), ST_EREFUSED);
	assert_non_null(strstr(err.message, "symbolic link"));
	st_error_clear(&err);
	assert_int_equal(st_store_write(s, "link", "x", 1, NULL, &err), ST_EREFUSED);
	free(q);
	q = st_asprintf("%s/dlink", dir);
	char *d = st_asprintf("%s/d", dir);
	assert_int_equal(symlink(d, q), 0);
	st_error_clear(&err);
	assert_int_equal(st_store_write(s, "dlink/g", "x", 1, NULL, &err), ST_EREFUSED);
	assert_non_null(strstr(err.message, "symbolic link inside the backend"));
	assert_int_equal(st_store_read(s, "dlink/f", 0, &data, &len, NULL, NULL), ST_EREFUSED);
	char *k = NULL;
	st_store_entry *e;
	size_t n;
	assert_int_equal(st_store_list(s, "dlink/", 0, &e, &n, NULL), ST_OK);
	assert_int_equal(n, 0);
	st_store_entries_free(e, n);
	free(k);
	/* data is still "2" */
	assert_int_equal(st_store_read(s, "d/f", 0, &data, &len, NULL, NULL), ST_OK);
	assert_string_equal(data, "2");
	free(data);
	free(d);
	free(q);
	free(p);
	st_store_free(s);
	tu_rmdir(dir);
}

/* A listing of st_store_list, "KEY SIZE MTIME_NS ETAG" a line. */
static char *listing_of(st_store *s, const char *prefix)
{
	st_store_entry *e;
	size_t n;
	st_buf b;
	st_buf_init(&b);
	assert_int_equal(st_store_list(s, prefix, 0, &e, &n, NULL), ST_OK);
	for (size_t i = 0; i < n; i++)
		st_buf_printf(&b, "%s %lld %lld %s\n", e[i].key, e[i].info.size, e[i].info.mtime_ns,
			      e[i].info.etag);
	st_store_entries_free(e, n);
	return st_buf_take(&b, NULL);
}

/* A directory of 2,000 entries or more is stat'ed on two threads (ST__T_LIST): the same
 * listing as on one, in the same order, with what it leaves out left out (a temporary file, a
 * FIFO, a name that is no valid key) and its subdirectories walked. */
static void test_file_store_list_two_threads(void **state)
{
	char *dir = tu_tmpdir(), path[600], *one, *two;
	st_store *s;
	(void)state;
	assert_int_equal(st_store_open(&s, dir, NULL), ST_OK);
	for (int i = 0; i < 2100; i++) {
		char key[64], data[32];
		snprintf(key, sizeof key, "stacks/p/s%d.json", i);
		snprintf(data, sizeof data, "%0*d", 1 + i % 17, i);
		assert_int_equal(st_store_write(s, key, data, strlen(data), NULL, NULL), ST_OK);
	}
	assert_int_equal(st_store_write(s, "stacks/p/sub/deep.json", "{}", 2, NULL, NULL), ST_OK);
	snprintf(path, sizeof path, "%s/stacks/p/.s1.json.tmp-0123456789abcdef", dir);
	tu_write(path, "x", 1);
	snprintf(path, sizeof path, "%s/stacks/p/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	snprintf(path, sizeof path, "%s/stacks/p/back\\slash", dir);
	tu_write(path, "x", 1);
	assert_int_equal(st_set_threads(1, NULL), ST_OK);
	unsigned long before = st__two_count(ST__T_LIST);
	one = listing_of(s, "stacks/");
	assert_int_equal(st__two_count(ST__T_LIST), before);
	assert_int_equal(st_set_threads(2, NULL), ST_OK);
	two = listing_of(s, "stacks/");
	assert_int_equal(st__two_count(ST__T_LIST), before + 1); /* the big directory only */
	assert_int_equal(st_set_threads(0, NULL), ST_OK);
	assert_string_equal(one, two);
	assert_non_null(strstr(one, "stacks/p/s0.json 1 "));
	assert_non_null(strstr(one, "\nstacks/p/s16.json 17 "));
	assert_non_null(strstr(one, "\nstacks/p/s2099.json 9 "));
	assert_non_null(strstr(one, "\nstacks/p/sub/deep.json 2 "));
	assert_null(strstr(one, "tmp-"));
	assert_null(strstr(one, "fifo"));
	assert_null(strstr(one, "slash"));
	size_t lines = 0;
	for (const char *c = one; *c; c++)
		lines += *c == '\n';
	assert_int_equal(lines, 2101);
	free(one);
	free(two);
	st_store_free(s);
	tu_rmdir(dir);
}

/* The step hook of the backup: the temporary link's name, found in the directory at "bak" 1. */
typedef struct bak_seen {
	const char *dir;
	int steps;
	char tmp[256];
} bak_seen;

static void bak_step(void *ctx, const char *op, int step)
{
	bak_seen *b = ctx;
	DIR *d;
	struct dirent *de;
	if (strcmp(op, "bak") || step != 1)
		return;
	b->steps++;
	assert_non_null(d = opendir(b->dir));
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, ".statetool-bak-", 15))
			snprintf(b->tmp, sizeof(b->tmp), "%s", de->d_name);
	closedir(d);
}

/* A local file's .bak is a hard link (the old file's inode, bytes and mode; nothing copied),
 * made under a temporary name that a crash may leave and the next backup replaces; where no
 * link can be made, a copy with the same bytes and the old file's mode. */
/* A file written in thousands of pieces (chunks and kernel copies from another file, as a
 * lazy state's save after many edits) hands its bytes to the disk once per 8 MiB written,
 * not once per piece; the bytes are the pieces'. */
typedef struct pieces {
	int fd;
	const char *src;
} pieces;

static int fill_pieces(void *ctx, st_store_writer *w, st_error *err)
{
	pieces *pc = ctx;
	char chunk[10000];
	int rc = ST_OK;
	for (int i = 0; rc == ST_OK && i < 1000; i++) {
		memset(chunk, 'a' + i % 26, sizeof(chunk));
		rc = st_store_writer_write(w, chunk, sizeof(chunk), err);
		if (rc == ST_OK)
			rc = st__store_writer_copy(w, pc->fd, (off_t)i * 10000, pc->src + i * 10000,
						   10000, err);
	}
	return rc;
}

static void test_file_store_writeback_stride(void **state)
{
	char *dir = tu_tmpdir(), *src = malloc(10000000), *p = st_asprintf("%s/src", dir), *data;
	unsigned long wb = st__store_writebacks(), copied = st__store_copied();
	pieces pc = {-1, src};
	st_store *s;
	size_t len;
	(void)state;
	assert_non_null(src);
	for (size_t i = 0; i < 10000000; i++)
		src[i] = (char)('A' + i % 17);
	tu_write(p, src, 10000000);
	assert_true((pc.fd = open(p, O_RDONLY)) >= 0);
	assert_int_equal(st_store_open(&s, dir, NULL), ST_OK);
	assert_int_equal(st_store_write_fill(s, "out", fill_pieces, &pc, NULL, NULL), ST_OK);
	/* 20,000,000 bytes in 2,000 pieces: the disk started on them twice (at 8 and 16 MiB) */
	assert_int_equal(st__store_writebacks() - wb, 2);
	assert_true(st__store_copied() - copied == 10000000 || !st__store_copy_enabled());
	assert_int_equal(st_store_read(s, "out", 0, &data, &len, NULL, NULL), ST_OK);
	assert_int_equal(len, 20000000);
	for (int i = 0; i < 1000; i++) {
		assert_true(data[i * 20000] == 'a' + i % 26 && data[i * 20000 + 9999] == 'a' + i % 26);
		assert_memory_equal(data + i * 20000 + 10000, src + i * 10000, 10000);
	}
	close(pc.fd);
	free(data);
	st_store_free(s);
	free(src);
	free(p);
	tu_rmdir(dir);
}

static void test_file_store_backup_link(void **state)
{
	char *dir = tu_tmpdir(), *p = st_asprintf("%s/s.json", dir);
	char *bak = st_asprintf("%s/s.json.bak", dir), *stray;
	st_store_write_opts o = ST_STORE_WRITE_OPTS_INIT;
	st_hooks h = ST_HOOKS_INIT;
	bak_seen seen = {dir, 0, ""};
	struct stat old, sb;
	st_store *s;
	char *data;
	size_t len;
	(void)state;
	h.step = bak_step;
	h.ctx = &seen;
	o.backup_key = "s.json.bak";
	assert_int_equal(st_store_open(&s, dir, NULL), ST_OK);
	assert_int_equal(st_store_write(s, "s.json", "old", 3, NULL, NULL), ST_OK);
	assert_int_equal(chmod(p, 0640), 0);
	assert_int_equal(stat(p, &old), 0);
	assert_int_equal(st_set_hooks(&h, NULL), ST_OK);
	assert_int_equal(st_store_write(s, "s.json", "new", 3, &o, NULL), ST_OK);
	assert_int_equal(seen.steps, 1);
	assert_int_equal(strlen(seen.tmp), 31); /* ".statetool-bak-" and 16 hex digits */
	assert_int_equal(stat(bak, &sb), 0);
	assert_true(sb.st_ino == old.st_ino && sb.st_dev == old.st_dev); /* linked, not copied */
	assert_int_equal(sb.st_nlink, 1);
	assert_int_equal(sb.st_mode & 07777, 0640);
	assert_int_equal(st_store_read(s, "s.json.bak", 0, &data, &len, NULL, NULL), ST_OK);
	assert_int_equal(len, 3);
	assert_memory_equal(data, "old", 3);
	free(data);
	assert_int_equal(tu_count_entries(dir, ""), 2); /* s.json, s.json.bak: no temporary left */
	/* a link a crash left between the link and the rename (same name: a hash of the
	 * backup's path) is replaced by the next backup */
	stray = st_asprintf("%s/%s", dir, seen.tmp);
	tu_write(stray, "stray", 5);
	assert_int_equal(stat(p, &old), 0);
	assert_int_equal(st_store_write(s, "s.json", "newer", 5, &o, NULL), ST_OK);
	assert_int_equal(seen.steps, 2);
	assert_int_equal(stat(bak, &sb), 0);
	assert_true(sb.st_ino == old.st_ino);
	assert_int_equal(st_store_read(s, "s.json.bak", 0, &data, &len, NULL, NULL), ST_OK);
	assert_int_equal(len, 3);
	assert_memory_equal(data, "new", 3);
	free(data);
	assert_int_equal(tu_count_entries(dir, ""), 2);
	/* no link possible: a copy, the same bytes and the old file's mode (not the old .bak's) */
	assert_int_equal(chmod(bak, 0600), 0);
	assert_int_equal(chmod(p, 0604), 0);
	assert_int_equal(stat(p, &old), 0);
	st__store_link_enable(0);
	assert_int_equal(st_store_write(s, "s.json", "newest", 6, &o, NULL), ST_OK);
	st__store_link_enable(1);
	assert_int_equal(seen.steps, 2); /* no link, no step */
	assert_int_equal(stat(bak, &sb), 0);
	assert_true(sb.st_ino != old.st_ino);
	assert_int_equal(sb.st_mode & 07777, 0604);
	assert_int_equal(st_store_read(s, "s.json.bak", 0, &data, &len, NULL, NULL), ST_OK);
	assert_int_equal(len, 5);
	assert_memory_equal(data, "newer", 5);
	free(data);
	assert_int_equal(st_store_read(s, "s.json", 0, &data, &len, NULL, NULL), ST_OK);
	assert_memory_equal(data, "newest", 6);
	free(data);
	assert_int_equal(tu_count_entries(dir, ""), 2);
	/* a big file's copy streams (16 MiB kernel copies, else 1 MiB reads): the same bytes */
	size_t big = (40u << 20) + 123;
	char *bytes = malloc(big);
	assert_non_null(bytes);
	for (size_t i = 0; i < big; i++)
		bytes[i] = (char)(i * 2654435761u >> 13);
	st__store_link_enable(0);
	for (int kernel = 1; kernel >= 0; kernel--) {
		st__store_copy_enable(kernel);
		bytes[0] = (char)kernel;
		assert_int_equal(st_store_write(s, "s.json", bytes, big, &o, NULL), ST_OK);
		assert_int_equal(st_store_write(s, "s.json", "x", 1, &o, NULL), ST_OK);
		assert_int_equal(st_store_read(s, "s.json.bak", 0, &data, &len, NULL, NULL), ST_OK);
		assert_int_equal(len, big);
		assert_memory_equal(data, bytes, big);
		free(data);
	}
	st__store_copy_enable(1);
	st__store_link_enable(1);
	free(bytes);
	assert_int_equal(tu_count_entries(dir, ""), 2);
	assert_int_equal(st_set_hooks(NULL, NULL), ST_OK);
	st_store_free(s);
	free(stray);
	free(bak);
	free(p);
	tu_rmdir(dir);
}

/* The run's Azurite container goes, with everything in it; the GCS fakes stop. */
static int drop_containers(void **state)
{
	fixture f;
	(void)state;
	memset(&f, 0, sizeof(f));
	if (azurite_state > 0 && open_azurite_store(&f) == ST_OK) {
		st__azblob_container_delete(f.s, NULL);
		st_store_free(f.s);
	}
	free(azurite_container);
	gcsfake_stop(&gcs_fakes[0]);
	gcsfake_stop(&gcs_fakes[1]);
	if (gcs_dir)
		tu_rmdir(gcs_dir);
	gcs_dir = NULL;
	return 0;
}

/* The object stores' one rule for a listed name: relative to the store's prefix, a level kept
 * with its '/', and what no key can name left out (s3, azblob and gcs all list through it). */
static void test_listing_names(void **state)
{
	static const struct {
		const char *name;
		int dir;
		const char *key; /* NULL: left out */
	} cases[] = {
		{"p/a/b.json", 0, "a/b.json"},	{"p/a/", 1, "a/"},     {"p/", 1, NULL},
		{"p/", 0, NULL},		{"p", 0, NULL},	       {"q/a", 0, NULL},
		{"pa/b", 0, "a/b"},		{"p/a/", 0, NULL},     {"p/a", 1, NULL},
		{"p/a//b", 0, NULL},		{"p/../x", 0, NULL},   {"p/a/./b/", 1, NULL},
		{"p/a\\b", 0, NULL},		{"p/.pulumi/x", 0, ".pulumi/x"},
	};
	st__listing l = {0};
	st_store_info info = {7, 42, "e"};
	size_t want = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t before = l.n;
		assert_int_equal(st__listing_add_name(&l, i == 6 ? "p" : "p/", strdup(cases[i].name),
						      cases[i].dir, &info),
				 ST_OK);
		if (!cases[i].key) {
			assert_int_equal(l.n, before);
			continue;
		}
		assert_int_equal(l.n, before + 1);
		assert_string_equal(l.v[before].key, cases[i].key);
		assert_int_equal(l.v[before].info.size, 7);
		assert_string_equal(l.v[before].info.etag, "e");
		want++;
	}
	assert_int_equal(l.n, want);
	st_store_entries_free(l.v, l.n);
}

/* The message of a library that cannot be loaded: "SCHEME: cannot load LIB (NAME): NAME: ...;
 * install it (Debian, Ubuntu: PACKAGE)" (the middle is dlopen's own words). */
static void assert_cannot_load(const st_error *err, const char *scheme, const char *lib,
			       const char *name, const char *package)
{
	char *head = st_asprintf("%s: cannot load %s (%s): %s: ", scheme, lib, name, name),
	     *tail = st_asprintf("; install it (Debian, Ubuntu: %s)", package);
	size_t n = strlen(err->message), t = strlen(tail);
	assert_int_equal(err->code, ST_EUNSUPPORTED);
	if (strncmp(err->message, head, strlen(head)) || n < t || strcmp(err->message + n - t, tail))
		fail_msg("unexpected message: %s", err->message);
	free(head);
	free(tail);
}

/* libcurl and libpq are loaded when a URL first needs one (lib/store/dl.c), not when the
 * program starts: without them a local store works, and a store that needs one fails to open,
 * naming the library and its package (each time it is asked). */
static void test_missing_libraries(void **state)
{
	st_store *s = NULL;
	st_store_entry *e = NULL;
	size_t n = 0;
	st_error err;
	char *dir = tu_tmpdir();
	(void)state;

	st__dl_names("libst-missing-curl.so.4", "libst-missing-pq.so.5");
	assert_int_equal(st_store_open(&s, dir, NULL), ST_OK);
	assert_int_equal(st_store_list(s, "", 0, &e, &n, NULL), ST_OK);
	st_store_free(s);
	setenv("AWS_ACCESS_KEY_ID", "AKIDSTATETOOLTEST", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "not-a-secret", 1);
	for (int i = 0; i < 2; i++) {
		st_error_clear(&err);
		assert_int_equal(st_store_open(&s, "s3://b?region=us-east-1&endpoint=http://"
						   "127.0.0.1:9&use_path_style=true", &err),
				 ST_EUNSUPPORTED);
		assert_null(s);
		assert_cannot_load(&err, "s3", "libcurl", "libst-missing-curl.so.4", "libcurl4");
		st_error_clear(&err);
		assert_int_equal(st_store_open(&s, "postgres://u@127.0.0.1:9/db", &err),
				 ST_EUNSUPPORTED);
		assert_null(s);
		assert_cannot_load(&err, "postgres", "libpq", "libst-missing-pq.so.5", "libpq5");
	}
	st__dl_names(NULL, NULL); /* the real ones, for what follows */
	tu_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),    cmocka_unit_test(test_missing),
		cmocka_unit_test(test_replace),      cmocka_unit_test(test_create_only),
		cmocka_unit_test(test_list),         cmocka_unit_test(test_delete),
		cmocka_unit_test(test_copy),         cmocka_unit_test(test_bad_keys),
		cmocka_unit_test(test_proceed),      cmocka_unit_test(test_fill),
		cmocka_unit_test(test_odd_keys),
		cmocka_unit_test(test_open_errors),  cmocka_unit_test(test_file_url),
		cmocka_unit_test(test_file_store_links_and_modes),
		cmocka_unit_test(test_file_store_backup_link),
		cmocka_unit_test(test_file_store_writeback_stride),
		cmocka_unit_test(test_file_store_list_two_threads),
		cmocka_unit_test(test_listing_names),
		cmocka_unit_test(test_missing_libraries),
	};
	return cmocka_run_group_tests(tests, NULL, drop_containers);
}
