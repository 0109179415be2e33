/*
 * The index in PostgreSQL (`--db postgres://...`): the same tables, rows and queries as the
 * SQLite index (ix.h), in a database a team shares.
 *
 *   - One stack per transaction: its `stacks` row is upserted first (the row lock makes a second
 *     updater of the same stack wait), its old rows deleted, its new rows sent by COPY, then
 *     COMMIT. Readers run at READ COMMITTED or better and never see a half-written stack.
 *   - Several updaters at once: creating the schema takes a transaction-scoped advisory lock;
 *     a stack gone from the backend is removed only if its row is still the one this updater
 *     read (same xmin), so a stack another updater has just indexed is never lost, and only
 *     if its place is in this backend (ix_scope), so backends sharing the index keep theirs.
 *   - Queries run in a READ ONLY transaction that is always rolled back, one statement (the
 *     extended protocol refuses several); a read-only index also sets the session read-only.
 *     A statement that writes fails with the server's "cannot execute ... in a read-only
 *     transaction" (ST_EREFUSED). --sql is checked first, then run so (pgsql.c).
 *   - Change detection as the SQLite index: place, size and tag (etag, else mtime) from the
 *     backend's listing, then the SHA-256 of the bytes read.
 */
#include "pgix.h"
#include "store/store_impl.h"

#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

#include "store/dl.h" /* last: libpq through its table */

/* ---- statements ---- */

/* The failure of a result (or of the connection), as an error naming the index. */
static int fail(st_ixpg *p, PGresult *r, const char *what, st_error *err)
{
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	char *m = st__pgc_msg(&p->c, r && PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
					     ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
					     : PQerrorMessage(p->c.conn));
	int code = ST_EIO;
	/* 25006: a write in a read-only transaction; 55000 with a view: a write to one (resources,
	 * edges), refused before the transaction's mode is looked at */
	const char *m0 = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	if (state && (!strcmp(state, "25006") ||
		      (!strcmp(state, "55000") && m0 && strstr(m0, "view"))))
		code = ST_EREFUSED;
	else if (state && (!strncmp(state, "42", 2) || !strncmp(state, "22", 2)))
		code = ST_EINVAL;
	else if (state && !strncmp(state, "28", 2))
		code = ST_EAUTH;
	if (code == ST_EREFUSED)
		st__err(err, code, "only read-only statements are allowed (the index is opened "
				   "read-only): %s", m ? m : "out of memory");
	else
		st__err(err, code, "index '%s': %s: %s", p->c.u.redacted, what,
			m ? m : "out of memory");
	free(m);
	return code;
}

/* Runs a statement with text parameters; *out (may be NULL) gets the result. */
static int q(st_ixpg *p, const char *sql, int n, const char *const *vals, PGresult **out,
	     const char *what, st_error *err)
{
	PGresult *r;
	int rc;

	if (out)
		*out = NULL;
	if ((rc = st__pgc_connect(&p->c, err)) != ST_OK)
		return rc;
	r = n || out ? PQexecParams(p->c.conn, sql, n, NULL, vals, NULL, NULL, 0)
		     : PQexec(p->c.conn, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = fail(p, r, what, err);
		PQclear(r);
		return rc;
	}
	if (out)
		*out = r;
	else
		PQclear(r);
	return ST_OK;
}

static void rollback(st_ixpg *p)
{
	if (p->c.conn)
		PQclear(PQexec(p->c.conn, "ROLLBACK"));
}

/* ---- opening ---- */

/* meta's value of `key` as a number (-1: none, or no meta table yet). */
static int meta_int(st_ixpg *p, const char *key, int *v, st_error *err)
{
	PGresult *r;
	const char *vals[1] = {key};
	int rc = q(p, "SELECT to_regclass('meta') IS NOT NULL", 0, NULL, &r, "cannot read", err);
	*v = -1;
	if (rc != ST_OK)
		return rc;
	int there = !strcmp(PQgetvalue(r, 0, 0), "t");
	PQclear(r);
	if (!there)
		return ST_OK;
	if ((rc = q(p, "SELECT value FROM meta WHERE key = $1", 1, vals, &r, "cannot read",
		    err)) != ST_OK)
		return rc;
	if (PQntuples(r))
		*v = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	return ST_OK;
}

static int schema_version(st_ixpg *p, int *v, st_error *err)
{
	return meta_int(p, "schema_version", v, err);
}

/* Every table and view of any schema version in the index's schema (the first of the
 * search path), each as what it is there. */
