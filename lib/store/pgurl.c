/*
 * postgres:// URLs as Pulumi's DIY backend reads them (pkg/backend/diy/postgres/bucket.go on
 * lib/pq), turned into libpq's keyword/value arrays:
 *   - `table` (default pulumi_state) names the table and is removed; every other query
 *     parameter is a connection parameter: a libpq keyword is passed as it is, any other name
 *     (search_path, timezone, ...) is a server setting, which lib/pq sends at start-up and
 *     libpq takes as "-c NAME=VALUE" in `options`; of a parameter given twice the first
 *     value counts (url.Values.Get) and an empty value is left out (lib/pq's accrue);
 *   - user, password, host, port and database from the URL (percent-decoded as Go decodes
 *     them); what the URL leaves out, libpq reads from PGHOST, PGPORT, PGUSER, PGPASSWORD,
 *     PGDATABASE, PGSSLMODE, ... and ~/.pgpass itself, as lib/pq does;
 *   - lib/pq's defaults where it differs from libpq and nothing else gives a value: host
 *     localhost (not a Unix socket) and sslmode require (not prefer);
 *   - the URL's path is also a key prefix: Pulumi's DIY backend wraps every bucket but file://
 *     in blob.PrefixedBucket(path), so postgres://h/db keeps its objects as "db/.pulumi/...".
 * Nothing here puts the password into a message.
 */
#include "pg.h"
#include "http.h"

#include <ctype.h>
#include <libpq-fe.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dl.h" /* last: libpq through its table */

/* The PG* variables libpq reads, for messages ("which variables were read"). */
static const char *const pg_env[] = {
	"PGHOST",    "PGHOSTADDR",  "PGPORT",         "PGDATABASE",        "PGUSER",
	"PGPASSWORD", "PGPASSFILE", "PGSERVICE",      "PGSERVICEFILE",     "PGOPTIONS",
	"PGAPPNAME", "PGSSLMODE",   "PGREQUIRESSL",   "PGSSLCERT",         "PGSSLKEY",
	"PGSSLROOTCERT", "PGSSLCRL", "PGSSLSNI",      "PGCONNECT_TIMEOUT", "PGCLIENTENCODING",
	"PGTARGETSESSIONATTRS", "PGGSSENCMODE", "PGKRBSRVNAME", "PGTZ", "PGSYSCONFDIR",
};

void st__pg_url_free(st_pg_url *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->n; i++) {
		free(u->kw[i]);
		if (u->val[i])
			sodium_memzero(u->val[i], strlen(u->val[i]));
		free(u->val[i]);
	}
	free(u->kw);
	free(u->val);
	if (u->password)
		sodium_memzero(u->password, strlen(u->password));
	free(u->password);
	free(u->table);
	free(u->prefix);
	free(u->redacted);
	free(u->host);
	free(u->port);
	free(u->dbname);
	free(u->env_read);
	memset(u, 0, sizeof(*u));
}

const char *st__pg_url_get(const st_pg_url *u, const char *kw)
{
	const char *v = NULL;
	for (size_t i = 0; i < u->n; i++)
		if (!strcmp(u->kw[i], kw))
			v = u->val[i]; /* the last one wins, as in a connection string */
	return v;
}

/* Sets a keyword (replacing an earlier value). The strings are copied. */
static int set_kw(st_pg_url *u, const char *kw, const char *val, size_t vlen)
{
	char *v = strndup(val, vlen), *k;
	for (size_t i = 0; i < u->n; i++) {
		if (!strcmp(u->kw[i], kw)) {
			if (!v)
				return -1;
			free(u->val[i]);
			u->val[i] = v;
			return 0;
		}
	}
	char **nk = realloc(u->kw, (u->n + 2) * sizeof(*nk));
	if (nk)
		u->kw = nk;
	char **nv = realloc(u->val, (u->n + 2) * sizeof(*nv));
	if (nv)
		u->val = nv;
	k = strdup(kw);
	if (!nk || !nv || !k || !v) {
		free(k);
		free(v);
		return -1;
	}
	u->kw[u->n] = k;
	u->val[u->n] = v;
	u->n++;
	u->kw[u->n] = NULL;
	u->val[u->n] = NULL;
	return 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Go's unescaping: %XX (both hex digits required); with `plus`, '+' is a space (a query).
 * New string, or NULL (*bad set when an escape is malformed). */
static char *unescape(const char *p, size_t n, int plus, int *bad)
{
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '%') {
			int a = i + 1 < n ? hexval((unsigned char)p[i + 1]) : -1;
			int b = i + 2 < n ? hexval((unsigned char)p[i + 2]) : -1;
			if (a < 0 || b < 0) {
				*bad = 1;
				free(out);
				return NULL;
			}
			*o++ = (char)(a * 16 + b);
			i += 2;
		} else if (plus && p[i] == '+') {
			*o++ = ' ';
		} else {
			*o++ = p[i];
		}
	}
	*o = '\0';
	return out;
}

