/*
 * DIY backends on a local file system, laid out as Pulumi lays them out:
 *   <root>/.pulumi/meta.yaml                     version: 1 (project mode); absent: legacy
 *   <root>/.pulumi/stacks/<project>/<stack>.json[.gz]   (legacy: stacks/<stack>.json[.gz])
 *   <root>/.pulumi/locks/organization/<project>/<stack>/<uuid>.json
 * Names are checked before they become paths, so none can reach outside <root>/.pulumi.
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct st_backend {
	char *root;
	int project_mode;
};

static int name_chars_ok(const char *s, size_t max)
{
	size_t n = 0;
	if (!s || !*s)
		return 0;
	if (!strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	for (; s[n]; n++) {
		char c = s[n];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return 0;
	}
	return n <= max;
}

int st_stack_name_valid(const char *name) { return name_chars_ok(name, 100); }
int st_project_name_valid(const char *name) { return name_chars_ok(name, 100); }

static int read_meta(st_backend *b, st_error *err)
{
	char *path = st_asprintf("%s/.pulumi/meta.yaml", b->root), *data = NULL;
	size_t len;
	int rc;

	if (!path)
		return st__err(err, ST_ENOMEM, "out of memory");
	rc = st_file_read(path, 1 << 20, &data, &len, NULL, NULL);
	if (rc == ST_OK) {
		const char *v = strstr(data, "version:");
		if (!v) {
			st__err(err, ST_EFORMAT, "corrupt store: missing version in \"%s\"", path);
			free(data);
			free(path);
			return ST_EFORMAT;
		}
		int ver = atoi(v + 8);
		if (ver == 1) {
			b->project_mode = 1;
		} else if (ver != 0) {
			st__err(err, ST_EVERSION,
				"unsupported DIY backend layout version %d in \"%s\"", ver, path);
			free(data);
			free(path);
			return ST_EVERSION;
		}
		free(data);
	} else {
		/* No meta.yaml: legacy if stacks/ holds state files directly, else a new store,
		 * which Pulumi creates in project mode. */
		char *stacks = st_asprintf("%s/.pulumi/stacks", b->root);
		DIR *d = stacks ? opendir(stacks) : NULL;
		struct dirent *de;
		b->project_mode = 1;
		while (d && (de = readdir(d))) {
			size_t n = strlen(de->d_name);
			if ((n > 5 && !strcmp(de->d_name + n - 5, ".json")) ||
			    (n > 8 && !strcmp(de->d_name + n - 8, ".json.gz"))) {
				b->project_mode = 0;
				break;
			}
		}
		if (d)
			closedir(d);
		free(stacks);
	}
	free(path);
	return ST_OK;
}

