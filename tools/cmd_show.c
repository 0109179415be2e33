/* statetool show: one resource, as `pulumi state get` shows it, or as JSON. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

enum { OPT_SHOW_SECRETS = 3000, OPT_PASSFILE, OPT_NAMES, OPT_OUTPUT_FMT };

static const char help[] =
	"usage: statetool show [options] STATE RESOURCE\n"
	"       statetool show [options] --backend URL --stack NAME RESOURCE\n"
	"       statetool show --names STATE\n"
	"\n"
	"Show one resource of a state as `pulumi state get` does: its type, URN, ID, and\n"
	"its inputs and outputs (keys sorted and aligned, nested values indented, secrets\n"
	"as [secret], unknown values as [unknown]). RESOURCE is, as for `pulumi state get`,\n"
	"a URN, Pulumi's reference identifier of the resource (its name sanitized, '_' and\n"
	"six hex digits of its URN's SHA-256, as `pulumi do show-resources` lists them;\n"
	"--names lists them), or its name when no other resource has it; then statetool's\n"
	"own forms: TYPE::NAME (a tail of whole URN segments) or #INDEX. Several copies of\n"
	"a URN (delete: true): the live one is shown, with a warning.\n"
	"\n"
	"Options:\n"
	"  --backend URL      a DIY backend (PATH, file://PATH, s3://, azblob://, gs://,\n"
	"                     postgres://),\n"
	"                     with --stack\n"
	"  -s, --stack NAME   a stack of the backend\n"
	"  --output json      as `pulumi state get --output json` prints it: {\"id\", \"inputs\",\n"
	"                     \"outputs\", \"pendingDeletion\" (when true), \"type\", \"urn\"},\n"
	"                     2-space indented, keys sorted, secrets as \"[secret]\" unless\n"
	"                     --show-secrets (--output default: the text above)\n"
	"  --json             the resource as it is in the state (4-space indented JSON,\n"
	"                     secrets as stored); several copies of an exact URN as an array\n"
	"  --show-secrets     secrets' values instead of [secret]: plaintexts as they are,\n"
	"                     ciphertexts decrypted (passphrase from PULUMI_CONFIG_PASSPHRASE,\n"
	"                     PULUMI_CONFIG_PASSPHRASE_FILE, --passphrase-file, or a prompt;\n"
	"                     an error when none is available)\n"
	"  --passphrase-file FILE   the stack's passphrase\n"
	"  --names            list Pulumi's reference identifiers: IDENTIFIER URN lines in\n"
	"                     URN order; with --json an object identifier -> URN (URN\n"
	"                     order), with --output json as `pulumi do show-resources\n"
	"                     --output json` prints it (keys sorted, 2-space indented)\n"
	"  --max-size SIZE    refuse files that inflate beyond SIZE (default 4G)\n"
	"  -h, --help         show this help\n";

/* --json: the resource as stored (an array for several copies of an exact URN). With
 * --show-secrets the resources found are revealed in a state of their own: the passphrase is
 * needed only when they hold a ciphertext. */
