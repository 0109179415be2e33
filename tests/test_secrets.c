/* Secrets: Pulumi's vectors, round trips, tampering, providers, rekey, config files. */
#include "testutil.h"

#include <sodium.h>

#define SIG "4dabf18193072939515e22adb298388d"

static json_t *provider(const char *salt)
{
	return json_pack("{s:s,s:{s:s}}", "type", "passphrase", "state", "salt", salt);
}

static void test_pbkdf2_vector(void **state)
{
	(void)state;
	/* fixtures/pulumi/passphrase-vector.json: key_hex of "correct horse battery staple" */
	unsigned char salt[8] = {1, 2, 3, 4, 5, 6, 7, 8}, key[32];
	char hex[65];
	const char *pw = "correct horse battery staple";
	st__pbkdf2_sha256((const unsigned char *)pw, strlen(pw), salt, 8, 1000000, key);
	sodium_bin2hex(hex, sizeof(hex), key, 32);
	assert_string_equal(hex, "c229acf68c5760d2d254f9989aebf9b33a19b017177519350ac0e868c43ce671");
	/* RFC 7914 section 11 vector (PBKDF2-HMAC-SHA256, "passwd"/"salt", 1 iteration) */
	st__pbkdf2_sha256((const unsigned char *)"passwd", 6, (const unsigned char *)"salt", 4, 1,
			  key);
	sodium_bin2hex(hex, sizeof(hex), key, 32);
	assert_string_equal(hex, "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc");
}

/* The vector produced by Pulumi's own Go code (its passphrase manager tests). */
static void test_pulumi_vector(void **state)
{
	(void)state;
	json_t *sp = provider("v1:fozI5u6B030=:v1:F+6ZduKKd8G0/V7L:PGMFeIzwobWRKmEAzUdaQHqC5mMRIQ==");
	st_secrets *s;
	st_error err;
	assert_int_equal(st_secrets_open(&s, sp, "password", 8, NULL), ST_OK);
	st_secrets_free(s);
	st_error_clear(&err);
	assert_int_equal(st_secrets_open(&s, sp, "password123", 11, &err), ST_EPASSPHRASE);
	assert_null(s);
	assert_string_equal(err.message,
			    "incorrect passphrase, please set PULUMI_CONFIG_PASSPHRASE to the correct "
			    "passphrase or set PULUMI_CONFIG_PASSPHRASE_FILE to a file containing the "
			    "passphrase");
	json_decref(sp);
}

