/* statetool index update, statetool query: the SQLite index of many stacks. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char help_index[] =
	"usage: statetool index update [options] (--backend URL | STATE...)\n"
	"\n"
	"Index every stack of a DIY backend (or the given state files) into an SQLite database,\n"
	"or a PostgreSQL one, incrementally: a stack whose object has the same place, size, time\n"
	"and tag (the store's ETag; a file's is its inode, size and time) in the backend's\n"
	"listing is not read at all; one whose listing changed but whose bytes have the same\n"
	"SHA-256 is not parsed again; a stack gone from the backend is dropped (also one gone\n"
	"between the listing and its read, with a note; only that backend's: several may share\n"
	"one index, but one index keeps one stack of a name: a stack whose name the index holds\n"
	"from another backend is refused, exit 1, the other's rows kept); one that cannot be read\n"
	"is reported and dropped. Each stack is written whole (SQLite, WAL mode: in batch\n"
	"transactions, each stack a savepoint): readers never see a half-written stack. The index\n"
	"holds URNs, types, IDs, flags, edges, providers, pending operations and which property\n"
	"paths are secret, never a secret's value. An index of another schema version is rebuilt\n"
	"(until the rebuild's update ends, queries say so and fail rather than answer from part\n"
	"of the stacks); before its first write an update checks every page of an SQLite index,\n"
	"and a damaged file is moved aside (PATH.corrupt) and rebuilt (an update that writes\n"
	"nothing does not check). An index that cannot be written (a read-only file system) is\n"
	"not damaged: an update there fails with the reason; queries read it.\n"
	"\n"
	"Options:\n"
	"  --backend URL   the backend (file://PATH or PATH, s3://, azblob://, postgres://,\n"
	"                  or Pulumi Cloud, https://...: every stack the token's user sees,\n"
	"                  each exported; default $PULUMI_BACKEND_URL)\n"
	"  --db PATH|URL   the database (default DIR/.pulumi/statetool-index.sqlite for a\n"
	"                  backend in a local directory DIR; required for any other backend\n"
	"                  and with STATE files), or a PostgreSQL database a team shares:\n"
	"                  postgres://[USER[:PASSWORD]@][HOST][:PORT][/DATABASE][?PARAMS]\n"
	"                  read as for a postgres:// backend (see the man page): what the URL\n"
	"                  leaves out comes from PGHOST, PGPORT, PGUSER, PGPASSWORD,\n"
	"                  PGDATABASE, PGSSLMODE, the other PG* variables and ~/.pgpass;\n"
	"                  sslmode defaults to require; search_path=SCHEMA picks the schema.\n"
	"                  The tables are made when missing; several updaters at once (on\n"
	"                  any machines, one killed half-way) never lose or half-write a\n"
	"                  stack. Messages never show the password.\n"
	"  --json          the summary as one JSON document\n"
	"  -h, --help      show this help\n"
	"On a terminal a progress line shows stacks done and resources per second.\n";

static const char help_query[] =
	"usage: statetool query [options] [filters]\n"
	"       statetool query [options] --sql 'SELECT ...'\n"
	"\n"
	"Answer questions across every indexed stack without parsing anything. Rows: stack,\n"
	"urn, type, id, import_id, parent, provider, flags.\n"
	"\n"
	"Filters (all given must hold):\n"
	"  --urn GLOB           URN glob ('*', '?', '[...]')\n"
	"  --type TYPE          resource type\n"
	"  --id ID              cloud ID\n"
	"  --import-id ID       importID\n"
	"  -s, --stack NAME     a stack as every command names it: project/stack,\n"
	"                       organization/project/stack or a bare name (that stack of\n"
	"                       every project); GLOB patterns allowed (e.g. 'app/*')\n"
	"  --provider P         PACKAGE or PACKAGE@VERSION (e.g. aws@6.0.0), or a provider URN\n"
	"                       or reference\n"
	"  --protected          protected resources only\n"
	"  --pending            resources with a pending operation only\n"
	"  --dependents-of URN  everything depending on URN, transitively (children,\n"
	"                       dependencies, property dependencies, deletedWith, replaceWith,\n"
	"                       provider references)\n"
	"  --duplicate-ids      resources whose type and ID appear more than once (in two\n"
	"                       stacks, or twice in one): one cloud resource managed twice;\n"
	"                       provider resources are left out (their IDs are UUIDs each\n"
	"                       stack makes, which a copied stack repeats) unless\n"
	"  --include-providers  (with --duplicate-ids) counts them too\n"
	"  --sql 'SELECT ...'   raw SQL over the tables, one query that reads the index and\n"
	"                       nothing else: the connection is opened read-only, a statement\n"
	"                       that writes is refused, and so is one that\n"
	"                       returns no rows (BEGIN, COMMIT, SET, COPY...). On PostgreSQL it\n"
	"                       is checked before it runs: a function that acts on the server\n"
	"                       or reads more than its arguments (pg_cancel_backend, set_config,\n"
	"                       pg_advisory_lock, pg_sleep...) or a table not the index's is\n"
	"                       refused (PostgreSQL's immutable functions, casts, now, to_char,\n"
	"                       json_agg... run); it stops after 60 s (statement_timeout; sooner\n"
	"                       if the URL or the role sets less)\n"
	"\n"
	"Options:\n"
	"  --backend URL        use that backend's index (see `index update --help`)\n"
	"  --db PATH|URL        use this index: an SQLite file, or postgres://... (see\n"
	"                       `index update --help`); the same rows, bytes and order on\n"
	"                       both; there queries and --sql run in a READ ONLY transaction\n"
	"  --refresh            first re-index the stacks that changed since they were\n"
	"                       indexed (as `index update` does: unchanged ones are not read)\n"
	"  --json | --csv       output format (default: a table; aligned on a terminal,\n"
	"                       tab-separated otherwise; 'no resources' when none match);\n"
	"                       written as the rows come (--json: one document, streamed; a\n"
	"                       query failing after its first 64 KB leaves it unfinished)\n"
	"  -h, --help           show this help\n"
	"Tables: meta, stacks, resources, edges, providers, pending, secrets (see statetool(1)).\n"
	"\n"
	"With a backend (--backend, or $PULUMI_BACKEND_URL) the index never answers from\n"
	"stale data silently: each stack of the backend is compared with what was indexed\n"
	"(from one listing: size, time and tag of its object, nothing read), and a stack\n"
	"changed, added or gone since is named on standard error (--refresh re-indexes them\n"
	"first). With --db alone nothing is compared: the answer is as indexed. statetool's\n"
	"own changes to a stack update its backend's default index as they are written (an\n"
	"index elsewhere, given by --db, only by `index update`).\n";

enum { X_DB = 7000, X_URN, X_TYPE, X_ID, X_IMPORT, X_STACK, X_PROV, X_PROT, X_PEND, X_DEPS,
       X_DUPS, X_SQL, X_CSV, X_INCPROV, X_REFRESH };

static void progress(void *ctx, size_t done, size_t total, size_t resources)
{
	struct timespec *start = ctx, now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double secs = (double)(now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) / 1e9;
	fprintf(stderr, "\rindexing: %zu/%zu stacks, %.0f resources/s ", done, total,
		secs > 0 ? (double)resources / secs : 0.0);
	if (done == total)
		fputc('\n', stderr);
}

static int cmd_update(int argc, char **argv)
{
	static const struct option opts[] = {{"backend", required_argument, NULL, OPT_BACKEND},
					     {"db", required_argument, NULL, X_DB},
					     {"json", no_argument, NULL, OPT_JSON},
					     {"help", no_argument, NULL, 'h'},
					     {NULL, 0, NULL, 0}};
	const char *backend = NULL, *db = NULL;
	int c, json = 0, rc = EXIT_OK;
	st_backend *b = NULL;
	st_index *ix = NULL;
	char *dbpath = NULL;
	st_changes notes = {0};
	st_problems fails = {0};
	st_index_stats stats;
	st_error err;
	struct timespec start;

	st_error_clear(&err);
	optind = 1;
	while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
		switch (c) {
		case OPT_BACKEND: backend = optarg; break;
		case X_DB: db = optarg; break;
		case OPT_JSON: json = 1; break;
		case 'h': return cli_help(help_index);
		default: return cli_usage("index update", "bad option");
		}
	}
	int files = argc - optind;
	if (files && backend)
		return cli_usage("index update", "give --backend or STATE files, not both");
	if (files && !db)
		return cli_usage("index update", "indexing STATE files needs --db PATH");
	if (!files && (rc = cli_backend_open(&b, backend)) != EXIT_OK)
		return rc;
	dbpath = db ? strdup(db) : st_index_default_path(b);
	if (!dbpath) {
		st_backend_free(b);
		return cli_usage("index update", "the index of a backend that is not a local "
						 "directory is a local file: give --db PATH");
	}
	if (st_index_open(&ix, dbpath, 0, &notes, &err) != ST_OK) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto out;
	}
	for (size_t i = 0; i < notes.count; i++)
		cli_warnf("%s", notes.lines[i]);
	size_t printed = notes.count;
	clock_gettime(CLOCK_MONOTONIC, &start);
	int tty = isatty(STDERR_FILENO) && !json;
	if (files)
		rc = st_index_update_files(ix, (const char *const *)(argv + optind), (size_t)files, 0,
					   tty ? progress : NULL, &start, &stats, &fails, &err);
	else
		rc = st_index_update_backend(ix, b, tty ? progress : NULL, &start, &stats, &fails,
					     &err);
	/* a damaged index is found (and rebuilt) when the update first writes */
	for (size_t i = printed; i < notes.count; i++)
		cli_warnf("%s", notes.lines[i]);
	if (rc != ST_OK) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto out;
	}
	for (size_t i = 0; i < fails.count; i++)
		cli_errorf("%s", fails.items[i].message);
	if (json) {
		json_t *o = json_pack("{s:i,s:s,s:I,s:I,s:I,s:I,s:I,s:I}", "format_version",
				      CLI_JSON_FORMAT, "index", st_index_name(ix), "stacks",
				      (json_int_t)stats.stacks, "parsed", (json_int_t)stats.parsed,
				      "unchanged", (json_int_t)stats.unchanged, "removed",
				      (json_int_t)stats.removed, "failed", (json_int_t)stats.failed,
				      "resources", (json_int_t)stats.resources);
		cli_print_json(o);
		json_decref(o);
	} else {
		printf("%s: %zu stack%s: %zu indexed (%zu resources), %zu unchanged, %zu removed, "
		       "%zu failed\n",
		       st_index_name(ix), stats.stacks, stats.stacks == 1 ? "" : "s", stats.parsed,
		       stats.resources, stats.unchanged, stats.removed, stats.failed);
	}
	rc = fails.count ? EXIT_FAIL : EXIT_OK;
