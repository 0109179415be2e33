/*
 * The PostgreSQL store: Pulumi's DIY backend on PostgreSQL (pkg/backend/diy/postgres, Pulumi
 * v3.176+), with libpq. One table (default pulumi_state, URL parameter `table`), created on
 * open when missing exactly as Pulumi creates it (schema.sql):
 *   CREATE TABLE IF NOT EXISTS T (key TEXT PRIMARY KEY, data JSON NOT NULL,
 *       updated_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now());
 *   CREATE INDEX IF NOT EXISTS T_key_prefix_idx ON T (key text_pattern_ops);
 * An object is one row: `data` is {"data":"<standard base64 of the bytes>"} (Go's json.Marshal
 * of Pulumi's blobData, compact), `updated_at` is set by the server on every write.
 *
 *   read     SELECT data in binary form: the row's JSON text as stored (no text conversion
 *            on the server, which neither parses the JSON nor decodes the base64: a big row
 *            is detoasted once and sent as is), decoded here; after a big one the connection
 *            is closed, so libpq's input buffer (as big as the row) goes with it
 *   write    the bytes base64-encoded as they come; commit: INSERT ... ON CONFLICT (key) DO
 *            UPDATE (Pulumi's upsert); create-only: ON CONFLICT DO NOTHING, no row -> EEXIST.
 *            With a backup key, the backup copy and the upsert are one transaction.
 *   list     key LIKE 'prefix%' (escaped, so the text_pattern_ops index serves it), sorted
 *            bytewise (COLLATE "C"); mtime from updated_at (microseconds), etag from the row
 *            version (xmin) and updated_at: both change with every write of the row. The size
 *            is not listed (-1, unknown): it would take reading every row's data (detoasting
 *            and parsing each object in full, as Pulumi's driver does); stat and read give it
 *   delete   DELETE, no row -> ENOTFOUND
 *   copy     INSERT ... SELECT ... ON CONFLICT (key) DO UPDATE: one statement
 * Connections: lost or refused ones are retried (st_net_opts: retries, back-off); statements
 * that may run twice are repeated on a new connection. Messages name the scheme, the host, the
 * table and the key, and the PG* variables set; never a password (scrubbed from anything the
 * server or libpq says, too). The request hook of st_set_net sees each statement as
 * "READ|STAT|LIST|WRITE|DELETE|COPY host:port /table/key status".
 */
#include "pg.h"
#include "http.h"
#include "store_impl.h"

#include <jansson.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <sodium.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dl.h" /* last: libpq through its table */

typedef struct pg_writer pg_writer;

typedef struct pg_store {
	st_store base;
	st_pgc c;           /* the connection */
	pthread_mutex_t mu; /* one statement at a time; held from a write's backup copy to its
			     * commit (one transaction) */
	pg_writer *w;   /* the write under way that may take its backup in its transaction */
	char *db, *port; /* the database and port of the first connection, as libpq resolved them
			  * (PQdb, PQport): for the identity */
} pg_store;

struct pg_writer {
	st_store_writer base;
	pg_store *pg;
	char *key;      /* the full key (prefix + key) */
	unsigned flags;
	st_buf json;    /* {"data":"<base64 so far> */
	unsigned char carry[3];
	size_t ncarry;
	long long size;
	int in_tx;      /* a transaction is open (and pg->mu held) */
};

/* ---- statements ---- */

typedef struct stmt {
	const char *op;   /* READ, STAT, LIST, WRITE, DELETE, COPY, for the hook and messages */
	const char *key;  /* the store's key (without prefix), for messages; may be NULL */
	const char *sql;
	int nparams;
	const char *const *vals;
	const int *lens;  /* NULL: text parameters */
	int binary;       /* results in binary */
	int may_repeat;   /* may run again on a new connection */
} stmt;

static void hook(pg_store *pg, const stmt *st, long status)
{
	char *path;
	if (!pg->c.net.request)
		return;
	path = st_asprintf("/%s/%s%s", pg->c.u.table, pg->c.u.prefix, st->key ? st->key : "");
	pg->c.net.request(pg->c.net.ctx, st->op, pg->c.where, path ? path : "", status);
	free(path);
}

