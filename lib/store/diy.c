/*
 * The DIY backend: Pulumi's self-managed layout (pkg/backend/diy) on any store.
 *   .pulumi/meta.yaml                                   version: 1 (project mode); absent: legacy
 *   .pulumi/stacks/<project>/<stack>.json[.gz|.zst]     (legacy: stacks/<stack>.json...)
 *   .pulumi/stacks/<project>/<stack>.pulumi-tags        tags
 *   .pulumi/locks/organization/<project>/<stack>/<uuid>.json   (lock.c)
 *   .pulumi/backups/<project>/<stack>/, .pulumi/history/<project>/<stack>/
 * Only store calls are made here (read, write, list, copy, delete), so the layout works on every
 * store. Names are checked before they become keys.
 */
#include "store_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

typedef struct diy_backend {
	st_backend base;
	st_store *store;
	char *root; /* the local directory of a file store, else NULL */
	int project_mode;
	int present; /* .pulumi/ holds something (st_backend_present) */
} diy_backend;

#define STACKS ".pulumi/stacks/"

static const st_backend_ops diy_ops;

static diy_backend *as_diy(const st_backend *b)
{
	return b->ops == &diy_ops ? (diy_backend *)b : NULL;
}

/* ---- opening ---- */

int st__diy_open(st_backend **out, st_store *store, const char *url, st_error *err)
{
	diy_backend *b = calloc(1, sizeof(*b));
	st_compression c;
	int set, rc;
	char *local;

	*out = NULL;
	if (!b || !(b->base.url = st_strdup(url))) {
		free(b);
		st_store_free(store);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	b->base.ops = &diy_ops;
	b->store = store;
	local = st__store_local_path(store, "x");
	if (local) {
		size_t n = strlen(local);
		local[n - 1] = '\0'; /* "<root>/" or "" */
		for (n = strlen(local); n > 1 && local[n - 1] == '/'; n--)
			local[n - 1] = '\0';
		if (!*local) {
			free(local);
			local = st_strdup(".");
		}
		b->root = local;
	}
	if ((rc = st__diy_env_compression(&c, &set, err)) != ST_OK ||
	    (rc = st__diy_read_meta(b->store, &b->project_mode, &b->present, err)) != ST_OK) {
		st_backend_free(&b->base);
		return rc;
	}
	*out = &b->base;
	return ST_OK;
}

int st_backend_open(st_backend **out, const char *url, st_error *err)
{
	ST_ASSERT_ARG(out);
	st_store *s = NULL;
	char *dflt = NULL;
	int rc;

	*out = NULL;
	if (!url || !*url) {
		st_error e;
		st_error_clear(&e);
		rc = st_backend_default_url(&dflt, NULL, &e);
		if (rc == ST_ENOTFOUND)
			return st__err(err, ST_EINVAL, "%s: use --backend URL, set PULUMI_BACKEND_URL, "
				       "or run in a project whose Pulumi.yaml sets backend.url",
				       e.message);
		if (rc != ST_OK)
			return st__err_copy(err, &e);
		url = dflt;
	}
	if (st__backend_is_cloud_url(url)) {
		rc = st__cloud_open(out, url, err);
		free(dflt);
		return rc;
	}
	/* the store's URL: as given, but without a password (postgres://) */
	if ((rc = st_store_open(&s, url, err)) == ST_OK)
		rc = st__diy_open(out, s, st_store_url(s), err);
	free(dflt);
	return rc;
}

void st_backend_free(st_backend *b)
{
	if (b)
		b->ops->free(b);
}

static void diy_free(st_backend *bb)
{
	diy_backend *b = (diy_backend *)bb;
	st_store_free(b->store);
	free(b->root);
	free(b->base.url);
	free(b);
}

const char *st_backend_url(const st_backend *b)
{
	ST_ASSERT_ARG(b);
	return b->url;
}

const char *st_backend_kind(const st_backend *b)
{
	ST_ASSERT_ARG(b);
	return b->ops->kind;
}

st_store *st_backend_store(const st_backend *b)
{
	ST_ASSERT_ARG(b);
	diy_backend *d = as_diy(b);
	return d ? d->store : NULL;
}

st_store *st__backend_diy_store(const st_backend *b) { return st_backend_store(b); }

const char *st_backend_root(const st_backend *b)
{
	ST_ASSERT_ARG(b);
	diy_backend *d = as_diy(b);
	return d ? d->root : NULL;
}

int st_backend_present(const st_backend *b)
{
	ST_ASSERT_ARG(b);
	diy_backend *d = as_diy(b);
	return d ? d->present : 1;
}

void st__diy_set_project_mode(st_backend *b, int on)
{
	diy_backend *d = as_diy(b);
	if (d)
		d->project_mode = on;
}

int st_backend_project_mode(const st_backend *b)
{
	ST_ASSERT_ARG(b);
	diy_backend *d = as_diy(b);
	return d ? d->project_mode : 0;
}


/* ---- names ---- */

/* Splits a stack reference into project (may be NULL) and stack name, checking both. */
static int split_stack_ref(const diy_backend *b, const char *ref, char **project, char **stack,
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
		if (b->project_mode && (size_t)(s1 - ref) == strlen("organization") &&
		    !strncmp(ref, "organization", (size_t)(s1 - ref)))
			/* Pulumi's ORGANIZATION/STACK: a stack of the project it runs in, which
			 * statetool does not know (PROJECT/STACK is statetool's short form) */
			return st__err(err, ST_EINVAL,
				       "'%s' names no project: Pulumi reads it as the stack '%s' of "
				       "the project it runs in; name the project "
				       "(organization/PROJECT/%s or PROJECT/%s)",
				       ref, s1 + 1, s1 + 1, s1 + 1);
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

static char *stack_base(const char *project, const char *stack)
{
	return project ? st_asprintf(STACKS "%s/%s", project, stack)
		       : st_asprintf(STACKS "%s", stack);
}

char *st__diy_lock_dir(const char *project, const char *stack)
{
	return project ? st_asprintf(".pulumi/locks/organization/%s/%s/", project, stack)
		       : st_asprintf(".pulumi/locks/%s/", stack);
}

/* The key helpers of the layout, for what comes next (tags); history.c has backups and history. */
ST_UNUSED static char *tags_key(const char *project, const char *stack)
{
	char *base = stack_base(project, stack), *k = base ? st_asprintf("%s.pulumi-tags", base)
							   : NULL;
	free(base);
	return k;
}

/* ---- listing and choosing a stack's object ---- */

/* Which variant of <base>.json wins: the newest by time, and with equal times the later in key
 * order (Pulumi keeps a candidate unless it is older: `!ModTime.Before(best)`). */
static void consider(st_store_entry **best, st_store_entry *e)
{
	if (!*best || e->info.mtime_ns >= (*best)->info.mtime_ns)
		*best = e;
}

static int stack_suffix(const char *name, size_t *stem)
{
	size_t n = strlen(name);
	if (n > 5 && !strcmp(name + n - 5, ".json"))
		*stem = n - 5;
	else if (n > 8 && !strcmp(name + n - 8, ".json.gz"))
		*stem = n - 8;
	else if (n > 9 && !strcmp(name + n - 9, ".json.zst"))
		*stem = n - 9;
	else
		return 0;
	return 1;
}

/* The object of the stack at `base` (the key without .json): its entry, or none. */
static int find_object(diy_backend *b, const char *base, char **key, st_store_info *info,
		       st_error *err)
{
	st_store_entry *e = NULL, *best = NULL;
	size_t n = 0, bl = strlen(base);
	char *prefix = st_asprintf("%s.json", base);
	int rc;

	*key = NULL;
	if (!prefix)
		return st__err(err, ST_ENOMEM, "out of memory");
	rc = st_store_list(b->store, prefix, 0, &e, &n, err);
	free(prefix);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		const char *rest = e[i].key + bl;
		if (!strcmp(rest, ".json") || !strcmp(rest, ".json.gz") ||
		    !strcmp(rest, ".json.zst"))
			consider(&best, &e[i]);
	}
	if (best) {
		*key = best->key;
		best->key = NULL;
		if (info)
			*info = best->info;
	}
	st_store_entries_free(e, n);
	return ST_OK;
}

static int cmp_info(const void *a, const void *b)
{
	const st_stack_info *x = a, *y = b;
	int c = strcmp(x->project ? x->project : "", y->project ? y->project : "");
	return c ? c : strcmp(x->name, y->name);
}

static char *qname_of(const char *project, const char *name)
{
	return project ? st_strconcat("organization/", project, "/", name, (char *)NULL)
		       : st_strdup(name);
}

/* One listed object of a stack: a new stack, or another variant of one listed (`seen`: qname ->
 * its index + 1, keys borrowed from the infos). A stack's variants are not always next to each
 * other in key order: a stack named s1.json (s1.json.json) sorts between s1.json.gz and
 * s1.json.zst of the stack s1. */
static int add_info(diy_backend *b, st_stack_info **arr, size_t *n, size_t *cap,
		    st_strmap *seen, const char *project, const char *name, st_store_entry *e,
		    int brief)
{
	st_stack_info *si;
	st_strmap_slot *sl;
	char *q = qname_of(project, name);
	int created;

	if (!q || !(sl = st_strmap_put(seen, q, &created))) {
		free(q);
		return ST_ENOMEM;
	}
	if (!created) {
		free(q);
		si = &(*arr)[sl->a - 1];
		if (e->info.mtime_ns < si->mtime_ns)
			return ST_OK;
		free(si->key);
		free(si->path);
	} else {
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 16;
			st_stack_info *na = realloc(*arr, nc * sizeof(*na));
			if (!na) {
				free(q);
				return ST_ENOMEM;
			}
			*arr = na;
			*cap = nc;
		}
		si = &(*arr)[(*n)++];
		memset(si, 0, sizeof(*si));
		si->qname = q; /* the map's key from now on */
		sl->a = *n;
		if (!brief) {
			si->name = st_strdup(name);
			si->project = project ? st_strdup(project) : NULL;
			if (!si->name || (project && !si->project))
				return ST_ENOMEM;
		}
	}
	si->path = brief ? NULL : st__store_local_path(b->store, e->key);
	si->key = e->key; /* taken: the listing's entries are freed next */
	e->key = NULL;
	si->size = e->info.size;
	si->mtime_ns = e->info.mtime_ns;
	memcpy(si->etag, e->info.etag, sizeof(si->etag));
	return si->key ? ST_OK : ST_ENOMEM;
}

