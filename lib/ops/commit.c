/*
 * Committing a session: the integrity check (a valid state stays valid), the features and
 * version, the diff, and the write (st_edit_commit_save: the check runs on another thread
 * while the new file is written; st_edit_commit_pair: two sessions as one, written by the
 * caller's pair writer, a journal).
 */
#include "session.h"

#include <pthread.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void st_diff_clear(st_diff *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->count; i++) {
		free(d->items[i].urn);
		for (size_t k = 0; k < d->items[i].nfields; k++)
			free(d->items[i].fields[k]);
		free(d->items[i].fields);
	}
	free(d->items);
	memset(d, 0, sizeof(*d));
}

static size_t count_errors(st_state *s)
{
	st_problems p = {0};
	size_t n;
	st_integrity_check(s, &p, NULL);
	n = p.errors;
	st_problems_clear(&p);
	return n;
}

/* ---- commit: integrity and the diff ---- */

static int diff_push(st_diff *d, char kind, const char *urn, json_t *a, json_t *b)
{
	st_diff_entry *it;
	st_diff_entry *items = realloc(d->items, (d->count + 1) * sizeof(*items));
	if (!items)
		return -1;
	d->items = items;
	it = &d->items[d->count];
	memset(it, 0, sizeof(*it));
	it->kind = kind;
	it->urn = st_strdup(urn ? urn : "(no urn)");
	if (kind == '~') {
		const char *k;
		json_t *v;
		size_t n = json_object_size(a) + json_object_size(b);
		it->fields = calloc(n + 1, sizeof(char *));
		void *ib = json_object_iter(b);
		int aligned = json_object_size(a) == json_object_size(b); /* the same keys, in order */
		for (void *ia = json_object_iter(a); ia; ia = json_object_iter_next(a, ia)) {
			/* b is mostly a's copy: the member at the same place first */
			size_t kl = json_object_iter_key_len(ia);
			json_t *bv;
			k = json_object_iter_key(ia);
			v = json_object_iter_value(ia);
			if (ib && json_object_iter_key_len(ib) == kl &&
			    !memcmp(json_object_iter_key(ib), k, kl)) {
				bv = json_object_iter_value(ib);
			} else {
				bv = json_object_getn(b, k, kl);
				aligned = 0;
			}
			if (!bv || !st__json_equal(v, bv))
				it->fields[it->nfields++] = st_strdup(k);
			if (ib)
				ib = json_object_iter_next(b, ib);
		}
		if (!aligned) /* keys only b has */
			json_object_foreach(b, k, v)
				if (!json_object_get(a, k))
					it->fields[it->nfields++] = st_strdup(k);
		if (!it->nfields) {
			free(it->fields);
			free(it->urn);
			return 0; /* copied but not changed */
		}
	}
	d->count++;
	return 0;
}

/* Where the resources before and after the session differ: a common prefix and suffix of the
 * same objects (an edit of one resource leaves every other in place), and the sets of the
 * objects in the two middle parts. The session's arrays never hold one object twice (the
 * loader makes distinct objects; edits put fresh copies in), so an object in a middle part is
 * in the other array exactly when it is in the other middle part. */
typedef struct window {
	json_t *before, *after;
	size_t nb, na, p, q; /* sizes; common prefix and suffix */
	st__ptrset bm, am;
	int ok; /* the sets are complete (not out of memory) */
} window;

static void window_init(st_edit *e, window *w)
{
	memset(w, 0, sizeof(*w));
	w->before = e->base.res;
	w->after = st__edit_resources(e);
	w->nb = json_array_size(w->before);
	w->na = json_array_size(w->after);
	while (w->p < w->nb && w->p < w->na &&
	       json_array_get(w->before, w->p) == json_array_get(w->after, w->p))
		w->p++;
	while (w->q < w->nb - w->p && w->q < w->na - w->p &&
	       json_array_get(w->before, w->nb - 1 - w->q) ==
		       json_array_get(w->after, w->na - 1 - w->q))
		w->q++;
	w->ok = 1;
	for (size_t i = w->p; i < w->nb - w->q; i++)
		if (st__ptrset_add(&w->bm, json_array_get(w->before, i)) < 0)
			w->ok = 0;
	for (size_t i = w->p; i < w->na - w->q; i++)
		if (st__ptrset_add(&w->am, json_array_get(w->after, i)) < 0)
			w->ok = 0;
}

