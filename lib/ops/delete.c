/*
 * Deleting resources with Pulumi's `state delete` semantics (pkg/resource/edit): what depends
 * on a target refuses the delete unless it goes too, and protected resources need --force.
 */
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void free_keys(st_strmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots && m->slots[i].hash)
			free(m->slots[i].p);
	st_strmap_free(m);
}

/* Adds r's provider reference (when it is a provider) to m (the map owns the key). */
static int add_provider_ref(st_strmap *m, st_prefilter *f, const json_t *r)
{
	int created;
	char *pref = st__provider_ref_of(r);
	st_strmap_slot *sl;
	if (!pref)
		return st_type_is_provider(st_json_str(r, "type") ? st_json_str(r, "type") : "")
			       ? ST_ENOMEM : ST_OK;
	sl = st_strmap_put_f(m, f, pref, &created);
	if (sl && created)
		sl->p = pref;
	else
		free(pref);
	return sl ? ST_OK : ST_ENOMEM;
}

/* What one delete works with. */
typedef struct del {
	st_edit *e;
	json_t *res;
	size_t n;
	char *condemned; /* per index: 1 to go (2: counted among its URN's copies) */
	char *dependent; /* per index: goes because it depends on a target */
	size_t ndeps;
	st_strmap copies, dead, deadprov;
	st_prefilter *f; /* dead's and deadprov's */
} del;

/* The targets: known handles, not protected (unless forced). */
static int mark_targets(del *d, const st_handle *targets, size_t n, unsigned flags,
			size_t *first, st_error *err)
{
	for (size_t t = 0; t < n; t++) {
		size_t i = st__edit_index_of(d->e, targets[t]);
		json_t *r;
		if (i == (size_t)-1)
			return st__err(err, ST_ENOTFOUND, "no such resource in the session (deleted "
				       "by an earlier operation?)");
		r = json_array_get(d->res, i);
		if (st_json_bool(r, "protect") && !(flags & ST_DELETE_FORCE))
			return st__err(err, ST_EREFUSED,
				       "%s can't be safely deleted because it is protected. Re-run this "
				       "command with --force to force deletion",
				       st_json_str(r, "urn"));
		if (!t)
			*first = i;
		d->condemned[i] = 1;
	}
	return ST_OK;
}

/* Does any resource other than the condemned refer to a condemned resource's URN or, for a
 * provider, its reference? One pass that only reads: the usual delete (nothing depends on
 * the targets) needs no more. */
static int any_referred(del *d, int *referred)
{
	st_strmap urns, refs;
	st_prefilter *f = calloc(2, sizeof(*f));
	int rc = f ? ST_OK : ST_ENOMEM, created;

	*referred = 0;
	st_strmap_init(&urns);
	st_strmap_init(&refs);
	for (size_t i = 0; i < d->n && rc == ST_OK; i++) {
		json_t *r = json_array_get(d->res, i);
		const char *u = st_json_str(r, "urn");
		if (!d->condemned[i])
			continue;
		if (u && *u && !st_strmap_put_f(&urns, &f[0], u, &created))
			rc = ST_ENOMEM;
		if (rc == ST_OK)
			rc = add_provider_ref(&refs, &f[1], r);
	}
	if (rc == ST_OK) {
		st__refscan sc;
		memset(&sc, 0, sizeof(sc));
		sc.res = d->res;
		sc.skip = d->condemned;
		sc.urns = &urns;
		sc.uf = &f[0];
		sc.refs = &refs;
		sc.rf = &f[1];
		st__refscan_run(&sc);
		*referred = sc.any;
	}
	st_strmap_free(&urns);
	free_keys(&refs);
	free(f);
	return rc;
}

/* How many copies each URN has: a URN is dead once every copy is condemned. */
static int count_copies(del *d)
{
	int created;
	for (size_t i = 0; i < d->n; i++) {
		const char *u = st_json_str(json_array_get(d->res, i), "urn");
		st_strmap_slot *sl;
		if (!u)
			continue;
		if (!(sl = st_strmap_put(&d->copies, u, &created)))
			return ST_ENOMEM;
		sl->a++;
	}
	return ST_OK;
}

/* One condemned resource: once every copy of its URN is condemned the URN is dead (and its
 * provider reference). *changed when something new is known. */
static int note_condemned(del *d, size_t i, int *changed)
{
	json_t *r = json_array_get(d->res, i);
	const char *u = st_json_str(r, "urn");
	st_strmap_slot *c = u ? st_strmap_get(&d->copies, u) : NULL;
	int created;
	if (!c || c->b >= c->a || d->condemned[i] == 2)
		return ST_OK;
	c->b++;
	d->condemned[i] = 2; /* counted */
	*changed = 1;
	if (c->b == c->a && !st_strmap_put_f(&d->dead, &d->f[0], u, &created))
		return ST_ENOMEM;
	return add_provider_ref(&d->deadprov, &d->f[1], r);
}