static int sql_code(const char *state)
{
	if (!state)
		return ST_EIO;
	if (!strcmp(state, "42501") || !strncmp(state, "28", 2))
		return ST_EAUTH;
	if (!strcmp(state, "42P01") || !strcmp(state, "3F000") || !strcmp(state, "3D000"))
		return ST_ENOTFOUND;
	if (!strcmp(state, "25006"))
		return ST_EREFUSED;
	if (!strcmp(state, "22023") || !strcmp(state, "22P02") || !strcmp(state, "22P05") ||
	    !strcmp(state, "22021"))
		return ST_EPARSE;
	if (!strcmp(state, "54000") || !strcmp(state, "53200"))
		return ST_ELIMIT;
	return ST_EIO;
}

/* Runs one statement. *res (new) holds a successful result. *lost (may be NULL) tells that
 * the connection broke after the statement may have been carried out. */
static int run(pg_store *pg, const stmt *st, PGresult **res, int *lost, st_error *err)
{
	int attempt = 0, rc;

	*res = NULL;
	if (lost)
		*lost = 0;
	for (;;) {
		ExecStatusType s;
		if ((rc = st__pgc_connect(&pg->c, err)) != ST_OK)
			return rc;
		*res = PQexecParams(pg->c.conn, st->sql, st->nparams, NULL, st->vals, st->lens,
				    NULL, st->binary);
		s = *res ? PQresultStatus(*res) : PGRES_FATAL_ERROR;
		if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) {
			hook(pg, st, 200);
			return ST_OK;
		}
		if (PQstatus(pg->c.conn) != CONNECTION_OK) {
			/* the connection broke: the statement may or may not have run */
			hook(pg, st, 0);
			PQclear(*res);
			*res = NULL;
			if (lost)
				*lost = 1;
			if (st->may_repeat && attempt < pg->c.retries) {
				st__pgc_pause(&pg->c, ++attempt);
				continue;
			}
			char *m = st__pgc_msg(&pg->c, PQerrorMessage(pg->c.conn));
			rc = st__err(err, ST_EIO, "postgres: %s%s%s in table '%s' on %s: the connection "
						  "was lost: %s%s",
				     st->op, st->key ? " " : "", st->key ? st->key : "", pg->c.u.table,
				     pg->c.where, m ? m : "out of memory", attempt ? " (retried)" : "");
			free(m);
			return rc;
		}
		hook(pg, st, 500);
		const char *state = *res ? PQresultErrorField(*res, PG_DIAG_SQLSTATE) : NULL;
		char *m = st__pgc_msg(&pg->c, *res ? PQresultErrorField(*res, PG_DIAG_MESSAGE_PRIMARY)
					     : PQerrorMessage(pg->c.conn));
		rc = sql_code(state);
		if (st->key)
			st__err(err, rc, "postgres: %s '%s' in table '%s' on %s failed: %s", st->op,
				st->key, pg->c.u.table, pg->c.where, m ? m : "out of memory");
		else
			st__err(err, rc, "postgres: %s in table '%s' on %s failed: %s", st->op,
				pg->c.u.table, pg->c.where, m ? m : "out of memory");
		free(m);
		PQclear(*res);
		*res = NULL;
		return rc;
	}
}

/* ---- the table ---- */

/* Creates the table and its index when missing, with Pulumi's statements (concurrent
 * creators: the loser's unique violation is no error once the table is there). */
