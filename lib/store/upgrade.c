/*
 * `statetool upgrade`: a legacy DIY backend (stacks at .pulumi/stacks/<stack>.json) to the
 * project layout (.pulumi/stacks/<project>/<stack>.json, .pulumi/meta.yaml "version: 1"), as
 * Pulumi's diyBackend.Upgrade does it (pkg/backend/diy/backend.go: guessProject from any
 * resource's URN, upgradeStack = renameStack to the same name in the project: the old object
 * kept as .bak, the history files moved), through store calls only, so on every store.
 *
 * Order, for a rerun after a kill at any point to finish the job: first every stack is read and
 * its project guessed (nothing written yet; a stack that cannot be read stops everything, as in
 * Pulumi), and every legacy lock folder is checked; then each stack in turn, under its legacy
 * lock: its history, backups and tags move (copy, delete), its object is copied to the new key,
 * kept as <old>.bak, and the old object deleted last; its other variants (.json beside
 * .json.gz) are kept as their .bak. Until that delete the stack is still a legacy stack, so a
 * rerun picks it up again (a target holding the very same bytes is our own earlier copy, not a
 * stack in the way). meta.yaml comes last: before it the backend is legacy to Pulumi, with the
 * moved stacks out of its sight but intact; a rerun writes it.
 */
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>

#define STACKS ".pulumi/stacks/"
#define META_KEY ".pulumi/meta.yaml"

typedef struct legacy_stack {
	char *name;
	char *key;      /* the object Pulumi reads (newest variant) */
	char **others;  /* other variants (.json beside .json.gz), kept as .bak */
	size_t nothers;
	long long mtime;
	char *project;  /* guessed or given; NULL: skipped */
	char *new_key;
} legacy_stack;

typedef struct upgrade_ctx {
	st_backend *b;
	st_store *s;
	const st_upgrade_opts *o;
	legacy_stack *st;
	size_t n, cap;
} upgrade_ctx;

static void event(upgrade_ctx *u, const char *kind, const legacy_stack *ls, const char *from,
		  const char *to, const char *reason)
{
	st_upgrade_event ev = {kind, ls ? ls->name : NULL, ls ? ls->project : NULL, from, to,
			       reason};
	if (u->o && u->o->event)
		u->o->event(u->o->ctx, &ev);
}

/* The stack name of a file directly in .pulumi/stacks/ (new), or NULL. */
static char *legacy_name(const char *file)
{
	static const char *const sfx[] = {".json", ".json.gz", ".json.zst"};
	size_t n = strlen(file);
	for (size_t i = 0; i < 3; i++) {
		size_t l = strlen(sfx[i]);
		if (n > l && !strcmp(file + n - l, sfx[i])) {
			char *name = st_strndup(file, n - l);
			if (name && st_stack_name_valid(name))
				return name;
			free(name);
			return NULL;
		}
	}
	return NULL;
}

static legacy_stack *find_stack(upgrade_ctx *u, const char *name)
{
	for (size_t i = 0; i < u->n; i++)
		if (!strcmp(u->st[i].name, name))
			return &u->st[i];
	return NULL;
}

static int add_other(legacy_stack *ls, char *key)
{
	char **o = realloc(ls->others, (ls->nothers + 1) * sizeof(*o));
	if (!o) {
		free(key);
		return ST_ENOMEM;
	}
	ls->others = o;
	o[ls->nothers++] = key;
	return ST_OK;
}

/* One listed file: a new stack, or another variant of one (the newest is the stack's object,
 * later in key order on equal times, as Pulumi's stackPath chooses). */