/* The dependents, to a fixed point: what refers to a dead URN goes too. */
static int condemn_dependents(del *d)
{
	int changed, rc = count_copies(d);
	do {
		changed = 0;
		for (size_t i = 0; i < d->n && rc == ST_OK; i++) {
			json_t *r = json_array_get(d->res, i);
			if (!d->condemned[i] && st__refers(r, &d->dead, &d->f[0], &d->deadprov,
							    &d->f[1])) {
				d->condemned[i] = d->dependent[i] = 1;
				d->ndeps++;
				changed = 1;
			}
			if (d->condemned[i])
				rc = note_condemned(d, i, &changed);
		}
	} while (changed && rc == ST_OK);
	return rc;
}

/* Pulumi's refusal, listing the dependents. */
static int refuse_dependents(del *d, size_t first, st_error *err)
{
	st_buf b;
	size_t i;
	json_t *r;
	int rc;
	st_buf_init(&b);
	json_array_foreach(d->res, i, r) {
		st_urn pu;
		const char *u = st_json_str(r, "urn");
		if (!d->dependent[i])
			continue;
		if (u && st_urn_parse(u, &pu) == ST_OK) {
			char q[512];
			snprintf(q, sizeof(q), "\"%.*s\"", (int)pu.name_len, pu.name);
			st_buf_printf(&b, " * %-15s (%s)\n", q, u);
		} else {
			st_buf_printf(&b, " * %-15s (%s)\n", "\"\"", u ? u : "(no urn)");
		}
	}
	rc = st__err(err, ST_EREFUSED,
		     "%s can't be safely deleted because the following resources depend on "
		     "it:\n%s\nDelete those resources first or pass --target-dependents.",
		     st_json_str(json_array_get(d->res, first), "urn"), b.data ? b.data : "");
	st_buf_free(&b);
	return rc;
}

/* Reports what goes (dependents first: the reverse of file order) and removes it. */
static int remove_condemned(del *d, size_t *count, st_error *err)
{
	*count = 0;
	for (size_t i = d->n; i-- > 0;) {
		json_t *r = json_array_get(d->res, i);
		if (!d->condemned[i])
			continue;
		(*count)++;
		st__edit_report(d->e, "deleted %s%s%s", st_json_str(r, "urn"),
				d->dependent[i] ? " (a dependent)" : "",
				st_json_bool(r, "protect") ? " (protected; --force)" : "");
	}
	return st__edit_remove(d->e, d->condemned, err);
}

static int delete_(del *d, const st_handle *targets, size_t n, unsigned flags, size_t *deleted,
		   st_error *err)
{
	size_t first = 0;
	int rc, referred = 0;

	if ((rc = mark_targets(d, targets, n, flags, &first, err)) != ST_OK)
		return rc;
	if (any_referred(d, &referred) != ST_OK ||
	    (referred && condemn_dependents(d) != ST_OK))
		return st__err(err, ST_ENOMEM, "out of memory");
	if (d->ndeps && !(flags & ST_DELETE_TARGET_DEPENDENTS))
		return refuse_dependents(d, first, err);
	for (size_t i = 0; i < d->n && !(flags & ST_DELETE_FORCE); i++) {
		json_t *r = json_array_get(d->res, i);
		if (d->dependent[i] && st_json_bool(r, "protect"))
			return st__err(err, ST_EREFUSED,
				       "%s can't be safely deleted because it is protected. "
				       "Re-run this command with --force to force deletion",
				       st_json_str(r, "urn"));
	}
	if ((rc = remove_condemned(d, deleted, err)) != ST_OK)
		return rc;
	st__phase("delete: dependents searched, resources removed");
	return ST_OK;
}

int st_edit_delete(st_edit *e, const st_handle *targets, size_t n, unsigned flags,
		   size_t *deleted, st_error *err)
{
	del d;
	st__edit_op op;
	size_t count = 0;
	int rc;

	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(targets || !n);
	if (flags & ~(unsigned)(ST_DELETE_FORCE | ST_DELETE_TARGET_DEPENDENTS))
		return st__bad_flags(err, flags, ST_DELETE_FORCE | ST_DELETE_TARGET_DEPENDENTS,
				     "ST_DELETE_FORCE and ST_DELETE_TARGET_DEPENDENTS");
	if (deleted)
		*deleted = 0;
	if (!n)
		return ST_OK;
	memset(&d, 0, sizeof(d));
	d.e = e;
	d.res = st__edit_resources(e);
	d.n = json_array_size(d.res);
	d.condemned = calloc(d.n + 1, 1);
	d.dependent = calloc(d.n + 1, 1);
	d.f = calloc(2, sizeof(*d.f));
	st_strmap_init(&d.copies);
	st_strmap_init(&d.dead);
	st_strmap_init(&d.deadprov);
	if (!d.condemned || !d.dependent || !d.f)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	else if ((rc = st__edit_op_begin(e, &op, err)) == ST_OK)
		rc = st__edit_op_end(e, &op, delete_(&d, targets, n, flags, &count, err));
	if (rc == ST_OK && deleted)
		*deleted = count;
	free(d.condemned);
	free(d.dependent);
	free(d.f);
	st_strmap_free(&d.copies);
	st_strmap_free(&d.dead);
	free_keys(&d.deadprov);
	return rc;
}
