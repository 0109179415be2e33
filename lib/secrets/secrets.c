/*
 * Secrets managers, exactly as Pulumi's (pkg/secrets/passphrase, sdk/go/common/resource/config/
 * crypt.go): PBKDF2-HMAC-SHA256 over libsodium's HMAC, AES-256-GCM from libsodium, values
 * "v1:<base64 nonce>:<base64 ciphertext+tag>"; the b64 test provider; pass-through for others.
 * Keys are kept in sodium_malloc'ed memory; plaintexts are wiped before they are freed.
 */
#include "internal.h"
#include "walk.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PBKDF2_ITERATIONS 1000000u
#define SALT_BYTES 8
#define KEY_BYTES 32
#define NONCE_BYTES 12

enum kind { K_PASSPHRASE, K_B64, K_CUSTOM, K_OTHER };

struct st_secrets {
	enum kind kind;
	char *type;
	unsigned char *key; /* sodium_malloc'ed, KEY_BYTES; NULL when locked */
	char *salt_string;  /* passphrase: the full "v1:salt:v1:nonce:ct" */
	json_t *state;      /* the provider state as found (other types), or NULL */
	st_secrets_callbacks cb;
};

/* ---- primitives ---- */

void st__pbkdf2_sha256(const unsigned char *pw, size_t pwlen, const unsigned char *salt,
		       size_t saltlen, unsigned iterations, unsigned char out[32])
{
	crypto_auth_hmacsha256_state base, st;
	unsigned char u[32], t[32], one[4] = {0, 0, 0, 1};

	/* One block is enough for 32 bytes. The keyed state is computed once and copied. */
	crypto_auth_hmacsha256_init(&base, pw, pwlen);
	st = base;
	crypto_auth_hmacsha256_update(&st, salt, saltlen);
	crypto_auth_hmacsha256_update(&st, one, 4);
	crypto_auth_hmacsha256_final(&st, u);
	memcpy(t, u, 32);
	for (unsigned i = 1; i < iterations; i++) {
		st = base;
		crypto_auth_hmacsha256_update(&st, u, 32);
		crypto_auth_hmacsha256_final(&st, u);
		for (int k = 0; k < 32; k++)
			t[k] ^= u[k];
	}
	memcpy(out, t, KEY_BYTES);
	sodium_memzero(u, sizeof(u));
	sodium_memzero(t, sizeof(t));
	sodium_memzero(&base, sizeof(base));
	sodium_memzero(&st, sizeof(st));
}

