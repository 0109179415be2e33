/* statetool list: one line per resource (URN, type, ID, flags), or --json. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
	"usage: statetool list [options] STATE\n"
	"\n"
	"List the resources of a state in file order: URN, type, ID and flags.\n"
	"Flags: custom or component, protect, delete, taint, external, pendingReplacement,\n"
	"retainOnDelete, and pending=<op> for a resource with a pending operation.\n"
	"\n"
	"Options:\n"
	"  --backend URL      a DIY backend (PATH, file://PATH, s3://, azblob://, gs://,\n"
	"                     postgres://),\n"
	"                     with --stack\n"
	"  -s, --stack NAME   a stack of the backend: project/stack or organization/project/stack\n"
	"  --json             one JSON document: {\"format_version\":1,\"resources\":[...]}\n"
	"  --max-size SIZE    refuse files that inflate beyond SIZE (default 4G)\n"
	"  -h, --help         show this help\n";

static void flags_of(json_t *r, json_t *ops, json_t *out)
{
	const char *urn = json_string_value(json_object_get(r, "urn"));
	json_t *op;
	size_t i;

	json_array_append_new(out, json_string(json_is_true(json_object_get(r, "custom"))
						       ? "custom" : "component"));
	static const char *const names[] = {"protect", "delete", "taint", "external",
					    "pendingReplacement", "retainOnDelete", NULL};
	for (int k = 0; names[k]; k++)
		if (json_is_true(json_object_get(r, names[k])))
			json_array_append_new(out, json_string(names[k]));
	json_array_foreach(ops, i, op) {
		const char *ou = json_string_value(json_object_get(json_object_get(op, "resource"),
								   "urn"));
		const char *ty = json_string_value(json_object_get(op, "type"));
		if (urn && ou && !strcmp(urn, ou)) {
			char *f = NULL;
			if (asprintf(&f, "pending=%s", ty ? ty : "?") >= 0)
				json_array_append_new(out, json_string(f));
			free(f);
		}
	}
}

int cmd_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"stack", required_argument, NULL, OPT_STACK},
		{"json", no_argument, NULL, OPT_JSON},
		{"max-size", required_argument, NULL, OPT_MAX_SIZE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	cli_target t = {0};
	int json = 0, c, rc;
	st_state *s = NULL;

	while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
		if (cli_target_option(&t, c, optarg))
			continue;
		switch (c) {
		case OPT_JSON: json = 1; break;
		case 'h': return cli_help(help);
		default: return cli_usage("list", "bad option");
		}
	}
	if (argc - optind > 1)
		return cli_usage("list", "too many arguments");
	t.arg = optind < argc ? argv[optind] : NULL;
	if ((rc = cli_target_resolve(&t, "list", 1)) != EXIT_OK || (rc = cli_load(&t, &s)))
		goto out;

	json_t *res = st_state_resources(s, 0), *r;
	json_t *dep = st_state_deployment(s);
	json_t *ops = dep ? json_object_get(dep, "pending_operations") : NULL;
	size_t i;
	if (json) {
		json_t *doc = json_object(), *arr = json_array();
		json_object_set_new(doc, "format_version", json_integer(CLI_JSON_FORMAT));
		json_array_foreach(res, i, r) {
			json_t *e = json_object(), *fl = json_array();
			json_t *id = json_object_get(r, "id");
			json_object_set_new(e, "index", json_integer((json_int_t)i));
			json_object_set(e, "urn", json_object_get(r, "urn") ? json_object_get(r, "urn")
									      : json_null());
			json_object_set(e, "type", json_object_get(r, "type")
							   ? json_object_get(r, "type") : json_null());
			json_object_set(e, "id", id ? id : json_null());
			flags_of(r, ops, fl);
			json_object_set_new(e, "flags", fl);
			json_array_append_new(arr, e);
		}
		json_object_set_new(doc, "resources", arr);
		rc = cli_print_json(doc);
		json_decref(doc);
	} else {
		size_t wurn = 0, wtype = 0, wid = 0;
		json_array_foreach(res, i, r) {
			const char *u = json_string_value(json_object_get(r, "urn"));
			const char *ty = json_string_value(json_object_get(r, "type"));
			const char *id = json_string_value(json_object_get(r, "id"));
			if (u && strlen(u) > wurn) wurn = strlen(u);
			if (ty && strlen(ty) > wtype) wtype = strlen(ty);
			if (id && strlen(id) > wid) wid = strlen(id);
		}
		if (wid == 0)
			wid = 1;
		if (!json_array_size(res))
			printf("no resources\n");
		json_array_foreach(res, i, r) {
			const char *u = json_string_value(json_object_get(r, "urn"));
			const char *ty = json_string_value(json_object_get(r, "type"));
			const char *id = json_string_value(json_object_get(r, "id"));
			json_t *fl = json_array(), *f;
			size_t k;
			flags_of(r, ops, fl);
			printf("%-*s  %-*s  %-*s  ", (int)wurn, u ? u : "(no urn)", (int)wtype,
			       ty ? ty : "(no type)", (int)wid, id && *id ? id : "-");
			json_array_foreach(fl, k, f)
				printf("%s%s", k ? "," : "", json_string_value(f));
			putchar('\n');
			json_decref(fl);
		}
		rc = EXIT_OK;
	}
out:
	st_state_free(s);
	cli_target_free(&t);
	return rc;
}
