/*
 * Locks. A backend stack's lock is Pulumi's own (pkg/backend/diy/lock.go): a file
 * .pulumi/locks/organization/<project>/<stack>/<uuid>.json holding
 * {"pid","username","hostname","timestamp"}; taking it means listing the directory (any lock
 * there refuses), writing ours, and listing again (a lock that appeared meanwhile makes us
 * withdraw ours and refuse). A plain state file's lock is <file>.lock, created exclusively,
 * with the same content.
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct st_lock {
	char *path; /* our lock file */
};

static char *lock_content(void)
{
	char host[256] = "", ts[64];
	const char *user = getenv("USER");
	struct passwd *pw;

	if (gethostname(host, sizeof(host) - 1) < 0)
		strcpy(host, "unknown");
	if (!user || !*user) {
		pw = getpwuid(getuid());
		user = pw ? pw->pw_name : "unknown";
	}
	st_now_rfc3339(ts, sizeof(ts));
	json_t *o = json_pack("{s:f,s:s,s:s,s:s}", "pid", (double)getpid(), "username", user,
			      "hostname", host, "timestamp", ts);
	char *out = NULL;
	size_t len;
	st_style st;
	st_style_checkpoint(&st);
	if (o)
		st_json_dump(o, &st, &out, &len, NULL);
	json_decref(o);
	return out;
}

/* "\n  <path>: created by user@host (pid N) at TS", plus a stale-lock hint. */
static void describe_lock(st_buf *b, const char *path)
{
	char *data = NULL;
	size_t len;
	json_t *o = NULL;
	char host[256] = "";

	st_buf_printf(b, "\n  %s: ", path);
	if (st_file_read(path, 1 << 16, &data, &len, NULL, NULL) == ST_OK)
		st_json_parse(&o, data, len, NULL, NULL, NULL, NULL, NULL);
	free(data);
	if (!json_is_object(o)) {
		st_buf_adds(b, "unreadable lock file");
		json_decref(o);
		return;
	}
	const char *user = st_json_str(o, "username"), *h = st_json_str(o, "hostname");
	const char *ts = st_json_str(o, "timestamp");
	double dpid = json_number_value(json_object_get(o, "pid"));
	long pid = dpid >= 1 && dpid <= 4194304 ? (long)dpid : 0; /* beyond Linux's pid_max: none */
	st_buf_printf(b, "created by %s@%s (pid %ld) at %s", user ? user : "?", h ? h : "?", pid,
		      ts ? ts : "?");
	gethostname(host, sizeof(host) - 1);
	if (h && !strcmp(h, host) && pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		st_buf_adds(b, " [stale: that process is no longer running]");
	json_decref(o);
}

/* Lists the *.json lock files in dir other than `mine`. */
static int foreign_locks(const char *dir, const char *mine, st_buf *desc, int *count)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	*count = 0;
	if (!d)
		return errno == ENOENT ? ST_OK : ST_EIO;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
			continue;
		char *p = st_asprintf("%s/%s", dir, de->d_name);
		if (!p)
			continue;
		if (!mine || strcmp(p, mine) != 0) {
			(*count)++;
			describe_lock(desc, p);
		}
		free(p);
	}
	closedir(d);
	return ST_OK;
}

static int locked_error(st_error *err, int count, st_buf *desc, const char *unlock_hint)
{
	st__err(err, ST_ELOCKED,
		"the stack is currently locked by %d lock(s). Either wait for the other "
		"process(es) to end or delete the lock file with `pulumi cancel` (or `%s`).%s",
		count, unlock_hint, desc->data ? desc->data : "");
	st_buf_free(desc);
	return ST_ELOCKED;
}

static char *stack_lock_dir(st_backend *b, const char *stack, char **hint, st_error *err)
{
	char *project = NULL, *name = NULL, *rel, *dir;
	int rc = st__backend_resolve(b, stack, &project, &name, err);
	if (rc)
		return NULL;
	rel = project ? st_asprintf(".pulumi/locks/organization/%s/%s", project, name)
		      : st_asprintf(".pulumi/locks/%s", name);
	if (hint)
		*hint = project ? st_asprintf("statetool unlock --backend %s --stack %s/%s",
					      st_backend_root(b), project, name)
				: st_asprintf("statetool unlock --backend %s --stack %s",
					      st_backend_root(b), name);
	free(project);
	free(name);
	if (!rel) {
		st__err(err, ST_ENOMEM, "out of memory");
		return NULL;
	}
	if (st__backend_check_path(b, rel, err) != ST_OK) {
		free(rel);
		return NULL;
	}
	dir = st_asprintf("%s/%s", st_backend_root(b), rel);
	free(rel);
	if (!dir)
		st__err(err, ST_ENOMEM, "out of memory");
	return dir;
}

