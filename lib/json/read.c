/*
 * The JSON reader. It accepts exactly what Go's encoding/json accepts (Pulumi reads state with
 * it) and builds jansson values:
 *  - numbers of any size become reals (float64); a literal beyond the float64 range is an error,
 *    or with a problems list a placeholder the decoder judges (lib/internal.h ST__JSON_BIGNUM);
 *  - "\u0000" is allowed in strings (keys too, through jansson's *n calls);
 *  - a duplicate key keeps the last value (a warning with the key's pointer); the earlier
 *    values are kept beside (st__dropped_add) for the decoder, which decodes them in turn as
 *    Go does (lib/state/decode.c: a later object may merge into an earlier one; an earlier
 *    value of the wrong type is Go's error). A duplicate is rare: the parse only notes it,
 *    and the document is parsed again keeping the earlier values (so the common case looks
 *    nothing up);
 *  - invalid UTF-8 and lone surrogates become U+FFFD (a warning with the pointer);
 *  - no byte order mark, no comments, no trailing commas, nothing after the value (unless the
 *    caller reads the first value only, as Go's json.Decoder: st_parse_limits.first_value).
 * It also notes the style of the text so that the writer can keep it.
 *
 * Why not json_loadb: jansson rejects big integers, lone surrogates and invalid UTF-8 that Pulumi
 * accepts, drops duplicate keys silently, and cannot tell where a value sits (JSON Pointer) or how
 * the file was written.
 */
#include "json/read.h"

#include <errno.h>
#include <locale.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define EOF_JSON "unexpected end of JSON input" /* json.Unmarshal's at the end of its input */

void st__json_release_pages(parser *ps)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t from = (uintptr_t)ps->released, to = (uintptr_t)ps->p & ~(page - 1);
	if (to > from && madvise((void *)from, to - from, MADV_DONTNEED) == 0)
		ps->released = (const unsigned char *)to;
	else
		ps->release = 0;
}

void st__json_fail_at(parser *ps, const unsigned char *at, int code, const char *fmt, ...)
{
	va_list ap;
	int line;
	const unsigned char *bol;

	if (ps->failed)
		return;
	ps->failed = 1;
	ps->code = code;
	if (!ps->err)
		return;
	if (at > ps->end)
		at = ps->end;
	if (ps->first == ST_PARSE_DECODER && !strcmp(fmt, EOF_JSON))
		fmt = st__json_decoder_eof(ps); /* Decoder.Decode's io.EOF / io.ErrUnexpectedEOF */
	line = st__json_line_of(ps, at, &bol);
	va_start(ap, fmt);
	st__verr(ps->err, code, fmt, ap);
	va_end(ap);
	ps->err->line = line;
	ps->err->column = (int)(at - bol) + 1;
	ps->err->offset = (long long)(at - ps->start);
	st__err_file(ps->err, ps->name);
}


void st__json_fail_char(parser *ps, const char *context)
{
	char q[16];
	if (ps->p >= ps->end)
		st__json_fail_at(ps, ps->p, ST_EPARSE, EOF_JSON);
	else
		st__json_fail_at(ps, ps->p, ST_EPARSE, "invalid character %s %s", st__json_quote_char(*ps->p, q),
			context);
}

static void pointer_of(parser *ps, st_buf *b, const char *extra_key, size_t extra_len)
{
	for (size_t i = 0; i < ps->nframes; i++) {
		frame *f = &ps->frames[i];
		if (f->is_array)
			st_pointer_add_index(b, f->index);
		else if (f->key)
			st_pointer_add_key(b, f->key, f->keylen);
	}
	if (extra_key)
		st_pointer_add_key(b, extra_key, extra_len);
}

static void lenient(parser *ps, const char *rule, const char *what, const char *key,
		    size_t keylen)
{
	st_buf b;
	int first_big = !strcmp(rule, ST__NUMBER_RANGE_RULE) && !ps->bignum_said;

	if (!ps->problems || (ps->lenient >= MAX_LENIENCY_REPORTS && !first_big))
		return;
	ps->lenient++;
	ps->bignum_said |= first_big;
	st_buf_init(&b);
	pointer_of(ps, &b, key, keylen);
	st_problems_add(ps->problems, ST_SEV_WARNING, rule, b.data ? b.data : "", NULL, "%s",
			what);
	st_buf_free(&b);
}

