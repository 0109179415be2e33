/*
 * A store that lives in memory, for the tests: no local path anywhere, so whatever works on it
 * works through the store calls alone (what an object store gives). It counts the calls, and
 * can fail the Nth call that changes something (a write's commit, a delete, a copy, a rename),
 * as a store failing half-way would.
 */
#ifndef ST_MEMSTORE_H
#define ST_MEMSTORE_H

#include "store/store_impl.h"

typedef struct mem_obj {
	char *key, *data;
	size_t len;
	long long mtime;
	unsigned gen;
} mem_obj;

typedef struct mem_store {
	st_store base;
	mem_obj *v;
	size_t n, cap;
	long long clock;
	unsigned gen;
	/* counters */
	size_t reads, lists, changes;
	size_t fail_at; /* the Nth change fails (1-based); 0: none */
	const char *stat_fail; /* a stat of this key fails (ST_EIO), as a store that cannot look */
} mem_store;

typedef struct mem_writer {
	st_store_writer base;
	char *key, *buf;
	size_t len, cap;
	unsigned flags;
} mem_writer;

static mem_obj *mem_find(mem_store *m, const char *key)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->v[i].key, key))
			return &m->v[i];
	return NULL;
}

static int mem_change(mem_store *m, const char *what, const char *key, st_error *err)
{
	if (++m->changes == m->fail_at)
		return st__err(err, ST_EIO, "mem: injected failure of %s '%s'", what, key);
	return ST_OK;
}

static void mem_info(const mem_obj *o, st_store_info *info)
{
	if (!info)
		return;
	info->size = (long long)o->len;
	info->mtime_ns = o->mtime;
	snprintf(info->etag, sizeof(info->etag), "\"g%u\"", o->gen);
}

/* Puts bytes under a key (replacing). */
static int mem_put(mem_store *m, const char *key, const char *data, size_t len)
{
	mem_obj *o = mem_find(m, key);
	char *copy = malloc(len + 1);
	if (!copy)
		return ST_ENOMEM;
	memcpy(copy, data, len);
	copy[len] = '\0';
	if (!o) {
		if (m->n == m->cap) {
			size_t nc = m->cap ? m->cap * 2 : 16;
			mem_obj *nv = realloc(m->v, nc * sizeof(*nv));
			if (!nv) {
				free(copy);
				return ST_ENOMEM;
			}
			m->v = nv;
			m->cap = nc;
		}
		o = &m->v[m->n++];
		o->key = strdup(key);
	} else {
		free(o->data);
	}
	o->data = copy;
	o->len = len;
	o->mtime = (m->clock += 1000000000LL);
	o->gen = ++m->gen;
	return ST_OK;
}

static int mem_read(st_store *s, const char *key, size_t max, char **data, size_t *len,
		    st_store_info *info, st_error *err)
{
	mem_store *m = (mem_store *)s;
	mem_obj *o = mem_find(m, key);
	m->reads++;
	if (!o)
		return st__err(err, ST_ENOTFOUND, "mem: no object '%s'", key);
	if (o->len > max)
		return st__err(err, ST_ELIMIT, "mem: '%s' is too big", key);
	if (!(*data = malloc(o->len + 1)))
		return st__err(err, ST_ENOMEM, "out of memory");
	memcpy(*data, o->data, o->len + 1);
	*len = o->len;
	mem_info(o, info);
	return ST_OK;
}

static int mem_stat(st_store *s, const char *key, st_store_info *info, st_error *err)
{
	mem_obj *o = mem_find((mem_store *)s, key);
	if (((mem_store *)s)->stat_fail && !strcmp(((mem_store *)s)->stat_fail, key))
		return st__err(err, ST_EIO, "mem: injected failure of stat '%s'", key);
	if (!o)
		return st__err(err, ST_ENOTFOUND, "mem: no object '%s'", key);
	mem_info(o, info);
	return ST_OK;
}

