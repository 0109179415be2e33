/* A DIY stack's generations, as Pulumi's DIY backend keeps them (pkg/backend/diy/state.go):
 * backupStack's copies .pulumi/backups/<project>/<stack>/<stack>.<UnixNano>.json[.gz|.zst],
 * addToHistory's update records .pulumi/history/<project>/<stack>/<stack>-<UnixNano>.history.json
 * with the state after the update beside them (.checkpoint.json), and the object's .bak (the
 * newest of the stack's .json.bak, .json.gz.bak and .json.zst.bak).
 * statetool's saves add to the backups as Pulumi's updates do. */
#include "internal.h"
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static int env_true(const char *v) { return v && (!strcmp(v, "1") || !strcasecmp(v, "true")); }

/* PULUMI_DIY_BACKEND_DISABLE_CHECKPOINT_BACKUPS (alias PULUMI_DISABLE_CHECKPOINT_BACKUPS). */
static int backups_disabled(void)
{
	const char *v = getenv("PULUMI_DIY_BACKEND_DISABLE_CHECKPOINT_BACKUPS");
	if (!v)
		v = getenv("PULUMI_DISABLE_CHECKPOINT_BACKUPS");
	return env_true(v);
}

static char *backup_dir(const char *project, const char *stack)
{
	return project ? st_asprintf(".pulumi/backups/%s/%s/", project, stack)
		       : st_asprintf(".pulumi/backups/%s/", stack);
}

static char *history_dir(const char *project, const char *stack)
{
	return project ? st_asprintf(".pulumi/history/%s/%s/", project, stack)
		       : st_asprintf(".pulumi/history/%s/", stack);
}

/* The ".json", ".json.gz" or ".json.zst" ending of a key, or NULL. */
static const char *json_ext(const char *key)
{
	static const char *const exts[] = {".json", ".json.gz", ".json.zst"};
	size_t kl = strlen(key);
	for (int i = 2; i >= 0; i--) {
		size_t el = strlen(exts[i]);
		if (kl > el && !strcmp(key + kl - el, exts[i]))
			return key + kl - el;
	}
	return NULL;
}

/* Does name (a file name in a backups or history folder) read <stack><sep><digits><tail>?
 * Then the digits as nanoseconds. */
static int parse_name(const char *name, const char *stack, char sep, const char *tail,
		      long long *ns)
{
	size_t sl = strlen(stack), tl = strlen(tail);
	const char *p;
	if (strncmp(name, stack, sl) || name[sl] != sep)
		return 0;
	p = name + sl + 1;
	if (*p < '0' || *p > '9')
		return 0;
	long long v = 0;
	for (; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (*p - '0');
	if (strncmp(p, tail, tl))
		return 0;
	p += tl;
	if (strcmp(p, ".json") && strcmp(p, ".json.gz") && strcmp(p, ".json.zst"))
		return 0;
	*ns = v;
	return 1;
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static const char *base_name(const char *key)
{
	const char *s = strrchr(key, '/');
	return s ? s + 1 : key;
}

static int push(st_generation **v, size_t *n, size_t *cap)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		st_generation *g = realloc(*v, c * sizeof(*g));
		if (!g)
			return -1;
		*v = g;
		*cap = c;
	}
	memset(&(*v)[*n], 0, sizeof(**v));
	(*n)++;
	return 0;
}

static int gen_cmp(const void *a, const void *b)
{
	const st_generation *x = a, *y = b;
	if (x->kind == ST_GEN_CURRENT || y->kind == ST_GEN_CURRENT)
		return x->kind == ST_GEN_CURRENT ? -1 : 1;
	if (x->time_ns != y->time_ns)
		return x->time_ns > y->time_ns ? -1 : 1;
	return strcmp(y->id, x->id);
}

void st_generations_free(st_generation *g, size_t n)
{
	for (size_t i = 0; g && i < n; i++) {
		free(g[i].id);
		free(g[i].key);
		json_decref(g[i].update);
	}
	free(g);
}

/* The update record beside a history checkpoint (<prefix>.history.json...), or NULL. */
static json_t *update_record(st_store *s, const char *ckey)
{
	const char *mark = strstr(ckey, ".checkpoint.json");
	char *hkey, *data = NULL, *plain = NULL;
	size_t len = 0, plen = 0;
	json_t *v = NULL;
	if (!mark)
		return NULL;
	hkey = st_asprintf("%.*s.history%s", (int)(mark - ckey), ckey, mark + strlen(".checkpoint"));
	if (hkey && st_store_read(s, hkey, 16u << 20, &data, &len, NULL, NULL) == ST_OK &&
	    st_file_decompress(data, len, 64u << 20, hkey, &plain, &plen, NULL, NULL) == ST_OK)
		st_json_parse(&v, plain, plen, hkey, NULL, NULL, NULL, NULL);
	free(hkey);
	free(data);
	free(plain);
	return json_is_object(v) ? v : (json_decref(v), NULL);
}

