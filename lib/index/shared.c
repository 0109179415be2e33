/*
 * What both index engines share (ix.h): the schema, the rows of a stack, the queries.
 */
#include "ix.h"
#include "store/store_impl.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const st__ix_table_names[IX_NTABLES] = {"urns", "resource_rows", "edge_rows",
						    "providers", "pending", "secrets"};
const int st__ix_table_ncols[IX_NTABLES] = {3, 22, 5, 6, 3, 3};

/* {ID}: the stacks' key; {INT}: an integer; {VIEW}: a view made once; {WR}: WITHOUT ROWID on
 * SQLite. Everything else is the same SQL on both.
 *
 * Schema 3: a stack's URNs are kept once, in `urns` (numbered per stack); resource_rows and
 * edge_rows refer to them by number (edges were most of an index that kept full URNs, larger
 * than the states it indexed). The views `resources` and `edges` give the rows with their URNs,
 * the columns of schema 2, for the queries and --sql. A URN is numbered within its stack, so a
 * stack's rows are still all under its stack_id: written and removed in one transaction with
 * nothing shared between stacks (updaters of different stacks never touch the same rows).
 *
 * Schema 6: a protected resource's row also has its URN, parent and provider reference as text
 * (protected_urn, protected_parent, protected_provider; NULL on every other row), and on SQLite
 * the partial index of protected rows covers every column --protected prints, so that query
 * reads that index alone: no row and no URN looked up per row (20,000 protected rows of 10,000
 * stacks were 45,000 page reads; an entry whose three URNs are long, past about a quarter of a
 * page together, spills into overflow pages: still right, a few more reads). PostgreSQL's
 * partial index stays (stack_id, position): an index entry there has a size limit that a long
 * URN would pass. */
static const char schema[] =
	"CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);"
	"CREATE TABLE IF NOT EXISTS stacks ("
	"  id {ID}, qname TEXT UNIQUE NOT NULL, project TEXT, stack TEXT,"
	"  path TEXT, size {INT}, mtime_ns {INT}, sha256 TEXT, version {INT},"
	"  envelope TEXT, resources {INT}, indexed_at TEXT, etag TEXT);"
	"CREATE TABLE IF NOT EXISTS urns ("
	"  stack_id {INT} NOT NULL, n {INT} NOT NULL, urn TEXT NOT NULL,"
	"  PRIMARY KEY (stack_id, n)){WR};"
	"CREATE INDEX IF NOT EXISTS urns_urn ON urns(urn);"
	"CREATE TABLE IF NOT EXISTS resource_rows ("
	"  stack_id {INT} NOT NULL, position {INT} NOT NULL, urn_n {INT} NOT NULL, type TEXT,"
	"  name TEXT, id TEXT, import_id TEXT, parent_n {INT}, provider_n {INT},"
	"  provider_id TEXT, custom {INT}, protect {INT}, \"delete\" {INT}, external {INT},"
	"  taint {INT}, pending_replacement {INT}, retain_on_delete {INT}, created TEXT,"
	"  modified TEXT, protected_urn TEXT, protected_parent TEXT, protected_provider TEXT,"
	"  PRIMARY KEY (stack_id, position));"
	"CREATE INDEX IF NOT EXISTS resource_rows_urn ON resource_rows(stack_id, urn_n);"
	"CREATE INDEX IF NOT EXISTS resource_rows_type_id ON resource_rows(type, id);"
	"CREATE INDEX IF NOT EXISTS resource_rows_id ON resource_rows(id);"
	"CREATE INDEX IF NOT EXISTS resource_rows_import_id ON resource_rows(import_id);"
	"CREATE INDEX IF NOT EXISTS resource_rows_provider ON resource_rows(stack_id, provider_n);"
	"CREATE INDEX IF NOT EXISTS resource_rows_protect ON resource_rows(stack_id, position{PCOVER})"
	"  WHERE protect <> 0;"
	"CREATE TABLE IF NOT EXISTS edge_rows ("
	"  stack_id {INT} NOT NULL, from_n {INT} NOT NULL, kind TEXT NOT NULL,"
	"  to_n {INT} NOT NULL, property TEXT);"
	"CREATE INDEX IF NOT EXISTS edge_rows_to ON edge_rows(stack_id, to_n, kind);"
	"CREATE TABLE IF NOT EXISTS providers ("
	"  stack_id {INT} NOT NULL, urn TEXT NOT NULL, id TEXT, ref TEXT, package TEXT,"
	"  version TEXT);"
	"CREATE INDEX IF NOT EXISTS providers_ref ON providers(ref);"
	"CREATE INDEX IF NOT EXISTS providers_pkg ON providers(package, version);"
	"CREATE TABLE IF NOT EXISTS pending (stack_id {INT} NOT NULL, urn TEXT, type TEXT);"
	"CREATE INDEX IF NOT EXISTS pending_urn ON pending(urn);"
	"CREATE TABLE IF NOT EXISTS secrets (stack_id {INT} NOT NULL, urn TEXT, path TEXT);"
	"CREATE INDEX IF NOT EXISTS secrets_urn ON secrets(urn);"
	"CREATE INDEX IF NOT EXISTS providers_stack ON providers(stack_id);"
	"CREATE INDEX IF NOT EXISTS pending_stack ON pending(stack_id);"
	"CREATE INDEX IF NOT EXISTS secrets_stack ON secrets(stack_id);"
	/* a provider reference is "URN::ID": its URN by number, its ID as it is (a reference
	 * without "::" has no number and is all in provider_id) */
	"{VIEW} resources AS SELECT r.stack_id AS stack_id, r.position AS position,"
	"  u.urn AS urn, r.type AS type, r.name AS name, r.id AS id, r.import_id AS import_id,"
	"  pa.urn AS parent, CASE WHEN r.provider_n IS NULL THEN r.provider_id"
	"  ELSE pv.urn || '::' || r.provider_id END AS provider, r.custom AS custom,"
	"  r.protect AS protect, r.\"delete\" AS \"delete\", r.external AS external,"
	"  r.taint AS taint, r.pending_replacement AS pending_replacement,"
	"  r.retain_on_delete AS retain_on_delete, r.created AS created,"
	"  r.modified AS modified"
	"  FROM resource_rows r JOIN urns u ON u.stack_id = r.stack_id AND u.n = r.urn_n"
	"  LEFT JOIN urns pa ON pa.stack_id = r.stack_id AND pa.n = r.parent_n"
	"  LEFT JOIN urns pv ON pv.stack_id = r.stack_id AND pv.n = r.provider_n;"
	"{VIEW} edges AS SELECT e.stack_id AS stack_id, f.urn AS from_urn, e.kind AS kind,"
	"  t.urn AS to_urn, e.property AS property"
	"  FROM edge_rows e JOIN urns f ON f.stack_id = e.stack_id AND f.n = e.from_n"
	"  JOIN urns t ON t.stack_id = e.stack_id AND t.n = e.to_n;";

