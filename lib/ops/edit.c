/*
 * Editing sessions: Pulumi's state operations (pkg/resource/edit, pkg/cmd/pulumi/state) made
 * safe. A resource is copied before it is changed (copy on write), so the session keeps the
 * original objects: the diff compares them by identity (unchanged resources cost nothing) and a
 * rollback puts them back.
 */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a set of pointers ---- */

typedef struct ptrset {
	const void **slots;
	size_t cap, count;
} ptrset;

static size_t ph(const void *p)
{
	uintptr_t x = (uintptr_t)p;
	x ^= x >> 16;
	x *= 0x45d9f3bU;
	x ^= x >> 16;
	return (size_t)x;
}

static int ptrset_add(ptrset *s, const void *p)
{
	if ((s->count + 1) * 2 > s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 64;
		const void **ns = calloc(nc, sizeof(*ns));
		if (!ns)
			return -1;
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->slots[i])
				continue;
			size_t k = ph(s->slots[i]) & (nc - 1);
			while (ns[k])
				k = (k + 1) & (nc - 1);
			ns[k] = s->slots[i];
		}
		free(s->slots);
		s->slots = ns;
		s->cap = nc;
	}
	size_t k = ph(p) & (s->cap - 1);
	while (s->slots[k] && s->slots[k] != p)
		k = (k + 1) & (s->cap - 1);
	if (!s->slots[k]) {
		s->slots[k] = p;
		s->count++;
	}
	return 0;
}

static int ptrset_has(const ptrset *s, const void *p)
{
	if (!s->cap)
		return 0;
	for (size_t k = ph(p) & (s->cap - 1); s->slots[k]; k = (k + 1) & (s->cap - 1))
		if (s->slots[k] == p)
			return 1;
	return 0;
}

static void ptrset_free(ptrset *s)
{
	free(s->slots);
	memset(s, 0, sizeof(*s));
}

/* ---- the session ---- */

struct st_edit {
	st_state *s;
	st_changes *report;
	json_t *before_dep;  /* the deployment object at the start (a reference) */
	json_t *before_res;  /* the original resource objects, in order */
	json_t *before_ops;  /* the original pending operations, or NULL */
	json_t *before_members; /* a shallow copy of the deployment object at the start */
	int had_dep, had_res;
	ptrset fresh; /* objects this session made: changed in place without another copy */
	int other_changed;
};

void st_diff_clear(st_diff *d)
{
	for (size_t i = 0; i < d->count; i++) {
		free(d->items[i].urn);
		for (size_t k = 0; k < d->items[i].nfields; k++)
			free(d->items[i].fields[k]);
		free(d->items[i].fields);
	}
	free(d->items);
	memset(d, 0, sizeof(*d));
}

static json_t *resources(st_edit *e)
{
	return st_state_resources(e->s, 0);
}

static json_t *pending_ops(st_edit *e)
{
	json_t *d = st_state_deployment(e->s);
	json_t *o = d ? json_object_get(d, "pending_operations") : NULL;
	return json_is_array(o) ? o : NULL;
}

static size_t count_errors(st_state *s)
{
	st_problems p = {0};
	size_t n;
	st_integrity_check(s, &p, NULL);
	n = p.errors;
	st_problems_clear(&p);
	return n;
}

static json_t *shallow_copy(json_t *arr)
{
	json_t *c = json_array();
	size_t i;
	json_t *v;
	if (!c)
		return NULL;
	json_array_foreach(arr, i, v)
		if (json_array_append(c, v) < 0) {
			json_decref(c);
			return NULL;
		}
	return c;
}

int st_edit_begin(st_edit **out, st_state *s, st_changes *report, st_error *err)
{
	ST_ASSERT_ARG(s);
	st_edit *e;
	int rc;

	*out = NULL;
	if (s->version < 3) {
		int from = s->version;
		rc = st_state_migrate(s, NULL, err);
		if (rc)
			return rc;
		st_changes_add(report, "migrated the state from version %d to %d (state edits write "
			       "the current version, as Pulumi's do)", from, s->version);
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return st__err(err, ST_ENOMEM, "out of memory");
	e->s = s;
	e->report = report;
	e->before_dep = json_incref(st_state_deployment(s));
	e->had_dep = e->before_dep != NULL;
	e->before_res = shallow_copy(resources(e));
	e->before_ops = pending_ops(e) ? shallow_copy(pending_ops(e)) : NULL;
	if (!e->before_res || (pending_ops(e) && !e->before_ops)) {
		st_edit_free(e);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	e->had_res = resources(e) != NULL;
	if (e->had_dep && !(e->before_members = json_copy(e->before_dep))) {
		st_edit_free(e);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	*out = e;
	return ST_OK;
}

void st_edit_free(st_edit *e)
{
	if (!e)
		return;
	json_decref(e->before_dep);
	json_decref(e->before_res);
	json_decref(e->before_ops);
	json_decref(e->before_members);
	ptrset_free(&e->fresh);
	free(e);
}

void st_edit_rollback(st_edit *e)
{
	ST_ASSERT_ARG(e);
	json_t *dep;
	if (!e->had_dep) {
		json_object_set_new(e->s->container,
				    e->s->envelope == ST_ENVELOPE_EXPORT ? "deployment" : "latest",
				    json_null());
		return;
	}
	json_object_set(e->s->container,
			e->s->envelope == ST_ENVELOPE_EXPORT ? "deployment" : "latest", e->before_dep);
	dep = e->before_dep;
	if (json_array_size(e->before_res) || json_object_get(dep, "resources"))
		json_object_set_new(dep, "resources", shallow_copy(e->before_res));
	if (e->before_ops)
		json_object_set_new(dep, "pending_operations", shallow_copy(e->before_ops));
	else
		json_object_del(dep, "pending_operations");
}

/* The element i of arr, copied first unless this session made it. */
static json_t *cow(st_edit *e, json_t *arr, size_t i)
{
	json_t *v = json_array_get(arr, i), *c;
	if (!v || ptrset_has(&e->fresh, v))
		return v;
	c = json_deep_copy(v);
	if (!c || json_array_set_new(arr, i, c) < 0 || ptrset_add(&e->fresh, c) < 0)
		return NULL;
	return c;
}

json_t *st__edit_cow(st_edit *e, json_t *arr, size_t i)
{
	return cow(e, arr, i);
}

int st__edit_is_fresh(st_edit *e, const json_t *v)
{
	return ptrset_has(&e->fresh, v);
}

int st__edit_replace(st_edit *e, json_t *arr, size_t i, json_t *copy)
{
	(void)e;
	if (json_array_get(arr, i) == copy) {
		json_decref(copy);
		return 0;
	}
	return json_array_set_new(arr, i, copy) < 0 ? -1 : 0;
}

st_state *st__edit_state(st_edit *e)
{
	return e->s;
}

void st__edit_report(st_edit *e, const char *fmt, ...)
{
	va_list ap;
	char *line = NULL;
	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) < 0)
		line = NULL;
	va_end(ap);
	if (line)
		st_changes_add(e->report, "%s", line);
	free(line);
}

/* Replaces a whole resources array (removals, reordering). */
static void set_resources(st_edit *e, json_t *arr)
{
	json_t *d = st_state_deployment(e->s);
	if (json_array_size(arr))
		st_obj_set_ordered(d, ST_K_DEPLOYMENT, "resources", arr);
	else {
		json_decref(arr);
		json_object_del(d, "resources");
	}
}

/* ---- delete ---- */

static void free_keys(st_strmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots && m->slots[i].hash)
			free(m->slots[i].p);
	st_strmap_free(m);
}