static void test_synthetic_vector_and_tampering(void **state)
{
	(void)state;
	json_t *sp = provider("v1:AQIDBAUGBwg=:v1:AAECAwQFBgcICQoL:IYoikRHf10peey65kizoQjW7FClwEA==");
	st_secrets *s;
	char *pt;
	size_t len;
	st_error err;
	const char *pw = "correct horse battery staple";
	assert_int_equal(st_secrets_open(&s, sp, pw, strlen(pw), NULL), ST_OK);
	assert_string_equal(st_secrets_type(s), "passphrase");
	assert_int_equal(st_secrets_decrypt(s, "v1:ZGVmZ2hpamtsbW5v:LudbcPrKaMQk1R3NNyum5aNq3uSzkG2zCA==",
					    &pt, &len, NULL),
			 ST_OK);
	assert_int_equal(len, 9);
	assert_memory_equal(pt, "\"hunter2\"", 9);
	st_secret_free(pt, len);
	/* one bit flipped in the ciphertext: GCM refuses */
	st_error_clear(&err);
	assert_int_equal(st_secrets_decrypt(s, "v1:ZGVmZ2hpamtsbW5v:MudbcPrKaMQk1R3NNyum5aNq3uSzkG2zCA==",
					    &pt, &len, &err),
			 ST_ESECRETS);
	assert_non_null(strstr(err.message, "message authentication failed"));
	static const struct {
		const char *value, *msg;
	} bad[] = {{"nonsense", "bad value"},
		   {"v2:AAAA:BBBB", "unknown value version"},
		   {"v1:AAAA:LudbcPrKaMQk1R3NNyum5aNq3uSzkG2zCA==", "nonce size is incorrect"},
		   {"v1:a:b:c", "bad value"}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		st_error_clear(&err);
		assert_int_equal(st_secrets_decrypt(s, bad[i].value, &pt, &len, &err), ST_ESECRETS);
		assert_non_null(strstr(err.message, bad[i].msg));
	}
	/* locked: no passphrase given */
	st_secrets_free(s);
	assert_int_equal(st_secrets_open(&s, sp, NULL, 0, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_secrets_decrypt(s, "v1:ZGVmZ2hpamtsbW5v:LudbcPrKaMQk1R3NNyum5aNq3uSzkG2zCA==",
					    &pt, &len, &err),
			 ST_EPASSPHRASE);
	st_secrets_free(s);
	json_decref(sp);
}

static void test_new_passphrase_round_trip(void **state)
{
	(void)state;
	st_secrets *a, *b;
	char *ct, *pt;
	size_t len;
	assert_int_equal(st_secrets_new_passphrase(&a, "s3cret", 6, NULL), ST_OK);
	assert_int_equal(st_secrets_encrypt(a, "\"x\"", 3, &ct, NULL), ST_OK);
	assert_memory_equal(ct, "v1:", 3);
	/* reopen from what goes into the state: the same key comes back */
	json_t *sp = st_secrets_provider_json(a);
	assert_int_equal(st_secrets_open(&b, sp, "s3cret", 6, NULL), ST_OK);
	assert_int_equal(st_secrets_decrypt(b, ct, &pt, &len, NULL), ST_OK);
	assert_memory_equal(pt, "\"x\"", 3);
	st_secret_free(pt, len);
	/* encryptionsalt has Pulumi's shape v1:SALT:v1:NONCE:CT, SALT 8 bytes */
	const char *salt = st_secrets_encryptionsalt(a);
	assert_memory_equal(salt, "v1:", 3);
	assert_int_equal(strchr(salt + 3, ':') - (salt + 3), 12);
	free(ct);
	json_decref(sp);
	st_secrets_free(a);
	st_secrets_free(b);
}


static void test_b64_provider(void **state)
{
	(void)state;
	st_state *s = tu_load("pulumi/checkpoint-secrets.json");
	st_secrets *sec;
	st_problems p = {0};
	size_t n;
	json_t *sp = json_object_get(st_state_deployment(s), "secrets_providers");
	assert_int_equal(st_secrets_open(&sec, sp, NULL, 0, NULL), ST_OK);
	assert_int_equal(st_secrets_verify(s, sec, &p, &n, NULL), ST_OK);
	assert_int_equal(n, 10);
	assert_int_equal(p.count, 0);
	assert_int_equal(st_secrets_reveal(s, sec, NULL), ST_OK);
	json_t *r = json_array_get(st_state_resources(s, 0), 3);
	json_t *uid = json_object_get(json_object_get(r, "outputs"), "uniqueId");
	assert_string_equal(st_json_str(uid, "plaintext"), "\"AROAJBQANPFEXFW2SEVJM\"");
	assert_null(json_object_get(uid, "ciphertext"));
	char *ct;
	assert_int_equal(st_secrets_encrypt(sec, "\"AROAJBQANPFEXFW2SEVJM\"", 23, &ct, NULL), ST_OK);
	assert_string_equal(ct, "IkFST0FKQlFBTlBGRVhGVzJTRVZKTSI=");
	free(ct);
	st_secrets_free(sec);
	st_state_free(s);
}

static void test_other_providers_pass_through(void **state)
{
	(void)state;
	json_t *sp = json_pack("{s:s,s:{s:s,s:s}}", "type", "cloud", "state", "url",
			       "awskms://alias/x", "encryptedkey", "AAAA");
	st_secrets *s;
	char *pt;
	size_t len;
	st_error err;
	assert_int_equal(st_secrets_open(&s, sp, NULL, 0, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_secrets_decrypt(s, "v1:a:b", &pt, &len, &err), ST_EUNSUPPORTED);
	assert_non_null(strstr(err.message, "'cloud' secrets provider"));
	json_t *back = st_secrets_provider_json(s);
	assert_true(json_equal(back, sp));
	json_decref(back);
	st_secrets_free(s);
	json_decref(sp);
}

/* A provider of the caller's: reverse the bytes (a toy, but a real plug-in path). */
static int rev_encrypt(void *ctx, const char *pt, size_t len, char **ct, st_error *err)
{
	(void)ctx, (void)err;
	*ct = malloc(len + 5);
	memcpy(*ct, "rev:", 4);
	for (size_t i = 0; i < len; i++)
		(*ct)[4 + i] = pt[len - 1 - i];
	(*ct)[4 + len] = '\0';
	return ST_OK;
}

static int rev_decrypt(void *ctx, const char *ct, char **pt, size_t *len, st_error *err)
{
	(void)ctx;
	if (strncmp(ct, "rev:", 4))
		return st__err(err, ST_ESECRETS, "not rev");
	*len = strlen(ct) - 4;
	*pt = malloc(*len + 1);
	for (size_t i = 0; i < *len; i++)
		(*pt)[i] = ct[4 + *len - 1 - i];
	(*pt)[*len] = '\0';
	return ST_OK;
}

static void test_custom_provider_encrypt_and_rekey(void **state)
{
	(void)state;
	st_state *s = tu_load("validate/secrets-plaintext.json");
	st_secrets_callbacks cb = ST_SECRETS_CALLBACKS_INIT;
	cb.encrypt = rev_encrypt;
	cb.decrypt = rev_decrypt;
	st_secrets *rev, *pass;
	st_edit *e;
	size_t n;
	assert_int_equal(st_secrets_custom(&rev, "rev", &cb, NULL), ST_OK);
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_secrets_encrypt(e, rev, &n, NULL), ST_OK);
	assert_int_equal(n, 1);
	assert_int_equal(st_edit_commit(e, NULL, NULL, NULL), ST_OK);
	st_edit_free(e);
	json_t *tags = json_object_get(
		json_object_get(json_array_get(st_state_resources(s, 0), 3), "inputs"), "tags");
	assert_string_equal(st_json_str(tags, "ciphertext"), "rev:\"2retnuh\"");
	/* rekey everything to a passphrase; the other (passphrase) ciphertexts of this file
	 * cannot be read by `rev`, so rekey from rev fails on them... */
	assert_int_equal(st_secrets_new_passphrase(&pass, "new", 3, NULL), ST_OK);
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st_edit_secrets_rekey(e, rev, pass, &n, &err), ST_ESECRETS);
	assert_string_equal(err.pointer, "/deployment/resources/3/outputs/tags");
	st_edit_rollback(e);
	st_edit_free(e);
	st_secrets_free(pass);
	st_secrets_free(rev);
	st_state_free(s);
}

