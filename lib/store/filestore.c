/*
 * The file store (file://PATH, plain paths): keys are files under a root directory.
 *
 * A write, in order (the generic layer puts a crash point between the steps, see store.c):
 *   1. the new bytes go to a temporary file beside the target (O_EXCL, O_NOFOLLOW);
 *   2. finish: the file gets its mode (the old file's, or the one asked for) and is synced;
 *   3. the old file is kept under the backup key: a hard link made under a temporary name and
 *      renamed over the backup, so the backup is always whole and costs no copy (a copy, with
 *      the old file's mode, where no hard link can be made; crash point "bak" 1 between the
 *      link and the rename);
 *   4. commit: the temporary file is renamed over the target (create-only: linked, which fails
 *      when the target exists), then the directory is synced.
 * A crash at any point leaves the target either old or new, and the backup whole.
 *
 * A store opened on a backend refuses symbolic links anywhere under its root, for reading and
 * writing; a store made for one plain file (st__store_for_path) reads through a link but never
 * writes through one.
 */
#include "store_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct file_store {
	st_store base;
	char *root;  /* "" (the current directory) or a directory ending in '/' */
	int strict;  /* refuse symbolic links under the root when reading too */
} file_store;

typedef struct file_writer {
	st_store_writer base;
	char *path;   /* the target */
	char *tmp;    /* the temporary file */
	char *dir;    /* their directory */
	mode_t mode;
	unsigned flags;
	off_t off;
	off_t started; /* the bytes before it were handed to the disk (start_writeback) */
} file_writer;

static char *full_path(const file_store *fs, const char *key)
{
	return st_strconcat(fs->root, key, (char *)NULL);
}

/* Refuses a symbolic link among the key's directories (and, with `last`, the key itself). */
static int check_links(const file_store *fs, const char *key, int last, st_error *err)
{
	char *p = full_path(fs, key);
	size_t rootlen = strlen(fs->root);
	int rc = ST_OK;

	if (!p)
		return st__err(err, ST_ENOMEM, "out of memory");
	for (char *s = p + rootlen;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char save = *s;
		if (!save && !last)
			break;
		*s = '\0';
		if (st_path_is_symlink(p)) {
			st__err_file(err, p);
			rc = st__err(err, ST_EREFUSED,
				     "refusing to use '%s': it is a symbolic link inside the backend",
				     p);
			break;
		}
		*s = save;
		if (!save)
			break;
	}
	free(p);
	return rc;
}

static void fill_info(const struct stat *sb, st_store_info *info)
{
	if (!info)
		return;
	info->size = (long long)sb->st_size;
	info->mtime_ns = (long long)sb->st_mtim.tv_sec * 1000000000LL + sb->st_mtim.tv_nsec;
	/* a rename gives a new inode: inode, size and time change with any write we make;
	 * "INO-SIZE-MTIME" in hex, written without snprintf (a listing fills 10,000 of these) */
	unsigned long long v[3] = {(unsigned long long)sb->st_ino,
				   (unsigned long long)sb->st_size,
				   (unsigned long long)info->mtime_ns};
	char *p = info->etag;
	for (int i = 0; i < 3; i++) {
		char tmp[16];
		int n = 0;
		do
			tmp[n++] = "0123456789abcdef"[v[i] & 15];
		while (v[i] >>= 4);
		while (n)
			*p++ = tmp[--n];
		*p++ = i < 2 ? '-' : '\0';
	}
}

/* The object's file open for reading (*fd, *path new), refused through a link in a strict
 * store, a directory refused. */
