/*
 * The Pulumi Cloud backend (lib/store/cloud.c) against the fake service of tests/cloudfake.h,
 * on a thread of this test: the calls, the headers the service sees, the token's sources, and
 * what the service refuses, each with its code and a message without the token.
 */
#include "cloudfake.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static cloudfake cf;
static char *dir, url[64], stackfile[700];
static const char *token = "tok-secret-1234";

static void put(const char *name, const char *text)
{
	cf_write(dir, name, text, strlen(text));
}

static int setup(void **st)
{
	(void)st;
	char p[600];
	dir = tu_tmpdir();
	assert_int_equal(cf_start(&cf, dir), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", cf.port);
	snprintf(p, sizeof(p), "%s/stacks/acme", dir);
	mkdir(p, 0777);
	snprintf(p, sizeof(p), "%s/stacks/acme/shop", dir);
	mkdir(p, 0777);
	snprintf(p, sizeof(p), "%s/stacks/acme/web", dir);
	mkdir(p, 0777);
	snprintf(stackfile, sizeof(stackfile), "%s/stacks/acme/shop/dev.json", dir);
	put("token", token);
	put("user", "acme");
	put("pagesize", "1");
	char *fx = tu_fixture("cloud/shop-dev.json");
	size_t n = 0;
	char *data = tu_read(fx, &n);
	tu_write(stackfile, data, n);
	free(data);
	free(fx);
	put("stacks/acme/web/prod.json", cf_empty);
	put("stacks/acme/web/test.json", cf_empty);
	setenv("PULUMI_ACCESS_TOKEN", token, 1);
	unsetenv("PULUMI_HOME");
	unsetenv("PULUMI_CREDENTIALS_PATH");
	st_net_opts o = ST_NET_OPTS_INIT;
	o.retries = 2;
	o.backoff_ms = 1;
	assert_int_equal(st_set_net(&o, NULL), ST_OK);
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	cf_stop(&cf);
	tu_rmdir(dir);
	st_set_net(NULL, NULL);
	return 0;
}

static st_backend *open_ok(void)
{
	st_backend *b = NULL;
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st_backend_open(&b, url, &err), ST_OK);
	assert_string_equal(st_backend_kind(b), "cloud");
	assert_null(st_backend_store(b));
	return b;
}

static void test_list_pages(void **st)
{
	(void)st;
	st_backend *b = open_ok();
	st_stack_info *infos = NULL;
	size_t n = 0;
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st_backend_list(b, &infos, &n, NULL), ST_OK);
	assert_int_equal(n, 3);
	assert_string_equal(infos[0].qname, "acme/shop/dev");
	assert_string_equal(infos[1].qname, "acme/web/prod");
	assert_string_equal(infos[2].qname, "acme/web/test");
	assert_string_equal(infos[2].project, "web");
	assert_string_equal(infos[2].name, "test");
	assert_null(infos[0].path);
	st_stack_infos_free(infos, n);
	/* the headers of the Pulumi CLI */
	assert_non_null(strstr(cf.last_headers, "\r\nAuthorization: token tok-secret-1234\r\n"));
	assert_non_null(strstr(cf.last_headers, "\r\nAccept: application/vnd.pulumi+8\r\n"));
	assert_non_null(strstr(cf.last_headers, "\r\nUser-Agent: statetool/"));
	assert_non_null(strstr(cf.last_headers, "\r\nContent-Type: application/json\r\n"));
	st_backend_free(b);
}

static void test_resolve(void **st)
{
	(void)st;
	st_backend *b = open_ok();
	char *q = NULL;
	int exists = -1;
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st_backend_resolve(b, "acme/shop/dev", &q, &exists, &err), ST_OK);
	assert_string_equal(q, "acme/shop/dev");
	assert_int_equal(exists, 1);
	free(q);
	st_error_clear(&err);
	assert_int_equal(st_backend_resolve(b, "shop/nope", &q, &exists, &err), ST_OK);
	assert_string_equal(q, "acme/shop/nope"); /* the user's organization */
	assert_int_equal(exists, 0);
	free(q);
	st_error_clear(&err);
	assert_int_equal(st_backend_resolve(b, "dev", &q, &exists, &err), ST_EINVAL);
	assert_null(q);
	st_error_clear(&err);
	assert_int_equal(st_backend_resolve(b, "acme/sh op/dev", &q, &exists, &err), ST_EINVAL);
	st_error_clear(&err);
	assert_int_equal(st_backend_resolve(b, "a/b/c/d", &q, &exists, NULL), ST_EINVAL);
	st_backend_free(b);
}

