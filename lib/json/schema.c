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
#include "json/schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
				st_path_remove_dots(tmp);
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

/* The keywords of a schema object: draft 2020-12's, as far as statetool implements them. */
static int check_keywords(const json_t *j, const char *loc, st_error *err)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)j, k, v) {
		if (!strcmp(k, "$schema") && json_is_string(v) &&
		    strncmp(json_string_value(v), "https://json-schema.org/draft/2020-12/schema",
			    44) != 0) {
			/* Another metaschema may switch vocabularies on or off; statetool
			 * knows only draft 2020-12's. */
			return st__err(err, ST_EUNSUPPORTED,
				       "schema %s declares $schema '%s'; statetool implements draft "
				       "2020-12 only",
				       loc, json_string_value(v));
		}
		if (!st_schema_keyword_supported(k))
			return st__err(err, ST_EUNSUPPORTED,
				       "schema %s uses '%s', which statetool does not implement", loc,
				       k);
	}
	return ST_OK;
}

/* The node of a schema value, found (compiled before) or new (*fresh set: its keywords are
 * still to be compiled); NULL on error (err set). */
static snode *node_for(st_schema *s, const json_t *j, const char *base, const char *loc,
		       const char **mybase, int *fresh, st_error *err, int depth)
{
	jmap_entry *e = map_find(s, j);
	snode *n;

	*fresh = 0;
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
	*mybase = e->base ? e->base : base;
	n = new_node(s, j, loc);
	if (!n) {
		st__err(err, ST_ENOMEM, "out of memory");
		return NULL;
	}
	e = map_find(s, j); /* map_put above may have grown the table */
	e->node = n;
	*fresh = 1;
	return n;
}

/* A keyword whose value maps names to schemas (properties, dependentSchemas): *out, *count. */
static int compile_props(st_schema *s, json_t *v, const char *base, const char *loc,
			 const char *kw, prop **out, size_t *count, st_error *err, int depth)
{
	const char *k;
	json_t *pv;
	size_t i = 0;
	*out = calloc(json_object_size(v) + 1, sizeof(**out));
	if (!*out)
		return st__err(err, ST_ENOMEM, "out of memory");
	json_object_foreach(v, k, pv) {
		char *l = st_asprintf("%s/%s/%s", loc, kw, k);
		(*out)[i].key = k;
		(*out)[i].schema = compile(s, pv, base, l ? l : loc, err, depth + 1);
		free(l);
		if (!(*out)[i].schema)
			return ST_EINVAL;
		i++;
	}
	*count = i;
	return ST_OK;
}

static int compile_pattern_props(st_schema *s, snode *n, json_t *v, const char *base,
				 const char *loc, st_error *err, int depth)
{
	const char *k;
	json_t *pv;
	size_t i = 0;
	n->pats = calloc(json_object_size(v) + 1, sizeof(*n->pats));
	if (!n->pats)
		return st__err(err, ST_ENOMEM, "out of memory");
	json_object_foreach(v, k, pv) {
		char *l = st_asprintf("%s/patternProperties/%s", loc, k);
		if (st__schema_regex(&n->pats[i].re, k, err, l ? l : loc)) {
			free(l);
			return ST_EINVAL;
		}
		n->npats = i + 1;
		n->pats[i].source = k;
		n->pats[i].schema = compile(s, pv, base, l ? l : loc, err, depth + 1);
		free(l);
		if (!n->pats[i].schema)
			return ST_EINVAL;
		i++;
	}
	return ST_OK;
}

/* The keywords that apply to objects. */
static int compile_object_kws(st_schema *s, snode *n, const json_t *j, const char *base,
			      const char *loc, st_error *err, int depth)
{
	json_t *v;
	if ((v = json_object_get(j, "properties")) && json_is_object(v) &&
	    compile_props(s, v, base, loc, "properties", &n->props, &n->nprops, err, depth))
		return ST_EINVAL;
	if ((v = json_object_get(j, "patternProperties")) && json_is_object(v) &&
	    compile_pattern_props(s, n, v, base, loc, err, depth))
		return ST_EINVAL;
	if ((v = json_object_get(j, "additionalProperties")) &&
	    !(n->additional = compile_child(s, v, base, loc, "additionalProperties", err, depth)))
		return ST_EINVAL;
	if ((v = json_object_get(j, "required")) && json_is_array(v))
		n->required = v;
	if ((v = json_object_get(j, "propertyNames")) &&
	    !(n->property_names = compile_child(s, v, base, loc, "propertyNames", err, depth)))
		return ST_EINVAL;
	if ((v = json_object_get(j, "dependentRequired")) && json_is_object(v))
		n->dep_required = v;
	if ((v = json_object_get(j, "dependentSchemas")) && json_is_object(v) &&
	    compile_props(s, v, base, loc, "dependentSchemas", &n->dep_schemas,
			  &n->ndep_schemas, err, depth))
		return ST_EINVAL;
	return ST_OK;
}