static int open_object(file_store *fs, const char *key, int *fd, char **path, st_error *err)
{
	struct stat sb;
	int rc;

	if (fs->strict && (rc = check_links(fs, key, 1, err)) != ST_OK)
		return rc;
	if (!(*path = full_path(fs, key)))
		return st__err(err, ST_ENOMEM, "out of memory");
	*fd = open(*path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		int e = errno;
		st__err_file(err, *path);
		rc = st__err(err, e == ENOENT || e == ENOTDIR ? ST_ENOTFOUND : ST_EIO,
			     "cannot open '%s': %s", *path, strerror(e));
	} else if (fstat(*fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		close(*fd);
		*fd = -1;
		st__err_file(err, *path);
		rc = st__err(err, ST_EIO, "cannot read '%s': it is a directory", *path);
	} else {
		return ST_OK;
	}
	free(*path);
	*path = NULL;
	return rc;
}

static int fs_read(st_store *s, const char *key, size_t max, char **data, size_t *len,
		   st_store_info *info, st_error *err)
{
	char *p;
	int fd = -1, rc;
	struct stat sb;

	if ((rc = open_object((file_store *)s, key, &fd, &p, err)) != ST_OK)
		return rc;
	rc = st__read_fd(fd, max, data, len, p, err);
	if (rc == ST_OK && fstat(fd, &sb) == 0)
		fill_info(&sb, info);
	close(fd);
	free(p);
	return rc;
}

static int fs_stat(st_store *s, const char *key, st_store_info *info, st_error *err)
{
	file_store *fs = (file_store *)s;
	char *p = full_path(fs, key);
	struct stat sb;
	int rc = ST_OK;

	if (!p)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (lstat(p, &sb) < 0 || S_ISDIR(sb.st_mode)) {
		int e = errno;
		rc = st__err(err, e == ENOENT || e == ENOTDIR || S_ISDIR(sb.st_mode) ? ST_ENOTFOUND
										     : ST_EIO,
			     "cannot stat '%s': %s", p, strerror(e));
	} else {
		fill_info(&sb, info);
	}
	free(p);
	return rc;
}

static int fs_write_begin(st_store *s, const char *key, const st_store_write_opts *opts,
			  st_store_writer **out, st_error *err)
{
	file_store *fs = (file_store *)s;
	file_writer *w;
	struct stat sb;
	char rnd[17];
	const char *base;
	int exists, rc;

	*out = NULL;
	if ((rc = check_links(fs, key, 0, err)) != ST_OK)
		return rc;
	if (!(w = calloc(1, sizeof(*w))) || !(w->path = full_path(fs, key)) ||
	    !(w->dir = st_path_dirname(w->path))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto fail;
	}
	w->base.store = s;
	w->base.fd = -1;
	w->flags = opts->flags;
	if (st_path_is_symlink(w->path)) {
		st__err_file(err, w->path);
		rc = st__err(err, ST_EREFUSED,
			     "refusing to write '%s': it is a symbolic link (statetool never writes "
			     "through a link; give the link's target instead)",
			     w->path);
		goto fail;
	}
	exists = stat(w->path, &sb) == 0;
	if (exists && !S_ISREG(sb.st_mode)) {
		st__err_file(err, w->path);
		rc = st__err(err, ST_EIO, "cannot write '%s': not a regular file", w->path);
		goto fail;
	}
	if (exists && (opts->flags & ST_STORE_CREATE_ONLY)) {
		rc = st__err(err, ST_EEXIST, "'%s' exists already", w->path);
		goto fail;
	}
	w->mode = opts->mode ? opts->mode : 0644;
	if (exists && !(opts->flags & ST_STORE_EXACT_MODE))
		w->mode = sb.st_mode & 07777; /* an existing file keeps its mode */
	if (strchr(key, '/') && (rc = st_mkdir_p(w->dir, 0755, err)) != ST_OK)
		goto fail;
	st_random_hex(rnd, 8);
	base = strrchr(w->path, '/');
	base = base ? base + 1 : w->path;
	if (!(w->tmp = st_asprintf("%s/.%s.tmp-%s", w->dir, base, rnd))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto fail;
	}
	if (strlen(w->tmp) >= PATH_MAX) {
		st__err_file(err, w->path);
		rc = st__err(err, ST_EINVAL, "cannot write '%s': the path is too long", w->path);
		goto fail;
	}
	w->base.fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (w->base.fd < 0) {
		st__err_file(err, w->path);
		rc = st__err(err, ST_EIO, "cannot create a temporary file in '%s': %s", w->dir,
			     strerror(errno));
		goto fail;
	}
	*out = &w->base;
	return ST_OK;
fail:
	if (w) {
		free(w->path);
		free(w->dir);
		free(w->tmp);
		free(w);
	}
	return rc;
}

static unsigned long writebacks;

unsigned long st__store_writebacks(void)
{
	return __atomic_load_n(&writebacks, __ATOMIC_RELAXED);
}

/* The disk starts on the bytes written so far once 8 MiB have gathered since the last time,
 * while the rest is made: the fsync before the rename then waits for the last few MiB, not the
 * whole file. One call per 8 MiB, not one per piece (a lazy state's save comes in thousands
 * of pieces when many resources were edited). Not every file system can: an error only means
 * the fsync does it all. The durability is the fsync's, as before. */
static void start_writeback(file_writer *w)
{
#ifdef SYNC_FILE_RANGE_WRITE
	if (w->off - w->started < (off_t)(8u << 20))
		return;
	(void)sync_file_range(w->base.fd, w->started, w->off - w->started,
			      SYNC_FILE_RANGE_WRITE);
	__atomic_add_fetch(&writebacks, 1, __ATOMIC_RELAXED);
	w->started = w->off;
#else
	(void)w;
#endif
}

static int fs_write_chunk(st_store_writer *sw, const void *p, size_t n, st_error *err)
{
	file_writer *w = (file_writer *)sw;
	if (st__write_full(w->base.fd, p, n) < 0) {
		st__err_file(err, w->path);
		return st__err(err, ST_EIO, "cannot write '%s': %s", w->tmp, strerror(errno));
	}
	w->off += (off_t)n;
	start_writeback(w);
	return ST_OK;
}

/* A run of a lazy state's unchanged bytes, copied from its source file inside the kernel
 * (no trip through user memory), in slices so that the disk starts on them as the next is
 * copied (start_writeback). 1 where the kernel or the file systems cannot: EXDEV, ENOSYS,
 * EINVAL, EOPNOTSUPP, or a source shorter than expected; the caller writes the rest. */
static int fs_write_copy(st_store_writer *sw, int fd, off_t off, size_t n, size_t *done,
			 st_error *err)
{
	*done = 0;
#if defined(__linux__) && defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 27)
	file_writer *w = (file_writer *)sw;
	while (*done < n) {
		size_t slice = n - *done < (16u << 20) ? n - *done : (16u << 20);
		ssize_t r = copy_file_range(fd, &off, w->base.fd, NULL, slice, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 && (r == 0 || errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
			       errno == EOPNOTSUPP))
			return 1;
		if (r < 0) {
			st__err_file(err, w->path);
			return st__err(err, ST_EIO, "cannot write '%s': %s", w->tmp,
				       strerror(errno));
		}
		w->off += (off_t)r;
		*done += (size_t)r;
		start_writeback(w);
	}
	return ST_OK;
#else
	(void)sw;
	(void)fd;
	(void)off;
	(void)n;
	(void)err;
	return 1;
#endif
}

static int fs_write_finish(st_store_writer *sw, st_error *err)
{
	file_writer *w = (file_writer *)sw;
	if (fchmod(w->base.fd, w->mode) < 0 || fsync(w->base.fd) < 0) {
		st__err_file(err, w->path);
		return st__err(err, ST_EIO, "cannot sync '%s': %s", w->tmp, strerror(errno));
	}
	close(w->base.fd);
	w->base.fd = -1;
	return ST_OK;
}

static void writer_free(file_writer *w)
{
	if (w->base.fd >= 0)
		close(w->base.fd);
	free(w->path);
	free(w->tmp);
	free(w->dir);
	free(w);
}

static void fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

static void fs_write_abort(st_store_writer *sw)
{
	file_writer *w = (file_writer *)sw;
	if (w->base.fd >= 0) {
		close(w->base.fd);
		w->base.fd = -1;
	}
	unlink(w->tmp);
	writer_free(w);
}

static int fs_write_commit(st_store_writer *sw, st_error *err)
{
	file_writer *w = (file_writer *)sw;
	int rc = ST_OK;

	if (w->flags & ST_STORE_CREATE_ONLY) {
		/* link(2) never replaces: the conditional create is atomic */
		if (link(w->tmp, w->path) < 0) {
			int e = errno;
			rc = e == EEXIST ? st__err(err, ST_EEXIST, "'%s' exists already", w->path)
					 : st__err(err, ST_EIO, "cannot create '%s': %s", w->path,
						   strerror(e));
		}
		unlink(w->tmp);
	} else if (rename(w->tmp, w->path) < 0) {
		st__err_file(err, w->path);
		rc = st__err(err, ST_EIO, "cannot replace '%s': %s", w->path, strerror(errno));
		unlink(w->tmp);
	}
	if (rc == ST_OK)
		fsync_dir(w->dir);
	writer_free(w);
	return rc;
}

/* Copies src to dst through a temporary file and a rename (dst is whole at every moment);
 * dst gets the mode `keep_mode` unless it is -1 (a backup keeps src's, as a hard link would).
 * Streamed: copied inside the kernel where it can (fs_write_copy), else through a 1 MiB
 * buffer, never the whole file in memory. */
static int copy_bytes(file_store *fs, const char *src, const char *dst, int keep_mode,
		      st_error *err)
{
	st_store_write_opts o = ST_STORE_WRITE_OPTS_INIT;
	st_store_writer *w = NULL;
	char *p = NULL, *buf = NULL;
	int fd = -1, rc = open_object(fs, src, &fd, &p, err);
	off_t off = 0;
	size_t done;
	ssize_t got;
	int kernel = st__store_copy_enabled();

	if (rc == ST_OK && (rc = fs_write_begin(&fs->base, dst, &o, &w, err)) == ST_OK &&
	    keep_mode >= 0)
		((file_writer *)w)->mode = (mode_t)keep_mode;
	while (rc == ST_OK) {
		if (kernel) {
			rc = fs_write_copy(w, fd, off, 16u << 20, &done, err);
			off += (off_t)done;
			if (rc != 1)
				continue; /* 16 MiB copied (more may follow), or an error */
			kernel = rc = 0; /* the end, or the kernel cannot: read the rest */
		}
		if (!buf && !(buf = malloc(1u << 20))) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			break;
		}
		while ((got = pread(fd, buf, 1u << 20, off)) < 0 && errno == EINTR)
			;
		if (got == 0)
			break;
		if (got < 0) {
			st__err_file(err, p);
			rc = st__err(err, ST_EIO, "cannot read '%s': %s", p, strerror(errno));
		} else {
			rc = fs_write_chunk(w, buf, (size_t)got, err);
			off += got;
		}
	}
	if (rc == ST_OK && (rc = fs_write_finish(w, err)) == ST_OK)
		rc = fs_write_commit(w, err);
	else if (w)
		fs_write_abort(w);
	if (fd >= 0)
		close(fd);
	free(buf);
	free(p);
	return rc;
}

