/* Whether an index is up to date with its backend (st_index_stale): the backend's listing
 * against what the index holds of each stack, on either engine. */
#include "ix.h"
#include "store/store_impl.h"

#include <limits.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The comparison: the listing first, then each of the index's stacks compared with its listed
 * stack in place, as its row is read (nothing of the index kept: a backend of 10,000 stacks is
 * compared without copying 10,000 rows). */
typedef struct held_cmp {
	const st_stack_info *infos;
	size_t n;
	st_strmap by;        /* qname -> index in infos + 1 (slot.a), keys borrowed */
	unsigned char *seen; /* infos[i] has a row in the index */
	ix_scope place;      /* where each listed stack's row must come from (st__ix_place_is) */
	ix_scope scope;      /* the rows of this backend's store (st__ix_in_scope) */
	st_index_stale_stack *res;
	size_t nr;
	int oom;
} held_cmp;

static int stale_add(st_index_stale_stack **out, size_t *n, const char *qname, char kind)
{
	st_index_stale_stack *a = realloc(*out, (*n + 1) * sizeof(*a));
	if (!a)
		return -1;
	*out = a;
	if (!(a[*n].qname = st_strdup(qname)))
		return -1;
	a[*n].kind = kind;
	(*n)++;
	return 0;
}

/* Whether `path` (an index row's) is the place of another variant of the stack's object `key`
 * (dev.json.gz for dev.json: PULUMI_DIY_BACKEND_GZIP/ZSTD changed the compression, the newest
 * variant is the stack's): the same stack, changed, not one indexed from elsewhere. */
static int other_variant(const ix_scope *place, const char *path, const char *key)
{
	static const char *const ext[] = {".json", ".json.gz", ".json.zst"};
	size_t h = strlen(place->head), k = strlen(key), stem = 0;

	for (size_t i = 0; i < 3 && !stem; i++) {
		size_t e = strlen(ext[i]);
		if (k > e && !strcmp(key + k - e, ext[i]))
			stem = k - e;
	}
	if (!stem || strncmp(path, place->head, h) || strncmp(path + h, key, stem))
		return 0;
	for (size_t i = 0; i < 3; i++) {
		size_t e = strlen(ext[i]);
		if (!strncmp(path + h + stem, ext[i], e) && !strcmp(path + h + stem + e, place->tail))
			return 1;
	}
	return 0;
}

/* One stack's row of the index (NULL text as "", NULL numbers as -2): '~' when its listed
 * stack's object changed, '+' when that stack is indexed from elsewhere, '-' when this
 * backend's store no longer lists it. Non-zero (out of memory) stops the walk. */
static int held_row(held_cmp *h, const char *qname, size_t qlen, const char *path,
		    long long size, long long mtime_ns, const char *etag)
{
	st_strmap_slot *sl = st_strmap_getn(&h->by, qname, qlen);
	char kind = 0;

	if (sl && sl->a) {
		const st_stack_info *in = &h->infos[sl->a - 1];
		h->seen[sl->a - 1] = 1;
		if (!st__ix_place_is(&h->place, path, in->key))
			/* indexed from elsewhere, or the stack's object changed name */
			kind = other_variant(&h->place, path, in->key) ? '~' : '+';
		else if (size != in->size || mtime_ns != in->mtime_ns || strcmp(etag, in->etag))
			kind = '~';
	} else if (st__ix_in_scope(&h->scope, path[0] ? path : NULL)) {
		/* gone: an indexed stack of this backend's store that the listing lacks (an
		 * index may hold the stacks of several backends) */
		kind = '-';
	}
	if (kind && stale_add(&h->res, &h->nr, qname, kind))
		h->oom = 1;
	return h->oom;
}

static const char held_sql[] = "SELECT qname, path, size, mtime_ns, etag FROM stacks";

/* One row of the stacks table read through st_index_sql (the PostgreSQL index). */
static int on_stack(void *ctx, int ncols, const char *const *names, const char *const *vals)
{
	(void)names;
	if (ncols != 5 || !vals[0])
		return 0;
	return held_row(ctx, vals[0], strlen(vals[0]), vals[1] ? vals[1] : "",
			vals[2] ? strtoll(vals[2], NULL, 10) : -2,
			vals[3] ? strtoll(vals[3], NULL, 10) : -2, vals[4] ? vals[4] : "");
}

static long long col_int(sqlite3_stmt *q, int c)
{
	return sqlite3_column_type(q, c) == SQLITE_NULL ? -2 : sqlite3_column_int64(q, c);
}

static const char *col_text(sqlite3_stmt *q, int c)
{
	const char *t = (const char *)sqlite3_column_text(q, c);
	return t ? t : "";
}

