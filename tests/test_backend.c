/* DIY backends: layouts, names, paths that stay inside, Pulumi-format locks. */
#include "testutil.h"

static void mk(const char *dir, const char *rel, const char *content)
{
	char *p = st_path_join(dir, rel), *d = st_path_dirname(p);
	assert_int_equal(st_mkdir_p(d, 0755, NULL), ST_OK);
	tu_write(p, content, strlen(content));
	free(d);
	free(p);
}

static const char *state_text = "{\"version\":3,\"checkpoint\":{\"stack\":\"organization/p/s\"}}";

static void test_names(void **state)
{
	(void)state;
	assert_true(st_stack_name_valid("dev"));
	assert_true(st_stack_name_valid("a.b_c-D9"));
	assert_false(st_stack_name_valid(""));
	assert_false(st_stack_name_valid("."));
	assert_false(st_stack_name_valid(".."));
	assert_false(st_stack_name_valid("a/b"));
	assert_false(st_stack_name_valid("a b"));
	char longname[102];
	memset(longname, 'a', 101);
	longname[101] = '\0';
	assert_false(st_stack_name_valid(longname));
	longname[100] = '\0';
	assert_true(st_stack_name_valid(longname));
}

static void test_project_layout(void **state)
{
	(void)state;
	char *dir = tu_tmpdir();
	st_backend *b;
	st_stack_info *infos;
	size_t n;
	st_error err;
	mk(dir, ".pulumi/meta.yaml", "version: 1\n");
	mk(dir, ".pulumi/stacks/app/dev.json", state_text);
	mk(dir, ".pulumi/stacks/app/dev.json.bak", state_text);
	mk(dir, ".pulumi/stacks/app/prod.json.gz", "x");
	mk(dir, ".pulumi/stacks/web/dev.json", state_text);
	char *url = st_asprintf("file://%s/", dir);
	assert_int_equal(st_backend_open(&b, url, NULL), ST_OK);
	free(url);
	assert_true(st_backend_project_mode(b));
	assert_int_equal(st_backend_list(b, &infos, &n, NULL), ST_OK);
	assert_int_equal(n, 3);
	assert_string_equal(infos[0].qname, "organization/app/dev");
	assert_string_equal(infos[1].qname, "organization/app/prod");
	assert_non_null(strstr(infos[1].path, "prod.json.gz"));
	assert_string_equal(infos[2].qname, "organization/web/dev");
	st_stack_infos_free(infos, n);

	char *path;
	int exists;
	assert_int_equal(st_backend_stack_path(b, "app/dev", &path, &exists, NULL), ST_OK);
	assert_true(exists);
	assert_non_null(strstr(path, "/.pulumi/stacks/app/dev.json"));
	free(path);
	assert_int_equal(st_backend_stack_path(b, "organization/app/new", &path, &exists, NULL),
			 ST_OK);
	assert_false(exists);
	assert_non_null(strstr(path, "/.pulumi/stacks/app/new.json"));
	free(path);
	assert_int_equal(st_backend_stack_path(b, "prod", &path, &exists, NULL), ST_OK);
	free(path);
	st_error_clear(&err);
	assert_int_equal(st_backend_stack_path(b, "dev", &path, &exists, &err), ST_EAMBIGUOUS);
	assert_non_null(strstr(err.message, "several projects"));
	/* names that would leave the backend */
	const char *bad[] = {"../x", "app/..", "app/../../etc", "/etc/passwd", "app/a/b",
			     "org/app/dev", "app/", "..", "app/dev\n", NULL};
	for (int i = 0; bad[i]; i++) {
		st_error_clear(&err);
		int rc = st_backend_stack_path(b, bad[i], &path, &exists, &err);
		if (rc != ST_EINVAL) {
			fprintf(stderr, "'%s' gave %d\n", bad[i], rc);
			fail();
		}
	}
	st_backend_free(b);
	tu_rmdir(dir);
}

