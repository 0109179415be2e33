/*
 * gs://: what the URL and the environment say, the service account's JWT and the token
 * exchanges (see gcs.h).
 *
 * Pulumi opens a gs:// backend with its own credentials (pkg/authhelpers/gcpauth.go:
 * GOOGLE_CREDENTIALS, then GOOGLE_OAUTH_ACCESS_TOKEN, then golang.org/x/oauth2/google's
 * FindDefaultCredentials: GOOGLE_APPLICATION_CREDENTIALS, then gcloud's well-known file) handed to
 * gocloud.dev's gcsblob URLOpener (parameters access_id, private_key_path, anonymous,
 * universe_domain; STORAGE_EMULATOR_HOST: plain http, no credentials). This file reads the same
 * things in the same order. What it does not do: the metadata server of Compute Engine,
 * workload identity federation (external_account), impersonation and OAuth client secrets are
 * refused with a message saying what to use instead.
 */
#include "gcs.h"

#include "azblob.h"
#include "xml.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_KEY_FILE (1 << 20)

static const char *def_env(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

static const char *env_get(st_gcs_env_fn env, void *ctx, const char *name)
{
	const char *v = env(ctx, name);
	return v && *v ? v : NULL;
}

/* Frees a string that held a secret, wiping it first. */
static void free_secret(char *s)
{
	if (s) {
		sodium_memzero(s, strlen(s));
		free(s);
	}
}

void st__gcs_cfg_free(st_gcs_cfg *cfg)
{
	if (!cfg)
		return;
	free(cfg->bucket);
	free(cfg->prefix);
	free(cfg->api);
	free(cfg->upload);
	free_secret(cfg->token);
	free(cfg->client_email);
	free(cfg->key_id);
	free_secret(cfg->private_key);
	free(cfg->client_id);
	free_secret(cfg->client_secret);
	free_secret(cfg->refresh_token);
	free(cfg->token_uri);
	free(cfg->note);
	memset(cfg, 0, sizeof(*cfg));
}

/* Go's strconv.ParseBool. */
static int go_bool(const char *s, int *out)
{
	static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
	for (size_t i = 0; i < 6; i++) {
		if (!strcmp(s, t[i]) || !strcmp(s, f[i])) {
			*out = !strcmp(s, t[i]);
			return 0;
		}
	}
	return -1;
}

/* ---- the URL ---- */

enum { P_ACCESS_ID, P_KEY_PATH, P_ANONYMOUS, P_UNIVERSE, NPARAMS };
static const char *const param_names[NPARAMS] = {"access_id", "private_key_path", "anonymous",
						 "universe_domain"};

typedef struct url_params {
	char *v[NPARAMS]; /* decoded, the first value of each (url.Values.Get); NULL: not given */
} url_params;

static int hexdig(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Whether s[0..n) has only well-formed %XX escapes (Go's url.Parse refuses the rest). */
static int escapes_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '%' && (i + 2 >= n || !hexdig(s[i + 1]) || !hexdig(s[i + 2])))
			return 0;
	return 1;
}

static int parse_query(url_params *u, const char *q, size_t qn, st_error *err)
{
	for (const char *s = q, *end = q + qn; s < end;) {
		size_t n = strcspn(s, "&");
		if (s + n > end)
			n = (size_t)(end - s);
		const char *eq = memchr(s, '=', n);
		size_t kn = eq ? (size_t)(eq - s) : n;
		if (!n) {
			s++;
			continue;
		}
		if (!escapes_ok(s, n))
			return st__err(err, ST_EINVAL, "gs: invalid URL escape in the query '%.*s'",
				       (int)n, s);
		char *k = st__url_decode(s, kn, 1);
		char *v = eq ? st__url_decode(eq + 1, n - kn - 1, 1) : st_strdup("");
		int i, rc = ST_OK;
		if (!k || !v) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
		} else {
			for (i = 0; i < NPARAMS && strcmp(k, param_names[i]); i++)
				;
			if (i == NPARAMS)
				rc = st__err(err, ST_EINVAL,
					     "gs: invalid query parameter \"%s\" (gs:// takes "
					     "access_id, private_key_path, anonymous and "
					     "universe_domain)",
					     k);
			else if (!u->v[i]) {
				u->v[i] = v;
				v = NULL;
			}
		}
		free(k);
		free(v);
		if (rc != ST_OK)
			return rc;
		s += n + 1;
	}
	return ST_OK;
}

