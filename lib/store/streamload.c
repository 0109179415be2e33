/*
 * A state read from a network store is parsed while it downloads (st__store_load_json). The
 * store's ordinary read runs on a second thread with a sink on the HTTP layer
 * (st__http_set_sink): the first answer's body goes to a buffer of its Content-Length, and the
 * parser (st__json_parse_stream) reads it as it fills, waiting where the bytes end. Whatever
 * happens the result is the sequential one: a compressed object, a small one, a store that is no
 * HTTP store, an answer without a length, a second attempt (a retry starts the body again) or a
 * parse that fails are all read whole first and parsed as before, and the read's own error is
 * the error. See doc/DESIGN.md, "Reading while parsing".
 */
#include "http.h"
#include "store_impl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* From how many bytes an object is parsed as it arrives (st__store_stream_test lowers it). */
#define STREAM_MIN (4u << 20)
static _Atomic size_t stream_min = STREAM_MIN;
static atomic_ulong streamed_ok;

unsigned long st__store_streamed(void)
{
	return atomic_load(&streamed_ok);
}

void st__store_stream_test(size_t min)
{
	atomic_store(&stream_min, min ? min : STREAM_MIN);
}

typedef struct sload {
	st_store *store;
	const char *key;
	size_t max;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int decided;      /* under mu: the first answer's body is coming here or not, or the
			   * read is over */
	int finished;     /* under mu: the read is over (rc, err, data, len) */
	int taken;        /* the stream exists (js, buf) */
	int attempts;     /* sink starts seen */
	char *buf;        /* the first answer's body */
	size_t got, shown;
	st__jstream js;
	int rc;
	st_error err;
	char *data;       /* the read's own result */
	size_t len;
} sload;

static int sink_start(void *ctx, long status, long long length)
{
	sload *l = ctx;
	int take = 0;
	pthread_mutex_lock(&l->mu);
	if (l->attempts++ == 0 && status == 200 && length >= (long long)atomic_load(&stream_min) &&
	    (unsigned long long)length <= l->max && (l->buf = malloc((size_t)length + 1))) {
		st__jstream_init(&l->js, l->buf, (size_t)length);
		l->taken = take = 1;
	} else if (l->taken) {
		st__jstream_end(&l->js, -1); /* another attempt: its body is read as usual */
	}
	l->decided = 1;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	return take;
}

static int sink_body(void *ctx, const char *p, size_t n)
{
	sload *l = ctx;
	if (n > l->js.total - l->got)
		return 0; /* more than the answer said */
	memcpy(l->buf + l->got, p, n);
	l->got += n;
	if (l->got - l->shown >= (256u << 10) || l->got == l->js.total) {
		st__jstream_put(&l->js, l->got);
		l->shown = l->got;
	}
	return 1;
}

static void *download(void *arg)
{
	sload *l = arg;
	st_http_sink sink = {sink_start, sink_body, l};
	char *data = NULL;
	size_t len = 0;
	int rc;

	st__http_set_sink(&sink);
	rc = st_store_read(l->store, l->key, l->max, &data, &len, NULL, &l->err);
	st__http_set_sink(NULL);
	pthread_mutex_lock(&l->mu);
	if (l->taken)
		st__jstream_end(&l->js, rc == ST_OK && l->attempts == 1 ? 1 : -1);
	l->rc = rc;
	l->data = data;
	l->len = len;
	l->decided = l->finished = 1;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

static int is_http_store(const st_store *s)
{
	const char *k = s->ops->scheme;
	return !strcmp(k, "s3") || !strcmp(k, "azblob") || !strcmp(k, "gs");
}

/* The object whole (new), once the read is over: the stream's buffer when it got all of it,
 * else the read's own result. */
static int whole(sload *l, char **data, size_t *len, st_error *err)
{
	if (l->rc != ST_OK)
		return st__err_copy(err, &l->err);
	if (l->taken && st__jstream_wait(&l->js) == 1) {
		free(l->data);
		l->data = NULL;
		l->buf[l->js.total] = '\0';
		*data = l->buf;
		*len = l->js.total;
		l->buf = NULL;
		return ST_OK;
	}
	*data = l->data;
	*len = l->len;
	l->data = NULL;
	return ST_OK;
}

/* Decompresses when it must (by magic bytes) and parses: `data` is stolen. */
static int parse_whole(char *data, size_t len, size_t max, const char *where, json_t **out,
		       st_style *style, st_problems *problems, st_error *err)
{
	char *plain = NULL;
	size_t plen = 0;
	int rc = st__decompress(data, len, max, where, &plain, &plen, NULL, err);
	if (rc == ST_OK)
		rc = st_json_parse(out, plain, plen, where, NULL, style, problems, err);
	free(plain);
	return rc;
}

static int compressed(const unsigned char *m)
{
	return (m[0] == 0x1f && m[1] == 0x8b) ||
	       (m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd);
}

int st__store_load_json(st_store *s, const char *key, size_t max, const char *where,
			json_t **out, st_style *style, st_problems *problems, st_error *err)
{
	sload l;
	pthread_t th;
	char *data = NULL;
	size_t len = 0;
	int rc, retry = 1, streamed = 0;

	*out = NULL;
	if (!max)
		max = ST_DEFAULT_MAX_FILE;
	memset(&l, 0, sizeof(l));
	l.store = s;
	l.key = key;
	l.max = max;
	st_error_clear(&l.err);
	pthread_mutex_init(&l.mu, NULL);
	pthread_cond_init(&l.cv, NULL);
	if (!is_http_store(s) || !st__threads_ok() || pthread_create(&th, NULL, download, &l) != 0) {
		/* read whole, then parse, on this thread */
		pthread_cond_destroy(&l.cv);
		pthread_mutex_destroy(&l.mu);
		rc = st_store_read(s, key, max, &data, &len, NULL, err);
		return rc == ST_OK ? parse_whole(data, len, max, where, out, style, problems, err)
				   : rc;
	}
	pthread_mutex_lock(&l.mu);
	while (!l.decided)
		pthread_cond_wait(&l.cv, &l.mu);
	pthread_mutex_unlock(&l.mu);
	if (l.taken) {
		/* the first bytes say whether it is compressed */
		pthread_mutex_lock(&l.js.mu);
		while (l.js.state == 0 && l.js.avail < 4)
			pthread_cond_wait(&l.js.cv, &l.js.mu);
		int ok = l.js.avail >= 4 && !compressed((const unsigned char *)l.buf);
		pthread_mutex_unlock(&l.js.mu);
		if (ok) {
			streamed = 1;
			rc = st__json_parse_stream(out, &l.js, where, style, problems, &retry, err);
		}
	}
	pthread_join(th, NULL);
	if (streamed && !retry && rc != ST_OK) {
		/* out of memory */
	} else if (l.rc != ST_OK) {
		json_decref(*out);
		*out = NULL;
		rc = st__err_copy(err, &l.err);
	} else if (streamed && !retry) {
		atomic_fetch_add(&streamed_ok, 1);
	} else {
		json_decref(*out);
		*out = NULL;
		rc = whole(&l, &data, &len, err);
		if (rc == ST_OK)
			rc = parse_whole(data, len, max, where, out, style, problems, err);
	}
	if (l.taken)
		st__jstream_destroy(&l.js);
	free(l.buf);
	free(l.data);
	pthread_cond_destroy(&l.cv);
	pthread_mutex_destroy(&l.mu);
	return rc;
}
