/*
 * Stores: the generic layer over every implementation (store_impl.h). Keys are checked here,
 * once, so no implementation sees a key that could leave its root; the write protocol and, for
 * a state's write, its crash points (st__crash_point("write", N); the CLI's
 * STATETOOL_CRASH_AT=write:N kills there) are here, so every store has
 * the same ones:
 *   write:1 the new content written (not yet durable)
 *   write:2 durable and accepted by `proceed`
 *   write:3 the previous object kept under the backup key
 *   write:4 the new object visible
 */
#include "store_impl.h"
#include "pg.h"

#include "azblob.h"
#include "gcs.h"
#include "s3.h"
#include "xml.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

int st_store_key_valid(const char *key)
{
	const char *seg;

	if (!key || !*key || *key == '/')
		return 0;
	seg = key;
	for (const char *p = key;; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '/' || c == '\0') {
			size_t n = (size_t)(p - seg);
			if (n == 0 || (n == 1 && seg[0] == '.') ||
			    (n == 2 && seg[0] == '.' && seg[1] == '.'))
				return 0;
			if (c == '\0')
				return 1;
			seg = p + 1;
			continue;
		}
		if (c < 0x20 || c == 0x7f || c == '\\')
			return 0;
	}
}

/* A key check that names the key (never the data) in its message. */
static int check_key(const char *key, const char *what, st_error *err)
{
	if (st_store_key_valid(key))
		return ST_OK;
	return st__err(err, ST_EINVAL,
		       "invalid %s '%s': a key is a relative '/'-path without empty, '.' or '..' "
		       "segments, backslashes or control characters",
		       what, key ? key : "(null)");
}

static int has_scheme(const char *url, const char *scheme)
{
	size_t n = strlen(scheme);
	return !strncmp(url, scheme, n) && !strncmp(url + n, "://", 3);
}

/* ---- file:// URLs as Pulumi reads them ---- */

/* Does [p, p + n) have only well-formed %-escapes (Go's url.Parse refuses the rest)? */
static int escapes_ok(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] == '%' && (i + 2 >= n || !isxdigit((unsigned char)p[i + 1]) ||
				    !isxdigit((unsigned char)p[i + 2])))
			return 0;
	return 1;
}

/* strconv.ParseUint(v, 0, 32): 0x/0o/0b prefixes, a leading 0 is octal. */
static int go_mode(const char *v)
{
	int base = 10;
	unsigned long long n = 0;
	if (v[0] == '0' && v[1] && strchr("xXoObB", v[1])) {
		base = strchr("xX", v[1]) ? 16 : strchr("oO", v[1]) ? 8 : 2;
		v += 2;
	} else if (v[0] == '0' && v[1]) {
		base = 8;
		v++;
	}
	if (!*v)
		return 0;
	for (; *v; v++) {
		int d = isdigit((unsigned char)*v) ? *v - '0'
			: isxdigit((unsigned char)*v) ? tolower((unsigned char)*v) - 'a' + 10
						      : 99;
		if (d >= base || (n = n * (unsigned)base + (unsigned)d) > 0xffffffffULL)
			return 0;
	}
	return 1;
}

/* The first value of each of fileblob's parameters, as url.Values.Get (decoded, new). */
enum { F_NO_TMP_DIR, F_CREATE_DIR, F_DIR_FILE_MODE, F_METADATA, F_BASE_URL, F_SECRET_KEY_PATH, F_N };
static const char *const file_params[F_N] = {"no_tmp_dir", "create_dir", "dir_file_mode",
					     "metadata", "base_url", "secret_key_path"};

/* The query of a file:// URL, checked as gocloud's fileblob checks it (an unknown name is its
 * error; a pair Go's url.ParseQuery drops, a bad escape or a ';', is dropped). None of the
 * parameters changes what statetool does: it writes temporary files beside their target (as
 * no_tmp_dir asks), makes no backend directory, writes no .attrs files, signs no URLs. */
