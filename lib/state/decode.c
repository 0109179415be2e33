/*
 * What Go's encoding/json does when Pulumi decodes a document into its types
 * (sdk/go/common/apitype, pkg/cmd/pulumi/operations/import.go):
 *  - a struct's key matches a field exactly, else case-insensitively (Go's foldName); for keys
 *    that name the same field the last one in the document wins. Struct objects are rewritten
 *    with the fields' own spelling (the order kept), and each rename is noted so that a state
 *    written unchanged keeps its bytes. Map-typed objects (inputs, config, ...) are left alone.
 *  - a value of the wrong JSON type for its field is an error (UnmarshalTypeError, with Go's
 *    struct and field path), as are the texts the types' own decoders refuse: time.Time,
 *    semver.Version, resource.PropertyPath, []byte (base64), config.Map's keys.
 * Every such problem is reported (rule decode/...) with its JSON Pointer in the file as written;
 * the one Go's Unmarshal returns (the first that stops it, else the first kept) is noted.
 */
#include "state/gotypes.h"

#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The field a key names: exact first, then folded. `hint` is where the last key matched
 * (keys usually come in the fields' order). */
static const gfield *find_field(const gtype *t, const char *k, size_t kl, size_t *hint)
{
	const gfield *fs = t->fields;
	size_t n = t->nfields, i = *hint < n ? *hint : 0;
	for (size_t tries = 0; tries < n; tries++, i = i + 1 == n ? 0 : i + 1) {
		if (fs[i].len == kl && !memcmp(k, fs[i].name, kl)) {
			*hint = i + 1;
			return &fs[i];
		}
	}
	for (i = 0; i < n; i++)
		if (st__go_key_is(k, kl, fs[i].name))
			return &fs[i];
	return NULL;
}

/* ---- the walk ---- */

typedef struct dctx {
	st_problems *out;
	st__keymap *km; /* renames are noted here; NULL: keys are left as they are */
	const char *base;
	st_segs segs;
	const char *gstruct;   /* the innermost struct's name, for messages */
	const char *stack[16]; /* Go's field path from the decoded root */
	size_t nstack;
	const char *urn; /* the resource being walked, for problems */
	/* what Go's Unmarshal returns: the first error that stops it, else the first kept */
	char *stop, *stop_ptr, *kept, *kept_ptr;
	const st__dropped *dr; /* the reader's earlier values of duplicate keys (NULL: none) */
	int bignums;   /* the reader kept numbers beyond float64 (ST__JSON_BIGNUM) */
	int in_worker; /* a second thread's part: no further split */
	int oom;
} dctx;

static char *ptr_now(dctx *c)
{
	st_buf b;
	st_buf_init(&b);
	st_buf_adds(&b, c->base);
	st_segs_pointer(&b, &c->segs);
	return st_buf_take(&b, NULL);
}

/* A problem at the current value; `stops`: Go's Unmarshal returns it at once (an error of a
 * type's own decoder), else it is kept and decoding goes on (UnmarshalTypeError). */
static void problem(dctx *c, const char *rule, int stops, const char *msg)
{
	char *p = ptr_now(c);
	if (!p || !msg) {
		c->oom = 1;
		free(p);
		return;
	}
	if (st_problems_add(c->out, ST_SEV_ERROR, rule, p, c->urn, "%s", msg))
		c->oom = 1;
	char **m = stops ? &c->stop : &c->kept, **mp = stops ? &c->stop_ptr : &c->kept_ptr;
	if (!*m) {
		*m = st_strdup(msg);
		*mp = p;
		if (!*m)
			c->oom = 1;
		return;
	}
	free(p);
}

const char *st__go_json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_TRUE:
	case JSON_FALSE: return "bool";
	default: return "number";
	}
}

/* UnmarshalTypeError's text. `what` is the JSON value's description. */
static void type_error(dctx *c, const char *what, const gtype *t)
{
	st_buf b;
	st_buf_init(&b);
	st_buf_printf(&b, "json: cannot unmarshal %s into Go ", what);
	if (c->gstruct) {
		const char *dot = strrchr(c->gstruct, '.');
		st_buf_printf(&b, "struct field %s.", dot ? dot + 1 : c->gstruct);
		for (size_t i = 0; i < c->nstack; i++)
			st_buf_printf(&b, "%s%s", i ? "." : "", c->stack[i]);
	} else {
		st_buf_adds(&b, "value");
	}
	st_buf_printf(&b, " of type %s", t->go);
	char *m = st_buf_take(&b, NULL);
	problem(c, "decode/type", 0, m);
	free(m);
}

