/*
 * The postgres:// store's own cases: its URL as Pulumi (lib/pq) reads it, and on the test
 * servers' PostgreSQL (skipped without it, a failure when $CI is set) what the conformance
 * suite cannot see: wrong password, missing database, unreachable server, a table created on
 * first use, rows as Pulumi writes and reads them, a corrupt row, a backup in the write's
 * transaction, LIKE's special characters in prefixes, the request hook. No message may hold a
 * password.
 */
#include "testutil.h"

#include "servers.h"
#include "store/pg.h"
#include "index/pgix.h"

#include <ctype.h>
#include <libpq-fe.h>

static const char *const pg_vars[] = {"PGHOST",     "PGHOSTADDR", "PGPORT",   "PGUSER",
				      "PGPASSWORD", "PGDATABASE", "PGSSLMODE", "PGREQUIRESSL",
				      "PGCONNECT_TIMEOUT", "PGSERVICE", "PGOPTIONS", "PGAPPNAME",
				      "PGPASSFILE"};

static void clear_pg_env(void)
{
	for (size_t i = 0; i < sizeof(pg_vars) / sizeof(pg_vars[0]); i++)
		unsetenv(pg_vars[i]);
	setenv("PGPASSFILE", "/nonexistent/statetool-test-pgpass", 1);
}

static int setup(void **state)
{
	(void)state;
	clear_pg_env();
	st_set_net(NULL, NULL);
	return 0;
}

/* ---- the URL ---- */

static void check_kw(const st_pg_url *u, const char *kw, const char *want)
{
	const char *v = st__pg_url_get(u, kw);
	if (!want) {
		if (v)
			fail_msg("%s: want none, got '%s'", kw, v);
		return;
	}
	if (!v)
		fail_msg("%s: want '%s', got none", kw, want);
	assert_string_equal(v, want);
}

static void test_url_full(void **state)
{
	st_pg_url u;
	(void)state;
	assert_int_equal(st__pg_url_parse("postgres://ann:p%40ss+w@db.example:5433/state?table=My_T"
					  "&sslmode=verify-full&search_path=a,b&application_name=a+b"
					  "&connect_timeout=3",
					  &u, NULL),
			 ST_OK);
	check_kw(&u, "user", "ann");
	check_kw(&u, "password", "p@ss+w"); /* userinfo: '+' is a plus */
	check_kw(&u, "host", "db.example");
	check_kw(&u, "port", "5433");
	check_kw(&u, "dbname", "state");
	check_kw(&u, "sslmode", "verify-full");
	check_kw(&u, "options", "-c search_path=a,b"); /* not a libpq keyword: a server setting */
	check_kw(&u, "application_name", "a b");     /* query: '+' is a space */
	check_kw(&u, "connect_timeout", "3");
	check_kw(&u, "fallback_application_name", "statetool");
	check_kw(&u, "table", NULL);
	assert_string_equal(u.table, "My_T");
	assert_string_equal(u.prefix, "state/");
	assert_string_equal(u.password, "p@ss+w");
	assert_string_equal(u.redacted, "postgres://ann@db.example:5433/state?table=My_T&sslmode="
					"verify-full&search_path=a,b&application_name=a+b&"
					"connect_timeout=3");
	assert_string_equal(u.host, "db.example");
	assert_string_equal(u.port, "5433");
	assert_string_equal(u.dbname, "state");
	assert_string_equal(u.env_read, "PGPASSFILE"); /* set by setup() */
	st__pg_url_free(&u);
	/* the secrets in the query, %-escaped or not: passed to libpq, not in the redacted URL */
	assert_int_equal(st__pg_url_parse("postgres://ann@h/d?pass%77ord=pw-4711&sslmode=require&"
					  "sslpassword=key-4711&sslkey=k.pem",
					  &u, NULL),
			 ST_OK);
	check_kw(&u, "password", "pw-4711");
	check_kw(&u, "sslpassword", "key-4711");
	assert_string_equal(u.password, "pw-4711");
	assert_string_equal(u.redacted, "postgres://ann@h/d?sslmode=require&sslkey=k.pem");
	st__pg_url_free(&u);
}

static void test_url_defaults_and_env(void **state)
{
	st_pg_url u;
	(void)state;
	/* lib/pq's defaults: host localhost, sslmode require; the table pulumi_state; no prefix */
	assert_int_equal(st__pg_url_parse("postgres://", &u, NULL), ST_OK);
	check_kw(&u, "host", "localhost");
	check_kw(&u, "sslmode", "require");
	check_kw(&u, "connect_timeout", "10");
	check_kw(&u, "user", NULL);
	check_kw(&u, "password", NULL);
	check_kw(&u, "dbname", NULL);
	assert_string_equal(u.table, "pulumi_state");
	assert_string_equal(u.prefix, "");
	assert_string_equal(u.redacted, "postgres://");
	assert_string_equal(u.port, "5432");
	assert_null(u.dbname);
	st__pg_url_free(&u);
	/* PG* variables: libpq reads them, so no default hides them; messages name them */
	setenv("PGHOST", "pg.internal", 1);
	setenv("PGSSLMODE", "disable", 1);
	setenv("PGPORT", "6543", 1);
	setenv("PGDATABASE", "teamdb", 1);
	setenv("PGPASSWORD", "env-secret", 1);
	assert_int_equal(st__pg_url_parse("postgres://", &u, NULL), ST_OK);
	check_kw(&u, "host", NULL);
	check_kw(&u, "sslmode", NULL);
	assert_string_equal(u.host, "pg.internal");
	assert_string_equal(u.port, "6543");
	assert_string_equal(u.dbname, "teamdb");
	assert_string_equal(u.prefix, ""); /* the prefix is the URL's path only, as in Pulumi */
	assert_string_equal(u.env_read,
			    "PGHOST, PGPORT, PGDATABASE, PGPASSWORD, PGPASSFILE, PGSSLMODE");
	st__pg_url_free(&u);
	clear_pg_env();
}

