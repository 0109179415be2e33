/* "err may be NULL everywhere": every fallible public function, on an input it refuses, returns
 * the same code with err NULL as with an error record, and with a record sets its code to that
 * and a message. One case per function (tests/symbols.sh checks that every function of
 * statetool.h taking an st_error has one here or, when only an allocation failure can make it
 * fail, in tests/test_alloc.c's err_null list). */
#include "testutil.h"
#include "contract.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

/* What the cases share, made once: a scratch directory, a backend in it, states, managers. */
static struct {
	char *dir;
	char *missing;    /* a path under a directory that does not exist */
	st_store *store;  /* the file store at dir */
	st_backend *b;    /* a DIY backend at dir/backend */
	st_index *ro;     /* a read-only index */
	st_secrets *locked; /* a passphrase manager without its passphrase */
	st_secrets *b64;
	st_schema *unsupported; /* a schema using $dynamicRef (not implemented) */
} F;

static char *scratch(const char *name)
{
	return st_path_join(F.dir, name);
}

static st_state *text_state(const char *text)
{
	st_state *s = NULL;
	assert_int_equal(st_state_load_buffer(&s, text, strlen(text), "t.json", NULL, NULL),
			 ST_OK);
	return s;
}

static const char empty_v3[] = "{\"version\":3,\"deployment\":{\"manifest\":{},\"resources\":[]}}";

/* ---- the cases: each returns the call's result (pointer results: ST_OK or -1) ---- */

static int c_set_threads(st_error *err) { return st_set_threads(5, err); }

static int c_set_hooks(st_error *err)
{
	st_hooks h = ST_HOOKS_INIT;
	h.version = 0;
	return st_set_hooks(&h, err);
}

static int c_set_net(st_error *err)
{
	st_net_opts o = ST_NET_OPTS_INIT;
	o.timeout_ms = -1;
	return st_set_net(&o, err);
}

static int c_json_parse(st_error *err)
{
	json_t *v = NULL;
	int rc = st_json_parse(&v, "{\"a\":", 5, "x", NULL, NULL, NULL, err);
	assert_null(v);
	return rc;
}

static int c_json_load_file(st_error *err)
{
	json_t *v = NULL;
	return st_json_load_file(&v, F.missing, 0, NULL, NULL, NULL, err);
}

static int c_schema_compile(st_error *err) { return st_schema_compile(F.unsupported, err); }

static int c_schema_validate(st_error *err)
{
	json_t *v = json_object();
	int rc = st_schema_validate(F.unsupported, "urn:not-there", v, NULL, NULL, err);
	json_decref(v);
	return rc;
}

static int c_store_open(st_error *err)
{
	st_store *s = NULL;
	return st_store_open(&s, "nosuchscheme://x/y", err);
}

static int c_store_open_file(st_error *err)
{
	st_store *s = NULL;
	char *key = NULL;
	return st_store_open_file(&s, &key, "", err);
}

static int c_store_read(st_error *err)
{
	char *d = NULL;
	size_t n = 0;
	return st_store_read(F.store, "missing", 0, &d, &n, NULL, err);
}

static int c_store_stat(st_error *err) { return st_store_stat(F.store, "missing", NULL, err); }

/* The writer's write fails: the file size limit is 0 (SIGXFSZ ignored: write gives EFBIG). */
static int fill_through_writer(void *ctx, st_store_writer *w, st_error *err)
{
	int *rc = ctx;
	*rc = st_store_writer_write(w, "0123456789", 10, err);
	return *rc;
}

static int writer_case(st_error *err)
{
	struct rlimit old, none = {0, 0};
	int wrc = ST_OK, rc;
	getrlimit(RLIMIT_FSIZE, &old);
	none.rlim_max = old.rlim_max;
	signal(SIGXFSZ, SIG_IGN);
	setrlimit(RLIMIT_FSIZE, &none);
	rc = st_store_write_fill(F.store, "big", fill_through_writer, &wrc, NULL, err);
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(rc, wrc);
	return wrc;
}

static int c_store_writer_write(st_error *err) { return writer_case(err); }

static int c_store_write(st_error *err)
{
	return st_store_write(F.store, "../outside", "x", 1, NULL, err);
}

static int c_store_write_fill(st_error *err)
{
	int wrc = ST_OK;
	return st_store_write_fill(F.store, "/abs", fill_through_writer, &wrc, NULL, err);
}

static int c_store_list(st_error *err)
{
	st_store_entry *e = NULL;
	size_t n = 0;
	return st_store_list(F.store, "../", 0, &e, &n, err);
}

static int c_store_delete(st_error *err) { return st_store_delete(F.store, "missing", err); }