/* One read-only pass over the resources for references to `urns` (or provider references to
 * `refs`), on two threads for big states. With `hit`, every referring resource is marked; without,
 * the pass ends at the first. With `nu`/`old` (a rename), the resources' own URNs are compared
 * too: one equal to nu is a conflict, those equal to old are counted. */
typedef struct refscan {
	json_t *res;
	const char *skip; /* per index: 1 not looked at (NULL: none) */
	const st_strmap *urns, *refs;
	const st_prefilter *uf, *rf;
	char *hit;
	const char *nu, *old;
	size_t nul, oldl;
	atomic_int any, conflict;
	atomic_size_t copies;
} refscan;

typedef struct refscan_half {
	refscan *s;
	size_t from, to;
} refscan_half;

static void *refscan_main(void *arg)
{
	refscan_half *h = arg;
	refscan *s = h->s;
	for (size_t i = h->from; i < h->to; i++) {
		json_t *r = json_array_get(s->res, i);
		if (!s->hit && atomic_load_explicit(&s->any, memory_order_relaxed))
			break;
		if (s->nu) {
			json_t *uv = json_object_get(r, "urn");
			size_t ul = json_string_length(uv);
			const char *u = json_string_value(uv);
			if (u && ul == s->nul && !memcmp(u, s->nu, ul))
				atomic_store(&s->conflict, 1);
			if (u && ul == s->oldl && !memcmp(u, s->old, ul))
				atomic_fetch_add(&s->copies, 1);
		}
		if (s->skip && s->skip[i])
			continue;
		if (st__refers(r, s->urns, s->uf, s->refs, s->rf)) {
			atomic_store(&s->any, 1);
			if (!s->hit)
				break;
			s->hit[i] = 1;
		}
	}
	return NULL;
}

static void refscan_run(refscan *s)
{
	size_t n = json_array_size(s->res);
	refscan_half h[2] = {{s, 0, n / 2}, {s, n / 2, n}};
	pthread_t th;
	if (n >= 5000 && st__threads_ok() && pthread_create(&th, NULL, refscan_main, &h[1]) == 0) {
		refscan_main(&h[0]);
		pthread_join(th, NULL);
	} else {
		h[0].to = n;
		refscan_main(&h[0]);
	}
}

/* Does any resource other than the condemned refer to a condemned resource's URN or, for a
 * provider, its reference? One pass that only reads: the usual delete (nothing depends on
 * the target) needs no more. */
static int any_referred(json_t *res, const char *condemned, const size_t *targets, size_t n,
			int *referred)
{
	st_strmap urns, refs;
	st_prefilter *f = calloc(2, sizeof(*f));
	json_t *r;
	int rc = ST_OK, created;

	*referred = 0;
	st_strmap_init(&urns);
	st_strmap_init(&refs);
	if (!f)
		return ST_ENOMEM;
	for (size_t t = 0; t < n && rc == ST_OK; t++) {
		r = json_array_get(res, targets[t]);
		const char *u = st_json_str(r, "urn");
		char *pref = st__provider_ref_of(r);
		if (u && *u && !st_strmap_put_f(&urns, &f[0], u, &created))
			rc = ST_ENOMEM;
		if (pref) {
			st_strmap_slot *sl = st_strmap_put_f(&refs, &f[1], pref, &created);
			if (sl && created)
				sl->p = pref;
			else
				free(pref);
			if (!sl)
				rc = ST_ENOMEM;
		}
	}
	if (rc == ST_OK) {
		refscan sc;
		memset(&sc, 0, sizeof(sc));
		sc.res = res;
		sc.skip = condemned;
		sc.urns = &urns;
		sc.uf = &f[0];
		sc.refs = &refs;
		sc.rf = &f[1];
		refscan_run(&sc);
		*referred = atomic_load(&sc.any);
	}
	st_strmap_free(&urns);
	free_keys(&refs);
	free(f);
	return rc;
}

int st_edit_delete(st_edit *e, const size_t *targets, size_t n, unsigned flags, size_t *deleted,
		   st_error *err)
{
	ST_ASSERT_ARG(e);
	json_t *res = resources(e), *r, *keep;
	size_t N = json_array_size(res), i, ndeps = 0, count = 0;
	char *condemned = NULL, *dependent = NULL;
	st_strmap copies, dead, deadprov;
	st_prefilter *f = NULL; /* dead's and deadprov's */
	int rc = ST_OK, changed, referred = 0;

	if (deleted)
		*deleted = 0;
	if (!n)
		return ST_OK;
	condemned = calloc(N + 1, 1);
	dependent = calloc(N + 1, 1);
	st_strmap_init(&copies);
	st_strmap_init(&dead);
	st_strmap_init(&deadprov);
	f = calloc(2, sizeof(*f));
	if (!condemned || !dependent || !f) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t t = 0; t < n; t++) {
		if (targets[t] >= N) {
			rc = st__err(err, ST_EINVAL, "no resource at index %zu", targets[t]);
			goto out;
		}
		r = json_array_get(res, targets[t]);
		if (st_json_bool(r, "protect") && !(flags & ST_DELETE_FORCE)) {
			rc = st__err(err, ST_EREFUSED,
				     "%s can't be safely deleted because it is protected. Re-run this "
				     "command with --force to force deletion",
				     st_json_str(r, "urn"));
			goto out;
		}
		condemned[targets[t]] = 1;
	}
	if (any_referred(res, condemned, targets, n, &referred) != ST_OK) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	/* Something depends on a target: which resources, and what they in turn take with them.
	 * How many copies each URN has; a URN is dead once every copy is condemned. */
	for (i = 0; referred && i < N; i++) {
		r = json_array_get(res, i);
		const char *u = st_json_str(r, "urn");
		int created;
		st_strmap_slot *sl;
		if (!u)
			continue;
		sl = st_strmap_put(&copies, u, &created);
		if (!sl) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto out;
		}
		sl->a++;
	}
	do {
		changed = 0;
		for (i = 0; referred && i < N; i++) {
			r = json_array_get(res, i);
			const char *u = st_json_str(r, "urn");
			if (!condemned[i] && st__refers(r, &dead, &f[0], &deadprov, &f[1])) {
				condemned[i] = dependent[i] = 1;
				ndeps++;
				changed = 1;
			}
			if (condemned[i] && u) {
				st_strmap_slot *c = st_strmap_get(&copies, u);
				int created;
				if (c && c->b < c->a && condemned[i] != 2) {
					c->b++;
					condemned[i] = 2; /* counted */
					if (c->b == c->a && !st_strmap_put_f(&dead, &f[0], u, &created)) {
						rc = st__err(err, ST_ENOMEM, "out of memory");
						goto out;
					}
					changed = 1;
				}
				char *pref = st__provider_ref_of(r);
				if (pref) {
					st_strmap_slot *ps = st_strmap_put_f(&deadprov, &f[1], pref, &created);
					if (ps && created)
						ps->p = pref;
					else
						free(pref);
				}
			}
		}
	} while (changed);

	if (ndeps && !(flags & ST_DELETE_TARGET_DEPENDENTS)) {
		st_buf b;
		st_buf_init(&b);
		json_array_foreach(res, i, r) {
			st_urn pu;
			const char *u = st_json_str(r, "urn");
			if (!dependent[i])
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
			     st_json_str(json_array_get(res, targets[0]), "urn"),
			     b.data ? b.data : "");
		st_buf_free(&b);
		goto out;
	}
	if (!(flags & ST_DELETE_FORCE)) {
		json_array_foreach(res, i, r) {
			if (dependent[i] && st_json_bool(r, "protect")) {
				rc = st__err(err, ST_EREFUSED,
					     "%s can't be safely deleted because it is protected. "
					     "Re-run this command with --force to force deletion",
					     st_json_str(r, "urn"));
				goto out;
			}
		}
	}
	/* Dependents first in the report: the reverse of file order. */
	for (i = N; i-- > 0;) {
		if (!condemned[i])
			continue;
		r = json_array_get(res, i);
		st_changes_add(e->report, "deleted %s%s%s", st_json_str(r, "urn"),
			       dependent[i] ? " (a dependent)" : "",
			       st_json_bool(r, "protect") ? " (protected; --force)" : "");
	}
	keep = json_array();
	if (!keep) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	json_array_foreach(res, i, r) {
		if (condemned[i])
			count++;
		else
			json_array_append(keep, r);
	}
	set_resources(e, keep);
	st__phase("delete: dependents searched, resources removed");
	if (deleted)
		*deleted = count;