static int add_file(upgrade_ctx *u, char *name, const st_store_entry *e)
{
	legacy_stack *ls = find_stack(u, name);
	char *key = st_strdup(e->key);
	if (!key) {
		free(name);
		return ST_ENOMEM;
	}
	if (ls) {
		free(name);
		if (e->info.mtime_ns >= ls->mtime) {
			char *old = ls->key;
			ls->key = key;
			ls->mtime = e->info.mtime_ns;
			key = old;
		}
		return add_other(ls, key);
	}
	if (u->n == u->cap) {
		size_t nc = u->cap ? u->cap * 2 : 16;
		legacy_stack *na = realloc(u->st, nc * sizeof(*na));
		if (!na) {
			free(name);
			free(key);
			return ST_ENOMEM;
		}
		u->st = na;
		u->cap = nc;
	}
	ls = &u->st[u->n++];
	memset(ls, 0, sizeof(*ls));
	ls->name = name;
	ls->key = key;
	ls->mtime = e->info.mtime_ns;
	return ST_OK;
}

static int cmp_stack(const void *a, const void *b)
{
	return strcmp(((const legacy_stack *)a)->name, ((const legacy_stack *)b)->name);
}

/* The legacy stacks: stack files directly in .pulumi/stacks/, whatever meta.yaml says (as
 * Pulumi's newLegacyReferenceStore lists them). */
static int list_legacy(upgrade_ctx *u, st_error *err)
{
	st_store_entry *e = NULL;
	size_t n = 0;
	int rc = st_store_list(u->s, STACKS, ST_STORE_LIST_DIRS, &e, &n, err);

	for (size_t i = 0; rc == ST_OK && i < n; i++) {
		const char *file = e[i].key + strlen(STACKS);
		char *name;
		if (file[strlen(file) - 1] == '/' || !(name = legacy_name(file)))
			continue;
		if (add_file(u, name, &e[i]) != ST_OK)
			rc = st__err(err, ST_ENOMEM, "out of memory");
	}
	st_store_entries_free(e, n);
	if (rc == ST_OK && u->n)
		qsort(u->st, u->n, sizeof(*u->st), cmp_stack);
	return rc;
}

int st__upgrade_guess_project(st_store *s, const char *key, const char *name, char **project,
			      st_error *err)
{
	char *data = NULL, *plain = NULL, *where = st__store_where(s, key);
	size_t len = 0, plen = 0;
	json_t *doc = NULL, *cp, *latest, *res;
	const char *urn;
	st_urn p;
	st_error e2;
	int rc;

	*project = NULL;
	st_error_clear(&e2);
	rc = st_store_read(s, key, 0, &data, &len, NULL, &e2);
	if (rc == ST_OK)
		rc = st__decompress(data, len, 0, where ? where : key, &plain, &plen, NULL, &e2);
	if (rc == ST_OK)
		rc = st_json_parse(&doc, plain, plen, where ? where : key, NULL, NULL, NULL, &e2);
	free(plain);
	free(where);
	if (rc)
		return st__err(err, rc, "guess stack %s project: read checkpoint: %s", name,
			       e2.message);
	cp = json_object_get(doc, "checkpoint");
	latest = json_object_get(cp ? cp : doc, "latest");
	res = json_object_get(latest, "resources");
	urn = json_is_array(res) && json_array_size(res)
		      ? st_json_str(json_array_get(res, 0), "urn")
		      : NULL;
	if (urn && st_urn_parse(urn, &p) == ST_OK && p.project_len &&
	    !(*project = st_strndup(p.project, p.project_len)))
		rc = st__err(err, ST_ENOMEM, "out of memory");
	json_decref(doc);
	return rc;
}

/* The project of each stack, and where its object goes; a stack without one is skipped. */
static int plan(upgrade_ctx *u, st_upgrade_report *rep, st_error *err)
{
	for (size_t i = 0; i < u->n; i++) {
		legacy_stack *ls = &u->st[i];
		const char *file = ls->key + strlen(STACKS) + strlen(ls->name);
		char *project = NULL;
		int rc = st__upgrade_guess_project(u->s, ls->key, ls->name, &project, err);
		if (rc)
			return rc;
		if (!project && u->o && u->o->project_for) {
			const char *given = u->o->project_for(u->o->ctx, ls->name);
			if (given && *given && !st_project_name_valid(given))
				return st__err(err, ST_EINVAL,
					       "invalid project name '%s' for stack '%s'", given,
					       ls->name);
			if (given && *given && !(project = st_strdup(given)))
				return st__err(err, ST_ENOMEM, "out of memory");
		}
		if (!project) {
			event(u, "skip", ls, ls->key, NULL, "no project name found");
			rep->skipped++;
			continue;
		}
		ls->project = project;
		if (!(ls->new_key = st_asprintf(STACKS "%s/%s%s", project, ls->name, file)))
			return st__err(err, ST_ENOMEM, "out of memory");
	}
	return ST_OK;
}