static int show_json(st_state *s, const char *query, int reveal, const char *passfile)
{
	size_t *hits = NULL, n = 0, cts = 0;
	st_state *only = NULL;
	st_secrets *sec = NULL;
	json_t *res, *mine;
	st_error err;
	int rc;

	st_error_clear(&err);
	if (st_state_find(s, query, &hits, &n, &err) != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	res = st_state_resources(s, 0);
	if (reveal) {
		if (st_state_new(&only, &err) != ST_OK || !(mine = st_state_resources(only, 1))) {
			cli_error(&err);
			rc = EXIT_FAIL;
			goto out;
		}
		for (size_t i = 0; i < n; i++)
			json_array_append_new(mine, json_deep_copy(json_array_get(res, hits[i])));
		st_state_touch(only);
		st_secrets_count(only, &cts, NULL);
		/* (plaintexts are shown as they are: only ciphertexts change) */
		if (cts && (rc = cli_open_secrets(s, passfile, 1, &sec)) != EXIT_OK)
			goto out;
		rc = cts ? st_secrets_reveal(only, sec, &err) : ST_OK;
		if (rc != ST_OK) {
			cli_error(&err);
			rc = EXIT_FAIL;
			goto out;
		}
		res = mine;
		for (size_t i = 0; i < n; i++)
			hits[i] = i;
	}
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
	st_secrets_free(sec);
	st_state_free(only);
	free(hits);
	return rc;
}

/* Pulumi's JSON (--output json) of resource r: 2-space indented, no HTML escaping. */
static int print_pulumi_json(const json_t *r, unsigned flags, st_secrets *sec, st_error *err)
{
	st_style st = {0, "  ", 0, 1, 1};
	json_t *doc = NULL;
	char *text = NULL;
	size_t len = 0;
	int rc = st_resource_json(r, flags, sec, &doc, err);
	if (rc == ST_OK)
		rc = st_json_dump(doc, &st, &text, &len, err);
	json_decref(doc);
	if (rc == ST_OK)
		rc = cli_write_output("-", text, len) == EXIT_OK ? ST_OK : EXIT_FAIL;
	free(text);
	return rc;
}

/* The resource `query` finds as `pulumi state get` prints it: text, or (pulumi_json) its
 * --output json. */
static int show_text(st_state *s, const char *query, int reveal, const char *passfile,
		     int pulumi_json)
{
	st_changes warn = {0};
	st_secrets *sec = NULL;
	size_t idx = 0, len = 0;
	char *text = NULL;
	st_error err;
	int rc;

	st_error_clear(&err);
	rc = st_state_get(s, query, &idx, &warn, &err);
	for (size_t i = 0; i < warn.count; i++)
		cli_warnf("%s", warn.lines[i]);
	st_changes_clear(&warn);
	if (rc != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	json_t *r = json_array_get(st_state_resources(s, 0), idx);
	unsigned flags = reveal ? ST_TEXT_SHOW_SECRETS : 0;
	rc = pulumi_json ? print_pulumi_json(r, flags, NULL, &err)
			 : st_resource_text(r, flags, NULL, &text, &len, &err);
	if (rc == ST_EPASSPHRASE) {
		/* encrypted secrets: only now is the passphrase asked for */
		if ((rc = cli_open_secrets(s, passfile, 1, &sec)) != EXIT_OK)
			return rc;
		st_error_clear(&err);
		rc = pulumi_json ? print_pulumi_json(r, flags, sec, &err)
				 : st_resource_text(r, flags, sec, &text, &len, &err);
		st_secrets_free(sec);
	}
	if (rc == EXIT_FAIL && pulumi_json && !err.code)
		return EXIT_FAIL; /* the write failed, said so */
	if (rc != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	if (pulumi_json)
		return EXIT_OK;
	rc = cli_write_output("-", text, len);
	free(text);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* `pulumi do show-resources --output json`: Go's encoder of a map (keys sorted bytewise,
 * 2-space indented, HTML escaped, a newline). */
static int print_names_pulumi(json_t *names)
{
	st_style st = {0, "  ", 1, 1, 1};
	size_t n = json_object_size(names), i = 0;
	const char **keys = calloc(n + 1, sizeof(*keys)), *k;
	json_t *sorted = json_object(), *v;
	char *text = NULL;
	size_t len = 0;
	st_error err;
	int rc = EXIT_FAIL;

	st_error_clear(&err);
	if (!keys || !sorted) {
		cli_errorf("out of memory");
		goto out;
	}
	json_object_foreach(names, k, v)
		keys[i++] = k;
	qsort(keys, n, sizeof(*keys), cmp_str);
	for (i = 0; i < n; i++)
		if (json_object_set(sorted, keys[i], json_object_get(names, keys[i]))) {
			cli_errorf("out of memory");
			goto out;
		}
	if (st_json_dump(sorted, &st, &text, &len, &err) != ST_OK) {
		cli_error(&err);
		goto out;
	}
	rc = cli_write_output("-", text, len);
out:
	free(text);
	free(keys);
	json_decref(sorted);
	return rc;
}

/* --names: IDENTIFIER URN lines in URN order; --json: that object (identifier -> URN, in URN
 * order) as statetool writes JSON; --output json: as Pulumi prints it. */
static int show_names(st_state *s, int json, int pulumi_json)
{
	json_t *names = NULL, *v;
	const char *k;
	size_t w = 0;
	int rc = EXIT_OK;
	st_error err;

	st_error_clear(&err);
	if (st_state_autonames(s, &names, &err) != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	if (json) {
		rc = cli_print_json(names);
	} else if (pulumi_json) {
		rc = print_names_pulumi(names);
	} else {
		json_object_foreach(names, k, v)
			if (strlen(k) > w)
				w = strlen(k);
		json_object_foreach(names, k, v)
			printf("%-*s  %s\n", (int)w, k, json_string_value(v));
	}
	json_decref(names);
	return rc;
}

int cmd_show(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"stack", required_argument, NULL, OPT_STACK},
		{"json", no_argument, NULL, OPT_JSON},
		{"max-size", required_argument, NULL, OPT_MAX_SIZE},
		{"show-secrets", no_argument, NULL, OPT_SHOW_SECRETS},
		{"passphrase-file", required_argument, NULL, OPT_PASSFILE},
		{"names", no_argument, NULL, OPT_NAMES},
		{"output", required_argument, NULL, OPT_OUTPUT_FMT},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	cli_target t = {0};
	int c, rc, json = 0, reveal = 0, names = 0, pulumi_json = 0, output_given = 0;
	const char *passfile = NULL;
	st_state *s = NULL;
	const char *query = NULL;

	while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
		if (cli_target_option(&t, c, optarg))
			continue;
		switch (c) {
		case OPT_JSON: json = 1; break;
		case OPT_SHOW_SECRETS: reveal = 1; break;
		case OPT_PASSFILE: passfile = optarg; break;
		case OPT_NAMES: names = 1; break;
		case OPT_OUTPUT_FMT:
			/* Pulumi's --output flag and its words */
			if (!strcmp(optarg, "json"))
				pulumi_json = 1;
			else if (!strcmp(optarg, "default") || !*optarg)
				pulumi_json = 0;
			else
				return cli_usage("show", "output \"%s\" not supported, valid values "
							 "are: default or json", optarg);
			output_given = 1;
			break;
		case 'h': return cli_help(help);
		default: return cli_usage("show", "bad option");
		}
	}
	if (json && output_given)
		return cli_usage("show", "give --json or --output, not both");
	int nargs = argc - optind, want = (t.stack ? 0 : 1) + (names ? 0 : 1);
	if (nargs != want)
		return cli_usage("show", names ? "expected STATE" : "expected STATE and RESOURCE");
	if (!t.stack)
		t.arg = argv[optind];
	if (!names)
		query = argv[argc - 1];
	if ((rc = cli_target_resolve(&t, "show", 1)) != EXIT_OK || (rc = cli_load(&t, &s)))
		goto out;
	if (names)
		rc = show_names(s, json, pulumi_json);
	else if (json)
		rc = show_json(s, query, reveal, passfile);
	else
		rc = show_text(s, query, reveal, passfile, pulumi_json);
out:
	st_state_free(s);
	cli_target_free(&t);
	return rc;
}
