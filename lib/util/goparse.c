/*
 * Go's parsers that Pulumi's loader goes through, with their messages: time.Time's JSON form
 * (RFC 3339 through time.Parse), blang/semver's Parse and ParseTolerant, Pulumi's property
 * paths (resource.ParsePropertyPath), base64.StdEncoding, strconv.ParseUint/ParseInt, the
 * quoting of strconv.Quote (%q) and of the time package, and encoding/json's case folding of
 * keys (the reader, the envelope and the decoder match keys with it). Each check returns NULL when Go
 * accepts the text, else Go's message (new; NULL also when out of memory, so the callers that
 * must tell the two apart use the *_ok forms).
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- quoting ---- */

/* Decodes one UTF-8 sequence at s (n bytes left): the rune, or -1 for an invalid byte (one
 * byte consumed). */
static long utf8_rune(const unsigned char *s, size_t n, size_t *w)
{
	unsigned c = s[0];
	long r;
	size_t k;
	*w = 1;
	if (c < 0x80)
		return c;
	if (c >= 0xc2 && c <= 0xdf)
		k = 2, r = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		k = 3, r = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		k = 4, r = c & 0x07;
	else
		return -1;
	if (n < k)
		return -1;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		r = r << 6 | (s[i] & 0x3f);
	}
	if ((k == 3 && (r < 0x800 || (r >= 0xd800 && r <= 0xdfff))) || (k == 4 && (r < 0x10000 ||
									     r > 0x10ffff)))
		return -1;
	*w = k;
	return r;
}

/* Go's []rune(s): each invalid byte becomes U+FFFD. out has room for n runes; the count. */
size_t st__go_runes(const char *s, size_t n, unsigned *out)
{
	const unsigned char *p = (const unsigned char *)s, *e = p + n;
	size_t k = 0, w;
	while (p < e) {
		long r = utf8_rune(p, (size_t)(e - p), &w);
		out[k++] = r < 0 ? 0xfffd : (unsigned)r;
		p += w;
	}
	return k;
}

/* unicode.IsPrint for the runes a state can hold, close enough for messages: controls, the
 * C1 controls, format characters and the line and paragraph separators are not printable. */
static int go_isprint(long r)
{
	if (r < 0x20 || (r >= 0x7f && r <= 0x9f))
		return 0;
	if (r == 0xad || (r >= 0x200b && r <= 0x200f) || (r >= 0x2028 && r <= 0x202e) ||
	    (r >= 0x2060 && r <= 0x206f) || r == 0xfeff || (r >= 0xfff9 && r <= 0xfffb) ||
	    (r >= 0xe000 && r <= 0xf8ff) || (r & 0xfffe) == 0xfffe)
		return 0;
	return 1;
}

void st__go_quote(st_buf *b, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *e = p + n;
	st_buf_addc(b, '"');
	while (p < e) {
		size_t w;
		long r = utf8_rune(p, (size_t)(e - p), &w);
		if (r < 0) {
			st_buf_printf(b, "\\x%02x", *p);
		} else if (r == '"' || r == '\\') {
			st_buf_addc(b, '\\');
			st_buf_addc(b, (char)r);
		} else if (go_isprint(r)) {
			st_buf_add(b, p, w);
		} else {
			switch (r) {
			case '\a': st_buf_adds(b, "\\a"); break;
			case '\b': st_buf_adds(b, "\\b"); break;
			case '\f': st_buf_adds(b, "\\f"); break;
			case '\n': st_buf_adds(b, "\\n"); break;
			case '\r': st_buf_adds(b, "\\r"); break;
			case '\t': st_buf_adds(b, "\\t"); break;
			case '\v': st_buf_adds(b, "\\v"); break;
			default:
				if (r < 0x20 || r == 0x7f)
					st_buf_printf(b, "\\x%02lx", r);
				else if (r < 0x10000)
					st_buf_printf(b, "\\u%04lx", r);
				else
					st_buf_printf(b, "\\U%08lx", r);
			}
		}
		p += w;
	}
	st_buf_addc(b, '"');
}

