/*
 * Locks, on stores. A backend stack's lock is Pulumi's own (pkg/backend/diy/lock.go): an object
 * <lock folder>/<uuid>.json holding {"pid","username","hostname","timestamp"} (the timestamp in
 * RFC 3339 with nanoseconds, as Go marshals a time.Time). Taking it means listing the folder
 * (any object there is someone's lock, whatever its name, and one that cannot be read blocks
 * too), writing ours (a create-only write) and listing again (a lock that appeared meanwhile
 * makes us withdraw ours and refuse). A plain state file's lock is <file>.lock, created only when
 * there is none (a create-only write), with the same content.
 */
#include "store_impl.h"

#include <errno.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct st_lock {
	st_store *store; /* the backend's (borrowed), or owned for a file's lock */
	int owns_store;
	char *key;
	char *made; /* a local directory the lock's write created (its key prefix), or NULL */
	char *loc;  /* the store's identity while the lock is held (registered), or NULL */
	int counted; /* in `busy` (the locks hook's count) until released */
	char hash[65]; /* BLAKE2b-256 (hex) of the lock object's bytes: a plain file's lock has
			* a fixed name, so its bytes tell ours from another's */
};

static void bytes_hash(const void *data, size_t len, char out[65])
{
	unsigned char h[32];
	crypto_generichash(h, sizeof(h), data, len, NULL, 0);
	sodium_bin2hex(out, 65, h, sizeof(h));
}

/* Is the lock object `key` the one whose bytes hash to `hash`? */
static int lock_is(st_store *s, const char *key, const char *hash)
{
	char *data = NULL, h[65] = "";
	size_t len;

	if (st_store_read(s, key, 1 << 16, &data, &len, NULL, NULL) == ST_OK)
		bytes_hash(data, len, h);
	free(data);
	return h[0] && !strcmp(h, hash);
}

/* The locks this process holds, by their store's identity: a two-stack journal records the ones
 * on its stacks, and a recovery does not take them for someone else's (pairlock.c). */
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static const st_lock **held;
static size_t nheld, held_cap;
/* The lock objects this process is writing or holds: the locks hook is told each change
 * (from before a lock object is written until after it is deleted), so that a program can
 * defer an interrupt while it holds any (the CLI: tools/interrupt.c). */
static size_t busy;

static void busy_add(int d)
{
	/* the hook is told under the mutex, so two threads' counts reach it in order */
	pthread_mutex_lock(&held_mu);
	busy = d > 0 ? busy + 1 : busy - 1;
	st__locks_changed(busy);
	pthread_mutex_unlock(&held_mu);
}

/* Registered by its store's identity; a store whose identity fails (not a gone directory: a
 * file store's real path unreadable) is an error, and the lock just taken is released. */