static void test_load_save(void **st)
{
	(void)st;
	st_backend *b = open_ok();
	st_state *s = NULL;
	st_error err;
	char *text = NULL;
	size_t len = 0, n = 0;
	st_error_clear(&err);
	assert_int_equal(st_backend_load(b, "acme/shop/dev", NULL, &s, &err), ST_OK);
	assert_int_equal(st_state_envelope(s), ST_ENVELOPE_EXPORT);
	assert_int_equal(json_array_size(st_state_resources(s, 0)), 13);
	/* a change, imported: the service holds exactly what statetool writes */
	json_object_set_new(json_array_get(st_state_resources(s, 0), 4), "protect", json_true());
	st_state_touch(s);
	st_error_clear(&err);
	assert_int_equal(st_backend_save(b, "acme/shop/dev", s, NULL, &err), ST_OK);
	assert_non_null(strstr(cf.last_headers, "\r\nAuthorization: token tok-secret-1234\r\n"));
	assert_int_equal(st_state_dump(s, NULL, &text, &len, NULL), ST_OK);
	char *got = tu_read(stackfile, &n);
	assert_int_equal(n, len);
	assert_memory_equal(got, text, len);
	free(got);
	free(text);
	/* into a stack that does not exist yet: created, then imported */
	json_t *res = st_state_resources(s, 0);
	json_array_clear(res);
	st_state_touch(s);
	st_error_clear(&err);
	assert_int_equal(st_backend_save(b, "acme/shop/new", s, NULL, &err), ST_OK);
	char p[700];
	snprintf(p, sizeof(p), "%s/stacks/acme/shop/new.json", dir);
	got = tu_read(p, &n);
	assert_non_null(got);
	assert_int_equal(st_state_dump(s, NULL, &text, &len, NULL), ST_OK);
	assert_memory_equal(got, text, len);
	free(got);
	free(text);
	st_state_free(s);
	/* unknown: ST_ENOTFOUND */
	st_error_clear(&err);
	assert_int_equal(st_backend_load(b, "acme/shop/nope", NULL, &s, &err), ST_ENOTFOUND);
	assert_non_null(strstr(err.message, "[404] Not Found: Stack 'acme/shop/nope' not found"));
	st_backend_free(b);
}

static int refuse(void *ctx)
{
	(*(int *)ctx)++;
	return ST_EINTEGRITY;
}

/* The caller's `proceed` (an edit's check of its result) is asked before the import: a no
 * sends nothing. */
static void test_proceed(void **st)
{
	(void)st;
	st_backend *b = open_ok();
	st_backend_save_opts o = ST_BACKEND_SAVE_OPTS_INIT;
	st_state *s = NULL;
	st_error err;
	size_t n0, n1;
	int asked = 0;
	st_error_clear(&err);
	assert_int_equal(st_backend_load(b, "acme/shop/dev", NULL, &s, &err), ST_OK);
	char *before = tu_read(stackfile, &n0);
	json_array_clear(st_state_resources(s, 0));
	st_state_touch(s);
	o.proceed = refuse;
	o.proceed_ctx = &asked;
	int updates = cf.updates;
	assert_int_equal(st_backend_save(b, "acme/shop/dev", s, &o, &err), ST_EINTEGRITY);
	assert_int_equal(asked, 1);
	assert_int_equal(cf.updates, updates);
	char *after = tu_read(stackfile, &n1);
	assert_int_equal(n0, n1);
	assert_memory_equal(before, after, n0);
	free(before);
	free(after);
	st_state_free(s);
	st_backend_free(b);
}

