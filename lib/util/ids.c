/* Random hex, UUIDs, timestamps and SHA-256 digests (libsodium; OpenSSL's SHA-256 for large
 * inputs). */
#include "internal.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void st_random_hex(char *out, size_t nbytes)
{
	unsigned char b[64];
	if (sodium_init() < 0)
		abort();
	if (nbytes > sizeof(b))
		nbytes = sizeof(b);
	randombytes_buf(b, nbytes);
	for (size_t i = 0; i < nbytes; i++) {
		out[2 * i] = "0123456789abcdef"[b[i] >> 4];
		out[2 * i + 1] = "0123456789abcdef"[b[i] & 15];
	}
	out[2 * nbytes] = '\0';
}

void st_uuid4(char out[37])
{
	unsigned char b[16];
	if (sodium_init() < 0)
		abort();
	randombytes_buf(b, sizeof(b));
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
}

void st_now_rfc3339(char *out, size_t size)
{
	struct timespec ts;
	struct tm tm;
	char zone[32];
	long off;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	off = tm.tm_gmtoff;
	if (off == 0) {
		snprintf(zone, sizeof(zone), "Z");
	} else {
		long a = off < 0 ? -off : off;
		snprintf(zone, sizeof(zone), "%c%02ld:%02ld", off < 0 ? '-' : '+', a / 3600,
			 (a % 3600) / 60);
	}
	/* RFC3339Nano as Go writes it: trailing zeros of the fraction dropped. */
	char frac[16] = "";
	if (ts.tv_nsec) {
		snprintf(frac, sizeof(frac), ".%09ld", ts.tv_nsec);
		for (size_t l = strlen(frac); l > 1 && frac[l - 1] == '0'; l--)
			frac[l - 1] = '\0';
	}
	snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d%s%s", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac, zone);
}

/* OpenSSL's SHA-256, fetched once: it uses the CPU's SHA instructions where libsodium's is
 * portable C (~1 GB/s against ~0.12 GB/s here: an index's full build hashes every state). */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;
static void sha256_fetch(void) { sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL); }

void st_sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char h[crypto_hash_sha256_BYTES];
	unsigned int hl = 0;
	/* small inputs (URNs, versions) stay with libsodium: no context to allocate; and
	 * libsodium when OpenSSL fails (out of memory): the same digest either way */
	if (len >= 4096)
		pthread_once(&sha256_once, sha256_fetch);
	if (len < 4096 || !sha256_md || !EVP_Digest(data, len, h, &hl, sha256_md, NULL) ||
	    hl != sizeof(h))
		crypto_hash_sha256(h, data, len);
	for (size_t i = 0; i < sizeof(h); i++) {
		out[2 * i] = "0123456789abcdef"[h[i] >> 4];
		out[2 * i + 1] = "0123456789abcdef"[h[i] & 15];
	}
	out[64] = '\0';
}
