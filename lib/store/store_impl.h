/*
 * What a store implementation provides (private to lib/store). The generic layer (store.c)
 * validates keys, runs the write protocol (fill, finish, proceed, backup, commit, with the crash
 * points of the tests between the steps) and falls back to read+write for a copy; an
 * implementation only moves bytes. See doc/DESIGN.md, "Storage", "Adding a store".
 */
#ifndef ST_STORE_IMPL_H
#define ST_STORE_IMPL_H

#include "internal.h"

#include <sodium.h>
/* XXH3 compiled in from the header (XXH_INLINE_ALL): the ahead hash keeps copies of its state
 * (prehash.c), whose layout xxhash promises only to code built with the same header, so no
 * libxxhash is linked (configure wants xxhash.h >= 0.8.0, XXH3's final form) */
#define XXH_INLINE_ALL
#include <xxhash.h>

typedef struct st_store_ops {
	const char *scheme;
	/* Whole object into *data (new, NUL-terminated). ST_ENOTFOUND when missing. */
	int (*read)(st_store *s, const char *key, size_t max, char **data, size_t *len,
		    st_store_info *info, st_error *err);
	int (*stat)(st_store *s, const char *key, st_store_info *info, st_error *err);
	/* A write in four steps: begin (nothing visible yet), chunks, finish (the content is
	 * complete and durable, still invisible), commit (it becomes visible, atomically where
	 * the store can; create-only honoured here) or abort (everything undone). commit and
	 * abort free the writer. */
	int (*write_begin)(st_store *s, const char *key, const st_store_write_opts *opts,
			   st_store_writer **w, st_error *err);
	int (*write_chunk)(st_store_writer *w, const void *p, size_t n, st_error *err);
	int (*write_finish)(st_store_writer *w, st_error *err);
	int (*write_commit)(st_store_writer *w, st_error *err);
	void (*write_abort)(st_store_writer *w);
	/* Sorted listing (see st_store_list). */
	int (*list)(st_store *s, const char *prefix, unsigned flags, st_store_entry **out,
		    size_t *count, st_error *err);
	int (*remove)(st_store *s, const char *key, st_error *err);
	/* A copy the store makes itself (may be NULL: read + write). `for_backup` allows a copy
	 * that shares storage with the source (a hard link), since the source is only ever
	 * replaced whole. */
	int (*copy)(st_store *s, const char *src, const char *dst, int for_backup, st_error *err);
	void (*free)(st_store *s);
	/* Replaces `dst` by `src` and removes `src` in one atomic step, `dst` keeping its mode
	 * where the store has modes (may be NULL: a copy, then a delete of `src`). The two-stack
	 * journal installs its staged objects with it. */
	int (*rename)(st_store *s, const char *src, const char *dst, st_error *err);
	/* Optional (NULL: chunks only): n bytes of the file open as fd, from off, appended
	 * inside the kernel. ST_OK when all are; 1 when the store or the file systems cannot
	 * (*done bytes were, the caller writes the rest); another code with err set on an I/O
	 * error. */
	int (*write_copy)(st_store_writer *w, int fd, off_t off, size_t n, size_t *done,
			  st_error *err);
} st_store_ops;

/* The common head of every store (an implementation's struct begins with it). */
struct st_store {
	const st_store_ops *ops;
	char *url;
};

/* The common head of every writer. */
struct st_store_writer {
	st_store *store;
	/* an implementation whose bytes go to a local file descriptor says so here (else -1):
	 * the state writer then hands its chunks to the disk as it goes */
	int fd;
	/* set by the generic layer after write_begin (an implementation leaves them alone): sees
	 * every chunk written (the journal hashes a staged object as it is written) */
	void (*tap)(void *ctx, const void *p, size_t n);
	void *tap_ctx;
};

/* A store is used by one thread at a time, unless its implementation says otherwise (the file
 * store: any number of threads, each on its own keys). */

/* st_store_write_fill with the crash points and timing marks of operation `op` ("write" for a
 * state's save; NULL: none, as st_store_write_fill). */
int st__store_write_fill(st_store *s, const char *key, st_store_fill_fn fill, void *ctx,
			 const st_store_write_opts *opts, const char *op, st_error *err);

