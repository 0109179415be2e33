/*
 * Secrets managers, exactly as Pulumi's (pkg/secrets/passphrase, sdk/go/common/resource/config/
 * crypt.go): PBKDF2-HMAC-SHA256 over libsodium's HMAC, AES-256-GCM from libsodium, values
 * "v1:<base64 nonce>:<base64 ciphertext+tag>"; the b64 test provider; pass-through for others.
 * Keys are kept in sodium_malloc'ed memory; plaintexts are wiped before they are freed.
 */
#include "internal.h"
#include "ops/session.h"

#include <pthread.h>

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

/* ---- walking the secrets of a state ---- */

/* Where a secret sits: base/field/segs..., made into a JSON Pointer only when asked. */
typedef struct spath {
	const char *base;
	const char *field;
	st_segs segs;
	st_buf buf;
} spath;

static const char *spath_str(spath *p)
{
	p->buf.len = 0;
	st_buf_adds(&p->buf, p->base);
	st_buf_addc(&p->buf, '/');
	st_buf_adds(&p->buf, p->field);
	st_segs_pointer(&p->buf, &p->segs);
	return p->buf.data ? p->buf.data : "";
}

typedef int (*visit_fn)(void *ctx, json_t *secret, spath *where, const char *urn);

/* Is this object a secret? Its keys are looked through rather than the signature key hashed:
 * most property objects are not signatures at all. */
static int is_secret(json_t *v)
{
	const char *k;
	size_t kl;
	json_t *e;
	json_object_keylen_foreach(v, k, kl, e) {
		if (kl == sizeof(ST_SIG_KEY) - 1 && !memcmp(k, ST_SIG_KEY, kl))
			return json_is_string(e) && !strcmp(json_string_value(e), ST_SIG_SECRET);
	}
	return 0;
}

static const char *const prop_fields[] = {"inputs", "outputs", NULL};

/*
 * Copy on write along the path: visits the secrets of a resource as the state holds it
 * (shared with the session's view of the state as it began, so never changed), and gives `fn`
 * a copy of each secret that `wants` one, in a copy of every container on its path, made as
 * the first such secret below it is met and put in place of the original in its parent's
 * copy. The rest stays shared: a resource with one secret costs a few small copies, not a copy
 * of all its properties (and the commit's diff finds the change by pointer, not by comparing
 * whole property trees). In place (in_place), the same walk gives `fn` the secrets themselves:
 * for reading, and for the session's own copies.
 */
typedef struct cow_frame {
	struct cow_frame *up;
	int in_place;  /* the walk changes the values themselves (the session's own copy) */
	json_t *orig;  /* the value as the state holds it */
	json_t *fresh; /* its copy in the new resource, once one is needed */
	const char *key; /* where it sits in the parent's copy: a key, or an index */
	size_t keylen, index;
} cow_frame;

static json_t *cow_fresh(cow_frame *f)
{
	json_t *parent, *c;
	int rc;
	if (f->in_place)
		return f->orig;
	if (f->fresh)
		return f->fresh;
	if (!f->up) /* the resource: its copy stands alone (the caller puts it in place) */
		return f->fresh = json_copy(f->orig);
	parent = cow_fresh(f->up);
	if (!parent)
		return NULL;
	c = json_copy(f->orig); /* shallow: the members are shared */
	if (!c)
		return NULL;
	rc = json_is_object(parent) ? json_object_setn_nocheck(parent, f->key, f->keylen, c)
				    : json_array_set(parent, f->index, c);
	json_decref(c); /* the parent's copy holds it */
	if (rc)
		return NULL;
	f->fresh = c;
	return c;
}

typedef int (*wants_fn)(void *ctx, json_t *secret);