/* Schema 4, SQLite only: how many resources of each type and cloud ID there are (those
 * --duplicate-ids counts: custom, with an ID, not pending deletion), kept as each stack is
 * written and removed, so that --duplicate-ids reads the few counted twice (the partial index)
 * instead of grouping every resource. A PostgreSQL index groups (its updaters of different
 * stacks never write the same rows). */
static const char sqlite_only[] =
	"CREATE TABLE IF NOT EXISTS id_counts (type TEXT NOT NULL, id TEXT NOT NULL,"
	"  n INTEGER NOT NULL, PRIMARY KEY (type, id)) WITHOUT ROWID;"
	"CREATE INDEX IF NOT EXISTS id_counts_dup ON id_counts(n) WHERE n <> 1;";

/* Every table and view of any schema version, for a rebuild: views first. */
const char *const st__ix_all_names[] = {"resources", "edges", "urns", "resource_rows",
					"edge_rows", "providers", "pending", "secrets",
					"id_counts", "stacks", "meta", NULL};

/* The columns of a protected row that the query of --protected reads (SQLite's covering
 * partial index; stack_id and position are its key). */
#define PCOVER                                                                                 \
	", type, id, import_id, protected_urn, protected_parent, protected_provider, custom,"      \
	" protect, \"delete\", taint, external"

