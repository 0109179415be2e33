/*
 * The reader's edges (lib/json/read.c is the parser): Go's quoting of an offending byte, the
 * place of an offset, the end of the input as a json.Decoder meets it, and data after the
 * document (st_parse_limits.first_value); and st_json_parse, the public entry point.
 */
#include "json/read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRAILING_RULE "json/trailing-data"
#define TRAILING_AT "data after the document at line %d, column %d (byte %lld)"
#define TRAILING_GO "(json.Unmarshal refuses it in a checkpoint: "
#define TRAILING_FMT TRAILING_AT " is not read: `pulumi stack import` and `pulumi import " \
	"--file` read the first JSON value only " TRAILING_GO "%s)"

/* Go's quoteChar: the byte as the rune of its value, quoted as strconv.Quote quotes it: 'x',
 * '\'', '"', '\\', '\n' and Go's other short escapes, '\x01' for other controls and DEL,
 * '\u0080' for what is not printable up to U+00A0 (and U+00AD), else the character ('ÿ'). */
const char *st__json_quote_char(int c, char buf[16])
{
	static const char shorts[] = "abtnvfr"; /* \a (7) to \r (13) */
	if (c == '\'')
		return "'\\''";
	if (c == '"')
		return "'\"'";
	if (c == '\\')
		return "'\\\\'";
	if (c >= 7 && c <= 13)
		snprintf(buf, 16, "'\\%c'", shorts[c - 7]);
	else if (c < 0x20 || c == 0x7f)
		snprintf(buf, 16, "'\\x%02x'", c);
	else if ((c >= 0x80 && c <= 0xa0) || c == 0xad)
		snprintf(buf, 16, "'\\u%04x'", c);
	else if (c >= 0x80)
		snprintf(buf, 16, "'%c%c'", 0xc0 | (c >> 6), 0x80 | (c & 0x3f));
	else
		snprintf(buf, 16, "'%c'", c);
	return buf;
}

/* The line (1-based) and the start of the line of `at`. */
int st__json_line_of(const parser *ps, const unsigned char *at, const unsigned char **bol)
{
	int line = 1;
	*bol = ps->start;
	for (const unsigned char *q = ps->start; q < at; q++)
		if (*q == '\n') {
			line++;
			*bol = q + 1;
		}
	return line;
}

/* Go's json.Decoder at the end of its input: "EOF" when only white space came before it,
 * else "unexpected EOF" (stream.go readValue). */
const char *st__json_decoder_eof(const parser *ps)
{
	for (const unsigned char *q = ps->start; q < ps->end; q++)
		if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r')
			return "unexpected EOF";
	return "EOF";
}

/* Data after the value (at ps->p), read as json.Decoder reads it: a warning saying where, with
 * json.Unmarshal's error for st__json_trailing_refuse. */
int st__json_trailing_warning(parser *ps)
{
	const unsigned char *bol;
	char q[16], msg[96];
	int line = st__json_line_of(ps, ps->p, &bol);
	snprintf(msg, sizeof(msg), "invalid character %s after top-level value",
		 st__json_quote_char(*ps->p, q));
	if (ps->problems &&
	    st_problems_add(ps->problems, ST_SEV_WARNING, TRAILING_RULE, "", NULL, TRAILING_FMT,
			    line, (int)(ps->p - bol) + 1, (long long)(ps->p - ps->start),
			    msg) != ST_OK) {
		st__json_fail_at(ps, ps->p, ST_ENOMEM, "out of memory");
		return ST_ENOMEM;
	}
	return ST_OK;
}

int st__json_trailing_refuse(st_problems *pr, st_error *err)
{
	for (size_t i = 0; pr && i < pr->count; i++) {
		st_problem *p = &pr->items[i];
		const char *go;
		int line = 0, col = 0;
		long long off = -1;
		if (strcmp(p->rule, TRAILING_RULE))
			continue;
		/* the message is TRAILING_FMT's: Go's error between TRAILING_GO and the last ')' */
		go = strstr(p->message, TRAILING_GO);
		go = go ? go + strlen(TRAILING_GO) : p->message + strlen(p->message);
		if (sscanf(p->message, TRAILING_AT, &line, &col, &off) != 3)
			line = col = 0, off = -1;
		st__err(err, ST_EPARSE, "%.*s", (int)(strlen(go) ? strlen(go) - 1 : 0), go);
		if (err && err->code == ST_EPARSE) {
			err->line = line;
			err->column = col;
			err->offset = off;
		}
		/* json.Unmarshal checks the syntax before anything: no other problem stands */
		st__problems_truncate(pr, 0);
		return ST_EPARSE;
	}
	return ST_OK;
}

int st_json_parse(json_t **out, const char *buf, size_t len, const char *name,
		  const st_parse_limits *limits, st_style *style_out, st_problems *problems,
		  st_error *err)
{
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(buf || !len);
	int rc;
	if (limits && (rc = st__opts_version(limits->version, ST_PARSE_LIMITS_VERSION,
					     "st_parse_limits", err)) != ST_OK) {
		*out = NULL;
		return rc;
	}
	return st__json_parse_ex(out, buf, len, name, limits, style_out, problems, 0, 0, NULL,
				 err);
}
