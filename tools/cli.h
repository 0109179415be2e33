/* The command-line layer: helpers shared by the subcommands. Nothing here is needed by a
 * backend; everything that does real work is in the library. */
#ifndef ST_CLI_H
#define ST_CLI_H

#include "statetool.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>

/* Exit codes: documented, never renumbered. */
#define EXIT_OK 0
#define EXIT_FAIL 1
#define EXIT_USAGE 2

/* The --json output format version. */
#define CLI_JSON_FORMAT 1

typedef struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} cli_command;

/* Long options shared by the commands. */
enum {
	OPT_BACKEND = 1000,
	OPT_STACK,
	OPT_JSON,
	OPT_OUTPUT,
	OPT_DRY_RUN,
	OPT_ENVELOPE,
	OPT_COMPACT,
	OPT_INDENT,
	OPT_GZIP,
	OPT_NO_GZIP,
	OPT_ZSTD,
	OPT_CANONICAL,
	OPT_ESCAPE_HTML,
	OPT_NO_ESCAPE_HTML,
	OPT_MAX_SIZE,
	OPT_STRICT,
	OPT_SCHEMA,
	OPT_NO_BACKUP,
	OPT_ALLOW_DUPLICATE_KEYS,
	OPT_FORCE,
	OPT_TARGET_DEPENDENTS,
	OPT_ALL,
	OPT_FROM
};

/* Where a command's state lives: a plain file (or "-"), or a stack of a backend, named by
 * --backend/--stack or by the path of its file inside a DIY backend (.pulumi/stacks/...). A
 * stack is loaded, saved, locked and unlocked through its backend only, never through a local
 * path (its store may have none); `where` names its object for messages. */
typedef struct cli_target {
	const char *arg;         /* STATE argument, or NULL */
	const char *backend_url; /* --backend, or NULL ($PULUMI_BACKEND_URL is used with --stack) */
	const char *stack;       /* --stack, or NULL */
	st_backend *backend;     /* the stack's backend, or NULL for a plain file */
	char *qname;   /* the stack's full name in its backend */
	char *path;    /* the plain file (NULL for a stack) */
	char *where;   /* a stack's object as st_store_where names it (else its name), or NULL */
	/* a DIY stack's object as resolving it found it (st_backend_resolve_key), for the load:
	 * NULL once a lock or a recovery may have changed it (the load then lists it again) */
	char *key;
	int exists;    /* the state exists */
	size_t max_size;
	const char *out; /* -o OUT as given ("-": standard output), or NULL */
	int filter;      /* filter mode (cli_filter_begin): the result goes to standard output */
	int no_stdin;    /* the command takes no '-' (its usage message offers none) */
	char *tmpdir;    /* filter mode: the private directory the result is made in */
	char *tmp;       /* filter mode: the result's file in it, copied to stdout when checked */
	/* The stack's backend has an index (index_path): the object as it was when resolved.
	 * cli_target_free updates the index for the stack when it changed (statetool's own
	 * change), so the index never answers from what statetool itself replaced. */
	char *index_path;
	st_store_info seen;
	char *locked; /* a dry run: the message of the lock the real run would meet (cli_dry_lock) */
	int recovered; /* cli_lock completed the stack's interrupted operations before its lock */
} cli_target;

extern const char *cli_prog;

/* STATETOOL_THREADS as a call's `threads` (0 automatic, 1, 2). */
extern int cli_threads;
/* Reads STATETOOL_THREADS, STATETOOL_TIMINGS and STATETOOL_CRASH_AT and tells the library
 * (st_set_threads, st_set_hooks). Called once, first thing. */
void cli_env_apply(void);
/* A crash point of the CLI's own (STATETOOL_CRASH_AT=OP:STEP kills the process there). */
void cli_crash_point(const char *op, int step);

/* Prints "statetool: error: <file:line:col: >message" to stderr. */
void cli_error(const st_error *err);
void cli_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* One problem on stderr as "  [RULE] MESSAGE", then "    at POINTER" unless the pointer is the
 * document's root (""), as validate prints it. */
