/*
 * The HTTP layer of the network stores over libcurl (see http.h for the contract and
 * doc/DESIGN.md, "The HTTP layer", for the reasons). One easy handle per client, reset before
 * each attempt (curl keeps its live connections, so requests to one host share one).
 */
#include "http.h"
#include "dl.h" /* libcurl (curl.h), through its table: loaded on first use */

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct st_http {
	const char *scheme;
	char *note; /* appended to every message (st__http_set_note), or NULL */
	CURL *curl;
	pthread_mutex_t mu;
	long connect_ms, timeout_ms, stall_ms, backoff_ms, backoff_max_ms;
	int retries;
	void (*request)(void *ctx, const char *method, const char *host, const char *path,
			long status);
	void *request_ctx;
	curl_socket_t sock; /* the socket libcurl opened last (ack_now), or CURL_SOCKET_BAD */
};

static unsigned long attempts_total, quick_acks;

unsigned long st__http_attempts(void)
{
	return __atomic_load_n(&attempts_total, __ATOMIC_RELAXED);
}

unsigned long st__http_quick_acks(void)
{
	return __atomic_load_n(&quick_acks, __ATOMIC_RELAXED);
}

/* ---- headers ---- */

static int hdr_grow(st_http_hdrs *h)
{
	if (h->n < h->cap)
		return 0;
	size_t cap = h->cap ? h->cap * 2 : 8;
	st_http_hdr *v = realloc(h->v, cap * sizeof(*v));
	if (!v)
		return -1;
	h->v = v;
	h->cap = cap;
	return 0;
}

int st__http_hdrs_add(st_http_hdrs *h, const char *name, const char *value, st_error *err)
{
	char *n, *v;
	if (hdr_grow(h) < 0 || !(n = st_strdup(name)))
		return st__err(err, ST_ENOMEM, "out of memory");
	if (!(v = st_strdup(value ? value : ""))) {
		free(n);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	h->v[h->n].name = n;
	h->v[h->n].value = v;
	h->n++;
	return ST_OK;
}

int st__http_hdrs_set(st_http_hdrs *h, const char *name, const char *value, st_error *err)
{
	for (size_t i = 0; i < h->n; i++) {
		if (strcasecmp(h->v[i].name, name))
			continue;
		char *v = st_strdup(value ? value : "");
		if (!v)
			return st__err(err, ST_ENOMEM, "out of memory");
		free(h->v[i].value);
		h->v[i].value = v;
		return ST_OK;
	}
	return st__http_hdrs_add(h, name, value, err);
}

const char *st__http_hdrs_get(const st_http_hdrs *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++)
		if (!strcasecmp(h->v[i].name, name))
			return h->v[i].value;
	return NULL;
}

static void hdrs_clear(st_http_hdrs *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->v[i].name);
		free(h->v[i].value);
	}
	h->n = 0;
}

void st__http_hdrs_free(st_http_hdrs *h)
{
	hdrs_clear(h);
	free(h->v);
	h->v = NULL;
	h->cap = 0;
}

void st__http_resp_free(st_http_resp *r)
{
	if (!r)
		return;
	st__http_hdrs_free(&r->headers);
	free(r->body);
	r->body = NULL;
	r->len = 0;
}

