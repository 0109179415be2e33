/* Move as an operation on two edit sessions committed together: a failure anywhere leaves both
 * states as they were, byte for byte; extension blobs as Pulumi carries them. */
#include "testutil.h"
#include "store/store_impl.h"

#include <sodium.h>

#include <fcntl.h>
#include <sys/mman.h>

/* The journal's hash of bytes: XXH3-128, its canonical bytes in hex (xxhsum -H2's), from
 * libxxhash itself. */
static void xxh3_hex_of(XXH128_hash_t h, char out[65])
{
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, h);
	sodium_bin2hex(out, 65, c.digest, sizeof(c.digest));
}

static char *dump(st_state *s)
{
	char *out;
	size_t len;
	assert_int_equal(st_state_dump(s, NULL, &out, &len, NULL), ST_OK);
	return out;
}

static st_state *load_text(const char *text)
{
	st_state *s = NULL;
	st_error err;
	st_error_clear(&err);
	if (st_state_load_buffer(&s, text, strlen(text), "test", NULL, &err) != ST_OK) {
		fprintf(stderr, "%s\n", err.message);
		fail();
	}
	return s;
}

#define ROOT(st) "{\"urn\": \"urn:pulumi:" st "::p::pulumi:pulumi:Stack::p-" st "\", \"custom\": " \
		 "false, \"type\": \"pulumi:pulumi:Stack\"}"
#define RES(st, name, extra)                                                                  \
	"{\"urn\": \"urn:pulumi:" st "::p::t:m:R::" name "\", \"custom\": true, \"id\": \"" name  \
	"\", \"type\": \"t:m:R\", \"parent\": \"urn:pulumi:" st "::p::pulumi:pulumi:Stack::p-" st \
	"\"" extra "}"

/* Version 4 (extensionRef is the extensionParameterization feature). */
#define STATE(st, resources, extensions)                                                      \
	"{\"version\": 4, \"features\": [\"extensionParameterization\"], \"checkpoint\": "        \
	"{\"stack\": \"organization/p/" st "\", \"latest\": {\"manifest\": {\"time\": "            \
	"\"2024-01-01T00:00:00Z\", \"magic\": \"\", \"version\": \"\"}, \"resources\": ["          \
	resources "]" extensions "}}}"

#define BLOB(v) "{\"name\": \"x\", \"version\": \"1.0.0\", \"value\": \"" v "\"}"

static const char src_text[] = STATE(
	"dev",
	ROOT("dev") ", " RES("dev", "a", ", \"extensionRef\": \"ea\"") ", "
		    RES("dev", "b", ", \"extensionRef\": \"eb\"") ", " RES("dev", "keep", ""),
	", \"extensions\": {\"ea\": " BLOB("YQ==") ", \"eb\": " BLOB("Yg==") ", \"stale\": "
	BLOB("cw==") "}");
static const char dst_text[] = STATE("prod", ROOT("prod") ", " RES("prod", "c", ""),
				     ", \"extensions\": {\"unused\": " BLOB("dQ==") "}");

/* Blobs go with the resources that refer to them; each stack keeps only its referenced ones. */
static void test_extension_blobs(void **unused)
{
	(void)unused;
	st_state *src = load_text(src_text), *dst = load_text(dst_text);
	const char *pat[] = {"urn:pulumi:dev::p::t:m:R::a"};
	st_move_opts o = ST_MOVE_OPTS_INIT;
	st_move_report rep;
	o.patterns = pat;
	o.npatterns = 1;
	assert_int_equal(st_move(src, NULL, dst, NULL, &o, &rep, NULL), ST_OK);
	json_t *de = json_object_get(st_state_deployment(dst), "extensions");
	json_t *se = json_object_get(st_state_deployment(src), "extensions");
	assert_int_equal(json_object_size(de), 1);
	assert_string_equal(st_json_str(json_object_get(de, "ea"), "value"), "YQ==");
	assert_int_equal(json_object_size(se), 1);
	assert_non_null(json_object_get(se, "eb"));
	st_move_report_clear(&rep);
	st_state_free(src);
	st_state_free(dst);
}

/* A blob a moved resource needs is missing: Pulumi's error; both states as they were. Also
 * when neither state has any blob (the refs alone send the move through the blobs' pass). */
static void missing_blob_case(const char *dest)
{
	static const char broken[] = STATE(
		"dev", ROOT("dev") ", " RES("dev", "a", ", \"extensionRef\": \"ea\"") ", "
			RES("dev", "b", ", \"extensionRef\": \"gone\""), "");
	st_state *src = load_text(broken), *dst = load_text(dest);
	char *sb = dump(src), *db = dump(dst), *sa, *da;
	const char *pat[] = {"urn:pulumi:dev::p::t:m:R::*"};
	st_move_opts o = ST_MOVE_OPTS_INIT;
	st_move_report rep;
	st_error err;
	o.patterns = pat;
	o.npatterns = 1;
	st_error_clear(&err);
	assert_int_equal(st_move(src, NULL, dst, NULL, &o, &rep, &err), ST_EINVAL);
	assert_string_equal(err.message, "source snapshot is missing extension blob(s) [ea gone] "
			    "referenced by moved resources");
	sa = dump(src);
	da = dump(dst);
	assert_string_equal(sb, sa);
	assert_string_equal(db, da);
	st_move_report_clear(&rep);
	free(sa);
	free(da);
	free(sb);
	free(db);
	st_state_free(src);
	st_state_free(dst);
}

static void test_missing_blob_changes_nothing(void **unused)
{
	(void)unused;
	missing_blob_case(dst_text);
	missing_blob_case(STATE("prod", ROOT("prod") ", " RES("prod", "c", ""), ""));
}

/* The destination's commit fails after the source's passed: both are rolled back, byte for
 * byte (the source's envelope too); the same state on both sides is refused. */
