/* statetool import: add resources' state from an import file (or TYPE NAME ID). */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char help[] =
	"usage: statetool import [options] --dest STATE --file SPECS.json\n"
	"       statetool import [options] --dest STATE TYPE NAME ID\n"
	"       statetool import --generate-specs [options] STATE [RESOURCE...] [-o FILE]\n"
	"\n"
	"Import existing infrastructure by adding each resource's state to the destination,\n"
	"with Pulumi's import file (`pulumi import --file`: nameTable, resources[] with type,\n"
	"name, id, parent, provider, version, pluginDownloadUrl, logicalName, component,\n"
	"remote, properties, inputs, outputs, parameterization; the deprecated providerInputs,\n"
	"with Pulumi's warning) and Pulumi's rules. Every error of the file is reported, with\n"
	"its JSON Pointer, before anything is written. The file is read as Pulumi's\n"
	"json.Decoder reads it: the first JSON value (data after it: a warning).\n"
	"\n"
	"  * URNs are built as Pulumi builds them: parents through nameTable or earlier specs,\n"
	"    the root stack by default (created if missing); custom unless a component\n"
	"  * resources are protected unless --protect=false\n"
	"  * providers: an explicit one (nameTable, or a provider spec in the file), else a\n"
	"    default provider named as Pulumi names it (default_4_16_0, then a QName of\n"
	"    pluginDownloadUrl); one missing from the state is created before its first user,\n"
	"    as Pulumi's import creates it: a fresh UUID ID, inputs from the spec's inputs (a\n"
	"    nameTable provider: providerInputs of its name; else none) plus the version (as\n"
	"    semver prints it: 1.2 -> 1.2.0) and __internal {pluginDownloadURL}, outputs the\n"
	"    inputs without __internal. A parameterization makes the default provider load its\n"
	"    base plugin: __internal {name, version, parameterization}. An `extension` is\n"
	"    refused (not supported yet)\n"
	"  * importID stays empty, as `pulumi import` leaves it; --keep-import-id records it,\n"
	"    as the `import` resource option does\n"
	"  * the same URN with the same ID is a no-op (reported), and so is a provider spec\n"
	"    whose URN the state has (used as it is, as Pulumi reuses it); another ID is\n"
	"    refused;\n"
	"    duplicate specs are refused; so is the ID <PLACEHOLDER> that\n"
	"    `pulumi preview --import-file` writes for the user to fill in\n"
	"  * with --stack-config Pulumi.<stack>.yaml, a default provider created gets the\n"
	"    stack's config as Pulumi gives it: each `<pkg>:<key>` value becomes the input\n"
	"    <key>, a string as Pulumi spells the value (8080, 1.5, true; no value or null: \"\";\n"
	"    a mapping or list as its JSON, keys sorted, integers with every digit); one\n"
	"    holding a `secure` value is a secret, opened with the key of the file's own\n"
	"    encryptionsalt (else the state's) and encrypted under the destination's. Only this\n"
	"    file is read: values that Pulumi.yaml (project config) would add are not; a file\n"
	"    importing ESC environments, or a secure value of another secrets provider than\n"
	"    passphrase, is refused. A default provider the state has is used as it is (so is\n"
	"    Pulumi's). Without --stack-config none gets\n"
	"    config: the next `pulumi up` sees the difference as a provider diff\n"
	"  * values marked secret ({\"4dabf...\": \"1b47...\", \"plaintext\": ...}) are encrypted\n"
	"    under the destination's secrets provider; a ciphertext must decrypt with its key,\n"
	"    as Pulumi decrypts the file first (else refused, nothing written)\n"
	"  * a key given twice in the file is read as Pulumi reads it (Go's encoding/json): two\n"
	"    resources arrays decode each spec into the earlier one, two nameTable (or a\n"
	"    spec's inputs or outputs) merge their keys; a warning each (json/duplicate-key)\n"
	"\n"
	"Reading a resource (Pulumi's step 1 is the provider's Read; statetool has none):\n"
	"  * outputs (and inputs) given in the file are used as they are;\n"
	"  * --reader CMD runs CMD (with /bin/sh) once per resource: the request\n"
	"    {\"type\",\"id\",\"urn\",\"properties\"} on its standard input, the answer\n"
	"    {\"inputs\": {...}, \"outputs\": {...}} (or {\"error\": \"...\"}) on its standard\n"
	"    output, within --reader-timeout seconds (default 30); a reader that fails,\n"
	"    hangs or answers anything else fails the import and nothing is written;\n"
	"  * --no-read adds the resource with the given inputs and empty outputs; the next\n"
	"    `pulumi refresh` fills them in. Without any of these it is an error.\n"
	"\n"
	"The destination's stack and project come from --dest-stack PROJECT/STACK, else the\n"
	"checkpoint's `stack`, else the file's place in a DIY backend, else its URNs. A stack of\n"
	"a backend is the one its place names (as Pulumi sees it): --dest-stack naming another\n"
	"is a usage error.\n"
	"\n"
	"Options:\n"
	"  --dest STATE           the destination file (or a stack, with --backend URL);\n"
	"                         '-': read from standard input, the result written to\n"
	"                         standard output (filter mode: no lock, no .bak,\n"
	"                         nothing written when it fails)\n"
	"  -s, --stack NAME       the destination is this stack of the backend (--backend,\n"
	"                         else $PULUMI_BACKEND_URL, else Pulumi.yaml backend.url)\n"
	"  --file SPECS.json      the import file ('-' = standard input; not both '-')\n"
	"  --dest-stack P/S       the destination's project and stack\n"
	"  --protect=false        do not protect the imported resources\n"
	"  --keep-import-id       record each resource's importID\n"
	"  --reader CMD           the program that reads resources\n"
	"  --reader-timeout SECS  how long the reader may take per resource (default 30)\n"
	"  --no-read              add resources without outputs\n"
	"  --passphrase-file F    the destination's passphrase, to encrypt secrets\n"
	"  --stack-config FILE    the stack's Pulumi.<stack>.yaml: default providers' inputs\n"
	"  --generate-specs       write an import file describing resources of STATE\n"
	"  -o, --output FILE      with --generate-specs: where to write ('-' = stdout);\n"
	"                         else only '-': the result to stdout, STATE unchanged\n"
	"  --dry-run              print what would be added; write nothing (a lock the real run\n"
	"                         would meet is noted)\n"
	"  --json                 the summary as one JSON document\n"
	"  --backend URL          --dest names a stack of this DIY backend\n"
	"  -h, --help             show this help\n";