/* A number literal beyond the float64 range at s: without a problems list an error (Go's
 * ParseFloat range error, as json.Unmarshal meets it when it stores the number); with one, the
 * placeholder ST__JSON_BIGNUM and a warning naming the literal, the decoder deciding by the
 * type there whether Go converts it (lib/internal.h). */
static json_t *big_number(parser *ps, const unsigned char *s, size_t len)
{
	st_buf m;
	json_t *v;
	if (!ps->problems) {
		st__json_fail_at(ps, s, ST_EPARSE, "number %.*s is out of the range of a float64",
				 (int)(len > 40 ? 40 : len), (const char *)s);
		return NULL;
	}
	st_buf_init(&m);
	st_buf_printf(&m, "number %.*s is out of the range of a float64: Pulumi reads it only where "
		      "Go never decodes it as a number (an unknown field, a secrets provider's "
		      "state); statetool cannot write it back", (int)len, (const char *)s);
	lenient(ps, ST__NUMBER_RANGE_RULE, m.oom ? "number out of the range of a float64" : m.data,
		NULL, 0);
	st_buf_free(&m);
	if (!(v = json_integer(ST__JSON_BIGNUM)))
		st__json_fail_at(ps, s, ST_ENOMEM, "out of memory");
	return v;
}

int st__json_push_frame(parser *ps, int is_array)
{
	if (ps->nframes == ps->frames_cap) {
		size_t cap = ps->frames_cap ? ps->frames_cap * 2 : 32;
		frame *f = realloc(ps->frames, cap * sizeof(*f));
		if (!f)
			return -1;
		ps->frames = f;
		ps->frames_cap = cap;
	}
	ps->frames[ps->nframes].key = NULL;
	ps->frames[ps->nframes].owned = NULL;
	ps->frames[ps->nframes].keylen = 0;
	ps->frames[ps->nframes].index = 0;
	ps->frames[ps->nframes].is_array = is_array;
	ps->nframes++;
	return 0;
}

static int sbuf_reserve(parser *ps, size_t need)
{
	if (need <= ps->sbuf_cap)
		return 0;
	size_t cap = ps->sbuf_cap ? ps->sbuf_cap : 256;
	while (cap < need)
		cap *= 2;
	char *s = realloc(ps->sbuf, cap);
	if (!s)
		return -1;
	ps->sbuf = s;
	ps->sbuf_cap = cap;
	return 0;
}

size_t st__json_utf8_len(const unsigned char *p, const unsigned char *e)
{
	unsigned c = p[0];
	if (c >= 0xc2 && c <= 0xdf) {
		if (e - p >= 2 && (p[1] & 0xc0) == 0x80)
			return 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		if (e - p >= 3 && (p[1] & 0xc0) == 0x80 && (p[2] & 0xc0) == 0x80) {
			if (c == 0xe0 && p[1] < 0xa0)
				return 0; /* overlong */
			if (c == 0xed && p[1] >= 0xa0)
				return 0; /* surrogate */
			return 3;
		}
	} else if (c >= 0xf0 && c <= 0xf4) {
		if (e - p >= 4 && (p[1] & 0xc0) == 0x80 && (p[2] & 0xc0) == 0x80 &&
		    (p[3] & 0xc0) == 0x80) {
			if (c == 0xf0 && p[1] < 0x90)
				return 0;
			if (c == 0xf4 && p[1] >= 0x90)
				return 0;
			return 4;
		}
	}
	return 0;
}

static size_t put_utf8(char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static int hex4(const unsigned char *p, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned c = p[i], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		v = v * 16 + d;
	}
	*out = v;
	return 0;
}

/*
 * Parses a string whose opening quote is at ps->p. On success *out points at the decoded bytes
 * (into the input when nothing needed decoding, else into ps->sbuf) and *outlen is their length.
 * `is_key` tells the leniency warnings whether the pointer names the key itself.
 * One function, longer than the others (tests/funclen.sh allows it): the hot loop of the
 * reader, where most of a state's bytes go; its fast path, escapes and UTF-8 checks share the
 * cursor in registers, and a call per piece costs measurably on big states.
 */
