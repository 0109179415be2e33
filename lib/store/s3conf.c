/*
 * The configuration of an S3 store, read as Pulumi's DIY backend reads it (gocloud.dev's s3blob
 * over the AWS SDK for Go v2, with Pulumi's translation of the SDK v1 parameters):
 *
 *   URL     s3://BUCKET[/PREFIX][?region=&endpoint=&profile=&use_path_style=&s3ForcePathStyle=
 *           &disable_https=&disableSSL=&hostname_immutable=&anonymous=&dualstack=&fips=
 *           &accelerate=&ssetype=&kmskeyid=&awssdk=&request_checksum_calculation=
 *           &response_checksum_validation=&rate_limiter_capacity=]
 *   region  the URL's, AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`, else us-east-1
 *   endpoint the URL's, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's `endpoint_url`
 *           (the last three not with AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true), else AWS's
 *   profile the URL's, AWS_PROFILE, AWS_DEFAULT_PROFILE, else "default"; its sections are
 *           [NAME] in the credentials file (AWS_SHARED_CREDENTIALS_FILE, ~/.aws/credentials)
 *           and [profile NAME] ([default]) in the config file (AWS_CONFIG_FILE, ~/.aws/config);
 *           the credentials file wins where both say something
 *   keys    a profile named in the URL; else AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+
 *           AWS_SESSION_TOKEN) when both are set; else the profile's aws_access_key_id,
 *           aws_secret_access_key, aws_session_token (the SDK's order)
 * Not done (said so when a profile asks for it): roles to assume, SSO, credential_process,
 * web identity, instance and container credentials.
 */
#include "s3.h"

#include "xml.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* A copy of a secret in memory that is wiped when freed (sodium_free). */
static char *secret_dup(const char *s)
{
	size_t n = strlen(s);
	char *p;
	if (sodium_init() < 0 || !(p = sodium_malloc(n + 1)))
		return NULL;
	memcpy(p, s, n + 1);
	return p;
}

void st__s3_config_free(st_s3_config *c)
{
	if (!c)
		return;
	free(c->bucket);
	free(c->prefix);
	free(c->endpoint);
	free(c->endpoint_from);
	free(c->region);
	free(c->region_from);
	free(c->profile);
	free(c->access_key);
	if (c->secret_key)
		sodium_free(c->secret_key);
	if (c->session_token)
		sodium_free(c->session_token);
	free(c->cred_from);
	free(c->sse);
	free(c->kms_key_id);
	memset(c, 0, sizeof(*c));
}