/* The stacks of a DIY backend (st_backend_list; brief: st__backend_list_brief). */
static int list_stacks(diy_backend *b, int brief, st_stack_info **out, size_t *count,
		       st_error *err)
{
	st_stack_info *arr = NULL;
	st_store_entry *e = NULL;
	st_strmap seen;
	size_t n = 0, na = 0, cap = 0;
	int rc;

	*out = NULL;
	*count = 0;
	st_strmap_init(&seen);
	rc = st_store_list(b->store, STACKS, 0, &e, &n, err);
	if (rc)
		return rc;
	/* at most one stack per entry: made once, not grown */
	if (n && !(arr = malloc(n * sizeof(*arr)))) {
		st_store_entries_free(e, n);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	cap = n;
	for (size_t i = 0; i < n && rc == ST_OK; i++) {
		const char *rel = e[i].key + strlen(STACKS), *slash = strchr(rel, '/');
		char *project = NULL, *name;
		size_t stem;
		if (b->project_mode) {
			if (!slash || strchr(slash + 1, '/'))
				continue; /* too shallow or too deep */
			project = st_strndup(rel, (size_t)(slash - rel));
			rel = slash + 1;
			if (!project || !st_project_name_valid(project)) {
				rc = project ? ST_OK : ST_ENOMEM;
				free(project);
				continue;
			}
		} else if (slash) {
			continue;
		}
		if (!stack_suffix(rel, &stem) || !(name = st_strndup(rel, stem))) {
			free(project);
			continue;
		}
		if (st_stack_name_valid(name))
			rc = add_info(b, &arr, &na, &cap, &seen, project, name, &e[i], brief);
		free(name);
		free(project);
	}
	st_store_entries_free(e, n);
	st_strmap_free(&seen);
	if (rc) {
		st_stack_infos_free(arr, na);
		return st__err(err, rc, "out of memory");
	}
	if (!brief && !st__sorted(arr, na, sizeof(*arr), cmp_info))
		qsort(arr, na, sizeof(*arr), cmp_info); /* the keys' order is mostly this one */
	*out = arr;
	*count = na;
	return ST_OK;
}

static int diy_list(st_backend *bb, st_stack_info **out, size_t *count, st_error *err)
{
	return list_stacks((diy_backend *)bb, 0, out, count, err);
}

int st__backend_list_brief(st_backend *b, st_stack_info **out, size_t *count, st_error *err)
{
	diy_backend *d = as_diy(b);
	return d ? list_stacks(d, 1, out, count, err) : st_backend_list(b, out, count, err);
}

int st_backend_list(st_backend *b, st_stack_info **out, size_t *count, st_error *err)
{
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(count);
	return b->ops->list(b, out, count, err);
}

void st_stack_infos_free(st_stack_info *infos, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		free(infos[i].project);
		free(infos[i].name);
		free(infos[i].qname);
		free(infos[i].path);
		free(infos[i].key);
	}
	free(infos);
}

