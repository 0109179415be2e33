/*
 * The HTTP layer (lib/store/http.c) against a small HTTP server of the test's own, on a thread
 * on 127.0.0.1, told what to do with each request it receives: answer, cut the body short,
 * close the connection, hang, or close half-way through the upload. It records what it got, so
 * each case checks the attempts, the headers the signer added to each, the bytes sent again on
 * a retry, and that no message and no log line holds a secret.
 */
#include "testutil.h"

#include "store/http.h"

#include "httpfake.h"

#include <time.h>

static st_http *client(int retries, long timeout_ms)
{
	st_http *h = NULL;
	st_http_opts o;
	memset(&o, 0, sizeof(o));
	o.retries = retries;
	o.timeout_ms = timeout_ms;
	o.backoff_ms = 1;
	o.backoff_max_ms = 5;
	assert_int_equal(st__http_new(&h, "test", &o, NULL), ST_OK);
	return h;
}

static char *url_of(const server *s, const char *path)
{
	return st_asprintf("http://127.0.0.1:%d%s", s->port, path);
}

/* ---- a signer that numbers its attempts ---- */

typedef struct signer {
	int calls;
	int fail_at; /* 0: never */
} signer;

static int sign_count(void *ctx, const st_http_req *req, st_http_hdrs *extra, st_error *err)
{
	signer *g = ctx;
	char n[16];
	(void)req;
	g->calls++;
	if (g->calls == g->fail_at)
		return st__err(err, ST_EAUTH, "test: no credentials");
	snprintf(n, sizeof(n), "%d", g->calls);
	return st__http_hdrs_add(extra, "X-Attempt", n, err);
}

/* ---- cases ---- */

static void test_get_and_headers(void **state)
{
	action acts[] = {{A_REPLY, 200, "ETag: \"abc\"\r\nX-Mixed-Case:  v  \r\n", "hello"}};
	server *s = server_start(acts, 1);
	st_http *h = client(2, 0);
	st_http_req r = ST_HTTP_REQ_INIT;
	st_http_resp resp;
	char *u = url_of(s, "/b/k?list-type=2");
	(void)state;
	r.method = "GET";
	r.url = u;
	r.op = "GetObject";
	r.target = "b/k";
	assert_int_equal(st__http_hdrs_add(&r.headers, "X-Custom", "one", NULL), ST_OK);
	assert_int_equal(st__http_hdrs_set(&r.headers, "x-custom", "two", NULL), ST_OK);
	assert_int_equal(st__http_do(h, &r, &resp, NULL), ST_OK);
	assert_int_equal(resp.status, 200);
	assert_int_equal(resp.len, 5);
	assert_string_equal(resp.body, "hello");
	assert_int_equal(resp.attempts, 1);
	assert_string_equal(st__http_hdrs_get(&resp.headers, "etag"), "\"abc\"");
	assert_string_equal(st__http_hdrs_get(&resp.headers, "X-MIXED-CASE"), "v");
	assert_null(st__http_hdrs_get(&resp.headers, "nothing"));
	assert_int_equal(s->nseen, 1);
	assert_string_equal(s->seen[0].method, "GET");
	assert_string_equal(s->seen[0].path, "/b/k?list-type=2");
	assert_non_null(strstr(s->seen[0].headers, "X-Custom: two\r\n"));
	assert_null(strstr(s->seen[0].headers, "one"));
	st__http_resp_free(&resp);
	st__http_hdrs_free(&r.headers);
	free(u);
	st__http_free(h);
	server_stop(s);
}

