/* statetool diff: two states (files, stacks, generations) compared. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char help[] =
	"usage: statetool diff [options] A B\n"
	"\n"
	"Compare two states: the resources added (+), removed (-) and changed (~) from A to\n"
	"B, and for a change each property that differs, by its JSON Pointer in the\n"
	"resource (/inputs/tags/env, /outputs/arn, /protect, /parent, /dependencies/0,\n"
	"/provider...), old => new as compact JSON; then the deployment's other members\n"
	"(pending operations, secrets provider, metadata; not the manifest). Resources are\n"
	"matched by URN (a copy marked delete: true by URN and ID). Secrets are masked:\n"
	"\"[secret]\", never a plaintext or a ciphertext (two ciphertexts that differ are\n"
	"a change, even of the same value).\n"
	"\n"
	"A and B are each:\n"
	"  FILE | -             a state file (plain or compressed; '-' standard input, once)\n"
	"  URL#STACK            a stack of a DIY backend: PATH, file://..., s3://...,\n"
	"                       azblob://... (e.g. ./b#proj/dev, s3://bkt?region=x#proj/dev)\n"
	"  #STACK               a stack of --backend (or of $PULUMI_BACKEND_URL, or of\n"
	"                       the project's Pulumi.yaml backend.url)\n"
	"  URL#STACK@GEN, #STACK@GEN   a generation of the stack, by the ID\n"
	"                       `statetool history` shows (current, bak, or a file name);\n"
	"                       one a `stack rename` carried over is compared as the\n"
	"                       rename makes it (a note says so; see restore --help)\n"
	"An existing file is a file even when its name holds '#'.\n"
	"\n"
	"Options:\n"
	"  --backend URL      the backend of #STACK operands\n"
	"  --json             one JSON document: same, added, removed, changed (each with\n"
	"                     urn, type, id, and for changes path, op, old, new), deployment\n"
	"  --max-size SIZE    the largest state read (after decompression)\n"
	"  -h, --help         show this help\n"
	"\n"
	"Exit status (as diff(1)): 0 the states are the same, 1 they differ, 2 trouble (a\n"
	"state that cannot be read, a usage error).\n";

static int is_file(const char *s)
{
	struct stat st;
	return !strcmp(s, "-") || stat(s, &st) == 0;
}

/* Loads one operand. Prints errors; returns an exit code (2 for any trouble). */
static int load(const char *arg, const char *backend, size_t max, st_state **out)
{
	st_load_opts lo = ST_LOAD_OPTS_INIT;
	st_backend *b = NULL;
	st_error err;
	char *url = NULL, *stack = NULL, *gen;
	const char *hash = strchr(arg, '#');
	int rc;

	st_error_clear(&err);
	lo.max_size = max;
	lo.threads = cli_threads;
	if (!hash || is_file(arg)) {
		rc = st_state_load_file(out, arg, &lo, &err);
		goto done;
	}
	url = hash == arg ? (backend ? strdup(backend) : NULL) : strndup(arg, (size_t)(hash - arg));
	stack = strdup(hash + 1);
	if (!stack || (hash != arg && !url)) {
		cli_errorf("out of memory");
		rc = EXIT_USAGE;
		goto out;
	}
	if ((gen = strrchr(stack, '@')))
		*gen++ = '\0';
	if (!*stack) {
		rc = cli_usage("diff", "'%s' names no stack", arg);
		goto out;
	}
	if (cli_backend_open(&b, url) != EXIT_OK) { /* a backend that holds none is refused */
		rc = EXIT_USAGE;
		goto out;
	}
	if (gen)
		rc = st_backend_generation_load(b, stack, gen, &lo, out, &err);
	else
		rc = st_backend_load(b, stack, &lo, out, &err);
	/* a generation a stack rename carried over: compared as the rename makes it */
	if (rc == ST_OK && gen && cli_generation_renamed(b, stack, *out, gen, "compared")) {
		st_state_free(*out);
		*out = NULL;
		rc = EXIT_USAGE;
		goto out;
	}
done:
	if (rc != ST_OK) {
		cli_error(&err);
		rc = EXIT_USAGE;
	}
out:
	st_backend_free(b);
	free(url);
	free(stack);
	return rc;
}

int cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"json", no_argument, NULL, OPT_JSON},
		{"max-size", required_argument, NULL, OPT_MAX_SIZE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	const char *backend = NULL;
	size_t max = 0;
	int c, json = 0, rc;
	st_state *a = NULL, *b = NULL;
	json_t *doc = NULL;
	st_error err;

	st_error_clear(&err);
	while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
		switch (c) {
		case OPT_BACKEND: backend = optarg; break;
		case OPT_JSON: json = 1; break;
		case OPT_MAX_SIZE:
			if ((rc = cli_parse_size(optarg, &max)) != 0)
				return cli_usage("diff", "invalid --max-size '%s' (%s)", optarg,
						 rc == -2 ? "too large"
							  : "use bytes or a K, M, G suffix");
			break;
		case 'h': return cli_help(help);
		default: return cli_usage("diff", "bad option");
		}
	}
	if (argc - optind != 2)
		return cli_usage("diff", "expected two states, A and B");
	const char *an = argv[optind], *bn = argv[optind + 1];
	if (!strcmp(an, "-") && !strcmp(bn, "-"))
		return cli_usage("diff", "standard input can be only one side");
	if ((rc = load(an, backend, max, &a)) != EXIT_OK || (rc = load(bn, backend, max, &b)))
		goto out;
	if (st_state_compare(a, b, &doc, &err) != ST_OK) {
		cli_error(&err);
		rc = EXIT_USAGE;
		goto out;
	}
	int same = json_is_true(json_object_get(doc, "same"));
	if (json) {
		json_t *top = json_pack("{s:i, s:s, s:s}", "format_version", CLI_JSON_FORMAT, "a", an,
					"b", bn);
		if (!top || json_object_update(top, doc)) {
			json_decref(top);
			rc = EXIT_USAGE;
			goto out;
		}
		rc = cli_print_json(top);
		json_decref(top);
	} else {
		char *text = NULL;
		size_t len = 0;
		if (st_compare_text(doc, &text, &len, &err) != ST_OK) {
			cli_error(&err);
			rc = EXIT_USAGE;
			goto out;
		}
		rc = cli_write_output("-", text, len);
		free(text);
	}
	if (rc == EXIT_OK)
		rc = same ? 0 : 1;
	else
		rc = EXIT_USAGE;
out:
	json_decref(doc);
	st_state_free(a);
	st_state_free(b);
	return rc;
}