/* project (NULL in legacy) and stack name of a reference; a bare name in project mode is
 * looked for in every project. */
static int diy_split(diy_backend *b, const char *ref, char **project, char **stack,
		     st_error *err)
{
	int rc = split_stack_ref(b, ref, project, stack, err);
	if (rc || !b->project_mode || *project)
		return rc;
	st_stack_info *infos;
	size_t n, found = 0;
	const char *proj = NULL;
	rc = diy_list(&b->base, &infos, &n, err);
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
	if (found == 1 && !(*project = st_strdup(proj)))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	st_stack_infos_free(infos, n);
	if (found != 1)
		rc = st__err(err, found ? ST_EAMBIGUOUS : ST_ENOTFOUND,
			     found ? "stack '%s' exists in several projects: name it as project/%s"
				   : "no stack '%s' in the backend (name it as project/%s to create "
				     "one)",
			     *stack, *stack);
	if (rc) {
		free(*stack);
		*stack = NULL;
	}
	return rc;
}

int st__diy_names(st_backend *bb, const char *ref, char **project, char **name,
		  st_error *err)
{
	return diy_split((diy_backend *)bb, ref, project, name, err);
}

/* The stack's base key and current object (*key NULL when none). */
static int diy_object(diy_backend *b, const char *ref, char **base, char **key,
		      st_store_info *info, st_error *err)
{
	char *project = NULL, *stack = NULL;
	int rc = diy_split(b, ref, &project, &stack, err);
	*base = NULL;
	*key = NULL;
	if (rc)
		return rc;
	*base = stack_base(project, stack);
	free(project);
	free(stack);
	if (!*base)
		return st__err(err, ST_ENOMEM, "out of memory");
	rc = find_object(b, *base, key, info, err);
	if (rc) {
		free(*base);
		*base = NULL;
	}
	return rc;
}

