/* The JSON reader and the Go-compatible writer. */
#include "testutil.h"
#include "json/read.h"
#include <pthread.h>

#include <dirent.h>

#include <math.h>

static void fmt_is(double v, const char *want)
{
	char buf[64];
	int n = st_json_format_number(v, buf, sizeof(buf));
	assert_true(n > 0);
	assert_string_equal(buf, want);
}

/* Expected strings are what Go's json.Marshal(float64) prints. */
static void test_numbers_as_go(void **state)
{
	(void)state;
	fmt_is(0, "0");
	fmt_is(-0.0, "-0");
	fmt_is(100, "100");
	fmt_is(-42, "-42");
	fmt_is(0.1, "0.1");
	fmt_is(0.30000000000000004, "0.30000000000000004");
	fmt_is(1.5, "1.5");
	fmt_is(1e20, "100000000000000000000");
	fmt_is(1e21, "1e+21");
	fmt_is(1.5e300, "1.5e+300");
	fmt_is(1e-6, "0.000001");
	fmt_is(1e-7, "1e-7");
	fmt_is(1.234e-10, "1.234e-10");
	fmt_is(-2.5e-8, "-2.5e-8");
	fmt_is(5e-324, "5e-324");
	fmt_is(1.7976931348623157e308, "1.7976931348623157e+308");
	fmt_is(123456789012345678.0, "123456789012345680");
	fmt_is(9007199254740993.0, "9007199254740992");
	fmt_is(3.14159, "3.14159");
	fmt_is(1e15, "1000000000000000");
	fmt_is(123456.789, "123456.789");
	char buf[64];
	assert_int_equal(st_json_format_number(NAN, buf, sizeof(buf)), -1);
	assert_int_equal(st_json_format_number(INFINITY, buf, sizeof(buf)), -1);
}

static char *dump(json_t *v, int compact, int html)
{
	st_style st;
	char *out = NULL;
	size_t len;
	st_style_export(&st);
	st.compact = compact;
	st.trailing_newline = 0;
	st.escape_html = html;
	assert_int_equal(st_json_dump(v, &st, &out, &len, NULL), ST_OK);
	assert_int_equal(strlen(out), len);
	return out;
}

/* Every byte that needs an escape, at every place in a long string (the writer looks at sixteen
 * bytes at a time): the same bytes as escaping one byte at a time, as Go does. */
static void test_string_escapes_everywhere(void **state)
{
	static const struct {
		const char *in;
		size_t n;
		const char *plain, *html;
	} specials[] = {
		{"\"", 1, "\\\"", "\\\""},       {"\\", 1, "\\\\", "\\\\"},
		{"\n", 1, "\\n", "\\n"},         {"\x01", 1, "\\u0001", "\\u0001"},
		{"\x1f", 1, "\\u001f", "\\u001f"}, {"\0", 1, "\\u0000", "\\u0000"},
		{"<", 1, "<", "\\u003c"},        {">", 1, ">", "\\u003e"},
		{"&", 1, "&", "\\u0026"},        {"\xe2\x80\xa8", 3, "\\u2028", "\\u2028"},
		{"\xe2\x80\xa9", 3, "\\u2029", "\\u2029"}, {"\xe2\x82\xac", 3, "\xe2\x82\xac", "\xe2\x82\xac"},
		{" ", 1, " ", " "},              {"\x7f", 1, "\x7f", "\x7f"},
	};
	(void)state;
	for (size_t k = 0; k < sizeof(specials) / sizeof(specials[0]); k++)
		for (size_t at = 0; at <= 40; at++)
			for (int html = 0; html <= 1; html++) {
				char in[64], want[96];
				size_t n = 0, w = 0;
				memset(in, 'x', at);
				n = at;
				memcpy(in + n, specials[k].in, specials[k].n);
				n += specials[k].n;
				memset(in + n, 'y', 40 - at);
				n += 40 - at;
				const char *esc = html ? specials[k].html : specials[k].plain;
				want[w++] = '"';
				memset(want + w, 'x', at);
				w += at;
				memcpy(want + w, esc, strlen(esc));
				w += strlen(esc);
				memset(want + w, 'y', 40 - at);
				w += 40 - at;
				want[w++] = '"';
				want[w] = '\0';
				json_t *v = json_stringn(in, n);
				assert_non_null(v);
				char *s = dump(v, 1, html);
				assert_string_equal(s, want);
				free(s);
				json_decref(v);
			}
}

/* The string scan's fast path (sixteen bytes at a time with SSE2, else eight) never steps
 * over a byte that needs a look, wherever it stands; the reader finds each at every offset. */
static void test_string_scan_every_offset(void **state)
{
	static const unsigned char specials[] = {'"', '\\', 0x00, 0x01, 0x1f, 0x80, 0xc3, 0xff};
	static const unsigned char plain[] = {0x20, 0x7f, 'a', '~', '!', '#', '[', ']'};
	(void)state;
	for (size_t len = 0; len <= 70; len++) {
		/* exactly len bytes: a load past the end is an error under ASan and valgrind */
		unsigned char *buf = malloc(len ? len : 1);
		assert_non_null(buf);
		for (size_t k = 0; k < sizeof(plain); k++) {
			memset(buf, plain[k], len);
			const unsigned char *q = st__json_skip_plain(buf, buf + len);
			assert_true(q <= buf + len && buf + len - q < 8);
		}
		for (size_t at = 0; at < len; at++)
			for (size_t k = 0; k < sizeof(specials); k++) {
				memset(buf, 'a', len);
				buf[at] = specials[k];
				assert_true(st__json_skip_plain(buf, buf + len) <= buf + at);
			}
		free(buf);
	}
	/* the reader: a raw control byte at each offset is an error at its column */
	for (size_t at = 0; at <= 40; at++) {
		char text[64];
		json_t *v = NULL;
		st_error err;
		memset(text, 'x', sizeof(text));
		text[0] = '"';
		text[1 + at] = '\x01';
		text[50] = '"';
		st_error_clear(&err);
		assert_int_equal(st_json_parse(&v, text, 51, "t", NULL, NULL, NULL, &err), ST_EPARSE);
		assert_null(v);
		assert_int_equal(err.line, 1);
		assert_int_equal(err.column, (int)at + 2);
		/* and a two-byte character there is read whole */
		text[1 + at] = (char)0xc3;
		text[2 + at] = (char)0xa9;
		assert_int_equal(st_json_parse(&v, text, 51, "t", NULL, NULL, NULL, &err), ST_OK);
		assert_int_equal(json_string_length(v), 49);
		assert_memory_equal(json_string_value(v) + at, "\xc3\xa9", 2);
		json_decref(v);
	}
}