static int valid_table(const char *t)
{
	size_t n = strlen(t);
	if (!n || n > 48 || !(isalpha((unsigned char)t[0]) || t[0] == '_'))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char)t[i]) || t[i] == '_'))
			return 0;
	return 1;
}

/* Is `kw` one of libpq's connection keywords? */
static int libpq_keyword(const char *kw)
{
	PQconninfoOption *opts = PQconndefaults(), *o;
	int found = 0;
	if (!opts)
		return -1;
	for (o = opts; o->keyword; o++)
		if (!strcmp(o->keyword, kw))
			found = 1;
	PQconninfoFree(opts);
	return found;
}

/* Appends "-c name=value" (spaces and backslashes escaped, as libpq's options want) to the
 * `options` keyword. */
static int add_setting(st_pg_url *u, const char *name, const char *value)
{
	const char *old = st__pg_url_get(u, "options");
	st_buf b;
	int rc;

	st_buf_init(&b);
	if (old && *old)
		st_buf_printf(&b, "%s ", old);
	st_buf_adds(&b, "-c ");
	for (const char *s = name; *s; s++) {
		if (*s == ' ' || *s == '\\')
			st_buf_addc(&b, '\\');
		st_buf_addc(&b, *s);
	}
	st_buf_addc(&b, '=');
	for (const char *s = value; *s; s++) {
		if (*s == ' ' || *s == '\\')
			st_buf_addc(&b, '\\');
		st_buf_addc(&b, *s);
	}
	if (b.oom) {
		st_buf_free(&b);
		return -1;
	}
	rc = set_kw(u, "options", b.data ? b.data : "", b.len);
	st_buf_free(&b);
	return rc;
}

/* lib/pq puts the URL's user, password, host, port and dbname and then each query parameter
 * into one connection string as k='v' (' and \ escaped), sorts it and lets the last of a key
 * win: a query parameter naming one of those replaces the URL's value only if it sorts after
 * it. Is `q` the one lib/pq keeps over `url`? */
static int sorts_after(const char *url, const char *q)
{
	st_buf a, b;
	int after;

	st_buf_init(&a);
	st_buf_init(&b);
	for (const char *s = url; *s; s++) {
		if (*s == '\'' || *s == '\\')
			st_buf_addc(&a, '\\');
		st_buf_addc(&a, *s);
	}
	for (const char *s = q; *s; s++) {
		if (*s == '\'' || *s == '\\')
			st_buf_addc(&b, '\\');
		st_buf_addc(&b, *s);
	}
	st_buf_addc(&a, '\'');
	st_buf_addc(&b, '\'');
	/* out of memory: the query's value, as before lib/pq's rule was followed */
	after = a.oom || b.oom || strcmp(b.data, a.data) > 0;
	if (a.data)
		sodium_memzero(a.data, a.len);
	if (b.data)
		sodium_memzero(b.data, b.len);
	st_buf_free(&a);
	st_buf_free(&b);
	return after;
}

/* One query parameter (name and value decoded), the first of its name (Go's url.Values.Get,
 * which Pulumi's table and lib/pq's parameters use). */
static int query_param(st_pg_url *u, const char *name, const char *value, st_error *err)
{
	static const char *const from_url[] = {"user", "password", "host", "port", "dbname"};
	const char *old;
	int k;
	if (!strcmp(name, "table")) {
		if (!*value) /* Pulumi: "" is the default table */
			return ST_OK;
		if (!valid_table(value))
			return st__err(err, ST_EINVAL,
				       "postgres: table name '%s' is not a plain SQL name (a letter or "
				       "'_', then letters, digits or '_', at most 48)",
				       value);
		free(u->table);
		return (u->table = strdup(value)) ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
	}
	if (!*name || !*value) /* lib/pq's accrue leaves an empty value out */
		return ST_OK;
	for (size_t i = 0; i < sizeof(from_url) / sizeof(from_url[0]); i++)
		if (!strcmp(name, from_url[i]) && (old = st__pg_url_get(u, name)) &&
		    !sorts_after(old, value))
			return ST_OK;
	if ((k = libpq_keyword(name)) < 0)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (k && !strcmp(name, "password")) {
		free(u->password);
		if (!(u->password = strdup(value)))
			return st__err(err, ST_ENOMEM, "out of memory");
	}
	if (k ? set_kw(u, name, value, strlen(value)) : add_setting(u, name, value))
		return st__err(err, ST_ENOMEM, "out of memory");
	return ST_OK;
}

