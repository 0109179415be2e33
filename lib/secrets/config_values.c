/*
 * The values of a stack configuration (Pulumi.<stack>.yaml) as Pulumi gives them to a default
 * provider: Target.GetPackageConfig (pkg/resource/deploy/target.go) makes each `<pkg>:<key>`
 * the input `<key>`, a string: config.Value.Value (sdk/go/common/resource/config/value.go)
 * after the file was read by workspace.LoadProjectStackBytes (yaml.v3 into `any`, written back
 * and read again into config.Map). So a scalar is its text as yaml.v3 resolves it and
 * encoding/json writes it (8080, 1.5, true, null), a mapping or sequence its JSON (keys sorted,
 * HTML characters escaped, secure leaves decrypted inline), and a value holding a `secure` one
 * is a secret.
 */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_DEPTH 64
#define MAX_VISITS 1000000 /* nodes walked through aliases: a bound on alias bombs */

typedef struct ynode {
	char kind;   /* 's' scalar, 'm' mapping (kids: key, value, ...), 'q' sequence */
	int plain;   /* a plain scalar without a tag: resolved as yaml.v3 resolves it */
	char *v;     /* a scalar's value (new) */
	size_t n;    /* its length */
	struct ynode **kids;
	size_t nkids, cap;
	size_t line, col;
} ynode;

struct st__cfgvals {
	ynode **all; /* every node, for freeing (aliases share them) */
	size_t nall, cap;
	ynode *root, *config;
	char *name, *project, *provider; /* new; provider: `secretsprovider`, or NULL */
	size_t visits;
};

typedef enum { V_STR, V_NULL, V_BOOL, V_INT, V_UINT, V_FLOAT } vkind;

typedef struct resolved {
	vkind k;
	long long i;
	unsigned long long u;
	double f;
} resolved;

static int at(st_error *err, int rc, const ynode *n)
{
	if (err && !err->line && n) {
		err->line = (int)n->line;
		err->column = (int)n->col;
	}
	return rc;
}

/* ---- building the tree from libyaml's events (the first document) ---- */

typedef struct builder {
	st__cfgvals *v;
	ynode *open[MAX_DEPTH];
	char *anchor[MAX_DEPTH]; /* an open collection's anchor (new), registered at its end */
	int depth;
	st_strmap anchors; /* name -> node (slot p); the map borrows its keys: */
	char **names;      /* every anchor's name (new) */
	size_t nnames, capnames;
	st_error *err;
} builder;

static ynode *node_new(builder *b, char kind, const yaml_mark_t *m)
{
	st__cfgvals *v = b->v;
	ynode *n;
	if (v->nall == v->cap) {
		size_t nc = v->cap ? 2 * v->cap : 64;
		ynode **na = realloc(v->all, nc * sizeof(*na));
		if (!na)
			return NULL;
		v->all = na;
		v->cap = nc;
	}
	if (!(n = calloc(1, sizeof(*n))))
		return NULL;
	v->all[v->nall++] = n;
	n->kind = kind;
	n->line = m->line + 1;
	n->col = m->column + 1;
	return n;
}

static int add_kid(builder *b, ynode *n)
{
	ynode *p;
	if (!b->depth) {
		if (!b->v->root)
			b->v->root = n;
		return ST_OK;
	}
	p = b->open[b->depth - 1];
	if (p->nkids == p->cap) {
		size_t nc = p->cap ? 2 * p->cap : 8;
		ynode **nk = realloc(p->kids, nc * sizeof(*nk));
		if (!nk)
			return st__err(b->err, ST_ENOMEM, "out of memory");
		p->kids = nk;
		p->cap = nc;
	}
	p->kids[p->nkids++] = n;
	return ST_OK;
}

static int put_anchor(builder *b, const char *name, ynode *n)
{
	int created;
	char *own;
	st_strmap_slot *sl;
	if (!name)
		return ST_OK;
	if (b->nnames == b->capnames) {
		size_t nc = b->capnames ? 2 * b->capnames : 8;
		char **nn = realloc(b->names, nc * sizeof(*nn));
		if (!nn)
			return st__err(b->err, ST_ENOMEM, "out of memory");
		b->names = nn;
		b->capnames = nc;
	}
	if (!(own = st_strdup(name)))
		return st__err(b->err, ST_ENOMEM, "out of memory");
	b->names[b->nnames++] = own;
	if (!(sl = st_strmap_put(&b->anchors, own, &created)))
		return st__err(b->err, ST_ENOMEM, "out of memory");
	sl->p = n; /* a later anchor of the same name replaces it, as in yaml.v3 */
	return ST_OK;
}

