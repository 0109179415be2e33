/*
 * Two stacks (or files) replaced as one operation (`move`), on any stores: doc/DESIGN.md, "The
 * two-stack journal". Each side is (store, key); its current version may sit under another key
 * (old_key: a change of compression). Steps, each a crash point
 * (st__crash_point("pair", N); the CLI's STATETOOL_CRASH_AT=pair:N kills there):
 *   1, 2. the new version of each side staged under <key>.statetool-new in its own store
 *         (both points after both are staged: they are written side by side)
 *   3. the journal written in A's store as <old key>.statetool-journal: version 4 names both
 *      sides by store URL and key, with the XXH3-128 of the old and new bytes and the staged
 *      key (version 3, the same with BLAKE2b-256, is still recovered)
 *   4. the same journal beside B: from here on the operation is committed
 *   5. A installed: its current object kept as .bak, the staged object renamed over the key (a
 *      store's rename: the file store's rename(2), else a copy and a delete); an old object
 *      under another key is kept as its .bak and removed
 *   6. B installed
 *   7. A's journal removed; then B's
 * Each side also names the lock the writer holds on it ("lock", and "lock_made", the folder
 * the lock's write made; pairlock.c): optional members, absent in journals of older statetools.
 * Recovery (st_journal_recover_key; st_backend_recover in journal_names.c) reads a journal
 * beside either side, opens the other side's store from the URL in it, takes both stacks'
 * locks (a lock other than the crashed operation's own refuses it: pairlock.c) and rolls
 * forward: a side still holding its old bytes gets its staged version; then the crashed
 * operation's locks are removed. Before step 4 completes, only one journal or none exists
 * and nothing has been replaced, so rolling forward is still exactly the operation that was
 * asked for. Nothing depends on a rename across stores: only on a write (or a copy) replacing
 * an object whole. Journals of version 2 (BLAKE2b-256) and 1 (SHA-256), which name local files
 * by absolute path, are still recovered.
 */
#include "store_impl.h"

#include <sodium.h>

#include <pthread.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define JOURNAL_VERSION 4

/* One side of the operation, as the writer and the recovery see it. */
typedef struct jside {
	st_store *store; /* borrowed, or owned (opened from the journal's URL) */
	int owns;
	char *url;                         /* the store's locator */
	char *id;                          /* its identity (st_store_identity), or NULL: a
					    * journal of an older statetool */
	const char *role; /* "dest" or "source" (a move's), or NULL: not known */
	char *key, *old_key, *staged, *journal; /* old_key: where the current version is */
	char *lock, *lock_made; /* the writer's lock on the side and the folder it made, or NULL */
	char lock_hash[65];     /* its bytes' BLAKE2b-256 (hex): a plain file's lock has one name */
	char old_hex[65], new_hex[65];
	int old_exists;
	/* the new version while writing: a state streamed, or bytes (a compressed state) */
	st_state *state;
	char *data;
	size_t len;
	st__taphash h; /* the staged object's hash */
	int old_done;  /* the old object's hash taken from the ahead hash (h set up from it) */
	st__wcfg cfg; /* the writer's thread choices */
	int hrc; /* hashing the old object */
	st_error herr;
} jside;

static void jside_free(jside *sd)
{
	if (sd->owns)
		st_store_free(sd->store);
	free(sd->url);
	free(sd->id);
	free(sd->key);
	free(sd->old_key);
	free(sd->staged);
	free(sd->journal);
	free(sd->lock);
	free(sd->lock_made);
	free(sd->data);
	memset(sd, 0, sizeof(*sd));
}

/* A local file hashed where it lies: mapped, not read, so a whole stack is not copied into
 * fresh memory. 1 when done, 0 when the file store cannot say (then the store reads it). */
static int hash_local(st__jhash alg, const char *path, char out[65], int *exists, int *rc)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat sb;
	void *map;

	*rc = ST_OK;
	if (fd < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			return 0;
		*exists = 0;
		return 1;
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return 0;
	}
	*exists = 1;
	if (sb.st_size == 0) {
		close(fd);
		st__jhash_hex(alg, "", 0, out);
		return 1;
	}
	map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return 0;
	st__jhash_mapped_hex(alg, map, (size_t)sb.st_size, out);
	munmap(map, (size_t)sb.st_size);
	return 1;
}

/* The hash of an object as stored (*exists 0 and out "" when there is none). */
static int hash_object(st__jhash alg, st_store *s, const char *key, char out[65], int *exists,
		       st_error *err)
{
	char *path = st__store_local_path(s, key), *data = NULL;
	size_t len = 0;
	int rc = ST_OK;

	out[0] = '\0';
	*exists = 0;
	if (path && (rc = st__store_file_check(s, key, err)) == ST_OK &&
	    hash_local(alg, path, out, exists, &rc)) {
		free(path);
		return rc;
	}
	free(path);
	if (rc != ST_OK)
		return rc;
	rc = st_store_read(s, key, 0, &data, &len, NULL, err);
	if (rc == ST_ENOTFOUND) {
		if (err)
			st_error_clear(err);
		return ST_OK;
	}
	if (rc == ST_OK) {
		*exists = 1;
		st__jhash_hex(alg, data, len, out);
	}
	free(data);
	return rc;
}

