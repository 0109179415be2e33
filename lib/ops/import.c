/*
 * Importing resources by adding their state, with Pulumi's import file and rules
 * (pkg/cmd/pulumi/operations/import.go, pkg/resource/deploy/import.go), as an operation of an
 * edit session: everything is checked first (the file, then the file against the state), then
 * the resources are added in order; a failure on the way leaves the session as it was.
 */
#include "import.h"
#include "session.h"

#include <ctype.h>
#include <sodium.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void st_import_report_clear(st_import_report *r)
{
	if (!r)
		return;
	st_changes_clear(&r->added);
	st_changes_clear(&r->noops);
	st_changes_clear(&r->notes);
	memset(r, 0, sizeof(*r));
}

/* One import. */
typedef struct imp {
	st_edit *e;
	json_t *doc, *nt, *pins; /* the file, its nameTable and (deprecated) providerInputs */
	const st_import_opts *o;
	st_import_opts opts; /* the caller's, of any version, as this version's */
	st__cfgvals *cfg;    /* the stack's configuration, or NULL */
	st_import_report *rep;
	st_problems *probs;
	st_error *err;
	char *stack, *project;
	const char *root; /* the root stack's URN (borrowed from the state) */
	st__spec *s;
	size_t n;
	char *done;   /* done[i]: spec i added (or found) */
	st_strmap ix; /* live resources by URN -> the resource (borrowed) */
	char stamp[32];
} imp;

/* Live resources by URN. Keys are the resources' own strings (they outlive the index). */
static int index_add(st_strmap *ix, json_t *r)
{
	const char *u = st_json_str(r, "urn");
	int created;
	st_strmap_slot *sl;
	if (!u || st_json_bool(r, "delete"))
		return ST_OK;
	if (!(sl = st_strmap_put(ix, u, &created)))
		return ST_ENOMEM;
	if (created)
		sl->p = r;
	return ST_OK;
}

static json_t *index_get(const st_strmap *ix, const char *urn)
{
	st_strmap_slot *sl = urn ? st_strmap_get(ix, urn) : NULL;
	return sl ? (json_t *)sl->p : NULL;
}

/* Adds resource r (stolen) to the state and the index. */
static int add(imp *c, json_t *r)
{
	int rc = st__edit_insert(c->e, (size_t)-1, r, NULL, c->err);
	if (rc == ST_OK && index_add(&c->ix, r) != ST_OK)
		rc = st__err(c->err, ST_ENOMEM, "out of memory");
	return rc;
}

/* ---- before anything changes ---- */

static int names(imp *c)
{
	st_state *s = st__edit_state(c->e);
	st_error local;
	int rc;
	st_error_clear(&local);
	rc = st_stack_names(s, c->o->dest_stack, st_state_path(s), &c->stack, &c->project,
			    &local);
	if (rc == ST_ENOTFOUND)
		return st__err(c->err, ST_EINVAL, "cannot tell the destination's stack and project: "
			       "%s; add --dest-stack PROJECT/STACK", local.message);
	return rc ? st__err_copy(c->err, &local) : ST_OK;
}

/* The file against the state: duplicates, URNs the state has with another ID, parents.
 * ST_OK, or ST_ENOMEM when a problem could not be recorded. */
static int check_against_state(imp *c)
{
	int oom = 0;
	for (size_t i = 0; i < c->n; i++) {
		st__spec *s = &c->s[i];
		json_t *ex = index_get(&c->ix, s->urn);
		int earlier = 0;
		if (!s->urn)
			continue;
		/* (statetool's own rule, once per spec: Pulumi's "duplicate import" is about a
		 * URN given twice, which the file check reports) */
		for (size_t j = 0; j < i; j++)
			if (s->id && c->s[j].id && *s->id && c->s[j].type &&
			    strcmp(s->id, ST__IMPORT_PLACEHOLDER) && /* (refused as such) */
			    !strcmp(s->id, c->s[j].id) && !strcmp(s->type, c->s[j].type)) {
				oom |= st__import_problem(c->probs, i, "id", "ID '%s' of type '%s' is "
							  "imported twice (also by /resources/%zu): two "
							  "resources would manage one object",
							  s->id, s->type, j);
				break;
			}
		if (ex) {
			const char *eid = st_json_str(ex, "id");
			/* a provider the state has is reused, as Pulumi's registerProviders reuses
			 * it (deploy/import.go): the file run again, or a provider made since */
			if ((eid && s->id && !strcmp(eid, s->id)) || (!eid && s->component) ||
			    (st_type_is_provider(s->type) && st_type_is_provider(st_json_str(ex, "type"))))
				continue;
			oom |= st__import_problem(c->probs, i, NULL, "resource '%s' already exists",
						  s->urn);
		}
		if (!s->parent_urn || index_get(&c->ix, s->parent_urn))
			continue;
		for (size_t j = 0; j < i; j++)
			earlier |= c->s[j].urn && !strcmp(c->s[j].urn, s->parent_urn);
		if (!earlier)
			oom |= st__import_problem(c->probs, i, "parent", "unknown parent '%s' for "
						  "resource '%s'", s->parent_urn, s->urn);
	}
	return oom ? ST_ENOMEM : ST_OK;
}

