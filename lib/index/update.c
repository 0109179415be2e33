/*
 * Writing the SQLite index: a stack's rows, whole or not at all. An update compares the
 * backend's listing with what the index holds (one SELECT, in memory) and reads only what
 * changed; the stacks it writes go in batches, one transaction each, every stack a savepoint
 * of it (a stack that fails is rolled back alone; a reader sees a batch whole or not at all, so
 * never half a stack). Statements are prepared once per open and reused.
 */
#include "ix.h"
#include "store/store_impl.h"

#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

/* Stacks per batch transaction: a full build of 10,000 stacks commits 50 times, and another
 * updater waits at most about a second for the lock. */
#define BATCH_STACKS 200

/* The index was found damaged before a write and rebuilt empty: start the update again. */
#define IX_REBUILT (-1000)

/* The prepared statements of st_index.stmt. */
enum {
	S_INS = 0,          /* + table: its INSERT */
	S_DEL = IX_NTABLES, /* + table: DELETE ... WHERE stack_id=? */
	S_SID = 2 * IX_NTABLES,
	S_UPSERT,
	S_DELSTACK,
	S_TOUCH,
	S_CNT_SUB,
	S_CNT_ADD,
	S_CNT_GC,
	S_END
};

/* A resource that --duplicate-ids counts (id_counts keeps how many of each type and ID). */
#define DUP_ROW "type IS NOT NULL AND custom <> 0 AND id IS NOT NULL AND id != '' AND \"delete\" = 0"

static const char *const fixed_sql[S_END - S_SID] = {
	"SELECT id FROM stacks WHERE qname=?",
	"INSERT INTO stacks (qname,project,stack,path,size,mtime_ns,sha256,version,envelope,"
	"resources,indexed_at,etag) VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(qname) DO UPDATE "
	"SET project=excluded.project, stack=excluded.stack, path=excluded.path, "
	"size=excluded.size, mtime_ns=excluded.mtime_ns, sha256=excluded.sha256, "
	"version=excluded.version, envelope=excluded.envelope, resources=excluded.resources, "
	"indexed_at=excluded.indexed_at, etag=excluded.etag",
	"DELETE FROM stacks WHERE id=?",
	"UPDATE stacks SET mtime_ns=?, etag=? WHERE qname=?",
	"UPDATE id_counts SET n = n - d.c FROM (SELECT type, id, count(*) AS c FROM resource_rows "
	"WHERE stack_id = ?1 AND " DUP_ROW " GROUP BY type, id) AS d WHERE id_counts.type = d.type "
	"AND id_counts.id = d.id",
	"INSERT INTO id_counts (type, id, n) SELECT type, id, count(*) FROM resource_rows WHERE "
	"stack_id = ?1 AND " DUP_ROW " GROUP BY type, id ON CONFLICT (type, id) DO UPDATE SET "
	"n = n + excluded.n",
	"DELETE FROM id_counts WHERE n <> 1 AND n <= 0",
};

static int sql_err(st_index *ix, st_error *err, const char *what)
{
	return st__ixsqlite_err(ix->db, ix->path, err, what);
}

static int exec(st_index *ix, const char *sql, st_error *err)
{
	return st__ixs_exec(ix, sql, err);
}

/* The statement k, prepared on first use (reset after each use by its caller). */
static sqlite3_stmt *stmt(st_index *ix, int k)
{
	char sql[400];
	if (ix->stmt[k])
		return ix->stmt[k];
	if (k < S_DEL) {
		int n = snprintf(sql, sizeof(sql), "INSERT INTO %s VALUES (", st__ix_table_names[k]);
		for (int c = 0; c < st__ix_table_ncols[k]; c++)
			n += snprintf(sql + n, sizeof(sql) - (size_t)n, "%s?", c ? "," : "");
		snprintf(sql + n, sizeof(sql) - (size_t)n, ")");
	} else if (k < S_SID) {
		snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE stack_id=?",
			 st__ix_table_names[k - S_DEL]);
	}
	if (sqlite3_prepare_v3(ix->db, k < S_SID ? sql : fixed_sql[k - S_SID], -1,
			       SQLITE_PREPARE_PERSISTENT, &ix->stmt[k], NULL) != SQLITE_OK)
		return NULL;
	return ix->stmt[k];
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, i);
}

/* Runs a statement that returns no rows: 0, or -1 (the connection's error says why). */
static int step_reset(sqlite3_stmt *s)
{
	int rc = s ? sqlite3_step(s) : SQLITE_ERROR;
	if (s) {
		sqlite3_reset(s);
		sqlite3_clear_bindings(s);
	}
	return rc == SQLITE_DONE ? 0 : -1;
}

