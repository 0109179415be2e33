/*
 * Files: reading (plain, gzip, standard input) and atomic replacement with a backup.
 *
 * Atomic write, in order (each step is a crash point for the tests, see st__crash_point):
 *   1. write the new bytes to a temporary file beside the target (O_EXCL, O_NOFOLLOW);
 *   2. fsync it;
 *   3. keep the old file as <file>.bak: a hard link made under a temporary name and renamed
 *      over the .bak, so the .bak is always whole (a copy where hard links are not supported);
 *   4. rename the temporary file over the target;
 *   5. fsync the directory.
 * A crash at any point leaves the target either old or new, and the .bak whole.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

void st__crash_point(const char *op, int step)
{
	const char *spec = getenv("STATETOOL_CRASH_AT");
	size_t n;

	if (!spec || !*spec)
		return;
	n = strlen(op);
	if (strncmp(spec, op, n) == 0 && spec[n] == ':' && atoi(spec + n + 1) == step)
		kill(getpid(), SIGKILL);
}

static int read_all_fd(int fd, size_t max, char **out, size_t *len, const char *path,
		       st_error *err)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	struct stat sb;

	if (!buf)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
		if ((unsigned long long)sb.st_size > max) {
			free(buf);
			st__err_file(err, path);
			return st__err(err, ST_ELIMIT,
				       "'%s' is %lld bytes, over the limit of %zu bytes", path,
				       (long long)sb.st_size, max);
		}
		cap = (size_t)sb.st_size + 1;
		char *nb = realloc(buf, cap + 1);
		if (!nb) {
			free(buf);
			return st__err(err, ST_ENOMEM, "out of memory");
		}
		buf = nb;
	}
	for (;;) {
		ssize_t r;
		if (n == cap) {
			if (cap >= max + 1) {
				free(buf);
				st__err_file(err, path);
				return st__err(err, ST_ELIMIT,
					       "'%s' is over the limit of %zu bytes", path, max);
			}
			cap *= 2;
			char *nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				return st__err(err, ST_ENOMEM, "out of memory");
			}
			buf = nb;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(buf);
			st__err_file(err, path);
			return st__err(err, ST_EIO, "cannot read '%s': %s", path, strerror(e));
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return ST_OK;
}

/* Inflates every gzip member of in[0..n) (Go's reader accepts concatenated members). */
static int gunzip(const char *in, size_t n, size_t max, char **out, size_t *outlen,
		  const char *path, st_error *err)
{
	z_stream zs;
	size_t cap = n * 4 + 1024, len = 0;
	char *buf;
	int zr;

	if (cap > max + 1)
		cap = max + 1;
	buf = malloc(cap + 1);
	if (!buf)
		return st__err(err, ST_ENOMEM, "out of memory");
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
		free(buf);
		return st__err(err, ST_ENOMEM, "cannot initialise zlib");
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)(n > UINT_MAX ? UINT_MAX : n);
	size_t consumed_base = 0;
	for (;;) {
		if (len == cap) {
			if (cap >= max + 1) {
				inflateEnd(&zs);
				free(buf);
				st__err_file(err, path);
				return st__err(err, ST_ELIMIT,
					       "'%s': gzip data inflates beyond the limit of %zu "
					       "bytes (refusing a possible gzip bomb; raise it with "
					       "--max-size)",
					       path, max);
			}
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *nb = realloc(buf, cap + 1);
			if (!nb) {
				inflateEnd(&zs);
				free(buf);
				return st__err(err, ST_ENOMEM, "out of memory");
			}
			buf = nb;
		}
		zs.next_out = (Bytef *)buf + len;
		zs.avail_out = (uInt)((cap - len) > UINT_MAX ? UINT_MAX : (cap - len));
		size_t before_out = zs.avail_out;
		zr = inflate(&zs, Z_NO_FLUSH);
		len += before_out - zs.avail_out;
		if (zs.avail_in == 0 && consumed_base + zs.total_in < n) {
			/* feed the next chunk of a >4 GiB input */
			size_t done = consumed_base + zs.total_in;
			zs.next_in = (Bytef *)in + done;
			zs.avail_in = (uInt)((n - done) > UINT_MAX ? UINT_MAX : (n - done));
		}
		if (zr == Z_STREAM_END) {
			size_t done = (size_t)((const char *)zs.next_in - in);
			/* skip zero padding; another member may follow */
			while (done < n && in[done] == 0)
				done++;
			if (done >= n)
				break;
			if (n - done < 2 || (unsigned char)in[done] != 0x1f ||
			    (unsigned char)in[done + 1] != 0x8b) {
				inflateEnd(&zs);
				free(buf);
				st__err_file(err, path);
				return st__err(err, ST_EPARSE,
					       "'%s': garbage after the gzip stream at byte %zu",
					       path, done);
			}
			inflateReset(&zs);
			zs.next_in = (Bytef *)in + done;
			zs.avail_in = (uInt)((n - done) > UINT_MAX ? UINT_MAX : (n - done));
			consumed_base = done;
			continue;
		}
		if (zr == Z_BUF_ERROR && zs.avail_in == 0) {
			inflateEnd(&zs);
			free(buf);
			st__err_file(err, path);
			return st__err(err, ST_EPARSE,
				       "'%s': truncated gzip data (the stream ends after %zu "
				       "compressed bytes)",
				       path, n);
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR) {
			inflateEnd(&zs);
			free(buf);
			st__err_file(err, path);
			return st__err(err, ST_EPARSE, "'%s': corrupt gzip data: %s", path,
				       zs.msg ? zs.msg : "inflate failed");
		}
	}
	inflateEnd(&zs);
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return ST_OK;
}

