/* Thread policy (may a second thread be used?) and the step timings. */
#include "internal.h"

#include <pthread.h>
#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long online_cpus;

static void count_cpus(void)
{
	online_cpus = sysconf(_SC_NPROCESSORS_ONLN);
}

int st__threads_ok(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	const char *env = getenv("STATETOOL_THREADS");
	if (env && !strcmp(env, "1"))
		return 0;
	if (env && !strcmp(env, "2"))
		return 1; /* even on one processor (the tests use it) */
	pthread_once(&once, count_cpus);
	return online_cpus >= 2;
}

/* STATETOOL_TIMINGS: what each step took, on standard error (called on the main thread). */
void st__phase(const char *name)
{
	static double first, last;
	struct timespec ts;
	double now;
	if (!getenv("STATETOOL_TIMINGS"))
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	if (!first)
		first = last = now;
	if (name)
		fprintf(stderr, "statetool: timing: %8.1f ms (at %8.1f ms) %s\n", (now - last) * 1e3,
			(now - first) * 1e3, name);
	last = now;
}