/* Runs statement k with the stack's id as its one parameter. */
static int step_sid(st_index *ix, int k, sqlite3_int64 sid)
{
	sqlite3_stmt *s = stmt(ix, k);
	if (s)
		sqlite3_bind_int64(s, 1, sid);
	return step_reset(s);
}

/* One row of a stack (st__ix_rows) into its table. */
static int sqlite_row(void *ctx, ix_table t, const ix_val *v)
{
	sqlite3_stmt *st = stmt(ctx, S_INS + (int)t);
	for (int c = 0; st && c < st__ix_table_ncols[t]; c++) {
		if (v[c].is_int)
			sqlite3_bind_int64(st, c + 1, v[c].i);
		else if (v[c].s)
			sqlite3_bind_text(st, c + 1, v[c].s, (int)v[c].len, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, c + 1);
	}
	return step_reset(st) ? ST_EIO : 0;
}

/* The stack's id, 0 when it has none, -1 when the index cannot be read. */
static sqlite3_int64 stack_id(st_index *ix, const char *qname)
{
	sqlite3_stmt *st = stmt(ix, S_SID);
	sqlite3_int64 id = -1;
	int rc;
	if (!st)
		return -1;
	bind_text(st, 1, qname);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	else if (rc == SQLITE_DONE)
		id = 0;
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return id;
}

/* A stack's rows gone, and its resources no longer counted in id_counts. */
static int delete_stack_rows(st_index *ix, sqlite3_int64 sid)
{
	if (step_sid(ix, S_CNT_SUB, sid))
		return -1;
	for (int k = 0; k < IX_NTABLES; k++)
		if (step_sid(ix, S_DEL + k, sid))
			return -1;
	return step_reset(stmt(ix, S_CNT_GC));
}

/* A first build of many stacks drops the secondary indexes and keeps no counts while it
 * writes (each row into a few indexes at random places, then evicted and read again, was most
 * of a build's time); its end makes them in one pass (st__ixs_bulk_end). */
#define BULK_STACKS 100

static const char *const bulk_drop =
	"INSERT OR REPLACE INTO meta VALUES ('bulk', '1');"
	"DROP INDEX IF EXISTS urns_urn; DROP INDEX IF EXISTS resource_rows_urn;"
	"DROP INDEX IF EXISTS resource_rows_type_id; DROP INDEX IF EXISTS resource_rows_id;"
	"DROP INDEX IF EXISTS resource_rows_import_id; DROP INDEX IF EXISTS resource_rows_provider;"
	"DROP INDEX IF EXISTS edge_rows_to; DROP INDEX IF EXISTS providers_ref;"
	"DROP INDEX IF EXISTS providers_pkg; DROP INDEX IF EXISTS pending_urn;"
	"DROP INDEX IF EXISTS secrets_urn; DROP INDEX IF EXISTS providers_stack;"
	"DROP INDEX IF EXISTS pending_stack; DROP INDEX IF EXISTS secrets_stack;"
	"DROP INDEX IF EXISTS id_counts_dup; DROP INDEX IF EXISTS resource_rows_protect;";

int st__ixs_bulk_end(st_index *ix, st_error *err)
{
	char *schema = st__ix_schema_sql(0);
	int rc;
	if (!schema)
		return st__err(err, ST_ENOMEM, "out of memory");
	/* the counts first: one scan of the table and a sort, where with (type, id) indexed
	 * SQLite walks that index and seeks each row in the table (at a million resources
	 * 1.9 s of CPU against 3.2 s) */
	rc = exec(ix, "DELETE FROM id_counts; INSERT INTO id_counts (type, id, n) SELECT type, id, "
		      "count(*) FROM resource_rows WHERE " DUP_ROW " GROUP BY type, id;", err);
	if (rc == ST_OK)
		rc = exec(ix, schema, err);
	free(schema);
	if (rc == ST_OK)
		rc = exec(ix, "DELETE FROM meta WHERE key = 'bulk';", err);
	ix->bulk = 0;
	return rc;
}

/* Before a write: the file checked (once per open), and in an update's batch its transaction
 * begun. ST_OK, IX_REBUILT, or an error. */
static int will_write(st_index *ix, st_error *err)
{
	int rebuilt = 0, rc;
	if (!ix->sound) {
		if ((rc = st__ixs_sound(ix, &rebuilt, err)) != ST_OK)
			return rc;
		if (rebuilt)
			return IX_REBUILT;
	}
	if (ix->batch == 1) {
		if ((rc = exec(ix, "BEGIN IMMEDIATE", err)) != ST_OK)
			return rc;
		ix->batch = 2;
	}
	return ST_OK;
}