static void window_free(window *w)
{
	st__ptrset_free(&w->bm);
	st__ptrset_free(&w->am);
}

/* Was the object at index i after the session there before it (and the reverse)? */
static int was_before(const window *w, size_t i, const json_t *r)
{
	return i < w->p || i >= w->na - w->q || st__ptrset_has(&w->bm, r);
}

static int is_after(const window *w, size_t i, const json_t *r)
{
	return i < w->p || i >= w->nb - w->q || st__ptrset_has(&w->am, r);
}

static void compute_diff(st_edit *e, st_diff *d, const window *w)
{
	json_t *after = w->after, *r;
	st_strmap unmatched; /* URN -> list of after indexes not matched by identity */
	size_t i, lo = w->p, hi = w->na - w->q; /* after's middle part */
	char *used = calloc(hi - lo + 1, 1);

	memset(d, 0, sizeof(*d));
	st_strmap_init(&unmatched);
	/* After-resources that are new objects, chained by URN in file order (slot a = first
	 * index + 1, next[] = the following one + 1): one URN may have several copies. */
	size_t *next = calloc(hi - lo + 1, sizeof(*next));
	if (!used || !next) { /* out of memory: no matching by URN */
		free(used);
		free(next);
		used = NULL;
		next = NULL;
	}
	for (i = hi; i-- > lo;) {
		int created;
		r = json_array_get(after, i);
		const char *u = st_json_str(r, "urn");
		if (was_before(w, i, r) || !u || !next)
			continue;
		st_strmap_slot *sl = st_strmap_put(&unmatched, u, &created);
		if (!sl)
			continue;
		next[i - lo] = created ? 0 : sl->a;
		sl->a = i + 1;
	}
	for (i = w->p; i < w->nb - w->q; i++) {
		r = json_array_get(w->before, i);
		const char *u = st_json_str(r, "urn");
		if (is_after(w, i, r))
			continue;
		st_strmap_slot *sl = u && next ? st_strmap_get(&unmatched, u) : NULL;
		size_t k = sl ? sl->a : 0;
		while (k && used[k - 1 - lo])
			k = next[k - 1 - lo];
		if (k) {
			used[k - 1 - lo] = 1;
			diff_push(d, '~', u, r, json_array_get(after, k - 1));
		} else {
			diff_push(d, '-', u, NULL, NULL);
		}
	}
	free(next);
	for (i = lo; i < hi; i++) {
		r = json_array_get(after, i);
		if (was_before(w, i, r) || (used && used[i - lo]))
			continue;
		diff_push(d, '+', st_json_str(r, "urn"), NULL, NULL);
	}
	d->pending_before = json_array_size(e->base.ops);
	d->pending_after = json_array_size(st__edit_pending(e));
	if (d->pending_before == d->pending_after && e->base.ops) {
		for (i = 0; i < d->pending_after; i++)
			if (!st__json_equal(json_array_get(e->base.ops, i),
					json_array_get(st__edit_pending(e), i)))
				d->other_changed = 1;
	}
	if (e->other_changed)
		d->other_changed = 1;
	free(used);
	st_strmap_free(&unmatched);
}

static int untouched(const json_t *r, size_t i, void *ctx)
{
	return was_before(ctx, i, r);
}

/* The features the edited state uses and (d not NULL) the diff. A resource the session left
 * as it was is looked at only for the features the state may use (s->known_absent): for an
 * edit of one resource, every other is skipped. */
static void features_and_diff(st_edit *e, int used[8], st_diff *d)
{
	window w;
	window_init(e, &w);
	/* (out of memory: every resource looked at) */
	st__state_features_scan(e->s, used, w.ok ? untouched : NULL, &w);
	if (d)
		compute_diff(e, d, &w);
	window_free(&w);
}

