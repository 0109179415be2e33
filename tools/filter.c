/* Filter mode: a state read from standard input (or a file) and the result written to standard
 * output, only once every check passed (see cli.h and the man page's FILTER MODE). */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The real standard output, set aside by the first cli_filter_begin; -1 before. */
static int out_fd = -1;

int cli_filter_begin(cli_target *t)
{
	int stdin_state = !t->stack && t->arg && !strcmp(t->arg, "-");
	const char *tmp = getenv("TMPDIR");

	if (t->out ? strcmp(t->out, "-") != 0 : !stdin_state)
		return EXIT_OK;
	t->filter = 1;
	if (out_fd < 0) {
		fflush(stdout);
		out_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		if (out_fd < 0) {
			cli_errorf("cannot write to standard output: %s", strerror(errno));
			return EXIT_FAIL;
		}
		/* what the command prints goes to stderr: stdout carries the state only */
		if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
			cli_errorf("cannot redirect standard output: %s", strerror(errno));
			return EXIT_FAIL;
		}
		signal(SIGPIPE, SIG_IGN); /* a closed pipe is an error (EPIPE), not a kill */
	}
	if (t->tmpdir)
		return EXIT_OK;
	if (asprintf(&t->tmpdir, "%s/statetool-filter-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0) {
		t->tmpdir = NULL;
		cli_errorf("out of memory");
		return EXIT_FAIL;
	}
	if (!mkdtemp(t->tmpdir)) {
		cli_errorf("cannot create a temporary directory '%s': %s", t->tmpdir,
			   strerror(errno));
		free(t->tmpdir);
		t->tmpdir = NULL;
		return EXIT_FAIL;
	}
	if (asprintf(&t->tmp, "%s/state", t->tmpdir) < 0) {
		t->tmp = NULL;
		cli_errorf("out of memory");
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

const char *cli_save_path(const cli_target *t)
{
	return t->filter ? t->tmp : t->path;
}

int cli_stdout_write(const void *data, size_t len)
{
	int fd = out_fd >= 0 ? out_fd : STDOUT_FILENO;
	const char *p = data;

	if (out_fd < 0 && fflush(stdout) != 0) {
		cli_errorf("cannot write to standard output: %s", strerror(errno));
		return EXIT_FAIL;
	}
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			cli_errorf("cannot write to standard output: %s",
				   n < 0 ? strerror(errno) : "nothing written");
			return EXIT_FAIL;
		}
		p += n;
		len -= (size_t)n;
	}
	return EXIT_OK;
}

int cli_filter_emit(cli_target *t)
{
	char buf[1 << 16];
	ssize_t n;
	int fd, rc = EXIT_OK;

	if (!t->filter)
		return EXIT_OK;
	fd = open(t->tmp, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cli_errorf("cannot open the result '%s': %s", t->tmp, strerror(errno));
		return EXIT_FAIL;
	}
	while (rc == EXIT_OK && (n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			cli_errorf("cannot read the result '%s': %s", t->tmp, strerror(errno));
			rc = EXIT_FAIL;
			break;
		}
		rc = cli_stdout_write(buf, (size_t)n);
	}
	close(fd);
	return rc;
}

/* Removes the filter's temporary directory and what is in it (the result, a staged file). */
void cli_filter_end(cli_target *t)
{
	DIR *d;
	struct dirent *de;

	if (t->tmpdir && (d = opendir(t->tmpdir))) {
		while ((de = readdir(d))) {
			char *p;
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (asprintf(&p, "%s/%s", t->tmpdir, de->d_name) >= 0) {
				unlink(p);
				free(p);
			}
		}
		closedir(d);
		rmdir(t->tmpdir);
	}
	free(t->tmp);
	free(t->tmpdir);
	t->tmp = NULL;
	t->tmpdir = NULL;
}

int cli_stdout_isatty(void)
{
	return isatty(out_fd >= 0 ? out_fd : STDOUT_FILENO);
}
