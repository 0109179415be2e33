/*
 * `statetool stack rename`: a stack of a DIY backend under a new name, within its project or
 * into another, as Pulumi's diyBackend.renameStack does it (pkg/backend/diy/backend.go): under
 * the old stack's lock, refused when the new name is taken ("a stack named ... already exists"),
 * the state's URNs rewritten (st_state_rename_stack), the new object written, the history files
 * moved (<stack>-<time>.* renamed as Pulumi renames them), and the old object kept as its .bak.
 * Beyond Pulumi, which leaves them behind, the tags file and the backups follow the stack.
 *
 * Order, for a kill at any point (doc/DESIGN.md, "An interrupted stack rename"): both stacks
 * locked (Pulumi's locks: Pulumi does not update the half-made stack); a marker naming both
 * stacks and both locks written beside each; the new object; the history, backups and tags
 * moved; the old object copied to .bak and deleted; the markers, then the locks, removed. The
 * next statetool command on either stack (st_backend_recover, cli_lock) or this rename again
 * ends an interrupted one first (st__rename_recover, under both locks, the rename's own not
 * another's): completed when the new object holds exactly what the rename makes of the old
 * one, or the old one is gone; undone when the new object was never written; otherwise one of
 * them was written since, and only --keep (ST_RENAME_KEEP_*) chooses which state stays.
 */
#include "store_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct sref {
	char *project; /* NULL in the legacy layout */
	char *stack;
	char *qname;
} sref;

static void sref_free(sref *r)
{
	free(r->project);
	free(r->stack);
	free(r->qname);
}