static void test_failed_pair_commit_rolls_back_both(void **unused)
{
	(void)unused;
	st_state *src = load_text(src_text), *dst = load_text(dst_text);
	char *sb = dump(src), *db = dump(dst), *sa, *da;
	const char *pat[] = {"urn:pulumi:dev::p::t:m:R::a"};
	st_move_opts o = ST_MOVE_OPTS_INIT;
	st_move_report rep;
	st_edit *se, *de;
	st_error err;
	o.patterns = pat;
	o.npatterns = 1;
	assert_int_equal(st_edit_begin(&se, src, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_begin(&de, dst, NULL, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_edit_move(se, se, &o, &rep, &err), ST_EINVAL);
	assert_string_equal(err.message, "the source and the destination are the same state");
	assert_int_equal(st_edit_move(se, de, &o, &rep, NULL), ST_OK);
	assert_int_equal(rep.nmoved, 1);
	/* a later operation in the destination's session breaks it: a parent that is missing */
	json_t *dep = json_deep_copy(st_state_deployment(dst));
	json_object_set_new(json_array_get(json_object_get(dep, "resources"), 1), "parent",
			    json_string("urn:pulumi:prod::p::t:m:R::missing"));
	assert_int_equal(st_edit_replace_deployment(de, dep, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_edit_commit_pair(se, de, NULL, NULL, NULL, NULL, NULL, &err),
			 ST_EINTEGRITY);
	sa = dump(src);
	da = dump(dst);
	assert_string_equal(sb, sa);
	assert_string_equal(db, da);
	st_move_report_clear(&rep);
	st_edit_free(se);
	st_edit_free(de);
	free(sa);
	free(da);
	free(sb);
	free(db);
	st_state_free(src);
	st_state_free(dst);
}

static int save_pair(void *ctx, st_state *a, st_state *b, st_error *err)
{
	(void)ctx;
	return st_state_save_pair("move", a, "/nonexistent/dir/d.json", b,
				  "/nonexistent/dir/s.json", err);
}

/* A failed write: both rolled back (the files are as they were too). */
static void test_failed_pair_write_rolls_back_both(void **unused)
{
	(void)unused;
	st_state *src = load_text(src_text), *dst = load_text(dst_text);
	char *sb = dump(src), *db = dump(dst), *sa, *da;
	const char *pat[] = {"urn:pulumi:dev::p::t:m:R::a"};
	st_move_opts o = ST_MOVE_OPTS_INIT;
	st_move_report rep;
	st_edit *se, *de;
	o.patterns = pat;
	o.npatterns = 1;
	assert_int_equal(st_edit_begin(&se, src, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_begin(&de, dst, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_move(se, de, &o, &rep, NULL), ST_OK);
	assert_int_not_equal(st_edit_commit_pair(de, se, save_pair, NULL, NULL, NULL, NULL, NULL),
			     ST_OK);
	sa = dump(src);
	da = dump(dst);
	assert_string_equal(sb, sa);
	assert_string_equal(db, da);
	st_move_report_clear(&rep);
	st_edit_free(se);
	st_edit_free(de);
	free(sa);
	free(da);
	free(sb);
	free(db);
	st_state_free(src);
	st_state_free(dst);
}

/* A big move runs its two checks and the pair commit on two threads: the same two states as
 * on one thread, and the threaded paths ran (their counters). */
static void test_big_move_two_threads(void **unused)
{
	(void)unused;
	char *out[2][2];
	for (int t = 0; t < 2; t++) {
		st_buf a, b;
		st_state *src, *dst;
		const char *pat[] = {"urn:pulumi:dev::p::t:m:R::r1*"};
		st_move_opts o = ST_MOVE_OPTS_INIT;
		st_move_report rep;
		unsigned long mv = st__two_count(ST__T_MOVE), pair = st__two_count(ST__T_COMMIT_PAIR);
		unsigned long touched = st__integrity_touched_runs();
		st_buf_init(&a);
		st_buf_init(&b);
		st_buf_adds(&a, "{\"version\": 3, \"deployment\": {\"manifest\": {}, \"resources\": ["
				ROOT("dev"));
		for (int i = 0; i < 700; i++)
			st_buf_printf(&a, ", {\"urn\": \"urn:pulumi:dev::p::t:m:R::r%d\", \"custom\": "
					  "true, \"id\": \"i%d\", \"type\": \"t:m:R\"}", i, i);
		st_buf_adds(&a, "]}}");
		st_buf_adds(&b, "{\"version\": 3, \"deployment\": {\"manifest\": {}, \"resources\": ["
				ROOT("prod"));
		for (int i = 0; i < 700; i++)
			st_buf_printf(&b, ", {\"urn\": \"urn:pulumi:prod::p::t:m:R::q%d\", \"custom\": "
					  "true, \"id\": \"q%d\", \"type\": \"t:m:R\"}", i, i);
		st_buf_adds(&b, "]}}");
		src = load_text(a.data);
		dst = load_text(b.data);
		o.patterns = pat;
		o.npatterns = 1;
		st_set_threads(t ? 2 : 1, NULL);
		assert_int_equal(st_move(src, NULL, dst, NULL, &o, &rep, NULL), ST_OK);
		st_set_threads(0, NULL);
		assert_int_equal(rep.nmoved, 111); /* r1, r10-r19, r100-r199 */
		assert_int_equal(st__two_count(ST__T_MOVE), mv + (unsigned long)t);
		assert_int_equal(st__two_count(ST__T_COMMIT_PAIR), pair + (unsigned long)t);
		/* both were checked before the move: the commit checked only what changed */
		assert_int_equal(st__integrity_touched_runs(), touched + 2);
		out[t][0] = dump(src);
		out[t][1] = dump(dst);
		st_move_report_clear(&rep);
		st_state_free(src);
		st_state_free(dst);
		st_buf_free(&a);
		st_buf_free(&b);
	}
	assert_string_equal(out[0][0], out[1][0]);
	assert_string_equal(out[0][1], out[1][1]);
	for (int t = 0; t < 2; t++) {
		free(out[t][0]);
		free(out[t][1]);
	}
}

/* Two valid states whose move would leave the source invalid (a provider whose parent moves
 * stays, its parent gone): the commit's check, which looks only where the move changed
 * something, finds it, and both stay as they were with the full check's report. */
static void test_invalid_result_refused(void **unused)
{
	(void)unused;
	static const char s_text[] = STATE(
		"dev",
		ROOT("dev") ", " RES("dev", "comp", "") ", "
		"{\"urn\": \"urn:pulumi:dev::p::t:m:R$pulumi:providers:x::px\", \"custom\": true, "
		"\"id\": \"pid\", \"type\": \"pulumi:providers:x\", \"parent\": "
		"\"urn:pulumi:dev::p::t:m:R::comp\"}, "
		"{\"urn\": \"urn:pulumi:dev::p::t:m:R$t:m:R::kid\", \"custom\": true, \"id\": "
		"\"kid\", \"type\": \"t:m:R\", \"parent\": \"urn:pulumi:dev::p::t:m:R::comp\", "
		"\"provider\": \"urn:pulumi:dev::p::t:m:R$pulumi:providers:x::px::pid\"}, "
		RES("dev", "keep", ""),
		"");
	st_state *src = load_text(s_text), *dst = load_text(dst_text);
	char *sb = dump(src), *db = dump(dst), *sa, *da;
	const char *pat[] = {"urn:pulumi:dev::p::t:m:R::comp"};
	st_move_opts o = ST_MOVE_OPTS_INIT;
	st_move_report rep;
	st_problems probs = {0};
	st_edit *se, *de;
	st_error err;
	unsigned long touched = st__integrity_touched_runs(), hints = st__edit_hint_used();
	o.patterns = pat;
	o.npatterns = 1;
	assert_int_equal(st_edit_begin(&se, src, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_begin(&de, dst, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_move(se, de, &o, &rep, NULL), ST_OK);
	assert_int_equal(rep.nmoved, 2);
	st_error_clear(&err);
	assert_int_equal(st_edit_commit_pair(se, de, NULL, NULL, NULL, NULL, &probs, &err),
			 ST_EINTEGRITY);
	assert_string_equal(err.message,
			    "state edit produced an invalid snapshot (1 integrity error; the state "
			    "was valid before, so nothing is written): child resource "
			    "urn:pulumi:dev::p::t:m:R$pulumi:providers:x::px refers to missing "
			    "parent urn:pulumi:dev::p::t:m:R::comp");
	assert_int_equal(probs.count, 1);
	assert_string_equal(probs.items[0].rule, "integrity/parent-missing");
	assert_string_equal(probs.items[0].pointer, "/checkpoint/latest/resources/1/parent");
	assert_true(st__integrity_touched_runs() > touched);
	/* found by the move's hint: the provider whose parent left is among its resources */
	assert_int_equal(st__edit_hint_used(), hints + 1);
	sa = dump(src);
	da = dump(dst);
	assert_string_equal(sb, sa);
	assert_string_equal(db, da);
	st_problems_clear(&probs);
	st_move_report_clear(&rep);
	st_edit_free(se);
	st_edit_free(de);
	free(sa);
	free(da);
	free(sb);
	free(db);
	st_state_free(src);
	st_state_free(dst);
}

/* A move hands its source's commit what its scan found (the resources that refer to what
 * left), which the commit's check takes instead of scanning again; any other operation in the
 * session after the move forgets it (the check scans), and the verdict is the same. */
static void test_check_takes_move_hint(void **unused)
{
	(void)unused;
	static const char s_text[] = STATE(
		"dev",
		ROOT("dev") ", " RES("dev", "a", "") ", "
		RES("dev", "b", ", \"dependencies\": [\"urn:pulumi:dev::p::t:m:R::a\"]") ", "
		RES("dev", "keep", ""),
		"");
	const char *pat[] = {"urn:pulumi:dev::p::t:m:R::a"};
	st_move_opts o = ST_MOVE_OPTS_INIT;
	o.patterns = pat;
	o.npatterns = 1;
	char *out[2][2];
	for (int later = 0; later < 2; later++) {
		st_state *src = load_text(s_text), *dst = load_text(dst_text);
		st_move_report rep;
		st_edit *se, *de;
		st_handle h;
		unsigned long used = st__edit_hint_used();
		assert_int_equal(st_edit_begin(&se, src, NULL, NULL), ST_OK);
		assert_int_equal(st_edit_begin(&de, dst, NULL, NULL), ST_OK);
		assert_int_equal(st_edit_move(se, de, &o, &rep, NULL), ST_OK);
		assert_int_equal(rep.nmoved, 1);
		if (later) { /* another operation on the source after the move */
			assert_int_equal(st_edit_handle_of(se, "urn:pulumi:dev::p::t:m:R::keep", &h,
							   NULL),
					 ST_OK);
			assert_int_equal(st_edit_set_flag(se, &h, 1, "protect", 1, NULL, NULL), ST_OK);
		}
		assert_int_equal(st_edit_commit_pair(se, de, NULL, NULL, NULL, NULL, NULL, NULL),
				 ST_OK);
		assert_int_equal(st__edit_hint_used(), used + !later);
		out[later][0] = dump(src);
		out[later][1] = dump(dst);
		assert_non_null(strstr(out[later][0], "::b\""));
		assert_null(strstr(out[later][0], "R::a\""));
		st_move_report_clear(&rep);
		st_edit_free(se);
		st_edit_free(de);
		st_state_free(src);
		st_state_free(dst);
	}
	assert_string_equal(out[0][1], out[1][1]);
	for (int t = 0; t < 2; t++) {
		free(out[t][0]);
		free(out[t][1]);
	}
}

/* review27 R1: a move that is not the session's first change takes no hint. Here the second
 * move takes a resource the session's rename made (its URN string only that operation's
 * snapshot held: the hint's borrowed keys were read after it was freed, ASan/valgrind), and
 * the commit's check scans in full. */
static void test_second_move_no_hint(void **unused)
{
	(void)unused;
	static const char s_text[] = STATE(
		"dev",
		ROOT("dev") ", " RES("dev", "a", "") ", "
		RES("dev", "b", ", \"dependencies\": [\"urn:pulumi:dev::p::t:m:R::a\"]") ", "
		RES("dev", "keep", ""),
		"");
	const char *pat[] = {"urn:pulumi:dev::p::t:m:R::a"};
	st_move_opts o = ST_MOVE_OPTS_INIT;
	st_state *src = load_text(s_text), *d1 = load_text(dst_text), *d2 = load_text(dst_text);
	st_move_report r1, r2;
	st_edit *se, *e1, *e2;
	st_handle h;
	unsigned long used = st__edit_hint_used();
	o.patterns = pat;
	o.npatterns = 1;
	assert_int_equal(st_edit_begin(&se, src, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_begin(&e1, d1, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_begin(&e2, d2, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_move(se, e1, &o, &r1, NULL), ST_OK);
	assert_int_equal(st_edit_handle_of(se, "urn:pulumi:dev::p::t:m:R::b", &h, NULL), ST_OK);
	assert_int_equal(st_edit_rename(se, h, "a", NULL), ST_OK);
	assert_int_equal(st_edit_move(se, e2, &o, &r2, NULL), ST_OK);
	assert_int_equal(r2.nmoved, 1);
	assert_int_equal(st_edit_commit(se, NULL, NULL, NULL), ST_OK);
	assert_int_equal(st__edit_hint_used(), used);
	st_move_report_clear(&r1);
	st_move_report_clear(&r2);
	st_edit_free(se);
	st_edit_free(e1);
	st_edit_free(e2);
	st_state_free(src);
	st_state_free(d1);
	st_state_free(d2);
}

/* One move of `urn` from fixture s to fixture d: its code, message and both states after. */
typedef struct outcome {
	int rc;
	char msg[sizeof(((st_error *)0)->message)];
	char *src, *dst;
} outcome;

static void move_once(const char *s, const char *d, const char *urn, outcome *out)
{
	st_state *src = tu_load(s), *dst = tu_load(d);
	const char *pat[] = {urn};
	st_move_opts o = ST_MOVE_OPTS_INIT;
	st_move_report rep;
	st_error err;
	o.patterns = pat;
	o.npatterns = 1;
	o.source_stack = "p/dev";
	o.dest_stack = "p/prod";
	st_error_clear(&err);
	out->rc = st_move(src, NULL, dst, NULL, &o, &rep, &err);
	snprintf(out->msg, sizeof(out->msg), "%s", out->rc ? err.message : "");
	out->src = dump(src);
	out->dst = dump(dst);
	st_move_report_clear(&rep);
	st_state_free(src);
	st_state_free(dst);
}

/* The commit's check after a move, looking only where the move changed something, decides as
 * the full check does: every resource of the move fixtures and two real states moved to three
 * destinations, with the shortcut and without, the same outcome (code, message, both states). */
static void test_check_after_move_as_full(void **unused)
{
	(void)unused;
	static const char *const srcs[] = {
		"move/children.json", "move/dependencies.json", "move/replacewith.json",
		"move/reparent.json", "move/rooted.json", "move/leaf.json",
		"realworld/04-kloudlib-backup-big-56res.json", "realworld/30-azure-network.json"};
	static const char *const dsts[] = {"move/dest-same-provider.json",
					   "move/dest-other-provider.json",
					   "move/dest-existing-resource.json"};
	unsigned long runs = st__integrity_touched_runs(), hints = st__edit_hint_used();
	size_t moves = 0, done = 0;
	for (size_t a = 0; a < sizeof(srcs) / sizeof(*srcs); a++) {
		st_state *s = tu_load(srcs[a]);
		json_t *res = st_state_resources(s, 0), *r;
		size_t i;
		json_array_foreach(res, i, r) {
			for (size_t b = 0; b < sizeof(dsts) / sizeof(*dsts); b++) {
				outcome on, off;
				move_once(srcs[a], dsts[b], st_json_str(r, "urn"), &on);
				st__integrity_touched_enable(0);
				move_once(srcs[a], dsts[b], st_json_str(r, "urn"), &off);
				st__integrity_touched_enable(1);
				assert_int_equal(on.rc, off.rc);
				assert_string_equal(on.msg, off.msg);
				assert_string_equal(on.src, off.src);
				assert_string_equal(on.dst, off.dst);
				moves++;
				done += on.rc == ST_OK;
				free(on.src);
				free(on.dst);
				free(off.src);
				free(off.dst);
			}
		}
		st_state_free(s);
	}
	assert_true(moves >= 100);
	assert_true(done >= 30);
	/* the shortcut ran on most sides (one whose URNs repeat takes the full check) */
	assert_true(st__integrity_touched_runs() - runs >= 200);
	/* most sources took the move's hint instead of the scan (not where a provider left) */
	assert_true(st__edit_hint_used() - hints >= 200); /* 246 of 276 when written */
}

/* The journal's old hashes, read at step pair:4 (both journals written). */
typedef struct seen_journal {
	const char *path; /* the destination's file: its journal */
	char text[1024];
	int checked; /* staged objects whose hash was checked */
} seen_journal;

static void on_step(void *ctx, const char *op, int step)
{
	seen_journal *sj = ctx;
	char *jp, *t;
	if (strcmp(op, "pair") || step != 4)
		return;
	assert_true(asprintf(&jp, "%s.statetool-journal", sj->path) > 0);
	t = tu_read(jp, NULL);
	assert_non_null(t);
	json_t *j = json_loads(t, 0, NULL), *sides = json_object_get(j, "sides");
	snprintf(sj->text, sizeof(sj->text), "%s %s",
		 st_json_str(json_array_get(sides, 0), "old_hash"),
		 st_json_str(json_array_get(sides, 1), "old_hash"));
	/* each staged object's hash is a plain hash of its bytes */
	for (size_t i = 0; i < 2; i++) {
		json_t *sd = json_array_get(sides, i);
		char *dir = strdup(sj->path), *slash = strrchr(dir, '/'), *sp, *bytes, hex[65];
		size_t n = 0;
		*slash = '\0';
		assert_true(asprintf(&sp, "%s/%s", dir, st_json_str(sd, "staged")) > 0);
		assert_non_null(bytes = tu_read(sp, &n));
		xxh3_hex_of(XXH3_128bits(bytes, n), hex);
		assert_string_equal(st_json_str(sd, "new_hash"), hex);
		sj->checked++;
		free(bytes);
		free(sp);
		free(dir);
	}
	json_decref(j);
	free(t);
	free(jp);
}

/* One move between two files loaded lazily, written through the journal; `touch_src`: the
 * source rewritten with the same bytes after the load (another file's identity). The old
 * hashes the journal wrote go to sj. */
/* A state of big_count resources (3,000: over 4 MiB) in the writer's style (a file that size
 * is mapped, and loaded lazily). New. */
static int big_count = 3000;

static char *big_state(const char *stack, const char *prefix)
{
	st_buf b;
	st_state *s;
	char *out, pad[1601];
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	st_buf_init(&b);
	st_buf_printf(&b, "{\"version\": 3, \"checkpoint\": {\"stack\": \"organization/p/%s\", "
			  "\"latest\": {\"manifest\": {\"time\": \"2024-01-01T00:00:00Z\", "
			  "\"magic\": \"\", \"version\": \"\"}, \"resources\": [{\"urn\": "
			  "\"urn:pulumi:%s::p::pulumi:pulumi:Stack::p-%s\", \"custom\": false, "
			  "\"type\": \"pulumi:pulumi:Stack\"}",
		      stack, stack, stack);
	for (int i = 0; i < big_count; i++)
		st_buf_printf(&b, ", {\"urn\": \"urn:pulumi:%s::p::t:m:R::%s%d\", \"custom\": true, "
				  "\"id\": \"i%d\", \"type\": \"t:m:R\", \"inputs\": {\"pad\": "
				  "\"%s\"}}", stack, prefix, i, i, pad);
	st_buf_adds(&b, "]}}}");
	s = load_text(b.data);
	st_buf_free(&b);
	out = dump(s);
	st_state_free(s);
	return out;
}

static int journal_move_rc(const char *dir, int touch_src, seen_journal *sj, st_error *serr);

static void journal_move(const char *dir, int touch_src, seen_journal *sj)
{
	st_error err;
	st_error_clear(&err);
	if (journal_move_rc(dir, touch_src, sj, &err) != ST_OK)
		fail_msg("%s", err.message);
}

/* The same, the save's result returned (its error in err). */
static int journal_move_rc(const char *dir, int touch_src, seen_journal *sj, st_error *serr)
{
	int rc;
	char *sp, *dp;
	st_state *src = NULL, *dst = NULL;
	st_edit *se, *de;
	st_move_opts o = ST_MOVE_OPTS_INIT;
	st_move_report rep;
	st_hooks h = ST_HOOKS_INIT;
	const char *pat[] = {"urn:pulumi:dev::p::t:m:R::r7"};
	char *st = big_state("dev", "r"), *dt = big_state("prod", "q");
	st_error err;
	assert_true(asprintf(&sp, "%s/src.json", dir) > 0);
	assert_true(asprintf(&dp, "%s/dst.json", dir) > 0);
	assert_non_null(st);
	assert_non_null(dt);
	tu_write(sp, st, strlen(st));
	tu_write(dp, dt, strlen(dt));
	st_error_clear(&err);
	if (st__state_load_lazy(&src, sp, NULL, &err) != ST_OK ||
	    st__state_load_lazy(&dst, dp, NULL, &err) != ST_OK)
		fail_msg("%s", err.message);
	assert_true(st__lazy_count(src) > 0 && st__lazy_count(dst) > 0);
	o.patterns = pat;
	o.npatterns = 1;
	assert_int_equal(st_edit_begin(&se, src, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_begin(&de, dst, NULL, NULL), ST_OK);
	assert_int_equal(st_edit_move(se, de, &o, &rep, NULL), ST_OK);
	if (touch_src) {
		/* rewritten as Pulumi writes, by a rename (a rewrite in place would pull the pages
		 * from under the load's and the early hashing's mappings: SIGBUS) */
		char *tmp;
		usleep(20000); /* (a new modification time) */
		assert_true(asprintf(&tmp, "%s.new", sp) > 0);
		tu_write(tmp, st, strlen(st));
		assert_int_equal(rename(tmp, sp), 0);
		free(tmp);
	}
	sj->path = dp;
	h.step = on_step;
	h.ctx = sj;
	assert_int_equal(st_set_hooks(&h, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st_edit_commit_pair(de, se, NULL, NULL, NULL, NULL, NULL, &err), ST_OK);
	rc = st_state_save_pair("move", dst, dp, src, sp, serr);
	st_set_hooks(NULL, NULL);
	st_move_report_clear(&rep);
	st_edit_free(se);
	st_edit_free(de);
	st_state_free(src);
	st_state_free(dst);
	free(sp);
	free(dp);
	free(st);
	free(dt);
	return rc;
}

/* A move hashes the old files ahead, beside the move; the journal takes those hashes only for
 * a file still the one hashed: the same hashes either way. */
static void test_old_files_hashed_ahead(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir();
	seen_journal a, b;
	unsigned long used = st__prehash_used();
	st_set_threads(2, NULL);
	journal_move(dir, 0, &a);
	assert_int_equal(st__prehash_used(), used + 2);
	journal_move(dir, 1, &b);
	assert_int_equal(st__prehash_used(), used + 3); /* the source's file changed: hashed anew */
	st_set_threads(1, NULL);
	journal_move(dir, 0, &b);
	assert_int_equal(st__prehash_used(), used + 3); /* one thread: not ahead */
	st_set_threads(0, NULL);
	assert_int_equal(strlen(a.text), 32 + 1 + 32); /* XXH3-128 in hex, twice */
	assert_string_equal(a.text, b.text);
	tu_rmdir(dir);
}

/* The staged objects' hashes start from the old files' ahead hashes: the destination's new
 * file is its old one up to near its end (it gains a resource at the end of its array), so
 * its first 8 MiB are not hashed again; the journal's hashes are plain hashes of the staged
 * bytes (on_step checks), and the same without the ahead hashes. */
static void test_staged_hash_from_ahead(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir();
	seen_journal a = {0}, b = {0};
	unsigned long skipped = st__taphash_skipped();
	big_count = 6000; /* over 8 MiB */
	st_set_threads(2, NULL);
	journal_move(dir, 0, &a);
	assert_int_equal(a.checked, 2);
	assert_true(st__taphash_skipped() >= skipped + (8u << 20));
	skipped = st__taphash_skipped();
	st_set_threads(1, NULL); /* no hash ahead: plain hashes */
	journal_move(dir, 0, &b);
	assert_int_equal(b.checked, 2);
	assert_int_equal(st__taphash_skipped(), skipped);
	st_set_threads(0, NULL);
	big_count = 3000;
	assert_string_equal(a.text, b.text);
	tu_rmdir(dir);
}

/* The file st__prehash_taken_hook rewrites in place, where, and how often it did. */
static const char *rewrite_path;
static off_t rewrite_at = 1 << 20;
static int rewrites;

/* One byte at rewrite_at (1 MiB: inside a resource the save copies from the file) changed in
 * place, the size and modification time kept (only the change time tells, so the stream's
 * checks pass): after the journal took the ahead hash, before the staged object is written. */
static void rewrite_in_place(const char *path)
{
	struct stat sb;
	struct timespec ts[2];
	char c;
	int fd;
	if (!rewrite_path || strcmp(path, rewrite_path))
		return;
	assert_true((fd = open(path, O_RDWR)) >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(pread(fd, &c, 1, rewrite_at), 1);
	c = c == 'y' ? 'z' : 'y';
	usleep(20000); /* (a new change time) */
	assert_int_equal(pwrite(fd, &c, 1, rewrite_at), 1);
	ts[0] = sb.st_atim;
	ts[1] = sb.st_mtim;
	assert_int_equal(futimens(fd, ts), 0);
	close(fd);
	rewrites++;
}

/* The destination's file rewritten in place (size and modification time kept) after the
 * journal took its ahead hash: the staged bytes are the file's new bytes, the hash kept for
 * its first 8 MiB the old ones, so the save is refused (ST_ECONFLICT, the staged objects
 * removed, no journal); without the check it wrote a journal whose new_hash is not the
 * staged bytes' (on_step fails). */
static void test_staged_hash_file_rewritten(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), *dp, *want, *p;
	seen_journal a = {0};
	st_error err;
	struct stat sb;
	big_count = 6000; /* over 8 MiB */
	assert_true(asprintf(&dp, "%s/dst.json", dir) > 0);
	rewrite_path = dp;
	rewrites = 0;
	st__prehash_taken_hook = rewrite_in_place;
	st_set_threads(2, NULL);
	st_error_clear(&err);
	assert_int_equal(journal_move_rc(dir, 0, &a, &err), ST_ECONFLICT);
	st_set_threads(0, NULL);
	st__prehash_taken_hook = NULL;
	rewrite_path = NULL;
	big_count = 3000;
	assert_int_equal(rewrites, 1);
	assert_int_equal(a.checked, 0);
	assert_true(asprintf(&want, "'%s' was rewritten in place by another program while "
				    "statetool was using it; nothing was written: run the command "
				    "again", dp) > 0);
	assert_string_equal(err.message, want);
	/* nothing staged or journalled is left */
	const char *left[] = {"dst.json.statetool-new", "src.json.statetool-new",
			      "dst.json.statetool-journal", "src.json.statetool-journal",
			      "dst.json.bak", "src.json.bak"};
	for (size_t i = 0; i < sizeof(left) / sizeof(*left); i++) {
		assert_true(asprintf(&p, "%s/%s", dir, left[i]) > 0);
		assert_int_equal(lstat(p, &sb), -1);
		free(p);
	}
	free(want);
	free(dp);
	tu_rmdir(dir);
}

/* The journal's XXH3-128 of fixed bytes, known values: the empty input's is xxhash's published
 * vector (xxh128sum of an empty file), the others what libxxhash 0.8.1's shared library gave
 * before the hash was compiled in (XXH_INLINE_ALL): whole, and by 8 MiB slices with the states
 * kept (one byte past the first slice, and 20 MiB). */
static void test_xxh3_known_values(void **unused)
{
	(void)unused;
	static const struct {
		size_t len;
		const char *hex;
	} want[] = {{0, "99aa06d3014798d86001c324468d497f"},
		    {(8u << 20) + 1, "c942baafb3c09f3d1a8450200203b3ff"},
		    {20u << 20, "4ec152bbf6d12c386d46fb05b6e70bc3"}};
	size_t n = 20u << 20;
	unsigned char *b = malloc(n);
	char hex[65];

	assert_non_null(b);
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 131u + (i >> 13));
	st__jhash_hex(ST__JH_XXH3, "statetool", 9, hex);
	assert_string_equal(hex, "1cc3b1158933f0d8d3bd5aa961271095");
	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
		st__jhash_hex(ST__JH_XXH3, b, want[i].len, hex);
		assert_string_equal(hex, want[i].hex);
		st__jhash_mapped_hex(ST__JH_XXH3, (const char *)b, want[i].len, hex);
		assert_string_equal(hex, want[i].hex);
	}
	free(b);
}

/* The reviewer's case: a staged object the old file's bytes to its end, so the hash reads the
 * mapping again (from its last 8 MiB state) only when finished; the file rewritten in place
 * before that, size and modification time kept: ST_ECONFLICT, not a hash of bytes that were
 * never staged. Untouched: ST_OK, the plain hash. */
static void test_taphash_final_file_rewritten(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), *path, *text, hex[65], got[65], want[65];
	st_state *s = NULL;
	st__taphash t;
	const char *map;
	size_t len = 0;
	st_error err;

	big_count = 6000; /* over 8 MiB */
	text = big_state("dev", "r");
	big_count = 3000;
	assert_true(asprintf(&path, "%s/old.json", dir) > 0);
	tu_write(path, text, strlen(text));
	xxh3_hex_of(XXH3_128bits(text, strlen(text)), want);
	st_set_threads(2, NULL);
	for (int rewrite = 0; rewrite < 2; rewrite++) {
		st_error_clear(&err);
		assert_int_equal(st__state_load_lazy(&s, path, NULL, &err), ST_OK);
		st__lazy_prehash(s);
		assert_int_equal(st__prehash_take_for(s, path, hex, &t), 1);
		assert_ptr_equal(t.of, s);
		assert_non_null(map = st__lazy_file_text(s, &len));
		assert_int_equal(len, strlen(text));
		st__taphash_update(&t, map, len); /* the same bytes, from the mapping */
		if (rewrite) { /* a byte the hash reads again, past its last state */
			rewrite_path = path;
			rewrite_at = (8 << 20) + 100;
			rewrite_in_place(path);
			rewrite_at = 1 << 20;
			rewrite_path = NULL;
		}
		assert_int_equal(st__taphash_final(&t, got, &err), rewrite ? ST_ECONFLICT : ST_OK);
		if (!rewrite)
			assert_string_equal(got, want);
		st_state_free(s);
		s = NULL;
	}
	st_set_threads(0, NULL);
	free(text);
	free(path);
	tu_rmdir(dir);
}

/* One case of test_taphash: the staged bytes as pieces, each from the old file's mapping at
 * an offset (len bytes) or, with off -1, the byte 'X' len times, or with off -2 a copy (in
 * other memory) of the mapping's bytes at the piece's own offset; the tap's hash equals a
 * plain hash of the bytes. */
typedef struct piece {
	long off;
	size_t len;
} piece;

static void taphash_case(const XXH3_state_t *kept, const char *map, size_t size,
			 const piece *pcs, size_t np, unsigned long want_skipped)
{
	st__taphash t;
	XXH3_state_t plain;
	char got[65], want[65], *x = malloc(1 << 20);
	unsigned long before = st__taphash_skipped();

	assert_non_null(x);
	memset(x, 'X', 1 << 20);
	st__taphash_init(&t, kept, map, size);
	XXH3_128bits_reset(&plain);
	for (size_t i = 0, at = 0; i < np; at += pcs[i].len, i++) {
		const char *p = pcs[i].off < 0 ? x : map + pcs[i].off;
		assert_true(pcs[i].len <= (pcs[i].off < 0 ? (size_t)1 << 20 : size));
		if (pcs[i].off == -2)
			memcpy(x, map + at, pcs[i].len);
		/* in uneven slices, as a writer hands them over */
		for (size_t done = 0, k; done < pcs[i].len; done += k) {
			k = pcs[i].len - done < 1234567 ? pcs[i].len - done : 1234567;
			st__taphash_update(&t, p + done, k);
			XXH3_128bits_update(&plain, p + done, k);
		}
	}
	assert_int_equal(st__taphash_final(&t, got, NULL), ST_OK);
	xxh3_hex_of(XXH3_128bits_digest(&plain), want);
	assert_string_equal(got, want);
	assert_int_equal(st__taphash_skipped() - before, want_skipped);
	free(x);
}

/* An old file hashed ahead (its states kept every 8 MiB) and mapped, for test_taphash. */
static const XXH3_state_t *hashed_ahead(const char *path, size_t size,
						    st__prehash **ph, char **map)
{
	char *data = malloc(size), hex[65];
	const XXH3_state_t *kept;
	size_t got = 0;
	int fd;
	assert_non_null(data);
	for (size_t i = 0; i < size; i++)
		data[i] = (char)('a' + (i * 7 + i / 4099) % 26);
	tu_write(path, data, size);
	free(data);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_non_null(*ph = st__prehash_start(fd));
	*map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(*map != MAP_FAILED);
	close(fd);
	assert_int_equal(st__prehash_take(*ph, path, hex), 1);
	assert_non_null(kept = st__prehash_states(*ph, &got));
	assert_int_equal(got, size);
	return kept;
}

/* The tap's hash equals a plain hash of the staged bytes whatever they are: the same file,
 * a change in the first byte, in the last, at and around an 8 MiB boundary, a staged file
 * shorter or longer than the old, the old bytes at another offset, no states at all. */
static void test_taphash(void **unused)
{
	(void)unused;
	const size_t K = 8u << 20, size = 3 * K + 12345;
	char *dir = tu_tmpdir(), *path, *map, *map2;
	st__prehash *ph, *ph2;
	const XXH3_state_t *kept, *kept2;

	st_set_threads(2, NULL);
	assert_true(asprintf(&path, "%s/old.json", dir) > 0);
	kept = hashed_ahead(path, size, &ph, &map);
	{ /* the same bytes: nothing hashed again but the last 12,345 */
		piece p[] = {{0, size}};
		taphash_case(kept, map, size, p, 1, 3 * K);
	}
	{ /* the same bytes, their first 1 MiB from other memory (a writer's own chunk) */
		piece p[] = {{-2, 1 << 20}, {1 << 20, size - (1 << 20)}};
		taphash_case(kept, map, size, p, 2, 3 * K);
	}
	{ /* the first byte changed: all hashed */
		piece p[] = {{-1, 1}, {1, size - 1}};
		taphash_case(kept, map, size, p, 2, 0);
	}
	{ /* the last byte changed */
		piece p[] = {{0, size - 1}, {-1, 1}};
		taphash_case(kept, map, size, p, 2, 3 * K);
	}
	{ /* the byte at 8 MiB changed, then the one before it, then the one after */
		piece p[] = {{0, K}, {-1, 1}, {(long)K + 1, size - K - 1}};
		piece q[] = {{0, K - 1}, {-1, 1}, {(long)K, size - K}};
		piece r[] = {{0, K + 1}, {-1, 1}, {(long)K + 2, size - K - 2}};
		taphash_case(kept, map, size, p, 3, K);
		taphash_case(kept, map, size, q, 3, 0);
		taphash_case(kept, map, size, r, 3, K);
	}
	{ /* shorter: cut inside a slice, at 16 MiB exactly, and empty */
		piece p[] = {{0, 2 * K + 5}};
		piece q[] = {{0, 2 * K}};
		taphash_case(kept, map, size, p, 1, 2 * K);
		taphash_case(kept, map, size, q, 1, 2 * K);
		taphash_case(kept, map, size, NULL, 0, 0);
	}
	{ /* longer: the old file and more */
		piece p[] = {{0, size}, {-1, 100}};
		taphash_case(kept, map, size, p, 2, 3 * K);
	}
	{ /* the old bytes, but shifted by one (a resource removed before them) */
		piece p[] = {{1, size - 1}};
		piece q[] = {{0, 10}, {11, size - 11}};
		taphash_case(kept, map, size, p, 1, 0);
		taphash_case(kept, map, size, q, 2, 0);
	}
	{ /* no states: a plain hash */
		piece p[] = {{0, size}};
		taphash_case(NULL, map, size, p, 1, 0);
	}
	/* a file of exactly 16 MiB, the same: the state after its last byte */
	kept2 = hashed_ahead(path, 2 * K, &ph2, &map2);
	{
		piece p[] = {{0, 2 * K}};
		taphash_case(kept2, map2, 2 * K, p, 1, 2 * K);
	}
	st_set_threads(0, NULL);
	munmap(map, size);
	munmap(map2, 2 * K);
	st__prehash_free(ph);
	st__prehash_free(ph2);
	free(path);
	tu_rmdir(dir);
}

/* A side written with its own bytes: its old and new hashes are equal, which the writer
 * accepts only for the same bytes (compared by BLAKE2b): the write goes through, the journal's
 * sides as asked and nothing left behind. */
static void test_pair_side_unchanged(void **unused)
{
	(void)unused;
	char *dir = tu_tmpdir(), *pa, *pb, *got;
	const char *a = "{\"version\": 3}\n", *b = "{\"version\": 3, \"b\": 1}\n",
		   *b2 = "{\"version\": 3, \"b\": 2}\n";
	size_t n = 0;
	st_error err;

	assert_true(asprintf(&pa, "%s/a.json", dir) > 0);
	assert_true(asprintf(&pb, "%s/b.json", dir) > 0);
	tu_write(pa, a, strlen(a));
	tu_write(pb, b, strlen(b));
	st_error_clear(&err);
	assert_int_equal(st_journal_write_pair("move", pa, a, strlen(a), pb, b2, strlen(b2), &err),
			 ST_OK);
	assert_non_null(got = tu_read(pa, &n));
	assert_int_equal(n, strlen(a));
	assert_memory_equal(got, a, n);
	free(got);
	assert_non_null(got = tu_read(pb, &n));
	assert_int_equal(n, strlen(b2));
	assert_memory_equal(got, b2, n);
	free(got);
	assert_int_equal(st_journal_pending(pa, NULL), 0);
	assert_int_equal(st_journal_pending(pb, NULL), 0);
	free(pb);
	assert_true(asprintf(&pb, "%s.statetool-new", pa) > 0);
	assert_int_equal(access(pb, F_OK), -1);
	free(pa);
	free(pb);
	tu_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extension_blobs),
		cmocka_unit_test(test_missing_blob_changes_nothing),
		cmocka_unit_test(test_failed_pair_commit_rolls_back_both),
		cmocka_unit_test(test_failed_pair_write_rolls_back_both),
		cmocka_unit_test(test_big_move_two_threads),
		cmocka_unit_test(test_invalid_result_refused),
		cmocka_unit_test(test_check_after_move_as_full),
		cmocka_unit_test(test_check_takes_move_hint),
		cmocka_unit_test(test_old_files_hashed_ahead),
		cmocka_unit_test(test_staged_hash_from_ahead),
		cmocka_unit_test(test_staged_hash_file_rewritten),
		cmocka_unit_test(test_taphash_final_file_rewritten),
		cmocka_unit_test(test_xxh3_known_values),
		cmocka_unit_test(test_taphash),
		cmocka_unit_test(test_pair_side_unchanged),
		cmocka_unit_test(test_second_move_no_hint),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