static int held_add(st_lock **out, st_error *err)
{
	st_lock *lk = *out;
	int rc, added = 0;

	if ((rc = st__store_identity(lk->store, &lk->loc, err)) != ST_OK) {
		lk->loc = NULL;
		st_lock_release(lk, NULL);
		*out = NULL;
		return rc;
	}
	pthread_mutex_lock(&held_mu);
	if (nheld == held_cap) {
		size_t cap = held_cap ? held_cap * 2 : 4;
		const st_lock **v = realloc(held, cap * sizeof(*v));
		if (v) {
			held = v;
			held_cap = cap;
		}
	}
	if (nheld < held_cap) {
		held[nheld++] = lk;
		added = 1;
	}
	pthread_mutex_unlock(&held_mu);
	if (!added) {
		free(lk->loc);
		lk->loc = NULL;
		st_lock_release(lk, NULL);
		*out = NULL;
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	return ST_OK;
}

static void held_remove(const st_lock *lk)
{
	pthread_mutex_lock(&held_mu);
	for (size_t i = 0; i < nheld; i++)
		if (held[i] == lk) {
			held[i] = held[--nheld];
			break;
		}
	if (!nheld) {
		free(held);
		held = NULL;
		held_cap = 0;
	}
	pthread_mutex_unlock(&held_mu);
}

/* Is `key` (with `dir`: any object directly in the folder `dir`) a lock this process holds in
 * the store at `loc`? 1 and *key_out, *made_out (new, may be NULL) when it is. */
static int held_find(const char *loc, const char *dir, const char *key, char **key_out,
		     char **made_out, char *hash_out)
{
	int found = 0;
	size_t dl = dir ? strlen(dir) : 0;

	pthread_mutex_lock(&held_mu);
	for (size_t i = 0; !found && i < nheld; i++) {
		const st_lock *lk = held[i];
		if (!lk->loc || strcmp(lk->loc, loc))
			continue;
		found = dir ? !strncmp(lk->key, dir, dl) && !strchr(lk->key + dl, '/')
			    : !strcmp(lk->key, key);
		if (found && key_out)
			*key_out = st_strdup(lk->key);
		if (found && made_out)
			*made_out = lk->made ? st_strdup(lk->made) : NULL;
		if (found && hash_out)
			memcpy(hash_out, lk->hash, 65);
	}
	pthread_mutex_unlock(&held_mu);
	return found;
}

int st__lock_held(st_store *s, const char *dir, const char *key, char **key_out,
		  char **made_out, char *hash_out, int *found, st_error *err)
{
	char *loc = NULL;
	int rc;

	*found = 0;
	if (key_out)
		*key_out = NULL;
	if (made_out)
		*made_out = NULL;
	if ((rc = st__store_identity(s, &loc, err)) != ST_OK)
		return rc;
	*found = held_find(loc, dir, key, key_out, made_out, hash_out);
	free(loc);
	return ST_OK;
}

static char *lock_content(void)
{
	char host[256] = "", ts[64];
	const char *user = getenv("USER");
	struct passwd *pw;

	if (gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "unknown");
	if (!user || !*user) {
		pw = getpwuid(getuid());
		user = pw ? pw->pw_name : "unknown";
	}
	st_now_rfc3339(ts, sizeof(ts));
	json_t *o = json_pack("{s:f,s:s,s:s,s:s}", "pid", (double)getpid(), "username", user,
			      "hostname", host, "timestamp", ts);
	char *out = NULL;
	size_t len;
	st_style st;
	st_style_checkpoint(&st);
	if (o)
		st_json_dump(o, &st, &out, &len, NULL);
	json_decref(o);
	return out;
}

/* Go's time.Time.UnmarshalJSON: RFC 3339 with an optional fraction. *shown (36 bytes) gets the
 * time as Pulumi prints it (time.RFC3339: no fraction). 1 when valid. */
static int rfc3339(const char *s, char shown[36])
{
	int y, mo, d, h, mi, se, n = 0;
	const char *z;
	size_t len = strlen(s);

	if (len < 20 || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &n) != 6 ||
	    n != 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || mo < 1 || mo > 12 || d < 1 ||
	    d > 31 || h > 23 || mi > 59 || se > 59)
		return 0;
	z = s + 19;
	if (*z == '.') {
		if (!(z[1] >= '0' && z[1] <= '9'))
			return 0;
		for (z++; *z >= '0' && *z <= '9'; z++)
			;
	}
	if (strcmp(z, "Z") && !(strlen(z) == 6 && (z[0] == '+' || z[0] == '-') &&
				z[1] >= '0' && z[1] <= '9' && z[2] >= '0' && z[2] <= '9' &&
				z[3] == ':' && z[4] >= '0' && z[4] <= '5' && z[5] >= '0' &&
				z[5] <= '9'))
		return 0;
	snprintf(shown, 36, "%.19s%s", s, z);
	return 1;
}

/* "\n  <where>: created by user@host (pid N) at TS", plus a stale-lock hint; 0 when the lock
 * cannot be read as Pulumi reads it (Pulumi then refuses too). */