/* One stack's change: its own transaction, or a savepoint of the batch's. */
static int txn_begin(st_index *ix, st_error *err)
{
	int rc = will_write(ix, err);
	return rc != ST_OK ? rc : exec(ix, ix->batch ? "SAVEPOINT stack" : "BEGIN IMMEDIATE", err);
}

static int txn_commit(st_index *ix, st_error *err)
{
	return exec(ix, ix->batch ? "RELEASE stack" : "COMMIT", err);
}

static void txn_rollback(st_index *ix)
{
	exec(ix, ix->batch ? "ROLLBACK TO stack; RELEASE stack" : "ROLLBACK", NULL);
}

/* The stacks row; *sid its id. */
static int record_stack(st_index *ix, const char *qname, const char *path, st_state *s,
			long long size, long long mtime_ns, const char *sha, const char *etag,
			sqlite3_int64 *sid, st_error *err)
{
	sqlite3_stmt *up = stmt(ix, S_UPSERT);
	char stamp[40], *stk = NULL, *proj = NULL;
	st_error nerr;
	int rc = ST_OK;

	/* a state without names is indexed without them */
	st_error_clear(&nerr);
	if (st_stack_names(s, NULL, path, &stk, &proj, &nerr) == ST_ENOMEM)
		return st__err_copy(err, &nerr);
	st_now_rfc3339(stamp, sizeof(stamp));
	if (up) {
		bind_text(up, 1, qname);
		bind_text(up, 2, proj);
		bind_text(up, 3, stk);
		bind_text(up, 4, path);
		sqlite3_bind_int64(up, 5, size);
		sqlite3_bind_int64(up, 6, mtime_ns);
		bind_text(up, 7, sha);
		sqlite3_bind_int(up, 8, st_state_version(s));
		bind_text(up, 9, st_state_envelope(s) == ST_ENVELOPE_EXPORT ? "export" : "checkpoint");
		sqlite3_bind_int64(up, 10, (sqlite3_int64)json_array_size(st_state_resources(s, 0)));
		bind_text(up, 11, stamp);
		bind_text(up, 12, etag && *etag ? etag : NULL);
	}
	if (step_reset(up))
		rc = sql_err(ix, err, "cannot record the stack");
	else if (!*sid)
		*sid = sqlite3_last_insert_rowid(ix->db);
	free(stk);
	free(proj);
	return rc;
}

static int write_stack(st_index *ix, const char *qname, const char *path, st_state *s,
		       long long size, long long mtime_ns, const char *sha, const char *etag,
		       st_error *err)
{
	sqlite3_int64 sid;
	int rc;

	if ((rc = txn_begin(ix, err)) != ST_OK)
		return rc;
	sid = stack_id(ix, qname);
	if (sid < 0 || (sid && delete_stack_rows(ix, sid))) {
		rc = sql_err(ix, err, "cannot clear the stack's rows");
		goto rollback;
	}
	if ((rc = record_stack(ix, qname, path, s, size, mtime_ns, sha, etag, &sid, err)) != ST_OK)
		goto rollback;
	if ((rc = st__ix_rows(s, (long long)sid, sqlite_row, ix)) != 0) {
		rc = rc == ST_ENOMEM ? st__err(err, ST_ENOMEM, "out of memory")
				     : sql_err(ix, err, "cannot record a resource");
		goto rollback;
	}
	if (!ix->bulk && step_sid(ix, S_CNT_ADD, sid)) {
		rc = sql_err(ix, err, "cannot count the stack's IDs");
		goto rollback;
	}
	st__crash_point("index", 1);
	if ((rc = txn_commit(ix, err)) != ST_OK)
		goto rollback;
	return ST_OK;
rollback:
	txn_rollback(ix);
	return rc;
}

int st_index_update_state(st_index *ix, const char *qname, const char *path, st_state *s,
			  st_error *err)
{
	ST_ASSERT_ARG(ix);
	ST_ASSERT_ARG(qname);
	ST_ASSERT_ARG_AS(s, "state");
	struct stat sb;
	long long size = -1, mt = 0;
	int rc = st__ixs_writable(ix, err);
	if (ix->pg)
		return st__ixpg_update_state(ix->pg, qname, path, s, err);
	if (rc != ST_OK)
		return rc;
	if (path && stat(path, &sb) == 0) {
		size = sb.st_size;
		mt = (long long)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec;
	}
	rc = write_stack(ix, qname, path, s, size, mt, NULL, NULL, err);
	/* a damaged index was rebuilt (empty) before the write: write into the new one */
	return rc == IX_REBUILT ? write_stack(ix, qname, path, s, size, mt, NULL, NULL, err) : rc;
}