out:
	free(condemned);
	free(dependent);
	st_strmap_free(&copies);
	st_strmap_free(&dead);
	free_keys(&deadprov);
	free(f);
	return rc;
}

/* ---- flags ---- */

int st_edit_set_flag(st_edit *e, const size_t *targets, size_t n, const char *flag, int on,
		     size_t *changed, st_error *err)
{
	ST_ASSERT_ARG(e);
	json_t *res = resources(e);
	size_t N = json_array_size(res), count = 0;

	if (changed)
		*changed = 0;
	if (strcmp(flag, "protect") && strcmp(flag, "taint"))
		return st__err(err, ST_EINVAL, "unknown flag '%s'", flag);
	for (size_t t = 0; t < n; t++) {
		json_t *r;
		if (targets[t] >= N)
			return st__err(err, ST_EINVAL, "no resource at index %zu", targets[t]);
		r = json_array_get(res, targets[t]);
		if (st_json_bool(r, "delete") || st_json_bool(r, flag) == on)
			continue;
		r = cow(e, res, targets[t]);
		if (!r)
			return st__err(err, ST_ENOMEM, "out of memory");
		if (on)
			st_obj_set_ordered(r, ST_K_RESOURCE, flag, json_true());
		else
			json_object_del(r, flag);
		count++;
		st_changes_add(e->report, "%s %s", on ? (flag[0] == 'p' ? "protected" : "tainted")
						      : (flag[0] == 'p' ? "unprotected" : "untainted"),
			       st_json_str(r, "urn"));
	}
	if (changed)
		*changed = count;
	return ST_OK;
}

/* ---- rename ---- */

int st_edit_rename(st_edit *e, size_t target, const char *new_name, st_error *err)
{
	ST_ASSERT_ARG(e);
	json_t *res = resources(e), *r, *ops;
	size_t N = json_array_size(res), i, copies = 0, nhits = 0, *hits = NULL;
	char *marks = NULL;
	const char *old;
	char *nu = NULL, *oldref = NULL, *newref = NULL;
	st_urn pu;
	st_strmap map, provmap;
	st_prefilter *f = NULL; /* map's and provmap's */
	int created, rc = ST_OK;

	if (target >= N)
		return st__err(err, ST_EINVAL, "no resource at index %zu", target);
	if (!new_name || !*new_name)
		return st__err(err, ST_EINVAL, "the new name is empty");
	if (!strncmp(new_name, "urn:pulumi:", 11))
		return st__err(err, ST_EINVAL,
			       "'%s' is a URN; give the new name only (the part after the last "
			       "'::'), as `pulumi state rename` takes it",
			       new_name);
	r = json_array_get(res, target);
	old = st_json_str(r, "urn");
	if (!old || st_urn_parse(old, &pu) != ST_OK)
		return st__err(err, ST_EINVAL, "resource %zu has no valid URN to rename", target);
	nu = st_asprintf("urn:pulumi:%.*s::%.*s::%.*s::%s", (int)pu.stack_len, pu.stack,
			 (int)pu.project_len, pu.project, (int)pu.qtype_len, pu.qtype, new_name);
	if (!nu)
		return st__err(err, ST_ENOMEM, "out of memory");
	old = st_strdup(old);
	st_strmap_init(&map);
	st_strmap_init(&provmap);
	f = calloc(2, sizeof(*f));
	hits = calloc(N + 1, sizeof(*hits));
	marks = calloc(N + 1, 1);
	st_strmap_slot *sl = old && f && hits && marks ? st_strmap_put_f(&map, &f[0], old, &created) : NULL;
	if (!sl) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	sl->p = nu;
	oldref = st__provider_ref_of(r);
	if (!oldref && st_type_is_provider(st_json_str(r, "type") ? st_json_str(r, "type") : "")) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if (oldref) {
		newref = st__provider_ref(nu, st_json_str(r, "id"));
		sl = newref ? st_strmap_put_f(&provmap, &f[1], oldref, &created) : NULL;
		if (!sl) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto out;
		}
		sl->p = newref;
	}
	/* One pass that only reads: the new URN taken already? the old one held by copies?
	 * which resources refer to the old URN (or provider reference)? */
	{
		refscan sc;
		memset(&sc, 0, sizeof(sc));
		sc.res = res;
		sc.urns = &map;
		sc.uf = &f[0];
		sc.refs = oldref ? &provmap : NULL;
		sc.rf = &f[1];
		sc.hit = marks;
		sc.nu = nu;
		sc.nul = strlen(nu);
		sc.old = old;
		sc.oldl = strlen(old);
		refscan_run(&sc);
		if (atomic_load(&sc.conflict)) {
			rc = st__err(err, ST_ECONFLICT,
				     "The chosen new urn for the state corresponds to an already "
				     "existing resource: %s",
				     nu);
			goto out;
		}
		copies = atomic_load(&sc.copies);
		for (i = 0; i < N; i++)
			if (marks[i])
				hits[nhits++] = i;
	}
	if (copies > 1) {
		rc = st__err(err, ST_EAMBIGUOUS,
			     "The input URN ambiguously refers to multiple resources: %zu resources "
			     "share %s (copies marked delete: true); rename after the next update",
			     copies, old);
		goto out;
	}
	r = cow(e, res, target);
	if (!r) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if (json_object_set_new(r, "urn", json_string(nu))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	st_changes_add(e->report, "renamed %s to %s", old, nu);
	for (size_t h = 0; h < nhits; h++) {
		i = hits[h];
		r = cow(e, res, i);
		size_t k = 0;
		if (!r || st__ref_rewrite(r, &map, oldref ? &provmap : NULL, &k) != ST_OK) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto out;
		}
		st_changes_add(e->report, "%s: rewrote %zu reference%s", st_json_str(r, "urn"), k,
			       k == 1 ? "" : "s");
	}
	ops = pending_ops(e);
	json_array_foreach(ops, i, r) {
		json_t *rr = json_object_get(r, "resource");
		const char *u = st_json_str(rr, "urn");
		if (!(u && !strcmp(u, old)) &&
		    !st__refers(rr, &map, &f[0], oldref ? &provmap : NULL, &f[1]))
			continue;
		r = cow(e, ops, i);
		rr = json_object_get(r, "resource");
		int oom = !r;
		if (r && u && !strcmp(u, old) && json_object_set_new(rr, "urn", json_string(nu)))
			oom = 1;
		if (r && st__ref_rewrite(rr, &map, oldref ? &provmap : NULL, NULL) != ST_OK)
			oom = 1;
		if (oom) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto out;
		}
		st_changes_add(e->report, "pending operation %zu: rewrote references", i);
	}
	st__phase("rename: references found and rewritten");