/* Resolves `ref` from one listing of the stack's objects: *qname, and *key (when key_out is not
 * NULL) the stack's object, or where a plain one would be written. */
static int diy_resolve_key(diy_backend *b, const char *ref, char **qname, char **key_out,
			   int *exists, st_error *err)
{
	char *project = NULL, *stack = NULL, *base, *key = NULL;
	int rc = diy_split(b, ref, &project, &stack, err);

	*qname = NULL;
	if (key_out)
		*key_out = NULL;
	if (exists)
		*exists = 0;
	if (rc)
		return rc;
	*qname = project ? st_asprintf("organization/%s/%s", project, stack) : st_strdup(stack);
	base = stack_base(project, stack);
	free(project);
	free(stack);
	if (!*qname || !base) {
		free(base);
		free(*qname);
		*qname = NULL;
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	rc = find_object(b, base, &key, NULL, err);
	/* a stack whose object is a symbolic link in a local backend is refused here, before
	 * anything (a lock) is written for it */
	if (rc == ST_OK && key)
		rc = st__store_file_check(b->store, key, err);
	if (exists)
		*exists = key != NULL;
	if (rc == ST_OK && key_out && !key && !(key = st_asprintf("%s.json", base)))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK && key_out) {
		*key_out = key;
		key = NULL;
	}
	free(key);
	free(base);
	if (rc) {
		free(*qname);
		*qname = NULL;
	}
	return rc;
}