static int ensure_table(pg_store *pg, st_error *err)
{
	char *sql = st_asprintf(
		"CREATE TABLE IF NOT EXISTS %s (\n"
		"    key TEXT PRIMARY KEY,\n"
		"    data JSON NOT NULL,\n"
		"    updated_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now()\n"
		");\n"
		"CREATE INDEX IF NOT EXISTS %s_key_prefix_idx ON %s (key text_pattern_ops);\n",
		pg->c.u.table, pg->c.u.table, pg->c.u.table);
	char *probe = st_asprintf("SELECT to_regclass('%s') IS NOT NULL AND "
				  "to_regclass('%s_key_prefix_idx') IS NOT NULL",
				  pg->c.u.table, pg->c.u.table);
	stmt check = {"OPEN", NULL, probe, 0, NULL, NULL, 0, 1};
	PGresult *r = NULL;
	int rc;

	if (!sql || !probe) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = run(pg, &check, &r, NULL, err)) != ST_OK)
		goto out;
	if (!strcmp(PQgetvalue(r, 0, 0), "t"))
		goto out; /* there: nothing to create (a read-only role works too) */
	PQclear(r);
	r = PQexec(pg->c.conn, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
		int race = state && (!strcmp(state, "23505") || !strcmp(state, "42P07"));
		char *m = st__pgc_msg(&pg->c, PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY));
		if (race) {
			PQclear(r);
			r = NULL;
			rc = run(pg, &check, &r, NULL, err);
			if (rc == ST_OK && strcmp(PQgetvalue(r, 0, 0), "t"))
				race = 0;
		}
		if (!race)
			rc = st__err(err, sql_code(state),
				     "postgres: cannot create table '%s' on %s (Pulumi creates it on "
				     "first use; the user needs CREATE on the schema): %s",
				     pg->c.u.table, pg->c.where, m ? m : "out of memory");
		free(m);
	}
out:
	PQclear(r);
	free(sql);
	free(probe);
	return rc;
}

/* ---- reading ---- */

static long long be64(const char *p)
{
	unsigned long long v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | (unsigned char)p[i];
	return (long long)v;
}

/* The columns every listing, stat and read have, from a subquery `s` with b (the base64
 * text), updated_at and xmin. */
#define SIZE_COL                                                                              \
	"(octet_length(b) / 4 * 3 - CASE WHEN b LIKE '%%==' THEN 2 WHEN b LIKE '%%=' THEN 1 "   \
	"ELSE 0 END)::int8"
#define TIME_TAG_COLS                                                                         \
	"(extract(epoch FROM updated_at) * 1000000)::int8, "                                    \
	"xmin::text || '-' || (extract(epoch FROM updated_at) * 1000000)::int8::text"
#define INFO_COLS SIZE_COL ", " TIME_TAG_COLS

static void info_from(st_store_info *info, long long size, long long us, const char *tag)
{
	if (!info)
		return;
	info->size = size;
	info->mtime_ns = us * 1000;
	snprintf(info->etag, sizeof(info->etag), "%s", tag);
}

static char *full_key(const pg_store *pg, const char *key)
{
	return st_asprintf("%s%s", pg->c.u.prefix, key);
}

/* The buffer the decode of bn base64 bytes fills (new): a big one made present at once (the
 * decode writes every byte of it in order; page by page it costs ~45,000 faults for 185 MB). */
static char *decode_buffer(size_t bn)
{
	char *p = malloc(bn / 4 * 3 + 4);
	if (p && bn >= ST_PREFAULT_WINDOW)
		st__prefault(p, bn / 4 * 3 + 4);
	return p;
}

/* Decodes a row's data {"data":"<base64>"} into *out (new, NUL-terminated): Go's compact form
 * (what Pulumi and statetool write) straight from the row, any other JSON spelling of the same
 * through jansson. ST_OK, ST_EFORMAT (not that form), ST_EPARSE (no base64), ST_ENOMEM. */
static int row_decode(const char *j, size_t n, char **out, size_t *len)
{
	static const char head[] = "{\"data\":\"";
	const size_t h = sizeof(head) - 1;
	long long got = -1;
	json_t *v = NULL;
	const char *b = NULL;
	size_t bn = 0;

	*out = NULL;
	if (n >= h + 2 && !memcmp(j, head, h) && !memcmp(j + n - 2, "\"}", 2)) {
		b = j + h;
		bn = n - h - 2;
	}
	/* (the bytes between the quotes decode only if they hold no quote or escape) */
	if (b && !(*out = decode_buffer(bn)))
		return ST_ENOMEM;
	if (b && (got = st__go_base64_decode(b, bn, (unsigned char *)*out)) < 0) {
		free(*out);
		*out = NULL;
	}
	if (got < 0) {
		json_t *d;
		v = json_loadb(j, n, 0, NULL);
		d = json_object_get(v, "data");
		if (!json_is_string(d)) {
			json_decref(v);
			return ST_EFORMAT;
		}
		b = json_string_value(d);
		bn = json_string_length(d);
		if (!(*out = decode_buffer(bn))) {
			json_decref(v);
			return ST_ENOMEM;
		}
		got = st__go_base64_decode(b, bn, (unsigned char *)*out);
		json_decref(v);
		if (got < 0) {
			free(*out);
			*out = NULL;
			return ST_EPARSE;
		}
	}
	(*out)[got] = '\0';
	*len = (size_t)got;
	return ST_OK;
}