static void test_strings_as_go(void **state)
{
	(void)state;
	json_t *v = json_stringn("a<b>&\"\\\n\r\t\b\f\x01\x1f\x7f/\xe2\x80\xa8\xe2\x80\xa9\xc3\xa9", 24);
	char *s = dump(v, 1, 0);
	assert_string_equal(s, "\"a<b>&\\\"\\\\\\n\\r\\t\\b\\f\\u0001\\u001f\x7f/\\u2028\\u2029\xc3\xa9\"");
	free(s);
	s = dump(v, 1, 1);
	assert_string_equal(s, "\"a\\u003cb\\u003e\\u0026\\\"\\\\\\n\\r\\t\\b\\f\\u0001\\u001f\x7f/\\u2028\\u2029\xc3\xa9\"");
	free(s);
	json_decref(v);
	/* NUL inside a string */
	v = json_stringn("a\0b", 3);
	s = dump(v, 1, 0);
	assert_string_equal(s, "\"a\\u0000b\"");
	free(s);
	json_decref(v);
}

static void test_layout(void **state)
{
	(void)state;
	json_t *v = tu_json("{\"b\":[1,2,{}],\"a\":{\"y\":[],\"x\":null}}");
	char *s = dump(v, 0, 0);
	assert_string_equal(s, "{\n    \"b\": [\n        1,\n        2,\n        {}\n    ],\n"
			       "    \"a\": {\n        \"y\": [],\n        \"x\": null\n    }\n}");
	free(s);
	s = dump(v, 1, 0);
	assert_string_equal(s, "{\"b\":[1,2,{}],\"a\":{\"y\":[],\"x\":null}}");
	free(s);
	json_decref(v);
}

static void test_kinds_sort_maps_only(void **state)
{
	(void)state;
	/* Resource fields keep their order; inputs (a property map) are sorted at every depth. */
	json_t *v = tu_json("{\"version\":3,\"deployment\":{\"manifest\":{},\"resources\":["
			    "{\"urn\":\"u\",\"type\":\"t\",\"custom\":true,\"inputs\":{\"z\":1,"
			    "\"a\":{\"d\":1,\"c\":2}},\"propertyDependencies\":{\"z\":[],\"a\":[]}}]}}");
	st_buf b;
	st_style st;
	st_style_checkpoint(&st);
	st_buf_init(&b);
	assert_int_equal(st__json_write(&b, v, &st, ST_K_ENVELOPE, NULL), ST_OK);
	assert_string_equal(b.data,
			    "{\"version\":3,\"deployment\":{\"manifest\":{},\"resources\":[{\"urn\":"
			    "\"u\",\"type\":\"t\",\"custom\":true,\"inputs\":{\"a\":{\"c\":2,\"d\":1},"
			    "\"z\":1},\"propertyDependencies\":{\"a\":[],\"z\":[]}}]}}");
	st_buf_free(&b);
	json_decref(v);
}

static void parse_fails(const char *text, int code, int line, int col, const char *msg)
{
	json_t *v = NULL;
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st_json_parse(&v, text, strlen(text), "x.json", NULL, NULL, NULL, &err),
			 code);
	assert_null(v);
	if (line) {
		assert_int_equal(err.line, line);
		assert_int_equal(err.column, col);
	}
	if (!strstr(err.message, msg)) {
		fprintf(stderr, "message '%s' lacks '%s'\n", err.message, msg);
		fail();
	}
	assert_string_equal(err.file, "x.json");
}

static void test_parse_errors(void **state)
{
	(void)state;
	parse_fails("{\"a\":1,}", ST_EPARSE, 1, 8,
		    "invalid character '}' looking for beginning of object key string");
	parse_fails("{\n  \"a\": tru\n}", ST_EPARSE, 2, 11, "in literal true");
	parse_fails("{\"a\":1} x", ST_EPARSE, 1, 9, "after top-level value");
	parse_fails("{\"a\":01}", ST_EPARSE, 1, 7, "after object key:value pair");
	parse_fails("{\"a\":1", ST_EPARSE, 1, 7, "unexpected end of JSON input");
	parse_fails("{\"a\":\"x", ST_EPARSE, 0, 0, "unexpected end of JSON input");
	parse_fails("{\"a\":\"\x01\"}", ST_EPARSE, 1, 7, "in string literal");
	/* the offending byte quoted as Go's quoteChar quotes it (strconv.Quote of its rune) */
	parse_fails("{\"a\":\"\x01\"}", ST_EPARSE, 1, 7, "invalid character '\\x01' in string");
	parse_fails("{\"a\":\"\n\"}", ST_EPARSE, 1, 7, "invalid character '\\n' in string literal");
	parse_fails("{\"a\":\"\t\"}", ST_EPARSE, 1, 7, "invalid character '\\t' in string literal");
	parse_fails("\f{}", ST_EPARSE, 1, 1, "invalid character '\\f' looking for beginning");
	parse_fails("\x7f{}", ST_EPARSE, 1, 1, "invalid character '\\x7f' looking for beginning");
	parse_fails("\\{}", ST_EPARSE, 1, 1, "invalid character '\\\\' looking for beginning");
	parse_fails("\xff{}", ST_EPARSE, 1, 1, "invalid character '\xc3\xbf' looking for beginning");
	parse_fails("\xc2{}", ST_EPARSE, 1, 1, "invalid character '\xc3\x82' looking for beginning");
	parse_fails("\xa0{}", ST_EPARSE, 1, 1, "invalid character '\\u00a0' looking for beginning");
	parse_fails("\x80{}", ST_EPARSE, 1, 1, "invalid character '\\u0080' looking for beginning");
	parse_fails("{\"a\":\"\\q\"}", ST_EPARSE, 1, 8, "in string escape code");
	parse_fails("{\"a\":1e400}", ST_EPARSE, 1, 6, "out of the range of a float64");
	parse_fails("\xef\xbb\xbf{}", ST_EPARSE, 1, 1, "byte order mark");
	parse_fails("", ST_EPARSE, 1, 1, "unexpected end of JSON input");
	parse_fails("{\"a\":-}", ST_EPARSE, 1, 7, "in numeric literal");
	parse_fails("{\"a\":1.}", ST_EPARSE, 1, 8, "after decimal point");
	parse_fails("{\"a\":[1 2]}", ST_EPARSE, 1, 9, "after array element");
	parse_fails("{\"a\"  1}", ST_EPARSE, 1, 7, "after object key");
}

static char *nested(size_t n)
{
	char *deep = malloc(2 * n + 1);
	for (size_t i = 0; i < n; i++) {
		deep[i] = '[';
		deep[2 * n - 1 - i] = ']';
	}
	deep[2 * n] = '\0';
	return deep;
}

