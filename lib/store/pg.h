/*
 * The PostgreSQL store (postgres://, private to lib/store): Pulumi's DIY backend on PostgreSQL
 * (pkg/backend/diy/postgres), read as Pulumi reads it. See doc/DESIGN.md, "Storage",
 * "The PostgreSQL store".
 */
#ifndef ST_STORE_PG_H
#define ST_STORE_PG_H

#include "internal.h"

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
	char *redacted; /* the URL without its password (for messages and st_store_url) */
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

/* The store (store.c dispatches postgres:// here). */
int st__store_pg_open(st_store **out, const char *url, st_error *err);

#endif