static int write_lock_file(const char *path, st_error *err)
{
	char *content = lock_content();
	int fd, rc = ST_OK;

	if (!content)
		return st__err(err, ST_ENOMEM, "out of memory");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;
		free(content);
		return e == EEXIST ? ST_ELOCKED
				   : st__err(err, ST_EIO, "cannot create lock '%s': %s", path,
					     strerror(e));
	}
	size_t len = strlen(content);
	if (write(fd, content, len) != (ssize_t)len || fsync(fd) < 0) {
		rc = st__err(err, ST_EIO, "cannot write lock '%s': %s", path, strerror(errno));
		unlink(path);
	}
	close(fd);
	free(content);
	return rc;
}

int st_lock_stack(st_lock **out, st_backend *b, const char *stack, st_error *err)
{
	char *hint = NULL, *dir = stack_lock_dir(b, stack, &hint, err), uuid[37];
	st_buf desc;
	int count, rc;
	st_lock *lk;

	*out = NULL;
	if (!dir) {
		free(hint);
		return err && err->code ? err->code : ST_EINVAL;
	}
	st_buf_init(&desc);
	foreign_locks(dir, NULL, &desc, &count);
	if (count) {
		rc = locked_error(err, count, &desc, hint);
		free(dir);
		free(hint);
		return rc;
	}
	st_buf_free(&desc);
	rc = st_mkdir_p(dir, 0755, err);
	if (rc) {
		free(dir);
		free(hint);
		return rc;
	}
	lk = calloc(1, sizeof(*lk));
	st_uuid4(uuid);
	if (!lk || !(lk->path = st_asprintf("%s/%s.json", dir, uuid))) {
		free(lk);
		free(dir);
		free(hint);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	rc = write_lock_file(lk->path, err);
	if (rc == ST_OK) {
		st_buf_init(&desc);
		foreign_locks(dir, lk->path, &desc, &count);
		if (count) {
			unlink(lk->path);
			rc = locked_error(err, count, &desc, hint);
		} else {
			st_buf_free(&desc);
		}
	}
	free(dir);
	free(hint);
	if (rc) {
		free(lk->path);
		free(lk);
		return rc;
	}
	*out = lk;
	return ST_OK;
}

int st_lock_file(st_lock **out, const char *path, st_error *err)
{
	st_lock *lk = calloc(1, sizeof(*lk));
	int rc;

	*out = NULL;
	if (!lk || !(lk->path = st_asprintf("%s.lock", path))) {
		free(lk);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	if (st_path_is_symlink(lk->path)) {
		rc = st__err(err, ST_EREFUSED, "refusing to use lock '%s': it is a symbolic link",
			     lk->path);
		free(lk->path);
		free(lk);
		return rc;
	}
	rc = write_lock_file(lk->path, err);
	if (rc == ST_ELOCKED) {
		st_buf desc;
		char *hint = st_asprintf("statetool unlock %s", path);
		st_buf_init(&desc);
		describe_lock(&desc, lk->path);
		locked_error(err, 1, &desc, hint ? hint : "statetool unlock");
		free(hint);
	}
	if (rc) {
		free(lk->path);
		free(lk);
		return rc;
	}
	*out = lk;
	return ST_OK;
}

int st_lock_release(st_lock *lk, st_error *err)
{
	int rc = ST_OK;
	if (!lk)
		return ST_OK;
	if (unlink(lk->path) < 0 && errno != ENOENT)
		rc = st__err(err, ST_EIO,
			     "there was a problem deleting the lock at %s, manual clean up may be "
			     "required: %s",
			     lk->path, strerror(errno));
	free(lk->path);
	free(lk);
	return rc;
}

int st_unlock_stack(st_backend *b, const char *stack, int *removed, st_error *err)
{
	char *dir = stack_lock_dir(b, stack, NULL, err);
	DIR *d;
	struct dirent *de;

	*removed = 0;
	if (!dir)
		return err && err->code ? err->code : ST_EINVAL;
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
			continue;
		char *p = st_asprintf("%s/%s", dir, de->d_name);
		if (p && unlink(p) == 0)
			(*removed)++;
		free(p);
	}
	if (d)
		closedir(d);
	free(dir);
	return ST_OK;
}

int st_unlock_file(const char *path, int *removed, st_error *err)
{
	char *p = st_asprintf("%s.lock", path);
	*removed = 0;
	if (!p)
		return st__err(err, ST_ENOMEM, "out of memory");
	if (unlink(p) == 0)
		*removed = 1;
	else if (errno != ENOENT) {
		int e = errno;
		free(p);
		return st__err(err, ST_EIO, "cannot remove lock '%s.lock': %s", path, strerror(e));
	}
	free(p);
	return ST_OK;
}
