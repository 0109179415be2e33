/*
 * AWS Signature Version 4 (see sigv4.h for the canonical request's rules).
 */
#include "sigv4.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void st__sigv4_encode(st_buf *b, const char *s, size_t n, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~' || (c == '/' && keep_slash)) {
			st_buf_addc(b, (char)c);
		} else {
			char e[3] = {'%', hex[c >> 4], hex[c & 15]};
			st_buf_add(b, e, 3);
		}
	}
}

void st__sigv4_date(char out[17], long long unix_seconds)
{
	time_t t = (time_t)unix_seconds;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

void st__sha256_hex(char out[65], const void *data, size_t n)
{
	unsigned char d[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(d, data, n);
	st__hex(out, d, sizeof(d));
}

/* The canonical path: S3's is the path encoded once; the others' drop "." and ".." segments
 * and empty ones first (a trailing slash stays). */
static void canonical_path(st_buf *b, const char *path, int s3)
{
	if (s3 || !*path) {
		if (*path != '/')
			st_buf_addc(b, '/');
		st__sigv4_encode(b, path, strlen(path), 1);
		return;
	}
	size_t n = strlen(path), nseg = 0;
	const char **seg = calloc(n + 1, sizeof(*seg));
	size_t *len = calloc(n + 1, sizeof(*len));
	if (!seg || !len) {
		b->oom = 1;
		free(seg);
		free(len);
		return;
	}
	for (const char *p = path; *p;) {
		const char *e = p + strcspn(p, "/");
		size_t l = (size_t)(e - p);
		if (l == 2 && !memcmp(p, "..", 2)) {
			if (nseg)
				nseg--;
		} else if (l && !(l == 1 && *p == '.')) {
			seg[nseg] = p;
			len[nseg++] = l;
		}
		p = *e ? e + 1 : e;
	}
	for (size_t i = 0; i < nseg; i++) {
		st_buf_addc(b, '/');
		st__sigv4_encode(b, seg[i], len[i], 0);
	}
	if (!nseg || path[n - 1] == '/')
		st_buf_addc(b, '/');
	free(seg);
	free(len);
}

typedef struct kv {
	char *k;
	char *v;
	size_t order; /* the input's order, so that a sort keeps repeated headers in theirs */
} kv;

static int kv_cmp(const void *a, const void *b)
{
	const kv *x = a, *y = b;
	int c = strcmp(x->k, y->k);
	if (c)
		return c;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int kv_cmp_value(const void *a, const void *b)
{
	const kv *x = a, *y = b;
	int c = strcmp(x->k, y->k);
	return c ? c : strcmp(x->v, y->v);
}

static void kv_free(kv *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].k);
		free(v[i].v);
	}
	free(v);
}

static char *encoded(const char *s, int keep_slash)
{
	st_buf b;
	st_buf_init(&b);
	st__sigv4_encode(&b, s, strlen(s), keep_slash);
	return st_buf_take(&b, NULL);
}

/* A header's value as signed: trimmed, each run of blanks made one space. New. */
static char *header_value(const char *v)
{
	st_buf b;
	int blank = 0;
	st_buf_init(&b);
	while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r')
		v++;
	for (; *v; v++) {
		if (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r') {
			blank = 1;
			continue;
		}
		if (blank && b.len)
			st_buf_addc(&b, ' ');
		blank = 0;
		st_buf_addc(&b, *v);
	}
	return st_buf_take(&b, NULL);
}

/* The query part of the canonical request. */
static int canonical_query(st_buf *b, const st_sigv4 *in)
{
	kv *q = calloc(in->nquery + 1, sizeof(*q));
	if (!q)
		return -1;
	for (size_t i = 0; i < in->nquery; i++) {
		q[i].k = encoded(in->query[i].name, 0);
		q[i].v = encoded(in->query[i].value ? in->query[i].value : "", 0);
		if (!q[i].k || !q[i].v) {
			kv_free(q, in->nquery);
			return -1;
		}
	}
	qsort(q, in->nquery, sizeof(*q), kv_cmp_value);
	for (size_t i = 0; i < in->nquery; i++)
		st_buf_printf(b, "%s%s=%s", i ? "&" : "", q[i].k, q[i].v);
	kv_free(q, in->nquery);
	return 0;
}

