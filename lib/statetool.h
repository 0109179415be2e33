/*
 * statetool: load, validate, migrate, edit, move and import Pulumi deployment states.
 *
 * Conventions (the same in every module):
 *  - Every exported name starts with st_ or ST_.
 *  - Fallible calls return 0 (ST_OK) or a negative ST_E* code, or NULL, and fill the optional
 *    caller-owned st_error passed last (it may be NULL). The first error set wins; it is never
 *    re-wrapped on the way up. So initialise an st_error with st_error_clear before its first
 *    use (an uninitialised one is read), and clear it again after handling an error before
 *    passing it on: a record that already holds an error keeps it, and a later failure then
 *    returns its own code with the earlier message.
 *  - Ownership is stated in each comment with three words: a *new* object belongs to the caller
 *    (release it with its _free function or json_decref), a *borrowed* one belongs to its owner
 *    and lives as long as the owner is unchanged, a *stolen* argument is owned by the callee from
 *    the call on, even when the call fails.
 *  - The library never prints and never exits, and reads no STATETOOL_* environment variable:
 *    timings and crash tests go through st_set_hooks, the thread choice through st_set_threads
 *    and the options' `threads`.
 *  - A pointer argument may be NULL only where its comment says so (`err` always may; the
 *    _free functions accept NULL). NULL anywhere else (a handle, a name, an output) is a
 *    programming error: the library aborts, as assert() does but in every build, after one
 *    line on stderr: "libstatetool: FUNCTION: 'ARGUMENT' must not be NULL". An enum value or
 *    a flag bit the function does not know is ST_EINVAL naming it, nothing done.
 *  - ABI: the shared library exports exactly the functions declared ST_EXTERN here (built with
 *    hidden visibility; lib/statetool.sym lists them). Every options struct the caller fills
 *    starts with `unsigned version`: initialise it with its ST_*_INIT macro and then set the
 *    fields wanted, so a program built against this header keeps working when a later version
 *    adds fields (the library reads only the fields of the version given; a version it does
 *    not know is ST_EINVAL "unsupported options version"). ST_VERSION_NUMBER and
 *    st_version() tell the header's and the library's versions apart.
 *  - JSON values are jansson values (json_t). Numbers are always real (float64), as in Pulumi.
 */
#ifndef STATETOOL_H
#define STATETOOL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header. configure.ac takes the package version from ST_VERSION, so the
 * two cannot drift; st_version() and st_version_string() give the library's at run time. */
#define ST_VERSION "0.1.0"
#define ST_VERSION_MAJOR 0
#define ST_VERSION_MINOR 1
#define ST_VERSION_MICRO 0
/* 0xMMmmpp, for comparisons: #if ST_VERSION_NUMBER >= 0x000200 */
#define ST_VERSION_NUMBER \
	((ST_VERSION_MAJOR << 16) | (ST_VERSION_MINOR << 8) | ST_VERSION_MICRO)

/* Attributes where the compiler has them (GCC, Clang), nothing elsewhere. */
#if defined(__GNUC__) || defined(__clang__)
#define ST_ATTRS(x) __attribute__(x)
#else
#define ST_ATTRS(x)
#endif

/* Marks what the shared library exports: it is built with hidden visibility, so exactly the
 * functions declared ST_EXTERN here are its ABI (lib/statetool.sym lists them). */
#define ST_EXTERN ST_ATTRS((visibility("default")))

/* ST_VERSION_NUMBER and ST_VERSION of the library in use (which may be newer than the header a
 * program was compiled with). */
ST_EXTERN unsigned long st_version(void);
ST_EXTERN const char *st_version_string(void);

/* ---------------------------------------------------------------------------------------------
 * Errors
 */

/* Result codes. Never renumbered. */
enum {
	ST_OK = 0,
	ST_EIO = -1,           /* reading or writing a file failed */
	ST_EPARSE = -2,        /* malformed JSON or compressed data */
	ST_EFORMAT = -3,       /* well-formed JSON that is not a deployment state */
	ST_EVERSION = -4,      /* a version that is too old or too new */
	ST_EFEATURE = -5,      /* a v4 deployment needs features statetool does not know */
	ST_EINTEGRITY = -6,    /* the state breaks an integrity rule */
	ST_ENOTFOUND = -7,     /* no such resource, stack or file */
	ST_EAMBIGUOUS = -8,    /* a short name matches more than one resource */
	ST_ELOCKED = -9,       /* someone else holds the lock */
	ST_EINVAL = -10,       /* a bad argument: name, URN, option */
	ST_ENOMEM = -11,       /* out of memory */
	ST_ESECRETS = -12,     /* a secret cannot be encrypted or decrypted */
	ST_EPASSPHRASE = -13,  /* wrong or missing passphrase */
	ST_ECONFLICT = -14,    /* the change collides with what is there */
	ST_ELIMIT = -15,       /* a documented limit was exceeded */
	ST_EUNSUPPORTED = -16, /* a valid input statetool cannot handle (e.g. zstd) */
	ST_EREFUSED = -17,     /* a safety rule refused the operation (protected, dependents...) */
	ST_EEXIST = -18,       /* a create-only write found the object there already */
	ST_EAUTH = -19,        /* a server refused the credentials (or found none it accepts) */
	ST_EOUTCOME = -20      /* a change was sent but whether it was applied is not known (a
				* Pulumi Cloud import whose result could not be read): the
				* target may or may not have changed */
};

/* An error record, owned by the caller. Fields that do not apply are 0 or "". */
typedef struct st_error {
	int code;          /* one of ST_E* */
	int line;          /* 1-based line of a JSON error, 0 if none */
	int column;        /* 1-based column (in bytes) of a JSON error, 0 if none */
	long long offset;  /* byte offset of a JSON error, -1 if none */
	char file[512];    /* the file the error is about */
	char pointer[512]; /* JSON Pointer (RFC 6901) of the offending value */
	char message[2048];
} st_error;

/* Returns a short constant name for a code ("parse error", ...). */
ST_EXTERN const char *st_strerror(int code);

/* Clears an error record (code 0, empty strings, offset -1). Accepts NULL. */
ST_EXTERN void st_error_clear(st_error *err);

/* ---------------------------------------------------------------------------------------------
 * Process-wide settings: threads and hooks
 */

/* The thread choice of every call that has none of its own (an options struct's `threads`
 * field defers to it when 0): 0 = automatic (a second thread for big work when two processors
 * are online; the default), 1 = one thread, 2 = a second thread even on one processor. The
 * results are the same either way. ST_EINVAL for other values. Any thread may call it. */
ST_EXTERN int st_set_threads(int threads, st_error *err);

#define ST_HOOKS_VERSION 2

typedef struct st_hooks {
	unsigned version; /* ST_HOOKS_VERSION */
	/* The end of a step of an operation ("load: parsed", "write: fsync", "commit: features
	 * and diff", ...), or NULL when an operation starts: for timing. Called from whichever of
	 * the library's threads ran the step, possibly from several at once. */
	void (*phase)(void *ctx, const char *name);
	/* Step `step` of a durable write `op` is reached: "write" 1 (the new content written),
	 * 2 (synced), 3 (the previous one kept as backup), 4 (the new one in place); "pair" 1 to
	 * 7 (st_journal_write_pair); "index" 1 (an index update about to commit), 2 (a new index made, not yet in
	 * place), 3 (st_index_update_backend: the backend listed, no stack read yet); "bak" 1 (a local file's backup linked under its temporary name, not yet
	 * renamed over the .bak). For crash
	 * tests: the callback may end the process there (the library never does); when it
	 * returns, the write goes on. */
	void (*step)(void *ctx, const char *op, int step);
	void *ctx;
	/* Version 2. The number of lock objects (Pulumi's stack locks, a file's .lock) this
	 * process is writing or holds has changed to `n`: counted from before a lock object is
	 * written until after it is deleted, on whichever thread takes or releases it. A program
	 * that must not die holding one (an interrupt would leave Pulumi's lock behind) can
	 * defer a signal while n > 0; the callback may be called with a library mutex held: it
	 * must only record n. */
	void (*locks)(void *ctx, size_t n);
} st_hooks;

#define ST_HOOKS_INIT {ST_HOOKS_VERSION, NULL, NULL, NULL, NULL}

/* Installs hooks for the whole process (copied), replacing the previous ones; NULL removes
 * them (the default: no hooks). Any thread may call it. */
ST_EXTERN int st_set_hooks(const st_hooks *hooks, st_error *err);

/* ---------------------------------------------------------------------------------------------
 * Problems: the findings of loading and validation, all of them, not only the first.
 */

typedef enum st_severity {
	ST_SEV_WARNING = 1,
	ST_SEV_ERROR = 2
} st_severity;

typedef struct st_problem {
	st_severity severity;
	char *rule;    /* stable rule identifier, e.g. "integrity/parent-order" */
	char *message; /* Pulumi's wording where Pulumi has a message */
	char *pointer; /* JSON Pointer of the offending value, "" for the document */
	char *urn;     /* URN of the resource concerned, or NULL */
	char *file;    /* file name, or NULL */
} st_problem;

typedef struct st_problems {
	st_problem *items;
	size_t count;
	size_t capacity;
	size_t errors;   /* how many have ST_SEV_ERROR */
	size_t warnings; /* how many have ST_SEV_WARNING */
	void *st__dropped; /* the library's own: the earlier values of duplicate keys the reader
			    * kept for the decoder (NULL when none); freed by st_problems_clear */
} st_problems;

/* Adds one problem; copies every string. Returns ST_OK or ST_ENOMEM.
 * `pointer` and `urn` may be NULL. */
ST_EXTERN int st_problems_add(st_problems *list, st_severity sev, const char *rule,
			      const char *pointer, const char *urn, const char *fmt,
			      ...) ST_ATTRS((format(printf, 6, 7)));

/* Frees the strings and the array; the list itself is caller storage and is reset to empty. */
ST_EXTERN void st_problems_clear(st_problems *list);

/* ---------------------------------------------------------------------------------------------
 * JSON: the reader and the Go-compatible writer, usable on any document.
 */

/* How a document is written. Pulumi's forms: compact (DIY backend files) and 4-space indented
 * (`pulumi stack export`). */
typedef struct st_style {
	int compact;          /* 1: no whitespace; 0: indented with `indent` */
	char indent[9];       /* the indentation unit, "    " by default */
	int escape_html;      /* 1: <, >, & written as \u003c, \u003e, \u0026 (older Pulumi) */
	int trailing_newline; /* 1: the document ends with "\n" */
	int short_bf;         /* 1: \b and \f written short (Go >= 1.22); 0: \u0008, \u000c */
} st_style;

/* The style of current Pulumi for a DIY checkpoint (compact, no newline) or an export
 * (indented, newline). */
ST_EXTERN void st_style_checkpoint(st_style *style);
ST_EXTERN void st_style_export(st_style *style);

/* Limits of the reader. */
#define ST_PARSE_LIMITS_VERSION 2

typedef struct st_parse_limits {
	unsigned version;  /* ST_PARSE_LIMITS_VERSION */
	size_t max_depth;  /* nesting depth; 0 means ST_DEFAULT_MAX_DEPTH */
	size_t max_string; /* bytes in one string; 0 means no limit beyond memory */
	/* (version 2) What follows the document. 0: an error, as Go's json.Unmarshal (a DIY
	 * backend's checkpoint). ST_PARSE_FIRST_VALUE: the first JSON value is the document, as
	 * Go's json.Decoder.Decode reads it (`pulumi stack import`, `pulumi import --file`):
	 * what follows is not read, and `problems` (when not NULL) gets a warning
	 * json/trailing-data saying where it starts (st_state_from_json refuses it in a
	 * checkpoint envelope with json.Unmarshal's error). ST_PARSE_DECODER: that, and the
	 * Decoder's errors at the end of the input ("EOF" when it holds no value, "unexpected EOF"
	 * when the value is cut short), for input only a Decoder reads (an import file). */
	int first_value;
} st_parse_limits;

#define ST_PARSE_FIRST_VALUE 1
#define ST_PARSE_DECODER 2

#define ST_PARSE_LIMITS_INIT {ST_PARSE_LIMITS_VERSION, 0, 0, 0}

#define ST_DEFAULT_MAX_DEPTH 10000 /* Go's encoding/json limit */

/* Parses one JSON document from buf[0..len) into *out (new reference). Go's rules: numbers of
 * any size become float64 reals (beyond the float64 range: an error without `problems`; with
 * it a warning json/number-range and a placeholder st_state_from_json judges as Go would, an
 * error where Go stores a number, and which no writer writes), "\u0000" is allowed,
 * duplicate keys keep the last value (the earlier values are kept in `problems` for
 * st_state_from_json, whose decoder decodes them in turn as Go does: a later object may merge
 * into an earlier one, an earlier value of the wrong type is Go's error; so pass the same
 * `problems` list to both: with NULL here nothing is kept, and a key given twice is read
 * last-wins, not as Pulumi reads it), invalid UTF-8 and lone surrogates become U+FFFD. Each
 * leniency is reported as a warning in `problems` when it is not NULL, with its JSON Pointer.
 * Errors carry line, column and offset. `name` names the input in messages (may be NULL).
 * `limits` and `style_out` may be NULL. */
ST_EXTERN int st_json_parse(json_t **out, const char *buf, size_t len, const char *name,
			    const st_parse_limits *limits, st_style *style_out,
			    st_problems *problems, st_error *err);

/* st_json_parse of a file ("-" = standard input), plain, gzip or zstd, at most max_size bytes after
 * decompression (0: the default). A large plain file is mapped and its pages released as the
 * parser passes them, so the file and the tree are not both resident.
 * `limits`, `style_out` and `problems` may be NULL. */
ST_EXTERN int st_json_load_file(json_t **out, const char *path, size_t max_size,
				const st_parse_limits *limits, st_style *style_out,
				st_problems *problems, st_error *err);

/* Writes `value` (borrowed) exactly as Go's encoding/json would with the given style: keys in
 * the order they are held (callers sort maps), float64 shortest round-trip numbers, Go's string
 * escaping. *out is new (free()), not NUL-terminated beyond len but always followed by a NUL.
 * `style` and `len` may be NULL. */
ST_EXTERN int st_json_dump(const json_t *value, const st_style *style, char **out, size_t *len,
			   st_error *err);

/* st_json_dump of `value` (borrowed) as it stands `depth` levels deep inside a document that
 * the caller writes around it (a row of an array streamed one element at a time): its inner
 * lines indented depth + 1 levels, no trailing newline whatever the style says. The bytes are
 * the ones st_json_dump writes for that value in place in the whole document (at depth 0:
 * st_json_dump's bytes without its trailing newline). *out is new (free()), followed by a NUL.
 * `style` and `len` may be NULL. */