static void test_depth_limit(void **state)
{
	(void)state;
	char *deep = nested(10001);
	json_t *v = NULL;
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st_json_parse(&v, deep, strlen(deep), NULL, NULL, NULL, NULL, &err),
			 ST_ELIMIT);
	assert_non_null(strstr(err.message, "exceeded max depth (10000"));
	assert_int_equal(err.column, 10001);
	free(deep);
	/* exactly at Go's limit is fine, and so is writing it back */
	deep = nested(10000);
	assert_int_equal(st_json_parse(&v, deep, strlen(deep), NULL, NULL, NULL, NULL, NULL), ST_OK);
	char *out;
	size_t len;
	st_style st;
	st_style_checkpoint(&st);
	assert_int_equal(st_json_dump(v, &st, &out, &len, NULL), ST_OK);
	assert_string_equal(out, deep);
	free(out);
	json_decref(v);
	free(deep);
	/* a lower limit of the caller's */
	st_parse_limits lim = ST_PARSE_LIMITS_INIT;
	lim.max_depth = 3;
	assert_int_equal(st_json_parse(&v, "[[[[]]]]", 8, NULL, &lim, NULL, NULL, NULL), ST_ELIMIT);
	assert_int_equal(st_json_parse(&v, "[[[]]]", 6, NULL, &lim, NULL, NULL, NULL), ST_OK);
	json_decref(v);
}

/* st_parse_limits.first_value: the first value only, as json.Decoder reads it; the rest a
 * warning (with json.Unmarshal's error, which st_state_from_json gives a checkpoint); the
 * Decoder's end-of-input errors with ST_PARSE_DECODER; a version 1 struct reads strictly. */
static void first_value_fails(int mode, const char *text, const char *msg)
{
	st_parse_limits lim = ST_PARSE_LIMITS_INIT;
	json_t *v = NULL;
	st_error err;
	st_error_clear(&err);
	lim.first_value = mode;
	assert_int_equal(st_json_parse(&v, text, strlen(text), NULL, &lim, NULL, NULL, &err),
			 ST_EPARSE);
	assert_null(v);
	assert_string_equal(err.message, msg);
}

static void test_first_value(void **state)
{
	(void)state;
	const char *text = "{\"a\":1}\n{\"b\":2} x";
	st_parse_limits lim = ST_PARSE_LIMITS_INIT;
	st_problems probs = {0};
	st_style style;
	st_error err;
	json_t *v = NULL;
	lim.first_value = ST_PARSE_FIRST_VALUE;
	assert_int_equal(st_json_parse(&v, text, strlen(text), NULL, &lim, &style, &probs, NULL),
			 ST_OK);
	assert_int_equal(json_object_size(v), 1);
	assert_int_equal(json_number_value(json_object_get(v, "a")), 1);
	assert_true(style.trailing_newline); /* the document's: "{...}\n" */
	assert_int_equal(probs.count, 1);
	assert_int_equal(probs.warnings, 1);
	assert_string_equal(probs.items[0].rule, "json/trailing-data");
	assert_string_equal(probs.items[0].pointer, "");
	assert_string_equal(probs.items[0].message,
			    "data after the document at line 2, column 1 (byte 8) is not read: "
			    "`pulumi stack import` and `pulumi import --file` read the first JSON "
			    "value only (json.Unmarshal refuses it in a checkpoint: invalid "
			    "character '{' after top-level value)");
	/* made json.Unmarshal's error (a checkpoint): taken out of the list */
	st_error_clear(&err);
	assert_int_equal(st__json_trailing_refuse(&probs, &err), ST_EPARSE);
	assert_string_equal(err.message, "invalid character '{' after top-level value");
	assert_int_equal(err.line, 2);
	assert_int_equal(err.column, 1);
	assert_int_equal(err.offset, 8);
	assert_int_equal(probs.count, 0);
	assert_int_equal(probs.warnings, 0);
	assert_int_equal(st__json_trailing_refuse(&probs, &err), ST_OK);
	json_decref(v);
	/* ')' as the character: Go's message kept whole */
	assert_int_equal(st_json_parse(&v, "[1])", 4, NULL, &lim, NULL, &probs, NULL), ST_OK);
	st_error_clear(&err);
	assert_int_equal(st__json_trailing_refuse(&probs, &err), ST_EPARSE);
	assert_string_equal(err.message, "invalid character ')' after top-level value");
	json_decref(v);
	/* a syntax error in the first value is one; the rest is never read */
	first_value_fails(ST_PARSE_FIRST_VALUE, "{\"a\":01} x", "invalid character '1' after "
			  "object key:value pair");
	/* end of input: json.Unmarshal's text, the Decoder's with ST_PARSE_DECODER */
	first_value_fails(ST_PARSE_FIRST_VALUE, "{\"a\":", "unexpected end of JSON input");
	first_value_fails(ST_PARSE_DECODER, "{\"a\":", "unexpected EOF");
	first_value_fails(ST_PARSE_DECODER, "{\"a\":\"x", "unexpected EOF");
	first_value_fails(ST_PARSE_DECODER, "", "EOF");
	first_value_fails(ST_PARSE_DECODER, " \n\t", "EOF");
	first_value_fails(0, "{\"a\":", "unexpected end of JSON input");
	/* a version 1 struct has no first_value: strict */
	lim.version = 1;
	first_value_fails(0, "{} x", "invalid character 'x' after top-level value");
	assert_int_equal(st_json_parse(&v, "{} x", 4, NULL, &lim, NULL, NULL, NULL), ST_EPARSE);
	st_problems_clear(&probs); /* (emptied above, its array still held) */
}

/* A number beyond float64: an error without a problems list; with one, the reader's
 * placeholder and a warning naming the literal; Go's error where the decoder finds Go converts
 * it (an interface{} value, a float64 field), nothing where Go skips it (an unknown field); a
 * state holding one is not written. */
