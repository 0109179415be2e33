/*
 * Pulumi's references between resources, in one place: the fields that hold them (parent,
 * dependencies, propertyDependencies, deletedWith, replaceWith, provider), the order they are
 * walked in, and the provider reference format (URN::ID). Every module that reads, rewrites
 * or removes references goes through st__ref_foreach: when Pulumi adds a reference field, the
 * table below is the one place that changes (and tests/test_refs.c, which enumerates it).
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* The reference fields, in the order every walk visits them (the order of Pulumi's
 * DependencyGraph and of its integrity check, bar the provider, which the check looks at
 * first and asks for on its own). `list`: an array of URNs; `map`: an object of arrays. */
typedef struct ref_field {
	st_ref_kind kind;
	const char *name;
	size_t len;
	enum { ONE, LIST, MAP } shape;
} ref_field;

#define F(kind, name, shape) {kind, name, sizeof(name) - 1, shape}
static const ref_field fields[] = {
	F(ST_REF_PARENT, "parent", ONE),
	F(ST_REF_DEPENDENCY, "dependencies", LIST),
	F(ST_REF_PROPERTY_DEPENDENCY, "propertyDependencies", MAP),
	F(ST_REF_DELETED_WITH, "deletedWith", ONE),
	F(ST_REF_REPLACE_WITH, "replaceWith", LIST),
	F(ST_REF_PROVIDER, "provider", ONE),
};
#undef F
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

const char *st__ref_field_name(st_ref_kind kind)
{
	for (size_t f = 0; f < NFIELDS; f++)
		if (fields[f].kind == kind)
			return fields[f].name;
	return NULL;
}

/* The fields of r that hold references, found in one pass over r's members (a resource has
 * a dozen; looking each field up by hash would cost more). */
