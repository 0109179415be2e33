/*
 * The patterns of JSON Schemas: ECMA-262 regular expressions, translated to POSIX extended
 * regular expressions (\d \w \s and their negations, (?: groups); a pattern using anything
 * POSIX cannot express (look-around, back-references, \p{...}) is refused.
 */
#include "json/schema.h"

#include <stdlib.h>

/* The POSIX ERE for an ECMA-262 pattern (new), or NULL: for a feature POSIX lacks, or when out of
 * memory (*oom set). */
static char *ecma_to_ere(const char *p, int *oom)
{
	st_buf b;
	int in_class = 0;
	st_buf_init(&b);
	for (; *p; p++) {
		if (*p == '\\') {
			p++;
			switch (*p) {
			case 'd': st_buf_adds(&b, in_class ? "0-9" : "[0-9]"); break;
			case 'D': if (in_class) goto bad; st_buf_adds(&b, "[^0-9]"); break;
			case 'w': st_buf_adds(&b, in_class ? "A-Za-z0-9_" : "[A-Za-z0-9_]"); break;
			case 'W': if (in_class) goto bad; st_buf_adds(&b, "[^A-Za-z0-9_]"); break;
			case 's': st_buf_adds(&b, in_class ? " \t\n\r\f\v" : "[[:space:]]"); break;
			case 'S': if (in_class) goto bad; st_buf_adds(&b, "[^[:space:]]"); break;
			case 't': st_buf_addc(&b, '\t'); break;
			case 'n': st_buf_addc(&b, '\n'); break;
			case 'r': st_buf_addc(&b, '\r'); break;
			case 'f': st_buf_addc(&b, '\f'); break;
			case 'v': st_buf_addc(&b, '\v'); break;
			case '\0': goto bad;
			default:
				if ((*p >= '0' && *p <= '9') || *p == 'p' || *p == 'P' || *p == 'b' ||
				    *p == 'B' || *p == 'u' || *p == 'x' || *p == 'c' || *p == 'k')
					goto bad;
				if (in_class) {
					if (*p == ']' || *p == '\\' || *p == '-' || *p == '^')
						goto bad; /* no portable escape inside [] */
					st_buf_addc(&b, *p);
				} else {
					st_buf_addc(&b, '\\');
					st_buf_addc(&b, *p);
				}
			}
			continue;
		}
		if (in_class) {
			if (*p == ']')
				in_class = 0;
			if (*p == '[' && p[1] == ':')
				goto bad;
			st_buf_addc(&b, *p);
			continue;
		}
		if (*p == '[') {
			in_class = 1;
			st_buf_addc(&b, '[');
			if (p[1] == '^') {
				st_buf_addc(&b, '^');
				p++;
			}
			if (p[1] == ']') { /* "[]" matches nothing in ECMA; POSIX disagrees */
				goto bad;
			}
			continue;
		}
		if (*p == '(' && p[1] == '?') {
			if (p[2] == ':') {
				st_buf_addc(&b, '(');
				p += 2;
				continue;
			}
			goto bad;
		}
		if ((*p == '*' || *p == '+' || *p == '?' || *p == '}') && p[1] == '?')
			goto bad; /* lazy quantifiers */
		st_buf_addc(&b, *p);
	}
	if (in_class)
		goto bad;
	if (b.oom)
		*oom = 1;
	return st_buf_take(&b, NULL);
bad:
	st_buf_free(&b);
	return NULL;
}

int st__schema_regex(regex_t *re, const char *src, st_error *err, const char *where)
{
	int oom = 0, rc;
	char *ere = ecma_to_ere(src, &oom);
	if (oom)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (!ere)
		return st__err(err, ST_EUNSUPPORTED,
			       "pattern '%s' at %s uses regular expression features statetool "
			       "does not support",
			       src, where);
	rc = regcomp(re, ere, REG_EXTENDED | REG_NOSUB);
	free(ere);
	if (rc == REG_ESPACE)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (rc)
		return st__err(err, ST_EUNSUPPORTED, "pattern '%s' at %s does not compile", src,
			       where);
	return ST_OK;
}
