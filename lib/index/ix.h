/*
 * The index's one description, shared by its two engines (private to lib/index): SQLite
 * (index.c, the embedded default) and PostgreSQL (pg.c, `--db postgres://...`, an index a team
 * shares). The schema, the rows of a stack and the queries are written once here; an engine
 * supplies only its types, its placeholders, its GLOB and how rows reach the database.
 */
#ifndef ST_INDEX_IX_H
#define ST_INDEX_IX_H

#include "internal.h"

/* The tables of a stack's rows, in the order of their columns in the schema. */
typedef enum ix_table {
	IX_URNS,      /* stack_id, n, urn: each URN of the stack once, numbered from 0 */
	IX_RESOURCES, /* stack_id, position, urn_n, type, name, id, import_id, parent_n,
		       * provider_n, provider_id, custom, protect, delete, external, taint,
		       * pending_replacement, retain_on_delete, created, modified,
		       * protected_urn, protected_parent, protected_provider (those three: a
		       * protected row's URN, parent and provider reference as text, else NULL)
		       * (view: resources) */
	IX_EDGES,     /* stack_id, from_n, kind, to_n, property (view: edges) */
	IX_PROVIDERS, /* stack_id, urn, id, ref, package, version */
	IX_PENDING,   /* stack_id, urn, type */
	IX_SECRETS,   /* stack_id, urn, path */
	IX_NTABLES
} ix_table;

extern const char *const st__ix_table_names[IX_NTABLES];
extern const int st__ix_table_ncols[IX_NTABLES];
/* Every table and view any schema version had, views first (NULL-terminated): dropped for a
 * rebuild. */
extern const char *const st__ix_all_names[];

/* One value of a row: text (s, len; s NULL: SQL NULL) or, with is_int, an integer. */
typedef struct ix_val {
	const char *s;
	size_t len;
	long long i;
	int is_int;
} ix_val;

/* Receives one row of `t` (st__ix_table_ncols[t] values, the stack's id first). Non-zero
 * stops the walk and is returned. */
typedef int (*ix_row_fn)(void *ctx, ix_table t, const ix_val *v);

/* Every row a stack's state gives (resources, their edges, providers, pending operations,
 * secret paths: never a secret's value), for the stack whose id is `sid`. */
int st__ix_rows(st_state *s, long long sid, ix_row_fn row, void *ctx);

/* The schema for an engine: pg 0 (SQLite) or 1 (PostgreSQL). New string. */
char *st__ix_schema_sql(int pg);

/* The SQL of st_index_query_run for an engine: placeholders '?' (SQLite) or '$N'
 * (PostgreSQL), GLOB as SQLite has it or as a POSIX regular expression (`~`), bytewise order
 * (COLLATE "C" on PostgreSQL). binds[0..*nb) are the values (borrowed from q, or new strings
 * kept in owned[0..*nowned), to free). */
int st__ix_query_sql(const st_index_query *q, int pg, st_buf *sql, const char *binds[16],
		     int *nb, char *owned[16], int *nowned);

/* The columns of st_index_query_run's rows. On SQLite the query's last five columns are the
 * flags custom, protect, delete, taint and external as numbers (IX_QUERY_SQLITE_COLS in all),
 * and the engine gives their text as the column `flags`; PostgreSQL's query gives it. */
#define IX_QUERY_COLS 8
#define IX_QUERY_SQLITE_COLS 12
/* "component,protect,delete,taint,external" and its end */
#define IX_FLAGS_MAX 48
/* The text of `flags` from the five numbers (non-zero: set), as PostgreSQL's SQL makes it:
 * "custom" or "component", then ",protect", ",delete", ",taint", ",external" for those set.
 * Returns its length. */
size_t st__ix_flags_text(char out[IX_FLAGS_MAX], const int f[5]);

/* A GLOB pattern (SQLite's: '*', '?', '[...]' with '^' to negate) as an anchored POSIX regular
 * expression. New string. */
char *st__ix_glob_regex(const char *glob);

/* The stacks a backend's update may drop when they are gone from its listing: those whose
 * recorded place (`path`) is in the backend's store, so that backends sharing one index (a
 * team's, in PostgreSQL) never drop each other's stacks. A NULL store (and a stack with no
 * place) is in every scope. */