static int parse_string_raw(parser *ps, const char **out, size_t *outlen, int *bad_utf8)
{
	const unsigned char *p = ps->p + 1, *e = ps->end, *seg;
	size_t n = 0;

	*bad_utf8 = 0;
	/* Fast path: plain ASCII/UTF-8 without escapes, sixteen (or eight) bytes at a time
	 * while none of them is a quote, a backslash, a control byte or a non-ASCII byte. */
	seg = p;
	while (p < e) {
		unsigned c;
		p = st__json_skip_plain(p, e);
		if (p >= e)
			break;
		c = *p;
		if (c == '"') {
			*out = (const char *)seg;
			*outlen = (size_t)(p - seg);
			ps->p = p + 1;
			goto check_len;
		}
		if (c == '\\' || c < 0x20)
			break;
		if (c >= 0x80) {
			size_t l = st__json_utf8_len(p, e);
			if (!l)
				break;
			p += l;
			continue;
		}
		p++;
	}
	if (p >= e) {
		st__json_fail_at(ps, e, ST_EPARSE, EOF_JSON);
		return -1;
	}
	/* Slow path: copy what was scanned, then decode the rest. */
	n = (size_t)(p - seg);
	if (sbuf_reserve(ps, n + 64) < 0)
		goto oom;
	memcpy(ps->sbuf, seg, n);
	while (p < e) {
		unsigned c = *p;
		if (sbuf_reserve(ps, n + 8) < 0)
			goto oom;
		if (c == '"') {
			*out = ps->sbuf;
			*outlen = n;
			ps->p = p + 1;
			goto check_len;
		}
		if (c < 0x20) {
			char q[16];
			st__json_fail_at(ps, p, ST_EPARSE, "invalid character %s in string literal",
				st__json_quote_char((int)c, q));
			return -1;
		}
		if (c == '\\') {
			unsigned cp, lo;
			if (p + 1 >= e)
				break;
			switch (p[1]) {
			case '"': ps->sbuf[n++] = '"'; p += 2; continue;
			case '\\': ps->sbuf[n++] = '\\'; p += 2; continue;
			case '/': ps->sbuf[n++] = '/'; p += 2; continue;
			case 'b': ps->sbuf[n++] = '\b'; ps->saw_short_bf = 1; p += 2; continue;
			case 'f': ps->sbuf[n++] = '\f'; ps->saw_short_bf = 1; p += 2; continue;
			case 'n': ps->sbuf[n++] = '\n'; p += 2; continue;
			case 'r': ps->sbuf[n++] = '\r'; p += 2; continue;
			case 't': ps->sbuf[n++] = '\t'; p += 2; continue;
			case 'u':
				if (e - p < 6 || hex4(p + 2, &cp) < 0) {
					const unsigned char *bad = p + 2;
					char q[16];
					while (bad < e && bad < p + 6 &&
					       ((*bad >= '0' && *bad <= '9') ||
						(*bad >= 'a' && *bad <= 'f') ||
						(*bad >= 'A' && *bad <= 'F')))
						bad++;
					if (bad >= e)
						st__json_fail_at(ps, e, ST_EPARSE,
							EOF_JSON);
					else
						st__json_fail_at(ps, bad, ST_EPARSE,
							"invalid character %s in \\u hexadecimal "
							"character escape",
							st__json_quote_char(*bad, q));
					return -1;
				}
				p += 6;
				if (cp == '<' || cp == '>' || cp == '&')
					ps->saw_html_escape = 1;
				if (cp == 0x08 || cp == 0x0c)
					ps->saw_long_bf = 1;
				if (cp >= 0xd800 && cp < 0xdc00) {
					/* A high surrogate: a low one must follow, else U+FFFD. */
					if (e - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
					    hex4(p + 2, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
						cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
						p += 6;
					} else {
						cp = 0xfffd;
						*bad_utf8 = 1;
					}
				} else if (cp >= 0xdc00 && cp < 0xe000) {
					cp = 0xfffd;
					*bad_utf8 = 1;
				}
				n += put_utf8(ps->sbuf + n, cp);
				continue;
			default: {
				char q[16];
				st__json_fail_at(ps, p + 1, ST_EPARSE,
					"invalid character %s in string escape code",
					st__json_quote_char(p[1], q));
				return -1;
			}
			}
		}
		if (c >= 0x80) {
			size_t l = st__json_utf8_len(p, e);
			if (!l) {
				/* Go: each invalid byte becomes U+FFFD. */
				n += put_utf8(ps->sbuf + n, 0xfffd);
				*bad_utf8 = 1;
				p++;
				continue;
			}
			memcpy(ps->sbuf + n, p, l);
			n += l;
			p += l;
			continue;
		}
		ps->sbuf[n++] = (char)c;
		p++;
	}
	st__json_fail_at(ps, e, ST_EPARSE, EOF_JSON);
	return -1;
check_len:
	if (ps->max_string && *outlen > ps->max_string) {
		st__json_fail_at(ps, ps->p, ST_ELIMIT, "string of %zu bytes exceeds the limit of %zu bytes",
			*outlen, ps->max_string);
		return -1;
	}
	return 0;
oom:
	st__json_fail_at(ps, p, ST_ENOMEM, "out of memory");
	return -1;
}

static json_t *make_real(parser *ps, double v)
{
	json_t *r = json_real(v);
	if (!r)
		st__json_fail_at(ps, ps->p, ST_ENOMEM, "out of memory");
	return r;
}

static void note_version_literal(parser *ps, const unsigned char *s, size_t n)
{
	ps->vkey = st_strndup(ps->frames[0].key, ps->frames[0].keylen);
	snprintf(ps->vlit, sizeof(ps->vlit), "%.*s", (int)(n < 40 ? n : 40), (const char *)s);
}

/* The envelope's version is a Go int: a literal ParseInt refuses is Go's UnmarshalTypeError,
 * in the struct the document is decoded into (an export has 'deployment', a checkpoint file
 * not). */
static void version_literal_problem(parser *ps, json_t *root)
{
	int dep = 0, cp = 0;
	st_buf ptr;
	const char *k;
	json_t *v;
	if (!ps->vkey || !ps->problems || !json_is_object(root))
		return;
	json_object_foreach(root, k, v) {
		dep |= st__go_key_is(k, strlen(k), "deployment");
		cp |= st__go_key_is(k, strlen(k), "checkpoint");
	}
	st_buf_init(&ptr);
	st_pointer_add_key(&ptr, ps->vkey, strlen(ps->vkey));
	st_problems_add(ps->problems, ST_SEV_ERROR, "decode/type", ptr.data ? ptr.data : "",
			NULL, "json: cannot unmarshal number %s into Go struct field %s.version of "
			"type int",
			ps->vlit, dep && !cp ? "UntypedDeployment" : "VersionedCheckpoint");
	st_buf_free(&ptr);
}

static json_t *parse_number(parser *ps)
{
	const unsigned char *s = ps->p, *p = s, *e = ps->end;
	int simple = 1;
	double v;

	if (p < e && *p == '-')
		p++;
	if (p >= e) {
		st__json_fail_at(ps, p, ST_EPARSE, EOF_JSON);
		return NULL;
	}
	if (*p == '0') {
		p++;
	} else if (*p >= '1' && *p <= '9') {
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	} else {
		ps->p = p;
		st__json_fail_char(ps, "in numeric literal");
		return NULL;
	}
	if (p < e && *p == '.') {
		simple = 0;
		p++;
		if (p >= e || *p < '0' || *p > '9') {
			ps->p = p;
			st__json_fail_char(ps, "after decimal point in numeric literal");
			return NULL;
		}
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		simple = 0;
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			p++;
		if (p >= e || *p < '0' || *p > '9') {
			ps->p = p;
			st__json_fail_char(ps, "in exponent of numeric literal");
			return NULL;
		}
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	ps->p = p;
	if (ps->nframes == 1 && !ps->frames[0].is_array && ps->frames[0].key && !ps->vkey &&
	    st__go_key_is(ps->frames[0].key, ps->frames[0].keylen, "version") &&
	    !st__go_int_literal((const char *)s, (size_t)(p - s)))
		note_version_literal(ps, s, (size_t)(p - s));
	if (simple && p - s <= 16) {
		/* At most 15 digits (plus a sign): exact in a double. */
		const unsigned char *q = s;
		int neg = 0;
		long long n = 0;
		if (*q == '-') {
			neg = 1;
			q++;
		}
		if (p - q <= 15) {
			for (; q < p; q++)
				n = n * 10 + (*q - '0');
			v = neg ? -(double)n : (double)n;
			if (neg && n == 0)
				v = -0.0;
			return make_real(ps, v);
		}
	}
	{
		char stackbuf[64], *buf = stackbuf, *endp;
		size_t len = (size_t)(p - s);
		if (len >= sizeof(stackbuf)) {
			buf = malloc(len + 1);
			if (!buf) {
				st__json_fail_at(ps, s, ST_ENOMEM, "out of memory");
				return NULL;
			}
		}
		memcpy(buf, s, len);
		buf[len] = '\0';
		if (ps->decimal_point != '.') {
			/* strtod follows the caller's locale; JSON does not. */
			for (size_t i = 0; i < len; i++)
				if (buf[i] == '.')
					buf[i] = ps->decimal_point;
		}
		errno = 0;
		v = strtod(buf, &endp);
		if (buf != stackbuf)
			free(buf);
		if (isinf(v))
			return big_number(ps, s, len);
	}
	return make_real(ps, v);
}


/* A key given again (its frame's key cleared: the pointer is the object's plus the key). The
 * decoder rewords the warning where Go decodes the later value into the earlier one. */
static void duplicate_key(parser *ps, const char *key, size_t keylen)
{
	st_buf msg;
	st_buf_init(&msg);
	st_buf_adds(&msg, "duplicate object key '");
	st__key_text(&msg, key, keylen);
	st_buf_adds(&msg, "': the last value is kept, as Pulumi does; earlier values are lost on save");
	lenient(ps, "json/duplicate-key", msg.oom ? "duplicate object key" : msg.data, key, keylen);
	st_buf_free(&msg);
	/* above the resources (the envelope's objects: three frames at most), the value dropped
	 * may hold skeletons the lazy scan recorded: not kept */
	if (ps->sk && !ps->sk->second && ps->nframes <= 3)
		ps->sk->abort = 1;
}

/* The value obj[key] already holds when another is about to replace it: kept for the decoder
 * (st__dropped_add), which decodes the values in turn as Go does (a later object, array or
 * null may merge into it; an earlier value of the wrong type is Go's error even when a later
 * one fits). Only on the second parse (ps->keep). */
static int keep_earlier(parser *ps, json_t *obj, const char *key, size_t keylen)
{
	json_t *earlier;
	if (!ps->problems)
		return 0;
	earlier = json_object_getn(obj, key, keylen);
	if (earlier && st__dropped_add(ps->problems, obj, key, keylen, earlier)) {
		st__json_fail_at(ps, ps->p, ST_ENOMEM, "out of memory");
		return -1;
	}
	return 0;
}

static json_t *parse_object(parser *ps)
{
	json_t *obj;
	frame *f;

	if (ps->sk && st__skim_slot(ps)) {
		/* the lazy load: a resource as a skeleton when its text is proved canonical */
		json_t *skel = st__skim_resource(ps);
		if (skel || ps->failed)
			return skel;
	}
	obj = json_object();
	if (!obj) {
		st__json_fail_at(ps, ps->p, ST_ENOMEM, "out of memory");
		return NULL;
	}
	if (st__json_push_frame(ps, 0) < 0) {
		json_decref(obj);
		st__json_fail_at(ps, ps->p, ST_ENOMEM, "out of memory");
		return NULL;
	}
	ps->p++; /* '{' */
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		ps->nframes--;
		return obj;
	}
	for (;;) {
		const char *key;
		size_t keylen, before;
		char *keycopy = NULL;
		json_t *val;
		int bad;

		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != '"') {
			st__json_fail_char(ps, "looking for beginning of object key string");
			goto fail;
		}
		if (parse_string_raw(ps, &key, &keylen, &bad) < 0)
			goto fail;
		/* A key without escapes stays in the input; a decoded one lives in the scratch
		 * buffer, which the value's strings reuse, so it is copied. */
		if (key == ps->sbuf) {
			keycopy = st_strndup(key, keylen);
			if (!keycopy) {
				st__json_fail_at(ps, ps->p, ST_ENOMEM, "out of memory");
				goto fail;
			}
			key = keycopy;
		}
		f = &ps->frames[ps->nframes - 1];
		f->key = key;
		f->owned = keycopy;
		f->keylen = keylen;
		ps->features |= st__feature_key(key, keylen);
		if (bad)
			lenient(ps, "json/invalid-utf8",
				"object key with invalid UTF-8 or a lone surrogate (read as U+FFFD, "
				"as Pulumi does)",
				NULL, 0);
		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != ':') {
			st__json_fail_char(ps, "after object key");
			goto fail_key;
		}
		ps->p++;
		skip_ws(ps);
		val = st__json_parse_value(ps);
		f = &ps->frames[ps->nframes - 1];
		if (!val)
			goto fail_key;
		before = json_object_size(obj);
		if (ps->keep && before && keep_earlier(ps, obj, key, keylen) < 0) {
			json_decref(val);
			goto fail_key;
		}
		if (json_object_setn_new_nocheck(obj, key, keylen, val) < 0) {
			st__json_fail_at(ps, ps->p, ST_ENOMEM, "out of memory");
			goto fail_key;
		}
		if (json_object_size(obj) == before) {
			/* a duplicate: the size did not grow (val, now obj's, is alive) */
			f->key = NULL;
			duplicate_key(ps, key, keylen);
			if (!ps->keep && ps->problems)
				ps->replaced = 1; /* the earlier value is gone: parsed again */
		}
		free(keycopy);
		f->key = NULL;
		f->owned = NULL;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == '}') {
			ps->p++;
			break;
		}
		st__json_fail_char(ps, "after object key:value pair");
		goto fail;
	fail_key:
		f = &ps->frames[ps->nframes - 1];
		free(keycopy);
		f->key = NULL;
		f->owned = NULL;
		goto fail;
	}
	ps->nframes--;
	return obj;