/* A stack's rows removed (ST_OK when it has none), or IX_REBUILT, or an error. */
static int remove_stack(st_index *ix, const char *qname, st_error *err)
{
	sqlite3_int64 sid = stack_id(ix, qname);
	int rc;
	if (sid <= 0)
		return sid < 0 ? sql_err(ix, err, "cannot read the index") : ST_OK;
	if ((rc = txn_begin(ix, err)) != ST_OK)
		return rc;
	if (delete_stack_rows(ix, sid) || step_sid(ix, S_DELSTACK, sid)) {
		rc = sql_err(ix, err, "cannot remove a stack");
		txn_rollback(ix);
		return rc;
	}
	return txn_commit(ix, err);
}

/* A stack that cannot be indexed: a failure of its own, its rows dropped. */
static int stack_failed(st_index *ix, const char *qname, st_index_stats *stats,
			st_problems *failures, const char *rule, const char *msg, st_error *err)
{
	int rc = remove_stack(ix, qname, err);
	if (rc != ST_OK)
		return rc;
	stats->failed++;
	if (st_problems_add(failures, ST_SEV_ERROR, rule, "", NULL, "%s", msg) != ST_OK)
		return st__err(err, ST_ENOMEM, "out of memory");
	return ST_OK;
}

/* ---- one stack ---- */

