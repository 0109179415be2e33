/*
 * Keys put back as written: the objects whose keys a load respelt (the Go decoder,
 * lib/state/decode.c, notes them), which the writer writes with the keys as they were
 * (st__keymap_*), and the digest of the tree they were noted for.
 */
#include "internal.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

void st__keymap_free(st__keymap *km)
{
	if (!km)
		return;
	for (size_t i = 0; i < km->n; i++) {
		json_decref(km->v[i].obj);
		free(km->v[i].orig);
	}
	free(km->v);
	free(km);
}

static int cmp_ent(const void *a, const void *b)
{
	const st__keymap_ent *x = a, *y = b;
	return x->obj < y->obj ? -1 : x->obj > y->obj;
}

void st__keymap_seal(st__keymap *km, const json_t *root)
{
	qsort(km->v, km->n, sizeof(*km->v), cmp_ent);
	st__keymap_digest(root, km->digest);
}

/* The first entry of obj (entries are sorted by object), or NULL. */
static const st__keymap_ent *first_of(const st__keymap *km, const json_t *obj)
{
	size_t lo = 0, hi = km->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (km->v[mid].obj < obj)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < km->n && km->v[lo].obj == obj ? &km->v[lo] : NULL;
}

const char *st__keymap_lookup(const st__keymap *km, const json_t *obj, const char *key,
			      size_t *len)
{
	const st__keymap_ent *e = first_of(km, obj), *end = km->v + km->n;
	for (; e && e < end && e->obj == obj; e++) {
		if (!strcmp(e->canon, key)) {
			*len = e->orig_len;
			return e->orig;
		}
	}
	return NULL;
}

int st__keymap_has(const st__keymap *km, const json_t *obj)
{
	return first_of(km, obj) != NULL;
}

/* A digest of a value (BLAKE2b over its kinds, keys and contents). */
static void digest(crypto_generichash_state *h, const json_t *v, int depth)
{
	unsigned char tag = (unsigned char)json_typeof(v);
	crypto_generichash_update(h, &tag, 1);
	if (depth > ST_DEFAULT_MAX_DEPTH)
		return;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		for (void *it = json_object_iter((json_t *)v); it;
		     it = json_object_iter_next((json_t *)v, it)) {
			size_t kl = json_object_iter_key_len(it);
			crypto_generichash_update(h, (const unsigned char *)&kl, sizeof(kl));
			crypto_generichash_update(h, (const unsigned char *)json_object_iter_key(it),
						  kl);
			digest(h, json_object_iter_value(it), depth + 1);
		}
		tag = 0xfe;
		crypto_generichash_update(h, &tag, 1);
		break;
	case JSON_ARRAY:
		for (size_t i = 0; i < json_array_size(v); i++)
			digest(h, json_array_get(v, i), depth + 1);
		tag = 0xfd;
		crypto_generichash_update(h, &tag, 1);
		break;
	case JSON_STRING: {
		size_t n = json_string_length(v);
		crypto_generichash_update(h, (const unsigned char *)&n, sizeof(n));
		crypto_generichash_update(h, (const unsigned char *)json_string_value(v), n);
		break;
	}
	case JSON_INTEGER:
	case JSON_REAL: {
		double d = json_number_value(v);
		crypto_generichash_update(h, (const unsigned char *)&d, sizeof(d));
		break;
	}
	default:
		break;
	}
}

void st__keymap_digest(const json_t *root, unsigned char out[32])
{
	crypto_generichash_state h;
	crypto_generichash_init(&h, NULL, 0, 32);
	digest(&h, root, 0);
	crypto_generichash_final(&h, out, 32);
}
