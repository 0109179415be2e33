/* The flow every mutating command shares: lock, load, edit session, operation, integrity
 * check, diff (and --dry-run), atomic save with a backup, unlock. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* Adds a query's "not found" to the one error that reports them all (st_error's message is
 * bounded: the ones that do not fit are counted). */
static void add_missing(st_error *all, const st_error *one, size_t *left_off)
{
	size_t have = strlen(all->message), need = strlen(one->message);
	if (!all->code) {
		*all = *one;
		return;
	}
	if (have + 1 + need + 64 < sizeof(all->message))
		snprintf(all->message + have, sizeof(all->message) - have, "\n%s", one->message);
	else
		(*left_off)++;
}

/* Copies of one URN (delete: true) are refused unless `how` takes copies: say which. */
static void copies_refused(st_state *s, const size_t *hits, size_t nh)
{
	json_t *res = st_state_resources(s, 0);
	cli_errorf("Resource URN ambiguously referred to multiple resources (copies "
		   "marked delete: true); give one as #INDEX:");
	for (size_t k = 0; k < nh; k++) {
		json_t *r = json_array_get(res, hits[k]);
		fprintf(stderr, "  #%zu %s%s\n", hits[k], json_string_value(json_object_get(r, "urn")),
			json_is_true(json_object_get(r, "delete")) ? " (delete: true)" : "");
	}
}

int cli_find(st_state *s, char *const *queries, int n, int how, size_t **out, size_t *count)
{
	size_t *all = NULL, total = 0, left_off = 0;
	st_error err, missing;

	*out = NULL;
	*count = 0;
	st_error_clear(&missing);
	for (int q = 0; q < n; q++) {
		size_t *hits = NULL, nh = 0;
		st_error_clear(&err);
		if (st_state_find_ex(s, queries[q], how & CLI_FIND_LIVE ? ST_FIND_LIVE : 0, &hits,
				     &nh, &err) != ST_OK) {
			if (err.code == ST_ENOTFOUND) {
				add_missing(&missing, &err, &left_off);
				continue;
			}
			cli_error(&err);
			free(all);
			return EXIT_FAIL;
		}
		if (nh > 1 && !(how & CLI_FIND_COPIES)) {
			copies_refused(s, hits, nh);
			free(hits);
			free(all);
			return EXIT_FAIL;
		}
		size_t *na = realloc(all, (total + nh + 1) * sizeof(*na));
		if (!na) {
			free(hits);
			free(all);
			cli_errorf("out of memory");
			return EXIT_FAIL;
		}
		all = na;
		for (size_t k = 0; k < nh; k++) {
			int dup = 0;
			for (size_t j = 0; j < total; j++)
				dup |= all[j] == hits[k];
			if (!dup)
				all[total++] = hits[k];
		}
		free(hits);
	}
	if (missing.code) {
		size_t have = strlen(missing.message);
		if (left_off)
			snprintf(missing.message + have, sizeof(missing.message) - have,
				 "\n(and %zu more resources not found)", left_off);
		cli_error(&missing);
		free(all);
		return EXIT_FAIL;
	}
	*out = all;
	*count = total;
	return EXIT_OK;
}

