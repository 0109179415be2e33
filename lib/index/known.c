/*
 * What a SQLite index holds of its stacks (their places, sizes, times, tags, hashes), read
 * with one SELECT and looked up in memory by an update (update.c).
 */
#include "ix.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

void st__ixs_known_free(known_set *ks)
{
	st_strmap_free(&ks->by);
	st__ix_scope_free(&ks->scope);
	for (size_t i = 0; i < ks->n; i++)
		free(ks->v[i].qname); /* its strings' one block */
	free(ks->v);
	memset(ks, 0, sizeof(*ks));
}

int st__ix_known_add(known_set *ks, const char *qname, const char *path, long long size,
		     long long mtime_ns, const char *sha, const char *etag)
{
	const char *in[4] = {qname, path, sha, etag};
	char *out[4], *p;
	size_t len[4], total = 0;
	known *k;
	int created;
	if (ks->n == ks->cap) {
		size_t cap = ks->cap ? 2 * ks->cap : 256;
		known *v = realloc(ks->v, cap * sizeof(*v));
		if (!v)
			return -1;
		ks->v = v;
		ks->cap = cap;
	}
	/* the four strings in one block (10,000 stacks are read for every query) */
	for (int i = 0; i < 4; i++)
		total += (len[i] = in[i] ? strlen(in[i]) : 0) + 1;
	if (!(p = malloc(total)))
		return -1;
	for (int i = 0; i < 4; i++) {
		out[i] = p;
		if (len[i])
			memcpy(p, in[i], len[i]);
		p[len[i]] = '\0';
		p += len[i] + 1;
	}
	k = &ks->v[ks->n++];
	memset(k, 0, sizeof(*k));
	k->qname = out[0];
	k->path = out[1];
	k->sha = out[2];
	k->etag = out[3];
	k->size = size;
	k->mtime_ns = mtime_ns;
	st_strmap_slot *sl = st_strmap_putn(&ks->by, k->qname, len[0], &created);
	if (!sl)
		return -1;
	sl->a = ks->n;
	return 0;
}

static long long col_int(sqlite3_stmt *q, int c)
{
	return sqlite3_column_type(q, c) == SQLITE_NULL ? -2 : sqlite3_column_int64(q, c);
}

int st__ixs_known_load(st_index *ix, known_set *ks, st_error *err)
{
	sqlite3_stmt *q;
	int rc = ST_OK, src;

	st_strmap_init(&ks->by);
	if (sqlite3_prepare_v2(ix->db, "SELECT qname, path, size, mtime_ns, sha256, etag FROM "
				"stacks", -1, &q, NULL) != SQLITE_OK)
		return st__ixsqlite_err(ix->db, ix->path, err, "cannot read the index");
	while ((src = sqlite3_step(q)) == SQLITE_ROW) {
		/* the numbers read as numbers (a text read would convert them first) */
		long long size = col_int(q, 2), mtime_ns = col_int(q, 3);
		if (st__ix_known_add(ks, (const char *)sqlite3_column_text(q, 0),
				     (const char *)sqlite3_column_text(q, 1), size, mtime_ns,
				     (const char *)sqlite3_column_text(q, 4),
				     (const char *)sqlite3_column_text(q, 5)))
			break;
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


const char *st__ixs_known_other(known_set *ks, const char *qname, const char *where)
{
	st_strmap_slot *sl = st_strmap_get(&ks->by, qname);
	const known *k = sl && sl->a ? &ks->v[sl->a - 1] : NULL;
	if (!k || !k->path[0] || !strcmp(k->path, where) || st__ix_in_scope(&ks->scope, k->path))
		return NULL;
	return k->path;
}

int st__ixs_held_here(st_index *ix, const st_store *store, const char *qname)
{
	sqlite3_stmt *st;
	ix_scope sc;
	int r = 1, src;

	if (sqlite3_prepare_v2(ix->db, "SELECT path FROM stacks WHERE qname=?", -1, &st, NULL) !=
	    SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, qname, -1, SQLITE_STATIC);
	if ((src = sqlite3_step(st)) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
		if (st__ix_scope_init(&sc, store) != ST_OK)
			r = -1;
		else
			r = st__ix_in_scope(&sc, (const char *)sqlite3_column_text(st, 0));
		st__ix_scope_free(&sc);
	} else if (src != SQLITE_ROW && src != SQLITE_DONE) {
		r = -1;
	}
	sqlite3_finalize(st);
	return r;
}