static char *where(const jside *sd, const char *key)
{
	char *w = st__store_where(sd->store, key);
	return w ? w : st_strdup(key);
}

/* ---- writing ---- */

static int dump_for_store(st_state *s, char **out, size_t *len, st_error *err)
{
	char *data;
	size_t n;
	int rc = st_state_dump(s, NULL, &data, &n, err);
	if (rc)
		return rc;
	rc = st__compress_bytes(st_state_compression(s), data, n, out, len, err);
	free(data);
	return rc;
}

/* Names a side's objects and prepares its new bytes (a compressed state is compressed here,
 * a plain one is streamed later). */
static int side_prepare(jside *sd, const st_pair_side *in, st_error *err)
{
	const char *old = in->old_key ? in->old_key : in->key;
	int rc;

	memset(sd, 0, sizeof(*sd));
	sd->store = in->store;
	if (!in->store || !in->key || !in->state)
		return st__err(err, ST_EINVAL, "a side of a two-stack operation needs a store, a "
					       "key and a state");
	if (!st_store_key_valid(in->key) || !st_store_key_valid(old))
		return st__err(err, ST_EINVAL, "invalid key '%s'", in->key);
	if ((rc = st__store_identity(in->store, &sd->id, err)) != ST_OK)
		return rc;
	if (!(sd->url = st__store_locator(in->store)) || !(sd->key = st_strdup(in->key)) ||
	    !(sd->old_key = st_strdup(old)) ||
	    !(sd->staged = st_asprintf("%s" STAGED_SUFFIX, in->key)) ||
	    !(sd->journal = st_asprintf("%s" JOURNAL_SUFFIX, old)))
		return st__err(err, ST_ENOMEM, "out of memory");
	st__pairlock_mine(in->store, in->key, &sd->lock, &sd->lock_made, sd->lock_hash);
	st_state_fix_magic(in->state);
	if (st_state_compression(in->state) == ST_COMPRESS_NONE) {
		sd->state = in->state;
		return ST_OK;
	}
	if ((rc = dump_for_store(in->state, &sd->data, &sd->len, err)) != ST_OK)
		return rc;
	return ST_OK;
}

/* Refuses what must not be written before anything is: a symbolic link where a side's file
 * is (the file store refuses it too, but only when it installs, after the commit point). */
static int side_check(jside *sd, st_error *err)
{
	const char *keys[2] = {sd->key, sd->old_key};
	int rc;

	for (int i = 0; i < 2; i++) {
		char *p = st__store_local_path(sd->store, keys[i]);
		int link = p && st_path_is_symlink(p);
		free(p);
		if (link)
			return st__err(err, ST_EREFUSED, "refusing to write through a symbolic link");
		if ((rc = st__store_file_check(sd->store, keys[i], err)) != ST_OK)
			return rc;
	}
	return ST_OK;
}

static void hash_chunk(void *ctx, const void *p, size_t n)
{
	st__taphash_update(ctx, p, n);
}

static int fill_side(void *ctx, st_store_writer *w, st_error *err)
{
	jside *sd = ctx;
	if (sd->state)
		return st__state_stream_to(sd->state, w, &sd->cfg, err);
	return st_store_writer_write(w, sd->data, sd->len, err);
}

/* Writes the staged object, hashing its bytes as they go; its writer on this thread alone
 * when `one_thread` (the caller keeps the other processor busy). */
static int stage(jside *sd, int one_thread, st_error *err)
{
	int rc;

	sd->cfg.threads = one_thread ? 1 : 0;
	if (!sd->old_done)
		st__taphash_init(&sd->h, NULL, NULL, 0);
	rc = st__store_write_tap(sd->store, sd->staged, fill_side, sd, NULL, NULL, hash_chunk,
				 &sd->h, err);
	return rc ? rc : st__taphash_final(&sd->h, sd->new_hex, err);
}

/* A move's lazy state hashed its file ahead: taken when that is still the old object, the
 * staged object's hash set up to start from it. 1 when taken. */
static int old_hash_ahead(jside *sd)
{
	char *path;
	int hit;

	st_error_clear(&sd->herr);
	if (!sd->state || !(path = st__store_local_path(sd->store, sd->old_key)))
		return 0;
	hit = st__store_file_check(sd->store, sd->old_key, NULL) == ST_OK &&
	      st__prehash_take_for(sd->state, path, sd->old_hex, &sd->h);
	free(path);
	if (hit) {
		sd->old_exists = 1;
		sd->hrc = ST_OK;
	}
	return hit;
}

static void old_hash(jside *sd)
{
	if (sd->old_done)
		return;
	st_error_clear(&sd->herr);
	sd->hrc = hash_object(ST__JH_XXH3, sd->store, sd->old_key, sd->old_hex, &sd->old_exists, &sd->herr);
}

/* A staged object written on a thread of its own (its writer on that one thread: the other
 * staged object and the old objects' hashes keep the other processor busy). */
typedef struct stage_job {
	jside *sd;
	st_error err;
	int rc;
} stage_job;