/* The keywords that apply to arrays, and the applicators (allOf ... if/then/else). */
static int compile_array_and_applicators(st_schema *s, snode *n, const json_t *j,
					 const char *base, const char *loc, st_error *err,
					 int depth)
{
	json_t *v;
	if ((v = json_object_get(j, "items")) &&
	    !(n->items = compile_child(s, v, base, loc, "items", err, depth)))
		return ST_EINVAL;
	if ((v = json_object_get(j, "prefixItems")) &&
	    compile_list(s, v, base, loc, "prefixItems", &n->prefix, err, depth))
		return ST_EINVAL;
	if ((v = json_object_get(j, "contains")) &&
	    !(n->contains = compile_child(s, v, base, loc, "contains", err, depth)))
		return ST_EINVAL;
	num_kw(j, "minContains", &n->min_contains);
	num_kw(j, "maxContains", &n->max_contains);
	if ((v = json_object_get(j, "allOf")) &&
	    compile_list(s, v, base, loc, "allOf", &n->all_of, err, depth))
		return ST_EINVAL;
	if ((v = json_object_get(j, "anyOf")) &&
	    compile_list(s, v, base, loc, "anyOf", &n->any_of, err, depth))
		return ST_EINVAL;
	if ((v = json_object_get(j, "oneOf")) &&
	    compile_list(s, v, base, loc, "oneOf", &n->one_of, err, depth))
		return ST_EINVAL;
	if ((v = json_object_get(j, "not")) &&
	    !(n->not_ = compile_child(s, v, base, loc, "not", err, depth)))
		return ST_EINVAL;
	if ((v = json_object_get(j, "if"))) {
		if (!(n->if_ = compile_child(s, v, base, loc, "if", err, depth)))
			return ST_EINVAL;
		if ((v = json_object_get(j, "then")) &&
		    !(n->then_ = compile_child(s, v, base, loc, "then", err, depth)))
			return ST_EINVAL;
		if ((v = json_object_get(j, "else")) &&
		    !(n->else_ = compile_child(s, v, base, loc, "else", err, depth)))
			return ST_EINVAL;
	}
	return ST_OK;
}

/* The assertions on values (const, enum, pattern, bounds) and $ref. */
static int compile_assertions(snode *n, const json_t *j, const char *base, const char *loc,
			      st_error *err)
{
	json_t *v;
	n->const_ = json_object_get(j, "const");
	if ((v = json_object_get(j, "enum")) && json_is_array(v))
		n->enum_ = v;
	if ((v = json_object_get(j, "pattern")) && json_is_string(v)) {
		char *l = st_asprintf("%s/pattern", loc);
		if (st__schema_regex(&n->pattern, json_string_value(v), err, l ? l : loc)) {
			free(l);
			return ST_EINVAL;
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
		n->ref = resolve_uri(base, json_string_value(v));
		if (!n->ref)
			return st__err(err, ST_ENOMEM, "out of memory");
	}
	return ST_OK;
}

/* Compiles a schema value into its node (once: a value met again gives the same node), its
 * keywords in the order of the phases above; NULL on error (err set). */
static snode *compile(st_schema *s, const json_t *j, const char *base, const char *loc,
		      st_error *err, int depth)
{
	const char *mybase = base;
	int fresh;
	snode *n = node_for(s, j, base, loc, &mybase, &fresh, err, depth);
	json_t *v;

	if (!n || !fresh)
		return n;
	if (json_is_boolean(j)) {
		n->boolean = json_is_true(j);
		return n;
	}
	if (check_keywords(j, loc, err) != ST_OK)
		return NULL;
	if ((v = json_object_get(j, "type")) && parse_types(v, &n->types) < 0) {
		st__err(err, ST_EINVAL, "schema %s: bad 'type'", loc);
		return NULL;
	}
	if (compile_object_kws(s, n, j, mybase, loc, err, depth) != ST_OK ||
	    compile_array_and_applicators(s, n, j, mybase, loc, err, depth) != ST_OK ||
	    compile_assertions(n, j, mybase, loc, err) != ST_OK)
		return NULL;
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
	ST_ASSERT_ARG(out);
	*out = calloc(1, sizeof(**out));
	return *out ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}

int st_schema_add(st_schema *s, json_t *doc, const char *uri, st_error *err)
{
	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG(doc);
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

const snode *st__schema_node(st_schema *s, const char *uri)
{
	const json_t *root = lookup_uri(s, uri);
	jmap_entry *e = root ? map_find(s, root) : NULL;
	return e ? e->node : NULL;
}
