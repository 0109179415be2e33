/*
 * The Google Cloud Storage store: gs://BUCKET[/PREFIX][?PARAMS] (see gcs.h for the URL and the
 * environment, doc/DESIGN.md "The Google Cloud Storage store" for the reasons).
 *
 * Keys are object names under PREFIX, escaped as Pulumi (gocloud.dev's gcsblob) escapes them.
 * The operations, on the JSON API (storage/v1), one call each:
 *   read   objects.get ?alt=media          stat   objects.get (the resource: size, updated,
 *                                                 generation)
 *   write  the bytes go to a spool; commit is one objects.insert ?uploadType=media of the whole
 *          object (nothing visible before `proceed`, a retry sends the same bytes); create-only:
 *          ifGenerationMatch=0 (412: ST_EEXIST, unless an earlier attempt whose answer was lost
 *          made it: then the object holds our bytes, which is checked)
 *   list   objects.list (prefix, pageToken; delimiter '/' for ST_STORE_LIST_DIRS)
 *   remove objects.delete                   copy   objects.rewrite (repeated with its
 *                                                  rewriteToken until done)
 * Every request goes through the HTTP layer (retries, time-outs, messages without secrets) with
 * "Authorization: Bearer TOKEN": the token of GOOGLE_OAUTH_ACCESS_TOKEN, or one fetched from the
 * key's token_uri (a signed JWT, or a refresh token) and kept until ten seconds before it
 * expires. A store's `etag` is the object's generation, which every write changes.
 */
#include "gcs.h"

#include "azblob.h"
#include "store_impl.h"

#include <jansson.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_REWRITES 100000 /* calls of one objects.rewrite (each moves at least 1 MiB) */

static int page_size = 1000;

void st__gcs_test_page(int page) { page_size = page > 0 ? page : 1000; }

typedef struct gcs_store {
	st_store base;
	st_gcs_cfg cfg;
	st_http *http;       /* the JSON API */
	st_http *token_http; /* the token endpoint (made when first needed) */
	pthread_mutex_t mu;  /* guards the token */
	char *token;         /* a fetched access token (wiped when replaced) */
	long long token_exp; /* when it expires (seconds since the epoch; 0: not said) */
} gcs_store;

/* ---- tokens ---- */

/* The bearer token to send (new; the caller wipes it), fetched when there is none or it expires
 * within ten seconds (oauth2's expiryDelta). */
static int bearer(gcs_store *s, char **out, st_error *err)
{
	int rc = ST_OK;

	*out = NULL;
	if (s->cfg.auth == ST_GCS_TOKEN)
		return (*out = st_strdup(s->cfg.token)) ? ST_OK
							 : st__err(err, ST_ENOMEM, "out of memory");
	pthread_mutex_lock(&s->mu);
	long long now = (long long)time(NULL);
	if (!s->token || (s->token_exp && now >= s->token_exp - 10)) {
		char *tok = NULL;
		long long exp = 0;
		if (!s->token_http &&
		    ((rc = st__http_new(&s->token_http, "gs", NULL, err)) != ST_OK ||
		     (rc = st__http_set_note(s->token_http, s->cfg.note, err)) != ST_OK)) {
			st__http_free(s->token_http);
			s->token_http = NULL;
		}
		if (rc == ST_OK &&
		    (rc = st__gcs_fetch_token(s->token_http, &s->cfg, &tok, &exp, err)) == ST_OK) {
			if (s->token) {
				sodium_memzero(s->token, strlen(s->token));
				free(s->token);
			}
			s->token = tok;
			s->token_exp = exp;
		}
	}
	if (rc == ST_OK && !(*out = st_strdup(s->token)))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	pthread_mutex_unlock(&s->mu);
	return rc;
}

/* Before each attempt: the Authorization header (none when anonymous). */
static int sign_cb(void *ctx, const st_http_req *req, st_http_hdrs *extra, st_error *err)
{
	gcs_store *s = ctx;
	char *tok = NULL, *h;
	int rc;

	(void)req;
	if (s->cfg.auth == ST_GCS_ANONYMOUS)
		return ST_OK;
	if ((rc = bearer(s, &tok, err)) != ST_OK)
		return rc;
	h = st_asprintf("Bearer %s", tok);
	sodium_memzero(tok, strlen(tok));
	free(tok);
	rc = h ? st__http_hdrs_add(extra, "Authorization", h, err)
	       : st__err(err, ST_ENOMEM, "out of memory");
	if (h) {
		sodium_memzero(h, strlen(h));
		free(h);
	}
	return rc;
}

