/* statetool pending: list pending operations; `pending clear` removes them. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help_list[] =
	"usage: statetool pending [options] STATE\n"
	"       statetool pending clear [options] STATE [RESOURCE...]\n"
	"       statetool pending import [options] STATE URN ID [URN ID...]\n"
	"\n"
	"List the pending operations an interrupted update left in a state (one line each:\n"
	"type and URN), or with `clear` remove them: all of them, or those on the given\n"
	"resources (exact URN, name or URN suffix of the operation's resource). Clearing is\n"
	"what `pulumi stack export | pulumi stack import` does, made explicit; run\n"
	"`pulumi refresh` afterwards so that Pulumi learns what the interrupted operations\n"
	"left behind.\n"
	"\n"
	"A `creating` operation may have created a resource that the state does not record.\n"
	"`pending import` records it by its physical ID instead, as `pulumi refresh\n"
	"--import-pending-creates URN ID` does: each URN (exact URN, name or URN suffix of a\n"
	"pending `creating` operation) becomes a resource with what the operation recorded\n"
	"(type, parent, provider, inputs, dependencies) and the ID given; run `pulumi\n"
	"refresh` next so that Pulumi reads its outputs. A URN with no pending create is an\n"
	"error (\"URN\" did not correspond to a pending create), and so is a resource that\n"
	"is in the state already. `pending clear` names this way out when it clears a\n"
	"`creating` operation. What it clears stays recoverable: the cleared operations are\n"
	"added to the list in STATE.pending-cleared.json beside the state (each clear adds\n"
	"to it those it does not list yet, before the state is written: a crash between the\n"
	"two leaves them listed and still pending, and a write of the state that fails puts\n"
	"the file back as it was; a file there that is no such list stops the command before\n"
	"anything is written; a stack without a local file: printed on standard error), and\n"
	"the previous state is kept as STATE.bak (`statetool restore STATE` puts it back).\n"
	"\n"
	"Options:\n"
	"  --backend URL -s, --stack NAME   a stack of a DIY backend\n"
	"  --json             one JSON document\n"
	"  -h, --help         show this help\n"
	"The options of `clear` are those of every mutating command (see below).\n"
	"\n" CLI_MUTATE_HELP;

typedef struct ctx {
	char **queries;
	int nq;
	cli_mutate_opts *mo;
	cli_target *t;
	json_t *cleared; /* the operations the clear removes (a copy) */
	json_t *record;  /* what STATE.pending-cleared.json held before (an array), or NULL */
	char *saved;     /* that file (read_record), where the cleared operations go */
	char *before;    /* its bytes before (NULL: there was none), put back by undo_record */
	size_t before_len;
	st_compression before_comp;
	size_t added;    /* the operations write_record added to it (0: it was not written) */
	size_t creating; /* how many of them are `creating` */
} ctx;

/* Resolves a query among the pending operations' URNs: exact, name, suffix. */
static const char *resolve(json_t *ops, const char *q)
{
	size_t i, n = 0;
	json_t *op;
	const char *hit = NULL;
	for (int pass = 0; pass < 3 && !n; pass++) {
		json_array_foreach(ops, i, op) {
			const char *u = json_string_value(json_object_get(json_object_get(op, "resource"),
									  "urn"));
			st_urn pu;
			size_t ul, ql = strlen(q);
			int m = 0;
			if (!u)
				continue;
			ul = strlen(u);
			if (pass == 0)
				m = !strcmp(u, q);
			else if (pass == 1)
				m = st_urn_parse(u, &pu) == ST_OK && !strcmp(pu.name, q);
			else
				m = ul > ql && !strcmp(u + ul - ql, q);
			if (m && (!hit || strcmp(hit, u))) {
				n += hit ? 1 : 1;
				if (hit && strcmp(hit, u)) {
					cli_errorf("'%s' matches pending operations on several resources; "
						   "give the full URN", q);
					return NULL;
				}
				hit = u;
			}
		}
	}
	if (!hit)
		cli_errorf("no pending operation on \"%s\"", q);
	return hit;
}