/* Go's strconv.ParseBool. */
static int parse_bool(const char *v, int *out)
{
	static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
	for (size_t i = 0; i < 6; i++) {
		if (!strcmp(v, t[i])) {
			*out = 1;
			return 0;
		}
		if (!strcmp(v, f[i])) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

/* ---- the shared files ---- */

typedef struct profile {
	int found;
	char *access_key, *secret_key, *session_token, *region, *endpoint_url;
	const char *unsupported; /* a key asking for what statetool does not do */
	char *where;             /* the file that gave the keys */
} profile;

static void profile_free(profile *p)
{
	free(p->access_key);
	if (p->secret_key)
		sodium_free(p->secret_key);
	if (p->session_token)
		sodium_free(p->session_token);
	free(p->region);
	free(p->endpoint_url);
	free(p->where);
	memset(p, 0, sizeof(*p));
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

/* Sets *slot from a file's value when the slot is empty (the credentials file is read first, so
 * it wins). */
static int take(char **slot, const char *v, int secret)
{
	if (*slot || !*v)
		return 0;
	*slot = secret ? secret_dup(v) : st_strdup(v);
	return *slot ? 0 : -1;
}

/* Reads profile `name` from an INI file into p (keys not set yet). `config`: the config file's
 * section names ([profile NAME], [default]). *status: "" read, " (not found)", ... -1 when out of
 * memory. */
static int read_profile(profile *p, const char *path, const char *name, int config,
			const char **status)
{
	char *text = NULL, *line, *save = NULL;
	size_t len;
	int in = 0, rc = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*status = "";
	if (fd < 0) {
		*status = errno == ENOENT ? " (not found)" : " (unreadable)";
		return 0;
	}
	if (st__read_fd(fd, 1 << 20, &text, &len, path, NULL) != ST_OK) {
		close(fd);
		*status = " (unreadable)";
		return 0;
	}
	close(fd);
	for (line = strtok_r(text, "\n", &save); line && !rc; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == ' ' || line[0] == '\t')
			continue; /* a nested setting (s3 =\n  addressing_style = ...) */
		char *l = trim(line);
		if (!*l || *l == '#' || *l == ';')
			continue;
		if (*l == '[') {
			char *e = strchr(l, ']');
			if (!e)
				continue;
			*e = '\0';
			char *sec = trim(l + 1);
			if (config && !strncmp(sec, "profile", 7) && (sec[7] == ' ' || sec[7] == '\t'))
				sec = trim(sec + 8);
			else if (config && strcmp(sec, "default"))
				sec = NULL; /* [sso-session x], [services x], a bare [x] */
			in = sec && !strcmp(sec, name);
			p->found |= in;
			continue;
		}
		char *eq = strchr(l, '=');
		if (!in || !eq)
			continue;
		*eq = '\0';
		char *k = trim(l), *v = trim(eq + 1);
		for (char *c = k; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		if (!strcmp(k, "aws_access_key_id")) {
			if (!p->access_key && *v && !p->where && !(p->where = st_strdup(path)))
				rc = -1;
			rc = rc ? rc : take(&p->access_key, v, 0);
		} else if (!strcmp(k, "aws_secret_access_key")) {
			rc = take(&p->secret_key, v, 1);
		} else if (!strcmp(k, "aws_session_token")) {
			rc = take(&p->session_token, v, 1);
		} else if (!strcmp(k, "region")) {
			rc = take(&p->region, v, 0);
		} else if (!strcmp(k, "endpoint_url")) {
			rc = take(&p->endpoint_url, v, 0);
		} else if (!p->unsupported &&
			   (!strcmp(k, "role_arn") || !strcmp(k, "credential_process") ||
			    !strcmp(k, "sso_start_url") || !strcmp(k, "sso_session") ||
			    !strcmp(k, "web_identity_token_file") || !strcmp(k, "credential_source"))) {
			static const char *const names[] = {"role_arn", "credential_process",
							    "sso_start_url", "sso_session",
							    "web_identity_token_file",
							    "credential_source"};
			for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
				if (!strcmp(k, names[i]))
					p->unsupported = names[i];
		}
	}
	if (text)
		sodium_memzero(text, len);
	free(text);
	return rc;
}

/* ---- the URL ---- */

typedef struct params {
	const char *region, *endpoint, *profile, *ssetype, *kmskeyid;
	int path_style, disable_https, hostname_immutable, anonymous, dualstack, fips, accelerate;
} params;

/* One query parameter; ST_OK or an error naming it. `v` is decoded. */
static int param(params *p, const char *k, const char *v, st_error *err)
{
	static const struct {
		const char *name;
		size_t off;
	} bools[] = {
		{"use_path_style", offsetof(params, path_style)},
		{"s3ForcePathStyle", offsetof(params, path_style)},
		{"disable_https", offsetof(params, disable_https)},
		{"disableSSL", offsetof(params, disable_https)},
		{"hostname_immutable", offsetof(params, hostname_immutable)},
		{"anonymous", offsetof(params, anonymous)},
		{"dualstack", offsetof(params, dualstack)},
		{"fips", offsetof(params, fips)},
		{"accelerate", offsetof(params, accelerate)},
	};
	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
		if (strcmp(k, bools[i].name))
			continue;
		if (parse_bool(v, (int *)((char *)p + bools[i].off)) < 0)
			return st__err(err, ST_EINVAL,
				       "s3: invalid value \"%s\" for query parameter \"%s\": a boolean "
				       "(true, false, 1, 0, t, f) is expected",
				       v, k);
		return ST_OK;
	}
	if (!strcmp(k, "region"))
		p->region = v;
	else if (!strcmp(k, "endpoint"))
		p->endpoint = v;
	else if (!strcmp(k, "profile"))
		p->profile = v;
	else if (!strcmp(k, "ssetype"))
		p->ssetype = v;
	else if (!strcmp(k, "kmskeyid"))
		p->kmskeyid = v;
	else if (!strcmp(k, "awssdk")) {
		if (strcmp(v, "v1") && strcmp(v, "v2") && strcmp(v, "V1") && strcmp(v, "V2"))
			return st__err(err, ST_EINVAL, "s3: invalid value \"%s\" for query parameter "
						       "\"awssdk\": v1 or v2 is expected", v);
	} else if (!strcmp(k, "request_checksum_calculation") ||
		   !strcmp(k, "response_checksum_validation")) {
		/* statetool sends no CRC checksums and verifies none: both values mean that */
		if (strcasecmp(v, "when_supported") && strcasecmp(v, "when_required"))
			return st__err(err, ST_EINVAL,
				       "s3: invalid value \"%s\" for query parameter \"%s\": "
				       "when_supported or when_required is expected",
				       v, k);
	} else if (!strcmp(k, "rate_limiter_capacity")) {
		/* Go's strconv.Atoi: an optional sign, then digits only */
		const char *d = v + (*v == '+' || *v == '-');
		char *end;
		errno = 0;
		(void)strtol(v, &end, 10);
		if (*d < '0' || *d > '9' || *end || errno)
			return st__err(err, ST_EINVAL, "s3: invalid value \"%s\" for query parameter "
						       "\"rate_limiter_capacity\": a whole number is "
						       "expected", v);
	} else if (!strcmp(k, "role")) {
		return st__err(err, ST_EUNSUPPORTED,
			       "s3: the query parameter \"role\" (assuming a role through STS) is not "
			       "supported by statetool: run it with that role's credentials in "
			       "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN");
	} else {
		return st__err(err, ST_EINVAL, "s3: unknown query parameter \"%s\"", k);
	}
	return ST_OK;
}

/* Splits s3://BUCKET/PATH?QUERY: bucket and prefix into c, the parameters into p (pointing into
 * *query, new, which holds the decoded strings). */
static int parse_url(st_s3_config *c, params *p, const char *url, char **query, st_error *err)
{
	const char *b = url + 5, *e = b + strcspn(b, "/?#");
	const char *path = e, *pe = path + strcspn(path, "?#");
	int rc;

	*query = NULL;
	if (e == b)
		return st__err(err, ST_EINVAL, "s3: no bucket in '%s' (s3://BUCKET[/PREFIX])", url);
	for (const char *q = b; q < e; q++)
		if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
		      *q == '.' || *q == '-' || *q == '_'))
			return st__err(err, ST_EINVAL, "s3: invalid bucket name in '%s'", url);
	if (!(c->bucket = st_strndup(b, (size_t)(e - b))))
		return st__err(err, ST_ENOMEM, "out of memory");
	/* the path is a key prefix: "a/b" keeps a/b/.pulumi/... */
	while (path < pe && *path == '/')
		path++;
	char *dec = st__url_decode(path, (size_t)(pe - path), 0);
	if (!dec)
		return st__err(err, ST_ENOMEM, "out of memory");
	size_t n = strlen(dec);
	while (n && dec[n - 1] == '/')
		dec[--n] = '\0';
	if (n && !st_store_key_valid(dec)) {
		free(dec);
		return st__err(err, ST_EINVAL,
			       "s3: invalid key prefix in '%s': no empty, '.' or '..' segments, "
			       "backslashes or control characters",
			       url);
	}
	c->prefix = n ? st_asprintf("%s/", dec) : st_strdup("");
	free(dec);
	if (!c->prefix)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (*pe != '?')
		return ST_OK;
	/* the query: k=v pairs, decoded as Go's url.ParseQuery does; of a repeated name only the
	 * first counts (url.Values.Get) */
	const char *qs = pe + 1, *qe = qs + strcspn(qs, "#");
	size_t cap = (size_t)(qe - qs) * 2 + 2, used = 0;
	if (!(*query = malloc(cap)))
		return st__err(err, ST_ENOMEM, "out of memory");
	for (const char *a = qs; a < qe;) {
		const char *amp = memchr(a, '&', (size_t)(qe - a)), *ae = amp ? amp : qe;
		const char *eq = memchr(a, '=', (size_t)(ae - a));
		if (ae > a) {
			char *k = st__url_decode(a, (size_t)((eq ? eq : ae) - a), 1);
			char *v = eq ? st__url_decode(eq + 1, (size_t)(ae - eq - 1), 1) : st_strdup("");
			if (!k || !v) {
				free(k);
				free(v);
				return st__err(err, ST_ENOMEM, "out of memory");
			}
			int again = 0; /* the names so far are the even strings of *query */
			for (size_t off = 0; off < used && !again;) {
				again = !strcmp(*query + off, k);
				off += strlen(*query + off) + 1;
				off += strlen(*query + off) + 1;
			}
			char *ks = *query + used, *vs = ks + strlen(k) + 1;
			memcpy(ks, k, strlen(k) + 1);
			memcpy(vs, v, strlen(v) + 1);
			used += strlen(k) + strlen(v) + 2;
			free(k);
			free(v);
			if (!again && (rc = param(p, ks, vs, err)) != ST_OK)
				return rc;
		}
		a = amp ? amp + 1 : qe;
	}
	return ST_OK;
}

