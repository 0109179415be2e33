/*
 * Lazy states, shared by the library and the unit tests (included by lib/internal.h, never
 * installed): the lazy scan's records, the side table of their source text (lib/json/spans.c)
 * and the lazy state's contract (lib/state/lazy.c; doc/DESIGN.md "Lazy states").
 */
#ifndef ST_LAZY_H
#define ST_LAZY_H

/* ---- lazy states (lib/json/skim.c scans, lib/json/spans.c keeps the side table, lib/state/lazy.c
 * loads and inflates) ----
 * A resource the scanner proved canonical: `res` is its skeleton (the resource object with
 * every member but inputs and outputs) and [off, off+len) its full text in the source. */
typedef struct st__lazy_rec {
	json_t *res;
	size_t off, len;
} st__lazy_rec;

/* st__json_parse_ex that skims: each resource of the deployment whose text is what the writer
 * writes for it (in the style detected) becomes a skeleton and a record in *recs (new array,
 * *nrecs of them, document order; NULL/0: none). Whatever cannot be skimmed is parsed as
 * usual, and when the result cannot be used lazily at all the text is parsed again in full
 * (then *recs is NULL): the tree, style, problems, features and errors are always those of
 * st__json_parse_ex, but for the skeletons' missing inputs and outputs. */
int st__json_parse_lazy(json_t **out, const char *buf, size_t len, const char *name,
			const st_parse_limits *limits, st_style *style_out, st_problems *problems,
			int mapped, int threads, unsigned *features, st__lazy_rec **recs,
			size_t *nrecs, st_error *err);

/* The records' source text kept with them (lib/json/spans.c): what the writer copies a
 * registered value from, and what lib/state/lazy.c inflates a skeleton from. */
typedef struct st__spans st__spans;
/* The source of a table: text is `map` (a private mapping of len bytes) or `owned` (malloc'd);
 * fd is the mapped file, kept open, or -1; st is fd's stat taken before the parse; max_depth
 * the limit to parse a span with. */
typedef struct st__spans_src {
	const char *text;
	size_t len;
	void *map;
	char *owned;
	int fd;
	struct stat st;
	size_t max_depth;
} st__spans_src;
/* A table of recs (n of them, document order) over src, the values' text in `style` at
 * `depth`. Takes src's map, owned, fd and recs on success; NULL (nothing taken) when out of
 * memory. */
st__spans *st__spans_new(const st__spans_src *src, st_style style, size_t depth,
			 st__lazy_rec *recs, size_t n);
void st__spans_free(st__spans *sp); /* unmaps, closes, frees (NULL: nothing) */
/* 1 and v's span (borrowed from the text, not NUL-terminated) when v is registered, else 0. */
int st__spans_span(const st__spans *sp, const json_t *v, const char **p, size_t *len);
/* v's span parsed in full into *out (new; NULL when v is not registered). */
int st__spans_parse(const st__spans *sp, const json_t *v, json_t **out, st_error *err);
/* v no longer registered (it was replaced by its full value). */
void st__spans_drop(st__spans *sp, const json_t *v);
size_t st__spans_count(const st__spans *sp); /* registered values (NULL: 0) */
/* 1 with the text's style and the registered values' depth in it; 0 for NULL. */
int st__spans_where(const st__spans *sp, st_style *style, size_t *depth);
/* A write (one thread, in document order) copied the text up to p: a mapped file's pages
 * before it are given back (read again from the file if needed), so a write does not hold the
 * whole file in memory. */
void st__spans_passed(st__spans *sp, const char *p);
/* Where the text's bytes at p are in the file they were mapped from: 1 with *fd (borrowed) and
 * *off, 0 when the text is not a file mapping. */
int st__spans_source(const st__spans *sp, const char *p, int *fd, off_t *off);
/* A text mapped from a file: the file's bytes (borrowed), *len and, if fd, *fd; else NULL. */
const char *st__spans_file(const st__spans *sp, size_t *len, int *fd);
/* 0 when the mapped file kept the size and modification time it had before the parse (always
 * for a text not mapped from a file), 1 when it changed, -1 (errno) when it cannot be stat'ed. */