void st__hex(char *out, const unsigned char *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

/* ---- dates ---- */

static const char *const wdays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
				     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

void st__http_date(char out[32], time_t t)
{
	struct tm tm;
	gmtime_r(&t, &tm);
	snprintf(out, 32, "%s, %02d %s %04d %02d:%02d:%02d GMT", wdays[tm.tm_wday % 7], tm.tm_mday,
		 months[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

long long st__http_date_ns(const char *v)
{
	struct tm tm;
	char mon[4] = "", zone[4] = "";
	const char *comma = v ? strchr(v, ',') : NULL;
	memset(&tm, 0, sizeof(tm));
	if (!comma || sscanf(comma + 1, " %d %3s %d %d:%d:%d %3s", &tm.tm_mday, mon, &tm.tm_year,
			     &tm.tm_hour, &tm.tm_min, &tm.tm_sec, zone) != 7 ||
	    strcmp(zone, "GMT"))
		return 0;
	tm.tm_mon = -1;
	for (int i = 0; i < 12; i++)
		if (!strcmp(mon, months[i]))
			tm.tm_mon = i;
	/* in range (timegm would carry a 32nd day on), and within the nanoseconds a long long
	 * holds (years 1970 to 2261) */
	if (tm.tm_mon < 0 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_year < 1970 ||
	    tm.tm_year > 2261 || tm.tm_hour < 0 || tm.tm_hour > 23 || tm.tm_min < 0 ||
	    tm.tm_min > 59 || tm.tm_sec < 0 || tm.tm_sec > 60)
		return 0;
	tm.tm_year -= 1900;
	return (long long)timegm(&tm) * 1000000000LL;
}

/* ---- URLs, for messages and the log ---- */

/* Where the authority of a URL starts and ends (after "scheme://" and any "user@"). */
static void authority(const char *url, const char **start, const char **end)
{
	const char *p = strstr(url, "://");
	p = p ? p + 3 : url;
	const char *e = p + strcspn(p, "/?#");
	const char *at = memchr(p, '@', (size_t)(e - p));
	*start = at ? at + 1 : p;
	*end = e;
}

char *st__http_host(const char *url)
{
	const char *s, *e;
	authority(url, &s, &e);
	return st_strndup(s, (size_t)(e - s));
}

/* The path of a URL without its query string, new. */
static char *url_path(const char *url)
{
	const char *s, *e;
	authority(url, &s, &e);
	if (*e != '/')
		return st_strdup("/");
	return st_strndup(e, strcspn(e, "?#"));
}

const char *st__http_scheme(const st_http *h) { return h->scheme; }

int st__http_set_note(st_http *h, const char *note, st_error *err)
{
	char *n = NULL;
	if (note && *note && !(n = st_strdup(note)))
		return st__err(err, ST_ENOMEM, "out of memory");
	free(h->note);
	h->note = n;
	return ST_OK;
}

/* "; NOTE" when the client has a note, else "" (borrowed). */
static const char *note_sep(const st_http *h) { return h->note ? "; " : ""; }
static const char *note_text(const st_http *h) { return h->note ? h->note : ""; }

/* ---- the client ---- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
	if (sodium_init() < 0)
		global_rc = CURLE_FAILED_INIT;
}

/* The process-wide settings (st_set_net). */
static pthread_mutex_t net_mu = PTHREAD_MUTEX_INITIALIZER;
static st_net_opts net = ST_NET_OPTS_INIT;

int st_set_net(const st_net_opts *o, st_error *err)
{
	static const st_net_opts def = ST_NET_OPTS_INIT;
	int rc;

	if (o && (rc = st__opts_version(o->version, ST_NET_OPTS_VERSION, "st_net_opts", err)) != ST_OK)
		return rc;
	if (o && (o->connect_timeout_ms < 0 || o->timeout_ms < 0 || o->backoff_ms < 0 ||
		  o->retries < -1 || o->retries > 100))
		return st__err(err, ST_EINVAL, "st_net_opts: a negative duration or a retry count "
					       "outside -1..100");
	pthread_mutex_lock(&net_mu);
	net = o ? *o : def;
	pthread_mutex_unlock(&net_mu);
	return ST_OK;
}

static st_net_opts net_current(void)
{
	st_net_opts o;
	pthread_mutex_lock(&net_mu);
	o = net;
	pthread_mutex_unlock(&net_mu);
	return o;
}

void st__net_current(st_net_opts *out)
{
	*out = net_current();
}

int st__http_new(st_http **out, const char *scheme, const st_http_opts *opts, st_error *err)
{
	st_http *h;

	*out = NULL;
	if (st__curl_load(scheme, err) != ST_OK) /* the library, on first use */
		return ST_EUNSUPPORTED;
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return st__err(err, ST_EIO, "%s: cannot initialise libcurl: %s", scheme,
			       curl_easy_strerror(global_rc));
	if (!(h = calloc(1, sizeof(*h))))
		return st__err(err, ST_ENOMEM, "out of memory");
	h->scheme = scheme;
	h->sock = CURL_SOCKET_BAD;
	if (!(h->curl = curl_easy_init())) {
		free(h);
		return st__err(err, ST_ENOMEM, "%s: cannot create a libcurl handle", scheme);
	}
	pthread_mutex_init(&h->mu, NULL);
	st_net_opts n = net_current();
	h->connect_ms = n.connect_timeout_ms ? n.connect_timeout_ms : 10000;
	h->timeout_ms = n.timeout_ms ? n.timeout_ms : 600000;
	h->stall_ms = 60000;
	h->retries = n.retries >= 0 ? n.retries : 4;
	h->backoff_ms = n.backoff_ms ? n.backoff_ms : 200;
	h->backoff_max_ms = 5000;
	h->request = n.request;
	h->request_ctx = n.ctx;
	if (opts) {
		if (opts->connect_timeout_ms)
			h->connect_ms = opts->connect_timeout_ms;
		if (opts->timeout_ms)
			h->timeout_ms = opts->timeout_ms;
		if (opts->stall_ms)
			h->stall_ms = opts->stall_ms;
		if (opts->retries >= 0)
			h->retries = opts->retries;
		if (opts->backoff_ms)
			h->backoff_ms = opts->backoff_ms;
		if (opts->backoff_max_ms)
			h->backoff_max_ms = opts->backoff_max_ms;
	}
	/* a stall never outlasts the whole attempt */
	if (h->timeout_ms && h->stall_ms > h->timeout_ms)
		h->stall_ms = h->timeout_ms;
	*out = h;
	return ST_OK;
}

void st__http_free(st_http *h)
{
	if (!h)
		return;
	curl_easy_cleanup(h->curl);
	pthread_mutex_destroy(&h->mu);
	free(h->note);
	free(h);
}

/* ---- one attempt ---- */

typedef struct attempt {
	st_http *h;
	const st_http_req *req;
	st_http_resp *resp;
	st_buf body;
	size_t max;
	int too_big;
	int oom;
	size_t up_off; /* the upload's position */
	int up_errno;  /* a failed read of the body's file */
	int sent;      /* request lines sent (libcurl may send a request again by itself) */
	size_t sized, faulted; /* the body's buffer as the Content-Length sized it; present */
} attempt;

/* Counts the request lines libcurl sends: on a kept-alive connection that dies before any
 * answer, libcurl sends the request again on a new one within the same attempt, so the first
 * may have been carried out. Only the type and the first bytes are looked at; nothing is kept
 * or printed (headers hold credentials). */
static int on_debug(CURL *c, curl_infotype type, char *p, size_t n, void *ctx)
{
	attempt *a = ctx;
	size_t m = strlen(a->req->method);
	(void)c;
	if (type == CURLINFO_HEADER_OUT && n > m && !memcmp(p, a->req->method, m) && p[m] == ' ')
		a->sent++;
	return 0;
}

/* The socket of the connection: libcurl tells when it opens and closes one (it gives no socket
 * inside a header callback). A client talks to one host at a time; with two (gs: the token
 * endpoint and the API), the last opened may be the other, and ack_now then does nothing. */
static int on_sockopt(void *ctx, curl_socket_t fd, curlsocktype purpose)
{
	st_http *h = ctx;
	if (purpose == CURLSOCKTYPE_IPCXN)
		h->sock = fd;
	return CURL_SOCKOPT_OK;
}

static int on_close(void *ctx, curl_socket_t fd)
{
	st_http *h = ctx;
	if (fd == h->sock)
		h->sock = CURL_SOCKET_BAD;
	return close(fd);
}

/* At the end of an answer's headers: acknowledges them at once. A server with Nagle's algorithm
 * on (radosgw) holds a body written apart from its headers (a listing's chunked body) until
 * the headers are acknowledged, and Linux delays that ACK by up to 40 ms hoping for data to
 * carry it: each listing stalled that long. Setting TCP_QUICKACK sends the pending ACK now. */
static void ack_now(st_http *h)
{
#ifdef TCP_QUICKACK
	int one = 1;
	if (h->sock != CURL_SOCKET_BAD &&
	    setsockopt(h->sock, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one)) == 0)
		__atomic_add_fetch(&quick_acks, 1, __ATOMIC_RELAXED);
#else
	(void)h;
#endif
}

static size_t on_header(char *p, size_t size, size_t nitems, void *ctx)
{
	attempt *a = ctx;
	size_t n = size * nitems, len = n;
	char *colon, *name, *value;

	while (len && (p[len - 1] == '\r' || p[len - 1] == '\n'))
		len--;
	if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
		/* a new answer (after a 100 Continue): only the last one's headers count */
		hdrs_clear(&a->resp->headers);
		return n;
	}
	if (!len) /* the end of the headers */
		ack_now(a->h);
	if (!len || !(colon = memchr(p, ':', len)))
		return n;
	name = st_strndup(p, (size_t)(colon - p));
	const char *v = colon + 1, *e = p + len;
	while (v < e && (*v == ' ' || *v == '\t'))
		v++;
	while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	value = st_strndup(v, (size_t)(e - v));
	if (!name || !value) {
		free(name);
		free(value);
		a->oom = 1;
		return 0;
	}
	for (char *c = name; *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
	if (!strcmp(name, "content-length") && strcmp(a->req->method, "HEAD")) {
		/* one allocation of the right size instead of doubling up to it */
		unsigned long long cl = strtoull(value, NULL, 10);
		if (cl > a->max)
			a->too_big = 1;
		else if (!a->body.data && (a->body.data = malloc((size_t)cl + 1))) {
			a->body.cap = a->sized = (size_t)cl + 1;
			a->body.data[0] = '\0';
		}
	}
	if (st__http_hdrs_add(&a->resp->headers, name, value, NULL) != ST_OK)
		a->oom = 1;
	free(name);
	free(value);
	return a->oom || a->too_big ? 0 : n;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ctx)
{
	attempt *a = ctx;
	size_t n = size * nmemb;
	if (a->body.len + n > a->max) {
		a->too_big = 1;
		return 0;
	}
	if (a->sized && a->body.cap == a->sized && a->body.len + n <= a->sized) /* no page faults */
		st__prefault_ahead(a->body.data, a->sized, &a->faulted, a->body.len + n);
	st_buf_add(&a->body, p, n);
	if (a->body.oom) {
		a->oom = 1;
		return 0;
	}
	return n;
}

static size_t on_upload(char *buf, size_t size, size_t nitems, void *ctx)
{
	attempt *a = ctx;
	const st_http_req *r = a->req;
	size_t n = size * nitems, left = r->body_len - a->up_off;
	if (n > left)
		n = left;
	if (!n)
		return 0;
	if (r->body_fd >= 0) {
		ssize_t got;
		do
			got = pread(r->body_fd, buf, n, (off_t)(r->body_off + (long long)a->up_off));
		while (got < 0 && errno == EINTR);
		if (got <= 0) {
			a->up_errno = got < 0 ? errno : EIO;
			return CURL_READFUNC_ABORT;
		}
		n = (size_t)got;
	} else {
		memcpy(buf, (const char *)r->body + a->up_off, n);
	}
	a->up_off += n;
	return n;
}

static int on_seek(void *ctx, curl_off_t offset, int origin)
{
	attempt *a = ctx;
	if (origin != SEEK_SET || offset < 0 || (size_t)offset > a->req->body_len)
		return CURL_SEEKFUNC_FAIL;
	a->up_off = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

/* The header list of an attempt: the request's, then the signer's (*l NULL when there are
 * none). -1 when out of memory. */
static int header_list(const st_http_req *r, const st_http_hdrs *extra, struct curl_slist **out)
{
	struct curl_slist *l = NULL, *t;
	const st_http_hdrs *sets[2] = {&r->headers, extra};
	int has_body = r->body || r->body_fd >= 0;

	for (int s = 0; s < 2; s++) {
		for (size_t i = 0; i < sets[s]->n; i++) {
			char *line = st_asprintf("%s: %s", sets[s]->v[i].name, sets[s]->v[i].value);
			if (!line || !(t = curl_slist_append(l, line))) {
				free(line);
				curl_slist_free_all(l);
				return -1;
			}
			free(line);
			l = t;
		}
	}
	/* "Expect: 100-continue" costs a round trip (or a second when the server ignores it):
	 * worth it only before a large body the server may refuse */
	if (has_body && r->body_len < (1u << 20) && !st__http_hdrs_get(&r->headers, "Expect")) {
		if (!(t = curl_slist_append(l, "Expect:"))) {
			curl_slist_free_all(l);
			return -1;
		}
		l = t;
	}
	*out = l;
	return 0;
}

static void set_options(st_http *h, attempt *a, struct curl_slist *hl, char *errbuf)
{
	CURL *c = h->curl;
	const st_http_req *r = a->req;
	int has_body = r->body || r->body_fd >= 0;

	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, r->url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->connect_ms);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->timeout_ms);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, h->stall_ms >= 1000 ? h->stall_ms / 1000 : 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_SOCKOPTFUNCTION, on_sockopt);
	curl_easy_setopt(c, CURLOPT_SOCKOPTDATA, h);
	curl_easy_setopt(c, CURLOPT_CLOSESOCKETFUNCTION, on_close);
	curl_easy_setopt(c, CURLOPT_CLOSESOCKETDATA, h);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(c, CURLOPT_DEBUGFUNCTION, on_debug);
	curl_easy_setopt(c, CURLOPT_DEBUGDATA, a);
	curl_easy_setopt(c, CURLOPT_VERBOSE, 1L);
	if (!strcmp(r->method, "HEAD")) {
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	} else if (has_body || !strcmp(r->method, "PUT") || !strcmp(r->method, "POST")) {
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)(has_body ? r->body_len : 0));
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_upload);
		curl_easy_setopt(c, CURLOPT_READDATA, a);
		curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(c, CURLOPT_SEEKDATA, a);
		if (strcmp(r->method, "PUT"))
			curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
	} else if (strcmp(r->method, "GET")) {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
	} else { /* 512 KiB reads, not 16 KiB: 400 instead of 11,000 for a 185 MB object */
		curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 512L << 10);
	}
}

