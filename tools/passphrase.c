/* Passphrases: from the environment, a file, or a no-echo prompt; never from argv. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#define MAX_PASSPHRASE 4096

void cli_passphrase_free(char *p)
{
	if (p)
		sodium_free(p);
}

static char *secure_copy(const char *s, size_t n)
{
	char *p;
	if (sodium_init() < 0)
		return NULL;
	p = sodium_malloc(n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

static int from_file(const char *path, char **out, size_t *len)
{
	struct stat sb;
	char buf[MAX_PASSPHRASE + 2];
	ssize_t n;
	size_t a = 0, b;
	int fd;

	if (stat(path, &sb) < 0) {
		cli_errorf("cannot read passphrase file '%s': %s", path, strerror(errno));
		return EXIT_FAIL;
	}
	if (S_ISDIR(sb.st_mode)) {
		cli_errorf("passphrase file '%s' is a directory", path);
		return EXIT_FAIL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cli_errorf("cannot read passphrase file '%s': %s", path, strerror(errno));
		return EXIT_FAIL;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0) {
		cli_errorf("cannot read passphrase file '%s': %s", path, strerror(errno));
		return EXIT_FAIL;
	}
	if ((size_t)n > MAX_PASSPHRASE) {
		sodium_memzero(buf, sizeof(buf));
		cli_errorf("passphrase file '%s' is longer than %d bytes", path, MAX_PASSPHRASE);
		return EXIT_FAIL;
	}
	/* trimmed, as Pulumi trims it */
	b = (size_t)n;
	while (a < b && (buf[a] == ' ' || buf[a] == '\t' || buf[a] == '\n' || buf[a] == '\r'))
		a++;
	while (b > a && (buf[b - 1] == ' ' || buf[b - 1] == '\t' || buf[b - 1] == '\n' ||
			 buf[b - 1] == '\r'))
		b--;
	/* an empty passphrase (an empty file) is a passphrase, as it is to Pulumi */
	*out = secure_copy(buf + a, b - a);
	*len = b - a;
	sodium_memzero(buf, sizeof(buf));
	return *out ? EXIT_OK : EXIT_FAIL;
}

static int prompt_once(int fd, const char *prompt, char *buf, size_t size, size_t *len)
{
	struct termios old, noecho;
	ssize_t n;
	size_t k = 0;
	char c;

	if (write(fd, prompt, strlen(prompt)) < 0)
		return -1;
	if (tcgetattr(fd, &old) < 0)
		return -1;
	noecho = old;
	noecho.c_lflag &= (tcflag_t)~ECHO;
	tcsetattr(fd, TCSAFLUSH, &noecho);
	while ((n = read(fd, &c, 1)) == 1 && c != '\n' && c != '\r')
		if (k + 1 < size)
			buf[k++] = c;
	tcsetattr(fd, TCSAFLUSH, &old);
	if (write(fd, "\n", 1) < 0)
		return -1;
	buf[k] = '\0';
	*len = k;
	return n < 0 ? -1 : 0;
}

int cli_passphrase(const char *env, const char *env_file, const char *flag_file,
		   const char *prompt, int confirm, char **out, size_t *len)
{
	const char *v = getenv(env);
	char a[MAX_PASSPHRASE + 1], b[MAX_PASSPHRASE + 1];
	size_t la = 0, lb = 0;
	int fd, rc;

	*out = NULL;
	*len = 0;
	if (v) {
		*out = secure_copy(v, strlen(v));
		*len = strlen(v);
		return *out ? EXIT_OK : EXIT_FAIL;
	}
	if ((v = getenv(env_file)) && *v)
		return from_file(v, out, len);
	if (flag_file)
		return from_file(flag_file, out, len);
	fd = isatty(STDIN_FILENO) ? open("/dev/tty", O_RDWR | O_CLOEXEC) : -1;
	if (fd < 0) {
		cli_errorf("passphrase must be set with %s or %s environment variables (or "
			   "--%spassphrase-file)",
			   env, env_file, strstr(env, "_NEW") ? "new-" : "");
		return EXIT_FAIL;
	}
	rc = prompt_once(fd, prompt, a, sizeof(a), &la);
	if (rc == 0 && confirm) {
		rc = prompt_once(fd, "Re-enter the passphrase: ", b, sizeof(b), &lb);
		if (rc == 0 && (la != lb || memcmp(a, b, la))) {
			cli_errorf("the passphrases do not match");
			rc = -2;
		}
	}
	close(fd);
	if (rc == 0)
		*out = secure_copy(a, la);
	*len = la;
	sodium_memzero(a, sizeof(a));
	sodium_memzero(b, sizeof(b));
	if (rc == -1)
		cli_errorf("cannot read the passphrase from the terminal");
	return rc == 0 && *out ? EXIT_OK : EXIT_FAIL;
}

/* The new key is derived on a second thread while this one derives the old: a rekey waits
 * for one key derivation, not two. */
typedef struct new_key_job {
	const char *pass;
	size_t len;
	st_secrets *out;
	st_error err;
	int rc;
} new_key_job;

static void *derive_new(void *arg)
{
	new_key_job *j = arg;
	j->rc = st_secrets_new_passphrase(&j->out, j->pass, j->len, &j->err);
	return NULL;
}