static void test_url_forms(void **state)
{
	st_pg_url u;
	(void)state;
	assert_int_equal(st__pg_url_parse("postgres://[::1]:5432/a%2Fb/?password=qsecret&x=1",
					  &u, NULL),
			 ST_OK);
	check_kw(&u, "host", "::1");
	check_kw(&u, "dbname", "a/b/");
	check_kw(&u, "password", "qsecret");
	check_kw(&u, "options", "-c x=1");
	assert_string_equal(u.prefix, "a/b/");
	st__pg_url_free(&u);
}

/* Each parameter's first value (Go's url.Values.Get, for Pulumi's table and lib/pq's
 * parameters); an empty one left out (lib/pq's accrue), an empty table the default one; a
 * parameter naming a part of the URL replaces it when lib/pq's sorted string puts it last. */
static void test_url_repeated(void **state)
{
	st_pg_url u;
	(void)state;
	assert_int_equal(st__pg_url_parse("postgres://h/db?table=first_t&sslmode=disable&table=other"
					  "&sslmode=require&search_path=a&search_path=b&x=&x=1"
					  "&connect_timeout=&connect_timeout=7",
					  &u, NULL),
			 ST_OK);
	assert_string_equal(u.table, "first_t");
	check_kw(&u, "sslmode", "disable");
	check_kw(&u, "options", "-c search_path=a");
	check_kw(&u, "connect_timeout", "10"); /* the first is empty: left out, so the default */
	st__pg_url_free(&u);
	assert_int_equal(st__pg_url_parse("postgres://h/db?table=&table=other&sslmode=", &u, NULL),
			 ST_OK);
	assert_string_equal(u.table, "pulumi_state");
	check_kw(&u, "sslmode", "require"); /* lib/pq's default, not libpq's empty (prefer) */
	st__pg_url_free(&u);
	/* the URL's user bob: "user='bob'" against "user='alice'" / "user='carl'" */
	assert_int_equal(st__pg_url_parse("postgres://bob:pw@h:5433/mid?user=alice&dbname=zed&port=5"
					  "&password=pa%27",
					  &u, NULL),
			 ST_OK);
	check_kw(&u, "user", "bob");
	check_kw(&u, "dbname", "zed");
	check_kw(&u, "port", "5433"); /* "port='5'" sorts before "port='5433'" */
	check_kw(&u, "password", "pw"); /* "pa\''" sorts before "pw'" */
	assert_string_equal(u.password, "pw");
	st__pg_url_free(&u);
	assert_int_equal(st__pg_url_parse("postgres://bob@h/db?user=carl&user=alice", &u, NULL), ST_OK);
	check_kw(&u, "user", "carl");
	st__pg_url_free(&u);
}