int st__spans_file_changed(const st__spans *sp);
/*
 * Lazy states (lib/state/lazy.c; doc/DESIGN.md "Lazy states"). A lazy state is an ordinary
 * st_state whose resources array holds, for most resources, a *skeleton*: the resource object
 * with every member but `inputs` and `outputs` (parsed and decoded as usual), registered in the
 * state's side table with the span [off, off+len) of the full resource in the state's source
 * text, which the state keeps (its file mapping or read buffer; no other copy).
 *  - A registered span is a promise: its bytes are exactly what the writer (st__json_write,
 *    no keymap) writes for the full resource at its depth in the state's style (s->style as
 *    loaded). The scanner checked it (lib/json/skim.c); a resource it could not prove (a
 *    non-canonical byte, a warning) is loaded in full and not registered.
 *  - A skeleton's inputs/outputs are absent, or, when they hold special values (objects with
 *    the signature key: secrets, assets, archives, references, outputs), *pruned*: those
 *    objects whole at their places, the members leading to them, other array elements null,
 *    nothing else. So the schemas and integrity rules, which look at nothing else in property
 *    values, find every problem at its pointer; anything else that reads or changes inputs or
 *    outputs must inflate first.
 *  - Registration is by the skeleton's address. Replacing or removing the skeleton in the
 *    array does not unregister it by itself: st__lazy_inflate does (any other change of a
 *    skeleton must inflate it first). A skeleton kept elsewhere (a snapshot) after inflation
 *    is no longer registered.
 *  - The style a span promises is the loaded one: if s->style changes, spans are void
 *    (inflate all first).
 */
/* st_state_load_buffer of a file's text: data after the document read as Pulumi reads the
 * envelope (st_state_load_file), not refused. */
int st__state_load_file_text(st_state **out, const void *buf, size_t len, const char *name,
			     const st_load_opts *opts, st_error *err);
/* Loads a state as st_state_load_file does (same results, messages and errors for every
 * input), lazily where it can: a file is mapped (else read, gzip inflated) and the text kept
 * in the state. Falls back to the full load by itself (then st__lazy_count is 0): never an
 * error of its own. *out is new. */
int st__state_load_lazy(st_state **out, const char *path, const st_load_opts *opts,
			st_error *err);
/* The same from a text in memory: buf (malloc'd) is stolen, even on failure. Data after the
 * document is an error, as in st_state_load_buffer (a backend's object). */
int st__state_load_lazy_text(st_state **out, char *buf, size_t len, const char *name,
			     const st_load_opts *opts, st_error *err);
/* 1 and the span of `res` (borrowed from the state's text, not NUL-terminated) when `res` is
 * a registered skeleton of s, else 0. */
int st__lazy_span(const st_state *s, const json_t *res, const char **p, size_t *len);
/* The resource at `index` of s's resources, when a registered skeleton: its span parsed in full
 * and put in its place (a new object: the skeleton's members, as decoded, with the inputs and
 * outputs, in the text's order), the registration dropped. Nothing to do otherwise. ST_OK or
 * ST_ENOMEM. */
int st__lazy_inflate(st_state *s, size_t index, st_error *err);
/* Every registered skeleton of s inflated: s is then an ordinary full state. */
int st__lazy_inflate_all(st_state *s, st_error *err);
/* How many skeletons s has registered (0: not lazy). */
size_t st__lazy_count(const st_state *s);
/* 1 when s has a side table, with the style of its text and the depth of its resources in it
 * (3 in an export, 4 in a checkpoint): where a span is the writer's output. s->style and the
 * envelope may change after the load (st_state_set_envelope changes both): the writer then
 * parses the spans and writes them in the new style and place. */
int st__lazy_where(const st_state *s, st_style *style, size_t *depth);
/* A write (one thread, in document order) copied s's text up to p: a mapped file's pages
 * before it are given back (read again from the file if needed), so a write of a lazy state
 * does not hold the whole file in memory. The table is changed though s is const. */
void st__lazy_passed(const st_state *s, const char *p);
/* Where the source bytes at p (inside the lazy state's text) are in the file they were mapped
 * from: 1 with *fd (borrowed: the state's) and *off, 0 when the text is not a file mapping. */
int st__lazy_source(const st_state *s, const char *p, int *fd, off_t *off);
/* A lazy state mapped from a file: its text (borrowed), the file's bytes from offset 0, and
 * *len; NULL for any other state. */
const char *st__lazy_file_text(const st_state *s, size_t *len);
/* ST_OK when the file a lazy state was mapped from has kept the size and modification time it
 * had before the load (always for a state not mapped from a file), else ST_ECONFLICT: another
 * program rewrote it in place, so the text may no longer be the bytes that were proved. A save
 * checks before it starts (a truncated mapping would end the process with SIGBUS) and after
 * its last byte, before anything is renamed into place. */
int st__lazy_unchanged(const st_state *s, st_error *err);
/* That ST_ECONFLICT (the state's file rewritten in place while in use), set in err. */
int st__lazy_rewritten(const st_state *s, st_error *err);

#endif