/* ---- requests ---- */

typedef struct gcs_req {
	st_http_req r;
	char *url;
	char *target;
} gcs_req;

static void req_free(gcs_req *q)
{
	free(q->url);
	free(q->target);
	st__http_hdrs_free(&q->r.headers);
}

/* Appends the object name of `key` (the prefix, escaped as gocloud escapes it), percent-encoded
 * ('/' too, as the JSON API wants it in a path). -1 when out of memory. */
static int add_name(st_buf *b, const gcs_store *s, const char *key)
{
	char *full = st_asprintf("%s%s", s->cfg.prefix, key);
	char *name = full ? st__gcs_escape_key(full) : NULL;
	free(full);
	if (!name)
		return -1;
	st__azblob_url_encode(b, name, strlen(name), 0);
	free(name);
	return 0;
}

/* A request: `url` (stolen; NULL when it could not be made) for operation `op` on `key` (NULL:
 * the bucket). */
static int req_init(gcs_req *q, gcs_store *s, const char *method, const char *op, char *url,
		    const char *key, st_error *err)
{
	st_http_req init = ST_HTTP_REQ_INIT;
	memset(q, 0, sizeof(*q));
	q->r = init;
	q->url = url;
	q->target = st_asprintf("%s/%s%s", s->cfg.bucket, key ? s->cfg.prefix : "",
				key ? key : "");
	if (!q->url || !q->target)
		return st__err(err, ST_ENOMEM, "out of memory");
	q->r.method = method;
	q->r.url = q->url;
	q->r.op = op;
	q->r.target = q->target;
	q->r.flags = ST_HTTP_RETRY;
	q->r.sign = sign_cb;
	q->r.sign_ctx = s;
	return ST_OK;
}

/* {api}/b/BUCKET/o/NAME[tail][?query] (key NULL: {api}/b/BUCKET/o[?query]). New. */
static char *object_url(const gcs_store *s, const char *key, const char *tail, const char *query)
{
	st_buf b;
	st_buf_init(&b);
	st_buf_printf(&b, "%s/b/", s->cfg.api);
	st__azblob_url_encode(&b, s->cfg.bucket, strlen(s->cfg.bucket), 0);
	st_buf_adds(&b, "/o");
	if (key) {
		st_buf_addc(&b, '/');
		if (add_name(&b, s, key) < 0)
			b.oom = 1;
	}
	if (tail)
		st_buf_adds(&b, tail);
	if (query && *query)
		st_buf_printf(&b, "?%s", query);
	return st_buf_take(&b, NULL);
}

/* The error's reason and first line of its message ({"error":{"message","errors":[{"reason"}]}},
 * else the body's first line), printable ASCII, bounded. New or NULL. */
static char *error_detail(const st_http_resp *resp)
{
	json_t *j = json_loadb(resp->body, resp->len, 0, NULL);
	json_t *e = json_object_get(j, "error");
	const char *msg = json_string_value(json_object_get(e, "message"));
	const char *reason = json_string_value(
		json_object_get(json_array_get(json_object_get(e, "errors"), 0), "reason"));
	char *d;

	if (msg)
		d = st_asprintf("%.40s%s%.*s", reason ? reason : "", reason ? ": " : "",
				(int)strcspn(msg, "\r\n"), msg);
	else if (!j && resp->len)
		d = st_asprintf("%.*s", (int)strcspn(resp->body, "\r\n"), resp->body);
	else
		d = NULL;
	json_decref(j);
	if (d) {
		if (strlen(d) > 240)
			d[240] = '\0';
		for (char *c = d; *c; c++)
			if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
				*c = '?';
	}
	return d;
}

/* A 404 about the bucket, not the object. */
static int bucket_missing(const st_http_resp *resp)
{
	return resp->status == 404 && resp->body &&
	       memmem(resp->body, resp->len, "bucket does not exist", 21) != NULL;
}

/* Sets err for an answer the store refuses; `code` 0: chosen from the status. A missing bucket
 * is never a missing object (which callers take for "absent"): ST_EIO. */
static int gcs_fail(gcs_store *s, const gcs_req *q, const st_http_resp *resp, int code,
		    st_error *err)
{
	char *detail = error_detail(resp);
	if (bucket_missing(resp))
		code = ST_EIO;
	int rc = st__http_fail(s->http, &q->r, resp, code, detail, err);
	free(detail);
	return rc;
}