/* gs://BUCKET[/PATH][?QUERY][#FRAGMENT] */
static int parse_url(st_gcs_cfg *cfg, url_params *u, const char *url, st_error *err)
{
	st__url_parts pt;

	st__url_split(url + strlen("gs://"), &pt);
	if (!pt.hn)
		return st__err(err, ST_EINVAL, "gs: '%s' names no bucket (gs://BUCKET[/PREFIX])",
			       url);
	for (size_t i = 0; i < pt.hn; i++) {
		char c = pt.host[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		      c == '.'))
			return st__err(err, ST_EINVAL,
				       "gs: '%.*s' is not a bucket name (lowercase letters, digits, "
				       "'-', '_' and '.')",
				       (int)pt.hn, pt.host);
	}
	if (!escapes_ok(pt.path, pt.pn))
		return st__err(err, ST_EINVAL, "gs: invalid URL escape in the path of '%s'", url);
	char *decoded = st__url_decode(pt.path, pt.pn, 0);
	if (!decoded || !(cfg->bucket = st_strndup(pt.host, pt.hn))) {
		free(decoded);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	cfg->prefix = st__url_prefix(decoded);
	free(decoded);
	if (!cfg->prefix)
		return st__err(err, ST_ENOMEM, "out of memory");
	return pt.query ? parse_query(u, pt.query, pt.qn, err) : ST_OK;
}

/* ---- the endpoint ---- */

/* The JSON API's base and its uploads' from `base` (scheme://host[:port][/path], trailing '/'s
 * dropped): uploads go to scheme://host[:port]/upload/storage/v1, as the Go client resolves
 * "/upload/storage/v1/b/{bucket}/o" against the base. */
static int set_endpoint(st_gcs_cfg *cfg, const char *base, size_t n, const char *var,
			st_error *err)
{
	while (n && base[n - 1] == '/')
		n--;
	if ((strncmp(base, "http://", 7) && strncmp(base, "https://", 8)) ||
	    memchr(base, '?', n) || memchr(base, '#', n) || memchr(base, '@', n))
		return st__err(err, ST_EINVAL,
			       "gs: %s is not an http:// or https:// URL without a query (e.g. "
			       "https://storage-xyz.p.googleapis.com/storage/v1/)",
			       var);
	const char *host = strstr(base, "://") + 3;
	size_t origin = (size_t)(host - base) + strcspn(host, "/");
	if (origin > n)
		origin = n;
	if (host == base + origin)
		return st__err(err, ST_EINVAL, "gs: %s names no host", var);
	cfg->api = st_strndup(base, n);
	cfg->upload = st_asprintf("%.*s/upload/storage/v1", (int)origin, base);
	return cfg->api && cfg->upload ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}

/* ---- credentials ---- */

/* A string member of a JSON object, borrowed; NULL when absent, not a string or empty. */
static const char *jstr(const json_t *o, const char *name)
{
	const char *s = json_string_value(json_object_get(o, name));
	return s && *s ? s : NULL;
}

/* A secret string copied (NULL stays NULL). -1 when out of memory. */
static int dup_opt(char **dst, const char *src)
{
	*dst = NULL;
	return src && !(*dst = st_strdup(src)) ? -1 : 0;
}

/*
 * CredentialsFromJSON: the JSON of a key file (`what` says where it came from, for messages),
 * with the scope Pulumi asks for that source. Fills the credentials and *who (new: "service
 * account 'EMAIL'" or "authorized user (client 'ID')").
 */
