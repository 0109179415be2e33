/*
 * Renaming a resource with Pulumi's `state rename` semantics: its URN changes and every
 * reference to it (and to its provider reference, when it is a provider) is rewritten,
 * pending operations included.
 */
#include "session.h"

#include <stdlib.h>
#include <string.h>

typedef struct ren {
	st_edit *e;
	json_t *res;
	size_t n, target;
	char *old, *nu, *oldref, *newref;
	st_strmap map, provmap; /* old -> new (slot p) */
	st_prefilter *f;        /* map's and provmap's */
	size_t *hits, nhits, copies;
} ren;

/* The new URN and reference, and the maps from the old ones. */
static int plan(ren *c, const char *new_name, st_error *err)
{
	json_t *r = json_array_get(c->res, c->target);
	const char *old = st_json_str(r, "urn"), *type = st_json_str(r, "type");
	st_urn pu;
	st_strmap_slot *sl;
	int created;

	if (!new_name || !*new_name)
		return st__err(err, ST_EINVAL, "the new name is empty");
	if (!strncmp(new_name, "urn:pulumi:", 11))
		return st__err(err, ST_EINVAL,
			       "'%s' is a URN; give the new name only (the part after the last "
			       "'::'), as `pulumi state rename` takes it",
			       new_name);
	if (!old || st_urn_parse(old, &pu) != ST_OK)
		return st__err(err, ST_EINVAL, "resource %zu has no valid URN to rename", c->target);
	c->nu = st_asprintf("urn:pulumi:%.*s::%.*s::%.*s::%s", (int)pu.stack_len, pu.stack,
			    (int)pu.project_len, pu.project, (int)pu.qtype_len, pu.qtype, new_name);
	c->old = st_strdup(old);
	c->f = calloc(2, sizeof(*c->f));
	c->hits = calloc(c->n + 1, sizeof(*c->hits));
	if (!c->nu || !c->old || !c->f || !c->hits ||
	    !(sl = st_strmap_put_f(&c->map, &c->f[0], c->old, &created)))
		return st__err(err, ST_ENOMEM, "out of memory");
	sl->p = c->nu;
	c->oldref = st__provider_ref_of(r);
	if (!c->oldref && st_type_is_provider(type ? type : ""))
		return st__err(err, ST_ENOMEM, "out of memory");
	if (c->oldref) {
		c->newref = st__provider_ref(c->nu, st_json_str(r, "id"));
		if (!c->newref || !(sl = st_strmap_put_f(&c->provmap, &c->f[1], c->oldref, &created)))
			return st__err(err, ST_ENOMEM, "out of memory");
		sl->p = c->newref;
	}
	return ST_OK;
}

/* One pass that only reads: the new URN taken already? the old one held by copies? which
 * resources refer to the old URN (or provider reference)? */
static int scan(ren *c, st_error *err)
{
	st__refscan sc;
	char *marks = calloc(c->n + 1, 1);
	if (!marks)
		return st__err(err, ST_ENOMEM, "out of memory");
	memset(&sc, 0, sizeof(sc));
	sc.res = c->res;
	sc.urns = &c->map;
	sc.uf = &c->f[0];
	sc.refs = c->oldref ? &c->provmap : NULL;
	sc.rf = &c->f[1];
	sc.hit = marks;
	sc.nu = c->nu;
	sc.nul = strlen(c->nu);
	sc.old = c->old;
	sc.oldl = strlen(c->old);
	st__refscan_run(&sc);
	for (size_t i = 0; i < c->n; i++)
		if (marks[i])
			c->hits[c->nhits++] = i;
	free(marks);
	c->copies = sc.copies;
	/* Pulumi: the lookup and ambiguity checks, then "if oldURN == newURN return nil",
	 * then the clash check (state_rename.go). */
	if (!strcmp(c->old, c->nu) && c->copies <= 1)
		return ST_OK;
	if (sc.conflict && strcmp(c->old, c->nu))
		return st__err(err, ST_ECONFLICT,
			       "The chosen new urn for the state corresponds to an already "
			       "existing resource: %s",
			       c->nu);
	if (c->copies > 1)
		return st__err(err, ST_EAMBIGUOUS,
			       "The input URN ambiguously refers to multiple resources: %zu resources "
			       "share %s (copies marked delete: true); rename after the next update",
			       c->copies, c->old);
	return ST_OK;
}