/* Tags: only the ones that change nothing (!!str on a scalar, !!map, !!seq) are read; any
 * other would make yaml.v3 decode the value another way. */
static int tag_ok(builder *b, const unsigned char *tag, const char *want, const yaml_mark_t *m)
{
	ynode where = {0};
	if (!tag || !strcmp((const char *)tag, want))
		return ST_OK;
	where.line = m->line + 1;
	where.col = m->column + 1;
	return at(b->err,
		  st__err(b->err, ST_EUNSUPPORTED, "a value tagged '%s' is not read by statetool: "
			  "write it without the tag", (const char *)tag),
		  &where);
}

static int on_scalar(builder *b, const yaml_event_t *ev)
{
	ynode *n;
	int rc = tag_ok(b, ev->data.scalar.tag, YAML_STR_TAG, &ev->start_mark);
	if (rc != ST_OK)
		return rc;
	if (!(n = node_new(b, 's', &ev->start_mark)) ||
	    !(n->v = st_strndup((const char *)ev->data.scalar.value, ev->data.scalar.length)))
		return st__err(b->err, ST_ENOMEM, "out of memory");
	n->n = ev->data.scalar.length;
	n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev->data.scalar.tag;
	if ((rc = add_kid(b, n)) != ST_OK)
		return rc;
	return put_anchor(b, (const char *)ev->data.scalar.anchor, n);
}

static int on_alias(builder *b, const yaml_event_t *ev)
{
	const char *name = (const char *)ev->data.alias.anchor;
	st_strmap_slot *sl = st_strmap_get(&b->anchors, name);
	ynode where = {0};
	if (sl)
		return add_kid(b, sl->p);
	where.line = ev->start_mark.line + 1;
	where.col = ev->start_mark.column + 1;
	return at(b->err, st__err(b->err, ST_EFORMAT, "unknown anchor '%s' referenced", name),
		  &where);
}

static int on_start(builder *b, const yaml_event_t *ev)
{
	int map = ev->type == YAML_MAPPING_START_EVENT;
	const unsigned char *tag = map ? ev->data.mapping_start.tag : ev->data.sequence_start.tag;
	const unsigned char *anchor = map ? ev->data.mapping_start.anchor
					  : ev->data.sequence_start.anchor;
	ynode *n, where = {0};
	int rc = tag_ok(b, tag, map ? YAML_MAP_TAG : YAML_SEQ_TAG, &ev->start_mark);
	if (rc != ST_OK)
		return rc;
	if (b->depth == MAX_DEPTH) {
		where.line = ev->start_mark.line + 1;
		where.col = ev->start_mark.column + 1;
		return at(b->err, st__err(b->err, ST_ELIMIT, "nested deeper than %d levels",
					  MAX_DEPTH), &where);
	}
	if (!(n = node_new(b, map ? 'm' : 'q', &ev->start_mark)) ||
	    (anchor && !(b->anchor[b->depth] = st_strdup((const char *)anchor))))
		return st__err(b->err, ST_ENOMEM, "out of memory");
	if ((rc = add_kid(b, n)) != ST_OK)
		return rc;
	b->open[b->depth++] = n;
	return ST_OK;
}

static int on_end(builder *b)
{
	int rc;
	b->depth--;
	/* registered only now: an alias inside its own anchor is unknown (no cycles) */
	rc = put_anchor(b, b->anchor[b->depth], b->open[b->depth]);
	free(b->anchor[b->depth]);
	b->anchor[b->depth] = NULL;
	return rc;
}

