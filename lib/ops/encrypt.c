/*
 * Encrypting and re-encrypting the secrets of a state as operations of an edit session
 * (through the session's internal API, lib/ops/session.h): a resource of the state as it was
 * is copied only along the paths to the secrets that change; the session's own copies change
 * in place. Big states of the built-in providers are done on two threads.
 */
#include "secrets/walk.h"
#include "session.h"

#include <pthread.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* encrypt / rekey in an edit session */
typedef struct ectx {
	st_edit *e;
	st_secrets *from, *to;
	int rekey;
	size_t count;
	st_error *err;
} ectx;

/* Does encrypt_one change this secret? */
static int encrypt_wants(void *p, json_t *secret)
{
	ectx *c = p;
	if (st_json_str(secret, "ciphertext"))
		return c->rekey;
	return json_is_string(json_object_get(secret, "plaintext"));
}

static int encrypt_one(void *p, json_t *secret, st__spath *where, const char *urn)
{
	ectx *c = p;
	const char *ct = st_json_str(secret, "ciphertext");
	json_t *ptv = json_object_get(secret, "plaintext");
	char *pt = NULL, *nct = NULL;
	size_t len = 0;
	int rc;

	if (ct && !c->rekey)
		return 0; /* unchanged secrets keep their ciphertext */
	if (ct) {
		rc = st_secrets_decrypt(c->from, ct, &pt, &len, c->err);
		if (rc) {
			st__err_pointer(c->err, st__spath_str(where));
			return rc;
		}
	} else if (json_is_string(ptv)) {
		len = json_string_length(ptv);
		pt = malloc(len + 1);
		if (!pt)
			return st__err(c->err, ST_ENOMEM, "out of memory");
		memcpy(pt, json_string_value(ptv), len + 1);
	} else {
		return 0;
	}
	rc = st_secrets_encrypt(c->to, pt, len, &nct, c->err);
	st_secret_free(pt, len);
	if (rc)
		return rc;
	rc = json_object_set_new(secret, "ciphertext", json_string(nct));
	free(nct);
	if (rc)
		return st__err(c->err, ST_ENOMEM, "out of memory");
	json_object_del(secret, "plaintext");
	c->count++;
	(void)urn;
	return 0;
}

static int encrypt_res(void *p, json_t *arr, size_t i, const char *base)
{
	ectx *c = p;
	json_t *r = st__resource_of(arr, i, base);
	if (r == json_array_get(arr, i) && !st__edit_is_own(c->e, r)) {
		/* a resource of the state as it was: copied along the paths to its secrets */
		json_t *t = NULL;
		size_t before = c->count;
		int rc = st__visit_secrets(r, &t, base, encrypt_wants, encrypt_one, p);
		if (rc == ST_ENOMEM)
			st__err(c->err, ST_ENOMEM, "out of memory");
		if (rc || !t) {
			json_decref(t);
			return rc;
		}
		if (st__edit_put(c->e, arr, i, t) < 0)
			return st__err(c->err, ST_ENOMEM, "out of memory");
		st__edit_report(c->e, "%s: %s %zu secret%s", st_json_str(t, "urn"),
				c->rekey ? "re-encrypted" : "encrypted", c->count - before,
				c->count - before == 1 ? "" : "s");
		return ST_OK;
	}
	if (!st__has_secret(r))
		return 0;
	if (!st__edit_own(c->e, arr, i))
		return st__err(c->err, ST_ENOMEM, "out of memory");
	r = st__resource_of(arr, i, base);
	size_t before = c->count;
	int rc = st__walk_resource(r, base, encrypt_one, p);
	if (!rc && c->count > before)
		st__edit_report(c->e, "%s: %s %zu secret%s", st_json_str(r, "urn"),
				c->rekey ? "re-encrypted" : "encrypted", c->count - before,
				c->count - before == 1 ? "" : "s");
	return rc;
}

/* The resources' secrets on two threads, for the built-in providers (their keys are only
 * read; a custom provider's callbacks may not be safe on two threads): each thread copies and
 * encrypts the resources of its half, then the copies are put in place and reported in file
 * order, as on one thread. */
typedef struct enc_job {
	ectx c; /* the thread's own count and error */
	st_error err;
	json_t *arr;
	size_t from, to;
	json_t **copies;
	size_t *counts;
	const char *dbase;
	int rc;
} enc_job;

static void *enc_main(void *arg)
{
	enc_job *j = arg;
	char base[128];
	for (size_t i = j->from; i < j->to && !j->rc; i++) {
		json_t *r = json_array_get(j->arr, i), *t;
		size_t before = j->c.count;
		int own = st__edit_is_own(j->c.e, r);
		/* the session's own copy changes in place; another is copied along the paths to
		 * the secrets that change */
		snprintf(base, sizeof(base), "%s/resources/%zu", j->dbase, i);
		if (own) {
			t = json_incref(r);
			j->rc = st__walk_resource(t, base, encrypt_one, &j->c);
		} else {
			t = NULL;
			j->rc = st__visit_secrets(r, &t, base, encrypt_wants, encrypt_one, &j->c);
		}
		if (j->rc == ST_ENOMEM)
			st__err(&j->err, ST_ENOMEM, "out of memory");
		j->counts[i] = j->c.count - before;
		j->copies[i] = t;
	}
	return NULL;
}