/* 700 resources, two of three with a plaintext secret; a passphrase provider. */
static st_state *many_secrets(void)
{
	st_buf b;
	st_state *s = NULL;
	st_buf_init(&b);
	st_buf_adds(&b, "{\"version\":3,\"deployment\":{\"manifest\":{},\"resources\":[");
	for (int i = 0; i < 700; i++) {
		st_buf_printf(&b, "%s{\"urn\":\"urn:pulumi:dev::p::m:i:R::r%d\",\"custom\":true,"
				  "\"id\":\"i%d\",\"type\":\"m:i:R\",\"inputs\":{\"n\":%d",
			      i ? "," : "", i, i, i);
		if (i % 3)
			st_buf_printf(&b, ",\"pw\":{\"4dabf18193072939515e22adb298388d\":"
					  "\"1b47061264138c4ac30d75fd1eb44270\",\"plaintext\":"
					  "\"\\\"secret-%d\\\"\"}", i);
		st_buf_adds(&b, "}}");
	}
	st_buf_adds(&b, "]}}");
	assert_int_equal(st_state_load_buffer(&s, b.data, b.len, "many.json", NULL, NULL), ST_OK);
	st_buf_free(&b);
	return s;
}

/* Encryption of a big state runs on two threads: the same report and, decrypted again, the
 * same state as on one thread; a rekey that fails names the first bad secret in file order and
 * leaves the state as it was. */
static void test_encrypt_two_threads(void **state)
{
	(void)state;
	char *out[2];
	st_changes rep[2];
	size_t n[2], len;
	st_secrets *k, *k2;
	assert_int_equal(st_secrets_new_passphrase(&k, "pw", 2, NULL), ST_OK);
	assert_int_equal(st_secrets_new_passphrase(&k2, "pw2", 3, NULL), ST_OK);
	for (int t = 0; t < 2; t++) {
		st_state *s = many_secrets();
		st_edit *e;
		json_object_set_new(st_state_deployment(s), "secrets_providers",
				    st_secrets_provider_json(k));
		memset(&rep[t], 0, sizeof(rep[t]));
		st_set_threads(t ? 2 : 1, NULL);
		unsigned long runs = st__two_count(ST__T_ENCRYPT);
		assert_int_equal(st_edit_begin(&e, s, &rep[t], NULL), ST_OK);
		assert_int_equal(st_edit_secrets_encrypt(e, k, &n[t], NULL), ST_OK);
		/* the threaded path ran (t 1), and only then */
		assert_int_equal(st__two_count(ST__T_ENCRYPT), runs + (unsigned long)t);
		assert_int_equal(st_edit_commit(e, NULL, NULL, NULL), ST_OK);
		st_edit_free(e);
		st_set_threads(0, NULL);
		/* every secret is a ciphertext now */
		size_t ct = 0, pt = 0;
		st_secrets_count(s, &ct, &pt);
		assert_int_equal(ct, 466);
		assert_int_equal(pt, 0);
		if (t == 1) {
			/* a rekey with two bad ciphertexts, one in each half */
			json_t *res = st_state_resources(s, 0);
			json_t *r101 = json_array_get(res, 101);
			char *keep = strdup(st_json_str(json_object_get(json_object_get(r101, "inputs"),
									"pw"), "ciphertext"));
			char *saved[2];
			for (int i = 100, k2i = 0; i <= 650; i += 550, k2i++) {
				json_t *pw = json_object_get(json_object_get(json_array_get(res, i),
									     "inputs"), "pw");
				saved[k2i] = strdup(st_json_str(pw, "ciphertext"));
				json_object_set_new(pw, "ciphertext", json_string("v1:AAAA:AAAA"));
			}
			st_error err;
			size_t m = 0;
			st_error_clear(&err);
			st_set_threads(2, NULL);
			unsigned long rruns = st__two_count(ST__T_ENCRYPT);
			assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
			assert_int_not_equal(st_edit_secrets_rekey(e, k, k2, &m, &err), ST_OK);
			st_set_threads(0, NULL);
			assert_int_equal(st__two_count(ST__T_ENCRYPT), rruns + 1);
			assert_string_equal(err.pointer, "/deployment/resources/100/inputs/pw");
			assert_ptr_equal(json_array_get(res, 101), r101);
			assert_string_equal(st_json_str(json_object_get(json_object_get(r101, "inputs"),
									"pw"), "ciphertext"), keep);
			st_edit_rollback(e);
			st_edit_free(e);
			free(keep);
			res = st_state_resources(s, 0); /* (the rollback put back an array of its own) */
			for (int i = 100, k2i = 0; i <= 650; i += 550, k2i++) { /* as they were */
				json_object_set_new(json_object_get(json_object_get(json_array_get(res, i),
										      "inputs"), "pw"),
						    "ciphertext", json_string(saved[k2i]));
				free(saved[k2i]);
			}
		}
		{
			st_error rerr;
			st_error_clear(&rerr);
			if (st_secrets_reveal(s, k, &rerr) != ST_OK)
				fail_msg("reveal (%d): %s at %s", t, rerr.message, rerr.pointer);
		}
		assert_int_equal(st_state_dump(s, NULL, &out[t], &len, NULL), ST_OK);
		st_state_free(s);
	}
	assert_int_equal(n[0], 466);
	assert_int_equal(n[1], 466);
	assert_int_equal(rep[0].count, rep[1].count);
	for (size_t i = 0; i < rep[0].count; i++)
		assert_string_equal(rep[0].lines[i], rep[1].lines[i]);
	assert_string_equal(rep[0].lines[0], "urn:pulumi:dev::p::m:i:R::r1: encrypted 1 secret");
	st_changes_clear(&rep[0]);
	st_changes_clear(&rep[1]);
	st_secrets_free(k);
	st_secrets_free(k2);
	assert_string_equal(out[0], out[1]);
	free(out[0]);
	free(out[1]);
}

