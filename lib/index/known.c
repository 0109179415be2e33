/*
 * What a SQLite index holds of its stacks (their places, sizes, times, tags, hashes), read
 * with one SELECT and looked up in memory by an update (update.c).
 */
#include "ix.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

static char *dup_col(sqlite3_stmt *q, int c)
{
	const char *t = (const char *)sqlite3_column_text(q, c);
	return st_strdup(t ? t : "");
}

void st__ixs_known_free(known_set *ks)
{
	st_strmap_free(&ks->by);
	for (size_t i = 0; i < ks->n; i++) {
		free(ks->v[i].qname);
		free(ks->v[i].path);
		free(ks->v[i].sha);
		free(ks->v[i].etag);
	}
	free(ks->v);
	memset(ks, 0, sizeof(*ks));
}

int st__ixs_known_load(st_index *ix, known_set *ks, st_error *err)
{
	sqlite3_stmt *q;
	int rc = ST_OK, src, created;

	st_strmap_init(&ks->by);
	if (sqlite3_prepare_v2(ix->db, "SELECT qname, path, size, mtime_ns, sha256, etag FROM "
				"stacks", -1, &q, NULL) != SQLITE_OK)
		return st__ixsqlite_err(ix->db, ix->path, err, "cannot read the index");
	while ((src = sqlite3_step(q)) == SQLITE_ROW) {
		known *k;
		if (ks->n == ks->cap) {
			size_t cap = ks->cap ? 2 * ks->cap : 256;
			known *v = realloc(ks->v, cap * sizeof(*v));
			if (!v)
				break;
			ks->v = v;
			ks->cap = cap;
		}
		k = &ks->v[ks->n++];
		memset(k, 0, sizeof(*k));
		k->qname = dup_col(q, 0);
		k->path = dup_col(q, 1);
		k->size = sqlite3_column_type(q, 2) == SQLITE_NULL ? -2 : sqlite3_column_int64(q, 2);
		k->mtime_ns = sqlite3_column_type(q, 3) == SQLITE_NULL ? -2
								     : sqlite3_column_int64(q, 3);
		k->sha = dup_col(q, 4);
		k->etag = dup_col(q, 5);
		if (!k->qname || !k->path || !k->sha || !k->etag)
			break;
		st_strmap_slot *sl = st_strmap_put(&ks->by, k->qname, &created);
		if (!sl)
			break;
		sl->a = ks->n;
	}
	if (src == SQLITE_ROW)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	else if (src != SQLITE_DONE)
		rc = st__ixsqlite_err(ix->db, ix->path, err, "cannot read the index");
	sqlite3_finalize(q);
	return rc;
}

/* What the index holds of a stack indexed from `where`, or NULL; marks it listed. */
const known *st__ixs_known_of(known_set *ks, const char *qname, const char *where)
{
	st_strmap_slot *sl = st_strmap_get(&ks->by, qname);
	known *k = sl && sl->a ? &ks->v[sl->a - 1] : NULL;
	if (k)
		k->listed = 1;
	return k && !strcmp(k->path, where) ? k : NULL;
}