/* The resource itself, then every resource that refers to it. */
static int rewrite_resources(ren *c, st_error *err)
{
	json_t *r = st__edit_own(c->e, c->res, c->target);
	if (!r || json_object_set_new(r, "urn", json_string(c->nu)))
		return st__err(err, ST_ENOMEM, "out of memory");
	st__edit_report(c->e, "renamed %s to %s", c->old, c->nu);
	for (size_t h = 0; h < c->nhits; h++) {
		size_t k = 0;
		r = st__edit_own(c->e, c->res, c->hits[h]);
		if (!r || st__ref_rewrite(r, &c->map, c->oldref ? &c->provmap : NULL, &k) != ST_OK)
			return st__err(err, ST_ENOMEM, "out of memory");
		st__edit_report(c->e, "%s: rewrote %zu reference%s", st_json_str(r, "urn"), k,
				k == 1 ? "" : "s");
	}
	return ST_OK;
}

/* Pending operations on the resource or referring to it. */
static int rewrite_pending(ren *c, st_error *err)
{
	json_t *ops = st__edit_pending(c->e), *op;
	size_t i;
	json_array_foreach(ops, i, op) {
		json_t *rr = json_object_get(op, "resource");
		const char *u = st_json_str(rr, "urn");
		int self = u && !strcmp(u, c->old);
		if (!self && !st__refers(rr, &c->map, &c->f[0], c->oldref ? &c->provmap : NULL,
					 &c->f[1]))
			continue;
		if (!(op = st__edit_own(c->e, ops, i)))
			return st__err(err, ST_ENOMEM, "out of memory");
		rr = json_object_get(op, "resource");
		if ((self && json_object_set_new(rr, "urn", json_string(c->nu))) ||
		    st__ref_rewrite(rr, &c->map, c->oldref ? &c->provmap : NULL, NULL) != ST_OK)
			return st__err(err, ST_ENOMEM, "out of memory");
		st__edit_report(c->e, "pending operation %zu: rewrote references", i);
	}
	return ST_OK;
}

static int rename_(ren *c, const char *new_name, st_error *err)
{
	int rc;
	if ((rc = plan(c, new_name, err)) != ST_OK || (rc = scan(c, err)) != ST_OK)
		return rc;
	if (!strcmp(c->old, c->nu))
		return ST_OK; /* the name it has: no change, as in Pulumi */
	if ((rc = rewrite_resources(c, err)) != ST_OK || (rc = rewrite_pending(c, err)) != ST_OK)
		return rc;
	st__phase("rename: references found and rewritten");
	return ST_OK;
}

int st_edit_rename(st_edit *e, st_handle target, const char *new_name, st_error *err)
{
	ren c;
	st__edit_op op;
	int rc;

	ST_ASSERT_ARG(e);
	memset(&c, 0, sizeof(c));
	c.e = e;
	c.res = st__edit_resources(e);
	c.n = json_array_size(c.res);
	if ((c.target = st__edit_index_of(e, target)) == (size_t)-1)
		return st__err(err, ST_ENOTFOUND, "no such resource in the session (deleted by an "
			       "earlier operation?)");
	st_strmap_init(&c.map);
	st_strmap_init(&c.provmap);
	if ((rc = st__edit_op_begin(e, &op, err)) == ST_OK)
		rc = st__edit_op_end(e, &op, rename_(&c, new_name, err));
	st_strmap_free(&c.map);
	st_strmap_free(&c.provmap);
	free(c.f);
	free(c.hits);
	free(c.old);
	free(c.nu);
	free(c.oldref);
	free(c.newref);
	return rc;
}
