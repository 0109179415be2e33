/*
 * The lazy load against the full load, differentially: states (fixtures' realworld, edit, move
 * and pulumi copies, and a generated one) are mutated at random (layouts: indent widths, tabs,
 * CRLF, compact, Python's ": " and ", ", trailing white space; key order, duplicate keys;
 * string escapes and invalid UTF-8; number spellings; empty containers; special values; nesting;
 * white space between tokens; BOM, truncation, trailing bytes) and each text is loaded in full
 * (st_state_load_file), lazily from the file (st__state_load_lazy), lazily from a buffer
 * (st__state_load_lazy_text) and in full from it (st_state_load_buffer: a buffer refuses bytes
 * after the document, which a file's export does not read). The file's two loads must agree,
 * and so must the buffer's: the error (code, message, pointer, file,
 * line, column), the load problems, the style, validate's report (built-in schemas and the
 * integrity rules), every span against the writer's bytes for the full resource, and the tree
 * once inflated. An edit (protect, taint, delete, rename of a random resource) on a lazy and a
 * full load must give the same result, messages, change lines and bytes (st_state_dump, and
 * st_edit_commit_save's file). A third of the cases run on two threads (a small split), one in
 * sixty is padded to 4 MiB (mapped); every tenth also compares `statetool validate FILE` with
 * `validate - <FILE` (when STATETOOL is set). doc/DESIGN.md, "Lazy states", says more.
 *
 * Each case has its own generator, seeded by (seed, case number): LAZYDIFF_SEED (default a fixed
 * one; printed), LAZYDIFF_CASES (default 300; LAZYDIFF_LONG=1: 20000, the big realworld states
 * too, the CLI on every case), LAZYDIFF_CLI_EVERY=N, LAZYDIFF_CASE=N replays case N alone
 * (LAZYDIFF_KEEP=FILE keeps its text). A difference prints the seed, the case, the base file,
 * the mutations, the text's size and checksum and the number of states it was drawn over, and
 * keeps the text in /tmp. The text is drawn from the states found, so with other fixtures
 * LAZYDIFF_CASE builds another text (a replay prints its size and checksum):
 * LAZYDIFF_TEXT=/tmp/lazydiff-SEED-CASE.json with LAZYDIFF_CASE replays the kept text with
 * the case's other draws (threads, the CLI's options, the edit: a generator of their own). A
 * CLI difference is run again at once and says whether it came again.
 */
#include "testutil.h"

#include <dirent.h>

/* ---- the generator (splitmix64) ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static size_t rn(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

/* ---- a JSON text as tokens, each with the white space before it ---- */

typedef struct tok {
	char type; /* { } [ ] : , s (string) n (number) l (literal) */
	char *text, *pre;
} tok;

typedef struct doc {
	tok *t;
	size_t n, cap;
	char *tail;
} doc;

static char *dupn(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	assert_non_null(d);
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

static void doc_free(doc *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->t[i].text);
		free(d->t[i].pre);
	}
	free(d->t);
	free(d->tail);
	memset(d, 0, sizeof(*d));
}

/* Inserts n tokens (stolen) at index at. */
static void doc_insert(doc *d, size_t at, const tok *ins, size_t n)
{
	if (d->n + n > d->cap) {
		d->cap = (d->n + n) * 2;
		d->t = realloc(d->t, d->cap * sizeof(*d->t));
		assert_non_null(d->t);
	}
	memmove(d->t + at + n, d->t + at, (d->n - at) * sizeof(*d->t));
	memcpy(d->t + at, ins, n * sizeof(*ins));
	d->n += n;
}

static void doc_remove(doc *d, size_t at, size_t n)
{
	for (size_t i = at; i < at + n; i++) {
		free(d->t[i].text);
		free(d->t[i].pre);
	}
	memmove(d->t + at, d->t + at + n, (d->n - at - n) * sizeof(*d->t));
	d->n -= n;
}

static int is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Tokenizes a valid JSON text (what it cannot read ends the token list). */
static void tokenize(doc *d, const char *s, size_t len)
{
	size_t i = 0;
	memset(d, 0, sizeof(*d));
	for (;;) {
		size_t ws = i, st;
		tok t;
		while (i < len && is_ws(s[i]))
			i++;
		if (i >= len) {
			d->tail = dupn(s + ws, i - ws);
			return;
		}
		st = i;
		t.type = s[i];
		if (strchr("{}[]:,", s[i])) {
			i++;
		} else if (s[i] == '"') {
			t.type = 's';
			for (i++; i < len && s[i] != '"'; i++)
				if (s[i] == '\\')
					i++;
			i++;
		} else {
			t.type = (s[i] == '-' || (s[i] >= '0' && s[i] <= '9')) ? 'n' : 'l';
			while (i < len && !is_ws(s[i]) && !strchr("{}[]:,", s[i]))
				i++;
		}
		if (i > len)
			i = len;
		t.pre = dupn(s + ws, st - ws);
		t.text = dupn(s + st, i - st);
		doc_insert(d, d->n, &t, 1);
	}
}

/* The index after the value starting at i. */
static size_t skip_value(const doc *d, size_t i)
{
	size_t depth = 0;
	do {
		if (i >= d->n)
			return d->n;
		if (d->t[i].type == '{' || d->t[i].type == '[')
			depth++;
		else if (d->t[i].type == '}' || d->t[i].type == ']')
			depth--;
		i++;
	} while (depth);
	return i;
}

/* The members of the object at o: the index of each key (up to max), and their count. */
static size_t members(const doc *d, size_t o, size_t *keys, size_t max)
{
	size_t i = o + 1, n = 0;
	while (i < d->n && d->t[i].type == 's') {
		if (n < max)
			keys[n] = i;
		n++;
		i = skip_value(d, i + 2);
		if (i < d->n && d->t[i].type == ',')
			i++;
		else
			break;
	}
	return n;
}

/* A random token of the type (one of `types`), or (size_t)-1. */
static size_t pick(const doc *d, const char *types)
{
	for (int tries = 0; tries < 200 && d->n; tries++) {
		size_t i = rn(d->n);
		if (strchr(types, d->t[i].type))
			return i;
	}
	return (size_t)-1;
}

/* ---- the text out: the tokens' own white space, or a layout ---- */