static void text_error(dctx *c, const char *rule, char *msg)
{
	problem(c, rule, 1, msg);
	free(msg);
}

static void walk(dctx *c, json_t *v, const gtype *t);

static int push(dctx *c, const char *key, size_t len)
{
	if (st_segs_push(&c->segs, key, len) < 0) {
		c->oom = 1;
		return -1;
	}
	return 0;
}

/* ---- numbers beyond float64 (the reader's ST__JSON_BIGNUM) ---- */

static const gtype float64_type = {GK_FLOAT, "float64", NULL, NULL, 0};

/* The reader's problem of `rule` at the current pointer, or NULL. */
static const st_problem *problem_here(dctx *c, const char *rule)
{
	const st_problem *found = NULL;
	char *p = ptr_now(c);
	if (!p) {
		c->oom = 1;
		return NULL;
	}
	for (size_t i = 0; c->out && i < c->out->count && !found; i++)
		if (!strcmp(c->out->items[i].rule, rule) && !strcmp(c->out->items[i].pointer, p))
			found = &c->out->items[i];
	free(p);
	return found;
}

/* Go stores the number here (a field of type t, or an interface{}: float64): ParseFloat's range
 * error, UnmarshalTypeError "number <literal>" (the reader's version literal reported already
 * at the top). */
static void bignum(dctx *c, const gtype *t)
{
	const st_problem *r = problem_here(c, ST__NUMBER_RANGE_RULE);
	const char *lit = r ? r->message + 7 : NULL; /* "number <literal> is out of ..." */
	char *what;
	if (c->oom || problem_here(c, "decode/type"))
		return;
	what = lit ? st_asprintf("number %.*s", (int)strcspn(lit, " "), lit)
		   : st_strdup("number");
	if (!what) {
		c->oom = 1;
		return;
	}
	type_error(c, what, t);
	free(what);
}

/* An interface{} value: Go converts each number in it to float64. */
static void bignums_in(dctx *c, json_t *v)
{
	if (st__json_is_bignum(v)) {
		bignum(c, &float64_type);
		return;
	}
	if (!json_is_object(v) && !json_is_array(v))
		return;
	if (push(c, NULL, 0) < 0)
		return;
	if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v) && !c->oom; i++) {
			c->segs.v[c->segs.n - 1].len = i;
			bignums_in(c, json_array_get(v, i));
		}
	} else {
		for (void *it = json_object_iter(v); it && !c->oom;
		     it = json_object_iter_next(v, it)) {
			c->segs.v[c->segs.n - 1].key = json_object_iter_key(it);
			c->segs.v[c->segs.n - 1].len = json_object_iter_key_len(it);
			bignums_in(c, json_object_iter_value(it));
		}
	}
	c->segs.n--;
}

/* A UnmarshalJSON/UnmarshalText type: what each JSON kind does. */
static void walk_text(dctx *c, json_t *v, const gtype *t)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	switch (t->k) {
	case GK_TIME:
	case GK_TIMEPTR:
		if (!json_is_string(v)) {
			problem(c, "decode/time", 1, "Time.UnmarshalJSON: input is not a JSON string");
			return;
		}
		{
			char *e = st__go_time_error(s, n);
			if (e)
				text_error(c, "decode/time", e);
		}
		return;
	case GK_SEMVER:
	case GK_SEMVERPTR:
		if (json_is_null(v)) {
			/* a pointer stays nil; a value is given "" */
			if (t->k == GK_SEMVER)
				problem(c, "decode/semver", 1, "Version string empty");
			return;
		}
		if (!json_is_string(v)) {
			char m[96];
			snprintf(m, sizeof(m), "json: cannot unmarshal %s into Go value of type string",
				 st__go_json_kind(v));
			problem(c, "decode/semver", 1, m);
			return;
		}
		{
			char *e = st__go_semver_error(s, n, 0);
			if (e)
				text_error(c, "decode/semver", e);
		}
		return;
	default: /* GK_PATH */
		if (json_is_null(v))
			return;
		if (!json_is_string(v)) {
			type_error(c, st__go_json_kind(v), t);
			return;
		}
		{
			char *e = st__go_property_path_error(s, n);
			if (e)
				text_error(c, "decode/property-path", e);
		}
		return;
	}
}

