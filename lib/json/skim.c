/*
 * The lazy load's scanner: the reader (read.c) in a mode where each resource of the deployment
 * becomes a *skeleton* (the resource object without `inputs` and `outputs`) when its text is
 * proved to be exactly what the writer (write.c) writes for the full resource at its depth in
 * the state's style. The two property maps are checked and skipped, never built:
 *  - well-formed, valid UTF-8, every string escaped as write.c escapes it (\" \\ \n \r \t,
 *    \b \f or \u0008 \u000c by the style, other controls as lowercase \u00XX, U+2028/U+2029,
 *    <, > and & escaped exactly when the style escapes HTML);
 *  - whitespace exactly the style's: a newline and the indentation unit per level (nothing when
 *    compact), "key": value, empty {} and [] inline;
 *  - map keys without escapes, strictly increasing in byte order (the writer sorts property
 *    maps at every depth), so no duplicates;
 *  - numbers in the form st_json_format_number prints (the float64 they read as);
 *  - nesting and string sizes within the parse limits, nesting below the schema walk's limit
 *    (SKIM_MAX_DEPTH).
 * A map with the signature key (4dabf...: secrets, assets, archives, references, outputs), the
 * only objects the schemas and the integrity rules look at inside property values, is then
 * parsed where it stands and kept in the skeleton pruned to those objects (whole) and the way
 * to them (other members dropped, other array elements null), so the checks find each at its
 * pointer, in order.
 * The other members are parsed as usual, then written with the writer and compared with their
 * text. A resource that cannot be proved (anything above, a warning, a key Go would respell,
 * a duplicate member, inputs or outputs among them) is parsed again in full from its first
 * byte, so every message, warning and error is the full parse's.
 *
 * The style: the layout is detected before the parse (as read.c detects it after), HTML
 * escaping is taken as on and \b \f as short while checking; the parse records whether a
 * skimmed resource relied on either, and st__json_parse_lazy drops the lazy result (parsing
 * again in full) when the style finally detected disagrees.
 */
#include "json/read.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Resources in a row that were not proved, none proved yet: stop trying (another layout). */
#define MISSES_MAX 64

/* A skipped value nested this deep (from the document's root) is not proved: the schema walk
 * stops at 1,000 levels with a schema/depth warning (SCHEMA_MAX_INSTANCE_DEPTH in
 * schema_validate.c), which a value left out of the skeleton would not give. */
#define SKIM_MAX_DEPTH 900

static atomic_ulong skims_done;

unsigned long st__json_skims(void)
{
	return atomic_load(&skims_done);
}

void st__skim_init(skim *sk)
{
	memset(sk, 0, sizeof(*sk));
	sk->on = 1;
	st_buf_init(&sk->w);
}

void st__skim_free(skim *sk)
{
	free(sk->v);
	sk->v = NULL;
	sk->n = sk->cap = 0;
	st_buf_free(&sk->w);
}

void st__skim_merge(skim *to, skim *from, int ok)
{
	to->esc_html |= from->esc_html;
	to->long_bf |= from->long_bf;
	if (!ok && from->n)
		to->abort = 1; /* skeletons in an array that is not the resources */
	to->abort |= from->abort;
	if (!to->abort && from->n) {
		if (to->n + from->n > to->cap) {
			size_t cap = to->n + from->n;
			st__lazy_rec *v = realloc(to->v, cap * sizeof(*v));
			if (!v) {
				to->abort = 1;
				goto out;
			}
			to->v = v;
			to->cap = cap;
		}
		memcpy(to->v + to->n, from->v, from->n * sizeof(*from->v));
		to->n += from->n;
	}
out:
	st__skim_free(from);
}

/* ---- the frames: is this the deployment's resources array? ---- */

static int frame_key_is(const frame *f, const char *k)
{
	size_t n = strlen(k);
	return !f->is_array && f->key && f->keylen == n && !memcmp(f->key, k, n);
}

/* The frames [0, n) end with the resources array of an export (deployment) or a checkpoint
 * (checkpoint.latest), its keys spelt as the writer writes them. */
