/*
 * A test helper: objects of any store, through the library's store calls only, so the CLI
 * tests can set up and inspect a backend on any store (file://, s3://, ...):
 *   storetool ls URL [PREFIX]     every key under PREFIX, one a line
 *   storetool cat URL KEY         the object's bytes on stdout
 *   storetool put URL KEY         stdin becomes the object
 *   storetool rm URL KEY          deletes it
 *   storetool mkbucket URL        creates an s3:// bucket or an azblob:// container (none
 *                                 when it is there already; statetool itself never creates one)
 * Exit status 0, 1 when the store said no (message on stderr), 2 on bad usage.
 */
#include "statetool.h"
#include "store/azblob.h"
#include "store/s3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const st_error *err)
{
	fprintf(stderr, "storetool: %s\n", err->message);
	return 1;
}

static int put(st_store *s, const char *key, st_error *err)
{
	size_t len = 0, cap = 1 << 16;
	char *data = malloc(cap);
	int rc;

	while (data && !feof(stdin)) {
		if (len == cap) {
			char *n = realloc(data, cap *= 2);
			if (!n)
				break;
			data = n;
		}
		len += fread(data + len, 1, cap - len, stdin);
		if (ferror(stdin))
			break;
	}
	if (!data || ferror(stdin)) {
		free(data);
		fprintf(stderr, "storetool: cannot read standard input\n");
		return 1;
	}
	rc = st_store_write(s, key, data, len, NULL, err);
	free(data);
	return rc ? fail(err) : 0;
}

int main(int argc, char **argv)
{
	st_store *s = NULL;
	st_error err;
	int rc = 0;

	st_error_clear(&err);
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: storetool ls|cat|put|rm|mkbucket URL [KEY]\n");
		return 2;
	}
	if (st_store_open(&s, argv[2], &err) != ST_OK)
		return fail(&err);
	if (!strcmp(argv[1], "ls")) {
		st_store_entry *e = NULL;
		size_t n = 0;
		if (st_store_list(s, argc == 4 ? argv[3] : "", 0, &e, &n, &err) != ST_OK)
			rc = fail(&err);
		for (size_t i = 0; i < n; i++)
			printf("%s\n", e[i].key);
		st_store_entries_free(e, n);
	} else if (argc == 4 && !strcmp(argv[1], "cat")) {
		char *data = NULL;
		size_t len = 0;
		if (st_store_read(s, argv[3], 0, &data, &len, NULL, &err) != ST_OK)
			rc = fail(&err);
		else
			fwrite(data, 1, len, stdout);
		free(data);
	} else if (argc == 4 && !strcmp(argv[1], "put")) {
		rc = put(s, argv[3], &err);
	} else if (argc == 4 && !strcmp(argv[1], "rm")) {
		if (st_store_delete(s, argv[3], &err) != ST_OK)
			rc = fail(&err);
	} else if (argc == 3 && !strcmp(argv[1], "mkbucket")) {
		int r = !strncmp(argv[2], "s3://", 5)       ? st__s3_create_bucket(s, &err)
			: !strncmp(argv[2], "azblob://", 9) ? st__azblob_container_create(s, &err)
							    : ST_OK;
		if (r != ST_OK)
			rc = fail(&err);
	} else {
		fprintf(stderr, "usage: storetool ls|cat|put|rm|mkbucket URL [KEY]\n");
		rc = 2;
	}
	st_store_free(s);
	return rc;
}
