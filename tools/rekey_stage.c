/* secrets rekey --stack-config across a crash: the config's new text is staged beside it
 * (FILE.statetool-rekey, the config's mode, durable) before the state is written, and renamed
 * into place after. A run that finds a staged config decides by the salts which half was
 * done: the staged salt is the state's (the state was written: finish the rename), else the
 * state was not written with its key (remove the staged copy: the config still holds every
 * value). Without the config, the staged copy is its only one: refused, saying why. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *cli_rekey_staged_name(const char *config)
{
	char *out;
	return asprintf(&out, "%s.statetool-rekey", config) < 0 ? NULL : out;
}

/* The folder of `path` synced, so that a rename or a removal in it is durable. */
static void sync_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : NULL;
	int fd = open(dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	free(dir);
}

int cli_rekey_stage(const char *config, const char *text, size_t len)
{
	st_write_opts wo = ST_WRITE_OPTS_INIT;
	char *staged = cli_rekey_staged_name(config);
	struct stat sb;
	st_error err;
	int rc;

	if (!staged) {
		cli_errorf("out of memory");
		return EXIT_FAIL;
	}
	st_error_clear(&err);
	wo.mode = stat(config, &sb) == 0 ? sb.st_mode & 07777 : 0644;
	wo.exact_mode = 1;
	rc = st_file_write_atomic(staged, text, len, &wo, &err);
	if (rc != ST_OK)
		cli_error(&err);
	free(staged);
	return rc == ST_OK ? EXIT_OK : EXIT_FAIL;
}

/* The config as it is kept as FILE.bak (its mode), as a rewrite in place keeps it. */
static int keep_bak(const char *config, st_error *err)
{
	st_write_opts wo = ST_WRITE_OPTS_INIT;
	char *text = NULL, *bak = NULL;
	size_t len = 0;
	struct stat sb;
	int rc;

	if (stat(config, &sb) != 0 && errno == ENOENT)
		return ST_OK; /* nothing to keep */
	if ((rc = st_file_read(config, 16 << 20, &text, &len, NULL, err)) != ST_OK)
		return rc;
	if (asprintf(&bak, "%s.bak", config) < 0) {
		bak = NULL;
		rc = err->code = ST_ENOMEM;
		snprintf(err->message, sizeof(err->message), "out of memory");
	} else {
		wo.mode = sb.st_mode & 07777;
		wo.exact_mode = 1;
		rc = st_file_write_atomic(bak, text, len, &wo, err);
	}
	st_secret_free(text, len); /* ciphertexts only, wiped as every config text is */
	free(bak);
	return rc;
}

int cli_rekey_commit(const char *config)
{
	char *staged = cli_rekey_staged_name(config);
	st_error err;
	int rc = EXIT_FAIL;

	st_error_clear(&err);
	if (!staged) {
		cli_errorf("out of memory");
		return EXIT_FAIL;
	}
	cli_crash_point("rekey", 2); /* the state written, the config staged */
	if (keep_bak(config, &err) != ST_OK) {
		cli_error(&err);
		goto out;
	}
	cli_crash_point("rekey", 3); /* FILE.bak kept, the staged config not yet in place */
	if (rename(staged, config) != 0) {
		cli_errorf("cannot rename '%s' to '%s': %s", staged, config, strerror(errno));
		goto out;
	}
	sync_dir(config);
	rc = EXIT_OK;
out:
	free(staged);
	return rc;
}

/* A config's encryptionsalt (new; NULL: none). *found: the file exists and was read. */
static int salt_of(const char *path, char **salt, int *found)
{
	char *text = NULL;
	size_t len = 0;
	st_error err;
	int rc;

	st_error_clear(&err);
	*salt = NULL;
	*found = 0;
	if (access(path, F_OK) != 0 && errno == ENOENT)
		return EXIT_OK;
	rc = st_file_read(path, 16 << 20, &text, &len, NULL, &err);
	if (rc == ST_OK) {
		*found = 1;
		rc = st_config_scan(text, len, path, salt, NULL, &err);
	}
	st_secret_free(text, len);
	if (rc != ST_OK) {
		cli_error(&err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static const char *state_salt(st_state *s)
{
	json_t *dep = st_state_deployment(s);
	json_t *sp = dep ? json_object_get(dep, "secrets_providers") : NULL;
	const char *type = json_string_value(json_object_get(sp, "type"));
	if (!type || strcmp(type, "passphrase"))
		return NULL;
	return json_string_value(json_object_get(json_object_get(sp, "state"), "salt"));
}

static int same(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

int cli_rekey_resolve(const char *config, st_state *s, const cli_target *t, int settle,
		      int *completed)
{
	char restore[1024];
	char *staged = cli_rekey_staged_name(config);
	char *tsalt = NULL, *csalt = NULL;
	const char *ssalt = state_salt(s);
	int tfound = 0, cfound = 0, rc;

	*completed = 0;
	if (!staged) {
		cli_errorf("out of memory");
		return EXIT_FAIL;
	}
	if ((rc = salt_of(staged, &tsalt, &tfound)) != EXIT_OK || !tfound)
		goto out;
	if (!settle) {
		/* a dry run, or a read without the stack's lock: it changes nothing, and a
		 * staged file may be a running rekey's */
		cli_errorf("'%s' was left by an interrupted `secrets rekey` (or one is running): "
			   "only a run that takes the stack's lock settles it (a dry run, or a state "
			   "read from standard input, does not); nothing done",
			   staged);
		rc = EXIT_FAIL;
		goto out;
	}
	if (same(tsalt, ssalt)) {
		/* the state was written with the staged config's key: the rekey got that far */
		if ((rc = cli_rekey_commit(config)) == EXIT_OK) {
			fprintf(stderr,
				"%s: note: completed the interrupted rekey of '%s': the state and it "
				"are under that rekey's new passphrase (the config before is in "
				"'%s.bak')\n",
				cli_prog, config, config);
			*completed = 1;
		}
		goto out;
	}
	if ((rc = salt_of(config, &csalt, &cfound)) != EXIT_OK)
		goto out;
	if (cfound) {
		/* the state was not written with its key: the staged copy, made from the config,
		 * goes; the config still holds every value */
		if (unlink(staged) != 0 && errno != ENOENT) {
			cli_errorf("cannot remove '%s': %s", staged, strerror(errno));
			rc = EXIT_FAIL;
			goto out;
		}
		sync_dir(staged);
		fprintf(stderr,
			"%s: note: removed '%s', left by a rekey interrupted before the state was "
			"written ('%s' is unchanged)\n",
			cli_prog, staged, config);
		goto out;
	}
	/* (a stack by --stack: its backend's URL may hold a password) */
	if (!t->backend)
		snprintf(restore, sizeof(restore), "%s`", cli_target_name(t));
	else
		snprintf(restore, sizeof(restore), "--stack %s` (with its --backend)",
			 cli_target_name(t));
	cli_errorf("'%s' was left by an interrupted `secrets rekey` and '%s' is missing: the "
		   "state's encryptionsalt is not the staged one, so either the rekey stopped "
		   "before the state was written (the staged values are under the new passphrase "
		   "it was given, the state under the old) or the state was rekeyed and changed "
		   "since; '%s' is the only copy of the config: rename it to '%s' and give the "
		   "passphrase that opens it, or `statetool restore %s to put the state's "
		   "previous version back",
		   staged, config, staged, config, restore);
	rc = EXIT_FAIL;
out:
	free(tsalt);
	free(csalt);
	free(staged);
	return rc;
}