/* Did the query before `end` have a parameter named `name` (decoded)? */
static int seen_before(const char *q, const char *end, const char *name)
{
	int found = 0;
	while (!found && q < end) {
		size_t n = strcspn(q, "&;");
		const char *eq = memchr(q, '=', n);
		int bad = 0;
		char *prev = unescape(q, eq ? (size_t)(eq - q) : n, 1, &bad);
		found = prev && !strcmp(prev, name);
		free(prev);
		q += n + (q[n] != '\0');
	}
	return found;
}

static int parse_query(st_pg_url *u, const char *q, st_buf *red, st_error *err)
{
	const char *start = q;
	int rc = ST_OK;
	while (rc == ST_OK && *q) {
		size_t n = strcspn(q, "&;");
		const char *eq = memchr(q, '=', n);
		size_t nl = eq ? (size_t)(eq - q) : n;
		int bad = 0;
		char *name = unescape(q, nl, 1, &bad);
		char *value = eq ? unescape(eq + 1, n - nl - 1, 1, &bad) : strdup("");
		if (bad)
			rc = st__err(err, ST_EINVAL, "postgres: the URL's query has a malformed %%-escape");
		else if (!name || !value)
			rc = st__err(err, ST_ENOMEM, "out of memory");
		else if (q[n] == ';')
			rc = st__err(err, ST_EINVAL, "postgres: the URL's query has a ';' (Go refuses it)");
		else if (!seen_before(start, q, name))
			rc = query_param(u, name, value, err);
		/* the redacted URL: without the secrets (the client key's sslpassword too) */
		if (rc == ST_OK && n && name && strcmp(name, "password") &&
		    strcmp(name, "sslpassword")) {
			st_buf_addc(red, red->len && memchr(red->data, '?', red->len) ? '&' : '?');
			st_buf_add(red, q, n);
		}
		free(name);
		if (value)
			sodium_memzero(value, strlen(value));
		free(value);
		q += n;
		if (*q)
			q++;
	}
	return rc;
}

/* The host and port of an authority (after any userinfo): "h", "h:p", "[v6]:p". */
static int parse_hostport(st_pg_url *u, const char *a, size_t n, st_error *err)
{
	const char *colon = NULL;
	size_t hl = n;
	if (n && a[0] == '[') {
		const char *close = memchr(a, ']', n);
		if (!close)
			return st__err(err, ST_EINVAL, "postgres: the URL's host has a '[' without ']'");
		if ((size_t)(close - a) + 1 < n) {
			if (close[1] != ':')
				return st__err(err, ST_EINVAL, "postgres: the URL's host is malformed");
			colon = close + 1;
		}
		if (set_kw(u, "host", a + 1, (size_t)(close - a) - 1))
			return st__err(err, ST_ENOMEM, "out of memory");
	} else {
		colon = memchr(a, ':', n);
		hl = colon ? (size_t)(colon - a) : n;
		if (hl && set_kw(u, "host", a, hl))
			return st__err(err, ST_ENOMEM, "out of memory");
	}
	if (colon) {
		size_t pl = n - (size_t)(colon + 1 - a);
		for (size_t i = 0; i < pl; i++)
			if (!isdigit((unsigned char)colon[1 + i]))
				return st__err(err, ST_EINVAL, "postgres: the URL's port is not a number");
		if (pl && set_kw(u, "port", colon + 1, pl))
			return st__err(err, ST_ENOMEM, "out of memory");
	}
	return ST_OK;
}

/* user[:password] (decoded); the redacted URL keeps the user only. */
static int parse_userinfo(st_pg_url *u, const char *p, size_t n, st_buf *red, st_error *err)
{
	const char *colon = memchr(p, ':', n);
	size_t ul = colon ? (size_t)(colon - p) : n;
	int bad = 0;
	char *user = unescape(p, ul, 0, &bad), *pw = NULL;
	int rc = ST_OK;

	if (colon)
		pw = unescape(colon + 1, n - ul - 1, 0, &bad);
	if (bad)
		rc = st__err(err, ST_EINVAL, "postgres: the URL's user or password has a malformed "
					     "%%-escape");
	else if (!user || (colon && !pw))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	else if ((*user && set_kw(u, "user", user, strlen(user))) ||
		 (pw && set_kw(u, "password", pw, strlen(pw))))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK && pw && *pw) {
		u->password = pw;
		pw = NULL;
	}
	if (rc == ST_OK && ul) {
		st_buf_add(red, p, ul);
		st_buf_addc(red, '@');
	}
	free(user);
	if (pw)
		sodium_memzero(pw, strlen(pw));
	free(pw);
	return rc;
}