/* The state must be valid (Pulumi's engine refuses to import into an invalid snapshot). */
static int check_state(imp *c)
{
	st_problems p = {0};
	size_t errors;
	st_integrity_check(st__edit_state(c->e), &p, NULL);
	errors = p.errors;
	st_problems_clear(&p);
	if (errors)
		return st__err(c->err, ST_EINTEGRITY, "the destination fails its integrity check "
			       "(%zu error%s); repair it first (statetool repair)", errors,
			       errors == 1 ? "" : "s");
	return ST_OK;
}

/* Every check, the root stack made when missing (a failure later takes it away again). */
static int check_all(imp *c)
{
	size_t before = c->probs->errors, file_errors;
	json_t *res, *r;
	size_t i;
	int created, rc;

	if ((rc = st__import_check_file(c->doc, c->stack, c->project, NULL, c->probs, &c->s,
					&c->n, c->err)) != ST_OK ||
	    (rc = check_state(c)) != ST_OK)
		return rc;
	file_errors = c->probs->errors - before;
	if ((rc = st__edit_root_stack(c->e, c->stack, c->project, &c->root, &created, c->err)))
		return rc;
	if (created) {
		st_changes_add(&c->rep->added, "%s (the root stack, created)", c->root);
		c->rep->nadded++;
	}
	res = st__edit_resources(c->e);
	json_array_foreach(res, i, r)
		if (index_add(&c->ix, r) != ST_OK)
			return st__err(c->err, ST_ENOMEM, "out of memory");
	if (check_against_state(c) != ST_OK)
		return st__err(c->err, ST_ENOMEM, "out of memory");
	size_t conflicts = c->probs->errors - before - file_errors;
	if (file_errors && conflicts)
		return st__err(c->err, ST_EINVAL, "the import file has %zu error%s and %zu import%s "
			       "conflict with the state; nothing was imported", file_errors,
			       file_errors == 1 ? "" : "s", conflicts, conflicts == 1 ? "" : "s");
	if (file_errors)
		return st__err(c->err, ST_EINVAL, "the import file has %zu error%s; nothing was "
			       "imported", file_errors, file_errors == 1 ? "" : "s");
	if (conflicts)
		return st__err(c->err, ST_ECONFLICT, "%zu import%s conflict with the state; nothing "
			       "was imported", conflicts, conflicts == 1 ? "" : "s");
	return ST_OK;
}

/* Secrets to encrypt need the destination's secrets manager: the caller opens it and calls
 * again (report->needs_secrets), as with st_move. */
static int need_secrets(imp *c)
{
	c->rep->needs_secrets = 1;
	return st__err(c->err, ST_EPASSPHRASE, "the import holds secrets to encrypt: the "
		       "destination's secrets provider must be opened (opts->secrets)");
}

/* A ciphertext of spec `i` ((size_t)-1: of providerInputs[name]) that the destination's key
 * does not open: Pulumi's parseImportFile fails to deserialize the value, once per field. */
typedef struct bad_ctx {
	imp *c;
	size_t i;
	const char *name;
	int seen[2]; /* inputs, outputs reported */
} bad_ctx;

