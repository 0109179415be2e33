/*
 * Moving resources between two states, with the semantics of `pulumi state move`
 * (pkg/cmd/pulumi/state/state_move.go), as an operation on two edit sessions: the source's and
 * the destination's. Beyond Pulumi: pending operations of moved resources move with them,
 * replaceWith is rewritten rather than duplicated, and secrets are re-encrypted for the
 * destination. The two sessions are committed together (st_edit_commit_pair).
 */
#include "session.h"

#include <pthread.h>

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void st_move_report_clear(st_move_report *r)
{
	if (!r)
		return;
	st_changes_clear(&r->plan);
	st_changes_clear(&r->broken_source);
	st_changes_clear(&r->broken_dest);
	st_changes_clear(&r->warnings);
	for (size_t i = 0; i < r->nmoved; i++)
		free(r->moved_urns[i]);
	free(r->moved_urns);
	memset(r, 0, sizeof(*r));
}

/* The members of a source resource the move's passes read, read once (borrowed: the
 * resource's own strings; a skeleton made full keeps them). */
typedef struct res_f {
	const char *urn, *parent, *type, *provider;
} res_f;

/* One move. */
typedef struct mv {
	st_edit *se, *de;
	const st_move_opts *o;
	st_move_report *rep;
	st_error *err;
	json_t *sres;          /* the source's resources */
	size_t n;
	res_f *f;              /* per source index, as the move began */
	size_t ext_refs;       /* resources of either state with an extensionRef */
	char *moved;           /* per source index: 1 moved */
	st_strmap src_index;   /* urn -> first index (a) */
	st_strmap moved_urns;  /* the URNs that move */
	st_prefilter moved_f;  /* moved_urns' */
	st__ptrset refs;       /* the source's resources that refer to moved_urns (as they are
				* now: shrink_source), for the commit's check (st__edit_hint_refs) */
	st_strmap stay;        /* the URNs that stay (only when a URN repeats) */
	int repeats;           /* a URN occurs more than once in the source */
	st_strmap dst;         /* the destination's URNs -> its resource (p) */
	st_strmap urnmap;      /* old urn -> new urn (p, owned) */
	st_strmap provmap;     /* old ref -> new ref (key and p owned) */
	char *sstack, *sproj, *dstack, *dproj;
	const char *droot;     /* the destination's root stack URN (borrowed) */
	/* secrets: re-encrypt moved ciphertexts from `from` to `to`; give the destination a
	 * provider of its own (new_provider) or the source's (adopt); a source whose secrets
	 * Pulumi Cloud holds for that stack (service_held) gives none of them away */
	int reencrypt, new_provider, adopt, reencrypted, service_held;
} mv;

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

static int oom(mv *c)
{
	return st__err(c->err, ST_ENOMEM, "out of memory");
}

/* ---- references across the stacks ---- */

/* Removes from r every edge to a URN in `gone` (but its parent: the caller reparents); each
 * removal is reported under `where`, in Pulumi's words. */
typedef struct break_ctx {
	const st_strmap *gone, *but; /* the URNs in gone but not in but (may be NULL) */
	st_changes *where;
	const char *urn;
} break_ctx;

