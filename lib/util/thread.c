/* Thread policy: may a second thread be used? The caller's choice (an option's `threads`, else
 * the process-wide one of st_set_threads), else whether two processors are online. The
 * library never reads the environment for it (the CLI maps STATETOOL_THREADS). And the one
 * helper that runs work on a second thread, with the one table of thresholds. */
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

/* ---- two threads ---- */

/* The one table of thresholds: from how big (in the site's unit) work is worth a second
 * thread. Below it the thread costs more than it saves; 0: always (when the policy allows). */
static const struct {
	const char *name;
	size_t min;
} sites[ST__T_COUNT] = {
	[ST__T_PARSE] = {"json read (bytes)", 1u << 20},
	[ST__T_SKIM] = {"json lazy read (bytes)", 1u << 20},
	[ST__T_WRITE] = {"json write (array elements)", 512},
	[ST__T_DECODE] = {"go decode (array elements)", 4096},
	[ST__T_INTEGRITY] = {"integrity property walk (resources)", 5000},
	[ST__T_VALIDATE] = {"validate schemas beside integrity (resources)", 500},
	[ST__T_COMMIT] = {"commit: features and diff beside the check (resources)", 500},
	[ST__T_COMMIT_SAVE] = {"commit: the check beside the write (resources)", 500},
	[ST__T_COMMIT_PAIR] = {"commit pair: two checks (resources of both)", 1000},
	[ST__T_MOVE] = {"move: two checks (resources of both)", 1000},
	[ST__T_REFSCAN] = {"reference scan (resources)", 5000},
	[ST__T_ENCRYPT] = {"secrets encrypt and rekey (resources)", 500},
	[ST__T_JOURNAL_HASH] = {"journal: old objects hashed", 0},
	[ST__T_JOURNAL_STAGE] = {"journal: second side staged", 0},
	[ST__T_PREHASH] = {"move: old objects hashed ahead", 0},
	[ST__T_INDEX] = {"index: stacks read beside the writes (stacks to read)", 8},
	[ST__T_LIST] = {"directory listing: entries stat'ed (entries)", 2000},
};

static unsigned long runs[ST__T_COUNT];

int st__two_worth(st__tsite site, size_t n, int threads)
{
	return n >= sites[site].min && st__threads_ok_for(threads);
}

int st__two_start(st__two *t, st__tsite site, void *(*fn)(void *), void *arg, size_t stack)
{
	pthread_attr_t attr;
	t->started = 0;
	if (pthread_attr_init(&attr) != 0)
		return 0;
	if (stack)
		pthread_attr_setstacksize(&attr, stack);
	t->started = pthread_create(&t->th, &attr, fn, arg) == 0;
	pthread_attr_destroy(&attr);
	if (t->started)
		__atomic_add_fetch(&runs[site], 1, __ATOMIC_RELAXED);
	return t->started;
}

void st__two_join(st__two *t)
{
	if (t->started)
		pthread_join(t->th, NULL);
	t->started = 0;
}

int st__two_run(st__tsite site, size_t n, int threads, void *(*a)(void *), void *arg_a,
		void *(*b)(void *), void *arg_b)
{
	st__two t = {0};
	int two = st__two_worth(site, n, threads) && st__two_start(&t, site, b, arg_b, 0);
	a(arg_a);
	if (two)
		st__two_join(&t);
	else
		b(arg_b);
	return two;
}

unsigned long st__two_count(st__tsite site)
{
	return __atomic_load_n(&runs[site], __ATOMIC_RELAXED);
}
