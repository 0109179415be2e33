/* Two states compared: resources added, removed and changed (with the properties that differ),
 * and the deployment's other members; secrets masked. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MASK "[secret]"

static int is_secret(const json_t *v)
{
	const char *sig = st_json_str(v, ST_SIG_KEY);
	return sig && !strcmp(sig, ST_SIG_SECRET);
}

/* A copy of v (new) with every secret replaced by "[secret]". */
static json_t *masked(json_t *v)
{
	if (is_secret(v))
		return json_string(MASK);
	if (json_is_object(v)) {
		json_t *o = json_object(), *m;
		const char *k;
		json_t *x;
		if (!o)
			return NULL;
		json_object_foreach(v, k, x) {
			if (!(m = masked(x)) || json_object_set_new(o, k, m)) {
				json_decref(o);
				return NULL;
			}
		}
		return o;
	}
	if (json_is_array(v)) {
		json_t *a = json_array(), *m, *x;
		size_t i;
		if (!a)
			return NULL;
		json_array_foreach(v, i, x) {
			if (!(m = masked(x)) || json_array_append_new(a, m)) {
				json_decref(a);
				return NULL;
			}
		}
		return a;
	}
	return json_incref(v);
}

typedef struct dctx {
	json_t *changes; /* array of {"path","op","old","new"} */
	int oom;
} dctx;

static void emit(dctx *c, const char *path, const char *op, json_t *a, json_t *b)
{
	json_t *ch = json_object();
	if (!ch || json_object_set_new(ch, "path", json_string(path)) ||
	    json_object_set_new(ch, "op", json_string(op)) ||
	    (a && json_object_set_new(ch, "old", masked(a))) ||
	    (b && json_object_set_new(ch, "new", masked(b))) ||
	    json_array_append_new(c->changes, ch)) {
		c->oom = 1;
		return;
	}
}

static void diff_value(dctx *c, st_buf *path, json_t *a, json_t *b);

/* A key by its bytes whole ("\u0000" included). */
typedef struct dkey {
	const char *k;
	size_t n;
} dkey;

/* Byte order, a prefix first (Go's sort of a map's string keys). */
static int keycmp(const void *x, const void *y)
{
	const dkey *a = x, *b = y;
	int r = memcmp(a->k, b->k, a->n < b->n ? a->n : b->n);
	return r ? r : (a->n > b->n) - (a->n < b->n);
}

/* The members of two objects, in sorted key order (a Go map's order; Pulumi's property maps). */
static void diff_object(dctx *c, st_buf *path, json_t *a, json_t *b)
{
	size_t n = json_object_size(a) + json_object_size(b), k = 0, base = path->len, kl;
	dkey *keys = malloc((n + 1) * sizeof(*keys));
	const char *key;
	json_t *v;
	if (!keys) {
		c->oom = 1;
		return;
	}
	json_object_keylen_foreach(a, key, kl, v)
		keys[k++] = (dkey){key, kl};
	json_object_keylen_foreach(b, key, kl, v)
		if (!json_object_getn(a, key, kl))
			keys[k++] = (dkey){key, kl};
	qsort(keys, k, sizeof(*keys), keycmp);
	for (size_t i = 0; i < k && !c->oom; i++) {
		json_t *x = json_object_getn(a, keys[i].k, keys[i].n);
		json_t *y = json_object_getn(b, keys[i].k, keys[i].n);
		path->len = base;
		st_pointer_add_key(path, keys[i].k, keys[i].n);
		st_buf_addc(path, '\0');
		path->len--;
		if (path->oom) {
			c->oom = 1;
			break;
		}
		if (!x)
			emit(c, path->data, "add", NULL, y);
		else if (!y)
			emit(c, path->data, "remove", x, NULL);
		else
			diff_value(c, path, x, y);
	}
	path->len = base;
	if (path->data)
		path->data[base] = '\0';
	free(keys);
}

static void diff_value(dctx *c, st_buf *path, json_t *a, json_t *b)
{
	if (st__json_equal(a, b))
		return;
	if (json_is_object(a) && json_is_object(b) && !json_object_get(a, ST_SIG_KEY) &&
	    !json_object_get(b, ST_SIG_KEY)) {
		diff_object(c, path, a, b);
		return;
	}
	if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
		size_t base = path->len;
		for (size_t i = 0; i < json_array_size(a) && !c->oom; i++) {
			path->len = base;
			st_pointer_add_index(path, i);
			st_buf_addc(path, '\0');
			path->len--;
			if (path->oom) {
				c->oom = 1;
				break;
			}
			diff_value(c, path, json_array_get(a, i), json_array_get(b, i));
		}
		path->len = base;
		if (path->data)
			path->data[base] = '\0';
		return;
	}
	emit(c, path->data ? path->data : "", "change", a, b);
}

