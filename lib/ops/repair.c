/*
 * Pulumi's `state repair` (pkg/resource/deploy/snapshot.go Toposort and Prune), made
 * deterministic: resources sorted so every reference points backwards (a post-order walk in
 * file order), then references to missing resources dropped and missing parents cleared.
 */
#include "session.h"

#include <stdlib.h>
#include <string.h>

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

/* ---- pruning ---- */

/* What the prune knows: every URN already placed, mapped to its (possibly new) URN. The
 * strings are owned by `owned`. */
typedef struct prune {
	st_edit *e;
	st_strmap seen;
	char **owned;
	size_t nowned;
	const char *urn; /* the resource being pruned */
} prune;

static const char *seen_as(prune *p, const char *u, size_t len)
{
	st_strmap_slot *sl = st_strmap_getn(&p->seen, u, len);
	return sl ? (const char *)sl->p : NULL;
}

/* Is anything to drop or to map among the references (a read-only look)? */
static int needs_prune_cb(void *ctx, st_ref *ref)
{
	const char *to = seen_as(ctx, ref->value, ref->len);
	return !to || strcmp(to, ref->value) ? ST_REF_STOP : ST_REF_NEXT;
}

static int prune_cb(void *ctx, st_ref *ref)
{
	prune *p = ctx;
	const char *to = seen_as(p, ref->value, ref->len);
	static const char *const what[] = {"", "dependency", "property dependency", "",
					   "deletedWith", "", "", "", "replaceWith"};
	if (!to) {
		st__edit_report(p->e, "%s: dropped %s%s%s%s on %s (missing)", p->urn,
				what[ref->kind >> 1], ref->key ? " (" : "", ref->key ? ref->key : "",
				ref->key ? ")" : "", ref->value);
		return ST_REF_REMOVE;
	}
	if (!strcmp(to, ref->value))
		return ST_REF_NEXT;
	st__edit_report(p->e, "%s: %s%s%s%s on %s now names its new URN %s", p->urn,
			what[ref->kind >> 1], ref->key ? " (" : "", ref->key ? ref->key : "",
			ref->key ? ")" : "", ref->value, to);
	return st__ref_set(ref, to);
}

/* The URN of resource `pu` under a parent of qualified type pqt (NULL: none). New. */
static char *urn_under(const st_urn *pu, const char *pqt, size_t pqtl)
{
	char *pq = pqt ? st_strndup(pqt, pqtl) : NULL, *ty = st_strndup(pu->type, pu->type_len);
	char *nm = st_strndup(pu->name, pu->name_len), *stk = st_strndup(pu->stack, pu->stack_len);
	char *prj = st_strndup(pu->project, pu->project_len), *u = NULL;
	if ((pq || !pqt) && ty && nm && stk && prj)
		u = st_urn_new(stk, prj, pq, ty, nm);
	free(pq);
	free(ty);
	free(nm);
	free(stk);
	free(prj);
	return u;
}

/* The parent: cleared when missing (the URN loses its parent-type chain), or the parent's new
 * URN when it has one. *r becomes the session's own copy when changed; *newurn is new. */
static int reparent(prune *p, json_t *res, size_t i, json_t **r, char **newurn)
{
	const char *urn = st_json_str(*r, "urn"), *parent = st_json_str(*r, "parent"), *np;
	st_urn pu, pp;

	*newurn = NULL;
	if (!parent || !*parent || !urn || st_urn_parse(urn, &pu) != ST_OK)
		return ST_OK;
	np = seen_as(p, parent, strlen(parent));
	if (np && !strcmp(np, parent))
		return ST_OK;
	if (!(*r = st__edit_own(p->e, res, i)))
		return ST_ENOMEM;
	if (!np) {
		if (!(*newurn = urn_under(&pu, NULL, 0)))
			return ST_ENOMEM;
		st__edit_report(p->e, "%s: parent %s is missing; cleared (new URN %s)", urn, parent,
				*newurn);
		json_object_del(*r, "parent");
		return ST_OK;
	}
	if (st_urn_parse(np, &pp) == ST_OK && !(*newurn = urn_under(&pu, pp.qtype, pp.qtype_len)))
		return ST_ENOMEM;
	st__edit_report(p->e, "%s: reparented to %s (new URN %s)", urn, np, *newurn ? *newurn : "?");
	return json_object_set_new(*r, "parent", json_string(np)) ? ST_ENOMEM : ST_OK;
}

/* Records `urn` as placed, known from now on as `as` (owned by the prune). */
static int place(prune *p, const char *urn, char *as)
{
	char *key = st_strdup(urn);
	st_strmap_slot *sl;
	int created;
	if (!key) {
		free(as);
		return ST_ENOMEM;
	}
	p->owned[p->nowned++] = key;
	if (as)
		p->owned[p->nowned++] = as;
	if (!(sl = st_strmap_put(&p->seen, key, &created)))
		return ST_ENOMEM;
	sl->p = as ? as : key;
	if (as) {
		if (!(sl = st_strmap_put(&p->seen, as, &created)))
			return ST_ENOMEM;
		sl->p = as;
	}
	return ST_OK;
}