/* st__store_write_fill with `tap` (may be NULL) called on every chunk as it is written. */
int st__store_write_tap(st_store *s, const char *key, st_store_fill_fn fill, void *ctx,
			const st_store_write_opts *opts, const char *op,
			void (*tap)(void *ctx, const void *p, size_t n), void *tap_ctx,
			st_error *err);

/* The store's `rename` (see st_store_ops), or a copy then a delete. */
int st__store_rename(st_store *s, const char *src, const char *dst, st_error *err);

/* A listing as a store makes it: entries appended, then put in order by
 * st__store_entries_settle. */
typedef struct st__listing {
	st_store_entry *v;
	size_t n, cap;
} st__listing;

/* Appends an entry; `key` is stolen (freed when out of memory). ST_OK or ST_ENOMEM. */
int st__listing_add(st__listing *l, char *key, const st_store_info *info);

/* Appends an object store's listed name (stolen: a full object name, already decoded), made
 * relative to the store's `prefix`; `dir`: a level (a common prefix, ending in '/', kept so).
 * A name outside the prefix, the prefix itself, and a name the store cannot name as a key (a
 * console's "folder/" marker, "a//b", "..") are left out (freed). ST_OK or ST_ENOMEM. */
int st__listing_add_name(st__listing *l, const char *prefix, char *name, int dir,
			 const st_store_info *info);

/* A store's listing put in order: sorted by key (unless it already is), a key listed twice (a
 * level that came back on two pages) kept once, its copy freed. The entries kept: the count. */
size_t st__store_entries_settle(st_store_entry *v, size_t n);

/* Keeps the current object at `key` under `bak` (a hard link where the store can); nothing when
 * there is none. */
int st__store_backup(st_store *s, const char *key, const char *bak, st_error *err);

/* A URL that opens this store again from any process and directory (new): the file store's
 * is file:// and the real path of its root; any other store's is st_store_url. Two stores over
 * the same objects have the same locator. */
char *st__store_locator(const st_store *s);

/* st_store_identity, but a file store whose directory is gone gets its locator (a comparison
 * then fails to match); any other failure (err may be NULL) is st_store_identity's. New. */
int st__store_identity(const st_store *s, char **out, st_error *err);
/* For the stores' identities: bytes appended with '%', '?', '&', '#', '=', spaces and
 * control or non-ASCII bytes escaped as %XX (so no part can pass for another); an endpoint
 * URL appended with its scheme and host in lower case, the scheme's own port and trailing
 * '/'s left out. */
void st__identity_add(st_buf *b, const char *s, size_t n);
void st__identity_endpoint(st_buf *b, const char *url);
/* An object store's identity: SCHEME://BUCKET/PREFIX, then ?PARAM=ENDPOINT (st__identity_endpoint)
 * when `endpoint` is not NULL (new; NULL when out of memory). */
char *st__identity_bucket(const char *scheme, const char *bucket, const char *prefix,
			  const char *param, const char *endpoint);
/* Each store's identity (st_store_identity); new, NULL when out of memory. */
char *st__s3_identity(const st_store *s);
char *st__azblob_identity(const st_store *s);
char *st__gcs_identity(const st_store *s);
char *st__pg_identity(const st_store *s);

/* Is this store one whose calls may run on several threads at once (the file store)? */
int st__store_threadsafe(const st_store *s);

/* The file store: file://PATH and plain paths. */
int st__store_file_open(st_store **out, const char *root, const char *url, st_error *err);

/* The local path of a key in a file store (new), or NULL for any other store: lets the loader
 * map a big plain file instead of reading it. */
char *st__store_local_path(const st_store *s, const char *key);

/* A file store on a backend refuses a key that is or goes through a symbolic link (ST_EREFUSED);
 * ST_OK for any other store. */
int st__store_file_check(const st_store *s, const char *key, st_error *err);

/* A file store: the key prefix ("a/b/") of the outermost directory of `key` that does not
 * exist yet (new), or NULL when they all exist, on failure, or for another store. */
char *st__store_file_missing_dir(const st_store *s, const char *key);
/* A file store: removes the empty directories of `key` from its own up to `upto` (a prefix
 * st__store_file_missing_dir gave) included, stopping at one that is not empty. What a
 * failed or finished lock created is so taken away again. */
