/* The environment variables that steer the library for a run of the program: the library
 * reads none of them itself, it is told through st_set_threads and st_set_hooks.
 *   STATETOOL_THREADS=1|2    the thread choice of every call (and of the loads and saves)
 *   STATETOOL_TIMINGS=...    each step's time on standard error
 *   STATETOOL_CRASH_AT=OP:N[:SIG]  SIGKILL (or SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGSTOP: SIG
 *                            is INT, TERM, HUP, PIPE or STOP: held there) at step N of a durable write OP (write,
 *                            pair, index; bak:1 between the file store's backup link and its
 *                            rename; rekey, the CLI's own: cli_crash_point): the crash and
 *                            interrupt tests (tests/cli/t_crash.sh, t_move.sh, t_secrets.sh,
 *                            t_interrupt.sh)
 *   STATETOOL_HTTP_CONNECT_TIMEOUT, STATETOOL_HTTP_TIMEOUT (seconds), STATETOOL_HTTP_RETRIES,
 *   STATETOOL_HTTP_BACKOFF_MS   the network stores' st_net_opts
 *   STATETOOL_HTTP_LOG=FILE  one line per HTTP attempt appended to FILE: "METHOD HOST PATH
 *                            STATUS" (the library passes no query string, header or body) */
#include "cli.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cli_threads;
int cli_lazy = 1;

/* The timing clock, shared by every thread that reports a step. */
static pthread_mutex_t clock_mu = PTHREAD_MUTEX_INITIALIZER;
static double clock_first, clock_last;
static const char *crash_op; /* STATETOOL_CRASH_AT's OP, or NULL */
static size_t crash_oplen;
static long crash_step;
static int crash_sig = SIGKILL;

static void timing(void *ctx, const char *name)
{
	struct timespec ts;
	double now;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	pthread_mutex_lock(&clock_mu);
	if (!clock_first)
		clock_first = clock_last = now;
	if (name)
		fprintf(stderr, "%s: timing: %8.1f ms (at %8.1f ms) %s\n", cli_prog,
			(now - clock_last) * 1e3, (now - clock_first) * 1e3, name);
	clock_last = now;
	pthread_mutex_unlock(&clock_mu);
}

static void crash(void *ctx, const char *op, int step)
{
	(void)ctx;
	if (step == crash_step && strlen(op) == crash_oplen && !memcmp(op, crash_op, crash_oplen))
		kill(getpid(), crash_sig);
}

void cli_crash_point(const char *op, int step)
{
	if (crash_op)
		crash(NULL, op, step);
}

/* A duration in seconds (decimals allowed) from the environment, in ms; `def` when unset or
 * not a number. */
static long env_ms(const char *name, long def)
{
	const char *v = getenv(name);
	char *end;
	double d;
	if (!v || !*v)
		return def;
	d = strtod(v, &end);
	return *end || d < 0 || d > 86400.0 ? def : (long)(d * 1000.0 + 0.5);
}

static long env_count(const char *name, long def, long max)
{
	const char *v = getenv(name);
	char *end;
	long n;
	if (!v || !*v)
		return def;
	n = strtol(v, &end, 10);
	return *end || n < 0 || n > max ? def : n;
}

static void http_log(void *ctx, const char *method, const char *host, const char *path,
		     long status)
{
	char line[4096];
	int n = snprintf(line, sizeof(line), "%s %s %s %ld\n", method, host, path, status);
	int fd = open((const char *)ctx, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (n > 0 && (size_t)n < sizeof(line) && write(fd, line, (size_t)n) < 0) {
		/* a test hook: nothing to do about a failed write */
	}
	close(fd);
}

static void net_apply(void)
{
	st_net_opts o = ST_NET_OPTS_INIT;
	const char *log = getenv("STATETOOL_HTTP_LOG");
	o.connect_timeout_ms = env_ms("STATETOOL_HTTP_CONNECT_TIMEOUT", 0);
	o.timeout_ms = env_ms("STATETOOL_HTTP_TIMEOUT", 0);
	o.retries = (int)env_count("STATETOOL_HTTP_RETRIES", -1, 100);
	o.backoff_ms = env_count("STATETOOL_HTTP_BACKOFF_MS", 0, 60000);
	if (log && *log) {
		o.request = http_log;
		o.ctx = (void *)log;
	}
	st_set_net(&o, NULL);
}

/* The library's count of lock objects written or held (interrupt.c holds interrupts back while
 * there are any). */
static void on_locks(void *ctx, size_t n)
{
	(void)ctx;
	cli_locks_busy = n > 0;
}

void cli_env_apply(void)
{
	const char *threads = getenv("STATETOOL_THREADS");
	const char *timings = getenv("STATETOOL_TIMINGS");
	const char *crash_at = getenv("STATETOOL_CRASH_AT");
	const char *lazy = getenv("STATETOOL_LAZY");
	st_hooks h = ST_HOOKS_INIT;

	h.locks = on_locks;
	/* only "1" and "2" mean something; anything else is the automatic choice */
	if (threads && (!strcmp(threads, "1") || !strcmp(threads, "2")))
		cli_threads = threads[0] - '0';
	st_set_threads(cli_threads, NULL);
	if (lazy && !strcmp(lazy, "0"))
		cli_lazy = 0;
	if (timings && *timings)
		h.phase = timing;
	if (crash_at && *crash_at) {
		const char *colon = strchr(crash_at, ':');
		if (colon && colon > crash_at) {
			crash_op = crash_at;
			crash_oplen = (size_t)(colon - crash_at);
			char *end;
			crash_step = strtol(colon + 1, &end, 10);
			crash_sig = !strcmp(end, ":INT")    ? SIGINT
				    : !strcmp(end, ":TERM") ? SIGTERM
				    : !strcmp(end, ":HUP")  ? SIGHUP
				    : !strcmp(end, ":PIPE") ? SIGPIPE
				    : !strcmp(end, ":STOP") ? SIGSTOP
							    : SIGKILL;
			h.step = crash;
		}
	}
	st_set_hooks(&h, NULL);
	net_apply();
}
