/*
 * A JSON Schema (draft 2020-12) validator over jansson values.
 *
 * Schemas are compiled once into a graph of nodes (one per subschema, $ref edges resolved to
 * nodes), so validating a large state never re-reads schema objects. Implemented keywords:
 * $id, $anchor, $ref, $defs (and definitions), $schema/$comment and annotations, type, enum,
 * const, properties, patternProperties, additionalProperties, required, propertyNames,
 * dependentRequired, dependentSchemas, minProperties, maxProperties, items, prefixItems,
 * contains, minContains, maxContains, minItems, maxItems, uniqueItems, allOf, anyOf, oneOf, not,
 * if/then/else, minLength, maxLength, pattern, minimum, maximum, exclusiveMinimum,
 * exclusiveMaximum, multipleOf, format (an annotation, as 2020-12 has it by default), and
 * boolean schemas. Not implemented: $dynamicRef, $dynamicAnchor, unevaluatedProperties,
 * unevaluatedItems, $vocabulary, and references to documents that were not added.
 *
 * Patterns are ECMA-262 regular expressions; they are translated to POSIX extended regular
 * expressions (\d \w \s and their negations, (?: groups); a pattern using anything POSIX cannot
 * express (look-around, back-references, \p{...}) is refused at compile time.
 */
#include "internal.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	T_NULL = 1, T_BOOLEAN = 2, T_OBJECT = 4, T_ARRAY = 8, T_NUMBER = 16, T_STRING = 32,
	T_INTEGER = 64
};

typedef struct snode snode;

typedef struct prop {
	const char *key;
	snode *schema;
} prop;

typedef struct patprop {
	regex_t re;
	const char *source;
	snode *schema;
} patprop;

typedef struct nodelist {
	snode **items;
	size_t count;
} nodelist;

struct snode {
	int boolean; /* -1: an object schema; 0: false; 1: true */
	char *location; /* schema location for messages: base URI + pointer */
	unsigned types;
	prop *props;
	size_t nprops;
	patprop *pats;
	size_t npats;
	snode *additional;
	json_t *required; /* array of strings (borrowed from the document) */
	snode *property_names;
	json_t *dep_required; /* object: key -> array of names */
	prop *dep_schemas;
	size_t ndep_schemas;
	snode *items;
	nodelist prefix;
	snode *contains;
	double min_contains, max_contains;
	nodelist all_of, any_of, one_of;
	snode *not_;
	snode *if_, *then_, *else_;
	json_t *const_;
	json_t *enum_;
	regex_t pattern;
	int has_pattern;
	const char *pattern_src;
	int has_min, has_max, has_xmin, has_xmax, has_mult;
	double minimum, maximum, xminimum, xmaximum, multiple_of;
	double min_len, max_len, min_items, max_items, min_props, max_props;
	int has_min_len, has_max_len, has_min_items, has_max_items, has_min_props, has_max_props;
	int unique;
	int has_contains_bounds;
	char *ref; /* resolved absolute URI, until linked */
	snode *ref_node;
	const json_t *json; /* the schema value */
};

typedef struct resource {
	char *uri; /* absolute, without fragment */
	const json_t *json;
} resource;

typedef struct anchor {
	char *uri; /* absolute uri#name */
	const json_t *json;
} anchor;

typedef struct jmap_entry {
	const json_t *json;
	snode *node;
	char *base;
} jmap_entry;

struct st_schema {
	json_t **docs;
	size_t ndocs;
	resource *res;
	size_t nres, capres;
	anchor *anchors;
	size_t nanchors, capanchors;
	/* json value -> compiled node, open addressing */
	jmap_entry *map;
	size_t mapcap, mapcount;
	snode **nodes;
	size_t nnodes, capnodes;
	char *default_uri;
	int compiled;
	/* A compilation that failed half way leaves nodes that are not whole: the set then keeps
	 * refusing, with the first error, whatever is added later. */
	st_error broken;
	unsigned seq;
};

static const char *const unsupported_keywords[] = {"$dynamicRef", "$dynamicAnchor",
						   "unevaluatedProperties", "unevaluatedItems",
						   "$vocabulary", "$recursiveRef", "$recursiveAnchor",
						   NULL};

int st_schema_keyword_supported(const char *kw)
{
	for (int i = 0; unsupported_keywords[i]; i++)
		if (!strcmp(kw, unsupported_keywords[i]))
			return 0;
	return 1;
}

/* ---- URIs ---- */

static int has_scheme(const char *s)
{
	const char *p = s;
	if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
		return 0;
	while (*p && *p != ':' && *p != '/' && *p != '?' && *p != '#')
		p++;
	return *p == ':';
}

static char *strip_fragment(const char *uri)
{
	const char *h = strchr(uri, '#');
	return h ? st_strndup(uri, (size_t)(h - uri)) : st_strdup(uri);
}