static void test_url_errors(void **state)
{
	static const struct {
		const char *url, *msg;
	} bad[] = {
		{"postgres://u:hunter22@h/db?table=a-b", "table name 'a-b' is not a plain SQL name"},
		{"postgres://u:hunter22@h/db?table=1a", "table name '1a'"},
		{"postgres://u:hunter22%zz@h/db", "the URL's user or password has a malformed"},
		{"postgres://u:hunter22@h:54x/db", "the URL's port is not a number"},
		{"postgres://u:hunter22@[::1/db", "'[' without ']'"},
		{"postgres://u:hunter22@h/a/../b", "cannot be a key prefix"},
		{"postgres://u:hunter22@h/db?a=%z1", "the URL's query has a malformed"},
		{"postgres://u:hunter22@h/db?a=1;b=2", "has a ';'"},
		{"postgres://u:hunter22@h/db#frag", "'#' fragment"},
		{"postgres://u:hunter22@h/d\tb", "control character"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		st_pg_url u;
		st_error err;
		st_error_clear(&err);
		assert_int_equal(st__pg_url_parse(bad[i].url, &u, &err), ST_EINVAL);
		if (!strstr(err.message, bad[i].msg))
			fail_msg("%s: '%s' lacks '%s'", bad[i].url, err.message, bad[i].msg);
		assert_null(strstr(err.message, "hunter22"));
		st__pg_url_free(&u);
	}
}

static void test_open_scheme(void **state)
{
	st_store *s = NULL;
	st_error err;
	(void)state;
	st_error_clear(&err);
	assert_int_equal(st_store_open(&s, "postgresql://u:hunter22@h/db", &err), ST_EUNSUPPORTED);
	assert_string_equal(err.message, "postgresql:// is not a scheme Pulumi knows: its "
					 "PostgreSQL backend is postgres://");
	assert_null(s);
}

/* ---- on the test server ---- */

typedef struct server {
	char *url;   /* the tests' URL, with sslmode=disable (the server has no TLS) */
	char *host, *port, *user, *password, *db;
	PGconn *admin; /* a connection of the test's own, to look at rows as Pulumi would */
} server;

/* The test server, or NULL (skip) when there is none and $CI is not set. */
static server *server_get(void)
{
	static server sv;
	static int tried;
	if (tried)
		return sv.url ? &sv : NULL;
	tried = 1;
	char *url = tu_server_var("ST_TEST_PG_URL");
	if (!url) {
		if (tu_servers_required())
			fail_msg("no PostgreSQL test server (ST_TEST_PG_URL) and $CI is set: a skip "
				 "is a failure there");
		print_message("postgres: skipped, no test server (sh tests/servers/ctl start "
			      "postgres)\n");
		return NULL;
	}
	sv.url = st_asprintf("%s?sslmode=disable", url);
	free(url);
	sv.host = tu_server_var("ST_TEST_PGHOST");
	sv.port = tu_server_var("ST_TEST_PGPORT");
	sv.user = tu_server_var("ST_TEST_PGUSER");
	sv.password = tu_server_var("ST_TEST_PGPASSWORD");
	sv.db = tu_server_var("ST_TEST_PGDATABASE");
	const char *kw[] = {"host", "port", "user", "password", "dbname", "sslmode", NULL};
	const char *val[] = {sv.host, sv.port, sv.user, sv.password, sv.db, "disable", NULL};
	sv.admin = PQconnectdbParams(kw, val, 0);
	if (PQstatus(sv.admin) != CONNECTION_OK)
		fail_msg("postgres: %s", PQerrorMessage(sv.admin));
	return &sv;
}

/* Runs SQL on the test's own connection; the first value of the first row (new), or NULL. */
static char *sql1(server *sv, const char *sql, const char *p1, const char *p2)
{
	const char *vals[2] = {p1, p2};
	int n = p2 ? 2 : p1 ? 1 : 0;
	PGresult *r = PQexecParams(sv->admin, sql, n, NULL, vals, NULL, NULL, 0);
	char *v = NULL;
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(sv->admin));
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) && !PQgetisnull(r, 0, 0))
		v = strdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return v;
}

static st_store *open_table(server *sv, const char *table)
{
	st_store *s = NULL;
	st_error err;
	char *url = st_asprintf("%s&table=%s", sv->url, table);
	st_error_clear(&err);
	if (st_store_open(&s, url, &err) != ST_OK)
		fail_msg("%s", err.message);
	free(url);
	return s;
}

static void test_connect_errors(void **state)
{
	server *sv = server_get();
	st_store *s = NULL;
	st_error err;
	char *url;
	(void)state;
	if (!sv)
		return;
	/* a wrong password in the URL */
	url = st_asprintf("postgres://%s:hunter22-wrong@%s:%s/%s?sslmode=disable", sv->user,
			  sv->host, sv->port, sv->db);
	st_error_clear(&err);
	assert_int_equal(st_store_open(&s, url, &err), ST_EAUTH);
	free(url);
	url = st_asprintf("postgres: cannot connect to %s:%s (database '%s', user '%s'): password "
			  "authentication failed for user \"%s\" (PG* variables set: PGPASSFILE)",
			  sv->host, sv->port, sv->db, sv->user, sv->user);
	assert_string_equal(err.message, url);
	free(url);
	/* a wrong one from PGPASSWORD, the rest from PG* too: named, never shown */
	setenv("PGPASSWORD", "hunter22-env", 1);
	setenv("PGHOST", sv->host, 1);
	setenv("PGPORT", sv->port, 1);
	setenv("PGUSER", sv->user, 1);
	setenv("PGDATABASE", sv->db, 1);
	setenv("PGSSLMODE", "disable", 1);
	st_error_clear(&err);
	assert_int_equal(st_store_open(&s, "postgres://", &err), ST_EAUTH);
	assert_non_null(strstr(err.message, "password authentication failed"));
	assert_non_null(strstr(err.message, "(PG* variables set: PGHOST, PGPORT, PGDATABASE, "
					    "PGUSER, PGPASSWORD, PGPASSFILE, PGSSLMODE)"));
	assert_null(strstr(err.message, "hunter22"));
	/* the right one from PGPASSWORD: `postgres://` is enough, as Pulumi's README says */
	setenv("PGPASSWORD", sv->password, 1);
	assert_int_equal(st_store_open(&s, "postgres://?table=statetool_env_only", NULL), ST_OK);
	assert_string_equal(st_store_url(s), "postgres://?table=statetool_env_only");
	st_store_free(s);
	clear_pg_env();
	/* no such database */
	url = st_asprintf("postgres://%s:%s@%s:%s/statetool_nodb?sslmode=disable", sv->user,
			  sv->password, sv->host, sv->port);
	st_error_clear(&err);
	assert_int_equal(st_store_open(&s, url, &err), ST_ENOTFOUND);
	assert_non_null(strstr(err.message, "database \"statetool_nodb\" does not exist"));
	assert_null(strstr(err.message, sv->password));
	free(url);
	/* no server: tried again (bounded), then given up */
	st_net_opts o = ST_NET_OPTS_INIT;
	o.retries = 2;
	o.backoff_ms = 1;
	assert_int_equal(st_set_net(&o, NULL), ST_OK);
	url = st_asprintf("postgres://%s:hunter22@127.0.0.1:1/%s?sslmode=disable", sv->user,
			  sv->db);
	st_error_clear(&err);
	assert_int_equal(st_store_open(&s, url, &err), ST_EIO);
	assert_non_null(strstr(err.message, "postgres: cannot connect to 127.0.0.1:1 ("));
	assert_non_null(strstr(err.message, "Connection refused (3 attempts; PG* variables set: "
					    "PGPASSFILE)"));
	assert_null(strstr(err.message, "hunter22"));
	free(url);
	/* no SSL on the server: lib/pq's default (require) refuses, as Pulumi would */
	url = st_asprintf("postgres://%s:hunter22@%s:%s/%s", sv->user, sv->host, sv->port, sv->db);
	st_error_clear(&err);
	assert_int_equal(st_store_open(&s, url, &err), ST_EIO);
	assert_non_null(strstr(err.message, "Pulumi (lib/pq) requires SSL unless sslmode=disable"));
	free(url);
	st_set_net(NULL, NULL);
}

