/*
 * A fake Pulumi Cloud for the tests (no real service can be reached from the test suite): the
 * endpoints statetool's cloud backend uses, as Pulumi's client (pkg/backend/httpstate/client)
 * and the public REST API docs describe them, on 127.0.0.1, one connection at a time, on a
 * thread (cf_start) or as a process (tests/cloudfake.c for the CLI tests).
 *
 * Its state lives in a directory DIR, so a test sets it up and checks it with plain files:
 *   DIR/token            the one access token it accepts ("Authorization: token <it>")
 *   DIR/user             the user's login (its default organization), else "alice"
 *   DIR/pagesize         stacks per page of GET /api/user/stacks (default 2)
 *   DIR/stacks/ORG/PROJECT/STACK.json   a stack's deployment, exactly as imported
 *   DIR/stacks/ORG/PROJECT/STACK.busy   an update is in progress: an import gets 409
 *   DIR/faults           lines "METHOD PATH-PREFIX STATUS COUNT": the next COUNT requests that
 *                        match (COUNT -1: all of them) get STATUS with an ErrorResponse (429
 *                        with "Retry-After: 1"); COUNT is counted down in the file
 *   DIR/requests.log     every request: "METHOD PATH STATUS"
 * It refuses what the service refuses: a missing or wrong token (401), no Accept:
 * application/vnd.pulumi+N (400), an unknown stack (404), an import while an update runs (409),
 * an import that is no deployment (400: not JSON, no version 1-4, no deployment object, a
 * resource without urn and type), an import of a stack whose project or stack the URNs do not
 * name (400). Errors are apitype.ErrorResponse: {"code": N, "message": "..."}.
 */
#ifndef ST_CLOUDFAKE_H
#define ST_CLOUDFAKE_H

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

typedef struct cloudfake {
	char dir[512];
	int lfd, port;
	pthread_t th;
	volatile int stop;
	int updates;
	char last_headers[4096]; /* the head of the last request (for the unit tests) */
} cloudfake;

static char *cf_read(const char *dir, const char *name, size_t *len)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0, got;
	char *b = malloc(cap + 1);
	while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			char *nb = realloc(b, cap * 2 + 1);
			if (!nb) {
				free(b);
				b = NULL;
				break;
			}
			b = nb;
			cap *= 2;
		}
	}
	fclose(f);
	if (b)
		b[n] = '\0';
	if (len)
		*len = n;
	return b;
}

static void cf_write(const char *dir, const char *name, const char *data, size_t len)
{
	char p[1024], tmp[1100];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	FILE *f = fopen(tmp, "wb");
	if (!f)
		return;
	fwrite(data, 1, len, f);
	fclose(f);
	rename(tmp, p);
}

static void cf_trim(char *s)
{
	size_t n = s ? strlen(s) : 0;
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
}

static int cf_name_ok(const char *s, size_t n)
{
	if (!n || n > 100)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return 0;
	return 1;
}

static void cf_send(int fd, int status, const char *extra, const char *body)
{
	char head[512];
	size_t n = strlen(body);
	snprintf(head, sizeof(head),
		 "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%s\r\n",
		 status, n, extra ? extra : "");
	send(fd, head, strlen(head), MSG_NOSIGNAL);
	send(fd, body, n, MSG_NOSIGNAL);
}

static void cf_error(int fd, int status, const char *extra, const char *msg)
{
	json_t *e = json_pack("{s:i,s:s}", "code", status, "message", msg);
	char *b = json_dumps(e, JSON_COMPACT);
	cf_send(fd, status, extra, b ? b : "{}");
	free(b);
	json_decref(e);
}

/* A fault for this request: its status (0: none). */
static int cf_fault(cloudfake *cf, const char *method, const char *path)
{
	char *t = cf_read(cf->dir, "faults", NULL), *line, *save = NULL;
	int status = 0, changed = 0;
	char out[8192] = "";
	if (!t)
		return 0;
	for (line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char m[16], p[512];
		int st, count;
		if (sscanf(line, "%15s %511s %d %d", m, p, &st, &count) != 4)
			continue;
		if (!status && count != 0 && !strcmp(m, method) && !strncmp(path, p, strlen(p))) {
			status = st;
			if (count > 0) {
				count--;
				changed = 1;
			}
		}
		char l[600];
		snprintf(l, sizeof(l), "%s %s %d %d\n", m, p, st, count);
		strncat(out, l, sizeof(out) - strlen(out) - 1);
	}
	if (changed)
		cf_write(cf->dir, "faults", out, strlen(out));
	free(t);
	return status;
}

