/*
 * The Azure Blob Storage store, azblob://CONTAINER[/PREFIX][?PARAMS] (private to lib/store; the
 * store itself is reached through st_store_open). Split in two files:
 *   azblob_auth.c  what the URL and the environment say (endpoint, credentials), read as
 *                  gocloud.dev's azureblob driver reads them for Pulumi, and the Shared Key
 *                  signature;
 *   azblob.c       the store: Get Blob, Put Blob / Put Block / Put Block List, List Blobs,
 *                  Delete Blob, Copy Blob, Get Blob Properties.
 * See doc/DESIGN.md, "The Azure Blob store".
 */
#ifndef ST_AZBLOB_H
#define ST_AZBLOB_H

#include "http.h"

/* The service version every request asks for (x-ms-version). Put Blob takes up to 5000 MiB and
 * Put Block up to 4000 MiB from 2019-12-12 on. */
#define ST_AZBLOB_VERSION "2021-08-06"

/* How a store authenticates. */
typedef enum st_azblob_auth {
	ST_AZBLOB_SHARED_KEY = 1, /* Authorization: SharedKey ACCOUNT:SIGNATURE */
	ST_AZBLOB_SAS = 2         /* a SAS token in every URL's query */
} st_azblob_auth;

/* What an azblob:// URL and the environment say. */
typedef struct st_azblob_cfg {
	char *container;   /* the URL's host */
	char *prefix;      /* the URL's path without its leading '/'s, ending in '/' (or "") */
	char *service;     /* scheme://host[:port][/path], no trailing '/', no query */
	st_azblob_auth auth;
	char *account;     /* Shared Key: the account the signature names */
	unsigned char *key; /* Shared Key: the decoded account key (sodium_malloc'ed) */
	size_t key_len;
	char *sas;         /* SAS: the token, without a leading '?' */
	/* for messages: where the endpoint and the credentials came from, naming the variables
	 * read and never a value that is secret */
	char *note;
} st_azblob_cfg;

/* Reads an environment variable (NULL or "" when unset). */
typedef const char *(*st_azblob_env_fn)(void *ctx, const char *name);

/*
 * Parses `url` (azblob://...) with the environment `env` (NULL: getenv), as Pulumi opens it
 * (gocloud.dev/blob/azureblob with NewDefaultServiceURLOptions and NewDefaultClient):
 *   - parameters storage_account, domain, protocol, cdn, localemu (any other is refused, as is a
 *     parameter given twice); each overrides the variable below;
 *   - AZURE_STORAGE_ACCOUNT (else the connection string's AccountName), AZURE_STORAGE_DOMAIN
 *     (default blob.core.windows.net), AZURE_STORAGE_PROTOCOL (else the connection string's
 *     DefaultEndpointsProtocol; default https), AZURE_STORAGE_IS_CDN,
 *     AZURE_STORAGE_IS_LOCAL_EMULATOR;
 *   - the service URL PROTOCOL://ACCOUNT.DOMAIN, PROTOCOL://DOMAIN/ACCOUNT when the domain
 *     starts with "127.0.0.1" or "localhost" or localemu is set (the emulator's path form),
 *     PROTOCOL://DOMAIN with cdn;
 *   - credentials, the first that applies: AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY (Shared
 *     Key), AZURE_STORAGE_SAS_TOKEN (appended to every URL), AZURE_STORAGE_CONNECTION_STRING
 *     (or AZURE_STORAGEBLOB_CONNECTIONSTRING): its BlobEndpoint (else
 *     DefaultEndpointsProtocol://AccountName.blob.EndpointSuffix) replaces the service URL, and
 *     AccountName with AccountKey (Shared Key) or SharedAccessSignature authenticate.
 * Microsoft Entra ID credentials (gocloud's last resort) are not supported: ST_EUNSUPPORTED.
 * cfg is filled (free it with st__azblob_cfg_free, also after an error).
 */
int st__azblob_config(st_azblob_cfg *cfg, const char *url, st_azblob_env_fn env, void *env_ctx,
		      st_error *err);
void st__azblob_cfg_free(st_azblob_cfg *cfg);

/* What a Shared Key signature covers. */
typedef struct st_azblob_sign_in {
	const char *method;
	const char *account;
	const char *path;   /* the request's path exactly as sent (percent-encoded), from '/' */
	const char *query;  /* the query as sent, without '?' (NULL or "": none) */
	const st_http_hdr *headers; /* every header sent (names in any case) */
	size_t nheaders;
	long long content_length; /* the body's length (0 or -1: none, an empty line) */
	const unsigned char *key;
	size_t key_len;
} st_azblob_sign_in;

/*
 * The Shared Key signature (version 2009-09-19 and later, as Microsoft's "Authorize with Shared
 * Key" describes it): *authz (new) is "SharedKey ACCOUNT:BASE64(HMAC-SHA256(key, string to
 * sign))"; *sts (new, may be NULL) the string to sign:
 *   VERB \n Content-Encoding \n Content-Language \n Content-Length (empty when 0) \n
 *   Content-MD5 \n Content-Type \n Date \n If-Modified-Since \n If-Match \n If-None-Match \n
 *   If-Unmodified-Since \n Range \n
 *   the x-ms-* headers, names lowercase, sorted, "name:value\n" each (values trimmed, runs of
 *     white space made one) +
 *   /ACCOUNT + the path + for each query parameter, sorted by (lowercase) name,
 *     "\nname:value[,value...]" (values decoded and sorted).
 */
int st__azblob_sign(const st_azblob_sign_in *in, char **authz, char **sts, st_error *err);

/* Keys as gocloud.dev's azureblob driver stores them: '"', '#', '%', '?', control characters,
 * '\\', DEL, a trailing '/' (of a whole key, not a prefix), the '/' of "../", and any text that
 * would read as an escape, become "__0xHEX__". New; NULL when out of memory. */
char *st__azblob_escape_key(const char *key, int is_prefix);
/* The reverse (a listing's names). New; NULL when out of memory. */
char *st__azblob_unescape_key(const char *name);
/* A listed name as Azure or GCS gives it (borrowed), unescaped, into l (st__listing_add_name
 * under `prefix`). ST_OK or ST_ENOMEM. */
struct st__listing;
int st__azblob_add_listed(struct st__listing *l, const char *prefix, const char *raw, int dir,
			  const st_store_info *info);

/* 1 when the text at s[i] (of n bytes) would read as an escape "__0xHEX__" (gocloud's
 * HexUnescape), which gocloud escapes wherever it stands; shared with gcs.c. */
int st__gocloud_escape_at(const char *s, size_t n, size_t i);

/* Appends s[0..n) percent-encoded for a URL's path (A-Z a-z 0-9 - . _ ~ kept, and '/' when
 * `keep_slash`). */
void st__azblob_url_encode(st_buf *b, const char *s, size_t n, int keep_slash);

/* The store (azblob.c); `url` is the one given (st_store_url). */
int st__store_azblob_open(st_store **out, const char *url, st_error *err);

/* For the tests, process-wide: a write of more than `single_max` bytes goes up in blocks of
 * `block_size`, and a listing asks for `page` names at a time (0: the defaults, 256 MiB,
 * 64 MiB and 5000). */
void st__azblob_test_sizes(size_t single_max, size_t block_size, int page);

/* For the tests: creates the store's container (ST_OK also when it exists) or deletes it with
 * everything in it. */
int st__azblob_container_create(st_store *s, st_error *err);
int st__azblob_container_delete(st_store *s, st_error *err);

#endif
