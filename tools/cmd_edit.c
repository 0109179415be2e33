/* statetool edit: the deployment in $EDITOR, validated on save; --from FILE for scripts. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char help[] =
	"usage: statetool edit [options] STATE\n"
	"       statetool edit [options] --from FILE STATE\n"
	"\n"
	"Open the state's deployment in $VISUAL or $EDITOR (default vi) as indented JSON.\n"
	"Secrets stay ciphertext: nothing is decrypted, so no plaintext reaches the\n"
	"temporary file (created 0600 in $TMPDIR and removed afterwards). When the editor\n"
	"exits, the result is checked (JSON, schemas, integrity rules); the changes are\n"
	"listed and written. An invalid result is never written: on a terminal you may edit\n"
	"it again or discard it; otherwise the command fails.\n"
	"\n"
	"Options:\n"
	"  --from FILE        take the new deployment from FILE instead of an editor: a\n"
	"                     deployment object, a stack export or a checkpoint ('-' reads\n"
	"                     standard input)\n" CLI_MUTATE_HELP;

typedef struct ctx {
	const char *from;
	cli_mutate_opts *mo;
} ctx;

static int extra(int opt, const char *arg, void *p)
{
	if (opt == OPT_FROM) {
		((ctx *)p)->from = arg;
		return 0;
	}
	return -1;
}

/* The deployment inside a parsed document: itself, or that of an envelope. */
static json_t *deployment_of(json_t *doc)
{
	json_t *d;
	if ((d = json_object_get(doc, "deployment")))
		return json_incref(d);
	if ((d = json_object_get(json_object_get(doc, "checkpoint"), "latest")))
		return json_incref(d);
	return json_incref(doc);
}

static int ask_again(void)
{
	FILE *tty;
	char line[64];
	if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO))
		return 0;
	tty = fopen("/dev/tty", "r");
	if (!tty)
		return 0;
	fprintf(stderr, "Edit again [e] or discard the changes [d]? ");
	fflush(stderr);
	int again = fgets(line, sizeof(line), tty) && (line[0] == 'e' || line[0] == 'E');
	fclose(tty);
	return again;
}

static int run_editor(const char *path)
{
	const char *ed = getenv("VISUAL");
	pid_t pid;
	int status;
	if (!ed || !*ed)
		ed = getenv("EDITOR");
	if (!ed || !*ed)
		ed = "vi";
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "exec $0 \"$1\"", ed, path, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Parses, checks and applies one candidate; returns ST_OK, or EXIT_FAIL after printing. */
static int apply(st_edit *e, st_state *s, const char *text, size_t len, const char *name,
		 st_error *err)
{
	json_t *doc = NULL, *dep;
	st_problems p = {0};
	int rc = st_json_parse(&doc, text, len, name, NULL, NULL, NULL, err);
	if (rc) {
		cli_error(err);
		st_error_clear(err);
		return EXIT_FAIL;
	}
	dep = deployment_of(doc);
	json_decref(doc);
	rc = st_edit_replace_deployment(e, dep, err);
	if (rc) {
		cli_error(err);
		st_error_clear(err);
		return EXIT_FAIL;
	}
	if (st_validate(s, NULL, &p, err) != ST_OK) {
		cli_error(err);
		st_error_clear(err);
		st_edit_rollback(e);
		return EXIT_FAIL;
	}
	if (p.errors) {
		cli_errorf("the edited deployment is invalid (%zu error%s); nothing written:",
			   p.errors, p.errors == 1 ? "" : "s");
		for (size_t i = 0; i < p.count; i++)
			if (p.items[i].severity == ST_SEV_ERROR)
				fprintf(stderr, "  [%s] %s\n    at %s\n", p.items[i].rule,
					p.items[i].message, p.items[i].pointer);
		st_problems_clear(&p);
		st_edit_rollback(e);
		return EXIT_FAIL;
	}
	st_problems_clear(&p);
	return ST_OK;
}

static int run(st_edit *e, st_state *s, void *arg, st_error *err)
{
	ctx *c = arg;
	char *text = NULL, *out = NULL, tmpl[4096];
	size_t len = 0, olen;
	int rc = EXIT_FAIL, fd;
	st_style st;

	if (c->from) {
		if (st_file_read(c->from, 0, &text, &len, NULL, err) != ST_OK)
			return err->code;
		rc = apply(e, s, text, len, strcmp(c->from, "-") ? c->from : "<stdin>", err);
		free(text);
		return rc;
	}
	json_t *dep = st_state_deployment(s);
	st_style_export(&st);
	if (!dep || st_json_dump(dep, &st, &out, &olen, err) != ST_OK)
		return dep ? err->code : (cli_errorf("the state has no deployment to edit"), EXIT_FAIL);
	snprintf(tmpl, sizeof(tmpl), "%s/statetool-edit-XXXXXX.json",
		 getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	fd = mkstemps(tmpl, 5);
	if (fd < 0) {
		cli_errorf("cannot create a temporary file: %s", strerror(errno));
		free(out);
		return EXIT_FAIL;
	}
	if (write(fd, out, olen) != (ssize_t)olen) {
		cli_errorf("cannot write '%s': %s", tmpl, strerror(errno));
		close(fd);
		unlink(tmpl);
		free(out);
		return EXIT_FAIL;
	}
	close(fd);
	free(out);
	for (;;) {
		int ec = run_editor(tmpl);
		if (ec != 0) {
			cli_errorf("the editor failed (exit status %d); nothing written", ec);
			rc = EXIT_FAIL;
			break;
		}
		free(text);
		text = NULL;
		if (st_file_read(tmpl, 0, &text, &len, NULL, err) != ST_OK) {
			cli_error(err);
			rc = EXIT_FAIL;
			break;
		}
		rc = apply(e, s, text, len, tmpl, err);
		if (rc == ST_OK || !ask_again())
			break;
	}
	free(text);
	unlink(tmpl);
	return rc;
}

int cmd_edit(int argc, char **argv)
{
	static const struct option extra_opts[] = {{"from", required_argument, NULL, OPT_FROM},
						   {NULL, 0, NULL, 0}};
	cli_target t = {0};
	cli_mutate_opts mo = {.cmd = "edit", .show_diff = 1};
	ctx c = {0};
	char **pos;
	int npos;
	int rc = cli_mutate_parse(argc, argv, help, extra_opts, extra, &c, &t, &mo, &pos, &npos);
	if (rc != -1)
		return rc;
	if (npos)
		return cli_usage("edit", "unexpected argument '%s'", pos[0]);
	c.mo = &mo;
	snprintf(mo.summary, sizeof(mo.summary), "State updated");
	return cli_mutate(&t, &mo, run, &c);
}
