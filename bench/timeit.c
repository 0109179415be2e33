/*
 * bench/timeit: runs a command several times and prints its median wall time in seconds and the
 * largest peak resident set size in KiB, as "MEDIAN_S MAX_RSS_KIB". The command's output goes to
 * /dev/null; a failing run makes timeit fail.
 *
 *   timeit RUNS CMD [ARG...]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int runs;
	double *t;
	long maxrss = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: timeit RUNS CMD [ARG...]\n");
		return 2;
	}
	runs = atoi(argv[1]);
	if (runs < 1)
		runs = 1;
	t = calloc((size_t)runs, sizeof(*t));
	for (int i = 0; i < runs; i++) {
		struct timespec a, b;
		struct rusage ru;
		int status;
		pid_t pid;
		clock_gettime(CLOCK_MONOTONIC, &a);
		pid = fork();
		if (pid == 0) {
			int fd = open("/dev/null", O_WRONLY);
			dup2(fd, 1);
			dup2(fd, 2);
			execvp(argv[2], argv + 2);
			_exit(127);
		}
		if (wait4(pid, &status, 0, &ru) < 0)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 1)) {
			fprintf(stderr, "timeit: '%s' failed (status %d)\n", argv[2], status);
			return 1;
		}
		t[i] = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
		if (ru.ru_maxrss > maxrss)
			maxrss = ru.ru_maxrss;
	}
	qsort(t, (size_t)runs, sizeof(*t), cmp);
	printf("%.4f %ld\n", runs % 2 ? t[runs / 2] : (t[runs / 2 - 1] + t[runs / 2]) / 2, maxrss);
	return 0;
}
