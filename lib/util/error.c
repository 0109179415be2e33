/* Error records and change reports (problem lists: lib/json/problems.c). */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void st__assert_fail(const char *what, const char *func)
{
	/* the one message the library prints: a programming error, as assert()'s */
	fprintf(stderr, "libstatetool: %s: '%s' must not be NULL\n", func, what);
	abort();
}

unsigned long st_version(void)
{
	return ST_VERSION_NUMBER;
}

const char *st_version_string(void)
{
	return ST_VERSION;
}

const char *st_strerror(int code)
{
	switch (code) {
	case ST_OK: return "ok";
	case ST_EIO: return "i/o error";
	case ST_EPARSE: return "parse error";
	case ST_EFORMAT: return "not a deployment state";
	case ST_EVERSION: return "unsupported version";
	case ST_EFEATURE: return "unsupported feature";
	case ST_EINTEGRITY: return "integrity error";
	case ST_ENOTFOUND: return "not found";
	case ST_EAMBIGUOUS: return "ambiguous";
	case ST_ELOCKED: return "locked";
	case ST_EINVAL: return "invalid argument";
	case ST_ENOMEM: return "out of memory";
	case ST_ESECRETS: return "secrets error";
	case ST_EPASSPHRASE: return "passphrase error";
	case ST_ECONFLICT: return "conflict";
	case ST_ELIMIT: return "limit exceeded";
	case ST_EUNSUPPORTED: return "unsupported";
	case ST_EREFUSED: return "refused";
	case ST_EEXIST: return "exists";
	case ST_EAUTH: return "authentication failed";
	case ST_EOUTCOME: return "outcome unknown";
	default: return "unknown error";
	}
}

void st_error_clear(st_error *err)
{
	if (!err)
		return;
	memset(err, 0, sizeof(*err));
	err->offset = -1;
}

int st__verr(st_error *err, int code, const char *fmt, va_list ap)
{
	if (!err || err->code != 0)
		return code;
	err->code = code;
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	return code;
}

int st__bad_flags(st_error *err, unsigned flags, unsigned known, const char *names)
{
	return st__err(err, ST_EINVAL, "unknown bits %#x in flags %#x (the flags are %s)",
		       flags & ~known, flags, names);
}

int st__err(st_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	st__verr(err, code, fmt, ap);
	va_end(ap);
	return code;
}

int st__opts_version(unsigned version, unsigned current, const char *what, st_error *err)
{
	if (version >= 1 && version <= current)
		return ST_OK;
	return st__err(err, ST_EINVAL,
		       "unsupported options version %u of %s (this library knows 1 to %u; "
		       "initialise it with its _INIT macro)",
		       version, what, current);
}

int st__err_copy(st_error *err, const st_error *from)
{
	if (err && !err->code && from->code)
		*err = *from;
	return from->code;
}

void st__err_file(st_error *err, const char *file)
{
	if (err && file && !err->file[0])
		snprintf(err->file, sizeof(err->file), "%s", file);
}

void st__err_pointer(st_error *err, const char *pointer)
{
	if (err && pointer && !err->pointer[0])
		snprintf(err->pointer, sizeof(err->pointer), "%s", pointer);
}

int st_changes_add(st_changes *c, const char *fmt, ...)
{
	ST_ASSERT_ARG(fmt);
	va_list ap;
	char *line = NULL;

	if (!c)
		return ST_OK;
	if (c->count == c->capacity) {
		size_t cap = c->capacity ? c->capacity * 2 : 16;
		char **lines = realloc(c->lines, cap * sizeof(*lines));
		if (!lines)
			return ST_ENOMEM;
		c->lines = lines;
		c->capacity = cap;
	}
	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) < 0)
		line = NULL;
	va_end(ap);
	if (!line)
		return ST_ENOMEM;
	c->lines[c->count++] = line;
	return ST_OK;
}

void st_changes_clear(st_changes *c)
{
	for (size_t i = 0; i < c->count; i++)
		free(c->lines[i]);
	free(c->lines);
	memset(c, 0, sizeof(*c));
}