/* Encryption copies a resource only along the paths to the secrets it changes: the resources
 * as the state held them are never changed (the session's view of the state as it began), the
 * parts without a secret to change stay shared, an already encrypted secret (no rekey) is not
 * copied, and a resource with nothing to change stays the same object. On one thread and on
 * two. */
static void test_encrypt_copies_the_path(void **state)
{
	(void)state;
	st_secrets *k;
	assert_int_equal(st_secrets_new_passphrase(&k, "pw", 2, NULL), ST_OK);
	for (int t = 0; t < 2; t++) {
		st_buf b;
		st_state *s = NULL;
		st_edit *e;
		size_t n = 0, nres = t ? 600 : 3;
		json_t *orig[600], *snap[600];
		st_buf_init(&b);
		st_buf_adds(&b, "{\"version\":3,\"deployment\":{\"manifest\":{},\"resources\":[");
		for (size_t i = 0; i < nres; i++)
			st_buf_printf(&b, "%s{\"urn\":\"urn:pulumi:dev::p::m:i:R::r%zu\",\"custom\":true,"
					  "\"id\":\"i%zu\",\"type\":\"m:i:R\",\"inputs\":{\"keep\":{\"a\":[1,2]},"
					  "\"deep\":[0,{\"s\":{\"4dabf18193072939515e22adb298388d\":"
					  "\"1b47061264138c4ac30d75fd1eb44270\",\"plaintext\":\"\\\"x%zu\\\"\"}},"
					  "{\"t\":1}],\"done\":{\"4dabf18193072939515e22adb298388d\":"
					  "\"1b47061264138c4ac30d75fd1eb44270\",\"ciphertext\":\"v1:AAAA:AAAA\"}},"
					  "\"outputs\":{\"o\":{\"4dabf18193072939515e22adb298388d\":"
					  "\"1b47061264138c4ac30d75fd1eb44270\",\"plaintext\":\"\\\"y\\\"\"}}}",
				      i ? "," : "", i, i, i);
		st_buf_adds(&b, ",{\"urn\":\"urn:pulumi:dev::p::m:i:R::plain\",\"custom\":false,"
				"\"type\":\"m:i:R\",\"inputs\":{\"v\":1}}]}}");
		assert_int_equal(st_state_load_buffer(&s, b.data, b.len, "path.json", NULL, NULL),
				 ST_OK);
		st_buf_free(&b);
		json_t *res = st_state_resources(s, 0);
		for (size_t i = 0; i < nres; i++) {
			orig[i] = json_incref(json_array_get(res, i));
			snap[i] = json_deep_copy(orig[i]);
		}
		json_t *plain = json_array_get(res, nres);
		st_set_threads(t ? 2 : 1, NULL);
		unsigned long runs = st__two_count(ST__T_ENCRYPT);
		assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
		assert_int_equal(st_edit_secrets_encrypt(e, k, &n, NULL), ST_OK);
		/* the big state (t 1) went through the threaded path */
		assert_int_equal(st__two_count(ST__T_ENCRYPT), runs + (unsigned long)t);
		assert_int_equal(st_edit_commit(e, NULL, NULL, NULL), ST_OK);
		st_edit_free(e);
		st_set_threads(0, NULL);
		assert_int_equal(n, 2 * nres);
		res = st_state_resources(s, 0);
		assert_ptr_equal(json_array_get(res, nres), plain);
		for (size_t i = 0; i < nres; i++) {
			json_t *r = json_array_get(res, i), *in = json_object_get(r, "inputs");
			json_t *oin = json_object_get(orig[i], "inputs");
			assert_true(json_equal(orig[i], snap[i])); /* never changed */
			assert_ptr_not_equal(r, orig[i]);
			assert_ptr_equal(json_object_get(r, "urn"), json_object_get(orig[i], "urn"));
			assert_ptr_not_equal(in, oin);
			assert_ptr_equal(json_object_get(in, "keep"), json_object_get(oin, "keep"));
			assert_ptr_equal(json_object_get(in, "done"), json_object_get(oin, "done"));
			json_t *deep = json_object_get(in, "deep"), *odeep = json_object_get(oin, "deep");
			assert_ptr_not_equal(deep, odeep);
			assert_ptr_equal(json_array_get(deep, 2), json_array_get(odeep, 2));
			json_t *sec = json_object_get(json_object_get(json_array_get(deep, 1), "s"),
						      "ciphertext");
			assert_true(json_is_string(sec));
			assert_null(json_object_get(json_object_get(json_array_get(deep, 1), "s"),
						    "plaintext"));
			/* the member order as it was */
			void *it = json_object_iter(in);
			assert_string_equal(json_object_iter_key(it), "keep");
			assert_string_equal(json_object_iter_key(json_object_iter_next(in, it)), "deep");
			char *pt = NULL;
			size_t len = 0;
			assert_int_equal(st_secrets_decrypt(k, json_string_value(sec), &pt, &len, NULL),
					 ST_OK);
			char want[32];
			snprintf(want, sizeof(want), "\"x%zu\"", i);
			assert_int_equal(len, strlen(want));
			assert_memory_equal(pt, want, len);
			st_secret_free(pt, len);
			json_decref(orig[i]);
			json_decref(snap[i]);
		}
		st_state_free(s);
	}
	st_secrets_free(k);
}

