/* Error records, problem lists, change reports and small string helpers. */
#include "internal.h"

#include <pthread.h>
#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *st_strerror(int code)
{
	switch (code) {
	case ST_OK: return "ok";
	case ST_EIO: return "i/o error";
	case ST_EPARSE: return "parse error";
	case ST_EFORMAT: return "not a deployment state";
	case ST_EVERSION: return "unsupported version";
	case ST_EFEATURE: return "unsupported feature";
	case ST_EINTEGRITY: return "integrity error";
	case ST_ENOTFOUND: return "not found";
	case ST_EAMBIGUOUS: return "ambiguous";
	case ST_ELOCKED: return "locked";
	case ST_EINVAL: return "invalid argument";
	case ST_ENOMEM: return "out of memory";
	case ST_ESECRETS: return "secrets error";
	case ST_EPASSPHRASE: return "passphrase error";
	case ST_ECONFLICT: return "conflict";
	case ST_ELIMIT: return "limit exceeded";
	case ST_EUNSUPPORTED: return "unsupported";
	case ST_EREFUSED: return "refused";
	default: return "unknown error";
	}
}

void st_error_clear(st_error *err)
{
	if (!err)
		return;
	memset(err, 0, sizeof(*err));
	err->offset = -1;
}

int st__verr(st_error *err, int code, const char *fmt, va_list ap)
{
	if (!err || err->code != 0)
		return code;
	err->code = code;
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	return code;
}

int st__err(st_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	st__verr(err, code, fmt, ap);
	va_end(ap);
	return code;
}

void st__err_file(st_error *err, const char *file)
{
	if (err && file && !err->file[0])
		snprintf(err->file, sizeof(err->file), "%s", file);
}

void st__err_pointer(st_error *err, const char *pointer)
{
	if (err && pointer && !err->pointer[0])
		snprintf(err->pointer, sizeof(err->pointer), "%s", pointer);
}

char *st_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

char *st_strndup(const char *s, size_t n)
{
	char *p = malloc(n + 1);
	if (!p)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *st_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *p = NULL;
	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		p = NULL;
	va_end(ap);
	return p;
}

int st_problems_add(st_problems *list, st_severity sev, const char *rule, const char *pointer,
		    const char *urn, const char *fmt, ...)
{
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
	memset(list, 0, sizeof(*list));
}

int st_changes_add(st_changes *c, const char *fmt, ...)
{
	va_list ap;
	char *line = NULL;

	if (!c)
		return ST_OK;
	if (c->count == c->capacity) {
		size_t cap = c->capacity ? c->capacity * 2 : 16;
		char **lines = realloc(c->lines, cap * sizeof(*lines));
		if (!lines)
			return ST_ENOMEM;
		c->lines = lines;
		c->capacity = cap;
	}
	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) < 0)
		line = NULL;
	va_end(ap);
	if (!line)
		return ST_ENOMEM;
	c->lines[c->count++] = line;
	return ST_OK;
}

void st_changes_clear(st_changes *c)
{
	for (size_t i = 0; i < c->count; i++)
		free(c->lines[i]);
	free(c->lines);
	memset(c, 0, sizeof(*c));
}

/* ---- buffers ---- */

void st_buf_init(st_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void st_buf_free(st_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

int st_buf_flush(st_buf *b)
{
	if (!b->sink || b->oom)
		return b->oom ? -1 : 0;
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
	if (!b->data && st_buf_reserve(b, 0) < 0)
		return NULL;
	d = b->data;
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
		else
			st_buf_addc(b, key[i]);
	}
}

void st_pointer_add_index(st_buf *b, size_t index)
{
	st_buf_printf(b, "/%zu", index);
}

const char *st_json_str(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

int st_json_bool(const json_t *obj, const char *key)
{
	return json_is_true(json_object_get(obj, key));
}

int st_json_is_empty(const json_t *v)
{
	if (!v || json_is_null(v) || json_is_false(v))
		return 1;
	if (json_is_string(v))
		return json_string_length(v) == 0;
	if (json_is_number(v))
		return json_number_value(v) == 0;
	if (json_is_array(v))
		return json_array_size(v) == 0;
	if (json_is_object(v))
		return json_object_size(v) == 0;
	return 0;
}

static long online_cpus;

static void count_cpus(void)
{
	online_cpus = sysconf(_SC_NPROCESSORS_ONLN);
}

int st__threads_ok(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	const char *env = getenv("STATETOOL_THREADS");
	if (env && !strcmp(env, "1"))
		return 0;
	if (env && !strcmp(env, "2"))
		return 1; /* even on one processor (the tests use it) */
	pthread_once(&once, count_cpus);
	return online_cpus >= 2;
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

/* STATETOOL_TIMINGS: what each step took, on standard error (called on the main thread). */
void st__phase(const char *name)
{
	static double first, last;
	struct timespec ts;
	double now;
	if (!getenv("STATETOOL_TIMINGS"))
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	if (!first)
		first = last = now;
	if (name)
		fprintf(stderr, "statetool: timing: %8.1f ms (at %8.1f ms) %s\n", (now - last) * 1e3,
			(now - first) * 1e3, name);
	last = now;
}