static char *unlock_hint(upgrade_ctx *u, const char *stack)
{
	char *url = st__shell_word(st_backend_url(u->b)), *h;
	h = url ? st_asprintf("statetool unlock --backend %s --stack %s", url, stack) : NULL;
	free(url);
	return h;
}

/* Refuses while any legacy lock folder (.pulumi/locks/<stack>/) holds a lock: a legacy stack's,
 * or one an upgrade killed while it held it left beside a stack it had moved (one listing;
 * Pulumi's message for the first). */
static int check_locks(upgrade_ctx *u, st_error *err)
{
	st_store_entry *e = NULL;
	size_t n = 0;
	int rc = st_store_list(u->s, ".pulumi/locks/", 0, &e, &n, err);

	for (size_t i = 0; rc == ST_OK && i < n; i++) {
		const char *rel = e[i].key + strlen(".pulumi/locks/"), *sl = strchr(rel, '/');
		char *name, *dir, *hint;
		if (!sl || strchr(sl + 1, '/') || !(name = st_strndup(rel, (size_t)(sl - rel))))
			continue;
		if (strcmp(name, "organization") || find_stack(u, name)) {
			dir = st_asprintf(".pulumi/locks/%s/", name);
			hint = unlock_hint(u, name);
			rc = dir && hint ? st__locks_check(u->s, dir, hint, err)
					 : st__err(err, ST_ENOMEM, "out of memory");
			free(dir);
			free(hint);
		}
		free(name);
	}
	st_store_entries_free(e, n);
	return rc;
}

/* A copy then a delete; the source gone already is a rerun's (ST_OK). */
static int move_key(upgrade_ctx *u, const char *from, const char *to, st_error *err)
{
	st_error e2;
	int rc;
	st_error_clear(&e2);
	rc = st_store_copy(u->s, from, to, &e2);
	if (rc == ST_ENOTFOUND)
		return ST_OK;
	if (rc == ST_OK)
		rc = st_store_delete(u->s, from, &e2);
	if (rc == ST_ENOTFOUND)
		rc = ST_OK;
	return rc ? st__err(err, rc, "%s", e2.message) : ST_OK;
}

/* The objects directly in `dir` (legacy history or backups of the stack) to `newdir`; for the
 * history only Pulumi's <stack>-<time>.* files (the others are left, as Pulumi leaves them). */
static int move_dir(upgrade_ctx *u, legacy_stack *ls, const char *kind, int history,
		    st_error *err)
{
	char *dir = st_asprintf(".pulumi/%s/%s/", kind, ls->name);
	char *newdir = st_asprintf(".pulumi/%s/%s/%s/", kind, ls->project, ls->name);
	st_store_entry *e = NULL;
	size_t n = 0, nl = strlen(ls->name);
	int rc = dir && newdir ? st_store_list(u->s, dir, ST_STORE_LIST_DIRS, &e, &n, err)
			       : st__err(err, ST_ENOMEM, "out of memory");

	for (size_t i = 0; rc == ST_OK && i < n; i++) {
		const char *file = e[i].key + strlen(dir), *dash = strrchr(file, '-');
		char *to;
		if (file[strlen(file) - 1] == '/')
			continue;
		if (history && (!dash || (size_t)(dash - file) != nl || strncmp(file, ls->name, nl)))
			continue;
		if (!(to = st_asprintf("%s%s", newdir, file))) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			break;
		}
		event(u, "move", ls, e[i].key, to, NULL);
		if (!u->o || !u->o->dry_run)
			rc = move_key(u, e[i].key, to, err);
		free(to);
	}
	st_store_entries_free(e, n);
	free(dir);
	free(newdir);
	return rc;
}

