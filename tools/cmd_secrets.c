/* statetool secrets show|verify|encrypt|rekey. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char help[] =
	"usage: statetool secrets show [options] STATE [RESOURCE] [-o FILE]\n"
	"       statetool secrets verify [options] STATE [--stack-config FILE]\n"
	"       statetool secrets encrypt [options] STATE\n"
	"       statetool secrets rekey [options] STATE [--stack-config FILE]\n"
	"\n"
	"  show     print the state (or one resource) with every secret decrypted, as\n"
	"           `pulumi stack export --show-secrets` does; to standard output only,\n"
	"           never to a file unless -o FILE is given\n"
	"  verify   decrypt every secret without printing any; report each that fails, by\n"
	"           URN and JSON Pointer (exit 1 when one fails)\n"
	"  encrypt  turn `plaintext` secrets (e.g. after a hand edit) into ciphertext under the\n"
	"           stack's secrets provider; existing ciphertexts are kept as they are\n"
	"  rekey    re-encrypt every secret under a new passphrase and a new salt, and print\n"
	"           the new `encryptionsalt:` line; with --stack-config Pulumi.<stack>.yaml\n"
	"           also rewrite that file's encryptionsalt and its `secure` values (read\n"
	"           as YAML, opened with the file's own encryptionsalt, rewritten in place\n"
	"           in their style) and remove its secretsprovider and encryptedkey lines,\n"
	"           as Pulumi does; a key given twice in one mapping is refused, as Pulumi\n"
	"           refuses the file. The new config is written beside it first, as\n"
	"           FILE.statetool-rekey (its mode, synced), then the state, then it is\n"
	"           renamed over FILE (the old one kept as FILE.bak): after a crash, the\n"
	"           next rekey, show or verify with --stack-config FILE finishes the pair\n"
	"           (the staged file's encryptionsalt is the state's: it is renamed into\n"
	"           place, both then open with the new passphrase) or drops the staged\n"
	"           file (the state was not written: FILE is unchanged, and a rekey with\n"
	"           the old passphrase goes on as usual); with FILE gone it is refused,\n"
	"           and so is a staged file met by a run without the lock (--dry-run).\n"
	"           A rekey without --stack-config does not look for a staged config\n"
	"\n"
	"Passphrase (never from the command line), first found wins:\n"
	"  PULUMI_CONFIG_PASSPHRASE (set, even empty), PULUMI_CONFIG_PASSPHRASE_FILE,\n"
	"  --passphrase-file FILE (trimmed; an empty file is the empty passphrase), then a\n"
	"  no-echo prompt on a terminal.\n"
	"New passphrase for rekey, likewise: PULUMI_CONFIG_PASSPHRASE_NEW,\n"
	"  PULUMI_CONFIG_PASSPHRASE_NEW_FILE, --new-passphrase-file FILE, a prompt (twice).\n"
	"A wrong passphrase is reported before anything else happens, and nothing is written.\n"
	"\n"
	"Options:\n"
	"  --passphrase-file FILE       the stack's passphrase\n"
	"  --new-passphrase-file FILE   rekey: the new passphrase\n"
	"  --stack-config FILE          rekey: the stack's Pulumi.<stack>.yaml to rewrite;\n"
	"                               show, verify: also decrypt its secure values (with\n"
	"                               its own encryptionsalt), after a staged config an\n"
	"                               interrupted rekey left is finished or dropped\n"
	"  -o, --output FILE            show: write to FILE (mode 0600, also over an existing\n"
	"                               file; never the state, its .bak or a file inside a\n"
	"                               backend's .pulumi) instead of stdout;\n"
	"                               encrypt, rekey: only '-' (the result to stdout)\n"
	"  --json                       verify and the mutating ones: one JSON document\n"
	"encrypt and rekey take the options of every mutating command:\n" CLI_MUTATE_HELP;

enum { OPT_PASSFILE = 4000, OPT_NEWPASSFILE, OPT_STACK_CONFIG };

typedef struct ctx {
	const char *passfile, *newpassfile, *config, *output;
	cli_mutate_opts *mo;
	st_secrets *from, *to;
	st_secrets *config_from; /* rekey: the config's own key (its encryptionsalt), or NULL */
	unsigned config_other;   /* rekey: ST_CONFIG_* lines the rewrite removes */
	char *config_text; /* rekey: --stack-config's new text, made before the state is saved */
	size_t config_len;
	size_t config_count;
	int staged, saved; /* rekey: the new config staged; the state written */
	const cli_target *t; /* encrypt: the state written, and how many secrets were plaintext */
	size_t encrypted;
} ctx;

