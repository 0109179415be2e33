/* Repointing resources from one provider to another of the same package (`pulumi state
 * replace-provider`). */
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The package of a provider reference ("aws" of pulumi:providers:aws), into buf. */
static const char *provider_package(const char *ref, char *buf, size_t size)
{
	st_urn u;
	char *urn = NULL, *id = NULL;
	const char *pkg = NULL;
	if (st_provider_ref_parse(ref, &urn, &id, NULL) == ST_OK && st_urn_parse(urn, &u) == ST_OK) {
		snprintf(buf, size, "%.*s", (int)u.type_len, u.type);
		pkg = buf + strlen("pulumi:providers:");
	}
	free(urn);
	free(id);
	return pkg;
}

/* Is `to` the reference of a live provider of the state? */
static int defined(json_t *res, const char *to)
{
	size_t i;
	json_t *r;
	int found = 0;
	json_array_foreach(res, i, r) {
		char *ref = st__provider_ref_of(r);
		if (ref && !strcmp(ref, to) && !st_json_bool(r, "delete"))
			found = 1;
		free(ref);
	}
	return found;
}

static int replace(st_edit *e, const char *from, const char *to, size_t *count, st_error *err)
{
	json_t *res = st__edit_resources(e), *r;
	char b1[256], b2[256];
	const char *p1, *p2;
	size_t i;

	if (!defined(res, to))
		return st__err(err, ST_ENOTFOUND,
			       "no provider with reference %s in the state (a reference is "
			       "PROVIDER_URN::ID)",
			       to);
	p1 = provider_package(from, b1, sizeof(b1));
	p2 = provider_package(to, b2, sizeof(b2));
	if (p1 && p2 && strcmp(p1, p2))
		return st__err(err, ST_EREFUSED,
			       "cannot repoint resources of package '%s' to a provider of package "
			       "'%s'",
			       p1, p2);
	json_array_foreach(res, i, r) {
		const char *p = st_json_str(r, "provider");
		if (!p || strcmp(p, from))
			continue;
		if (!(r = st__edit_own(e, res, i)) ||
		    json_object_set_new(r, "provider", json_string(to)))
			return st__err(err, ST_ENOMEM, "out of memory");
		st__edit_report(e, "%s: provider %s -> %s", st_json_str(r, "urn"), from, to);
		(*count)++;
	}
	return ST_OK;
}

int st_edit_replace_provider(st_edit *e, const char *from, const char *to, size_t *changed,
			     st_error *err)
{
	st__edit_op op;
	size_t count = 0;
	int rc;

	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(from);
	ST_ASSERT_ARG(to);
	if (changed)
		*changed = 0;
	if ((rc = st__edit_op_begin(e, &op, err)) != ST_OK)
		return rc;
	rc = st__edit_op_end(e, &op, replace(e, from, to, &count, err));
	if (rc == ST_OK && changed)
		*changed = count;
	return rc;
}