typedef struct layout {
	int own;            /* the tokens' own white space */
	const char *indent; /* one level (NULL: compact, one line) */
	const char *nl, *colon, *comma, *empty;
	int trailing;       /* a space at the end of each line */
	int final_nl;
} layout;

static void nl_indent(st_buf *b, const layout *l, size_t depth)
{
	if (l->trailing)
		st_buf_addc(b, ' ');
	st_buf_adds(b, l->nl);
	for (size_t i = 0; i < depth; i++)
		st_buf_adds(b, l->indent);
}

static char *emit(const doc *d, const layout *l, size_t *len)
{
	st_buf b;
	size_t depth = 0;
	st_buf_init(&b);
	for (size_t i = 0; i < d->n; i++) {
		const tok *t = &d->t[i];
		char next = i + 1 < d->n ? d->t[i + 1].type : 0;
		if (l->own) {
			st_buf_adds(&b, t->pre);
			st_buf_adds(&b, t->text);
			continue;
		}
		if ((t->type == '}' || t->type == ']') && depth)
			depth--;
		if ((t->type == '}' || t->type == ']') && l->indent && i &&
		    d->t[i - 1].type != '{' && d->t[i - 1].type != '[')
			nl_indent(&b, l, depth);
		if (t->type == ':' || (t->type == ',' && !l->indent))
			st_buf_add(&b, t->text, strlen(t->text) - 1); /* white space put before it */
		else
			st_buf_adds(&b, t->text);
		if (t->type == '{' || t->type == '[') {
			depth++;
			if (next == '}' || next == ']')
				st_buf_adds(&b, l->empty);
			else if (l->indent)
				nl_indent(&b, l, depth);
		} else if (t->type == ':') {
			st_buf_adds(&b, l->colon);
		} else if (t->type == ',') {
			if (l->indent)
				nl_indent(&b, l, depth);
			else
				st_buf_adds(&b, l->comma);
		}
	}
	if (l->own)
		st_buf_adds(&b, d->tail);
	else if (l->final_nl)
		st_buf_adds(&b, l->nl);
	return st_buf_take(&b, len);
}

static void random_layout(layout *l)
{
	static const char *const indents[] = {"    ", "  ", "\t", "   ", "        ", " ", NULL, NULL};
	static const char *const colons[] = {": ", ": ", ":", " : ", ":  ", ":\t"};
	static const char *const empties[] = {"", "", "", " ", "\n", "  "};
	memset(l, 0, sizeof(*l));
	if (rn(3) == 0) {
		l->own = 1;
		return;
	}
	l->indent = indents[rn(8)];
	l->nl = rn(4) ? "\n" : "\r\n";
	l->colon = l->indent ? colons[rn(6)] : (rn(2) ? ":" : ": ");
	l->comma = rn(2) ? "," : ", ";
	l->empty = empties[rn(6)];
	l->trailing = rn(8) == 0;
	l->final_nl = rn(4) != 0;
}

static void describe_layout(const layout *l, char *out, size_t n)
{
	if (l->own)
		snprintf(out, n, "own white space");
	else
		snprintf(out, n, "indent %zu%s%s colon %zu comma %zu empty %zu%s%s",
			 l->indent ? strlen(l->indent) : 0,
			 l->indent && l->indent[0] == '\t' ? " (tab)" : "",
			 l->indent ? "" : " (compact)", strlen(l->colon), strlen(l->comma),
			 strlen(l->empty), strcmp(l->nl, "\n") ? " CRLF" : "",
			 l->trailing ? " trailing" : "");
}

/* ---- mutations ---- */

static void set_text(tok *t, char *text)
{
	free(t->text);
	t->text = text;
}

static char *cat3(const char *a, size_t an, const char *b, const char *c)
{
	char *r = NULL;
	assert_true(asprintf(&r, "%.*s%s%s", (int)an, a, b, c) >= 0);
	return r;
}

/* A string token respelt: something inserted at a character boundary, or a letter's case
 * changed (a key Go would match case-insensitively). */
static const char *mut_string(tok *t)
{
	/* valid JSON (most of the time), then what a reader refuses or reads as U+FFFD */
	static const char *const ins[] = {
		"\xc3\xa9", "\\u00e9", "\\u00E9", "\\/", "/", "\xe2\x80\xa8", "\\u2028", "\\u2029",
		"\xf0\x9f\x98\x80", "\\ud83d\\ude00", "<", "\\u003c", "\\u003C", ">", "\\u003e", "&",
		"\\u0026", "\\b", "\\u0008", "\\f", "\\u000c", "\\u001f", "\\u001F", "\x7f",
		"\\u0041", "\\\"", "\\\\", "\\n", "\\u000a", "\\r", "\\t", "\\u0009", "\\u0000",
		"\\uffff", "\\ufffd", "\xef\xbf\xbd", "\xef\xbb\xbf", "\\ud800", "\\udc00x",
		"\\ud83d", "\\ude00",
		/* invalid from here */
		"\xff", "\xc3", "\xc0\xaf", "\xed\xa0\x80", "\t", "\\x", "\\u0", "\xf4\x90\x80\x80",
		"\xe0\x80\x80",
	};
	const size_t nvalid = 41;
	size_t len = strlen(t->text), pos[64], np = 0;
	if (len < 2 || t->text[0] != '"')
		return "string (none)";
	for (size_t i = 1; i < len; i++) {
		unsigned char c = (unsigned char)t->text[i];
		if ((c & 0xc0) == 0x80)
			continue;
		if (np < 64)
			pos[np++] = i;
		else
			pos[rn(64)] = i;
		if (c == '\\')
			i++;
	}
	size_t at = pos[rn(np)];
	if (rn(10) == 0) {
		for (size_t k = 0; k < 8; k++) {
			size_t i = 1 + rn(len - 1);
			char c = t->text[i];
			if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
				t->text[i] = (char)(c ^ 0x20);
				return "string: a letter's case";
			}
		}
	}
	const char *what = ins[rn(4) ? rn(nvalid) : rn(sizeof(ins) / sizeof(*ins))];
	set_text(t, cat3(t->text, at, what, t->text + at));
	return "string: an insertion";
}