static int drop_all(st_ixpg *p, st_error *err)
{
	st_buf sql;
	int rc;

	st_buf_init(&sql);
	st_buf_adds(&sql, "DO $$DECLARE r record; BEGIN FOR r IN SELECT c.relname, c.relkind FROM "
			  "pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND "
			  "c.relkind IN ('r', 'v') AND c.relname IN (");
	for (int i = 0; st__ix_all_names[i]; i++)
		st_buf_printf(&sql, "%s'%s'", i ? ", " : "", st__ix_all_names[i]);
	st_buf_adds(&sql, ") LOOP EXECUTE format('DROP %s IF EXISTS %I CASCADE', CASE WHEN "
			  "r.relkind = 'v' THEN 'VIEW' ELSE 'TABLE' END, r.relname); END LOOP; "
			  "END$$");
	rc = sql.oom ? st__err(err, ST_ENOMEM, "out of memory")
		     : q(p, sql.data, 0, NULL, NULL, "cannot drop the old tables", err);
	st_buf_free(&sql);
	return rc;
}

/* The tables of this version, made once however many updaters start together. */
static int init_schema(st_ixpg *p, st_changes *notes, st_error *err)
{
	char *schema = st__ix_schema_sql(1), vs[16], fs[16];
	const char *vals[2] = {vs, ST_VERSION}, *fv[1] = {fs};
	int rc, v, from = -1;

	if (!schema)
		return st__err(err, ST_ENOMEM, "out of memory");
	snprintf(vs, sizeof(vs), "%d", ST_INDEX_SCHEMA_VERSION);
	rc = q(p, "BEGIN", 0, NULL, NULL, "cannot begin", err);
	if (rc == ST_OK)
		rc = q(p, "SELECT pg_advisory_xact_lock(7873254761)", 0, NULL, NULL,
		       "cannot lock the schema", err);
	if (rc == ST_OK)
		rc = schema_version(p, &v, err);
	if (rc == ST_OK && v != -1 && v != ST_INDEX_SCHEMA_VERSION) {
		rc = drop_all(p, err);
		st_changes_add(notes, "the index had schema version %d; rebuilt as version %d", v,
			       ST_INDEX_SCHEMA_VERSION);
		from = v;
	}
	if (rc == ST_OK && v != ST_INDEX_SCHEMA_VERSION)
		rc = q(p, schema, 0, NULL, NULL, "cannot create the tables", err);
	if (rc == ST_OK && v != ST_INDEX_SCHEMA_VERSION)
		rc = q(p, "INSERT INTO meta VALUES ('schema_version', $1), ('statetool', $2) ON "
			  "CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
		       2, vals, NULL, "cannot record the version", err);
	/* readers are told until an update of every stack ends (update_many) */
	snprintf(fs, sizeof(fs), "%d", from);
	if (rc == ST_OK && from != -1)
		rc = q(p, "INSERT INTO meta VALUES ('" IX_REBUILDING "', $1) ON CONFLICT (key) DO "
			  "UPDATE SET value = EXCLUDED.value", 1, fv, NULL, "cannot record the version",
		       err);
	if (rc == ST_OK)
		rc = meta_int(p, IX_REBUILDING, &v, err);
	p->rebuilding = rc == ST_OK && v != -1;
	if (rc == ST_OK)
		rc = q(p, "COMMIT", 0, NULL, NULL, "cannot commit", err);
	else
		rollback(p);
	free(schema);
	return rc;
}

int st__ixpg_open(st_ixpg **out, const char *url, int readonly, st_changes *notes,
		  st_error *err)
{
	st_ixpg *p = calloc(1, sizeof(*p));
	int rc, v;

	*out = NULL;
	if (!p)
		return st__err(err, ST_ENOMEM, "out of memory");
	p->readonly = readonly;
	p->notes = notes;
	if ((rc = st__pgc_init(&p->c, url, err)) != ST_OK ||
	    (rc = st__pgc_connect(&p->c, err)) != ST_OK)
		goto fail;
	if (!readonly) {
		if ((rc = init_schema(p, notes, err)) != ST_OK)
			goto fail;
	} else {
		if ((rc = q(p, "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", 0, NULL, NULL,
			    "cannot make the session read-only", err)) != ST_OK ||
		    (rc = schema_version(p, &v, err)) != ST_OK)
			goto fail;
		if (v == -1) {
			rc = st__err(err, ST_ENOTFOUND, "no index in '%s' (build it with `statetool "
							"index update --db URL`)",
				     p->c.u.redacted);
			goto fail;
		}
		if (v != ST_INDEX_SCHEMA_VERSION) {
			rc = st__err(err, ST_EVERSION, "the index '%s' has schema version %d, not %d; "
						       "run `statetool index update` to rebuild it",
				     p->c.u.redacted, v, ST_INDEX_SCHEMA_VERSION);
			goto fail;
		}
		if ((rc = meta_int(p, IX_REBUILDING, &v, err)) != ST_OK)
			goto fail;
		if (v != -1) {
			rc = st__ix_rebuilding(err, p->c.u.redacted, v);
			goto fail;
		}
	}
	*out = p;
	return ST_OK;
fail:
	st__ixpg_close(p);
	return rc;
}

