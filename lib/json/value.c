/* Small accessors of jansson values used across the library. */
#include "internal.h"

const char *st_json_str(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

int st_json_bool(const json_t *obj, const char *key)
{
	return json_is_true(json_object_get(obj, key));
}

json_t *st__json_copy(json_t *v)
{
	json_t *c, *m;
	const char *k;
	size_t kl, i;

	if (json_is_object(v)) {
		if (!(c = json_object()))
			return NULL;
		json_object_keylen_foreach(v, k, kl, m) {
			if (json_object_setn_nocheck(c, k, kl, m)) {
				json_decref(c);
				return NULL;
			}
		}
		return c;
	}
	if (json_is_array(v)) {
		if (!(c = json_array()))
			return NULL;
		json_array_foreach(v, i, m) {
			if (json_array_append(c, m)) {
				json_decref(c);
				return NULL;
			}
		}
		return c;
	}
	return v ? json_deep_copy(v) : NULL; /* a scalar: the same as a copy */
}

int st__json_update(json_t *obj, json_t *other)
{
	const char *k;
	size_t kl;
	json_t *m;
	json_object_keylen_foreach(other, k, kl, m) {
		if (json_object_setn_nocheck(obj, k, kl, m) < 0)
			return -1;
	}
	return 0;
}

int st_json_is_empty(const json_t *v)
{
	if (!v || json_is_null(v) || json_is_false(v))
		return 1;
	if (json_is_string(v))
		return json_string_length(v) == 0;
	if (json_is_number(v))
		return json_number_value(v) == 0;
	if (json_is_array(v))
		return json_array_size(v) == 0;
	if (json_is_object(v))
		return json_object_size(v) == 0;
	return 0;
}

/* ---- equality ---- */

static int object_equal(json_t *a, json_t *b)
{
	void *ia, *ib;
	if (json_object_size(a) != json_object_size(b))
		return 0;
	/* the same order (a copy, a value written again): member by member */
	for (ia = json_object_iter(a), ib = json_object_iter(b); ia && ib;
	     ia = json_object_iter_next(a, ia), ib = json_object_iter_next(b, ib)) {
		size_t la = json_object_iter_key_len(ia);
		if (la != json_object_iter_key_len(ib) ||
		    memcmp(json_object_iter_key(ia), json_object_iter_key(ib), la))
			break;
		if (!st__json_equal(json_object_iter_value(ia), json_object_iter_value(ib)))
			return 0;
	}
	if (!ia)
		return 1;
	/* another order: the rest by key, its bytes whole (a key may hold "\u0000") */
	for (; ia; ia = json_object_iter_next(a, ia)) {
		json_t *w = json_object_getn(b, json_object_iter_key(ia),
					     json_object_iter_key_len(ia));
		if (!w || !st__json_equal(json_object_iter_value(ia), w))
			return 0;
	}
	return 1;
}

int st__json_equal(const json_t *a, const json_t *b)
{
	if (a == b)
		return 1;
	if (!a || !b)
		return 0;
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_OBJECT:
		return object_equal((json_t *)a, (json_t *)b);
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!st__json_equal(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
	default:
		return 1; /* true, false, null */
	}
}
