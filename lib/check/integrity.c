/*
 * Pulumi's integrity rules (VerifyIntegrity, with Pulumi's wording) and statetool's own
 * warnings, over a state's resources, pending operations, snippets, plugins and aliases. Every
 * problem is reported, not the first. The references between resources are read through the
 * one walker of Pulumi's reference fields (lib/state/refs.c).
 */
#include "internal.h"
#include "check/check.h"

#include <pthread.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- integrity ---- */

/* The pointer of a reference: resources/i/field[/key][/j]. */
static const char *ref_ptr(ictx *c, size_t i, const st_ref *ref)
{
	ptr_res(c, i, ref->field);
	if (ref->key)
		st_pointer_add_key(&c->ptr, ref->key, strlen(ref->key));
	if (ref->index >= 0)
		st_pointer_add_index(&c->ptr, (size_t)ref->index);
	return c->ptr.data ? c->ptr.data : "";
}

/* Pulumi's messages for a reference that points forwards or to nothing, by kind: each takes
 * the resource's URN and the target (and, for a property dependency, the property). */
typedef struct ref_rule {
	st_ref_kind kind;
	const char *order_rule, *order_fmt, *missing_rule, *missing_fmt;
} ref_rule;

static const ref_rule ref_rules[] = {
	{ST_REF_PARENT, "integrity/parent-order", "child resource %s's parent %s comes after it",
	 "integrity/parent-missing", "child resource %s refers to missing parent %s"},
	{ST_REF_DEPENDENCY, "integrity/dependency-order",
	 "resource %s's dependency %s comes after it", "integrity/dependency-missing",
	 "resource %s's dependency %s refers to missing resource"},
	{ST_REF_PROPERTY_DEPENDENCY, "integrity/property-dependency-order",
	 "resource %s's property dependency %s (from property %s) comes after it",
	 "integrity/property-dependency-missing",
	 "resource %s's property dependency %s (from property %s) refers to missing resource"},
	{ST_REF_DELETED_WITH, "integrity/deleted-with-order",
	 "resource %s is specified as being deleted with %s, which comes after it",
	 "integrity/deleted-with-missing",
	 "resource %s is specified as being deleted with %s, which is missing"},
	{ST_REF_REPLACE_WITH, "integrity/replace-with-order",
	 "resource %s is specified as being replaced with %s, which comes after it",
	 "integrity/replace-with-missing",
	 "resource %s is specified as being replaced with %s, which is missing"},
};

typedef struct ref_check {
	ictx *c;
	size_t i;
	const char *urn;
} ref_check;

/* One reference: it must point to a resource before this one. The formats are the constant
 * messages of ref_rules. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static int check_ref(void *p, st_ref *ref)
{
	ref_check *rc = p;
	ictx *c = rc->c;
	const ref_rule *rr = NULL;
	st_strmap_slot *sl = st_strmap_getn(&c->index, ref->value, ref->len);
	if (sl && sl->a < rc->i)
		return ST_REF_NEXT;
	for (size_t k = 0; k < sizeof(ref_rules) / sizeof(ref_rules[0]); k++)
		if (ref_rules[k].kind == ref->kind)
			rr = &ref_rules[k];
	if (!rr)
		return ST_REF_NEXT;
	if (sl && sl->b > rc->i)
		ERR(rr->order_rule, ref_ptr(c, rc->i, ref), rc->urn, rr->order_fmt, rc->urn,
		    ref->value, ref->key);
	else
		ERR(rr->missing_rule, ref_ptr(c, rc->i, ref), rc->urn, rr->missing_fmt, rc->urn,
		    ref->value, ref->key);
	return ST_REF_NEXT;
}
#pragma GCC diagnostic pop

/* A resource's fields, found in one pass over its keys (cheaper than hashing each name). */
typedef struct rfields {
	json_t *urn, *type, *id, *custom, *del, *pending_repl;
	json_t *refs[ST_REF_NFIELDS]; /* parent, dependencies, ... as st__ref_foreach_found */
	json_t *props[4];             /* inputs, outputs, defaults, replacementTrigger */
} rfields;

#define RF_PARENT 0   /* refs[]: bit positions of the kinds (ST_REF_PARENT = 1u << 0, ...) */
#define RF_DEPS 1
#define RF_PDEPS 2
#define RF_DELETED_WITH 3
#define RF_REPLACE_WITH 4
#define RF_PROVIDER 5

/* The references of resource i (the kinds in `what`), properties in sorted order. */
static void check_refs(ictx *c, size_t i, const char *urn, json_t *r, const rfields *rf,
		       unsigned what)
{
	ref_check rc = {c, i, urn};
	if (st__ref_foreach_found(r, rf->refs, what | ST_REF_SORTED, check_ref, &rc) < 0)
		NOMEM(c);
}