static const char *mut_number(tok *t)
{
	static const char *const nums[] = {
		"1.0", "1e3", "1E+2", "1e+2", "-0", "0", "-0.0", "0.0", "1.5e-7", "1.5E-7", "0.000001",
		"0.0000001", "1e21", "1e+21", "1e20", "123456789012345680", "12345678901234567890",
		"9007199254740993", "0.30000000000000004", "0.1", "1.0000000000000002", "5e-324",
		"4.9e-324", "1e-400", "1.7976931348623157e+308", "2.50", "100", "1E2", "1e-7", "1e-6",
		"123456789012345", "1234567890123456", "0.1234567890123456", "12.5", "-12.5e1", "1e0",
		"2e-0", "-1", "18446744073709551616", "100000000000000000000", "1e22", "0.00001",
		"1.25e-5",
		/* invalid from here */
		"1e400", "-1e400", "00", "01", "1.", ".5", "+1", "-", "1e",
	};
	const size_t nvalid = 43;
	if (t->type == 'n' && rn(3) == 0) {
		/* the same value spelt otherwise */
		static const char *const tails[] = {"e0", "E0", ".0", "0e-1", "e+0", ".00"};
		const char *tail = tails[rn(6)];
		int has_point = strchr(t->text, '.') || strchr(t->text, 'e') || strchr(t->text, 'E');
		if (has_point && tail[0] == '.')
			tail = "e0";
		set_text(t, cat3(t->text, strlen(t->text), tail, ""));
		return "number: respelt";
	}
	set_text(t, strdup(nums[rn(4) ? rn(nvalid) : rn(sizeof(nums) / sizeof(*nums))]));
	return "number: another";
}

/* Tokens of a JSON text (valid) to put somewhere. */
static void snippet(doc *d, const char *text)
{
	tokenize(d, text, strlen(text));
}

/* Replaces the value starting at v with the snippet's tokens. */
static void replace_value(doc *d, size_t v, const char *text)
{
	doc s;
	size_t e = skip_value(d, v);
	snippet(&s, text);
	doc_remove(d, v, e - v);
	doc_insert(d, v, s.t, s.n);
	free(s.t);
	free(s.tail);
}

static const char *const specials[] = {
	"{\"4dabf18193072939515e22adb298388d\":\"1b47061264138c4ac30d75fd1eb44270\","
	"\"ciphertext\":\"v1:abc\"}",
	"{\"4dabf18193072939515e22adb298388d\":\"1b47061264138c4ac30d75fd1eb44270\","
	"\"plaintext\":\"\\\"x\\\"\"}",
	"{\"ciphertext\":\"v1:abc\",\"4dabf18193072939515e22adb298388d\":"
	"\"1b47061264138c4ac30d75fd1eb44270\"}",
	"{\"4dabf18193072939515e22adb298388d\":\"c44067f5952c0a294b673a41bacd8c17\","
	"\"hash\":\"abc\",\"text\":\"hi\"}",
	"{\"4dabf18193072939515e22adb298388d\":\"0def7320c3a5731c473e5ecbe6d01bc7\","
	"\"assets\":{\"a\":{\"4dabf18193072939515e22adb298388d\":"
	"\"c44067f5952c0a294b673a41bacd8c17\",\"path\":\"p\"}}}",
	"{\"4dabf18193072939515e22adb298388d\":\"5cf8f73096256a8f31e491e813e4eb8e\","
	"\"urn\":\"urn:pulumi:dev::p::t:m:R::r\"}",
	"{\"4dabf18193072939515e22adb298388d\":\"d0e6a833031e9bbcd3f4e8bde6ca49a4\","
	"\"known\":true,\"value\":1}",
	"{\"4dabf18193072939515e22adb298388d\":\"nope\"}",
	"{\"4dabf18193072939515e22adb298388d\":1}",
	"{\"4dabf18193072939515e22adb298388d\":\"803fd3297a5875dc03ca845dda5d2a98\","
	"\"value\":\"aGk=\"}",
	"[1,{\"4dabf18193072939515e22adb298388d\":\"1b47061264138c4ac30d75fd1eb44270\","
	"\"ciphertext\":\"x\"},{\"a\":[]}]",
	"{\"a\":{},\"b\":[],\"c\":[{}],\"d\":{\"e\":[[]]}}",
	"{\"b\":1,\"a\":2}",
	"{\"a\":1,\"a\":1}",
	"true", "null", "\"true\"", "[]", "{}", "0", "\"\"",
};

/* The value after a random colon: replaced (a special value, ...) or wrapped in arrays. */
static const char *mut_value(doc *d)
{
	size_t c = pick(d, ":");
	if (c == (size_t)-1)
		return "value (none)";
	if (rn(4) == 0) {
		/* nesting: a few arrays, or to the parse limit's edge */
		size_t k = rn(3) ? 1 + rn(4) : 10000 - rn(14);
		size_t e = skip_value(d, c + 1);
		tok o = {'l', malloc(k + 1), strdup("")}, x = {'l', malloc(k + 1), strdup("")};
		assert_non_null(o.text);
		assert_non_null(x.text);
		/* one token each way (a layout does not indent them) */
		memset(o.text, '[', k);
		memset(x.text, ']', k);
		o.text[k] = x.text[k] = '\0';
		doc_insert(d, e, &x, 1);
		doc_insert(d, c + 1, &o, 1);
		return k > 10 ? "value: nested to the limit" : "value: nested";
	}
	replace_value(d, c + 1, specials[rn(sizeof(specials) / sizeof(*specials))]);
	return "value: replaced";
}

/* Two members of an object swapped, or one duplicated. */
static const char *mut_members(doc *d, int dup)
{
	size_t keys[256];
	for (int tries = 0; tries < 50; tries++) {
		size_t o = pick(d, "{"), n;
		if (o == (size_t)-1)
			break;
		n = members(d, o, keys, 256);
		if (n > 256 || n < (dup ? 1u : 2u))
			continue;
		size_t j = rn(dup ? n : n - 1), a = keys[j], ae = skip_value(d, a + 2);
		if (dup) {
			tok *copy = malloc((ae - a + 1) * sizeof(*copy));
			assert_non_null(copy);
			copy[0] = (tok){',', strdup(","), strdup("")};
			for (size_t i = a; i < ae; i++)
				copy[i - a + 1] = (tok){d->t[i].type, strdup(d->t[i].text),
							 strdup(d->t[i].pre)};
			doc_insert(d, ae, copy, ae - a + 1);
			free(copy);
			return "members: a duplicate";
		}
		size_t b = keys[j + 1], be = skip_value(d, b + 2);
		size_t la = ae - a, lb = be - b, gap = b - ae;
		tok *tmp = malloc((be - a) * sizeof(*tmp));
		assert_non_null(tmp);
		memcpy(tmp, d->t + b, lb * sizeof(*tmp));
		memcpy(tmp + lb, d->t + ae, gap * sizeof(*tmp));
		memcpy(tmp + lb + gap, d->t + a, la * sizeof(*tmp));
		memcpy(d->t + a, tmp, (be - a) * sizeof(*tmp));
		free(tmp);
		return "members: two swapped";
	}
	return "members (none)";
}

