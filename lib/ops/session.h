/*
 * The edit session's internal API: what an operation (the files of lib/ops, and encryption in
 * lib/secrets/secrets.c) may do to the state of a session. Private to the library.
 *
 * A session (struct st_edit, lib/ops/session.c) holds the state as it began: the resources
 * and pending operations as they were (the objects themselves: nothing the session did not
 * make is ever changed in place), the deployment's members and the envelope's version and
 * features. From that it diffs (by identity), rolls back, and judges the commit.
 *
 * Rules for an operation:
 *   - Read the state freely (st__edit_resources, st__edit_pending, st_state_deployment).
 *   - Change a resource or pending operation only after st__edit_own (copy on write), or put
 *     a new object in its place with st__edit_put / st__edit_set_pending.
 *   - Add, remove or reorder resources only with st__edit_insert, st__edit_remove and
 *     st__edit_reorder: they keep every handle on its resource.
 *   - Change a deployment member (secrets_providers, extensions, manifest, ...) only with
 *     st__edit_set_member, with a new value.
 *   - Run inside st__edit_op_begin / st__edit_op_end: an operation that fails leaves the
 *     session as it was before the operation.
 */
#ifndef ST_OPS_SESSION_H
#define ST_OPS_SESSION_H

#include "internal.h"


/* A set of pointers (open addressing). */
typedef struct st__ptrset {
	const void **slots;
	size_t cap, count;
} st__ptrset;

int st__ptrset_add(st__ptrset *s, const void *p); /* -1: out of memory */
int st__ptrset_has(const st__ptrset *s, const void *p);
void st__ptrset_free(st__ptrset *s);

/* What a session keeps of its state at one point: at its beginning (the baseline), and
 * before each operation (a savepoint). */
typedef struct st__snapshot {
	int taken;
	int had_key;      /* the container held the deployment's key */
	json_t *key_value; /* its value (a reference; may be JSON null) */
	json_t *dep;      /* the deployment object (a reference), or NULL */
	json_t *members;  /* a shallow copy of its members */
	json_t *res;      /* a shallow copy of the resources array, or NULL */
	json_t *ops;      /* a shallow copy of the pending operations array, or NULL */
	size_t *ids;      /* the handles of the resources, in order */
	size_t nids;
	json_t *version, *features; /* the envelope's (references), or NULL */
	int s_version;
	unsigned known_absent;
	int had_bytestring;
	int other_changed;
	st__ptrset fresh; /* (a savepoint) the session's own objects before the operation */
} st__snapshot;

struct st_edit {
	st_state *s;
	st_changes *report;
	st__snapshot base; /* the state as the session began (after a migration) */
	/* before st_edit_begin migrated it (NULL: no migration): the root, container, version */
	json_t *pre_root, *pre_container;
	int pre_version;
	unsigned pre_known_absent;
	st__ptrset fresh; /* objects this session made: changed in place without another copy */
	int other_changed;
	int dirty;        /* anything changed since the baseline */
	int base_valid;   /* the baseline was checked: no integrity errors (st__edit_base_valid) */
	/* What a move found (st__edit_hint_refs; gone with any other operation or a rollback):
	 * every resource now in the state whose URN fields name one of hint_urns is in
	 * hint_refs or was made by the session */
	int hint;
	st_strmap hint_urns; /* keys borrowed from the moved resources, which base holds */
	st__ptrset hint_refs;
	/* handles: ids[i] is the handle of resource i; pos[h] - 1 its index (when !pos_stale) */
	size_t *ids, nids, capids;
	size_t next_id;
	size_t *pos, npos;
	int pos_stale;
};

/* Accessors. The state (borrowed); the resources and pending operations arrays as they are
 * now (borrowed; NULL when there are none). */
st_state *st__edit_state(st_edit *e);
json_t *st__edit_resources(st_edit *e);
json_t *st__edit_pending(st_edit *e);
/* Appends a line to the session's report. */
void st__edit_report(st_edit *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Element i of arr (the resources or the pending operations) made the session's own (copied
 * unless it is already), so that the caller may change it in place. NULL: out of memory. */
json_t *st__edit_own(st_edit *e, json_t *arr, size_t i);
/* A lazy state's skeleton made full (in place: the same object) before an operation reads
 * its inputs or outputs, or copies it: resource i, or the resource r (borrowed; a linear
 * search, for a resource known by its address only). ST_OK at once for a full resource. */