/* A store (or backend) whose directory is gone has no identity: a fresh one each call. */
static int gone_identity(int backend, st_error *err)
{
	static int n;
	char name[32], *dir, *id = NULL;
	st_store *s = NULL;
	st_backend *b = NULL;
	int rc;
	snprintf(name, sizeof(name), "gone-%d", n++);
	dir = scratch(name);
	assert_int_equal(mkdir(dir, 0755), 0);
	if (backend)
		assert_int_equal(st_backend_open(&b, dir, NULL), ST_OK);
	else
		assert_int_equal(st_store_open(&s, dir, NULL), ST_OK);
	assert_int_equal(rmdir(dir), 0);
	rc = backend ? st_backend_identity(b, &id, err) : st_store_identity(s, &id, err);
	assert_null(id);
	st_store_free(s);
	st_backend_free(b);
	free(dir);
	return rc;
}

static int c_store_identity(st_error *err) { return gone_identity(0, err); }

static int c_backend_identity(st_error *err) { return gone_identity(1, err); }

static int c_store_copy(st_error *err) { return st_store_copy(F.store, "missing", "x", err); }

static int c_file_read(st_error *err)
{
	char *d = NULL;
	size_t n = 0;
	return st_file_read(F.missing, 0, &d, &n, NULL, err);
}

static int c_file_decompress(st_error *err)
{
	static const char bad_gzip[] = "\x1f\x8b\x08\x00garbage";
	char *d = NULL;
	size_t n = 0;
	return st_file_decompress(bad_gzip, sizeof(bad_gzip) - 1, 0, "x.gz", &d, &n, NULL, err);
}

static int c_file_write_atomic(st_error *err)
{
	return st_file_write_atomic(F.missing, "x", 1, NULL, err);
}

static int c_state_load_file(st_error *err)
{
	st_state *s = NULL;
	return st_state_load_file(&s, F.missing, NULL, err);
}

static int c_state_load_buffer(st_error *err)
{
	st_state *s = NULL;
	int rc = st_state_load_buffer(&s, "{}", 2, "x", NULL, err);
	assert_null(s);
	return rc;
}

static int c_state_from_json(st_error *err)
{
	st_state *s = NULL;
	return st_state_from_json(&s, json_integer(1), NULL, NULL, "x", err);
}

static int c_state_set_envelope(st_error *err)
{
	st_state *s = text_state(empty_v3);
	int rc = st_state_set_envelope(s, ST_ENVELOPE_CHECKPOINT, NULL, err);
	st_state_free(s);
	return rc;
}

static int c_state_save(st_error *err)
{
	st_state *s = text_state(empty_v3);
	int rc = st_state_save(s, F.missing, NULL, err);
	st_state_free(s);
	return rc;
}

static int c_validate(st_error *err)
{
	st_state *s = text_state(empty_v3);
	st_validate_opts o = ST_VALIDATE_OPTS_INIT;
	st_problems p = {0};
	int rc;
	o.skip_schema = 1;
	o.extra = &F.unsupported;
	o.nextra = 1;
	rc = st_validate(s, &o, &p, err);
	st_problems_clear(&p);
	st_state_free(s);
	return rc;
}

static int c_validate_import_file(st_error *err)
{
	json_t *doc = json_object();
	st_problems p = {0};
	int rc = st_validate_import_file(doc, F.unsupported, &p, err);
	st_problems_clear(&p);
	json_decref(doc);
	return rc;
}

static int c_state_find(st_error *err)
{
	st_state *s = text_state(empty_v3);
	size_t *idx = NULL, n = 0;
	int rc = st_state_find(s, "nothing", &idx, &n, err);
	free(idx);
	st_state_free(s);
	return rc;
}

static int c_state_find_ex(st_error *err)
{
	st_state *s = text_state(empty_v3);
	size_t *idx = NULL, n = 0;
	int rc = st_state_find_ex(s, "nothing", ST_FIND_LIVE, &idx, &n, err);
	free(idx);
	st_state_free(s);
	return rc;
}

static int c_state_get(st_error *err)
{
	st_state *s = text_state(empty_v3);
	size_t idx = 0;
	int rc = st_state_get(s, "urn:nothing", &idx, NULL, err);
	st_state_free(s);
	return rc;
}

static int c_resource_text(st_error *err)
{
	char *out = NULL;
	json_t *v = json_string("x");
	int rc = st_resource_text(v, 0, NULL, &out, NULL, err);
	json_decref(v);
	free(out);
	return rc;
}

static int c_resource_json(st_error *err)
{
	json_t *out = NULL;
	json_t *v = json_string("x");
	int rc = st_resource_json(v, 0, NULL, &out, err);
	json_decref(v);
	json_decref(out);
	return rc;
}