void st__store_file_prune(const st_store *s, const char *key, const char *upto);

/* The journal's hashes of an object's bytes, in hex (at most 64 digits): what a journal's
 * "hash" names. New journals (version 4) use XXH3-128 (32 digits, the canonical big-endian
 * bytes: xxhsum -H2's); version 3 and 2 journals BLAKE2b-256, version 1 SHA-256. */
typedef enum { ST__JH_SHA256, ST__JH_BLAKE2B, ST__JH_XXH3 } st__jhash;
void st__jhash_hex(st__jhash alg, const void *data, size_t len, char out[65]);
/* The same of a mapping, its pages given back every 8 MiB as the hash passes them
 * (prehash.c). */
void st__jhash_mapped_hex(st__jhash alg, const char *map, size_t len, char out[65]);
/* The hash taken ahead (st__prehash_start), when the file at `path` is still the file hashed,
 * unchanged: 1 and out set, else 0 (the thread joined either way). */
int st__prehash_take(st__prehash *p, const char *path, char out[65]);
/* After a successful st__prehash_take: the hash's states kept every 8 MiB of the file
 * (borrowed: the prehash's; [i] after i * 8 MiB bytes, *size / 8 MiB + 1 of them), or NULL
 * when there are none. *size: the bytes hashed. */
#define ST__KEEP_EVERY (8u << 20)
const XXH3_state_t *st__prehash_states(const st__prehash *p, size_t *size);

/* A staged object's XXH3-128 that does not hash again what the ahead hash read: while every
 * byte so far equals the byte at the same offset of the old file's mapping `map` (len bytes,
 * the file st__prehash_states describes; bytes given from that very place are not compared),
 * bytes are only counted; at the first chunk that differs (or at the end) the hash starts from
 * the last state kept at or before it and hashes on from the mapping, then the chunk. The
 * result equals a plain hash of the bytes given. kept or map NULL: a plain hash.
 * st__taphash_skipped() counts the bytes not hashed again (tests). */
typedef struct st__taphash {
	XXH3_state_t h;
	const XXH3_state_t *kept; /* borrowed */
	const char *map;                      /* borrowed */
	size_t len, pos;
	int same;
	const st_state *of; /* borrowed: the lazy state whose file is `map` (st__prehash_take_for) */
} st__taphash;
void st__taphash_init(st__taphash *t, const XXH3_state_t *kept, const char *map,
		      size_t len);
void st__taphash_update(st__taphash *t, const void *p, size_t n);
/* The hash, out set. ST_OK; with `of` set, ST_ECONFLICT when the file hashed ahead is no
 * longer the same file, unchanged (st__prehash_still), after the last byte read from `map`:
 * its bytes under the mapping, streamed or hashed, may not be those the kept states hashed
 * (a rewrite in place keeping size and modification time passes st__lazy_unchanged). */
int st__taphash_final(st__taphash *t, char out[65], st_error *err);
unsigned long st__taphash_skipped(void);
/* The file hashed ahead still the same file, unchanged since the hash started (device, inode,
 * size, modification and change times): 1, else 0. */
int st__prehash_still(const st__prehash *p);
/* st__prehash_take of a lazy state's ahead hash (s->prehash, may be NULL: 0) for the old file
 * at `path`; when taken, *t is set up for the staged object's hash: from the kept states when
 * the state's text is that file's mapping, else plain. 1 when taken. */
int st__prehash_take_for(const st_state *s, const char *path, char out[65], st__taphash *t);
/* Test hook: called by st__prehash_take_for when it set *t up from the old file's mapping,
 * with the state's path (the staged object not yet written). */
extern void (*st__prehash_taken_hook)(const char *path);

/* Writes a state to a key of a store (streamed when plain, compressed first otherwise),
 * manifest magic recomputed; `cfg` (may be NULL): the writer's thread choices. */
int st__state_write_store(st_state *s, st_store *store, const char *key,
			  const st_store_write_opts *wo, const st__wcfg *cfg, st_error *err);