void st__ixpg_close(st_ixpg *p)
{
	if (!p)
		return;
	st__pgc_free(&p->c);
	free(p);
}

const char *st__ixpg_name(const st_ixpg *p)
{
	return p->c.u.redacted;
}

static int writable(const st_ixpg *p, st_error *err)
{
	return p->readonly ? st__err(err, ST_EREFUSED, "the index '%s' is open read-only",
				     p->c.u.redacted)
			   : ST_OK;
}

/* ---- writing one stack ---- */

typedef struct copybufs {
	st_buf b[IX_NTABLES];
} copybufs;

/* COPY's text format: \N for NULL; backslash, tab, new line and carriage return escaped. */
static int copy_row(void *ctx, ix_table t, const ix_val *v)
{
	st_buf *b = &((copybufs *)ctx)->b[t];
	for (int c = 0; c < st__ix_table_ncols[t]; c++) {
		if (c)
			st_buf_addc(b, '\t');
		if (v[c].is_int) {
			st_buf_printf(b, "%lld", v[c].i);
		} else if (!v[c].s) {
			st_buf_adds(b, "\\N");
		} else {
			for (size_t i = 0; i < v[c].len; i++) {
				char ch = v[c].s[i];
				if (ch == '\\' || ch == '\t' || ch == '\n' || ch == '\r') {
					st_buf_addc(b, '\\');
					ch = ch == '\t' ? 't' : ch == '\n' ? 'n' : ch == '\r' ? 'r' : ch;
				}
				st_buf_addc(b, ch);
			}
		}
	}
	st_buf_addc(b, '\n');
	return b->oom ? ST_ENOMEM : 0;
}