static void walk_config(dctx *c, json_t *v)
{
	const char *k;
	json_t *x;
	if (json_is_null(v))
		return;
	if (!json_is_object(v)) {
		char m[160];
		snprintf(m, sizeof(m),
			 "could not unmarshal map: json: cannot unmarshal %s into Go value of type "
			 "map[string]config.Value",
			 st__go_json_kind(v));
		problem(c, "decode/config", 1, m);
		return;
	}
	json_object_foreach(v, k, x) {
		size_t kl = strlen(k);
		if (st__go_config_key_ok(k, kl))
			continue;
		if (push(c, k, kl) < 0)
			return;
		char *m = st_asprintf("could not unmarshal map: could not parse %s as a configuration "
				      "key (configuration keys should be of the form "
				      "`<namespace>:<name>`)",
				      k);
		text_error(c, "decode/config", m);
		c->segs.n--;
	}
}

/*
 * A big array of structs (a state's resources) is walked in two halves, the second on another
 * thread with a context of its own (its problems, renames and errors), then merged in document
 * order. Each half changes only its own elements. (Its threshold: ST__T_DECODE in
 * lib/util/thread.c's table.)
 */

typedef struct half {
	dctx c;
	st_problems out;
	st__keymap km;
	json_t *arr;
	const gtype *t;
	size_t from, to;
	st__two th;
} half;

static void walk_range(dctx *c, json_t *v, const gtype *t, size_t from, size_t to)
{
	for (size_t i = from; i < to && !c->oom; i++) {
		c->segs.v[c->segs.n - 1].len = i;
		walk(c, json_array_get(v, i), t->elem);
	}
}

static void *half_main(void *arg)
{
	half *h = arg;
	walk_range(&h->c, h->arr, h->t, h->from, h->to);
	return NULL;
}

static void take_first(char **m, char **mp, char **hm, char **hmp)
{
	if (!*m) {
		*m = *hm;
		*mp = *hmp;
	} else {
		free(*hm);
		free(*hmp);
	}
	*hm = *hmp = NULL;
}

/* The second half's findings after the first's. */
static void merge_half(dctx *c, half *h)
{
	for (size_t i = 0; i < h->out.count && !c->oom; i++) {
		st_problem *q = &h->out.items[i];
		if (st_problems_add(c->out, q->severity, q->rule, q->pointer, q->urn, "%s",
				    q->message))
			c->oom = 1;
	}
	st_problems_clear(&h->out);
	take_first(&c->stop, &c->stop_ptr, &h->c.stop, &h->c.stop_ptr);
	take_first(&c->kept, &c->kept_ptr, &h->c.kept, &h->c.kept_ptr);
	for (size_t i = 0; i < h->km.n; i++) {
		if (!c->km || c->oom) {
			json_decref(h->km.v[i].obj);
			free(h->km.v[i].orig);
			continue;
		}
		if (c->km->n == c->km->cap) {
			size_t cap = c->km->cap ? c->km->cap * 2 : 8;
			st__keymap_ent *t = realloc(c->km->v, cap * sizeof(*t));
			if (!t) {
				c->oom = 1;
				json_decref(h->km.v[i].obj);
				free(h->km.v[i].orig);
				continue;
			}
			c->km->v = t;
			c->km->cap = cap;
		}
		c->km->v[c->km->n++] = h->km.v[i];
	}
	free(h->km.v);
	if (h->c.oom)
		c->oom = 1;
	st_segs_free(&h->c.segs);
}

static int start_half(dctx *c, half *h, json_t *v, const gtype *t)
{
	size_t n = json_array_size(v);
	memset(h, 0, sizeof(*h));
	h->c = *c;
	h->c.out = &h->out;
	h->c.km = c->km ? &h->km : NULL;
	h->c.stop = h->c.stop_ptr = h->c.kept = h->c.kept_ptr = NULL;
	h->c.in_worker = 1;
	h->c.oom = 0;
	h->c.segs.v = NULL;
	h->c.segs.n = h->c.segs.cap = 0;
	for (size_t i = 0; i < c->segs.n; i++)
		if (st_segs_push(&h->c.segs, c->segs.v[i].key, c->segs.v[i].len) < 0) {
			st_segs_free(&h->c.segs);
			return -1;
		}
	h->arr = v;
	h->t = t;
	h->from = n / 2;
	h->to = n;
	if (!st__two_start(&h->th, ST__T_DECODE, half_main, h, 0)) {
		st_segs_free(&h->c.segs);
		return -1;
	}
	return 0;
}