static int diy_resolve(st_backend *bb, const char *ref, char **qname, int *exists,
		       st_error *err)
{
	return diy_resolve_key((diy_backend *)bb, ref, qname, NULL, exists, err);
}

int st_backend_resolve(st_backend *b, const char *stack, char **qname, int *exists,
		       st_error *err)
{
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(stack);
	ST_ASSERT_ARG(qname);
	return b->ops->resolve(b, stack, qname, exists, err);
}

int st_backend_resolve_key(st_backend *b, const char *stack, char **qname, char **key,
			   int *exists, st_error *err)
{
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(stack);
	ST_ASSERT_ARG(qname);
	ST_ASSERT_ARG(key);
	*key = NULL;
	if (as_diy(b))
		return diy_resolve_key(as_diy(b), stack, qname, key, exists, err);
	return b->ops->resolve(b, stack, qname, exists, err);
}

int st_backend_stack_key(st_backend *bb, const char *ref, char **key, int *exists,
			 st_error *err)
{
	ST_ASSERT_ARG_AS(bb, "b");
	ST_ASSERT_ARG_AS(ref, "stack");
	diy_backend *b = as_diy(bb);
	char *base = NULL;
	int rc;

	*key = NULL;
	if (exists)
		*exists = 0;
	if (!b)
		return st__err(err, ST_EUNSUPPORTED, "backend '%s' is no DIY backend", bb->url);
	if ((rc = diy_object(b, ref, &base, key, NULL, err)) != ST_OK)
		return rc;
	if (exists)
		*exists = *key != NULL;
	if (!*key && !(*key = st_asprintf("%s.json", base)))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	free(base);
	return rc;
}

int st_backend_stack_path(st_backend *bb, const char *ref, char **path, int *exists,
			  st_error *err)
{
	ST_ASSERT_ARG_AS(bb, "b");
	ST_ASSERT_ARG_AS(ref, "stack");
	diy_backend *b = as_diy(bb);
	char *base = NULL, *key = NULL, *k;
	int rc;

	*path = NULL;
	if (exists)
		*exists = 0;
	if (!b || !b->root)
		return st__err(err, ST_EUNSUPPORTED,
			       "backend '%s' keeps its stacks in no local directory", bb->url);
	if ((rc = diy_object(b, ref, &base, &key, NULL, err)) != ST_OK)
		return rc;
	k = key ? key : st_asprintf("%s.json", base);
	if (k && key && (rc = st__store_file_check(b->store, key, err)) != ST_OK) {
		free(base);
		free(key);
		return rc;
	}
	*path = k ? st__store_local_path(b->store, k) : NULL;
	if (exists)
		*exists = key != NULL;
	free(base);
	free(k);
	return *path ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}

/* Pulumi's saveStack writes the place's fully qualified name as the checkpoint's `stack`
 * (organization/PROJECT/STACK, the legacy layout's STACK): a checkpoint that names another
 * stack (place/stack-mismatch: a copy, an edit --force) gets it; one that names this one, in
 * any of its forms (an older Pulumi's bare STACK too), is left as it is, byte for byte.
 * `base`: the stack's base key (stack_base). */