int st_file_read(const char *path, size_t max_size, char **out, size_t *len,
		 st_compression *compression, st_error *err)
{
	int fd, rc;
	char *raw = NULL;
	size_t n = 0;
	const char *shown = strcmp(path, "-") == 0 ? "<stdin>" : path;

	*out = NULL;
	*len = 0;
	if (compression)
		*compression = ST_COMPRESS_NONE;
	if (!max_size)
		max_size = ST_DEFAULT_MAX_FILE;
	if (strcmp(path, "-") == 0) {
		fd = STDIN_FILENO;
	} else {
		struct stat sb;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			st__err_file(err, path);
			return st__err(err, e == ENOENT ? ST_ENOTFOUND : ST_EIO,
				       "cannot open '%s': %s", path, strerror(e));
		}
		if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			close(fd);
			st__err_file(err, path);
			return st__err(err, ST_EIO, "cannot read '%s': it is a directory", path);
		}
	}
	rc = read_all_fd(fd, max_size, &raw, &n, shown, err);
	if (fd != STDIN_FILENO)
		close(fd);
	if (rc)
		return rc;
	if (n >= 2 && (unsigned char)raw[0] == 0x1f && (unsigned char)raw[1] == 0x8b) {
		char *plain = NULL;
		size_t plen = 0;
		rc = gunzip(raw, n, max_size, &plain, &plen, shown, err);
		free(raw);
		if (rc)
			return rc;
		raw = plain;
		n = plen;
		if (compression)
			*compression = ST_COMPRESS_GZIP;
	} else if (n >= 4 && (unsigned char)raw[0] == 0x28 && (unsigned char)raw[1] == 0xb5 &&
		   (unsigned char)raw[2] == 0x2f && (unsigned char)raw[3] == 0xfd) {
		free(raw);
		st__err_file(err, shown);
		return st__err(err, ST_EUNSUPPORTED,
			       "'%s' is zstd-compressed, which this build of statetool does not "
			       "read; decompress it first (zstd -d) or write gzip with "
			       "PULUMI_DIY_BACKEND_GZIP=true",
			       shown);
	}
	*out = raw;
	*len = n;
	return ST_OK;
}

