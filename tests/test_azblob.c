/*
 * The azblob store (lib/store/azblob*.c):
 *  - the URL, its parameters, the environment and connection strings, table-driven, read as
 *    gocloud.dev's azureblob driver reads them for Pulumi (precedence, the emulator's path form,
 *    errors that name the variables and never a secret);
 *  - the Shared Key signer against Microsoft's worked examples (fixtures/azblob/shared-key.json)
 *    and rules of our own; gocloud's key escaping;
 *  - on Azurite (sh tests/servers/ctl start azurite; skipped without it, except in CI): a
 *    write in blocks with a lowered threshold, create-only in blocks, a refused proceed after the
 *    blocks are up, wrong key, missing container, unreachable endpoint, and a server failing
 *    half-way (a proxy of the test's own between the store and Azurite) with nothing changed.
 */
#include "testutil.h"

#include "httpfake.h"
#include "servers.h"
#include "store/azblob.h"
#include "store/store_impl.h"

#include <sodium.h>

/* the storage emulator's published development key */
#define DEV_KEY                                                                                \
	"Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

/* ---- the configuration ---- */

typedef struct env_tab {
	const char *v[8][2];
} env_tab;

static const char *tab_env(void *ctx, const char *name)
{
	env_tab *t = ctx;
	for (int i = 0; i < 8 && t->v[i][0]; i++)
		if (!strcmp(t->v[i][0], name))
			return t->v[i][1];
	return NULL;
}

typedef struct cfg_case {
	const char *url;
	env_tab env;
	int rc;
	/* expected on success */
	const char *container, *prefix, *service;
	st_azblob_auth auth;
	const char *account, *sas;
	const char *note; /* a part of the note (success) or of the message (failure) */
} cfg_case;

#define E(...) {{__VA_ARGS__}}
#define ACCT {"AZURE_STORAGE_ACCOUNT", "acct"}
#define KEY {"AZURE_STORAGE_KEY", DEV_KEY}
#define SAS {"AZURE_STORAGE_SAS_TOKEN", "sv=2021-08-06&sig=SECRETSIG"}
#define CS(s) {"AZURE_STORAGE_CONNECTION_STRING", s}