char *st__ix_schema_sql(int pg)
{
	const char *id = pg ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY";
	const char *in = pg ? "BIGINT" : "INTEGER";
	st_buf b;
	st_buf_init(&b);
	for (const char *p = schema; *p;) {
		if (!strncmp(p, "{ID}", 4)) {
			st_buf_adds(&b, id);
			p += 4;
		} else if (!strncmp(p, "{VIEW}", 6)) {
			st_buf_adds(&b, pg ? "CREATE OR REPLACE VIEW" : "CREATE VIEW IF NOT EXISTS");
			p += 6;
		} else if (!strncmp(p, "{WR}", 4)) {
			/* SQLite: the rows in their key's b-tree (a URN looked up by (stack, n) is
			 * one search, not a search of the key's index and then of the table) */
			st_buf_adds(&b, pg ? "" : " WITHOUT ROWID");
			p += 4;
		} else if (!strncmp(p, "{PCOVER}", 8)) {
			st_buf_adds(&b, pg ? "" : PCOVER);
			p += 8;
		} else if (!strncmp(p, "{INT}", 5)) {
			st_buf_adds(&b, in);
			p += 5;
		} else {
			st_buf_addc(&b, *p++);
		}
	}
	if (!pg)
		st_buf_adds(&b, sqlite_only);
	return st_buf_take(&b, NULL);
}

/* ---- the rows of a stack ---- */

static ix_val T(const char *s)
{
	ix_val v = {s, s ? strlen(s) : 0, 0, 0};
	return v;
}

static ix_val I(long long i)
{
	ix_val v = {NULL, 0, i, 1};
	return v;
}

typedef struct walk {
	ix_row_fn row;
	void *ctx;
	long long sid;
	long long from;  /* the number of the resource whose edges are walked */
	st_strmap urns;  /* URN -> its number + 1 (slot.a), keys borrowed from the state */
	int rc;
} walk;

/* The number of a URN (s, len) in this stack: a new one gets the next number and its row in
 * `urns`. -1 when out of memory or when the row failed (w->rc set). */
static long long urn_n(walk *w, const char *s, size_t len)
{
	int created;
	st_strmap_slot *sl = st_strmap_putn(&w->urns, s, len, &created);

	if (!sl) {
		w->rc = ST_ENOMEM;
		return -1;
	}
	if (created) {
		sl->a = w->urns.count;
		ix_val v[3] = {{NULL, 0, w->sid, 1}, {NULL, 0, (long long)sl->a - 1, 1}, {s, len, 0, 0}};
		if ((w->rc = w->row(w->ctx, IX_URNS, v)) != 0)
			return -1;
	}
	return (long long)sl->a - 1;
}

static int edge_row(void *p, st_ref *ref)
{
	walk *w = p;
	const char *kind;
	size_t len = ref->len;
	switch (ref->kind) {
	case ST_REF_PARENT: kind = "parent"; break;
	case ST_REF_DEPENDENCY: kind = "dependency"; break;
	case ST_REF_PROPERTY_DEPENDENCY: kind = "property"; break;
	case ST_REF_DELETED_WITH: kind = "deletedWith"; break;
	case ST_REF_REPLACE_WITH: kind = "replaceWith"; break;
	default:
		kind = "provider";
		if (!(len = st__provider_ref_urn_len(ref->value, len)))
			return ST_REF_NEXT;
		break;
	}
	long long to = urn_n(w, ref->value, len);
	if (to < 0)
		return ST_REF_STOP;
	ix_val v[5] = {I(w->sid), I(w->from), T(kind), I(to), T(ref->key)};
	if ((w->rc = w->row(w->ctx, IX_EDGES, v)) != 0)
		return ST_REF_STOP;
	return ST_REF_NEXT;
}

/* The paths of secret values (never the values), as JSON Pointers under `path`. */
static int secret_paths(walk *w, const char *urn, json_t *v, st_buf *path, int depth)
{
	size_t mark = path->len, i;
	int rc = 0;
	json_t *c;
	if (depth > 64)
		return 0;
	if (json_is_object(v)) {
		const char *sig = st_json_str(v, ST_SIG_KEY);
		if (sig && !strcmp(sig, ST_SIG_SECRET)) {
			if (path->oom)
				return ST_ENOMEM;
			ix_val r[3] = {I(w->sid), T(urn), T(path->data ? path->data : "")};
			return w->row(w->ctx, IX_SECRETS, r);
		}
		const char *k;
		size_t kl;
		json_object_keylen_foreach(v, k, kl, c) {
			path->len = mark;
			st_pointer_add_key(path, k, kl);
			if ((rc = secret_paths(w, urn, c, path, depth + 1)) != 0)
				break;
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, c) {
			path->len = mark;
			st_pointer_add_index(path, i);
			if ((rc = secret_paths(w, urn, c, path, depth + 1)) != 0)
				break;
		}
	}
	path->len = mark;
	if (path->data)
		path->data[mark] = '\0';
	return rc;
}

