/*
 * The HTTP layer of the network stores (s3, azblob, gs; private to lib/store): one request at a
 * time over libcurl, with what every store needs and nothing of any one store's protocol.
 * See doc/DESIGN.md, "Storage", "The HTTP layer".
 *
 *   st__http_new(&h, "s3", ...)            a client: one connection kept alive, settings
 *   st_http_req r = ST_HTTP_REQ_INIT;      method, URL, headers, body (bytes or a file),
 *   r.method = "GET"; r.url = ...;         what it is for messages (op, target), retry flag,
 *   r.op = "GetObject"; r.target = key;    a signing callback run before every attempt
 *   st__http_do(h, &r, &resp, err)         -> ST_OK and resp.status for every HTTP answer;
 *                                             ST_EIO / ST_ELIMIT / ... for no answer
 *   st__http_fail(h, &r, &resp, code, detail, err)   the message for an answer the store refuses
 *
 * Rules every caller relies on:
 *  - Retries: with ST_HTTP_RETRY, an attempt that got no answer (connection refused or reset,
 *    a time-out, a body cut short) or got 408, 429, 500, 502, 503 or 504 is repeated, at most
 *    `retries` more times, after an exponential back-off with jitter (Retry-After honoured up to
 *    the cap). Set it on idempotent requests (GET, HEAD, DELETE, a PUT of a whole object, a
 *    copy), never on one that must not happen twice. The body is sent again from its start; the
 *    signing callback runs again (a new date, a new signature).
 *  - Time-outs: connect (default 10 s), whole attempt (default 600 s), and a stall (no byte
 *    moving for 60 s). st_set_net (statetool.h) changes them, and the retries, for the clients
 *    made after it (the CLI maps STATETOOL_HTTP_* onto it; the library reads no STATETOOL_*
 *    variable).
 *  - TLS: libcurl's defaults (certificates and host names verified); proxies from the
 *    environment as libcurl reads them (http_proxy, https_proxy, no_proxy...).
 *  - Secrets: nothing here ever puts a URL's query string, a header's value or a body into a
 *    message or a log. Messages name the scheme, the host (and port), the operation and the
 *    target: "s3: cannot reach 127.0.0.1:9 (GetObject 'b/k'): connection refused (4 attempts)".
 *    `target` must itself be safe to print (a bucket and a key).
 *  - st_net_opts.request (a test hook, also a debugging aid) is called after each attempt with
 *    the method, host, path without its query string and status (0: no answer); the CLI
 *    writes it to STATETOOL_HTTP_LOG.
 *  - A client serves one request at a time (a mutex makes concurrent calls wait).
 */
#ifndef ST_HTTP_H
#define ST_HTTP_H

#include "internal.h"
#include "store_impl.h"

#include <stddef.h>
#include <time.h>

/* One header: name and value as sent or received (received names are lowercase). */
typedef struct st_http_hdr {
	char *name;
	char *value;
} st_http_hdr;

typedef struct st_http_hdrs {
	st_http_hdr *v;
	size_t n, cap;
} st_http_hdrs;

/* Appends a header (both strings copied). ST_OK or ST_ENOMEM (err set). */
int st__http_hdrs_add(st_http_hdrs *h, const char *name, const char *value, st_error *err);
/* Sets a header: replaces the value of the first one of that name (any case), else adds. */
int st__http_hdrs_set(st_http_hdrs *h, const char *name, const char *value, st_error *err);
/* The value of the first header named `name` (any case), borrowed; NULL when absent. */
const char *st__http_hdrs_get(const st_http_hdrs *h, const char *name);
void st__http_hdrs_free(st_http_hdrs *h);

typedef struct st_http_req st_http_req;

/* Called before each attempt: adds what depends on the moment (a date, a signature) to
 * `extra`, which is sent after req->headers and emptied after the attempt. */
typedef int (*st_http_sign_fn)(void *ctx, const st_http_req *req, st_http_hdrs *extra,
			       st_error *err);