static int describe_lock(st_buf *b, st_store *s, const char *key)
{
	char *data = NULL, *where = st__store_where(s, key), host[256] = "", ts[36] = "";
	size_t len;
	json_t *o = NULL, *pidv;
	const char *user, *h, *t, *why = NULL;
	long pid = 0;

	st_buf_printf(b, "\n  %s: ", where ? where : key);
	free(where);
	if (st_store_read(s, key, 1 << 16, &data, &len, NULL, NULL) != ST_OK)
		why = "it cannot be read";
	else if (st_json_parse(&o, data, len, NULL, NULL, NULL, NULL, NULL) != ST_OK ||
		 !json_is_object(o))
		why = "it is not a JSON object";
	free(data);
	if (!why) {
		pidv = json_object_get(o, "pid");
		user = st_json_str(o, "username");
		h = st_json_str(o, "hostname");
		t = st_json_str(o, "timestamp");
		if (pidv && (!json_is_number(pidv) ||
			     json_number_value(pidv) != (double)(long)json_number_value(pidv)))
			why = "its pid is not an integer";
		else if ((json_object_get(o, "username") && !user) ||
			 (json_object_get(o, "hostname") && !h))
			why = "its username or hostname is not a string";
		else if (json_object_get(o, "timestamp") && (!t || !rfc3339(t, ts)))
			why = "its timestamp is not an RFC 3339 time";
		pid = pidv ? (long)json_number_value(pidv) : 0;
		if (!why) {
			st_buf_printf(b, "created by %s@%s (pid %ld) at %s", user ? user : "",
				      h ? h : "", pid, ts[0] ? ts : "0001-01-01T00:00:00Z");
			gethostname(host, sizeof(host) - 1);
			if (h && !strcmp(h, host) && pid > 0 && pid <= 4194304 &&
			    kill((pid_t)pid, 0) < 0 && errno == ESRCH)
				st_buf_adds(b, " [stale: that process is no longer running]");
		}
	}
	if (why)
		st_buf_printf(b, "a lock that cannot be parsed (%s); it counts as held", why);
	json_decref(o);
	return why == NULL;
}

/* The offset east of UTC, in seconds, of an RFC 3339 time as Go writes a lock's (time.Now():
 * "2024-05-01T12:00:00.123+02:00" or "...Z"); 0 when there is none. */
static long long utc_offset(const char *t)
{
	const char *p = strlen(t) > 19 ? t + 19 : "";
	int hh, mm;
	if (*p == '.')
		while (*++p >= '0' && *p <= '9')
			;
	if ((*p != '+' && *p != '-') || sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2)
		return 0;
	return (*p == '-' ? -1 : 1) * (hh * 3600LL + mm * 60LL);
}

int st__lock_stale(st_store *s, const char *key, long long max_age_s, char **desc, int *stale)
{
	st_buf b;
	char *data = NULL;
	size_t len;
	json_t *o = NULL;
	const char *t;
	int parsed, y, mo, d, h, mi, se;

	st_buf_init(&b);
	parsed = describe_lock(&b, s, key);
	*stale = !parsed || (b.data && strstr(b.data, "[stale: ") != NULL);
	if (!*stale && max_age_s > 0 &&
	    st_store_read(s, key, 1 << 16, &data, &len, NULL, NULL) == ST_OK &&
	    st_json_parse(&o, data, len, NULL, NULL, NULL, NULL, NULL) == ST_OK &&
	    (t = st_json_str(o, "timestamp")) &&
	    sscanf(t, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &se) == 6) {
		struct tm tm = {0};
		tm.tm_year = y - 1900;
		tm.tm_mon = mo - 1;
		tm.tm_mday = d;
		tm.tm_hour = h;
		tm.tm_min = mi;
		tm.tm_sec = se;
		if ((long long)time(NULL) - ((long long)timegm(&tm) - utc_offset(t)) > max_age_s) {
			*stale = 1;
			if (max_age_s % 3600)
				st_buf_printf(&b, " [stale: older than %lld second%s]", max_age_s,
					      max_age_s == 1 ? "" : "s");
			else
				st_buf_printf(&b, " [stale: older than %lld hours]", max_age_s / 3600);
		}
	}
	json_decref(o);
	free(data);
	/* without the leading "\n  " */
	*desc = st_strdup(b.data && b.len > 3 ? b.data + 3 : "");
	st_buf_free(&b);
	return *desc ? ST_OK : ST_ENOMEM;
}