static void cf_log(cloudfake *cf, const char *method, const char *path, int status)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/requests.log", cf->dir);
	FILE *f = fopen(p, "a");
	if (f) {
		fprintf(f, "%s %s %d\n", method, path, status);
		fclose(f);
	}
}

/* Splits /api/stacks/ORG/PROJECT/STACK[/REST] (path without query). */
static int cf_stack_path(const char *path, char *org, char *proj, char *stack, const char **rest)
{
	const char *p = path + strlen("/api/stacks/");
	char *parts[3] = {org, proj, stack};
	for (int i = 0; i < 3; i++) {
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (!cf_name_ok(p, n))
			return i; /* how many parts were found */
		memcpy(parts[i], p, n);
		parts[i][n] = '\0';
		p += n;
		if (*p == '/' && i < 2)
			p++;
		else if (i < 2)
			return i + 1;
	}
	*rest = p;
	return 3;
}

static char *cf_gunzip(const char *in, size_t n, size_t *outlen)
{
	z_stream z;
	size_t cap = n * 4 + 1024, len = 0;
	char *out = malloc(cap + 1);
	memset(&z, 0, sizeof(z));
	if (!out || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		free(out);
		return NULL;
	}
	z.next_in = (unsigned char *)in;
	z.avail_in = (unsigned)n;
	for (;;) {
		if (len == cap) {
			char *nb = realloc(out, cap * 2 + 1);
			if (!nb)
				break;
			out = nb;
			cap *= 2;
		}
		z.next_out = (unsigned char *)out + len;
		z.avail_out = (unsigned)(cap - len);
		int rc = inflate(&z, Z_NO_FLUSH);
		len = cap - z.avail_out;
		if (rc == Z_STREAM_END) {
			inflateEnd(&z);
			out[len] = '\0';
			*outlen = len;
			return out;
		}
		if (rc != Z_OK && rc != Z_BUF_ERROR)
			break;
		if (rc == Z_BUF_ERROR && z.avail_out)
			break;
	}
	inflateEnd(&z);
	free(out);
	return NULL;
}

/* Why the service would refuse this import (NULL: it takes it). */
static const char *cf_bad_deployment(const char *body, size_t n, const char *proj,
				     const char *stack)
{
	static char why[600];
	json_error_t je;
	json_t *d = json_loadb(body, n, 0, &je), *v, *dep, *res, *r;
	size_t i;
	const char *bad = NULL;
	if (!d || !json_is_object(d))
		bad = "invalid JSON";
	else if (!json_is_integer(v = json_object_get(d, "version")) ||
		 json_integer_value(v) < 1 || json_integer_value(v) > 4)
		bad = "the deployment's version is missing or not supported";
	else if (!json_is_object(dep = json_object_get(d, "deployment")))
		bad = "no deployment";
	else if ((res = json_object_get(dep, "resources")) && !json_is_array(res) &&
		 !json_is_null(res))
		bad = "resources is not an array";
	if (!bad)
		json_array_foreach(json_object_get(dep, "resources"), i, r) {
			const char *urn = json_string_value(json_object_get(r, "urn"));
			char want[400];
			snprintf(want, sizeof(want), "urn:pulumi:%s::%s::", stack, proj);
			if (!urn || !json_is_string(json_object_get(r, "type"))) {
				bad = "a resource has no urn or no type";
				break;
			}
			if (strncmp(urn, want, strlen(want))) {
				snprintf(why, sizeof(why), "resource '%.200s' is not of stack '%s/%s'",
					 urn, proj, stack);
				bad = why;
				break;
			}
		}
	json_decref(d);
	return bad;
}

