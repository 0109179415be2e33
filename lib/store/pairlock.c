/*
 * The locks of a two-stack operation (journal.c). The writer holds each stack's lock (a DIY
 * stack's lock folder, a plain file's <file>.lock: lock.c) and its journal names them
 * (st__pairlock_mine), so that a recovery can tell the crashed operation's own locks from
 * anyone else's. A recovery writes a stack only as a save would: it takes the stack's lock
 * (st__pairlock_take; both sides checked first, st__pairlock_check), where a lock other than the
 * crashed operation's own and this process's refuses it with Pulumi's message, nothing changed
 * on either side; a plain file's <file>.lock is written as st_lock_file writes it, the crashed
 * operation's own replaced by the recovery's (it has one name); once the operation is
 * complete, the crashed operation's locks are removed (st__pairlock_remove), with the folders
 * their writes made, as a release would. A journal that names no lock (written by an older
 * statetool) has none of its own: every lock is then someone else's.
 */
#include "store_impl.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STACKS ".pulumi/stacks/"

static int has_suffix(const char *s, size_t n, const char *suffix)
{
	size_t sl = strlen(suffix);
	return n > sl && !memcmp(s + n - sl, suffix, sl);
}

/* A DIY stack key's names: "P/S" (or "S" in the legacy layout) (new); NULL when the key is no
 * stack object (a plain file). */
static char *stack_names(const char *key)
{
	static const char *const ends[] = {".json", ".json.gz", ".json.zst"};
	const char *rest, *slash;
	size_t n;

	if (strncmp(key, STACKS, strlen(STACKS)))
		return NULL;
	rest = key + strlen(STACKS);
	n = strlen(rest);
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		if (!has_suffix(rest, n, ends[i]))
			continue;
		n -= strlen(ends[i]);
		slash = memchr(rest, '/', n);
		if (slash && (slash == rest || memchr(slash + 1, '/', n - (size_t)(slash + 1 - rest))))
			return NULL;
		return st_asprintf("%.*s", (int)n, rest);
	}
	return NULL;
}

/* Where the lock of the side at `key` is: *dir, a DIY stack's lock folder, or *file, a plain
 * file's <key>.lock (one set, new). ST_OK or ST_ENOMEM. */
static int lock_place(const char *key, char **dir, char **file)
{
	char *names = stack_names(key), *slash;

	*dir = *file = NULL;
	if (!names) {
		*file = st_asprintf("%s.lock", key);
		return *file ? ST_OK : ST_ENOMEM;
	}
	slash = strchr(names, '/');
	if (slash)
		*slash = '\0';
	*dir = slash ? st__diy_lock_dir(names, slash + 1) : st__diy_lock_dir(NULL, names);
	free(names);
	return *dir ? ST_OK : ST_ENOMEM;
}

int st__pairlock_fits(const char *key, const char *lock, const char *made)
{
	char *dir = NULL, *file = NULL;
	int fits = 0;

	if (lock_place(key, &dir, &file) == ST_OK)
		fits = dir ? !strncmp(lock, dir, strlen(dir)) && !strchr(lock + strlen(dir), '/') &&
				     lock[strlen(dir)] != '\0' &&
				     (!made || !strncmp(dir, made, strlen(made)))
			   : !strcmp(lock, file) && !made;
	free(dir);
	free(file);
	return fits;
}

void st__pairlock_mine(st_store *s, const char *key, char **lock, char **made, char hash[65])
{
	char *dir = NULL, *file = NULL;
	int found;

	*lock = *made = NULL;
	hash[0] = '\0';
	/* (a lock of this process was registered by this identity: held_add; one that fails now
	 * finds no lock, which the recovery then counts as another's, the safe side) */
	if (lock_place(key, &dir, &file) == ST_OK)
		st__lock_held(s, dir, file, lock, made, hash, &found, NULL);
	free(dir);
	free(file);
}

/* A plain file's path from its store's locator (file://DIR) and key, or NULL. */
static char *file_path(const char *loc, const char *key)
{
	return strncmp(loc, "file://", 7) ? NULL : st_asprintf("%s/%s", loc + 7, key);
}

/* `--<role>-backend URL --<role> P/S` or `--<role> PATH` for move --recover (new). */
static char *side_args(const char *role, const char *loc, const char *key)
{
	char *names = stack_names(key), *path = names ? NULL : file_path(loc, key);
	char *w = st__shell_word(names ? loc : path ? path : key), *out;

	out = !w      ? NULL
	      : names ? st_asprintf("--%s-backend %s --%s %s", role, w, role, names)
		      : st_asprintf("--%s %s", role, w);
	free(names);
	free(path);
	free(w);
	return out;
}

