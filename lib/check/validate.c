/*
 * Validation: the JSON Schemas in schemas/, Pulumi's integrity rules (VerifyIntegrity, with
 * Pulumi's wording) and statetool's own warnings. Every problem is reported, not the first.
 *
 * Rule identifiers are stable; the README lists them. Severity: an error is something that
 * makes Pulumi refuse the state or breaks it on the next update; a warning is something odd
 * that Pulumi accepts.
 */
#include "internal.h"
#include "check/check.h"

#include <pthread.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *st__deployment_pointer(const st_state *s)
{
	if (s->envelope == ST_ENVELOPE_EXPORT)
		return "/deployment";
	return s->version == 0 ? "/latest" : "/checkpoint/latest";
}

/* ---- schemas ---- */

int st_schema_builtin(st_schema **out, st_error *err)
{
	st_schema *s;
	int rc = st_schema_new(&s, err);
	if (rc)
		return rc;
	for (const st_embedded_schema *e = st_embedded_schemas; e->name; e++) {
		json_t *doc = NULL;
		rc = st_json_parse(&doc, (const char *)e->data, e->len, e->name, NULL, NULL, NULL,
				   err);
		if (rc == ST_OK)
			rc = st_schema_add(s, doc, NULL, err);
		json_decref(doc);
		if (rc)
			goto fail;
	}
	rc = st_schema_compile(s, err);
	if (rc)
		goto fail;
	*out = s;
	return ST_OK;
fail:
	st_schema_free(s);
	*out = NULL;
	return rc;
}

#define STATE_SCHEMA "https://statetool.invalid/schemas/state.json"
#define IMPORT_SCHEMA "https://statetool.invalid/schemas/import.json"

/* ---- integrity ---- */

/* Where a reference sits: resources/i/field[/key][/j]. Made into a pointer only when a
 * problem is reported. */
typedef struct where {
	size_t i;
	const char *field;
	const char *key; /* a property name (propertyDependencies), or NULL */
	long j;          /* a list index, or -1 */
} where;

static const char *where_ptr(ictx *c, const where *w)
{
	ptr_res(c, w->i, w->field);
	if (w->key)
		st_pointer_add_key(&c->ptr, w->key, strlen(w->key));
	if (w->j >= 0)
		st_pointer_add_index(&c->ptr, (size_t)w->j);
	return c->ptr.data ? c->ptr.data : "";
}

/* The formats are the constant messages of this file, each taking the URNs (and a key). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void check_ref(ictx *c, size_t i, const char *urn, const char *target, const where *w,
		      const char *rule_base, const char *order_fmt, const char *missing_fmt,
		      const char *extra)
{
	char rule[64];
	st_strmap_slot *sl;
	if (!target || !*target)
		return;
	sl = st_strmap_get(&c->index, target);
	if (sl && sl->a < i)
		return;
	if (sl && sl->b > i) {
		snprintf(rule, sizeof(rule), "integrity/%s-order", rule_base);
		if (extra)
			ERR(rule, where_ptr(c, w), urn, order_fmt, urn, target, extra);
		else
			ERR(rule, where_ptr(c, w), urn, order_fmt, urn, target);
	} else {
		snprintf(rule, sizeof(rule), "integrity/%s-missing", rule_base);
		if (extra)
			ERR(rule, where_ptr(c, w), urn, missing_fmt, urn, target, extra);
		else
			ERR(rule, where_ptr(c, w), urn, missing_fmt, urn, target);
	}
}

#pragma GCC diagnostic pop

static void check_urn_list(ictx *c, size_t i, const char *urn, json_t *list, const char *field,
			   const char *rule_base, const char *order_fmt, const char *missing_fmt)
{
	size_t j;
	json_t *v;
	json_array_foreach(list, j, v) {
		where w = {i, field, NULL, (long)j};
		if (!json_is_string(v))
			continue;
		check_ref(c, i, urn, json_string_value(v), &w, rule_base, order_fmt, missing_fmt,
			  NULL);
	}
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A resource's fields, found in one pass over its keys (cheaper than hashing each name). */
typedef struct rfields {
	json_t *urn, *type, *id, *parent, *provider, *custom, *del, *pending_repl, *deleted_with,
		*deps, *pdeps, *replace_with;
	json_t *props[4]; /* inputs, outputs, defaults, replacementTrigger */
} rfields;

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
			slot = &f->parent;
		else if (ST_KEY_IS(k, kl, "provider"))
			slot = &f->provider;
		else if (ST_KEY_IS(k, kl, "custom"))
			slot = &f->custom;
		else if (ST_KEY_IS(k, kl, "delete"))
			slot = &f->del;
		else if (ST_KEY_IS(k, kl, "pendingReplacement"))
			slot = &f->pending_repl;
		else if (ST_KEY_IS(k, kl, "deletedWith"))
			slot = &f->deleted_with;
		else if (ST_KEY_IS(k, kl, "dependencies"))
			slot = &f->deps;
		else if (ST_KEY_IS(k, kl, "propertyDependencies"))
			slot = &f->pdeps;
		else if (ST_KEY_IS(k, kl, "replaceWith"))
			slot = &f->replace_with;
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
	ST_ASSERT_ARG(s);
	return st__integrity_check_ex(s, out, 0, err);
}