/* ---- putting it together ---- */

static const char *env_of(st_env_fn env, const char *name)
{
	const char *v = env ? env(name) : getenv(name);
	return v && *v ? v : NULL;
}

/* The default AWS endpoint of a region. New. */
static char *aws_endpoint(const params *p, const char *region)
{
	const char *suffix = !strncmp(region, "cn-", 3) ? "amazonaws.com.cn" : "amazonaws.com";
	const char *scheme = p->disable_https ? "http" : "https";
	if (p->accelerate)
		return st_asprintf("%s://s3-accelerate%s.%s", scheme, p->dualstack ? ".dualstack" : "",
				   suffix);
	return st_asprintf("%s://s3%s%s.%s.%s", scheme, p->fips ? "-fips" : "",
			   p->dualstack ? ".dualstack" : "", region, suffix);
}

/* Whether the endpoint's host is an IP address or localhost (no virtual hosts there). */
static int host_is_literal(const char *endpoint)
{
	const char *h = strstr(endpoint, "://");
	h = h ? h + 3 : endpoint;
	size_t n = strcspn(h, ":/");
	if (*h == '[')
		return 1;
	if (n == 9 && !strncasecmp(h, "localhost", 9))
		return 1;
	for (size_t i = 0; i < n; i++)
		if (!((h[i] >= '0' && h[i] <= '9') || h[i] == '.'))
			return 0;
	return n > 0;
}