static void test_table_created(void **state)
{
	server *sv = server_get();
	char name[40], rnd[9], *v;
	st_store *s;
	(void)state;
	if (!sv)
		return;
	st_random_hex(rnd, 4);
	snprintf(name, sizeof(name), "Fresh_%s", rnd);
	s = open_table(sv, name);
	/* unquoted, as Pulumi writes it: folded to lower case */
	for (char *p = name; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	v = sql1(sv, "SELECT string_agg(column_name || ' ' || data_type || ' ' || is_nullable || "
		     "' ' || coalesce(column_default, '-'), ', ' ORDER BY ordinal_position) FROM "
		     "information_schema.columns WHERE table_name = $1",
		 name, NULL);
	assert_string_equal(v, "key text NO -, data json NO -, updated_at timestamp with time "
			       "zone NO now()");
	free(v);
	char idx[64];
	snprintf(idx, sizeof(idx), "%s_key_prefix_idx", name);
	v = sql1(sv, "SELECT indexdef FROM pg_indexes WHERE indexname = $1", idx, NULL);
	assert_non_null(strstr(v, "USING btree (key text_pattern_ops)"));
	free(v);
	st_store_free(s);
	/* opened again: nothing to do */
	s = open_table(sv, name);
	st_store_free(s);
}


/* Two spellings of one table have one identity; another table, another. */
static void test_identity(void **state)
{
	server *sv = server_get();
	st_store *a, *b;
	char *ia = NULL, *ib = NULL, *url, *want, rnd[9], name[40];
	st_error err;
	(void)state;
	if (!sv)
		return;
	a = open_table(sv, "pulumi_state");
	assert_int_equal(st_store_identity(a, &ia, NULL), ST_OK);
	want = st_asprintf("postgres://%s:%s/%s?table=pulumi_state&prefix=%s/", sv->host, sv->port,
			   sv->db, sv->db);
	assert_string_equal(ia, want);
	/* no password in the URL (PGPASSWORD), parameters in another order, the table in capitals */
	setenv("PGPASSWORD", sv->password, 1);
	url = st_asprintf("postgres://%s@%s:%s/%s?connect_timeout=7&table=Pulumi_State&"
			  "sslmode=disable",
			  sv->user, sv->host, sv->port, sv->db);
	st_error_clear(&err);
	if (st_store_open(&b, url, &err) != ST_OK)
		fail_msg("%s", err.message);
	unsetenv("PGPASSWORD");
	assert_int_equal(st_store_identity(b, &ib, NULL), ST_OK);
	assert_string_equal(ib, want);
	assert_null(strstr(ib, sv->password));
	st_store_free(b);
	free(ib);
	/* another table */
	st_random_hex(rnd, 4);
	snprintf(name, sizeof(name), "ident_%s", rnd);
	b = open_table(sv, name);
	assert_int_equal(st_store_identity(b, &ib, NULL), ST_OK);
	assert_string_not_equal(ia, ib);
	st_store_free(b);
	free(ib);
	ib = NULL;
	/* the database: named by ?dbname=, by PGDATABASE, or none (libpq's default: the user's
	 * name; the test server's database is its user's): one identity (review26 R10: the last
	 * was "?user-db=USER"); no path, so no key prefix */
	assert_string_equal(sv->db, sv->user);
	free(want);
	want = st_asprintf("postgres://%s:%s/%s?table=pulumi_state&prefix=", sv->host, sv->port,
			   sv->db);
	setenv("PGPASSWORD", sv->password, 1);
	for (int k = 0; k < 3; k++) {
		char *u2 = st_asprintf("postgres://%s@%s:%s?sslmode=disable%s%s", sv->user, sv->host,
				       sv->port, k == 0 ? "&dbname=" : "", k == 0 ? sv->db : "");
		if (k == 1)
			setenv("PGDATABASE", sv->db, 1);
		st_error_clear(&err);
		if (st_store_open(&b, u2, &err) != ST_OK)
			fail_msg("%s", err.message);
		unsetenv("PGDATABASE");
		assert_int_equal(st_store_identity(b, &ib, NULL), ST_OK);
		assert_string_equal(ib, want);
		st_store_free(b);
		free(ib);
		ib = NULL;
		free(u2);
	}
	unsetenv("PGPASSWORD");
	free(sql1(sv, "SELECT 1 FROM pg_tables WHERE tablename = $1", name, NULL));
	char drop[80];
	snprintf(drop, sizeof(drop), "DROP TABLE %s", name);
	free(sql1(sv, drop, NULL, NULL));
	st_store_free(a);
	free(ia);
	free(ib);
	free(url);
	free(want);
}

static void test_rows_as_pulumi(void **state)
{
	server *sv = server_get();
	st_store *s;
	st_store_info info;
	char *v, *data;
	size_t len;
	st_error err;
	(void)state;
	if (!sv)
		return;
	s = open_table(sv, "statetool_rows");
	sql1(sv, "DELETE FROM statetool_rows", NULL, NULL);
	/* ours: Go's json.Marshal of {Data: base64}, compact, under the database's prefix */
	assert_int_equal(st_store_write(s, "a/hello", "hello", 5, NULL, NULL), ST_OK);
	v = sql1(sv, "SELECT data::text FROM statetool_rows WHERE key = $1", "statetool/a/hello",
		 NULL);
	assert_string_equal(v, "{\"data\":\"aGVsbG8=\"}");
	free(v);
	assert_int_equal(st_store_write(s, "a/bin", "\0\xff\x10\x80", 4, NULL, NULL), ST_OK);
	v = sql1(sv, "SELECT data::text FROM statetool_rows WHERE key = $1", "statetool/a/bin", NULL);
	assert_string_equal(v, "{\"data\":\"AP8QgA==\"}");
	free(v);
	/* theirs, as another JSON writer may space it */
	sql1(sv, "INSERT INTO statetool_rows (key, data) VALUES ($1, $2)", "statetool/a/theirs",
	     "{ \"data\" : \"UHVsdW1p\" }");
	assert_int_equal(st_store_read(s, "a/theirs", 0, &data, &len, &info, NULL), ST_OK);
	assert_int_equal(len, 6);
	assert_string_equal(data, "Pulumi");
	assert_int_equal(info.size, 6);
	free(data);
	/* escapes, as another JSON writer may put them: decoded as Go decodes the string */
	sql1(sv, "INSERT INTO statetool_rows (key, data) VALUES ($1, $2)", "statetool/a/esc",
	     "{\"data\":\"UHVs\\u0064W1p\\n\"}");
	assert_int_equal(st_store_read(s, "a/esc", 0, &data, &len, NULL, NULL), ST_OK);
	assert_int_equal(len, 6);
	assert_string_equal(data, "Pulumi");
	free(data);
	/* Go's StdEncoding does not check the unused bits of the last quantum: neither do we */
	sql1(sv, "UPDATE statetool_rows SET data = $2 WHERE key = $1", "statetool/a/esc",
	     "{\"data\":\"QR==\"}");
	assert_int_equal(st_store_read(s, "a/esc", 0, &data, &len, NULL, NULL), ST_OK);
	assert_int_equal(len, 1);
	assert_string_equal(data, "A");
	free(data);
	sql1(sv, "DELETE FROM statetool_rows WHERE key = $1", "statetool/a/esc", NULL);
	/* a row not in Pulumi's form, bad base64: refused, named */
	sql1(sv, "INSERT INTO statetool_rows (key, data) VALUES ($1, $2)", "statetool/a/odd",
	     "{\"other\": 1}");
	st_error_clear(&err);
	assert_int_equal(st_store_read(s, "a/odd", 0, &data, &len, NULL, &err), ST_EPARSE);
	v = st_asprintf("postgres: object 'a/odd' in table 'statetool_rows' on %s:%s is not in "
			"Pulumi's form {\"data\": \"<base64>\"}",
			sv->host, sv->port);
	assert_string_equal(err.message, v);
	free(v);
	sql1(sv, "INSERT INTO statetool_rows (key, data) VALUES ($1, $2)", "statetool/a/badb64",
	     "{\"data\": \"*not base64*\"}");
	st_error_clear(&err);
	assert_int_equal(st_store_read(s, "a/badb64", 0, &data, &len, NULL, &err), ST_EPARSE);
	v = st_asprintf("postgres: object 'a/badb64' in table 'statetool_rows' on %s:%s is not in "
			"Pulumi's form {\"data\": \"<base64>\"}: its data is not base64",
			sv->host, sv->port);
	assert_string_equal(err.message, v);
	free(v);
	/* a limit: nothing beyond it is read */
	st_error_clear(&err);
	assert_int_equal(st_store_read(s, "a/hello", 4, &data, &len, NULL, &err), ST_ELIMIT);
	assert_null(data);
	assert_int_equal(st_store_read(s, "a/hello", 5, &data, &len, NULL, NULL), ST_OK);
	free(data);
	/* keys outside the URL's prefix are not this store's */
	sql1(sv, "INSERT INTO statetool_rows (key, data) VALUES ($1, $2)", "elsewhere/a/x",
	     "{\"data\": \"\"}");
	st_store_entry *e;
	size_t n;
	assert_int_equal(st_store_list(s, "", 0, &e, &n, NULL), ST_OK);
	assert_int_equal(n, 5);
	assert_string_equal(e[0].key, "a/badb64");
	assert_string_equal(e[1].key, "a/bin");
	assert_string_equal(e[2].key, "a/hello");
	assert_string_equal(e[4].key, "a/theirs");
	/* a listing reads no row's data: sizes unknown; stat and read give them */
	for (size_t i = 0; i < n; i++)
		assert_int_equal(e[i].info.size, -1);
	st_store_entries_free(e, n);
	st_store_info si;
	assert_int_equal(st_store_stat(s, "a/bin", &si, NULL), ST_OK);
	assert_int_equal(si.size, 4);
	assert_int_equal(st_store_stat(s, "a/theirs", &si, NULL), ST_OK);
	assert_int_equal(si.size, 6);
	/* a rewrite, even of the same bytes, gives a new etag and a later time */
	st_store_info a, b;
	assert_int_equal(st_store_stat(s, "a/hello", &a, NULL), ST_OK);
	assert_int_equal(st_store_write(s, "a/hello", "hello", 5, NULL, NULL), ST_OK);
	assert_int_equal(st_store_stat(s, "a/hello", &b, NULL), ST_OK);
	assert_string_not_equal(a.etag, b.etag);
	assert_true(b.mtime_ns > a.mtime_ns);
	assert_int_equal(a.mtime_ns % 1000, 0); /* microseconds, as updated_at keeps them */
	st_store_free(s);
}

/* A big row: read back byte for byte; the connection that carried it is closed after it (libpq
 * keeps its input buffer as big as the largest message for the connection's life), and the
 * next statement opens another. */
static void test_big_row(void **state)
{
	server *sv = server_get();
	const size_t n = (17u << 20) + 1;
	char name[40], rnd[9], *big, *data, *v, *q;
	size_t len;
	st_store *s;
	(void)state;
	if (!sv)
		return;
	st_random_hex(rnd, 4);
	snprintf(name, sizeof(name), "statetool_big_%s", rnd);
	s = open_table(sv, name);
	big = malloc(n);
	assert_non_null(big);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)(i * 2654435761u >> 13);
	assert_int_equal(st_store_write(s, "big", big, n, NULL, NULL), ST_OK);
	assert_int_equal(st_store_read(s, "big", 0, &data, &len, NULL, NULL), ST_OK);
	assert_int_equal(len, n);
	assert_memory_equal(data, big, n);
	free(data);
	/* the session that ran the read is gone (its backend may take a moment to exit) */
	q = st_asprintf("%%FROM %s WHERE key = $1%%", name);
	for (int i = 0; i < 200; i++) {
		v = sql1(sv, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE $1 AND pid <> "
			     "pg_backend_pid()",
			 q, NULL);
		int gone = !strcmp(v, "0");
		free(v);
		if (gone)
			break;
		assert_true(i < 199);
		usleep(10000);
	}
	free(q);
	/* and the store carries on, on a new connection */
	assert_int_equal(st_store_write(s, "small", "x", 1, NULL, NULL), ST_OK);
	assert_int_equal(st_store_read(s, "small", 0, &data, &len, NULL, NULL), ST_OK);
	assert_string_equal(data, "x");
	free(data);
	st_store_free(s);
	v = st_asprintf("DROP TABLE %s", name);
	sql1(sv, v, NULL, NULL);
	free(v);
	free(big);
}