/* A reference (URN, or a provider's "URN::ID") as a URN's number (-2: none) and the rest. */
static int ref_n(walk *w, const char *ref, int provider, long long *n, ix_val *rest)
{
	size_t len = ref ? strlen(ref) : 0, ulen = len;

	*n = -2;
	*rest = T(NULL);
	if (!ref)
		return 0;
	if (provider && !(ulen = st__provider_ref_urn_len(ref, len))) {
		*rest = T(ref);
		return 0;
	}
	if ((*n = urn_n(w, ref, ulen)) < 0)
		return w->rc;
	if (provider)
		*rest = T(ref + ulen + 2);
	return 0;
}

/* A number, or SQL NULL for -2 (none). */
static ix_val N(long long n)
{
	ix_val v = {NULL, 0, n, n != -2};
	return v;
}

static int resource_rows(walk *w, json_t *r, size_t i, st_buf *pb)
{
	const char *urn = st_json_str(r, "urn"), *type = st_json_str(r, "type");
	const char *parent_ref = st_json_str(r, "parent"), *prov_ref = st_json_str(r, "provider");
	int protect = st_json_bool(r, "protect");
	long long un, parent, prov;
	ix_val prov_id, none;
	st_urn pu;
	char *name = NULL;
	int rc;

	if (!urn)
		return 0;
	if ((un = urn_n(w, urn, strlen(urn))) < 0 ||
	    ref_n(w, parent_ref, 0, &parent, &none) || ref_n(w, prov_ref, 1, &prov, &prov_id))
		return w->rc;
	if (st_urn_parse(urn, &pu) == ST_OK && !(name = st_strndup(pu.name, pu.name_len)))
		return ST_ENOMEM;
	ix_val v[22] = {I(w->sid),
			I((long long)i),
			I(un),
			T(type),
			T(name),
			T(st_json_str(r, "id")),
			T(st_json_str(r, "importID")),
			N(parent),
			N(prov),
			prov_id,
			I(st_json_bool(r, "custom")),
			I(protect),
			I(st_json_bool(r, "delete")),
			I(st_json_bool(r, "external")),
			I(st_json_bool(r, "taint")),
			I(st_json_bool(r, "pendingReplacement")),
			I(st_json_bool(r, "retainOnDelete")),
			T(st_json_str(r, "created")),
			T(st_json_str(r, "modified")),
			/* a protected row's URN, parent and provider as text (schema 6) */
			T(protect ? urn : NULL),
			T(protect ? parent_ref : NULL),
			T(protect ? prov_ref : NULL)};
	rc = w->row(w->ctx, IX_RESOURCES, v);
	free(name);
	if (rc)
		return rc;
	w->from = un;
	st__ref_foreach(r, ST_REF_ALL, edge_row, w);
	if (w->rc)
		return w->rc;
	if (type && st_type_is_provider(type)) {
		const char *id = st_json_str(r, "id");
		char *ref = st__provider_ref(urn, id);
		if (!ref)
			return ST_ENOMEM;
		ix_val p[6] = {I(w->sid), T(urn), T(id), T(ref), T(type + strlen("pulumi:providers:")),
			       T(st_json_str(json_object_get(r, "inputs"), "version"))};
		rc = w->row(w->ctx, IX_PROVIDERS, p);
		free(ref);
		if (rc)
			return rc;
	}
	static const char *const pf[] = {"inputs", "outputs"};
	for (int f = 0; f < 2; f++) {
		pb->len = 0;
		st_buf_printf(pb, "/%s", pf[f]);
		if ((rc = secret_paths(w, urn, json_object_get(r, pf[f]), pb, 0)) != 0)
			return rc;
	}
	return pb->oom ? ST_ENOMEM : 0;
}

int st__ix_rows(st_state *s, long long sid, ix_row_fn row, void *ctx)
{
	json_t *res = st_state_resources(s, 0), *r, *dep = st_state_deployment(s);
	walk w = {row, ctx, sid, 0, {0}, 0};
	st_buf pb;
	size_t i;
	int rc = 0;

	st_buf_init(&pb);
	st_strmap_init(&w.urns);
	json_array_foreach(res, i, r) {
		if ((rc = resource_rows(&w, r, i, &pb)) != 0)
			break;
	}
	json_array_foreach(rc ? NULL : dep ? json_object_get(dep, "pending_operations") : NULL, i, r) {
		ix_val v[3] = {I(sid), T(st_json_str(json_object_get(r, "resource"), "urn")),
			       T(st_json_str(r, "type"))};
		if ((rc = row(ctx, IX_PENDING, v)) != 0)
			break;
	}
	st_buf_free(&pb);
	st_strmap_free(&w.urns);
	return rc;
}