/*
 * The property walk of a big state's resources on a second thread (it only reads, and is
 * half the check's work). Its problems are put where the one-thread check reports them:
 * the main loop notes, for each resource, how many problems were reported when the walk's
 * turn came.
 */
#define WALK_THREAD_MIN 5000

typedef struct walker {
	ictx c;            /* its own pointer buffer, segments and problem list */
	st_problems out;
	size_t *res_of;    /* each problem's resource */
	size_t res_of_cap;
	pthread_t th;
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

int st__integrity_check_ex(st_state *s, st_problems *out, unsigned flags, st_error *err)
{
	ictx cx, *c = &cx;
	json_t *dep = st_state_deployment(s), *r, *sp;
	size_t i, roots = 0, first_root = 0;
	st_strmap providers, live;
	char *exp_stack = NULL, *exp_project = NULL;
	int rc = ST_OK;
	walker wk, *wkp = NULL;
	size_t *pos = NULL; /* with the walker: problems reported when resource i's walk came */
	int repeats = 0;    /* a URN occurs more than once */

	memset(c, 0, sizeof(*c));
	c->s = s;
	c->out = out;
	c->base = st__deployment_pointer(s);
	c->res = dep ? json_object_get(dep, "resources") : NULL;
	if (!json_is_array(c->res))
		c->res = NULL;
	st_buf_init(&c->ptr);
	st_strmap_init(&c->index);
	st_strmap_init(&providers);
	st_strmap_init(&live);
	if (!dep)
		goto done;
	sp = json_object_get(dep, "secrets_providers");
	c->secrets_type = st_json_str(sp, "type");
	if ((flags & ST__IC_TWO_THREADS) && json_array_size(c->res) >= WALK_THREAD_MIN &&
	    st__threads_ok() && (pos = malloc(json_array_size(c->res) * sizeof(*pos)))) {
		memset(&wk, 0, sizeof(wk));
		wk.c.s = s;
		wk.c.out = &wk.out;
		wk.c.res = c->res;
		wk.c.base = c->base;
		wk.c.secrets_type = c->secrets_type;
		st_buf_init(&wk.c.ptr);
		if (pthread_create(&wk.th, NULL, walker_main, &wk) == 0) {
			wkp = &wk;
		} else {
			free(pos);
			pos = NULL;
		}
	}

	/* 1. The magic cookie. */
	if (!(flags & ST__IC_SKIP_MAGIC) && st__integrity_magic(s, out) != ST_OK)
		NOMEM(c);
	/* Index every URN's first and last position. */
	json_array_foreach(c->res, i, r) {
		const char *u = st_json_str(r, "urn");
		int created;
		st_strmap_slot *sl;
		if (!u || !*u)
			continue;
		sl = st_strmap_put(&c->index, u, &created);
		if (!sl) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto done;
		}
		if (created)
			sl->a = i;
		else
			repeats = 1;
		sl->b = i;
	}
	expected_names(c, &exp_stack, &exp_project);
	{
		/* "org/project/stack" or "stack" always give the stack: none means no memory */
		const char *qn = st_state_checkpoint_stack(s), *sl1 = qn ? strchr(qn, '/') : NULL;
		if (!exp_stack && qn && *qn && (!sl1 || strchr(sl1 + 1, '/')))
			NOMEM(c);
	}

	json_array_foreach(c->res, i, r) {
		rfields rf;
		res_fields(r, &rf);
		const char *urn = fstr(rf.urn), *type = fstr(rf.type);
		const char *id = fstr(rf.id), *parent = fstr(rf.parent);
		const char *prov = fstr(rf.provider);
		st_urn pu;
		int urn_ok;

		if (!urn || !*urn) {
			ERR("integrity/missing-urn", ptr_res(c, i, NULL), NULL,
			    "resource at index %zu missing required 'urn' field", i);
			continue;
		}
		if (!type || !*type)
			ERR("integrity/missing-type", ptr_res(c, i, NULL), urn,
			    "resource '%s' missing required 'type' field", urn);
		if (!json_is_true(rf.custom) && id && *id)
			ERR("integrity/custom-with-id", ptr_res(c, i, "id"), urn,
			    "resource '%s' has 'custom' false but non-empty ID", urn);
		urn_ok = st_urn_parse(urn, &pu) == ST_OK;
		if (!urn_ok) {
			WARN("urn/invalid", ptr_res(c, i, "urn"), urn,
			     "'%s' is not a valid URN (urn:pulumi:STACK::PROJECT::TYPE::NAME)", urn);
		} else {
			if (type && (pu.type_len != strlen(type) || strncmp(pu.type, type, pu.type_len)))
				WARN("urn/type-mismatch", ptr_res(c, i, "urn"), urn,
				     "the URN's type '%.*s' differs from the resource's type '%s'",
				     (int)pu.type_len, pu.type, type);
			if (exp_stack && (pu.stack_len != strlen(exp_stack) ||
					  strncmp(pu.stack, exp_stack, pu.stack_len) ||
					  (exp_project && (pu.project_len != strlen(exp_project) ||
							   strncmp(pu.project, exp_project,
								   pu.project_len)))))
				WARN("urn/stack-mismatch", ptr_res(c, i, "urn"), urn,
				     "the URN names stack '%.*s' of project '%.*s', but the state "
				     "belongs to stack '%s'%s%s%s",
				     (int)pu.stack_len, pu.stack, (int)pu.project_len, pu.project,
				     exp_stack, exp_project ? " of project '" : "",
				     exp_project ? exp_project : "", exp_project ? "'" : "");
		}
		if (type && !strcmp(type, ST_ROOT_STACK_TYPE) && (!parent || !*parent) &&
		    !json_is_true(rf.del)) {
			if (roots++ == 0)
				first_root = i;
			else
				WARN("root/multiple", ptr_res(c, i, NULL), urn,
				     "more than one root stack resource (the first is at index %zu)",
				     first_root);
		}
		/* Providers: referenceable (NewReference: the URN's own type must be a provider
		 * type), then known to later resources. */
		if (type && st_type_is_provider(type)) {
			st_error perr;
			int prc;
			st_error_clear(&perr);
			prc = st__provider_urn_check(urn, &perr);
			if (prc == ST_ENOMEM)
				NOMEM(c);
			else if (prc)
				ERR("integrity/provider-not-referenceable", ptr_res(c, i, "urn"), urn,
				    "provider %s is not referenceable: %s", urn, perr.message);
			if (prc == ST_OK) {
				char *ref = st_asprintf("%s::%s", urn, id && *id ? id : ST_UNKNOWN_ID);
				int created;
				st_strmap_slot *sl = ref ? st_strmap_put(&providers, ref, &created)
							 : NULL;
				if (sl && created) {
					sl->p = ref;
					sl->a = 1; /* a reference to it parses */
				} else {
					free(ref);
				}
				if (!sl)
					NOMEM(c);
			}
		}
		st_strmap_slot *known = prov && *prov ? st_strmap_get(&providers, prov) : NULL;
		if (known && known->a) {
			/* a provider defined above whose reference parses: nothing to report */
		} else if (prov && *prov) {
			char *pu_urn = NULL, *pu_id = NULL;
			st_error perr;
			st_error_clear(&perr);
			int prc = st_provider_ref_parse(prov, &pu_urn, &pu_id, &perr);
			if (prc == ST_ENOMEM) {
				NOMEM(c);
			} else if (prc != ST_OK) {
				ERR("integrity/provider-parse", ptr_res(c, i, "provider"), urn,
				    "failed to parse provider reference for resource %s: %s", urn,
				    perr.message);
			} else if (!st_strmap_get(&providers, prov) &&
				   !json_is_true(rf.pending_repl)) {
				ERR("integrity/provider-unknown", ptr_res(c, i, "provider"), urn,
				    "resource %s refers to unknown provider %s", urn, prov);
			}
			free(pu_urn);
			free(pu_id);
		}
		if (parent && *parent) {
			where w = {i, "parent", NULL, -1};
			check_ref(c, i, urn, parent, &w, "parent",
				  "child resource %s's parent %s comes after it",
				  "child resource %s refers to missing parent %s", NULL);
			/* The qualified type should be the parent's plus this type. */
			st_strmap_slot *ps = st_strmap_get(&c->index, parent);
			st_urn pp;
			if (urn_ok && ps && st_urn_parse(parent, &pp) == ST_OK && type) {
				/* expected: the type itself under the root stack, else the parent's
				 * qualified type, '$' and the type */
				size_t tl = strlen(type);
				int root = pp.qtype_len == strlen(ST_ROOT_STACK_TYPE) &&
					   !strncmp(pp.qtype, ST_ROOT_STACK_TYPE, pp.qtype_len);
				int follows =
					root ? pu.qtype_len == tl && !memcmp(pu.qtype, type, tl)
					     : pu.qtype_len == pp.qtype_len + 1 + tl &&
						       !memcmp(pu.qtype, pp.qtype, pp.qtype_len) &&
						       pu.qtype[pp.qtype_len] == '$' &&
						       !memcmp(pu.qtype + pp.qtype_len + 1, type, tl);
				if (!follows) {
					char *want = root ? st_strdup(type)
							  : st_asprintf("%.*s$%s", (int)pp.qtype_len,
									pp.qtype, type);
					if (!want)
						NOMEM(c);
					else
						WARN("urn/parent-type", ptr_res(c, i, "urn"), urn,
						     "the URN's qualified type '%.*s' does not follow "
						     "its parent's ('%s' expected)",
						     (int)pu.qtype_len, pu.qtype, want);
					free(want);
				}
			}
		}
		check_urn_list(c, i, urn, rf.deps, "dependencies",
			       "dependency", "resource %s's dependency %s comes after it",
			       "resource %s's dependency %s refers to missing resource");
		{
			json_t *pd = rf.pdeps;
			size_t nk = json_object_size(pd), k = 0;
			const char **keys = nk ? malloc(nk * sizeof(*keys)) : NULL;
			if (nk && !keys)
				NOMEM(c);
			const char *key;
			json_t *list;
			json_object_foreach(pd, key, list)
				if (keys)
					keys[k++] = key;
			if (keys)
				qsort(keys, k, sizeof(*keys), cmp_strp);
			for (size_t kk = 0; keys && kk < k; kk++) {
				size_t j;
				json_t *v;
				list = json_object_get(pd, keys[kk]);
				json_array_foreach(list, j, v) {
					where w = {i, "propertyDependencies", keys[kk], (long)j};
					if (!json_is_string(v))
						continue;
					check_ref(c, i, urn, json_string_value(v), &w,
						  "property-dependency",
						  "resource %s's property dependency %s (from property "
						  "%s) comes after it",
						  "resource %s's property dependency %s (from property "
						  "%s) refers to missing resource",
						  keys[kk]);
				}
			}
			free(keys);
		}
		where dw = {i, "deletedWith", NULL, -1};
		check_ref(c, i, urn, fstr(rf.deleted_with), &dw,
			  "deleted-with", "resource %s is specified as being deleted with %s, which "
			  "comes after it",
			  "resource %s is specified as being deleted with %s, which is missing",
			  NULL);
		check_urn_list(c, i, urn, rf.replace_with, "replaceWith",
			       "replace-with",
			       "resource %s is specified as being replaced with %s, which comes "
			       "after it",
			       "resource %s is specified as being replaced with %s, which is missing");
		if (wkp)
			pos[i] = out->count;
		else
			walk_props(c, &rf, NULL, i, urn);
		/* Duplicates: more than one copy not marked for deletion (none without a URN
		 * that occurs twice). */
		if (repeats && !json_is_true(rf.del)) {
			int created;
			st_strmap_slot *sl = st_strmap_put(&live, urn, &created);
			if (!sl)
				NOMEM(c);
			if (sl && created)
				sl->a = i;
			else if (sl)
				ERR("integrity/duplicate-urn", ptr_res(c, i, NULL), urn,
				    "duplicate resource %s (not marked for deletion)", urn);
		}
	}
	if (wkp) {
		pthread_join(wkp->th, NULL);
		walker_merge(c, wkp, pos);
		walker_free(wkp);
		wkp = NULL;
	}
	/* Resources of pending operations may hold secrets too. */
	{
		json_t *ops = json_object_get(dep, "pending_operations"), *op;
		json_array_foreach(ops, i, op) {
			char p[128];
			json_t *rr = json_object_get(op, "resource");
			snprintf(p, sizeof(p), "%s/pending_operations/%zu/resource", c->base, i);
			if (json_is_object(rr)) {
				rfields rf;
				res_fields(rr, &rf);
				walk_props(c, &rf, p, 0, fstr(rf.urn));
			}
		}
	}
	/* initializeSecretsManager: a provider without a type is none */
	if (c->ciphertexts && !(c->secrets_type && *c->secrets_type))
		ERR("secrets/no-provider", c->first_cipher_ptr, NULL,
		    "decrypting secret value: failed to decrypt: snapshot contains encrypted "
		    "secrets but no secrets manager could be found (%zu ciphertext%s, no "
		    "'secrets_providers')",
		    c->ciphertexts, c->ciphertexts == 1 ? "" : "s");
	/* Snippets. */
	{
		json_t *sn = json_object_get(dep, "snippets"), *x;
		st_strmap uuids;
		st_strmap_init(&uuids);
		json_array_foreach(sn, i, x) {
			const char *u = st_json_str(x, "uuid");
			char p[128];
			int created;
			snprintf(p, sizeof(p), "%s/snippets/%zu", c->base, i);
			if (!u || !*u) {
				ERR("integrity/snippet-uuid", p, NULL,
				    "snippet at index %zu missing required 'uuid' field", i);
				continue;
			}
			st_strmap_slot *sl = st_strmap_put(&uuids, u, &created);
			if (!sl)
				NOMEM(c);
			if (sl && created)
				sl->a = i;
			else if (sl)
				ERR("integrity/snippet-duplicate", p, NULL,
				    "duplicate snippet uuid \"%s\" at indexes %zu and %zu", u, sl->a, i);
		}
		st_strmap_free(&uuids);
	}
	check_pending(c);
	check_plugins(c);
	check_aliases(c);
	if (c->oom || c->ptr.oom)
		rc = st__err(err, ST_ENOMEM, "out of memory (the integrity check is incomplete)");
done:
	if (wkp) { /* left early: the walker's findings are not wanted */
		pthread_join(wkp->th, NULL);
		walker_free(wkp);
	}
	free(pos);
	for (size_t k = 0; k < providers.cap; k++)
		if (providers.slots && providers.slots[k].hash)
			free(providers.slots[k].p);
	st_strmap_free(&providers);
	st_strmap_free(&live);
	st_strmap_free(&c->index);
	st_buf_free(&c->ptr);
	st_segs_free(&c->segs);
	free(c->first_cipher_ptr);
	free(exp_stack);
	free(exp_project);
	return rc;
}

