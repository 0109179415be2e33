/*
 * libcurl and libpq loaded on first use (dl.h says why and how the calls reach them).
 */
#define ST_DL_IMPL
#include "dl.h"
#include "store_impl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The sonames of the versions built against (their ABIs: libcurl 4 since 2006, libpq 5 since
 * 2005); a build for others gives -DST_LIBCURL_SONAME=... */
#ifndef ST_LIBCURL_SONAME
#define ST_LIBCURL_SONAME "libcurl.so.4"
#endif
#ifndef ST_LIBPQ_SONAME
#define ST_LIBPQ_SONAME "libpq.so.5"
#endif

st__curl_api st__curl;
st__pq_api st__pq;

typedef struct lib {
	const char *what, *soname, *package, *const *fns;
	void **table;
	size_t n;
	int state;     /* 0 not tried, 1 loaded, -1 failed (why) */
	char why[384]; /* "cannot load ...", without the scheme */
} lib;

#define ST__DL_NAME(name) #name,
static const char *const curl_fns[] = {ST__CURL_FNS(ST__DL_NAME)};
static const char *const pq_fns[] = {ST__PQ_FNS(ST__DL_NAME)};
#undef ST__DL_NAME

static lib curl_lib = {"libcurl", ST_LIBCURL_SONAME, "libcurl4", curl_fns, (void **)&st__curl,
		       sizeof(curl_fns) / sizeof(*curl_fns), 0, ""};
static lib pq_lib = {"libpq", ST_LIBPQ_SONAME, "libpq5", pq_fns, (void **)&st__pq,
		     sizeof(pq_fns) / sizeof(*pq_fns), 0, ""};
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* dlopen and every function of the table, under mu. The handle is kept for the process (the
 * libraries keep threads and global state of their own: never unloaded). */
static void open_lib(lib *l)
{
	void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
	const char *e;

	if (!h) {
		e = dlerror();
		snprintf(l->why, sizeof(l->why), "cannot load %s (%s): %s; install it (Debian, Ubuntu: "
			 "%s)", l->what, l->soname, e ? e : "not found", l->package);
		__atomic_store_n(&l->state, -1, __ATOMIC_RELEASE);
		return;
	}
	for (size_t i = 0; i < l->n; i++) {
		void *f = dlsym(h, l->fns[i]);
		if (!f) {
			snprintf(l->why, sizeof(l->why), "cannot load %s (%s): it has no %s (a version "
				 "older than statetool needs)", l->what, l->soname, l->fns[i]);
			memset(l->table, 0, l->n * sizeof(void *));
			dlclose(h);
			__atomic_store_n(&l->state, -1, __ATOMIC_RELEASE);
			return;
		}
		/* (a function's address through a data pointer: POSIX dlsym's own contract) */
		memcpy(&l->table[i], &f, sizeof(f));
	}
	__atomic_store_n(&l->state, 1, __ATOMIC_RELEASE);
}

static int load(lib *l, const char *scheme, st_error *err)
{
	if (__atomic_load_n(&l->state, __ATOMIC_ACQUIRE) == 1)
		return ST_OK;
	pthread_mutex_lock(&mu);
	if (!l->state)
		open_lib(l);
	int ok = l->state == 1;
	pthread_mutex_unlock(&mu);
	return ok ? ST_OK : st__err(err, ST_EUNSUPPORTED, "%s: %s", scheme, l->why);
}

int st__curl_load(const char *scheme, st_error *err)
{
	return load(&curl_lib, scheme, err);
}

int st__pq_load(const char *scheme, st_error *err)
{
	return load(&pq_lib, scheme, err);
}

void st__dl_names(const char *curl, const char *pq)
{
	pthread_mutex_lock(&mu);
	curl_lib.soname = curl ? curl : ST_LIBCURL_SONAME;
	pq_lib.soname = pq ? pq : ST_LIBPQ_SONAME;
	curl_lib.state = pq_lib.state = 0;
	pthread_mutex_unlock(&mu);
}