static int cf_exists(cloudfake *cf, const char *o, const char *p, const char *s, const char *ext)
{
	char path[2048];
	struct stat st;
	snprintf(path, sizeof(path), "%s/stacks/%s/%s/%s%s", cf->dir, o, p, s, ext);
	return stat(path, &st) == 0;
}

static void cf_list(cloudfake *cf, int fd, const char *query)
{
	char *ps = cf_read(cf->dir, "pagesize", NULL);
	int pagesize = ps ? atoi(ps) : 2, start = 0, k = 0;
	const char *ct = query ? strstr(query, "continuationToken=") : NULL;
	json_t *stacks = json_array(), *ans;
	char cmd[1200];
	free(ps);
	if (pagesize < 1)
		pagesize = 2;
	if (ct)
		start = atoi(ct + strlen("continuationToken="));
	/* every stack file, sorted */
	snprintf(cmd, sizeof(cmd), "cd '%s/stacks' 2>/dev/null && ls */*/*.json 2>/dev/null | sort",
		 cf->dir);
	FILE *f = popen(cmd, "r");
	char line[600];
	int more = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char o[128], p[128], s[128];
		cf_trim(line);
		if (sscanf(line, "%127[^/]/%127[^/]/%127[^\n]", o, p, s) != 3)
			continue;
		s[strlen(s) - 5] = '\0';
		if (k++ < start)
			continue;
		if ((int)json_array_size(stacks) == pagesize) {
			more = 1;
			continue;
		}
		json_array_append_new(stacks, json_pack("{s:s,s:s,s:s,s:s,s:i,s:i}", "id", s,
							"orgName", o, "projectName", p,
							"stackName", s, "lastUpdate", 1700000000,
							"resourceCount", 0));
	}
	if (f)
		pclose(f);
	ans = json_pack("{s:o}", "stacks", stacks);
	if (more) {
		char t[32];
		snprintf(t, sizeof(t), "%d", start + pagesize);
		json_object_set_new(ans, "continuationToken", json_string(t));
	}
	char *b = json_dumps(ans, JSON_COMPACT);
	cf_send(fd, 200, NULL, b);
	free(b);
	json_decref(ans);
}

static const char cf_empty[] = "{\"version\":3,\"deployment\":{\"manifest\":{\"time\":"
			       "\"2026-11-24T00:00:00Z\",\"magic\":\"\",\"version\":\"\"}}}";

