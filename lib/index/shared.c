/*
 * What both index engines share (ix.h): the schema, the rows of a stack, the queries.
 */
#include "ix.h"
#include "store/store_impl.h"

#include <stdlib.h>
#include <string.h>

const char *const st__ix_table_names[IX_NTABLES] = {"resources", "edges", "providers", "pending",
						    "secrets"};
const int st__ix_table_ncols[IX_NTABLES] = {18, 5, 6, 3, 3};

/* {ID}: the stacks' key; {INT}: an integer. Everything else is the same SQL on both. */
static const char schema[] =
	"CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);"
	"CREATE TABLE IF NOT EXISTS stacks ("
	"  id {ID}, qname TEXT UNIQUE NOT NULL, project TEXT, stack TEXT,"
	"  path TEXT, size {INT}, mtime_ns {INT}, sha256 TEXT, version {INT},"
	"  envelope TEXT, resources {INT}, indexed_at TEXT, etag TEXT);"
	"CREATE TABLE IF NOT EXISTS resources ("
	"  stack_id {INT} NOT NULL, position {INT} NOT NULL, urn TEXT NOT NULL, type TEXT,"
	"  name TEXT, id TEXT, import_id TEXT, parent TEXT, provider TEXT, custom {INT},"
	"  protect {INT}, \"delete\" {INT}, external {INT}, taint {INT},"
	"  pending_replacement {INT}, retain_on_delete {INT}, created TEXT, modified TEXT,"
	"  PRIMARY KEY (stack_id, position));"
	"CREATE INDEX IF NOT EXISTS resources_urn ON resources(urn);"
	"CREATE INDEX IF NOT EXISTS resources_type ON resources(type);"
	"CREATE INDEX IF NOT EXISTS resources_type_id ON resources(type, id);"
	"CREATE INDEX IF NOT EXISTS resources_id ON resources(id);"
	"CREATE INDEX IF NOT EXISTS resources_import_id ON resources(import_id);"
	"CREATE INDEX IF NOT EXISTS resources_provider ON resources(provider);"
	"CREATE TABLE IF NOT EXISTS edges ("
	"  stack_id {INT} NOT NULL, from_urn TEXT NOT NULL, kind TEXT NOT NULL,"
	"  to_urn TEXT NOT NULL, property TEXT);"
	"CREATE INDEX IF NOT EXISTS edges_to ON edges(to_urn, kind);"
	"CREATE INDEX IF NOT EXISTS edges_stack ON edges(stack_id);"
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
	"CREATE INDEX IF NOT EXISTS secrets_stack ON secrets(stack_id);";

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
		} else if (!strncmp(p, "{INT}", 5)) {
			st_buf_adds(&b, in);
			p += 5;
		} else {
			st_buf_addc(&b, *p++);
		}
	}
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
	const char *from;
	int rc;
} walk;

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
	ix_val v[5] = {I(w->sid), T(w->from), T(kind), {ref->value, len, 0, 0}, T(ref->key)};
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