/* The defaults and the facts for messages, once the URL is read. */
static int finish(st_pg_url *u, st_error *err)
{
	const char *h = st__pg_url_get(u, "host"), *ha = st__pg_url_get(u, "hostaddr");
	const char *p = st__pg_url_get(u, "port"), *db = st__pg_url_get(u, "dbname");
	st_net_opts net;
	st_buf env;
	char tmo[32];

	if (!h && !ha && !getenv("PGHOST") && !getenv("PGHOSTADDR") && set_kw(u, "host", "localhost", 9))
		return st__err(err, ST_ENOMEM, "out of memory");
	if (!st__pg_url_get(u, "sslmode") && !getenv("PGSSLMODE") && !getenv("PGREQUIRESSL") &&
	    set_kw(u, "sslmode", "require", 7))
		return st__err(err, ST_ENOMEM, "out of memory");
	st__net_current(&net);
	snprintf(tmo, sizeof(tmo), "%ld",
		 net.connect_timeout_ms ? (net.connect_timeout_ms + 999) / 1000 : 10);
	if (!st__pg_url_get(u, "connect_timeout") && !getenv("PGCONNECT_TIMEOUT") &&
	    set_kw(u, "connect_timeout", tmo, strlen(tmo)))
		return st__err(err, ST_ENOMEM, "out of memory");
	if (set_kw(u, "fallback_application_name", "statetool", 9))
		return st__err(err, ST_ENOMEM, "out of memory");
	h = st__pg_url_get(u, "host");
	if (!h && !(h = getenv("PGHOST")) && !(h = ha) && !(h = getenv("PGHOSTADDR")))
		h = "localhost";
	if (!p && !(p = getenv("PGPORT")))
		p = "5432";
	if (!db)
		db = getenv("PGDATABASE");
	u->host = strdup(h);
	u->port = strdup(p);
	u->dbname = db ? strdup(db) : NULL;
	if (!u->table)
		u->table = strdup("pulumi_state");
	st_buf_init(&env);
	for (size_t i = 0; i < sizeof(pg_env) / sizeof(pg_env[0]); i++)
		if (getenv(pg_env[i]))
			st_buf_printf(&env, "%s%s", env.len ? ", " : "", pg_env[i]);
	u->env_read = env.len ? st_buf_take(&env, NULL) : strdup("");
	st_buf_free(&env);
	if (!u->host || !u->port || (db && !u->dbname) || !u->table || !u->env_read)
		return st__err(err, ST_ENOMEM, "out of memory");
	return ST_OK;
}