static int resources_frames(const parser *ps, size_t n)
{
	const frame *f = ps->frames;
	if (n == 3)
		return frame_key_is(&f[0], "deployment") && frame_key_is(&f[1], "resources") &&
		       f[2].is_array;
	if (n == 4)
		return frame_key_is(&f[0], "checkpoint") && frame_key_is(&f[1], "latest") &&
		       frame_key_is(&f[2], "resources") && f[3].is_array;
	return 0;
}

int st__skim_slot(const parser *ps)
{
	if (!ps->sk->on)
		return 0;
	if (ps->sk->second)
		return ps->nframes == 1 && ps->frames[0].is_array && ps->depth == ps->sk->second;
	return ps->depth == ps->nframes + 1 && resources_frames(ps, ps->nframes);
}

int st__skim_resources_array(const parser *ps)
{
	return ps->nframes && resources_frames(ps, ps->nframes);
}

/* ---- the checks of a skipped value ---- */

/* A newline and `depth` indentation units (nothing in the compact style). */
static const unsigned char *ws_nl(const skim *sk, const unsigned char *p,
				  const unsigned char *e, size_t depth)
{
	size_t il;
	if (sk->style.compact)
		return p;
	if (p >= e || *p != '\n')
		return NULL;
	p++;
	if (!memcmp(sk->style.indent, "    ", 5)) { /* four spaces (and the NUL): no strlen */
		static const char spaces[] = "                                                "
					     "                                                ";
		while (depth) {
			size_t k = depth > 24 ? 24 : depth;
			if ((size_t)(e - p) < 4 * k || memcmp(p, spaces, 4 * k))
				return NULL;
			p += 4 * k;
			depth -= k;
		}
		return p;
	}
	il = strlen(sk->style.indent);
	for (size_t i = 0; i < depth; i++) {
		if ((size_t)(e - p) < il || memcmp(p, sk->style.indent, il))
			return NULL;
		p += il;
	}
	return p;
}

/* A \u escape at p (p[0] == '\\', p[1] == 'u') the writer writes; NULL if not. */
static const unsigned char *ck_uescape(parser *ps, skim *sk, const unsigned char *p,
				       const unsigned char *e)
{
	static const char hexdigits[] = "0123456789abcdef";
	unsigned c;
	if (e - p < 6 || p[2] != '0' || p[3] != '0') {
		if (e - p >= 6 && !memcmp(p + 2, "202", 3) && (p[5] == '8' || p[5] == '9'))
			return p + 6;
		return NULL;
	}
	if (p[4] != '0' && p[4] != '1' && p[4] != '2' && p[4] != '3')
		return NULL;
	if (!memchr(hexdigits, p[5], 16))
		return NULL;
	c = (unsigned)(p[4] - '0') * 16 +
	    (unsigned)((const char *)memchr(hexdigits, p[5], 16) - hexdigits);
	if (c == '\n' || c == '\r' || c == '\t')
		return NULL;
	if (c == '\b' || c == '\f') {
		ps->saw_long_bf = 1;
		sk->long_bf = 1;
	} else if (c == '<' || c == '>' || c == '&') {
		ps->saw_html_escape = 1;
		sk->esc_html = 1;
	} else if (c >= 0x20) {
		return NULL;
	}
	return p + 6;
}

/* A string at p (its opening quote) as the writer writes it: past its closing quote, or NULL.
 * *esc: it has escapes. A value sets the bytestring feature when it is the signature. */
