/*
 * The envelope of a state document, bound as Pulumi reads it: a checkpoint file
 * (VersionedCheckpoint, or the whole file an unversioned CheckpointV1), an export
 * (UntypedDeployment); the version, the features, and the document decoded as Go decodes it.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Pulumi's prefix of the first decode's error for a checkpoint file (VersionedCheckpoint,
 * UnmarshalVersionedCheckpointToLatestCheckpoint in pkg/resource/stack/checkpoint.go). */
#define PLACE1 "place 1: "

/* Was the version's literal reported by the reader (decode/type at the key as written)? */
static int version_reported(const st_state *s)
{
	for (size_t i = 0; i < s->load_problems.count; i++) {
		const st_problem *p = &s->load_problems.items[i];
		if (!strcmp(p->rule, "decode/type") && p->pointer[0] == '/' &&
		    st__go_key_is(p->pointer + 1, strlen(p->pointer + 1), "version"))
			return 1;
	}
	return 0;
}

/* The envelope's version, a Go int: absent or null is 0. A number Go's int cannot take was
 * reported by the reader (it saw the literal, which Go's message gives as written) or, in a
 * tree built in memory, is reported here. */
static int read_version(st_state *s, st__groot top, long long *version)
{
	json_t *v = json_object_get(s->root, "version");
	const char *gname = st__go_root_name(top);
	double d;

	*version = 0;
	if (!json_is_number(v))
		return ST_OK; /* absent, null, or a type error the decoder reported */
	d = json_number_value(v);
	if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == (double)(long long)d) {
		*version = (long long)d;
		return ST_OK;
	}
	if (!version_reported(s)) {
		char num[40];
		const char *dot = strrchr(gname, '.');
		if (st_json_format_number(d, num, sizeof(num)) < 0)
			snprintf(num, sizeof(num), "%g", d);
		if (st_problems_add(&s->load_problems, ST_SEV_ERROR, "decode/type", "/version", NULL,
				    "%sjson: cannot unmarshal number %s into Go struct field "
				    "%s.version of type int",
				    top == ST__G_VERSIONED ? PLACE1 : "", num, dot ? dot + 1 : gname))
			return ST_ENOMEM;
	}
	return ST_OK;
}

/* The first decode error (rule decode/...) of the load problems from index `from`. */
static const st_problem *first_decode_error(const st_state *s, size_t from)
{
	for (size_t i = from; i < s->load_problems.count; i++) {
		const st_problem *p = &s->load_problems.items[i];
		if (p->severity == ST_SEV_ERROR && !strncmp(p->rule, "decode/", 7))
			return p;
	}
	return NULL;
}

/* A checkpoint file's first decode: its errors (the reader's of the version literal too) as
 * Pulumi prints them. */
static int place1(st_state *s, char **first)
{
	for (size_t i = 0; i < s->load_problems.count; i++) {
		st_problem *p = &s->load_problems.items[i];
		char *m;
		if (strncmp(p->rule, "decode/", 7) || !strncmp(p->message, PLACE1, strlen(PLACE1)))
			continue;
		if (!(m = st_asprintf(PLACE1 "%s", p->message)))
			return ST_ENOMEM;
		free(p->message);
		p->message = m;
	}
	if (*first) {
		char *m = st_asprintf(PLACE1 "%s", *first);
		if (!m)
			return ST_ENOMEM;
		free(*first);
		*first = m;
	}
	return ST_OK;
}

/* Decodes `v` as Go into `root`, respelling struct keys; fails with the error Go returns. */
static int decode(st_state *s, json_t *v, st__groot root, const char *base, st_error *err)
{
	char *first = NULL, *first_ptr = NULL;
	int rc;

	if (!s->keymap && !(s->keymap = calloc(1, sizeof(*s->keymap))))
		return st__err(err, ST_ENOMEM, "out of memory");
	rc = st__go_decode(v, root, base, s->keymap, &s->load_problems, &first, &first_ptr);
	if (rc == ST_OK && root == ST__G_VERSIONED)
		rc = place1(s, &first);
	if (rc) {
		free(first);
		free(first_ptr);
		return st__err(err, rc, "out of memory");
	}
	if (first) {
		st__err_pointer(err, first_ptr);
		st__err(err, ST_EFORMAT, "%s", first);
	}
	free(first);
	free(first_ptr);
	return first ? ST_EFORMAT : ST_OK;
}

/* Does the object have a key Go folds to `field`? */
static int has_field(json_t *obj, const char *field)
{
	for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it))
		if (st__go_key_is(json_object_iter_key(it), json_object_iter_key_len(it), field))
			return 1;
	return 0;
}

/* Is the envelope's version 0 for Go (VersionedCheckpoint.Version, an int): absent, null or 0
 * (the last key Go folds to "version")? A literal Go refuses was reported by the reader. */
static int version_zero(json_t *obj)
{
	json_t *v = NULL;
	for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it))
		if (st__go_key_is(json_object_iter_key(it), json_object_iter_key_len(it), "version"))
			v = json_object_iter_value(it);
	return !v || json_is_null(v) || (json_is_number(v) && json_number_value(v) == 0);
}

