/*
 * The layers above the store on a store with no local path (tests/memstore.h): the DIY backend,
 * its locks, the index's change detection, and the two-stack journal between two stores, with
 * a failure injected at every step that changes something.
 */
#include "testutil.h"
#include "memstore.h"

#define SK ".pulumi/stacks/test/sourceStack.json"
#define DK ".pulumi/stacks/test/destStack.json"

static char *fixture_text(const char *rel, size_t *len)
{
	char *p = tu_fixture(rel), *t = tu_read(p, len);
	assert_non_null(t);
	free(p);
	return t;
}

/* A DIY backend on a memory store holding the source stack of fixtures/move. */
static mem_store *mem_backend(const char *url, st_backend **b)
{
	mem_store *m = mem_store_new(url);
	size_t len;
	char *t = fixture_text("move/children.json", &len);
	assert_non_null(m);
	assert_int_equal(mem_put(m, ".pulumi/meta.yaml", "version: 1\n", 11), ST_OK);
	assert_int_equal(mem_put(m, SK, t, len), ST_OK);
	free(t);
	if (b)
		assert_int_equal(st__diy_open(b, &m->base, url, NULL), ST_OK);
	return m;
}

static st_state *load(st_backend *b, const char *stack)
{
	st_state *s = NULL;
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st_backend_load(b, stack, NULL, &s, &err), ST_OK);
	return s;
}

/* Every stack-level call of the DIY backend works through the store alone. */
static void test_diy_on_a_store_without_paths(void **unused)
{
	st_backend *b = NULL;
	mem_store *m = mem_backend("mem://a", &b);
	st_stack_info *infos = NULL;
	st_lock *lk = NULL;
	st_state *s;
	size_t n = 0;
	char *key = NULL;
	int exists;
	(void)unused;

	assert_null(st_backend_root(b));
	assert_int_equal(st_backend_list(b, &infos, &n, NULL), ST_OK);
	assert_int_equal(n, 1);
	assert_string_equal(infos[0].qname, "organization/test/sourceStack");
	assert_string_equal(infos[0].key, SK);
	assert_null(infos[0].path);
	assert_string_equal(infos[0].etag, "\"g2\"");
	st_stack_infos_free(infos, n);
	assert_int_equal(st_backend_stack_path(b, "test/sourceStack", &key, &exists, NULL),
			 ST_EUNSUPPORTED);
	s = load(b, "test/sourceStack");
	assert_int_equal(json_array_size(st_state_resources(s, 0)), 3);

	assert_int_equal(st_lock_stack(&lk, b, "test/sourceStack", NULL), ST_OK);
	assert_int_equal(mem_count(m, ".pulumi/locks/organization/test/sourceStack/"), 1);
	assert_int_equal(st_lock_release(lk, NULL), ST_OK);
	assert_int_equal(mem_count(m, ".pulumi/locks/"), 0);

	assert_int_equal(st_backend_save(b, "test/sourceStack", s, NULL, NULL), ST_OK);
	assert_non_null(mem_get(m, SK ".bak"));
	st_state_free(s);
	st_backend_free(b);
}

/* An index update with nothing changed reads no object: the listing decides. */
static void test_index_reads_nothing_unchanged(void **unused)
{
	st_backend *b = NULL;
	mem_store *m = mem_backend("mem://ix", &b);
	char *dir = tu_tmpdir(), *db = st_path_join(dir, "ix.sqlite");
	st_index *ix = NULL;
	st_index_stats stats;
	size_t len;
	char *t;
	(void)unused;

	assert_int_equal(st_index_open(&ix, db, 0, NULL, NULL), ST_OK);
	assert_int_equal(st_index_update_backend(ix, b, NULL, NULL, &stats, NULL, NULL), ST_OK);
	assert_int_equal(stats.parsed, 1);
	m->reads = 0;
	assert_int_equal(st_index_update_backend(ix, b, NULL, NULL, &stats, NULL, NULL), ST_OK);
	assert_int_equal(stats.unchanged, 1);
	assert_int_equal(stats.parsed, 0);
	assert_int_equal(m->reads, 0);
	/* the same bytes written again: a new tag, read once, found unchanged by its hash */
	t = strdup(mem_get(m, SK));
	len = strlen(t);
	assert_int_equal(mem_put(m, SK, t, len), ST_OK);
	assert_int_equal(st_index_update_backend(ix, b, NULL, NULL, &stats, NULL, NULL), ST_OK);
	assert_int_equal(stats.unchanged, 1);
	assert_int_equal(m->reads, 1);
	/* and the new tag is kept: nothing read the next time */
	assert_int_equal(st_index_update_backend(ix, b, NULL, NULL, &stats, NULL, NULL), ST_OK);
	assert_int_equal(m->reads, 1);
	free(t);
	st_index_close(ix);
	st_backend_free(b);
	free(db);
	tu_rmdir(dir);
}

