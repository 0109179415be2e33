/* statetool show: one resource as JSON. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
	"usage: statetool show [options] STATE RESOURCE\n"
	"\n"
	"Print one resource of a state as JSON (4-space indented, as in the state).\n"
	"RESOURCE is an exact URN, the resource's name, TYPE::NAME (a tail of whole URN\n"
	"segments, never a raw character suffix), or #INDEX. A name or\n"
	"suffix must match exactly one resource; otherwise the candidates are listed. An\n"
	"exact URN shared by several copies (delete: true) prints them all as an array.\n"
	"\n"
	"Options:\n"
	"  --backend URL      a DIY backend (PATH, file://PATH or s3://BUCKET[/PREFIX]),\n"
	"                     with --stack\n"
	"  --stack NAME       a stack of the backend\n"
	"  --json             accepted for symmetry: the output is always JSON\n"
	"  -h, --help         show this help\n";

int cmd_show(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"stack", required_argument, NULL, OPT_STACK},
		{"json", no_argument, NULL, OPT_JSON},
		{"max-size", required_argument, NULL, OPT_MAX_SIZE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	cli_target t = {0};
	int c, rc;
	st_state *s = NULL;
	const char *query;
	size_t *hits = NULL, n = 0;
	st_error err;

	st_error_clear(&err);
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (cli_target_option(&t, c, optarg))
			continue;
		switch (c) {
		case OPT_JSON: break;
		case 'h': return cli_help(help);
		default: return cli_usage("show", "bad option");
		}
	}
	int nargs = argc - optind;
	if (nargs == 2 && !t.stack) {
		t.arg = argv[optind];
		query = argv[optind + 1];
	} else if (nargs == 1 && t.stack) {
		query = argv[optind];
	} else {
		return cli_usage("show", "expected STATE and RESOURCE");
	}
	if ((rc = cli_target_resolve(&t, "show", 1)) != EXIT_OK || (rc = cli_load(&t, &s)))
		goto out;
	if (st_state_find(s, query, &hits, &n, &err) != ST_OK) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto out;
	}
	json_t *res = st_state_resources(s, 0);
	if (n == 1) {
		rc = cli_print_json(json_array_get(res, hits[0]));
	} else {
		json_t *arr = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append(arr, json_array_get(res, hits[i]));
		rc = cli_print_json(arr);
		json_decref(arr);
	}
out:
	free(hits);
	st_state_free(s);
	cli_target_free(&t);
	return rc;
}