static int bad_secret(void *p, const char *field, const char *pointer, const char *why)
{
	bad_ctx *b = p;
	int out = strcmp(field, "inputs") != 0, rc;
	const char *pre = strcmp(why, ST__NOT_JSON)
				  ? "decrypting secret value: "
				  : "";
	if (b->seen[out]++)
		return 0;
	if (b->i == (size_t)-1) {
		st_buf ptr;
		st_buf_init(&ptr);
		st_buf_adds(&ptr, "/providerInputs");
		st_pointer_add_key(&ptr, b->name, strlen(b->name));
		st_buf_adds(&ptr, pointer + strlen("/inputs"));
		rc = ptr.oom ? ST_ENOMEM
			     : st__import_problem(b->c->probs, (size_t)-1, ptr.data,
						  "could not deserialize provider inputs for "
						  "provider '%s': %s%s", b->name, pre, why);
		st_buf_free(&ptr);
		return rc;
	}
	st__spec *s = &b->c->s[b->i];
	char *d = st__import_describe(b->i, s);
	if (!d)
		return ST_ENOMEM;
	rc = st__import_problem(b->c->probs, b->i, pointer + 1, "could not deserialize %s%s for "
				"%s: %s%s", s->type && st_type_is_provider(s->type) ? "provider " : "",
				field, d, pre, why);
	free(d);
	return rc;
}

static int has_secret(json_t *r)
{
	return st__secrets_count_plaintexts(r) || st__secrets_count_ciphertexts(r);
}

/* Secrets of the file need the destination's secrets manager: a plaintext to encrypt, a
 * ciphertext to decrypt (Pulumi deserializes the file with the stack's decrypter and refuses a
 * value that does not open: copied as it is, the stack would hold a secret no key opens). */
static int check_secrets(imp *c)
{
	size_t before = c->probs->errors, errors;
	const char *k;
	json_t *v;
	int need = 0, rc = ST_OK;

	for (size_t i = 0; !need && i < c->n; i++)
		need = has_secret(c->s[i].j);
	json_object_foreach(c->pins, k, v) {
		json_t *r = need ? NULL : json_pack("{s:O}", "inputs", v);
		need |= r && has_secret(r);
		json_decref(r);
	}
	if (need && !c->o->secrets)
		return need_secrets(c);
	for (size_t i = 0; need && rc == ST_OK && i < c->n; i++) {
		bad_ctx b = {c, i, NULL, {0, 0}};
		rc = st__secrets_check_decrypt(c->s[i].j, c->o->secrets, bad_secret, &b);
	}
	json_object_foreach(c->pins, k, v) {
		bad_ctx b = {c, (size_t)-1, k, {0, 0}};
		json_t *r = need && rc == ST_OK ? json_pack("{s:O}", "inputs", v) : NULL;
		if (r)
			rc = st__secrets_check_decrypt(r, c->o->secrets, bad_secret, &b);
		json_decref(r);
	}
	if (rc != ST_OK)
		return st__err(c->err, ST_ENOMEM, "out of memory");
	if ((errors = c->probs->errors - before) != 0)
		return st__err(c->err, ST_EINVAL, "the import file has %zu error%s; nothing was "
			       "imported", errors, errors == 1 ? "" : "s");
	return ST_OK;
}

/* ---- providers ---- */

static int add_spec(imp *c, size_t i);

/* __internal of a provider's inputs, made an object when it is not one (addOrGetInternal).
 * Borrowed; NULL: no memory. */
static json_t *internal_of(json_t *in)
{
	json_t *x = json_object_get(in, "__internal");
	if (json_is_object(x))
		return x;
	if (!(x = json_object()) || json_object_set_new(in, "__internal", x))
		return NULL;
	return x;
}

/* A version as a provider's inputs record it: semver's String() of ParseTolerant. New. */
static json_t *version_json(const char *v)
{
	char suf[256], norm[256];
	return json_string(st__import_parse_version(v, suf, sizeof(suf), norm, sizeof(norm)) < 0
				   ? v
				   : norm);
}

/* A []byte of the import file (base64, as Go decodes it) as Pulumi writes it back. New. */
static json_t *base64_json(const char *v)
{
	size_t n = strlen(v);
	unsigned char *raw = malloc(n / 4 * 3 + 3);
	long long len = raw ? st__go_base64_decode(v, n, raw) : -1;
	size_t olen = len < 0 ? 0 : sodium_base64_encoded_len((size_t)len,
							      sodium_base64_VARIANT_ORIGINAL);
	char *text = len < 0 ? NULL : malloc(olen);
	json_t *j = NULL;
	if (text) /* (the file's checks refused what Go cannot decode) */
		j = json_string(sodium_bin2base64(text, olen, raw, (size_t)len,
						  sodium_base64_VARIANT_ORIGINAL));
	free(raw);
	free(text);
	return j;
}