static const char *mutate(doc *d)
{
	size_t i;
	switch (rn(10)) {
	case 0:
	case 1:
	case 2:
		i = pick(d, "s");
		return i == (size_t)-1 ? "string (none)" : mut_string(&d->t[i]);
	case 3:
	case 4:
		i = pick(d, rn(4) ? "n" : "nls");
		return i == (size_t)-1 ? "number (none)" : mut_number(&d->t[i]);
	case 5:
		return mut_value(d);
	case 6:
		return mut_members(d, 0);
	case 7:
		return mut_members(d, 1);
	case 8:
		i = pick(d, "{}[]:,snl");
		if (i != (size_t)-1) {
			static const char *const ws[] = {" ", "\t", "\n", "\r", "\r\n", "  "};
			set_text(&d->t[i], cat3("", 0, ws[rn(6)], d->t[i].text));
		}
		return "white space between tokens";
	default:
		i = pick(d, "l");
		if (i == (size_t)-1)
			return "literal (none)";
		static const char *const lits[] = {"true", "false", "null", "\"null\"", "0", "{}",
						   "nul", "True"};
		set_text(&d->t[i], strdup(lits[rn(8)]));
		return "literal: another";
	}
}

/* ---- the comparisons ---- */

/* the states the cases are made from (see "the states" below) */
typedef struct base {
	char *name, *text;
	size_t len;
} base;

static base *bases;
static size_t nbases;

static st_schema *schema;
static char *tmp;             /* the cases' directory */
static long failures, cases, lazy_cases, edits_done, edits_written, two_cases, mapped_cases;
static unsigned long long cli_every; /* the CLI compared every that many cases (0: never) */
static st_load_opts load_opts; /* the case's: threads 2 (and a small split) or automatic */

typedef struct kase {
	unsigned long long seed;
	long number;
	const char *base;
	char steps[512];
	const char *text;
	size_t len;
} kase;

/* The text's FNV-1a: a replay says whether it built the text that differed (LAZYDIFF_CASE
 * draws the base among the states found, so another set of fixtures makes another text). */