static const cfg_case cfg_cases[] = {
	/* the service URL */
	{"azblob://state", E(ACCT, KEY), ST_OK, "state", "", "https://acct.blob.core.windows.net",
	 ST_AZBLOB_SHARED_KEY, "acct", NULL,
	 "credentials: Shared Key of account 'acct' from AZURE_STORAGE_ACCOUNT and "
	 "AZURE_STORAGE_KEY, service https://acct.blob.core.windows.net from AZURE_STORAGE_ACCOUNT"},
	{"azblob://state/a/b", E(ACCT, KEY), ST_OK, "state", "a/b/", "https://acct.blob.core.windows.net",
	 ST_AZBLOB_SHARED_KEY, "acct", NULL, NULL},
	{"azblob://state//a/b/#frag", E(ACCT, KEY), ST_OK, "state", "a/b/",
	 "https://acct.blob.core.windows.net", ST_AZBLOB_SHARED_KEY, "acct", NULL, NULL},
	{"azblob://state/a%20b?", E(ACCT, KEY), ST_OK, "state", "a b/",
	 "https://acct.blob.core.windows.net", ST_AZBLOB_SHARED_KEY, "acct", NULL, NULL},
	{"azblob://c?domain=127.0.0.1:10000&protocol=http", E(ACCT, KEY), ST_OK, "c", "",
	 "http://127.0.0.1:10000/acct", ST_AZBLOB_SHARED_KEY, "acct", NULL,
	 "from AZURE_STORAGE_ACCOUNT, parameter domain, parameter protocol"},
	{"azblob://c?domain=localhost:10000", E(ACCT, KEY), ST_OK, "c", "",
	 "https://localhost:10000/acct", ST_AZBLOB_SHARED_KEY, "acct", NULL, NULL},
	{"azblob://c?domain=localhost.example.com", E(ACCT, KEY), ST_OK, "c", "",
	 "https://localhost.example.com/acct", ST_AZBLOB_SHARED_KEY, "acct", NULL, NULL},
	{"azblob://c?localemu=true&domain=emu.example:8080&protocol=http", E(ACCT, KEY), ST_OK, "c",
	 "", "http://emu.example:8080/acct", ST_AZBLOB_SHARED_KEY, "acct", NULL, NULL},
	{"azblob://c?localemu=0&domain=blob.core.usgovcloudapi.net", E(ACCT, KEY), ST_OK, "c", "",
	 "https://acct.blob.core.usgovcloudapi.net", ST_AZBLOB_SHARED_KEY, "acct", NULL, NULL},
	{"azblob://c?cdn=t&domain=cdn.example.com", E(ACCT, KEY), ST_OK, "c", "",
	 "https://cdn.example.com", ST_AZBLOB_SHARED_KEY, "acct", NULL, NULL},
	{"azblob://c", E(ACCT, KEY, {"AZURE_STORAGE_DOMAIN", "127.0.0.1:10000"},
			 {"AZURE_STORAGE_PROTOCOL", "http"}),
	 ST_OK, "c", "", "http://127.0.0.1:10000/acct", ST_AZBLOB_SHARED_KEY, "acct", NULL,
	 "from AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_DOMAIN, AZURE_STORAGE_PROTOCOL"},
	{"azblob://c", E(ACCT, KEY, {"AZURE_STORAGE_DOMAIN", "emu:1"},
			 {"AZURE_STORAGE_IS_LOCAL_EMULATOR", "TRUE"}),
	 ST_OK, "c", "", "https://emu:1/acct", ST_AZBLOB_SHARED_KEY, "acct", NULL, NULL},
	/* a variable's value gocloud cannot parse is false; the parameter overrides it */
	{"azblob://c", E(ACCT, KEY, {"AZURE_STORAGE_DOMAIN", "cdn.x"}, {"AZURE_STORAGE_IS_CDN", "yes"}),
	 ST_OK, "c", "", "https://acct.cdn.x", ST_AZBLOB_SHARED_KEY, "acct", NULL, NULL},
	{"azblob://c?domain=other.example&protocol=https",
	 E(ACCT, KEY, {"AZURE_STORAGE_DOMAIN", "127.0.0.1:1"}, {"AZURE_STORAGE_PROTOCOL", "http"}),
	 ST_OK, "c", "", "https://acct.other.example", ST_AZBLOB_SHARED_KEY, "acct", NULL, NULL},
	/* credentials: Shared Key signs with the variable's account, whatever the URL says */
	{"azblob://c?storage_account=other", E(ACCT, KEY), ST_OK, "c", "",
	 "https://other.blob.core.windows.net", ST_AZBLOB_SHARED_KEY, "acct", NULL, NULL},
	{"azblob://c", E(ACCT, {"AZURE_STORAGE_KEY", DEV_KEY "\n"}), ST_OK, "c", "",
	 "https://acct.blob.core.windows.net", ST_AZBLOB_SHARED_KEY, "acct", NULL, NULL},
	{"azblob://c", E(ACCT, KEY, SAS), ST_OK, "c", "", "https://acct.blob.core.windows.net",
	 ST_AZBLOB_SHARED_KEY, "acct", "sv=2021-08-06&sig=SECRETSIG", "(and AZURE_STORAGE_SAS_TOKEN)"},
	{"azblob://c", E(ACCT, SAS), ST_OK, "c", "", "https://acct.blob.core.windows.net", ST_AZBLOB_SAS,
	 NULL, "sv=2021-08-06&sig=SECRETSIG",
	 "credentials: the SAS token in AZURE_STORAGE_SAS_TOKEN, service "
	 "https://acct.blob.core.windows.net from AZURE_STORAGE_ACCOUNT"},
	{"azblob://c?storage_account=viaurl", E(KEY, {"AZURE_STORAGE_SAS_TOKEN", "?sv=1&sig=x"}), ST_OK,
	 "c", "", "https://viaurl.blob.core.windows.net", ST_AZBLOB_SAS, NULL, "sv=1&sig=x",
	 "from parameter storage_account"},
	{"azblob://c", E(ACCT), ST_EUNSUPPORTED, NULL, NULL, NULL, 0, NULL, NULL,
	 "azblob: no credentials: set AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, "
	 "AZURE_STORAGE_SAS_TOKEN or AZURE_STORAGE_CONNECTION_STRING (Microsoft Entra ID "
	 "credentials, which Pulumi tries last, are not supported)"},
	{"azblob://c?storage_account=x", E(KEY), ST_EUNSUPPORTED, NULL, NULL, NULL, 0, NULL, NULL,
	 "no credentials"},
	/* connection strings: their endpoint and credentials */
	{"azblob://c",
	 E(CS("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" DEV_KEY
	      ";BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;")),
	 ST_OK, "c", "", "http://127.0.0.1:10000/devstoreaccount1", ST_AZBLOB_SHARED_KEY,
	 "devstoreaccount1", NULL,
	 "credentials: Shared Key of account 'devstoreaccount1' from AZURE_STORAGE_CONNECTION_STRING "
	 "(AccountName, AccountKey), service http://127.0.0.1:10000/devstoreaccount1 from "
	 "AZURE_STORAGE_CONNECTION_STRING"},
	{"azblob://c",
	 E(CS("DefaultEndpointsProtocol=http;AccountName=cs;AccountKey=" DEV_KEY
	      ";EndpointSuffix=core.chinacloudapi.cn;;")),
	 ST_OK, "c", "", "http://cs.blob.core.chinacloudapi.cn", ST_AZBLOB_SHARED_KEY, "cs", NULL, NULL},
	{"azblob://c", E(CS("AccountName=cs;AccountKey=" DEV_KEY)), ST_OK, "c", "",
	 "https://cs.blob.core.windows.net", ST_AZBLOB_SHARED_KEY, "cs", NULL, NULL},
	/* the endpoint the URL's parameters make is checked, then unused */
	{"azblob://c?domain=ignored.example",
	 E(CS("AccountName=cs;AccountKey=" DEV_KEY ";BlobEndpoint=https://h.example/base/")), ST_OK,
	 "c", "", "https://h.example/base", ST_AZBLOB_SHARED_KEY, "cs", NULL, NULL},
	{"azblob://c?protocol=ftp", E(CS("AccountName=cs;AccountKey=" DEV_KEY)), ST_EINVAL, NULL,
	 NULL, NULL, 0, NULL, NULL, "azblob: invalid protocol \"ftp\" (http or https)"},
	/* AZURE_STORAGE_ACCOUNT names the account of the service URL (checked, unused) */
	{"azblob://c", E(ACCT, CS("AccountName=cs;AccountKey=" DEV_KEY ";BlobEndpoint=http://e:1/cs")),
	 ST_OK, "c", "", "http://e:1/cs", ST_AZBLOB_SHARED_KEY, "cs", NULL, NULL},
	{"azblob://c?storage_account=s",
	 E(CS("BlobEndpoint=http://e:1/acct;SharedAccessSignature=sv=2&sig=S%2B=")), ST_OK, "c", "",
	 "http://e:1/acct", ST_AZBLOB_SAS, NULL, "sv=2&sig=S%2B=",
	 "credentials: the SAS token in AZURE_STORAGE_CONNECTION_STRING (SharedAccessSignature)"},
	{"azblob://c", E(CS("BlobEndpoint=http://e:1/acct;SharedAccessSignature=sv=2&sig=S")),
	 ST_EINVAL, NULL, NULL, NULL, 0, NULL, NULL,
	 "azblob: no storage account: set AZURE_STORAGE_ACCOUNT or the storage_account parameter"},
	{"azblob://c", E({"AZURE_STORAGEBLOB_CONNECTIONSTRING", "AccountName=alt;AccountKey=" DEV_KEY}),
	 ST_OK, "c", "", "https://alt.blob.core.windows.net", ST_AZBLOB_SHARED_KEY, "alt", NULL,
	 "from AZURE_STORAGEBLOB_CONNECTIONSTRING"},
	/* AccountName and AccountKey win over SharedAccessSignature */
	{"azblob://c", E(CS("SharedAccessSignature=sv=1;AccountName=cs;AccountKey=" DEV_KEY)), ST_OK,
	 "c", "", "https://cs.blob.core.windows.net", ST_AZBLOB_SHARED_KEY, "cs", NULL, NULL},
	/* AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY win over a connection string */
	{"azblob://c", E(ACCT, KEY, CS("AccountName=cs;AccountKey=" DEV_KEY)), ST_OK, "c", "",
	 "https://acct.blob.core.windows.net", ST_AZBLOB_SHARED_KEY, "acct", NULL, NULL},
	{"azblob://c", E(CS("AccountName=cs;AccountKey=SECRETKEY;;x")), ST_EINVAL, NULL, NULL, NULL, 0,
	 NULL, NULL,
	 "azblob: AZURE_STORAGE_CONNECTION_STRING is either blank or malformed: it should hold "
	 "key=value pairs separated by semicolons"},
	{"azblob://c", E(CS("AccountName=cs")), ST_EINVAL, NULL, NULL, NULL, 0, NULL, NULL,
	 "azblob: AZURE_STORAGE_CONNECTION_STRING needs either AccountKey or SharedAccessSignature"},
	{"azblob://c?storage_account=x", E(CS("AccountKey=SECRETKEY")), ST_EINVAL, NULL, NULL, NULL, 0,
	 NULL, NULL,
	 "azblob: AZURE_STORAGE_CONNECTION_STRING needs either AccountName or BlobEndpoint"},
	{"azblob://c", E(CS("AccountName=cs;AccountKey=SECRET!KEY")), ST_EINVAL, NULL, NULL, NULL, 0,
	 NULL, NULL,
	 "azblob: the AccountKey in the connection string is not a base64 account key"},
	{"azblob://c",
	 E(CS("AccountName=cs;AccountKey=" DEV_KEY ";BlobEndpoint=ftp://SECRETHOST/x")),
	 ST_EINVAL, NULL, NULL, NULL, 0, NULL, NULL,
	 "azblob: the blob endpoint in AZURE_STORAGE_CONNECTION_STRING is not an http:// or https:// "
	 "URL without a query"},
	/* bad URLs and values */
	{"azblob://c?region=x", E(ACCT, KEY), ST_EINVAL, NULL, NULL, NULL, 0, NULL, NULL,
	 "azblob: unknown query parameter \"region\" (azblob:// takes storage_account, domain, "
	 "protocol, cdn and localemu)"},
	{"azblob://c?domain=a&domain=b", E(ACCT, KEY), ST_EINVAL, NULL, NULL, NULL, 0, NULL, NULL,
	 "azblob: multiple values of domain not allowed"},
	{"azblob://c?localemu=maybe", E(ACCT, KEY), ST_EINVAL, NULL, NULL, NULL, 0, NULL, NULL,
	 "azblob: invalid value \"maybe\" for parameter localemu: a boolean (true, false, 1, 0, t, "
	 "f) is expected"},
	{"azblob://c?cdn", E(ACCT, KEY), ST_EINVAL, NULL, NULL, NULL, 0, NULL, NULL,
	 "invalid value \"\" for parameter cdn"},
	{"azblob://c?protocol=HTTP", E(ACCT, KEY), ST_EINVAL, NULL, NULL, NULL, 0, NULL, NULL,
	 "azblob: invalid protocol \"HTTP\" (http or https)"},
	{"azblob://c/%zz", E(ACCT, KEY), ST_EINVAL, NULL, NULL, NULL, 0, NULL, NULL,
	 "azblob: invalid URL escape in the path of 'azblob://c/%zz'"},
	{"azblob:///prefix", E(ACCT, KEY), ST_EINVAL, NULL, NULL, NULL, 0, NULL, NULL,
	 "azblob: 'azblob:///prefix' names no container (azblob://CONTAINER[/PREFIX])"},
	{"azblob://c", E(KEY), ST_EINVAL, NULL, NULL, NULL, 0, NULL, NULL,
	 "azblob: no storage account: set AZURE_STORAGE_ACCOUNT or the storage_account parameter "
	 "(azblob://CONTAINER?storage_account=NAME)"},
	{"azblob://c?storage_account=", E(ACCT, KEY), ST_EINVAL, NULL, NULL, NULL, 0, NULL, NULL,
	 "no storage account"},
	{"azblob://c", E(ACCT, {"AZURE_STORAGE_KEY", "SECRET!KEY"}), ST_EINVAL, NULL, NULL, NULL, 0,
	 NULL, NULL, "azblob: AZURE_STORAGE_KEY is not a base64 account key"},
};