static int cow_walk(cow_frame *f, spath *path, const char *urn, wants_fn wants, visit_fn fn,
		    void *ctx, int depth)
{
	json_t *v = f->orig, *c;
	int rc = 0;
	if (depth > ST_DEFAULT_MAX_DEPTH)
		return 0;
	if (json_is_object(v)) {
		if (is_secret(v)) {
			json_t *mine;
			if (wants && !wants(ctx, v))
				return 0;
			if (!(mine = cow_fresh(f)))
				return ST_ENOMEM;
			return fn(ctx, mine, path, urn);
		}
		if (st_segs_push(&path->segs, NULL, 0) < 0)
			return ST_ENOMEM;
		for (void *it = json_object_iter(v); it && !rc; it = json_object_iter_next(v, it)) {
			cow_frame ch = {0};
			c = json_object_iter_value(it);
			if (!json_is_object(c) && !json_is_array(c))
				continue;
			ch.up = f;
			ch.in_place = f->in_place;
			ch.orig = c;
			ch.key = json_object_iter_key(it);
			ch.keylen = json_object_iter_key_len(it);
			path->segs.v[path->segs.n - 1].key = ch.key;
			path->segs.v[path->segs.n - 1].len = ch.keylen;
			rc = cow_walk(&ch, path, urn, wants, fn, ctx, depth + 1);
		}
		path->segs.n--;
	} else if (json_is_array(v)) {
		size_t i;
		if (st_segs_push(&path->segs, NULL, 0) < 0)
			return ST_ENOMEM;
		json_array_foreach(v, i, c) {
			cow_frame ch = {0};
			if (!json_is_object(c) && !json_is_array(c))
				continue;
			ch.up = f;
			ch.in_place = f->in_place;
			ch.orig = c;
			ch.index = i;
			path->segs.v[path->segs.n - 1].len = i;
			if ((rc = cow_walk(&ch, path, urn, wants, fn, ctx, depth + 1)) != 0)
				break;
		}
		path->segs.n--;
	}
	return rc;
}

/* Visits the secrets of resource `r` that `wants` (NULL: every one). With `copy` NULL, `fn`
 * gets the secrets themselves (only reading, or changing the session's own copy); else *copy
 * is r's copy with the secrets `fn` changed (a reference for the caller), or NULL when none
 * was wanted. */
static int visit_secrets(json_t *r, json_t **copy, const char *base, wants_fn wants,
			     visit_fn fn, void *ctx)
{
	spath path;
	int rc = 0;
	const char *urn = st_json_str(r, "urn");
	cow_frame top = {0};
	top.orig = r;
	top.in_place = !copy;
	memset(&path, 0, sizeof(path));
	st_buf_init(&path.buf);
	path.base = base;
	for (int f = 0; prop_fields[f] && !rc; f++) {
		cow_frame fr = {0};
		json_t *v = json_object_get(r, prop_fields[f]);
		if (!v)
			continue;
		fr.up = &top;
		fr.in_place = top.in_place;
		fr.orig = v;
		fr.key = prop_fields[f];
		fr.keylen = strlen(prop_fields[f]);
		path.field = prop_fields[f];
		path.segs.n = 0;
		rc = cow_walk(&fr, &path, urn, wants, fn, ctx, 0);
	}
	if (rc == ST_OK && path.buf.oom)
		rc = ST_ENOMEM;
	st_buf_free(&path.buf);
	st_segs_free(&path.segs);
	if (copy)
		*copy = top.fresh;
	return rc;
}

/* Visits every secret of one resource object, in place. */
static int walk_resource(json_t *r, const char *base, visit_fn fn, void *ctx)
{
	return visit_secrets(r, NULL, base, NULL, fn, ctx);
}

static int has_secret_cb(void *ctx, json_t *secret, spath *p, const char *u)
{
	(void)secret, (void)p, (void)u;
	(*(int *)ctx)++;
	return 1; /* stop at the first */
}

static int has_secret(json_t *r)
{
	int n = 0;
	walk_resource(r, "", has_secret_cb, &n);
	return n;
}

/* Every resource of the state and of its pending operations, with its pointer. */
typedef int (*res_fn)(void *ctx, json_t *arr, size_t i, const char *base);