/* Runs a request; `ok` is the status wanted (also 200 for 204). 1 for a 404 about the object
 * (resp kept), ST_OK, or an error (err set). */
static int run(gcs_store *s, gcs_req *q, st_http_resp *resp, long ok, st_error *err)
{
	int rc = st__http_do(s->http, &q->r, resp, err);
	if (rc != ST_OK)
		return rc;
	if (resp->status == ok || (ok == 204 && resp->status == 200))
		return ST_OK;
	if (resp->status == 404 && !bucket_missing(resp))
		return 1;
	return gcs_fail(s, q, resp, 0, err);
}

/* ---- times and resources ---- */

/* RFC 3339 ("2024-05-01T10:00:00.123Z", or an offset) in ns since the epoch, 0 when unreadable. */
static long long rfc3339_ns(const char *v)
{
	struct tm tm;
	int n = 0;
	long long frac = 0, scale = 1000000000LL, off = 0;
	const char *p;

	memset(&tm, 0, sizeof(tm));
	if (!v || sscanf(v, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			 &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
		return 0;
	p = v + n;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (scale > 1) {
				scale /= 10;
				frac += (*p - '0') * scale;
			}
	if (*p == '+' || *p == '-') {
		int oh, om;
		if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2)
			return 0;
		off = (*p == '+' ? 1 : -1) * (oh * 3600LL + om * 60LL);
	} else if (*p != 'Z' && *p != 'z') {
		return 0;
	}
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return ((long long)timegm(&tm) - off) * 1000000000LL + frac;
}

static void set_etag(st_store_info *info, const char *v)
{
	size_t n = v ? strlen(v) : 0;
	if (n >= sizeof(info->etag))
		n = sizeof(info->etag) - 1;
	memcpy(info->etag, v ? v : "", n);
	info->etag[n] = '\0';
}

/* An int64 of the JSON API (a string, or a number). -1 when absent. */
static long long int64_of(const json_t *v)
{
	if (json_is_integer(v))
		return (long long)json_integer_value(v);
	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	return -1;
}

/* An object resource's size, time (updated) and tag (generation). */
static void info_from_resource(const json_t *o, st_store_info *info)
{
	json_t *g = json_object_get(o, "generation");
	char gen[32] = "";
	if (!info)
		return;
	info->size = int64_of(json_object_get(o, "size"));
	info->mtime_ns = rfc3339_ns(json_string_value(json_object_get(o, "updated")));
	if (json_is_string(g))
		snprintf(gen, sizeof(gen), "%s", json_string_value(g));
	else if (json_is_integer(g))
		snprintf(gen, sizeof(gen), "%lld", (long long)json_integer_value(g));
	set_etag(info, gen);
}

/* ---- read, stat ---- */

static int gcs_read(st_store *ss, const char *key, size_t max, char **data, size_t *len,
		    st_store_info *info, st_error *err)
{
	gcs_store *s = (gcs_store *)ss;
	gcs_req q;
	st_http_resp resp;
	int rc = req_init(&q, s, "GET", "objects.get", object_url(s, key, NULL, "alt=media"), key,
			  err);

	memset(&resp, 0, sizeof(resp));
	if (rc == ST_OK) {
		/* room for an error document even when the limit is small */
		q.r.max_body = max < 65536 ? 65536 : max;
		if ((rc = run(s, &q, &resp, 200, err)) == 1)
			rc = gcs_fail(s, &q, &resp, ST_ENOTFOUND, err);
	}
	if (rc == ST_OK && resp.len > max) {
		rc = st__err(err, ST_ELIMIT, "gs: 'gs://%s/%s%s' is larger than %zu bytes",
			     s->cfg.bucket, s->cfg.prefix, key, max);
	} else if (rc == ST_OK) {
		if (info) {
			info->size = (long long)resp.len;
			info->mtime_ns =
				st__http_date_ns(st__http_hdrs_get(&resp.headers, "last-modified"));
			set_etag(info, st__http_hdrs_get(&resp.headers, "x-goog-generation"));
		}
		*data = resp.body;
		*len = resp.len;
		resp.body = NULL;
	}
	st__http_resp_free(&resp);
	req_free(&q);
	return rc;
}

/* objects.get of the resource: ST_OK (info filled), ST_ENOTFOUND, or an error. */
static int get_resource(gcs_store *s, const char *key, st_store_info *info, st_error *err)
{
	gcs_req q;
	st_http_resp resp;
	int rc = req_init(&q, s, "GET", "objects.get", object_url(s, key, NULL, NULL), key, err);

	memset(&resp, 0, sizeof(resp));
	if (rc == ST_OK && (rc = run(s, &q, &resp, 200, err)) == 1)
		rc = gcs_fail(s, &q, &resp, ST_ENOTFOUND, err);
	if (rc == ST_OK) {
		json_t *j = json_loadb(resp.body, resp.len, 0, NULL);
		if (!json_is_object(j))
			rc = st__err(err, ST_EIO, "gs: objects.get '%s' on %s: the answer is no JSON "
						  "object",
				     q.target, s->cfg.api);
		else
			info_from_resource(j, info);
		json_decref(j);
	}
	st__http_resp_free(&resp);
	req_free(&q);
	return rc;
}

static int gcs_stat(st_store *ss, const char *key, st_store_info *info, st_error *err)
{
	return get_resource((gcs_store *)ss, key, info, err);
}

/* ---- write ---- */

static int gcs_write_begin(st_store *ss, const char *key, const st_store_write_opts *opts,
			   st_store_writer **out, st_error *err)
{
	return st__spooled_begin(ss, key, opts, sizeof(st__spooled_writer), out, err);
}

/* The upload's URL: {upload}/b/BUCKET/o?uploadType=media&name=NAME[&ifGenerationMatch=0]. */
static char *upload_url(const gcs_store *s, const char *key, int create)
{
	st_buf b;
	st_buf_init(&b);
	st_buf_printf(&b, "%s/b/", s->cfg.upload);
	st__azblob_url_encode(&b, s->cfg.bucket, strlen(s->cfg.bucket), 0);
	st_buf_adds(&b, "/o?uploadType=media&name=");
	if (add_name(&b, s, key) < 0)
		b.oom = 1;
	if (create)
		st_buf_adds(&b, "&ifGenerationMatch=0");
	return st_buf_take(&b, NULL);
}

static int gcs_write_commit(st_store_writer *sw, st_error *err)
{
	st__spooled_writer *w = (st__spooled_writer *)sw;
	gcs_store *s = (gcs_store *)sw->store;
	int create = (w->flags & ST_STORE_CREATE_ONLY) != 0;
	gcs_req q;
	st_http_resp resp;
	char len[32];
	int rc = req_init(&q, s, "POST", "objects.insert", upload_url(s, w->key, create), w->key,
			  err);

	memset(&resp, 0, sizeof(resp));
	snprintf(len, sizeof(len), "%lld", w->size);
	q.r.body_fd = st__spool_fd(w->spool);
	q.r.body_len = (size_t)w->size;
	if (rc == ST_OK)
		rc = st__http_hdrs_add(&q.r.headers, "Content-Type", "application/octet-stream", err);
	if (rc == ST_OK)
		rc = st__http_do(s->http, &q.r, &resp, err);
	if (rc == ST_OK && resp.status == 412 && create) {
		if (resp.maybe_done && st__store_is_ours(&s->base, w->key, w->size, w->sha))
			rc = ST_OK;
		else
			rc = st__err(err, ST_EEXIST, "'gs://%s/%s%s' exists already", s->cfg.bucket,
				     s->cfg.prefix, w->key);
	} else if (rc == ST_OK && resp.status != 200) {
		rc = gcs_fail(s, &q, &resp, 0, err);
	} else if (rc == ST_OK) {
		/* the object as stored: its size must be what was sent */
		json_t *j = json_loadb(resp.body, resp.len, 0, NULL);
		long long got = int64_of(json_object_get(j, "size"));
		if (got != w->size)
			rc = st__err(err, ST_EIO,
				     "gs: objects.insert '%s' on %s: the server stored %lld bytes of "
				     "%lld",
				     q.target, s->cfg.api, got, w->size);
		json_decref(j);
	}
	st__http_resp_free(&resp);
	req_free(&q);
	st__spooled_free(&w->base);
	return rc;
}

/* ---- delete, copy ---- */

static int gcs_remove(st_store *ss, const char *key, st_error *err)
{
	gcs_store *s = (gcs_store *)ss;
	gcs_req q;
	st_http_resp resp;
	int rc = req_init(&q, s, "DELETE", "objects.delete", object_url(s, key, NULL, NULL), key,
			  err);

	memset(&resp, 0, sizeof(resp));
	if (rc == ST_OK && (rc = run(s, &q, &resp, 204, err)) == 1)
		/* gone: by an earlier attempt whose answer was lost, or it never was */
		rc = resp.maybe_done ? ST_OK : gcs_fail(s, &q, &resp, ST_ENOTFOUND, err);
	st__http_resp_free(&resp);
	req_free(&q);
	return rc;
}

/* .../o/SRC/rewriteTo/b/BUCKET/o/DST[?rewriteToken=T]. New. */
static char *rewrite_url(const gcs_store *s, const char *src, const char *dst, const char *token)
{
	st_buf tail;
	char *t, *q = NULL, *url;
	st_buf_init(&tail);
	st_buf_adds(&tail, "/rewriteTo/b/");
	st__azblob_url_encode(&tail, s->cfg.bucket, strlen(s->cfg.bucket), 0);
	st_buf_adds(&tail, "/o/");
	if (add_name(&tail, s, dst) < 0)
		tail.oom = 1;
	if (!(t = st_buf_take(&tail, NULL)))
		return NULL;
	if (token) {
		st_buf b;
		st_buf_init(&b);
		st_buf_adds(&b, "rewriteToken=");
		st__azblob_url_encode(&b, token, strlen(token), 0);
		if (!(q = st_buf_take(&b, NULL))) {
			free(t);
			return NULL;
		}
	}
	url = object_url(s, src, t, q);
	free(t);
	free(q);
	return url;
}

static int gcs_copy(st_store *ss, const char *src, const char *dst, int for_backup,
		    st_error *err)
{
	gcs_store *s = (gcs_store *)ss;
	char *token = NULL;
	int rc = ST_OK;

	(void)for_backup;
	for (int i = 0; rc == ST_OK; i++) {
		gcs_req q;
		st_http_resp resp;
		memset(&resp, 0, sizeof(resp));
		rc = req_init(&q, s, "POST", "objects.rewrite", rewrite_url(s, src, dst, token), dst,
			      err);
		q.r.body = "{}";
		q.r.body_len = 2;
		if (rc == ST_OK)
			rc = st__http_hdrs_add(&q.r.headers, "Content-Type", "application/json", err);
		if (rc == ST_OK && (rc = run(s, &q, &resp, 200, err)) == 1)
			rc = gcs_fail(s, &q, &resp, ST_ENOTFOUND, err); /* the source is missing */
		json_t *j = rc == ST_OK ? json_loadb(resp.body, resp.len, 0, NULL) : NULL;
		int done = json_is_true(json_object_get(j, "done"));
		const char *next = json_string_value(json_object_get(j, "rewriteToken"));
		free(token);
		token = NULL;
		if (rc != ST_OK) {
		} else if (done) {
			json_decref(j);
			st__http_resp_free(&resp);
			req_free(&q);
			break;
		} else if (!next || !*next || i >= MAX_REWRITES) {
			rc = st__err(err, ST_EIO,
				     "gs: objects.rewrite to '%s' on %s: not done, and no rewriteToken "
				     "to go on with",
				     q.target, s->cfg.api);
		} else if (!(token = st_strdup(next))) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
		}
		json_decref(j);
		st__http_resp_free(&resp);
		req_free(&q);
	}
	free(token);
	return rc;
}

