/*
 * The JSON reader on two threads (lib/json/read.c is the parser).
 */
#include "json/read.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/*
 * Parsing on two threads. A big document is mostly one long array (a state's resources). A
 * second thread scans the text from the start, tracking only strings, escapes and nesting,
 * until the middle; there it picks the outermost array still open and the next comma
 * between two of its elements. It parses the elements after that comma, to the array's ']',
 * while the first thread parses the document from the start. When the first thread reaches the
 * comma it takes the second thread's elements and carries on after the ']'.
 *
 * The result is the sequential one in every case: the prefix the first thread parsed is valid
 * JSON text up to the comma, so the scan read its structure as the parser does; the second
 * part's first error is the document's first error when the prefix had none; its warnings are
 * added in document order with their pointers rebased. Anything unexpected (the first thread
 * passes the middle before the scan has finished, the array closes, the nesting limit) means
 * one thread parses everything, as without this.
 */
#define SPLIT_NONE SIZE_MAX
#define SPLIT_STACK (16u << 20)

static atomic_ulong splits_done;

unsigned long st__json_splits(void)
{
	return atomic_load(&splits_done);
}


/* The next quote or backslash at or after p (e if none). */
static const unsigned char *next_in_string(const unsigned char *p, const unsigned char *e)
{
#ifdef __SSE2__
	const __m128i q = _mm_set1_epi8('"'), b = _mm_set1_epi8('\\');
	while (e - p >= 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
		int m = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, b)));
		if (m)
			return p + __builtin_ctz((unsigned)m);
		p += 16;
	}
#endif
	while (p < e && *p != '"' && *p != '\\')
		p++;
	return p;
}

/* The next byte that matters to the structure outside strings: " , [ ] { } (e if none). */
static const unsigned char *next_structural(const unsigned char *p, const unsigned char *e)
{
#ifdef __SSE2__
	/* '[' and ']' are '{' and '}' without the 0x20 bit */
	const __m128i q = _mm_set1_epi8('"'), c = _mm_set1_epi8(','), o = _mm_set1_epi8('{');
	const __m128i k = _mm_set1_epi8('}'), bit = _mm_set1_epi8(0x20);
	while (e - p >= 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
		__m128i y = _mm_or_si128(x, bit);
		__m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, c)),
					   _mm_or_si128(_mm_cmpeq_epi8(y, o), _mm_cmpeq_epi8(y, k)));
		int m = _mm_movemask_epi8(hit);
		if (m)
			return p + __builtin_ctz((unsigned)m);
		p += 16;
	}
#endif
	while (p < e && *p != '"' && *p != ',' && (*p | 0x20) != '{' && (*p | 0x20) != '}')
		p++;
	return p;
}

/* The offset of the comma at which the second part starts, or SPLIT_NONE. *depth: the
 * containers open there. Pages already scanned are given back on a private mapping. */
static size_t split_scan(split *sp, size_t *depth_out)
{
	const parser *cfg = &sp->cfg;
	const unsigned char *s = cfg->start, *p = s, *e = cfg->end, *m = s + sp->mid;
	const unsigned char *released = s;
	unsigned char *types = NULL;
	size_t cap = 0, depth = 0, target = 0, found = SPLIT_NONE;

	while ((p = next_structural(p, e)) < e) {
		unsigned c = *p;
		if (c == '"') {
			p++;
			for (;;) {
				p = next_in_string(p, e);
				if (p >= e)
					goto out;
				if (*p == '"')
					break;
				p += 2; /* a backslash and the byte it escapes */
			}
			p++;
			continue;
		}
		switch (c) {
		case '{':
		case '[':
			if (depth >= cfg->max_depth)
				goto out;
			if (depth == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				unsigned char *t = realloc(types, ncap);
				if (!t)
					goto out;
				types = t;
				cap = ncap;
			}
			types[depth++] = c == '[';
			break;
		case '}':
		case ']':
			if (!depth || (target && depth == target))
				goto out; /* the array closed: no comma after the middle */
			depth--;
			break;
		case ',':
			if (target && depth == target) {
				found = (size_t)(p - s);
				*depth_out = depth;
				goto out;
			}
			break;
		}
		p++;
		if (!target && p >= m) {
			for (size_t d = 0; d < depth && !target; d++)
				if (types[d])
					target = d + 1;
			if (!target)
				goto out;
		}
		if (cfg->release && (size_t)(p - released) >= RELEASE_CHUNK) {
			uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
			uintptr_t to = (uintptr_t)p & ~(page - 1);
			if (to > (uintptr_t)released &&
			    madvise((void *)released, to - (uintptr_t)released, MADV_DONTNEED) == 0)
				released = (const unsigned char *)to;
		}
	}
out:
	free(types);
	return found;
}