static void test_config_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cfg_cases) / sizeof(cfg_cases[0]); i++) {
		const cfg_case *c = &cfg_cases[i];
		st_azblob_cfg cfg;
		st_error err;
		env_tab env = c->env;
		st_error_clear(&err);
		int rc = st__azblob_config(&cfg, c->url, tab_env, &env, &err);
		if (rc != c->rc)
			fail_msg("%s: %d (%s), expected %d", c->url, rc, err.message, c->rc);
		if (rc != ST_OK) {
			if (!strstr(err.message, c->note))
				fail_msg("%s: message '%s' lacks '%s'", c->url, err.message, c->note);
			/* never a secret in a message */
			assert_null(strstr(err.message, "SECRET"));
			assert_null(strstr(err.message, DEV_KEY));
			st__azblob_cfg_free(&cfg);
			continue;
		}
		assert_string_equal(cfg.container, c->container);
		assert_string_equal(cfg.prefix, c->prefix);
		if (strcmp(cfg.service, c->service))
			fail_msg("%s: service %s, expected %s", c->url, cfg.service, c->service);
		assert_int_equal(cfg.auth, c->auth);
		if (c->account)
			assert_string_equal(cfg.account, c->account);
		if (c->auth == ST_AZBLOB_SHARED_KEY) {
			assert_int_equal(cfg.key_len, 64);
			assert_int_equal(cfg.key[0], 0x11); /* base64 "Eby8" */
		}
		if (c->sas)
			assert_string_equal(cfg.sas, c->sas);
		else
			assert_null(cfg.sas);
		if (c->note && !strstr(cfg.note, c->note))
			fail_msg("%s: note '%s' lacks '%s'", c->url, cfg.note, c->note);
		assert_null(strstr(cfg.note, "SECRET"));
		assert_null(strstr(cfg.note, DEV_KEY));
		st__azblob_cfg_free(&cfg);
	}
}

/* ---- the signer ---- */

static void test_signer_microsoft(void **state)
{
	char *path = tu_fixture("azblob/shared-key.json");
	size_t len;
	char *text = tu_read(path, &len);
	json_t *doc = tu_json(text), *c;
	size_t i;
	unsigned char key[64];
	size_t klen;
	(void)state;
	assert_int_equal(sodium_base642bin(key, sizeof(key),
					   json_string_value(json_object_get(doc, "dev_key")),
					   strlen(DEV_KEY), NULL, &klen, NULL,
					   sodium_base64_VARIANT_ORIGINAL),
			 0);
	json_array_foreach(json_object_get(doc, "cases"), i, c)
	{
		json_t *hj = json_object_get(c, "headers"), *v;
		const char *name;
		st_http_hdr h[8];
		size_t n = 0;
		json_object_foreach(hj, name, v)
		{
			h[n].name = (char *)name;
			h[n].value = (char *)json_string_value(v);
			n++;
		}
		st_azblob_sign_in in = {json_string_value(json_object_get(c, "method")),
					json_string_value(json_object_get(c, "account")),
					json_string_value(json_object_get(c, "path")),
					json_string_value(json_object_get(c, "query")),
					h,
					n,
					json_integer_value(json_object_get(c, "content_length")),
					key,
					klen};
		char *authz, *sts;
		assert_int_equal(st__azblob_sign(&in, &authz, &sts, NULL), ST_OK);
		const char *want = json_string_value(json_object_get(c, "string_to_sign"));
		const char *res = json_string_value(json_object_get(c, "resource"));
		const char *az = json_string_value(json_object_get(c, "authorization"));
		if (want && strcmp(sts, want))
			fail_msg("%s:\n%s\nexpected\n%s", json_string_value(json_object_get(c, "name")),
				 sts, want);
		if (res) {
			size_t sl = strlen(sts), rl = strlen(res);
			if (sl < rl || strcmp(sts + sl - rl, res) || sts[sl - rl - 1] != '\n')
				fail_msg("%s: %s does not end in the resource %s",
					 json_string_value(json_object_get(c, "name")), sts, res);
		}
		if (az)
			assert_string_equal(authz, az);
		free(authz);
		free(sts);
	}
	json_decref(doc);
	free(text);
	free(path);
}

/* HMAC-SHA256 of `sts` with the development key, as "SharedKey ACCOUNT:BASE64". */
static char *expected_authz(const char *account, const char *sts)
{
	unsigned char key[64], mac[32];
	size_t klen;
	char b64[64];
	sodium_base642bin(key, sizeof(key), DEV_KEY, strlen(DEV_KEY), NULL, &klen, NULL,
			  sodium_base64_VARIANT_ORIGINAL);
	crypto_auth_hmacsha256_state st;
	crypto_auth_hmacsha256_init(&st, key, klen);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)sts, strlen(sts));
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_bin2base64(b64, sizeof(b64), mac, sizeof(mac), sodium_base64_VARIANT_ORIGINAL);
	return st_asprintf("SharedKey %s:%s", account, b64);
}