/* The headers part and the signed header names (into `names`). */
static int canonical_headers(st_buf *b, st_buf *names, const st_sigv4 *in)
{
	kv *h = calloc(in->nheaders + 1, sizeof(*h));
	if (!h)
		return -1;
	for (size_t i = 0; i < in->nheaders; i++) {
		h[i].k = st_strdup(in->headers[i].name);
		h[i].v = header_value(in->headers[i].value ? in->headers[i].value : "");
		h[i].order = i;
		if (!h[i].k || !h[i].v) {
			kv_free(h, in->nheaders);
			return -1;
		}
		for (char *c = h[i].k; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
	}
	qsort(h, in->nheaders, sizeof(*h), kv_cmp);
	for (size_t i = 0; i < in->nheaders; i++) {
		int first = !i || strcmp(h[i].k, h[i - 1].k);
		int last = i + 1 == in->nheaders || strcmp(h[i].k, h[i + 1].k);
		if (first) {
			st_buf_printf(b, "%s:", h[i].k);
			st_buf_printf(names, "%s%s", names->len ? ";" : "", h[i].k);
		}
		st_buf_printf(b, "%s%s", first ? "" : ",", h[i].v);
		if (last)
			st_buf_addc(b, '\n');
	}
	kv_free(h, in->nheaders);
	return 0;
}

static void hmac(unsigned char out[32], const void *key, size_t keylen, const char *msg)
{
	crypto_auth_hmacsha256_state st;
	crypto_auth_hmacsha256_init(&st, key, keylen);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)msg, strlen(msg));
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

/* The signature (hex) of `sts` with the key derived from the secret, the date, region and
 * service. */
static int signature(char out[65], const st_sigv4 *in, const char *date8, const char *sts)
{
	unsigned char k[32], sig[32];
	size_t sl = strlen(in->secret_key);
	char *first = malloc(sl + 5);
	if (!first)
		return -1;
	memcpy(first, "AWS4", 4);
	memcpy(first + 4, in->secret_key, sl + 1);
	hmac(k, first, sl + 4, date8);
	sodium_memzero(first, sl + 4);
	free(first);
	hmac(k, k, sizeof(k), in->region);
	hmac(k, k, sizeof(k), in->service);
	hmac(k, k, sizeof(k), "aws4_request");
	hmac(sig, k, sizeof(k), sts);
	sodium_memzero(k, sizeof(k));
	st__hex(out, sig, sizeof(sig));
	return 0;
}

int st__sigv4_sign(const st_sigv4 *in, char **authz, char **creq_out, char **sts_out,
		   st_error *err)
{
	st_buf creq, names, sts;
	char date8[9], hash[65], sig[65];
	char *c = NULL, *s = NULL;
	int rc = ST_OK;

	*authz = NULL;
	if (creq_out)
		*creq_out = NULL;
	if (sts_out)
		*sts_out = NULL;
	if (strlen(in->amz_date) != 16)
		return st__err(err, ST_EINVAL, "sigv4: bad date '%s'", in->amz_date);
	if (sodium_init() < 0)
		return st__err(err, ST_EIO, "sigv4: libsodium cannot be initialised");
	memcpy(date8, in->amz_date, 8);
	date8[8] = '\0';
	st_buf_init(&creq);
	st_buf_init(&names);
	st_buf_init(&sts);
	st_buf_printf(&creq, "%s\n", in->method);
	canonical_path(&creq, in->path, in->s3);
	st_buf_addc(&creq, '\n');
	if (canonical_query(&creq, in) < 0)
		creq.oom = 1;
	st_buf_addc(&creq, '\n');
	if (canonical_headers(&creq, &names, in) < 0)
		creq.oom = 1;
	st_buf_printf(&creq, "\n%s\n%s", names.data ? names.data : "", in->payload_hash);
	if (creq.oom || names.oom) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	st__sha256_hex(hash, creq.data, creq.len);
	st_buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", in->amz_date, date8,
		      in->region, in->service, hash);
	if (sts.oom || signature(sig, in, date8, sts.data) < 0) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	*authz = st_asprintf("AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, "
			     "SignedHeaders=%s, Signature=%s",
			     in->access_key, date8, in->region, in->service, names.data, sig);
	c = st_buf_take(&creq, NULL);
	s = st_buf_take(&sts, NULL);
	if (!*authz || !c || !s) {
		free(*authz);
		*authz = NULL;
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if (creq_out) {
		*creq_out = c;
		c = NULL;
	}
	if (sts_out) {
		*sts_out = s;
		s = NULL;
	}
out:
	free(c);
	free(s);
	st_buf_free(&creq);
	st_buf_free(&names);
	st_buf_free(&sts);
	return rc;
}