/* Each resource's key: its URN; a copy marked delete: true is told apart by its ID (and, for
 * several with one ID, by its rank). */
static int keys_of(json_t *res, json_t *map, int store)
{
	size_t i;
	json_t *r;
	json_array_foreach(res, i, r) {
		const char *urn = st_json_str(r, "urn"), *id = st_json_str(r, "id");
		char *k;
		if (!urn)
			urn = "";
		for (int rank = 0;; rank++) {
			if (st_json_bool(r, "delete"))
				k = st_asprintf("%s\x1f" "delete\x1f%s\x1f%d", urn, id ? id : "", rank);
			else
				k = rank ? st_asprintf("%s\x1f%d", urn, rank) : st_strdup(urn);
			if (!k)
				return -1;
			if (!json_object_get(map, k))
				break;
			free(k);
		}
		int rc = json_object_set_new(map, k, json_integer(store ? (json_int_t)i : -1));
		free(k);
		if (rc)
			return -1;
	}
	return 0;
}

static json_t *summary(json_t *r)
{
	json_t *o = json_object();
	const char *type = st_json_str(r, "type"), *id = st_json_str(r, "id");
	if (!o)
		return NULL;
	json_object_set_new(o, "urn", json_string(st_json_str(r, "urn") ? st_json_str(r, "urn") : ""));
	if (type)
		json_object_set_new(o, "type", json_string(type));
	if (id && *id)
		json_object_set_new(o, "id", json_string(id));
	if (st_json_bool(r, "delete"))
		json_object_set_new(o, "delete", json_true());
	return o;
}

/* The resource's members in a's order, then b's others. */
static void diff_resource(dctx *c, json_t *a, json_t *b)
{
	st_buf path;
	const char *key;
	size_t kl;
	json_t *v;
	st_buf_init(&path);
	json_object_keylen_foreach(a, key, kl, v) {
		json_t *w = json_object_getn(b, key, kl);
		path.len = 0;
		st_pointer_add_key(&path, key, kl);
		st_buf_addc(&path, '\0');
		path.len--;
		if (path.oom) {
			c->oom = 1;
			break;
		}
		if (!w)
			emit(c, path.data, "remove", v, NULL);
		else
			diff_value(c, &path, v, w);
	}
	json_object_keylen_foreach(b, key, kl, v) {
		if (json_object_getn(a, key, kl) || c->oom)
			continue;
		path.len = 0;
		st_pointer_add_key(&path, key, kl);
		st_buf_addc(&path, '\0');
		if (path.oom) {
			c->oom = 1;
			break;
		}
		emit(c, path.data, "add", NULL, v);
	}
	st_buf_free(&path);
}

static int compare(json_t *ra, json_t *rb, json_t *da, json_t *db, json_t *doc)
{
	json_t *ka = json_object(), *kb = json_object();
	json_t *added = json_array(), *removed = json_array(), *changed = json_array();
	json_t *other = json_array();
	int rc = -1;
	json_t *r;
	const char *key;

	if (!ka || !kb || !added || !removed || !changed || !other || keys_of(ra, ka, 1) ||
	    keys_of(rb, kb, 1))
		goto out;
	/* removed and changed, in a's order */
	json_object_foreach(ka, key, r) {
		json_t *ia = r, *ib = json_object_get(kb, key);
		json_t *x = json_array_get(ra, (size_t)json_integer_value(ia));
		if (!ib) {
			if (json_array_append_new(removed, summary(x)))
				goto out;
			continue;
		}
		json_t *y = json_array_get(rb, (size_t)json_integer_value(ib));
		if (st__json_equal(x, y))
			continue;
		dctx c = {json_array(), 0};
		if (!c.changes)
			goto out;
		diff_resource(&c, x, y);
		json_t *s = summary(y);
		if (c.oom || !s || json_object_set_new(s, "changes", c.changes) ||
		    json_array_append_new(changed, s)) {
			json_decref(s);
			goto out;
		}
	}
	json_object_foreach(kb, key, r) {
		if (json_object_get(ka, key))
			continue;
		if (json_array_append_new(added, summary(json_array_get(rb,
					(size_t)json_integer_value(r)))))
			goto out;
	}
	/* the deployment's other members (not its manifest: every save rewrites it) */
	{
		dctx c = {other, 0};
		st_buf path;
		json_t *xa = json_object(), *xb = json_object();
		st_buf_init(&path);
		if (xa && xb) {
			st__json_update(xa, da ? da : xa);
			st__json_update(xb, db ? db : xb);
			json_object_del(xa, "resources");
			json_object_del(xb, "resources");
			json_object_del(xa, "manifest");
			json_object_del(xb, "manifest");
			diff_object(&c, &path, xa, xb);
		}
		st_buf_free(&path);
		json_decref(xa);
		json_decref(xb);
		if (!xa || !xb || c.oom)
			goto out;
	}
	json_object_set_new(doc, "same", json_boolean(!json_array_size(added) &&
						      !json_array_size(removed) &&
						      !json_array_size(changed) &&
						      !json_array_size(other)));
	json_object_set(doc, "added", added);
	json_object_set(doc, "removed", removed);
	json_object_set(doc, "changed", changed);
	json_object_set(doc, "deployment", other);
	rc = 0;
out:
	json_decref(ka);
	json_decref(kb);
	json_decref(added);
	json_decref(removed);
	json_decref(changed);
	json_decref(other);
	return rc;
}

