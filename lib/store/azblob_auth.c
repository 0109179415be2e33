/*
 * azblob://: what the URL and the environment say, and the Shared Key signature (see azblob.h).
 *
 * Pulumi opens an azblob:// backend with gocloud.dev/blob/azureblob's URLOpener, built from
 * NewDefaultServiceURLOptions (the environment) and NewDefaultClient (the credentials); this file
 * reads the same things in the same order, so a URL and an environment that work with Pulumi
 * work here, and one it refuses is refused. What it cannot do: Microsoft Entra ID credentials
 * (azidentity's DefaultAzureCredential, gocloud's last resort) are refused with a message.
 */
#include "azblob.h"
#include "xml.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- small string helpers ---- */

static const char *def_env(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* Percent-decodes s[0..n) ('+' is a space when `plus`) into *out (new). 0, -1 for a bad escape,
 * -2 when out of memory. */
static int url_decode(const char *s, size_t n, int plus, char **out)
{
	char *d = malloc(n + 1), *o = d;
	*out = NULL;
	if (!d)
		return -2;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			if (i + 2 >= n || hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0) {
				free(d);
				return -1;
			}
			*o++ = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else {
			*o++ = plus && s[i] == '+' ? ' ' : s[i];
		}
	}
	*o = '\0';
	*out = d;
	return 0;
}

void st__azblob_url_encode(st_buf *b, const char *s, size_t n, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
			st_buf_addc(b, (char)c);
		} else {
			char e[3] = {'%', hex[c >> 4], hex[c & 15]};
			st_buf_add(b, e, 3);
		}
	}
}