fail:
	ps->nframes--;
	json_decref(obj);
	return NULL;
}

static json_t *parse_array(parser *ps)
{
	json_t *arr = json_array();
	size_t idx = 0;

	if (!arr || st__json_push_frame(ps, 1) < 0) {
		json_decref(arr);
		st__json_fail_at(ps, ps->p, ST_ENOMEM, "out of memory");
		return NULL;
	}
	ps->p++; /* '[' */
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ']') {
		ps->p++;
		ps->nframes--;
		return arr;
	}
	for (;;) {
		json_t *val;
		ps->frames[ps->nframes - 1].index = idx;
		skip_ws(ps);
		val = st__json_parse_value(ps);
		if (!val)
			goto fail;
		if (json_array_append_new(arr, val) < 0) {
			st__json_fail_at(ps, ps->p, ST_ENOMEM, "out of memory");
			goto fail;
		}
		idx++;
		if (ps->release && (size_t)(ps->p - ps->released) >= RELEASE_CHUNK)
			st__json_release_pages(ps);
		skip_ws(ps);
		if (ps->sp) {
			int r = st__json_split_join(ps, arr, idx);
			if (r < 0)
				goto fail;
			if (r > 0)
				break; /* the other thread parsed the rest, ']' included */
		}
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == ']') {
			ps->p++;
			break;
		}
		st__json_fail_char(ps, "after array element");
		goto fail;
	}
	ps->nframes--;
	return arr;
