/* statetool restore: put STATE.bak back; the current file becomes the backup. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help[] =
	"usage: statetool restore [options] STATE\n"
	"       statetool restore --backend URL --stack NAME\n"
	"       statetool restore --backend URL --stack NAME --generation ID [--dry-run]\n"
	"\n"
	"Put the backup STATE.bak (written by every statetool change, and by Pulumi's DIY\n"
	"backend) back in place, byte for byte. The current file becomes STATE.bak, so a\n"
	"restore can itself be undone by another. The backup must load as a state, and\n"
	"be this stack's: one whose checkpoint or URNs name another stack is refused, as\n"
	"every change of a misplaced state is (a generation likewise, but for one a `stack\n"
	"rename` carried over, naming a former name of the stack that has no stack now, only\n"
	"the .bak the rename left: it is compared and restored as the rename makes it, with a\n"
	"note). What changes is printed first, as `statetool diff` prints it (current => backup,\n"
	"secrets masked); a current state that does not load is restored without a diff,\n"
	"with a warning. A stack (named by --stack or by its file's path inside a DIY\n"
	"backend) is restored under Pulumi's lock, in its backend's store; its backup is\n"
	"the newest of its .json.bak, .json.gz.bak and .json.zst.bak (after a change of\n"
	"compression, the old name's, as Pulumi leaves it), put back under its own name\n"
	"(the current object becomes its own .bak and goes away). Not for a STATE\n"
	"of '-' (standard input): filter mode keeps no backup; keep the export you piped in.\n"
	"\n"
	"With --generation ID (an ID `statetool history` lists: a copy in the stack's\n"
	"backups or history, or bak), the stack is put back to that generation: what\n"
	"changes is printed first as `statetool diff` prints it (current => generation,\n"
	"secrets masked), then the generation is saved as any change is (the replaced\n"
	"state kept as .bak, both states kept as generations in the backups; in the\n"
	"stack's compression, not the generation's, unless PULUMI_DIY_BACKEND_GZIP or\n"
	"_ZSTD asks for another), so a restore is undone by another. A stack's\n"
	"generations are Pulumi's DIY backups: each statetool change leaves the state\n"
	"before and after it there.\n"
	"\n"
	"Options:\n"
	"  --backend URL -s, --stack NAME   a stack of a DIY backend\n"
	"  --generation ID    the generation to put back (stacks only)\n"
	"  --dry-run          print what would change and write nothing (a lock the real\n"
	"                     run would meet is noted)\n"
	"  --json             the result as one JSON document: {\"format_version\": 1,\n"
	"                     \"command\": \"restore\", \"target\" (the object, after a\n"
	"                     write the one written), \"from\" (\"bak\" or the\n"
	"                     generation), \"dry_run\", \"written\"}, with the comparison's\n"
	"                     \"same\", \"added\", \"removed\", \"changed\", \"deployment\" (as\n"
	"                     `statetool diff --json`) when one was made; a failure too (its\n"
	"                     \"error\": code, message, position)\n"
	"  -h, --help         show this help\n";

/* The store and key of the target's object (store borrowed from the backend, or new); for a
 * stack, *exists 0 when it has no object yet. */