/* The time package's own quote: bytes of non-ASCII or control runes as \xNN. */
static void time_quote(st_buf *b, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *e = p + n;
	st_buf_addc(b, '"');
	while (p < e) {
		size_t w;
		long r = utf8_rune(p, (size_t)(e - p), &w);
		if (r < 0 || r >= 0x80 || r < ' ') {
			for (size_t j = 0; j < w; j++)
				st_buf_printf(b, "\\x%02x", p[j]);
		} else {
			if (r == '"' || r == '\\')
				st_buf_addc(b, '\\');
			st_buf_addc(b, (char)r);
		}
		p += w;
	}
	st_buf_addc(b, '"');
}

static char *take(st_buf *b)
{
	return st_buf_take(b, NULL);
}

/* ---- strconv ---- */

/* strconv.ParseUint(s, base, 64) for base 10 or 16 (no prefixes, no underscores): 0 ok,
 * 1 invalid syntax, 2 out of range. */
static int parse_uint(const char *s, size_t n, int base, unsigned long long *out)
{
	unsigned long long v = 0;
	int range = 0;
	if (!n)
		return 1;
	for (size_t i = 0; i < n; i++) {
		int d;
		char c = s[i];
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return 1;
		if (v > (~0ULL - (unsigned)d) / (unsigned)base)
			range = 1;
		else
			v = v * (unsigned)base + (unsigned)d;
	}
	if (out)
		*out = v;
	return range ? 2 : 0;
}

static char *num_error(const char *func, const char *s, size_t n, int why)
{
	st_buf b;
	st_buf_init(&b);
	st_buf_printf(&b, "strconv.%s: parsing ", func);
	st__go_quote(&b, s, n);
	st_buf_adds(&b, why == 1 ? ": invalid syntax" : ": value out of range");
	return take(&b);
}

char *st__go_parse_hex64_error(const char *s, size_t n, unsigned long long *out)
{
	int why = parse_uint(s, n, 16, out);
	return why ? num_error("ParseUint", s, n, why) : NULL;
}

/* strconv.ParseInt(s, 10, 64): 0 ok, else 1 or 2 as parse_uint. */
static int parse_int(const char *s, size_t n)
{
	unsigned long long v;
	int neg = 0, why;
	if (n && (s[0] == '+' || s[0] == '-')) {
		neg = s[0] == '-';
		s++;
		n--;
	}
	why = parse_uint(s, n, 10, &v);
	if (why)
		return why;
	if ((!neg && v > 0x7fffffffffffffffULL) || (neg && v > 0x8000000000000000ULL))
		return 2;
	return 0;
}

int st__go_int_literal(const char *s, size_t n)
{
	return parse_int(s, n) == 0;
}

/* ---- time.Time's UnmarshalJSON: time.Parse(time.RFC3339, s) ---- */

#define RFC3339 "2006-01-02T15:04:05Z07:00"

static int isdig(const char *s, size_t n, size_t i)
{
	return i < n && s[i] >= '0' && s[i] <= '9';
}

/* time's getnum: one or two digits (fixed: exactly two). -1 when there is none. */
static int getnum(const char *s, size_t n, int fixed, size_t *used)
{
	if (!isdig(s, n, 0))
		return -1;
	if (!isdig(s, n, 1)) {
		if (fixed)
			return -1;
		*used = 1;
		return s[0] - '0';
	}
	*used = 2;
	return (s[0] - '0') * 10 + (s[1] - '0');
}

static int days_in(int month, int year)
{
	static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (month == 2 && year % 4 == 0 && (year % 100 != 0 || year % 400 == 0))
		return 29;
	return d[month - 1];
}

static char *time_error(const char *v, size_t vn, const char *elem, size_t en,
			const char *layout_elem, const char *message)
{
	st_buf b;
	st_buf_init(&b);
	st_buf_adds(&b, "parsing time ");
	time_quote(&b, v, vn);
	if (message) {
		st_buf_adds(&b, message);
	} else {
		st_buf_adds(&b, " as ");
		time_quote(&b, RFC3339, strlen(RFC3339));
		st_buf_adds(&b, ": cannot parse ");
		time_quote(&b, elem, en);
		st_buf_adds(&b, " as ");
		time_quote(&b, layout_elem, strlen(layout_elem));
	}
	return take(&b);
}

/* Where Go's parse() is in the value, what it read, and a range it found broken ("month"). */
typedef struct tscan {
	const char *p;
	size_t left;
	int year, month, day;
	char range[48];
} tscan;

static void tscan_skip(tscan *t, size_t n)
{
	t->p += n;
	t->left -= n;
}