/* A stack's JSON from a key of a store (lib/store/store.c): read whole, decompressed when it
 * is, parsed. `where` names it in messages; max 0: ST_DEFAULT_MAX_FILE. */
int st__store_load_json(st_store *s, const char *key, size_t max, const char *where,
			json_t **out, st_style *style, st_problems *problems, st_error *err);

/* A store for one plain file named by `path`: the file store at its directory. *key (new) is
 * the file's key there. */
int st__store_for_path(st_store **out, char **key, const char *path, st_error *err);

/* ---- stack-level backends ---- */

/* What a backend provides: the stack-level calls of statetool.h ("Backends"). The DIY backend
 * (diy.c) is the first; a backend that is no key/value store (Pulumi Cloud's export/import
 * API) implements the same calls. */
typedef struct st_backend_ops {
	const char *kind; /* "diy", ... */
	int (*list)(st_backend *b, st_stack_info **out, size_t *count, st_error *err);
	int (*resolve)(st_backend *b, const char *stack, char **qname, int *exists,
		       st_error *err);
	int (*load)(st_backend *b, const char *stack, const st_load_opts *opts, st_state **out,
		    st_error *err);
	int (*save)(st_backend *b, const char *stack, st_state *state,
		    const st_backend_save_opts *opts, const st__wcfg *cfg, st_error *err);
	/* out NULL: only whether someone else holds the lock (ST_ELOCKED), none taken */
	int (*lock)(st_backend *b, const char *stack, st_lock **out, st_error *err);
	int (*unlock)(st_backend *b, const char *stack, int *removed, st_error *err);
	void (*free)(st_backend *b);
} st_backend_ops;

struct st_backend {
	const st_backend_ops *ops;
	char *url;
};

/* The DIY backend over a store (diy.c); the store is stolen. */
int st__diy_open(st_backend **out, st_store *store, const char *url, st_error *err);
/* Reads the store's .pulumi/meta.yaml (diy_meta.c): *project_mode 1 (version 1, or no meta.yaml
 * and no legacy stack file) or 0 (the legacy layout); *present: .pulumi/ holds something;
 * ST_EFORMAT, ST_EVERSION as Pulumi says. */
int st__diy_read_meta(st_store *store, int *project_mode, int *present, st_error *err);
/* The compression the environment asks for (Pulumi's resolveCompression, diy_meta.c): *set
 * tells whether a variable decides at all; both asked: ST_EREFUSED. */
int st__diy_env_compression(st_compression *c, int *set, st_error *err);
/* ".gz", ".zst" or "" (static). */
const char *st__diy_comp_ext(st_compression c);

/* DIY internals shared by lock.c: a stack's keys. Each is new; `project` is NULL in the
 * legacy layout. */
char *st__diy_lock_dir(const char *project, const char *stack);
/* A listing flag of our own (doctor): a file store lists its temporary files too, the
 * ".NAME.tmp-HEX" of a write and the ".statetool-bak-HEX" of a backup, which listings never
 * show otherwise; a backup's with the later of its modification and change times (the hard
 * link keeps the file's modification time; making it changes the change time). Other stores
 * have none. */
#define ST__STORE_LIST_TEMPORARY 0x80000000u
/* Is the key's last component one of those temporary names? */
int st__store_temporary(const char *key);
/* Where a key of a store is, for messages: the local path of a file store, else URL/key. New. */
char *st__store_where(const st_store *s, const char *key);
/* The key prefix of a DIY stack's objects: <stacks>/[<project>/]<stack>.json (new), so a
 * listing of it shows every variant, staged object and journal of the stack. */
int st__diy_stack_prefix(st_backend *b, const char *stack, char **prefix, st_error *err);
/* A DIY stack's object as st_backend_list chooses it (*key new; NULL when it has none): one
 * listing of its prefix. */
int st__diy_object(st_backend *b, const char *stack, char **key, st_error *err);
/* The DIY backend's load (diy_load.c). */
int st__diy_load(st_backend *b, const char *stack, const st_load_opts *opts, st_state **out,
		 st_error *err);

/* The Pulumi Cloud backend (cloud.c): is `url` one (http:// or https://)? Opens it (the
 * access token from PULUMI_ACCESS_TOKEN or the Pulumi CLI's credentials file). */
