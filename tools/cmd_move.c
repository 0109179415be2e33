/* statetool move: resources from one stack (or file) to another, crash-safe. */
#include "cli.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char help[] =
	"usage: statetool move [options] --source SRC --dest DST RESOURCE...\n"
	"       statetool move --recover --source SRC --dest DST\n"
	"\n"
	"Move resources from SRC to DST with the semantics of `pulumi state move`. SRC and DST\n"
	"are state files, or stacks of DIY backends: with --backend URL (both sides) or\n"
	"--source-backend/--dest-backend (each side, possibly two different stores), SRC and\n"
	"DST are stack names. DST may not exist yet. RESOURCE is an exact URN or a glob\n"
	"('urn:pulumi:dev::app::aws:s3/bucket:Bucket::*'). State files are loaded lazily:\n"
	"only the resources moved or changed are parsed in full, the others written back as\n"
	"the file's bytes (STATETOOL_LAZY=0: all parsed).\n"
	"\n"
	"  * every descendant moves with its parent; --include-parents adds the ancestors;\n"
	"    the root stack never moves (selecting it moves its children)\n"
	"  * providers used by moved resources are copied, not moved, and reused when the\n"
	"    destination has the same provider; a different provider under the same URN, or\n"
	"    any other URN collision, is refused\n"
	"  * dependencies, property dependencies, deletedWith and replaceWith edges that would\n"
	"    cross the stacks are removed and reported on both sides\n"
	"  * URNs take the destination's stack and project; a resource reparented to the\n"
	"    destination's root loses its parent-type chain; a destination without a root\n"
	"    stack resource gets one\n"
	"  * pending operations of moved resources move with them\n"
	"  * secrets are re-encrypted for the destination when the two secrets providers\n"
	"    differ; a destination without one gets a passphrase provider of its own (from a\n"
	"    passphrase source) or takes the source's (a KMS or vault one); secrets Pulumi\n"
	"    Cloud keeps for the source stack (its 'service' provider) need a destination\n"
	"    with a provider of its own\n"
	"\n"
	"The plan is printed before anything is written; --dry-run stops there. Both results\n"
	"must pass the integrity checks. Both stacks are locked for the whole move; the two\n"
	"writes go through a journal (each new version staged as OBJECT.statetool-new in its\n"
	"own store, then OBJECT.statetool-journal naming both sides in each store, then the\n"
	"destination, then the source replaced), so after a crash at any point `statetool\n"
	"move --recover` (or any statetool command on either side) completes a committed move,\n"
	"opening the other side's store from the URL in the journal (credentials from the\n"
	"environment); --recover also removes what an uncommitted one staged, and its locks\n"
	"(no journal names them: a lock on each stack of one process gone from this host).\n"
	"A recovery takes both stacks' locks: a lock other than the crashed move's own (named\n"
	"in the journal) refuses it, nothing written; once complete, the move's locks are\n"
	"removed.\n"
	"A stack is written as its backend's saves write it (PULUMI_DIY_BACKEND_GZIP/ZSTD).\n"
	"\n"
	"A side in Pulumi Cloud (--source-backend/--dest-backend https://api.pulumi.com,\n"
	"ORG/PROJECT/STACK) is exported and written by the service's import, which has no\n"
	"journal: the destination is written first, then the source, so an interruption\n"
	"between them leaves the resources in both, never in neither (statetool(1),\n"
	"PULUMI CLOUD).\n"
	"\n"
	"A stack's name and project come from --source-stack/--dest-stack PROJECT/STACK, else\n"
	"the checkpoint's `stack`, else the file's place in a DIY backend, else the URNs. A\n"
	"stack of a backend is the one its place names (as Pulumi sees it): naming another is\n"
	"a usage error.\n"
	"\n"
	"Filter mode: SRC or DST (a file side) may be '-': that side is read from standard\n"
	"input and its result written to standard output (-o - says so too; not both '-').\n"
	"It takes no lock and keeps no .bak; stdout gets nothing when the move fails. The\n"
	"two writes are then not one operation: the destination is written first, then the\n"
	"source, so a failure of the second leaves the moved resources in both, never in\n"
	"neither (the message says which side was written). Messages go to stderr.\n"
	"\n"
	"Passphrases (when secrets must be re-encrypted), never from the command line:\n"
	"  source: STATETOOL_SOURCE_PASSPHRASE, STATETOOL_SOURCE_PASSPHRASE_FILE,\n"
	"          --source-passphrase-file, then PULUMI_CONFIG_PASSPHRASE(_FILE), a prompt\n"
	"  dest:   STATETOOL_DEST_PASSPHRASE, STATETOOL_DEST_PASSPHRASE_FILE,\n"
	"          --dest-passphrase-file, then PULUMI_CONFIG_PASSPHRASE(_FILE), a prompt\n"
	"\n"
	"Options:\n"
	"  --source SRC, --dest DST     the two sides (files, or stack names with a backend)\n"
	"  --backend URL                the backend of both sides\n"
	"  --source-backend URL, --dest-backend URL   the backend of one side\n"
	"  --source-stack P/S, --dest-stack P/S       the project and stack a side belongs to\n"
	"  --include-parents            also move the ancestors of the selected resources\n"
	"  --source-passphrase-file F, --dest-passphrase-file F\n"
	"  --dry-run                    print the plan and write nothing (a lock the real run\n"
	"                               would meet is noted)\n"
	"  --json                       the plan and outcome as one JSON document\n"
	"  --recover                    complete an interrupted move of SRC and DST\n"
	"  -o -                         the '-' side's result to standard output (the default)\n"
	"  --allow-duplicate-keys       write states whose files repeat object keys\n"
	"  -h, --help                   show this help\n";

