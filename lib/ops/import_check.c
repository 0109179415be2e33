/*
 * The checks of an import file that need no state, with Pulumi's rules and messages
 * (pkg/cmd/pulumi/operations/import.go parseImportFile): its schema, each spec, names and URNs,
 * providers. Unlike Pulumi, every group runs, so one run reports every error: a spec the schema
 * found malformed is left to the schema's problems and to the groups it cannot spoil.
 */
#include "import.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *st__import_describe(size_t i, const st__spec *s)
{
	const char *who = s->name && *s->name ? s->name : s->id && *s->id ? s->id : NULL;
	if (s->type && *s->type)
		return who ? st_asprintf("resource '%s' of type '%s'", who, s->type)
			   : st_asprintf("resource %zu of type '%s'", i, s->type);
	return who ? st_asprintf("resource '%s'", who) : st_asprintf("resource %zu", i);
}

int st__import_problem(st_problems *out, size_t i, const char *field, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL, ptr[128];
	int rc;
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
	if (!msg)
		return ST_ENOMEM;
	rc = st_problems_add(out, ST_SEV_ERROR, "import/spec", ptr, NULL, "%s", msg);
	free(msg);
	return rc;
}

/* A problem, in a function with the check's context `c`: one that cannot be recorded makes
 * the whole check fail (c->oom), never a file that looks clean. */
#define problem(...) (c->oom |= st__import_problem(__VA_ARGS__) != ST_OK)

/* The identifiers of a pre-release (pre) or build part, [p, end): non-empty, alphanumerics
 * and '-', a numeric pre-release one without leading zeros (semver's rules). 0 or -1. */
static int idents_ok(const char *p, const char *end, int pre)
{
	for (;;) {
		const char *q = p;
		int digits = 1;
		for (; q < end && *q != '.'; q++) {
			if (!isalnum((unsigned char)*q) && *q != '-')
				return -1;
			digits &= isdigit((unsigned char)*q) != 0;
		}
		if (q == p || (pre && digits && *p == '0' && q - p > 1))
			return -1;
		if (q == end)
			return 0;
		p = q + 1;
	}
}

int st__import_parse_version(const char *v, char *suffix, size_t size, char *norm, size_t nsize)
{
	const char *p = v, *end = v + strlen(v), *rest, *plus = NULL, *q;
	char *e;
	long parts[3] = {0, 0, 0};
	int n = 0;
	size_t len;

	while (isspace((unsigned char)*p))
		p++;
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	if (*p == 'v')
		p++;
	while (n < 3) {
		if (p >= end || !isdigit((unsigned char)*p))
			return -1;
		parts[n++] = strtol(p, &e, 10);
		p = e;
		if (n == 3 || p >= end || *p != '.')
			break;
		p++;
	}
	rest = p;
	if (rest < end) {
		/* a short version (1.2) may not have pre-release or build parts */
		if (n < 3 || (*rest != '-' && *rest != '+'))
			return -1;
		plus = memchr(rest, '+', (size_t)(end - rest));
		if ((*rest == '-' && idents_ok(rest + 1, plus ? plus : end, 1)) ||
		    (plus && idents_ok(plus + 1, end, 0)))
			return -1;
	}
	len = (size_t)snprintf(suffix, size, "_%ld_%ld_%ld", parts[0], parts[1], parts[2]);
	for (q = rest; q < end && len + 1 < size; q++)
		suffix[len++] = q == rest || q == plus || *q == '.' ? '_' : *q;
	if (len >= size || q < end)
		return -1;
	suffix[len] = '\0';
	if (norm && (size_t)snprintf(norm, nsize, "%ld.%ld.%ld%.*s", parts[0], parts[1], parts[2],
				     (int)(end - rest), rest) >= nsize)
		return -1;
	return 0;
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

st__spec *st__specs_load(json_t *doc, size_t *n)
{
	json_t *res = json_object_get(doc, "resources"), *r;
	size_t i;
	st__spec *s = calloc(json_array_size(res) + 1, sizeof(*s));
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
		s[i].param = json_object_get(r, "parameterization");
		s[i].ext = json_object_get(r, "extension");
		if (!json_is_object(s[i].param))
			s[i].param = NULL;
		if (!json_is_object(s[i].ext))
			s[i].ext = NULL;
	}
	*n = json_array_size(res);
	return s;
}

void st__specs_free(st__spec *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++) {
		free(s[i].urn);
		free(s[i].pqt);
		free(s[i].parent_urn);
	}
	free(s);
}