static void *stage_main(void *arg)
{
	stage_job *j = arg;
	j->rc = stage(j->sd, 1, &j->err);
	return NULL;
}

static void *old_hashes_main(void *arg)
{
	jside **both = arg;
	old_hash(both[0]);
	old_hash(both[1]);
	return NULL;
}

/* Both staged, the old objects hashed. On stores that take several threads (files), the old
 * objects are hashed on one thread while the two staged objects are written, each on a thread
 * of its own; else one after the other. */
static int stage_both(jside *A, jside *B, st_error *err)
{
	st__two hth = {0}, sth = {0};
	jside *both[2] = {A, B};
	stage_job jb = {B, {0}, ST_OK};
	int hashing = 0, staging = 0, rc, rc_b = ST_OK;

	st_error_clear(&jb.err);
	/* the hashes taken ahead first (waiting for them): the staging starts from them */
	A->old_done = old_hash_ahead(A);
	B->old_done = old_hash_ahead(B);
	if (st__store_threadsafe(A->store) && st__store_threadsafe(B->store)) {
		if (!(A->old_done && B->old_done) && st__two_worth(ST__T_JOURNAL_HASH, 0, 0))
			hashing = st__two_start(&hth, ST__T_JOURNAL_HASH, old_hashes_main, both, 0);
		if (st__two_worth(ST__T_JOURNAL_STAGE, 0, 0))
			staging = st__two_start(&sth, ST__T_JOURNAL_STAGE, stage_main, &jb, 0);
	}
	if (!hashing)
		old_hashes_main(both);
	rc = stage(A, staging, err);
	if (staging) {
		st__two_join(&sth);
		rc_b = jb.rc;
	} else if (rc == ST_OK) {
		rc_b = stage(B, 0, &jb.err);
	}
	st__two_join(&hth);
	if (rc == ST_OK && rc_b != ST_OK) {
		if (err)
			*err = jb.err;
		rc = rc_b;
	}
	for (int i = 0; rc == ST_OK && i < 2; i++)
		if (both[i]->hrc != ST_OK) {
			if (err)
				*err = both[i]->herr;
			rc = both[i]->hrc;
		}
	return rc;
}

/* A side whose old and new versions hash alike: the recovery could not tell them apart, which
 * matters only when their bytes differ (an XXH3-128 collision, made on purpose: doc/DESIGN.md,
 * "Which hash"). Compared by their BLAKE2b-256; differing bytes refuse the write. */
static int versions_distinct(jside *sd, st_error *err)
{
	char o[65], n[65], *w;
	int oex, nex, rc;

	if (!sd->old_exists || strcmp(sd->old_hex, sd->new_hex))
		return ST_OK;
	if ((rc = hash_object(ST__JH_BLAKE2B, sd->store, sd->old_key, o, &oex, err)) != ST_OK ||
	    (rc = hash_object(ST__JH_BLAKE2B, sd->store, sd->staged, n, &nex, err)) != ST_OK)
		return rc;
	if (oex == nex && !strcmp(o, n))
		return ST_OK;
	w = where(sd, sd->key);
	rc = st__err(err, ST_ECONFLICT, "the old and new versions of '%s' differ but hash alike, "
					"so a recovery could not tell them apart; nothing was written",
		     w ? w : sd->key);
	free(w);
	return rc;
}

