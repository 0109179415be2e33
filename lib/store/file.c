/*
 * Files: reading (plain, gzip, standard input) and the atomic replacement of one plain file,
 * which is a write to the file store at the file's directory (see filestore.c for the steps and
 * store.c for the crash points).
 */
#include "store_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

int st__read_fd(int fd, size_t max, char **out, size_t *len, const char *path,
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
			/* Another member may follow, and nothing else: Go's gzip reader (Pulumi's,
			 * multistream) reads a 10-byte header after each member (io.ReadFull: fewer
			 * bytes are "unexpected EOF", whatever they are) and wants 1f 8b 08 (magic,
			 * deflate) at its start ("gzip: invalid header"), so any other bytes, zero
			 * padding too, fail its read. */
			if (done >= n)
				break;
			if (n - done < 10 || (unsigned char)in[done] != 0x1f ||
			    (unsigned char)in[done + 1] != 0x8b || (unsigned char)in[done + 2] != 8) {
				inflateEnd(&zs);
				free(buf);
				st__err_file(err, path);
				return st__err(err, ST_EPARSE,
					       "'%s': %zu bytes after the gzip stream at byte %zu that "
					       "%s (Pulumi's reader refuses them: %s)",
					       path, n - done, done,
					       n - done < 10 ? "are not a whole gzip member"
							     : "do not begin a gzip member",
					       n - done < 10 ? "unexpected EOF" : "gzip: invalid header");
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

/* Decompresses every zstd frame of in[0..n) (skippable frames are skipped, as Go's reader
 * does). A stream that ends inside a frame is truncated. */
static int unzstd(const char *in, size_t n, size_t max, char **out, size_t *outlen,
		  const char *path, st_error *err)
{
	ZSTD_DStream *ds = ZSTD_createDStream();
	ZSTD_inBuffer ib = {in, n, 0};
	size_t cap = n * 4 + 1024, len = 0, r = 0;
	char *buf;

	if (cap > max + 1)
		cap = max + 1;
	buf = malloc(cap + 1);
	if (!ds || !buf) {
		ZSTD_freeDStream(ds);
		free(buf);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	ZSTD_initDStream(ds);
	while (ib.pos < ib.size) {
		ZSTD_outBuffer ob;
		if (len == cap) {
			if (cap >= max + 1) {
				ZSTD_freeDStream(ds);
				free(buf);
				st__err_file(err, path);
				return st__err(err, ST_ELIMIT,
					       "'%s': zstd data decompresses beyond the limit of %zu "
					       "bytes (refusing a possible zstd bomb; raise it with "
					       "--max-size)",
					       path, max);
			}
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *nb = realloc(buf, cap + 1);
			if (!nb) {
				ZSTD_freeDStream(ds);
				free(buf);
				return st__err(err, ST_ENOMEM, "out of memory");
			}
			buf = nb;
		}
		ob.dst = buf + len;
		ob.size = cap - len;
		ob.pos = 0;
		r = ZSTD_decompressStream(ds, &ob, &ib);
		len += ob.pos;
		if (ZSTD_isError(r)) {
			ZSTD_freeDStream(ds);
			free(buf);
			st__err_file(err, path);
			return st__err(err, ST_EPARSE, "'%s': corrupt zstd data: %s", path,
				       ZSTD_getErrorName(r));
		}
		if (ob.pos == 0 && ib.pos == ib.size)
			break;
	}
	/* a frame still open, or its output not all taken */
	while (r != 0 && len < cap) {
		ZSTD_outBuffer ob = {buf + len, cap - len, 0};
		r = ZSTD_decompressStream(ds, &ob, &ib);
		len += ob.pos;
		if (ZSTD_isError(r) || ob.pos == 0)
			break;
	}
	ZSTD_freeDStream(ds);
	if (r != 0) {
		free(buf);
		st__err_file(err, path);
		if (len == cap)
			return st__err(err, ST_ELIMIT,
				       "'%s': zstd data decompresses beyond the limit of %zu bytes "
				       "(refusing a possible zstd bomb; raise it with --max-size)",
				       path, max);
		return st__err(err, ST_EPARSE,
			       "'%s': truncated zstd data (the stream ends inside a frame after %zu "
			       "compressed bytes)",
			       path, n);
	}
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return ST_OK;
}

/* zstd at the default level (3), as Pulumi's encoder writes it; one frame with its size. */
static int zstd_bytes(const void *data, size_t len, char **out, size_t *outlen, st_error *err)
{
	size_t bound = ZSTD_compressBound(len), r;
	char *buf = malloc(bound ? bound : 1);

	if (!buf)
		return st__err(err, ST_ENOMEM, "out of memory");
	r = ZSTD_compress(buf, bound, data, len, ZSTD_CLEVEL_DEFAULT);
	if (ZSTD_isError(r)) {
		free(buf);
		return st__err(err, ST_EIO, "zstd compression failed: %s", ZSTD_getErrorName(r));
	}
	*out = buf;
	*outlen = r;
	return ST_OK;
}

int st_file_read(const char *path, size_t max_size, char **out, size_t *len,
		 st_compression *compression, st_error *err)
{
	ST_ASSERT_ARG(path);
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(len);
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
	rc = st__read_fd(fd, max_size, &raw, &n, shown, err);
	if (fd != STDIN_FILENO)
		close(fd);
	if (rc)
		return rc;
	return st__decompress(raw, n, max_size, shown, out, len, compression, err);
}

int st__decompress(char *raw, size_t n, size_t max_size, const char *name, char **out,
		   size_t *len, st_compression *compression, st_error *err)
{
	st_compression c = st__detect_compression(raw, n);
	char *plain = NULL;
	size_t plen = 0;
	int rc;

	*out = NULL;
	*len = 0;
	if (compression)
		*compression = c;
	if (!max_size)
		max_size = ST_DEFAULT_MAX_FILE;
	if (c == ST_COMPRESS_NONE) {
		*out = raw;
		*len = n;
		return ST_OK;
	}
	rc = c == ST_COMPRESS_GZIP ? gunzip(raw, n, max_size, &plain, &plen, name, err)
				   : unzstd(raw, n, max_size, &plain, &plen, name, err);
	free(raw);
	if (rc)
		return rc;
	*out = plain;
	*len = plen;
	return ST_OK;
}

int st_file_decompress(const void *data, size_t len, size_t max_size, const char *name,
		       char **out, size_t *outlen, st_compression *compression, st_error *err)
{
	ST_ASSERT_ARG(data || !len);
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(outlen);
	char *copy = malloc(len + 1);
	*out = NULL;
	*outlen = 0;
	if (!copy)
		return st__err(err, ST_ENOMEM, "out of memory");
	memcpy(copy, data, len);
	copy[len] = '\0';
	return st__decompress(copy, len, max_size, name, out, outlen, compression, err);
}

st_compression st__detect_compression(const void *data, size_t n)
{
	const unsigned char *b = data;
	if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b)
		return ST_COMPRESS_GZIP;
	if (n >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd)
		return ST_COMPRESS_ZSTD;
	return ST_COMPRESS_NONE;
}

int st__compress_bytes(st_compression c, const void *data, size_t len, char **out,
		       size_t *outlen, st_error *err)
{
	if (c == ST_COMPRESS_GZIP)
		return st__gzip_bytes(data, len, out, outlen, err);
	if (c == ST_COMPRESS_ZSTD)
		return zstd_bytes(data, len, out, outlen, err);
	if (!(*out = malloc(len + 1)))
		return st__err(err, ST_ENOMEM, "out of memory");
	memcpy(*out, data, len);
	*outlen = len;
	return ST_OK;
}

int st__gzip_bytes(const void *data, size_t len, char **out, size_t *outlen, st_error *err)
{
	z_stream zs;
	uLong bound;
	char *buf;

	gz_header head;

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return st__err(err, ST_ENOMEM, "cannot initialise zlib");
	/* The header Go's compress/gzip writes (Pulumi's gzip.NewWriter): no name, no time,
	 * XFL 0 at the default level, OS 255 ("unknown"; zlib would write 3, Unix). The deflate
	 * data itself is zlib's, not Go's: the same text, other bytes. */
	memset(&head, 0, sizeof(head));
	head.os = 255;
	if (deflateSetHeader(&zs, &head) != Z_OK) {
		deflateEnd(&zs);
		return st__err(err, ST_ENOMEM, "cannot initialise zlib");
	}
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

typedef struct bytes {
	const void *data;
	size_t len;
} bytes;

static int fill_bytes(void *ctx, st_store_writer *w, st_error *err)
{
	bytes *b = ctx;
	return st_store_writer_write(w, b->data, b->len, err);
}

int st__file_write_atomic_checked(const char *path, const void *data, size_t len,
				  int (*proceed)(void *ctx), void *proceed_ctx,
				  const st_write_opts *opts, st_error *err)
{
	char *gz = NULL;
	bytes b = {data, len};
	int rc;

	if (opts && opts->compression != ST_COMPRESS_NONE) {
		size_t glen = 0;
		rc = st__compress_bytes(opts->compression, data, len, &gz, &glen, err);
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
	ST_ASSERT_ARG(path);
	ST_ASSERT_ARG(data || !len);
	int rc;
	if (opts && (rc = st__opts_version(opts->version, ST_WRITE_OPTS_VERSION, "st_write_opts",
					   err)) != ST_OK)
		return rc;
	return st__file_write_atomic_checked(path, data, len, NULL, NULL, opts, err);
}

int st__file_write_atomic_fill(const char *path, st_store_fill_fn fill, void *ctx,
			       int (*proceed)(void *ctx), void *proceed_ctx,
			       const st_write_opts *opts, st_error *err)
{
	st_store_write_opts so = ST_STORE_WRITE_OPTS_INIT;
	st_store *s = NULL;
	char *key = NULL, *bak = NULL;
	int rc;

	if ((rc = st__store_for_path(&s, &key, path, err)) != ST_OK)
		return rc;
	if (opts && opts->backup && !(bak = st_asprintf("%s.bak", key))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	so.backup_key = bak;
	so.proceed = proceed;
	so.proceed_ctx = proceed_ctx;
	so.mode = opts ? opts->mode : 0;
	if (opts && opts->version >= 2 && opts->exact_mode)
		so.flags |= ST_STORE_EXACT_MODE;
	rc = st__store_write_fill(s, key, fill, ctx, &so, "write", err);
out:
	free(bak);
	free(key);
	st_store_free(s);
	return rc;
}
