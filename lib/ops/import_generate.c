/*
 * The reverse of an import: an import file describing resources of a state (type, name, ID,
 * parent and provider through nameTable, version, component), so that importing it elsewhere
 * recreates them.
 */
#include "import.h"

#include <stdlib.h>
#include <string.h>

typedef struct gen {
	json_t *res, *nt, *arr;
	st_strmap ix;    /* live resources by URN */
	st_strmap names; /* urn -> its name in the file (slot p) */
	st_strmap used;  /* names taken */
	char **owned;
	size_t nowned;
	int oom;
} gen;

static json_t *live(const gen *g, const char *urn)
{
	st_strmap_slot *sl = urn ? st_strmap_get(&g->ix, urn) : NULL;
	return sl ? (json_t *)sl->p : NULL;
}

/* The file's name of a URN: its name, made unique with -2, -3... (borrowed; NULL: no memory). */
static const char *name_of(gen *g, const char *urn)
{
	st_strmap_slot *sl = st_strmap_get(&g->names, urn);
	st_urn pu;
	char *base, *cand;
	int created;
	if (sl)
		return sl->p;
	base = st_urn_parse(urn, &pu) == ST_OK ? st_strndup(pu.name, pu.name_len) : st_strdup(urn);
	cand = base ? st_strdup(base) : NULL;
	for (int k = 2; cand && st_strmap_get(&g->used, cand); k++) {
		free(cand);
		cand = st_asprintf("%s-%d", base, k);
	}
	free(base);
	if (!cand || !st_strmap_put(&g->used, cand, &created) ||
	    !(sl = st_strmap_put(&g->names, urn, &created))) {
		free(cand);
		g->oom = 1;
		return NULL;
	}
	g->owned[g->nowned++] = cand;
	sl->p = cand;
	return cand;
}

/* What names a default provider, from its inputs as Pulumi's engine writes them
 * (providers.Set*): version, download URL (under __internal, or at the top in older states)
 * and a parameterization (the base plugin under __internal). */
static void default_plugin(gen *g, json_t *sp, json_t *in)
{
	json_t *x = json_object_get(in, "__internal");
	const char *ver = st_json_str(in, "version");
	const char *url = st_json_str(json_is_object(x) ? x : in, "pluginDownloadURL");
	const char *param = st_json_str(x, "parameterization");
	if (ver && json_object_set_new(sp, "version", json_string(ver)))
		g->oom = 1;
	if (url && json_object_set_new(sp, "pluginDownloadUrl", json_string(url)))
		g->oom = 1;
	if (param && json_object_set_new(sp, "parameterization",
					 json_pack("{s:s,s:s,s:s}", "pluginName",
						   st_json_str(x, "name") ? st_json_str(x, "name") : "",
						   "pluginVersion",
						   st_json_str(x, "version") ? st_json_str(x, "version") : "",
						   "value", param)))
		g->oom = 1;
}

/* The spec's provider: a default provider by what names it (version, URL, parameterization);
 * an explicit one as a provider spec in the file, before its first user, so that a re-import
 * creates it. */
static void add_provider(gen *g, json_t *sp, const char *prov)
{
	char *pu = NULL, *pid = NULL;
	st_urn u;
	json_t *p;
	if (st_provider_ref_parse(prov, &pu, &pid, NULL) != ST_OK || st_urn_parse(pu, &u) != ST_OK)
		goto out;
	p = live(g, pu);
	if (u.name_len >= 7 && !strncmp(u.name, "default", 7)) {
		default_plugin(g, sp, json_object_get(p, "inputs"));
	} else if (p) {
		int fresh = !st_strmap_get(&g->names, pu);
		const char *pn = name_of(g, pu);
		if (!pn)
			goto out;
		if (fresh) {
			json_t *ps = json_pack("{s:s,s:s}", "type", st_json_str(p, "type"), "name", pn);
			if (ps && json_object_size(json_object_get(p, "inputs")))
				json_object_set(ps, "inputs", json_object_get(p, "inputs"));
			if (!ps || json_array_append_new(g->arr, ps))
				g->oom = 1;
		}
		json_object_set_new(sp, "provider", json_string(pn));
	}
out:
	free(pu);
	free(pid);
}

/* One resource's spec, or nothing for what an import does not take (deleted copies, the
 * root stack, providers). */