static void test_rekey_state_and_config(void **state)
{
	(void)state;
	st_state *s = tu_load("pulumi/valid-deployment-v3.json");
	st_secrets *old, *neu, *check;
	st_edit *e;
	size_t n;
	const char *pw = "correct horse battery staple";
	json_t *sp = json_object_get(st_state_deployment(s), "secrets_providers");
	assert_int_equal(st_secrets_open(&old, sp, pw, strlen(pw), NULL), ST_OK);
	assert_int_equal(st_secrets_new_passphrase(&neu, "brand new", 9, NULL), ST_OK);
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_secrets_rekey(e, old, neu, &n, NULL), ST_OK);
	assert_int_equal(n, 2);
	assert_int_equal(st_edit_commit(e, NULL, NULL, NULL), ST_OK);
	st_edit_free(e);
	sp = json_object_get(st_state_deployment(s), "secrets_providers");
	assert_string_equal(st_json_str(json_object_get(sp, "state"), "salt"),
			    st_secrets_encryptionsalt(neu));
	assert_int_equal(st_secrets_open(&check, sp, "brand new", 9, NULL), ST_OK);
	st_problems p = {0};
	assert_int_equal(st_secrets_verify(s, check, &p, &n, NULL), ST_OK);
	assert_int_equal(n, 2);
	assert_int_equal(p.count, 0);
	st_secrets_free(check);
	/* the config file: encryptionsalt replaced, secure values re-encrypted, the rest kept */
	char *dir = tu_tmpdir(), *cfg = st_path_join(dir, "Pulumi.dev.yaml"), *ct;
	assert_int_equal(st_secrets_encrypt(old, "db-password-1", 13, &ct, NULL), ST_OK);
	char *text = st_asprintf("encryptionsalt: %s\nconfig:\n  aws:region: us-east-1\n"
				 "  proj:dbPassword:\n    secure: %s\n  proj:plain: hello\n",
				 "v1:AQIDBAUGBwg=:v1:AAECAwQFBgcICQoL:IYoikRHf10peey65kizoQjW7FClwEA==",
				 ct);
	tu_write(cfg, text, strlen(text));
	assert_int_equal(st_config_rekey(cfg, old, neu, &n, NULL), ST_OK);
	assert_int_equal(n, 1);
	char *got = tu_read(cfg, NULL);
	char *want_head = st_asprintf("encryptionsalt: %s\nconfig:\n  aws:region: us-east-1\n"
				      "  proj:dbPassword:\n    secure: v1:",
				      st_secrets_encryptionsalt(neu));
	assert_memory_equal(got, want_head, strlen(want_head));
	assert_non_null(strstr(got, "\n  proj:plain: hello\n"));
	const char *sec = strstr(got, "secure: ") + 8;
	char *val = st_strndup(sec, strcspn(sec, "\n"));
	char *pt;
	size_t len;
	assert_int_equal(st_secrets_decrypt(neu, val, &pt, &len, NULL), ST_OK);
	assert_memory_equal(pt, "db-password-1", 13);
	st_secret_free(pt, len);
	char *bakpath = st_asprintf("%s.bak", cfg);
	char *bak = tu_read(bakpath, NULL);
	assert_string_equal(bak, text);
	free(bak);
	free(bakpath);
	free(val);
	free(got);
	free(want_head);
	/* st_config_rekey_text reads text[0..len) only: a block without a NUL, ending inside
	 * inside a comment and inside "secure:" (an over-read is an ASan/valgrind error); a
	 * config without a salt gets one first */
	static const char *const cuts[] = {"# encryptionsa", "a:\n  b:\n    secu", "x: 1"};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		size_t cl = strlen(cuts[i]), ol = 0;
		char *blk = malloc(cl), *out = NULL;
		assert_non_null(blk);
		memcpy(blk, cuts[i], cl);
		assert_int_equal(st_config_rekey_text(blk, cl, NULL, old, neu, &out, &ol, &n, NULL),
				 ST_OK);
		assert_int_equal(n, 0);
		char *want = st_asprintf("encryptionsalt: %s\n%s", st_secrets_encryptionsalt(neu),
					 cuts[i]);
		assert_int_equal(ol, strlen(want));
		assert_string_equal(out, want);
		free(want);
		free(out);
		free(blk);
	}
	free(text);
	free(ct);
	free(cfg);
	tu_rmdir(dir);
	st_secrets_free(old);
	st_secrets_free(neu);
	st_state_free(s);
}


