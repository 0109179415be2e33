/* The process-wide hooks (st_set_hooks): the library reports its steps to them and never acts
 * on its own (it does not print timings or kill itself; the CLI's hooks do, on request). */
#include "internal.h"

#include <pthread.h>
#include <stddef.h>
#include <string.h>

static pthread_mutex_t hooks_mu = PTHREAD_MUTEX_INITIALIZER;
static st_hooks hooks; /* all NULL: nothing called */

int st_set_hooks(const st_hooks *h, st_error *err)
{
	int rc;

	if (h && (rc = st__opts_version(h->version, ST_HOOKS_VERSION, "st_hooks", err)) != ST_OK)
		return rc;
	pthread_mutex_lock(&hooks_mu);
	memset(&hooks, 0, sizeof(hooks));
	if (h) /* a version 1 caller's struct ends before `locks` */
		memcpy(&hooks, h, h->version == 1 ? offsetof(st_hooks, locks) : sizeof(hooks));
	pthread_mutex_unlock(&hooks_mu);
	return ST_OK;
}

/* A copy taken under the lock: a hook changed meanwhile is called as it was when read. */
static st_hooks current(void)
{
	st_hooks h;
	pthread_mutex_lock(&hooks_mu);
	h = hooks;
	pthread_mutex_unlock(&hooks_mu);
	return h;
}

void st__phase(const char *name)
{
	st_hooks h = current();
	if (h.phase)
		h.phase(h.ctx, name);
}

void st__crash_point(const char *op, int step)
{
	st_hooks h = current();
	if (h.step)
		h.step(h.ctx, op, step);
}

void st__locks_changed(size_t n)
{
	st_hooks h = current();
	if (h.locks)
		h.locks(h.ctx, n);
}
