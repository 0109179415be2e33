/*
 * The test servers (tests/servers/ctl start): their variables come from one env file,
 * "$ST_SERVERS_DIR/env" (default /tmp/statetool-servers-$UID/env), lines "export NAME=VALUE"
 * (VALUE possibly in single quotes). A test that needs a server and finds none skips, unless
 * $CI is set: in CI a skip is a failure.
 */
#ifndef ST_TEST_SERVERS_H
#define ST_TEST_SERVERS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The env file's path (new). */
static inline char *tu_servers_env_file(void)
{
	const char *dir = getenv("ST_SERVERS_DIR");
	char *p = NULL;
	if (dir && *dir) {
		if (asprintf(&p, "%s/env", dir) < 0)
			return NULL;
	} else if (asprintf(&p, "/tmp/statetool-servers-%u/env", (unsigned)getuid()) < 0) {
		return NULL;
	}
	return p;
}

/* The value of `name` in the env file (new), NULL when there is none. */
static inline char *tu_server_var(const char *name)
{
	char *path = tu_servers_env_file(), line[1024], *val = NULL;
	FILE *f = path ? fopen(path, "r") : NULL;
	size_t n = strlen(name);
	free(path);
	if (!f)
		return NULL;
	while (!val && fgets(line, sizeof(line), f)) {
		char *p = line;
		if (!strncmp(p, "export ", 7))
			p += 7;
		if (strncmp(p, name, n) || p[n] != '=')
			continue;
		p += n + 1;
		p[strcspn(p, "\r\n")] = '\0';
		size_t l = strlen(p);
		if (l >= 2 && p[0] == '\'' && p[l - 1] == '\'') {
			p[l - 1] = '\0';
			p++;
		}
		val = strdup(p);
	}
	fclose(f);
	return val;
}

/* True when a missing server must fail the test ($CI set). */
static inline int tu_servers_required(void)
{
	const char *ci = getenv("CI");
	return ci && *ci;
}

#endif
