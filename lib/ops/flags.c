/* Setting and clearing resource flags (`protect`, `taint`), as `pulumi state protect`/`taint`
 * do; resources marked delete: true are never touched. */
#include "session.h"

#include <string.h>

static int set_flag(st_edit *e, const st_handle *targets, size_t n, const char *flag, int on,
		    size_t *count, st_error *err)
{
	json_t *res = st__edit_resources(e);
	for (size_t t = 0; t < n; t++) {
		size_t i = st__edit_index_of(e, targets[t]);
		json_t *r = json_array_get(res, i);
		if (i == (size_t)-1)
			return st__err(err, ST_ENOTFOUND, "no such resource in the session (deleted "
				       "by an earlier operation?)");
		if (st_json_bool(r, "delete") || st_json_bool(r, flag) == on)
			continue;
		if (!(r = st__edit_own(e, res, i)) ||
		    (on ? st_obj_set_ordered(r, ST_K_RESOURCE, flag, json_true())
			: json_object_del(r, flag)) < 0)
			return st__err(err, ST_ENOMEM, "out of memory");
		(*count)++;
		st__edit_report(e, "%s %s",
				on ? (flag[0] == 'p' ? "protected" : "tainted")
				   : (flag[0] == 'p' ? "unprotected" : "untainted"),
				st_json_str(r, "urn"));
	}
	return ST_OK;
}

int st_edit_set_flag(st_edit *e, const st_handle *targets, size_t n, const char *flag, int on,
		     size_t *changed, st_error *err)
{
	st__edit_op op;
	size_t count = 0;
	int rc;

	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(flag);
	ST_ASSERT_ARG(targets || !n);
	if (changed)
		*changed = 0;
	if (strcmp(flag, "protect") && strcmp(flag, "taint"))
		return st__err(err, ST_EINVAL, "unknown flag '%s'", flag);
	if ((rc = st__edit_op_begin(e, &op, err)) != ST_OK)
		return rc;
	rc = st__edit_op_end(e, &op, set_flag(e, targets, n, flag, on, &count, err));
	if (rc == ST_OK && changed)
		*changed = count;
	return rc;
}