/* 2006: four characters, the first a digit, all digits. 1: not what the layout wants. */
static int scan_year(tscan *t)
{
	int bad = 0;
	if (t->left < 4 || !isdig(t->p, t->left, 0))
		return 1;
	for (int i = 1; i < 4; i++)
		if (!isdig(t->p, t->left, (size_t)i))
			bad = 1;
	if (!bad)
		t->year = (t->p[0] - '0') * 1000 + (t->p[1] - '0') * 100 + (t->p[2] - '0') * 10 +
			  (t->p[3] - '0');
	tscan_skip(t, 4);
	return bad;
}

/* 15 (one or two digits), 04, 05 (then a fraction the layout does not name): step 3, 4, 5. */
static int scan_clock(tscan *t, size_t k)
{
	size_t used = 0;
	int x = getnum(t->p, t->left, k != 3, &used);
	if (x < 0)
		return 1;
	tscan_skip(t, used);
	if (k == 3 && x >= 24)
		snprintf(t->range, sizeof(t->range), "hour");
	else if (k == 4 && x >= 60)
		snprintf(t->range, sizeof(t->range), "minute");
	else if (k == 5 && x >= 60)
		snprintf(t->range, sizeof(t->range), "second");
	if (k == 5 && !t->range[0] && t->left >= 2 && (t->p[0] == '.' || t->p[0] == ',') &&
	    isdig(t->p, t->left, 1)) {
		size_t m = 2;
		while (isdig(t->p, t->left, m))
			m++;
		tscan_skip(t, m);
	}
	return 0;
}

/* Z or ±hh:mm. */
static int scan_zone(tscan *t)
{
	size_t used = 0;
	int bad = 0, hr, mm = -1;
	if (t->left >= 1 && t->p[0] == 'Z') {
		tscan_skip(t, 1);
		return 0;
	}
	if (t->left < 6 || t->p[3] != ':')
		return 1;
	hr = getnum(t->p + 1, 2, 1, &used);
	if (hr >= 0)
		mm = getnum(t->p + 4, 2, 1, &used);
	if (hr < 0 || mm < 0)
		bad = 1;
	if (hr > 24)
		snprintf(t->range, sizeof(t->range), "time zone offset hour");
	if (mm > 60)
		snprintf(t->range, sizeof(t->range), "time zone offset minute");
	if (t->p[0] != '+' && t->p[0] != '-')
		bad = 1;
	tscan_skip(t, 6);
	return bad;
}

/* Step k's element (after its prefix). 1: not what the layout wants. */
static int scan_elem(tscan *t, size_t k)
{
	size_t used = 0;
	int x;
	switch (k) {
	case 0:
		return scan_year(t);
	case 1: /* 01 */
		if ((x = getnum(t->p, t->left, 1, &used)) < 0)
			return 1;
		t->month = x;
		tscan_skip(t, used);
		if (t->month <= 0 || t->month > 12)
			snprintf(t->range, sizeof(t->range), "month");
		return 0;
	case 2: /* 02 */
		if ((x = getnum(t->p, t->left, 1, &used)) < 0)
			return 1;
		t->day = x;
		tscan_skip(t, used);
		return 0;
	case 3:
	case 4:
	case 5:
		return scan_clock(t, k);
	default:
		return scan_zone(t);
	}
}

/* Go's parse() with the RFC 3339 layout, step by step: prefix, element, range check. */
char *st__go_time_error(const char *v, size_t n)
{
	static const struct {
		const char *prefix, *elem;
	} steps[] = {{"", "2006"}, {"-", "01"}, {"-", "02"}, {"T", "15"},
		     {":", "04"}, {":", "05"}, {"", "Z07:00"}};
	tscan t = {v, n, 0, 1, 1, ""};

	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		const char *pre = steps[k].prefix, *hold;
		size_t pl = strlen(pre), holdn;
		int bad;
		t.range[0] = '\0';
		if (t.left < pl || memcmp(t.p, pre, pl))
			return time_error(v, n, t.p, t.left, pre, NULL);
		tscan_skip(&t, pl);
		hold = t.p;
		holdn = t.left;
		bad = scan_elem(&t, k);
		if (t.range[0]) {
			char msg[80];
			snprintf(msg, sizeof(msg), ": %s out of range", t.range);
			return time_error(v, n, NULL, 0, NULL, msg);
		}
		if (bad)
			return time_error(v, n, hold, holdn, steps[k].elem, NULL);
	}
	if (t.left) {
		st_buf b;
		st_buf_init(&b);
		st_buf_adds(&b, ": extra text: ");
		time_quote(&b, t.p, t.left);
		char *msg = take(&b), *r = msg ? time_error(v, n, NULL, 0, NULL, msg) : NULL;
		free(msg);
		return r;
	}
	if (t.day < 1 || t.day > days_in(t.month, t.year))
		return time_error(v, n, NULL, 0, NULL, ": day out of range");
	return NULL;
}