out:
	st_strmap_free(&map);
	st_strmap_free(&provmap);
	free(f);
	free(hits);
	free(marks);
	free((char *)old);
	free(nu);
	free(oldref);
	free(newref);
	return rc;
}

/* ---- repair ---- */

typedef struct frame {
	size_t node, next;
} frame;

/* The index a URN resolves to for resource `from`: a deleted resource binds to a deleted copy,
 * a live one to a live copy, else whichever exists. SIZE_MAX when missing. */
static size_t resolve(const st_strmap *live, const st_strmap *gone, const char *urn, size_t len,
		      int deleted)
{
	st_strmap_slot *a = st_strmap_getn(live, urn, len);
	st_strmap_slot *b = st_strmap_getn(gone, urn, len);
	if (deleted && b)
		return b->a;
	if (a)
		return a->a;
	if (b)
		return b->a;
	return (size_t)-1;
}

/* The edges of one resource, as the reference walk gives them (properties sorted): indexes of
 * the resources it refers to. */
typedef struct edge_walk {
	const st_strmap *live, *gone;
	size_t self;
	int del;
	size_t *v, n, cap;
} edge_walk;

static int edge_cb(void *p, st_ref *ref)
{
	edge_walk *c = p;
	size_t len = ref->len, t;
	if (ref->kind == ST_REF_PROVIDER && !(len = st__provider_ref_urn_len(ref->value, len)))
		return ST_REF_NEXT;
	t = resolve(c->live, c->gone, ref->value, len, c->del);
	if (t == (size_t)-1 || t == c->self)
		return ST_REF_NEXT;
	if (c->n == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 8;
		size_t *nv = realloc(c->v, nc * sizeof(*nv));
		if (!nv)
			return ST_ENOMEM;
		c->v = nv;
		c->cap = nc;
	}
	c->v[c->n++] = t;
	return ST_REF_NEXT;
}

/* The edges of resource i, in the walk's fixed order. -1 when out of memory. */
static int edges_of(json_t *r, size_t self, const st_strmap *live, const st_strmap *gone,
		    size_t **out, size_t *n)
{
	edge_walk c = {live, gone, self, st_json_bool(r, "delete"), NULL, 0, 0};
	if (st__ref_foreach(r, ST_REF_ALL | ST_REF_SORTED, edge_cb, &c) < 0) {
		free(c.v);
		return -1;
	}
	*out = c.v;
	*n = c.n;
	return 0;
}

static int topo_sort(json_t *res, size_t *order, st_error *err)
{
	size_t N = json_array_size(res), i, no = 0, sp = 0;
	st_strmap live, gone;
	unsigned char *state = calloc(N + 1, 1);
	frame *stack = malloc((N + 1) * sizeof(*stack));
	size_t **edges = calloc(N + 1, sizeof(*edges)), *nedges = calloc(N + 1, sizeof(*nedges));
	json_t *r;
	int rc = ST_OK, created;

	st_strmap_init(&live);
	st_strmap_init(&gone);
	if (!state || !stack || !edges || !nedges) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	json_array_foreach(res, i, r) {
		const char *u = st_json_str(r, "urn");
		st_strmap_slot *sl;
		if (!u)
			continue;
		sl = st_strmap_put(st_json_bool(r, "delete") ? &gone : &live, u, &created);
		if (sl && created)
			sl->a = i;
	}
	json_array_foreach(res, i, r) {
		if (edges_of(r, i, &live, &gone, &edges[i], &nedges[i]) < 0) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto out;
		}
	}
	for (size_t root = 0; root < N; root++) {
		if (state[root])
			continue;
		state[root] = 1;
		stack[sp].node = root;
		stack[sp].next = 0;
		sp++;
		while (sp) {
			frame *f = &stack[sp - 1];
			if (f->next < nedges[f->node]) {
				size_t t = edges[f->node][f->next++];
				if (state[t] == 1) {
					rc = st__err(err, ST_EINTEGRITY,
						     "snapshot has cyclic dependencies (through %s)",
						     st_json_str(json_array_get(res, t), "urn"));
					goto out;
				}
				if (state[t] == 0) {
					state[t] = 1;
					stack[sp].node = t;
					stack[sp].next = 0;
					sp++;
				}
			} else {
				state[f->node] = 2;
				order[no++] = f->node;
				sp--;
			}
		}
	}
out:
	for (i = 0; edges && i < N; i++)
		free(edges[i]);
	free(edges);
	free(nedges);
	free(state);
	free(stack);
	st_strmap_free(&live);
	st_strmap_free(&gone);
	return rc;
}

/* Keeps the items of a URN list that `seen` knows, mapped; reports the others. */
static void prune_list(st_edit *e, json_t *r, json_t *list, const st_strmap *seen,
		       const char *what, const char *key)
{
	size_t i = 0;
	while (i < json_array_size(list)) {
		const char *u = json_string_value(json_array_get(list, i));
		st_strmap_slot *sl = u ? st_strmap_get(seen, u) : NULL;
		if (!u || !*u) {
			i++;
			continue;
		}
		if (!sl) {
			st_changes_add(e->report, "%s: dropped %s%s%s%s on %s (missing)",
				       st_json_str(r, "urn"), what, key ? " (" : "", key ? key : "",
				       key ? ")" : "", u);
			json_array_remove(list, i);
			continue;
		}
		if (strcmp((const char *)sl->p, u))
			json_array_set_new(list, i, json_string((const char *)sl->p));
		i++;
	}
}

