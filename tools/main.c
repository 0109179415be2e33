/* statetool: the command table. Each subcommand lives in its own cmd_*.c file. */
#include "cli.h"

#include <locale.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

static const cli_command commands[] = {
	{"validate", cmd_validate, "check states and import files: schemas and Pulumi's integrity rules"},
	{"list", cmd_list, "list the resources of a state (URN, type, ID, flags)"},
	{"show", cmd_show, "show one resource (as `pulumi state get`), or as JSON"},
	{"diff", cmd_diff, "compare two states, stacks or generations (exit 0 same, 1 different)"},
	{"graph", cmd_graph, "parent, dependency and provider edges as Graphviz DOT or SVG"},
	{"history", cmd_history, "list a stack's generations (Pulumi's backups and history)"},
	{"convert", cmd_convert, "rewrite a state in another envelope, layout or compression"},
	{"migrate", cmd_migrate, "upgrade a version 0, 1 or 2 state to version 3 (or 4)"},
	{"delete", cmd_delete, "delete resources (dependents-first; --target-dependents, --force)"},
	{"rename", cmd_rename, "give a resource a new name, rewriting every reference"},
	{"protect", cmd_protect, "set the protect flag of resources"},
	{"unprotect", cmd_unprotect, "clear the protect flag of resources"},
	{"taint", cmd_taint, "mark resources for replacement on the next update"},
	{"untaint", cmd_untaint, "clear the taint flag of resources"},
	{"repair", cmd_repair, "reorder and prune a state that fails the integrity check"},
	{"pending", cmd_pending, "list pending operations; `pending clear` removes them, `pending import` records a create by ID"},
	{"replace-provider", cmd_replace_provider, "repoint resources from one provider to another"},
	{"edit", cmd_edit, "edit the deployment in $EDITOR, validated before it is written"},
	{"restore", cmd_restore, "put STATE.bak, or a stack's generation, back in place"},
	{"move", cmd_move, "move resources between stacks or files, crash-safe"},
	{"import", cmd_import, "add resources' state from an import file (pulumi import, no program)"},
	{"secrets", cmd_secrets, "show, verify, encrypt or rekey secrets (Pulumi's passphrase provider)"},
	{"index", cmd_index, "`index update`: index every stack of a backend into SQLite"},
	{"query", cmd_query, "questions across every indexed stack (filters or read-only SQL)"},
	{"stack", cmd_stack, "`stack rename`: a stack under a new name (pulumi stack rename)"},
	{"stacks", cmd_stacks, "list the stacks of a DIY backend with resource counts"},
	{"doctor", cmd_doctor, "every problem of a whole backend, each with the command that fixes it"},
	{"unlock", cmd_unlock, "remove the lock of a stack or a state file"},
	{"upgrade", cmd_upgrade, "move a legacy DIY backend to the project layout (pulumi state upgrade)"},
	{NULL, NULL, NULL},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: statetool <command> [options] [arguments]\n"
		   "       statetool --version | --help\n\n"
		   "Load, validate, migrate, edit, move and import Pulumi deployment states.\n\n"
		   "Commands:\n");
	for (const cli_command *c = commands; c->name; c++)
		fprintf(f, "  %-17s %s\n", c->name, c->summary);
	fprintf(f,
		"\nA STATE is a file (plain, gzip or zstd, either envelope; '-': standard input)\n"
		"or a stack of a DIY backend given as --backend URL -s/--stack NAME (URL: a\n"
		"directory, file://PATH, s3://BUCKET[/PREFIX], azblob://CONTAINER[/PREFIX],\n"
		"gs://BUCKET[/PREFIX] or postgres://[USER@]HOST/DATABASE; without --backend,\n"
		"PULUMI_BACKEND_URL, else backend.url of the project's Pulumi.yaml found\n"
		"upwards from the working directory). See BACKENDS IN ... in statetool(1).\n"
		"Every command accepts -y/--yes and ignores it: statetool never asks to confirm.\n"
		"Results go to stdout, diagnostics to stderr; with --json, stdout is one JSON\n"
		"document, also on failure (its \"error\": code, message, position). See OUTPUT.\n\n"
		"STATETOOL_THREADS=1 keeps big work on one thread (the results are the same);\n"
		"STATETOOL_TIMINGS=1 prints how long each step of a command took.\n"
		"\n"
		"Exit status: 0 success, 1 the operation failed or found problems, 2 usage error.\n"
		"An interrupt (Ctrl-C, SIGTERM) while a lock is held lets the change finish and the\n"
		"locks go first, then ends the command (130, 143); a second one ends it at once.\n"
		"Run 'statetool <command> --help' for a command's options. See statetool(1).\n");
}

int main(int argc, char **argv)
{
	setlocale(LC_ALL, "");
	/* A big state is built from millions of small allocations, partly on a second thread.
	 * glibc grows a thread's heap a page at a time, with an mprotect call each time, which
	 * serialises with the other thread's page faults; a 64 MiB pad makes it grow in large
	 * steps (address space only: untouched pages cost nothing). */
	mallopt(M_TOP_PAD, 64 << 20);
	cli_env_apply();
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("statetool %s\n", ST_VERSION);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) {
		if (argc < 3) {
			usage(stdout);
			return EXIT_OK;
		}
		for (const cli_command *c = commands; c->name; c++) {
			if (!strcmp(c->name, argv[2])) {
				char *hargv[] = {argv[2], "--help", NULL};
				return c->run(2, hargv);
			}
		}
		return cli_usage(NULL, "unknown command '%s'", argv[2]);
	}
	/* --json anywhere among the options: a failure too prints one JSON document */
	for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			cli_json_mode = 1;
	for (const cli_command *c = commands; c->name; c++) {
		if (!strcmp(c->name, argv[1])) {
			int rc;
			cli_catch_sigbus(c->name);
			cli_catch_interrupts();
			rc = c->run(argc - 1, argv + 1);
			fflush(stdout);
			cli_json_fail(c->name, rc);
			cli_interrupt_exit();
			return rc;
		}
	}
	cli_errorf("unknown command '%s'", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