/* The envelope, by the keys Go would match: an export (UntypedDeployment), a checkpoint file
 * (VersionedCheckpoint) or, at version 0, the whole file an unversioned checkpoint
 * (CheckpointV1: UnmarshalVersionedCheckpointToLatestCheckpoint, checkpoint.go). */
static int bind_envelope(st_state *s, st__groot *top, st_error *err)
{
	json_t *root = s->root;
	int cp = has_field(root, "checkpoint"), dep = has_field(root, "deployment");
	int flat = has_field(root, "latest") || has_field(root, "stack") || has_field(root, "target");

	if (cp && dep)
		return st__err(err, ST_EFORMAT,
			       "not a Pulumi deployment state: it has both 'checkpoint' and "
			       "'deployment'");
	if (dep) {
		s->envelope = ST_ENVELOPE_EXPORT;
		*top = ST__G_UNTYPED;
		return ST_OK;
	}
	if ((cp || flat) && version_zero(root)) {
		if (!flat)
			return st__err(err, ST_EFORMAT,
				       "a checkpoint file of version 0 (or none) is read by Pulumi as "
				       "an unversioned checkpoint, whose 'stack' and 'latest' stand at "
				       "the top: with none here, Pulumi loads a stack with no deployment "
				       "and ignores every resource in 'checkpoint'");
		s->envelope = ST_ENVELOPE_CHECKPOINT;
		*top = ST__G_CHECKPOINT_V1;
		return ST_OK;
	}
	if (cp) {
		s->envelope = ST_ENVELOPE_CHECKPOINT;
		*top = ST__G_VERSIONED;
		return ST_OK;
	}
	return st__err(err, ST_EFORMAT,
		       "not a Pulumi deployment state: expected a 'deployment' member "
		       "(pulumi stack export) or a 'checkpoint' member (DIY backend file)");
}

static int bind_versions(st_state *s, long long v, st_error *err)
{
	if (s->envelope == ST_ENVELOPE_CHECKPOINT) {
		if (v < 1 || v > 4) /* (0 is the unversioned checkpoint: bind_envelope) */
			return st__err(err, ST_EVERSION, "unsupported checkpoint version %lld", v);
	} else {
		if (v < 1)
			return st__err(err, ST_EVERSION, "this stack's deployment is too old "
				       "(version %lld; the oldest supported is 1)", v);
		if (v > 4)
			return st__err(err, ST_EVERSION,
				       "this stack's deployment version is too new (version %lld; "
				       "the newest supported is 4)",
				       v);
	}
	s->version = (int)v;
	return ST_OK;
}

int st__state_bind(st_state *s, st_error *err)
{
	json_t *root = s->root, *inner;
	st__groot top = ST__G_VERSIONED;
	long long version = 0;
	const st_problem *bad;
	int rc;

	if (!json_is_object(root))
		return st__err(err, ST_EFORMAT,
			       "not a Pulumi deployment state: the top-level value is not an "
			       "object");
	rc = bind_envelope(s, &top, err);
	if (rc == ST_OK && s->envelope == ST_ENVELOPE_CHECKPOINT) /* json.Unmarshal's first */
		rc = st__json_trailing_refuse(&s->load_problems, err);
	if (rc)
		return rc;
	/* The envelope as Go decodes it; the reader reported a version literal Go refuses. */
	rc = decode(s, root, top, "", err);
	if (rc == ST_OK)
		rc = read_version(s, top, &version);
	if (rc == ST_OK && (bad = first_decode_error(s, 0)) != NULL) {
		st__err_pointer(err, bad->pointer);
		rc = st__err(err, ST_EFORMAT, "%s", bad->message);
	}
	if (rc)
		return rc;
	if (top == ST__G_CHECKPOINT_V1) {
		/* version 0: the file itself was decoded as the CheckpointV1 */
		s->container = root;
		s->version = 0;
		return ST_OK;
	}
	rc = bind_versions(s, version, err);
	if (rc)
		return rc;
	if (s->envelope == ST_ENVELOPE_EXPORT) {
		/* stack import checks the features before it decodes the deployment */
		if ((rc = st__state_check_features(s, err)) != ST_OK)
			return rc;
		s->container = root;
		inner = json_object_get(root, "deployment");
		if (!json_is_null(inner))
			rc = decode(s, inner, s->version == 1   ? ST__G_DEPLOYMENT_V1
					      : s->version == 2 ? ST__G_DEPLOYMENT_V2
								: ST__G_DEPLOYMENT_V3,
				    "/deployment", err);
		return rc;
	}
	inner = json_object_get(root, "checkpoint");
	if (json_is_null(inner)) {
		/* json.Unmarshal("null", &v3checkpoint) leaves it empty (checkpoint.go) and
		 * getCheckpoint loads a stack with no deployment: here an empty checkpoint object,
		 * which Pulumi reads alike, holds what an edit adds */
		if (!(inner = json_object()) || json_object_set_new(root, "checkpoint", inner))
			return st__err(err, ST_ENOMEM, "out of memory");
	}
	rc = decode(s, inner, s->version == 1   ? ST__G_CHECKPOINT_V1
			      : s->version == 2 ? ST__G_CHECKPOINT_V2
						: ST__G_CHECKPOINT_V3,
		    "/checkpoint", err);
	if (rc)
		return rc;
	s->container = inner;
	return st__state_check_features(s, err);
}
