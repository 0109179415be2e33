/* Lazy states (lazy.md), the writer's and the sessions' half: a lazy state writes the bytes the
 * full state writes (its skeletons as their spans), and every edit gives on a lazy state the
 * result, bytes, diff and messages it gives on the full state, inflating only what it
 * changes. */
#include "testutil.h"
#include "lazytest.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

static const char *const dirs[] = {"realworld", "edit", "validate", "move", "show", "diff",
				   "write", "graph", "case", NULL};

/* Calls fn on every fixture state that loads in full. */
static void each_fixture(void (*fn)(const char *rel, void *ctx), void *ctx)
{
	for (int d = 0; dirs[d]; d++) {
		char *dir = tu_fixture(dirs[d]);
		struct dirent **names = NULL;
		int n = scandir(dir, &names, NULL, alphasort);
		for (int i = 0; i < n; i++) {
			size_t l = strlen(names[i]->d_name);
			if (l > 5 && !strcmp(names[i]->d_name + l - 5, ".json")) {
				char *rel = NULL;
				assert_true(asprintf(&rel, "%s/%s", dirs[d], names[i]->d_name) > 0);
				fn(rel, ctx);
				free(rel);
			}
			free(names[i]);
		}
		free(names);
		free(dir);
	}
}

static st_state *try_load(const char *rel)
{
	char *p = tu_fixture(rel);
	st_state *s = NULL;
	if (st_state_load_file(&s, p, NULL, NULL) != ST_OK)
		s = NULL;
	free(p);
	return s;
}

static char *dump(st_state *s, size_t *len)
{
	char *out;
	assert_int_equal(st_state_dump(s, NULL, &out, len, NULL), ST_OK);
	return out;
}

typedef struct tally {
	size_t states, lazy, edits, inflated;
} tally;

/* ---- the writer ---- */

static void write_same(const char *rel, void *ctx)
{
	tally *t = ctx;
	st_state *full = try_load(rel), *lazy = tu_load_lazy(rel);
	if (!full) {
		assert_null(lazy);
		return;
	}
	assert_non_null(lazy);
	size_t n = st__lazy_count(lazy), la, lb;
	unsigned long spans = st__json_write_spans();
	char *a = dump(full, &la), *b = dump(lazy, &lb);
	if (la != lb || memcmp(a, b, la))
		fail_msg("%s: the lazy state writes other bytes", rel);
	assert_int_equal(st__json_write_spans() - spans, n);
	/* another style: every span parsed and walked, the bytes of the full state (never a
	 * skeleton's: it lacks the values) */
	st_style other = full->style;
	other.compact = !other.compact;
	char *c = NULL, *d = NULL;
	size_t lc, ld;
	spans = st__json_write_spans();
	assert_int_equal(st_state_dump(lazy, &other, &c, &lc, NULL), ST_OK);
	assert_int_equal(st__json_write_spans(), spans);
	assert_int_equal(st_state_dump(full, &other, &d, &ld, NULL), ST_OK);
	if (lc != ld || memcmp(c, d, lc))
		fail_msg("%s: the lazy state writes other bytes in another style", rel);
	free(c);
	free(d);
	t->states++;
	t->lazy += n != 0;
	free(a);
	free(b);
	st_state_free(full);
	st_state_free(lazy);
}

static void test_writer_spans(void **state)
{
	(void)state;
	tally t = {0};
	each_fixture(write_same, &t);
	assert_true(t.states > 50);
	assert_true(t.lazy > 40);
}

/* 700 resources (copies of realworld/04's with their own URNs): a write on two threads. */
static st_state *big_state(void)
{
	st_state *s = tu_load("realworld/04-kloudlib-backup-big-56res.json");
	json_t *res = st_state_resources(s, 0);
	size_t n = json_array_size(res);
	for (size_t i = 0; json_array_size(res) < 700; i++) {
		json_t *c = json_deep_copy(json_array_get(res, i % n));
		char *urn = NULL;
		assert_true(asprintf(&urn, "%s-%zu", json_string_value(json_object_get(c, "urn")), i) > 0);
		json_object_set_new(c, "urn", json_string(urn));
		free(urn);
		json_array_append_new(res, c);
	}
	return s;
}