static void walk_array(dctx *c, json_t *v, const gtype *t)
{
	size_t n = json_array_size(v);
	half h;
	if (t->elem->k == GK_RAW || (t->elem->k == GK_ANY && !c->bignums))
		return;
	if (push(c, NULL, 0) < 0)
		return;
	/* (not with duplicate keys: their warnings, in the caller's list, are rewritten; nor
	 * with numbers beyond float64: found by the reader's problems in that list) */
	if (t->elem->k == GK_STRUCT && !c->in_worker && !c->dr && !c->bignums &&
	    st__two_worth(ST__T_DECODE, n, 0) &&
	    start_half(c, &h, v, t) == 0) {
		walk_range(c, v, t, 0, n / 2);
		st__two_join(&h.th);
		merge_half(c, &h);
	} else {
		walk_range(c, v, t, 0, n);
	}
	c->segs.n--;
}

static void walk_map(dctx *c, json_t *v, const gtype *t)
{
	if (t->elem->k == GK_RAW || (t->elem->k == GK_ANY && !c->bignums))
		return;
	if (push(c, NULL, 0) < 0)
		return;
	for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
		c->segs.v[c->segs.n - 1].key = json_object_iter_key(it);
		c->segs.v[c->segs.n - 1].len = json_object_iter_key_len(it);
		walk(c, json_object_iter_value(it), t->elem);
	}
	c->segs.n--;
}

/* A struct's members: each key's field found (exact, then folded), its value walked; then the
 * object rewritten when a key was spelt otherwise or named a field twice. */
static int note_rename(dctx *c, json_t *obj, const char *canon, const char *orig, size_t ol);
static void rebuild(dctx *c, json_t *obj, const gfield **fields, size_t n);

/* ---- duplicate keys ---- */

/* The reader's warning at the current pointer (json/duplicate-key) told what Go made of it. */
static void retell(dctx *c, const char *k, size_t kl, st__dup_how how)
{
	char *p, *m;
	if (how == ST__DUP_LAST)
		return; /* the reader's words */
	p = ptr_now(c);
	m = how == ST__DUP_MERGED ? st_asprintf("duplicate object key '%.*s': merged into the "
						"earlier value, as Pulumi does",
						(int)kl, k)
				  : st_asprintf("duplicate object key '%.*s': the earlier value is "
						"kept, as Pulumi does; the later value is lost on save",
						(int)kl, k);
	if (!p || !m) {
		c->oom = 1;
	} else {
		for (size_t i = 0; i < c->out->count; i++) {
			st_problem *q = &c->out->items[i];
			if (strcmp(q->rule, "json/duplicate-key") || strcmp(q->pointer, p))
				continue;
			char *d = st_strdup(m);
			if (!d) {
				c->oom = 1;
				break;
			}
			free(q->message);
			q->message = d;
		}
	}
	free(p);
	free(m);
}

/* A struct member whose key the document gave more than once (the reader kept the earlier
 * values): each value walked, then decoded into the earlier ones as Go does. */
static void walk_member(dctx *c, json_t *obj, void *it, const gfield *f)
{
	const char *k = json_object_iter_key(it);
	size_t kl = json_object_iter_key_len(it), n = 0;
	json_t *cur = json_object_iter_value(it), *stackv[8], **vals = stackv, *r;
	const st__dropped_ent *e, *end = NULL;
	st__dup_how how;

	for (e = st__dropped_of(c->dr, obj, &end); e && e < end; e++)
		if (e->keylen == kl && !memcmp(e->key, k, kl))
			n++;
	if (!n) {
		walk(c, cur, f->t);
		return;
	}
	if (n + 1 > 8 && !(vals = malloc((n + 1) * sizeof(*vals)))) {
		c->oom = 1;
		return;
	}
	n = 0;
	for (e = st__dropped_of(c->dr, obj, &end); e && e < end; e++)
		if (e->keylen == kl && !memcmp(e->key, k, kl))
			vals[n++] = e->val;
	vals[n++] = cur;
	for (size_t i = 0; i < n && !c->oom; i++)
		walk(c, vals[i], f->t);
	if (!c->oom) {
		r = st__go_fold(vals, n, f->t, (f->flags & F_PTR) != 0, &how);
		if (!r || json_object_setn_new(obj, k, kl, r) < 0)
			c->oom = 1;
		else
			retell(c, k, kl, how);
	}
	if (vals != stackv)
		free(vals);
}

