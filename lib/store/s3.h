/*
 * The S3 store (private to lib/store): s3://BUCKET[/PREFIX][?PARAMS]. s3conf.c turns the URL, the
 * environment and the shared AWS files into a configuration; s3.c is the store over the HTTP
 * layer and SigV4. See doc/DESIGN.md, "The S3 store", and the man page.
 */
#ifndef ST_S3_H
#define ST_S3_H

#include "store_impl.h"

/* Reads a variable of the environment (getenv, or a table in the tests). */
typedef const char *(*st_env_fn)(const char *name);

typedef struct st_s3_config {
	char *bucket;
	char *prefix;          /* "" or "a/b/": every key of the store is under it */
	char *endpoint;        /* scheme://host[:port][/path], no trailing '/' */
	int custom_endpoint;   /* the endpoint came from the URL, the environment or a profile */
	char *endpoint_from;   /* which of them, for messages (NULL: AWS's own endpoint) */
	int path_style;        /* https://host/bucket/key, else https://bucket.host/key */
	char *region;
	char *region_from;     /* where the region came from, for messages */
	char *profile;         /* the profile read (NULL: none) */
	int anonymous;         /* no credentials: requests are not signed */
	char *access_key;      /* the credentials (secret_key and session_token in memory that is
				* wiped when freed) */
	char *secret_key;
	char *session_token;
	char *cred_from;       /* where the credentials came from, for messages (never them) */
	char *sse;             /* x-amz-server-side-encryption for writes, or NULL */
	char *kms_key_id;
} st_s3_config;

/* Reads the configuration of `url`: the URL's parameters first, then the environment (through
 * `env`, NULL: getenv) and the shared credentials and config files. c is filled (free it with
 * st__s3_config_free, also after an error). ST_EINVAL for a bad URL or parameter,
 * ST_EUNSUPPORTED for what statetool does not do (a role to assume, SSO...), ST_EAUTH when no
 * credentials are found, with a message naming what was read. */
int st__s3_config_load(st_s3_config *c, const char *url, st_env_fn env, st_error *err);
void st__s3_config_free(st_s3_config *c);

/* Opens the S3 store of `url`. */
int st__store_s3_open(st_store **out, const char *url, st_error *err);

/* Creates the store's bucket (CreateBucket; one that is there already and ours is no error).
 * For the tests: statetool itself never creates buckets, as Pulumi does not. */
int st__s3_create_bucket(st_store *s, st_error *err);

/* Keys per ListObjectsV2 page (1000; the tests set it low to exercise continuations). */
extern int st__s3_max_keys;

#endif
