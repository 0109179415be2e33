/*
 * `statetool doctor`: every problem of a whole DIY backend in one report, each with the command
 * that fixes it. Read-only, through store calls only (so on every store): one listing of
 * .pulumi/, each stack loaded once (integrity, place, pending operations, physical IDs), the
 * locks described as a lock error describes them, the leftovers found in the listing, and the
 * index (when there is one) compared with the listing as `index update` compares them.
 */
#include "store/store_impl.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct doctor {
	st_backend *b;
	st_store *s;
	st_doctor_report *r;
	char *url;       /* the backend's URL as one shell word */
	char *unreadable; /* per listed stack: it could not be loaded */
	st_strmap ids;   /* "type\nid\nprovider" (a key of `owners`) -> its index there */
	struct owner {
		char *key; /* "type\nid\nprovider": the provider's hash (prints_of) */
		char *who; /* "stack\nurn" of the first holder */
	} *owners;
	size_t nowners, capowners;
	st_strmap renaming; /* the old stacks of pending renames, and those renames' own locks */
	long long max_age;  /* of a lock, seconds (< 0: never stale by age) */
} doctor;

static int add(doctor *d, const char *kind, const char *stack, const char *where,
	       const char *fix, const char *fmt, ...) ST_ATTRS((format(printf, 6, 7)));

static int add(doctor *d, const char *kind, const char *stack, const char *where,
	       const char *fix, const char *fmt, ...)
{
	st_doctor_report *r = d->r;
	st_doctor_finding *f;
	va_list ap;
	char *msg;

	if (r->count == r->capacity) {
		size_t nc = r->capacity ? r->capacity * 2 : 16;
		st_doctor_finding *na = realloc(r->items, nc * sizeof(*na));
		if (!na)
			return ST_ENOMEM;
		r->items = na;
		r->capacity = nc;
	}
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	f = &r->items[r->count];
	f->kind = st_strdup(kind);
	f->stack = stack ? st_strdup(stack) : NULL;
	f->where = where ? st_strdup(where) : NULL;
	f->fix = st_strdup(fix);
	f->message = msg;
	r->count++;
	if (!f->kind || (stack && !f->stack) || (where && !f->where) || !f->fix || !msg)
		return ST_ENOMEM;
	return ST_OK;
}

/* A fix command: "statetool CMD --backend URL ARGS" (new). */
static char *fix_cmd(doctor *d, const char *cmd, const char *args)
{
	return st_asprintf("statetool %s --backend %s%s%s", cmd, d->url, *args ? " " : "", args);
}

static int add_fix(doctor *d, const char *kind, const char *stack, const char *where,
		   const char *cmd, const char *args, const char *msg)
{
	char *fix = fix_cmd(d, cmd, args);
	int rc = fix ? add(d, kind, stack, where, fix, "%s", msg) : ST_ENOMEM;
	free(fix);
	return rc;
}

/* The stack as --stack takes it: PROJECT/STACK, or STACK (legacy). */
static const char *short_name(const st_stack_info *si, char *buf, size_t n)
{
	if (si->project)
		snprintf(buf, n, "%s/%s", si->project, si->name);
	else
		snprintf(buf, n, "%s", si->name);
	return buf;
}

/* ---- one stack's state ---- */

/* The fix of a state in the wrong place. A copy of another stack's object (its checkpoint
 * and its URNs name that stack) goes back to the name it holds: `stack rename`, which
 * rewrites the checkpoint and the URNs together. Else an edit of the URNs (judged by the
 * checkpoint, which names the place). */
static int add_place_fixes(doctor *d, st_state *s, const st_problems *pl, const char *name,
			   const char *where, int *is_copy)
{
	const char *cs = st_state_checkpoint_stack(s);
	int copy = 0, rc = ST_OK;
	char args[1200];

	for (size_t i = 0; i < pl->count; i++)
		copy |= !strcmp(pl->items[i].rule, "place/stack-mismatch") ? 1
			: !strcmp(pl->items[i].rule, "place/urn-mismatch")  ? 2
									    : 0;
	int exists = 0;
	char *dup = NULL, *q = NULL;
	if (copy == 3 && cs && !strncmp(cs, "organization/", 13) &&
	    st_backend_resolve(d->b, cs + 13, &q, &exists, NULL) != ST_OK)
		exists = 0;
	free(q);
	*is_copy = copy == 3 && cs && !strncmp(cs, "organization/", 13) && exists;
	if (*is_copy)
		/* the stack it is a copy of is there: two stacks hold the same resources, and the
		 * copy cannot go back; Pulumi removes a stack without touching its resources */
		dup = st_asprintf("pulumi stack rm --force --stack %s (after pulumi login %s): a "
				  "copy of %s, which exists",
				  name, d->url, cs + 13);
	else if (copy == 3 && cs && !strncmp(cs, "organization/", 13))
		snprintf(args, sizeof(args), "--stack %s %s", name, cs + 13);
	else
		snprintf(args, sizeof(args), "--stack %s", name);
	for (size_t i = 0; rc == ST_OK && i < pl->count; i++) {
		char *msg = st_asprintf("[%s] %s", pl->items[i].rule, pl->items[i].message);
		int env = !strcmp(pl->items[i].rule, "place/export-in-backend");
		char eargs[1300];
		snprintf(eargs, sizeof(eargs), "--stack %s --envelope checkpoint", name);
		rc = !msg ? ST_ENOMEM
		     : dup ? add(d, "place", name, where, dup, "%s", msg)
		     : env ? add_fix(d, "place", name, where, "convert", eargs, msg)
			   : add_fix(d, "place", name, where, copy == 3 ? "stack rename" : "edit",
				     args, msg);
		free(msg);
	}
	free(dup);
	return rc;
}

