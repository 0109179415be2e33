/*
 * Renaming a resource with Pulumi's `state rename` semantics: its URN changes and every
 * reference to it (and to its provider reference, when it is a provider) is rewritten,
 * pending operations included. Each child's URN is rebuilt from its parent's new one as
 * Pulumi rebuilds it (a canonical child's comes out the same), and so on down.
 */
#include "session.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct ren {
	st_edit *e;
	json_t *res;
	size_t n, target;
	char *old, *nu, *oldref, *newref;
	st_strmap map, provmap; /* old -> new (slot p) */
	st_prefilter *f;        /* map's and provmap's */
	int provs;              /* provmap has entries */
	size_t *hits, nhits, copies;
	int conflict;
	size_t *kids, nkids; /* the children whose URN is rebuilt */
	char **own;          /* the strings the maps hold for them */
	size_t nown;
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
		c->provs = 1;
	}
	return ST_OK;
}

/* A pass that only reads: which resources refer to a URN of the map (or a reference of
 * provmap)? With `own`: is the new URN taken already, is the old one held by copies? */
static int find_hits(ren *c, int own, st_error *err)
{
	st__refscan sc;
	char *marks = calloc(c->n + 1, 1);
	if (!marks)
		return st__err(err, ST_ENOMEM, "out of memory");
	memset(&sc, 0, sizeof(sc));
	sc.res = c->res;
	sc.urns = &c->map;
	sc.uf = &c->f[0];
	sc.refs = c->provs ? &c->provmap : NULL;
	sc.rf = &c->f[1];
	sc.hit = marks;
	if (own) {
		sc.nu = c->nu;
		sc.nul = strlen(c->nu);
		sc.old = c->old;
		sc.oldl = strlen(c->old);
	}
	st__refscan_run(&sc);
	c->nhits = 0;
	for (size_t i = 0; i < c->n; i++)
		if (marks[i])
			c->hits[c->nhits++] = i;
	free(marks);
	if (own) {
		c->copies = sc.copies;
		c->conflict = sc.conflict;
	}
	return ST_OK;
}