void cli_problem(const st_problem *q);
/* The "    at POINTER" line of a problem printed in another shape: nothing for the root. */
void cli_problem_at(const st_problem *q);
/* The same with the --json error code `code` (one of the library's: "not-found", ...). */
void cli_errorc(const char *code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A resolved target whose state does not exist: "cannot open 'FILE': No such file or
 * directory", or for a stack "stack 'NAME' has no state file in backend 'URL'" (or "no Pulumi
 * backend at 'URL'..." when the backend has no .pulumi); code not-found. Returns EXIT_FAIL. */
int cli_target_missing(const cli_target *t);
void cli_warnf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* With --json (cli_json_mode), a command that fails without having printed its JSON document
 * prints one now: {"format_version", "command", "ok": false, "exit_code", "error": {"code",
 * "message", and where known "file", "pointer", "line", "column"}}, from the first error it
 * reported (cli_error, cli_errorf, cli_usage). Called by main once the command returned. */
void cli_json_fail(const char *cmd, int rc);
/* Turns a SIGBUS (a file the command reads through a mapping truncated by another program)
 * into an error: the message on stderr (and with --json the failure document, code
 * "conflict", on stdout) and exit 1 instead of a crash. Called by main before the command. */
void cli_catch_sigbus(const char *cmd);
/* Interrupts held back while the process holds a lock (tools/interrupt.c); cli_interrupt_exit ends
 * the process by the signal held back, if any (after the command). */
extern volatile sig_atomic_t cli_locks_busy;
void cli_catch_interrupts(void);
void cli_editor_running(int on);
void cli_interrupt_exit(void);

/* Prints a usage error and the hint to run --help; returns EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints help text to stdout and returns EXIT_OK. */
int cli_help(const char *text);

/* Frees a state the command is done with. A big one is kept until the next call or the
 * exit instead: freeing millions of values takes longer than the process's exit. */
void cli_state_done(st_state *s);

/* getopt_long with the options every command shares, so each command gets them from its own
 * option table: -s for the table's "stack" option (Pulumi's -s/--stack), and --yes/-y
 * (accepted and ignored unless the table has its own "yes": statetool never asks for a
 * confirmation, so a script written for Pulumi's commands runs unchanged). A "json" option
 * seen sets cli_json_mode (errors then also go to stdout as one JSON document). */
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);
extern int cli_json_mode;

/* Opens a backend (url NULL: $PULUMI_BACKEND_URL, else the current project's Pulumi.yaml
 * backend.url) and refuses one that holds no Pulumi backend (no .pulumi: a mistyped path,
 * prefix or bucket), so a command over a whole backend never reports "0 stacks" for a typo.
 * Prints errors; returns an exit code. */
int cli_backend_open(st_backend **out, const char *url);

/* Handles the options every STATE command takes. Returns 1 when `opt` was one of them. */
int cli_target_option(cli_target *t, int opt, const char *arg);
/* Resolves the target: exactly one of STATE or --stack. Prints errors; returns an exit code. */
int cli_target_resolve(cli_target *t, const char *cmd, int must_exist);
void cli_target_free(cli_target *t);
/* A short name of the target for messages. */
const char *cli_target_name(const cli_target *t);
/* PROJECT/STACK of a stack of a backend in the project layout, from where it lies (in buf);
 * NULL for a file or a legacy stack. What names a state's stack (st_stack_names) for a stack. */
const char *cli_target_names(const cli_target *t, char *buf, size_t n);
/* Where the target's state is, for messages and --json: the file, or the stack's object. */
const char *cli_target_where(const cli_target *t);
/* A stack of a backend is the stack and project its place names, as Pulumi sees it: an option
 * (`opt`, e.g. "--dest-stack") naming another PROJECT/STACK for it is a usage error of `cmd`
 * (EXIT_USAGE); EXIT_OK when `names` is NULL, agrees, or the target is a file. */
int cli_refuse_other_names(const cli_target *t, const char *names, const char *cmd,
			   const char *opt);
/* Completes an interrupted two-stack operation on the target, if any (notes on stderr);
 * `known` (may be NULL) is a store the caller has open for the other side. */
int cli_recover(cli_target *t, st_store *known);
/* Drops the object resolving found (t->key): the next load lists the stack's objects again. */
void cli_target_forget(cli_target *t);

/* Filter mode (man page, FILTER MODE): with `-o -`, or a STATE of `-` and no -o, the result
 * goes to standard output and nothing is written back, locked or backed up. Decided from
 * t->arg and t->out before cli_target_resolve. In filter mode stdout is set aside for the
 * state's bytes (everything the command prints goes to stderr from then on), SIGPIPE is
 * ignored, and the result is saved as a file would be (same bytes, format, envelope,
 * compression) into a private temporary file (cli_save_path), which cli_filter_emit copies to
 * stdout once every check passed: a refused or failed command writes nothing there. Returns an
 * exit code (EXIT_FAIL when stdout is not open). */
int cli_filter_begin(cli_target *t);
/* Where a save goes: the filter's temporary file, else the target's file (NULL for a stack). */
const char *cli_save_path(const cli_target *t);
/* Filter mode: copies the saved result to standard output; a failed write (a closed pipe)
 * prints why and returns EXIT_FAIL. Not in filter mode: EXIT_OK. */
