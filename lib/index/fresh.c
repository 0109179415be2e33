/* Whether an index is up to date with its backend (st_index_stale): the backend's listing
 * against what the index holds of each stack, on either engine (through st_index_sql). */
#include "ix.h"

#include <stdlib.h>
#include <string.h>

/* What the index holds of a stack. */
typedef struct held {
	char *qname, *path, *etag;
	long long size, mtime_ns;
	int listed;
} held;

typedef struct held_list {
	held *v;
	size_t n;
	int oom;
	st_strmap by_qname; /* qname -> its index in v + 1 (slot.a) */
} held_list;

static char *dup_or_empty(const char *s) { return st_strdup(s ? s : ""); }

static int on_stack(void *ctx, int ncols, const char *const *names, const char *const *vals)
{
	held_list *l = ctx;
	held *v, *h;
	(void)names;
	if (ncols != 5 || !vals[0])
		return 0;
	if (!(v = realloc(l->v, (l->n + 1) * sizeof(*v)))) {
		l->oom = 1;
		return 1;
	}
	l->v = v;
	h = &v[l->n];
	memset(h, 0, sizeof(*h));
	h->qname = st_strdup(vals[0]);
	h->path = dup_or_empty(vals[1]);
	h->etag = dup_or_empty(vals[4]);
	h->size = vals[2] ? strtoll(vals[2], NULL, 10) : -2;
	h->mtime_ns = vals[3] ? strtoll(vals[3], NULL, 10) : -2;
	l->n++;
	if (!h->qname || !h->path || !h->etag) {
		l->oom = 1;
		return 1;
	}
	return 0;
}

static void held_free(held_list *l)
{
	st_strmap_free(&l->by_qname);
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].qname);
		free(l->v[i].path);
		free(l->v[i].etag);
	}
	free(l->v);
}

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

static int stale_cmp(const void *a, const void *b)
{
	return strcmp(((const st_index_stale_stack *)a)->qname,
		      ((const st_index_stale_stack *)b)->qname);
}

/* The map from a stack's qname to what the index holds of it (one lookup per listed stack:
 * a backend of 10,000 stacks is compared in milliseconds). -1 when out of memory. */
static int index_held(held_list *l)
{
	int created;
	for (size_t i = 0; i < l->n; i++) {
		st_strmap_slot *sl = st_strmap_put(&l->by_qname, l->v[i].qname, &created);
		if (!sl)
			return -1;
		sl->a = i + 1;
	}
	return 0;
}

/* The stack `qname` of what the index holds, or NULL. */
static held *find(held_list *l, const char *qname)
{
	st_strmap_slot *sl = st_strmap_get(&l->by_qname, qname);
	return sl && sl->a ? &l->v[sl->a - 1] : NULL;
}

/* Compares each listed stack with what the index holds of it. */
static int compare(held_list *l, st_store *store, const st_stack_info *infos, size_t n,
		   st_index_stale_stack **res, size_t *nr)
{
	if (index_held(l))
		return -1;
	for (size_t i = 0; i < n; i++) {
		char *where = st_store_where(store, infos[i].key);
		held *h = find(l, infos[i].qname);
		char kind = 0;
		if (!where)
			return -1;
		if (!h || strcmp(h->path, where))
			kind = '+'; /* not indexed, or indexed from elsewhere */
		else if (h->size != infos[i].size || h->mtime_ns != infos[i].mtime_ns ||
			 strcmp(h->etag, infos[i].etag))
			kind = '~';
		free(where);
		if (h)
			h->listed = 1;
		if (kind && stale_add(res, nr, infos[i].qname, kind))
			return -1;
	}
	/* gone: an indexed stack of this backend's store that the listing lacks (an index may
	 * hold the stacks of several backends) */
	ix_scope sc;
	if (st__ix_scope_init(&sc, store) != ST_OK)
		return -1;
	for (size_t i = 0; i < l->n; i++)
		if (!l->v[i].listed && st__ix_in_scope(&sc, l->v[i].path[0] ? l->v[i].path : NULL) &&
		    stale_add(res, nr, l->v[i].qname, '-')) {
			st__ix_scope_free(&sc);
			return -1;
		}
	st__ix_scope_free(&sc);
	return 0;
}

int st_index_stale(st_index *ix, st_backend *b, st_index_stale_stack **out, size_t *count,
		   st_error *err)
{
	ST_ASSERT_ARG(ix);
	ST_ASSERT_ARG(b);
	st_stack_info *infos = NULL;
	st_index_stale_stack *res = NULL;
	held_list hl = {0};
	size_t n = 0, nr = 0;
	int rc;

	st_strmap_init(&hl.by_qname);
	*out = NULL;
	*count = 0;
	if (!st_backend_store(b))
		return st__err(err, ST_EUNSUPPORTED, "backend '%s' keeps its stacks in no store",
			       st_backend_url(b));
	rc = st_index_sql(ix, "SELECT qname, path, size, mtime_ns, etag FROM stacks", on_stack,
			  &hl, err);
	if (hl.oom)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK)
		rc = st_backend_list(b, &infos, &n, err);
	if (rc == ST_OK && compare(&hl, st_backend_store(b), infos, n, &res, &nr))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	st_stack_infos_free(infos, n);
	held_free(&hl);
	if (rc != ST_OK) {
		st_index_stale_free(res, nr);
		return rc;
	}
	if (nr > 1)
		qsort(res, nr, sizeof(*res), stale_cmp);
	*out = res;
	*count = nr;
	return ST_OK;
}

void st_index_stale_free(st_index_stale_stack *s, size_t count)
{
	for (size_t i = 0; s && i < count; i++)
		free(s[i].qname);
	free(s);
}