static void res_fields(json_t *r, rfields *f)
{
	const char *k;
	size_t kl;
	json_t *v;

	memset(f, 0, sizeof(*f));
	for (void *it = json_object_iter(r); it; it = json_object_iter_next(r, it)) {
		json_t **slot = NULL;
		k = json_object_iter_key(it);
		kl = json_object_iter_key_len(it);
		v = json_object_iter_value(it);
		if (ST_KEY_IS(k, kl, "urn"))
			slot = &f->urn;
		else if (ST_KEY_IS(k, kl, "type"))
			slot = &f->type;
		else if (ST_KEY_IS(k, kl, "id"))
			slot = &f->id;
		else if (ST_KEY_IS(k, kl, "parent"))
			slot = &f->refs[RF_PARENT];
		else if (ST_KEY_IS(k, kl, "provider"))
			slot = &f->refs[RF_PROVIDER];
		else if (ST_KEY_IS(k, kl, "custom"))
			slot = &f->custom;
		else if (ST_KEY_IS(k, kl, "delete"))
			slot = &f->del;
		else if (ST_KEY_IS(k, kl, "pendingReplacement"))
			slot = &f->pending_repl;
		else if (ST_KEY_IS(k, kl, "deletedWith"))
			slot = &f->refs[RF_DELETED_WITH];
		else if (ST_KEY_IS(k, kl, "dependencies"))
			slot = &f->refs[RF_DEPS];
		else if (ST_KEY_IS(k, kl, "propertyDependencies"))
			slot = &f->refs[RF_PDEPS];
		else if (ST_KEY_IS(k, kl, "replaceWith"))
			slot = &f->refs[RF_REPLACE_WITH];
		else if (ST_KEY_IS(k, kl, "inputs"))
			slot = &f->props[0];
		else if (ST_KEY_IS(k, kl, "outputs"))
			slot = &f->props[1];
		else if (ST_KEY_IS(k, kl, "defaults"))
			slot = &f->props[2];
		else if (ST_KEY_IS(k, kl, "replacementTrigger"))
			slot = &f->props[3];
		if (slot)
			*slot = v;
	}
}

static const char *fstr(json_t *v)
{
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* What a resource of version 0 to 2 does not have (ResourceV1: no provider; V1 and V2: no
 * propertyDependencies, deletedWith, replaceWith, pendingReplacement, replacementTrigger):
 * Pulumi's decoder drops it before any rule (UpToResourceV3 derives propertyDependencies from
 * the dependencies, whose problems come first), so no rule looks at it. */
static void drop_newer_fields(int version, rfields *rf)
{
	if (version <= 1)
		rf->refs[RF_PROVIDER] = NULL;
	rf->refs[RF_PDEPS] = rf->refs[RF_DELETED_WITH] = rf->refs[RF_REPLACE_WITH] = NULL;
	rf->pending_repl = rf->props[3] = NULL;
}

/* Walks a resource's property maps; base_ptr NULL: the resource at index i. */
static void walk_props(ictx *c, const rfields *rf, const char *base_ptr, size_t i,
		       const char *urn)
{
	static const char *const fields[] = {"inputs", "outputs", "defaults",
					     "replacementTrigger"};
	c->wbase = base_ptr;
	c->wres = i;
	for (int f = 0; f < 4; f++) {
		json_t *v = rf->props[f];
		if (!v)
			continue;
		c->wfield = fields[f];
		c->segs.n = 0;
		st__check_value(c, v, urn, 0);
	}
}