out:
	st_problems_clear(&fails);
	st_changes_clear(&notes);
	st_index_close(ix);
	st_backend_free(b);
	free(dbpath);
	return rc;
}

/*
 * The answer gathered in one buffer and written 64 KB at a time (20,000 rows: a hundred
 * writes, not one per line). The first piece is held until the buffer first fills, so a query
 * that fails before then prints nothing of its answer (with --json, the error document alone);
 * a longer answer is streamed, rows as they come, never held whole in memory (with --json,
 * 20,000 rows are 6 MB of document, not 60 MB of values).
 */
typedef struct out {
	int mode; /* 0 table, 1 json, 2 csv */
	int header;
	json_t *align; /* a table on a terminal: rows kept to align their columns */
	size_t n;
	st_error *err;
	/* --json: the document's frame as the writer makes it: before the first row ("{",
	 * "format_version", "rows": [ and the first row's indentation), between two rows and
	 * after the last */
	char *frame;
	size_t head, sep_at, sep_len, tail_at;
	int streamed; /* part of the answer is out */
	int wfail;    /* standard output failed (said): the query stops */
	size_t len;
	char b[65536];
} out;

/* Writes what the buffer holds (cli_stdout_write: one write(2), stdio flushed first); a
 * failure is said once (cli_stdout_write) and stops the query. */