/* A session on a copy of edit/base.json, for the edit cases. */
typedef struct session {
	st_state *s;
	st_edit *e;
} session;

static session open_session(const char *fixture)
{
	session x;
	x.s = tu_load(fixture);
	assert_int_equal(st_edit_begin(&x.e, x.s, NULL, NULL), ST_OK);
	return x;
}

static void close_session(session *x)
{
	st_edit_free(x->e);
	st_state_free(x->s);
}

static size_t index_of(st_state *s, const char *q)
{
	size_t *h = NULL, n = 0, i;
	assert_int_equal(st_state_find(s, q, &h, &n, NULL), ST_OK);
	i = h[0];
	free(h);
	return i;
}

static int c_edit_delete(st_error *err)
{
	session x = open_session("edit/base.json");
	st_handle t = tu_handle(x.e, index_of(x.s, "assets")); /* protected, depended on */
	int rc = st_edit_delete(x.e, &t, 1, 0, NULL, err);
	close_session(&x);
	return rc;
}

static int c_edit_rename(st_error *err)
{
	session x = open_session("edit/base.json");
	int rc = st_edit_rename(x.e, tu_handle(x.e, index_of(x.s, "logs")), "", err);
	close_session(&x);
	return rc;
}

static int c_edit_pending_import(st_error *err)
{
	session x = open_session("edit/base.json");
	const char *urn = "urn:pulumi:dev::shop::aws:sqs/queue:Queue::nothing-pending", *id = "x";
	int rc = st_edit_pending_import(x.e, &urn, &id, 1, err);
	close_session(&x);
	return rc;
}

static int c_backend_doctor(st_error *err)
{
	st_doctor_opts o = ST_DOCTOR_OPTS_INIT;
	st_doctor_report r;
	o.version = 99; /* refused before anything is read */
	return st_backend_doctor(F.b, &o, &r, err);
}

static int c_state_rename_stack(st_error *err)
{
	session x = open_session("edit/base.json");
	int rc = st_state_rename_stack(x.s, "a b", NULL, "dev", NULL, NULL, err);
	close_session(&x);
	return rc;
}

static int c_backend_rename_stack(st_error *err)
{
	return st_backend_rename_stack(F.b, "a/b/c/d", "x", NULL, err); /* no such name */
}

static int c_backend_rename_stack_ex(st_error *err)
{
	return st_backend_rename_stack_ex(F.b, "a/b/c/d", "x", 0, NULL, NULL, err); /* no such name */
}

static int c_edit_set_flag(st_error *err)
{
	session x = open_session("edit/base.json");
	st_handle t = tu_handle(x.e, 0);
	int rc = st_edit_set_flag(x.e, &t, 1, "no-such-flag", 1, NULL, err);
	close_session(&x);
	return rc;
}

static int c_edit_handle_at(st_error *err)
{
	session x = open_session("edit/base.json");
	st_handle h;
	int rc = st_edit_handle_at(x.e, 1000, &h, err);
	close_session(&x);
	return rc;
}

static int c_edit_handle_of(st_error *err)
{
	session x = open_session("edit/base.json");
	st_handle h;
	int rc = st_edit_handle_of(x.e, "urn:pulumi:dev::shop::m:i:R::nothing", &h, err);
	close_session(&x);
	return rc;
}

/* The same state on both sides. */
static int c_edit_commit_pair(st_error *err)
{
	session x = open_session("edit/base.json");
	st_edit *other = NULL;
	int rc;
	assert_int_equal(st_edit_begin(&other, x.s, NULL, NULL), ST_OK);
	rc = st_edit_commit_pair(x.e, other, NULL, NULL, NULL, NULL, NULL, err);
	st_edit_free(other);
	close_session(&x);
	return rc;
}

static int c_edit_import(st_error *err)
{
	session x = open_session("edit/base.json");
	st_import_report r;
	json_t *doc = tu_json("{\"resources\":[{\"type\":\"m:i:R\",\"name\":\"x\"}]}");
	int rc = st_edit_import(x.e, doc, NULL, &r, NULL, err);
	st_import_report_clear(&r);
	json_decref(doc);
	close_session(&x);
	return rc;
}

static int c_edit_move(st_error *err)
{
	session a = open_session("edit/base.json"), b = open_session("edit/base.json");
	st_move_opts o = ST_MOVE_OPTS_INIT;
	st_move_report r;
	const char *pat = "urn:pulumi:nothing::x::m:i:R::y";
	int rc;
	o.patterns = &pat;
	o.npatterns = 1;
	rc = st_edit_move(a.e, b.e, &o, &r, err);
	st_move_report_clear(&r);
	close_session(&a);
	close_session(&b);
	return rc;
}

