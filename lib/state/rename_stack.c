/*
 * A stack's new name (and project) in its state, with Pulumi's edit.RenameStack semantics
 * (pkg/resource/edit/operations.go): every URN that names the old stack (and the old project,
 * when one is given) gets the new stack (and project); the root stack resource's name becomes
 * <project>-<stack>. Rewritten: urn, parent, dependencies, propertyDependencies, deletedWith,
 * replaceWith, aliases, viewOf, the provider reference's URN, and inside inputs, outputs and
 * replacementTrigger the URNs of resource references, of output values (and their
 * dependencies) and of plaintext secrets (whose JSON text is written again, as Go's
 * json.Marshal writes it, when something in it changed); pending operations' resources too.
 * The checkpoint's `stack` becomes the new full name.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define SIG_RESREF "5cf8f73096256a8f31e491e813e4eb8e"
#define SIG_OUTPUT "d0e6a833031e9bbcd3f4e8bde6ca49a4"

typedef struct srn {
	const char *old_stack, *old_project, *new_stack, *new_project;
	size_t count;
	int oom;
} srn;

/* The renamed URN (new), or NULL when `u` is not one to rename (or out of memory: r->oom). */
static char *rename_urn(srn *r, const char *u)
{
	st_urn p;
	char *out;
	if (!u || st_urn_parse(u, &p) != ST_OK)
		return NULL;
	if (p.stack_len != strlen(r->old_stack) || strncmp(p.stack, r->old_stack, p.stack_len))
		return NULL;
	if (r->old_project && (p.project_len != strlen(r->old_project) ||
			       strncmp(p.project, r->old_project, p.project_len)))
		return NULL;
	const char *proj = r->new_project ? r->new_project : p.project;
	int plen = r->new_project ? (int)strlen(r->new_project) : (int)p.project_len;
	if (p.qtype_len == strlen(ST_ROOT_STACK_TYPE) &&
	    !strncmp(p.qtype, ST_ROOT_STACK_TYPE, p.qtype_len))
		out = st_asprintf("urn:pulumi:%s::%.*s::%s::%.*s-%s", r->new_stack, plen, proj,
				  ST_ROOT_STACK_TYPE, plen, proj, r->new_stack);
	else
		out = st_asprintf("urn:pulumi:%s::%.*s::%.*s::%.*s", r->new_stack, plen, proj,
				  (int)p.qtype_len, p.qtype, (int)p.name_len, p.name);
	if (!out)
		r->oom = 1;
	return out;
}

/* A string member or element holding a URN: renamed in place. */
static void fix_obj(srn *r, json_t *o, const char *key)
{
	char *n = rename_urn(r, json_string_value(json_object_get(o, key)));
	if (n) {
		if (strcmp(n, json_string_value(json_object_get(o, key))))
			r->count++;
		if (json_object_set_new(o, key, json_string(n)) < 0)
			r->oom = 1;
		free(n);
	}
}

static void fix_arr(srn *r, json_t *a)
{
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v) {
		char *n = rename_urn(r, json_string_value(v));
		if (n) {
			if (strcmp(n, json_string_value(v)))
				r->count++;
			if (json_array_set_new(a, i, json_string(n)) < 0)
				r->oom = 1;
			free(n);
		}
	}
}

static void fix_value(srn *r, json_t *v);

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A copy with every object's keys in byte order, as Go writes a map (new; NULL: no memory). */
static json_t *sorted_copy(json_t *v)
{
	json_t *out, *x;
	const char *k, **keys;
	size_t i, n = 0;

	if (json_is_array(v)) {
		out = json_array();
		json_array_foreach(v, i, x)
			if (!out || json_array_append_new(out, sorted_copy(x)) < 0) {
				json_decref(out);
				return NULL;
			}
		return out;
	}
	if (!json_is_object(v))
		return json_incref(v);
	out = json_object();
	keys = malloc((json_object_size(v) + 1) * sizeof(*keys));
	if (!out || !keys) {
		json_decref(out);
		free(keys);
		return NULL;
	}
	json_object_foreach(v, k, x)
		keys[n++] = k;
	qsort(keys, n, sizeof(*keys), cmp_str);
	for (i = 0; i < n; i++) {
		json_t *c = sorted_copy(json_object_get(v, keys[i]));
		if (!c || json_object_set_new(out, keys[i], c) < 0) {
			json_decref(out);
			free(keys);
			return NULL;
		}
	}
	free(keys);
	return out;
}

/* Go's json.Marshal of a decoded value: compact, object keys sorted, HTML escaped (new). */
static char *go_marshal(json_t *v)
{
	st_style st = {1, "", 1, 0, 1};
	char *out = NULL;
	size_t len;
	json_t *sorted = sorted_copy(v);
	if (sorted && st_json_dump(sorted, &st, &out, &len, NULL) != ST_OK)
		out = NULL;
	json_decref(sorted);
	return out;
}