/* The new versions: the source loses its protect flag... any change will do; each side gets
 * a deployment of its own. */
static void change(st_state *s)
{
	json_t *r = json_array_get(st_state_resources(s, 0), 1);
	json_object_set_new(r, "protect", json_true());
	st_state_touch(s);
}

/* A move between a store with no paths and a plain file: both replaced, each old version
 * kept as .bak, nothing left behind. */
static void test_pair_across_stores(void **unused)
{
	st_backend *b = NULL;
	mem_store *m = mem_backend("mem://pair", &b);
	char *dir = tu_tmpdir(), *file = st_path_join(dir, "d.json"), *fkey = NULL, *bak;
	st_store *fs = NULL;
	st_state *a = load(b, "test/sourceStack"), *d = NULL;
	size_t len;
	char *t = fixture_text("move/leaf.json", &len);
	st_error err;
	(void)unused;

	tu_write(file, t, len);
	assert_int_equal(st_state_load_file(&d, file, NULL, NULL), ST_OK);
	change(a);
	change(d);
	assert_int_equal(st_store_open_file(&fs, &fkey, file, NULL), ST_OK);
	{
		st_pair_side A = {&m->base, SK, NULL, a}, B = {fs, fkey, NULL, d};
		st_error_clear(&err);
		assert_int_equal(st_journal_save("move", &A, &B, &err), ST_OK);
		/* the same object twice is refused */
		assert_int_equal(st_journal_save("move", &A, &A, &err), ST_EINVAL);
		assert_non_null(strstr(err.message, "source and destination are the same file"));
	}
	assert_non_null(strstr(mem_get(m, SK), "\"protect\":true"));
	assert_non_null(mem_get(m, SK ".bak"));
	assert_int_equal(mem_count(m, "statetool-"), 0);
	free(t);
	t = tu_read(file, &len);
	assert_non_null(strstr(t, "\"protect\":true"));
	bak = st_asprintf("%s.bak", file);
	assert_int_equal(access(bak, F_OK), 0);
	free(bak);
	free(t);
	st_state_free(a);
	st_state_free(d);
	st_store_free(fs);
	free(fkey);
	free(file);
	st_backend_free(b);
	tu_rmdir(dir);
}

/* Two files (stores that take several threads): the old versions are hashed and the second
 * side staged on threads of their own, and the threaded paths ran (their counters). */
static void test_pair_of_files_two_threads(void **unused)
{
	char *dir = tu_tmpdir(), *pa = st_path_join(dir, "a.json"), *pb = st_path_join(dir, "b.json");
	st_state *a = NULL, *d = NULL;
	size_t len;
	char *t = fixture_text("move/leaf.json", &len), *got;
	unsigned long hash = st__two_count(ST__T_JOURNAL_HASH);
	unsigned long stage = st__two_count(ST__T_JOURNAL_STAGE);
	(void)unused;

	tu_write(pa, t, len);
	tu_write(pb, t, len);
	assert_int_equal(st_state_load_file(&a, pa, NULL, NULL), ST_OK);
	assert_int_equal(st_state_load_file(&d, pb, NULL, NULL), ST_OK);
	change(a);
	change(d);
	st_set_threads(2, NULL);
	assert_int_equal(st_state_save_pair("move", a, pa, d, pb, NULL), ST_OK);
	st_set_threads(0, NULL);
	assert_int_equal(st__two_count(ST__T_JOURNAL_HASH), hash + 1);
	assert_int_equal(st__two_count(ST__T_JOURNAL_STAGE), stage + 1);
	got = tu_read(pa, &len);
	assert_non_null(strstr(got, "\"protect\":true"));
	free(got);
	got = tu_read(pb, &len);
	assert_non_null(strstr(got, "\"protect\":true"));
	free(got);
	free(t);
	st_state_free(a);
	st_state_free(d);
	free(pa);
	free(pb);
	tu_rmdir(dir);
}

/* Recovery after a failure at each change of either store: afterwards both sides are old or
 * both are new, and nothing is left behind. */
