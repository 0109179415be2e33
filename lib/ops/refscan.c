/*
 * A read-only pass over the resources for references to a few URNs (delete, rename), on two
 * threads for big states: each half stops early once the other has found what a pass without
 * marks looks for.
 */
#include "session.h"

#include <pthread.h>
#include <stdatomic.h>

#include <stdlib.h>
#include <string.h>

typedef struct half {
	st__refscan *s;
	size_t from, to;
	atomic_int *stop; /* set once a pass without marks found a reference */
	int any, conflict;
	size_t copies;
} half;

/* Compares r's own URN with the rename's new and old URNs. */
static void own_urn(half *h, json_t *r)
{
	st__refscan *s = h->s;
	json_t *uv = json_object_get(r, "urn");
	size_t ul = json_string_length(uv);
	const char *u = json_string_value(uv);
	if (u && ul == s->nul && !memcmp(u, s->nu, ul))
		h->conflict = 1;
	if (u && ul == s->oldl && !memcmp(u, s->old, ul))
		h->copies++;
}

static void *half_main(void *arg)
{
	half *h = arg;
	st__refscan *s = h->s;
	for (size_t i = h->from; i < h->to; i++) {
		json_t *r = json_array_get(s->res, i);
		if (!s->hit && atomic_load_explicit(h->stop, memory_order_relaxed))
			break;
		if (s->nu)
			own_urn(h, r);
		if (s->skip && s->skip[i])
			continue;
		if (st__refers(r, s->urns, s->uf, s->refs, s->rf)) {
			h->any = 1;
			if (!s->hit) {
				atomic_store(h->stop, 1);
				break;
			}
			s->hit[i] = 1;
		}
	}
	return NULL;
}

void st__refscan_run(st__refscan *s)
{
	size_t n = json_array_size(s->res);
	atomic_int stop = 0;
	half h[2] = {{s, 0, n / 2, &stop, 0, 0, 0}, {s, n / 2, n, &stop, 0, 0, 0}};
	st__two t = {0};
	if (st__two_worth(ST__T_REFSCAN, n, 0) &&
	    st__two_start(&t, ST__T_REFSCAN, half_main, &h[1], 0)) {
		half_main(&h[0]);
		st__two_join(&t);
	} else {
		h[0].to = n;
		half_main(&h[0]);
	}
	s->any = h[0].any | h[1].any;
	s->conflict = h[0].conflict | h[1].conflict;
	s->copies = h[0].copies + h[1].copies;
}
