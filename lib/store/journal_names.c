/*
 * Two-stack operations named by what the commands name: plain files by their paths (each in the
 * file store of its directory) and stacks of DIY backends, each side's object chosen as a save
 * chooses it; their recovery too. The protocol itself, on (store, key) sides, is journal.c's.
 */
#include "store_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int st_journal_pending_key(st_store *s, const char *key)
{
	char *jkey;
	int found;

	ST_ASSERT_ARG(s);
	ST_ASSERT_ARG(key);
	jkey = st_asprintf("%s" JOURNAL_SUFFIX, key);
	found = jkey && st_store_stat(s, jkey, NULL, NULL) == ST_OK;
	free(jkey);
	return found;
}

/* ---- plain files ---- */

int st_journal_pending(const char *path, char **other)
{
	ST_ASSERT_ARG(path);
	st_store *s = NULL;
	char *key = NULL, *jkey = NULL, *me = NULL;
	json_t *doc = NULL, *arr, *f;
	size_t i;
	int found = 0;

	if (other)
		*other = NULL;
	if (st__store_for_path(&s, &key, path, NULL) != ST_OK)
		return 0;
	found = st_journal_pending_key(s, key);
	if (found && other && (jkey = st_asprintf("%s" JOURNAL_SUFFIX, key))) {
		char *text = NULL;
		size_t len;
		if (st_store_read(s, jkey, 1 << 20, &text, &len, NULL, NULL) == ST_OK)
			st_json_parse(&doc, text, len, NULL, NULL, NULL, NULL, NULL);
		free(text);
		me = st__store_local_path(s, key);
	}
	arr = json_object_get(doc, "sides") ? json_object_get(doc, "sides")
					    : json_object_get(doc, "files");
	json_array_foreach(arr, i, f) {
		const char *p = st_json_str(f, "path"), *u = st_json_str(f, "store");
		const char *k = st_json_str(f, "key");
		char *w = p ? st_strdup(p)
		      : u && k && !strncmp(u, "file://", 7) ? st_asprintf("%s/%s", u + 7, k)
		      : u && k ? st_asprintf("%s/%s", u, k) : NULL;
		char real[4096];
		if (w && me && realpath(me, real) && !strcmp(real, w)) {
			free(w);
			continue;
		}
		if (other && !*other)
			*other = w;
		else
			free(w);
	}
	json_decref(doc);
	free(me);
	free(jkey);
	free(key);
	st_store_free(s);
	return found;
}

int st_journal_recover(const char *path, st_changes *report, st_error *err)
{
	ST_ASSERT_ARG(path);
	st_store *s = NULL;
	char *key = NULL;
	int rc = st__store_for_path(&s, &key, path, err);

	if (rc == ST_OK)
		rc = st_journal_recover_key(s, key, NULL, 0, 0, report, err);
	free(key);
	st_store_free(s);
	return rc;
}

/* Two plain files as one operation: each written by the store of its directory. */
static int pair_paths(const char *op, st_state *a, const char *path_a, st_state *b,
		      const char *path_b, st_error *err)
{
	st_store *sa = NULL, *sb = NULL;
	char *ka = NULL, *kb = NULL;
	int rc = st__store_for_path(&sa, &ka, path_a, err);

	if (rc == ST_OK)
		rc = st__store_for_path(&sb, &kb, path_b, err);
	if (rc == ST_OK) {
		st_pair_side A = {sa, ka, NULL, a}, B = {sb, kb, NULL, b};
		rc = st_journal_save(op, &A, &B, err);
	}
	free(ka);
	free(kb);
	st_store_free(sa);
	st_store_free(sb);
	return rc;
}

int st_state_save_pair(const char *op, st_state *a, const char *path_a, st_state *b,
		       const char *path_b, st_error *err)
{
	ST_ASSERT_ARG(a);
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(op);
	ST_ASSERT_ARG(path_a);
	ST_ASSERT_ARG(path_b);
	return pair_paths(op, a, path_a, b, path_b, err);
}

/* ---- stacks of backends ---- */

int st_backend_save_pair(const char *op, st_backend *ba, const char *stack_a, st_state *a,
			 st_backend *bb, const char *stack_b, st_state *b, st_error *err)
{
	ST_ASSERT_ARG(op);
	ST_ASSERT_ARG(stack_a);
	ST_ASSERT_ARG(a);
	ST_ASSERT_ARG(stack_b);
	ST_ASSERT_ARG(b);
	char *ka = NULL, *oa = NULL, *kb = NULL, *ob = NULL;
	int rc;

	ST_ASSERT_ARG(ba);
	ST_ASSERT_ARG(bb);
	rc = st_backend_stack_target(ba, stack_a, a, &ka, &oa, err);

	if (rc == ST_OK)
		rc = st_backend_stack_target(bb, stack_b, b, &kb, &ob, err);
	/* each stack's state before and after is a generation (st__diy_generation) */
	if (rc == ST_OK && st_backend_store(ba) &&
	    (oa || st_store_stat(st_backend_store(ba), ka, NULL, NULL) == ST_OK))
		rc = st__diy_generation(ba, stack_a, oa ? oa : ka, 1, err);
	if (rc == ST_OK && st_backend_store(bb) &&
	    (ob || st_store_stat(st_backend_store(bb), kb, NULL, NULL) == ST_OK))
		rc = st__diy_generation(bb, stack_b, ob ? ob : kb, 1, err);
	if (rc == ST_OK) {
		st_pair_side A = {st_backend_store(ba), ka, oa, a};
		st_pair_side B = {st_backend_store(bb), kb, ob, b};
		rc = st_journal_save(op, &A, &B, err);
	}
	if (rc == ST_OK)
		rc = st__diy_generation(ba, stack_a, ka, 0, err);
	if (rc == ST_OK)
		rc = st__diy_generation(bb, stack_b, kb, 0, err);
	free(ka);
	free(oa);
	free(kb);
	free(ob);
	return rc;
}