static int copy_in(st_ixpg *p, ix_table t, const st_buf *b, st_error *err)
{
	char sql[64];
	PGresult *r;
	int rc = ST_OK;

	if (!b->len)
		return ST_OK;
	snprintf(sql, sizeof(sql), "COPY %s FROM STDIN", st__ix_table_names[t]);
	r = PQexec(p->c.conn, sql);
	if (PQresultStatus(r) != PGRES_COPY_IN) {
		rc = fail(p, r, "cannot copy rows", err);
		PQclear(r);
		return rc;
	}
	PQclear(r);
	if (PQputCopyData(p->c.conn, b->data, (int)b->len) != 1 ||
	    PQputCopyEnd(p->c.conn, NULL) != 1)
		return fail(p, NULL, "cannot copy rows", err);
	while ((r = PQgetResult(p->c.conn))) {
		if (rc == ST_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
			rc = fail(p, r, "cannot copy rows", err);
		PQclear(r);
	}
	return rc;
}

typedef struct objinfo {
	const char *path; /* where it is (a local path, or URL/key) */
	long long size, mtime_ns;
	const char *etag; /* "" when the store has none */
	const char *sha;  /* SHA-256 of the bytes stored, NULL when not computed */
} objinfo;

static int write_stack(st_ixpg *p, const char *qname, const objinfo *oi, st_state *s,
		       st_error *err)
{
	char stamp[40], size[24], mt[24], ver[16], nres[24], *stk = NULL, *proj = NULL;
	json_t *res = st_state_resources(s, 0);
	copybufs cb;
	PGresult *r = NULL;
	int rc;

	for (int t = 0; t < IX_NTABLES; t++)
		st_buf_init(&cb.b[t]);
	st_stack_names(s, NULL, oi->path, &stk, &proj, NULL);
	st_now_rfc3339(stamp, sizeof(stamp));
	snprintf(size, sizeof(size), "%lld", oi->size);
	snprintf(mt, sizeof(mt), "%lld", oi->mtime_ns);
	snprintf(ver, sizeof(ver), "%d", st_state_version(s));
	snprintf(nres, sizeof(nres), "%zu", json_array_size(res));
	const char *vals[12] = {qname, proj, stk, oi->path, size, mt, oi->sha,
				oi->etag && *oi->etag ? oi->etag : NULL, ver,
				st_state_envelope(s) == ST_ENVELOPE_EXPORT ? "export" : "checkpoint",
				nres, stamp};
	if ((rc = q(p, "BEGIN", 0, NULL, NULL, "cannot begin", err)) != ST_OK)
		goto out;
	/* the stack's row first: its lock orders two updaters of one stack */
	rc = q(p, "INSERT INTO stacks (qname, project, stack, path, size, mtime_ns, sha256, etag, "
		  "version, envelope, resources, indexed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, "
		  "$9, $10, $11, $12) ON CONFLICT (qname) DO UPDATE SET project = EXCLUDED.project, "
		  "stack = EXCLUDED.stack, path = EXCLUDED.path, size = EXCLUDED.size, mtime_ns = "
		  "EXCLUDED.mtime_ns, sha256 = EXCLUDED.sha256, etag = EXCLUDED.etag, version = "
		  "EXCLUDED.version, envelope = EXCLUDED.envelope, resources = EXCLUDED.resources, "
		  "indexed_at = EXCLUDED.indexed_at RETURNING id",
	       12, vals, &r, "cannot record the stack", err);
	if (rc != ST_OK)
		goto rollback;
	long long sid = atoll(PQgetvalue(r, 0, 0));
	const char *sv[1] = {PQgetvalue(r, 0, 0)};
	for (int t = 0; t < IX_NTABLES && rc == ST_OK; t++) {
		char sql[80];
		snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE stack_id = $1",
			 st__ix_table_names[t]);
		rc = q(p, sql, 1, sv, NULL, "cannot clear the stack's rows", err);
	}
	if (rc == ST_OK && st__ix_rows(s, sid, copy_row, &cb) != 0)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	for (int t = 0; t < IX_NTABLES && rc == ST_OK; t++)
		rc = copy_in(p, (ix_table)t, &cb.b[t], err);
	if (rc != ST_OK)
		goto rollback;
	st__crash_point("index", 1);
	if ((rc = q(p, "COMMIT", 0, NULL, NULL, "cannot commit", err)) == ST_OK)
		goto out;
rollback:
	rollback(p);
out:
	PQclear(r);
	for (int t = 0; t < IX_NTABLES; t++)
		st_buf_free(&cb.b[t]);
	free(stk);
	free(proj);
	return rc;
}

int st__ixpg_update_state(st_ixpg *p, const char *qname, const char *path, st_state *s,
			  st_error *err)
{
	objinfo oi = {path, -1, 0, "", NULL};
	int rc = writable(p, err);
	return rc ? rc : write_stack(p, qname, &oi, s, err);
}


/* ---- updating from a backend or files ---- */

/* Removes a stack and its rows; with `xmin` (its row's version, as text), only if its row is
 * still that one (someone else may have indexed it again meanwhile). *gone (may be NULL) tells
 * whether it was there. */
static int remove_stack(st_ixpg *p, const char *qname, const char *xmin, int *gone,
			st_error *err)
{
	const char *vals[2] = {qname, xmin};
	PGresult *r = NULL;
	int rc = q(p, "BEGIN", 0, NULL, NULL, "cannot begin", err);

	if (gone)
		*gone = 0;
	if (rc == ST_OK)
		rc = q(p, xmin ? "DELETE FROM stacks WHERE qname = $1 AND xmin::text = $2 "
				 "RETURNING id"
			       : "DELETE FROM stacks WHERE qname = $1 RETURNING id",
		       xmin ? 2 : 1, vals, &r, "cannot remove a stack", err);
	for (int t = 0; rc == ST_OK && PQntuples(r) && t < IX_NTABLES; t++) {
		char sql[80];
		const char *sv[1] = {PQgetvalue(r, 0, 0)};
		snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE stack_id = $1",
			 st__ix_table_names[t]);
		rc = q(p, sql, 1, sv, NULL, "cannot remove a stack", err);
	}
	if (rc == ST_OK && gone)
		*gone = PQntuples(r) > 0;
	PQclear(r);
	if (rc == ST_OK)
		rc = q(p, "COMMIT", 0, NULL, NULL, "cannot commit", err);
	else
		rollback(p);
	return rc;
}