static void test_big_number(void **state)
{
	(void)state;
	const char *text = "{\"x\":[1,-1e400]}";
	st_problems probs = {0};
	st_state *s = NULL;
	st_error err;
	json_t *v = NULL;
	char *out = NULL;
	size_t len;
	assert_int_equal(st_json_parse(&v, text, strlen(text), NULL, NULL, NULL, &probs, NULL),
			 ST_OK);
	assert_true(st__json_is_bignum(json_array_get(json_object_get(v, "x"), 1)));
	assert_int_equal(probs.count, 1);
	assert_string_equal(probs.items[0].rule, "json/number-range");
	assert_string_equal(probs.items[0].pointer, "/x/1");
	assert_string_equal(probs.items[0].message,
			    "number -1e400 is out of the range of a float64: Pulumi reads it only "
			    "where Go never decodes it as a number (an unknown field, a secrets "
			    "provider's state); statetool cannot write it back");
	st_problems_clear(&probs);
	st_error_clear(&err);
	assert_int_equal(st_json_dump(v, NULL, &out, &len, &err), ST_EINVAL);
	assert_null(out);
	json_decref(v);
	/* where Go skips it: loaded, not written */
	text = "{\"version\":3,\"deployment\":{\"resources\":[{\"urn\":\"urn:pulumi:s::p::t:i:T::a\","
	       "\"type\":\"t:i:T\",\"future\":{\"n\":1e400}}]},\"extra\":2e999}";
	assert_int_equal(st_state_load_buffer(&s, text, strlen(text), "x", NULL, NULL), ST_OK);
	assert_int_equal(st_state_load_problems(s)->count, 2);
	assert_string_equal(st_state_load_problems(s)->items[0].pointer,
			    "/deployment/resources/0/future/n");
	st_error_clear(&err);
	assert_int_equal(st_state_dump(s, NULL, &out, &len, &err), ST_EINVAL);
	assert_string_equal(err.message, "the state holds a number beyond the float64 range "
			    "(json/number-range, where Pulumi never decodes it as a number), which "
			    "statetool cannot write back");
	st_state_free(s);
	/* where Go converts it: its UnmarshalTypeError, with the literal as written */
	text = "{\"version\":3,\"deployment\":{\"resources\":[{\"urn\":\"urn:pulumi:s::p::t:i:T::a\","
	       "\"type\":\"t:i:T\",\"outputs\":{\"m\":{\"k\":[1E+400]}}}]}}";
	st_error_clear(&err);
	assert_int_equal(st_state_load_buffer(&s, text, strlen(text), "x", NULL, &err), ST_EFORMAT);
	assert_string_equal(err.message, "json: cannot unmarshal number 1E+400 into Go struct field "
			    "ResourceV3.resources.outputs of type float64");
	assert_string_equal(err.pointer, "/deployment/resources/0/outputs/m/k/0");
	text = "{\"version\":3,\"deployment\":{\"resources\":[{\"urn\":\"urn:pulumi:s::p::t:i:T::a\","
	       "\"type\":\"t:i:T\",\"customTimeouts\":{\"update\":1e400}}]}}";
	st_error_clear(&err);
	assert_int_equal(st_state_load_buffer(&s, text, strlen(text), "x", NULL, &err), ST_EFORMAT);
	assert_string_equal(err.message, "json: cannot unmarshal number 1e400 into Go struct field "
			    "CustomTimeouts.resources.customTimeouts.update of type float64");
	/* a string field: Go's "number" without the literal (kinds that do not take numbers) */
	text = "{\"version\":3,\"deployment\":{\"resources\":[{\"urn\":\"urn:pulumi:s::p::t:i:T::a\","
	       "\"type\":1e400}]}}";
	st_error_clear(&err);
	assert_int_equal(st_state_load_buffer(&s, text, strlen(text), "x", NULL, &err), ST_EFORMAT);
	assert_string_equal(err.message, "json: cannot unmarshal number into Go struct field "
			    "ResourceV3.resources.type of type tokens.Type");
}

static void test_go_leniency(void **state)
{
	(void)state;
	const char *text = "{\"big\":123456789012345678901234567890,\"nul\":\"a\\u0000b\","
			   "\"dup\":1,\"dup\":2,\"bad\":\"x\xff\",\"lone\":\"\\ud800z\","
			   "\"pair\":\"\\ud83d\\ude00\"}";
	json_t *v = NULL;
	st_problems probs = {0};
	assert_int_equal(st_json_parse(&v, text, strlen(text), NULL, NULL, NULL, &probs, NULL),
			 ST_OK);
	assert_true(json_is_real(json_object_get(v, "big")));
	assert_true(json_real_value(json_object_get(v, "big")) == 1.2345678901234568e29);
	assert_int_equal(json_string_length(json_object_get(v, "nul")), 3);
	assert_int_equal(json_number_value(json_object_get(v, "dup")), 2);
	assert_string_equal(json_string_value(json_object_get(v, "bad")), "x\xef\xbf\xbd");
	assert_string_equal(json_string_value(json_object_get(v, "lone")), "\xef\xbf\xbdz");
	assert_string_equal(json_string_value(json_object_get(v, "pair")), "\xf0\x9f\x98\x80");
	assert_int_equal(probs.count, 3);
	assert_string_equal(probs.items[0].rule, "json/duplicate-key");
	assert_string_equal(probs.items[0].pointer, "/dup");
	assert_string_equal(probs.items[1].rule, "json/invalid-utf8");
	assert_string_equal(probs.items[1].pointer, "/bad");
	assert_string_equal(probs.items[2].pointer, "/lone");
	st_problems_clear(&probs);
	json_decref(v);
}

/* A duplicate key holding a NUL: the warning names it whole, the NUL written as its pointer
 * writes it (both are C strings). */
static void test_dupkey_nul(void **state)
{
	(void)state;
	const char *text = "{\"a\\u0000b\":1,\"a\\u0000b\":2,\"\\u0000\":3,\"\\u0000\":4}";
	json_t *v = NULL;
	st_problems probs = {0};
	assert_int_equal(st_json_parse(&v, text, strlen(text), NULL, NULL, NULL, &probs, NULL),
			 ST_OK);
	assert_int_equal(probs.count, 2);
	assert_string_equal(probs.items[0].rule, "json/duplicate-key");
	assert_string_equal(probs.items[0].pointer, "/a\\u0000b");
	assert_string_equal(probs.items[0].message,
			    "duplicate object key 'a\\u0000b': the last value is kept, as Pulumi "
			    "does; earlier values are lost on save");
	assert_string_equal(probs.items[1].pointer, "/\\u0000");
	assert_string_equal(probs.items[1].message,
			    "duplicate object key '\\u0000': the last value is kept, as Pulumi does; "
			    "earlier values are lost on save");
	st_problems_clear(&probs);
	json_decref(v);
}

static void test_nested_pointer(void **state)
{
	(void)state;
	const char *text = "{\"a/b\":[{\"k~\":0},{\"x\":1,\"x\":2}]}";
	json_t *v = NULL;
	st_problems probs = {0};
	assert_int_equal(st_json_parse(&v, text, strlen(text), NULL, NULL, NULL, &probs, NULL),
			 ST_OK);
	assert_int_equal(probs.count, 1);
	assert_string_equal(probs.items[0].pointer, "/a~1b/1/x");
	st_problems_clear(&probs);
	json_decref(v);
}