static void find_fields(const json_t *r, json_t *found[NFIELDS])
{
	const char *k;
	size_t kl;
	json_t *m;
	memset(found, 0, NFIELDS * sizeof(*found));
	json_object_keylen_foreach((json_t *)r, k, kl, m) {
		for (size_t f = 0; f < NFIELDS; f++)
			if (fields[f].len == kl && !memcmp(fields[f].name, k, kl)) {
				found[f] = m;
				break;
			}
	}
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Visits one string; applies what the callback asks. *removed is set on a removal. */
static int visit(st_ref *ref, json_t *v, st_ref_fn fn, void *ctx, int *removed)
{
	int rc;
	*removed = 0;
	if (!json_is_string(v) || !json_string_length(v))
		return ST_REF_NEXT;
	ref->value = json_string_value(v);
	ref->len = json_string_length(v);
	rc = fn(ctx, ref);
	if (rc != ST_REF_REMOVE)
		return rc;
	if (ref->index >= 0)
		rc = json_array_remove(ref->holder_, (size_t)ref->index);
	else
		rc = json_object_del(ref->holder_, ref->field);
	if (rc)
		return ST_ENOMEM;
	*removed = 1;
	return ST_REF_NEXT;
}

/* Visits the strings of one list; an emptied dependencies or replaceWith list is removed
 * (Go omits an empty list). */
static int visit_list(json_t *r, st_ref *ref, json_t *list, int drop_empty, st_ref_fn fn,
		      void *ctx)
{
	size_t i = 0;
	int any = 0, removed, rc;
	ref->holder_ = list;
	while (i < json_array_size(list)) {
		ref->index = (long)i;
		rc = visit(ref, json_array_get(list, i), fn, ctx, &removed);
		if (rc != ST_REF_NEXT)
			return rc;
		any |= removed;
		if (!removed)
			i++;
	}
	if (drop_empty && any && !json_array_size(list) && json_object_del(r, ref->field))
		return ST_ENOMEM;
	return ST_REF_NEXT;
}

/* propertyDependencies: each property's list, properties in the object's order or sorted. */
static int visit_map(json_t *r, st_ref *ref, json_t *map, unsigned flags, st_ref_fn fn,
		     void *ctx)
{
	const char *stack_keys[16], **keys = stack_keys, *k;
	size_t n = json_object_size(map), nk = 0;
	json_t *list;
	int rc = ST_REF_NEXT;

	if (!json_is_object(map) || !n)
		return ST_REF_NEXT;
	if (n > 16 && !(keys = malloc(n * sizeof(*keys))))
		return ST_ENOMEM;
	json_object_foreach(map, k, list)
		keys[nk++] = k;
	if (flags & ST_REF_SORTED)
		qsort(keys, nk, sizeof(*keys), cmp_str);
	for (size_t i = 0; i < nk && rc == ST_REF_NEXT; i++) {
		list = json_object_get(map, keys[i]);
		if (!json_is_array(list))
			continue;
		ref->key = keys[i];
		rc = visit_list(r, ref, list, 0, fn, ctx);
	}
	ref->key = NULL;
	if (keys != stack_keys)
		free(keys);
	return rc;
}

_Static_assert(NFIELDS == ST_REF_NFIELDS, "the table and internal.h agree");

int st__ref_foreach(json_t *r, unsigned what, st_ref_fn fn, void *ctx)
{
	json_t *found[NFIELDS];

	if (!json_is_object(r))
		return 0;
	find_fields(r, found);
	return st__ref_foreach_found(r, found, what, fn, ctx);
}

int st__ref_foreach_found(json_t *r, json_t *const found[ST_REF_NFIELDS], unsigned what,
			  st_ref_fn fn, void *ctx)
{
	int rc = ST_REF_NEXT, removed;

	if (!json_is_object(r))
		return 0;
	for (size_t f = 0; f < NFIELDS && rc == ST_REF_NEXT; f++) {
		st_ref ref;
		if (!found[f] || !(what & fields[f].kind))
			continue;
		memset(&ref, 0, sizeof(ref));
		ref.kind = fields[f].kind;
		ref.field = fields[f].name;
		ref.index = -1;
		ref.resource_ = r;
		if (fields[f].shape == ONE) {
			ref.holder_ = r;
			rc = visit(&ref, found[f], fn, ctx, &removed);
		} else if (fields[f].shape == LIST) {
			if (json_is_array(found[f]))
				rc = visit_list(r, &ref, found[f], 1, fn, ctx);
		} else {
			rc = visit_map(r, &ref, found[f], what, fn, ctx);
		}
	}
	return rc < 0 ? rc : rc == ST_REF_STOP;
}

int st__ref_set(st_ref *ref, const char *value)
{
	json_t *v = json_string(value);
	int rc;
	if (!v)
		return ST_ENOMEM;
	rc = ref->index >= 0 ? json_array_set_new(ref->holder_, (size_t)ref->index, v)
			     : json_object_set_new(ref->holder_, ref->field, v);
	if (rc)
		return ST_ENOMEM;
	ref->value = json_string_value(v);
	ref->len = json_string_length(v);
	return ST_OK;
}

json_t *st__ref_copy(json_t *r)
{
	json_t *c = json_copy(r), *found[NFIELDS];
	const char *k;
	json_t *list, *map;
	if (!c)
		return NULL;
	find_fields(c, found);
	for (size_t f = 0; f < NFIELDS; f++) {
		if (fields[f].shape == LIST && json_is_array(found[f])) {
			if (json_object_set_new(c, fields[f].name, json_copy(found[f])))
				goto fail;
		} else if (fields[f].shape == MAP && json_is_object(found[f])) {
			if (!(map = json_copy(found[f])) ||
			    json_object_set_new(c, fields[f].name, map))
				goto fail;
			json_object_foreach(found[f], k, list)
				if (json_is_array(list) && json_object_set_new(map, k, json_copy(list)))
					goto fail;
		}
	}
	return c;
fail:
	json_decref(c);
	return NULL;
}

/* ---- which references point into a set ---- */

/* Is (s, n) in m? f, when given, is m's prefilter: most strings that are not in a small map
 * are told by it without being hashed. */
static int in_set(const st_strmap *m, const st_prefilter *f, const char *s, size_t n)
{
	return m && (!f || st_prefilter_maybe(f, s, n)) && st_strmap_getn(m, s, n) != NULL;
}

typedef struct refers_ctx {
	const st_strmap *urns, *refs;
	const st_prefilter *uf, *rf;
} refers_ctx;

static int refers_cb(void *p, st_ref *ref)
{
	refers_ctx *c = p;
	if (ref->kind == ST_REF_PROVIDER)
		return in_set(c->refs, c->rf, ref->value, ref->len) ? ST_REF_STOP : ST_REF_NEXT;
	return in_set(c->urns, c->uf, ref->value, ref->len) ? ST_REF_STOP : ST_REF_NEXT;
}

int st__refers(const json_t *r, const st_strmap *urns, const st_prefilter *uf,
	       const st_strmap *refs, const st_prefilter *rf)
{
	refers_ctx c = {urns, refs, uf, rf};
	unsigned what = ST_REF_URNS | (refs ? ST_REF_PROVIDER : 0);
	return st__ref_foreach((json_t *)r, what, refers_cb, &c) == 1;
}

/* ---- provider references ---- */

char *st__provider_ref(const char *urn, const char *id)
{
	return st_asprintf("%s::%s", urn ? urn : "", id && *id ? id : ST_UNKNOWN_ID);
}

char *st__provider_ref_of(const json_t *r)
{
	const char *urn = st_json_str(r, "urn"), *type = st_json_str(r, "type");
	if (!urn || !type || !st_type_is_provider(type))
		return NULL;
	return st__provider_ref(urn, st_json_str(r, "id"));
}

size_t st__provider_ref_urn_len(const char *ref, size_t len)
{
	for (size_t i = len; i-- > 1;)
		if (ref[i] == ':' && ref[i - 1] == ':')
			return i - 1;
	return 0;
}

/* ---- rewriting through maps ---- */

typedef struct rewrite_ctx {
	const st_strmap *urns, *refs;
	size_t count;
} rewrite_ctx;

static int rewrite_cb(void *p, st_ref *ref)
{
	rewrite_ctx *c = p;
	const st_strmap *m = ref->kind == ST_REF_PROVIDER ? c->refs : c->urns;
	st_strmap_slot *sl = m ? st_strmap_getn(m, ref->value, ref->len) : NULL;
	if (!sl)
		return ST_REF_NEXT;
	c->count++;
	return st__ref_set(ref, (const char *)sl->p);
}

int st__ref_rewrite(json_t *r, const st_strmap *urns, const st_strmap *refs, size_t *count)
{
	rewrite_ctx c = {urns, refs, 0};
	int rc = st__ref_foreach(r, ST_REF_URNS | (refs ? ST_REF_PROVIDER : 0), rewrite_cb, &c);
	if (count)
		*count += c.count;
	return rc < 0 ? rc : ST_OK;
}
