/* statetool upgrade: a legacy DIY backend to the project layout (`pulumi state upgrade`). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help[] =
	"usage: statetool upgrade --backend URL [options]\n"
	"\n"
	"Upgrade a DIY backend of the legacy layout (.pulumi/stacks/STACK.json, no\n"
	".pulumi/meta.yaml) to the project layout, as `pulumi state upgrade` does, on any\n"
	"store (directory, s3://, azblob://, postgres://). Each stack goes to\n"
	".pulumi/stacks/PROJECT/STACK.json (the same bytes; its project is the one its first\n"
	"resource's URN names, as Pulumi guesses it), its old object is kept as\n"
	"STACK.json.bak, its history files move to .pulumi/history/PROJECT/STACK/ as Pulumi\n"
	"moves them, and its backups and tags file move to the project's place too (Pulumi\n"
	"leaves those behind). .pulumi/meta.yaml (version: 1) is written last: an interrupted\n"
	"upgrade leaves a backend Pulumi still reads, and running the command again finishes\n"
	"it. A stack with no resources names no project: it is skipped, as Pulumi skips it,\n"
	"unless --project gives one. Refused while any stack is locked.\n"
	"\n"
	"Options:\n"
	"  --backend URL         the backend (default $PULUMI_BACKEND_URL)\n"
	"  --project NAME        the project of every stack whose resources name none\n"
	"  --project STACK=NAME  the project of that stack (repeatable; wins over NAME)\n"
	"  --dry-run             list every move, write nothing\n"
	"  -y, --yes             accepted for Pulumi's habit (statetool does not ask)\n"
	"  -h, --help            show this help\n"
	"\n"
	"Prints \"Upgraded N stack(s) to project mode\" (Pulumi's words), or \"no change\"\n"
	"when the backend is in the project layout already; progress on standard error when\n"
	"it is a terminal. Exit status 0, 1 when the upgrade failed, 2 on a usage error.\n";

typedef struct upgrade_cli {
	const char *all;     /* --project NAME */
	char **pairs;        /* --project STACK=NAME */
	int npairs;
	int dry_run;
	int tty;
} upgrade_cli;

static const char *project_for(void *ctx, const char *stack)
{
	upgrade_cli *u = ctx;
	size_t n = strlen(stack);
	for (int i = 0; i < u->npairs; i++)
		if (!strncmp(u->pairs[i], stack, n) && u->pairs[i][n] == '=')
			return u->pairs[i] + n + 1;
	return u->all;
}

static void on_event(void *ctx, const st_upgrade_event *ev)
{
	upgrade_cli *u = ctx;
	if (!strcmp(ev->kind, "skip")) {
		/* Pulumi's warning, and how to give the stack a project */
		cli_warnf("Skipping stack \"%s\": %s%s%s%s", ev->stack, ev->reason,
			  ev->project ? "" : " (give it one with --project ",
			  ev->project ? "" : ev->stack, ev->project ? "" : "=NAME)");
		return;
	}
	if (!u->dry_run)
		return;
	if (u->tty)
		fflush(stderr);
	if (!strcmp(ev->kind, "stack"))
		printf("move %s -> %s (the old object kept as %s.bak)\n", ev->from, ev->to,
		       ev->from);
	else if (!strcmp(ev->kind, "move"))
		printf("move %s -> %s\n", ev->from, ev->to);
	else if (!strcmp(ev->kind, "meta"))
		printf("write %s (version: 1)\n", ev->to);
}

static void on_progress(void *ctx, size_t done, size_t total)
{
	upgrade_cli *u = ctx;
	if (!u->tty || u->dry_run)
		return;
	fprintf(stderr, "\rupgrading: %zu/%zu stacks", done, total);
	if (done == total)
		fputc('\n', stderr);
	fflush(stderr);
}

static int parse_project(upgrade_cli *u, const char *arg)
{
	const char *eq = strchr(arg, '=');
	if (!eq) {
		if (!st_project_name_valid(arg))
			return cli_usage("upgrade", "invalid project name '%s'", arg);
		u->all = arg;
		return EXIT_OK;
	}
	char *stack = strndup(arg, (size_t)(eq - arg));
	int ok = stack && st_stack_name_valid(stack) && st_project_name_valid(eq + 1);
	free(stack);
	if (!ok)
		return cli_usage("upgrade", "invalid --project '%s': expected NAME or STACK=NAME",
				 arg);
	char **np = realloc(u->pairs, (size_t)(u->npairs + 1) * sizeof(*np));
	if (!np)
		return cli_usage("upgrade", "out of memory");
	u->pairs = np;
	u->pairs[u->npairs++] = (char *)arg;
	return EXIT_OK;
}

int cmd_upgrade(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"project", required_argument, NULL, 'p'},
		{"dry-run", no_argument, NULL, OPT_DRY_RUN},
		{"yes", no_argument, NULL, 'y'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	upgrade_cli u = {0};
	st_upgrade_opts o = ST_UPGRADE_OPTS_INIT;
	st_upgrade_report rep;
	const char *url = NULL;
	st_backend *b = NULL;
	st_error err;
	int c, rc = EXIT_OK;

	st_error_clear(&err);
	while ((c = cli_getopt(argc, argv, "hy", opts)) != -1) {
		switch (c) {
		case OPT_BACKEND: url = optarg; break;
		case OPT_DRY_RUN: u.dry_run = 1; break;
		case 'y': break;
		case 'p':
			if ((rc = parse_project(&u, optarg)) != EXIT_OK)
				goto out;
			break;
		case 'h': free(u.pairs); return cli_help(help);
		default: rc = cli_usage("upgrade", "bad option"); goto out;
		}
	}
	if (optind < argc) {
		rc = cli_usage("upgrade", "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	u.tty = isatty(STDERR_FILENO);
	o.dry_run = u.dry_run;
	o.project_for = project_for;
	o.event = on_event;
	o.progress = on_progress;
	o.ctx = &u;
	if ((rc = cli_backend_open(&b, url)) != EXIT_OK)
		goto out;
	if (st_backend_upgrade(b, &o, &rep, &err) != ST_OK) {
		cli_error(&err);
		rc = err.code == ST_EINVAL ? EXIT_USAGE : EXIT_FAIL;
		goto out;
	}
	if (!rep.stacks && !rep.meta)
		printf("no change: the backend is in the project layout already\n");
	else if (u.dry_run)
		printf("dry run: %zu stack(s) to upgrade, %zu skipped; nothing written\n",
		       rep.upgraded, rep.skipped);
	else
		printf("Upgraded %zu stack(s) to project mode\n", rep.upgraded);
out:
	free(u.pairs);
	st_backend_free(b);
	return rc;
}
