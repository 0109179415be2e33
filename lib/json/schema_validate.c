/*
 * Validation against a compiled JSON Schema set (lib/json/schema.c): every problem reported,
 * each with its keyword's rule, the instance's JSON Pointer and the schema location.
 */
#include "json/schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- validation ---- */

typedef struct vctx {
	st_problems *out;
	st_segs segs;         /* where in the instance: made into a pointer only for a report */
	st_buf ptr;           /* that pointer (root_pointer first) */
	int oom;
	const st_schema_opts *opts;
	size_t errors;
	int inst_depth;       /* how deep in the instance we are */
	int depth_reported;   /* the depth warning is given once */
	const json_t *ref_inst; /* the instance of the innermost $ref followed */
	int ref_n;            /* $refs followed in a row on that same instance */
	int overflow;
	int in_secret;        /* inside a secret ({sig: secret, plaintext: "<JSON text>"}): a
			       * message never quotes a string (its members are all strings) */
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
	c->ptr.len = 0;
	if (c->opts && c->opts->root_pointer)
		st_buf_adds(&c->ptr, c->opts->root_pointer);
	st_segs_pointer(&c->ptr, &c->segs);
	if (c->ptr.oom)
		c->oom = 1;
	st_problems_add(c->out, sev, rule, c->ptr.data && !c->ptr.oom ? c->ptr.data : "", NULL,
			"%s", msg);
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
	size_t mark = c->segs.n;

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
		c->segs.n = mark;
		if (st_segs_push(&c->segs, k, klen) < 0)
			c->oom = 1;
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
	c->segs.n = mark;
	return ok;
}

static int validate_array(vctx *c, const snode *n, const json_t *v, int silent)
{
	int ok = 1;
	size_t len = json_array_size(v), mark = c->segs.n;

	if (n->has_min_items && (double)len < n->min_items)
		FAIL_KW("minItems", "has %zu items, fewer than %g", len, n->min_items);
	if (n->has_max_items && (double)len > n->max_items)
		FAIL_KW("maxItems", "has %zu items, more than %g", len, n->max_items);
	if (n->unique) {
		for (size_t i = 0; i < len; i++)
			for (size_t k = i + 1; k < len; k++)
				if (st__json_equal(json_array_get(v, i), json_array_get(v, k)))
					FAIL_KW("uniqueItems", "items %zu and %zu are equal", i, k);
	}
	for (size_t i = 0; i < len; i++) {
		const snode *s = i < n->prefix.count ? n->prefix.items[i] : n->items;
		if (!s)
			continue;
		c->segs.n = mark;
		if (st_segs_push(&c->segs, NULL, i) < 0)
			c->oom = 1;
		c->inst_depth++;
		int r = validate(c, s, json_array_get(v, i), silent);
		c->inst_depth--;
		if (!r) {
			ok = 0;
			if (silent)
				goto done;
		}
	}
	c->segs.n = mark;
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
	c->segs.n = mark;
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

static int validate(vctx *c, const snode *n, const json_t *v, int silent);

/* type, const and enum. Like each phase below: 1 valid, 0 not (silent: at the first
 * problem). */
static int validate_type_const_enum(vctx *c, const snode *n, const json_t *v, int silent)
{
	int ok = 1;
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
	if (n->const_ && !st__json_equal(n->const_, v))
		FAIL_KW("const", "value does not equal the required constant");
	if (n->enum_) {
		size_t i;
		json_t *e;
		int found = 0;
		json_array_foreach(n->enum_, i, e)
			if (st__json_equal(e, v)) {
				found = 1;
				break;
			}
		if (!found) {
			if (json_is_string(v) && !c->in_secret)
				FAIL_KW("enum", "'%s' is not one of the allowed values",
					json_string_value(v));
			else
				FAIL_KW("enum", "value is not one of the allowed values");
		}
	}
done:
	return ok;
}

static int validate_string(vctx *c, const snode *n, const json_t *v, int silent)
{
	int ok = 1;
	const char *s = json_string_value(v);
	size_t len = json_string_length(v);
	if (n->has_min_len || n->has_max_len) {
		size_t cps = utf8_count(s, len);
		if (n->has_min_len && (double)cps < n->min_len)
			FAIL_KW("minLength", "string is shorter than %g characters", n->min_len);
		if (n->has_max_len && (double)cps > n->max_len)
			FAIL_KW("maxLength", "string is longer than %g characters", n->max_len);
	}
	if (n->has_pattern && regexec(&n->pattern, s, 0, NULL, 0) != 0) {
		if (c->in_secret)
			FAIL_KW("pattern", "the string does not match the pattern '%s'",
				n->pattern_src);
		else
			FAIL_KW("pattern", "'%.200s' does not match the pattern '%s'", s,
				n->pattern_src);
	}
done:
	return ok;
}

static int validate_number(vctx *c, const snode *n, const json_t *v, int silent)
{
	int ok = 1;
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
			FAIL_KW("multipleOf", "%g is not a multiple of %g", d, n->multiple_of);
	}
done:
	return ok;
}