/* *is_copy: the state is a copy of another stack's, which exists (its IDs are that stack's). */
static int check_problems(doctor *d, st_state *s, const char *qname, const char *name,
			  const char *where, int *is_copy)
{
	st_validate_opts vo = ST_VALIDATE_OPTS_INIT;
	st_problems p = {0}, pl = {0};
	char args[512], first[1200] = "";
	int rc;

	vo.skip_schema = 1;
	snprintf(args, sizeof(args), "--stack %s", name);
	/* every URN against the place, as the editing commands check it before a change */
	if ((rc = st_validate(s, &vo, &p, NULL)) != ST_OK ||
	    (rc = st_check_place(s, qname, ST_PLACE_ALL, &pl, NULL)) != ST_OK)
		goto out;
	for (size_t i = 0; i < p.count && !first[0]; i++)
		if (p.items[i].severity == ST_SEV_ERROR)
			snprintf(first, sizeof(first), "[%s] %s", p.items[i].rule,
				 p.items[i].message);
	if (p.errors) {
		char *msg = st_asprintf("%zu integrity error%s, the first: %s", p.errors,
					p.errors == 1 ? "" : "s", first);
		rc = msg ? add_fix(d, "integrity", name, where, "repair", args, msg) : ST_ENOMEM;
		free(msg);
	}
	if (rc == ST_OK)
		rc = add_place_fixes(d, s, &pl, name, where, is_copy);
out:
	st_problems_clear(&p);
	st_problems_clear(&pl);
	return rc;
}

static int check_pending(doctor *d, st_state *s, const char *name, const char *where)
{
	json_t *ops = json_object_get(st_state_deployment(s), "pending_operations"), *op;
	size_t i, creating = 0, n = json_array_size(ops);
	char args[1200];

	if (!n)
		return ST_OK;
	json_array_foreach(ops, i, op) {
		const char *t = st_json_str(op, "type");
		if (t && !strcmp(t, "creating"))
			creating++;
	}
	char *msg = st_asprintf(
		"%zu pending operation%s left by an interrupted update%s", n, n == 1 ? "" : "s",
		creating ? " (a `creating` one may have made a resource the state does not "
			   "record: record it by its ID, or clear it)"
			 : "");
	if (creating) {
		const char *urn = NULL;
		json_array_foreach(ops, i, op) {
			const char *t = st_json_str(op, "type");
			if (!urn && t && !strcmp(t, "creating"))
				urn = st_json_str(json_object_get(op, "resource"), "urn");
		}
		snprintf(args, sizeof(args), "--stack %s '%s' ID", name, urn ? urn : "URN");
	} else {
		snprintf(args, sizeof(args), "--stack %s", name);
	}
	int rc = msg ? add_fix(d, "pending", name, where,
			       creating ? "pending import" : "pending clear", args, msg)
		     : ST_ENOMEM;
	free(msg);
	return rc;
}

/* The first holder of a "type\nid\nprovider" key (key taken). */
static int own(doctor *d, char *key, const char *name, const char *urn)
{
	st_strmap_slot *sl;
	int created;
	if (d->nowners == d->capowners) {
		size_t nc = d->capowners ? d->capowners * 2 : 64;
		struct owner *na = realloc(d->owners, nc * sizeof(*na));
		if (!na) {
			free(key);
			return ST_ENOMEM;
		}
		d->owners = na;
		d->capowners = nc;
	}
	d->owners[d->nowners].key = key;
	d->owners[d->nowners].who = st_asprintf("%s\n%s", name, urn);
	if (!d->owners[d->nowners++].who || !(sl = st_strmap_put(&d->ids, key, &created)))
		return ST_ENOMEM;
	sl->a = d->nowners - 1;
	return ST_OK;
}

/* The finding: which of the two stacks should keep it, only their programs tell; the fix
 * names the delete from either. first is "stack\nurn" of the other holder, nl its newline. */
