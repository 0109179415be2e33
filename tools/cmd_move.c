/* statetool move: resources from one stack (or file) to another, crash-safe. */
#include "cli.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help[] =
	"usage: statetool move [options] --source SRC --dest DST RESOURCE...\n"
	"       statetool move --recover --source SRC --dest DST\n"
	"\n"
	"Move resources from SRC to DST with the semantics of `pulumi state move`. SRC and DST\n"
	"are state files, or stacks of DIY backends: with --backend DIR (both sides) or\n"
	"--source-backend/--dest-backend (each side), SRC and DST are stack names. DST may\n"
	"not exist yet. RESOURCE is an exact URN or a glob ('urn:pulumi:dev::app::aws:s3/\n"
	"bucket:Bucket::*').\n"
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
	"    differ; a destination without one takes the source's\n"
	"\n"
	"The plan is printed before anything is written; --dry-run stops there. Both results\n"
	"must pass the integrity checks. Both stacks are locked for the whole move; the two\n"
	"writes go through a journal (staged files, then a journal beside each file, then\n"
	"the destination, then the source), so after a crash at any point `statetool move\n"
	"--recover` (or any statetool command on either file) completes the move.\n"
	"\n"
	"A stack's name and project come from --source-stack/--dest-stack PROJECT/STACK, else\n"
	"the checkpoint's `stack`, else the file's place in a DIY backend, else the URNs.\n"
	"\n"
	"Passphrases (when secrets must be re-encrypted), never from the command line:\n"
	"  source: STATETOOL_SOURCE_PASSPHRASE, STATETOOL_SOURCE_PASSPHRASE_FILE,\n"
	"          --source-passphrase-file, then PULUMI_CONFIG_PASSPHRASE(_FILE), a prompt\n"
	"  dest:   STATETOOL_DEST_PASSPHRASE, STATETOOL_DEST_PASSPHRASE_FILE,\n"
	"          --dest-passphrase-file, then PULUMI_CONFIG_PASSPHRASE(_FILE), a prompt\n"
	"\n"
	"Options:\n"
	"  --source SRC, --dest DST     the two sides (files, or stack names with a backend)\n"
	"  --backend DIR                the backend of both sides\n"
	"  --source-backend DIR, --dest-backend DIR   the backend of one side\n"
	"  --source-stack P/S, --dest-stack P/S       the project and stack a side belongs to\n"
	"  --include-parents            also move the ancestors of the selected resources\n"
	"  --source-passphrase-file F, --dest-passphrase-file F\n"
	"  --dry-run                    print the plan and write nothing\n"
	"  --json                       the plan and outcome as one JSON document\n"
	"  --recover                    complete an interrupted move of SRC and DST\n"
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
	int created;
} side;

static int resolve_side(side *sd, const char *what)
{
	memset(&sd->t, 0, sizeof(sd->t));
	if (!sd->name)
		return cli_usage("move", "missing --%s", what);
	if (sd->backend) {
		sd->t.backend_url = sd->backend;
		sd->t.stack = sd->name;
	} else {
		sd->t.arg = sd->name;
	}
	return cli_target_resolve(&sd->t, "move", 0);
}

static const char *side_label(side *sd)
{
	return sd->backend ? sd->name : sd->t.path;
}