/* A result this big leaves libpq's input buffer as big for the connection's life: the
 * connection is closed after it (the next statement opens another). */
#define PG_BIG_RESULT (16u << 20)

static int pg_read(st_store *s, const char *key, size_t max, char **data, size_t *len,
		   st_store_info *info, st_error *err)
{
	pg_store *pg = (pg_store *)s;
	char *k = full_key(pg, key);
	/* `data` in binary form is the row's JSON text as stored (json_send), without the
	 * server's text conversion of data::text */
	char *sql = st_asprintf("SELECT data, " TIME_TAG_COLS " FROM %s WHERE key = $1",
				pg->c.u.table);
	const char *vals[1] = {k};
	stmt st = {"READ", key, sql, 1, vals, NULL, 1, 1};
	PGresult *r = NULL;
	int rc, big = 0;

	*data = NULL;
	if (!k || !sql) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	pthread_mutex_lock(&pg->mu);
	rc = run(pg, &st, &r, NULL, err);
	big = rc == ST_OK && PQntuples(r) > 0 && PQgetlength(r, 0, 0) >= (int)PG_BIG_RESULT;
	pthread_mutex_unlock(&pg->mu);
	if (rc != ST_OK)
		goto out;
	if (PQntuples(r) == 0) {
		rc = st__err(err, ST_ENOTFOUND, "postgres: no object '%s' in table '%s' on %s", key,
			     pg->c.u.table, pg->c.where);
		goto out;
	}
	/* (new lines are ignored, as Go's and PostgreSQL's decoders ignore them) */
	rc = row_decode(PQgetvalue(r, 0, 0), (size_t)PQgetlength(r, 0, 0), data, len);
	if (rc == ST_ENOMEM) {
		st__err(err, rc, "out of memory");
		goto out;
	}
	if (rc != ST_OK) {
		rc = st__err(err, ST_EPARSE,
			     "postgres: object '%s' in table '%s' on %s is not in Pulumi's form "
			     "{\"data\": \"<base64>\"}%s",
			     key, pg->c.u.table, pg->c.where,
			     rc == ST_EPARSE ? ": its data is not base64" : "");
		goto out;
	}
	if (*len > max) {
		rc = st__err(err, ST_ELIMIT,
			     "postgres: object '%s' in table '%s' is larger than the limit of %zu "
			     "bytes",
			     key, pg->c.u.table, max);
		free(*data);
		*data = NULL;
		goto out;
	}
	info_from(info, (long long)*len, be64(PQgetvalue(r, 0, 1)), PQgetvalue(r, 0, 2));
out:
	PQclear(r);
	if (big) {
		pthread_mutex_lock(&pg->mu);
		if (!pg->w || !pg->w->in_tx) {
			PQfinish(pg->c.conn);
			pg->c.conn = NULL;
		}
		pthread_mutex_unlock(&pg->mu);
	}
	free(k);
	free(sql);
	return rc;
}

/* LIKE's escape of a prefix (backslash, '%' and '_'), then '%'. New. */
static char *like_prefix(const char *p)
{
	st_buf b;
	st_buf_init(&b);
	for (; *p; p++) {
		if (*p == '\\' || *p == '%' || *p == '_')
			st_buf_addc(&b, '\\');
		st_buf_addc(&b, *p);
	}
	st_buf_addc(&b, '%');
	return st_buf_take(&b, NULL);
}

