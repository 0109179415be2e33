/* Helpers shared by the cmocka test programs. */
#ifndef ST_TESTUTIL_H
#define ST_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "statetool.h"

static inline char *tu_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

static inline void tu_write(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static inline char *tu_fixture(const char *rel)
{
	char *p = NULL;
	if (asprintf(&p, "%s/%s", FIXTURES, rel) < 0)
		return NULL;
	return p;
}

/* Loads a fixture (path relative to fixtures/); fails the test if it does not load. */
static inline st_state *tu_load(const char *rel)
{
	char *p = tu_fixture(rel);
	st_state *s = NULL;
	assert_int_equal(st_state_load_file(&s, p, NULL, NULL), ST_OK);
	free(p);
	return s;
}

/* A fresh temporary directory (removed by tu_rmdir). */
static inline char *tu_tmpdir(void)
{
	char tmpl[] = "/tmp/statetool-test-XXXXXX";
	char *d = mkdtemp(tmpl);
	assert_non_null(d);
	return strdup(d);
}

static inline void tu_rmdir(char *dir)
{
	char *cmd = NULL;
	if (asprintf(&cmd, "rm -rf '%s'", dir) >= 0 && system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	free(cmd);
	free(dir);
}

/* How many entries of dir (dot files included) have `part` in their name ("" : all). */
static inline int tu_count_entries(const char *dir, const char *part)
{
	char *cmd = NULL;
	int n = -1;
	FILE *f;
	if (asprintf(&cmd, "ls -A '%s' | grep -c -F -- '%s'", dir, part) < 0)
		return -1;
	f = popen(cmd, "r");
	if (f && fscanf(f, "%d", &n) != 1)
		n = -1;
	if (f)
		pclose(f);
	free(cmd);
	return n;
}

/* Parses JSON text (aborts the test on failure). */
static inline json_t *tu_json(const char *text)
{
	json_t *v = NULL;
	st_error err;
	st_error_clear(&err);
	if (st_json_parse(&v, text, strlen(text), "test", NULL, NULL, NULL, &err) != ST_OK) {
		fprintf(stderr, "bad test JSON: %s\n", err.message);
		fail();
	}
	return v;
}

/* The handle of the resource at index i of an edit session's state. */
static inline st_handle tu_handle(st_edit *e, size_t i)
{
	st_handle h;
	assert_int_equal(st_edit_handle_at(e, i, &h, NULL), ST_OK);
	return h;
}

#endif