/* organization/P/S, P/S or S (new strings). */
static int split_qname(const char *q, sref *out)
{
	const char *s1 = strchr(q, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	memset(out, 0, sizeof(*out));
	if (s2) {
		out->project = st_strndup(s1 + 1, (size_t)(s2 - s1 - 1));
		out->stack = st_strdup(s2 + 1);
	} else if (s1) {
		out->project = st_strndup(q, (size_t)(s1 - q));
		out->stack = st_strdup(s1 + 1);
	} else {
		out->stack = st_strdup(q);
	}
	out->qname = out->project ? st_asprintf("organization/%s/%s", out->project, out->stack)
				  : st_strdup(out->stack);
	return out->stack && out->qname && (!s1 || out->project) ? ST_OK : ST_ENOMEM;
}

static char *dir_of(const char *kind, const sref *r)
{
	return r->project ? st_asprintf(".pulumi/%s/%s/%s/", kind, r->project, r->stack)
			  : st_asprintf(".pulumi/%s/%s/", kind, r->stack);
}

/* The objects directly in the old stack's history or backups folder whose names start with
 * the old stack's name and `sep` ("-": Pulumi's history names, renamed as Pulumi renames them;
 * ".": backups), to the new folder under the new name. */
static int move_named(st_store *s, const char *kind, char sep, const sref *o, const sref *n,
		      st_error *err)
{
	char *od = dir_of(kind, o), *nd = dir_of(kind, n);
	st_store_entry *e = NULL;
	size_t cnt = 0, ol = strlen(o->stack);
	int rc = od && nd ? st_store_list(s, od, ST_STORE_LIST_DIRS, &e, &cnt, err)
			  : st__err(err, ST_ENOMEM, "out of memory");

	for (size_t i = 0; rc == ST_OK && i < cnt; i++) {
		const char *file = e[i].key + strlen(od);
		const char *cut = sep == '-' ? strrchr(file, '-') : file + ol;
		char *to;
		if (file[strlen(file) - 1] == '/' || strncmp(file, o->stack, ol) || !cut ||
		    (size_t)(cut - file) != ol || *cut != sep)
			continue;
		if (!(to = st_asprintf("%s%s%s", nd, n->stack, cut)))
			rc = st__err(err, ST_ENOMEM, "out of memory");
		else if ((rc = st_store_copy(s, e[i].key, to, err)) == ST_OK)
			rc = st_store_delete(s, e[i].key, err);
		free(to);
	}
	st_store_entries_free(e, cnt);
	free(od);
	free(nd);
	return rc;
}

static int move_tags(st_store *s, const sref *o, const sref *n, st_error *err)
{
	char *from = o->project ? st_asprintf(".pulumi/stacks/%s/%s.pulumi-tags", o->project,
					      o->stack)
				: st_asprintf(".pulumi/stacks/%s.pulumi-tags", o->stack);
	char *to = n->project ? st_asprintf(".pulumi/stacks/%s/%s.pulumi-tags", n->project, n->stack)
			      : st_asprintf(".pulumi/stacks/%s.pulumi-tags", n->stack);
	st_error e2;
	int rc = ST_OK;

	st_error_clear(&e2);
	if (!from || !to)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	else if ((rc = st_store_copy(s, from, to, &e2)) == ST_OK)
		rc = st_store_delete(s, from, &e2);
	if (rc == ST_ENOTFOUND)
		rc = ST_OK; /* no tags */
	else if (rc && rc != ST_ENOMEM)
		rc = st__err(err, rc, "%s", e2.message);
	free(from);
	free(to);
	return rc;
}

/* ---- the marker ---- */

typedef st__rename_marker marker;

static void marker_free(marker *m)
{
	free(m->key);
	free(m->from);
	free(m->to);
	for (int i = 0; i < 2; i++) {
		free(m->lock[i]);
		free(m->made[i]);
	}
	free(m->text);
	memset(m, 0, sizeof(*m));
}

/* A stack's object prefix (<stacks>/P/S.json: the key its lock and journal go by) (new). */
static char *side_key(st_backend *b, const char *qname)
{
	char *prefix = NULL;
	return st__diy_stack_prefix(b, qname, &prefix, NULL) == ST_OK ? prefix : NULL;
}

char *st__rename_marker_key(st_backend *b, const char *stack)
{
	char *prefix = side_key(b, stack), *k = prefix ? st_asprintf("%s%s", prefix,
								     RENAME_MARKER_SUFFIX)
						     : NULL;
	free(prefix);
	return k;
}

/* The full name of the stack whose marker is `mkey` (new), for a marker of an older statetool,
 * which holds the old name only and lies beside the new stack. */
static char *stack_of_marker(st_backend *b, const char *mkey)
{
	size_t pl = strlen(".pulumi/stacks/"), sl = strlen(".json" RENAME_MARKER_SUFFIX),
	       kl = strlen(mkey);
	char *names, *q = NULL;

	if (kl <= pl + sl || strncmp(mkey, ".pulumi/stacks/", pl))
		return NULL;
	if (!(names = st_strndup(mkey + pl, kl - pl - sl)))
		return NULL;
	if (st_backend_resolve(b, names, &q, NULL, NULL) != ST_OK)
		q = NULL;
	free(names);
	return q;
}

/* One side's lock as the marker names it ("from_lock", "to_lock"). */
static int marker_lock(st_backend *b, json_t *doc, int i, marker *m)
{
	json_t *l = json_object_get(doc, i ? "to_lock" : "from_lock");
	const char *lk = st_json_str(l, "lock"), *h = st_json_str(l, "lock_hash"),
		   *made = st_json_str(l, "lock_made");
	char *side;
	int fits;

	if (!l)
		return 1;
	if (!lk || !st_store_key_valid(lk) || !h || strlen(h) != 64 ||
	    strspn(h, "0123456789abcdef") != 64 || (json_object_get(l, "lock_made") && !made))
		return 0;
	side = side_key(b, i ? m->to : m->from);
	fits = side && st__pairlock_fits(side, lk, made);
	free(side);
	if (!fits)
		return 0; /* naming any other object would have it removed */
	m->lock[i] = st_strdup(lk);
	m->made[i] = made ? st_strdup(made) : NULL;
	snprintf(m->hash[i], sizeof(m->hash[i]), "%s", h);
	return 1;
}

int st__rename_marker_read(st_backend *b, const char *mkey, marker *m, st_error *err)
{
	st_store *s = st_backend_store(b);
	json_t *doc = NULL;
	char *here = NULL;
	int rc, ok;

	memset(m, 0, sizeof(*m));
	if (!(m->key = st_strdup(mkey)))
		return st__err(err, ST_ENOMEM, "out of memory");
	rc = st_store_read(s, mkey, 1 << 16, &m->text, &m->len, NULL, err);
	if (rc == ST_ENOTFOUND && err)
		st_error_clear(err);
	if (rc)
		return rc;
	if (m->len && m->text[0] == '{') {
		ok = st_json_parse(&doc, m->text, m->len, NULL, NULL, NULL, NULL, NULL) == ST_OK &&
		     st_json_str(doc, "from") && st_json_str(doc, "to") &&
		     (m->from = st_strdup(st_json_str(doc, "from"))) &&
		     (m->to = st_strdup(st_json_str(doc, "to"))) && marker_lock(b, doc, 0, m) &&
		     marker_lock(b, doc, 1, m);
	} else { /* an older statetool's: the old stack's name, beside the new one */
		ok = m->len && m->len < 512 && !memchr(m->text, '\n', m->len) &&
		     !memchr(m->text, '\0', m->len) &&
		     (m->from = st_strndup(m->text, m->len)) &&
		     (m->to = here = stack_of_marker(b, mkey));
		here = NULL;
	}
	json_decref(doc);
	free(here);
	if (!ok) {
		char *w = st__store_where(s, mkey);
		rc = st__err(err, ST_EFORMAT,
			     "%s is no stack rename marker statetool can read: if no rename of the "
			     "stack is pending, remove it",
			     w ? w : mkey);
		free(w);
	}
	return rc;
}

void st__rename_marker_free(marker *m)
{
	marker_free(m);
}

/* Both stacks' markers, identical: {"operation", "version", "from", "to", "from_lock",
 * "to_lock"}, each lock as a journal names it (pairlock.c): the locks this process holds. */
static int write_markers(st_backend *b, const sref *o, const sref *n, marker *m, st_error *err)
{
	st_store *s = st_backend_store(b);
	json_t *doc = json_pack("{s:s, s:i, s:s, s:s}", "operation", "stack rename", "version", 1,
				"from", o->qname, "to", n->qname);
	int rc = ST_OK;

	for (int i = 0; doc && i < 2; i++) {
		char *side = side_key(b, i ? n->qname : o->qname), *lock = NULL, *made = NULL;
		char hash[65];
		json_t *l = NULL;
		if (side)
			st__pairlock_mine(s, side, &lock, &made, hash);
		if (lock && (l = json_pack("{s:s, s:s}", "lock", lock, "lock_hash", hash)) &&
		    made)
			json_object_set_new(l, "lock_made", json_string(made));
		if (l)
			json_object_set_new(doc, i ? "to_lock" : "from_lock", l);
		free(side);
		free(lock);
		free(made);
	}
	m->from = st_strdup(o->qname);
	m->to = st_strdup(n->qname);
	m->text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	m->key = st__rename_marker_key(b, o->qname);
	char *nkey = st__rename_marker_key(b, n->qname);
	if (!m->from || !m->to || !m->text || !m->key || !nkey)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	else if ((rc = st_store_write(s, m->key, m->text, strlen(m->text), NULL, err)) == ST_OK)
		rc = st_store_write(s, nkey, m->text, strlen(m->text), NULL, err);
	m->len = m->text ? strlen(m->text) : 0;
	free(nkey);
	return rc;
}

/* The markers of the rename `m` beside both stacks, each while it still holds m's bytes. */
static int remove_markers(st_backend *b, const marker *m, st_error *err)
{
	st_store *s = st_backend_store(b);
	int rc = ST_OK;

	for (int i = 1; rc == ST_OK && i >= 0; i--) {
		char *k = st__rename_marker_key(b, i ? m->to : m->from), *data = NULL;
		size_t len = 0;
		if (!k)
			return st__err(err, ST_ENOMEM, "out of memory");
		if (st_store_read(s, k, 1 << 16, &data, &len, NULL, NULL) == ST_OK &&
		    len == m->len && !memcmp(data, m->text, len)) {
			rc = st_store_delete(s, k, err);
			if (rc == ST_ENOTFOUND) {
				rc = ST_OK;
				if (err)
					st_error_clear(err);
			}
		}
		free(data);
		free(k);
	}
	return rc;
}

/* ---- the steps ---- */

/* Is the object of stack `to` what the rename makes of the old stack? *count: its resources. */
static int is_our_write(st_backend *b, const char *to, st_state *renamed, size_t *count)
{
	st_state *t = NULL;
	char *a = NULL, *c = NULL;
	size_t al = 0, cl = 0;
	int loaded = st_backend_load(b, to, NULL, &t, NULL) == ST_OK;
	int same = loaded && st_state_dump(t, st_state_style(renamed), &a, &al, NULL) == ST_OK &&
		   st_state_dump(renamed, NULL, &c, &cl, NULL) == ST_OK && al == cl &&
		   !memcmp(a, c, al);
	*count = loaded ? json_array_size(st_state_resources(t, 0)) : 0;
	st_state_free(t);
	free(a);
	free(c);
	return same;
}

/* The old object kept as its .bak, then deleted (Pulumi's backupTarget(file, false)). */
static int retire_old(st_backend *b, const char *from, st_error *err)
{
	st_store *s = st_backend_store(b);
	char *key = NULL, *bak = NULL;
	int exists = 0, rc = st_backend_stack_key(b, from, &key, &exists, err);
	if (rc == ST_OK && exists) {
		if (!(bak = st_asprintf("%s.bak", key)))
			rc = st__err(err, ST_ENOMEM, "out of memory");
		else if ((rc = st_store_copy(s, key, bak, err)) == ST_OK)
			rc = st_store_delete(s, key, err);
	}
	free(key);
	free(bak);
	return rc;
}

/* Once the new object is in place: the history, backups and tags move, the old object goes,
 * then the markers. */
static int finish(st_backend *b, const sref *o, const sref *n, const marker *m, st_error *err)
{
	st_store *store = st_backend_store(b);
	int rc;

	if ((rc = move_named(store, "history", '-', o, n, err)) != ST_OK ||
	    (rc = move_named(store, "backups", '.', o, n, err)) != ST_OK ||
	    (rc = move_tags(store, o, n, err)) != ST_OK)
		return rc;
	st__crash_point("stack-rename", 2);
	if ((rc = retire_old(b, o->qname, err)) != ST_OK)
		return rc;
	st__crash_point("stack-rename", 3);
	return remove_markers(b, m, err);
}

/* The old stack's state loaded and renamed as the rename makes it (*out new). */
static int load_renamed(st_backend *b, const sref *o, const sref *n, st_state **out,
			st_error *err)
{
	st_state *s = NULL;
	json_t *res;
	char *urn_project = NULL;
	st_urn u;
	int rc = st_backend_load(b, o->qname, NULL, &s, err);

	*out = NULL;
	if (rc)
		return rc;
	/* legacy references carry no project; the URNs do: the rewrite is scoped to it */
	res = st_state_resources(s, 0);
	if (!o->project && json_array_size(res) &&
	    st_urn_parse(st_json_str(json_array_get(res, 0), "urn"), &u) == ST_OK)
		urn_project = st_strndup(u.project, u.project_len);
	rc = st_state_rename_stack(s, n->stack, n->project, o->stack,
				   o->project ? o->project : urn_project, NULL, err);
	free(urn_project);
	if (rc)
		st_state_free(s);
	else
		*out = s;
	return rc;
}

/* Everything after the old state is loaded and renamed, under its lock: the new stack locked
 * too (a Pulumi lock: Pulumi does not update the half-made stack), the markers (naming both
 * locks) written beside both stacks before the new object, then finish(). */
static int rename_locked(st_backend *b, const sref *o, const sref *n, st_state *s, st_error *err)
{
	marker m = {0};
	st_lock *nl = NULL;
	char *q = NULL;
	int exists = 0, rc = ST_OK;

	/* taken: Pulumi's refusal, before the lock (someone's update may hold it); free: locked,
	 * then looked at again (a stack made meanwhile) */
	for (int pass = 0; rc == ST_OK && pass < 2; pass++) {
		if ((rc = st_backend_resolve(b, n->qname, &q, &exists, err)) == ST_OK && exists)
			rc = st__err(err, ST_EEXIST, "a stack named %s already exists", n->qname);
		free(q);
		q = NULL;
		if (rc == ST_OK && pass == 0)
			rc = st_lock_stack(&nl, b, n->qname, err);
	}
	if (rc == ST_OK && (rc = write_markers(b, o, n, &m, err)) == ST_OK &&
	    (rc = st_backend_save(b, n->qname, s, NULL, err)) == ST_OK) {
		st__crash_point("stack-rename", 1);
		rc = finish(b, o, n, &m, err);
	} else if (m.text) {
		/* The save may fail after the new object is written (its generation, the old
		 * variant's removal): then the markers stay, and the next command on either stack
		 * settles the rename. Only with no new object is there nothing to finish. */
		int made = 0;
		if (st_backend_resolve(b, n->qname, &q, &made, NULL) == ST_OK && !made)
			remove_markers(b, &m, NULL);
		free(q);
		q = NULL;
	}
	if (nl) {
		int r2 = st_lock_release(nl, rc ? NULL : err);
		if (rc == ST_OK)
			rc = r2;
	}
	marker_free(&m);
	return rc;
}

/* The new reference: NAME or organization/NAME (the old project, as Pulumi reads both),
 * PROJECT/NAME or organization/PROJECT/NAME. */
static int new_ref(st_backend *b, const sref *o, const char *to, sref *n, st_error *err)
{
	int pm = st_backend_project_mode(b), rc;
	if (!strncmp(to, "organization/", 13) && !strchr(to + 13, '/'))
		to += 13; /* Pulumi's ORGANIZATION/NAME: NAME in the same project */
	if ((rc = split_qname(to, n)) != ST_OK)
		return st__err(err, rc, "out of memory");
	const char *s1 = strchr(to, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	if (s2 && (strncmp(to, "organization/", 13) || strchr(s2 + 1, '/')))
		return st__err(err, ST_EINVAL,
			       "invalid stack name '%s': a DIY backend's organization is always "
			       "'organization'",
			       to);
	if (!st_stack_name_valid(n->stack) || (n->project && !st_project_name_valid(n->project)))
		return st__err(err, ST_EINVAL,
			       "invalid stack name '%s': names may only contain alphanumerics, "
			       "hyphens, underscores and periods (at most 100)",
			       to);
	if (!pm && n->project)
		return st__err(err, ST_EINVAL,
			       "'%s' names a project, but the backend is in the legacy layout, which "
			       "has none (statetool upgrade moves it to the project layout)",
			       to);
	if (pm && !n->project) {
		free(n->qname);
		n->project = st_strdup(o->project);
		n->qname = st_asprintf("organization/%s/%s", o->project, n->stack);
		if (!n->project || !n->qname)
			return st__err(err, ST_ENOMEM, "out of memory");
	}
	return ST_OK;
}

/* ---- an interrupted rename ---- */

/* "--backend URL --stack P/S NEW" for the command that completes the rename (new). */
static char *rename_args(st_backend *b, const sref *o, const sref *n)
{
	char *url = st__shell_word(st_backend_url(b)), *out;
	int same = !n->project || (o->project && !strcmp(o->project, n->project));
	out = url ? st_asprintf("--backend %s --stack %s%s%s %s%s%s", url,
				o->project ? o->project : "", o->project ? "/" : "", o->stack,
				same ? "" : n->project, same ? "" : "/", n->stack)
		  : NULL;
	free(url);
	return out;
}

/* A stack's object's time of last write, as "YYYY-MM-DDTHH:MM:SSZ" ("?" when unknown). */
static void written_at(st_backend *b, const char *qname, char out[32])
{
	char *key = NULL;
	int exists = 0;
	st_store_info info;
	time_t t;
	struct tm tm;

	snprintf(out, 32, "?");
	if (st_backend_stack_key(b, qname, &key, &exists, NULL) == ST_OK && exists &&
	    st_store_stat(st_backend_store(b), key, &info, NULL) == ST_OK) {
		t = (time_t)(info.mtime_ns / 1000000000);
		if (gmtime_r(&t, &tm))
			strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
	}
	free(key);
}

/* The new stack holds something else than the rename made: which holds what, and the two
 * ways on. */
static int diverged(st_backend *b, const sref *o, const sref *n, size_t ocount, size_t ncount,
		    st_error *err)
{
	char ot[32], nt[32], *args = rename_args(b, o, n);
	int rc;

	written_at(b, o->qname, ot);
	written_at(b, n->qname, nt);
	rc = args ? st__err(err, ST_ECONFLICT,
			    "an interrupted stack rename of %s to %s is pending, but %s no longer "
			    "holds what the rename made of %s: one of them was written since (%s: %zu "
			    "resources, last written %s; %s: %zu resources, last written %s); nothing "
			    "was changed. To keep %s as it is, `statetool stack rename %s --keep new` "
			    "finishes the rename (%s's state kept as its .bak); to keep %s's state, "
			    "`statetool stack rename %s --keep old` writes it, renamed, over %s "
			    "(whose state is kept as its .bak and in its backups) and finishes the "
			    "rename",
			    o->qname, n->qname, n->qname, o->qname, o->qname, ocount, ot, n->qname,
			    ncount, nt, n->qname, args, o->qname, o->qname, args, n->qname)
		  : st__err(err, ST_ENOMEM, "out of memory");
	free(args);
	return rc;
}

/* Under both locks: ends the rename `m` (see the top). *done: it ended complete. */
static int settle(st_backend *b, const sref *o, const sref *n, const marker *m, unsigned keep,
		  st_changes *report, int *done, st_error *err)
{
	st_state *s = NULL;
	char *q = NULL;
	int oex = 0, nex = 0, rc = st_backend_resolve(b, o->qname, &q, &oex, err);
	size_t ncount = 0;

	free(q);
	q = NULL;
	if (rc == ST_OK)
		rc = st_backend_resolve(b, n->qname, &q, &nex, err);
	free(q);
	if (rc)
		return rc;
	if (!nex) { /* never written: nothing else had moved */
		if ((rc = remove_markers(b, m, err)) == ST_OK)
			st_changes_add(report,
				       oex ? "undid the interrupted stack rename of %s to %s, which "
					     "had not written the new stack yet (nothing else had "
					     "changed)"
					   : "removed the marker of an interrupted stack rename of %s "
					     "to %s: neither stack exists",
				       o->qname, n->qname);
		return rc;
	}
	if (oex && (rc = load_renamed(b, o, n, &s, err)) == ST_OK &&
	    !is_our_write(b, n->qname, s, &ncount)) {
		if (!keep)
			rc = diverged(b, o, n, json_array_size(st_state_resources(s, 0)), ncount,
				      err);
		else if (keep == ST_RENAME_KEEP_OLD)
			rc = st_backend_save(b, n->qname, s, NULL, err);
	} else {
		keep = 0; /* nothing to choose */
	}
	st_state_free(s);
	if (rc == ST_OK && (rc = oex ? finish(b, o, n, m, err) : remove_markers(b, m, err)) == ST_OK) {
		st_changes_add(report, "completed the interrupted stack rename of %s to %s%s", o->qname,
			       n->qname,
			       keep == ST_RENAME_KEEP_OLD   ? " (the old stack's state written over "
							      "the new one's, kept as its .bak)"
			       : keep == ST_RENAME_KEEP_NEW ? " (the new stack kept as it was, the "
							      "old one's state as its .bak)"
							    : "");
		*done = 1;
	}
	return rc;
}

int st__rename_recover(st_backend *b, const char *stack, const char *const pair[2],
		       unsigned keep, st_changes *report, int *done, st_error *err)
{
	st_store *s = st_backend_store(b);
	marker m = {0}, again = {0};
	sref o = {0}, n = {0};
	char *mk = st__rename_marker_key(b, stack), *side[2] = {NULL, NULL}, *tail = NULL;
	char *args = NULL;
	st_lock *lk[2] = {NULL, NULL};
	int rc, fin = 0, replaced[2] = {0, 0};

	if (done)
		*done = 0;
	if (!mk)
		return st__err(err, ST_ENOMEM, "out of memory");
	rc = st__rename_marker_read(b, mk, &m, err);
	if (rc == ST_ENOTFOUND) {
		rc = ST_OK;
		goto out;
	}
	if (rc)
		goto out;
	if (split_qname(m.from, &o) != ST_OK || split_qname(m.to, &n) != ST_OK) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if (pair && (strcmp(pair[0], m.from) || strcmp(pair[1], m.to)))
		keep = 0; /* --keep chooses for the rename it names only */
	side[0] = side_key(b, m.from);
	side[1] = side_key(b, m.to);
	args = rename_args(b, &o, &n);
	tail = args ? st_asprintf("\nan interrupted stack rename of %s to %s is pending: once the "
				  "lock is gone, `statetool stack rename %s` (or any statetool "
				  "command on either stack) completes it",
				  m.from, m.to, args)
		    : NULL;
	if (!side[0] || !side[1] || !tail) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	/* both checked before either is taken: a refusal changes nothing on the other stack */
	for (int i = 0; rc == ST_OK && i < 2; i++)
		rc = st__pairlock_check(s, side[i], m.lock[i], m.hash[i], tail, err);
	for (int i = 0; rc == ST_OK && i < 2; i++)
		rc = st__pairlock_take(&lk[i], s, side[i], m.lock[i], m.hash[i], tail, &replaced[i],
				       err);
	if (rc)
		goto out;
	/* the marker again, under the locks: a rename still at work has ended meanwhile */
	rc = st__rename_marker_read(b, mk, &again, err);
	if (rc == ST_ENOTFOUND || (rc == ST_OK && (again.len != m.len ||
						   memcmp(again.text, m.text, m.len)))) {
		rc = ST_OK;
		goto out;
	}
	if (rc == ST_OK && (rc = settle(b, &o, &n, &m, keep, report, &fin, err)) == ST_OK) {
		for (int i = 0; i < 2; i++)
			st__pairlock_remove(s, "stack rename", m.lock[i], m.hash[i], m.made[i],
					    replaced[i], report);
		if (done && fin && (!pair || (!strcmp(pair[0], m.from) && !strcmp(pair[1], m.to))))
			*done = 1;
	}
out:
	for (int i = 0; i < 2; i++) {
		int r2 = st_lock_release(lk[i], rc ? NULL : err);
		if (rc == ST_OK)
			rc = r2;
		free(side[i]);
	}
	marker_free(&m);
	marker_free(&again);
	sref_free(&o);
	sref_free(&n);
	free(args);
	free(tail);
	free(mk);
	return rc;
}

int st_backend_rename_stack(st_backend *b, const char *from, const char *to, char **new_qname,
			    st_error *err)
{
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(from);
	ST_ASSERT_ARG(to);
	return st_backend_rename_stack_ex(b, from, to, 0, new_qname, NULL, err);
}

/* The old name resolved, the new one made (o, n set). */
static int both_refs(st_backend *b, const char *from, const char *to, sref *o, sref *n,
		     int *exists, st_error *err)
{
	char *oq = NULL;
	int rc = st_backend_resolve(b, from, &oq, exists, err);

	if (rc == ST_OK && ((rc = split_qname(oq, o)) != ST_OK ||
			    (rc = new_ref(b, o, to, n, err)) != ST_OK)) {
		if (rc == ST_ENOMEM)
			st__err(err, rc, "out of memory");
	}
	free(oq);
	if (rc == ST_OK && !strcmp(o->qname, n->qname))
		rc = st__err(err, ST_EINVAL, "'%s' is the stack's name already", to);
	return rc;
}

int st_backend_rename_stack_ex(st_backend *b, const char *from, const char *to, unsigned flags,
			       char **new_qname, st_changes *report, st_error *err)
{
	sref o = {0}, n = {0};
	st_state *s = NULL;
	st_lock *lk = NULL;
	char *q = NULL;
	int exists = 0, done = 0, rc;

	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(from);
	ST_ASSERT_ARG(to);
	if (new_qname)
		*new_qname = NULL;
	if (flags & ~(ST_RENAME_KEEP_OLD | ST_RENAME_KEEP_NEW) ||
	    flags == (ST_RENAME_KEEP_OLD | ST_RENAME_KEEP_NEW))
		return st__err(err, ST_EINVAL, "bad flags %#x: keep the old or the new stack",
			       flags);
	if (!st_backend_store(b))
		return st__err(err, ST_EUNSUPPORTED, "backend '%s' is no DIY backend",
			       st_backend_url(b));
	if ((rc = both_refs(b, from, to, &o, &n, &exists, err)) != ST_OK)
		goto out;
	/* an interrupted rename of either stack first: this one's is completed */
	const char *pair[2] = {o.qname, n.qname};
	if ((rc = st__rename_recover(b, o.qname, pair, flags, report, &done, err)) != ST_OK ||
	    (!done && (rc = st__rename_recover(b, n.qname, pair, flags, report, &done, err)) != ST_OK) ||
	    (rc = st_backend_resolve(b, o.qname, &q, &exists, err)) != ST_OK)
		goto out;
	if (!exists && !done) {
		rc = st__err(err, ST_ENOTFOUND, "no stack named '%s' found", from);
		goto out;
	}
	if (exists && ((rc = st_lock_stack(&lk, b, o.qname, err)) != ST_OK ||
		       (rc = load_renamed(b, &o, &n, &s, err)) != ST_OK ||
		       (rc = rename_locked(b, &o, &n, s, err)) != ST_OK))
		goto out;
	if (new_qname && !(*new_qname = st_strdup(n.qname)))
		rc = st__err(err, ST_ENOMEM, "out of memory");
out:
	if (lk) {
		int r2 = st_lock_release(lk, rc ? NULL : err);
		if (rc == ST_OK)
			rc = r2;
	}
	st_state_free(s);
	sref_free(&o);
	sref_free(&n);
	free(q);
	return rc;
}
