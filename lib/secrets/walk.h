/* Walking the secrets of a state (walk.c), shared by the secrets modules and by the
 * operations that encrypt and rekey in a session (lib/ops/encrypt.c). Private. */
#ifndef ST_SECRETS_WALK_H
#define ST_SECRETS_WALK_H

#include "internal.h"

/* Where a secret sits: base/field/segs..., made into a JSON Pointer only when asked. */
typedef struct st__spath {
	const char *base;
	const char *field;
	st_segs segs;
	st_buf buf;
} st__spath;

/* The JSON Pointer of where a walk is (borrowed: valid until the walk goes on). */
const char *st__spath_str(st__spath *p);

/* Called with each secret ({sig, "ciphertext" or "plaintext"}); non-zero ends the walk. */
typedef int (*st__visit_fn)(void *ctx, json_t *secret, st__spath *where, const char *urn);
/* Does the walk want (copy and visit) this secret? */
typedef int (*st__wants_fn)(void *ctx, json_t *secret);

/* Visits the secrets of resource `r` that `wants` (NULL: every one). With `copy` NULL, `fn`
 * gets the secrets themselves (only reading, or changing the session's own copy); else *copy
 * is r's copy with the secrets `fn` changed (a reference for the caller), or NULL when none
 * was wanted: a copy only along the paths to those secrets, the rest shared with r. */
int st__visit_secrets(json_t *r, json_t **copy, const char *base, st__wants_fn wants,
		      st__visit_fn fn, void *ctx);
/* Visits every secret of one resource object, in place. */
int st__walk_resource(json_t *r, const char *base, st__visit_fn fn, void *ctx);
/* Does r hold a secret? */
int st__has_secret(json_t *r);

/* Every resource of the state and of its pending operations (arr, i), with its pointer. */
typedef int (*st__res_fn)(void *ctx, json_t *arr, size_t i, const char *base);
int st__each_resource(st_state *s, st__res_fn fn, void *ctx);
/* The resource object of arr[i] as st__each_resource gives it. */
json_t *st__resource_of(json_t *arr, size_t i, const char *base);

/* Is the manager one of the built-in providers (passphrase, b64), whose keys may be used on
 * two threads at once? */
int st__secrets_builtin(const st_secrets *s);

#endif