static int c_edit_repair(st_error *err)
{
	st_state *s = text_state(
		"{\"version\":3,\"deployment\":{\"resources\":["
		"{\"urn\":\"urn:pulumi:s::p::a:b:C::x\",\"custom\":false,\"type\":\"a:b:C\","
		"\"dependencies\":[\"urn:pulumi:s::p::a:b:C::y\"]},"
		"{\"urn\":\"urn:pulumi:s::p::a:b:C::y\",\"custom\":false,\"type\":\"a:b:C\","
		"\"dependencies\":[\"urn:pulumi:s::p::a:b:C::x\"]}]}}");
	st_edit *e = NULL;
	int rc;
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	rc = st_edit_repair(e, err);
	st_edit_free(e);
	st_state_free(s);
	return rc;
}

static int c_edit_replace_provider(st_error *err)
{
	session x = open_session("edit/base.json");
	int rc = st_edit_replace_provider(x.e, "nope", "nope either", NULL, err);
	close_session(&x);
	return rc;
}

static int c_edit_replace_deployment(st_error *err)
{
	session x = open_session("edit/base.json");
	int rc = st_edit_replace_deployment(x.e, json_integer(1), err);
	close_session(&x);
	return rc;
}

/* A deployment whose only resource has a parent that is not there: a valid state made invalid,
 * which commit refuses. */
static json_t *orphan_deployment(void)
{
	return tu_json("{\"manifest\":{},\"resources\":[{\"urn\":\"urn:pulumi:dev::shop::a:b:C::x\","
		       "\"custom\":false,\"type\":\"a:b:C\","
		       "\"parent\":\"urn:pulumi:dev::shop::a:b:C::gone\"}]}");
}

static int c_edit_commit(st_error *err)
{
	session x = open_session("edit/base.json");
	int rc;
	assert_int_equal(st_edit_replace_deployment(x.e, orphan_deployment(), NULL), ST_OK);
	rc = st_edit_commit(x.e, NULL, NULL, err);
	close_session(&x);
	return rc;
}

static int c_edit_commit_save(st_error *err)
{
	session x = open_session("edit/base.json");
	int rc = st_edit_commit_save(x.e, F.missing, NULL, 1, NULL, NULL, NULL, err);
	close_session(&x);
	return rc;
}

static int c_edit_commit_save_stack(st_error *err)
{
	session x = open_session("edit/base.json");
	int rc = st_edit_commit_save_stack(x.e, F.b, "no/such/thing/here", 1, NULL, NULL, NULL,
					   err);
	close_session(&x);
	return rc;
}

static int c_secrets_open(st_error *err)
{
	st_secrets *s = NULL;
	json_t *sp = tu_json("{\"type\":\"passphrase\",\"state\":{\"salt\":\"not a salt\"}}");
	int rc = st_secrets_open(&s, sp, "pw", 2, err);
	json_decref(sp);
	return rc;
}

static int c_secrets_custom(st_error *err)
{
	st_secrets *s = NULL;
	st_secrets_callbacks cb = ST_SECRETS_CALLBACKS_INIT;
	cb.version = 0;
	return st_secrets_custom(&s, "x", &cb, err);
}

static int c_secrets_encrypt(st_error *err)
{
	char *ct = NULL;
	return st_secrets_encrypt(F.locked, "1", 1, &ct, err);
}

static int c_secrets_decrypt(st_error *err)
{
	char *pt = NULL;
	size_t n = 0;
	return st_secrets_decrypt(F.b64, "not base64 !", &pt, &n, err);
}

static int c_secrets_reveal(st_error *err)
{
	st_state *s = tu_load("pulumi/valid-deployment-v3.json");
	int rc = st_secrets_reveal(s, F.locked, err);
	st_state_free(s);
	return rc;
}

static int c_edit_secrets_encrypt(st_error *err)
{
	session x = open_session("validate/secrets-plaintext.json");
	int rc = st_edit_secrets_encrypt(x.e, F.locked, NULL, err);
	close_session(&x);
	return rc;
}

static int c_edit_secrets_rekey(st_error *err)
{
	session x = open_session("pulumi/valid-deployment-v3.json");
	int rc = st_edit_secrets_rekey(x.e, F.locked, F.b64, NULL, err);
	close_session(&x);
	return rc;
}

static int c_config_rekey(st_error *err)
{
	return st_config_rekey(F.missing, F.b64, F.b64, NULL, err);
}

static int c_config_rekey_text(st_error *err)
{
	char *out = NULL;
	int rc = st_config_rekey_text("config:\n  p:a:\n    secure: not-base64!\n", 39,
				      "Pulumi.dev.yaml", F.b64, F.b64, &out, NULL, NULL, err);
	free(out);
	return rc;
}