static void test_retry_then_success(void **state)
{
	action acts[] = {{A_REPLY, 500, NULL, "<Error/>"},
			 {A_REPLY, 503, "Retry-After: 0\r\n", ""},
			 {A_REPLY, 429, NULL, ""},
			 {A_REPLY, 200, NULL, "done"}};
	server *s = server_start(acts, 4);
	st_http *h = client(4, 0);
	st_http_req r = ST_HTTP_REQ_INIT;
	st_http_resp resp;
	signer g = {0, 0};
	char *u = url_of(s, "/b/k");
	unsigned long before = st__http_attempts();
	(void)state;
	r.method = "GET";
	r.url = u;
	r.op = "GetObject";
	r.flags = ST_HTTP_RETRY;
	r.sign = sign_count;
	r.sign_ctx = &g;
	assert_int_equal(st__http_do(h, &r, &resp, NULL), ST_OK);
	assert_int_equal(resp.status, 200);
	assert_string_equal(resp.body, "done");
	assert_int_equal(resp.attempts, 4);
	assert_int_equal(st__http_attempts() - before, 4);
	assert_int_equal(g.calls, 4);
	assert_int_equal(s->nseen, 4);
	/* each attempt signed again, only its own signature sent */
	for (int i = 0; i < 4; i++) {
		char want[32];
		snprintf(want, sizeof(want), "X-Attempt: %d\r\n", i + 1);
		assert_non_null(strstr(s->seen[i].headers, want));
		assert_null(strstr(strstr(s->seen[i].headers, "X-Attempt") + 9, "X-Attempt"));
	}
	st__http_resp_free(&resp);
	free(u);
	st__http_free(h);
	server_stop(s);
}