/* Go's strconv.ParseBool. */
static int go_bool(const char *s, int *out)
{
	static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
	for (size_t i = 0; i < 6; i++) {
		if (!strcmp(s, t[i])) {
			*out = 1;
			return 0;
		}
		if (!strcmp(s, f[i])) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

static const char *env_get(st_azblob_env_fn env, void *ctx, const char *name)
{
	const char *v = env(ctx, name);
	return v && *v ? v : NULL;
}

/* ---- the URL ---- */

#define NPARAMS 5
static const char *const param_names[NPARAMS] = {"storage_account", "domain", "protocol", "cdn",
						 "localemu"};

typedef struct url_parts {
	char *values[NPARAMS]; /* decoded; NULL when not given */
} url_parts;

static void parts_free(url_parts *u)
{
	for (int i = 0; i < NPARAMS; i++)
		free(u->values[i]);
}

/* One "name=value" of the query. */
static int query_param(url_parts *u, const char *s, size_t n, st_error *err)
{
	const char *eq = memchr(s, '=', n);
	size_t kn = eq ? (size_t)(eq - s) : n;
	char *k = NULL, *v = NULL;
	int rc = url_decode(s, kn, 1, &k);
	if (rc == 0)
		rc = eq ? url_decode(eq + 1, n - kn - 1, 1, &v) : ((v = st_strdup("")) ? 0 : -2);
	if (rc == -2) {
		free(k);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	if (rc == -1) {
		free(k);
		return st__err(err, ST_EINVAL, "azblob: invalid URL escape in the query '%.*s'",
			       (int)n, s);
	}
	for (int i = 0; i < NPARAMS; i++) {
		if (strcmp(k, param_names[i]))
			continue;
		if (u->values[i]) {
			rc = st__err(err, ST_EINVAL, "azblob: multiple values of %s not allowed", k);
			goto out;
		}
		u->values[i] = v;
		v = NULL;
		rc = ST_OK;
		goto out;
	}
	rc = st__err(err, ST_EINVAL,
		     "azblob: unknown query parameter \"%s\" (azblob:// takes storage_account, "
		     "domain, protocol, cdn and localemu)",
		     k);
out:
	free(k);
	free(v);
	return rc;
}

/* azblob://CONTAINER[/PATH][?QUERY][#FRAGMENT] */
static int parse_url(st_azblob_cfg *cfg, url_parts *u, const char *url, st_error *err)
{
	st__url_parts pt;
	char *decoded = NULL;
	int rc;

	st__url_split(url + strlen("azblob://"), &pt);
	if (!pt.hn)
		return st__err(err, ST_EINVAL,
			       "azblob: '%s' names no container (azblob://CONTAINER[/PREFIX])", url);
	if (memchr(pt.host, '@', pt.hn) || memchr(pt.host, '%', pt.hn))
		return st__err(err, ST_EINVAL, "azblob: '%.*s' is not a container name",
			       (int)pt.hn, pt.host);
	if (!(cfg->container = st_strndup(pt.host, pt.hn)))
		return st__err(err, ST_ENOMEM, "out of memory");
	rc = url_decode(pt.path, pt.pn, 0, &decoded);
	if (rc == -2)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (rc == -1)
		return st__err(err, ST_EINVAL, "azblob: invalid URL escape in the path of '%s'", url);
	cfg->prefix = st__url_prefix(decoded);
	free(decoded);
	if (!cfg->prefix)
		return st__err(err, ST_ENOMEM, "out of memory");
	for (const char *s = pt.query, *end = s ? s + pt.qn : s; s && s < end;) {
		size_t n = strcspn(s, "&#");
		if (s + n > end)
			n = (size_t)(end - s);
		if (n && (rc = query_param(u, s, n, err)) != ST_OK)
			return rc;
		s += n + 1;
	}
	return ST_OK;
}

/* ---- connection strings ---- */

typedef struct conn {
	char *copy; /* the string, cut into the pieces below (wiped when freed) */
	const char *protocol, *suffix, *endpoint, *account, *key, *sas;
} conn;

static void conn_free(conn *c)
{
	if (c->copy) {
		sodium_memzero(c->copy, strlen(c->copy));
		free(c->copy);
	}
	memset(c, 0, sizeof(*c));
}

/* NewDefaultServiceURLOptions's reading: a part "k=v" with exactly one '=' gives the account
 * (AccountName) and the protocol (DefaultEndpointsProtocol) where they are still empty. */
static void conn_defaults(const char *cs, const char **account, size_t *alen,
			  const char **protocol, size_t *plen)
{
	const char *s = cs;
	for (;;) {
		size_t n = strcspn(s, ";");
		const char *eq = memchr(s, '=', n);
		if (eq && !memchr(eq + 1, '=', (size_t)(s + n - eq - 1))) {
			size_t kn = (size_t)(eq - s);
			if (!*alen && kn == 11 && !memcmp(s, "AccountName", 11)) {
				*account = eq + 1;
				*alen = (size_t)(s + n - eq - 1);
			} else if (!*plen && kn == 24 && !memcmp(s, "DefaultEndpointsProtocol", 24)) {
				*protocol = eq + 1;
				*plen = (size_t)(s + n - eq - 1);
			}
		}
		if (!s[n])
			break;
		s += n + 1;
	}
}

/* The Azure SDK's ParseConnectionString: trailing ';'s dropped, every part "key=value" (else
 * the string is malformed), a later key replacing an earlier one. The messages never hold the
 * string (it holds the key). */
static int conn_parse(conn *c, const char *cs, const char *var, st_error *err)
{
	static const char *const names[] = {"DefaultEndpointsProtocol", "EndpointSuffix",
					    "BlobEndpoint", "AccountName", "AccountKey",
					    "SharedAccessSignature"};
	const char **slots[] = {&c->protocol, &c->suffix, &c->endpoint, &c->account, &c->key,
				&c->sas};
	size_t n = strlen(cs);

	while (n && cs[n - 1] == ';')
		n--;
	if (!(c->copy = st_strndup(cs, n)))
		return st__err(err, ST_ENOMEM, "out of memory");
	for (char *s = c->copy;;) {
		char *semi = strchr(s, ';'), *eq;
		if (semi)
			*semi = '\0';
		if (!(eq = strchr(s, '=')))
			return st__err(err, ST_EINVAL,
				       "azblob: %s is either blank or malformed: it should hold "
				       "key=value pairs separated by semicolons, e.g. "
				       "'DefaultEndpointsProtocol=https;AccountName=NAME;"
				       "AccountKey=KEY;EndpointSuffix=core.windows.net'",
				       var);
		*eq = '\0';
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(s, names[i]))
				*slots[i] = eq + 1;
		if (!semi)
			break;
		s = semi + 1;
	}
	if (!c->endpoint && !c->account)
		return st__err(err, ST_EINVAL,
			       "azblob: %s needs either AccountName or BlobEndpoint", var);
	if (!(c->account && c->key) && !c->sas)
		return st__err(err, ST_EINVAL,
			       "azblob: %s needs either AccountKey or SharedAccessSignature", var);
	return ST_OK;
}

/* ---- the configuration ---- */

void st__azblob_cfg_free(st_azblob_cfg *cfg)
{
	if (!cfg)
		return;
	free(cfg->container);
	free(cfg->prefix);
	free(cfg->service);
	free(cfg->account);
	if (cfg->key)
		sodium_free(cfg->key);
	if (cfg->sas) {
		sodium_memzero(cfg->sas, strlen(cfg->sas));
		free(cfg->sas);
	}
	free(cfg->note);
	memset(cfg, 0, sizeof(*cfg));
}

/* Decodes a base64 account key into sodium-guarded memory. */
static int set_key(st_azblob_cfg *cfg, const char *b64, size_t n, const char *what,
		   st_error *err)
{
	size_t max = n / 4 * 3 + 3, len = 0;
	if (!(cfg->key = sodium_malloc(max ? max : 1)))
		return st__err(err, ST_ENOMEM, "out of memory");
	/* new lines ignored, as Go's base64 decoder ignores them */
	if (sodium_base642bin(cfg->key, max, b64, n, "\r\n", &len, NULL,
			      sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    len == 0)
		return st__err(err, ST_EINVAL, "azblob: %s is not a base64 account key", what);
	cfg->key_len = len;
	return ST_OK;
}

static int set_sas(st_azblob_cfg *cfg, const char *sas)
{
	while (*sas == '?') /* as the portal shows it; gocloud would send "??" */
		sas++;
	return (cfg->sas = st_strdup(sas)) ? ST_OK : ST_ENOMEM;
}

/* What the environment and the URL say about the service (NewDefaultServiceURLOptions,
 * withOverrides): the settings as borrowed strings, `from` the names that were read. */
typedef struct svc_opts {
	const char *account, *domain, *protocol;
	size_t alen, plen; /* the account and protocol may be a piece of the connection string */
	int cdn, emu;
	st_buf from;
} svc_opts;

static void from_add(svc_opts *o, const char *name)
{
	st_buf_printf(&o->from, "%s%s", o->from.len ? ", " : "", name);
}

static int service_opts(svc_opts *o, const url_parts *u, st_azblob_env_fn env, void *ctx,
			const char *cs, st_error *err)
{
	static const char *const vars[] = {"AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_DOMAIN",
					   "AZURE_STORAGE_PROTOCOL", "AZURE_STORAGE_IS_CDN",
					   "AZURE_STORAGE_IS_LOCAL_EMULATOR"};
	const char *v;

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (env_get(env, ctx, vars[i]))
			from_add(o, vars[i]);
	if ((v = env_get(env, ctx, "AZURE_STORAGE_IS_CDN")) && go_bool(v, &o->cdn) < 0)
		o->cdn = 0; /* gocloud ignores a value it cannot parse */
	if ((v = env_get(env, ctx, "AZURE_STORAGE_IS_LOCAL_EMULATOR")) && go_bool(v, &o->emu) < 0)
		o->emu = 0;
	if ((o->account = env_get(env, ctx, "AZURE_STORAGE_ACCOUNT")))
		o->alen = strlen(o->account);
	if ((o->protocol = env_get(env, ctx, "AZURE_STORAGE_PROTOCOL")))
		o->plen = strlen(o->protocol);
	if (cs) {
		size_t al = o->alen, pl = o->plen;
		conn_defaults(cs, &o->account, &o->alen, &o->protocol, &o->plen);
		if (al != o->alen || pl != o->plen)
			from_add(o, "the connection string");
	}
	o->domain = env_get(env, ctx, "AZURE_STORAGE_DOMAIN");
	for (int i = 0; i < NPARAMS; i++) {
		const char *pv = u->values[i];
		if (!pv)
			continue;
		st_buf_printf(&o->from, "%sparameter %s", o->from.len ? ", " : "", param_names[i]);
		if (i == 0) {
			o->account = pv;
			o->alen = strlen(pv);
		} else if (i == 1) {
			o->domain = pv;
		} else if (i == 2) {
			o->protocol = pv;
			o->plen = strlen(pv);
		} else if (go_bool(pv, i == 3 ? &o->cdn : &o->emu) < 0) {
			return st__err(err, ST_EINVAL,
				       "azblob: invalid value \"%s\" for parameter %s: a boolean "
				       "(true, false, 1, 0, t, f) is expected",
				       pv, param_names[i]);
		}
	}
	return o->from.oom ? st__err(err, ST_ENOMEM, "out of memory") : ST_OK;
}

/* NewServiceURL: the service URL from the options. */
static int service_url(st_azblob_cfg *cfg, const svc_opts *o, st_error *err)
{
	const char *domain = o->domain && *o->domain ? o->domain : "blob.core.windows.net";
	const char *proto = o->plen ? o->protocol : "https";
	int plen = o->plen ? (int)o->plen : 5;

	if (!o->alen)
		return st__err(err, ST_EINVAL,
			       "azblob: no storage account: set AZURE_STORAGE_ACCOUNT or the "
			       "storage_account parameter (azblob://CONTAINER?storage_account=NAME)");
	if (!((plen == 4 && !strncmp(proto, "http", 4)) ||
	      (plen == 5 && !strncmp(proto, "https", 5))))
		return st__err(err, ST_EINVAL, "azblob: invalid protocol \"%.*s\" (http or https)",
			       plen, proto);
	if (!strncmp(domain, "127.0.0.1", 9) || !strncmp(domain, "localhost", 9) || o->emu)
		cfg->service = st_asprintf("%.*s://%s/%.*s", plen, proto, domain, (int)o->alen,
					   o->account);
	else if (o->cdn)
		cfg->service = st_asprintf("%.*s://%s", plen, proto, domain);
	else
		cfg->service = st_asprintf("%.*s://%.*s.%s", plen, proto, (int)o->alen, o->account,
					   domain);
	return cfg->service ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}

/* The connection string's endpoint and credentials (NewClientFromConnectionString). */
static int from_connection_string(st_azblob_cfg *cfg, const char *cs, const char *var,
				  st_error *err)
{
	conn c = {0};
	int rc = conn_parse(&c, cs, var, err);
	char *svc = NULL;

	if (rc != ST_OK)
		goto out;
	if (c.endpoint)
		svc = st_strdup(c.endpoint);
	else
		svc = st_asprintf("%s://%s.blob.%s", c.protocol ? c.protocol : "https", c.account,
				  c.suffix ? c.suffix : "core.windows.net");
	if (!svc) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	size_t n = strlen(svc);
	while (n && svc[n - 1] == '/')
		svc[--n] = '\0';
	if ((strncmp(svc, "http://", 7) && strncmp(svc, "https://", 8)) || strchr(svc, '?')) {
		rc = st__err(err, ST_EINVAL,
			     "azblob: the blob endpoint in %s is not an http:// or https:// URL "
			     "without a query",
			     var);
		goto out;
	}
	free(cfg->service);
	cfg->service = svc;
	svc = NULL;
	if (c.account && c.key) {
		cfg->auth = ST_AZBLOB_SHARED_KEY;
		if (!(cfg->account = st_strdup(c.account)))
			rc = st__err(err, ST_ENOMEM, "out of memory");
		else
			rc = set_key(cfg, c.key, strlen(c.key), "the AccountKey in the connection string",
				     err);
		if (rc == ST_OK)
			cfg->note = st_asprintf("credentials: Shared Key of account '%s' from %s "
						"(AccountName, AccountKey), service %s from %s",
						cfg->account, var, cfg->service, var);
	} else {
		cfg->auth = ST_AZBLOB_SAS;
		if (set_sas(cfg, c.sas) != ST_OK)
			rc = st__err(err, ST_ENOMEM, "out of memory");
		else
			cfg->note = st_asprintf("credentials: the SAS token in %s "
						"(SharedAccessSignature), service %s from %s",
						var, cfg->service, var);
	}
	if (rc == ST_OK && !cfg->note)
		rc = st__err(err, ST_ENOMEM, "out of memory");
out:
	free(svc);
	conn_free(&c);
	return rc;
}

int st__azblob_config(st_azblob_cfg *cfg, const char *url, st_azblob_env_fn env, void *env_ctx,
		      st_error *err)
{
	url_parts u;
	svc_opts o;
	const char *cs_var = "AZURE_STORAGE_CONNECTION_STRING", *cs, *acct, *key, *sas;
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	memset(&u, 0, sizeof(u));
	memset(&o, 0, sizeof(o));
	st_buf_init(&o.from);
	if (sodium_init() < 0)
		return st__err(err, ST_EIO, "azblob: cannot initialise libsodium");
	if (!env)
		env = def_env;
	if ((rc = parse_url(cfg, &u, url, err)) != ST_OK)
		goto out;
	if (!(cs = env_get(env, env_ctx, cs_var)) &&
	    (cs = env_get(env, env_ctx, "AZURE_STORAGEBLOB_CONNECTIONSTRING")))
		cs_var = "AZURE_STORAGEBLOB_CONNECTIONSTRING";
	if ((rc = service_opts(&o, &u, env, env_ctx, cs, err)) != ST_OK ||
	    (rc = service_url(cfg, &o, err)) != ST_OK)
		goto out;
	/* the credentials, in newCredInfoFromEnv's order; the account of a Shared Key is the
	 * variable's, whatever the URL says */
	acct = env_get(env, env_ctx, "AZURE_STORAGE_ACCOUNT");
	key = env_get(env, env_ctx, "AZURE_STORAGE_KEY");
	sas = env_get(env, env_ctx, "AZURE_STORAGE_SAS_TOKEN");
	if (acct && key) {
		cfg->auth = ST_AZBLOB_SHARED_KEY;
		if (!(cfg->account = st_strdup(acct)) || (sas && set_sas(cfg, sas) != ST_OK)) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto out;
		}
		if ((rc = set_key(cfg, key, strlen(key), "AZURE_STORAGE_KEY", err)) != ST_OK)
			goto out;
		cfg->note = st_asprintf("credentials: Shared Key of account '%s' from "
					"AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY%s, service %s "
					"from %s",
					acct, sas ? " (and AZURE_STORAGE_SAS_TOKEN)" : "",
					cfg->service, o.from.data);
	} else if (sas) {
		cfg->auth = ST_AZBLOB_SAS;
		if (set_sas(cfg, sas) != ST_OK) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto out;
		}
		cfg->note = st_asprintf("credentials: the SAS token in AZURE_STORAGE_SAS_TOKEN, "
					"service %s from %s",
					cfg->service, o.from.data);
	} else if (cs) {
		rc = from_connection_string(cfg, cs, cs_var, err);
		goto out;
	} else {
		rc = st__err(err, ST_EUNSUPPORTED,
			     "azblob: no credentials: set AZURE_STORAGE_ACCOUNT and "
			     "AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN or "
			     "AZURE_STORAGE_CONNECTION_STRING (Microsoft Entra ID credentials, which "
			     "Pulumi tries last, are not supported)");
		goto out;
	}
	if (!cfg->note)
		rc = st__err(err, ST_ENOMEM, "out of memory");
out:
	parts_free(&u);
	st_buf_free(&o.from);
	return rc;
}

/* ---- keys as gocloud stores them ---- */

/* Whether "__0x<hex>__" starts at s[i] (HexUnescape's reading: hex digits, an optional sign,
 * a value that fits in 32 bits); its value and the index of its last character. */
static int escape_at(const char *s, size_t n, size_t i, long *val, size_t *last)
{
	if (n - i < 8 || memcmp(s + i, "__0x", 4))
		return 0;
	size_t j = i + 4, start;
	int neg = 0;
	if (j < n && (s[j] == '+' || s[j] == '-'))
		neg = s[j++] == '-';
	start = j;
	long long v = 0;
	for (; j < n && s[j] != '_'; j++) {
		int d = hexval(s[j]);
		if (d < 0)
			return 0;
		if (v <= 0x80000000LL)
			v = v * 16 + d;
	}
	/* ParseInt(digits, 16, 32): -2^31 .. 2^31-1 */
	if (j == start || j + 1 >= n || s[j + 1] != '_' || v > 0x7fffffffLL + neg)
		return 0;
	*val = (long)(neg ? -v : v);
	*last = j + 1;
	return 1;
}

int st__gocloud_escape_at(const char *s, size_t n, size_t i)
{
	long v;
	size_t last;
	return escape_at(s, n, i, &v, &last);
}

/* Appends code point cp as UTF-8 (Go's string(rune): U+FFFD for one that is no character). */
static void put_rune(st_buf *b, long cp)
{
	unsigned char u[4];
	if (cp < 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		cp = 0xfffd;
	if (cp < 0x80) {
		st_buf_addc(b, (char)cp);
		return;
	}
	size_t n = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
	for (size_t k = n - 1; k > 0; k--) {
		u[k] = (unsigned char)(0x80 | (cp & 0x3f));
		cp >>= 6;
	}
	u[0] = (unsigned char)((n == 2 ? 0xc0 : n == 3 ? 0xe0 : 0xf0) | cp);
	st_buf_add(b, u, n);
}

char *st__azblob_escape_key(const char *key, int is_prefix)
{
	size_t n = strlen(key);
	st_buf b;
	long v;
	size_t last;

	st_buf_init(&b);
	st_buf_add(&b, "", 0);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)key[i];
		int esc = c < 32 || c == '"' || c == '#' || c == '%' || c == '?' || c == '\\' ||
			  c == 127 || (!is_prefix && i == n - 1 && c == '/') ||
			  (i > 1 && c == '/' && key[i - 1] == '.' && key[i - 2] == '.') ||
			  escape_at(key, n, i, &v, &last);
		if (esc)
			st_buf_printf(&b, "__%#x__", c);
		else
			st_buf_addc(&b, (char)c);
	}
	return st_buf_take(&b, NULL);
}