static int c_config_scan(st_error *err)
{
	char *salt = NULL;
	int rc = st_config_scan("config: [\n", 10, "Pulumi.dev.yaml", &salt, NULL, err);
	free(salt);
	return rc;
}

static int c_stack_names(st_error *err)
{
	st_state *s = text_state(empty_v3);
	char *stack = NULL, *project = NULL;
	int rc = st_stack_names(s, NULL, NULL, &stack, &project, err);
	st_state_free(s);
	return rc;
}

static int c_move(st_error *err)
{
	st_state *a = text_state(empty_v3), *b = text_state(empty_v3);
	st_move_opts o = ST_MOVE_OPTS_INIT;
	st_move_report r;
	const char *pat = "*";
	int rc;
	o.patterns = &pat;
	o.npatterns = 1;
	rc = st_move(a, NULL, b, NULL, &o, &r, err);
	st_move_report_clear(&r);
	st_state_free(a);
	st_state_free(b);
	return rc;
}

static int c_journal_write_pair(st_error *err)
{
	char *other = scratch("pair-b.json");
	int rc = st_journal_write_pair("move", F.missing, "a", 1, other, "b", 1, err);
	free(other);
	return rc;
}

static int c_state_save_pair(st_error *err)
{
	st_state *a = text_state(empty_v3), *b = text_state(empty_v3);
	char *other = scratch("pair-b.json");
	int rc = st_state_save_pair("move", a, F.missing, b, other, err);
	free(other);
	st_state_free(a);
	st_state_free(b);
	return rc;
}

/* A journal beside the file of a version statetool does not know. */
static int c_journal_recover(st_error *err)
{
	char *p = scratch("rec.json"), *j = scratch("rec.json.statetool-journal");
	st_changes ch = {0};
	int rc;
	tu_write(p, "{}", 2);
	tu_write(j, "{\"statetool_journal\":99,\"files\":[]}", 35);
	assert_int_equal(st_journal_pending(p, NULL), 1);
	rc = st_journal_recover(p, &ch, err);
	st_changes_clear(&ch);
	unlink(j);
	free(j);
	free(p);
	return rc;
}

static int c_import(st_error *err)
{
	st_state *s = text_state(empty_v3);
	st_import_report r;
	json_t *doc = tu_json("{\"resources\":[{\"type\":\"m:i:R\",\"name\":\"x\",\"id\":\"x\"}]}");
	int rc = st_import(s, NULL, doc, NULL, &r, NULL, err);
	st_import_report_clear(&r);
	json_decref(doc);
	st_state_free(s);
	return rc;
}

static int c_import_generate(st_error *err)
{
	st_state *s = text_state(empty_v3);
	size_t idx = 7;
	json_t *doc = st_import_generate(s, &idx, 1, err);
	st_state_free(s);
	if (doc) {
		json_decref(doc);
		return ST_OK;
	}
	return -1;
}

static int c_index_open(st_error *err)
{
	st_index *ix = NULL;
	return st_index_open(&ix, F.missing, 1, NULL, err);
}

static int c_index_update_state(st_error *err)
{
	st_state *s = text_state(empty_v3);
	int rc = st_index_update_state(F.ro, "organization/p/s", NULL, s, err);
	st_state_free(s);
	return rc;
}

static int c_index_update_backend(st_error *err)
{
	return st_index_update_backend(F.ro, F.b, NULL, NULL, NULL, NULL, err);
}

static int c_index_update_files(st_error *err)
{
	const char *paths[] = {F.missing};
	return st_index_update_files(F.ro, paths, 1, 1, NULL, NULL, NULL, NULL, err);
}

static int c_index_update_stack(st_error *err)
{
	return st_index_update_stack(F.ro, F.b, "proj/dev", NULL, NULL, err);
}

static int c_index_query_run(st_error *err)
{
	st_index_query q = ST_INDEX_QUERY_INIT;
	q.version = 0;
	return st_index_query_run(F.ro, &q, NULL, NULL, err);
}

static int c_index_sql(st_error *err)
{
	return st_index_sql(F.ro, "DELETE FROM stacks", NULL, NULL, err);
}

static int c_provider_ref_parse(st_error *err)
{
	char *urn = NULL, *id = NULL;
	return st_provider_ref_parse("no reference", &urn, &id, err);
}