static int set_endpoint(st_s3_config *c, const params *p, st_env_fn env, st_error *err)
{
	const char *ep = p->endpoint;
	const char *ignore = env_of(env, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
	int ign = 0;

	if (ignore)
		(void)parse_bool(ignore, &ign);
	const char *from = "the URL's endpoint parameter";
	if (!ep && !ign && (ep = env_of(env, "AWS_ENDPOINT_URL_S3")))
		from = "AWS_ENDPOINT_URL_S3";
	if (!ep && !ign && (ep = env_of(env, "AWS_ENDPOINT_URL")))
		from = "AWS_ENDPOINT_URL";
	if (!ep && !ign && c->endpoint) { /* the profile's endpoint_url, put there by the caller */
		ep = c->endpoint;
		from = NULL;
	}
	char *v;
	if (ep) {
		c->custom_endpoint = 1;
		c->endpoint_from = from ? st_strdup(from)
					: st_asprintf("endpoint_url of profile '%s'", c->profile);
		if (!c->endpoint_from)
			return st__err(err, ST_ENOMEM, "out of memory");
		if (strstr(ep, "://"))
			v = st_strdup(ep);
		else /* Pulumi's translation: a bare host gets its scheme */
			v = st_asprintf("%s://%s", p->disable_https ? "http" : "https", ep);
	} else {
		v = aws_endpoint(p, c->region);
	}
	if (!v)
		return st__err(err, ST_ENOMEM, "out of memory");
	size_t n = strlen(v);
	while (n && v[n - 1] == '/')
		v[--n] = '\0';
	if (strncmp(v, "http://", 7) && strncmp(v, "https://", 8)) {
		st__err(err, ST_EINVAL, "s3: the endpoint '%s' is neither http:// nor https://", v);
		free(v);
		return ST_EINVAL;
	}
	if (strchr(v, '?') || strchr(v, '#') || strchr(v + 8, '@')) {
		free(v);
		return st__err(err, ST_EINVAL, "s3: the endpoint must be scheme://host[:port][/path]");
	}
	free(c->endpoint);
	c->endpoint = v;
	/* virtual-hosted (bucket.host) unless asked otherwise or impossible: an IP address or
	 * localhost, a bucket that is no DNS label, a dotted bucket under TLS */
	int dns_ok = 1;
	for (const char *b = c->bucket; *b; b++)
		if ((*b >= 'A' && *b <= 'Z') || *b == '_')
			dns_ok = 0;
	if (strchr(c->bucket, '.') && !strncmp(v, "https://", 8))
		dns_ok = 0;
	c->path_style = p->path_style || (c->custom_endpoint && p->hostname_immutable) ||
			host_is_literal(v) || (!dns_ok && !p->accelerate);
	return ST_OK;
}

/* Says what was read, for the message of missing or refused credentials. */
static void describe_sources(st_buf *b, st_env_fn env, const char *cred_path, const char *cred_st,
			     const char *conf_path, const char *conf_st)
{
	static const char *const vars[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
					   "AWS_SESSION_TOKEN", "AWS_PROFILE"};
	st_buf_adds(b, "read: ");
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		st_buf_printf(b, "%s%s, ", vars[i], env_of(env, vars[i]) ? "" : " (unset)");
	st_buf_printf(b, "%s%s, %s%s", cred_path, cred_st, conf_path, conf_st);
}

static int credentials(st_s3_config *c, const params *p, profile *pr, st_env_fn env,
		       const char *profile_from, const char *cred_path, const char *cred_st,
		       const char *conf_path, const char *conf_st, st_error *err)
{
	const char *ak = env_of(env, "AWS_ACCESS_KEY_ID"), *sk = env_of(env, "AWS_SECRET_ACCESS_KEY");
	st_buf b;

	if (!ak)
		ak = env_of(env, "AWS_ACCESS_KEY");
	if (!sk)
		sk = env_of(env, "AWS_SECRET_KEY");
	if (p->anonymous) {
		c->anonymous = 1;
		c->cred_from = st_strdup("none (anonymous=true)");
		return c->cred_from ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
	}
	if (!p->profile && ak && sk) {
		const char *tok = env_of(env, "AWS_SESSION_TOKEN");
		c->access_key = st_strdup(ak);
		c->secret_key = secret_dup(sk);
		c->session_token = tok ? secret_dup(tok) : NULL;
		c->cred_from = st_strdup(tok ? "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and "
					       "AWS_SESSION_TOKEN (environment)"
					     : "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
					       "(environment)");
		if (!c->access_key || !c->secret_key || (tok && !c->session_token) || !c->cred_from)
			return st__err(err, ST_ENOMEM, "out of memory");
		return ST_OK;
	}
	if (pr->access_key && pr->secret_key) {
		c->access_key = pr->access_key;
		c->secret_key = pr->secret_key;
		c->session_token = pr->session_token;
		pr->access_key = pr->secret_key = pr->session_token = NULL;
		c->cred_from = st_asprintf("profile '%s' (%s) of %s", c->profile, profile_from,
					   pr->where ? pr->where : cred_path);
		return c->cred_from ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
	}
	if (pr->unsupported)
		return st__err(err, ST_EUNSUPPORTED,
			       "s3: profile '%s' (%s) gets its credentials by '%s', which statetool "
			       "does not support: give it aws_access_key_id and "
			       "aws_secret_access_key, or export the credentials (aws configure "
			       "export-credentials --format env)",
			       c->profile, profile_from, pr->unsupported);
	st_buf_init(&b);
	describe_sources(&b, env, cred_path, cred_st, conf_path, conf_st);
	st__err(err, ST_EAUTH,
		"s3: no credentials for bucket '%s': set AWS_ACCESS_KEY_ID and "
		"AWS_SECRET_ACCESS_KEY, or give profile '%s' aws_access_key_id and "
		"aws_secret_access_key (%s); instance, container and SSO credentials are not "
		"supported, anonymous=true reads a public bucket",
		c->bucket, c->profile, b.data ? b.data : "");
	st_buf_free(&b);
	return ST_EAUTH;
}

int st__s3_config_load(st_s3_config *c, const char *url, st_env_fn env, st_error *err)
{
	params p;
	profile pr;
	char *query = NULL, *cred_path = NULL, *conf_path = NULL;
	const char *home = env_of(env, "HOME"), *profile_from, *cred_st = "", *conf_st = "";
	int rc;

	memset(c, 0, sizeof(*c));
	memset(&p, 0, sizeof(p));
	memset(&pr, 0, sizeof(pr));
	if (strncmp(url, "s3://", 5))
		return st__err(err, ST_EINVAL, "s3: '%s' is no s3:// URL", url);
	if ((rc = parse_url(c, &p, url, &query, err)) != ST_OK)
		goto out;
	/* the profile and the files */
	profile_from = "the URL";
	const char *name = p.profile;
	if (!name && (name = env_of(env, "AWS_PROFILE")))
		profile_from = "AWS_PROFILE";
	if (!name && (name = env_of(env, "AWS_DEFAULT_PROFILE")))
		profile_from = "AWS_DEFAULT_PROFILE";
	if (!name) {
		name = "default";
		profile_from = "the default";
	}
	const char *cf = env_of(env, "AWS_SHARED_CREDENTIALS_FILE"), *gf = env_of(env, "AWS_CONFIG_FILE");
	cred_path = cf ? st_strdup(cf) : st_asprintf("%s/.aws/credentials", home ? home : "");
	conf_path = gf ? st_strdup(gf) : st_asprintf("%s/.aws/config", home ? home : "");
	if (!(c->profile = st_strdup(name)) || !cred_path || !conf_path ||
	    read_profile(&pr, cred_path, name, 0, &cred_st) < 0 ||
	    read_profile(&pr, conf_path, name, 1, &conf_st) < 0) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if (!pr.found && strcmp(profile_from, "the default")) {
		rc = st__err(err, ST_EINVAL, "s3: profile '%s' (from %s) is in neither %s%s nor %s%s",
			     name, profile_from, cred_path, cred_st, conf_path, conf_st);
		goto out;
	}
	/* the region */
	const char *region = p.region, *from = "the URL";
	if (!region && (region = env_of(env, "AWS_REGION")))
		from = "AWS_REGION";
	if (!region && (region = env_of(env, "AWS_DEFAULT_REGION")))
		from = "AWS_DEFAULT_REGION";
	if (!region && (region = pr.region))
		from = "the profile";
	if (!region) {
		region = "us-east-1";
		from = "the default";
	}
	c->region = st_strdup(region);
	c->region_from = st_strdup(from);
	if (!c->region || !c->region_from) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	/* the endpoint (the profile's endpoint_url handed over through c->endpoint) */
	c->endpoint = pr.endpoint_url;
	pr.endpoint_url = NULL;
	if ((rc = set_endpoint(c, &p, env, err)) != ST_OK)
		goto out;
	/* server-side encryption asked for by the URL */
	if (p.ssetype) {
		const char *v = !strcmp(p.ssetype, "AES256")	? "AES256"
				: !strcmp(p.ssetype, "aws:kms") ? "aws:kms"
				: !strcmp(p.ssetype, "aws:kms:dsse") ? "aws:kms:dsse"
								     : NULL;
		if (!v) {
			rc = st__err(err, ST_EINVAL,
				     "s3: invalid value \"%s\" for query parameter \"ssetype\": "
				     "AES256, aws:kms or aws:kms:dsse is expected",
				     p.ssetype);
			goto out;
		}
		if (!(c->sse = st_strdup(v))) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto out;
		}
	}
	if (p.kmskeyid && !(c->kms_key_id = st_strdup(p.kmskeyid))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	rc = credentials(c, &p, &pr, env, profile_from, cred_path, cred_st, conf_path, conf_st,
			 err);
out:
	profile_free(&pr);
	free(query);
	free(cred_path);
	free(conf_path);
	return rc;
}