static void style_of(const char *text, int compact, int html, int nl)
{
	json_t *v = NULL;
	st_style st;
	assert_int_equal(st_json_parse(&v, text, strlen(text), NULL, NULL, &st, NULL, NULL), ST_OK);
	assert_int_equal(st.compact, compact);
	assert_int_equal(st.escape_html, html);
	assert_int_equal(st.trailing_newline, nl);
	json_decref(v);
}

static void test_style_detection(void **state)
{
	(void)state;
	style_of("{\"a\":\"=\\u003e\"}", 1, 1, 0);
	style_of("{\"a\":\"=>\"}\n", 1, 0, 1);
	style_of("{\n    \"a\": \"\\u003c\",\n    \"b\": \"&\"\n}\n", 0, 0, 1);
	style_of("{\n  \"a\": 1\n}", 0, 0, 0);
	json_t *v = NULL;
	st_style st;
	const char *two = "{\n  \"a\": [\n    1\n  ]\n}";
	assert_int_equal(st_json_parse(&v, two, strlen(two), NULL, NULL, &st, NULL, NULL), ST_OK);
	assert_string_equal(st.indent, "  ");
	char *out;
	size_t len;
	assert_int_equal(st_json_dump(v, &st, &out, &len, NULL), ST_OK);
	assert_string_equal(out, two);
	free(out);
	json_decref(v);
}

/* Every byte sequence the writer produces reads back to an equal value. */
static void test_write_read_equal(void **state)
{
	(void)state;
	const char *text = "{\"s\":\"\\u2028\\u0000\xc3\xa9<&>\",\"n\":[0.1,1e21,-0,5e-324,1e-7],"
			   "\"o\":{\"b\":true,\"a\":false,\"c\":null}}";
	json_t *v = tu_json(text), *w = NULL;
	char *out;
	size_t len;
	for (int html = 0; html < 2; html++) {
		st_style st;
		st_style_export(&st);
		st.escape_html = html;
		assert_int_equal(st_json_dump(v, &st, &out, &len, NULL), ST_OK);
		assert_int_equal(st_json_parse(&w, out, len, NULL, NULL, NULL, NULL, NULL), ST_OK);
		assert_true(json_equal(v, w));
		json_decref(w);
		free(out);
	}
	json_decref(v);
}

/* ---- parsing on two threads gives what one thread gives ---- */

typedef struct parsed {
	int rc;
	json_t *v;
	st_error err;
	st_problems probs;
	st_style style;
	char *dump;
} parsed;