/* ---- queries ---- */

char *st__ix_glob_regex(const char *g)
{
	st_buf b;
	st_buf_init(&b);
	st_buf_addc(&b, '^');
	for (const char *p = g; *p; p++) {
		if (*p == '*') {
			st_buf_adds(&b, ".*");
		} else if (*p == '?') {
			st_buf_addc(&b, '.');
		} else if (*p == '[' && strchr(p + 1 + (p[1] == '^') + 1, ']')) {
			/* SQLite: "[^...]" negates, a ']' first is a member, no escapes inside */
			const char *q = p + 1;
			st_buf_addc(&b, '[');
			if (*q == '^') {
				st_buf_addc(&b, '^');
				q++;
			}
			if (*q == ']') {
				st_buf_addc(&b, ']');
				q++;
			}
			for (; *q != ']'; q++) {
				if (*q == '\\' || *q == '[')
					st_buf_addc(&b, '\\');
				st_buf_addc(&b, *q);
			}
			st_buf_addc(&b, ']');
			p = q;
		} else {
			if (strchr("\\.^$|()[]{}*+?", *p))
				st_buf_addc(&b, '\\');
			st_buf_addc(&b, *p);
		}
	}
	st_buf_addc(&b, '$');
	return st_buf_take(&b, NULL);
}

#define FLAGS_SQL                                                                             \
	"trim((CASE WHEN r.custom <> 0 THEN 'custom' ELSE 'component' END) ||"                \
	" (CASE WHEN r.protect <> 0 THEN ',protect' ELSE '' END) ||"                          \
	" (CASE WHEN r.\"delete\" <> 0 THEN ',delete' ELSE '' END) ||"                        \
	" (CASE WHEN r.taint <> 0 THEN ',taint' ELSE '' END) ||"                              \
	" (CASE WHEN r.external <> 0 THEN ',external' ELSE '' END)) AS flags "

/* SQLite: the five flags as they are, their text made by the engine (st__ix_flags_text): the
 * SQL above costs a quarter of a 20,000-row answer's time there */
#define FLAGS_COLS "r.custom, r.protect, r.\"delete\", r.taint, r.external "

/* resources.provider from the base tables (as the view has it) */
#define PROVIDER_SQL                                                                          \
	"(CASE WHEN r.provider_n IS NULL THEN r.provider_id ELSE pv.urn || '::' || "             \
	"r.provider_id END)"

typedef struct qb {
	st_buf *sql;
	int pg, *nb, *nowned;
	const char **binds;
	char **owned;
} qb;

/* Appends a placeholder bound to v. */
static void ph(qb *b, const char *v)
{
	b->binds[(*b->nb)++] = v;
	if (b->pg)
		st_buf_printf(b->sql, "$%d", *b->nb);
	else
		st_buf_addc(b->sql, '?');
}

static void keep(qb *b, char *s)
{
	b->owned[(*b->nowned)++] = s;
}

/* "<col> GLOB ?" (SQLite) or "<col> ~ $N" with the pattern as a regular expression. */
static int glob(qb *b, const char *col, const char *pattern)
{
	st_buf_printf(b->sql, " AND %s %s ", col, b->pg ? "~" : "GLOB");
	if (!b->pg) {
		ph(b, pattern);
		return 0;
	}
	char *re = st__ix_glob_regex(pattern);
	if (!re)
		return -1;
	keep(b, re);
	ph(b, re);
	return 0;
}

/* The stack filter: a stack named as every command names it, GLOB allowed. project/stack
 * implies organization/; a bare name is that stack of any project, or a legacy stack. */