/* ---- list ---- */

/* One page: its items and prefixes into l, the next page's token (new, NULL at the end). */
static int list_page(gcs_store *s, st__listing *l, const char *query, char **next,
		     st_error *err)
{
	gcs_req q;
	st_http_resp resp;
	int rc = req_init(&q, s, "GET", "objects.list", object_url(s, NULL, NULL, query), NULL, err);
	json_t *j = NULL;

	*next = NULL;
	memset(&resp, 0, sizeof(resp));
	q.r.max_body = 64u << 20;
	if (rc == ST_OK && (rc = run(s, &q, &resp, 200, err)) == 1)
		rc = gcs_fail(s, &q, &resp, ST_EIO, err);
	/* (json_is_object evaluates its argument twice: the load is done first) */
	if (rc == ST_OK)
		j = json_loadb(resp.body, resp.len, 0, NULL);
	if (rc == ST_OK && !json_is_object(j))
		rc = st__err(err, ST_EIO, "gs: objects.list of '%s' on %s: the answer is no JSON object",
			     q.target, s->cfg.api);
	json_t *items = json_object_get(j, "items"), *prefixes = json_object_get(j, "prefixes");
	for (size_t i = 0; rc == ST_OK && i < json_array_size(items); i++) {
		json_t *o = json_array_get(items, i);
		const char *name = json_string_value(json_object_get(o, "name"));
		st_store_info info = {-1, 0, ""};
		info_from_resource(o, &info);
		if (name)
			rc = st__azblob_add_listed(l, s->cfg.prefix, name, 0, &info);
	}
	for (size_t i = 0; rc == ST_OK && i < json_array_size(prefixes); i++) {
		const char *p = json_string_value(json_array_get(prefixes, i));
		st_store_info info = {-1, 0, ""};
		if (p && *p)
			rc = st__azblob_add_listed(l, s->cfg.prefix, p, 1, &info);
	}
	const char *tok = json_string_value(json_object_get(j, "nextPageToken"));
	if (rc == ST_OK && tok && *tok && !(*next = st_strdup(tok)))
		rc = ST_ENOMEM;
	if (rc == ST_ENOMEM)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	json_decref(j);
	st__http_resp_free(&resp);
	req_free(&q);
	return rc;
}