int cli_filter_emit(cli_target *t);
/* Writes bytes to the filter's standard output (the real stdout when not in filter mode).
 * Prints why and returns EXIT_FAIL on a failed write. */
int cli_stdout_write(const void *data, size_t len);
/* Is the filter's standard output (the real stdout) a terminal? */
int cli_stdout_isatty(void);
/* Removes the filter's temporary files (cli_target_free calls it). */
void cli_filter_end(cli_target *t);

/* Loads the target's state. Prints errors; returns an exit code. */
int cli_load(cli_target *t, st_state **out);
/* cli_load, lazily when `lazy` (st_load_opts.lazy) and STATETOOL_LAZY is not 0. */
int cli_load_ex(cli_target *t, st_state **out, int lazy);
extern int cli_lazy; /* 0: STATETOOL_LAZY=0, every state loaded in full */
/* Takes the target's lock (Pulumi's for a stack, <file>.lock for a file); for a stack, its
 * interrupted operations (a move, a stack rename) are completed first (cli_recover). */
int cli_lock(cli_target *t, st_lock **out);
/* Brings the backend's default index (when it has one) up to date for stacks statetool
 * changed outside a target (a rename: the old name dropped, the new one indexed). Warns, never
 * fails: the index is a cache. */
void cli_index_stacks(st_backend *b, const char *const *qnames, size_t n);
/* Releases a lock cli_lock took on t (NULL: nothing). The change is done whatever happens, so
 * a lock that cannot be removed is a warning, not a failure: Pulumi's message and the
 * `statetool unlock` that removes it (the next `pulumi up` would find the stack locked). */
void cli_unlock(const cli_target *t, st_lock *lock);
/* A dry run takes no lock (nor does Pulumi's preview) but tells of one the real run would meet:
 * a note on stderr, and the lock's message kept in t->locked for a --json document's "locked"
 * member (cli_dry_locked_json). */
void cli_dry_lock(cli_target *t);
/* Adds "locked" (t->locked) to a --json document when a dry run met a lock. */
void cli_dry_locked_json(json_t *doc, const cli_target *t);
/* Saves a state to the target (its backend for a stack, with a .bak). Prints errors; returns an
 * exit code. *code (`code` may be NULL): the library's result of the save (ST_OK when it did
 * not fail; a failure after it, of the filter's output, is not the save's). */
int cli_save(cli_target *t, st_state *s, int *code);

/* Refuses (printing why) to write a state whose file had duplicate object keys: saving writes
 * one value for each, as Pulumi reads it, so the others would be lost silently. Returns an
 * exit code. */
int cli_refuse_lossy(const st_state *s, const char *name, int allow);

/* Refuses (printing why) to change a state that is not where it claims to be (st_check_place
 * with ST_PLACE_ALL: the place of target `t` (may be NULL), a stack's name, or none for a file
 * outside a backend;
 * the checkpoint's `stack`; the URNs). Returns an exit code. */
int cli_refuse_misplaced(st_state *s, const cli_target *t, const char *name);

/* A generation `id` of `stack` (of backend `b`) that a stack rename carried over (its
 * checkpoint, or its URNs, name a former name of the stack: one the backend has no stack of
 * now, only the .bak the rename left of its object): rewritten in place as the rename rewrote the stack (st_state_rename_stack), with a
 * note saying so (`verb`: what is done with it, "restored"). Anything else is left as it is
 * (the place check judges it). Returns an exit code. */
int cli_generation_renamed(st_backend *b, const char *stack, st_state *gen, const char *id,
			   const char *verb);
/* Is the target a stack of Pulumi Cloud? */
int cli_target_is_cloud(const cli_target *t);

/* Prints rows (an array of arrays of strings; the first is the header when there is one) as a
 * table whose columns are aligned, two spaces apart: what a command prints on a terminal
 * (piped, the query table stays tab-separated for scripts). */
void cli_print_table(const json_t *rows);

/* Writes a JSON value to stdout, 4-space indented, with a newline. */
int cli_print_json(const json_t *v);
/* A JSON document is being written to stdout in pieces (query --json streams its rows): a
 * failure from now on prints no second document (cli_json_fail); the first stays unfinished. */
void cli_json_begun(void);
/* Writes bytes to a file ("-" = stdout). */
int cli_write_output(const char *path, const char *data, size_t len);

/* A stack named on the command line (--checkpoint-stack, --dest-stack...):
 * organization/PROJECT/STACK, PROJECT/STACK or STACK, each name as Pulumi's rules allow (as
 * --stack checks a DIY backend's stack names). 1 when valid; else 0, the refusal printed. */