typedef struct ix_scope {
	char *head, *tail; /* a place in the store: head + key + tail */
} ix_scope;
int st__ix_scope_init(ix_scope *sc, const st_store *store); /* ST_OK or ST_ENOMEM */
/* The scope of a backend: its store's, or a Pulumi Cloud's (its stacks' places are its service
 * URL, '/', the stack). ST_OK or ST_ENOMEM. */
int st__ix_scope_backend(ix_scope *sc, st_backend *b);
/* A stack of one name may be in one backend of those sharing an index: the message (new;
 * NULL when out of memory) refusing another backend's stack `qname` (at `where`) whose name
 * the index holds from `other`, the place of the stack of that name it holds. */
char *st__ix_other_msg(const char *qname, const char *where, const char *other);
/* That refusal as a failure of the update (index/other-backend; stats->failed counted): ST_OK,
 * or ST_ENOMEM. */
int st__ix_other_failed(const char *qname, const char *where, const char *other,
			st_index_stats *stats, st_problems *failures, st_error *err);
int st__ix_in_scope(const ix_scope *sc, const char *path);
void st__ix_scope_free(ix_scope *sc);
/* The place of every key of `store` (st__ix_where_at with `cwd`) cut around the key: a key
 * with no empty, "." or ".." segment (every key a listing gives, st_store_key_valid) is at
 * head + key + tail, so a listing of 10,000 stacks is compared with the index without making
 * each place. ST_OK or ST_ENOMEM; freed with st__ix_scope_free. */
int st__ix_place_init(ix_scope *sc, const st_store *store, const char *cwd);
/* Is `path` the place of `key` (st__ix_place_init's cut)? */
int st__ix_place_is(const ix_scope *sc, const char *path, const char *key);

/* meta's key while an index of another schema version is rebuilt (its value: that version),
 * from the rebuild's schema transaction until an update of every stack (a backend's or files,
 * not st_index_update_stack's one) ends: a reader is told, never shown a nearly empty index. */
#define IX_REBUILDING "rebuilding_from"
/* The error a read-only open gives then (ST_EVERSION). */
int st__ix_rebuilding(st_error *err, const char *name, int from);

/* What --sql says, on both engines, of a statement that returns no rows (BEGIN, COMMIT, SET,
 * PRAGMA x = y, ...) or copies (COPY): they change a session or a transaction, not data, but
 * only queries are run. */
#define IX_ONLY_QUERIES                                                                        \
	"only queries are allowed (the index is opened read-only): a statement that returns no " \
	"rows is refused"

/* ---- the SQLite engine: index.c opens, update.c writes, query.c reads ---- */

struct sqlite3;
struct sqlite3_stmt;
typedef struct st_ixpg st_ixpg;

/* The statements an update prepares once and reuses (update.c). */
#define IXS_NSTMT (2 * IX_NTABLES + 10)

struct st_index {
	struct sqlite3 *db;
	int readonly;
	char *path;
	st_ixpg *pg;       /* a PostgreSQL index (pg.c): every call goes there */
	st_changes *notes; /* borrowed from st_index_open: a rebuild an update makes is noted */
	int sound;         /* a new file, or PRAGMA quick_check passed */
	int batch;         /* in an update's batch transaction: each stack is a savepoint */
	int bulk;          /* a first build: indexes and counts made at its end (update.c) */
	int rebuilding;    /* meta has IX_REBUILDING: a full update's end removes it */
	struct sqlite3_stmt *stmt[IXS_NSTMT];
};

int st__ixs_exec(st_index *ix, const char *sql, st_error *err);
/* Updates need an index opened for writing: ST_OK or ST_EREFUSED. */
int st__ixs_writable(const st_index *ix, st_error *err);
/* Called before an update's first write: PRAGMA quick_check over every page of an index that
 * was there before (once per open; an update that writes nothing does not pay for it), so an
 * update never builds on a damaged file. A damaged one is moved aside (PATH.corrupt, noted)
 * and a new empty index made: *rebuilt is then 1 (what the caller knew of the old one is
 * void). */
int st__ixs_sound(st_index *ix, int *rebuilt, st_error *err);
/* The end of a first build (update.c: its secondary indexes dropped and its counts not kept
 * while the stacks were written): the indexes made, the counts made from the rows, the mark
 * (meta 'bulk') removed. In a write transaction; also when a writable open finds the mark
 * (that build was killed). */
