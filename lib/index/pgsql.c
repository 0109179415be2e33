/*
 * --sql on an index in PostgreSQL: it reads the index and nothing else, as on SQLite.
 *
 * A READ ONLY transaction does not stop a SELECT from acting on the server through the
 * functions it calls: cancelling or ending other sessions of the same role
 * (pg_cancel_backend, pg_terminate_backend), locks held for the session (pg_advisory_lock),
 * settings (set_config), NOTIFY (pg_notify), large objects, sleeping, reading the server's
 * files, running a query given as text (query_to_xml)... So nothing of the statement runs
 * before it is checked:
 *   1. PostgreSQL parses it (an unnamed prepared statement: parsed, never run), which gives its
 *      columns, then stores it in a temporary view, wrapped as SELECT q.c1, ... FROM (...) q:
 *      a stored tree names every function, operator, relation and type by OID, resolved;
 *   2. that tree (pg_rewrite.ev_action) is read here (st__ixpg_tree_refs) and what it names is
 *      looked up: relations must be the index's own tables and views (in the schema of its
 *      `meta`); functions PostgreSQL's own (built in, pg_catalog) and immutable (no effect,
 *      no database access: PostgreSQL's own word on them), casts, or the few stable or
 *      volatile ones of `allowed` (now, to_char, json_agg...: they read nothing else);
 *      operators and types built in (or the index's row types); and only the kinds of node a
 *      query needs (no cast to a domain, whose CHECK may call anything, no XML, no
 *      TABLESAMPLE, none this file does not know);
 *   3. only then the view runs, in the same transaction made READ ONLY, then rolled back:
 *      what runs is the tree that was checked (no name is looked up again).
 * All of it under statement_timeout: SQL_TIMEOUT_MS, or less if the URL or the role sets
 * less. The view is written, then rolled back: --sql needs a server that takes writes (not a
 * standby) and TEMPORARY on the database (PUBLIC has it unless revoked); without them it is
 * refused with the server's reason.
 */
#include "pgix.h"

#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

#include "store/dl.h" /* last: libpq through its table */

#define SQL_TIMEOUT_MS 60000
#define STR_(x) #x
#define STR(x) STR_(x)
#define VIEW "pg_temp.statetool_sql"
#define BUILTIN "16384" /* FirstNormalObjectId: every OID below is PostgreSQL's own */

/* ---- the tree ---- */

/* One token of nodeToString's text, cut as read.c's pg_strtok cuts it: '(' ')' '{' '}' alone,
 * else a run up to white space or one of those, a backslash taking the byte after it into the
 * token (outToken escapes a name's or a string's spaces, brackets and backslashes so). *esc:
 * the token has a backslash: a name or a string, never a field, a node or a number. NULL at
 * the end. */
static const char *token(const char **s, size_t *len, int *esc)
{
	const char *p = *s, *t;

	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	if (!*p)
		return NULL;
	t = p;
	*esc = 0;
	if (*p == '(' || *p == ')' || *p == '{' || *p == '}') {
		p++;
	} else {
		while (*p && !strchr(" \t\n(){}", *p)) {
			if (*p == '\\' && p[1]) {
				*esc = 1;
				p++;
			}
			p++;
		}
	}
	*len = (size_t)(p - t);
	*s = p;
	return t;
}

static int is(const char *t, size_t n, const char *word)
{
	return strlen(word) == n && !memcmp(t, word, n);
}

/* The nodes a query over the index is made of (PostgreSQL 15's names, and 16's
 * RTEPERMISSIONINFO: the permissions of a relation read, which every stored query of 16 holds;
 * its :relid is checked as a relation). Left out on purpose: COERCETODOMAIN (a domain's CHECK
 * may call any function), XMLEXPR, TABLEFUNC (XMLTABLE), TABLESAMPLECLAUSE, NEXTVALUEEXPR,
 * and every other node of a later version until it is looked at. */