int st__backend_is_cloud_url(const char *url);
int st__cloud_open(st_backend **out, const char *url, st_error *err);
int st__backend_is_cloud(const st_backend *b);
/* A cloud backend's identity (st_backend_identity): its service URL as an endpoint (new; NULL
 * when out of memory). */
char *st__cloud_identity(const st_backend *b);
/* st_backend_load_json for a cloud stack (its export). */
int st__cloud_load_json(st_backend *b, const char *ref, size_t max_size, json_t **out,
			st_style *style, st_problems *problems, char **where, st_error *err);
/* A lock that holds nothing (a backend whose service serialises updates itself). */
int st__lock_none(st_lock **out, st_error *err);

/* A DIY stack's project (NULL in the legacy layout) and name, as the backend resolves a
 * reference to them (both new). */
int st__diy_names(st_backend *b, const char *stack, char **project, char **name,
		  st_error *err);
/* Copies the object `key` of a DIY stack to its backups as a generation (history.c): with
 * `before`, only when the newest backup does not hold the same bytes, named by the object's
 * modification time. Nothing when backups are disabled. */
int st__diy_generation(st_backend *b, const char *stack, const char *key, int before,
		       st_error *err);
/* After a two-stack operation's recovery: when `key` of store `s` is a DIY stack's object
 * (.pulumi/stacks/[PROJECT/]STACK.json[.gz|.zst]), the generation a save writes after writing,
 * unless the newest backup already holds these bytes (the operation's own run wrote it before
 * it stopped). Nothing for a plain file. */
int st__store_generation_after(st_store *s, const char *key, st_error *err);
/* What Pulumi's saveCheckpoint does once it has written a stack's checkpoint, for every write
 * that replaces one (a save: ST_STORE_CHECKPOINT; a two-stack operation's install; restore):
 * when `key` is a DIY stack's object and PULUMI_DIY_BACKEND_RETAIN_CHECKPOINTS (alias
 * PULUMI_RETAIN_CHECKPOINTS) is 1 or true, its bytes again as <key>.<UnixNano> beside it.
 * Nothing otherwise (a plain file). */
int st__store_checkpoint_saved(st_store *s, const char *key, st_error *err);
/* Does `key` name a DIY stack's object (.pulumi/stacks/[PROJECT/]STACK.json[.gz|.zst])? 1 or
 * 0; *rel: where PROJECT (or STACK) starts, *slash: the '/' after PROJECT (NULL in the legacy
 * layout), *ext: the .json ending (pointers into key). */
/* doctor (journal_names.c): a journal beside the stack of `rel` (a key under .pulumi/stacks/,
 * `stem` its length without .json[.gz|.zst]) under any of the stack's object names (new), or
 * NULL; the description (new) of the lock the journal `jkey` names as its side's when it is
 * there and not stale (st__lock_stale, max_age): the operation still runs; else NULL. */
char *st__journal_beside(st_store *s, const char *rel, size_t stem);
char *st__journal_running(st_store *s, const char *jkey, long long max_age);
int st__store_stack_object(const char *key, const char **rel, const char **slash,
			   const char **ext);

/* st_backend_list as the index's staleness check needs it (lib/index/fresh.c): of a DIY
 * backend, each stack's qname, key, size, time and tag only (name, project and path NULL: a
 * listing of 10,000 stacks makes 30,000 strings fewer), in the keys' order rather than
 * sorted by name; another backend's listing in full. */
int st__backend_list_brief(st_backend *b, st_stack_info **out, size_t *count, st_error *err);

/* The store of a DIY backend (borrowed), NULL for another kind. */
st_store *st__backend_diy_store(const st_backend *b);

/* Pulumi's lock protocol on a store, for a stack whose lock folder is `dir` (ending in '/'):
 * `hint` names the command that removes a stale lock. */
int st__lock_store(st_lock **out, st_store *s, const char *dir, const char *hint,
		   st_error *err);
int st__unlock_store(st_store *s, const char *dir, int *removed, st_error *err);
/* ST_ELOCKED with Pulumi's message (each holder described) when the lock folder `dir` holds
 * anything; nothing is written. */
