/*
 * Migration of old deployment versions to version 3, with Pulumi's rules
 * (pkg/resource/stack/migrate): v1 -> v2 -> v3 for resources, deployments and checkpoints.
 * Every change is reported. Fields Pulumi's older structs do not know (unknown fields) are kept
 * (they are the user's data), each reported with the note that Pulumi drops it when it reads
 * that version; fields Pulumi drops on migration (`defaults`; the pre-versioning `target` and
 * `latest.time`), and an old `propertyDependencies` where Pulumi fills it from `dependencies`,
 * are dropped and reported.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const v1_resource_fields[] = {"urn", "custom", "delete", "id", "type",
						 "inputs", "defaults", "outputs", "parent",
						 "protect", "dependencies", "initErrors", NULL};
static const char *const v2_resource_fields[] = {"urn", "custom", "delete", "id", "type",
						 "inputs", "outputs", "parent", "protect",
						 "external", "dependencies", "initErrors",
						 "provider", NULL};

static int in_list(const char *const *list, const char *k)
{
	for (size_t i = 0; list[i]; i++)
		if (!strcmp(list[i], k))
			return 1;
	return 0;
}

/* Sets key in the new V3 resource only when non-empty (omitempty). */
static void set_nonempty(json_t *o, const char *key, json_t *v)
{
	if (v && !st_json_is_empty(v))
		json_object_set(o, key, v);
}

/* UpToResourceV3(UpToResourceV2(r)) or UpToResourceV3(r), built in V3 field order. */
static json_t *resource_to_v3(json_t *r, int from_version, const char *where, st_changes *rep)
{
	json_t *n = json_object(), *inputs, *deps, *v, *pd = NULL;
	const char *k, *urn = st_json_str(r, "urn");
	const char *const *known = from_version <= 1 ? v1_resource_fields : v2_resource_fields;

	if (!n)
		return NULL;
	v = json_object_get(r, "urn");
	json_object_set_new(n, "urn", v ? json_incref(v) : json_string(""));
	json_object_set_new(n, "custom", json_boolean(st_json_bool(r, "custom")));
	if (st_json_bool(r, "delete"))
		json_object_set_new(n, "delete", json_true());
	set_nonempty(n, "id", json_object_get(r, "id"));
	v = json_object_get(r, "type");
	json_object_set_new(n, "type", v ? json_incref(v) : json_string(""));
	inputs = json_object_get(r, "inputs");
	set_nonempty(n, "inputs", inputs);
	set_nonempty(n, "outputs", json_object_get(r, "outputs"));
	set_nonempty(n, "parent", json_object_get(r, "parent"));
	if (st_json_bool(r, "protect"))
		json_object_set_new(n, "protect", json_true());
	if (st_json_bool(r, "external"))
		json_object_set_new(n, "external", json_true());
	deps = json_object_get(r, "dependencies");
	set_nonempty(n, "dependencies", deps);
	set_nonempty(n, "initErrors", json_object_get(r, "initErrors"));
	set_nonempty(n, "provider", json_object_get(r, "provider"));
	/* Every input depends on every dependency (Pulumi's conservative assumption). A nil
	 * dependency list gives null entries, as Go writes a nil slice inside a map. */
	if (json_is_object(inputs) && json_object_size(inputs) > 0) {
		pd = json_object();
		json_object_foreach(inputs, k, v)
			json_object_set_new(pd, k, json_is_array(deps) && json_array_size(deps)
							   ? json_deep_copy(deps)
							   : json_null());
		json_object_set_new(n, "propertyDependencies", pd);
		st_changes_add(rep, "%s: filled 'propertyDependencies' for %zu input%s from "
			       "'dependencies' (%zu)", urn ? urn : where, json_object_size(inputs),
			       json_object_size(inputs) == 1 ? "" : "s",
			       json_is_array(deps) ? json_array_size(deps) : 0);
	}
	if (from_version <= 1 && json_object_get(r, "defaults"))
		st_changes_add(rep, "%s: dropped deprecated 'defaults' (%zu value%s)",
			       urn ? urn : where, json_object_size(json_object_get(r, "defaults")),
			       json_object_size(json_object_get(r, "defaults")) == 1 ? "" : "s");
	json_object_foreach(r, k, v) {
		if (in_list(known, k) || !strcmp(k, "defaults"))
			continue;
		if (pd && !strcmp(k, "propertyDependencies")) {
			st_changes_add(rep, "%s: dropped field 'propertyDependencies' unknown to "
				       "version %d, as Pulumi does (filled from 'dependencies' instead)",
				       urn ? urn : where, from_version);
			continue;
		}
		json_object_set(n, k, v);
		st_changes_add(rep, "%s: kept field '%s' unknown to version %d (Pulumi drops it "
			       "when it reads version %d)", urn ? urn : where, k, from_version,
			       from_version);
	}
	return n;
}

