/*
 * Loading a DIY stack (lib/store/diy.c is the backend): the stack's object, chosen by a listing
 * of <stack>.json[.gz|.zst] or named by the caller (st_load_opts.key, from the listing that
 * resolved the stack: on an object store each listing is a round trip), read whole from a
 * network store, or as a file from a local directory.
 */
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>

/* The object a load reads: opts->key (st_load_opts version 3) when given, on a store that is no
 * local directory (*hinted 1; a local listing costs little), else the stack's newest object
 * (NULL: none). A key that is no object of the stack is refused. */
static int load_key(st_backend *b, const char *ref, const st_load_opts *opts, char **key,
		    int *hinted, st_error *err)
{
	const char *hint = opts && opts->version >= 3 && !st_backend_root(b) ? opts->key : NULL;
	char *prefix = NULL;
	size_t n;
	int rc, ours;

	*key = NULL;
	*hinted = 0;
	if (!hint)
		return st__diy_object(b, ref, key, err);
	if ((rc = st__diy_stack_prefix(b, ref, &prefix, err)) != ST_OK)
		return rc;
	n = strlen(prefix); /* <stacks>/[<project>/]<stack>.json */
	ours = !strncmp(hint, prefix, n) &&
	       (!strcmp(hint + n, "") || !strcmp(hint + n, ".gz") || !strcmp(hint + n, ".zst"));
	free(prefix);
	if (!ours)
		return st__err(err, ST_EINVAL, "st_load_opts.key '%s' is no object of stack '%s'",
			       hint, ref);
	*hinted = 1;
	return (*key = st_strdup(hint)) ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}

/* Reads the object *key of a stack; one named by the caller (`hinted`) that has gone since (a
 * save in another compression, a move) is replaced by the stack's newest object, listed. */
static int read_object(st_backend *b, const char *ref, char **key, int hinted, size_t max,
		       char **data, size_t *len, st_error *err)
{
	st_store *store = st_backend_store(b);
	st_error e;
	int rc;

	st_error_clear(&e);
	rc = st_store_read(store, *key, max, data, len, NULL, hinted ? &e : err);
	if (!hinted || rc == ST_OK)
		return rc;
	if (rc != ST_ENOTFOUND)
		return st__err_copy(err, &e);
	free(*key);
	if ((rc = st__diy_object(b, ref, key, err)) == ST_OK && !*key)
		rc = st__err(err, ST_ENOTFOUND, "stack '%s' has no state in backend '%s'", ref,
			     st_backend_url(b));
	return rc ? rc : st_store_read(store, *key, max, data, len, NULL, err);
}

/* A stack's object from a store that is no local directory, read whole, then parsed. */
static int load_remote(st_backend *b, const char *ref, char **key, int hinted,
		       const st_load_opts *opts, st_state **out, st_error *err)
{
	char *where = NULL, *data = NULL, *plain = NULL;
	size_t len = 0, plen = 0, max = opts ? opts->max_size : 0;
	st_compression comp = ST_COMPRESS_NONE;
	int rc;

	st__phase(NULL);
	rc = read_object(b, ref, key, hinted, max, &data, &len, err);
	if (rc == ST_OK && !(where = st__store_where(st_backend_store(b), *key))) {
		free(data);
		rc = st__err(err, ST_ENOMEM, "out of memory");
	}
	if (rc == ST_OK) /* (takes data) */
		rc = st__decompress(data, len, max, where, &plain, &plen, &comp, err);
	if (rc == ST_OK)
		st__phase("load: downloaded");
	if (rc == ST_OK && opts && opts->version >= 2 && opts->lazy) {
		/* lazily, as a file is: the state keeps the downloaded text */
		rc = st__state_load_lazy_text(out, plain, plen, where, opts, err);
		plain = NULL;
		if (rc == ST_OK)
			st__phase(st__lazy_count(*out) ? "load: parsed (lazy)" : "load: parsed");
	} else if (rc == ST_OK) {
		rc = st_state_load_buffer(out, plain, plen, where, opts, err);
	}
	if (rc == ST_OK)
		(*out)->compression = comp;
	free(plain);
	free(where);
	return rc;
}

int st__diy_load(st_backend *b, const char *ref, const st_load_opts *opts, st_state **out,
		 st_error *err)
{
	char *key = NULL, *where = NULL;
	int hinted = 0, rc;

	*out = NULL;
	if ((rc = load_key(b, ref, opts, &key, &hinted, err)) != ST_OK)
		return rc;
	if (!key)
		return st__err(err, ST_ENOTFOUND, "stack '%s' has no state in backend '%s'", ref,
			       st_backend_url(b));
	if (!st_backend_root(b)) {
		rc = load_remote(b, ref, &key, hinted, opts, out, err);
	} else if ((rc = st__store_file_check(st_backend_store(b), key, err)) == ST_OK) {
		/* a local file: loaded as a file (mapped when it is big and plain) */
		if (!(where = st__store_where(st_backend_store(b), key)))
			rc = st__err(err, ST_ENOMEM, "out of memory");
		else
			rc = st_state_load_file(out, where, opts, err);
	}
	free(where);
	free(key);
	return rc;
}

int st_backend_load_json(st_backend *b, const char *ref, size_t max_size, json_t **out,
			 st_style *style, st_problems *problems, char **where_out, st_error *err)
{
	ST_ASSERT_ARG_AS(ref, "stack");
	ST_ASSERT_ARG(out);
	st_store *store;
	char *key = NULL, *where = NULL, *local = NULL;
	int rc;

	ST_ASSERT_ARG(b);
	*out = NULL;
	if (where_out)
		*where_out = NULL;
	if (st__backend_is_cloud(b))
		return st__cloud_load_json(b, ref, max_size, out, style, problems, where_out, err);
	if (!(store = st_backend_store(b)))
		return st__err(err, ST_EUNSUPPORTED, "backend '%s' is no DIY backend",
			       st_backend_url(b));
	if ((rc = st__diy_object(b, ref, &key, err)) != ST_OK)
		return rc;
	if (!key) {
		rc = st__err(err, ST_ENOTFOUND, "stack '%s' has no state in backend '%s'", ref,
			     st_backend_url(b));
		goto out;
	}
	if ((rc = st__store_file_check(store, key, err)) != ST_OK)
		goto out;
	if (!(where = st__store_where(store, key))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	if ((local = st__store_local_path(store, key))) {
		/* a local file: mapped as the parser goes, not read whole */
		rc = st_json_load_file(out, local, max_size, NULL, style, problems, err);
		goto out;
	}
	rc = st__store_load_json(store, key, max_size, where, out, style, problems, err);
out:
	if (rc == ST_OK && where_out) {
		*where_out = where;
		where = NULL;
	}
	free(local);
	free(where);
	free(key);
	return rc;
}

int st_backend_load(st_backend *b, const char *stack, const st_load_opts *opts, st_state **out,
		    st_error *err)
{
	ST_ASSERT_ARG(b);
	ST_ASSERT_ARG(stack);
	ST_ASSERT_ARG(out);
	int rc = st__load_opts_check(opts, err);
	if (rc != ST_OK) {
		*out = NULL;
		return rc;
	}
	return b->ops->load(b, stack, opts, out, err);
}
