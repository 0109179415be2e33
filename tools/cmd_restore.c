/* statetool restore: put STATE.bak back; the current file becomes the backup. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char help[] =
	"usage: statetool restore [options] STATE\n"
	"\n"
	"Put the backup STATE.bak (written by every statetool change, and by Pulumi's DIY\n"
	"backend) back in place, byte for byte. The current file becomes STATE.bak, so a\n"
	"restore can itself be undone by another. The backup must load as a state.\n"
	"\n"
	"Options:\n"
	"  --backend DIR --stack NAME   a stack of a DIY backend\n"
	"  -h, --help         show this help\n";

int cmd_restore(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"stack", required_argument, NULL, OPT_STACK},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	cli_target t = {0};
	int c, rc, fd;
	char *bak = NULL, *data = NULL;
	st_lock *lock = NULL;
	st_state *s = NULL;
	st_error err;
	struct stat sb;

	st_error_clear(&err);
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
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
	if (asprintf(&bak, "%s.bak", t.path) < 0) {
		rc = EXIT_FAIL;
		goto out;
	}
	if ((rc = cli_lock(&t, &lock)) != EXIT_OK)
		goto out;
	/* The backup must be a state... */
	if (st_state_load_file(&s, bak, NULL, &err) != ST_OK) {
		if (err.code == ST_ENOTFOUND)
			cli_errorf("no backup '%s' to restore", bak);
		else
			cli_error(&err);
		rc = EXIT_FAIL;
		goto out;
	}
	/* ... and goes back byte for byte (compressed or not). */
	fd = open(bak, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) < 0 || !(data = malloc((size_t)sb.st_size + 1)) ||
	    read(fd, data, (size_t)sb.st_size) != sb.st_size) {
		cli_errorf("cannot read '%s': %s", bak, strerror(errno));
		if (fd >= 0)
			close(fd);
		rc = EXIT_FAIL;
		goto out;
	}
	close(fd);
	st_write_opts wo = {0};
	wo.backup = 1;
	if (st_file_write_atomic(t.path, data, (size_t)sb.st_size, &wo, &err) != ST_OK) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto out;
	}
	printf("restored %s from %s (the replaced version is now %s)\n", t.path, bak, bak);
	rc = EXIT_OK;
out:
	free(data);
	free(bak);
	st_state_free(s);
	if (lock)
		st_lock_release(lock, NULL);
	cli_target_free(&t);
	return rc;
}