fail:
	ps->nframes--;
	json_decref(arr);
	return NULL;
}

static int match_literal(parser *ps, const char *lit, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		if (ps->p + i >= ps->end) {
			st__json_fail_at(ps, ps->end, ST_EPARSE, EOF_JSON);
			return -1;
		}
		if (ps->p[i] != (unsigned char)lit[i]) {
			char q[16];
			st__json_fail_at(ps, ps->p + i, ST_EPARSE, "invalid character %s in literal %s "
				"(expecting '%c')", st__json_quote_char(ps->p[i], q), lit, lit[i]);
			return -1;
		}
	}
	ps->p += n;
	return 0;
}

json_t *st__json_parse_value(parser *ps)
{
	json_t *v = NULL;

	if (ps->p >= ps->end) {
		st__json_fail_at(ps, ps->p, ST_EPARSE, EOF_JSON);
		return NULL;
	}
	switch (*ps->p) {
	case '{':
	case '[':
		if (++ps->depth > ps->max_depth) {
			st__json_fail_at(ps, ps->p, ST_ELIMIT, "exceeded max depth (%zu nested values)",
				ps->max_depth);
			return NULL;
		}
		v = *ps->p == '{' ? parse_object(ps) : parse_array(ps);
		ps->depth--;
		return v;
	case '"': {
		const char *s;
		size_t n;
		int bad;
		if (parse_string_raw(ps, &s, &n, &bad) < 0)
			return NULL;
		v = json_stringn_nocheck(s, n);
		if (n == sizeof(ST_SIG_BYTESTRING) - 1 && !memcmp(s, ST_SIG_BYTESTRING, n))
			ps->features |= 1u << ST_FEATURE_BYTESTRING;
		if (!v) {
			st__json_fail_at(ps, ps->p, ST_ENOMEM, "out of memory");
			return NULL;
		}
		if (bad)
			lenient(ps, "json/invalid-utf8",
				"string with invalid UTF-8 or a lone surrogate (read as U+FFFD, as "
				"Pulumi does)",
				NULL, 0);
		return v;
	}
	case 't':
		return match_literal(ps, "true", 4) < 0 ? NULL : json_true();
	case 'f':
		return match_literal(ps, "false", 5) < 0 ? NULL : json_false();
	case 'n':
		return match_literal(ps, "null", 4) < 0 ? NULL : json_null();
	default:
		if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
			return parse_number(ps);
		st__json_fail_char(ps, "looking for beginning of value");
		return NULL;
	}
}

