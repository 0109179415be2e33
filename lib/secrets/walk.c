/*
 * Walking the secrets of a state: every secret of the resources and pending operations, read
 * in place or copied along the paths to the ones that change; counting, verifying and
 * revealing them.
 */
#include "walk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- walking the secrets of a state ---- */

const char *st__spath_str(st__spath *p)
{
	p->buf.len = 0;
	st_buf_adds(&p->buf, p->base);
	st_buf_addc(&p->buf, '/');
	st_buf_adds(&p->buf, p->field);
	st_segs_pointer(&p->buf, &p->segs);
	return p->buf.data ? p->buf.data : "";
}

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

static int cow_walk(cow_frame *f, st__spath *path, const char *urn, st__wants_fn wants, st__visit_fn fn,
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
int st__visit_secrets(json_t *r, json_t **copy, const char *base, st__wants_fn wants,
			     st__visit_fn fn, void *ctx)
{
	st__spath path;
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
int st__walk_resource(json_t *r, const char *base, st__visit_fn fn, void *ctx)
{
	return st__visit_secrets(r, NULL, base, NULL, fn, ctx);
}

static int has_secret_cb(void *ctx, json_t *secret, st__spath *p, const char *u)
{
	(void)secret, (void)p, (void)u;
	(*(int *)ctx)++;
	return 1; /* stop at the first */
}

int st__has_secret(json_t *r)
{
	int n = 0;
	st__walk_resource(r, "", has_secret_cb, &n);
	return n;
}

int st__each_resource(st_state *s, st__res_fn fn, void *ctx)
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

json_t *st__resource_of(json_t *arr, size_t i, const char *base)
{
	json_t *v = json_array_get(arr, i);
	return strstr(base, "/pending_operations/") ? json_object_get(v, "resource") : v;
}

/* count */
typedef struct cctx {
	size_t ct, pt;
} cctx;

static int count_one(void *p, json_t *secret, st__spath *ptr, const char *urn)
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
	return st__walk_resource(st__resource_of(arr, i, base), base, count_one, p);
}

void st_secrets_count(st_state *st, size_t *ciphertexts, size_t *plaintexts)
{
	ST_ASSERT_ARG_AS(st, "state");
	cctx c = {0, 0};
	st__each_resource(st, count_res, &c);
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

/* Does ciphertext `ct` open with `s`, to JSON? ST_OK; else its code with `why` set (ST_ENOMEM
 * too: it ends a walk). */
static int opens(st_secrets *s, const char *ct, st_error *why)
{
	char *pt;
	size_t len;
	json_t *v = NULL;
	int rc;

	st_error_clear(why);
	if ((rc = st_secrets_decrypt(s, ct, &pt, &len, why)) != ST_OK)
		return rc;
	rc = st_json_parse(&v, pt, len, NULL, NULL, NULL, NULL, NULL);
	st_secret_free(pt, len);
	json_decref(v);
	if (rc == ST_OK || rc == ST_ENOMEM)
		return rc;
	st_error_clear(why);
	return st__err(why, ST_ESECRETS, ST__NOT_JSON);
}

/* A secret that does not decrypt is a problem of the state's; running out of memory ends the
 * walk (ST_ENOMEM). */
static int verify_one(void *p, json_t *secret, st__spath *where, const char *urn)
{
	vctx *c = p;
	const char *ct = st_json_str(secret, "ciphertext");
	st_error why;
	int rc;

	c->count++;
	if (!ct)
		return 0; /* plaintext: nothing to decrypt */
	if ((rc = opens(c->s, ct, &why)) == ST_OK || rc == ST_ENOMEM)
		return rc;
	return st_problems_add(c->out, ST_SEV_ERROR, "secrets/decrypt", st__spath_str(where), urn,
			       "%s", why.message);
}

static int verify_res(void *p, json_t *arr, size_t i, const char *base)
{
	return st__walk_resource(st__resource_of(arr, i, base), base, verify_one, p);
}

int st_secrets_verify(st_state *st, st_secrets *s, st_problems *out, size_t *count, st_error *err)
{
	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG_AS(st, "state");
	ST_ASSERT_ARG(out);
	vctx c = {s, out, 0};
	int rc = st__each_resource(st, verify_res, &c);
	if (count)
		*count = c.count;
	return rc ? st__err(err, rc, "out of memory") : ST_OK;
}

/* reveal */
typedef struct rctx {
	st_secrets *s;
	st_error *err;
} rctx;

static int reveal_one(void *p, json_t *secret, st__spath *ptr, const char *urn)
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
	return st__walk_resource(st__resource_of(arr, i, base), base, reveal_one, p);
}

int st_secrets_reveal(st_state *st, st_secrets *s, st_error *err)
{
	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG_AS(st, "state");
	rctx c = {s, err};
	return st__each_resource(st, reveal_res, &c);
}

/* the ciphertexts of one resource object, each decrypted (an import file's) */
typedef struct dctx {
	st_secrets *s;
	st__secret_bad_fn bad;
	void *ctx;
} dctx;

static int decrypt_one(void *p, json_t *secret, st__spath *where, const char *urn)
{
	dctx *c = p;
	const char *ct = st_json_str(secret, "ciphertext");
	st_error why;
	int rc;

	(void)urn;
	if (!ct || (rc = opens(c->s, ct, &why)) == ST_OK)
		return 0;
	return rc == ST_ENOMEM ? rc : c->bad(c->ctx, where->field, st__spath_str(where),
					     why.message);
}

int st__secrets_check_decrypt(json_t *r, st_secrets *s, st__secret_bad_fn bad, void *ctx)
{
	dctx c = {s, bad, ctx};
	return st__walk_resource(r, "", decrypt_one, &c);
}

size_t st__secrets_count_ciphertexts(json_t *r)
{
	cctx c = {0, 0};
	st__walk_resource(r, "", count_one, &c);
	return c.ct;
}

size_t st__secrets_count_plaintexts(json_t *r)
{
	cctx c = {0, 0};
	st__walk_resource(r, "", count_one, &c);
	return c.pt;
}