static void print_json_summary(const char *cmd, int dry, int written, st_changes *ch,
			       st_diff *d, const cli_target *t)
{
	const char *path = t->filter ? "-" : cli_target_where(t);
	json_t *doc = json_object(), *arr = json_array(), *res = json_object();
	json_t *added = json_array(), *removed = json_array(), *changed = json_array();
	json_object_set_new(doc, "format_version", json_integer(CLI_JSON_FORMAT));
	json_object_set_new(doc, "command", json_string(cmd));
	json_object_set_new(doc, "dry_run", json_boolean(dry));
	json_object_set_new(doc, "written", json_boolean(written));
	cli_dry_locked_json(doc, t);
	if (written && path)
		json_object_set_new(doc, "file", json_string(path));
	for (size_t i = 0; i < ch->count; i++)
		json_array_append_new(arr, json_string(ch->lines[i]));
	json_object_set_new(doc, "changes", arr);
	for (size_t i = 0; i < d->count; i++) {
		st_diff_entry *it = &d->items[i];
		if (it->kind == '+') {
			json_array_append_new(added, json_string(it->urn));
		} else if (it->kind == '-') {
			json_array_append_new(removed, json_string(it->urn));
		} else {
			json_t *o = json_object(), *f = json_array();
			json_object_set_new(o, "urn", json_string(it->urn));
			for (size_t k = 0; k < it->nfields; k++)
				json_array_append_new(f, json_string(it->fields[k]));
			json_object_set_new(o, "fields", f);
			json_array_append_new(changed, o);
		}
	}
	json_object_set_new(res, "added", added);
	json_object_set_new(res, "removed", removed);
	json_object_set_new(res, "changed", changed);
	json_object_set_new(doc, "resources", res);
	json_t *po = json_object();
	json_object_set_new(po, "before", json_integer((json_int_t)d->pending_before));
	json_object_set_new(po, "after", json_integer((json_int_t)d->pending_after));
	json_object_set_new(doc, "pending_operations", po);
	cli_print_json(doc);
	json_decref(doc);
}

static void print_diff(const st_diff *d)
{
	for (size_t i = 0; i < d->count; i++) {
		const st_diff_entry *it = &d->items[i];
		printf("  %c %s", it->kind, it->urn);
		for (size_t k = 0; k < it->nfields; k++)
			printf("%s%s", k ? ", " : " (", it->fields[k]);
		printf("%s\n", it->nfields ? ")" : "");
	}
	if (d->pending_before != d->pending_after)
		printf("  pending operations: %zu -> %zu\n", d->pending_before, d->pending_after);
}

int cli_mutate(cli_target *t, const cli_mutate_opts *mo, cli_mutate_fn fn, void *arg)
{
	st_state *s = NULL;
	st_lock *lock = NULL;
	st_edit *e = NULL;
	st_changes ch = {0};
	st_diff d = {0};
	st_problems probs = {0};
	st_error err;
	int rc;

	st_error_clear(&err);
	if (t->out && strcmp(t->out, "-")) {
		rc = cli_usage(mo->cmd, "-o takes '-' (standard output) only: without it the state "
					"is written back to STATE");
		goto out;
	}
	if ((rc = cli_filter_begin(t)) != EXIT_OK ||
	    (rc = cli_target_resolve(t, mo->cmd, 1)) != EXIT_OK)
		goto out;
	if (mo->dry_run)
		cli_dry_lock(t);
	else if (!t->filter && (rc = cli_lock(t, &lock)) != EXIT_OK)
		goto out;
	if ((rc = cli_load_ex(t, &s, mo->lazy)) != EXIT_OK ||
	    (rc = cli_refuse_lossy(s, cli_target_name(t), mo->allow_dups)) != EXIT_OK ||
	    (!mo->any_place &&
	     (rc = cli_refuse_misplaced(s, t, cli_target_name(t))) !=
		     EXIT_OK))
		goto out;
	if (st_edit_begin(&e, s, &ch, &err) != ST_OK) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto out;
	}
	size_t base = ch.count; /* a migration made by st_edit_begin alone is no reason to write */
	rc = fn(e, s, arg, &err);
	if (rc == EXIT_USAGE || rc == EXIT_FAIL) {
		/* fn printed its own message */
		goto out;
	}
	if (rc != ST_OK) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto out;
	}
	/* Written as it is checked (st_edit_commit_save); a dry run only checks. */
	int write = 0, nothing;
	if (mo->dry_run)
		rc = st_edit_commit(e, &d, &probs, &err);
	else
		rc = cli_commit_save(t, e, ch.count != base, &d, &probs, &write, &err);
	if (rc != ST_OK) {
		cli_error(&err);
		for (size_t i = 0; i < probs.count; i++)
			cli_problem(&probs.items[i]);
		if (!mo->dry_run && mo->save_failed)
			mo->save_failed(arg);
		rc = EXIT_FAIL;
		goto out;
	}
	/* (in filter mode the state is written even when nothing changed) */
	nothing = mo->dry_run || t->filter ? d.count == 0 && d.pending_before == d.pending_after &&
						     !d.other_changed && ch.count == base
					   : !write;
	if (write && (rc = cli_filter_emit(t)) != EXIT_OK)
		goto out;
	if (write && mo->after_save && (rc = mo->after_save(arg)) != EXIT_OK)
		goto out;
	if (mo->json) {
		print_json_summary(mo->cmd, mo->dry_run, write, &ch, &d, t);
	} else {
		if (mo->dry_run && ch.count)
			printf("Planned changes:\n");
		for (size_t i = 0; i < ch.count; i++)
			printf("%s%s\n", mo->dry_run ? "  " : "", ch.lines[i]);
		if ((mo->dry_run || mo->show_diff) && (d.count || d.pending_before != d.pending_after)) {
			printf("Resources (+ added, - removed, ~ changed):\n");
			print_diff(&d);
		}
		if (nothing)
			printf(mo->dry_run ? "no change\n" : "no change: nothing written\n");
		else if (mo->dry_run)
			printf("dry run: nothing written\n");
		else if (mo->summary[0])
			printf("%s\n", mo->summary);
	}
	rc = EXIT_OK;