int st__ixs_bulk_end(st_index *ix, st_error *err);
/* What the index holds of each stack (known.c): one SELECT, looked up in memory. */
typedef struct known {
	char *qname, *path, *sha, *etag; /* "" for NULL; one block, from qname */
	long long size, mtime_ns;        /* -2 for NULL */
	int listed;                      /* the update's listing named it */
} known;

typedef struct known_set {
	known *v;
	size_t n, cap;
	st_strmap by;   /* qname -> index in v + 1 (slot.a) */
	ix_scope scope; /* the updating backend's (everything for files): what it may drop */
} known_set;

/* Adds a stack's row (NULL strings as ""; the qname looked up through ks->by, which the
 * caller has initialised): 0, or -1 when out of memory. */
int st__ix_known_add(known_set *ks, const char *qname, const char *path, long long size,
		     long long mtime_ns, const char *sha, const char *etag);
/* Reads every stack's row (ks zeroed first): ST_OK, ST_ENOMEM or the index's error. */
int st__ixs_known_load(st_index *ix, known_set *ks, st_error *err);
/* The place the index records for `key` of `store` (new string, NULL when out of memory):
 * st__store_where's, with a relative local path made absolute (the current directory's), so
 * `--backend b` and `--backend /abs/b` name the same stacks, from any directory. */
char *st__ix_where(const st_store *store, const char *key);
/* The same with the current directory given (NULL: none), for a caller naming many keys. */
char *st__ix_where_at(const st_store *store, const char *key, const char *cwd);
/* What the index holds of a stack indexed from `where`, or NULL; marks it listed. */
const known *st__ixs_known_of(known_set *ks, const char *qname, const char *where);
/* The place of the stack `qname` the index holds when it is another backend's (not `where`
 * and out of ks->scope), else NULL (borrowed from ks). */
const char *st__ixs_known_other(known_set *ks, const char *qname, const char *where);
/* Is the stack `qname` the index holds (if any) one of `store`'s? 1, 0 (another backend's), or
 * -1 when the index cannot be read or out of memory. */
int st__ixs_held_here(st_index *ix, const st_store *store, const char *qname);
void st__ixs_known_free(known_set *ks);
/* Finalizes the prepared statements (before the database is closed). */
void st__ixs_finalize(st_index *ix);

/* st_index_sql and st_index_query_run on the SQLite index `db` (named `path` in messages). */
int st__ixsqlite_sql(struct sqlite3 *db, const char *path, const char *sql,
		     st_index_row_fn row, void *ctx, st_error *err);
int st__ixsqlite_query(struct sqlite3 *db, const char *path, const st_index_query *q,
		       st_index_row_fn row, void *ctx, st_error *err);
/* A failure of SQLite's on `db` as an error (ST_ENOMEM or ST_EIO): "index 'PATH': WHAT:
 * SQLite's message". Returns the code. */
int st__ixsqlite_err(struct sqlite3 *db, const char *path, st_error *err, const char *what);

/* ---- the PostgreSQL engine (pg.c) ---- */

int st__ixpg_open(st_ixpg **out, const char *url, int readonly, st_changes *notes,
		  st_error *err);
void st__ixpg_close(st_ixpg *p);
const char *st__ixpg_name(const st_ixpg *p);
int st__ixpg_update_state(st_ixpg *p, const char *qname, const char *path, st_state *s,
			  st_error *err);
int st__ixpg_update_backend(st_ixpg *p, st_backend *b, st_index_progress_fn progress,
			    void *pctx, st_index_stats *stats, st_problems *failures,
			    st_error *err);
int st__ixpg_update_files(st_ixpg *p, const char *const *paths, size_t n, int prune,
			  st_index_progress_fn progress, void *pctx, st_index_stats *stats,
			  st_problems *failures, st_error *err);
/* st_index_update_stack's engine part: the stack from `info` (its object as stat gave it), or
 * its rows removed when info is NULL (the backend no longer has it). */
int st__ixpg_update_one(st_ixpg *p, st_backend *b, const char *qname, const st_stack_info *info,
			st_index_stats *stats, st_problems *failures, st_error *err);
int st__ixpg_query(st_ixpg *p, const st_index_query *q, st_index_row_fn row, void *ctx,
		   st_error *err);
int st__ixpg_sql(st_ixpg *p, const char *sql, st_index_row_fn row, void *ctx, st_error *err);

#endif
