/*
 * A key given more than once, as Go's encoding/json decodes it into Pulumi's types: each later
 * value is decoded INTO the value the earlier ones left (golang/go#24415), so that
 *  - a struct (or a pointer to one) merges: the earlier fields the later value does not name
 *    survive, and the fields it names are decoded into theirs in turn;
 *  - a map keeps its earlier keys; a key the later value names gets that value whole (Go
 *    zeroes a map element before decoding into it);
 *  - a slice takes the later array's length, but each element is decoded into the element
 *    the slice's storage held at that index, even past a shorter array in between (#21092):
 *    structs merge element by element; an empty array or null starts afresh;
 *  - null sets a pointer, map, slice, interface{} or raw value to nil and leaves any other
 *    (a struct, a string, a bool, a number, time.Time) as it was;
 *  - a value of the wrong JSON type is skipped (Go reports the type error and keeps what
 *    was there); anything else (interface{}, raw JSON, strings...) is replaced.
 * Established with fixtures/dupkey (tests/go/dupkey, Go 1.19). One simplification: the
 * storage a slice keeps past its length is followed only for the slice that is itself given
 * more than once, not for slices inside its merged elements.
 */
#include "state/gotypes.h"

#include <string.h>

static int nullable(const gtype *t, int ptr)
{
	if (ptr)
		return 1;
	switch (t->k) {
	case GK_ANY:
	case GK_RAW:
	case GK_MAP:
	case GK_SLICE:
	case GK_BYTES:
	case GK_CONFIG:
	case GK_PATH:
	case GK_TIMEPTR:
	case GK_SEMVERPTR:
		return 1;
	default:
		return 0;
	}
}

/* Can Go store this JSON value (not null) in a value of type t? */
static int kind_ok(const gtype *t, const json_t *v)
{
	switch (t->k) {
	case GK_STRUCT:
	case GK_MAP:
	case GK_CONFIG: return json_is_object(v);
	case GK_SLICE: return json_is_array(v);
	case GK_BYTES: return json_is_array(v) || json_is_string(v);
	case GK_STRING: return json_is_string(v);
	case GK_BOOL: return json_is_boolean(v);
	case GK_INT:
	case GK_FLOAT:
	case GK_UINT8: return json_is_number(v);
	default: return 1;
	}
}

static const gfield *field_of(const gtype *t, const char *k, size_t kl)
{
	for (size_t i = 0; i < t->nfields; i++)
		if (ST_KEY_IS2(k, kl, t->fields[i].name))
			return &t->fields[i];
	for (size_t i = 0; i < t->nfields; i++)
		if (st__go_key_is(k, kl, t->fields[i].name))
			return &t->fields[i];
	return NULL;
}

/* The member of obj that names field f (its own name first), or NULL. */
static json_t *member_of(json_t *obj, const gfield *f, const char **key, size_t *kl)
{
	json_t *v = json_object_get(obj, f->name);
	if (v) {
		*key = f->name;
		*kl = f->len;
		return v;
	}
	for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it)) {
		if (st__go_key_is(json_object_iter_key(it), json_object_iter_key_len(it), f->name)) {
			*key = json_object_iter_key(it);
			*kl = json_object_iter_key_len(it);
			return json_object_iter_value(it);
		}
	}
	return NULL;
}

static json_t *merge(json_t *old, json_t *nw, const gtype *t, int ptr, int *merged);

/* Decodes struct object `nw` into `old` (changed in place). ST_OK or ST_ENOMEM. */
static int merge_struct(json_t *old, json_t *nw, const gtype *t, int *merged)
{
	for (void *it = json_object_iter(nw); it; it = json_object_iter_next(nw, it)) {
		const char *k = json_object_iter_key(it), *ok;
		size_t kl = json_object_iter_key_len(it), okl;
		json_t *v = json_object_iter_value(it), *ov, *r;
		const gfield *f = field_of(t, k, kl);
		if (!f || !(ov = member_of(old, f, &ok, &okl))) {
			/* a member no field names (kept, as statetool keeps them), or a new field */
			if (json_object_setn(old, k, kl, v) < 0)
				return ST_ENOMEM;
			continue;
		}
		if (!(r = merge(ov, v, f->t, (f->flags & F_PTR) != 0, merged)) ||
		    json_object_setn_new(old, ok, okl, r) < 0)
			return ST_ENOMEM;
	}
	return ST_OK;
}

