/* statetool replace-provider: repoint every user of one provider reference to another. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
	"usage: statetool replace-provider [options] STATE FROM TO\n"
	"\n"
	"Repoint every resource whose provider reference is FROM to the provider TO, which\n"
	"must exist in the state and be of the same package. Each of FROM and TO is a\n"
	"provider reference (PROVIDER_URN::ID), a provider's URN, or a provider's name\n"
	"(e.g. default_6_0_0). FROM may also be a dangling reference that resources still\n"
	"carry. The provider must come before its users; otherwise the edit is refused.\n"
	"\n"
	"Options:\n" CLI_MUTATE_HELP;

typedef struct ctx {
	char **pos;
	cli_mutate_opts *mo;
} ctx;

/* Resolves q to a provider reference: exact reference (of a provider resource, or one that
 * resources carry when `carried`), a provider URN, or a provider name. New string. */
static char *resolve(st_state *s, const char *q, int carried)
{
	json_t *res = st_state_resources(s, 0), *r;
	size_t i;
	char *found = NULL;
	int n = 0;

	json_array_foreach(res, i, r) {
		const char *u = json_string_value(json_object_get(r, "urn"));
		const char *ty = json_string_value(json_object_get(r, "type"));
		const char *id = json_string_value(json_object_get(r, "id"));
		const char *p = json_string_value(json_object_get(r, "provider"));
		if (carried && p && !strcmp(p, q)) {
			free(found);
			return strdup(q);
		}
		if (!u || !st_type_is_provider(ty) || json_is_true(json_object_get(r, "delete")))
			continue;
		char *ref = NULL;
		if (asprintf(&ref, "%s::%s", u, id && *id ? id : ST_UNKNOWN_ID) < 0)
			return NULL;
		st_urn pu;
		int m = !strcmp(ref, q) || !strcmp(u, q) ||
			(st_urn_parse(u, &pu) == ST_OK && !strcmp(pu.name, q));
		if (m && (!found || strcmp(found, ref))) {
			n++;
			free(found);
			found = ref;
		} else {
			free(ref);
		}
	}
	if (n > 1) {
		cli_errorf("'%s' names several providers; give the full reference URN::ID", q);
		free(found);
		return NULL;
	}
	if (!found)
		cli_errorf("no provider \"%s\" in the state", q);
	return found;
}

static int run(st_edit *e, st_state *s, void *arg, st_error *err)
{
	ctx *c = arg;
	char *from = resolve(s, c->pos[0], 1), *to = from ? resolve(s, c->pos[1], 0) : NULL;
	size_t changed = 0;
	int rc;
	if (!from || !to) {
		free(from);
		free(to);
		return EXIT_FAIL;
	}
	/* the same reference: nothing changes, and nothing is written */
	rc = strcmp(from, to) ? st_edit_replace_provider(e, from, to, &changed, err) : ST_OK;
	if (rc == ST_OK && changed)
		snprintf(c->mo->summary, sizeof(c->mo->summary), "%zu resource%s repointed", changed,
			 changed == 1 ? "" : "s");
	free(from);
	free(to);
	return rc;
}

int cmd_replace_provider(int argc, char **argv)
{
	cli_target t = {0};
	cli_mutate_opts mo = {.cmd = "replace-provider"};
	ctx c = {0};
	int npos;
	int rc = cli_mutate_parse(argc, argv, help, NULL, NULL, NULL, &t, &mo, &c.pos, &npos);
	if (rc != -1)
		return rc;
	if (npos != 2)
		return cli_usage("replace-provider", "expected FROM and TO");
	c.mo = &mo;
	return cli_mutate(&t, &mo, run, &c);
}