/* A passphrase for one side: its own variables first, then Pulumi's. */
static int side_secrets(side *sd, const char *prefix, st_secrets **out)
{
	json_t *dep = st_state_deployment(sd->s);
	json_t *sp = dep ? json_object_get(dep, "secrets_providers") : NULL;
	const char *type = json_string_value(json_object_get(sp, "type"));
	char env[64], envf[64], prompt[96], *pass = NULL;
	size_t len = 0;
	st_error err;
	int rc;

	st_error_clear(&err);
	*out = NULL;
	if (!type)
		return EXIT_OK;
	if (!strcmp(type, "passphrase")) {
		snprintf(env, sizeof(env), "STATETOOL_%s_PASSPHRASE", prefix);
		snprintf(envf, sizeof(envf), "STATETOOL_%s_PASSPHRASE_FILE", prefix);
		snprintf(prompt, sizeof(prompt), "Enter the %s stack's passphrase: ",
			 prefix[0] == 'S' ? "source" : "destination");
		if (getenv(env) || getenv(envf) || sd->passfile)
			rc = cli_passphrase(env, envf, sd->passfile, prompt, 0, &pass, &len);
		else
			rc = cli_passphrase("PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE",
					    NULL, prompt, 0, &pass, &len);
		if (rc != EXIT_OK)
			return rc;
	}
	rc = st_secrets_open(out, sp, pass, len, &err);
	cli_passphrase_free(pass);
	if (rc) {
		fprintf(stderr, "statetool: error: %s stack: %s\n",
			prefix[0] == 'S' ? "source" : "destination", err.message);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static int load_side(side *sd, int allow_dups)
{
	st_error err;
	st_error_clear(&err);
	if (sd->t.exists) {
		int rc = cli_load(&sd->t, &sd->s);
		return rc ? rc : cli_refuse_lossy(sd->s, side_label(sd), allow_dups);
	}
	/* a new destination */
	if (st_state_new(&sd->s, &err) != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	sd->created = 1;
	if (sd->backend) {
		char *qn = NULL;
		const char *p = strstr(sd->t.path, "/.pulumi/stacks/");
		if (p) {
			const char *proj = p + 16, *sl = strchr(proj, '/');
			if (sl && asprintf(&qn, "organization/%.*s/%.*s", (int)(sl - proj), proj,
					   (int)(strlen(sl + 1) - 5), sl + 1) < 0)
				qn = NULL;
		}
		if (st_state_set_envelope(sd->s, ST_ENVELOPE_CHECKPOINT, qn ? qn : sd->name, &err)) {
			free(qn);
			cli_error(&err);
			return EXIT_FAIL;
		}
		free(qn);
	}
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

static int recover(side *src, side *dst)
{
	st_changes ch = {0};
	st_error err;
	int rc = EXIT_OK, any = 0;
	st_error_clear(&err);
	clear_stale(src);
	clear_stale(dst);
	side *sides[2] = {dst, src};
	for (int k = 0; k < 2; k++) {
		if (st_journal_pending(sides[k]->t.path, NULL)) {
			any = 1;
			if (st_journal_recover(sides[k]->t.path, &ch, &err) != ST_OK) {
				cli_error(&err);
				rc = EXIT_FAIL;
				break;
			}
		}
		/* staged leftovers of a move that crashed before its journal: nothing was committed */
		char *staged = NULL;
		if (asprintf(&staged, "%s.statetool-new", sides[k]->t.path) < 0)
			staged = NULL;
		if (staged && access(staged, F_OK) == 0 && !st_journal_pending(sides[k]->t.path, NULL)) {
			unlink(staged);
			st_changes_add(&ch, "removed %s (a move that crashed before it was committed; "
				       "nothing had changed)", staged);
			any = 1;
		}
		free(staged);
	}
	for (size_t i = 0; i < ch.count; i++)
		printf("%s\n", ch.lines[i]);
	if (!any)
		printf("no interrupted move found\n");
	st_changes_clear(&ch);
	return rc;
}

int cmd_move(int argc, char **argv)
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
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	side src = {0}, dst = {0};
	const char *backend = NULL;
	int c, dry = 0, json = 0, parents = 0, recov = 0, dups = 0, rc;
	st_move_opts mo = ST_MOVE_OPTS_INIT;
	st_move_report rep = {0};
	st_secrets *ssec = NULL, *dsec = NULL;
	st_error err;

	st_error_clear(&err);
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_SOURCE: src.name = optarg; break;
		case O_DEST: dst.name = optarg; break;
		case OPT_BACKEND: backend = optarg; break;
		case O_SBACKEND: src.backend = optarg; break;
		case O_DBACKEND: dst.backend = optarg; break;
		case O_SSTACK: src.names = optarg; break;
		case O_DSTACK: dst.names = optarg; break;
		case O_PARENTS: parents = 1; break;
		case O_SPASS: src.passfile = optarg; break;
		case O_DPASS: dst.passfile = optarg; break;
		case O_RECOVER: recov = 1; break;
		case OPT_DRY_RUN: dry = 1; break;
		case OPT_JSON: json = 1; break;
		case OPT_ALLOW_DUPLICATE_KEYS: dups = 1; break;
		case 'h': return cli_help(help);
		default: return cli_usage("move", "bad option");
		}
	}
	if (!src.name && !dst.name)
		return cli_usage("move", "at least one of --source or --dest must be provided");
	if (backend) {
		if (!src.backend)
			src.backend = backend;
		if (!dst.backend)
			dst.backend = backend;
	}
	if ((rc = resolve_side(&src, "source")) != EXIT_OK ||
	    (rc = resolve_side(&dst, "dest")) != EXIT_OK)
		goto out;
	if (recov) {
		if (optind < argc) {
			rc = cli_usage("move", "--recover takes no RESOURCE");
			goto out;
		}
		rc = recover(&src, &dst);
		goto out;
	}
	if (optind == argc) {
		rc = cli_usage("move", "missing RESOURCE (an exact URN or a glob)");
		goto out;
	}
	if (!src.t.exists) {
		cli_errorf("the source '%s' does not exist", side_label(&src));
		rc = EXIT_FAIL;
		goto out;
	}
	if (!dry && ((rc = cli_lock(&src.t, &src.lock)) != EXIT_OK ||
		     (rc = cli_lock(&dst.t, &dst.lock)) != EXIT_OK))
		goto out;
	if ((rc = load_side(&src, dups)) != EXIT_OK || (rc = load_side(&dst, dups)) != EXIT_OK)
		goto out;
	mo.patterns = (const char *const *)(argv + optind);
	mo.npatterns = (size_t)(argc - optind);
	mo.include_parents = parents;
	mo.source_stack = src.names;
	mo.dest_stack = dst.names;
	rc = st_move(src.s, src.t.path, dst.s, dst.t.path, &mo, &rep, &err);
	if (rc == ST_EPASSPHRASE && rep.needs_secrets) {
		st_move_report_clear(&rep);
		st_error_clear(&err);
		if ((rc = side_secrets(&src, "SOURCE", &ssec)) != EXIT_OK ||
		    (rc = side_secrets(&dst, "DEST", &dsec)) != EXIT_OK)
			goto out;
		mo.source_secrets = ssec;
		mo.dest_secrets = dsec;
		rc = st_move(src.s, src.t.path, dst.s, dst.t.path, &mo, &rep, &err);
	}
	for (size_t i = 0; i < rep.warnings.count; i++)
		cli_warnf("%s", rep.warnings.lines[i]);
	if (rc != ST_OK) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto out;
	}
	if (!json) {
		char head[1024];
		printf("Planning to move the following resources from %s to %s:\n\n",
		       side_label(&src), side_label(&dst));
		for (size_t i = 0; i < rep.nmoved; i++)
			printf("  - %s\n", rep.moved_urns[i]);
		printf("\n");
		if (rep.plan.count) {
			printf("statetool will also:\n\n");
			for (size_t i = 0; i < rep.plan.count; i++)
				printf("  - %s\n", rep.plan.lines[i]);
			printf("\n");
		}
		snprintf(head, sizeof(head),
			 "The following resources remaining in %s have dependencies on resources "
			 "moved to %s:",
			 side_label(&src), side_label(&dst));
		print_section(head, &rep.broken_source);
		snprintf(head, sizeof(head),
			 "The following resources being moved to %s have dependencies on resources "
			 "in %s:",
			 side_label(&dst), side_label(&src));
		print_section(head, &rep.broken_dest);
		if (rep.broken_source.count || rep.broken_dest.count)
			printf("If you go ahead with moving these dependencies, it will be necessary "
			       "to create the appropriate inputs and outputs in the program for the "
			       "stack the resources are moved to.\n\n");
	}
	if (!dry) {
		if (st_state_save_pair("move", dst.s, dst.t.path, src.s, src.t.path, &err) !=
		    ST_OK) {
			cli_error(&err);
			rc = EXIT_FAIL;
			goto out;
		}
	}
	if (json) {
		json_t *doc = json_object(), *mv = json_array();
		json_object_set_new(doc, "format_version", json_integer(CLI_JSON_FORMAT));
		json_object_set_new(doc, "source", json_string(side_label(&src)));
		json_object_set_new(doc, "dest", json_string(side_label(&dst)));
		json_object_set_new(doc, "dry_run", json_boolean(dry));
		json_object_set_new(doc, "written", json_boolean(!dry));
		for (size_t i = 0; i < rep.nmoved; i++)
			json_array_append_new(mv, json_string(rep.moved_urns[i]));
		json_object_set_new(doc, "moved", mv);
		json_object_set_new(doc, "plan", lines_json(&rep.plan));
		json_object_set_new(doc, "broken_source", lines_json(&rep.broken_source));
		json_object_set_new(doc, "broken_dest", lines_json(&rep.broken_dest));
		cli_print_json(doc);
		json_decref(doc);
	} else if (dry) {
		printf("dry run: nothing written\n");
	} else {
		printf("Successfully moved resources from %s to %s\n", side_label(&src),
		       side_label(&dst));
	}
	rc = EXIT_OK;
out:
	st_move_report_clear(&rep);
	st_secrets_free(ssec);
	st_secrets_free(dsec);
	if (src.lock)
		st_lock_release(src.lock, NULL);
	if (dst.lock)
		st_lock_release(dst.lock, NULL);
	cli_state_done(src.s);
	cli_state_done(dst.s);
	cli_target_free(&src.t);
	cli_target_free(&dst.t);
	return rc;
}