static const char *const nodes[] = {
	"AGGREF", "ALIAS", "ARRAYCOERCEEXPR", "ARRAYEXPR", "BOOLEANTEST", "BOOLEXPR",
	"CASEEXPR", "CASETESTEXPR", "CASEWHEN", "COALESCEEXPR", "COERCEVIAIO", "COLLATEEXPR",
	"COMMONTABLEEXPR", "CONST", "CONVERTROWTYPEEXPR", "CTECYCLECLAUSE", "CTESEARCHCLAUSE",
	"DISTINCTEXPR", "FIELDSELECT", "FROMEXPR", "FUNCEXPR", "GROUPINGFUNC", "GROUPINGSET",
	"JOINEXPR", "MINMAXEXPR", "NAMEDARGEXPR", "NULLIFEXPR", "NULLTEST", "OPEXPR", "PARAM",
	"QUERY", "RANGETBLENTRY", "RANGETBLFUNCTION", "RANGETBLREF", "RELABELTYPE",
	"ROWCOMPAREEXPR", "ROWEXPR", "ROWMARKCLAUSE", "RTEPERMISSIONINFO", "SCALARARRAYOPEXPR",
	"SETOPERATIONSTMT",
	"SORTGROUPCLAUSE", "SQLVALUEFUNCTION", "SUBLINK", "SUBSCRIPTINGREF", "TARGETENTRY",
	"VAR", "WINDOWCLAUSE", "WINDOWFUNC", NULL};

static int has_typmod(const char *t, size_t n)
{
	for (size_t i = 0; i + 6 <= n; i++)
		if (!strncmp(t + i, "typmod", 6))
			return 1;
	return 0;
}

/* What a field's value names: IXPG_* or -1 (nothing to check). */
static int field_kind(const char *t, size_t n)
{
	static const struct {
		const char *name;
		int kind;
	} f[] = {{":relid", IXPG_REL},	      {":funcid", IXPG_FUNC},
		 {":aggfnoid", IXPG_FUNC},    {":winfnoid", IXPG_FUNC},
		 {":startInRangeFunc", IXPG_FUNC}, {":endInRangeFunc", IXPG_FUNC},
		 {":opno", IXPG_OPER},	      {":eqop", IXPG_OPER},
		 {":sortop", IXPG_OPER},      {":opnos", IXPG_OPER},
		 {":cycle_mark_neop", IXPG_OPER}};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (is(t, n, f[i].name))
			return f[i].kind;
	/* a type: every field named so (:vartype, :consttype, :resulttype, :aggargtypes,
	 * :coltypes...) but a typmod, which is no OID; an enum named so (:jointype, :rctype)
	 * gives small numbers, below any type but PostgreSQL's own: they pass */
	for (size_t i = 0; i + 3 <= n; i++)
		if (!strncmp(t + i, "typ", 3) || !strncmp(t + i, "Typ", 3))
			return has_typmod(t, n) ? -1 : IXPG_TYPE;
	return -1;
}

static void add_oid(ixpg_refs *out, int kind, const char *t, size_t n)
{
	st_buf *b = &out->oids[kind];
	if (n == 1 && *t == '0') /* none (no sort operator, no range function...) */
		return;
	if (b->len > 1)
		st_buf_addc(b, ',');
	st_buf_add(b, t, n);
}

static void check_node(ixpg_refs *out, const char *t, size_t n, int esc)
{
	for (size_t i = 0; !esc && nodes[i]; i++)
		if (is(t, n, nodes[i]))
			return;
	if (!*out->node)
		snprintf(out->node, sizeof(out->node), "%.*s", (int)n, t);
}

int st__ixpg_tree_refs(const char *tree, ixpg_refs *out)
{
	const char *s = tree, *t;
	size_t n;
	int esc, kind = -1, list = 0, oom = 0;

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < IXPG_NREFS; i++) {
		st_buf_init(&out->oids[i]);
		st_buf_addc(&out->oids[i], '{');
	}
	while ((t = token(&s, &n, &esc))) {
		if (!esc && *t == '{') { /* a node: its name next */
			kind = -1;
			t = token(&s, &n, &esc);
			check_node(out, t ? t : "(end)", t ? n : 5, t ? esc : 1);
		} else if (!esc && *t == ':') { /* a field: its value next */
			kind = field_kind(t, n);
			list = 0;
		} else if (kind < 0 || esc) {
			kind = -1;
		} else if (*t == '(' && !list) { /* a list of OIDs: (o 1 2) */
			list = 1;
		} else if (list == 1 && is(t, n, "o")) {
			list = 2;
		} else if ((!list || list == 2) && strspn(t, "0123456789") >= n) {
			add_oid(out, kind, t, n);
			kind = list ? kind : -1;
		} else {
			kind = -1; /* <>, a list of another kind, its end */
		}
	}
	for (int i = 0; i < IXPG_NREFS; i++) {
		st_buf_addc(&out->oids[i], '}');
		oom |= out->oids[i].oom;
	}
	return oom ? ST_ENOMEM : ST_OK;
}