/* What the groups share. */
typedef struct chk {
	json_t *doc, *nt; /* the document and its nameTable */
	json_t *pins;     /* its providerInputs (deprecated), or NULL */
	st__spec *s;
	size_t n;
	const char *stack, *project;
	st_problems *out;
	st_strmap taken_names; /* names used by more than one spec */
	st_strmap taken_urns, mapping; /* URNs made; name -> URN (slot p; NULL: not yet) */
	st_strmap dead; /* names of specs that get no URN (their problems say why) */
	int oom;        /* a problem could not be recorded */
} chk;

/* ---- each spec ---- */

static void check_provider_spec(chk *c, size_t i, const char *d)
{
	st__spec *s = &c->s[i];
	if (s->id && *s->id)
		problem(c->out, i, "id", "%s has an ID, but is a provider, which is created rather "
			"than read", d);
	if (s->component)
		problem(c->out, i, "component", "%s is a provider and may not be marked as a "
			"component", d);
	if (json_object_size(json_object_get(s->j, "outputs")))
		problem(c->out, i, "outputs", "%s is a provider and may not have outputs", d);
}

/* A parameterization (the base plugin a parameterized package is loaded from) and an
 * extension, as parseImportFile and ToProviderParameterization check them. */
static void check_plugin(chk *c, size_t i, const char *d)
{
	st__spec *s = &c->s[i];
	const char *pv = st_json_str(s->param, "pluginVersion");
	char suf[128];
	if (!s->param)
		return;
	if (st__import_parse_version(pv ? pv : "", suf, sizeof(suf), NULL, 0) < 0)
		problem(c->out, i, "parameterization/pluginVersion", "could not parse "
			"parameterization version '%s' for %s: Invalid character(s) found in version",
			pv ? pv : "", d);
	if (!s->version || !*s->version)
		problem(c->out, i, "parameterization", "%s has a parameterization but no version "
			"(the parameterized package's): version must be provided", d);
	if (s->ext)
		problem(c->out, i, "extension", "%s has both a parameterization and an extension, "
			"which are mutually exclusive", d);
}

static int check_spec(chk *c, size_t i)
{
	static const char *const pv[] = {"inputs", "outputs"};
	st__spec *s = &c->s[i];
	char *d = st__import_describe(i, s), suf[128];
	int created;

	if (!d)
		return ST_ENOMEM;
	if (!s->type || !*s->type)
		problem(c->out, i, "type", "%s has no type", d);
	if (!s->name || !*s->name)
		problem(c->out, i, "name", "%s has no name", d);
	if (s->type && st_type_is_provider(s->type))
		check_provider_spec(c, i, d);
	else if (!s->component && (!s->id || !*s->id))
		problem(c->out, i, "id", "%s has no ID", d);
	else if (s->component && s->id && *s->id)
		problem(c->out, i, "id", "%s has an ID, but is marked as a component", d);
	else if (!s->component && !strcmp(s->id, ST__IMPORT_PLACEHOLDER))
		problem(c->out, i, "id", "%s has the ID '" ST__IMPORT_PLACEHOLDER "', the placeholder "
			"`pulumi preview --import-file` writes: fill in the resource's ID", d);
	if (s->remote && !s->component)
		problem(c->out, i, "remote", "%s is marked as remote, but not as a component", d);
	for (size_t j = 0; j < i; j++)
		if (s->name && c->s[j].name && !strcmp(s->name, c->s[j].name) &&
		    !st_strmap_put(&c->taken_names, s->name, &created)) {
			free(d);
			return ST_ENOMEM;
		}
	if (s->version && st__import_parse_version(s->version, suf, sizeof(suf), NULL, 0) < 0)
		problem(c->out, i, "version", "could not parse version '%s' for %s: Invalid "
			"character(s) found in version", s->version, d);
	check_plugin(c, i, d);
	for (int k = 0; k < 2; k++)
		if (has_unknowns(json_object_get(s->j, pv[k]), 0))
			problem(c->out, i, pv[k], "the %s for %s contain unknown values; fill them in "
				"before importing", pv[k], d);
	/* the deprecated providerInputs: a provider spec's inputs when it has none, and the
	 * inputs of a provider the file names but does not declare */
	if (s->type && st_type_is_provider(s->type) && s->name &&
	    !json_object_get(s->j, "inputs") &&
	    has_unknowns(json_object_get(c->pins, s->name), 0))
		problem(c->out, i, "name", "the inputs for %s contain unknown values; fill them in "
			"before importing", d);
	if (s->provider && *s->provider && has_unknowns(json_object_get(c->pins, s->provider), 0))
		problem(c->out, i, "provider", "the providerInputs for %s contain unknown values; "
			"fill them in before importing", d);
	free(d);
	return ST_OK;
}