/* A custom manager whose ciphertexts are "old:"/"new:" + the plaintext: exact output bytes. */
static int cfg_enc(void *ctx, const char *pt, size_t len, char **ct, st_error *err)
{
	(void)ctx;
	(void)err;
	*ct = st_asprintf("new:%.*s", (int)len, pt);
	return ST_OK;
}

static int cfg_dec(void *ctx, const char *ct, char **pt, size_t *len, st_error *err)
{
	(void)ctx;
	if (strncmp(ct, "old:", 4))
		return st__err(err, ST_ESECRETS, "not old");
	*pt = st_strdup(ct + 4);
	*len = strlen(ct + 4);
	return ST_OK;
}

static char *cfg_rekey(const char *in, int want_rc, size_t *n, st_error *err)
{
	st_secrets_callbacks cb = ST_SECRETS_CALLBACKS_INIT;
	st_secrets *m;
	char *out = NULL;
	cb.encrypt = cfg_enc;
	cb.decrypt = cfg_dec;
	assert_int_equal(st_secrets_custom(&m, "test", &cb, NULL), ST_OK);
	st_error_clear(err);
	assert_int_equal(st_config_rekey_text(in, strlen(in), "P.yaml", m, m, &out, NULL, n, err),
			 want_rc);
	st_secrets_free(m);
	return out;
}

/* audit25b E1, E2, E12: every `secure` value of config is found by the YAML parser whatever its
 * style (quoted, flow, quoted key, nested) and rewritten in its style; `secure:` as text, a
 * mapping of `secure` and other keys, keys outside config are left as they are; the other
 * provider's secretsprovider/encryptedkey lines go; what cannot be rewritten in place, or does
 * not decrypt, is refused naming the config key and line. */