static int each_resource(st_state *s, res_fn fn, void *ctx)
{
	json_t *dep = st_state_deployment(s), *arr, *op;
	const char *dbase = st__deployment_pointer(s);
	char base[128];
	size_t i;
	int rc;

	arr = dep ? json_object_get(dep, "resources") : NULL;
	for (i = 0; i < json_array_size(arr); i++) {
		snprintf(base, sizeof(base), "%s/resources/%zu", dbase, i);
		if ((rc = fn(ctx, arr, i, base)) != 0)
			return rc;
	}
	arr = dep ? json_object_get(dep, "pending_operations") : NULL;
	json_array_foreach(arr, i, op) {
		snprintf(base, sizeof(base), "%s/pending_operations/%zu/resource", dbase, i);
		if ((rc = fn(ctx, arr, i, base)) != 0)
			return rc;
	}
	return 0;
}

static json_t *resource_of(json_t *arr, size_t i, const char *base)
{
	json_t *v = json_array_get(arr, i);
	return strstr(base, "/pending_operations/") ? json_object_get(v, "resource") : v;
}

/* count */
typedef struct cctx {
	size_t ct, pt;
} cctx;

static int count_one(void *p, json_t *secret, spath *ptr, const char *urn)
{
	cctx *c = p;
	(void)ptr, (void)urn;
	if (json_object_get(secret, "ciphertext"))
		c->ct++;
	else if (json_object_get(secret, "plaintext"))
		c->pt++;
	return 0;
}

static int count_res(void *p, json_t *arr, size_t i, const char *base)
{
	return walk_resource(resource_of(arr, i, base), base, count_one, p);
}

void st_secrets_count(st_state *st, size_t *ciphertexts, size_t *plaintexts)
{
	ST_ASSERT_ARG(st);
	cctx c = {0, 0};
	each_resource(st, count_res, &c);
	if (ciphertexts)
		*ciphertexts = c.ct;
	if (plaintexts)
		*plaintexts = c.pt;
}

/* verify */
typedef struct vctx {
	st_secrets *s;
	st_problems *out;
	size_t count;
} vctx;

/* A secret that does not decrypt is a problem of the state's; running out of memory ends the
 * walk (ST_ENOMEM). */
static int verify_one(void *p, json_t *secret, spath *where, const char *urn)
{
	vctx *c = p;
	const char *ct = st_json_str(secret, "ciphertext");
	char *pt;
	size_t len;
	st_error err;
	json_t *v = NULL;
	int rc;

	c->count++;
	if (!ct)
		return 0; /* plaintext: nothing to decrypt */
	st_error_clear(&err);
	if ((rc = st_secrets_decrypt(c->s, ct, &pt, &len, &err)) != ST_OK) {
		if (rc == ST_ENOMEM)
			return rc;
		return st_problems_add(c->out, ST_SEV_ERROR, "secrets/decrypt", spath_str(where),
				       urn, "%s", err.message);
	}
	rc = st_json_parse(&v, pt, len, NULL, NULL, NULL, NULL, NULL);
	st_secret_free(pt, len);
	json_decref(v);
	if (rc == ST_ENOMEM)
		return rc;
	if (rc != ST_OK)
		return st_problems_add(c->out, ST_SEV_ERROR, "secrets/decrypt", spath_str(where),
				       urn, "the secret decrypts, but not to JSON");
	return 0;
}

static int verify_res(void *p, json_t *arr, size_t i, const char *base)
{
	return walk_resource(resource_of(arr, i, base), base, verify_one, p);
}

int st_secrets_verify(st_state *st, st_secrets *s, st_problems *out, size_t *count, st_error *err)
{
	ST_ASSERT_ARG(st);
	ST_ASSERT_ARG(s);
	vctx c = {s, out, 0};
	int rc = each_resource(st, verify_res, &c);
	if (count)
		*count = c.count;
	return rc ? st__err(err, rc, "out of memory") : ST_OK;
}