static int scan(ren *c, st_error *err)
{
	int rc = find_hits(c, 1, err);
	if (rc != ST_OK)
		return rc;
	/* Pulumi: the lookup and ambiguity checks, then "if oldURN == newURN return nil",
	 * then the clash check (state_rename.go). */
	if (!strcmp(c->old, c->nu) && c->copies <= 1)
		return ST_OK;
	if (c->conflict && strcmp(c->old, c->nu))
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

/* Keeps s (new) for the maps; NULL when s is NULL or out of memory (s freed). */
static char *keep(ren *c, char *s)
{
	if (!s)
		return NULL;
	c->own[c->nown++] = s;
	return s;
}

/* Pulumi's new URN for a child (urn, valid) of a resource now at `parent` (valid):
 * NewURN(child.Stack(), child.Project(), parent.QualifiedType(), child.Type(), child.Name())
 * (state_rename.go), NewURN leaving out an empty or root stack parent type. New, NULL when out
 * of memory. */
static char *child_urn(const char *urn, const char *parent)
{
	st_urn cu, pu;
	size_t rl = strlen(ST_ROOT_STACK_TYPE);
	int bare;
	if (st_urn_parse(urn, &cu) != ST_OK || st_urn_parse(parent, &pu) != ST_OK)
		return NULL;
	bare = !pu.qtype_len || (pu.qtype_len == rl && !memcmp(pu.qtype, ST_ROOT_STACK_TYPE, rl));
	return st_asprintf("urn:pulumi:%.*s::%.*s::%.*s%s%.*s::%s", (int)cu.stack_len, cu.stack,
			   (int)cu.project_len, cu.project, bare ? 0 : (int)pu.qtype_len, pu.qtype,
			   bare ? "" : "$", (int)cu.type_len, cu.type, cu.name);
}

/* The child at index i of a resource renamed to pnew: Pulumi's checks for it
 * (its URN held by copies; its new URN taken), then, when its URN changes, the maps. Pulumi
 * wraps the child's error as "failed to update <child> with new parent <new parent>: ". */
static int child(ren *c, st_strmap *all, size_t i, const char *pnew, st_strmap *next,
		 st_error *err)
{
	json_t *r = json_array_get(c->res, i);
	const char *u = st_json_str(r, "urn"), *type = st_json_str(r, "type");
	st_strmap_slot *sl;
	char *nu, *old;
	int created;

	if (!u || !st_urn_valid(u))
		return st__err(err, ST_EINVAL,
			       "failed to update %s with new parent %s: the child's URN is not a "
			       "valid URN (Pulumi's `state rename` fails on it too)",
			       u ? u : "(no URN)", pnew);
	if ((sl = st_strmap_get(all, u)) && sl->a > 1)
		return st__err(err, ST_EAMBIGUOUS,
			       "failed to update %s with new parent %s: The input URN ambiguously "
			       "refers to multiple resources: %zu resources share it (copies marked "
			       "delete: true); rename after the next update",
			       u, pnew, sl->a);
	if (!(nu = child_urn(u, pnew)))
		return st__err(err, ST_ENOMEM, "out of memory");
	if (!strcmp(nu, u)) {
		free(nu);
		return ST_OK; /* canonical: Pulumi stops here, its children keep theirs */
	}
	if ((sl = st_strmap_get(all, nu)) && sl->a) {
		st__err(err, ST_ECONFLICT,
			"failed to update %s with new parent %s: The chosen new urn for the state "
			"corresponds to an already existing resource: %s",
			u, pnew, nu);
		free(nu);
		return ST_ECONFLICT;
	}
	keep(c, nu);
	st_strmap_get(all, u)->a = 0; /* gone from the state, as in Pulumi's sequence */
	if (!(old = keep(c, st_strdup(u))) ||
	    !(sl = st_strmap_put_f(&c->map, &c->f[0], old, &created)))
		return st__err(err, ST_ENOMEM, "out of memory");
	sl->p = nu;
	/* taken from now on: a later child rebuilt to it clashes, as in Pulumi's sequence */
	if (!(sl = st_strmap_put(all, nu, &created)))
		return st__err(err, ST_ENOMEM, "out of memory");
	sl->a = 1;
	if (!(sl = st_strmap_put(next, old, &created)))
		return st__err(err, ST_ENOMEM, "out of memory");
	sl->p = nu;
	c->kids[c->nkids++] = i;
	if (type && st_type_is_provider(type)) {
		char *oref = keep(c, st__provider_ref_of(r)), *nref;
		nref = oref ? keep(c, st__provider_ref(nu, st_json_str(r, "id"))) : NULL;
		if (!nref || !(sl = st_strmap_put_f(&c->provmap, &c->f[1], oref, &created)))
			return st__err(err, ST_ENOMEM, "out of memory");
		sl->p = nref;
		c->provs = 1;
	}
	return ST_OK;
}

/* The children of the resources in `level` (old URN -> new), not looked at before. */
static int children_of(ren *c, st_strmap *all, st_strmap *level, char *seen, st_strmap *next,
		       st_error *err)
{
	for (size_t i = 0; i < c->n; i++) {
		const char *p = seen[i] ? NULL : st_json_str(json_array_get(c->res, i), "parent");
		st_strmap_slot *sl = p ? st_strmap_get(level, p) : NULL;
		int rc;
		if (!sl)
			continue;
		seen[i] = 1;
		if ((rc = child(c, all, i, sl->p, next, err)) != ST_OK)
			return rc;
	}
	return ST_OK;
}

/* Pulumi renames each child of the renamed resource (NewURN from the parent's new qualified
 * type), and the children of each child whose URN changed, and so on (stateReurnOperation
 * recurses). Only looked for when a resource names the target as its parent. */
static int children(ren *c, st_error *err)
{
	st_strmap all, level, next;
	char *seen = NULL;
	int rc = ST_OK, created, any = 0;

	for (size_t h = 0; h < c->nhits && !any; h++) {
		const char *p = st_json_str(json_array_get(c->res, c->hits[h]), "parent");
		any = p && !strcmp(p, c->old) && c->hits[h] != c->target;
	}
	if (!any)
		return ST_OK;
	st_strmap_init(&all);
	st_strmap_init(&level);
	st_strmap_init(&next);
	seen = calloc(c->n + 1, 1);
	c->kids = calloc(c->n + 1, sizeof(*c->kids));
	c->own = calloc(4 * c->n + 1, sizeof(*c->own));
	if (!seen || !c->kids || !c->own)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	for (size_t i = 0; rc == ST_OK && i < c->n; i++) {
		const char *u = st_json_str(json_array_get(c->res, i), "urn");
		st_strmap_slot *sl = u ? st_strmap_put(&all, u, &created) : NULL;
		if (u && !sl)
			rc = st__err(err, ST_ENOMEM, "out of memory");
		else if (sl)
			sl->a++;
	}
	/* the target's URNs: the new one taken, the old one gone */
	st_strmap_slot *sl = rc == ST_OK ? st_strmap_put(&all, c->nu, &created) : NULL;
	if (sl)
		sl->a = 1;
	if (sl && (sl = st_strmap_get(&all, c->old)))
		sl->a = 0;
	sl = sl ? st_strmap_put(&level, c->old, &created) : NULL;
	if (rc == ST_OK && !sl)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	if (sl)
		sl->p = c->nu;
	if (seen)
		seen[c->target] = 1;
	while (rc == ST_OK && level.count) {
		rc = children_of(c, &all, &level, seen, &next, err);
		st_strmap_free(&level);
		level = next;
		st_strmap_init(&next);
	}
	st_strmap_free(&all);
	st_strmap_free(&level);
	st_strmap_free(&next);
	free(seen);
	/* the references to the children's old URNs too */
	if (rc == ST_OK && c->nkids)
		rc = find_hits(c, 0, err);
	return rc;
}

/* The resource itself, then every resource that refers to it. */
static int rewrite_resources(ren *c, st_error *err)
{
	json_t *r = st__edit_own(c->e, c->res, c->target);
	if (!r || json_object_set_new(r, "urn", json_string(c->nu)))
		return st__err(err, ST_ENOMEM, "out of memory");
	st__edit_report(c->e, "renamed %s to %s", c->old, c->nu);
	for (size_t k = 0; k < c->nkids; k++) {
		const char *u;
		st_strmap_slot *sl;
		r = st__edit_own(c->e, c->res, c->kids[k]);
		u = r ? st_json_str(r, "urn") : NULL;
		sl = u ? st_strmap_get(&c->map, u) : NULL;
		if (!sl)
			return st__err(err, ST_ENOMEM, "out of memory");
		st__edit_report(c->e, "rebuilt child %s as %s (its parent renamed)", u,
				(const char *)sl->p);
		if (json_object_set_new(r, "urn", json_string(sl->p)))
			return st__err(err, ST_ENOMEM, "out of memory");
	}
	for (size_t h = 0; h < c->nhits; h++) {
		size_t k = 0;
		r = st__edit_own(c->e, c->res, c->hits[h]);
		if (!r || st__ref_rewrite(r, &c->map, c->provs ? &c->provmap : NULL, &k) != ST_OK)
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
		st_strmap_slot *self = u ? st_strmap_get(&c->map, u) : NULL;
		const char *to = self ? self->p : NULL;
		if (!self && !st__refers(rr, &c->map, &c->f[0], c->provs ? &c->provmap : NULL,
					 &c->f[1]))
			continue;
		if (!(op = st__edit_own(c->e, ops, i)))
			return st__err(err, ST_ENOMEM, "out of memory");
		rr = json_object_get(op, "resource");
		if ((to && json_object_set_new(rr, "urn", json_string(to))) ||
		    st__ref_rewrite(rr, &c->map, c->provs ? &c->provmap : NULL, NULL) != ST_OK)
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
	if ((rc = children(c, err)) != ST_OK)
		return rc;
	if ((rc = rewrite_resources(c, err)) != ST_OK || (rc = rewrite_pending(c, err)) != ST_OK)
		return rc;
	st__phase("rename: references found and rewritten");
	return ST_OK;
}

int st_edit_rename(st_edit *e, st_handle target, const char *new_name, st_error *err)
{
	ST_ASSERT_ARG(new_name);
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
	free(c.kids);
	for (size_t i = 0; i < c.nown; i++)
		free(c.own[i]);
	free(c.own);
	free(c.old);
	free(c.nu);
	free(c.oldref);
	free(c.newref);
	return rc;
}