/* A side as the message names it: `stack P/S of URL` or the file's path (new). */
static char *side_named(const char *loc, const char *key)
{
	char *names = stack_names(key), *path = names ? NULL : file_path(loc, key), *out;
	out = names  ? st_asprintf("stack %s of %s", names, loc)
	      : path ? st_strdup(path)
		     : st_asprintf("%s/%s", loc, key);
	free(names);
	free(path);
	return out;
}

char *st__pairlock_tail(const char *op, const char *journal, const char *const loc[2],
			const char *const key[2], const char *const role[2])
{
	char *a = NULL, *b = NULL, *out = NULL;
	int s = role[0] && !strcmp(role[0], "source") ? 0 : 1; /* the source's side */

	if (role[0] && role[1]) {
		a = side_args("dest", loc[!s], key[!s]);
		b = side_args("source", loc[s], key[s]);
		out = a && b ? st_asprintf("\nan interrupted %s is pending (journal '%s'): once the "
					   "lock is gone, `statetool move --recover %s %s` (or any "
					   "statetool command on either stack) completes it",
					   op, journal, b, a)
			     : NULL;
	} else { /* an operation whose sides have no roles: both named as they are */
		a = side_named(loc[0], key[0]);
		b = side_named(loc[1], key[1]);
		out = a && b ? st_asprintf("\nan interrupted %s is pending (journal '%s'): once the "
					   "lock is gone, any statetool command on either side (%s, "
					   "%s) completes it",
					   op, journal, a, b)
			     : NULL;
	}
	free(a);
	free(b);
	return out;
}

/* The command that removes the side's lock (new). */
static char *unlock_hint(const char *loc, const char *key)
{
	char *names = stack_names(key), *path = names ? NULL : file_path(loc, key);
	char *w = st__shell_word(names ? loc : path ? path : key), *out;

	out = !w      ? NULL
	      : names ? st_asprintf("statetool unlock --backend %s --stack %s", w, names)
		      : st_asprintf("statetool unlock %s", w);
	free(names);
	free(path);
	free(w);
	return out;
}

/* Takes the side's lock (taken not NULL) or only checks it. */
static int take_or_check(st_lock **taken, st_store *s, const char *key, const char *own,
			 const char *own_hash, const char *tail, int *replaced, st_error *err)
{
	char *dir = NULL, *file = NULL, *loc = st__store_locator(s), *hint = NULL;
	int held = 0, rc = loc && lock_place(key, &dir, &file) == ST_OK &&
				   (hint = unlock_hint(loc, key))
			       ? ST_OK
			       : st__err(err, ST_ENOMEM, "out of memory");

	/* a lock this process holds there already (the command that runs the recovery) */
	if (rc == ST_OK)
		rc = st__lock_held(s, dir, file, NULL, NULL, NULL, &held, err);
	if (rc == ST_OK && !held)
		rc = !taken ? st__lock_own_check(s, dir, file, own, own_hash, hint, tail, err)
		     : dir  ? st__lock_store_own(taken, s, dir, own, own_hash, hint, tail, err)
			    : st__lock_file_own(taken, s, file, own, own_hash, hint, tail, replaced,
						err);
	free(dir);
	free(file);
	free(loc);
	free(hint);
	return rc;
}

int st__pairlock_take(st_lock **taken, st_store *s, const char *key, const char *own,
		      const char *own_hash, const char *tail, int *replaced, st_error *err)
{
	*taken = NULL;
	*replaced = 0;
	return take_or_check(taken, s, key, own, own_hash, tail, replaced, err);
}

int st__pairlock_check(st_store *s, const char *key, const char *own, const char *own_hash,
		       const char *tail, st_error *err)
{
	return take_or_check(NULL, s, key, own, own_hash, tail, NULL, err);
}

void st__pairlock_remove(st_store *s, const char *op, const char *own, const char *own_hash,
			 const char *made, int replaced, st_changes *report)
{
	char *w;

	if (!own || !own_hash || (!replaced && !st__lock_remove_if(s, own, own_hash)))
		return;
	if (!replaced)
		st__store_file_prune(s, own, made);
	w = st__store_where(s, own);
	st_changes_add(report, "removed the interrupted %s's lock %s", op, w ? w : own);
	free(w);
}

/* ---- the locks a two-stack operation that died before its journal left ---- */

/* One lock of a side: its key (new) and, when it names this host, its pid (else 0). */
typedef struct dead_lock {
	char *key;
	long pid;
	int dead; /* on this host, its process no longer running */
} dead_lock;