/* ---- names and URNs: the name table first, then each spec once its parent is known ---- */

static int seed_names(chk *c)
{
	const char *k;
	json_t *v;
	int created;
	st_strmap_slot *sl;
	json_object_foreach(c->nt, k, v) {
		if (!json_is_string(v))
			continue;
		if (!st_strmap_put(&c->taken_urns, json_string_value(v), &created) ||
		    !(sl = st_strmap_put(&c->mapping, k, &created)))
			return ST_ENOMEM;
		sl->p = (void *)json_string_value(v);
	}
	for (size_t i = 0; i < c->n; i++) {
		if (!c->s[i].name || st_strmap_get(&c->mapping, c->s[i].name))
			continue;
		if (!(sl = st_strmap_put(&c->mapping, c->s[i].name, &created)))
			return ST_ENOMEM;
		sl->p = NULL;
	}
	return ST_OK;
}

/* The parent of spec i: 1 resolved (or none), 0 not yet (its parent's URN is not known yet),
 * -1 never (reported). */
static int resolve_parent(chk *c, size_t i, const char *d)
{
	st__spec *s = &c->s[i];
	json_t *ntu;
	const char *purn;
	if (!s->parent || !*s->parent)
		return 1;
	if (st_strmap_get(&c->taken_names, s->parent))
		problem(c->out, i, "parent", "%s has an ambiguous parent", d);
	ntu = json_object_get(c->nt, s->parent);
	if (json_is_string(ntu)) {
		purn = json_string_value(ntu);
	} else {
		st_strmap_slot *ps = st_strmap_get(&c->mapping, s->parent);
		if (!ps) {
			problem(c->out, i, "parent", "the parent '%s' for %s has no entry in "
				"'nameTable'", s->parent, d);
			return -1;
		}
		if (!ps->p)
			return st_strmap_get(&c->dead, s->parent) ? -1 : 0;
		purn = ps->p;
	}
	s->pqt = qtype_of(purn);
	s->parent_urn = st_strdup(purn);
	if (!s->parent_urn || (!s->pqt && st_urn_valid(purn)))
		return ST_ENOMEM;
	return 1;
}

static int resolve_one(chk *c, size_t i, int *done)
{
	st__spec *s = &c->s[i];
	char *d = st__import_describe(i, s);
	st_strmap_slot *sl;
	int created, r;

	if (!d)
		return ST_ENOMEM;
	r = resolve_parent(c, i, d);
	if (r == ST_ENOMEM) {
		free(d);
		return r;
	}
	if (r <= 0) {
		*done = r < 0;
		free(d);
		return ST_OK;
	}
	*done = 1;
	s->urn = st_urn_new(c->stack, c->project, s->pqt, s->type, s->logical);
	if (!s->urn) {
		free(d);
		return ST_ENOMEM;
	}
	if (st_strmap_get(&c->taken_urns, s->urn))
		problem(c->out, i, NULL, "%s has an ambiguous URN, set name (or logical name) to be "
			"unique", d);
	free(d);
	if (!st_strmap_put(&c->taken_urns, s->urn, &created) ||
	    !(sl = st_strmap_put(&c->mapping, s->name, &created)))
		return ST_ENOMEM;
	sl->p = s->urn;
	return ST_OK;
}

static int resolve_urns(chk *c)
{
	char *done = calloc(c->n + 1, 1);
	int progress = 1, rc = done ? seed_names(c) : ST_ENOMEM;

	/* a spec without a type or name has no URN (its problem is reported) */
	for (size_t i = 0; done && rc == ST_OK && i < c->n; i++) {
		int created;
		done[i] = c->s[i].malformed || !c->s[i].type || !*c->s[i].type || !c->s[i].name ||
			  !*c->s[i].name;
		if (done[i] && c->s[i].name && !st_strmap_put(&c->dead, c->s[i].name, &created))
			rc = ST_ENOMEM;
	}
	while (progress && rc == ST_OK) {
		progress = 0;
		for (size_t i = 0; i < c->n && rc == ST_OK; i++) {
			int d = 0;
			if (done[i])
				continue;
			rc = resolve_one(c, i, &d);
			done[i] = (char)d;
			progress |= d;
		}
	}
	for (size_t i = 0; rc == ST_OK && i < c->n; i++) {
		char *d;
		if (done[i])
			continue;
		if (!(d = st__import_describe(i, &c->s[i])))
			rc = ST_ENOMEM;
		else
			problem(c->out, i, "parent", "the parent '%s' for %s forms a cycle",
				c->s[i].parent, d);
		free(d);
	}
	free(done);
	return rc;
}

