/*
 * Moving resources between two states, with the semantics of `pulumi state move`
 * (pkg/cmd/pulumi/state/state_move.go), plus what it lacks: pending operations of moved
 * resources move with them, replaceWith is rewritten rather than duplicated, and secrets are
 * re-encrypted for the destination.
 */
#include "internal.h"

#include <pthread.h>

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void st_move_report_clear(st_move_report *r)
{
	st_changes_clear(&r->plan);
	st_changes_clear(&r->broken_source);
	st_changes_clear(&r->broken_dest);
	st_changes_clear(&r->warnings);
	for (size_t i = 0; i < r->nmoved; i++)
		free(r->moved_urns[i]);
	free(r->moved_urns);
	memset(r, 0, sizeof(*r));
}

/* ---- helpers ---- */

typedef struct ctx {
	json_t *sres;        /* source resources */
	size_t n;
	char *moved;         /* per source index: 1 moved */
	st_strmap src_index; /* urn -> first index (a) */
	st_strmap moved_urns;
	st_prefilter *moved_f; /* moved_urns' */
	st_strmap urnmap;    /* old urn -> new urn (p, owned) */
	st_strmap provmap;   /* old ref -> new ref (p, owned) */
	char *sstack, *sproj, *dstack, *dproj;
	char *droot;         /* the destination's root stack URN */
	st_move_report *rep;
} ctx;


static char *ref_of(json_t *r)
{
	return st__provider_ref(st_json_str(r, "urn"), st_json_str(r, "id"));
}

/* Removes from r every edge to a URN in `gone` (but its parent: the caller reparents); each
 * removal is reported under `where`, in Pulumi's words. */
typedef struct break_ctx {
	const st_strmap *gone;
	st_changes *where;
	const char *urn;
} break_ctx;

static int break_cb(void *p, st_ref *ref)
{
	break_ctx *c = p;
	if (!st_strmap_getn(c->gone, ref->value, ref->len))
		return ST_REF_NEXT;
	switch (ref->kind) {
	case ST_REF_DEPENDENCY:
		st_changes_add(c->where, "  - %s has a dependency on %s", c->urn, ref->value);
		break;
	case ST_REF_PROPERTY_DEPENDENCY:
		st_changes_add(c->where, "  - %s (%s) has a property dependency on %s", c->urn,
			       ref->key, ref->value);
		break;
	case ST_REF_DELETED_WITH:
		st_changes_add(c->where, "  - %s is marked as deleted with %s", c->urn, ref->value);
		break;
	default:
		st_changes_add(c->where, "  - %s is marked as replace with %s", c->urn, ref->value);
		break;
	}
	return ST_REF_REMOVE;
}

static int break_edges(json_t *r, const st_strmap *gone, st_changes *where)
{
	break_ctx c = {gone, where, st_json_str(r, "urn")};
	int rc = st__ref_foreach(r, (ST_REF_URNS & ~ST_REF_PARENT) | ST_REF_SORTED, break_cb, &c);
	return rc < 0 ? rc : ST_OK;
}

/* Maps every reference of r through urnmap/provmap (only what is mapped). */
static int map_refs(ctx *c, json_t *r)
{
	return st__ref_rewrite(r, &c->urnmap, &c->provmap, NULL);
}

static void free_map_values(st_strmap *m, int keys_too)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots && m->slots[i].hash) {
			free(m->slots[i].p);
			if (keys_too)
				free((char *)m->slots[i].key);
		}
	st_strmap_free(m);
}

/* Adds a copy of `key` to m (kept in the slot's p, freed by free_map_values), for keys whose
 * string the caller frees. */
static int put_copy(st_strmap *m, const char *key)
{
	int created;
	char *k = st_strdup(key);
	st_strmap_slot *sl = k ? st_strmap_put(m, k, &created) : NULL;
	if (!sl) {
		free(k);
		return ST_ENOMEM;
	}
	if (created)
		sl->p = k;
	else
		free(k);
	return ST_OK;
}