/* reveal */
typedef struct rctx {
	st_secrets *s;
	st_error *err;
} rctx;

static int reveal_one(void *p, json_t *secret, spath *ptr, const char *urn)
{
	rctx *c = p;
	const char *ct = st_json_str(secret, "ciphertext");
	char *pt;
	size_t len;
	(void)ptr, (void)urn;
	int rc;
	if (!ct)
		return 0;
	if ((rc = st_secrets_decrypt(c->s, ct, &pt, &len, c->err)) != ST_OK)
		return rc;
	json_object_del(secret, "ciphertext");
	json_object_set_new(secret, "plaintext", json_stringn(pt, len));
	st_secret_free(pt, len);
	return 0;
}

static int reveal_res(void *p, json_t *arr, size_t i, const char *base)
{
	return walk_resource(resource_of(arr, i, base), base, reveal_one, p);
}

int st_secrets_reveal(st_state *st, st_secrets *s, st_error *err)
{
	ST_ASSERT_ARG(st);
	ST_ASSERT_ARG(s);
	rctx c = {s, err};
	return each_resource(st, reveal_res, &c);
}

/* encrypt / rekey in an edit session */
typedef struct ectx {
	st_edit *e;
	st_secrets *from, *to;
	int rekey;
	size_t count;
	st_error *err;
} ectx;

/* Does encrypt_one change this secret? */
static int encrypt_wants(void *p, json_t *secret)
{
	ectx *c = p;
	if (st_json_str(secret, "ciphertext"))
		return c->rekey;
	return json_is_string(json_object_get(secret, "plaintext"));
}

static int encrypt_one(void *p, json_t *secret, spath *where, const char *urn)
{
	ectx *c = p;
	const char *ct = st_json_str(secret, "ciphertext");
	json_t *ptv = json_object_get(secret, "plaintext");
	char *pt = NULL, *nct = NULL;
	size_t len = 0;
	int rc;

	if (ct && !c->rekey)
		return 0; /* unchanged secrets keep their ciphertext */
	if (ct) {
		rc = st_secrets_decrypt(c->from, ct, &pt, &len, c->err);
		if (rc) {
			st__err_pointer(c->err, spath_str(where));
			return rc;
		}
	} else if (json_is_string(ptv)) {
		len = json_string_length(ptv);
		pt = malloc(len + 1);
		if (!pt)
			return st__err(c->err, ST_ENOMEM, "out of memory");
		memcpy(pt, json_string_value(ptv), len + 1);
	} else {
		return 0;
	}
	rc = st_secrets_encrypt(c->to, pt, len, &nct, c->err);
	st_secret_free(pt, len);
	if (rc)
		return rc;
	rc = json_object_set_new(secret, "ciphertext", json_string(nct));
	free(nct);
	if (rc)
		return st__err(c->err, ST_ENOMEM, "out of memory");
	json_object_del(secret, "plaintext");
	c->count++;
	(void)urn;
	return 0;
}

static int encrypt_res(void *p, json_t *arr, size_t i, const char *base)
{
	ectx *c = p;
	json_t *r = resource_of(arr, i, base);
	if (r == json_array_get(arr, i) && !st__edit_is_own(c->e, r)) {
		/* a resource of the state as it was: copied along the paths to its secrets */
		json_t *t = NULL;
		size_t before = c->count;
		int rc = visit_secrets(r, &t, base, encrypt_wants, encrypt_one, p);
		if (rc == ST_ENOMEM)
			st__err(c->err, ST_ENOMEM, "out of memory");
		if (rc || !t) {
			json_decref(t);
			return rc;
		}
		if (st__edit_put(c->e, arr, i, t) < 0)
			return st__err(c->err, ST_ENOMEM, "out of memory");
		st__edit_report(c->e, "%s: %s %zu secret%s", st_json_str(t, "urn"),
				c->rekey ? "re-encrypted" : "encrypted", c->count - before,
				c->count - before == 1 ? "" : "s");
		return ST_OK;
	}
	if (!has_secret(r))
		return 0;
	if (!st__edit_own(c->e, arr, i))
		return st__err(c->err, ST_ENOMEM, "out of memory");
	r = resource_of(arr, i, base);
	size_t before = c->count;
	int rc = walk_resource(r, base, encrypt_one, p);
	if (!rc && c->count > before)
		st__edit_report(c->e, "%s: %s %zu secret%s", st_json_str(r, "urn"),
				c->rekey ? "re-encrypted" : "encrypted", c->count - before,
				c->count - before == 1 ? "" : "s");
	return rc;
}