/* allOf, anyOf, oneOf, not, if/then/else. */
static int validate_applicators(vctx *c, const snode *n, const json_t *v, int silent)
{
	int ok = 1;
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
		if (branch && !validate(c, branch, v, silent))
			ok = 0;
	}
done:
	return ok;
}

/* $ref: the referenced node, on the same value (a chain that never moves on is a loop). */
static int validate_ref(vctx *c, const snode *n, const json_t *v, int silent)
{
	const json_t *saved_inst = c->ref_inst;
	int saved_n = c->ref_n, ok = 1;
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
	return ok;
}

/* Is v a secret ({ST_SIG_KEY: ST_SIG_SECRET, ...})? Its plaintext, if any, is never quoted. */
static int is_secret(const json_t *v)
{
	const char *sig = json_string_value(json_object_get(v, ST_SIG_KEY));
	return sig && !strcmp(sig, ST_SIG_SECRET);
}

static int validate_value(vctx *c, const snode *n, const json_t *v, int silent);

/* A value against a node: every phase (silent: up to the first that fails, for probes). */
static int validate(vctx *c, const snode *n, const json_t *v, int silent)
{
	int secret = json_is_object(v) && is_secret(v), ok;

	c->in_secret += secret;
	ok = validate_value(c, n, v, silent);
	c->in_secret -= secret;
	return ok;
}

static int validate_value(vctx *c, const snode *n, const json_t *v, int silent)
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
	ok = validate_type_const_enum(c, n, v, silent);
	if (!ok && silent)
		return 0;
	if (json_is_string(v))
		ok &= validate_string(c, n, v, silent);
	else if (json_is_number(v))
		ok &= validate_number(c, n, v, silent);
	else if (json_is_object(v))
		ok &= validate_object(c, n, v, silent);
	else if (json_is_array(v))
		ok &= validate_array(c, n, v, silent);
	if (!ok && silent)
		return 0;
	ok &= validate_applicators(c, n, v, silent);
	if (!ok && silent)
		return 0;
	if (n->ref_node)
		ok &= validate_ref(c, n, v, silent);
	return ok;
}

int st_schema_validate(st_schema *s, const char *uri, const json_t *instance,
		       const st_schema_opts *opts, st_problems *out, st_error *err)
{
	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG(instance);
	vctx c;
	const snode *root;
	int rc;

	if (opts && (rc = st__opts_version(opts->version, ST_SCHEMA_OPTS_VERSION, "st_schema_opts",
					   err)) != ST_OK)
		return rc;
	if (!s->compiled && (rc = st_schema_compile(s, err)) != ST_OK)
		return rc;
	root = st__schema_node(s, uri ? uri : s->default_uri);
	if (!root)
		return st__err(err, ST_ENOTFOUND, "no schema '%s'", uri ? uri : "(default)");
	memset(&c, 0, sizeof(c));
	c.out = out;
	c.opts = opts;
	st_buf_init(&c.ptr);
	if (!validate(&c, root, instance, out == NULL) && c.errors == 0)
		c.errors = 1; /* counted silently: one is enough to say invalid */
	if (c.depth_reported && out)
		st_problems_add(out, ST_SEV_WARNING, "schema/depth",
				opts && opts->root_pointer ? opts->root_pointer : "", NULL,
				"values nested deeper than %d levels were not checked against the "
				"schema",
				SCHEMA_MAX_INSTANCE_DEPTH);
	st_buf_free(&c.ptr);
	st_segs_free(&c.segs);
	if (c.oom)
		return st__err(err, ST_ENOMEM, "out of memory");
	return (int)(c.errors > INT32_MAX ? INT32_MAX : c.errors);
}