int cli_stack_ref_valid(const char *ref);

/* Parses a size such as 512M or 2G (digits, then an optional K, M or G; not 0). Returns 0 on
 * success, -1 for a malformed size, -2 for one too large for a size_t. */
int cli_parse_size(const char *s, size_t *out);

/* How cli_find resolves: CLI_FIND_COPIES: an exact URN held by several copies (delete: true)
 * gives them all (else refused); CLI_FIND_LIVE: copies marked delete: true are not found, as
 * Pulumi's protect and taint see them (st_state_find_ex ST_FIND_LIVE). */
#define CLI_FIND_COPIES 1
#define CLI_FIND_LIVE 2
/* Resolves each query (exact URN, name, URN suffix, #INDEX) to resource indexes, without
 * duplicates, as `how` says. Every query not found is reported (one error joining Pulumi's
 * messages, as Pulumi joins them); returns an exit code. *out is new. */
int cli_find(st_state *s, char *const *queries, int n, int how, size_t **out, size_t *count);
/* The same (or, with `all`, every resource) as handles of the session `e` on `s`, before any
 * operation of the session. Prints errors; returns an exit code. *out is new. */
int cli_find_handles(st_edit *e, st_state *s, char *const *queries, int n, int all, int how,
		     st_handle **out, size_t *count);

/* Commits the session and writes the target's state (a file with its .bak, or a stack of its
 * backend) when it changed (or `always`), as st_edit_commit_save does; in filter mode always,
 * to the filter's file (the caller then calls cli_filter_emit). */
int cli_commit_save(cli_target *t, st_edit *e, int always, st_diff *d, st_problems *probs,
		    int *written, st_error *err);

/* The shared flow of mutating commands. */
typedef struct cli_mutate_opts {
	const char *cmd;
	int dry_run;
	int json;
	int allow_dups;
	int show_diff; /* list the changed resources even when writing */
	int lazy;      /* the operation changes a few resources through the session: the state
			* may be loaded lazily (st_load_opts.lazy) */
	int any_place; /* the operation replaces the deployment (edit): no check of the place
			* before it (cli_refuse_misplaced); the operation checks its result */
	int (*after_save)(void *arg); /* runs once the state is written (not on a dry run) */
	void (*save_failed)(void *arg); /* runs when the commit's check or the write failed (a
					 * file is then unchanged), under the lock, once the error
					 * is printed */
	char summary[256]; /* printed after a successful write; the operation may fill it */
} cli_mutate_opts;

/* An operation: returns ST_OK, an ST_E* code with err set, or EXIT_FAIL/EXIT_USAGE after
 * printing its own message. */
typedef int (*cli_mutate_fn)(st_edit *e, st_state *s, void *arg, st_error *err);

int cli_mutate(cli_target *t, const cli_mutate_opts *mo, cli_mutate_fn fn, void *arg);

/* Handles a command's own option: returns 0 when it took it. */
typedef int (*cli_extra_fn)(int opt, const char *arg, void *ctx);

/* Parses the options every mutating command takes (--backend, --stack, --dry-run, --json,
 * --allow-duplicate-keys, --max-size, --help) and `extra` ones. Sets t->arg from the first
 * positional unless --stack was given; the rest are in *pos. Returns -1 to go on, or an exit
 * code (help printed, usage error). */
int cli_mutate_parse(int argc, char **argv, const char *help, const struct option *extra,
		     cli_extra_fn on_extra, void *ctx, cli_target *t, cli_mutate_opts *mo,
		     char ***pos, int *npos);

