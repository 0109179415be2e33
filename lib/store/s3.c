/*
 * The S3 store: objects of one bucket under a key prefix, over the HTTP layer (http.h) with
 * requests signed by SigV4 (sigv4.h). The configuration (URL, environment, shared files) is
 * s3conf.c's. Every S3-compatible server that speaks SigV4 and ListObjectsV2 works; radosgw
 * (Ceph pacific) runs the tests.
 *
 * The store's operations, one S3 call each (or two):
 *   read    GetObject                       (404 NoSuchKey: ST_ENOTFOUND)
 *   stat    HeadObject                      (a 404 checks the bucket once: NoSuchBucket)
 *   write   the bytes go to a spool (a temporary file, SHA-256 as they come); commit is one
 *           PutObject of the whole object with its x-amz-content-sha256, so nothing is visible
 *           before `proceed` and a retry sends the same bytes; create-only: If-None-Match: *
 *           (412: ST_EEXIST, unless an earlier attempt whose answer was lost made it: then the
 *           object holds our bytes, which is checked)
 *   list    ListObjectsV2 (encoding-type=url, continuation tokens; delimiter "/" by levels)
 *   remove  HeadObject (for ST_ENOTFOUND: S3 deletes nothing silently), DeleteObject
 *   copy    CopyObject (the server copies; a 200 with an <Error> body is an error)
 * Times: S3 gives Last-Modified to the second in headers and to the millisecond (often .000) in
 * listings; the DIY layer picks a stack's newest object from a listing, as Pulumi does.
 */
#include "s3.h"

#include "http.h"
#include "sigv4.h"
#include "xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Keys per ListObjectsV2 page (a test sets it low to exercise the continuation). */
int st__s3_max_keys = 1000;

static const char EMPTY_SHA256[] =
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

typedef struct s3_store {
	st_store base;
	st_s3_config cfg;
	st_http *http;
	char *origin;    /* scheme://host[:port] */
	char *host;      /* the Host header */
	char *base_path; /* decoded path before the keys: the endpoint's path, then /bucket when
			  * path-style */
	int bucket_ok;   /* 1 once a request on the bucket succeeded */
} s3_store;

/* One S3 call. */
typedef struct s3_call {
	const char *method;
	const char *op;
	const char *key;          /* a store key, or NULL for the bucket */
	const st_http_hdr *query; /* decoded */
	size_t nquery;
	st_http_hdrs headers;     /* more headers to send and sign */
	const char *payload_sha;  /* NULL: no body */
	int body_fd;
	size_t body_len;
	int retry;
	size_t max_body;
	char *target;             /* for messages: bucket/prefix+key (new, filled by s3_do) */
} s3_call;

#define S3_CALL_INIT {NULL, NULL, NULL, NULL, 0, {NULL, 0, 0}, NULL, -1, 0, 1, 0, NULL}

/* ---- requests ---- */

typedef struct sign_ctx {
	s3_store *s;
	const char *path;
	const s3_call *call;
} sign_ctx;

/* Before each attempt: the date, the token, the signature. */
static int sign(void *ctx, const st_http_req *req, st_http_hdrs *extra, st_error *err)
{
	sign_ctx *sc = ctx;
	const st_s3_config *c = &sc->s->cfg;
	char date[17], *authz = NULL;
	st_http_hdr *all;
	size_t n = req->headers.n;
	int rc;

	if (c->anonymous)
		return ST_OK;
	st__sigv4_date(date, (long long)time(NULL));
	if (!(all = calloc(n + 2, sizeof(*all))))
		return st__err(err, ST_ENOMEM, "out of memory");
	memcpy(all, req->headers.v, n * sizeof(*all));
	all[n].name = (char *)"x-amz-date";
	all[n++].value = date;
	if (c->session_token) {
		all[n].name = (char *)"x-amz-security-token";
		all[n++].value = c->session_token;
	}
	st_sigv4 in = {req->method, sc->path, 1, sc->call->query, sc->call->nquery, all, n,
		       st__http_hdrs_get(&req->headers, "x-amz-content-sha256"), date, c->region,
		       "s3", c->access_key, c->secret_key};
	rc = st__sigv4_sign(&in, &authz, NULL, NULL, err);
	if (rc == ST_OK && (rc = st__http_hdrs_add(extra, "x-amz-date", date, err)) == ST_OK &&
	    (!c->session_token ||
	     (rc = st__http_hdrs_add(extra, "x-amz-security-token", c->session_token, err)) == ST_OK))
		rc = st__http_hdrs_add(extra, "Authorization", authz, err);
	free(authz);
	free(all);
	return rc;
}

