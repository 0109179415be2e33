/*
 * The DIY backend's settings (lib/store/diy.c is the backend): .pulumi/meta.yaml, whose
 * version, read as Pulumi reads it, tells project mode from the legacy layout; the compression
 * the environment chooses for the stacks written; and a backend's identity.
 */
#include "store_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#define META_KEY ".pulumi/meta.yaml"
#define STACKS ".pulumi/stacks/"

/* Parses meta.yaml as Pulumi does (yaml.v3 into {Version *int}): *version = -1 when the key
 * is missing or null. */
static int parse_meta(const char *data, size_t len, int *version, st_error *err)
{
	yaml_parser_t p;
	yaml_document_t doc;
	yaml_node_t *root;
	int rc = ST_OK;

	*version = -1;
	if (!yaml_parser_initialize(&p))
		return st__err(err, ST_ENOMEM, "out of memory");
	yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
	if (!yaml_parser_load(&p, &doc)) {
		rc = st__err(err, ST_EFORMAT, "corrupt store: unmarshal \"%s\": yaml: line %zu: %s",
			     META_KEY, p.problem_mark.line + 1, p.problem ? p.problem : "error");
		yaml_parser_delete(&p);
		return rc;
	}
	root = yaml_document_get_root_node(&doc);
	if (root && root->type == YAML_SCALAR_NODE && root->data.scalar.length == 0)
		root = NULL; /* an empty document */
	if (root && root->type != YAML_MAPPING_NODE) {
		rc = st__err(err, ST_EFORMAT,
			     "corrupt store: unmarshal \"%s\": the document is not a mapping",
			     META_KEY);
		goto out;
	}
	for (yaml_node_pair_t *pr = root ? root->data.mapping.pairs.start : NULL;
	     pr && pr < root->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(&doc, pr->key);
		yaml_node_t *v = yaml_document_get_node(&doc, pr->value);
		const char *ks, *vs;
		char *end;
		long n;
		if (!k || k->type != YAML_SCALAR_NODE)
			continue;
		ks = (const char *)k->data.scalar.value;
		if (strcmp(ks, "version"))
			continue;
		if (!v || v->type != YAML_SCALAR_NODE) {
			rc = st__err(err, ST_EFORMAT,
				     "corrupt store: unmarshal \"%s\": version is not a number",
				     META_KEY);
			goto out;
		}
		vs = (const char *)v->data.scalar.value;
		if (v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		    (!*vs || !strcmp(vs, "~") || !strcasecmp(vs, "null"))) {
			*version = -1; /* null: as missing */
			continue;
		}
		errno = 0;
		n = strtol(vs, &end, 10);
		if (v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || errno || end == vs || *end ||
		    n < 0 || n > 1000000) {
			rc = st__err(err, ST_EFORMAT,
				     "corrupt store: unmarshal \"%s\": version '%s' is not a number",
				     META_KEY, vs);
			goto out;
		}
		*version = (int)n;
	}
out:
	yaml_document_delete(&doc);
	yaml_parser_delete(&p);
	return rc;
}

/* Is `name` a stack file of the legacy listing (Pulumi's: .json, .yaml or .yml, optionally
 * .gz or .zst, with a valid stack name)? */
static int legacy_stack_file(const char *name)
{
	static const char *const ext[] = {".json", ".yaml", ".yml"};
	size_t n = strlen(name);
	if (n > 3 && !strcmp(name + n - 3, ".gz"))
		n -= 3;
	else if (n > 4 && !strcmp(name + n - 4, ".zst"))
		n -= 4;
	for (size_t i = 0; i < 3; i++) {
		size_t e = strlen(ext[i]);
		if (n > e && !strncmp(name + n - e, ext[i], e)) {
			char *stem = st_strndup(name, n - e);
			int ok = stem && st_stack_name_valid(stem);
			free(stem);
			return ok;
		}
	}
	return 0;
}

int st__diy_read_meta(st_store *store, int *project_mode, int *present, st_error *err)
{
	char *data = NULL;
	size_t len;
	int rc, version;

	rc = st_store_read(store, META_KEY, 1 << 20, &data, &len, NULL, err);
	if (rc == ST_ENOTFOUND) {
		/* No meta.yaml: legacy if stacks/ holds stack files directly, else a new store,
		 * which Pulumi creates in project mode. */
		st_store_entry *e = NULL;
		size_t n = 0;
		st_error_clear(err);
		if ((rc = st_store_list(store, ".pulumi/", ST_STORE_LIST_DIRS, &e, &n, err)) !=
		    ST_OK)
			return rc;
		*present = n > 0;
		st_store_entries_free(e, n);
		e = NULL;
		n = 0;
		if ((rc = st_store_list(store, STACKS, ST_STORE_LIST_DIRS, &e, &n, err)) != ST_OK)
			return rc;
		*project_mode = 1;
		for (size_t i = 0; i < n; i++) {
			const char *nm = e[i].key + strlen(STACKS);
			if (nm[strlen(nm) - 1] != '/' && legacy_stack_file(nm))
				*project_mode = 0;
		}
		st_store_entries_free(e, n);
		return ST_OK;
	}
	if (rc)
		return rc;
	*present = 1;
	rc = parse_meta(data, len, &version, err);
	free(data);
	if (rc)
		return rc;
	if (version < 0)
		return st__err(err, ST_EFORMAT, "corrupt store: missing version in \"%s\"", META_KEY);
	if (version > 1)
		return st__err(err, ST_EVERSION,
			       "state store unsupported: 'meta.yaml' version (%d) is not supported "
			       "by this version of statetool",
			       version);
	*project_mode = version == 1;
	return ST_OK;
}

/* ---- compression chosen by the environment ---- */

static int env_true(const char *v) { return v && (!strcmp(v, "1") || !strcasecmp(v, "true")); }

/* Pulumi's resolveCompression: *set tells whether a variable decides at all. */
int st__diy_env_compression(st_compression *c, int *set, st_error *err)
{
	const char *gz = getenv("PULUMI_DIY_BACKEND_GZIP"), *zs = getenv("PULUMI_DIY_BACKEND_ZSTD");
	if (!gz)
		gz = getenv("PULUMI_SELF_MANAGED_STATE_GZIP");
	if (!zs)
		zs = getenv("PULUMI_SELF_MANAGED_STATE_ZSTD");
	*set = gz || zs;
	*c = ST_COMPRESS_NONE;
	/* the environment, not an argument, is at fault: not ST_EINVAL (a usage error) */
	if (env_true(gz) && env_true(zs))
		return st__err(err, ST_EREFUSED,
			       "DIY_BACKEND_GZIP and DIY_BACKEND_ZSTD cannot both be enabled");
	if (env_true(zs))
		*c = ST_COMPRESS_ZSTD;
	else if (env_true(gz))
		*c = ST_COMPRESS_GZIP;
	return ST_OK;
}

const char *st__diy_comp_ext(st_compression c)
{
	return c == ST_COMPRESS_GZIP ? ".gz" : c == ST_COMPRESS_ZSTD ? ".zst" : "";
}

int st_backend_identity(const st_backend *b, char **out, st_error *err)
{
	st_store *s;

	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(out);
	*out = NULL;
	if ((s = st__backend_diy_store(b)))
		return st_store_identity(s, out, err);
	if (st__backend_is_cloud(b))
		*out = st__cloud_identity(b);
	else
		*out = st_strdup(b->url);
	return *out ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}
