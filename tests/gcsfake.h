/*
 * tests/gcsfake.js from the C tests: started with node on 127.0.0.1 (it prints its port), told
 * what to do through its /_fake/ controls, stopped by closing its standard input. node is
 * needed (it is on every machine the tests run on: Azurite needs it too); without it the test
 * fails with a message, it is never skipped.
 */
#ifndef ST_GCSFAKE_H
#define ST_GCSFAKE_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct gcsfake {
	pid_t pid;
	int in;   /* its standard input: closing it stops it */
	int port;
} gcsfake;

/* The fake's script, beside the fixtures (FIXTURES is the source tree's fixtures/). */
#define GCSFAKE_JS FIXTURES "/../tests/gcsfake.js"
#define GCSFAKE_SA_EMAIL "statetool-test@statetool-test.iam.gserviceaccount.com"
#define GCSFAKE_SA_KID "4f1c0b5e7a2d"

/* Starts the fake with the extra arguments `argv` (NULL-terminated, may be NULL); the test
 * service account (fixtures/gcs/sa-pub.pem) is always known. Fails the test when node cannot
 * run it. */
static inline gcsfake gcsfake_start(const char *const *argv)
{
	gcsfake f = {-1, -1, 0};
	int in[2], out[2];
	const char *av[40];
	int n = 0;
	static char sa[1024];
	snprintf(sa, sizeof(sa), "%s=%s/gcs/sa-pub.pem:%s", GCSFAKE_SA_EMAIL, FIXTURES,
		 GCSFAKE_SA_KID);
	av[n++] = "node";
	av[n++] = GCSFAKE_JS;
	av[n++] = "--stdin";
	av[n++] = "--lifetime";
	av[n++] = "900";
	av[n++] = "--sa";
	av[n++] = sa;
	for (int i = 0; argv && argv[i] && n < 38; i++)
		av[n++] = argv[i];
	av[n] = NULL;
	/* close-on-exec: a fake started later must not hold this one's standard input open */
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		fail_msg("pipe: %s", strerror(errno));
	f.pid = fork();
	if (f.pid < 0)
		fail_msg("fork: %s", strerror(errno));
	if (f.pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execvp("node", (char *const *)av);
		fprintf(stderr, "cannot run node (needed by the gs:// tests: apt-get install "
				"nodejs): %s\n",
			strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	f.in = in[1];
	char buf[32];
	size_t got = 0;
	while (got < sizeof(buf) - 1) {
		ssize_t r = read(out[0], buf + got, 1);
		if (r <= 0 || buf[got] == '\n')
			break;
		got++;
	}
	buf[got] = '\0';
	close(out[0]);
	f.port = atoi(buf);
	if (f.port <= 0)
		fail_msg("the GCS fake (node %s) did not start: is node installed?", GCSFAKE_JS);
	return f;
}

static inline void gcsfake_stop(gcsfake *f)
{
	if (f->pid <= 0)
		return;
	close(f->in);
	int st;
	kill(f->pid, SIGTERM);
	waitpid(f->pid, &st, 0);
	f->pid = -1;
}

/* One request to the fake (HTTP/1.0, the answer read to its end): the status, the body in *out
 * (new, may be NULL). */
static inline int gcsfake_http(const gcsfake *f, const char *method, const char *path,
			       const char *body, char **out)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM, 0), status = 0;
	char head[1024], *ans = NULL;
	size_t n = 0, cap = 0;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((unsigned short)f->port);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		fail_msg("cannot connect to the GCS fake: %s", strerror(errno));
	snprintf(head, sizeof(head),
		 "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
		 "Content-Length: %zu\r\n\r\n",
		 method, path, body ? strlen(body) : 0);
	if (write(fd, head, strlen(head)) < 0 || (body && write(fd, body, strlen(body)) < 0))
		fail_msg("cannot write to the GCS fake");
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			ans = realloc(ans, cap);
		}
		ssize_t r = read(fd, ans + n, cap - n - 1);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (ans) {
		ans[n] = '\0';
		sscanf(ans, "HTTP/%*s %d", &status);
	}
	if (out) {
		char *b = ans ? strstr(ans, "\r\n\r\n") : NULL;
		*out = b ? strdup(b + 4) : NULL;
	}
	free(ans);
	return status;
}

/* POST /_fake/NAME with a JSON body (faults, config). */
static inline void gcsfake_ctl(const gcsfake *f, const char *name, const char *json)
{
	char path[64];
	snprintf(path, sizeof(path), "/_fake/%s", name);
	if (gcsfake_http(f, "POST", path, json, NULL) != 204)
		fail_msg("the GCS fake refused /_fake/%s %s", name, json);
}

/* The log of requests (JSON, new) since the last gcsfake_log_clear. */
static inline char *gcsfake_log(const gcsfake *f)
{
	char *out = NULL;
	gcsfake_http(f, "GET", "/_fake/log", NULL, &out);
	return out;
}

static inline void gcsfake_log_clear(const gcsfake *f)
{
	gcsfake_http(f, "DELETE", "/_fake/log", NULL, NULL);
}

/* How many times `needle` occurs in the text. */
static inline int gcsfake_count(const char *text, const char *needle)
{
	int c = 0;
	for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle))
		c++;
	return c;
}

/* A service account key file for the fake (token_uri at the fake), with `pem_file`'s key
 * (fixtures/gcs/...): its path (new). */
static inline char *gcsfake_key_file(const gcsfake *f, const char *dir, const char *pem_file)
{
	char *path = NULL, pem[4096];
	if (asprintf(&path, "%s/key-%d.json", dir, f->port) < 0)
		fail_msg("oom");
	char src[512];
	snprintf(src, sizeof(src), "%s/gcs/%s", FIXTURES, pem_file);
	FILE *in = fopen(src, "r");
	size_t n = in ? fread(pem, 1, sizeof(pem) - 1, in) : 0;
	if (in)
		fclose(in);
	pem[n] = '\0';
	FILE *o = fopen(path, "w");
	if (!o)
		fail_msg("cannot write %s", path);
	fprintf(o, "{\"type\":\"service_account\",\"project_id\":\"statetool-test\","
		   "\"private_key_id\":\"%s\",\"private_key\":\"",
		GCSFAKE_SA_KID);
	for (char *p = pem; *p; p++) {
		if (*p == '\n')
			fputs("\\n", o);
		else
			fputc(*p, o);
	}
	fprintf(o, "\",\"client_email\":\"%s\",\"client_id\":\"1234\","
		   "\"token_uri\":\"http://127.0.0.1:%d/token\"}\n",
		GCSFAKE_SA_EMAIL, f->port);
	fclose(o);
	return path;
}

#endif