static void parse_with(parsed *r, const char *text, size_t len, const st_parse_limits *lim,
		       int threads)
{
	memset(r, 0, sizeof(*r));
	st_error_clear(&r->err);
	st_set_threads(threads ? 2 : 1, NULL);
	st__json_split_test(16);
	r->rc = st_json_parse(&r->v, text, len, "x.json", lim, &r->style, &r->probs, &r->err);
	st_set_threads(0, NULL);
	st__json_split_test(0);
	r->dump = r->v ? json_dumps(r->v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
}

static void parsed_free(parsed *r)
{
	json_decref(r->v);
	st_problems_clear(&r->probs);
	free(r->dump);
}

/* Parses `text` on one thread and on two; asserts identical results. Returns whether the
 * second parse was split. */
static int same_both_ways(const char *text, size_t len, const st_parse_limits *lim)
{
	parsed a, b;
	unsigned long before;
	int was_split;

	parse_with(&a, text, len, lim, 0);
	before = st__json_splits();
	parse_with(&b, text, len, lim, 1);
	was_split = st__json_splits() != before;
	assert_int_equal(a.rc, b.rc);
	if (a.dump || b.dump) {
		assert_non_null(a.dump);
		assert_non_null(b.dump);
		assert_string_equal(a.dump, b.dump);
	}
	assert_int_equal(a.err.code, b.err.code);
	assert_string_equal(a.err.message, b.err.message);
	assert_int_equal(a.err.line, b.err.line);
	assert_int_equal(a.err.column, b.err.column);
	assert_int_equal(a.err.offset, b.err.offset);
	assert_int_equal(a.probs.count, b.probs.count);
	for (size_t i = 0; i < a.probs.count; i++) {
		assert_string_equal(a.probs.items[i].rule, b.probs.items[i].rule);
		assert_string_equal(a.probs.items[i].pointer, b.probs.items[i].pointer);
		assert_string_equal(a.probs.items[i].message, b.probs.items[i].message);
	}
	if (a.rc == ST_OK)
		assert_memory_equal(&a.style, &b.style, sizeof(a.style));
	parsed_free(&a);
	parsed_free(&b);
	return was_split;
}

/* A state-like document: n resources; element `bad` (if not -1) gets `insert` spliced in. */
static char *resources_doc(int n, int bad, const char *insert)
{
	st_buf b;
	st_buf_init(&b);
	st_buf_adds(&b, "{\n    \"version\": 3,\n    \"deployment\": {\n        \"resources\": [\n");
	for (int i = 0; i < n; i++) {
		st_buf_printf(&b, "            {\"urn\": \"urn:pulumi:s::p::t::r-%d\", \"s\": \"q\\\"[,]{\", "
				  "\"inputs\": {\"a\": [1, 2.5, true, null, {\"k\": \"v\"}]}%s}%s\n",
			      i, i == bad ? insert : "", i + 1 < n ? "," : "");
	}
	st_buf_adds(&b, "        ],\n        \"tail\": [1, 2]\n    }\n}\n");
	return st_buf_take(&b, NULL);
}

static void test_split_same_result(void **state)
{
	(void)state;
	char *doc;

	/* valid: the split happens and changes nothing */
	doc = resources_doc(200, -1, "");
	assert_true(same_both_ways(doc, strlen(doc), NULL));
	free(doc);
	/* warnings on both sides of the split, pointers rebased */
	{
		st_buf b;
		st_buf_init(&b);
		st_buf_adds(&b, "[");
		for (int i = 0; i < 300; i++)
			st_buf_printf(&b, "%s{\"d\":1,\"d\":2,\"u\":\"x\xff\"}", i ? "," : "");
		st_buf_adds(&b, "]");
		assert_true(same_both_ways(b.data, b.len, NULL)); /* 600 warnings, capped at 100 */
		st_buf_free(&b);
		doc = resources_doc(200, 150, ", \"dup\": 1, \"dup\": 2, \"bad\": \"\xc3\"");
		parsed r;
		assert_true(same_both_ways(doc, strlen(doc), NULL));
		parse_with(&r, doc, strlen(doc), NULL, 1);
		assert_int_equal(r.probs.count, 2);
		assert_string_equal(r.probs.items[0].pointer, "/deployment/resources/150/dup");
		assert_string_equal(r.probs.items[1].pointer, "/deployment/resources/150/bad");
		parsed_free(&r);
		free(doc);
	}
	/* errors after the split point: the same message, line and column */
	doc = resources_doc(200, 170, ", \"x\": tru");
	assert_true(same_both_ways(doc, strlen(doc), NULL));
	{
		parsed r;
		parse_with(&r, doc, strlen(doc), NULL, 1);
		assert_int_equal(r.rc, ST_EPARSE);
		assert_int_equal(r.err.line, 175);
		parsed_free(&r);
	}
	free(doc);
	doc = resources_doc(200, 199, ", ");                /* a trailing comma in an object */
	assert_true(same_both_ways(doc, strlen(doc), NULL));
	free(doc);
	doc = resources_doc(200, 30, ", \"x\": [1,]");     /* an error before the split point */
	assert_false(same_both_ways(doc, strlen(doc), NULL));
	free(doc);
	doc = resources_doc(200, 120, ", \"c\": \"a\x01\""); /* a control byte in a string */
	assert_true(same_both_ways(doc, strlen(doc), NULL));
	free(doc);
	/* truncated anywhere in the second half */
	doc = resources_doc(100, -1, "");
	for (size_t cut = strlen(doc) / 2; cut < strlen(doc); cut += 97)
		same_both_ways(doc, cut, NULL);
	/* and with garbage after the array's end */
	{
		size_t n = strlen(doc);
		char *d2 = malloc(n + 3);
		memcpy(d2, doc, n);
		memcpy(d2 + n, "x]", 3);
		same_both_ways(d2, n + 2, NULL);
		free(d2);
	}
	free(doc);
}

static void test_split_limits_and_shapes(void **state)
{
	(void)state;
	st_parse_limits lim = ST_PARSE_LIMITS_INIT;
	st_buf b;
	char *doc;

	/* nesting beyond the limit inside the second part */
	lim.max_depth = 40;
	st_buf_init(&b);
	st_buf_adds(&b, "[");
	for (int i = 0; i < 100; i++)
		st_buf_printf(&b, "%s[1,2,3]", i ? "," : "");
	for (int i = 0; i < 60; i++)
		st_buf_adds(&b, ",[");
	for (int i = 0; i < 60; i++)
		st_buf_adds(&b, "]");
	st_buf_adds(&b, "]");
	same_both_ways(b.data, b.len, &lim);
	st_buf_free(&b);
	/* a string longer than the limit in the second part */
	lim.max_depth = 0;
	lim.max_string = 50;
	doc = resources_doc(100, 80, ", \"long\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"");
	same_both_ways(doc, strlen(doc), &lim);
	free(doc);
	/* no array open at the middle: one thread does it all */
	st_buf_init(&b);
	st_buf_adds(&b, "{");
	for (int i = 0; i < 100; i++)
		st_buf_printf(&b, "%s\"k%d\":{\"a\":1}", i ? "," : "", i);
	st_buf_adds(&b, "}");
	assert_false(same_both_ways(b.data, b.len, NULL));
	st_buf_free(&b);
	/* the middle inside a long string full of brackets, quotes and commas */
	st_buf_init(&b);
	st_buf_adds(&b, "[\"");
	for (int i = 0; i < 200; i++)
		st_buf_adds(&b, "[{,\\\"}]");
	st_buf_adds(&b, "\",1,2,3]");
	same_both_ways(b.data, b.len, NULL);
	st_buf_free(&b);
	/* an array that closes right after the middle, then an object */
	st_buf_init(&b);
	st_buf_adds(&b, "{\"a\":[");
	for (int i = 0; i < 100; i++)
		st_buf_printf(&b, "%s%d", i ? "," : "", i);
	st_buf_adds(&b, "],\"b\":{\"c\":\"");
	for (int i = 0; i < 50; i++)
		st_buf_adds(&b, "yyyyy");
	st_buf_adds(&b, "\"}}");
	same_both_ways(b.data, b.len, NULL);
	st_buf_free(&b);
	/* the real Pulumi files */
	{
		char *dir = tu_fixture("pulumi");
		DIR *d = opendir(dir);
		struct dirent *de;
		int n = 0;
		assert_non_null(d);
		while ((de = readdir(d)) != NULL) {
			size_t len = 0;
			char *path, *text;
			if (!strstr(de->d_name, ".json"))
				continue;
			assert_true(asprintf(&path, "%s/%s", dir, de->d_name) > 0);
			text = tu_read(path, &len);
			assert_non_null(text);
			same_both_ways(text, len, NULL);
			n++;
			free(text);
			free(path);
		}
		closedir(d);
		free(dir);
		assert_true(n >= 10);
	}
}

/* A key given twice in the second part of a split parse: the earlier value the second thread
 * kept reaches the decoder, which merges as Go does (two "inputs" of one resource), on one
 * thread and on two. Without the reader's record the last value would stand. */
static void test_dupkey_split(void **state)
{
	(void)state;
	st_buf b;
	st_buf_init(&b);
	st_buf_adds(&b, "{\"version\":3,\"checkpoint\":{\"stack\":\"dev\",\"latest\":{\"manifest\":"
			"{\"time\":\"2024-01-01T00:00:00Z\",\"magic\":\"\",\"version\":\"\"},"
			"\"resources\":[");
	for (int i = 0; i < 40; i++)
		st_buf_printf(&b, "%s{\"urn\":\"urn:pulumi:dev::p::t:m:R::r%d\",\"custom\":true,"
				  "\"type\":\"t:m:R\",\"inputs\":{\"a\":%d}%s}",
			      i ? "," : "", i, i, i == 30 ? ",\"inputs\":{\"b\":2}" : "");
	st_buf_adds(&b, "]}}}");
	for (int threads = 0; threads < 2; threads++) {
		parsed r;
		st_state *s = NULL;
		st_error err;
		unsigned long before = st__json_splits();
		parse_with(&r, b.data, b.len, NULL, threads);
		assert_int_equal(r.rc, ST_OK);
		if (threads)
			assert_true(st__json_splits() != before);
		st_error_clear(&err);
		assert_int_equal(st_state_from_json(&s, r.v, &r.style, &r.probs, "x.json", &err),
				 ST_OK);
		r.v = NULL;
		json_t *in = json_object_get(json_array_get(st_state_resources(s, 0), 30), "inputs");
		char *got = json_dumps(in, JSON_COMPACT);
		assert_string_equal(got, "{\"a\":30.0,\"b\":2.0}");
		free(got);
		const st_problems *lp = st_state_load_problems(s);
		assert_int_equal(lp->count, 1);
		assert_string_equal(lp->items[0].pointer, "/checkpoint/latest/resources/30/inputs");
		assert_string_equal(lp->items[0].message, "duplicate object key 'inputs': merged into "
							  "the earlier value, as Pulumi does");
		st_state_free(s);
		parsed_free(&r);
	}
	/* without a list the second thread's duplicate parses nothing again either */
	{
		json_t *v = NULL;
		unsigned long reparses = st__json_reparses(), splits = st__json_splits();
		st_set_threads(2, NULL);
		st__json_split_test(16);
		assert_int_equal(st_json_parse(&v, b.data, b.len, NULL, NULL, NULL, NULL, NULL),
				 ST_OK);
		st_set_threads(0, NULL);
		st__json_split_test(0);
		assert_true(st__json_splits() != splits);
		assert_int_equal(st__json_reparses(), reparses);
		json_decref(v);
	}
	st_buf_free(&b);
}

/* Duplicate keys cost nothing until a later object, array or null replaces a value: only
 * then is the document parsed again, keeping the earlier values (one entry each, the same
 * tree and warnings as one parse that keeps them); a scalar replacing, or no list to keep them
 * in, parses once. */
static void test_dupkey_reparse(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		unsigned long reparses;
		size_t dropped, warnings;
		const char *dump;
	} cases[] = {
		{"{\"a\":{\"x\":1},\"b\":[1],\"c\":null}", 0, 0, 0,
		 "{\"a\":{\"x\":1.0},\"b\":[1.0],\"c\":null}"},
		{"{\"a\":{\"x\":1},\"a\":2,\"a\":\"s\"}", 1, 2, 2, "{\"a\":\"s\"}"},
		{"{\"a\":1,\"a\":{\"x\":1},\"a\":2}", 1, 2, 2, "{\"a\":2.0}"},
		{"{\"a\":{\"x\":1},\"a\":{\"y\":2}}", 1, 1, 1, "{\"a\":{\"y\":2.0}}"},
		{"{\"a\":{\"x\":1},\"a\":[2],\"a\":null,\"a\":3}", 1, 3, 3, "{\"a\":3.0}"},
		{"[{\"k\":{},\"k\":true},{\"k\":true,\"k\":[]}]", 1, 2, 2,
		 "[{\"k\":true},{\"k\":[]}]"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		parsed r;
		unsigned long before = st__json_reparses();
		parse_with(&r, cases[i].text, strlen(cases[i].text), NULL, 0);
		assert_int_equal(r.rc, ST_OK);
		assert_int_equal(st__json_reparses() - before, cases[i].reparses);
		assert_int_equal(st__dropped_count(&r.probs), cases[i].dropped);
		assert_int_equal(r.probs.count, cases[i].warnings);
		assert_int_equal(r.probs.warnings, cases[i].warnings);
		assert_string_equal(r.dump, cases[i].dump);
		parsed_free(&r);
		/* without a list: last-wins, once */
		json_t *v = NULL;
		before = st__json_reparses();
		assert_int_equal(st_json_parse(&v, cases[i].text, strlen(cases[i].text), NULL, NULL,
					       NULL, NULL, NULL), ST_OK);
		assert_int_equal(st__json_reparses(), before);
		json_decref(v);
	}
	/* the earlier values kept are every value replaced (scalars too: an earlier one of the
	 * wrong type is Go's error, audit28 D17), in document order */
	parsed r;
	const char *t = "{\"a\":{\"x\":1},\"a\":[2],\"a\":null,\"a\":3}";
	parse_with(&r, t, strlen(t), NULL, 0);
	st__dropped *d = r.probs.st__dropped;
	assert_non_null(d);
	assert_int_equal(d->n, 3);
	assert_ptr_equal(d->v[0].obj, r.v);
	assert_string_equal(d->v[0].key, "a");
	assert_true(json_is_object(d->v[0].val));
	assert_true(json_is_array(d->v[1].val));
	assert_true(json_is_null(d->v[2].val));
	parsed_free(&r);
}

/* The lazy parse's fallback to a full parse (a duplicate key above the resources) takes back
 * only the earlier values its own first parse kept: a list that already held some keeps
 * them. */
static void test_dupkey_lazy_fallback_keeps_callers(void **state)
{
	(void)state;
	const char *t = "{\"version\":3,\"checkpoint\":{\"stack\":\"dev\",\"latest\":{\"manifest\":"
			"{\"time\":\"2024-01-01T00:00:00Z\",\"magic\":\"\",\"version\":\"\"},"
			"\"resources\":[]},\"latest\":{\"resources\":[]}}}";
	st_problems pr = {0};
	json_t *mine = json_pack("{s:i}", "k", 1), *earlier = json_pack("[i]", 1), *v = NULL;
	st__lazy_rec *recs = NULL;
	size_t nrecs = 0;
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st__dropped_add(&pr, mine, "k", 1, earlier), ST_OK);
	assert_int_equal(st__json_parse_lazy(&v, t, strlen(t), "x.json", NULL, NULL, &pr, 0, 1,
					     NULL, &recs, &nrecs, &err), ST_OK);
	assert_null(recs);
	st__dropped *d = pr.st__dropped;
	assert_non_null(d);
	assert_int_equal(d->n, 2);
	assert_ptr_equal(d->v[0].obj, mine);
	assert_ptr_equal(d->v[0].val, earlier);
	assert_ptr_equal(d->v[1].obj, json_object_get(v, "checkpoint"));
	assert_string_equal(d->v[1].key, "latest");
	assert_int_equal(pr.count, 1);
	assert_string_equal(pr.items[0].pointer, "/checkpoint/latest");
	json_decref(v);
	json_decref(mine);
	json_decref(earlier);
	st_problems_clear(&pr);
}

/* st_json_dump_at: an element written on its own at depth 2 is the bytes st_json_dump gives
 * it in place inside the whole document (a streamed array: query --json), NULL style = export. */
static void test_dump_at(void **state)
{
	(void)state;
	json_t *row = json_pack("{s:s,s:n,s:{s:[i,s]},s:s}", "stack", "org/p/s", "id", "x",
				"y", 1, "q\"<\n", "z", "\xe2\x80\xa8");
	json_t *doc = json_pack("{s:i,s:[O,O]}", "format_version", 1, "rows", row, row);
	char *whole = NULL, *one = NULL, *want;
	size_t wl, ol;
	assert_non_null(row);
	assert_non_null(doc);
	assert_int_equal(st_json_dump(doc, NULL, &whole, &wl, NULL), ST_OK);
	assert_int_equal(st_json_dump_at(row, NULL, 2, &one, &ol, NULL), ST_OK);
	assert_int_equal(strlen(one), ol);
	want = st_asprintf("{\n    \"format_version\": 1,\n    \"rows\": [\n        %s,\n        "
			   "%s\n    ]\n}\n", one, one);
	assert_string_equal(whole, want);
	assert_string_equal(one, "{\n            \"stack\": \"org/p/s\",\n            \"id\": null,"
				 "\n            \"x\": {\n                \"y\": [\n                    1,"
				 "\n                    \"q\\\"<\\n\"\n                ]\n            },"
				 "\n            \"z\": \"\\u2028\"\n        }");
	free(want);
	free(one);
	free(whole);
	/* depth 0, a scalar */
	json_t *a = json_string("a");
	assert_int_equal(st_json_dump_at(a, NULL, 0, &one, &ol, NULL), ST_OK);
	assert_string_equal(one, "\"a\"");
	free(one);
	json_decref(a);
	json_decref(row);
	json_decref(doc);
}

/* st_json_dump and st_json_dump_at share their writing: at depth 0 a big array goes onto a
 * second thread in both, and the bytes are the same but for st_json_dump's trailing newline,
 * which follows the style. */
static void test_dump_at_big(void **state)
{
	(void)state;
	json_t *rows = json_array(), *doc;
	char *whole = NULL, *one = NULL;
	size_t wl, ol;
	unsigned long splits;
	st_style st;

	for (int i = 0; i < 600; i++)
		json_array_append_new(rows, json_pack("{s:i,s:s}", "n", i, "s", "x"));
	doc = json_pack("{s:o}", "rows", rows);
	assert_int_equal(st_set_threads(2, NULL), ST_OK);
	splits = st__json_write_splits();
	assert_int_equal(st_json_dump(doc, NULL, &whole, &wl, NULL), ST_OK);
	assert_int_equal(st__json_write_splits(), splits + 1);
	assert_int_equal(st_json_dump_at(doc, NULL, 0, &one, &ol, NULL), ST_OK);
	assert_int_equal(st__json_write_splits(), splits + 2);
	assert_int_equal(wl, ol + 1);
	assert_int_equal(whole[ol], '\n');
	assert_memory_equal(whole, one, ol);
	assert_int_equal(one[ol], '\0');
	free(one);
	free(whole);
	/* a style without the newline: st_json_dump writes what st_json_dump_at writes */
	st_style_checkpoint(&st);
	assert_int_equal(st_json_dump(doc, &st, &whole, &wl, NULL), ST_OK);
	assert_int_equal(st_json_dump_at(doc, &st, 0, &one, &ol, NULL), ST_OK);
	assert_int_equal(wl, ol);
	assert_memory_equal(whole, one, ol);
	assert_int_equal(whole[wl - 1], '}');
	free(one);
	free(whole);
	st_set_threads(0, NULL);
	json_decref(doc);
}

/* st__json_equal, the library's one equality: a key holding "\u0000" equals itself (jansson's
 * json_equal looks keys up as C strings and never finds it), numbers by value, objects in any
 * order, arrays in order, strings by every byte. */
static void test_json_equal(void **state)
{
	(void)state;
	const char *t = "{\"a\\u0000b\":{\"x\\u0000\":1},\"c\":[1,\"s\\u0000t\"]}";
	json_t *a = NULL, *b = NULL, *c = NULL;
	assert_int_equal(st_json_parse(&a, t, strlen(t), NULL, NULL, NULL, NULL, NULL), ST_OK);
	assert_int_equal(st_json_parse(&b, t, strlen(t), NULL, NULL, NULL, NULL, NULL), ST_OK);
	assert_false(json_equal(a, b)); /* jansson's */
	assert_true(st__json_equal(a, b));
	assert_true(st__json_equal(a, a));
	/* another order */
	t = "{\"c\":[1.0,\"s\\u0000t\"],\"a\\u0000b\":{\"x\\u0000\":1e0}}";
	assert_int_equal(st_json_parse(&c, t, strlen(t), NULL, NULL, NULL, NULL, NULL), ST_OK);
	assert_true(st__json_equal(a, c));
	json_decref(c);
	/* what differs: the bytes after a NUL, an array's order, a key's bytes after a NUL */
	static const char *const other[] = {
		"{\"a\\u0000b\":{\"x\\u0000\":1},\"c\":[1,\"s\\u0000u\"]}",
		"{\"a\\u0000b\":{\"x\\u0000\":1},\"c\":[\"s\\u0000t\",1]}",
		"{\"a\\u0000c\":{\"x\\u0000\":1},\"c\":[1,\"s\\u0000t\"]}",
		"{\"a\\u0000b\":{\"x\\u0000\":2},\"c\":[1,\"s\\u0000t\"]}",
		"{\"a\\u0000b\":{\"x\\u0000\":1},\"c\":[1,\"s\\u0000t\"],\"d\":null}",
		NULL};
	for (int i = 0; other[i]; i++) {
		assert_int_equal(st_json_parse(&c, other[i], strlen(other[i]), NULL, NULL, NULL, NULL,
					       NULL),
				 ST_OK);
		assert_false(st__json_equal(a, c));
		assert_false(st__json_equal(c, a));
		json_decref(c);
	}
	/* numbers by value, kinds otherwise */
	c = json_integer(1);
	json_t *r = json_real(1.0);
	assert_true(st__json_equal(c, r));
	assert_false(st__json_equal(c, json_true()));
	assert_false(st__json_equal(json_null(), json_false()));
	assert_true(st__json_equal(json_null(), json_null()));
	assert_false(st__json_equal(NULL, json_null()));
	assert_true(st__json_equal(NULL, NULL));
	json_decref(c);
	json_decref(r);
	json_decref(a);
	json_decref(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numbers_as_go),
		cmocka_unit_test(test_strings_as_go),
		cmocka_unit_test(test_string_scan_every_offset),
		cmocka_unit_test(test_string_escapes_everywhere),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_kinds_sort_maps_only),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_go_leniency),
		cmocka_unit_test(test_nested_pointer),
		cmocka_unit_test(test_style_detection),
		cmocka_unit_test(test_write_read_equal),
		cmocka_unit_test(test_split_same_result),
		cmocka_unit_test(test_split_limits_and_shapes),
		cmocka_unit_test(test_dupkey_split),
		cmocka_unit_test(test_dupkey_reparse),
		cmocka_unit_test(test_dupkey_lazy_fallback_keeps_callers),
		cmocka_unit_test(test_json_equal),
		cmocka_unit_test(test_dump_at),
		cmocka_unit_test(test_dump_at_big),
		cmocka_unit_test(test_dupkey_nul),
		cmocka_unit_test(test_first_value),
		cmocka_unit_test(test_big_number),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
