/* Private declarations shared by the library's modules. Not installed.
 *
 * What is exported: the library is compiled with -fvisibility=hidden, so a function is part of
 * the shared library's ABI only when lib/statetool.h declares it ST_EXTERN; lib/statetool.sym
 * (the list the link uses) names the same functions, and tests/symbols.sh checks the header,
 * the list and `nm -D` of the built library against each other. Nothing declared here is
 * exported, whatever its name: the older helpers keep their st_ names (st_buf_*, st_strmap_*,
 * st_strdup, ...), and new functions shared between modules are named st__<module>_<verb> so a
 * reader tells them from the API at a glance. The unit tests link the convenience library
 * (lib/libstatetool-core.la) and so reach everything declared here. */
#ifndef ST_INTERNAL_H
#define ST_INTERNAL_H

#include "statetool.h"

#include <pthread.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#define ST_UNUSED __attribute__((unused))

/* A public function's required pointer argument (any the header does not say may be NULL: a
 * handle, a name, an output): NULL is the caller's programming error, as the header says, and
 * aborts in every build (NDEBUG or not) with a message naming the function and the argument,
 * as assert() would. Checked first thing at every public entry point, before anything reads
 * through an argument (tests/nullargs.sh lists them all for tests/test_contract.c). */
#define ST_ASSERT_ARG(x)                                                                         \
	do {                                                                                     \
		if (!(x))                                                                        \
			st__assert_fail(#x, __func__);                                           \
	} while (0)
/* The same where the definition's name for the argument is not the header's: the message
 * names the argument as lib/statetool.h does (ST_ASSERT_ARG_AS(s, "state")). */
#define ST_ASSERT_ARG_AS(x, name)                                                                \
	do {                                                                                     \
		if (!(x))                                                                        \
			st__assert_fail(name, __func__);                                         \
	} while (0)
void st__assert_fail(const char *what, const char *func) __attribute__((noreturn));

/* ST_EINVAL naming the bits of `flags` outside `known` (names: the known flags' names). */
int st__bad_flags(st_error *err, unsigned flags, unsigned known, const char *names);

/* Sets err (when not NULL and not already set: the first error wins) and returns code. */
int st__err(st_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int st__verr(st_error *err, int code, const char *fmt, va_list ap);
/* Passes on an error caught in a local record (err, when not NULL and not already set, becomes a
 * copy of it); returns its code. For a caller that tells one code from the others and sets its
 * own error instead: the local record keeps that first error out of err. */
int st__err_copy(st_error *err, const st_error *from);
/* Adds a file name to an error that has none. */
void st__err_file(st_error *err, const char *file);
void st__err_pointer(st_error *err, const char *pointer);

/* A growable byte buffer. On allocation failure `oom` is set and further appends do nothing. */
typedef struct st_buf {
	char *data;
	size_t len;
	size_t cap;
	int oom; /* also set when the sink failed (sink_failed tells) */
	/* Optional: where full buffers go. With a sink, a buffer that has reached ST_BUF_CHUNK is
	 * handed to it and emptied before it would grow; data then holds only the tail. */
	int (*sink)(void *ctx, const char *p, size_t n);
	void *sink_ctx;
	int sink_failed;
	/* Optional, with a sink: where a run of source bytes goes (st_buf_add_span); NULL: to
	 * the sink. A run is bytes of a text that stays alive until the flush (a lazy state's
	 * source), handed over in place: never copied into the buffer. */
	int (*run_sink)(void *ctx, const char *p, size_t n);
	const char *run; /* the pending run [run, run + run_len), or NULL; data then holds only */
	size_t run_len;  /* bytes that follow it */
} st_buf;

#define ST_BUF_CHUNK (4u << 20)

/* Is the key (k, kl) the literal `lit`? */
#define ST_KEY_IS(k, kl, lit) ((kl) == sizeof(lit) - 1 && !memcmp((k), (lit), sizeof(lit) - 1))

void st_buf_init(st_buf *b);
void st_buf_free(st_buf *b);
int st_buf_reserve(st_buf *b, size_t extra);
void st_buf_add(st_buf *b, const void *p, size_t n);
void st_buf_addc(st_buf *b, char c);
void st_buf_adds(st_buf *b, const char *s);
void st_buf_printf(st_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands what the buffer holds to its sink (if any). -1 when the sink failed. */
int st_buf_flush(st_buf *b);
/* Appends n bytes; with a sink, a big block goes to it directly instead of being copied. */
void st_buf_add_block(st_buf *b, const void *p, size_t n);
/* Appends n bytes of a text that outlives the buffer's next flush. With a sink they join the
 * pending run when they follow it in that text and the bytes appended since the run are the
 * text's own bytes between them (the run then grows over both); else the run goes out and
 * these bytes start a new one. A run goes out (to run_sink, else the sink) before anything
 * after it: order is kept. Without a sink: st_buf_add. */
void st_buf_add_span(st_buf *b, const char *p, size_t n);
/* Detaches the data (NUL-terminated) and resets the buffer. NULL when oom. */
char *st_buf_take(st_buf *b, size_t *len);

/* Makes the pages of [p, p + n) present at once (MADV_POPULATE_WRITE, Linux 5.14) rather than
 * one page fault per 4 KiB as they are first written: for a big buffer about to be filled
 * (~50,000 faults for 200 MB, more system time than receiving or decoding its bytes). Whole
 * pages inside the range only; the contents are unchanged. Only advice: 1 when taken, 0 when
 * not (a range without a whole page, an older kernel: the pages then come as before). */
int st__prefault(void *p, size_t n);
/* For a buffer of `size` bytes filled in order, `need` of them about to be written, *done
 * present so far: makes it present up to ST_PREFAULT_WINDOW past `need` (never beyond, so a
 * size that was announced but never sent costs nothing), one call per window; nothing for a
 * buffer smaller than a window. */
#define ST_PREFAULT_WINDOW ((size_t)8 << 20)
void st__prefault_ahead(char *buf, size_t size, size_t *done, size_t need);
/* How many ranges st__prefault was given (for the tests). */
unsigned long st__prefaults(void);

/* JSON Pointer helpers: append one reference token, escaping ~ and /. */
void st_pointer_add_key(st_buf *b, const char *key, size_t len);
void st_pointer_add_index(st_buf *b, size_t index);
/* A key for a message, whole: a NUL as st_pointer_add_key writes it ("\u0000"), every other
 * byte as it is. */
void st__key_text(st_buf *b, const char *key, size_t len);

/* Where a walk over a value is, kept as segments and made into a JSON Pointer only when a
 * problem needs one. A segment is a key (key, len) or an array index (key NULL, index in len). */
typedef struct st_seg {
	const char *key;
	size_t len;
} st_seg;

typedef struct st_segs {
	st_seg *v;
	size_t n, cap;
} st_segs;

/* Pushes a segment (key, len); -1 when out of memory. */
int st_segs_push(st_segs *s, const char *key, size_t len);
/* Appends the segments to b as reference tokens. */
void st_segs_pointer(st_buf *b, const st_segs *s);
void st_segs_free(st_segs *s);

/* May the library use a second thread? `threads` is a call's choice (an option's field: 0 the
 * process-wide one, 1 no, 2 yes even on one processor); the process-wide choice is
 * st_set_threads's, and when that is 0, yes when two processors are online. */
int st__threads_ok_for(int threads);
/* st__threads_ok_for(0). */
int st__threads_ok(void);
/* ST_EINVAL unless threads is 0, 1 or 2. */
int st__threads_check(int threads, st_error *err);

/*
 * Two threads (lib/util/thread.c): every place of the library that runs work on a second thread
 * is named here, and its threshold (how big its input must be to be worth a thread, and what
 * is counted) is in the one table of thread.c. The helper starts the thread, counts it (the
 * tests assert the count, so that raising a threshold cannot turn a two-thread test into a
 * one-thread one) and joins it.
 */
typedef enum st__tsite {
	ST__T_PARSE,        /* the JSON reader: bytes of text (lib/json/read_split.c) */
	ST__T_SKIM,         /* the lazy load's reader: bytes of text (read_split.c, skim.c) */
	ST__T_WRITE,        /* the JSON writer: elements of the biggest array near the top */
	ST__T_DECODE,       /* Go's decoder: elements of an array of structs */
	ST__T_INTEGRITY,    /* the integrity check's property walk: resources */
	ST__T_VALIDATE,     /* validate: the schemas beside the integrity rules: resources */
	ST__T_COMMIT,       /* st_edit_commit: features and diff beside the check: resources */
	ST__T_COMMIT_SAVE,  /* st_edit_commit_save: the check beside the write: resources */
	ST__T_COMMIT_PAIR,  /* st_edit_commit_pair: the two checks: resources of both */
	ST__T_MOVE,         /* a move: the two states' checks: resources of both */
	ST__T_REFSCAN,      /* the reference scan of delete and move: resources */
	ST__T_ENCRYPT,      /* secrets encrypt and rekey: resources */
	ST__T_JOURNAL_HASH, /* the two-stack journal: the old objects hashed (always) */
	ST__T_JOURNAL_STAGE, /* the two-stack journal: the second side staged (always) */
	ST__T_PREHASH,      /* a move: the old objects hashed ahead, beside the move (always) */
	ST__T_INDEX,        /* the index: stacks read and parsed beside the writes: stacks */
	ST__T_LIST,         /* a directory listed: its entries stat'ed (lib/store/filestore.c) */
	ST__T_COUNT
} st__tsite;

/* A second thread, started by st__two_start (zero it first). */
typedef struct st__two {
	pthread_t th;
	int started;
} st__two;

/* Whether `site` should use a second thread for work of size n: n reaches the site's threshold
 * and the thread policy allows (st__threads_ok_for(threads)). */
int st__two_worth(st__tsite site, size_t n, int threads);
/* Starts fn(arg) on a second thread (stack: its stack size, 0 the default) and counts it for
 * `site`; 1 when it runs, 0 when it could not start (the caller does the work itself). */
int st__two_start(st__two *t, st__tsite site, void *(*fn)(void *), void *arg, size_t stack);
/* Waits for the thread st__two_start started (nothing when none). */
void st__two_join(st__two *t);
/* The common case: a(arg_a) on this thread and b(arg_b) on a second one when the work (of
 * size n, under the call's `threads` choice) is worth it, else b after a on this thread.
 * 1: two threads ran. */
int st__two_run(st__tsite site, size_t n, int threads, void *(*a)(void *), void *arg_a,
		void *(*b)(void *), void *arg_b);
/* How many times `site` ran on two threads (the tests' proof that the threaded path ran). */
unsigned long st__two_count(st__tsite site);
/* Reports the end of a step (its name; NULL: an operation starts) to the phase hook of
 * st_set_hooks, if any. Any thread. */
void st__phase(const char *name);
/* The number of lock objects the process is writing or holds changed (the locks hook). */
void st__locks_changed(size_t n);
/* Step `step` of the durable write `op` ("write" 1-4, "pair" 1-7, "index" 1; see
 * lib/store/store.c and journal.c): calls the step hook of st_set_hooks, if any (the CLI's
 * kills the process there when STATETOOL_CRASH_AT names the step, for the crash tests). */
void st__crash_point(const char *op, int step);
/* ST_EINVAL "unsupported options version" unless 1 <= version <= current (`what` names the
 * struct in the message). */
int st__opts_version(unsigned version, unsigned current, const char *what, st_error *err);
/* How many parses so far reached the second thread's part and took its result, elements
 * or error (for the tests). */
unsigned long st__json_splits(void);
/* How many parses were done again keeping the earlier values of duplicate keys
 * (lib/json/read.c), for the tests. */
unsigned long st__json_reparses(void);
/* Frees the problems after the first n (the counts follow). NULL: nothing. */
void st__problems_truncate(st_problems *pr, size_t n);
/* The warning json/trailing-data (ST_PARSE_FIRST_VALUE) in `pr`, if any, made the error
 * json.Unmarshal gives (a checkpoint): ST_EPARSE with Go's message, line, column and offset,
 * and the list emptied (Unmarshal checks the syntax before anything the reader or a decoder
 * would find). ST_OK when there is none. */
int st__json_trailing_refuse(st_problems *pr, st_error *err);

/* The reader's value for a number beyond the float64 range (1e400) where its caller takes
 * problems (st_json_parse): a JSON integer no parse makes otherwise (every number is read as
 * a real), with a warning json/number-range naming the literal at its pointer. Go converts
 * such a literal only where it stores a number (a float64 or int field, an interface{} value:
 * the decoder's error there, lib/state/decode.c) and skips it elsewhere (an unknown member, a
 * json.RawMessage). The writer refuses it (statetool cannot write the literal back). */
#define ST__JSON_BIGNUM ((json_int_t)INT64_MIN)
#define ST__NUMBER_RANGE_RULE "json/number-range"
static inline int st__json_is_bignum(const json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) == ST__JSON_BIGNUM;
}
/* Test hook: documents of at least `min` bytes (0: back to the default, 1 MiB) are parsed on
 * two threads when threads may be used, and the first waits for the second's scan instead of
 * giving up on it. Process-wide; for the tests. */
void st__json_split_test(size_t min);

/* strdup/asprintf that return NULL on failure. */
char *st_strdup(const char *s);
char *st_strndup(const char *s, size_t n);
char *st_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The strings up to a NULL, one after the other (new; NULL when out of memory): no format to
 * parse, for the keys and paths a listing of 10,000 stacks builds. */
char *st_strconcat(const char *first, ...) __attribute__((sentinel));
/* Whether base[0..n) is in cmp's order already (n - 1 comparisons: a qsort it saves). */
int st__sorted(const void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
/* `s` as one shell word (new): as it is when it holds nothing a shell treats specially, else in
 * single quotes (an s3:// URL's "&" and "?", a path's spaces). For the hints in messages. */
char *st__shell_word(const char *s);

/* What kind of object a value is, for the writer's key order and for canonical field order. */
typedef enum st_kind {
	ST_K_ANY = 0,     /* unknown: keys kept in the order held */
	ST_K_MAP,         /* a Go map of plain values: keys sorted, values ST_K_ANY */
	ST_K_PROPMAP,     /* property map: keys sorted at every depth */
	ST_K_RAW,         /* json.RawMessage: kept as held */
	ST_K_ENVELOPE,
	ST_K_CHECKPOINT,
	ST_K_DEPLOYMENT,
	ST_K_MANIFEST,
	ST_K_PLUGIN,
	ST_K_SECRETS_PROVIDER,
	ST_K_METADATA,
	ST_K_INTEGRITY_ERROR,
	ST_K_RESOURCE,
	ST_K_OPERATION,
	ST_K_TIMEOUTS,
	ST_K_STACKFRAME,
	ST_K_SNIPPET,
	ST_K_DESCRIPTOR,
	ST_K_PARAMETERIZATION,
	ST_K_EXTENSION,
	ST_K_MAP_OF_EXTENSION, /* extensions: map ref -> extension */
	ST_K_MAP_OF_ARRAY      /* propertyDependencies, resourceHooks: sorted keys */
} st_kind;

/* The kind of a member `key` of an object of kind `parent`, or of an element of an array held
 * by such a member (`key` NULL and `parent` the array's own kind context). */
st_kind st_kind_child(st_kind parent, const char *key);

/* How one write may use threads; an argument of st__json_write and of the functions that
 * stream a state, NULL meaning the defaults (all 0). */
typedef struct st__wcfg {
	/* 0: the process-wide choice; 1: this write stays on the calling thread (its caller keeps
	 * the other processor busy); 2: a big array on a second thread even on one processor */
	int threads;
	/* Called once the writes this call makes next no longer keep a second processor busy:
	 * when the second half of the split array is written (from that thread), or at once when
	 * there is no split. NULL: nothing called. st_edit_commit_save starts its check then. */
	void (*on_core_free)(void *ctx);
	void *on_core_free_ctx;
	/* the keys put back as written in the objects it names (a state's st__state_keymap), or
	 * NULL */
	const struct st__keymap *keys;
	/* a lazy state's side table (st__lazy_spans): its registered resources are written as
	 * their spans when the write is in the text's own style (NULL: every resource walked) */
	struct st__spans *spans;
} st__wcfg;

/* st_file_write_atomic with the content written by `fill` (no compression). When `proceed`
 * is given it is called once the temporary file is complete and synced: anything but ST_OK
 * removes it and is returned, leaving the old file as it was. */
int st__file_write_atomic_fill(const char *path, st_store_fill_fn fill, void *ctx,
			       int (*proceed)(void *ctx), void *proceed_ctx,
			       const st_write_opts *opts, st_error *err);
/* st_file_write_atomic with such a `proceed` hook. */
int st__file_write_atomic_checked(const char *path, const void *data, size_t len,
				  int (*proceed)(void *ctx), void *proceed_ctx,
				  const st_write_opts *opts, st_error *err);
/* Reads fd to its end, at most max bytes (ST_ELIMIT beyond, naming `path`). *out is new and
 * NUL-terminated. */
int st__read_fd(int fd, size_t max, char **out, size_t *len, const char *path, st_error *err);
/* The compression of a buffer by its magic bytes. */
st_compression st__detect_compression(const void *data, size_t n);
/* Decompresses raw[0..n) (stolen) when its magic bytes say gzip or zstd, at most max_size
 * bytes; *out is new (raw itself when plain). `name` names it in messages. */
int st__decompress(char *raw, size_t n, size_t max_size, const char *name, char **out,
		   size_t *len, st_compression *compression, st_error *err);
/* data compressed as `c` (a plain copy for ST_COMPRESS_NONE). *out is new. */
int st__compress_bytes(st_compression c, const void *data, size_t len, char **out,
		       size_t *outlen, st_error *err);
/* Writes the state's text (its own style, uncompressed) to a store writer as it is produced,
 * with the writer's thread choices `cfg` (may be NULL). */
int st__state_stream_to(const st_state *s, st_store_writer *w, const st__wcfg *cfg,
			st_error *err);
/* Writes the state's text (its own style, uncompressed) to fd as it is produced; each chunk
 * written is also given to `also` when set (a hash). ST_EIO with errno set when a write fails;
 * other codes with err filled. */
int st__state_stream(const st_state *s, int fd, void (*also)(void *ctx, const char *p, size_t n),
		     void *also_ctx, const st__wcfg *cfg, st_error *err);
/* st_state_save with such a `proceed` hook and the writer's thread choices `cfg` (may be NULL;
 * its `threads`, when 0, is opts->threads). */
int st__state_save_checked(st_state *s, const char *path, const st_write_opts *opts,
			   int (*proceed)(void *ctx), void *proceed_ctx, const st__wcfg *cfg,
			   st_error *err);
/* st_state_dump in the state's own style with the writer's thread choices (may be NULL). */
int st__state_dump_cfg(const st_state *s, const st__wcfg *cfg, char **out, size_t *len,
		       st_error *err);
/* st_backend_save with the writer's thread choices (may be NULL). */
/* A Pulumi Cloud stack's export: its bytes (*data, new) and its name for messages (*where,
 * new). ST_EUNSUPPORTED for another kind of backend (lib/store/cloud.c). */
int st__backend_export(st_backend *b, const char *stack, size_t max, char **data, size_t *len,
		       char **where, st_error *err);
int st__backend_save(st_backend *b, const char *stack, st_state *state,
		     const st_backend_save_opts *opts, const st__wcfg *cfg, st_error *err);
/* The checks of a public call's options: a version the library knows, `threads` 0 to 2. */
int st__load_opts_check(const st_load_opts *opts, st_error *err);
int st__write_opts_check(const st_write_opts *opts, st_error *err);
/* write(2) until done or an error (-1, errno set). */
int st__write_full(int fd, const void *p, size_t n);

/* st_json_parse with more: `mapped` (buf is a private file mapping whose pages may be given
 * back as parsing passes them), `threads` (as st_load_opts.threads), and *features (may be
 * NULL): the deployment features whose
 * marks the document holds anywhere (bit k: an object key st__feature_key names; bit
 * ST_FEATURE_BYTESTRING: a string equal to the bytestring signature). A clear bit means no
 * resource can use that feature. */
int st__json_parse_ex(json_t **out, const char *buf, size_t len, const char *name,
		      const st_parse_limits *limits, st_style *style_out, st_problems *problems,
		      int mapped, int threads, unsigned *features, st_error *err);

#include "lazy.h"
/* Maps a plain file of at least 4 MiB for reading (lib/state/state.c): 0 done, 1 not a
 * candidate (small, compressed, not regular, unreadable: the caller reads it). With fd
 * non-NULL the file stays open in *fd (new: the caller closes it) when mapped. */
int st__map_file(const char *path, size_t max, void **map, size_t *len);
int st__map_file_fd(const char *path, size_t max, void **map, size_t *len, int *fd);
/* n bytes to a store writer, copied inside the kernel from fd at off when the writer's
 * store can (a local file: copy_file_range(2)), else written from p (the same bytes, which
 * the caller holds in memory: a mapping of that file). The writer's tap sees them either way. */
int st__store_writer_copy(st_store_writer *w, int fd, off_t off, const char *p, size_t n,
			  st_error *err);
/* For the tests: bytes st__store_writer_copy had the kernel copy; runs of spans a state's
 * streamed write handed over (st_buf_add_span); st__store_copy_enable(0) makes every copy
 * take the fallback (the bytes written from memory), 1 restores. */
unsigned long st__store_copied(void);
/* For the tests: the file store writer's calls that handed written bytes to the disk early
 * (sync_file_range, once per 8 MiB written). */
unsigned long st__store_writebacks(void);
unsigned long st__state_runs(void);
void st__store_copy_enable(int on);
int st__store_copy_enabled(void);
/* For the tests: st__store_link_enable(0) makes the file store's backups take the fallback (a
 * copy with the old file's mode, as where no hard link can be made), 1 restores. */
void st__store_link_enable(int on);

/* How many lazy parses kept at least one skeleton (for the tests). */
unsigned long st__json_skims(void);
/* Pulumi's special-value signature key, the signature of a secret ({ST_SIG_KEY: ST_SIG_SECRET,
 * "ciphertext" or "plaintext"}), and that of a bytestring (feature "bytestring" of deployment
 * version 4). The one definition of each: every module uses these. */
#define ST_SIG_KEY "4dabf18193072939515e22adb298388d"
#define ST_SIG_SECRET "1b47061264138c4ac30d75fd1eb44270"
#define ST_SIG_BYTESTRING "803fd3297a5875dc03ca845dda5d2a98"
/* Pulumi's other special values (sdk/go/common/resource/sig). */
#define ST_SIG_ASSET "c44067f5952c0a294b673a41bacd8c17"
#define ST_SIG_ARCHIVE "0def7320c3a5731c473e5ecbe6d01bc7"
#define ST_SIG_RESREF "5cf8f73096256a8f31e491e813e4eb8e"
#define ST_SIG_NUMBER "8ad145fe-0d11-4827-bfd7-1abcbf086f5c"
#define ST_SIG_OUTPUT "d0e6a833031e9bbcd3f4e8bde6ca49a4"

/* The features of deployment version 4, by the index the features scan uses: 0-6 are marked
 * by a resource member of that name, 7 by a bytestring in inputs, outputs or
 * replacementTrigger, or inside a plaintext secret (a "plaintext" key marks it as maybe). */
#define ST_FEATURE_BYTESTRING 7
#define ST_FEATURES_ALL 0xffu
static inline unsigned st__feature_key(const char *k, size_t n)
{
	switch (n) {
	case 5: return ST_KEY_IS(k, n, "taint") ? 1u << 3 : 0;
	case 6: return ST_KEY_IS(k, n, "viewOf") ? 1u << 1 : 0;
	case 9:
		return ST_KEY_IS(k, n, "snippetID")   ? 1u << 5
		       : ST_KEY_IS(k, n, "plaintext") ? 1u << ST_FEATURE_BYTESTRING
						      : 0;
	case 11: return ST_KEY_IS(k, n, "replaceWith") ? 1u << 4 : 0;
	case 12: return ST_KEY_IS(k, n, "extensionRef") ? 1u << 6 : 0;
	case 13: return ST_KEY_IS(k, n, "resourceHooks") ? 1u << 2 : 0;
	case 19: return ST_KEY_IS(k, n, "refreshBeforeUpdate") ? 1u << 0 : 0;
	default: return 0;
	}
}
/* How many writes so far put half of an array on a second thread (for the tests). */
unsigned long st__json_write_splits(void);
/* How many resources writes emitted as a lazy state's spans (for the tests). */
unsigned long st__json_write_spans(void);
/* Writes `v` with the kind-driven key order. */
int st__json_write(st_buf *b, const json_t *v, const st_style *style, st_kind kind,
		   const st__wcfg *cfg);

/* `v` written as it stands at `depth` inside a document in `style` (one thread, no keymap, no
 * trailing newline), appended to b. */
int st__json_write_at(st_buf *b, const json_t *v, const st_style *style, st_kind kind,
		      size_t depth);

/* Canonical field order of a struct kind: a NULL-terminated list, or NULL for map kinds. */
const char *const *st_kind_fields(st_kind kind);
/* Which fields of a struct kind are written even when empty (not omitempty). */
int st_kind_field_always(st_kind kind, const char *key);

/* Sets obj[key] = value (stolen) placing a new key at its canonical position for `kind`.
 * -1 when out of memory: obj may then have lost members that had to move behind the new key
 * (jansson cannot insert in the middle without taking them out), so the caller discards it
 * (an edit session's copy, rolled back). */
int st_obj_set_ordered(json_t *obj, st_kind kind, const char *key, json_t *value);

/* Is the value "empty" in Go's omitempty sense? */
int st_json_is_empty(const json_t *v);

/* json_copy (a shallow copy: the members are shared) that fails whole: jansson's (2.14) keeps
 * going when adding a member fails and returns a copy without it, which an allocation failure
 * turned into a resource with members missing. Every json_copy in the library is this one. */
json_t *st__json_copy(json_t *v);
#define json_copy(v) st__json_copy(v)

/* Deployment helpers. */
const char *st_json_str(const json_t *obj, const char *key); /* string member or NULL */
int st_json_bool(const json_t *obj, const char *key);         /* true member -> 1 */

/* ---- Go's decoding (lib/state/decode.c, lib/util/goparse.c) ---- */

/* The Go value a document (or part of one) is decoded into. */
typedef enum st__groot {
	ST__G_VERSIONED,     /* apitype.VersionedCheckpoint (a DIY checkpoint file) */
	ST__G_UNTYPED,       /* apitype.UntypedDeployment (pulumi stack export) */
	ST__G_CHECKPOINT_V1, /* apitype.CheckpointV1 (also a version 0 file) */
	ST__G_CHECKPOINT_V2,
	ST__G_CHECKPOINT_V3, /* versions 3 and 4 */
	ST__G_DEPLOYMENT_V1,
	ST__G_DEPLOYMENT_V2,
	ST__G_DEPLOYMENT_V3,
	ST__G_IMPORT         /* the `pulumi import --file` document */
} st__groot;

/* The struct keys a load respelt (the key as written; the object is referenced). */
/* JSON equality, the one way the library compares values (lib/json/value.c): objects by their
 * keys' bytes whole (jansson's json_equal never finds a key holding "\u0000") in any order,
 * arrays in order, numbers by value (1 and 1.0: both Go's float64), strings by bytes; shared
 * values and members in the same order are compared without look-ups. NULL equals only NULL. */
int st__json_equal(const json_t *a, const json_t *b);
/* json_object_update with keys by their bytes whole (jansson's cuts a key at "\u0000"): each
 * member of `other` set in `obj` (references taken). 0 or -1 (out of memory). */
int st__json_update(json_t *obj, json_t *other);

/*
 * The earlier values of duplicate keys (lib/json/problems.c). The reader keeps, in its problems
 * list (st_problems.st__dropped), each value a later one under the same key replaced when the
 * later is an object, an array or null; the decoder (lib/state/decode.c), which knows the Go
 * types, decodes the later values into the earlier ones as Go's encoding/json does. Each entry
 * holds a reference to its object and value.
 */
typedef struct st__dropped_ent {
	json_t *obj;   /* the object the key is in */
	char *key;
	size_t keylen;
	json_t *val;   /* the earlier value */
	size_t seq;    /* document order */
} st__dropped_ent;

typedef struct st__dropped {
	st__dropped_ent *v;
	size_t n, cap;
	int sorted; /* by object, then document order (st__dropped_seal) */
} st__dropped;

/* Records obj[key]'s earlier value `val` (both borrowed). ST_OK or ST_ENOMEM. */
int st__dropped_add(st_problems *pr, json_t *obj, const char *key, size_t keylen, json_t *val);
/* Moves `from`'s entries after `to`'s. ST_OK or ST_ENOMEM (then `from`'s are dropped). */
int st__dropped_move(st_problems *to, st_problems *from);
void st__dropped_free(st_problems *pr);
/* How many entries pr holds (0: none); st__dropped_truncate frees those after the first n
 * (the entries a parse added to a list that already held n). */
size_t st__dropped_count(const st_problems *pr);
void st__dropped_truncate(st_problems *pr, size_t n);
/* Sorts the entries for lookups; the first entry of obj (NULL: none), its end in *end. */
void st__dropped_seal(st__dropped *d);
const st__dropped_ent *st__dropped_of(const st__dropped *d, const json_t *obj,
				      const st__dropped_ent **end);

/* Keys put back as written (lib/json/keymap.c): the writer's st__wcfg.keys. */
typedef struct st__keymap_ent {
	json_t *obj;
	const char *canon; /* the field's name (static) */
	char *orig;
	size_t orig_len;
} st__keymap_ent;

typedef struct st__keymap {
	st__keymap_ent *v;
	size_t n, cap;
	unsigned char digest[32]; /* of the tree after the load: unchanged means the same */
} st__keymap;

/* Walks `v` as Go decodes it into `root`: struct keys respelt as their fields (noted in km;
 * NULL: nothing is changed), type and text errors added to `out` (rule decode/..., pointers
 * under `base` in the document as written). *first and *first_ptr (new, or NULL) are the error
 * Go's Unmarshal would return. ST_OK or ST_ENOMEM. */
int st__go_decode(json_t *v, st__groot root, const char *base, st__keymap *km,
		  st_problems *out, char **first, char **first_ptr);
/* A deployment given whole (edit): its struct keys respelt, and ST_EFORMAT with Go's message
 * and pointer when Go's decoder would refuse it. */
int st__go_check_deployment(json_t *dep, int version, const char *base, st_error *err);
/* Go's name of the root's type ("apitype.CheckpointV3"). */
const char *st__go_root_name(st__groot root);
/* A null at `pointer` in `doc` (decoded as `root`; an envelope's raw 'deployment' or
 * 'checkpoint' as `version`) that Go's decoder takes for the zero value, storing nothing: the
 * Go type's name there (static), else NULL (not a null, a null Go gives to an interface or
 * refuses, or a place Go's types do not reach). */
const char *st__go_null_zero(const json_t *doc, st__groot root, int version,
			     const char *pointer);
/* The JSON kind of a value as Go's UnmarshalTypeError names it ("object", "number", ...;
 * not for null). */
const char *st__go_json_kind(const json_t *v);
/* Does the key name the field under Go's case folding (lib/util/goparse.c)? */
int st__go_key_is(const char *key, size_t kl, const char *field);
void st__keymap_free(st__keymap *km);
/* The key as written for obj's member `key`, or NULL. */
const char *st__keymap_lookup(const st__keymap *km, const json_t *obj, const char *key,
			      size_t *len);
int st__keymap_has(const st__keymap *km, const json_t *obj);
void st__keymap_digest(const json_t *root, unsigned char out[32]);
/* Sorts the entries for lookups and notes the digest of the tree as loaded. */
void st__keymap_seal(st__keymap *km, const json_t *root);
/* The keymap when the state's tree is as it was loaded, else NULL. */
const st__keymap *st__state_keymap(const st_state *s);

/* A provider reference's URN as Pulumi checks it (validateURN in providers/reference.go):
 * valid, and its type in the module pulumi:providers with a name. ST_EINVAL with Pulumi's
 * message. */
int st__provider_urn_check(const char *urn, st_error *err);

/* Go's parsers: NULL when Go accepts the text, else Go's message (new). */
char *st__go_time_error(const char *s, size_t n);               /* time.Time (RFC 3339) */
char *st__go_semver_error(const char *s, size_t n, int tolerant); /* semver.Parse[Tolerant] */
char *st__go_property_path_error(const char *s, size_t n);      /* resource.ParsePropertyPath */
char *st__go_base64_error(const char *s, size_t n);             /* base64.StdEncoding */
/* base64.StdEncoding's DecodeString into out (room for n / 4 * 3 + 3 bytes): the length
 * decoded, or -1 exactly where Go gives an error (st__go_base64_error says where). */
long long st__go_base64_decode(const char *s, size_t n, unsigned char *out);
/* Go's []rune(s): the runes of s's n bytes into out (room for n), each invalid byte U+FFFD. */
size_t st__go_runes(const char *s, size_t n, unsigned *out);
char *st__go_parse_hex64_error(const char *s, size_t n, unsigned long long *out);
/* strconv.ParseInt(s, 10, 64) accepts it. */
int st__go_int_literal(const char *s, size_t n);
int st__go_config_key_ok(const char *s, size_t n); /* config.ParseKey */
/* strconv.Quote (Go's %q) of s, appended. */
void st__go_quote(st_buf *b, const char *s, size_t n);

/* Internal state layout. */
struct st_state {
	json_t *root;       /* the whole document */
	json_t *container;  /* the object holding the deployment: root (export) or checkpoint */
	st_envelope envelope;
	int version;        /* 0..4 as in the file */
	st_style style;
	st_compression compression;
	char *path;
	st_problems load_problems;
	/* The features resources may use (bits as ST_FEATURE_*): a clear bit means none does, as
	 * far as the library knows (the loader saw no mark of it; the last features scan found
	 * none). An edit session's commit then looks for those features only in the resources it
	 * made or changed. 0 in a fresh st_state means nothing is known (see may_features). */
	unsigned known_absent;
	/* The state said it uses byteString: while it holds a ciphertext, a bytestring may be
	 * inside one, where statetool cannot look, so the feature is kept (Pulumi looks at the
	 * plaintext). */
	int had_bytestring;
	/* Struct keys the load respelt as Pulumi's fields (NULL: none). While the tree is as it
	 * was loaded, the writer puts them back, so an unchanged state keeps its bytes. */
	st__keymap *keymap;
	/* A lazy state's side table (lib/state/lazy.c), or NULL: see "Lazy states" above. */
	st__spans *lazy;
	/* Its source file being hashed ahead for the two-stack journal (st__lazy_prehash), or
	 * NULL. */
	struct st__prehash *prehash;
};

/* The BLAKE2b-256 of a file (fd: duplicated) started on a thread of its own
 * (lib/store/journal.c): the journal then takes it for the old object when that is still the
 * same file, unchanged (device, inode, size, modification and change times the same before
 * and after the hashing and at the journal's turn). NULL when no thread is worth it or
 * possible. st__prehash_free joins and frees (NULL: nothing). st__prehash_used() counts the
 * hashes the journal took (tests). */
typedef struct st__prehash st__prehash;
st__prehash *st__prehash_start(int fd);
void st__prehash_free(st__prehash *p);
unsigned long st__prehash_used(void);
/* A lazy state loaded from a file: that file hashed ahead (s->prehash), once. */
void st__lazy_prehash(st_state *s);


/* A version 4 state's features against Pulumi's (ST_EFEATURE with Pulumi's message): as
 * `pulumi stack import` and a checkpoint load check them (lib/state/features.c). */
int st__state_check_features(st_state *s, st_error *err);

/* Finds envelope, version and deployment; checks versions and features (envelope.c). */
int st__state_bind(st_state *s, st_error *err);

/* SHA-256 hex of a string (libsodium). */
void st_sha256_hex(const void *data, size_t len, char out[65]);

/* The secrets provider as the Pulumi CLI constructs it when it loads the state
 * (lib/check/provider.c): a validation rule, not an integrity one (a library caller may plug in
 * a provider of its own, st_secrets_custom). ST_OK or ST_ENOMEM. */
int st__secrets_provider_check(st_state *s, st_problems *out);

/* The integrity check's first rule alone (the manifest's magic cookie), and the check with
 * flags: without it (for a caller that checks the cookie before fixing it, then the rest on
 * another thread), and on two threads (same problems, same order). */
int st__integrity_magic(const st_state *s, st_problems *out);
#define ST__IC_SKIP_MAGIC 1u
#define ST__IC_TWO_THREADS 2u /* a big state's property walk on a second thread */
int st__integrity_check_ex(st_state *s, st_problems *out, unsigned flags, st_error *err);

/* st_state_apply_features in two steps: which features the state uses (only reads), then
 * the envelope's version and features set accordingly. `untouched` (may be NULL) tells a
 * resource (at index i of the resources) an edit session left as it was: it is searched
 * only for the features not in s->known_absent. */
void st__state_features_scan(const st_state *s, int used[8],
			     int (*untouched)(const json_t *r, size_t i, void *ctx), void *ctx);
int st__state_features_set(st_state *s, const int used[8]);
/* st_state_apply_features looking only for the features not in s->known_absent (for a state
 * whose every resource the caller knows to hold no more marks than s->known_absent allows). */
int st__state_apply_features_known(st_state *s);

/* Known features of deployment v4. */
extern const char *const st_known_features[];

/* Directory and path helpers. */
int st_path_is_symlink(const char *path);
char *st_path_dirname(const char *path);
char *st_path_join(const char *a, const char *b);
/* Removes "." and ".." segments (and empty ones) of a path, in place (RFC 3986 5.2.4:
 * lexically; a ".." above the root stays at the root). Unchanged when out of memory. */
void st_path_remove_dots(char *path);
int st_mkdir_p(const char *path, mode_t mode, st_error *err);

/* Random hex (libsodium), n bytes -> 2n chars + NUL in out. */
void st_random_hex(char *out, size_t nbytes);
/* A UUID v4 string (37 bytes). */
void st_uuid4(char out[37]);
/* RFC 3339 local time with offset, as Go's time.Now() marshals. */
void st_now_rfc3339(char *out, size_t size);

/* A string-keyed hash map. Keys are borrowed (they must outlive the map). */
typedef struct st_strmap_slot {
	const char *key;
	size_t len;
	uint64_t hash; /* 0 = empty */
	size_t a, b;   /* caller's values */
	void *p;       /* caller's pointer */
} st_strmap_slot;

typedef struct st_strmap {
	st_strmap_slot *slots;
	size_t cap, count;
} st_strmap;

void st_strmap_init(st_strmap *m);
void st_strmap_free(st_strmap *m);
st_strmap_slot *st_strmap_get(const st_strmap *m, const char *key);
st_strmap_slot *st_strmap_getn(const st_strmap *m, const char *key, size_t n);
/* Finds or inserts; *created tells which. NULL when out of memory. */
st_strmap_slot *st_strmap_put(st_strmap *m, const char *key, int *created);
st_strmap_slot *st_strmap_putn(st_strmap *m, const char *key, size_t n, int *created);

/* A prefilter for probing a small string set with many strings (references against a few
 * URNs): one bit per hash of the length and the last eight bytes, so that most misses are
 * told without hashing the whole string. A clear bit: not in the set; a set bit: look in
 * the map. */
typedef struct st_prefilter {
	uint64_t bits[1024];
} st_prefilter;

static inline unsigned st__prefilter_bit(const char *s, size_t n)
{
	uint64_t t = 0;
	memcpy(&t, n >= 8 ? s + n - 8 : s, n >= 8 ? 8 : n);
	t = (t ^ ((uint64_t)n * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
	return (unsigned)(t >> 48);
}

static inline void st_prefilter_add(st_prefilter *f, const char *s, size_t n)
{
	unsigned b = st__prefilter_bit(s, n);
	f->bits[b >> 6] |= 1ULL << (b & 63);
}

static inline int st_prefilter_maybe(const st_prefilter *f, const char *s, size_t n)
{
	unsigned b = st__prefilter_bit(s, n);
	return (f->bits[b >> 6] >> (b & 63)) & 1;
}

/* Adds a key to a map and its prefilter (the key is borrowed). */
static inline st_strmap_slot *st_strmap_put_f(st_strmap *m, st_prefilter *f, const char *key,
					      int *created)
{
	size_t n = strlen(key);
	st_strmap_slot *sl = st_strmap_putn(m, key, n, created);
	if (sl)
		st_prefilter_add(f, key, n);
	return sl;
}

/* ---- Pulumi's references between resources (lib/state/refs.c) ----
 * The one walker of the reference fields. Which fields: a mask of kinds. The walk visits
 * non-empty strings only, in a fixed order: parent, dependencies, propertyDependencies (each
 * property's list; the properties as held, or sorted with ST_REF_SORTED), deletedWith,
 * replaceWith, provider. */
typedef enum st_ref_kind {
	ST_REF_PARENT = 1u << 0,              /* "parent": a URN */
	ST_REF_DEPENDENCY = 1u << 1,          /* "dependencies": URNs */
	ST_REF_PROPERTY_DEPENDENCY = 1u << 2, /* "propertyDependencies": property -> URNs */
	ST_REF_DELETED_WITH = 1u << 3,        /* "deletedWith": a URN */
	ST_REF_REPLACE_WITH = 1u << 4,        /* "replaceWith": URNs */
	ST_REF_PROVIDER = 1u << 5             /* "provider": a provider reference URN::ID */
} st_ref_kind;
#define ST_REF_URNS 0x1fu /* every field that holds URNs (all but the provider) */
#define ST_REF_ALL 0x3fu
#define ST_REF_SORTED 0x100u /* propertyDependencies' properties in sorted order */

/* One reference, as the walker gives it to its callback. */
typedef struct st_ref {
	st_ref_kind kind;
	const char *field; /* the resource's member: "parent", "dependencies", ... */
	const char *key;   /* propertyDependencies: the property; else NULL */
	long index;        /* the position in a list, or -1 */
	const char *value; /* the reference (borrowed; NUL-terminated) */
	size_t len;
	json_t *resource_, *holder_; /* (the walker's: where it sits) */
} st_ref;

/* What a callback returns: go on, stop the walk, or remove this reference (an emptied
 * dependencies or replaceWith list is removed too: Go omits an empty list), or a negative
 * ST_E* code, which ends the walk and is returned. */
#define ST_REF_NEXT 0
#define ST_REF_STOP 1
#define ST_REF_REMOVE 2
typedef int (*st_ref_fn)(void *ctx, st_ref *ref);

/* Walks the references of resource r (an object; anything else has none) that `what` asks
 * for (kinds, | ST_REF_SORTED). Returns 0 when walked to the end, 1 when a callback stopped
 * it, or a negative ST_E* code. A callback that changes or removes references must be given
 * an object it may change (the session's own, or an st__ref_copy). */
int st__ref_foreach(json_t *r, unsigned what, st_ref_fn fn, void *ctx);
/* st__ref_foreach over fields the caller already found in r (borrowed): found[k] is r's
 * member named st__ref_field_name(1u << k), or NULL when r has none (the integrity check
 * finds them in its own pass over the resource's members). */
#define ST_REF_NFIELDS 6
int st__ref_foreach_found(json_t *r, json_t *const found[ST_REF_NFIELDS], unsigned what,
			  st_ref_fn fn, void *ctx);
/* In a callback: replaces the reference by `value` (copied). ST_OK or ST_ENOMEM. */
int st__ref_set(st_ref *ref, const char *value);
/* The member name of a kind ("parent", ...), NULL for none. */
const char *st__ref_field_name(st_ref_kind kind);
/* A copy of r (new) whose reference fields may be changed: the object and its reference
 * lists are new; everything else (inputs, outputs, ...) is shared with r. NULL: no memory. */
json_t *st__ref_copy(json_t *r);

/* Does resource r refer (by any field holding URNs) to a URN in `urns`, or (refs not NULL)
 * by its provider to a reference in `refs`? The prefilters (may be NULL) are the maps'. */
int st__refers(const json_t *r, const st_strmap *urns, const st_prefilter *uf,
	       const st_strmap *refs, const st_prefilter *rf);

/* Rewrites every reference of r (which the caller may change) that `urns` (URN fields) or
 * `refs` (may be NULL: the provider) holds to the string in its slot's p. *count (may be NULL)
 * is increased by how many. ST_OK or ST_ENOMEM (r then partly rewritten). */
int st__ref_rewrite(json_t *r, const st_strmap *urns, const st_strmap *refs, size_t *count);

/* ---- stacks (lib/state/stack.c) ---- */
/* Is r a root stack resource (type pulumi:pulumi:Stack, no parent)? */
int st__is_root_stack(const json_t *r);
/* A new root stack resource for (stack, project), as Pulumi makes one (new; NULL: no memory). */
json_t *st__root_stack_new(const char *stack, const char *project);

/* Pulumi's provider reference "URN::ID" (new), the ID ST_UNKNOWN_ID when NULL or empty. */
char *st__provider_ref(const char *urn, const char *id);
/* The reference to resource r when it is a provider (by its type), else NULL (new). */
char *st__provider_ref_of(const json_t *r);
/* The length of the URN part of a provider reference (before the last "::"), 0 if none. */
size_t st__provider_ref_urn_len(const char *ref, size_t len);

/* The integrity errors of a state an edit made from a state without integrity errors, looked
 * for only where they can be (lib/ops/commit.c check_since_valid; the proof: doc/DESIGN.md,
 * "The check after an edit of a valid state"): the resources marked in `full` (per index: the
 * objects the edit made), the resources whose references' targets (parent, dependencies,
 * property dependencies, deletedWith, replaceWith, the provider's URN) are in `touched` (with
 * its prefilter: the URNs of removed objects that no object made replaces), and the
 * rest of the deployment (the cookie, pending operations, snippets, plugins) in full. The
 * problems found go to `out` (the warnings of what is skipped are not looked for). *whole set
 * and nothing checked: the shortcut does not apply (a URN occurs twice), the caller runs the
 * full check. ST_OK or ST_ENOMEM. Counted by st__integrity_touched_runs() (tests). */
int st__integrity_check_touched(st_state *s, const char *full, const st_strmap *touched,
				const st_prefilter *tf, st_problems *out, int *whole,
				st_error *err);
unsigned long st__integrity_touched_runs(void);
/* Tests: 0 turns the shortcut off (every commit runs the full check), 1 back on. */
void st__integrity_touched_enable(int on);
int st__integrity_touched_enabled(void);
/* How often a commit's check took a move's hint (st__edit_hint_refs, lib/ops/session.h)
 * instead of scanning for the resources that refer to what left (tests). */
unsigned long st__edit_hint_used(void);

/* Embedded copies of the files in schemas/ (generated at build time). */
typedef struct st_embedded_schema {
	const char *name;
	const unsigned char *data;
	size_t len;
} st_embedded_schema;
extern const st_embedded_schema st_embedded_schemas[];

/* JSON Pointer prefix of the deployment in a state ("/deployment", "/checkpoint/latest",
 * "/latest"). */
const char *st__deployment_pointer(const st_state *s);
/* Does the state's checkpoint name another stack than `place` (PROJECT/STACK or STACK), as
 * place/stack-mismatch (st_check_place) reports it? A checkpoint naming it in any of its forms
 * (organization/P/S, P/S, S), or naming nothing it can parse, does not. */
int st__place_misnamed(const st_state *s, const char *place);

/* PBKDF2-HMAC-SHA256, one 32-byte block (exposed for the test vectors). */
void st__pbkdf2_sha256(const unsigned char *pw, size_t pwlen, const unsigned char *salt,
		       size_t saltlen, unsigned iterations, unsigned char out[32]);

/* The secrets of one resource object (its inputs and outputs) held as ciphertext, and those
 * held as plaintext. */
size_t st__secrets_count_ciphertexts(json_t *resource);
size_t st__secrets_count_plaintexts(json_t *resource);

/* Decrypts every ciphertext secret of one resource object (its inputs and outputs) with `s`;
 * each that does not decrypt (or not to JSON) is given to bad(ctx, "inputs" or "outputs", its
 * JSON Pointer from the object, why), whose non-zero result ends the walk and is returned.
 * ST_ENOMEM too. */
#define ST__NOT_JSON "the secret decrypts, but not to JSON"
typedef int (*st__secret_bad_fn)(void *ctx, const char *field, const char *pointer,
				 const char *why);
int st__secrets_check_decrypt(json_t *r, st_secrets *s, st__secret_bad_fn bad, void *ctx);

/* Encrypts every plaintext secret of one resource object (the caller may change it) under
 * `to`; ciphertexts stay. *count (may be NULL) is incremented per secret. */
int st__secrets_encrypt_resource(json_t *resource, st_secrets *to, size_t *count,
				 st_error *err);
/* A rekeyed stack configuration's check (lib/secrets/config.c): text[0..len) read as YAML holds
 * the salt `salt` (NULL: "") and, in order, exactly the `n` secure values `vals`, and no other
 * provider's key. ST_OK, or ST_EUNSUPPORTED saying what differs. */
int st__config_readback(const char *text, size_t len, const char *salt,
			const char *const *vals, size_t n, st_error *err);

/* A stack configuration's values as Pulumi gives them to a default provider
 * (lib/secrets/config_values.c). _load reads text[0..len) (borrowed) as Pulumi loads it, keys
 * without a namespace taking `project`'s, and refuses what Pulumi refuses or statetool does
 * not read (ESC environments, tags, merge keys), with `name` and the line in err; *out is new
 * (_free). _inputs: the values of package `pkg` as a default provider's inputs (*out new: each
 * a string, a plaintext secret when it holds a secure value, opened with `key`); a secure
 * value with `key` NULL is ST_EPASSPHRASE with *needs_key set, one under another secrets
 * provider than passphrase ST_EUNSUPPORTED. */
typedef struct st__cfgvals st__cfgvals;
int st__config_values_load(const char *text, size_t len, const char *name, const char *project,
			   st__cfgvals **out, st_error *err);
int st__config_values_inputs(st__cfgvals *v, const char *pkg, st_secrets *key, json_t **out,
			     int *needs_key, st_error *err);
void st__config_values_free(st__cfgvals *v);

/* Re-encrypts every secret of one resource object (a copy the caller owns) from one provider
 * to another. *count (may be NULL) is incremented per secret. */
int st__secrets_reencrypt(json_t *resource, st_secrets *from, st_secrets *to, size_t *count,
			  st_error *err);

int st__gzip_bytes(const void *data, size_t len, char **out, size_t *outlen, st_error *err);


#endif