static int from_json(st_gcs_cfg *cfg, const char *text, size_t len, const char *what,
		     const char *scope, char **who, st_error *err)
{
	json_error_t je;
	json_t *j = json_loadb(text, len, 0, &je);
	const char *type;
	int rc = ST_OK;

	*who = NULL;
	if (!j) /* jansson's text may quote the secret's bytes ("near '<token>'", a control
		 * character, a \\u escape): only the place is told */
		return st__err(err, ST_EINVAL,
			       "gs: unable to parse credentials from %s: not JSON (at line %d, "
			       "column %d)",
			       what, je.line, je.column);
	if (!json_is_object(j)) {
		json_decref(j);
		return st__err(err, ST_EINVAL,
			       "gs: unable to parse credentials from %s: not a JSON object", what);
	}
	type = jstr(j, "type");
	if (json_object_get(j, "installed") || json_object_get(j, "web")) {
		rc = st__err(err, ST_EUNSUPPORTED,
			     "gs: %s holds an OAuth client (\"installed\" or \"web\"), which needs a "
			     "browser: use a service account key or 'gcloud auth application-default "
			     "login'",
			     what);
	} else if (type && !strcmp(type, "service_account")) {
		const char *email = jstr(j, "client_email"), *key = jstr(j, "private_key");
		if (!email || !key) {
			rc = st__err(err, ST_EINVAL,
				     "gs: the service account key in %s has no %s", what,
				     !email ? "client_email" : "private_key");
		} else if (dup_opt(&cfg->client_email, email) || dup_opt(&cfg->private_key, key) ||
			   dup_opt(&cfg->key_id, jstr(j, "private_key_id")) ||
			   dup_opt(&cfg->token_uri, jstr(j, "token_uri")) ||
			   !(*who = st_asprintf("service account '%s'", email))) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
		} else {
			cfg->auth = ST_GCS_SERVICE_ACCOUNT;
		}
	} else if (type && !strcmp(type, "authorized_user")) {
		const char *id = jstr(j, "client_id"), *secret = jstr(j, "client_secret");
		const char *refresh = jstr(j, "refresh_token");
		if (!id || !secret || !refresh) {
			rc = st__err(err, ST_EINVAL, "gs: the authorized user credentials in %s have no %s",
				     what, !id ? "client_id" : !secret ? "client_secret" : "refresh_token");
		} else if (dup_opt(&cfg->client_id, id) || dup_opt(&cfg->client_secret, secret) ||
			   dup_opt(&cfg->refresh_token, refresh) ||
			   dup_opt(&cfg->token_uri, jstr(j, "token_uri")) ||
			   !(*who = st_asprintf("authorized user (client '%s')", id))) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
		} else {
			cfg->auth = ST_GCS_AUTHORIZED_USER;
		}
	} else if (!type) {
		rc = st__err(err, ST_EINVAL, "gs: missing 'type' field in credentials (%s)", what);
	} else if (!strcmp(type, "external_account") || !strcmp(type, "impersonated_service_account") ||
		   !strcmp(type, "external_account_authorized_user") ||
		   !strcmp(type, "gdch_service_account")) {
		rc = st__err(err, ST_EUNSUPPORTED,
			     "gs: credentials of type \"%s\" (%s) are not supported: use a service "
			     "account key, 'gcloud auth application-default login', or "
			     "GOOGLE_OAUTH_ACCESS_TOKEN=$(gcloud auth print-access-token)",
			     type, what);
	} else {
		rc = st__err(err, ST_EINVAL, "gs: unknown credential type: \"%.40s\" (%s)", type, what);
	}
	if (rc == ST_OK && !cfg->token_uri && !(cfg->token_uri = st_strdup(ST_GCS_TOKEN_URI)))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK && strncmp(cfg->token_uri, "https://", 8) &&
	    strncmp(cfg->token_uri, "http://", 7))
		rc = st__err(err, ST_EINVAL, "gs: the token_uri in %s is not an http(s) URL", what);
	cfg->scope = scope;
	/* jansson's copy of the key is freed unwiped: wipe what we can see of it */
	const char *k = jstr(j, "private_key");
	if (k)
		sodium_memzero((char *)k, strlen(k));
	json_decref(j);
	if (rc != ST_OK) {
		free(*who);
		*who = NULL;
	}
	return rc;
}

/* Reads a key file (at most 1 MiB) into *out (new; wipe it). 1 when it does not exist and
 * `missing_ok`. */