/* LIKE's '_' and '%' in a prefix are characters like any other. */
static void test_like_prefix(void **state)
{
	server *sv = server_get();
	static const char *const keys[] = {"a_b/1", "aXb/2", "a%b/3", "a_/5", "ab/6"};
	st_store *s;
	st_store_entry *e;
	size_t n;
	(void)state;
	if (!sv)
		return;
	s = open_table(sv, "statetool_like");
	sql1(sv, "DELETE FROM statetool_like", NULL, NULL);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_int_equal(st_store_write(s, keys[i], "x", 1, NULL, NULL), ST_OK);
	assert_int_equal(st_store_list(s, "a_", 0, &e, &n, NULL), ST_OK);
	assert_int_equal(n, 2);
	assert_string_equal(e[0].key, "a_/5");
	assert_string_equal(e[1].key, "a_b/1");
	st_store_entries_free(e, n);
	assert_int_equal(st_store_list(s, "a%", 0, &e, &n, NULL), ST_OK);
	assert_int_equal(n, 1);
	st_store_entries_free(e, n);
	/* one level: bytewise order ('%' < 'X' < '_' < 'b'), each level once */
	assert_int_equal(st_store_list(s, "", ST_STORE_LIST_DIRS, &e, &n, NULL), ST_OK);
	assert_int_equal(n, 5);
	assert_string_equal(e[0].key, "a%b/");
	assert_string_equal(e[1].key, "aXb/");
	assert_string_equal(e[2].key, "a_/");
	assert_string_equal(e[3].key, "a_b/");
	assert_string_equal(e[4].key, "ab/");
	st_store_entries_free(e, n);
	st_store_free(s);
}

