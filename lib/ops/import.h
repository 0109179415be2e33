/* The specs of an import file, shared by its checks (import_check.c) and the import itself
 * (import.c). Private to the library. */
#ifndef ST_OPS_IMPORT_H
#define ST_OPS_IMPORT_H

#include "internal.h"


/* The ID `pulumi preview --import-file` writes for each custom resource, for the user to
 * replace (preview.go); `pulumi import` fails to read it, so it is refused. */
#define ST__IMPORT_PLACEHOLDER "<PLACEHOLDER>"

/* One resource of an import file, its strings borrowed from the document. */
typedef struct st__spec {
	json_t *j;
	json_t *param, *ext; /* its parameterization and extension objects, or NULL */
	const char *type, *name, *logical, *id, *parent, *provider, *version, *dlurl;
	int component, remote;
	int malformed; /* the schema found it wrong: the rules leave it to the schema's problems */
	char *urn;        /* resolved (NULL when it could not be) */
	char *pqt;        /* the parent's qualified type, or NULL */
	char *parent_urn; /* the parent's URN, or NULL (the root stack) */
} st__spec;

/* The specs of `doc` (its "resources"), with names and logical names defaulting to each
 * other; malformed[i] (may be NULL) marks those the schema found wrong. NULL: no memory. */
st__spec *st__specs_load(json_t *doc, size_t *n);
void st__specs_free(st__spec *s, size_t n);

/* Every check of an import file that needs no state: the schema (`schema`, NULL: the
 * embedded one), Pulumi's rules for each spec, names and URNs (for stack and project), and
 * providers. Problems go to `out`. *specs (may be NULL) receives the resolved specs (new:
 * st__specs_free). ST_OK (even with problems) or an error. */
int st__import_check_file(json_t *doc, const char *stack, const char *project,
			  st_schema *schema, st_problems *out, st__spec **specs, size_t *n,
			  st_error *err);

/* "resource 'name' of type 'T'" as Pulumi describes spec i. New; NULL: no memory. */
char *st__import_describe(size_t i, const st__spec *s);

/* One problem of spec i ((size_t)-1: of the file), at field `field` (may be NULL). ST_OK or
 * ST_ENOMEM (a problem lost: the caller must not go on as if the file had none). */
int st__import_problem(st_problems *out, size_t i, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* semver.ParseTolerant, enough to check a version and to name a default provider: fills the
 * name's suffix (_4_16_0, then pre-release and build parts, as DefaultName writes them) and
 * `norm` (may be NULL) with the version as semver prints it (" v1.2" -> "1.2.0"). -1 when not
 * a version (or longer than the buffers). */
int st__import_parse_version(const char *v, char *suffix, size_t size, char *norm, size_t nsize);

#endif
