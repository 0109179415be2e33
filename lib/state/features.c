/*
 * A state's features (deployment version 4): which of Pulumi's features the state uses, found
 * by a scan of its resources, and the envelope's version and "features" set from it.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static int uses_bytestring(const json_t *v, int depth);

/* A secret's plaintext is the serialized value (with a no-op encrypter: the "ciphertexts" of
 * secrets inside it are plain JSON too): its bytestrings count, as Pulumi looks at the
 * plaintext. */
static int text_uses_bytestring(const json_t *text, int depth)
{
	json_t *inner = NULL;
	int r;
	if (!json_is_string(text) || !strstr(json_string_value(text), ST_SIG_BYTESTRING))
		return 0;
	if (st_json_parse(&inner, json_string_value(text), json_string_length(text), NULL, NULL,
			  NULL, NULL, NULL) != ST_OK)
		return 1; /* cannot tell: keep it */
	r = uses_bytestring(inner, depth + 1);
	json_decref(inner);
	return r;
}

/* Does a property value hold a bytestring signature? The signature key is looked for among
 * each object's keys (cheaper than hashing it); scalars are not descended into, but for a
 * secret's plaintext. `nop`: inside a plaintext, where a nested secret's ciphertext is JSON. */
static int uses_bytestring_in(const json_t *v, int depth, int nop)
{
	const char *k;
	size_t kl;
	json_t *c;
	size_t i;

	if (depth > ST_DEFAULT_MAX_DEPTH)
		return 0;
	if (json_is_object(v)) {
		/* one pass: the signature among the keys, containers descended into */
		json_object_keylen_foreach((json_t *)v, k, kl, c) {
			if (json_is_string(c)) {
				if (kl == sizeof(ST_SIG_KEY) - 1 && !memcmp(k, ST_SIG_KEY, kl) &&
				    !strcmp(json_string_value(c), ST_SIG_BYTESTRING))
					return 1;
				if ((ST_KEY_IS(k, kl, "plaintext") || (nop && ST_KEY_IS(k, kl, "ciphertext"))) &&
				    text_uses_bytestring(c, depth))
					return 1;
			} else if ((json_is_object(c) || json_is_array(c)) &&
				   uses_bytestring_in(c, depth + 1, nop)) {
				return 1;
			}
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, c)
			if ((json_is_object(c) || json_is_array(c)) &&
			    uses_bytestring_in(c, depth + 1, nop))
				return 1;
	}
	return 0;
}

static int uses_bytestring(const json_t *v, int depth)
{
	/* a plaintext's own values: nested secrets' ciphertexts are JSON */
	return uses_bytestring_in(v, depth, depth > 0);
}

/* The features a resource uses among those in `look` (bits as ST_FEATURE_*), in one pass over
 * its keys. */
static void resource_features(const json_t *r, int used[], unsigned look)
{
	const char *k;
	size_t kl;
	json_t *v;

	for (int f = 0; f < 8; f++)
		if (used[f])
			look &= ~(1u << f);
	if (!look)
		return;

	json_object_keylen_foreach((json_t *)r, k, kl, v) {
		unsigned bit = st__feature_key(k, kl) & ST_FEATURES_ALL;
		if (ST_KEY_IS(k, kl, "inputs") || ST_KEY_IS(k, kl, "outputs") ||
		    ST_KEY_IS(k, kl, "replacementTrigger")) {
			if ((look >> ST_FEATURE_BYTESTRING & 1) && !used[7] &&
			    uses_bytestring_in(v, 0, 0))
				used[7] = 1;
			continue;
		}
		if (!(bit & look) || bit == 1u << ST_FEATURE_BYTESTRING)
			continue; /* not looked for, or a member no feature is marked by */
		/* refreshBeforeUpdate and taint: true; the others: not empty */
		if (bit == 1u << 0 || bit == 1u << 3 ? json_is_true(v) : !st_json_is_empty(v))
			used[__builtin_ctz(bit)] = 1;
	}
}

/* Does a property value hold a ciphertext secret? */
static int value_holds_ciphertext(const json_t *v, int depth)
{
	json_t *c;
	size_t i;
	const char *k;
	if (depth > ST_DEFAULT_MAX_DEPTH)
		return 0;
	if (json_is_object(v)) {
		if (json_is_string(json_object_get(v, "ciphertext")) &&
		    json_is_string(json_object_get(v, ST_SIG_KEY)))
			return 1;
		json_object_foreach((json_t *)v, k, c)
			if ((json_is_object(c) || json_is_array(c)) &&
			    value_holds_ciphertext(c, depth + 1))
				return 1;
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, c)
			if (value_holds_ciphertext(c, depth + 1))
				return 1;
	}
	return 0;
}

static int resource_holds_ciphertext(const json_t *r)
{
	return value_holds_ciphertext(json_object_get(r, "inputs"), 0) ||
	       value_holds_ciphertext(json_object_get(r, "outputs"), 0) ||
	       value_holds_ciphertext(json_object_get(r, "replacementTrigger"), 0);
}