/* Fills in the URN of problems whose pointer lies inside a resource. */
static void attach_urns(st_state *s, st_problems *out, size_t from)
{
	const char *base = st__deployment_pointer(s);
	size_t bl = strlen(base);
	json_t *res = st_state_resources(s, 0);
	for (size_t i = from; i < out->count; i++) {
		st_problem *p = &out->items[i];
		const char *q = p->pointer;
		if (p->urn || strncmp(q, base, bl) || strncmp(q + bl, "/resources/", 11))
			continue;
		unsigned long idx = strtoul(q + bl + 11, NULL, 10);
		const char *u = st_json_str(json_array_get(res, idx), "urn");
		if (u)
			p->urn = st_strdup(u);
	}
}

/* The schema half of st_validate: the built-in schemas, --schema, --resource-schema. */
typedef struct schema_job {
	st_state *s;
	const st_validate_opts *o;
	st_problems out;
	st_error err;
	int rc;
} schema_job;

static int run_schemas(st_state *s, const st_validate_opts *o, st_problems *out, st_error *err)
{
	int rc;
	if (!o->skip_schema) {
		st_schema_opts so = ST_SCHEMA_OPTS_INIT;
		so.additional_severity = ST_SEV_WARNING;
		so.max_problems = o->max_problems;
		rc = st_schema_validate(o->schema, STATE_SCHEMA, s->root, &so, out, err);
		if (rc < 0)
			return rc;
	}
	for (size_t k = 0; k < o->nextra; k++) {
		st_schema_opts so = ST_SCHEMA_OPTS_INIT;
		so.rule_prefix = "user-schema";
		rc = st_schema_validate(o->extra[k], NULL, s->root, &so, out, err);
		if (rc < 0)
			return rc;
	}
	if (o->nresource_schemas) {
		json_t *res = st_state_resources(s, 0), *r;
		size_t i;
		const char *base = st__deployment_pointer(s);
		json_array_foreach(res, i, r) {
			char p[128];
			snprintf(p, sizeof(p), "%s/resources/%zu", base, i);
			for (size_t k = 0; k < o->nresource_schemas; k++) {
				st_schema_opts so = ST_SCHEMA_OPTS_INIT;
				so.rule_prefix = "resource-schema";
				so.root_pointer = p;
				rc = st_schema_validate(o->resource_schemas[k], NULL, r, &so, out, err);
				if (rc < 0)
					return rc;
			}
		}
	}
	return ST_OK;
}