static void test_retries_bounded(void **state)
{
	action acts[] = {{A_REPLY, 500, NULL, "<Error><Code>InternalError</Code></Error>"}};
	server *s = server_start(acts, 1);
	st_http *h = client(2, 0);
	st_http_req r = ST_HTTP_REQ_INIT;
	st_http_resp resp;
	st_error err;
	char *u = url_of(s, "/b/k"), *want;
	(void)state;
	r.method = "GET";
	r.url = u;
	r.op = "GetObject";
	r.target = "b/k";
	r.flags = ST_HTTP_RETRY;
	assert_int_equal(st__http_do(h, &r, &resp, NULL), ST_OK);
	assert_int_equal(resp.status, 500);
	assert_int_equal(resp.attempts, 3);
	assert_int_equal(resp.maybe_done, 1);
	assert_int_equal(s->nseen, 3);
	st_error_clear(&err);
	assert_int_equal(st__http_fail(h, &r, &resp, 0, "InternalError", &err), ST_EIO);
	want = st_asprintf("test: GetObject 'b/k' on 127.0.0.1:%d failed: HTTP 500 InternalError "
			   "(3 attempts)",
			   s->port);
	assert_string_equal(err.message, want);
	free(want);
	st__http_resp_free(&resp);
	/* without the flag: one attempt */
	r.flags = 0;
	assert_int_equal(st__http_do(h, &r, &resp, NULL), ST_OK);
	assert_int_equal(resp.attempts, 1);
	assert_int_equal(s->nseen, 4);
	st_error_clear(&err);
	assert_int_equal(st__http_fail(h, &r, &resp, 0, NULL, &err), ST_EIO);
	assert_null(strstr(err.message, "attempts"));
	/* a client's note ends every message */
	assert_int_equal(st__http_set_note(h, "credentials from TEST_KEY", NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st__http_fail(h, &r, &resp, 0, "E", &err), ST_EIO);
	want = st_asprintf("test: GetObject 'b/k' on 127.0.0.1:%d failed: HTTP 500 E; credentials "
			   "from TEST_KEY",
			   s->port);
	assert_string_equal(err.message, want);
	free(want);
	assert_int_equal(st__http_set_note(h, NULL, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st__http_fail(h, &r, &resp, 0, "E", &err), ST_EIO);
	assert_null(strstr(err.message, ";"));
	st__http_resp_free(&resp);
	free(u);
	st__http_free(h);
	server_stop(s);
}

static void test_status_codes(void **state)
{
	static const struct {
		int status;
		int code;
	} map[] = {{403, ST_EAUTH}, {401, ST_EAUTH}, {404, ST_ENOTFOUND}, {412, ST_ECONFLICT},
		   {409, ST_ECONFLICT}, {400, ST_EINVAL}, {501, ST_EIO}};
	(void)state;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		action acts[] = {{A_REPLY, map[i].status, NULL, ""}};
		server *s = server_start(acts, 1);
		st_http *h = client(3, 0);
		st_http_req r = ST_HTTP_REQ_INIT;
		st_http_resp resp;
		char *u = url_of(s, "/x");
		r.method = "DELETE";
		r.url = u;
		r.op = "DeleteObject";
		r.flags = ST_HTTP_RETRY;
		assert_int_equal(st__http_do(h, &r, &resp, NULL), ST_OK);
		assert_int_equal(resp.status, map[i].status);
		assert_int_equal(resp.attempts, 1); /* none of these is retried */
		assert_int_equal(st__http_fail(h, &r, &resp, 0, NULL, NULL), map[i].code);
		assert_string_equal(s->seen[0].method, "DELETE");
		st__http_resp_free(&resp);
		free(u);
		st__http_free(h);
		server_stop(s);
	}
}

static void test_cut_body_and_close(void **state)
{
	action acts[] = {{A_CUT, 0, NULL, NULL}, {A_CLOSE, 0, NULL, NULL},
			 {A_REPLY, 200, NULL, "whole"}};
	server *s = server_start(acts, 3);
	st_http *h = client(3, 0);
	st_http_req r = ST_HTTP_REQ_INIT;
	st_http_resp resp;
	char *u = url_of(s, "/b/k");
	(void)state;
	r.method = "GET";
	r.url = u;
	r.op = "GetObject";
	r.flags = ST_HTTP_RETRY;
	assert_int_equal(st__http_do(h, &r, &resp, NULL), ST_OK);
	assert_string_equal(resp.body, "whole"); /* nothing of the cut attempt is kept */
	assert_int_equal(resp.len, 5);
	assert_int_equal(resp.attempts, 3);
	st__http_resp_free(&resp);
	free(u);
	st__http_free(h);
	server_stop(s);
}

/* A big body (over the 8 MiB window): its buffer, sized by the Content-Length, is made present
 * ahead of the bytes a window at a time; an attempt cut half-way leaves nothing of itself, and
 * the next brings the whole body, byte for byte. A small body is not prefaulted. */
static void test_big_body_prefaulted(void **state)
{
	size_t n = (size_t)20 << 20;
	char *big = malloc(n + 1), *half = malloc(n / 2 + 1);
	assert_non_null(big);
	assert_non_null(half);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)('a' + (i * 7 + i / 4096) % 26);
	big[n] = '\0';
	memcpy(half, big, n / 2);
	half[n / 2] = '\0';
	action acts[] = {{A_CUT, 0, NULL, half}, {A_REPLY, 200, NULL, big},
			 {A_REPLY, 200, NULL, "small"}};
	server *s = server_start(acts, 3);
	st_http *h = client(3, 0);
	st_http_req r = ST_HTTP_REQ_INIT;
	st_http_resp resp;
	char *u = url_of(s, "/b/k");
	unsigned long before = st__prefaults();
	(void)state;
	r.method = "GET";
	r.url = u;
	r.op = "GetObject";
	r.flags = ST_HTTP_RETRY;
	assert_int_equal(st__http_do(h, &r, &resp, NULL), ST_OK);
	assert_int_equal(resp.attempts, 2);
	assert_int_equal(resp.len, n);
	assert_memory_equal(resp.body, big, n);
	assert_int_equal(resp.body[n], '\0');
	/* windows of 8 MiB: the cut attempt's 10 MiB (of 20 announced) in 2, the whole 20 in 3 */
	assert_int_equal(st__prefaults() - before, 2 + 3);
	st__http_resp_free(&resp);
	before = st__prefaults();
	assert_int_equal(st__http_do(h, &r, &resp, NULL), ST_OK);
	assert_string_equal(resp.body, "small");
	assert_int_equal(st__prefaults(), before);
	st__http_resp_free(&resp);
	free(u);
	free(big);
	free(half);
	st__http_free(h);
	server_stop(s);
}

