/* Lazy states in the tests: a fixture loaded lazily (st__state_load_lazy), or a state made in
 * memory written and loaded again lazily. NULL when the load fails. */
#ifndef ST_LAZYTEST_H
#define ST_LAZYTEST_H

#include "internal.h"

static inline st_state *tu_load_lazy(const char *rel)
{
	char *p = tu_fixture(rel);
	st_state *s = NULL;
	if (st__state_load_lazy(&s, p, NULL, NULL) != ST_OK)
		s = NULL;
	free(p);
	return s;
}

static inline st_state *tu_lazy_of(const st_state *full)
{
	char *text = NULL;
	size_t len = 0;
	st_state *s = NULL;
	if (st_state_dump(full, NULL, &text, &len, NULL) != ST_OK ||
	    st__state_load_lazy_text(&s, text, len, "t.json", NULL, NULL) != ST_OK)
		return NULL;
	return s;
}

#endif
