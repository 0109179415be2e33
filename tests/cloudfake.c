/*
 * The fake Pulumi Cloud of tests/cloudfake.h as a process, for the CLI tests:
 *   cloudfake DIR     serves DIR (see cloudfake.h), writes its port to DIR/port and runs until
 *                     DIR/stop exists, it is killed, or 10 minutes have passed.
 */

#include "cloudfake.h"

#include <time.h>

int main(int argc, char **argv)
{
	cloudfake cf;
	char p[600], port[32];
	struct stat st;

	if (argc != 2) {
		fprintf(stderr, "usage: cloudfake DIR\n");
		return 2;
	}
	if (cf_start(&cf, argv[1]) < 0) {
		perror("cloudfake");
		return 1;
	}
	snprintf(port, sizeof(port), "%d\n", cf.port);
	cf_write(argv[1], "port", port, strlen(port));
	snprintf(p, sizeof(p), "%s/stop", argv[1]);
	for (time_t t0 = time(NULL); time(NULL) - t0 < 600 && stat(p, &st) < 0;)
		usleep(100000);
	cf_stop(&cf);
	return 0;
}