ST_EXTERN int st_json_dump_at(const json_t *value, const st_style *style, size_t depth,
			      char **out, size_t *len, st_error *err);

/* Formats a double as Go's encoding/json formats a float64 into buf (at least 32 bytes).
 * Returns the length. NaN and infinities are not representable and return -1. */
ST_EXTERN int st_json_format_number(double v, char *buf, size_t size);

/* ---------------------------------------------------------------------------------------------
 * JSON Schema (draft 2020-12)
 */

typedef struct st_schema st_schema;

/* Options of st_schema_validate. */
#define ST_SCHEMA_OPTS_VERSION 1

typedef struct st_schema_opts {
	unsigned version;                /* ST_SCHEMA_OPTS_VERSION */
	const char *root_pointer;        /* prefix of every reported pointer, e.g. "" */
	const char *rule_prefix;         /* rule id prefix, "schema" by default */
	st_severity additional_severity; /* severity of unknown fields; 0 = error */
	size_t max_problems;             /* stop reporting after this many; 0 = no limit */
} st_schema_opts;

#define ST_SCHEMA_OPTS_INIT {ST_SCHEMA_OPTS_VERSION, NULL, NULL, (st_severity)0, 0}

/* A new, empty schema set. *out is new: st_schema_free. */
ST_EXTERN int st_schema_new(st_schema **out, st_error *err);

/* Adds a schema document (borrowed: a reference is kept). `uri` is its retrieval URI; NULL
 * means its $id, or a generated one. The first document added is the default for validation.
 * Documents may refer to each other by $ref. `uri` may be NULL. */
ST_EXTERN int st_schema_add(st_schema *s, json_t *doc, const char *uri, st_error *err);

/* Compiles every document and resolves every $ref. A keyword statetool does not implement
 * ($dynamicRef, unevaluated*, ...), a pattern POSIX cannot express, or a $ref to a document not
 * added gives ST_EUNSUPPORTED. Called by st_schema_validate when needed. */
ST_EXTERN int st_schema_compile(st_schema *s, st_error *err);

/* Validates `instance` (borrowed) against the schema at `uri` (NULL = the default document;
 * may carry a fragment). Every violation is appended to `out` (NULL = only count) with rule
 * "<prefix>/<keyword>" and the instance's JSON Pointer. Returns the number of violations (0 =
 * valid), or a negative ST_E* code. `opts` may be NULL. */
ST_EXTERN int st_schema_validate(st_schema *s, const char *uri, const json_t *instance,
				 const st_schema_opts *opts, st_problems *out, st_error *err);

ST_EXTERN void st_schema_free(st_schema *s);

/* 1 when the keyword is implemented (or an annotation), 0 for $dynamicRef, unevaluated*, ... */
ST_EXTERN int st_schema_keyword_supported(const char *keyword);

/* ---------------------------------------------------------------------------------------------
 * Stores: where the bytes live (see doc/DESIGN.md, "Storage")
 *
 * A store is a flat set of objects named by keys: relative '/'-separated paths under the store's
 * root ("a/b.json"). A key has no empty, "." or ".." segment, no leading '/', no backslash and
 * no control character, so no key reaches outside the store. `st_store_open` dispatches on the
 * URL's scheme: file://PATH and plain paths, s3://BUCKET[/PREFIX][?PARAMS],
 * azblob://CONTAINER[/PREFIX][?PARAMS] and postgres://[USER@]HOST/DB[?PARAMS] (read as Pulumi
 * reads them: statetool(1), BACKENDS IN S3, BACKENDS IN AZURE BLOB STORAGE and BACKENDS IN
 * POSTGRESQL); gs:// is recognised and refused (ST_EUNSUPPORTED) until its implementation
 * lands. The DIY backend layout, its locks and the two-stack journal are written on top of these
 * calls only.
 */

typedef struct st_store st_store;
typedef struct st_backend st_backend; /* see "Backends" below */

/* What a store knows about an object. Fields it cannot tell are -1, 0 and "". */
typedef struct st_store_info {
	long long size;     /* bytes stored */
	long long mtime_ns; /* last modification, nanoseconds since the epoch */
	char etag[72];      /* an opaque tag that changes whenever the content changes */
} st_store_info;

/* One listed object (or, with ST_STORE_LIST_DIRS, a "directory": a key ending in '/'). */
typedef struct st_store_entry {
	char *key;
	st_store_info info;
} st_store_entry;

/* Opens the store at `url` (file://PATH or PATH, a leading ~/ being the home directory: the
 * directory must exist; azblob://... and gs://...: nothing is requested yet, the URL and the
 * environment are read, ST_EINVAL for a bad URL, ST_EUNSUPPORTED without usable credentials; postgres://...:
 * connects, and creates Pulumi's table when it is missing, as Pulumi does). *out is new:
 * st_store_free. A NULL or empty `url` is ST_EINVAL. */
ST_EXTERN int st_store_open(st_store **out, const char *url, st_error *err);

/* The store of one plain file: the file store at the file's directory, and the file's key in
 * it (*key new). The file itself need not exist. */
ST_EXTERN int st_store_open_file(st_store **out, char **key, const char *path, st_error *err);

/* Frees a store. Accepts NULL. */
ST_EXTERN void st_store_free(st_store *s);

/* The store's URL as given (borrowed), for messages: never holds credentials. */
ST_EXTERN const char *st_store_url(const st_store *s);

/* The scheme ("file", ...) (borrowed). */
ST_EXTERN const char *st_store_scheme(const st_store *s);

/* Which objects the store reaches, as a string (*out new: free()) that is the same for two
 * stores over the same objects however their URLs are spelt, and differs when they reach
 * different ones: the scheme, where the service is (an endpoint URL with its scheme and host
 * in lower case and without its scheme's own port), the bucket, container, database and table,
 * and the key prefix; never credentials, nor parameters that only choose how to reach it
 * (query order, S3's region and addressing style, timeouts, sslmode...). file: the real path of
 * the directory (symbolic links resolved: ST_ENOTFOUND when it is gone); s3: bucket, prefix and
 * the endpoint when one is given (URL, AWS_ENDPOINT_URL*, profile: AWS's own buckets are one
 * namespace); azblob: container and prefix at the service (account and domain); gs: bucket and
 * prefix at the JSON API; postgres: host, port, database (the user's own when none is named),
 * table and prefix. Two stores with equal identities are the same place: a move between them
 * is refused, a journal recognises its other side, a lock this process holds is known. */
ST_EXTERN int st_store_identity(const st_store *s, char **out, st_error *err);

/* 1 when `key` is a valid key (see above), else 0. */
ST_EXTERN int st_store_key_valid(const char *key);

/* Reads a whole object: *data is new (free()), followed by a NUL; `info` (may be NULL) is
 * filled. ST_ENOTFOUND when there is none; ST_ELIMIT beyond `max_size` bytes (0: the default,
 * ST_DEFAULT_MAX_FILE). Bytes as stored: nothing is decompressed. */
ST_EXTERN int st_store_read(st_store *s, const char *key, size_t max_size, char **data, size_t *len,
			    st_store_info *info, st_error *err);

/* The info of one object; ST_ENOTFOUND when there is none. `info` may be NULL. */
ST_EXTERN int st_store_stat(st_store *s, const char *key, st_store_info *info, st_error *err);

/* Flags of a write. */
#define ST_STORE_CREATE_ONLY 1u /* only when no object has the key (else ST_EEXIST, nothing
				 * written): O_EXCL, If-None-Match: *, ifGenerationMatch=0... */
#define ST_STORE_EXACT_MODE 2u  /* where the store has modes: the new file gets `mode` even
				 * where one exists (plaintext secrets must not keep 0644) */
#define ST_STORE_CHECKPOINT 4u  /* `key` is a DIY stack's checkpoint: once it is written, what
				 * Pulumi's save does after (with PULUMI_DIY_BACKEND_RETAIN_CHECKPOINTS
				 * or PULUMI_RETAIN_CHECKPOINTS 1 or true: the bytes again as
				 * <key>.<UnixNano>; a failure of that is returned, the object written) */

/* Called once the new content is complete and durable, before it becomes visible: anything
 * but ST_OK abandons the write (the old object stays as it was) and is returned. */
typedef int (*st_store_proceed_fn)(void *ctx);

#define ST_STORE_WRITE_OPTS_VERSION 1

typedef struct st_store_write_opts {
	unsigned version;       /* ST_STORE_WRITE_OPTS_VERSION */
	unsigned flags;         /* ST_STORE_* */
	const char *backup_key; /* when not NULL: the current object is kept under this key
				 * (after `proceed`, before the new one becomes visible) */
	st_store_proceed_fn proceed; /* may be NULL */
	void *proceed_ctx;
	mode_t mode;            /* a new file's mode where the store has modes (0: 0644); an
				 * existing file keeps its own unless ST_STORE_EXACT_MODE */
} st_store_write_opts;

#define ST_STORE_WRITE_OPTS_INIT {ST_STORE_WRITE_OPTS_VERSION, 0, NULL, NULL, NULL, 0}

/* What a fill callback writes to. */
typedef struct st_store_writer st_store_writer;

/* Appends bytes to the object being written. ST_OK or an error (err set). */
ST_EXTERN int st_store_writer_write(st_store_writer *w, const void *data, size_t len,
				    st_error *err);

/* Produces the content of a write by calls to st_store_writer_write. */
typedef int (*st_store_fill_fn)(void *ctx, st_store_writer *w, st_error *err);

/* Writes data[0..len) to `key`, atomically where the store allows it (file://: a temporary file,
 * fsync, rename, fsync of the directory; a crash leaves the old or the new object, never a torn
 * one). `opts` may be NULL. */
ST_EXTERN int st_store_write(st_store *s, const char *key, const void *data, size_t len,
			     const st_store_write_opts *opts, st_error *err);

/* The same with the content streamed by `fill` (no whole copy in memory where the store allows
 * it). `ctx` and `opts` may be NULL. */
ST_EXTERN int st_store_write_fill(st_store *s, const char *key, st_store_fill_fn fill, void *ctx,
				  const st_store_write_opts *opts, st_error *err);

/* Flags of a listing. */
#define ST_STORE_LIST_DIRS 1u /* only the level below `prefix` (which ends in '/'): objects
			       * there, and each deeper level once as a key ending in '/' */

/* Lists the objects whose key starts with `prefix` ("" for all), sorted by key (bytewise).
 * *out is new: st_store_entries_free. A prefix with no objects gives an empty list.
 * `prefix` may be NULL. */
ST_EXTERN int st_store_list(st_store *s, const char *prefix, unsigned flags, st_store_entry **out,
			    size_t *count, st_error *err);

ST_EXTERN void st_store_entries_free(st_store_entry *entries, size_t count);

/* Where a key of a store is, for messages (new): a file store's local path, else URL/key. */
ST_EXTERN char *st_store_where(const st_store *s, const char *key);

/* Deletes an object. ST_ENOTFOUND when there is none. */
ST_EXTERN int st_store_delete(st_store *s, const char *key, st_error *err);

/* Copies an object to another key (atomically replacing it), within the store: the store's own
 * copy where it has one, else a read and a write. ST_ENOTFOUND when `src` does not exist. */
ST_EXTERN int st_store_copy(st_store *s, const char *src, const char *dst, st_error *err);

/* How the network stores (s3://, azblob://, gs://) talk HTTP, for the whole process. Every field
 * left 0 (or -1 for `retries`) keeps its default. */
#define ST_NET_OPTS_VERSION 1

typedef struct st_net_opts {
	unsigned version;         /* ST_NET_OPTS_VERSION */
	long connect_timeout_ms;  /* waiting for a connection (0: 10 s) */
	long timeout_ms;          /* a whole request (0: 600 s); one with no byte moving for 60 s
				   * (or this, when shorter) is given up too */
	int retries;              /* repeats of a request that got no answer or a 408, 429, 500,
				   * 502, 503 or 504, for requests that may run twice (-1: 4) */
	long backoff_ms;          /* the first pause before a repeat, doubled each time up to 5 s,
				   * with jitter (0: 200 ms) */
	/* Called after each HTTP attempt (may be NULL), from the thread that made it: the method,
	 * the host[:port], the path without its query string, the status (0: no answer). Nothing
	 * secret is passed (no query, no header, no body): for tests and debugging. */
	void (*request)(void *ctx, const char *method, const char *host, const char *path,
			long status);
	void *ctx;
} st_net_opts;

#define ST_NET_OPTS_INIT {ST_NET_OPTS_VERSION, 0, 0, -1, 0, NULL, NULL}

/* Installs the settings (copied) for the clients made from now on; NULL restores the defaults.
 * ST_EINVAL for an unknown version or a negative duration. Any thread may call it. */
ST_EXTERN int st_set_net(const st_net_opts *opts, st_error *err);

/* ---------------------------------------------------------------------------------------------
 * Files: compression, atomic writes, backups.
 */

typedef enum st_compression {
	ST_COMPRESS_NONE = 0,
	ST_COMPRESS_GZIP = 1,
	ST_COMPRESS_ZSTD = 2
} st_compression;

/* Reads a whole file ("-" is standard input) and decompresses it when it is gzip or zstd
 * (detected by their magic bytes, 1f 8b and 28 b5 2f fd). `max_size` bounds the inflated size
 * (0 means ST_DEFAULT_MAX_FILE). *out is new (free()), followed by a NUL.
 * `compression` may be NULL. */
ST_EXTERN int st_file_read(const char *path, size_t max_size, char **out, size_t *len,
			   st_compression *compression, st_error *err);

#define ST_DEFAULT_MAX_FILE ((size_t)4 << 30)

/* Decompresses data[0..len) (borrowed) when its magic bytes say gzip or zstd, at most max_size
 * bytes (0: ST_DEFAULT_MAX_FILE); plain data is copied. `name` names it in messages. *out is
 * new (free()), followed by a NUL; *compression (may be NULL) tells what it was.
 * `name` may be NULL. */
ST_EXTERN int st_file_decompress(const void *data, size_t len, size_t max_size, const char *name,
				 char **out, size_t *outlen, st_compression *compression,
				 st_error *err);

/* Options for st_file_write_atomic and the saves. */
#define ST_WRITE_OPTS_VERSION 2

