/* String helpers that return NULL when memory runs out. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *st_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

char *st_strndup(const char *s, size_t n)
{
	char *p = malloc(n + 1);
	if (!p)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *st_strconcat(const char *first, ...)
{
	va_list ap;
	size_t n = 0;
	char *p, *w;
	va_start(ap, first);
	for (const char *a = first; a; a = va_arg(ap, const char *))
		n += strlen(a);
	va_end(ap);
	if (!(p = w = malloc(n + 1)))
		return NULL;
	va_start(ap, first);
	for (const char *a = first; a; a = va_arg(ap, const char *)) {
		size_t k = strlen(a);
		memcpy(w, a, k);
		w += k;
	}
	va_end(ap);
	*w = '\0';
	return p;
}

int st__sorted(const void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	const char *p = base;
	for (size_t i = 1; i < n; i++)
		if (cmp(p + (i - 1) * size, p + i * size) > 0)
			return 0;
	return 1;
}

char *st_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *p = NULL;
	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		p = NULL;
	va_end(ap);
	return p;
}

/* `s` as one shell word: as it is when it holds nothing a shell treats specially, else in single
 * quotes (an s3:// URL's "&" and "?", a path's spaces). New. */
char *st__shell_word(const char *s)
{
	st_buf b;
	int plain = *s != '\0';
	for (const char *p = s; *p && plain; p++)
		plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			       "_./:=,+@%~-",
			       *p) != NULL;
	if (plain)
		return st_strdup(s);
	st_buf_init(&b);
	st_buf_addc(&b, '\'');
	for (const char *p = s; *p; p++) {
		if (*p == '\'')
			st_buf_adds(&b, "'\\''");
		else
			st_buf_addc(&b, *p);
	}
	st_buf_addc(&b, '\'');
	return st_buf_take(&b, NULL);
}
