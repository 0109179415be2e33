/*
 * The PostgreSQL store (postgres://, private to lib/store): Pulumi's DIY backend on PostgreSQL
 * (pkg/backend/diy/postgres), read as Pulumi reads it. See doc/DESIGN.md, "Storage",
 * "The PostgreSQL store".
 */
#ifndef ST_STORE_PG_H
#define ST_STORE_PG_H

#include "internal.h"

#include <libpq-fe.h>

/* A postgres:// URL taken apart as Pulumi (lib/pq) takes it. */
typedef struct st_pg_url {
	/* libpq's keywords and values (NULL-terminated arrays, each string new), for
	 * PQconnectdbParams without expand_dbname: the URL's user, password, host, port and
	 * database, its query parameters (known libpq keywords as they are; any other one becomes
	 * "-c NAME=VALUE" in `options`, as lib/pq sends it to the server), and lib/pq's defaults
	 * where neither the URL nor a PG* variable gives a value (host localhost, sslmode
	 * require). */
	char **kw, **val;
	size_t n;
	char *table;    /* the `table` parameter, default "pulumi_state" */
	char *prefix;   /* every key's prefix: the URL's path + '/' ("" for none), as Pulumi's
			 * DIY backend prefixes a bucket with the URL's path */
	char *redacted; /* the URL without its password, sslpassword (messages, st_store_url) */
	char *password; /* the URL's password (NULL: none), to scrub from messages */
	char *host;     /* for messages: host (URL, PGHOST, PGHOSTADDR, else "localhost") */
	char *port;     /* for messages: port (URL, PGPORT, else "5432") */
	char *dbname;   /* for messages: database (URL, PGDATABASE, else NULL: the user's) */
	char *env_read; /* the PG* variables set in the environment, "PGHOST, PGPASSWORD" ("") */
} st_pg_url;

/* Parses `url` (postgres://[USER[:PASSWORD]@][HOST][:PORT][/DATABASE][?PARAMS]). ST_EINVAL
 * with a message that never holds the password. `u` is emptied first; free it with
 * st__pg_url_free, also after an error. */
int st__pg_url_parse(const char *url, st_pg_url *u, st_error *err);
void st__pg_url_free(st_pg_url *u);
/* The value given for a libpq keyword, or NULL. */
const char *st__pg_url_get(const st_pg_url *u, const char *kw);

/* A connection made as Pulumi makes it, kept and made again when lost. */
typedef struct st_pgc {
	st_pg_url u;
	PGconn *conn;
	char *where;        /* host:port, for messages */
	st_net_opts net;    /* st_set_net's settings when made: retries, back-off, hook */
	int retries;
	long backoff_ms;
} st_pgc;

/* Parses the URL and takes the process's network settings; connects nothing yet. Free with
 * st__pgc_free, also after an error. */
int st__pgc_init(st_pgc *c, const char *url, st_error *err);
/* A working connection in c->conn: the one there, or a new one (failures that may pass are
 * tried again with a back-off). Messages name the host, database, user and PG* variables set,
 * never a password. */
int st__pgc_connect(st_pgc *c, st_error *err);
/* A message of libpq or the server, first line only, without any password (new). */
char *st__pgc_msg(const st_pgc *c, const char *m);
/* Sleeps before attempt `attempt` (1, 2, ...): the back-off. */
void st__pgc_pause(const st_pgc *c, int attempt);
void st__pgc_free(st_pgc *c);

/* The store (store.c dispatches postgres:// here). */
int st__store_pg_open(st_store **out, const char *url, st_error *err);

#endif