out:
	st_edit_free(e);
	st_changes_clear(&ch);
	st_diff_clear(&d);
	st_problems_clear(&probs);
	cli_unlock(t, lock);
	cli_state_done(s);
	cli_target_free(t);
	if (rc == EXIT_OK)
		fflush(stdout); /* (in filter mode stdout is stderr: its lines before the exit) */
	return rc;
}

static const struct option shared_opts[] = {
	{"output", required_argument, NULL, 'o'},
	{"backend", required_argument, NULL, OPT_BACKEND},
	{"stack", required_argument, NULL, OPT_STACK},
	{"dry-run", no_argument, NULL, OPT_DRY_RUN},
	{"json", no_argument, NULL, OPT_JSON},
	{"allow-duplicate-keys", no_argument, NULL, OPT_ALLOW_DUPLICATE_KEYS},
	{"max-size", required_argument, NULL, OPT_MAX_SIZE},
	{"help", no_argument, NULL, 'h'},
};

int cli_mutate_parse(int argc, char **argv, const char *help, const struct option *extra,
		     cli_extra_fn on_extra, void *ctx, cli_target *t, cli_mutate_opts *mo,
		     char ***pos, int *npos)
{
	size_t ns = sizeof(shared_opts) / sizeof(shared_opts[0]), ne = 0;
	struct option *all;
	int c, rc = -1;

	while (extra && extra[ne].name)
		ne++;
	all = calloc(ns + ne + 1, sizeof(*all));
	if (!all)
		return EXIT_FAIL;
	memcpy(all, shared_opts, sizeof(shared_opts));
	if (ne)
		memcpy(all + ns, extra, ne * sizeof(*all));
	optind = 1;
	while ((c = cli_getopt(argc, argv, "ho:", all)) != -1) {
		if (cli_target_option(t, c, optarg))
			continue;
		switch (c) {
		case OPT_DRY_RUN: mo->dry_run = 1; break;
		case OPT_JSON: mo->json = 1; break;
		case OPT_ALLOW_DUPLICATE_KEYS: mo->allow_dups = 1; break;
		case 'h': rc = cli_help(help); goto out;
		case 'o':
			/* a command's own -o first (secrets show: a file) */
			if (!on_extra || on_extra(c, optarg, ctx) != 0)
				t->out = optarg;
			break;
		default:
			if (c != '?' && on_extra && on_extra(c, optarg, ctx) == 0)
				break;
			rc = cli_usage(mo->cmd, "bad option");
			goto out;
		}
	}
	*pos = argv + optind;
	*npos = argc - optind;
	if (!t->stack) {
		if (*npos < 1) {
			rc = cli_usage(mo->cmd, "missing STATE (a file, or --backend URL --stack "
						"NAME)");
			goto out;
		}
		t->arg = (*pos)[0];
		(*pos)++;
		(*npos)--;
	}
	rc = -1; /* parsed: the caller goes on */
out:
	free(all);
	return rc;
}