void st__ixpg_refs_free(ixpg_refs *r)
{
	for (int i = 0; i < IXPG_NREFS; i++)
		st_buf_free(&r->oids[i]);
}

/* ---- the check ---- */

/* PostgreSQL's own functions that are not immutable and still read nothing but their
 * arguments (and the clock, the session's time zone, a random number): what queries over
 * the index use (json, dates, formats); every immutable one of pg_catalog is allowed too,
 * and every cast. Not here, on purpose: current_setting, version, to_regclass and the other
 * catalog readers, query_to_xml and the other functions that run SQL given as text,
 * txid_current (it takes a transaction ID), setseed. */
static const char allowed[] =
	"{age,anytextcat,array_to_json,array_to_string,clock_timestamp,concat,concat_ws,"
	"date_part,date_trunc,extract,format,generate_series,in_range,json_agg,"
	"json_build_array,json_build_object,json_object_agg,jsonb_agg,jsonb_build_array,"
	"jsonb_build_object,jsonb_object_agg,jsonb_path_exists_tz,jsonb_path_match_tz,"
	"jsonb_path_query_array_tz,jsonb_path_query_first_tz,jsonb_path_query_tz,length,"
	"make_timestamptz,now,overlaps,phraseto_tsquery,plainto_tsquery,quote_literal,"
	"quote_nullable,random,row_to_json,statement_timestamp,textanycat,timezone,to_char,"
	"to_date,to_json,to_jsonb,to_number,to_timestamp,to_tsquery,to_tsvector,"
	"transaction_timestamp,ts_headline,websearch_to_tsquery}";

/* The object identifier types (and their arrays): their input and output functions look
 * names up in the catalogs (every relation, role, schema... of the database), which a cast
 * from a number or a text runs without a function in the tree (audit28 D14). */
#define REG_TYPES "regclass,regrole,regnamespace,regproc,regprocedure,regoper,regoperator," \
	"regtype,regconfig,regdictionary,regcollation,regclass[],regrole[],regnamespace[]," \
	"regproc[],regprocedure[],regoper[],regoperator[],regtype[],regconfig[]," \
	"regdictionary[],regcollation[]"

/* The first thing the tree names that --sql does not run, described by PostgreSQL
 * ("function pg_sleep(double precision)"); no row: nothing. $1..$4: the relations,
 * functions, operators and types named, $5 the index's tables and views, $6 `allowed`. */
static const char check_sql[] =
	"WITH rel AS (SELECT c.oid FROM pg_class c WHERE c.relnamespace = (SELECT relnamespace "
	"FROM pg_class WHERE oid = to_regclass('meta')) AND c.relname = ANY ($5::text[]) "
	"UNION ALL SELECT oid FROM pg_class WHERE oid = to_regclass('" VIEW "')) "
	"SELECT coalesce(d, 'object ' || o) FROM ("
	"SELECT 1 AS k, o, pg_describe_object('pg_class'::regclass, o, 0) AS d "
	"FROM unnest($1::oid[]) o WHERE NOT EXISTS (SELECT FROM rel WHERE rel.oid = o) "
	"UNION ALL SELECT 2, o, pg_describe_object('pg_proc'::regclass, o, 0) "
	"FROM unnest($2::oid[]) o WHERE NOT EXISTS (SELECT FROM pg_proc p WHERE p.oid = o AND "
	"o < " BUILTIN " AND p.pronamespace = 'pg_catalog'::regnamespace AND (p.provolatile = "
	"'i' OR p.proname = ANY ($6::name[]) OR EXISTS (SELECT FROM pg_cast WHERE castfunc = o))) "
	"UNION ALL SELECT 3, o, pg_describe_object('pg_operator'::regclass, o, 0) "
	"FROM unnest($3::oid[]) o WHERE o >= " BUILTIN " "
	"UNION ALL SELECT 4, o, pg_describe_object('pg_type'::regclass, o, 0) "
	"FROM unnest($4::oid[]) o WHERE (o >= " BUILTIN " AND NOT EXISTS (SELECT FROM pg_type t "
	"LEFT JOIN pg_type e ON e.oid = t.typelem WHERE t.oid = o AND EXISTS (SELECT FROM rel "
	"WHERE rel.oid = t.typrelid OR rel.oid = e.typrelid))) OR o = ANY ('{" REG_TYPES "}'"
	"::regtype[])) x ORDER BY k LIMIT 1";