static void test_signer_rules(void **state)
{
	static const struct {
		const char *method, *path, *query;
		st_http_hdr h[8];
		long long clen;
		const char *sts;
	} cases[] = {
		/* standard headers in their places (Date left empty: x-ms-date is there), x-ms-*
		 * names lowercased and sorted, values trimmed and white space collapsed, other
		 * headers left out */
		{"PUT",
		 "/devstoreaccount1/c/a%20b/k.json",
		 NULL,
		 {{"X-MS-Version", "2021-08-06"},
		  {"x-ms-date", "Fri, 26 Jun 2015 23:39:12 GMT"},
		  {"If-None-Match", "*"},
		  {"Content-Type", "  text/plain;   charset=utf-8 "},
		  {"Date", "ignored"},
		  {"x-ms-blob-type", "BlockBlob"},
		  {"Accept", "*/*"},
		  {"x-ms-meta-A", " two  words\t "}},
		 11,
		 "PUT\n\n\n11\n\ntext/plain; charset=utf-8\n\n\n\n*\n\n\n"
		 "x-ms-blob-type:BlockBlob\nx-ms-date:Fri, 26 Jun 2015 23:39:12 GMT\nx-ms-meta-a:two "
		 "words\nx-ms-version:2021-08-06\n/acct/devstoreaccount1/c/a%20b/k.json"},
		/* every standard header; the query decoded, names lowercased, values sorted */
		{"GET",
		 "/c",
		 "restype=container&comp=list&prefix=a%2Fb%20c&Marker=2%211&include=b&include=a",
		 {{"Content-Encoding", "gzip"},
		  {"Content-Language", "en"},
		  {"Content-MD5", "md5"},
		  {"If-Modified-Since", "ims"},
		  {"If-Match", "im"},
		  {"If-Unmodified-Since", "ius"},
		  {"Range", "bytes=0-1"},
		  {"x-ms-date", "d"}},
		 0,
		 "GET\ngzip\nen\n\nmd5\n\n\nims\nim\n\nius\nbytes=0-1\nx-ms-date:d\n"
		 "/acct/c\ncomp:list\ninclude:a,b\nmarker:2!1\nprefix:a/b c\nrestype:container"},
		/* a copy: the source URL (with its SAS token) is signed as a header */
		{"PUT",
		 "/c/dst",
		 "sv=2021&sig=a%2Bb",
		 {{"x-ms-copy-source", "http://h/c/src?sv=2021&sig=a%2Bb"}, {"x-ms-date", "d"}},
		 0,
		 "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-copy-source:http://h/c/src?sv=2021&sig=a%2Bb\n"
		 "x-ms-date:d\n/acct/c/dst\nsig:a+b\nsv:2021"},
	};
	unsigned char key[64];
	size_t klen;
	(void)state;
	sodium_base642bin(key, sizeof(key), DEV_KEY, strlen(DEV_KEY), NULL, &klen, NULL,
			  sodium_base64_VARIANT_ORIGINAL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = 0;
		while (n < 8 && cases[i].h[n].name)
			n++;
		st_azblob_sign_in in = {cases[i].method, "acct", cases[i].path, cases[i].query,
					cases[i].h, n, cases[i].clen, key, klen};
		char *authz, *sts, *want;
		assert_int_equal(st__azblob_sign(&in, &authz, &sts, NULL), ST_OK);
		assert_string_equal(sts, cases[i].sts);
		want = expected_authz("acct", cases[i].sts);
		assert_string_equal(authz, want);
		free(want);
		free(authz);
		free(sts);
	}
}

/* ---- keys ---- */