/* 0, -1 for what is not base64, or ST_ENOMEM. */
static int b64_decode(const char *in, size_t inlen, unsigned char **out, size_t *outlen)
{
	size_t cap = inlen / 4 * 3 + 3;
	unsigned char *buf = malloc(cap + 1);
	const char *end;
	if (!buf)
		return ST_ENOMEM;
	if (sodium_base642bin(buf, cap, in, inlen, NULL, outlen, &end,
			      sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    end != in + inlen) {
		free(buf);
		return -1;
	}
	buf[*outlen] = 0;
	*out = buf;
	return 0;
}

static char *b64_encode(const unsigned char *in, size_t len)
{
	size_t n = sodium_base64_encoded_len(len, sodium_base64_VARIANT_ORIGINAL);
	char *out = malloc(n);
	if (out)
		sodium_bin2base64(out, n, in, len, sodium_base64_VARIANT_ORIGINAL);
	return out;
}

static int aes_available(st_error *err)
{
	if (sodium_init() < 0)
		return st__err(err, ST_EUNSUPPORTED, "libsodium failed to initialise");
	if (!crypto_aead_aes256gcm_is_available())
		return st__err(err, ST_EUNSUPPORTED,
			       "this CPU lacks the AES-NI and PCLMUL instructions that "
			       "libsodium's AES-256-GCM needs, so passphrase secrets cannot be "
			       "encrypted or decrypted on this machine (run statetool on another "
			       "x86-64 or ARMv8 machine)");
	return ST_OK;
}

/* "v1:<nonce>:<ct>" with a key -> plaintext. */
static int gcm_decrypt(const unsigned char *key, const char *value, char **pt, size_t *ptlen,
		       st_error *err)
{
	const char *a, *b;
	unsigned char *nonce = NULL, *ct = NULL;
	size_t nlen = 0, clen = 0;
	unsigned long long mlen = 0;
	char *m;
	int rc;

	if (strncmp(value, "v1:", 3) != 0) {
		const char *c = strchr(value, ':');
		if (c && strchr(c + 1, ':') && !strchr(strchr(c + 1, ':') + 1, ':'))
			return st__err(err, ST_ESECRETS, "unknown value version");
		return st__err(err, ST_ESECRETS, "bad value");
	}
	a = value + 3;
	b = strchr(a, ':');
	if (!b || strchr(b + 1, ':'))
		return st__err(err, ST_ESECRETS, "bad value");
	if ((rc = b64_decode(a, (size_t)(b - a), &nonce, &nlen)) < 0 || nlen != NONCE_BYTES) {
		free(nonce);
		return rc == ST_ENOMEM ? st__err(err, rc, "out of memory")
				       : st__err(err, ST_ESECRETS, "bad value: nonce size is incorrect");
	}
	if ((rc = b64_decode(b + 1, strlen(b + 1), &ct, &clen)) < 0 ||
	    clen < crypto_aead_aes256gcm_ABYTES) {
		free(nonce);
		free(ct);
		return rc == ST_ENOMEM ? st__err(err, rc, "out of memory")
				       : st__err(err, ST_ESECRETS,
						 "bad value: ciphertext is not valid base64");
	}
	m = malloc(clen + 1);
	if (!m) {
		free(nonce);
		free(ct);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	if (crypto_aead_aes256gcm_decrypt((unsigned char *)m, &mlen, NULL, ct, clen, NULL, 0, nonce,
					  key) != 0) {
		free(m);
		free(nonce);
		free(ct);
		return st__err(err, ST_ESECRETS,
			       "cipher: message authentication failed (wrong key, or the "
			       "ciphertext was altered)");
	}
	m[mlen] = '\0';
	free(nonce);
	free(ct);
	*pt = m;
	*ptlen = (size_t)mlen;
	return ST_OK;
}

static int gcm_encrypt(const unsigned char *key, const char *pt, size_t len, char **out,
		       st_error *err)
{
	unsigned char nonce[NONCE_BYTES];
	unsigned char *c = malloc(len + crypto_aead_aes256gcm_ABYTES);
	unsigned long long clen = 0;
	char *n64, *c64;

	if (!c)
		return st__err(err, ST_ENOMEM, "out of memory");
	randombytes_buf(nonce, sizeof(nonce));
	crypto_aead_aes256gcm_encrypt(c, &clen, (const unsigned char *)pt, len, NULL, 0, NULL,
				      nonce, key);
	n64 = b64_encode(nonce, sizeof(nonce));
	c64 = b64_encode(c, (size_t)clen);
	free(c);
	*out = n64 && c64 ? st_asprintf("v1:%s:%s", n64, c64) : NULL;
	free(n64);
	free(c64);
	return *out ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}

void st_secret_free(char *p, size_t len)
{
	if (!p)
		return;
	sodium_memzero(p, len);
	free(p);
}

/* ---- managers ---- */

static st_secrets *alloc_mgr(enum kind k, const char *type)
{
	st_secrets *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->kind = k;
	s->type = st_strdup(type);
	if (!s->type) {
		free(s);
		return NULL;
	}
	return s;
}

/* Derives the key from the passphrase and the salt string, and checks it decrypts "pulumi". */
static int unlock(st_secrets *s, const char *pass, size_t len, st_error *err)
{
	const char *p = s->salt_string, *c1, *tail;
	unsigned char *salt = NULL;
	size_t saltlen = 0, ptlen = 0;
	char *pt = NULL;
	int rc;

	/* v1:<b64 salt>:<v1 value of "pulumi"> */
	if (strncmp(p, "v1:", 3) || !(c1 = strchr(p + 3, ':')))
		return st__err(err, ST_EFORMAT, "bad passphrase secrets provider state: salt '%s' "
			       "is not v1:SALT:v1:NONCE:CIPHERTEXT", p);
	tail = c1 + 1;
	if ((rc = b64_decode(p + 3, (size_t)(c1 - (p + 3)), &salt, &saltlen)) < 0 ||
	    saltlen != SALT_BYTES) {
		free(salt);
		if (rc == ST_ENOMEM)
			return st__err(err, rc, "out of memory");
		return st__err(err, ST_EFORMAT, "bad passphrase secrets provider state: the salt "
			       "is not 8 bytes of base64");
	}
	if ((rc = aes_available(err)) != ST_OK) {
		free(salt);
		return rc;
	}
	s->key = sodium_malloc(KEY_BYTES);
	if (!s->key) {
		free(salt);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	st__pbkdf2_sha256((const unsigned char *)pass, len, salt, saltlen, PBKDF2_ITERATIONS, s->key);
	free(salt);
	st_error e2;
	st_error_clear(&e2);
	rc = gcm_decrypt(s->key, tail, &pt, &ptlen, &e2);
	if (rc != ST_OK || ptlen != 6 || memcmp(pt, "pulumi", 6) != 0) {
		st_secret_free(pt, ptlen);
		sodium_free(s->key);
		s->key = NULL;
		return st__err(err, ST_EPASSPHRASE,
			       "incorrect passphrase, please set PULUMI_CONFIG_PASSPHRASE to the "
			       "correct passphrase or set PULUMI_CONFIG_PASSPHRASE_FILE to a file "
			       "containing the passphrase");
	}
	st_secret_free(pt, ptlen);
	return ST_OK;
}

int st_secrets_open(st_secrets **out, const json_t *sp, const char *pass, size_t len,
		    st_error *err)
{
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG_AS(sp, "secrets_providers");
	const char *type = st_json_str(sp, "type");
	st_secrets *s;
	int rc;

	*out = NULL;
	if (!type || !*type)
		return st__err(err, ST_EFORMAT, "the state has no secrets provider");
	if (!strcmp(type, "passphrase")) {
		const char *salt = st_json_str(json_object_get(sp, "state"), "salt");
		if (!salt)
			return st__err(err, ST_EFORMAT,
				       "the passphrase secrets provider has no 'salt' in its state");
		s = alloc_mgr(K_PASSPHRASE, type);
		if (!s || !(s->salt_string = st_strdup(salt))) {
			st_secrets_free(s);
			return st__err(err, ST_ENOMEM, "out of memory");
		}
		if (pass && (rc = unlock(s, pass, len, err)) != ST_OK) {
			st_secrets_free(s);
			return rc;
		}
	} else {
		s = alloc_mgr(!strcmp(type, "b64") ? K_B64 : K_OTHER, type);
		if (!s)
			return st__err(err, ST_ENOMEM, "out of memory");
		s->state = json_incref(json_object_get(sp, "state"));
	}
	*out = s;
	return ST_OK;
}

int st_secrets_new_passphrase(st_secrets **out, const char *pass, size_t len, st_error *err)
{
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG_AS(pass || !len, "passphrase || !len");
	unsigned char salt[SALT_BYTES];
	char *salt64, *check = NULL;
	st_secrets *s;
	int rc;

	*out = NULL;
	if ((rc = aes_available(err)) != ST_OK)
		return rc;
	s = alloc_mgr(K_PASSPHRASE, "passphrase");
	if (!s)
		return st__err(err, ST_ENOMEM, "out of memory");
	randombytes_buf(salt, sizeof(salt));
	s->key = sodium_malloc(KEY_BYTES);
	if (!s->key) {
		st_secrets_free(s);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	st__pbkdf2_sha256((const unsigned char *)pass, len, salt, sizeof(salt), PBKDF2_ITERATIONS,
			  s->key);
	salt64 = b64_encode(salt, sizeof(salt));
	rc = salt64 ? gcm_encrypt(s->key, "pulumi", 6, &check, err)
		    : st__err(err, ST_ENOMEM, "out of memory");
	if (rc != ST_OK) {
		free(salt64);
		st_secrets_free(s);
		return rc;
	}
	s->salt_string = st_asprintf("v1:%s:%s", salt64, check);
	free(salt64);
	free(check);
	if (!s->salt_string) {
		st_secrets_free(s);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	*out = s;
	return ST_OK;
}

int st_secrets_custom(st_secrets **out, const char *type, const st_secrets_callbacks *cb,
		      st_error *err)
{
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(type);
	ST_ASSERT_ARG(cb);
	st_secrets *s;
	int rc;

	*out = NULL;
	if ((rc = st__opts_version(cb->version, ST_SECRETS_CALLBACKS_VERSION,
				   "st_secrets_callbacks", err)) != ST_OK)
		return rc;
	if (!(s = alloc_mgr(K_CUSTOM, type)))
		return st__err(err, ST_ENOMEM, "out of memory");
	s->cb = *cb;
	s->state = json_incref(cb->state);
	*out = s;
	return ST_OK;
}

void st_secrets_free(st_secrets *s)
{
	if (!s)
		return;
	if (s->key)
		sodium_free(s->key);
	if (s->kind == K_CUSTOM && s->cb.free_ctx)
		s->cb.free_ctx(s->cb.ctx);
	free(s->type);
	free(s->salt_string);
	json_decref(s->state);
	free(s);
}

const char *st_secrets_type(const st_secrets *s)
{
	ST_ASSERT_ARG(s);
	return s->type;
}

const char *st_secrets_encryptionsalt(const st_secrets *s)
{
	ST_ASSERT_ARG(s);
	return s->kind == K_PASSPHRASE ? s->salt_string : NULL;
}

json_t *st_secrets_provider_json(const st_secrets *s)
{
	ST_ASSERT_ARG(s);
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "type", json_string(s->type));
	if (s->kind == K_PASSPHRASE)
		json_object_set_new(o, "state", json_pack("{s:s}", "salt", s->salt_string));
	else if (s->state)
		json_object_set(o, "state", s->state);
	else if (s->kind == K_B64)
		json_object_set_new(o, "state", json_object());
	return o;
}

static int cannot(const st_secrets *s, const char *what, st_error *err)
{
	if (!strcmp(s->type, "service"))
		return st__err(err, ST_EUNSUPPORTED,
			       "cannot %s secrets of the 'service' secrets provider offline: Pulumi "
			       "Cloud holds its keys and statetool does not call it for them (its "
			       "ciphertexts pass through unchanged); `pulumi stack export "
			       "--show-secrets` decrypts them",
			       what);
	return st__err(err, ST_EUNSUPPORTED,
		       "cannot %s secrets of the '%s' secrets provider here: statetool has no "
		       "access to its keys (its ciphertexts pass through unchanged); plug the "
		       "provider in through the library (st_secrets_custom)",
		       what, s->type);
}

int st_secrets_encrypt(st_secrets *s, const char *pt, size_t len, char **out, st_error *err)
{
	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG_AS(pt || !len, "plaintext || !len");
	ST_ASSERT_ARG_AS(out, "ciphertext");
	*out = NULL;
	switch (s->kind) {
	case K_PASSPHRASE:
		if (!s->key)
			return st__err(err, ST_EPASSPHRASE, "a passphrase is needed to encrypt "
				       "secrets");
		return gcm_encrypt(s->key, pt, len, out, err);
	case K_B64:
		*out = b64_encode((const unsigned char *)pt, len);
		return *out ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
	case K_CUSTOM:
		return s->cb.encrypt(s->cb.ctx, pt, len, out, err);
	default:
		return cannot(s, "encrypt", err);
	}
}

int st_secrets_decrypt(st_secrets *s, const char *ct, char **pt, size_t *len, st_error *err)
{
	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG_AS(ct, "ciphertext");
	ST_ASSERT_ARG_AS(pt, "plaintext");
	ST_ASSERT_ARG(len);
	*pt = NULL;
	*len = 0;
	switch (s->kind) {
	case K_PASSPHRASE:
		if (!s->key)
			return st__err(err, ST_EPASSPHRASE, "a passphrase is needed to decrypt "
				       "secrets");
		return gcm_decrypt(s->key, ct, pt, len, err);
	case K_B64: {
		unsigned char *b;
		int rc = b64_decode(ct, strlen(ct), &b, len);
		if (rc == ST_ENOMEM)
			return st__err(err, rc, "out of memory");
		if (rc < 0)
			return st__err(err, ST_ESECRETS, "bad value: not base64");
		*pt = (char *)b;
		return ST_OK;
	}
	case K_CUSTOM:
		return s->cb.decrypt(s->cb.ctx, ct, pt, len, err);
	default:
		return cannot(s, "decrypt", err);
	}
}

int st__secrets_builtin(const st_secrets *s)
{
	return s && (s->kind == K_PASSPHRASE || s->kind == K_B64);
}