static int read_key_file(const char *path, int missing_ok, const char *what, char **out,
			 size_t *len, st_error *err)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	*out = NULL;
	if (!f) {
		if (missing_ok && (errno == ENOENT || errno == ENOTDIR))
			return 1;
		return st__err(err, ST_EINVAL, "gs: cannot read the credentials file '%s' %s: %s",
			       path, what, strerror(errno));
	}
	if (!(buf = malloc(MAX_KEY_FILE + 1))) {
		fclose(f);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	n = fread(buf, 1, MAX_KEY_FILE + 1, f);
	int bad = ferror(f);
	fclose(f);
	if (bad || n > MAX_KEY_FILE) {
		sodium_memzero(buf, n);
		free(buf);
		return st__err(err, ST_EINVAL, "gs: cannot read the credentials file '%s' %s: %s",
			       path, what, bad ? "read error" : "larger than 1 MiB");
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return ST_OK;
}

/* From a file: GOOGLE_APPLICATION_CREDENTIALS's, or gcloud's well-known one. */
static int from_file(st_gcs_cfg *cfg, const char *path, int missing_ok, const char *named_by,
		     char **who, char **from, st_error *err)
{
	char *text = NULL, *what = st_asprintf("%s", named_by);
	size_t len = 0;
	int rc = what ? read_key_file(path, missing_ok, what, &text, &len, err)
		      : st__err(err, ST_ENOMEM, "out of memory");
	free(what);
	if (rc != ST_OK)
		return rc;
	what = st_asprintf("the file '%s' %s", path, named_by);
	rc = what ? from_json(cfg, text, len, what, ST_GCS_SCOPE_CLOUD, who, err)
		  : st__err(err, ST_ENOMEM, "out of memory");
	sodium_memzero(text, len);
	free(text);
	if (rc == ST_OK)
		*from = what;
	else
		free(what);
	return rc;
}

/* The credentials, in Pulumi's order; *desc (new) says which, for the note. */
static int credentials(st_gcs_cfg *cfg, st_gcs_env_fn env, void *ctx, char **desc,
		       st_error *err)
{
	const char *creds = env_get(env, ctx, "GOOGLE_CREDENTIALS");
	const char *token = env_get(env, ctx, "GOOGLE_OAUTH_ACCESS_TOKEN");
	const char *file = env_get(env, ctx, "GOOGLE_APPLICATION_CREDENTIALS");
	const char *home = env_get(env, ctx, "HOME");
	char *who = NULL, *from = NULL, *wk = NULL;
	int rc;

	*desc = NULL;
	if (creds) {
		rc = from_json(cfg, creds, strlen(creds), "$GOOGLE_CREDENTIALS", ST_GCS_SCOPE_RW,
			       &who, err);
		if (rc == ST_OK && !(*desc = st_asprintf("%s from GOOGLE_CREDENTIALS, tokens from %s",
							  who, cfg->token_uri)))
			rc = st__err(err, ST_ENOMEM, "out of memory");
		free(who);
		return rc;
	}
	if (token) {
		cfg->auth = ST_GCS_TOKEN;
		if (!(cfg->token = st_strdup(token)) ||
		    !(*desc = st_strdup("the access token in GOOGLE_OAUTH_ACCESS_TOKEN "
					"(GOOGLE_CREDENTIALS unset)")))
			return st__err(err, ST_ENOMEM, "out of memory");
		return ST_OK;
	}
	if (file) {
		rc = from_file(cfg, file, 0, "named by GOOGLE_APPLICATION_CREDENTIALS", &who, &from,
			       err);
	} else {
		if (!home || !(wk = st_asprintf("%s/.config/gcloud/application_default_credentials.json",
						home)))
			rc = home ? st__err(err, ST_ENOMEM, "out of memory") : 1;
		else
			rc = from_file(cfg, wk, 1, "(gcloud's application default credentials)", &who,
				       &from, err);
	}
	if (rc == 1)
		rc = st__err(err, ST_EUNSUPPORTED,
			     "gs: no credentials: set GOOGLE_CREDENTIALS (a key file's JSON), "
			     "GOOGLE_OAUTH_ACCESS_TOKEN or GOOGLE_APPLICATION_CREDENTIALS (a key "
			     "file's path), or run 'gcloud auth application-default login' (read: "
			     "those three variables and %s; the metadata server of Compute Engine, "
			     "which Pulumi asks last, is not asked)",
			     wk ? wk : "no well-known file ($HOME unset)");
	else if (rc == ST_OK &&
		 !(*desc = st_asprintf("%s from %s, tokens from %s (GOOGLE_CREDENTIALS, "
				       "GOOGLE_OAUTH_ACCESS_TOKEN%s unset)",
				       who, from, cfg->token_uri,
				       file ? "" : ", GOOGLE_APPLICATION_CREDENTIALS")))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	free(who);
	free(from);
	free(wk);
	return rc;
}

int st__gcs_config(st_gcs_cfg *cfg, const char *url, st_gcs_env_fn env, void *env_ctx,
		   st_error *err)
{
	url_params u;
	const char *emu, *custom, *custom_var = "GOOGLE_BACKEND_STORAGE_CUSTOM_ENDPOINT";
	char *desc = NULL, *where = NULL;
	int rc, anon = 0;

	memset(cfg, 0, sizeof(*cfg));
	memset(&u, 0, sizeof(u));
	if (sodium_init() < 0)
		return st__err(err, ST_EIO, "gs: cannot initialise libsodium");
	if (!env)
		env = def_env;
	if ((rc = parse_url(cfg, &u, url, err)) != ST_OK)
		goto out;
	if (u.v[P_ANONYMOUS] && go_bool(u.v[P_ANONYMOUS], &anon) < 0) {
		rc = st__err(err, ST_EINVAL,
			     "gs: invalid value \"%s\" for query parameter \"anonymous\": a boolean "
			     "(true, false, 1, 0, t, f) is expected",
			     u.v[P_ANONYMOUS]);
		goto out;
	}
	if (u.v[P_ACCESS_ID] && !strcmp(u.v[P_ACCESS_ID], "-"))
		anon = 1;
	if (u.v[P_KEY_PATH] && *u.v[P_KEY_PATH]) {
		FILE *f = fopen(u.v[P_KEY_PATH], "rb"); /* gocloud reads it (for signed URLs only) */
		if (!f) {
			rc = st__err(err, ST_EINVAL, "gs: cannot read private_key_path '%s': %s",
				     u.v[P_KEY_PATH], strerror(errno));
			goto out;
		}
		fclose(f);
	}
	/* the endpoint */
	emu = env_get(env, env_ctx, "STORAGE_EMULATOR_HOST");
	if (!(custom = env_get(env, env_ctx, custom_var))) {
		custom_var = "GOOGLE_STORAGE_CUSTOM_ENDPOINT";
		custom = env_get(env, env_ctx, custom_var);
	}
	if (emu) {
		/* gocloud: http://HOST/storage/v1/ (a scheme given is kept, as Google's own client
		 * keeps it) */
		int has_scheme = strstr(emu, "://") != NULL;
		const char *host = has_scheme ? strstr(emu, "://") + 3 : emu;
		char *full = st_asprintf("%s%.*s/storage/v1", has_scheme ? "" : "http://",
					 (int)(host - emu + (long)strcspn(host, "/")), emu);
		rc = full ? set_endpoint(cfg, full, strlen(full), "STORAGE_EMULATOR_HOST", err)
			  : st__err(err, ST_ENOMEM, "out of memory");
		free(full);
		if (rc != ST_OK)
			goto out;
		cfg->auth = ST_GCS_ANONYMOUS;
		cfg->note = st_asprintf("no credentials: the emulator %s from STORAGE_EMULATOR_HOST",
					cfg->api);
		rc = cfg->note ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if (custom) {
		if ((rc = set_endpoint(cfg, custom, strlen(custom), custom_var, err)) != ST_OK)
			goto out;
		where = st_asprintf(", endpoint %s from %s", cfg->api, custom_var);
	} else {
		rc = set_endpoint(cfg, ST_GCS_API, strlen(ST_GCS_API), "the default", err);
		where = st_strdup("");
	}
	if (rc != ST_OK || !where) {
		rc = rc != ST_OK ? rc : st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if (anon) {
		cfg->auth = ST_GCS_ANONYMOUS;
		cfg->note = st_asprintf("no credentials (%s)%s",
					u.v[P_ACCESS_ID] && !strcmp(u.v[P_ACCESS_ID], "-")
						? "access_id=-"
						: "anonymous=true",
					where);
	} else {
		if ((rc = credentials(cfg, env, env_ctx, &desc, err)) != ST_OK)
			goto out;
		cfg->note = st_asprintf("credentials: %s%s", desc, where);
	}
	if (!cfg->note)
		rc = st__err(err, ST_ENOMEM, "out of memory");
out:
	for (int i = 0; i < NPARAMS; i++)
		free(u.v[i]);
	free(desc);
	free(where);
	return rc;
}

/* ---- the JWT ---- */

/* base64url without padding of p[0..n), appended. */
static void b64url(st_buf *b, const unsigned char *p, size_t n)
{
	size_t cap = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	char *s = malloc(cap);
	if (!s) {
		b->oom = 1;
		return;
	}
	sodium_bin2base64(s, cap, p, n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	st_buf_adds(b, s);
	free(s);
}

static int no_password(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1; /* an encrypted key is refused, never asked for on a terminal */
}

/* RSASSA-PKCS1-v1_5 with SHA-256 of msg[0..n) by the PEM key, appended in base64url. */
static int rs256(st_buf *b, const char *msg, size_t n, const char *pem, const char *what,
		 st_error *err)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, no_password, NULL) : NULL;
	EVP_MD_CTX *md = NULL;
	unsigned char *sig = NULL;
	size_t sl = 0;
	int rc = ST_OK;

	BIO_free(bio);
	if (!key) {
		rc = st__err(err, ST_EINVAL,
			     "gs: the private_key of %s is not a PEM private key (PKCS#8 or PKCS#1, "
			     "unencrypted)",
			     what);
	} else if (EVP_PKEY_get_base_id(key) != EVP_PKEY_RSA) {
		rc = st__err(err, ST_EINVAL, "gs: the private_key of %s is not an RSA key", what);
	} else if (!(md = EVP_MD_CTX_new()) ||
		   !(sig = malloc((size_t)EVP_PKEY_get_size(key) + 1))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
	} else {
		sl = (size_t)EVP_PKEY_get_size(key);
		if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
		    EVP_DigestSign(md, sig, &sl, (const unsigned char *)msg, n) != 1)
			rc = st__err(err, ST_EIO, "gs: signing with the private_key of %s failed",
				     what);
		else
			b64url(b, sig, sl);
	}
	ERR_clear_error();
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(key);
	free(sig);
	return rc;
}

int st__gcs_jwt(char **out, const char *email, const char *kid, const char *scope,
		const char *aud, long long now, const char *pem, const char *what, st_error *err)
{
	json_t *h = json_pack("{s:s,s:s}", "alg", "RS256", "typ", "JWT");
	json_t *c = json_pack("{s:s,s:s,s:s,s:I,s:I}", "iss", email, "scope", scope, "aud", aud,
			      "exp", (json_int_t)(now + 3600), "iat", (json_int_t)now);
	char *hs = NULL, *cs = NULL;
	st_buf b;
	int rc;

	*out = NULL;
	if (h && kid && *kid && json_object_set_new(h, "kid", json_string(kid)) < 0) {
		json_decref(h);
		h = NULL;
	}
	if (h && c) {
		hs = json_dumps(h, JSON_COMPACT);
		cs = json_dumps(c, JSON_COMPACT);
	}
	json_decref(h);
	json_decref(c);
	int ok = hs && cs;
	st_buf_init(&b);
	if (ok) {
		b64url(&b, (const unsigned char *)hs, strlen(hs));
		st_buf_addc(&b, '.');
		b64url(&b, (const unsigned char *)cs, strlen(cs));
	}
	free(hs);
	free(cs);
	if (!ok || b.oom) {
		st_buf_free(&b);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	size_t signed_len = b.len;
	st_buf_addc(&b, '.');
	if ((rc = rs256(&b, b.data, signed_len, pem, what, err)) != ST_OK) {
		st_buf_free(&b);
		return rc;
	}
	if (!(*out = st_buf_take(&b, NULL)))
		return st__err(err, ST_ENOMEM, "out of memory");
	return ST_OK;
}

/* ---- token exchanges ---- */

/* Appends "name=value" form-encoded (url.Values.Encode: QueryEscape, ' ' as '+'). */
static void form_add(st_buf *b, const char *name, const char *value)
{
	if (b->len)
		st_buf_addc(b, '&');
	st__azblob_url_encode(b, name, strlen(name), 0);
	st_buf_addc(b, '=');
	st__azblob_url_encode(b, value, strlen(value), 0);
}

/* "error: description" of a token endpoint's JSON error (printable ASCII, bounded), new. */
static char *token_error(const st_http_resp *resp)
{
	json_t *j = json_loadb(resp->body, resp->len, 0, NULL);
	const char *e = jstr(j, "error"), *d = jstr(j, "error_description");
	char *s;
	if (!e && json_is_object(json_object_get(j, "error"))) {
		/* {"error":{"code":..,"message":..,"status":..}} (Google's API error form) */
		e = jstr(json_object_get(j, "error"), "status");
		d = jstr(json_object_get(j, "error"), "message");
	}
	s = e ? st_asprintf("%.60s%s%.200s", e, d ? ": " : "", d ? d : "") : NULL;
	json_decref(j);
	for (char *c = s; c && *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
			*c = '?';
	return s;
}

int st__gcs_fetch_token(st_http *h, const st_gcs_cfg *cfg, char **token, long long *expires,
			st_error *err)
{
	st_http_req r = ST_HTTP_REQ_INIT;
	st_http_resp resp;
	char *jwt = NULL, *body = NULL;
	st_buf f;
	int rc = ST_OK;
	long long now = (long long)time(NULL);

	*token = NULL;
	*expires = 0;
	memset(&resp, 0, sizeof(resp));
	st_buf_init(&f);
	if (cfg->auth == ST_GCS_SERVICE_ACCOUNT) {
		char *what = st_asprintf("service account '%s'", cfg->client_email);
		/* oauth2's jws takes ten seconds off the clock (a server's time may lag) */
		rc = what ? st__gcs_jwt(&jwt, cfg->client_email, cfg->key_id, cfg->scope,
					cfg->token_uri, now - 10, cfg->private_key, what, err)
			  : st__err(err, ST_ENOMEM, "out of memory");
		free(what);
		if (rc == ST_OK) {
			form_add(&f, "assertion", jwt);
			form_add(&f, "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer");
		}
	} else {
		form_add(&f, "client_id", cfg->client_id);
		form_add(&f, "client_secret", cfg->client_secret);
		form_add(&f, "grant_type", "refresh_token");
		form_add(&f, "refresh_token", cfg->refresh_token);
	}
	if (rc == ST_OK && !(body = st_buf_take(&f, NULL)))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	r.method = "POST";
	r.url = cfg->token_uri;
	r.op = "token exchange";
	r.target = cfg->auth == ST_GCS_SERVICE_ACCOUNT ? cfg->client_email : cfg->client_id;
	r.body = body;
	r.body_len = body ? strlen(body) : 0;
	r.flags = ST_HTTP_RETRY;
	r.max_body = 1 << 20;
	if (rc == ST_OK)
		rc = st__http_hdrs_add(&r.headers, "Content-Type",
				       "application/x-www-form-urlencoded", err);
	if (rc == ST_OK)
		rc = st__http_do(h, &r, &resp, err);
	if (rc == ST_OK && (resp.status < 200 || resp.status > 299)) {
		char *detail = token_error(&resp);
		int code = resp.status == 400 || resp.status == 401 || resp.status == 403 ? ST_EAUTH
											   : 0;
		rc = st__http_fail(h, &r, &resp, code, detail, err);
		free(detail);
	} else if (rc == ST_OK) {
		json_t *j = json_loadb(resp.body, resp.len, 0, NULL);
		const char *t = jstr(j, "access_token");
		json_t *ex = json_object_get(j, "expires_in");
		if (!t)
			rc = st__err(err, ST_EIO, "gs: the token endpoint %s answered without an "
						  "access_token",
				     cfg->token_uri);
		else if (!(*token = st_strdup(t)))
			rc = st__err(err, ST_ENOMEM, "out of memory");
		else if (json_is_integer(ex) && json_integer_value(ex) > 0)
			*expires = now + (long long)json_integer_value(ex);
		else if (json_is_string(ex) && atoll(json_string_value(ex)) > 0)
			*expires = now + atoll(json_string_value(ex));
		if (t)
			sodium_memzero((char *)t, strlen(t));
		json_decref(j);
	}
	if (resp.body)
		sodium_memzero(resp.body, resp.len);
	st__http_resp_free(&resp);
	st__http_hdrs_free(&r.headers);
	free_secret(jwt);
	free_secret(body);
	st_buf_free(&f);
	return rc;
}

/* ---- keys ---- */

char *st__gcs_escape_key(const char *key)
{
	size_t n = strlen(key);
	st_buf b;

	st_buf_init(&b);
	st_buf_add(&b, "", 0);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)key[i];
		if (c == '\n' || c == '\r' ||
		    (i > 1 && c == '/' && key[i - 1] == '.' && key[i - 2] == '.') ||
		    st__gocloud_escape_at(key, n, i))
			st_buf_printf(&b, "__%#x__", c);
		else
			st_buf_addc(&b, (char)c);
	}
	return st_buf_take(&b, NULL);
}