/* A file save (the state streamed, the two-thread split on a big state) writes the spans too. */
static void test_writer_save_split(void **state)
{
	(void)state;
	char *dir = tu_tmpdir(), *pa = NULL, *pb = NULL;
	st_state *full = big_state(), *big = big_state(), *lazy = tu_lazy_of(big);
	st_state_free(big);
	assert_non_null(lazy);
	assert_true(st__lazy_count(lazy) > 500); /* (those with a secret are full) */
	assert_true(asprintf(&pa, "%s/a.json", dir) > 0 && asprintf(&pb, "%s/b.json", dir) > 0);
	st_write_opts wo = ST_WRITE_OPTS_INIT;
	wo.threads = 2; /* a second thread even on one processor */
	wo.backup = 0;
	assert_int_equal(st_state_save(full, pa, &wo, NULL), ST_OK);
	/* mostly spans: one thread (copying is the disk's pace) */
	unsigned long splits = st__json_write_splits(), spans = st__json_write_spans();
	assert_int_equal(st_state_save(lazy, pb, &wo, NULL), ST_OK);
	assert_int_equal(st__json_write_spans() - spans, st__lazy_count(lazy));
	assert_int_equal(st__json_write_splits() - splits, 0);
	size_t la, lb;
	char *a = tu_read(pa, &la), *b = tu_read(pb, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	free(b);
	/* mostly full (the first 450 inflated): two threads, the second half's spans copied */
	for (size_t i = 0; i < 450; i++)
		assert_int_equal(st__lazy_inflate(lazy, i, NULL), ST_OK);
	assert_true(st__lazy_count(lazy) > 100);
	splits = st__json_write_splits();
	spans = st__json_write_spans();
	assert_int_equal(st_state_save(lazy, pb, &wo, NULL), ST_OK);
	assert_int_equal(st__json_write_spans() - spans, st__lazy_count(lazy));
	assert_int_equal(st__json_write_splits() - splits, 1);
	b = tu_read(pb, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	free(a);
	free(b);
	free(pa);
	free(pb);
	st_state_free(full);
	st_state_free(lazy);
	tu_rmdir(dir);
}

/* Another envelope (a checkpoint made an export: the resources one level up): the spans are parsed and walked. */
static void test_writer_other_envelope(void **state)
{
	(void)state;
	st_state *full = tu_load("realworld/04-kloudlib-backup-big-56res.json");
	st_state *lazy = tu_load_lazy("realworld/04-kloudlib-backup-big-56res.json");
	assert_false(lazy->style.compact);
	assert_true(st__lazy_count(lazy) > 5);
	assert_int_equal(st_state_set_envelope(full, ST_ENVELOPE_EXPORT, NULL, NULL), ST_OK);
	assert_int_equal(st_state_set_envelope(lazy, ST_ENVELOPE_EXPORT, NULL, NULL), ST_OK);
	unsigned long spans = st__json_write_spans();
	size_t la, lb;
	char *a = dump(full, &la), *b = dump(lazy, &lb);
	assert_int_equal(st__json_write_spans(), spans);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	assert_non_null(strstr(b, "\"inputs\""));
	free(a);
	free(b);
	st_state_free(full);
	st_state_free(lazy);
}

/* ---- sessions ---- */

enum { OP_PROTECT, OP_UNPROTECT, OP_TAINT, OP_UNTAINT, OP_RENAME, OP_DELETE, OP_DELETE_DEPS,
       OP_N };

typedef struct outcome {
	int rc, crc;
	char msg[2100];
	char *bytes;
	size_t len;
	char *diff;
	char *report;
	size_t inflated;
} outcome;

static char *diff_text(const st_diff *d, const st_changes *ch)
{
	st_buf b;
	st_buf_init(&b);
	for (size_t i = 0; i < d->count; i++) {
		st_buf_addc(&b, d->items[i].kind);
		st_buf_adds(&b, d->items[i].urn);
		for (size_t k = 0; k < d->items[i].nfields; k++) {
			st_buf_addc(&b, ' ');
			st_buf_adds(&b, d->items[i].fields[k]);
		}
		st_buf_addc(&b, '\n');
	}
	for (size_t i = 0; ch && i < ch->count; i++) {
		st_buf_adds(&b, ch->lines[i]);
		st_buf_addc(&b, '\n');
	}
	return st_buf_take(&b, NULL);
}

static void run_op(st_state *s, int op, size_t idx, outcome *o)
{
	st_edit *e = NULL;
	st_changes ch = {0};
	st_diff d = {0};
	st_error err;
	st_handle h;
	size_t n;

	memset(o, 0, sizeof(*o));
	st_error_clear(&err);
	size_t lazy_before = st__lazy_count(s);
	assert_int_equal(st_edit_begin(&e, s, &ch, &err), ST_OK);
	assert_int_equal(st_edit_handle_at(e, idx, &h, NULL), ST_OK);
	switch (op) {
	case OP_PROTECT: o->rc = st_edit_set_flag(e, &h, 1, "protect", 1, &n, &err); break;
	case OP_UNPROTECT: o->rc = st_edit_set_flag(e, &h, 1, "protect", 0, &n, &err); break;
	case OP_TAINT: o->rc = st_edit_set_flag(e, &h, 1, "taint", 1, &n, &err); break;
	case OP_UNTAINT: o->rc = st_edit_set_flag(e, &h, 1, "taint", 0, &n, &err); break;
	case OP_RENAME: o->rc = st_edit_rename(e, h, "renamed-by-test", &err); break;
	case OP_DELETE: o->rc = st_edit_delete(e, &h, 1, 0, &n, &err); break;
	default: o->rc = st_edit_delete(e, &h, 1, ST_DELETE_TARGET_DEPENDENTS | ST_DELETE_FORCE,
					&n, &err); break;
	}
	if (o->rc == ST_OK) {
		o->crc = st_edit_commit(e, &d, NULL, &err);
		if (o->crc != ST_OK)
			snprintf(o->msg, sizeof(o->msg), "%s", err.message);
	} else {
		snprintf(o->msg, sizeof(o->msg), "%s", err.message);
		st_edit_rollback(e);
	}
	o->diff = diff_text(&d, &ch);
	o->bytes = dump(s, &o->len);
	o->inflated = lazy_before - st__lazy_count(s);
	st_diff_clear(&d);
	st_changes_clear(&ch);
	st_edit_free(e);
}

static void outcome_free(outcome *o)
{
	free(o->bytes);
	free(o->diff);
}

static void edits_same(const char *rel, void *ctx)
{
	tally *t = ctx;
	st_state *probe = try_load(rel);
	if (!probe)
		return;
	size_t nres = json_array_size(st_state_resources(probe, 0));
	st_state_free(probe);
	if (!nres)
		return;
	size_t picks[3] = {0, nres / 2, nres - 1};
	for (int op = 0; op < OP_N; op++) {
		for (int p = 0; p < 3; p++) {
			st_state *full = try_load(rel), *lazy = tu_load_lazy(rel);
			if (!st__lazy_count(lazy)) {
				st_state_free(full);
				st_state_free(lazy);
				return;
			}
			outcome a, b;
			int old = st_state_version(lazy) < 3; /* migrated: every resource made full */
			run_op(full, op, picks[p], &a);
			run_op(lazy, op, picks[p], &b);
			if (a.rc != b.rc || a.crc != b.crc || strcmp(a.msg, b.msg) ||
			    strcmp(a.diff, b.diff) || a.len != b.len || memcmp(a.bytes, b.bytes, a.len))
				fail_msg("%s: op %d on #%zu: lazy %d/%d '%s' [%s], full %d/%d '%s' [%s]",
					 rel, op, picks[p], b.rc, b.crc, b.msg, b.diff, a.rc, a.crc,
					 a.msg, a.diff);
			/* a flag or a rename inflates what it changes, never the whole state */
			if (op <= OP_UNTAINT && a.rc == ST_OK && !old)
				assert_true(b.inflated <= 1);
			t->edits++;
			t->inflated += b.inflated;
			outcome_free(&a);
			outcome_free(&b);
			st_state_free(full);
			st_state_free(lazy);
		}
	}
}

static void test_edits_differential(void **state)
{
	(void)state;
	tally t = {0};
	each_fixture(edits_same, &t);
	assert_true(t.edits > 500);
	assert_true(t.inflated > 0);
}

/* Rollback and savepoints: the inflated resource is the same object the baseline holds, so a
 * rollback writes the state as it was loaded. */
static void test_rollback_after_inflate(void **state)
{
	(void)state;
	st_state *s = tu_load_lazy("edit/base.json");
	size_t la, lb, n = st__lazy_count(s), changed;
	assert_true(n > 5);
	char *before = dump(s, &la);
	json_t *skel = json_array_get(st_state_resources(s, 0), 3);
	const char *sp;
	size_t sl;
	assert_int_equal(st__lazy_span(s, skel, &sp, &sl), 1);
	assert_null(json_object_get(skel, "inputs"));
	st_edit *e;
	st_diff d;
	assert_int_equal(st_edit_begin(&e, s, NULL, NULL), ST_OK);
	st_handle h;
	assert_int_equal(st_edit_handle_at(e, 3, &h, NULL), ST_OK);
	assert_int_equal(st_edit_set_flag(e, &h, 1, "taint", 1, &changed, NULL), ST_OK);
	/* the skeleton itself became full (registration dropped), a copy holds the change */
	assert_int_equal(st__lazy_span(s, skel, &sp, &sl), 0);
	assert_non_null(json_object_get(skel, "inputs"));
	assert_int_equal(st__lazy_count(s), n - 1);
	assert_int_equal(st_edit_commit(e, &d, NULL, NULL), ST_OK);
	assert_int_equal(d.count, 1);
	assert_int_equal(d.items[0].nfields, 1);
	assert_string_equal(d.items[0].fields[0], "taint");
	st_diff_clear(&d);
	st_edit_rollback(e);
	char *after = dump(s, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(before, after, la);
	/* a failed operation after an inflating one leaves the first standing */
	assert_int_equal(st_edit_set_flag(e, &h, 1, "taint", 1, &changed, NULL), ST_OK);
	st_handle h2;
	assert_int_equal(st_edit_handle_at(e, 4, &h2, NULL), ST_OK);
	assert_int_not_equal(st_edit_rename(e, h2, "", NULL), ST_OK);
	assert_int_equal(st_edit_commit(e, &d, NULL, NULL), ST_OK);
	assert_int_equal(d.count, 1);
	st_diff_clear(&d);
	st_edit_free(e);
	free(before);
	free(after);
	st_state_free(s);
}

/* ---- move ---- */

static char *plan_text(const st_move_report *r)
{
	st_buf b;
	const st_changes *parts[] = {&r->plan, &r->broken_source, &r->broken_dest, &r->warnings};
	st_buf_init(&b);
	for (int p = 0; p < 4; p++)
		for (size_t i = 0; i < parts[p]->count; i++) {
			st_buf_adds(&b, parts[p]->lines[i]);
			st_buf_addc(&b, '\n');
		}
	return st_buf_take(&b, NULL);
}

/* One move of resource `idx` of src_rel into dst_rel, lazily (both states) or not. */
static void move_one(const char *src_rel, const char *dst_rel, size_t idx, int parents, int lazy,
		     outcome *o, char **dst_bytes, size_t *dst_len)
{
	st_state *src = lazy ? tu_load_lazy(src_rel) : try_load(src_rel);
	st_state *dst = lazy ? tu_load_lazy(dst_rel) : try_load(dst_rel);
	st_move_opts mo = ST_MOVE_OPTS_INIT;
	st_move_report rep;
	st_error err;
	const char *pat[1];

	memset(o, 0, sizeof(*o));
	size_t before = st__lazy_count(src) + st__lazy_count(dst);
	pat[0] = json_string_value(json_object_get(json_array_get(st_state_resources(src, 0), idx),
						   "urn"));
	mo.patterns = pat;
	mo.npatterns = 1;
	mo.include_parents = parents;
	st_error_clear(&err);
	o->rc = st_move(src, NULL, dst, NULL, &mo, &rep, &err);
	snprintf(o->msg, sizeof(o->msg), "%s", o->rc ? err.message : "");
	o->diff = plan_text(&rep);
	o->bytes = dump(src, &o->len);
	*dst_bytes = dump(dst, dst_len);
	o->inflated = before - st__lazy_count(src) - st__lazy_count(dst);
	st_move_report_clear(&rep);
	st_state_free(src);
	st_state_free(dst);
}

static void test_move_differential(void **state)
{
	(void)state;
	static const char *const names[] = {"children", "dependencies", "dest-existing-resource",
					    "dest-other-provider", "dest-same-provider", "leaf",
					    "reparent", "replacewith", "rooted",
					    "../realworld/04-kloudlib-backup-big-56res",
					    "../realworld/30-azure-network", NULL};
	size_t moves = 0, ok = 0, inflated = 0;
	for (int a = 0; names[a]; a++) {
		for (int b = 0; names[b]; b++) {
			char *sr = NULL, *dr = NULL;
			assert_true(asprintf(&sr, "move/%s.json", names[a]) > 0);
			assert_true(asprintf(&dr, "move/%s.json", names[b]) > 0);
			st_state *probe = try_load(sr);
			assert_non_null(probe);
			size_t n = json_array_size(st_state_resources(probe, 0));
			st_state_free(probe);
			for (size_t i = 1; i < n; i += n / 5 + 1) {
				for (int par = 0; par < 2; par++) {
					outcome x, y;
					char *dx, *dy;
					size_t lx, ly;
					move_one(sr, dr, i, par, 0, &x, &dx, &lx);
					move_one(sr, dr, i, par, 1, &y, &dy, &ly);
					if (x.rc != y.rc || strcmp(x.msg, y.msg) || strcmp(x.diff, y.diff) ||
					    x.len != y.len || memcmp(x.bytes, y.bytes, x.len) || lx != ly ||
					    memcmp(dx, dy, lx))
						fail_msg("move %s #%zu -> %s (parents %d): lazy %d '%s', full %d '%s'",
							 sr, i, dr, par, y.rc, y.msg, x.rc, x.msg);
					moves++;
					ok += x.rc == ST_OK;
					inflated += y.inflated;
					outcome_free(&x);
					outcome_free(&y);
					free(dx);
					free(dy);
				}
			}
			free(sr);
			free(dr);
		}
	}
	assert_true(moves > 200);
	assert_true(ok > 50);
	assert_true(inflated > 0);
}

static st_state *load_path_lazy(const char *path, int mapped)
{
	st_state *s = NULL;
	if (mapped) {
		assert_int_equal(st__state_load_lazy(&s, path, NULL, NULL), ST_OK);
	} else {
		size_t len = 0;
		char *text = tu_read(path, &len);
		assert_int_equal(st__state_load_lazy_text(&s, text, len, "t.json", NULL, NULL),
				 ST_OK);
	}
	return s;
}

/* A save of a lazy state: adjacent spans (and the separators and unchanged full resources
 * between them: the bytes written are compared with the file's) go out as one run, copied by
 * the kernel from the mapped file (else written from the text in one call, when the text was
 * read or the copy is refused); the bytes are the full state's after every edit at the start,
 * middle and end, for a state mapped from its file (> 4 MiB) and one read. A flag changed
 * in the middle splits the text into two runs, at either end one run. */
static void save_runs_one(const char *p0, const char *pf, const char *pl, int mode, int op,
			  size_t idx, size_t n)
{
	st_write_opts wo = ST_WRITE_OPTS_INIT;
	st_state *full = NULL, *lazy = load_path_lazy(p0, mode < 2);
	outcome a, b;
	size_t la = 0, lb = 0, l0 = 0;
	wo.backup = 0;
	assert_int_equal(st_state_load_file(&full, p0, NULL, NULL), ST_OK);
	assert_true(st__lazy_count(lazy) > 500);
	run_op(full, op, idx, &a);
	run_op(lazy, op, idx, &b);
	assert_int_equal(a.rc, b.rc);
	unsigned long r0 = st__state_runs(), c0 = st__store_copied();
	assert_int_equal(st_state_save(full, pf, &wo, NULL), ST_OK);
	assert_int_equal(st_state_save(lazy, pl, &wo, NULL), ST_OK);
	unsigned long runs = st__state_runs() - r0, copied = st__store_copied() - c0;
	char *x = tu_read(pf, &la), *y = tu_read(pl, &lb), *z = tu_read(p0, &l0);
	if (la != lb || memcmp(x, y, la))
		fail_msg("op %d on #%zu (mode %d): other bytes", op, idx, mode);
	int changed = la != l0 || memcmp(x, z, la);
	if (op <= OP_UNTAINT)
		assert_int_equal(runs, changed && idx > 0 && idx < n - 1 ? 2 : 1);
	else
		if (runs < 1 || runs > n) /* (a rename rewrites its references) */
			fail_msg("op %d on #%zu: %lu runs", op, idx, runs);
	if (mode == 0)
		assert_true(copied > lb / 10 * 9 && copied < lb);
	else
		assert_int_equal(copied, 0);
	free(x);
	free(y);
	free(z);
	outcome_free(&a);
	outcome_free(&b);
	st_state_free(full);
	st_state_free(lazy);
}

static void test_save_runs(void **state)
{
	(void)state;
	char *dir = tu_tmpdir(), *p0 = NULL, *pf = NULL, *pl = NULL;
	st_state *big = big_state();
	st_write_opts wo = ST_WRITE_OPTS_INIT;
	wo.backup = 0;
	assert_true(asprintf(&p0, "%s/0.json", dir) > 0 && asprintf(&pf, "%s/f.json", dir) > 0 &&
		    asprintf(&pl, "%s/l.json", dir) > 0);
	assert_int_equal(st_state_save(big, p0, &wo, NULL), ST_OK);
	size_t n = json_array_size(st_state_resources(big, 0));
	st_state_free(big);
	size_t picks[3] = {0, n / 2, n - 1};
	for (int mode = 0; mode < 3; mode++) { /* mapped, mapped without the copy, read */
		st__store_copy_enable(mode != 1);
		for (int op = 0; op < OP_N; op++)
			for (int k = 0; k < 3; k++)
				save_runs_one(p0, pf, pl, mode, op, picks[k], n);
	}
	st__store_copy_enable(1);
	free(p0);
	free(pf);
	free(pl);
	tu_rmdir(dir);
}

/* Another program rewrites the mapped source file in place (same size, or truncated) after the
 * lazy load: the save refuses with ST_ECONFLICT before writing anything (a truncated mapping
 * would have ended the process with SIGBUS), and a rewrite while the save runs is found after
 * its last byte, before anything is renamed into place. */
static void rewrite_in_place(const char *path, off_t size)
{
	int fd = open(path, O_WRONLY);
	struct timespec t[2] = {{1, 0}, {1, 0}};
	assert_true(fd >= 0);
	if (size >= 0)
		assert_int_equal(ftruncate(fd, size), 0);
	else
		assert_int_equal(pwrite(fd, "  ", 2, 4096), 2);
	assert_int_equal(futimens(fd, t), 0); /* another time, whatever the clock's tick */
	close(fd);
}

static void during_stream(void *ctx, const char *p, size_t n)
{
	int *done = ctx;
	(void)p;
	(void)n;
	if (!*done)
		rewrite_in_place(getenv("LAZYEDIT_SRC"), -1);
	*done = 1;
}

static void test_source_rewritten(void **state)
{
	(void)state;
	char *dir = tu_tmpdir(), *p0 = NULL, *pl = NULL;
	st_state *big = big_state(), *lazy;
	st_write_opts wo = ST_WRITE_OPTS_INIT;
	st_error err;
	wo.backup = 0;
	assert_true(asprintf(&p0, "%s/0.json", dir) > 0 && asprintf(&pl, "%s/l.json", dir) > 0);
	for (int mode = 0; mode < 3; mode++) { /* same size before, truncated, during the save */
		assert_int_equal(st_state_save(big, p0, &wo, NULL), ST_OK);
		lazy = load_path_lazy(p0, 1);
		assert_true(st__lazy_count(lazy) > 500);
		st_error_clear(&err);
		if (mode < 2) {
			char *text = NULL;
			size_t tl = 0;
			rewrite_in_place(p0, mode ? 1000 : -1);
			assert_int_equal(st_state_save(lazy, pl, &wo, &err), ST_ECONFLICT);
			st_error e2;
			st_error_clear(&e2);
			assert_int_equal(st_state_dump(lazy, NULL, &text, &tl, &e2), ST_ECONFLICT);
			assert_null(text);
			assert_string_equal(e2.message, err.message);
		} else {
			int done = 0, fd = open(pl, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			assert_true(fd >= 0);
			setenv("LAZYEDIT_SRC", p0, 1);
			assert_int_equal(st__state_stream(lazy, fd, during_stream, &done, NULL, &err),
					 ST_ECONFLICT);
			assert_int_equal(done, 1);
			close(fd);
			unlink(pl);
		}
		if (!strstr(err.message, "was rewritten in place by another program"))
			fail_msg("mode %d: %s", mode, err.message);
		assert_non_null(strstr(err.message, "nothing was written"));
		assert_int_equal(tu_count_entries(dir, ""), 1); /* 0.json: no l.json, no temporary */
		st_state_free(lazy);
	}
	/* unchanged (a hard link made beside it, as a backup is, changes only its ctime): saved */
	assert_int_equal(st_state_save(big, p0, &wo, NULL), ST_OK);
	lazy = load_path_lazy(p0, 1);
	char *bak = NULL;
	assert_true(asprintf(&bak, "%s.bak", p0) > 0);
	assert_int_equal(link(p0, bak), 0);
	assert_int_equal(st_state_save(lazy, pl, &wo, NULL), ST_OK);
	size_t la = 0, lb = 0;
	char *x = tu_read(p0, &la), *y = tu_read(pl, &lb);
	assert_true(la == lb && !memcmp(x, y, la));
	free(x);
	free(y);
	free(bak);
	st_state_free(lazy);
	st_state_free(big);
	free(p0);
	free(pl);
	tu_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writer_spans),
		cmocka_unit_test(test_writer_save_split),
		cmocka_unit_test(test_writer_other_envelope),
		cmocka_unit_test(test_save_runs),
		cmocka_unit_test(test_source_rewritten),
		cmocka_unit_test(test_edits_differential),
		cmocka_unit_test(test_rollback_after_inflate),
		cmocka_unit_test(test_move_differential),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
