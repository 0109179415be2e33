/*
 * The index in PostgreSQL, private to its two files: pg.c (opening, updates, the filters'
 * queries) and pgsql.c (--sql, checked before it runs).
 */
#ifndef ST_INDEX_PGIX_H
#define ST_INDEX_PGIX_H

#include "ix.h"
#include "store/pg.h"

struct st_ixpg {
	st_pgc c;
	int readonly;
	st_changes *notes; /* borrowed from st_index_open: what an update notes */
	int rebuilding;    /* meta has IX_REBUILDING: a full update's end removes it */
};

/* A statement with text parameters on the index's connection (made when needed); *out (may
 * be NULL) gets its result. Errors name the index and `what`. */
int st__ixpg_exec(st_ixpg *p, const char *sql, int n, const char *const *vals, PGresult **out,
		  const char *what, st_error *err);
/* The failure of a result (or of the connection), as pg.c words it: ST_EREFUSED for a write
 * in a read-only transaction, ST_EINVAL for the statement's own errors, else ST_EIO. */
int st__ixpg_fail(st_ixpg *p, PGresult *r, const char *what, st_error *err);
void st__ixpg_rollback(st_ixpg *p);
/* Hands each row of `r` to `row`, the columns named as in `named` (a result, or a prepared
 * statement's description, with the same columns). ST_OK, or the callback's result. */
int st__ixpg_rows(const PGresult *r, const PGresult *named, st_index_row_fn row, void *ctx,
		  st_error *err);

/* What a query tree that PostgreSQL stored (pg_rewrite.ev_action, nodeToString's text) names,
 * each kind as an array literal of OIDs ("{16570,16571}", "{}" for none). */
enum { IXPG_REL, IXPG_FUNC, IXPG_OPER, IXPG_TYPE, IXPG_NREFS };
typedef struct ixpg_refs {
	st_buf oids[IXPG_NREFS];
	char node[48]; /* the first node of a kind --sql never runs (a cast to a domain, XML,
			* TABLESAMPLE, one this file does not know...), "" when none */
} ixpg_refs;

/* Reads `tree` into *out: ST_OK or ST_ENOMEM. Free with st__ixpg_refs_free (also after an
 * error). */
int st__ixpg_tree_refs(const char *tree, ixpg_refs *out);
void st__ixpg_refs_free(ixpg_refs *r);

#endif