static int resource_rows(walk *w, json_t *r, size_t i, st_buf *pb)
{
	const char *urn = st_json_str(r, "urn"), *type = st_json_str(r, "type");
	st_urn pu;
	char *name = NULL;
	int rc;

	if (!urn)
		return 0;
	if (st_urn_parse(urn, &pu) == ST_OK && !(name = st_strndup(pu.name, pu.name_len)))
		return ST_ENOMEM;
	ix_val v[18] = {I(w->sid),
			I((long long)i),
			T(urn),
			T(type),
			T(name),
			T(st_json_str(r, "id")),
			T(st_json_str(r, "importID")),
			T(st_json_str(r, "parent")),
			T(st_json_str(r, "provider")),
			I(st_json_bool(r, "custom")),
			I(st_json_bool(r, "protect")),
			I(st_json_bool(r, "delete")),
			I(st_json_bool(r, "external")),
			I(st_json_bool(r, "taint")),
			I(st_json_bool(r, "pendingReplacement")),
			I(st_json_bool(r, "retainOnDelete")),
			T(st_json_str(r, "created")),
			T(st_json_str(r, "modified"))};
	rc = w->row(w->ctx, IX_RESOURCES, v);
	free(name);
	if (rc)
		return rc;
	w->from = urn;
	st__ref_foreach(r, ST_REF_ALL, edge_row, w);
	if (w->rc)
		return w->rc;
	if (type && st_type_is_provider(type)) {
		const char *id = st_json_str(r, "id");
		char *ref = st__provider_ref(urn, id);
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
	walk w = {row, ctx, sid, NULL, 0};
	st_buf pb;
	size_t i;
	int rc = 0;

	st_buf_init(&pb);
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
	" (CASE WHEN r.external <> 0 THEN ',external' ELSE '' END))"

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
		st_buf_adds(sql, " AS TEXT) UNION SELECT e.from_urn FROM edges e JOIN deps d ON "
				 "e.to_urn = d.urn WHERE e.kind IN ('parent','dependency','property',"
				 "'deletedWith','replaceWith','provider')) ");
	}
	st_buf_adds(sql, "SELECT s.qname AS stack, r.urn, r.type, r.id, r.import_id, r.parent, "
			 "r.provider, " FLAGS_SQL " AS flags FROM resources r JOIN stacks s ON "
			 "s.id = r.stack_id");
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
		st_buf_adds(sql, " JOIN providers p ON p.stack_id = r.stack_id AND p.ref = r.provider");
	}
	st_buf_adds(sql, " WHERE 1 = 1");
	if (q->urn_glob && glob(&b, "r.urn", q->urn_glob))
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
			/* a provider URN (any ID) or a full reference */
			char *pat = st_asprintf("%s::*", q->provider);
			if (!pat)
				return ST_ENOMEM;
			keep(&b, pat);
			st_buf_adds(sql, " AND (r.provider = ");
			ph(&b, q->provider);
			st_buf_adds(sql, " OR (1 = 1");
			if (glob(&b, "r.provider", pat))
				return ST_ENOMEM;
			st_buf_adds(sql, "))");
		}
	}
	if (q->protected_only)
		st_buf_adds(sql, " AND r.protect <> 0");
	if (q->pending_only)
		st_buf_adds(sql, " AND EXISTS (SELECT 1 FROM pending pd WHERE pd.stack_id = "
				 "r.stack_id AND pd.urn = r.urn)");
	if (q->dependents_of) {
		st_buf_adds(sql, " AND r.urn IN (SELECT urn FROM deps) AND r.urn != ");
		ph(&b, q->dependents_of);
	}
	if (q->duplicate_ids && !(q->version >= 2 && q->include_providers))
		st_buf_adds(sql, " AND r.type NOT LIKE 'pulumi:providers:%'");
	if (q->duplicate_ids)
		st_buf_adds(sql, " AND r.custom <> 0 AND r.id IS NOT NULL AND r.id != '' AND "
				 "r.\"delete\" = 0 AND (r.type, r.id) IN (SELECT type, id FROM "
				 "resources WHERE custom <> 0 AND id IS NOT NULL AND id != '' AND "
				 "\"delete\" = 0 GROUP BY type, id HAVING count(*) > 1)");
	if (q->duplicate_ids)
		st_buf_printf(sql, " ORDER BY r.type%s, r.id%s, s.qname%s, r.position", C, C, C);
	else
		st_buf_printf(sql, " ORDER BY s.qname%s, r.position", C);
	return sql->oom ? ST_ENOMEM : ST_OK;
}

int st__ix_scope_init(ix_scope *sc, const st_store *store)
{
	char *w, *mark;

	sc->head = sc->tail = NULL;
	if (!store)
		return ST_OK;
	/* a key no stack has, to find where a key goes in the store's place */
	if (!(w = st__store_where(store, ".pulumi/\001")))
		return ST_ENOMEM;
	if (!(mark = strchr(w, '\001'))) { /* cannot happen: every place names its key */
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