/* The elements after the comma at `pos`, up to the array's closing bracket. */
static void split_parse(split *sp, size_t pos, size_t depth)
{
	parser b = sp->cfg;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	json_t *arr = json_array();
	size_t idx = 0;

	b.p = b.start + pos + 1;
	b.err = &sp->err;
	b.problems = &sp->problems;
	b.depth = depth;
	b.frames = NULL;
	b.nframes = b.frames_cap = 0;
	b.sbuf = NULL;
	b.sbuf_cap = 0;
	b.lenient = 0;
	b.sp = NULL;
	if (b.sk) {
		/* the scanner too, with its own records (merged in order when joined) */
		st__skim_init(&sp->sk);
		sp->sk.style = b.sk->style;
		sp->sk.second = depth + 1;
		b.sk = &sp->sk;
	}
	b.released = (const unsigned char *)(((uintptr_t)b.p + page - 1) & ~(page - 1));
	if (!arr || st__json_push_frame(&b, 1) < 0) {
		st__json_fail_at(&b, b.p, ST_ENOMEM, "out of memory");
		goto done;
	}
	for (;;) {
		json_t *val;
		b.frames[0].index = idx;
		skip_ws(&b);
		val = st__json_parse_value(&b);
		if (!val)
			goto done;
		if (json_array_append_new(arr, val) < 0) {
			st__json_fail_at(&b, b.p, ST_ENOMEM, "out of memory");
			goto done;
		}
		idx++;
		if (atomic_load_explicit(&sp->cancel, memory_order_relaxed))
			goto done;
		if (b.release && b.p > b.released && (size_t)(b.p - b.released) >= RELEASE_CHUNK)
			st__json_release_pages(&b);
		skip_ws(&b);
		if (b.p < b.end && *b.p == ',') {
			b.p++;
			continue;
		}
		if (b.p < b.end && *b.p == ']') {
			b.p++;
			sp->ok = 1;
			break;
		}
		st__json_fail_char(&b, "after array element");
		goto done;
	}
done:
	if (sp->ok) {
		sp->arr = arr;
		sp->end = b.p;
	} else {
		json_decref(arr);
		sp->code = b.code ? b.code : ST_EPARSE;
	}
	sp->saw_html_escape = b.saw_html_escape;
	sp->saw_long_bf = b.saw_long_bf;
	sp->saw_short_bf = b.saw_short_bf;
	sp->features = b.features;
	sp->replaced = b.replaced;
	for (size_t i = 0; i < b.nframes; i++)
		free(b.frames[i].owned);
	free(b.frames);
	free(b.sbuf);
}

static void *split_main(void *arg)
{
	split *sp = arg;
	size_t depth = 0, pos, unknown = 0;

	pos = split_scan(sp, &depth);

	if (!atomic_compare_exchange_strong(&sp->pos, &unknown, pos))
		return NULL; /* the first thread got past the middle first */
	if (pos != SPLIT_NONE)
		split_parse(sp, pos, depth);
	return NULL;
}

void st__json_split_end(parser *ps)
{
	split *sp = ps->sp;
	if (!sp)
		return;
	atomic_store(&sp->cancel, 1);
	if (!sp->joined)
		st__two_join(&sp->thread);
	sp->joined = 1;
	json_decref(sp->arr);
	sp->arr = NULL;
	st_problems_clear(&sp->problems);
	st__skim_free(&sp->sk);
	ps->sp = NULL;
}

/* The second part's warnings, in order after the first part's, pointers rebased. */
static void split_warnings(parser *ps, size_t offset)
{
	split *sp = ps->sp;
	st_buf base;

	if (ps->problems && st__dropped_move(ps->problems, &sp->problems))
		st__json_fail_at(ps, ps->p, ST_ENOMEM, "out of memory");
	if (!sp->problems.count || !ps->problems)
		return;
	st_buf_init(&base);
	for (size_t i = 0; i + 1 < ps->nframes; i++) {
		frame *f = &ps->frames[i];
		if (f->is_array)
			st_pointer_add_index(&base, f->index);
		else if (f->key)
			st_pointer_add_key(&base, f->key, f->keylen);
	}
	for (size_t i = 0; i < sp->problems.count; i++) {
		st_problem *q = &sp->problems.items[i];
		char *rest;
		unsigned long long j = strtoull(q->pointer + 1, &rest, 10);
		char *ptr;
		int first_big = !strcmp(q->rule, ST__NUMBER_RANGE_RULE) && !ps->bignum_said;
		if (ps->lenient >= MAX_LENIENCY_REPORTS && !first_big)
			continue; /* (past the cap only the first number-range warning) */
		ps->lenient++;
		ps->bignum_said |= first_big;
		ptr = st_asprintf("%s/%llu%s", base.data ? base.data : "",
				  j + (unsigned long long)offset, rest);
		if (!ptr || st_problems_add(ps->problems, q->severity, q->rule, ptr, q->urn, "%s",
					    q->message) != 0) {
			free(ptr);
			break;
		}
		free(ptr);
	}
	st_buf_free(&base);
}

