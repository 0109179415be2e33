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