static int pg_list(st_store *s, const char *prefix, unsigned flags, st_store_entry **out,
		   size_t *count, st_error *err)
{
	pg_store *pg = (pg_store *)s;
	char *full = st_asprintf("%s%s", pg->c.u.prefix, prefix);
	char *pat = full ? like_prefix(full) : NULL;
	char *sql = st_asprintf("SELECT key, -1::int8, " TIME_TAG_COLS
				" FROM %s WHERE key LIKE $1 ORDER BY key COLLATE \"C\"",
				pg->c.u.table);
	const char *vals[1] = {pat};
	stmt st = {"LIST", prefix, sql, 1, vals, NULL, 0, 1};
	size_t plen = strlen(pg->c.u.prefix), alen = strlen(prefix), n = 0;
	st_store_entry *e = NULL;
	PGresult *r = NULL;
	int rc;

	if (!full || !pat || !sql) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	pthread_mutex_lock(&pg->mu);
	rc = run(pg, &st, &r, NULL, err);
	pthread_mutex_unlock(&pg->mu);
	if (rc != ST_OK)
		goto out;
	if (!(e = calloc((size_t)PQntuples(r) + 1, sizeof(*e)))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < PQntuples(r); i++) {
		const char *k = PQgetvalue(r, i, 0) + plen, *rest = k + alen;
		const char *slash = (flags & ST_STORE_LIST_DIRS) ? strchr(rest, '/') : NULL;
		if (strlen(PQgetvalue(r, i, 0)) < plen + alen || !st_store_key_valid(k))
			continue; /* not a key this store could name */
		if (slash) {
			size_t dl = (size_t)(slash + 1 - k);
			/* each deeper level once, as "dir/"; sorted keys keep a level's rows together */
			if (n && !strncmp(e[n - 1].key, k, dl) && e[n - 1].key[dl] == '\0')
				continue;
			if (!(e[n].key = strndup(k, dl))) {
				rc = st__err(err, ST_ENOMEM, "out of memory");
				goto out;
			}
			info_from(&e[n].info, 0, 0, "");
			e[n].info.size = -1;
			n++;
			continue;
		}
		if (!(e[n].key = strdup(k))) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto out;
		}
		info_from(&e[n].info, atoll(PQgetvalue(r, i, 1)), atoll(PQgetvalue(r, i, 2)),
			  PQgetvalue(r, i, 3));
		n++;
	}
	/* a "dir/" and a key "dir0" can interleave: keep the bytewise order of the result */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(e[j - 1].key, e[j].key) > 0; j--) {
			st_store_entry t = e[j];
			e[j] = e[j - 1];
			e[j - 1] = t;
		}
	*out = e;
	*count = n;
	e = NULL;
out:
	if (e)
		st_store_entries_free(e, n);
	PQclear(r);
	free(full);
	free(pat);
	free(sql);
	return rc;
}

static int pg_stat(st_store *s, const char *key, st_store_info *info, st_error *err)
{
	pg_store *pg = (pg_store *)s;
	char *k = full_key(pg, key);
	char *sql = st_asprintf("SELECT " INFO_COLS " FROM (SELECT data->>'data' AS b, updated_at, "
				"xmin FROM %s WHERE key = $1) s",
				pg->c.u.table);
	const char *vals[1] = {k};
	stmt st = {"STAT", key, sql, 1, vals, NULL, 0, 1};
	PGresult *r = NULL;
	int rc;

	if (!k || !sql) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	pthread_mutex_lock(&pg->mu);
	rc = run(pg, &st, &r, NULL, err);
	pthread_mutex_unlock(&pg->mu);
	if (rc == ST_OK && PQntuples(r) == 0)
		rc = st__err(err, ST_ENOTFOUND, "postgres: no object '%s' in table '%s' on %s", key,
			     pg->c.u.table, pg->c.where);
	else if (rc == ST_OK)
		info_from(info, atoll(PQgetvalue(r, 0, 0)), atoll(PQgetvalue(r, 0, 1)),
			  PQgetvalue(r, 0, 2));
out:
	PQclear(r);
	free(k);
	free(sql);
	return rc;
}