static int extra(int opt, const char *arg, void *p)
{
	ctx *c = p;
	switch (opt) {
	case OPT_PASSFILE: c->passfile = arg; return 0;
	case OPT_NEWPASSFILE: c->newpassfile = arg; return 0;
	case OPT_STACK_CONFIG: c->config = arg; return 0;
	case 'o': c->output = arg; return 0;
	default: return -1;
	}
}

static const struct option extra_opts[] = {
	{"passphrase-file", required_argument, NULL, OPT_PASSFILE},
	{"new-passphrase-file", required_argument, NULL, OPT_NEWPASSFILE},
	{"stack-config", required_argument, NULL, OPT_STACK_CONFIG},
	{"output", required_argument, NULL, 'o'},
	{NULL, 0, NULL, 0}};

static int run_encrypt(st_edit *e, st_state *s, void *arg, st_error *err)
{
	ctx *c = arg;
	size_t n = 0;
	size_t plain = 0;
	st_secrets_count(s, NULL, &plain);
	int rc = cli_open_secrets(s, c->passfile, plain > 0, &c->from);
	if (rc != EXIT_OK)
		return rc;
	rc = st_edit_secrets_encrypt(e, c->from, &n, err);
	if (rc == ST_OK)
		snprintf(c->mo->summary, sizeof(c->mo->summary), "%zu secret%s encrypted", n,
			 n == 1 ? "" : "s");
	c->encrypted = n;
	return rc;
}

/* The version encrypt replaced still holds its plaintext secrets, as the .bak every change
 * keeps (and, in a backend, as a generation): a local .bak is made 0600, and the copies are
 * named so that they can be removed once the encrypted state is checked. */
static int encrypt_saved(void *arg)
{
	ctx *c = arg;
	const char *where = c->t->filter ? NULL : cli_target_where(c->t);
	char *bak = NULL;
	int local;

	if (!c->encrypted || !where || asprintf(&bak, "%s.bak", where) < 0)
		return EXIT_OK;
	local = chmod(bak, 0600) == 0;
	if (c->t->backend)
		fprintf(stderr,
			"%s: warning: the version before, with %zu plaintext secret%s, is kept as "
			"the stack's .bak%s and as a generation (`statetool history`): remove them "
			"once the encrypted state is checked\n",
			cli_prog, c->encrypted, c->encrypted == 1 ? "" : "s",
			local ? " (made 0600)" : "");
	else
		fprintf(stderr,
			"%s: warning: the version before, with %zu plaintext secret%s, is kept as "
			"'%s'%s: remove it once the encrypted state is checked\n",
			cli_prog, c->encrypted, c->encrypted == 1 ? "" : "s", bak,
			local ? " (made 0600)" : "");
	free(bak);
	return EXIT_OK;
}

/* --stack-config read and rekeyed in memory before the state changes: a missing or unreadable
 * file, or a secure value that does not decrypt, stops the command with nothing written. The
 * config's values are opened with the key of its own encryptionsalt, as Pulumi opens them. */
