/* statetool stacks: the stacks of a DIY backend with their resource counts. */
#include "cli.h"

#include <unistd.h>

#include <stdlib.h>
#include <string.h>

static const char help[] =
	"usage: statetool stacks [options]\n"
	"\n"
	"List every stack of a DIY backend (project layout or legacy layout) with its\n"
	"resource count, version and file. Each stack's file is the newest by modification\n"
	"time among STACK.json, STACK.json.gz and STACK.json.zst, as Pulumi picks it (with\n"
	"equal times: .json.zst, then .json.gz, then .json). In Pulumi Cloud\n"
	"(--backend https://api.pulumi.com): every stack the token's user can see, each\n"
	"exported once to count its resources.\n"
	"\n"
	"Options:\n"
	"  --backend URL      the backend (PATH, file://PATH, s3://, azblob://, gs://,\n"
	"                     postgres://, a Pulumi Cloud https:// URL; default\n"
	"                     $PULUMI_BACKEND_URL)\n"
	"  --json             one JSON document: {\"format_version\":1,\"stacks\":[...]}\n"
	"  -h, --help         show this help\n"
	"\n"
	"Exit status is 1 when any stack cannot be read; the others are still listed.\n";

int cmd_stacks(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"json", no_argument, NULL, OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	const char *url = NULL;
	int json = 0, c, rc = EXIT_OK;
	st_backend *b = NULL;
	st_stack_info *infos = NULL;
	size_t n = 0;
	st_error err;
	json_t *doc = NULL, *arr = NULL, *rows = NULL;

	st_error_clear(&err);
	while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
		switch (c) {
		case OPT_BACKEND: url = optarg; break;
		case OPT_JSON: json = 1; break;
		case 'h': return cli_help(help);
		default: return cli_usage("stacks", "bad option");
		}
	}
	if (optind < argc)
		return cli_usage("stacks", "unexpected argument '%s'", argv[optind]);
	if ((rc = cli_backend_open(&b, url)) != EXIT_OK)
		return rc;
	if (st_backend_list(b, &infos, &n, &err) != ST_OK) {
		cli_error(&err);
		st_backend_free(b);
		return err.code == ST_EINVAL ? EXIT_USAGE : EXIT_FAIL;
	}
	if (json) {
		doc = json_object();
		arr = json_array();
		json_object_set_new(doc, "format_version", json_integer(CLI_JSON_FORMAT));
		json_object_set_new(doc, "backend", json_string(st_backend_root(b)
								       ? st_backend_root(b)
								       : st_backend_url(b)));
		json_object_set_new(doc, "layout",
				    json_string(!strcmp(st_backend_kind(b), "cloud") ? "cloud"
						: st_backend_project_mode(b) ? "project" : "legacy"));
	}
	/* on a terminal the rows are kept and printed aligned to the longest name */
	if (!json && isatty(STDOUT_FILENO))
		rows = json_array();
	for (size_t i = 0; i < n; i++) {
		st_state *s = NULL;
		st_error e;
		long long count = -1;
		/* a local file by its path, an object by its key under the backend's URL */
		const char *shown = infos[i].path ? infos[i].path
				    : infos[i].key ? infos[i].key : infos[i].qname;
		st_error_clear(&e);
		if (st_backend_load(b, infos[i].qname, NULL, &s, &e) == ST_OK) {
			json_t *res = st_state_resources(s, 0);
			count = (long long)json_array_size(res);
		} else {
			rc = EXIT_FAIL;
			if (!json)
				cli_error(&e);
		}
		if (json) {
			json_t *o = json_object();
			json_object_set_new(o, "stack", json_string(infos[i].qname));
			json_object_set_new(o, "project", infos[i].project
							    ? json_string(infos[i].project)
							    : json_null());
			json_object_set_new(o, "name", json_string(infos[i].name));
			json_object_set_new(o, "path", json_string(shown));
			json_object_set_new(o, "resources", count >= 0 ? json_integer(count)
								       : json_null());
			json_object_set_new(o, "version", s ? json_integer(st_state_version(s))
							    : json_null());
			if (!s)
				json_object_set_new(o, "error", json_string(e.message));
			json_array_append_new(arr, o);
		} else if (s && rows) {
			char cnt[32], ver[16];
			json_t *r = json_array();
			snprintf(cnt, sizeof(cnt), "%lld", count);
			snprintf(ver, sizeof(ver), "v%d", st_state_version(s));
			json_array_append_new(r, json_string(infos[i].qname));
			json_array_append_new(r, json_string(cnt));
			json_array_append_new(r, json_string(ver));
			json_array_append_new(r, json_string(shown));
			json_array_append_new(rows, r);
		} else if (s) {
			printf("%-40s %8lld  v%d  %s\n", infos[i].qname, count, st_state_version(s),
			       shown);
		}
		st_state_free(s);
	}
	if (rows && !json) {
		cli_print_table(rows);
		json_decref(rows);
		rows = NULL;
	}
	json_decref(rows);
	if (!json && !n)
		printf("no stacks\n");
	if (json) {
		json_object_set_new(doc, "stacks", arr);
		cli_print_json(doc);
		json_decref(doc);
	}
	st_stack_infos_free(infos, n);
	st_backend_free(b);
	return rc;
}