static int file_query(const char *q, size_t qn, st_error *err)
{
	char *v[F_N] = {NULL};
	int rc = ST_OK;

	for (const char *a = q, *e = q + qn; rc == ST_OK && a < e;) {
		const char *amp = memchr(a, '&', (size_t)(e - a)), *ae = amp ? amp : e;
		const char *eq = memchr(a, '=', (size_t)(ae - a));
		size_t kn = (size_t)((eq ? eq : ae) - a);
		char *k = NULL, *val = NULL;
		int i = 0;
		if (ae > a && escapes_ok(a, (size_t)(ae - a)) && !memchr(a, ';', (size_t)(ae - a))) {
			k = st__url_decode(a, kn, 1);
			val = eq ? st__url_decode(eq + 1, (size_t)(ae - eq - 1), 1) : st_strdup("");
			if (!k || !val)
				rc = st__err(err, ST_ENOMEM, "out of memory");
			for (i = 0; rc == ST_OK && i < F_N && strcmp(k, file_params[i]); i++)
				;
			if (rc == ST_OK && i == F_N)
				rc = st__err(err, ST_EINVAL,
					     "file: invalid query parameter \"%s\" (file:// takes "
					     "no_tmp_dir, create_dir, dir_file_mode, metadata, base_url "
					     "and secret_key_path)",
					     k);
		}
		if (rc == ST_OK && val && !v[i]) {
			v[i] = val;
			val = NULL;
		}
		free(k);
		free(val);
		a = ae + (ae < e);
	}
	if (rc == ST_OK && v[F_METADATA] && *v[F_METADATA] && strcmp(v[F_METADATA], "skip"))
		rc = st__err(err, ST_EINVAL,
			     "file: invalid value \"%s\" for query parameter \"metadata\": skip (or "
			     "nothing) is expected",
			     v[F_METADATA]);
	if (rc == ST_OK && v[F_DIR_FILE_MODE] && *v[F_DIR_FILE_MODE] && !go_mode(v[F_DIR_FILE_MODE]))
		rc = st__err(err, ST_EINVAL,
			     "file: invalid value \"%s\" for query parameter \"dir_file_mode\": a "
			     "file mode (0755, 0o755, 493...) is expected",
			     v[F_DIR_FILE_MODE]);
	if (rc == ST_OK && !(v[F_BASE_URL] && *v[F_BASE_URL]) !=
			       !(v[F_SECRET_KEY_PATH] && *v[F_SECRET_KEY_PATH]))
		rc = st__err(err, ST_EINVAL,
			     "file: the query parameters \"base_url\" and \"secret_key_path\" go "
			     "together (one without the other is fileblob's error)");
	for (int i = 0; i < F_N; i++)
		free(v[i]);
	return rc;
}

/* file://PATH[?QUERY] as Pulumi reads it (massageBlobPath, pkg/backend/diy/backend.go, then
 * fileblob): the query split off and checked, the path up to '?' (or a '#': the fragment of
 * the URL fileblob parses) percent-decoded. *path new. */
static int file_url(const char *url, char **path, int *tilde, st_error *err)
{
	const char *p = url + 7;
	size_t pn = strcspn(p, "?#");
	int rc;

	*path = NULL;
	/* `~` is expanded before the path is decoded, as Pulumi's massageBlobPath does: %7E is a
	 * directory named `~` (gocloud's fileblob decodes it later) */
	*tilde = pn && p[0] == '~' && (pn == 1 || p[1] == '/');
	if (p[pn] == '?' && (rc = file_query(p + pn + 1, strcspn(p + pn + 1, "#"), err)) != ST_OK)
		return rc;
	if (!escapes_ok(p, pn))
		return st__err(err, ST_EINVAL, "file: the path of '%s' has a malformed %%-escape",
			       url);
	for (size_t i = 0; i + 2 < pn; i++) /* (no file name holds a NUL) */
		if (p[i] == '%' && p[i + 1] == '0' && p[i + 2] == '0')
			return st__err(err, ST_EINVAL, "file: the path of '%s' has a NUL (%%00)",
				       url);
	if (!(*path = st__url_decode(p, pn, 0)))
		return st__err(err, ST_ENOMEM, "out of memory");
	return ST_OK;
}