static int prepare_config(ctx *c, st_state *s, st_error *err)
{
	char *text = NULL, *salt = NULL;
	size_t len = 0;
	int done, rc = cli_rekey_resolve(c->config, s, c->t, !c->mo->dry_run, &done);

	if (rc != EXIT_OK)
		return rc;
	rc = st_file_read(c->config, 16 << 20, &text, &len, NULL, err);
	if (rc == ST_OK)
		rc = st_config_scan(text, len, c->config, &salt, &c->config_other, err);
	if (rc == ST_OK) {
		cli_config_key ck = {c->config, salt, NULL};
		rc = cli_open_secrets_pair(s, c->passfile, c->newpassfile, &ck, &c->from, &c->to);
		c->config_from = ck.out;
	}
	if (rc == ST_OK)
		rc = st_config_rekey_text(text, len, c->config,
					  c->config_from ? c->config_from : c->from, c->to,
					  &c->config_text, &c->config_len, &c->config_count, err);
	free(salt);
	st_secret_free(text, len); /* ciphertexts only, wiped as st_config_rekey wipes them */
	/* staged before the state is written, renamed into place after (rekey_config) */
	if (rc == ST_OK && !c->mo->dry_run) {
		if ((rc = cli_rekey_stage(c->config, c->config_text, c->config_len)) == EXIT_OK)
			c->staged = 1;
		cli_crash_point("rekey", 1); /* the config staged, the state not yet written */
	}
	return rc;
}

static int run_rekey(st_edit *e, st_state *s, void *arg, st_error *err)
{
	ctx *c = arg;
	size_t n = 0;
	int rc = c->config ? prepare_config(c, s, err)
			   : cli_open_secrets_pair(s, c->passfile, c->newpassfile, NULL, &c->from,
						   &c->to);
	if (rc != ST_OK)
		return rc;
	rc = st_edit_secrets_rekey(e, c->from, c->to, &n, err);
	if (rc == ST_OK)
		snprintf(c->mo->summary, sizeof(c->mo->summary),
			 "%zu secret%s re-encrypted\nencryptionsalt: %s", n, n == 1 ? "" : "s",
			 st_secrets_encryptionsalt(c->to));
	return rc;
}

static int rekey_config(void *arg)
{
	ctx *c = arg;
	size_t n = c->config_count;
	c->saved = 1;
	if (!c->config_text)
		return EXIT_OK;
	if (cli_rekey_commit(c->config) != EXIT_OK) {
		cli_errorf("the state was rekeyed but '%s' was not: its new version is staged as "
			   "'%s.statetool-rekey', which the next `secrets rekey`, `show` or `verify` "
			   "with --stack-config '%s' puts in place",
			   c->config, c->config, c->config);
		return EXIT_FAIL;
	}
	if (!c->mo->json) {
		unsigned o = c->config_other;
		printf("%s: encryptionsalt and %zu secure value%s rewritten\n", c->config, n,
		       n == 1 ? "" : "s");
		if (o)
			printf("%s: %s%s%s removed: the passphrase provider replaces them, as Pulumi "
			       "does\n",
			       c->config, o & ST_CONFIG_SECRETSPROVIDER ? "secretsprovider" : "",
			       o == (ST_CONFIG_SECRETSPROVIDER | ST_CONFIG_ENCRYPTEDKEY) ? " and " : "",
			       o & ST_CONFIG_ENCRYPTEDKEY ? "encryptedkey" : "");
	}
	return EXIT_OK;
}

/* The folder of `path` resolved (links, ., ..) and its last part: where a write would land
 * (new; NULL when the folder does not exist). */
static char *landing(const char *path)
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *slash = strrchr(path, '/');
	char *out;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path ? slash - path : 1), path);
	if (!realpath(dir, real))
		return NULL;
	return asprintf(&out, "%s/%s", strcmp(real, "/") ? real : "", slash ? slash + 1 : path) < 0
		       ? NULL
		       : out;
}

/* `secrets show -o` writes plaintext: never over the state it read (or its .bak), and never
 * into a backend's .pulumi folder, where it would be a stack's object or its copy (Pulumi
 * reads plaintext secrets, so nobody would notice, and its next save copies them on). */