/* The request hook (st_net_opts.request): never a query string or a header. */
static void report_attempt(const st_http *h, const st_http_req *r, long status)
{
	char *host, *path;
	if (!h->request)
		return;
	host = st__http_host(r->url);
	path = url_path(r->url);
	if (host && path)
		h->request(h->request_ctx, r->method, host, path, status);
	free(host);
	free(path);
}

static int retryable_code(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return 1;
	default:
		return 0;
	}
}

static int retryable_status(long status)
{
	return status == 408 || status == 429 || status == 500 || status == 502 ||
	       status == 503 || status == 504;
}

/* Sleeps before attempt number `next` (2, 3, ...): exponential, with jitter, at least what
 * Retry-After asks (within the cap). */
static void backoff(const st_http *h, int next, const st_http_resp *resp)
{
	long d = h->backoff_ms;
	for (int i = 2; i < next && d < h->backoff_max_ms; i++)
		d *= 2;
	if (d > h->backoff_max_ms)
		d = h->backoff_max_ms;
	if (d > 1)
		d = d / 2 + (long)randombytes_uniform((uint32_t)(d / 2 + 1));
	const char *ra = resp ? st__http_hdrs_get(&resp->headers, "retry-after") : NULL;
	if (ra) {
		char *end;
		long s = strtol(ra, &end, 10);
		if (!*end && s > 0) {
			long want = s > h->backoff_max_ms / 1000 ? h->backoff_max_ms : s * 1000;
			if (want > d)
				d = want;
		}
	}
	struct timespec ts = {d / 1000, (d % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* libcurl's message with a first lowercase letter and anything that could be part of the URL's
 * query string cut off (curl's messages name hosts, not queries; this makes sure). */
static void tidy_message(char *msg, const char *url)
{
	const char *q = strchr(url, '?');
	static const char *const marks[] = {"?", "Signature=", "signature=", "sig=", "token=",
					    "Credential="};
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		char *m = strstr(msg, marks[i]);
		if (m)
			*m = '\0';
	}
	if (q && q[1] && strlen(q + 1) >= 8) {
		char *m = strstr(msg, q + 1);
		if (m)
			*m = '\0';
	}
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == ' ' || msg[n - 1] == ':' || msg[n - 1] == '\n'))
		msg[--n] = '\0';
	if (msg[0] >= 'A' && msg[0] <= 'Z' && !(msg[1] >= 'A' && msg[1] <= 'Z'))
		msg[0] = (char)(msg[0] - 'A' + 'a');
}

/* The error of an attempt that got no answer. */
static int transport_error(st_http *h, const st_http_req *r, CURLcode rc, char *errbuf,
			   int attempts, st_error *err)
{
	char *host = st__http_host(r->url);
	const char *t = r->target ? r->target : "";
	char tries[32] = "";
	int code = ST_EIO;

	if (!host)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (!errbuf[0])
		snprintf(errbuf, CURL_ERROR_SIZE, "%s", curl_easy_strerror(rc));
	tidy_message(errbuf, r->url);
	if (attempts > 1)
		snprintf(tries, sizeof(tries), " (%d attempts)", attempts);
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		st__err(err, code, "%s: cannot reach %s (%s '%s'): %s%s%s%s", h->scheme, host, r->op,
			t, errbuf, tries, note_sep(h), note_text(h));
		break;
	case CURLE_OPERATION_TIMEDOUT:
		st__err(err, code, "%s: %s did not answer in time (%s '%s'): %s%s%s%s", h->scheme,
			host, r->op, t, errbuf, tries, note_sep(h), note_text(h));
		break;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
		st__err(err, code, "%s: TLS with %s failed (%s '%s'): %s%s%s%s", h->scheme, host,
			r->op, t, errbuf, tries, note_sep(h), note_text(h));
		break;
	default:
		st__err(err, code, "%s: %s '%s' on %s failed: %s%s%s%s", h->scheme, r->op, t, host,
			errbuf, tries, note_sep(h), note_text(h));
	}
	free(host);
	return code;
}