static void pair_fail_at(int side, size_t k, size_t *changes)
{
	st_backend *ba = NULL, *bb = NULL;
	mem_store *ma = mem_backend("mem://fa", &ba), *mb = mem_store_new("mem://fb");
	st_state *a, *d = NULL;
	char *olda = strdup(mem_get(ma, SK)), *newa = NULL, *newd = NULL;
	st_store *ka[1], *kb[1];
	st_error err;
	int rc;

	assert_int_equal(mem_put(mb, ".pulumi/meta.yaml", "version: 1\n", 11), ST_OK);
	assert_int_equal(st__diy_open(&bb, &mb->base, "mem://fb", NULL), ST_OK);
	a = load(ba, "test/sourceStack");
	change(a);
	assert_int_equal(st_state_new(&d, NULL), ST_OK);
	assert_int_equal(st_state_set_envelope(d, ST_ENVELOPE_CHECKPOINT,
					       "organization/test/destStack", NULL),
			 ST_OK);
	(side ? mb : ma)->fail_at = k;
	ma->changes = mb->changes = 0;
	st_error_clear(&err);
	rc = st_backend_save_pair("move", ba, "test/sourceStack", a, bb, "test/destStack", d,
				  &err);
	if (changes)
		*changes = side ? mb->changes : ma->changes;
	ma->fail_at = mb->fail_at = 0;
	ka[0] = &mb->base;
	kb[0] = &ma->base;
	/* journals first, on both sides; then what was never committed */
	assert_int_equal(st_backend_recover(ba, "test/sourceStack", ka, 1, 0, NULL, &err), ST_OK);
	assert_int_equal(st_backend_recover(bb, "test/destStack", kb, 1, 0, NULL, &err), ST_OK);
	assert_int_equal(st_backend_recover(ba, "test/sourceStack", ka, 1,
					    ST_JOURNAL_CLEAN_STAGED, NULL, &err),
			 ST_OK);
	assert_int_equal(st_backend_recover(bb, "test/destStack", kb, 1, ST_JOURNAL_CLEAN_STAGED,
					    NULL, &err),
			 ST_OK);
	if (mem_get(ma, SK))
		newa = strdup(mem_get(ma, SK));
	if (mem_get(mb, DK))
		newd = strdup(mem_get(mb, DK));
	assert_non_null(newa);
	if (!newd) {
		/* not committed: both old */
		assert_int_not_equal(rc, ST_OK);
		assert_string_equal(newa, olda);
	} else {
		/* committed: both new */
		assert_non_null(strstr(newa, "\"protect\":true"));
		assert_non_null(strstr(newd, "organization/test/destStack"));
		assert_non_null(mem_get(ma, SK ".bak"));
	}
	assert_int_equal(mem_count(ma, "statetool-"), 0);
	assert_int_equal(mem_count(mb, "statetool-"), 0);
	free(olda);
	free(newa);
	free(newd);
	st_state_free(a);
	st_state_free(d);
	st_backend_free(ba);
	st_backend_free(bb);
}

static void test_pair_failure_at_each_change(void **unused)
{
	size_t na = 0, nb = 0, dummy;
	(void)unused;
	/* a run without failures counts each store's changes */
	pair_fail_at(0, 0, &na);
	pair_fail_at(1, 0, &nb);
	assert_true(na >= 5); /* staged, journal, backup, install (copy, delete), journal gone */
	assert_true(nb >= 4);
	for (size_t k = 1; k <= na; k++)
		pair_fail_at(0, k, &dummy);
	for (size_t k = 1; k <= nb; k++)
		pair_fail_at(1, k, &dummy);
}

/* A journal whose other side's store cannot be opened: an error naming it, nothing changed. */
static void test_recover_other_store_missing(void **unused)
{
	st_backend *ba = NULL, *bb = NULL;
	mem_store *ma = mem_backend("mem://ma", &ba), *mb = mem_store_new("mem://mb");
	st_store *known[1];
	st_state *a, *d = NULL;
	char *before;
	st_error err;
	(void)unused;

	assert_int_equal(mem_put(mb, ".pulumi/meta.yaml", "version: 1\n", 11), ST_OK);
	assert_int_equal(st__diy_open(&bb, &mb->base, "mem://mb", NULL), ST_OK);
	a = load(ba, "test/sourceStack");
	change(a);
	before = strdup(mem_get(ma, SK));
	assert_int_equal(st_state_new(&d, NULL), ST_OK);
	/* the source's install fails after the commit point: the journals stay */
	ma->changes = 0;
	ma->fail_at = 4; /* the generation of the state before (st_backend_save_pair keeps
			  * it in the backups), staged, journal, then the backup of the install */
	st_error_clear(&err);
	assert_int_not_equal(st_backend_save_pair("move", ba, "test/sourceStack", a, bb,
						  "test/destStack", d, &err),
			     ST_OK);
	ma->fail_at = 0;
	assert_int_equal(mem_count(ma, "statetool-journal"), 1);
	/* without the other store at hand its URL is opened, and mem:// is no scheme */
	st_error_clear(&err);
	assert_int_equal(st_backend_recover(ba, "test/sourceStack", NULL, 0, 0, NULL, &err),
			 ST_EUNSUPPORTED);
	assert_non_null(strstr(err.message, "mem://mb"));
	assert_string_equal(mem_get(ma, SK), before);
	assert_int_equal(mem_count(ma, "statetool-journal"), 1);
	/* with it: completed */
	known[0] = &mb->base;
	assert_int_equal(st_backend_recover(ba, "test/sourceStack", known, 1, 0, NULL, &err),
			 ST_OK);
	assert_non_null(strstr(mem_get(ma, SK), "\"protect\":true"));
	assert_int_equal(mem_count(ma, "statetool-"), 0);
	assert_int_equal(mem_count(mb, "statetool-"), 0);
	free(before);
	st_state_free(a);
	st_state_free(d);
	st_backend_free(ba);
	st_backend_free(bb);
}