static int refuse_plain_out(const char *cmd, const char *out, const cli_target *t)
{
	const char *where = cli_target_where(t);
	char *land = landing(out), *bak = NULL;
	struct stat so, sw;
	int same = 0, inside = land && strstr(land, "/.pulumi/") != NULL;

	if (where && asprintf(&bak, "%s.bak", where) < 0)
		bak = NULL;
	/* by inode (a hard link), and by name (a .bak not there yet) */
	if (where && stat(out, &so) == 0)
		for (int i = 0; i < 2 && !same; i++)
			same = (!i || bak) && stat(i ? bak : where, &sw) == 0 &&
			       so.st_dev == sw.st_dev && so.st_ino == sw.st_ino;
	for (int i = 0; i < 2 && !same && land && where; i++) {
		char *other = i && !bak ? NULL : landing(i ? bak : where);
		same = other && !strcmp(other, land);
		free(other);
	}
	free(land);
	free(bak);
	if (same)
		return cli_usage(cmd, "refusing to write decrypted secrets over '%s': it is the "
				      "state (or its .bak); give a file of its own",
				 out);
	if (inside)
		return cli_usage(cmd, "refusing to write decrypted secrets to '%s': it is inside a "
				      "Pulumi backend's .pulumi folder, where a plaintext copy would "
				      "be kept as a stack's object; give a file outside the backend",
				 out);
	return EXIT_OK;
}