/* The inputs of a provider Pulumi's import creates for spec s (registerProviders): `base`
 * (borrowed, may be NULL) with what providers.Set* add: the version, the download URL (under
 * __internal), and for a parameterized package the base plugin's name, version and parameter
 * under __internal, the package's version as `version`. New; NULL: no memory. */
static json_t *provider_inputs(const json_t *base, const st__spec *s, const char *url)
{
	json_t *in = base ? json_deep_copy(base) : json_object(), *x;
	const char *v = s->param ? st_json_str(s->param, "pluginVersion") : s->version;
	const char *pn = st_json_str(s->param, "pluginName");
	const char *val = st_json_str(s->param, "value");
	int bad = !in;

	if (!bad && v && *v)
		bad = !internal_of(in) || json_object_set_new(in, "version", version_json(v));
	if (!bad && url && *url)
		bad = !(x = internal_of(in)) ||
		      json_object_set_new(x, "pluginDownloadURL", json_string(url));
	if (!bad && s->param)
		bad = !(x = internal_of(in)) ||
		      json_object_set_new(x, "name", json_string(pn ? pn : "")) ||
		      json_object_set(x, "version", json_object_get(in, "version")) ||
		      json_object_set_new(in, "version", version_json(s->version)) ||
		      json_object_set_new(x, "parameterization", base64_json(val ? val : ""));
	if (bad) {
		json_decref(in);
		return NULL;
	}
	return in;
}

/* Creates provider `urn` of type ptype as Pulumi's import does: custom, a fresh UUID as ID,
 * `inputs` (stolen), outputs the inputs without __internal (what the registry's Create
 * returns), no parent unless `parent`. `what` says where it comes from in the report. */
static int create_provider(imp *c, const char *urn, const char *ptype, const char *parent,
			   json_t *inputs, const char *what)
{
	char uuid[37];
	size_t nsec = 0;
	json_t *pr = NULL, *out = inputs ? json_deep_copy(inputs) : NULL;
	int rc = ST_ENOMEM;

	st_uuid4(uuid);
	if (out)
		json_object_del(out, "__internal");
	if (!out || !(pr = json_pack("{s:s,s:b,s:s,s:s}", "urn", urn, "custom", 1, "id", uuid,
				     "type", ptype)))
		goto out;
	if ((json_object_size(inputs) && json_object_set(pr, "inputs", inputs)) ||
	    (json_object_size(out) && json_object_set(pr, "outputs", out)) ||
	    (parent && json_object_set_new(pr, "parent", json_string(parent))) ||
	    json_object_set_new(pr, "created", json_string(c->stamp)) ||
	    json_object_set_new(pr, "modified", json_string(c->stamp)))
		goto out;
	if (!c->o->secrets && st__secrets_count_plaintexts(pr)) {
		rc = need_secrets(c);
		goto out;
	}
	if (c->o->secrets &&
	    (rc = st__secrets_encrypt_resource(pr, c->o->secrets, &nsec, c->err)) != ST_OK)
		goto out;
	rc = add(c, pr);
	pr = NULL;
	if (rc == ST_OK) {
		st_changes_add(&c->rep->added, "%s (%s, ID %s)%s", urn, what, uuid,
			       nsec ? " with encrypted secrets" : "");
		c->rep->nadded++;
	}
out:
	json_decref(pr);
	json_decref(inputs);
	json_decref(out);
	return rc == ST_ENOMEM ? st__err(c->err, ST_ENOMEM, "out of memory") : rc;
}

/* A default provider created: its inputs are the package's values of the stack's configuration
 * (GetPackageConfig), then what providers.Set* add. */
static int new_default_provider(imp *c, const char *urn, const char *pkg, const char *ptype,
				const st__spec *s, const char *url)
{
	json_t *base = NULL;
	int needs = 0, rc;
	if (c->cfg && (rc = st__config_values_inputs(c->cfg, pkg, c->o->config_secrets, &base,
						     &needs, c->err)) != ST_OK) {
		if (needs)
			c->rep->needs_secrets = 1;
		return rc;
	}
	rc = create_provider(c, urn, ptype, NULL, provider_inputs(base, s, url),
			     base && json_object_size(base) ? "default provider, with the stack's "
							      "config"
							    : "default provider");
	json_decref(base);
	return rc;
}