static void test_config_yaml(void **state)
{
	(void)state;
	st_error err;
	size_t n = 0;
	char *out, *salt;
	unsigned other;
	const char *in = "# secure: a comment\n"
			 "encryptionsalt: 'v1:x'   # kept\n"
			 "config:\n"
			 "  p:a:\n    secure: \"old:A\"\n"
			 "  p:b: {\"secure\": 'old:B'}\n"
			 "  p:c:\n    \"secure\": old:C\r\n"
			 "  p:d: \"text with secure: inside\"\n"
			 "  p:insecure: x\n"
			 "  p:e:\n    - secure: not-a-ciphertext\n      other: 1\n"
			 "  p:\xc3\xbc: {n: [{secure: old:F}]}  # \xc3\xbc\n"
			 "secure: not-config\n";
	out = cfg_rekey(in, ST_OK, &n, &err);
	assert_int_equal(n, 4);
	assert_string_equal(out, "# secure: a comment\n"
				 "encryptionsalt: ''   # kept\n"
				 "config:\n"
				 "  p:a:\n    secure: \"new:A\"\n"
				 "  p:b: {\"secure\": 'new:B'}\n"
				 "  p:c:\n    \"secure\": new:C\r\n"
				 "  p:d: \"text with secure: inside\"\n"
				 "  p:insecure: x\n"
				 "  p:e:\n    - secure: not-a-ciphertext\n      other: 1\n"
				 "  p:\xc3\xbc: {n: [{secure: new:F}]}  # \xc3\xbc\n"
				 "secure: not-config\n");
	free(out);
	assert_int_equal(st_config_scan(in, strlen(in), NULL, &salt, &other, NULL), ST_OK);
	assert_string_equal(salt, "v1:x");
	assert_int_equal(other, 0);
	free(salt);

	/* a UTF-8 BOM is kept and not counted as a character: the spans stay where they are
	 * (given the BOM, the parser's positions were one character late) */
	in = "\xEF\xBB\xBF# c\nencryptionsalt: v1:x\nconfig:\n  p:a:\n    secure: old:A\n";
	out = cfg_rekey(in, ST_OK, &n, &err);
	assert_int_equal(n, 1);
	assert_string_equal(out, "\xEF\xBB\xBF# c\nencryptionsalt: \nconfig:\n  p:a:\n    secure: new:A\n");
	free(out);
	in = "\xEF\xBB\xBF" "config:\n  p:a:\n    secure: 'old:A'\n";
	out = cfg_rekey(in, ST_OK, &n, &err);
	assert_int_equal(n, 1);
	assert_string_equal(out, "\xEF\xBB\xBF" "encryptionsalt: \nconfig:\n  p:a:\n    secure: 'new:A'\n");
	free(out);

	/* a YAML null is no salt, as an empty one (Pulumi reads it as "") */
	in = "encryptionsalt: ~\nconfig:\n  p:a:\n    secure: old:A\n";
	assert_int_equal(st_config_scan(in, strlen(in), NULL, &salt, &other, NULL), ST_OK);
	assert_null(salt);
	in = "encryptionsalt: 'null'\n";
	assert_int_equal(st_config_scan(in, strlen(in), NULL, &salt, &other, NULL), ST_OK);
	assert_string_equal(salt, "null");
	free(salt);

	in = "secretsprovider: awskms://alias/x  # kms\nconfig:\n  p:a:\n    secure: old:A\n"
	     "encryptedkey: QUJD\n";
	out = cfg_rekey(in, ST_OK, &n, &err);
	assert_int_equal(n, 1);
	assert_string_equal(out, "encryptionsalt: \nconfig:\n  p:a:\n    secure: new:A\n");
	free(out);
	assert_int_equal(st_config_scan(in, strlen(in), NULL, &salt, &other, NULL), ST_OK);
	assert_null(salt);
	assert_int_equal(other, ST_CONFIG_SECRETSPROVIDER | ST_CONFIG_ENCRYPTEDKEY);
	/* `encryptionsalt:` without a value is none (to Pulumi too): the value goes after the key */
	in = "encryptionsalt:   # none\nconfig:\n  p:a: 1\n";
	out = cfg_rekey(in, ST_OK, &n, &err);
	assert_string_equal(out, "encryptionsalt:    # none\nconfig:\n  p:a: 1\n");
	free(out);
	assert_int_equal(st_config_scan(in, strlen(in), NULL, &salt, &other, NULL), ST_OK);
	assert_null(salt);

	static const struct {
		const char *in, *msg;
		int rc, line, col;
	} bad[] = {
		{"config:\n  p:a:\n    secure: |\n      old:A\n",
		 "config 'p:a': a secure value written as a block scalar (| or >) is not rewritten "
		 "in place: write it as `secure: v1:...` (nothing was changed)",
		 ST_EUNSUPPORTED, 3, 13},
		{"x: &a old:A\nconfig:\n  p:a:\n    secure: *a\n",
		 "config 'p:a': a secure value written as an alias is not rewritten in place: "
		 "write it as `secure: v1:...` (nothing was changed)",
		 ST_EUNSUPPORTED, 4, 13},
		{"config:\n  p:a: x\n  p:b:\n    secure: 'old'\n",
		 "config 'p:b': secure value does not decrypt (not old)", ST_ESECRETS, 4, 13},
		{"config: [\n", "not valid YAML: did not find expected node content", ST_EPARSE, 2,
		 1},
		{"- config\n", "not a stack configuration (a YAML mapping)", ST_EFORMAT, 1, 1},
		{"{encryptedkey: x}\n",
		 "'encryptedkey' is not on a line of its own: remove it by hand (the passphrase "
		 "provider replaces it, as Pulumi does)",
		 ST_EUNSUPPORTED, 1, 16},
		/* review25 L2: a key given twice in one mapping, as yaml.v3 refuses it (the same
		 * kind and value, whatever the quotes): the salt, config, a config key, secure */
		{"encryptionsalt: v1:a\nconfig:\n  p:a: 1\n'encryptionsalt': v1:b\n",
		 "mapping key 'encryptionsalt' already defined at line 1: Pulumi refuses the file "
		 "(nothing was changed)",
		 ST_EFORMAT, 4, 1},
		{"config:\n  p:a:\n    secure: old:A\nconfig:\n  p:b: 2\n",
		 "mapping key 'config' already defined at line 1: Pulumi refuses the file (nothing "
		 "was changed)",
		 ST_EFORMAT, 4, 1},
		{"config:\n  p:a:\n    secure: old:A\n  p:b: 1\n  \"p:a\": x\n",
		 "mapping key 'p:a' already defined at line 2: Pulumi refuses the file (nothing was "
		 "changed)",
		 ST_EFORMAT, 5, 3},
		{"config:\n  p:a: {secure: old:A, secure: old:B}\n",
		 "mapping key 'secure' already defined at line 2: Pulumi refuses the file (nothing "
		 "was changed)",
		 ST_EFORMAT, 2, 24},
	};
	/* one key in several mappings is no duplicate */
	in = "config:\n  p:a: {x: 1, y: [{x: 2}]}\n  p:b: {x: 1}\nx: 3\n";
	out = cfg_rekey(in, ST_OK, &n, &err);
	assert_string_equal(out, "encryptionsalt: \nconfig:\n  p:a: {x: 1, y: [{x: 2}]}\n"
				 "  p:b: {x: 1}\nx: 3\n");
	free(out);
	/* the salt is not read from a file with two */
	in = "encryptionsalt: v1:a\nencryptionsalt: v1:b\n";
	assert_int_equal(st_config_scan(in, strlen(in), "P.yaml", &salt, &other, &err), ST_EFORMAT);
	assert_null(salt);
	assert_int_equal(err.line, 2);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		out = cfg_rekey(bad[i].in, bad[i].rc, &n, &err);
		assert_null(out);
		assert_int_equal(n, 0);
		assert_string_equal(err.message, bad[i].msg);
		assert_string_equal(err.file, "P.yaml");
		assert_int_equal(err.line, bad[i].line);
		assert_int_equal(err.column, bad[i].col);
	}
}

