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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