/* What the check could not do (not the statement's fault): ST_EIO, naming the index. */
static int cannot_check(st_ixpg *p, PGresult *r, st_error *err)
{
	const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
	char *msg = st__pgc_msg(&p->c, m ? m : PQerrorMessage(p->c.conn));
	int rc = st__err(err, ST_EIO, "index '%s': --sql cannot check its statement (in a "
			 "temporary view, rolled back): %s", p->c.u.redacted,
			 msg ? msg : "out of memory");
	free(msg);
	return rc;
}

/* The index's tables and views, as an array literal. */
static int index_names(st_buf *b)
{
	st_buf_addc(b, '{');
	for (int i = 0; st__ix_all_names[i]; i++)
		st_buf_printf(b, "%s%s", i ? "," : "", st__ix_all_names[i]);
	st_buf_addc(b, '}');
	return b->oom ? ST_ENOMEM : ST_OK;
}

static int refused_node(const char *node, st_error *err)
{
	static const char *const words[][2] = {{"COERCETODOMAIN", "a cast to a domain"},
					       {"XMLEXPR", "an XML function"},
					       {"TABLEFUNC", "XMLTABLE"},
					       {"TABLESAMPLECLAUSE", "TABLESAMPLE"},
					       {"NEXTVALUEEXPR", "a sequence"}};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(node, words[i][0]))
			return st__err(err, ST_EREFUSED, "--sql reads the index and nothing "
				       "else: %s is refused", words[i][1]);
	return st__err(err, ST_EREFUSED, "--sql reads the index and nothing else: the "
		       "statement has a part statetool does not know ('%s'), refused", node);
}