int st_store_open(st_store **out, const char *url, st_error *err)
{
	ST_ASSERT_ARG(out);
	const char *path = url;
	char *expanded = NULL, *decoded = NULL;
	int rc, tilde = 1;

	*out = NULL;
	if (!url || !*url)
		return st__err(err, ST_EINVAL, "no store given");
	if (has_scheme(url, "s3"))
		return st__store_s3_open(out, url, err);
	if (has_scheme(url, "azblob"))
		return st__store_azblob_open(out, url, err);
	if (has_scheme(url, "gs"))
		return st__store_gcs_open(out, url, err);
	if (has_scheme(url, "file")) {
		if ((rc = file_url(url, &decoded, &tilde, err)) != ST_OK)
			return rc;
		path = decoded;
	} else if (has_scheme(url, "postgres")) {
		return st__store_pg_open(out, url, err);
	} else if (has_scheme(url, "postgresql")) {
		/* never the URL itself: it may hold a password */
		return st__err(err, ST_EUNSUPPORTED,
			       "postgresql:// is not a scheme Pulumi knows: its PostgreSQL backend "
			       "is postgres://");
	} else if (strstr(url, "://")) {
		return st__err(err, ST_EUNSUPPORTED,
			       "backend '%s' is not supported: statetool works on DIY backends in "
			       "a local directory (file://PATH), S3 (s3://BUCKET), Azure Blob "
			       "Storage (azblob://CONTAINER), Google Cloud Storage (gs://BUCKET) "
			       "and PostgreSQL (postgres://)",
			       url);
	}
	if (tilde && path[0] == '~' && (path[1] == '/' || !path[1]) && getenv("HOME")) {
		expanded = st_asprintf("%s%s", getenv("HOME"), path + 1);
		if (!expanded) {
			free(decoded);
			return st__err(err, ST_ENOMEM, "out of memory");
		}
		path = expanded;
	}
	if (!*path)
		rc = st__err(err, ST_EINVAL, "backend '%s' names no directory", url);
	else
		rc = st__store_file_open(out, path, url, err);
	free(expanded);
	free(decoded);
	return rc;
}

void st_store_free(st_store *s)
{
	if (s)
		s->ops->free(s);
}

const char *st_store_url(const st_store *s)
{
	ST_ASSERT_ARG(s);
	return s->url;
}

const char *st_store_scheme(const st_store *s)
{
	ST_ASSERT_ARG(s);
	return s->ops->scheme;
}

/* ---- identity ---- */

void st__identity_add(st_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= 0x20 || c >= 0x7f || strchr("%?&#=", c)) {
			st_buf_addc(b, '%');
			st_buf_addc(b, hex[c >> 4]);
			st_buf_addc(b, hex[c & 15]);
		} else {
			st_buf_addc(b, (char)c);
		}
	}
}

void st__identity_endpoint(st_buf *b, const char *url)
{
	const char *h = strstr(url, "://"), *path, *port;
	size_t hl, pl, sl;

	if (!h) {
		st__identity_add(b, url, strlen(url));
		return;
	}
	sl = (size_t)(h - url);
	h += 3;
	hl = strcspn(h, "/");
	path = h + hl;
	pl = strlen(path);
	while (pl && path[pl - 1] == '/')
		pl--;
	/* the scheme's own port is no part of the address */
	port = NULL;
	for (const char *c = h + hl; c > h && c[-1] != ']' && !port; c--)
		if (c[-1] == ':')
			port = c;
	if (port) {
		size_t nn = (size_t)(h + hl - port);
		int https = sl == 5 && !strncasecmp(url, "https", 5);
		int http = sl == 4 && !strncasecmp(url, "http", 4);
		if ((https && nn == 3 && !strncmp(port, "443", 3)) ||
		    (http && nn == 2 && !strncmp(port, "80", 2)))
			hl = (size_t)(port - 1 - h);
	}
	for (size_t i = 0; i < sl; i++)
		st_buf_addc(b, (char)tolower((unsigned char)url[i]));
	st_buf_adds(b, "://");
	for (size_t i = 0; i < hl; i++)
		st_buf_addc(b, (char)tolower((unsigned char)h[i]));
	st__identity_add(b, path, pl);
}

char *st__identity_bucket(const char *scheme, const char *bucket, const char *prefix,
			  const char *param, const char *endpoint)
{
	st_buf b;

	st_buf_init(&b);
	st_buf_printf(&b, "%s://", scheme);
	st__identity_add(&b, bucket, strlen(bucket));
	st_buf_addc(&b, '/');
	st__identity_add(&b, prefix, strlen(prefix));
	if (endpoint) {
		st_buf_printf(&b, "?%s=", param);
		st__identity_endpoint(&b, endpoint);
	}
	return st_buf_take(&b, NULL);
}