/* Does `key` hold the same bytes as the stack's object (our own copy from an interrupted run)? */
static int same_bytes(upgrade_ctx *u, const char *a, const char *b)
{
	char *da = NULL, *db = NULL;
	size_t la = 0, lb = 0;
	int same = st_store_read(u->s, a, 0, &da, &la, NULL, NULL) == ST_OK &&
		   st_store_read(u->s, b, 0, &db, &lb, NULL, NULL) == ST_OK && la == lb &&
		   !memcmp(da, db, la);
	free(da);
	free(db);
	return same;
}

/* Is another stack in the way at the stack's new place? Then it is skipped, as Pulumi's
 * renameStack refuses it ("a stack named ... already exists"). */
static int target_taken(upgrade_ctx *u, legacy_stack *ls, st_error *err)
{
	char *prefix = st_asprintf(STACKS "%s/%s.json", ls->project, ls->name);
	st_store_entry *e = NULL;
	size_t n = 0;
	int taken = 0, rc;

	if (!prefix)
		return st__err(err, ST_ENOMEM, "out of memory");
	rc = st_store_list(u->s, prefix, 0, &e, &n, err);
	for (size_t i = 0; rc == ST_OK && i < n; i++) {
		const char *rest = e[i].key + strlen(prefix);
		if ((!*rest || !strcmp(rest, ".gz") || !strcmp(rest, ".zst")) &&
		    !(strcmp(e[i].key, ls->new_key) == 0 && same_bytes(u, ls->key, e[i].key)))
			taken = 1;
	}
	st_store_entries_free(e, n);
	free(prefix);
	return rc ? rc : taken;
}

/* Keeps `key` as <key>.bak and deletes it. */
static int retire(upgrade_ctx *u, const char *key, st_error *err)
{
	char *bak = st_asprintf("%s.bak", key);
	int rc = bak ? move_key(u, key, bak, err) : st__err(err, ST_ENOMEM, "out of memory");
	free(bak);
	return rc;
}

/* One stack to its project, under its legacy lock. */
static int move_stack(upgrade_ctx *u, legacy_stack *ls, st_upgrade_report *rep, st_error *err)
{
	int dry = u->o && u->o->dry_run, rc;
	char *tags = NULL, *newtags = NULL, *dir = NULL, *hint = NULL, *bak = NULL;
	st_lock *lk = NULL;

	if ((rc = target_taken(u, ls, err)) != 0) {
		char *why = rc == 1 ? st_asprintf("rename to organization/%s/%s: a stack named "
						  "organization/%s/%s already exists",
						  ls->project, ls->name, ls->project, ls->name)
				    : NULL;
		if (rc != 1)
			return rc;
		event(u, "skip", ls, ls->key, ls->new_key, why ? why : "a stack is in the way");
		free(why);
		rep->skipped++;
		return ST_OK;
	}
	dir = st_asprintf(".pulumi/locks/%s/", ls->name);
	hint = unlock_hint(u, ls->name);
	tags = st_asprintf(STACKS "%s.pulumi-tags", ls->name);
	newtags = st_asprintf(STACKS "%s/%s.pulumi-tags", ls->project, ls->name);
	bak = st_asprintf("%s.bak", ls->key);
	if (!dir || !hint || !tags || !newtags || !bak) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if (!dry && (rc = st__lock_store(&lk, u->s, dir, hint, err)) != ST_OK)
		goto out;
	if ((rc = move_dir(u, ls, "history", 1, err)) != ST_OK ||
	    (rc = move_dir(u, ls, "backups", 0, err)) != ST_OK)
		goto out;
	if (st_store_stat(u->s, tags, NULL, NULL) == ST_OK) {
		event(u, "move", ls, tags, newtags, NULL);
		if (!dry && (rc = move_key(u, tags, newtags, err)) != ST_OK)
			goto out;
	}
	st__crash_point("upgrade", 1);
	event(u, "stack", ls, ls->key, ls->new_key, NULL);
	rep->upgraded++;
	if (dry)
		goto out;
	if ((rc = st_store_copy(u->s, ls->key, ls->new_key, err)) != ST_OK)
		goto out;
	st__crash_point("upgrade", 2);
	for (size_t i = 0; i < ls->nothers && rc == ST_OK; i++)
		rc = retire(u, ls->others[i], err);
	if (rc == ST_OK && (rc = st_store_copy(u->s, ls->key, bak, err)) == ST_OK) {
		st__crash_point("upgrade", 3);
		rc = st_store_delete(u->s, ls->key, err);
	}
	if (rc == ST_OK)
		st__crash_point("upgrade", 4);
out:
	if (lk) {
		int rrc = st_lock_release(lk, rc ? NULL : err);
		if (rc == ST_OK)
			rc = rrc;
	}
	free(dir);
	free(hint);
	free(tags);
	free(newtags);
	free(bak);
	return rc;
}