/* Step 2: the view's tree, and what it names looked up. */
static int check_view(st_ixpg *p, st_error *err)
{
	PGresult *r = NULL;
	ixpg_refs refs;
	st_buf names;
	const char *vals[6];
	int rc;

	st_buf_init(&names);
	memset(&refs, 0, sizeof(refs));
	r = PQexecParams(p->c.conn, "SELECT ev_action FROM pg_rewrite WHERE ev_class = '" VIEW
			 "'::regclass", 0, NULL, NULL, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
		rc = cannot_check(p, r, err);
		goto out;
	}
	if (st__ixpg_tree_refs(PQgetvalue(r, 0, 0), &refs) != ST_OK ||
	    index_names(&names) != ST_OK) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if (*refs.node) {
		rc = refused_node(refs.node, err);
		goto out;
	}
	for (int i = 0; i < IXPG_NREFS; i++)
		vals[i] = refs.oids[i].data;
	vals[4] = names.data;
	vals[5] = allowed;
	PQclear(r);
	r = PQexecParams(p->c.conn, check_sql, 6, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		rc = cannot_check(p, r, err);
	else if (PQntuples(r))
		rc = st__err(err, ST_EREFUSED, "--sql reads the index and nothing else: '%s' is "
			     "refused", PQgetvalue(r, 0, 0));
	else
		rc = ST_OK;
out:
	PQclear(r);
	st__ixpg_refs_free(&refs);
	st_buf_free(&names);
	return rc;
}

/* ---- the statement ---- */

/* The statement's first word, lowercased into w (at most n - 1 letters; "" for none), past
 * white space, comments, '(' and ';': what --sql says of a statement that is not a query. */
static void first_word(const char *s, char *w, size_t n)
{
	size_t i = 0;
	for (;;) {
		s += strspn(s, " \t\r\n\f(;");
		if (s[0] == '-' && s[1] == '-') {
			s += strcspn(s, "\n");
		} else if (s[0] == '/' && s[1] == '*') { /* nested, as PostgreSQL's are */
			int depth = 0;
			do {
				if (s[0] == '/' && s[1] == '*')
					depth++, s += 2;
				else if (s[0] == '*' && s[1] == '/')
					depth--, s += 2;
				else
					s++;
			} while (*s && depth);
		} else {
			break;
		}
	}
	for (; i + 1 < n && (*s | 32) >= 'a' && (*s | 32) <= 'z'; s++)
		w[i++] = (char)(*s | 32);
	w[i] = '\0';
}

/* A statement PostgreSQL parsed but cannot hold in a view (`r`: why): not a query. */
static int not_a_query(PGresult *r, const char *sql, int ncols, st_error *err)
{
	static const char writes[] = " insert update delete merge create drop alter truncate "
				     "grant revoke comment reindex cluster vacuum refresh "
				     "security import with ";
	const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	char w[16], pad[20];

	first_word(sql, w, sizeof(w));
	snprintf(pad, sizeof(pad), " %s ", w);
	/* 0A000: a WITH that writes; a WITH that is no query ends in a write; a SELECT without
	 * columns here: SELECT INTO */
	if ((state && !strcmp(state, "0A000")) || (*w && strstr(writes, pad)) ||
	    (!strcmp(w, "select") && !ncols))
		return st__err(err, ST_EREFUSED, "only read-only statements are allowed (the index "
			       "is opened read-only)");
	if (!ncols)
		return st__err(err, ST_EREFUSED, IX_ONLY_QUERIES);
	for (char *c = w; *c; c++)
		*c = (char)(*c & ~32);
	return st__err(err, ST_EREFUSED, "only queries are allowed (SELECT, VALUES, TABLE, WITH "
		       "... SELECT): '%s' is refused", w);
}

/* Step 1: the statement parsed (never run) into *desc, its columns. */
static int describe(st_ixpg *p, const char *sql, PGresult **desc, st_error *err)
{
	PGresult *r = PQprepare(p->c.conn, "", sql, 0, NULL);
	int rc = ST_OK;

	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
		rc = m && strstr(m, "multiple commands")
			     ? st__err(err, ST_EINVAL, "one SQL statement at a time")
			     : st__ixpg_fail(p, r, "query failed", err);
		PQclear(r);
		return rc;
	}
	PQclear(r);
	*desc = PQdescribePrepared(p->c.conn, "");
	if (PQresultStatus(*desc) != PGRES_COMMAND_OK)
		return st__ixpg_fail(p, *desc, "query failed", err);
	for (int c = 0; rc == ST_OK && c < PQnfields(*desc); c++)
		if (PQftype(*desc, c) == 2278) /* void: a function called for what it does */
			rc = st__err(err, ST_EREFUSED, "--sql reads the index and nothing else: "
				     "column '%s' has no value (void): a function called for what "
				     "it does is refused", PQfname(*desc, c));
	return rc;
}

/* The statement, without the semicolons and white space that end it, wrapped into the view:
 * its columns renamed c1, c2... (two of one name are no view's), a record or cstring made
 * text (the same bytes: its output function), which no view's column may be. The statement
 * parsed alone, so its brackets, quotes and comments close within it ("--" at the end: the
 * new line ends it), and it stays the one subquery. */
static int view_sql(st_buf *b, const char *sql, const PGresult *desc)
{
	size_t len = strlen(sql);
	int n = PQnfields(desc);

	while (len && strchr(" \t\r\n\f;", sql[len - 1]))
		len--;
	st_buf_adds(b, "CREATE TEMPORARY VIEW " VIEW " AS SELECT");
	for (int c = 0; c < n; c++) {
		Oid t = PQftype(desc, c);
		int text = t == 2249 || t == 2287 || t == 2275; /* record, record[], cstring */
		st_buf_printf(b, "%s q.c%d%s AS c%d", c ? "," : "", c + 1, text ? "::text" : "",
			      c + 1);
	}
	st_buf_adds(b, " FROM (\n");
	st_buf_add(b, sql, len);
	st_buf_adds(b, "\n) AS q");
	for (int c = 0; c < n; c++)
		st_buf_printf(b, "%sc%d", c ? ", " : " (", c + 1);
	st_buf_adds(b, n ? ")" : "");
	return b->oom ? ST_ENOMEM : ST_OK;
}