char *st__azblob_unescape_key(const char *name)
{
	size_t n = strlen(name), last;
	long v;
	st_buf b;

	st_buf_init(&b);
	st_buf_add(&b, "", 0);
	for (size_t i = 0; i < n; i++) {
		if (escape_at(name, n, i, &v, &last)) {
			put_rune(&b, v);
			i = last;
		} else {
			st_buf_addc(&b, name[i]);
		}
	}
	return st_buf_take(&b, NULL);
}

/* ---- Shared Key ---- */

typedef struct qparam {
	char *name, *value;
} qparam;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_qparam(const void *a, const void *b)
{
	const qparam *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->value, y->value);
}

/* The canonicalized resource's query part: "\nname:v1,v2" per name, sorted. -1 when out of
 * memory or the query has a bad escape. */
static int canon_query(st_buf *b, const char *query)
{
	qparam *v = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	for (const char *s = query; s && *s;) {
		size_t len = strcspn(s, "&");
		if (len) {
			const char *eq = memchr(s, '=', len);
			size_t kn = eq ? (size_t)(eq - s) : len;
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 8;
				qparam *nv = realloc(v, nc * sizeof(*v));
				if (!nv) {
					rc = -1;
					break;
				}
				v = nv;
				cap = nc;
			}
			v[n].name = v[n].value = NULL;
			if (url_decode(s, kn, 1, &v[n].name) < 0 ||
			    (eq ? url_decode(eq + 1, len - kn - 1, 1, &v[n].value) < 0
				: !(v[n].value = st_strdup("")))) {
				free(v[n].name);
				free(v[n].value);
				rc = -1;
				break;
			}
			for (char *c = v[n].name; *c; c++)
				if (*c >= 'A' && *c <= 'Z')
					*c = (char)(*c - 'A' + 'a');
			n++;
		}
		s += len;
		if (*s)
			s++;
	}
	if (rc == 0) {
		if (n > 1)
			qsort(v, n, sizeof(*v), cmp_qparam);
		for (size_t i = 0; i < n; i++) {
			if (i && !strcmp(v[i].name, v[i - 1].name))
				st_buf_printf(b, ",%s", v[i].value);
			else
				st_buf_printf(b, "\n%s:%s", v[i].name, v[i].value);
		}
	}
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].value);
	}
	free(v);
	return rc;
}