/* Expected stack and project: the checkpoint's name, else the root stack resource. */
static void expected_names(ictx *c, char **stack, char **project)
{
	const char *qn = st_state_checkpoint_stack(c->s);
	size_t i;
	json_t *r;

	*stack = *project = NULL;
	if (qn && *qn) {
		const char *s1 = strchr(qn, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
		if (s2) {
			*project = st_strndup(s1 + 1, (size_t)(s2 - s1 - 1));
			*stack = st_strdup(s2 + 1);
		} else if (!s1) {
			*stack = st_strdup(qn);
		}
		if (*stack)
			return;
	}
	json_array_foreach(c->res, i, r) {
		const char *t = st_json_str(r, "type"), *u = st_json_str(r, "urn");
		st_urn pu;
		if (t && !strcmp(t, ST_ROOT_STACK_TYPE) && !st_json_str(r, "parent") && u &&
		    st_urn_parse(u, &pu) == ST_OK) {
			*stack = st_strndup(pu.stack, pu.stack_len);
			*project = st_strndup(pu.project, pu.project_len);
			return;
		}
	}
}

static void check_pending(ictx *c)
{
	json_t *dep = st_state_deployment(c->s);
	json_t *ops = json_object_get(dep, "pending_operations"), *op;
	st_strmap seen;
	size_t i;

	st_strmap_init(&seen);
	json_array_foreach(ops, i, op) {
		json_t *r = json_object_get(op, "resource");
		const char *urn = st_json_str(r, "urn"), *type = st_json_str(op, "type");
		char p[256];
		int created;
		snprintf(p, sizeof(p), "%s/pending_operations/%zu", c->base, i);
		/* DeserializeResource's checks: Pulumi cannot load the state */
		if (!urn || !*urn) {
			ERR("pending/missing-urn", p, NULL, "resource missing required 'urn' field");
			continue;
		}
		{
			const char *rt = st_json_str(r, "type"), *rid = st_json_str(r, "id");
			if (!rt || !*rt)
				ERR("pending/missing-type", p, urn,
				    "resource '%s' missing required 'type' field", urn);
			if (!st_json_bool(r, "custom") && rid && *rid)
				ERR("pending/custom-with-id", p, urn,
				    "resource '%s' has 'custom' false but non-empty ID", urn);
		}
		st_strmap_slot *sl = st_strmap_put(&seen, urn, &created);
		if (!sl)
			NOMEM(c);
		if (sl && !created)
			WARN("pending/duplicate", p, urn,
			     "more than one pending operation on %s (the first is #%zu)", urn,
			     sl->a);
		else if (sl)
			sl->a = i;
		if (!type)
			continue;
		st_strmap_slot *live = st_strmap_get(&c->index, urn);
		int exists = 0;
		if (live) {
			for (size_t k = live->a; k <= live->b; k++) {
				json_t *x = json_array_get(c->res, k);
				const char *xu = st_json_str(x, "urn");
				if (xu && !strcmp(xu, urn) && !st_json_bool(x, "delete"))
					exists = 1;
			}
		}
		if (!strcmp(type, "creating") && exists)
			WARN("pending/already-exists", p, urn,
			     "pending creating operation on %s, which already exists in the state",
			     urn);
		else if ((!strcmp(type, "updating") || !strcmp(type, "deleting")) && !live)
			WARN("pending/unknown-resource", p, urn,
			     "pending %s operation on %s, which is not in the state", type, urn);
	}
	st_strmap_free(&seen);
}

/* DeserializeManifest: each plugin's version, when there is one, by semver.ParseTolerant. */
static void check_plugins(ictx *c)
{
	json_t *m = json_object_get(st_state_deployment(c->s), "manifest");
	json_t *pl = json_object_get(m, "plugins"), *x;
	size_t i;
	json_array_foreach(pl, i, x) {
		const char *v = st_json_str(x, "version");
		char *e, p[160];
		if (!v || !*v)
			continue;
		e = st__go_semver_error(v, strlen(v), 1);
		if (!e)
			continue;
		snprintf(p, sizeof(p), "%s/manifest/plugins/%zu/version", c->base, i);
		ERR("manifest/plugin-version", p, NULL, "%s", e);
		free(e);
	}
}

static void check_aliases(ictx *c)
{
	st_strmap aliases;
	size_t i;
	json_t *r;
	st_strmap_init(&aliases);
	json_array_foreach(c->res, i, r) {
		json_t *al = json_object_get(r, "aliases"), *a;
		size_t j;
		const char *urn = st_json_str(r, "urn");
		json_array_foreach(al, j, a) {
			int created;
			st_strmap_slot *sl;
			if (!json_is_string(a))
				continue;
			sl = st_strmap_put(&aliases, json_string_value(a), &created);
			if (!sl) {
				NOMEM(c);
				continue;
			}
			if (created) {
				sl->a = i;
				continue;
			}
			char p[600];
			snprintf(p, sizeof(p), "%s/%zu", ptr_res(c, i, "aliases"), j);
			const char *other = st_json_str(json_array_get(c->res, sl->a), "urn");
			WARN("aliases/collision", p, urn,
			     "two resources ('%s' and '%s') have the same alias: '%s'",
			     other ? other : "?", urn ? urn : "?", json_string_value(a));
		}
	}
	st_strmap_free(&aliases);
}

int st__integrity_magic(const st_state *s, st_problems *out)
{
	json_t *dep = st_state_deployment(s);
	json_t *m = dep ? json_object_get(dep, "manifest") : NULL;
	if (json_is_object(m)) {
		char want[65];
		const char *have = st_json_str(m, "magic");
		st_magic_for_version(st_json_str(m, "version"), want);
		if (strcmp(have ? have : "", want) != 0) {
			char p[128];
			snprintf(p, sizeof(p), "%s/manifest/magic", st__deployment_pointer(s));
			if (st_problems_add(out, ST_SEV_ERROR, "integrity/magic", p, NULL,
					    "magic cookie mismatch; possible tampering/corruption "
					    "detected (expected the SHA-256 of the manifest version "
					    "'%s': %s; every statetool write recomputes it)",
					    st_json_str(m, "version") ? st_json_str(m, "version") : "",
					    want))
				return ST_ENOMEM;
		}
	}
	return ST_OK;
}

int st_integrity_check(st_state *s, st_problems *out, st_error *err)
{
	ST_ASSERT_ARG_AS(s, "state");
	ST_ASSERT_ARG(out);
	return st__integrity_check_ex(s, out, 0, err);
}

/*
 * The property walk of a big state's resources on a second thread (it only reads, and is
 * half the check's work). Its problems are put where the one-thread check reports them:
 * the main loop notes, for each resource, how many problems were reported when the walk's
 * turn came. (Its threshold: ST__T_INTEGRITY in lib/util/thread.c's table.)
 */

typedef struct walker {
	ictx c;            /* its own pointer buffer, segments and problem list */
	st_problems out;
	size_t *res_of;    /* each problem's resource */
	size_t res_of_cap;
	st__two th;
} walker;

static void *walker_main(void *arg)
{
	walker *w = arg;
	ictx *c = &w->c;
	json_t *r;
	size_t i;

	json_array_foreach(c->res, i, r) {
		rfields rf;
		size_t before = w->out.count;
		const char *urn;
		res_fields(r, &rf);
		if (c->s->version <= 2)
			drop_newer_fields(c->s->version, &rf);
		urn = fstr(rf.urn);
		if (!urn || !*urn)
			continue; /* as the main loop: no walk without a URN */
		walk_props(c, &rf, NULL, i, urn);
		if (w->out.count > w->res_of_cap) {
			size_t cap = w->out.capacity;
			size_t *t = realloc(w->res_of, cap * sizeof(*t));
			if (!t) {
				NOMEM(c);
				break;
			}
			w->res_of = t;
			w->res_of_cap = cap;
		}
		for (size_t k = before; k < w->out.count; k++)
			w->res_of[k] = i;
	}
	return NULL;
}

/* The walker's problems into `out` at their places; its ciphertext count taken over. */
static void walker_merge(ictx *c, walker *w, const size_t *pos)
{
	st_problems *out = c->out;
	size_t na = out->count, nb = w->out.count, j = 0, k = 0, t = 0;

	c->ciphertexts = w->c.ciphertexts;
	c->first_cipher_ptr = w->c.first_cipher_ptr;
	w->c.first_cipher_ptr = NULL;
	if (w->c.oom || w->c.ptr.oom)
		c->oom = 1;
	if (nb) {
		st_problem *m = malloc((na + nb) * sizeof(*m));
		if (!m) {
			NOMEM(c);
			st_problems_clear(&w->out);
			return;
		}
		while (j < na || k < nb) {
			if (k < nb && (j >= na || pos[w->res_of[k]] <= j))
				m[t++] = w->out.items[k++];
			else
				m[t++] = out->items[j++];
		}
		free(out->items);
		out->items = m;
		out->count = out->capacity = na + nb;
		out->errors += w->out.errors;
		out->warnings += w->out.warnings;
		free(w->out.items); /* the strings are out's now */
		memset(&w->out, 0, sizeof(w->out));
	}
}

static void walker_free(walker *w)
{
	st_problems_clear(&w->out);
	free(w->res_of);
	st_buf_free(&w->c.ptr);
	st_segs_free(&w->c.segs);
	free(w->c.first_cipher_ptr);
}

/* What the per-resource rules share across the resources. */
typedef struct ic_run {
	ictx *c;
	st_strmap providers;  /* provider references defined so far (key and p owned) */
	st_strmap live;       /* URNs of copies not marked for deletion (when any repeats) */
	char *exp_stack, *exp_project;
	size_t roots, first_root;
	int repeats;          /* a URN occurs more than once */
	walker wk, *wkp;      /* the property walk on a second thread, or NULL */
	size_t *pos;          /* with it: problems reported when resource i's walk came */
} ic_run;

/* The property walk of a big state on a second thread. */
static void start_walker(ic_run *run, unsigned flags)
{
	ictx *c = run->c;
	if (!(flags & ST__IC_TWO_THREADS) ||
	    !st__two_worth(ST__T_INTEGRITY, json_array_size(c->res), 0) ||
	    !(run->pos = malloc(json_array_size(c->res) * sizeof(size_t))))
		return;
	memset(&run->wk, 0, sizeof(run->wk));
	run->wk.c.s = c->s;
	run->wk.c.out = &run->wk.out;
	run->wk.c.res = c->res;
	run->wk.c.base = c->base;
	run->wk.c.secrets_type = c->secrets_type;
	st_buf_init(&run->wk.c.ptr);
	if (st__two_start(&run->wk.th, ST__T_INTEGRITY, walker_main, &run->wk, 0)) {
		run->wkp = &run->wk;
	} else {
		free(run->pos);
		run->pos = NULL;
	}
}

/* Every URN's first and last position. ST_OK or ST_ENOMEM. */
static int index_urns(ic_run *run)
{
	ictx *c = run->c;
	json_t *r;
	size_t i;
	json_array_foreach(c->res, i, r) {
		const char *u = st_json_str(r, "urn");
		int created;
		st_strmap_slot *sl;
		if (!u || !*u)
			continue;
		if (!(sl = st_strmap_put(&c->index, u, &created)))
			return ST_ENOMEM;
		if (created)
			sl->a = i;
		else
			run->repeats = 1;
		sl->b = i;
	}
	expected_names(c, &run->exp_stack, &run->exp_project);
	/* "org/project/stack" or "stack" always give the stack: none means no memory */
	const char *qn = st_state_checkpoint_stack(c->s), *sl1 = qn ? strchr(qn, '/') : NULL;
	if (!run->exp_stack && qn && *qn && (!sl1 || strchr(sl1 + 1, '/')))
		NOMEM(c);
	return ST_OK;
}

/* The URN against the resource's type and the state's stack and project. */
static void check_urn(ic_run *run, size_t i, const char *urn, const char *type, const st_urn *pu)
{
	ictx *c = run->c;
	const char *es = run->exp_stack, *ep = run->exp_project;
	if (type && (pu->type_len != strlen(type) || strncmp(pu->type, type, pu->type_len)))
		WARN("urn/type-mismatch", ptr_res(c, i, "urn"), urn,
		     "the URN's type '%.*s' differs from the resource's type '%s'",
		     (int)pu->type_len, pu->type, type);
	if (es && (pu->stack_len != strlen(es) || strncmp(pu->stack, es, pu->stack_len) ||
		   (ep && (pu->project_len != strlen(ep) ||
			   strncmp(pu->project, ep, pu->project_len)))))
		WARN("urn/stack-mismatch", ptr_res(c, i, "urn"), urn,
		     "the URN names stack '%.*s' of project '%.*s', but the state belongs to stack "
		     "'%s'%s%s%s",
		     (int)pu->stack_len, pu->stack, (int)pu->project_len, pu->project, es,
		     ep ? " of project '" : "", ep ? ep : "", ep ? "'" : "");
}

/* A provider: referenceable (NewReference: the URN's own type must be a provider type), then
 * known to later resources, by the (URN, ID) pair a reference parses to. */
static void define_provider(ic_run *run, size_t i, const char *urn, const char *id)
{
	ictx *c = run->c;
	st_error perr;
	int prc, created;
	char *ref;
	st_strmap_slot *sl;
	st_error_clear(&perr);
	prc = st__provider_urn_check(urn, &perr);
	if (prc == ST_ENOMEM)
		NOMEM(c);
	else if (prc)
		ERR("integrity/provider-not-referenceable", ptr_res(c, i, "urn"), urn,
		    "provider %s is not referenceable: %s", urn, perr.message);
	if (prc != ST_OK)
		return;
	ref = st__provider_ref(urn, id);
	if (ref && st__provider_ref_urn_len(ref, strlen(ref)) != strlen(urn)) {
		/* Pulumi keys providers by (URN, ID) and parses a reference at its last '::':
		 * with '::' in its ID no reference parses to this pair, none names it */
		free(ref);
		return;
	}
	sl = ref ? st_strmap_put(&run->providers, ref, &created) : NULL;
	if (sl && created) {
		sl->p = ref;
		sl->a = 1; /* a reference to it parses */
	} else {
		free(ref);
	}
	if (!sl)
		NOMEM(c);
}

/* The resource's provider reference: parses, and names a provider defined above. */
static void check_provider_ref(ic_run *run, size_t i, const char *urn, const char *prov,
			       int pending_replacement)
{
	ictx *c = run->c;
	st_strmap_slot *known = st_strmap_get(&run->providers, prov);
	char *pu_urn = NULL, *pu_id = NULL;
	st_error perr;
	int prc;
	if (known && known->a)
		return; /* a provider defined above whose reference parses */
	st_error_clear(&perr);
	prc = st_provider_ref_parse(prov, &pu_urn, &pu_id, &perr);
	if (prc == ST_ENOMEM)
		NOMEM(c);
	else if (prc != ST_OK)
		ERR("integrity/provider-parse", ptr_res(c, i, "provider"), urn,
		    "failed to parse provider reference for resource %s: %s", urn, perr.message);
	else if (!known && !pending_replacement)
		ERR("integrity/provider-unknown", ptr_res(c, i, "provider"), urn,
		    "resource %s refers to unknown provider %s", urn, prov);
	free(pu_urn);
	free(pu_id);
}

/* The qualified type should be the parent's plus this type: the type itself under the root
 * stack, else the parent's qualified type, '$' and the type. */
static void check_parent_type(ictx *c, size_t i, const char *urn, const st_urn *pu,
			      const char *parent, const char *type)
{
	st_urn pp;
	size_t tl;
	int root, follows;
	char *want;
	if (!st_strmap_get(&c->index, parent) || st_urn_parse(parent, &pp) != ST_OK || !type)
		return;
	tl = strlen(type);
	root = pp.qtype_len == strlen(ST_ROOT_STACK_TYPE) &&
	       !strncmp(pp.qtype, ST_ROOT_STACK_TYPE, pp.qtype_len);
	follows = root ? pu->qtype_len == tl && !memcmp(pu->qtype, type, tl)
		       : pu->qtype_len == pp.qtype_len + 1 + tl &&
				 !memcmp(pu->qtype, pp.qtype, pp.qtype_len) &&
				 pu->qtype[pp.qtype_len] == '$' &&
				 !memcmp(pu->qtype + pp.qtype_len + 1, type, tl);
	if (follows)
		return;
	want = root ? st_strdup(type) : st_asprintf("%.*s$%s", (int)pp.qtype_len, pp.qtype, type);
	if (!want)
		NOMEM(c);
	else
		WARN("urn/parent-type", ptr_res(c, i, "urn"), urn,
		     "the URN's qualified type '%.*s' does not follow its parent's ('%s' expected)",
		     (int)pu->qtype_len, pu->qtype, want);
	free(want);
}

static int has_prefix(const char *urn)
{
	return !strncmp(urn, "urn:pulumi:", 11);
}

/* Is `urn` a resource's before index i (in the map VerifyIntegrity has built by then)? */
static int has_before(ictx *c, const char *urn, size_t i)
{
	st_strmap_slot *sl = *urn ? st_strmap_get(&c->index, urn) : NULL;
	return sl && sl->a < i;
}

/* A URN st_urn_parse refuses. Without its prefix, Pulumi panics when it reads the URN's parts
 * (URNName's assertion): VerifyIntegrity does for a child whose parent comes before it (and
 * for that parent: reported at the child's 'parent'), `pulumi stack import` for every
 * resource. Else (a prefix but too few '::'; or no code of a load reads it) a warning. */
static void invalid_urn(ictx *c, size_t i, const char *urn, const char *parent)
{
	if (!has_prefix(urn) && c->s->envelope == ST_ENVELOPE_EXPORT)
		ERR("urn/no-prefix", ptr_res(c, i, "urn"), urn,
		    "'%s' has no 'urn:pulumi:' prefix: pulumi stack import panics on it (fatal: An "
		    "assertion has failed: Urn is: '%s')",
		    urn, urn);
	else if (!has_prefix(urn) && parent && has_before(c, parent, i))
		ERR("urn/no-prefix", ptr_res(c, i, "urn"), urn,
		    "'%s' has no 'urn:pulumi:' prefix: Pulumi's integrity check panics on it, the "
		    "URN of a child (fatal: An assertion has failed: Urn is: '%s')",
		    urn, urn);
	else
		WARN("urn/invalid", ptr_res(c, i, "urn"), urn,
		     "'%s' is not a valid URN (urn:pulumi:STACK::PROJECT::TYPE::NAME)%s", urn,
		     has_prefix(urn) ? ""
					  : ": Pulumi loads it here, but panics wherever it reads "
					    "the URN's parts");
}

/* More than one copy not marked for deletion (none without a URN that occurs twice). */
static void check_duplicate(ic_run *run, size_t i, const char *urn)
{
	ictx *c = run->c;
	int created;
	st_strmap_slot *sl = st_strmap_put(&run->live, urn, &created);
	if (!sl)
		NOMEM(c);
	else if (created)
		sl->a = i;
	else
		ERR("integrity/duplicate-urn", ptr_res(c, i, NULL), urn,
		    "duplicate resource %s (not marked for deletion)", urn);
}

/* Every rule of one resource, in the order its problems are reported. */
static void check_resource(ic_run *run, size_t i, json_t *r)
{
	ictx *c = run->c;
	rfields fields, *rf = &fields;
	st_urn pu;
	int urn_ok;
	res_fields(r, rf);
	if (c->s->version <= 2)
		drop_newer_fields(c->s->version, rf);
	const char *urn = fstr(rf->urn), *type = fstr(rf->type), *id = fstr(rf->id);
	const char *parent = fstr(rf->refs[RF_PARENT]), *prov = fstr(rf->refs[RF_PROVIDER]);

	if (!urn || !*urn) {
		/* DeserializeResource's words: it runs before VerifyIntegrity, whose are never
		 * seen ("resource at index N ...": the index is in the pointer) */
		ERR("integrity/missing-urn", ptr_res(c, i, NULL), NULL,
		    "resource missing required 'urn' field");
		return;
	}
	if (!type || !*type)
		ERR("integrity/missing-type", ptr_res(c, i, NULL), urn,
		    "resource '%s' missing required 'type' field", urn);
	if (!json_is_true(rf->custom) && id && *id)
		ERR("integrity/custom-with-id", ptr_res(c, i, "id"), urn,
		    "resource '%s' has 'custom' false but non-empty ID", urn);
	if (!(urn_ok = st_urn_parse(urn, &pu) == ST_OK))
		invalid_urn(c, i, urn, parent);
	else
		check_urn(run, i, urn, type, &pu);
	if (parent && c->s->envelope != ST_ENVELOPE_EXPORT && has_before(c, parent, i) &&
	    !has_prefix(parent)) /* (in an export the parent's own urn/no-prefix says it) */
		ERR("urn/no-prefix", ptr_res(c, i, "parent"), urn,
		    "the parent '%s' has no 'urn:pulumi:' prefix: Pulumi's integrity check "
		    "panics on it (fatal: An assertion has failed: Urn is: '%s')",
		    parent, parent);
	if (type && !strcmp(type, ST_ROOT_STACK_TYPE) && (!parent || !*parent) &&
	    !json_is_true(rf->del)) {
		if (run->roots++ == 0)
			run->first_root = i;
		else
			WARN("root/multiple", ptr_res(c, i, NULL), urn,
			     "more than one root stack resource (the first is at index %zu)",
			     run->first_root);
	}
	if (type && st_type_is_provider(type))
		define_provider(run, i, urn, id);
	if (prov && *prov)
		check_provider_ref(run, i, urn, prov, json_is_true(rf->pending_repl));
	check_refs(c, i, urn, r, rf, ST_REF_PARENT);
	if (urn_ok && parent && *parent)
		check_parent_type(c, i, urn, &pu, parent, type);
	check_refs(c, i, urn, r, rf, ST_REF_URNS & ~(unsigned)ST_REF_PARENT);
	if (run->wkp)
		run->pos[i] = c->out->count;
	else
		walk_props(c, rf, NULL, i, urn);
	if (run->repeats && !json_is_true(rf->del))
		check_duplicate(run, i, urn);
}

/* Resources of pending operations may hold secrets too; then the ciphertexts need a
 * provider (initializeSecretsManager: a provider without a type is none). */
static void check_pending_secrets(ictx *c, json_t *dep)
{
	json_t *ops = json_object_get(dep, "pending_operations"), *op;
	size_t i;
	json_array_foreach(ops, i, op) {
		char p[128];
		json_t *rr = json_object_get(op, "resource");
		snprintf(p, sizeof(p), "%s/pending_operations/%zu/resource", c->base, i);
		if (json_is_object(rr)) {
			rfields rf;
			res_fields(rr, &rf);
			if (c->s->version <= 2)
				drop_newer_fields(c->s->version, &rf);
			walk_props(c, &rf, p, 0, fstr(rf.urn));
		}
	}
	if (c->ciphertexts && !(c->secrets_type && *c->secrets_type))
		ERR("secrets/no-provider", c->first_cipher_ptr, NULL,
		    "decrypting secret value: failed to decrypt: snapshot contains encrypted "
		    "secrets but no secrets manager could be found (%zu ciphertext%s, no "
		    "'secrets_providers'%s)",
		    c->ciphertexts, c->ciphertexts == 1 ? "" : "s",
		    c->s->version < 3 && json_object_get(dep, "secrets_providers")
			    ? ": a version 0 to 2 deployment has none, Pulumi drops it"
			    : "");
}

static void check_snippets(ictx *c, json_t *dep)
{
	json_t *sn = json_object_get(dep, "snippets"), *x;
	st_strmap uuids;
	size_t i;
	st_strmap_init(&uuids);
	json_array_foreach(sn, i, x) {
		const char *u = st_json_str(x, "uuid");
		char p[128];
		int created;
		st_strmap_slot *sl;
		snprintf(p, sizeof(p), "%s/snippets/%zu", c->base, i);
		if (!u || !*u) {
			ERR("integrity/snippet-uuid", p, NULL,
			    "snippet at index %zu missing required 'uuid' field", i);
			continue;
		}
		if (!(sl = st_strmap_put(&uuids, u, &created)))
			NOMEM(c);
		else if (created)
			sl->a = i;
		else
			ERR("integrity/snippet-duplicate", p, NULL,
			    "duplicate snippet uuid \"%s\" at indexes %zu and %zu", u, sl->a, i);
	}
	st_strmap_free(&uuids);
}

static void ic_free(ic_run *run)
{
	ictx *c = run->c;
	if (run->wkp) { /* left early: the walker's findings are not wanted */
		st__two_join(&run->wkp->th);
		walker_free(run->wkp);
	}
	free(run->pos);
	for (size_t k = 0; k < run->providers.cap; k++)
		if (run->providers.slots && run->providers.slots[k].hash)
			free(run->providers.slots[k].p);
	st_strmap_free(&run->providers);
	st_strmap_free(&run->live);
	st_strmap_free(&c->index);
	st_buf_free(&c->ptr);
	st_segs_free(&c->segs);
	free(c->first_cipher_ptr);
	free(run->exp_stack);
	free(run->exp_project);
}

/* A check's context and run over s, reporting into out (ic_free frees them): the deployment,
 * or NULL when s has none (nothing to check). */
static json_t *ic_begin(ictx *c, ic_run *run, st_state *s, st_problems *out)
{
	json_t *dep = st_state_deployment(s);

	memset(c, 0, sizeof(*c));
	memset(run, 0, sizeof(*run));
	run->c = c;
	c->s = s;
	c->out = out;
	c->base = st__deployment_pointer(s);
	c->res = dep ? json_object_get(dep, "resources") : NULL;
	if (!json_is_array(c->res))
		c->res = NULL;
	st_buf_init(&c->ptr);
	st_strmap_init(&c->index);
	st_strmap_init(&run->providers);
	st_strmap_init(&run->live);
	if (dep && s->version >= 3) /* DeploymentV1 and V2 have none: Pulumi drops it */
		c->secrets_type = st_json_str(json_object_get(dep, "secrets_providers"), "type");
	return dep;
}

int st__integrity_check_ex(st_state *s, st_problems *out, unsigned flags, st_error *err)
{
	ictx cx, *c = &cx;
	ic_run run;
	json_t *dep, *r;
	size_t i;
	int rc = ST_OK;

	if (!(dep = ic_begin(c, &run, s, out)))
		goto done;
	start_walker(&run, flags);
	/* 1. The magic cookie. */
	if (!(flags & ST__IC_SKIP_MAGIC) && st__integrity_magic(s, out) != ST_OK)
		NOMEM(c);
	if (index_urns(&run) != ST_OK) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto done;
	}
	json_array_foreach(c->res, i, r)
		check_resource(&run, i, r);
	if (run.wkp) {
		st__two_join(&run.wkp->th);
		walker_merge(c, run.wkp, run.pos);
		walker_free(run.wkp);
		run.wkp = NULL;
	}
	check_pending_secrets(c, dep);
	check_snippets(c, dep);
	check_pending(c);
	check_plugins(c);
	check_aliases(c);
	if (c->oom || c->ptr.oom)
		rc = st__err(err, ST_ENOMEM, "out of memory (the integrity check is incomplete)");
done:
	ic_free(&run);
	return rc;
}


