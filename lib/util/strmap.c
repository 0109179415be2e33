/* A string-keyed hash map (open addressing). Keys are borrowed unless copied by the caller;
 * values are two size_t slots (e.g. first and last index of a URN). */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Eight bytes per step (URNs run to a hundred bytes and more; a byte at a time was the
 * cost of every lookup), the length mixed in, then a final avalanche so that the low bits
 * the table indexes by depend on every byte. */
static uint64_t hash(const char *s, size_t n)
{
	const uint64_t k = 0x9e3779b97f4a7c15ULL;
	uint64_t h = (uint64_t)n * k, w;
	while (n >= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * k;
		h ^= h >> 29;
		s += 8;
		n -= 8;
	}
	if (n) {
		w = 0;
		memcpy(&w, s, n);
		h = (h ^ w) * k;
		h ^= h >> 29;
	}
	h ^= h >> 32;
	h *= 0xd6e8feb86659fd93ULL;
	h ^= h >> 32;
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
	h = hash(key, n);
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
	h = hash(key, n);
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