int st_state_compare(st_state *a, st_state *b, json_t **out, st_error *err)
{
	ST_ASSERT_ARG(a);
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(out);
	json_t *doc = json_object();
	*out = NULL;
	if (!doc || compare(st_state_resources(a, 0), st_state_resources(b, 0),
			    st_state_deployment(a), st_state_deployment(b), doc)) {
		json_decref(doc);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	*out = doc;
	return ST_OK;
}

/* One value for the text: compact JSON (Go's escaping), secrets already masked. */
static void value_text(st_buf *b, const json_t *v)
{
	st_style style;
	char *s = NULL;
	size_t n = 0;
	st_style_checkpoint(&style);
	if (st_json_dump(v, &style, &s, &n, NULL) == ST_OK)
		st_buf_add(b, s, n);
	else
		b->oom = 1;
	free(s);
}

static void change_text(st_buf *b, const json_t *ch, const char *ind)
{
	const char *op = st_json_str(ch, "op"), *path = st_json_str(ch, "path");
	json_t *o = json_object_get(ch, "old"), *n = json_object_get(ch, "new");
	char mark = !strcmp(op, "add") ? '+' : !strcmp(op, "remove") ? '-' : '~';
	st_buf_printf(b, "%s%c %s: ", ind, mark, path);
	if (o)
		value_text(b, o);
	if (o && n)
		st_buf_adds(b, " => ");
	if (n)
		value_text(b, n);
	st_buf_addc(b, '\n');
}

int st_compare_text(const json_t *doc, char **out, size_t *len, st_error *err)
{
	ST_ASSERT_ARG(doc);
	ST_ASSERT_ARG(out);
	st_buf b;
	size_t i, k;
	json_t *r, *ch;
	json_t *added = json_object_get(doc, "added"), *removed = json_object_get(doc, "removed");
	json_t *changed = json_object_get(doc, "changed"), *other = json_object_get(doc, "deployment");

	*out = NULL;
	if (len)
		*len = 0;
	if (!json_is_array(added) || !json_is_array(removed) || !json_is_array(changed) ||
	    !json_is_array(other))
		return st__err(err, ST_EINVAL, "not a comparison of st_state_compare");
	st_buf_init(&b);
	json_array_foreach(removed, i, r)
		st_buf_printf(&b, "- %s%s\n", st_json_str(r, "urn"),
			      st_json_bool(r, "delete") ? " (delete: true)" : "");
	json_array_foreach(added, i, r)
		st_buf_printf(&b, "+ %s%s\n", st_json_str(r, "urn"),
			      st_json_bool(r, "delete") ? " (delete: true)" : "");
	json_array_foreach(changed, i, r) {
		st_buf_printf(&b, "~ %s%s\n", st_json_str(r, "urn"),
			      st_json_bool(r, "delete") ? " (delete: true)" : "");
		json_array_foreach(json_object_get(r, "changes"), k, ch)
			change_text(&b, ch, "    ");
	}
	if (json_array_size(other)) {
		st_buf_adds(&b, "~ deployment\n");
		json_array_foreach(other, k, ch)
			change_text(&b, ch, "    ");
	}
	if (json_is_true(json_object_get(doc, "same")))
		st_buf_adds(&b, "no differences\n");
	else
		st_buf_printf(&b, "%zu added, %zu removed, %zu changed%s\n",
			      json_array_size(added), json_array_size(removed),
			      json_array_size(changed),
			      json_array_size(other) ? ", deployment changed" : "");
	if (b.oom) {
		st_buf_free(&b);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	*out = st_buf_take(&b, len);
	return ST_OK;
}
