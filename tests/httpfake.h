/*
 * A small HTTP server on a thread on 127.0.0.1 for the tests of the network stores, told what to
 * do with each request it receives: answer, cut the body short, close the connection, hang,
 * close half-way through the upload; or, as a proxy in front of a real server (radosgw,
 * Azurite), forward the request and relay the answer, lose the answer after the server carried
 * the request out, cut the relayed answer short, or change a word of it. It records each
 * request (method, path, head, body length and checksum). One connection at a time; requests
 * on it in order.
 */
#ifndef ST_HTTPFAKE_H
#define ST_HTTPFAKE_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

typedef enum act_kind {
	A_REPLY,        /* answer with status, headers, body (keeps the connection) */
	A_CUT,          /* announce a 100-byte body, send 10 bytes, close; with a body: announce
			 * twice its length, send it, close */
	A_CLOSE,        /* close without an answer */
	A_HANG,         /* say nothing until the client gives up */
	A_CLOSE_UPLOAD, /* read half of the request's body, close */
	A_NO_LENGTH,    /* answer without Content-Length, the body ends with the connection */
	A_FORWARD,      /* proxy: forward to the upstream, relay its answer */
	A_FORWARD_DROP, /* proxy: forward (the upstream carries it out), close without an answer */
	A_FORWARD_CUT,  /* proxy: forward, relay the answer's head and half its body, close */
	A_FORWARD_EDIT  /* proxy: forward, relay the answer with its first `headers` text replaced
			 * by `body` (of the same length: "x-ms-copy-status: success" by "...
			 * pending", what the upstream never says) */
} act_kind;

typedef struct action {
	act_kind kind;
	int status;
	const char *headers; /* extra header lines, each ending in \r\n */
	const char *body;
} action;

#define MAX_REQ 64

typedef struct request_seen {
	char method[16];
	char path[512];
	char headers[4096];
	size_t body_len;
	unsigned long body_sum;
	int upstream_status; /* what the upstream answered a forwarded request (0: not forwarded) */
} request_seen;

typedef struct server {
	int lfd;
	int port;
	int upstream_port; /* the proxy's upstream on 127.0.0.1 */
	pthread_t th;
	action acts[MAX_REQ];
	int nacts;
	int next;
	request_seen seen[MAX_REQ];
	int nseen;
	volatile int stop;
} server;

static inline unsigned long sum(const unsigned char *p, size_t n, unsigned long h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211UL;
	return h;
}

/* Reads until the end of the request's head; what came after it stays in buf[*have..]. */
static inline int read_head(int fd, char *buf, size_t cap, size_t *have, size_t *head_len)
{
	for (;;) {
		char *e = memmem(buf, *have, "\r\n\r\n", 4);
		if (e) {
			*head_len = (size_t)(e - buf) + 4;
			return 0;
		}
		if (*have == cap)
			return -1;
		ssize_t n = recv(fd, buf + *have, cap - *have, 0);
		if (n <= 0)
			return -1;
		*have += (size_t)n;
	}
}

static inline void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static inline const char *reason(int status)
{
	return status == 200 ? "OK" : status == 404 ? "Not Found" : status == 500 ? "Internal" : "X";
}

/* Sends the request (head with "Connection: close" added, body) to the upstream and reads its
 * whole answer into *ans (malloc'd). */
static inline int forward(const server *s, const char *head, size_t head_len, const char *body,
		   size_t body_len, char **ans, size_t *ans_len)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t cap = 1 << 16, n = 0;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((unsigned short)s->upstream_port);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	send_all(fd, head, head_len - 2);
	send_all(fd, "Connection: close\r\n\r\n", 21);
	send_all(fd, body, body_len);
	*ans = malloc(cap);
	for (;;) {
		if (n == cap)
			*ans = realloc(*ans, cap *= 2);
		ssize_t got = recv(fd, *ans + n, cap - n, 0);
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	*ans = realloc(*ans, n + 1); /* NUL-terminated: the status line is read with sscanf */
	(*ans)[n] = '\0';
	*ans_len = n;
	return 0;
}