static int refuse(void *ctx)
{
	(void)ctx;
	return ST_EREFUSED;
}

/* The backup copy and the new object are one transaction: a write that fails after the copy
 * leaves the backup as it was (the file store would have made it). */
static void test_backup_in_transaction(void **state)
{
	server *sv = server_get();
	st_store_write_opts o = ST_STORE_WRITE_OPTS_INIT;
	st_store *s;
	char *data;
	size_t len;
	(void)state;
	if (!sv)
		return;
	s = open_table(sv, "statetool_tx");
	sql1(sv, "DELETE FROM statetool_tx", NULL, NULL);
	assert_int_equal(st_store_write(s, "k", "old", 3, NULL, NULL), ST_OK);
	assert_int_equal(st_store_write(s, "k.bak", "older", 5, NULL, NULL), ST_OK);
	o.backup_key = "k.bak";
	o.flags = ST_STORE_CREATE_ONLY; /* the copy is made, then the insert finds k: EEXIST */
	assert_int_equal(st_store_write(s, "k", "new", 3, &o, NULL), ST_EEXIST);
	assert_int_equal(st_store_read(s, "k.bak", 0, &data, &len, NULL, NULL), ST_OK);
	assert_string_equal(data, "older");
	free(data);
	/* refused before the copy: nothing happens either */
	o.flags = 0;
	o.proceed = refuse;
	assert_int_equal(st_store_write(s, "k", "new", 3, &o, NULL), ST_EREFUSED);
	/* and a write that goes through: both change */
	o.proceed = NULL;
	assert_int_equal(st_store_write(s, "k", "new", 3, &o, NULL), ST_OK);
	assert_int_equal(st_store_read(s, "k.bak", 0, &data, &len, NULL, NULL), ST_OK);
	assert_string_equal(data, "old");
	free(data);
	assert_int_equal(st_store_read(s, "k", 0, &data, &len, NULL, NULL), ST_OK);
	assert_string_equal(data, "new");
	free(data);
	/* the connection is usable afterwards (no transaction left open) */
	assert_int_equal(st_store_delete(s, "k.bak", NULL), ST_OK);
	assert_int_equal(st_store_delete(s, "k.bak", NULL), ST_ENOTFOUND);
	st_store_free(s);
	char *v = sql1(sv, "SELECT count(*) FROM statetool_tx", NULL, NULL);
	assert_string_equal(v, "1");
	free(v);
}