static void dead_locks_free(dead_lock *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].key);
	free(v);
}

/* The lock's process when the lock names this host (*pid, else 0), and whether it is gone. */
static void lock_process(st_store *s, const char *key, long *pid, int *dead)
{
	char *data = NULL, host[256] = "";
	size_t len;
	json_t *o = NULL;
	const char *h;
	double p;

	*pid = 0;
	*dead = 0;
	if (st_store_read(s, key, 1 << 16, &data, &len, NULL, NULL) == ST_OK &&
	    st_json_parse(&o, data, len, NULL, NULL, NULL, NULL, NULL) == ST_OK &&
	    (h = st_json_str(o, "hostname")) && gethostname(host, sizeof(host) - 1) == 0 &&
	    !strcmp(h, host)) {
		p = json_number_value(json_object_get(o, "pid"));
		if (p >= 1 && p <= 4194304 && p == (double)(long)p && (pid_t)p != getpid()) {
			*pid = (long)p;
			*dead = kill((pid_t)p, 0) < 0 && errno == ESRCH;
		}
	}
	json_decref(o);
	free(data);
}

/* Every lock of the side at `key` (its lock folder's objects, or <key>.lock). */
static int side_locks(st_store *s, const char *key, dead_lock **out, size_t *n, st_error *err)
{
	char *dir = NULL, *file = NULL;
	st_store_entry *e = NULL;
	size_t ne = 0;
	int rc = lock_place(key, &dir, &file) == ST_OK ? ST_OK
						       : st__err(err, ST_ENOMEM, "out of memory");

	*out = NULL;
	*n = 0;
	if (rc == ST_OK && dir)
		rc = st_store_list(s, dir, ST_STORE_LIST_DIRS, &e, &ne, err);
	else if (rc == ST_OK && st_store_stat(s, file, NULL, NULL) == ST_OK) {
		rc = (e = calloc(1, sizeof(*e))) && (e[0].key = st_strdup(file))
			     ? ST_OK
			     : st__err(err, ST_ENOMEM, "out of memory");
		ne = e ? 1 : 0;
	}
	if (rc == ST_OK && ne && !(*out = calloc(ne, sizeof(**out))))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	for (size_t i = 0; rc == ST_OK && i < ne; i++) {
		if (e[i].key[strlen(e[i].key) - 1] == '/')
			continue;
		dead_lock *d = &(*out)[(*n)++];
		if (!(d->key = st_strdup(e[i].key)))
			rc = st__err(err, ST_ENOMEM, "out of memory");
		else
			lock_process(s, d->key, &d->pid, &d->dead);
	}
	st_store_entries_free(e, ne);
	free(dir);
	free(file);
	return rc;
}

int st_pair_unlock_dead(st_store *sa, const char *ka, st_store *sb, const char *kb,
			st_changes *report, st_error *err)
{
	st_store *s[2] = {sa, sb};
	const char *key[2] = {ka, kb};
	dead_lock *v[2] = {NULL, NULL};
	size_t n[2] = {0, 0};
	int rc = ST_OK;

	ST_ASSERT_ARG(sa);
	ST_ASSERT_ARG(ka);
	ST_ASSERT_ARG(sb);
	ST_ASSERT_ARG(kb);
	for (int k = 0; k < 2; k++)
		if (!st_store_key_valid(key[k]))
			return st__err(err, ST_EINVAL, "invalid key '%s'", key[k]);
	for (int k = 0; rc == ST_OK && k < 2; k++)
		rc = side_locks(s[k], key[k], &v[k], &n[k], err);
	/* a dead process of this host that held a lock on both sides: the operation's own */
	for (int k = 0; rc == ST_OK && k < 2; k++)
		for (size_t i = 0; i < n[k]; i++) {
			int paired = 0;
			if (!v[k][i].dead)
				continue;
			for (size_t j = 0; !paired && j < n[!k]; j++)
				paired = v[!k][j].pid == v[k][i].pid;
			if (!paired || st_store_delete(s[k], v[k][i].key, NULL) != ST_OK)
				continue;
			char *w = st__store_where(s[k], v[k][i].key);
			st_changes_add(report,
				       "removed the lock %s of the interrupted move (process %ld, "
				       "which held both stacks' locks, is gone from this host)",
				       w ? w : v[k][i].key, v[k][i].pid);
			free(w);
		}
	for (int k = 0; k < 2; k++)
		dead_locks_free(v[k], n[k]);
	return rc;
}
