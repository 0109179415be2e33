/*
 * The SQLite index: every stack of a backend, queryable without parsing anything.
 * One transaction per stack; WAL mode, so readers never see a half-written stack.
 */
#include "ix.h"
#include "store/store_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


struct st_index {
	sqlite3 *db;
	int readonly;
	char *path;
	st_ixpg *pg; /* a PostgreSQL index (pg.c): every call goes there */
};

/* SQLite's failures: out of memory as such, anything else an I/O error. */
static int sql_code(int sqlite_rc)
{
	return (sqlite_rc & 0xff) == SQLITE_NOMEM ? ST_ENOMEM : ST_EIO;
}

int st__ixsqlite_err(struct sqlite3 *db, const char *path, st_error *err, const char *what)
{
	return st__err(err, sql_code(sqlite3_errcode(db)), "index '%s': %s: %s", path, what,
		       sqlite3_errmsg(db));
}

static int sql_err(st_index *ix, st_error *err, const char *what)
{
	return st__ixsqlite_err(ix->db, ix->path, err, what);
}

static int exec(st_index *ix, const char *sql, st_error *err)
{
	char *msg = NULL;
	int rc = sqlite3_exec(ix->db, sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		rc = st__err(err, sql_code(rc), "index '%s': %s", ix->path,
			     msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return rc;
	}
	return ST_OK;
}

/* Updates need an index opened for writing. */
static int writable(const st_index *ix, st_error *err)
{
	if (!ix->readonly)
		return ST_OK;
	return st__err(err, ST_EREFUSED, "the index '%s' is open read-only", ix->path);
}

static int schema_version(st_index *ix)
{
	sqlite3_stmt *st;
	int v = -1;
	if (sqlite3_prepare_v2(ix->db, "SELECT value FROM meta WHERE key='schema_version'", -1,
			       &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = atoi((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return v;
}

static int open_db(st_index *ix, st_error *err)
{
	int flags = ix->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	if (sqlite3_open_v2(ix->path, &ix->db, flags | SQLITE_OPEN_NOFOLLOW, NULL) != SQLITE_OK) {
		int rc = st__err(err, ix->readonly ? ST_ENOTFOUND : ST_EIO,
				 "cannot open the index '%s': %s", ix->path,
				 ix->db ? sqlite3_errmsg(ix->db) : "out of memory");
		sqlite3_close(ix->db);
		ix->db = NULL;
		return rc;
	}
	sqlite3_busy_timeout(ix->db, 10000);
	return ST_OK;
}

/* Is the database usable? Read-only opens check the header and the schema (cheap, so a query
 * stays in milliseconds; a damaged page met later is reported by the query itself); an update
 * runs PRAGMA quick_check over every page first, so it never builds on a damaged file. */
static int healthy(st_index *ix, int thorough)
{
	sqlite3_stmt *st;
	int ok = 0;
	const char *sql = thorough ? "PRAGMA quick_check" : "SELECT count(*) FROM sqlite_master";
	if (sqlite3_prepare_v2(ix->db, sql, -1, &st, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *r = (const char *)sqlite3_column_text(st, 0);
		ok = r && (!thorough || !strcmp(r, "ok"));
	}
	sqlite3_finalize(st);
	return ok;
}

/* Every table and view of any schema version (a name is a table in one version, a view in
 * another: the wrong DROP fails and the other does it), then the free pages given back. */
static void drop_all(st_index *ix)
{
	for (int i = 0; st__ix_all_names[i]; i++) {
		char sql[120];
		snprintf(sql, sizeof(sql), "DROP VIEW IF EXISTS \"%s\"", st__ix_all_names[i]);
		exec(ix, sql, NULL);
		snprintf(sql, sizeof(sql), "DROP TABLE IF EXISTS \"%s\"", st__ix_all_names[i]);
		exec(ix, sql, NULL);
	}
	exec(ix, "VACUUM", NULL);
}

/* WAL mode and the schema of this version (an index of another version is dropped first), in
 * an index opened for writing. */
static int init_schema(st_index *ix, st_changes *notes, st_error *err)
{
	int rc;
	exec(ix, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-65536; "
		 "PRAGMA wal_autocheckpoint=16384;",
	     NULL);
	int v = schema_version(ix);
	if (v != -1 && v != ST_INDEX_SCHEMA_VERSION) {
		drop_all(ix);
		st_changes_add(notes, "the index had schema version %d; rebuilt as version %d", v,
			       ST_INDEX_SCHEMA_VERSION);
	}
	/* tables and version in one transaction: an update killed here leaves no tables */
	char *schema = st__ix_schema_sql(0);
	char *sql = schema ? st_asprintf("BEGIN IMMEDIATE;%s"
					 "INSERT OR REPLACE INTO meta VALUES ('schema_version', '%d');"
					 "INSERT OR REPLACE INTO meta VALUES ('statetool', '%s');COMMIT;",
					 schema, ST_INDEX_SCHEMA_VERSION, ST_VERSION)
			   : NULL;
	rc = sql ? exec(ix, sql, err) : st__err(err, ST_ENOMEM, "out of memory");
	free(schema);
	free(sql);
	if (rc)
		exec(ix, "ROLLBACK;", NULL);
	return rc;
}

/* A new index is made under a temporary name beside `path` (WAL mode, schema, closed) and
 * linked into place whole: a reader never meets a half-made file. (Killed while SQLite switched
 * a new file to WAL, the file was left with a hot rollback journal, which a read-only reader
 * cannot roll back: it took the index for damaged.) Someone else's index made meanwhile wins. */
static int create_new(st_index *ix, st_error *err)
{
	char rnd[17], *final = ix->path, *tmp;
	int rc;

	st_random_hex(rnd, 8);
	if (!(tmp = st_asprintf("%s.new-%s", final, rnd)))
		return st__err(err, ST_ENOMEM, "out of memory");
	ix->path = tmp;
	rc = open_db(ix, err);
	if (rc == ST_OK)
		rc = init_schema(ix, NULL, err);
	sqlite3_close(ix->db); /* the last connection: checkpointed, its -wal removed */
	ix->db = NULL;
	ix->path = final;
	if (rc == ST_OK) {
		st__crash_point("index", 2);
		if (link(tmp, final) != 0 && errno != EEXIST)
			rc = st__err(err, ST_EIO, "cannot create the index '%s': %s", final,
				     strerror(errno));
	}
	unlink(tmp);
	free(tmp);
	return rc;
}

int st_index_open(st_index **out, const char *path, int readonly, st_changes *notes,
		  st_error *err)
{
	st_index *ix = calloc(1, sizeof(*ix));
	int rc;

	*out = NULL;
	if (!ix || !(ix->path = st_strdup(path))) {
		free(ix);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	ix->readonly = readonly;
	if (!strncmp(path, "postgres://", 11)) {
		if ((rc = st__ixpg_open(&ix->pg, path, readonly, notes, err)) != ST_OK)
			goto fail;
		*out = ix;
		return ST_OK;
	}
	if (readonly && access(path, F_OK) != 0) {
		rc = st__err(err, ST_ENOTFOUND, "no index at '%s' (build it with `statetool index "
			     "update`)", path);
		goto fail;
	}
	if (st_path_is_symlink(path)) {
		rc = st__err(err, ST_EREFUSED, "refusing to use the index '%s': it is a symbolic "
			     "link", path);
		goto fail;
	}
	if (!readonly && access(path, F_OK) != 0 && (rc = create_new(ix, err)) != ST_OK)
		goto fail;
	if ((rc = open_db(ix, err)) != ST_OK)
		goto fail;
	if (!healthy(ix, !readonly)) {
		if (readonly) {
			rc = st__err(err, ST_EFORMAT, "the index '%s' is damaged; run `statetool "
				     "index update` to rebuild it", path);
			goto fail;
		}
		sqlite3_close(ix->db);
		ix->db = NULL;
		char *aside = st_asprintf("%s.corrupt", path);
		if (aside && rename(path, aside) == 0)
			st_changes_add(notes, "the index '%s' was damaged: moved aside to '%s' and "
				       "rebuilt", path, aside);
		else
			unlink(path);
		free(aside);
		char *wal = st_asprintf("%s-wal", path), *shm = st_asprintf("%s-shm", path);
		if (wal)
			unlink(wal);
		if (shm)
			unlink(shm);
		free(wal);
		free(shm);
		if ((rc = create_new(ix, err)) != ST_OK || (rc = open_db(ix, err)) != ST_OK)
			goto fail;
	}
	if (!readonly) {
		if ((rc = init_schema(ix, notes, err)) != ST_OK)
			goto fail;
	} else {
		exec(ix, "PRAGMA query_only=1;", NULL);
		int v = schema_version(ix);
		if (v == -1) {
			rc = st__err(err, ST_EVERSION, "the index '%s' is empty (its first update was "
				     "interrupted?); run `statetool index update` to build it", path);
			goto fail;
		}
		if (v != ST_INDEX_SCHEMA_VERSION) {
			rc = st__err(err, ST_EVERSION, "the index '%s' has schema version %d, not %d; "
				     "run `statetool index update` to rebuild it", path, v,
				     ST_INDEX_SCHEMA_VERSION);
			goto fail;
		}
	}
	*out = ix;
	return ST_OK;
fail:
	st_index_close(ix);
	return rc;
}

void st_index_close(st_index *ix)
{
	if (!ix)
		return;
	st__ixpg_close(ix->pg);
	sqlite3_close(ix->db);
	free(ix->path);
	free(ix);
}

char *st_index_default_path(const st_backend *b)
{
	ST_ASSERT_ARG(b);
	if (!st_backend_root(b))
		return NULL;
	return st_asprintf("%s/.pulumi/statetool-index.sqlite", st_backend_root(b));
}

/* ---- writing one stack ---- */

typedef struct ins {
	sqlite3_stmt *st[IX_NTABLES];
} ins;

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, i);
}

static int step_reset(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* One row of a stack (st__ix_rows) into its table. */
static int sqlite_row(void *ctx, ix_table t, const ix_val *v)
{
	sqlite3_stmt *st = ((ins *)ctx)->st[t];
	for (int c = 0; c < st__ix_table_ncols[t]; c++) {
		if (v[c].is_int)
			sqlite3_bind_int64(st, c + 1, v[c].i);
		else if (v[c].s)
			sqlite3_bind_text(st, c + 1, v[c].s, (int)v[c].len, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, c + 1);
	}
	return step_reset(st) ? ST_EIO : 0;
}

static int prepare_all(st_index *ix, ins *I)
{
	for (int t = 0; t < IX_NTABLES; t++) {
		char sql[200];
		int n = snprintf(sql, sizeof(sql), "INSERT INTO %s VALUES (", st__ix_table_names[t]);
		for (int c = 0; c < st__ix_table_ncols[t]; c++)
			n += snprintf(sql + n, sizeof(sql) - (size_t)n, "%s?", c ? "," : "");
		snprintf(sql + n, sizeof(sql) - (size_t)n, ")");
		if (sqlite3_prepare_v2(ix->db, sql, -1, &I->st[t], NULL) != SQLITE_OK)
			return -1;
	}
	return 0;
}

static void finalize_all(ins *I)
{
	for (int t = 0; t < IX_NTABLES; t++)
		sqlite3_finalize(I->st[t]);
}

static int delete_stack_rows(st_index *ix, sqlite3_int64 sid)
{
	for (int k = 0; k < IX_NTABLES; k++) {
		char sql[96];
		snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE stack_id=%lld",
			 st__ix_table_names[k], (long long)sid);
		if (exec(ix, sql, NULL))
			return -1;
	}
	return 0;
}

/* The stack's id, 0 when it has none, -1 when the index cannot be read. */
static sqlite3_int64 stack_id(st_index *ix, const char *qname)
{
	sqlite3_stmt *st;
	sqlite3_int64 id = 0;
	int rc;
	if (sqlite3_prepare_v2(ix->db, "SELECT id FROM stacks WHERE qname=?", -1, &st, NULL))
		return -1;
	bind_text(st, 1, qname);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	else if (rc != SQLITE_DONE)
		id = -1;
	sqlite3_finalize(st);
	return id;
}

static int write_stack(st_index *ix, const char *qname, const char *path, st_state *s,
		       long long size, long long mtime_ns, const char *sha, const char *etag,
		       st_error *err)
{
	ins I = {0};
	json_t *res = st_state_resources(s, 0);
	int rc = ST_EIO;
	char stamp[40];
	char *stk = NULL, *proj = NULL;
	sqlite3_stmt *up = NULL;
	sqlite3_int64 sid;
	st_error nerr;

	if ((rc = exec(ix, "BEGIN IMMEDIATE", err)) != ST_OK)
		return rc;
	sid = stack_id(ix, qname);
	if (sid < 0 || (sid && delete_stack_rows(ix, sid))) {
		rc = sql_err(ix, err, "cannot clear the stack's rows");
		goto rollback;
	}
	/* a state without names is indexed without them */
	st_error_clear(&nerr);
	if (st_stack_names(s, NULL, path, &stk, &proj, &nerr) == ST_ENOMEM) {
		rc = st__err_copy(err, &nerr);
		goto rollback;
	}
	st_now_rfc3339(stamp, sizeof(stamp));
	if (sqlite3_prepare_v2(ix->db,
			       "INSERT INTO stacks (qname,project,stack,path,size,mtime_ns,sha256,"
			       "version,envelope,resources,indexed_at,etag) VALUES "
			       "(?,?,?,?,?,?,?,?,?,?,?,?)"
			       " ON CONFLICT(qname) DO UPDATE SET project=excluded.project,"
			       " stack=excluded.stack, path=excluded.path, size=excluded.size,"
			       " mtime_ns=excluded.mtime_ns, sha256=excluded.sha256,"
			       " version=excluded.version, envelope=excluded.envelope,"
			       " resources=excluded.resources, indexed_at=excluded.indexed_at,"
			       " etag=excluded.etag",
			       -1, &up, NULL)) {
		rc = sql_err(ix, err, "cannot prepare");
		goto rollback;
	}
	bind_text(up, 1, qname);
	bind_text(up, 2, proj);
	bind_text(up, 3, stk);
	bind_text(up, 4, path);
	sqlite3_bind_int64(up, 5, size);
	sqlite3_bind_int64(up, 6, mtime_ns);
	bind_text(up, 7, sha);
	sqlite3_bind_int(up, 8, st_state_version(s));
	bind_text(up, 9, st_state_envelope(s) == ST_ENVELOPE_EXPORT ? "export" : "checkpoint");
	sqlite3_bind_int64(up, 10, (sqlite3_int64)json_array_size(res));
	bind_text(up, 11, stamp);
	bind_text(up, 12, etag && *etag ? etag : NULL);
	if (sqlite3_step(up) != SQLITE_DONE) {
		rc = sql_err(ix, err, "cannot record the stack");
		goto rollback;
	}
	if ((sid = stack_id(ix, qname)) <= 0 || prepare_all(ix, &I)) {
		rc = sql_err(ix, err, "cannot prepare");
		goto rollback;
	}
	if ((rc = st__ix_rows(s, (long long)sid, sqlite_row, &I)) != 0) {
		rc = rc == ST_ENOMEM ? st__err(err, ST_ENOMEM, "out of memory")
				     : sql_err(ix, err, "cannot record a resource");
		goto rollback;
	}
	finalize_all(&I);
	memset(&I, 0, sizeof(I)); /* finalized: a failed COMMIT below must not do it again */
	sqlite3_finalize(up);
	up = NULL;
	st__crash_point("index", 1);
	if ((rc = exec(ix, "COMMIT", err)) != ST_OK)
		goto rollback;
	goto out;
rollback:
	finalize_all(&I);
	sqlite3_finalize(up);
	exec(ix, "ROLLBACK", NULL);
out:
	free(stk);
	free(proj);
	return rc;
}

int st_index_update_state(st_index *ix, const char *qname, const char *path, st_state *s,
			  st_error *err)
{
	ST_ASSERT_ARG(ix);
	ST_ASSERT_ARG(s);
	struct stat sb;
	long long size = -1, mt = 0;
	int rc = writable(ix, err);
	if (ix->pg)
		return st__ixpg_update_state(ix->pg, qname, path, s, err);
	if (rc != ST_OK)
		return rc;
	if (path && stat(path, &sb) == 0) {
		size = sb.st_size;
		mt = (long long)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec;
	}
	return write_stack(ix, qname, path, s, size, mt, NULL, NULL, err);
}

static int remove_stack(st_index *ix, const char *qname)
{
	sqlite3_int64 sid = stack_id(ix, qname);
	char sql[96];
	if (sid <= 0)
		return sid < 0 ? -1 : 0;
	if (exec(ix, "BEGIN IMMEDIATE", NULL))
		return -1;
	snprintf(sql, sizeof(sql), "DELETE FROM stacks WHERE id=%lld", (long long)sid);
	if (delete_stack_rows(ix, sid) || exec(ix, sql, NULL)) {
		exec(ix, "ROLLBACK", NULL);
		return -1;
	}
	return exec(ix, "COMMIT", NULL) ? -1 : 0;
}

/* A stack that cannot be indexed: a failure of its own, its rows dropped. */
static int stack_failed(st_index *ix, const char *qname, st_index_stats *stats,
			st_problems *failures, const char *rule, const char *msg, st_error *err)
{
	stats->failed++;
	if (st_problems_add(failures, ST_SEV_ERROR, rule, "", NULL, "%s", msg) != ST_OK)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (remove_stack(ix, qname) != 0)
		return sql_err(ix, err, "cannot remove a stack");
	return ST_OK;
}

/* What the index holds of a stack: -2 where it has nothing (or the stack was elsewhere). */
typedef struct known {
	long long size, mtime_ns;
	char sha[65], etag[72];
} known;

static int known_get(st_index *ix, const char *qname, const char *where, known *k, st_error *err)
{
	sqlite3_stmt *q;
	int rc;
	k->size = k->mtime_ns = -2;
	k->sha[0] = k->etag[0] = '\0';
	if (sqlite3_prepare_v2(ix->db, "SELECT size, mtime_ns, sha256, etag, path FROM stacks "
				"WHERE qname=?", -1, &q, NULL) != SQLITE_OK)
		return sql_err(ix, err, "cannot read the index");
	bind_text(q, 1, qname);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		const char *p = (const char *)sqlite3_column_text(q, 4);
		if (p && !strcmp(p, where)) {
			k->size = sqlite3_column_int64(q, 0);
			k->mtime_ns = sqlite3_column_int64(q, 1);
			if (sqlite3_column_text(q, 2))
				snprintf(k->sha, sizeof(k->sha), "%s", sqlite3_column_text(q, 2));
			if (sqlite3_column_text(q, 3))
				snprintf(k->etag, sizeof(k->etag), "%s", sqlite3_column_text(q, 3));
		}
	}
	sqlite3_finalize(q);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? ST_OK
						      : sql_err(ix, err, "cannot read the index");
}

/* The state in data[0..len) (compressed or not), for a stack of a store. */
static int load_object(st_state **out, const char *data, size_t len, const char *where,
		       st_error *err)
{
	char *plain = NULL;
	size_t plen = 0;
	int rc = st_file_decompress(data, len, 0, where, &plain, &plen, NULL, err);
	if (rc == ST_OK)
		rc = st_state_load_buffer(out, plain, plen, where, NULL, err);
	free(plain);
	return rc;
}

/* Indexes one stack's object unless unchanged (a backend's stack in any store, the file store
 * included, or a file named by its path in the file store of its directory). ST_OK, also when
 * the stack failed (reported in `failures`); another code (err set) when the update cannot go
 * on: out of memory, an index that cannot be written. The listing's size, time and tag decide
 * without a read (a time of whole seconds, as Azure's, cannot tell two writes within one
 * second apart: the tag can); a changed listing reads the object, and the same bytes (SHA-256)
 * only update what the index knows of it. What is kept is the listing's time and tag. */
static int update_one_store(st_index *ix, st_store *store, const st_stack_info *in,
			    st_index_stats *stats, st_problems *failures, st_error *err)
{
	char *where = st__store_where(store, in->key), *data = NULL, sha[65], msg[2600];
	size_t len = 0;
	st_store_info info;
	st_state *s = NULL;
	st_error lerr;
	known k;
	int rc;

	st_error_clear(&lerr);
	if (!where)
		return st__err(err, ST_ENOMEM, "out of memory");
	if ((rc = known_get(ix, in->qname, where, &k, err)) != ST_OK)
		goto out;
	/* a listing without sizes (postgres://) relies on the etag */
	if ((in->size >= 0 ? k.size == in->size : in->etag[0] != '\0') &&
	    k.mtime_ns == in->mtime_ns && !strcmp(k.etag, in->etag)) {
		stats->unchanged++;
		goto out;
	}
	if ((rc = st_store_read(store, in->key, 0, &data, &len, &info, &lerr)) == ST_OK)
		st_sha256_hex(data, len, sha);
	if (rc == ST_OK && k.size == (long long)len && !strcmp(k.sha, sha)) {
		/* the same bytes, written again */
		char *sql = sqlite3_mprintf("UPDATE stacks SET mtime_ns=%lld, etag=%Q WHERE qname=%Q",
					    in->mtime_ns, in->etag[0] ? in->etag : NULL,
					    in->qname);
		rc = sql ? exec(ix, sql, err) : st__err(err, ST_ENOMEM, "out of memory");
		sqlite3_free(sql);
		if (rc == ST_OK)
			stats->unchanged++;
		goto out;
	}
	if (rc == ST_OK)
		rc = load_object(&s, data, len, where, &lerr);
	if (rc == ST_ENOMEM) {
		rc = st__err_copy(err, &lerr);
		goto out;
	}
	if (rc != ST_OK) {
		snprintf(msg, sizeof(msg), "%s: %s; its rows were removed from the index", in->qname,
			 lerr.message);
		rc = stack_failed(ix, in->qname, stats, failures, "index/unreadable", msg, err);
		goto out;
	}
	/* the time and tag the listing gave, which the next update compares: a read may tell
	 * them otherwise (S3's and GCS's Last-Modified has whole seconds, their listings
	 * milliseconds) */
	rc = write_stack(ix, in->qname, where, s, info.size >= 0 ? info.size : (long long)len,
			 in->mtime_ns, sha, in->etag, &lerr);
	if (rc == ST_OK) {
		stats->parsed++;
		stats->resources += json_array_size(st_state_resources(s, 0));
	} else if (rc == ST_ENOMEM) {
		st__err_copy(err, &lerr);
	} else {
		stats->failed++;
		rc = st_problems_add(failures, ST_SEV_ERROR, "index/write", "", NULL, "%s: %s",
				     in->qname, lerr.message) == ST_OK
			     ? ST_OK
			     : st__err(err, ST_ENOMEM, "out of memory");
	}
out:
	st_state_free(s);
	free(data);
	free(where);
	return rc;
}

/* A stack of Pulumi Cloud: its listing has no size or tag, so its export is read every time,
 * and the same bytes (SHA-256) only update what the index knows of it. */
static int update_one_cloud(st_index *ix, st_backend *b, const st_stack_info *in,
			    st_index_stats *stats, st_problems *failures, st_error *err)
{
	char *where = NULL, *data = NULL, sha[65], msg[2600];
	size_t len = 0;
	st_state *s = NULL;
	st_error lerr;
	known k;
	int rc;

	st_error_clear(&lerr);
	rc = st__backend_export(b, in->qname, 0, &data, &len, &where, &lerr);
	if (rc == ST_OK) {
		st_sha256_hex(data, len, sha);
		if ((rc = known_get(ix, in->qname, where, &k, err)) != ST_OK)
			goto out;
		if (k.size == (long long)len && !strcmp(k.sha, sha)) {
			stats->unchanged++;
			goto out;
		}
		rc = st_state_load_buffer(&s, data, len, where, NULL, &lerr);
	}
	if (rc == ST_ENOMEM) {
		rc = st__err_copy(err, &lerr);
		goto out;
	}
	if (rc != ST_OK) {
		snprintf(msg, sizeof(msg), "%s: %s; its rows were removed from the index", in->qname,
			 lerr.message);
		rc = stack_failed(ix, in->qname, stats, failures, "index/unreadable", msg, err);
		goto out;
	}
	rc = write_stack(ix, in->qname, where, s, (long long)len, in->mtime_ns, sha, "", &lerr);
	if (rc == ST_OK) {
		stats->parsed++;
		stats->resources += json_array_size(st_state_resources(s, 0));
	} else if (rc == ST_ENOMEM) {
		st__err_copy(err, &lerr);
	} else {
		stats->failed++;
		rc = st_problems_add(failures, ST_SEV_ERROR, "index/write", "", NULL, "%s: %s",
				     in->qname, lerr.message) == ST_OK
			     ? ST_OK
			     : st__err(err, ST_ENOMEM, "out of memory");
	}
out:
	st_state_free(s);
	free(data);
	free(where);
	return rc;
}

/* A file named by its path: an object of the file store of its directory. */
static int update_file(st_index *ix, const char *path, st_index_stats *stats,
		       st_problems *failures, st_error *err)
{
	st_stack_info in;
	st_store_info si;
	st_store *fs = NULL;
	char *key = NULL, msg[2600];
	st_error lerr;
	int rc;

	memset(&in, 0, sizeof(in));
	st_error_clear(&lerr);
	if ((rc = st_store_open_file(&fs, &key, path, &lerr)) == ST_OK)
		rc = st_store_stat(fs, key, &si, &lerr);
	if (rc == ST_OK) {
		in.qname = (char *)path;
		in.key = key;
		in.size = si.size;
		in.mtime_ns = si.mtime_ns;
		memcpy(in.etag, si.etag, sizeof(in.etag));
		rc = update_one_store(ix, fs, &in, stats, failures, err);
	} else if (rc == ST_ENOMEM) {
		rc = st__err_copy(err, &lerr);
	} else {
		snprintf(msg, sizeof(msg), "%s: %s; its rows were removed from the index", path,
			 lerr.message);
		rc = stack_failed(ix, path, stats, failures, "index/unreadable", msg, err);
	}
	free(key);
	st_store_free(fs);
	return rc;
}

/* Drops the stacks of `store` (NULL: any stack) not in `keep` (qnames). */
static int prune(st_index *ix, const st_store *store, st_strmap *keep, st_index_stats *stats,
		 st_error *err)
{
	sqlite3_stmt *q;
	char **gone = NULL;
	size_t n = 0;
	ix_scope sc;
	int rc = ST_OK, src;

	if (st__ix_scope_init(&sc, store) != ST_OK)
		return st__err(err, ST_ENOMEM, "out of memory");
	if ((src = sqlite3_prepare_v2(ix->db, "SELECT qname, path FROM stacks", -1, &q, NULL))) {
		st__ix_scope_free(&sc);
		return sql_err(ix, err, "cannot list the stacks");
	}
	while (rc == ST_OK && (src = sqlite3_step(q)) == SQLITE_ROW) {
		const char *qn = (const char *)sqlite3_column_text(q, 0);
		char **g;
		if (!qn || st_strmap_get(keep, qn) ||
		    !st__ix_in_scope(&sc, (const char *)sqlite3_column_text(q, 1)))
			continue;
		if (!(g = realloc(gone, (n + 1) * sizeof(*g))) || !(g[n] = st_strdup(qn))) {
			gone = g ? g : gone;
			rc = st__err(err, ST_ENOMEM, "out of memory");
			break;
		}
		gone = g;
		n++;
	}
	if (rc == ST_OK && src != SQLITE_DONE)
		rc = sql_err(ix, err, "cannot list the stacks");
	sqlite3_finalize(q);
	st__ix_scope_free(&sc);
	for (size_t i = 0; i < n; i++) {
		if (rc == ST_OK) {
			if (remove_stack(ix, gone[i]) == 0)
				stats->removed++;
			else
				rc = sql_err(ix, err, "cannot remove a stack");
		}
		free(gone[i]);
	}
	free(gone);
	return rc;
}

/* Indexes the stacks of a backend (infos, n) or the files paths[0..n): the work of
 * st_index_update_backend and st_index_update_files. A stack that cannot be read is a failure
 * of its own; running out of memory (or an index that cannot be written) ends the update. */
static int update_many(st_index *ix, const st_stack_info *infos, st_store *store,
		       st_backend *cloud, const char *const *paths, size_t n, int do_prune,
		       st_index_progress_fn progress, void *pctx, st_index_stats *stats,
		       st_problems *failures, st_error *err)
{
	st_index_stats local = {0};
	st_problems nowhere = {0};
	st_strmap keep;
	int created, rc = ST_OK;

	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	st_strmap_init(&keep);
	stats->stacks = n;
	for (size_t i = 0; i < n && rc == ST_OK; i++) {
		const char *qname = infos ? infos[i].qname : paths[i];
		if (!st_strmap_put(&keep, qname, &created)) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			break;
		}
		/* through the store only: a backend's stack from its listing, a file from the
		 * file store of its directory */
		if (infos && cloud)
			rc = update_one_cloud(ix, cloud, &infos[i], stats,
					      failures ? failures : &nowhere, err);
		else if (infos)
			rc = update_one_store(ix, store, &infos[i], stats,
					      failures ? failures : &nowhere, err);
		else
			rc = update_file(ix, paths[i], stats, failures ? failures : &nowhere, err);
		if (rc == ST_OK && progress)
			progress(pctx, i + 1, n, stats->resources);
	}
	if (rc == ST_OK && do_prune)
		rc = prune(ix, infos ? store : NULL, &keep, stats, err);
	/* the planner's statistics (sampled: quick at any size), so that a query starts from its
	 * most selective index (a provider's package, not every resource of its stacks) */
	if (rc == ST_OK && (stats->parsed || stats->removed))
		exec(ix, "PRAGMA analysis_limit=1000; ANALYZE;", NULL);
	st_strmap_free(&keep);
	st_problems_clear(&nowhere);
	return rc;
}

int st_index_update_backend(st_index *ix, st_backend *b, st_index_progress_fn progress,
			    void *pctx, st_index_stats *stats, st_problems *failures, st_error *err)
{
	ST_ASSERT_ARG(ix);
	ST_ASSERT_ARG(b);
	st_stack_info *infos = NULL;
	size_t n = 0;
	int rc = writable(ix, err);

	if (ix->pg)
		return st__ixpg_update_backend(ix->pg, b, progress, pctx, stats, failures, err);
	int cloud = !strcmp(st_backend_kind(b), "cloud");
	if (rc == ST_OK && !cloud && !st_backend_store(b))
		rc = st__err(err, ST_EUNSUPPORTED, "backend '%s' keeps its stacks in no store: "
						   "nothing to index", st_backend_url(b));
	if (rc == ST_OK)
		rc = st_backend_list(b, &infos, &n, err);
	if (rc == ST_OK)
		rc = update_many(ix, infos, st_backend_store(b), cloud ? b : NULL, NULL, n, 1,
				 progress, pctx, stats, failures, err);
	st_stack_infos_free(infos, n);
	return rc;
}

int st_index_update_stack(st_index *ix, st_backend *b, const char *qname,
			  st_index_stats *stats, st_problems *failures, st_error *err)
{
	ST_ASSERT_ARG(ix);
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(qname);
	st_index_stats local = {0};
	st_stack_info in;
	st_store_info si;
	st_store *store = st_backend_store(b);
	st_error lerr;
	char *key = NULL;
	int exists = 0, rc = ix->pg ? ST_OK : writable(ix, err);

	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	memset(&in, 0, sizeof(in));
	st_error_clear(&lerr);
	if (rc == ST_OK && !store)
		rc = st__err(err, ST_EUNSUPPORTED, "backend '%s' keeps its stacks in no store: "
						   "nothing to index", st_backend_url(b));
	if (rc == ST_OK)
		rc = st_backend_stack_key(b, qname, &key, &exists, err);
	/* the object as a listing would give it; gone since: its rows go */
	if (rc == ST_OK && exists && (rc = st_store_stat(store, key, &si, &lerr)) != ST_OK) {
		if (rc == ST_ENOTFOUND)
			exists = 0, rc = ST_OK;
		else
			st__err_copy(err, &lerr);
	}
	if (rc == ST_OK && exists) {
		in.qname = (char *)qname;
		in.key = key;
		in.size = si.size;
		in.mtime_ns = si.mtime_ns;
		memcpy(in.etag, si.etag, sizeof(in.etag));
	}
	if (rc == ST_OK && ix->pg)
		rc = st__ixpg_update_one(ix->pg, b, qname, exists ? &in : NULL, stats, failures, err);
	else if (rc == ST_OK && exists)
		rc = update_many(ix, &in, store, NULL, NULL, 1, 0, NULL, NULL, stats, failures, err);
	else if (rc == ST_OK) {
		stats->stacks = 1;
		if (remove_stack(ix, qname) != 0)
			rc = sql_err(ix, err, "cannot remove a stack");
		else
			stats->removed++;
	}
	free(key);
	return rc;
}

int st_index_update_files(st_index *ix, const char *const *paths, size_t n, int do_prune,
			  st_index_progress_fn progress, void *pctx, st_index_stats *stats,
			  st_problems *failures, st_error *err)
{
	ST_ASSERT_ARG(ix);
	int rc = writable(ix, err);
	if (ix->pg)
		return st__ixpg_update_files(ix->pg, paths, n, do_prune, progress, pctx, stats,
					     failures, err);
	if (rc != ST_OK)
		return rc;
	return update_many(ix, NULL, NULL, NULL, paths, n, do_prune, progress, pctx, stats,
			   failures, err);
}

/* ---- queries (SQLite's in query.c, PostgreSQL's in pg.c) ---- */

int st_index_sql(st_index *ix, const char *sql, st_index_row_fn row, void *ctx, st_error *err)
{
	ST_ASSERT_ARG(ix);
	if (ix->pg)
		return st__ixpg_sql(ix->pg, sql, row, ctx, err);
	return st__ixsqlite_sql(ix->db, ix->path, sql, row, ctx, err);
}

int st_index_query_run(st_index *ix, const st_index_query *q, st_index_row_fn row, void *ctx,
		       st_error *err)
{
	ST_ASSERT_ARG(ix);
	int rc;
	if ((rc = st__opts_version(q->version, ST_INDEX_QUERY_VERSION, "st_index_query", err)))
		return rc;
	if (ix->pg)
		return st__ixpg_query(ix->pg, q, row, ctx, err);
	return st__ixsqlite_query(ix->db, ix->path, q, row, ctx, err);
}

const char *st_index_name(const st_index *ix)
{
	ST_ASSERT_ARG(ix);
	return ix->pg ? st__ixpg_name(ix->pg) : ix->path;
}
