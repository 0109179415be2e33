/*
 * Two files replaced as one (for `move`). Steps, each a crash point (st__crash_point("pair", N);
 * the CLI's STATETOOL_CRASH_AT=pair:N kills there):
 *   1. the new bytes of A written beside it as <A>.statetool-new, synced
 *   2. the same for B
 *   3. the journal (both paths, BLAKE2b-256 of old and new bytes) written as <A>.statetool-journal,
 *      synced, directory synced
 *   4. the same journal as <B>.statetool-journal: from here on the operation is committed
 *   5. A replaced (old kept as <A>.bak)
 *   6. B replaced (old kept as <B>.bak)
 *   7. both journals removed
 * Recovery (st_journal_recover) rolls forward: a file still holding its old bytes gets its
 * staged new version. Before step 4 completes, only one journal or none exists and nothing has
 * been replaced, so rolling forward is still exactly the operation that was asked for.
 */
#include "internal.h"

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

#define JOURNAL_SUFFIX ".statetool-journal"
#define STAGED_SUFFIX ".statetool-new"

/* Journals of version 2 name files by BLAKE2b-256 (three times faster than SHA-256 here, and
 * the journal hashes every byte of both stacks twice); version 1 journals, SHA-256, are still
 * recovered. */
#define JOURNAL_VERSION 2

static void hash_hex(int v1, const void *data, size_t len, char out[65])
{
	unsigned char h[32];
	if (v1) {
		st_sha256_hex(data, len, out);
		return;
	}
	crypto_generichash(h, sizeof(h), data, len, NULL, 0);
	sodium_bin2hex(out, 65, h, sizeof(h));
}

static int hash_of_file(int v1, const char *path, char out[65], int *exists)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	void *map;
	*exists = 0;
	out[0] = '\0';
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fd, &sb) < 0) {
		close(fd);
		return -1;
	}
	if (sb.st_size == 0) {
		close(fd);
		hash_hex(v1, "", 0, out);
		*exists = 1;
		return 0;
	}
	/* mapped, not read: a whole stack is hashed without copying it into fresh memory */
	map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	hash_hex(v1, map, (size_t)sb.st_size, out);
	munmap(map, (size_t)sb.st_size);
	*exists = 1;
	return 0;
}

/* What a staged file holds: bytes, or a state written straight to the file (uncompressed),
 * hashed as it goes. */
typedef struct side {
	const char *path; /* absolute */
	const void *data;
	size_t len;
	st_state *state; /* instead of data */
	char old_hex[65], new_hex[65];
	int exists, rc;
	crypto_generichash_state h; /* while streaming */
} side;

static void hash_chunk(void *ctx, const char *p, size_t n)
{
	crypto_generichash_update(ctx, (const unsigned char *)p, n);
}

static void *old_hash_main(void *arg)
{
	side *sd = arg;
	sd->rc = hash_of_file(0, sd->path, sd->old_hex, &sd->exists);
	return NULL;
}

/* Writes `sd` (or, with sd NULL, the bytes data/len) to path and syncs the file and its
 * directory. A state's text is hashed into sd->new_hex as it is written, by a writer on this
 * thread alone when `one_thread` (the caller keeps the other processor busy). */
static int write_synced_side(const char *path, side *sd, const void *data, size_t len,
			     int one_thread, st_error *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return st__err(err, ST_EIO, "cannot write '%s': %s", path, strerror(errno));
	if (sd && sd->state) {
		unsigned char h[32];
		int rc;
		crypto_generichash_init(&sd->h, NULL, 0, sizeof(h));
		st__wcfg wc = {one_thread ? 1 : 0, NULL, NULL, NULL};
		rc = st__state_stream(sd->state, fd, hash_chunk, &sd->h, &wc, err);
		if (rc) {
			int e = errno;
			close(fd);
			unlink(path);
			if (rc == ST_EIO)
				return st__err(err, ST_EIO, "cannot write '%s': %s", path, strerror(e));
			return rc;
		}
		crypto_generichash_final(&sd->h, h, sizeof(h));
		sodium_bin2hex(sd->new_hex, sizeof(sd->new_hex), h, sizeof(h));
	} else {
		if (sd) {
			data = sd->data;
			len = sd->len;
			hash_hex(0, data, len, sd->new_hex);
		}
		if (st__write_full(fd, data, len) < 0) {
			int e = errno;
			close(fd);
			unlink(path);
			return st__err(err, ST_EIO, "cannot write '%s': %s", path, strerror(e));
		}
	}
	if (fsync(fd) < 0) {
		int e = errno;
		close(fd);
		unlink(path);
		return st__err(err, ST_EIO, "cannot sync '%s': %s", path, strerror(e));
	}
	close(fd);
	char *dir = st_path_dirname(path);
	if (dir) {
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
		free(dir);
	}
	return ST_OK;
}

