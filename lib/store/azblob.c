/*
 * The Azure Blob Storage store: azblob://CONTAINER[/PREFIX][?PARAMS] (see azblob.h for the URL
 * and the environment, doc/DESIGN.md "The Azure Blob store" for the reasons).
 *
 * Keys are blob names under PREFIX, stored as Pulumi (gocloud.dev) stores them. The operations:
 *   read   Get Blob                   stat   Get Blob Properties (HEAD)
 *   write  the bytes go to a spool; up to 256 MiB one Put Blob (BlockBlob) at commit; beyond,
 *          Put Block for each 64 MiB at finish (uncommitted, so invisible) and Put Block List at
 *          commit; create-only: If-None-Match: * (409 BlobAlreadyExists: ST_EEXIST)
 *   list   List Blobs (prefix, marker pages; delimiter '/' for ST_STORE_LIST_DIRS)
 *   remove Delete Blob                 copy   Copy Blob (server-side; a pending copy is waited
 *                                             for by polling Get Blob Properties)
 * Every request goes through the HTTP layer (retries, time-outs, messages without secrets),
 * signed with Shared Key or carrying the SAS token in its query.
 */
#include "azblob.h"
#include "store_impl.h"
#include "xml.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MIB ((size_t)1 << 20)
#define MAX_BLOCKS 50000
#define COPY_POLLS 1200 /* x 500 ms: a pending copy is waited for up to 10 minutes */

static size_t single_max = 256 * MIB, block_size = 64 * MIB;
static int page_size = 5000;

void st__azblob_test_sizes(size_t single, size_t block, int page)
{
	single_max = single ? single : 256 * MIB;
	block_size = block ? block : 64 * MIB;
	page_size = page ? page : 5000;
}

typedef struct az_store {
	st_store base;
	st_azblob_cfg cfg;
	st_http *http;
	char *origin; /* scheme://host[:port] */
	char *cpath;  /* the container's path, encoded: [/ACCOUNT]/CONTAINER */
} az_store;

/* ---- requests ---- */

typedef struct az_req {
	st_http_req r;
	char *url;
	char *target;
} az_req;

static void req_free(az_req *q)
{
	if (q->url) {
		sodium_memzero(q->url, strlen(q->url)); /* it may hold the SAS token */
		free(q->url);
	}
	free(q->target);
	st__http_hdrs_free(&q->r.headers);
}

/* The URL of a key (NULL: the container), with `query` (may be NULL) and the SAS token. */
static char *url_of(const az_store *s, const char *key, const char *query)
{
	st_buf b;
	char sep = '?';

	st_buf_init(&b);
	st_buf_printf(&b, "%s%s", s->origin, s->cpath);
	if (key) {
		char *full = st_asprintf("%s%s", s->cfg.prefix, key);
		char *name = full ? st__azblob_escape_key(full, 0) : NULL;
		free(full);
		if (!name) {
			st_buf_free(&b);
			return NULL;
		}
		st_buf_addc(&b, '/');
		st__azblob_url_encode(&b, name, strlen(name), 1);
		free(name);
	}
	if (query && *query) {
		st_buf_printf(&b, "?%s", query);
		sep = '&';
	}
	if (s->cfg.sas && *s->cfg.sas)
		st_buf_printf(&b, "%c%s", sep, s->cfg.sas);
	return st_buf_take(&b, NULL);
}

static int sign_cb(void *ctx, const st_http_req *req, st_http_hdrs *extra, st_error *err);