static int stack_filter(qb *b, const char *v)
{
	size_t slashes = 0;
	char *p;
	for (const char *c = v; *c; c++)
		slashes += *c == '/';
	if (slashes >= 2)
		return glob(b, "s.qname", v);
	if (!(p = st_asprintf(slashes ? "organization/%s" : "organization/*/%s", v)))
		return -1;
	keep(b, p);
	if (slashes)
		return glob(b, "s.qname", p);
	st_buf_adds(b->sql, " AND ((1 = 1");
	if (glob(b, "s.qname", p))
		return -1;
	st_buf_adds(b->sql, ") OR (1 = 1");
	if (glob(b, "s.qname", v))
		return -1;
	st_buf_adds(b->sql, "))");
	return 0;
}

/* The query's SELECT and FROM (with its joins but the providers'): from the base tables (the
 * view `resources` gives the same columns), so that a filter on a URN or a provider finds its
 * rows through the indexes; with prot_text, a protected row's URN, parent and provider from the
 * row itself. */
static void select_from(st_buf *sql, const st_index_query *q, int pg, int prot_text)
{
	/* a stack filter with none more selective (a type or a package is not: thousands of
	 * rows in a big index) starts from the stacks on SQLite, whose planner would start from
	 * the type's index (CROSS JOIN keeps the order; PostgreSQL's planner knows) */
	int stacks_first = !pg && q->stack && !q->id && !q->import_id && !q->urn_glob &&
			   !q->dependents_of && !q->duplicate_ids &&
			   !(q->provider && strstr(q->provider, "::"));
	if (prot_text)
		st_buf_adds(sql, "SELECT s.qname AS stack, r.protected_urn AS urn, r.type, r.id, "
				 "r.import_id, r.protected_parent AS parent, r.protected_provider AS "
				 "provider, ");
	else
		st_buf_adds(sql, "SELECT s.qname AS stack, u.urn AS urn, r.type, r.id, r.import_id, "
				 "pa.urn AS parent, " PROVIDER_SQL " AS provider, ");
	st_buf_adds(sql, pg ? FLAGS_SQL : FLAGS_COLS);
	st_buf_adds(sql, stacks_first ? "FROM stacks s CROSS JOIN resource_rows r ON r.stack_id = "
					"s.id"
				      : "FROM resource_rows r JOIN stacks s ON s.id = r.stack_id");
	if (prot_text)
		return;
	st_buf_adds(sql, " JOIN urns u ON u.stack_id = r.stack_id AND u.n = r.urn_n LEFT JOIN urns "
			 "pa ON pa.stack_id = r.stack_id AND pa.n = r.parent_n");
	/* with a provider filter the provider must be there: an inner join, which lets the
	 * planner start from it */
	st_buf_printf(sql, " %sJOIN urns pv ON pv.stack_id = r.stack_id AND pv.n = r.provider_n",
		      q->provider ? "" : "LEFT ");
}