static const unsigned char *ck_string(parser *ps, skim *sk, const unsigned char *p, int *esc,
				      int is_key)
{
	const unsigned char *s = ++p, *e = ps->end;
	*esc = 0;
	for (;;) {
		unsigned c;
		p = st__json_skip_plain(p, e);
		if (p >= e)
			return NULL;
		c = *p;
		if (c == '"')
			break;
		if (c == '\\') {
			*esc = 1;
			if (e - p < 2)
				return NULL;
			switch (p[1]) {
			case '"': case '\\': case 'n': case 'r': case 't':
				p += 2;
				continue;
			case 'b': case 'f':
				ps->saw_short_bf = 1;
				p += 2;
				continue;
			case 'u':
				if (!(p = ck_uescape(ps, sk, p, e)))
					return NULL;
				continue;
			default:
				return NULL;
			}
		}
		if (c < 0x20)
			return NULL;
		if (c >= 0x80) {
			size_t l = st__json_utf8_len(p, e);
			if (!l || (c == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)))
				return NULL; /* invalid, or U+2028/U+2029 (the writer escapes them) */
			p += l;
			continue;
		}
		p++;
	}
	if (ps->max_string && (size_t)(p - s) > ps->max_string)
		return NULL;
	if (!is_key && p - s == sizeof(ST_SIG_BYTESTRING) - 1 && !memcmp(s, ST_SIG_BYTESTRING, 32))
		ps->features |= 1u << ST_FEATURE_BYTESTRING;
	return p + 1;
}

/* A number at p in the form st_json_format_number prints: past it, or NULL. */
static const unsigned char *ck_number(parser *ps, const unsigned char *p)
{
	const unsigned char *s = p, *e = ps->end, *frac = NULL;
	size_t idigits = 0, fdigits = 0, fzeros = 0;
	int expo = 0;
	char buf[64], out[40];
	double v;

	if (p < e && *p == '-')
		p++;
	if (p < e && *p == '0') {
		p++;
	} else {
		while (p < e && *p >= '0' && *p <= '9')
			p++, idigits++;
		if (!idigits)
			return NULL;
	}
	if (p < e && *p == '.') {
		frac = ++p;
		while (p < e && *p >= '0' && *p <= '9')
			p++, fdigits++;
		if (!fdigits)
			return NULL;
		while (fzeros < fdigits && frac[fzeros] == '0')
			fzeros++;
	}
	if (p < e && (*p == 'e' || *p == 'E'))
		expo = 1;
	if (!expo && !frac && idigits <= 15)
		return p; /* an integer below 1e15: printed digit for digit */
	if (!expo && frac && p[-1] != '0' && idigits + fdigits <= 15 &&
	    (idigits || fzeros <= 5))
		return p; /* at most 15 digits, no trailing zero, at least 1e-6: the shortest */
	/* Anything else: what the writer prints for the float64 it reads as. */
	if (expo) {
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			p++;
		if (p >= e || *p < '0' || *p > '9')
			return NULL;
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	if ((size_t)(p - s) >= sizeof(buf))
		return NULL;
	memcpy(buf, s, (size_t)(p - s));
	buf[p - s] = '\0';
	for (char *d = buf; *d; d++)
		if (*d == '.')
			*d = ps->decimal_point;
	v = strtod(buf, NULL);
	if (isinf(v))
		return NULL;
	int n = st_json_format_number(v, out, sizeof(out));
	if (n < 0 || (size_t)n != (size_t)(p - s) || memcmp(out, s, (size_t)n))
		return NULL;
	return p;
}

static const unsigned char *ck_value(parser *ps, skim *sk, const unsigned char *p, size_t depth);

/* Byte order of two keys, as the writer sorts them. */
static int key_cmp(const unsigned char *a, size_t al, const unsigned char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);
	return c ? c : (al > bl) - (al < bl);
}

static const unsigned char *ck_object(parser *ps, skim *sk, const unsigned char *p,
				      size_t depth)
{
	const unsigned char *e = ps->end, *prev = NULL;
	size_t prevlen = 0;

	if (++p < e && *p == '}')
		return p + 1;
	for (;;) {
		const unsigned char *k, *q;
		size_t kl;
		int esc;
		if (!(p = ws_nl(sk, p, e, depth + 1)) || p >= e || *p != '"')
			return NULL;
		k = p + 1;
		if (!(q = ck_string(ps, sk, p, &esc, 1)) || esc)
			return NULL;
		kl = (size_t)(q - 1 - k);
		if (prev && key_cmp(prev, prevlen, k, kl) >= 0)
			return NULL;
		if (kl == sizeof(ST_SIG_KEY) - 1 && !memcmp(k, ST_SIG_KEY, kl))
			sk->sig = 1;
		ps->features |= st__feature_key((const char *)k, kl);
		prev = k;
		prevlen = kl;
		p = q;
		if (p >= e || *p++ != ':' || (!sk->style.compact && (p >= e || *p++ != ' ')))
			return NULL;
		if (!(p = ck_value(ps, sk, p, depth + 1)) || p >= e)
			return NULL;
		if (*p == ',') {
			p++;
			continue;
		}
		if (!(p = ws_nl(sk, p, e, depth)) || p >= e || *p != '}')
			return NULL;
		return p + 1;
	}
}