static int c_backend_default_url(st_error *err)
{
	char *dir = scratch("project"), *yaml = scratch("project/Pulumi.yaml"), *url = NULL;
	char cwd[4096];
	const char *env = getenv("PULUMI_BACKEND_URL");
	char *saved = env ? strdup(env) : NULL;
	int rc;

	mkdir(dir, 0700);
	tu_write(yaml, "backend: [\n", 11); /* not YAML */
	unsetenv("PULUMI_BACKEND_URL");
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	rc = st_backend_default_url(&url, NULL, err);
	assert_int_equal(chdir(cwd), 0);
	if (saved)
		setenv("PULUMI_BACKEND_URL", saved, 1);
	free(saved);
	free(url);
	unlink(yaml);
	rmdir(dir);
	free(yaml);
	free(dir);
	return rc;
}

static int c_backend_open(st_error *err)
{
	st_backend *b = NULL;
	char *bad = scratch("not-a-backend");
	int rc;
	tu_write(bad, "x", 1); /* a file, not a directory */
	rc = st_backend_open(&b, bad, err);
	st_backend_free(b);
	free(bad);
	return rc;
}

static const char bad_stack[] = "a/b/c/d";

static int c_backend_resolve(st_error *err)
{
	char *q = NULL;
	int ex = 0;
	return st_backend_resolve(F.b, bad_stack, &q, &ex, err);
}

static int c_backend_resolve_key(st_error *err)
{
	char *q = NULL, *k = NULL;
	int ex = 0;
	return st_backend_resolve_key(F.b, bad_stack, &q, &k, &ex, err);
}

static int c_backend_load(st_error *err)
{
	st_state *s = NULL;
	return st_backend_load(F.b, "proj/missing", NULL, &s, err);
}

static int c_backend_save(st_error *err)
{
	st_state *s = text_state(empty_v3);
	int rc = st_backend_save(F.b, bad_stack, s, NULL, err);
	st_state_free(s);
	return rc;
}

static int c_backend_stack_key(st_error *err)
{
	char *k = NULL;
	int ex = 0;
	return st_backend_stack_key(F.b, bad_stack, &k, &ex, err);
}

static int c_backend_stack_bak(st_error *err)
{
	char *k = NULL;
	int ex = 0;
	return st_backend_stack_bak(F.b, bad_stack, &k, &ex, err);
}

static int c_backend_stack_path(st_error *err)
{
	char *p = NULL;
	int ex = 0;
	return st_backend_stack_path(F.b, bad_stack, &p, &ex, err);
}

static int c_backend_generations(st_error *err)
{
	st_generation *g = NULL;
	size_t n = 0;
	int rc = st_backend_generations(F.b, bad_stack, &g, &n, err);
	st_generations_free(g, n);
	return rc;
}

static int c_backend_generation_load(st_error *err)
{
	st_state *s = NULL;
	return st_backend_generation_load(F.b, bad_stack, "bak", NULL, &s, err);
}

static int c_backend_keep_generation(st_error *err)
{
	return st_backend_keep_generation(F.b, bad_stack, err);
}

static int c_backend_keep_saved_generation(st_error *err)
{
	return st_backend_keep_saved_generation(F.b, bad_stack, err);
}

static int c_compare_text(st_error *err)
{
	char *out = NULL;
	json_t *v = json_object();
	int rc = st_compare_text(v, &out, NULL, err);
	json_decref(v);
	free(out);
	return rc;
}

/* The same object on both sides. */
static int c_journal_save(st_error *err)
{
	st_state *a = text_state(empty_v3);
	st_pair_side A = {F.store, "same.json", NULL, a};
	int rc = st_journal_save("move", &A, &A, err);
	st_state_free(a);
	return rc;
}

static int c_journal_recover_key(st_error *err)
{
	char *j = scratch("rk.json.statetool-journal");
	int rc;
	tu_write(j, "{\"statetool_journal\":99,\"sides\":[]}", 35);
	assert_int_equal(st_journal_pending_key(F.store, "rk.json"), 1);
	rc = st_journal_recover_key(F.store, "rk.json", NULL, 0, 0, NULL, err);
	unlink(j);
	free(j);
	return rc;
}

static int c_pair_unlock_dead(st_error *err)
{
	return st_pair_unlock_dead(F.store, "a.json", F.store, "../b.json", NULL, err);
}

static int c_backend_save_pair(st_error *err)
{
	st_state *a = text_state(empty_v3), *b = text_state(empty_v3);
	int rc = st_backend_save_pair("move", F.b, bad_stack, a, F.b, "proj/other", b, err);
	st_state_free(a);
	st_state_free(b);
	return rc;
}

static int c_backend_recover(st_error *err)
{
	return st_backend_recover(F.b, bad_stack, NULL, 0, 0, NULL, err);
}