static int place_name(const char *base, st_state *s, st_error *err)
{
	const char *rel = base + strlen(STACKS);
	char *fq;
	int rc;

	if (s->envelope != ST_ENVELOPE_CHECKPOINT || !st__place_misnamed(s, rel))
		return ST_OK;
	fq = strchr(rel, '/') ? st_asprintf("organization/%s", rel) : st_strdup(rel);
	if (!fq)
		return st__err(err, ST_ENOMEM, "out of memory");
	rc = st_state_set_envelope(s, ST_ENVELOPE_CHECKPOINT, fq, err);
	free(fq);
	return rc;
}

int st_backend_stack_target(st_backend *bb, const char *ref, st_state *state, char **key,
			    char **old_key, st_error *err)
{
	ST_ASSERT_ARG_AS(bb, "b");
	ST_ASSERT_ARG_AS(ref, "stack");
	ST_ASSERT_ARG(key);
	ST_ASSERT_ARG(old_key);
	diy_backend *b = as_diy(bb);
	char *base = NULL, *old = NULL;
	st_compression c;
	int set, rc;

	ST_ASSERT_ARG(state);
	*key = NULL;
	*old_key = NULL;
	if (!b)
		return st__err(err, ST_EUNSUPPORTED, "backend '%s' is no DIY backend", bb->url);
	if ((rc = st__diy_env_compression(&c, &set, err)) != ST_OK ||
	    (rc = diy_object(b, ref, &base, &old, NULL, err)) != ST_OK)
		return rc;
	if (!set)
		c = state->compression; /* nothing asked: the stack keeps its compression */
	if (!(*key = st_asprintf("%s.json%s", base, st__diy_comp_ext(c))))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	else
		state->compression = c;
	if (rc == ST_OK)
		rc = place_name(base, state, err);
	if (rc == ST_OK && old && strcmp(old, *key)) {
		*old_key = old;
		old = NULL;
	}
	free(base);
	free(old);
	return rc;
}

int st__diy_object(st_backend *b, const char *ref, char **key, st_error *err)
{
	char *base = NULL;
	int rc = diy_object((diy_backend *)b, ref, &base, key, NULL, err);
	free(base);
	return rc;
}

int st__diy_stack_prefix(st_backend *bb, const char *ref, char **prefix, st_error *err)
{
	diy_backend *b = as_diy(bb);
	char *project = NULL, *stack = NULL, *base;
	int rc;

	*prefix = NULL;
	if (!b)
		return st__err(err, ST_EUNSUPPORTED, "backend '%s' is no DIY backend", bb->url);
	if ((rc = diy_split(b, ref, &project, &stack, err)) != ST_OK)
		return rc;
	base = stack_base(project, stack);
	free(project);
	free(stack);
	*prefix = base ? st_asprintf("%s.json", base) : NULL;
	free(base);
	return *prefix ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}

/* ---- saving (loading: diy_load.c) ---- */

/* A state and the writer's choices, for the store's fill callback. */
typedef struct state_fill {
	const st_state *s;
	const st__wcfg *cfg;
} state_fill;

static int fill_state(void *ctx, st_store_writer *w, st_error *err)
{
	state_fill *f = ctx;
	return st__state_stream_to(f->s, w, f->cfg, err);
}

typedef struct bytes_ctx {
	const char *data;
	size_t len;
} bytes_ctx;

static int fill_bytes(void *ctx, st_store_writer *w, st_error *err)
{
	bytes_ctx *b = ctx;
	return st_store_writer_write(w, b->data, b->len, err);
}

