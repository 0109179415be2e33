/*
 * Importing resources by adding their state, with Pulumi's import file and rules
 * (pkg/cmd/pulumi/operations/import.go parseImportFile, pkg/resource/deploy/import.go).
 */
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


void st_import_report_clear(st_import_report *r)
{
	st_changes_clear(&r->added);
	st_changes_clear(&r->noops);
	st_changes_clear(&r->notes);
	memset(r, 0, sizeof(*r));
}

typedef struct spec {
	json_t *j;
	const char *type, *name, *logical, *id, *parent, *provider, *version, *dlurl;
	int component, remote;
	char *urn;   /* resolved */
	char *pqt;   /* parent's qualified type, or NULL */
	char *parent_urn;
} spec;

/* "resource 'name' of type 'T'" as Pulumi describes a spec. */
static char *describe(size_t i, const spec *s)
{
	char idx[32];
	snprintf(idx, sizeof(idx), "%zu", i);
	const char *who = s->name && *s->name ? s->name : s->id && *s->id ? s->id : NULL;
	if (s->type && *s->type)
		return who ? st_asprintf("resource '%s' of type '%s'", who, s->type)
			   : st_asprintf("resource %s of type '%s'", idx, s->type);
	return who ? st_asprintf("resource '%s'", who) : st_asprintf("resource %s", idx);
}

static void problem(st_problems *out, size_t i, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void problem(st_problems *out, size_t i, const char *field, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL, ptr[128];
	if (i == (size_t)-1)
		snprintf(ptr, sizeof(ptr), "%s", field ? field : "");
	else if (field)
		snprintf(ptr, sizeof(ptr), "/resources/%zu/%s", i, field);
	else
		snprintf(ptr, sizeof(ptr), "/resources/%zu", i);
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	st_problems_add(out, ST_SEV_ERROR, "import/spec", ptr, NULL, "%s", msg ? msg : "?");
	free(msg);
}

/* semver.ParseTolerant, enough to check and to name default providers: [v]MAJOR[.MINOR[.PATCH]]
 * [-PRE][+BUILD]. Fills the provider name suffix (_4_16_0, then _pre parts, _build parts). */
static int parse_version(const char *v, char *suffix, size_t size)
{
	const char *p = v;
	long parts[3] = {0, 0, 0};
	int n = 0;
	size_t len = 0;

	while (*p == ' ')
		p++;
	if (*p == 'v' || *p == 'V')
		p++;
	for (; n < 3; n++) {
		char *end;
		if (!isdigit((unsigned char)*p))
			return -1;
		parts[n] = strtol(p, &end, 10);
		p = end;
		if (*p != '.')
			break;
		p++;
	}
	len += (size_t)snprintf(suffix + len, size - len, "_%ld_%ld_%ld", parts[0], parts[1],
				parts[2]);
	if (*p == '-' || *p == '+') {
		while (*p && len + 2 < size) {
			if (*p == '-' || *p == '+' || *p == '.') {
				suffix[len++] = '_';
			} else if (isalnum((unsigned char)*p)) {
				suffix[len++] = *p;
			} else {
				return -1;
			}
			p++;
		}
		suffix[len] = '\0';
	}
	while (*p == ' ')
		p++;
	return *p ? -1 : 0;
}

static int has_unknowns(const json_t *v, int depth)
{
	size_t i;
	const char *k;
	json_t *c;
	if (depth > ST_DEFAULT_MAX_DEPTH)
		return 0;
	if (json_is_string(v))
		return !strcmp(json_string_value(v), ST_UNKNOWN_ID);
	if (json_is_array(v)) {
		json_array_foreach(v, i, c)
			if (has_unknowns(c, depth + 1))
				return 1;
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, c)
			if (has_unknowns(c, depth + 1))
				return 1;
	}
	return 0;
}

static char *qtype_of(const char *urn)
{
	st_urn u;
	if (!urn || st_urn_parse(urn, &u) != ST_OK)
		return NULL;
	return st_strndup(u.qtype, u.qtype_len);
}

