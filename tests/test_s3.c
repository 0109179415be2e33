/*
 * The S3 store (lib/store/s3.c, s3conf.c):
 *  - its configuration, table-driven: URL parameters, environment, shared credentials and config
 *    files, and which wins (no server needed; the environment is a table, HOME a folder of the
 *    case's files);
 *  - on the test servers' radosgw (skipped without them, a failure then when $CI is set): wrong
 *    credentials, a missing bucket, an unreachable endpoint, and, through a proxy of the test's
 *    own in front of radosgw, a server failing half-way: 500s, an answer lost after the server
 *    carried the request out, an answer cut short. Each checks the error (code and message, no
 *    secret in it), the attempts, and that nothing changed.
 */
#include "testutil.h"

#include "httpfake.h"
#include "servers.h"
#include "store/http.h"
#include "store/s3.h"

/* ---- the configuration ---- */

static const char *const *case_env; /* "NAME=VALUE" strings, NULL-terminated */

static const char *table_env(const char *name)
{
	size_t n = strlen(name);
	for (const char *const *e = case_env; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

typedef struct conf_case {
	const char *name;
	const char *url;
	const char *env[12];
	const char *credentials; /* ~/.aws/credentials (NULL: none) */
	const char *config;      /* ~/.aws/config */
	int rc;
	const char *want;        /* rc == ST_OK: "bucket|prefix|endpoint|path|region|region_from|
				  * key|secret|token|cred_from"; else a part of the message */
} conf_case;

#define ENV_KEYS "AWS_ACCESS_KEY_ID=AKENV", "AWS_SECRET_ACCESS_KEY=skenv"

static const conf_case CASES[] = {
	{"aws defaults", "s3://bucket", {ENV_KEYS}, NULL, NULL, ST_OK,
	 "bucket||https://s3.us-east-1.amazonaws.com|0|us-east-1|the default|AKENV|skenv||"
	 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (environment)"},
	{"prefix", "s3://bucket/a/b", {ENV_KEYS, "AWS_REGION=eu-west-1"}, NULL, NULL, ST_OK,
	 "bucket|a/b/|https://s3.eu-west-1.amazonaws.com|0|eu-west-1|AWS_REGION|AKENV|skenv||"
	 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (environment)"},
	{"prefix, slashes", "s3://bucket//a/b/", {ENV_KEYS}, NULL, NULL, ST_OK,
	 "bucket|a/b/|https://s3.us-east-1.amazonaws.com|0|us-east-1|the default|AKENV|skenv||"
	 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (environment)"},
	{"prefix, encoded", "s3://bucket/a%20b/c", {ENV_KEYS}, NULL, NULL, ST_OK,
	 "bucket|a b/c/|https://s3.us-east-1.amazonaws.com|0|us-east-1|the default|AKENV|skenv||"
	 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (environment)"},
	{"endpoint, path style", "s3://b?endpoint=http://127.0.0.1:9000&s3ForcePathStyle=true",
	 {ENV_KEYS, "AWS_SESSION_TOKEN=tok"}, NULL, NULL, ST_OK,
	 "b||http://127.0.0.1:9000|1|us-east-1|the default|AKENV|skenv|tok|AWS_ACCESS_KEY_ID, "
	 "AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (environment)"},
	{"bare endpoint: https", "s3://b?endpoint=minio.example:9000", {ENV_KEYS}, NULL, NULL,
	 ST_OK,
	 "b||https://minio.example:9000|0|us-east-1|the default|AKENV|skenv||AWS_ACCESS_KEY_ID "
	 "and AWS_SECRET_ACCESS_KEY (environment)"},
	{"bare endpoint, disableSSL: http",
	 "s3://b?endpoint=minio.example:9000&disableSSL=true&use_path_style=1", {ENV_KEYS}, NULL,
	 NULL, ST_OK,
	 "b||http://minio.example:9000|1|us-east-1|the default|AKENV|skenv||AWS_ACCESS_KEY_ID and "
	 "AWS_SECRET_ACCESS_KEY (environment)"},
	{"disable_https on AWS", "s3://b?disable_https=true&region=us-west-2", {ENV_KEYS}, NULL,
	 NULL, ST_OK,
	 "b||http://s3.us-west-2.amazonaws.com|0|us-west-2|the URL|AKENV|skenv||AWS_ACCESS_KEY_ID "
	 "and AWS_SECRET_ACCESS_KEY (environment)"},
	{"endpoint with a path, trailing slash", "s3://b?endpoint=https://h.example/s3/&use_path_style=true",
	 {ENV_KEYS}, NULL, NULL, ST_OK,
	 "b||https://h.example/s3|1|us-east-1|the default|AKENV|skenv||AWS_ACCESS_KEY_ID and "
	 "AWS_SECRET_ACCESS_KEY (environment)"},
	{"localhost: path style", "s3://b?endpoint=http://localhost:9000", {ENV_KEYS}, NULL, NULL,
	 ST_OK,
	 "b||http://localhost:9000|1|us-east-1|the default|AKENV|skenv||AWS_ACCESS_KEY_ID and "
	 "AWS_SECRET_ACCESS_KEY (environment)"},
	{"no DNS name: path style", "s3://My_Bucket", {ENV_KEYS}, NULL, NULL, ST_OK,
	 "My_Bucket||https://s3.us-east-1.amazonaws.com|1|us-east-1|the default|AKENV|skenv||"
	 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (environment)"},
	{"dotted bucket under TLS: path style", "s3://a.b", {ENV_KEYS}, NULL, NULL, ST_OK,
	 "a.b||https://s3.us-east-1.amazonaws.com|1|us-east-1|the default|AKENV|skenv||"
	 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (environment)"},
	{"hostname_immutable: path style",
	 "s3://b?endpoint=https://s3.example&hostname_immutable=true", {ENV_KEYS}, NULL, NULL,
	 ST_OK,
	 "b||https://s3.example|1|us-east-1|the default|AKENV|skenv||AWS_ACCESS_KEY_ID and "
	 "AWS_SECRET_ACCESS_KEY (environment)"},
	{"fips, dualstack", "s3://b?fips=true&dualstack=true&region=us-gov-west-1", {ENV_KEYS},
	 NULL, NULL, ST_OK,
	 "b||https://s3-fips.dualstack.us-gov-west-1.amazonaws.com|0|us-gov-west-1|the URL|AKENV|"
	 "skenv||AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (environment)"},
	{"china", "s3://b", {ENV_KEYS, "AWS_DEFAULT_REGION=cn-north-1"}, NULL, NULL, ST_OK,
	 "b||https://s3.cn-north-1.amazonaws.com.cn|0|cn-north-1|AWS_DEFAULT_REGION|AKENV|skenv||"
	 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (environment)"},
	{"region: the URL over AWS_REGION over AWS_DEFAULT_REGION",
	 "s3://b?region=ap-south-1", {ENV_KEYS, "AWS_REGION=eu-west-1", "AWS_DEFAULT_REGION=x"},
	 NULL, NULL, ST_OK,
	 "b||https://s3.ap-south-1.amazonaws.com|0|ap-south-1|the URL|AKENV|skenv||"
	 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (environment)"},
	{"AWS_REGION over AWS_DEFAULT_REGION", "s3://b",
	 {ENV_KEYS, "AWS_REGION=eu-west-1", "AWS_DEFAULT_REGION=x"}, NULL, NULL, ST_OK,
	 "b||https://s3.eu-west-1.amazonaws.com|0|eu-west-1|AWS_REGION|AKENV|skenv||"
	 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (environment)"},
	{"a repeated parameter: the first", "s3://b?region=r1&region=r2&endpoint=http://e1&endpoint=http://e2",
	 {ENV_KEYS}, NULL, NULL, ST_OK,
	 "b||http://e1|0|r1|the URL|AKENV|skenv||AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
	 "(environment)"},
	{"endpoint: AWS_ENDPOINT_URL_S3 over AWS_ENDPOINT_URL", "s3://b",
	 {ENV_KEYS, "AWS_ENDPOINT_URL=http://general:1", "AWS_ENDPOINT_URL_S3=http://s3only:2"},
	 NULL, NULL, ST_OK,
	 "b||http://s3only:2|0|us-east-1|the default|AKENV|skenv||AWS_ACCESS_KEY_ID and "
	 "AWS_SECRET_ACCESS_KEY (environment)"},
	{"endpoint: the URL over the environment", "s3://b?endpoint=http://url:3",
	 {ENV_KEYS, "AWS_ENDPOINT_URL=http://general:1", "AWS_ENDPOINT_URL_S3=http://s3only:2"},
	 NULL, NULL, ST_OK,
	 "b||http://url:3|0|us-east-1|the default|AKENV|skenv||AWS_ACCESS_KEY_ID and "
	 "AWS_SECRET_ACCESS_KEY (environment)"},
	{"endpoint: AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "s3://b",
	 {ENV_KEYS, "AWS_ENDPOINT_URL=http://general:1", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true"},
	 NULL, "[default]\nendpoint_url = http://profile:4\n", ST_OK,
	 "b||https://s3.us-east-1.amazonaws.com|0|us-east-1|the default|AKENV|skenv||"
	 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (environment)"},
	{"the default profile: keys, region, endpoint", "s3://b", {NULL},
	 "[default]\naws_access_key_id = AKFILE\naws_secret_access_key = skfile\n",
	 "[default]\nregion = eu-central-1\nendpoint_url = http://profile:4\n", ST_OK,
	 "b||http://profile:4|0|eu-central-1|the profile|AKFILE|skfile||profile 'default' (the "
	 "default) of HOME/.aws/credentials"},
	{"AWS_PROFILE, [NAME] and [profile NAME]", "s3://b", {"AWS_PROFILE=work"},
	 "# comment\n[default]\naws_access_key_id = AKDEF\naws_secret_access_key = skdef\n"
	 "[work]\naws_access_key_id=AKWORK \naws_secret_access_key=skwork\naws_session_token=tw\n",
	 "[profile work]\nregion=us-west-1\ns3 =\n  addressing_style = path\n[work]\nregion=no\n",
	 ST_OK,
	 "b||https://s3.us-west-1.amazonaws.com|0|us-west-1|the profile|AKWORK|skwork|tw|profile "
	 "'work' (AWS_PROFILE) of HOME/.aws/credentials"},
	{"keys in the config file; the credentials file wins", "s3://b", {"AWS_PROFILE=p"},
	 "[p]\naws_secret_access_key = skcred\n",
	 "[profile p]\naws_access_key_id = AKCONF\naws_secret_access_key = skconf\n", ST_OK,
	 "b||https://s3.us-east-1.amazonaws.com|0|us-east-1|the default|AKCONF|skcred||profile "
	 "'p' (AWS_PROFILE) of HOME/.aws/config"},
	{"the environment's keys over AWS_PROFILE", "s3://b", {ENV_KEYS, "AWS_PROFILE=work"},
	 "[work]\naws_access_key_id = AKWORK\naws_secret_access_key = skwork\n", NULL, ST_OK,
	 "b||https://s3.us-east-1.amazonaws.com|0|us-east-1|the default|AKENV|skenv||"
	 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (environment)"},
	{"the URL's profile over the environment's keys", "s3://b?profile=work", {ENV_KEYS},
	 "[work]\naws_access_key_id = AKWORK\naws_secret_access_key = skwork\n", NULL, ST_OK,
	 "b||https://s3.us-east-1.amazonaws.com|0|us-east-1|the default|AKWORK|skwork||profile "
	 "'work' (the URL) of HOME/.aws/credentials"},
	{"half of the environment's keys: the profile", "s3://b", {"AWS_ACCESS_KEY_ID=AKONLY"},
	 "[default]\naws_access_key_id = AKDEF\naws_secret_access_key = skdef\n", NULL, ST_OK,
	 "b||https://s3.us-east-1.amazonaws.com|0|us-east-1|the default|AKDEF|skdef||profile "
	 "'default' (the default) of HOME/.aws/credentials"},
	{"AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE", "s3://b",
	 {"AWS_SHARED_CREDENTIALS_FILE=HOME/elsewhere/creds", "AWS_CONFIG_FILE=HOME/elsewhere/conf"},
	 "[default]\naws_access_key_id = AKHOME\naws_secret_access_key = skhome\n", NULL, ST_OK,
	 "b||https://s3.us-east-1.amazonaws.com|0|us-east-1|the default|AKELSE|skelse||profile "
	 "'default' (the default) of HOME/elsewhere/creds"},
	{"anonymous", "s3://b?anonymous=true", {ENV_KEYS}, NULL, NULL, ST_OK,
	 "b||https://s3.us-east-1.amazonaws.com|0|us-east-1|the default|||"
	 "|none (anonymous=true)"},
	{"pulumi's other parameters accepted",
	 "s3://b?awssdk=v2&request_checksum_calculation=when_required&"
	 "response_checksum_validation=WHEN_SUPPORTED&rate_limiter_capacity=5&ssetype=AES256",
	 {ENV_KEYS}, NULL, NULL, ST_OK,
	 "b||https://s3.us-east-1.amazonaws.com|0|us-east-1|the default|AKENV|skenv||"
	 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (environment)"},
	/* errors */
	{"no bucket", "s3://", {ENV_KEYS}, NULL, NULL, ST_EINVAL,
	 "s3: no bucket in 's3://' (s3://BUCKET[/PREFIX])"},
	{"bad bucket", "s3://a%2Fb/x", {ENV_KEYS}, NULL, NULL, ST_EINVAL,
	 "s3: invalid bucket name in 's3://a%2Fb/x'"},
	{"bad prefix", "s3://b/a/../c", {ENV_KEYS}, NULL, NULL, ST_EINVAL,
	 "s3: invalid key prefix in 's3://b/a/../c'"},
	{"bad boolean", "s3://bucket?disableSSL=banana", {ENV_KEYS}, NULL, NULL, ST_EINVAL,
	 "s3: invalid value \"banana\" for query parameter \"disableSSL\": a boolean (true, "
	 "false, 1, 0, t, f) is expected"},
	{"bad boolean, fips", "s3://bucket?fips=maybe", {ENV_KEYS}, NULL, NULL, ST_EINVAL,
	 "s3: invalid value \"maybe\" for query parameter \"fips\": a boolean"},
	{"bad number", "s3://bucket?rate_limiter_capacity=abc", {ENV_KEYS}, NULL, NULL, ST_EINVAL,
	 "s3: invalid value \"abc\" for query parameter \"rate_limiter_capacity\": a whole "
	 "number is expected"},
	{"bad number, a space", "s3://bucket?rate_limiter_capacity=+5", {ENV_KEYS}, NULL, NULL,
	 ST_EINVAL, "s3: invalid value \" 5\" for query parameter \"rate_limiter_capacity\""},
	{"bad awssdk", "s3://bucket?awssdk=v3", {ENV_KEYS}, NULL, NULL, ST_EINVAL,
	 "s3: invalid value \"v3\" for query parameter \"awssdk\": v1 or v2 is expected"},
	{"bad checksum", "s3://bucket?request_checksum_calculation=x", {ENV_KEYS}, NULL, NULL,
	 ST_EINVAL,
	 "s3: invalid value \"x\" for query parameter \"request_checksum_calculation\": "
	 "when_supported or when_required is expected"},
	{"unknown parameter", "s3://bucket?foo=1", {ENV_KEYS}, NULL, NULL, ST_EINVAL,
	 "s3: unknown query parameter \"foo\""},
	{"role", "s3://bucket?role=arn:aws:iam::1:role/x", {ENV_KEYS}, NULL, NULL, ST_EUNSUPPORTED,
	 "s3: the query parameter \"role\" (assuming a role through STS) is not supported"},
	{"bad ssetype", "s3://bucket?ssetype=rot13", {ENV_KEYS}, NULL, NULL, ST_EINVAL,
	 "s3: invalid value \"rot13\" for query parameter \"ssetype\": AES256, aws:kms or "
	 "aws:kms:dsse is expected"},
	{"endpoint scheme", "s3://bucket?endpoint=ftp://x", {ENV_KEYS}, NULL, NULL, ST_EINVAL,
	 "s3: the endpoint 'ftp://x' is neither http:// nor https://"},
	{"a named profile that is nowhere", "s3://bucket", {"AWS_PROFILE=ghost"},
	 "[default]\naws_access_key_id = A\naws_secret_access_key = s\n", NULL, ST_EINVAL,
	 "s3: profile 'ghost' (from AWS_PROFILE) is in neither HOME/.aws/credentials nor "
	 "HOME/.aws/config (not found)"},
	{"a role profile", "s3://bucket?profile=r", {ENV_KEYS}, NULL,
	 "[profile r]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = default\n",
	 ST_EUNSUPPORTED,
	 "s3: profile 'r' (the URL) gets its credentials by 'role_arn', which statetool does not "
	 "support"},
	{"no credentials", "s3://bucket", {"AWS_SECRET_ACCESS_KEY=only-this-secret"}, NULL, NULL,
	 ST_EAUTH,
	 "s3: no credentials for bucket 'bucket': set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
	 "or give profile 'default' aws_access_key_id and aws_secret_access_key (read: "
	 "AWS_ACCESS_KEY_ID (unset), AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN (unset), AWS_PROFILE "
	 "(unset), HOME/.aws/credentials (not found), HOME/.aws/config (not found))"},
};

/* HOME/... with the case's home folder put in. New. */
static char *with_home(const char *s, const char *home)
{
	st_buf b;
	st_buf_init(&b);
	for (const char *p = s; *p;) {
		const char *h = strstr(p, "HOME/");
		size_t n = h ? (size_t)(h - p) : strlen(p);
		st_buf_add(&b, p, n);
		if (!h)
			break;
		st_buf_printf(&b, "%s/", home);
		p = h + 5;
	}
	return st_buf_take(&b, NULL);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char *p = st_asprintf("%s/%s", dir, name);
	tu_write(p, text, strlen(text));
	free(p);
}

static void test_config_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
		const conf_case *t = &CASES[i];
		char *home = tu_tmpdir(), *aws = st_asprintf("%s/.aws", home), *want, *got;
		const char *env[16];
		char *own[16];
		size_t ne = 0, no = 0;
		st_s3_config c;
		st_error err;
		int rc;

		assert_int_equal(mkdir(aws, 0700), 0);
		if (t->credentials)
			write_file(aws, "credentials", t->credentials);
		if (t->config)
			write_file(aws, "config", t->config);
		/* AWS_SHARED_CREDENTIALS_FILE's case has its own files elsewhere */
		char *else_dir = st_asprintf("%s/elsewhere", home);
		assert_int_equal(mkdir(else_dir, 0700), 0);
		write_file(else_dir, "creds",
			   "[default]\naws_access_key_id = AKELSE\naws_secret_access_key = skelse\n");
		free(else_dir);
		own[no] = st_asprintf("HOME=%s", home);
		env[ne++] = own[no++];
		for (size_t k = 0; t->env[k]; k++) {
			own[no] = with_home(t->env[k], home);
			env[ne++] = own[no++];
		}
		env[ne] = NULL;
		case_env = env;
		st_error_clear(&err);
		rc = st__s3_config_load(&c, t->url, table_env, &err);
		if (rc != t->rc)
			fail_msg("%s: rc %d, wanted %d: %s", t->name, rc, t->rc, err.message);
		if (rc == ST_OK) {
			want = with_home(t->want, home);
			got = st_asprintf("%s|%s|%s|%d|%s|%s|%s|%s|%s|%s", c.bucket, c.prefix,
					  c.endpoint, c.path_style, c.region, c.region_from,
					  c.access_key ? c.access_key : "",
					  c.secret_key ? c.secret_key : "",
					  c.session_token ? c.session_token : "", c.cred_from);
			if (strcmp(got, want))
				fail_msg("%s:\n got  %s\n want %s", t->name, got, want);
			free(got);
		} else {
			want = with_home(t->want, home);
			if (!strstr(err.message, want))
				fail_msg("%s:\n got  %s\n want %s", t->name, err.message, want);
			/* no secret in any message */
			assert_null(strstr(err.message, "skenv"));
			assert_null(strstr(err.message, "only-this-secret"));
		}
		free(want);
		st__s3_config_free(&c);
		case_env = NULL;
		for (size_t k = 0; k < no; k++)
			free(own[k]);
		free(aws);
		tu_rmdir(home);
	}
}

/* Where a custom endpoint came from, for the messages of an endpoint that cannot be reached:
 * the URL, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's endpoint_url; none for AWS's. */
static void test_endpoint_from(void **state)
{
	static const struct {
		const char *url, *env, *config, *want;
	} cases[] = {
		{"s3://b?endpoint=http://u:1", "AWS_ENDPOINT_URL_S3=http://e:1", NULL,
		 "http://u:1|the URL's endpoint parameter"},
		{"s3://b", "AWS_ENDPOINT_URL_S3=http://e:1", "[default]\nendpoint_url = http://p:1\n",
		 "http://e:1|AWS_ENDPOINT_URL_S3"},
		{"s3://b", "AWS_ENDPOINT_URL=http://g:1", "[default]\nendpoint_url = http://p:1\n",
		 "http://g:1|AWS_ENDPOINT_URL"},
		{"s3://b?profile=lab", NULL,
		 "[profile lab]\nendpoint_url = http://p:1\naws_access_key_id = A\n"
		 "aws_secret_access_key = s\n",
		 "http://p:1|endpoint_url of profile 'lab'"},
		{"s3://b", NULL, NULL, "https://s3.us-east-1.amazonaws.com|(none)"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *home = tu_tmpdir(), *aws = st_asprintf("%s/.aws", home), *got;
		char *h = st_asprintf("HOME=%s", home);
		const char *env[] = {h, ENV_KEYS, cases[i].env, NULL};
		st_s3_config c;
		st_error err;

		assert_int_equal(mkdir(aws, 0700), 0);
		if (cases[i].config)
			write_file(aws, "config", cases[i].config);
		case_env = env;
		st_error_clear(&err);
		if (st__s3_config_load(&c, cases[i].url, table_env, &err) != ST_OK)
			fail_msg("%s: %s", cases[i].url, err.message);
		got = st_asprintf("%s|%s", c.endpoint, c.endpoint_from ? c.endpoint_from : "(none)");
		if (strcmp(got, cases[i].want))
			fail_msg("%s:\n got  %s\n want %s", cases[i].url, got, cases[i].want);
		free(got);
		st__s3_config_free(&c);
		case_env = NULL;
		free(h);
		free(aws);
		tu_rmdir(home);
	}
}

/* ---- on radosgw ---- */

typedef struct rgw {
	char *endpoint, *key, *secret, *region;
	int port;
} rgw;

/* The test servers' radosgw, or 0 (skipped: the test returns) when there is none. */
static int rgw_get(rgw *r)
{
	memset(r, 0, sizeof(*r));
	r->endpoint = tu_server_var("ST_TEST_S3_ENDPOINT");
	r->key = tu_server_var("ST_TEST_S3_ACCESS_KEY");
	r->secret = tu_server_var("ST_TEST_S3_SECRET_KEY");
	r->region = tu_server_var("ST_TEST_S3_REGION");
	if (!r->endpoint || !r->key || !r->secret) {
		if (tu_servers_required())
			fail_msg("no S3 test server (ST_TEST_S3_* in the servers' env file) and $CI "
				 "is set: a skip is a failure there");
		free(r->endpoint);
		free(r->key);
		free(r->secret);
		free(r->region);
		print_message("s3: skipped, no test server (sh tests/servers/ctl start radosgw)\n");
		return 0;
	}
	const char *colon = strrchr(r->endpoint, ':');
	r->port = colon ? atoi(colon + 1) : 80;
	setenv("AWS_ACCESS_KEY_ID", r->key, 1);
	setenv("AWS_SECRET_ACCESS_KEY", r->secret, 1);
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_PROFILE");
	return 1;
}

static void rgw_free(rgw *r)
{
	free(r->endpoint);
	free(r->key);
	free(r->secret);
	free(r->region);
}

/* A store on `endpoint` in a bucket of the test's own (created), under a fresh prefix. */
static st_store *open_on(const char *endpoint, const char *bucket, const char *extra)
{
	char rnd[17], *url;
	st_store *s = NULL;
	st_error err;
	st_random_hex(rnd, 8);
	url = st_asprintf("s3://%s/t-%s?endpoint=%s&use_path_style=true%s", bucket, rnd, endpoint,
			  extra ? extra : "");
	st_error_clear(&err);
	if (st_store_open(&s, url, &err) != ST_OK)
		fail_msg("%s", err.message);
	free(url);
	return s;
}

static void setup_bucket(const rgw *r, const char *bucket)
{
	st_store *s = open_on(r->endpoint, bucket, NULL);
	st_error err;
	st_error_clear(&err);
	if (st__s3_create_bucket(s, &err) != ST_OK)
		fail_msg("%s", err.message);
	st_store_free(s);
}

/* Fast retries for the fault cases. */
static void quick_net(int retries)
{
	st_net_opts o = ST_NET_OPTS_INIT;
	o.retries = retries;
	o.backoff_ms = 1;
	o.timeout_ms = 5000;
	assert_int_equal(st_set_net(&o, NULL), ST_OK);
}

static void test_wrong_credentials(void **state)
{
	rgw r;
	st_store *s;
	st_error err;
	char *data;
	size_t len;
	st_store_entry *e;
	(void)state;
	if (!rgw_get(&r))
		return;
	setup_bucket(&r, "statetool-s3-test");
	/* a wrong secret */
	setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-key", 1);
	s = open_on(r.endpoint, "statetool-s3-test", NULL);
	st_error_clear(&err);
	assert_int_equal(st_store_list(s, "", 0, &e, &len, &err), ST_EAUTH);
	assert_non_null(strstr(err.message, "s3: "));
	assert_non_null(strstr(err.message, " refused the credentials for ListObjectsV2 "
					    "'statetool-s3-test': SignatureDoesNotMatch"));
	assert_non_null(strstr(err.message, "they came from AWS_ACCESS_KEY_ID and "
					    "AWS_SECRET_ACCESS_KEY (environment)"));
	assert_null(strstr(err.message, "not-the-secret-key"));
	assert_null(strstr(err.message, r.secret));
	/* HEAD has no body: the status says it */
	st_error_clear(&err);
	assert_int_equal(st_store_stat(s, "x", NULL, &err), ST_EAUTH);
	assert_non_null(strstr(err.message, "refused the credentials for HeadObject"));
	st_store_free(s);
	/* an unknown key id */
	setenv("AWS_SECRET_ACCESS_KEY", r.secret, 1);
	setenv("AWS_ACCESS_KEY_ID", "NOSUCHKEYID000000000", 1);
	s = open_on(r.endpoint, "statetool-s3-test", NULL);
	st_error_clear(&err);
	assert_int_equal(st_store_read(s, "x", 0, &data, &len, NULL, &err), ST_EAUTH);
	assert_non_null(strstr(err.message, "refused the credentials for GetObject"));
	assert_non_null(strstr(err.message, "InvalidAccessKeyId"));
	assert_null(strstr(err.message, r.secret));
	st_store_free(s);
	rgw_free(&r);
}

static void test_missing_bucket(void **state)
{
	rgw r;
	st_store *s;
	st_error err;
	char *data, *want;
	size_t len;
	st_store_entry *e;
	(void)state;
	if (!rgw_get(&r))
		return;
	s = open_on(r.endpoint, "statetool-no-such-bucket", NULL);
	want = st_asprintf("s3: bucket 'statetool-no-such-bucket' does not exist at %s "
			   "(NoSuchBucket)",
			   r.endpoint);
	st_error_clear(&err);
	assert_int_equal(st_store_list(s, "", 0, &e, &len, &err), ST_EIO);
	assert_string_equal(err.message, want);
	st_error_clear(&err);
	assert_int_equal(st_store_read(s, "k", 0, &data, &len, NULL, &err), ST_EIO);
	assert_string_equal(err.message, want);
	st_error_clear(&err);
	assert_int_equal(st_store_stat(s, "k", NULL, &err), ST_EIO); /* HEAD: asks the bucket */
	assert_string_equal(err.message, want);
	st_error_clear(&err);
	assert_int_equal(st_store_write(s, "k", "x", 1, NULL, &err), ST_EIO);
	assert_string_equal(err.message, want);
	st_store_free(s);
	free(want);
	rgw_free(&r);
}

static void test_unreachable(void **state)
{
	rgw r;
	st_store *s;
	st_error err;
	st_store_entry *e;
	size_t n;
	int port, fd;
	char *ep, *want;
	(void)state;
	if (!rgw_get(&r))
		return;
	fd = listen_socket(&port);
	close(fd);
	ep = st_asprintf("http://127.0.0.1:%d", port);
	quick_net(2);
	s = open_on(ep, "statetool-s3-test", NULL);
	assert_int_equal(st_set_net(NULL, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_store_list(s, "", 0, &e, &n, &err), ST_EIO);
	want = st_asprintf("s3: cannot reach 127.0.0.1:%d (ListObjectsV2 'statetool-s3-test'): ",
			   port);
	assert_true(!strncmp(err.message, want, strlen(want)));
	free(want);
	/* and where the endpoint came from */
	want = st_asprintf("(3 attempts); endpoint http://127.0.0.1:%d from the URL's endpoint "
			   "parameter",
			   port);
	if (!strstr(err.message, want))
		fail_msg("'%s' lacks '%s'", err.message, want);
	free(want);
	st_store_free(s);
	free(ep);
	rgw_free(&r);
}

/* A store through the fault proxy in front of radosgw, and one straight to it, on the same
 * bucket and prefix. */
typedef struct pair {
	server *proxy;
	st_store *via, *direct;
} pair;

static void pair_open(pair *p, const rgw *r, const action *plan, int n)
{
	char rnd[17], *url;
	st_random_hex(rnd, 8);
	p->proxy = server_start_proxy(plan, n, r->port);
	url = st_asprintf("s3://statetool-s3-test/f-%s?endpoint=http://127.0.0.1:%d&"
			  "use_path_style=true",
			  rnd, p->proxy->port);
	assert_int_equal(st_store_open(&p->via, url, NULL), ST_OK);
	free(url);
	url = st_asprintf("s3://statetool-s3-test/f-%s?endpoint=%s&use_path_style=true", rnd,
			  r->endpoint);
	assert_int_equal(st_store_open(&p->direct, url, NULL), ST_OK);
	free(url);
}

static void pair_close(pair *p)
{
	st_store_free(p->via);
	st_store_free(p->direct);
	server_stop(p->proxy);
}

static void expect_object(st_store *s, const char *key, const char *text)
{
	char *data = NULL;
	size_t len = 0;
	st_error err;
	st_error_clear(&err);
	if (st_store_read(s, key, 0, &data, &len, NULL, &err) != ST_OK)
		fail_msg("%s: %s", key, err.message);
	assert_int_equal(len, strlen(text));
	assert_memory_equal(data, text, len);
	free(data);
}

static void test_failing_half_way(void **state)
{
	static const action fwd[] = {{A_FORWARD, 0, NULL, NULL}};
	static const action e500[] = {{A_REPLY, 500, NULL, "<Error><Code>InternalError</Code>"
							   "<Message>boom</Message></Error>"}};
	static const action twice500[] = {{A_REPLY, 500, NULL, ""}, {A_REPLY, 503, NULL, ""},
					  {A_FORWARD, 0, NULL, NULL}};
	static const action cut[] = {{A_FORWARD_CUT, 0, NULL, NULL}, {A_FORWARD, 0, NULL, NULL}};
	static const action lost[] = {{A_FORWARD_DROP, 0, NULL, NULL}, {A_FORWARD, 0, NULL, NULL}};
	rgw r;
	pair p;
	st_error err;
	st_store_write_opts co = ST_STORE_WRITE_OPTS_INIT;
	(void)state;
	if (!rgw_get(&r))
		return;
	setup_bucket(&r, "statetool-s3-test");
	quick_net(2);
	pair_open(&p, &r, fwd, 1);
	assert_int_equal(st_store_write(p.via, "s.json", "old", 3, NULL, NULL), ST_OK);
	expect_object(p.direct, "s.json", "old");
	/* two failures, then through: the new content, once */
	server_plan(p.proxy, twice500, 3);
	assert_int_equal(st_store_write(p.via, "s.json", "new", 3, NULL, NULL), ST_OK);
	assert_int_equal(p.proxy->nseen, 3);
	expect_object(p.direct, "s.json", "new");
	/* failing every time: bounded, the error says so, nothing changed */
	server_plan(p.proxy, e500, 1);
	st_error_clear(&err);
	assert_int_equal(st_store_write(p.via, "s.json", "newer", 5, NULL, &err), ST_EIO);
	assert_int_equal(p.proxy->nseen, 3);
	assert_true(!strncmp(err.message, "s3: PutObject 'statetool-s3-test/f-", 35));
	assert_non_null(strstr(err.message, "s.json' on 127.0.0.1:"));
	assert_non_null(strstr(err.message, "failed: HTTP 500 InternalError: boom (3 attempts)"));
	expect_object(p.direct, "s.json", "new");
	/* a read whose answer is cut short: read again, whole */
	server_plan(p.proxy, cut, 2);
	expect_object(p.via, "s.json", "new");
	assert_int_equal(p.proxy->nseen, 2);
	/* a create-only write carried out whose answer was lost: the retry finds our own object */
	server_plan(p.proxy, lost, 2);
	co.flags = ST_STORE_CREATE_ONLY;
	assert_int_equal(st_store_write(p.via, "locks/mine.json", "{\"pid\":1}", 9, &co, NULL),
			 ST_OK);
	assert_int_equal(p.proxy->seen[0].upstream_status, 200);
	assert_int_equal(p.proxy->seen[1].upstream_status, 412);
	expect_object(p.direct, "locks/mine.json", "{\"pid\":1}");
	/* ... and someone else's object is still someone else's */
	server_plan(p.proxy, lost, 2);
	assert_int_equal(st_store_write(p.direct, "locks/theirs.json", "theirs", 6, NULL, NULL),
			 ST_OK);
	st_error_clear(&err);
	server_plan(p.proxy, fwd, 1);
	assert_int_equal(st_store_write(p.via, "locks/theirs.json", "mine", 4, &co, &err),
			 ST_EEXIST);
	assert_non_null(strstr(err.message, "locks/theirs.json' exists already"));
	expect_object(p.direct, "locks/theirs.json", "theirs");
	pair_close(&p);
	assert_int_equal(st_set_net(NULL, NULL), ST_OK);
	rgw_free(&r);
}

/* Listings in pages: every key once, in order, and one request per page. */
static unsigned long requests;
static void count(void *ctx, const char *method, const char *host, const char *path, long status)
{
	(void)ctx;
	(void)method;
	(void)host;
	(void)path;
	(void)status;
	requests++;
}

static void test_pages(void **state)
{
	rgw r;
	st_store *s;
	st_store_entry *e;
	size_t n;
	st_net_opts o = ST_NET_OPTS_INIT;
	char key[32];
	(void)state;
	if (!rgw_get(&r))
		return;
	setup_bucket(&r, "statetool-s3-test");
	o.request = count;
	assert_int_equal(st_set_net(&o, NULL), ST_OK);
	s = open_on(r.endpoint, "statetool-s3-test", NULL);
	for (int i = 4; i >= 0; i--) {
		snprintf(key, sizeof(key), "k/%d", i);
		assert_int_equal(st_store_write(s, key, key, strlen(key), NULL, NULL), ST_OK);
	}
	st__s3_max_keys = 2;
	requests = 0;
	assert_int_equal(st_store_list(s, "k/", 0, &e, &n, NULL), ST_OK);
	assert_int_equal(requests, 3);
	assert_int_equal(n, 5);
	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "k/%zu", i);
		assert_string_equal(e[i].key, key);
		assert_int_equal(e[i].info.size, 3);
	}
	st_store_entries_free(e, n);
	st__s3_max_keys = 1000;
	st_store_free(s);
	assert_int_equal(st_set_net(NULL, NULL), ST_OK);
	rgw_free(&r);
}

/* A stack resolved once is loaded from the object resolving found, without a second listing
 * (st_backend_resolve_key, st_load_opts.key); an object gone since (saved in another
 * compression) is listed again; a key of another stack is refused. */
static unsigned long listings;
static void count_listings(void *ctx, const char *method, const char *host, const char *path,
			   long status)
{
	(void)ctx;
	(void)host;
	(void)status;
	requests++;
	/* path style: a listing is a GET of the bucket itself */
	if (!strcmp(method, "GET") && !strchr(path + 1, '/'))
		listings++;
}

static void test_load_named_object(void **state)
{
	rgw r;
	st_store *s;
	st_backend *b = NULL;
	st_state *st = NULL;
	st_load_opts lo = ST_LOAD_OPTS_INIT;
	st_net_opts o = ST_NET_OPTS_INIT;
	char *fx = tu_fixture("pulumi/valid-checkpoint-v3-diy.json"), *text, *qname, *key;
	const char *p;
	size_t len = 0;
	unsigned long acks;
	int exists = 0;
	st_error err;
	(void)state;
	if (!rgw_get(&r)) {
		free(fx);
		return;
	}
	setup_bucket(&r, "statetool-s3-test");
	s = open_on(r.endpoint, "statetool-s3-test", NULL);
	text = tu_read(fx, &len);
	assert_int_equal(st_store_write(s, ".pulumi/meta.yaml", "version: 1\n", 11, NULL, NULL),
			 ST_OK);
	assert_int_equal(st_store_write(s, ".pulumi/stacks/proj/dev.json", text, len, NULL, NULL),
			 ST_OK);
	o.request = count_listings; /* for the clients made after it */
	assert_int_equal(st_set_net(&o, NULL), ST_OK);
	assert_int_equal(st_backend_open(&b, st_store_url(s), NULL), ST_OK);
	requests = listings = 0;
	acks = st__http_quick_acks();
	assert_int_equal(st_backend_resolve_key(b, "proj/dev", &qname, &key, &exists, NULL), ST_OK);
	assert_string_equal(qname, "organization/proj/dev");
	assert_string_equal(key, ".pulumi/stacks/proj/dev.json");
	assert_int_equal(exists, 1);
	lo.key = key;
	assert_int_equal(st_backend_load(b, qname, &lo, &st, NULL), ST_OK);
	assert_int_equal(requests, 2); /* the listing, the object */
	assert_int_equal(listings, 1);
	/* each answer's headers acknowledged at once (radosgw's Nagle held a listing's body
	 * back ~40 ms for the delayed ACK) */
	assert_int_equal(st__http_quick_acks() - acks, 2);
	/* saved in gzip since: dev.json gone (kept as dev.json.bak), dev.json.gz there */
	setenv("PULUMI_DIY_BACKEND_GZIP", "1", 1);
	assert_int_equal(st_backend_save(b, qname, st, NULL, NULL), ST_OK);
	unsetenv("PULUMI_DIY_BACKEND_GZIP");
	st_state_free(st);
	st = NULL;
	requests = listings = 0;
	assert_int_equal(st_backend_load(b, qname, &lo, &st, NULL), ST_OK);
	assert_int_equal(requests, 3); /* the object named (404), the listing, the newest */
	assert_int_equal(listings, 1);
	assert_int_equal(st_state_compression(st), ST_COMPRESS_GZIP);
	p = st_state_path(st); /* s3://BUCKET/PREFIX/KEY?... */
	assert_non_null(strstr(p, "/.pulumi/stacks/proj/dev.json.gz?"));
	st_state_free(st);
	st = NULL;
	/* a key that is no object of the stack */
	lo.key = ".pulumi/stacks/proj/other.json";
	st_error_clear(&err);
	assert_int_equal(st_backend_load(b, qname, &lo, &st, &err), ST_EINVAL);
	assert_string_equal(err.message, "st_load_opts.key '.pulumi/stacks/proj/other.json' is no "
					 "object of stack 'organization/proj/dev'");
	assert_null(st);
	assert_int_equal(st_set_net(NULL, NULL), ST_OK);
	free(qname);
	free(key);
	free(text);
	free(fx);
	st_backend_free(b);
	st_store_free(s);
	rgw_free(&r);
}

/* What AWS answers and radosgw does not, from a fake server: a wrong region (a 400 with
 * <Region>, a HEAD's 301 with x-amz-bucket-region), a CopyObject that fails after its 200, a
 * truncated listing without a token, a listing's escaped keys. */
static void test_aws_answers(void **state)
{
	static const action acts[] = {
		{A_REPLY, 400, NULL,
		 "<Error><Code>AuthorizationHeaderMalformed</Code><Message>the region 'us-east-1' "
		 "is wrong; expecting 'eu-west-1'</Message><Region>eu-west-1</Region></Error>"},
		{A_REPLY, 301, "x-amz-bucket-region: eu-west-1\r\n", ""},
		{A_REPLY, 200, NULL, "<CopyObjectResult><ETag>x</ETag></CopyObjectResult>"},
		{A_REPLY, 200, NULL,
		 "<Error><Code>InternalError</Code><Message>copy failed</Message></Error>"},
		{A_REPLY, 200, NULL,
		 "<ListBucketResult><IsTruncated>true</IsTruncated><Contents><Key>p/a</Key>"
		 "</Contents></ListBucketResult>"},
		{A_REPLY, 200, NULL,
		 "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>p%2Fa%20%26"
		 "b%2Bc</Key><Size>3</Size><ETag>&quot;e1&quot;</ETag><LastModified>2024-05-01T"
		 "10:00:00.250Z</LastModified></Contents><Contents><Key>p%2Fnot%2F%2Fnameable</Key>"
		 "</Contents><Contents><Key>p%2Ffolder%2F</Key></Contents><CommonPrefixes><Prefix>"
		 "p%2Fd%2F</Prefix></CommonPrefixes></ListBucketResult>"},
		{A_REPLY, 404, NULL, "<Error><Code>NoSuchKey</Code></Error>"},
		{A_REPLY, 403, NULL, "<Error><Code>AccessDenied</Code><Message>no</Message></Error>"},
	};
	server *f = server_start(acts, (int)(sizeof(acts) / sizeof(acts[0])));
	char *url = st_asprintf("s3://b/p?endpoint=http://127.0.0.1:%d&use_path_style=true",
				f->port);
	st_store *s;
	st_error err;
	st_store_entry *e;
	size_t n;
	char *data;
	(void)state;
	setenv("AWS_ACCESS_KEY_ID", "AKTEST", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "sk-not-to-print", 1);
	unsetenv("AWS_REGION");
	unsetenv("AWS_DEFAULT_REGION");
	unsetenv("AWS_PROFILE");
	quick_net(0);
	assert_int_equal(st_store_open(&s, url, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_store_list(s, "", 0, &e, &n, &err), ST_EIO);
	assert_string_equal(err.message, "s3: bucket 'b' is in region 'eu-west-1', not 'us-east-1' "
					 "(from the default): add region=eu-west-1 to the URL or set "
					 "AWS_REGION");
	st_error_clear(&err);
	assert_int_equal(st_store_stat(s, "k", NULL, &err), ST_EIO);
	assert_non_null(strstr(err.message, "is in region 'eu-west-1', not 'us-east-1'"));
	/* a copy: one that works, one whose 200 carries an error */
	assert_int_equal(st_store_copy(s, "a b+c", "d/e", NULL), ST_OK);
	assert_string_equal(f->seen[2].method, "PUT");
	assert_string_equal(f->seen[2].path, "/b/p/d/e");
	assert_non_null(strstr(f->seen[2].headers, "x-amz-copy-source: /b/p/a%20b%2Bc\r\n"));
	st_error_clear(&err);
	assert_int_equal(st_store_copy(s, "a", "d/e", &err), ST_EIO);
	assert_non_null(strstr(err.message, "CopyObject 'b/p/d/e'"));
	assert_non_null(strstr(err.message, "InternalError: copy failed"));
	/* a truncated page without a token */
	st_error_clear(&err);
	assert_int_equal(st_store_list(s, "", 0, &e, &n, &err), ST_EIO);
	assert_non_null(strstr(err.message, "a truncated page without a continuation token"));
	/* escaped keys decoded; keys the store cannot name left out */
	assert_int_equal(st_store_list(s, "", ST_STORE_LIST_DIRS, &e, &n, NULL), ST_OK);
	assert_int_equal(n, 2);
	assert_string_equal(e[0].key, "a &b+c");
	assert_int_equal(e[0].info.size, 3);
	assert_string_equal(e[0].info.etag, "e1");
	assert_true(e[0].info.mtime_ns == 1714557600250000000LL);
	assert_string_equal(e[1].key, "d/");
	st_store_entries_free(e, n);
	assert_non_null(strstr(f->seen[5].path, "delimiter=%2F"));
	assert_non_null(strstr(f->seen[5].path, "prefix=p%2F"));
	assert_non_null(strstr(f->seen[5].path, "encoding-type=url"));
	/* NoSuchKey, AccessDenied */
	st_error_clear(&err);
	assert_int_equal(st_store_read(s, "k", 0, &data, &n, NULL, &err), ST_ENOTFOUND);
	assert_string_equal(err.message, "s3: no object 's3://b/p/k'");
	st_error_clear(&err);
	assert_int_equal(st_store_write(s, "k", "x", 1, NULL, &err), ST_EAUTH);
	assert_non_null(strstr(err.message, "refused the credentials for PutObject 'b/p/k': "
					    "AccessDenied: no; they came from AWS_ACCESS_KEY_ID and "
					    "AWS_SECRET_ACCESS_KEY (environment)"));
	assert_null(strstr(err.message, "sk-not-to-print"));
	/* every request was signed, none carried the secret */
	for (int i = 0; i < f->nseen; i++) {
		assert_non_null(strstr(f->seen[i].headers, "Authorization: AWS4-HMAC-SHA256 "
							   "Credential=AKTEST/"));
		assert_non_null(strstr(f->seen[i].headers, "x-amz-content-sha256: "));
		assert_null(strstr(f->seen[i].headers, "sk-not-to-print"));
	}
	st_store_free(s);
	free(url);
	server_stop(f);
	assert_int_equal(st_set_net(NULL, NULL), ST_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_table),   cmocka_unit_test(test_endpoint_from),
		cmocka_unit_test(test_wrong_credentials),
		cmocka_unit_test(test_missing_bucket), cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_failing_half_way), cmocka_unit_test(test_pages),
		cmocka_unit_test(test_aws_answers),    cmocka_unit_test(test_load_named_object),
	};
	unsetenv("http_proxy");
	unsetenv("HTTP_PROXY");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