static int build(builder *b, const char *text, size_t len)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int rc = ST_OK, done = 0;
	size_t bom = len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0;

	if (!yaml_parser_initialize(&p))
		return st__err(b->err, ST_ENOMEM, "out of memory");
	yaml_parser_set_input_string(&p, (const unsigned char *)text + bom, len - bom);
	yaml_parser_set_encoding(&p, YAML_UTF8_ENCODING);
	while (rc == ST_OK && !done) {
		ynode where = {0};
		if (!yaml_parser_parse(&p, &ev)) {
			where.line = p.problem_mark.line + 1;
			where.col = p.problem_mark.column + 1;
			rc = at(b->err, st__err(b->err, ST_EPARSE, "not valid YAML: %s",
						p.problem ? p.problem : "parse error"), &where);
			break;
		}
		switch (ev.type) {
		case YAML_SCALAR_EVENT: rc = on_scalar(b, &ev); break;
		case YAML_ALIAS_EVENT: rc = on_alias(b, &ev); break;
		case YAML_MAPPING_START_EVENT:
		case YAML_SEQUENCE_START_EVENT: rc = on_start(b, &ev); break;
		case YAML_MAPPING_END_EVENT:
		case YAML_SEQUENCE_END_EVENT: rc = on_end(b); break;
		case YAML_DOCUMENT_END_EVENT: /* Pulumi reads the first document */
		case YAML_STREAM_END_EVENT: done = 1; break;
		default: break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	return rc;
}

/* ---- scalars as yaml.v3 resolves a plain one (resolve.go) ---- */

/* strconv.ParseUint(s, base, 64); base 0 takes Go's prefixes (0x, 0o, 0b, 0). 0 ok, -1 not. */
static int go_parse_uint(const char *s, int base, unsigned long long *out)
{
	unsigned long long v = 0;
	if (!*s)
		return -1;
	if (!base) {
		base = 10;
		if (s[0] == '0') {
			char c = (char)(s[1] | 0x20);
			if (s[1] && s[2] && (c == 'b' || c == 'o' || c == 'x')) {
				base = c == 'b' ? 2 : c == 'o' ? 8 : 16;
				s += 2;
			} else {
				base = 8;
				s++;
			}
		}
	}
	for (; *s; s++) {
		int d = *s >= '0' && *s <= '9'	 ? *s - '0'
			: (*s | 0x20) >= 'a' && (*s | 0x20) <= 'z' ? (*s | 0x20) - 'a' + 10
								   : 99;
		if (d >= base || v > (~0ULL - (unsigned)d) / (unsigned)base)
			return -1;
		v = v * (unsigned)base + (unsigned)d;
	}
	*out = v;
	return 0;
}

/* strconv.ParseInt(s, base, 64). */
static int go_parse_int(const char *s, int base, long long *out)
{
	unsigned long long u;
	int neg = *s == '-';
	if (*s == '+' || *s == '-')
		s++;
	if (go_parse_uint(s, base, &u) < 0 || u > (neg ? 1ULL << 63 : (1ULL << 63) - 1))
		return -1;
	*out = neg ? (long long)(0 - u) : (long long)u;
	return 0;
}

/* yaml.v3's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static int yaml_float_syntax(const char *s)
{
	size_t d = 0;
	if (*s == '+' || *s == '-')
		s++;
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++)
			d++;
		if (!d)
			return 0;
	} else {
		for (; *s >= '0' && *s <= '9'; s++)
			d++;
		if (!d)
			return 0;
		if (*s == '.')
			for (s++; *s >= '0' && *s <= '9'; s++)
				;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		for (d = 0; *s >= '0' && *s <= '9'; s++)
			d++;
		if (!d)
			return 0;
	}
	return !*s;
}

/* strconv.ParseFloat of a text yaml_float_syntax accepted: out of range is an error. */
static int go_parse_float(const char *s, double *out)
{
	char *end;
	errno = 0;
	*out = strtod(s, &end);
	return *end || (errno == ERANGE && isinf(*out)) ? -1 : 0;
}

static int int_of(long long i, resolved *r)
{
	r->k = V_INT;
	r->i = i;
	return 1;
}

/* The numeric forms of a 'D' or 'S' hint, on the text with '_' removed. 1 resolved, 0 a
 * string. */
static int resolve_number(char *p, resolved *r)
{
	char *q = p;
	for (char *s = p; *s; s++)
		if (*s != '_')
			*q++ = *s;
	*q = '\0';
	if (!go_parse_int(p, 0, &r->i))
		return int_of(r->i, r);
	if (!go_parse_uint(p, 0, &r->u)) {
		r->k = V_UINT;
		return 1;
	}
	if (yaml_float_syntax(p) && !go_parse_float(p, &r->f)) {
		r->k = V_FLOAT;
		return 1;
	}
	/* the 0b and 0o forms once more, their digits signed ("0b+1"): resolve.go's fallbacks */
	for (int base = 2; base <= 8; base += 6) {
		char pre[3] = {'0', base == 2 ? 'b' : 'o', '\0'};
		if (!strncmp(p, pre, 2)) {
			if (!go_parse_int(p + 2, base, &r->i))
				return int_of(r->i, r);
			if (!go_parse_uint(p + 2, base, &r->u)) {
				r->k = V_UINT;
				return 1;
			}
		} else if (p[0] == '-' && !strncmp(p + 1, pre, 2)) {
			p[2] = '-';
			if (!go_parse_int(p + 2, base, &r->i))
				return int_of(r->i, r);
		}
	}
	return 0;
}

static int in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, list[i]))
			return 1;
	return 0;
}