static void test_refusals(void **st)
{
	(void)st;
	st_backend *b = open_ok();
	st_state *s = NULL;
	st_error err;
	size_t n0, n1;
	st_error_clear(&err);
	assert_int_equal(st_backend_load(b, "acme/shop/dev", NULL, &s, &err), ST_OK);
	char *before = tu_read(stackfile, &n0);
	/* an update in progress: 409 */
	put("stacks/acme/shop/dev.busy", "");
	st_error_clear(&err);
	assert_int_equal(st_backend_save(b, "acme/shop/dev", s, NULL, &err), ST_ECONFLICT);
	assert_non_null(strstr(err.message, "HTTP 409 [409] Conflict: Another update is "
					    "currently in progress."));
	char p[700];
	snprintf(p, sizeof(p), "%s/stacks/acme/shop/dev.busy", dir);
	unlink(p);
	/* a deployment of another stack: the service refuses it (400) */
	st_error_clear(&err);
	assert_int_equal(st_backend_save(b, "acme/web/prod", s, NULL, &err), ST_EINVAL);

	assert_non_null(strstr(err.message, "HTTP 400 [400] Bad Request: resource "
					    "'urn:pulumi:dev::shop::pulumi:pulumi:Stack::shop-dev' is "
					    "not of stack 'web/prod'"));
	/* a server error on the import: not repeated */
	put("faults", "POST /api/stacks/acme/shop/dev/import 500 5\n");
	st_error_clear(&err);
	assert_int_equal(st_backend_save(b, "acme/shop/dev", s, NULL, &err), ST_EIO);
	assert_non_null(strstr(err.message, "HTTP 500 [500] Internal Server Error; backend"));
	assert_null(strstr(err.message, "attempts"));
	/* a server error on a read: repeated (2 retries) */
	put("faults", "GET /api/stacks/acme/shop/dev/export 500 2\n");
	st_state *s2 = NULL;
	st_error_clear(&err);
	assert_int_equal(st_backend_load(b, "acme/shop/dev", NULL, &s2, &err), ST_OK);
	st_state_free(s2);
	put("faults", "GET /api/stacks/acme/shop/dev/export 500 3\n");
	st_error_clear(&err);
	assert_int_equal(st_backend_load(b, "acme/shop/dev", NULL, &s2, &err), ST_EIO);
	assert_non_null(strstr(err.message, "(3 attempts)"));
	put("faults", "");
	char *after = tu_read(stackfile, &n1);
	assert_int_equal(n0, n1);
	assert_memory_equal(before, after, n0);
	free(before);
	free(after);
	st_state_free(s);
	/* no lock to take or remove */
	st_lock *lk = NULL;
	int removed = -1;
	assert_int_equal(st_lock_stack(&lk, b, "acme/shop/dev", &err), ST_OK);
	assert_int_equal(st_lock_release(lk, &err), ST_OK);
	assert_int_equal(st_unlock_stack(b, "acme/shop/dev", &removed, &err), ST_EUNSUPPORTED);
	assert_int_equal(removed, 0);
	st_backend_free(b);
}

/* The import accepted, its result unread (the poll refused, or failing past its retries): the
 * service applied it, so not ST_EIO but ST_EOUTCOME, a message that says the stack may have
 * changed and names the update; also with err NULL. */