static void test_always_cut(void **state)
{
	action acts[] = {{A_CUT, 0, NULL, NULL}};
	server *s = server_start(acts, 1);
	st_http *h = client(2, 0);
	st_http_req r = ST_HTTP_REQ_INIT;
	st_http_resp resp;
	st_error err;
	char *u = url_of(s, "/b/k"), *want;
	(void)state;
	r.method = "GET";
	r.url = u;
	r.op = "GetObject";
	r.target = "b/k";
	r.flags = ST_HTTP_RETRY;
	st_error_clear(&err);
	assert_int_equal(st__http_do(h, &r, &resp, &err), ST_EIO);
	want = st_asprintf("test: GetObject 'b/k' on 127.0.0.1:%d failed: ", s->port);
	assert_true(!strncmp(err.message, want, strlen(want)));
	assert_non_null(strstr(err.message, "(3 attempts)"));
	assert_int_equal(s->nseen, 3);
	free(want);
	st__http_resp_free(&resp);
	free(u);
	st__http_free(h);
	server_stop(s);
}

static void test_hang_times_out(void **state)
{
	action acts[] = {{A_HANG, 0, NULL, NULL}};
	server *s = server_start(acts, 1);
	st_http *h = client(1, 300);
	st_http_req r = ST_HTTP_REQ_INIT;
	st_http_resp resp;
	st_error err;
	struct timespec t0, t1;
	char *u = url_of(s, "/b/k"), *want;
	(void)state;
	r.method = "HEAD";
	r.url = u;
	r.op = "HeadObject";
	r.target = "b/k";
	r.flags = ST_HTTP_RETRY;
	st_error_clear(&err);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(st__http_do(h, &r, &resp, &err), ST_EIO);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	want = st_asprintf("test: 127.0.0.1:%d did not answer in time (HeadObject 'b/k'): ",
			   s->port);
	assert_true(!strncmp(err.message, want, strlen(want)));
	assert_non_null(strstr(err.message, "(2 attempts)"));
	assert_int_equal(resp.attempts, 2);
	assert_int_equal(resp.maybe_done, 1);
	/* two attempts of 0.3 s, not the default ten minutes */
	assert_true(t1.tv_sec - t0.tv_sec < 10);
	free(want);
	st__http_resp_free(&resp);
	free(u);
	st__http_free(h);
	server_stop(s);
}

