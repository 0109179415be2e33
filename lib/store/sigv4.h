/*
 * AWS Signature Version 4 (private to lib/store): the canonical request, the string to sign and
 * the Authorization header, with libsodium's SHA-256 and HMAC-SHA256. Written here rather than
 * taken from libcurl (CURLOPT_AWS_SIGV4), whose Debian 12 version signs query strings wrongly.
 * Tested against AWS's published test suite and the S3 examples (tests/test_sigv4.c,
 * fixtures/sigv4/).
 *
 * The canonical request, exactly:
 *   METHOD \n
 *   the path, each segment URI-encoded once ("/" kept; with `s3` nothing else is done to it, as
 *     S3 wants; otherwise "." and ".." segments and repeated slashes are removed first, as the
 *     other services want) \n
 *   the query: every name and value URI-encoded, sorted by name then value, "n=v" joined by "&" \n
 *   each header "name:value\n": names lowercase, sorted; values trimmed, runs of spaces made one,
 *     the values of a repeated name joined by "," in their order \n
 *   the signed header names joined by ";" \n
 *   the payload's SHA-256 in lowercase hex (or "UNSIGNED-PAYLOAD")
 * URI encoding keeps A-Z a-z 0-9 - . _ ~ and writes every other byte as %XX (uppercase hex).
 */
#ifndef ST_SIGV4_H
#define ST_SIGV4_H

#include "http.h"

typedef struct st_sigv4 {
	const char *method;
	const char *path;          /* decoded (as the key is), starting with "/" */
	int s3;                    /* S3's rules: the path is not normalized */
	const st_http_hdr *query;  /* decoded names and values */
	size_t nquery;
	const st_http_hdr *headers; /* every header to sign (host and x-amz-date among them) */
	size_t nheaders;
	const char *payload_hash;  /* lowercase hex SHA-256 of the body, or "UNSIGNED-PAYLOAD" */
	const char *amz_date;      /* "YYYYMMDDTHHMMSSZ", as in the x-amz-date header */
	const char *region;
	const char *service;       /* "s3" */
	const char *access_key;
	const char *secret_key;
} st_sigv4;

/* The Authorization header's value (*authz new): "AWS4-HMAC-SHA256 Credential=KEY/DATE/REGION/
 * SERVICE/aws4_request, SignedHeaders=..., Signature=...". `creq` and `sts` (may be NULL) get the
 * canonical request and the string to sign (new), for the tests. */
int st__sigv4_sign(const st_sigv4 *in, char **authz, char **creq, char **sts, st_error *err);

/* Appends s[0..n) URI-encoded as SigV4 wants (keeping '/' when `keep_slash`). */
void st__sigv4_encode(st_buf *b, const char *s, size_t n, int keep_slash);

/* "YYYYMMDDTHHMMSSZ" of a time (UTC). */
void st__sigv4_date(char out[17], long long unix_seconds);

/* The lowercase hex SHA-256 of data[0..n). */
void st__sha256_hex(char out[65], const void *data, size_t n);

#endif