static int resolve(const ynode *n, resolved *r)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
	static const char *const trues[] = {"true", "True", "TRUE"};
	static const char *const falses[] = {"false", "False", "FALSE"};
	static const char *const nans[] = {".nan", ".NaN", ".NAN"};
	static const char *const infs[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"};
	static const char *const ninfs[] = {"-.inf", "-.Inf", "-.INF"};
	const char *s = n->v;
	char *copy;
	int ok;

	memset(r, 0, sizeof(*r));
	if (!n->plain || strlen(s) != n->n)
		return ST_OK;
	/* resolveMap first */
	if (in_list(s, nulls, 5))
		r->k = V_NULL;
	else if (in_list(s, trues, 3) || in_list(s, falses, 3))
		r->k = V_BOOL, r->i = s[0] == 't' || s[0] == 'T';
	else if (in_list(s, nans, 3))
		r->k = V_FLOAT, r->f = NAN;
	else if (in_list(s, infs, 6) || in_list(s, ninfs, 3))
		r->k = V_FLOAT, r->f = s[0] == '-' ? -INFINITY : INFINITY;
	if (r->k != V_STR)
		return ST_OK;
	if (s[0] == '.') {
		/* ParseFloat of the text as it is (a '.' hint): .5, .5e3 */
		if (!strchr(s, '_') && yaml_float_syntax(s) && !go_parse_float(s, &r->f))
			r->k = V_FLOAT;
		return ST_OK;
	}
	if (!(s[0] >= '0' && s[0] <= '9') && s[0] != '+' && s[0] != '-')
		return ST_OK;
	if (!(copy = st_strdup(s)))
		return ST_ENOMEM;
	ok = resolve_number(copy, r);
	free(copy);
	if (!ok)
		r->k = V_STR;
	return ST_OK;
}

/* A mapping key yaml.v3 decodes as a string. */
static int key_is_string(const ynode *k, st_error *err)
{
	resolved r;
	if (k->kind != 's')
		return 0;
	if (resolve(k, &r) != ST_OK)
		return st__err(err, ST_ENOMEM, "out of memory");
	return r.k == V_STR;
}

/* ---- checking the whole document: string keys only (SimplifyMarshalledValue) ---- */

static int check_keys(st__cfgvals *v, const ynode *n, st_error *err)
{
	if (++v->visits > MAX_VISITS)
		return at(err, st__err(err, ST_ELIMIT, "more than %d values through aliases",
				       MAX_VISITS), n);
	for (size_t i = 0; i < n->nkids; i++) {
		const ynode *k = n->kids[i];
		int rc;
		if (n->kind == 'm' && i % 2 == 0) {
			if ((rc = key_is_string(k, err)) < 0)
				return rc;
			if (!rc)
				return at(err, st__err(err, ST_EFORMAT, "expected only string keys, got "
						       "'%s'", k->kind == 's' ? k->v : "a collection"),
					  k);
			if (k->plain && !strcmp(k->v, "<<"))
				return at(err, st__err(err, ST_EUNSUPPORTED, "a merge key (<<) is not "
						       "read by statetool: write the keys out"), k);
		}
		if (k->kind != 's' && (rc = check_keys(v, k, err)) != ST_OK)
			return rc;
	}
	return ST_OK;
}

/* ---- values ---- */

typedef struct evalctx {
	st__cfgvals *v;
	const char *key; /* the config key, for messages */
	st_secrets *sec; /* NULL: secure values are not opened (a check) */
	int secure;      /* a secure value was met */
	st_error *err;
} evalctx;