static int locate(cli_target *t, st_store **store, int *owned, char **key, int *exists)
{
	st_error err;
	int rc;

	st_error_clear(&err);
	*owned = !t->backend;
	if (t->backend) {
		*store = st_backend_store(t->backend);
		rc = st_backend_stack_key(t->backend, t->qname, key, exists, &err);
	} else {
		rc = st_store_open_file(store, key, t->path, &err);
	}
	if (rc) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* The --json result: where, from what, whether written, and the comparison when made (doc,
 * borrowed, may be NULL). */
static int print_doc(const cli_target *t, const char *from, int dry_run, int written,
		     const json_t *doc)
{
	json_t *top = json_pack("{s:i, s:s, s:s, s:s, s:b, s:b}", "format_version",
				CLI_JSON_FORMAT, "command", "restore", "target",
				cli_target_where(t), "from", from, "dry_run", dry_run, "written",
				written);
	int rc;
	if (!top || (doc && json_object_update(top, (json_t *)doc))) {
		json_decref(top);
		cli_errorf("out of memory");
		return EXIT_FAIL;
	}
	cli_dry_locked_json(top, t);
	rc = cli_print_json(top);
	json_decref(top);
	return rc;
}

/* Puts `bak` back, byte for byte (compressed or not), as `to` (its name without .bak); the
 * current object `key` becomes `keybak` (its .bak). A stack's .bak may be another name's (the
 * state before a change of compression, dev.json.bak beside dev.json.gz): then the current
 * object is copied to its .bak and goes away after the write, as a save that changes the
 * compression does (the newer object is the stack's, so a stop between the two leaves the
 * restored state in place). `shown` names the backup in messages. */
static int restore(st_store *store, const char *key, int exists, const char *bak,
		   const char *to, const char *keybak, const char *shown)
{
	st_store_write_opts wo = ST_STORE_WRITE_OPTS_INIT;
	int other = strcmp(to, key) != 0;
	char *data = NULL;
	size_t len = 0;
	st_state *s = NULL;
	st_error err;
	int rc;

	st_error_clear(&err);
	rc = st_store_read(store, bak, 0, &data, &len, NULL, &err);
	if (rc == ST_ENOTFOUND) {
		cli_errorc("not-found", "no backup '%s' to restore", shown);
		return EXIT_FAIL;
	}
	/* the backup must be a state ... */
	if (rc == ST_OK) {
		char *plain = NULL;
		size_t plen = 0;
		rc = st_file_decompress(data, len, 0, shown, &plain, &plen, NULL, &err);
		if (rc == ST_OK)
			rc = st_state_load_buffer(&s, plain, plen, shown, NULL, &err);
		free(plain);
	}
	/* ... and goes back; the current one becomes its .bak */
	wo.backup_key = other ? NULL : keybak;
	wo.flags = ST_STORE_CHECKPOINT; /* a stack's: as Pulumi's save (a plain file's: nothing) */
	if (rc == ST_OK && other && exists)
		rc = st_store_copy(store, key, keybak, &err);
	if (rc == ST_OK)
		rc = st_store_write(store, to, data, len, &wo, &err);
	if (rc == ST_OK && other && exists)
		rc = st_store_delete(store, key, &err);
	free(data);
	st_state_free(s);
	if (rc) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* The backup as messages name it (new): a file's STATE.bak, a stack's .bak in its store (the
 * object's name, then any query of the store's URL). *key (new, may be NULL) its key. */
static char *bak_where(cli_target *t, char **key, int *exists)
{
	st_error err;
	char *k = NULL, *w = NULL;

	st_error_clear(&err);
	if (key)
		*key = NULL;
	if (exists)
		*exists = 0;
	if (!t->backend) {
		if (asprintf(&w, "%s.bak", t->path) < 0)
			w = NULL;
		return w;
	}
	if (st_backend_stack_bak(t->backend, t->qname, &k, exists, &err) != ST_OK) {
		cli_error(&err);
		return NULL;
	}
	w = st_store_where(st_backend_store(t->backend), k);
	if (key)
		*key = k;
	else
		free(k);
	return w;
}

/* What putting the backup back would change: *doc (new) compares the current state (an empty
 * one when there is none) with the backup (a file's STATE.bak, a stack's .bak), *bak (new) the
 * backup when it loaded (also when the current state does not). *missing: the backup is not
 * there, or (*missing 2) does not load. */
static int compare_bak(cli_target *t, json_t **doc, st_state **bak_out, int *missing,
		       st_error *err)
{
	st_load_opts lo = ST_LOAD_OPTS_INIT;
	st_state *cur = NULL, *old = NULL;
	char *bak = NULL;
	int rc;

	*doc = NULL;
	*missing = 0;
	lo.max_size = t->max_size;
	if (t->backend) {
		rc = st_backend_generation_load(t->backend, t->qname, "bak", &lo, &old, err);
		*missing = rc == ST_ENOTFOUND ? 1 : rc != ST_OK ? 2 : 0;
		if (rc == ST_OK)
			rc = st_backend_load(t->backend, t->qname, &lo, &cur, err);
	} else {
		if (asprintf(&bak, "%s.bak", t->path) < 0) {
			err->code = ST_ENOMEM;
			snprintf(err->message, sizeof(err->message), "out of memory");
			return ST_ENOMEM;
		}
		*missing = access(bak, F_OK) != 0;
		rc = *missing ? ST_ENOTFOUND : st_state_load_file(&old, bak, &lo, err);
		if (rc != ST_OK && !*missing)
			*missing = 2;
		if (rc == ST_OK)
			rc = access(t->path, F_OK) != 0
				     ? ST_ENOTFOUND
				     : st_state_load_file(&cur, t->path, &lo, err);
		free(bak);
	}
	if (rc == ST_ENOTFOUND && old) { /* no current state: compare with an empty one */
		st_error_clear(err);
		rc = st_state_new(&cur, err);
	}
	if (rc == ST_OK)
		rc = st_state_compare(cur, old, doc, err);
	st_state_free(cur);
	*bak_out = old;
	return rc;
}

/* The backup as the place check names it (new). */
static char *bak_name(cli_target *t)
{
	char *w = bak_where(t, NULL, NULL), *name = NULL;
	if (w && asprintf(&name, "backup %s", w) < 0)
		name = NULL;
	free(w);
	return name;
}

/* A backup that is another stack's state (a hand copy, a .bak an old rename left) is refused
 * as every change of a misplaced state is, and as restore --generation refuses one. */
static int refuse_misplaced_bak(cli_target *t, st_state *bak)
{
	char *name;
	int rc;

	if (!bak)
		return EXIT_OK; /* (one that does not load fails the restore itself) */
	if (!(name = bak_name(t))) {
		cli_errorf("out of memory");
		return EXIT_FAIL;
	}
	rc = cli_refuse_misplaced(bak, t, name);
	free(name);
	return rc;
}

/* Prints the comparison's text (as `statetool diff` prints it). */
static int print_compare(const json_t *doc)
{
	char *text = NULL;
	size_t len = 0;
	st_error err;
	st_error_clear(&err);
	if (st_compare_text(doc, &text, &len, &err) != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	fwrite(text, 1, len, stdout);
	free(text);
	return EXIT_OK;
}

static void warn_no_diff(const st_error *err)
{
	cli_warnf("no diff shown: %s%s%s", err->file[0] ? err->file : "", err->file[0] ? ": " : "",
		  err->message[0] ? err->message : st_strerror(err->code));
}

/* Before the backup is put back: its place checked, then what changes, as for a generation
 * (*doc, new; its text unless `json`). None when the current state does not load, with a
 * warning: putting its backup back is how a broken state is mended. */
static int show_bak_diff(cli_target *t, int json, json_t **doc)
{
	st_state *bak = NULL;
	st_error err;
	int missing = 0, rc;
	st_error_clear(&err);
	if (compare_bak(t, doc, &bak, &missing, &err) != ST_OK && !missing)
		warn_no_diff(&err);
	rc = refuse_misplaced_bak(t, bak);
	st_state_free(bak);
	if (rc == EXIT_OK && *doc && !json)
		return print_compare(*doc);
	return rc;
}

/* restore --dry-run STATE (a file's STATE.bak, a stack's .bak): what putting the backup back
 * would change, with the real run's outcome: a backup missing or not loading is an error, a
 * current state that does not load a warning (the backup would mend it). */
static int dry_run_bak(cli_target *t, int json)
{
	json_t *doc = NULL;
	st_state *bak = NULL;
	st_error err;
	int rc, missing;

	st_error_clear(&err);
	cli_dry_lock(t);
	rc = compare_bak(t, &doc, &bak, &missing, &err);
	if (refuse_misplaced_bak(t, bak) != EXIT_OK) {
		st_state_free(bak);
		json_decref(doc);
		return EXIT_FAIL;
	}
	st_state_free(bak);
	if (rc != ST_OK) {
		if (missing == 1) {
			char *w = bak_where(t, NULL, NULL);
			if (w)
				cli_errorc("not-found", "no backup '%s' to restore", w);
			free(w);
			return EXIT_FAIL;
		}
		if (missing == 2) {
			cli_error(&err);
			return EXIT_FAIL;
		}
		warn_no_diff(&err);
	}
	if (json)
		rc = print_doc(t, "bak", 1, 0, doc);
	else if (!doc)
		rc = (printf("dry run: nothing written\n"), EXIT_OK);
	else if ((rc = print_compare(doc)) == EXIT_OK)
		/* a dry run with no change says so, as every command's does */
		printf("%s\n", json_is_true(json_object_get(doc, "same"))
				   ? "no change"
				   : "dry run: nothing written");
	json_decref(doc);
	return rc;
}

/* Puts generation `gen` of the stack back: the diff first, then a save as any change. */
static int restore_generation(cli_target *t, const char *gen, int dry_run, int json)
{
	st_load_opts lo = ST_LOAD_OPTS_INIT;
	st_state *cur = NULL, *old = NULL;
	json_t *doc = NULL;
	char *text = NULL;
	size_t len = 0;
	st_lock *lock = NULL;
	st_error err;
	int rc;

	st_error_clear(&err);
	lo.max_size = t->max_size;
	if (dry_run)
		cli_dry_lock(t);
	else if ((rc = cli_lock(t, &lock)) != EXIT_OK)
		return rc;
	rc = st_backend_generation_load(t->backend, t->qname, gen, &lo, &old, &err);
	/* one a stack rename carried over is this stack's as the rename makes it */
	if (rc == ST_OK && cli_generation_renamed(t->backend, t->qname, old, gen,
						  dry_run ? "compared" : "restored") != EXIT_OK) {
		rc = EXIT_FAIL;
		goto out;
	}
	if (rc == ST_OK) {
		rc = st_backend_load(t->backend, t->qname, &lo, &cur, &err);
		if (rc == ST_ENOTFOUND) { /* the stack has no state: compare with an empty one */
			st_error_clear(&err);
			rc = st_state_new(&cur, &err);
		}
	}
	if (rc == ST_OK)
		rc = st_state_compare(cur, old, &doc, &err);
	if (rc == ST_OK)
		rc = st_compare_text(doc, &text, &len, &err);
	if (rc != ST_OK) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto out;
	}
	/* a generation that is another stack's state (a copied backups folder, a hand-placed
	 * file) is refused as every change is: Pulumi would see none of its resources */
	char name[600];
	snprintf(name, sizeof(name), "generation %s of %s", gen, t->qname);
	if ((rc = cli_refuse_misplaced(old, t, name)) != EXIT_OK)
		goto out;
	if (!json)
		fwrite(text, 1, len, stdout);
	if (dry_run || json_is_true(json_object_get(doc, "same"))) {
		if (json)
			rc = print_doc(t, gen, dry_run, 0, doc);
		else if (dry_run)
			printf("%s\n", json_is_true(json_object_get(doc, "same"))
					   ? "no change"
					   : "dry run: nothing written");
		else
			printf("no change: %s is generation %s already\n", cli_target_where(t),
			       gen);
		goto out;
	}
	/* saved as a change of the stack is: in its own compression unless
	 * PULUMI_DIY_BACKEND_GZIP/ZSTD ask for another, not in the generation's */
	st_state_set_compression(old, st_state_compression(cur));
	if ((rc = cli_save(t, old, NULL)) != EXIT_OK)
		goto out;
	if (json)
		rc = print_doc(t, gen, 0, 1, doc);
	else
		printf("restored %s from generation %s (the replaced version is now its .bak and "
		       "a generation)\n", cli_target_where(t), gen);
out:
	free(text);
	json_decref(doc);
	st_state_free(cur);
	st_state_free(old);
	cli_unlock(t, lock);
	return rc;
}

/* restore STATE (a file's STATE.bak, a stack's .bak): under the lock, the diff, then the
 * backup put back, the states replaced and restored kept as generations (a stack's). */
static int restore_bak(cli_target *t, int json)
{
	char *key = NULL, *bak = NULL, *to = NULL, *keybak = NULL, *shown = NULL;
	char *to_where = NULL, *keybak_where = NULL;
	int rc, owned = 0, exists = 1;
	st_store *store = NULL;
	st_lock *lock = NULL;
	json_t *doc = NULL;

	if ((rc = locate(t, &store, &owned, &key, &exists)) != EXIT_OK ||
	    (rc = cli_lock(t, &lock)) != EXIT_OK)
		goto out;
	/* the backup (a stack's: the newest of its .bak names), where it goes (its own name)
	 * and where the replaced state goes (the current object's .bak), as keys and for
	 * messages */
	if (!(shown = bak_where(t, &bak, NULL))) {
		rc = EXIT_FAIL;
		goto out;
	}
	if (!bak && asprintf(&bak, "%s.bak", key) < 0)
		bak = NULL;
	to = bak ? strndup(bak, strlen(bak) - 4) : NULL;
	if (!to || asprintf(&keybak, "%s.bak", key) < 0 ||
	    !(to_where = t->backend ? st_store_where(store, to) : strdup(t->path)) ||
	    !(keybak_where = t->backend ? st_store_where(store, keybak) : strdup(shown))) {
		cli_errorf("out of memory");
		rc = EXIT_FAIL;
		goto out;
	}
	/* (the place checked before anything is written) */
	if ((rc = show_bak_diff(t, json, &doc)) != EXIT_OK)
		goto out;
	if (t->backend && st_backend_store(t->backend)) { /* the state replaced stays a generation */
		st_error gerr;
		st_error_clear(&gerr);
		if (st_backend_keep_generation(t->backend, t->qname, &gerr) != ST_OK &&
		    gerr.code != ST_ENOTFOUND) {
			cli_error(&gerr);
			rc = EXIT_FAIL;
			goto out;
		}
	}
	if ((rc = restore(store, key, exists, bak, to, keybak, shown)) != EXIT_OK)
		goto out;
	if (t->backend && st_backend_store(t->backend)) { /* a change like any other: the restored
							  * state is a generation */
		st_error gerr;
		st_error_clear(&gerr);
		if (st_backend_keep_saved_generation(t->backend, t->qname, &gerr) != ST_OK) {
			cli_error(&gerr);
			rc = EXIT_FAIL;
			goto out;
		}
	}
	if (json)
		rc = print_doc(t, "bak", 0, 1, doc);
	else
		printf("restored %s from %s (the replaced version is now %s)\n", to_where, shown,
		       keybak_where);
out:
	json_decref(doc);
	free(key);
	free(bak);
	free(to);
	free(keybak);
	free(shown);
	free(to_where);
	free(keybak_where);
	cli_unlock(t, lock);
	if (owned)
		st_store_free(store);
	return rc;
}

int cmd_restore(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"stack", required_argument, NULL, OPT_STACK},
		{"generation", required_argument, NULL, OPT_FROM},
		{"dry-run", no_argument, NULL, OPT_DRY_RUN},
		{"json", no_argument, NULL, OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	cli_target t = {0};
	const char *gen = NULL;
	int c, rc, dry_run = 0, json = 0;

	while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
		if (cli_target_option(&t, c, optarg))
			continue;
		if (c == OPT_FROM) {
			gen = optarg;
			continue;
		}
		if (c == OPT_DRY_RUN) {
			dry_run = 1;
			continue;
		}
		if (c == OPT_JSON) {
			json = 1;
			continue;
		}
		if (c == 'h')
			return cli_help(help);
		return cli_usage("restore", "bad option");
	}
	if (argc - optind > 1)
		return cli_usage("restore", "too many arguments");
	t.arg = optind < argc ? argv[optind] : NULL;
	t.no_stdin = 1;
	if ((rc = cli_target_resolve(&t, "restore", 0)) != EXIT_OK)
		goto out;
	if (!t.backend && !strcmp(t.path, "-")) {
		rc = cli_usage("restore", "standard input has no backup (filter mode keeps none): "
					       "restore works on a file or a stack");
		goto out;
	}
	if (gen && !t.backend) {
		cli_errorf("--generation: '%s' is not a stack of a DIY backend; a file has only "
			   "its .bak (`statetool restore %s`)", t.path, t.path);
		rc = EXIT_FAIL;
		goto out;
	}
	if (gen) {
		rc = restore_generation(&t, gen, dry_run, json);
		goto out;
	}
	if (dry_run) {
		rc = dry_run_bak(&t, json);
		goto out;
	}
	rc = restore_bak(&t, json);
out:
	cli_target_free(&t);
	return rc;
}