/* tokens.IntoQName: the '/'-separated segments that are not empty, every character other
 * than [A-Za-z0-9_.-] made '_'; "_" when nothing is left. New. */
static char *into_qname(const char *s)
{
	size_t n = 0;
	char *q = malloc(strlen(s) + 2);
	if (!q)
		return NULL;
	for (const char *p = s; *p; p++) {
		if (*p == '/' && (!n || q[n - 1] == '/'))
			continue;
		q[n++] = *p == '/' || isalnum((unsigned char)*p) || strchr("_.-", *p) ? *p : '_';
	}
	if (n && q[n - 1] == '/')
		n--;
	if (!n)
		q[n++] = '_';
	q[n] = '\0';
	return q;
}

/* The default provider of spec s's package, named as Pulumi names it (DefaultName:
 * default_4_16_0, pre-release and build parts, the download URL as a QName), created (no
 * parent, a fresh UUID as ID) when the state has none. *urn is new. */
static int default_provider(imp *c, const st__spec *s, char **urn)
{
	char suf[256] = "", *url = NULL, *qurl = NULL;
	char *pkg = st_strndup(s->type, strcspn(s->type, ":"));
	char *ptype = pkg ? st_asprintf("pulumi:providers:%s", pkg) : NULL;
	char *pname = NULL;
	size_t ul = s->dlurl ? strlen(s->dlurl) : 0;
	int rc = ST_ENOMEM;

	*urn = NULL;
	if (s->version)
		st__import_parse_version(s->version, suf, sizeof(suf), NULL, 0);
	/* the request's URL loses one trailing '/' (NewProviderRequest) */
	if (ul && !(url = st_strndup(s->dlurl, ul - (s->dlurl[ul - 1] == '/'))))
		goto out;
	if (url && *url && !(qurl = into_qname(url)))
		goto out;
	if (!ptype ||
	    !(pname = st_asprintf("default%s%s%s", suf, qurl ? "_" : "", qurl ? qurl : "")) ||
	    !(*urn = st_urn_new(c->stack, c->project, NULL, ptype, pname)))
		goto out;
	if (!index_get(&c->ix, *urn)) /* (one the state has is used as it is) */
		rc = new_default_provider(c, *urn, pkg, ptype, s, url);
	else
		rc = ST_OK;
out:
	free(pkg);
	free(ptype);
	free(pname);
	free(url);
	free(qurl);
	return rc == ST_ENOMEM ? st__err(c->err, ST_ENOMEM, "out of memory") : rc;
}

/* The provider `purn` that spec s names through nameTable, created when the state lacks it
 * ("If the provider is not in state, it will be created below using its ProviderInputs"):
 * the inputs the file's providerInputs give for the name, with s's version, download URL and
 * parameterization (the first user's, as Pulumi takes them). */
static int named_provider(imp *c, const st__spec *s, const char *purn)
{
	st_urn u;
	char *ptype;
	int rc;
	if (st_urn_parse(purn, &u) != ST_OK)
		return st__err(c->err, ST_EINVAL, "the provider %s for %s is not a URN", purn, s->urn);
	if (!(ptype = st_strndup(u.type, u.type_len)))
		return st__err(c->err, ST_ENOMEM, "out of memory");
	rc = create_provider(c, purn, ptype, NULL,
			     provider_inputs(json_object_get(c->pins, s->provider), s, s->dlurl),
			     "provider named in nameTable");
	free(ptype);
	return rc;
}

/* The provider reference of spec i (*pref new; NULL for providers and local components). A
 * provider the spec names is created first when missing: a provider spec of the file (Pulumi
 * creates them before any resource), or one nameTable names. */