static uint64_t text_sum(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

static void differ(const kase *k, const char *fmt, ...)
{
	char path[512];
	va_list ap;
	snprintf(path, sizeof(path), "/tmp/lazydiff-%llu-%ld.json", k->seed, k->number);
	tu_write(path, k->text, k->len);
	fprintf(stderr, "lazydiff: DIFFERENCE (LAZYDIFF_SEED=%llu LAZYDIFF_CASE=%ld; text %zu bytes, "
		"sum %016llx, drawn over %zu states) base %s, %s: ",
		k->seed, k->number, k->len, (unsigned long long)text_sum(k->text, k->len), nbases,
		k->base, k->steps);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n  text kept in %s\n", path);
	failures++;
}

static int same_error(const kase *k, const char *what, int ra, const st_error *a, int rb,
		      const st_error *b)
{
	if (ra != rb) {
		differ(k, "%s: rc %d (%s) vs %d (%s)", what, ra, a->message, rb, b->message);
		return 0;
	}
	if (ra == ST_OK)
		return 1;
	if (strcmp(a->message, b->message) || strcmp(a->pointer, b->pointer) ||
	    strcmp(a->file, b->file) || a->line != b->line || a->column != b->column ||
	    a->code != b->code) {
		differ(k, "%s: error '%s' at %s %s:%d:%d vs '%s' at %s %s:%d:%d", what, a->message,
		       a->pointer, a->file, a->line, a->column, b->message, b->pointer, b->file,
		       b->line, b->column);
		return 0;
	}
	return 1;
}

static int same_problems(const kase *k, const char *what, const st_problems *a,
			 const st_problems *b)
{
	for (size_t i = 0; i < a->count || i < b->count; i++) {
		const st_problem *x = i < a->count ? &a->items[i] : NULL;
		const st_problem *y = i < b->count ? &b->items[i] : NULL;
		if (!x || !y || x->severity != y->severity || strcmp(x->rule, y->rule) ||
		    strcmp(x->pointer, y->pointer) || strcmp(x->message, y->message) ||
		    (!x->urn != !y->urn) || (x->urn && strcmp(x->urn, y->urn))) {
			differ(k, "%s: problem %zu: %s %s '%s' vs %s %s '%s'", what, i,
			       x ? x->rule : "(none)", x ? x->pointer : "", x ? x->message : "",
			       y ? y->rule : "(none)", y ? y->pointer : "", y ? y->message : "");
			return 0;
		}
	}
	return 1;
}

/* Every span of the lazy state is the writer's text for the full state's resource. */
static int same_spans(const kase *k, st_state *lz, st_state *fl)
{
	json_t *lres = st_state_resources(lz, 0), *fres = st_state_resources(fl, 0);
	size_t depth = st_state_envelope(fl) == ST_ENVELOPE_EXPORT ? 3 : 4;
	if (json_array_size(lres) != json_array_size(fres)) {
		differ(k, "resources: %zu vs %zu", json_array_size(lres), json_array_size(fres));
		return 0;
	}
	for (size_t i = 0; i < json_array_size(lres); i++) {
		const char *p;
		size_t len;
		st_buf b;
		int ok;
		if (!st__lazy_span(lz, json_array_get(lres, i), &p, &len))
			continue;
		st_buf_init(&b);
		ok = st__json_write_at(&b, json_array_get(fres, i), st_state_style(fl), ST_K_RESOURCE,
				       depth) == ST_OK &&
		     b.len == len && !memcmp(b.data, p, len);
		st_buf_free(&b);
		if (!ok) {
			differ(k, "the span of resource %zu is not the writer's text", i);
			return 0;
		}
	}
	return 1;
}


/* A lazy state against the full one: problems, style, spans, validate, the inflated tree. */
static void same_state(const kase *k, const char *what, st_state *lz, st_state *fl)
{
	st_problems pl = {0}, pf = {0};
	st_validate_opts o = ST_VALIDATE_OPTS_INIT;
	int rl, rf;

	if (!same_problems(k, what, st_state_load_problems(lz), st_state_load_problems(fl)))
		return;
	if (memcmp(st_state_style(lz), st_state_style(fl), sizeof(st_style))) {
		differ(k, "%s: the style", what);
		return;
	}
	if (!same_spans(k, lz, fl))
		return;
	o.schema = schema;
	rl = st_validate(lz, &o, &pl, NULL);
	rf = st_validate(fl, &o, &pf, NULL);
	if (rl != rf)
		differ(k, "%s: validate rc %d vs %d", what, rl, rf);
	else
		same_problems(k, what, &pl, &pf);
	st_problems_clear(&pl);
	st_problems_clear(&pf);
	if (st__lazy_inflate_all(lz, NULL) != ST_OK || st__lazy_count(lz) != 0 ||
	    !st__json_equal(st_state_root(lz), st_state_root(fl))) {
		char a[512], b[512];
		snprintf(a, sizeof(a), "/tmp/lazydiff-%llu-%ld.lazy-tree", k->seed, k->number);
		snprintf(b, sizeof(b), "/tmp/lazydiff-%llu-%ld.full-tree", k->seed, k->number);
		json_dump_file(st_state_root(lz), a, JSON_INDENT(1) | JSON_SORT_KEYS);
		json_dump_file(st_state_root(fl), b, JSON_INDENT(1) | JSON_SORT_KEYS);
		differ(k, "%s: the tree once inflated (both in %s, %s)", what, a, b);
	}
}

/* A case on two threads: the full load of the file on one thread must be the same (the split's
 * result is the sequential one: the error, the load problems in order, the style, the tree).
 * Both lazy and full loads of the case split alike, so only this sees a split that differs. */
static long one_thread_cases;

static void compare_one_thread(const kase *k, const char *path, int r2, const st_error *e2,
			       st_state *s2)
{
	st_load_opts one = load_opts;
	st_state *s1 = NULL;
	st_error e1;

	one.threads = 1;
	st_error_clear(&e1);
	int r1 = st_state_load_file(&s1, path, &one, &e1);
	one_thread_cases++;
	if (same_error(k, "two threads vs one", r2, e2, r1, &e1) && r1 == ST_OK &&
	    same_problems(k, "two threads vs one", st_state_load_problems(s2),
			  st_state_load_problems(s1))) {
		if (memcmp(st_state_style(s2), st_state_style(s1), sizeof(st_style)))
			differ(k, "two threads vs one: the style");
		else if (!st__json_equal(st_state_root(s2), st_state_root(s1)))
			differ(k, "two threads vs one: the tree");
	}
	st_state_free(s1);
}

/* The loads of the case's file; the number of resources when they load. A file's and a
 * buffer's differ only after the document (a file's export reads the first value, as
 * `pulumi stack import`; a buffer, a backend's object, refuses what follows), so the lazy
 * text is compared with the full load of the buffer when they differ there. */
static size_t compare_loads(const kase *k, const char *path)
{
	size_t nres = 0;
	st_state *fl = NULL, *lf = NULL, *lt = NULL, *fb = NULL;
	st_error ef, elf, elt, eb;
	int rf, rlf, rlt, rb;

	st_error_clear(&ef);
	st_error_clear(&elf);
	st_error_clear(&elt);
	st_error_clear(&eb);
	rf = st_state_load_file(&fl, path, &load_opts, &ef);
	rlf = st__state_load_lazy(&lf, path, &load_opts, &elf);
	rlt = st__state_load_lazy_text(&lt, dupn(k->text, k->len), k->len, path, &load_opts, &elt);
	rb = st_state_load_buffer(&fb, k->text, k->len, path, &load_opts, &eb);
	if (load_opts.threads == 2)
		compare_one_thread(k, path, rf, &ef, fl);
	if (same_error(k, "lazy file vs full", rlf, &elf, rf, &ef) &&
	    same_error(k, "lazy text vs full buffer", rlt, &elt, rb, &eb) && rf == ST_OK) {
		if (st__lazy_count(lf))
			lazy_cases++;
		same_state(k, "lazy file", lf, fl);
		if (rb == ST_OK)
			same_state(k, "lazy text", lt, fb);
		nres = json_array_size(st_state_resources(fl, 0));
	}
	st_state_free(fl);
	st_state_free(lf);
	st_state_free(lt);
	st_state_free(fb);
	return nres;
}

/* ---- the CLI: validate FILE (lazy) against validate - <FILE (always in full) ---- */

static long cli_cases;

/* The output (stdout and stderr, then the exit code) of a shell command; new. */
static char *shell_out(const char *cmd)
{
	FILE *f = popen(cmd, "r");
	st_buf b;
	char chunk[4096];
	size_t n;
	st_buf_init(&b);
	assert_non_null(f);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		st_buf_add(&b, chunk, n);
	st_buf_printf(&b, "exit %d\n", pclose(f));
	return st_buf_take(&b, NULL);
}

/* Every "<stdin>" of s as `name`; new. */
static char *as_named(const char *s, const char *name)
{
	st_buf b;
	const char *q;
	st_buf_init(&b);
	while ((q = strstr(s, "<stdin>")) != NULL) {
		st_buf_add(&b, s, (size_t)(q - s));
		st_buf_adds(&b, name);
		s = q + 7;
	}
	st_buf_adds(&b, s);
	return st_buf_take(&b, NULL);
}

/* `statetool validate FILE` (*lz) and `validate - <FILE` (*named, its "<stdin>" as FILE); new. */
static void cli_pair(const char *st, const char *path, const char *opts, char **lz, char **named)
{
	char *cmd = NULL, *fl;
	assert_true(asprintf(&cmd, "'%s' validate %s '%s' 2>&1", st, opts, path) > 0);
	*lz = shell_out(cmd);
	free(cmd);
	assert_true(asprintf(&cmd, "'%s' validate %s - <'%s' 2>&1", st, opts, path) > 0);
	fl = shell_out(cmd);
	free(cmd);
	*named = as_named(fl, path);
	free(fl);
}

/*
 * A difference is run again at once: one that does not come again is a race or the runs'
 * surroundings (they share nothing but the file and the binaries: a binary rebuilt between
 * them, a process killed). Both runs' outputs are kept beside the text,
 * /tmp/lazydiff-SEED-CASE.cli.
 */
static void compare_cli(const kase *k, const char *path, const char *opts)
{
	const char *st = getenv("STATETOOL");
	char *lz, *named, *lz2, *named2, keep[512];
	const char *again;
	st_buf b;

	if (!st || !*st)
		return;
	cli_pair(st, path, opts, &lz, &named);
	cli_cases++;
	if (!strcmp(lz, named)) {
		free(lz);
		free(named);
		return;
	}
	cli_pair(st, path, opts, &lz2, &named2);
	again = strcmp(lz2, named2)	? "it came again"
		: !strcmp(named, named2) ? "not again (the lazy run's output changed)"
		: !strcmp(lz, lz2)	? "not again (the full run's output changed)"
					: "not again (both runs' outputs changed)";
	snprintf(keep, sizeof(keep), "/tmp/lazydiff-%llu-%ld.cli", k->seed, k->number);
	st_buf_init(&b);
	st_buf_printf(&b, "validate %s FILE\n%s-- validate %s - <FILE\n%s-- again: %s\n%s-- and\n%s",
		      opts, lz, opts, named, again, lz2, named2);
	tu_write(keep, b.data, b.len);
	st_buf_free(&b);
	differ(k, "statetool validate %s: lazily\n%s  from standard input\n%s  run again at once: %s "
		  "(both runs' outputs in %s)",
	       opts, lz, named, again, keep);
	free(lz);
	free(named);
	free(lz2);
	free(named2);
}

/* ---- the edits ---- */

typedef struct outcome {
	int rc;
	st_error err;
	st_buf said; /* change lines, the diff, commit problems */
	char *bytes; /* the state dumped, or the file saved */
	size_t len;
} outcome;

static int one_op(st_edit *e, int op, size_t index, st_error *err)
{
	st_handle h;
	int rc = st_edit_handle_at(e, index, &h, err);
	if (rc != ST_OK)
		return rc;
	switch (op) {
	case 0:
		return st_edit_set_flag(e, &h, 1, "protect", 1, NULL, err);
	case 1:
		return st_edit_set_flag(e, &h, 1, "taint", 1, NULL, err);
	case 2:
		return st_edit_set_flag(e, &h, 1, "protect", 0, NULL, err);
	case 3:
		return st_edit_delete(e, &h, 1, 0, NULL, err);
	case 4:
		return st_edit_delete(e, &h, 1, ST_DELETE_FORCE | ST_DELETE_TARGET_DEPENDENTS, NULL,
				      err);
	default:
		return st_edit_rename(e, h, "renamed-by-lazydiff", err);
	}
}

static void say_diff(st_buf *b, const st_changes *ch, const st_diff *d, const st_problems *p)
{
	for (size_t i = 0; i < ch->count; i++)
		st_buf_printf(b, "change %s\n", ch->lines[i]);
	for (size_t i = 0; i < d->count; i++) {
		st_buf_printf(b, "diff %c %s", d->items[i].kind, d->items[i].urn);
		for (size_t f = 0; f < d->items[i].nfields; f++)
			st_buf_printf(b, " %s", d->items[i].fields[f]);
		st_buf_addc(b, '\n');
	}
	st_buf_printf(b, "pending %zu %zu other %d\n", d->pending_before, d->pending_after,
		      d->other_changed);
	for (size_t i = 0; p && i < p->count; i++)
		st_buf_printf(b, "problem %s %s %s\n", p->items[i].rule, p->items[i].pointer,
			      p->items[i].message);
}

/* The case's file loaded (lazily or not), one edit, committed and dumped (or saved). */
static void edit_once(const kase *k, const char *path, int lazy, int op, size_t index, int save,
		      outcome *o)
{
	st_state *s = NULL;
	st_edit *e = NULL;
	st_changes ch = {0};
	st_diff d = {0};
	st_problems p = {0};
	int written = 0;

	memset(o, 0, sizeof(*o));
	st_buf_init(&o->said);
	st_error_clear(&o->err);
	tu_write(path, k->text, k->len);
	o->rc = lazy ? st__state_load_lazy(&s, path, &load_opts, &o->err)
		     : st_state_load_file(&s, path, &load_opts, &o->err);
	if (o->rc == ST_OK)
		o->rc = st_edit_begin(&e, s, &ch, &o->err);
	if (o->rc == ST_OK)
		o->rc = one_op(e, op, index, &o->err);
	if (o->rc == ST_OK && save)
		o->rc = st_edit_commit_save(e, NULL, NULL, 0, &d, &p, &written, &o->err);
	else if (o->rc == ST_OK)
		o->rc = st_edit_commit(e, &d, &p, &o->err);
	say_diff(&o->said, &ch, &d, &p);
	if (o->rc == ST_OK && save)
		o->bytes = tu_read(path, &o->len);
	else if (o->rc == ST_OK && st_state_dump(s, NULL, &o->bytes, &o->len, &o->err) != ST_OK)
		o->rc = -1000;
	st_buf_printf(&o->said, "written %d\n", written);
	st_edit_free(e);
	st_changes_clear(&ch);
	st_diff_clear(&d);
	st_problems_clear(&p);
	st_state_free(s);
}

static void compare_edit(const kase *k, const char *path, size_t nres)
{
	static const char *const ops[] = {"protect", "taint", "unprotect", "delete",
					  "delete --force --target-dependents", "rename"};
	int op = (int)rn(6), save = rn(3) == 0;
	size_t index = rn(nres);
	outcome l, f;
	char what[128];

	edit_once(k, path, 1, op, index, save, &l);
	edit_once(k, path, 0, op, index, save, &f);
	snprintf(what, sizeof(what), "%s of resource %zu%s", ops[op], index,
		 save ? " (saved)" : "");
	if (same_error(k, what, l.rc, &l.err, f.rc, &f.err)) {
		if (l.said.len != f.said.len || memcmp(l.said.data, f.said.data, l.said.len))
			differ(k, "%s: lazily\n%.*s  in full\n%.*s", what, (int)l.said.len,
			       l.said.data, (int)f.said.len, f.said.data);
		else if (l.len != f.len || (l.len && memcmp(l.bytes, f.bytes, l.len)))
			differ(k, "%s: the bytes written (%zu vs %zu)", what, l.len, f.len);
	}
	edits_done++;
	if (f.rc == ST_OK)
		edits_written++;
	st_buf_free(&l.said);
	st_buf_free(&f.said);
	free(l.bytes);
	free(f.bytes);
}

/* ---- the states ---- */

static void add_base(const char *name, char *text, size_t len)
{
	bases = realloc(bases, (nbases + 1) * sizeof(*bases));
	assert_non_null(bases);
	bases[nbases].name = strdup(name);
	bases[nbases].text = text;
	bases[nbases].len = len;
	nbases++;
}

static void add_dir(const char *rel, size_t max_size)
{
	char *dir = tu_fixture(rel);
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		size_t nl = strlen(names[i]->d_name), len = 0;
		char *p = NULL, *text;
		if (nl > 5 && !strcmp(names[i]->d_name + nl - 5, ".json")) {
			assert_true(asprintf(&p, "%s/%s", dir, names[i]->d_name) > 0);
			text = tu_read(p, &len);
			assert_non_null(text);
			if (len <= max_size)
				add_base(p + strlen(FIXTURES) + 1, text, len);
			else
				free(text);
			free(p);
		}
		free(names[i]);
	}
	free(names);
	free(dir);
}