/* The integrity errors of the state as it was when the session began, counted only when the
 * edited state has errors (a valid result needs no comparison): the original resources and
 * pending operations, which copy on write left untouched, in a copy of the deployment's
 * members as they were. */
static int errors_before(st_edit *e, size_t *n, st_error *err)
{
	const char *key = e->s->envelope == ST_ENVELOPE_EXPORT ? "deployment" : "latest";
	json_t *dep, *cont;
	st_state tmp;

	*n = 0;
	if (!e->base.dep)
		return ST_OK;
	dep = json_copy(e->base.members);
	cont = json_copy(e->s->container);
	if (!dep || !cont || json_object_set_new(cont, key, dep)) {
		json_decref(cont);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	json_object_del(dep, "resources");
	json_object_del(dep, "pending_operations");
	if ((e->base.res && json_object_set(dep, "resources", e->base.res)) ||
	    (e->base.ops && json_object_set(dep, "pending_operations", e->base.ops))) {
		json_decref(cont);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	tmp = *e->s;
	tmp.container = cont;
	*n = count_errors(&tmp);
	json_decref(cont);
	return ST_OK;
}

/*
 * What the shortcut needs (the proof: doc/DESIGN.md, "The check after an edit of a valid
 * state"). The objects in both arrays are aligned in order (else 0: the shortcut does not
 * apply); between two aligned objects lies a gap, numbered by the aligned objects before it,
 * holding the objects the session made (after) and removed (before). *made marks, per index
 * now, the objects the session made. A URN goes into t (the URNs whose referrers are looked
 * at) when the first removed object of that URN is a provider, or no object made with that
 * URN lies in the same gap or an earlier one. 1: done; 0: does not apply or out of memory.
 */
typedef struct changes {
	const window *w;
	char *made;
	size_t *gap_b; /* per index of before's middle part: the gap of a removed object */
	st_strmap first_made; /* URN -> a: 1 + the gap of its first object made */
} changes;

static int align(changes *ch)
{
	const window *w = ch->w;
	size_t j = w->p, end = w->nb - w->q, g = 0;
	int created;
	for (size_t i = w->p; i < w->na - w->q; i++) {
		json_t *r = json_array_get(w->after, i);
		const char *u;
		if (!st__ptrset_has(&w->bm, r)) {
			st_strmap_slot *sl;
			ch->made[i] = 1;
			if ((u = st_json_str(r, "urn")) &&
			    (!(sl = st_strmap_put(&ch->first_made, u, &created))))
				return 0;
			if (u && created)
				sl->a = g + 1;
			continue;
		}
		for (; j < end && json_array_get(w->before, j) != r; j++) {
			if (st__ptrset_has(&w->am, json_array_get(w->before, j)))
				return 0; /* kept, but later now: another order */
			ch->gap_b[j - w->p] = g;
		}
		if (j++ == end)
			return 0;
		g++;
	}
	for (; j < end; j++)
		ch->gap_b[j - w->p] = g;
	return 1;
}

static int changes_of(const window *w, char **made, st_strmap *t, st_prefilter *tf,
		      int *prov_removed)
{
	changes ch = {w, NULL, NULL, {0}};
	st_strmap seen;
	int ok, created;

	st_strmap_init(&ch.first_made);
	st_strmap_init(&seen);
	ok = w->ok && (ch.made = calloc(w->na + 1, 1)) &&
	     (ch.gap_b = calloc(w->nb - w->p - w->q + 1, sizeof(size_t))) && align(&ch);
	for (size_t j = w->p; ok && j < w->nb - w->q; j++) {
		json_t *r = json_array_get(w->before, j);
		const char *u = st_json_str(r, "urn");
		st_strmap_slot *m;
		if (!u || st__ptrset_has(&w->am, r))
			continue;
		*prov_removed |= st_type_is_provider(st_json_str(r, "type"));
		if (!st_strmap_put(&seen, u, &created)) {
			ok = 0;
			break;
		}
		if (!created)
			continue; /* the first removed object of that URN decides */
		m = st_strmap_get(&ch.first_made, u);
		if ((st_type_is_provider(st_json_str(r, "type")) || !m ||
		     m->a - 1 > ch.gap_b[j - w->p]) &&
		    !st_strmap_put_f(t, tf, u, &created))
			ok = 0;
	}
	st_strmap_free(&seen);
	st_strmap_free(&ch.first_made);
	free(ch.gap_b);
	*made = ch.made;
	return ok;
}

static unsigned long hint_used;

unsigned long st__edit_hint_used(void)
{
	return __atomic_load_n(&hint_used, __ATOMIC_RELAXED);
}

/* A move's hint (st__edit_hint_refs) instead of the scan for resources that refer to a
 * touched URN: when every touched URN is one the move took away and no provider was removed
 * (a provider's referrers are found by its provider reference, which the move's scan does
 * not look at), the resources that refer to them are those the move found, or objects made
 * (copy on write: a kept object is as the scan saw it). They are marked in `made`. 1: taken
 * (the scan is not needed), 0: the scan runs. */
static int take_hint(st_edit *e, const window *w, const st_strmap *t, int prov_removed,
		     char *made)
{
	if (!e->hint || prov_removed)
		return 0;
	for (size_t k = 0; k < t->cap; k++)
		if (t->slots[k].hash &&
		    !st_strmap_getn(&e->hint_urns, t->slots[k].key, t->slots[k].len))
			return 0;
	for (size_t i = 0; i < w->na; i++)
		if (st__ptrset_has(&e->hint_refs, json_array_get(w->after, i)))
			made[i] = 1;
	__atomic_add_fetch(&hint_used, 1, __ATOMIC_RELAXED);
	return 1;
}

/* The integrity check at commit. When the state was checked valid as the session began
 * (st__edit_base_valid: a move), errors can only be where the session changed something: see
 * st__integrity_check_touched and doc/DESIGN.md ("The check after an edit of a valid state").
 * Any error found, or a case the shortcut does not cover, and the full check runs, so the
 * report is the full check's. */
static int check_since_valid(st_edit *e, st_problems *p, st_error *err)
{
	const char *was = st_json_str(json_object_get(e->base.members, "secrets_providers"),
				      "type");
	json_t *dep = st_state_deployment(e->s);
	const char *now = st_json_str(json_object_get(dep, "secrets_providers"), "type");
	st_prefilter *tf = NULL;
	st_strmap t, none;
	char *made = NULL;
	window w;
	int whole = 1, prov = 0, rc = ST_OK;

	/* (a state that loses its secrets provider: the ciphertexts it keeps are not looked at) */
	if (!e->base_valid || !e->base.res || !st__edit_resources(e) ||
	    !st__integrity_touched_enabled() ||
	    (was && *was && !(now && *now)))
		return st_integrity_check(e->s, p, err);
	st_strmap_init(&t);
	st_strmap_init(&none);
	window_init(e, &w);
	if ((tf = calloc(1, sizeof(*tf))) && changes_of(&w, &made, &t, tf, &prov))
		rc = st__integrity_check_touched(e->s, made,
						 take_hint(e, &w, &t, prov, made) ? &none : &t, tf,
						 p, &whole, err);
	window_free(&w);
	st_strmap_free(&t);
	free(tf);
	free(made);
	if (rc != ST_OK || (!whole && !p->errors))
		return rc;
	st_problems_clear(p);
	return st_integrity_check(e->s, p, err);
}

/* What commit computes beside the integrity check, on a second thread: both only read. */
typedef struct commit_side {
	st_edit *e;
	st_diff *diff;
	int used[8];
} commit_side;

static void *commit_side_main(void *arg)
{
	commit_side *c = arg;
	features_and_diff(c->e, c->used, c->diff);
	return NULL;
}

/* What commit concludes from the integrity check of the edited state: ST_OK, or an error (the
 * caller rolls back on ST_EINTEGRITY). Adds the before/after line to the report when an
 * invalid state stays invalid. */
static int judge(st_edit *e, st_problems *p, st_problems *problems, st_error *err)
{
	size_t before = 0;
	int rc = ST_OK;

	if (p->errors > 0)
		rc = errors_before(e, &before, err);
	if (rc)
		return rc;
	if (before == 0 && p->errors > 0) {
		const char *first = "";
		for (size_t i = 0; i < p->count; i++)
			if (p->items[i].severity == ST_SEV_ERROR) {
				first = p->items[i].message;
				break;
			}
		st__err(err, ST_EINTEGRITY,
			"state edit produced an invalid snapshot (%zu integrity error%s; the state "
			"was valid before, so nothing is written): %s",
			p->errors, p->errors == 1 ? "" : "s", first);
		if (problems)
			for (size_t i = 0; i < p->count; i++)
				if (p->items[i].severity == ST_SEV_ERROR)
					st_problems_add(problems, ST_SEV_ERROR, p->items[i].rule,
							p->items[i].pointer, p->items[i].urn, "%s",
							p->items[i].message);
		return ST_EINTEGRITY;
	}
	if (before && p->errors)
		st_changes_add(e->report, "the state had %zu integrity error%s before and has %zu "
			       "after (run statetool validate)", before, before == 1 ? "" : "s",
			       p->errors);
	return ST_OK;
}

int st_edit_commit(st_edit *e, st_diff *diff, st_problems *problems, st_error *err)
{
	ST_ASSERT_ARG(e);
	st_problems p = {0};
	commit_side side = {e, NULL, {0}};
	st_diff tmp_diff;
	st__two th = {0};
	int rc, threaded = 0;

	memset(&tmp_diff, 0, sizeof(tmp_diff));
	if (diff) {
		memset(diff, 0, sizeof(*diff));
		side.diff = &tmp_diff;
	}
	if (st__two_worth(ST__T_COMMIT, json_array_size(st__edit_resources(e)), 0))
		threaded = st__two_start(&th, ST__T_COMMIT, commit_side_main, &side, 0);
	rc = check_since_valid(e, &p, err);
	st__two_join(&th);
	if (rc == ST_OK)
		rc = judge(e, &p, problems, err);
	st_problems_clear(&p);
	if (rc) {
		st_diff_clear(&tmp_diff);
		if (rc == ST_EINTEGRITY)
			st_edit_rollback(e);
		return rc;
	}
	if (threaded) {
		st__state_features_set(e->s, side.used);
		if (diff)
			*diff = tmp_diff;
	} else {
		features_and_diff(e, side.used, diff);
		st__state_features_set(e->s, side.used);
	}
	return ST_OK;
}

/* ---- commit and save at once ---- */

typedef struct commit_save {
	st_edit *e;
	st_state view; /* what the check reads: the state with its own copy of the container */
	st_problems p;
	st_error cerr; /* the integrity check's own error */
	int crc;
	st__two th;
	int threaded, judged, verdict;
	st_problems *problems;
	st_error *err;
	/* The check waits for a processor: until the writer's second thread is done (or the
	 * writer does not split), so that the two do not take turns on two processors with the
	 * writer's own two threads; the write's fsync leaves the processors to it. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int go;
} commit_save;

static void open_gate(void *arg)
{
	commit_save *c = arg;
	pthread_mutex_lock(&c->mu);
	c->go = 1;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

static void *check_main(void *arg)
{
	commit_save *c = arg;
	pthread_mutex_lock(&c->mu);
	while (!c->go)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
	c->crc = st__integrity_check_ex(&c->view, &c->p, ST__IC_SKIP_MAGIC | ST__IC_TWO_THREADS,
					&c->cerr);
	return NULL;
}

/* Waits for the check and judges it (once). */
static int verdict(void *arg)
{
	commit_save *c = arg;
	if (c->judged)
		return c->verdict;
	if (c->threaded) {
		open_gate(c);
		st__two_join(&c->th);
	} else
		c->crc = st__integrity_check_ex(&c->view, &c->p, ST__IC_SKIP_MAGIC | ST__IC_TWO_THREADS,
					&c->cerr);
	c->judged = 1;
	if (c->crc) {
		if (c->err)
			*c->err = c->cerr;
		c->verdict = c->crc;
	} else {
		c->verdict = judge(c->e, &c->p, c->problems, c->err);
	}
	st_problems_clear(&c->p);
	return c->verdict;
}

/* Where a commit's state goes: a file, or a stack of a backend. */
typedef struct commit_target {
	const char *path;
	const st_write_opts *opts;
	st_backend *backend;
	const char *stack;
} commit_target;

static int save_target(const commit_target *t, st_state *s, int (*proceed)(void *ctx),
		       void *proceed_ctx, const st__wcfg *cfg, st_error *err)
{
	if (t->backend) {
		st_backend_save_opts bo = ST_BACKEND_SAVE_OPTS_INIT;
		bo.no_backup = t->opts && !t->opts->backup;
		bo.proceed = proceed;
		bo.proceed_ctx = proceed_ctx;
		return st__backend_save(t->backend, t->stack, s, &bo, cfg, err);
	}
	return st__state_save_checked(s, t->path, t->opts, proceed, proceed_ctx, cfg, err);
}

static int commit_and_save(st_edit *e, const commit_target *t, int always, st_diff *diff,
			   st_problems *problems, int *written, st_error *err);

int st_edit_commit_save(st_edit *e, const char *path, const st_write_opts *opts, int always,
			st_diff *diff, st_problems *problems, int *written, st_error *err)
{
	ST_ASSERT_ARG(e);
	commit_target t = {path, opts, NULL, NULL};
	int rc = st__write_opts_check(opts, err);
	if (rc != ST_OK) {
		if (written)
			*written = 0;
		return rc;
	}
	return commit_and_save(e, &t, always, diff, problems, written, err);
}

int st_edit_commit_save_stack(st_edit *e, st_backend *b, const char *stack, int always,
			      st_diff *diff, st_problems *problems, int *written, st_error *err)
{
	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(stack);
	commit_target t = {NULL, NULL, b, stack};
	return commit_and_save(e, &t, always, diff, problems, written, err);
}

static int commit_and_save(st_edit *e, const commit_target *t, int always, st_diff *diff,
			   st_problems *problems, int *written, st_error *err)
{
	st_state *s = e->s;
	json_t *old_version = json_incref(json_object_get(s->root, "version"));
	json_t *old_features = json_incref(json_object_get(s->root, "features"));
	int old_v = s->version, changed, rc, used[8];
	json_t *dep, *old_manifest;
	commit_save c;
	st_diff d;

	if (written)
		*written = 0;
	memset(&c, 0, sizeof(c));
	memset(&d, 0, sizeof(d));
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cv, NULL);
	c.e = e;
	c.problems = problems;
	c.err = err;
	st_error_clear(&c.cerr);
	/* The check runs on another thread while the features are worked out and the file is
	 * written. The magic cookie is checked here first, as the check would, then fixed in a
	 * copy of the manifest (the session's view of the state as it began keeps the original);
	 * the check reads the state through its own copy of the container, so that setting the
	 * features (which decide the envelope's version) does not touch what it reads. */
	if (st__integrity_magic(s, &c.p) != ST_OK) {
		json_decref(old_version);
		json_decref(old_features);
		st_problems_clear(&c.p);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	dep = st_state_deployment(s);
	old_manifest = dep ? json_incref(json_object_get(dep, "manifest")) : NULL;
	c.view = *s;
	c.view.container = json_copy(s->container);
	if (json_is_object(old_manifest)) {
		json_t *m = json_copy(old_manifest);
		if (!m || json_object_set_new(dep, "manifest", m))
			c.view.container = (json_decref(c.view.container), NULL);
	}
	if (!c.view.container) {
		json_decref(old_version);
		json_decref(old_features);
		json_decref(old_manifest);
		st_problems_clear(&c.p);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	st_state_fix_magic(s);
	c.threaded = st__two_worth(ST__T_COMMIT_SAVE, json_array_size(st__edit_resources(e)),
				   t->opts ? t->opts->threads : 0) &&
		     st__two_start(&c.th, ST__T_COMMIT_SAVE, check_main, &c, 0);
	features_and_diff(e, used, &d);
	st__state_features_set(s, used);
	st__phase("commit: features and diff");
	changed = always || d.count || d.pending_before != d.pending_after || d.other_changed;
	if (changed) {
		/* the check starts once the writer leaves a processor free */
		st__wcfg wc = {0, c.threaded ? open_gate : NULL, &c, NULL, NULL};
		rc = save_target(t, s, verdict, &c, &wc, err);
		if (rc != ST_OK && !c.judged && verdict(&c) != ST_OK)
			rc = c.verdict; /* the write failed, and the check too: say the check */
		if (rc == ST_OK && written)
			*written = 1;
	} else {
		rc = verdict(&c);
	}
	if (!c.judged)
		verdict(&c);
	if (c.verdict != ST_OK) {
		/* as st_edit_commit: nothing written, the session rolled back */
		if (old_version)
			json_object_set(s->root, "version", old_version);
		if (old_features)
			st_obj_set_ordered(s->root, ST_K_ENVELOPE, "features",
					   json_incref(old_features));
		else
			json_object_del(s->root, "features");
		s->version = old_v;
		if (json_is_object(old_manifest))
			json_object_set(dep, "manifest", old_manifest);
		if (c.verdict == ST_EINTEGRITY)
			st_edit_rollback(e);
		st_diff_clear(&d);
		rc = c.verdict;
	} else if (diff) {
		*diff = d;
	} else {
		st_diff_clear(&d);
	}
	json_decref(old_version);
	json_decref(old_features);
	json_decref(old_manifest);
	json_decref(c.view.container);
	pthread_mutex_destroy(&c.mu);
	pthread_cond_destroy(&c.cv);
	return rc;
}

/* ---- two sessions as one ---- */

typedef struct pair_side {
	st_edit *e;
	st_diff *diff;
	st_problems problems;
	st_error err;
	int rc;
} pair_side;

static void *pair_commit_main(void *arg)
{
	pair_side *p = arg;
	p->rc = st_edit_commit(p->e, p->diff, &p->problems, &p->err);
	return NULL;
}

/* Both commits, side by side on two threads when the states are big. */
static void commit_both(pair_side *a, pair_side *b)
{
	st__two_run(ST__T_COMMIT_PAIR,
		    json_array_size(st__edit_resources(a->e)) +
			    json_array_size(st__edit_resources(b->e)),
		    0, pair_commit_main, a, pair_commit_main, b);
}

int st_edit_commit_pair(st_edit *a, st_edit *b, st_pair_write_fn write, void *ctx,
			st_diff *diff_a, st_diff *diff_b, st_problems *problems, st_error *err)
{
	pair_side sa, sb;
	pair_side *failed;
	int rc = ST_OK;

	ST_ASSERT_ARG(a);
	ST_ASSERT_ARG(b);
	if (a->s == b->s)
		return st__err(err, ST_EINVAL, "the two sessions are of the same state");
	memset(&sa, 0, sizeof(sa));
	memset(&sb, 0, sizeof(sb));
	sa.e = a;
	sa.diff = diff_a;
	sb.e = b;
	sb.diff = diff_b;
	st_error_clear(&sa.err);
	st_error_clear(&sb.err);
	commit_both(&sa, &sb);
	st__phase("commit: both checked, features and diff");
	failed = sa.rc ? &sa : sb.rc ? &sb : NULL;
	if (failed) {
		rc = failed->rc;
		st__err_copy(err, &failed->err);
		for (size_t i = 0; problems && i < failed->problems.count; i++)
			st_problems_add(problems, ST_SEV_ERROR, failed->problems.items[i].rule,
					failed->problems.items[i].pointer,
					failed->problems.items[i].urn, "%s",
					failed->problems.items[i].message);
	} else if (write) {
		if ((rc = st__edit_fix_magic(a, err)) == ST_OK &&
		    (rc = st__edit_fix_magic(b, err)) == ST_OK)
			rc = write(ctx, a->s, b->s, err);
	}
	if (rc != ST_OK) {
		st_edit_rollback(a);
		st_edit_rollback(b);
		if (diff_a)
			st_diff_clear(diff_a);
		if (diff_b)
			st_diff_clear(diff_b);
	}
	st_problems_clear(&sa.problems);
	st_problems_clear(&sb.problems);
	return rc;
}