static json_t *deployment_to_v3(json_t *d, int from_version, st_changes *rep)
{
	json_t *n = json_object(), *m, *res, *r, *ops, *op, *nres, *nops, *v;
	const char *k;
	size_t i;

	if (!n)
		return NULL;
	m = json_object_get(d, "manifest");
	if (json_is_object(m)) {
		json_object_set(n, "manifest", m);
	} else {
		m = json_object();
		json_object_set_new(m, "time", json_string("0001-01-01T00:00:00Z"));
		json_object_set_new(m, "magic", json_string(""));
		json_object_set_new(m, "version", json_string(""));
		json_object_set_new(n, "manifest", m);
		st_changes_add(rep, "added an empty 'manifest' (the deployment had none)");
	}
	if (json_object_get(d, "time"))
		st_changes_add(rep, "dropped the pre-versioning 'latest.time' (%s)",
			       st_json_str(d, "time") ? st_json_str(d, "time") : "not a string");
	res = json_object_get(d, "resources");
	if (json_is_array(res) && json_array_size(res)) {
		nres = json_array();
		json_array_foreach(res, i, r) {
			char where[48];
			snprintf(where, sizeof(where), "resource %zu", i);
			json_array_append_new(nres, resource_to_v3(r, from_version, where, rep));
		}
		json_object_set_new(n, "resources", nres);
	}
	ops = json_object_get(d, "pending_operations");
	if (from_version >= 2 && json_is_array(ops) && json_array_size(ops)) {
		nops = json_array();
		json_array_foreach(ops, i, op) {
			json_t *no = json_object();
			char where[48];
			snprintf(where, sizeof(where), "pending operation %zu", i);
			json_object_set_new(no, "resource",
					    resource_to_v3(json_object_get(op, "resource"), 2,
							   where, rep));
			v = json_object_get(op, "type");
			json_object_set_new(no, "type", v ? json_incref(v) : json_string(""));
			json_array_append_new(nops, no);
		}
		json_object_set_new(n, "pending_operations", nops);
	}
	json_object_set_new(n, "metadata", json_object());
	json_object_foreach(d, k, v) {
		if (!strcmp(k, "manifest") || !strcmp(k, "resources") ||
		    !strcmp(k, "pending_operations") || !strcmp(k, "time"))
			continue;
		json_object_set(n, k, v);
		st_changes_add(rep, "kept deployment field '%s' unknown to version %d (Pulumi drops "
			       "it when it reads version %d%s)", k, from_version, from_version,
			       !strcmp(k, "secrets_providers") ? ", and cannot decrypt the "
			       "state's secrets then" : "");
	}
	return n;
}

int st_state_migrate(st_state *s, st_changes *rep, st_error *err)
{
	ST_ASSERT_ARG_AS(s, "state");
	json_t *dep, *ndep, *root;
	int from = s->version;

	if (from >= 3) {
		st_state_apply_features(s);
		return ST_OK;
	}
	dep = st_state_deployment(s);
	ndep = dep ? deployment_to_v3(dep, from == 0 ? 1 : from, rep) : NULL;
	if (dep && !ndep)
		return st__err(err, ST_ENOMEM, "out of memory");
	root = json_object();
	if (!root) {
		json_decref(ndep);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	json_object_set_new(root, "version", json_real(3));
	if (s->envelope == ST_ENVELOPE_EXPORT) {
		json_object_set_new(root, "deployment", ndep ? ndep : json_null());
		s->container = root;
	} else {
		json_t *cp = json_object(), *config = json_object_get(s->container, "config");
		const char *stack = st_json_str(s->container, "stack");
		json_object_set_new(cp, "stack", json_string(stack ? stack : ""));
		if (s->version == 0 && json_object_get(s->container, "target"))
			st_changes_add(rep, "dropped the pre-versioning 'target' ('%s'); the "
				       "checkpoint's 'stack' is %s, as Pulumi leaves it",
				       st_json_str(s->container, "target") ?
					       st_json_str(s->container, "target") : "",
				       stack ? stack : "empty");
		if (json_is_object(config) && json_object_size(config))
			json_object_set(cp, "config", config);
		if (ndep)
			json_object_set_new(cp, "latest", ndep);
		json_object_set_new(root, "checkpoint", cp);
		s->container = cp;
	}
	json_decref(s->root);
	s->root = root;
	st_changes_add(rep, "version %d -> 3", from);
	s->version = 3;
	if (st_state_apply_features(s) > 0)
		st_changes_add(rep, "version 3 -> 4: features %s",
			       "recorded in 'features' (used by the deployment)");
	return ST_OK;
}