static void test_key_escaping(void **state)
{
	static const struct {
		const char *key;
		int prefix;
		const char *stored;
	} cases[] = {
		{".pulumi/stacks/proj/dev.json", 0, ".pulumi/stacks/proj/dev.json"},
		{"a#b?c%d\"e", 0, "a__0x23__b__0x3f__c__0x25__d__0x22__e"},
		{"tab\there\\x\x7f", 0, "tab__0x9__here__0x5c__x__0x7f__"},
		{"dir/", 0, "dir__0x2f__"},
		{"dir/", 1, "dir/"},
		{"a../b/../c", 0, "a..__0x2f__b/..__0x2f__c"},
		{"../x", 1, "..__0x2f__x"},
		/* text that would read as an escape is escaped itself */
		{"__0x41__", 0, "__0x5f___0x41__"},
		{"x__0x2f__y", 0, "x__0x5f___0x2f__y"},
		{"__0x__ and __0xg__", 0, "__0x__ and __0xg__"},
		{"caf\xc3\xa9/\xe2\x98\xba", 0, "caf\xc3\xa9/\xe2\x98\xba"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *e = st__azblob_escape_key(cases[i].key, cases[i].prefix);
		assert_string_equal(e, cases[i].stored);
		char *u = st__azblob_unescape_key(e);
		assert_string_equal(u, cases[i].key);
		free(e);
		free(u);
	}
	static const struct {
		const char *stored, *key;
	} un[] = {
		{"__0x263a__", "\xe2\x98\xba"},
		{"__0x1f600__x", "\xf0\x9f\x98\x80x"},
		{"__0x-1__", "\xef\xbf\xbd"},
		{"__0xd800__", "\xef\xbf\xbd"},
		{"__0x7fffffff__", "\xef\xbf\xbd"},
		{"__0x80000000__", "__0x80000000__"},
		{"__0xzz__", "__0xzz__"},
		{"__0x41_", "__0x41_"},
	};
	for (size_t i = 0; i < sizeof(un) / sizeof(un[0]); i++) {
		char *u = st__azblob_unescape_key(un[i].stored);
		assert_string_equal(u, un[i].key);
		free(u);
	}
}

/* ---- against a fake server: what Azurite never sends ---- */

/* A listing with a name the service marks Encoded="true" (characters XML cannot hold, percent-
 * encoded), and an error whose AuthenticationErrorDetail quotes what was signed. */
static void test_fake_answers(void **state)
{
	static const char listing[] =
		"<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults><Prefix>base/</Prefix>"
		"<Blobs><Blob><Name Encoded=\"true\">base%2Fx%20y.json</Name><Properties>"
		"<Last-Modified>Tue, 10 Nov 2020 00:49:58 GMT</Last-Modified><Etag>0x8D1</Etag>"
		"<Content-Length>7</Content-Length></Properties></Blob>"
		"<BlobPrefix><Name>base/dir/</Name></BlobPrefix>"
		"<Blob><Name>base/a&amp;b</Name><Properties><Content-Length>2</Content-Length>"
		"</Properties></Blob><Blob><Name>elsewhere</Name></Blob></Blobs><NextMarker />"
		"</EnumerationResults>";
	static const char denied[] =
		"<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>AuthenticationFailed</Code>"
		"<Message>Server failed to authenticate the request.\nRequestId:1\nTime:2</Message>"
		"<AuthenticationErrorDetail>The MAC signature found in the HTTP request "
		"'SIGNATURESECRET=' is not the same as any computed signature</AuthenticationErrorDetail>"
		"</Error>";
	action acts[] = {{A_REPLY, 200, "Content-Type: application/xml\r\n", listing},
			 {A_REPLY, 403, "x-ms-error-code: AuthenticationFailed\r\n", denied}};
	server *f = server_start(acts, 2);
	char via[32], *url;
	st_store *s = NULL;
	st_store_entry *e = NULL;
	size_t n = 0;
	st_error err;
	(void)state;
	snprintf(via, sizeof(via), "127.0.0.1:%d", f->port);
	unsetenv("AZURE_STORAGE_CONNECTION_STRING");
	unsetenv("AZURE_STORAGE_SAS_TOKEN");
	setenv("AZURE_STORAGE_ACCOUNT", "devstoreaccount1", 1);
	setenv("AZURE_STORAGE_KEY", DEV_KEY, 1);
	url = st_asprintf("azblob://c/base?domain=%s&protocol=http", via);
	assert_int_equal(st_store_open(&s, url, NULL), ST_OK);
	unsetenv("AZURE_STORAGE_ACCOUNT");
	unsetenv("AZURE_STORAGE_KEY");
	assert_int_equal(st_store_list(s, "", ST_STORE_LIST_DIRS, &e, &n, NULL), ST_OK);
	assert_int_equal(n, 3);
	assert_string_equal(e[0].key, "a&b");
	assert_int_equal(e[0].info.size, 2);
	assert_string_equal(e[1].key, "dir/");
	assert_string_equal(e[2].key, "x y.json");
	assert_int_equal(e[2].info.size, 7);
	assert_true(e[2].info.mtime_ns == 1604969398LL * 1000000000LL);
	assert_string_equal(e[2].info.etag, "0x8D1");
	st_store_entries_free(e, n);
	/* what was asked, signed */
	assert_string_equal(f->seen[0].method, "GET");
	assert_string_equal(f->seen[0].path, "/devstoreaccount1/c?restype=container&comp=list&"
					     "maxresults=5000&prefix=base%2F&delimiter=%2F");
	assert_non_null(strstr(f->seen[0].headers, "Authorization: SharedKey devstoreaccount1:"));
	assert_non_null(strstr(f->seen[0].headers, "x-ms-version: " ST_AZBLOB_VERSION));
	/* the error: code and first line of the message, never the quoted signature */
	st_error_clear(&err);
	assert_int_equal(st_store_stat(s, "k", NULL, &err), ST_EAUTH);
	st_error_clear(&err);
	char *data;
	size_t len;
	assert_int_equal(st_store_read(s, "k", 0, &data, &len, NULL, &err), ST_EAUTH);
	char *want = st_asprintf("azblob: GetBlob 'c/base/k' on %s failed: HTTP 403 "
				 "AuthenticationFailed: Server failed to authenticate the request; "
				 "credentials: Shared Key of account 'devstoreaccount1' from "
				 "AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, service "
				 "http://%s/devstoreaccount1 from AZURE_STORAGE_ACCOUNT, parameter "
				 "domain, parameter protocol",
				 via, via);
	assert_string_equal(err.message, want);
	assert_null(strstr(err.message, "SIGNATURESECRET"));
	free(want);
	st_store_free(s);
	free(url);
	server_stop(f);
}

/* ---- on Azurite ---- */

typedef struct azurite {
	char *endpoint, *account, *key, *host; /* host: 127.0.0.1:PORT */
	int port;
} azurite;

static azurite az;
static int az_state; /* 0: not looked for, 1: there, -1: not there (skipped) */

/* Fills `az`; 0 when Azurite is there, 1 when the test is to be skipped. */
static int azurite_find(void)
{
	if (az_state)
		return az_state > 0 ? 0 : 1;
	az.endpoint = tu_server_var("ST_TEST_AZURE_ENDPOINT");
	az.account = tu_server_var("ST_TEST_AZURE_ACCOUNT");
	az.key = tu_server_var("ST_TEST_AZURE_KEY");
	if (!az.endpoint || !az.account || !az.key || strncmp(az.endpoint, "http://", 7)) {
		if (tu_servers_required())
			fail_msg("no Azurite (ST_TEST_AZURE_* in the servers' env file) and $CI is "
				 "set: a skip is a failure there");
		print_message("azblob: skipped, no test server (sh tests/servers/ctl start "
			      "azurite)\n");
		az_state = -1;
		return 1;
	}
	az.host = st_strndup(az.endpoint + 7, strcspn(az.endpoint + 7, "/"));
	az.port = atoi(strchr(az.host, ':') + 1);
	az_state = 1;
	return 0;
}

/* Sets the variables of a Shared Key login with `key` (NULL: Azurite's). */
static void env_shared_key(const char *key)
{
	unsetenv("AZURE_STORAGE_CONNECTION_STRING");
	unsetenv("AZURE_STORAGE_SAS_TOKEN");
	setenv("AZURE_STORAGE_ACCOUNT", az.account, 1);
	setenv("AZURE_STORAGE_KEY", key ? key : az.key, 1);
}

/* A store on container `c` (created when `create`), prefix `prefix`, through host:port `via`
 * (NULL: Azurite itself). */
static st_store *open_at(const char *c, const char *prefix, const char *via, int create)
{
	st_store *s = NULL;
	st_error err;
	char *url = st_asprintf("azblob://%s/%s?domain=%s&protocol=http", c, prefix,
				via ? via : az.host);
	st_error_clear(&err);
	if (st_store_open(&s, url, &err) != ST_OK)
		fail_msg("open %s: %s", url, err.message);
	if (create && st__azblob_container_create(s, &err) != ST_OK)
		fail_msg("create %s: %s", c, err.message);
	free(url);
	return s;
}

static char *new_container(void)
{
	char rnd[17];
	st_random_hex(rnd, 8);
	return st_asprintf("test-azblob-%s", rnd);
}

static void expect_content(st_store *s, const char *key, const void *want, size_t n)
{
	char *data = NULL;
	size_t len = 0;
	st_error err;
	st_error_clear(&err);
	if (st_store_read(s, key, 0, &data, &len, NULL, &err) != ST_OK)
		fail_msg("read %s: %s", key, err.message);
	assert_int_equal(len, n);
	assert_memory_equal(data, want, n);
	free(data);
}

static char *keys(st_store *s, const char *prefix)
{
	st_store_entry *e;
	size_t n;
	st_buf b;
	assert_int_equal(st_store_list(s, prefix, 0, &e, &n, NULL), ST_OK);
	st_buf_init(&b);
	st_buf_add(&b, "", 0);
	for (size_t i = 0; i < n; i++)
		st_buf_printf(&b, "%s%s", i ? " " : "", e[i].key);
	st_store_entries_free(e, n);
	return st_buf_take(&b, NULL);
}

static int refuse(void *ctx)
{
	(void)ctx;
	return ST_EINTEGRITY;
}

/* Writes in blocks: a threshold of 1000 bytes and blocks of 300. */
static void test_azurite_blocks(void **state)
{
	char *c, *k, buf[2500];
	st_store *s;
	st_error err;
	st_store_write_opts o = ST_STORE_WRITE_OPTS_INIT;
	(void)state;
	if (azurite_find())
		skip();
	env_shared_key(NULL);
	c = new_container();
	s = open_at(c, "p", NULL, 1);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)('a' + i % 26);
	st__azblob_test_sizes(1000, 300, 0);
	/* 2500 bytes: 9 blocks (8 of 300, one of 100) and the list */
	unsigned long before = st__http_attempts();
	assert_int_equal(st_store_write(s, "big.json", buf, sizeof(buf), NULL, NULL), ST_OK);
	assert_int_equal(st__http_attempts() - before, 10);
	expect_content(s, "big.json", buf, sizeof(buf));
	/* exactly the threshold: one Put Blob; one byte more: blocks */
	before = st__http_attempts();
	assert_int_equal(st_store_write(s, "at.json", buf, 1000, NULL, NULL), ST_OK);
	assert_int_equal(st__http_attempts() - before, 1);
	expect_content(s, "at.json", buf, 1000);
	before = st__http_attempts();
	assert_int_equal(st_store_write(s, "at.json", buf + 1, 1001, NULL, NULL), ST_OK);
	assert_int_equal(st__http_attempts() - before, 5);
	expect_content(s, "at.json", buf + 1, 1001);
	/* create-only in blocks: refused on an existing blob, which stays as it was */
	o.flags = ST_STORE_CREATE_ONLY;
	st_error_clear(&err);
	assert_int_equal(st_store_write(s, "big.json", buf + 5, 2000, &o, &err), ST_EEXIST);
	assert_non_null(strstr(err.message, "409 BlobAlreadyExists"));
	expect_content(s, "big.json", buf, sizeof(buf));
	assert_int_equal(st_store_write(s, "new.json", buf + 5, 2000, &o, NULL), ST_OK);
	expect_content(s, "new.json", buf + 5, 2000);
	/* the blocks are up when proceed is asked; refused, nothing becomes visible */
	o.flags = 0;
	o.proceed = refuse;
	o.backup_key = "big.json.bak";
	assert_int_equal(st_store_write(s, "big.json", buf + 7, 2100, &o, NULL), ST_EINTEGRITY);
	assert_int_equal(st_store_write(s, "none.json", buf + 7, 2100, &o, NULL), ST_EINTEGRITY);
	expect_content(s, "big.json", buf, sizeof(buf));
	k = keys(s, "");
	assert_string_equal(k, "at.json big.json new.json");
	free(k);
	/* accepted: the old one is kept under the backup key (a server-side copy) */
	o.proceed = NULL;
	assert_int_equal(st_store_write(s, "big.json", buf + 7, 2100, &o, NULL), ST_OK);
	expect_content(s, "big.json", buf + 7, 2100);
	expect_content(s, "big.json.bak", buf, sizeof(buf));
	st__azblob_test_sizes(0, 0, 0);
	assert_int_equal(st__azblob_container_delete(s, NULL), ST_OK);
	st_store_free(s);
	free(c);
}

