/*
 * The compiled form of a JSON Schema set (lib/json/schema.c compiles, lib/json/schema_validate.c
 * validates against it): one node per subschema, $ref edges resolved to nodes.
 */
#ifndef ST_JSON_SCHEMA_H
#define ST_JSON_SCHEMA_H

#include "internal.h"

#include <regex.h>

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

/* The compiled node of the schema named by uri (absolute, with or without a fragment), or
 * NULL. */
const snode *st__schema_node(st_schema *s, const char *uri);

/* Compiles the ECMA-262 pattern src into *re (POSIX ERE); ST_EUNSUPPORTED for what POSIX
 * cannot express (`where`, the schema location, names it in the message), ST_ENOMEM. */
int st__schema_regex(regex_t *re, const char *src, st_error *err, const char *where);

#endif