/* ---- blang/semver v3.5.1 ---- */

static int only(const char *s, size_t n, const char *set)
{
	for (size_t i = 0; i < n; i++)
		if (!s[i] || !strchr(set, s[i]))
			return 0;
	return 1;
}

#define NUMBERS "0123456789"
#define ALPHANUM "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789"

static char *semver_msg(const char *fmt, const char *s, size_t n)
{
	st_buf b;
	const char *pct = strstr(fmt, "%q");
	st_buf_init(&b);
	if (!pct) {
		st_buf_adds(&b, fmt);
	} else {
		st_buf_add(&b, fmt, (size_t)(pct - fmt));
		st__go_quote(&b, s, n);
		st_buf_adds(&b, pct + 2);
	}
	return take(&b);
}

/* A dot-free part: Invalid character(s), leading zeroes, ParseUint. */
static char *semver_number(const char *what, const char *s, size_t n)
{
	char fmt[96];
	int why;
	if (!only(s, n, NUMBERS)) {
		snprintf(fmt, sizeof(fmt), "Invalid character(s) found in %s number %%q", what);
		return semver_msg(fmt, s, n);
	}
	if (n > 1 && s[0] == '0') {
		snprintf(fmt, sizeof(fmt), "%c%s number must not contain leading zeroes %%q",
			 what[0] - 'a' + 'A', what + 1);
		return semver_msg(fmt, s, n);
	}
	why = parse_uint(s, n, 10, NULL);
	return why ? num_error("ParseUint", s, n, why) : NULL;
}

static char *semver_parse(const char *s, size_t n)
{
	const char *d1, *d2, *patch, *end = s + n, *plus, *minus;
	char *e;
	if (!n)
		return semver_msg("Version string empty", NULL, 0);
	d1 = memchr(s, '.', n);
	d2 = d1 ? memchr(d1 + 1, '.', (size_t)(end - d1 - 1)) : NULL;
	if (!d2)
		return semver_msg("No Major.Minor.Patch elements found", NULL, 0);
	if ((e = semver_number("major", s, (size_t)(d1 - s))) ||
	    (e = semver_number("minor", d1 + 1, (size_t)(d2 - d1 - 1))))
		return e;
	patch = d2 + 1;
	plus = memchr(patch, '+', (size_t)(end - patch));
	minus = memchr(patch, '-', (size_t)((plus ? plus : end) - patch));
	if ((e = semver_number("patch", patch, (size_t)((minus ? minus : plus ? plus : end) - patch))))
		return e;
	if (minus) {
		const char *q = minus + 1, *qe = plus ? plus : end;
		for (;;) {
			const char *dot = memchr(q, '.', (size_t)(qe - q));
			size_t l = (size_t)((dot ? dot : qe) - q);
			if (!l)
				return semver_msg("Prerelease is empty", NULL, 0);
			if (only(q, l, NUMBERS)) {
				if (l > 1 && q[0] == '0')
					return semver_msg("Numeric PreRelease version must not contain "
							  "leading zeroes %q",
							  q, l);
				int why = parse_uint(q, l, 10, NULL);
				if (why)
					return num_error("ParseUint", q, l, why);
			} else if (!only(q, l, ALPHANUM)) {
				return semver_msg("Invalid character(s) found in prerelease %q", q, l);
			}
			if (!dot)
				break;
			q = dot + 1;
		}
	}
	if (plus) {
		const char *q = plus + 1;
		for (;;) {
			const char *dot = memchr(q, '.', (size_t)(end - q));
			size_t l = (size_t)((dot ? dot : end) - q);
			if (!l)
				return semver_msg("Build meta data is empty", NULL, 0);
			if (!only(q, l, ALPHANUM))
				return semver_msg("Invalid character(s) found in build meta data %q", q,
						  l);
			if (!dot)
				break;
			q = dot + 1;
		}
	}
	return NULL;
}