enum {
	O_SOURCE = 5000, O_DEST, O_SBACKEND, O_DBACKEND, O_SSTACK, O_DSTACK, O_PARENTS, O_SPASS,
	O_DPASS, O_RECOVER
};

typedef struct side {
	const char *name;    /* as given */
	const char *backend; /* or NULL: a file */
	const char *names;   /* PROJECT/STACK override */
	const char *passfile;
	cli_target t;
	st_state *s;
	st_lock *lock;
	st_edit *e;
	int created;
} side;

static int resolve_side(side *sd, const char *what)
{
	int rc;
	memset(&sd->t, 0, sizeof(sd->t));
	if (!sd->name)
		return cli_usage("move", "missing --%s", what);
	if (sd->backend) {
		sd->t.backend_url = sd->backend;
		sd->t.stack = sd->name;
	} else {
		sd->t.arg = sd->name;
	}
	/* '-': standard input, the side's result to standard output (filter mode) */
	if ((rc = cli_filter_begin(&sd->t)) != EXIT_OK ||
	    (rc = cli_target_resolve(&sd->t, "move", 0)) != EXIT_OK)
		return rc;
	return cli_refuse_other_names(&sd->t, sd->names, "move",
				      strcmp(what, "source") ? "--dest-stack" : "--source-stack");
}

static const char *side_label(side *sd)
{
	if (sd->t.filter)
		return "<stdin>";
	if (!sd->backend && sd->t.backend) /* a stack's file named by its path */
		return cli_target_where(&sd->t);
	return sd->backend ? sd->name : sd->t.path;
}

/* A passphrase for one side: its own variables first, then Pulumi's. Every message names the
 * side. */
static int side_passphrase(side *sd, const char *prefix, const char *prompt, int confirm,
			   char **pass, size_t *len, const char **from)
{
	const char *who = prefix[0] == 'S' ? "source" : "destination";
	const char *flag = prefix[0] == 'S' ? "source" : "dest";
	char env[64], envf[64];

	snprintf(env, sizeof(env), "STATETOOL_%s_PASSPHRASE", prefix);
	snprintf(envf, sizeof(envf), "STATETOOL_%s_PASSPHRASE_FILE", prefix);
	int src = prefix[0] == 'S';
	*from = getenv(env)    ? (src ? "STATETOOL_SOURCE_PASSPHRASE" : "STATETOOL_DEST_PASSPHRASE")
		: getenv(envf) ? (src ? "STATETOOL_SOURCE_PASSPHRASE_FILE"
				      : "STATETOOL_DEST_PASSPHRASE_FILE")
		: sd->passfile ? (src ? "--source-passphrase-file" : "--dest-passphrase-file")
			       : NULL;
	if (*from) {
		return cli_passphrase(env, envf, sd->passfile, prompt, confirm, pass, len);
	}
	if (!getenv("PULUMI_CONFIG_PASSPHRASE") && !getenv("PULUMI_CONFIG_PASSPHRASE_FILE") &&
	    !isatty(STDIN_FILENO)) {
		cli_errorf("the %s stack's passphrase must be set with %s or %s (or "
			   "--%s-passphrase-file), or PULUMI_CONFIG_PASSPHRASE or "
			   "PULUMI_CONFIG_PASSPHRASE_FILE",
			   who, env, envf, flag);
		return EXIT_FAIL;
	}
	*from = getenv("PULUMI_CONFIG_PASSPHRASE")	   ? "PULUMI_CONFIG_PASSPHRASE"
		: getenv("PULUMI_CONFIG_PASSPHRASE_FILE") ? "PULUMI_CONFIG_PASSPHRASE_FILE"
							  : "the terminal";
	return cli_passphrase("PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE", NULL,
			      prompt, confirm, pass, len);
}