int st__pg_url_parse(const char *url, st_pg_url *u, st_error *err)
{
	const char *p, *auth, *path, *query;
	size_t alen, plen;
	st_buf red;
	int rc = ST_OK, bad = 0;

	memset(u, 0, sizeof(*u));
	if (strncmp(url, "postgres://", 11))
		return st__err(err, ST_EINVAL, "postgres: not a postgres:// URL");
	if ((rc = st__pq_load("postgres", err)) != ST_OK) /* the library, on first use */
		return rc;
	p = url + 11;
	auth = p;
	alen = strcspn(p, "/?#");
	path = auth + alen;
	plen = *path == '/' ? strcspn(path, "?#") : 0;
	query = path + plen;
	if (*query == '#' || strchr(query, '#'))
		return st__err(err, ST_EINVAL, "postgres: the URL has a '#' fragment");
	for (const char *c = url; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return st__err(err, ST_EINVAL, "postgres: the URL has a control character");
	st_buf_init(&red);
	st_buf_adds(&red, "postgres://");
	if (!(u->kw = calloc(1, sizeof(char *))) || !(u->val = calloc(1, sizeof(char *))))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	/* the userinfo ends at the last '@' of the authority, as in Go */
	const char *at = NULL;
	for (const char *c = auth; c < auth + alen; c++)
		if (*c == '@')
			at = c;
	if (rc == ST_OK && at)
		rc = parse_userinfo(u, auth, (size_t)(at - auth), &red, err);
	const char *hp = at ? at + 1 : auth;
	size_t hpl = (size_t)(auth + alen - hp);
	if (rc == ST_OK)
		rc = parse_hostport(u, hp, hpl, err);
	st_buf_add(&red, hp, hpl);
	if (rc == ST_OK && plen) {
		char *dec = unescape(path, plen, 0, &bad), *t;
		st_buf_add(&red, path, plen);
		if (bad)
			rc = st__err(err, ST_EINVAL, "postgres: the URL's path has a malformed %%-escape");
		else if (!dec)
			rc = st__err(err, ST_ENOMEM, "out of memory");
		/* lib/pq: the database is the path without its first '/'; Pulumi: the key prefix is
		 * the path without its leading '/'s, with a '/' added */
		if (rc == ST_OK && dec[1] && set_kw(u, "dbname", dec + 1, strlen(dec + 1)))
			rc = st__err(err, ST_ENOMEM, "out of memory");
		for (t = dec; rc == ST_OK && *t == '/'; t++)
			;
		if (rc == ST_OK && *t)
			u->prefix = st_asprintf("%s%s", t, t[strlen(t) - 1] == '/' ? "" : "/");
		free(dec);
	}
	if (rc == ST_OK && *query == '?')
		rc = parse_query(u, query + 1, &red, err);
	if (rc == ST_OK && !u->prefix)
		u->prefix = strdup("");
	if (rc == ST_OK && u->prefix && *u->prefix) {
		char *probe = st_asprintf("%sx", u->prefix);
		if (probe && !st_store_key_valid(probe))
			rc = st__err(err, ST_EINVAL,
				     "postgres: the URL's path '%s' cannot be a key prefix (an empty, "
				     "'.' or '..' segment, a backslash or a control character)",
				     u->prefix);
		free(probe);
	}
	if (rc == ST_OK && !u->prefix)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK)
		rc = finish(u, err);
	if (rc == ST_OK && !(u->redacted = st_buf_take(&red, NULL)))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	st_buf_free(&red);
	return rc;
}

/* ---- connections ---- */

/* ---- messages ---- */

/* Replaces every occurrence of `secret` in s (in place) with "***" (never longer). */
static void scrub_one(char *s, const char *secret)
{
	size_t n = secret ? strlen(secret) : 0;
	char *p;
	if (n < 3)
		return;
	while ((p = strstr(s, secret))) {
		memcpy(p, "***", 3);
		memmove(p + 3, p + n, strlen(p + n) + 1);
	}
}

/* A message of libpq or the server, cleaned and without secrets (new). */
char *st__pgc_msg(const st_pgc *pg, const char *m)
{
	const char *p;
	char *s;
	size_t n;

	if (!m || !*m)
		m = "unknown error";
	/* "connection to server at "h", port p failed: FATAL:  message": the last attempt's */
	while ((p = strstr(m, "failed: ")) && strstr(m, "connection to server"))
		m = p + 8;
	if (!strncmp(m, "FATAL:  ", 8) || !strncmp(m, "ERROR:  ", 8))
		m += 8;
	n = strcspn(m, "\n");
	while (n && (m[n - 1] == ' ' || m[n - 1] == '\t'))
		n--;
	if (!(s = strndup(m, n)))
		return NULL;
	scrub_one(s, pg->u.password);
	scrub_one(s, st__pg_url_get(&pg->u, "sslpassword"));
	scrub_one(s, getenv("PGPASSWORD"));
	return s;
}

/* "(PG* variables set: PGHOST, PGPASSWORD)" or "(no PG* variable set)" (static text). */
static const char *env_note(const st_pgc *pg, char *buf, size_t n)
{
	if (*pg->u.env_read)
		snprintf(buf, n, "PG* variables set: %s", pg->u.env_read);
	else
		snprintf(buf, n, "no PG* variable set");
	return buf;
}

/* ---- connections ---- */

/* The code of a failed connection, from libpq's words (it gives no SQLSTATE there), and
 * whether another attempt may succeed. */
