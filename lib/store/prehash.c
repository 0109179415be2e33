/*
 * A move's old objects hashed ahead (lib/internal.h, st__prehash_start): the two-stack journal
 * (journal.c) hashes each side's old object; a move whose states were loaded lazily from
 * their files starts those hashes on threads of their own while it works on one processor,
 * and the journal takes them when the old object is still the file hashed, unchanged.
 */
#include "store_impl.h"

#include <sodium.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* XXH3-128's canonical (big-endian) bytes in hex, as xxhsum -H2 prints them. */
static void xxh3_hex(XXH128_hash_t h, char out[65])
{
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, h);
	sodium_bin2hex(out, 65, c.digest, sizeof(c.digest));
}

/* Hashes a mapping in 8 MiB slices, each slice's pages given back once hashed; with `kept`
 * (len / 8 MiB + 1 states, XXH3 only), the state before each slice and after the last whole
 * one. */
static void mapped_hex_keep(st__jhash alg, const char *map, size_t len, char out[65],
			    XXH3_state_t *kept)
{
	crypto_generichash_state b2;
	XXH3_state_t x;
	unsigned char h[32];

	if (alg == ST__JH_XXH3)
		XXH3_128bits_reset(&x);
	else
		crypto_generichash_init(&b2, NULL, 0, sizeof(h));
	for (size_t off = 0; off < len; off += ST__KEEP_EVERY) {
		size_t n = len - off < ST__KEEP_EVERY ? len - off : ST__KEEP_EVERY;
		if (kept)
			kept[off / ST__KEEP_EVERY] = x;
		if (alg == ST__JH_XXH3)
			XXH3_128bits_update(&x, map + off, n);
		else
			crypto_generichash_update(&b2, (const unsigned char *)map + off, n);
		if (n == ST__KEEP_EVERY)
			(void)madvise((void *)(map + off), n, MADV_DONTNEED);
	}
	if (kept && len % ST__KEEP_EVERY == 0)
		kept[len / ST__KEEP_EVERY] = x;
	if (alg == ST__JH_XXH3) {
		xxh3_hex(XXH3_128bits_digest(&x), out);
		return;
	}
	crypto_generichash_final(&b2, h, sizeof(h));
	sodium_bin2hex(out, 65, h, sizeof(h));
}

void st__jhash_hex(st__jhash alg, const void *data, size_t len, char out[65])
{
	unsigned char h[32];
	switch (alg) {
	case ST__JH_SHA256:
		st_sha256_hex(data, len, out);
		return;
	case ST__JH_BLAKE2B:
		crypto_generichash(h, sizeof(h), data, len, NULL, 0);
		sodium_bin2hex(out, 65, h, sizeof(h));
		return;
	case ST__JH_XXH3:
		xxh3_hex(XXH3_128bits(data, len), out);
		return;
	}
}

void st__jhash_mapped_hex(st__jhash alg, const char *map, size_t len, char out[65])
{
	if (alg == ST__JH_SHA256)
		st__jhash_hex(alg, map, len, out);
	else
		mapped_hex_keep(alg, map, len, out, NULL);
}

struct st__prehash {
	int fd, ok;
	struct stat before;
	char hex[65];
	/* kept[i]: the hash's state after i * 8 MiB bytes (NULL when it could not be allocated) */
	XXH3_state_t *kept;
	size_t nkept;
	st__two th;
};

static unsigned long prehash_hits;

unsigned long st__prehash_used(void)
{
	return __atomic_load_n(&prehash_hits, __ATOMIC_RELAXED);
}

/* The same file, unchanged: device, inode, size, modification and change times. */
static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static void *prehash_main(void *arg)
{
	st__prehash *p = arg;
	size_t len = (size_t)p->before.st_size;
	struct stat after;
	void *map = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, p->fd, 0) : NULL;
	if (map == MAP_FAILED)
		return NULL;
	if (posix_memalign((void **)&p->kept, 64, (len / ST__KEEP_EVERY + 1) * sizeof(*p->kept)))
		p->kept = NULL;
	else
		p->nkept = len / ST__KEEP_EVERY + 1;
	mapped_hex_keep(ST__JH_XXH3, map ? map : "", len, p->hex, p->kept);
	if (map)
		munmap(map, len);
	p->ok = fstat(p->fd, &after) == 0 && same_file(&p->before, &after);
	return NULL;
}