/* Loads the specs; names default to each other. */
static spec *load_specs(json_t *doc, size_t *n)
{
	json_t *res = json_object_get(doc, "resources"), *r;
	size_t i;
	spec *s = calloc(json_array_size(res) + 1, sizeof(*s));
	if (!s)
		return NULL;
	json_array_foreach(res, i, r) {
		s[i].j = r;
		s[i].type = st_json_str(r, "type");
		s[i].name = st_json_str(r, "name");
		s[i].logical = st_json_str(r, "logicalName");
		if (!s[i].logical || !*s[i].logical)
			s[i].logical = s[i].name;
		if (!s[i].name || !*s[i].name)
			s[i].name = s[i].logical;
		s[i].id = st_json_str(r, "id");
		s[i].parent = st_json_str(r, "parent");
		s[i].provider = st_json_str(r, "provider");
		s[i].version = st_json_str(r, "version");
		s[i].dlurl = st_json_str(r, "pluginDownloadUrl");
		s[i].component = st_json_bool(r, "component");
		s[i].remote = st_json_bool(r, "remote");
	}
	*n = json_array_size(res);
	return s;
}

static void free_specs(spec *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++) {
		free(s[i].urn);
		free(s[i].pqt);
		free(s[i].parent_urn);
	}
	free(s);
}

/* Pulumi's parseImportFile rules, then URN resolution. */
static int check_and_resolve(json_t *doc, spec *s, size_t n, const char *stack,
			     const char *project, st_problems *out)
{
	json_t *nt = json_object_get(doc, "nameTable");
	st_strmap taken_names, taken_urns, mapping;
	size_t errors_before = out->errors, i;
	int created;

	st_strmap_init(&taken_names);
	st_strmap_init(&taken_urns);
	st_strmap_init(&mapping);
	for (i = 0; i < n; i++) {
		char *d = describe(i, &s[i]);
		int is_prov = s[i].type && st_type_is_provider(s[i].type);
		if (!s[i].type || !*s[i].type)
			problem(out, i, "type", "%s has no type", d);
		if (!s[i].name || !*s[i].name)
			problem(out, i, "name", "%s has no name", d);
		if (is_prov) {
			if (s[i].id && *s[i].id)
				problem(out, i, "id", "%s has an ID, but is a provider, which is "
					"created rather than read", d);
			if (s[i].component)
				problem(out, i, "component", "%s is a provider, which cannot be a "
					"component", d);
			if (json_object_size(json_object_get(s[i].j, "outputs")))
				problem(out, i, "outputs", "%s is a provider, which cannot have "
					"outputs", d);
		} else if (!s[i].component && (!s[i].id || !*s[i].id)) {
			problem(out, i, "id", "%s has no ID", d);
		} else if (s[i].component && s[i].id && *s[i].id) {
			problem(out, i, "id", "%s has an ID, but is marked as a component", d);
		}
		if (s[i].remote && !s[i].component)
			problem(out, i, "remote", "%s is marked as remote, but not as a component", d);
		for (size_t j = 0; j < i; j++)
			if (s[i].name && s[j].name && !strcmp(s[i].name, s[j].name))
				st_strmap_put(&taken_names, s[i].name, &created);
		if (s[i].version) {
			char suf[128];
			if (parse_version(s[i].version, suf, sizeof(suf)) < 0)
				problem(out, i, "version", "could not parse version '%s' for %s: "
					"Invalid character(s) found in version", s[i].version, d);
		}
		static const char *const pv[] = {"inputs", "outputs"};
		for (int k = 0; k < 2; k++)
			if (has_unknowns(json_object_get(s[i].j, pv[k]), 0))
				problem(out, i, pv[k], "the %s for %s contain unknown values; fill "
					"them in before importing", pv[k], d);
		free(d);
	}
	if (out->errors > errors_before)
		goto out;
	/* Names and URNs: the name table first, then each spec once its parent is known. */
	{
		const char *k;
		json_t *v;
		json_object_foreach(nt, k, v) {
			if (!json_is_string(v))
				continue;
			st_strmap_put(&taken_urns, json_string_value(v), &created);
			st_strmap_slot *sl = st_strmap_put(&mapping, k, &created);
			if (sl)
				sl->p = (void *)json_string_value(v);
		}
	}
	for (i = 0; i < n; i++) {
		st_strmap_slot *sl = st_strmap_get(&mapping, s[i].name);
		if (!sl) {
			sl = st_strmap_put(&mapping, s[i].name, &created);
			if (sl)
				sl->p = NULL;
		}
	}
	int progress = 1;
	char *done = calloc(n + 1, 1);
	while (progress) {
		progress = 0;
		for (i = 0; i < n; i++) {
			char *pqt = NULL, *d;
			if (done[i])
				continue;
			d = describe(i, &s[i]);
			if (s[i].parent && *s[i].parent) {
				json_t *ntu = json_object_get(nt, s[i].parent);
				if (st_strmap_get(&taken_names, s[i].parent))
					problem(out, i, "parent", "%s has an ambiguous parent", d);
				if (json_is_string(ntu)) {
					pqt = qtype_of(json_string_value(ntu));
					s[i].parent_urn = st_strdup(json_string_value(ntu));
				} else {
					st_strmap_slot *ps = st_strmap_get(&mapping, s[i].parent);
					if (!ps) {
						problem(out, i, "parent", "the parent '%s' for %s has no "
							"entry in 'nameTable'", s[i].parent, d);
						done[i] = 1;
						free(d);
						continue;
					}
					if (!ps->p) {
						free(d);
						continue; /* its parent is not resolved yet */
					}
					pqt = qtype_of((const char *)ps->p);
					s[i].parent_urn = st_strdup((const char *)ps->p);
				}
			}
			s[i].pqt = pqt;
			s[i].urn = st_urn_new(stack, project, pqt, s[i].type, s[i].logical);
			if (st_strmap_get(&taken_urns, s[i].urn))
				problem(out, i, NULL, "%s has an ambiguous URN, set name (or logical name) "
					"to be unique", d);
			st_strmap_put(&taken_urns, s[i].urn, &created);
			st_strmap_slot *sl = st_strmap_put(&mapping, s[i].name, &created);
			if (sl)
				sl->p = s[i].urn;
			done[i] = 1;
			progress = 1;
			free(d);
		}
	}
	for (i = 0; i < n; i++) {
		if (!done[i]) {
			char *d = describe(i, &s[i]);
			problem(out, i, "parent", "the parent '%s' for %s forms a cycle", s[i].parent, d);
			free(d);
		}
	}
	free(done);
	/* Providers: through the name table, or a provider spec in this file. */
	for (i = 0; i < n; i++) {
		char *d;
		if (!s[i].provider || !*s[i].provider)
			continue;
		d = describe(i, &s[i]);
		if (st_strmap_get(&taken_names, s[i].provider))
			problem(out, i, "provider", "%s has an ambiguous provider", d);
		json_t *ntu = json_object_get(nt, s[i].provider);
		const char *purn = json_string_value(ntu);
		if (!purn) {
			for (size_t j = 0; j < n; j++)
				if (s[j].name && !strcmp(s[j].name, s[i].provider))
					purn = s[j].urn;
		}
		if (!purn) {
			problem(out, i, "provider", "the provider '%s' for %s has no entry in "
				"'nameTable' or 'resources'", s[i].provider, d);
		} else {
			st_urn pu;
			char *ty = NULL;
			if (st_urn_parse(purn, &pu) == ST_OK)
				ty = st_strndup(pu.type, pu.type_len);
			if (!ty || !st_type_is_provider(ty))
				problem(out, i, "provider", "the provider '%s' for %s is not a provider",
					s[i].provider, d);
			free(ty);
		}
		free(d);
	}
out:
	st_strmap_free(&taken_names);
	st_strmap_free(&taken_urns);
	st_strmap_free(&mapping);
	return out->errors > errors_before ? ST_EINVAL : ST_OK;
}

