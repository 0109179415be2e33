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