/* A file store's: the real path of its directory (its locator's path, resolved again: it is
 * as named when the directory is gone). */
static int file_identity(const st_store *s, char **out, st_error *err)
{
	char *loc = st__store_locator(s), real[PATH_MAX];
	st_buf b;
	int rc = ST_OK;

	if (!loc)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (!realpath(loc + 7, real)) {
		int e = errno;
		rc = st__err(err,
			     e == ENOMEM			? ST_ENOMEM
			     : e == ENOENT || e == ENOTDIR ? ST_ENOTFOUND
							    : ST_EIO,
			     "file: the store's directory '%s' has no real path: %s", loc + 7,
			     strerror(e));
		free(loc);
		return rc;
	}
	free(loc);
	st_buf_init(&b);
	st_buf_adds(&b, "file://");
	st__identity_add(&b, real, strlen(real));
	if (!(*out = st_buf_take(&b, NULL)))
		return st__err(err, ST_ENOMEM, "out of memory");
	return ST_OK;
}

int st_store_identity(const st_store *s, char **out, st_error *err)
{
	const char *sc;
	char *id = NULL;

	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG(out);
	*out = NULL;
	sc = s->ops->scheme;
	if (!strcmp(sc, "file"))
		return file_identity(s, out, err);
	if (!strcmp(sc, "s3"))
		id = st__s3_identity(s);
	else if (!strcmp(sc, "azblob"))
		id = st__azblob_identity(s);
	else if (!strcmp(sc, "gs"))
		id = st__gcs_identity(s);
	else if (!strcmp(sc, "postgres"))
		id = st__pg_identity(s);
	else /* a store of the tests: its URL */
		id = st_strdup(s->url);
	if (!id)
		return st__err(err, ST_ENOMEM, "out of memory");
	*out = id;
	return ST_OK;
}

int st__store_identity(const st_store *s, char **out, st_error *err)
{
	st_error ierr;
	int rc;

	st_error_clear(&ierr);
	rc = st_store_identity(s, out, &ierr);
	if (rc == ST_ENOTFOUND) { /* a directory gone: as it was named */
		if (!(*out = st__store_locator(s)))
			return st__err(err, ST_ENOMEM, "out of memory");
		return ST_OK;
	}
	return rc == ST_OK ? ST_OK : st__err_copy(err, &ierr);
}

static void info_clear(st_store_info *info)
{
	if (info) {
		memset(info, 0, sizeof(*info));
		info->size = -1;
	}
}

int st_store_read(st_store *s, const char *key, size_t max_size, char **data, size_t *len,
		  st_store_info *info, st_error *err)
{
	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG(key);
	ST_ASSERT_ARG(data);
	ST_ASSERT_ARG(len);
	int rc;

	*data = NULL;
	*len = 0;
	info_clear(info);
	if ((rc = check_key(key, "key", err)) != ST_OK)
		return rc;
	return s->ops->read(s, key, max_size ? max_size : ST_DEFAULT_MAX_FILE, data, len, info,
			    err);
}

int st_store_stat(st_store *s, const char *key, st_store_info *info, st_error *err)
{
	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG(key);
	st_store_info tmp;
	int rc;

	if (!info)
		info = &tmp;
	info_clear(info);
	if ((rc = check_key(key, "key", err)) != ST_OK)
		return rc;
	return s->ops->stat(s, key, info, err);
}

int st_store_writer_write(st_store_writer *w, const void *data, size_t len, st_error *err)
{
	ST_ASSERT_ARG(w);
	ST_ASSERT_ARG(data || !len);
	int rc;

	if (!len)
		return ST_OK;
	rc = w->store->ops->write_chunk(w, data, len, err);
	if (rc == ST_OK && w->tap)
		w->tap(w->tap_ctx, data, len);
	return rc;
}

static unsigned long copied;
static int copy_off;

unsigned long st__store_copied(void)
{
	return __atomic_load_n(&copied, __ATOMIC_RELAXED);
}

void st__store_copy_enable(int on)
{
	__atomic_store_n(&copy_off, !on, __ATOMIC_RELAXED);
}