/* A state of values the writer has to escape and spell: written by the writer, so lazy. */
static void add_generated(void)
{
	json_t *res = json_array(), *root;
	char *text = NULL;
	size_t len;
	st_state *s = NULL;
	static const char *const strs[] = {"plain", "caf\xc3\xa9", "\xf0\x9f\x98\x80 emoji",
					   "<tag> & more", "line\nbreak\ttab", "\xe2\x80\xa8sep",
					   "quote \" and \\ back", "\x01\x08\x0c\x1f", "/slash/",
					   ""};
	json_array_append_new(res, json_pack("{s:s,s:b,s:s}", "urn",
					     "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev", "custom",
					     0, "type", "pulumi:pulumi:Stack"));
	for (int i = 0; i < 12; i++) {
		char urn[128];
		snprintf(urn, sizeof(urn), "urn:pulumi:dev::p::t:m:R::r%d", i);
		json_t *in = json_pack(
			"{s:s,s:i,s:f,s:f,s:[s,i,{s:o}],s:{},s:[],s:{s:{s:{s:n}}},s:b,s:I}", "s",
			strs[i % 10], "i", i * 1000 - 5, "f", i * 0.1 + 0.2, "g", 1e21 * (i + 1),
			"list", strs[(i + 3) % 10], i, "k", json_real(1.5e-7 * i), "empty", "none",
			"deep", "a", "b", "c", "t", i % 2, "big", (json_int_t)9007199254740993LL);
		json_array_append_new(
			res, json_pack("{s:s,s:b,s:s,s:s,s:o,s:O,s:s,s:[s]}", "urn", urn, "custom", 1,
				       "id", strs[i % 10], "type", "t:m:R", "inputs", in, "outputs",
				       in, "parent", "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev",
				       "dependencies", i ? "urn:pulumi:dev::p::t:m:R::r0" : ""));
	}
	root = json_pack("{s:i,s:{s:{s:s,s:s,s:s},s:o}}", "version", 3, "deployment", "manifest",
			 "time", "2026-01-01T00:00:00Z", "magic", "", "version", "v3.0.0",
			 "resources", res);
	text = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	assert_int_equal(st_state_load_buffer(&s, text, strlen(text), "gen", NULL, NULL), ST_OK);
	free(text);
	assert_int_equal(st_state_dump(s, NULL, &text, &len, NULL), ST_OK);
	st_state_free(s);
	add_base("(generated)", text, len);
}