static int provider_ref(imp *c, size_t i, char **pref)
{
	const st__spec *s = &c->s[i];
	const char *purn = NULL;
	char *owned = NULL;
	json_t *p;
	int rc = ST_OK;

	*pref = NULL;
	if (st_type_is_provider(s->type) || (s->component && !s->remote))
		return ST_OK;
	if (s->provider && *s->provider) {
		size_t j;
		purn = st_json_str(c->nt, s->provider);
		for (j = 0; !purn && j < c->n; j++)
			if (c->s[j].name && !strcmp(c->s[j].name, s->provider))
				purn = c->s[j].urn;
		for (j = 0; purn && j < c->n; j++)
			if (c->s[j].urn && !strcmp(c->s[j].urn, purn) &&
			    st_type_is_provider(c->s[j].type))
				break;
		if (purn && !index_get(&c->ix, purn))
			rc = j < c->n ? add_spec(c, j) : named_provider(c, s, purn);
	} else {
		rc = default_provider(c, s, &owned);
		purn = owned;
	}
	if (rc == ST_OK && !(p = purn ? index_get(&c->ix, purn) : NULL))
		rc = st__err(c->err, ST_ENOTFOUND, "the provider %s for %s is not in the state",
			     purn ? purn : "?", s->urn);
	if (rc == ST_OK && !(*pref = st__provider_ref(st_json_str(p, "urn"), st_json_str(p, "id"))))
		rc = st__err(c->err, ST_ENOMEM, "out of memory");
	free(owned);
	return rc;
}

/* ---- properties: given, read, or left for refresh ---- */

static int read_properties(imp *c, const st__spec *s, json_t **inputs, json_t **outputs)
{
	json_t *props = json_object_get(s->j, "properties"), *gin = json_object_get(s->j, "inputs");
	json_t *req = json_pack("{s:s,s:s,s:s,s:O}", "type", s->type, "id", s->id, "urn", s->urn,
				"properties", props ? props : json_null());
	json_t *resp = NULL;
	int rc;
	if (!req)
		return st__err(c->err, ST_ENOMEM, "out of memory");
	rc = c->o->read(c->o->read_ctx, req, &resp, c->err);
	json_decref(req);
	if (rc) {
		st__err_pointer(c->err, "");
		return rc;
	}
	*inputs = json_deep_copy(json_object_get(resp, "inputs"));
	*outputs = json_deep_copy(json_object_get(resp, "outputs"));
	json_decref(resp);
	if (!*inputs)
		*inputs = json_object();
	if (!*outputs)
		*outputs = json_object();
	if (!*inputs || !*outputs || (gin && json_object_update(*inputs, gin)))
		return st__err(c->err, ST_ENOMEM, "out of memory"); /* supplied inputs merged in */
	return ST_OK;
}

static int properties(imp *c, const st__spec *s, json_t **inputs, json_t **outputs)
{
	json_t *gin = json_object_get(s->j, "inputs"), *gout = json_object_get(s->j, "outputs");
	int rc = ST_OK;

	*inputs = *outputs = NULL;
	if (s->component || gout || c->o->no_read) {
		*inputs = gin ? json_deep_copy(gin) : json_object();
		*outputs = gout && !s->component ? json_deep_copy(gout) : json_object();
		if (!gout && c->o->no_read && !s->component)
			st_changes_add(&c->rep->notes, "%s: no outputs read; the next `pulumi "
				       "refresh` will fill them in", s->urn);
		if (!*inputs || !*outputs)
			rc = st__err(c->err, ST_ENOMEM, "out of memory");
	} else if (c->o->read) {
		rc = read_properties(c, s, inputs, outputs);
	} else {
		rc = st__err(c->err, ST_EINVAL, "%s has no outputs in the import file: give them, or "
			     "a --reader program, or --no-read (the next `pulumi refresh` fills them "
			     "in)", s->urn);
	}
	return rc;
}

/* `properties` limits the inputs kept. */
static int limit_inputs(const st__spec *s, json_t **inputs)
{
	json_t *props = json_object_get(s->j, "properties"), *kept, *pn;
	size_t k;
	if (!json_is_array(props))
		return ST_OK;
	if (!(kept = json_object()))
		return ST_ENOMEM;
	json_array_foreach(props, k, pn) {
		json_t *v = json_object_get(*inputs, json_string_value(pn));
		if (v && json_object_set(kept, json_string_value(pn), v)) {
			json_decref(kept);
			return ST_ENOMEM;
		}
	}
	json_decref(*inputs);
	*inputs = kept;
	return ST_OK;
}

/* ---- the resources ---- */