/* The resources' secrets on two threads, for the built-in providers (their keys are only
 * read; a custom provider's callbacks may not be safe on two threads): each thread copies and
 * encrypts the resources of its half, then the copies are put in place and reported in file
 * order, as on one thread. */
typedef struct enc_job {
	ectx c; /* the thread's own count and error */
	st_error err;
	json_t *arr;
	size_t from, to;
	json_t **copies;
	size_t *counts;
	const char *dbase;
	int rc;
} enc_job;

static void *enc_main(void *arg)
{
	enc_job *j = arg;
	char base[128];
	for (size_t i = j->from; i < j->to && !j->rc; i++) {
		json_t *r = json_array_get(j->arr, i), *t;
		size_t before = j->c.count;
		int own = st__edit_is_own(j->c.e, r);
		/* the session's own copy changes in place; another is copied along the paths to
		 * the secrets that change */
		snprintf(base, sizeof(base), "%s/resources/%zu", j->dbase, i);
		if (own) {
			t = json_incref(r);
			j->rc = walk_resource(t, base, encrypt_one, &j->c);
		} else {
			t = NULL;
			j->rc = visit_secrets(r, &t, base, encrypt_wants, encrypt_one, &j->c);
		}
		if (j->rc == ST_ENOMEM)
			st__err(&j->err, ST_ENOMEM, "out of memory");
		j->counts[i] = j->c.count - before;
		j->copies[i] = t;
	}
	return NULL;
}

static int builtin(const st_secrets *s)
{
	return s && (s->kind == K_PASSPHRASE || s->kind == K_B64);
}

/* 1: not done here (one thread does it), else the outcome. */
static int encrypt_two_threads(ectx *c)
{
	st_state *s = st__edit_state(c->e);
	json_t *dep = st_state_deployment(s);
	json_t *arr = dep ? json_object_get(dep, "resources") : NULL;
	size_t n = json_array_size(arr);
	json_t **copies;
	size_t *counts;
	enc_job job[2];
	pthread_t th;
	int rc = ST_OK;

	if (n < 500 || !st__threads_ok() || !builtin(c->from) || !builtin(c->to))
		return 1;
	copies = calloc(n, sizeof(*copies));
	counts = calloc(n, sizeof(*counts));
	memset(job, 0, sizeof(job));
	for (int k = 0; k < 2; k++) {
		job[k].c = *c;
		job[k].c.count = 0;
		st_error_clear(&job[k].err);
		job[k].c.err = &job[k].err;
		job[k].arr = arr;
		job[k].from = k ? n / 2 : 0;
		job[k].to = k ? n : n / 2;
		job[k].copies = copies;
		job[k].counts = counts;
		job[k].dbase = st__deployment_pointer(s);
	}
	if (!copies || !counts || pthread_create(&th, NULL, enc_main, &job[1]) != 0) {
		free(copies);
		free(counts);
		return 1;
	}
	enc_main(&job[0]);
	pthread_join(th, NULL);
	for (int k = 0; k < 2 && !rc; k++)
		if (job[k].rc) { /* the first in file order */
			rc = job[k].rc;
			if (c->err)
				*c->err = job[k].err;
		}
	for (size_t i = 0; i < n; i++) {
		json_t *t = copies[i];
		if (!t)
			continue;
		if (rc) {
			json_decref(t);
			continue;
		}
		if (st__edit_put(c->e, arr, i, t) < 0) { /* (the session's own: in place) */
			rc = st__err(c->err, ST_ENOMEM, "out of memory");
			continue;
		}
		c->count += counts[i];
		if (counts[i])
			st__edit_report(c->e, "%s: %s %zu secret%s", st_json_str(t, "urn"),
					c->rekey ? "re-encrypted" : "encrypted", counts[i],
					counts[i] == 1 ? "" : "s");
	}
	free(copies);
	free(counts);
	return rc;
}