static int mem_begin(st_store *s, const char *key, const st_store_write_opts *opts,
		     st_store_writer **out, st_error *err)
{
	mem_writer *w = calloc(1, sizeof(*w));
	if (!w || !(w->key = strdup(key))) {
		free(w);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	w->base.store = s;
	w->base.fd = -1;
	w->flags = opts->flags;
	*out = &w->base;
	return ST_OK;
}

static int mem_chunk(st_store_writer *sw, const void *p, size_t n, st_error *err)
{
	mem_writer *w = (mem_writer *)sw;
	if (w->len + n > w->cap) {
		size_t nc = (w->len + n) * 2;
		char *nb = realloc(w->buf, nc);
		if (!nb)
			return st__err(err, ST_ENOMEM, "out of memory");
		w->buf = nb;
		w->cap = nc;
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
	return ST_OK;
}

static int mem_finish(st_store_writer *sw, st_error *err)
{
	(void)sw;
	(void)err;
	return ST_OK;
}

static void mem_writer_free(mem_writer *w)
{
	free(w->key);
	free(w->buf);
	free(w);
}

static int mem_commit(st_store_writer *sw, st_error *err)
{
	mem_writer *w = (mem_writer *)sw;
	mem_store *m = (mem_store *)sw->store;
	int rc = ST_OK;
	if ((w->flags & ST_STORE_CREATE_ONLY) && mem_find(m, w->key))
		rc = st__err(err, ST_EEXIST, "mem: '%s' exists already", w->key);
	if (rc == ST_OK)
		rc = mem_change(m, "write", w->key, err);
	if (rc == ST_OK && mem_put(m, w->key, w->buf ? w->buf : "", w->len) != ST_OK)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	mem_writer_free(w);
	return rc;
}

static void mem_abort(st_store_writer *sw)
{
	mem_writer_free((mem_writer *)sw);
}

static int mem_cmp(const void *a, const void *b)
{
	return strcmp(((const st_store_entry *)a)->key, ((const st_store_entry *)b)->key);
}

static int mem_list(st_store *s, const char *prefix, unsigned flags, st_store_entry **out,
		    size_t *count, st_error *err)
{
	mem_store *m = (mem_store *)s;
	size_t pl = strlen(prefix), n = 0;
	st_store_entry *e = calloc(m->n + 1, sizeof(*e));
	m->lists++;
	if (!e)
		return st__err(err, ST_ENOMEM, "out of memory");
	for (size_t i = 0; i < m->n; i++) {
		const char *k = m->v[i].key, *slash;
		int dup = 0;
		if (strncmp(k, prefix, pl))
			continue;
		slash = (flags & ST_STORE_LIST_DIRS) ? strchr(k + pl, '/') : NULL;
		if (slash) {
			char *d = strndup(k, (size_t)(slash - k + 1));
			for (size_t j = 0; j < n; j++)
				dup |= !strcmp(e[j].key, d);
			if (dup) {
				free(d);
				continue;
			}
			e[n].key = d;
			e[n].info.size = -1;
		} else {
			e[n].key = strdup(k);
			mem_info(&m->v[i], &e[n].info);
		}
		n++;
	}
	qsort(e, n, sizeof(*e), mem_cmp);
	*out = e;
	*count = n;
	return ST_OK;
}

static int mem_remove(st_store *s, const char *key, st_error *err)
{
	mem_store *m = (mem_store *)s;
	mem_obj *o = mem_find(m, key);
	int rc;
	if (!o)
		return st__err(err, ST_ENOTFOUND, "mem: no object '%s'", key);
	if ((rc = mem_change(m, "delete", key, err)) != ST_OK)
		return rc;
	free(o->key);
	free(o->data);
	*o = m->v[--m->n];
	return ST_OK;
}

static int mem_copy(st_store *s, const char *src, const char *dst, int for_backup, st_error *err)
{
	mem_store *m = (mem_store *)s;
	mem_obj *o = mem_find(m, src);
	char *data;
	size_t len;
	int rc;
	(void)for_backup;
	if (!o)
		return st__err(err, ST_ENOTFOUND, "mem: no object '%s'", src);
	if ((rc = mem_change(m, "copy", dst, err)) != ST_OK)
		return rc;
	data = malloc(o->len + 1);
	if (!data)
		return st__err(err, ST_ENOMEM, "out of memory");
	memcpy(data, o->data, o->len);
	len = o->len;
	rc = mem_put(m, dst, data, len);
	free(data);
	return rc;
}

static void mem_free(st_store *s)
{
	mem_store *m = (mem_store *)s;
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].key);
		free(m->v[i].data);
	}
	free(m->v);
	free(m->base.url);
	free(m);
}

/* no rename: the journal installs by a copy and a delete, as on an object store */
static const st_store_ops mem_ops = {
	"mem",      mem_read, mem_stat, mem_begin, mem_chunk, mem_finish, mem_commit,
	mem_abort,  mem_list, mem_remove, mem_copy, mem_free, NULL, NULL,
};

static inline mem_store *mem_store_new(const char *url)
{
	mem_store *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->base.ops = &mem_ops;
	m->base.url = strdup(url);
	m->clock = 1700000000LL * 1000000000LL;
	return m;
}

/* The bytes of an object (borrowed), or NULL. */
static inline const char *mem_get(mem_store *m, const char *key)
{
	mem_obj *o = mem_find(m, key);
	return o ? o->data : NULL;
}

/* How many keys contain `part`. */
static inline size_t mem_count(mem_store *m, const char *part)
{
	size_t c = 0;
	for (size_t i = 0; i < m->n; i++)
		c += strstr(m->v[i].key, part) != NULL;
	return c;
}

#endif
