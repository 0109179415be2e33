/*
 * Edit sessions: one transaction over a state (see session.h for the rules operations
 * follow). A resource is copied before it is changed (copy on write), so the session keeps
 * the original objects: the diff compares them by identity (unchanged resources cost nothing)
 * and a rollback puts them back. Resources are named by handles that no operation shifts.
 */
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a set of pointers ---- */

static size_t ph(const void *p)
{
	uintptr_t x = (uintptr_t)p;
	x ^= x >> 16;
	x *= 0x45d9f3bU;
	x ^= x >> 16;
	return (size_t)x;
}

int st__ptrset_add(st__ptrset *s, const void *p)
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

int st__ptrset_has(const st__ptrset *s, const void *p)
{
	if (!s->cap)
		return 0;
	for (size_t k = ph(p) & (s->cap - 1); s->slots[k]; k = (k + 1) & (s->cap - 1))
		if (s->slots[k] == p)
			return 1;
	return 0;
}

void st__ptrset_free(st__ptrset *s)
{
	free(s->slots);
	memset(s, 0, sizeof(*s));
}

/* ---- snapshots ---- */

static const char *dep_key(const st_state *s)
{
	return s->envelope == ST_ENVELOPE_EXPORT ? "deployment" : "latest";
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

void st__snapshot_free(st__snapshot *s)
{
	json_decref(s->key_value);
	json_decref(s->dep);
	json_decref(s->members);
	json_decref(s->res);
	json_decref(s->ops);
	json_decref(s->version);
	json_decref(s->features);
	free(s->ids);
	st__ptrset_free(&s->fresh);
	memset(s, 0, sizeof(*s));
}

static int snapshot_take(st_edit *e, st__snapshot *sn)
{
	st_state *s = e->s;
	json_t *kv = json_object_get(s->container, dep_key(s)), *dep = st_state_deployment(s);
	json_t *res = dep ? json_object_get(dep, "resources") : NULL;
	json_t *ops = dep ? json_object_get(dep, "pending_operations") : NULL;

	memset(sn, 0, sizeof(*sn));
	sn->taken = 1;
	sn->had_key = kv != NULL;
	sn->key_value = json_incref(kv);
	sn->dep = json_incref(dep);
	sn->version = json_incref(json_object_get(s->root, "version"));
	sn->features = json_incref(json_object_get(s->root, "features"));
	sn->s_version = s->version;
	sn->known_absent = s->known_absent;
	sn->had_bytestring = s->had_bytestring;
	sn->other_changed = e->other_changed;
	if ((dep && !(sn->members = json_copy(dep))) ||
	    (json_is_array(res) && !(sn->res = shallow_copy(res))) ||
	    (json_is_array(ops) && !(sn->ops = shallow_copy(ops))))
		goto fail;
	sn->nids = e->nids;
	if (e->nids) {
		if (!(sn->ids = malloc(e->nids * sizeof(*sn->ids))))
			goto fail;
		memcpy(sn->ids, e->ids, e->nids * sizeof(*sn->ids));
	}
	return ST_OK;
fail:
	st__snapshot_free(sn);
	return ST_ENOMEM;
}

/* Puts the state back as the snapshot has it. Out of memory on the way, the state may be
 * left partly restored (the arrays are put back first: they are what matters most). */
static void snapshot_restore(st_edit *e, const st__snapshot *sn)
{
	st_state *s = e->s;
	const char *k;
	json_t *v;

	if (sn->had_key)
		json_object_set(s->container, dep_key(s), sn->key_value);
	else
		json_object_del(s->container, dep_key(s));
	if (sn->dep) {
		json_object_clear(sn->dep);
		json_object_foreach(sn->members, k, v) {
			if (!strcmp(k, "resources") && sn->res)
				json_object_set_new(sn->dep, k, shallow_copy(sn->res));
			else if (!strcmp(k, "pending_operations") && sn->ops)
				json_object_set_new(sn->dep, k, shallow_copy(sn->ops));
			else
				json_object_set(sn->dep, k, v);
		}
	}
	if (sn->version)
		json_object_set(s->root, "version", sn->version);
	if (sn->features)
		st_obj_set_ordered(s->root, ST_K_ENVELOPE, "features", json_incref(sn->features));
	else
		json_object_del(s->root, "features");
	s->version = sn->s_version;
	s->known_absent = sn->known_absent;
	s->had_bytestring = sn->had_bytestring;
	e->other_changed = sn->other_changed;
	if (sn->nids)
		memcpy(e->ids, sn->ids, sn->nids * sizeof(*e->ids));
	e->nids = sn->nids;
	e->pos_stale = 1;
}

/* ---- the session ---- */

int st_edit_begin(st_edit **out, st_state *s, st_changes *report, st_error *err)
{
	ST_ASSERT_ARG_AS(s, "state");
	st_edit *e;
	json_t *res;
	int rc;

	ST_ASSERT_ARG(out);
	*out = NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return st__err(err, ST_ENOMEM, "out of memory");
	e->s = s;
	e->report = report;
	if (s->version < 3) {
		int from = s->version;
		/* the migration builds every resource anew from its members: a lazy state's
		 * skeletons made full first (the state stays as loaded otherwise) */
		if ((rc = st__lazy_inflate_all(s, err)) != ST_OK) {
			st_edit_free(e);
			return rc;
		}
		e->pre_root = json_incref(s->root);
		e->pre_container = s->container;
		e->pre_version = s->version;
		e->pre_known_absent = s->known_absent;
		rc = st_state_migrate(s, NULL, err);
		if (rc) {
			st_edit_free(e);
			return rc;
		}
		st_changes_add(report, "migrated the state from version %d to %d (state edits write "
			       "the current version, as Pulumi's do)", from, s->version);
	}
	res = st_state_resources(s, 0);
	e->nids = e->capids = json_array_size(res);
	e->next_id = e->nids + 1;
	e->ids = malloc((e->capids + 1) * sizeof(*e->ids));
	for (size_t i = 0; e->ids && i < e->nids; i++)
		e->ids[i] = i + 1;
	if (!e->ids || snapshot_take(e, &e->base) != ST_OK) {
		st__edit_abort(e);
		st_edit_free(e);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	e->pos_stale = 1;
	*out = e;
	return ST_OK;
}

void st__edit_hint_refs(st_edit *e, st_strmap *urns, st__ptrset *refs)
{
	st__edit_hint_clear(e);
	e->hint_urns = *urns;
	e->hint_refs = *refs;
	st_strmap_init(urns);
	memset(refs, 0, sizeof(*refs));
	e->hint = 1;
}

void st__edit_hint_clear(st_edit *e)
{
	st_strmap_free(&e->hint_urns);
	st__ptrset_free(&e->hint_refs);
	e->hint = 0;
}

void st_edit_free(st_edit *e)
{
	if (!e)
		return;
	st__snapshot_free(&e->base);
	json_decref(e->pre_root);
	st__ptrset_free(&e->fresh);
	st__edit_hint_clear(e);
	free(e->ids);
	free(e->pos);
	free(e);
}

void st_edit_rollback(st_edit *e)
{
	ST_ASSERT_ARG(e);
	snapshot_restore(e, &e->base);
	st__ptrset_free(&e->fresh);
	st__edit_hint_clear(e);
	e->dirty = 0;
}

void st__edit_abort(st_edit *e)
{
	if (e->base.taken)
		st_edit_rollback(e);
	if (e->pre_root) {
		json_decref(e->s->root);
		e->s->root = e->pre_root;
		e->s->container = e->pre_container;
		e->s->version = e->pre_version;
		e->s->known_absent = e->pre_known_absent;
		e->pre_root = NULL;
	}
}

/* ---- savepoints ---- */

int st__edit_op_begin(st_edit *e, st__edit_op *op, st_error *err)
{
	memset(op, 0, sizeof(*op));
	st__edit_hint_clear(e);
	if (!e->dirty)
		return ST_OK; /* the baseline is the savepoint */
	if (snapshot_take(e, &op->snap) != ST_OK)
		return st__err(err, ST_ENOMEM, "out of memory");
	/* What the session made so far is not changed in place from now on: the operation
	 * copies it again, so that the savepoint's objects stay as they are. */
	op->snap.fresh = e->fresh;
	memset(&e->fresh, 0, sizeof(e->fresh));
	return ST_OK;
}

int st__edit_op_end(st_edit *e, st__edit_op *op, int rc)
{
	if (rc != ST_OK) {
		st__edit_hint_clear(e);
		if (op->snap.taken) {
			snapshot_restore(e, &op->snap);
			st__ptrset_free(&e->fresh);
			e->fresh = op->snap.fresh;
			memset(&op->snap.fresh, 0, sizeof(op->snap.fresh));
		} else {
			st_edit_rollback(e);
		}
	} else if (op->snap.taken) {
		/* the objects made before stay the session's own (those still in place are as
		 * they were: the operation copied what it changed) */
		for (size_t i = 0; i < op->snap.fresh.cap; i++)
			if (op->snap.fresh.slots[i] &&
			    st__ptrset_add(&e->fresh, op->snap.fresh.slots[i]) < 0)
				break; /* (not own: copied again if changed, which is only slower) */
	}
	st__snapshot_free(&op->snap);
	return rc;
}

/* ---- accessors ---- */

st_state *st__edit_state(st_edit *e)
{
	return e->s;
}

json_t *st__edit_resources(st_edit *e)
{
	return st_state_resources(e->s, 0);
}

json_t *st__edit_pending(st_edit *e)
{
	json_t *d = st_state_deployment(e->s);
	json_t *o = d ? json_object_get(d, "pending_operations") : NULL;
	return json_is_array(o) ? o : NULL;
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

/*
 * A lazy state's skeleton at arr[i] (arr the resources) made full before the session copies or
 * replaces it: in place, the same object, so that the baseline and every savepoint (which hold
 * it) see the full resource, the diff by identity compares full resources and a rollback puts
 * the full resource back. -1: out of memory (nothing changed).
 */
static int is_skeleton(st_edit *e, const json_t *v)
{
	const char *p;
	size_t n;
	return v && st__lazy_span(e->s, v, &p, &n);
}

/* skel made the resource `full` in place: full's members, in full's order (st__lazy_inflate
 * gives the skeleton's own values for all but inputs and outputs, so a caller holding their
 * strings keeps them; a skeleton's inputs and outputs may be pruned: full's are taken). */
static int fill(json_t *skel, json_t *full)
{
	size_t n = json_object_size(full), i = 0;
	const char **keys = malloc((n + 1) * sizeof(*keys));
	json_t **vals = malloc((n + 1) * sizeof(*vals)), *v;
	const char *k;
	int rc = 0;

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -1;
	}
	json_object_foreach(full, k, v) {
		keys[i] = k;
		vals[i++] = json_incref(v);
	}
	json_object_clear(skel);
	for (size_t j = 0; j < i; j++)
		if (json_object_set_new(skel, keys[j], vals[j]))
			rc = -1;
	free(keys);
	free(vals);
	return rc;
}

static int inflate_at(st_edit *e, json_t *arr, size_t i)
{
	json_t *v = json_array_get(arr, i), *now;
	int rc = 0;

	if (!is_skeleton(e, v) || arr != st__edit_resources(e))
		return 0;
	json_incref(v);
	if (st__lazy_inflate(e->s, i, NULL) != ST_OK) {
		json_decref(v);
		return -1;
	}
	/* the table puts a new object in its place: its members moved into the skeleton, which
	 * goes back (st__lazy_inflate dropped its registration) */
	now = json_array_get(arr, i);
	if (now != v && (fill(v, now) < 0 || json_array_set(arr, i, v) < 0))
		rc = -1;
	json_decref(v);
	return rc;
}

void st__edit_base_valid(st_edit *e)
{
	if (!e->dirty)
		e->base_valid = 1;
}

int st__edit_inflate(st_edit *e, size_t i, st_error *err)
{
	if (inflate_at(e, st__edit_resources(e), i) < 0)
		return st__err(err, ST_ENOMEM, "out of memory");
	return ST_OK;
}

int st__edit_inflate_res(st_edit *e, const json_t *r, st_error *err)
{
	json_t *res = st__edit_resources(e);
	size_t n = json_array_size(res);
	if (!is_skeleton(e, r))
		return ST_OK;
	for (size_t i = 0; i < n; i++)
		if (json_array_get(res, i) == r)
			return st__edit_inflate(e, i, err);
	return ST_OK;
}

json_t *st__edit_own(st_edit *e, json_t *arr, size_t i)
{
	json_t *v = json_array_get(arr, i), *c;
	if (!v || st__ptrset_has(&e->fresh, v))
		return v;
	if (inflate_at(e, arr, i) < 0)
		return NULL;
	c = json_deep_copy(v);
	if (!c || st__ptrset_add(&e->fresh, c) < 0 || json_array_set_new(arr, i, c) < 0) {
		json_decref(c);
		return NULL;
	}
	e->dirty = 1;
	return c;
}

int st__edit_is_own(st_edit *e, const json_t *v)
{
	return st__ptrset_has(&e->fresh, v);
}

int st__edit_put(st_edit *e, json_t *arr, size_t i, json_t *v)
{
	if (json_array_get(arr, i) == v) {
		json_decref(v);
		return 0;
	}
	if (inflate_at(e, arr, i) < 0) {
		json_decref(v);
		return -1;
	}
	e->dirty = 1;
	return json_array_set_new(arr, i, v) < 0 ? -1 : 0;
}

/* ---- handles ---- */

static int refresh_pos(st_edit *e)
{
	if (!e->pos_stale)
		return 0;
	if (e->npos < e->next_id) {
		size_t *np = realloc(e->pos, e->next_id * sizeof(*np));
		if (!np)
			return -1;
		e->pos = np;
		e->npos = e->next_id;
	}
	memset(e->pos, 0, e->npos * sizeof(*e->pos));
	for (size_t i = 0; i < e->nids; i++)
		e->pos[e->ids[i]] = i + 1;
	e->pos_stale = 0;
	return 0;
}

size_t st__edit_index_of(st_edit *e, st_handle h)
{
	if (!h.id || h.id >= e->next_id || refresh_pos(e) < 0 || !e->pos[h.id])
		return (size_t)-1;
	return e->pos[h.id] - 1;
}

int st_edit_handle_at(st_edit *e, size_t index, st_handle *out, st_error *err)
{
	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(out);
	out->id = 0;
	if (index >= e->nids)
		return st__err(err, ST_ENOTFOUND, "no resource at index %zu", index);
	out->id = e->ids[index];
	return ST_OK;
}

int st_edit_handle_of(st_edit *e, const char *urn, st_handle *out, st_error *err)
{
	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(urn);
	ST_ASSERT_ARG(out);
	json_t *res = st__edit_resources(e), *r;
	size_t i, live = 0, any = 0, hit_live = 0, hit_any = 0;

	out->id = 0;
	json_array_foreach(res, i, r) {
		const char *u = st_json_str(r, "urn");
		if (!u || strcmp(u, urn))
			continue;
		if (!any++)
			hit_any = i;
		if (!st_json_bool(r, "delete") && !live++)
			hit_live = i;
	}
	if (!any)
		return st__err(err, ST_ENOTFOUND, "no resource with URN %s", urn);
	if (live > 1 || (!live && any > 1))
		return st__err(err, ST_EAMBIGUOUS,
			       "the URN %s names %zu resources; give one by its handle", urn,
			       live ? live : any);
	out->id = e->ids[live ? hit_live : hit_any];
	return ST_OK;
}

const json_t *st_edit_resource(st_edit *e, st_handle h)
{
	size_t i;
	ST_ASSERT_ARG(e);
	i = st__edit_index_of(e, h);
	return i == (size_t)-1 ? NULL : json_array_get(st__edit_resources(e), i);
}

/* ---- structural changes ---- */

/* Replaces the whole resources array (stolen) whose handles are ids (stolen, n of them). */
static int set_resources(st_edit *e, json_t *arr, size_t *ids, size_t n, st_error *err)
{
	json_t *d = st_state_deployment(e->s);
	int rc = 0;
	if (!d) {
		json_decref(arr);
		free(ids);
		return st__err(err, ST_EINVAL, "the state has no deployment");
	}
	if (json_array_size(arr))
		rc = st_obj_set_ordered(d, ST_K_DEPLOYMENT, "resources", arr);
	else {
		json_decref(arr);
		json_object_del(d, "resources");
	}
	if (rc) {
		free(ids);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	free(e->ids);
	e->ids = ids; /* (allocated with the old capacity: a snapshot's handles fit) */
	e->nids = n;
	e->pos_stale = 1;
	e->dirty = 1;
	return ST_OK;
}

int st__edit_remove(st_edit *e, const char *drop, st_error *err)
{
	json_t *res = st__edit_resources(e), *keep = json_array(), *r;
	size_t *ids = malloc((e->capids + 1) * sizeof(*ids)), n = 0, i;

	if (!keep || !ids)
		goto oom;
	json_array_foreach(res, i, r) {
		if (drop[i])
			continue;
		if (json_array_append(keep, r) < 0)
			goto oom;
		ids[n++] = e->ids[i];
	}
	return set_resources(e, keep, ids, n, err);
oom:
	json_decref(keep);
	free(ids);
	return st__err(err, ST_ENOMEM, "out of memory");
}

int st__edit_reorder(st_edit *e, const size_t *order, st_error *err)
{
	json_t *res = st__edit_resources(e), *sorted = json_array();
	size_t *ids = malloc((e->capids + 1) * sizeof(*ids)), n = e->nids;

	if (!sorted || !ids)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		if (json_array_append(sorted, json_array_get(res, order[i])) < 0)
			goto oom;
		ids[i] = e->ids[order[i]];
	}
	return set_resources(e, sorted, ids, n, err);
oom:
	json_decref(sorted);
	free(ids);
	return st__err(err, ST_ENOMEM, "out of memory");
}

int st__edit_insert(st_edit *e, size_t at, json_t *r, st_handle *h, st_error *err)
{
	json_t *res = st_state_resources(e->s, 1);
	int rc;
	if (!res || !r || st__ptrset_add(&e->fresh, r) < 0)
		goto oom;
	if (e->nids == e->capids) {
		size_t nc = e->capids ? e->capids * 2 : 16;
		size_t *ni = realloc(e->ids, (nc + 1) * sizeof(*ni));
		if (!ni)
			goto oom;
		e->ids = ni;
		e->capids = nc;
	}
	if (at > e->nids)
		at = e->nids;
	rc = at == e->nids ? json_array_append_new(res, r) : json_array_insert_new(res, at, r);
	r = NULL; /* the array took it (or freed it) */
	if (rc < 0)
		goto oom;
	memmove(e->ids + at + 1, e->ids + at, (e->nids - at) * sizeof(*e->ids));
	e->ids[at] = e->next_id++;
	e->nids++;
	if (h)
		h->id = e->ids[at];
	e->pos_stale = 1;
	e->dirty = 1;
	return ST_OK;
oom:
	json_decref(r);
	return st__err(err, ST_ENOMEM, "out of memory");
}

int st__edit_set_pending(st_edit *e, json_t *ops, st_error *err)
{
	json_t *d = st_state_deployment(e->s);
	e->dirty = 1;
	if (!d) {
		json_decref(ops);
		return st__err(err, ST_EINVAL, "the state has no deployment");
	}
	if (!json_array_size(ops)) {
		json_decref(ops);
		json_object_del(d, "pending_operations");
		return ST_OK;
	}
	if (st_obj_set_ordered(d, ST_K_DEPLOYMENT, "pending_operations", ops) < 0)
		return st__err(err, ST_ENOMEM, "out of memory");
	return ST_OK;
}

int st__edit_set_member(st_edit *e, const char *key, json_t *v, st_error *err)
{
	json_t *d = st_state_deployment(e->s);
	if (!d) {
		json_decref(v);
		return st__err(err, ST_EINVAL, "the state has no deployment");
	}
	e->dirty = 1;
	if (!v) {
		if (json_object_get(d, key))
			e->other_changed = 1;
		json_object_del(d, key);
		return ST_OK;
	}
	if (!st__json_equal(v, json_object_get(d, key)))
		e->other_changed = 1;
	if (st_obj_set_ordered(d, ST_K_DEPLOYMENT, key, v) < 0)
		return st__err(err, ST_ENOMEM, "out of memory");
	return ST_OK;
}

int st__edit_fix_magic(st_edit *e, st_error *err)
{
	json_t *d = st_state_deployment(e->s), *m, *c;
	const char *ver;
	char magic[65];

	if (!d || !json_is_object(m = json_object_get(d, "manifest")))
		return ST_OK;
	ver = st_json_str(m, "version");
	st_magic_for_version(ver, magic);
	if ((!json_object_get(m, "magic") && !magic[0]) ||
	    (st_json_str(m, "magic") && !strcmp(st_json_str(m, "magic"), magic)))
		return ST_OK;
	if (!(c = json_copy(m)) || json_object_set_new(c, "magic", json_string(magic)) ||
	    json_object_set_new(d, "manifest", c)) /* (in place: not a change of its own) */
		return st__err(err, ST_ENOMEM, "out of memory");
	e->dirty = 1;
	return ST_OK;
}

/* ---- the root stack ---- */

int st__edit_root_stack(st_edit *e, const char *stack, const char *project, const char **urn,
			int *created, st_error *err)
{
	json_t *res = st__edit_resources(e), *r;
	size_t i;
	int rc;

	*created = 0;
	json_array_foreach(res, i, r)
		if (st__is_root_stack(r)) {
			*urn = st_json_str(r, "urn");
			return ST_OK;
		}
	r = st__root_stack_new(stack, project);
	if (!r)
		return st__err(err, ST_ENOMEM, "out of memory");
	if ((rc = st__edit_insert(e, 0, r, NULL, err)) != ST_OK)
		return rc;
	*created = 1;
	*urn = st_json_str(json_array_get(st__edit_resources(e), 0), "urn");
	return ST_OK;
}

/* ---- replacing the whole deployment ---- */

int st_edit_replace_deployment(st_edit *e, json_t *dep, st_error *err)
{
	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG_AS(dep, "deployment");
	json_t *before = e->base.members;
	const char *k;
	json_t *v;
	size_t n, cap, *ids;
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
	n = json_array_size(json_object_get(dep, "resources"));
	cap = n > e->capids ? n : e->capids; /* (never less: a snapshot's handles fit) */
	if (!(ids = malloc((cap + 1) * sizeof(*ids)))) {
		json_decref(dep);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	if (json_object_set_new(e->s->container, dep_key(e->s), dep)) {
		free(ids);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	/* every resource is new: new handles */
	for (size_t i = 0; i < n; i++)
		ids[i] = e->next_id++;
	free(e->ids);
	e->ids = ids;
	e->nids = n;
	e->capids = cap;
	e->pos_stale = 1;
	e->dirty = 1;
	if (!e->base.dep) {
		e->other_changed = 1;
		return ST_OK;
	}
	/* Did anything besides resources and pending operations change? */
	json_object_foreach(dep, k, v) {
		if (!strcmp(k, "resources") || !strcmp(k, "pending_operations"))
			continue;
		if (!st__json_equal(v, json_object_get(before, k)))
			e->other_changed = 1;
	}
	json_object_foreach(before, k, v) {
		if (!strcmp(k, "resources") || !strcmp(k, "pending_operations"))
			continue;
		if (!json_object_get(dep, k))
			e->other_changed = 1;
	}
	return ST_OK;
}
