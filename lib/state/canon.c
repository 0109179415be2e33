/*
 * The canonical form (`convert --canonical`): every struct as Go's encoding/json marshals
 * Pulumi's types (gotypes.c) of the state's version: the fields in declaration order (the
 * version 1 and 2 resources keep theirs), a field without omitempty always written (its zero
 * value when the state lacks it: plugin path and version, extension version and value, a
 * descriptor's name, a parameterization's fields, a v1 resource's dependencies and
 * initErrors, the deployment's metadata), an empty omitempty field dropped (a pointer only
 * when nil), customTimeouts only when one is set (as SerializeResource does), and the
 * features of version 4 recomputed, time.Time values as Go marshals them (RFC3339Nano).
 * Members no Pulumi type names are kept after the known ones: statetool does not drop data
 * Pulumi would.
 */
#include "state/gotypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Is the value empty as omitempty sees its field? */
static int go_empty(const json_t *x, const gfield *f)
{
	if (f->t->k == GK_RAW)
		return 0; /* json.RawMessage: nil only when absent ("null" is 4 bytes) */
	if (json_is_null(x))
		return 1;
	if (f->flags & F_PTR)
		return 0;
	switch (f->t->k) {
	case GK_STRING: return json_is_string(x) && !json_string_length(x);
	case GK_BOOL: return json_is_false(x);
	case GK_INT:
	case GK_FLOAT: return json_is_number(x) && json_number_value(x) == 0;
	case GK_SLICE:
	case GK_PATH:
	case GK_BYTES:
		return (json_is_array(x) && !json_array_size(x)) ||
		       (json_is_string(x) && !json_string_length(x));
	case GK_MAP:
	case GK_CONFIG: return json_is_object(x) && !json_object_size(x);
	default: return 0; /* structs, interfaces (only nil), raw JSON */
	}
}

static json_t *zero_struct(const gtype *t);

/* The zero value Go marshals for a field the state lacks. */
static json_t *zero(const gfield *f)
{
	if (f->flags & F_PTR)
		return json_null();
	switch (f->t->k) {
	case GK_STRING: return json_string("");
	case GK_BOOL: return json_false();
	case GK_INT:
	case GK_FLOAT: return json_real(0);
	case GK_TIME: return json_string("0001-01-01T00:00:00Z");
	case GK_SEMVER: return json_string("0.0.0");
	case GK_STRUCT: return zero_struct(f->t);
	default: return json_null();
	}
}

static int canon(json_t *v, const gtype *t, int depth);

static json_t *zero_struct(const gtype *t)
{
	json_t *o = json_object();
	if (o && canon(o, t, 0) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* customTimeouts is written only when one of its values is set. */
static int timeouts_empty(const json_t *x)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)x, k, v)
		if (json_is_number(v) && json_number_value(v) != 0)
			return 0;
	return 1;
}

static int canon_struct(json_t *v, const gtype *t, int depth)
{
	json_t *copy = json_object();
	const char *k;
	json_t *x;
	int rc = 0;

	if (!copy)
		return -1;
	for (size_t i = 0; i < t->nfields && rc == 0; i++) {
		const gfield *f = &t->fields[i];
		x = json_object_get(v, f->name);
		if (x) {
			if (canon(x, f->t, depth + 1) < 0) {
				rc = -1;
				break;
			}
			if ((f->flags & F_OMIT) && go_empty(x, f))
				continue;
			if (f->t->k == GK_STRUCT && !strcmp(f->t->go, "resource.CustomTimeouts") &&
			    timeouts_empty(x))
				continue;
			rc = json_object_set(copy, f->name, x);
		} else if (!(f->flags & F_OMIT)) {
			rc = json_object_set_new(copy, f->name, zero(f));
		}
	}
	/* what no field names, after: kept */
	json_object_foreach(v, k, x) {
		size_t kl = strlen(k), i;
		for (i = 0; i < t->nfields; i++)
			if (t->fields[i].len == kl && !memcmp(t->fields[i].name, k, kl))
				break;
		if (i == t->nfields && rc == 0)
			rc = json_object_set(copy, k, x);
	}
	if (rc == 0) {
		json_object_clear(v);
		rc = json_object_update(v, copy);
	}
	json_decref(copy);
	return rc < 0 ? -1 : 0;
}

