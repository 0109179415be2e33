/* statetool migrate: upgrade version 0, 1, 2 states to 3 (or 4), reporting each change. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* -o OUT names the state's own file (by path or by inode). */
static int is_own_file(cli_target *t, const char *out)
{
	const char *where = cli_target_where(t);
	struct stat a, b;
	if (!out || !strcmp(out, "-") || !where || t->filter)
		return 0;
	if (!strcmp(where, out))
		return 1;
	return stat(where, &a) == 0 && stat(out, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static const char help[] =
	"usage: statetool migrate [options] STATE\n"
	"\n"
	"Upgrade a version 0 (unversioned checkpoint), 1 or 2 state to version 3 with\n"
	"Pulumi's own rules, or to 4 when a feature requires it, and report each change:\n"
	"'defaults' dropped from v1 resources, 'propertyDependencies' filled from\n"
	"'dependencies' (one entry per input; an old 'propertyDependencies' dropped, as\n"
	"Pulumi does), an empty manifest added where none was. Fields the old version does\n"
	"not know are kept, each reported with the note that Pulumi drops it (a version 0\n"
	"to 2 'secrets_providers': Pulumi then cannot decrypt the state's secrets).\n"
	"A state already at version 3 or 4 is left as it is. Without -o (or with -o\n"
	"naming STATE itself) the state is replaced in place (locked, atomically, the old\n"
	"file kept as STATE.bak; nothing written when there is nothing to migrate); -o OUT\n"
	"is written even then, a copy, and the report says so. A STATE of\n"
	"'-' (standard input), or -o -, is a filter: the result goes to standard output\n"
	"(messages to stderr; nothing written when it fails; see FILTER MODE in the manual).\n"
	"\n"
	"Options:\n"
	"  -o, --output OUT   write the result to OUT ('-' = standard output) instead\n"
	"  --dry-run          report what would change; write nothing (a lock the real run\n"
	"                     would meet is noted)\n"
	"  --json             the report as one JSON document\n"
	"  --backend URL -s, --stack NAME   migrate a stack of a DIY backend\n"
	"  --allow-duplicate-keys\n"
	"                     write a state whose file repeats object keys as Pulumi\n"
	"                     reads it (a later object merged into the earlier one, else\n"
	"                     the last value); refused otherwise\n"
	"  --max-size SIZE    refuse files that inflate beyond SIZE (default 4G)\n"
	"  -h, --help         show this help\n";

int cmd_migrate(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"stack", required_argument, NULL, OPT_STACK},
		{"output", required_argument, NULL, 'o'},
		{"dry-run", no_argument, NULL, OPT_DRY_RUN},
		{"json", no_argument, NULL, OPT_JSON},
		{"max-size", required_argument, NULL, OPT_MAX_SIZE},
		{"allow-duplicate-keys", no_argument, NULL, OPT_ALLOW_DUPLICATE_KEYS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	cli_target t = {0};
	int allow_dups = 0;
	const char *out = NULL;
	int dry = 0, json = 0, c, rc, from, inplace;
	st_state *s = NULL;
	st_lock *lock = NULL;
	st_changes ch = {0};
	st_error err;

	st_error_clear(&err);
	while ((c = cli_getopt(argc, argv, "ho:", opts)) != -1) {
		if (cli_target_option(&t, c, optarg))
			continue;
		switch (c) {
		case 'o': out = optarg; break;
		case OPT_DRY_RUN: dry = 1; break;
		case OPT_JSON: json = 1; break;
		case OPT_ALLOW_DUPLICATE_KEYS: allow_dups = 1; break;
		case 'h': return cli_help(help);
		default: return cli_usage("migrate", "bad option");
		}
	}
	if (argc - optind > 1)
		return cli_usage("migrate", "too many arguments");
	t.arg = optind < argc ? argv[optind] : NULL;
	t.out = out;
	/* filter mode (-o -, or STATE '-' with no -o): the result to stdout, nothing locked */
	if ((rc = cli_filter_begin(&t)) != EXIT_OK ||
	    (rc = cli_target_resolve(&t, "migrate", 1)) != EXIT_OK)
		goto done;
	/* -o naming STATE itself is an in-place migration: locked, kept as .bak, and nothing
	 * written when there is nothing to migrate */
	if (is_own_file(&t, out))
		out = t.out = NULL;
	inplace = !out && !t.filter;
	if (inplace && dry)
		cli_dry_lock(&t);
	else if (inplace && (rc = cli_lock(&t, &lock)) != EXIT_OK)
		goto done;
	if ((rc = cli_load(&t, &s)) != EXIT_OK ||
	    (rc = cli_refuse_lossy(s, cli_target_name(&t), allow_dups)) != EXIT_OK ||
	    (inplace && !dry &&
	     (rc = cli_refuse_misplaced(s, &t, cli_target_name(&t))) !=
		     EXIT_OK))
		goto done;
	from = st_state_version(s);
	if (st_state_migrate(s, &ch, &err) != ST_OK) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto done;
	}
	/* written first, reported after: a failed write reports nothing but its error */
	if (!dry && !(ch.count == 0 && inplace)) {
		if (inplace || t.filter) {
			rc = cli_save(&t, s, NULL); /* (filter mode: written even when unchanged) */
		} else if (st_state_save(s, out, NULL, &err) != ST_OK) {
			cli_error(&err);
			rc = EXIT_FAIL;
		}
		if (rc != EXIT_OK)
			goto done;
	}
	if (json) {
		json_t *doc = json_object(), *arr = json_array();
		json_object_set_new(doc, "format_version", json_integer(CLI_JSON_FORMAT));
		json_object_set_new(doc, "command", json_string("migrate"));
		json_object_set_new(doc, "dry_run", json_boolean(dry));
		cli_dry_locked_json(doc, &t);
		json_object_set_new(doc, "from", json_integer(from));
		json_object_set_new(doc, "to", json_integer(st_state_version(s)));
		json_object_set_new(doc, "written", json_boolean(!dry && (ch.count > 0 || !inplace)));
		for (size_t i = 0; i < ch.count; i++)
			json_array_append_new(arr, json_string(ch.lines[i]));
		json_object_set_new(doc, "changes", arr);
		cli_print_json(doc); /* (in filter mode on stderr) */
		json_decref(doc);
	} else {
		if (ch.count == 0 && (inplace || t.filter || dry))
			printf("no change: %s is already version %d; nothing to migrate\n",
			       cli_target_name(&t), from);
		else if (ch.count == 0)
			printf("no change: %s is already version %d; nothing to migrate; copied "
			       "unchanged to %s\n",
			       cli_target_name(&t), from, out);
		else if (out && !t.filter)
			printf("%s %s from version %d to %d, %s %s:\n", cli_target_name(&t),
			       dry ? "would be migrated" : "migrated", from, st_state_version(s),
			       dry ? "to be written to" : "written to", out);
		else
			printf("%s %s from version %d to %d:\n", cli_target_name(&t),
			       dry ? "would be migrated" : "migrated", from, st_state_version(s));
		for (size_t i = 0; i < ch.count; i++)
			printf("  %s\n", ch.lines[i]);
	}
done:
	cli_unlock(&t, lock);
	st_changes_clear(&ch);
	st_state_free(s);
	cli_target_free(&t);
	return rc;
}