int st_backend_open(st_backend **out, const char *url, st_error *err)
{
	st_backend *b;
	struct stat sb;
	const char *path;
	char *expanded = NULL;
	int rc;

	*out = NULL;
	if (!url || !*url)
		url = getenv("PULUMI_BACKEND_URL");
	if (!url || !*url)
		return st__err(err, ST_EINVAL,
			       "no backend given: use --backend file://PATH or set "
			       "PULUMI_BACKEND_URL");
	if (!strncmp(url, "file://", 7)) {
		path = url + 7;
	} else if (strstr(url, "://")) {
		return st__err(err, ST_EUNSUPPORTED,
			       "backend '%s' is not supported: statetool works on DIY backends in "
			       "a local directory (file://PATH)",
			       url);
	} else {
		path = url;
	}
	if (path[0] == '~' && (path[1] == '/' || !path[1]) && getenv("HOME")) {
		expanded = st_asprintf("%s%s", getenv("HOME"), path + 1);
		path = expanded;
	}
	if (!path || !*path) {
		free(expanded);
		return st__err(err, ST_EINVAL, "backend '%s' names no directory", url);
	}
	if (stat(path, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		st__err(err, ST_ENOTFOUND, "backend directory '%s' does not exist", path);
		free(expanded);
		return ST_ENOTFOUND;
	}
	b = calloc(1, sizeof(*b));
	if (!b || !(b->root = st_strdup(path))) {
		free(b);
		free(expanded);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	free(expanded);
	/* strip trailing slashes */
	for (size_t n = strlen(b->root); n > 1 && b->root[n - 1] == '/'; n--)
		b->root[n - 1] = '\0';
	rc = read_meta(b, err);
	if (rc) {
		st_backend_free(b);
		return rc;
	}
	*out = b;
	return ST_OK;
}

void st_backend_free(st_backend *b)
{
	if (!b)
		return;
	free(b->root);
	free(b);
}

const char *st_backend_root(const st_backend *b) { return b->root; }
int st_backend_project_mode(const st_backend *b) { return b->project_mode; }

/* Newest variant of <base>.json / .json.gz / .json.zst by mtime. New string or NULL. */
static char *newest_variant(const char *base, struct stat *out_sb)
{
	static const char *const ext[] = {".json", ".json.gz", ".json.zst"};
	char *best = NULL;
	struct stat best_sb;

	for (size_t i = 0; i < 3; i++) {
		char *p = st_asprintf("%s%s", base, ext[i]);
		struct stat sb;
		if (p && lstat(p, &sb) == 0 && (S_ISREG(sb.st_mode) || S_ISLNK(sb.st_mode))) {
			if (!best || sb.st_mtim.tv_sec > best_sb.st_mtim.tv_sec ||
			    (sb.st_mtim.tv_sec == best_sb.st_mtim.tv_sec &&
			     sb.st_mtim.tv_nsec > best_sb.st_mtim.tv_nsec)) {
				free(best);
				best = p;
				best_sb = sb;
				continue;
			}
		}
		free(p);
	}
	if (best && out_sb)
		*out_sb = best_sb;
	return best;
}

/* Splits a stack reference into project (may be NULL) and stack name, checking both. */
static int split_stack_ref(const st_backend *b, const char *ref, char **project, char **stack,
			   st_error *err)
{
	const char *s1 = strchr(ref, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;

	*project = NULL;
	*stack = NULL;
	if (s2 && strchr(s2 + 1, '/'))
		return st__err(err, ST_EINVAL,
			       "invalid stack name '%s': expected organization/project/stack, "
			       "project/stack or stack",
			       ref);
	if (s2) {
		if ((size_t)(s1 - ref) != strlen("organization") ||
		    strncmp(ref, "organization", (size_t)(s1 - ref)) != 0)
			return st__err(err, ST_EINVAL,
				       "invalid stack name '%s': a DIY backend's organization is "
				       "always 'organization'",
				       ref);
		*project = st_strndup(s1 + 1, (size_t)(s2 - s1 - 1));
		*stack = st_strdup(s2 + 1);
	} else if (s1) {
		*project = st_strndup(ref, (size_t)(s1 - ref));
		*stack = st_strdup(s1 + 1);
	} else {
		*stack = st_strdup(ref);
	}
	if (!*stack || (s1 && !*project)) {
		free(*project);
		free(*stack);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	if (!st_stack_name_valid(*stack) || (*project && !st_project_name_valid(*project))) {
		int bad_stack = !st_stack_name_valid(*stack);
		st__err(err, ST_EINVAL,
			"invalid %s name '%s' in '%s': names may only contain alphanumerics, "
			"hyphens, underscores and periods (at most 100, not '.' or '..')",
			bad_stack ? "stack" : "project", bad_stack ? *stack : *project, ref);
		free(*project);
		free(*stack);
		return ST_EINVAL;
	}
	if (*project && !b->project_mode) {
		free(*project);
		*project = NULL; /* legacy layout: stacks are not grouped by project */
	}
	return ST_OK;
}

static int cmp_info(const void *a, const void *b)
{
	const st_stack_info *x = a, *y = b;
	int c = strcmp(x->project ? x->project : "", y->project ? y->project : "");
	return c ? c : strcmp(x->name, y->name);
}

static int add_stacks_in(const char *dir, const char *project, st_stack_info **arr,
			 size_t *n, size_t *cap)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return ST_OK;
	while ((de = readdir(d))) {
		const char *nm = de->d_name;
		size_t len = strlen(nm), stem;
		if (len > 5 && !strcmp(nm + len - 5, ".json"))
			stem = len - 5;
		else if (len > 8 && !strcmp(nm + len - 8, ".json.gz"))
			stem = len - 8;
		else if (len > 9 && !strcmp(nm + len - 9, ".json.zst"))
			stem = len - 9;
		else
			continue;
		char *name = st_strndup(nm, stem);
		if (!name)
			goto oom;
		if (!st_stack_name_valid(name)) {
			free(name);
			continue;
		}
		int dup = 0;
		for (size_t i = 0; i < *n; i++)
			if (!strcmp((*arr)[i].name, name) &&
			    !strcmp((*arr)[i].project ? (*arr)[i].project : "",
				    project ? project : ""))
				dup = 1;
		if (dup) {
			free(name);
			continue;
		}
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 16;
			st_stack_info *na = realloc(*arr, nc * sizeof(*na));
			if (!na) {
				free(name);
				goto oom;
			}
			*arr = na;
			*cap = nc;
		}
		st_stack_info *si = &(*arr)[*n];
		memset(si, 0, sizeof(*si));
		si->name = name;
		si->project = project ? st_strdup(project) : NULL;
		si->qname = project ? st_asprintf("organization/%s/%s", project, name)
				    : st_strdup(name);
		char *base = st_asprintf("%s/%s", dir, name);
		struct stat sb;
		si->path = base ? newest_variant(base, &sb) : NULL;
		free(base);
		if (si->path) {
			si->size = sb.st_size;
			si->mtime_ns = (long long)sb.st_mtim.tv_sec * 1000000000LL +
				       sb.st_mtim.tv_nsec;
		}
		(*n)++;
	}
	closedir(d);
	return ST_OK;
oom:
	closedir(d);
	return ST_ENOMEM;
}

int st_backend_list(st_backend *b, st_stack_info **out, size_t *count, st_error *err)
{
	st_stack_info *arr = NULL;
	size_t n = 0, cap = 0;
	char *stacks = st_asprintf("%s/.pulumi/stacks", b->root);
	int rc = ST_OK;

	*out = NULL;
	*count = 0;
	if (!stacks)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (b->project_mode) {
		DIR *d = opendir(stacks);
		struct dirent *de;
		while (d && (de = readdir(d)) && rc == ST_OK) {
			char *sub;
			struct stat sb;
			if (!st_project_name_valid(de->d_name))
				continue;
			sub = st_asprintf("%s/%s", stacks, de->d_name);
			if (sub && lstat(sub, &sb) == 0 && S_ISDIR(sb.st_mode))
				rc = add_stacks_in(sub, de->d_name, &arr, &n, &cap);
			free(sub);
		}
		if (d)
			closedir(d);
	} else {
		rc = add_stacks_in(stacks, NULL, &arr, &n, &cap);
	}
	free(stacks);
	if (rc) {
		st_stack_infos_free(arr, n);
		return st__err(err, rc, "out of memory");
	}
	if (n)
		qsort(arr, n, sizeof(*arr), cmp_info);
	*out = arr;
	*count = n;
	return ST_OK;
}

void st_stack_infos_free(st_stack_info *infos, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		free(infos[i].project);
		free(infos[i].name);
		free(infos[i].qname);
		free(infos[i].path);
	}
	free(infos);
}

/* Refuses a path under the backend whose directories are symbolic links. */
static int check_no_symlinks(const st_backend *b, const char *rel, st_error *err)
{
	char *p = st_asprintf("%s/%s", b->root, rel);
	size_t rootlen = strlen(b->root);
	if (!p)
		return st__err(err, ST_ENOMEM, "out of memory");
	for (char *s = p + rootlen + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char save = *s;
			*s = '\0';
			if (st_path_is_symlink(p)) {
				st__err(err, ST_EREFUSED,
					"refusing to use '%s': it is a symbolic link inside the "
					"backend",
					p);
				free(p);
				return ST_EREFUSED;
			}
			*s = save;
			if (!save)
				break;
		}
	}
	free(p);
	return ST_OK;
}

