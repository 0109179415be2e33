/* statetool edit: the deployment in $EDITOR, validated on save; --from FILE for scripts. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
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
	"Filter mode (STATE '-', standard input, or -o -): the result goes to standard\n"
	"output; the editor runs on the terminal (/dev/tty), and without one the command\n"
	"is refused (exit 2): give --from FILE (not '-': standard input is the state).\n"
	"Otherwise the editor gets the command's standard input and output: when either is\n"
	"not a terminal and neither $VISUAL nor $EDITOR is set, the command is refused\n"
	"(exit 2) rather than run vi without a terminal; an editor they name is run as it\n"
	"is (a script needs no terminal).\n"
	"\n"
	"The new deployment must belong to the stack: a resource whose URN names another stack\n"
	"(or project) is refused, as `pulumi stack import` refuses it, and so is a result with\n"
	"warnings the state did not have (validate's warnings: a state with none gains none\n"
	"unnoticed); --force writes either anyway, each printed as a warning. The stack is the\n"
	"one the state is in a DIY backend, else the one it names (its checkpoint's `stack`, its\n"
	"root stack resource).\n"
	"\n"
	"The result's secrets must still open, as Pulumi's edit decrypts them: with\n"
	"PULUMI_CONFIG_PASSPHRASE (or _FILE) set, every ciphertext is decrypted under the\n"
	"edited passphrase provider and one that fails is refused; without it, a changed\n"
	"secrets_providers over ciphertexts is refused (`statetool secrets rekey` changes a\n"
	"passphrase). --force writes either, with a warning.\n"
	"\n"
	"Options:\n"
	"  --from FILE        take the new deployment from FILE instead of an editor: a\n"
	"                     deployment object, a stack export or a checkpoint ('-' reads\n"
	"                     standard input)\n"
	"  --force            write resources of another stack, new warnings, and secrets\n"
	"                     that do not open\n" CLI_MUTATE_HELP;

typedef struct ctx {
	const char *from;
	int force;
	cli_mutate_opts *mo;
	const cli_target *t;   /* resolved by the time the operation runs */
	char *stack, *project; /* the stack the deployment must belong to (NULL: unknown) */
	st_problems before;    /* the state's warnings before the edit */
} ctx;

static int extra(int opt, const char *arg, void *p)
{
	if (opt == OPT_FROM) {
		((ctx *)p)->from = arg;
		return 0;
	}
	if (opt == OPT_FORCE) {
		((ctx *)p)->force = 1;
		return 0;
	}
	return -1;
}

