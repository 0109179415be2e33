/*
 * A problem list (st_problems: what a load, a check or a validation reports, each problem with
 * its rule, JSON Pointer and URN) and the values a load dropped under duplicate keys, which the
 * list carries beside its problems (st__dropped_*, see internal.h "Duplicate keys").
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int st_problems_add(st_problems *list, st_severity sev, const char *rule, const char *pointer,
		    const char *urn, const char *fmt, ...)
{
	ST_ASSERT_ARG(list);
	ST_ASSERT_ARG(rule);
	ST_ASSERT_ARG(fmt);
	if (sev != ST_SEV_WARNING && sev != ST_SEV_ERROR)
		return ST_EINVAL;
	st_problem *p;
	va_list ap;
	char *msg = NULL;

	if (list->count == list->capacity) {
		size_t cap = list->capacity ? list->capacity * 2 : 16;
		st_problem *items = realloc(list->items, cap * sizeof(*items));
		if (!items)
			return ST_ENOMEM;
		list->items = items;
		list->capacity = cap;
	}
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	p = &list->items[list->count];
	memset(p, 0, sizeof(*p));
	p->severity = sev;
	p->message = msg;
	p->rule = st_strdup(rule);
	p->pointer = st_strdup(pointer ? pointer : "");
	p->urn = urn ? st_strdup(urn) : NULL;
	if (!msg || !p->rule || !p->pointer || (urn && !p->urn)) {
		free(msg);
		free(p->rule);
		free(p->pointer);
		free(p->urn);
		return ST_ENOMEM;
	}
	list->count++;
	if (sev == ST_SEV_ERROR)
		list->errors++;
	else
		list->warnings++;
	return ST_OK;
}

void st_problems_clear(st_problems *list)
{
	for (size_t i = 0; i < list->count; i++) {
		free(list->items[i].rule);
		free(list->items[i].message);
		free(list->items[i].pointer);
		free(list->items[i].urn);
		free(list->items[i].file);
	}
	free(list->items);
	st__dropped_free(list);
	memset(list, 0, sizeof(*list));
}

void st__problems_truncate(st_problems *pr, size_t n)
{
	if (!pr)
		return;
	while (pr->count > n) {
		st_problem *q = &pr->items[--pr->count];
		if (q->severity == ST_SEV_ERROR)
			pr->errors--;
		else
			pr->warnings--;
		free(q->rule);
		free(q->message);
		free(q->pointer);
		free(q->urn);
		free(q->file);
	}
}

/* ---- the earlier values of duplicate keys (see internal.h) ---- */

int st__dropped_add(st_problems *pr, json_t *obj, const char *key, size_t keylen, json_t *val)
{
	st__dropped *d = pr->st__dropped;
	if (!d && !(d = pr->st__dropped = calloc(1, sizeof(*d))))
		return ST_ENOMEM;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		st__dropped_ent *v = realloc(d->v, cap * sizeof(*v));
		if (!v)
			return ST_ENOMEM;
		d->v = v;
		d->cap = cap;
	}
	st__dropped_ent *e = &d->v[d->n];
	if (!(e->key = malloc(keylen + 1)))
		return ST_ENOMEM;
	memcpy(e->key, key, keylen);
	e->key[keylen] = '\0';
	e->keylen = keylen;
	e->obj = json_incref(obj);
	e->val = json_incref(val);
	e->seq = d->n;
	d->n++;
	d->sorted = 0;
	return ST_OK;
}

void st__dropped_free(st_problems *pr)
{
	st__dropped *d = pr->st__dropped;
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		json_decref(d->v[i].obj);
		json_decref(d->v[i].val);
		free(d->v[i].key);
	}
	free(d->v);
	free(d);
	pr->st__dropped = NULL;
}

size_t st__dropped_count(const st_problems *pr)
{
	const st__dropped *d = pr ? pr->st__dropped : NULL;
	return d ? d->n : 0;
}

void st__dropped_truncate(st_problems *pr, size_t n)
{
	st__dropped *d = pr ? pr->st__dropped : NULL;
	if (!d)
		return;
	if (!n) {
		st__dropped_free(pr);
		return;
	}
	while (d->n > n) {
		st__dropped_ent *e = &d->v[--d->n];
		json_decref(e->obj);
		json_decref(e->val);
		free(e->key);
	}
}

int st__dropped_move(st_problems *to, st_problems *from)
{
	st__dropped *f = from->st__dropped;
	int rc = ST_OK;
	for (size_t i = 0; f && i < f->n && rc == ST_OK; i++)
		rc = st__dropped_add(to, f->v[i].obj, f->v[i].key, f->v[i].keylen, f->v[i].val);
	st__dropped_free(from);
	return rc;
}

static int cmp_dropped(const void *a, const void *b)
{
	const st__dropped_ent *x = a, *y = b;
	if (x->obj != y->obj)
		return x->obj < y->obj ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void st__dropped_seal(st__dropped *d)
{
	if (d && !d->sorted) {
		qsort(d->v, d->n, sizeof(*d->v), cmp_dropped);
		d->sorted = 1;
	}
}

const st__dropped_ent *st__dropped_of(const st__dropped *d, const json_t *obj,
				      const st__dropped_ent **end)
{
	size_t lo = 0, hi = d ? d->n : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if ((const json_t *)d->v[mid].obj < obj)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!d || lo >= d->n || d->v[lo].obj != obj)
		return NULL;
	hi = lo;
	while (hi < d->n && d->v[hi].obj == obj)
		hi++;
	*end = &d->v[hi];
	return &d->v[lo];
}