/* A header's value as the string to sign wants it: trimmed, runs of white space made one. */
static void add_value(st_buf *b, const char *v)
{
	int space = 0;
	while (*v == ' ' || *v == '\t' || *v == '\r' || *v == '\n')
		v++;
	for (; *v; v++) {
		if (*v == ' ' || *v == '\t' || *v == '\r' || *v == '\n') {
			space = 1;
			continue;
		}
		if (space)
			st_buf_addc(b, ' ');
		space = 0;
		st_buf_addc(b, *v);
	}
}

static const char *header(const st_azblob_sign_in *in, const char *name)
{
	for (size_t i = 0; i < in->nheaders; i++)
		if (!strcasecmp(in->headers[i].name, name))
			return in->headers[i].value;
	return NULL;
}

static int string_to_sign(const st_azblob_sign_in *in, st_buf *b)
{
	static const char *const std[] = {"Content-Encoding", "Content-Language", NULL,
					  "Content-MD5",      "Content-Type",     "Date",
					  "If-Modified-Since", "If-Match",        "If-None-Match",
					  "If-Unmodified-Since", "Range"};
	char **names = NULL;
	size_t n = 0;

	st_buf_printf(b, "%s\n", in->method);
	for (size_t i = 0; i < sizeof(std) / sizeof(std[0]); i++) {
		const char *v = std[i] ? header(in, std[i]) : NULL;
		if (!std[i] && in->content_length > 0)
			st_buf_printf(b, "%lld", in->content_length);
		/* Date is left empty: every request carries x-ms-date */
		if (v && i != 5)
			add_value(b, v);
		st_buf_addc(b, '\n');
	}
	if (in->nheaders && !(names = calloc(in->nheaders, sizeof(*names))))
		return -1;
	for (size_t i = 0; i < in->nheaders; i++) {
		if (strncasecmp(in->headers[i].name, "x-ms-", 5))
			continue;
		char *l = st_strdup(in->headers[i].name);
		if (!l)
			goto oom;
		for (char *c = l; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		names[n++] = l;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		st_buf_printf(b, "%s:", names[i]);
		add_value(b, header(in, names[i]));
		st_buf_addc(b, '\n');
	}
	st_buf_printf(b, "/%s%s", in->account, in->path && *in->path ? in->path : "/");
	if (canon_query(b, in->query) < 0)
		goto oom;
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return b->oom ? -1 : 0;
oom:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return -1;
}

int st__azblob_sign(const st_azblob_sign_in *in, char **authz, char **sts, st_error *err)
{
	unsigned char mac[crypto_auth_hmacsha256_BYTES];
	char b64[sodium_base64_ENCODED_LEN(crypto_auth_hmacsha256_BYTES,
					   sodium_base64_VARIANT_ORIGINAL)];
	crypto_auth_hmacsha256_state st;
	st_buf b;

	*authz = NULL;
	if (sts)
		*sts = NULL;
	st_buf_init(&b);
	if (string_to_sign(in, &b) < 0) {
		st_buf_free(&b);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	crypto_auth_hmacsha256_init(&st, in->key, in->key_len);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)b.data, b.len);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
	sodium_bin2base64(b64, sizeof(b64), mac, sizeof(mac), sodium_base64_VARIANT_ORIGINAL);
	if (!(*authz = st_asprintf("SharedKey %s:%s", in->account, b64))) {
		st_buf_free(&b);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	if (sts && !(*sts = st_buf_take(&b, NULL))) {
		free(*authz);
		*authz = NULL;
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	st_buf_free(&b);
	return ST_OK;
}
