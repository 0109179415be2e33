/*
 * A source text kept with the spans of values parsed from it: the resources a lazy load left
 * as skeletons (lib/json/skim.c proves their text is what the writer writes for them), each
 * registered by the skeleton's address with the span of the full resource in the text. The
 * writer copies a registered value's span (lib/json/write.c); lib/state/lazy.c makes and
 * inflates lazy states with it. The contract is in lib/internal.h ("Lazy states").
 */
#include "internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct st__spans {
	const char *text; /* the source text: `map` or `owned` */
	size_t len;
	void *map;        /* a private file mapping (munmap), or NULL */
	char *owned;      /* a read buffer (free), or NULL */
	int fd;           /* the mapped file, open (runs of spans are copied from it), or -1 */
	struct stat src;  /* fd's size and modification time before the parse */
	size_t max_depth;
	st__lazy_rec *v;  /* document order; res NULL once dropped */
	size_t n, live;
	size_t *slots;    /* open addressing by value address: index + 1, 0 empty */
	size_t mask;
	st_style style;   /* the text's style, and the depth of the registered values in it */
	size_t depth;
	size_t released;  /* the mapping's pages before this offset were given back */
};

static size_t slot_of(const st__spans *sp, const json_t *v)
{
	uint64_t h = (uint64_t)(uintptr_t)v * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 20) & sp->mask;
}

/* The record of a registered value, or NULL. */
static st__lazy_rec *find(const st__spans *sp, const json_t *v)
{
	if (!sp || !v)
		return NULL;
	for (size_t i = slot_of(sp, v);; i = (i + 1) & sp->mask) {
		size_t k = sp->slots[i];
		if (!k)
			return NULL;
		if (sp->v[k - 1].res == v)
			return &sp->v[k - 1];
	}
}

st__spans *st__spans_new(const st__spans_src *src, st_style style, size_t depth,
			 st__lazy_rec *recs, size_t n)
{
	st__spans *sp = calloc(1, sizeof(*sp));
	size_t cap = 16;
	if (!sp)
		return NULL;
	while (cap < 2 * n)
		cap *= 2;
	sp->slots = calloc(cap, sizeof(*sp->slots));
	if (!sp->slots) {
		free(sp);
		return NULL;
	}
	sp->text = src->text;
	sp->len = src->len;
	sp->map = src->map;
	sp->owned = src->owned;
	sp->fd = src->fd;
	sp->src = src->st;
	sp->max_depth = src->max_depth;
	sp->style = style;
	sp->depth = depth;
	sp->v = recs;
	sp->n = sp->live = n;
	sp->mask = cap - 1;
	for (size_t k = 0; k < n; k++) {
		size_t i = slot_of(sp, recs[k].res);
		while (sp->slots[i])
			i = (i + 1) & sp->mask;
		sp->slots[i] = k + 1;
	}
	return sp;
}

void st__spans_free(st__spans *sp)
{
	if (!sp)
		return;
	if (sp->map)
		munmap(sp->map, sp->len);
	if (sp->fd >= 0)
		close(sp->fd);
	free(sp->owned);
	free(sp->v);
	free(sp->slots);
	free(sp);
}

int st__spans_span(const st__spans *sp, const json_t *v, const char **p, size_t *len)
{
	const st__lazy_rec *r = find(sp, v);
	if (!r)
		return 0;
	*p = sp->text + r->off;
	*len = r->len;
	return 1;
}

int st__spans_parse(const st__spans *sp, const json_t *v, json_t **out, st_error *err)
{
	st_parse_limits lim = ST_PARSE_LIMITS_INIT;
	const st__lazy_rec *r = find(sp, v);
	*out = NULL;
	if (!r)
		return ST_OK;
	lim.max_depth = sp->max_depth;
	return st__json_parse_ex(out, sp->text + r->off, r->len, NULL, &lim, NULL, NULL, 0, 1, NULL,
				 err);
}

void st__spans_drop(st__spans *sp, const json_t *v)
{
	st__lazy_rec *r = find(sp, v);
	if (!r)
		return;
	r->res = NULL; /* the slot stays; no live value has that record any more */
	sp->live--;
}

size_t st__spans_count(const st__spans *sp)
{
	return sp ? sp->live : 0;
}

int st__spans_where(const st__spans *sp, st_style *style, size_t *depth)
{
	if (!sp)
		return 0;
	*style = sp->style;
	*depth = sp->depth;
	return 1;
}

void st__spans_passed(st__spans *sp, const char *p)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), base, to;

	if (!sp || !sp->map || p < sp->text || p > sp->text + sp->len)
		return;
	base = (uintptr_t)sp->map;
	to = ((uintptr_t)p & ~(page - 1)) - base;
	if (to < sp->released)
		sp->released = 0; /* another write from the start: its pages came back */
	if (to - sp->released >= (8u << 20) &&
	    madvise((void *)(base + sp->released), to - sp->released, MADV_DONTNEED) == 0)
		sp->released = to;
}

int st__spans_source(const st__spans *sp, const char *p, int *fd, off_t *off)
{
	if (!sp || sp->fd < 0 || p < sp->text || p > sp->text + sp->len)
		return 0;
	*fd = sp->fd;
	*off = (off_t)(p - sp->text);
	return 1;
}

const char *st__spans_file(const st__spans *sp, size_t *len, int *fd)
{
	if (!sp || sp->fd < 0)
		return NULL;
	*len = sp->len;
	if (fd)
		*fd = sp->fd;
	return sp->text;
}

int st__spans_file_changed(const st__spans *sp)
{
	struct stat now;
	if (!sp || sp->fd < 0)
		return 0;
	if (fstat(sp->fd, &now) != 0)
		return -1;
	return !(now.st_size == sp->src.st_size && now.st_mtim.tv_sec == sp->src.st_mtim.tv_sec &&
		 now.st_mtim.tv_nsec == sp->src.st_mtim.tv_nsec);
}