/* The stack `qname` removed if the index holds it from a place in `sc` (the updating
 * backend's), only if its row is still the one read; *gone (may be NULL) tells whether it was. */
static int remove_here(st_ixpg *p, const char *qname, const ix_scope *sc, int *gone,
		       st_error *err)
{
	const char *vals[1] = {qname};
	PGresult *r = NULL;
	int rc = q(p, "SELECT path, xmin::text FROM stacks WHERE qname = $1", 1, vals, &r,
		   "cannot read the index", err);

	if (gone)
		*gone = 0;
	if (rc == ST_OK && PQntuples(r) &&
	    st__ix_in_scope(sc, PQgetisnull(r, 0, 0) ? NULL : PQgetvalue(r, 0, 0)))
		rc = remove_stack(p, qname, PQgetvalue(r, 0, 1), gone, err);
	PQclear(r);
	return rc;
}

/* A stack listed but gone when read (a `pulumi stack rm` since the listing): removed, as the
 * next listing would have it, with a note. */
static int stack_gone(st_ixpg *p, const char *qname, const ix_scope *sc,
		      st_index_stats *stats, st_error *err)
{
	int gone = 0, rc = remove_here(p, qname, sc, &gone, err);
	if (rc != ST_OK)
		return rc;
	stats->removed += (size_t)gone;
	st_changes_add(p->notes, "%s: gone from the backend since it was listed (removed "
		       "meanwhile): taken as removed", qname);
	return ST_OK;
}

static int stack_failed(st_ixpg *p, const char *qname, st_index_stats *stats,
			st_problems *failures, const char *rule, const char *msg, st_error *err)
{
	stats->failed++;
	if (st_problems_add(failures, ST_SEV_ERROR, rule, "", NULL, "%s", msg) != ST_OK)
		return st__err(err, ST_ENOMEM, "out of memory");
	return remove_stack(p, qname, NULL, NULL, err);
}

/* Is the object the index knows unchanged (same place, size and tag)? *other (new, else NULL)
 * gets the place of another backend's stack of this name (out of `sc`) that the index holds. */
static int known_unchanged(st_ixpg *p, const char *qname, const objinfo *oi,
			   const ix_scope *sc, char osha[65], long long *osize, int *same,
			   char **other, st_error *err)
{
	const char *vals[1] = {qname};
	PGresult *r;
	int rc = q(p, "SELECT size, mtime_ns, sha256, path, etag FROM stacks WHERE qname = $1", 1,
		   vals, &r, "cannot read the index", err);

	osha[0] = '\0';
	*osize = -2;
	*same = 0;
	*other = NULL;
	if (rc != ST_OK)
		return rc;
	if (PQntuples(r) && !PQgetisnull(r, 0, 3) && *PQgetvalue(r, 0, 3) &&
	    strcmp(PQgetvalue(r, 0, 3), oi->path) && !st__ix_in_scope(sc, PQgetvalue(r, 0, 3)) &&
	    !(*other = st_strdup(PQgetvalue(r, 0, 3))))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	if (PQntuples(r) && !strcmp(PQgetvalue(r, 0, 3), oi->path)) {
		const char *et = PQgetisnull(r, 0, 4) ? NULL : PQgetvalue(r, 0, 4);
		*osize = atoll(PQgetvalue(r, 0, 0));
		snprintf(osha, 65, "%s", PQgetvalue(r, 0, 2));
		/* a listing without sizes (postgres://) relies on the etag */
		*same = (oi->size >= 0 ? *osize == oi->size : *oi->etag != '\0') &&
			(*oi->etag ? et && !strcmp(et, oi->etag)
				   : atoll(PQgetvalue(r, 0, 1)) == oi->mtime_ns);
	}
	PQclear(r);
	return rc;
}

