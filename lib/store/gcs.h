/*
 * The Google Cloud Storage store, gs://BUCKET[/PREFIX][?PARAMS] (private to lib/store; the store
 * itself is reached through st_store_open). Split in two files:
 *   gcs_auth.c  what the URL and the environment say (endpoint, credentials), read as Pulumi's
 *               DIY backend reads them (pkg/authhelpers/gcpauth.go, gocloud.dev's gcsblob,
 *               golang.org/x/oauth2/google); the RS256-signed JWT of a service account and the
 *               token exchanges (service account, authorized user);
 *   gcs.c       the store over the JSON API (storage/v1): objects.get (alt=media and metadata),
 *               objects.insert (uploadType=media), objects.list, objects.delete, objects.rewrite.
 * See doc/DESIGN.md, "The Google Cloud Storage store".
 */
#ifndef ST_GCS_H
#define ST_GCS_H

#include "http.h"

/* The scopes Pulumi asks for: GOOGLE_CREDENTIALS with storage.ScopeReadWrite, Application
 * Default Credentials with gocloud's cloud-platform. */
#define ST_GCS_SCOPE_RW "https://www.googleapis.com/auth/devstorage.read_write"
#define ST_GCS_SCOPE_CLOUD "https://www.googleapis.com/auth/cloud-platform"
/* Where a key file without token_uri exchanges its JWT (oauth2/google's JWTTokenURL) and an
 * authorized user its refresh token (google.Endpoint.TokenURL). */
#define ST_GCS_TOKEN_URI "https://oauth2.googleapis.com/token"
#define ST_GCS_API "https://storage.googleapis.com/storage/v1"

/* How requests are authorized. */
typedef enum st_gcs_auth {
	ST_GCS_ANONYMOUS = 0,   /* no Authorization header (anonymous=true, access_id=-, the
				 * emulator of STORAGE_EMULATOR_HOST) */
	ST_GCS_TOKEN = 1,       /* a bearer token used as it is (GOOGLE_OAUTH_ACCESS_TOKEN) */
	ST_GCS_SERVICE_ACCOUNT = 2, /* a JWT signed with the key, exchanged at token_uri */
	ST_GCS_AUTHORIZED_USER = 3  /* a refresh token exchanged at token_uri */
} st_gcs_auth;

/* What a gs:// URL and the environment say. Secrets (token, private_key, client_secret,
 * refresh_token) are wiped when freed and never appear in a message. */
typedef struct st_gcs_cfg {
	char *bucket;       /* the URL's host */
	char *prefix;       /* the URL's path without its leading '/'s, ending in '/' (or "") */
	char *api;          /* the JSON API: scheme://host[:port]/storage/v1, no trailing '/' */
	char *upload;       /* its uploads: scheme://host[:port]/upload/storage/v1 */
	st_gcs_auth auth;
	char *token;        /* ST_GCS_TOKEN */
	char *client_email; /* ST_GCS_SERVICE_ACCOUNT: iss */
	char *key_id;       /* its private_key_id (the JWT's kid), may be NULL */
	char *private_key;  /* its PEM key */
	char *client_id;    /* ST_GCS_AUTHORIZED_USER */
	char *client_secret;
	char *refresh_token;
	char *token_uri;    /* where tokens come from (both kinds above) */
	const char *scope;  /* the scope asked for (a constant) */
	/* for messages: where the endpoint and the credentials came from (names of variables and
	 * files, an account's e-mail; never a secret) */
	char *note;
} st_gcs_cfg;

/* Reads an environment variable (NULL or "" when unset). */
typedef const char *(*st_gcs_env_fn)(void *ctx, const char *name);

/*
 * Parses `url` (gs://...) with the environment `env` (NULL: getenv), in the order Pulumi reads
 * them:
 *   - parameters access_id, private_key_path, anonymous, universe_domain (gcsblob's URLOpener;
 *     any other is refused); anonymous=true or access_id=- send no credentials; the others only
 *     matter to signed URLs (private_key_path must be readable, as gocloud reads it);
 *   - the endpoint: STORAGE_EMULATOR_HOST (HOST:PORT: http://HOST:PORT/storage/v1 and no
 *     credentials, as gocloud does), else GOOGLE_BACKEND_STORAGE_CUSTOM_ENDPOINT or
 *     GOOGLE_STORAGE_CUSTOM_ENDPOINT (Terraform's gcs backend reads them; Pulumi does not: the
 *     JSON API's base URL, credentials as usual), else https://storage.googleapis.com/storage/v1;
 *   - credentials: GOOGLE_CREDENTIALS (the JSON of a key file), GOOGLE_OAUTH_ACCESS_TOKEN,
 *     GOOGLE_APPLICATION_CREDENTIALS (a key file's path), $HOME/.config/gcloud/
 *     application_default_credentials.json; a key file is a service account ("type":
 *     "service_account") or an authorized user (gcloud auth application-default login); other
 *     kinds and the metadata server of Compute Engine are ST_EUNSUPPORTED.
 * cfg is filled (free it with st__gcs_cfg_free, also after an error). ST_EINVAL for a bad URL or
 * parameter or an unreadable key file, ST_EUNSUPPORTED without usable credentials.
 */
int st__gcs_config(st_gcs_cfg *cfg, const char *url, st_gcs_env_fn env, void *env_ctx,
		   st_error *err);
void st__gcs_cfg_free(st_gcs_cfg *cfg);

/*
 * The signed JWT a service account exchanges for a token (golang.org/x/oauth2/jwt, jws):
 *   base64url({"alg":"RS256","typ":"JWT"[,"kid":KID]}) "."
 *   base64url({"iss":EMAIL,"scope":SCOPE,"aud":AUD,"exp":NOW+3600,"iat":NOW}) "."
 *   base64url(RSASSA-PKCS1-v1_5 SHA-256 signature of the two parts joined by ".")
 * with NOW the time given (oauth2 takes ten seconds off the clock; the caller does). `pem` is a
 * PKCS#8 or PKCS#1 RSA private key. *out is new. ST_EINVAL when the key is not one (`what` names
 * where it came from in the message).
 */
int st__gcs_jwt(char **out, const char *email, const char *kid, const char *scope,
		const char *aud, long long now, const char *pem, const char *what, st_error *err);

/* Asks cfg->token_uri for an access token (a JWT bearer grant for a service account, a refresh
 * grant for an authorized user) through `h`: *token (new; the caller wipes it) and *expires
 * (seconds since the epoch; 0: none given). ST_EAUTH when the endpoint refuses, with its error
 * and description. */
int st__gcs_fetch_token(st_http *h, const st_gcs_cfg *cfg, char **token, long long *expires,
			st_error *err);

/* Keys as gocloud.dev's gcsblob stores them: '\n', '\r', the '/' of "../" and any text that
 * would read as an escape become "__0xHEX__" (st__azblob_unescape_key reverses it). New; NULL
 * when out of memory. */
char *st__gcs_escape_key(const char *key);

/* The store (gcs.c); `url` is the one given (st_store_url). */
int st__store_gcs_open(st_store **out, const char *url, st_error *err);

/* For the tests, process-wide: objects per listing page (0: the default, 1000). */
void st__gcs_test_page(int page);

#endif