typedef struct st_write_opts {
	unsigned version;            /* ST_WRITE_OPTS_VERSION */
	st_compression compression;  /* st_file_write_atomic's (a state keeps its own) */
	int backup;                  /* 1: keep the previous file as <path>.bak */
	mode_t mode;    /* mode for a new file; an existing file keeps its own. 0 means 0644 */
	int threads;    /* writing a big state: 0 = automatic (st_set_threads), 1 = one, 2 = two */
	int exact_mode; /* (version 2) 1: the file gets `mode` even where one exists: a file of
			 * plaintext secrets written over a 0644 one must not stay readable */
} st_write_opts;

#define ST_WRITE_OPTS_INIT {ST_WRITE_OPTS_VERSION, ST_COMPRESS_NONE, 0, 0, 0, 0}

/* Replaces `path` with data[0..len) atomically: a temporary file in the same directory, fsync,
 * the old file kept as <path>.bak (when asked), rename, fsync of the directory. A crash leaves
 * either the old or the new file, never a torn one. Refuses to write through a symbolic link.
 * `opts` may be NULL. */
ST_EXTERN int st_file_write_atomic(const char *path, const void *data, size_t len,
				   const st_write_opts *opts, st_error *err);

/* ---------------------------------------------------------------------------------------------
 * Deployment states
 */

typedef enum st_envelope {
	ST_ENVELOPE_EXPORT = 1,    /* {"version", "features"?, "deployment"} (pulumi stack export) */
	ST_ENVELOPE_CHECKPOINT = 2 /* {"version", "features"?, "checkpoint": {...}} (DIY backend) */
} st_envelope;

/* Known deployment versions and features. */
#define ST_VERSION_OLDEST 1
#define ST_VERSION_CURRENT 3
#define ST_VERSION_LATEST 4

typedef struct st_state st_state;

#define ST_LOAD_OPTS_VERSION 3

typedef struct st_load_opts {
	unsigned version; /* ST_LOAD_OPTS_VERSION */
	size_t max_size;  /* inflated size limit, 0 = ST_DEFAULT_MAX_FILE */
	size_t max_depth; /* 0 = ST_DEFAULT_MAX_DEPTH */
	/* parsing a large document: 0 = automatic (st_set_threads's choice), 1 = one thread,
	 * 2 = two threads even on one processor */
	int threads;
	/* (version 2) st_state_load_file only: 1 = a lazy state, for st_validate,
	 * st_check_place and edit sessions: the `inputs` and `outputs` of a resource whose text is
	 * exactly what statetool writes stay unparsed in the file's text, which the state keeps
	 * mapped (or read) while it lives, but for their special values (secrets, assets,
	 * archives, references, outputs). Those checks give the same report as on a full load,
	 * in less time and memory; an edit session parses a resource in full before it changes
	 * it, and writing the state copies the others' bytes from the text, so the bytes written
	 * are those of a full load. Through the accessors (st_state_root, st_state_resources,
	 * st_edit_resource) such resources show no `inputs` and `outputs`, or only their special
	 * values. Loading, its errors and problems are as with 0. */
	int lazy;
	/* (version 3) st_backend_load of a DIY stack in a store that is no local directory
	 * only: the stack's object (borrowed), as st_backend_resolve_key or st_backend_list told
	 * it, read without listing the stack's objects again (on an object store a listing is a
	 * round trip); when it has gone since, the stack's newest object is listed and read. A
	 * key that is no <stack>.json[.gz|.zst] of the stack: ST_EINVAL. NULL: listed. */
	const char *key;
} st_load_opts;

#define ST_LOAD_OPTS_INIT {ST_LOAD_OPTS_VERSION, 0, 0, 0, 0, NULL}

/* Loads a state from a file ("-" = standard input), plain, gzip or zstd, in either envelope, any
 * version Pulumi reads (0 to 4). Unknown versions and features are refused: ST_EVERSION or
 * ST_EFEATURE with Pulumi's wording. Data after the document is read as Pulumi reads the
 * envelope: in an export ignored with a warning json/trailing-data (`pulumi stack import`
 * reads the first JSON value), in a checkpoint an error (json.Unmarshal). *out is new.
 * `opts` may be NULL. */
ST_EXTERN int st_state_load_file(st_state **out, const char *path, const st_load_opts *opts,
				 st_error *err);

/* The same from a buffer (borrowed; it may be freed after the call). `name` is for messages.
 * Data after the document is an error (a buffer is read as a backend's object is).
 * `name` and `opts` may be NULL. */
ST_EXTERN int st_state_load_buffer(st_state **out, const void *buf, size_t len, const char *name,
				   const st_load_opts *opts, st_error *err);

/* Makes a state of a document already parsed with st_json_parse: `root` is stolen (even on
 * failure); `style` (may be NULL) and `problems` (may be NULL; its items are moved into the
 * state, leaving it empty) are what st_json_parse reported. The document is decoded as Go
 * decodes Pulumi's types (keys of its structs matched in any case and respelt; a key given
 * twice decoded into the earlier value as Go does, from the earlier values the reader kept in
 * `problems` (without them the last value stands); what Go's
 * decoder refuses fails with ST_EFORMAT, Go's message and pointer; a checkpoint read with
 * ST_PARSE_FIRST_VALUE that had data after it fails with ST_EPARSE, json.Unmarshal's error). On failure `problems`
 * holds what the reader and the decoder found (rules decode/...), for the caller to report.
 * *out is new. `name` may be NULL. */
ST_EXTERN int st_state_from_json(st_state **out, json_t *root, const st_style *style,
				 st_problems *problems, const char *name, st_error *err);

/* A new empty state in the export envelope, version 3, current Pulumi style. *out is new. */
ST_EXTERN int st_state_new(st_state **out, st_error *err);

ST_EXTERN void st_state_free(st_state *state);

ST_EXTERN st_envelope st_state_envelope(const st_state *state);
/* The version as in the file: 0 for an unversioned checkpoint, otherwise 1 to 4. */
ST_EXTERN int st_state_version(const st_state *state);
/* The `features` array (borrowed) or NULL. */
ST_EXTERN json_t *st_state_features(const st_state *state);
/* The whole document (borrowed). Edits through it are allowed; see st_state_touch. */
ST_EXTERN json_t *st_state_root(const st_state *state);
/* The deployment object (borrowed), or NULL for a stack with no deployment. */
ST_EXTERN json_t *st_state_deployment(const st_state *state);
/* The resources array (borrowed); created empty in the deployment when `create` is set. NULL
 * when there is none and `create` is 0. */
ST_EXTERN json_t *st_state_resources(st_state *state, int create);
/* The checkpoint's `stack` (borrowed) or NULL. */
ST_EXTERN const char *st_state_checkpoint_stack(const st_state *state);
/* Where it was loaded from (borrowed), or NULL. */
ST_EXTERN const char *st_state_path(const st_state *state);
/* Style and compression detected on load; may be changed before saving. */
ST_EXTERN st_style *st_state_style(st_state *state);
ST_EXTERN st_compression st_state_compression(const st_state *state);
ST_EXTERN void st_state_set_compression(st_state *state, st_compression c);
/* Problems noticed while reading (duplicate keys, invalid UTF-8...) (borrowed). */
ST_EXTERN const st_problems *st_state_load_problems(const st_state *state);

/* Must be called after editing the tree through the borrowed pointers: it drops what the state
 * derived from the tree (which version-4 features no resource uses, so the next commit or
 * st_state_apply_features looks at every resource again) and reads the envelope, version and
 * deployment's place again. When the tree is no longer a state, these keep their old values. */
ST_EXTERN void st_state_touch(st_state *state);

/* Switches the envelope. To the checkpoint envelope a stack name is needed: `stack` when not
 * NULL, else the current one, else `organization/<project>/<stack>` from the root stack's URN
 * (legacy layout: set `stack` explicitly). */
ST_EXTERN int st_state_set_envelope(st_state *state, st_envelope envelope, const char *stack,
				    st_error *err);

/* Serializes with the state's style (or `style` when not NULL): struct fields in the order held
 * (Pulumi's own for files Pulumi wrote; fields statetool adds at Pulumi's position), Go maps
 * (property maps, config, propertyDependencies, ...) with sorted keys. *out is new (free()).
 * A state loaded lazily from a file that another program has since rewritten in place (its
 * size or modification time changed): ST_ECONFLICT, nothing made. `len` may be NULL. */
ST_EXTERN int st_state_dump(const st_state *state, const st_style *style, char **out, size_t *len,
			    st_error *err);

/* Rewrites every struct in current Pulumi field order and drops empty `omitempty` fields, as
 * Pulumi's marshaller would. Reports nothing; used by `convert --canonical`. */
ST_EXTERN void st_state_canonicalize(st_state *state);

/* Saves atomically to `path` (NULL = where it was loaded from) with a .bak of the previous
 * file, the state's compression and the file's mode kept. Recomputes the manifest magic.
 * A state loaded lazily from a file that another program has rewritten in place since (its
 * size or modification time changed, checked before the write and after its last byte):
 * ST_ECONFLICT, nothing written. `opts` may be NULL. */
ST_EXTERN int st_state_save(st_state *state, const char *path, const st_write_opts *opts,
			    st_error *err);

/* ---------------------------------------------------------------------------------------------
 * Validation
 */

#define ST_VALIDATE_OPTS_VERSION 1

typedef struct st_validate_opts {
	unsigned version;             /* ST_VALIDATE_OPTS_VERSION */
	int skip_schema;              /* 1: integrity rules only */
	st_schema *schema;            /* the built-in schemas (borrowed); NULL: loaded per call */
	st_schema **extra;            /* user schemas applied to the whole document (--schema) */
	size_t nextra;
	st_schema **resource_schemas; /* user schemas applied to each resource */
	size_t nresource_schemas;
	size_t max_problems;          /* cap on schema problems; 0 = no cap */
} st_validate_opts;

#define ST_VALIDATE_OPTS_INIT {ST_VALIDATE_OPTS_VERSION, 0, NULL, NULL, 0, NULL, 0, 0}

/* The schemas statetool was built with (the files in schemas/: state, deployment, resource,
 * property-value, import), compiled. *out is new. */
ST_EXTERN int st_schema_builtin(st_schema **out, st_error *err);

/* Validates a state: what the reader noticed (duplicate keys, invalid UTF-8), the schemas, then
 * every integrity rule. Every problem is appended to `out` with its severity, rule, message,
 * JSON Pointer and URN. Returns ST_OK when validation ran (whatever it found).
 * `opts` may be NULL. */
ST_EXTERN int st_validate(st_state *state, const st_validate_opts *opts, st_problems *out,
			  st_error *err);

/* Pulumi's VerifyIntegrity rules (with Pulumi's messages) and statetool's extra warnings
 * (URN grammar and stack, parent type chains, root stacks, secrets, pending operations,
 * aliases). Appends to `out`. */
ST_EXTERN int st_integrity_check(st_state *state, st_problems *out, st_error *err);

/* What Pulumi would decode a document (borrowed) as, by the keys Go matches (in any case): a
 * state (an export's or a checkpoint file's envelope, or an unversioned checkpoint), an import
 * file (resources, nameTable, providerInputs), or neither. */
typedef enum st_doc_kind { ST_DOC_NEITHER = 0, ST_DOC_STATE, ST_DOC_IMPORT } st_doc_kind;
ST_EXTERN st_doc_kind st_doc_kind_of(const json_t *doc);