static int reindex(st_ixpg *p, const char *qname, const objinfo *oi, char *data, size_t len,
		   st_index_stats *stats, st_problems *failures, st_error *err)
{
	char *plain = NULL, msg[2600];
	size_t plen = 0;
	st_state *s = NULL;
	st_error lerr;
	int rc;

	st_error_clear(&lerr);
	rc = st__decompress(data, len, 0, oi->path, &plain, &plen, NULL, &lerr);
	if (rc == ST_OK)
		rc = st_state_load_buffer(&s, plain, plen, oi->path, NULL, &lerr);
	free(plain);
	if (rc != ST_OK) {
		if (rc == ST_ENOMEM)
			return st__err_copy(err, &lerr);
		snprintf(msg, sizeof(msg), "%s: %s; its rows were removed from the index", qname,
			 lerr.message);
		return stack_failed(p, qname, stats, failures, "index/unreadable", msg, err);
	}
	if ((rc = write_stack(p, qname, oi, s, &lerr)) == ST_OK) {
		stats->parsed++;
		stats->resources += json_array_size(st_state_resources(s, 0));
	} else if (rc == ST_ENOMEM) {
		st__err_copy(err, &lerr);
	} else {
		rc = st__err_copy(err, &lerr); /* the database failed: the update cannot go on */
	}
	st_state_free(s);
	return rc;
}

/* One stack's object (`key` of `store`, described by `info`), unless unchanged. */
static int update_one(st_ixpg *p, const char *qname, st_store *store, const char *key,
		      const st_store_info *info, const ix_scope *sc, st_index_stats *stats,
		      st_problems *failures, st_error *err)
{
	char sha[65], osha[65], *where = st__ix_where(store, key), *data = NULL, msg[2600];
	char *other = NULL;
	size_t len = 0;
	long long osize;
	objinfo oi = {where, info->size, info->mtime_ns, info->etag, NULL};
	st_error lerr;
	int rc, same;

	st_error_clear(&lerr);
	if (!where)
		return st__err(err, ST_ENOMEM, "out of memory");
	if ((rc = known_unchanged(p, qname, &oi, sc, osha, &osize, &same, &other, err)) != ST_OK ||
	    same) {
		if (rc == ST_OK)
			stats->unchanged++;
		goto out;
	}
	if (other) { /* another backend's stack of this name: refused, its rows kept */
		rc = st__ix_other_failed(qname, where, other, stats, failures, err);
		goto out;
	}
	if ((rc = st_store_read(store, key, 0, &data, &len, NULL, &lerr)) != ST_OK) {
		if (rc == ST_ENOMEM) {
			rc = st__err_copy(err, &lerr);
			goto out;
		}
		if (rc == ST_ENOTFOUND && sc->head) { /* a backend's stack removed meanwhile */
			rc = stack_gone(p, qname, sc, stats, err);
			goto out;
		}
		snprintf(msg, sizeof(msg), "%s: %s; its rows were removed from the index", qname,
			 lerr.message);
		rc = stack_failed(p, qname, stats, failures, "index/unreadable", msg, err);
		goto out;
	}
	st_sha256_hex(data, len, sha);
	oi.sha = sha;
	if (osha[0] && !strcmp(sha, osha) && osize == (long long)len) {
		/* touched, not changed: the new time and tag are kept, nothing is parsed */
		char mt[24];
		snprintf(mt, sizeof(mt), "%lld", oi.mtime_ns);
		const char *vals[3] = {mt, *oi.etag ? oi.etag : NULL, qname};
		rc = q(p, "UPDATE stacks SET mtime_ns = $1, etag = $2 WHERE qname = $3", 3, vals,
		       NULL, "cannot record the stack", err);
		if (rc == ST_OK)
			stats->unchanged++;
		goto out;
	}
	rc = reindex(p, qname, &oi, data, len, stats, failures, err);
	data = NULL; /* taken by the decompression */
out:
	free(data);
	free(where);
	free(other);
	return rc;
}

static int update_entry(st_ixpg *p, st_backend *b, const st_stack_info *info, const char *path,
			const ix_scope *sc, st_index_stats *stats, st_problems *failures,
			st_error *err)
{
	st_store *fs = NULL;
	st_store_info si;
	char *key = NULL, msg[2600];
	st_error lerr;
	int rc;

	if (info) {
		si.size = info->size;
		si.mtime_ns = info->mtime_ns;
		memcpy(si.etag, info->etag, sizeof(si.etag));
		return update_one(p, info->qname, st_backend_store(b), info->key, &si, sc, stats,
				  failures, err);
	}
	st_error_clear(&lerr);
	if ((rc = st_store_open_file(&fs, &key, path, &lerr)) == ST_OK)
		rc = st_store_stat(fs, key, &si, &lerr);
	if (rc == ST_OK)
		rc = update_one(p, path, fs, key, &si, sc, stats, failures, err);
	else if (rc == ST_ENOMEM)
		rc = st__err_copy(err, &lerr);
	else {
		snprintf(msg, sizeof(msg), "%s: %s; its rows were removed from the index", path,
			 lerr.message);
		rc = stack_failed(p, path, stats, failures, "index/unreadable", msg, err);
	}
	free(key);
	st_store_free(fs);
	return rc;
}