static int add_gen(st_generation **v, size_t *n, size_t *cap, st_generation_kind kind,
		   const char *id, const char *key, long long ns, const st_store_info *info)
{
	if (push(v, n, cap))
		return -1;
	st_generation *g = &(*v)[*n - 1];
	g->kind = kind;
	g->id = st_strdup(id);
	g->key = st_strdup(key);
	g->time_ns = ns;
	g->size = info->size;
	return g->id && g->key ? 0 : -1;
}

/* The stack's .bak beside its object `cur`: the newest (by modification time, the later key
 * on a tie, as the object itself is chosen) of <stack>.json.bak, .json.gz.bak and
 * .json.zst.bak. A change of compression leaves the state before it as the OLD name's .bak,
 * as Pulumi does (state.go, backupTarget of oldFile), and Pulumi's messages name that one.
 * *key new; *info set when one exists, else *key is <cur>.bak and *exists 0. */
static int find_bak(st_store *s, const char *cur, char **key, int *exists, st_store_info *info,
		    st_error *err)
{
	const char *ext = json_ext(cur);
	size_t bl = ext ? (size_t)(ext - cur) : strlen(cur);
	char *prefix = st_asprintf("%.*s.json", (int)bl, cur);
	st_store_entry *e = NULL, *best = NULL;
	size_t ne = 0;
	int rc;

	*key = NULL;
	*exists = 0;
	if (!prefix)
		return st__err(err, ST_ENOMEM, "out of memory");
	rc = st_store_list(s, prefix, 0, &e, &ne, err);
	free(prefix);
	for (size_t i = 0; rc == ST_OK && i < ne; i++) {
		const char *rest = e[i].key + bl;
		if ((!strcmp(rest, ".json.bak") || !strcmp(rest, ".json.gz.bak") ||
		     !strcmp(rest, ".json.zst.bak")) &&
		    (!best || e[i].info.mtime_ns >= best->info.mtime_ns))
			best = &e[i];
	}
	if (rc == ST_OK && best) {
		*key = best->key;
		best->key = NULL;
		*info = best->info;
		*exists = 1;
	} else if (rc == ST_OK && !(*key = st_asprintf("%s.bak", cur))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
	}
	st_store_entries_free(e, ne);
	return rc;
}

int st_backend_stack_bak(st_backend *b, const char *stack, char **key, int *exists,
			 st_error *err)
{
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(stack);
	ST_ASSERT_ARG(key);
	st_store_info info;
	char *cur = NULL;
	int ex, rc;

	*key = NULL;
	if (exists)
		*exists = 0;
	if ((rc = st_backend_stack_key(b, stack, &cur, NULL, err)) != ST_OK)
		return rc;
	rc = find_bak(st_backend_store(b), cur, key, &ex, &info, err);
	if (rc == ST_OK && exists)
		*exists = ex;
	free(cur);
	return rc;
}