/* ---- providers: through the name table, or a provider spec in this file ---- */

static void check_provider(chk *c, size_t i, const char *d)
{
	st__spec *s = &c->s[i];
	const char *purn = json_string_value(json_object_get(c->nt, s->provider));
	st_urn pu;
	char *ty = NULL;
	if (st_strmap_get(&c->taken_names, s->provider))
		problem(c->out, i, "provider", "%s has an ambiguous provider", d);
	for (size_t j = 0; !purn && j < c->n; j++)
		if (c->s[j].name && !strcmp(c->s[j].name, s->provider))
			purn = c->s[j].urn ? c->s[j].urn : "";
	if (!purn) {
		problem(c->out, i, "provider", "the provider '%s' for %s has no entry in 'nameTable' "
			"or 'resources'", s->provider, d);
		return;
	}
	if (!*purn)
		return; /* a provider spec whose URN could not be made: its own problem says why */
	if (st_urn_parse(purn, &pu) == ST_OK)
		ty = st_strndup(pu.type, pu.type_len);
	if (!ty || !st_type_is_provider(ty))
		problem(c->out, i, "provider", "the provider '%s' for %s is not a provider",
			s->provider, d);
	free(ty);
}

static int check_providers(chk *c)
{
	for (size_t i = 0; i < c->n; i++) {
		char *d;
		if (c->s[i].malformed || !c->s[i].provider || !*c->s[i].provider)
			continue;
		if (!(d = st__import_describe(i, &c->s[i])))
			return ST_ENOMEM;
		check_provider(c, i, d);
		free(d);
	}
	return ST_OK;
}

/* ---- the file ---- */

/* Marks the specs the schema's errors (from index `from` of out) point into. */
static void mark_malformed(st__spec *s, size_t n, const st_problems *out, size_t from)
{
	for (size_t k = from; k < out->count; k++) {
		const char *p = out->items[k].pointer;
		char *end;
		unsigned long i;
		if (out->items[k].severity != ST_SEV_ERROR || !p || strncmp(p, "/resources/", 11))
			continue;
		i = strtoul(p + 11, &end, 10);
		if (end != p + 11 && i < n)
			s[i].malformed = 1;
	}
}

int st__import_check_file(json_t *doc, const char *stack, const char *project,
			  st_schema *schema, st_problems *out, st__spec **specs, size_t *n,
			  st_error *err)
{
	size_t before = out->count;
	chk c;
	int rc = st_validate_import_file(doc, schema, out, err);

	if (specs)
		*specs = NULL;
	if (rc)
		return rc;
	memset(&c, 0, sizeof(c));
	c.doc = doc;
	c.nt = json_object_get(doc, "nameTable");
	c.pins = json_object_get(doc, "providerInputs");
	if (json_object_size(c.pins) &&
	    st_problems_add(out, ST_SEV_WARNING, "import/deprecated", "/providerInputs", NULL,
			    "the 'providerInputs' field is deprecated: declare the provider in "
			    "'resources' and set its configuration via its 'inputs' instead"))
		return st__err(err, ST_ENOMEM, "out of memory");
	c.stack = stack && *stack ? stack : "stack";
	c.project = project && *project ? project : "project";
	c.out = out;
	st_strmap_init(&c.taken_names);
	st_strmap_init(&c.taken_urns);
	st_strmap_init(&c.mapping);
	st_strmap_init(&c.dead);
	if (!(c.s = st__specs_load(doc, &c.n)))
		rc = ST_ENOMEM;
	else
		mark_malformed(c.s, c.n, out, before);
	for (size_t i = 0; rc == ST_OK && i < c.n; i++)
		if (!c.s[i].malformed)
			rc = check_spec(&c, i);
	if (rc == ST_OK)
		rc = resolve_urns(&c);
	if (rc == ST_OK)
		rc = check_providers(&c);
	if (rc == ST_OK && c.oom)
		rc = ST_ENOMEM;
	st_strmap_free(&c.taken_names);
	st_strmap_free(&c.taken_urns);
	st_strmap_free(&c.mapping);
	st_strmap_free(&c.dead);
	if (rc == ST_OK && specs) {
		*specs = c.s;
		*n = c.n;
	} else {
		st__specs_free(c.s, c.n);
	}
	return rc == ST_OK ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}

int st_import_check(json_t *doc, const char *stack, const char *project, st_schema *schema,
		    st_problems *out, st_error *err)
{
	ST_ASSERT_ARG(doc);
	ST_ASSERT_ARG(out);
	return st__import_check_file(doc, stack, project, schema, out, NULL, NULL, err);
}