/* 1: not done here (one thread does it), else the outcome. */
static int encrypt_two_threads(ectx *c)
{
	st_state *s = st__edit_state(c->e);
	json_t *dep = st_state_deployment(s);
	json_t *arr = dep ? json_object_get(dep, "resources") : NULL;
	size_t n = json_array_size(arr);
	json_t **copies;
	size_t *counts;
	enc_job job[2];
	st__two th = {0};
	int rc = ST_OK;

	if (!st__two_worth(ST__T_ENCRYPT, n, 0) || !st__secrets_builtin(c->from) ||
	    !st__secrets_builtin(c->to))
		return 1;
	copies = calloc(n, sizeof(*copies));
	counts = calloc(n, sizeof(*counts));
	memset(job, 0, sizeof(job));
	for (int k = 0; k < 2; k++) {
		job[k].c = *c;
		job[k].c.count = 0;
		st_error_clear(&job[k].err);
		job[k].c.err = &job[k].err;
		job[k].arr = arr;
		job[k].from = k ? n / 2 : 0;
		job[k].to = k ? n : n / 2;
		job[k].copies = copies;
		job[k].counts = counts;
		job[k].dbase = st__deployment_pointer(s);
	}
	if (!copies || !counts || !st__two_start(&th, ST__T_ENCRYPT, enc_main, &job[1], 0)) {
		free(copies);
		free(counts);
		return 1;
	}
	enc_main(&job[0]);
	st__two_join(&th);
	for (int k = 0; k < 2 && !rc; k++)
		if (job[k].rc) { /* the first in file order */
			rc = job[k].rc;
			if (c->err)
				*c->err = job[k].err;
		}
	for (size_t i = 0; i < n; i++) {
		json_t *t = copies[i];
		if (!t)
			continue;
		if (rc) {
			json_decref(t);
			continue;
		}
		if (st__edit_put(c->e, arr, i, t) < 0) { /* (the session's own: in place) */
			rc = st__err(c->err, ST_ENOMEM, "out of memory");
			continue;
		}
		c->count += counts[i];
		if (counts[i])
			st__edit_report(c->e, "%s: %s %zu secret%s", st_json_str(t, "urn"),
					c->rekey ? "re-encrypted" : "encrypted", counts[i],
					counts[i] == 1 ? "" : "s");
	}
	free(copies);
	free(counts);
	return rc;
}

/* Encrypts (or re-encrypts) every secret of the session's state. */
static int encrypt_all(ectx *c)
{
	st_state *s = st__edit_state(c->e);
	json_t *dep = st_state_deployment(s), *ops;
	const char *dbase = st__deployment_pointer(s);
	char base[128];
	int rc = encrypt_two_threads(c);

	if (rc == 1)
		return st__each_resource(s, encrypt_res, c);
	if (rc)
		return rc;
	ops = dep ? json_object_get(dep, "pending_operations") : NULL;
	for (size_t i = 0; i < json_array_size(ops); i++) {
		snprintf(base, sizeof(base), "%s/pending_operations/%zu/resource", dbase, i);
		if ((rc = encrypt_res(c, ops, i, base)) != 0)
			return rc;
	}
	return ST_OK;
}

int st_edit_secrets_encrypt(st_edit *e, st_secrets *s, size_t *count, st_error *err)
{
	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(s);
	ectx c = {e, s, s, 0, 0, err};
	st__edit_op op;
	int rc;

	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(s);
	if (count)
		*count = 0;
	if ((rc = st__edit_op_begin(e, &op, err)) != ST_OK)
		return rc;
	rc = st__edit_op_end(e, &op, encrypt_all(&c));
	if (rc == ST_OK && count)
		*count = c.count;
	return rc;
}

static int rekey(ectx *c)
{
	json_t *sp;
	int rc = encrypt_all(c);
	if (rc)
		return rc;
	st__phase("secrets: re-encrypted");
	if (!(sp = st_secrets_provider_json(c->to)))
		return st__err(c->err, ST_ENOMEM, "out of memory");
	if ((rc = st__edit_set_member(c->e, "secrets_providers", sp, c->err)) != ST_OK)
		return rc;
	st__edit_report(c->e, "secrets provider: %s with a new salt", st_secrets_type(c->to));
	return ST_OK;
}

int st_edit_secrets_rekey(st_edit *e, st_secrets *from, st_secrets *to, size_t *count,
			  st_error *err)
{
	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(from);
	ST_ASSERT_ARG(to);
	ectx c = {e, from, to, 1, 0, err};
	st__edit_op op;
	int rc;

	ST_ASSERT_ARG(e);
	ST_ASSERT_ARG(from);
	ST_ASSERT_ARG(to);
	st__phase("secrets: keys derived");
	if (count)
		*count = 0;
	if (!st_state_deployment(st__edit_state(e)))
		return st__err(err, ST_EINVAL, "the state has no deployment");
	if ((rc = st__edit_op_begin(e, &op, err)) != ST_OK)
		return rc;
	rc = st__edit_op_end(e, &op, rekey(&c));
	if (rc == ST_OK && count)
		*count = c.count;
	return rc;
}

int st__secrets_encrypt_resource(json_t *r, st_secrets *to, size_t *count, st_error *err)
{
	ectx c = {NULL, to, to, 0, 0, err};
	int rc = st__walk_resource(r, "", encrypt_one, &c);
	if (rc == ST_ENOMEM)
		st__err(err, ST_ENOMEM, "out of memory");
	if (count)
		*count += c.count;
	return rc;
}

int st__secrets_reencrypt(json_t *r, st_secrets *from, st_secrets *to, size_t *count,
			  st_error *err)
{
	ectx c = {NULL, from, to, 1, 0, err};
	int rc = st__walk_resource(r, "", encrypt_one, &c);
	if (count)
		*count += c.count;
	return rc;
}
