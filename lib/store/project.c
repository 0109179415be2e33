/* The backend a command uses when none is named: $PULUMI_BACKEND_URL, else the backend.url of
 * the current Pulumi project (Pulumi.json, Pulumi.yaml or Pulumi.yml, searched upwards from the
 * working directory), as Pulumi's GetCurrentCloudURL chooses (pkg/workspace/creds.go; the
 * search is sdk/go/common/workspace/paths.go). Pulumi's last resort, the stored login
 * (~/.pulumi/credentials.json), is not used: it is a per-user setting, not the project's. */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

/* The project file in `dir` (new), in Pulumi's order of extensions; NULL when none. */
static char *project_in_dir(const char *dir)
{
	static const char *const names[] = {"Pulumi.json", "Pulumi.yaml", "Pulumi.yml"};
	struct stat sb;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *p = st_asprintf("%s%s%s", dir, strcmp(dir, "/") ? "/" : "", names[i]);
		if (p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode))
			return p;
		free(p);
	}
	return NULL;
}

/* The scalar at `key` of the mapping `map`, or NULL. */
static yaml_node_t *map_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top;
	     pr++) {
		yaml_node_t *k = yaml_document_get_node(doc, pr->key);
		if (k && k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, key))
			return yaml_document_get_node(doc, pr->value);
	}
	return NULL;
}

/* backend.url of the project file `path` (*out new, NULL when it names none). */
static int project_backend(const char *path, char **out, st_error *err)
{
	yaml_parser_t p;
	yaml_document_t doc;
	yaml_node_t *url;
	FILE *f;
	int rc = ST_OK;

	*out = NULL;
	if (!(f = fopen(path, "rb")))
		return st__err(err, ST_EIO, "cannot open '%s': %s", path, strerror(errno));
	if (!yaml_parser_initialize(&p)) {
		fclose(f);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	yaml_parser_set_input_file(&p, f);
	if (!yaml_parser_load(&p, &doc)) {
		rc = st__err(err, ST_EFORMAT, "could not unmarshal '%s': yaml: line %zu: %s", path,
			     p.problem_mark.line + 1, p.problem ? p.problem : "error");
		yaml_parser_delete(&p);
		fclose(f);
		return rc;
	}
	url = map_get(&doc, map_get(&doc, yaml_document_get_root_node(&doc), "backend"), "url");
	if (url && url->type == YAML_SCALAR_NODE && url->data.scalar.length > 0 &&
	    !(*out = st_strdup((const char *)url->data.scalar.value)))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	yaml_document_delete(&doc);
	yaml_parser_delete(&p);
	fclose(f);
	return rc;
}

int st_backend_default_url(char **url, char **source, st_error *err)
{
	ST_ASSERT_ARG(url);
	const char *env = getenv("PULUMI_BACKEND_URL");
	char cwd[PATH_MAX], *file = NULL;
	int rc;

	*url = NULL;
	if (source)
		*source = NULL;
	if (env && *env) {
		if (!(*url = st_strdup(env)) || (source && !(*source = st_strdup("PULUMI_BACKEND_URL")))) {
			free(*url);
			*url = NULL;
			return st__err(err, ST_ENOMEM, "out of memory");
		}
		return ST_OK;
	}
	/* Pulumi's search: the nearest directory upwards holding a project file; an unreadable
	 * directory ends the search as if there were none. */
	if (!getcwd(cwd, sizeof(cwd)))
		return st__err(err, ST_ENOTFOUND, "no backend given");
	for (;;) {
		char *slash;
		if ((file = project_in_dir(cwd)) || !strcmp(cwd, "/") || !(slash = strrchr(cwd, '/')))
			break;
		slash[slash == cwd] = '\0'; /* "/a" -> "/", "/a/b" -> "/a" */
	}
	if (!file)
		return st__err(err, ST_ENOTFOUND, "no backend given");
	rc = project_backend(file, url, err);
	if (rc == ST_OK && !*url)
		rc = st__err(err, ST_ENOTFOUND, "no backend given ('%s' names no backend.url)", file);
	if (rc == ST_OK && source)
		*source = file;
	else
		free(file);
	return rc;
}
