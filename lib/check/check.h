/* Private to lib/check: the integrity check's context, shared by its modules. */
#ifndef ST_CHECK_H
#define ST_CHECK_H

#include "internal.h"


typedef struct ictx {
	st_state *s;
	st_problems *out;
	json_t *res;
	const char *base; /* pointer of the deployment */
	st_buf ptr;
	const char *secrets_type; /* NULL: no secrets provider */
	size_t ciphertexts, first_cipher_res;
	char *first_cipher_ptr;
	st_strmap index; /* urn -> a: first index, b: last index */
	int oom;         /* an allocation failed: the result is incomplete, ST_ENOMEM */
	/* the property walk's place: the value's pointer is wbase/wfield/segs... */
	const char *wbase, *wfield; /* wbase NULL: resources/wres */
	size_t wres;
	st_segs segs;
	const char *inner; /* inside a plaintext secret: problems are reported here */
} ictx;

static inline const char *ptr_res(ictx *c, size_t i, const char *field)
{
	c->ptr.len = 0;
	st_buf_printf(&c->ptr, "%s/resources/%zu", c->base, i);
	if (field)
		st_buf_printf(&c->ptr, "/%s", field);
	return c->ptr.data;
}

#define ERR(rule, ptr, urn, ...)                                                             \
	(void)(st_problems_add(c->out, ST_SEV_ERROR, rule, ptr, urn, __VA_ARGS__) && (c->oom = 1))
#define WARN(rule, ptr, urn, ...)                                                            \
	(void)(st_problems_add(c->out, ST_SEV_WARNING, rule, ptr, urn, __VA_ARGS__) &&          \
	       (c->oom = 1))
#define NOMEM(c) ((c)->oom = 1)

/* Walks a property value (its pointer is c->wbase or resources/c->wres, c->wfield, c->segs):
 * signatures and their members as Pulumi deserializes them, secrets, ciphertexts. */
void st__check_value(ictx *c, json_t *v, const char *urn, int depth);

#endif