/* Every stack's row of the index through held_row: ST_OK, ST_ENOMEM or the index's error.
 * SQLite's columns are read typed, in place (no text round trip, no copy). */
static int held_walk(st_index *ix, held_cmp *h, st_error *err)
{
	sqlite3_stmt *q;
	int rc = ST_OK, src;

	if (ix->pg) {
		rc = st_index_sql(ix, held_sql, on_stack, h, err);
		return h->oom ? st__err(err, ST_ENOMEM, "out of memory") : rc;
	}
	if (sqlite3_prepare_v2(ix->db, held_sql, -1, &q, NULL) != SQLITE_OK)
		return st__ixsqlite_err(ix->db, ix->path, err, "cannot read the index");
	while ((src = sqlite3_step(q)) == SQLITE_ROW) {
		const char *qname = (const char *)sqlite3_column_text(q, 0);
		if (qname && held_row(h, qname, (size_t)sqlite3_column_bytes(q, 0), col_text(q, 1),
				      col_int(q, 2), col_int(q, 3), col_text(q, 4)))
			break;
	}
	if (h->oom)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	else if (src != SQLITE_DONE)
		rc = st__ixsqlite_err(ix->db, ix->path, err, "cannot read the index");
	sqlite3_finalize(q);
	return rc;
}

static int stale_cmp(const void *a, const void *b)
{
	return strcmp(((const st_index_stale_stack *)a)->qname,
		      ((const st_index_stale_stack *)b)->qname);
}

/* The listing looked up by name, the places cut once (st__ix_place_init: each listed stack's
 * place compared with the index's in pieces, nothing made per stack). ST_OK or ST_ENOMEM. */
static int held_init(held_cmp *h, st_store *store, const st_stack_info *infos, size_t n)
{
	char cwd_buf[PATH_MAX];
	const char *cwd = getcwd(cwd_buf, sizeof(cwd_buf)); /* once, not per stack */

	h->infos = infos;
	h->n = n;
	st_strmap_init(&h->by);
	if (!(h->seen = calloc(n ? n : 1, 1)) || st__ix_place_init(&h->place, store, cwd) ||
	    st__ix_scope_init(&h->scope, store))
		return ST_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int created;
		st_strmap_slot *sl = st_strmap_put(&h->by, infos[i].qname, &created);
		if (!sl)
			return ST_ENOMEM;
		sl->a = i + 1;
	}
	return ST_OK;
}

static void held_free(held_cmp *h)
{
	st_strmap_free(&h->by);
	free(h->seen);
	st__ix_scope_free(&h->place);
	st__ix_scope_free(&h->scope);
}

/* Compares the listing with the index's rows: *res and *nr as st_index_stale gives them. */
static int compare(st_index *ix, st_store *store, const st_stack_info *infos, size_t n,
		   held_cmp *h, st_error *err)
{
	int rc = held_init(h, store, infos, n);

	if (rc != ST_OK)
		return st__err(err, ST_ENOMEM, "out of memory");
	if ((rc = held_walk(ix, h, err)) != ST_OK)
		return rc;
	for (size_t i = 0; i < n; i++) /* not indexed */
		if (!h->seen[i] && stale_add(&h->res, &h->nr, infos[i].qname, '+'))
			return st__err(err, ST_ENOMEM, "out of memory");
	return ST_OK;
}

int st_index_stale(st_index *ix, st_backend *b, st_index_stale_stack **out, size_t *count,
		   st_error *err)
{
	ST_ASSERT_ARG(ix);
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(count);
	st_stack_info *infos = NULL;
	held_cmp h;
	size_t n = 0;
	int rc;

	*out = NULL;
	*count = 0;
	if (!st_backend_store(b))
		return st__err(err, ST_EUNSUPPORTED, "backend '%s' keeps its stacks in no store",
			       st_backend_url(b));
	memset(&h, 0, sizeof(h));
	rc = st__backend_list_brief(b, &infos, &n, err);
	if (rc == ST_OK)
		rc = compare(ix, st_backend_store(b), infos, n, &h, err);
	held_free(&h);
	st_stack_infos_free(infos, n);
	if (rc != ST_OK) {
		st_index_stale_free(h.res, h.nr);
		return rc;
	}
	if (h.nr > 1)
		qsort(h.res, h.nr, sizeof(*h.res), stale_cmp);
	*out = h.res;
	*count = h.nr;
	return ST_OK;
}

void st_index_stale_free(st_index_stale_stack *s, size_t count)
{
	for (size_t i = 0; s && i < count; i++)
		free(s[i].qname);
	free(s);
}
