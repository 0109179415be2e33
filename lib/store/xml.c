/*
 * The XML the object stores answer with: elements by name, text unescaped (see xml.h).
 */
#include "xml.h"

#include "internal.h"

#include <stdlib.h>
#include <string.h>

const char *st__xml_next(const char *p, const char *end, const char *name, const char **in,
			 const char **in_end)
{
	size_t n = strlen(name);
	while (p && p < end) {
		const char *lt = memchr(p, '<', (size_t)(end - p));
		if (!lt || (size_t)(end - lt) < n + 2)
			return NULL;
		p = lt + 1;
		if (memcmp(p, name, n) || (p[n] != '>' && p[n] != ' ' && p[n] != '/' && p[n] != '\t' &&
					   p[n] != '\r' && p[n] != '\n'))
			continue;
		const char *gt = memchr(p + n, '>', (size_t)(end - (p + n)));
		if (!gt)
			return NULL;
		if (gt[-1] == '/') { /* <name/> */
			*in = *in_end = gt + 1;
			return gt + 1;
		}
		const char *c = gt + 1;
		/* the end tag: "</name>" */
		for (const char *q = c; q < end;) {
			const char *lt2 = memchr(q, '<', (size_t)(end - q));
			if (!lt2 || (size_t)(end - lt2) < n + 3)
				return NULL;
			if (lt2[1] == '/' && !memcmp(lt2 + 2, name, n) && lt2[2 + n] == '>') {
				*in = c;
				*in_end = lt2;
				return lt2 + 3 + n;
			}
			q = lt2 + 1;
		}
		return NULL;
	}
	return NULL;
}

/* Appends the UTF-8 encoding of code point `cp`. */
static void add_utf8(st_buf *b, unsigned long cp)
{
	char u[4];
	size_t n;
	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	st_buf_add(b, u, n);
}

char *st__xml_unescape(const char *p, size_t n)
{
	static const struct {
		const char *name;
		char c;
	} ents[] = {{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}};
	st_buf b;
	st_buf_init(&b);
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '&') {
			st_buf_addc(&b, p[i]);
			continue;
		}
		size_t left = n - i - 1;
		const char *e = p + i + 1;
		int done = 0;
		for (size_t k = 0; k < sizeof(ents) / sizeof(ents[0]) && !done; k++) {
			size_t l = strlen(ents[k].name);
			if (left >= l && !memcmp(e, ents[k].name, l)) {
				st_buf_addc(&b, ents[k].c);
				i += l;
				done = 1;
			}
		}
		if (!done && left >= 3 && e[0] == '#') {
			char *stop;
			int hex = e[1] == 'x' || e[1] == 'X';
			unsigned long cp = strtoul(e + 1 + hex, &stop, hex ? 16 : 10);
			/* a character: not NUL, not a surrogate, at most U+10FFFF */
			if (stop > e + 1 + hex && stop < p + n && *stop == ';' && cp && cp <= 0x10ffff &&
			    !(cp >= 0xd800 && cp <= 0xdfff)) {
				add_utf8(&b, cp);
				i += (size_t)(stop - e) + 1;
				done = 1;
			}
		}
		if (!done)
			st_buf_addc(&b, '&');
	}
	return st_buf_take(&b, NULL);
}

char *st__xml_text(const char *p, const char *end, const char *name, int *oom)
{
	const char *in, *in_end;
	char *t;
	if (!st__xml_next(p, end, name, &in, &in_end))
		return NULL;
	t = st__xml_unescape(in, (size_t)(in_end - in));
	if (!t && oom)
		*oom = 1;
	return t;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

char *st__url_decode(const char *p, size_t n, int plus)
{
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int h, l;
		if (p[i] == '%' && i + 2 < n && (h = hexval(p[i + 1])) >= 0 &&
		    (l = hexval(p[i + 2])) >= 0) {
			*o++ = (char)(h * 16 + l);
			i += 2;
		} else if (plus && p[i] == '+') {
			*o++ = ' ';
		} else {
			*o++ = p[i];
		}
	}
	*o = '\0';
	return out;
}

void st__url_split(const char *p, st__url_parts *u)
{
	u->host = p;
	u->hn = strcspn(p, "/?#");
	u->path = p + u->hn;
	u->pn = strcspn(u->path, "?#");
	u->query = u->path[u->pn] == '?' ? u->path + u->pn + 1 : NULL;
	u->qn = u->query ? strcspn(u->query, "#") : 0;
}

char *st__url_prefix(const char *decoded)
{
	size_t n;
	while (*decoded == '/')
		decoded++;
	n = strlen(decoded);
	return st_asprintf("%s%s", decoded, n && decoded[n - 1] != '/' ? "/" : "");
}