static void out_write(out *o, const char *s, size_t n)
{
	if (!o->wfail && n) {
		o->streamed = 1;
		if (o->mode == 1)
			cli_json_begun();
		if (cli_stdout_write(s, n) != EXIT_OK)
			o->wfail = 1;
	}
}

static void out_flush(out *o)
{
	out_write(o, o->b, o->len);
	o->len = 0;
}

/* A query that failed: the rest of an answer already partly out is written (rows before the
 * failure, an unfinished document); an answer still held is dropped. */
static void out_flush_if_streamed(out *o)
{
	if (o->streamed)
		out_flush(o);
	o->len = 0;
}

static void out_add(out *o, const char *s, size_t n)
{
	if (o->len + n > sizeof(o->b))
		out_flush(o);
	if (n > sizeof(o->b)) {
		out_write(o, s, n);
		return;
	}
	memcpy(o->b + o->len, s, n);
	o->len += n;
}

static void csv_field(out *o, const char *v)
{
	if (!v)
		return;
	if (strpbrk(v, ",\"\n\r")) {
		out_add(o, "\"", 1);
		for (const char *p = v; *p; p++)
			out_add(o, *p == '"' ? "\"\"" : p, *p == '"' ? 2 : 1);
		out_add(o, "\"", 1);
	} else {
		out_add(o, v, strlen(v));
	}
}