static void test_unreachable(void **state)
{
	int port, fd = listen_socket(&port);
	st_http *h = client(2, 0);
	st_http_req r = ST_HTTP_REQ_INIT;
	st_http_resp resp;
	st_error err;
	char *u, *want;
	(void)state;
	close(fd); /* nothing listens there now */
	u = st_asprintf("http://127.0.0.1:%d/b/k", port);
	r.method = "GET";
	r.url = u;
	r.op = "GetObject";
	r.target = "b/k";
	r.flags = ST_HTTP_RETRY;
	st_error_clear(&err);
	assert_int_equal(st__http_do(h, &r, &resp, &err), ST_EIO);
	want = st_asprintf("test: cannot reach 127.0.0.1:%d (GetObject 'b/k'): ", port);
	assert_true(!strncmp(err.message, want, strlen(want)));
	assert_non_null(strstr(err.message, "(3 attempts)"));
	assert_null(strstr(err.message, ";"));
	assert_int_equal(resp.maybe_done, 0); /* never connected: nothing can have happened */
	st__http_resp_free(&resp);
	/* with a note: after the attempts */
	assert_int_equal(st__http_set_note(h, "endpoint from TEST_URL", NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st__http_do(h, &r, &resp, &err), ST_EIO);
	assert_non_null(strstr(err.message, "(3 attempts); endpoint from TEST_URL"));
	free(want);
	st__http_resp_free(&resp);
	free(u);
	/* a host that does not resolve: said so, not retried */
	r.url = "http://statetool-no-such-host.invalid/b/k";
	st_error_clear(&err);
	assert_int_equal(st__http_do(h, &r, &resp, &err), ST_EIO);
	assert_true(!strncmp(err.message,
			     "test: cannot reach statetool-no-such-host.invalid (GetObject 'b/k'): ",
			     strlen("test: cannot reach statetool-no-such-host.invalid (GetObject 'b/k'): ")));
	assert_int_equal(resp.attempts, 1);
	st__http_resp_free(&resp);
	st__http_free(h);
}

/* A PUT from a spool: every attempt sends the same bytes from the start. */
static void test_put_from_spool_retried(void **state)
{
	action acts[] = {{A_CLOSE_UPLOAD, 0, NULL, NULL},
			 {A_REPLY, 500, NULL, ""},
			 {A_REPLY, 200, "ETag: \"e\"\r\n", ""},
			 {A_CLOSE_UPLOAD, 0, NULL, NULL},
			 {A_REPLY, 200, NULL, ""}};
	server *s = server_start(acts, 5);
	st_http *h = client(3, 0);
	st_http_req r = ST_HTTP_REQ_INIT;
	st_http_resp resp;
	st_spool *sp;
	char line[64], hex[65];
	long long size;
	unsigned long want_sum = 14695981039346656037UL;
	char *u = url_of(s, "/b/big");
	(void)state;
	assert_int_equal(st__spool_new(&sp, NULL), ST_OK);
	for (int i = 0; i < 300000; i++) { /* 3.3 MB: sent with Expect: 100-continue */
		snprintf(line, sizeof(line), "line %06d\n", i);
		assert_int_equal(st__spool_write(sp, line, strlen(line), NULL), ST_OK);
		want_sum = sum((unsigned char *)line, strlen(line), want_sum);
	}
	st__spool_finish(sp, &size, hex);
	assert_int_equal(size, 300000 * 12);
	r.method = "PUT";
	r.url = u;
	r.op = "PutObject";
	r.body_fd = st__spool_fd(sp);
	r.body_len = (size_t)size;
	r.flags = ST_HTTP_RETRY;
	assert_int_equal(st__http_do(h, &r, &resp, NULL), ST_OK);
	assert_int_equal(resp.status, 200);
	assert_int_equal(resp.attempts, 3);
	assert_int_equal(resp.maybe_done, 1);
	assert_int_equal(s->nseen, 3);
	assert_int_equal(s->seen[0].body_len, (size_t)size / 2);
	for (int i = 1; i < 3; i++) {
		assert_string_equal(s->seen[i].method, "PUT");
		assert_int_equal(s->seen[i].body_len, (size_t)size);
		assert_true(s->seen[i].body_sum == want_sum);
	}
	st__http_resp_free(&resp);
	/* a part of the spool (a block): from body_off, again from there on a retry */
	want_sum = 14695981039346656037UL;
	for (int i = 1000; i < 1500; i++) {
		snprintf(line, sizeof(line), "line %06d\n", i);
		want_sum = sum((unsigned char *)line, strlen(line), want_sum);
	}
	r.body_off = 1000 * 12;
	r.body_len = 500 * 12;
	assert_int_equal(st__http_do(h, &r, &resp, NULL), ST_OK);
	assert_int_equal(resp.status, 200);
	/* (curl itself may repeat a request whose reused connection died: 1 or 2 attempts) */
	assert_int_equal(s->nseen, 5);
	assert_int_equal(s->seen[3].body_len, 500 * 12 / 2);
	assert_int_equal(s->seen[4].body_len, 500 * 12);
	assert_true(s->seen[4].body_sum == want_sum);
	st__http_resp_free(&resp);
	st__spool_free(sp);
	free(u);
	st__http_free(h);
	server_stop(s);
}

static void test_bodies_and_methods(void **state)
{
	action acts[] = {{A_REPLY, 200, NULL, ""},
			 {A_REPLY, 204, NULL, ""},
			 {A_REPLY, 200, NULL, "twenty bytes of body"},
			 {A_REPLY, 200, NULL, ""}};
	server *s = server_start(acts, 4);
	st_http *h = client(0, 0);
	st_http_req r = ST_HTTP_REQ_INIT;
	st_http_resp resp;
	char *u = url_of(s, "/b/k");
	(void)state;
	r.url = u;
	r.op = "Op";
	/* bytes in memory, POST */
	r.method = "POST";
	r.body = "a=1&b=2";
	r.body_len = 7;
	assert_int_equal(st__http_do(h, &r, &resp, NULL), ST_OK);
	st__http_resp_free(&resp);
	assert_string_equal(s->seen[0].method, "POST");
	assert_int_equal(s->seen[0].body_len, 7);
	assert_null(strcasestr(s->seen[0].headers, "expect:"));
	/* a PUT without a body says so */
	r.method = "PUT";
	r.body = NULL;
	r.body_len = 0;
	assert_int_equal(st__http_do(h, &r, &resp, NULL), ST_OK);
	assert_int_equal(resp.status, 204);
	st__http_resp_free(&resp);
	assert_string_equal(s->seen[1].method, "PUT");
	assert_non_null(strcasestr(s->seen[1].headers, "content-length: 0\r\n"));
	/* HEAD: the length is the object's, no body is read */
	r.method = "HEAD";
	r.max_body = 1;
	assert_int_equal(st__http_do(h, &r, &resp, NULL), ST_OK);
	assert_int_equal(resp.len, 0);
	assert_string_equal(resp.body, "");
	st__http_resp_free(&resp);
	assert_string_equal(s->seen[2].method, "HEAD");
	r.method = "GET";
	r.max_body = 0;
	assert_int_equal(st__http_do(h, &r, &resp, NULL), ST_OK);
	st__http_resp_free(&resp);
	assert_string_equal(s->seen[3].method, "GET");
	free(u);
	st__http_free(h);
	server_stop(s);
}

static void test_body_limit(void **state)
{
	action acts[] = {{A_REPLY, 200, NULL, "0123456789abcdef"},
			 {A_NO_LENGTH, 200, NULL, "0123456789abcdef"}};
	server *s = server_start(acts, 2);
	st_http *h = client(3, 0);
	st_http_req r = ST_HTTP_REQ_INIT;
	st_http_resp resp;
	st_error err;
	char *u = url_of(s, "/b/k");
	(void)state;
	r.method = "GET";
	r.url = u;
	r.op = "GetObject";
	r.target = "b/k";
	r.max_body = 10;
	r.flags = ST_HTTP_RETRY;
	for (int i = 0; i < 2; i++) { /* announced, then found while reading */
		st_error_clear(&err);
		assert_int_equal(st__http_do(h, &r, &resp, &err), ST_ELIMIT);
		assert_non_null(strstr(err.message, "is larger than 10 bytes"));
		assert_int_equal(resp.attempts, 1);
		st__http_resp_free(&resp);
	}
	free(u);
	st__http_free(h);
	server_stop(s);
}

/* The request hook: each attempt as a line. */
static void collect(void *ctx, const char *method, const char *host, const char *path,
		    long status)
{
	st_buf_printf(ctx, "%s %s %s %ld\n", method, host, path, status);
}

/* No message and nothing given to the request hook holds a query string, a signature or a
 * header's value. */
static void test_no_secrets(void **state)
{
	action acts[] = {{A_REPLY, 500, NULL, "SECRET-BODY"}};
	server *s = server_start(acts, 1);
	int port, fd = listen_socket(&port);
	st_http *h;
	st_http_req r = ST_HTTP_REQ_INIT;
	st_http_resp resp;
	st_error err;
	st_buf log;
	st_net_opts no = ST_NET_OPTS_INIT;
	char *u = st_asprintf("http://127.0.0.1:%d/b/k?X-Amz-Signature=SECRET1&sig=SECRET2",
			      s->port);
	char *u2 = st_asprintf("http://user:SECRET4@127.0.0.1:%d/b/k?X-Amz-Credential=SECRET5",
			       port);
	(void)state;
	close(fd);
	st_buf_init(&log);
	no.request = collect;
	no.ctx = &log;
	assert_int_equal(st_set_net(&no, NULL), ST_OK);
	h = client(1, 0);
	assert_int_equal(st_set_net(NULL, NULL), ST_OK);
	r.method = "GET";
	r.url = u;
	r.op = "GetObject";
	r.target = "b/k";
	r.flags = ST_HTTP_RETRY;
	assert_int_equal(st__http_hdrs_add(&r.headers, "Authorization", "SECRET3", NULL), ST_OK);
	assert_int_equal(st__http_do(h, &r, &resp, NULL), ST_OK);
	st_error_clear(&err);
	st__http_fail(h, &r, &resp, 0, NULL, &err);
	assert_null(strstr(err.message, "SECRET"));
	assert_null(strstr(err.message, "?"));
	st__http_resp_free(&resp);
	r.url = u2;
	st_error_clear(&err);
	assert_int_equal(st__http_do(h, &r, &resp, &err), ST_EIO);
	assert_null(strstr(err.message, "SECRET"));
	assert_null(strstr(err.message, "user"));
	st__http_resp_free(&resp);
	char *want = st_asprintf("GET 127.0.0.1:%d /b/k 500\nGET 127.0.0.1:%d /b/k 500\n"
				 "GET 127.0.0.1:%d /b/k 0\nGET 127.0.0.1:%d /b/k 0\n",
				 s->port, s->port, port, port);
	assert_string_equal(log.data, want);
	free(want);
	st_buf_free(&log);
	st__http_hdrs_free(&r.headers);
	free(u);
	free(u2);
	st__http_free(h);
	server_stop(s);
}

static void test_signer_error(void **state)
{
	action acts[] = {{A_REPLY, 503, NULL, ""}};
	server *s = server_start(acts, 1);
	st_http *h = client(3, 0);
	st_http_req r = ST_HTTP_REQ_INIT;
	st_http_resp resp;
	signer g = {0, 2};
	st_error err;
	char *u = url_of(s, "/b/k");
	(void)state;
	r.method = "GET";
	r.url = u;
	r.op = "GetObject";
	r.flags = ST_HTTP_RETRY;
	r.sign = sign_count;
	r.sign_ctx = &g;
	st_error_clear(&err);
	assert_int_equal(st__http_do(h, &r, &resp, &err), ST_EAUTH);
	assert_string_equal(err.message, "test: no credentials");
	assert_int_equal(s->nseen, 1); /* the second attempt was never sent */
	st__http_resp_free(&resp);
	free(u);
	st__http_free(h);
	server_stop(s);
}

/* The process-wide settings: taken by the clients made after them; versions checked. */
static void test_net_settings(void **state)
{
	action acts[] = {{A_REPLY, 502, NULL, ""}};
	server *s = server_start(acts, 1);
	st_http *h = NULL;
	st_http_req r = ST_HTTP_REQ_INIT;
	st_http_resp resp;
	char *u = url_of(s, "/b/k");
	(void)state;
	st_net_opts no = ST_NET_OPTS_INIT;
	st_error err;
	no.retries = 1;
	no.backoff_ms = 1;
	assert_int_equal(st_set_net(&no, NULL), ST_OK);
	assert_int_equal(st__http_new(&h, "test", NULL, NULL), ST_OK);
	assert_int_equal(st_set_net(NULL, NULL), ST_OK);
	no.version = 0;
	st_error_clear(&err);
	assert_int_equal(st_set_net(&no, &err), ST_EINVAL);
	assert_non_null(strstr(err.message, "unsupported options version 0 of st_net_opts"));
	no.version = ST_NET_OPTS_VERSION;
	no.timeout_ms = -1;
	assert_int_equal(st_set_net(&no, NULL), ST_EINVAL);
	assert_string_equal(st__http_scheme(h), "test");
	r.method = "GET";
	r.url = u;
	r.op = "GetObject";
	r.flags = ST_HTTP_RETRY;
	assert_int_equal(st__http_do(h, &r, &resp, NULL), ST_OK);
	assert_int_equal(resp.attempts, 2);
	st__http_resp_free(&resp);
	free(u);
	st__http_free(h);
	server_stop(s);
}

static void test_spool_and_helpers(void **state)
{
	st_spool *sp;
	char hex[65], *data, *host;
	long long size;
	size_t len;
	st_error err;
	(void)state;
	assert_int_equal(st__spool_new(&sp, NULL), ST_OK);
	assert_int_equal(st__spool_write(sp, "a", 1, NULL), ST_OK);
	assert_int_equal(st__spool_write(sp, "bc", 2, NULL), ST_OK);
	st__spool_finish(sp, &size, hex);
	assert_int_equal(size, 3);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_int_equal(st__spool_read(sp, 10, &data, &len, NULL), ST_OK);
	assert_int_equal(len, 3);
	assert_string_equal(data, "abc");
	free(data);
	st_error_clear(&err);
	assert_int_equal(st__spool_read(sp, 2, &data, &len, &err), ST_ELIMIT);
	st__spool_free(sp);
	/* an empty spool */
	assert_int_equal(st__spool_new(&sp, NULL), ST_OK);
	st__spool_finish(sp, &size, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	st__spool_free(sp);
	host = st__http_host("https://u:p@example.com:8443/a?b=c");
	assert_string_equal(host, "example.com:8443");
	free(host);
	host = st__http_host("http://h");
	assert_string_equal(host, "h");
	free(host);
	assert_string_equal(st_strerror(ST_EAUTH), "authentication failed");
}

/* HTTP dates (Last-Modified of s3, azblob and gs; azblob's x-ms-date), both ways. */
static void test_http_dates(void **state)
{
	char d[32];
	(void)state;
	st__http_date(d, 1435361952);
	assert_string_equal(d, "Fri, 26 Jun 2015 23:39:12 GMT");
	assert_int_equal(st__http_date_ns(d), 1435361952LL * 1000000000LL);
	assert_int_equal(st__http_date_ns("Wed, 12 Oct 2009 17:50:00 GMT"),
			 1255369800LL * 1000000000LL);
	st__http_date(d, 0);
	assert_string_equal(d, "Thu, 01 Jan 1970 00:00:00 GMT");
	/* unreadable: 0 (the store then tells no time) */
	assert_int_equal(st__http_date_ns(NULL), 0);
	assert_int_equal(st__http_date_ns(""), 0);
	assert_int_equal(st__http_date_ns("12 Oct 2009 17:50:00 GMT"), 0);
	assert_int_equal(st__http_date_ns("Wed, 12 Okt 2009 17:50:00 GMT"), 0);
	assert_int_equal(st__http_date_ns("Wed, 12 Oct 2009"), 0);
	assert_int_equal(st__http_date_ns("Wed, 12 Oct 2009 17:50:00 CET"), 0);
	assert_int_equal(st__http_date_ns("Wed, 12 Oct 2009 17:50:00"), 0);
	assert_int_equal(st__http_date_ns("Wed, 32 Oct 2009 17:50:00 GMT"), 0);
	assert_int_equal(st__http_date_ns("Wed, 12 Oct 2009 24:00:00 GMT"), 0);
	/* past what nanoseconds since 1970 hold in a long long: none, not an overflow */
	assert_int_equal(st__http_date_ns("Fri, 31 Dec 9999 23:59:59 GMT"), 0);
	assert_int_equal(st__http_date_ns("Sat, 31 Dec 2261 23:59:59 GMT"),
			 9214646399LL * 1000000000LL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_and_headers),
		cmocka_unit_test(test_retry_then_success),
		cmocka_unit_test(test_retries_bounded),
		cmocka_unit_test(test_status_codes),
		cmocka_unit_test(test_cut_body_and_close),
		cmocka_unit_test(test_big_body_prefaulted),
		cmocka_unit_test(test_always_cut),
		cmocka_unit_test(test_hang_times_out),
		cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_put_from_spool_retried),
		cmocka_unit_test(test_bodies_and_methods),
		cmocka_unit_test(test_body_limit),
		cmocka_unit_test(test_no_secrets),
		cmocka_unit_test(test_signer_error),
		cmocka_unit_test(test_net_settings),
		cmocka_unit_test(test_spool_and_helpers),
		cmocka_unit_test(test_http_dates),
	};
	unsetenv("http_proxy");
	unsetenv("HTTP_PROXY");
	unsetenv("ALL_PROXY");
	unsetenv("all_proxy");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