int st__store_copy_enabled(void)
{
	return !__atomic_load_n(&copy_off, __ATOMIC_RELAXED);
}

int st__store_writer_copy(st_store_writer *w, int fd, off_t off, const char *p, size_t n,
			  st_error *err)
{
	size_t done = 0;
	int rc = 1;

	if (!n)
		return ST_OK;
	if (w->store->ops->write_copy && fd >= 0 && !__atomic_load_n(&copy_off, __ATOMIC_RELAXED))
		rc = w->store->ops->write_copy(w, fd, off, n, &done, err);
	if (rc != ST_OK && rc != 1)
		return rc;
	__atomic_add_fetch(&copied, done, __ATOMIC_RELAXED);
	if (done && w->tap)
		w->tap(w->tap_ctx, p, done);
	return rc == ST_OK ? ST_OK : st_store_writer_write(w, p + done, n - done, err);
}

typedef struct bytes_ctx {
	const void *data;
	size_t len;
} bytes_ctx;

static int fill_bytes(void *ctx, st_store_writer *w, st_error *err)
{
	bytes_ctx *b = ctx;
	return st_store_writer_write(w, b->data, b->len, err);
}

int st_store_write(st_store *s, const char *key, const void *data, size_t len,
		   const st_store_write_opts *opts, st_error *err)
{
	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG(key);
	ST_ASSERT_ARG(data || !len);
	bytes_ctx b = {data, len};
	return st_store_write_fill(s, key, fill_bytes, &b, opts, err);
}

int st_store_write_fill(st_store *s, const char *key, st_store_fill_fn fill, void *ctx,
			const st_store_write_opts *opts, st_error *err)
{
	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG(key);
	ST_ASSERT_ARG(fill);
	return st__store_write_fill(s, key, fill, ctx, opts, NULL, err);
}

/* A crash point (step 0: none) and a timing mark of a state's write (`op` NULL: an ordinary
 * object). */
static void mark(const char *op, int step, const char *phase)
{
	if (!op)
		return;
	if (step)
		st__crash_point(op, step);
	if (phase)
		st__phase(phase);
}

int st__store_write_fill(st_store *s, const char *key, st_store_fill_fn fill, void *ctx,
			 const st_store_write_opts *opts, const char *op, st_error *err)
{
	return st__store_write_tap(s, key, fill, ctx, opts, op, NULL, NULL, err);
}

int st__store_write_tap(st_store *s, const char *key, st_store_fill_fn fill, void *ctx,
			const st_store_write_opts *opts, const char *op,
			void (*tap)(void *ctx, const void *p, size_t n), void *tap_ctx,
			st_error *err)
{
	static const st_store_write_opts def = ST_STORE_WRITE_OPTS_INIT;
	st_store_writer *w = NULL;
	int rc;

	if (!opts)
		opts = &def;
	else if ((rc = st__opts_version(opts->version, ST_STORE_WRITE_OPTS_VERSION,
					"st_store_write_opts", err)) != ST_OK)
		return rc;
	if ((rc = check_key(key, "key", err)) != ST_OK)
		return rc;
	if (opts->backup_key && (rc = check_key(opts->backup_key, "backup key", err)) != ST_OK)
		return rc;
	if ((rc = s->ops->write_begin(s, key, opts, &w, err)) != ST_OK)
		return rc;
	w->tap = tap;
	w->tap_ctx = tap_ctx;
	if ((rc = fill(ctx, w, err)) != ST_OK)
		goto abort;
	mark(op, 1, "write: file written");
	if ((rc = s->ops->write_finish(w, err)) != ST_OK)
		goto abort;
	mark(op, 0, "write: fsync");
	if (opts->proceed && (rc = opts->proceed(opts->proceed_ctx)) != ST_OK)
		goto abort; /* the caller decided against it: the old object stays */
	mark(op, 2, NULL);
	if (opts->backup_key && (rc = st__store_backup(s, key, opts->backup_key, err)) != ST_OK)
		goto abort;
	mark(op, 3, NULL);
	rc = s->ops->write_commit(w, err);
	if (rc != ST_OK)
		return rc; /* commit frees the writer, whatever happened */
	mark(op, 4, "write: checked, backed up, renamed");
	/* a stack's checkpoint: what Pulumi's save does after writing one */
	return opts->flags & ST_STORE_CHECKPOINT ? st__store_checkpoint_saved(s, key, err) : ST_OK;
abort:
	s->ops->write_abort(w);
	return rc;
}