static void walk_struct(dctx *c, json_t *v, const gtype *t)
{
	size_t n = json_object_size(v), i = 0, hint = 0;
	const gfield *stackf[48], **fields = stackf;
	const char *saved_struct = c->gstruct, *saved_urn = c->urn;
	size_t saved_n = c->nstack;
	int rebuild_needed = 0;
	uint64_t seen = 0;

	if (st__go_is_resource(t)) {
		/* problems inside a resource name it (its last urn key, as Go keeps) */
		c->urn = NULL;
		for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it))
			if (st__go_key_is(json_object_iter_key(it), json_object_iter_key_len(it),
					  "urn") &&
			    json_is_string(json_object_iter_value(it)))
				c->urn = json_string_value(json_object_iter_value(it));
	}

	if (n > 48 && !(fields = malloc(n * sizeof(*fields)))) {
		c->oom = 1;
		return;
	}
	if (push(c, NULL, 0) < 0)
		goto out;
	for (void *it = json_object_iter(v); it && i < n; it = json_object_iter_next(v, it), i++) {
		const char *k = json_object_iter_key(it);
		size_t kl = json_object_iter_key_len(it);
		const gfield *f = find_field(t, k, kl, &hint);
		uint64_t bit;
		fields[i] = f;
		if (!f)
			continue; /* an unknown field: Go ignores it */
		bit = 1ull << (f - t->fields);
		if (f->len != kl || memcmp(k, f->name, kl) || (seen & bit))
			rebuild_needed = 1; /* another spelling, or a field named twice */
		seen |= bit;
		c->segs.v[c->segs.n - 1].key = k;
		c->segs.v[c->segs.n - 1].len = kl;
		c->gstruct = t->go;
		if (c->nstack < sizeof(c->stack) / sizeof(c->stack[0]))
			c->stack[c->nstack++] = f->name;
		if (c->dr)
			walk_member(c, v, it, f);
		else
			walk(c, json_object_iter_value(it), f->t);
		c->gstruct = saved_struct;
		c->nstack = saved_n;
	}
	c->segs.n--;
	if (rebuild_needed && c->km)
		rebuild(c, v, fields, i);
out:
	c->urn = saved_urn;
	if (fields != stackf)
		free(fields);
}

static void walk(dctx *c, json_t *v, const gtype *t)
{
	if (c->oom || json_is_null(v))
		goto null_or_done;
	if (c->bignums && t->k == GK_ANY) {
		bignums_in(c, v);
		return;
	}
	if (st__json_is_bignum(v) &&
	    (t->k == GK_FLOAT || t->k == GK_INT || t->k == GK_UINT8)) {
		bignum(c, t);
		return;
	}
	switch (t->k) {
	case GK_ANY:
	case GK_RAW:
		return;
	case GK_STRING:
		if (!json_is_string(v))
			type_error(c, st__go_json_kind(v), t);
		return;
	case GK_BOOL:
		if (!json_is_boolean(v))
			type_error(c, st__go_json_kind(v), t);
		return;
	case GK_FLOAT:
	case GK_INT: /* the binder checks the envelope's version against its literal */
		if (!json_is_number(v))
			type_error(c, st__go_json_kind(v), t);
		return;
	case GK_UINT8:
		if (!json_is_number(v)) {
			type_error(c, st__go_json_kind(v), t);
		} else {
			double d = json_number_value(v);
			if (d < 0 || d > 255 || d != (double)(int)d) {
				char num[40], what[48];
				if (st_json_format_number(d, num, sizeof(num)) < 0)
					snprintf(num, sizeof(num), "%g", d);
				snprintf(what, sizeof(what), "number %s", num);
				type_error(c, what, t);
			}
		}
		return;
	case GK_TIME:
	case GK_TIMEPTR:
	case GK_SEMVER:
	case GK_SEMVERPTR:
	case GK_PATH:
		walk_text(c, v, t);
		return;
	case GK_CONFIG:
		walk_config(c, v);
		return;
	case GK_BYTES:
		if (json_is_string(v)) {
			char *e = st__go_base64_error(json_string_value(v), json_string_length(v));
			if (e) {
				problem(c, "decode/base64", 0, e);
				free(e);
			}
		} else if (json_is_array(v)) {
			walk_array(c, v, t);
		} else {
			type_error(c, st__go_json_kind(v), t);
		}
		return;
	case GK_SLICE:
		if (json_is_array(v))
			walk_array(c, v, t);
		else
			type_error(c, st__go_json_kind(v), t);
		return;
	case GK_MAP:
		if (json_is_object(v))
			walk_map(c, v, t);
		else
			type_error(c, st__go_json_kind(v), t);
		return;
	case GK_STRUCT:
		if (json_is_object(v))
			walk_struct(c, v, t);
		else
			type_error(c, st__go_json_kind(v), t);
		return;
	}
	return;
null_or_done:
	/* null: nothing happens, except for the types whose decoders are given "null" */
	if (!c->oom && json_is_null(v) && t->k == GK_SEMVER)
		walk_text(c, v, t);
}