/* Decodes nonempty array `nw` into the storage `back` (changed in place), element by
 * element. ST_OK or ST_ENOMEM. */
static int merge_elements(json_t *back, json_t *nw, const gtype *t, int *merged)
{
	for (size_t i = 0; i < json_array_size(nw); i++) {
		json_t *v = json_array_get(nw, i), *r;
		if (i >= json_array_size(back)) {
			if (json_array_append(back, v) < 0)
				return ST_ENOMEM;
			continue;
		}
		if (!(r = merge(json_array_get(back, i), v, t->elem, 0, merged)) ||
		    json_array_set_new(back, i, r) < 0)
			return ST_ENOMEM;
	}
	return ST_OK;
}

/* What Go leaves after decoding `nw` into the value `old` left (a new reference; NULL: out of
 * memory). `old` may be changed in place. *merged is set when a value was decoded into an
 * object or array that holds more than the later value. */
static json_t *merge(json_t *old, json_t *nw, const gtype *t, int ptr, int *merged)
{
	if (json_is_null(nw))
		return json_incref(nullable(t, ptr) || json_is_null(old) ? nw : old);
	if (!kind_ok(t, nw))
		return json_incref(old); /* skipped, with Go's type error */
	if (json_is_null(old) || !kind_ok(t, old))
		return json_incref(nw);
	switch (t->k) {
	case GK_STRUCT:
		*merged = 1;
		return merge_struct(old, nw, t, merged) ? NULL : json_incref(old);
	case GK_MAP:
		*merged = 1;
		return st__json_update(old, nw) < 0 ? NULL : json_incref(old);
	case GK_SLICE:
		if (t->elem->k != GK_STRUCT || !json_array_size(nw))
			return json_incref(nw);
		if (json_array_size(old) > json_array_size(nw)) {
			/* the slice is cut to the later length (what lies past it is not followed) */
			json_t *cut = json_array();
			for (size_t i = 0; cut && i < json_array_size(nw); i++)
				if (json_array_append(cut, json_array_get(old, i)) < 0) {
					json_decref(cut);
					cut = NULL;
				}
			if (!cut)
				return NULL;
			old = cut;
		} else {
			json_incref(old);
		}
		*merged = 1;
		if (merge_elements(old, nw, t, merged)) {
			json_decref(old);
			return NULL;
		}
		return old;
	default:
		return json_incref(nw);
	}
}

/* A slice given several times: its storage followed across them. */
static json_t *fold_slice(json_t *const *vals, size_t n, const gtype *t, int *merged)
{
	json_t *back = NULL, *last = NULL, *out;
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *v = vals[i];
		if (!json_is_null(v) && !json_is_array(v))
			continue; /* skipped, with Go's type error */
		last = v;
		if (json_is_null(v) || !json_array_size(v)) {
			json_decref(back); /* nil, or a new empty slice */
			back = NULL;
			continue;
		}
		len = json_array_size(v);
		if (!back) {
			back = json_incref(v);
			continue;
		}
		*merged = 1;
		if (merge_elements(back, v, t, merged)) {
			json_decref(back);
			return NULL;
		}
	}
	if (!last) {
		json_decref(back);
		return json_incref(vals[0]);
	}
	if (!back)
		return json_incref(last);
	if (len == json_array_size(back))
		return back;
	out = json_array();
	for (size_t i = 0; out && i < len; i++)
		if (json_array_append(out, json_array_get(back, i)) < 0) {
			json_decref(out);
			out = NULL;
		}
	json_decref(back);
	return out;
}

json_t *st__go_fold(json_t *const *vals, size_t n, const gtype *t, int ptr, st__dup_how *how)
{
	int merged = 0;
	json_t *acc;
	if (t->k == GK_SLICE && t->elem->k == GK_STRUCT && !ptr) {
		acc = fold_slice(vals, n, t, &merged);
	} else {
		acc = json_incref(vals[0]);
		for (size_t i = 1; acc && i < n; i++) {
			json_t *r = merge(acc, vals[i], t, ptr, &merged);
			json_decref(acc);
			acc = r;
		}
	}
	*how = merged ? ST__DUP_MERGED : acc == vals[n - 1] ? ST__DUP_LAST : ST__DUP_EARLIER;
	return acc;
}