/* Listings in pages of the service's size, names gocloud escapes, levels, times. */
static void test_azurite_listing(void **state)
{
	char *c, *k;
	st_store *s;
	st_store_entry *e;
	size_t n;
	st_store_info info;
	(void)state;
	if (azurite_find())
		skip();
	env_shared_key(NULL);
	c = new_container();
	s = open_at(c, "deep/er", NULL, 1);
	assert_int_equal(st_store_write(s, "we#ird?/na%me\"s", "1", 1, NULL, NULL), ST_OK);
	assert_int_equal(st_store_write(s, "__0x41__", "2", 1, NULL, NULL), ST_OK);
	assert_int_equal(st_store_write(s, "sp ace/+plus&amp=", "3", 1, NULL, NULL), ST_OK);
	k = keys(s, "");
	assert_string_equal(k, "__0x41__ sp ace/+plus&amp= we#ird?/na%me\"s");
	free(k);
	k = keys(s, "we#");
	assert_string_equal(k, "we#ird?/na%me\"s");
	free(k);
	assert_int_equal(st_store_list(s, "", ST_STORE_LIST_DIRS, &e, &n, NULL), ST_OK);
	assert_int_equal(n, 3);
	assert_string_equal(e[0].key, "__0x41__");
	assert_string_equal(e[1].key, "sp ace/");
	assert_int_equal(e[1].info.size, -1);
	assert_string_equal(e[2].key, "we#ird?/");
	/* a listing's size, time and tag are the object's */
	assert_int_equal(st_store_stat(s, "__0x41__", &info, NULL), ST_OK);
	assert_int_equal(e[0].info.size, 1);
	assert_true(e[0].info.mtime_ns == info.mtime_ns);
	assert_true(info.mtime_ns % 1000000000LL == 0); /* Last-Modified: whole seconds */
	assert_true(llabs(info.mtime_ns / 1000000000LL - (long long)time(NULL)) < 600);
	assert_string_equal(e[0].info.etag, info.etag);
	assert_true(info.etag[0] != '"');
	st_store_entries_free(e, n);
	/* the names as gocloud stores them: what Pulumi writes, statetool reads (and the other
	 * way round) */
	st_store *raw = open_at(c, "", NULL, 0);
	k = keys(raw, "deep/er/");
	assert_string_equal(k, "deep/er/__0x41__ deep/er/sp ace/+plus&amp= deep/er/we#ird?/na%me\"s");
	free(k);
	st_store_free(raw);
	/* pages (5 objects each here, 5000 by default): the marker goes on */
	char key[32];
	for (int i = 0; i < 12; i++) {
		snprintf(key, sizeof(key), "many/%02d/x", i);
		assert_int_equal(st_store_write(s, key, "x", 1, NULL, NULL), ST_OK);
	}
	st__azblob_test_sizes(0, 0, 5);
	unsigned long before = st__http_attempts();
	assert_int_equal(st_store_list(s, "many/", 0, &e, &n, NULL), ST_OK);
	assert_int_equal(st__http_attempts() - before, 3);
	assert_int_equal(n, 12);
	assert_string_equal(e[11].key, "many/11/x");
	st_store_entries_free(e, n);
	assert_int_equal(st_store_list(s, "many/", ST_STORE_LIST_DIRS, &e, &n, NULL), ST_OK);
	assert_int_equal(n, 12);
	assert_string_equal(e[0].key, "many/00/");
	assert_string_equal(e[11].key, "many/11/");
	st_store_entries_free(e, n);
	st__azblob_test_sizes(0, 0, 0);
	assert_int_equal(st__azblob_container_delete(s, NULL), ST_OK);
	st_store_free(s);
	free(c);
}

/* Clients made from now on repeat a request `n` times, after 1 ms. */
static void net_retries(int n)
{
	st_net_opts o = ST_NET_OPTS_INIT;
	o.retries = n;
	o.backoff_ms = 1;
	assert_int_equal(st_set_net(&o, NULL), ST_OK);
}

/* ---- a proxy that fails on cue (tests/httpfake.h) in front of Azurite ---- */

#define PASS {A_FORWARD, 0, NULL, NULL}
#define BUSY {A_REPLY, 503, "x-ms-error-code: ServerBusy\r\n", ""}
#define CLOSE {A_CLOSE, 0, NULL, NULL}
#define LOSE {A_FORWARD_DROP, 0, NULL, NULL} /* Azurite does it, the answer is lost */
#define PENDING {A_FORWARD_EDIT, 0, "x-ms-copy-status: success", "x-ms-copy-status: pending"}