/*
 * Called by the first thread after each array element (ps->p past the element's trailing
 * whitespace). 0: go on; 1: the array is complete (the second part appended, ps->p past its
 * ']'); -1: the second part failed and its error is now this parse's.
 */
__attribute__((noinline)) int st__json_split_join(parser *ps, json_t *arr, size_t idx)
{
	split *sp = ps->sp;
	size_t at = (size_t)(ps->p - ps->start);
	size_t pos = atomic_load_explicit(&sp->pos, memory_order_acquire);

	if (pos == 0) {
		if (at < sp->mid) /* the comma is at or after the middle */
			return 0;
		while (sp->wait && (pos = atomic_load(&sp->pos)) == 0)
			sched_yield();
	}
	if (pos == 0) {
		if (atomic_compare_exchange_strong(&sp->pos, &pos, SPLIT_NONE)) {
			st__json_split_end(ps); /* the scan is not done: no split */
			return 0;
		}
	}
	if (pos == SPLIT_NONE || at > pos) {
		st__json_split_end(ps);
		return 0;
	}
	if (at < pos)
		return 0;
	st__two_join(&sp->thread);
	sp->joined = 1;
	atomic_fetch_add(&splits_done, 1);
	split_warnings(ps, idx);
	ps->saw_html_escape |= sp->saw_html_escape;
	ps->saw_long_bf |= sp->saw_long_bf;
	ps->saw_short_bf |= sp->saw_short_bf;
	ps->features |= sp->features;
	/* (the second thread always collects problems; a caller without a list keeps no earlier
	 * value, so nothing is parsed again for one) */
	if (ps->problems)
		ps->replaced |= sp->replaced;
	if (!sp->ok) {
		ps->failed = 1;
		ps->code = sp->code;
		if (ps->err)
			*ps->err = sp->err;
		st__json_split_end(ps);
		return -1;
	}
	if (ps->sk)
		st__skim_merge(ps->sk, &sp->sk, st__skim_resources_array(ps));
	if (json_array_extend(arr, sp->arr) < 0) {
		st__json_fail_at(ps, ps->p, ST_ENOMEM, "out of memory");
		st__json_split_end(ps);
		return -1;
	}
	ps->p = sp->end;
	st__json_split_end(ps);
	return 1;
}

/* The tests' size for a split (0: none given), st__json_split_test. */
static _Atomic size_t split_test_min;

void st__json_split_test(size_t min)
{
	atomic_store(&split_test_min, min);
}

/* Starts the second thread when the document is big enough (ST__T_PARSE in lib/util/thread.c's
 * table, or the tests' size) and threads may be used (the call's choice). */
void st__json_split_start(parser *ps, split *sp, int threads)
{
	size_t len = (size_t)(ps->end - ps->start);
	size_t test_min = atomic_load(&split_test_min);
	json_t *seed;

	st__tsite site = ps->sk ? ST__T_SKIM : ST__T_PARSE;

	if (len < 16 || (test_min ? len < test_min || !st__threads_ok_for(threads)
				  : !st__two_worth(site, len, threads)))
		return;
	/* jansson seeds its hash function on the first object: do it on this thread */
	seed = json_object();
	if (!seed)
		return;
	json_decref(seed);
	memset(sp, 0, sizeof(*sp));
	atomic_init(&sp->pos, 0);
	atomic_init(&sp->cancel, 0);
	st_error_clear(&sp->err);
	sp->cfg = *ps;
	/* at the middle: a share that evens out the threads' CPU (the second scans to the split
	 * before it parses: lazily ~57% to the first) was measured at 100,000 resources no faster
	 * in wall time and 150 MB (0.4x the file) higher in peak memory, so it is not taken */
	sp->mid = len / 2;
	sp->wait = test_min != 0;
	/* the parser recurses once per nesting level, as on the calling thread */
	if (st__two_start(&sp->thread, site, split_main, sp, SPLIT_STACK))
		ps->sp = sp;
}