/* The secrets manager of one side's own provider. */
static int side_secrets(side *sd, const char *prefix, st_secrets **out)
{
	const char *who = prefix[0] == 'S' ? "source" : "destination";
	json_t *dep = st_state_deployment(sd->s);
	json_t *sp = dep ? json_object_get(dep, "secrets_providers") : NULL;
	const char *type = json_string_value(json_object_get(sp, "type"));
	char prompt[96], *pass = NULL;
	const char *from = NULL;
	size_t len = 0;
	st_error err;
	int rc;

	st_error_clear(&err);
	*out = NULL;
	if (!type)
		return EXIT_OK;
	snprintf(prompt, sizeof(prompt), "Enter the %s stack's passphrase: ", who);
	if (!strcmp(type, "passphrase") &&
	    (rc = side_passphrase(sd, prefix, prompt, 0, &pass, &len, &from)) != EXIT_OK)
		return rc;
	rc = st_secrets_open(out, sp, pass, len, &err);
	cli_passphrase_free(pass);
	if (rc == ST_EPASSPHRASE && from)
		cli_errorf("the %s stack's passphrase (from %s) is incorrect", who, from);
	else if (rc)
		cli_errorf("%s stack: %s", who, err.message);
	if (rc)
		return EXIT_FAIL;
	return EXIT_OK;
}

/* A passphrase provider of its own for a destination that has none: the destination's
 * passphrase, a new salt. */