/* The resource of spec s (not a provider), as the engine records an import. New. */
static json_t *make_resource(imp *c, const st__spec *s, json_t *inputs, json_t *outputs,
			     const char *pref)
{
	int bad = 0;
	json_t *r = json_object();
	if (!r)
		return NULL;
	bad |= json_object_set_new(r, "urn", json_string(s->urn));
	bad |= json_object_set_new(r, "custom", json_boolean(!s->component));
	if (!s->component)
		bad |= json_object_set_new(r, "id", json_string(s->id));
	bad |= json_object_set_new(r, "type", json_string(s->type));
	if (json_object_size(inputs))
		bad |= json_object_set(r, "inputs", inputs);
	if (json_object_size(outputs))
		bad |= json_object_set(r, "outputs", outputs);
	bad |= json_object_set_new(r, "parent", json_string(s->parent_urn ? s->parent_urn
									   : c->root));
	if (!c->o->no_protect)
		bad |= json_object_set_new(r, "protect", json_true());
	if (pref)
		bad |= json_object_set_new(r, "provider", json_string(pref));
	if (c->o->keep_import_id && s->id && !s->component)
		bad |= json_object_set_new(r, "importID", json_string(s->id));
	bad |= json_object_set_new(r, "created", json_string(c->stamp));
	bad |= json_object_set_new(r, "modified", json_string(c->stamp));
	if (bad) {
		json_decref(r);
		return NULL;
	}
	return r;
}

/* A provider spec: its inputs (else the deprecated providerInputs of its name), and what
 * its version, download URL and parameterization add. */
static int add_provider_spec(imp *c, const st__spec *s)
{
	json_t *base = json_object_get(s->j, "inputs");
	if (!base)
		base = json_object_get(c->pins, s->name);
	return create_provider(c, s->urn, s->type, s->parent_urn,
			       provider_inputs(base, s, s->dlurl), "provider");
}

