/* statetool delete: remove resources from a state, dependents-first, as `pulumi state delete`. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
	"usage: statetool delete [options] STATE RESOURCE...\n"
	"       statetool delete [options] --all STATE\n"
	"\n"
	"Delete resources from a state (not from the cloud: the resources go on existing,\n"
	"unmanaged). RESOURCE is an exact URN, a name, TYPE::NAME (whole URN segments) or #INDEX. A resource\n"
	"that others depend on (children, dependencies, property dependencies,\n"
	"deletedWith, replaceWith, provider references) is refused unless\n"
	"--target-dependents deletes those too; a protected resource is refused unless\n"
	"--force.\n"
	"A STATE file is loaded lazily: only the resources changed are parsed in full, the\n"
	"others written back as the file's bytes (STATETOOL_LAZY=0: all parsed).\n"
	"\n"
	"Options:\n"
	"  --target-dependents  also delete every resource that depends on the targets\n"
	"  --force              delete protected resources too\n"
	"  --all                delete every resource of the state\n" CLI_MUTATE_HELP;

typedef struct ctx {
	int force, deps, all;
	char **queries;
	int nq;
	cli_mutate_opts *mo;
} ctx;

static int extra(int opt, const char *arg, void *p)
{
	ctx *c = p;
	(void)arg;
	switch (opt) {
	case OPT_FORCE: c->force = 1; return 0;
	case OPT_TARGET_DEPENDENTS: c->deps = 1; return 0;
	case OPT_ALL: c->all = 1; return 0;
	default: return -1;
	}
}

static int run(st_edit *e, st_state *s, void *arg, st_error *err)
{
	ctx *c = arg;
	st_handle *h = NULL;
	size_t n = 0, deleted = 0;
	int rc;

	if ((rc = cli_find_handles(e, s, c->queries, c->nq, c->all, 0, &h, &n)) != EXIT_OK)
		return rc;
	for (size_t i = 0; c->force && i < n; i++) {
		const json_t *r = st_edit_resource(e, h[i]);
		if (json_is_true(json_object_get(r, "protect")))
			cli_warnf("deleting protected resource %s due to presence of --force",
				  json_string_value(json_object_get(r, "urn")));
	}
	rc = st_edit_delete(e, h, n,
			    (c->force ? ST_DELETE_FORCE : 0) |
				    (c->deps || c->all ? ST_DELETE_TARGET_DEPENDENTS : 0),
			    &deleted, err);
	free(h);
	if (rc == ST_OK) {
		if (c->all)
			snprintf(c->mo->summary, sizeof(c->mo->summary), "Resources deleted (%zu)",
				 deleted);
		else if (deleted == 1)
			snprintf(c->mo->summary, sizeof(c->mo->summary), "Resource deleted");
		else
			snprintf(c->mo->summary, sizeof(c->mo->summary), "%zu resources deleted",
				 deleted);
	}
	return rc;
}

int cmd_delete(int argc, char **argv)
{
	static const struct option extra_opts[] = {
		{"force", no_argument, NULL, OPT_FORCE},
		{"target-dependents", no_argument, NULL, OPT_TARGET_DEPENDENTS},
		{"all", no_argument, NULL, OPT_ALL},
		{NULL, 0, NULL, 0}};
	cli_target t = {0};
	cli_mutate_opts mo = {.cmd = "delete", .lazy = 1};
	ctx c = {0};
	int rc = cli_mutate_parse(argc, argv, help, extra_opts, extra, &c, &t, &mo, &c.queries,
				  &c.nq);
	if (rc != -1)
		return rc;
	if (c.all && c.nq)
		return cli_usage("delete", "--all takes no RESOURCE");
	if (!c.all && !c.nq)
		return cli_usage("delete", "missing RESOURCE (or --all)");
	c.mo = &mo;
	return cli_mutate(&t, &mo, run, &c);
}