/* Detects compact or indented output and the indentation unit from the first member. */
static void detect_layout(const unsigned char *s, const unsigned char *e, st_style *st)
{
	const unsigned char *p = s;

	while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	if (p >= e || (*p != '{' && *p != '['))
		return;
	p++;
	if (p < e && *p == '\n') {
		const unsigned char *q = ++p;
		while (q < e && (*q == ' ' || *q == '\t'))
			q++;
		size_t n = (size_t)(q - p);
		st->compact = 0;
		if (n >= 1 && n <= 8) {
			memcpy(st->indent, p, n);
			st->indent[n] = '\0';
		}
	} else if (p < e && (*p == ' ' || *p == '\t' || *p == '\r')) {
		st->compact = 0; /* unusual whitespace: write Pulumi's indented form */
	} else {
		st->compact = 1;
	}
}

int st__json_parse_ex(json_t **out, const char *buf, size_t len, const char *name,
		      const st_parse_limits *limits, st_style *style_out, st_problems *problems,
		      int mapped, int threads, unsigned *features, st_error *err)
{
	return st__json_parse_sk(out, buf, len, name, limits, style_out, problems, mapped, threads,
				 features, NULL, err);
}

static atomic_ulong reparses;

unsigned long st__json_reparses(void)
{
	return atomic_load(&reparses);
}