int st_store_list(st_store *s, const char *prefix, unsigned flags, st_store_entry **out,
		  size_t *count, st_error *err)
{
	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(count);
	if (flags & ~(unsigned)(ST_STORE_LIST_DIRS | ST__STORE_LIST_TEMPORARY))
		return st__bad_flags(err, flags, ST_STORE_LIST_DIRS | ST__STORE_LIST_TEMPORARY,
				     "0 or ST_STORE_LIST_DIRS");
	*out = NULL;
	*count = 0;
	if (!prefix)
		prefix = "";
	/* the prefix need not be a whole key, but it must not lead outside either */
	if (*prefix) {
		size_t n = strlen(prefix);
		char *probe = st_asprintf("%s%s", prefix, prefix[n - 1] == '/' ? "x" : "");
		int ok = probe && st_store_key_valid(probe);
		free(probe);
		if (!ok)
			return check_key(prefix, "prefix", err);
	}
	if ((flags & ST_STORE_LIST_DIRS) && *prefix && prefix[strlen(prefix) - 1] != '/')
		return st__err(err, ST_EINVAL, "a listing by levels needs a prefix ending in '/'");
	return s->ops->list(s, prefix, flags, out, count, err);
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const st_store_entry *)a)->key, ((const st_store_entry *)b)->key);
}

int st__listing_add(st__listing *l, char *key, const st_store_info *info)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		st_store_entry *v = realloc(l->v, cap * sizeof(*v));
		if (!v) {
			free(key);
			return ST_ENOMEM;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n].key = key;
	l->v[l->n++].info = *info;
	return ST_OK;
}

int st__listing_add_name(st__listing *l, const char *prefix, char *name, int dir,
			 const st_store_info *info)
{
	size_t pl = strlen(prefix), n = strlen(name);
	int usable = n > pl && !strncmp(name, prefix, pl);

	if (usable && dir) { /* "a/b/": a level whose name without its '/' is a valid key */
		usable = name[n - 1] == '/';
		if (usable) {
			name[n - 1] = '\0';
			usable = st_store_key_valid(name + pl);
			name[n - 1] = '/';
		}
	} else if (usable) {
		usable = st_store_key_valid(name + pl);
	}
	if (!usable) {
		free(name);
		return ST_OK;
	}
	memmove(name, name + pl, n - pl + 1);
	return st__listing_add(l, name, info);
}

size_t st__store_entries_settle(st_store_entry *v, size_t n)
{
	size_t j = 0;
	if (!st__sorted(v, n, sizeof(*v), cmp_entry))
		qsort(v, n, sizeof(*v), cmp_entry);
	for (size_t i = 0; i < n; i++) {
		if (j && !strcmp(v[j - 1].key, v[i].key))
			free(v[i].key);
		else
			v[j++] = v[i];
	}
	return j;
}

void st_store_entries_free(st_store_entry *entries, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(entries[i].key);
	free(entries);
}

int st_store_delete(st_store *s, const char *key, st_error *err)
{
	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG(key);
	int rc = check_key(key, "key", err);
	return rc ? rc : s->ops->remove(s, key, err);
}

int st_store_copy(st_store *s, const char *src, const char *dst, st_error *err)
{
	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG(src);
	ST_ASSERT_ARG(dst);
	char *data = NULL;
	size_t len = 0;
	int rc;

	if ((rc = check_key(src, "key", err)) != ST_OK ||
	    (rc = check_key(dst, "key", err)) != ST_OK)
		return rc;
	if (!strcmp(src, dst))
		return st__err(err, ST_EINVAL, "cannot copy '%s' onto itself", src);
	if (s->ops->copy)
		return s->ops->copy(s, src, dst, 0, err);
	rc = s->ops->read(s, src, ST_DEFAULT_MAX_FILE, &data, &len, NULL, err);
	if (rc == ST_OK)
		rc = st_store_write(s, dst, data, len, NULL, err);
	free(data);
	return rc;
}