#define NO_ANSWER 1

/* One attempt: ST_OK with an answer in resp, NO_ANSWER without one (*crc and errbuf say why),
 * or an error code (err set) that ends the request. */
static int attempt_once(st_http *h, const st_http_req *r, st_http_resp *resp, char *errbuf,
			CURLcode *crc, st_error *err)
{
	attempt a;
	st_http_hdrs extra = {NULL, 0, 0};
	struct curl_slist *hl = NULL;
	int rc = ST_OK;

	memset(&a, 0, sizeof(a));
	a.h = h;
	a.req = r;
	a.resp = resp;
	a.max = r->max_body ? r->max_body : ST_DEFAULT_MAX_FILE;
	st_buf_init(&a.body);
	hdrs_clear(&resp->headers);
	resp->status = 0;
	if (r->sign && (rc = r->sign(r->sign_ctx, r, &extra, err)) != ST_OK) {
		st__http_hdrs_free(&extra);
		return rc;
	}
	if (header_list(r, &extra, &hl) < 0) {
		st__http_hdrs_free(&extra);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	errbuf[0] = '\0';
	set_options(h, &a, hl, errbuf);
	__atomic_add_fetch(&attempts_total, 1, __ATOMIC_RELAXED);
	*crc = curl_easy_perform(h->curl);
	if (*crc == CURLE_OK)
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &resp->status);
	report_attempt(h, r, *crc == CURLE_OK ? resp->status : 0);
	if (a.sent > 1)
		resp->maybe_done = 1;
	curl_slist_free_all(hl);
	st__http_hdrs_free(&extra);
	if (a.oom) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
	} else if (a.too_big) {
		char *host = st__http_host(r->url);
		rc = st__err(err, ST_ELIMIT, "%s: the answer to %s '%s' from %s is larger than %zu bytes",
			     h->scheme, r->op, r->target ? r->target : "", host ? host : "?", a.max);
		free(host);
	} else if (a.up_errno) {
		rc = st__err(err, ST_EIO, "%s: cannot read what %s '%s' sends: %s", h->scheme, r->op,
			     r->target ? r->target : "", strerror(a.up_errno));
	} else if (*crc != CURLE_OK) {
		rc = NO_ANSWER;
	}
	if (rc == ST_OK) {
		size_t len;
		char *body = st_buf_take(&a.body, &len);
		if (!body)
			return st__err(err, ST_ENOMEM, "out of memory");
		body[len] = '\0'; /* (the Content-Length allocation may have got no byte) */
		free(resp->body);
		resp->body = body;
		resp->len = len;
		return ST_OK;
	}
	st_buf_free(&a.body);
	return rc;
}