/* ---- after an edit of a valid state: only where errors can be ---- */

static unsigned long touched_runs;

static int touched_off;

unsigned long st__integrity_touched_runs(void)
{
	return __atomic_load_n(&touched_runs, __ATOMIC_RELAXED);
}

void st__integrity_touched_enable(int on)
{
	__atomic_store_n(&touched_off, !on, __ATOMIC_RELAXED);
}

int st__integrity_touched_enabled(void)
{
	return !__atomic_load_n(&touched_off, __ATOMIC_RELAXED);
}

/* Does r refer to a touched URN: a reference's target, or its provider's URN? */
static int is_touched(json_t *r, const st_strmap *t, const st_prefilter *tf)
{
	const char *prov = st_json_str(r, "provider");
	size_t n;
	if (prov && (n = st__provider_ref_urn_len(prov, strlen(prov))) &&
	    st_prefilter_maybe(tf, prov, n) && st_strmap_getn(t, prov, n))
		return 1;
	return st__refers(r, t, tf, NULL, NULL);
}

int st__integrity_check_touched(st_state *s, const char *full, const st_strmap *touched,
				const st_prefilter *tf, st_problems *out, int *whole,
				st_error *err)
{
	ictx cx, *c = &cx;
	ic_run run;
	json_t *dep, *r;
	size_t i;
	int rc = ST_OK;

	*whole = 0;
	if (!(dep = ic_begin(c, &run, s, out)))
		goto done;
	if (index_urns(&run) != ST_OK) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto done;
	}
	if (run.repeats) {
		*whole = 1;
		goto done;
	}
	__atomic_add_fetch(&touched_runs, 1, __ATOMIC_RELAXED);
	if (st__integrity_magic(s, out) != ST_OK)
		NOMEM(c);
	json_array_foreach(c->res, i, r) {
		const char *type;
		if (full[i] || (touched->count && is_touched(r, touched, tf))) {
			check_resource(&run, i, r);
		} else if ((type = st_json_str(r, "type")) && st_type_is_provider(type) &&
			   st_json_str(r, "urn")) {
			/* known to the resources below (it was valid: no problem of its own) */
			define_provider(&run, i, st_json_str(r, "urn"), st_json_str(r, "id"));
		}
	}
	check_pending_secrets(c, dep);
	check_snippets(c, dep);
	check_pending(c);
	check_plugins(c);
	if (c->oom || c->ptr.oom)
		rc = st__err(err, ST_ENOMEM, "out of memory (the integrity check is incomplete)");
done:
	ic_free(&run);
	return rc;
}