/* One parse of the document (keep: the earlier values of duplicate keys are kept; *replaced:
 * without keep, one was lost). */
static int parse_doc(json_t **out, const char *buf, size_t len, const char *name,
		     const st_parse_limits *limits, st_style *style_out, st_problems *problems,
		     int mapped, int threads, unsigned *features, skim *sk, int keep,
		     int *replaced, st_error *err)
{
	parser ps;
	split spl;
	json_t *v;
	struct lconv *lc = localeconv();

	*out = NULL;
	memset(&ps, 0, sizeof(ps));
	ps.start = (const unsigned char *)buf;
	ps.p = ps.start;
	ps.end = ps.start + len;
	ps.max_depth = limits && limits->max_depth ? limits->max_depth : ST_DEFAULT_MAX_DEPTH;
	ps.max_string = limits ? limits->max_string : 0;
	ps.name = name;
	ps.err = err;
	ps.problems = problems;
	ps.decimal_point = lc && lc->decimal_point && lc->decimal_point[0] ?
				   lc->decimal_point[0] : '.';
	ps.release = mapped;
	ps.released = ps.start;
	ps.keep = keep;
	ps.first = limits && limits->version >= 2 ? limits->first_value : 0;

	if (ps.end - ps.start >= 3 && ps.p[0] == 0xef && ps.p[1] == 0xbb && ps.p[2] == 0xbf) {
		st__json_fail_at(&ps, ps.p, ST_EPARSE, "invalid character 'ï' looking for beginning of "
			"value (a UTF-8 byte order mark, which Pulumi does not accept)");
		return ps.code;
	}
	if (sk) {
		/* the layout as detected below; HTML escaping and \b \f as Pulumi writes them
		 * (skim.c: the caller checks them against the style finally detected) */
		st_style_export(&sk->style);
		detect_layout(ps.start, ps.end, &sk->style);
		sk->style.escape_html = 1;
		sk->style.short_bf = 1;
		sk->style.trailing_newline = 0;
		ps.sk = sk;
	}
	skip_ws(&ps);
	st__json_split_start(&ps, &spl, threads);
	v = st__json_parse_value(&ps);
	st__json_split_end(&ps);
	if (v) {
		skip_ws(&ps);
		if (ps.p < ps.end && ps.first) {
			/* as json.Decoder: the rest is not read; the style is the document's */
			if (st__json_trailing_warning(&ps) != ST_OK) {
				json_decref(v);
				v = NULL;
			}
			len = (size_t)(ps.p - ps.start);
			ps.end = ps.p;
		} else if (ps.p < ps.end) {
			st__json_fail_char(&ps, "after top-level value");
			json_decref(v);
			v = NULL;
		}
	}
	for (size_t i = 0; i < ps.nframes; i++)
		free(ps.frames[i].owned);
	free(ps.frames);
	free(ps.sbuf);
	if (v)
		version_literal_problem(&ps, v);
	free(ps.vkey);
	if (!v)
		return ps.code ? ps.code : ST_EPARSE;

	if (style_out) {
		st_style_export(style_out);
		detect_layout(ps.start, ps.end, style_out);
		/* Raw <, > or & can only stand inside strings: seeing one means no HTML escaping. */
		if (memchr(buf, '<', len) || memchr(buf, '>', len) || memchr(buf, '&', len))
			style_out->escape_html = 0;
		else
			style_out->escape_html = ps.saw_html_escape;
		style_out->short_bf = ps.saw_long_bf && !ps.saw_short_bf ? 0 : 1;
		style_out->trailing_newline = len > 0 && buf[len - 1] == '\n';
	}
	if (features)
		*features = ps.features;
	*replaced = ps.replaced;
	*out = v;
	return ST_OK;
}

int st__json_parse_sk(json_t **out, const char *buf, size_t len, const char *name,
		      const st_parse_limits *limits, st_style *style_out, st_problems *problems,
		      int mapped, int threads, unsigned *features, skim *sk, st_error *err)
{
	size_t nprob = problems ? problems->count : 0, ndropped = st__dropped_count(problems);
	int replaced = 0;
	int rc = parse_doc(out, buf, len, name, limits, style_out, problems, mapped, threads,
			   features, sk, 0, &replaced, err);
	if (rc != ST_OK || !replaced)
		return rc;
	/* A duplicate key replaced a value, which the decoder needs: all of it again, keeping
	 * the earlier values (the same tree and warnings; a mapped file's pages given
	 * back fault in again). */
	json_decref(*out);
	*out = NULL;
	st__problems_truncate(problems, nprob);
	st__dropped_truncate(problems, ndropped);
	if (sk) {
		st__skim_free(sk);
		st__skim_init(sk);
	}
	atomic_fetch_add(&reparses, 1);
	return parse_doc(out, buf, len, name, limits, style_out, problems, mapped, threads,
			 features, sk, 1, &replaced, err);
}