#define ST_HTTP_RETRY 1u /* the request may be repeated (see above) */
/* a request that must not happen twice, repeated only when the server said it did not act on
 * it (429) or it was never sent (connection refused) */
#define ST_HTTP_RETRY_REFUSED 2u

struct st_http_req {
	const char *method;  /* "GET", "HEAD", "PUT", "POST", "DELETE", ... */
	const char *url;     /* scheme://host[:port]/path[?query]; may hold a signature: never
			      * printed */
	const char *op;      /* the operation, for messages ("GetObject") */
	const char *target;  /* what it acts on, for messages ("bucket/key"); may be NULL */
	st_http_hdrs headers;
	/* The body: none, body[0..body_len), or body_len bytes of body_fd from body_off (read with
	 * pread, so every attempt sends the same bytes). */
	const void *body;
	size_t body_len;
	int body_fd;         /* -1: none */
	unsigned flags;      /* ST_HTTP_* */
	size_t max_body;     /* the most the answer's body may hold (0: ST_DEFAULT_MAX_FILE);
			      * beyond: ST_ELIMIT */
	st_http_sign_fn sign; /* may be NULL */
	void *sign_ctx;
	long long body_off;  /* with body_fd: where the body starts in the file (a part of a
			      * spool: a block, a multipart part) */
};

#define ST_HTTP_REQ_INIT {NULL, NULL, NULL, NULL, {NULL, 0, 0}, NULL, 0, -1, 0, 0, NULL, NULL, 0}

/* The answer to a request. */
typedef struct st_http_resp {
	long status;          /* the HTTP status of the last attempt */
	st_http_hdrs headers; /* its headers, names lowercase */
	char *body;           /* its body, NUL-terminated (never NULL after st__http_do) */
	size_t len;
	int attempts;         /* how many attempts were made */
	/* an earlier attempt may have reached the server and been carried out although its
	 * answer was lost (a create-only write then finds its own object); also set when libcurl
	 * sent the request again by itself (a kept-alive connection that died before answering) */
	int maybe_done;
} st_http_resp;

void st__http_resp_free(st_http_resp *r);

typedef struct st_http st_http;

/* Settings of one client, over the process-wide ones (0 fields: those; for the tests). */
typedef struct st_http_opts {
	long connect_timeout_ms;
	long timeout_ms;
	long stall_ms;
	int retries;          /* repeats after the first attempt; -1: the default */
	long backoff_ms;      /* the first back-off */
	long backoff_max_ms;  /* the longest */
} st_http_opts;

/* A client for store `scheme` ("s3", borrowed: a string constant). *out is new:
 * st__http_free. `opts` may be NULL. */
int st__http_new(st_http **out, const char *scheme, const st_http_opts *opts, st_error *err);
void st__http_free(st_http *h);

/* Runs a request (with its retries). ST_OK once an HTTP answer is there, whatever its status:
 * resp (emptied first; free it with st__http_resp_free, also after an error) holds it, and a
 * status the caller does not want goes to st__http_fail. Without an answer: ST_EIO (the
 * message says why: unreachable, timed out, TLS...), ST_ELIMIT (the body is too large),
 * ST_ENOMEM, or what the signing callback returned. */
int st__http_do(st_http *h, const st_http_req *req, st_http_resp *resp, st_error *err);


/* Sets err for an answer the store refuses and returns `code` (0: chosen from the status:
 * 401/403 ST_EAUTH, 404 ST_ENOTFOUND, 409/412 ST_ECONFLICT, 400 ST_EINVAL, else ST_EIO):
 *   "<scheme>: <op> '<target>' on <host> failed: HTTP <status>[ <detail>][ (N attempts)]"
 * `detail` (may be NULL) is the store's own error code and message, already safe to print. */
int st__http_fail(st_http *h, const st_http_req *req, const st_http_resp *resp, int code,
		  const char *detail, st_error *err);

/* The host (and :port) of a URL, new, for messages; NULL when out of memory. */
char *st__http_host(const char *url);

/* The scheme of a client (borrowed). */
const char *st__http_scheme(const st_http *h);

