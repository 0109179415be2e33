/* Path helpers for the local file system. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int st_path_is_symlink(const char *path)
{
	struct stat sb;
	return lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode);
}

char *st_path_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return st_strdup(".");
	if (slash == path)
		return st_strdup("/");
	return st_strndup(path, (size_t)(slash - path));
}

char *st_path_join(const char *a, const char *b)
{
	size_t la = strlen(a);
	if (la && a[la - 1] == '/')
		return st_asprintf("%s%s", a, b);
	return st_asprintf("%s/%s", a, b);
}

int st_mkdir_p(const char *path, mode_t mode, st_error *err)
{
	char *p = st_strdup(path);
	if (!p)
		return st__err(err, ST_ENOMEM, "out of memory");
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			int e = errno;
			st__err(err, ST_EIO, "cannot create directory '%s': %s", p, strerror(e));
			free(p);
			return ST_EIO;
		}
		*s = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST) {
		int e = errno;
		st__err(err, ST_EIO, "cannot create directory '%s': %s", p, strerror(e));
		free(p);
		return ST_EIO;
	}
	free(p);
	return ST_OK;
}

/* Removes "." and ".." segments of a path (RFC 3986 5.2.4), in place. */
void st_path_remove_dots(char *path)
{
	size_t n = strlen(path), nseg = 0;
	char **seg = calloc(n + 2, sizeof(*seg));
	char *copy = st_strdup(path), *p, *save = NULL;
	int absolute = path[0] == '/', trailing = n > 0 && path[n - 1] == '/';

	if (!seg || !copy) {
		free(seg);
		free(copy);
		return;
	}
	for (p = strtok_r(copy, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		trailing = 0;
		if (!strcmp(p, ".")) {
			trailing = 1;
		} else if (!strcmp(p, "..")) {
			if (nseg)
				nseg--;
			trailing = 1;
		} else {
			seg[nseg++] = p;
		}
	}
	if (n > 0 && path[n - 1] == '/')
		trailing = 1;
	char *o = path;
	if (absolute)
		*o++ = '/';
	for (size_t i = 0; i < nseg; i++) {
		size_t l = strlen(seg[i]);
		memmove(o, seg[i], l);
		o += l;
		if (i + 1 < nseg || trailing)
			*o++ = '/';
	}
	*o = '\0';
	free(seg);
	free(copy);
}
