/*
 * A document parsed while it arrives (st__json_parse_stream; lib/store/streamload.c feeds it
 * from a store's download): the stream the producer fills, the parser's wait where the bytes
 * end (lib/json/read.c calls it at each array element and object member). See doc/DESIGN.md,
 * "Reading while parsing".
 */
#include "json/read.h"

#include <stdlib.h>
#include <string.h>

void st__jstream_init(st__jstream *s, const void *base, size_t total)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->base = base;
	s->total = total;
}

void st__jstream_put(st__jstream *s, size_t avail)
{
	pthread_mutex_lock(&s->mu);
	s->avail = avail;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

void st__jstream_end(st__jstream *s, int state)
{
	pthread_mutex_lock(&s->mu);
	if (s->state == 0)
		s->state = state == 1 && s->avail == s->total ? 1 : -1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

int st__jstream_wait(st__jstream *s)
{
	int state;
	pthread_mutex_lock(&s->mu);
	while (s->state == 0)
		pthread_cond_wait(&s->cv, &s->mu);
	state = s->state;
	pthread_mutex_unlock(&s->mu);
	return state;
}

void st__jstream_destroy(st__jstream *s)
{
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
}

/* Waits until STREAM_AHEAD * 4 bytes past the cursor are there or nothing more will come; the
 * parser then reads to what is there. */
void st__json_stream_more(parser *ps)
{
	st__jstream *s = ps->stream;
	size_t want = (size_t)(ps->p - s->base) + 4 * (size_t)STREAM_AHEAD;

	if (want > s->total)
		want = s->total;
	pthread_mutex_lock(&s->mu);
	while (s->state == 0 && s->avail < want)
		pthread_cond_wait(&s->cv, &s->mu);
	ps->end = s->base + s->avail;
	if (s->state != 0)
		ps->stream = NULL; /* nothing more will come */
	pthread_mutex_unlock(&s->mu);
}

/* Moves src's problems to the end of dst (src emptied). -1: out of memory (dst unchanged). */
static int problems_move(st_problems *dst, st_problems *src)
{
	if (!src->count)
		return 0;
	if (dst->count + src->count > dst->capacity) {
		size_t cap = dst->count + src->count;
		st_problem *t = realloc(dst->items, cap * sizeof(*t));
		if (!t)
			return -1;
		dst->items = t;
		dst->capacity = cap;
	}
	memcpy(dst->items + dst->count, src->items, src->count * sizeof(*src->items));
	dst->count += src->count;
	dst->errors += src->errors;
	dst->warnings += src->warnings;
	free(src->items);
	memset(src, 0, sizeof(*src));
	return 0;
}

int st__json_parse_stream(json_t **out, st__jstream *stream, const char *name,
			  st_style *style_out, st_problems *problems, int *retry, st_error *err)
{
	st_problems mine = {0};
	st_error e;
	int rc;

	st_error_clear(&e);
	*retry = 0;
	rc = st__json_parse_core(out, (const char *)stream->base, stream->total, stream, name,
				 NULL, style_out, problems ? &mine : NULL, 0, 0, NULL, NULL, &e);
	if (rc == ST_OK && problems && problems_move(problems, &mine) < 0) {
		json_decref(*out);
		*out = NULL;
		rc = st__err(err, ST_ENOMEM, "out of memory");
	} else if (rc != ST_OK && rc != ST_ENOMEM) {
		*retry = 1; /* cut short by where the bytes ended, or wrong: the whole decides */
	} else if (rc == ST_ENOMEM) {
		st__err_copy(err, &e);
	}
	st_problems_clear(&mine);
	return rc;
}