enum { I_DEST = 6000, I_FILE, I_DSTACK, I_PROTECT, I_KEEP, I_READER, I_TIMEOUT, I_NOREAD, I_PASS,
       I_GEN, I_CONFIG };

typedef struct reader {
	const char *cmd;
	int timeout;
} reader;

static int import_err(st_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int import_err(st_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	if (!err || err->code)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return code;
}

/* Runs the reader once. */
static int run_reader(void *ctx, const json_t *req, json_t **resp, st_error *err)
{
	reader *rd = ctx;
	int in[2], out[2];
	char *text = NULL, *buf = NULL;
	size_t tlen = 0, len = 0, cap = 0;
	pid_t pid;
	int status = 0, rc = ST_OK;
	st_style st;
	const char *urn = json_string_value(json_object_get(req, "urn"));

	*resp = NULL;
	st_style_checkpoint(&st);
	if (st_json_dump(req, &st, &text, &tlen, err) != ST_OK)
		return err->code;
	if (pipe(in) < 0 || pipe(out) < 0) {
		free(text);
		return import_err(err, ST_EIO, "cannot start the reader: %s", strerror(errno));
	}
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl("/bin/sh", "sh", "-c", rd->cmd, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	signal(SIGPIPE, SIG_IGN);
	if (write(in[1], text, tlen) < 0) { /* the reader may not read; its answer decides */
	}
	close(in[1]);
	free(text);
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct pollfd pf = {out[0], POLLIN, 0};
		clock_gettime(CLOCK_MONOTONIC, &now);
		long left = rd->timeout * 1000L - ((now.tv_sec - start.tv_sec) * 1000L +
						  (now.tv_nsec - start.tv_nsec) / 1000000L);
		if (left <= 0) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			close(out[0]);
			free(buf);
			return import_err(err, ST_EUNSUPPORTED,
					   "the reader timed out after %d s on %s; nothing was written",
					   rd->timeout, urn);
		}
		int pr = poll(&pf, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0)
			continue;
		if (len + 4096 > cap) {
			cap = cap ? cap * 2 : 8192;
			if (cap > (64u << 20)) {
				kill(-pid, SIGKILL);
				waitpid(pid, NULL, 0);
				close(out[0]);
				free(buf);
				return import_err(err, ST_ELIMIT, "the reader's answer for %s is over "
						   "64 MiB", urn);
			}
			buf = realloc(buf, cap + 1);
		}
		ssize_t r = read(out[0], buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(out[0]);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		free(buf);
		return import_err(err, ST_EUNSUPPORTED, "the reader failed on %s (exit status %d); "
				   "nothing was written", urn,
				   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	json_t *j = NULL;
	st_error pe;
	st_error_clear(&pe);
	if (!buf || st_json_parse(&j, buf, len, "reader output", NULL, NULL, NULL, &pe) != ST_OK ||
	    !json_is_object(j)) {
		free(buf);
		json_decref(j);
		return import_err(err, ST_EFORMAT, "the reader answered %s with something that is "
				   "not a JSON object (%s); nothing was written", urn,
				   pe.message[0] ? pe.message : "empty");
	}
	free(buf);
	if (json_is_string(json_object_get(j, "error"))) {
		rc = import_err(err, ST_EUNSUPPORTED, "the reader could not read %s: %s", urn,
				 json_string_value(json_object_get(j, "error")));
		json_decref(j);
		return rc;
	}
	json_t *ins = json_object_get(j, "inputs"), *outs = json_object_get(j, "outputs");
	if ((ins && !json_is_object(ins)) || !json_is_object(outs)) {
		json_decref(j);
		return import_err(err, ST_EFORMAT, "the reader's answer for %s lacks an \"outputs\" "
				   "object (and \"inputs\", if any, must be an object); nothing was "
				   "written", urn);
	}
	*resp = j;
	return ST_OK;
}

static int generate(cli_target *t, char **pos, int npos, const char *output)
{
	st_state *s = NULL;
	size_t *idx = NULL, n = 0;
	int rc;
	st_error err;
	st_error_clear(&err);
	if ((rc = cli_target_resolve(t, "import", 1)) != EXIT_OK || (rc = cli_load(t, &s)))
		goto out;
	if (npos && (rc = cli_find(s, pos, npos, CLI_FIND_COPIES, &idx, &n)) != EXIT_OK)
		goto out;
	json_t *doc = st_import_generate(s, idx, n, &err);
	if (!doc) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto out;
	}
	char *data;
	size_t len;
	st_style st;
	st_style_export(&st);
	st_json_dump(doc, &st, &data, &len, NULL);
	rc = cli_write_output(output ? output : "-", data, len);
	free(data);
	json_decref(doc);
out:
	free(idx);
	cli_state_done(s);
	cli_target_free(t);
	return rc;
}

/* What the command line asks for. */
typedef struct args {
	const char *dest, *file, *passfile, *output, *backend, *stack, *config;
	int gen, dry, json, dups;
	st_import_opts io;
	reader rd;
	char **pos;
	int npos;
} args;

static int parse(int argc, char **argv, args *a)
{
	static const struct option opts[] = {
		{"dest", required_argument, NULL, I_DEST},
		{"file", required_argument, NULL, I_FILE},
		{"dest-stack", required_argument, NULL, I_DSTACK},
		{"protect", required_argument, NULL, I_PROTECT},
		{"keep-import-id", no_argument, NULL, I_KEEP},
		{"reader", required_argument, NULL, I_READER},
		{"reader-timeout", required_argument, NULL, I_TIMEOUT},
		{"no-read", no_argument, NULL, I_NOREAD},
		{"passphrase-file", required_argument, NULL, I_PASS},
		{"generate-specs", no_argument, NULL, I_GEN},
		{"stack-config", required_argument, NULL, I_CONFIG},
		{"output", required_argument, NULL, 'o'},
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"stack", required_argument, NULL, OPT_STACK},
		{"dry-run", no_argument, NULL, OPT_DRY_RUN},
		{"json", no_argument, NULL, OPT_JSON},
		{"allow-duplicate-keys", no_argument, NULL, OPT_ALLOW_DUPLICATE_KEYS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	int c;
	while ((c = cli_getopt(argc, argv, "ho:", opts)) != -1) {
		switch (c) {
		case I_DEST: a->dest = optarg; break;
		case I_FILE: a->file = optarg; break;
		case I_DSTACK: a->io.dest_stack = optarg; break;
		case I_PROTECT:
			if (!strcmp(optarg, "false"))
				a->io.no_protect = 1;
			else if (strcmp(optarg, "true"))
				return cli_usage("import", "--protect is true or false");
			break;
		case I_KEEP: a->io.keep_import_id = 1; break;
		case I_READER: a->rd.cmd = optarg; break;
		case I_TIMEOUT:
			a->rd.timeout = atoi(optarg);
			if (a->rd.timeout <= 0)
				return cli_usage("import", "--reader-timeout takes seconds > 0");
			break;
		case I_NOREAD: a->io.no_read = 1; break;
		case I_PASS: a->passfile = optarg; break;
		case I_GEN: a->gen = 1; break;
		case I_CONFIG: a->config = optarg; break;
		case 'o': a->output = optarg; break;
		case OPT_BACKEND: a->backend = optarg; break;
		case OPT_STACK: a->stack = optarg; break;
		case OPT_DRY_RUN: a->dry = 1; break;
		case OPT_JSON: a->json = 1; break;
		case OPT_ALLOW_DUPLICATE_KEYS: a->dups = 1; break;
		case 'h': return cli_help(help);
		default: return cli_usage("import", "bad option");
		}
	}
	a->pos = argv + optind;
	a->npos = argc - optind;
	if (a->io.dest_stack && !cli_stack_ref_valid(a->io.dest_stack))
		return EXIT_USAGE;
	if (a->stack && a->dest)
		return cli_usage("import", "give --dest or --stack, not both");
	if (a->gen && a->config)
		return cli_usage("import", "--stack-config goes with an import, not --generate-specs");
	if (a->gen)
		return -1;
	if (!a->dest && !a->stack)
		return cli_usage("import", "missing --dest STATE (or --stack NAME)");
	if (a->file && a->npos)
		return cli_usage("import", "an inline resource may not be specified in conjunction "
					   "with an import file");
	if (!a->file && a->npos != 3)
		return cli_usage("import", "an inline resource must be specified if no import file "
					   "is used: TYPE NAME ID");
	if (a->rd.cmd && a->io.no_read)
		return cli_usage("import", "--reader and --no-read exclude each other");
	if (a->dest && !strcmp(a->dest, "-") && a->file && !strcmp(a->file, "-"))
		return cli_usage("import", "--dest and --file cannot both be standard input");
	if (a->output && strcmp(a->output, "-"))
		return cli_usage("import", "-o takes '-' (standard output) only, but with "
					   "--generate-specs");
	return -1;
}

/* The import file, or the inline resource as a one-spec file; the reader's warnings (and the
 * earlier values of keys given twice, for the import to decode as Pulumi does) in *rp. */
static int read_doc(const args *a, json_t **doc, st_problems *rp)
{
	char *text = NULL;
	size_t len = 0;
	st_parse_limits lim = ST_PARSE_LIMITS_INIT;
	st_error err;
	st_error_clear(&err);
	lim.first_value = ST_PARSE_DECODER; /* as readImportFile: json.NewDecoder(f).Decode */
	if (!a->file) {
		*doc = json_pack("{s:[{s:s,s:s,s:s}]}", "resources", "type", a->pos[0], "name",
				 a->pos[1], "id", a->pos[2]);
		return *doc ? EXIT_OK : EXIT_FAIL;
	}
	if (st_file_read(a->file, 64u << 20, &text, &len, NULL, &err) != ST_OK ||
	    st_json_parse(doc, text, len, strcmp(a->file, "-") ? a->file : "<stdin>", &lim, NULL,
			  rp, &err) != ST_OK) {
		free(text);
		cli_error(&err);
		return EXIT_FAIL;
	}
	free(text);
	return EXIT_OK;
}

/* The first n problems of the file, each as an error or a warning. */
static void print_problems(const args *a, const st_problems *p, size_t n)
{
	for (size_t i = 0; i < p->count && i < n; i++) {
		fprintf(stderr, "%s: %s: %s\n", a->file ? a->file : "import",
			p->items[i].severity == ST_SEV_ERROR ? "error" : "warning",
			p->items[i].message);
		cli_problem_at(&p->items[i]);
	}
}

/* The destination's secrets manager and, with --stack-config, the key of the config's own
 * encryptionsalt (*csec; NULL when it has none or it is the state's: then the state's opens
 * its values). */
static int open_secrets(const args *a, st_state *s, st_import_opts *io, st_secrets **sec,
			st_secrets **csec)
{
	cli_config_key ck = {a->config, NULL, NULL};
	st_error err;
	int rc;

	st_error_clear(&err);
	if (io->config && st_config_scan(io->config, io->config_len, a->config, (char **)&ck.salt,
					 NULL, &err) != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	rc = cli_open_secrets_cfg(s, a->passfile, 1, io->config ? &ck : NULL, sec);
	free((char *)ck.salt);
	if (rc != EXIT_OK)
		return rc;
	*csec = ck.out;
	io->secrets = *sec;
	io->config_secrets = *csec ? *csec : *sec;
	return EXIT_OK;
}

/* The import in the session (rp: the reader's list, which the import's problems join); when
 * the file (or the stack's config) holds secrets, again with the secrets managers: the file was
 * decoded (keys given twice merged), so of the first run's problems only the reader's are
 * kept. */
static int import_into(const args *a, st_edit *e, st_state *s, json_t *doc, st_import_opts *io,
		       st_import_report *rep, st_secrets **sec, st_secrets **csec, st_problems *rp)
{
	st_problems again = {0};
	size_t nread = rp->count;
	st_error err;
	int rc;

	st_error_clear(&err);
	rc = st_edit_import(e, doc, io, rep, rp, &err);
	if (rc == ST_EPASSPHRASE && rep->needs_secrets) {
		st_error_clear(&err);
		if ((rc = open_secrets(a, s, io, sec, csec)) != EXIT_OK) {
			print_problems(a, rp, nread); /* the file's warnings all the same */
			return rc;
		}
		io->secrets = *sec;
		rc = st_edit_import(e, doc, io, rep, &again, &err);
		print_problems(a, rp, nread);
		print_problems(a, &again, again.count);
	} else {
		print_problems(a, rp, rp->count);
	}
	st_problems_clear(&again);
	if (rc != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* The session committed: checked, and (not on a dry run) written with a backup. */
static int commit(const args *a, cli_target *t, st_edit *e, int *written)
{
	st_problems probs = {0};
	st_error err;
	int rc;

	st_error_clear(&err);
	*written = 0;
	rc = a->dry ? st_edit_commit(e, NULL, &probs, &err)
		    : cli_commit_save(t, e, 0, NULL, &probs, written, &err);
	if (rc != ST_OK) {
		cli_error(&err);
		for (size_t i = 0; i < probs.count; i++)
			cli_problem(&probs.items[i]);
	}
	st_problems_clear(&probs);
	return rc == ST_OK ? EXIT_OK : EXIT_FAIL;
}

static json_t *lines_json(const st_changes *c)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < c->count; i++)
		json_array_append_new(arr, json_string(c->lines[i]));
	return arr;
}

static void print_report(const args *a, const cli_target *t, const st_import_report *rep,
			 int written)
{
	if (a->json) {
		json_t *o = json_object();
		json_object_set_new(o, "format_version", json_integer(CLI_JSON_FORMAT));
		json_object_set_new(o, "dry_run", json_boolean(a->dry));
		json_object_set_new(o, "written", json_boolean(written));
		cli_dry_locked_json(o, t);
		json_object_set_new(o, "added", lines_json(&rep->added));
		json_object_set_new(o, "unchanged", lines_json(&rep->noops));
		json_object_set_new(o, "notes", lines_json(&rep->notes));
		cli_print_json(o);
		json_decref(o);
		return;
	}
	for (size_t i = 0; i < rep->added.count; i++)
		printf("%s %s\n", a->dry ? "would add" : "added", rep->added.lines[i]);
	for (size_t i = 0; i < rep->noops.count; i++)
		printf("unchanged: %s\n", rep->noops.lines[i]);
	for (size_t i = 0; i < rep->notes.count; i++)
		printf("note: %s\n", rep->notes.lines[i]);
	if (!rep->added.count && !written)
		printf(a->dry ? "no change\n" : "no change: nothing written\n");
	else if (a->dry)
		printf("dry run: nothing written\n");
	else
		printf("%zu resource%s imported\n", rep->nadded, rep->nadded == 1 ? "" : "s");
}

static int run_import(args *a, cli_target *t)
{
	st_state *s = NULL;
	st_lock *lock = NULL;
	st_secrets *sec = NULL, *csec = NULL;
	st_edit *e = NULL;
	char *config = NULL;
	size_t config_len = 0;
	json_t *doc = NULL;
	st_import_report rep = {0};
	st_problems rp = {0};
	st_error err;
	int rc, written = 0;

	st_error_clear(&err);
	/* filter mode (--dest -, or -o -): the result to stdout, nothing locked */
	if ((rc = cli_filter_begin(t)) != EXIT_OK ||
	    (rc = cli_target_resolve(t, "import", 1)) != EXIT_OK ||
	    (rc = cli_refuse_other_names(t, a->io.dest_stack, "import", "--dest-stack")) != EXIT_OK ||
	    (rc = read_doc(a, &doc, &rp)))
		goto out;
	if (a->config) {
		if (st_file_read(a->config, 16 << 20, &config, &config_len, NULL, &err) != ST_OK) {
			cli_error(&err);
			rc = EXIT_FAIL;
			goto out;
		}
		a->io.config = config;
		a->io.config_len = config_len;
		a->io.config_name = a->config;
	}
	if (a->dry)
		cli_dry_lock(t);
	if ((!a->dry && !t->filter && (rc = cli_lock(t, &lock)) != EXIT_OK) ||
	    (rc = cli_load(t, &s)) ||
	    (rc = cli_refuse_lossy(s, cli_target_name(t), a->dups)) != EXIT_OK ||
	    (!a->dry && (rc = cli_refuse_misplaced(s, t, cli_target_name(t))) != EXIT_OK))
		goto out;
	if (a->rd.cmd) {
		a->io.read = run_reader;
		a->io.read_ctx = &a->rd;
	}
	if (!a->io.dest_stack && t->backend && t->qname && strchr(t->qname, '/') &&
	    strchr(strchr(t->qname, '/') + 1, '/'))
		a->io.dest_stack = t->qname; /* organization/PROJECT/STACK */
	if (st_edit_begin(&e, s, NULL, &err) != ST_OK) {
		cli_error(&err);
		rc = EXIT_FAIL;
		goto out;
	}
	if ((rc = import_into(a, e, s, doc, &a->io, &rep, &sec, &csec, &rp)) != EXIT_OK ||
	    (rc = commit(a, t, e, &written)) != EXIT_OK ||
	    (written && (rc = cli_filter_emit(t)) != EXIT_OK))
		goto out;
	print_report(a, t, &rep, written);
out:
	st_edit_free(e);
	st_import_report_clear(&rep);
	st_problems_clear(&rp);
	json_decref(doc);
	st_secrets_free(sec);
	st_secrets_free(csec);
	if (config)
		st_secret_free(config, config_len); /* ciphertexts only, wiped all the same */
	cli_unlock(t, lock);
	cli_state_done(s);
	cli_target_free(t);
	return rc;
}

int cmd_import(int argc, char **argv)
{
	args a;
	cli_target t = {0};
	int rc;

	memset(&a, 0, sizeof(a));
	a.io = (st_import_opts)ST_IMPORT_OPTS_INIT;
	a.rd.timeout = 30;
	if ((rc = parse(argc, argv, &a)) != -1)
		return rc;
	t.backend_url = a.backend;
	if (a.gen) {
		if (!a.npos && !a.dest && !a.stack)
			return cli_usage("import", "--generate-specs needs STATE");
		if (a.stack) {
			t.stack = a.stack;
		} else if (a.dest) {
			t.arg = a.backend ? NULL : a.dest;
			t.stack = a.backend ? a.dest : NULL;
		} else {
			t.arg = a.pos[0];
			a.pos++;
			a.npos--;
		}
		return generate(&t, a.pos, a.npos, a.output);
	}
	if (a.stack)
		t.stack = a.stack;
	else if (a.backend)
		t.stack = a.dest;
	else
		t.arg = a.dest;
	t.out = a.output;
	return run_import(&a, &t);
}