/* A server failing half-way: bounded retries, and nothing changes where a write did not end. */
static void test_azurite_faults(void **state)
{
	char *c, *k, big[2500], via[32];
	st_store *s, *direct;
	st_error err;
	st_store_write_opts o = ST_STORE_WRITE_OPTS_INIT;
	server *p;
	action pass[] = {PASS};
	(void)state;
	if (azurite_find())
		skip();
	env_shared_key(NULL);
	net_retries(2);
	p = server_start_proxy(pass, 1, az.port);
	snprintf(via, sizeof(via), "127.0.0.1:%d", p->port);
	c = new_container();
	direct = open_at(c, "p", NULL, 1);
	s = open_at(c, "p", via, 0);
	st_set_net(NULL, NULL);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('A' + i % 26);
	assert_int_equal(st_store_write(direct, "s.json", "old", 3, NULL, NULL), ST_OK);

	/* every attempt of a Put Blob gets 503: three attempts, an error, the old object */
	action busy3[] = {BUSY, BUSY, BUSY, PASS};
	server_plan(p, busy3, 4);
	st_error_clear(&err);
	assert_int_equal(st_store_write(s, "s.json", "new", 3, NULL, &err), ST_EIO);
	assert_int_equal(p->next, 3);
	k = st_asprintf("azblob: PutBlob '%s/p/s.json' on %s failed: HTTP 503 ServerBusy (3 "
			"attempts); credentials: Shared Key of account '%s' from AZURE_STORAGE_ACCOUNT "
			"and AZURE_STORAGE_KEY",
			c, via, az.account);
	if (strncmp(err.message, k, strlen(k)))
		fail_msg("%s\nexpected\n%s", err.message, k);
	free(k);
	expect_content(direct, "s.json", "old", 3);

	/* no answer, then an answer: written once */
	action close1[] = {CLOSE, PASS};
	server_plan(p, close1, 2);
	assert_int_equal(st_store_write(s, "s.json", "new2", 4, NULL, NULL), ST_OK);
	assert_int_equal(p->next, 2);
	expect_content(direct, "s.json", "new2", 4);

	/* in blocks: every block up, the commit refused three times: nothing changed */
	st__azblob_test_sizes(1000, 300, 0);
	action commit_fails[] = {PASS, PASS, PASS, PASS, PASS, PASS, PASS,
				 PASS, PASS, BUSY, BUSY, BUSY, PASS};
	server_plan(p, commit_fails, 13);
	assert_int_equal(st_store_write(s, "s.json", big, sizeof(big), NULL, NULL), ST_EIO);
	assert_int_equal(p->next, 12);
	expect_content(direct, "s.json", "new2", 4);
	/* a block that fails once is sent again */
	action block_once[] = {PASS, BUSY, PASS};
	server_plan(p, block_once, 3);
	assert_int_equal(st_store_write(s, "s.json", big, sizeof(big), NULL, NULL), ST_OK);
	assert_int_equal(p->next, 11);
	expect_content(direct, "s.json", big, sizeof(big));
	st__azblob_test_sizes(0, 0, 0);

	/* a create-only write whose answer was lost finds its own object: done */
	action lose1[] = {LOSE, PASS};
	o.flags = ST_STORE_CREATE_ONLY;
	server_plan(p, lose1, 2);
	assert_int_equal(st_store_write(s, "lock.json", "mine", 4, &o, NULL), ST_OK);
	assert_int_equal(p->next, 3); /* PUT (lost), PUT (409), GET (compared) */
	assert_string_equal(p->seen[2].method, "GET");
	expect_content(direct, "lock.json", "mine", 4);
	/* ... and someone else's: refused */
	assert_int_equal(st_store_write(direct, "lock2.json", "theirs", 6, NULL, NULL), ST_OK);
	server_plan(p, lose1, 2);
	assert_int_equal(st_store_write(s, "lock2.json", "mine", 4, &o, NULL), ST_EEXIST);
	expect_content(direct, "lock2.json", "theirs", 6);

	/* a delete whose answer was lost: done */
	server_plan(p, lose1, 2);
	assert_int_equal(st_store_delete(s, "lock2.json", NULL), ST_OK);
	assert_int_equal(st_store_delete(direct, "lock2.json", NULL), ST_ENOTFOUND);

	/* a copy repeated after a 503 */
	action busy1[] = {BUSY, PASS};
	server_plan(p, busy1, 2);
	assert_int_equal(st_store_copy(s, "s.json", "s.json.bak", NULL), ST_OK);
	expect_content(direct, "s.json.bak", big, sizeof(big));
	/* a copy that is pending: its properties are polled until it is done */
	action pending2[] = {PENDING, PENDING, PASS};
	assert_int_equal(st_store_write(direct, "s.json.bak", "x", 1, NULL, NULL), ST_OK);
	server_plan(p, pending2, 3);
	assert_int_equal(st_store_copy(s, "s.json", "s.json.bak", NULL), ST_OK);
	assert_int_equal(p->next, 3);
	assert_string_equal(p->seen[0].method, "PUT");
	assert_string_equal(p->seen[1].method, "HEAD");
	assert_string_equal(p->seen[2].method, "HEAD");
	expect_content(direct, "s.json.bak", big, sizeof(big));

	/* a read without answers: bounded */
	action closes[] = {CLOSE};
	server_plan(p, closes, 1);
	char *data = NULL;
	size_t len;
	st_error_clear(&err);
	assert_int_equal(st_store_read(s, "s.json", 0, &data, &len, NULL, &err), ST_EIO);
	assert_int_equal(p->next, 3);
	assert_non_null(strstr(err.message, "(3 attempts); credentials: Shared Key"));
	k = keys(direct, "");
	assert_string_equal(k, "lock.json s.json s.json.bak");
	free(k);
	assert_int_equal(st__azblob_container_delete(direct, NULL), ST_OK);
	st_store_free(s);
	st_store_free(direct);
	server_stop(p);
	free(c);
}

/* Wrong key, missing container, unreachable endpoint: each says so, names azblob and the
 * variables read, never the key. */
/* A document for st__store_load_json: an array of objects, with a duplicate key and invalid
 * UTF-8 past its middle (two warnings), a nested string longer than `longstr` bytes (0: none),
 * and `tail` appended (a broken end). New. */
static char *load_doc(size_t n, size_t longstr, const char *tail, size_t *len)
{
	st_buf b;
	st_buf_init(&b);
	st_buf_adds(&b, "{\"version\": 3, \"resources\": [");
	for (size_t i = 0; i < n; i++) {
		st_buf_printf(&b, "%s\n  {\"urn\": \"urn:pulumi:dev::p::t::r%zu\", \"n\": %zu, "
				  "\"outputs\": {\"a\": [1, 2.5, true, null, \"x\\u00e9\"]",
			      i ? "," : "", i, i * 7);
		if (i == n * 2 / 3)
			st_buf_adds(&b, ", \"d\": 1, \"d\": 2, \"bad\": \"\xff\"");
		if (i == n / 2 && longstr) {
			st_buf_adds(&b, ", \"long\": \"");
			for (size_t j = 0; j < longstr; j++)
				st_buf_addc(&b, (char)('a' + j % 26));
			st_buf_addc(&b, '"');
		}
		st_buf_adds(&b, "}}");
	}
	st_buf_adds(&b, "\n]}\n");
	st_buf_adds(&b, tail);
	return st_buf_take(&b, len);
}

/* st__store_load_json of `key` gives exactly what st_json_parse of the bytes gives. */
static void load_same(st_store *s, const char *key, const char *doc, size_t len)
{
	json_t *a = NULL, *b = NULL;
	st_problems pa = {0}, pb = {0};
	st_style sa, sb;
	st_error ea, eb;
	st_error_clear(&ea);
	st_error_clear(&eb);
	memset(&sa, 0, sizeof(sa));
	memset(&sb, 0, sizeof(sb));
	int ra = st_json_parse(&a, doc, len, "w", NULL, &sa, &pa, &ea);
	int rb = st__store_load_json(s, key, 0, "w", &b, &sb, &pb, &eb);
	assert_int_equal(ra, rb);
	if (ra == ST_OK) {
		assert_true(json_equal(a, b));
		assert_memory_equal(&sa, &sb, sizeof(sa));
	} else {
		assert_string_equal(ea.message, eb.message);
		assert_int_equal(ea.line, eb.line);
		assert_int_equal(ea.column, eb.column);
	}
	assert_int_equal(pa.count, pb.count);
	for (size_t i = 0; i < pa.count; i++) {
		assert_string_equal(pa.items[i].message, pb.items[i].message);
		assert_string_equal(pa.items[i].pointer, pb.items[i].pointer);
	}
	json_decref(a);
	json_decref(b);
	st_problems_clear(&pa);
	st_problems_clear(&pb);
}

/* A stack's JSON read from a store (st__store_load_json, st_backend_load_json's path): the same
 * tree, style, warnings and errors as st_json_parse of the bytes, also when the answer is cut
 * and sent again, when the document is compressed, broken, or holds a long string, and on one
 * thread or two. */