int st__http_do(st_http *h, const st_http_req *r, st_http_resp *resp, st_error *err)
{
	char errbuf[CURL_ERROR_SIZE];
	int max_attempts = (r->flags & (ST_HTTP_RETRY | ST_HTTP_RETRY_REFUSED)) ? 1 + h->retries : 1;
	int any = (r->flags & ST_HTTP_RETRY) != 0;
	int rc = ST_OK;
	CURLcode crc = CURLE_OK;

	memset(resp, 0, sizeof(*resp));
	pthread_mutex_lock(&h->mu);
	for (int n = 1;; n++) {
		resp->attempts = n;
		rc = attempt_once(h, r, resp, errbuf, &crc, err);
		int again = n < max_attempts;
		if (rc == ST_OK) {
			if (!retryable_status(resp->status) || !again ||
			    (!any && resp->status != 429))
				break;
			if (resp->status != 429 && resp->status != 503)
				resp->maybe_done = 1;
		} else if (rc == NO_ANSWER) {
			if (!retryable_code(crc) || !again || (!any && crc != CURLE_COULDNT_CONNECT)) {
				rc = transport_error(h, r, crc, errbuf, n, err);
				break;
			}
			if (crc != CURLE_COULDNT_CONNECT)
				resp->maybe_done = 1;
		} else {
			break; /* ST_ENOMEM, ST_ELIMIT, the signer's error... set by the attempt */
		}
		backoff(h, n + 1, rc == ST_OK ? resp : NULL);
	}
	pthread_mutex_unlock(&h->mu);
	if (rc == ST_OK && !resp->body && !(resp->body = calloc(1, 1)))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	return rc;
}