st__prehash *st__prehash_start(int fd)
{
	st__prehash *p;
	if (!st__two_worth(ST__T_PREHASH, 0, 0) || !(p = calloc(1, sizeof(*p))))
		return NULL;
	p->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (p->fd >= 0 && fstat(p->fd, &p->before) == 0 && S_ISREG(p->before.st_mode) &&
	    st__two_start(&p->th, ST__T_PREHASH, prehash_main, p, 0))
		return p;
	if (p->fd >= 0)
		close(p->fd);
	free(p);
	return NULL;
}

void st__prehash_free(st__prehash *p)
{
	if (!p)
		return;
	st__two_join(&p->th);
	close(p->fd);
	free(p->kept);
	free(p);
}

int st__prehash_take(st__prehash *p, const char *path, char out[65])
{
	struct stat now;
	st__two_join(&p->th);
	if (!p->ok || lstat(path, &now) < 0 || !S_ISREG(now.st_mode) || !same_file(&p->before, &now))
		return 0;
	memcpy(out, p->hex, 65);
	__atomic_add_fetch(&prehash_hits, 1, __ATOMIC_RELAXED);
	return 1;
}

const XXH3_state_t *st__prehash_states(const st__prehash *p, size_t *size)
{
	*size = (size_t)p->before.st_size;
	return p->ok && p->nkept == *size / ST__KEEP_EVERY + 1 ? p->kept : NULL;
}

void (*st__prehash_taken_hook)(const char *path);

int st__prehash_take_for(const st_state *s, const char *path, char out[65], st__taphash *t)
{
	const XXH3_state_t *kept;
	const char *map;
	size_t size = 0, len = 0;

	if (!s->prehash || !st__prehash_take(s->prehash, path, out))
		return 0;
	kept = st__prehash_states(s->prehash, &size);
	map = st__lazy_file_text(s, &len);
	if (!kept || !map || len != size) {
		kept = NULL;
		map = NULL;
	}
	st__taphash_init(t, kept, map, len);
	if (t->same)
		t->of = s;
	if (t->of && st__prehash_taken_hook)
		st__prehash_taken_hook(s->path);
	return 1;
}

int st__prehash_still(const st__prehash *p)
{
	struct stat now;
	return fstat(p->fd, &now) == 0 && same_file(&p->before, &now);
}

/* ---- a staged object's hash, its prefix taken from the ahead hash ---- */

static unsigned long tap_skipped;

unsigned long st__taphash_skipped(void)
{
	return __atomic_load_n(&tap_skipped, __ATOMIC_RELAXED);
}

void st__taphash_init(st__taphash *t, const XXH3_state_t *kept, const char *map,
		      size_t len)
{
	memset(t, 0, sizeof(*t));
	t->kept = kept;
	t->map = map;
	t->len = len;
	t->same = kept && map;
	if (!t->same)
		XXH3_128bits_reset(&t->h);
}

/* The first byte that is not the old file's at its offset (or the end): the hash so far is
 * the old file's first pos bytes, from the last state kept at or before pos. */
static void taphash_resume(st__taphash *t)
{
	size_t k = t->pos / ST__KEEP_EVERY;
	t->h = t->kept[k];
	XXH3_128bits_update(&t->h, t->map + k * ST__KEEP_EVERY, t->pos - k * ST__KEEP_EVERY);
	__atomic_add_fetch(&tap_skipped, k * ST__KEEP_EVERY, __ATOMIC_RELAXED);
	t->same = 0;
}

void st__taphash_update(st__taphash *t, const void *p, size_t n)
{
	if (!n)
		return;
	if (t->same) {
		uintptr_t a = (uintptr_t)p, m = (uintptr_t)t->map;
		/* the bytes at the same offset of the old file's mapping are its bytes; others
		 * (the writer's own: the envelope before the resources) are compared */
		if (n <= t->len - t->pos &&
		    ((a >= m && a - m == t->pos) || !memcmp(p, t->map + t->pos, n))) {
			t->pos += n;
			return;
		}
		taphash_resume(t);
	}
	XXH3_128bits_update(&t->h, p, n);
}

int st__taphash_final(st__taphash *t, char out[65], st_error *err)
{
	if (t->same)
		taphash_resume(t);
	xxh3_hex(XXH3_128bits_digest(&t->h), out);
	/* the mapping's bytes (streamed, skipped, hashed on resuming) are the bytes the kept
	 * states hashed only while no one wrote to the file since the ahead hash began */
	if (t->of && !st__prehash_still(t->of->prehash))
		return st__lazy_rewritten(t->of, err);
	return ST_OK;
}