int st_backend_recover(st_backend *b, const char *stack, st_store *const *known, size_t nknown,
		       unsigned flags, st_changes *report, st_error *err)
{
	ST_ASSERT_ARG(known || !nknown);
	ST_ASSERT_ARG(stack);
	st_store *s;
	st_store_entry *e = NULL;
	char *prefix = NULL;
	size_t n = 0, js = strlen(JOURNAL_SUFFIX), ss = strlen(STAGED_SUFFIX);
	int rc;

	ST_ASSERT_ARG(b);
	if (flags & ~(unsigned)(ST_JOURNAL_CLEAN_STAGED | ST_JOURNAL_CHECK_HERE))
		return st__bad_flags(err, flags, ST_JOURNAL_CLEAN_STAGED | ST_JOURNAL_CHECK_HERE,
				     "ST_JOURNAL_CLEAN_STAGED and ST_JOURNAL_CHECK_HERE");
	s = st_backend_store(b);
	if (!s)
		return ST_OK; /* a backend without a store writes no journal */
	if ((rc = st__diy_stack_prefix(b, stack, &prefix, err)) != ST_OK)
		return rc;
	rc = st_store_list(s, prefix, 0, &e, &n, err);
	/* journals first (they may name the staged objects), then staged leftovers */
	for (int pass = 0; rc == ST_OK && pass < 2; pass++) {
		for (size_t i = 0; rc == ST_OK && i < n; i++) {
			size_t kl = strlen(e[i].key), sl = pass ? ss : js;
			if (kl <= sl || strcmp(e[i].key + kl - sl, pass ? STAGED_SUFFIX
									 : JOURNAL_SUFFIX))
				continue;
			e[i].key[kl - sl] = '\0';
			if (pass == 0)
				rc = st_journal_recover_key(s, e[i].key, known, nknown,
							    flags & ST_JOURNAL_CHECK_HERE, report,
							    err);
			else if ((flags & ST_JOURNAL_CLEAN_STAGED) &&
				 !(flags & ST_JOURNAL_CHECK_HERE))
				rc = st_journal_recover_key(s, e[i].key, known, nknown,
							    ST_JOURNAL_CLEAN_STAGED, report, err);
			e[i].key[kl - sl] = pass ? STAGED_SUFFIX[0] : JOURNAL_SUFFIX[0];
		}
	}
	/* then an interrupted stack rename (its marker beside the stack: stack_rename.c); to
	 * check it, every lock of the stack counts (both its stacks are in this backend) */
	for (size_t i = 0; rc == ST_OK && i < n; i++)
		if (!strncmp(e[i].key, prefix, strlen(prefix)) &&
		    !strcmp(e[i].key + strlen(prefix), RENAME_MARKER_SUFFIX)) {
			rc = flags & ST_JOURNAL_CHECK_HERE
				     ? st_lock_check_stack(b, stack, err)
				     : st__rename_recover(b, stack, NULL, 0, report, NULL, err);
			break;
		}
	st_store_entries_free(e, n);
	free(prefix);
	return rc;
}

/* ---- what doctor asks ---- */

/* A journal beside the stack of the key `rel` (under .pulumi/stacks/; `stem`: its length without
 * the extension), under any of the stack's object names (a change of compression stages the
 * new name and journals the old). */
char *st__journal_beside(st_store *s, const char *rel, size_t stem)
{
	static const char *const ext[] = {".json", ".json.gz", ".json.zst"};
	for (size_t i = 0; i < 3; i++) {
		char *k = st_asprintf(".pulumi/stacks/%.*s%s" JOURNAL_SUFFIX, (int)stem, rel, ext[i]);
		if (k && st_store_stat(s, k, NULL, NULL) == ST_OK)
			return k;
		free(k);
	}
	return NULL;
}

/* The lock the journal `jkey` names as its side's, there and not stale (as a lock finding
 * judges it): the operation still runs. Its description (new), or NULL. */
char *st__journal_running(st_store *s, const char *jkey, long long max_age)
{
	char *data = NULL, *desc = NULL;
	size_t len = 0, i;
	json_t *o = NULL, *sd;
	int stale = 1;
	if (st_store_read(s, jkey, 1 << 20, &data, &len, NULL, NULL) == ST_OK &&
	    st_json_parse(&o, data, len, NULL, NULL, NULL, NULL, NULL) == ST_OK)
		json_array_foreach(json_object_get(o, "sides"), i, sd) {
			const char *j = st_json_str(sd, "journal"), *lk = st_json_str(sd, "lock");
			if (!j || !lk || strcmp(j, jkey))
				continue;
			if (st_store_stat(s, lk, NULL, NULL) == ST_OK &&
			    st__lock_stale(s, lk, max_age, &desc, &stale) == ST_OK && stale) {
				free(desc);
				desc = NULL;
			}
			break;
		}
	json_decref(o);
	free(data);
	return desc;
}