/* ---- renames ---- */

static int note_rename(dctx *c, json_t *obj, const char *canon, const char *orig, size_t ol)
{
	st__keymap *km = c->km;
	if (km->n == km->cap) {
		size_t cap = km->cap ? km->cap * 2 : 8;
		st__keymap_ent *t = realloc(km->v, cap * sizeof(*t));
		if (!t)
			return -1;
		km->v = t;
		km->cap = cap;
	}
	st__keymap_ent *e = &km->v[km->n];
	e->orig = st_strndup(orig, ol);
	if (!e->orig)
		return -1;
	e->obj = json_incref(obj);
	e->canon = canon;
	e->orig_len = ol;
	km->n++;
	return 0;
}

/* The object again, in its order, each member under its field's name; members naming one
 * field are decoded in turn as Go does (st__go_fold: the later into the earlier) at the
 * first one's place, and each earlier key is reported. */
static void rebuild(dctx *c, json_t *obj, const gfield **fields, size_t n)
{
	json_t *copy = json_object(), **vals = malloc((n ? n : 1) * sizeof(*vals)), **fv = NULL;
	const char **keys = malloc((n ? n : 1) * sizeof(*keys));
	size_t *lens = malloc((n ? n : 1) * sizeof(*lens)), i = 0;

	if (!copy || !vals || !keys || !lens || !(fv = malloc((n ? n : 1) * sizeof(*fv)))) {
		c->oom = 1;
		goto out;
	}
	for (void *it = json_object_iter(obj); it && i < n; it = json_object_iter_next(obj, it)) {
		keys[i] = json_object_iter_key(it);
		lens[i] = json_object_iter_key_len(it);
		vals[i++] = json_object_iter_value(it);
	}
	n = i;
	for (i = 0; i < n && !c->oom; i++) {
		const gfield *f = fields[i];
		size_t m = 0, last = i;
		st__dup_how how = ST__DUP_LAST;
		json_t *r;
		if (!f) {
			if (json_object_setn(copy, keys[i], lens[i], vals[i]) < 0)
				c->oom = 1;
			continue;
		}
		if (json_object_get(copy, f->name))
			continue; /* decoded at the first one's place */
		for (size_t j = i; j < n; j++)
			if (fields[j] == f) {
				fv[m++] = vals[j];
				last = j;
			}
		r = st__go_fold(fv, m, f->t, (f->flags & F_PTR) != 0, &how);
		if (!r || json_object_set_new(copy, f->name, r) < 0) {
			c->oom = 1;
			break;
		}
		for (size_t j = i; j < last; j++) {
			if (fields[j] != f)
				continue;
			char *p = ptr_now(c);
			st_buf b;
			st_buf_init(&b);
			st_buf_adds(&b, p ? p : "");
			st_pointer_add_key(&b, keys[j], lens[j]);
			if (st_problems_add(c->out, ST_SEV_WARNING, "json/duplicate-key",
					    b.data ? b.data : "", NULL,
					    how == ST__DUP_MERGED
						    ? "duplicate object key '%.*s' (the field '%s'): "
						      "merged into the earlier value, as Pulumi does"
					    : how == ST__DUP_EARLIER
						    ? "duplicate object key '%.*s' (the field '%s'): "
						      "the earlier value is kept, as Pulumi does; the "
						      "later value is lost on save"
						    : "duplicate object key '%.*s' (the field '%s'): the "
						      "last value is kept, as Pulumi does; earlier values "
						      "are lost on save",
					    (int)lens[j], keys[j], f->name))
				c->oom = 1;
			free(p);
			st_buf_free(&b);
		}
		if (!ST_KEY_IS2(keys[last], lens[last], f->name) &&
		    note_rename(c, obj, f->name, keys[last], lens[last]) < 0)
			c->oom = 1;
	}
	if (!c->oom) {
		json_object_clear(obj);
		if (st__json_update(obj, copy) < 0)
			c->oom = 1;
	}
out:
	json_decref(copy);
	free(vals);
	free(keys);
	free(lens);
	free(fv);
}

