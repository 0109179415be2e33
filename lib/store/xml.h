/*
 * Reading the small XML documents object stores answer with (S3's listings and errors, Azure's
 * too; private to lib/store). Not a general XML parser: elements are found by name, their
 * text is unescaped (the five entities and character references); attributes, namespaces,
 * comments and CDATA sections are not understood, which these documents never need.
 */
#ifndef ST_XML_H
#define ST_XML_H

#include <stddef.h>

/* The next element named `name` in [p, end) (<name>, <name attr...> or <name/>): its content
 * in [*in, *in_end), and the position after its end tag as the result. NULL when there is none
 * (or it is not closed). Elements are not nested in themselves in these documents. */
const char *st__xml_next(const char *p, const char *end, const char *name, const char **in,
			 const char **in_end);

/* The unescaped text of the first element `name` in [p, end), new; NULL when there is none.
 * *oom (may be NULL) is set when memory ran out. */
char *st__xml_text(const char *p, const char *end, const char *name, int *oom);

/* p[0..n) with XML's entities and character references replaced, new (NULL: out of memory). */
char *st__xml_unescape(const char *p, size_t n);

/* p[0..n) with %XX sequences decoded (and '+' as a space when `plus`), new. */
char *st__url_decode(const char *p, size_t n, int plus);

/* A store URL split after its "scheme://" (azblob://, gs://): the bucket or container up to the
 * first '/', '?' or '#'; the path up to '?' or '#'; the query (after its '?') up to '#'. The
 * pointers are borrowed from the URL; query is NULL when there is none. */
typedef struct st__url_parts {
	const char *host, *path, *query;
	size_t hn, pn, qn;
} st__url_parts;
void st__url_split(const char *p, st__url_parts *u);

/* A store's key prefix from its URL's decoded path: leading '/'s dropped, a '/' added at the end
 * of a non-empty one that has none. New; NULL when out of memory. */
char *st__url_prefix(const char *decoded);

#endif