/* The stack config's own key (pkg/secrets/passphrase: a config is opened with the salt it
 * holds), with the state's passphrase: cfg->out stays NULL when the salt is the state's. */
static int open_config_key(json_t *sp, const char *pass, size_t len, cli_config_key *cfg)
{
	const char *ssalt = json_string_value(json_object_get(json_object_get(sp, "state"), "salt"));
	const char *type = json_string_value(json_object_get(sp, "type"));
	json_t *csp;
	st_error err;
	int rc;

	if (!cfg || !cfg->salt ||
	    (type && !strcmp(type, "passphrase") && ssalt && !strcmp(ssalt, cfg->salt)))
		return EXIT_OK;
	st_error_clear(&err);
	csp = json_pack("{s:s,s:{s:s}}", "type", "passphrase", "state", "salt", cfg->salt);
	rc = csp ? st_secrets_open(&cfg->out, csp, pass ? pass : "", len, &err) : ST_ENOMEM;
	json_decref(csp);
	if (rc == ST_OK)
		return EXIT_OK;
	if (!csp)
		cli_errorf("out of memory");
	else
		cli_errorf("%s: its encryptionsalt: %s", cfg->file, err.message);
	return EXIT_FAIL;
}

/* What opening a state's secrets begins with: its provider (*sp; none is an error) and the
 * current passphrase, read when the provider is a passphrase one and `need_key` is set, or
 * when the stack config has its own salt. Prints errors; returns an exit code. */
static int open_begin(st_state *s, const char *passphrase_file, int need_key,
		      cli_config_key *cfg, json_t **sp, char **pass, size_t *len)
{
	json_t *dep = st_state_deployment(s);
	const char *type;

	*pass = NULL;
	*len = 0;
	if (cfg)
		cfg->out = NULL;
	*sp = dep ? json_object_get(dep, "secrets_providers") : NULL;
	type = json_string_value(json_object_get(*sp, "type"));
	if (!type) {
		cli_errorf("the state has no secrets provider (no 'secrets_providers')");
		return EXIT_FAIL;
	}
	if ((!strcmp(type, "passphrase") && need_key) || (cfg && cfg->salt))
		return cli_passphrase("PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE",
				      passphrase_file,
				      "Enter your passphrase to unlock config/secrets: ", 0, pass, len);
	return EXIT_OK;
}

int cli_open_secrets_cfg(st_state *s, const char *passphrase_file, int need_key,
			 cli_config_key *cfg, st_secrets **out)
{
	json_t *sp;
	char *pass;
	size_t len;
	st_error err;
	int rc;

	st_error_clear(&err);
	*out = NULL;
	if ((rc = open_begin(s, passphrase_file, need_key, cfg, &sp, &pass, &len)) != EXIT_OK)
		return rc;
	rc = st_secrets_open(out, sp, pass, len, &err);
	if (rc != ST_OK)
		cli_error(&err);
	int crc = rc == ST_OK ? open_config_key(sp, pass, len, cfg) : EXIT_FAIL;
	cli_passphrase_free(pass);
	if (crc != EXIT_OK) {
		st_secrets_free(*out);
		*out = NULL;
	}
	return crc;
}

int cli_open_secrets(st_state *s, const char *passphrase_file, int need_key, st_secrets **out)
{
	return cli_open_secrets_cfg(s, passphrase_file, need_key, NULL, out);
}

int cli_open_secrets_pair(st_state *s, const char *passphrase_file,
			  const char *new_passphrase_file, cli_config_key *cfg, st_secrets **from,
			  st_secrets **to)
{
	json_t *sp;
	char *pass, *newpass = NULL;
	size_t len, newlen = 0;
	new_key_job job;
	pthread_t th;
	int threaded, rc;
	st_error err;

	st_error_clear(&err);
	*from = *to = NULL;
	if ((rc = open_begin(s, passphrase_file, 1, cfg, &sp, &pass, &len)) != EXIT_OK)
		return rc;
	rc = cli_passphrase("PULUMI_CONFIG_PASSPHRASE_NEW", "PULUMI_CONFIG_PASSPHRASE_NEW_FILE",
			    new_passphrase_file, "Enter the new passphrase: ", 1, &newpass, &newlen);
	if (rc != EXIT_OK) {
		cli_passphrase_free(pass);
		return rc;
	}
	memset(&job, 0, sizeof(job));
	job.pass = newpass;
	job.len = newlen;
	st_error_clear(&job.err);
	threaded = pthread_create(&th, NULL, derive_new, &job) == 0;
	rc = st_secrets_open(from, sp, pass, len, &err);
	if (threaded)
		pthread_join(th, NULL);
	else
		derive_new(&job);
	*to = job.out;
	int crc = rc == ST_OK && job.rc == ST_OK ? open_config_key(sp, pass, len, cfg) : EXIT_OK;
	cli_passphrase_free(pass);
	cli_passphrase_free(newpass);
	if (rc != ST_OK || job.rc != ST_OK || crc != EXIT_OK) {
		if (crc == EXIT_OK)
			cli_error(rc != ST_OK ? &err : &job.err);
		st_secrets_free(*from);
		st_secrets_free(*to);
		*from = *to = NULL;
		return EXIT_FAIL;
	}
	return EXIT_OK;
}