/* Drops the stacks of the updating backend (sc; files: any stack) not in `keep`, each only if
 * no one indexed it since it was listed here (its row's version, xmin, is the one listed). */
static int prune(st_ixpg *p, const ix_scope *sc, st_strmap *keep, st_index_stats *stats,
		 st_error *err)
{
	PGresult *r;
	int rc;

	rc = q(p, "SELECT qname, xmin::text, path FROM stacks", 0, NULL, &r,
	       "cannot list the stacks", err);
	for (int i = 0; rc == ST_OK && i < PQntuples(r); i++) {
		int gone = 0;
		if (st_strmap_get(keep, PQgetvalue(r, i, 0)) ||
		    !st__ix_in_scope(sc, PQgetisnull(r, i, 2) ? NULL : PQgetvalue(r, i, 2)))
			continue;
		rc = remove_stack(p, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), &gone, err);
		stats->removed += (size_t)gone;
	}
	if (rc == ST_OK || r)
		PQclear(r);
	return rc;
}

static int update_many(st_ixpg *p, st_backend *b, const st_stack_info *infos,
		       const char *const *paths, size_t n, int do_prune,
		       st_index_progress_fn progress, void *pctx, st_index_stats *stats,
		       st_problems *failures, st_error *err)
{
	st_index_stats local = {0};
	st_problems nowhere = {0};
	st_strmap keep;
	ix_scope sc;
	int created, rc = writable(p, err);

	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	st_strmap_init(&keep);
	/* what this update may drop, and whose stacks are another backend's: a backend's, every
	 * stack for files */
	if (st__ix_scope_init(&sc, b ? st_backend_store(b) : NULL) != ST_OK && rc == ST_OK)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	stats->stacks = n;
	for (size_t i = 0; i < n && rc == ST_OK; i++) {
		const char *qname = infos ? infos[i].qname : paths[i];
		if (!st_strmap_put(&keep, qname, &created)) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			break;
		}
		rc = update_entry(p, b, infos ? &infos[i] : NULL, infos ? NULL : paths[i], &sc,
				  stats, failures ? failures : &nowhere, err);
		if (rc == ST_OK && progress)
			progress(pctx, i + 1, n, stats->resources);
	}
	if (rc == ST_OK && do_prune)
		rc = prune(p, &sc, &keep, stats, err);
	/* every stack of a backend (or the files) written: a rebuild's end */
	if (rc == ST_OK && p->rebuilding && (do_prune || !infos) &&
	    (rc = q(p, "DELETE FROM meta WHERE key = '" IX_REBUILDING "'", 0, NULL, NULL,
		    "cannot record the rebuild's end", err)) == ST_OK)
		p->rebuilding = 0;
	st__ix_scope_free(&sc);
	st_strmap_free(&keep);
	st_problems_clear(&nowhere);
	return rc;
}

int st__ixpg_update_backend(st_ixpg *p, st_backend *b, st_index_progress_fn progress,
			    void *pctx, st_index_stats *stats, st_problems *failures,
			    st_error *err)
{
	st_stack_info *infos = NULL;
	size_t n = 0;
	int rc = writable(p, err);

	if (rc == ST_OK && !st_backend_store(b))
		rc = st__err(err, ST_EUNSUPPORTED, "backend '%s' keeps its stacks in no store: "
						   "nothing to index", st_backend_url(b));
	if (rc == ST_OK && (rc = st_backend_list(b, &infos, &n, err)) == ST_OK)
		st__crash_point("index", 3);
	if (rc == ST_OK)
		rc = update_many(p, b, infos, NULL, n, 1, progress, pctx, stats, failures, err);
	st_stack_infos_free(infos, n);
	return rc;
}

int st__ixpg_update_one(st_ixpg *p, st_backend *b, const char *qname, const st_stack_info *info,
			st_index_stats *stats, st_problems *failures, st_error *err)
{
	int gone = 0, rc;
	ix_scope sc;

	if (info)
		return update_many(p, b, info, NULL, 1, 0, NULL, NULL, stats, failures, err);
	if ((rc = writable(p, err)) != ST_OK)
		return rc;
	if (st__ix_scope_init(&sc, st_backend_store(b)) != ST_OK)
		return st__err(err, ST_ENOMEM, "out of memory");
	/* only this backend's: another's stack of this name is not this one's to drop */
	if ((rc = remove_here(p, qname, &sc, &gone, err)) == ST_OK && stats)
		stats->removed += (size_t)gone;
	st__ix_scope_free(&sc);
	return rc;
}