static int link_off;

void st__store_link_enable(int on)
{
	__atomic_store_n(&link_off, !on, __ATOMIC_RELAXED);
}

/* The temporary name of the hard link that becomes the backup `to`: ".statetool-bak-" and 16
 * hex digits of a hash of `to` (FNV-1a), in its directory. The same backup always gets the same
 * name, so a link a crash left there (between the link and the rename) is replaced by the next
 * backup of that file: a move's recovery, which installs again, leaves nothing behind. */
static char *bak_tmp_name(const char *dir, const char *to)
{
	unsigned long long h = 14695981039346656037ULL;
	for (const unsigned char *p = (const unsigned char *)to; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return st_asprintf("%s/.statetool-bak-%016llx", dir, h);
}

/* The backup: a hard link to src made under the temporary name, then renamed over dst, so
 * dst is whole at every moment and the backup costs no copy of the bytes (the same names and
 * bytes as a copy; dst shares src's inode until src is replaced, as every write replaces it:
 * by rename). 1 where no link can be made (EXDEV, EPERM, a file system without hard links,
 * st__store_link_enable(0)): the caller copies. */
static int backup_link(const char *from, const char *to, st_error *err)
{
	char *dir = st_path_dirname(to), *tmp = dir ? bak_tmp_name(dir, to) : NULL;
	int rc = ST_OK, e;

	if (!tmp) {
		free(dir);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	if (__atomic_load_n(&link_off, __ATOMIC_RELAXED))
		rc = 1;
	else if (link(from, tmp) < 0 && (errno != EEXIST || unlink(tmp) < 0 || link(from, tmp) < 0))
		rc = 1; /* EEXIST: a link a crash left under this name, replaced */
	if (rc == ST_OK) {
		st__crash_point("bak", 1);
		if (rename(tmp, to) < 0) {
			e = errno;
			unlink(tmp);
			st__err_file(err, to);
			rc = st__err(err, ST_EIO, "cannot write the backup '%s': %s", to, strerror(e));
		}
	}
	free(dir);
	free(tmp);
	return rc;
}

static int fs_copy(st_store *s, const char *src, const char *dst, int for_backup, st_error *err)
{
	file_store *fs = (file_store *)s;
	char *from = full_path(fs, src), *to = full_path(fs, dst);
	struct stat sb;
	int rc = ST_OK;

	if (!from || !to) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if (stat(from, &sb) < 0) {
		rc = st__err(err, errno == ENOENT ? ST_ENOTFOUND : ST_EIO, "cannot read '%s': %s",
			     from, strerror(errno));
		goto out;
	}
	if ((rc = check_links(fs, dst, 0, err)) != ST_OK)
		goto out;
	if (st_path_is_symlink(to)) {
		rc = st__err(err, ST_EREFUSED,
			     "refusing to write the backup '%s': it is a symbolic link", to);
		goto out;
	}
	if (for_backup && (rc = backup_link(from, to, err)) != 1)
		goto out;
	rc = copy_bytes(fs, src, dst, for_backup ? (int)(sb.st_mode & 07777) : -1, err);
out:
	free(from);
	free(to);
	return rc;
}

static int fs_remove(st_store *s, const char *key, st_error *err)
{
	file_store *fs = (file_store *)s;
	char *p;
	int rc = ST_OK;

	if ((rc = check_links(fs, key, 0, err)) != ST_OK)
		return rc;
	if (!(p = full_path(fs, key)))
		return st__err(err, ST_ENOMEM, "out of memory");
	if (unlink(p) < 0) {
		int e = errno;
		rc = st__err(err, e == ENOENT || e == ENOTDIR ? ST_ENOTFOUND : ST_EIO,
			     "cannot remove '%s': %s", p, strerror(e));
	}
	free(p);
	return rc;
}

/* ---- listing ---- */

/* A level listed as "kdir/sub/" (ST_STORE_LIST_DIRS): no size, no time. */
static int add_level(st__listing *l, char *key)
{
	st_store_info info;

	memset(&info, 0, sizeof(info));
	info.size = -1;
	return st__listing_add(l, key, &info);
}

/* Our own temporary files are not objects yet: a listing never shows them. */
static int is_temporary(const char *name)
{
	size_t n = strlen(name);
	const char *t;
	if (name[0] != '.' || n < 22)
		return 0;
	if (!strncmp(name, ".statetool-bak-", 15))
		return n == 31;
	t = name + n - 21;
	if (strncmp(t, ".tmp-", 5))
		return 0;
	for (size_t i = 5; i < 21; i++)
		if (!strchr("0123456789abcdef", t[i]))
			return 0;
	return 1;
}

/* Is `key`'s last segment one of our own temporary files? */
int st__store_temporary(const char *key)
{
	const char *slash = strrchr(key, '/');
	return is_temporary(slash ? slash + 1 : key);
}

/* A directory's entries are read first, sorted by name, then stat'ed: on two threads when
 * there are many (a backend of 10,000 stacks is listed, one stat per stack, for every query
 * of its index; the stats are most of that listing's time). Each entry keeps what the listing
 * gives of it (its info, its type), not the whole stat record: a listing of 10,000 entries is
 * about a megabyte less of memory that each process would touch for the first time. */
typedef struct dent {
	char *key;
	st_store_info info;
	unsigned char kind; /* 0: not stat'ed (gone), 'd' directory, 'f' file or link, '?' other */
} dent;

typedef struct stat_part {
	int fd, temps;
	dent *v;
	size_t from, to, skip; /* v[i].key + skip is the entry's name */
} stat_part;

static void *stat_part_run(void *p)
{
	stat_part *sp = p;
	struct stat sb;
	for (size_t i = sp->from; i < sp->to; i++) {
		dent *e = &sp->v[i];
		const char *nm = e->key + sp->skip;
		e->kind = 0;
		if (fstatat(sp->fd, nm, &sb, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		e->kind = S_ISDIR(sb.st_mode) ? 'd' : S_ISREG(sb.st_mode) || S_ISLNK(sb.st_mode) ? 'f'
											       : '?';
		if (e->kind == 'f' && sp->temps && !strncmp(nm, ".statetool-bak-", 15) &&
		    is_temporary(nm) && sb.st_ctim.tv_sec > sb.st_mtim.tv_sec)
			sb.st_mtim = sb.st_ctim; /* a backup's link keeps the file's time */
		if (e->kind == 'f')
			fill_info(&sb, &e->info);
	}
	return NULL;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The keys (kdir + name) of dir's entries that start with kdir + `name_prefix`, sorted. */
static int read_names(DIR *d, const char *kdir, const char *name_prefix, int temps,
		      char ***out, size_t *count)
{
	struct dirent *de;
	size_t np = strlen(name_prefix), kl = strlen(kdir), n = 0, cap = 0;
	char **v = NULL;
	int rc = ST_OK;

	while (rc == ST_OK && (de = readdir(d))) {
		const char *nm = de->d_name;
		size_t nl;
		char *key;
		if (!strcmp(nm, ".") || !strcmp(nm, "..") || strncmp(nm, name_prefix, np) ||
		    (!temps && is_temporary(nm)))
			continue;
		nl = strlen(nm);
		if (!(key = malloc(kl + nl + 1))) {
			rc = ST_ENOMEM;
			break;
		}
		memcpy(key, kdir, kl);
		memcpy(key + kl, nm, nl + 1);
		if (!st_store_key_valid(key)) {
			free(key);
			continue;
		}
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 32;
			char **nv = realloc(v, nc * sizeof(*nv));
			if (!nv) {
				free(key);
				rc = ST_ENOMEM;
				break;
			}
			v = nv;
			cap = nc;
		}
		v[n++] = key;
	}
	/* in key order: the listing is then sorted already (st__store_entries_settle checks),
	 * and pointers are cheaper to sort than entries */
	if (rc == ST_OK && !st__sorted(v, n, sizeof(*v), cmp_key))
		qsort(v, n, sizeof(*v), cmp_key);
	*out = v;
	*count = n;
	return rc;
}

/* dir's entries (read_names), each stat'ed relative to the open directory (no path walk per
 * entry). */
static int read_dir(DIR *d, const char *kdir, const char *name_prefix, int temps, dent **out,
		    size_t *count)
{
	char **names = NULL;
	size_t n = 0;
	dent *v;
	int rc = read_names(d, kdir, name_prefix, temps, &names, &n);

	if (rc == ST_OK && n && !(v = malloc(n * sizeof(*v))))
		rc = ST_ENOMEM;
	if (rc != ST_OK || !n) {
		for (size_t i = 0; i < n; i++)
			free(names[i]);
		free(names);
		*out = NULL;
		*count = 0;
		return rc;
	}
	for (size_t i = 0; i < n; i++)
		v[i].key = names[i];
	free(names);
	stat_part a = {dirfd(d), temps, v, 0, n / 2, strlen(kdir)}, b = a;
	b.from = a.to;
	b.to = n;
	st__two_run(ST__T_LIST, n, 0, stat_part_run, &a, stat_part_run, &b);
	*out = v;
	*count = n;
	return ST_OK;
}

/* Walks dir (the key prefix `kdir`, "" or ending in '/'), adding keys that start with kdir +
 * `name_prefix`; deeper levels are walked, or (levels) listed once as "kdir/sub/". */
static int walk(file_store *fs, const char *kdir, const char *name_prefix, int levels,
		int temps, st__listing *l)
{
	char *dpath = st_asprintf("%s%s", fs->root, kdir);
	DIR *d = dpath ? opendir(*dpath ? dpath : ".") : NULL;
	dent *v = NULL;
	size_t n = 0, i;
	int rc = ST_OK;

	if (!dpath)
		return ST_ENOMEM;
	if (d)
		rc = read_dir(d, kdir, name_prefix, temps, &v, &n);
	for (i = 0; i < n && rc == ST_OK; i++) {
		char *key = v[i].key;
		v[i].key = NULL;
		if (v[i].kind == 'd') {
			char *sub = st_asprintf("%s/", key);
			free(key);
			if (!sub)
				rc = ST_ENOMEM;
			else if (levels)
				rc = add_level(l, sub);
			else {
				rc = walk(fs, sub, "", 0, temps, l);
				free(sub);
			}
		} else if (v[i].kind == 'f') {
			rc = st__listing_add(l, key, &v[i].info);
		} else {
			free(key);
		}
	}
	for (; i < n; i++)
		free(v[i].key);
	free(v);
	if (d)
		closedir(d);
	free(dpath);
	return rc;
}

static int fs_list(st_store *s, const char *prefix, unsigned flags, st_store_entry **out,
		   size_t *count, st_error *err)
{
	file_store *fs = (file_store *)s;
	const char *slash = strrchr(prefix, '/');
	char *kdir = slash ? st_strndup(prefix, (size_t)(slash - prefix + 1)) : st_strdup("");
	st__listing l = {0};
	int rc;

	if (!kdir)
		return st__err(err, ST_ENOMEM, "out of memory");
	/* a prefix through a symbolic link lists nothing (nothing is read through one) */
	if (*kdir) {
		char *probe = st_strndup(kdir, strlen(kdir) - 1);
		int linked = !probe || check_links(fs, probe, 1, NULL) != ST_OK;
		free(probe);
		if (linked) {
			free(kdir);
			return ST_OK;
		}
	}
	rc = walk(fs, kdir, slash ? slash + 1 : prefix, (flags & ST_STORE_LIST_DIRS) != 0,
		  (flags & ST__STORE_LIST_TEMPORARY) != 0, &l);
	free(kdir);
	if (rc) {
		st_store_entries_free(l.v, l.n);
		return st__err(err, rc, "out of memory");
	}
	*out = l.v;
	*count = st__store_entries_settle(l.v, l.n);
	return ST_OK;
}

/* The journal's install: the staged file renamed over the target, which keeps its mode. */
static int fs_rename(st_store *s, const char *src, const char *dst, st_error *err)
{
	file_store *fs = (file_store *)s;
	char *from = full_path(fs, src), *to = full_path(fs, dst), *dir = NULL;
	struct stat sb;
	int rc = ST_OK;

	if (!from || !to || !(dir = st_path_dirname(to))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = check_links(fs, src, 1, err)) != ST_OK ||
	    (rc = check_links(fs, dst, 0, err)) != ST_OK)
		goto out;
	if (st_path_is_symlink(to)) {
		st__err_file(err, to);
		rc = st__err(err, ST_EREFUSED,
			     "refusing to write '%s': it is a symbolic link (statetool never writes "
			     "through a link; give the link's target instead)",
			     to);
		goto out;
	}
	if (stat(to, &sb) == 0 && S_ISREG(sb.st_mode))
		chmod(from, sb.st_mode & 07777);
	if (rename(from, to) < 0) {
		int e = errno;
		st__err_file(err, to);
		rc = st__err(err, e == ENOENT ? ST_ENOTFOUND : ST_EIO, "cannot replace '%s': %s", to,
			     strerror(e));
		goto out;
	}
	fsync_dir(dir);
out:
	free(from);
	free(to);
	free(dir);
	return rc;
}

static void fs_free(st_store *s)
{
	file_store *fs = (file_store *)s;
	free(fs->root);
	free(fs->base.url);
	free(fs);
}

static const st_store_ops file_ops = {
	"file",          fs_read,        fs_stat, fs_write_begin, fs_write_chunk, fs_write_finish,
	fs_write_commit, fs_write_abort, fs_list, fs_remove,      fs_copy,        fs_free,
	fs_rename,       fs_write_copy,
};

static int make_store(st_store **out, const char *root, const char *url, int strict,
		      st_error *err)
{
	file_store *fs = calloc(1, sizeof(*fs));
	size_t n = strlen(root);

	if (!fs || !(fs->base.url = st_strdup(url)) ||
	    !(fs->root = n == 0 || root[n - 1] == '/' ? st_strdup(root)
						      : st_asprintf("%s/", root))) {
		if (fs)
			free(fs->base.url);
		free(fs);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	/* one trailing slash only: "dir//" lists as "dir/" */
	for (n = strlen(fs->root); n > 1 && fs->root[n - 2] == '/'; n--)
		fs->root[n - 1] = '\0';
	fs->base.ops = &file_ops;
	fs->strict = strict;
	*out = &fs->base;
	return ST_OK;
}

int st__store_file_open(st_store **out, const char *root, const char *url, st_error *err)
{
	struct stat sb;

	*out = NULL;
	if (stat(root, &sb) < 0)
		return st__err(err, ST_ENOTFOUND, "backend directory '%s' does not exist", root);
	if (!S_ISDIR(sb.st_mode))
		return st__err(err, ST_ENOTFOUND, "backend '%s' is not a directory",
			       root);
	return make_store(out, root, url, 1, err);
}

int st__store_for_path(st_store **out, char **key, const char *path, st_error *err)
{
	const char *slash = strrchr(path, '/');
	char *root;
	int rc;

	*out = NULL;
	*key = NULL;
	if (slash && !slash[1])
		return st__err(err, ST_EINVAL, "'%s' names a directory, not a file", path);
	root = slash ? st_strndup(path, (size_t)(slash - path + 1)) : st_strdup("");
	*key = st_strdup(slash ? slash + 1 : path);
	if (!root || !*key) {
		free(root);
		free(*key);
		*key = NULL;
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	if (!st_store_key_valid(*key)) {
		rc = st__err(err, ST_EINVAL,
			     "cannot use '%s': statetool names no file with a backslash or a "
			     "control character, nor '.' or '..'",
			     path);
		free(root);
		free(*key);
		*key = NULL;
		return rc;
	}
	rc = make_store(out, root, path, 0, err);
	free(root);
	if (rc) {
		free(*key);
		*key = NULL;
	}
	return rc;
}

char *st__store_local_path(const st_store *s, const char *key)
{
	if (s->ops != &file_ops)
		return NULL;
	return full_path((const file_store *)s, key);
}

char *st__store_file_missing_dir(const st_store *s, const char *key)
{
	const file_store *fs = (const file_store *)s;
	struct stat sb;
	char *p;

	if (s->ops != &file_ops || !(p = full_path(fs, key)))
		return NULL;
	/* each directory of the key from the outermost: the first one missing */
	for (const char *sl = strchr(key, '/'); sl; sl = strchr(sl + 1, '/')) {
		size_t n = strlen(fs->root) + (size_t)(sl - key);
		char c = p[n];
		p[n] = '\0';
		int missing = stat(p, &sb) != 0 && errno == ENOENT;
		p[n] = c;
		if (missing) {
			char *prefix = st_strndup(key, (size_t)(sl - key) + 1);
			free(p);
			return prefix;
		}
	}
	free(p);
	return NULL;
}

void st__store_file_prune(const st_store *s, const char *key, const char *upto)
{
	const file_store *fs = (const file_store *)s;
	size_t keep = upto ? strlen(upto) : 0, rootlen;
	char *p, *sl;

	if (s->ops != &file_ops || !upto || !keep || strncmp(key, upto, keep) ||
	    !(p = full_path(fs, key)))
		return;
	rootlen = strlen(fs->root);
	/* from the key's own directory outwards, while the directory is within `upto` */
	while ((sl = strrchr(p + rootlen, '/')) != NULL && (size_t)(sl - (p + rootlen)) + 1 >= keep) {
		*sl = '\0';
		if (rmdir(p) != 0)
			break;
	}
	free(p);
}

int st__store_file_check(const st_store *s, const char *key, st_error *err)
{
	const file_store *fs = (const file_store *)s;
	if (s->ops != &file_ops || !fs->strict)
		return ST_OK;
	return check_links(fs, key, 1, err);
}

int st_store_open_file(st_store **out, char **key, const char *path, st_error *err)
{
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(key);
	ST_ASSERT_ARG(path);
	return st__store_for_path(out, key, path, err);
}

char *st__store_locator(const st_store *s)
{
	const file_store *fs = (const file_store *)s;
	char real[PATH_MAX];

	if (s->ops != &file_ops)
		return st_strdup(s->url);
	if (!realpath(*fs->root ? fs->root : ".", real)) {
		/* gone meanwhile: as it was named (a comparison then simply fails to match) */
		size_t n = strlen(fs->root);
		return st_asprintf("file://%.*s", (int)(n > 1 ? n - 1 : n), fs->root);
	}
	return st_asprintf("file://%s", real);
}

int st__store_threadsafe(const st_store *s)
{
	return s->ops == &file_ops;
}
