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

int st__ixs_exec(st_index *ix, const char *sql, st_error *err)
{
	return exec(ix, sql, err);
}

/* Updates need an index opened for writing. */
int st__ixs_writable(const st_index *ix, st_error *err)
{
	if (!ix->readonly)
		return ST_OK;
	/* (its name: a PostgreSQL index's path is its URL as given, password and all) */
	return st__err(err, ST_EREFUSED, "the index '%s' is open read-only", st_index_name(ix));
}

/* meta's value of `key` as a number, -1 when it has none. */
static int meta_int(st_index *ix, const char *key)
{
	sqlite3_stmt *st;
	int v = -1;
	if (sqlite3_prepare_v2(ix->db, "SELECT value FROM meta WHERE key=?", -1, &st, NULL) !=
	    SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		v = atoi((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return v;
}

static int schema_version(st_index *ix)
{
	return meta_int(ix, "schema_version");
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
/* 1 when the index reads as sound; 0 when damaged; -1 when another connection holds it busy
 * past the timeout (not damage: never moved aside for it). */
static int healthy(st_index *ix, int thorough)
{
	sqlite3_stmt *st;
	int ok = 0, rc;
	const char *sql = thorough ? "PRAGMA quick_check" : "SELECT count(*) FROM sqlite_master";
	if ((rc = sqlite3_prepare_v2(ix->db, sql, -1, &st, NULL)) != SQLITE_OK)
		return rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? -1 : 0;
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *r = (const char *)sqlite3_column_text(st, 0);
		ok = r && (!thorough || !strcmp(r, "ok"));
	} else if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
		ok = -1;
	}
	sqlite3_finalize(st);
	return ok;
}

/* Why the index cannot be written where it is (its directory, or the file, is not writable: a
 * read-only file system, a directory without write permission): errno, 0 when it can. */
static int unwritable(const char *path)
{
	char *dir = st_path_dirname(path);
	int e = 0;
	if (dir && access(dir, W_OK) != 0)
		e = errno;
	else if (access(path, W_OK) != 0 && errno != ENOENT)
		e = errno;
	free(dir);
	return e;
}

/* A WAL-mode index read where its -shm cannot be made (SQLite needs it even to read): opened
 * again as immutable, read as the file is, when it has no write-ahead log (every update's
 * last connection checkpoints and removes it); one with a log cannot be read without its
 * -shm, and says so. ST_OK (ix->db the new connection) or the error. Never "damaged". */
static int open_immutable(st_index *ix, int why, st_error *err)
{
	struct stat sb;
	char *wal = st_asprintf("%s-wal", ix->path);
	st_buf uri;
	int rc;

	if (!wal)
		return st__err(err, ST_ENOMEM, "out of memory");
	rc = stat(wal, &sb) == 0 && sb.st_size > 0;
	free(wal);
	if (rc)
		return st__err(err, ST_EIO, "cannot read the index '%s': its directory cannot be "
			       "written (%s) and it has a write-ahead log ('%s-wal'), which SQLite "
			       "reads only with a '%s-shm' file it makes there: run the query where "
			       "the index can be written", ix->path, strerror(why), ix->path,
			       ix->path);
	/* file:PATH?immutable=1, the path percent-encoded where a URI needs it */
	st_buf_init(&uri);
	st_buf_adds(&uri, "file:");
	for (const char *c = ix->path; *c; c++) {
		if (*c == '?' || *c == '#' || *c == '%' || (unsigned char)*c < 0x20)
			st_buf_printf(&uri, "%%%02X", (unsigned char)*c);
		else
			st_buf_addc(&uri, *c);
	}
	st_buf_adds(&uri, "?immutable=1");
	char *u = st_buf_take(&uri, NULL);
	sqlite3_close(ix->db);
	ix->db = NULL;
	if (!u)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (sqlite3_open_v2(u, &ix->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI |
			    SQLITE_OPEN_NOFOLLOW, NULL) != SQLITE_OK) {
		rc = st__err(err, ST_EIO, "cannot open the index '%s' read-only: %s", ix->path,
			     ix->db ? sqlite3_errmsg(ix->db) : "out of memory");
		sqlite3_close(ix->db);
		ix->db = NULL;
	}
	free(u);
	return rc;
}

static int busy(const st_index *ix, st_error *err)
{
	return st__err(err, ST_ELOCKED, "the index '%s' is held by another program (SQLite: "
		       "database is locked); nothing was changed: try again", ix->path);
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

/* Does the index carry the mark of a first build that did not end (update.c)? */
static int bulk_mark(st_index *ix)
{
	sqlite3_stmt *st;
	int found = 0;
	if (sqlite3_prepare_v2(ix->db, "SELECT 1 FROM meta WHERE key='bulk'", -1, &st, NULL) !=
	    SQLITE_OK)
		return 0;
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
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
	char mark[80] = "";
	if (v != -1 && v != ST_INDEX_SCHEMA_VERSION) {
		drop_all(ix);
		st_changes_add(notes, "the index had schema version %d; rebuilt as version %d", v,
			       ST_INDEX_SCHEMA_VERSION);
		/* readers are told until an update of every stack ends (update.c) */
		snprintf(mark, sizeof(mark), "INSERT OR REPLACE INTO meta VALUES ('" IX_REBUILDING
			 "', '%d');", v);
	}
	/* tables and version in one transaction: an update killed here leaves no tables */
	char *schema = st__ix_schema_sql(0);
	char *sql = schema ? st_asprintf("BEGIN IMMEDIATE;%s"
					 "INSERT OR REPLACE INTO meta VALUES ('schema_version', '%d');"
					 "INSERT OR REPLACE INTO meta VALUES ('statetool', '%s');%sCOMMIT;",
					 schema, ST_INDEX_SCHEMA_VERSION, ST_VERSION, mark)
			   : NULL;
	rc = sql ? exec(ix, sql, err) : st__err(err, ST_ENOMEM, "out of memory");
	free(schema);
	free(sql);
	ix->rebuilding = rc == ST_OK && meta_int(ix, IX_REBUILDING) != -1;
	if (rc)
		exec(ix, "ROLLBACK;", NULL);
	/* a first build was killed before its end: its indexes and counts made now */
	if (rc == ST_OK && bulk_mark(ix) && (rc = exec(ix, "BEGIN IMMEDIATE", err)) == ST_OK) {
		if ((rc = st__ixs_bulk_end(ix, err)) == ST_OK)
			rc = exec(ix, "COMMIT", err);
		else
			exec(ix, "ROLLBACK", NULL);
	}
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

/* A damaged file moved aside (PATH.corrupt) and a new one made in its place, said in the
 * notes; ix->db is the new one. */
static int rebuild_damaged(st_index *ix, st_error *err)
{
	const char *path = ix->path;
	char *aside, *wal, *shm;
	int rc;

	st__ixs_finalize(ix);
	sqlite3_close(ix->db);
	ix->db = NULL;
	if (!(aside = st_asprintf("%s.corrupt", path)))
		return st__err(err, ST_ENOMEM, "out of memory");
	if (rename(path, aside) != 0) {
		rc = st__err(err, ST_EIO, "the index '%s' is damaged and cannot be moved aside to "
			     "'%s': %s; nothing was changed", path, aside, strerror(errno));
		free(aside);
		return rc;
	}
	st_changes_add(ix->notes, "the index '%s' was damaged: moved aside to '%s' and rebuilt",
		       path, aside);
	free(aside);
	wal = st_asprintf("%s-wal", path);
	shm = st_asprintf("%s-shm", path);
	if (wal)
		unlink(wal);
	if (shm)
		unlink(shm);
	free(wal);
	free(shm);
	if ((rc = create_new(ix, err)) != ST_OK || (rc = open_db(ix, err)) != ST_OK)
		return rc;
	ix->sound = 1;
	return ST_OK;
}

int st__ixs_sound(st_index *ix, int *rebuilt, st_error *err)
{
	int rc;
	*rebuilt = 0;
	if (ix->sound)
		return ST_OK;
	if ((rc = healthy(ix, 1)) == 1) {
		ix->sound = 1;
		return ST_OK;
	}
	if (rc < 0)
		return busy(ix, err);
	if ((rc = rebuild_damaged(ix, err)) == ST_OK && (rc = init_schema(ix, ix->notes, err)) == ST_OK)
		*rebuilt = 1;
	return rc;
}

void st__ixs_finalize(st_index *ix)
{
	for (int i = 0; i < IXS_NSTMT; i++) {
		sqlite3_finalize(ix->stmt[i]);
		ix->stmt[i] = NULL;
	}
}

/* An existing file at `path` is refused unless it may be an index: a directory, or a file
 * of another kind (not empty and without SQLite's header), is never moved aside or replaced:
 * a mistyped --db must not cost anyone a file. */
static int check_index_file(const char *path, st_error *err)
{
	static const char magic[16] = "SQLite format 3";
	char head[16];
	struct stat sb;
	ssize_t n;
	int fd;

	if (stat(path, &sb) != 0)
		return ST_OK; /* none yet (or unreadable: opening says why) */
	if (S_ISDIR(sb.st_mode))
		return st__err(err, ST_EINVAL, "the index '%s' is a directory, not a file", path);
	if (!S_ISREG(sb.st_mode) || sb.st_size == 0 || (fd = open(path, O_RDONLY)) < 0)
		return ST_OK;
	n = read(fd, head, sizeof(head));
	close(fd);
	if (n == (ssize_t)sizeof(head) && !memcmp(head, magic, sizeof(head)))
		return ST_OK;
	return st__err(err, ST_EREFUSED, "'%s' is not an SQLite database, so not an index: "
		       "refusing to replace it (give --db an index, or a path where none exists "
		       "yet)", path);
}

/* An SQLite database with tables but no index schema version is someone else's: refused, so
 * that an update never adds its tables to it. (A first build's tables and version are made in
 * one transaction: an interrupted one leaves no tables.) */
static int check_ours(st_index *ix, st_error *err)
{
	sqlite3_stmt *st;
	int tables = 0;

	if (schema_version(ix) != -1)
		return ST_OK;
	if (sqlite3_prepare_v2(ix->db, "SELECT count(*) FROM sqlite_master", -1, &st, NULL) ==
	    SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			tables = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	if (!tables)
		return ST_OK;
	return st__err(err, ST_EREFUSED, "'%s' is an SQLite database but not a statetool index: "
		       "refusing to change it (give --db an index, or a path where none exists "
		       "yet)", ix->path);
}

int st_index_open(st_index **out, const char *path, int readonly, st_changes *notes,
		  st_error *err)
{
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(path);
	st_index *ix = calloc(1, sizeof(*ix));
	int rc, created;

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
	if ((rc = check_index_file(path, err)) != ST_OK)
		goto fail;
	created = !readonly && access(path, F_OK) != 0;
	if (created && (rc = create_new(ix, err)) != ST_OK)
		goto fail;
	if ((rc = open_db(ix, err)) != ST_OK)
		goto fail;
	/* a new file is sound; an update checks every page of an old one before its first write
	 * (st__ixs_sound), so an update that writes nothing stays quick */
	ix->sound = created;
	ix->notes = notes;
	if ((rc = healthy(ix, 0)) < 0) {
		rc = busy(ix, err);
		goto fail;
	}
	int why = rc && readonly ? 0 : unwritable(path);
	if (!rc && readonly && why) {
		/* not damage: SQLite could not make the -shm a WAL-mode read needs */
		if ((rc = open_immutable(ix, why, err)) != ST_OK)
			goto fail;
		rc = healthy(ix, 0);
	}
	if (!readonly && why) { /* every update writes (its schema's version at least) */
		rc = st__err(err, ST_EIO, "cannot update the index '%s': %s (its directory or the "
			     "file cannot be written); nothing was changed", path, strerror(why));
		goto fail;
	}
	if (!rc) {
		if (readonly) {
			rc = st__err(err, ST_EFORMAT, "the index '%s' is damaged; run `statetool "
				     "index update` to rebuild it", path);
			goto fail;
		}
		if ((rc = rebuild_damaged(ix, err)) != ST_OK)
			goto fail;
	} else if (!created && (rc = check_ours(ix, err)) != ST_OK) {
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
		if ((v = meta_int(ix, IX_REBUILDING)) != -1) {
			rc = st__ix_rebuilding(err, path, v);
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
	st__ixs_finalize(ix);
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

/* ---- queries (SQLite's in query.c, PostgreSQL's in pg.c) ---- */

int st_index_sql(st_index *ix, const char *sql, st_index_row_fn row, void *ctx, st_error *err)
{
	ST_ASSERT_ARG(ix);
	ST_ASSERT_ARG(sql);
	if (ix->pg)
		return st__ixpg_sql(ix->pg, sql, row, ctx, err);
	return st__ixsqlite_sql(ix->db, ix->path, sql, row, ctx, err);
}

int st_index_query_run(st_index *ix, const st_index_query *q, st_index_row_fn row, void *ctx,
		       st_error *err)
{
	ST_ASSERT_ARG(ix);
	ST_ASSERT_ARG(q);
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