int st__ix_query_sql(const st_index_query *q, int pg, st_buf *sql, const char *binds[16],
		     int *nb, char *owned[16], int *nowned)
{
	qb b = {sql, pg, nb, nowned, binds, owned};
	const char *C = pg ? " COLLATE \"C\"" : "";
	char *pkg = NULL, *ver = NULL;

	*nb = *nowned = 0;
	if (q->dependents_of) {
		st_buf_adds(sql, "WITH RECURSIVE deps(urn) AS (SELECT CAST(");
		ph(&b, q->dependents_of);
		/* every kind edge_row writes is a dependence (a kind filter scanned every edge) */
		st_buf_adds(sql, " AS TEXT) UNION SELECT e.from_urn FROM edges e JOIN deps d ON "
				 "e.to_urn = d.urn) ");
	}
	/* protected rows carry their URN, parent and provider as text (schema 6): with no filter
	 * that needs the URNs' table, their query reads no URN (on SQLite, the covering partial
	 * index alone) */
	int prot_text = q->protected_only && !q->pending_only && !q->dependents_of &&
			!q->provider && !q->duplicate_ids;
	select_from(sql, q, pg, prot_text);
	if (q->provider && !strstr(q->provider, "::")) {
		const char *at = strchr(q->provider, '@');
		pkg = at ? st_strndup(q->provider, (size_t)(at - q->provider)) : st_strdup(q->provider);
		ver = at ? st_strdup(at + 1) : NULL;
		if (!pkg || (at && !ver)) {
			free(pkg);
			free(ver);
			return ST_ENOMEM;
		}
		keep(&b, pkg);
		if (ver)
			keep(&b, ver);
		st_buf_adds(sql, " JOIN providers p ON p.stack_id = r.stack_id AND p.urn = pv.urn AND "
				 "p.ref = pv.urn || '::' || r.provider_id");
	}
	st_buf_adds(sql, " WHERE 1 = 1");
	if (q->urn_glob && glob(&b, prot_text ? "r.protected_urn" : "u.urn", q->urn_glob))
		return ST_ENOMEM;
	if (q->type) {
		st_buf_adds(sql, " AND r.type = ");
		ph(&b, q->type);
	}
	if (q->id) {
		st_buf_adds(sql, " AND r.id = ");
		ph(&b, q->id);
	}
	if (q->import_id) {
		st_buf_adds(sql, " AND r.import_id = ");
		ph(&b, q->import_id);
	}
	if (q->stack && stack_filter(&b, q->stack))
		return ST_ENOMEM;
	if (q->provider) {
		if (pkg) {
			st_buf_adds(sql, " AND p.package = ");
			ph(&b, pkg);
			if (ver) {
				st_buf_adds(sql, " AND p.version = ");
				ph(&b, ver);
			}
		} else {
			/* a provider URN (any ID) or a full reference URN::ID (split at its last
			 * "::", as the rows are) */
			size_t ul = st__provider_ref_urn_len(q->provider, strlen(q->provider));
			char *urn = st_strndup(q->provider, ul);
			if (!urn)
				return ST_ENOMEM;
			keep(&b, urn);
			st_buf_adds(sql, " AND (pv.urn = ");
			ph(&b, q->provider);
			st_buf_adds(sql, " OR (pv.urn = ");
			ph(&b, urn);
			st_buf_adds(sql, " AND r.provider_id = ");
			ph(&b, q->provider + ul + 2);
			st_buf_adds(sql, "))");
		}
	}
	if (q->protected_only)
		st_buf_adds(sql, " AND r.protect <> 0");
	if (q->pending_only)
		/* from the few pending operations, not a probe per resource */
		st_buf_adds(sql, " AND (r.stack_id, u.urn) IN (SELECT stack_id, urn FROM pending)");
	if (q->dependents_of) {
		st_buf_adds(sql, " AND u.urn IN (SELECT urn FROM deps) AND u.urn != ");
		ph(&b, q->dependents_of);
	}
	if (q->duplicate_ids && !(q->version >= 2 && q->include_providers))
		st_buf_adds(sql, " AND r.type NOT LIKE 'pulumi:providers:%'");
	if (q->duplicate_ids)
		st_buf_adds(sql, " AND r.custom <> 0 AND r.id IS NOT NULL AND r.id != '' AND "
				 "r.\"delete\" = 0 AND (r.type, r.id) IN ");
	/* SQLite keeps the counts (id_counts, the few above one through its partial index);
	 * PostgreSQL groups */
	if (q->duplicate_ids && !pg)
		st_buf_adds(sql, "(SELECT type, id FROM id_counts WHERE n <> 1 AND n > 1)");
	else if (q->duplicate_ids)
		st_buf_adds(sql, "(SELECT type, id FROM resource_rows WHERE custom <> 0 AND id IS "
				 "NOT NULL AND id != '' AND \"delete\" = 0 GROUP BY type, id HAVING "
				 "count(*) > 1)");
	if (q->duplicate_ids)
		st_buf_printf(sql, " ORDER BY r.type%s, r.id%s, s.qname%s, r.position", C, C, C);
	else
		st_buf_printf(sql, " ORDER BY s.qname%s, r.position", C);
	return sql->oom ? ST_ENOMEM : ST_OK;
}

size_t st__ix_flags_text(char out[IX_FLAGS_MAX], const int f[5])
{
	static const char *const names[5] = {"custom", ",protect", ",delete", ",taint",
					     ",external"};
	size_t n = 0;
	for (int i = 0; i < 5; i++) {
		const char *w = i ? (f[i] ? names[i] : "") : f[0] ? "custom" : "component";
		size_t l = strlen(w);
		memcpy(out + n, w, l);
		n += l;
	}
	out[n] = '\0';
	return n;
}

char *st__ix_where(const st_store *store, const char *key)
{
	char cwd[PATH_MAX];
	/* (no current directory to name: the path as given, as before) */
	return st__ix_where_at(store, key, getcwd(cwd, sizeof(cwd)));
}