#define ST_PLACE_ALL 1u /* compare the URNs even where the checkpoint agrees with the place
			 * (and with no place, with the checkpoint's own stack): what a mutation
			 * asks before it changes a state */
#define ST_PLACE_EXPORTS 2u /* the place holds exports, not checkpoints: a Pulumi Cloud stack
			     * (no place/export-in-backend) */

/* Is a state (borrowed) where it claims to be? `place` names the stack where it lies in a DIY
 * backend (organization/PROJECT/STACK, PROJECT/STACK or, legacy, STACK), NULL when it lies in
 * none. Appends to `out`: place/export-in-backend (error: a backend's object is an export,
 * which Pulumi cannot load), place/stack-mismatch (warning: the checkpoint's `stack` names
 * another stack; Pulumi goes by the place and rewrites it), place/urn-mismatch (warning, one
 * for all: URNs naming another stack or project than the place; without ST_PLACE_ALL only
 * when the checkpoint does not name the place, since the integrity check's urn/stack-mismatch
 * compares them with the checkpoint). ST_OK when the check ran (whatever it found).
 * `place` may be NULL. */
ST_EXTERN int st_check_place(st_state *state, const char *place, unsigned flags,
			     st_problems *out, st_error *err);

/* Validates a `pulumi import --file` document (borrowed) as Pulumi decodes it (rules
 * decode/...; the keys of its structs, matched in any case as Go does, are respelt in `doc`)
 * and by schemas/import.json. `schema` may be NULL (built-in schemas loaded per call). A key
 * given twice decodes as Go decodes it (a later struct or map merged into the earlier one,
 * json/duplicate-key reworded) when `out` is the list st_json_parse filled for `doc` (its
 * earlier values are freed here); else the last value of each key is taken. */
ST_EXTERN int st_validate_import_file(json_t *doc, st_schema *schema, st_problems *out,
				      st_error *err);

/* ---------------------------------------------------------------------------------------------
 * Finding resources
 */

/* Resolves `query` to resource indexes in the state's resources array. Accepted forms, tried in
 * this order: "#N" (index N); an exact URN; the resource name (the URN's name, matched whole);
 * a tail of the URN made of whole segments ("TYPE::NAME", "PARENT$TYPE::NAME",
 * "PROJECT::QTYPE::NAME"...), never a raw character suffix. A URN may be held by several resources (copies marked
 * `delete: true`): all are returned, whichever form named it. Any other form must match one resource: several give
 * ST_EAMBIGUOUS listing the candidates, none gives ST_ENOTFOUND with up to three "did you mean"
 * suggestions (distinct URNs within Pulumi's edit distance), never a guess. *out is new (free()). */
ST_EXTERN int st_state_find(st_state *state, const char *query, size_t **out, size_t *count,
			    st_error *err);

/* st_state_find with flags. ST_FIND_LIVE: resources marked `delete: true` are not found (nor
 * suggested), as Pulumi's protect and taint see only live resources; a "#N" naming one gives
 * ST_EREFUSED saying so. */
#define ST_FIND_LIVE 1u
ST_EXTERN int st_state_find_ex(st_state *state, const char *query, unsigned flags, size_t **out,
			       size_t *count, st_error *err);

/* ---------------------------------------------------------------------------------------------
 * Migration
 */

typedef struct st_changes {
	char **lines; /* human-readable, one change each */
	size_t count;
	size_t capacity;
} st_changes;

/* Appends one line; a NULL list ignores it. `c` may be NULL. */
ST_EXTERN int st_changes_add(st_changes *c, const char *fmt, ...) ST_ATTRS((format(printf, 2, 3)));
ST_EXTERN void st_changes_clear(st_changes *c);

/* Upgrades a version 0, 1 or 2 state to version 3 with Pulumi's rules (v1 resources: `defaults`
 * dropped; v2 to v3: propertyDependencies filled from dependencies, one entry per input key),
 * or to 4 when a feature requires it. Each change is appended to `report` (may be NULL).
 * A state already at 3 or 4 keeps its resources; its features and version are recomputed
 * (st_state_apply_features). */
ST_EXTERN int st_state_migrate(st_state *state, st_changes *report, st_error *err);

/* Recomputes `features` (sorted) from what the deployment uses, and sets version 4 when any is
 * used, 3 otherwise (only for states at version 3 or 4). Returns the number of features. */
ST_EXTERN int st_state_apply_features(st_state *state);

/* Sets manifest.magic to the SHA-256 of manifest.version (Pulumi's NewMagic). */
ST_EXTERN void st_state_fix_magic(st_state *state);

/* The SHA-256 magic of a manifest version string, into buf (65 bytes). "" for "".
 * A NULL or empty `version` gives an empty magic. */
ST_EXTERN void st_magic_for_version(const char *version, char buf[65]);

/* ---------------------------------------------------------------------------------------------
 * Editing: a session over a state with Pulumi's semantics, a diff and integrity checks
 *
 * A session is one transaction over a state: st_edit_begin opens it (a state older than
 * version 3 is migrated first, as Pulumi's state commands do; the migration is reported), the
 * operations (st_edit_*: delete, rename, flags, repair, pending, providers, secrets, import,
 * move) change the state in memory, and st_edit_commit (or _commit_save, _commit_pair) checks
 * integrity (a state that was valid must stay valid, else the edit is refused with
 * ST_EINTEGRITY and rolled back), recomputes version and features, diffs and writes.
 * Resources are copied before they are changed, so the session can diff and roll back.
 *
 * Operations chain: each one starts from what the previous ones left, and one that fails
 * leaves the session as it was before it. Resources are named by handles (st_handle), which
 * no operation shifts: a handle names the same resource after others are deleted, added or
 * reordered, and after its own rename. Get one from a URN (st_edit_handle_of) or from an
 * index of the state as the session has it now (st_edit_handle_at).
 */

typedef struct st_edit st_edit;

/* One resource in a diff: '+' added, '-' removed, '~' changed (with the changed fields). */
typedef struct st_diff_entry {
	char kind;
	char *urn;
	char **fields;
	size_t nfields;
} st_diff_entry;

typedef struct st_diff {
	st_diff_entry *items;
	size_t count;
	size_t pending_before, pending_after; /* pending operations */
	int other_changed; /* something besides resources and pending operations changed */
} st_diff;

ST_EXTERN void st_diff_clear(st_diff *diff);

/* Opens a session on `state` (borrowed; it must outlive the session). Lines describing what
 * each operation does are appended to `report` (borrowed, may be NULL). *out is new. */
ST_EXTERN int st_edit_begin(st_edit **out, st_state *state, st_changes *report, st_error *err);

/* A resource of a session (a value; valid for the session's life). id 0 names nothing. */
typedef struct st_handle {
	size_t id;
} st_handle;

/* The handle of the resource at `index` of the session's state as it is now (after the
 * operations so far). ST_ENOTFOUND when there is none. */
ST_EXTERN int st_edit_handle_at(st_edit *e, size_t index, st_handle *out, st_error *err);

/* The handle of the resource whose URN is `urn` (borrowed): the copy not marked delete: true,
 * or the only copy. ST_ENOTFOUND when none has it; ST_EAMBIGUOUS when several live copies do
 * (take them by index). */
ST_EXTERN int st_edit_handle_of(st_edit *e, const char *urn, st_handle *out, st_error *err);

/* The resource a handle names, as the session has it now (borrowed, read only: valid until
 * the next operation), or NULL when it was deleted. */
ST_EXTERN const json_t *st_edit_resource(st_edit *e, st_handle h);

/* Flags of st_edit_delete. */
#define ST_DELETE_FORCE 1             /* delete protected resources too */
#define ST_DELETE_TARGET_DEPENDENTS 2 /* delete what depends on the targets too */

/* Deletes the resources the handles (borrowed) name. What depends on them (children, dependencies,
 * property dependencies, deletedWith, replaceWith, provider references) refuses the delete
 * (ST_EREFUSED, Pulumi's message listing them) unless ST_DELETE_TARGET_DEPENDENTS; protected
 * resources refuse it unless ST_DELETE_FORCE. *deleted (may be NULL) counts what went. A handle
 * of a resource an earlier operation deleted is ST_ENOTFOUND. */
ST_EXTERN int st_edit_delete(st_edit *e, const st_handle *targets, size_t n, unsigned flags,
			     size_t *deleted, st_error *err);

/* Renames the resource `target` names to `new_name` (borrowed; a name, not a URN): its URN changes and every
 * reference to it is rewritten (parent, dependencies, propertyDependencies, deletedWith,
 * replaceWith, pending operations, and provider references when it is a provider). A URN
 * that exists already is refused (ST_ECONFLICT). */
ST_EXTERN int st_edit_rename(st_edit *e, st_handle target, const char *new_name,
			     st_error *err);

/* Sets (on = 1) or clears a boolean flag, "protect" or "taint", on the resources the handles
 * (borrowed) name; resources marked delete: true are never touched. *changed (may be NULL)
 * counts the resources changed. */
ST_EXTERN int st_edit_set_flag(st_edit *e, const st_handle *targets, size_t n, const char *flag,
			       int on, size_t *changed, st_error *err);

/* Pulumi's `state repair`, deterministic: sorts resources so every reference points backwards
 * (a post-order walk in file order), then prunes references to missing resources, clearing
 * missing parents (the URN loses its parent-type chain). Dangling provider references are
 * kept, as in Pulumi. The manifest's magic is recomputed. A cycle gives ST_EINTEGRITY
 * "snapshot has cyclic dependencies". */
ST_EXTERN int st_edit_repair(st_edit *e, st_error *err);

/* Turns pending `creating` operations into resources, given each one's physical ID: urns[i]
 * (an exact URN) gets ids[i] (both borrowed), as `pulumi refresh --import-pending-creates URN
 * ID` does before its refresh reads the resource; the resource keeps what the operation
 * recorded (type, parent, provider, inputs, dependencies...), with `id` set and `custom` true,
 * and goes after the resources it refers to. `pulumi refresh` reads its outputs next.
 * ST_ENOTFOUND ("\"URN\" did not correspond to a pending create", Pulumi's words) when no
 * such operation is pending; ST_ECONFLICT when a resource has the URN already; ST_EINVAL for
 * an empty ID. All or nothing. */
ST_EXTERN int st_edit_pending_import(st_edit *e, const char *const *urns, const char *const *ids,
				     size_t n, st_error *err);

/* Removes pending operations: all of them (urns NULL, n 0), or those on the n given URNs
 * (borrowed). *removed (may be NULL) is how many were removed. */
ST_EXTERN int st_edit_pending_clear(st_edit *e, const char *const *urns, size_t n, size_t *removed,
				    st_error *err);

/* Repoints every resource whose provider reference is `from` to the provider reference `to`
 * (both borrowed), which must name an existing provider of the same package.
 * `changed` may be NULL. */
ST_EXTERN int st_edit_replace_provider(st_edit *e, const char *from, const char *to,
				       size_t *changed, st_error *err);

/* Replaces the whole deployment (stolen), e.g. after a hand edit. Every resource gets a new
 * handle; earlier handles name nothing. */
ST_EXTERN int st_edit_replace_deployment(st_edit *e, json_t *deployment, st_error *err);

/* Ends the operations: checks integrity (a valid state must stay valid; `problems`, may be
 * NULL, receives the new errors), recomputes features and version, fills `diff` (may be NULL).
 * On ST_EINTEGRITY the state is rolled back. */
ST_EXTERN int st_edit_commit(st_edit *e, st_diff *diff, st_problems *problems, st_error *err);

/* st_edit_commit, then st_state_save (to `path`, NULL: the state's own, with `opts`) when the
 * session changed something (or `always`), the integrity check running on another thread while
 * the new file is written: the new file replaces the old only when the check passes. The result
 * is that of the two calls: on ST_EINTEGRITY nothing is written and the session is rolled back.
 * *written (may be NULL) tells whether the file was replaced.
 * `opts`, `diff` and `problems` may be NULL. */
ST_EXTERN int st_edit_commit_save(st_edit *e, const char *path, const st_write_opts *opts,
				  int always, st_diff *diff, st_problems *problems, int *written,
				  st_error *err);

/* st_edit_commit_save into a stack of a backend (st_backend_save: its .bak, its compression
 * rules), the check running while the new state is written; the new state becomes visible only
 * when the check passes. `diff`, `problems` and `written` may be NULL. */
ST_EXTERN int st_edit_commit_save_stack(st_edit *e, st_backend *b, const char *stack, int always,
					st_diff *diff, st_problems *problems, int *written,
					st_error *err);

/* Writes the states of two sessions (borrowed) as one operation: the caller chooses the
 * storage, e.g. st_state_save_pair (two files), st_backend_save_pair (two stacks) or
 * st_journal_save (two objects of stores); ST_OK or an error (err set). */
typedef int (*st_pair_write_fn)(void *ctx, st_state *a, st_state *b, st_error *err);

/* Commits two sessions of two different states as one (a move): each is checked as
 * st_edit_commit checks it (on two threads for big states); then, when `write` is given, the
 * magic of both manifests is recomputed and write(ctx, a's state, b's state) writes both. If
 * either check or the write fails, both sessions are rolled back (nothing is written, or the
 * write's own protocol left the files as they were). diff_a, diff_b and problems (the failing
 * side's new errors) may be NULL. `write` and `ctx` may be NULL. */
ST_EXTERN int st_edit_commit_pair(st_edit *a, st_edit *b, st_pair_write_fn write, void *ctx,
				  st_diff *diff_a, st_diff *diff_b, st_problems *problems,
				  st_error *err);

/* One side of a two-stack operation (st_journal_save): where the new version goes and what it
 * is. */
typedef struct st_pair_side {
	st_store *store;     /* borrowed */
	const char *key;     /* where the new version goes */
	const char *old_key; /* where the current version is when that is another key (a change
			      * of compression: the old object is kept as its .bak and removed);
			      * NULL: `key` */
	st_state *state;     /* the new version (borrowed), in its own style and compression */
} st_pair_side;

/* Undoes every operation of the session, and its commit: the state is as st_edit_begin left
 * it (a migration st_edit_begin made stays; the envelope's version and features are put
 * back). The session can go on. */
ST_EXTERN void st_edit_rollback(st_edit *e);

/* Frees the session (it does not roll back). Accepts NULL. */
ST_EXTERN void st_edit_free(st_edit *e);

/* ---------------------------------------------------------------------------------------------
 * Secrets
 *
 * A secrets manager serves one stack. Types: "passphrase" (PBKDF2-HMAC-SHA256, 1,000,000
 * iterations, AES-256-GCM; values "v1:NONCE:CIPHERTEXT", exactly as Pulumi's), "b64" (Pulumi's
 * test provider: base64 of the plaintext), callbacks of the caller's (st_secrets_custom), and any
 * other type ("service", "cloud", ...): recognised, its ciphertexts pass through every operation
 * byte-identical, and only decrypting or encrypting says it cannot, naming the provider. Keys
 * live in sodium_malloc'ed memory, wiped when freed. Plaintexts returned by the library must be
 * released with st_secret_free, which wipes them.
 */

typedef struct st_secrets st_secrets;

/* Opens the manager described by a deployment's `secrets_providers` (borrowed). For a
 * passphrase provider, `passphrase` (len bytes; NULL = locked: encrypting and decrypting then
 * fail with ST_EPASSPHRASE) is checked at once against the salt's encrypted "pulumi": a wrong
 * passphrase is ST_EPASSPHRASE "incorrect passphrase" before anything else happens. *out is
 * new. */
ST_EXTERN int st_secrets_open(st_secrets **out, const json_t *secrets_providers,
			      const char *passphrase, size_t len, st_error *err);

/* A new passphrase manager with a new random 8-byte salt. *out is new. */
ST_EXTERN int st_secrets_new_passphrase(st_secrets **out, const char *passphrase, size_t len,
					st_error *err);

/* A manager of the caller's: `type` names it in state; the callbacks do the work. */
#define ST_SECRETS_CALLBACKS_VERSION 1

typedef struct st_secrets_callbacks {
	unsigned version; /* ST_SECRETS_CALLBACKS_VERSION */
	void *ctx;
	/* plaintext (len bytes) -> *ciphertext (new, malloc) */
	int (*encrypt)(void *ctx, const char *plaintext, size_t len, char **ciphertext,
		       st_error *err);
	/* ciphertext -> *plaintext (new, malloc; wiped and freed by the library) */
	int (*decrypt)(void *ctx, const char *ciphertext, char **plaintext, size_t *len,
		       st_error *err);
	json_t *state; /* the provider's state for `secrets_providers` (borrowed), or NULL */
	void (*free_ctx)(void *ctx);
} st_secrets_callbacks;

#define ST_SECRETS_CALLBACKS_INIT {ST_SECRETS_CALLBACKS_VERSION, NULL, NULL, NULL, NULL, NULL}

ST_EXTERN int st_secrets_custom(st_secrets **out, const char *type, const st_secrets_callbacks *cb,
				st_error *err);

ST_EXTERN void st_secrets_free(st_secrets *s);

/* The provider's type ("passphrase", "b64", ...) (borrowed). */
ST_EXTERN const char *st_secrets_type(const st_secrets *s);

/* {"type", "state"} for a deployment's `secrets_providers` (new). */
ST_EXTERN json_t *st_secrets_provider_json(const st_secrets *s);

/* A passphrase manager's `encryptionsalt` for Pulumi.<stack>.yaml (borrowed), else NULL. */
ST_EXTERN const char *st_secrets_encryptionsalt(const st_secrets *s);

/* Encrypts len bytes of plaintext (Pulumi's serialized JSON of the value). *ciphertext is new
 * (free()). */
ST_EXTERN int st_secrets_encrypt(st_secrets *s, const char *plaintext, size_t len,
				 char **ciphertext, st_error *err);

/* Decrypts one ciphertext. *plaintext is new: st_secret_free(*plaintext, *len). A GCM failure
 * (tampering, another key) is ST_ESECRETS. */
ST_EXTERN int st_secrets_decrypt(st_secrets *s, const char *ciphertext, char **plaintext,
				 size_t *len, st_error *err);

/* Counts the secrets of a state (resources and pending operations): those held as ciphertext
 * and those held as plaintext. `ciphertexts` and `plaintexts` may be NULL. */
ST_EXTERN void st_secrets_count(st_state *state, size_t *ciphertexts, size_t *plaintexts);

/* Wipes and frees a plaintext. Accepts NULL. */
ST_EXTERN void st_secret_free(char *plaintext, size_t len);

/* Decrypts every secret of the state without changing it; each failure is appended to `out`
 * (rule "secrets/decrypt", the URN and the JSON Pointer of the value). *count = secrets seen.
 * `count` may be NULL. */
ST_EXTERN int st_secrets_verify(st_state *state, st_secrets *s, st_problems *out, size_t *count,
				st_error *err);

/* Replaces every ciphertext of the state by its plaintext, as `pulumi stack export
 * --show-secrets` prints it ({"<sig>": "...", "plaintext": "<JSON>"}). For display only: a state
 * so changed must not be saved. */
ST_EXTERN int st_secrets_reveal(st_state *state, st_secrets *s, st_error *err);

/* In an edit session: turns `plaintext` secrets into ciphertext under `s`. `count` may be NULL. */
ST_EXTERN int st_edit_secrets_encrypt(st_edit *e, st_secrets *s, size_t *count, st_error *err);

/* In an edit session: re-encrypts every secret (ciphertexts under `from`, plaintexts too)
 * under `to`, and makes `to` the deployment's secrets provider. `count` may be NULL. */
ST_EXTERN int st_edit_secrets_rekey(st_edit *e, st_secrets *from, st_secrets *to, size_t *count,
				    st_error *err);

/* Rewrites a stack configuration file (Pulumi.<stack>.yaml) for a new passphrase. The file is
 * read as YAML (its first document, as Pulumi reads it): every `secure` value of `config` (a
 * mapping of the single key `secure`, at any depth, any scalar style) is decrypted with `from`
 * and encrypted with `to`, the `encryptionsalt` is replaced (or added as the first key), and
 * `secretsprovider` and `encryptedkey` lines are removed, as Pulumi's passphrase manager clears
 * them. Each change is made at the value's byte span, in its style; all else stays
 * byte-identical. `from` must open the file's values: the manager of the file's own
 * `encryptionsalt` when it has one (st_config_scan). A secure value that does not decrypt, or
 * that cannot be rewritten in place (an alias, a block scalar, an anchored or tagged value), is
 * an error naming its config key, with err->line and err->column, and nothing is written.
 * Written atomically with a .bak. `count` may be NULL. */
ST_EXTERN int st_config_rekey(const char *path, st_secrets *from, st_secrets *to, size_t *count,
			      st_error *err);

#define ST_CONFIG_SECRETSPROVIDER 1u /* the file has a `secretsprovider` */
#define ST_CONFIG_ENCRYPTEDKEY 2u    /* the file has an `encryptedkey` */

/* Reads a stack configuration's text[0..len) (borrowed) as st_config_rekey_text does: *salt
 * (new, free(); NULL when the file has none) is its `encryptionsalt`, for st_secrets_open
 * ({"type": "passphrase", "state": {"salt": *salt}}); *other (may be NULL) the
 * ST_CONFIG_* fields of another secrets provider that a rekey removes. `name` (may be NULL) is
 * the file named in errors (not YAML, not a mapping: ST_EPARSE, ST_EFORMAT, with the line). */
ST_EXTERN int st_config_scan(const char *text, size_t len, const char *name, char **salt,
			     unsigned *other, st_error *err);

/* st_config_rekey on a configuration's text[0..len) (borrowed), writing nothing: *out_text
 * (new, NUL-terminated, *out_len bytes; free()) is the text st_config_rekey would write, so a
 * caller can check every secure value before it changes anything else. `name` (may be NULL)
 * is the file named in errors. `out_len` and `count` may be NULL. */
ST_EXTERN int st_config_rekey_text(const char *text, size_t len, const char *name,
				   st_secrets *from, st_secrets *to, char **out_text,
				   size_t *out_len, size_t *count, st_error *err);

/* ---------------------------------------------------------------------------------------------
 * One resource, as `pulumi state get` finds and prints it
 */

/* Pulumi's auto-assigned reference identifiers (pkg/cmd/pulumi/autonames: what `pulumi state
 * get` and `pulumi do` accept): for each resource not marked delete: true, neither the root
 * stack nor a provider, in URN order, its snippet's name when that is unique, else its name
 * sanitized (letters, digits, '_') + "_" + the first 6 (or more, on a collision) hex digits of
 * the SHA-256 of its URN. *out is new: an object identifier -> URN, in URN order. */
ST_EXTERN int st_state_autonames(st_state *state, json_t **out, st_error *err);

/* Resolves `ref` (borrowed) as `pulumi state get` does: a valid URN (a miss is ST_ENOTFOUND with
 * suggestions); "urn:..." that is not one (ST_EINVAL); a reference identifier
 * (st_state_autonames; also the name of another resource: ST_EAMBIGUOUS); the name of one
 * resource (several: ST_EAMBIGUOUS listing them); then statetool's own forms (#INDEX, TYPE::NAME
 * tails: st_state_find). Of several copies of a URN the live one (not delete: true) is taken,
 * and a line saying how many copies are pending deletion is appended to `warnings` (may be
 * NULL). *index is the resource's index in st_state_resources. */
ST_EXTERN int st_state_get(st_state *state, const char *ref, size_t *index,
			   st_changes *warnings, st_error *err);

#define ST_TEXT_SHOW_SECRETS 1u /* secrets' values instead of [secret] */

/* A resource (borrowed) as `pulumi state get` prints it on a terminal: "Type:", "URN:", "ID:"
 * (when not empty), "Pending deletion: yes" (delete: true), then "Inputs:" and "Outputs:" (when
 * not empty) as Pulumi's display prints a property map (keys sorted, aligned, "__" keys hidden,
 * nested values indented by four spaces, unknowns "[unknown]", secrets "[secret]", a string
 * holding a JSON object or array shown decoded after "(json) ", assets, archives and resource
 * references in Pulumi's forms), without colours. With ST_TEXT_SHOW_SECRETS, secrets are
 * shown: plaintexts as they are, ciphertexts decrypted with `secrets` (borrowed; NULL: a
 * ciphertext is ST_EPASSPHRASE). *out is new (free()), NUL-terminated; *len (may be NULL) its
 * length. Plaintext secrets end up in *out only with ST_TEXT_SHOW_SECRETS.
 * `secrets` may be NULL. */
ST_EXTERN int st_resource_text(const json_t *resource, unsigned flags, st_secrets *secrets,
			       char **out, size_t *len, st_error *err);

/* A resource (borrowed) as `pulumi state get --output json` prints it: {"id" (empty when
 * none), "inputs", "outputs", "pendingDeletion": true (delete: true only), "type", "urn"}, the
 * properties as Pulumi serializes them for display: internal keys ("__...") of the top level
 * left out, every object's keys sorted (Go maps), secrets the string "[secret]" (with
 * ST_TEXT_SHOW_SECRETS their values: plaintexts as they are, ciphertexts decrypted with
 * `secrets`, borrowed; NULL: a ciphertext is ST_EPASSPHRASE), output values as their element
 * (an unknown one as Pulumi's computed placeholder), resource references with their
 * packageVersion, bytes that are not UTF-8 as "b\"BASE64\"". *out is new (json_decref). Print
 * it indented by two spaces without HTML escaping, as Pulumi does. Plaintext secrets end up in
 * *out only with ST_TEXT_SHOW_SECRETS. `secrets` may be NULL. */
ST_EXTERN int st_resource_json(const json_t *resource, unsigned flags, st_secrets *secrets,
			       json_t **out, st_error *err);

/* ---------------------------------------------------------------------------------------------
 * Comparing two states
 */

/* Compares two states (borrowed, unchanged): *out (new) is a document
 *   {"same": bool,
 *    "added": [R...], "removed": [R...], "changed": [R + {"changes": [C...]}...],
 *    "deployment": [C...]}
 * where R is {"urn", "type"?, "id"? (when not empty), "delete": true?} (a changed resource as
 * it is in `b`) and C is {"path", "op": "add"|"remove"|"change", "old"?, "new"?}: `path` is a
 * JSON Pointer into the resource (or into the deployment, for its members other than
 * `resources` and `manifest`), objects without a signature key compared member by member
 * (sorted keys) and arrays of equal length element by element, anything else whole. Resources
 * are matched by URN; copies marked delete: true by URN, ID and rank. Removed and changed
 * resources come in `a`'s order, added ones in `b`'s. Every secret in "old" and "new" is the
 * string "[secret]": neither plaintext nor ciphertext is ever copied into the document (two
 * different ciphertexts are a change, even of one value). */
ST_EXTERN int st_state_compare(st_state *a, st_state *b, json_t **out, st_error *err);

/* The text of a comparison (borrowed, from st_state_compare): "- URN", "+ URN", then "~ URN"
 * with one line per change ("    ~ PATH: OLD => NEW", "    + PATH: NEW", "    - PATH: OLD",
 * values as compact JSON), "~ deployment" likewise, and a last line: "no differences" or
 * "N added, N removed, N changed[, deployment changed]". *out is new (free()), NUL-terminated;
 * *len (may be NULL) its length. ST_EINVAL for a document of another shape. */
ST_EXTERN int st_compare_text(const json_t *doc, char **out, size_t *len, st_error *err);

/* ---------------------------------------------------------------------------------------------
 * Moving resources between stacks, and writing two files as one
 */

#define ST_MOVE_OPTS_VERSION 1

typedef struct st_move_opts {
	unsigned version;            /* ST_MOVE_OPTS_VERSION */
	const char *const *patterns; /* exact URNs or glob patterns ('*', '?', '[...]') */
	size_t npatterns;
	int include_parents;       /* also move the ancestors of what is selected */
	const char *source_stack;  /* "PROJECT/STACK" of the source, or NULL (see st_stack_names) */
	const char *dest_stack;    /* likewise for the destination */
	st_secrets *source_secrets; /* to read secrets that must be re-encrypted (may be NULL) */
	st_secrets *dest_secrets;   /* to encrypt them for the destination (may be NULL) */
} st_move_opts;

#define ST_MOVE_OPTS_INIT {ST_MOVE_OPTS_VERSION, NULL, 0, 0, NULL, NULL, NULL, NULL}

typedef struct st_move_report {
	st_changes plan;          /* what moves (old -> new URN), what is copied or reused */
	st_changes broken_source; /* edges removed from resources staying in the source */
	st_changes broken_dest;   /* edges removed from resources moved to the destination */
	st_changes warnings;      /* e.g. patterns that matched nothing */
	char **moved_urns;        /* the source URNs of every resource moved */
	size_t nmoved;
	int needs_secrets;        /* moved secrets must be re-encrypted and opts lack the managers
				     (ST_EPASSPHRASE): open them and call again */
} st_move_report;

ST_EXTERN void st_move_report_clear(st_move_report *r);

/* The stack and project a state belongs to: `override` ("PROJECT/STACK") if given, else the
 * checkpoint's `stack` (organization/PROJECT/STACK), else `path` when it lies in a DIY backend
 * (.pulumi/stacks/PROJECT/STACK.json), else the root stack resource's URN, else any URN.
 * *stack and *project are new; ST_ENOTFOUND when nothing names them.
 * `override` and `path` may be NULL. */
ST_EXTERN int st_stack_names(const st_state *state, const char *override, const char *path,
			     char **stack, char **project, st_error *err);

/* Two edit sessions, of two different states: moves resources from `src`'s state to `dst`'s
 * with Pulumi's `state move` semantics (doc/statetool.1, "move"): descendants always move with
 * their parent; providers are copied (and reused when the destination has the same one); edges
 * crossing the stacks are removed and reported on both sides; URNs take the destination's stack
 * and project (opts or st_stack_names) and the new parent's type chain; a destination without a
 * root stack gets one; pending operations of moved resources move with them; extension blobs go
 * with the moved resources that refer to them (one missing in the source is an error), and each
 * stack keeps only the blobs its resources refer to; secrets are re-encrypted when the two
 * providers differ, and a destination without a provider takes the source's, or, when that is
 * a passphrase provider, gets one of its own (opts->dest_secrets: a new passphrase manager).
 * Both states must be valid. `report` is filled (patterns that matched nothing are in its
 * warnings even on failure); on any error both sessions are as they were. Commit the two with
 * st_edit_commit_pair. */
ST_EXTERN int st_edit_move(st_edit *src, st_edit *dst, const st_move_opts *opts,
			   st_move_report *report, st_error *err);

/* One-shot: st_edit_move in two sessions of their own, committed together (both checked, not
 * written). `src_path` and `dst_path` (may be NULL) name the stacks when nothing else does (a
 * DIY backend's paths). On any error neither state is changed, a migration undone too. */
ST_EXTERN int st_move(st_state *src, const char *src_path, st_state *dst, const char *dst_path,
		      const st_move_opts *opts, st_move_report *report, st_error *err);

/* ---------------------------------------------------------------------------------------------
 * Two stacks replaced as one operation: the journal (see doc/DESIGN.md, "The two-stack journal")
 */

/* (st_pair_side, a side of a two-stack operation, is defined beside st_edit_commit_pair.) */

/* Replaces two objects, in the same store or in two different ones, as one operation: each
 * new version is written under <key>.statetool-new in its own store; then a journal (version
 * 4: both sides by store URL and key, the XXH3-128 of the old and new bytes, the staged keys)
 * is written as <old key>.statetool-journal in each store, the second being the commit
 * point; then `a`'s object is replaced, then `b`'s (each current object kept as .bak, by the
 * store's rename or copy), and the staged objects and journals are removed. After a crash at
 * any point, st_journal_recover_key (or st_backend_recover) on either side completes the
 * operation. The same object on both sides is refused (ST_EINVAL). `op` names the operation
 * ("move") in the journal and in messages. For "move", `a` is the destination and `b` the
 * source (as st_edit_commit_pair's write gets them): the journal records these roles, and a
 * refused recovery's message names the sides by them (`statetool move --recover --source ...
 * --dest ...`); another operation's sides have no roles and are named as they are. The same
 * holds for st_backend_save_pair, st_journal_write_pair and st_state_save_pair. */
ST_EXTERN int st_journal_save(const char *op, const st_pair_side *a, const st_pair_side *b,
			      st_error *err);

/* A journal left beside `key` (<key>.statetool-journal)? 1 or 0. */
ST_EXTERN int st_journal_pending_key(st_store *s, const char *key);

#define ST_JOURNAL_CLEAN_STAGED 1u /* with no journal, remove a staged <key>.statetool-new: an
				    * operation that crashed before its commit point (only when
				    * none can be running: the caller holds the locks, or knows) */
#define ST_JOURNAL_CHECK_HERE 2u /* write nothing: only check the locks of the operation's
				  * side at `key`: ST_ELOCKED, naming it, when a lock there other
				  * than the operation's own would refuse its completion (`unlock`
				  * asks whether the lock that refused it is on this side, the one it
				  * removes, or on the other side only); ST_OK otherwise */