int st_import_check(json_t *doc, const char *stack, const char *project, st_problems *out,
		    st_error *err)
{
	size_t before = out->count, n;
	int rc = st_validate_import_file(doc, NULL, out, err);
	spec *s;
	if (rc)
		return rc;
	for (size_t i = before; i < out->count; i++)
		if (out->items[i].severity == ST_SEV_ERROR)
			return ST_OK; /* the shape is wrong: the rules would only repeat it */
	s = load_specs(doc, &n);
	if (!s)
		return st__err(err, ST_ENOMEM, "out of memory");
	check_and_resolve(doc, s, n, stack, project, out);
	free_specs(s, n);
	return ST_OK;
}

/* ---- building the state ---- */

static void now_utc(char *buf, size_t size)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Plaintext secrets of a spec value become ciphertext under the destination's provider. */
static int encrypt_secrets(json_t *v, st_secrets *sec, size_t *count, st_error *err, int depth)
{
	size_t i;
	const char *k;
	json_t *c;
	if (depth > ST_DEFAULT_MAX_DEPTH)
		return ST_OK;
	if (json_is_object(v)) {
		const char *sig = st_json_str(v, ST_SIG_KEY);
		if (sig && !strcmp(sig, ST_SIG_SECRET)) {
			json_t *pt = json_object_get(v, "plaintext");
			char *ct = NULL;
			if (!json_is_string(pt))
				return ST_OK;
			if (!sec)
				return st__err(err, ST_ESECRETS,
					       "the import file holds secrets and the destination has no "
					       "secrets provider to encrypt them");
			int rc = st_secrets_encrypt(sec, json_string_value(pt), json_string_length(pt),
						    &ct, err);
			if (rc)
				return rc;
			json_object_del(v, "plaintext");
			json_object_set_new(v, "ciphertext", json_string(ct));
			free(ct);
			(*count)++;
			return ST_OK;
		}
		json_object_foreach(v, k, c) {
			int rc = encrypt_secrets(c, sec, count, err, depth + 1);
			if (rc)
				return rc;
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, c) {
			int rc = encrypt_secrets(c, sec, count, err, depth + 1);
			if (rc)
				return rc;
		}
	}
	return ST_OK;
}