static void fix_plaintext(srn *r, json_t *secret)
{
	const char *text = json_string_value(json_object_get(secret, "plaintext"));
	json_t *doc = NULL;
	size_t before = r->count;
	char *again;
	if (!text || !*text ||
	    st_json_parse(&doc, text, strlen(text), NULL, NULL, NULL, NULL, NULL) != ST_OK)
		return;
	fix_value(r, doc);
	if (r->count != before) {
		if (!(again = go_marshal(doc)) ||
		    json_object_set_new(secret, "plaintext", json_string(again)) < 0)
			r->oom = 1;
		free(again);
	}
	json_decref(doc);
}

static void fix_value(srn *r, json_t *v)
{
	const char *k, *sig;
	json_t *x;
	size_t i;

	if (json_is_array(v)) {
		json_array_foreach(v, i, x)
			fix_value(r, x);
		return;
	}
	if (!json_is_object(v))
		return;
	sig = json_string_value(json_object_get(v, ST_SIG_KEY));
	if (sig && !strcmp(sig, SIG_RESREF)) {
		fix_obj(r, v, "urn");
		return;
	}
	if (sig && !strcmp(sig, ST_SIG_SECRET)) {
		fix_plaintext(r, v);
		return;
	}
	if (sig && !strcmp(sig, SIG_OUTPUT)) {
		fix_value(r, json_object_get(v, "value"));
		fix_arr(r, json_object_get(v, "dependencies"));
		return;
	}
	json_object_foreach(v, k, x)
		fix_value(r, x);
}

static void fix_resource(srn *r, json_t *res)
{
	static const char *const one[] = {"urn", "parent", "deletedWith", "viewOf"};
	static const char *const many[] = {"dependencies", "replaceWith", "aliases"};
	const char *k, *prov;
	json_t *x;

	for (size_t i = 0; i < 4; i++)
		fix_obj(r, res, one[i]);
	for (size_t i = 0; i < 3; i++)
		fix_arr(r, json_object_get(res, many[i]));
	json_object_foreach(json_object_get(res, "propertyDependencies"), k, x)
		fix_arr(r, x);
	prov = json_string_value(json_object_get(res, "provider"));
	if (prov) {
		size_t ul = st__provider_ref_urn_len(prov, strlen(prov));
		char *urn = ul ? st_strndup(prov, ul) : NULL, *n = urn ? rename_urn(r, urn) : NULL;
		if (n) {
			char *ref = st_asprintf("%s%s", n, prov + ul);
			if (!ref || json_object_set_new(res, "provider", json_string(ref)) < 0)
				r->oom = 1;
			r->count++;
			free(ref);
		}
		free(urn);
		free(n);
	}
	fix_value(r, json_object_get(res, "inputs"));
	fix_value(r, json_object_get(res, "outputs"));
	fix_value(r, json_object_get(res, "replacementTrigger"));
}

int st_state_rename_stack(st_state *s, const char *new_stack, const char *new_project,
			  const char *old_stack, const char *old_project, size_t *count,
			  st_error *err)
{
	ST_ASSERT_ARG_AS(s, "state");
	srn r = {old_stack, old_project, new_stack, new_project, 0, 0};
	json_t *res, *ops, *x, *cp;
	size_t i;

	ST_ASSERT_ARG(old_stack);
	if (count)
		*count = 0;
	if (!new_stack || !st_stack_name_valid(new_stack) ||
	    (new_project && !st_project_name_valid(new_project)))
		return st__err(err, ST_EINVAL, "invalid new stack name '%s%s%s'",
			       new_project ? new_project : "", new_project ? "/" : "",
			       new_stack ? new_stack : "");
	res = st_state_resources(s, 0);
	json_array_foreach(res, i, x)
		fix_resource(&r, x);
	ops = json_object_get(st_state_deployment(s), "pending_operations");
	json_array_foreach(ops, i, x)
		fix_resource(&r, json_object_get(x, "resource"));
	cp = json_object_get(st_state_root(s), "checkpoint");
	if (json_is_object(cp) && json_object_get(cp, "stack")) {
		const char *proj = new_project ? new_project : old_project;
		char *q = proj ? st_asprintf("organization/%s/%s", proj, new_stack)
			       : st_strdup(new_stack);
		if (!q || json_object_set_new(cp, "stack", json_string(q)) < 0)
			r.oom = 1;
		free(q);
	}
	st_state_touch(s);
	if (r.oom)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (count)
		*count = r.count;
	return ST_OK;
}