int st__ixpg_update_files(st_ixpg *p, const char *const *paths, size_t n, int do_prune,
			  st_index_progress_fn progress, void *pctx, st_index_stats *stats,
			  st_problems *failures, st_error *err)
{
	return update_many(p, NULL, NULL, paths, n, do_prune, progress, pctx, stats, failures,
			   err);
}

/* ---- queries ---- */

/* Runs one statement in a READ ONLY transaction, rolled back whatever it did, and hands its
 * rows to `row`. */
static int read_only(st_ixpg *p, const char *sql, int n, const char *const *vals,
		     st_index_row_fn row, void *ctx, st_error *err)
{
	PGresult *r = NULL;
	int rc = q(p, "BEGIN TRANSACTION READ ONLY", 0, NULL, NULL, "cannot begin", err);

	if (rc != ST_OK)
		return rc;
	r = PQexecParams(p->c.conn, sql, n, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(r) == PGRES_COPY_OUT || PQresultStatus(r) == PGRES_COPY_IN ||
	    PQresultStatus(r) == PGRES_COPY_BOTH) {
		/* a connection in the middle of a COPY: dropped (made again when needed), which
		 * ends the transaction */
		PQclear(r);
		PQfinish(p->c.conn);
		p->c.conn = NULL;
		return st__err(err, ST_EREFUSED, IX_ONLY_QUERIES);
	}
	rollback(p);
	if (PQresultStatus(r) == PGRES_EMPTY_QUERY) {
		PQclear(r);
		return st__err(err, ST_EINVAL, "no SQL statement");
	}
	if (PQresultStatus(r) == PGRES_COMMAND_OK) { /* BEGIN, COMMIT, SET, NOTIFY, PREPARE... */
		PQclear(r);
		return st__err(err, ST_EREFUSED, IX_ONLY_QUERIES);
	}
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
		if (m && strstr(m, "multiple commands"))
			rc = st__err(err, ST_EINVAL, "one SQL statement at a time");
		else
			rc = fail(p, r, "query failed", err);
		PQclear(r);
		return rc;
	}
	rc = st__ixpg_rows(r, r, row, ctx, err);
	PQclear(r);
	return rc;
}

int st__ixpg_rows(const PGresult *r, const PGresult *named, st_index_row_fn row, void *ctx,
		  st_error *err)
{
	int ncols = PQnfields(r), rc = ST_OK, user = 0;
	const char **names = calloc((size_t)ncols + 1, sizeof(*names));
	const char **cols = calloc((size_t)ncols + 1, sizeof(*cols));
	if (!names || !cols)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	for (int c = 0; rc == ST_OK && c < ncols; c++)
		names[c] = PQfname(named, c);
	for (int i = 0; rc == ST_OK && i < PQntuples(r); i++) {
		for (int c = 0; c < ncols; c++)
			cols[c] = PQgetisnull(r, i, c) ? NULL : PQgetvalue(r, i, c);
		if (row && (user = row(ctx, ncols, names, cols)) != 0)
			break;
	}
	free(names);
	free(cols);
	return user ? user : rc;
}

int st__ixpg_query(st_ixpg *p, const st_index_query *qy, st_index_row_fn row, void *ctx,
		   st_error *err)
{
	const char *binds[16];
	char *owned[16];
	int nb = 0, no = 0, rc;
	st_buf sql;

	st_buf_init(&sql);
	if ((rc = st__ix_query_sql(qy, 1, &sql, binds, &nb, owned, &no)) != ST_OK)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	else
		rc = read_only(p, sql.data, nb, binds, row, ctx, err);
	for (int i = 0; i < no; i++)
		free(owned[i]);
	st_buf_free(&sql);
	return rc;
}

/* ---- for pgsql.c ---- */

int st__ixpg_exec(st_ixpg *p, const char *sql, int n, const char *const *vals, PGresult **out,
		  const char *what, st_error *err)
{
	return q(p, sql, n, vals, out, what, err);
}

int st__ixpg_fail(st_ixpg *p, PGresult *r, const char *what, st_error *err)
{
	return fail(p, r, what, err);
}

void st__ixpg_rollback(st_ixpg *p)
{
	rollback(p);
}