/* ---- the move ---- */

static int select_resources(ctx *c, const st_move_opts *o, st_error *err)
{
	json_t *r;
	size_t i, hits = 0;

	for (size_t p = 0; p < o->npatterns; p++) {
		const char *pat = o->patterns[p];
		size_t here = 0;
		int glob = strpbrk(pat, "*?[") != NULL;
		/* the pattern's literal start: a URN without it cannot match (fnmatch, which may
		 * go through wide characters, is asked only about the others) */
		size_t lit = strcspn(pat, "*?[\\");
		json_array_foreach(c->sres, i, r) {
			const char *u = st_json_str(r, "urn");
			if (!u || (glob ? strncmp(u, pat, lit) != 0 || fnmatch(pat, u, 0) != 0
					: strcmp(pat, u) != 0))
				continue;
			if (st_type_is_provider(st_json_str(r, "type")))
				return st__err(err, ST_EINVAL,
					       "cannot move providers. Only resources can be moved, "
					       "and providers will be included automatically (%s)",
					       u);
			c->moved[i] = 1;
			here++;
		}
		if (!here)
			st_changes_add(&c->rep->warnings, "Resource %s not found in source stack",
				       pat);
		hits += here;
	}
	if (!hits)
		return st__err(err, ST_ENOTFOUND, "no resources found to move");
	return ST_OK;
}

static void expand(ctx *c, const st_move_opts *o)
{
	json_t *r;
	size_t i;
	int changed;

	if (o->include_parents) {
		/* ancestors, except the root stack and providers */
		do {
			changed = 0;
			json_array_foreach(c->sres, i, r) {
				const char *par = c->moved[i] ? st_json_str(r, "parent") : NULL;
				st_strmap_slot *ps = par ? st_strmap_get(&c->src_index, par) : NULL;
				if (!ps || c->moved[ps->a])
					continue;
				json_t *pr = json_array_get(c->sres, ps->a);
				if (st__is_root_stack(pr) || st_type_is_provider(st_json_str(pr, "type")))
					continue;
				c->moved[ps->a] = 1;
				changed = 1;
			}
		} while (changed);
	}
	/* every descendant (a fixed point: an invalid order would need more passes) */
	do {
		changed = 0;
		json_array_foreach(c->sres, i, r) {
			const char *par = st_json_str(r, "parent");
			st_strmap_slot *ps = par ? st_strmap_get(&c->src_index, par) : NULL;
			if (c->moved[i] || !ps || !c->moved[ps->a] ||
			    st_type_is_provider(st_json_str(r, "type")))
				continue;
			c->moved[i] = 1;
			changed = 1;
		}
	} while (changed);
	/* the root stack itself never moves: its children do */
	json_array_foreach(c->sres, i, r)
		if (c->moved[i] && st__is_root_stack(r))
			c->moved[i] = 0;
}

/* New URN: destination stack/project, the (new) parent's type chain. */
static char *new_urn(ctx *c, json_t *r, const char *new_parent)
{
	st_urn u, pu;
	char *ty, *nm, *pqt = NULL, *res;
	if (st_urn_parse(st_json_str(r, "urn"), &u) != ST_OK)
		return NULL;
	ty = st_strndup(u.type, u.type_len);
	nm = st_strndup(u.name, u.name_len);
	if (new_parent && st_urn_parse(new_parent, &pu) == ST_OK)
		pqt = st_strndup(pu.qtype, pu.qtype_len);
	res = st_urn_new(c->dstack, c->dproj, pqt, ty, nm);
	free(ty);
	free(nm);
	free(pqt);
	return res;
}

static int secrets_same(const json_t *a, const json_t *b)
{
	return (!a && !b) || (a && b && json_equal(a, b));
}

/* The integrity check of two states, side by side on two threads when they are big. */
typedef struct check_job {
	st_state *s;
	st_problems *p;
} check_job;