static int add_spec(imp *c, size_t i)
{
	const st__spec *s = &c->s[i];
	json_t *inputs = NULL, *outputs = NULL, *r = NULL, *ex;
	char *pref = NULL;
	size_t nsec = 0;
	int rc;

	if (c->done[i])
		return ST_OK; /* a provider made for an earlier user */
	c->done[i] = 1;
	if ((ex = index_get(&c->ix, s->urn))) {
		if (st_type_is_provider(s->type))
			st_changes_add(&c->rep->noops, "%s is in the state (ID %s): used as it is, "
				       "as Pulumi reuses it", s->urn, st_json_str(ex, "id") ?
				       st_json_str(ex, "id") : "(none)");
		else
			st_changes_add(&c->rep->noops, "%s already exists with ID %s; nothing to "
				       "do", s->urn, s->id ? s->id : "(none)");
		return ST_OK;
	}
	if (st_type_is_provider(s->type))
		return add_provider_spec(c, s);
	if ((rc = provider_ref(c, i, &pref)) != ST_OK ||
	    (rc = properties(c, s, &inputs, &outputs)) != ST_OK)
		goto out;
	if (limit_inputs(s, &inputs) != ST_OK || !(r = make_resource(c, s, inputs, outputs, pref))) {
		rc = st__err(c->err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if (!c->o->secrets && st__secrets_count_plaintexts(r)) {
		rc = need_secrets(c); /* (a reader's answer holds secrets) */
		goto out;
	}
	if (c->o->secrets &&
	    (rc = st__secrets_encrypt_resource(r, c->o->secrets, &nsec, c->err)) != ST_OK)
		goto out;
	rc = add(c, r);
	r = NULL;
	if (rc == ST_OK) {
		st_changes_add(&c->rep->added, "%s (ID %s)%s", s->urn,
			       s->component ? "none: a component" : s->id,
			       nsec ? " with encrypted secrets" : "");
		c->rep->nadded++;
	}
out:
	json_decref(r);
	json_decref(inputs);
	json_decref(outputs);
	free(pref);
	return rc;
}

static void now_utc(char *buf, size_t size)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int import_(imp *c)
{
	char ptr[64];
	int rc;
	if ((rc = names(c)) != ST_OK)
		return rc;
	/* the stack's configuration is loaded first, as Pulumi loads it before the import */
	if (c->o->config &&
	    (rc = st__config_values_load(c->o->config, c->o->config_len, c->o->config_name,
					 c->project, &c->cfg, c->err)) != ST_OK)
		return rc;
	if ((rc = check_all(c)) != ST_OK || (rc = check_secrets(c)) != ST_OK)
		return rc;
	for (size_t i = 0; i < c->n; i++)
		if (c->s[i].ext) {
			rc = st__err(c->err, ST_EUNSUPPORTED, "%s has an extension: extension "
				     "parameterizations are not supported by statetool import yet",
				     c->s[i].urn);
			snprintf(ptr, sizeof(ptr), "/resources/%zu/extension", i);
			st__err_pointer(c->err, ptr);
			return rc;
		}
	if (!(c->done = calloc(c->n + 1, 1)))
		return st__err(c->err, ST_ENOMEM, "out of memory");
	now_utc(c->stamp, sizeof(c->stamp));
	/* in order: providers before their first user */
	for (size_t i = 0; i < c->n; i++)
		if ((rc = add_spec(c, i)) != ST_OK)
			return rc;
	return ST_OK;
}

int st_edit_import(st_edit *e, json_t *doc, const st_import_opts *opts,
		   st_import_report *report, st_problems *problems, st_error *err)
{
	static const st_import_opts defaults = ST_IMPORT_OPTS_INIT;
	st_problems local = {0};
	st__edit_op op;
	imp c;
	int rc;

	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(doc);
	ST_ASSERT_ARG(report);
	memset(report, 0, sizeof(*report));
	if (opts && (rc = st__opts_version(opts->version, ST_IMPORT_OPTS_VERSION, "st_import_opts",
					   err)))
		return rc;
	memset(&c, 0, sizeof(c));
	c.e = e;
	c.doc = doc;
	c.nt = json_object_get(doc, "nameTable");
	c.pins = json_object_get(doc, "providerInputs");
	c.opts = defaults;
	if (opts) /* a version 1 caller's struct ends before the config */
		memcpy(&c.opts, opts, opts->version >= 2 ? sizeof(c.opts)
							 : offsetof(st_import_opts, config));
	c.o = &c.opts;
	c.rep = report;
	c.probs = problems ? problems : &local;
	c.err = err;
	st_strmap_init(&c.ix);
	if ((rc = st__edit_op_begin(e, &op, err)) == ST_OK)
		rc = st__edit_op_end(e, &op, import_(&c));
	if (rc != ST_OK) {
		int needs = report->needs_secrets;
		st_import_report_clear(report);
		report->needs_secrets = needs;
	} else {
		for (size_t i = 0; i < report->added.count; i++)
			st__edit_report(e, "imported %s", report->added.lines[i]);
	}
	st_strmap_free(&c.ix);
	st__specs_free(c.s, c.n);
	st__config_values_free(c.cfg);
	free(c.done);
	free(c.stack);
	free(c.project);
	st_problems_clear(&local);
	return rc;
}

int st_import(st_state *dst, const char *dst_path, json_t *doc, const st_import_opts *opts,
	      st_import_report *report, st_problems *problems, st_error *err)
{
	st_import_opts o = ST_IMPORT_OPTS_INIT;
	char *stack = NULL, *project = NULL;
	st_edit *e = NULL;
	st_error local;
	int rc;

	ST_ASSERT_ARG(dst);
	ST_ASSERT_ARG(doc);
	ST_ASSERT_ARG(report);
	memset(report, 0, sizeof(*report));
	if (opts && (rc = st__opts_version(opts->version, ST_IMPORT_OPTS_VERSION, "st_import_opts",
					   err)))
		return rc;
	if (opts)
		memcpy(&o, opts, opts->version >= 2 ? sizeof(o) : offsetof(st_import_opts, config));
	/* the path names the stack when nothing else does: the names are made here */
	if (!o.dest_stack && dst_path) {
		st_error_clear(&local);
		if (st_stack_names(dst, NULL, dst_path, &stack, &project, &local) == ST_OK &&
		    (o.dest_stack = st_asprintf("%s/%s", project, stack)) == NULL) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto out;
		}
	}
	if ((rc = st_edit_begin(&e, dst, NULL, err)) != ST_OK)
		goto out;
	rc = st_edit_import(e, doc, &o, report, problems, err);
	if (rc == ST_OK)
		rc = st_edit_commit(e, NULL, problems, err);
	if (rc != ST_OK)
		st__edit_abort(e);
out:
	st_edit_free(e);
	if (o.dest_stack != (opts ? opts->dest_stack : NULL))
		free((char *)o.dest_stack);
	free(stack);
	free(project);
	return rc;
}