/* review25 L3: the rewritten config is read back before it is written: the new salt and, in
 * order, exactly the new ciphertexts, no other provider's key (the check of a rekey's text,
 * which the rekey's own output always passes; here each way a text can differ). */
static void test_config_readback(void **state)
{
	(void)state;
	static const char ok[] = "encryptionsalt: s  # c\nconfig:\n  p:a:\n    secure: 'n1'\n"
				 "  p:b: {secure: n2}\n";
	static const char *const vals[] = {"n1", "n2"}, *const swapped[] = {"n2", "n1"};
	st_error err;
	static const struct {
		const char *text, *salt, *why;
		const char *const *vals;
		size_t n;
	} bad[] = {
		{ok, "s", "a secure value not the new one", swapped, 2},
		{ok, "s", "another count of secure values", vals, 1},
		{ok, "t", "not the new encryptionsalt", vals, 2},
		/* a span one character late (review25 H0): the salt and a value with a stray 'v' */
		{"encryptionsalt: vs\nconfig:\n  p:a:\n    secure: 'n1'\n  p:b: {secure: n2}\n", "s",
		 "not the new encryptionsalt", vals, 2},
		{"encryptionsalt: s\nconfig:\n  p:a:\n    secure: vn1\n  p:b: {secure: n2}\n", "s",
		 "a secure value not the new one", vals, 2},
		{"encryptionsalt: sconfig:\n  p:a:\n", "s", "not valid YAML", vals, 0},
		{"secretsprovider: x\nencryptionsalt: s\n", "s", "another provider's key left", vals,
		 0},
		{"config: {}\n", NULL, "not the new encryptionsalt", vals, 0},
	};

	st_error_clear(&err);
	assert_int_equal(st__config_readback(ok, strlen(ok), "s", vals, 2, &err), ST_OK);
	assert_int_equal(st__config_readback("encryptionsalt: ''\n", 19, NULL, vals, 0, &err),
			 ST_OK);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *want = st_asprintf("the rewritten file does not read back as written (%s): "
					 "nothing was changed; please report this with the file's "
					 "layout (not its values)",
					 bad[i].why);
		st_error_clear(&err);
		assert_int_equal(st__config_readback(bad[i].text, strlen(bad[i].text), bad[i].salt,
						     bad[i].vals, bad[i].n, &err),
				 ST_EUNSUPPORTED);
		assert_string_equal(err.message, want);
		free(want);
	}
}

/* A rekey changes the deployment's secrets provider; a rollback puts every byte back. */
static void test_rekey_rolled_back(void **state)
{
	(void)state;
	st_state *s = tu_load("pulumi/checkpoint-secrets.json");
	json_t *sp = json_object_get(st_state_deployment(s), "secrets_providers");
	st_secrets *from, *to;
	st_edit *e;
	char *before, *after;
	size_t len, n;
	assert_int_equal(st_state_dump(s, NULL, &before, &len, NULL), ST_OK);
	assert_int_equal(st_secrets_open(&from, sp, NULL, 0, NULL), ST_OK);
	assert_int_equal(st_secrets_new_passphrase(&to, "new", 3, NULL), ST_OK);
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_secrets_rekey(e, from, to, &n, NULL), ST_OK);
	assert_int_equal(n, 10);
	assert_string_equal(st_json_str(json_object_get(st_state_deployment(s), "secrets_providers"),
					"type"),
			    "passphrase");
	assert_int_equal(st_edit_commit(e, NULL, NULL, NULL), ST_OK);
	st_edit_rollback(e);
	assert_int_equal(st_state_dump(s, NULL, &after, &len, NULL), ST_OK);
	assert_string_equal(before, after);
	st_edit_free(e);
	free(before);
	free(after);
	st_secrets_free(from);
	st_secrets_free(to);
	st_state_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pbkdf2_vector),
		cmocka_unit_test(test_pulumi_vector),
		cmocka_unit_test(test_synthetic_vector_and_tampering),
		cmocka_unit_test(test_new_passphrase_round_trip),
		cmocka_unit_test(test_encrypt_two_threads),
		cmocka_unit_test(test_encrypt_copies_the_path),
		cmocka_unit_test(test_b64_provider),
		cmocka_unit_test(test_rekey_rolled_back),
		cmocka_unit_test(test_other_providers_pass_through),
		cmocka_unit_test(test_custom_provider_encrypt_and_rekey),
		cmocka_unit_test(test_rekey_state_and_config),
		cmocka_unit_test(test_config_yaml),
		cmocka_unit_test(test_config_readback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
