/*
 * `statetool stack rename`: a stack of a DIY backend under a new name, within its project or
 * into another, as Pulumi's diyBackend.renameStack does it (pkg/backend/diy/backend.go): under
 * the old stack's lock, refused when the new name is taken ("a stack named ... already exists"),
 * the state's URNs rewritten (st_state_rename_stack), the new object written, the history files
 * moved (<stack>-<time>.* renamed as Pulumi renames them), and the old object kept as its .bak.
 * Beyond Pulumi, which leaves them behind, the tags file and the backups follow the stack.
 *
 * Order, for a kill at any point: a marker naming the old stack is written beside the new
 * object's place, then the new object, then the history, backups and tags move, then the old
 * object goes (copied to .bak, deleted), and the marker last. Until the old object is gone a
 * rerun finds the old stack and a new one that the marker names as this rename's and that
 * holds exactly what the rename makes of the old one: its own earlier write, not a stack in
 * the way, so it goes on from there. Killed after that, the rename is complete; only the
 * marker (and the stale lock) are left.
 */
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>

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

/* Is the object at `to` what the rename makes of the old stack (an earlier, interrupted run's
 * write)? */
static int is_our_write(st_backend *b, const char *to, st_state *renamed)
{
	st_state *t = NULL;
	char *a = NULL, *c = NULL;
	size_t al = 0, cl = 0;
	int same = st_backend_load(b, to, NULL, &t, NULL) == ST_OK &&
		   st_state_dump(t, st_state_style(renamed), &a, &al, NULL) == ST_OK &&
		   st_state_dump(renamed, NULL, &c, &cl, NULL) == ST_OK && al == cl &&
		   !memcmp(a, c, al);
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

/* Does the marker name the old stack (an interrupted rename of it wrote the new one)? */
static int marker_says(st_store *s, const char *key, const char *old_qname)
{
	char *data = NULL;
	size_t len = 0;
	int yes = st_store_read(s, key, 4096, &data, &len, NULL, NULL) == ST_OK &&
		  len == strlen(old_qname) && !memcmp(data, old_qname, len);
	free(data);
	return yes;
}

/* Everything after the old state is loaded and renamed, under its lock. A marker beside the
 * new stack's object (<new>.json.statetool-rename, holding the old stack's name) is written
 * before the new object and removed last: a new stack is taken for this rename's own earlier
 * write only when the marker says so and it holds exactly the renamed state. */
static int rename_locked(st_backend *b, const sref *o, const sref *n, st_state *s, st_error *err)
{
	st_store *store = st_backend_store(b);
	char *q = NULL, *prefix = NULL, *marker = NULL;
	int exists = 0, rc = st_backend_resolve(b, n->qname, &q, &exists, err);

	free(q);
	if (rc)
		return rc;
	if ((rc = st__diy_stack_prefix(b, n->qname, &prefix, err)) != ST_OK)
		return rc;
	if (!(marker = st_asprintf("%s.statetool-rename", prefix))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if (exists && !(marker_says(store, marker, o->qname) && is_our_write(b, n->qname, s))) {
		rc = st__err(err, ST_EEXIST, "a stack named %s already exists", n->qname);
		goto out;
	}
	if (!exists && ((rc = st_store_write(store, marker, o->qname, strlen(o->qname), NULL,
					     err)) != ST_OK ||
			(rc = st_backend_save(b, n->qname, s, NULL, err)) != ST_OK))
		goto out;
	st__crash_point("stack-rename", 1);
	if ((rc = move_named(store, "history", '-', o, n, err)) != ST_OK ||
	    (rc = move_named(store, "backups", '.', o, n, err)) != ST_OK ||
	    (rc = move_tags(store, o, n, err)) != ST_OK)
		goto out;
	st__crash_point("stack-rename", 2);
	if ((rc = retire_old(b, o->qname, err)) == ST_OK) {
		st__crash_point("stack-rename", 3);
		rc = st_store_delete(store, marker, err);
	}
out:
	free(prefix);
	free(marker);
	return rc;
}

/* The new reference: NAME (the old project), PROJECT/NAME or organization/PROJECT/NAME. */
static int new_ref(st_backend *b, const sref *o, const char *to, sref *n, st_error *err)
{
	int pm = st_backend_project_mode(b), rc;
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

int st_backend_rename_stack(st_backend *b, const char *from, const char *to, char **new_qname,
			    st_error *err)
{
	sref o = {0}, n = {0};
	char *oq = NULL;
	st_state *s = NULL;
	st_lock *lk = NULL;
	json_t *res;
	int exists = 0, rc;

	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(from);
	ST_ASSERT_ARG(to);
	if (new_qname)
		*new_qname = NULL;
	if (!st_backend_store(b))
		return st__err(err, ST_EUNSUPPORTED, "backend '%s' is no DIY backend",
			       st_backend_url(b));
	if ((rc = st_backend_resolve(b, from, &oq, &exists, err)) != ST_OK)
		return rc;
	if (!exists) {
		rc = st__err(err, ST_ENOTFOUND, "no stack named '%s' found", from);
		goto out;
	}
	if ((rc = split_qname(oq, &o)) != ST_OK || (rc = new_ref(b, &o, to, &n, err)) != ST_OK) {
		if (rc == ST_ENOMEM)
			st__err(err, rc, "out of memory");
		goto out;
	}
	if (!strcmp(o.qname, n.qname)) {
		rc = st__err(err, ST_EINVAL, "'%s' is the stack's name already", to);
		goto out;
	}
	if ((rc = st_lock_stack(&lk, b, o.qname, err)) != ST_OK ||
	    (rc = st_backend_load(b, o.qname, NULL, &s, err)) != ST_OK)
		goto out;
	/* legacy references carry no project; the URNs do: the rewrite is scoped to it */
	res = st_state_resources(s, 0);
	char *urn_project = NULL;
	st_urn u;
	if (!o.project && json_array_size(res) &&
	    st_urn_parse(st_json_str(json_array_get(res, 0), "urn"), &u) == ST_OK)
		urn_project = st_strndup(u.project, u.project_len);
	rc = st_state_rename_stack(s, n.stack, n.project, o.stack,
				   o.project ? o.project : urn_project, NULL, err);
	free(urn_project);
	if (rc == ST_OK)
		rc = rename_locked(b, &o, &n, s, err);
	if (rc == ST_OK && new_qname && !(*new_qname = st_strdup(n.qname)))
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
	free(oq);
	return rc;
}