int st__backend_resolve(st_backend *b, const char *ref, char **project, char **stack,
			st_error *err)
{
	int rc = split_stack_ref(b, ref, project, stack, err);
	if (rc)
		return rc;
	if (b->project_mode && !*project) {
		/* A bare stack name: find the one project that has it. */
		st_stack_info *infos;
		size_t n, found = 0;
		const char *proj = NULL;
		rc = st_backend_list(b, &infos, &n, err);
		if (rc) {
			free(*stack);
			*stack = NULL;
			return rc;
		}
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(infos[i].name, *stack)) {
				found++;
				proj = infos[i].project;
			}
		}
		if (found == 1)
			*project = st_strdup(proj);
		st_stack_infos_free(infos, n);
		if (found != 1) {
			rc = st__err(err, found ? ST_EAMBIGUOUS : ST_ENOTFOUND,
				     found ? "stack '%s' exists in several projects: name it as "
					     "project/%s"
					   : "no stack '%s' in the backend (name it as "
					     "project/%s to create one)",
				     *stack, *stack);
			free(*stack);
			*stack = NULL;
			return rc;
		}
	}
	return ST_OK;
}

int st_backend_stack_path(st_backend *b, const char *ref, char **path, int *exists,
			  st_error *err)
{
	char *project = NULL, *stack = NULL, *base, *rel;
	int rc;

	*path = NULL;
	if (exists)
		*exists = 0;
	rc = st__backend_resolve(b, ref, &project, &stack, err);
	if (rc)
		return rc;
	rel = project ? st_asprintf(".pulumi/stacks/%s/%s", project, stack)
		      : st_asprintf(".pulumi/stacks/%s", stack);
	free(project);
	free(stack);
	if (!rel)
		return st__err(err, ST_ENOMEM, "out of memory");
	rc = check_no_symlinks(b, rel, err);
	if (rc) {
		free(rel);
		return rc;
	}
	base = st_asprintf("%s/%s", b->root, rel);
	free(rel);
	if (!base)
		return st__err(err, ST_ENOMEM, "out of memory");
	*path = newest_variant(base, NULL);
	if (*path) {
		if (exists)
			*exists = 1;
		if (st_path_is_symlink(*path)) {
			st__err(err, ST_EREFUSED,
				"refusing to use '%s': it is a symbolic link inside the backend",
				*path);
			free(*path);
			*path = NULL;
			free(base);
			return ST_EREFUSED;
		}
	} else {
		*path = st_asprintf("%s.json", base);
	}
	free(base);
	return *path ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}

int st__backend_check_path(const st_backend *b, const char *rel, st_error *err)
{
	return check_no_symlinks(b, rel, err);
}