/* Completes an interrupted operation whose journal is beside `key` in `s`: each side whose
 * object still holds its old bytes gets its staged version (its current object kept as .bak);
 * the journals go. The other side's store is one of `known` (nknown stores the caller has open,
 * may be NULL) whose URL matches the journal's, else it is opened from the URL in the journal
 * (credentials come from the environment, never from the journal). A side that matches neither
 * its old nor its new version (changed by someone else since) is left alone and ST_ECONFLICT
 * names it. Journals of version 1 and 2 (local files by absolute path) are recovered too; an
 * unknown version is refused (ST_EINVAL). No journal: ST_OK, nothing done (but see
 * ST_JOURNAL_CLEAN_STAGED). Lines for `report` (may be NULL) say what was done. */
ST_EXTERN int st_journal_recover_key(st_store *s, const char *key, st_store *const *known,
				     size_t nknown, unsigned flags, st_changes *report,
				     st_error *err);

/* st_journal_save for two stacks of DIY backends (the same or two different ones): each
 * object chosen as st_backend_save chooses it (st_backend_stack_target). ST_EUNSUPPORTED for
 * another kind of backend. */
ST_EXTERN int st_backend_save_pair(const char *op, st_backend *ba, const char *stack_a,
				   st_state *a, st_backend *bb, const char *stack_b,
				   st_state *b, st_error *err);

