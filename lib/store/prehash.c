/*
 * A move's old objects hashed ahead (lib/internal.h, st__prehash_start): the two-stack journal
 * (journal.c) hashes each side's old object; a move whose states were loaded lazily from
 * their files starts those hashes on threads of their own while it works on one processor,
 * and the journal takes them when the old object is still the file hashed, unchanged.
 */
#include "store_impl.h"

#include <sodium.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void st__blake2b_mapped_hex(const char *map, size_t len, char out[65])
{
	const size_t slice = 8u << 20;
	crypto_generichash_state st;
	unsigned char h[32];

	crypto_generichash_init(&st, NULL, 0, sizeof(h));
	for (size_t off = 0; off < len; off += slice) {
		size_t n = len - off < slice ? len - off : slice;
		crypto_generichash_update(&st, (const unsigned char *)map + off, n);
		if (n == slice)
			(void)madvise((void *)(map + off), n, MADV_DONTNEED);
	}
	crypto_generichash_final(&st, h, sizeof(h));
	sodium_bin2hex(out, 65, h, sizeof(h));
}

struct st__prehash {
	int fd, ok;
	struct stat before;
	char hex[65];
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
	st__blake2b_mapped_hex(map ? map : "", len, p->hex);
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