static int add_duplicate(doctor *d, const char *name, const char *where, const char *urn,
			 const char *id, const char *type, const char *first, const char *nl)
{
	int on = (int)(nl - first);
	char *fix = st_asprintf("statetool delete --backend %s --stack %s '%s' (or --stack %.*s "
				"'%s': from the stack whose program no longer declares it)",
				d->url, name, urn, on, first, nl + 1);
	int rc = !fix ? ST_ENOMEM
		      : add(d, "duplicate-id", name, where, fix,
			    "%s has ID '%s', as %s in stack %.*s, each through a provider of the "
			    "same configuration: both stacks manage one %s if those providers reach "
			    "the same account or cluster; keep it in one of them",
			    urn, id, nl + 1, on, first, type);
	free(fix);
	return rc;
}

/* What a resource's provider reaches, as far as the state tells: a hash of the provider's
 * type and inputs (its version and download URL left out), by provider reference
 * ("URN::ID"). Two stacks of one program for two accounts or clusters use the same IDs
 * through providers configured differently: those are no duplicates. */
typedef struct prints {
	st_strmap map; /* reference -> hex hash (p) */
	char **own;
	size_t n;
} prints;

static void prints_free(prints *pp)
{
	st_strmap_free(&pp->map);
	for (size_t i = 0; i < pp->n; i++)
		free(pp->own[i]);
	free(pp->own);
}

/* A secret's ciphertext differs in every stack even for one value: each secret is compared
 * as equal to any other (the finding says "may"). */
static int sealed(const json_t *v)
{
	const char *sig = st_json_str(v, ST_SIG_KEY);
	return sig && !strcmp(sig, ST_SIG_SECRET);
}

static void unseal(json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;
	if (json_is_object(v)) {
		json_object_foreach(v, k, x) {
			if (sealed(x))
				json_object_set_new(v, k, json_string("[secret]"));
			else
				unseal(x);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x) {
			if (sealed(x))
				json_array_set_new(v, i, json_string("[secret]"));
			else
				unseal(x);
		}
	}
}