/* Completes every interrupted operation of a DIY stack (a journal beside any of its objects,
 * found by one listing, then a stack rename's marker: st_backend_rename_stack_ex); with
 * ST_JOURNAL_CLEAN_STAGED, staged objects no journal names are removed afterwards; with
 * ST_JOURNAL_CHECK_HERE, only each journal's side of this stack is checked (a stack rename's
 * marker: every lock of the stack counts), nothing written. `known`, `report`: as st_journal_recover_key. ST_OK when nothing was pending.
 * `report` may be NULL. */
ST_EXTERN int st_backend_recover(st_backend *b, const char *stack, st_store *const *known,
				 size_t nknown, unsigned flags, st_changes *report,
				 st_error *err);

/* The locks a two-stack operation (a move) that died before its commit point left on its two
 * objects (`ka` of `sa`, `kb` of `sb`: a DIY stack's object key, whose lock folder is looked
 * at, or a plain file's, whose <key>.lock is): no journal names them, so a lock is the dead
 * operation's when it names this host and a process no longer running, and a lock on the other
 * side names the same process (one process held both). Those are removed; every other lock
 * stays (another host's: no process table here tells). Lines for `report` (may be NULL) name
 * each removed. ST_OK, ST_EINVAL for an invalid key, or a store's error (a listing). Stores and
 * keys borrowed. */
ST_EXTERN int st_pair_unlock_dead(st_store *sa, const char *ka, st_store *sb, const char *kb,
				  st_changes *report, st_error *err);

/* The files of st_journal_save named by their paths (each in the file store of its directory),
 * with the new bytes given. */
ST_EXTERN int st_journal_write_pair(const char *op, const char *path_a, const void *data_a,
				    size_t len_a, const char *path_b, const void *data_b,
				    size_t len_b, st_error *err);

/* st_journal_save of two states in files named by their paths: each in its own style and
 * compression, magic recomputed; `a` is written first. */
ST_EXTERN int st_state_save_pair(const char *op, st_state *a, const char *path_a, st_state *b,
				 const char *path_b, st_error *err);

/* Is an interrupted two-file operation pending on `path` (a journal beside it)? When it is and
 * `other` is not NULL, *other receives where the other side is (new): its path, or URL/key. */
ST_EXTERN int st_journal_pending(const char *path, char **other);

/* st_journal_recover_key for the file `path` (the file store of its directory).
 * `report` may be NULL. */
ST_EXTERN int st_journal_recover(const char *path, st_changes *report, st_error *err);

/* ---------------------------------------------------------------------------------------------
 * Importing resources by adding their state (`pulumi import` without a program)
 */

/* Read: given {"type","id","urn","properties"} (borrowed), set *response (new) to
 * {"inputs": {...}, "outputs": {...}}. Return ST_OK, or an ST_E* code with err set. */
typedef int (*st_import_read_fn)(void *ctx, const json_t *request, json_t **response,
				 st_error *err);

#define ST_IMPORT_OPTS_VERSION 2

typedef struct st_import_opts {
	unsigned version;          /* ST_IMPORT_OPTS_VERSION */
	const char *dest_stack;    /* "PROJECT/STACK" override (see st_stack_names) */
	int no_protect;            /* imported resources are protected unless this is set */
	int keep_import_id;        /* record importID (as the `import` resource option does) */
	int no_read;               /* no Read: given inputs, empty outputs */
	st_import_read_fn read;    /* Read for specs without outputs (may be NULL) */
	void *read_ctx;
	st_secrets *secrets;       /* encrypts values the specs mark secret (may be NULL) */
	/* (version 2) The stack's configuration: the text of its Pulumi.<stack>.yaml (borrowed;
	 * NULL: none), config_len bytes, named config_name in errors (may be NULL). A default
	 * provider the import creates gets its package's values as inputs, as Pulumi's
	 * GetPackageConfig gives them; config_secrets (may be NULL) opens its secure values (the
	 * key of the file's own encryptionsalt, else the state's). */
	const char *config;
	size_t config_len;
	const char *config_name;
	st_secrets *config_secrets;
} st_import_opts;

#define ST_IMPORT_OPTS_INIT \
	{ST_IMPORT_OPTS_VERSION, NULL, 0, 0, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL}

typedef struct st_import_report {
	st_changes added;  /* each resource and provider added */
	st_changes noops;  /* specs already in the state with the same ID */
	st_changes notes;  /* e.g. outputs left for `pulumi refresh` */
	size_t nadded;
	int needs_secrets; /* secrets must be encrypted and opts->secrets is NULL, or the config's
			      secure values opened and opts->config_secrets is NULL
			      (ST_EPASSPHRASE): open the secrets managers and call again */
} st_import_report;

ST_EXTERN void st_import_report_clear(st_import_report *r);

/* Checks an import file (borrowed) as an import does before it looks at the destination: by
 * schemas/import.json (`schema`, borrowed; NULL: the embedded schemas) and Pulumi's rules
 * (names, IDs, components, parents and providers through nameTable, ambiguous URNs, versions,
 * parameterizations and extensions, unknown values; a warning for the deprecated
 * providerInputs), with Pulumi's messages and JSON Pointers; every error in one run. URNs are
 * built for `stack` and `project` (NULL: placeholders, which change no verdict). Problems are
 * appended to `out`; the result is ST_OK even when there are problems. Keys given twice: as
 * st_validate_import_file (pass the list st_json_parse filled for `doc`). `schema` may be NULL. */
ST_EXTERN int st_import_check(json_t *doc, const char *stack, const char *project,
			      st_schema *schema, st_problems *out, st_error *err);

/* In an edit session: adds the resources of an import file (borrowed) as `pulumi import` would.
 * URNs are built from nameTable and earlier specs (default parent: the root stack, created if
 * missing), for opts->dest_stack or the names st_stack_names finds in the state; custom unless
 * a component, protected unless opts->no_protect; default providers named as Pulumi names them
 * (default_4_16_0, the download URL as a QName); a provider the state lacks (default, named in
 * nameTable, or a provider spec) created before its first user as Pulumi's import creates it (a
 * fresh UUID; inputs from the spec or providerInputs, a default provider's from opts->config,
 * plus version, URL and parameterization as providers.Set* write them; outputs without
 * __internal; a default provider the state has is used as it is); a spec with an extension refused
 * (ST_EUNSUPPORTED); importID only with keep_import_id. The same URN with the same ID is a
 * no-op; another ID is refused. Every problem of the file and of the file against the state
 * goes to `problems` (may be NULL) in one run (ST_EINVAL for the file's, ST_ECONFLICT for
 * conflicts alone). Secrets in the file need opts->secrets (else ST_EPASSPHRASE with
 * report->needs_secrets set): a plaintext is encrypted under it, a ciphertext must decrypt with
 * it to JSON, as Pulumi deserializes the file with the stack's decrypter (else a problem of the
 * file, "could not deserialize ...", ST_EINVAL); an ID "<PLACEHOLDER>" (what `pulumi preview
 * --import-file` writes) is one too. `report` is filled (its previous content is not freed); on any
 * error the session is as it was. Keys given twice in the file decode as Go decodes them when
 * `problems` is the list st_json_parse filled for `doc` (as st_validate_import_file; `doc` is
 * changed to what Go decodes); else last-wins. `opts` may be NULL. */
ST_EXTERN int st_edit_import(st_edit *e, json_t *doc, const st_import_opts *opts,
			     st_import_report *report, st_problems *problems, st_error *err);

/* One-shot: st_edit_import in a session of its own, committed (a valid state stays valid).
 * `dst_path` (may be NULL) names the stack when nothing else does (a DIY backend's path). On
 * any error `dst` is as it was, a migration undone too. `opts` and `problems` may be NULL. */
ST_EXTERN int st_import(st_state *dst, const char *dst_path, json_t *doc,
			const st_import_opts *opts, st_import_report *report, st_problems *problems,
			st_error *err);

/* The reverse: an import file (new) describing the resources at `idx` (all resources when n is
 * 0): type, name, ID, parent and provider through nameTable, version, component. */
ST_EXTERN json_t *st_import_generate(st_state *s, const size_t *idx, size_t n, st_error *err);

/* ---------------------------------------------------------------------------------------------
 * The SQLite index of many stacks
 *
 * Schema version 3 (README, "The index"): tables meta, stacks, urns, resource_rows, edge_rows,
 * providers, pending, secrets (property paths only: never a secret's value), and the views
 * resources and edges (the rows with their URNs, as the tables of version 2 were). An index of
 * another version is rebuilt; a corrupt file is moved aside and rebuilt, with a note. Version
 * 2 added stacks.etag (the store's tag of a stack's object, which decides with its size and
 * time whether a stack in an object store changed, without a download); version 3 keeps each
 * URN of a stack once (urns), referred to by number, so the index is smaller than the states;
 * version 5 keeps urns WITHOUT ROWID on SQLite (a row's URN, parent and provider are each one
 * b-tree search); version 6 keeps a protected resource's URN, parent and provider as text on
 * its row (and on SQLite in the partial index of protected rows), so --protected reads no URN.
 */

#define ST_INDEX_SCHEMA_VERSION 6


typedef struct st_index st_index;

/* Opens (creating when needed, unless read-only) the index at `path`: an SQLite file, or a
 * PostgreSQL database named by a postgres:// URL (read as the postgres:// store reads it; the
 * same tables, made when missing; a read-only index runs everything in READ ONLY
 * transactions). Notes on what was done
 * (rebuilt, moved aside) go to `notes` (may be NULL). *out is new: st_index_close. */
ST_EXTERN int st_index_open(st_index **out, const char *path, int readonly, st_changes *notes,
			    st_error *err);
ST_EXTERN void st_index_close(st_index *ix);

/* What the index is, for messages (borrowed): its path, or its URL without a password. */
ST_EXTERN const char *st_index_name(const st_index *ix);

/* Replaces one stack's rows from an already-loaded state (borrowed), in one transaction, so a
 * backend can keep the index current after every save. `qname` names the stack
 * (organization/project/stack, or a file's path); `path` is its file (may be NULL). */
ST_EXTERN int st_index_update_state(st_index *ix, const char *qname, const char *path,
				    st_state *state, st_error *err);

typedef struct st_index_stats {
	size_t stacks, parsed, unchanged, removed, failed, resources;
} st_index_stats;

/* Called after each stack: done of total, resources so far. */
typedef void (*st_index_progress_fn)(void *ctx, size_t done, size_t total, size_t resources);

/* Indexes every stack of a backend, incrementally: a stack whose file has the same size and
 * mtime (or, when those differ, the same SHA-256) is not parsed again; stacks gone from the
 * backend are dropped. A stack that cannot be read is reported in `failures` (may be NULL) and
 * its rows are dropped. `progress`, `pctx` and `stats` may be NULL. */
ST_EXTERN int st_index_update_backend(st_index *ix, st_backend *b, st_index_progress_fn progress,
				      void *pctx, st_index_stats *stats, st_problems *failures,
				      st_error *err);

/* Indexes one stack of a backend, with the change detection of st_index_update_backend (the
 * object's size, time and tag, then its SHA-256), so it costs one stat when the stack did not
 * change; a stack the backend no longer has is dropped from the index. What statetool runs
 * after its own changes to a stack whose backend has an index. A stack that cannot be read is
 * reported in `failures` (may be NULL). `stats` may be NULL. */
ST_EXTERN int st_index_update_stack(st_index *ix, st_backend *b, const char *qname,
				    st_index_stats *stats, st_problems *failures, st_error *err);

/* A stack whose index rows may not be what its backend holds now. */
typedef struct st_index_stale_stack {
	char *qname;
	char kind; /* '~' changed since it was indexed (also when its object is now another of its
		    * variants: dev.json.gz for dev.json), '+' not indexed, '-' gone from the
		    * backend */
} st_index_stale_stack;

/* The stacks of `b` whose rows in the index are out of date, told from one listing of the
 * backend (size, time and tag of each stack's object, as st_index_update_backend tells a
 * change; nothing is read). *out is new (st_index_stale_free), sorted by name. */
ST_EXTERN int st_index_stale(st_index *ix, st_backend *b, st_index_stale_stack **out,
			     size_t *count, st_error *err);
ST_EXTERN void st_index_stale_free(st_index_stale_stack *s, size_t count);

/* The same for plain files (each named by its path). `prune` drops files indexed before that
 * are not in the list. `progress`, `pctx`, `stats` and `failures` may be NULL. */
ST_EXTERN int st_index_update_files(st_index *ix, const char *const *paths, size_t n, int prune,
				    st_index_progress_fn progress, void *pctx,
				    st_index_stats *stats, st_problems *failures, st_error *err);