static void test_legacy_layout_and_errors(void **state)
{
	(void)state;
	char *dir = tu_tmpdir();
	st_backend *b;
	st_stack_info *infos;
	size_t n;
	st_error err;
	mk(dir, ".pulumi/stacks/dev.json", state_text);
	assert_int_equal(st_backend_open(&b, dir, NULL), ST_OK);
	assert_false(st_backend_project_mode(b));
	assert_int_equal(st_backend_list(b, &infos, &n, NULL), ST_OK);
	assert_int_equal(n, 1);
	assert_string_equal(infos[0].qname, "dev");
	assert_null(infos[0].project);
	st_stack_infos_free(infos, n);
	st_backend_free(b);
	mk(dir, ".pulumi/meta.yaml", "nothing: here\n");
	st_error_clear(&err);
	assert_int_equal(st_backend_open(&b, dir, &err), ST_EFORMAT);
	assert_non_null(strstr(err.message, "corrupt store: missing version"));
	st_error_clear(&err);
	assert_int_equal(st_backend_open(&b, "ftp://bucket", &err), ST_EUNSUPPORTED);
	st_error_clear(&err);
	assert_int_equal(st_backend_open(&b, "/nonexistent/dir", &err), ST_ENOTFOUND);
	tu_rmdir(dir);
}

