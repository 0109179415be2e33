/* statetool unlock: remove the locks of a stack or of a state file. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char help[] =
	"usage: statetool unlock [options] STATE\n"
	"       statetool unlock --backend URL --stack NAME\n"
	"\n"
	"Remove every lock of a DIY backend stack (every object in\n"
	".pulumi/locks/organization/PROJECT/STACK/, whatever its name: Pulumi counts each as\n"
	"a lock; the equivalent of `pulumi cancel`'s lock removal) or the lock of a plain\n"
	"state file (STATE.lock). A STATE inside a DIY backend (.pulumi/stacks/...) is that\n"
	"stack. Use it only when the\n"
	"process named in the lock is gone: a lock error names its holder and marks it\n"
	"stale when that process is no longer running on this host.\n"
	"\n"
	"An unfinished statetool operation on the stack or file (a committed `move`: its\n"
	".statetool-journal; a `stack rename`: its .statetool-rename marker) is completed\n"
	"first, as any statetool command does, which also removes that operation's locks (they\n"
	"keep Pulumi off the stack until it is finished). When another's lock on this stack is\n"
	"in the way, the locks are removed and the completion tried again (a warning when it\n"
	"still fails); when another's lock is on the operation's other stack only, nothing\n"
	"is removed and the error names that lock; a journal this statetool cannot read is a\n"
	"warning. Any other failure (a side written since, a store that cannot be reached)\n"
	"removes nothing and the error says why; --force then removes the locks anyway and\n"
	"leaves the operation as it is.\n"
	"\n"
	"Options:\n"
	"  --backend URL -s, --stack NAME   the stack whose locks to remove (URL: PATH, file://PATH,\n"
	"                               s3://, azblob://, gs:// or postgres://)\n"
	"  --force            remove the locks without completing an unfinished operation\n"
	"                     first (a Pulumi write to the stack before it is completed makes\n"
	"                     it one to resolve by hand)\n"
	"  --json             the result as one JSON document: {\"format_version\": 1,\n"
	"                     \"command\": \"unlock\", \"target\", \"removed\": N}; a failure\n"
	"                     too (its \"error\": code, message, position)\n"
	"  -h, --help         show this help\n"
	"\n"
	"Prints \"removed N lock(s) of TARGET\" (0 when there was none). A STATE or stack\n"
	"that does not exist is an error unless a lock of it was removed; STATE is not '-'.\n"
	"Exit status 0, 1 when the locks could not be removed (or an unfinished operation\n"
	"not completed) or there is no such state, 2 on a usage error.\n";

/* The recovery every command runs first (cli_recover), its error kept, not printed; its
 * notes printed. */
static int try_recover(cli_target *t, st_error *err)
{
	st_changes ch = {0};
	int rc = ST_OK;

	st_error_clear(err);
	if (t->backend)
		rc = st_backend_recover(t->backend, t->qname, NULL, 0, 0, &ch, err);
	else if (st_journal_pending(t->path, NULL))
		rc = st_journal_recover(t->path, &ch, err);
	for (size_t i = 0; i < ch.count; i++)
		fprintf(stderr, "%s: note: %s\n", cli_prog, ch.lines[i]);
	if (ch.count)
		cli_target_forget(t);
	st_changes_clear(&ch);
	return rc;
}

/* A completed operation may have written the target (a move's new destination). */
static void refresh_exists(cli_target *t)
{
	char *key = NULL;
	int exists = 0;

	if (t->exists)
		return;
	if (t->backend)
		t->exists = st_backend_stack_key(t->backend, t->qname, &key, &exists, NULL) ==
				    ST_OK &&
			    exists;
	else
		t->exists = access(t->path, F_OK) == 0;
	free(key);
}

/* Is another's lock in the way of the unfinished operation on THIS side (the one unlock
 * removes)? ST_ELOCKED or ST_OK (or another failure). */
static int here_locked(cli_target *t)
{
	st_store *s = NULL;
	char *key = NULL;
	st_error err;
	int rc;

	st_error_clear(&err);
	if (t->backend)
		return st_backend_recover(t->backend, t->qname, NULL, 0, ST_JOURNAL_CHECK_HERE,
					  NULL, &err);
	rc = st_store_open_file(&s, &key, t->path, &err);
	if (rc == ST_OK)
		rc = st_journal_recover_key(s, key, NULL, 0, ST_JOURNAL_CHECK_HERE, NULL, &err);
	free(key);
	st_store_free(s);
	return rc;
}

/* Before the locks go: an unfinished operation completed, its own locks with it. *retry: a
 * lock that is not the operation's is in the way on this side (the one to remove): try again
 * after. One on the operation's other side only is refused, every lock kept: removing this
 * side's would let Pulumi write a stack the journal still claims (--force does). A journal
 * this statetool cannot read is no operation it can complete: a warning. Any other failure
 * removes nothing: the locks keep Pulumi off the stack until it is completed. */
