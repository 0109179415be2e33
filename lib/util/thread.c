/* Thread policy: may a second thread be used? The caller's choice (an option's `threads`, else
 * the process-wide one of st_set_threads), else whether two processors are online. The
 * library never reads the environment for it (the CLI maps STATETOOL_THREADS). */
#include "internal.h"

#include <pthread.h>
#include <unistd.h>

static long online_cpus;
static int process_threads; /* st_set_threads; read and written atomically */

static void count_cpus(void)
{
	online_cpus = sysconf(_SC_NPROCESSORS_ONLN);
}

int st__threads_check(int threads, st_error *err)
{
	if (threads < 0 || threads > 2)
		return st__err(err, ST_EINVAL,
			       "threads must be 0 (automatic), 1 (one thread) or 2 (two), not %d",
			       threads);
	return ST_OK;
}

int st_set_threads(int threads, st_error *err)
{
	int rc = st__threads_check(threads, err);
	if (rc == ST_OK)
		__atomic_store_n(&process_threads, threads, __ATOMIC_RELAXED);
	return rc;
}

int st__threads_ok_for(int threads)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	if (threads == 0)
		threads = __atomic_load_n(&process_threads, __ATOMIC_RELAXED);
	if (threads == 1)
		return 0;
	if (threads == 2)
		return 1; /* even on one processor (the tests use it) */
	pthread_once(&once, count_cpus);
	return online_cpus >= 2;
}

int st__threads_ok(void)
{
	return st__threads_ok_for(0);
}
