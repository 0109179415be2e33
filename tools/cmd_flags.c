/* statetool protect|unprotect|taint|untaint: set or clear a flag on resources. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

typedef struct ctx {
	const char *flag;
	int on, all;
	char **queries;
	int nq;
	cli_mutate_opts *mo;
	const char *verb;
} ctx;

static int extra(int opt, const char *arg, void *p)
{
	(void)arg;
	if (opt == OPT_ALL) {
		((ctx *)p)->all = 1;
		return 0;
	}
	return -1;
}

static int run(st_edit *e, st_state *s, void *arg, st_error *err)
{
	ctx *c = arg;
	st_handle *h = NULL;
	size_t n = 0, changed = 0;
	int rc;

	if ((rc = cli_find_handles(e, s, c->queries, c->nq, c->all, CLI_FIND_COPIES | CLI_FIND_LIVE, &h, &n)) != EXIT_OK)
		return rc;
	rc = st_edit_set_flag(e, h, n, c->flag, c->on, &changed, err);
	free(h);
	if (rc == ST_OK) {
		if (c->all)
			snprintf(c->mo->summary, sizeof(c->mo->summary), "All resources %s",
				 c->verb);
		else
			snprintf(c->mo->summary, sizeof(c->mo->summary), "%zu resource%s %s",
				 changed, changed == 1 ? "" : "s", c->verb);
		if (changed && c->on && !strcmp(c->flag, "protect"))
			cli_warnf("the program's `protect` resource option overrides this flag on "
				  "the next update");
	}
	return rc;
}

static int flag_command(int argc, char **argv, const char *cmd, const char *flag, int on,
			const char *verb)
{
	static const struct option extra_opts[] = {{"all", no_argument, NULL, OPT_ALL},
						   {NULL, 0, NULL, 0}};
	char help[4096];
	cli_target t = {0};
	cli_mutate_opts mo = {.cmd = cmd, .lazy = 1};
	ctx c = {.flag = flag, .on = on, .verb = verb};
	int rc;

	snprintf(help, sizeof(help),
		 "usage: statetool %s [options] STATE RESOURCE...\n"
		 "       statetool %s [options] --all STATE\n"
		 "\n"
		 "%s the `%s` flag of resources: an exact URN, a name, TYPE::NAME or #INDEX,\n"
		 "or every resource with --all. Resources marked delete: true are never touched:\n"
		 "a URN only such copies hold is not found, as in Pulumi, and an #INDEX naming\n"
		 "one is refused. Every RESOURCE not found is named, in one error.\n"
		 "A STATE file is loaded lazily: only the resources changed are parsed in full, the\n"
		 "others written back as the file's bytes (STATETOOL_LAZY=0: all parsed).\n"
		 "\n"
		 "Options:\n"
		 "  --all              every resource of the state\n%s",
		 cmd, cmd, on ? "Set" : "Clear", flag, CLI_MUTATE_HELP);
	rc = cli_mutate_parse(argc, argv, help, extra_opts, extra, &c, &t, &mo, &c.queries,
			      &c.nq);
	if (rc != -1)
		return rc;
	if (c.all && c.nq)
		return cli_usage(cmd, "--all takes no RESOURCE");
	if (!c.all && !c.nq)
		return cli_usage(cmd, "missing RESOURCE (or --all)");
	c.mo = &mo;
	return cli_mutate(&t, &mo, run, &c);
}

int cmd_protect(int argc, char **argv)
{
	return flag_command(argc, argv, "protect", "protect", 1, "protected");
}

int cmd_unprotect(int argc, char **argv)
{
	return flag_command(argc, argv, "unprotect", "protect", 0, "unprotected");
}

int cmd_taint(int argc, char **argv)
{
	return flag_command(argc, argv, "taint", "taint", 1, "tainted");
}

int cmd_untaint(int argc, char **argv)
{
	return flag_command(argc, argv, "untaint", "taint", 0, "untainted");
}