int st_edit_repair(st_edit *e, st_error *err)
{
	ST_ASSERT_ARG(e);
	json_t *res = resources(e), *sorted, *r;
	size_t N = json_array_size(res), i, *order;
	st_strmap seen;
	char **owned = NULL;
	size_t nowned = 0;
	int rc, created;

	if (!N)
		return ST_OK;
	order = malloc(N * sizeof(*order));
	owned = calloc(N * 2 + 1, sizeof(*owned));
	if (!order || !owned) {
		free(order);
		free(owned);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	rc = topo_sort(res, order, err);
	if (rc) {
		free(order);
		free(owned);
		return rc;
	}
	sorted = json_array();
	for (i = 0; i < N; i++) {
		/* Report what had to move up; the rest only shifts down to make room. */
		if (order[i] > i)
			st_changes_add(e->report, "moved %s up from #%zu to #%zu",
				       st_json_str(json_array_get(res, order[i]), "urn"), order[i], i);
		json_array_append(sorted, json_array_get(res, order[i]));
	}
	set_resources(e, sorted);
	res = resources(e);
	/* Prune in sorted order; `seen` maps each URN already placed to its (new) URN. */
	st_strmap_init(&seen);
	for (i = 0; i < N; i++) {
		json_t *orig = json_array_get(res, i);
		const char *urn = st_json_str(orig, "urn"), *parent = st_json_str(orig, "parent");
		char *newurn = NULL;
		st_urn pu;
		int touched = 0;

		r = orig;
		if (parent && *parent && urn && st_urn_parse(urn, &pu) == ST_OK) {
			st_strmap_slot *ps = st_strmap_get(&seen, parent);
			if (!ps) {
				r = cow(e, res, i);
				json_object_del(r, "parent");
				newurn = st_asprintf("urn:pulumi:%.*s::%.*s::%.*s::%.*s",
						     (int)pu.stack_len, pu.stack, (int)pu.project_len,
						     pu.project, (int)pu.type_len, pu.type,
						     (int)pu.name_len, pu.name);
				st_changes_add(e->report,
					       "%s: parent %s is missing; cleared (new URN %s)", urn,
					       parent, newurn ? newurn : "?");
				touched = 1;
			} else if (strcmp((const char *)ps->p, parent)) {
				st_urn pp;
				const char *np = (const char *)ps->p;
				r = cow(e, res, i);
				json_object_set_new(r, "parent", json_string(np));
				if (st_urn_parse(np, &pp) == ST_OK) {
					char *pqt = st_strndup(pp.qtype, pp.qtype_len);
					char *ty = st_strndup(pu.type, pu.type_len);
					char *nm = st_strndup(pu.name, pu.name_len);
					char *stk = st_strndup(pu.stack, pu.stack_len);
					char *prj = st_strndup(pu.project, pu.project_len);
					newurn = st_urn_new(stk, prj, pqt, ty, nm);
					free(pqt);
					free(ty);
					free(nm);
					free(stk);
					free(prj);
				}
				st_changes_add(e->report, "%s: reparented to %s (new URN %s)", urn, np,
					       newurn ? newurn : "?");
				touched = 1;
			}
		}
		/* drop references to what is not (yet) placed; map the rest */
		if (st__refers(r, &seen, NULL, NULL, NULL) || st_json_str(r, "deletedWith") ||
		    json_array_size(json_object_get(r, "dependencies")) ||
		    json_array_size(json_object_get(r, "replaceWith")) ||
		    json_object_size(json_object_get(r, "propertyDependencies"))) {
			json_t *snapshot = json_deep_copy(r);
			json_t *w = json_deep_copy(r);
			const char *k;
			json_t *list;
			const char *dw = st_json_str(w, "deletedWith");
			if (dw && *dw) {
				st_strmap_slot *sl = st_strmap_get(&seen, dw);
				if (!sl) {
					st_changes_add(e->report,
						       "%s: dropped deletedWith on %s (missing)",
						       st_json_str(w, "urn"), dw);
					json_object_del(w, "deletedWith");
				} else if (strcmp((const char *)sl->p, dw)) {
					json_object_set_new(w, "deletedWith",
							    json_string((const char *)sl->p));
				}
			}
			prune_list(e, w, json_object_get(w, "dependencies"), &seen, "dependency",
				   NULL);
			prune_list(e, w, json_object_get(w, "replaceWith"), &seen, "replaceWith",
				   NULL);
			/* Go omits an empty list (omitempty) */
			if (json_is_array(json_object_get(w, "dependencies")) &&
			    !json_array_size(json_object_get(w, "dependencies")) &&
			    json_array_size(json_object_get(r, "dependencies")))
				json_object_del(w, "dependencies");
			if (json_is_array(json_object_get(w, "replaceWith")) &&
			    !json_array_size(json_object_get(w, "replaceWith")) &&
			    json_array_size(json_object_get(r, "replaceWith")))
				json_object_del(w, "replaceWith");
			json_object_foreach(json_object_get(w, "propertyDependencies"), k, list)
				prune_list(e, w, list, &seen, "property dependency", k);
			if (!json_equal(snapshot, w)) {
				r = cow(e, res, i);
				json_object_update(r, w);
				if (!json_object_get(w, "dependencies"))
					json_object_del(r, "dependencies");
				if (!json_object_get(w, "replaceWith"))
					json_object_del(r, "replaceWith");
				if (!json_object_get(w, "deletedWith"))
					json_object_del(r, "deletedWith");
				touched = 1;
			}
			json_decref(snapshot);
			json_decref(w);
		}
		if (newurn) {
			json_object_set_new(r, "urn", json_string(newurn));
			owned[nowned++] = newurn;
		}
		(void)touched;
		if (urn) {
			char *key = st_strdup(urn);
			owned[nowned++] = key;
			st_strmap_slot *sl = st_strmap_put(&seen, key, &created);
			if (sl)
				sl->p = newurn ? newurn : key;
			if (newurn) {
				st_strmap_slot *s2 = st_strmap_put(&seen, newurn, &created);
				if (s2)
					s2->p = newurn;
			}
		}
	}
	st_strmap_free(&seen);
	for (i = 0; i < nowned; i++)
		free(owned[i]);
	free(owned);
	free(order);
	return ST_OK;
}

/* ---- pending operations ---- */

int st_edit_pending_clear(st_edit *e, const char *const *urns, size_t n, size_t *removed,
			  st_error *err)
{
	ST_ASSERT_ARG(e);
	json_t *ops = pending_ops(e), *keep, *op;
	size_t i, count = 0;

	(void)err;
	if (removed)
		*removed = 0;
	if (!ops)
		return ST_OK;
	keep = json_array();
	json_array_foreach(ops, i, op) {
		const char *u = st_json_str(json_object_get(op, "resource"), "urn");
		int hit = !urns;
		for (size_t k = 0; !hit && k < n; k++)
			hit = u && !strcmp(u, urns[k]);
		if (hit) {
			count++;
			st_changes_add(e->report, "removed pending %s operation on %s",
				       st_json_str(op, "type") ? st_json_str(op, "type") : "?",
				       u ? u : "(no urn)");
		} else {
			json_array_append(keep, op);
		}
	}
	if (json_array_size(keep))
		json_object_set_new(st_state_deployment(e->s), "pending_operations", keep);
	else {
		json_decref(keep);
		json_object_del(st_state_deployment(e->s), "pending_operations");
	}
	if (removed)
		*removed = count;
	return ST_OK;
}

/* ---- providers ---- */

static const char *provider_package(const char *ref, char *buf, size_t size)
{
	st_urn u;
	char *urn = NULL, *id = NULL;
	const char *pkg = NULL;
	if (st_provider_ref_parse(ref, &urn, &id, NULL) == ST_OK && st_urn_parse(urn, &u) == ST_OK) {
		/* pulumi:providers:<pkg> */
		snprintf(buf, size, "%.*s", (int)u.type_len, u.type);
		pkg = buf + strlen("pulumi:providers:");
	}
	free(urn);
	free(id);
	return pkg;
}

int st_edit_replace_provider(st_edit *e, const char *from, const char *to, size_t *changed,
			     st_error *err)
{
	ST_ASSERT_ARG(e);
	json_t *res = resources(e), *r;
	size_t i, count = 0;
	int found = 0;
	char b1[256], b2[256];
	const char *p1, *p2;

	if (changed)
		*changed = 0;
	json_array_foreach(res, i, r) {
		char *ref = st__provider_ref_of(r);
		if (ref && !strcmp(ref, to) && !st_json_bool(r, "delete"))
			found = 1;
		free(ref);
	}
	if (!found)
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
		r = cow(e, res, i);
		if (!r)
			return st__err(err, ST_ENOMEM, "out of memory");
		json_object_set_new(r, "provider", json_string(to));
		st_changes_add(e->report, "%s: provider %s -> %s", st_json_str(r, "urn"), from, to);
		count++;
	}
	if (changed)
		*changed = count;
	return ST_OK;
}