static int gcs_list(st_store *ss, const char *prefix, unsigned flags, st_store_entry **out,
		    size_t *count, st_error *err)
{
	gcs_store *s = (gcs_store *)ss;
	st__listing l = {NULL, 0, 0};
	char *full = st_asprintf("%s%s", s->cfg.prefix, prefix);
	char *esc = full ? st__gcs_escape_key(full) : NULL;
	char *token = NULL;
	int rc = esc ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");

	free(full);
	for (int page = 0; rc == ST_OK; page++) {
		st_buf b;
		char *query, *next = NULL;
		st_buf_init(&b);
		st_buf_printf(&b, "maxResults=%d&prefix=", page_size);
		st__azblob_url_encode(&b, esc, strlen(esc), 0);
		if (flags & ST_STORE_LIST_DIRS)
			st_buf_adds(&b, "&delimiter=%2F");
		if (token) {
			st_buf_adds(&b, "&pageToken=");
			st__azblob_url_encode(&b, token, strlen(token), 0);
		}
		if (!(query = st_buf_take(&b, NULL))) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			break;
		}
		rc = list_page(s, &l, query, &next, err);
		free(query);
		free(token);
		token = next;
		if (rc == ST_OK && !token)
			break;
		if (rc == ST_OK && page > 10000000)
			rc = st__err(err, ST_EIO, "gs: objects.list of '%s': no end of pages", esc);
	}
	free(token);
	free(esc);
	if (rc != ST_OK) {
		st_store_entries_free(l.v, l.n);
		return rc;
	}
	*out = l.v;
	*count = st__store_entries_settle(l.v, l.n);
	return ST_OK;
}