char *st__go_semver_error(const char *s, size_t n, int tolerant)
{
	char *buf, *e;
	size_t a = 0, b = n, dots = 0, len;
	if (!tolerant)
		return semver_parse(s, n);
	/* strings.TrimSpace, TrimPrefix "v", a missing patch (and minor) added as ".0" */
	while (a < b && strchr(" \t\n\r\v\f", s[a]))
		a++;
	while (b > a && strchr(" \t\n\r\v\f", s[b - 1]))
		b--;
	if (a < b && s[a] == 'v')
		a++;
	for (size_t i = a; i < b && dots < 2; i++)
		dots += s[i] == '.';
	if (dots >= 2)
		return semver_parse(s + a, b - a);
	{
		const char *last = s + a;
		for (size_t i = a; i < b; i++)
			if (s[i] == '.')
				last = s + i + 1;
		if (memchr(last, '+', (size_t)(s + b - last)) || memchr(last, '-', (size_t)(s + b - last)))
			return semver_msg("Short version cannot contain PreRelease/Build meta data",
					  NULL, 0);
	}
	len = b - a;
	buf = malloc(len + 5);
	if (!buf)
		return NULL;
	memcpy(buf, s + a, len);
	for (size_t k = dots; k < 2; k++) {
		memcpy(buf + len, ".0", 2);
		len += 2;
	}
	e = semver_parse(buf, len);
	free(buf);
	return e;
}

/* ---- resource.ParsePropertyPath (not strict) ---- */

char *st__go_property_path_error(const char *s, size_t n)
{
	const char *p = s, *e = s + n;
	if (p < e && *p == '.')
		return st_strdup("expected property path to start with a name or index");
	while (p < e) {
		if (*p == '.') {
			p++;
			if (p == e)
				return st_strdup("expected property path to end with a name or index");
		} else if (*p == '[') {
			if (e - p > 1 && p[1] == '"') {
				const char *q = p + 2;
				for (;;) {
					if (q >= e)
						return st_strdup("missing closing quote in property name");
					if (*q == '"') {
						q++;
						break;
					}
					q += (*q == '\\' && q + 1 < e && q[1] == '"') ? 2 : 1;
				}
				if (q >= e || *q != ']')
					return st_strdup("missing closing bracket in property access");
				p = q + 1;
			} else {
				const char *rb = memchr(p, ']', (size_t)(e - p));
				if (!rb)
					return st_strdup("missing closing bracket in array index");
				if (!(rb - p == 2 && p[1] == '*')) {
					int why = parse_int(p + 1, (size_t)(rb - p - 1));
					if (why) {
						char *m = num_error("ParseInt", p + 1,
								    (size_t)(rb - p - 1), why);
						char *r = m ? st_asprintf("invalid array index: %s", m)
							    : NULL;
						free(m);
						return r;
					}
				}
				p = rb + 1;
			}
		} else {
			while (p < e && *p != '.' && *p != '[')
				p++;
		}
	}
	return NULL;
}

/* ---- base64.StdEncoding ---- */

static int b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Go's decodeQuantum, for the error offset only: -1 when the input decodes. */
static long long b64_error_at(const unsigned char *src, size_t len)
{
	size_t si = 0;
	while (si < len) {
		for (int j = 0; j < 4; j++) {
			if (si == len) {
				if (j == 0)
					return -1;
				return (long long)(si - (size_t)j);
			}
			unsigned char in = src[si++];
			if (b64val(in) >= 0)
				continue;
			if (in == '\n' || in == '\r') {
				j--;
				continue;
			}
			if (in != '=')
				return (long long)(si - 1);
			if (j < 2)
				return (long long)(si - 1);
			if (j == 2) {
				while (si < len && (src[si] == '\n' || src[si] == '\r'))
					si++;
				if (si == len)
					return (long long)len;
				if (src[si] != '=')
					return (long long)(si - 1);
				si++;
			}
			while (si < len && (src[si] == '\n' || src[si] == '\r'))
				si++;
			return si < len ? (long long)si : -1;
		}
	}
	return -1;
}

char *st__go_base64_error(const char *s, size_t n)
{
	long long at = b64_error_at((const unsigned char *)s, n);
	return at < 0 ? NULL : st_asprintf("illegal base64 data at input byte %lld", at);
}