static void *check_main(void *arg)
{
	check_job *j = arg;
	st_integrity_check(j->s, j->p, NULL);
	return NULL;
}

static void check_both(st_state *a, st_problems *pa, st_state *b, st_problems *pb)
{
	check_job jb = {b, pb};
	pthread_t th;
	int threaded = st__threads_ok() &&
		       json_array_size(st_state_resources(a, 0)) +
				       json_array_size(st_state_resources(b, 0)) >= 1000 &&
		       pthread_create(&th, NULL, check_main, &jb) == 0;
	st_integrity_check(a, pa, NULL);
	if (threaded)
		pthread_join(th, NULL);
	else
		check_main(&jb);
}

int st_move(st_state *src, const char *src_path, st_state *dst, const char *dst_path,
	    const st_move_opts *o, st_move_report *rep, st_error *err)
{
	ST_ASSERT_ARG(src);
	ST_ASSERT_ARG(dst);
	ctx cx, *c = &cx;
	json_t *dres_old, *new_src = NULL, *new_dst = NULL, *r;
	json_t *sdep, *ddep, *ssp, *dsp;
	st_strmap dst_urns, stay;
	json_t *saved_s = NULL, *saved_d = NULL;
	int had_ddep = 0;
	size_t i;
	int rc = ST_OK, created;
	st_problems p = {0}, p2 = {0};
	st_error nerr;

	memset(c, 0, sizeof(*c));
	memset(rep, 0, sizeof(*rep));
	if ((rc = st__opts_version(o->version, ST_MOVE_OPTS_VERSION, "st_move_opts", err)))
		return rc;
	c->rep = rep;
	st_strmap_init(&c->src_index);
	st_strmap_init(&c->moved_urns);
	st_strmap_init(&c->urnmap);
	st_strmap_init(&c->provmap);
	st_strmap_init(&dst_urns);
	st_strmap_init(&stay);

	/* Names (a stack that names none is told here, in a message of our own). */
	st_error_clear(&nerr);
	rc = st_stack_names(src, o->source_stack, src_path, &c->sstack, &c->sproj, &nerr);
	if (rc == ST_ENOTFOUND)
		rc = st__err(err, ST_EINVAL, "cannot tell the source's stack and project; add "
			     "--source-stack PROJECT/STACK");
	else if (rc == ST_OK)
		rc = st_stack_names(dst, o->dest_stack, dst_path, &c->dstack, &c->dproj, &nerr);
	if (rc == ST_ENOTFOUND)
		rc = st__err(err, ST_EINVAL,
			     "cannot tell the destination's stack and project: it has no "
			     "resources and no name of its own; add --dest-stack PROJECT/STACK");
	else if (rc)
		st__err_copy(err, &nerr);
	if (rc)
		goto out;
	/* Both must be valid (Pulumi refuses otherwise). */
	check_both(src, &p, dst, &p2);
	st__phase("move: both checked");
	if (p.errors) {
		rc = st__err(err, ST_EINTEGRITY, "failed to verify integrity of source snapshot: %s "
			     "(statetool repair can fix it)", p.items[0].message);
		goto out;
	}
	if (p2.errors) {
		rc = st__err(err, ST_EINTEGRITY, "failed to verify integrity of destination "
			     "snapshot: %s (statetool repair can fix it)", p2.items[0].message);
		goto out;
	}
	st_problems_clear(&p);
	st_problems_clear(&p2);
	c->sres = st_state_resources(src, 0);
	c->n = json_array_size(c->sres);
	if (!c->n) {
		rc = st__err(err, ST_ENOTFOUND, "source stack has no resources");
		goto out;
	}
	c->moved = calloc(c->n, 1);
	c->moved_f = calloc(1, sizeof(*c->moved_f));
	if (!c->moved || !c->moved_f) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	json_array_foreach(c->sres, i, r) {
		const char *u = st_json_str(r, "urn");
		st_strmap_slot *sl = u ? st_strmap_put(&c->src_index, u, &created) : NULL;
		if (sl && created)
			sl->a = i;
	}
	if ((rc = select_resources(c, o, err)) != ST_OK)
		goto out;
	expand(c, o);

	/* The destination's resources and root. */
	dres_old = st_state_resources(dst, 0);
	json_array_foreach(dres_old, i, r) {
		const char *u = st_json_str(r, "urn");
		st_strmap_slot *sl = u ? st_strmap_put(&dst_urns, u, &created) : NULL;
		if (sl)
			sl->a = i + 1; /* the last resource of that URN */
		if (st__is_root_stack(r) && !c->droot)
			c->droot = st_strdup(u);
	}
	new_dst = json_array();
	new_src = json_array();
	if (!c->droot) {
		c->droot = st_asprintf("urn:pulumi:%s::%s::" ST_ROOT_STACK_TYPE "::%s-%s", c->dstack,
				       c->dproj, c->dproj, c->dstack);
		json_t *root = json_object();
		json_object_set_new(root, "urn", json_string(c->droot));
		json_object_set_new(root, "custom", json_false());
		json_object_set_new(root, "type", json_string(ST_ROOT_STACK_TYPE));
		json_array_append_new(new_dst, root);
		st_strmap_put(&dst_urns, c->droot, &created);
		st_changes_add(&rep->plan, "create the destination's root stack %s", c->droot);
	}
	json_array_foreach(dres_old, i, r)
		json_array_append(new_dst, r);

	/* What moves; what stays. */
	json_array_foreach(c->sres, i, r) {
		const char *u = st_json_str(r, "urn");
		if (!u)
			continue;
		if (c->moved[i] && !st_strmap_put_f(&c->moved_urns, c->moved_f, u, &created)) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto out;
		}
	}
	json_array_foreach(c->sres, i, r) {
		const char *u = st_json_str(r, "urn");
		if (u && !c->moved[i])
			st_strmap_put(&stay, u, &created);
	}

	/* Source: everything not moved, minus edges to what moved (copied only when it has
	 * such an edge). */
	json_array_foreach(c->sres, i, r) {
		if (c->moved[i])
			continue;
		if (!st__refers(r, &c->moved_urns, c->moved_f, NULL, NULL)) {
			json_array_append(new_src, r);
			continue;
		}
		json_t *copy = st__ref_copy(r);
		if (!copy) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto out;
		}
		size_t before = rep->broken_source.count;
		break_edges(copy, &c->moved_urns, &rep->broken_source);
		if (rep->broken_source.count > before) {
			json_array_append_new(new_src, copy);
		} else {
			json_decref(copy);
			json_array_append(new_src, r);
		}
	}

	/* Providers used by moved resources, in source order: copied, or reused. */
	st_strmap used;
	st_strmap_init(&used);
	json_array_foreach(c->sres, i, r) {
		const char *pr = c->moved[i] ? st_json_str(r, "provider") : NULL;
		if (pr)
			st_strmap_put(&used, pr, &created);
	}
	json_array_foreach(c->sres, i, r) {
		char *ref, *nu, *nref;
		if (!st_type_is_provider(st_json_str(r, "type")))
			continue;
		ref = ref_of(r);
		if (!ref || !st_strmap_get(&used, ref)) {
			free(ref);
			continue;
		}
		json_t *copy = json_deep_copy(r);
		break_edges(copy, &stay, &rep->broken_dest);
		st_obj_set_ordered(copy, ST_K_RESOURCE, "parent", json_string(c->droot));
		nu = new_urn(c, r, NULL);
		const char *id = st_json_str(r, "id");
		nref = nu ? st__provider_ref(nu, id) : NULL;
		if (!nu || !nref) {
			free(ref);
			free(nu);
			free(nref);
			json_decref(copy);
			rc = st__err(err, ST_EINVAL, "cannot rename provider %s",
				     st_json_str(r, "urn"));
			st_strmap_free(&used);
			goto out;
		}
		json_object_set_new(copy, "urn", json_string(nu));
		if (st_strmap_get(&dst_urns, nu)) {
			/* Already there: reuse it when it is the same provider. */
			json_t *ex = NULL, *d;
			size_t k;
			st_strmap_slot *dsl = st_strmap_get(&dst_urns, nu);
			if (dsl->a) /* one of the destination's own */
				ex = json_array_get(dres_old, dsl->a - 1);
			else
				json_array_foreach(new_dst, k, d) {
					const char *du = st_json_str(d, "urn");
					if (du && !strcmp(du, nu))
						ex = d;
				}
			const char *eid = st_json_str(ex, "id");
			if (ex && ((eid && id && !strcmp(eid, id)) ||
				   json_equal(json_object_get(ex, "inputs") ? json_object_get(ex, "inputs")
									     : json_null(),
					      json_object_get(r, "inputs") ? json_object_get(r, "inputs")
									    : json_null()))) {
				char *exref = ref_of(ex);
				st_strmap_slot *psl = exref ? st_strmap_put(&c->provmap, ref, &created)
							    : NULL;
				if (!psl) {
					free(exref);
					free(ref);
					free(nu);
					free(nref);
					json_decref(copy);
					st_strmap_free(&used);
					rc = st__err(err, ST_ENOMEM, "out of memory");
					goto out;
				}
				if (!created)
					free(ref); /* the map keeps its first key */
				free(psl->p);
				psl->p = exref;
				st_changes_add(&rep->plan, "reuse provider %s (already in the "
					       "destination)", exref);
				free(nu);
				free(nref);
				json_decref(copy);
				continue;
			}
			rc = st__err(err, ST_ECONFLICT, "provider %s already exists in destination stack",
				     nu);
			free(ref);
			free(nu);
			free(nref);
			json_decref(copy);
			st_strmap_free(&used);
			goto out;
		}
		st_strmap_slot *psl = st_strmap_put(&c->provmap, ref, &created);
		if (!psl || put_copy(&dst_urns, nu) != ST_OK) {
			if (!psl || !created)
				free(ref); /* else the map owns it */
			free(nref);
			free(nu);
			json_decref(copy);
			st_strmap_free(&used);
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto out;
		}
		if (!created)
			free(ref); /* the map keeps its first key */
		free(psl->p);
		psl->p = nref;
		st_changes_add(&rep->plan, "copy provider %s -> %s", st_json_str(r, "urn"), nu);
		json_array_append_new(new_dst, copy);
		free(nu);
	}
	st_strmap_free(&used);

	/* Moved resources, in source order. URNs first, so references can be mapped. */
	json_array_foreach(c->sres, i, r) {
		const char *par;
		char *nu, *np = NULL;
		st_strmap_slot *ps;
		if (!c->moved[i])
			continue;
		par = st_json_str(r, "parent");
		ps = par ? st_strmap_get(&c->urnmap, par) : NULL;
		np = ps ? (char *)ps->p : c->droot;
		nu = new_urn(c, r, np);
		if (!nu) {
			rc = st__err(err, ST_EINVAL, "resource %s has no valid URN",
				     st_json_str(r, "urn"));
			goto out;
		}
		if (st_strmap_get(&dst_urns, nu) && !st_json_bool(r, "delete")) {
			rc = st__err(err, ST_ECONFLICT, "resource %s already exists in destination "
				     "stack", nu);
			free(nu);
			goto out;
		}
		if (put_copy(&dst_urns, nu) != ST_OK) {
			free(nu);
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto out;
		}
		st_strmap_slot *sl = st_strmap_put(&c->urnmap, st_json_str(r, "urn"), &created);
		if (sl && created)
			sl->p = nu;
		else
			free(nu);
	}
	/* The moved copies. */
	ssp = (sdep = st_state_deployment(src)) ? json_object_get(sdep, "secrets_providers") : NULL;
	ddep = st_state_deployment(dst);
	dsp = ddep ? json_object_get(ddep, "secrets_providers") : NULL;
	int adopt_provider = !dsp && ssp;
	int reencrypt = ssp && dsp && !secrets_same(ssp, dsp);
	json_array_foreach(c->sres, i, r) {
		if (!c->moved[i])
			continue;
		json_t *copy = json_deep_copy(r);
		const char *old = st_json_str(r, "urn");
		st_strmap_slot *sl = st_strmap_get(&c->urnmap, old);
		break_edges(copy, &stay, &rep->broken_dest);
		const char *par = st_json_str(copy, "parent");
		if (!par || !st_strmap_get(&c->urnmap, par))
			st_obj_set_ordered(copy, ST_K_RESOURCE, "parent", json_string(c->droot));
		map_refs(c, copy);
		json_object_set_new(copy, "urn", json_string((const char *)sl->p));
		if (reencrypt && st__secrets_count_ciphertexts(copy)) {
			size_t cnt = 0;
			if (!o->source_secrets || !o->dest_secrets) {
				json_decref(copy);
				rep->needs_secrets = 1;
				rc = st__err(err, ST_EPASSPHRASE,
					     "the resources to move hold secrets and the two stacks "
					     "have different secrets providers: both must be unlocked to "
					     "re-encrypt them for the destination");
				goto out;
			}
			rc = st__secrets_reencrypt(copy, o->source_secrets, o->dest_secrets, &cnt, err);
			if (rc) {
				json_decref(copy);
				goto out;
			}
			st_changes_add(&rep->plan, "re-encrypt %zu secret%s of %s for the "
				       "destination", cnt, cnt == 1 ? "" : "s", old);
		}
		json_array_append_new(new_dst, copy);
		char **mu = realloc(rep->moved_urns, (rep->nmoved + 1) * sizeof(*mu));
		if (mu) {
			rep->moved_urns = mu;
			rep->moved_urns[rep->nmoved++] = st_strdup(old);
		}
	}

	/* Install both arrays, and move pending operations of moved resources. What is replaced
	 * is kept, to restore it if the final check fails. */
	saved_s = sdep ? json_copy(sdep) : NULL; /* shallow: members are replaced, not changed */
	saved_d = ddep ? json_copy(ddep) : NULL;
	had_ddep = ddep != NULL;
	{
		json_t *sops = sdep ? json_object_get(sdep, "pending_operations") : NULL, *op;
		json_t *keep = json_array(), *moved_ops = json_array();
		json_array_foreach(sops, i, op) {
			const char *u = st_json_str(json_object_get(op, "resource"), "urn");
			st_strmap_slot *sl = u ? st_strmap_get(&c->urnmap, u) : NULL;
			if (!sl) {
				json_array_append(keep, op);
				continue;
			}
			json_t *nop = json_deep_copy(op), *nr = json_object_get(nop, "resource");
			json_object_set_new(nr, "urn", json_string((const char *)sl->p));
			map_refs(c, nr);
			json_array_append_new(moved_ops, nop);
			st_changes_add(&rep->plan, "move pending %s operation on %s",
				       st_json_str(op, "type") ? st_json_str(op, "type") : "?", u);
		}
		if (!ddep) {
			json_t *nd = json_object();
			json_t *m = json_object();
			json_object_set_new(m, "time", json_string("0001-01-01T00:00:00Z"));
			json_object_set_new(m, "magic", json_string(""));
			json_object_set_new(m, "version", json_string(""));
			json_object_set_new(nd, "manifest", m);
			json_object_set_new(nd, "metadata", json_object());
			json_object_set_new(dst->container, dst->envelope == ST_ENVELOPE_EXPORT
								    ? "deployment"
								    : "latest",
					    nd);
			ddep = nd;
		}
		if (adopt_provider) {
			st_obj_set_ordered(ddep, ST_K_DEPLOYMENT, "secrets_providers",
					   json_incref(ssp));
			st_changes_add(&rep->plan, "the destination had no secrets provider: it "
				       "takes the source's (%s)", st_json_str(ssp, "type"));
		}
		if (json_array_size(moved_ops)) {
			json_t *old = json_object_get(ddep, "pending_operations");
			json_t *dops = json_is_array(old) ? json_copy(old) : json_array();
			json_array_extend(dops, moved_ops);
			st_obj_set_ordered(ddep, ST_K_DEPLOYMENT, "pending_operations", dops);
		}
		json_decref(moved_ops);
		if (sdep) {
			if (json_array_size(keep))
				json_object_set_new(sdep, "pending_operations", keep);
			else {
				json_decref(keep);
				json_object_del(sdep, "pending_operations");
			}
		} else {
			json_decref(keep);
		}
		/* extension blobs referenced by moved resources */
		json_t *sext = sdep ? json_object_get(sdep, "extensions") : NULL;
		json_array_foreach(new_dst, i, r) {
			const char *ref = st_json_str(r, "extensionRef");
			json_t *blob = ref ? json_object_get(sext, ref) : NULL;
			if (!blob)
				continue;
			json_t *old = json_object_get(ddep, "extensions");
			json_t *dext = json_is_object(old) ? json_copy(old) : json_object();
			json_object_set(dext, ref, blob);
			st_obj_set_ordered(ddep, ST_K_DEPLOYMENT, "extensions", dext);
		}
		if (json_array_size(new_src))
			st_obj_set_ordered(sdep, ST_K_DEPLOYMENT, "resources", json_incref(new_src));
		else
			json_object_del(sdep, "resources");
		st_obj_set_ordered(ddep, ST_K_DEPLOYMENT, "resources", json_incref(new_dst));
	}
	/* Both results must be valid. */
	st_problems_clear(&p);
	st_problems_clear(&p2);
	st__phase("move: resources moved");
	check_both(src, &p2, dst, &p);
	st__phase("move: both results checked");
	if (p.errors) {
		rc = st__err(err, ST_EINTEGRITY, "the destination would be invalid after the move "
			     "(this is a bug): %s", p.items[0].message);
	} else if (p2.errors) {
		rc = st__err(err, ST_EINTEGRITY, "the source would be invalid after the "
			     "move (this is a bug): %s", p2.items[0].message);
	}
	if (rc) {
		/* put both back as they were */
		if (saved_s)
			json_object_set(src->container, src->envelope == ST_ENVELOPE_EXPORT
								? "deployment" : "latest", saved_s);
		if (had_ddep)
			json_object_set(dst->container, dst->envelope == ST_ENVELOPE_EXPORT
								? "deployment" : "latest", saved_d);
		else
			json_object_del(dst->container, dst->envelope == ST_ENVELOPE_EXPORT
								? "deployment" : "latest");
		goto out;
	}
	/* The features: the source lost resources, the destination took some of the source's;
	 * what neither had a mark of, neither has now. */
	dst->known_absent &= src->known_absent;
	/* a bytestring the source may hide in a ciphertext may have come along */
	dst->had_bytestring |= src->had_bytestring;
	st__state_apply_features_known(src);
	st__state_apply_features_known(dst);
	st__phase("move: features");
out:
	json_decref(saved_s);
	json_decref(saved_d);
	st_problems_clear(&p);
	st_problems_clear(&p2);
	json_decref(new_src);
	json_decref(new_dst);
	free(c->moved);
	free(c->moved_f);
	free(c->sstack);
	free(c->sproj);
	free(c->dstack);
	free(c->dproj);
	free(c->droot);
	st_strmap_free(&c->src_index);
	st_strmap_free(&c->moved_urns);
	free_map_values(&c->urnmap, 0);
	free_map_values(&c->provmap, 1); /* keys: the refs made by ref_of */
	free_map_values(&dst_urns, 0);   /* p: the copies made by put_copy */
	st_strmap_free(&stay);
	return rc;
}