static const unsigned char *ck_array(parser *ps, skim *sk, const unsigned char *p, size_t depth)
{
	const unsigned char *e = ps->end;

	if (++p < e && *p == ']')
		return p + 1;
	for (;;) {
		if (!(p = ws_nl(sk, p, e, depth + 1)) || !(p = ck_value(ps, sk, p, depth + 1)) ||
		    p >= e)
			return NULL;
		if (*p == ',') {
			p++;
			continue;
		}
		if (!(p = ws_nl(sk, p, e, depth)) || p >= e || *p != ']')
			return NULL;
		return p + 1;
	}
}

/* A value at writer depth `depth` (its container's members at depth + 1). */
static const unsigned char *ck_value(parser *ps, skim *sk, const unsigned char *p, size_t depth)
{
	const unsigned char *e = ps->end;
	int esc;

	if (p >= e)
		return NULL;
	switch (*p) {
	case '{':
	case '[':
		if (depth + 1 > ps->max_depth || depth + 1 > SKIM_MAX_DEPTH)
			return NULL;
		return *p == '{' ? ck_object(ps, sk, p, depth) : ck_array(ps, sk, p, depth);
	case '"':
		return ck_string(ps, sk, p, &esc, 0);
	case 't':
		return e - p >= 4 && !memcmp(p, "true", 4) ? p + 4 : NULL;
	case 'f':
		return e - p >= 5 && !memcmp(p, "false", 5) ? p + 5 : NULL;
	case 'n':
		return e - p >= 4 && !memcmp(p, "null", 4) ? p + 4 : NULL;
	default:
		return *p == '-' || (*p >= '0' && *p <= '9') ? ck_number(ps, p) : NULL;
	}
}

/* ---- a resource ---- */

/* A member of the resource Go would not respell and the writer knows (exact spelling). */
static int resource_field(const unsigned char *k, size_t kl)
{
	for (const char *const *f = st_kind_fields(ST_K_RESOURCE); *f; f++)
		if (**f == *k && strlen(*f) == kl && !memcmp(*f, k, kl))
			return 1;
	return 0;
}

/* Drops the problems from index n on (what a resource added before it was given up). */
typedef struct rstate {
	const unsigned char *start;
	size_t nprob, lenient, nframes;
	int html, long_bf, short_bf;
} rstate;

static json_t *give_up(parser *ps, json_t *obj, const rstate *r)
{
	skim *sk = ps->sk;
	json_decref(obj);
	ps->nframes = r->nframes;
	if (ps->failed)
		return NULL; /* a parse error in a member: the full parse's own */
	st__problems_truncate(ps->problems, r->nprob);
	ps->lenient = r->lenient;
	ps->p = r->start;
	ps->saw_html_escape = r->html;
	ps->saw_long_bf = r->long_bf;
	ps->saw_short_bf = r->short_bf;
	if (++sk->misses >= MISSES_MAX && !sk->n)
		sk->on = 0;
	return NULL;
}