/* Encrypts (or re-encrypts) every secret of the session's state. */
static int encrypt_all(ectx *c)
{
	st_state *s = st__edit_state(c->e);
	json_t *dep = st_state_deployment(s), *ops;
	const char *dbase = st__deployment_pointer(s);
	char base[128];
	int rc = encrypt_two_threads(c);

	if (rc == 1)
		return each_resource(s, encrypt_res, c);
	if (rc)
		return rc;
	ops = dep ? json_object_get(dep, "pending_operations") : NULL;
	for (size_t i = 0; i < json_array_size(ops); i++) {
		snprintf(base, sizeof(base), "%s/pending_operations/%zu/resource", dbase, i);
		if ((rc = encrypt_res(c, ops, i, base)) != 0)
			return rc;
	}
	return ST_OK;
}

int st_edit_secrets_encrypt(st_edit *e, st_secrets *s, size_t *count, st_error *err)
{
	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(s);
	ectx c = {e, s, s, 0, 0, err};
	st__edit_op op;
	int rc;

	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(s);
	if (count)
		*count = 0;
	if ((rc = st__edit_op_begin(e, &op, err)) != ST_OK)
		return rc;
	rc = st__edit_op_end(e, &op, encrypt_all(&c));
	if (rc == ST_OK && count)
		*count = c.count;
	return rc;
}

static int rekey(ectx *c)
{
	json_t *sp;
	int rc = encrypt_all(c);
	if (rc)
		return rc;
	st__phase("secrets: re-encrypted");
	if (!(sp = st_secrets_provider_json(c->to)))
		return st__err(c->err, ST_ENOMEM, "out of memory");
	if ((rc = st__edit_set_member(c->e, "secrets_providers", sp, c->err)) != ST_OK)
		return rc;
	st__edit_report(c->e, "secrets provider: %s with a new salt", st_secrets_type(c->to));
	return ST_OK;
}

int st_edit_secrets_rekey(st_edit *e, st_secrets *from, st_secrets *to, size_t *count,
			  st_error *err)
{
	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(from);
	ST_ASSERT_ARG(to);
	ectx c = {e, from, to, 1, 0, err};
	st__edit_op op;
	int rc;

	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(from);
	ST_ASSERT_ARG(to);
	st__phase("secrets: keys derived");
	if (count)
		*count = 0;
	if (!st_state_deployment(st__edit_state(e)))
		return st__err(err, ST_EINVAL, "the state has no deployment");
	if ((rc = st__edit_op_begin(e, &op, err)) != ST_OK)
		return rc;
	rc = st__edit_op_end(e, &op, rekey(&c));
	if (rc == ST_OK && count)
		*count = c.count;
	return rc;
}

size_t st__secrets_count_ciphertexts(json_t *r)
{
	cctx c = {0, 0};
	walk_resource(r, "", count_one, &c);
	return c.ct;
}

size_t st__secrets_count_plaintexts(json_t *r)
{
	cctx c = {0, 0};
	walk_resource(r, "", count_one, &c);
	return c.pt;
}

int st__secrets_encrypt_resource(json_t *r, st_secrets *to, size_t *count, st_error *err)
{
	ectx c = {NULL, to, to, 0, 0, err};
	int rc = walk_resource(r, "", encrypt_one, &c);
	if (rc == ST_ENOMEM)
		st__err(err, ST_ENOMEM, "out of memory");
	if (count)
		*count += c.count;
	return rc;
}