/* One line of the table (tab-separated, `none` for NULL) or of CSV. */
static void put_line(out *o, int csv, int ncols, const char *const *vals, const char *none)
{
	for (int i = 0; i < ncols; i++) {
		if (csv)
			csv_field(o, vals[i]);
		else
			out_add(o, vals[i] ? vals[i] : none, strlen(vals[i] ? vals[i] : none));
		out_add(o, i + 1 < ncols ? (csv ? "," : "\t") : "\n", 1);
	}
}

/* The document of --json with `rows` (NULL: one row, null, whose place gives the frame), as
 * the writer makes it. New string, or NULL (err set). */
static char *json_doc(const json_t *rows, size_t *len, st_error *err)
{
	json_t *d = json_object();
	char *text = NULL;
	json_object_set_new(d, "format_version", json_integer(CLI_JSON_FORMAT));
	json_object_set_new(d, "rows", rows ? json_incref((json_t *)rows) : json_pack("[n]"));
	if (st_json_dump(d, NULL, &text, len, err) != ST_OK)
		text = NULL;
	json_decref(d);
	return text;
}

/* --json: the frame around the rows, cut from the document of one null row: what precedes
 * it, what follows it, and between two rows a comma and the indentation before the first. */
static int json_frame(out *o)
{
	size_t len;
	char *at, *open;
	if (!(o->frame = json_doc(NULL, &len, o->err)))
		return -1;
	at = strstr(o->frame, "null");
	open = at ? memchr(o->frame, '[', (size_t)(at - o->frame)) : NULL;
	if (!open) { /* cannot happen: the writer wrote the null row */
		o->err->code = ST_EINVAL;
		snprintf(o->err->message, sizeof(o->err->message), "cannot write the rows as JSON");
		return -1;
	}
	o->head = (size_t)(at - o->frame);
	o->sep_at = (size_t)(open + 1 - o->frame);
	o->sep_len = o->head - o->sep_at;
	o->tail_at = o->head + 4;
	return 0;
}

/* One row of --json: an object of its columns (a name twice: its last value in its first
 * place), written as it stands in the document. */
static int json_row(out *o, int ncols, const char *const *names, const char *const *vals)
{
	json_t *r = json_object();
	char *text = NULL;
	size_t len;
	int rc;
	for (int i = 0; i < ncols; i++)
		json_object_set_new(r, names[i], vals[i] ? json_string(vals[i]) : json_null());
	if (!r) {
		o->err->code = ST_ENOMEM;
		snprintf(o->err->message, sizeof(o->err->message), "out of memory");
		return ST_ENOMEM;
	}
	rc = st_json_dump_at(r, NULL, 2, &text, &len, o->err);
	json_decref(r);
	if (rc != ST_OK)
		return rc;
	if (o->n == 1) {
		out_add(o, o->frame, o->head);
	} else {
		out_add(o, ",", 1);
		out_add(o, o->frame + o->sep_at, o->sep_len);
	}
	out_add(o, text, len);
	free(text);
	return 0;
}

static int on_row(void *ctx, int ncols, const char *const *names, const char *const *vals)
{
	out *o = ctx;
	if (o->wfail)
		return ST_EIO;
	o->n++;
	if (o->mode == 1)
		return json_row(o, ncols, names, vals);
	if (o->align) {
		json_t *r = json_array();
		if (!o->header) {
			o->header = 1;
			for (int i = 0; i < ncols; i++)
				json_array_append_new(r, json_string(names[i]));
			json_array_append_new(o->align, r);
			r = json_array();
		}
		for (int i = 0; i < ncols; i++)
			json_array_append_new(r, json_string(vals[i] ? vals[i] : "-"));
		json_array_append_new(o->align, r);
		return 0;
	}
	if (!o->header) {
		o->header = 1;
		put_line(o, o->mode == 2, ncols, names, "");
	}
	put_line(o, o->mode == 2, ncols, vals, "-");
	return 0;
}