int st_edit_replace_deployment(st_edit *e, json_t *dep, st_error *err)
{
	ST_ASSERT_ARG(e);
	int rc;
	if (!json_is_object(dep)) {
		json_decref(dep);
		return st__err(err, ST_EFORMAT, "the deployment must be a JSON object");
	}
	/* as Pulumi will decode it: keys in any case, nothing Go's decoder refuses */
	rc = st__go_check_deployment(dep, e->s->version, st__deployment_pointer(e->s), err);
	if (rc) {
		json_decref(dep);
		return rc;
	}
	json_object_set_new(e->s->container,
			    e->s->envelope == ST_ENVELOPE_EXPORT ? "deployment" : "latest", dep);
	if (!e->before_dep) {
		e->other_changed = 1;
		return ST_OK;
	}
	/* Did anything besides resources and pending operations change? */
	{
		const char *k;
		json_t *v;
		json_object_foreach(dep, k, v) {
			if (!strcmp(k, "resources") || !strcmp(k, "pending_operations"))
				continue;
			if (!json_equal(v, json_object_get(e->before_dep, k)))
				e->other_changed = 1;
		}
		json_object_foreach(e->before_dep, k, v) {
			if (!strcmp(k, "resources") || !strcmp(k, "pending_operations"))
				continue;
			if (!json_object_get(dep, k))
				e->other_changed = 1;
		}
	}
	return ST_OK;
}

/* ---- commit: integrity and the diff ---- */

/*
 * json_equal, quicker for a copy of a value: members in the same order, most of them the same
 * objects (a copy made along the path to what changed), are compared by pointer and position
 * before anything is looked up or walked.
 */
static int same_value(json_t *a, json_t *b, int depth)
{
	if (a == b)
		return 1;
	if (!a || !b || json_typeof(a) != json_typeof(b) || depth > ST_DEFAULT_MAX_DEPTH)
		return a && b && json_equal(a, b);
	if (json_is_object(a)) {
		void *ia, *ib;
		if (json_object_size(a) != json_object_size(b))
			return 0;
		for (ia = json_object_iter(a), ib = json_object_iter(b); ia && ib;
		     ia = json_object_iter_next(a, ia), ib = json_object_iter_next(b, ib)) {
			size_t la = json_object_iter_key_len(ia);
			if (la != json_object_iter_key_len(ib) ||
			    memcmp(json_object_iter_key(ia), json_object_iter_key(ib), la))
				return json_equal(a, b); /* another order: by key */
			if (!same_value(json_object_iter_value(ia), json_object_iter_value(ib),
					depth + 1))
				return 0;
		}
		return 1;
	}
	if (json_is_array(a)) {
		size_t n = json_array_size(a);
		if (n != json_array_size(b))
			return 0;
		for (size_t i = 0; i < n; i++)
			if (!same_value(json_array_get(a, i), json_array_get(b, i), depth + 1))
				return 0;
		return 1;
	}
	return json_equal(a, b);
}

static int diff_push(st_diff *d, char kind, const char *urn, json_t *a, json_t *b)
{
	st_diff_entry *it;
	st_diff_entry *items = realloc(d->items, (d->count + 1) * sizeof(*items));
	if (!items)
		return -1;
	d->items = items;
	it = &d->items[d->count];
	memset(it, 0, sizeof(*it));
	it->kind = kind;
	it->urn = st_strdup(urn ? urn : "(no urn)");
	if (kind == '~') {
		const char *k;
		json_t *v;
		size_t n = json_object_size(a) + json_object_size(b);
		it->fields = calloc(n + 1, sizeof(char *));
		void *ib = json_object_iter(b);
		int aligned = json_object_size(a) == json_object_size(b); /* the same keys, in order */
		for (void *ia = json_object_iter(a); ia; ia = json_object_iter_next(a, ia)) {
			/* b is mostly a's copy: the member at the same place first */
			size_t kl = json_object_iter_key_len(ia);
			json_t *bv;
			k = json_object_iter_key(ia);
			v = json_object_iter_value(ia);
			if (ib && json_object_iter_key_len(ib) == kl &&
			    !memcmp(json_object_iter_key(ib), k, kl)) {
				bv = json_object_iter_value(ib);
			} else {
				bv = json_object_getn(b, k, kl);
				aligned = 0;
			}
			if (!bv || !same_value(v, bv, 0))
				it->fields[it->nfields++] = st_strdup(k);
			if (ib)
				ib = json_object_iter_next(b, ib);
		}
		if (!aligned) /* keys only b has */
			json_object_foreach(b, k, v)
				if (!json_object_get(a, k))
					it->fields[it->nfields++] = st_strdup(k);
		if (!it->nfields) {
			free(it->fields);
			free(it->urn);
			return 0; /* copied but not changed */
		}
	}
	d->count++;
	return 0;
}

/* Where the resources before and after the session differ: a common prefix and suffix of the
 * same objects (an edit of one resource leaves every other in place), and the sets of the
 * objects in the two middle parts. The session's arrays never hold one object twice (the
 * loader makes distinct objects; edits put fresh copies in), so an object in a middle part is
 * in the other array exactly when it is in the other middle part. */
typedef struct window {
	json_t *before, *after;
	size_t nb, na, p, q; /* sizes; common prefix and suffix */
	ptrset bm, am;
	int ok; /* the sets are complete (not out of memory) */
} window;

static void window_init(st_edit *e, window *w)
{
	memset(w, 0, sizeof(*w));
	w->before = e->before_res;
	w->after = resources(e);
	w->nb = json_array_size(w->before);
	w->na = json_array_size(w->after);
	while (w->p < w->nb && w->p < w->na &&
	       json_array_get(w->before, w->p) == json_array_get(w->after, w->p))
		w->p++;
	while (w->q < w->nb - w->p && w->q < w->na - w->p &&
	       json_array_get(w->before, w->nb - 1 - w->q) ==
		       json_array_get(w->after, w->na - 1 - w->q))
		w->q++;
	w->ok = 1;
	for (size_t i = w->p; i < w->nb - w->q; i++)
		if (ptrset_add(&w->bm, json_array_get(w->before, i)) < 0)
			w->ok = 0;
	for (size_t i = w->p; i < w->na - w->q; i++)
		if (ptrset_add(&w->am, json_array_get(w->after, i)) < 0)
			w->ok = 0;
}

static void window_free(window *w)
{
	ptrset_free(&w->bm);
	ptrset_free(&w->am);
}

/* Was the object at index i after the session there before it (and the reverse)? */
static int was_before(const window *w, size_t i, const json_t *r)
{
	return i < w->p || i >= w->na - w->q || ptrset_has(&w->bm, r);
}

static int is_after(const window *w, size_t i, const json_t *r)
{
	return i < w->p || i >= w->nb - w->q || ptrset_has(&w->am, r);
}