int st_backend_generations(st_backend *b, const char *stack, st_generation **out,
			   size_t *count, st_error *err)
{
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(stack);
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(count);
	st_store *s = st_backend_store(b);
	char *project = NULL, *name = NULL, *dirs[2] = {NULL, NULL}, *cur = NULL, *bak = NULL;
	st_generation *v = NULL;
	size_t n = 0, cap = 0;
	st_store_info info;
	int rc, exists = 0, bak_exists = 0;

	*out = NULL;
	*count = 0;
	if (!s)
		return st__err(err, ST_EUNSUPPORTED, "a backend of kind '%s' keeps no generations",
			       st_backend_kind(b));
	if ((rc = st__diy_names(b, stack, &project, &name, err)) != ST_OK)
		return rc;
	if ((rc = st_backend_stack_key(b, stack, &cur, &exists, err)) != ST_OK)
		goto out;
	dirs[0] = backup_dir(project, name);
	dirs[1] = history_dir(project, name);
	if (!dirs[0] || !dirs[1])
		goto oom;
	if (exists && st_store_stat(s, cur, &info, NULL) == ST_OK &&
	    add_gen(&v, &n, &cap, ST_GEN_CURRENT, "current", cur, info.mtime_ns, &info))
		goto oom;
	if ((rc = find_bak(s, cur, &bak, &bak_exists, &info, err)) != ST_OK)
		goto out;
	if (bak_exists && add_gen(&v, &n, &cap, ST_GEN_BAK, "bak", bak, info.mtime_ns, &info))
		goto oom;
	for (int d = 0; d < 2; d++) {
		st_store_entry *e = NULL;
		size_t ne = 0;
		if ((rc = st_store_list(s, dirs[d], ST_STORE_LIST_DIRS, &e, &ne, err)) != ST_OK)
			goto out;
		for (size_t i = 0; i < ne; i++) {
			const char *fn = base_name(e[i].key);
			long long ns;
			if (!parse_name(fn, name, d ? '-' : '.', d ? ".checkpoint" : "", &ns))
				continue;
			if (add_gen(&v, &n, &cap, d ? ST_GEN_HISTORY : ST_GEN_BACKUP, fn, e[i].key,
				    ns, &e[i].info)) {
				st_store_entries_free(e, ne);
				goto oom;
			}
			if (d)
				v[n - 1].update = update_record(s, e[i].key);
		}
		st_store_entries_free(e, ne);
	}
	if (n) /* (v is NULL with none: qsort's pointer must not be) */
		qsort(v, n, sizeof(*v), gen_cmp);
	*out = v;
	*count = n;
	v = NULL;
	n = 0;
	rc = ST_OK;
	goto out;
oom:
	rc = st__err(err, ST_ENOMEM, "out of memory");
out:
	st_generations_free(v, n);
	free(project);
	free(name);
	free(dirs[0]);
	free(dirs[1]);
	free(cur);
	free(bak);
	return rc;
}

int st_backend_generation_load(st_backend *b, const char *stack, const char *id,
			       const st_load_opts *opts, st_state **out, st_error *err)
{
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(stack);
	ST_ASSERT_ARG(id);
	ST_ASSERT_ARG(out);
	st_generation *g = NULL;
	size_t n = 0, i;
	char *data = NULL, *plain = NULL;
	size_t len = 0, plen = 0;
	int rc;

	*out = NULL;
	if ((rc = st_backend_generations(b, stack, &g, &n, err)) != ST_OK)
		return rc;
	for (i = 0; i < n && strcmp(g[i].id, id); i++)
		;
	if (i == n) {
		rc = st__err(err, ST_ENOTFOUND, "no generation '%s' of stack '%s' (`statetool "
			     "history` lists them)", id, stack);
		goto out;
	}
	st_store *s = st_backend_store(b);
	size_t max = opts && opts->max_size ? opts->max_size : 0;
	st_compression c = ST_COMPRESS_NONE;
	if ((rc = st_store_read(s, g[i].key, max, &data, &len, NULL, err)) != ST_OK ||
	    (rc = st_file_decompress(data, len, max, g[i].key, &plain, &plen, &c, err)) != ST_OK)
		goto out;
	char *where = st_store_where(s, g[i].key);
	rc = st_state_load_buffer(out, plain, plen, where ? where : g[i].key, opts, err);
	free(where);
	if (rc == ST_OK)
		st_state_set_compression(*out, c);
out:
	free(data);
	free(plain);
	st_generations_free(g, n);
	return rc;
}

/* The newest backup's key (new) or NULL, and its time (*when: -1 when none). */
static int newest_backup(st_store *s, const char *dir, const char *name, char **key,
			 st_store_info *info, long long *when, st_error *err)
{
	st_store_entry *e = NULL;
	size_t ne = 0;
	long long best = -1;
	int rc = st_store_list(s, dir, ST_STORE_LIST_DIRS, &e, &ne, err);
	*key = NULL;
	for (size_t i = 0; rc == ST_OK && i < ne; i++) {
		long long ns;
		if (parse_name(base_name(e[i].key), name, '.', "", &ns) && ns >= best) {
			best = ns;
			free(*key);
			*key = st_strdup(e[i].key);
			*info = e[i].info;
			if (!*key)
				rc = st__err(err, ST_ENOMEM, "out of memory");
		}
	}
	st_store_entries_free(e, ne);
	*when = best;
	return rc;
}

static int same_bytes(st_store *s, const char *a, const char *b)
{
	char *x = NULL, *y = NULL;
	size_t xl = 0, yl = 0;
	int same = st_store_read(s, a, 0, &x, &xl, NULL, NULL) == ST_OK &&
		   st_store_read(s, b, 0, &y, &yl, NULL, NULL) == ST_OK && xl == yl &&
		   !memcmp(x, y, xl);
	free(x);
	free(y);
	return same;
}