static int c_backend_stack_target(st_error *err)
{
	st_state *s = text_state(empty_v3);
	char *k = NULL, *o = NULL;
	int rc = st_backend_stack_target(F.b, bad_stack, s, &k, &o, err);
	st_state_free(s);
	return rc;
}

static int c_backend_load_json(st_error *err)
{
	json_t *doc = NULL;
	st_style st;
	return st_backend_load_json(F.b, "proj/missing", 0, &doc, &st, NULL, NULL, err);
}

static int c_check_place(st_error *err)
{
	st_state *s = text_state(empty_v3);
	st_problems p = {0};
	int rc = st_check_place(s, bad_stack, 0, &p, err);
	st_problems_clear(&p);
	st_state_free(s);
	return rc;
}

static int c_lock_stack(st_error *err)
{
	st_lock *l = NULL;
	return st_lock_stack(&l, F.b, bad_stack, err);
}

static int c_lock_check_stack(st_error *err)
{
	return st_lock_check_stack(F.b, bad_stack, err);
}

/* A file whose lock another holds. */
static int c_lock_check_file(st_error *err)
{
	char *p = scratch("clocked.json");
	st_lock *l = NULL;
	int rc;
	assert_int_equal(st_lock_file(&l, p, NULL), ST_OK);
	rc = st_lock_check_file(p, err);
	assert_int_equal(st_lock_release(l, NULL), ST_OK);
	free(p);
	return rc;
}

static int c_lock_file(st_error *err)
{
	st_lock *l = NULL;
	return st_lock_file(&l, F.missing, err);
}

/* The lock's file replaced by a folder that is not empty: it cannot be removed. */
static int c_lock_release(st_error *err)
{
	char *p = scratch("locked.json"), *lk = scratch("locked.json.lock");
	char *inner = scratch("locked.json.lock/x");
	st_lock *l = NULL;
	int rc;
	assert_int_equal(st_lock_file(&l, p, NULL), ST_OK);
	unlink(lk);
	mkdir(lk, 0700);
	tu_write(inner, "x", 1);
	rc = st_lock_release(l, err);
	unlink(inner);
	rmdir(lk);
	free(inner);
	free(lk);
	free(p);
	return rc;
}

static int c_unlock_stack(st_error *err)
{
	int n = 0;
	return st_unlock_stack(F.b, bad_stack, &n, err);
}

static int c_unlock_file(st_error *err)
{
	char *p = scratch("ulocked.json"), *lk = scratch("ulocked.json.lock");
	char *inner = scratch("ulocked.json.lock/x");
	int n = 0, rc;
	mkdir(lk, 0700);
	tu_write(inner, "x", 1);
	rc = st_unlock_file(p, &n, err);
	unlink(inner);
	rmdir(lk);
	free(inner);
	free(lk);
	free(p);
	return rc;
}

static int c_backend_upgrade(st_error *err)
{
	st_upgrade_opts o = ST_UPGRADE_OPTS_INIT;
	o.version = 99; /* refused before anything is read */
	return st_backend_upgrade(F.b, &o, NULL, err);
}

/* ---- the table and its driver ---- */

typedef struct err_case {
	const char *name;
	int (*call)(st_error *err);
} err_case;