/* The package of a type token: the text before the first ':'. */
static char *package_of(const char *type)
{
	const char *c = strchr(type, ':');
	return c ? st_strndup(type, (size_t)(c - type)) : NULL;
}

/* Live resources by URN. Keys are the resources' own strings (they outlive the index). */
static void index_add(st_strmap *ix, json_t *r)
{
	const char *u = st_json_str(r, "urn");
	int created;
	if (!u || st_json_bool(r, "delete"))
		return;
	st_strmap_slot *sl = st_strmap_put(ix, u, &created);
	if (sl && created)
		sl->p = r;
}

static json_t *index_get(const st_strmap *ix, const char *urn)
{
	st_strmap_slot *sl = urn ? st_strmap_get(ix, urn) : NULL;
	return sl ? (json_t *)sl->p : NULL;
}



int st_import(st_state *dst, const char *dst_path, json_t *doc, const st_import_opts *o,
	      st_import_report *rep, st_problems *problems, st_error *err)
{
	ST_ASSERT_ARG(dst);
	st_import_opts def = ST_IMPORT_OPTS_INIT;
	char *stack = NULL, *project = NULL, *root = NULL, stamp[32];
	spec *s = NULL;
	size_t n = 0, i;
	json_t *res = NULL, *add = NULL;
	st_problems local = {0};
	st_problems *probs = problems ? problems : &local;
	int rc, had_dep = st_state_deployment(dst) != NULL;
	st_strmap ix;
	json_t *rr0;
	size_t orig_n = 0;
	int had_res = 0, inserted_root = 0;
	st_error nerr;

	st_strmap_init(&ix);

	memset(rep, 0, sizeof(*rep));
	if (!o)
		o = &def;
	else if ((rc = st__opts_version(o->version, ST_IMPORT_OPTS_VERSION, "st_import_opts",
					err)))
		goto out;
	st_error_clear(&nerr);
	rc = st_stack_names(dst, o->dest_stack, dst_path, &stack, &project, &nerr);
	if (rc == ST_ENOTFOUND)
		rc = st__err(err, ST_EINVAL, "cannot tell the destination's stack and project: it "
			     "names none; add --dest-stack PROJECT/STACK");
	else if (rc)
		st__err_copy(err, &nerr);
	if (rc)
		goto out;
	size_t before = probs->errors;
	rc = st_import_check(doc, stack, project, probs, err);
	if (rc)
		goto out;
	if (probs->errors > before) {
		rc = st__err(err, ST_EINVAL, "the import file has %zu error%s; nothing was imported",
			     probs->errors - before, probs->errors - before == 1 ? "" : "s");
		goto out;
	}
	s = load_specs(doc, &n);
	if (!s || check_and_resolve(doc, s, n, stack, project, probs) != ST_OK) {
		rc = s ? st__err(err, ST_EINVAL, "the import file has errors")
		       : st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	{
		st_problems p = {0};
		st_integrity_check(dst, &p, NULL);
		size_t e = p.errors;
		st_problems_clear(&p);
		if (e) {
			rc = st__err(err, ST_EINTEGRITY, "the destination fails its integrity check "
				     "(%zu error%s); repair it first (statetool repair)", e,
				     e == 1 ? "" : "s");
			goto out;
		}
	}
	/* An import only adds: a rollback removes what was added. */
	had_res = st_state_resources(dst, 0) != NULL;
	orig_n = json_array_size(st_state_resources(dst, 0));
	res = st_state_resources(dst, 1);
	if (!res) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	now_utc(stamp, sizeof(stamp));
	json_array_foreach(res, i, rr0)
		index_add(&ix, rr0);
	/* the root stack */
	{
		json_t *r;
		json_array_foreach(res, i, r)
			if (!root && st_json_str(r, "type") &&
			    !strcmp(st_json_str(r, "type"), ST_ROOT_STACK_TYPE) &&
			    !st_json_str(r, "parent"))
				root = st_strdup(st_json_str(r, "urn"));
		if (!root) {
			root = st_asprintf("urn:pulumi:%s::%s::" ST_ROOT_STACK_TYPE "::%s-%s", stack,
					   project, project, stack);
			json_t *rr = json_object();
			json_object_set_new(rr, "urn", json_string(root));
			json_object_set_new(rr, "custom", json_false());
			json_object_set_new(rr, "type", json_string(ST_ROOT_STACK_TYPE));
			json_array_insert_new(res, 0, rr);
			inserted_root = 1;
			index_add(&ix, rr);
			st_changes_add(&rep->added, "%s (the root stack, created)", root);
			rep->nadded++;
		}
	}
	/* Engine checks: duplicates, existing URNs, parents in the state. */
	for (i = 0; i < n; i++) {
		for (size_t j = 0; j < i; j++)
			if (s[i].id && s[j].id && *s[i].id && !strcmp(s[i].id, s[j].id) &&
			    !strcmp(s[i].type, s[j].type))
				problem(probs, i, "id", "duplicate import '%s' of type '%s'", s[i].id,
					s[i].type);
		json_t *ex = index_get(&ix, s[i].urn);
		if (ex) {
			const char *eid = st_json_str(ex, "id");
			if (eid && s[i].id && !strcmp(eid, s[i].id))
				continue;
			if (!eid && s[i].component)
				continue;
			problem(probs, i, NULL, "resource '%s' already exists", s[i].urn);
		}
		if (s[i].parent_urn && !index_get(&ix, s[i].parent_urn)) {
			int later = 0;
			for (size_t j = 0; j < n; j++)
				if (j < i && !strcmp(s[j].urn, s[i].parent_urn))
					later = 1;
			if (!later)
				problem(probs, i, "parent", "unknown parent '%s' for resource '%s'",
					s[i].parent_urn, s[i].urn);
		}
	}
	if (probs->errors > before) {
		rc = st__err(err, ST_ECONFLICT, "%zu import%s conflict with the state; nothing was "
			     "imported", probs->errors - before,
			     probs->errors - before == 1 ? "" : "s");
		goto restore;
	}
	/* Add each spec in order; providers before their first user. */
	for (i = 0; i < n; i++) {
		json_t *ex = index_get(&ix, s[i].urn), *r, *inputs = NULL, *outputs = NULL;
		char *pref = NULL;
		int is_prov = st_type_is_provider(s[i].type);
		if (ex) {
			st_changes_add(&rep->noops, "%s already exists with ID %s; nothing to do",
				       s[i].urn, s[i].id ? s[i].id : "(none)");
			continue;
		}
		/* the provider reference */
		if (!is_prov && (!s[i].component || s[i].remote)) {
			const char *purn = NULL;
			json_t *nt = json_object_get(doc, "nameTable");
			char *owned = NULL;
			if (s[i].provider && *s[i].provider) {
				purn = st_json_str(nt, s[i].provider);
				for (size_t j = 0; !purn && j < n; j++)
					if (s[j].name && !strcmp(s[j].name, s[i].provider))
						purn = s[j].urn;
			} else {
				char suf[128] = "", *pkg = package_of(s[i].type);
				if (s[i].version)
					parse_version(s[i].version, suf, sizeof(suf));
				char *ptype = st_asprintf("pulumi:providers:%s", pkg ? pkg : "");
				char *pname = st_asprintf("default%s", suf);
				owned = st_urn_new(stack, project, NULL, ptype, pname);
				purn = owned;
				if (!index_get(&ix, purn)) {
					/* a default provider, as the engine registers it: no parent */
					char uuid[37];
					st_uuid4(uuid);
					json_t *pin = json_object();
					if (s[i].version) {
						char vb[64];
						const char *v = s[i].version;
						snprintf(vb, sizeof(vb), "%s", v[0] == 'v' ? v + 1 : v);
						json_object_set_new(pin, "version", json_string(vb));
					}
					if (s[i].dlurl)
						json_object_set_new(pin, "pluginDownloadURL",
								    json_string(s[i].dlurl));
					json_t *pr = json_object();
					json_object_set_new(pr, "urn", json_string(purn));
					json_object_set_new(pr, "custom", json_true());
					json_object_set_new(pr, "id", json_string(uuid));
					json_object_set_new(pr, "type", json_string(ptype));
					if (json_object_size(pin)) {
						json_object_set(pr, "inputs", pin);
						json_object_set_new(pr, "outputs", json_deep_copy(pin));
					}
					json_decref(pin);
					json_object_set_new(pr, "created", json_string(stamp));
					json_object_set_new(pr, "modified", json_string(stamp));
					json_array_append_new(res, pr);
					index_add(&ix, pr);
					st_changes_add(&rep->added, "%s (default provider, ID %s)", purn,
						       uuid);
					rep->nadded++;
				}
				free(pkg);
				free(ptype);
				free(pname);
			}
			json_t *p = purn ? index_get(&ix, purn) : NULL;
			if (!p) {
				free(owned);
				rc = st__err(err, ST_ENOTFOUND, "the provider %s for %s is not in the "
					     "state", purn ? purn : "?", s[i].urn);
				goto restore;
			}
			pref = st__provider_ref(st_json_str(p, "urn"), st_json_str(p, "id"));
			free(owned);
		}
		/* inputs and outputs: given, read, or left for refresh */
		json_t *gin = json_object_get(s[i].j, "inputs"), *gout = json_object_get(s[i].j, "outputs");
		if (is_prov || s[i].component) {
			inputs = gin ? json_deep_copy(gin) : json_object();
			outputs = json_object();
		} else if (gout) {
			inputs = gin ? json_deep_copy(gin) : json_object();
			outputs = json_deep_copy(gout);
		} else if (o->read) {
			json_t *req = json_pack("{s:s,s:s,s:s,s:O}", "type", s[i].type, "id", s[i].id,
						"urn", s[i].urn, "properties",
						json_object_get(s[i].j, "properties")
							? json_object_get(s[i].j, "properties")
							: json_null());
			json_t *resp = NULL;
			rc = o->read(o->read_ctx, req, &resp, err);
			json_decref(req);
			if (rc) {
				free(pref);
				st__err_pointer(err, "");
				goto restore;
			}
			inputs = json_deep_copy(json_object_get(resp, "inputs"));
			outputs = json_deep_copy(json_object_get(resp, "outputs"));
			if (!inputs)
				inputs = json_object();
			if (!outputs)
				outputs = json_object();
			if (gin)
				json_object_update(inputs, gin); /* supplied inputs are merged in */
			json_decref(resp);
		} else if (o->no_read) {
			inputs = gin ? json_deep_copy(gin) : json_object();
			outputs = json_object();
			st_changes_add(&rep->notes, "%s: no outputs read; the next `pulumi refresh` "
				       "will fill them in", s[i].urn);
		} else {
			free(pref);
			rc = st__err(err, ST_EINVAL, "%s has no outputs in the import file: give them, "
				     "or a --reader program, or --no-read (the next `pulumi refresh` "
				     "fills them in)", s[i].urn);
			goto restore;
		}
		/* `properties` limits the kept inputs */
		json_t *props = json_object_get(s[i].j, "properties");
		if (json_is_array(props)) {
			json_t *kept = json_object();
			size_t k;
			json_t *pn;
			json_array_foreach(props, k, pn) {
				json_t *v = json_object_get(inputs, json_string_value(pn));
				if (v)
					json_object_set(kept, json_string_value(pn), v);
			}
			json_decref(inputs);
			inputs = kept;
		}
		size_t nsec = 0;
		if ((rc = encrypt_secrets(inputs, o->secrets, &nsec, err, 0)) != ST_OK ||
		    (rc = encrypt_secrets(outputs, o->secrets, &nsec, err, 0)) != ST_OK) {
			json_decref(inputs);
			json_decref(outputs);
			free(pref);
			goto restore;
		}
		r = json_object();
		json_object_set_new(r, "urn", json_string(s[i].urn));
		json_object_set_new(r, "custom", json_boolean(!s[i].component));
		if (!s[i].component && !is_prov)
			json_object_set_new(r, "id", json_string(s[i].id));
		if (is_prov) {
			char uuid[37];
			st_uuid4(uuid);
			json_object_set_new(r, "id", json_string(uuid));
		}
		json_object_set_new(r, "type", json_string(s[i].type));
		if (json_object_size(inputs))
			json_object_set(r, "inputs", inputs);
		if (json_object_size(outputs))
			json_object_set(r, "outputs", outputs);
		json_decref(inputs);
		json_decref(outputs);
		json_object_set_new(r, "parent", json_string(s[i].parent_urn ? s[i].parent_urn : root));
		if (!o->no_protect && !is_prov)
			json_object_set_new(r, "protect", json_true());
		if (pref)
			json_object_set_new(r, "provider", json_string(pref));
		if (o->keep_import_id && s[i].id && !s[i].component && !is_prov)
			json_object_set_new(r, "importID", json_string(s[i].id));
		json_object_set_new(r, "created", json_string(stamp));
		json_object_set_new(r, "modified", json_string(stamp));
		json_array_append_new(res, r);
		index_add(&ix, r);
		st_changes_add(&rep->added, "%s (ID %s)%s", s[i].urn,
			       s[i].component ? "none: a component" : is_prov ? "new" : s[i].id,
			       nsec ? " with encrypted secrets" : "");
		rep->nadded++;
		free(pref);
	}
	/* A valid state stays valid. */
	{
		st_problems p = {0};
		st_integrity_check(dst, &p, NULL);
		if (p.errors) {
			rc = st__err(err, ST_EINTEGRITY, "the state would be invalid after the import: "
				     "%s", p.items[0].message);
			st_problems_clear(&p);
			goto restore;
		}
		st_problems_clear(&p);
	}
	st_state_apply_features(dst);
	rc = ST_OK;
	goto out;
restore:
	if (had_dep && had_res) {
		if (inserted_root)
			json_array_remove(res, 0);
		while (json_array_size(res) > orig_n)
			json_array_remove(res, orig_n);
	} else if (had_dep) {
		json_object_del(st_state_deployment(dst), "resources");
	} else
		json_object_set_new(dst->container, dst->envelope == ST_ENVELOPE_EXPORT
							    ? "deployment" : "latest",
				    json_null());
	st_import_report_clear(rep);
out:
	st_strmap_free(&ix);
	json_decref(add);
	free_specs(s, n);
	free(stack);
	free(project);
	free(root);
	st_problems_clear(&local);
	return rc;
}

/* ---- the reverse: an import file from a state ---- */

json_t *st_import_generate(st_state *st, const size_t *idx, size_t n, st_error *err)
{
	ST_ASSERT_ARG(st);
	json_t *res = st_state_resources(st, 0), *doc, *nt, *arr, *r;
	size_t count = n ? n : json_array_size(res);
	st_strmap names; /* urn -> name in the file */
	st_strmap used;  /* names taken */
	char **owned;
	size_t nowned = 0, k0;
	int created;

	for (size_t k = 0; k < n; k++) {
		if (idx[k] >= json_array_size(res)) {
			st__err(err, ST_EINVAL, "no resource at index %zu (the state has %zu)", idx[k],
				json_array_size(res));
			return NULL;
		}
	}
	owned = calloc(count * 2 + 2, sizeof(*owned));
	if (!owned) {
		st__err(err, ST_ENOMEM, "out of memory");
		return NULL;
	}
	st_strmap_init(&names);
	st_strmap_init(&used);
	st_strmap ix;
	st_strmap_init(&ix);
	json_array_foreach(res, k0, r)
		index_add(&ix, r);
	doc = json_object();
	nt = json_object();
	arr = json_array();
	/* a unique name per URN that the file refers to */
#define NAME_OF(urn)                                                                          \
	({                                                                                    \
		st_strmap_slot *sl_ = st_strmap_get(&names, (urn));                           \
		const char *nm_ = sl_ ? (const char *)sl_->p : NULL;                          \
		if (!nm_) {                                                                   \
			st_urn pu_;                                                           \
			char *base_ = st_urn_parse((urn), &pu_) == ST_OK                      \
					      ? st_strndup(pu_.name, pu_.name_len)            \
					      : st_strdup((urn));                             \
			char *cand_ = st_strdup(base_);                                       \
			for (int k_ = 2; st_strmap_get(&used, cand_); k_++) {                 \
				free(cand_);                                                  \
				cand_ = st_asprintf("%s-%d", base_, k_);                      \
			}                                                                     \
			free(base_);                                                          \
			owned[nowned++] = cand_;                                              \
			st_strmap_put(&used, cand_, &created);                                \
			st_strmap_put(&names, (urn), &created)->p = cand_;                    \
			nm_ = cand_;                                                          \
		}                                                                             \
		nm_;                                                                          \
	})
	for (size_t k = 0; k < count; k++) {
		size_t i = n ? idx[k] : k;
		r = json_array_get(res, i);
		const char *type = st_json_str(r, "type"), *urn = st_json_str(r, "urn");
		if (!r || !type || !urn || st_json_bool(r, "delete") ||
		    (!strcmp(type, ST_ROOT_STACK_TYPE) && !st_json_str(r, "parent")) ||
		    st_type_is_provider(type))
			continue;
		json_t *sp = json_object();
		json_object_set_new(sp, "type", json_string(type));
		json_object_set_new(sp, "name", json_string(NAME_OF(urn)));
		{
			st_urn pu;
			if (st_urn_parse(urn, &pu) == ST_OK &&
			    strcmp(st_json_str(sp, "name"), pu.name) != 0)
				json_object_set_new(sp, "logicalName",
						    json_stringn(pu.name, pu.name_len));
		}
		if (st_json_bool(r, "custom") && st_json_str(r, "id"))
			json_object_set_new(sp, "id", json_string(st_json_str(r, "id")));
		const char *parent = st_json_str(r, "parent");
		json_t *pr = parent ? index_get(&ix, parent) : NULL;
		if (pr && !(st_json_str(pr, "type") &&
			    !strcmp(st_json_str(pr, "type"), ST_ROOT_STACK_TYPE))) {
			const char *pn = NAME_OF(parent);
			json_object_set_new(sp, "parent", json_string(pn));
			json_object_set_new(nt, pn, json_string(parent));
		}
		const char *prov = st_json_str(r, "provider");
		if (prov) {
			char *pu = NULL, *pid = NULL;
			if (st_provider_ref_parse(prov, &pu, &pid, NULL) == ST_OK) {
				st_urn u;
				json_t *p = index_get(&ix, pu);
				const char *ver = st_json_str(json_object_get(p, "inputs"), "version");
				if (st_urn_parse(pu, &u) == ST_OK && u.name_len >= 7 &&
				    !strncmp(u.name, "default", 7)) {
					if (ver)
						json_object_set_new(sp, "version", json_string(ver));
				} else if (p) {
					/* an explicit provider: a provider spec in the file, before its
					 * first user, so that a re-import creates it */
					int fresh = !st_strmap_get(&names, pu);
					const char *pn = NAME_OF(pu);
					if (fresh) {
						json_t *ps = json_object();
						json_object_set_new(ps, "type",
								    json_string(st_json_str(p, "type")));
						json_object_set_new(ps, "name", json_string(pn));
						if (json_object_size(json_object_get(p, "inputs")))
							json_object_set(ps, "inputs",
									json_object_get(p, "inputs"));
						json_array_append_new(arr, ps);
					}
					json_object_set_new(sp, "provider", json_string(pn));
				}
			}
			free(pu);
			free(pid);
		}
		if (!st_json_bool(r, "custom"))
			json_object_set_new(sp, "component", json_true());
		json_array_append_new(arr, sp);
	}
#undef NAME_OF
	/* parents that are themselves in the file refer to each other by name, not the table */
	{
		size_t k;
		json_t *sp;
		json_array_foreach(arr, k, sp) {
			const char *pn = st_json_str(sp, "parent");
			json_t *x;
			size_t m;
			json_array_foreach(arr, m, x)
				if (pn && m < k && !strcmp(st_json_str(x, "name"), pn))
					json_object_del(nt, pn);
		}
	}
	if (json_object_size(nt))
		json_object_set(doc, "nameTable", nt);
	json_object_set(doc, "resources", arr);
	json_decref(nt);
	json_decref(arr);
	for (size_t k = 0; k < nowned; k++)
		free(owned[k]);
	free(owned);
	st_strmap_free(&names);
	st_strmap_free(&used);
	st_strmap_free(&ix);
	return doc;
}