static void test_outcome_unknown(void **st)
{
	(void)st;
	st_backend *b = open_ok();
	st_state *s = NULL;
	st_error err;
	size_t n0 = 0, n1 = 0;
	st_error_clear(&err);
	assert_int_equal(st_backend_load(b, "acme/shop/dev", NULL, &s, &err), ST_OK);
	json_object_set_new(json_array_get(st_state_resources(s, 0), 3), "retainOnDelete",
			    json_true());
	st_state_touch(s);
	char *before = tu_read(stackfile, &n0), *text = NULL;
	put("faults", "GET /api/stacks/acme/shop/dev/update/ 500 3\n");
	assert_int_equal(st_backend_save(b, "acme/shop/dev", s, NULL, &err), ST_EOUTCOME);
	assert_string_equal(st_strerror(err.code), "outcome unknown");
	assert_int_equal(strncmp(err.message, "pulumi cloud: the import into 'acme/shop/dev' was "
					      "sent (update u", 64), 0);
	assert_non_null(strstr(err.message, ") but its result could not be read, so the stack may "
					    "or may not have changed (`pulumi stack history --stack "
					    "acme/shop/dev` or `statetool list` tells): "
					    "GetUpdateEvents 'acme/shop/dev' on 127.0.0.1:"));
	assert_non_null(strstr(err.message, "failed: HTTP 500 [500] Internal Server Error (3 "
					    "attempts); backend"));
	assert_null(strstr(err.message, token));
	/* it was applied: the service holds what was sent */
	char *after = tu_read(stackfile, &n1);
	assert_int_equal(st_state_dump(s, NULL, &text, &n0, NULL), ST_OK);
	assert_int_equal(n0, n1);
	assert_memory_equal(after, text, n1);
	assert_true(n1 != strlen(before) || memcmp(before, after, n1));
	free(after);
	free(text);
	put("faults", "GET /api/stacks/acme/shop/dev/update/ 403 1\n");
	assert_int_equal(st_backend_save(b, "acme/shop/dev", s, NULL, NULL), ST_EOUTCOME);
	put("faults", "");
	/* the import itself refused: nothing applied, an error as before */
	put("faults", "POST /api/stacks/acme/shop/dev/import 500 1\n");
	assert_int_equal(st_backend_save(b, "acme/shop/dev", s, NULL, NULL), ST_EIO);
	put("faults", "");
	free(before);
	st_state_free(s);
	st_backend_free(b);
}

static void test_tokens(void **st)
{
	(void)st;
	st_backend *b = NULL;
	st_error err;
	char home[600], creds[700], text[2000];
	st_error_clear(&err);
	/* a wrong token: 401, and the message names its source, never its value */
	setenv("PULUMI_ACCESS_TOKEN", "wrong-secret-99", 1);
	st_error_clear(&err);
	assert_int_equal(st_backend_open(&b, url, &err), ST_OK);
	char *q = NULL;
	st_error_clear(&err);
	assert_int_equal(st_backend_resolve(b, "acme/shop/dev", &q, NULL, &err), ST_EAUTH);
	assert_non_null(strstr(err.message, "HTTP 401 [401] Unauthorized"));
	assert_non_null(strstr(err.message, "token from PULUMI_ACCESS_TOKEN"));
	assert_null(strstr(err.message, "wrong-secret-99"));
	st_backend_free(b);
	/* none: from the credentials file, by URL */
	unsetenv("PULUMI_ACCESS_TOKEN");
	snprintf(home, sizeof(home), "%s/ph", dir);
	mkdir(home, 0700);
	setenv("PULUMI_HOME", home, 1);
	st_error_clear(&err);
	assert_int_equal(st_backend_open(&b, url, &err), ST_EAUTH);
	assert_null(b);
	snprintf(text, sizeof(text), "pulumi cloud: no access token for %s: set PULUMI_ACCESS_TOKEN "
		 "or run `pulumi login %s` (%s/credentials.json has none for it)", url, url, home);
	assert_string_equal(err.message, text);
	snprintf(creds, sizeof(creds), "%s/credentials.json", home);
	snprintf(text, sizeof(text), "{\"current\":\"%s/\",\"accessTokens\":{\"%s/\":\"%s\"}}", url,
		 url, token);
	tu_write(creds, text, strlen(text));
	st_error_clear(&err);
	assert_int_equal(st_backend_open(&b, url, &err), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_backend_resolve(b, "acme/shop/dev", &q, NULL, &err), ST_OK);
	free(q);
	st_backend_free(b);
	unsetenv("PULUMI_HOME");
	setenv("PULUMI_ACCESS_TOKEN", token, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_pages),
		cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_load_save),
		cmocka_unit_test(test_proceed),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_outcome_unknown),
		cmocka_unit_test(test_tokens),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