#define CASE(fn) {"st_" #fn, c_##fn}
static const err_case cases[] = {
	CASE(set_threads), CASE(set_hooks), CASE(set_net), CASE(json_parse), CASE(json_load_file),
	CASE(schema_compile), CASE(schema_validate), CASE(store_open),
	CASE(store_open_file), CASE(store_read), CASE(store_stat), CASE(store_writer_write),
	CASE(store_write), CASE(store_write_fill), CASE(store_list), CASE(store_delete), CASE(store_identity), CASE(backend_identity),
	CASE(store_copy), CASE(file_read), CASE(file_decompress), CASE(file_write_atomic),
	CASE(state_load_file), CASE(state_load_buffer),
	CASE(state_from_json), CASE(state_set_envelope), CASE(state_save), CASE(validate),
	CASE(validate_import_file), CASE(state_find), CASE(state_find_ex), CASE(state_get), CASE(resource_text),
	CASE(resource_json),
	CASE(edit_delete), CASE(edit_rename), CASE(edit_set_flag), CASE(edit_repair),
	CASE(edit_replace_provider), CASE(edit_replace_deployment),
	CASE(edit_commit), CASE(edit_commit_save), CASE(edit_commit_save_stack),
	CASE(edit_handle_at), CASE(edit_handle_of), CASE(edit_commit_pair),
	CASE(edit_import),
	CASE(edit_move),
	CASE(secrets_open), CASE(secrets_custom), CASE(secrets_encrypt), CASE(secrets_decrypt),
	CASE(secrets_reveal), CASE(edit_secrets_encrypt),
	CASE(edit_secrets_rekey), CASE(config_rekey), CASE(config_rekey_text), CASE(config_scan), CASE(stack_names), CASE(move),
	CASE(journal_write_pair), CASE(state_save_pair), CASE(journal_recover),
	CASE(journal_save), CASE(journal_recover_key), CASE(pair_unlock_dead), CASE(backend_save_pair),
	CASE(backend_recover), CASE(backend_stack_target), CASE(backend_load_json),
	CASE(check_place),
	CASE(import), CASE(import_generate), CASE(index_open),
	CASE(index_update_state), CASE(index_update_backend), CASE(index_update_files), CASE(index_update_stack),
	CASE(index_query_run), CASE(index_sql), CASE(provider_ref_parse), CASE(backend_open), CASE(backend_default_url),
	CASE(backend_resolve), CASE(backend_resolve_key), CASE(backend_load), CASE(backend_save),
	CASE(backend_stack_key), CASE(backend_stack_bak), CASE(backend_stack_path), CASE(lock_stack), CASE(lock_file), CASE(lock_check_stack), CASE(lock_check_file),
	CASE(lock_release), CASE(unlock_stack), CASE(unlock_file), CASE(backend_upgrade),
	CASE(backend_doctor), CASE(edit_pending_import), CASE(backend_generations),
	CASE(backend_generation_load), CASE(backend_keep_generation), CASE(backend_keep_saved_generation), CASE(compare_text),
	CASE(state_rename_stack), CASE(backend_rename_stack), CASE(backend_rename_stack_ex),
};

static void fixture_up(void)
{
	char *bdir, *meta, *pulumi, *ixp;
	json_t *sp, *doc;
	st_index *ix = NULL;

	F.dir = tu_tmpdir();
	F.missing = scratch("no/such/dir/file.json");
	assert_int_equal(st_store_open(&F.store, F.dir, NULL), ST_OK);
	bdir = scratch("backend");
	pulumi = scratch("backend/.pulumi");
	meta = scratch("backend/.pulumi/meta.yaml");
	mkdir(bdir, 0700);
	mkdir(pulumi, 0700);
	tu_write(meta, "version: 1\n", 11);
	assert_int_equal(st_backend_open(&F.b, bdir, NULL), ST_OK);
	ixp = scratch("ix.sqlite");
	assert_int_equal(st_index_open(&ix, ixp, 0, NULL, NULL), ST_OK);
	st_index_close(ix);
	assert_int_equal(st_index_open(&F.ro, ixp, 1, NULL, NULL), ST_OK);
	/* a passphrase manager's provider state, opened without the passphrase (no key
	 * derivation: the salt's check needs the passphrase) */
	sp = tu_json("{\"type\":\"passphrase\",\"state\":{\"salt\":\"v1:AQIDBAUGBwg=:v1:"
		     "AAECAwQFBgcICQoL:IYoikRHf10peey65kizoQjW7FClwEA==\"}}");
	assert_int_equal(st_secrets_open(&F.locked, sp, NULL, 0, NULL), ST_OK);
	json_decref(sp);
	sp = tu_json("{\"type\":\"b64\"}");
	assert_int_equal(st_secrets_open(&F.b64, sp, NULL, 0, NULL), ST_OK);
	json_decref(sp);
	assert_int_equal(st_schema_new(&F.unsupported, NULL), ST_OK);
	doc = tu_json("{\"$id\":\"urn:u\",\"$dynamicRef\":\"#x\"}");
	assert_int_equal(st_schema_add(F.unsupported, doc, NULL, NULL), ST_OK);
	json_decref(doc);
	free(bdir);
	free(pulumi);
	free(meta);
	free(ixp);
}

static void fixture_down(void)
{
	st_schema_free(F.unsupported);
	st_secrets_free(F.locked);
	st_secrets_free(F.b64);
	st_index_close(F.ro);
	st_backend_free(F.b);
	st_store_free(F.store);
	free(F.missing);
	tu_rmdir(F.dir);
	memset(&F, 0, sizeof(F));
}

void test_err_null_everywhere(void **unused)
{
	(void)unused;
	int bad = 0;

	fixture_up();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		st_error err;
		int with, without;
		st_error_clear(&err);
		with = cases[i].call(&err);
		without = cases[i].call(NULL);
		if (with >= 0 || without != with || (with != -1 && err.code != with) ||
		    (with != -1 && !err.message[0])) {
			fprintf(stderr, "%s: %d with an error record (code %d, '%s'), %d without\n",
				cases[i].name, with, err.code, err.message, without);
			bad++;
		}
	}
	fixture_down();
	assert_int_equal(bad, 0);
}