/* Copies the object `key` into the backups of PROJECT/NAME as a generation, named by the time
 * of now; with `dedupe`, nothing when the newest backup holds the same bytes, and with
 * `by_mtime` it is named by the object's modification time when that is earlier. A state
 * other than the newest backup's is newer than it: with `dedupe` (the backups listed), the
 * name is later than the newest one's, so that no copy replaces a backup (a store's
 * Last-Modified is in whole seconds: two generations of one second had the same name) and
 * history's order is the order of the saves. */
static int keep(st_store *s, const char *project, const char *name, const char *key,
		const char *ext, int dedupe, int by_mtime, st_error *err)
{
	char *dir = backup_dir(project, name), *last = NULL, *dst = NULL;
	st_store_info info, linfo;
	long long ns = now_ns(), newest = -1;
	int rc;

	if (!dir)
		return st__err(err, ST_ENOMEM, "out of memory");
	if ((rc = st_store_stat(s, key, &info, err)) != ST_OK)
		goto out;
	if (dedupe) {
		if ((rc = newest_backup(s, dir, name, &last, &linfo, &newest, err)) != ST_OK)
			goto out;
		/* (a listing that gives no size, PostgreSQL's: -1, the bytes compared) */
		if (last && (linfo.size < 0 || linfo.size == info.size) && same_bytes(s, last, key))
			goto out;
		if (by_mtime && info.mtime_ns > 0 && info.mtime_ns < ns)
			ns = info.mtime_ns;
		if (ns <= newest)
			ns = newest + 1;
	}
	if (!(dst = st_asprintf("%s%s.%lld%s", dir, name, ns, ext)))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	else
		rc = st_store_copy(s, key, dst, err);
out:
	free(dir);
	free(last);
	free(dst);
	return rc;
}

int st__diy_generation(st_backend *b, const char *stack, const char *key, int before,
		       st_error *err)
{
	st_store *s = st_backend_store(b);
	char *project = NULL, *name = NULL;
	const char *ext = json_ext(key);
	int rc;

	if (!s || !ext || backups_disabled())
		return ST_OK;
	if ((rc = st__diy_names(b, stack, &project, &name, err)) != ST_OK)
		return rc;
	/* before: the state about to be replaced is a generation already, unless it was written
	 * by something that kept none (backups disabled, an import, statetool before
	 * generations): then it becomes one, timed when it was written */
	rc = keep(s, project, name, key, ext, before, before, err);
	free(project);
	free(name);
	return rc;
}

int st__store_generation_after(st_store *s, const char *key, st_error *err)
{
	const char *rel, *slash, *ext;
	char *project, *name;
	int rc;

	if (!st__store_stack_object(key, &rel, &slash, &ext))
		return ST_OK; /* no stack of a DIY backend: a plain file keeps no generations */
	if (backups_disabled())
		return ST_OK;
	project = slash ? st_strndup(rel, (size_t)(slash - rel)) : NULL;
	name = slash ? st_strndup(slash + 1, (size_t)(ext - slash - 1))
		     : st_strndup(rel, (size_t)(ext - rel));
	/* the operation's own run may have written it before it stopped */
	rc = !name || (slash && !project) ? st__err(err, ST_ENOMEM, "out of memory")
					  : keep(s, project, name, key, ext, 1, 0, err);
	free(project);
	free(name);
	return rc;
}

/* The stack's current object as a generation (keep_generation and keep_saved_generation). */
static int keep_current(st_backend *b, const char *stack, int by_mtime, st_error *err)
{
	char *key = NULL, *project = NULL, *name = NULL;
	const char *ext;
	int exists = 0, rc;
	if (!st_backend_store(b))
		return st__err(err, ST_EUNSUPPORTED, "a backend of kind '%s' keeps no generations",
			       st_backend_kind(b));
	if ((rc = st_backend_stack_key(b, stack, &key, &exists, err)) != ST_OK)
		return rc;
	ext = json_ext(key);
	if (!exists)
		rc = st__err(err, ST_ENOTFOUND, "stack '%s' has no state", stack);
	else if (ext && !backups_disabled() &&
		 (rc = st__diy_names(b, stack, &project, &name, err)) == ST_OK)
		rc = keep(st_backend_store(b), project, name, key, ext, 1, by_mtime, err);
	free(project);
	free(name);
	free(key);
	return rc;
}

int st_backend_keep_generation(st_backend *b, const char *stack, st_error *err)
{
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(stack);
	return keep_current(b, stack, 1, err);
}

int st_backend_keep_saved_generation(st_backend *b, const char *stack, st_error *err)
{
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(stack);
	return keep_current(b, stack, 0, err);
}