int st__http_fail(st_http *h, const st_http_req *r, const st_http_resp *resp, int code,
		  const char *detail, st_error *err)
{
	char *host = st__http_host(r->url);
	char tries[32] = "";

	if (!code) {
		switch (resp->status) {
		case 401:
		case 403: code = ST_EAUTH; break;
		case 404: code = ST_ENOTFOUND; break;
		case 409:
		case 412: code = ST_ECONFLICT; break;
		case 400: code = ST_EINVAL; break;
		default: code = ST_EIO;
		}
	}
	if (resp->attempts > 1)
		snprintf(tries, sizeof(tries), " (%d attempts)", resp->attempts);
	st__err(err, code, "%s: %s '%s' on %s failed: HTTP %ld%s%s%s%s%s", h->scheme, r->op,
		r->target ? r->target : "", host ? host : "?", resp->status,
		detail && *detail ? " " : "", detail ? detail : "", tries, note_sep(h),
		note_text(h));
	free(host);
	return code;
}

/* ---- spools ---- */

struct st_spool {
	int fd;
	long long size;
	crypto_hash_sha256_state sha;
};

int st__spool_new(st_spool **out, st_error *err)
{
	const char *dir = getenv("TMPDIR");
	st_spool *s;

	*out = NULL;
	if (!dir || !*dir)
		dir = "/tmp";
	if (!(s = calloc(1, sizeof(*s))))
		return st__err(err, ST_ENOMEM, "out of memory");
#ifdef O_TMPFILE
	s->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#else
	s->fd = -1;
#endif
	if (s->fd < 0) {
		char *tmpl = st_asprintf("%s/statetool-spool-XXXXXX", dir);
		if (!tmpl) {
			free(s);
			return st__err(err, ST_ENOMEM, "out of memory");
		}
		s->fd = mkostemp(tmpl, O_CLOEXEC);
		if (s->fd >= 0)
			unlink(tmpl);
		free(tmpl);
	}
	if (s->fd < 0) {
		int e = errno;
		free(s);
		return st__err(err, ST_EIO, "cannot create a temporary file in '%s': %s", dir,
			       strerror(e));
	}
	crypto_hash_sha256_init(&s->sha);
	*out = s;
	return ST_OK;
}

