/* The environment variables that steer the library for a run of the program: the library
 * reads none of them itself, it is told through st_set_threads and st_set_hooks.
 *   STATETOOL_THREADS=1|2    the thread choice of every call (and of the loads and saves)
 *   STATETOOL_TIMINGS=...    each step's time on standard error
 *   STATETOOL_CRASH_AT=OP:N  SIGKILL at step N of a durable write OP (write, pair, index):
 *                            the crash tests (tests/cli/t_crash.sh, t_move.sh) */
#include "cli.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cli_threads;

/* The timing clock, shared by every thread that reports a step. */
static pthread_mutex_t clock_mu = PTHREAD_MUTEX_INITIALIZER;
static double clock_first, clock_last;
static const char *crash_op; /* STATETOOL_CRASH_AT's OP, or NULL */
static size_t crash_oplen;
static long crash_step;

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
		kill(getpid(), SIGKILL);
}

void cli_env_apply(void)
{
	const char *threads = getenv("STATETOOL_THREADS");
	const char *timings = getenv("STATETOOL_TIMINGS");
	const char *crash_at = getenv("STATETOOL_CRASH_AT");
	st_hooks h = ST_HOOKS_INIT;

	/* only "1" and "2" mean something; anything else is the automatic choice */
	if (threads && (!strcmp(threads, "1") || !strcmp(threads, "2")))
		cli_threads = threads[0] - '0';
	st_set_threads(cli_threads, NULL);
	if (timings && *timings)
		h.phase = timing;
	if (crash_at && *crash_at) {
		const char *colon = strchr(crash_at, ':');
		if (colon && colon > crash_at) {
			crash_op = crash_at;
			crash_oplen = (size_t)(colon - crash_at);
			crash_step = strtol(colon + 1, NULL, 10);
			h.step = crash;
		}
	}
	if (h.phase || h.step)
		st_set_hooks(&h, NULL);
}