int st__locks_check(st_store *s, const char *dir, const char *hint, st_error *err);
/* st__lock_store for a recovery (pairlock.c): `own` (may be NULL), the crashed operation's
 * lock, when its bytes still hash to `own_hash` (BLAKE2b-256, hex) and its process does not
 * still run on this host (then the operation is still at work), and the locks this process
 * holds are not someone else's; `tail` (may be NULL) ends the message of a refusal. */
int st__lock_store_own(st_lock **out, st_store *s, const char *dir, const char *own,
		       const char *own_hash, const char *hint, const char *tail, st_error *err);
/* Would a recovery be refused the lock of a side (a DIY stack's lock folder `dir`, or a plain
 * file's lock `lkey` when `dir` is NULL)? ST_ELOCKED as st__lock_store_own says it when a lock
 * other than `own` and this process's is there; a plain file's lock that cannot be looked at
 * (an error other than ST_ENOTFOUND) is that error, naming it. Nothing is written: a recovery
 * checks both sides before it takes either lock. */
int st__lock_own_check(st_store *s, const char *dir, const char *lkey, const char *own,
		       const char *own_hash, const char *hint, const char *tail, st_error *err);
/* A plain file's lock `lkey` for a recovery, taken as st_lock_file takes it (a create-only
 * write; *out new, its store borrowed): the crashed operation's own lock (`own`, as
 * st__lock_store_own tells it) is replaced by ours (*replaced 1), any other refuses it
 * (ST_ELOCKED, `tail` ending the message). A lock that cannot be looked at (an error other
 * than ST_ENOTFOUND) is that error, naming it. */
int st__lock_file_own(st_lock **out, st_store *s, const char *lkey, const char *own,
		      const char *own_hash, const char *hint, const char *tail, int *replaced,
		      st_error *err);
/* Is `key` (with `dir`, ending in '/': any lock object directly in that folder) a lock this
 * process holds (st__lock_store, st_lock_file) in a store with the identity of `s`? *found 1
 * and *key_out (its key) and *made_out (the folder its write made, or NULL) (both new; either
 * may be a NULL pointer) and hash_out (65 bytes, may be NULL: its bytes' BLAKE2b-256 in hex)
 * when it is, else 0. ST_OK, or the error of the store's identity (st__store_identity). */
int st__lock_held(st_store *s, const char *dir, const char *key, char **key_out,
		  char **made_out, char *hash_out, int *found, st_error *err);
/* Removes the lock object `key` when its bytes still hash to `hash` (st__lock_held): 1 when
 * removed. */
int st__lock_remove_if(st_store *s, const char *key, const char *hash);
/* A lock object described as a lock error describes it ("<where>: created by ..."; *desc new)
 * and whether it is stale: it cannot be parsed, its process is gone from this host, or it is
 * older than max_age_s seconds (0: never by age). ST_OK or ST_ENOMEM. */
int st__lock_stale(st_store *s, const char *key, long long max_age_s, char **desc, int *stale);
/* ---- the two-stack journal (journal.c, journal_names.c) ---- */
#define JOURNAL_SUFFIX ".statetool-journal" /* <old key> + this: a side's journal */
#define STAGED_SUFFIX ".statetool-new"      /* <key> + this: a side's staged new version */

/* ---- the locks of a two-stack operation (pairlock.c) ---- */
/* The lock this process holds on the side at `key` of `s` (a DIY stack's lock folder, a plain
 * file's <key>.lock): *lock its key and *made the folder its write made (both new, NULL when
 * none), for the journal. */
void st__pairlock_mine(st_store *s, const char *key, char **lock, char **made, char hash[65]);
/* Does a journal's `lock` (and `lock_made`, may be NULL) lie where the lock of the side at
 * `key` goes (its stack's lock folder, or <key>.lock)? A journal naming any other object would
 * have a recovery remove it. */
int st__pairlock_fits(const char *key, const char *lock, const char *made);
/* What a refusal of a recovery adds to Pulumi's message: that the operation `op` recorded in
 * `journal` is pending and the `statetool move --recover` that completes it (new; NULL when
 * out of memory). loc, key: the journal's two sides; role: theirs ("dest", "source"), as the
 * journal records them, in any order; NULLs for an operation whose sides have none (then both
 * are named, and any command on either completes it). */
