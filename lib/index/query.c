/*
 * Queries on a SQLite index: st_index_sql (raw, read-only SQL) and st_index_query_run (the
 * filters, as st__ix_query_sql writes them), after index.c has dispatched on the engine.
 */
#include "ix.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

static int stmt_end(sqlite3 *db, const char *path, int rc, st_error *err);

static int run_stmt(sqlite3 *db, const char *path, sqlite3_stmt *st, st_index_row_fn row,
		    void *ctx, st_error *err)
{
	int ncols = sqlite3_column_count(st), rc, user = 0;
	const char **names = calloc((size_t)ncols + 1, sizeof(*names));
	const char **vals = calloc((size_t)ncols + 1, sizeof(*vals));
	if (!names || !vals) {
		free(names);
		free(vals);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	for (size_t n = 0; (rc = sqlite3_step(st)) == SQLITE_ROW; n++) {
		/* names after the first step: it may re-prepare the statement (a bound GLOB
		 * pattern can change the plan), which frees names taken before it; later steps
		 * keep them */
		for (int i = 0; !n && i < ncols; i++)
			names[i] = sqlite3_column_name(st, i);
		for (int i = 0; i < ncols; i++)
			vals[i] = (const char *)sqlite3_column_text(st, i);
		if (row && (user = row(ctx, ncols, names, vals)) != 0)
			break;
	}
	free(names);
	free(vals);
	return user ? user : stmt_end(db, path, rc, err);
}

/* How a statement's steps ended (rc: the last step's): ST_OK, or the error. */
static int stmt_end(sqlite3 *db, const char *path, int rc, st_error *err)
{
	if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB)
		return st__err(err, ST_EFORMAT, "the index '%s' is damaged (%s); run `statetool "
			       "index update` to rebuild it", path, sqlite3_errmsg(db));
	if (rc != SQLITE_DONE)
		return st__ixsqlite_err(db, path, err, "query failed");
	return ST_OK;
}

int st__ixsqlite_sql(struct sqlite3 *db, const char *path, const char *sql,
		     st_index_row_fn row, void *ctx, st_error *err)
{
	sqlite3_stmt *st;
	const char *tail;
	int rc;
	if (sqlite3_prepare_v2(db, sql, -1, &st, &tail) != SQLITE_OK) {
		/* a write to a view (resources, edges) is a write all the same */
		if (strstr(sqlite3_errmsg(db), "because it is a view") ||
		    strstr(sqlite3_errmsg(db), "use DROP VIEW"))
			return st__err(err, ST_EREFUSED, "only read-only statements are allowed (the "
				       "index is opened read-only)");
		return st__err(err, ST_EINVAL, "SQL error: %s", sqlite3_errmsg(db));
	}
	if (!st)
		return st__err(err, ST_EINVAL, "no SQL statement");
	if (!sqlite3_stmt_readonly(st)) {
		sqlite3_finalize(st);
		return st__err(err, ST_EREFUSED, "only read-only statements are allowed (the index is "
			       "opened read-only)");
	}
	if (!sqlite3_column_count(st)) { /* BEGIN, COMMIT, PRAGMA x = y... */
		sqlite3_finalize(st);
		return st__err(err, ST_EREFUSED, IX_ONLY_QUERIES);
	}
	while (tail && (*tail == ' ' || *tail == '\n' || *tail == '\t' || *tail == ';'))
		tail++;
	if (tail && *tail) {
		sqlite3_finalize(st);
		return st__err(err, ST_EINVAL, "one SQL statement at a time");
	}
	rc = run_stmt(db, path, st, row, ctx, err);
	sqlite3_finalize(st);
	return rc;
}

/* st_index_query_run's rows: the seven text columns as they are, the five flags as their text
 * (st__ix_flags_text), in the column `flags`. */
static int run_query(sqlite3 *db, const char *path, sqlite3_stmt *st, st_index_row_fn row,
		     void *ctx, st_error *err)
{
	const char *names[IX_QUERY_COLS + 1] = {0}, *vals[IX_QUERY_COLS + 1] = {0};
	char flags[IX_FLAGS_MAX];
	int rc, user = 0;

	if (sqlite3_column_count(st) != IX_QUERY_SQLITE_COLS) /* cannot happen: shared.c's SQL */
		return st__err(err, ST_EIO, "index '%s': the query has %d columns", path,
			       sqlite3_column_count(st));
	names[IX_QUERY_COLS - 1] = "flags";
	vals[IX_QUERY_COLS - 1] = flags;
	for (size_t n = 0; (rc = sqlite3_step(st)) == SQLITE_ROW; n++) {
		int f[5];
		/* names after the first step (run_stmt says why) */
		for (int i = 0; !n && i < IX_QUERY_COLS - 1; i++)
			names[i] = sqlite3_column_name(st, i);
		for (int i = 0; i < IX_QUERY_COLS - 1; i++)
			vals[i] = (const char *)sqlite3_column_text(st, i);
		for (int i = 0; i < 5; i++)
			f[i] = sqlite3_column_int(st, IX_QUERY_COLS - 1 + i) != 0;
		st__ix_flags_text(flags, f);
		if (row && (user = row(ctx, IX_QUERY_COLS, names, vals)) != 0)
			break;
	}
	return user ? user : stmt_end(db, path, rc, err);
}

int st__ixsqlite_query(struct sqlite3 *db, const char *path, const st_index_query *q,
		       st_index_row_fn row, void *ctx, st_error *err)
{
	st_buf sql;
	sqlite3_stmt *st;
	const char *binds[16];
	char *owned[16];
	int nb = 0, no = 0, rc;

	st_buf_init(&sql);
	if (st__ix_query_sql(q, 0, &sql, binds, &nb, owned, &no) != ST_OK) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if (sqlite3_prepare_v2(db, sql.data, -1, &st, NULL) != SQLITE_OK) {
		rc = st__ixsqlite_err(db, path, err, "cannot prepare the query");
		goto out;
	}
	for (int i = 0; i < nb; i++)
		sqlite3_bind_text(st, i + 1, binds[i], -1, SQLITE_STATIC);
	rc = run_query(db, path, st, row, ctx, err);
	sqlite3_finalize(st);
out:
	for (int i = 0; i < no; i++)
		free(owned[i]);
	st_buf_free(&sql);
	return rc;
}
