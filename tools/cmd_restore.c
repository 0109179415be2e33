/* statetool restore: put STATE.bak back; the current file becomes the backup. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
	"usage: statetool restore [options] STATE\n"
	"       statetool restore --backend URL --stack NAME\n"
	"\n"
	"Put the backup STATE.bak (written by every statetool change, and by Pulumi's DIY\n"
	"backend) back in place, byte for byte. The current file becomes STATE.bak, so a\n"
	"restore can itself be undone by another. The backup must load as a state. A stack\n"
	"(named by --stack or by its file's path inside a DIY backend) is restored under\n"
	"Pulumi's lock, in its backend's store.\n"
	"\n"
	"Options:\n"
	"  --backend URL -s, --stack NAME   a stack of a DIY backend\n"
	"  -h, --help         show this help\n";

/* The store and key of the target's object (store borrowed from the backend, or new). */
static int locate(cli_target *t, st_store **store, int *owned, char **key)
{
	st_error err;
	int rc;

	st_error_clear(&err);
	*owned = !t->backend;
	if (t->backend) {
		*store = st_backend_store(t->backend);
		rc = st_backend_stack_key(t->backend, t->qname, key, NULL, &err);
	} else {
		rc = st_store_open_file(store, key, t->path, &err);
	}
	if (rc) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static int restore(const char *name, st_store *store, const char *key, const char *bak)
{
	st_store_write_opts wo = ST_STORE_WRITE_OPTS_INIT;
	char *data = NULL;
	size_t len = 0;
	st_state *s = NULL;
	st_error err;
	int rc;

	st_error_clear(&err);
	rc = st_store_read(store, bak, 0, &data, &len, NULL, &err);
	if (rc == ST_ENOTFOUND) {
		cli_errorf("no backup '%s.bak' to restore", name);
		return EXIT_FAIL;
	}
	/* the backup must be a state ... */
	if (rc == ST_OK) {
		char *plain = NULL;
		size_t plen = 0;
		rc = st_file_decompress(data, len, 0, bak, &plain, &plen, NULL, &err);
		if (rc == ST_OK)
			rc = st_state_load_buffer(&s, plain, plen, bak, NULL, &err);
		free(plain);
	}
	/* ... and goes back byte for byte (compressed or not); the current one becomes .bak */
	wo.backup_key = bak;
	if (rc == ST_OK)
		rc = st_store_write(store, key, data, len, &wo, &err);
	free(data);
	st_state_free(s);
	if (rc) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

int cmd_restore(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"stack", required_argument, NULL, OPT_STACK},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	cli_target t = {0};
	int c, rc, owned = 0;
	char *key = NULL, *bak = NULL;
	st_store *store = NULL;
	st_lock *lock = NULL;

	while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
		if (cli_target_option(&t, c, optarg))
			continue;
		if (c == 'h')
			return cli_help(help);
		return cli_usage("restore", "bad option");
	}
	if (argc - optind > 1)
		return cli_usage("restore", "too many arguments");
	t.arg = optind < argc ? argv[optind] : NULL;
	if ((rc = cli_target_resolve(&t, "restore", 0)) != EXIT_OK)
		goto out;
	if (!t.backend && !strcmp(t.path, "-")) {
		rc = cli_usage("restore", "standard input has no backup (filter mode keeps none): "
					       "restore works on a file or a stack");
		goto out;
	}
	if ((rc = locate(&t, &store, &owned, &key)) != EXIT_OK)
		goto out;
	if (!(bak = malloc(strlen(key) + 5))) {
		rc = EXIT_FAIL;
		goto out;
	}
	snprintf(bak, strlen(key) + 5, "%s.bak", key);
	if ((rc = cli_lock(&t, &lock)) != EXIT_OK)
		goto out;
	const char *name = cli_target_where(&t);
	if ((rc = restore(name, store, key, bak)) != EXIT_OK)
		goto out;
	{
		printf("restored %s from %s.bak (the replaced version is now %s.bak)\n", name, name,
		       name);
	}
	rc = EXIT_OK;
out:
	free(key);
	free(bak);
	if (lock)
		st_lock_release(lock, NULL);
	if (owned)
		st_store_free(store);
	cli_target_free(&t);
	return rc;
}