char *st__pairlock_tail(const char *op, const char *journal, const char *const loc[2],
			const char *const key[2], const char *const role[2]);
/* A recovery's lock on the side at `key` (*taken new, NULL when this process holds one there
 * already): ST_ELOCKED, `tail` ending Pulumi's message, when a lock other than `own` (the
 * crashed operation's, may be NULL, with the hash of its bytes `own_hash`) and this process's
 * is there. A plain file's lock has one name: the crashed operation's own is replaced by ours
 * (*replaced 1). */
int st__pairlock_take(st_lock **taken, st_store *s, const char *key, const char *own,
		      const char *own_hash, const char *tail, int *replaced, st_error *err);
/* st__pairlock_take's refusal without taking anything (st__lock_own_check): a recovery checks
 * both sides first, so that a refusal on one changes nothing on the other. */
int st__pairlock_check(st_store *s, const char *key, const char *own, const char *own_hash,
		       const char *tail, st_error *err);
/* Removes the crashed operation's lock `own` (may be NULL) when it still holds the bytes of
 * `own_hash`, and the folders its write made (`made`), with a line for `report`; nothing when
 * it is gone already or holds other bytes. `replaced`: st__pairlock_take removed it already
 * (only the line). */
void st__pairlock_remove(st_store *s, const char *op, const char *own, const char *own_hash,
			 const char *made, int replaced, st_changes *report);

/* Pulumi's guessProject (upgrade.c): the project of the first resource's URN of the checkpoint
 * at `key` (the stack `name`, for messages), *project new, or NULL when it names none (no
 * resources): `upgrade` skips such a stack unless --project gives it one. */
int st__upgrade_guess_project(st_store *s, const char *key, const char *name, char **project,
			      st_error *err);

/* ---- stack rename (stack_rename.c) ---- */
#define RENAME_MARKER_SUFFIX ".statetool-rename" /* <stack's object prefix> + this */
/* A rename's marker, beside both stacks while the rename runs: the two stacks' full names and
 * the rename's own locks (as a journal names them: pairlock.c). A marker of an older statetool
 * (the old stack's name alone, beside the new stack only) names no lock. */
typedef struct st__rename_marker {
	char *key;               /* where it was read */
	char *from, *to;         /* the two stacks' full names */
	char *lock[2], *made[2]; /* the rename's own locks on `from` [0] and `to` [1], or NULL */
	char hash[2][65];
	char *text; /* its bytes: a marker is removed only while it holds them */
	size_t len;
} st__rename_marker;
/* The marker key of `stack` (new; NULL when out of memory or not a name of the backend). */
char *st__rename_marker_key(st_backend *b, const char *stack);
/* Reads the marker `mkey`: ST_ENOTFOUND (err untouched) when there is none, ST_EFORMAT when it
 * cannot be read as one. */
int st__rename_marker_read(st_backend *b, const char *mkey, st__rename_marker *m,
			   st_error *err);
void st__rename_marker_free(st__rename_marker *m);
/* Ends the interrupted rename whose marker lies beside `stack`, if any, under both stacks'
 * locks (a lock other than the rename's own refuses it, nothing written): completed when the
 * new stack holds what the rename makes of the old one (or the old one is gone), undone when
 * the new stack was never written; else ST_ECONFLICT, saying which holds what, unless `keep`
 * (ST_RENAME_KEEP_*, only for the rename `pair` names when pair is not NULL) chooses. Notes
 * in `report`; *done (may be NULL): a rename (the one `pair` names) was completed. */
int st__rename_recover(st_backend *b, const char *stack, const char *const pair[2],
		       unsigned keep, st_changes *report, int *done, st_error *err);

/* Sets a DIY backend's layout (after an upgrade). */
void st__diy_set_project_mode(st_backend *b, int on);
/* (st__shell_word, `s` as one shell word, is in internal.h: lib/util/str.c.) */

/* Tests (lib/store/dl.c): the names of libcurl and libpq to load instead of the built-in
 * sonames (NULL: those), forgetting what was loaded or failed (only while no handle exists). */
void st__dl_names(const char *curl, const char *pq);

#endif