int st__store_backup(st_store *s, const char *key, const char *bak, st_error *err)
{
	int rc = s->ops->copy ? s->ops->copy(s, key, bak, 1, err) : st_store_copy(s, key, bak, err);
	if (rc == ST_ENOTFOUND) {
		rc = ST_OK; /* nothing to keep: a new object */
		if (err)
			st_error_clear(err);
	}
	return rc;
}

int st__store_rename(st_store *s, const char *src, const char *dst, st_error *err)
{
	int rc;

	if ((rc = check_key(src, "key", err)) != ST_OK ||
	    (rc = check_key(dst, "key", err)) != ST_OK)
		return rc;
	if (s->ops->rename)
		return s->ops->rename(s, src, dst, err);
	if ((rc = st_store_copy(s, src, dst, err)) != ST_OK)
		return rc;
	rc = st_store_delete(s, src, err);
	if (rc == ST_ENOTFOUND) {
		rc = ST_OK;
		if (err)
			st_error_clear(err);
	}
	return rc;
}

char *st__store_where(const st_store *s, const char *key)
{
	char *p = st__store_local_path(s, key);
	if (p)
		return p;
	/* URL/key, the key before the URL's query (azblob://c/KEY?domain=...) */
	const char *u = st_store_url(s);
	size_t n = strcspn(u, "?");
	return st_asprintf("%.*s%s%s%s", (int)n, u, n && u[n - 1] == '/' ? "" : "/", key, u + n);
}

char *st_store_where(const st_store *s, const char *key)
{
	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG(key);
	return st__store_where(s, key);
}

int st__store_load_json(st_store *s, const char *key, size_t max, const char *where,
			json_t **out, st_style *style, st_problems *problems, st_error *err)
{
	char *data = NULL, *plain = NULL;
	size_t len = 0, plen = 0;
	int rc;

	*out = NULL;
	if (!max)
		max = ST_DEFAULT_MAX_FILE;
	rc = st_store_read(s, key, max, &data, &len, NULL, err);
	if (rc == ST_OK)
		rc = st__decompress(data, len, max, where, &plain, &plen, NULL, err); /* data stolen */
	if (rc == ST_OK)
		rc = st_json_parse(out, plain, plen, where, NULL, style, problems, err);
	free(plain);
	return rc;
}

/* ---- a stack's checkpoint ---- */

int st__store_stack_object(const char *key, const char **rel, const char **slash,
			   const char **ext)
{
	static const char stacks[] = ".pulumi/stacks/";
	static const char *const exts[] = {".json", ".json.gz", ".json.zst"};
	size_t kl = strlen(key);

	*ext = NULL;
	for (size_t i = 0; !*ext && i < 3; i++)
		if (kl > strlen(exts[i]) && !strcmp(key + kl - strlen(exts[i]), exts[i]))
			*ext = key + kl - strlen(exts[i]);
	*rel = key + sizeof(stacks) - 1;
	*slash = NULL;
	if (!*ext || strncmp(key, stacks, sizeof(stacks) - 1) || *ext <= *rel)
		return 0;
	*slash = strchr(*rel, '/');
	return !(*slash && (strchr(*slash + 1, '/') || *slash + 1 >= *ext));
}

/* PULUMI_DIY_BACKEND_RETAIN_CHECKPOINTS (alias PULUMI_RETAIN_CHECKPOINTS): 1 or true. */
static int checkpoints_retained(void)
{
	const char *v = getenv("PULUMI_DIY_BACKEND_RETAIN_CHECKPOINTS");
	if (!v)
		v = getenv("PULUMI_RETAIN_CHECKPOINTS");
	return v && (!strcmp(v, "1") || !strcasecmp(v, "true"));
}

int st__store_checkpoint_saved(st_store *s, const char *key, st_error *err)
{
	const char *rel, *slash, *ext;
	struct timespec ts;
	char *dst;
	int rc;

	if (!checkpoints_retained() || !st__store_stack_object(key, &rel, &slash, &ext))
		return ST_OK;
	/* Pulumi's saveCheckpoint: the object just written, again as <object>.<UnixNano> beside
	 * it (which no listing takes for a stack) */
	clock_gettime(CLOCK_REALTIME, &ts);
	dst = st_asprintf("%s.%lld", key, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	rc = dst ? st_store_copy(s, key, dst, err) : st__err(err, ST_ENOMEM, "out of memory");
	free(dst);
	return rc;
}