static void *schema_thread(void *arg)
{
	schema_job *j = arg;
	j->rc = run_schemas(j->s, j->o, &j->out, &j->err);
	return NULL;
}

/* Moves every problem of `from` to the end of `to`. */
static int append_problems(st_problems *to, st_problems *from)
{
	int rc = ST_OK;
	for (size_t i = 0; i < from->count && rc == ST_OK; i++) {
		st_problem *p = &from->items[i];
		if (st_problems_add(to, p->severity, p->rule, p->pointer, p->urn, "%s", p->message))
			rc = ST_ENOMEM;
	}
	st_problems_clear(from);
	return rc;
}

/* Schemas and integrity rules on two threads when the state is big enough to gain. */
#define PARALLEL_MIN_RESOURCES 500

int st_validate(st_state *s, const st_validate_opts *o, st_problems *out, st_error *err)
{
	ST_ASSERT_ARG(s);
	st_validate_opts def = ST_VALIDATE_OPTS_INIT, opts;
	st_schema *builtin = NULL;
	size_t from = out->count;
	int rc;
	int has_schemas;

	if (!o)
		o = &def;
	else if ((rc = st__opts_version(o->version, ST_VALIDATE_OPTS_VERSION, "st_validate_opts",
					err)) != ST_OK)
		return rc;
	opts = *o;
	/* What the reader noticed (duplicate keys, invalid UTF-8). */
	for (size_t i = 0; i < s->load_problems.count; i++) {
		st_problem *p = &s->load_problems.items[i];
		st_problems_add(out, p->severity, p->rule, p->pointer, p->urn, "%s", p->message);
	}
	if (!opts.skip_schema && !opts.schema) {
		rc = st_schema_builtin(&builtin, err);
		if (rc)
			return rc;
		opts.schema = builtin;
	}
	has_schemas = !opts.skip_schema || opts.nextra || opts.nresource_schemas;
	if (has_schemas && st__threads_ok() &&
	    json_array_size(st_state_resources(s, 0)) >= PARALLEL_MIN_RESOURCES) {
		/* The schemas on a second thread, the integrity rules on this one; the problems
		 * are reported in the same order as one after the other. Both only read. */
		schema_job job;
		pthread_t th;
		memset(&job, 0, sizeof(job));
		job.s = s;
		job.o = &opts;
		st_error_clear(&job.err);
		if (pthread_create(&th, NULL, schema_thread, &job) == 0) {
			st_problems integ = {0};
			st_error ierr;
			st_error_clear(&ierr);
			int irc = st_integrity_check(s, &integ, &ierr);
			st__phase("validate: integrity rules");
			pthread_join(th, NULL);
			st__phase("validate: schemas (beside them)");
			st_schema_free(builtin);
			rc = append_problems(out, &job.out);
			if (job.rc < 0) {
				st_problems_clear(&integ);
				if (err)
					*err = job.err;
				return job.rc;
			}
			if (rc == ST_OK)
				rc = append_problems(out, &integ);
			st_problems_clear(&integ);
			if (rc)
				return st__err(err, rc, "out of memory");
			if (irc) {
				if (err)
					*err = ierr;
				return irc;
			}
			attach_urns(s, out, from);
			return ST_OK;
		}
	}
	rc = run_schemas(s, &opts, out, err);
	st_schema_free(builtin);
	if (rc < 0)
		return rc;
	st__phase("validate: schemas");
	rc = st__integrity_check_ex(s, out, ST__IC_TWO_THREADS, err);
	st__phase("validate: integrity rules");
	if (rc)
		return rc;
	attach_urns(s, out, from);
	return ST_OK;
}

int st_validate_import_file(json_t *doc, st_schema *schema, st_problems *out, st_error *err)
{
	st_schema *builtin = NULL;
	st_schema_opts so = ST_SCHEMA_OPTS_INIT;
	st__keymap km = {0};
	char *first = NULL, *first_ptr = NULL;
	size_t errors = out->errors;
	int rc;

	/* As `pulumi import` decodes it: keys of its structs in any case, Go's type errors (and
	 * then nothing more, as for a state that does not load). */
	rc = st__go_decode(doc, ST__G_IMPORT, "", &km, out, &first, &first_ptr);
	for (size_t i = 0; i < km.n; i++) {
		json_decref(km.v[i].obj);
		free(km.v[i].orig);
	}
	free(km.v);
	free(first);
	free(first_ptr);
	if (rc)
		return st__err(err, rc, "out of memory");
	if (out->errors > errors)
		return ST_OK;
	if (!schema) {
		rc = st_schema_builtin(&builtin, err);
		if (rc)
			return rc;
		schema = builtin;
	}
	so.additional_severity = ST_SEV_WARNING;
	rc = st_schema_validate(schema, IMPORT_SCHEMA, doc, &so, out, err);
	st_schema_free(builtin);
	return rc < 0 ? rc : ST_OK;
}