/* A note appended to every message of this client after "; " (copied; NULL or "": none): where
 * the store's endpoint and credentials came from, e.g. "credentials: Shared Key from
 * AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY". It must be safe to print (names, never values
 * of secrets). ST_OK or ST_ENOMEM. */
int st__http_set_note(st_http *h, const char *note, st_error *err);

/* How many attempts all clients made so far (for the tests). */
unsigned long st__http_attempts(void);
/* How many answers' headers were acknowledged at once (TCP_QUICKACK; for the tests). */
unsigned long st__http_quick_acks(void);

/*
 * Spools: where a store keeps the bytes of a write until they are sent (a temporary file,
 * already unlinked, under $TMPDIR or /tmp), with their SHA-256 as they go. A 190 MB state costs
 * disk, not memory, and a retry sends the same bytes again.
 */
typedef struct st_spool st_spool;

int st__spool_new(st_spool **out, st_error *err);
int st__spool_write(st_spool *s, const void *p, size_t n, st_error *err);
/* Ends the writing: the size and the SHA-256 (lowercase hex, 64 characters + NUL). */
void st__spool_finish(st_spool *s, long long *size, char sha256_hex[65]);
/* The spool's descriptor (for st_http_req.body_fd), borrowed. */
int st__spool_fd(const st_spool *s);
/* The bytes, when they are at most `max` (else ST_ELIMIT): *out new, NUL-terminated. */
int st__spool_read(st_spool *s, size_t max, char **out, size_t *len, st_error *err);
void st__spool_free(st_spool *s);

/*
 * The spooled writer of the network stores (s3, azblob, gs): the bytes go to a spool as they
 * come, and at finish its size and SHA-256 are known; the store's commit sends the spool. A
 * store whose writer needs more embeds this struct first in its own (azblob: its blocks).
 */
typedef struct st__spooled_writer {
	st_store_writer base;
	char *key;       /* new */
	unsigned flags;  /* st_store_write_opts.flags */
	st_spool *spool; /* new */
	long long size;  /* set by st__spooled_finish */
	char sha[65];    /* the bytes' SHA-256, lowercase hex; set by st__spooled_finish */
} st__spooled_writer;

/* A writer of `size` bytes (at least sizeof(st__spooled_writer), zeroed, the shared struct
 * first) for `key` of store `st`: *out new, freed by st__spooled_free. ST_OK, ST_ENOMEM or
 * ST_EIO (no temporary file). */
int st__spooled_begin(st_store *st, const char *key, const st_store_write_opts *opts,
		      size_t size, st_store_writer **out, st_error *err);
/* write_chunk: to the spool. */
int st__spooled_chunk(st_store_writer *w, const void *p, size_t n, st_error *err);
/* write_finish: sets size and sha; always ST_OK. */
int st__spooled_finish(st_store_writer *w, st_error *err);
/* Frees a spooled writer (also a write_abort: nothing was sent). */
void st__spooled_free(st_store_writer *w);

/* After a create-only write was refused: was it an earlier attempt of ours that got through
 * (its answer lost)? 1 when the object at `key` (read with the store's read op) holds exactly
 * `size` bytes whose SHA-256 is `sha` (lowercase hex), else 0 (also when it cannot be read). */
int st__store_is_ours(st_store *s, const char *key, long long size, const char sha[65]);

/* Lowercase hex of n bytes into out (2n + 1 bytes). */
void st__hex(char *out, const unsigned char *p, size_t n);

/* "Fri, 26 Jun 2015 23:39:12 GMT" (RFC 1123, whatever the locale) of t into out. */
void st__http_date(char out[32], time_t t);

/* An RFC 1123 date ("Wed, 12 Oct 2009 17:50:00 GMT": Last-Modified) in nanoseconds since the
 * epoch; 0 when it is none. */
long long st__http_date_ns(const char *v);

/* The process-wide settings of st_set_net (a copy), for the stores that are not HTTP ones
 * (postgres: its time-outs, retries and request hook). */
void st__net_current(st_net_opts *out);

#endif