/* The decrypted state (or the one resource named) to stdout or -o FILE (0600). */
static int print_shown(st_state *s, char **pos, int npos, const char *output)
{
	json_t *what = st_state_root(s);
	char *data = NULL;
	size_t len = 0;
	st_style st;
	st_error err;
	int rc;

	st_error_clear(&err);
	st_style_export(&st);
	if (npos == 1) {
		size_t *hits = NULL, nh = 0;
		if ((rc = cli_find(s, pos, 1, CLI_FIND_COPIES, &hits, &nh)) != EXIT_OK)
			return rc;
		what = json_array_get(st_state_resources(s, 0), hits[0]);
		free(hits);
	}
	if (st_json_dump(what, &st, &data, &len, &err) != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	if (output) {
		st_write_opts wo = ST_WRITE_OPTS_INIT;
		wo.mode = 0600;
		wo.exact_mode = 1; /* also over an existing 0644 file */
		rc = st_file_write_atomic(output, data, len, &wo, &err) == ST_OK ? EXIT_OK
										  : EXIT_FAIL;
		if (rc)
			cli_error(&err);
	} else {
		rc = cli_write_output("-", data, len);
	}
	st_secret_free(data, len);
	return rc;
}

/* show/verify --stack-config FILE: the config of the stack, read with its encryptionsalt
 * after a staged config an interrupted rekey left was put in place or removed (under the
 * state's lock, as a rekey would take it), so that its secure values are checked too. */
typedef struct stack_config {
	char *text, *salt; /* new */
	size_t len, count;
	st_error err; /* a secure value that does not decrypt */
} stack_config;

static int config_lock(cli_target *t, const char *config, st_lock **lock)
{
	char *staged = cli_rekey_staged_name(config);
	int rc = EXIT_OK;
	/* only a staged file is a reason to lock: show and verify otherwise write nothing */
	if (staged && access(staged, F_OK) == 0 && !t->filter &&
	    !(!t->backend && t->path && !strcmp(t->path, "-")))
		rc = cli_lock(t, lock);
	free(staged);
	return rc;
}

static int config_read(const char *config, st_state *s, const cli_target *t, int locked,
		       stack_config *sc)
{
	st_error err;
	int done, rc = cli_rekey_resolve(config, s, t, locked, &done);

	if (rc != EXIT_OK)
		return rc;
	st_error_clear(&err);
	rc = st_file_read(config, 16 << 20, &sc->text, &sc->len, NULL, &err);
	if (rc == ST_OK)
		rc = st_config_scan(sc->text, sc->len, config, &sc->salt, NULL, &err);
	if (rc == ST_OK)
		return EXIT_OK;
	cli_error(&err);
	return EXIT_FAIL;
}

/* Every secure value decrypted (and re-encrypted in memory, nothing written). */
static int config_check(const char *config, stack_config *sc, st_secrets *key)
{
	char *out = NULL;
	size_t len = 0;
	st_error_clear(&sc->err);
	int rc = st_config_rekey_text(sc->text, sc->len, config, key, key, &out, &len, &sc->count,
				      &sc->err);
	free(out);
	return rc == ST_OK ? EXIT_OK : EXIT_FAIL;
}

static int print_verify(const cli_target *t, const cli_mutate_opts *mo, st_state *s,
			st_secrets *sec, int passphrase, int checked, const char *config,
			const stack_config *sc, int cfail)
{
	st_problems p = {0};
	size_t n = 0;
	st_error err;
	st_error_clear(&err);
	st_secrets_verify(s, sec, &p, &n, &err);
	if (mo->json) {
		json_t *doc = json_object(), *arr = json_array();
		json_object_set_new(doc, "format_version", json_integer(CLI_JSON_FORMAT));
		json_object_set_new(doc, "secrets", json_integer((json_int_t)n));
		json_object_set_new(doc, "failed", json_integer((json_int_t)p.count));
		for (size_t i = 0; i < p.count; i++)
			json_array_append_new(arr, json_pack("{s:s,s:s?,s:s}", "pointer",
							     p.items[i].pointer, "urn",
							     p.items[i].urn, "message",
							     p.items[i].message));
		json_object_set_new(doc, "failures", arr);
		if (passphrase)
			json_object_set_new(doc, "passphrase_checked", json_boolean(checked));
		if (config)
			json_object_set_new(doc, "stack_config",
					    json_pack("{s:s,s:I,s:s?}", "file", config, "secure_values",
						      (json_int_t)(cfail ? 0 : sc->count), "error",
						      cfail ? sc->err.message : NULL));
		cli_print_json(doc);
		json_decref(doc);
	} else {
		for (size_t i = 0; i < p.count; i++)
			fprintf(stderr, "%s: error: %s: %s\n    at %s\n", cli_target_name(t),
				p.items[i].urn ? p.items[i].urn : "?", p.items[i].message,
				p.items[i].pointer);
		if (cfail)
			cli_error(&sc->err);
		printf("%zu secret%s, %zu failed to decrypt\n", n, n == 1 ? "" : "s", p.count);
		if (config && !cfail)
			printf("%s: %zu secure value%s, 0 failed to decrypt\n", config, sc->count,
			       sc->count == 1 ? "" : "s");
		if (passphrase && !checked)
			printf("the passphrase was not checked: no secret is encrypted and no "
			       "passphrase was given (PULUMI_CONFIG_PASSPHRASE, "
			       "PULUMI_CONFIG_PASSPHRASE_FILE or --passphrase-file)\n");
	}
	int rc = p.count || cfail ? EXIT_FAIL : EXIT_OK;
	st_problems_clear(&p);
	return rc;
}

static int cmd_show_verify(int argc, char **argv, int verify)
{
	cli_target t = {0};
	cli_mutate_opts mo = {.cmd = verify ? "secrets verify" : "secrets show"};
	ctx c = {0};
	char **pos;
	int npos, rc, cfail = 0;
	st_state *s = NULL;
	st_secrets *sec = NULL;
	st_lock *lock = NULL;
	stack_config sc = {0};
	cli_config_key ck = {0};
	st_error err;

	st_error_clear(&err);
	rc = cli_mutate_parse(argc, argv, help, extra_opts, extra, &c, &t, &mo, &pos, &npos);
	if (rc != -1)
		return rc;
	if (npos > (verify ? 0 : 1))
		return cli_usage(mo.cmd, "too many arguments");
	if (verify && c.output)
		return cli_usage(mo.cmd, "-o goes with `secrets show`");
	/* flags of the commands that write a state: accepted and ignored they would mislead */
	if (c.newpassfile)
		return cli_usage(mo.cmd, "--new-passphrase-file goes with `secrets rekey`");
	if (mo.dry_run)
		return cli_usage(mo.cmd, "--dry-run goes with `secrets encrypt` and `secrets "
					 "rekey` (%s writes no state)", mo.cmd);
	if ((rc = cli_target_resolve(&t, mo.cmd, 1)) != EXIT_OK ||
	    (c.output && strcmp(c.output, "-") &&
	     (rc = refuse_plain_out(mo.cmd, c.output, &t)) != EXIT_OK) ||
	    (c.config && (rc = config_lock(&t, c.config, &lock)) != EXIT_OK) ||
	    (rc = cli_load(&t, &s)) ||
	    (c.config && (rc = config_read(c.config, s, &t, lock != NULL, &sc)) != EXIT_OK))
		goto out;
	size_t cts = 0;
	st_secrets_count(s, &cts, NULL);
	/* verify checks a passphrase it is given even when no secret is encrypted (against the
	 * provider's salt, as Pulumi does when it opens the stack), and says when it checked none */
	json_t *dep = st_state_deployment(s);
	const char *ptype = json_string_value(
		json_object_get(dep ? json_object_get(dep, "secrets_providers") : NULL, "type"));
	int passphrase = ptype && !strcmp(ptype, "passphrase");
	int given = getenv("PULUMI_CONFIG_PASSPHRASE") || getenv("PULUMI_CONFIG_PASSPHRASE_FILE") ||
		    c.passfile;
	int need = cts > 0 || (verify && passphrase && given) || c.config;
	ck.file = c.config;
	ck.salt = sc.salt;
	if ((rc = cli_open_secrets_cfg(s, c.passfile, need, c.config ? &ck : NULL, &sec)) !=
	    EXIT_OK)
		goto out;
	if (c.config)
		cfail = config_check(c.config, &sc, ck.out ? ck.out : sec) != EXIT_OK;
	if (verify) {
		rc = print_verify(&t, &mo, s, sec, passphrase, passphrase && need, c.config, &sc,
				  cfail);
		goto out;
	}
	if (cfail) {
		cli_error(&sc.err);
		rc = EXIT_FAIL;
		goto out;
	}
	if (st_secrets_reveal(s, sec, &err) != ST_OK) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto out;
	}
	rc = print_shown(s, pos, npos, c.output);
	if (rc == EXIT_OK && c.config)
		fprintf(stderr, "%s: %zu secure value%s, 0 failed to decrypt\n", c.config, sc.count,
			sc.count == 1 ? "" : "s");
out:
	st_secrets_free(sec);
	st_secrets_free(ck.out);
	st_secret_free(sc.text, sc.len);
	free(sc.salt);
	cli_unlock(&t, lock);
	cli_state_done(s);
	cli_target_free(&t);
	return rc;
}

