/* Clearing pending operations: all of them, or those on given URNs. */
#include "session.h"

#include <string.h>

static int clear(st_edit *e, const char *const *urns, size_t n, size_t *count, st_error *err)
{
	json_t *ops = st__edit_pending(e), *keep = json_array(), *op;
	size_t i;

	if (!keep)
		return st__err(err, ST_ENOMEM, "out of memory");
	json_array_foreach(ops, i, op) {
		const char *u = st_json_str(json_object_get(op, "resource"), "urn");
		int hit = !urns;
		for (size_t k = 0; !hit && k < n; k++)
			hit = u && !strcmp(u, urns[k]);
		if (!hit) {
			if (json_array_append(keep, op) < 0) {
				json_decref(keep);
				return st__err(err, ST_ENOMEM, "out of memory");
			}
			continue;
		}
		(*count)++;
		st__edit_report(e, "removed pending %s operation on %s",
				st_json_str(op, "type") ? st_json_str(op, "type") : "?",
				u ? u : "(no urn)");
	}
	if (!*count) {
		json_decref(keep);
		return ST_OK;
	}
	return st__edit_set_pending(e, keep, err);
}

int st_edit_pending_clear(st_edit *e, const char *const *urns, size_t n, size_t *removed,
			  st_error *err)
{
	st__edit_op op;
	size_t count = 0;
	int rc;

	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(urns || !n);
	if (removed)
		*removed = 0;
	if (!st__edit_pending(e))
		return ST_OK;
	if ((rc = st__edit_op_begin(e, &op, err)) != ST_OK)
		return rc;
	rc = st__edit_op_end(e, &op, clear(e, urns, n, &count, err));
	if (rc == ST_OK && removed)
		*removed = count;
	return rc;
}

/* The operation's resource (stolen) with `custom` true and `id` set, at Pulumi's place for
 * them (after urn, custom); NULL when out of memory. */
static json_t *with_id(json_t *r, const char *id)
{
	json_t *o = json_object(), *v;
	const char *k;
	int bad = !o, put = 0;

	json_object_foreach(r, k, v) {
		if (bad || !strcmp(k, "id") || !strcmp(k, "custom"))
			continue;
		bad |= json_object_set(o, k, v) < 0;
		if (!put && !strcmp(k, "urn")) {
			bad |= json_object_set_new(o, "custom", json_true()) < 0 ||
			       json_object_set_new(o, "id", json_string(id)) < 0;
			put = 1;
		}
	}
	if (!bad && !put)
		bad = json_object_set_new(o, "custom", json_true()) < 0 ||
		      json_object_set_new(o, "id", json_string(id)) < 0;
	json_decref(r);
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* A pending `creating` operation on `urn` becomes a resource with the given ID: what
 * `pulumi refresh --import-pending-creates URN ID` asks for (Pulumi marks the operation
 * `importing` with the ID, and its refresh then reads the resource into the state). */
static int import_one(st_edit *e, const char *urn, const char *id, st_error *err)
{
	json_t *ops = st__edit_pending(e), *keep, *op, *r = NULL, *res = st__edit_resources(e), *x;
	size_t i;
	int oom = 0;

	if (!(keep = json_array()))
		return st__err(err, ST_ENOMEM, "out of memory");
	json_array_foreach(ops, i, op) {
		const char *u = st_json_str(json_object_get(op, "resource"), "urn");
		const char *t = st_json_str(op, "type");
		if (!r && u && t && !strcmp(u, urn) && !strcmp(t, "creating") &&
		    json_is_object(json_object_get(op, "resource"))) {
			if (!(r = json_deep_copy(json_object_get(op, "resource"))))
				oom = 1;
		} else if (json_array_append(keep, op) < 0) {
			oom = 1;
		}
	}
	if (oom || !r) {
		json_decref(keep);
		json_decref(r);
		return oom ? st__err(err, ST_ENOMEM, "out of memory")
			   : st__err(err, ST_ENOTFOUND,
				     "\"%s\" did not correspond to a pending create", urn);
	}
	json_array_foreach(res, i, x) {
		const char *u = st_json_str(x, "urn");
		if (u && !strcmp(u, urn) && !json_is_true(json_object_get(x, "delete"))) {
			json_decref(keep);
			json_decref(r);
			return st__err(err, ST_ECONFLICT,
				       "resource '%s' is in the state already: its pending create "
				       "cannot become a second one (clear it instead)",
				       urn);
		}
	}
	if (!(r = with_id(r, id))) {
		json_decref(keep);
		json_decref(r);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	int rc = st__edit_set_pending(e, keep, err);
	if (rc == ST_OK)
		rc = st__edit_insert(e, (size_t)-1, r, NULL, err);
	else
		json_decref(r);
	if (rc == ST_OK)
		st__edit_report(e, "imported pending create of %s as ID '%s'", urn, id);
	return rc;
}

int st_edit_pending_import(st_edit *e, const char *const *urns, const char *const *ids, size_t n,
			   st_error *err)
{
	ST_ASSERT_ARG(urns);
	ST_ASSERT_ARG(ids || !n);
	st__edit_op op;
	int rc;

	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG((urns && ids) || !n);
	for (size_t i = 0; i < n; i++)
		if (!ids[i] || !*ids[i] || !urns[i])
			return st__err(err, ST_EINVAL, "pending create '%s': an empty ID",
				       urns[i] ? urns[i] : "");
	if ((rc = st__edit_op_begin(e, &op, err)) != ST_OK)
		return rc;
	rc = ST_OK;
	for (size_t i = 0; i < n && rc == ST_OK; i++)
		rc = import_one(e, urns[i], ids[i], err);
	return st__edit_op_end(e, &op, rc);
}