/* Serves one request; returns its status. */
static int cf_serve(cloudfake *cf, int fd, const char *method, const char *target,
		    const char *headers, const char *body, size_t blen)
{
	char path[640], query[640] = "", org[128], proj[128], stack[128], name[1200];
	const char *rest = "", *q = strchr(target, '?');
	size_t pl = q ? (size_t)(q - target) : strlen(target);
	int st;
	if (pl >= sizeof(path))
		pl = sizeof(path) - 1;
	memcpy(path, target, pl);
	path[pl] = '\0';
	if (q)
		snprintf(query, sizeof(query), "%s", q + 1);
	snprintf(cf->last_headers, sizeof(cf->last_headers), "%s", headers);

	char *tok = cf_read(cf->dir, "token", NULL), want[600];
	cf_trim(tok);
	snprintf(want, sizeof(want), "\r\nauthorization: token %s\r\n", tok ? tok : "");
	free(tok);
	if (!strcasestr(headers, want)) {
		cf_error(fd, 401, NULL, "Unauthorized: No credentials provided or are invalid.");
		return 401;
	}
	if (!strcasestr(headers, "\r\naccept: application/vnd.pulumi+")) {
		cf_error(fd, 400, NULL, "Bad Request: the Accept header names no API version");
		return 400;
	}
	if ((st = cf_fault(cf, method, path)) != 0) {
		cf_error(fd, st, st == 429 ? "Retry-After: 1\r\n" : NULL,
			 st == 429 ? "Too Many Requests" : st == 409
				 ? "Conflict: Another update is currently in progress."
				 : "Internal Server Error");
		return st;
	}
	if (!strcmp(method, "GET") && !strcmp(path, "/api/user")) {
		char *u = cf_read(cf->dir, "user", NULL);
		cf_trim(u);
		json_t *a = json_pack("{s:s,s:s,s:[{s:s}]}", "githubLogin", u ? u : "alice", "name",
				      "A User", "organizations", "githubLogin", u ? u : "alice");
		char *b = json_dumps(a, JSON_COMPACT);
		cf_send(fd, 200, NULL, b);
		free(b);
		free(u);
		json_decref(a);
		return 200;
	}
	if (!strcmp(method, "GET") && !strcmp(path, "/api/user/stacks")) {
		cf_list(cf, fd, query);
		return 200;
	}
	if (strncmp(path, "/api/stacks/", 12)) {
		cf_error(fd, 404, NULL, "Not Found");
		return 404;
	}
	int parts = cf_stack_path(path, org, proj, stack, &rest);
	if (parts == 2 && !strcmp(method, "POST")) { /* CreateStack */
		json_error_t je;
		json_t *r = json_loadb(body, blen, 0, &je);
		const char *s = r ? json_string_value(json_object_get(r, "stackName")) : NULL;
		if (!s || !cf_name_ok(s, strlen(s))) {
			json_decref(r);
			cf_error(fd, 400, NULL, "Bad Request: invalid stack name");
			return 400;
		}
		if (cf_exists(cf, org, proj, s, ".json")) {
			json_decref(r);
			cf_error(fd, 409, NULL, "Conflict: Stack already exists");
			return 409;
		}
		snprintf(name, sizeof(name), "%s/stacks/%s", cf->dir, org);
		mkdir(name, 0777);
		snprintf(name, sizeof(name), "%s/stacks/%s/%s", cf->dir, org, proj);
		mkdir(name, 0777);
		snprintf(name, sizeof(name), "stacks/%s/%s/%s.json", org, proj, s);
		cf_write(cf->dir, name, cf_empty, strlen(cf_empty));
		json_t *a = json_pack("{s:s,s:s,s:s}", "orgName", org, "projectName", proj,
				      "stackName", s);
		char *b = json_dumps(a, JSON_COMPACT);
		cf_send(fd, 200, NULL, b);
		free(b);
		json_decref(a);
		json_decref(r);
		return 200;
	}
	if (parts != 3) {
		cf_error(fd, 404, NULL, "Not Found");
		return 404;
	}
	if (!cf_exists(cf, org, proj, stack, ".json")) {
		char m[500];
		snprintf(m, sizeof(m), "Not Found: Stack '%s/%s/%s' not found", org, proj, stack);
		cf_error(fd, 404, NULL, m);
		return 404;
	}
	snprintf(name, sizeof(name), "stacks/%s/%s/%s.json", org, proj, stack);
	if (!strcmp(method, "GET") && !*rest) {
		json_t *a = json_pack("{s:s,s:s,s:s,s:i}", "orgName", org, "projectName", proj,
				      "stackName", stack, "version", 1);
		char *b = json_dumps(a, JSON_COMPACT);
		cf_send(fd, 200, NULL, b);
		free(b);
		json_decref(a);
		return 200;
	}
	if (!strcmp(method, "GET") && !strcmp(rest, "/export")) {
		size_t n;
		char *d = cf_read(cf->dir, name, &n);
		cf_send(fd, 200, NULL, d ? d : cf_empty);
		free(d);
		return 200;
	}
	if (!strcmp(method, "POST") && !strcmp(rest, "/import")) {
		char *plain = NULL;
		size_t plen = blen;
		const char *why;
		if (cf_exists(cf, org, proj, stack, ".busy")) {
			cf_error(fd, 409, NULL, "Conflict: Another update is currently in progress.");
			return 409;
		}
		if (strcasestr(headers, "\r\ncontent-encoding: gzip\r\n")) {
			if (!(plain = cf_gunzip(body, blen, &plen))) {
				cf_error(fd, 400, NULL, "Bad Request: invalid gzip body");
				return 400;
			}
		}
		if ((why = cf_bad_deployment(plain ? plain : body, plen, proj, stack))) {
			char m[700];
			snprintf(m, sizeof(m), "Bad Request: %s", why);
			free(plain);
			cf_error(fd, 400, NULL, m);
			return 400;
		}
		cf_write(cf->dir, name, plain ? plain : body, plen);
		free(plain);
		char b[100];
		snprintf(b, sizeof(b), "{\"updateId\":\"u%d\"}", ++cf->updates);
		cf_send(fd, 200, NULL, b);
		return 200;
	}
	if (!strcmp(method, "GET") && !strncmp(rest, "/update/", 8)) {
		/* the first poll: running, with a token; the next: succeeded, without */
		if (!strstr(query, "continuationToken="))
			cf_send(fd, 200, NULL,
				"{\"status\":\"running\",\"events\":[],\"continuationToken\":\"1\"}");
		else
			cf_send(fd, 200, NULL, "{\"status\":\"succeeded\",\"events\":[]}");
		return 200;
	}
	cf_error(fd, 404, NULL, "Not Found");
	return 404;
}

