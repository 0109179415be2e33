/* Whether an index is up to date with its backend (st_index_stale): the backend's listing
 * against what the index holds of each stack, on either engine. */
#include "ix.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct held_ctx {
	known_set *ks;
	int oom;
} held_ctx;

/* One row of the stacks table read through st_index_sql (the PostgreSQL index). */
static int on_stack(void *ctx, int ncols, const char *const *names, const char *const *vals)
{
	held_ctx *h = ctx;
	(void)names;
	if (ncols != 5 || !vals[0])
		return 0;
	if (st__ix_known_add(h->ks, vals[0], vals[1], vals[2] ? strtoll(vals[2], NULL, 10) : -2,
			     vals[3] ? strtoll(vals[3], NULL, 10) : -2, NULL, vals[4]))
		h->oom = 1;
	return h->oom;
}

/* What the index holds of each stack: ST_OK, ST_ENOMEM or the index's error. */
static int held_load(st_index *ix, known_set *ks, st_error *err)
{
	held_ctx h = {ks, 0};
	int rc;
	if (!ix->pg)
		return st__ixs_known_load(ix, ks, err); /* typed columns, no text round trip */
	st_strmap_init(&ks->by);
	rc = st_index_sql(ix, "SELECT qname, path, size, mtime_ns, etag FROM stacks", on_stack, &h,
			  err);
	return h.oom ? st__err(err, ST_ENOMEM, "out of memory") : rc;
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

/* Compares each listed stack with what the index holds of it (one lookup per listed stack,
 * its place compared with the index's in pieces, nothing allocated: a backend of 10,000
 * stacks is compared in milliseconds). -1 when out of memory. */
static int compare(known_set *ks, st_store *store, const st_stack_info *infos, size_t n,
		   st_index_stale_stack **res, size_t *nr)
{
	char cwd_buf[PATH_MAX];
	const char *cwd = getcwd(cwd_buf, sizeof(cwd_buf)); /* once, not per stack */
	ix_scope place;

	if (st__ix_place_init(&place, store, cwd) != ST_OK)
		return -1;
	for (size_t i = 0; i < n; i++) {
		st_strmap_slot *sl = st_strmap_get(&ks->by, infos[i].qname);
		known *h = sl && sl->a ? &ks->v[sl->a - 1] : NULL;
		char kind = 0;
		if (h)
			h->listed = 1;
		if (!h || !st__ix_place_is(&place, h->path, infos[i].key))
			kind = '+'; /* not indexed, or indexed from elsewhere */
		else if (h->size != infos[i].size || h->mtime_ns != infos[i].mtime_ns ||
			 strcmp(h->etag, infos[i].etag))
			kind = '~';
		if (kind && stale_add(res, nr, infos[i].qname, kind)) {
			st__ix_scope_free(&place);
			return -1;
		}
	}
	st__ix_scope_free(&place);
	/* gone: an indexed stack of this backend's store that the listing lacks (an index may
	 * hold the stacks of several backends) */
	ix_scope sc;
	if (st__ix_scope_init(&sc, store) != ST_OK)
		return -1;
	for (size_t i = 0; i < ks->n; i++)
		if (!ks->v[i].listed &&
		    st__ix_in_scope(&sc, ks->v[i].path[0] ? ks->v[i].path : NULL) &&
		    stale_add(res, nr, ks->v[i].qname, '-')) {
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
	known_set ks = {0};
	size_t n = 0, nr = 0;
	int rc;

	*out = NULL;
	*count = 0;
	if (!st_backend_store(b))
		return st__err(err, ST_EUNSUPPORTED, "backend '%s' keeps its stacks in no store",
			       st_backend_url(b));
	rc = held_load(ix, &ks, err);
	if (rc == ST_OK)
		rc = st_backend_list(b, &infos, &n, err);
	if (rc == ST_OK && compare(&ks, st_backend_store(b), infos, n, &res, &nr))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	st_stack_infos_free(infos, n);
	st__ixs_known_free(&ks);
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