typedef struct seen {
	char lines[16][160];
	int n;
} seen;

static void on_request(void *ctx, const char *method, const char *host, const char *path,
		       long status)
{
	seen *s = ctx;
	(void)host;
	if (s->n < 16)
		snprintf(s->lines[s->n++], sizeof(s->lines[0]), "%s %s %ld", method, path, status);
}

static void test_request_hook(void **state)
{
	server *sv = server_get();
	st_net_opts o = ST_NET_OPTS_INIT;
	seen log;
	st_store *s;
	char *data;
	size_t len;
	(void)state;
	if (!sv)
		return;
	memset(&log, 0, sizeof(log));
	o.request = on_request;
	o.ctx = &log;
	st_set_net(&o, NULL);
	s = open_table(sv, "statetool_hook");
	assert_int_equal(st_store_write(s, "x/y", "1", 1, NULL, NULL), ST_OK);
	assert_int_equal(st_store_read(s, "x/y", 0, &data, &len, NULL, NULL), ST_OK);
	free(data);
	st_store_entry *e;
	size_t n;
	assert_int_equal(st_store_list(s, "x/", 0, &e, &n, NULL), ST_OK);
	st_store_entries_free(e, n);
	assert_int_equal(st_store_copy(s, "x/y", "x/z", NULL), ST_OK);
	assert_int_equal(st_store_delete(s, "x/z", NULL), ST_OK);
	st_store_free(s);
	st_set_net(NULL, NULL);
	assert_int_equal(log.n, 6);
	assert_string_equal(log.lines[0], "OPEN /statetool_hook/statetool/ 200");
	assert_string_equal(log.lines[1], "WRITE /statetool_hook/statetool/x/y 200");
	assert_string_equal(log.lines[2], "READ /statetool_hook/statetool/x/y 200");
	assert_string_equal(log.lines[3], "LIST /statetool_hook/statetool/x/ 200");
	assert_string_equal(log.lines[4], "COPY /statetool_hook/statetool/x/y 200");
	assert_string_equal(log.lines[5], "DELETE /statetool_hook/statetool/x/z 200");
}

/* ---- --sql on an index: what a stored query tree names (lib/index/pgsql.c) ---- */

static void check_refs(const char *tree, const char *rel, const char *func, const char *oper,
		       const char *type, const char *node)
{
	ixpg_refs r;
	assert_int_equal(st__ixpg_tree_refs(tree, &r), ST_OK);
	assert_string_equal(r.oids[IXPG_REL].data, rel);
	assert_string_equal(r.oids[IXPG_FUNC].data, func);
	assert_string_equal(r.oids[IXPG_OPER].data, oper);
	assert_string_equal(r.oids[IXPG_TYPE].data, type);
	assert_string_equal(r.node, node);
	st__ixpg_refs_free(&r);
}

/* A PostgreSQL index opened read-only refuses an update naming the index as st_index_name
 * does, without the URL's password (audit28 D15: the URL as given was formatted). */