static int locked_error(st_error *err, size_t count, st_buf *desc, const char *unlock_hint,
			const char *tail)
{
	st__err(err, ST_ELOCKED,
		"the stack is currently locked by %zu lock(s). Either wait for the other "
		"process(es) to end or delete the lock file with `pulumi cancel` (or `%s`).%s%s",
		count, unlock_hint, desc->data ? desc->data : "", tail ? tail : "");
	st_buf_free(desc);
	return ST_ELOCKED;
}

/* Whose locks are not someone else's: `mine` (the one just written), `own` (a crashed
 * operation's, which its recovery completes), and with `held` every lock this process holds;
 * `tail` ends the message of a refusal. */
typedef struct lock_excl {
	const char *mine, *own, *own_hash, *tail;
	int held;
} lock_excl;

/* May the process of the lock `key` still be running? On this host: its pid is alive (and is
 * not this process). On another host, or when the lock cannot be read as one: yes, since no
 * process table here tells (a crashed operation's own lock whose process may run is that
 * operation still at work: only `statetool unlock` says otherwise). */
static int alive_here(st_store *s, const char *key)
{
	char *data = NULL, host[256] = "";
	size_t len;
	json_t *o = NULL;
	const char *h;
	double pid;
	int alive = 0;

	if (st_store_read(s, key, 1 << 16, &data, &len, NULL, NULL) != ST_OK) {
		alive = 0; /* gone meanwhile */
	} else if (st_json_parse(&o, data, len, NULL, NULL, NULL, NULL, NULL) != ST_OK ||
		   !(h = st_json_str(o, "hostname")) ||
		   gethostname(host, sizeof(host) - 1) != 0 || strcmp(h, host)) {
		/* another host's (or one that cannot be read): its move may still be running
		 * there, and no process table here tells; only an unlock releases it */
		alive = 1;
	} else {
		pid = json_number_value(json_object_get(o, "pid"));
		/* this very process cannot be the crashed move (its own locks are known) */
		alive = pid >= 1 && pid <= 4194304 && (pid_t)pid != getpid() &&
			(kill((pid_t)pid, 0) == 0 || errno == EPERM);
	}
	json_decref(o);
	free(data);
	return alive;
}

static int excluded(const lock_excl *x, st_store *s, const char *loc, const char *key)
{
	return (x->mine && !strcmp(key, x->mine)) ||
	       (x->own && !strcmp(key, x->own) && x->own_hash && lock_is(s, key, x->own_hash) &&
		!alive_here(s, key)) ||
	       (x->held && loc && held_find(loc, NULL, key, NULL, NULL, NULL));
}

/* Every object in the lock folder but those of `x`: someone's lock. */
static int foreign_locks(st_store *s, const char *dir, const lock_excl *x, const char *hint,
			 st_error *err)
{
	st_store_entry *e = NULL;
	size_t n = 0, count = 0;
	st_buf desc;
	char *loc = NULL;
	int rc = x->held ? st__store_identity(s, &loc, err) : ST_OK;

	if (rc == ST_OK)
		rc = st_store_list(s, dir, ST_STORE_LIST_DIRS, &e, &n, err);
	if (rc) {
		free(loc);
		return rc;
	}
	st_buf_init(&desc);
	for (size_t i = 0; i < n; i++) {
		size_t kl = strlen(e[i].key);
		if (e[i].key[kl - 1] == '/' || excluded(x, s, loc, e[i].key))
			continue;
		count++;
		describe_lock(&desc, s, e[i].key);
	}
	st_store_entries_free(e, n);
	free(loc);
	if (count)
		return locked_error(err, count, &desc, hint, x->tail);
	st_buf_free(&desc);
	return ST_OK;
}