int st__spool_write(st_spool *s, const void *p, size_t n, st_error *err)
{
	if (st__write_full(s->fd, p, n) < 0)
		return st__err(err, ST_EIO, "cannot write a temporary file: %s", strerror(errno));
	crypto_hash_sha256_update(&s->sha, p, n);
	s->size += (long long)n;
	return ST_OK;
}

void st__spool_finish(st_spool *s, long long *size, char sha256_hex[65])
{
	unsigned char d[crypto_hash_sha256_BYTES];
	crypto_hash_sha256_final(&s->sha, d);
	st__hex(sha256_hex, d, sizeof(d));
	*size = s->size;
}

int st__spool_fd(const st_spool *s) { return s->fd; }

int st__spool_read(st_spool *s, size_t max, char **out, size_t *len, st_error *err)
{
	*out = NULL;
	*len = 0;
	if ((unsigned long long)s->size > max)
		return st__err(err, ST_ELIMIT, "the data is larger than %zu bytes", max);
	char *p = malloc((size_t)s->size + 1);
	if (!p)
		return st__err(err, ST_ENOMEM, "out of memory");
	size_t off = 0;
	while (off < (size_t)s->size) {
		ssize_t got = pread(s->fd, p + off, (size_t)s->size - off, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			free(p);
			return st__err(err, ST_EIO, "cannot read a temporary file: %s",
				       got < 0 ? strerror(errno) : "it is shorter than written");
		}
		off += (size_t)got;
	}
	p[off] = '\0';
	*out = p;
	*len = off;
	return ST_OK;
}