/* Filters of st_index_query; NULL or 0 means no filter. */
#define ST_INDEX_QUERY_VERSION 2

typedef struct st_index_query {
	unsigned version;          /* ST_INDEX_QUERY_VERSION */
	const char *urn_glob;      /* GLOB pattern on the URN ('*', '?', '[...]') */
	const char *type;
	const char *id;
	const char *import_id;
	const char *stack;         /* the stack as commands name it, GLOB allowed: project/stack
				    * (organization/ implied), organization/project/stack, or a
				    * bare name (that stack of any project, or a legacy stack) */
	const char *provider;      /* a provider URN or reference, or PACKAGE[@VERSION] */
	int protected_only;
	int pending_only;
	const char *dependents_of; /* URN: everything depending on it, transitively */
	int duplicate_ids;         /* resources whose (type, ID) appears more than once;
				    * provider resources left out (their IDs are UUIDs each stack
				    * makes, and a copied stack repeats them) unless: */
	int include_providers;     /* (version 2) */
} st_index_query;

#define ST_INDEX_QUERY_INIT \
	{ST_INDEX_QUERY_VERSION, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL, 0, 0}

/* A result row: ncols columns, their names and values (values may be NULL). */
typedef int (*st_index_row_fn)(void *ctx, int ncols, const char *const *names,
			       const char *const *values);

/* Runs the query; rows have columns stack, urn, type, id, import_id, parent, provider, flags,
 * each given to `row` with ctx (row may be NULL: the rows are only read). Returns ST_OK, or
 * the callback's non-zero result. */
ST_EXTERN int st_index_query_run(st_index *ix, const st_index_query *q, st_index_row_fn row,
				 void *ctx, st_error *err);

/* Runs read-only SQL; a statement that would write is refused (ST_EREFUSED). Each row goes to
 * `row` with ctx (row may be NULL: the rows are only read). */
ST_EXTERN int st_index_sql(st_index *ix, const char *sql, st_index_row_fn row, void *ctx,
			   st_error *err);

/* The default index of a backend: <root>/.pulumi/statetool-index.sqlite (new string); NULL
 * for a backend that is no local directory (s3://, azblob://...: the index is a local file,
 * named with --db). */
ST_EXTERN char *st_index_default_path(const st_backend *b);

/* ---------------------------------------------------------------------------------------------
 * URNs and provider references
 */

#define ST_ROOT_STACK_TYPE "pulumi:pulumi:Stack"
#define ST_UNKNOWN_ID "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

/* A parsed URN: each part is a pointer into the original string and a length. */
typedef struct st_urn {
	const char *stack;
	size_t stack_len;
	const char *project;
	size_t project_len;
	const char *qtype; /* qualified type: parent types joined by '$', then the type */
	size_t qtype_len;
	const char *type; /* the part of qtype after its last '$' */
	size_t type_len;
	const char *name; /* everything after the third "::" */
	size_t name_len;
} st_urn;

/* Parses urn:pulumi:<stack>::<project>::<qualifiedType>::<name>. Returns 0 or ST_EINVAL.
 * A NULL `urn` is ST_EINVAL. */
ST_EXTERN int st_urn_parse(const char *urn, st_urn *out);
ST_EXTERN int st_urn_valid(const char *urn);

/* Pulumi's NewURN: the qualified type is parent_qtype + "$" + type unless parent_qtype is NULL,
 * empty or the root stack type. New string (free()), or NULL when out of memory. */
ST_EXTERN char *st_urn_new(const char *stack, const char *project, const char *parent_qtype,
			   const char *type, const char *name);

/* Is `type` a provider type (module pulumi:providers with a name)? */
ST_EXTERN int st_type_is_provider(const char *type);

/* Splits a provider reference <urn>::<id> on its last "::" and checks the URN is a provider's.
 * *urn and *id are new strings (free()). Pulumi's messages on error. */
ST_EXTERN int st_provider_ref_parse(const char *ref, char **urn, char **id, st_error *err);

/* ---------------------------------------------------------------------------------------------
 * Backends: stacks by name (see doc/DESIGN.md, "Storage")
 *
 * A backend holds stacks: it lists them, loads and saves a stack's state and takes its lock. The
 * DIY backend (Pulumi's self-managed layout, on any store) is the one kind today; the calls do
 * not assume a key/value store, so a service reached through an API can be another kind.
 *
 * The DIY layout, as Pulumi's pkg/backend/diy lays it out under the store's root:
 *   .pulumi/meta.yaml                                version: 1 (project mode); absent: legacy
 *   .pulumi/stacks/<project>/<stack>.json[.gz|.zst]  (legacy: stacks/<stack>.json...), + .bak
 *   .pulumi/stacks/<project>/<stack>.pulumi-tags     the stack's tags
 *   .pulumi/locks/organization/<project>/<stack>/<uuid>.json   (legacy: locks/<stack>/)
 *   .pulumi/backups/<project>/<stack>/, .pulumi/history/<project>/<stack>/
 * Names are checked as Pulumi checks them, so no name can reach outside the backend.
 */

/* The backend to use when none is named, with Pulumi's precedence (after an explicit URL, which
 * the caller handles): $PULUMI_BACKEND_URL when set and not empty, else `backend.url` of the
 * current Pulumi project: the first of Pulumi.json, Pulumi.yaml, Pulumi.yml in the working
 * directory or the nearest directory above it that has one (a project file without
 * backend.url ends the search). A relative file:// path is relative to the working directory,
 * as Pulumi takes it. *url is new; *source (new, may be NULL) names where it came from:
 * "PULUMI_BACKEND_URL" or the project file's path. ST_ENOTFOUND when neither gives one,
 * ST_EFORMAT for a project file that is not YAML. */
ST_EXTERN int st_backend_default_url(char **url, char **source, st_error *err);

/* Opens a backend: file://PATH or PATH for a DIY backend in a directory (NULL: the default,
 * st_backend_default_url). Reads .pulumi/meta.yaml with Pulumi's rules (version 1 = project mode;
 * absent: legacy when .pulumi/stacks/ holds stack files directly, else a new backend in project
 * mode; no version: "corrupt store: missing version in ..."). Setting both
 * PULUMI_DIY_BACKEND_GZIP and PULUMI_DIY_BACKEND_ZSTD is refused (ST_EREFUSED: the environment,
 * not an argument, is wrong), as Pulumi refuses it. *out is new: st_backend_free. */
ST_EXTERN int st_backend_open(st_backend **out, const char *url, st_error *err);
ST_EXTERN void st_backend_free(st_backend *b);

/* The URL it was opened with, and its kind ("diy") (borrowed). */
ST_EXTERN const char *st_backend_url(const st_backend *b);
ST_EXTERN const char *st_backend_kind(const st_backend *b);

/* The backend's identity (*out new: free()): a DIY backend's is its store's
 * (st_store_identity), Pulumi Cloud's its service URL (scheme and host in lower case, without
 * the scheme's own port or a trailing '/'). Two backends with equal identities hold the same
 * stacks. */
ST_EXTERN int st_backend_identity(const st_backend *b, char **out, st_error *err);

/* Whether the backend holds Pulumi's layout at all: a DIY backend has .pulumi/ (meta.yaml or
 * anything below .pulumi/), which Pulumi writes when it first uses a store. A store without
 * one is not a backend yet (a mistyped path, prefix or bucket): listing its stacks finds none.
 * Known when the backend is opened. */
ST_EXTERN int st_backend_present(const st_backend *b);

/* A DIY backend's store (borrowed), NULL for other kinds. */
ST_EXTERN st_store *st_backend_store(const st_backend *b);

/* The root directory of a DIY backend on a local directory (borrowed), else NULL; and whether
 * a DIY backend uses the project layout. */
ST_EXTERN const char *st_backend_root(const st_backend *b);
ST_EXTERN int st_backend_project_mode(const st_backend *b);

typedef struct st_stack_info {
	char *project;   /* NULL in the legacy layout */
	char *name;      /* the stack name */
	char *qname;     /* organization/project/stack, or stack (legacy) */
	char *path;      /* the file read, when it is a local file, else NULL */
	long long size;  /* bytes stored */
	long long mtime_ns;
	char *key;       /* the object read (DIY: its key in the store), or NULL */
	char etag[72];   /* the store's tag of that object, "" if unknown */
} st_stack_info;

/* Lists every stack (sorted by project, then name). A DIY stack's object is, among
 * <stack>.json, .json.gz and .json.zst, the newest by modification time, and with equal times
 * the last in key order, as Pulumi picks it. *out is new: st_stack_infos_free. */
ST_EXTERN int st_backend_list(st_backend *b, st_stack_info **out, size_t *count, st_error *err);
ST_EXTERN void st_stack_infos_free(st_stack_info *infos, size_t count);

/* Resolves "project/stack", "organization/project/stack" or "stack" (legacy layout, or the one
 * project holding that stack) to the canonical name (organization/project/stack, or stack).
 * *exists tells whether it has a state. *qname is new. `exists` may be NULL. */
ST_EXTERN int st_backend_resolve(st_backend *b, const char *stack, char **qname, int *exists,
				 st_error *err);

/* The same, and from the same listing (one request on an object store) the stack's object as
 * st_backend_stack_key gives it: *key (new) the key in st_backend_store, or where a plain one
 * would be written (*exists 0); NULL for a backend that is not DIY. Pass it to st_backend_load
 * as st_load_opts.key to load without listing again. `exists` may be NULL. */
ST_EXTERN int st_backend_resolve_key(st_backend *b, const char *stack, char **qname, char **key,
				     int *exists, st_error *err);

/* Loads a stack's state. ST_ENOTFOUND when it has none. The state remembers its compression;
 * st_state_path is its local file, or URL/key. *out is new. `opts` may be NULL. */
ST_EXTERN int st_backend_load(st_backend *b, const char *stack, const st_load_opts *opts,
			      st_state **out, st_error *err);

/* The document of a stack's object as st_json_parse reads it (decompressed; `style` and
 * `problems` as st_json_parse fills them), for a caller that reports on what cannot even be
 * loaded as a state (validate). *where (may be NULL; new) names the object. ST_EUNSUPPORTED
 * for a backend that is not DIY. *out is new. `style` and `problems` may be NULL. */
ST_EXTERN int st_backend_load_json(st_backend *b, const char *stack, size_t max_size,
				   json_t **out, st_style *style, st_problems *problems,
				   char **where, st_error *err);

#define ST_BACKEND_SAVE_OPTS_VERSION 1

typedef struct st_backend_save_opts {
	unsigned version;            /* ST_BACKEND_SAVE_OPTS_VERSION */
	int no_backup;               /* 1: no .bak of the previous object */
	st_store_proceed_fn proceed; /* see st_store_write_opts; may be NULL */
	void *proceed_ctx;
} st_backend_save_opts;

#define ST_BACKEND_SAVE_OPTS_INIT {ST_BACKEND_SAVE_OPTS_VERSION, 0, NULL, NULL}

/* Saves a stack's state as Pulumi's DIY backend saves it: the previous object kept as
 * <object>.bak, the new one written atomically where the store allows it, in the compression
 * PULUMI_DIY_BACKEND_GZIP (alias PULUMI_SELF_MANAGED_STATE_GZIP) or PULUMI_DIY_BACKEND_ZSTD (alias
 * PULUMI_SELF_MANAGED_STATE_ZSTD)
 * ask for ("1" or "true"; set to anything else: none), else the state's own. On a change of
 * compression the new object is written first, then the old one is copied to its .bak and
 * removed. Recomputes the manifest magic. `opts` may be NULL. */
ST_EXTERN int st_backend_save(st_backend *b, const char *stack, st_state *state,
			      const st_backend_save_opts *opts, st_error *err);

/* For a DIY backend: the key of a stack's object in st_backend_store (new), chosen as
 * st_backend_list chooses it; when the stack has none yet, *key is where a plain one would be
 * written and *exists is 0. ST_EUNSUPPORTED for other kinds. `key` and `exists` may be NULL. */
ST_EXTERN int st_backend_stack_key(st_backend *b, const char *stack, char **key, int *exists,
				   st_error *err);

/* For a DIY backend: the key of a stack's .bak in st_backend_store (new): the newest (by
 * modification time, as the stack's object is chosen) of <stack>.json.bak, .json.gz.bak and
 * .json.zst.bak, so after a change of compression the old name's .bak, which Pulumi's
 * messages name; when there is none, *key is <object>.bak and *exists is 0. `exists` may be
 * NULL. ST_EUNSUPPORTED for other kinds. */
ST_EXTERN int st_backend_stack_bak(st_backend *b, const char *stack, char **key, int *exists,
				   st_error *err);

/* For a DIY backend: where a save of `state` to `stack` goes, as st_backend_save decides it:
 * *key (new) in the compression PULUMI_DIY_BACKEND_GZIP/ZSTD ask for, else the state's own
 * (which is set on the state), and *old_key (new, or NULL) the stack's current object when it
 * is another key. ST_EUNSUPPORTED for other kinds. */
ST_EXTERN int st_backend_stack_target(st_backend *b, const char *stack, st_state *state,
				      char **key, char **old_key, st_error *err);

/* For a DIY backend on a local directory: the file of a stack (new), as st_backend_resolve
 * resolves it; when the stack has no file yet, *path is where it would be written and *exists
 * is 0. ST_EUNSUPPORTED for other backends. `path` and `exists` may be NULL. */
ST_EXTERN int st_backend_stack_path(st_backend *b, const char *stack, char **path, int *exists,
				    st_error *err);

/* Is `path` a stack file inside a DIY backend (<root>/.pulumi/stacks/[<project>/]<stack>.json
 * [.gz|.zst])? Then *root (the backend's directory) and *stack (project/stack, or stack in the
 * legacy layout) are new and 1 is returned; else 0. The layout is read from the backend. */
ST_EXTERN int st_backend_locate(const char *path, char **root, char **stack);

/* Pulumi's name rules: stack names [A-Za-z0-9_.-]{1,100}; project names [A-Za-z0-9_.-]{1,100}.
 * Return 1 when valid. */
ST_EXTERN int st_stack_name_valid(const char *name);
ST_EXTERN int st_project_name_valid(const char *name);

