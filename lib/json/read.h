/*
 * The JSON reader's parser (lib/json/read.c) as its two-thread split (lib/json/read_split.c)
 * sees it.
 */
#ifndef ST_JSON_READ_H
#define ST_JSON_READ_H

#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct frame {
	const char *key; /* current key in an object: in the input, or `owned` */
	size_t keylen;
	char *owned;     /* a decoded copy when the key had escapes (NULL otherwise) */
	size_t index; /* current index in an array */
	int is_array;
} frame;

struct split;

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
	/* The first top-level "version" (any case) whose number Go's int cannot take ("3.0"):
	 * the literal is needed for Go's message, and the tree keeps only the double. */
	char vlit[48];
	char *vkey;
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
} split;

static inline void skip_ws(parser *ps)
{
	const unsigned char *p = ps->p, *e = ps->end;
	while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	ps->p = p;
}

/* The parser's steps the split uses (lib/json/read.c). */
void st__json_release_pages(parser *ps);
void st__json_fail_at(parser *ps, const unsigned char *at, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void st__json_fail_char(parser *ps, const char *context);
int st__json_push_frame(parser *ps, int is_array);
json_t *st__json_parse_value(parser *ps);

/* The split (lib/json/read_split.c). split_start starts the second thread when the document is
 * big enough and threads may be used; split_join is called by the first thread after each
 * element of an array (0 go on, 1 the array is complete, -1 the second part failed);
 * split_end cancels and joins the second thread. */
void st__json_split_start(parser *ps, split *sp, int threads);
int st__json_split_join(parser *ps, json_t *arr, size_t idx);
void st__json_split_end(parser *ps);

#endif
