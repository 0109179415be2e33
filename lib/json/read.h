/*
 * The JSON reader's parser (lib/json/read.c) as its two-thread split (lib/json/read_split.c)
 * sees it.
 */
#ifndef ST_JSON_READ_H
#define ST_JSON_READ_H

#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef struct frame {
	const char *key; /* current key in an object: in the input, or `owned` */
	size_t keylen;
	char *owned;     /* a decoded copy when the key had escapes (NULL otherwise) */
	size_t index; /* current index in an array */
	int is_array;
} frame;

struct split;

/* The lazy load's scanner (lib/json/skim.c): what one thread's parse skimmed. */
typedef struct skim {
	int on;         /* still skimming (0 once too many resources in a row were not proved) */
	size_t second;  /* on the split's second thread: the depth of its top array's elements */
	int abort;      /* the tree cannot be used lazily: the caller parses again in full */
	int esc_html;   /* a skimmed resource has \u003c, \u003e or \u0026 (needs escape_html) */
	int long_bf;    /* a skipped value has \u0008 or \u000c (canonical only if short_bf is off) */
	size_t misses;  /* resources in a row that were not proved canonical */
	int sig;        /* the map just checked holds the signature key */
	st_style style; /* the style the checks assume (see skim.c) */
	st__lazy_rec *v; /* the skimmed resources, in document order */
	size_t n, cap;
	st_buf w;       /* scratch: a member as the writer writes it */
} skim;

typedef struct parser {
	const unsigned char *start;
	const unsigned char *p;
	const unsigned char *end;
	size_t depth;
	size_t max_depth;
	size_t max_string;
	const char *name;
	st_error *err;
	st_problems *problems;
	int failed;
	int code; /* the error code, kept even when the caller passed no error record */
	/* style evidence */
	int saw_html_escape;
	int saw_long_bf;
	int saw_short_bf;
	unsigned features; /* which features' marks were seen (st__feature_key; bytestring) */
	size_t lenient; /* how many leniency warnings were recorded (capped) */
	int bignum_said; /* a number-range warning was recorded: always the first, past the cap
			  * (the decoder looks for the placeholders only when there is one) */
	/* path for pointers */
	frame *frames;
	size_t nframes;
	size_t frames_cap;
	/* scratch for strings that need unescaping */
	char *sbuf;
	size_t sbuf_cap;
	char decimal_point;
	/* a private file mapping: pages behind the cursor are given back as parsing goes, so
	 * the file's bytes and the tree are not both resident (they fault back in if needed) */
	int release;
	const unsigned char *released;
	/* the second part of a big document, parsed on another thread (NULL: none) */
	struct split *sp;
	/* the lazy load's scanner (NULL: a full parse) */
	skim *sk;
	/* Duplicate keys: `keep` (the second parse only) keeps the earlier value a later object,
	 * array or null replaces (st__dropped_add); without it such a replacement sets `replaced`
	 * and the document is parsed again with `keep` (read.c: duplicates are rare, so the common
	 * case costs no look-up). */
	int keep;
	int replaced;
	/* The first top-level "version" (any case) whose number Go's int cannot take ("3.0"):
	 * the literal is needed for Go's message, and the tree keeps only the double. */
	char vlit[48];
	char *vkey;
	/* st_parse_limits.first_value (0 for a version 1 struct) */
	int first;
} parser;

#define RELEASE_CHUNK (8u << 20)

#define MAX_LENIENCY_REPORTS 100

typedef struct split {
	_Atomic size_t pos; /* 0: not known yet; SPLIT_NONE: no split; else the comma's offset */
	atomic_int cancel;
	size_t mid;
	int wait; /* st__json_split_test: wait for the scan rather than give up (tests) */
	int joined;
	st__two thread;
	parser cfg; /* the first thread's settings, copied before it starts */
	/* the second thread's results, read after joining it */
	json_t *arr;
	const unsigned char *end; /* just past the array's ']' */
	int ok, code;
	st_error err;
	st_problems problems;
	int saw_html_escape, saw_long_bf, saw_short_bf;
	unsigned features;
	int replaced;
	skim sk; /* the second thread's scanner, when the first has one */
} split;

static inline void skip_ws(parser *ps)
{
	const unsigned char *p = ps->p, *e = ps->end;
	while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	ps->p = p;
}

#define ST__ONES 0x0101010101010101ull
#define ST__HIGHS 0x8080808080808080ull