static int conn_code(const char *m, int *transient)
{
	*transient = 0;
	if (strstr(m, "password authentication failed") || strstr(m, "no password supplied") ||
	    strstr(m, "authentication failed") || strstr(m, "pg_hba.conf") ||
	    strstr(m, "SASL authentication"))
		return ST_EAUTH;
	if (strstr(m, "database \"") && strstr(m, "does not exist"))
		return ST_ENOTFOUND;
	if (strstr(m, "role \"") && strstr(m, "does not exist"))
		return ST_EAUTH;
	if (strstr(m, "Connection refused") || strstr(m, "timeout expired") ||
	    strstr(m, "server closed the connection unexpectedly") ||
	    strstr(m, "the database system is starting up") ||
	    strstr(m, "the database system is shutting down") ||
	    strstr(m, "too many clients") || strstr(m, "Connection reset") ||
	    strstr(m, "No route to host") || strstr(m, "Network is unreachable"))
		*transient = 1;
	return ST_EIO;
}

static void pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static long backoff(const st_pgc *pg, int attempt)
{
	long ms = pg->backoff_ms;
	for (int i = 1; i < attempt && ms < 5000; i++)
		ms *= 2;
	if (ms > 5000)
		ms = 5000;
	return ms / 2 + (long)randombytes_uniform((uint32_t)(ms / 2 + 1));
}

static void no_notices(void *ctx, const char *message)
{
	(void)ctx;
	(void)message;
}

/* One attempt; the message (without the closing note) goes to err. */
static int connect_once(st_pgc *pg, int *transient, st_error *err)
{
	const char *user = st__pg_url_get(&pg->u, "user");
	const char *db = pg->u.dbname;
	char *m;
	int code;

	PQfinish(pg->conn);
	pg->conn = PQconnectdbParams((const char *const *)pg->u.kw,
				     (const char *const *)pg->u.val, 0);
	if (!pg->conn)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (PQstatus(pg->conn) == CONNECTION_OK) {
		/* the library never prints: libpq's default prints the server's notices
		 * ("WARNING: there is no transaction in progress") on stderr */
		PQsetNoticeProcessor(pg->conn, no_notices, NULL);
		return ST_OK;
	}
	if (!(m = st__pgc_msg(pg, PQerrorMessage(pg->conn))))
		return st__err(err, ST_ENOMEM, "out of memory");
	code = conn_code(m, transient);
	if (!user)
		user = getenv("PGUSER");
	st__err(err, code, "postgres: cannot connect to %s (database '%s', user '%s'): %s%s",
		pg->where, db ? db : user ? user : "(default)", user ? user : "(default)", m,
		strstr(m, "does not support SSL")
			? "; Pulumi (lib/pq) requires SSL unless sslmode=disable is in the URL or "
			  "PGSSLMODE"
			: "");
	free(m);
	PQfinish(pg->conn);
	pg->conn = NULL;
	return code;
}

/* A working connection: the one there, or a new one (connection failures that may pass are
 * tried again, with a back-off). The message ends with the attempts and the PG* variables
 * that were set. */
int st__pgc_connect(st_pgc *pg, st_error *err)
{
	char note[512];
	st_error local;
	int attempt = 0, rc, transient;

	if (pg->conn && PQstatus(pg->conn) == CONNECTION_OK)
		return ST_OK;
	for (;;) {
		st_error_clear(&local);
		rc = connect_once(pg, &transient, &local);
		if (rc == ST_OK || !transient || attempt >= pg->retries)
			break;
		st__pgc_pause(pg, ++attempt);
	}
	if (rc == ST_ENOMEM)
		return st__err_copy(err, &local);
	if (rc != ST_OK) {
		env_note(pg, note, sizeof(note));
		if (attempt)
			return st__err(err, rc, "%s (%d attempts; %s)", local.message, attempt + 1,
				       note);
		return st__err(err, rc, "%s (%s)", local.message, note);
	}
	return ST_OK;
}

void st__pgc_pause(const st_pgc *pg, int attempt)
{
	pause_ms(backoff(pg, attempt));
}

int st__pgc_init(st_pgc *pg, const char *url, st_error *err)
{
	int rc;
	memset(pg, 0, sizeof(*pg));
	if ((rc = st__pg_url_parse(url, &pg->u, err)) != ST_OK)
		return rc;
	st__net_current(&pg->net);
	pg->retries = pg->net.retries >= 0 ? pg->net.retries : 4;
	pg->backoff_ms = pg->net.backoff_ms ? pg->net.backoff_ms : 200;
	pg->where = strchr(pg->u.host, ':') ? st_asprintf("[%s]:%s", pg->u.host, pg->u.port)
					    : st_asprintf("%s:%s", pg->u.host, pg->u.port);
	return pg->where ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}

void st__pgc_free(st_pgc *pg)
{
	PQfinish(pg->conn);
	st__pg_url_free(&pg->u);
	free(pg->where);
	memset(pg, 0, sizeof(*pg));
}
