/* A growable byte buffer (optionally draining into a sink), JSON Pointer tokens, and the
 * segment stack that builds a pointer only when one is needed. */
#include "internal.h"
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void st_buf_init(st_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void st_buf_free(st_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* The pending run to its sink (before the bytes after it, which the buffer holds). */
static int put_run(st_buf *b)
{
	const char *p = b->run;
	int rc;
	if (!p)
		return 0;
	b->run = NULL;
	rc = b->run_sink ? b->run_sink(b->sink_ctx, p, b->run_len)
			 : b->sink(b->sink_ctx, p, b->run_len);
	if (rc < 0) {
		b->oom = b->sink_failed = 1;
		return -1;
	}
	return 0;
}

void st_buf_add_span(st_buf *b, const char *p, size_t n)
{
	const char *end;

	if (!b->sink) {
		st_buf_add(b, p, n);
		return;
	}
	if (b->oom)
		return;
	end = b->run ? b->run + b->run_len : NULL;
	if (end && p >= end && (size_t)(p - end) == b->len &&
	    (!b->len || !memcmp(b->data, end, b->len))) {
		b->len = 0; /* the bytes between are the text's own: the run covers them */
		b->run_len = (size_t)(p - b->run) + n;
		return;
	}
	if (st_buf_flush(b) < 0)
		return;
	b->run = p;
	b->run_len = n;
}

int st_buf_flush(st_buf *b)
{
	if (!b->sink || b->oom)
		return b->oom ? -1 : 0;
	if (put_run(b) < 0)
		return -1;
	if (b->len && b->sink(b->sink_ctx, b->data, b->len) < 0) {
		b->oom = b->sink_failed = 1;
		return -1;
	}
	b->len = 0;
	return 0;
}

void st_buf_add_block(st_buf *b, const void *p, size_t n)
{
	if (!b->sink) {
		st_buf_add(b, p, n);
		return;
	}
	if (st_buf_flush(b) < 0)
		return;
	if (n && b->sink(b->sink_ctx, p, n) < 0)
		b->oom = b->sink_failed = 1;
}

int st_buf_reserve(st_buf *b, size_t extra)
{
	size_t need, cap;
	char *d;

	if (b->oom)
		return -1;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	if (b->sink && b->len >= ST_BUF_CHUNK) {
		if (st_buf_flush(b) < 0)
			return -1;
		need = extra + 1;
		if (need <= b->cap)
			return 0;
	}
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	d = realloc(b->data, cap);
	if (!d) {
		b->oom = 1;
		return -1;
	}
	b->data = d;
	b->cap = cap;
	return 0;
}

void st_buf_add(st_buf *b, const void *p, size_t n)
{
	if (st_buf_reserve(b, n) < 0)
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void st_buf_addc(st_buf *b, char c)
{
	if (st_buf_reserve(b, 1) < 0)
		return;
	b->data[b->len++] = c;
	b->data[b->len] = '\0';
}

void st_buf_adds(st_buf *b, const char *s)
{
	st_buf_add(b, s, strlen(s));
}

void st_buf_printf(st_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || st_buf_reserve(b, (size_t)n) < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

char *st_buf_take(st_buf *b, size_t *len)
{
	char *d;

	if (b->oom) {
		st_buf_free(b);
		return NULL;
	}
	if (!b->data) {
		if (st_buf_reserve(b, 0) < 0)
			return NULL;
		b->data[0] = '\0'; /* nothing was added: still a string */
	}
	d = b->data;
	d[b->len] = '\0'; /* a string, also when its bytes went to a sink (flush left len 0) */
	if (len)
		*len = b->len;
	memset(b, 0, sizeof(*b));
	return d;
}

void st_pointer_add_key(st_buf *b, const char *key, size_t len)
{
	st_buf_addc(b, '/');
	for (size_t i = 0; i < len; i++) {
		if (key[i] == '~')
			st_buf_add(b, "~0", 2);
		else if (key[i] == '/')
			st_buf_add(b, "~1", 2);
		else if (!key[i])
			st_buf_add(b, "\\u0000", 6); /* a pointer is a C string: the JSON escape */
		else
			st_buf_addc(b, key[i]);
	}
}

void st__key_text(st_buf *b, const char *key, size_t len)
{
	const char *nul;
	while ((nul = memchr(key, '\0', len))) {
		st_buf_add(b, key, (size_t)(nul - key));
		st_buf_add(b, "\\u0000", 6);
		len -= (size_t)(nul - key) + 1;
		key = nul + 1;
	}
	st_buf_add(b, key, len);
}

void st_pointer_add_index(st_buf *b, size_t index)
{
	st_buf_printf(b, "/%zu", index);
}

int st_segs_push(st_segs *s, const char *key, size_t len)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 32;
		st_seg *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n].key = key;
	s->v[s->n].len = len;
	s->n++;
	return 0;
}

void st_segs_pointer(st_buf *b, const st_segs *s)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].key)
			st_pointer_add_key(b, s->v[i].key, s->v[i].len);
		else
			st_pointer_add_index(b, s->v[i].len);
	}
}

void st_segs_free(st_segs *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static unsigned long prefaults;

unsigned long st__prefaults(void)
{
	return __atomic_load_n(&prefaults, __ATOMIC_RELAXED);
}

int st__prefault(void *p, size_t n)
{
#if defined(__linux__) && !defined(MADV_POPULATE_WRITE)
#define MADV_POPULATE_WRITE 23
#endif
#ifdef MADV_POPULATE_WRITE
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t from = ((uintptr_t)p + page - 1) & ~(page - 1), to = ((uintptr_t)p + n) & ~(page - 1);
	if (to <= from)
		return 0;
	__atomic_add_fetch(&prefaults, 1, __ATOMIC_RELAXED);
	return madvise((void *)from, to - from, MADV_POPULATE_WRITE) == 0;
#else
	(void)p;
	(void)n;
	return 0;
#endif
}

void st__prefault_ahead(char *buf, size_t size, size_t *done, size_t need)
{
	size_t to;
	if (size < ST_PREFAULT_WINDOW || need <= *done)
		return;
	to = size - need > ST_PREFAULT_WINDOW ? need + ST_PREFAULT_WINDOW : size;
	st__prefault(buf + *done, to - *done);
	*done = to;
}