static int dest_new_secrets(side *sd, st_secrets **out)
{
	char *pass = NULL;
	const char *from = NULL;
	size_t len = 0;
	st_error err;
	int rc = side_passphrase(sd, "DEST", "Enter a passphrase for the destination stack: ", 1,
				 &pass, &len, &from);
	st_error_clear(&err);
	*out = NULL;
	if (rc != EXIT_OK)
		return rc;
	rc = st_secrets_new_passphrase(out, pass, len, &err);
	cli_passphrase_free(pass);
	if (rc) {
		cli_errorf("destination stack: %s", err.message);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static int load_side(side *sd, int allow_dups)
{
	st_error err;
	st_error_clear(&err);
	if (sd->t.exists) {
		int rc = cli_load_ex(&sd->t, &sd->s, 1); /* lazily: moved resources made full */
		if (rc == EXIT_OK)
			rc = cli_refuse_lossy(sd->s, side_label(sd), allow_dups);
		if (rc == EXIT_OK)
			rc = cli_refuse_misplaced(sd->s, &sd->t, side_label(sd));
		return rc;
	}
	/* a new destination */
	if (st_state_new(&sd->s, &err) != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	sd->created = 1;
	/* a new stack of a backend: a checkpoint naming the stack where it is */
	if (sd->t.backend &&
	    st_state_set_envelope(sd->s, ST_ENVELOPE_CHECKPOINT, sd->t.qname, &err) != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* A side's plain file as an object of the file store of its directory. */
static int file_store(side *sd, st_store **store, char **key)
{
	st_error err;
	st_error_clear(&err);
	if (st_store_open_file(store, key, sd->t.path, &err) != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* The store a side's objects are in (borrowed for a stack, new in *owned for a file). */
static int side_store(side *sd, st_store **owned, char **key, st_store **store)
{
	*owned = NULL;
	*key = NULL;
	if (sd->t.backend) {
		*store = st_backend_store(sd->t.backend);
		return EXIT_OK;
	}
	int rc = file_store(sd, owned, key);
	*store = *owned;
	return rc;
}

/* Where a side is written (*to; its store and keys, owned in *owned, *key, *old): a stack as
 * its backend's saves write it (compression included), a file in place. */
static int pair_target(side *sd, st_pair_side *to, st_store **owned, char **key, char **old)
{
	st_error err;
	st_error_clear(&err);
	memset(to, 0, sizeof(*to));
	*owned = NULL;
	*key = *old = NULL;
	if (!sd->t.backend) {
		if (file_store(sd, owned, key) != EXIT_OK)
			return EXIT_FAIL;
		to->store = *owned;
		to->key = *key;
		return EXIT_OK;
	}
	if (st_backend_stack_target(sd->t.backend, sd->t.qname, sd->s, key, old, &err) != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	to->store = st_backend_store(sd->t.backend);
	to->key = *key;
	to->old_key = *old;
	return EXIT_OK;
}

static void print_section(const char *head, st_changes *c)
{
	if (!c->count)
		return;
	printf("%s\n\n", head);
	for (size_t i = 0; i < c->count; i++)
		printf("%s\n", c->lines[i]);
	printf("\n");
}

static json_t *lines_json(st_changes *c)
{
	json_t *a = json_array();
	for (size_t i = 0; i < c->count; i++)
		json_array_append_new(a, json_string(c->lines[i]));
	return a;
}

/* Stale locks of a crashed move: removed when their process is gone. */
static void clear_stale(side *sd)
{
	char *lk = NULL;
	if (sd->backend || asprintf(&lk, "%s.lock", sd->t.path) < 0)
		return;
	char *data = NULL;
	size_t len;
	if (st_file_read(lk, 1 << 16, &data, &len, NULL, NULL) == ST_OK) {
		json_t *o = NULL;
		char host[256] = "";
		gethostname(host, sizeof(host) - 1);
		if (st_json_parse(&o, data, len, NULL, NULL, NULL, NULL, NULL) == ST_OK) {
			double dp = json_number_value(json_object_get(o, "pid"));
			long pid = dp >= 1 && dp <= 4194304 ? (long)dp : 0;
			const char *h = json_string_value(json_object_get(o, "hostname"));
			if (h && !strcmp(h, host) && pid > 0 && kill((pid_t)pid, 0) < 0) {
				unlink(lk);
				fprintf(stderr, "statetool: removed the stale lock %s (process %ld is "
						"gone)\n", lk, pid);
			}
		}
		json_decref(o);
	}
	free(data);
	free(lk);
}

/* The locks of a move that died before its commit point (no journal names them): a dead
 * process of this host that held both sides' (st_pair_unlock_dead). */
static int unlock_dead(side *const sides[2], st_store *const store[2], char *const key[2],
		       st_changes *ch)
{
	char *k[2] = {NULL, NULL};
	st_error err;
	int exists, rc = ST_OK;

	st_error_clear(&err);
	for (int i = 0; rc == ST_OK && i < 2; i++) {
		if (sides[i]->t.backend)
			rc = st_backend_stack_key(sides[i]->t.backend, sides[i]->t.qname, &k[i],
						  &exists, &err);
		else if (!(k[i] = strdup(key[i]))) {
			cli_errorf("out of memory");
			free(k[0]);
			return EXIT_FAIL;
		}
	}
	if (rc == ST_OK)
		rc = st_pair_unlock_dead(store[0], k[0], store[1], k[1], ch, &err);
	if (rc != ST_OK)
		cli_error(&err);
	free(k[0]);
	free(k[1]);
	return rc == ST_OK ? EXIT_OK : EXIT_FAIL;
}

/* Completes (or, when it was never committed, tidies) an interrupted move of the two sides:
 * first every journal (either side's names both), then staged objects no journal names. */
static int recover(side *src, side *dst)
{
	side *sides[2] = {dst, src};
	st_store *owned[2] = {NULL, NULL}, *store[2] = {NULL, NULL};
	char *key[2] = {NULL, NULL};
	st_changes ch = {0};
	st_error err;
	int rc = EXIT_OK;

	st_error_clear(&err);
	/* (two plain files: a stale lock, which a journal of an older statetool does not name,
	 * would refuse its completion; a stack's side is paired below) */
	if (!src->t.backend && !dst->t.backend) {
		clear_stale(src);
		clear_stale(dst);
	}
	for (int k = 0; k < 2 && rc == EXIT_OK; k++)
		rc = side_store(sides[k], &owned[k], &key[k], &store[k]);
	for (int pass = 0; rc == EXIT_OK && pass < 2; pass++) {
		unsigned flags = pass ? ST_JOURNAL_CLEAN_STAGED : 0;
		for (int k = 0; rc == EXIT_OK && k < 2; k++) {
			st_store *other = store[1 - k];
			side *sd = sides[k];
			int r = sd->t.backend ? st_backend_recover(sd->t.backend, sd->t.qname, &other,
								   1, flags, &ch, &err)
					      : st_journal_recover_key(store[k], key[k], &other, 1,
								       flags, &ch, &err);
			if (r != ST_OK) {
				cli_error(&err);
				rc = EXIT_FAIL;
			}
		}
	}
	if (rc == EXIT_OK)
		rc = unlock_dead(sides, store, key, &ch);
	for (size_t i = 0; i < ch.count; i++)
		printf("%s\n", ch.lines[i]);
	if (rc == EXIT_OK && !ch.count)
		printf("no interrupted move found\n");
	st_changes_clear(&ch);
	for (int k = 0; k < 2; k++) {
		st_store_free(owned[k]);
		free(key[k]);
	}
	return rc;
}

/* What the command line asks for. */
typedef struct args {
	side src, dst;
	const char *backend, *out;
	int dry, json, parents, recov, dups;
	char **patterns;
	int npatterns;
} args;

static int parse(int argc, char **argv, args *a)
{
	static const struct option opts[] = {
		{"source", required_argument, NULL, O_SOURCE},
		{"dest", required_argument, NULL, O_DEST},
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"source-backend", required_argument, NULL, O_SBACKEND},
		{"dest-backend", required_argument, NULL, O_DBACKEND},
		{"source-stack", required_argument, NULL, O_SSTACK},
		{"dest-stack", required_argument, NULL, O_DSTACK},
		{"include-parents", no_argument, NULL, O_PARENTS},
		{"source-passphrase-file", required_argument, NULL, O_SPASS},
		{"dest-passphrase-file", required_argument, NULL, O_DPASS},
		{"recover", no_argument, NULL, O_RECOVER},
		{"dry-run", no_argument, NULL, OPT_DRY_RUN},
		{"json", no_argument, NULL, OPT_JSON},
		{"allow-duplicate-keys", no_argument, NULL, OPT_ALLOW_DUPLICATE_KEYS},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	int c;
	while ((c = cli_getopt(argc, argv, "ho:", opts)) != -1) {
		switch (c) {
		case O_SOURCE: a->src.name = optarg; break;
		case O_DEST: a->dst.name = optarg; break;
		case OPT_BACKEND: a->backend = optarg; break;
		case O_SBACKEND: a->src.backend = optarg; break;
		case O_DBACKEND: a->dst.backend = optarg; break;
		case O_SSTACK: a->src.names = optarg; break;
		case O_DSTACK: a->dst.names = optarg; break;
		case O_PARENTS: a->parents = 1; break;
		case O_SPASS: a->src.passfile = optarg; break;
		case O_DPASS: a->dst.passfile = optarg; break;
		case O_RECOVER: a->recov = 1; break;
		case OPT_DRY_RUN: a->dry = 1; break;
		case OPT_JSON: a->json = 1; break;
		case OPT_ALLOW_DUPLICATE_KEYS: a->dups = 1; break;
		case 'o': a->out = optarg; break;
		case 'h': return cli_help(help);
		default: return cli_usage("move", "bad option");
		}
	}
	if ((a->src.names && !cli_stack_ref_valid(a->src.names)) ||
	    (a->dst.names && !cli_stack_ref_valid(a->dst.names)))
		return EXIT_USAGE;
	if (!a->src.name && !a->dst.name)
		return cli_usage("move", "at least one of --source or --dest must be provided");
	if (a->backend) {
		if (!a->src.backend)
			a->src.backend = a->backend;
		if (!a->dst.backend)
			a->dst.backend = a->backend;
	}
	/* filter mode: one side '-' (a file side, not a stack name) */
	int sin = a->src.name && !strcmp(a->src.name, "-"), din = a->dst.name && !strcmp(a->dst.name, "-");
	if (sin && din)
		return cli_usage("move", "--source and --dest cannot both be standard input");
	if ((sin && a->src.backend) || (din && a->dst.backend))
		return cli_usage("move", "'-' (standard input) is a file side: give the other "
					 "side's backend with --source-backend or --dest-backend");
	if (a->out && (strcmp(a->out, "-") || (!sin && !din)))
		return cli_usage("move", "-o takes '-' only, with a side of '-' (its result goes to "
					 "standard output anyway)");
	if ((sin || din) && a->recov)
		return cli_usage("move", "--recover needs two files or stacks: a side of '-' has "
					 "no journal");
	a->patterns = argv + optind;
	a->npatterns = argc - optind;
	return -1;
}

/* Do the two backends hold the same stacks (their identities: any spelling of one URL)? 1, 0
 * (also when a directory of one is gone: its stacks are no other's), or -1 when an identity
 * fails otherwise (the error printed). */
static int same_backend(st_backend *a, st_backend *b)
{
	char *ia = NULL, *ib = NULL;
	st_error err;
	int rc, same = 0;
	if (!strcmp(st_backend_url(a), st_backend_url(b)))
		return 1;
	st_error_clear(&err);
	if ((rc = st_backend_identity(a, &ia, &err)) == ST_OK &&
	    (rc = st_backend_identity(b, &ib, &err)) == ST_OK)
		same = !strcmp(ia, ib);
	free(ia);
	free(ib);
	if (rc != ST_OK && rc != ST_ENOTFOUND) {
		cli_error(&err);
		return -1;
	}
	return same;
}

/* Do the two sides name the same stack or file? The same stack of one backend (by the
 * backends' identities), or the same object (a local file by its inode). -1: an identity
 * failed (same_backend). */
static int same_target(const side *a, const side *b)
{
	const char *wa = cli_target_where(&a->t), *wb = cli_target_where(&b->t);
	struct stat sa, sb;
	int same;
	if (a->t.backend && b->t.backend && !strcmp(a->t.qname, b->t.qname) &&
	    (same = same_backend(a->t.backend, b->t.backend)))
		return same;
	if (!wa || !wb)
		return 0;
	if (!strcmp(wa, wb))
		return 1;
	return stat(wa, &sa) == 0 && stat(wb, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* The names a side's place gives, when no --*-stack names it: a stack of a backend is where
 * it lies (what its checkpoint says must agree: cli_refuse_misplaced), a file by its path
 * inside a DIY backend. New or NULL. */
static char *names_of_path(side *sd)
{
	char *stack = NULL, *project = NULL, *names = NULL, buf[256];
	if (sd->names)
		return NULL;
	if (sd->t.backend)
		return cli_target_names(&sd->t, buf, sizeof(buf)) ? strdup(buf) : NULL;
	if (!sd->t.path || st_stack_names(sd->s, NULL, sd->t.path, &stack, &project, NULL) != ST_OK)
		return NULL;
	if (asprintf(&names, "%s/%s", project, stack) < 0)
		names = NULL;
	free(stack);
	free(project);
	return names;
}

/* The move in the two sessions; when secrets must be re-encrypted, again with both sides'
 * secrets managers. */
static int run_move(args *a, st_move_opts *mo, st_move_report *rep, st_secrets **ssec,
		    st_secrets **dsec)
{
	st_error err;
	int rc;
	st_error_clear(&err);
	rc = st_edit_move(a->src.e, a->dst.e, mo, rep, &err);
	if (rc == ST_EPASSPHRASE && rep->needs_secrets) {
		json_t *ddep = st_state_deployment(a->dst.s);
		int dest_has = ddep && json_object_get(ddep, "secrets_providers");
		st_move_report_clear(rep);
		st_error_clear(&err);
		if ((rc = side_secrets(&a->src, "SOURCE", ssec)) != EXIT_OK ||
		    (rc = dest_has ? side_secrets(&a->dst, "DEST", dsec)
				   : dest_new_secrets(&a->dst, dsec)) != EXIT_OK)
			return rc;
		mo->source_secrets = *ssec;
		mo->dest_secrets = *dsec;
		rc = st_edit_move(a->src.e, a->dst.e, mo, rep, &err);
	}
	for (size_t i = 0; i < rep->warnings.count; i++)
		cli_warnf("%s", rep->warnings.lines[i]);
	if (rc != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static void print_plan(args *a, st_move_report *rep)
{
	char head[1024];
	printf("Planning to move the following resources from %s to %s:\n\n",
	       side_label(&a->src), side_label(&a->dst));
	for (size_t i = 0; i < rep->nmoved; i++)
		printf("  - %s\n", rep->moved_urns[i]);
	printf("\n");
	if (rep->plan.count) {
		printf("statetool will also:\n\n");
		for (size_t i = 0; i < rep->plan.count; i++)
			printf("  - %s\n", rep->plan.lines[i]);
		printf("\n");
	}
	snprintf(head, sizeof(head),
		 "The following resources remaining in %s have dependencies on resources moved "
		 "to %s:",
		 side_label(&a->src), side_label(&a->dst));
	print_section(head, &rep->broken_source);
	snprintf(head, sizeof(head),
		 "The following resources being moved to %s have dependencies on resources in %s:",
		 side_label(&a->dst), side_label(&a->src));
	print_section(head, &rep->broken_dest);
	if (rep->broken_source.count || rep->broken_dest.count)
		printf("If you go ahead with moving these dependencies, it will be necessary to "
		       "create the appropriate inputs and outputs in the program for the stack the "
		       "resources are moved to.\n\n");
}

static void print_outcome(args *a, st_move_report *rep)
{
	if (a->json) {
		json_t *doc = json_object(), *mv = json_array();
		json_object_set_new(doc, "format_version", json_integer(CLI_JSON_FORMAT));
		json_object_set_new(doc, "source", json_string(side_label(&a->src)));
		json_object_set_new(doc, "dest", json_string(side_label(&a->dst)));
		json_object_set_new(doc, "dry_run", json_boolean(a->dry));
		json_object_set_new(doc, "written", json_boolean(!a->dry));
		if (a->src.t.locked || a->dst.t.locked)
			json_object_set_new(doc, "locked",
					    json_pack("{s:s?,s:s?}", "source", a->src.t.locked,
						      "dest", a->dst.t.locked));
		for (size_t i = 0; i < rep->nmoved; i++)
			json_array_append_new(mv, json_string(rep->moved_urns[i]));
		json_object_set_new(doc, "moved", mv);
		json_object_set_new(doc, "plan", lines_json(&rep->plan));
		json_object_set_new(doc, "broken_source", lines_json(&rep->broken_source));
		json_object_set_new(doc, "broken_dest", lines_json(&rep->broken_dest));
		cli_print_json(doc);
		json_decref(doc);
	} else if (a->dry) {
		printf("dry run: nothing written\n");
	} else {
		printf("Successfully moved resources from %s to %s\n", side_label(&a->src),
		       side_label(&a->dst));
	}
}

/* A move with a side in Pulumi Cloud: both sessions checked as one, then the destination
 * (which gains the resources) written, then the source (which loses them); the service's
 * import has no staging a journal could use, so an interruption between the two writes leaves
 * the resources in both states, never in neither. A failure of the first write changes
 * nothing; of the second, says what is where. */
static int commit_cloud(args *a)
{
	st_problems probs = {0};
	st_error err;
	int rc;

	st_error_clear(&err);
	rc = st_edit_commit_pair(a->dst.e, a->src.e, NULL, NULL, NULL, NULL, &probs, &err);
	if (rc != ST_OK) {
		cli_error(&err);
		for (size_t i = 0; i < probs.count; i++)
			cli_problem(&probs.items[i]);
		st_problems_clear(&probs);
		return EXIT_FAIL;
	}
	st_problems_clear(&probs);
	if (a->dry)
		return EXIT_OK;
	if (cli_save(&a->dst.t, a->dst.s, &rc) != EXIT_OK) {
		st_edit_rollback(a->dst.e);
		st_edit_rollback(a->src.e);
		if (rc == ST_EOUTCOME)
			cli_errorf("'%s' is as it was, and whether the resources reached '%s' is not "
				   "known: if they are there (statetool list), remove them from '%s' "
				   "(statetool delete)",
				   side_label(&a->src), side_label(&a->dst), side_label(&a->src));
		else
			cli_errorf("nothing was moved: '%s' and '%s' are as they were",
				   side_label(&a->dst), side_label(&a->src));
		return EXIT_FAIL;
	}
	if (cli_save(&a->src.t, a->src.s, &rc) != EXIT_OK) {
		if (rc == ST_EOUTCOME)
			cli_errorf("the resources were written to '%s', and whether they were removed "
				   "from '%s' is not known: if they are still there (statetool list), "
				   "remove them from '%s' (statetool delete)",
				   side_label(&a->dst), side_label(&a->src), side_label(&a->src));
		else
			cli_errorf("the resources were written to '%s' but could not be removed from "
				   "'%s': they are in both now; remove them from '%s' (statetool "
				   "delete) once it can be written",
				   side_label(&a->dst), side_label(&a->src), side_label(&a->src));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* The destination, then the source, written through the two-stack journal to where
 * pair_target put them (ctx: the two sides, destination first). */
static int write_pair(void *ctx, st_state *dst, st_state *src, st_error *err)
{
	const st_pair_side *to = ctx;
	st_pair_side A = to[0], B = to[1];
	A.state = dst;
	B.state = src;
	return st_journal_save("move", &A, &B, err);
}

/* A move that failed after its commit point (a journal written) is not undone but finished:
 * the destination holds the resources and the source may still hold them. Says so. */
static void say_committed(const st_pair_side to[2])
{
	if (!st_journal_pending_key(to[0].store, to[0].key) &&
	    !st_journal_pending_key(to[1].store, to[1].key))
		return;
	fprintf(stderr,
		"%s: note: the move is committed but not finished: `statetool move --recover` "
		"with the same --source and --dest (and backends), or any statetool command on "
		"either stack, completes it\n",
		cli_prog);
}

/* Both sessions committed as one: checked, then (not on a dry run) written; a failure rolls
 * both back. */
static int commit(args *a)
{
	st_problems probs = {0};
	st_pair_side to[2];
	st_store *owned[2] = {NULL, NULL};
	char *key[2] = {NULL, NULL}, *old[2] = {NULL, NULL};
	st_error err;
	int rc = ST_OK;
	st_error_clear(&err);
	/* a side in Pulumi Cloud or on a pipe ('-'): no journal, the destination first */
	if (cli_target_is_cloud(&a->src.t) || cli_target_is_cloud(&a->dst.t) ||
	    a->src.t.filter || a->dst.t.filter)
		return commit_cloud(a);
	/* each side where it goes: a stack as its backend saves it, in one store or two */
	if (!a->dry && (pair_target(&a->dst, &to[0], &owned[0], &key[0], &old[0]) != EXIT_OK ||
			pair_target(&a->src, &to[1], &owned[1], &key[1], &old[1]) != EXIT_OK)) {
		rc = EXIT_FAIL;
		goto out;
	}
	/* a stack's state before and after the move stays a generation (statetool(1),
	 * GENERATIONS); what is there before is kept unless the newest backup holds it */
	for (int k = 0; !a->dry && rc == ST_OK && k < 2; k++) {
		side *sd = k ? &a->src : &a->dst;
		if (sd->t.backend && st_backend_store(sd->t.backend) && sd->t.exists &&
		    (rc = st_backend_keep_generation(sd->t.backend, sd->t.qname, &err)) == ST_ENOTFOUND) {
			rc = ST_OK;
			st_error_clear(&err);
		}
	}
	if (rc == ST_OK)
		rc = st_edit_commit_pair(a->dst.e, a->src.e, a->dry ? NULL : write_pair, to, NULL,
					 NULL, &probs, &err);
	for (int k = 0; !a->dry && rc == ST_OK && k < 2; k++) {
		side *sd = k ? &a->src : &a->dst;
		if (sd->t.backend && st_backend_store(sd->t.backend)) /* named by the save's time */
			rc = st_backend_keep_saved_generation(sd->t.backend, sd->t.qname, &err);
	}
	if (rc != ST_OK) {
		cli_error(&err);
		for (size_t i = 0; i < probs.count; i++)
			cli_problem(&probs.items[i]);
		if (!a->dry)
			say_committed(to);
	}
	st_problems_clear(&probs);
out:
	for (int k = 0; k < 2; k++) {
		st_store_free(owned[k]);
		free(key[k]);
		free(old[k]);
	}
	return rc == ST_OK ? EXIT_OK : EXIT_FAIL;
}

/* Locks (not on a dry run), loads and opens a session on both sides. */
static int open_sides(args *a)
{
	st_error err;
	int rc;
	st_error_clear(&err);
	if (!a->src.t.exists) {
		cli_errorc("not-found", "the source '%s' does not exist", side_label(&a->src));
		return EXIT_FAIL;
	}
	/* a store with no .pulumi is no backend to start (see BACKENDS in the manual) */
	if (a->dst.t.backend && !st_backend_present(a->dst.t.backend)) {
		cli_errorc("not-found", "no Pulumi backend at '%s': it has no .pulumi directory (a "
					"mistyped path?)",
			   st_backend_url(a->dst.t.backend));
		return EXIT_FAIL;
	}
	if (a->dry) {
		cli_dry_lock(&a->src.t);
		cli_dry_lock(&a->dst.t);
	} else if ((!a->src.t.filter && (rc = cli_lock(&a->src.t, &a->src.lock)) != EXIT_OK) ||
		   (!a->dst.t.filter && (rc = cli_lock(&a->dst.t, &a->dst.lock)) != EXIT_OK)) {
		return rc;
	}
	if ((rc = load_side(&a->src, a->dups)) != EXIT_OK ||
	    (rc = load_side(&a->dst, a->dups)) != EXIT_OK)
		return rc;
	if (st_edit_begin(&a->src.e, a->src.s, NULL, &err) != ST_OK ||
	    st_edit_begin(&a->dst.e, a->dst.s, NULL, &err) != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static void close_side(side *sd)
{
	st_edit_free(sd->e);
	cli_unlock(&sd->t, sd->lock);
	cli_state_done(sd->s);
	cli_target_free(&sd->t);
}

static int do_move(args *a)
{
	st_move_opts mo = ST_MOVE_OPTS_INIT;
	st_move_report rep = {0};
	st_secrets *ssec = NULL, *dsec = NULL;
	char *snames = NULL, *dnames = NULL;
	int rc;

	if (!a->npatterns)
		return cli_usage("move", "missing RESOURCE (an exact URN or a glob)");
	if ((rc = same_target(&a->src, &a->dst)) < 0)
		return EXIT_FAIL;
	if (rc)
		return cli_usage("move", "the source and the destination are the same %s (%s): a "
				 "move needs two different stacks",
				 a->src.t.backend ? "stack" : "file", side_label(&a->src));
	if ((rc = open_sides(a)) != EXIT_OK)
		return rc;
	snames = names_of_path(&a->src);
	dnames = names_of_path(&a->dst);
	mo.patterns = (const char *const *)a->patterns;
	mo.npatterns = (size_t)a->npatterns;
	mo.include_parents = a->parents;
	mo.source_stack = a->src.names ? a->src.names : snames;
	mo.dest_stack = a->dst.names ? a->dst.names : dnames;
	if ((rc = run_move(a, &mo, &rep, &ssec, &dsec)) == EXIT_OK) {
		if (!a->json)
			print_plan(a, &rep);
		if ((rc = commit(a)) == EXIT_OK)
			print_outcome(a, &rep);
	}
	st_move_report_clear(&rep);
	st_secrets_free(ssec);
	st_secrets_free(dsec);
	free(snames);
	free(dnames);
	return rc;
}

int cmd_move(int argc, char **argv)
{
	args a;
	int rc;

	memset(&a, 0, sizeof(a));
	if ((rc = parse(argc, argv, &a)) != -1)
		return rc;
	if ((rc = resolve_side(&a.src, "source")) == EXIT_OK &&
	    (rc = resolve_side(&a.dst, "dest")) == EXIT_OK) {
		if (a.recov)
			rc = a.npatterns ? cli_usage("move", "--recover takes no RESOURCE")
					 : recover(&a.src, &a.dst);
		else
			rc = do_move(&a);
	}
	close_side(&a.src);
	close_side(&a.dst);
	return rc;
}
