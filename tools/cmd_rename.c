/* statetool rename: a resource's new name, every reference rewritten. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
	"usage: statetool rename [options] STATE RESOURCE NEW_NAME\n"
	"\n"
	"Give a resource a new name: its URN changes (stack, project and type stay) and\n"
	"every reference to it is rewritten: parent, dependencies, property dependencies,\n"
	"deletedWith, replaceWith, pending operations, and provider references when it is\n"
	"a provider. NEW_NAME is a name, not a URN. A URN that exists already is refused;\n"
	"the name the resource has already is no change (exit 0), as in Pulumi.\n"
	"Each child's URN is rebuilt as `pulumi state rename` does (the parent's new\n"
	"qualified type, the child's type and name), and so on down: a canonical child\n"
	"keeps its URN (it carries its parent's type chain, not its name), one without the\n"
	"chain gets it.\n"
	"A STATE file is loaded lazily: only the resources changed are parsed in full, the\n"
	"others written back as the file's bytes (STATETOOL_LAZY=0: all parsed).\n"
	"\n"
	"Options:\n" CLI_MUTATE_HELP;

typedef struct ctx {
	char **pos;
	int npos;
	cli_mutate_opts *mo;
} ctx;

static int run(st_edit *e, st_state *s, void *arg, st_error *err)
{
	ctx *c = arg;
	st_handle *h = NULL;
	size_t n = 0;
	int rc = cli_find_handles(e, s, c->pos, 1, 0, 0, &h, &n);
	if (rc != EXIT_OK)
		return rc;
	rc = st_edit_rename(e, h[0], c->pos[1], err);
	free(h);
	if (rc == ST_OK)
		snprintf(c->mo->summary, sizeof(c->mo->summary), "Resource renamed");
	return rc;
}

int cmd_rename(int argc, char **argv)
{
	cli_target t = {0};
	cli_mutate_opts mo = {.cmd = "rename", .lazy = 1};
	ctx c = {0};
	int rc = cli_mutate_parse(argc, argv, help, NULL, NULL, NULL, &t, &mo, &c.pos, &c.npos);
	if (rc != -1)
		return rc;
	if (c.npos != 2)
		return cli_usage("rename", "expected RESOURCE and NEW_NAME");
	c.mo = &mo;
	return cli_mutate(&t, &mo, run, &c);
}