/* The decoded path of a call: base path, then /prefix+key (a bucket call: "/" when the path
 * would be empty). New. */
static char *call_path(const s3_store *s, const char *key)
{
	if (!key)
		return st_asprintf("%s", *s->base_path ? s->base_path : "/");
	return st_asprintf("%s/%s%s", s->base_path, s->cfg.prefix, key);
}

/* Runs a call: resp holds the answer (any status) on ST_OK. */
static int s3_do(s3_store *s, s3_call *call, st_http_resp *resp, st_error *err)
{
	st_http_req r = ST_HTTP_REQ_INIT;
	char *path = call_path(s, call->key), *url = NULL;
	st_buf u;
	int rc;

	memset(resp, 0, sizeof(*resp));
	st_buf_init(&u);
	free(call->target);
	call->target = call->key ? st_asprintf("%s/%s%s", s->cfg.bucket, s->cfg.prefix, call->key)
				 : st_strdup(s->cfg.bucket);
	if (!path || !call->target) {
		free(path);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	st_buf_adds(&u, s->origin);
	st__sigv4_encode(&u, path, strlen(path), 1);
	for (size_t i = 0; i < call->nquery; i++) {
		st_buf_addc(&u, i ? '&' : '?');
		st__sigv4_encode(&u, call->query[i].name, strlen(call->query[i].name), 0);
		st_buf_addc(&u, '=');
		st__sigv4_encode(&u, call->query[i].value, strlen(call->query[i].value), 0);
	}
	if (!(url = st_buf_take(&u, NULL))) {
		free(path);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	r.method = call->method;
	r.url = url;
	r.op = call->op;
	r.target = call->target;
	r.flags = call->retry ? ST_HTTP_RETRY : 0;
	r.max_body = call->max_body;
	r.body_fd = call->body_fd;
	r.body_len = call->body_len;
	sign_ctx sc = {s, path, call};
	r.sign = sign;
	r.sign_ctx = &sc;
	if ((rc = st__http_hdrs_add(&r.headers, "Host", s->host, err)) == ST_OK)
		rc = st__http_hdrs_add(&r.headers, "x-amz-content-sha256",
				       call->payload_sha ? call->payload_sha : EMPTY_SHA256, err);
	for (size_t i = 0; rc == ST_OK && i < call->headers.n; i++)
		rc = st__http_hdrs_add(&r.headers, call->headers.v[i].name, call->headers.v[i].value,
				       err);
	if (rc == ST_OK)
		rc = st__http_do(s->http, &r, resp, err);
	st__http_hdrs_free(&r.headers);
	free(url);
	free(path);
	return rc;
}

static void call_free(s3_call *c)
{
	st__http_hdrs_free(&c->headers);
	free(c->target);
	c->target = NULL;
}

/* ---- answers ---- */

/* Where a key is, for messages: s3://bucket/prefix+key. New. */
static char *where(const s3_store *s, const char *key)
{
	return st_asprintf("s3://%s/%s%s", s->cfg.bucket, s->cfg.prefix, key ? key : "");
}

static int is_auth_code(const char *code)
{
	static const char *const codes[] = {"InvalidAccessKeyId", "SignatureDoesNotMatch",
					    "AccessDenied", "InvalidToken", "ExpiredToken",
					    "TokenRefreshRequired", "InvalidSecurity",
					    "AllAccessDisabled", "AuthorizationQueryParametersError"};
	for (size_t i = 0; code && i < sizeof(codes) / sizeof(codes[0]); i++)
		if (!strcmp(code, codes[i]))
			return 1;
	return 0;
}

/* The error of an answer S3 refused, from its status and its <Error> body: the code chosen,
 * the message naming the scheme, the endpoint, the operation and, for credentials, where they
 * came from (never them). */
static int s3_fail(s3_store *s, const s3_call *call, const st_http_resp *resp, st_error *err)
{
	const char *b = resp->body ? resp->body : "", *e = b + resp->len;
	int oom = 0, rc;
	char *code = st__xml_text(b, e, "Code", &oom), *msg = st__xml_text(b, e, "Message", &oom);
	char *region = st__xml_text(b, e, "Region", &oom), *w = where(s, call->key);
	const char *hregion = st__http_hdrs_get(&resp->headers, "x-amz-bucket-region");
	char tries[32] = "";

	if (resp->attempts > 1)
		snprintf(tries, sizeof(tries), " (%d attempts)", resp->attempts);
	if (!region && hregion && *hregion)
		region = st_strdup(hregion);
	if (oom || !w) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
	} else if ((code && !strcmp(code, "NoSuchKey")) ||
		   (!code && resp->status == 404 && call->key && s->bucket_ok)) {
		rc = st__err(err, ST_ENOTFOUND, "s3: no object '%s'", w);
	} else if (code && !strcmp(code, "NoSuchBucket")) {
		rc = st__err(err, ST_EIO, "s3: bucket '%s' does not exist at %s (NoSuchBucket)",
			     s->cfg.bucket, s->cfg.endpoint);
	} else if (region && strcmp(region, s->cfg.region) &&
		   (resp->status == 301 || resp->status == 400 || resp->status == 403)) {
		rc = st__err(err, ST_EIO,
			     "s3: bucket '%s' is in region '%s', not '%s' (from %s): add "
			     "region=%s to the URL or set AWS_REGION",
			     s->cfg.bucket, region, s->cfg.region, s->cfg.region_from, region);
	} else if (resp->status == 403 || resp->status == 401 || is_auth_code(code)) {
		rc = st__err(err, ST_EAUTH,
			     "s3: %s refused the credentials for %s '%s': %s%s%s%s; they came from "
			     "%s, region '%s' from %s%s",
			     s->cfg.endpoint, call->op, call->target ? call->target : "",
			     code ? code : "HTTP ", code ? "" : (resp->status == 401 ? "401" : "403"),
			     msg && *msg ? ": " : "", msg && *msg ? msg : "", s->cfg.cred_from,
			     s->cfg.region, s->cfg.region_from, tries);
	} else {
		char *detail = code ? st_asprintf("%s%s%s", code, msg && *msg ? ": " : "",
						  msg && *msg ? msg : "")
				    : NULL;
		st_http_req r = ST_HTTP_REQ_INIT;
		char *url = st_asprintf("%s/", s->origin);
		r.url = url ? url : "";
		r.op = call->op;
		r.target = call->target;
		rc = st__http_fail(s->http, &r, resp, resp->status == 404 ? ST_EIO : 0, detail, err);
		free(url);
		free(detail);
	}
	free(code);
	free(msg);
	free(region);
	free(w);
	return rc;
}

/* After a 404 without a body (HEAD): is it the object or the bucket? Asks the bucket once. */
static int check_bucket(s3_store *s, st_error *err)
{
	s3_call c = S3_CALL_INIT;
	st_http_resp resp;
	int rc;

	if (s->bucket_ok)
		return ST_OK;
	c.method = "HEAD";
	c.op = "HeadBucket";
	rc = s3_do(s, &c, &resp, err);
	if (rc == ST_OK && resp.status == 404) {
		rc = st__err(err, ST_EIO, "s3: bucket '%s' does not exist at %s (NoSuchBucket)",
			     s->cfg.bucket, s->cfg.endpoint);
	} else if (rc == ST_OK && resp.status >= 300) {
		rc = s3_fail(s, &c, &resp, err);
	} else if (rc == ST_OK) {
		s->bucket_ok = 1;
	}
	st__http_resp_free(&resp);
	call_free(&c);
	return rc;
}

/* "2009-10-12T17:50:30.123Z" (a listing's LastModified) in ns, 0 when unreadable. */
static long long iso_time(const char *v)
{
	struct tm tm;
	int n = 0;
	long long frac = 0, scale = 1000000000LL;
	memset(&tm, 0, sizeof(tm));
	if (!v || sscanf(v, "%d-%d-%dT%d:%d:%d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			 &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
		return 0;
	if (v[n] == '.')
		for (const char *p = v + n + 1; *p >= '0' && *p <= '9'; p++)
			if (scale > 1) {
				scale /= 10;
				frac += (*p - '0') * scale;
			}
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (long long)timegm(&tm) * 1000000000LL + frac;
}

/* An ETag without its quotes. */
static void set_etag(st_store_info *info, const char *v)
{
	size_t n;
	if (!v)
		return;
	if (*v == '"')
		v++;
	n = strlen(v);
	if (n && v[n - 1] == '"')
		n--;
	if (n >= sizeof(info->etag))
		n = sizeof(info->etag) - 1;
	memcpy(info->etag, v, n);
	info->etag[n] = '\0';
}

static void info_from_headers(st_store_info *info, const st_http_resp *resp)
{
	const char *cl = st__http_hdrs_get(&resp->headers, "content-length");
	if (!info)
		return;
	info->size = cl ? strtoll(cl, NULL, 10) : (long long)resp->len;
	info->mtime_ns = st__http_date_ns(st__http_hdrs_get(&resp->headers, "last-modified"));
	set_etag(info, st__http_hdrs_get(&resp->headers, "etag"));
}

/* ---- the operations ---- */

static int s3_read(st_store *st, const char *key, size_t max, char **data, size_t *len,
		   st_store_info *info, st_error *err)
{
	s3_store *s = (s3_store *)st;
	s3_call c = S3_CALL_INIT;
	st_http_resp resp;
	int rc;

	c.method = "GET";
	c.op = "GetObject";
	c.key = key;
	/* room for an error document even when the limit is small */
	c.max_body = max < 65536 ? 65536 : max;
	rc = s3_do(s, &c, &resp, err);
	if (rc == ST_OK && resp.status != 200) {
		rc = s3_fail(s, &c, &resp, err);
	} else if (rc == ST_OK && resp.len > max) {
		char *w = where(s, key);
		rc = st__err(err, ST_ELIMIT, "s3: '%s' is larger than %zu bytes", w ? w : key, max);
		free(w);
	} else if (rc == ST_OK) {
		s->bucket_ok = 1;
		info_from_headers(info, &resp);
		*data = resp.body;
		*len = resp.len;
		resp.body = NULL;
	}
	st__http_resp_free(&resp);
	call_free(&c);
	return rc;
}

/* HeadObject: ST_OK (info filled), ST_ENOTFOUND, or an error. */
static int head(s3_store *s, const char *key, st_store_info *info, st_error *err)
{
	s3_call c = S3_CALL_INIT;
	st_http_resp resp;
	int rc;

	c.method = "HEAD";
	c.op = "HeadObject";
	c.key = key;
	rc = s3_do(s, &c, &resp, err);
	if (rc == ST_OK && resp.status == 404 && !s->bucket_ok)
		rc = check_bucket(s, err);
	if (rc == ST_OK && resp.status != 200)
		rc = s3_fail(s, &c, &resp, err);
	else if (rc == ST_OK)
		info_from_headers(info, &resp);
	st__http_resp_free(&resp);
	call_free(&c);
	return rc;
}

static int s3_stat(st_store *st, const char *key, st_store_info *info, st_error *err)
{
	return head((s3_store *)st, key, info, err);
}

static int s3_write_begin(st_store *st, const char *key, const st_store_write_opts *opts,
			  st_store_writer **out, st_error *err)
{
	return st__spooled_begin(st, key, opts, sizeof(st__spooled_writer), out, err);
}

static int s3_write_commit(st_store_writer *sw, st_error *err)
{
	st__spooled_writer *w = (st__spooled_writer *)sw;
	s3_store *s = (s3_store *)w->base.store;
	s3_call c = S3_CALL_INIT;
	st_http_resp resp;
	char len[32];
	int rc = ST_OK;

	c.method = "PUT";
	c.op = "PutObject";
	c.key = w->key;
	c.payload_sha = w->sha;
	c.body_fd = st__spool_fd(w->spool);
	c.body_len = (size_t)w->size;
	snprintf(len, sizeof(len), "%lld", w->size);
	if (w->flags & ST_STORE_CREATE_ONLY)
		rc = st__http_hdrs_add(&c.headers, "If-None-Match", "*", err);
	if (rc == ST_OK && s->cfg.sse)
		rc = st__http_hdrs_add(&c.headers, "x-amz-server-side-encryption", s->cfg.sse, err);
	if (rc == ST_OK && s->cfg.kms_key_id)
		rc = st__http_hdrs_add(&c.headers, "x-amz-server-side-encryption-aws-kms-key-id",
				       s->cfg.kms_key_id, err);
	if (rc == ST_OK && (rc = s3_do(s, &c, &resp, err)) == ST_OK) {
		int exists = resp.status == 412 ||
			     (resp.status == 409 && (w->flags & ST_STORE_CREATE_ONLY));
		/* refused although an earlier attempt may have gone through: ours when the object
		 * holds exactly our bytes (checked up to 16 MiB) */
		if (exists && resp.maybe_done && w->size <= (16 << 20) &&
		    st__store_is_ours(&s->base, w->key, w->size, w->sha)) {
			s->bucket_ok = 1;
		} else if (exists && (w->flags & ST_STORE_CREATE_ONLY)) {
			char *wh = where(s, w->key);
			rc = st__err(err, ST_EEXIST, "'%s' exists already", wh ? wh : w->key);
			free(wh);
		} else if (resp.status != 200) {
			rc = s3_fail(s, &c, &resp, err);
		} else {
			s->bucket_ok = 1;
		}
	}
	st__http_resp_free(&resp);
	call_free(&c);
	st__spooled_free(&w->base);
	return rc;
}

/* ---- listings ---- */

/* One page's <Contents> and <CommonPrefixes> into l (keys made relative to the store). */
static int parse_page(const s3_store *s, const char *b, const char *e, st__listing *l)
{
	const char *in, *in_end, *p;
	static const char *const kinds[] = {"Contents", "CommonPrefixes"};

	for (int k = 0; k < 2; k++) {
		for (p = b; (p = st__xml_next(p, e, kinds[k], &in, &in_end));) {
			int oom = 0;
			char *raw = st__xml_text(in, in_end, k ? "Prefix" : "Key", &oom), *key;
			st_store_info info;
			if (oom)
				return -1;
			if (!raw)
				continue;
			key = st__url_decode(raw, strlen(raw), 1);
			free(raw);
			if (!key)
				return -1;
			memset(&info, 0, sizeof(info));
			info.size = -1;
			if (!k) {
				char *sz = st__xml_text(in, in_end, "Size", &oom);
				char *lm = st__xml_text(in, in_end, "LastModified", &oom);
				char *et = st__xml_text(in, in_end, "ETag", &oom);
				info.size = sz ? strtoll(sz, NULL, 10) : -1;
				info.mtime_ns = iso_time(lm);
				set_etag(&info, et);
				free(sz);
				free(lm);
				free(et);
				if (oom) {
					free(key);
					return -1;
				}
			}
			if (st__listing_add_name(l, s->cfg.prefix, key, k, &info) != ST_OK)
				return -1;
		}
	}
	return 0;
}

static int s3_list(st_store *st, const char *prefix, unsigned flags, st_store_entry **out,
		   size_t *count, st_error *err)
{
	s3_store *s = (s3_store *)st;
	st__listing l = {NULL, 0, 0};
	char *full = st_asprintf("%s%s", s->cfg.prefix, prefix), *token = NULL, maxk[16];
	int rc = full ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");

	snprintf(maxk, sizeof(maxk), "%d", st__s3_max_keys);
	for (int page = 0; rc == ST_OK; page++) {
		st_http_hdr q[6];
		size_t nq = 0;
		s3_call c = S3_CALL_INIT;
		st_http_resp resp;
		/* sorted as they are signed (the signer sorts anyway) */
		if (token)
			q[nq++] = (st_http_hdr){(char *)"continuation-token", token};
		if (flags & ST_STORE_LIST_DIRS)
			q[nq++] = (st_http_hdr){(char *)"delimiter", (char *)"/"};
		q[nq++] = (st_http_hdr){(char *)"encoding-type", (char *)"url"};
		q[nq++] = (st_http_hdr){(char *)"list-type", (char *)"2"};
		q[nq++] = (st_http_hdr){(char *)"max-keys", maxk};
		q[nq++] = (st_http_hdr){(char *)"prefix", full};
		c.method = "GET";
		c.op = "ListObjectsV2";
		c.query = q;
		c.nquery = nq;
		c.max_body = 64u << 20;
		rc = s3_do(s, &c, &resp, err);
		if (rc == ST_OK && resp.status != 200) {
			rc = s3_fail(s, &c, &resp, err);
		} else if (rc == ST_OK) {
			const char *b = resp.body, *e = b + resp.len;
			int oom = 0;
			char *trunc = st__xml_text(b, e, "IsTruncated", &oom);
			s->bucket_ok = 1;
			free(token);
			token = st__xml_text(b, e, "NextContinuationToken", &oom);
			if (oom || parse_page(s, b, e, &l) < 0)
				rc = st__err(err, ST_ENOMEM, "out of memory");
			else if (!trunc || strcmp(trunc, "true")) {
				free(trunc);
				st__http_resp_free(&resp);
				call_free(&c);
				break;
			} else if (!token || !*token || page > 1000000)
				rc = st__err(err, ST_EIO,
					     "s3: ListObjectsV2 of '%s' on %s: a truncated page "
					     "without a continuation token",
					     full, s->cfg.endpoint);
			free(trunc);
		}
		st__http_resp_free(&resp);
		call_free(&c);
	}
	free(token);
	free(full);
	if (rc != ST_OK) {
		st_store_entries_free(l.v, l.n);
		return rc;
	}
	*out = l.v;
	*count = st__store_entries_settle(l.v, l.n);
	return ST_OK;
}

static int s3_remove(st_store *st, const char *key, st_error *err)
{
	s3_store *s = (s3_store *)st;
	s3_call c = S3_CALL_INIT;
	st_http_resp resp;
	int rc = head(s, key, NULL, err); /* S3 deletes a missing key without a word */

	if (rc != ST_OK)
		return rc;
	c.method = "DELETE";
	c.op = "DeleteObject";
	c.key = key;
	rc = s3_do(s, &c, &resp, err);
	if (rc == ST_OK && resp.status != 204 && resp.status != 200)
		rc = s3_fail(s, &c, &resp, err);
	st__http_resp_free(&resp);
	call_free(&c);
	return rc;
}

static int s3_copy(st_store *st, const char *src, const char *dst, int for_backup,
		   st_error *err)
{
	s3_store *s = (s3_store *)st;
	s3_call c = S3_CALL_INIT;
	st_http_resp resp;
	st_buf source;
	char *sv;
	int rc;

	(void)for_backup;
	st_buf_init(&source);
	st_buf_printf(&source, "/%s/", s->cfg.bucket);
	st__sigv4_encode(&source, s->cfg.prefix, strlen(s->cfg.prefix), 1);
	st__sigv4_encode(&source, src, strlen(src), 1);
	if (!(sv = st_buf_take(&source, NULL)))
		return st__err(err, ST_ENOMEM, "out of memory");
	c.method = "PUT";
	c.op = "CopyObject";
	c.key = dst;
	rc = st__http_hdrs_add(&c.headers, "x-amz-copy-source", sv, err);
	if (rc == ST_OK && s->cfg.sse)
		rc = st__http_hdrs_add(&c.headers, "x-amz-server-side-encryption", s->cfg.sse, err);
	if (rc == ST_OK && s->cfg.kms_key_id)
		rc = st__http_hdrs_add(&c.headers, "x-amz-server-side-encryption-aws-kms-key-id",
				       s->cfg.kms_key_id, err);
	free(sv);
	if (rc == ST_OK)
		rc = s3_do(s, &c, &resp, err);
	if (rc == ST_OK) {
		/* a copy can fail after its 200 has started: the body then holds an <Error> */
		int failed = resp.status != 200 || strstr(resp.body, "<Error>");
		if (failed && resp.status == 404) {
			/* the source is missing (or the bucket: said so by s3_fail) */
			char *code = st__xml_text(resp.body, resp.body + resp.len, "Code", NULL);
			if (code && !strcmp(code, "NoSuchKey")) {
				char *w = where(s, src);
				rc = st__err(err, ST_ENOTFOUND, "s3: no object '%s'", w ? w : src);
				free(w);
			} else {
				rc = s3_fail(s, &c, &resp, err);
			}
			free(code);
		} else if (failed) {
			rc = s3_fail(s, &c, &resp, err);
		} else {
			s->bucket_ok = 1;
		}
	}
	st__http_resp_free(&resp);
	call_free(&c);
	return rc;
}

int st__s3_create_bucket(st_store *st, st_error *err)
{
	s3_store *s = (s3_store *)st;
	s3_call c = S3_CALL_INIT;
	st_http_resp resp;
	int rc;

	c.method = "PUT";
	c.op = "CreateBucket";
	rc = s3_do(s, &c, &resp, err);
	if (rc == ST_OK && resp.status != 200) {
		char *code = st__xml_text(resp.body, resp.body + resp.len, "Code", NULL);
		if (!code || strcmp(code, "BucketAlreadyOwnedByYou"))
			rc = s3_fail(s, &c, &resp, err);
		free(code);
	}
	st__http_resp_free(&resp);
	call_free(&c);
	return rc;
}

static void s3_free(st_store *st)
{
	s3_store *s = (s3_store *)st;
	st__http_free(s->http);
	st__s3_config_free(&s->cfg);
	free(s->origin);
	free(s->host);
	free(s->base_path);
	free(s->base.url);
	free(s);
}

static const st_store_ops s3_ops = {
	"s3",          s3_read,        s3_stat,   s3_write_begin, st__spooled_chunk,
	st__spooled_finish, s3_write_commit, st__spooled_free, s3_list, s3_remove,
	s3_copy,       s3_free,
	NULL, /* rename: the generic one, a server-side copy then a delete */
	NULL, /* write_copy: chunks only */
};

/* origin, Host and base path from the endpoint and the addressing style. */
static int addressing(s3_store *s, st_error *err)
{
	const char *ep = s->cfg.endpoint, *h = strstr(ep, "://") + 3;
	const char *path = h + strcspn(h, "/");
	size_t hl = (size_t)(path - h), sl = (size_t)(h - ep);
	char *epath = st__url_decode(path, strlen(path), 0);

	if (!epath)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (s->cfg.path_style) {
		s->host = st_strndup(h, hl);
		s->origin = st_strndup(ep, sl + hl);
		s->base_path = st_asprintf("%s/%s", epath, s->cfg.bucket);
	} else {
		s->host = st_asprintf("%s.%.*s", s->cfg.bucket, (int)hl, h);
		s->origin = st_asprintf("%.*s%s", (int)sl, ep, s->host ? s->host : "");
		s->base_path = st_strdup(epath);
	}
	free(epath);
	if (!s->host || !s->origin || !s->base_path)
		return st__err(err, ST_ENOMEM, "out of memory");
	/* the default port of the scheme is not part of Host (what libcurl sends) */
	size_t n = strlen(s->host);
	if (!strncmp(ep, "https://", 8) && n > 4 && !strcmp(s->host + n - 4, ":443"))
		s->host[n - 4] = '\0';
	else if (!strncmp(ep, "http://", 7) && n > 3 && !strcmp(s->host + n - 3, ":80"))
		s->host[n - 3] = '\0';
	return ST_OK;
}

int st__store_s3_open(st_store **out, const char *url, st_error *err)
{
	s3_store *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s)
		return st__err(err, ST_ENOMEM, "out of memory");
	s->base.ops = &s3_ops;
	if (!(s->base.url = st_strdup(url))) {
		free(s);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	if ((rc = st__s3_config_load(&s->cfg, url, NULL, err)) != ST_OK ||
	    (rc = addressing(s, err)) != ST_OK ||
	    (rc = st__http_new(&s->http, "s3", NULL, err)) != ST_OK) {
		s3_free(&s->base);
		return rc;
	}
	/* an endpoint that cannot be reached (or answers wrongly) says where it came from, as
	 * azblob's and gs's do (a stray AWS_ENDPOINT_URL_S3 of a local emulator is a classic) */
	if (s->cfg.endpoint_from) {
		char *note = st_asprintf("endpoint %s from %s", s->cfg.endpoint,
					 s->cfg.endpoint_from);
		rc = note ? st__http_set_note(s->http, note, err)
			  : st__err(err, ST_ENOMEM, "out of memory");
		free(note);
		if (rc != ST_OK) {
			s3_free(&s->base);
			return rc;
		}
	}
	*out = &s->base;
	return ST_OK;
}

/* The bucket and prefix, and the endpoint when one is given (AWS's buckets are one namespace
 * whatever the region); neither the region nor the addressing style nor the credentials. */
char *st__s3_identity(const st_store *st)
{
	const s3_store *s = (const s3_store *)st;
	return st__identity_bucket("s3", s->cfg.bucket, s->cfg.prefix, "endpoint",
				   s->cfg.custom_endpoint ? s->cfg.endpoint : NULL);
}