/* {secure: "<string>"}: a secure value (isSecureValue); its ciphertext, else NULL. */
static const ynode *secure_of(const ynode *n)
{
	resolved r;
	if (n->kind != 'm' || n->nkids != 2 || n->kids[0]->kind != 's' ||
	    n->kids[1]->kind != 's' || strcmp(n->kids[0]->v, "secure"))
		return NULL;
	if (resolve(n->kids[0], &r) != ST_OK || r.k != V_STR ||
	    resolve(n->kids[1], &r) != ST_OK || r.k != V_STR)
		return NULL;
	return n->kids[1];
}

static int decrypt(evalctx *e, const ynode *ct, json_t **out)
{
	char *pt = NULL;
	size_t len = 0;
	st_error e2;
	int rc;

	e->secure = 1;
	if (!e->sec) {
		*out = json_string("");
		return *out ? ST_OK : st__err(e->err, ST_ENOMEM, "out of memory");
	}
	st_error_clear(&e2);
	if ((rc = st_secrets_decrypt(e->sec, ct->v, &pt, &len, &e2)) != ST_OK)
		return at(e->err, st__err(e->err, rc, "config '%s': secure value does not decrypt "
					  "(%s)", e->key, e2.message[0] ? e2.message
									: st_strerror(rc)), ct);
	*out = json_stringn(pt, len);
	st_secret_free(pt, len);
	if (!*out)
		return at(e->err, st__err(e->err, ST_EFORMAT, "config '%s': a secure value is not "
					  "UTF-8 text", e->key), ct);
	return ST_OK;
}

/* A float as the value reaches Pulumi: NaN and infinities fail json.Marshal; zero comes back
 * from the YAML round trip as the integer 0. */
static int float_json(evalctx *e, const ynode *n, double f, json_t **out)
{
	if (isnan(f) || isinf(f))
		return at(e->err, st__err(e->err, ST_EFORMAT, "config '%s': %s is not a value "
					  "Pulumi loads (json: unsupported value: %s)", e->key, n->v,
					  isnan(f) ? "NaN" : f > 0 ? "+Inf" : "-Inf"), n);
	*out = f == 0 ? json_integer(0) : json_real(f);
	return ST_OK;
}

/* A node as the Go value Pulumi's Plaintext holds after decryption (json_t, new). */
static int to_json(evalctx *e, const ynode *n, json_t **out)
{
	const ynode *ct;
	resolved r;
	int rc = ST_OK;

	*out = NULL;
	if (++e->v->visits > MAX_VISITS)
		return at(e->err, st__err(e->err, ST_ELIMIT, "more than %d values through aliases",
					  MAX_VISITS), n);
	if ((ct = secure_of(n)))
		return decrypt(e, ct, out);
	if (n->kind == 's') {
		if (resolve(n, &r) != ST_OK)
			return st__err(e->err, ST_ENOMEM, "out of memory");
		switch (r.k) {
		case V_STR: *out = json_stringn(n->v, n->n); break;
		case V_NULL: *out = json_null(); break;
		case V_BOOL: *out = json_boolean(r.i); break;
		case V_INT: *out = json_integer(r.i); break;
		/* json.Number of a uint64 beyond int64 is read back as a float64 */
		case V_UINT: *out = json_real((double)r.u); break;
		case V_FLOAT: rc = float_json(e, n, r.f, out); break;
		}
	} else {
		*out = n->kind == 'm' ? json_object() : json_array();
		for (size_t i = 0; rc == ST_OK && *out && i < n->nkids; i++) {
			json_t *c = NULL;
			if ((rc = to_json(e, n->kids[i + (n->kind == 'm')], &c)) != ST_OK)
				break;
			if (n->kind == 'm' ? json_object_setn_new(*out, n->kids[i]->v, n->kids[i]->n, c)
					   : json_array_append_new(*out, c))
				rc = ST_ENOMEM;
			i += n->kind == 'm';
		}
	}
	if (rc == ST_OK && !*out)
		rc = ST_ENOMEM;
	if (rc != ST_OK) {
		json_decref(*out);
		*out = NULL;
	}
	return rc == ST_ENOMEM ? st__err(e->err, rc, "out of memory") : rc;
}

typedef struct okey {
	const char *k;
	size_t len;
	const json_t *v;
} okey;