void st__spool_free(st_spool *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}

/* ---- the spooled writer ---- */

int st__spooled_begin(st_store *st, const char *key, const st_store_write_opts *opts,
		      size_t size, st_store_writer **out, st_error *err)
{
	st__spooled_writer *w = calloc(1, size);
	int rc;

	*out = NULL;
	if (!w || !(w->key = st_strdup(key))) {
		free(w);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	if ((rc = st__spool_new(&w->spool, err)) != ST_OK) {
		st__spooled_free(&w->base);
		return rc;
	}
	w->base.store = st;
	w->base.fd = -1;
	w->flags = opts->flags;
	*out = &w->base;
	return ST_OK;
}

int st__spooled_chunk(st_store_writer *sw, const void *p, size_t n, st_error *err)
{
	return st__spool_write(((st__spooled_writer *)sw)->spool, p, n, err);
}

int st__spooled_finish(st_store_writer *sw, st_error *err)
{
	st__spooled_writer *w = (st__spooled_writer *)sw;
	(void)err;
	st__spool_finish(w->spool, &w->size, w->sha);
	return ST_OK;
}

void st__spooled_free(st_store_writer *sw)
{
	st__spooled_writer *w = (st__spooled_writer *)sw;
	st__spool_free(w->spool);
	free(w->key);
	free(w);
}

int st__store_is_ours(st_store *s, const char *key, long long size, const char sha[65])
{
	char *data = NULL, hex[65];
	size_t len = 0;
	unsigned char d[crypto_hash_sha256_BYTES];
	if (s->ops->read(s, key, (size_t)size + 1, &data, &len, NULL, NULL) != ST_OK)
		return 0;
	crypto_hash_sha256(d, (unsigned char *)data, len);
	free(data);
	st__hex(hex, d, sizeof(d));
	return (long long)len == size && !strcmp(hex, sha);
}