static void test_stack_locks(void **state)
{
	(void)state;
	char *dir = tu_tmpdir();
	st_backend *b;
	st_lock *l1, *l2;
	st_error err;
	mk(dir, ".pulumi/meta.yaml", "version: 1\n");
	mk(dir, ".pulumi/stacks/app/dev.json", state_text);
	assert_int_equal(st_backend_open(&b, dir, NULL), ST_OK);
	assert_int_equal(st_lock_stack(&l1, b, "app/dev", NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_lock_stack(&l2, b, "app/dev", &err), ST_ELOCKED);
	assert_non_null(strstr(err.message, "the stack is currently locked by 1 lock(s). Either "
					    "wait for the other process(es) to end or delete the "
					    "lock file with `pulumi cancel`"));
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	char *who = st_asprintf("@%s (pid %ld) at ", host, (long)getpid());
	assert_non_null(strstr(err.message, who));
	free(who);
	assert_non_null(strstr(err.message, "/.pulumi/locks/organization/app/dev/"));
	{
		/* our lock is Pulumi's: a time.Time marshalled by Go (RFC 3339 with nanoseconds,
		 * trailing zeros dropped) */
		char *cmd = st_asprintf("cat %s/.pulumi/locks/organization/app/dev/*.json", dir);
		FILE *f = popen(cmd, "r");
		char buf[512] = "";
		assert_non_null(f);
		assert_true(fread(buf, 1, sizeof(buf) - 1, f) > 0);
		pclose(f);
		free(cmd);
		const char *ts = strstr(buf, "\"timestamp\":\"");
		assert_non_null(ts);
		ts += 13;
		int y, mo, d, h, mi, se, n = 0;
		assert_int_equal(sscanf(ts, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &n),
				 6);
		const char *z = ts + n;
		if (*z == '.') {
			size_t digits = strspn(z + 1, "0123456789");
			assert_true(digits >= 1 && digits <= 9);
			assert_true(z[digits] != '0');
			z += 1 + digits;
		}
		assert_true(*z == 'Z' || ((*z == '+' || *z == '-') && z[3] == ':'));
		assert_non_null(strstr(buf, "\"pid\":"));
		assert_non_null(strstr(buf, "\"username\":\""));
		assert_non_null(strstr(buf, "\"hostname\":\""));
	}
	assert_int_equal(st_lock_release(l1, NULL), ST_OK);
	assert_int_equal(st_lock_stack(&l2, b, "app/dev", NULL), ST_OK);
	assert_int_equal(st_lock_release(l2, NULL), ST_OK);

	/* a lock Pulumi left behind, from a process that is gone */
	mk(dir, ".pulumi/locks/organization/app/dev/0b5e1f3a-1111-4222-8333-444455556666.json",
	   "{\"pid\":999999,\"username\":\"alice\",\"hostname\":\"buildhost\",\"timestamp\":"
	   "\"2024-05-01T10:00:00Z\"}");
	st_error_clear(&err);
	assert_int_equal(st_lock_stack(&l2, b, "app/dev", &err), ST_ELOCKED);
	assert_non_null(strstr(err.message, "created by alice@buildhost (pid 999999) at "
					    "2024-05-01T10:00:00Z"));
	int removed;
	assert_int_equal(st_unlock_stack(b, "app/dev", &removed, NULL), ST_OK);
	assert_int_equal(removed, 1);
	assert_int_equal(st_lock_stack(&l2, b, "app/dev", NULL), ST_OK);
	st_lock_release(l2, NULL);

	/* a planted symbolic link in the lock path is refused */
	char *target = tu_tmpdir();
	char *lk = st_path_join(dir, ".pulumi/locks/organization/web");
	assert_int_equal(symlink(target, lk), 0);
	st_error_clear(&err);
	assert_int_equal(st_lock_stack(&l2, b, "web/dev", &err), ST_EREFUSED);
	assert_non_null(strstr(err.message, "symbolic link"));
	free(lk);
	tu_rmdir(target);
	st_backend_free(b);
	tu_rmdir(dir);
}

static void test_file_locks(void **state)
{
	(void)state;
	char *dir = tu_tmpdir(), *p = st_path_join(dir, "s.json");
	st_lock *l1, *l2;
	st_error err;
	tu_write(p, state_text, strlen(state_text));
	assert_int_equal(st_lock_file(&l1, p, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_lock_file(&l2, p, &err), ST_ELOCKED);
	assert_non_null(strstr(err.message, "s.json.lock: created by"));
	assert_non_null(strstr(err.message, "statetool unlock"));
	assert_int_equal(st_lock_release(l1, NULL), ST_OK);
	assert_int_equal(st_lock_file(&l2, p, NULL), ST_OK);
	int removed;
	assert_int_equal(st_unlock_file(p, &removed, NULL), ST_OK);
	assert_int_equal(removed, 1);
	st_lock_release(l2, NULL);
	free(p);
	tu_rmdir(dir);
}

/* A state against its place: each rule, the forms of a place, an error for a bad one. */
static void test_check_place(void **unused)
{
	const char *text =
		"{\"version\":3,\"checkpoint\":{\"stack\":\"organization/p/s\",\"latest\":{"
		"\"resources\":[{\"urn\":\"urn:pulumi:s::p::pulumi:pulumi:Stack::p-s\","
		"\"type\":\"pulumi:pulumi:Stack\",\"custom\":false},"
		"{\"urn\":\"urn:pulumi:x::p::a:b:C::c\",\"type\":\"a:b:C\",\"custom\":false}]}}}";
	st_state *s = NULL;
	st_problems p = {0};
	st_error err;
	(void)unused;

	assert_int_equal(st_state_load_buffer(&s, text, strlen(text), "t", NULL, NULL), ST_OK);
	/* in its place: the checkpoint agrees, the stray URN is the integrity check's to report */
	assert_int_equal(st_check_place(s, "organization/p/s", 0, &p, NULL), ST_OK);
	assert_int_equal(p.count, 0);
	assert_int_equal(st_check_place(s, "p/s", 0, &p, NULL), ST_OK);
	assert_int_equal(p.count, 0);
	/* ... unless every URN is asked for */
	assert_int_equal(st_check_place(s, "p/s", ST_PLACE_ALL, &p, NULL), ST_OK);
	assert_int_equal(p.count, 1);
	assert_string_equal(p.items[0].rule, "place/urn-mismatch");
	assert_string_equal(p.items[0].pointer, "/checkpoint/latest/resources/1/urn");
	assert_int_equal(p.items[0].severity, ST_SEV_WARNING);
	st_problems_clear(&p);
	/* no place: the URNs against the checkpoint's name, only when asked */
	assert_int_equal(st_check_place(s, NULL, 0, &p, NULL), ST_OK);
	assert_int_equal(p.count, 0);
	assert_int_equal(st_check_place(s, NULL, ST_PLACE_ALL, &p, NULL), ST_OK);
	assert_int_equal(p.count, 1);
	assert_non_null(strstr(p.items[0].message, "1 resource URN names stack 'x' of project 'p'"));
	st_problems_clear(&p);
	/* another place: the checkpoint and both URNs disagree */
	assert_int_equal(st_check_place(s, "organization/p/t", 0, &p, NULL), ST_OK);
	assert_int_equal(p.count, 2);
	assert_string_equal(p.items[0].rule, "place/stack-mismatch");
	assert_string_equal(p.items[0].pointer, "/checkpoint/stack");
	assert_string_equal(p.items[1].rule, "place/urn-mismatch");
	assert_non_null(strstr(p.items[1].message, "2 resource URNs name stack 's' of project 'p'"));
	st_problems_clear(&p);
	/* a legacy place names no project */
	assert_int_equal(st_check_place(s, "s", ST_PLACE_ALL, &p, NULL), ST_OK);
	assert_int_equal(p.count, 1);
	st_problems_clear(&p);
	st_error_clear(&err);
	assert_int_equal(st_check_place(s, "a/b/c/d", 0, &p, &err), ST_EINVAL);
	assert_string_equal(err.message, "'a/b/c/d' is no stack name");
	assert_int_equal(st_check_place(s, "", 0, &p, NULL), ST_EINVAL);
	st_state_free(s);

	/* an export in a backend */
	text = "{\"version\":3,\"deployment\":{}}";
	assert_int_equal(st_state_load_buffer(&s, text, strlen(text), "e", NULL, NULL), ST_OK);
	assert_int_equal(st_check_place(s, "p/s", 0, &p, NULL), ST_OK);
	assert_int_equal(p.count, 1);
	assert_string_equal(p.items[0].rule, "place/export-in-backend");
	assert_int_equal(p.items[0].severity, ST_SEV_ERROR);
	st_problems_clear(&p);
	assert_int_equal(st_check_place(s, NULL, ST_PLACE_ALL, &p, NULL), ST_OK);
	assert_int_equal(p.count, 0);
	st_state_free(s);
}


/* ---- identities ---- */

static char *store_id(const char *url)
{
	st_store *s = NULL;
	char *id = NULL;
	st_error err;
	st_error_clear(&err);
	if (st_store_open(&s, url, &err) != ST_OK)
		fail_msg("%s: %s", url, err.message);
	assert_int_equal(st_store_identity(s, &id, NULL), ST_OK);
	st_store_free(s);
	return id;
}

static char *backend_id(const char *url)
{
	st_backend *b = NULL;
	char *id = NULL;
	st_error err;
	st_error_clear(&err);
	if (st_backend_open(&b, url, &err) != ST_OK)
		fail_msg("%s: %s", url, err.message);
	assert_int_equal(st_backend_identity(b, &id, NULL), ST_OK);
	st_backend_free(b);
	return id;
}

/* The identity of `url` is `want`, and that of every other spelling. */
static void ids(char *(*fn)(const char *), const char *want, const char *const *urls)
{
	for (size_t i = 0; urls[i]; i++) {
		char *id = fn(urls[i]);
		if (strcmp(id, want))
			fail_msg("%s: identity '%s', not '%s'", urls[i], id, want);
		free(id);
	}
}

static void differ(char *(*fn)(const char *), const char *a, const char *b)
{
	char *x = fn(a), *y = fn(b);
	if (!strcmp(x, y))
		fail_msg("'%s' and '%s': the same identity '%s'", a, b, x);
	free(x);
	free(y);
}

static void test_identity_file(void **state)
{
	char *dir = tu_tmpdir(), *real = realpath(dir, NULL), *want, *u[6], *link, *sub;
	st_store *s = NULL;
	st_backend *b = NULL;
	st_error err;
	(void)state;
	want = st_asprintf("file://%s", real);
	link = st_path_join(dir, "link");
	sub = st_path_join(dir, "sub");
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(symlink(sub, link), 0);
	u[0] = st_strdup(dir);
	u[1] = st_asprintf("file://%s", dir);
	u[2] = st_asprintf("%s/", dir);
	u[3] = st_asprintf("file://%s/./sub/..?no_tmp_dir=true", dir);
	u[4] = NULL;
	ids(store_id, want, (const char *const *)u);
	ids(backend_id, want, (const char *const *)u);
	differ(store_id, dir, sub);
	u[5] = store_id(link); /* a symbolic link: the directory it names */
	free(want);
	want = st_asprintf("file://%s/sub", real);
	assert_string_equal(u[5], want);
	/* a name with '?' or '%' cannot pass for a query */
	char *odd = st_path_join(dir, "a?b=%");
	assert_int_equal(mkdir(odd, 0755), 0);
	char *oid = store_id(odd);
	free(want);
	want = st_asprintf("file://%s/a%%3Fb%%3D%%25", real);
	assert_string_equal(oid, want);
	/* a store whose directory is gone has none */
	assert_int_equal(st_store_open(&s, sub, NULL), ST_OK);
	assert_int_equal(st_backend_open(&b, sub, NULL), ST_OK);
	assert_int_equal(unlink(link), 0);
	assert_int_equal(rmdir(sub), 0);
	st_error_clear(&err);
	char *id = (char *)1;
	assert_int_equal(st_store_identity(s, &id, &err), ST_ENOTFOUND);
	assert_null(id);
	assert_non_null(strstr(err.message, "has no real path"));
	assert_int_equal(st_backend_identity(b, &id, NULL), ST_ENOTFOUND);
	st_store_free(s);
	st_backend_free(b);
	for (int i = 0; i < 6; i++)
		free(u[i]);
	free(oid);
	free(odd);
	free(want);
	free(link);
	free(sub);
	free(real);
	tu_rmdir(dir);
}

static void clear_cloud_env(void)
{
	static const char *const vars[] = {
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
		"AWS_ENDPOINT_URL_S3", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
		"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AZURE_STORAGE_CONNECTION_STRING",
		"AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN",
		"AZURE_STORAGE_DOMAIN", "AZURE_STORAGE_PROTOCOL", "AZURE_STORAGE_IS_CDN",
		"AZURE_STORAGE_IS_LOCAL_EMULATOR", "GOOGLE_APPLICATION_CREDENTIALS",
		"GOOGLE_CREDENTIALS", "GOOGLE_OAUTH_ACCESS_TOKEN", "STORAGE_EMULATOR_HOST",
		"GOOGLE_STORAGE_CUSTOM_ENDPOINT", "GOOGLE_BACKEND_STORAGE_CUSTOM_ENDPOINT",
		"PULUMI_ACCESS_TOKEN"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

static void test_identity_clouds(void **state)
{
	char *home = tu_tmpdir();
	(void)state;
	clear_cloud_env();
	setenv("HOME", home, 1);
	setenv("AWS_ACCESS_KEY_ID", "AKTEST", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "sk-not-in-any-identity", 1);
	/* s3: the parameters in any order, the endpoint's case, its scheme's port and '/', the
	 * region and the addressing style do not matter; credentials are no part of it */
	const char *s3[] = {
		"s3://b/p?endpoint=http://127.0.0.1:9000&use_path_style=true&region=us-east-1",
		"s3://b/p/?region=eu-west-1&use_path_style=false&endpoint=http://127.0.0.1:9000/",
		NULL};
	ids(store_id, "s3://b/p/?endpoint=http://127.0.0.1:9000", s3);
	const char *s3h[] = {"s3://b/p?endpoint=https://S3.Example.COM:443",
			     "s3://b/p?endpoint=s3.example.com", NULL};
	ids(store_id, "s3://b/p/?endpoint=https://s3.example.com", s3h);
	const char *aws[] = {"s3://b?region=us-east-1", "s3://b/?region=eu-west-1", "s3://b", NULL};
	ids(store_id, "s3://b/", aws);
	setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000", 1);
	const char *s3e[] = {"s3://b/p", NULL};
	ids(store_id, "s3://b/p/?endpoint=http://127.0.0.1:9000", s3e);
	unsetenv("AWS_ENDPOINT_URL_S3");
	const char *ep = "s3://b/p?endpoint=http://127.0.0.1:9000";
	differ(store_id, ep, "s3://c/p?endpoint=http://127.0.0.1:9000");
	differ(store_id, ep, "s3://b/q?endpoint=http://127.0.0.1:9000");
	differ(store_id, ep, "s3://b/p?endpoint=http://127.0.0.1:9001");
	differ(store_id, "s3://b/p?endpoint=http://127.0.0.1:9000", "s3://b/p");
	differ(store_id, "s3://b/p", "s3://b/p/q");
	/* azblob: the account and domain, given or from the environment */
	setenv("AZURE_STORAGE_ACCOUNT", "acct", 1);
	setenv("AZURE_STORAGE_KEY", "a2V5", 1);
	const char *az[] = {"azblob://c/p", "azblob://c/p/?domain=blob.core.windows.net",
			    "azblob://c/p?storage_account=acct&protocol=https", NULL};
	ids(store_id, "azblob://c/p/?service=https://acct.blob.core.windows.net", az);
	differ(store_id, "azblob://c/p", "azblob://c/p?storage_account=other");
	differ(store_id, "azblob://c/p", "azblob://d/p");
	differ(store_id, "azblob://c/p", "azblob://c/q");
	differ(store_id, "azblob://c/p", "azblob://c/p?domain=blob.core.chinacloudapi.cn");
	unsetenv("AZURE_STORAGE_ACCOUNT");
	unsetenv("AZURE_STORAGE_KEY");
	/* gs: bucket and prefix at the API */
	setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "tok-not-in-any-identity", 1);
	const char *gs[] = {"gs://b/p", "gs://b/p/", NULL};
	ids(store_id, "gs://b/p/?api=https://storage.googleapis.com/storage/v1", gs);
	differ(store_id, "gs://b/p", "gs://c/p");
	differ(store_id, "gs://b/p", "gs://b/q");
	setenv("GOOGLE_STORAGE_CUSTOM_ENDPOINT", "http://127.0.0.1:4443/storage/v1/", 1);
	const char *gse[] = {"gs://b/p", NULL};
	ids(store_id, "gs://b/p/?api=http://127.0.0.1:4443/storage/v1", gse);
	unsetenv("GOOGLE_STORAGE_CUSTOM_ENDPOINT");
	unsetenv("GOOGLE_OAUTH_ACCESS_TOKEN");
	/* Pulumi Cloud: the service URL */
	setenv("PULUMI_ACCESS_TOKEN", "pul-not-in-any-identity", 1);
	const char *cl[] = {"https://api.pulumi.com", "https://API.Pulumi.com:443/",
			    "https://api.pulumi.com//", NULL};
	ids(backend_id, "https://api.pulumi.com", cl);
	differ(backend_id, "https://api.pulumi.com", "https://api.pulumi.com:8443");
	differ(backend_id, "https://api.pulumi.com", "http://api.pulumi.com");
	differ(backend_id, "https://api.pulumi.com", "https://app.example.com");
	clear_cloud_env();
	tu_rmdir(home);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_project_layout),
		cmocka_unit_test(test_legacy_layout_and_errors),
		cmocka_unit_test(test_stack_locks),
		cmocka_unit_test(test_file_locks),
		cmocka_unit_test(test_check_place),
		cmocka_unit_test(test_identity_file),
		cmocka_unit_test(test_identity_clouds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