/* One resource, in sorted order: its parent, then its other references (the provider's
 * dangling references are kept, as Pulumi keeps them). */
static int prune_one(prune *p, json_t *res, size_t i)
{
	json_t *r = json_array_get(res, i);
	char *newurn = NULL, *urn = st_json_str(r, "urn") ? st_strdup(st_json_str(r, "urn")) : NULL;
	unsigned what = (ST_REF_URNS & ~(unsigned)ST_REF_PARENT) | ST_REF_SORTED;
	int rc = st_json_str(r, "urn") && !urn ? ST_ENOMEM : ST_OK;

	if (rc == ST_OK)
		rc = reparent(p, res, i, &r, &newurn);
	if (rc == ST_OK && st__ref_foreach(r, what, needs_prune_cb, p) == 1) {
		if (!(r = st__edit_own(p->e, res, i)))
			rc = ST_ENOMEM;
		p->urn = st_json_str(r, "urn");
		if (rc == ST_OK && st__ref_foreach(r, what & ~(unsigned)ST_REF_SORTED, prune_cb, p) < 0)
			rc = ST_ENOMEM;
	}
	if (rc == ST_OK && newurn && json_object_set_new(r, "urn", json_string(newurn)))
		rc = ST_ENOMEM;
	if (rc == ST_OK && urn) {
		rc = place(p, urn, newurn); /* (takes newurn) */
		newurn = NULL;
	}
	free(urn);
	free(newurn);
	return rc;
}

static int prune_all(st_edit *e, st_error *err)
{
	json_t *res = st__edit_resources(e);
	size_t n = json_array_size(res);
	prune p;
	int rc = ST_OK;

	memset(&p, 0, sizeof(p));
	p.e = e;
	st_strmap_init(&p.seen);
	if (!(p.owned = calloc(n * 2 + 1, sizeof(*p.owned))))
		rc = ST_ENOMEM;
	for (size_t i = 0; i < n && rc == ST_OK; i++)
		rc = prune_one(&p, res, i);
	st_strmap_free(&p.seen);
	for (size_t i = 0; i < p.nowned; i++)
		free(p.owned[i]);
	free(p.owned);
	return rc == ST_OK ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}

/* ---- repair ---- */

static int sort(st_edit *e, st_error *err)
{
	json_t *res = st__edit_resources(e);
	size_t n = json_array_size(res), *order = malloc((n + 1) * sizeof(*order));
	int rc;

	if (!order)
		return st__err(err, ST_ENOMEM, "out of memory");
	if ((rc = topo_sort(res, order, err)) == ST_OK) {
		/* Report what had to move up; the rest only shifts down to make room. */
		for (size_t i = 0; i < n; i++)
			if (order[i] > i)
				st__edit_report(e, "moved %s up from #%zu to #%zu",
						st_json_str(json_array_get(res, order[i]), "urn"),
						order[i], i);
		rc = st__edit_reorder(e, order, err);
	}
	free(order);
	return rc;
}

/* The magic is recomputed as every write recomputes it; here it is also reported, so that a
 * state whose only problem is its magic is written (a change nobody reports is not saved). */
static int fix_magic(st_edit *e, st_error *err)
{
	json_t *d = st_state_deployment(st__edit_state(e));
	json_t *m = d ? json_object_get(d, "manifest") : NULL;
	char *was = st_json_str(m, "magic") ? st_strdup(st_json_str(m, "magic")) : NULL;
	int rc = st__edit_fix_magic(e, err);

	m = d ? json_object_get(d, "manifest") : NULL;
	if (rc == ST_OK && json_is_object(m) &&
	    strcmp(was ? was : "", st_json_str(m, "magic") ? st_json_str(m, "magic") : ""))
		st__edit_report(e, "recomputed the manifest magic (it did not match the "
				   "manifest version)");
	free(was);
	return rc;
}

static int repair(st_edit *e, st_error *err)
{
	int rc;
	if (json_array_size(st__edit_resources(e)) &&
	    ((rc = sort(e, err)) != ST_OK || (rc = prune_all(e, err)) != ST_OK))
		return rc;
	return fix_magic(e, err);
}

int st_edit_repair(st_edit *e, st_error *err)
{
	st__edit_op op;
	int rc;
	ST_ASSERT_ARG(e);
	if ((rc = st__edit_op_begin(e, &op, err)) != ST_OK)
		return rc;
	return st__edit_op_end(e, &op, repair(e, err));
}