/* Says on stderr which stacks of `b` the index holds out of date (st_index_stale). */
static int warn_stale(st_index *ix, st_backend *b)
{
	st_index_stale_stack *st = NULL;
	size_t n = 0;
	st_error err;

	st_error_clear(&err);
	if (st_index_stale(ix, b, &st, &n, &err) != ST_OK) {
		cli_warnf("cannot tell whether the index is up to date: %s", err.message);
		return 0;
	}
	for (size_t i = 0; i < n && i < 10; i++)
		cli_warnf(st[i].kind == '~'   ? "stack '%s' changed since it was indexed"
			  : st[i].kind == '+' ? "stack '%s' is not in the index"
					      : "stack '%s' is in the index but gone from the backend",
			  st[i].qname);
	if (n > 10)
		cli_warnf("and %zu more stacks", n - 10);
	if (n)
		cli_warnf("the answer may be out of date: rerun with --refresh (or run `statetool "
			  "index update`)");
	st_index_stale_free(st, n);
	return (int)n;
}

/* --refresh: the backend's index brought up to date first (only changed stacks are read). */
static int refresh(st_index *ix, st_backend *b)
{
	st_index_stats stats;
	st_problems fails = {0};
	st_error err;
	int rc = EXIT_OK;

	st_error_clear(&err);
	if (st_index_update_backend(ix, b, NULL, NULL, &stats, &fails, &err) != ST_OK) {
		cli_error(&err);
		rc = EXIT_FAIL;
	}
	for (size_t i = 0; i < fails.count; i++)
		cli_warnf("%s", fails.items[i].message);
	if (rc == EXIT_OK && (stats.parsed || stats.removed))
		fprintf(stderr, "%s: refreshed the index: %zu stack%s indexed, %zu removed\n",
			cli_prog, stats.parsed, stats.parsed == 1 ? "" : "s", stats.removed);
	st_problems_clear(&fails);
	return rc;
}

/* query: records the first filter flag and output flag given; --json with --csv is a usage
 * error (printed). */
static int note_flag(const struct option *opts, int c, const char **filter, const char **format)
{
	const char *flag = NULL;
	for (size_t i = 0; opts[i].name; i++)
		if (opts[i].val == c)
			flag = opts[i].name;
	if (((c >= X_URN && c <= X_DUPS) || c == X_INCPROV) && !*filter)
		*filter = flag;
	if (c == OPT_JSON || c == X_CSV) {
		if (*format && strcmp(*format, flag))
			return cli_usage("query", "give --%s or --%s, not both", *format, flag);
		*format = flag;
	}
	return EXIT_OK;
}

/* Runs the query (or --sql) and writes its answer in o's format: an exit status. */
static int answer(st_index *ix, const char *sql, const st_index_query *q, out *o)
{
	st_error err;
	int rc;

	st_error_clear(&err);
	o->err = &err;
	if (o->mode == 1 && json_frame(o)) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	if (o->mode == 0 && isatty(STDOUT_FILENO))
		o->align = json_array();
	rc = sql ? st_index_sql(ix, sql, on_row, o, &err) : st_index_query_run(ix, q, on_row, o, &err);
	if (rc != ST_OK && !o->wfail) {
		out_flush_if_streamed(o);
		cli_error(&err);
		rc = err.code == ST_EINVAL || err.code == ST_EREFUSED ? EXIT_USAGE : EXIT_FAIL;
	} else if (rc == ST_OK && o->mode == 1 && !o->n) {
		/* no rows: the document as a whole ("rows": []) */
		json_t *none = json_array();
		size_t len;
		char *text = json_doc(none, &len, &err);
		json_decref(none);
		if (text)
			out_add(o, text, len);
		else
			cli_error(&err);
		rc = text ? ST_OK : EXIT_FAIL;
		free(text);
	} else if (rc == ST_OK && o->mode == 1) {
		out_add(o, o->frame + o->tail_at, strlen(o->frame + o->tail_at));
	}
	if (rc == ST_OK)
		out_flush(o);
	if (rc == ST_OK && !o->wfail && o->align)
		cli_print_table(o->align);
	if (rc == ST_OK && !o->wfail && o->mode == 0 && !o->n)
		printf(sql ? "no rows\n" : "no resources\n");
	free(o->frame);
	json_decref(o->align);
	o->frame = NULL;
	o->align = NULL;
	return o->wfail ? EXIT_FAIL : rc ? rc : EXIT_OK;
}