/* A time.Time as Go's MarshalJSON writes it (RFC3339Nano): the fraction cut to nanoseconds (as
 * Go parses it) without trailing zeros, none when zero, and a zero offset as Z. Only the strict
 * RFC 3339 shape is rewritten (what else Go's loose parse takes stays as written), and not an
 * offset Go cannot marshal (hour 24 and beyond). */
static int canon_time(json_t *v)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd";
	const char *s = json_string_value(v), *z;
	size_t n = json_string_length(v), i = 19, fs = 19, keep = 0, zl;
	char out[48];
	int zero;

	if (!s || n < 20 || n > 40 || st__go_time_error(s, n))
		return 0;
	for (size_t k = 0; k < i; k++)
		if (shape[k] == 'd' ? s[k] < '0' || s[k] > '9' : s[k] != shape[k])
			return 0;
	if (s[i] == '.' || s[i] == ',') {
		fs = ++i;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		keep = i - fs > 9 ? 9 : i - fs;
		while (keep && s[fs + keep - 1] == '0')
			keep--;
	}
	z = s + i;
	zl = n - i;
	if (zl == 1 && z[0] == 'Z')
		zero = 1;
	else if (zl == 6 && (z[0] == '+' || z[0] == '-') && z[3] == ':' && z[1] <= '2' &&
		 (z[1] < '2' || z[2] < '4') && z[4] < '6')
		zero = !memcmp(z + 1, "00:00", 5);
	else
		return 0;
	snprintf(out, sizeof(out), "%.19s%s%.*s%.*s", s, keep ? "." : "", (int)keep, s + fs,
		 zero ? 1 : 6, zero ? "Z" : z);
	return strcmp(out, s) ? json_string_set(v, out) : 0;
}

static int canon(json_t *v, const gtype *t, int depth)
{
	size_t i;
	json_t *x;
	const char *k;

	if (depth > ST_DEFAULT_MAX_DEPTH)
		return 0;
	switch (t->k) {
	case GK_STRUCT:
		return json_is_object(v) ? canon_struct(v, t, depth) : 0;
	case GK_SLICE:
		if (t->elem->k == GK_STRUCT)
			json_array_foreach(v, i, x)
				if (canon(x, t->elem, depth + 1) < 0)
					return -1;
		return 0;
	case GK_MAP:
		if (t->elem->k == GK_STRUCT)
			json_object_foreach(v, k, x)
				if (canon(x, t->elem, depth + 1) < 0)
					return -1;
		return 0;
	case GK_TIME:
	case GK_TIMEPTR:
		return json_is_string(v) ? canon_time(v) : 0;
	default:
		return 0;
	}
}

void st_state_canonicalize(st_state *s)
{
	ST_ASSERT_ARG_AS(s, "state");
	static const st__groot inner_cp[] = {ST__G_CHECKPOINT_V1, ST__G_CHECKPOINT_V1,
					    ST__G_CHECKPOINT_V2, ST__G_CHECKPOINT_V3,
					    ST__G_CHECKPOINT_V3};
	static const st__groot inner_dep[] = {ST__G_DEPLOYMENT_V1, ST__G_DEPLOYMENT_V1,
					     ST__G_DEPLOYMENT_V2, ST__G_DEPLOYMENT_V3,
					     ST__G_DEPLOYMENT_V3};
	int v = s->version < 0 ? 0 : s->version > 4 ? 4 : s->version;

	/* Go's output has Go's keys, even for a state that is otherwise unchanged */
	st__keymap_free(s->keymap);
	s->keymap = NULL;

	if (s->envelope == ST_ENVELOPE_CHECKPOINT && s->version == 0) {
		canon(s->root, st__go_type(ST__G_CHECKPOINT_V1), 0);
	} else if (s->envelope == ST_ENVELOPE_CHECKPOINT) {
		canon(s->root, st__go_type(ST__G_VERSIONED), 0);
		canon(json_object_get(s->root, "checkpoint"), st__go_type(inner_cp[v]), 0);
	} else {
		canon(s->root, st__go_type(ST__G_UNTYPED), 0);
		canon(json_object_get(s->root, "deployment"), st__go_type(inner_dep[v]), 0);
	}
	/* the objects are the same: the state's pointers into the tree still hold */
	st_state_apply_features(s);
}