static int make_view(st_ixpg *p, const char *sql, const PGresult *desc, st_error *err)
{
	st_buf b;
	PGresult *r;
	int rc;

	st_buf_init(&b);
	if (view_sql(&b, sql, desc) != ST_OK) {
		st_buf_free(&b);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	r = PQexecParams(p->c.conn, b.data, 0, NULL, NULL, NULL, NULL, 0);
	st_buf_free(&b);
	const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	if (PQresultStatus(r) == PGRES_COMMAND_OK)
		rc = ST_OK;
	else if (state && (!strcmp(state, "42601") || !strcmp(state, "0A000")))
		rc = not_a_query(r, sql, PQnfields(desc), err);
	else if (state && (!strcmp(state, "42501") || !strncmp(state, "25", 2)))
		rc = cannot_check(p, r, err); /* no TEMPORARY; a standby */
	else
		rc = st__ixpg_fail(p, r, "query failed", err);
	PQclear(r);
	return rc;
}

/* Step 3: the checked view, read-only; `limit`: the statement_timeout in force. */
static int run_view(st_ixpg *p, const PGresult *desc, const char *limit, st_index_row_fn row,
		    void *ctx, st_error *err)
{
	PGresult *r = PQexecParams(p->c.conn, "SELECT * FROM " VIEW, 0, NULL, NULL, NULL, NULL, 0);
	const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
	int rc;

	if (PQresultStatus(r) == PGRES_TUPLES_OK)
		rc = st__ixpg_rows(r, desc, row, ctx, err);
	else if (state && !strcmp(state, "57014") && m && strstr(m, "timeout"))
		rc = st__err(err, ST_EIO, "index '%s': the query was stopped at its time limit "
			     "(statement_timeout %s: --sql on PostgreSQL runs at most %d s, less if "
			     "the URL or the role sets less)", p->c.u.redacted, limit,
			     SQL_TIMEOUT_MS / 1000);
	else
		rc = st__ixpg_fail(p, r, "query failed", err);
	PQclear(r);
	return rc;
}

/* Opens the transaction of the check and the run; *limit gets the statement_timeout set. */
static int begin(st_ixpg *p, char *limit, size_t n, st_error *err)
{
	PGresult *r;
	int rc = st__pgc_connect(&p->c, err);

	if (rc != ST_OK)
		return rc;
	r = PQexec(p->c.conn, "BEGIN TRANSACTION READ WRITE");
	if (PQresultStatus(r) != PGRES_COMMAND_OK) { /* a standby */
		rc = cannot_check(p, r, err);
		PQclear(r);
		return rc;
	}
	PQclear(r);
	r = PQexec(p->c.conn, "SELECT set_config('statement_timeout', CASE WHEN setting::bigint "
		   "BETWEEN 1 AND " STR(SQL_TIMEOUT_MS) " THEN setting ELSE '" STR(SQL_TIMEOUT_MS)
		   "' END, true) FROM pg_settings WHERE name = 'statement_timeout'");
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
		rc = cannot_check(p, r, err);
	else
		snprintf(limit, n, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	return rc;
}

int st__ixpg_sql(st_ixpg *p, const char *sql, st_index_row_fn row, void *ctx, st_error *err)
{
	PGresult *desc = NULL;
	char w[2], limit[32] = "";
	int rc;

	first_word(sql, w, sizeof(w));
	if (!*w && !sql[strspn(sql, " \t\r\n\f;")])
		return st__err(err, ST_EINVAL, "no SQL statement");
	if ((rc = begin(p, limit, sizeof(limit), err)) != ST_OK)
		return rc;
	if ((rc = describe(p, sql, &desc, err)) == ST_OK &&
	    (rc = make_view(p, sql, desc, err)) == ST_OK && (rc = check_view(p, err)) == ST_OK &&
	    (rc = st__ixpg_exec(p, "SET TRANSACTION READ ONLY", 0, NULL, NULL,
				"cannot make the transaction read-only", err)) == ST_OK)
		rc = run_view(p, desc, limit, row, ctx, err);
	st__ixpg_rollback(p);
	PQclear(desc);
	return rc;
}