/* Writes a state to a key of a store: streamed when plain, compressed in memory first. */
int st__state_write_store(st_state *s, st_store *store, const char *key,
			  const st_store_write_opts *wo, const st__wcfg *cfg, st_error *err)
{
	state_fill f = {s, cfg};
	char *text = NULL, *z = NULL;
	size_t tlen = 0, zlen = 0;
	int rc;

	st_state_fix_magic(s);
	if (s->compression == ST_COMPRESS_NONE)
		return st__store_write_fill(store, key, fill_state, &f, wo, "write", err);
	rc = st__state_dump_cfg(s, cfg, &text, &tlen, err);
	if (rc == ST_OK)
		rc = st__compress_bytes(s->compression, text, tlen, &z, &zlen, err);
	free(text);
	if (rc == ST_OK) {
		bytes_ctx b = {z, zlen};
		rc = st__store_write_fill(store, key, fill_bytes, &b, wo, "write", err);
	}
	free(z);
	return rc;
}

static int diy_save(st_backend *bb, const char *ref, st_state *s,
		    const st_backend_save_opts *opts, const st__wcfg *cfg, st_error *err)
{
	diy_backend *b = (diy_backend *)bb;
	st_store_write_opts wo = ST_STORE_WRITE_OPTS_INIT;
	char *base = NULL, *old = NULL, *key = NULL, *bak = NULL, *oldbak = NULL;
	st_compression c;
	int set, rc;

	if ((rc = st__diy_env_compression(&c, &set, err)) != ST_OK ||
	    (rc = diy_object(b, ref, &base, &old, NULL, err)) != ST_OK)
		return rc;
	if (!set)
		c = s->compression; /* nothing asked: the stack keeps its compression */
	key = st_asprintf("%s.json%s", base, st__diy_comp_ext(c));
	bak = key ? st_asprintf("%s.bak", key) : NULL;
	if (!key || !bak) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = place_name(base, s, err)) != ST_OK)
		goto out;
	/* the state about to be replaced stays a generation (Pulumi's backups) */
	if (old && (rc = st__diy_generation(bb, ref, old, 1, err)) != ST_OK)
		goto out;
	wo.backup_key = opts && opts->no_backup ? NULL : bak;
	wo.flags = ST_STORE_CHECKPOINT;
	wo.proceed = opts ? opts->proceed : NULL;
	wo.proceed_ctx = opts ? opts->proceed_ctx : NULL;
	/* the compression changes: the old object is kept as its .bak before the new one is
	 * written (Pulumi's backupTarget, before its write), and deleted after, a failure to
	 * delete it skipped as Pulumi skips it (the new object is the stack: a later variant's
	 * newer time makes it the one read). So nothing fails once the stack is written but the
	 * generation below. */
	if (old && strcmp(old, key)) {
		if (!(oldbak = st_asprintf("%s.bak", old))) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto out;
		}
		if ((rc = st_store_copy(b->store, old, oldbak, err)) != ST_OK)
			goto out;
	}
	s->compression = c;
	if ((rc = st__state_write_store(s, b->store, key, &wo, cfg, err)) != ST_OK)
		goto out;
	if (oldbak)
		st_store_delete(b->store, old, NULL);
	/* and the new one becomes one, as Pulumi's backupStack does after an update */
	rc = st__diy_generation(bb, ref, key, 0, err);
out:
	free(base);
	free(old);
	free(key);
	free(bak);
	free(oldbak);
	return rc;
}

int st__backend_save(st_backend *b, const char *stack, st_state *state,
		     const st_backend_save_opts *opts, const st__wcfg *cfg, st_error *err)
{
	int rc;
	if (opts && (rc = st__opts_version(opts->version, ST_BACKEND_SAVE_OPTS_VERSION,
					   "st_backend_save_opts", err)) != ST_OK)
		return rc;
	return b->ops->save(b, stack, state, opts, cfg, err);
}

int st_backend_save(st_backend *b, const char *stack, st_state *state,
		    const st_backend_save_opts *opts, st_error *err)
{
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(state);
	ST_ASSERT_ARG(stack);
	return st__backend_save(b, stack, state, opts, NULL, err);
}

/* ---- locks (lock.c has the protocol) ---- */