int st__gzip_bytes(const void *data, size_t len, char **out, size_t *outlen, st_error *err)
{
	z_stream zs;
	uLong bound;
	char *buf;

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return st__err(err, ST_ENOMEM, "cannot initialise zlib");
	bound = deflateBound(&zs, (uLong)len) + 32;
	buf = malloc(bound);
	if (!buf) {
		deflateEnd(&zs);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	zs.next_in = (Bytef *)data;
	zs.avail_in = (uInt)len;
	zs.next_out = (Bytef *)buf;
	zs.avail_out = (uInt)bound;
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&zs);
		free(buf);
		return st__err(err, ST_EIO, "gzip compression failed");
	}
	*outlen = zs.total_out;
	deflateEnd(&zs);
	*out = buf;
	return ST_OK;
}

int st__write_full(int fd, const void *data, size_t n)
{
	const char *p = data;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

/* Copies src to dst through a temporary file (for file systems without hard links). */
static int copy_file_atomic(const char *src, const char *dst, const char *dir, st_error *err)
{
	char *data = NULL;
	size_t n = 0;
	int rc;
	int fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return st__err(err, ST_EIO, "cannot read '%s' for its backup: %s", src,
			       strerror(errno));
	rc = read_all_fd(fd, (size_t)-2, &data, &n, src, err);
	close(fd);
	if (rc)
		return rc;
	char rnd[17];
	st_random_hex(rnd, 8);
	char *tmp = st_asprintf("%s/.statetool-bak-%s", dir, rnd);
	if (!tmp) {
		free(data);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || st__write_full(fd, data, n) < 0 || fsync(fd) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		free(tmp);
		free(data);
		return st__err(err, ST_EIO, "cannot write the backup '%s': %s", dst, strerror(e));
	}
	close(fd);
	free(data);
	if (rename(tmp, dst) < 0) {
		int e = errno;
		unlink(tmp);
		free(tmp);
		return st__err(err, ST_EIO, "cannot write the backup '%s': %s", dst, strerror(e));
	}
	free(tmp);
	return ST_OK;
}

static int make_backup(const char *path, const char *dir, st_error *err)
{
	char *bak = st_asprintf("%s.bak", path), *tmp;
	char rnd[17];
	int rc = ST_OK;

	if (!bak)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (st_path_is_symlink(bak)) {
		rc = st__err(err, ST_EREFUSED,
			     "refusing to write the backup '%s': it is a symbolic link", bak);
		free(bak);
		return rc;
	}
	st_random_hex(rnd, 8);
	tmp = st_asprintf("%s/.statetool-bak-%s", dir, rnd);
	if (!tmp) {
		free(bak);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	if (link(path, tmp) == 0) {
		if (rename(tmp, bak) < 0) {
			int e = errno;
			unlink(tmp);
			rc = st__err(err, ST_EIO, "cannot write the backup '%s': %s", bak,
				     strerror(e));
		}
	} else {
		rc = copy_file_atomic(path, bak, dir, err);
	}
	free(tmp);
	free(bak);
	return rc;
}

typedef struct bytes {
	const void *data;
	size_t len;
} bytes;

static int fill_bytes(void *ctx, int fd, st_error *err)
{
	bytes *b = ctx;
	(void)err;
	return st__write_full(fd, b->data, b->len) < 0 ? ST_EIO : ST_OK;
}

int st__file_write_atomic_checked(const char *path, const void *data, size_t len,
				  int (*proceed)(void *ctx), void *proceed_ctx,
				  const st_write_opts *opts, st_error *err)
{
	char *gz = NULL;
	bytes b = {data, len};
	int rc;

	if (opts && opts->compression == ST_COMPRESS_GZIP) {
		size_t glen = 0;
		rc = st__gzip_bytes(data, len, &gz, &glen, err);
		if (rc)
			return rc;
		b.data = gz;
		b.len = glen;
	}
	rc = st__file_write_atomic_fill(path, fill_bytes, &b, proceed, proceed_ctx, opts, err);
	free(gz);
	return rc;
}

int st_file_write_atomic(const char *path, const void *data, size_t len,
			 const st_write_opts *opts, st_error *err)
{
	return st__file_write_atomic_checked(path, data, len, NULL, NULL, opts, err);
}

int st__file_write_atomic_fill(const char *path, int (*fill)(void *ctx, int fd, st_error *err),
			       void *ctx, int (*proceed)(void *ctx), void *proceed_ctx,
			       const st_write_opts *opts, st_error *err)
{
	st_write_opts def = {0};
	/* on the stack: a simulated crash (STATETOOL_CRASH_AT) in the middle leaves nothing that
	 * leak checkers would count */
	char dir[PATH_MAX], tmp[PATH_MAX];
	char rnd[17], *d;
	struct stat sb;
	int exists, fd = -1, rc = ST_OK;
	mode_t mode;

	if (!opts)
		opts = &def;
	if (st_path_is_symlink(path)) {
		st__err_file(err, path);
		return st__err(err, ST_EREFUSED,
			       "refusing to write '%s': it is a symbolic link (statetool never "
			       "writes through a link; give the link's target instead)",
			       path);
	}
	exists = stat(path, &sb) == 0;
	if (exists && !S_ISREG(sb.st_mode)) {
		st__err_file(err, path);
		return st__err(err, ST_EIO, "cannot write '%s': not a regular file", path);
	}
	mode = exists ? (sb.st_mode & 07777) : (opts->mode ? opts->mode : 0644);
	d = st_path_dirname(path);
	if (!d)
		return st__err(err, ST_ENOMEM, "out of memory");
	st_random_hex(rnd, 8);
	{
		const char *base = strrchr(path, '/');
		int n1 = snprintf(dir, sizeof(dir), "%s", d), n2;
		base = base ? base + 1 : path;
		n2 = snprintf(tmp, sizeof(tmp), "%s/.%s.tmp-%s", d, base, rnd);
		free(d);
		if (n1 < 0 || n2 < 0 || (size_t)n1 >= sizeof(dir) || (size_t)n2 >= sizeof(tmp)) {
			st__err_file(err, path);
			return st__err(err, ST_EINVAL, "cannot write '%s': the path is too long",
				       path);
		}
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		st__err_file(err, path);
		rc = st__err(err, ST_EIO, "cannot create a temporary file in '%s': %s", dir,
			     strerror(errno));
		goto out;
	}
	if ((rc = fill(ctx, fd, err)) != ST_OK) {
		if (rc == ST_EIO) {
			st__err_file(err, path);
			rc = st__err(err, ST_EIO, "cannot write '%s': %s", tmp, strerror(errno));
		}
		goto fail_tmp;
	}
	st__crash_point("write", 1);
	st__phase("write: file written");
	if (fchmod(fd, mode) < 0 || fsync(fd) < 0) {
		st__err_file(err, path);
		rc = st__err(err, ST_EIO, "cannot sync '%s': %s", tmp, strerror(errno));
		goto fail_tmp;
	}
	close(fd);
	fd = -1;
	st__phase("write: fsync");
	if (proceed && (rc = proceed(proceed_ctx)) != ST_OK)
		goto fail_tmp; /* the caller decided against it: the old file stays */
	st__crash_point("write", 2);
	if (exists && opts->backup) {
		rc = make_backup(path, dir, err);
		if (rc)
			goto fail_tmp;
	}
	st__crash_point("write", 3);
	if (rename(tmp, path) < 0) {
		st__err_file(err, path);
		rc = st__err(err, ST_EIO, "cannot replace '%s': %s", path, strerror(errno));
		goto fail_tmp;
	}
	st__crash_point("write", 4);
	fsync_dir(dir);
	st__phase("write: checked, backed up, renamed");
	goto out;
fail_tmp:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out:
	return rc;
}
