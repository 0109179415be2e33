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
	ST_ASSERT_ARG(out);
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

/* The built-in schemas' errors (from index `from` on) at a null Go's decoder takes for the
 * zero value (a string, slice, map, struct, time, ...: it stores nothing): Pulumi never applies
 * a schema when it loads, so each is one warning, schema/null, whatever keyword failed. */
static void null_zero_warnings(const json_t *doc, st__groot root, int version, st_problems *out,
			       size_t from)
{
	for (size_t i = from; i < out->count; i++) {
		st_problem *p = &out->items[i];
		const char *go;
		char *m;
		int again = 0;
		if (p->severity != ST_SEV_ERROR || strncmp(p->rule, "schema/", 7) ||
		    !(go = st__go_null_zero(doc, root, version, p->pointer)))
			continue;
		for (size_t j = from; j < i && !again; j++)
			again = !strcmp(out->items[j].rule, "schema/null") &&
				!strcmp(out->items[j].pointer, p->pointer);
		m = again ? NULL
			  : st_asprintf("null where Pulumi's Go type is %s: Go's decoder stores "
					"nothing, so Pulumi reads it as the empty value",
					go);
		if (!again && (!m || !(go = st_strdup("schema/null")))) {
			free(m);
			continue; /* out of memory: the schema's error stays */
		}
		if (again) {
			/* one warning for the null: the problem is removed */
			st_problem q = *p;
			memmove(p, p + 1, (out->count - i - 1) * sizeof(*p));
			out->count--;
			out->errors--;
			free(q.rule);
			free(q.message);
			free(q.pointer);
			free(q.urn);
			free(q.file);
			i--;
			continue;
		}
		free(p->rule);
		free(p->message);
		p->rule = (char *)go;
		p->message = m;
		p->severity = ST_SEV_WARNING;
		out->errors--;
		out->warnings++;
	}
}

static st__groot state_root(const st_state *s)
{
	if (s->envelope == ST_ENVELOPE_EXPORT)
		return ST__G_UNTYPED;
	return s->version == 0 ? ST__G_CHECKPOINT_V1 : ST__G_VERSIONED;
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
		size_t from = out->count;
		rc = st_schema_validate(o->schema, STATE_SCHEMA, s->root, &so, out, err);
		if (rc < 0)
			return rc;
		null_zero_warnings(s->root, state_root(s), s->version, out, from);
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

/* Where Pulumi's load meets a problem: DeserializeDeploymentV3 reads the manifest (0), builds
 * the secrets manager (1), deserializes every resource (2: property values, secrets, urn, type,
 * custom with an ID) and then every pending operation (3), before VerifyIntegrity (4) and what
 * Pulumi does not refuse (4: warnings stay with it). */
static int load_rank(const st_problem *p)
{
	static const char *const deser[] = {"secrets/malformed", "secrets/no-provider",
					     "integrity/missing-urn", "integrity/missing-type",
					     "integrity/custom-with-id", NULL};
	if (p->severity != ST_SEV_ERROR)
		return 4;
	if (!strcmp(p->rule, "manifest/plugin-version"))
		return 0;
	if (!strcmp(p->rule, "secrets/provider"))
		return 1;
	if (!strncmp(p->rule, "pending/", 8))
		return 3;
	for (int i = 0; deser[i]; i++)
		if (!strcmp(p->rule, deser[i]))
			return strstr(p->pointer, "/pending_operations/") ? 3 : 2;
	if (!strncmp(p->rule, "property/", 9))
		return strstr(p->pointer, "/pending_operations/") ? 3 : 2;
	return 4;
}

/* The problems from index `from` on in the order Pulumi's load meets them (a stable sort by
 * load_rank): the first is the one Pulumi stops at. */
static int order_as_loaded(st_problems *out, size_t from)
{
	size_t n = out->count - from, k = 0;
	st_problem *tmp;
	if (n < 2)
		return ST_OK;
	if (!(tmp = malloc(n * sizeof(*tmp))))
		return ST_ENOMEM;
	for (int r = 0; r <= 4; r++)
		for (size_t i = from; i < out->count; i++)
			if (load_rank(&out->items[i]) == r)
				tmp[k++] = out->items[i];
	memcpy(out->items + from, tmp, n * sizeof(*tmp));
	free(tmp);
	return ST_OK;
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

int st_validate(st_state *s, const st_validate_opts *o, st_problems *out, st_error *err)
{
	ST_ASSERT_ARG_AS(s, "state");
	ST_ASSERT_ARG(out);
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
	/* Schemas and integrity rules on two threads when the state is big enough to gain. */
	if (has_schemas &&
	    st__two_worth(ST__T_VALIDATE, json_array_size(st_state_resources(s, 0)), 0)) {
		/* The schemas on a second thread, the integrity rules on this one; the problems
		 * are reported in the same order as one after the other. Both only read. */
		schema_job job;
		st__two th = {0};
		memset(&job, 0, sizeof(job));
		job.s = s;
		job.o = &opts;
		st_error_clear(&job.err);
		if (st__two_start(&th, ST__T_VALIDATE, schema_thread, &job, 0)) {
			st_problems integ = {0};
			st_error ierr;
			st_error_clear(&ierr);
			int irc = st__secrets_provider_check(s, &integ) ? ST_ENOMEM : ST_OK;
			if (irc)
				st__err(&ierr, irc, "out of memory");
			else
				irc = st_integrity_check(s, &integ, &ierr);
			st__phase("validate: integrity rules");
			st__two_join(&th);
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
				rc = order_as_loaded(&integ, 0);
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
	/* Pulumi builds the secrets manager before it reads the resources */
	size_t ifrom = out->count;
	if (st__secrets_provider_check(s, out))
		return st__err(err, ST_ENOMEM, "out of memory");
	rc = st__integrity_check_ex(s, out, ST__IC_TWO_THREADS, err);
	if (rc == ST_OK && order_as_loaded(out, ifrom))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	st__phase("validate: integrity rules");
	if (rc)
		return rc;
	attach_urns(s, out, from);
	return ST_OK;
}

int st_validate_import_file(json_t *doc, st_schema *schema, st_problems *out, st_error *err)
{
	ST_ASSERT_ARG(doc);
	ST_ASSERT_ARG(out);
	st_schema *builtin = NULL;
	st_schema_opts so = ST_SCHEMA_OPTS_INIT;
	st__keymap km = {0};
	char *first = NULL, *first_ptr = NULL;
	size_t errors = out->errors;
	int rc;

	/* As `pulumi import` decodes it: keys of its structs in any case, Go's type errors (and
	 * then nothing more, as for a state that does not load). */
	rc = st__go_decode(doc, ST__G_IMPORT, "", &km, out, &first, &first_ptr);
	/* the earlier values of duplicate keys (st_json_parse's, in `out`) were for the decoder:
	 * decoded into the later ones as Go does, they are done with */
	st__dropped_free(out);
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
	size_t from = out->count;
	rc = st_schema_validate(schema, IMPORT_SCHEMA, doc, &so, out, err);
	st_schema_free(builtin);
	if (rc >= 0)
		null_zero_warnings(doc, ST__G_IMPORT, 0, out, from);
	return rc < 0 ? rc : ST_OK;
}