/* Removes "." and ".." segments of a path (RFC 3986 5.2.4), in place. */
static void remove_dots(char *path)
{
	size_t n = strlen(path), nseg = 0;
	char **seg = calloc(n + 2, sizeof(*seg));
	char *copy = st_strdup(path), *p, *save = NULL;
	int absolute = path[0] == '/', trailing = n > 0 && path[n - 1] == '/';

	if (!seg || !copy) {
		free(seg);
		free(copy);
		return;
	}
	for (p = strtok_r(copy, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		trailing = 0;
		if (!strcmp(p, ".")) {
			trailing = 1;
		} else if (!strcmp(p, "..")) {
			if (nseg)
				nseg--;
			trailing = 1;
		} else {
			seg[nseg++] = p;
		}
	}
	if (n > 0 && path[n - 1] == '/')
		trailing = 1;
	char *o = path;
	if (absolute)
		*o++ = '/';
	for (size_t i = 0; i < nseg; i++) {
		size_t l = strlen(seg[i]);
		memmove(o, seg[i], l);
		o += l;
		if (i + 1 < nseg || trailing)
			*o++ = '/';
	}
	*o = '\0';
	free(seg);
	free(copy);
}

/* Resolves `ref` against `base` (RFC 3986, enough for schema identifiers). New string. */
static char *resolve_uri(const char *base, const char *ref)
{
	char *b, *r;
	if (!ref || !*ref)
		return st_strdup(base);
	if (has_scheme(ref) || !base || !*base)
		return st_strdup(ref);
	b = strip_fragment(base);
	if (!b)
		return NULL;
	if (ref[0] == '#') {
		r = st_asprintf("%s%s", b, ref);
		free(b);
		return r;
	}
	const char *colon = strchr(b, ':');
	size_t scheme_len = colon ? (size_t)(colon - b) : 0;
	if (ref[0] == '/' && ref[1] == '/') {
		r = st_asprintf("%.*s:%s", (int)scheme_len, b, ref);
		free(b);
		return r;
	}
	/* authority */
	const char *after = colon ? colon + 1 : b;
	const char *path_start = after;
	if (after[0] == '/' && after[1] == '/') {
		path_start = strchr(after + 2, '/');
		if (!path_start)
			path_start = after + strlen(after);
	}
	if (ref[0] == '/') {
		r = st_asprintf("%.*s%s", (int)(path_start - b), b, ref);
	} else {
		const char *q = strchr(path_start, '?');
		size_t plen = q ? (size_t)(q - path_start) : strlen(path_start);
		const char *slash = NULL;
		for (const char *p = path_start; p < path_start + plen; p++)
			if (*p == '/')
				slash = p;
		if (!slash && path_start == after && colon)
			/* a URN-like base with no path: the reference replaces everything after
			 * the scheme */
			r = st_asprintf("%.*s:%s", (int)scheme_len, b, ref);
		else if (!slash)
			r = st_asprintf("%.*s/%s", (int)(path_start - b), b, ref);
		else
			r = st_asprintf("%.*s%s", (int)(slash + 1 - b), b, ref);
	}
	free(b);
	if (!r)
		return NULL;
	/* normalise dot segments in the path part only */
	{
		char *c = strchr(r, ':');
		char *p = c ? c + 1 : r;
		if (p[0] == '/' && p[1] == '/')
			p = strchr(p + 2, '/');
		if (p) {
			char *hash = strchr(p, '#'), save = 0;
			if (hash) {
				save = *hash;
				*hash = '\0';
			}
			char *tmp = st_strdup(p);
			char *frag = hash ? st_strdup(hash + 1) : NULL;
			if (hash)
				*hash = save;
			if (tmp) {
				remove_dots(tmp);
				size_t prefix = (size_t)(p - r);
				char *n = frag ? st_asprintf("%.*s%s#%s", (int)prefix, r, tmp, frag)
					       : st_asprintf("%.*s%s", (int)prefix, r, tmp);
				free(tmp);
				if (n) {
					free(r);
					r = n;
				}
			}
			free(frag);
		}
	}
	return r;
}

/* ---- maps ---- */

static size_t ptr_hash(const void *p)
{
	uintptr_t x = (uintptr_t)p;
	x ^= x >> 17;
	x *= 0xed5ad4bbU;
	x ^= x >> 11;
	return (size_t)x;
}

static jmap_entry *map_find(st_schema *s, const json_t *j)
{
	if (!s->mapcap)
		return NULL;
	for (size_t i = ptr_hash(j) & (s->mapcap - 1);; i = (i + 1) & (s->mapcap - 1)) {
		if (!s->map[i].json)
			return NULL;
		if (s->map[i].json == j)
			return &s->map[i];
	}
}

static jmap_entry *map_put(st_schema *s, const json_t *j)
{
	if ((s->mapcount + 1) * 2 > s->mapcap) {
		size_t nc = s->mapcap ? s->mapcap * 2 : 256;
		jmap_entry *nm = calloc(nc, sizeof(*nm));
		if (!nm)
			return NULL;
		for (size_t i = 0; i < s->mapcap; i++) {
			if (!s->map[i].json)
				continue;
			size_t k = ptr_hash(s->map[i].json) & (nc - 1);
			while (nm[k].json)
				k = (k + 1) & (nc - 1);
			nm[k] = s->map[i];
		}
		free(s->map);
		s->map = nm;
		s->mapcap = nc;
	}
	size_t i = ptr_hash(j) & (s->mapcap - 1);
	while (s->map[i].json && s->map[i].json != j)
		i = (i + 1) & (s->mapcap - 1);
	if (!s->map[i].json) {
		s->map[i].json = j;
		s->mapcount++;
	}
	return &s->map[i];
}

static int add_resource(st_schema *s, const char *uri, const json_t *j)
{
	for (size_t i = 0; i < s->nres; i++)
		if (!strcmp(s->res[i].uri, uri))
			return ST_OK;
	if (s->nres == s->capres) {
		size_t nc = s->capres ? s->capres * 2 : 16;
		resource *nr = realloc(s->res, nc * sizeof(*nr));
		if (!nr)
			return ST_ENOMEM;
		s->res = nr;
		s->capres = nc;
	}
	s->res[s->nres].uri = st_strdup(uri);
	s->res[s->nres].json = j;
	if (!s->res[s->nres].uri)
		return ST_ENOMEM;
	s->nres++;
	return ST_OK;
}

static int add_anchor(st_schema *s, const char *uri, const json_t *j)
{
	if (s->nanchors == s->capanchors) {
		size_t nc = s->capanchors ? s->capanchors * 2 : 16;
		anchor *na = realloc(s->anchors, nc * sizeof(*na));
		if (!na)
			return ST_ENOMEM;
		s->anchors = na;
		s->capanchors = nc;
	}
	s->anchors[s->nanchors].uri = st_strdup(uri);
	s->anchors[s->nanchors].json = j;
	if (!s->anchors[s->nanchors].uri)
		return ST_ENOMEM;
	s->nanchors++;
	return ST_OK;
}

/* ---- indexing: $id, $anchor, and the base URI of every subschema ---- */

static const char *const schema_map_keys[] = {"properties", "patternProperties", "$defs",
					      "definitions", "dependentSchemas", NULL};
static const char *const schema_array_keys[] = {"prefixItems", "allOf", "anyOf", "oneOf", NULL};
static const char *const schema_single_keys[] = {
	"items", "not", "if", "then", "else", "additionalProperties", "contains", "propertyNames",
	"unevaluatedProperties", "unevaluatedItems", "contentSchema", NULL};

static int in_keys(const char *const *keys, const char *k)
{
	for (size_t i = 0; keys[i]; i++)
		if (!strcmp(keys[i], k))
			return 1;
	return 0;
}

static int index_schema(st_schema *s, const json_t *j, const char *base, int depth)
{
	const char *k, *id, *anc;
	json_t *v;
	char *mybase;
	jmap_entry *e;
	int rc = ST_OK;

	if (depth > 512)
		return ST_ELIMIT;
	if (!json_is_object(j)) {
		if (json_is_boolean(j)) {
			e = map_put(s, j);
			if (!e)
				return ST_ENOMEM;
			if (!e->base && !(e->base = st_strdup(base)))
				return ST_ENOMEM;
		}
		return ST_OK;
	}
	id = st_json_str(j, "$id");
	mybase = id ? resolve_uri(base, id) : st_strdup(base);
	if (!mybase)
		return ST_ENOMEM;
	if (id) {
		char *nofrag = strip_fragment(mybase);
		if (!nofrag || add_resource(s, nofrag, j)) {
			free(nofrag);
			free(mybase);
			return ST_ENOMEM;
		}
		free(mybase);
		mybase = nofrag;
	}
	anc = st_json_str(j, "$anchor");
	if (anc) {
		char *a = st_asprintf("%s#%s", mybase, anc);
		if (!a || add_anchor(s, a, j)) {
			free(a);
			free(mybase);
			return ST_ENOMEM;
		}
		free(a);
	}
	e = map_put(s, j);
	if (!e) {
		free(mybase);
		return ST_ENOMEM;
	}
	if (!e->base)
		e->base = st_strdup(mybase);
	json_object_foreach((json_t *)j, k, v) {
		if (rc)
			break;
		if (in_keys(schema_map_keys, k) && json_is_object(v)) {
			const char *k2;
			json_t *v2;
			json_object_foreach(v, k2, v2)
				if (!rc)
					rc = index_schema(s, v2, mybase, depth + 1);
		} else if (in_keys(schema_array_keys, k) && json_is_array(v)) {
			size_t i;
			json_t *v2;
			json_array_foreach(v, i, v2)
				if (!rc)
					rc = index_schema(s, v2, mybase, depth + 1);
		} else if (in_keys(schema_single_keys, k)) {
			rc = index_schema(s, v, mybase, depth + 1);
		}
	}
	free(mybase);
	return rc;
}

/* ---- patterns ---- */

/* ECMA-262 to POSIX ERE. Returns NULL when the pattern uses what ERE cannot express. */
/* The POSIX ERE for an ECMA-262 pattern (new), or NULL: for a feature POSIX lacks, or when out of
 * memory (*oom set). */
static char *ecma_to_ere(const char *p, int *oom)
{
	st_buf b;
	int in_class = 0;
	st_buf_init(&b);
	for (; *p; p++) {
		if (*p == '\\') {
			p++;
			switch (*p) {
			case 'd': st_buf_adds(&b, in_class ? "0-9" : "[0-9]"); break;
			case 'D': if (in_class) goto bad; st_buf_adds(&b, "[^0-9]"); break;
			case 'w': st_buf_adds(&b, in_class ? "A-Za-z0-9_" : "[A-Za-z0-9_]"); break;
			case 'W': if (in_class) goto bad; st_buf_adds(&b, "[^A-Za-z0-9_]"); break;
			case 's': st_buf_adds(&b, in_class ? " \t\n\r\f\v" : "[[:space:]]"); break;
			case 'S': if (in_class) goto bad; st_buf_adds(&b, "[^[:space:]]"); break;
			case 't': st_buf_addc(&b, '\t'); break;
			case 'n': st_buf_addc(&b, '\n'); break;
			case 'r': st_buf_addc(&b, '\r'); break;
			case 'f': st_buf_addc(&b, '\f'); break;
			case 'v': st_buf_addc(&b, '\v'); break;
			case '\0': goto bad;
			default:
				if ((*p >= '0' && *p <= '9') || *p == 'p' || *p == 'P' || *p == 'b' ||
				    *p == 'B' || *p == 'u' || *p == 'x' || *p == 'c' || *p == 'k')
					goto bad;
				if (in_class) {
					if (*p == ']' || *p == '\\' || *p == '-' || *p == '^')
						goto bad; /* no portable escape inside [] */
					st_buf_addc(&b, *p);
				} else {
					st_buf_addc(&b, '\\');
					st_buf_addc(&b, *p);
				}
			}
			continue;
		}
		if (in_class) {
			if (*p == ']')
				in_class = 0;
			if (*p == '[' && p[1] == ':')
				goto bad;
			st_buf_addc(&b, *p);
			continue;
		}
		if (*p == '[') {
			in_class = 1;
			st_buf_addc(&b, '[');
			if (p[1] == '^') {
				st_buf_addc(&b, '^');
				p++;
			}
			if (p[1] == ']') { /* "[]" matches nothing in ECMA; POSIX disagrees */
				goto bad;
			}
			continue;
		}
		if (*p == '(' && p[1] == '?') {
			if (p[2] == ':') {
				st_buf_addc(&b, '(');
				p += 2;
				continue;
			}
			goto bad;
		}
		if ((*p == '*' || *p == '+' || *p == '?' || *p == '}') && p[1] == '?')
			goto bad; /* lazy quantifiers */
		st_buf_addc(&b, *p);
	}
	if (in_class)
		goto bad;
	if (b.oom)
		*oom = 1;
	return st_buf_take(&b, NULL);
bad:
	st_buf_free(&b);
	return NULL;
}

static int compile_regex(regex_t *re, const char *src, st_error *err, const char *where)
{
	int oom = 0, rc;
	char *ere = ecma_to_ere(src, &oom);
	if (oom)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (!ere)
		return st__err(err, ST_EUNSUPPORTED,
			       "pattern '%s' at %s uses regular expression features statetool "
			       "does not support",
			       src, where);
	rc = regcomp(re, ere, REG_EXTENDED | REG_NOSUB);
	free(ere);
	if (rc == REG_ESPACE)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (rc)
		return st__err(err, ST_EUNSUPPORTED, "pattern '%s' at %s does not compile", src,
			       where);
	return ST_OK;
}

/* ---- compilation ---- */

static snode *compile(st_schema *s, const json_t *j, const char *base, const char *loc,
		      st_error *err, int depth);

static int compile_list(st_schema *s, json_t *arr, const char *base, const char *loc,
			const char *kw, nodelist *out, st_error *err, int depth)
{
	size_t i, n = json_array_size(arr);
	json_t *v;
	if (!json_is_array(arr))
		return st__err(err, ST_EINVAL, "schema %s: '%s' must be an array", loc, kw);
	out->items = calloc(n ? n : 1, sizeof(*out->items));
	if (!out->items)
		return st__err(err, ST_ENOMEM, "out of memory");
	out->count = n;
	json_array_foreach(arr, i, v) {
		char *l = st_asprintf("%s/%s/%zu", loc, kw, i);
		out->items[i] = compile(s, v, base, l ? l : loc, err, depth + 1);
		free(l);
		if (!out->items[i])
			return err && err->code ? err->code : ST_EINVAL;
	}
	return ST_OK;
}

static snode *compile_child(st_schema *s, const json_t *v, const char *base, const char *loc,
			    const char *kw, st_error *err, int depth)
{
	char *l = st_asprintf("%s/%s", loc, kw);
	snode *n = compile(s, v, base, l ? l : loc, err, depth + 1);
	free(l);
	return n;
}

static int num_kw(const json_t *j, const char *kw, double *out)
{
	json_t *v = json_object_get(j, kw);
	if (!json_is_number(v))
		return 0;
	*out = json_number_value(v);
	return 1;
}

static int parse_types(json_t *t, unsigned *out)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {{"null", T_NULL},     {"boolean", T_BOOLEAN}, {"object", T_OBJECT},
		     {"array", T_ARRAY},   {"number", T_NUMBER},   {"string", T_STRING},
		     {"integer", T_INTEGER}};
	json_t *v;
	size_t i;
	*out = 0;
	if (json_is_string(t)) {
		for (size_t k = 0; k < 7; k++)
			if (!strcmp(json_string_value(t), names[k].name))
				*out = names[k].bit;
		return *out ? 0 : -1;
	}
	if (!json_is_array(t))
		return -1;
	json_array_foreach(t, i, v) {
		unsigned b = 0;
		if (parse_types(v, &b) < 0)
			return -1;
		*out |= b;
	}
	return 0;
}