/* ---------------------------------------------------------------------------------------------
 * Generations: a DIY stack's history, as Pulumi's DIY backend keeps it
 *
 * Pulumi copies the state after each update to .pulumi/backups/<project>/<stack>/
 * <stack>.<UnixNano>.json[.gz|.zst] (legacy layout: .pulumi/backups/<stack>/; not when
 * PULUMI_DIY_BACKEND_DISABLE_CHECKPOINT_BACKUPS, alias PULUMI_DISABLE_CHECKPOINT_BACKUPS, is
 * "1" or "true"), and writes an update record <stack>-<UnixNano>.history.json with a copy of
 * the state beside it (<stack>-<UnixNano>.checkpoint.json) in .pulumi/history/<project>/
 * <stack>/. With PULUMI_DIY_BACKEND_RETAIN_CHECKPOINTS (alias PULUMI_RETAIN_CHECKPOINTS) "1" or
 * "true", Pulumi also writes each saved object again as <object>.<UnixNano> beside it, and so
 * does st_backend_save. st_backend_save does as Pulumi's updates do: after writing, the new state is
 * copied to the backups; before, the state it replaces is copied there too (timed by its
 * modification time) unless the newest backup already holds its bytes. So each statetool
 * change leaves the state before and after it as generations.
 */

typedef enum st_generation_kind {
	ST_GEN_CURRENT = 1, /* the stack's object itself, id "current" */
	ST_GEN_BAK,         /* its .bak, id "bak" */
	ST_GEN_BACKUP,      /* a copy in backups/, id its file name */
	ST_GEN_HISTORY      /* a history checkpoint, id its file name */
} st_generation_kind;

typedef struct st_generation {
	char *id;                /* what names it (above) */
	char *key;               /* its object in st_backend_store */
	st_generation_kind kind;
	long long time_ns;       /* the UnixNano of its name; current and bak: modification time */
	long long size;          /* bytes stored, -1 if unknown */
	json_t *update;          /* ST_GEN_HISTORY: the update record beside it (kind, result,
				  * message, startTime, endTime, resourceChanges...), else NULL */
} st_generation;

/* Lists a DIY stack's generations: current first, then newest first (by time, then id).
 * Objects in the backups and history folders not named as Pulumi names them are left out.
 * *out is new: st_generations_free. ST_EUNSUPPORTED for a backend of another kind. */
ST_EXTERN int st_backend_generations(st_backend *b, const char *stack, st_generation **out,
				     size_t *count, st_error *err);
ST_EXTERN void st_generations_free(st_generation *gens, size_t count);

/* Loads the generation `id` (borrowed; an id of st_backend_generations) of a stack. The state
 * keeps the generation's compression. ST_ENOTFOUND when there is none. *out is new.
 * `opts` may be NULL. */
ST_EXTERN int st_backend_generation_load(st_backend *b, const char *stack, const char *id,
					 const st_load_opts *opts, st_state **out,
					 st_error *err);

/* Copies a stack's current object to its backups as Pulumi's backupStack does, named by its
 * modification time, unless the newest backup holds the same bytes (for a change made without
 * st_backend_save, such as putting a .bak back: before it and after it). Nothing when backups
 * are disabled (above). ST_ENOTFOUND when the stack has no state. */
ST_EXTERN int st_backend_keep_generation(st_backend *b, const char *stack, st_error *err);

/* The same for the state a change made without st_backend_save has just written (after it):
 * named by the time of now, as st_backend_save names its copy after writing, unless the newest
 * backup holds the same bytes. Either call names the copy later than the newest backup, so
 * that it never replaces one and history lists the generations in the order of the saves.
 * Nothing when backups are disabled. ST_ENOTFOUND when the stack has no state. */
ST_EXTERN int st_backend_keep_saved_generation(st_backend *b, const char *stack,
					       st_error *err);

/* ---------------------------------------------------------------------------------------------
 * Locks
 */

typedef struct st_lock st_lock;

/* Takes the lock of a backend stack in Pulumi's own format and place
 * (.pulumi/locks/organization/<project>/<stack>/<uuid>.json, {"pid","username","hostname",
 * "timestamp"}), so statetool and the Pulumi CLI exclude each other. Someone else's lock gives
 * ST_ELOCKED with Pulumi's message naming the holder. *out is new: st_lock_release. */
ST_EXTERN int st_lock_stack(st_lock **out, st_backend *b, const char *stack, st_error *err);

/* Takes the lock of a plain state file: <path>.lock created exclusively, same content. */
ST_EXTERN int st_lock_file(st_lock **out, const char *path, st_error *err);

/* Whether someone else holds the lock of a backend stack (or of a plain file), without taking
 * it: ST_OK when no one does, else ST_ELOCKED with the message st_lock_stack (st_lock_file)
 * would give. What a --dry-run tells of the real run. A Pulumi Cloud stack has no lock: ST_OK. */
ST_EXTERN int st_lock_check_stack(st_backend *b, const char *stack, st_error *err);
ST_EXTERN int st_lock_check_file(const char *path, st_error *err);

/* Releases and frees a lock. Accepts NULL. Returns ST_OK or ST_EIO (the file could not be
 * removed; the message says where it is). */
ST_EXTERN int st_lock_release(st_lock *lock, st_error *err);

/* Removes every lock of a stack (or the lock of a file), whoever holds it: `statetool unlock`.
 * *removed counts them. */
ST_EXTERN int st_unlock_stack(st_backend *b, const char *stack, int *removed, st_error *err);
ST_EXTERN int st_unlock_file(const char *path, int *removed, st_error *err);

/* ---------------------------------------------------------------------------------------------
 * Upgrading a legacy DIY backend to the project layout (`pulumi state upgrade`)
 *
 * Each stack of the legacy layout (.pulumi/stacks/<stack>.json[.gz|.zst]) goes to
 * .pulumi/stacks/<project>/<stack>.json..., its project taken from its first resource's URN as
 * Pulumi guesses it. The object's bytes are copied unchanged (its URNs already name the
 * project), the old object is kept as <old>.bak (Pulumi's backupTarget), its history files
 * (<stack>-<time>.*) move to .pulumi/history/<project>/<stack>/ as Pulumi moves them, and, where
 * Pulumi leaves them behind (nothing would find them again), its backups and tags file move too.
 * Each stack is moved under its (legacy) lock, its own object deleted last; .pulumi/meta.yaml
 * ("version: 1") is written last of all, so an interrupted upgrade leaves a legacy backend that
 * Pulumi still reads and the next upgrade completes. A stack none of whose resources names a
 * project (an empty stack) takes the project `project_for` gives, or is skipped with Pulumi's
 * warning. Refused (ST_ELOCKED, Pulumi's lock message) while any legacy stack is locked, before
 * anything changes.
 */

/* One step of an upgrade, planned (dry run) or done. Every string is borrowed for the call. */
typedef struct st_upgrade_event {
	const char *kind;    /* "move" (an object to its new key), "stack" (a stack's object: to
			      * its new key, the old one kept as <from>.bak), "skip" (a stack not
			      * upgraded: `reason`), "meta" (meta.yaml written: `to`) */
	const char *stack;   /* the legacy stack, or NULL for "meta" */
	const char *project; /* its project, or NULL */
	const char *from;    /* the key moved, or NULL */
	const char *to;      /* where it goes, or NULL */
	const char *reason;  /* "skip": why, in Pulumi's words; else NULL */
} st_upgrade_event;

#define ST_UPGRADE_OPTS_VERSION 1

typedef struct st_upgrade_opts {
	unsigned version; /* ST_UPGRADE_OPTS_VERSION */
	int dry_run;      /* only plan: events for every step, nothing written */
	/* The project of a stack whose resources name none (Pulumi's ProjectsForDetachedStacks):
	 * a name (borrowed until the next call), or NULL/"" to skip the stack. May be NULL. */
	const char *(*project_for)(void *ctx, const char *stack);
	void (*event)(void *ctx, const st_upgrade_event *ev); /* may be NULL */
	void (*progress)(void *ctx, size_t done, size_t total); /* stacks done; may be NULL */
	void *ctx;
} st_upgrade_opts;

#define ST_UPGRADE_OPTS_INIT {ST_UPGRADE_OPTS_VERSION, 0, NULL, NULL, NULL, NULL}

typedef struct st_upgrade_report {
	size_t stacks;   /* legacy stacks found */
	size_t upgraded; /* moved (or, in a dry run, to be moved) */
	size_t skipped;  /* left where they are */
	int meta;        /* meta.yaml written (or to be written) */
} st_upgrade_report;

/* Upgrades the DIY backend `b` (any store) to the project layout; afterwards `b` is in project
 * mode. `opts` and `report` may be NULL. A stack that cannot be read stops the upgrade before
 * anything is written ("guess stack S project: ..."), as in Pulumi; ST_EUNSUPPORTED for a
 * backend of another kind. */
ST_EXTERN int st_backend_upgrade(st_backend *b, const st_upgrade_opts *opts,
				 st_upgrade_report *report, st_error *err);

/* ---------------------------------------------------------------------------------------------
 * Doctor: every problem of a whole DIY backend, each with the command that fixes it
 */

/* One problem. Every string is new (st_doctor_report_free). */
typedef struct st_doctor_finding {
	char *kind;    /* "unreadable", "integrity", "place", "pending", "lock",
			* "legacy-layout", "legacy-stack", "legacy-lock", "stray-variant", "journal",
			* "duplicate-id", "index-stale", "temporary" */
	char *stack;   /* the stack concerned (as --stack takes it), or NULL: the backend */
	char *where;   /* the object concerned (st_store_where), or NULL */
	char *message;
	char *fix;     /* the statetool (or pulumi) command that fixes it; "" when there is
			* nothing to do (a statetool operation in progress) */
} st_doctor_finding;

typedef struct st_doctor_report {
	st_doctor_finding *items;
	size_t count, capacity;
	size_t stacks;     /* stacks looked at */
	int index_checked; /* an index of the backend was compared with it */
} st_doctor_report;

#define ST_DOCTOR_OPTS_VERSION 1

typedef struct st_doctor_opts {
	unsigned version;       /* ST_DOCTOR_OPTS_VERSION */
	const char *index_path; /* the index to compare with the backend; NULL: the backend's
				 * default index (st_index_default_path) when it exists */
	long long lock_max_age; /* seconds after which a lock is stale; 0: 24 hours; < 0: never
				 * by age (a lock whose process is gone from this host, or that
				 * cannot be parsed, is stale anyway) */
	void (*progress)(void *ctx, size_t done, size_t total); /* stacks read; may be NULL */
	void *ctx;
} st_doctor_opts;

#define ST_DOCTOR_OPTS_INIT {ST_DOCTOR_OPTS_VERSION, NULL, 0, NULL, NULL}

/* Looks at every stack and object of the DIY backend `b` (read-only) and fills `out` (caller
 * storage, emptied first; st_doctor_report_free): a stack that cannot be read, integrity
 * errors (st_validate, no schemas), a state in the wrong place or envelope (st_check_place),
 * pending operations, stale locks, the legacy layout and its leftovers (legacy stack files and
 * lock folders in the project layout, a .json beside the .json.gz Pulumi reads, journals and
 * staged objects of interrupted statetool operations), a physical ID held by resources of
 * two stacks (providers, external reads and pending deletes excluded), an index that is out of
 * date, a directory backend's temporary files (of writes) untouched for over an hour. ST_OK
 * when the look ran, whatever it found; ST_EUNSUPPORTED for another kind. `opts` may be NULL. */
ST_EXTERN int st_backend_doctor(st_backend *b, const st_doctor_opts *opts, st_doctor_report *out,
				st_error *err);

/* Frees the findings; the report is reset to empty. Accepts NULL. */
ST_EXTERN void st_doctor_report_free(st_doctor_report *r);

/* ---------------------------------------------------------------------------------------------
 * Renaming a stack (`pulumi stack rename`)
 */

/* Gives the stack of a state a new name (and project, when `new_project` is not NULL), with
 * Pulumi's edit.RenameStack rules: every URN naming stack `old_stack` (and, when `old_project`
 * is not NULL, project `old_project`) is rewritten: resources' and pending operations' urn,
 * parent, dependencies, propertyDependencies, deletedWith, replaceWith, aliases, viewOf, the
 * provider reference's URN, and inside inputs, outputs and replacementTrigger the URNs of
 * resource references, output values and plaintext secrets (their JSON written again as Go's
 * json.Marshal writes it, when something in it changed); the root stack resource's name
 * becomes <project>-<stack>; the checkpoint's `stack` the new full name. Strings borrowed.
 * *count (may be NULL): how many URNs changed. `new_stack` may be NULL. */
ST_EXTERN int st_state_rename_stack(st_state *state, const char *new_stack,
				    const char *new_project, const char *old_stack,
				    const char *old_project, size_t *count, st_error *err);

/* Renames stack `from` of the DIY backend `b` (any store) to `to` (NAME: the same project;
 * PROJECT/NAME or organization/PROJECT/NAME: another; the legacy layout has no projects), as
 * Pulumi's DIY backend does: under the stack's lock; ST_EEXIST ("a stack named ... already
 * exists") when `to` is taken; the state renamed (st_state_rename_stack) and written as the new
 * stack, the history files moved and renamed, the tags file and the backups moved (where Pulumi
 * leaves them), the old object kept as its .bak and deleted last. After an interruption the
 * same call (or st_backend_recover on either stack) finishes the rename: see
 * st_backend_rename_stack_ex, which this is with no flags and no report. *new_qname (may be
 * NULL) is the new full name (new). */
ST_EXTERN int st_backend_rename_stack(st_backend *b, const char *from, const char *to,
				      char **new_qname, st_error *err);

/* The choice of a rename whose new stack was written after an interruption (flags of
 * st_backend_rename_stack_ex). */
#define ST_RENAME_KEEP_OLD 1u /* the old stack's state, renamed, written over the new one's */
#define ST_RENAME_KEEP_NEW 2u /* the new stack as it is */

/* st_backend_rename_stack, crash-safe across commands: both stacks are locked (Pulumi's locks)
 * and a marker (<stack>.json.statetool-rename, naming both stacks and both locks) lies beside
 * each while the rename runs. An interrupted rename of either stack is ended first, as
 * st_backend_recover ends it for any command on either stack: completed when the new stack
 * holds exactly what the rename makes of the old one, undone when the new stack was never
 * written, refused with ST_ELOCKED when a lock other than the rename's own is on either; when
 * the new stack was written since, ST_ECONFLICT ("... no longer holds what the rename made of
 * ...", both stacks described) unless `flags` chooses (ST_RENAME_KEEP_OLD or _NEW: then the
 * rename completes keeping that state, the other one kept as its .bak). Notes of what was
 * ended go to `report` (may be NULL). Completing this very rename is success.
 * `new_qname` may be NULL. */
ST_EXTERN int st_backend_rename_stack_ex(st_backend *b, const char *from, const char *to,
					 unsigned flags, char **new_qname, st_changes *report,
					 st_error *err);

#ifdef __cplusplus
}
#endif

#endif