/* The stack the deployment belongs to: where it lies in a backend, else what it names. */
static void target_names(ctx *c, st_state *s)
{
	const char *q = c->t->backend ? c->t->qname : NULL;
	if (q) {
		const char *s1 = strchr(q, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
		c->stack = strdup(s2 ? s2 + 1 : q);
		c->project = s2 ? strndup(s1 + 1, (size_t)(s2 - s1 - 1)) : NULL;
		return;
	}
	st_stack_names(s, NULL, NULL, &c->stack, &c->project, NULL);
}

/* Pulumi's `stack import` rule (SaveSnapshot): every resource of the new deployment belongs
 * to the stack. Refused unless --force, which prints each as a warning. */
static int other_stack(ctx *c, st_state *s)
{
	json_t *res = st_state_resources(s, 0), *r;
	size_t i, bad = 0;
	st_urn u;

	if (!c->stack)
		return EXIT_OK;
	json_array_foreach(res, i, r) {
		const char *urn = json_string_value(json_object_get(r, "urn"));
		const char *what = NULL, *want = NULL;
		int len = 0;
		const char *got = NULL;
		if (!urn || st_urn_parse(urn, &u) != ST_OK)
			continue;
		if (u.stack_len != strlen(c->stack) || strncmp(u.stack, c->stack, u.stack_len)) {
			what = "stack";
			got = u.stack;
			len = (int)u.stack_len;
			want = c->stack;
		} else if (c->project && (u.project_len != strlen(c->project) ||
					  strncmp(u.project, c->project, u.project_len))) {
			what = "project";
			got = u.project;
			len = (int)u.project_len;
			want = c->project;
		}
		if (!what)
			continue;
		bad++;
		if (c->force)
			cli_warnf("resource '%s' is from a different %s (%.*s != %s)", urn, what, len,
				  got, want);
		else
			cli_errorf("resource '%s' is from a different %s (%.*s != %s)", urn, what, len,
				   got, want);
	}
	if (bad && !c->force) {
		cli_errorf("importing this file could be dangerous; rerun with --force to proceed "
			   "anyway");
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* Warnings of `after` that `before` did not have (each counted as often as it appears). */
static size_t new_warnings(const st_problems *before, const st_problems *after, int *isnew)
{
	char *used = calloc(before->count + 1, 1);
	size_t n = 0;

	for (size_t i = 0; i < after->count; i++) {
		const st_problem *a = &after->items[i];
		isnew[i] = 0;
		if (a->severity != ST_SEV_WARNING)
			continue;
		isnew[i] = 1;
		for (size_t k = 0; used && k < before->count; k++) {
			const st_problem *b = &before->items[k];
			if (!used[k] && b->severity == ST_SEV_WARNING && !strcmp(a->rule, b->rule) &&
			    !strcmp(a->message, b->message)) {
				used[k] = 1;
				isnew[i] = 0;
				break;
			}
		}
		n += (size_t)isnew[i];
	}
	free(used);
	return n;
}

/* The "valid stays valid" guard, counting warnings: a result with warnings the state did not
 * have is refused unless --force (then each is printed as a warning). */
static int gained_warnings(ctx *c, const st_problems *after)
{
	int *isnew = calloc(after->count + 1, sizeof(*isnew));
	size_t n;

	if (!isnew) {
		cli_errorf("out of memory");
		return EXIT_FAIL;
	}
	n = new_warnings(&c->before, after, isnew);
	if (n && !c->force)
		cli_errorf("the edited deployment has %zu warning%s the state did not have; nothing "
			   "written (rerun with --force to write it anyway):",
			   n, n == 1 ? "" : "s");
	for (size_t i = 0; n && i < after->count; i++) {
		const st_problem *q = &after->items[i];
		if (!isnew[i])
			continue;
		if (c->force)
			cli_warnf("[%s] %s (at %s)", q->rule, q->message, q->pointer);
		else
			cli_problem(q);
	}
	free(isnew);
	return n && !c->force ? EXIT_FAIL : EXIT_OK;
}

/* The deployment inside a parsed document (stolen): itself, or that of an envelope, which is
 * checked as a load checks it (its version, how Go decodes it). NULL after printing. */
static json_t *deployment_of(json_t *doc, const char *name)
{
	st_state *env = NULL;
	st_error err = {0};
	json_t *d;

	if (!json_is_object(doc) ||
	    (!json_object_get(doc, "deployment") && !json_object_get(doc, "checkpoint")))
		return doc;
	if (st_state_from_json(&env, doc, NULL, NULL, name, &err) != ST_OK) {
		cli_error(&err);
		st_error_clear(&err);
		return NULL;
	}
	d = json_incref(st_state_deployment(env));
	st_state_free(env);
	if (!d)
		cli_errorf("%s: the file has no deployment", name);
	return d;
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

/* $VISUAL or $EDITOR names an editor (else vi is run). */
static int editor_set(void)
{
	const char *v = getenv("VISUAL"), *e = getenv("EDITOR");
	return (v && *v) || (e && *e);
}

/* In filter mode the editor's standard input and output are the terminal (/dev/tty): the
 * command's own carry the state. */
static int run_editor(const char *path, int on_tty)
{
	const char *ed = getenv("VISUAL");
	pid_t pid;
	int status, tty = -1;
	if (!ed || !*ed)
		ed = getenv("EDITOR");
	if (!ed || !*ed)
		ed = "vi";
	if (on_tty && (tty = open("/dev/tty", O_RDWR | O_CLOEXEC)) < 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		if (tty >= 0)
			close(tty);
		return -1;
	}
	if (pid == 0) {
		if (tty >= 0 && (dup2(tty, STDIN_FILENO) < 0 || dup2(tty, STDOUT_FILENO) < 0))
			_exit(127);
		execl("/bin/sh", "sh", "-c", "exec $0 \"$1\"", ed, path, (char *)NULL);
		_exit(127);
	}
	if (tty >= 0)
		close(tty);
	cli_editor_running(1); /* a Ctrl-C typed in the editor is the editor's */
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			cli_editor_running(0);
			return -1;
		}
	cli_editor_running(0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The edited deployment's ciphertexts must still open (Pulumi's edit decrypts every secret
 * of the result, state_edit_encoder.go). With the passphrase in the environment, every one is
 * decrypted under the edited provider; without it, a changed `secrets_providers` over
 * ciphertexts is refused, since none of them would open under it. --force writes either. */
static int secrets_still_open(ctx *c, st_state *s, const json_t *old_sp)
{
	json_t *dep = st_state_deployment(s);
	json_t *sp = dep ? json_object_get(dep, "secrets_providers") : NULL;
	const char *type = json_string_value(json_object_get(sp, "type"));
	size_t ct = 0, pt = 0, seen = 0;
	st_secrets *sec = NULL;
	st_problems p = {0};
	st_error err;
	int rc;

	st_secrets_count(s, &ct, &pt);
	if (!ct || !type)
		return EXIT_OK; /* (no provider over ciphertexts: validate's secrets/no-provider) */
	if (!strcmp(type, "passphrase") &&
	    (getenv("PULUMI_CONFIG_PASSPHRASE") || getenv("PULUMI_CONFIG_PASSPHRASE_FILE"))) {
		if (cli_open_secrets(s, NULL, 1, &sec) != EXIT_OK) {
			if (c->force) {
				cli_warnf("the edited deployment's secrets could not be checked: its "
					  "secrets provider did not open (written: --force)");
				return EXIT_OK;
			}
			cli_errorf("the edited deployment's secrets could not be checked: its "
				   "secrets provider did not open (above); nothing written (rerun "
				   "with --force to write it anyway)");
			return EXIT_FAIL;
		}
		st_error_clear(&err);
		rc = st_secrets_verify(s, sec, &p, &seen, &err);
		st_secrets_free(sec);
		if (rc != ST_OK) {
			cli_error(&err);
			return EXIT_FAIL;
		}
		if (p.count && !c->force) {
			cli_errorf("%zu of the edited deployment's %zu secrets do not decrypt under its "
				   "secrets provider; nothing written (rerun with --force to write it "
				   "anyway):", p.count, seen);
			for (size_t i = 0; i < p.count && i < 10; i++)
				cli_problem(&p.items[i]);
		} else if (p.count) {
			cli_warnf("%zu of the edited deployment's %zu secrets do not decrypt under its "
				  "secrets provider (written: --force)", p.count, seen);
		}
		rc = p.count && !c->force ? EXIT_FAIL : EXIT_OK;
		st_problems_clear(&p);
		return rc;
	}
	if (json_equal((json_t *)old_sp, sp))
		return EXIT_OK;
	if (c->force) {
		cli_warnf("the edited deployment changes secrets_providers while %zu secrets are "
			  "encrypted: they may open under no passphrase (written: --force)", ct);
		return EXIT_OK;
	}
	cli_errorf("the edited deployment changes secrets_providers while %zu secrets are still "
		   "encrypted: they would open under no passphrase; nothing written. To change the "
		   "passphrase use `statetool secrets rekey`; to have every secret checked under "
		   "the edited provider set PULUMI_CONFIG_PASSPHRASE; --force writes it anyway", ct);
	return EXIT_FAIL;
}

/* Parses, checks and applies one candidate; returns ST_OK, or EXIT_FAIL after printing. */
static int apply(ctx *c, st_edit *e, st_state *s, const char *text, size_t len,
		 const char *name, st_error *err)
{
	json_t *doc = NULL, *dep, *was = st_state_deployment(s), *old_sp;
	st_problems p = {0};
	int rc = st_json_parse(&doc, text, len, name, NULL, NULL, NULL, err);
	if (rc) {
		cli_error(err);
		st_error_clear(err);
		return EXIT_FAIL;
	}
	dep = deployment_of(doc, name);
	if (!dep)
		return EXIT_FAIL;
	old_sp = json_incref(was ? json_object_get(was, "secrets_providers") : NULL);
	rc = st_edit_replace_deployment(e, dep, err);
	if (rc) {
		cli_error(err);
		st_error_clear(err);
		json_decref(old_sp);
		return EXIT_FAIL;
	}
	if (other_stack(c, s) != EXIT_OK) {
		rc = EXIT_FAIL;
	} else if (st_validate(s, NULL, &p, err) != ST_OK) {
		cli_error(err);
		st_error_clear(err);
		rc = EXIT_FAIL;
	} else if (p.errors) {
		cli_errorf("the edited deployment is invalid (%zu error%s); nothing written:",
			   p.errors, p.errors == 1 ? "" : "s");
		for (size_t i = 0; i < p.count; i++)
			if (p.items[i].severity == ST_SEV_ERROR)
				cli_problem(&p.items[i]);
		rc = EXIT_FAIL;
	} else if ((rc = gained_warnings(c, &p)) == EXIT_OK) {
		rc = secrets_still_open(c, s, old_sp);
	}
	st_problems_clear(&p);
	json_decref(old_sp);
	if (rc != EXIT_OK) {
		st_edit_rollback(e);
		return EXIT_FAIL;
	}
	return ST_OK;
}

static int run(st_edit *e, st_state *s, void *arg, st_error *err)
{
	ctx *c = arg;
	char *text = NULL, *out = NULL, tmpl[4096];
	size_t len = 0, olen;
	int rc = EXIT_FAIL, fd;
	st_style st;

	/* what the new deployment is checked against: the stack, the state's warnings */
	target_names(c, s);
	if (st_validate(s, NULL, &c->before, err) != ST_OK)
		return err->code;
	if (c->from) {
		if (st_file_read(c->from, 0, &text, &len, NULL, err) != ST_OK)
			return err->code;
		rc = apply(c, e, s, text, len, strcmp(c->from, "-") ? c->from : "<stdin>", err);
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
		int ec = run_editor(tmpl, c->t->filter);
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
		rc = apply(c, e, s, text, len, tmpl, err);
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
						   {"force", no_argument, NULL, OPT_FORCE},
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
	if (c.from && !strcmp(c.from, "-") && t.arg && !strcmp(t.arg, "-"))
		return cli_usage("edit", "STATE and --from cannot both be standard input");
	int filter = (t.arg && !strcmp(t.arg, "-") && !t.stack) || (t.out && !strcmp(t.out, "-"));
	if (!c.from && filter) {
		/* filter mode: stdin and stdout carry the state, the editor gets the terminal */
		int tty = open("/dev/tty", O_RDWR | O_CLOEXEC);
		if (tty < 0)
			return cli_usage("edit", "in filter mode (STATE '-' or -o -) the editor "
						 "needs a terminal, and /dev/tty cannot be opened "
						 "(%s): give the new deployment with --from FILE",
					 strerror(errno));
		close(tty);
	}
	if (!c.from && !filter && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) &&
	    !editor_set())
		/* vi on a pipe or a file: escapes on stdout, a hung or failed edit */
		return cli_usage("edit", "standard %s is not a terminal, which the default editor "
					 "(vi) needs: run edit on a terminal, set $VISUAL or $EDITOR "
					 "to an editor that needs none, or give the new deployment "
					 "with --from FILE",
				 !isatty(STDIN_FILENO) ? "input" : "output");
	c.mo = &mo;
	mo.any_place = 1; /* the result is checked instead (other_stack) */
	snprintf(mo.summary, sizeof(mo.summary), "State updated");
	c.t = &t;
	rc = cli_mutate(&t, &mo, run, &c);
	free(c.stack);
	free(c.project);
	st_problems_clear(&c.before);
	return rc;
}