/* ---- entry ---- */

int st__go_decode(json_t *v, st__groot root, const char *base, st__keymap *km,
		  st_problems *out, char **first, char **first_ptr)
{
	dctx c;
	memset(&c, 0, sizeof(c));
	c.out = out;
	c.km = km;
	c.base = base ? base : "";
	if (out && out->st__dropped && ((st__dropped *)out->st__dropped)->n) {
		st__dropped_seal(out->st__dropped);
		c.dr = out->st__dropped;
	}
	for (size_t i = 0; out && i < out->count && !c.bignums; i++)
		c.bignums = !strcmp(out->items[i].rule, ST__NUMBER_RANGE_RULE);
	*first = *first_ptr = NULL;
	walk(&c, v, st__go_type(root));
	st_segs_free(&c.segs);
	if (c.oom) {
		free(c.stop);
		free(c.stop_ptr);
		free(c.kept);
		free(c.kept_ptr);
		return ST_ENOMEM;
	}
	/* Go's Unmarshal returns an error that stops it, else the first it kept */
	*first = c.stop ? c.stop : c.kept;
	*first_ptr = c.stop ? c.stop_ptr : c.kept_ptr;
	free(c.stop ? c.kept : c.stop);
	free(c.stop ? c.kept_ptr : c.stop_ptr);
	return ST_OK;
}

int st__go_check_deployment(json_t *dep, int version, const char *base, st_error *err)
{
	st__keymap km = {0};
	st_problems pr = {0};
	char *first = NULL, *first_ptr = NULL;
	int rc = st__go_decode(dep, version == 1   ? ST__G_DEPLOYMENT_V1
				    : version == 2 ? ST__G_DEPLOYMENT_V2
						   : ST__G_DEPLOYMENT_V3,
			       base, &km, &pr, &first, &first_ptr);
	for (size_t i = 0; i < km.n; i++) {
		json_decref(km.v[i].obj);
		free(km.v[i].orig);
	}
	free(km.v);
	st_problems_clear(&pr);
	if (rc)
		return st__err(err, rc, "out of memory");
	if (first) {
		st__err_pointer(err, first_ptr);
		rc = st__err(err, ST_EFORMAT, "%s", first);
	}
	free(first);
	free(first_ptr);
	return rc;
}

const char *st__go_root_name(st__groot root)
{
	return st__go_type(root)->go;
}

st_doc_kind st_doc_kind_of(const json_t *doc)
{
	ST_ASSERT_ARG(doc);
	static const char *const state_keys[] = {"version", "checkpoint", "deployment", "latest",
						 "stack", "target", NULL};
	static const char *const import_keys[] = {"resources", "nameTable", "providerInputs",
						  NULL};
	int imp = 0;
	if (!json_is_object(doc))
		return ST_DOC_NEITHER;
	for (void *it = json_object_iter((json_t *)doc); it;
	     it = json_object_iter_next((json_t *)doc, it)) {
		const char *k = json_object_iter_key(it);
		size_t kl = json_object_iter_key_len(it);
		for (int i = 0; state_keys[i]; i++)
			if (st__go_key_is(k, kl, state_keys[i]))
				return ST_DOC_STATE;
		for (int i = 0; import_keys[i]; i++)
			imp |= st__go_key_is(k, kl, import_keys[i]);
	}
	return imp ? ST_DOC_IMPORT : ST_DOC_NEITHER;
}