/* A request on a key (NULL: the container): method, operation (for messages), query. */
static int req_init(az_req *q, az_store *s, const char *method, const char *op, const char *key,
		    const char *query, st_error *err)
{
	st_http_req init = ST_HTTP_REQ_INIT;
	memset(q, 0, sizeof(*q));
	q->r = init;
	q->url = url_of(s, key, query);
	q->target = st_asprintf("%s/%s%s", s->cfg.container, key ? s->cfg.prefix : "",
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
	return st__http_hdrs_add(&q->r.headers, "x-ms-version", ST_AZBLOB_VERSION, err);
}

/* Adds x-ms-date and, with Shared Key, the Authorization header, before every attempt. */
static int sign_cb(void *ctx, const st_http_req *req, st_http_hdrs *extra, st_error *err)
{
	az_store *s = ctx;
	char date[32];
	int rc;

	st__http_date(date, time(NULL));
	if ((rc = st__http_hdrs_add(extra, "x-ms-date", date, err)) != ST_OK)
		return rc;
	if (s->cfg.auth != ST_AZBLOB_SHARED_KEY)
		return ST_OK;
	size_t n = req->headers.n;
	st_http_hdr *all = malloc((n + 1) * sizeof(*all));
	if (!all)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (n)
		memcpy(all, req->headers.v, n * sizeof(*all));
	all[n] = extra->v[extra->n - 1];
	const char *path = req->url + strlen(s->origin);
	size_t pn = strcspn(path, "?");
	char *p = st_strndup(path, pn);
	st_azblob_sign_in in = {req->method, s->cfg.account, p, path[pn] ? path + pn + 1 : NULL,
				all, n + 1, (req->body || req->body_fd >= 0) ? (long long)req->body_len : 0,
				s->cfg.key, s->cfg.key_len};
	char *authz = NULL;
	rc = p ? st__azblob_sign(&in, &authz, NULL, err) : st__err(err, ST_ENOMEM, "out of memory");
	free(p);
	free(all);
	if (rc == ST_OK)
		rc = st__http_hdrs_add(extra, "Authorization", authz, err);
	free(authz);
	return rc;
}

/* The service's error code (x-ms-error-code, else the body's <Code>), new or NULL. */
static char *error_code(const st_http_resp *resp)
{
	const char *h = st__http_hdrs_get(&resp->headers, "x-ms-error-code");
	if (h)
		return st_strdup(h);
	return st__xml_text(resp->body, resp->body + resp->len, "Code", NULL);
}

/* "Code: first line of the message" (never the AuthenticationErrorDetail, which quotes what
 * was signed), new or NULL; printable ASCII only, at most ~300 bytes. */
static char *error_detail(const st_http_resp *resp, const char *code)
{
	char *msg = st__xml_text(resp->body, resp->body + resp->len, "Message", NULL), *d;
	if (msg) {
		msg[strcspn(msg, "\r\n")] = '\0';
		size_t n = strlen(msg);
		while (n && (msg[n - 1] == '.' || msg[n - 1] == ' '))
			msg[--n] = '\0';
		if (n > 240)
			msg[240] = '\0';
		for (char *c = msg; *c; c++)
			if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
				*c = '?';
	}
	if (code && msg && *msg)
		d = st_asprintf("%.60s: %s", code, msg);
	else
		d = st_strdup(code ? code : "");
	if (d)
		for (char *c = d; *c; c++)
			if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
				*c = '?';
	free(msg);
	return d;
}

/* Sets err for an answer the store refuses; `code` 0: chosen from the status. A missing
 * container is never a missing object (which callers take for "absent"): ST_EIO. */
static int az_fail(az_store *s, const az_req *q, const st_http_resp *resp, int code,
		   st_error *err)
{
	char *ec = error_code(resp);
	char *detail = error_detail(resp, ec);
	if (ec && !strcmp(ec, "ContainerNotFound"))
		code = ST_EIO;
	int rc = st__http_fail(s->http, &q->r, resp, code, detail, err);
	free(detail);
	free(ec);
	return rc;
}

/* A 404 about the object (not the container). */
static int object_missing(const st_http_resp *resp)
{
	if (resp->status != 404)
		return 0;
	char *ec = error_code(resp);
	int container = ec && !strcmp(ec, "ContainerNotFound");
	free(ec);
	return !container;
}

static void info_from(const st_http_hdrs *h, st_store_info *info)
{
	const char *v;
	if (!info)
		return;
	if ((v = st__http_hdrs_get(h, "content-length")))
		info->size = strtoll(v, NULL, 10);
	long long t = st__http_date_ns(st__http_hdrs_get(h, "last-modified"));
	if (t > 0)
		info->mtime_ns = t;
	if ((v = st__http_hdrs_get(h, "etag"))) {
		size_t n = strlen(v);
		if (n >= 2 && v[0] == '"' && v[n - 1] == '"') {
			v++;
			n -= 2;
		}
		if (n >= sizeof(info->etag))
			n = sizeof(info->etag) - 1;
		memcpy(info->etag, v, n);
		info->etag[n] = '\0';
	}
}

/* Runs a request; `ok` is the status wanted. 1 for a 404 about the object (resp kept), ST_OK,
 * or an error (err set). */
static int run(az_store *s, az_req *q, st_http_resp *resp, long ok, st_error *err)
{
	int rc = st__http_do(s->http, &q->r, resp, err);
	if (rc != ST_OK)
		return rc;
	if (resp->status == ok)
		return ST_OK;
	if (object_missing(resp))
		return 1;
	return az_fail(s, q, resp, 0, err);
}

/* ---- read, stat ---- */

static int az_read(st_store *ss, const char *key, size_t max, char **data, size_t *len,
		   st_store_info *info, st_error *err)
{
	az_store *s = (az_store *)ss;
	az_req q;
	st_http_resp resp;
	int rc = req_init(&q, s, "GET", "GetBlob", key, NULL, err);

	memset(&resp, 0, sizeof(resp));
	if (rc == ST_OK) {
		q.r.max_body = max;
		rc = run(s, &q, &resp, 200, err);
		if (rc == 1)
			rc = az_fail(s, &q, &resp, ST_ENOTFOUND, err);
	}
	if (rc == ST_OK) {
		info_from(&resp.headers, info);
		*data = resp.body;
		*len = resp.len;
		resp.body = NULL;
	}
	st__http_resp_free(&resp);
	req_free(&q);
	return rc;
}

static int az_stat(st_store *ss, const char *key, st_store_info *info, st_error *err)
{
	az_store *s = (az_store *)ss;
	az_req q;
	st_http_resp resp;
	int rc = req_init(&q, s, "HEAD", "GetBlobProperties", key, NULL, err);

	memset(&resp, 0, sizeof(resp));
	if (rc == ST_OK && (rc = run(s, &q, &resp, 200, err)) == 1)
		rc = az_fail(s, &q, &resp, ST_ENOTFOUND, err);
	if (rc == ST_OK)
		info_from(&resp.headers, info);
	st__http_resp_free(&resp);
	req_free(&q);
	return rc;
}

/* ---- write ---- */

typedef struct az_writer {
	st__spooled_writer sp; /* first: the shared spooled writer */
	size_t nblocks;     /* > 0: the bytes are up as uncommitted blocks */
	char id_prefix[33]; /* this write's block IDs: "<id_prefix>-<6 digits>" */
} az_writer;

static int az_write_begin(st_store *ss, const char *key, const st_store_write_opts *opts,
			  st_store_writer **out, st_error *err)
{
	return st__spooled_begin(ss, key, opts, sizeof(az_writer), out, err);
}

/* A block's ID, base64 of "<32 hex>-<6 digits>" (the same length for every block, as the
 * service wants), into out. */
static void block_id(const az_writer *w, size_t i, char out[64])
{
	char raw[64];
	snprintf(raw, sizeof(raw), "%.32s-%06u", w->id_prefix, (unsigned)(i % 1000000));
	sodium_bin2base64(out, 64, (const unsigned char *)raw, strlen(raw),
			  sodium_base64_VARIANT_ORIGINAL);
}

/* Put Block for every block_size bytes: the content is then on the server, uncommitted. */
static int put_blocks(az_store *s, az_writer *w, st_error *err)
{
	size_t n = (size_t)((w->sp.size + (long long)block_size - 1) / (long long)block_size);
	unsigned char rnd[16];
	int rc = ST_OK;

	if (n > MAX_BLOCKS)
		return st__err(err, ST_ELIMIT,
			       "azblob: '%s' (%lld bytes) needs more than %d blocks of %zu bytes",
			       w->sp.key, w->sp.size, MAX_BLOCKS, block_size);
	randombytes_buf(rnd, sizeof(rnd));
	st__hex(w->id_prefix, rnd, sizeof(rnd));
	for (size_t i = 0; i < n && rc == ST_OK; i++) {
		char id[64], *query;
		st_buf b;
		az_req q;
		st_http_resp resp;
		block_id(w, i, id);
		st_buf_init(&b);
		st_buf_adds(&b, "comp=block&blockid=");
		st__azblob_url_encode(&b, id, strlen(id), 0);
		query = st_buf_take(&b, NULL);
		rc = query ? req_init(&q, s, "PUT", "PutBlock", w->sp.key, query, err)
			   : st__err(err, ST_ENOMEM, "out of memory");
		free(query);
		memset(&resp, 0, sizeof(resp));
		if (rc == ST_OK) {
			long long off = (long long)i * (long long)block_size;
			q.r.body_fd = st__spool_fd(w->sp.spool);
			q.r.body_off = off;
			q.r.body_len = (size_t)(w->sp.size - off < (long long)block_size
							? w->sp.size - off
							: (long long)block_size);
			if ((rc = run(s, &q, &resp, 201, err)) == 1)
				rc = az_fail(s, &q, &resp, 0, err);
		}
		st__http_resp_free(&resp);
		req_free(&q);
	}
	if (rc == ST_OK)
		w->nblocks = n;
	return rc;
}

static int az_write_finish(st_store_writer *sw, st_error *err)
{
	az_writer *w = (az_writer *)sw;
	st__spooled_finish(sw, err);
	if (w->sp.size > (long long)single_max)
		return put_blocks((az_store *)sw->store, w, err);
	return ST_OK;
}

/* The Put Block List body: every block, in order, as Latest. */
static char *block_list(const az_writer *w)
{
	st_buf b;
	st_buf_init(&b);
	st_buf_adds(&b, "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>");
	for (size_t i = 0; i < w->nblocks; i++) {
		char id[64];
		block_id(w, i, id);
		st_buf_printf(&b, "<Latest>%s</Latest>", id);
	}
	st_buf_adds(&b, "</BlockList>");
	return st_buf_take(&b, NULL);
}

static int az_write_commit(st_store_writer *sw, st_error *err)
{
	az_writer *w = (az_writer *)sw;
	az_store *s = (az_store *)sw->store;
	char *list = NULL;
	az_req q;
	st_http_resp resp;
	int rc, create = (w->sp.flags & ST_STORE_CREATE_ONLY) != 0;

	memset(&resp, 0, sizeof(resp));
	if (w->nblocks) {
		rc = req_init(&q, s, "PUT", "PutBlockList", w->sp.key, "comp=blocklist", err);
		if (rc == ST_OK && !(list = block_list(w)))
			rc = st__err(err, ST_ENOMEM, "out of memory");
		q.r.body = list;
		q.r.body_len = list ? strlen(list) : 0;
	} else {
		rc = req_init(&q, s, "PUT", "PutBlob", w->sp.key, NULL, err);
		if (rc == ST_OK)
			rc = st__http_hdrs_add(&q.r.headers, "x-ms-blob-type", "BlockBlob", err);
		q.r.body_fd = st__spool_fd(w->sp.spool);
		q.r.body_len = (size_t)w->sp.size;
	}
	if (rc == ST_OK && create)
		rc = st__http_hdrs_add(&q.r.headers, "If-None-Match", "*", err);
	if (rc == ST_OK)
		rc = st__http_do(s->http, &q.r, &resp, err);
	if (rc == ST_OK && resp.status != 201) {
		if (create && (resp.status == 409 || resp.status == 412)) {
			char *ec = error_code(&resp);
			int exists = ec && (!strcmp(ec, "BlobAlreadyExists") ||
					    !strcmp(ec, "ConditionNotMet"));
			free(ec);
			if (exists && resp.maybe_done &&
			    st__store_is_ours(&s->base, w->sp.key, w->sp.size, w->sp.sha))
				rc = ST_OK;
			else
				rc = az_fail(s, &q, &resp, exists ? ST_EEXIST : 0, err);
		} else {
			rc = az_fail(s, &q, &resp, 0, err);
		}
	}
	st__http_resp_free(&resp);
	req_free(&q);
	free(list);
	st__spooled_free(sw);
	return rc;
}

/* ---- delete, copy ---- */

static int az_remove(st_store *ss, const char *key, st_error *err)
{
	az_store *s = (az_store *)ss;
	az_req q;
	st_http_resp resp;
	int rc = req_init(&q, s, "DELETE", "DeleteBlob", key, NULL, err);

	memset(&resp, 0, sizeof(resp));
	if (rc == ST_OK && (rc = run(s, &q, &resp, 202, err)) == 1)
		/* gone: by an earlier attempt whose answer was lost, or it never was */
		rc = resp.maybe_done ? ST_OK : az_fail(s, &q, &resp, ST_ENOTFOUND, err);
	st__http_resp_free(&resp);
	req_free(&q);
	return rc;
}

/* Waits for a pending copy to `dst` (id `id`) to end: polls Get Blob Properties. */
static int copy_wait(az_store *s, const char *dst, const char *id, st_error *err)
{
	for (int i = 0; i < COPY_POLLS; i++) {
		struct timespec ts = {0, 500 * 1000000L};
		az_req q;
		st_http_resp resp;
		nanosleep(&ts, NULL);
		int rc = req_init(&q, s, "HEAD", "GetBlobProperties", dst, NULL, err);
		memset(&resp, 0, sizeof(resp));
		if (rc == ST_OK && (rc = run(s, &q, &resp, 200, err)) == 1)
			rc = az_fail(s, &q, &resp, ST_EIO, err);
		const char *st = rc == ST_OK ? st__http_hdrs_get(&resp.headers, "x-ms-copy-status")
					     : NULL;
		const char *cid = rc == ST_OK ? st__http_hdrs_get(&resp.headers, "x-ms-copy-id")
					      : NULL;
		if (rc == ST_OK && cid && id && strcmp(cid, id))
			rc = st__err(err, ST_ECONFLICT,
				     "azblob: another copy to '%s/%s%s' started while ours ran",
				     s->cfg.container, s->cfg.prefix, dst);
		else if (rc == ST_OK && st && strcmp(st, "pending"))
			rc = !strcmp(st, "success")
				     ? 1
				     : st__err(err, ST_EIO, "azblob: the copy to '%s/%s%s' ended: %.20s",
					       s->cfg.container, s->cfg.prefix, dst, st);
		st__http_resp_free(&resp);
		req_free(&q);
		if (rc != ST_OK)
			return rc == 1 ? ST_OK : rc;
	}
	return st__err(err, ST_EIO, "azblob: the copy to '%s/%s%s' is still pending after %d s",
		       s->cfg.container, s->cfg.prefix, dst, COPY_POLLS / 2);
}

static int az_copy(st_store *ss, const char *src, const char *dst, int for_backup,
		   st_error *err)
{
	az_store *s = (az_store *)ss;
	char *from = url_of(s, src, NULL); /* with the SAS token, which authorizes the source */
	az_req q;
	st_http_resp resp;
	int rc;

	(void)for_backup;
	memset(&resp, 0, sizeof(resp));
	memset(&q, 0, sizeof(q));
	rc = from ? req_init(&q, s, "PUT", "CopyBlob", dst, NULL, err)
		  : st__err(err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK)
		rc = st__http_hdrs_add(&q.r.headers, "x-ms-copy-source", from, err);
	if (rc == ST_OK) {
		rc = st__http_do(s->http, &q.r, &resp, err);
		if (rc == ST_OK && resp.status != 202 && resp.status != 201)
			rc = az_fail(s, &q, &resp, object_missing(&resp) ? ST_ENOTFOUND : 0, err);
	}
	if (rc == ST_OK) {
		const char *st = st__http_hdrs_get(&resp.headers, "x-ms-copy-status");
		if (st && !strcmp(st, "pending"))
			rc = copy_wait(s, dst, st__http_hdrs_get(&resp.headers, "x-ms-copy-id"), err);
		else if (st && strcmp(st, "success"))
			rc = st__err(err, ST_EIO, "azblob: the copy to '%s' ended: %.20s", q.target,
				     st);
	}
	st__http_resp_free(&resp);
	req_free(&q);
	if (from) {
		sodium_memzero(from, strlen(from));
		free(from);
	}
	return rc;
}

/* ---- list ---- */

/* The <Name> of a listed element in [in, end), decoded (Encoded="true", as the service marks
 * a name with characters XML cannot hold: percent-encoded): 1 and *out (new), 0 when there is
 * none, -1 when out of memory. */
static int listed_name(const char *in, const char *end, char **out)
{
	const char *tag = memmem(in, (size_t)(end - in), "<Name", 5), *gt;
	int oom = 0, encoded;
	char *n = st__xml_text(in, end, "Name", &oom);

	*out = NULL;
	if (!n)
		return oom ? -1 : 0;
	gt = tag ? memchr(tag, '>', (size_t)(end - tag)) : NULL;
	encoded = gt && memmem(tag, (size_t)(gt - tag), "Encoded=\"true\"", 14);
	if (!encoded) {
		*out = n;
		return 1;
	}
	*out = st__url_decode(n, strlen(n), 0);
	free(n);
	return *out ? 1 : -1;
}

/* A listed blob's size, time and tag. -1 when out of memory. */
static int listed_info(const char *in, const char *end, st_store_info *info)
{
	static const char *const fields[][2] = {{"Content-Length", "content-length"},
						{"Last-Modified", "last-modified"},
						{"Etag", "etag"}};
	const char *pin, *pend;
	st_http_hdrs h = {NULL, 0, 0};
	int oom = 0;

	if (!st__xml_next(in, end, "Properties", &pin, &pend))
		return 0;
	for (size_t i = 0; i < 3 && !oom; i++) {
		char *v = st__xml_text(pin, pend, fields[i][0], &oom);
		if (v && st__http_hdrs_add(&h, fields[i][1], v, NULL) != ST_OK)
			oom = 1;
		free(v);
	}
	info_from(&h, info);
	st__http_hdrs_free(&h);
	return oom ? -1 : 0;
}

int st__azblob_add_listed(st__listing *l, const char *prefix, const char *raw, int dir,
			  const st_store_info *info)
{
	char *name = st__azblob_unescape_key(raw);
	return name ? st__listing_add_name(l, prefix, name, dir, info) : ST_ENOMEM;
}

/* One page of a listing: its entries into l, the next marker (new, NULL at the end). */
static int list_page(az_store *s, st__listing *l, const char *query, char **next,
		     st_error *err)
{
	az_req q;
	st_http_resp resp;
	int rc = req_init(&q, s, "GET", "ListBlobs", NULL, query, err), oom = 0;
	static const char *const kinds[] = {"Blob", "BlobPrefix"};

	*next = NULL;
	memset(&resp, 0, sizeof(resp));
	if (rc == ST_OK && (rc = run(s, &q, &resp, 200, err)) == 1)
		rc = az_fail(s, &q, &resp, 0, err);
	const char *end = resp.body ? resp.body + resp.len : NULL;
	for (int k = 0; k < 2 && rc == ST_OK; k++) {
		const char *p = resp.body, *in, *in_end;
		while (rc == ST_OK && (p = st__xml_next(p, end, kinds[k], &in, &in_end))) {
			st_store_info info = {-1, 0, ""};
			char *name = NULL;
			int got = listed_name(in, in_end, &name);
			if (got < 0 || (!k && listed_info(in, in_end, &info) < 0))
				rc = ST_ENOMEM;
			else if (got)
				rc = st__azblob_add_listed(l, s->cfg.prefix, name, k, &info);
			free(name);
		}
	}
	if (rc == ST_OK && resp.body) {
		*next = st__xml_text(resp.body, end, "NextMarker", &oom);
		if (oom)
			rc = ST_ENOMEM;
		else if (*next && !**next) {
			free(*next);
			*next = NULL;
		}
	}
	if (rc == ST_ENOMEM)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	st__http_resp_free(&resp);
	req_free(&q);
	return rc;
}

static int az_list(st_store *ss, const char *prefix, unsigned flags, st_store_entry **out,
		   size_t *count, st_error *err)
{
	az_store *s = (az_store *)ss;
	st__listing l = {0};
	char *full = st_asprintf("%s%s", s->cfg.prefix, prefix);
	char *esc = full ? st__azblob_escape_key(full, 1) : NULL;
	char *marker = NULL;
	int rc = esc ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");

	free(full);
	do {
		st_buf b;
		char *query, *next = NULL;
		st_buf_init(&b);
		st_buf_printf(&b, "restype=container&comp=list&maxresults=%d&prefix=", page_size);
		st__azblob_url_encode(&b, esc ? esc : "", esc ? strlen(esc) : 0, 0);
		if (flags & ST_STORE_LIST_DIRS)
			st_buf_adds(&b, "&delimiter=%2F");
		if (marker) {
			st_buf_adds(&b, "&marker=");
			st__azblob_url_encode(&b, marker, strlen(marker), 0);
		}
		if (rc != ST_OK)
			break;
		if (!(query = st_buf_take(&b, NULL))) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			break;
		}
		rc = list_page(s, &l, query, &next, err);
		free(query);
		free(marker);
		marker = next;
	} while (rc == ST_OK && marker);
	free(marker);
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

static void az_free(st_store *ss)
{
	az_store *s = (az_store *)ss;
	st__http_free(s->http);
	st__azblob_cfg_free(&s->cfg);
	free(s->origin);
	free(s->cpath);
	free(s->base.url);
	free(s);
}

static const st_store_ops azblob_ops = {
	"azblob",       az_read,        az_stat,  az_write_begin, st__spooled_chunk, az_write_finish,
	az_write_commit,
	st__spooled_free, /* abort: uncommitted blocks are invisible and the service drops them
			   * after a week */
	az_list,  az_remove,      az_copy,        az_free,
	NULL, /* rename: the generic one, a server-side copy then a delete */
	NULL /* write_copy: chunks only */};

int st__store_azblob_open(st_store **out, const char *url, st_error *err)
{
	az_store *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s)
		return st__err(err, ST_ENOMEM, "out of memory");
	s->base.ops = &azblob_ops;
	if ((rc = st__azblob_config(&s->cfg, url, NULL, NULL, err)) != ST_OK)
		goto fail;
	const char *host = strstr(s->cfg.service, "://") + 3;
	size_t on = (size_t)(host - s->cfg.service) + strcspn(host, "/");
	st_buf b;
	st_buf_init(&b);
	st_buf_adds(&b, s->cfg.service + on);
	st_buf_addc(&b, '/');
	st__azblob_url_encode(&b, s->cfg.container, strlen(s->cfg.container), 0);
	s->cpath = st_buf_take(&b, NULL);
	s->origin = st_strndup(s->cfg.service, on);
	s->base.url = st_strdup(url);
	if (!s->cpath || !s->origin || !s->base.url) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = st__http_new(&s->http, "azblob", NULL, err)) != ST_OK ||
	    (rc = st__http_set_note(s->http, s->cfg.note, err)) != ST_OK)
		goto fail;
	*out = &s->base;
	return ST_OK;