static int cmp_okey(const void *a, const void *b)
{
	const okey *x = a, *y = b;
	int c = memcmp(x->k, y->k, x->len < y->len ? x->len : y->len);
	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Go's json.Marshal of v into b: compact, map keys sorted bytewise, <, >, & escaped; an
 * integer with every digit (config keeps int64: object.go's json.Number.Int64 first), a real
 * as float64, strings as the writer escapes them. 0, or -1 out of memory. */
static int go_json_to(st_buf *b, const json_t *v, const st_style *st)
{
	if (json_is_integer(v)) {
		st_buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return b->oom ? -1 : 0;
	}
	if (json_is_array(v)) {
		st_buf_addc(b, '[');
		for (size_t i = 0; i < json_array_size(v); i++) {
			if (i)
				st_buf_addc(b, ',');
			if (go_json_to(b, json_array_get(v, i), st) < 0)
				return -1;
		}
		st_buf_addc(b, ']');
		return b->oom ? -1 : 0;
	}
	if (json_is_object(v)) {
		size_t n = json_object_size(v), i = 0;
		okey *keys = n ? malloc(n * sizeof(*keys)) : NULL;
		int rc = 0;
		if (n && !keys)
			return -1;
		for (void *it = json_object_iter((json_t *)v); it;
		     it = json_object_iter_next((json_t *)v, it), i++)
			keys[i] = (okey){json_object_iter_key(it), json_object_iter_key_len(it),
					 json_object_iter_value(it)};
		qsort(keys, n, sizeof(*keys), cmp_okey);
		st_buf_addc(b, '{');
		for (i = 0; i < n && !rc; i++) {
			json_t *k = json_stringn_nocheck(keys[i].k, keys[i].len);
			if (i)
				st_buf_addc(b, ',');
			rc = !k || st__json_write(b, k, st, ST_K_PROPMAP, NULL) != ST_OK ? -1 : 0;
			json_decref(k);
			st_buf_addc(b, ':');
			if (!rc)
				rc = go_json_to(b, keys[i].v, st);
		}
		st_buf_addc(b, '}');
		free(keys);
		return rc || b->oom ? -1 : 0;
	}
	return st__json_write(b, v, st, ST_K_PROPMAP, NULL) == ST_OK ? 0 : -1;
}

/* Go's json.Marshal of v (go_json_to). New; NULL out of memory. */
static char *go_json(const json_t *v)
{
	st_style st;
	st_buf b;
	st_style_checkpoint(&st);
	st.escape_html = 1;
	st_buf_init(&b);
	if (go_json_to(&b, v, &st) < 0) {
		st_buf_free(&b);
		return NULL;
	}
	return st_buf_take(&b, NULL);
}

/* A config value as config.Value.Value gives it: a top-level scalar's text, an object's JSON.
 * *out (new) is the property value: a string, or a plaintext secret of it. */
static int top_value(evalctx *e, const ynode *n, json_t **out)
{
	json_t *j = NULL, *s = NULL;
	char num[40], *text = NULL;
	resolved r;
	int rc;

	*out = NULL;
	if (n->kind == 's' && resolve(n, &r) == ST_OK && r.k == V_UINT) {
		snprintf(num, sizeof(num), "%llu", r.u); /* a scalar keeps its uint64 text */
		s = json_string(num);
	} else if ((rc = to_json(e, n, &j)) != ST_OK) {
		return rc;
	} else if (json_is_string(j)) {
		s = json_copy(j);
	} else if (json_is_null(j)) {
		/* yaml.v3 calls no unmarshaler for a null: the zero config.Value, whose Value() is
		 * "" (loaders.go checkForEmptyConfig: "`null` in YAML, but `""` in pulumi") */
		s = json_string("");
	} else if (json_is_boolean(j) || json_is_number(j) || json_is_object(j) ||
		   json_is_array(j)) {
		text = go_json(j);
		s = text ? json_string(text) : NULL;
	}
	if (text && e->secure) /* it holds the decrypted secure leaves */
		sodium_memzero(text, strlen(text));
	free(text);
	json_decref(j);
	if (s && e->secure) {
		/* a plaintext secret: its value as Pulumi serializes it (json.Marshal of the string) */
		char *pt = go_json(s);
		json_t *sec = pt ? json_pack("{s:s,s:s}", ST_SIG_KEY, ST_SIG_SECRET, "plaintext", pt)
				 : NULL;
		if (pt)
			sodium_memzero(pt, strlen(pt));
		free(pt);
		json_decref(s);
		s = sec;
	}
	if (!s)
		return st__err(e->err, ST_ENOMEM, "out of memory");
	*out = s;
	return ST_OK;
}

/* ---- the file ---- */

static const ynode *member(const ynode *m, const char *key)
{
	for (size_t i = 0; m && m->kind == 'm' && i + 1 < m->nkids; i += 2)
		if (m->kids[i]->kind == 's' && !strcmp(m->kids[i]->v, key))
			return m->kids[i + 1];
	return NULL;
}

/* config.ParseKey after stackConfigNamespacedWithProject: the namespace and the name. */
static int parse_key(const st__cfgvals *v, const ynode *k, char **ns, char **name,
		     st_error *err)
{
	const char *s = k->v, *c1 = strchr(s, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	*ns = *name = NULL;
	if (!c1) {
		*ns = st_strdup(v->project ? v->project : "");
		*name = st_strdup(s);
	} else if (!c2) {
		*ns = st_strndup(s, (size_t)(c1 - s));
		*name = st_strdup(c1 + 1);
	} else if (c2 - c1 == 7 && !strncmp(c1 + 1, "config", 6) && !strchr(c2 + 1, ':')) {
		*ns = st_strndup(s, (size_t)(c1 - s));
		*name = st_strdup(c2 + 1);
	} else {
		return at(err, st__err(err, ST_EFORMAT, "could not parse %s as a configuration key "
				       "(configuration keys should be of the form "
				       "`<namespace>:<name>`)", s), k);
	}
	if (!*ns || !*name) {
		free(*ns);
		free(*name);
		*ns = *name = NULL;
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	return ST_OK;
}

void st__config_values_free(st__cfgvals *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->nall; i++) {
		free(v->all[i]->v);
		free(v->all[i]->kids);
		free(v->all[i]);
	}
	free(v->all);
	free(v->name);
	free(v->project);
	free(v->provider);
	free(v);
}

/* Every key parses and every value loads (nothing decrypted). */
static int check_values(st__cfgvals *v, st_error *err)
{
	const ynode *c = v->config;
	int rc = ST_OK;
	for (size_t i = 0; rc == ST_OK && c && i + 1 < c->nkids; i += 2) {
		char *ns, *name;
		json_t *j = NULL;
		evalctx e = {v, c->kids[i]->v, NULL, 0, err};
		if ((rc = parse_key(v, c->kids[i], &ns, &name, err)) == ST_OK)
			rc = top_value(&e, c->kids[i + 1], &j);
		json_decref(j);
		free(ns);
		free(name);
	}
	return rc;
}

static int load(st__cfgvals *v, const char *text, size_t len, st_error *err)
{
	builder b;
	const ynode *sp, *env;
	int rc;

	memset(&b, 0, sizeof(b));
	b.v = v;
	b.err = err;
	st_strmap_init(&b.anchors);
	rc = build(&b, text, len);
	for (int i = 0; i < MAX_DEPTH; i++)
		free(b.anchor[i]);
	st_strmap_free(&b.anchors);
	for (size_t i = 0; i < b.nnames; i++)
		free(b.names[i]);
	free(b.names);
	if (rc != ST_OK || !v->root)
		return rc;
	if ((rc = check_keys(v, v->root, err)) != ST_OK)
		return rc;
	v->config = (ynode *)member(v->root, "config");
	if (v->config && v->config->kind == 's') {
		resolved r;
		if (resolve(v->config, &r) != ST_OK)
			return st__err(err, ST_ENOMEM, "out of memory");
		if (r.k == V_NULL)
			v->config = NULL; /* `config:` with nothing: none */
	}
	if (v->config && v->config->kind != 'm')
		return at(err, st__err(err, ST_EFORMAT, "config is not a mapping"), v->config);
	if ((env = member(v->root, "environment")) && env->kind != 's')
		return at(err, st__err(err, ST_EUNSUPPORTED, "the file imports ESC environments "
				       "('environment'), whose values Pulumi adds to the config: "
				       "statetool cannot open them"), env);
	if ((sp = member(v->root, "secretsprovider")) && sp->kind == 's' &&
	    !(v->provider = st_strdup(sp->v)))
		return st__err(err, ST_ENOMEM, "out of memory");
	return check_values(v, err);
}

int st__config_values_load(const char *text, size_t len, const char *name, const char *project,
			   st__cfgvals **out, st_error *err)
{
	st__cfgvals *v = calloc(1, sizeof(*v));
	char *salt = NULL;
	int rc;

	*out = NULL;
	if (!v || (name && !(v->name = st_strdup(name))) ||
	    (project && !(v->project = st_strdup(project)))) {
		st__config_values_free(v);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	/* st_config_scan first: what it refuses (UTF-16, keys given twice, not a mapping), with
	 * the messages secrets rekey gives */
	rc = st_config_scan(text, len, name, &salt, NULL, err);
	free(salt);
	if (rc == ST_OK)
		rc = load(v, text, len, err);
	if (rc != ST_OK) {
		st__err_file(err, name);
		st__config_values_free(v);
		return rc;
	}
	*out = v;
	return ST_OK;
}

/* Is `pkg` a dynamic provider's (it gets every key, namespaced)? */
static int dynamic(const char *pkg)
{
	return !strcmp(pkg, "pulumi-nodejs") || !strcmp(pkg, "pulumi-python");
}

/* Does the package's part of the config hold a secure value? */
static int package_secure(st__cfgvals *v, const char *pkg, const ynode **which, st_error *err)
{
	const ynode *c = v->config;
	int rc = ST_OK;
	*which = NULL;
	for (size_t i = 0; rc == ST_OK && !*which && c && i + 1 < c->nkids; i += 2) {
		char *ns, *name;
		json_t *j = NULL;
		evalctx e = {v, c->kids[i]->v, NULL, 0, err};
		if ((rc = parse_key(v, c->kids[i], &ns, &name, err)) != ST_OK)
			break;
		if ((dynamic(pkg) || !strcmp(ns, pkg)) &&
		    (rc = top_value(&e, c->kids[i + 1], &j)) == ST_OK && e.secure)
			*which = c->kids[i];
		json_decref(j);
		free(ns);
		free(name);
	}
	return rc;
}

int st__config_values_inputs(st__cfgvals *v, const char *pkg, st_secrets *key, json_t **out,
			     int *needs_key, st_error *err)
{
	const ynode *c = v->config, *sec = NULL;
	const char *p = v->provider;
	int rc;

	*out = NULL;
	*needs_key = 0;
	v->visits = 0;
	if ((rc = package_secure(v, pkg, &sec, err)) != ST_OK)
		goto fail;
	if (sec && p && *p && strcmp(p, "passphrase") && strcmp(p, "default")) {
		rc = at(err, st__err(err, ST_EUNSUPPORTED, "config '%s' is secured by the secrets "
				     "provider '%.*s', which statetool cannot open (passphrase only)",
				     sec->v, (int)(strstr(p, "://") ? strstr(p, "://") - p
								   : (ptrdiff_t)strlen(p)), p),
			sec);
		goto fail;
	}
	if (sec && !key) {
		*needs_key = 1;
		return st__err(err, ST_EPASSPHRASE, "config '%s' is a secure value: the config's "
			       "secrets provider must be opened", sec->v);
	}
	if (!(*out = json_object()))
		return st__err(err, ST_ENOMEM, "out of memory");
	for (size_t i = 0; c && i + 1 < c->nkids; i += 2) {
		char *ns, *name;
		json_t *j = NULL;
		evalctx e = {v, c->kids[i]->v, key, 0, err};
		if ((rc = parse_key(v, c->kids[i], &ns, &name, err)) != ST_OK)
			goto fail;
		if (dynamic(pkg) || !strcmp(ns, pkg)) {
			/* a dynamic provider's keys keep their namespace */
			char *full = st_asprintf("%s:%s", ns, name);
			if (!full)
				rc = st__err(err, ST_ENOMEM, "out of memory");
			else if ((rc = top_value(&e, c->kids[i + 1], &j)) == ST_OK &&
				 json_object_set_new(*out, dynamic(pkg) ? full : name, j))
				rc = st__err(err, ST_ENOMEM, "out of memory");
			free(full);
		}
		free(ns);
		free(name);
		if (rc != ST_OK)
			goto fail;
	}
	return ST_OK;
fail:
	json_decref(*out);
	*out = NULL;
	st__err_file(err, v->name);
	return rc;
}