/* ---- writing ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Appends the standard base64 of whole 3-byte groups. */
static void b64_groups(st_buf *b, const unsigned char *p, size_t n)
{
	char out[256];
	size_t o = 0;
	for (size_t i = 0; i + 3 <= n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = b64[(v >> 6) & 63];
		out[o++] = b64[v & 63];
		if (o == sizeof(out)) {
			st_buf_add(b, out, o);
			o = 0;
		}
	}
	st_buf_add(b, out, o);
}

static int pg_write_begin(st_store *s, const char *key, const st_store_write_opts *opts,
			  st_store_writer **out, st_error *err)
{
	pg_store *pg = (pg_store *)s;
	pg_writer *w = calloc(1, sizeof(*w));

	if (!w || !(w->key = full_key(pg, key))) {
		free(w);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	w->base.store = s;
	w->base.fd = -1;
	w->pg = pg;
	w->flags = opts->flags;
	st_buf_init(&w->json);
	st_buf_adds(&w->json, "{\"data\":\"");
	pthread_mutex_lock(&pg->mu);
	if (!pg->w)
		pg->w = w;
	pthread_mutex_unlock(&pg->mu);
	*out = &w->base;
	return ST_OK;
}

static int pg_write_chunk(st_store_writer *sw, const void *p, size_t n, st_error *err)
{
	pg_writer *w = (pg_writer *)sw;
	const unsigned char *c = p;

	w->size += (long long)n;
	while (w->ncarry && n) {
		w->carry[w->ncarry++] = *c++;
		n--;
		if (w->ncarry == 3) {
			b64_groups(&w->json, w->carry, 3);
			w->ncarry = 0;
		}
	}
	size_t whole = n / 3 * 3;
	if (st_buf_reserve(&w->json, whole / 3 * 4 + 4) != 0)
		return st__err(err, ST_ENOMEM, "out of memory");
	b64_groups(&w->json, c, whole);
	memcpy(w->carry, c + whole, n - whole);
	w->ncarry = n - whole;
	return w->json.oom ? st__err(err, ST_ENOMEM, "out of memory") : ST_OK;
}

static int pg_write_finish(st_store_writer *sw, st_error *err)
{
	pg_writer *w = (pg_writer *)sw;
	if (w->ncarry) {
		unsigned v = (unsigned)w->carry[0] << 16 | (w->ncarry > 1 ? (unsigned)w->carry[1] << 8 : 0);
		char out[4] = {b64[v >> 18], b64[(v >> 12) & 63],
			       w->ncarry > 1 ? b64[(v >> 6) & 63] : '=', '='};
		st_buf_add(&w->json, out, 4);
		w->ncarry = 0;
	}
	st_buf_adds(&w->json, "\"}");
	return w->json.oom ? st__err(err, ST_ENOMEM, "out of memory") : ST_OK;
}

/* Frees a writer, pg->mu held: its transaction (if one is still open) rolled back, the lock
 * released. */
static void writer_free_locked(pg_writer *w)
{
	pg_store *pg = w->pg;
	if (w->in_tx && pg->c.conn) {
		PGresult *r = PQexec(pg->c.conn, "ROLLBACK");
		PQclear(r);
	}
	if (pg->w == w)
		pg->w = NULL;
	pthread_mutex_unlock(&pg->mu);
	st_buf_free(&w->json);
	free(w->key);
	free(w);
}

static void pg_write_abort(st_store_writer *sw)
{
	pg_writer *w = (pg_writer *)sw;
	if (!w->in_tx)
		pthread_mutex_lock(&w->pg->mu);
	writer_free_locked(w);
}

/* After a lost connection, is the row the bytes we meant to write (our create-only write
 * went through)? */
static int row_is(pg_store *pg, const pg_writer *w, const char *key)
{
	char *sql = st_asprintf("SELECT data::text = $2 FROM %s WHERE key = $1", pg->c.u.table);
	const char *vals[2] = {w->key, w->json.data};
	stmt st = {"STAT", key, sql, 2, vals, NULL, 0, 1};
	PGresult *r = NULL;
	int same = sql && run(pg, &st, &r, NULL, NULL) == ST_OK && PQntuples(r) == 1 &&
		   !strcmp(PQgetvalue(r, 0, 0), "t");
	PQclear(r);
	free(sql);
	return same;
}

static int pg_write_commit(st_store_writer *sw, st_error *err)
{
	pg_writer *w = (pg_writer *)sw;
	pg_store *pg = w->pg;
	const char *key = w->key + strlen(pg->c.u.prefix);
	int create_only = (w->flags & ST_STORE_CREATE_ONLY) != 0, lost = 0, rc;
	char *sql = st_asprintf(create_only ? "INSERT INTO %s (key, data) VALUES ($1, $2) ON "
					      "CONFLICT (key) DO NOTHING"
					    : "INSERT INTO %s (key, data) VALUES ($1, $2) ON "
					      "CONFLICT (key) DO UPDATE SET data = EXCLUDED.data, "
					      "updated_at = now()",
				pg->c.u.table);
	const char *vals[2] = {w->key, w->json.data};
	stmt st = {"WRITE", key, sql, 2, vals, NULL, 0, !w->in_tx};
	PGresult *r = NULL;

	if (!w->in_tx)
		pthread_mutex_lock(&pg->mu);
	if (!sql || w->json.oom) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = run(pg, &st, &r, &lost, err)) != ST_OK)
		goto out;
	if (create_only && !strcmp(PQcmdTuples(r), "0") && !(lost && row_is(pg, w, key))) {
		rc = st__err(err, ST_EEXIST, "postgres: object '%s' in table '%s' already exists",
			     key, pg->c.u.table);
		goto out;
	}
	if (w->in_tx) {
		stmt commit = {"WRITE", key, "COMMIT", 0, NULL, NULL, 0, 0};
		PQclear(r);
		if ((rc = run(pg, &commit, &r, NULL, err)) == ST_OK)
			w->in_tx = 0;
	}
