/* Private to lib/state: Pulumi's Go types as encoding/json sees them (lib/state/gotypes.c). */
#ifndef ST_GOTYPES_H
#define ST_GOTYPES_H

#include "internal.h"

/* Is the key (k, kl) the C string s? */
#define ST_KEY_IS2(k, kl, s) (strlen(s) == (kl) && !memcmp((k), (s), (kl)))

typedef enum gk {
	GK_ANY,       /* interface{}: anything */
	GK_RAW,       /* json.RawMessage: anything, decoded later on its own */
	GK_STRING,    /* any string kind */
	GK_BOOL,
	GK_INT,       /* int (the envelope's version) */
	GK_FLOAT,     /* float64 */
	GK_TIME,      /* time.Time (UnmarshalJSON) */
	GK_TIMEPTR,   /* *time.Time */
	GK_SEMVER,    /* semver.Version (UnmarshalJSON, semver.Parse) */
	GK_SEMVERPTR, /* *semver.Version */
	GK_PATH,      /* resource.PropertyPath (UnmarshalText) */
	GK_BYTES,     /* []byte: base64 */
	GK_UINT8,     /* an element of []byte given as an array */
	GK_CONFIG,    /* config.Map (UnmarshalJSON: keys namespace:name) */
	GK_SLICE,
	GK_MAP,       /* a string-keyed map */
	GK_STRUCT     /* a struct, or a pointer to one */
} gk;

typedef struct gfield gfield;

typedef struct gtype {
	gk k;
	const char *go;            /* reflect.Type.String(), for messages */
	const struct gtype *elem;  /* slices and maps */
	const gfield *fields;      /* structs: ends with a NULL name */
	size_t nfields;
} gtype;

struct gfield {
	const char *name;
	size_t len;
	const gtype *t;
	unsigned flags; /* F_OMIT: omitempty; F_PTR: a pointer (nil is null) */
};

#define F_OMIT 1u
#define F_PTR 2u
#define FLD(name, type, flags) {name, sizeof(name) - 1, &type, flags}
#define FEND {NULL, 0, NULL, 0}

/* The Go type a document (or part of it) is decoded into. */
const gtype *st__go_type(st__groot root);
/* Is it one of the resource structs (problems inside name the resource)? */
int st__go_is_resource(const gtype *t);

/* What Go made of a key given more than once (dupmerge.c). */
typedef enum st__dup_how {
	ST__DUP_LAST,    /* the last value, whole */
	ST__DUP_MERGED,  /* later values decoded into the earlier ones */
	ST__DUP_EARLIER  /* an earlier value (a later null or wrong type leaves it) */
} st__dup_how;

/* Go's value after decoding vals[0..n-1] (n >= 1, document order, each already walked) in turn
 * into one value of type t (ptr: a pointer field): a new reference, NULL when out of memory.
 * The values may be changed in place. */
json_t *st__go_fold(json_t *const *vals, size_t n, const gtype *t, int ptr, st__dup_how *how);

#endif