/* Does any of the 8 bytes at p need a closer look inside a string: '"', '\\', < 0x20 or
 * >= 0x80? (A zero-byte test per class; exact about whether one exists.) */
static inline int st__json_special8(const unsigned char *p)
{
	uint64_t w, q, b;
	memcpy(&w, p, 8);
	q = w ^ (ST__ONES * '"');
	b = w ^ (ST__ONES * '\\');
	return ((((q - ST__ONES) & ~q) | ((b - ST__ONES) & ~b) | ((w - ST__ONES * 0x20) & ~w) | w) &
		ST__HIGHS) != 0;
}

/* Past the plain bytes of a string at p: the first byte at or after p that needs a closer
 * look (as st__json_special8), or a place before it the caller goes on from byte by byte (a
 * block that holds one, or the last < 8 bytes before e). Never past such a byte. Sixteen
 * bytes at a time with SSE2 (baseline on x86_64), else eight. */
static inline const unsigned char *st__json_skip_plain(const unsigned char *p,
						      const unsigned char *e)
{
#ifdef __SSE2__
	/* a signed byte below 0x20 is a control byte or one >= 0x80 */
	const __m128i q = _mm_set1_epi8('"'), b = _mm_set1_epi8('\\'), c = _mm_set1_epi8(0x20);
	while (e - p >= 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
		__m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, b)),
					   _mm_cmplt_epi8(x, c));
		int m = _mm_movemask_epi8(hit);
		if (m)
			return p + __builtin_ctz((unsigned)m);
		p += 16;
	}
#endif
	while (e - p >= 8 && !st__json_special8(p))
		p += 8;
	return p;
}

/* Length of a valid UTF-8 sequence at p (1..4), or 0 if invalid. p[0] >= 0x80. */
size_t st__json_utf8_len(const unsigned char *p, const unsigned char *e);

/* st__json_parse_ex with the scanner `sk` (NULL: a full parse; see lib/json/skim.c). */
int st__json_parse_sk(json_t **out, const char *buf, size_t len, const char *name,
		      const st_parse_limits *limits, st_style *style_out, st_problems *problems,
		      int mapped, int threads, unsigned *features, skim *sk, st_error *err);


/* The reader's edges (lib/json/read_end.c). Go's quoteChar of an offending byte (in buf or a
 * constant); the line (1-based) of `at` and the start of that line; the json.Decoder's error
 * at the end of the input ("EOF" after white space only, else "unexpected EOF"); the warning
 * json/trailing-data for data after the value at ps->p (ST_OK, or ST_ENOMEM with the parse
 * failed). */
const char *st__json_quote_char(int c, char buf[16]);
int st__json_line_of(const parser *ps, const unsigned char *at, const unsigned char **bol);
const char *st__json_decoder_eof(const parser *ps);
int st__json_trailing_warning(parser *ps);

/* The parser's steps the split uses (lib/json/read.c). */
void st__json_release_pages(parser *ps);
void st__json_fail_at(parser *ps, const unsigned char *at, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void st__json_fail_char(parser *ps, const char *context);
int st__json_push_frame(parser *ps, int is_array);
json_t *st__json_parse_value(parser *ps);

/* The scanner (lib/json/skim.c). st__skim_slot: is the object at ps->p (its '{' counted in
 * ps->depth) a resource of the deployment? st__skim_resource: the resource as a skeleton
 * (every member but inputs and outputs, registered in ps->sk) when its text is proved to be
 * what the writer writes; else NULL with the cursor, problems and frames as before (failed
 * set only by a parse error in a member that was parsed, the error the full parse gives). */
int st__skim_slot(const parser *ps);
/* Are the top frames the deployment's resources array? */
int st__skim_resources_array(const parser *ps);
json_t *st__skim_resource(parser *ps);
void st__skim_init(skim *sk);
void st__skim_free(skim *sk);
/* Appends the second thread's records to the first's (the second's array was the resources
 * array when `ok`, else the lazy result is abandoned). */
void st__skim_merge(skim *to, skim *from, int ok);

/* The split (lib/json/read_split.c). split_start starts the second thread when the document is
 * big enough and threads may be used; split_join is called by the first thread after each
 * element of an array (0 go on, 1 the array is complete, -1 the second part failed);
 * split_end cancels and joins the second thread. */
void st__json_split_start(parser *ps, split *sp, int threads);
int st__json_split_join(parser *ps, json_t *arr, size_t idx);
void st__json_split_end(parser *ps);

#endif