static int new_lock(st_lock **out, st_store *s, int owns, char *key, st_error *err)
{
	st_lock *lk = calloc(1, sizeof(*lk));
	if (!lk) {
		free(key);
		if (owns)
			st_store_free(s);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	lk->store = s;
	lk->owns_store = owns;
	lk->key = key;
	*out = lk;
	return ST_OK;
}

static int lock_store(st_lock **out, st_store *s, const char *dir, const char *hint,
		      lock_excl x, st_error *err)
{
	st_store_write_opts wo = ST_STORE_WRITE_OPTS_INIT;
	char uuid[37], *key, *content, *made, hash[65];
	int rc;

	*out = NULL;
	if ((rc = foreign_locks(s, dir, &x, hint, err)) != ST_OK)
		return rc;
	st_uuid4(uuid);
	key = st_asprintf("%s%s.json", dir, uuid);
	content = lock_content();
	if (!key || !content) {
		free(key);
		free(content);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	wo.flags = ST_STORE_CREATE_ONLY;
	busy_add(1);
	/* the lock's folders (.pulumi/locks/organization/PROJECT/STACK/) go with it: a failed
	 * command, or one on a stack that never had them, leaves none behind. Another command's
	 * release may take a folder away between the write's mkdir and its file: then again. */
	for (int tries = 0;; tries++) {
		st_error werr;
		char *gone;
		st_error_clear(&werr);
		made = st__store_file_missing_dir(s, key);
		rc = st_store_write(s, key, content, strlen(content), &wo, &werr);
		gone = rc != ST_OK && rc != ST_EEXIST && tries < 4
			       ? st__store_file_missing_dir(s, key)
			       : NULL;
		if (!gone) {
			if (rc)
				st__err_copy(err, &werr);
			break;
		}
		free(gone);
		free(made);
	}
	bytes_hash(content, strlen(content), hash);
	free(content);
	x.mine = key;
	if (rc == ST_OK && (rc = foreign_locks(s, dir, &x, hint, err)) != ST_OK)
		st_store_delete(s, key, NULL); /* someone came at the same time: we withdraw */
	if (rc) {
		st__store_file_prune(s, key, made);
		free(made);
		free(key);
		busy_add(-1);
		return rc;
	}
	if ((rc = new_lock(out, s, 0, key, err)) != ST_OK) {
		free(made);
		busy_add(-1);
		return rc;
	}
	(*out)->counted = 1;
	(*out)->made = made;
	memcpy((*out)->hash, hash, sizeof(hash));
	return held_add(out, err);
}

int st__lock_store(st_lock **out, st_store *s, const char *dir, const char *hint, st_error *err)
{
	lock_excl x = {NULL, NULL, NULL, NULL, 0};
	return lock_store(out, s, dir, hint, x, err);
}

int st__lock_store_own(st_lock **out, st_store *s, const char *dir, const char *own,
		       const char *own_hash, const char *hint, const char *tail, st_error *err)
{
	lock_excl x = {NULL, own, own_hash, tail, 1};
	return lock_store(out, s, dir, hint, x, err);
}

int st__locks_check(st_store *s, const char *dir, const char *hint, st_error *err)
{
	lock_excl x = {NULL, NULL, NULL, NULL, 0};
	return foreign_locks(s, dir, &x, hint, err);
}

/* A plain file's lock `lkey` written as Pulumi-format content, only when there is none
 * (ST_EEXIST otherwise); `hash` gets its bytes' hash; werr the write's error. */
static int write_file_lock(st_store *s, const char *lkey, char hash[65], st_error *werr)
{
	st_store_write_opts wo = ST_STORE_WRITE_OPTS_INIT;
	char *content = lock_content();
	int rc;

	st_error_clear(werr);
	if (!content)
		return st__err(werr, ST_ENOMEM, "out of memory");
	wo.flags = ST_STORE_CREATE_ONLY;
	rc = st_store_write(s, lkey, content, strlen(content), &wo, werr);
	bytes_hash(content, strlen(content), hash);
	free(content);
	return rc;
}

/* Is the lock object `lkey` there: ST_OK, ST_ENOTFOUND (err untouched), or the error of a
 * store that cannot tell, naming the lock (never "no lock": unknown). */
static int lock_stat(st_store *s, const char *lkey, st_error *err)
{
	st_error serr;
	char *w;
	int rc;

	st_error_clear(&serr);
	rc = st_store_stat(s, lkey, NULL, &serr);
	if (rc == ST_OK || rc == ST_ENOTFOUND)
		return rc;
	w = st__store_where(s, lkey);
	rc = st__err(err, rc, "cannot tell whether the lock '%s' is there: %s", w ? w : lkey,
		     serr.message);
	free(w);
	return rc;
}

int st__lock_own_check(st_store *s, const char *dir, const char *lkey, const char *own,
			const char *own_hash, const char *hint, const char *tail, st_error *err)
{
	lock_excl x = {NULL, own, own_hash, tail, 1};
	char *loc;
	st_buf desc;
	int rc, mine;

	if (dir)
		return foreign_locks(s, dir, &x, hint, err);
	if ((rc = lock_stat(s, lkey, err)) != ST_OK)
		return rc == ST_ENOTFOUND ? ST_OK : rc;
	if ((rc = st__store_identity(s, &loc, err)) != ST_OK)
		return rc;
	mine = excluded(&x, s, loc, lkey);
	free(loc);
	if (mine)
		return ST_OK;
	st_buf_init(&desc);
	describe_lock(&desc, s, lkey);
	return locked_error(err, 1, &desc, hint, tail);
}

int st__lock_file_own(st_lock **out, st_store *s, const char *lkey, const char *own,
		      const char *own_hash, const char *hint, const char *tail, int *replaced,
		      st_error *err)
{
	char *key, hash[65];
	st_error serr;
	st_buf desc;
	int rc;

	*out = NULL;
	*replaced = 0;
	if ((rc = lock_stat(s, lkey, err)) != ST_OK && rc != ST_ENOTFOUND)
		return rc;
	/* the crashed operation's own lock (its bytes, its process gone) gives way to ours; any
	 * other, or one that changed meanwhile, is someone's (the write below meets it) */
	if (rc == ST_OK && own && !strcmp(lkey, own) && own_hash && lock_is(s, lkey, own_hash) &&
	    !alive_here(s, lkey))
		*replaced = st__lock_remove_if(s, lkey, own_hash);
	if (!(key = st_strdup(lkey)))
		return st__err(err, ST_ENOMEM, "out of memory");
	busy_add(1);
	rc = write_file_lock(s, lkey, hash, &serr);
	if (rc == ST_EEXIST) {
		st_buf_init(&desc);
		describe_lock(&desc, s, lkey);
		rc = locked_error(err, 1, &desc, hint, tail);
	} else if (rc != ST_OK && err) {
		*err = serr;
	}
	if (rc != ST_OK) {
		free(key);
		busy_add(-1);
		return rc;
	}
	if ((rc = new_lock(out, s, 0, key, err)) == ST_OK) {
		(*out)->counted = 1;
		memcpy((*out)->hash, hash, sizeof(hash));
		rc = held_add(out, err);
	} else {
		busy_add(-1);
	}
	return rc;
}

int st__unlock_store(st_store *s, const char *dir, int *removed, st_error *err)
{
	st_store_entry *e = NULL;
	size_t n = 0;
	int rc = st_store_list(s, dir, ST_STORE_LIST_DIRS, &e, &n, err);

	*removed = 0;
	for (size_t i = 0; rc == ST_OK && i < n; i++) {
		if (e[i].key[strlen(e[i].key) - 1] == '/')
			continue;
		rc = st_store_delete(s, e[i].key, err);
		if (rc == ST_ENOTFOUND) {
			rc = ST_OK; /* removed meanwhile */
			st_error_clear(err);
		} else if (rc == ST_OK) {
			(*removed)++;
		}
	}
	st_store_entries_free(e, n);
	return rc;
}

int st_lock_stack(st_lock **out, st_backend *b, const char *stack, st_error *err)
{
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(stack);
	*out = NULL;
	return b->ops->lock(b, stack, out, err);
}

int st_unlock_stack(st_backend *b, const char *stack, int *removed, st_error *err)
{
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(stack);
	ST_ASSERT_ARG(removed);
	*removed = 0;
	return b->ops->unlock(b, stack, removed, err);
}

/* Pulumi's message for the plain file `path` whose lock object `lkey` is there. */
static int file_locked(st_store *s, const char *lkey, const char *path, st_error *err)
{
	st_buf desc;
	char *hint = st_asprintf("statetool unlock %s", path);
	int rc;

	st_buf_init(&desc);
	describe_lock(&desc, s, lkey);
	rc = locked_error(err, 1, &desc, hint ? hint : "statetool unlock", NULL);
	free(hint);
	return rc;
}

int st_lock_check_file(const char *path, st_error *err)
{
	st_store *s = NULL;
	char *key = NULL, *lkey;
	int rc;

	ST_ASSERT_ARG(path);
	if ((rc = st__store_for_path(&s, &key, path, err)) != ST_OK)
		return rc;
	lkey = st_asprintf("%s.lock", key);
	free(key);
	if (!lkey)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	else if (st_store_stat(s, lkey, NULL, NULL) == ST_OK)
		rc = file_locked(s, lkey, path, err);
	free(lkey);
	st_store_free(s);
	return rc;
}

int st_lock_check_stack(st_backend *b, const char *stack, st_error *err)
{
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(stack);
	return b->ops->lock(b, stack, NULL, err);
}

int st_lock_file(st_lock **out, const char *path, st_error *err)
{
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(path);
	st_store *s = NULL;
	char *key = NULL, *lkey, hash[65] = "";
	st_error werr;
	int rc;

	*out = NULL;
	if ((rc = st__store_for_path(&s, &key, path, err)) != ST_OK)
		return rc;
	lkey = st_asprintf("%s.lock", key);
	free(key);
	if (!lkey) {
		st_store_free(s);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	busy_add(1);
	rc = write_file_lock(s, lkey, hash, &werr);
	if (rc == ST_EEXIST) {
		rc = file_locked(s, lkey, path, err);
	} else if (rc) {
		if (err)
			*err = werr;
		if (rc == ST_EREFUSED && err) {
			st_error_clear(err);
			st__err(err, ST_EREFUSED, "refusing to use lock '%s.lock': it is a symbolic link",
				path);
		}
	}
	if (rc) {
		free(lkey);
		st_store_free(s);
		busy_add(-1);
		return rc;
	}
	if ((rc = new_lock(out, s, 1, lkey, err)) == ST_OK) {
		(*out)->counted = 1;
		memcpy((*out)->hash, hash, sizeof(hash));
		rc = held_add(out, err);
	} else {
		busy_add(-1);
	}
	return rc;
}

int st__lock_none(st_lock **out, st_error *err)
{
	*out = calloc(1, sizeof(**out));
	return *out ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}

int st_lock_release(st_lock *lk, st_error *err)
{
	int rc = ST_OK;
	st_error derr;

	if (!lk)
		return ST_OK;
	if (!lk->store) { /* st__lock_none */
		free(lk);
		return ST_OK;
	}
	if (lk->loc)
		held_remove(lk);
	st_error_clear(&derr);
	if (st_store_delete(lk->store, lk->key, &derr) != ST_OK && derr.code != ST_ENOTFOUND) {
		char *where = st__store_where(lk->store, lk->key);
		rc = st__err(err, ST_EIO,
			     "there was a problem deleting the lock at %s, manual clean up may be "
			     "required: %s",
			     where ? where : lk->key, derr.message);
		free(where);
	} else {
		st__store_file_prune(lk->store, lk->key, lk->made);
	}
	if (lk->owns_store)
		st_store_free(lk->store);
	if (lk->counted)
		busy_add(-1);
	free(lk->made);
	free(lk->loc);
	free(lk->key);
	free(lk);
	return rc;
}

int st_unlock_file(const char *path, int *removed, st_error *err)
{
	ST_ASSERT_ARG(path);
	ST_ASSERT_ARG(removed);
	st_store *s = NULL;
	char *key = NULL, *lkey;
	int rc;

	*removed = 0;
	if ((rc = st__store_for_path(&s, &key, path, err)) != ST_OK)
		return rc;
	lkey = st_asprintf("%s.lock", key);
	free(key);
	if (!lkey) {
		st_store_free(s);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	st_error derr;
	st_error_clear(&derr);
	rc = st_store_delete(s, lkey, &derr);
	if (rc == ST_OK)
		*removed = 1;
	else if (rc == ST_ENOTFOUND)
		rc = ST_OK;
	else
		rc = st__err(err, ST_EIO, "cannot remove lock '%s.lock': %s", path, derr.message);
	free(lkey);
	st_store_free(s);
	return rc;
}

int st__lock_remove_if(st_store *s, const char *key, const char *hash)
{
	return lock_is(s, key, hash) && st_store_delete(s, key, NULL) == ST_OK;
}