int cmd_query(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"db", required_argument, NULL, X_DB},
		{"urn", required_argument, NULL, X_URN},
		{"type", required_argument, NULL, X_TYPE},
		{"id", required_argument, NULL, X_ID},
		{"import-id", required_argument, NULL, X_IMPORT},
		{"stack", required_argument, NULL, X_STACK},
		{"provider", required_argument, NULL, X_PROV},
		{"protected", no_argument, NULL, X_PROT},
		{"pending", no_argument, NULL, X_PEND},
		{"dependents-of", required_argument, NULL, X_DEPS},
		{"duplicate-ids", no_argument, NULL, X_DUPS},
		{"include-providers", no_argument, NULL, X_INCPROV},
		{"refresh", no_argument, NULL, X_REFRESH},
		{"sql", required_argument, NULL, X_SQL},
		{"json", no_argument, NULL, OPT_JSON},
		{"csv", no_argument, NULL, X_CSV},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	const char *backend = NULL, *db = NULL, *sql = NULL;
	st_index_query q = ST_INDEX_QUERY_INIT;
	static out o; /* its buffer: 64 KB */
	int c, rc, fresh = 0;
	st_backend *b = NULL;
	st_index *ix = NULL;
	char *dbpath = NULL;
	st_error err;
	const char *filter = NULL, *format = NULL; /* the first filter flag, output flag given */

	st_error_clear(&err);
	while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
		if (note_flag(opts, c, &filter, &format) != EXIT_OK)
			return EXIT_USAGE;
		switch (c) {
		case OPT_BACKEND: backend = optarg; break;
		case X_DB: db = optarg; break;
		case X_URN: q.urn_glob = optarg; break;
		case X_TYPE: q.type = optarg; break;
		case X_ID: q.id = optarg; break;
		case X_IMPORT: q.import_id = optarg; break;
		case X_STACK: q.stack = optarg; break;
		case X_PROV: q.provider = optarg; break;
		case X_PROT: q.protected_only = 1; break;
		case X_PEND: q.pending_only = 1; break;
		case X_DEPS: q.dependents_of = optarg; break;
		case X_DUPS: q.duplicate_ids = 1; break;
		case X_INCPROV: q.include_providers = 1; break;
		case X_REFRESH: fresh = 1; break;
		case X_SQL: sql = optarg; break;
		case OPT_JSON: o.mode = 1; break;
		case X_CSV: o.mode = 2; break;
		case 'h': return cli_help(help_query);
		default: return cli_usage("query", "bad option");
		}
	}
	if (optind < argc)
		return cli_usage("query", "unexpected argument '%s'", argv[optind]);
	if (sql && filter) /* the SQL is the whole query: a filter would be dropped */
		return cli_usage("query", "give --sql or --%s, not both", filter);
	if (q.include_providers && !q.duplicate_ids)
		return cli_usage("query", "--include-providers goes with --duplicate-ids");
	if (fresh && db && !backend)
		return cli_usage("query", "--refresh needs the backend (--backend URL)");
	/* the backend: its index, and what tells whether the index is out of date */
	if ((!db || backend) && (rc = cli_backend_open(&b, backend)) != EXIT_OK)
		return rc;
	dbpath = db ? strdup(db) : st_index_default_path(b);
	if (!dbpath) {
		st_backend_free(b);
		return cli_usage("query", "the index of a backend that is not a local "
				 "directory is a local file: give --db PATH");
	}
	if (st_index_open(&ix, dbpath, !fresh, NULL, &err) != ST_OK) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto done;
	}
	if (b && fresh) {
		if (refresh(ix, b) != EXIT_OK) {
			rc = EXIT_FAIL;
			goto done;
		}
	} else if (b) {
		warn_stale(ix, b);
	}
	rc = answer(ix, sql, &q, &o);
done:
	st_index_close(ix);
	st_backend_free(b);
	free(dbpath);
	return rc;
}

int cmd_index(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "update"))
		return cmd_update(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return cli_help(help_index);
	return cli_usage("index", "expected `index update`");
}