/* ---- the store ---- */

static void gcs_free(st_store *ss)
{
	gcs_store *s = (gcs_store *)ss;
	st__http_free(s->http);
	st__http_free(s->token_http);
	st__gcs_cfg_free(&s->cfg);
	if (s->token) {
		sodium_memzero(s->token, strlen(s->token));
		free(s->token);
	}
	pthread_mutex_destroy(&s->mu);
	free(s->base.url);
	free(s);
}

static const st_store_ops gcs_ops = {
	"gs",           gcs_read,        gcs_stat, gcs_write_begin, st__spooled_chunk, st__spooled_finish,
	gcs_write_commit, st__spooled_free, gcs_list, gcs_remove,      gcs_copy,        gcs_free,
	NULL, /* rename: the generic one, a server-side rewrite then a delete */
	NULL /* write_copy: chunks only */};

int st__store_gcs_open(st_store **out, const char *url, st_error *err)
{
	gcs_store *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s)
		return st__err(err, ST_ENOMEM, "out of memory");
	s->base.ops = &gcs_ops;
	pthread_mutex_init(&s->mu, NULL);
	if ((rc = st__gcs_config(&s->cfg, url, NULL, NULL, err)) != ST_OK)
		goto fail;
	if (!(s->base.url = st_strdup(url))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = st__http_new(&s->http, "gs", NULL, err)) != ST_OK ||
	    (rc = st__http_set_note(s->http, s->cfg.note, err)) != ST_OK)
		goto fail;
	*out = &s->base;
	return ST_OK;
fail:
	gcs_free(&s->base);
	return rc;
}

/* The bucket and prefix at the JSON API's address; not the credentials. */
char *st__gcs_identity(const st_store *st)
{
	const gcs_store *s = (const gcs_store *)st;
	return st__identity_bucket("gs", s->cfg.bucket, s->cfg.prefix, "api", s->cfg.api);
}