static void free_bases(void)
{
	for (size_t i = 0; i < nbases; i++) {
		free(bases[i].name);
		free(bases[i].text);
	}
	free(bases);
	bases = NULL;
	nbases = 0;
}

/* ---- the cases ---- */

/* A resource with a 4 MiB output appended to the resources: the file is mapped, not read, and
 * a save copies the unchanged resources from it (copy_file_range). 0 when there is no array. */
static int pad(doc *d)
{
	for (size_t i = 0; i + 2 < d->n; i++) {
		if (d->t[i].type != 's' || strcmp(d->t[i].text, "\"resources\"") ||
		    d->t[i + 2].type != '[')
			continue;
		size_t close = skip_value(d, i + 2) - 1;
		st_buf b;
		doc s;
		st_buf_init(&b);
		if (close != i + 3)
			st_buf_addc(&b, ',');
		st_buf_adds(&b, "{\"urn\":\"urn:pulumi:dev::p::t:m:Pad::pad\",\"custom\":true,"
				"\"id\":\"pad\",\"type\":\"t:m:Pad\",\"outputs\":{\"pad\":\"");
		for (size_t k = 0; k < (4u << 20) / 64; k++)
			st_buf_adds(&b, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
		st_buf_adds(&b, "\"}}");
		tokenize(&s, b.data, b.len);
		st_buf_free(&b);
		doc_insert(d, close, s.t, s.n);
		free(s.t);
		free(s.tail);
		return 1;
	}
	return 0;
}

/* LAZYDIFF_CASE's replay, and LAZYDIFF_TEXT's file (the case's text replaced), or NULL */
static int replay_one;
static const char *replay_text;

static unsigned long long env_num(const char *name, unsigned long long dflt)
{
	const char *v = getenv(name);
	return v && *v ? strtoull(v, NULL, 10) : dflt;
}

/* Case `number`'s text: a base, up to three mutations, a layout, and now and then a BOM, a
 * truncation or bytes after the document. */
static char *make_case(kase *k, size_t *len)
{
	doc d;
	layout l;
	const base *b = &bases[rn(nbases)];
	size_t nmut = rn(4), at = 0;
	char *text, lay[256];

	k->base = b->name;
	tokenize(&d, b->text, b->len);
	for (size_t i = 0; i < nmut; i++)
		at += (size_t)snprintf(k->steps + at, sizeof(k->steps) - at, "%s; ", mutate(&d));
	if (rn(60) == 0 && pad(&d)) {
		at += (size_t)snprintf(k->steps + at, sizeof(k->steps) - at, "padded to 4 MiB; ");
		mapped_cases++;
	}
	random_layout(&l);
	describe_layout(&l, lay, sizeof(lay));
	at += (size_t)snprintf(k->steps + at, sizeof(k->steps) - at, "%s", lay);
	text = emit(&d, &l, len);
	doc_free(&d);
	if (rn(40) == 0) {
		char *t = cat3("\xef\xbb\xbf", 3, text, "");
		free(text);
		text = t;
		*len += 3;
		at += (size_t)snprintf(k->steps + at, sizeof(k->steps) - at, "; BOM");
	}
	if (rn(30) == 0) {
		static const char *const after[] = {" ", "\n\n", "x", "{}", "\r\n", "\t"};
		const char *a = after[rn(6)];
		char *t = cat3(text, *len, a, "");
		free(text);
		text = t;
		*len += strlen(a);
		at += (size_t)snprintf(k->steps + at, sizeof(k->steps) - at, "; bytes after");
	}
	if (rn(25) == 0 && *len) {
		*len = rn(*len);
		snprintf(k->steps + at, sizeof(k->steps) - at, "; truncated at %zu", *len);
	}
	return text;
}

static void run_case(unsigned long long seed, long number)
{
	kase k = {seed, number, NULL, "", NULL, 0};
	char *path = NULL, *text;
	size_t len = 0, nres;

	rng_state = seed * 0x2545f4914f6cdd1dull + (unsigned long long)number * 0x9e3779b97f4a7c15ull;
	rnd();
	text = make_case(&k, &len);
	if (replay_text) {
		free(text);
		text = tu_read(replay_text, &len);
		assert_non_null(text);
		k.base = replay_text;
		snprintf(k.steps, sizeof(k.steps), "as it stands");
	}
	/* the rest of the case (threads, the CLI's options, the edit) drawn whatever the text
	 * was made of: a kept text replays with them (LAZYDIFF_TEXT) when the fixtures changed */
	rng_state = (seed * 0x9e3779b97f4a7c15ull + (unsigned long long)number) ^ 0x5851f42d4c957f2dull;
	rnd();
	load_opts = (st_load_opts)ST_LOAD_OPTS_INIT;
	if (rn(3) == 0) {
		/* the reader's split on two threads, the lazy scan on both */
		load_opts.threads = 2;
		st__json_split_test(64);
		strncat(k.steps, "; two threads", sizeof(k.steps) - strlen(k.steps) - 1);
		two_cases++;
	}
	k.text = text;
	k.len = len;
	if (replay_one)
		printf("lazydiff: case %ld: text %zu bytes, sum %016llx, base %s, %s\n", number, len,
		       (unsigned long long)text_sum(text, len), k.base, k.steps);
	assert_true(asprintf(&path, "%s/case.json", tmp) > 0);
	tu_write(path, text, len);
	if (getenv("LAZYDIFF_KEEP"))
		tu_write(getenv("LAZYDIFF_KEEP"), text, len);
	nres = compare_loads(&k, path);
	/* (drawn on every case, so that a case replays with the same edit whatever the knobs) */
	const char *cli_opts = rn(2) ? "" : "--json";
	if (cli_every && number % (long)cli_every == 0)
		compare_cli(&k, path, cli_opts);
	/* (the writer's indented text of a value nested 10,000 deep is 200 MB: no edit then) */
	if (nres && !strstr(k.steps, "to the limit"))
		compare_edit(&k, path, nres);
	st__json_split_test(0);
	cases++;
	free(path);
	free(text);
}

static void test_lazydiff(void **state)
{
	int lng = getenv("LAZYDIFF_LONG") && strcmp(getenv("LAZYDIFF_LONG"), "0");
	unsigned long long seed = env_num("LAZYDIFF_SEED", 20261124);
	long n = (long)env_num("LAZYDIFF_CASES", lng ? 20000 : 300);
	const char *one = getenv("LAZYDIFF_CASE");
	(void)state;
	replay_one = one && *one;
	replay_text = replay_one && getenv("LAZYDIFF_TEXT") && *getenv("LAZYDIFF_TEXT")
			      ? getenv("LAZYDIFF_TEXT")
			      : NULL;
	cli_every = env_num("LAZYDIFF_CLI_EVERY", lng ? 1 : 10);

	add_dir("realworld", lng ? (size_t)-1 : 200000);
	add_dir("edit", (size_t)-1);
	add_dir("move", (size_t)-1);
	add_dir("pulumi", 200000);
	add_generated();
	tmp = tu_tmpdir();
	printf("lazydiff: seed %llu, %ld cases over %zu states (LAZYDIFF_SEED, LAZYDIFF_CASES, "
	       "LAZYDIFF_CASE=N to replay one, LAZYDIFF_TEXT=FILE its text, LAZYDIFF_LONG=1)\n",
	       seed, replay_one ? 1 : n, nbases);
	unsigned long splits0 = st__json_splits();
	if (replay_one)
		run_case(seed, atol(one));
	else
		for (long c = 0; c < n && failures < 20; c++)
			run_case(seed, c);
	printf("lazydiff: %ld cases (%ld loaded lazily in part, %ld on two threads, %ld mapped), "
	       "%ld edits (%ld written), %ld CLI validate runs, %ld differences\n",
	       cases, lazy_cases, two_cases, mapped_cases, edits_done, edits_written, cli_cases,
	       failures);
	printf("lazydiff: %ld full loads on two threads against one\n", one_thread_cases);
	printf("lazydiff: %lu splits on two threads\n", st__json_splits() - splits0);
	tu_rmdir(tmp);
	free_bases();
	assert_int_equal(failures, 0);
	if (replay_one)
		return;
	/* the comparisons ran on what they claim: a scan that proved nothing would compare the
	 * full load with itself, and pass */
	assert_true(lazy_cases > 0);
	if (two_cases) {
		assert_true(st__json_splits() > splits0);
		assert_int_equal(one_thread_cases, two_cases);
	}
	if (n >= 200) { /* (the quick mode's 300 and the long mode) */
		assert_true(lazy_cases >= n / 10);
		assert_true(two_cases > 0);
		assert_true(mapped_cases > 0);
		assert_true(edits_written > 0);
	}
	if (getenv("STATETOOL") && *getenv("STATETOOL") && cli_every && n >= (long)cli_every)
		assert_true(cli_cases > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lazydiff),
	};
	assert_int_equal(st_schema_builtin(&schema, NULL), ST_OK);
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	st_schema_free(schema);
	return rc;
}