static void test_azurite_load_json(void **state)
{
	char *c, *doc, *gz, via[32];
	size_t len, gzlen;
	st_store *s, *direct;
	server *p;
	action pass[] = {PASS};
	(void)state;
	if (azurite_find())
		skip();
	env_shared_key(NULL);
	net_retries(2);
	p = server_start_proxy(pass, 1, az.port);
	snprintf(via, sizeof(via), "127.0.0.1:%d", p->port);
	c = new_container();
	direct = open_at(c, "p", NULL, 1);
	s = open_at(c, "p", via, 0);
	st_set_net(NULL, NULL);
	for (int split = 0; split < 2; split++) {
		st__json_split_test(split ? 64 * 1024 : 0);
		doc = load_doc(8000, 0, "", &len);
		assert_int_equal(st_store_write(direct, "s.json", doc, len, NULL, NULL), ST_OK);
		server_plan(p, pass, 1);
		load_same(s, "s.json", doc, len);
		/* the first answer cut half-way, the second whole */
		action cut[] = {{A_FORWARD_CUT, 0, NULL, NULL}, PASS};
		server_plan(p, cut, 2);
		load_same(s, "s.json", doc, len);
		assert_int_equal(p->next, 2);
		assert_int_equal(st__gzip_bytes(doc, len, &gz, &gzlen, NULL), ST_OK);
		assert_int_equal(st_store_write(direct, "s.json.gz", gz, gzlen, NULL, NULL), ST_OK);
		server_plan(p, pass, 1);
		load_same(s, "s.json.gz", doc, len);
		free(gz);
		free(doc);
		/* a string longer than the look-ahead; a broken end */
		doc = load_doc(2000, 5u << 20, "", &len);
		assert_int_equal(st_store_write(direct, "s.json", doc, len, NULL, NULL), ST_OK);
		server_plan(p, pass, 1);
		load_same(s, "s.json", doc, len);
		free(doc);
		doc = load_doc(8000, 0, "]", &len);
		assert_int_equal(st_store_write(direct, "s.json", doc, len, NULL, NULL), ST_OK);
		server_plan(p, pass, 1);
		load_same(s, "s.json", doc, len);
		free(doc);
		doc = load_doc(8000, 0, "", &len);
		doc[len / 2] = '#';
		assert_int_equal(st_store_write(direct, "s.json", doc, len, NULL, NULL), ST_OK);
		server_plan(p, pass, 1);
		load_same(s, "s.json", doc, len);
		free(doc);
	}
	/* a missing object: the read's own error */
	st_error err;
	json_t *v;
	st_error_clear(&err);
	server_plan(p, pass, 1);
	assert_int_equal(st__store_load_json(s, "none.json", 0, "w", &v, NULL, NULL, &err),
			 ST_ENOTFOUND);
	assert_null(v);
	st__json_split_test(0);
	server_stop(p);
	st_store_free(s);
	st_store_free(direct);
	free(c);
}

static void test_azurite_errors(void **state)
{
	char *c, *data = NULL, *url;
	size_t len;
	st_store *s;
	st_error err;
	unsigned char other[64];
	char other_b64[100];
	(void)state;
	if (azurite_find())
		skip();
	env_shared_key(NULL);
	c = new_container();
	s = open_at(c, "p", NULL, 1);
	assert_int_equal(st_store_write(s, "k", "v", 1, NULL, NULL), ST_OK);
	st_store_free(s);
	/* a key of the right form that is not the account's */
	memset(other, 7, sizeof(other));
	sodium_bin2base64(other_b64, sizeof(other_b64), other, sizeof(other),
			  sodium_base64_VARIANT_ORIGINAL);
	env_shared_key(other_b64);
	s = open_at(c, "p", NULL, 0);
	st_error_clear(&err);
	assert_int_equal(st_store_read(s, "k", 0, &data, &len, NULL, &err), ST_EAUTH);
	url = st_asprintf("azblob: GetBlob '%s/p/k' on %s failed: HTTP 403 AuthorizationFailure: ", c,
			  az.host);
	if (strncmp(err.message, url, strlen(url)))
		fail_msg("%s", err.message);
	free(url);
	assert_non_null(strstr(err.message, "; credentials: Shared Key of account 'devstoreaccount1' "
					    "from AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY"));
	assert_null(strstr(err.message, other_b64));
	assert_null(strstr(err.message, az.key));
	/* nothing could be written or deleted either */
	assert_int_equal(st_store_write(s, "k", "x", 1, NULL, NULL), ST_EAUTH);
	assert_int_equal(st_store_delete(s, "k", NULL), ST_EAUTH);
	st_store_free(s);
	/* a container that does not exist: not a missing object */
	env_shared_key(NULL);
	s = open_at("no-such-container-here", "p", NULL, 0);
	st_error_clear(&err);
	assert_int_equal(st_store_read(s, "k", 0, &data, &len, NULL, &err), ST_EIO);
	assert_non_null(strstr(err.message, "azblob: GetBlob 'no-such-container-here/p/k' on "));
	assert_non_null(strstr(err.message, "HTTP 404 ContainerNotFound: The specified container "
					    "does not exist; credentials: "));
	assert_int_equal(st_store_stat(s, "k", NULL, &err), ST_EIO);
	assert_non_null(strstr(err.message, "HTTP 404 ContainerNotFound"));
	assert_int_equal(st_store_delete(s, "k", &err), ST_EIO);
	assert_int_equal(st_store_list(s, "", 0, &(st_store_entry *){NULL}, &len, &err), ST_EIO);
	assert_int_equal(st_store_write(s, "k", "x", 1, NULL, &err), ST_EIO);
	st_store_free(s);
	/* nothing listens: bounded retries, the endpoint's origin named */
	net_retries(1);
	s = open_at(c, "p", "127.0.0.1:9", 0);
	st_set_net(NULL, NULL);
	st_error_clear(&err);
	assert_int_equal(st_store_read(s, "k", 0, &data, &len, NULL, &err), ST_EIO);
	url = st_asprintf("azblob: cannot reach 127.0.0.1:9 (GetBlob '%s/p/k'): ", c);
	if (strncmp(err.message, url, strlen(url)))
		fail_msg("%s", err.message);
	free(url);
	assert_non_null(strstr(err.message, "(2 attempts); credentials: Shared Key of account "
					    "'devstoreaccount1' from AZURE_STORAGE_ACCOUNT and "
					    "AZURE_STORAGE_KEY, service http://127.0.0.1:9/devstoreaccount1 "
					    "from AZURE_STORAGE_ACCOUNT, parameter domain, parameter protocol"));
	st_store_free(s);
	s = open_at(c, "", NULL, 0);
	assert_int_equal(st__azblob_container_delete(s, NULL), ST_OK);
	st_store_free(s);
	free(c);
}

static int teardown(void **state)
{
	(void)state;
	free(az.endpoint);
	free(az.account);
	free(az.key);
	free(az.host);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_table),     cmocka_unit_test(test_signer_microsoft),
		cmocka_unit_test(test_signer_rules),     cmocka_unit_test(test_key_escaping),
		cmocka_unit_test(test_fake_answers),
		cmocka_unit_test(test_azurite_blocks),   cmocka_unit_test(test_azurite_listing),
		cmocka_unit_test(test_azurite_faults),   cmocka_unit_test(test_azurite_errors),
		cmocka_unit_test(test_azurite_load_json),
	};
	return cmocka_run_group_tests(tests, NULL, teardown);
}