/* Serves one connection until it closes or an action ends it. */
static inline void serve(server *s, int fd)
{
	static char buf[1 << 16];
	size_t have = 0;

	while (!s->stop) {
		size_t head_len;
		if (read_head(fd, buf, sizeof(buf), &have, &head_len) < 0)
			return;
		request_seen *rq = &s->seen[s->nseen < MAX_REQ ? s->nseen : MAX_REQ - 1];
		memset(rq, 0, sizeof(*rq));
		sscanf(buf, "%15s %511s", rq->method, rq->path);
		size_t hl = head_len < sizeof(rq->headers) ? head_len : sizeof(rq->headers) - 1;
		memcpy(rq->headers, buf, hl);
		long long clen = 0;
		const char *cl = strcasestr(rq->headers, "\r\ncontent-length:");
		if (cl)
			clen = atoll(cl + 17);
		action a = s->acts[s->next < s->nacts ? s->next : s->nacts - 1];
		s->next++;
		s->nseen++;
		if (strcasestr(rq->headers, "\r\nexpect: 100-continue"))
			send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
		/* the body: what is already in buf, then the rest */
		size_t want = (size_t)(a.kind == A_CLOSE_UPLOAD ? clen / 2 : clen), got;
		char *body = malloc(want + 1);
		size_t extra = have - head_len;
		size_t take = extra < want ? extra : want;
		char head[4096];
		memcpy(head, buf, hl);
		memcpy(body, buf + head_len, take);
		got = take;
		memmove(buf, buf + head_len + take, extra - take);
		have = extra - take;
		while (got < want) {
			ssize_t n = recv(fd, body + got, want - got, 0);
			if (n <= 0) {
				free(body);
				return;
			}
			got += (size_t)n;
		}
		rq->body_len = got;
		rq->body_sum = sum((unsigned char *)body, got, 14695981039346656037UL);
		char out[1024];
		const char *text = a.body ? a.body : "";
		int is_head = !strcmp(rq->method, "HEAD");
		char *ans = NULL;
		size_t ans_len = 0;
		int keep = 1;
		switch (a.kind) {
		case A_REPLY:
			snprintf(out, sizeof(out), "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\n%s\r\n",
				 a.status, reason(a.status), strlen(text), a.headers ? a.headers : "");
			send_all(fd, out, strlen(out));
			if (!is_head)
				send_all(fd, text, strlen(text));
			break;
		case A_NO_LENGTH:
			snprintf(out, sizeof(out), "HTTP/1.1 %d %s\r\nConnection: close\r\n\r\n",
				 a.status, reason(a.status));
			send_all(fd, out, strlen(out));
			send_all(fd, text, strlen(text));
			keep = 0;
			break;
		case A_CUT:
			snprintf(out, sizeof(out), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
				 a.body ? 2 * strlen(a.body) : (size_t)100);
			send_all(fd, out, strlen(out));
			if (a.body)
				send_all(fd, a.body, strlen(a.body));
			else
				send_all(fd, "0123456789", 10);
			keep = 0;
			break;
		case A_HANG:
			while (!s->stop) {
				struct pollfd p = {fd, POLLIN, 0};
				if (poll(&p, 1, 50) > 0) {
					char c;
					if (recv(fd, &c, 1, MSG_PEEK) <= 0)
						break; /* the client gave up */
				}
			}
			keep = 0;
			break;
		case A_CLOSE:
		case A_CLOSE_UPLOAD:
			keep = 0;
			break;
		case A_FORWARD:
		case A_FORWARD_DROP:
		case A_FORWARD_CUT:
		case A_FORWARD_EDIT:
			if (forward(s, head, hl, body, got, &ans, &ans_len) < 0) {
				keep = 0;
				break;
			}
			sscanf(ans, "HTTP/%*s %d", &rq->upstream_status);
			if (a.kind == A_FORWARD_EDIT) {
				char *at = memmem(ans, ans_len, a.headers, strlen(a.headers));
				if (at && strlen(a.body) == strlen(a.headers))
					memcpy(at, a.body, strlen(a.body));
			}
			if (a.kind == A_FORWARD || a.kind == A_FORWARD_EDIT) {
				send_all(fd, ans, ans_len);
			} else if (a.kind == A_FORWARD_CUT) {
				char *e = memmem(ans, ans_len, "\r\n\r\n", 4);
				size_t h = e ? (size_t)(e - ans) + 4 : ans_len;
				send_all(fd, ans, h + (ans_len - h) / 2);
			}
			keep = 0; /* the upstream's answer said nothing of keeping the connection */
			break;
		}
		free(ans);
		free(body);
		if (!keep)
			return;
	}
}

static inline void *server_main(void *ctx)
{
	server *s = ctx;
	while (!s->stop) {
		struct pollfd p = {s->lfd, POLLIN, 0};
		if (poll(&p, 1, 50) <= 0)
			continue;
		int fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		serve(s, fd);
		shutdown(fd, SHUT_RDWR);
		close(fd);
	}
	return NULL;
}

static inline int listen_socket(int *port)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* A server doing acts[0], acts[1], ... to the requests it gets (the last one for all the rest);
 * `upstream_port` (0: none) is where A_FORWARD* forward to. */
static inline server *server_start_proxy(const action *acts, int n, int upstream_port)
{
	server *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	memcpy(s->acts, acts, (size_t)n * sizeof(*acts));
	s->nacts = n;
	s->upstream_port = upstream_port;
	s->lfd = listen_socket(&s->port);
	assert_int_equal(pthread_create(&s->th, NULL, server_main, s), 0);
	return s;
}

static inline server *server_start(const action *acts, int n)
{
	return server_start_proxy(acts, n, 0);
}

/* Replaces the plan (between requests: the client is idle). */
static inline void server_plan(server *s, const action *acts, int n)
{
	memcpy(s->acts, acts, (size_t)n * sizeof(*acts));
	s->nacts = n;
	s->next = 0;
	s->nseen = 0;
}

static inline void server_stop(server *s)
{
	s->stop = 1;
	pthread_join(s->th, NULL);
	close(s->lfd);
	free(s);
}

#endif