static void add_resource(gen *g, json_t *r)
{
	const char *type = st_json_str(r, "type"), *urn = st_json_str(r, "urn"), *nm, *parent, *prov;
	json_t *sp, *pr;
	st_urn pu;
	if (!r || !type || !urn || st_json_bool(r, "delete") || st__is_root_stack(r) ||
	    st_type_is_provider(type))
		return;
	if (!(nm = name_of(g, urn)) || !(sp = json_pack("{s:s,s:s}", "type", type, "name", nm))) {
		g->oom = 1;
		return;
	}
	if (st_urn_parse(urn, &pu) == ST_OK && strcmp(nm, pu.name) != 0)
		json_object_set_new(sp, "logicalName", json_stringn(pu.name, pu.name_len));
	if (st_json_bool(r, "custom") && st_json_str(r, "id"))
		json_object_set_new(sp, "id", json_string(st_json_str(r, "id")));
	parent = st_json_str(r, "parent");
	pr = parent ? live(g, parent) : NULL;
	if (pr && !(st_json_str(pr, "type") && !strcmp(st_json_str(pr, "type"), ST_ROOT_STACK_TYPE))) {
		const char *pn = name_of(g, parent);
		if (pn) {
			json_object_set_new(sp, "parent", json_string(pn));
			json_object_set_new(g->nt, pn, json_string(parent));
		}
	}
	if ((prov = st_json_str(r, "provider")))
		add_provider(g, sp, prov);
	if (!st_json_bool(r, "custom"))
		json_object_set_new(sp, "component", json_true());
	if (json_array_append_new(g->arr, sp))
		g->oom = 1;
}

/* Parents that are themselves in the file refer to each other by name, not the table. */
static void drop_local_parents(gen *g)
{
	size_t k, m;
	json_t *sp, *x;
	json_array_foreach(g->arr, k, sp) {
		const char *pn = st_json_str(sp, "parent");
		json_array_foreach(g->arr, m, x)
			if (pn && m < k && !strcmp(st_json_str(x, "name"), pn))
				json_object_del(g->nt, pn);
	}
}

json_t *st_import_generate(st_state *st, const size_t *idx, size_t n, st_error *err)
{
	ST_ASSERT_ARG_AS(st, "s");
	gen g;
	json_t *doc = NULL, *r;
	size_t count, i;

	ST_ASSERT_ARG(idx || !n);
	memset(&g, 0, sizeof(g));
	g.res = st_state_resources(st, 0);
	for (size_t k = 0; k < n; k++)
		if (idx[k] >= json_array_size(g.res)) {
			st__err(err, ST_EINVAL, "no resource at index %zu (the state has %zu)", idx[k],
				json_array_size(g.res));
			return NULL;
		}
	count = n ? n : json_array_size(g.res);
	st_strmap_init(&g.ix);
	st_strmap_init(&g.names);
	st_strmap_init(&g.used);
	g.owned = calloc(count * 3 + 2, sizeof(*g.owned)); /* a name, a parent, a provider each */
	g.nt = json_object();
	g.arr = json_array();
	doc = json_object();
	g.oom = !g.owned || !g.nt || !g.arr || !doc;
	json_array_foreach(g.res, i, r) {
		const char *u = st_json_str(r, "urn");
		int created;
		st_strmap_slot *sl;
		if (g.oom || !u || st_json_bool(r, "delete"))
			continue;
		if (!(sl = st_strmap_put(&g.ix, u, &created)))
			g.oom = 1;
		else if (created)
			sl->p = r;
	}
	for (size_t k = 0; !g.oom && k < count; k++)
		add_resource(&g, json_array_get(g.res, n ? idx[k] : k));
	drop_local_parents(&g);
	if (!g.oom && ((json_object_size(g.nt) && json_object_set(doc, "nameTable", g.nt)) ||
		       json_object_set(doc, "resources", g.arr)))
		g.oom = 1;
	json_decref(g.nt);
	json_decref(g.arr);
	for (size_t k = 0; k < g.nowned; k++)
		free(g.owned[k]);
	free(g.owned);
	st_strmap_free(&g.names);
	st_strmap_free(&g.used);
	st_strmap_free(&g.ix);
	if (g.oom) {
		json_decref(doc);
		st__err(err, ST_ENOMEM, "out of memory");
		return NULL;
	}
	return doc;
}