static int recover_first(cli_target *t, int *retry)
{
	st_error err;
	int rc = try_recover(t, &err);

	/* refused by a lock on the other side only: err names it */
	if (rc == ST_ELOCKED && here_locked(t) != ST_ELOCKED) {
		cli_error(&err);
		fprintf(stderr,
			"%s: note: no lock was removed: the unfinished operation cannot be "
			"completed while that lock, on its other stack, is held, and this stack's "
			"locks keep Pulumi off it until then; once that lock is gone, `statetool "
			"unlock` again completes it; `statetool unlock --force` removes this "
			"stack's locks anyway\n",
			cli_prog);
		return EXIT_FAIL;
	}
	*retry = rc == ST_ELOCKED;
	/* the journal's own refusals (json, its form, its version); not a store that fails to
	 * open (ST_EINVAL: credentials), which leaves the locks (review27 R10) */
	if (rc == ST_EPARSE || rc == ST_EFORMAT || rc == ST_EVERSION)
		cli_warnf("%s; the locks are removed all the same (this statetool cannot complete "
			  "that operation)",
			  err.message);
	else if (rc != ST_OK && rc != ST_ELOCKED) {
		cli_error(&err);
		fprintf(stderr,
			"%s: note: no lock was removed: the locks keep Pulumi off the stack until "
			"the operation is finished; `statetool unlock --force` removes them anyway\n",
			cli_prog);
		return EXIT_FAIL;
	}
	refresh_exists(t);
	return EXIT_OK;
}

/* After the locks are gone, the completion refused by one of them tried again. */
static void recover_again(cli_target *t)
{
	st_error err;

	if (try_recover(t, &err) != ST_OK)
		cli_warnf("%s; the locks of %s are removed, but the unfinished operation is still "
			  "pending",
			  err.message, cli_target_name(t));
	refresh_exists(t);
}

int cmd_unlock(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"stack", required_argument, NULL, OPT_STACK},
		{"json", no_argument, NULL, OPT_JSON},
		{"force", no_argument, NULL, OPT_FORCE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	cli_target t = {0};
	int c, rc, removed = 0, json = 0, force = 0, retry = 0;
	struct stat sb;
	st_error err;

	st_error_clear(&err);
	while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
		if (cli_target_option(&t, c, optarg))
			continue;
		if (c == OPT_JSON) {
			json = 1;
			continue;
		}
		if (c == OPT_FORCE) {
			force = 1;
			continue;
		}
		if (c == 'h')
			return cli_help(help);
		return cli_usage("unlock", "bad option");
	}
	if (argc - optind > 1)
		return cli_usage("unlock", "too many arguments");
	t.arg = optind < argc ? argv[optind] : NULL;
	t.no_stdin = 1;
	if ((rc = cli_target_resolve(&t, "unlock", 0)) != EXIT_OK)
		goto out;
	if (!t.backend && !strcmp(t.path, "-")) {
		rc = cli_usage("unlock", "standard input has no lock (filter mode takes none): "
					 "unlock works on a file or a stack");
		goto out;
	}
	if (!t.backend && t.exists && stat(t.path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		cli_errorf("cannot unlock '%s': it is a directory, not a state file", t.path);
		rc = EXIT_FAIL;
		goto out;
	}
	/* an unfinished move or stack rename holds these locks until it is done: completed
	 * first (its recovery removes them), or, failing that, nothing is removed */
	if (!force && (rc = recover_first(&t, &retry)) != EXIT_OK)
		goto out;
	if (t.backend)
		rc = st_unlock_stack(t.backend, t.qname, &removed, &err);
	else
		rc = st_unlock_file(t.path, &removed, &err);
	if (rc) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto out;
	}
	if (retry)
		recover_again(&t);
	/* a mistyped name is no success: the locks of a missing state are removed (a stray one
	 * is how a crash can leave it), but with none a missing state is an error */
	if (!removed && !t.exists) {
		rc = cli_target_missing(&t);
		goto out;
	}
	if (json) {
		json_t *doc = json_pack("{s:i, s:s, s:s, s:i}", "format_version", CLI_JSON_FORMAT,
					"command", "unlock", "target", cli_target_name(&t),
					"removed", removed);
		rc = doc ? cli_print_json(doc) : EXIT_FAIL;
		json_decref(doc);
		goto out;
	}
	printf("removed %d lock%s of %s\n", removed, removed == 1 ? "" : "s", cli_target_name(&t));
	rc = EXIT_OK;
out:
	cli_target_free(&t);
	return rc;
}