static void cf_conn(cloudfake *cf, int fd)
{
	size_t cap = 1 << 16, have = 0;
	char *buf = malloc(cap + 1);
	while (buf && !cf->stop) {
		char *e;
		while (!(e = memmem(buf, have, "\r\n\r\n", 4))) {
			struct pollfd p = {fd, POLLIN, 0};
			if (have == cap || poll(&p, 1, 200) < 0 || cf->stop)
				goto done;
			if (!(p.revents & (POLLIN | POLLHUP)))
				continue;
			ssize_t n = recv(fd, buf + have, cap - have, 0);
			if (n <= 0)
				goto done;
			have += (size_t)n;
		}
		size_t hl = (size_t)(e - buf) + 4, bl = 0;
		char method[16] = "", target[600] = "";
		buf[hl - 1] = '\0';
		sscanf(buf, "%15s %599s", method, target);
		char *headers = strchr(buf, '\r');
		const char *cl = strcasestr(headers ? headers : "", "\r\ncontent-length:");
		if (cl)
			bl = strtoul(cl + 17, NULL, 10);
		if (strcasestr(headers ? headers : "", "\r\nexpect: 100-continue"))
			send(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25, MSG_NOSIGNAL);
		if (hl + bl > cap) {
			char *nb = realloc(buf, hl + bl + 1);
			if (!nb)
				goto done;
			buf = nb;
			cap = hl + bl;
		}
		while (have < hl + bl) {
			ssize_t n = recv(fd, buf + have, hl + bl - have, 0);
			if (n <= 0)
				goto done;
			have += (size_t)n;
		}
		/* the header lines, each between "\r\n"s */
		char *hcopy = strdup(headers ? headers : "");
		char *body = buf + hl;
		char save = body[bl];
		body[bl] = '\0';
		int st = cf_serve(cf, fd, method, target, hcopy, body, bl);
		body[bl] = save;
		free(hcopy);
		cf_log(cf, method, target, st);
		memmove(buf, buf + hl + bl, have - hl - bl);
		have -= hl + bl;
	}
done:
	free(buf);
	close(fd);
}

static void *cf_main(void *arg)
{
	cloudfake *cf = arg;
	while (!cf->stop) {
		struct pollfd p = {cf->lfd, POLLIN, 0};
		if (poll(&p, 1, 200) <= 0)
			continue;
		int fd = accept(cf->lfd, NULL, NULL);
		if (fd >= 0)
			cf_conn(cf, fd);
	}
	return NULL;
}

/* Starts a fake service on DIR (created with stacks/ if needed); cf->port is its port. */
static inline int cf_start(cloudfake *cf, const char *dir)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	char p[600];
	memset(cf, 0, sizeof(*cf));
	snprintf(cf->dir, sizeof(cf->dir), "%s", dir);
	mkdir(dir, 0777);
	snprintf(p, sizeof(p), "%s/stacks", dir);
	mkdir(p, 0777);
	cf->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (cf->lfd < 0 || bind(cf->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(cf->lfd, 8) < 0 || getsockname(cf->lfd, (struct sockaddr *)&a, &al) < 0)
		return -1;
	cf->port = ntohs(a.sin_port);
	return pthread_create(&cf->th, NULL, cf_main, cf) ? -1 : 0;
}

static inline void cf_stop(cloudfake *cf)
{
	cf->stop = 1;
	pthread_join(cf->th, NULL);
	close(cf->lfd);
}

#endif