static void test_index_readonly_no_password(void **state)
{
	server *sv = server_get();
	char rnd[9], *url, *v;
	st_index *ix = NULL;
	st_state *s = NULL;
	st_error err;
	(void)state;
	if (!sv)
		return;
	assert_non_null(sv->password);
	assert_non_null(strstr(sv->url, sv->password)); /* the URL holds it */
	st_random_hex(rnd, 4);
	url = st_asprintf("%s&search_path=ixro_%s", sv->url, rnd);
	v = st_asprintf("CREATE SCHEMA ixro_%s", rnd);
	free(sql1(sv, v, NULL, NULL));
	free(v);
	st_error_clear(&err);
	assert_int_equal(st_index_open(&ix, url, 0, NULL, &err), ST_OK); /* the tables made */
	st_index_close(ix);
	assert_int_equal(st_index_open(&ix, url, 1, NULL, &err), ST_OK);
	assert_int_equal(st_state_new(&s, &err), ST_OK);
	assert_int_equal(st_index_update_state(ix, "organization/p/dev", NULL, s, &err),
			 ST_EREFUSED);
	assert_null(strstr(err.message, sv->password));
	v = st_asprintf("the index '%s' is open read-only", st_index_name(ix));
	assert_string_equal(err.message, v);
	free(v);
	st_state_free(s);
	st_index_close(ix);
	v = st_asprintf("DROP SCHEMA ixro_%s CASCADE", rnd);
	free(sql1(sv, v, NULL, NULL));
	free(v);
	free(url);
}


static void test_tree_refs(void **state)
{
	(void)state;
	/* as PostgreSQL 15 stores SELECT s.qname, pg_sleep(0)::text, row_number() OVER (ORDER BY
	 * s.id), (s.id, 'x') < (1, 'y') FROM stacks s ORDER BY 1 (cut down) */
	check_refs("({QUERY :commandType 1 :rtable ({RANGETBLENTRY :alias {ALIAS :aliasname s "
		   ":colnames <>} :eref {ALIAS :aliasname s :colnames (\"id\" \"qname\")} "
		   ":rtekind 0 :relid 16570 :relkind r :tablesample <> :selectedCols (b 8 9)}) "
		   ":targetList ({TARGETENTRY :expr {VAR :varno 1 :varattno 2 :vartype 25 "
		   ":vartypmod 655366 :varcollid 100} :resno 1 :resname qname :resorigtbl 16570} "
		   "{TARGETENTRY :expr {COERCEVIAIO :arg {FUNCEXPR :funcid 2626 :funcresulttype "
		   "2278 :args ({FUNCEXPR :funcid 316 :funcresulttype 701 :args ({CONST :consttype "
		   "23 :consttypmod -1 :constvalue 4 [ 0 0 0 0 0 0 0 0 ]})})} :resulttype 25} "
		   ":resname c2} {TARGETENTRY :expr {WINDOWFUNC :winfnoid 3100 :wintype 20} "
		   ":resname c3} {TARGETENTRY :expr {ROWCOMPAREEXPR :rctype 1 :opnos (o 418 664) "
		   ":opfamilies (o 1976 1994) :inputcollids (o 0 100)}}) :sortClause "
		   "({SORTGROUPCLAUSE :tleSortGroupRef 1 :eqop 98 :sortop 664 :nulls_first false}) "
		   ":windowClause ({WINDOWCLAUSE :startInRangeFunc 0 :endInRangeFunc 4126}) "
		   ":limitCount <>})",
		   "{16570}", "{2626,316,3100,4126}", "{418,664,98,664}", "{1,25,2278,701,23,25,20,1}",
		   "");
	/* a name or a string is no field, node or number: its spaces and brackets escaped */
	check_refs("({TARGETENTRY :resname a\\ :funcid\\ 2626 :resorigtbl 0} {TARGETENTRY "
		   ":resname :funcid :ressortgroupref 7} {TARGETENTRY :resname \\{XMLEXPR "
		   ":resno 2} {TARGETENTRY :resname \\123 :resno 3})",
		   "{}", "{}", "{}", "{}", "");
	/* a node --sql never runs, the first one named; a list of another kind is no OID */
	check_refs("{QUERY :targetList ({TARGETENTRY :expr {COERCETODOMAIN :arg {CONST "
		   ":consttype 23} :resulttype 16999} } {TARGETENTRY :expr {XMLEXPR :op 0}}) "
		   ":aggargtypes (o 20 16400) :coltypes (i 5) :opnos <> :funcid <>}",
		   "{}", "{}", "{}", "{23,16999,20,16400}", "COERCETODOMAIN");
	check_refs("{QUERY {\\FUNCEXPR :funcid 1}}", "{}", "{1}", "{}", "{}", "\\FUNCEXPR");
	check_refs("{", "{}", "{}", "{}", "{}", "(end)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_url_full, setup),
		cmocka_unit_test_setup(test_url_defaults_and_env, setup),
		cmocka_unit_test_setup(test_url_forms, setup),
		cmocka_unit_test_setup(test_url_repeated, setup),
		cmocka_unit_test_setup(test_url_errors, setup),
		cmocka_unit_test_setup(test_open_scheme, setup),
		cmocka_unit_test_setup(test_connect_errors, setup),
		cmocka_unit_test_setup(test_table_created, setup),
		cmocka_unit_test_setup(test_identity, setup),
		cmocka_unit_test_setup(test_rows_as_pulumi, setup),
		cmocka_unit_test_setup(test_big_row, setup),
		cmocka_unit_test_setup(test_like_prefix, setup),
		cmocka_unit_test_setup(test_backup_in_transaction, setup),
		cmocka_unit_test_setup(test_request_hook, setup),
		cmocka_unit_test_setup(test_index_readonly_no_password, setup),
		cmocka_unit_test(test_tree_refs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