/* One member other than a skipped map: parsed, then written and compared with its text. */
static int member(parser *ps, json_t *obj, const char *k, size_t kl, size_t depth)
{
	skim *sk = ps->sk;
	const unsigned char *vs = ps->p;
	size_t before = json_object_size(obj);
	json_t *v = st__json_parse_value(ps);
	char key[32];

	if (!v)
		return -1;
	memcpy(key, k, kl);
	key[kl] = '\0';
	sk->w.len = 0;
	if (json_object_setn_new_nocheck(obj, k, kl, v) < 0 ||
	    json_object_size(obj) == before || /* a duplicate */
	    st__json_write_at(&sk->w, v, &sk->style, st_kind_child(ST_K_RESOURCE, key),
			      depth) != ST_OK ||
	    sk->w.len != (size_t)(ps->p - vs) || memcmp(sk->w.data, vs, sk->w.len))
		return -1;
	return 0;
}

/* Keeps, of a property value, only the objects with the signature key (whole) and the way to
 * them: other members dropped, other array elements null. 1 when something is kept. */
static int prune(json_t *v, int depth)
{
	int keep = 0;
	if (depth > ST_DEFAULT_MAX_DEPTH)
		return 1;
	if (json_is_object(v)) {
		const char *k;
		json_t *m;
		void *tmp;
		if (json_object_get(v, ST_SIG_KEY))
			return 1;
		json_object_foreach_safe(v, tmp, k, m) {
			if (prune(m, depth + 1))
				keep = 1;
			else
				json_object_del(v, k);
		}
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++) {
			json_t *e = json_array_get(v, i);
			if (prune(e, depth + 1))
				keep = 1;
			else if (!json_is_null(e))
				json_array_set_new(v, i, json_null());
		}
	}
	return keep;
}

/* A skipped map [ms, me) that holds special values (secrets, assets, archives, references,
 * outputs): parsed where it stands and kept pruned to them in the skeleton (they are all that
 * the schemas and the integrity rules look at in property values, at the same pointers). */
static int special_values(parser *ps, json_t *obj, const char *k, size_t kl,
			  const unsigned char *ms, const unsigned char *me)
{
	size_t before = json_object_size(obj);
	json_t *m;
	ps->frames[ps->nframes - 1].key = k;
	ps->frames[ps->nframes - 1].keylen = kl;
	ps->p = ms;
	m = st__json_parse_value(ps);
	ps->frames[ps->nframes - 1].key = NULL;
	if (!m || ps->p != me)
		return -1;
	prune(m, 0);
	if (json_object_setn_new_nocheck(obj, k, kl, m) < 0 || json_object_size(obj) == before)
		return -1;
	return 0;
}

static int record(skim *sk, json_t *obj, size_t off, size_t len)
{
	if (sk->n == sk->cap) {
		size_t cap = sk->cap ? sk->cap * 2 : 1024;
		st__lazy_rec *v = realloc(sk->v, cap * sizeof(*v));
		if (!v)
			return -1;
		sk->v = v;
		sk->cap = cap;
	}
	sk->v[sk->n].res = obj;
	sk->v[sk->n].off = off;
	sk->v[sk->n].len = len;
	sk->n++;
	return 0;
}