char *st__ix_where_at(const st_store *store, const char *key, const char *cwd)
{
	char *w = st__store_where(store, key), *abs;

	if (!w || w[0] == '/' || strstr(w, "://") || !cwd)
		return w;
	abs = st_asprintf("%s/%s", cwd, w);
	free(w);
	if (abs)
		st_path_remove_dots(abs); /* a name the index compares, not a file it opens */
	return abs;
}

/* A place made for a key holding the mark '\001' (`w`, new; NULL when out of memory), cut
 * there: sc->head the part before the mark, sc->tail the part after. ST_OK or ST_ENOMEM. */
static int cut_at_mark(ix_scope *sc, char *w)
{
	char *mark = w ? strchr(w, '\001') : NULL;

	sc->head = sc->tail = NULL;
	if (!mark) { /* (a place without its mark: cannot happen, every place names its key) */
		free(w);
		return ST_ENOMEM;
	}
	*mark = '\0';
	sc->head = w;
	if (!(sc->tail = st_strdup(mark + 1))) {
		st__ix_scope_free(sc);
		return ST_ENOMEM;
	}
	return ST_OK;
}

int st__ix_scope_init(ix_scope *sc, const st_store *store)
{
	sc->head = sc->tail = NULL;
	if (!store)
		return ST_OK;
	/* a key no stack has, to find where a key goes in the store's place */
	return cut_at_mark(sc, st__ix_where(store, ".pulumi/\001"));
}

int st__ix_scope_backend(ix_scope *sc, st_backend *b)
{
	size_t n;
	sc->head = sc->tail = NULL;
	if (st_backend_store(b))
		return st__ix_scope_init(sc, st_backend_store(b));
	/* Pulumi Cloud: its places are "URL/ORG/PROJECT/STACK" (the URL without a trailing '/') */
	if (!(sc->head = st_asprintf("%s/", st_backend_url(b))) || !(sc->tail = st_strdup(""))) {
		st__ix_scope_free(sc);
		return ST_ENOMEM;
	}
	for (n = strlen(sc->head); n > 1 && sc->head[n - 2] == '/'; n--)
		sc->head[n - 1] = '\0';
	return ST_OK;
}

int st__ix_rebuilding(st_error *err, const char *name, int from)
{
	return st__err(err, ST_EVERSION, "the index '%s' is being rebuilt (it had schema version "
		       "%d) and holds only the stacks written so far: query it when its update "
		       "ends (if none is running, one was interrupted: run `statetool index "
		       "update`)", name, from);
}

char *st__ix_other_msg(const char *qname, const char *where, const char *other)
{
	return st_asprintf("%s: the index holds a stack of this name from another backend ('%s'), "
			   "and one index keeps one stack of a name: '%s' was not indexed and "
			   "the other's rows were left as they are (give this backend its own "
			   "--db; if the other backend no longer has the stack, update the index "
			   "from it first)",
			   qname, other, where);
}

int st__ix_other_failed(const char *qname, const char *where, const char *other,
			st_index_stats *stats, st_problems *failures, st_error *err)
{
	char *msg = st__ix_other_msg(qname, where, other);
	int rc = msg ? st_problems_add(failures, ST_SEV_ERROR, "index/other-backend", "", NULL,
				       "%s", msg)
		     : ST_ENOMEM;
	free(msg);
	if (rc != ST_OK)
		return st__err(err, ST_ENOMEM, "out of memory");
	stats->failed++;
	return ST_OK;
}

int st__ix_place_init(ix_scope *sc, const st_store *store, const char *cwd)
{
	/* the key "\001" (no stack's): one segment, as every key's are, joined and cleaned up
	 * segment by segment as a key's (st__ix_where_at) */
	return cut_at_mark(sc, st__ix_where_at(store, "\001", cwd));
}

int st__ix_place_is(const ix_scope *sc, const char *path, const char *key)
{
	size_t h = strlen(sc->head), k = strlen(key);
	return !strncmp(path, sc->head, h) && !strncmp(path + h, key, k) &&
	       !strcmp(path + h + k, sc->tail);
}

int st__ix_in_scope(const ix_scope *sc, const char *path)
{
	size_t n, h, t;

	if (!sc->head || !path)
		return 1;
	n = strlen(path);
	h = strlen(sc->head);
	t = strlen(sc->tail);
	return n > h + t && !strncmp(path, sc->head, h) && !strcmp(path + n - t, sc->tail);
}

void st__ix_scope_free(ix_scope *sc)
{
	free(sc->head);
	free(sc->tail);
	sc->head = sc->tail = NULL;
}