/* A plain file's side of a recovery is locked as a save locks it (<file>.lock, written first
 * and removed again), and a lock that cannot be looked at is an error naming it, not "no
 * lock". */
static void test_recover_plain_file_lock(void **unused)
{
	mem_store *m = mem_store_new("mem://pf");
	const char *ta = "{\"version\":3,\"deployment\":{\"manifest\":{},\"resources\":[]}}";
	const char *tn =
		"{\"version\":3,\"deployment\":{\"manifest\":{},\"resources\":[],\"metadata\":{}}}";
	st_state *a = NULL, *b = NULL;
	st_error err;
	(void)unused;

	assert_int_equal(mem_put(m, "a.json", ta, strlen(ta)), ST_OK);
	assert_int_equal(st_state_load_buffer(&a, tn, strlen(tn), "a", NULL, NULL), ST_OK);
	assert_int_equal(st_state_load_buffer(&b, ta, strlen(ta), "b", NULL, NULL), ST_OK);
	/* committed, then the install of a.json fails: staged a, staged b, two journals, then
	 * a.json's backup */
	st_pair_side A = {&m->base, "a.json", NULL, a}, B = {&m->base, "b.json", NULL, b};
	m->changes = 0;
	m->fail_at = 5;
	assert_int_not_equal(st_journal_save("move", &A, &B, NULL), ST_OK);
	m->fail_at = 0;
	assert_int_equal(mem_count(m, "statetool-journal"), 2);
	assert_string_equal(mem_get(m, "a.json"), ta);
	/* the lock of a.json cannot be looked at: refused, naming it, nothing changed */
	m->stat_fail = "a.json.lock";
	m->changes = 0;
	st_error_clear(&err);
	assert_int_equal(st_journal_recover_key(&m->base, "b.json", NULL, 0, 0, NULL, &err), ST_EIO);
	assert_non_null(strstr(err.message, "cannot tell whether the lock 'mem://pf/a.json.lock'"));
	assert_non_null(strstr(err.message, "injected failure of stat"));
	assert_int_equal(m->changes, 0);
	m->stat_fail = NULL;
	/* the recovery's first change is a.json's lock, before anything is installed */
	m->changes = 0;
	m->fail_at = 1;
	st_error_clear(&err);
	assert_int_not_equal(st_journal_recover_key(&m->base, "b.json", NULL, 0, 0, NULL, &err),
			     ST_OK);
	assert_non_null(strstr(err.message, "'a.json.lock'"));
	m->fail_at = 0;
	assert_string_equal(mem_get(m, "a.json"), ta);
	/* completed under its locks, which are gone afterwards */
	assert_int_equal(st_journal_recover_key(&m->base, "b.json", NULL, 0, 0, NULL, &err), ST_OK);
	assert_non_null(strstr(mem_get(m, "a.json"), "\"metadata\""));
	assert_null(mem_get(m, "a.json.lock"));
	assert_null(mem_get(m, "b.json.lock"));
	assert_int_equal(mem_count(m, "statetool-"), 0);
	st_state_free(a);
	st_state_free(b);
	st_store_free(&m->base);
}

/* A refused recovery names the sides by the roles its journal records: a move's destination
 * and source (whatever their order in the journal), another operation's sides as they are. */