int st__edit_inflate(st_edit *e, size_t i, st_error *err);
int st__edit_inflate_res(st_edit *e, const json_t *r, st_error *err);
/* Is v the session's own (made by it in this operation or an earlier one)? Only reads. */
int st__edit_is_own(st_edit *e, const json_t *v);
/* Puts `v` (a reference taken, even on failure) at arr[i] without making it the session's own:
 * a copy that shares parts with the state as it was (st__edit_own copies it again before it
 * is changed in place). -1: out of memory. */
int st__edit_put(st_edit *e, json_t *arr, size_t i, json_t *v);

/* Removes the resources i with drop[i] set (handles of the others stay on them). */
int st__edit_remove(st_edit *e, const char *drop, st_error *err);
/* Puts the resources in the order order[0..n-1] (a permutation of the indexes). */
int st__edit_reorder(st_edit *e, const size_t *order, st_error *err);
/* Inserts resource r (stolen, even on failure; it becomes the session's own) at index `at`
 * ((size_t)-1: at the end), creating the deployment and its resources array when missing.
 * *h (may be NULL) receives its new handle. */
int st__edit_insert(st_edit *e, size_t at, json_t *r, st_handle *h, st_error *err);
/* Replaces the pending operations array (stolen; NULL or empty: the member is removed). */
int st__edit_set_pending(st_edit *e, json_t *ops, st_error *err);
/* Sets deployment member `key` to v (stolen; NULL removes it) at its canonical place. The
 * deployment must exist. A change counts as one for the commit (other_changed). */
int st__edit_set_member(st_edit *e, const char *key, json_t *v, st_error *err);
/* Says that the state, still as the session began, was checked and has no integrity errors
 * (st_integrity_check): the commit then checks only where the session's changes can have
 * made errors (commit.c check_since_valid). Nothing when the session changed anything. */
void st__edit_base_valid(st_edit *e);
/* Recomputes the manifest's magic in a copy of the manifest (nothing when it is right). */
int st__edit_fix_magic(st_edit *e, st_error *err);
/* A move's last step on its source: `urns` (taken: the map is left empty; its keys are the
 * URNs of resources the session removed) are all the URNs it took away, and `refs` (taken)
 * every resource left in place whose reference fields (st__refers) name one of them, by its
 * address as it is now. The commit's check then looks at those instead of scanning every
 * resource for them (commit.c). Any later operation, or a rollback, forgets it. */
void st__edit_hint_refs(st_edit *e, st_strmap *urns, st__ptrset *refs);
void st__edit_hint_clear(st_edit *e);

/* The index of the resource a handle names now, or (size_t)-1. */
size_t st__edit_index_of(st_edit *e, st_handle h);

/* A savepoint around one operation: st__edit_op_end returns rc, having put the session back
 * as it was at st__edit_op_begin when rc is not ST_OK. */
typedef struct st__edit_op {
	st__snapshot snap;
} st__edit_op;
int st__edit_op_begin(st_edit *e, st__edit_op *op, st_error *err);
int st__edit_op_end(st_edit *e, st__edit_op *op, int rc);

/* Puts the state back as it was before st_edit_begin, a migration undone too (for the
 * one-shot st_move and st_import, whose failure leaves their states as they were). The
 * session may only be freed after it. */
void st__edit_abort(st_edit *e);

/* Commit internals shared by commit.c and session.c. */
void st__snapshot_free(st__snapshot *s);

/* The root stack: its URN in the session's resources (borrowed), else a new one made for
 * (stack, project) and inserted at index 0 (*created set; the URN is the inserted one's). */
int st__edit_root_stack(st_edit *e, const char *stack, const char *project, const char **urn,
			int *created, st_error *err);

/* One read-only pass over the resources for references to `urns` (or provider references to
 * `refs`), on two threads for big states. With `hit`, every referring resource is marked;
 * without, the pass ends at the first. With `nu`/`old` (a rename), the resources' own URNs
 * are compared too: one equal to nu is a conflict, those equal to old are counted. */
typedef struct st__refscan {
	json_t *res;
	const char *skip; /* per index: 1 not looked at (NULL: none) */
	const st_strmap *urns, *refs;
	const st_prefilter *uf, *rf;
	char *hit;
	const char *nu, *old;
	size_t nul, oldl;
	int any, conflict; /* results */
	size_t copies;
} st__refscan;
void st__refscan_run(st__refscan *s);

#endif