int cmd_secrets(int argc, char **argv)
{
	ctx c = {0};
	cli_target t = {0};
	cli_mutate_opts mo = {0};
	char **pos;
	int npos, rc;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return argc < 2 ? cli_usage("secrets", "missing show, verify, encrypt or rekey")
				: cli_help(help);
	if (!strcmp(argv[1], "show"))
		return cmd_show_verify(argc - 1, argv + 1, 0);
	if (!strcmp(argv[1], "verify"))
		return cmd_show_verify(argc - 1, argv + 1, 1);
	if (strcmp(argv[1], "encrypt") && strcmp(argv[1], "rekey"))
		return cli_usage("secrets", "unknown subcommand '%s'", argv[1]);
	int rekey = !strcmp(argv[1], "rekey");
	mo.cmd = rekey ? "secrets rekey" : "secrets encrypt";
	rc = cli_mutate_parse(argc - 1, argv + 1, help, extra_opts, extra, &c, &t, &mo, &pos, &npos);
	if (rc != -1)
		return rc;
	if (npos)
		return cli_usage(mo.cmd, "unexpected argument '%s'", pos[0]);
	t.out = c.output; /* -o -: the result to standard output (filter mode) */
	if (!rekey && c.config)
		return cli_usage(mo.cmd, "--stack-config goes with `secrets rekey`");
	if (!rekey && c.newpassfile)
		return cli_usage(mo.cmd, "--new-passphrase-file goes with `secrets rekey`");
	c.mo = &mo;
	c.t = &t;
	mo.after_save = rekey ? rekey_config : encrypt_saved;
	rc = cli_mutate(&t, &mo, rekey ? run_rekey : run_encrypt, &c);
	if (c.staged && !c.saved) {
		/* the state was not written (refused, or its write failed): the staged config goes */
		char *staged = cli_rekey_staged_name(c.config);
		if (staged && unlink(staged) != 0)
			cli_warnf("cannot remove '%s': %s", staged, strerror(errno));
		free(staged);
	}
	st_secrets_free(c.from);
	st_secrets_free(c.to);
	st_secrets_free(c.config_from);
	free(c.config_text);
	return rc;
}
