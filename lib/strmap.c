/* A string-keyed hash map (open addressing, FNV-1a). Keys are borrowed unless copied by the
 * caller; values are two size_t slots (e.g. first and last index of a URN). */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h ? h : 1;
}

void st_strmap_init(st_strmap *m)
{
	memset(m, 0, sizeof(*m));
}

void st_strmap_free(st_strmap *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

static int grow(st_strmap *m)
{
	size_t nc = m->cap ? m->cap * 2 : 64;
	st_strmap_slot *ns = calloc(nc, sizeof(*ns));
	if (!ns)
		return -1;
	for (size_t i = 0; i < m->cap; i++) {
		st_strmap_slot *s = &m->slots[i];
		if (!s->hash)
			continue;
		size_t k = (size_t)s->hash & (nc - 1);
		while (ns[k].hash)
			k = (k + 1) & (nc - 1);
		ns[k] = *s;
	}
	free(m->slots);
	m->slots = ns;
	m->cap = nc;
	return 0;
}

st_strmap_slot *st_strmap_getn(const st_strmap *m, const char *key, size_t n)
{
	uint64_t h;
	if (!m->cap)
		return NULL;
	h = fnv1a(key, n);
	for (size_t i = (size_t)h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		st_strmap_slot *s = &m->slots[i];
		if (!s->hash)
			return NULL;
		if (s->hash == h && s->len == n && !memcmp(s->key, key, n))
			return s;
	}
}

st_strmap_slot *st_strmap_get(const st_strmap *m, const char *key)
{
	return st_strmap_getn(m, key, strlen(key));
}

st_strmap_slot *st_strmap_putn(st_strmap *m, const char *key, size_t n, int *created)
{
	uint64_t h;
	st_strmap_slot *s;
	if ((m->count + 1) * 4 > m->cap * 3 && grow(m) < 0)
		return NULL;
	h = fnv1a(key, n);
	for (size_t i = (size_t)h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		s = &m->slots[i];
		if (!s->hash)
			break;
		if (s->hash == h && s->len == n && !memcmp(s->key, key, n)) {
			if (created)
				*created = 0;
			return s;
		}
	}
	s->hash = h;
	s->key = key;
	s->len = n;
	s->a = s->b = 0;
	s->p = NULL;
	m->count++;
	if (created)
		*created = 1;
	return s;
}

st_strmap_slot *st_strmap_put(st_strmap *m, const char *key, int *created)
{
	return st_strmap_putn(m, key, strlen(key), created);
}