static snode *new_node(st_schema *s, const json_t *j, const char *loc)
{
	snode *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	if (s->nnodes == s->capnodes) {
		size_t nc = s->capnodes ? s->capnodes * 2 : 64;
		snode **a = realloc(s->nodes, nc * sizeof(*a));
		if (!a) {
			free(n);
			return NULL;
		}
		s->nodes = a;
		s->capnodes = nc;
	}
	s->nodes[s->nnodes++] = n;
	n->json = j;
	n->boolean = -1;
	n->min_contains = 1;
	n->max_contains = -1;
	n->location = st_strdup(loc);
	return n->location ? n : NULL; /* the node is freed with the set */
}

static snode *compile(st_schema *s, const json_t *j, const char *base, const char *loc,
		      st_error *err, int depth)
{
	jmap_entry *e = map_find(s, j);
	snode *n;
	json_t *v;
	const char *mybase;

	if (e && e->node)
		return e->node;
	if (depth > 512) {
		st__err(err, ST_ELIMIT, "schema nesting too deep at %s", loc);
		return NULL;
	}
	if (!json_is_object(j) && !json_is_boolean(j)) {
		st__err(err, ST_EINVAL, "schema %s: a schema must be an object or a boolean", loc);
		return NULL;
	}
	if (!e)
		e = map_put(s, j);
	if (!e) {
		st__err(err, ST_ENOMEM, "out of memory");
		return NULL;
	}
	if (!e->base)
		e->base = st_strdup(base);
	mybase = e->base ? e->base : base;
	n = new_node(s, j, loc);
	if (!n) {
		st__err(err, ST_ENOMEM, "out of memory");
		return NULL;
	}
	e = map_find(s, j); /* map_put above may have grown the table */
	e->node = n;
	if (json_is_boolean(j)) {
		n->boolean = json_is_true(j);
		return n;
	}
	{
		const char *k;
		json_object_foreach((json_t *)j, k, v) {
			if (!strcmp(k, "$schema") && json_is_string(v) &&
			    strncmp(json_string_value(v),
				    "https://json-schema.org/draft/2020-12/schema", 44) != 0) {
				/* Another metaschema may switch vocabularies on or off; statetool
				 * knows only draft 2020-12's. */
				st__err(err, ST_EUNSUPPORTED,
					"schema %s declares $schema '%s'; statetool implements draft "
					"2020-12 only",
					loc, json_string_value(v));
				return NULL;
			}
			if (!st_schema_keyword_supported(k)) {
				st__err(err, ST_EUNSUPPORTED,
					"schema %s uses '%s', which statetool does not implement",
					loc, k);
				return NULL;
			}
		}
	}
	if ((v = json_object_get(j, "type")) && parse_types(v, &n->types) < 0) {
		st__err(err, ST_EINVAL, "schema %s: bad 'type'", loc);
		return NULL;
	}
	if ((v = json_object_get(j, "properties")) && json_is_object(v)) {
		const char *k;
		json_t *pv;
		size_t i = 0;
		n->props = calloc(json_object_size(v) + 1, sizeof(*n->props));
		if (!n->props) {
			st__err(err, ST_ENOMEM, "out of memory");
			return NULL;
		}
		json_object_foreach(v, k, pv) {
			char *l = st_asprintf("%s/properties/%s", loc, k);
			n->props[i].key = k;
			n->props[i].schema = compile(s, pv, mybase, l ? l : loc, err, depth + 1);
			free(l);
			if (!n->props[i].schema)
				return NULL;
			i++;
		}
		n->nprops = i;
	}
	if ((v = json_object_get(j, "patternProperties")) && json_is_object(v)) {
		const char *k;
		json_t *pv;
		size_t i = 0;
		n->pats = calloc(json_object_size(v) + 1, sizeof(*n->pats));
		if (!n->pats) {
			st__err(err, ST_ENOMEM, "out of memory");
			return NULL;
		}
		json_object_foreach(v, k, pv) {
			char *l = st_asprintf("%s/patternProperties/%s", loc, k);
			if (compile_regex(&n->pats[i].re, k, err, l ? l : loc)) {
				free(l);
				return NULL;
			}
			n->npats = i + 1;
			n->pats[i].source = k;
			n->pats[i].schema = compile(s, pv, mybase, l ? l : loc, err, depth + 1);
			free(l);
			if (!n->pats[i].schema)
				return NULL;
			i++;
		}
	}
	if ((v = json_object_get(j, "additionalProperties")) &&
	    !(n->additional = compile_child(s, v, mybase, loc, "additionalProperties", err, depth)))
		return NULL;
	if ((v = json_object_get(j, "required")) && json_is_array(v))
		n->required = v;
	if ((v = json_object_get(j, "propertyNames")) &&
	    !(n->property_names = compile_child(s, v, mybase, loc, "propertyNames", err, depth)))
		return NULL;
	if ((v = json_object_get(j, "dependentRequired")) && json_is_object(v))
		n->dep_required = v;
	if ((v = json_object_get(j, "dependentSchemas")) && json_is_object(v)) {
		const char *k;
		json_t *pv;
		size_t i = 0;
		n->dep_schemas = calloc(json_object_size(v) + 1, sizeof(*n->dep_schemas));
		if (!n->dep_schemas) {
			st__err(err, ST_ENOMEM, "out of memory");
			return NULL;
		}
		json_object_foreach(v, k, pv) {
			char *l = st_asprintf("%s/dependentSchemas/%s", loc, k);
			n->dep_schemas[i].key = k;
			n->dep_schemas[i].schema = compile(s, pv, mybase, l ? l : loc, err, depth + 1);
			free(l);
			if (!n->dep_schemas[i].schema)
				return NULL;
			i++;
		}
		n->ndep_schemas = i;
	}
	if ((v = json_object_get(j, "items")) &&
	    !(n->items = compile_child(s, v, mybase, loc, "items", err, depth)))
		return NULL;
	if ((v = json_object_get(j, "prefixItems")) &&
	    compile_list(s, v, mybase, loc, "prefixItems", &n->prefix, err, depth))
		return NULL;
	if ((v = json_object_get(j, "contains")) &&
	    !(n->contains = compile_child(s, v, mybase, loc, "contains", err, depth)))
		return NULL;
	num_kw(j, "minContains", &n->min_contains);
	num_kw(j, "maxContains", &n->max_contains);
	if ((v = json_object_get(j, "allOf")) &&
	    compile_list(s, v, mybase, loc, "allOf", &n->all_of, err, depth))
		return NULL;
	if ((v = json_object_get(j, "anyOf")) &&
	    compile_list(s, v, mybase, loc, "anyOf", &n->any_of, err, depth))
		return NULL;
	if ((v = json_object_get(j, "oneOf")) &&
	    compile_list(s, v, mybase, loc, "oneOf", &n->one_of, err, depth))
		return NULL;
	if ((v = json_object_get(j, "not")) &&
	    !(n->not_ = compile_child(s, v, mybase, loc, "not", err, depth)))
		return NULL;
	if ((v = json_object_get(j, "if"))) {
		if (!(n->if_ = compile_child(s, v, mybase, loc, "if", err, depth)))
			return NULL;
		if ((v = json_object_get(j, "then")) &&
		    !(n->then_ = compile_child(s, v, mybase, loc, "then", err, depth)))
			return NULL;
		if ((v = json_object_get(j, "else")) &&
		    !(n->else_ = compile_child(s, v, mybase, loc, "else", err, depth)))
			return NULL;
	}
	n->const_ = json_object_get(j, "const");
	if ((v = json_object_get(j, "enum")) && json_is_array(v))
		n->enum_ = v;
	if ((v = json_object_get(j, "pattern")) && json_is_string(v)) {
		char *l = st_asprintf("%s/pattern", loc);
		if (compile_regex(&n->pattern, json_string_value(v), err, l ? l : loc)) {
			free(l);
			return NULL;
		}
		free(l);
		n->has_pattern = 1;
		n->pattern_src = json_string_value(v);
	}
	n->has_min = num_kw(j, "minimum", &n->minimum);
	n->has_max = num_kw(j, "maximum", &n->maximum);
	n->has_xmin = num_kw(j, "exclusiveMinimum", &n->xminimum);
	n->has_xmax = num_kw(j, "exclusiveMaximum", &n->xmaximum);
	n->has_mult = num_kw(j, "multipleOf", &n->multiple_of);
	n->has_min_len = num_kw(j, "minLength", &n->min_len);
	n->has_max_len = num_kw(j, "maxLength", &n->max_len);
	n->has_min_items = num_kw(j, "minItems", &n->min_items);
	n->has_max_items = num_kw(j, "maxItems", &n->max_items);
	n->has_min_props = num_kw(j, "minProperties", &n->min_props);
	n->has_max_props = num_kw(j, "maxProperties", &n->max_props);
	n->unique = json_is_true(json_object_get(j, "uniqueItems"));
	if ((v = json_object_get(j, "$ref")) && json_is_string(v)) {
		n->ref = resolve_uri(mybase, json_string_value(v));
		if (!n->ref) {
			st__err(err, ST_ENOMEM, "out of memory");
			return NULL;
		}
	}
	return n;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes (URI fragment) and unescapes (~0, ~1) one JSON Pointer token. */
static char *pointer_token(const char *s, size_t n)
{
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n &&
		    hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
			*o++ = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else if (s[i] == '~' && i + 1 < n && s[i + 1] == '0') {
			*o++ = '~';
			i++;
		} else if (s[i] == '~' && i + 1 < n && s[i + 1] == '1') {
			*o++ = '/';
			i++;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

static const json_t *follow_pointer(const json_t *j, const char *ptr)
{
	while (j && *ptr == '/') {
		const char *next = strchr(ptr + 1, '/');
		size_t n = next ? (size_t)(next - ptr - 1) : strlen(ptr + 1);
		char *tok = pointer_token(ptr + 1, n);
		if (!tok)
			return NULL;
		if (json_is_object(j)) {
			j = json_object_get(j, tok);
		} else if (json_is_array(j)) {
			char *end;
			unsigned long idx = strtoul(tok, &end, 10);
			j = *end || !*tok ? NULL : json_array_get(j, idx);
		} else {
			j = NULL;
		}
		free(tok);
		ptr += n + 1;
	}
	return *ptr ? NULL : j;
}

static const json_t *lookup_uri(st_schema *s, const char *uri)
{
	char *doc = strip_fragment(uri);
	const char *frag = strchr(uri, '#');
	const json_t *base = NULL;

	if (!doc)
		return NULL;
	for (size_t i = 0; i < s->nres; i++)
		if (!strcmp(s->res[i].uri, doc))
			base = s->res[i].json;
	free(doc);
	if (!frag || !frag[1])
		return base;
	if (frag[1] == '/')
		return base ? follow_pointer(base, frag + 1) : NULL;
	for (size_t i = 0; i < s->nanchors; i++)
		if (!strcmp(s->anchors[i].uri, uri))
			return s->anchors[i].json;
	return NULL;
}

/* ---- public: building ---- */

int st_schema_new(st_schema **out, st_error *err)
{
	*out = calloc(1, sizeof(**out));
	return *out ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}

int st_schema_add(st_schema *s, json_t *doc, const char *uri, st_error *err)
{
	ST_ASSERT_ARG(s);
	char *u;
	const char *id = st_json_str(doc, "$id");
	int rc;

	if (uri)
		u = st_strdup(uri);
	else if (id)
		u = resolve_uri("", id);
	else
		u = st_asprintf("urn:statetool:schema:%u", ++s->seq);
	if (!u)
		return st__err(err, ST_ENOMEM, "out of memory");
	json_t **docs = realloc(s->docs, (s->ndocs + 1) * sizeof(*docs));
	if (!docs) {
		free(u);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	s->docs = docs;
	s->docs[s->ndocs++] = json_incref(doc);
	{
		char *nofrag = strip_fragment(u);
		rc = nofrag ? add_resource(s, nofrag, doc) : ST_ENOMEM;
		if (!rc)
			rc = index_schema(s, doc, nofrag, 0);
		if (!s->default_uri && !rc) {
			s->default_uri = nofrag;
			nofrag = NULL;
		}
		free(nofrag);
	}
	free(u);
	s->compiled = 0;
	if (rc)
		return st__err(err, rc, rc == ST_ELIMIT ? "schema nesting too deep"
							: "out of memory");
	return ST_OK;
}

static int compile_all(st_schema *s, st_error *err);

int st_schema_compile(st_schema *s, st_error *err)
{
	st_error local;
	int rc;

	ST_ASSERT_ARG(s);
	if (s->broken.code)
		return st__err_copy(err, &s->broken);
	st_error_clear(&local);
	rc = compile_all(s, &local);
	if (rc != ST_OK && rc != ST_ENOTFOUND)
		s->broken = local;
	if (rc == ST_ENOTFOUND)
		local.code = rc = ST_EUNSUPPORTED; /* a $ref to a document not added (yet) */
	return rc ? st__err_copy(err, &local) : ST_OK;
}

/* st_schema_compile's work: ST_ENOTFOUND for a $ref to a document not added (every node is
 * whole then: adding it and compiling again works), another code for a failure half way. */
static int compile_all(st_schema *s, st_error *err)
{
	for (size_t i = 0; i < s->ndocs; i++) {
		jmap_entry *e = map_find(s, s->docs[i]);
		if (!compile(s, s->docs[i], e && e->base ? e->base : "", e && e->base ? e->base : "",
			     err, 0))
			return err->code ? err->code : ST_EINVAL;
	}
	/* Link references; a reference may reach a subschema not compiled yet. */
	for (size_t i = 0; i < s->nnodes; i++) {
		snode *n = s->nodes[i];
		if (!n->ref || n->ref_node)
			continue;
		const json_t *t = lookup_uri(s, n->ref);
		if (!t)
			return st__err(err, ST_ENOTFOUND,
				       "schema %s: cannot resolve $ref '%s' (only the schemas given "
				       "to statetool are known; nothing is fetched)",
				       n->location, n->ref);
		jmap_entry *e = map_find(s, t);
		char *base = e && e->base ? st_strdup(e->base) : strip_fragment(n->ref);
		n->ref_node = compile(s, t, base ? base : "", n->ref, err, 0);
		free(base);
		if (!n->ref_node)
			return err->code ? err->code : ST_EINVAL;
	}
	s->compiled = 1;
	return ST_OK;
}

void st_schema_free(st_schema *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nnodes; i++) {
		snode *n = s->nodes[i];
		for (size_t k = 0; k < n->npats; k++)
			regfree(&n->pats[k].re);
		if (n->has_pattern)
			regfree(&n->pattern);
		free(n->pats);
		free(n->props);
		free(n->dep_schemas);
		free(n->prefix.items);
		free(n->all_of.items);
		free(n->any_of.items);
		free(n->one_of.items);
		free(n->ref);
		free(n->location);
		free(n);
	}
	free(s->nodes);
	for (size_t i = 0; i < s->mapcap; i++)
		free(s->map[i].base);
	free(s->map);
	for (size_t i = 0; i < s->nres; i++)
		free(s->res[i].uri);
	free(s->res);
	for (size_t i = 0; i < s->nanchors; i++)
		free(s->anchors[i].uri);
	free(s->anchors);
	for (size_t i = 0; i < s->ndocs; i++)
		json_decref(s->docs[i]);
	free(s->docs);
	free(s->default_uri);
	free(s);
}

/* ---- validation ---- */

typedef struct vctx {
	st_problems *out;
	st_buf ptr;
	const st_schema_opts *opts;
	size_t errors;
	int inst_depth;       /* how deep in the instance we are */
	int depth_reported;   /* the depth warning is given once */
	const json_t *ref_inst; /* the instance of the innermost $ref followed */
	int ref_n;            /* $refs followed in a row on that same instance */
	int overflow;
} vctx;

/* Values nested deeper than this are not checked against the schema (the walk is recursive;
 * Go accepts 10,000 levels, no real state comes near 1,000). */
#define SCHEMA_MAX_INSTANCE_DEPTH 1000
/* More $refs than this followed in a row without moving in the instance is a loop. */
#define SCHEMA_MAX_REF_CHAIN 256

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER:
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

static void report(vctx *c, const snode *n, const char *keyword, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void report(vctx *c, const snode *n, const char *keyword, const char *fmt, ...)
{
	va_list ap;
	char msg[1024], rule[96];
	st_severity sev = ST_SEV_ERROR;

	c->errors++;
	if (!c->out)
		return;
	if (c->opts && c->opts->max_problems && c->out->count >= c->opts->max_problems) {
		c->overflow = 1;
		return;
	}
	if (c->opts && c->opts->additional_severity && !strcmp(keyword, "additionalProperties"))
		sev = c->opts->additional_severity;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(rule, sizeof(rule), "%s/%s",
		 c->opts && c->opts->rule_prefix ? c->opts->rule_prefix : "schema", keyword);
	(void)n;
	st_problems_add(c->out, sev, rule, c->ptr.data ? c->ptr.data : "", NULL, "%s", msg);
}

static size_t utf8_count(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			c++;
	return c;
}

static int is_integer(double d)
{
	return isfinite(d) && d == floor(d);
}

static int type_ok(unsigned types, const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return types & T_OBJECT;
	case JSON_ARRAY: return types & T_ARRAY;
	case JSON_STRING: return types & T_STRING;
	case JSON_TRUE:
	case JSON_FALSE: return types & T_BOOLEAN;
	case JSON_NULL: return types & T_NULL;
	case JSON_INTEGER:
	case JSON_REAL:
		return (types & T_NUMBER) ||
		       ((types & T_INTEGER) && is_integer(json_number_value(v)));
	}
	return 0;
}

/* JSON equality where numbers compare by value (1 and 1.0 are equal). */
static int jequal(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	if (json_typeof(a) != json_typeof(b))
		return 0;
	if (json_is_array(a)) {
		size_t n = json_array_size(a);
		if (n != json_array_size(b))
			return 0;
		for (size_t i = 0; i < n; i++)
			if (!jequal(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	}
	if (json_is_object(a)) {
		const char *k;
		size_t klen;
		json_t *v;
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_keylen_foreach((json_t *)a, k, klen, v) {
			json_t *w = json_object_getn(b, k, klen);
			if (!w || !jequal(v, w))
				return 0;
		}
		return 1;
	}
	return json_equal(a, b);
}

static int validate(vctx *c, const snode *n, const json_t *v, int silent);

/* Runs a subschema silently: 1 valid, 0 not. */
static int probe(vctx *c, const snode *n, const json_t *v)
{
	return validate(c, n, v, 1);
}

static const snode *find_prop(const snode *n, const char *key)
{
	for (size_t i = 0; i < n->nprops; i++)
		if (!strcmp(n->props[i].key, key))
			return n->props[i].schema;
	return NULL;
}

#define FAIL_KW(kw, ...)                                                                      \
	do {                                                                                  \
		ok = 0;                                                                       \
		if (silent)                                                                   \
			goto done;                                                            \
		report(c, n, kw, __VA_ARGS__);                                                \
	} while (0)

static int validate_object(vctx *c, const snode *n, const json_t *v, int silent)
{
	int ok = 1;
	const char *k;
	size_t klen;
	json_t *pv;
	size_t mark = c->ptr.len;

	if (n->required) {
		size_t i;
		json_t *r;
		json_array_foreach(n->required, i, r) {
			if (json_is_string(r) && !json_object_getn(v, json_string_value(r),
								   json_string_length(r)))
				FAIL_KW("required", "missing required field '%s'",
					json_string_value(r));
		}
	}
	if (n->has_min_props && (double)json_object_size(v) < n->min_props)
		FAIL_KW("minProperties", "has %zu fields, fewer than %g", json_object_size(v),
			n->min_props);
	if (n->has_max_props && (double)json_object_size(v) > n->max_props)
		FAIL_KW("maxProperties", "has %zu fields, more than %g", json_object_size(v),
			n->max_props);
	if (n->dep_required) {
		const char *dk;
		json_t *names;
		json_object_foreach(n->dep_required, dk, names) {
			size_t i;
			json_t *nm;
			if (!json_object_get(v, dk))
				continue;
			json_array_foreach(names, i, nm)
				if (json_is_string(nm) && !json_object_get(v, json_string_value(nm)))
					FAIL_KW("dependentRequired",
						"field '%s' requires field '%s'", dk,
						json_string_value(nm));
		}
	}
	for (size_t i = 0; i < n->ndep_schemas; i++) {
		if (json_object_get(v, n->dep_schemas[i].key)) {
			if (!validate(c, n->dep_schemas[i].schema, v, silent)) {
				ok = 0;
				if (silent)
					goto done;
			}
		}
	}
	if (!n->nprops && !n->npats && !n->additional && !n->property_names)
		goto done;
	json_object_keylen_foreach((json_t *)v, k, klen, pv) {
		int matched = 0;
		const snode *ps = strlen(k) == klen ? find_prop(n, k) : NULL;
		c->ptr.len = mark;
		st_pointer_add_key(&c->ptr, k, klen);
		if (n->property_names) {
			json_t *ks = json_stringn_nocheck(k, klen);
			int pn = probe(c, n->property_names, ks);
			json_decref(ks);
			if (!pn)
				FAIL_KW("propertyNames", "field name '%s' is not allowed", k);
		}
		if (ps) {
			matched = 1;
			c->inst_depth++;
			int r = validate(c, ps, pv, silent);
			c->inst_depth--;
			if (!r) {
				ok = 0;
				if (silent)
					goto done;
			}
		}
		for (size_t i = 0; i < n->npats; i++) {
			if (regexec(&n->pats[i].re, k, 0, NULL, 0) == 0) {
				matched = 1;
				c->inst_depth++;
				int r = validate(c, n->pats[i].schema, pv, silent);
				c->inst_depth--;
				if (!r) {
					ok = 0;
					if (silent)
						goto done;
				}
			}
		}
		if (!matched && n->additional) {
			if (n->additional->boolean == 0) {
				FAIL_KW("additionalProperties", "unknown field '%s'", k);
			} else {
				c->inst_depth++;
				int r = validate(c, n->additional, pv, silent);
				c->inst_depth--;
				if (!r) {
					ok = 0;
					if (silent)
						goto done;
				}
			}
		}
	}
done:
	c->ptr.len = mark;
	if (c->ptr.data)
		c->ptr.data[mark] = '\0';
	return ok;
}

static int validate_array(vctx *c, const snode *n, const json_t *v, int silent)
{
	int ok = 1;
	size_t len = json_array_size(v), mark = c->ptr.len;

	if (n->has_min_items && (double)len < n->min_items)
		FAIL_KW("minItems", "has %zu items, fewer than %g", len, n->min_items);
	if (n->has_max_items && (double)len > n->max_items)
		FAIL_KW("maxItems", "has %zu items, more than %g", len, n->max_items);
	if (n->unique) {
		for (size_t i = 0; i < len; i++)
			for (size_t k = i + 1; k < len; k++)
				if (jequal(json_array_get(v, i), json_array_get(v, k)))
					FAIL_KW("uniqueItems", "items %zu and %zu are equal", i, k);
	}
	for (size_t i = 0; i < len; i++) {
		const snode *s = i < n->prefix.count ? n->prefix.items[i] : n->items;
		if (!s)
			continue;
		c->ptr.len = mark;
		st_pointer_add_index(&c->ptr, i);
		c->inst_depth++;
		int r = validate(c, s, json_array_get(v, i), silent);
		c->inst_depth--;
		if (!r) {
			ok = 0;
			if (silent)
				goto done;
		}
	}
	c->ptr.len = mark;
	if (c->ptr.data)
		c->ptr.data[mark] = '\0';
	if (n->contains) {
		size_t hits = 0;
		for (size_t i = 0; i < len; i++)
			if (probe(c, n->contains, json_array_get(v, i)))
				hits++;
		if ((double)hits < n->min_contains)
			FAIL_KW(n->min_contains == 1 ? "contains" : "minContains",
				"%zu item%s match 'contains', fewer than %g", hits,
				hits == 1 ? "" : "s", n->min_contains);
		if (n->max_contains >= 0 && (double)hits > n->max_contains)
			FAIL_KW("maxContains", "%zu items match 'contains', more than %g", hits,
				n->max_contains);
	}
done:
	c->ptr.len = mark;
	if (c->ptr.data)
		c->ptr.data[mark] = '\0';
	return ok;
}

/* When every alternative but one rejects the value by its type alone, that one is what the
 * author meant: its detailed errors say more than "matches none of the forms". */
static const snode *sole_candidate(const nodelist *l, const json_t *v)
{
	const snode *cand = NULL;
	for (size_t i = 0; i < l->count; i++) {
		const snode *b = l->items[i];
		while (b->boolean < 0 && !b->types && b->ref_node && b->json &&
		       json_object_size(b->json) == 1)
			b = b->ref_node; /* look through a bare {"$ref": ...} */
		if (b->boolean == 0 || (b->types && !type_ok(b->types, v)))
			continue;
		if (cand)
			return NULL;
		cand = l->items[i];
	}
	return cand;
}

static int validate(vctx *c, const snode *n, const json_t *v, int silent)
{
	int ok = 1;

	if (n->boolean == 1)
		return 1;
	if (n->boolean == 0) {
		if (!silent)
			report(c, n, "false", "no value is allowed here");
		return 0;
	}
	if (c->inst_depth > SCHEMA_MAX_INSTANCE_DEPTH) {
		c->depth_reported = 1; /* reported once, after the walk */
		return 1;
	}
	if (n->types && !type_ok(n->types, v)) {
		char want[96] = "";
		static const char *const nm[] = {"null", "boolean", "object", "array", "number",
						 "string", "integer"};
		for (int i = 0; i < 7; i++)
			if (n->types & (1u << i)) {
				if (want[0])
					strncat(want, " or ", sizeof(want) - strlen(want) - 1);
				strncat(want, nm[i], sizeof(want) - strlen(want) - 1);
			}
		FAIL_KW("type", "expected %s, got %s", want, type_name(v));
	}
	if (n->const_ && !jequal(n->const_, v))
		FAIL_KW("const", "value does not equal the required constant");
	if (n->enum_) {
		size_t i;
		json_t *e;
		int found = 0;
		json_array_foreach(n->enum_, i, e)
			if (jequal(e, v)) {
				found = 1;
				break;
			}
		if (!found) {
			if (json_is_string(v))
				FAIL_KW("enum", "'%s' is not one of the allowed values",
					json_string_value(v));
			else
				FAIL_KW("enum", "value is not one of the allowed values");
		}
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		size_t len = json_string_length(v);
		if (n->has_min_len || n->has_max_len) {
			size_t cps = utf8_count(s, len);
			if (n->has_min_len && (double)cps < n->min_len)
				FAIL_KW("minLength", "string is shorter than %g characters",
					n->min_len);
			if (n->has_max_len && (double)cps > n->max_len)
				FAIL_KW("maxLength", "string is longer than %g characters",
					n->max_len);
		}
		if (n->has_pattern && regexec(&n->pattern, s, 0, NULL, 0) != 0)
			FAIL_KW("pattern", "'%.200s' does not match the pattern '%s'", s,
				n->pattern_src);
	} else if (json_is_number(v)) {
		double d = json_number_value(v);
		if (n->has_min && d < n->minimum)
			FAIL_KW("minimum", "%g is less than the minimum %g", d, n->minimum);
		if (n->has_max && d > n->maximum)
			FAIL_KW("maximum", "%g is greater than the maximum %g", d, n->maximum);
		if (n->has_xmin && d <= n->xminimum)
			FAIL_KW("exclusiveMinimum", "%g is not greater than %g", d, n->xminimum);
		if (n->has_xmax && d >= n->xmaximum)
			FAIL_KW("exclusiveMaximum", "%g is not less than %g", d, n->xmaximum);
		if (n->has_mult && n->multiple_of > 0) {
			double q = d / n->multiple_of;
			if (!isfinite(q) || fabs(q - nearbyint(q)) > 1e-9 * fmax(1.0, fabs(q)))
				FAIL_KW("multipleOf", "%g is not a multiple of %g", d,
					n->multiple_of);
		}
	} else if (json_is_object(v)) {
		if (!validate_object(c, n, v, silent)) {
			ok = 0;
			if (silent)
				goto done;
		}
	} else if (json_is_array(v)) {
		if (!validate_array(c, n, v, silent)) {
			ok = 0;
			if (silent)
				goto done;
		}
	}
	for (size_t i = 0; i < n->all_of.count; i++)
		if (!validate(c, n->all_of.items[i], v, silent)) {
			ok = 0;
			if (silent)
				goto done;
		}
	if (n->any_of.count) {
		int any = 0;
		for (size_t i = 0; i < n->any_of.count && !any; i++)
			any = probe(c, n->any_of.items[i], v);
		if (!any) {
			const snode *only = silent ? NULL : sole_candidate(&n->any_of, v);
			if (only) {
				ok = 0;
				validate(c, only, v, 0);
			} else {
				FAIL_KW("anyOf",
					"value matches none of the allowed forms (anyOf at %s)",
					n->location);
			}
		}
	}
	if (n->one_of.count) {
		int count = 0;
		for (size_t i = 0; i < n->one_of.count && count < 2; i++)
			count += probe(c, n->one_of.items[i], v);
		const snode *only = count == 0 && !silent ? sole_candidate(&n->one_of, v) : NULL;
		if (only) {
			ok = 0;
			validate(c, only, v, 0);
		} else if (count == 0)
			FAIL_KW("oneOf", "value matches none of the allowed forms (oneOf at %s)",
				n->location);
		else if (count > 1)
			FAIL_KW("oneOf", "value matches more than one form (oneOf at %s)",
				n->location);
	}
	if (n->not_ && probe(c, n->not_, v))
		FAIL_KW("not", "value matches a form that is not allowed (not at %s)", n->location);
	if (n->if_) {
		const snode *branch = probe(c, n->if_, v) ? n->then_ : n->else_;
		if (branch && !validate(c, branch, v, silent)) {
			ok = 0;
			if (silent)
				goto done;
		}
	}
	if (n->ref_node) {
		const json_t *saved_inst = c->ref_inst;
		int saved_n = c->ref_n;
		if (c->ref_inst == v) {
			c->ref_n++;
		} else {
			c->ref_inst = v;
			c->ref_n = 1;
		}
		if (c->ref_n > SCHEMA_MAX_REF_CHAIN) {
			ok = 0;
			if (!silent)
				report(c, n, "$ref", "schema $ref loop at %s (more than %d references "
				       "followed without consuming the value)",
				       n->location, SCHEMA_MAX_REF_CHAIN);
		} else if (!validate(c, n->ref_node, v, silent)) {
			ok = 0;
		}
		c->ref_inst = saved_inst;
		c->ref_n = saved_n;
	}
done:
	return ok;
}

int st_schema_validate(st_schema *s, const char *uri, const json_t *instance,
		       const st_schema_opts *opts, st_problems *out, st_error *err)
{
	ST_ASSERT_ARG(s);
	vctx c;
	const json_t *root;
	jmap_entry *e;
	int rc;

	if (opts && (rc = st__opts_version(opts->version, ST_SCHEMA_OPTS_VERSION, "st_schema_opts",
					   err)) != ST_OK)
		return rc;
	if (!s->compiled && (rc = st_schema_compile(s, err)) != ST_OK)
		return rc;
	root = lookup_uri(s, uri ? uri : s->default_uri);
	e = root ? map_find(s, root) : NULL;
	if (!e || !e->node)
		return st__err(err, ST_ENOTFOUND, "no schema '%s'", uri ? uri : "(default)");
	memset(&c, 0, sizeof(c));
	c.out = out;
	c.opts = opts;
	st_buf_init(&c.ptr);
	if (opts && opts->root_pointer)
		st_buf_adds(&c.ptr, opts->root_pointer);
	st_buf_reserve(&c.ptr, 256);
	if (c.ptr.data)
		c.ptr.data[c.ptr.len] = '\0';
	if (!validate(&c, e->node, instance, out == NULL) && c.errors == 0)
		c.errors = 1; /* counted silently: one is enough to say invalid */
	if (c.depth_reported && out)
		st_problems_add(out, ST_SEV_WARNING, "schema/depth",
				opts && opts->root_pointer ? opts->root_pointer : "", NULL,
				"values nested deeper than %d levels were not checked against the "
				"schema",
				SCHEMA_MAX_INSTANCE_DEPTH);
	st_buf_free(&c.ptr);
	if (c.ptr.oom)
		return st__err(err, ST_ENOMEM, "out of memory");
	return (int)(c.errors > INT32_MAX ? INT32_MAX : c.errors);
}