/* Each byte's value in the standard alphabet, X for any other byte. */
#define X 0xff
static const unsigned char b64tab[256] = {
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, 62, X, X, X, 63,
	52, 53, 54, 55, 56, 57, 58, 59, 60, 61, X, X, X, X, X, X,
	X, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
	15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, X, X, X, X, X,
	X, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
	41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
};
#undef X

long long st__go_base64_decode(const char *s, size_t n, unsigned char *out)
{
	const unsigned char *src = (const unsigned char *)s;
	unsigned char *o = out;
	size_t si = 0;

	/* whole quantums of the alphabet: the bulk of any input */
	while (n - si >= 4) {
		unsigned a = b64tab[src[si]], b = b64tab[src[si + 1]], c = b64tab[src[si + 2]],
			 d = b64tab[src[si + 3]];
		if ((a | b | c | d) & 0x80)
			break;
		unsigned v = a << 18 | b << 12 | c << 6 | d;
		o[0] = (unsigned char)(v >> 16);
		o[1] = (unsigned char)(v >> 8);
		o[2] = (unsigned char)v;
		o += 3;
		si += 4;
	}
	/* the rest as Go's decodeQuantum goes: new lines skipped, padding only at the end (its
	 * unused bits are not checked, as StdEncoding without Strict does not) */
	while (si < n) {
		unsigned q[4] = {0, 0, 0, 0};
		int j, dlen = 4;
		for (j = 0; j < 4; j++) {
			if (si == n) {
				if (j == 0)
					return (long long)(o - out);
				return -1;
			}
			unsigned char in = src[si++];
			if (b64tab[in] != 0xff) {
				q[j] = b64tab[in];
				continue;
			}
			if (in == '\n' || in == '\r') {
				j--;
				continue;
			}
			if (in != '=' || j < 2)
				return -1;
			if (j == 2) {
				while (si < n && (src[si] == '\n' || src[si] == '\r'))
					si++;
				if (si == n || src[si] != '=')
					return -1;
				si++;
			}
			while (si < n && (src[si] == '\n' || src[si] == '\r'))
				si++;
			if (si < n)
				return -1;
			dlen = j;
			break;
		}
		unsigned v = q[0] << 18 | q[1] << 12 | q[2] << 6 | q[3];
		*o++ = (unsigned char)(v >> 16);
		if (dlen > 2)
			*o++ = (unsigned char)(v >> 8);
		if (dlen > 3)
			*o++ = (unsigned char)v;
		if (dlen < 4)
			break;
	}
	return (long long)(o - out);
}

/* ---- config.ParseKey ---- */

int st__go_config_key_ok(const char *s, size_t n)
{
	size_t colons = 0;
	const char *c1 = NULL, *c2 = NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != ':')
			continue;
		if (!colons)
			c1 = s + i;
		else if (colons == 1)
			c2 = s + i;
		colons++;
	}
	if (colons == 1)
		return 1;
	/* namespace:config:name, the compatibility form */
	return colons == 2 && c2 - c1 - 1 == 6 && !memcmp(c1 + 1, "config", 6);
}

/* ---- Go's case folding of keys ---- */

/* Does `key` name `field` under Go's foldName (ASCII letters without case; U+017F folds to
 * 's' and U+212A to 'k'; no other rune can fold to ASCII)? */
int st__go_key_is(const char *key, size_t kl, const char *field)
{
	const unsigned char *k = (const unsigned char *)key, *e = k + kl;
	const unsigned char *f = (const unsigned char *)field;
	while (k < e && *f) {
		unsigned c = *k, want = *f;
		if (want >= 'a' && want <= 'z')
			want -= 'a' - 'A';
		if (c < 0x80) {
			if (c >= 'a' && c <= 'z')
				c -= 'a' - 'A';
			if (c != want)
				return 0;
			k++;
		} else if (e - k >= 2 && k[0] == 0xc5 && k[1] == 0xbf) {
			if (want != 'S')
				return 0;
			k += 2;
		} else if (e - k >= 3 && k[0] == 0xe2 && k[1] == 0x84 && k[2] == 0xaa) {
			if (want != 'K')
				return 0;
			k += 3;
		} else {
			return 0;
		}
		f++;
	}
	return k == e && !*f;
}