fail:
	az_free(&s->base);
	return rc;
}

/* ---- for the tests ---- */

int st__azblob_container_create(st_store *ss, st_error *err)
{
	az_store *s = (az_store *)ss;
	az_req q;
	st_http_resp resp;
	int rc = req_init(&q, s, "PUT", "CreateContainer", NULL, "restype=container", err);

	memset(&resp, 0, sizeof(resp));
	if (rc == ST_OK)
		rc = st__http_do(s->http, &q.r, &resp, err);
	if (rc == ST_OK && resp.status != 201) {
		char *ec = error_code(&resp);
		if (!(resp.status == 409 && ec && !strcmp(ec, "ContainerAlreadyExists")))
			rc = az_fail(s, &q, &resp, 0, err);
		free(ec);
	}
	st__http_resp_free(&resp);
	req_free(&q);
	return rc;
}

int st__azblob_container_delete(st_store *ss, st_error *err)
{
	az_store *s = (az_store *)ss;
	az_req q;
	st_http_resp resp;
	int rc = req_init(&q, s, "DELETE", "DeleteContainer", NULL, "restype=container", err);

	memset(&resp, 0, sizeof(resp));
	if (rc == ST_OK && (rc = run(s, &q, &resp, 202, err)) == 1)
		rc = az_fail(s, &q, &resp, ST_ENOTFOUND, err);
	st__http_resp_free(&resp);
	req_free(&q);
	return rc;
}

/* The container and prefix at the service (account and domain, or an emulator's address and
 * account); not the credentials. */
char *st__azblob_identity(const st_store *st)
{
	const az_store *s = (const az_store *)st;
	return st__identity_bucket("azblob", s->cfg.container, s->cfg.prefix, "service",
				   s->cfg.service);
}