/* meta.yaml "version: 1" (Pulumi's yaml.Marshal of {Version: 1}), unless it says so already. */
static int write_meta(upgrade_ctx *u, st_upgrade_report *rep, st_error *err)
{
	static const char meta[] = "version: 1\n";
	char *data = NULL;
	size_t len = 0;
	int rc;

	if (st_store_read(u->s, META_KEY, 1 << 20, &data, &len, NULL, NULL) == ST_OK &&
	    st_backend_project_mode(u->b) && !u->n) {
		free(data);
		return ST_OK; /* a project-mode backend with nothing legacy: nothing to do */
	}
	free(data);
	rep->meta = 1;
	event(u, "meta", NULL, NULL, META_KEY, NULL);
	if (u->o && u->o->dry_run)
		return ST_OK;
	st__crash_point("upgrade", 5);
	if ((rc = st_store_write(u->s, META_KEY, meta, strlen(meta), NULL, err)) != ST_OK)
		return rc;
	st__diy_set_project_mode(u->b, 1);
	return ST_OK;
}

int st_backend_upgrade(st_backend *b, const st_upgrade_opts *opts, st_upgrade_report *report,
		       st_error *err)
{
	upgrade_ctx u = {0};
	st_upgrade_report rep = {0};
	int rc;

	ST_ASSERT_ARG(b);
	if (report)
		memset(report, 0, sizeof(*report));
	if (opts && (rc = st__opts_version(opts->version, ST_UPGRADE_OPTS_VERSION,
					   "st_upgrade_opts", err)) != ST_OK)
		return rc;
	if (!(u.s = st_backend_store(b)))
		return st__err(err, ST_EUNSUPPORTED, "backend '%s' is no DIY backend",
			       st_backend_url(b));
	u.b = b;
	u.o = opts;
	if ((rc = list_legacy(&u, err)) != ST_OK)
		goto out;
	rep.stacks = u.n;
	for (size_t i = 0; i < u.n && rc == ST_OK; i++)
		if (st_journal_pending_key(u.s, u.st[i].key))
			rc = st__err(err, ST_EREFUSED,
				     "stack '%s' has an interrupted move (%s.statetool-journal): any "
				     "statetool command on the stack completes it first",
				     u.st[i].name, u.st[i].key);
	if (rc || (rc = plan(&u, &rep, err)) != ST_OK || (rc = check_locks(&u, err)) != ST_OK)
		goto out;
	for (size_t i = 0; i < u.n && rc == ST_OK; i++) {
		if (u.st[i].project)
			rc = move_stack(&u, &u.st[i], &rep, err);
		if (rc == ST_OK && opts && opts->progress)
			opts->progress(opts->ctx, i + 1, u.n);
	}
	if (rc == ST_OK)
		rc = write_meta(&u, &rep, err);
out:
	for (size_t i = 0; i < u.n; i++) {
		for (size_t j = 0; j < u.st[i].nothers; j++)
			free(u.st[i].others[j]);
		free(u.st[i].others);
		free(u.st[i].name);
		free(u.st[i].key);
		free(u.st[i].project);
		free(u.st[i].new_key);
	}
	free(u.st);
	if (report)
		*report = rep;
	return rc;
}