static int write_synced(const char *path, const void *data, size_t len, st_error *err)
{
	return write_synced_side(path, NULL, data, len, 0, err);
}

/* A staged file written on a thread of its own (its writer on that one thread: the other
 * staged file and the old files' hashes keep the other processor busy). */
typedef struct stage_job {
	const char *path;
	side *sd;
	st_error err;
	int rc;
} stage_job;

static void *stage_main(void *arg)
{
	stage_job *j = arg;
	j->rc = write_synced_side(j->path, j->sd, NULL, 0, 1, &j->err);
	return NULL;
}

static void *old_hashes_main(void *arg)
{
	side **both = arg;
	old_hash_main(both[0]);
	old_hash_main(both[1]);
	return NULL;
}

static char *absolute(const char *path)
{
	char buf[4096];
	if (path[0] == '/')
		return st_strdup(path);
	if (!getcwd(buf, sizeof(buf)))
		return st_strdup(path);
	return st_asprintf("%s/%s", buf, path);
}

/* Keeps the current file as .bak (hard link, else copy) and renames the staged file over it. */
static int install(const char *path, const char *staged, st_error *err)
{
	char *bak = st_asprintf("%s.bak", path), *tmp = st_asprintf("%s.statetool-bak", path);
	struct stat sb;
	int rc = ST_OK;
	if (!bak || !tmp) {
		free(bak);
		free(tmp);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	if (stat(path, &sb) == 0) {
		unlink(tmp);
		if (link(path, tmp) == 0)
			rename(tmp, bak);
		chmod(staged, sb.st_mode & 07777);
	}
	if (rename(staged, path) < 0)
		rc = st__err(err, ST_EIO, "cannot replace '%s': %s", path, strerror(errno));
	free(bak);
	free(tmp);
	return rc;
}

/* The pair write: both staged, a journal beside each, then both installed (see statetool.h). */
static int write_pair(const char *op, const char *path_a, side *A, const char *path_b, side *B,
		      st_error *err)
{
	char *a = absolute(path_a), *b = absolute(path_b);
	char *sa = NULL, *sb = NULL, *ja = NULL, *jb = NULL, *text = NULL;
	int rc = ST_OK;
	json_t *j = NULL;
	size_t tlen;
	st_style st;

	if (!a || !b) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if (!strcmp(a, b)) {
		rc = st__err(err, ST_EINVAL, "source and destination are the same file '%s'", a);
		goto out;
	}
	if (st_path_is_symlink(a) || st_path_is_symlink(b)) {
		rc = st__err(err, ST_EREFUSED, "refusing to write through a symbolic link");
		goto out;
	}
	sa = st_asprintf("%s" STAGED_SUFFIX, a);
	sb = st_asprintf("%s" STAGED_SUFFIX, b);
	ja = st_asprintf("%s" JOURNAL_SUFFIX, a);
	jb = st_asprintf("%s" JOURNAL_SUFFIX, b);
	if (!sa || !sb || !ja || !jb) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	A->path = a;
	B->path = b;
	{
		/* The old files hashed on one thread while the two staged files are written, each
		 * on a thread of its own (one after the other without threads). */
		pthread_t hth, sth;
		side *both[2] = {A, B};
		stage_job job_b = {sb, B, {0}, ST_OK};
		int hashing = 0, staging = 0, rc_b = ST_OK;
		st_error_clear(&job_b.err);
		if (st__threads_ok()) {
			hashing = pthread_create(&hth, NULL, old_hashes_main, both) == 0;
			staging = pthread_create(&sth, NULL, stage_main, &job_b) == 0;
		}
		if (!hashing)
			old_hashes_main(both);
		rc = write_synced_side(sa, A, NULL, 0, staging, err);
		if (staging) {
			pthread_join(sth, NULL);
			rc_b = job_b.rc;
		} else if (rc == ST_OK) {
			rc_b = write_synced_side(sb, B, NULL, 0, 0, &job_b.err);
		}
		if (hashing)
			pthread_join(hth, NULL);
		if (rc == ST_OK && rc_b != ST_OK) {
			if (err)
				*err = job_b.err;
			rc = rc_b;
		}
		if (rc == ST_OK && (A->rc < 0 || B->rc < 0))
			rc = st__err(err, ST_EIO, "cannot read '%s' or '%s'", a, b);
		if (rc != ST_OK)
			goto out_unstage; /* (a failed write removed its own file already) */
	}
	st__phase("pair: old files hashed, both staged");
	st__crash_point("pair", 1);
	st__crash_point("pair", 2);
	j = json_pack("{s:i,s:s,s:s,s:[{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s}]}",
		      "statetool_journal", JOURNAL_VERSION, "hash", "blake2b-256", "operation", op,
		      "files", "path", a, "old_hash", A->exists ? A->old_hex : "", "new_hash",
		      A->new_hex, "staged", sa, "path", b, "old_hash", B->exists ? B->old_hex : "",
		      "new_hash", B->new_hex, "staged", sb);
	st_style_checkpoint(&st);
	if (!j || st_json_dump(j, &st, &text, &tlen, err) != ST_OK) {
		rc = err && err->code ? err->code : ST_ENOMEM;
		goto out_unstage;
	}
	if ((rc = write_synced(ja, text, tlen, err)) != ST_OK)
		goto out_unstage;
	st__crash_point("pair", 3);
	if ((rc = write_synced(jb, text, tlen, err)) != ST_OK) {
		unlink(ja);
		goto out_unstage;
	}
	st__crash_point("pair", 4);
	/* Committed: from here on, recovery finishes the job. */
	if ((rc = install(a, sa, err)) != ST_OK)
		goto out;
	st__crash_point("pair", 5);
	if ((rc = install(b, sb, err)) != ST_OK)
		goto out;
	st__crash_point("pair", 6);
	unlink(ja);
	st__crash_point("pair", 7);
	unlink(jb);
	st__phase("pair: journals written, files installed");
	goto out;
out_unstage:
	unlink(sa);
	unlink(sb);
out:
	json_decref(j);
	free(text);
	free(a);
	free(b);
	free(sa);
	free(sb);
	free(ja);
	free(jb);
	return rc;
}

int st_journal_write_pair(const char *op, const char *path_a, const void *data_a, size_t len_a,
			  const char *path_b, const void *data_b, size_t len_b, st_error *err)
{
	side A, B;
	memset(&A, 0, sizeof(A));
	memset(&B, 0, sizeof(B));
	A.data = data_a;
	A.len = len_a;
	B.data = data_b;
	B.len = len_b;
	return write_pair(op, path_a, &A, path_b, &B, err);
}

static json_t *read_journal(const char *path)
{
	char *jp = st_asprintf("%s" JOURNAL_SUFFIX, path), *text = NULL;
	size_t len;
	json_t *j = NULL;
	if (jp && st_file_read(jp, 1 << 20, &text, &len, NULL, NULL) == ST_OK)
		st_json_parse(&j, text, len, jp, NULL, NULL, NULL, NULL);
	free(text);
	free(jp);
	if (j && !json_is_array(json_object_get(j, "files"))) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

int st_journal_pending(const char *path, char **other)
{
	char *abs = absolute(path);
	json_t *j = abs ? read_journal(abs) : NULL, *f;
	size_t i;
	if (other)
		*other = NULL;
	if (!j) {
		free(abs);
		return 0;
	}
	json_array_foreach(json_object_get(j, "files"), i, f) {
		const char *p = st_json_str(f, "path");
		if (other && p && strcmp(p, abs) && !*other)
			*other = st_strdup(p);
	}
	json_decref(j);
	free(abs);
	return 1;
}

int st_journal_recover(const char *path, st_changes *report, st_error *err)
{
	char *abs = absolute(path);
	json_t *j = abs ? read_journal(abs) : NULL, *f;
	const char *okey, *nkey;
	size_t i;
	int rc = ST_OK, v1;

	if (!j) {
		free(abs);
		return ST_OK;
	}
	/* version 1: SHA-256 in old_sha256/new_sha256; 2: BLAKE2b-256 in old_hash/new_hash */
	v1 = json_number_value(json_object_get(j, "statetool_journal")) == 1;
	if (!v1 && json_number_value(json_object_get(j, "statetool_journal")) != JOURNAL_VERSION) {
		rc = st__err(err, ST_EINVAL, "the journal beside '%s' is of a version this statetool "
			     "does not know (%g); a newer statetool wrote it", abs,
			     json_number_value(json_object_get(j, "statetool_journal")));
		goto out;
	}
	okey = v1 ? "old_sha256" : "old_hash";
	nkey = v1 ? "new_sha256" : "new_hash";
	/* First check every file: old or new bytes, and a staged copy where it is needed. */
	json_array_foreach(json_object_get(j, "files"), i, f) {
		const char *p = st_json_str(f, "path"), *old = st_json_str(f, okey);
		const char *neu = st_json_str(f, nkey), *staged = st_json_str(f, "staged");
		char cur[65], st[65];
		int ex, sx;
		if (!p || !old || !neu || !staged || hash_of_file(v1, p, cur, &ex) < 0) {
			rc = st__err(err, ST_EIO, "cannot read '%s' named by the journal", p ? p : "?");
			goto out;
		}
		if (ex && !strcmp(cur, neu))
			continue;
		if ((ex ? strcmp(cur, old) : old[0]) != 0) {
			rc = st__err(err, ST_ECONFLICT,
				     "an interrupted %s left a journal beside '%s', but '%s' has "
				     "changed since (it is neither the version before nor the version "
				     "after); resolve it by hand: the staged new version is '%s', "
				     "then remove '%s" JOURNAL_SUFFIX "' and its twin",
				     st_json_str(j, "operation"), abs, p, staged, p);
			goto out;
		}
		if (hash_of_file(v1, staged, st, &sx) < 0 || !sx || strcmp(st, neu)) {
			rc = st__err(err, ST_ECONFLICT,
				     "an interrupted %s cannot be completed: the staged new version "
				     "of '%s' is missing or damaged; the old version is intact",
				     st_json_str(j, "operation"), p);
			goto out;
		}
	}
	/* Then roll forward. */
	json_array_foreach(json_object_get(j, "files"), i, f) {
		const char *p = st_json_str(f, "path"), *neu = st_json_str(f, nkey);
		const char *staged = st_json_str(f, "staged");
		char cur[65];
		int ex;
		hash_of_file(v1, p, cur, &ex);
		if (ex && !strcmp(cur, neu)) {
			unlink(staged);
			continue;
		}
		if ((rc = install(p, staged, err)) != ST_OK)
			goto out;
		st_changes_add(report, "completed the interrupted %s: wrote %s",
			       st_json_str(j, "operation"), p);
	}
	json_array_foreach(json_object_get(j, "files"), i, f) {
		char *jp = st_asprintf("%s" JOURNAL_SUFFIX, st_json_str(f, "path"));
		if (jp)
			unlink(jp);
		free(jp);
	}
	st_changes_add(report, "the interrupted %s is complete; its journal is removed",
		       st_json_str(j, "operation"));
out:
	json_decref(j);
	free(abs);
	return rc;
}

static int dump_for_disk(st_state *s, char **out, size_t *len, st_error *err)
{
	char *data;
	size_t n;
	int rc;
	st_state_fix_magic(s);
	rc = st_state_dump(s, NULL, &data, &n, err);
	if (rc)
		return rc;
	if (st_state_compression(s) != ST_COMPRESS_NONE) {
		rc = st__compress_bytes(st_state_compression(s), data, n, out, len, err);
		free(data);
		return rc;
	}
	*out = data;
	*len = n;
	return ST_OK;
}

int st_state_save_pair(const char *op, st_state *a, const char *path_a, st_state *b,
		       const char *path_b, st_error *err)
{
	ST_ASSERT_ARG(a);
	ST_ASSERT_ARG(b);
	/* An uncompressed state is written straight into its staged file and hashed as it goes;
	 * a compressed one is compressed in memory first. */
	char *da = NULL, *db = NULL;
	size_t la = 0, lb = 0;
	side A, B;
	int rc = ST_OK;

	memset(&A, 0, sizeof(A));
	memset(&B, 0, sizeof(B));
	st_state_fix_magic(a);
	st_state_fix_magic(b);
	if (st_state_compression(a) != ST_COMPRESS_NONE)
		rc = dump_for_disk(a, &da, &la, err);
	else
		A.state = a;
	if (rc == ST_OK && st_state_compression(b) != ST_COMPRESS_NONE)
		rc = dump_for_disk(b, &db, &lb, err);
	else
		B.state = b;
	A.data = da;
	A.len = la;
	B.data = db;
	B.len = lb;
	if (rc == ST_OK)
		rc = write_pair(op, path_a, &A, path_b, &B, err);
	free(da);
	free(db);
	return rc;
}