/* The option lines every mutating command's help ends with. */
#define CLI_MUTATE_HELP                                                                       \
	"  --backend URL -s, --stack NAME   a stack of a backend instead of a STATE file (a\n" \
	"                     DIY backend: DIR, s3://, azblob://, postgres://; Pulumi Cloud:\n"  \
	"                     https://api.pulumi.com and ORG/PROJECT/STACK, see statetool(1));\n" \
	"                     without --backend: $PULUMI_BACKEND_URL, else the backend.url of\n"  \
	"                     the project's Pulumi.yaml\n"                                       \
	"  -o -               write the result to standard output, not back to STATE\n"        \
	"                     (a STATE of '-', standard input, is always written there)\n"     \
	"  --dry-run          print what would change (resources added, removed, changed,\n"   \
	"                     with the fields) and write nothing (a lock the real run would\n"  \
	"                     meet is noted)\n"                                                  \
	"  --json             the summary as one JSON document\n"                               \
	"  --allow-duplicate-keys   write a state whose file repeats object keys\n"             \
	"  --max-size SIZE    refuse files that inflate beyond SIZE (default 4G)\n"            \
	"  -y, --yes          accepted and ignored (statetool never asks for a confirmation)\n" \
	"  -h, --help         show this help\n"                                                 \
	"\n"                                                                                     \
	"The state is locked, checked before and after (a valid state never becomes\n"          \
	"invalid: the edit is refused and nothing is written), and written atomically;\n"       \
	"the previous file is kept as STATE.bak (`statetool restore STATE` puts it back).\n"    \
	"Filter mode (STATE '-' or -o -): no lock, no .bak; the result reaches stdout only\n"   \
	"when every check passed (else stdout gets nothing, exit 1); messages go to stderr.\n"  \
	"A state older than version 3 is migrated first, as Pulumi's state commands do.\n"      \
	"Format, compression and secrets (ciphertexts stay byte-identical) are kept.\n"

/* Reads a passphrase without ever taking it from the command line: the environment variable
 * `env` if set at all (even empty), else the file named by `env_file`, else `flag_file`, else
 * a no-echo prompt on the terminal (asked twice when `confirm`). *out is sodium_malloc'ed: free
 * with cli_passphrase_free. Prints errors; returns an exit code. */
int cli_passphrase(const char *env, const char *env_file, const char *flag_file,
		   const char *prompt, int confirm, char **out, size_t *len);
void cli_passphrase_free(char *p);
/* Opens the secrets manager of a state, asking for the passphrase only when the provider is a
 * passphrase one and `need_key` is set (there is something to decrypt or encrypt). Prints
 * errors; returns an exit code. */
int cli_open_secrets(st_state *s, const char *passphrase_file, int need_key, st_secrets **out);
/* For a rekey: reads the current passphrase and then the new one (PULUMI_CONFIG_PASSPHRASE_NEW
 * or its _FILE, or the file given), opens the state's secrets with the first and makes a
 * passphrase manager with a new salt from the second; both keys are derived at once. */
typedef struct cli_config_key {
	const char *file, *salt; /* the stack config and its encryptionsalt (NULL: none) */
	st_secrets *out;         /* new: the config's own key, NULL when it is the state's */
} cli_config_key;
/* With `cfg` (may be NULL): also opens the stack config's own key with the current
 * passphrase (an incorrect passphrase for it is an error naming cfg->file). */
int cli_open_secrets_cfg(st_state *s, const char *passphrase_file, int need_key,
			 cli_config_key *cfg, st_secrets **out);
int cli_open_secrets_pair(st_state *s, const char *passphrase_file,
			  const char *new_passphrase_file, cli_config_key *cfg, st_secrets **from,
			  st_secrets **to);

/* secrets rekey --stack-config FILE across a crash (tools/rekey_stage.c): the new config is
 * staged as FILE.statetool-rekey (the config's mode, durable) before the state is written and
 * renamed into place after it (FILE.bak keeps the config before). Each prints its errors and
 * returns an exit code. cli_rekey_staged_name: new (free()), NULL when out of memory. */
char *cli_rekey_staged_name(const char *config);
int cli_rekey_stage(const char *config, const char *text, size_t len);
int cli_rekey_commit(const char *config);
/* A staged config left by an interrupted rekey, found before anything else is done with the
 * state `s` (loaded under its lock): renamed into place when its salt is the state's
 * (*completed = 1), removed when it is not and FILE exists, refused (naming both and
 * `statetool restore` of t) when FILE is missing. Without `settle` (a dry run, or no lock
 * held) a staged file is refused and nothing changed. Nothing staged: EXIT_OK. */
int cli_rekey_resolve(const char *config, st_state *s, const cli_target *t, int settle,
		      int *completed);

int cmd_secrets(int argc, char **argv);
int cmd_move(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_index(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_delete(int argc, char **argv);
int cmd_rename(int argc, char **argv);
int cmd_protect(int argc, char **argv);
int cmd_unprotect(int argc, char **argv);
int cmd_taint(int argc, char **argv);
int cmd_untaint(int argc, char **argv);
int cmd_repair(int argc, char **argv);
int cmd_pending(int argc, char **argv);
int cmd_replace_provider(int argc, char **argv);
int cmd_edit(int argc, char **argv);
int cmd_restore(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_migrate(int argc, char **argv);
int cmd_stack(int argc, char **argv);
int cmd_stacks(int argc, char **argv);
int cmd_unlock(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_upgrade(int argc, char **argv);
int cmd_validate(int argc, char **argv);

#endif