static json_t *side_json(const jside *sd)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "store", sd->url, "key", sd->key,
			      "old_hash", sd->old_exists ? sd->old_hex : "", "new_hash",
			      sd->new_hex, "staged", sd->staged, "journal", sd->journal);
	if (o && ((strcmp(sd->key, sd->old_key) &&
		   json_object_set_new(o, "old_key", json_string(sd->old_key))) ||
		  (sd->lock && (json_object_set_new(o, "lock", json_string(sd->lock)) ||
				json_object_set_new(o, "lock_hash", json_string(sd->lock_hash)))) ||
		  (sd->lock_made &&
		   json_object_set_new(o, "lock_made", json_string(sd->lock_made))) ||
		  (sd->id && json_object_set_new(o, "store_id", json_string(sd->id))) ||
		  (sd->role && json_object_set_new(o, "role", json_string(sd->role))))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int journal_text(const char *op, const jside *A, const jside *B, char **text,
			size_t *len, st_error *err)
{
	json_t *a = side_json(A), *b = side_json(B), *j;
	st_style st;
	int rc;

	j = a && b ? json_pack("{s:i,s:s,s:s,s:[oo]}", "statetool_journal", JOURNAL_VERSION,
			       "hash", "xxh3-128", "operation", op, "sides", a, b)
		   : NULL;
	if (!j) {
		if (!a || !b) {
			json_decref(a);
			json_decref(b);
		}
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	st_style_checkpoint(&st);
	rc = st_json_dump(j, &st, text, len, err);
	json_decref(j);
	return rc;
}

/* Keeps the current object(s) as .bak and puts the staged object in place. */
static int install(jside *sd, st_error *err)
{
	int moved = strcmp(sd->key, sd->old_key) != 0;
	char *bak = st_asprintf("%s.bak", sd->key);
	char *oldbak = moved ? st_asprintf("%s.bak", sd->old_key) : NULL;
	int rc = ST_OK;

	if (!bak || (moved && !oldbak))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK)
		rc = st__store_backup(sd->store, sd->key, bak, err);
	if (rc == ST_OK && moved)
		rc = st__store_backup(sd->store, sd->old_key, oldbak, err);
	if (rc == ST_OK)
		rc = st__store_rename(sd->store, sd->staged, sd->key, err);
	if (rc == ST_OK) /* a stack's checkpoint replaced, as a save replaces it */
		rc = st__store_checkpoint_saved(sd->store, sd->key, err);
	if (rc == ST_OK && moved && (rc = st_store_delete(sd->store, sd->old_key, err)) ==
					   ST_ENOTFOUND) {
		rc = ST_OK;
		if (err)
			st_error_clear(err);
	}
	free(bak);
	free(oldbak);
	return rc;
}

static void remove_quietly(st_store *s, const char *key)
{
	st_store_delete(s, key, NULL);
}

/* The sides' roles, as the caller gives them: a move's `a` is its destination and `b` its
 * source (st_journal_save); another operation's sides have none. */
static void roles(const char *op, jside *A, jside *B)
{
	int move = op && !strcmp(op, "move");
	A->role = move ? "dest" : NULL;
	B->role = move ? "source" : NULL;
}

/* The pair write: both staged, a journal beside each, then both installed (see the top). */
static int write_pair(const char *op, jside *A, jside *B, st_error *err)
{
	char *text = NULL, *wa = NULL;
	size_t tlen;
	int rc;

	if (!strcmp(A->id, B->id) && !strcmp(A->key, B->key)) {
		wa = where(A, A->key);
		rc = st__err(err, ST_EINVAL, "source and destination are the same file '%s'",
			     wa ? wa : A->key);
		free(wa);
		return rc;
	}
	if ((rc = side_check(A, err)) != ST_OK || (rc = side_check(B, err)) != ST_OK)
		return rc;
	if ((rc = stage_both(A, B, err)) != ST_OK || (rc = versions_distinct(A, err)) != ST_OK ||
	    (rc = versions_distinct(B, err)) != ST_OK)
		goto out_unstage;
	st__phase("pair: old objects hashed, both staged");
	st__crash_point("pair", 1);
	st__crash_point("pair", 2);
	if ((rc = journal_text(op, A, B, &text, &tlen, err)) != ST_OK ||
	    (rc = st_store_write(A->store, A->journal, text, tlen, NULL, err)) != ST_OK)
		goto out_unstage;
	st__crash_point("pair", 3);
	if ((rc = st_store_write(B->store, B->journal, text, tlen, NULL, err)) != ST_OK) {
		remove_quietly(A->store, A->journal);
		goto out_unstage;
	}
	st__crash_point("pair", 4);
	/* Committed: from here on, recovery finishes the job. */
	if ((rc = install(A, err)) != ST_OK)
		goto out;
	st__crash_point("pair", 5);
	if ((rc = install(B, err)) != ST_OK)
		goto out;
	st__crash_point("pair", 6);
	remove_quietly(A->store, A->journal);
	st__crash_point("pair", 7);
	remove_quietly(B->store, B->journal);
	st__phase("pair: journals written, objects installed");
	goto out;
out_unstage:
	remove_quietly(A->store, A->staged);
	remove_quietly(B->store, B->staged);
out:
	free(text);
	return rc;
}

int st_journal_save(const char *op, const st_pair_side *a, const st_pair_side *b,
		    st_error *err)
{
	ST_ASSERT_ARG(op);
	jside A, B;
	int rc;

	ST_ASSERT_ARG(a);
	ST_ASSERT_ARG(b);
	rc = side_prepare(&A, a, err);

	if (rc == ST_OK)
		rc = side_prepare(&B, b, err);
	else
		memset(&B, 0, sizeof(B));
	roles(op, &A, &B);
	if (rc == ST_OK)
		rc = write_pair(op, &A, &B, err);
	jside_free(&A);
	jside_free(&B);
	return rc;
}

/* ---- reading a journal ---- */

typedef struct journal {
	json_t *doc;
	char *where; /* of the journal read, for messages */
	const char *op;
	st__jhash alg; /* its hashes' (version 1: SHA-256, 2 and 3: BLAKE2b-256) */
	jside side[2];
} journal;

static void journal_free(journal *j)
{
	json_decref(j->doc);
	free(j->where);
	jside_free(&j->side[0]);
	jside_free(&j->side[1]);
}

/* The store of a side: one the caller has open when its locator matches, else opened from
 * the journal's URL, which has no credentials: a failure says so. */
static int side_store(const journal *j, jside *sd, st_store *const *known, size_t nknown,
		      st_error *err)
{
	st_error oerr;
	int rc, pg = !strncmp(sd->url, "postgres://", 11) || !strncmp(sd->url, "postgresql://", 13);

	/* by identity (any spelling of the store's URL), else (an older journal) by locator */
	for (size_t i = 0; i < nknown; i++) {
		char *loc = NULL;
		int same;
		if (!known[i])
			continue;
		if (!sd->id)
			loc = st__store_locator(known[i]);
		else if ((rc = st__store_identity(known[i], &loc, err)) != ST_OK)
			return rc;
		same = loc && !strcmp(loc, sd->id ? sd->id : sd->url);
		free(loc);
		if (same) {
			sd->store = known[i];
			return ST_OK;
		}
	}
	sd->owns = 1;
	st_error_clear(&oerr);
	if ((rc = st_store_open(&sd->store, sd->url, &oerr)) == ST_OK || rc == ST_ENOMEM)
		return rc == ST_OK ? ST_OK : st__err(err, rc, "out of memory");
	return st__err(err, rc,
		       "cannot complete the interrupted %s recorded in '%s': %s; the journal keeps "
		       "no credentials: they come from the environment%s, or `statetool move "
		       "--recover` with the same URLs completes it",
		       j->op ? j->op : "operation", j->where ? j->where : "?", oerr.message,
		       pg ? " (PGPASSWORD or PGPASSFILE: the URL's password is not kept)" : "");
}

static int sibling(const char *key, const char *of, const char *suffix)
{
	size_t n = strlen(of);
	return key && !strncmp(key, of, n) && !strcmp(key + n, suffix);
}

/* A side of a version 3 or 4 journal. */
static int parse_v3(jside *sd, json_t *f, st_error *err)
{
	const char *url = st_json_str(f, "store"), *key = st_json_str(f, "key");
	const char *old = st_json_str(f, "old_key"), *staged = st_json_str(f, "staged");
	const char *jn = st_json_str(f, "journal");
	const char *oh = st_json_str(f, "old_hash"), *nh = st_json_str(f, "new_hash");
	const char *lk = st_json_str(f, "lock"), *made = st_json_str(f, "lock_made");
	const char *lh = st_json_str(f, "lock_hash"), *id = st_json_str(f, "store_id");
	const char *role = st_json_str(f, "role");

	if (!old)
		old = key;
	if (!url || !key || !oh || !nh || strlen(oh) > 64 || strlen(nh) > 64 ||
	    !st_store_key_valid(key) || !st_store_key_valid(old) ||
	    !sibling(staged, key, STAGED_SUFFIX) || (jn && !sibling(jn, old, JOURNAL_SUFFIX)) ||
	    (json_object_get(f, "lock") && (!lk || !st_store_key_valid(lk) || !lh ||
					      strlen(lh) != 64)) ||
	    (json_object_get(f, "lock_made") && (!lk || !made || strncmp(lk, made, strlen(made)))) ||
	    (lk && !st__pairlock_fits(key, lk, made)))
		return st__err(err, ST_EFORMAT, "the journal names a side it cannot describe (a "
						"store, a key, its staged object beside it, hashes, "
						"its lock)");
	if ((lk && !(sd->lock = st_strdup(lk))) || (made && !(sd->lock_made = st_strdup(made))))
		return st__err(err, ST_ENOMEM, "out of memory");
	snprintf(sd->lock_hash, sizeof(sd->lock_hash), "%s", lh ? lh : "");
	sd->role = !role			? NULL
		   : !strcmp(role, "dest")	? "dest"
		   : !strcmp(role, "source") ? "source"
					      : NULL;
	if (!(sd->url = st_strdup(url)) || (id && !(sd->id = st_strdup(id))) ||
	    !(sd->key = st_strdup(key)) || !(sd->old_key = st_strdup(old)) ||
	    !(sd->staged = st_strdup(staged)) ||
	    !(sd->journal = st_asprintf("%s" JOURNAL_SUFFIX, old)))
		return st__err(err, ST_ENOMEM, "out of memory");
	snprintf(sd->old_hex, sizeof(sd->old_hex), "%s", oh);
	snprintf(sd->new_hex, sizeof(sd->new_hex), "%s", nh);
	sd->old_exists = *oh != '\0';
	return ST_OK;
}

/* A file of a version 1 or 2 journal (absolute paths): the file store of its directory. */
static int parse_v12(jside *sd, json_t *f, int v1, st_error *err)
{
	const char *path = st_json_str(f, "path"), *staged = st_json_str(f, "staged");
	const char *oh = st_json_str(f, v1 ? "old_sha256" : "old_hash");
	const char *nh = st_json_str(f, v1 ? "new_sha256" : "new_hash");
	int rc;

	if (!path || path[0] != '/' || !oh || !nh || strlen(oh) > 64 || strlen(nh) > 64 ||
	    !sibling(staged, path, STAGED_SUFFIX))
		return st__err(err, ST_EFORMAT, "the journal names a file it cannot describe (a "
						"path, its staged file beside it, hashes)");
	if ((rc = st__store_for_path(&sd->store, &sd->key, path, err)) != ST_OK)
		return rc;
	sd->owns = 1;
	if (!(sd->url = st__store_locator(sd->store)) || !(sd->old_key = st_strdup(sd->key)) ||
	    !(sd->staged = st_asprintf("%s" STAGED_SUFFIX, sd->key)) ||
	    !(sd->journal = st_asprintf("%s" JOURNAL_SUFFIX, sd->key)))
		return st__err(err, ST_ENOMEM, "out of memory");
	snprintf(sd->old_hex, sizeof(sd->old_hex), "%s", oh);
	snprintf(sd->new_hex, sizeof(sd->new_hex), "%s", nh);
	sd->old_exists = *oh != '\0';
	return ST_OK;
}

/* The hash a journal of version v names: version 1's SHA-256, 2's and 3's BLAKE2b-256, the
 * "hash" member of a later one (4: "xxh3-128"). */
static int journal_hash(journal *j, double v, st_error *err)
{
	const char *h = st_json_str(j->doc, "hash");

	j->alg = v == 1 ? ST__JH_SHA256 : ST__JH_BLAKE2B;
	if (v < 4 || (h && !strcmp(h, "blake2b-256")))
		return ST_OK;
	if (h && !strcmp(h, "xxh3-128")) {
		j->alg = ST__JH_XXH3;
		return ST_OK;
	}
	return st__err(err, ST_EFORMAT, "the journal '%s' names a hash this statetool does not "
					"know (%s)",
		       j->where ? j->where : "?", h ? h : "none");
}

/* Reads the journal `jkey` of store `s` (ST_ENOTFOUND when there is none) and opens the
 * stores of both sides. */
static int journal_read(journal *j, st_store *s, const char *jkey, st_store *const *known,
			size_t nknown, st_error *err)
{
	char *text = NULL, *w;
	size_t len = 0, i;
	json_t *arr, *f;
	double v;
	int rc;

	memset(j, 0, sizeof(*j));
	if ((rc = st_store_read(s, jkey, 1 << 20, &text, &len, NULL, err)) != ST_OK)
		return rc;
	rc = st_json_parse(&j->doc, text, len, jkey, NULL, NULL, NULL, err);
	free(text);
	if (rc)
		return rc;
	w = j->where = st__store_where(s, jkey);
	v = json_number_value(json_object_get(j->doc, "statetool_journal"));
	j->op = st_json_str(j->doc, "operation");
	if (v != 1 && v != 2 && v != 3 && v != JOURNAL_VERSION)
		rc = st__err(err, ST_EVERSION, "the journal '%s' is of a version this statetool does "
					     "not know (%g); a newer statetool wrote it",
			     w ? w : jkey, v);
	else
		rc = journal_hash(j, v, err);
	arr = json_object_get(j->doc, v >= 3 ? "sides" : "files");
	if (rc == ST_OK && (!j->op || json_array_size(arr) != 2))
		rc = st__err(err, ST_EFORMAT, "the journal '%s' names no operation or not two "
					      "sides", w ? w : jkey);
	json_array_foreach(arr, i, f) {
		if (rc != ST_OK || i > 1)
			break;
		rc = v >= 3 ? parse_v3(&j->side[i], f, err)
			    : parse_v12(&j->side[i], f, v == 1, err);
		if (rc == ST_OK && !j->side[i].store)
			rc = side_store(j, &j->side[i], known, nknown, err);
	}
	return rc;
}

/* ---- recovery ---- */

/* Where a side stands: *installed (its key holds the new bytes) or *untouched (its old
 * version is still in place). */
static int side_state(const journal *j, jside *sd, int *installed, int *untouched,
		      st_error *err)
{
	char cur[65];
	int ex, rc;

	*installed = *untouched = 0;
	if ((rc = hash_object(j->alg, sd->store, sd->key, cur, &ex, err)) != ST_OK)
		return rc;
	if (ex && !strcmp(cur, sd->new_hex)) {
		*installed = 1;
		return ST_OK;
	}
	if (strcmp(sd->key, sd->old_key) &&
	    (rc = hash_object(j->alg, sd->store, sd->old_key, cur, &ex, err)) != ST_OK)
		return rc;
	*untouched = sd->old_exists ? ex && !strcmp(cur, sd->old_hex) : !ex;
	return ST_OK;
}

/* Where the other side's journal is (the twin of the one read), in full: its store's
 * locator without secrets and its key. NULL when out of memory. */
static char *twin_where(const journal *j)
{
	char *w[2] = {where(&j->side[0], j->side[0].journal), where(&j->side[1], j->side[1].journal)};
	char *twin;

	if (!w[0] || !w[1]) {
		free(w[0]);
		free(w[1]);
		return NULL;
	}
	/* the journal read is one side's (its store is that side's: the where is the same) */
	twin = j->where && !strcmp(j->where, w[1]) ? w[0] : w[1];
	free(twin == w[0] ? w[1] : w[0]);
	return twin;
}

/* Every side either done or still old with an intact staged object. */
static int recover_check(const journal *j, int installed[2], st_error *err)
{
	for (int i = 0; i < 2; i++) {
		jside *sd = (jside *)&j->side[i];
		char st[65], *wk = NULL, *ws = NULL, *wt = NULL;
		const char *wj = j->where;
		int untouched, sx, rc;
		if ((rc = side_state(j, sd, &installed[i], &untouched, err)) != ST_OK)
			return rc;
		if (installed[i])
			continue;
		wk = where(sd, sd->old_key);
		ws = where(sd, sd->staged);
		if (!untouched && (wt = twin_where(j)))
			rc = st__err(err, ST_ECONFLICT,
				     "an interrupted %s left the journal '%s', but '%s' has "
				     "changed since (it is neither the version before nor the "
				     "version after); resolve it by hand: the staged new version is "
				     "'%s', then remove '%s' and its twin '%s'",
				     j->op, wj ? wj : "?", wk ? wk : "?", ws ? ws : "?", wj ? wj : "?",
				     wt);
		else if (!untouched)
			rc = st__err(err, ST_ENOMEM, "out of memory");
		else if ((rc = hash_object(j->alg, sd->store, sd->staged, st, &sx, err)) == ST_OK &&
			 (!sx || strcmp(st, sd->new_hex)))
			rc = st__err(err, ST_ECONFLICT,
				     "an interrupted %s cannot be completed: the staged new version "
				     "of '%s' is missing or damaged; the old version is intact",
				     j->op, wk ? wk : "?");
		free(wk);
		free(ws);
		free(wt);
		if (rc)
			return rc;
	}
	return ST_OK;
}

/* A side already installed: what a crash left behind (the staged object of a copy, the old
 * object of a change of key, when it still holds the old bytes). */
static int tidy_installed(const journal *j, jside *sd, st_error *err)
{
	char cur[65];
	int ex, rc;

	remove_quietly(sd->store, sd->staged);
	if (!strcmp(sd->key, sd->old_key))
		return ST_OK;
	if ((rc = hash_object(j->alg, sd->store, sd->old_key, cur, &ex, err)) != ST_OK)
		return rc;
	if (ex && sd->old_exists && !strcmp(cur, sd->old_hex)) {
		char *bak = st_asprintf("%s.bak", sd->old_key);
		rc = bak ? st__store_backup(sd->store, sd->old_key, bak, err)
			 : st__err(err, ST_ENOMEM, "out of memory");
		free(bak);
		if (rc == ST_OK)
			remove_quietly(sd->store, sd->old_key);
	}
	return rc;
}

/* The recovery's locks on both sides (see pairlock.c): refused, nothing written, when someone
 * else holds one. `only` (0 or 1, else -1): that side's checked, nothing taken. */
static int recover_lock(const journal *j, int only, st_lock *taken[2], int replaced[2],
			st_error *err)
{
	int rc;
	const char *loc[2] = {j->side[0].url, j->side[1].url};
	const char *key[2] = {j->side[0].key, j->side[1].key};
	const char *role[2] = {j->side[0].role, j->side[1].role};
	char *tail;

	/* the roles the journal records; a move's journal without them (an older statetool's)
	 * has its destination first, as every statetool wrote it */
	if (!role[0] || !role[1] || !strcmp(role[0], role[1])) {
		int move = j->op && !strcmp(j->op, "move") && !role[0] && !role[1];
		role[0] = move ? "dest" : NULL;
		role[1] = move ? "source" : NULL;
	}
	tail = st__pairlock_tail(j->op, j->where ? j->where : "?", loc, key, role);
	rc = tail ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");

	/* both checked before either is taken: a refusal changes nothing on the other side */
	for (int i = 0; rc == ST_OK && i < 2; i++)
		if (only < 0 || only == i)
			rc = st__pairlock_check(j->side[i].store, j->side[i].key, j->side[i].lock,
						j->side[i].lock_hash, tail, err);
	for (int i = 0; rc == ST_OK && only < 0 && i < 2; i++)
		rc = st__pairlock_take(&taken[i], j->side[i].store, j->side[i].key,
				       j->side[i].lock, j->side[i].lock_hash, tail, &replaced[i], err);
	free(tail);
	return rc;
}

/* Each side not yet installed gets its staged version; the journals go. */
static int roll_forward(journal *j, st_changes *report, st_error *err)
{
	int installed[2], rc;

	if ((rc = recover_check(j, installed, err)) != ST_OK)
		return rc;
	for (int i = 0; i < 2; i++) {
		jside *sd = &j->side[i];
		if (installed[i]) {
			if ((rc = tidy_installed(j, sd, err)) != ST_OK)
				return rc;
		} else {
			if ((rc = install(sd, err)) != ST_OK)
				return rc;
			char *w = where(sd, sd->key);
			st_changes_add(report, "completed the interrupted %s: wrote %s", j->op,
				       w ? w : sd->key);
			free(w);
		}
		/* the generation a save writes after writing (GENERATIONS), which the
		 * interrupted run did not reach */
		if ((rc = st__store_generation_after(sd->store, sd->key, err)) != ST_OK)
			return rc;
	}
	for (int i = 0; i < 2; i++)
		remove_quietly(j->side[i].store, j->side[i].journal);
	st_changes_add(report, "the interrupted %s is complete; its journal is removed", j->op);
	return ST_OK;
}

/* ST_JOURNAL_CHECK_HERE: the locks of the side whose journal is the one read only. */
static int check_here(const journal *j, st_error *err)
{
	char *w = where(&j->side[0], j->side[0].journal);
	int here = w && j->where && !strcmp(w, j->where) ? 0 : 1;
	free(w);
	return recover_lock(j, here, NULL, NULL, err);
}

static int recover_journal(journal *j, st_changes *report, st_error *err)
{
	st_lock *taken[2] = {NULL, NULL};
	int replaced[2] = {0, 0}, rc = recover_lock(j, -1, taken, replaced, err);

	if (rc == ST_OK)
		rc = roll_forward(j, report, err);
	for (int i = 0; i < 2; i++)
		st_lock_release(taken[i], NULL);
	/* complete: the crashed operation's locks go (never this process's: not recorded) */
	for (int i = 0; rc == ST_OK && i < 2; i++)
		st__pairlock_remove(j->side[i].store, j->op, j->side[i].lock,
				    j->side[i].lock_hash, j->side[i].lock_made, replaced[i], report);
	return rc;
}

int st_journal_recover_key(st_store *s, const char *key, st_store *const *known, size_t nknown,
			   unsigned flags, st_changes *report, st_error *err)
{
	char *jkey, *staged = NULL;
	st_store **all;
	journal j;
	int rc, none;

	ST_ASSERT_ARG(known || !nknown);
	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG(key);
	if (flags & ~(unsigned)(ST_JOURNAL_CLEAN_STAGED | ST_JOURNAL_CHECK_HERE))
		return st__bad_flags(err, flags, ST_JOURNAL_CLEAN_STAGED | ST_JOURNAL_CHECK_HERE,
				     "ST_JOURNAL_CLEAN_STAGED and ST_JOURNAL_CHECK_HERE");
	jkey = st_asprintf("%s" JOURNAL_SUFFIX, key);
	all = calloc(nknown + 1, sizeof(*all));
	if (!jkey || !all) {
		free(jkey);
		free(all);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	all[0] = s;
	for (size_t i = 0; i < nknown; i++)
		all[i + 1] = known[i];
	rc = journal_read(&j, s, jkey, all, nknown + 1, err);
	if (rc == ST_OK && (flags & ST_JOURNAL_CHECK_HERE))
		rc = check_here(&j, err);
	else if (rc == ST_OK)
		rc = recover_journal(&j, report, err);
	none = rc == ST_ENOTFOUND && !j.doc;
	journal_free(&j);
	if (none) {
		/* no journal: nothing was committed */
		rc = ST_OK;
		if (err)
			st_error_clear(err);
		if ((flags & ST_JOURNAL_CLEAN_STAGED) && !(flags & ST_JOURNAL_CHECK_HERE) &&
		    (staged = st_asprintf("%s" STAGED_SUFFIX, key)) &&
		    st_store_delete(s, staged, NULL) == ST_OK) {
			char *w = st__store_where(s, staged);
			st_changes_add(report, "removed %s (a move that crashed before it was "
					       "committed; nothing had changed)",
				       w ? w : staged);
			free(w);
		}
	}
	free(staged);
	free(jkey);
	free(all);
	return rc;
}

/* ---- plain files ---- */

int st_journal_write_pair(const char *op, const char *path_a, const void *data_a, size_t len_a,
			  const char *path_b, const void *data_b, size_t len_b, st_error *err)
{
	ST_ASSERT_ARG(op);
	ST_ASSERT_ARG(path_a);
	ST_ASSERT_ARG(data_a || !len_a);
	ST_ASSERT_ARG(path_b);
	ST_ASSERT_ARG(data_b || !len_b);
	st_store *sa = NULL, *sb = NULL;
	char *ka = NULL, *kb = NULL;
	jside A, B;
	int rc;

	memset(&A, 0, sizeof(A));
	memset(&B, 0, sizeof(B));
	rc = st__store_for_path(&sa, &ka, path_a, err);
	if (rc == ST_OK)
		rc = st__store_for_path(&sb, &kb, path_b, err);
	if (rc == ST_OK && (rc = st__store_identity(sa, &A.id, err)) == ST_OK)
		rc = st__store_identity(sb, &B.id, err);
	if (rc == ST_OK && (!(A.url = st__store_locator(sa)) || !(B.url = st__store_locator(sb)) ||
			    !(A.staged = st_asprintf("%s" STAGED_SUFFIX, ka)) ||
			    !(B.staged = st_asprintf("%s" STAGED_SUFFIX, kb)) ||
			    !(A.journal = st_asprintf("%s" JOURNAL_SUFFIX, ka)) ||
			    !(B.journal = st_asprintf("%s" JOURNAL_SUFFIX, kb)) ||
			    !(A.old_key = st_strdup(ka)) || !(B.old_key = st_strdup(kb)) ||
			    !(A.data = malloc(len_a + 1)) || !(B.data = malloc(len_b + 1))))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK) {
		A.store = sa;
		B.store = sb;
		A.key = ka;
		B.key = kb;
		st__pairlock_mine(sa, ka, &A.lock, &A.lock_made, A.lock_hash);
		st__pairlock_mine(sb, kb, &B.lock, &B.lock_made, B.lock_hash);
		ka = kb = NULL;
		memcpy(A.data, data_a, len_a);
		memcpy(B.data, data_b, len_b);
		A.len = len_a;
		B.len = len_b;
		roles(op, &A, &B);
		rc = write_pair(op, &A, &B, err);
	}
	jside_free(&A);
	jside_free(&B);
	free(ka);
	free(kb);
	st_store_free(sa);
	st_store_free(sb);
	return rc;
}