static int diy_lock(st_backend *bb, const char *ref, st_lock **out, st_error *err)
{
	diy_backend *b = (diy_backend *)bb;
	char *project = NULL, *stack = NULL, *dir, *hint, *url;
	int rc = diy_split(b, ref, &project, &stack, err);

	if (out)
		*out = NULL;
	if (rc)
		return rc;
	dir = st__diy_lock_dir(project, stack);
	url = st__shell_word(bb->url);
	hint = !url	? NULL
	       : project ? st_asprintf("statetool unlock --backend %s --stack %s/%s", url, project,
				       stack)
			 : st_asprintf("statetool unlock --backend %s --stack %s", url, stack);
	free(url);
	free(project);
	free(stack);
	rc = !dir || !hint ? st__err(err, ST_ENOMEM, "out of memory")
	     : out	   ? st__lock_store(out, b->store, dir, hint, err)
			   : st__locks_check(b->store, dir, hint, err);
	free(dir);
	free(hint);
	return rc;
}

static int diy_unlock(st_backend *bb, const char *ref, int *removed, st_error *err)
{
	diy_backend *b = (diy_backend *)bb;
	char *project = NULL, *stack = NULL, *dir;
	int rc = diy_split(b, ref, &project, &stack, err);

	*removed = 0;
	if (rc)
		return rc;
	dir = st__diy_lock_dir(project, stack);
	rc = dir ? st__unlock_store(b->store, dir, removed, err)
		 : st__err(err, ST_ENOMEM, "out of memory");
	free(dir);
	if (rc == ST_OK && project) {
		/* a lock of the legacy layout left behind (an upgrade killed while it held the
		 * stack's lock): Pulumi looks there no more, but it is this stack's */
		int more = 0;
		dir = st__diy_lock_dir(NULL, stack);
		rc = dir ? st__unlock_store(b->store, dir, &more, err)
			 : st__err(err, ST_ENOMEM, "out of memory");
		*removed += more;
		free(dir);
	}
	free(project);
	free(stack);
	return rc;
}

static const st_backend_ops diy_ops = {
	"diy", diy_list, diy_resolve, st__diy_load, diy_save, diy_lock, diy_unlock, diy_free,
};

/* ---- a stack file named by its path ---- */

int st_backend_locate(const char *path, char **root, char **stack)
{
	ST_ASSERT_ARG(root);
	ST_ASSERT_ARG(path);
	ST_ASSERT_ARG(stack);
	const char *m = NULL, *p, *name;
	char *r = NULL, *rel = NULL;
	size_t stem;
	st_backend *b = NULL;
	int found = 0;

	*root = NULL;
	*stack = NULL;
	/* the last "/.pulumi/stacks/" (or a relative path starting there) */
	for (p = path; (p = strstr(p, ".pulumi/stacks/")); p++)
		if (p == path || p[-1] == '/')
			m = p;
	if (!m)
		return 0;
	rel = st_strdup(m + strlen(STACKS));
	r = m == path ? st_strdup(".") : st_strndup(path, (size_t)(m - path - (m - path > 1)));
	if (!rel || !r)
		goto out;
	name = strrchr(rel, '/');
	name = name ? name + 1 : rel;
	if (!stack_suffix(name, &stem) || st_backend_open(&b, r, NULL) != ST_OK)
		goto out;
	rel[name - rel + stem] = '\0';
	if (st_backend_project_mode(b) ? (size_t)(name - rel) > 0 && !strchr(name, '/') &&
					       strchr(rel, '/') == name - 1
				       : name == rel) {
		char *pj = st_backend_project_mode(b) ? st_strndup(rel, (size_t)(name - rel - 1))
						      : NULL;
		if ((!pj || st_project_name_valid(pj)) && st_stack_name_valid(name)) {
			*stack = pj ? st_asprintf("%s/%s", pj, name) : st_strdup(name);
			found = *stack != NULL;
		}
		free(pj);
	}
out:
	st_backend_free(b);
	free(rel);
	if (found)
		*root = r;
	else
		free(r);
	return found;
}