json_t *st__skim_resource(parser *ps)
{
	skim *sk = ps->sk;
	size_t depth = ps->depth - 1; /* the writer's depth of the resource object */
	const unsigned char *e = ps->end, *p;
	rstate r = {ps->p, ps->problems ? ps->problems->count : 0, ps->lenient, ps->nframes,
		    ps->saw_html_escape, ps->saw_long_bf, ps->saw_short_bf};
	json_t *obj = json_object();
	int skipped = 0, html = 0;
	unsigned maps = 0; /* inputs (1) and outputs (2) seen: a second is a duplicate */

	if (!obj || st__json_push_frame(ps, 0) < 0)
		return give_up(ps, obj, &r);
	ps->saw_html_escape = 0;
	p = ps->p + 1;
	for (;;) {
		const unsigned char *k, *q;
		size_t kl;
		int esc;
		unsigned map;
		if (!(p = ws_nl(sk, p, e, depth + 1)) || p >= e || *p != '"')
			return give_up(ps, obj, &r);
		k = p + 1;
		if (!(q = ck_string(ps, sk, p, &esc, 1)) || esc ||
		    !resource_field(k, kl = (size_t)(q - 1 - k)))
			return give_up(ps, obj, &r);
		ps->features |= st__feature_key((const char *)k, kl);
		p = q;
		if (p >= e || *p++ != ':' || (!sk->style.compact && (p >= e || *p++ != ' ')))
			return give_up(ps, obj, &r);
		/* more white space than the style's (Python's ": " in a one-line file): not the
		 * writer's text, and no value the parser below starts at */
		if (p >= e || *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			return give_up(ps, obj, &r);
		map = kl == 6 && !memcmp(k, "inputs", 6) ? 1 : 0;
		if (kl == 7 && !memcmp(k, "outputs", 7))
			map = 2;
		/* a map given twice (a skipped one is not in obj, so member() cannot see it): the
		 * full parse warns json/duplicate-key and keeps the last */
		if (map & maps)
			return give_up(ps, obj, &r);
		maps |= map;
		if (*p == '{' && map) {
			const unsigned char *ms = p;
			sk->sig = 0;
			if (!(p = ck_object(ps, sk, p, depth + 1)) ||
			    (sk->sig && special_values(ps, obj, (const char *)k, kl, ms, p) < 0))
				return give_up(ps, obj, &r);
			skipped = 1;
		} else {
			ps->frames[ps->nframes - 1].key = (const char *)k;
			ps->frames[ps->nframes - 1].keylen = kl;
			ps->p = p;
			if (member(ps, obj, (const char *)k, kl, depth + 1) < 0)
				return give_up(ps, obj, &r);
			ps->frames[ps->nframes - 1].key = NULL;
			p = ps->p;
		}
		if (p < e && *p == ',') {
			p++;
			continue;
		}
		if (!(p = ws_nl(sk, p, e, depth)) || p >= e || *p != '}')
			return give_up(ps, obj, &r);
		p++;
		break;
	}
	if (ps->problems && ps->problems->count != r.nprob)
		return give_up(ps, obj, &r); /* a warning: not what the writer writes */
	html = ps->saw_html_escape;
	ps->saw_html_escape |= r.html;
	ps->nframes = r.nframes;
	ps->p = p;
	sk->misses = 0;
	if (html)
		sk->esc_html = 1;
	if (skipped && record(sk, obj, (size_t)(r.start - ps->start), (size_t)(p - r.start)) < 0)
		sk->abort = 1;
	return obj;
}

/* ---- the entry ---- */

int st__json_parse_lazy(json_t **out, const char *buf, size_t len, const char *name,
			const st_parse_limits *limits, st_style *style_out, st_problems *problems,
			int mapped, int threads, unsigned *features, st__lazy_rec **recs,
			size_t *nrecs, st_error *err)
{
	skim sk;
	st_style style;
	size_t nprob = problems ? problems->count : 0, ndropped = st__dropped_count(problems);
	int rc;

	*recs = NULL;
	*nrecs = 0;
	st__skim_init(&sk);
	rc = st__json_parse_sk(out, buf, len, name, limits, &style, problems, mapped, threads,
			       features, &sk, err);
	if (rc == ST_OK &&
	    (sk.abort ||
	     (sk.n && ((sk.esc_html && !style.escape_html) || (sk.long_bf && style.short_bf))))) {
		/* the style detected is not the one the skim assumed, or skeletons were made that
		 * are not kept (the second thread's, in an array that is not the resources: with
		 * none of the first thread's, sk.n is 0 and they were once left in the tree, their
		 * maps lost): all of it again, in full */
		json_decref(*out);
		*out = NULL;
		st__problems_truncate(problems, nprob);
		st__dropped_truncate(problems, ndropped); /* the first parse's */
		rc = st__json_parse_sk(out, buf, len, name, limits, &style, problems, mapped,
				       threads, features, NULL, err);
		sk.n = 0;
	}
	if (rc == ST_OK && sk.n) {
		*recs = sk.v;
		*nrecs = sk.n;
		sk.v = NULL;
		atomic_fetch_add(&skims_done, 1);
	}
	st__skim_free(&sk);
	if (rc == ST_OK && style_out)
		*style_out = style;
	return rc;
}
