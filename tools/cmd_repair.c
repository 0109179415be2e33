/* statetool repair: Pulumi's toposort and prune, deterministic; nothing written if it fails. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
	"usage: statetool repair [options] STATE\n"
	"\n"
	"Repair a state that fails Pulumi's integrity check, as `pulumi state repair` does\n"
	"but deterministically (the same input always gives the same output): resources\n"
	"are sorted so that every parent, dependency, property dependency, deletedWith,\n"
	"replaceWith and provider comes before its users (a post-order walk in file order),\n"
	"then references to missing resources are dropped and a missing parent is cleared\n"
	"(the URN loses its parent-type chain). Dangling provider references are kept, as\n"
	"Pulumi keeps them. The manifest magic is recomputed (a state whose only problem\n"
	"is its magic is written with the right one). Every change is reported.\n"
	"A valid state is left alone. If the result would still be invalid, nothing is\n"
	"written and the remaining problems are listed.\n"
	"\n"
	"Options:\n" CLI_MUTATE_HELP;

static int run(st_edit *e, st_state *s, void *arg, st_error *err)
{
	cli_mutate_opts *mo = arg;
	st_problems p = {0};
	int rc;

	st_integrity_check(s, &p, NULL);
	if (p.errors == 0) {
		st_problems_clear(&p);
		printf("The snapshot is already valid; skipping repair\n");
		return ST_OK;
	}
	st_problems_clear(&p);
	rc = st_edit_repair(e, err);
	if (rc)
		return rc;
	st_integrity_check(s, &p, NULL);
	if (p.errors) {
		cli_errorf("Failed to repair the snapshot automatically: %zu integrity %s; "
			   "nothing was written:",
			   p.errors, p.errors == 1 ? "error remains" : "errors remain");
		for (size_t i = 0; i < p.count; i++)
			if (p.items[i].severity == ST_SEV_ERROR)
				cli_problem(&p.items[i]);
		fprintf(stderr, "Repair it by hand: statetool edit STATE (or export, edit, import)\n");
		st_problems_clear(&p);
		return EXIT_FAIL;
	}
	st_problems_clear(&p);
	snprintf(mo->summary, sizeof(mo->summary), "State repaired successfully");
	return ST_OK;
}

int cmd_repair(int argc, char **argv)
{
	cli_target t = {0};
	cli_mutate_opts mo = {.cmd = "repair"};
	char **pos;
	int npos;
	int rc = cli_mutate_parse(argc, argv, help, NULL, NULL, NULL, &t, &mo, &pos, &npos);
	if (rc != -1)
		return rc;
	if (npos)
		return cli_usage("repair", "unexpected argument '%s'", pos[0]);
	return cli_mutate(&t, &mo, run, &mo);
}