/* A ciphertext among the resources' and pending operations' values (asked only of a state
 * that had byteString and shows no bytestring). */
static int holds_ciphertext(const json_t *dep)
{
	json_t *r;
	size_t i;
	json_array_foreach(json_object_get(dep, "resources"), i, r)
		if (resource_holds_ciphertext(r))
			return 1;
	json_array_foreach(json_object_get(dep, "pending_operations"), i, r)
		if (resource_holds_ciphertext(json_object_get(r, "resource")))
			return 1;
	return 0;
}

void st__state_features_scan(const st_state *s, int used[8],
			     int (*untouched)(const json_t *r, size_t i, void *ctx), void *ctx)
{
	json_t *dep = st_state_deployment(s), *res, *r, *ops, *op;
	size_t i;

	memset(used, 0, 8 * sizeof(int));
	if (s->version < 3)
		return;
	res = dep ? json_object_get(dep, "resources") : NULL;
	json_array_foreach(res, i, r)
		resource_features(r, used, untouched && untouched(r, i, ctx) ?
						   ~s->known_absent & ST_FEATURES_ALL
						   : ST_FEATURES_ALL);
	/* a pending operation's resource only needs byteString (SerializeOperation) */
	ops = dep ? json_object_get(dep, "pending_operations") : NULL;
	json_array_foreach(ops, i, op)
		resource_features(json_object_get(op, "resource"), used,
				  1u << ST_FEATURE_BYTESTRING);
	if (dep && !st_json_is_empty(json_object_get(dep, "snippets")))
		used[5] = 1;
	if (!used[ST_FEATURE_BYTESTRING] && s->had_bytestring && holds_ciphertext(dep))
		used[ST_FEATURE_BYTESTRING] = 1;
}

int st__state_features_set(st_state *s, const int used[8])
{
	json_t *arr;
	int n = 0;
	/* Pulumi writes features sorted. */
	static const int sorted_idx[] = {7, 6, 2, 0, 4, 5, 3, 1};

	if (s->version < 3)
		return 0;
	/* the scan looked for each feature wherever it could be */
	s->known_absent = 0;
	for (int k = 0; k < 8; k++)
		if (!used[k])
			s->known_absent |= 1u << k;
	arr = json_array();
	for (int k = 0; k < 8; k++) {
		if (used[sorted_idx[k]]) {
			json_array_append_new(arr, json_string(st_known_features[sorted_idx[k]]));
			n++;
		}
	}
	if (n) {
		s->version = 4;
		json_object_set_new(s->root, "version", json_real(4));
		st_obj_set_ordered(s->root, ST_K_ENVELOPE, "features", arr);
	} else {
		json_decref(arr);
		s->version = 3;
		json_object_set_new(s->root, "version", json_real(3));
		json_object_del(s->root, "features");
	}
	return n;
}

static int every(const json_t *r, size_t i, void *ctx)
{
	(void)r;
	(void)i;
	(void)ctx;
	return 1;
}

int st__state_apply_features_known(st_state *s)
{
	int used[8];
	st__state_features_scan(s, used, every, NULL);
	return st__state_features_set(s, used);
}

int st_state_apply_features(st_state *s)
{
	ST_ASSERT_ARG_AS(s, "state");
	int used[8];
	st__state_features_scan(s, used, NULL, NULL);
	return st__state_features_set(s, used);
}

/* ---- the features a state says it needs ---- */

const char *const st_known_features[] = {"refreshBeforeUpdate", "views", "hooks", "taint",
					 "replaceWith", "snippets-prototype",
					 "extensionParameterization", "byteString", NULL};

static int known_feature(const char *f)
{
	for (int i = 0; st_known_features[i]; i++)
		if (!strcmp(st_known_features[i], f))
			return 1;
	return 0;
}

int st__state_check_features(st_state *s, st_error *err)
{
	json_t *features = json_object_get(s->root, "features"), *f;
	size_t i, n = 0;
	st_buf unknown;

	if (s->version < 4 || !json_is_array(features))
		return ST_OK; /* not looked at below version 4; a wrong type was reported */
	st_buf_init(&unknown);
	json_array_foreach(features, i, f) {
		/* null decodes as "" */
		const char *name = json_is_string(f) ? json_string_value(f) : "";
		if (!strcmp(name, "byteString"))
			s->had_bytestring = 1;
		if (known_feature(name))
			continue;
		if (n++)
			st_buf_adds(&unknown, ", ");
		st_buf_adds(&unknown, name);
	}
	if (n) {
		st__err_pointer(err, "/features");
		st__err(err, ST_EFEATURE,
			"this stack's deployment needs support for the following features: %s",
			unknown.data ? unknown.data : "");
	}
	st_buf_free(&unknown);
	return n ? ST_EFEATURE : ST_OK;
}