static void test_recover_hint_roles(void **unused)
{
	const char *t = "{\"version\":3,\"deployment\":{\"manifest\":{},\"resources\":[]}}";
	const char *lk = "{\"pid\":1,\"username\":\"u\",\"hostname\":\"elsewhere\"}";
	for (int op = 0; op < 2; op++) {
		mem_store *m = mem_store_new("mem://hr");
		st_state *a = NULL, *b = NULL;
		st_error err;
		char *j;
		assert_int_equal(st_state_load_buffer(&a, t, strlen(t), "a", NULL, NULL), ST_OK);
		assert_int_equal(st_state_load_buffer(&b, t, strlen(t), "b", NULL, NULL), ST_OK);
		st_pair_side A = {&m->base, "a.json", NULL, a}, B = {&m->base, "b.json", NULL, b};
		m->changes = 0;
		m->fail_at = 5; /* committed, not installed */
		assert_int_not_equal(st_journal_save(op ? "swap" : "move", &A, &B, NULL), ST_OK);
		m->fail_at = 0;
		j = strdup(mem_get(m, "a.json.statetool-journal"));
		assert_true((strstr(j, "\"role\":\"dest\"") != NULL) == !op);
		assert_true((strstr(j, "\"role\":\"source\"") != NULL) == !op);
		free(j);
		assert_int_equal(mem_put(m, "b.json.lock", lk, strlen(lk)), ST_OK);
		st_error_clear(&err);
		assert_int_equal(st_journal_recover_key(&m->base, "a.json", NULL, 0, 0, NULL, &err),
				 ST_ELOCKED);
		if (!op)
			assert_non_null(strstr(err.message, "`statetool move --recover --source "
							    "b.json --dest a.json`"));
		else
			assert_non_null(strstr(err.message, "an interrupted swap is pending (journal "
							    "'mem://hr/a.json.statetool-journal'): once "
							    "the lock is gone, any statetool command on "
							    "either side (mem://hr/a.json, mem://hr/b.json) "
							    "completes it"));
		st_state_free(a);
		st_state_free(b);
		st_store_free(&m->base);
	}
}

/* A store whose identity fails for another reason than a directory gone (here its directory
 * became a symbolic link to itself: realpath's ELOOP) gives that error: a pair write and the
 * lock registry's lookup said "out of memory" or found nothing (review26 R9). */
static void test_identity_error_passed_on(void **unused)
{
	st_backend *b = NULL;
	mem_store *m = mem_backend("mem://ident", &b);
	char *dir = tu_tmpdir(), *sub = st_path_join(dir, "s"), *moved = st_path_join(dir, "t");
	char *file = st_path_join(sub, "d.json"), *fkey = NULL, *id = NULL;
	st_store *fs = NULL;
	st_state *a = load(b, "test/sourceStack"), *d = NULL;
	size_t len;
	char *t = fixture_text("move/leaf.json", &len);
	st_error err;
	int found = 1;
	(void)unused;

	assert_int_equal(mkdir(sub, 0755), 0);
	tu_write(file, t, len);
	assert_int_equal(st_state_load_file(&d, file, NULL, NULL), ST_OK);
	assert_int_equal(st_store_open_file(&fs, &fkey, file, NULL), ST_OK);
	assert_int_equal(rename(sub, moved), 0);
	assert_int_equal(symlink(sub, sub), 0);
	st_error_clear(&err);
	assert_int_equal(st_store_identity(fs, &id, &err), ST_EIO);
	assert_non_null(strstr(err.message, "has no real path: Too many levels of symbolic links"));
	{
		st_pair_side A = {&m->base, SK, NULL, a}, B = {fs, fkey, NULL, d};
		st_error_clear(&err);
		assert_int_equal(st_journal_save("move", &A, &B, &err), ST_EIO);
		assert_non_null(strstr(err.message, "has no real path"));
	}
	st_error_clear(&err);
	assert_int_equal(st__lock_held(fs, NULL, "d.json.lock", NULL, NULL, NULL, &found, &err),
			 ST_EIO);
	assert_int_equal(found, 0);
	assert_non_null(strstr(err.message, "has no real path"));
	assert_int_equal(mem_count(m, "statetool-"), 0);
	assert_int_equal(unlink(sub), 0);
	assert_int_equal(rename(moved, sub), 0);
	free(t);
	st_state_free(a);
	st_state_free(d);
	st_store_free(fs);
	free(fkey);
	free(file);
	free(sub);
	free(moved);
	st_backend_free(b);
	tu_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_diy_on_a_store_without_paths),
		cmocka_unit_test(test_index_reads_nothing_unchanged),
		cmocka_unit_test(test_pair_across_stores),
		cmocka_unit_test(test_pair_of_files_two_threads),
		cmocka_unit_test(test_pair_failure_at_each_change),
		cmocka_unit_test(test_recover_other_store_missing),
		cmocka_unit_test(test_recover_plain_file_lock),
		cmocka_unit_test(test_recover_hint_roles),
		cmocka_unit_test(test_identity_error_passed_on),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