static void compute_diff(st_edit *e, st_diff *d, const window *w)
{
	json_t *after = w->after, *r;
	st_strmap unmatched; /* URN -> list of after indexes not matched by identity */
	size_t i, lo = w->p, hi = w->na - w->q; /* after's middle part */
	char *used = calloc(hi - lo + 1, 1);

	memset(d, 0, sizeof(*d));
	st_strmap_init(&unmatched);
	/* After-resources that are new objects, chained by URN in file order (slot a = first
	 * index + 1, next[] = the following one + 1): one URN may have several copies. */
	size_t *next = calloc(hi - lo + 1, sizeof(*next));
	if (!used || !next) { /* out of memory: no matching by URN */
		free(used);
		free(next);
		used = NULL;
		next = NULL;
	}
	for (i = hi; i-- > lo;) {
		int created;
		r = json_array_get(after, i);
		const char *u = st_json_str(r, "urn");
		if (was_before(w, i, r) || !u || !next)
			continue;
		st_strmap_slot *sl = st_strmap_put(&unmatched, u, &created);
		if (!sl)
			continue;
		next[i - lo] = created ? 0 : sl->a;
		sl->a = i + 1;
	}
	for (i = w->p; i < w->nb - w->q; i++) {
		r = json_array_get(w->before, i);
		const char *u = st_json_str(r, "urn");
		if (is_after(w, i, r))
			continue;
		st_strmap_slot *sl = u && next ? st_strmap_get(&unmatched, u) : NULL;
		size_t k = sl ? sl->a : 0;
		while (k && used[k - 1 - lo])
			k = next[k - 1 - lo];
		if (k) {
			used[k - 1 - lo] = 1;
			diff_push(d, '~', u, r, json_array_get(after, k - 1));
		} else {
			diff_push(d, '-', u, NULL, NULL);
		}
	}
	free(next);
	for (i = lo; i < hi; i++) {
		r = json_array_get(after, i);
		if (was_before(w, i, r) || (used && used[i - lo]))
			continue;
		diff_push(d, '+', st_json_str(r, "urn"), NULL, NULL);
	}
	d->pending_before = json_array_size(e->before_ops);
	d->pending_after = json_array_size(pending_ops(e));
	if (d->pending_before == d->pending_after && e->before_ops) {
		for (i = 0; i < d->pending_after; i++)
			if (!json_equal(json_array_get(e->before_ops, i),
					json_array_get(pending_ops(e), i)))
				d->other_changed = 1;
	}
	if (e->other_changed)
		d->other_changed = 1;
	free(used);
	st_strmap_free(&unmatched);
}

static int untouched(const json_t *r, size_t i, void *ctx)
{
	return was_before(ctx, i, r);
}

/* The features the edited state uses and (d not NULL) the diff. A resource the session left
 * as it was is looked at only for the features the state may use (s->known_absent): for an
 * edit of one resource, every other is skipped. */
static void features_and_diff(st_edit *e, int used[8], st_diff *d)
{
	window w;
	window_init(e, &w);
	/* (out of memory: every resource looked at) */
	st__state_features_scan(e->s, used, w.ok ? untouched : NULL, &w);
	if (d)
		compute_diff(e, d, &w);
	window_free(&w);
}

/* The integrity errors of the state as it was when the session began, counted only when the
 * edited state has errors (a valid result needs no comparison): the original resources and
 * pending operations, which copy on write left untouched, in a copy of the deployment's
 * members as they were. */