out:
	PQclear(r);
	free(sql);
	writer_free_locked(w);
	return rc;
}

/* ---- copy, delete ---- */

static int pg_copy(st_store *s, const char *src, const char *dst, int for_backup, st_error *err)
{
	pg_store *pg = (pg_store *)s;
	char *ks = full_key(pg, src), *kd = full_key(pg, dst);
	char *sql = st_asprintf("INSERT INTO %s (key, data) SELECT $2, data FROM %s WHERE key = $1 "
				"ON CONFLICT (key) DO UPDATE SET data = EXCLUDED.data, "
				"updated_at = now()",
				pg->c.u.table, pg->c.u.table);
	const char *vals[2] = {ks, kd};
	stmt st = {"COPY", src, sql, 2, vals, NULL, 0, 1};
	PGresult *r = NULL;
	pg_writer *w = NULL;
	int rc;

	if (!ks || !kd || !sql) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	pthread_mutex_lock(&pg->mu);
	if (for_backup && pg->w && !pg->w->in_tx && !strcmp(pg->w->key, ks)) {
		/* the backup of a write under way: it and the write's upsert are one transaction,
		 * and pg->mu stays held until the writer commits or aborts */
		stmt begin = {"WRITE", src, "BEGIN", 0, NULL, NULL, 0, 1};
		if ((rc = run(pg, &begin, &r, NULL, err)) != ST_OK) {
			pthread_mutex_unlock(&pg->mu);
			goto out;
		}
		PQclear(r);
		r = NULL;
		w = pg->w;
		w->in_tx = 1;
		st.may_repeat = 0;
	}
	rc = run(pg, &st, &r, NULL, err);
	if (!w)
		pthread_mutex_unlock(&pg->mu);
	if (rc == ST_OK && !strcmp(PQcmdTuples(r), "0"))
		rc = st__err(err, ST_ENOTFOUND, "postgres: no object '%s' in table '%s' on %s", src,
			     pg->c.u.table, pg->c.where);
out:
	PQclear(r);
	free(ks);
	free(kd);
	free(sql);
	return rc;
}