/* The operations the clear removes, kept before they go. */
static int keep_cleared(ctx *c, json_t *ops, const char *const *urns, size_t n)
{
	json_t *op;
	size_t i;
	if (!(c->cleared = json_array()))
		return EXIT_FAIL;
	json_array_foreach(ops, i, op) {
		const char *u = json_string_value(json_object_get(json_object_get(op, "resource"),
								  "urn"));
		const char *ty = json_string_value(json_object_get(op, "type"));
		int hit = !urns;
		for (size_t k = 0; !hit && k < n; k++)
			hit = u && !strcmp(u, urns[k]);
		if (!hit)
			continue;
		if (ty && !strcmp(ty, "creating"))
			c->creating++;
		if (json_array_append(c->cleared, op))
			return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* The record beside a state file is added to, never overwritten: an earlier clear's operations
 * stay in it. Read before anything is written; one that is not a list of operations stops the
 * command (nothing written). */
static int read_record(ctx *c)
{
	char *path;
	st_error err;
	int rc;

	if (!c->t->path || c->t->filter)
		return EXIT_OK;
	if (asprintf(&c->saved, "%s.pending-cleared.json", c->t->path) < 0) {
		c->saved = NULL;
		cli_errorf("out of memory");
		return EXIT_FAIL;
	}
	path = c->saved;
	st_error_clear(&err);
	rc = st_file_read(path, 0, &c->before, &c->before_len, &c->before_comp, &err);
	if (rc == ST_OK)
		rc = st_json_parse(&c->record, c->before, c->before_len, path, NULL, NULL, NULL,
				   &err);
	if (rc == ST_ENOTFOUND) {
		c->record = json_array();
		rc = c->record ? ST_OK : ST_ENOMEM;
	} else if (rc == ST_OK && !json_is_array(c->record)) {
		rc = ST_EFORMAT;
	}
	if (rc == ST_EFORMAT || rc == ST_EPARSE)
		cli_errorf("'%s' is not the list of cleared operations statetool keeps there: move "
			   "it away and run the command again (nothing was written)", path);
	else if (rc != ST_OK)
		cli_error(&err);
	return rc == ST_OK ? EXIT_OK : EXIT_FAIL;
}

static int write_record(ctx *c);

static int run_clear(st_edit *e, st_state *s, void *arg, st_error *err)
{
	ctx *c = arg;
	json_t *dep = st_state_deployment(s);
	json_t *ops = dep ? json_object_get(dep, "pending_operations") : NULL;
	const char **urns = NULL;
	size_t removed = 0;
	int rc;

	if (c->nq) {
		urns = calloc((size_t)c->nq, sizeof(*urns));
		for (int i = 0; i < c->nq; i++) {
			urns[i] = resolve(ops, c->queries[i]);
			if (!urns[i]) {
				free(urns);
				return EXIT_FAIL;
			}
		}
	}
	if (read_record(c) != EXIT_OK) {
		free(urns);
		return EXIT_FAIL;
	}
	if (keep_cleared(c, ops, urns, (size_t)c->nq) != EXIT_OK) {
		free(urns);
		cli_errorf("out of memory");
		return EXIT_FAIL;
	}
	rc = st_edit_pending_clear(e, urns, (size_t)c->nq, &removed, err);
	free(urns);
	if (rc == ST_OK && write_record(c) != EXIT_OK)
		return EXIT_FAIL;
	if (rc == ST_OK)
		snprintf(c->mo->summary, sizeof(c->mo->summary), "%zu pending operation%s removed%s",
			 removed, removed == 1 ? "" : "s",
			 removed > c->creating ? "; run `pulumi refresh` next" : "");
	return rc;
}

/* Adds to the record the cleared operations it does not list yet (an operation equal to one
 * listed is that one: a clear whose state was not written, by a kill between the record and the
 * state, is run again and finds its operations there): how many, or -1 (out of memory). */
static long add_unlisted(ctx *c)
{
	size_t i, k, had = json_array_size(c->record);
	json_t *op;
	long n = 0;

	json_array_foreach(c->cleared, i, op) {
		int listed = 0;
		for (k = 0; k < had && !listed; k++)
			listed = json_equal(json_array_get(c->record, k), op);
		if (listed)
			continue;
		if (json_array_append(c->record, op))
			return -1;
		n++;
	}
	return n;
}

/* The record (or, without one, the cleared operations) as indented JSON and a new line (new). */
static char *record_text(ctx *c, size_t *len)
{
	st_style st;
	char *text = NULL, *nl;

	st_style_export(&st);
	if (st_json_dump(c->record ? c->record : c->cleared, &st, &text, len, NULL) != ST_OK)
		return NULL;
	if (!(nl = realloc(text, *len + 2))) {
		free(text);
		return NULL;
	}
	nl[(*len)++] = '\n';
	nl[*len] = '\0';
	return nl;
}

/* The record is written before the state: a kill between the two leaves an operation listed
 * that is still pending (the rerun finds it listed and does not add it again), never one
 * cleared that nothing lists. A write of the state that fails puts the record back as it was
 * (undo_record). */
static int write_record(ctx *c)
{
	st_write_opts wo = ST_WRITE_OPTS_INIT;
	st_error err;
	size_t len = 0;
	char *text = NULL;
	long added;
	int rc = EXIT_OK;

	if (!c->saved || c->mo->dry_run || !json_array_size(c->cleared))
		return EXIT_OK;
	if ((added = add_unlisted(c)) < 0 || (added && !(text = record_text(c, &len)))) {
		cli_errorf("out of memory");
		return EXIT_FAIL;
	}
	if (!added)
		return EXIT_OK;
	st_error_clear(&err);
	if (st_file_write_atomic(c->saved, text, len, &wo, &err) != ST_OK) {
		cli_error(&err);
		fprintf(stderr, "nothing written\n");
		rc = EXIT_FAIL;
	} else {
		c->added = (size_t)added;
	}
	free(text);
	return rc;
}

/* The state was not written: the record goes back to what it was before write_record (removed
 * when there was none), so that it lists no operation still pending; if that fails, says so. */
static void undo_record(void *arg)
{
	ctx *c = arg;
	st_write_opts wo = ST_WRITE_OPTS_INIT;
	st_error err;
	char why[sizeof(err.message)];

	if (!c->added)
		return;
	st_error_clear(&err);
	why[0] = '\0';
	if (c->before) {
		wo.compression = c->before_comp;
		if (st_file_write_atomic(c->saved, c->before, c->before_len, &wo, &err) != ST_OK)
			snprintf(why, sizeof(why), "%s", err.message);
	} else if (unlink(c->saved) < 0 && errno != ENOENT) {
		snprintf(why, sizeof(why), "cannot remove '%s': %s", c->saved, strerror(errno));
	}
	if (why[0])
		cli_warnf("'%s' lists %zu cleared operation%s that %s still pending (the state was "
			  "not written; putting the record back failed: %s)",
			  c->saved, c->added, c->added == 1 ? "" : "s", c->added == 1 ? "is" : "are",
			  why);
	c->added = 0;
}

/* Once the state is written: what a `creating` operation cleared means (in filter mode, where
 * no file is written beside the input, the cleared operations themselves first). */
static int after_clear(void *arg)
{
	ctx *c = arg;
	char *text = NULL;
	size_t len = 0;
	int rc = EXIT_OK;

	if (!json_array_size(c->cleared))
		return EXIT_OK;
	if (!c->saved) {
		if (!(text = record_text(c, &len)))
			return EXIT_FAIL;
		fprintf(stderr, "%s: the cleared pending operations:\n%s", cli_prog, text);
		free(text);
	}
	/* the commands as they are typed: a stack by --stack (its URL may hold a password) */
	const char *sarg = c->t->backend ? "--stack " : "",
		   *also = c->t->backend ? " (with its --backend)" : "";
	if (c->creating)
		cli_warnf("%zu cleared operation%s %s `creating`: the resource%s may exist while "
			  "the state no longer records %s. To record %s by %s ID instead, "
			  "`statetool restore %s%s`%s puts the previous state back and `statetool "
			  "pending import %s%s URN ID` (or Pulumi's `pulumi refresh "
			  "--import-pending-creates URN ID`) records %s",
			  c->creating, c->creating == 1 ? "" : "s", c->creating == 1 ? "was" : "were",
			  c->creating == 1 ? "" : "s", c->creating == 1 ? "it" : "them",
			  c->creating == 1 ? "it" : "them", c->creating == 1 ? "its" : "their", sarg,
			  cli_target_name(c->t), also, sarg, cli_target_name(c->t),
			  c->creating == 1 ? "it" : "them");
	if (c->saved && rc == EXIT_OK) {
		size_t removed = json_array_size(c->cleared);
		snprintf(c->mo->summary, sizeof(c->mo->summary),
			 "%zu pending operation%s removed (saved in %s; the previous state is "
			 "%s.bak)%s",
			 removed, removed == 1 ? "" : "s", c->saved, c->t->path,
			 removed > c->creating ? "; run `pulumi refresh` next" : "");
	}
	return rc;
}

static int list(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"stack", required_argument, NULL, OPT_STACK},
		{"json", no_argument, NULL, OPT_JSON},
		{"max-size", required_argument, NULL, OPT_MAX_SIZE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	cli_target t = {0};
	int c, json = 0, rc;
	st_state *s = NULL;

	while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
		if (cli_target_option(&t, c, optarg))
			continue;
		if (c == OPT_JSON)
			json = 1;
		else if (c == 'h')
			return cli_help(help_list);
		else
			return cli_usage("pending", "bad option");
	}
	if (argc - optind > 1)
		return cli_usage("pending", "too many arguments (did you mean `pending clear`?)");
	t.arg = optind < argc ? argv[optind] : NULL;
	if ((rc = cli_target_resolve(&t, "pending", 1)) != EXIT_OK || (rc = cli_load(&t, &s)))
		goto out;
	json_t *dep = st_state_deployment(s);
	json_t *ops = dep ? json_object_get(dep, "pending_operations") : NULL, *op;
	size_t i;
	if (json) {
		json_t *doc = json_object(), *arr = json_array();
		json_object_set_new(doc, "format_version", json_integer(CLI_JSON_FORMAT));
		json_array_foreach(ops, i, op) {
			json_t *o = json_object(), *r = json_object_get(op, "resource");
			json_object_set(o, "type", json_object_get(op, "type") ? json_object_get(op, "type")
									     : json_null());
			json_object_set(o, "urn", json_object_get(r, "urn") ? json_object_get(r, "urn")
									    : json_null());
			json_object_set(o, "resource", r ? r : json_null());
			json_array_append_new(arr, o);
		}
		json_object_set_new(doc, "pending_operations", arr);
		cli_print_json(doc);
		json_decref(doc);
	} else {
		if (!json_array_size(ops))
			printf("no pending operations\n");
		json_array_foreach(ops, i, op) {
			const char *ty = json_string_value(json_object_get(op, "type"));
			const char *u = json_string_value(
				json_object_get(json_object_get(op, "resource"), "urn"));
			printf("%-9s %s\n", ty ? ty : "?", u ? u : "(no urn)");
		}
	}
	rc = EXIT_OK;
out:
	st_state_free(s);
	cli_target_free(&t);
	return rc;
}

static int run_import(st_edit *e, st_state *s, void *arg, st_error *err)
{
	ctx *c = arg;
	json_t *dep = st_state_deployment(s);
	json_t *ops = dep ? json_object_get(dep, "pending_operations") : NULL;
	size_t n = (size_t)c->nq / 2;
	const char **urns = calloc(n ? n : 1, sizeof(*urns)), **ids = calloc(n ? n : 1, sizeof(*ids));
	int rc = EXIT_FAIL;

	if (!urns || !ids) {
		cli_errorf("out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!(urns[i] = resolve(ops, c->queries[2 * i])))
			goto out;
		ids[i] = c->queries[2 * i + 1];
	}
	rc = st_edit_pending_import(e, urns, ids, n, err);
	if (rc == ST_OK)
		snprintf(c->mo->summary, sizeof(c->mo->summary),
			 "%zu pending create%s imported; run `pulumi refresh` next to read %s "
			 "outputs",
			 n, n == 1 ? "" : "s", n == 1 ? "its" : "their");
out:
	free(urns);
	free(ids);
	return rc;
}

int cmd_pending(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "import")) {
		cli_target t = {0};
		cli_mutate_opts mo = {.cmd = "pending import"};
		ctx c = {0};
		int rc = cli_mutate_parse(argc - 1, argv + 1, help_list, NULL, NULL, NULL, &t, &mo,
					  &c.queries, &c.nq);
		if (rc != -1)
			return rc;
		if (c.nq < 2 || c.nq % 2) {
			cli_target_free(&t);
			return cli_usage("pending import", "expected URN ID pairs after the state");
		}
		c.mo = &mo;
		c.t = &t;
		return cli_mutate(&t, &mo, run_import, &c);
	}
	if (argc >= 2 && !strcmp(argv[1], "clear")) {
		cli_target t = {0};
		cli_mutate_opts mo = {.cmd = "pending clear"};
		ctx c = {0};
		int rc = cli_mutate_parse(argc - 1, argv + 1, help_list, NULL, NULL, NULL, &t, &mo,
					  &c.queries, &c.nq);
		if (rc != -1)
			return rc;
		c.mo = &mo;
		c.t = &t;
		mo.after_save = after_clear;
		mo.save_failed = undo_record;
		rc = cli_mutate(&t, &mo, run_clear, &c);
		json_decref(c.cleared);
		free(c.before);
		json_decref(c.record);
		free(c.saved);
		return rc;
	}
	return list(argc, argv);
}