static int errors_before(st_edit *e, size_t *n, st_error *err)
{
	const char *key = e->s->envelope == ST_ENVELOPE_EXPORT ? "deployment" : "latest";
	json_t *dep, *cont;
	st_state tmp;

	*n = 0;
	if (!e->had_dep)
		return ST_OK;
	dep = json_copy(e->before_members);
	cont = json_copy(e->s->container);
	if (!dep || !cont || json_object_set_new(cont, key, dep)) {
		json_decref(cont);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	json_object_del(dep, "resources");
	json_object_del(dep, "pending_operations");
	if ((e->had_res && json_object_set(dep, "resources", e->before_res)) ||
	    (e->before_ops && json_object_set(dep, "pending_operations", e->before_ops))) {
		json_decref(cont);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	tmp = *e->s;
	tmp.container = cont;
	*n = count_errors(&tmp);
	json_decref(cont);
	return ST_OK;
}

/* What commit computes beside the integrity check, on a second thread: both only read. */
typedef struct commit_side {
	st_edit *e;
	st_diff *diff;
	int used[8];
} commit_side;

static void *commit_side_main(void *arg)
{
	commit_side *c = arg;
	features_and_diff(c->e, c->used, c->diff);
	return NULL;
}

/* What commit concludes from the integrity check of the edited state: ST_OK, or an error (the
 * caller rolls back on ST_EINTEGRITY). Adds the before/after line to the report when an
 * invalid state stays invalid. */
static int judge(st_edit *e, st_problems *p, st_problems *problems, st_error *err)
{
	size_t before = 0;
	int rc = ST_OK;

	if (p->errors > 0)
		rc = errors_before(e, &before, err);
	if (rc)
		return rc;
	if (before == 0 && p->errors > 0) {
		const char *first = "";
		for (size_t i = 0; i < p->count; i++)
			if (p->items[i].severity == ST_SEV_ERROR) {
				first = p->items[i].message;
				break;
			}
		st__err(err, ST_EINTEGRITY,
			"state edit produced an invalid snapshot (%zu integrity error%s; the state "
			"was valid before, so nothing is written): %s",
			p->errors, p->errors == 1 ? "" : "s", first);
		if (problems)
			for (size_t i = 0; i < p->count; i++)
				if (p->items[i].severity == ST_SEV_ERROR)
					st_problems_add(problems, ST_SEV_ERROR, p->items[i].rule,
							p->items[i].pointer, p->items[i].urn, "%s",
							p->items[i].message);
		return ST_EINTEGRITY;
	}
	if (before && p->errors)
		st_changes_add(e->report, "the state had %zu integrity error%s before and has %zu "
			       "after (run statetool validate)", before, before == 1 ? "" : "s",
			       p->errors);
	return ST_OK;
}

int st_edit_commit(st_edit *e, st_diff *diff, st_problems *problems, st_error *err)
{
	ST_ASSERT_ARG(e);
	st_problems p = {0};
	commit_side side = {e, NULL, {0}};
	st_diff tmp_diff;
	pthread_t th;
	int rc, threaded = 0;

	memset(&tmp_diff, 0, sizeof(tmp_diff));
	if (diff) {
		memset(diff, 0, sizeof(*diff));
		side.diff = &tmp_diff;
	}
	if (st__threads_ok() && json_array_size(resources(e)) >= 500)
		threaded = pthread_create(&th, NULL, commit_side_main, &side) == 0;
	rc = st_integrity_check(e->s, &p, err);
	if (threaded)
		pthread_join(th, NULL);
	if (rc == ST_OK)
		rc = judge(e, &p, problems, err);
	st_problems_clear(&p);
	if (rc) {
		st_diff_clear(&tmp_diff);
		if (rc == ST_EINTEGRITY)
			st_edit_rollback(e);
		return rc;
	}
	if (threaded) {
		st__state_features_set(e->s, side.used);
		if (diff)
			*diff = tmp_diff;
	} else {
		features_and_diff(e, side.used, diff);
		st__state_features_set(e->s, side.used);
	}
	return ST_OK;
}

/* ---- commit and save at once ---- */

typedef struct commit_save {
	st_edit *e;
	st_state view; /* what the check reads: the state with its own copy of the container */
	st_problems p;
	st_error cerr; /* the integrity check's own error */
	int crc;
	pthread_t th;
	int threaded, judged, verdict;
	st_problems *problems;
	st_error *err;
	/* The check waits for a processor: until the writer's second thread is done (or the
	 * writer does not split), so that the two do not take turns on two processors with the
	 * writer's own two threads; the write's fsync leaves the processors to it. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int go;
} commit_save;

static void open_gate(void *arg)
{
	commit_save *c = arg;
	pthread_mutex_lock(&c->mu);
	c->go = 1;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

static void *check_main(void *arg)
{
	commit_save *c = arg;
	pthread_mutex_lock(&c->mu);
	while (!c->go)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
	c->crc = st__integrity_check_ex(&c->view, &c->p, ST__IC_SKIP_MAGIC | ST__IC_TWO_THREADS,
					&c->cerr);
	return NULL;
}

/* Waits for the check and judges it (once). */
static int verdict(void *arg)
{
	commit_save *c = arg;
	if (c->judged)
		return c->verdict;
	if (c->threaded) {
		open_gate(c);
		pthread_join(c->th, NULL);
	} else
		c->crc = st__integrity_check_ex(&c->view, &c->p, ST__IC_SKIP_MAGIC | ST__IC_TWO_THREADS,
					&c->cerr);
	c->judged = 1;
	if (c->crc) {
		if (c->err)
			*c->err = c->cerr;
		c->verdict = c->crc;
	} else {
		c->verdict = judge(c->e, &c->p, c->problems, c->err);
	}
	st_problems_clear(&c->p);
	return c->verdict;
}

/* Where a commit's state goes: a file, or a stack of a backend. */
typedef struct commit_target {
	const char *path;
	const st_write_opts *opts;
	st_backend *backend;
	const char *stack;
} commit_target;

static int save_target(const commit_target *t, st_state *s, int (*proceed)(void *ctx),
		       void *proceed_ctx, const st__wcfg *cfg, st_error *err)
{
	if (t->backend) {
		st_backend_save_opts bo = ST_BACKEND_SAVE_OPTS_INIT;
		bo.no_backup = t->opts && !t->opts->backup;
		bo.proceed = proceed;
		bo.proceed_ctx = proceed_ctx;
		return st__backend_save(t->backend, t->stack, s, &bo, cfg, err);
	}
	return st__state_save_checked(s, t->path, t->opts, proceed, proceed_ctx, cfg, err);
}

static int commit_and_save(st_edit *e, const commit_target *t, int always, st_diff *diff,
			   st_problems *problems, int *written, st_error *err);

int st_edit_commit_save(st_edit *e, const char *path, const st_write_opts *opts, int always,
			st_diff *diff, st_problems *problems, int *written, st_error *err)
{
	ST_ASSERT_ARG(e);
	commit_target t = {path, opts, NULL, NULL};
	int rc = st__write_opts_check(opts, err);
	if (rc != ST_OK) {
		if (written)
			*written = 0;
		return rc;
	}
	return commit_and_save(e, &t, always, diff, problems, written, err);
}

int st_edit_commit_save_stack(st_edit *e, st_backend *b, const char *stack, int always,
			      st_diff *diff, st_problems *problems, int *written, st_error *err)
{
	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(b);
	commit_target t = {NULL, NULL, b, stack};
	return commit_and_save(e, &t, always, diff, problems, written, err);
}

static int commit_and_save(st_edit *e, const commit_target *t, int always, st_diff *diff,
			   st_problems *problems, int *written, st_error *err)
{
	st_state *s = e->s;
	json_t *old_version = json_incref(json_object_get(s->root, "version"));
	json_t *old_features = json_incref(json_object_get(s->root, "features"));
	int old_v = s->version, changed, rc, used[8];
	json_t *dep, *old_manifest;
	commit_save c;
	st_diff d;

	if (written)
		*written = 0;
	memset(&c, 0, sizeof(c));
	memset(&d, 0, sizeof(d));
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cv, NULL);
	c.e = e;
	c.problems = problems;
	c.err = err;
	st_error_clear(&c.cerr);
	/* The check runs on another thread while the features are worked out and the file is
	 * written. The magic cookie is checked here first, as the check would, then fixed in a
	 * copy of the manifest (the session's view of the state as it began keeps the original);
	 * the check reads the state through its own copy of the container, so that setting the
	 * features (which decide the envelope's version) does not touch what it reads. */
	if (st__integrity_magic(s, &c.p) != ST_OK) {
		json_decref(old_version);
		json_decref(old_features);
		st_problems_clear(&c.p);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	dep = st_state_deployment(s);
	old_manifest = dep ? json_incref(json_object_get(dep, "manifest")) : NULL;
	c.view = *s;
	c.view.container = json_copy(s->container);
	if (json_is_object(old_manifest)) {
		json_t *m = json_copy(old_manifest);
		if (!m || json_object_set_new(dep, "manifest", m))
			c.view.container = (json_decref(c.view.container), NULL);
	}
	if (!c.view.container) {
		json_decref(old_version);
		json_decref(old_features);
		json_decref(old_manifest);
		st_problems_clear(&c.p);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	st_state_fix_magic(s);
	c.threaded = st__threads_ok_for(t->opts ? t->opts->threads : 0) &&
		     json_array_size(resources(e)) >= 500 &&
		     pthread_create(&c.th, NULL, check_main, &c) == 0;
	features_and_diff(e, used, &d);
	st__state_features_set(s, used);
	st__phase("commit: features and diff");
	changed = always || d.count || d.pending_before != d.pending_after || d.other_changed;
	if (changed) {
		/* the check starts once the writer leaves a processor free */
		st__wcfg wc = {0, c.threaded ? open_gate : NULL, &c, NULL};
		rc = save_target(t, s, verdict, &c, &wc, err);
		if (rc != ST_OK && !c.judged && verdict(&c) != ST_OK)
			rc = c.verdict; /* the write failed, and the check too: say the check */
		if (rc == ST_OK && written)
			*written = 1;
	} else {
		rc = verdict(&c);
	}
	if (!c.judged)
		verdict(&c);
	if (c.verdict != ST_OK) {
		/* as st_edit_commit: nothing written, the session rolled back */
		if (old_version)
			json_object_set(s->root, "version", old_version);
		if (old_features)
			st_obj_set_ordered(s->root, ST_K_ENVELOPE, "features",
					   json_incref(old_features));
		else
			json_object_del(s->root, "features");
		s->version = old_v;
		if (json_is_object(old_manifest))
			json_object_set(dep, "manifest", old_manifest);
		if (c.verdict == ST_EINTEGRITY)
			st_edit_rollback(e);
		st_diff_clear(&d);
		rc = c.verdict;
	} else if (diff) {
		*diff = d;
	} else {
		st_diff_clear(&d);
	}
	json_decref(old_version);
	json_decref(old_features);
	json_decref(old_manifest);
	json_decref(c.view.container);
	pthread_mutex_destroy(&c.mu);
	pthread_cond_destroy(&c.cv);
	return rc;
}