static int pg_remove(st_store *s, const char *key, st_error *err)
{
	pg_store *pg = (pg_store *)s;
	char *k = full_key(pg, key);
	char *sql = st_asprintf("DELETE FROM %s WHERE key = $1", pg->c.u.table);
	const char *vals[1] = {k};
	stmt st = {"DELETE", key, sql, 1, vals, NULL, 0, 1};
	PGresult *r = NULL;
	int rc, lost = 0;

	if (!k || !sql) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	pthread_mutex_lock(&pg->mu);
	rc = run(pg, &st, &r, &lost, err);
	pthread_mutex_unlock(&pg->mu);
	/* no row after a lost answer: the first attempt may have deleted it */
	if (rc == ST_OK && !strcmp(PQcmdTuples(r), "0") && !lost)
		rc = st__err(err, ST_ENOTFOUND, "postgres: no object '%s' in table '%s' on %s", key,
			     pg->c.u.table, pg->c.where);
out:
	PQclear(r);
	free(k);
	free(sql);
	return rc;
}

/* ---- the store ---- */

static void pg_free(st_store *s)
{
	pg_store *pg = (pg_store *)s;
	st__pgc_free(&pg->c);
	pthread_mutex_destroy(&pg->mu);
	free(pg->db);
	free(pg->port);
	free(pg->base.url);
	free(pg);
}

static const st_store_ops pg_ops = {
	"postgres",     pg_read,         pg_stat,        pg_write_begin, pg_write_chunk,
	pg_write_finish, pg_write_commit, pg_write_abort, pg_list,        pg_remove,
	pg_copy,        pg_free,
	NULL, /* rename: the generic one, a copy then a delete */
	NULL, /* write_copy: chunks only */
};

int st__store_pg_open(st_store **out, const char *url, st_error *err)
{
	pg_store *pg = calloc(1, sizeof(*pg));
	int rc;

	*out = NULL;
	if (!pg)
		return st__err(err, ST_ENOMEM, "out of memory");
	pg->base.ops = &pg_ops;
	pthread_mutex_init(&pg->mu, NULL);
	if ((rc = st__pgc_init(&pg->c, url, err)) != ST_OK)
		goto fail;
	if (!(pg->base.url = strdup(pg->c.u.redacted))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = st__pgc_connect(&pg->c, err)) != ST_OK || (rc = ensure_table(pg, err)) != ST_OK)
		goto fail;
	if (!(pg->db = strdup(PQdb(pg->c.conn) ? PQdb(pg->c.conn) : "")) ||
	    !(pg->port = strdup(PQport(pg->c.conn) && *PQport(pg->c.conn) ? PQport(pg->c.conn)
									: pg->c.u.port))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto fail;
	}
	*out = &pg->base;
	return ST_OK;
fail:
	pg_free(&pg->base);
	return rc;
}

/* The server (host in lower case, without a trailing dot: not resolved, see DESIGN), port and
 * database as libpq resolved them when the store was opened (PGPORT, PGDATABASE, a service
 * file, libpq's default database: the user's name), the table (in lower case, as the server
 * folds it) and the key prefix; not the password or the connection's other settings. */
char *st__pg_identity(const st_store *st)
{
	const pg_store *pg = (const pg_store *)st;
	const st_pg_url *u = &pg->c.u;
	const char *db = pg->db ? pg->db : u->dbname ? u->dbname : "";
	const char *port = pg->port ? pg->port : u->port;
	size_t hl = strlen(u->host);
	st_buf b;

	if (hl > 1 && u->host[hl - 1] == '.') /* a fully qualified name: the same name */
		hl--;
	st_buf_init(&b);
	st_buf_adds(&b, "postgres://");
	for (size_t i = 0; i < hl; i++)
		st_buf_addc(&b, (char)tolower((unsigned char)u->host[i]));
	st_buf_addc(&b, ':');
	st__identity_add(&b, port, strlen(port));
	st_buf_addc(&b, '/');
	st__identity_add(&b, db, strlen(db));
	st_buf_adds(&b, "?table=");
	for (const char *c = u->table; *c; c++) { /* unquoted in SQL: folded to lower case */
		char l = (char)tolower((unsigned char)*c);
		st__identity_add(&b, &l, 1);
	}
	st_buf_adds(&b, "&prefix=");
	st__identity_add(&b, u->prefix, strlen(u->prefix));
	return st_buf_take(&b, NULL);
}
