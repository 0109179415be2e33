/*
 * libcurl and libpq, loaded when a URL first needs them (dl.c), not when the program starts:
 * together they bring about thirty shared libraries (TLS, HTTP/2, SSH, Kerberos, LDAP...)
 * whose loading was half the start of every command, a query of a local index included.
 *
 * Included after <curl/curl.h> or <libpq-fe.h> by the few files that call them (http.c,
 * pgurl.c, postgres.c, lib/index/pg.c, lib/index/pgsql.c), it turns each call into a call through the table
 * st__curl or st__pq. The entry points load first: st__curl_load (st__http_new, through its
 * one-time setup) and st__pq_load (st__pg_url_parse, before every connection); the calls
 * that may meet a handle the library never made (a NULL PGconn, PGresult, CURL or list) are
 * no-ops without one, as libcurl's and libpq's own are.
 */
#ifndef ST_STORE_DL_H
#define ST_STORE_DL_H

#include "internal.h"

#include <curl/curl.h>
#include <libpq-fe.h>

#define ST__CURL_FNS(X)                                                                        \
	X(curl_global_init)                                                                    \
	X(curl_easy_init)                                                                      \
	X(curl_easy_setopt)                                                                    \
	X(curl_easy_perform)                                                                   \
	X(curl_easy_getinfo)                                                                   \
	X(curl_easy_reset)                                                                     \
	X(curl_easy_cleanup)                                                                   \
	X(curl_easy_strerror)                                                                  \
	X(curl_slist_append)                                                                   \
	X(curl_slist_free_all)

#define ST__PQ_FNS(X)                                                                          \
	X(PQconnectdbParams)                                                                   \
	X(PQconndefaults)                                                                      \
	X(PQconninfoFree)                                                                      \
	X(PQstatus)                                                                            \
	X(PQerrorMessage)                                                                      \
	X(PQsetNoticeProcessor)                                                                \
	X(PQdb)                                                                                \
	X(PQport)                                                                              \
	X(PQfinish)                                                                            \
	X(PQexec)                                                                              \
	X(PQexecParams)                                                                        \
	X(PQprepare)                                                                           \
	X(PQdescribePrepared)                                                                  \
	X(PQgetResult)                                                                         \
	X(PQputCopyData)                                                                       \
	X(PQputCopyEnd)                                                                        \
	X(PQresultStatus)                                                                      \
	X(PQresultErrorField)                                                                  \
	X(PQntuples)                                                                           \
	X(PQnfields)                                                                           \
	X(PQfname)                                                                             \
	X(PQftype)                                                                             \
	X(PQgetvalue)                                                                          \
	X(PQgetlength)                                                                         \
	X(PQgetisnull)                                                                         \
	X(PQcmdTuples)                                                                         \
	X(PQclear)

#define ST__DL_MEMBER(name) __typeof__(name) *name;
typedef struct st__curl_api {
	ST__CURL_FNS(ST__DL_MEMBER)
} st__curl_api;
typedef struct st__pq_api {
	ST__PQ_FNS(ST__DL_MEMBER)
} st__pq_api;
#undef ST__DL_MEMBER

extern st__curl_api st__curl;
extern st__pq_api st__pq;

/* Loads the library once per process (later calls: its first answer). ST_OK, or
 * ST_EUNSUPPORTED: "SCHEME: cannot load libcurl (NAME): dlopen's message; install it
 * (Debian, Ubuntu: libcurl4)" (libpq: libpq5), `scheme` naming what needed it. */
int st__curl_load(const char *scheme, st_error *err);
int st__pq_load(const char *scheme, st_error *err);

/* (st__dl_names, the tests' choice of names: store_impl.h) */

/* NULL is no handle: nothing to free (and nothing loaded to call, when none was ever made) */
static inline void st__dl_curl_easy_cleanup(CURL *h)
{
	if (h)
		st__curl.curl_easy_cleanup(h);
}
static inline void st__dl_curl_slist_free_all(struct curl_slist *l)
{
	if (l)
		st__curl.curl_slist_free_all(l);
}
static inline void st__dl_PQconninfoFree(PQconninfoOption *o)
{
	if (o)
		st__pq.PQconninfoFree(o);
}
static inline void st__dl_PQfinish(PGconn *c)
{
	if (c)
		st__pq.PQfinish(c);
}
static inline void st__dl_PQclear(PGresult *r)
{
	if (r)
		st__pq.PQclear(r);
}

#ifndef ST_DL_IMPL
#undef curl_easy_setopt /* curl.h's type-checking wrapper */
#undef curl_easy_getinfo
#define curl_global_init st__curl.curl_global_init
#define curl_easy_init st__curl.curl_easy_init
#define curl_easy_setopt st__curl.curl_easy_setopt
#define curl_easy_perform st__curl.curl_easy_perform
#define curl_easy_getinfo st__curl.curl_easy_getinfo
#define curl_easy_reset st__curl.curl_easy_reset
#define curl_easy_cleanup st__dl_curl_easy_cleanup
#define curl_easy_strerror st__curl.curl_easy_strerror
#define curl_slist_append st__curl.curl_slist_append
#define curl_slist_free_all st__dl_curl_slist_free_all
#define PQconnectdbParams st__pq.PQconnectdbParams
#define PQconndefaults st__pq.PQconndefaults
#define PQconninfoFree st__dl_PQconninfoFree
#define PQstatus st__pq.PQstatus
#define PQerrorMessage st__pq.PQerrorMessage
#define PQsetNoticeProcessor st__pq.PQsetNoticeProcessor
#define PQdb st__pq.PQdb
#define PQport st__pq.PQport
#define PQfinish st__dl_PQfinish
#define PQexec st__pq.PQexec
#define PQexecParams st__pq.PQexecParams
#define PQprepare st__pq.PQprepare
#define PQdescribePrepared st__pq.PQdescribePrepared
#define PQgetResult st__pq.PQgetResult
#define PQputCopyData st__pq.PQputCopyData
#define PQputCopyEnd st__pq.PQputCopyEnd
#define PQresultStatus st__pq.PQresultStatus
#define PQresultErrorField st__pq.PQresultErrorField
#define PQntuples st__pq.PQntuples
#define PQnfields st__pq.PQnfields
#define PQfname st__pq.PQfname
#define PQftype st__pq.PQftype
#define PQgetvalue st__pq.PQgetvalue
#define PQgetlength st__pq.PQgetlength
#define PQgetisnull st__pq.PQgetisnull
#define PQcmdTuples st__pq.PQcmdTuples
#define PQclear st__dl_PQclear
#endif

#endif