static int break_cb(void *p, st_ref *ref)
{
	break_ctx *c = p;
	if (!st_strmap_getn(c->gone, ref->value, ref->len) ||
	    (c->but && st_strmap_getn(c->but, ref->value, ref->len)))
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

static int break_edges(json_t *r, const st_strmap *gone, const st_strmap *but,
		       st_changes *where)
{
	break_ctx c = {gone, but, where, st_json_str(r, "urn")};
	int rc = st__ref_foreach(r, (ST_REF_URNS & ~(unsigned)ST_REF_PARENT) | ST_REF_SORTED,
				 break_cb, &c);
	return rc < 0 ? rc : ST_OK;
}

/* Removes from a moved copy r every edge to what stays in the source: a URN of the source
 * that does not move (each URN once: the source's URNs but the moved ones). */
static int break_stay(mv *c, json_t *r)
{
	return c->repeats ? break_edges(r, &c->stay, NULL, &c->rep->broken_dest)
			  : break_edges(r, &c->src_index, &c->moved_urns, &c->rep->broken_dest);
}

/* A URN in the destination (*out, new): its stack and project, the (new) parent's type chain.
 * ST_EINVAL when r has no valid URN, ST_ENOMEM. */
static int new_urn(mv *c, json_t *r, const char *new_parent, char **out)
{
	st_urn u, pu;
	char *ty, *nm, *pqt = NULL;
	int with_parent;
	*out = NULL;
	if (st_urn_parse(st_json_str(r, "urn"), &u) != ST_OK)
		return ST_EINVAL;
	with_parent = new_parent && st_urn_parse(new_parent, &pu) == ST_OK;
	ty = st_strndup(u.type, u.type_len);
	nm = st_strndup(u.name, u.name_len);
	if (with_parent)
		pqt = st_strndup(pu.qtype, pu.qtype_len);
	if (ty && nm && (pqt || !with_parent))
		*out = st_urn_new(c->dstack, c->dproj, pqt, ty, nm);
	free(ty);
	free(nm);
	free(pqt);
	return *out ? ST_OK : ST_ENOMEM;
}

/* ---- before anything changes: names, validity, what moves ---- */

static int names(mv *c)
{
	st_state *src = st__edit_state(c->se), *dst = st__edit_state(c->de);
	st_error local;
	int rc;

	st_error_clear(&local);
	rc = st_stack_names(src, c->o->source_stack, st_state_path(src), &c->sstack, &c->sproj,
			    &local);
	if (rc == ST_ENOTFOUND)
		return st__err(c->err, ST_EINVAL, "cannot tell the source's stack and project: %s; "
			       "add --source-stack PROJECT/STACK", local.message);
	if (rc)
		return st__err_copy(c->err, &local);
	rc = st_stack_names(dst, c->o->dest_stack, st_state_path(dst), &c->dstack, &c->dproj,
			    &local);
	if (rc == ST_ENOTFOUND)
		return st__err(c->err, ST_EINVAL, "cannot tell the destination's stack and "
			       "project: %s; add --dest-stack PROJECT/STACK", local.message);
	return rc ? st__err_copy(c->err, &local) : ST_OK;
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

/* Both must be valid (Pulumi refuses otherwise). */
static int check_valid(mv *c)
{
	st_state *a = st__edit_state(c->se), *b = st__edit_state(c->de);
	st_problems pa = {0}, pb = {0};
	check_job ja = {a, &pa}, jb = {b, &pb};
	int rc = ST_OK;
	st__two_run(ST__T_MOVE,
		    json_array_size(st_state_resources(a, 0)) +
			    json_array_size(st_state_resources(b, 0)),
		    0, check_main, &ja, check_main, &jb);
	st__phase("move: both checked");
	if (pa.errors)
		rc = st__err(c->err, ST_EINTEGRITY, "failed to verify integrity of source snapshot: "
			     "%s (statetool repair can fix it)", pa.items[0].message);
	else if (pb.errors)
		rc = st__err(c->err, ST_EINTEGRITY, "failed to verify integrity of destination "
			     "snapshot: %s (statetool repair can fix it)", pb.items[0].message);
	if (rc == ST_OK) { /* the commit checks only what the move changed */
		st__edit_base_valid(c->se);
		st__edit_base_valid(c->de);
		/* the journal's hashes of the old files, beside the move (one processor) */
		st__lazy_prehash(a);
		st__lazy_prehash(b);
	}
	st_problems_clear(&pa);
	st_problems_clear(&pb);
	return rc;
}

/* st__is_root_stack of source resource i. */
static int is_root(const mv *c, size_t i)
{
	const res_f *f = &c->f[i];
	return f->type && !strcmp(f->type, ST_ROOT_STACK_TYPE) && (!f->parent || !*f->parent);
}

/* The resources the patterns select (exact URNs or globs). */
static int select_resources(mv *c)
{
	size_t hits = 0;

	for (size_t p = 0; p < c->o->npatterns; p++) {
		const char *pat = c->o->patterns[p];
		size_t here = 0;
		int glob = strpbrk(pat, "*?[") != NULL;
		/* the pattern's literal start: a URN without it cannot match (fnmatch, which may
		 * go through wide characters, is asked only about the others) */
		size_t lit = strcspn(pat, "*?[\\");
		for (size_t i = 0; i < c->n; i++) {
			const char *u = c->f[i].urn;
			if (!u || (glob ? strncmp(u, pat, lit) != 0 || fnmatch(pat, u, 0) != 0
					: strcmp(pat, u) != 0))
				continue;
			if (st_type_is_provider(c->f[i].type))
				return st__err(c->err, ST_EINVAL,
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
		return st__err(c->err, ST_ENOTFOUND, "no resources found to move");
	return ST_OK;
}

/* Marks the parent of every moved resource (not the root stack nor a provider). */
static int add_parents(mv *c)
{
	int changed = 0;
	for (size_t i = 0; i < c->n; i++) {
		const char *par = c->moved[i] ? c->f[i].parent : NULL;
		st_strmap_slot *ps = par ? st_strmap_get(&c->src_index, par) : NULL;
		if (!ps || c->moved[ps->a] || is_root(c, ps->a) ||
		    st_type_is_provider(c->f[ps->a].type))
			continue;
		c->moved[ps->a] = 1;
		changed = 1;
	}
	return changed;
}

/* Marks every child of a moved resource (not providers). 1: another pass may mark more (a
 * parent comes after its child: not in a valid state, where one pass is enough). */
static int add_children(mv *c)
{
	int changed = 0, late = 0;
	for (size_t i = 0; i < c->n; i++) {
		const char *par = c->f[i].parent;
		st_strmap_slot *ps = par ? st_strmap_get(&c->src_index, par) : NULL;
		if (ps && ps->a > i)
			late = 1;
		if (c->moved[i] || !ps || !c->moved[ps->a] || st_type_is_provider(c->f[i].type))
			continue;
		c->moved[i] = 1;
		changed = 1;
	}
	return changed && late;
}

/* Ancestors (with include_parents) and every descendant, to a fixed point (an invalid order
 * would need more passes); the root stack itself never moves: its children do. Then the sets
 * of URNs that move and stay. */
static int expand(mv *c)
{
	int created;
	while (c->o->include_parents && add_parents(c))
		;
	while (add_children(c))
		;
	for (size_t i = 0; i < c->n; i++) {
		const char *u = c->f[i].urn;
		if (c->moved[i] && is_root(c, i))
			c->moved[i] = 0;
		if (!u || (!c->moved[i] && !c->repeats))
			continue;
		if (!(c->moved[i] ? st_strmap_put_f(&c->moved_urns, &c->moved_f, u, &created)
				  : st_strmap_put(&c->stay, u, &created)))
			return oom(c);
	}
	return ST_OK;
}

static int index_source(mv *c)
{
	json_t *r;
	size_t i;
	int created;
	c->sres = st__edit_resources(c->se);
	c->n = json_array_size(c->sres);
	if (!c->n)
		return st__err(c->err, ST_ENOTFOUND, "source stack has no resources");
	if (!(c->moved = calloc(c->n, 1)) || !(c->f = calloc(c->n, sizeof(*c->f))))
		return oom(c);
	json_array_foreach(c->sres, i, r) {
		const char *u = st_json_str(r, "urn"), *ext = st_json_str(r, "extensionRef");
		st_strmap_slot *sl = u ? st_strmap_put(&c->src_index, u, &created) : NULL;
		c->f[i].urn = u;
		c->f[i].parent = st_json_str(r, "parent");
		c->f[i].type = st_json_str(r, "type");
		c->f[i].provider = st_json_str(r, "provider");
		c->ext_refs += ext && *ext;
		if (u && !sl)
			return oom(c);
		if (sl && created)
			sl->a = i;
		else if (sl)
			c->repeats = 1;
	}
	return ST_OK;
}

/* The destination's root stack (made when missing) and its URNs. */
static int index_dest(mv *c)
{
	json_t *res, *r;
	size_t i;
	int created, rc;
	if ((rc = st__edit_root_stack(c->de, c->dstack, c->dproj, &c->droot, &created, c->err)))
		return rc;
	if (created)
		st_changes_add(&c->rep->plan, "create the destination's root stack %s", c->droot);
	res = st__edit_resources(c->de);
	json_array_foreach(res, i, r) {
		const char *u = st_json_str(r, "urn"), *ext = st_json_str(r, "extensionRef");
		c->ext_refs += ext && *ext;
		st_strmap_slot *sl = u ? st_strmap_put(&c->dst, u, &created) : NULL;
		if (u && !sl)
			return oom(c);
		if (sl)
			sl->p = r; /* the last resource of that URN */
	}
	return ST_OK;
}

/* Adds r (stolen) to the destination, and its URN to the index. */
static int add_to_dest(mv *c, json_t *r)
{
	int created, rc = st__edit_insert(c->de, (size_t)-1, r, NULL, c->err);
	st_strmap_slot *sl;
	if (rc)
		return rc;
	if (!(sl = st_strmap_put(&c->dst, st_json_str(r, "urn"), &created)))
		return oom(c);
	sl->p = r;
	return ST_OK;
}

/* ---- providers used by moved resources: copied, or reused ---- */

/* The same provider already in the destination: the same ID, or the same inputs. */
static int same_provider(const json_t *ex, const json_t *r)
{
	const char *eid = st_json_str(ex, "id"), *id = st_json_str(r, "id");
	json_t *ei = json_object_get(ex, "inputs"), *ri = json_object_get(r, "inputs");
	return (eid && id && !strcmp(eid, id)) ||
	       st__json_equal(ei ? ei : json_null(), ri ? ri : json_null());
}

/* Maps the provider reference `ref` (taken) to `to` (taken). */
static int map_provider(mv *c, char *ref, char *to)
{
	int created;
	st_strmap_slot *sl = ref && to ? st_strmap_put(&c->provmap, ref, &created) : NULL;
	if (!sl) {
		free(ref);
		free(to);
		return oom(c);
	}
	if (!created)
		free(ref); /* the map keeps its first key */
	free(sl->p);
	sl->p = to;
	return ST_OK;
}

static int copy_provider(mv *c, json_t *r)
{
	char *ref = st__provider_ref(st_json_str(r, "urn"), st_json_str(r, "id"));
	char *nu, *nref;
	int rc = new_urn(c, r, NULL, &nu);
	st_strmap_slot *ex = nu ? st_strmap_get(&c->dst, nu) : NULL;
	json_t *copy;

	if (!ref || !nu) {
		free(ref);
		free(nu);
		return rc != ST_EINVAL ? oom(c) : st__err(c->err, ST_EINVAL, "cannot rename "
							  "provider %s", st_json_str(r, "urn"));
	}
	/* (their inputs compared, the source's copied: a lazy state's skeletons made full) */
	if ((rc = st__edit_inflate_res(c->se, r, c->err)) != ST_OK ||
	    (ex && (rc = st__edit_inflate_res(c->de, ex->p, c->err)) != ST_OK)) {
		free(ref);
		free(nu);
		return rc;
	}
	if (ex && same_provider(ex->p, r)) {
		free(nu);
		nref = st__provider_ref(st_json_str(ex->p, "urn"), st_json_str(ex->p, "id"));
		st_changes_add(&c->rep->plan, "reuse provider %s (already in the destination)",
			       nref ? nref : "?");
		return map_provider(c, ref, nref);
	}
	if (ex) {
		rc = st__err(c->err, ST_ECONFLICT, "provider %s already exists in destination stack",
			     nu);
		free(ref);
		free(nu);
		return rc;
	}
	nref = st__provider_ref(nu, st_json_str(r, "id"));
	if ((rc = map_provider(c, ref, nref)) != ST_OK) {
		free(nu);
		return rc;
	}
	/* copied providers must not depend on what stays in the source */
	if (!(copy = json_deep_copy(r)) || break_stay(c, copy) ||
	    st_obj_set_ordered(copy, ST_K_RESOURCE, "parent", json_string(c->droot)) ||
	    json_object_set_new(copy, "urn", json_string(nu))) {
		json_decref(copy);
		free(nu);
		return oom(c);
	}
	st_changes_add(&c->rep->plan, "copy provider %s -> %s", st_json_str(r, "urn"), nu);
	free(nu);
	return add_to_dest(c, copy);
}

/* In source order, each provider a moved resource uses. */
static int providers(mv *c)
{
	st_strmap used;
	json_t *r;
	size_t i;
	int created, rc = ST_OK;

	st_strmap_init(&used);
	for (i = 0; i < c->n; i++) {
		const char *pr = c->moved[i] ? c->f[i].provider : NULL;
		if (pr && !st_strmap_put(&used, pr, &created))
			rc = oom(c);
	}
	json_array_foreach(c->sres, i, r) {
		char *ref;
		int uses;
		if (rc || !st_type_is_provider(c->f[i].type))
			continue;
		ref = st__provider_ref(st_json_str(r, "urn"), st_json_str(r, "id"));
		uses = ref && st_strmap_get(&used, ref);
		free(ref);
		if (!ref)
			rc = oom(c);
		else if (uses)
			rc = copy_provider(c, r);
	}
	st_strmap_free(&used);
	return rc;
}

/* ---- the moved resources ---- */

/* New URNs, in source order (a parent before its children), so references can be mapped. */
static int map_urns(mv *c)
{
	json_t *r;
	size_t i;
	int created;
	json_array_foreach(c->sres, i, r) {
		const char *par = c->moved[i] ? st_json_str(r, "parent") : NULL;
		st_strmap_slot *ps = par ? st_strmap_get(&c->urnmap, par) : NULL, *sl;
		char *nu;
		if (!c->moved[i])
			continue;
		int rc = new_urn(c, r, ps ? (const char *)ps->p : c->droot, &nu);
		if (rc == ST_ENOMEM)
			return oom(c);
		if (rc)
			return st__err(c->err, ST_EINVAL, "resource %s has no valid URN",
				       st_json_str(r, "urn"));
		if (st_strmap_get(&c->dst, nu) && !st_json_bool(r, "delete")) {
			rc = st__err(c->err, ST_ECONFLICT, "resource %s already exists in "
				     "destination stack", nu);
			free(nu);
			return rc;
		}
		if (!(sl = st_strmap_put(&c->urnmap, st_json_str(r, "urn"), &created))) {
			free(nu);
			return oom(c);
		}
		if (created)
			sl->p = nu;
		else
			free(nu); /* a second copy of the URN: the first's */
	}
	return ST_OK;
}

/* Which secrets to re-encrypt, and the destination's secrets provider. */
static void plan_secrets(mv *c, json_t *ssp, json_t *dsp)
{
	const char *stype = st_json_str(ssp, "type");
	if (dsp) {
		c->reencrypt = ssp && !st__json_equal(ssp, dsp);
	} else if (ssp && stype && !strcmp(stype, "passphrase")) {
		/* a passphrase provider of its own: the destination's passphrase, a new salt */
		c->reencrypt = c->new_provider = 1;
	} else if (ssp && stype && !strcmp(stype, "service")) {
		/* its state names the source stack, whose secrets only the service decrypts: never
		 * another stack's (Pulumi's state move gives the destination its own manager) */
		c->service_held = 1;
	} else if (ssp) {
		c->adopt = 1;
	}
}

static int need_secrets(mv *c)
{
	c->rep->needs_secrets = 1;
	if (c->new_provider)
		return st__err(c->err, ST_EPASSPHRASE,
			       "the resources to move hold secrets and the destination has no "
			       "secrets provider: the source's must be unlocked, and the destination "
			       "gets a passphrase provider of its own (its passphrase, a new salt)");
	return st__err(c->err, ST_EPASSPHRASE,
		       "the resources to move hold secrets and the two stacks have different "
		       "secrets providers: both must be unlocked to re-encrypt them for the "
		       "destination");
}

static int reencrypt(mv *c, json_t *copy, const char *old)
{
	size_t cnt = 0;
	int rc;
	if (c->service_held && st__secrets_count_ciphertexts(copy))
		return st__err(c->err, ST_EUNSUPPORTED,
			       "the resources to move hold secrets that Pulumi Cloud keeps for the "
			       "source stack (its 'service' secrets provider), and the destination "
			       "has no secrets provider: give it one first (pulumi stack init "
			       "--secrets-provider passphrase, or any other), then move them");
	if (!c->reencrypt || !st__secrets_count_ciphertexts(copy))
		return ST_OK;
	if (!c->o->source_secrets || !c->o->dest_secrets)
		return need_secrets(c);
	if ((rc = st__secrets_reencrypt(copy, c->o->source_secrets, c->o->dest_secrets, &cnt,
					c->err)) != ST_OK)
		return rc;
	c->reencrypted = 1;
	st_changes_add(&c->rep->plan, "re-encrypt %zu secret%s of %s for the destination", cnt,
		       cnt == 1 ? "" : "s", old);
	return ST_OK;
}

static int note_moved(mv *c, const char *old)
{
	char **mu = realloc(c->rep->moved_urns, (c->rep->nmoved + 1) * sizeof(*mu));
	if (!mu)
		return oom(c);
	c->rep->moved_urns = mu;
	if (!(mu[c->rep->nmoved] = st_strdup(old)))
		return oom(c);
	c->rep->nmoved++;
	return ST_OK;
}

/* The copy of one moved resource in the destination: edges to what stays broken, reparented to
 * the destination's root unless its parent moves too, references mapped, secrets re-encrypted. */
static int copy_moved(mv *c, json_t *r)
{
	const char *old = st_json_str(r, "urn"), *par;
	st_strmap_slot *sl = st_strmap_get(&c->urnmap, old);
	json_t *copy = json_deep_copy(r);
	int rc;

	if (!copy || break_stay(c, copy)) {
		json_decref(copy);
		return oom(c);
	}
	par = st_json_str(copy, "parent");
	if ((!par || !st_strmap_get(&c->urnmap, par)) &&
	    st_obj_set_ordered(copy, ST_K_RESOURCE, "parent", json_string(c->droot)))
		rc = oom(c);
	else if (st__ref_rewrite(copy, &c->urnmap, &c->provmap, NULL) ||
		 json_object_set_new(copy, "urn", json_string((const char *)sl->p)))
		rc = oom(c);
	else
		rc = reencrypt(c, copy, old);
	if (rc == ST_OK)
		rc = note_moved(c, old);
	if (rc) {
		json_decref(copy);
		return rc;
	}
	return add_to_dest(c, copy);
}

static int copies(mv *c)
{
	json_t *r;
	size_t i;
	int rc;
	json_array_foreach(c->sres, i, r)
		if (c->moved[i] && ((rc = st__edit_inflate(c->se, i, c->err)) != ST_OK ||
				    (rc = copy_moved(c, r)) != ST_OK))
			return rc;
	return ST_OK;
}

/* The source: edges to what moved broken (in copies: the state as it was stays shared), then
 * the moved resources removed. The resources that refer to a moved one are found first, in
 * one read-only pass (on two threads for a big state). */
static int shrink_source(mv *c)
{
	st__refscan scan;
	json_t *r;
	size_t i;
	int rc;

	memset(&scan, 0, sizeof(scan));
	scan.res = c->sres;
	scan.skip = c->moved;
	scan.urns = &c->moved_urns;
	scan.uf = &c->moved_f;
	if (!(scan.hit = calloc(c->n + 1, 1)))
		return oom(c);
	st__refscan_run(&scan);
	json_array_foreach(c->sres, i, r) {
		size_t before = c->rep->broken_source.count;
		json_t *copy;
		if (!scan.hit[i])
			continue;
		if (st__ptrset_add(&c->refs, r) < 0) {
			free(scan.hit);
			return oom(c);
		}
		/* (a shallow copy: of the full resource) */
		if (st__edit_inflate(c->se, i, c->err) != ST_OK) {
			free(scan.hit);
			return ST_ENOMEM;
		}
		if (!(copy = st__ref_copy(r)) ||
		    break_edges(copy, &c->moved_urns, NULL, &c->rep->broken_source)) {
			json_decref(copy);
			free(scan.hit);
			return oom(c);
		}
		if (c->rep->broken_source.count == before)
			json_decref(copy); /* only its parent was among them */
		else if (st__edit_put(c->se, c->sres, i, copy) < 0 ||
			 st__ptrset_add(&c->refs, copy) < 0) {
			free(scan.hit);
			return oom(c);
		}
	}
	free(scan.hit);
	rc = st__edit_remove(c->se, c->moved, c->err);
	return rc;
}

/* Pending operations of moved resources move with them. */
static int pending(mv *c)
{
	json_t *sops = st__edit_pending(c->se), *dops = st__edit_pending(c->de), *op;
	json_t *keep = json_array(), *nd = dops ? json_copy(dops) : json_array();
	size_t i, moved = 0;
	int rc;

	if (!keep || !nd)
		goto oom;
	json_array_foreach(sops, i, op) {
		const char *u = st_json_str(json_object_get(op, "resource"), "urn");
		st_strmap_slot *sl = u ? st_strmap_get(&c->urnmap, u) : NULL;
		json_t *nop, *nr;
		if (!sl) {
			if (json_array_append(keep, op))
				goto oom;
			continue;
		}
		if (!(nop = json_deep_copy(op)) || json_array_append_new(nd, nop) ||
		    !(nr = json_object_get(nop, "resource")) ||
		    json_object_set_new(nr, "urn", json_string((const char *)sl->p)) ||
		    st__ref_rewrite(nr, &c->urnmap, &c->provmap, NULL))
			goto oom;
		/* its inputs and outputs hold secrets as the resource's do */
		if ((rc = reencrypt(c, nr, u)) != ST_OK) {
			json_decref(keep);
			json_decref(nd);
			return rc;
		}
		moved++;
		st_changes_add(&c->rep->plan, "move pending %s operation on %s",
			       st_json_str(op, "type") ? st_json_str(op, "type") : "?", u);
	}
	if (!moved) {
		json_decref(keep);
		json_decref(nd);
		return ST_OK;
	}
	if ((rc = st__edit_set_pending(c->se, keep, c->err)) != ST_OK) {
		json_decref(nd);
		return rc;
	}
	return st__edit_set_pending(c->de, nd, c->err);
oom:
	json_decref(keep);
	json_decref(nd);
	return oom(c);
}

/* The destination's secrets provider, when it had none. */
static int dest_provider(mv *c, json_t *ssp)
{
	json_t *sp;
	if (c->adopt) {
		st_changes_add(&c->rep->plan, "the destination had no secrets provider: it takes the "
			       "source's (%s)", st_json_str(ssp, "type"));
		return st__edit_set_member(c->de, "secrets_providers", json_incref(ssp), c->err);
	}
	if (!c->new_provider || !c->reencrypted)
		return ST_OK; /* no secret moved: the destination gets one when it needs one */
	if (!(sp = st_secrets_provider_json(c->o->dest_secrets)))
		return oom(c);
	st_changes_add(&c->rep->plan, "the destination had no secrets provider: it gets a %s "
		       "provider of its own", st_secrets_type(c->o->dest_secrets));
	return st__edit_set_member(c->de, "secrets_providers", sp, c->err);
}

/* ---- extension blobs (Pulumi's deploy.MapExtensions) ---- */

/* The blobs a state's resources refer to, from its own blobs or (base not NULL) the base's;
 * the refs found in neither are appended to `missing`. *out is new (NULL: none). */
static int map_extensions(json_t *res, json_t *live, json_t *base, json_t **out, st_buf *missing)
{
	json_t *r, *blob;
	size_t i;
	*out = NULL;
	json_array_foreach(res, i, r) {
		const char *ref = st_json_str(r, "extensionRef");
		if (!ref || !*ref || json_object_get(*out, ref))
			continue;
		if (!(blob = json_object_get(live, ref)) && base)
			blob = json_object_get(base, ref);
		if (!blob) {
			st_buf_printf(missing, "%s%s", missing->len > 1 ? " " : "", ref);
			continue;
		}
		if ((!*out && !(*out = json_object())) || json_object_set(*out, ref, blob))
			return ST_ENOMEM;
	}
	return ST_OK;
}

static int set_extensions(st_edit *e, json_t *ext, st_error *err)
{
	json_t *dep = st_state_deployment(st__edit_state(e)), *old;
	old = dep ? json_object_get(dep, "extensions") : NULL;
	if ((!ext && !old) || (ext && old && st__json_equal(ext, old))) {
		json_decref(ext);
		return ST_OK;
	}
	return st__edit_set_member(e, "extensions", ext, err);
}

/* Blobs go with the moved resources that refer to them; each stack keeps only the blobs its
 * resources refer to. */
static int extensions(mv *c)
{
	json_t *sdep = st_state_deployment(st__edit_state(c->se));
	json_t *ddep = st_state_deployment(st__edit_state(c->de));
	json_t *sext = json_object_get(sdep, "extensions"), *dext = json_object_get(ddep, "extensions");
	json_t *nd = NULL, *ns = NULL;
	st_buf missing, ignored; /* (what the source's remaining resources miss is not ours) */
	int rc;

	/* no blobs and no resource refers to one (the copies' refs are their originals'): none
	 * to map, and set_extensions would change nothing */
	if (!sext && !dext && !c->ext_refs)
		return ST_OK;
	st_buf_init(&missing);
	st_buf_init(&ignored);
	st_buf_adds(&missing, "[");
	if (map_extensions(st__edit_resources(c->de), dext, sext, &nd, &missing) ||
	    map_extensions(st__edit_resources(c->se), sext, NULL, &ns, &ignored) || missing.oom) {
		rc = oom(c);
	} else if (missing.len > 1) {
		rc = st__err(c->err, ST_EINVAL, "source snapshot is missing extension blob(s) %s] "
			     "referenced by moved resources", missing.data);
	} else {
		rc = set_extensions(c->de, nd, c->err); /* (each takes its blobs) */
		nd = NULL;
		if (rc == ST_OK)
			rc = set_extensions(c->se, ns, c->err);
		else
			json_decref(ns);
		ns = NULL;
	}
	json_decref(nd);
	json_decref(ns);
	st_buf_free(&missing);
	st_buf_free(&ignored);
	return rc;
}

/* ---- the move ---- */

static int move_(mv *c)
{
	json_t *sdep = st_state_deployment(st__edit_state(c->se));
	json_t *ddep = st_state_deployment(st__edit_state(c->de));
	json_t *ssp = sdep ? json_object_get(sdep, "secrets_providers") : NULL;
	json_t *dsp = ddep ? json_object_get(ddep, "secrets_providers") : NULL;
	int rc;

	if ((rc = names(c)) || (rc = check_valid(c)) || (rc = index_source(c)) ||
	    (rc = select_resources(c)) || (rc = expand(c)))
		return rc;
	st__phase("move: resources selected");
	plan_secrets(c, ssp, dsp);
	ssp = json_incref(ssp); /* (the source's deployment members may be replaced) */
	if (!(rc = index_dest(c)) && !(rc = providers(c)) && !(rc = map_urns(c)))
		rc = copies(c);
	st__phase("move: copies made in the destination");
	if (!rc && !(rc = shrink_source(c)) && !(rc = pending(c)) && !(rc = dest_provider(c, ssp)))
		rc = extensions(c);
	json_decref(ssp);
	/* a bytestring the source may hide in a ciphertext may have come along */
	if (rc == ST_OK)
		st__edit_state(c->de)->had_bytestring |= st__edit_state(c->se)->had_bytestring;
	st__phase("move: the source's edges to them broken, resources removed");
	return rc;
}

int st_edit_move(st_edit *src, st_edit *dst, const st_move_opts *o, st_move_report *rep,
		 st_error *err)
{
	ST_ASSERT_ARG_AS(o, "opts");
	ST_ASSERT_ARG_AS(rep, "report");
	st__edit_op sop, dop;
	mv c;
	int rc;

	ST_ASSERT_ARG(src);
	ST_ASSERT_ARG(dst);
	memset(rep, 0, sizeof(*rep));
	if ((rc = st__opts_version(o->version, ST_MOVE_OPTS_VERSION, "st_move_opts", err)))
		return rc;
	if (st__edit_state(src) == st__edit_state(dst))
		return st__err(err, ST_EINVAL, "the source and the destination are the same state");
	memset(&c, 0, sizeof(c));
	c.se = src;
	c.de = dst;
	c.o = o;
	c.rep = rep;
	c.err = err;
	st_strmap_init(&c.src_index);
	st_strmap_init(&c.moved_urns);
	st_strmap_init(&c.stay);
	st_strmap_init(&c.dst);
	st_strmap_init(&c.urnmap);
	st_strmap_init(&c.provmap);
	/* the hint's URNs are borrowed from the moved resources: only a move that is the
	 * source session's first change moves resources its baseline holds (another could move
	 * one an earlier operation made, which only that operation's snapshot held) */
	int first = !src->dirty;
	if ((rc = st__edit_op_begin(src, &sop, err)) == ST_OK) {
		if ((rc = st__edit_op_begin(dst, &dop, err)) == ST_OK)
			rc = st__edit_op_end(dst, &dop, move_(&c));
		rc = st__edit_op_end(src, &sop, rc);
	}
	/* what the source's scan found, for its commit's check (it outlives the move: the
	 * moved resources the URNs are borrowed from stay in the session's baseline) */
	if (rc == ST_OK && first)
		st__edit_hint_refs(src, &c.moved_urns, &c.refs);
	if (rc != ST_OK) {
		int needs = rep->needs_secrets;
		st_changes warnings = rep->warnings;
		memset(&rep->warnings, 0, sizeof(rep->warnings));
		st_move_report_clear(rep);
		rep->warnings = warnings; /* (patterns that matched nothing: still worth saying) */
		rep->needs_secrets = needs;
	}
	free(c.moved);
	free(c.f);
	free(c.sstack);
	free(c.sproj);
	free(c.dstack);
	free(c.dproj);
	st_strmap_free(&c.src_index);
	st_strmap_free(&c.moved_urns);
	st__ptrset_free(&c.refs);
	st_strmap_free(&c.stay);
	st_strmap_free(&c.dst);
	free_map_values(&c.urnmap, 0);
	free_map_values(&c.provmap, 1);
	return rc;
}

/* The names a path gives, as an override (the one-shot form takes paths). New or NULL. */
static char *names_of_path(st_state *s, const char *given, const char *path)
{
	char *stack = NULL, *project = NULL, *names = NULL;
	if (given || !path || st_stack_names(s, NULL, path, &stack, &project, NULL) != ST_OK)
		return NULL;
	names = st_asprintf("%s/%s", project, stack);
	free(stack);
	free(project);
	return names;
}

int st_move(st_state *src, const char *src_path, st_state *dst, const char *dst_path,
	    const st_move_opts *o, st_move_report *rep, st_error *err)
{
	ST_ASSERT_ARG_AS(o, "opts");
	ST_ASSERT_ARG_AS(rep, "report");
	st_move_opts mo;
	st_edit *se = NULL, *de = NULL;
	char *sn, *dn;
	int rc;

	ST_ASSERT_ARG(src);
	ST_ASSERT_ARG(dst);
	memset(rep, 0, sizeof(*rep));
	if ((rc = st__opts_version(o->version, ST_MOVE_OPTS_VERSION, "st_move_opts", err)))
		return rc;
	mo = *o;
	sn = names_of_path(src, o->source_stack, src_path);
	dn = names_of_path(dst, o->dest_stack, dst_path);
	if (sn)
		mo.source_stack = sn;
	if (dn)
		mo.dest_stack = dn;
	if ((rc = st_edit_begin(&se, src, NULL, err)) == ST_OK &&
	    (rc = st_edit_begin(&de, dst, NULL, err)) == ST_OK &&
	    (rc = st_edit_move(se, de, &mo, rep, err)) == ST_OK)
		rc = st_edit_commit_pair(se, de, NULL, NULL, NULL, NULL, NULL, err);
	if (rc != ST_OK) {
		if (de)
			st__edit_abort(de);
		if (se)
			st__edit_abort(se);
	}
	st_edit_free(se);
	st_edit_free(de);
	free(sn);
	free(dn);
	return rc;
}