int st__secrets_reencrypt(json_t *r, st_secrets *from, st_secrets *to, size_t *count,
			  st_error *err)
{
	ectx c = {NULL, from, to, 1, 0, err};
	int rc = walk_resource(r, "", encrypt_one, &c);
	if (count)
		*count += c.count;
	return rc;
}

/* ---- stack configuration files ---- */

int st_config_rekey(const char *path, st_secrets *from, st_secrets *to, size_t *count,
		    st_error *err)
{
	ST_ASSERT_ARG(from);
	ST_ASSERT_ARG(to);
	char *text = NULL, *line, *nl;
	size_t len = 0, n = 0;
	st_buf out;
	int rc, saw_salt = 0;

	if (count)
		*count = 0;
	rc = st_file_read(path, 16 << 20, &text, &len, NULL, err);
	if (rc)
		return rc;
	st_buf_init(&out);
	for (line = text; line < text + len; line = nl) {
		char *eol = memchr(line, '\n', (size_t)(text + len - line));
		nl = eol ? eol + 1 : text + len;
		size_t ll = (size_t)(nl - line);
		char *salt = NULL, *sec = NULL;
		/* encryptionsalt: v1:... (top level) */
		char *p = line;
		while (p < nl && (*p == ' ' || *p == '\t'))
			p++;
		if (!strncmp(p, "encryptionsalt:", 15) && p == line) {
			salt = p;
		} else {
			char *q = p;
			while (q + 7 < nl && strncmp(q, "secure:", 7))
				q++;
			if (q + 7 < nl && !strncmp(q, "secure:", 7))
				sec = q;
		}
		if (salt) {
			const char *ns = st_secrets_encryptionsalt(to);
			st_buf_add(&out, line, (size_t)(salt - line));
			st_buf_printf(&out, "encryptionsalt: %s", ns ? ns : "");
			if (eol)
				st_buf_add(&out, eol, (size_t)(nl - eol));
			saw_salt = 1;
			continue;
		}
		if (sec) {
			char *v = sec + 7, *ve, *pt = NULL, *ct = NULL, *val;
			size_t ptlen = 0;
			while (v < nl && (*v == ' ' || *v == '\t'))
				v++;
			ve = v;
			while (ve < nl && *ve != '\n' && *ve != '\r' && *ve != ' ' && *ve != '}' &&
			       *ve != '"' && *ve != '\'')
				ve++;
			if (ve == v) {
				st_buf_add(&out, line, ll);
				continue;
			}
			val = st_strndup(v, (size_t)(ve - v));
			rc = val ? st_secrets_decrypt(from, val, &pt, &ptlen, err) : ST_ENOMEM;
			if (rc == ST_OK)
				rc = st_secrets_encrypt(to, pt, ptlen, &ct, err);
			st_secret_free(pt, ptlen);
			free(val);
			if (rc) {
				st__err_file(err, path);
				free(ct);
				goto fail;
			}
			st_buf_add(&out, line, (size_t)(v - line));
			st_buf_adds(&out, ct);
			st_buf_add(&out, ve, (size_t)(nl - ve));
			free(ct);
			n++;
			continue;
		}
		st_buf_add(&out, line, ll);
	}
	if (!saw_salt) {
		/* Pulumi writes encryptionsalt first. */
		st_buf b2;
		st_buf_init(&b2);
		st_buf_printf(&b2, "encryptionsalt: %s\n", st_secrets_encryptionsalt(to));
		st_buf_add(&b2, out.data ? out.data : "", out.len);
		st_buf_free(&out);
		out = b2;
	}
	if (out.oom) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto fail;
	}
	{
		st_write_opts wo = ST_WRITE_OPTS_INIT;
		wo.backup = 1;
		rc = st_file_write_atomic(path, out.data, out.len, &wo, err);
	}
	if (rc == ST_OK && count)
		*count = n;
fail:
	sodium_memzero(text, len);
	free(text);
	st_buf_free(&out);
	return rc;
}