static int prints_of(json_t *res, prints *pp)
{
	size_t i, n = 0;
	json_t *r;
	st_strmap_init(&pp->map);
	pp->n = 0;
	json_array_foreach(res, i, r)
		n += st_json_str(r, "type") && st_type_is_provider(st_json_str(r, "type"));
	if (!(pp->own = calloc(2 * n + 1, sizeof(*pp->own))))
		return ST_ENOMEM;
	json_array_foreach(res, i, r) {
		const char *type = st_json_str(r, "type"), *urn = st_json_str(r, "urn");
		const char *id = st_json_str(r, "id");
		json_t *in = json_object_get(r, "inputs");
		unsigned char h[16];
		char *ref, *hex, *text;
		int created;
		st_strmap_slot *sl;
		if (!type || !urn || !id || !st_type_is_provider(type))
			continue;
		in = json_is_object(in) ? json_deep_copy(in) : json_object();
		if (in) {
			json_object_del(in, "version");
			json_object_del(in, "pluginDownloadURL");
			unseal(in);
		}
		text = in ? json_dumps(in, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		json_decref(in);
		ref = st_asprintf("%s::%s", urn, id);
		hex = malloc(33);
		if (!text || !ref || !hex) {
			free(text);
			free(ref);
			free(hex);
			return ST_ENOMEM;
		}
		crypto_generichash(h, sizeof(h), (const unsigned char *)type, strlen(type) + 1,
				   NULL, 0);
		crypto_generichash(h, sizeof(h), (const unsigned char *)text, strlen(text), h,
				   sizeof(h));
		free(text);
		sodium_bin2hex(hex, 33, h, sizeof(h));
		pp->own[pp->n++] = ref;
		pp->own[pp->n++] = hex;
		if (!(sl = st_strmap_put(&pp->map, ref, &created)))
			return ST_ENOMEM;
		sl->p = hex;
	}
	return ST_OK;
}

/* A physical ID held by a resource of another stack through a provider of the same
 * configuration: both may manage one cloud resource. */
static int check_ids(doctor *d, st_state *s, const char *name, const char *where)
{
	json_t *res = st_state_resources(s, 0), *r;
	size_t i;
	prints pp;
	int rc = prints_of(res, &pp);

	json_array_foreach(res, i, r) {
		const char *type = st_json_str(r, "type"), *id = st_json_str(r, "id"),
			   *urn = st_json_str(r, "urn"), *prov = st_json_str(r, "provider");
		st_strmap_slot *sl = prov ? st_strmap_get(&pp.map, prov) : NULL;
		char *key;
		if (rc != ST_OK)
			break;
		if (!type || !id || !*id || !urn || st_type_is_provider(type) ||
		    json_is_true(json_object_get(r, "external")) ||
		    json_is_true(json_object_get(r, "delete")))
			continue;
		if (!(key = st_asprintf("%s\n%s\n%s", type, id, sl ? (char *)sl->p : "")))
			rc = ST_ENOMEM;
		else if ((sl = st_strmap_get(&d->ids, key)) != NULL)
			free(key);
		else {
			rc = own(d, key, name, urn);
			continue;
		}
		if (rc != ST_OK)
			break;
		const char *first = d->owners[sl->a].who, *nl = strchr(first, '\n');
		if ((size_t)(nl - first) == strlen(name) && !strncmp(first, name, strlen(name)))
			continue; /* within one stack: the integrity check's business */
		rc = add_duplicate(d, name, where, urn, id, type, first, nl);
	}
	prints_free(&pp);
	return rc;
}

static int check_stack(doctor *d, const st_stack_info *si, char *unreadable)
{
	char name[256], *where = st__store_where(d->s, si->key), args[300];
	st_state *s = NULL;
	st_error e;
	int rc, copy = 0;

	if (!where)
		return ST_ENOMEM;
	/* the old stack of a pending rename: what it holds the new one holds (the rename's
	 * problem; its completion removes the old object) */
	if (st_strmap_get(&d->renaming, si->qname)) {
		free(where);
		return ST_OK;
	}
	short_name(si, name, sizeof(name));
	st_error_clear(&e);
	if ((rc = st_backend_load(d->b, si->qname, NULL, &s, &e)) != ST_OK) {
		snprintf(args, sizeof(args), "--stack %s", name);
		*unreadable = 1;
		rc = rc == ST_ENOMEM ? ST_ENOMEM
				     : add_fix(d, "unreadable", name, where, "validate", args,
					       e.message);
		free(where);
		return rc;
	}
	/* a copy of a stack that exists holds that stack's IDs: its place finding says so, and
	 * it is no holder of them (its fix removes it) */
	if ((rc = check_problems(d, s, si->qname, name, where, &copy)) == ST_OK &&
	    (rc = check_pending(d, s, name, where)) == ST_OK && !copy)
		rc = check_ids(d, s, name, where);
	st_state_free(s);
	free(where);
	return rc;
}

/* ---- what the listing shows ---- */

#define STACKS ".pulumi/stacks/"
#define LOCKS ".pulumi/locks/"

/* The stem of a stack file name (without .json[.gz|.zst]), or 0. */
static size_t stack_stem(const char *name)
{
	static const char *const sfx[] = {".json", ".json.gz", ".json.zst"};
	size_t n = strlen(name);
	for (size_t i = 0; i < 3; i++) {
		size_t l = strlen(sfx[i]);
		if (n > l && !strcmp(name + n - l, sfx[i]))
			return n - l;
	}
	return 0;
}

/* The stack a key under .pulumi/stacks/ belongs to (PROJECT/STACK or STACK, new), by its path:
 * the part before .json, checked as names are. NULL when it is no stack's. */
static char *stack_of_key(const char *rel, size_t stem)
{
	char *name = st_strndup(rel, stem), *sl;
	if (!name)
		return NULL;
	sl = strchr(name, '/');
	if (sl ? strchr(sl + 1, '/') || (*sl = '\0', !st_project_name_valid(name)) ||
			 !st_stack_name_valid(sl + 1)
	       : !st_stack_name_valid(name)) {
		free(name);
		return NULL;
	}
	if (sl)
		*sl = '/';
	return name;
}

/* A stack file of the legacy layout in a project-mode backend: `upgrade` moves it to its
 * project, the one its first resource's URN names; one that names none (no resources) upgrade
 * skips ("no project name found") until --project STACK=NAME gives it one. */
static int legacy_stack(doctor *d, const char *key, const char *stack, const char *where)
{
	char *project = NULL, args[300];

	/* (one that cannot be read: upgrade says why, as Pulumi's does) */
	if (st__upgrade_guess_project(d->s, key, stack, &project, NULL) != ST_OK || project) {
		free(project);
		return add_fix(d, "legacy-stack", stack, where, "upgrade", "",
			       "a stack file of the legacy layout, which Pulumi does not see in "
			       "the project layout (Pulumi: Found legacy stack files in state "
			       "store)");
	}
	snprintf(args, sizeof(args), "--project %s=NAME", stack);
	return add_fix(d, "legacy-stack", stack, where, "upgrade", args,
		       "a stack file of the legacy layout that names no project (it has no "
		       "resources): Pulumi does not see it in the project layout, and upgrade "
		       "skips it (no project name found) unless --project gives it one");
}

/* A staged object with no journal beside it: a move killed before its commit point (nothing
 * had changed), or at it, its first journal written beside the other stack, whose recovery
 * installs this object. Only a recovery that knows both stacks (move --recover) tells which,
 * and the other stack is recorded nowhere on this side: no other command removes it. */
static int staged_alone(doctor *d, const char *stack, const char *where)
{
	char args[600];
	snprintf(args, sizeof(args),
		 "--source %s --dest-backend OTHER_URL --dest OTHER_STACK (OTHER_URL and "
		 "OTHER_STACK: the move's other stack, which nothing here names; either stack as "
		 "--source)",
		 stack ? stack : "STACK");
	return add_fix(d, "journal", stack, where, "move --recover", args,
		       "an interrupted move left a staged object (killed before it was committed: "
		       "nothing had changed; or just at it, the journal beside the move's other "
		       "stack): `statetool move --recover` with the move's two stacks removes it, or "
		       "completes the move; no other command does");
}

/* A stack file named '.' or '..' (PROJECT/..json): a name Pulumi's ParseStackName accepts and
 * lists, which statetool refuses (Pulumi's own lock and history paths for it are folders '.'
 * and '..'). Said, not skipped: Pulumi shows the stack, statetool's commands cannot open it. */
static int dot_stack(doctor *d, const char *rel, size_t stem, const char *where)
{
	const char *sl = memchr(rel, '/', stem), *name = sl ? sl + 1 : rel;
	size_t nl = stem - (size_t)(name - rel);
	char *proj = sl ? st_strndup(rel, (size_t)(sl - rel)) : NULL, *fix, *stack;
	int rc;

	if (!((nl == 1 && name[0] == '.') || (nl == 2 && !memcmp(name, "..", 2))) ||
	    (sl && (!proj || memchr(name, '/', nl) || !st_project_name_valid(proj)))) {
		free(proj);
		return sl && !proj ? ST_ENOMEM : ST_OK; /* no stack's: nothing Pulumi lists */
	}
	stack = proj ? st_asprintf("%s/%.*s", proj, (int)nl, name) : st_strndup(name, nl);
	/* (the legacy store's references are bare stack names: no organization/) */
	fix = stack ? st_asprintf("pulumi stack rename --stack %s%s NEW_NAME",
				  proj ? "organization/" : "", stack)
		    : NULL;
	rc = fix ? add(d, "stack-name", stack, where, fix,
		       "a stack named '%.*s', which Pulumi accepts and lists but statetool does not "
		       "open (its lock and history folders would be '.' or '..'): rename it with "
		       "Pulumi to use it with statetool",
		       (int)nl, name)
		 : ST_ENOMEM;
	free(fix);
	free(stack);
	free(proj);
	return rc;
}

static int check_stack_key(doctor *d, const st_store_entry *e, const st_stack_info *infos,
			   size_t n)
{
	const char *rel = e->key + strlen(STACKS);
	char *where = st__store_where(d->s, e->key), *stack = NULL, *msg = NULL, args[300];
	char *jkey = NULL, *desc = NULL; /* a journal beside; the live lock it names */
	size_t stem;
	int rc = ST_OK, pm = st_backend_project_mode(d->b);
	static const char *const jsfx[] = {".statetool-journal", ".statetool-new"};

	if (!where)
		return ST_ENOMEM;
	for (size_t j = 0; j < 2; j++) {
		size_t l = strlen(jsfx[j]), kl = strlen(rel);
		if (kl > l && !strcmp(rel + kl - l, jsfx[j])) {
			char *base = st_strndup(rel, kl - l);
			stem = base ? stack_stem(base) : 0;
			stack = stem ? stack_of_key(base, stem) : NULL;
			free(base);
			jkey = j == 0 ? st_strdup(e->key) : st__journal_beside(d->s, rel, stem);
			if (j == 1 && !jkey) {
				rc = staged_alone(d, stack, where);
				goto out;
			}
			if (jkey && (desc = st__journal_running(d->s, jkey, d->max_age))) { /* no fix */
				rc = add(d, "journal", stack, where, "",
					 "a statetool operation is in progress (its journal beside its "
					 "own lock, held: %s): nothing to fix while it runs; it removes "
					 "its journal when it ends", desc);
				goto out;
			}
			snprintf(args, sizeof(args), "--stack %s", stack ? stack : "STACK");
			rc = add_fix(d, "journal", stack, where, "list", args,
				     j == 0 ? "an interrupted statetool operation left its journal: "
					      "any statetool command on the stack completes it"
					    : "an interrupted statetool operation left a staged "
					      "object beside its journal: any statetool command on the "
					      "stack completes it");
			goto out;
		}
	}
	if (!(stem = stack_stem(rel)))
		goto out;
	if (!(stack = stack_of_key(rel, stem))) {
		rc = dot_stack(d, rel, stem, where);
		goto out;
	}
	if (pm && !strchr(stack, '/')) {
		rc = legacy_stack(d, e->key, stack, where);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char nm[256];
		if (strcmp(short_name(&infos[i], nm, sizeof(nm)), stack) || !infos[i].key ||
		    !strcmp(infos[i].key, e->key))
			continue;
		char *other = st__store_where(d->s, infos[i].key);
		msg = other ? st_asprintf("an older variant beside %s, the object Pulumi reads: "
					  "never read, it is the stack's state of some time ago",
					  other)
			    : NULL;
		free(other);
		if (!msg) {
			rc = ST_ENOMEM;
			goto out;
		}
		char *fix = st_asprintf("statetool stacks --backend %s (then delete %s)", d->url,
					where);
		rc = fix ? add(d, "stray-variant", stack, where, fix, "%s", msg) : ST_ENOMEM;
		free(fix);
		break;
	}
out:
	free(jkey);
	free(desc);
	free(msg);
	free(stack);
	free(where);
	return rc;
}

static int check_lock_key(doctor *d, const st_store_entry *e, long long max_age)
{
	const char *rel = e->key + strlen(LOCKS);
	const char *s1 = strchr(rel, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL,
		   *s3 = s2 ? strchr(s2 + 1, '/') : NULL;
	int pm = st_backend_project_mode(d->b), stale = 0, rc;
	char *stack = NULL, *desc = NULL, *where = st__store_where(d->s, e->key), args[300];

	if (!where)
		return ST_ENOMEM;
	if (st_strmap_get(&d->renaming, e->key)) { /* a pending rename's own: the rename's */
		free(where);
		return ST_OK;
	}
	if (s1 && !s2 && (!pm || strncmp(rel, "organization/", 13))) {
		stack = st_strndup(rel, (size_t)(s1 - rel)); /* a legacy lock folder */
	} else if (pm && s3 && !strchr(s3 + 1, '/') && !strncmp(rel, "organization/", 13)) {
		stack = st_strndup(s1 + 1, (size_t)(s3 - s1 - 1));
	} else {
		free(where);
		return ST_OK;
	}
	if (!stack || (rc = st__lock_stale(d->s, e->key, max_age, &desc, &stale)) != ST_OK) {
		rc = ST_ENOMEM;
		goto out;
	}
	snprintf(args, sizeof(args), "--stack %s", stack);
	if (pm && s1 && !s2)
		rc = add_fix(d, "legacy-lock", stack, where, "unlock", args,
			     "a lock of the legacy layout, which Pulumi no longer looks at (left by "
			     "a tool killed while it held it)");
	else if (stale) {
		char *msg = st_asprintf("a stale lock: %s", desc);
		rc = msg ? add_fix(d, "lock", stack, where, "unlock", args, msg) : ST_ENOMEM;
		free(msg);
	}
out:
	free(desc);
	free(stack);
	free(where);
	return rc;
}

/* A temporary file (a file store's only) that no write has touched for an hour: an
 * interrupted write left it (no write takes that long); nothing reads it. */
static int check_temporaries(doctor *d, st_error *err)
{
	st_store_entry *e = NULL;
	size_t n = 0;
	long long now = (long long)time(NULL);
	int rc;

	if (!st_backend_root(d->b))
		return ST_OK; /* a store of objects: none */
	rc = st_store_list(d->s, ".pulumi/", ST__STORE_LIST_TEMPORARY, &e, &n, err);

	for (size_t i = 0; i < n && rc == ST_OK; i++) {
		char *where, *fix;
		if (!st__store_temporary(e[i].key) || now - e[i].info.mtime_ns / 1000000000 < 3600)
			continue;
		where = st__store_where(d->s, e[i].key);
		fix = where ? st_asprintf("rm %s", where) : NULL;
		rc = fix ? add(d, "temporary", NULL, where, fix,
			       "a temporary file (%lld bytes) an interrupted statetool write left, "
			       "untouched for over an hour: nothing reads it",
			       e[i].info.size)
			 : ST_ENOMEM;
		free(fix);
		free(where);
	}
	st_store_entries_free(e, n);
	return rc;
}

/* ---- the index ---- */

typedef struct ix_row {
	char *qname;
	long long size, mtime;
	char *etag;
	int seen;
} ix_row;

typedef struct ix_rows {
	ix_row *r;
	size_t n, cap;
	int oom;
} ix_rows;

static int ix_collect(void *ctx, int ncols, const char *const *names, const char *const *v)
{
	ix_rows *x = ctx;
	(void)names;
	if (ncols < 4)
		return 0;
	if (x->n == x->cap) {
		size_t nc = x->cap ? x->cap * 2 : 32;
		ix_row *na = realloc(x->r, nc * sizeof(*na));
		if (!na) {
			x->oom = 1;
			return 1;
		}
		x->r = na;
		x->cap = nc;
	}
	ix_row *r = &x->r[x->n++];
	r->qname = st_strdup(v[0] ? v[0] : "");
	r->size = v[1] ? strtoll(v[1], NULL, 10) : -1;
	r->mtime = v[2] ? strtoll(v[2], NULL, 10) : 0;
	r->etag = st_strdup(v[3] ? v[3] : "");
	r->seen = 0;
	if (!r->qname || !r->etag)
		x->oom = 1;
	return x->oom;
}

/* The index against the listing, as `index update` compares them: one finding naming the
 * stacks changed, added or removed since they were indexed. */
static int check_index(doctor *d, const char *path, const st_stack_info *infos, size_t n)
{
	st_index *ix = NULL;
	ix_rows x = {0};
	st_buf names;
	size_t stale = 0;
	int rc;
	st_error e;

	st_error_clear(&e);
	if (!path || access(path, F_OK) != 0)
		return ST_OK;
	d->r->index_checked = 1;
	st_buf_init(&names);
	if ((rc = st_index_open(&ix, path, 1, NULL, &e)) == ST_OK)
		rc = st_index_sql(ix, "SELECT qname, size, mtime_ns, etag FROM stacks", ix_collect,
				  &x, &e);
	st_index_close(ix);
	if (x.oom || rc == ST_ENOMEM) {
		rc = ST_ENOMEM;
		goto out;
	}
	if (rc) {
		char *fix = st_asprintf("statetool index update --backend %s --db %s", d->url, path);
		rc = fix ? add(d, "index-stale", NULL, path, fix, "the index cannot be read: %s",
			       e.message)
			 : ST_ENOMEM;
		free(fix);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		ix_row *hit = NULL;
		for (size_t j = 0; j < x.n && !hit; j++)
			if (!strcmp(x.r[j].qname, infos[i].qname))
				hit = &x.r[j];
		if (hit)
			hit->seen = 1;
		if (d->unreadable[i])
			continue; /* reported as such; the index cannot hold it */
		if (hit && hit->size == infos[i].size && hit->mtime == infos[i].mtime_ns &&
		    !strcmp(hit->etag, infos[i].etag))
			continue;
		st_buf_printf(&names, "%s%s (%s)", stale++ ? ", " : "", infos[i].qname,
			      hit ? "changed" : "not indexed");
	}
	for (size_t j = 0; j < x.n; j++)
		if (!x.r[j].seen)
			st_buf_printf(&names, "%s%s (removed)", stale++ ? ", " : "", x.r[j].qname);
	if (names.oom) {
		rc = ST_ENOMEM;
		goto out;
	}
	if (stale) {
		char *fix = st_asprintf("statetool index update --backend %s --db %s", d->url, path);
		rc = fix ? add(d, "index-stale", NULL, path, fix,
			       "the index is out of date: %zu stack%s changed since it was indexed: "
			       "%s",
			       stale, stale == 1 ? "" : "s", names.data)
			 : ST_ENOMEM;
		free(fix);
	}
out:
	for (size_t j = 0; j < x.n; j++) {
		free(x.r[j].qname);
		free(x.r[j].etag);
	}
	free(x.r);
	st_buf_free(&names);
	return rc;
}

/* ---- interrupted stack renames ---- */

/* A stack's name as --stack takes it (P/S or S) from its full name. */
static const char *stack_arg(const char *qname)
{
	return strncmp(qname, "organization/", 13) ? qname : qname + 13;
}

/* One problem per interrupted rename (its markers lie beside both stacks), with the command
 * that finishes it; its old stack and its own locks are remembered, so that neither reports
 * what the rename's completion removes (a duplicate-id per resource, a stale lock). */
static int check_renames(doctor *d, const st_store_entry *e, size_t ne)
{
	int rc = ST_OK, created;

	for (size_t i = 0; i < ne && rc == ST_OK; i++) {
		size_t kl = strlen(e[i].key), sl = strlen(RENAME_MARKER_SUFFIX);
		st__rename_marker m;
		char *where, *fix = NULL;
		if (strncmp(e[i].key, STACKS, strlen(STACKS)) || kl <= sl ||
		    strcmp(e[i].key + kl - sl, RENAME_MARKER_SUFFIX))
			continue;
		if (!(where = st__store_where(d->s, e[i].key)))
			return ST_ENOMEM;
		rc = st__rename_marker_read(d->b, e[i].key, &m, NULL);
		if (rc == ST_OK && !st_strmap_get(&d->renaming, m.from)) {
			const char *nn = stack_arg(m.to), *slash = strchr(nn, '/');
			/* the new name as stack rename takes it: NAME within the project */
			if (slash && !strncmp(nn, stack_arg(m.from), (size_t)(slash - nn) + 1))
				nn = slash + 1;
			char *q = NULL;
			int written = 0; /* the new stack's object: both stacks hold the resources */
			fix = st_asprintf("statetool stack rename --backend %s --stack %s %s", d->url,
					  stack_arg(m.from), nn);
			if (st_backend_resolve(d->b, m.to, &q, &written, NULL) != ST_OK)
				written = 0;
			free(q);
			rc = !fix ? ST_ENOMEM
				  : add(d, "rename", stack_arg(m.from), where, fix,
					"an interrupted stack rename of %s to %s: any statetool "
					"command on either stack, or the same rename again, finishes "
					"it (%s)",
					m.from, m.to,
					written ? "until then both stacks hold its resources"
						: "the new stack is not written yet: a command on either "
						  "stack undoes the rename, the same rename again does it");
			for (int j = -1; rc == ST_OK && j < 2; j++) {
				const char *src = j < 0 ? m.from : m.lock[j];
				st_strmap_slot *slot = NULL;
				char *k;
				if (!src)
					continue;
				if (!(k = st_strdup(src)) ||
				    !(slot = st_strmap_put(&d->renaming, k, &created))) {
					free(k);
					rc = ST_ENOMEM;
				} else if (created) {
					slot->p = k; /* the map's keys are borrowed: freed with it */
				} else {
					free(k);
				}
			}
		} else if (rc == ST_EFORMAT) {
			fix = st_asprintf("rm %s (when no rename of the stack is pending)", where);
			rc = fix ? add(d, "rename", NULL, where, fix,
				       "a stack rename marker that cannot be read")
				 : ST_ENOMEM;
		} else if (rc == ST_ENOTFOUND) {
			rc = ST_OK; /* completed meanwhile */
		}
		st__rename_marker_free(&m);
		free(fix);
		free(where);
	}
	return rc;
}

/* ---- the whole backend ---- */

static int doctor_run(doctor *d, const st_doctor_opts *o, st_error *err)
{
	st_stack_info *infos = NULL;
	st_store_entry *e = NULL;
	size_t n = 0, ne = 0;
	long long max_age = !o || !o->lock_max_age ? 24 * 3600 : o->lock_max_age;
	char *ixpath = NULL;
	int rc;

	d->max_age = max_age;
	if ((rc = st_backend_list(d->b, &infos, &n, err)) != ST_OK)
		return rc;
	d->r->stacks = n;
	if (!(d->unreadable = calloc(n ? n : 1, 1))) {
		st_stack_infos_free(infos, n);
		return ST_ENOMEM;
	}
	if (!st_backend_project_mode(d->b) && n &&
	    (rc = add_fix(d, "legacy-layout", NULL, NULL, "upgrade", "",
			  "the backend is in the legacy layout (no .pulumi/meta.yaml): Pulumi "
			  "refuses it (Legacy DIY state is deprecated, please upgrade your state to "
			  "project mode)")) != ST_OK)
		goto out;
	if ((rc = st_store_list(d->s, ".pulumi/", 0, &e, &ne, err)) != ST_OK ||
	    (rc = check_renames(d, e, ne)) != ST_OK)
		goto out;
	for (size_t i = 0; i < n && rc == ST_OK; i++) {
		rc = check_stack(d, &infos[i], &d->unreadable[i]);
		if (o && o->progress)
			o->progress(o->ctx, i + 1, n);
	}
	for (size_t i = 0; i < ne && rc == ST_OK; i++) {
		if (!strncmp(e[i].key, STACKS, strlen(STACKS)))
			rc = check_stack_key(d, &e[i], infos, n);
		else if (!strncmp(e[i].key, LOCKS, strlen(LOCKS)))
			rc = check_lock_key(d, &e[i], max_age);
	}
	if (rc == ST_OK)
		rc = check_temporaries(d, err);
	if (rc == ST_OK) {
		ixpath = o && o->index_path ? st_strdup(o->index_path)
					    : st_index_default_path(d->b);
		if (!(o && o->index_path) || ixpath)
			rc = check_index(d, ixpath, infos, n);
		else
			rc = ST_ENOMEM;
	}
out:
	free(ixpath);
	st_store_entries_free(e, ne);
	st_stack_infos_free(infos, n);
	return rc;
}

int st_backend_doctor(st_backend *b, const st_doctor_opts *opts, st_doctor_report *out,
		      st_error *err)
{
	doctor d = {0};
	int rc;

	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(out);
	memset(out, 0, sizeof(*out));
	if (opts && (rc = st__opts_version(opts->version, ST_DOCTOR_OPTS_VERSION,
					   "st_doctor_opts", err)) != ST_OK)
		return rc;
	if (!(d.s = st_backend_store(b)))
		return st__err(err, ST_EUNSUPPORTED, "backend '%s' is no DIY backend",
			       st_backend_url(b));
	d.b = b;
	d.r = out;
	st_strmap_init(&d.ids);
	st_strmap_init(&d.renaming);
	if (!(d.url = st__shell_word(st_backend_url(b))))
		rc = ST_ENOMEM;
	else
		rc = doctor_run(&d, opts, err);
	if (rc == ST_ENOMEM)
		rc = st__err(err, ST_ENOMEM, "out of memory");
	if (rc)
		st_doctor_report_free(out);
	st_strmap_free(&d.ids);
	for (size_t i = 0; i < d.renaming.cap; i++)
		if (d.renaming.slots[i].hash)
			free(d.renaming.slots[i].p);
	st_strmap_free(&d.renaming);
	for (size_t i = 0; i < d.nowners; i++) {
		free(d.owners[i].key);
		free(d.owners[i].who);
	}
	free(d.owners);
	free(d.unreadable);
	free(d.url);
	return rc;
}

void st_doctor_report_free(st_doctor_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->count; i++) {
		free(r->items[i].kind);
		free(r->items[i].stack);
		free(r->items[i].where);
		free(r->items[i].message);
		free(r->items[i].fix);
	}
	free(r->items);
	memset(r, 0, sizeof(*r));
}