/* Every BATCH_STACKS stacks written, the batch's transaction is committed. */
static int batch_step(st_index *ix, size_t *written, st_error *err)
{
	if (ix->batch != 2 || ++*written < BATCH_STACKS)
		return ST_OK;
	*written = 0;
	ix->batch = 1;
	return exec(ix, "COMMIT", err);
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

/* Is the listed object what the index holds (size, time and tag)? A listing without sizes
 * (postgres://) relies on the tag. */
static int same_listing(const known *k, const st_stack_info *in)
{
	return k && (in->size >= 0 ? k->size == in->size : in->etag[0] != '\0') &&
	       k->mtime_ns == in->mtime_ns && !strcmp(k->etag, in->etag);
}

/* The end of a stack's update once its state is read (or failed to be: lerr): its rows
 * written, or its failure recorded. */
static int finish_one(st_index *ix, const char *qname, const char *where, st_state *s, int rc,
		      st_error *lerr, long long size, long long mtime_ns, const char *sha,
		      const char *etag, st_index_stats *stats, st_problems *failures,
		      st_error *err)
{
	char msg[2600];

	if (rc == ST_ENOMEM)
		return st__err_copy(err, lerr);
	if (rc != ST_OK) {
		snprintf(msg, sizeof(msg), "%s: %s; its rows were removed from the index", qname,
			 lerr->message);
		return stack_failed(ix, qname, stats, failures, "index/unreadable", msg, err);
	}
	st_error_clear(lerr);
	rc = write_stack(ix, qname, where, s, size, mtime_ns, sha, etag, lerr);
	if (rc == ST_OK) {
		stats->parsed++;
		stats->resources += json_array_size(st_state_resources(s, 0));
		return ST_OK;
	}
	if (rc == ST_ENOMEM || rc == IX_REBUILT || (ix->batch && sqlite3_get_autocommit(ix->db)))
		/* out of memory, or the batch's transaction is gone: the update cannot go on */
		return rc == IX_REBUILT ? rc : st__err_copy(err, lerr);
	stats->failed++;
	return st_problems_add(failures, ST_SEV_ERROR, "index/write", "", NULL, "%s: %s", qname,
			       lerr->message) == ST_OK
		       ? ST_OK
		       : st__err(err, ST_ENOMEM, "out of memory");
}

/* A stack whose listing changed, read (and parsed unless its bytes are the ones the index
 * holds): on this thread, or on the second one while this one writes the stack before. */
typedef struct prep {
	const st_stack_info *in;
	const known *k;  /* what the index holds of it (from the same place), or NULL */
	char *where;     /* new */
	int rc;          /* of the read or the parse (lerr) */
	st_error lerr;
	size_t len;
	char sha[65];
	st_store_info info;
	int same;        /* the same bytes as the index holds: nothing parsed */
	int gone;        /* the object was gone when read (removed since the listing) */
	const char *other; /* another backend's stack of this name is indexed there (borrowed):
			    * not read, refused */
	st_state *s;     /* new */
} prep;

static void prep_read(st_store *store, prep *p)
{
	char *data = NULL;
	st_error_clear(&p->lerr);
	if (p->other)
		return;
	p->rc = st_store_read(store, p->in->key, 0, &data, &p->len, &p->info, &p->lerr);
	p->gone = p->rc == ST_ENOTFOUND;
	if (p->rc == ST_OK) {
		st_sha256_hex(data, p->len, p->sha);
		p->same = p->k && p->k->size == (long long)p->len && !strcmp(p->k->sha, p->sha);
		if (!p->same)
			p->rc = load_object(&p->s, data, p->len, p->where, &p->lerr);
	}
	free(data);
}

static void prep_free(prep *p)
{
	st_state_free(p->s);
	free(p->where);
	memset(p, 0, sizeof(*p));
}

/* A stack listed but gone when read (a `pulumi stack rm` since the listing): removed, as the
 * next listing would have it, with a note. */
static int stack_gone(st_index *ix, const char *qname, st_index_stats *stats, st_error *err)
{
	sqlite3_int64 sid = stack_id(ix, qname);
	int rc = sid > 0 ? remove_stack(ix, qname, err) : ST_OK;
	if (rc != ST_OK)
		return rc;
	stats->removed += sid > 0;
	st_changes_add(ix->notes, "%s: gone from the backend since it was listed (removed "
		       "meanwhile): taken as removed", qname);
	return ST_OK;
}

/* A read stack into the index: the same bytes only update what the index knows of it, else
 * its rows are written (or its failure recorded). */
static int prep_apply(st_index *ix, prep *p, st_index_stats *stats, st_problems *failures,
		      st_error *err)
{
	const st_stack_info *in = p->in;
	int rc;

	if (p->other)
		return st__ix_other_failed(in->qname, p->where, p->other, stats, failures, err);
	if (p->gone)
		return stack_gone(ix, in->qname, stats, err);
	if (p->rc == ST_OK && p->same) {
		sqlite3_stmt *t = stmt(ix, S_TOUCH);
		if ((rc = will_write(ix, err)) != ST_OK)
			return rc;
		if (t) {
			sqlite3_bind_int64(t, 1, in->mtime_ns);
			bind_text(t, 2, in->etag[0] ? in->etag : NULL);
			bind_text(t, 3, in->qname);
		}
		if (step_reset(t))
			return sql_err(ix, err, "cannot record the stack");
		stats->unchanged++;
		return ST_OK;
	}
	/* the time and tag the listing gave, which the next update compares: a read may tell
	 * them otherwise (S3's and GCS's Last-Modified has whole seconds, their listings
	 * milliseconds) */
	return finish_one(ix, in->qname, p->where, p->s, p->rc, &p->lerr,
			  p->rc == ST_OK && p->info.size >= 0 ? p->info.size : (long long)p->len,
			  in->mtime_ns, p->sha, in->etag, stats, failures, err);
}

/* Does the listing say the stack is what the index holds? Else p is made ready to read it.
 * -1 when out of memory. */
static int listed_same(st_store *store, const st_stack_info *in, known_set *ks, const char *cwd,
		       prep *p)
{
	memset(p, 0, sizeof(*p));
	p->in = in;
	if (!(p->where = st__ix_where_at(store, in->key, cwd)))
		return -1;
	p->k = st__ixs_known_of(ks, in->qname, p->where);
	if (!p->k)
		p->other = st__ixs_known_other(ks, in->qname, p->where);
	if (same_listing(p->k, in)) {
		free(p->where);
		p->where = NULL;
		return 1;
	}
	return 0;
}

/* Indexes one stack's object unless unchanged (a backend's stack in any store, the file store
 * included, or a file named by its path in the file store of its directory). ST_OK, also when
 * the stack failed (reported in `failures`); another code (err set) when the update cannot go
 * on: out of memory, an index that cannot be written (or IX_REBUILT). The listing's size, time
 * and tag decide without a read (a time of whole seconds, as Azure's, cannot tell two writes
 * within one second apart: the tag can); a changed listing reads the object, and the same
 * bytes (SHA-256) only update what the index knows of it. What is kept is the listing's time
 * and tag. */
static int update_one_store(st_index *ix, st_store *store, const st_stack_info *in,
			    known_set *ks, st_index_stats *stats, st_problems *failures,
			    st_error *err)
{
	char cwd[PATH_MAX];
	prep p;
	int rc = listed_same(store, in, ks, getcwd(cwd, sizeof(cwd)), &p);

	if (rc < 0)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (rc) {
		stats->unchanged++;
		return ST_OK;
	}
	prep_read(store, &p);
	rc = prep_apply(ix, &p, stats, failures, err);
	prep_free(&p);
	return rc;
}

/* ---- the stacks of a store read on a second thread ---- */

#define RING 4

typedef struct pipe {
	st_store *store;
	prep *jobs;          /* the stacks to read, in order */
	size_t njobs;
	size_t made, taken;  /* jobs read by the second thread, written by this one */
	size_t freed;        /* jobs freed by the second thread (their states: big trees) */
	int stop;            /* this thread gave up: the second one stops */
	pthread_mutex_t mu;
	pthread_cond_t cv;
} pipe_t;

/* Frees the jobs the first thread has written (freeing a state costs about what writing it
 * does: here, beside the writes). */
static void free_taken(pipe_t *pp, size_t taken)
{
	while (pp->freed < taken)
		prep_free(&pp->jobs[pp->freed++]);
}

static void *reader(void *arg)
{
	pipe_t *pp = arg;
	for (size_t i = 0; i < pp->njobs; i++) {
		size_t taken;
		pthread_mutex_lock(&pp->mu);
		while (!pp->stop && pp->made - pp->taken >= RING)
			pthread_cond_wait(&pp->cv, &pp->mu);
		int stop = pp->stop;
		taken = pp->taken;
		pthread_mutex_unlock(&pp->mu);
		if (stop)
			break;
		free_taken(pp, taken);
		prep_read(pp->store, &pp->jobs[i]);
		pthread_mutex_lock(&pp->mu);
		pp->made++;
		pthread_cond_broadcast(&pp->cv);
		pthread_mutex_unlock(&pp->mu);
	}
	return NULL;
}

/* The stacks jobs[0..n) (their listings changed) read and parsed on a second thread, RING
 * ahead of this one, which writes them in order. */
static int apply_piped(st_index *ix, st_store *store, prep *jobs, size_t n, size_t total,
		       st_index_progress_fn progress, void *pctx, st_index_stats *stats,
		       st_problems *failures, size_t *written, st_error *err)
{
	pipe_t pp = {store, jobs, n, 0, 0, 0, 0, PTHREAD_MUTEX_INITIALIZER,
		     PTHREAD_COND_INITIALIZER};
	st__two t = {0};
	int rc = ST_OK, two = st__two_start(&t, ST__T_INDEX, reader, &pp, 0);

	for (size_t i = 0; i < n && rc == ST_OK; i++) {
		if (two) {
			pthread_mutex_lock(&pp.mu);
			while (pp.made <= i)
				pthread_cond_wait(&pp.cv, &pp.mu);
			pthread_mutex_unlock(&pp.mu);
		} else {
			prep_read(store, &jobs[i]);
		}
		size_t before = stats->parsed + stats->failed;
		rc = prep_apply(ix, &jobs[i], stats, failures, err);
		if (!two)
			prep_free(&jobs[i]);
		if (rc == ST_OK && stats->parsed + stats->failed != before)
			rc = batch_step(ix, written, err);
		if (rc == ST_OK && progress)
			progress(pctx, stats->unchanged + stats->parsed + stats->failed, total,
				 stats->resources);
		pthread_mutex_lock(&pp.mu);
		pp.taken = i + 1;
		if (rc != ST_OK)
			pp.stop = 1;
		pthread_cond_broadcast(&pp.cv);
		pthread_mutex_unlock(&pp.mu);
	}
	st__two_join(&t);
	for (size_t i = 0; i < n; i++) /* the rest: written last, or read but not written */
		prep_free(&jobs[i]);
	pthread_mutex_destroy(&pp.mu);
	pthread_cond_destroy(&pp.cv);
	return rc;
}

/* A backend's stacks in a store: those whose listing is what the index holds are unchanged
 * (nothing read); the others are read on a second thread when worth it (st__two_worth: the
 * parse beside the writes). */
static int update_store_stacks(st_index *ix, st_store *store, const st_stack_info *infos,
			       size_t n, known_set *ks, st_index_progress_fn progress, void *pctx,
			       st_index_stats *stats, st_problems *failures, size_t *written,
			       st_error *err)
{
	prep *jobs = calloc(n ? n : 1, sizeof(*jobs));
	size_t nj = 0;
	int rc = jobs ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
	char cwd_buf[PATH_MAX];
	const char *cwd = getcwd(cwd_buf, sizeof(cwd_buf)); /* once, not per stack */

	for (size_t i = 0; i < n && rc == ST_OK; i++) {
		int same = listed_same(store, &infos[i], ks, cwd, &jobs[nj]);
		if (same < 0)
			rc = st__err(err, ST_ENOMEM, "out of memory");
		else if (same)
			stats->unchanged++;
		else
			nj++;
	}
	/* an index with no stack yet, and many to write: a first build */
	if (rc == ST_OK && ks->n == 0 && nj >= BULK_STACKS && (rc = will_write(ix, err)) == ST_OK &&
	    (rc = exec(ix, bulk_drop, err)) == ST_OK)
		ix->bulk = 1;
	if (rc == ST_OK && !st__two_worth(ST__T_INDEX, nj, 0)) {
		/* one thread, as each stack comes: progress after each */
		for (size_t i = 0; i < nj && rc == ST_OK; i++) {
			size_t before = stats->parsed + stats->failed;
			prep_read(store, &jobs[i]);
			rc = prep_apply(ix, &jobs[i], stats, failures, err);
			prep_free(&jobs[i]);
			if (rc == ST_OK && stats->parsed + stats->failed != before)
				rc = batch_step(ix, written, err);
			if (rc == ST_OK && progress)
				progress(pctx, stats->unchanged + stats->parsed + stats->failed, n,
					 stats->resources);
		}
	} else if (rc == ST_OK) {
		rc = apply_piped(ix, store, jobs, nj, n, progress, pctx, stats, failures, written,
				 err);
	}
	if (rc == ST_OK && progress)
		progress(pctx, n, n, stats->resources);
	for (size_t i = 0; jobs && i < n; i++)
		prep_free(&jobs[i]);
	free(jobs);
	return rc;
}

/* A stack of Pulumi Cloud: its listing has no size or tag, so its export is read every time,
 * and the same bytes (SHA-256) only update what the index knows of it. */
static int update_one_cloud(st_index *ix, st_backend *b, const st_stack_info *in,
			    known_set *ks, st_index_stats *stats, st_problems *failures,
			    st_error *err)
{
	char *where = NULL, *data = NULL, sha[65] = "";
	size_t len = 0;
	st_state *s = NULL;
	st_error lerr;
	const known *k;
	int rc;

	st_error_clear(&lerr);
	rc = st__backend_export(b, in->qname, 0, &data, &len, &where, &lerr);
	if (rc == ST_ENOTFOUND) { /* deleted since the listing: removed here, not pruned too */
		(void)st__ixs_known_of(ks, in->qname, "");
		rc = stack_gone(ix, in->qname, stats, err);
		goto out;
	}
	if (rc == ST_OK) {
		const char *other;
		st_sha256_hex(data, len, sha);
		k = st__ixs_known_of(ks, in->qname, where);
		if (!k && (other = st__ixs_known_other(ks, in->qname, where))) {
			rc = st__ix_other_failed(in->qname, where, other, stats, failures, err);
			goto out;
		}
		if (k && k->size == (long long)len && !strcmp(k->sha, sha)) {
			stats->unchanged++;
			goto out;
		}
		rc = st_state_load_buffer(&s, data, len, where, NULL, &lerr);
	}
	rc = finish_one(ix, in->qname, where, s, rc, &lerr, (long long)len, in->mtime_ns, sha, "",
			stats, failures, err);
out:
	st_state_free(s);
	free(data);
	free(where);
	return rc;
}

/* A file named by its path: an object of the file store of its directory. */
static int update_file(st_index *ix, const char *path, known_set *ks, st_index_stats *stats,
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
		rc = update_one_store(ix, fs, &in, ks, stats, failures, err);
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

/* ---- many stacks ---- */

/* Drops the stacks of the updating backend (ks->scope; files: any stack) the listing did not
 * name. */
static int prune(st_index *ix, known_set *ks, st_index_stats *stats, st_error *err)
{
	int rc = ST_OK;

	for (size_t i = 0; i < ks->n && rc == ST_OK; i++) {
		const known *k = &ks->v[i];
		if (k->listed || !st__ix_in_scope(&ks->scope, k->path[0] ? k->path : NULL))
			continue;
		if ((rc = remove_stack(ix, k->qname, err)) == ST_OK)
			stats->removed++;
	}
	return rc;
}

/* One pass of update_many (again after IX_REBUILT). */
static int update_pass(st_index *ix, const st_stack_info *infos, st_store *store,
		       st_backend *cloud, const char *const *paths, size_t n, int do_prune,
		       st_index_progress_fn progress, void *pctx, st_index_stats *stats,
		       st_problems *failures, st_error *err)
{
	known_set ks = {0};
	size_t written = 0, before;
	int rc;

	memset(stats, 0, sizeof(*stats));
	stats->stacks = n;
	if ((rc = st__ixs_known_load(ix, &ks, err)) != ST_OK)
		goto out;
	/* what this update may drop, and whose stacks are another backend's: a backend's (also
	 * one listing no stack), every stack for files */
	if ((cloud ? st__ix_scope_backend(&ks.scope, cloud) : st__ix_scope_init(&ks.scope, store)) !=
	    ST_OK) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	ix->batch = 1;
	if (infos && !cloud)
		rc = update_store_stacks(ix, store, infos, n, &ks, progress, pctx, stats, failures,
					 &written, err);
	for (size_t i = 0; (!infos || cloud) && i < n && rc == ST_OK; i++) {
		before = stats->parsed + stats->failed;
		/* through the store only: a backend's stack from its listing, a file from the
		 * file store of its directory */
		if (infos && cloud)
			rc = update_one_cloud(ix, cloud, &infos[i], &ks, stats, failures, err);
		else
			rc = update_file(ix, paths[i], &ks, stats, failures, err);
		if (rc == ST_OK && stats->parsed + stats->failed != before)
			rc = batch_step(ix, &written, err);
		if (rc == ST_OK && progress)
			progress(pctx, i + 1, n, stats->resources);
	}
	if (rc == ST_OK && do_prune)
		rc = prune(ix, &ks, stats, err);
	if (rc == ST_OK && ix->bulk && (rc = will_write(ix, err)) == ST_OK)
		rc = st__ixs_bulk_end(ix, err);
	/* every stack of a backend (or the files) written: a rebuild's end */
	if (rc == ST_OK && ix->rebuilding && (do_prune || !infos) &&
	    (rc = will_write(ix, err)) == ST_OK &&
	    (rc = exec(ix, "DELETE FROM meta WHERE key = '" IX_REBUILDING "'", err)) == ST_OK)
		ix->rebuilding = 0;
	ix->bulk = 0;
	if (ix->batch == 2 && rc == ST_OK)
		rc = exec(ix, "COMMIT", err);
	else if (ix->batch == 2)
		exec(ix, "ROLLBACK", NULL);
	ix->batch = 0;
	/* the planner's statistics (sampled: quick at any size), so that a query starts from its
	 * most selective index (a provider's package, not every resource of its stacks) */
	if (rc == ST_OK && (stats->parsed || stats->removed))
		exec(ix, "PRAGMA analysis_limit=1000; ANALYZE;", NULL);
out:
	st__ixs_known_free(&ks);
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
	size_t nfail = failures ? failures->count : 0, ndropped = st__dropped_count(failures);
	int rc;

	if (!stats)
		stats = &local;
	rc = update_pass(ix, infos, store, cloud, paths, n, do_prune, progress, pctx, stats,
			 failures ? failures : &nowhere, err);
	if (rc == IX_REBUILT) {
		/* the index was damaged (found before the first write) and is new: everything
		 * again, into it */
		st__problems_truncate(failures, nfail); /* (their counts too) */
		st__dropped_truncate(failures, ndropped);
		rc = update_pass(ix, infos, store, cloud, paths, n, do_prune, progress, pctx, stats,
				 failures ? failures : &nowhere, err);
	}
	if (rc == IX_REBUILT) /* cannot happen: a new index is sound */
		rc = st__err(err, ST_EIO, "index '%s': rebuilt twice", st_index_name(ix));
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
	int rc = st__ixs_writable(ix, err);

	if (ix->pg)
		return st__ixpg_update_backend(ix->pg, b, progress, pctx, stats, failures, err);
	int cloud = !strcmp(st_backend_kind(b), "cloud");
	if (rc == ST_OK && !cloud && !st_backend_store(b))
		rc = st__err(err, ST_EUNSUPPORTED, "backend '%s' keeps its stacks in no store: "
						   "nothing to index", st_backend_url(b));
	if (rc == ST_OK && (rc = st_backend_list(b, &infos, &n, err)) == ST_OK)
		st__crash_point("index", 3);
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
	int exists = 0, rc = ix->pg ? ST_OK : st__ixs_writable(ix, err);

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
	if (rc == ST_OK && ix->pg) {
		rc = st__ixpg_update_one(ix->pg, b, qname, exists ? &in : NULL, stats, failures, err);
	} else if (rc == ST_OK && exists) {
		rc = update_many(ix, &in, store, NULL, NULL, 1, 0, NULL, NULL, stats, failures, err);
	} else if (rc == ST_OK) {
		int here = st__ixs_held_here(ix, store, qname);
		stats->stacks = 1;
		/* another backend's stack of this name is not this one's to drop */
		if (here < 0)
			rc = sql_err(ix, err, "cannot read the index");
		else if (here && (rc = remove_stack(ix, qname, err)) == IX_REBUILT)
			rc = ST_OK; /* a new index holds nothing of it */
		if (rc == ST_OK && here)
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
	ST_ASSERT_ARG(paths || !n);
	int rc = st__ixs_writable(ix, err);
	if (ix->pg)
		return st__ixpg_update_files(ix->pg, paths, n, do_prune, progress, pctx, stats,
					     failures, err);
	if (rc != ST_OK)
		return rc;
	return update_many(ix, NULL, NULL, NULL, paths, n, do_prune, progress, pctx, stats,
			   failures, err);
}
