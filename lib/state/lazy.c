/*
 * Lazy states: the load (the resources lib/json/skim.c proves canonical left as skeletons,
 * registered in a side table, lib/json/spans.c), its fallback to the full load, inflation,
 * and the state's view of its table. The contract is in lib/internal.h ("Lazy states") and
 * doc/DESIGN.md.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int st__lazy_span(const st_state *s, const json_t *res, const char **p, size_t *len)
{
	return st__spans_span(s->lazy, res, p, len);
}

int st__lazy_where(const st_state *s, st_style *style, size_t *depth)
{
	return st__spans_where(s->lazy, style, depth);
}

void st__lazy_passed(const st_state *s, const char *p)
{
	st__spans_passed(s->lazy, p);
}

int st__lazy_source(const st_state *s, const char *p, int *fd, off_t *off)
{
	return st__spans_source(s ? s->lazy : NULL, p, fd, off);
}

const char *st__lazy_file_text(const st_state *s, size_t *len)
{
	return st__spans_file(s ? s->lazy : NULL, len, NULL);
}

int st__lazy_unchanged(const st_state *s, st_error *err)
{
	int changed = st__spans_file_changed(s ? s->lazy : NULL);
	if (changed < 0) {
		int e = errno;
		st__err_file(err, s->path);
		return st__err(err, ST_EIO, "cannot stat '%s': %s",
			       s->path ? s->path : "the state file", strerror(e));
	}
	return changed ? st__lazy_rewritten(s, err) : ST_OK;
}

int st__lazy_rewritten(const st_state *s, st_error *err)
{
	st__err_file(err, s->path);
	return st__err(err, ST_ECONFLICT, "'%s' was rewritten in place by another program while "
		       "statetool was using it; nothing was written: run the command again",
		       s->path ? s->path : "the state file");
}

void st__lazy_prehash(st_state *s)
{
	size_t len;
	int fd;
	if (s && !s->prehash && st__spans_file(s->lazy, &len, &fd))
		s->prehash = st__prehash_start(fd);
}

size_t st__lazy_count(const st_state *s)
{
	return st__spans_count(s->lazy);
}

/* The full resource of record r: its span parsed, the skeleton's members (as decoded) in the
 * text's order with the parsed inputs and outputs among them. *out is new. */
static int inflate_res(const st__spans *sp, const json_t *skel, json_t **out, st_error *err)
{
	json_t *full = NULL, *obj;
	int rc = st__spans_parse(sp, skel, &full, err);

	if (rc)
		return rc;
	obj = json_object();
	for (void *it = json_object_iter(full); obj && it; it = json_object_iter_next(full, it)) {
		const char *k = json_object_iter_key(it);
		json_t *v = json_object_get(skel, k);
		if (!v || !strcmp(k, "inputs") || !strcmp(k, "outputs"))
			v = json_object_iter_value(it);
		if (json_object_set(obj, k, v) < 0) {
			json_decref(obj);
			obj = NULL;
		}
	}
	json_decref(full);
	if (!obj)
		return st__err(err, ST_ENOMEM, "out of memory");
	*out = obj;
	return ST_OK;
}

static int inflate_at(st_state *s, json_t *resources, size_t index, st_error *err)
{
	json_t *skel = json_array_get(resources, index), *full = NULL;
	const char *p;
	size_t len;
	int rc;

	if (!st__spans_span(s->lazy, skel, &p, &len))
		return ST_OK;
	if ((rc = inflate_res(s->lazy, skel, &full, err)) != ST_OK)
		return rc;
	json_incref(skel); /* its address is its registration until dropped */
	if (json_array_set_new(resources, index, full) < 0) {
		json_decref(skel);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	st__spans_drop(s->lazy, skel);
	json_decref(skel);
	return ST_OK;
}

int st__lazy_inflate(st_state *s, size_t index, st_error *err)
{
	json_t *resources = st_state_resources(s, 0);
	int keep = s->keymap && st__state_keymap(s) != NULL;
	int rc;

	if (!s->lazy || !resources)
		return ST_OK;
	rc = inflate_at(s, resources, index, err);
	if (rc == ST_OK && keep)
		st__keymap_seal(s->keymap, s->root); /* the tree is still as loaded */
	return rc;
}

int st__lazy_inflate_all(st_state *s, st_error *err)
{
	json_t *resources = st_state_resources(s, 0);
	int keep = s->keymap && st__state_keymap(s) != NULL;
	int rc = ST_OK;

	if (!s->lazy || !resources)
		return ST_OK;
	for (size_t i = 0; i < json_array_size(resources) && st__spans_count(s->lazy) && rc == ST_OK;
	     i++)
		rc = inflate_at(s, resources, i, err);
	if (keep)
		st__keymap_seal(s->keymap, s->root);
	return rc;
}

/* ---- the load ---- */

/* The text (stolen: map or owned) parsed lazily into *out; falls back to the full load.
 * first: a file's text (data after the document read as Pulumi reads the envelope). */
static int load_text(st_state **out, const char *text, size_t len, void *map, int fd,
		     char *owned, const char *name, const st_load_opts *opts, int first,
		     st_error *err)
{
	st_parse_limits lim = ST_PARSE_LIMITS_INIT;
	st_problems problems = {0};
	st_style style;
	json_t *root = NULL;
	unsigned features = ST_FEATURES_ALL;
	st__lazy_rec *recs = NULL;
	size_t n = 0;
	struct stat src = {0};
	int rc;

	*out = NULL;
	if (fd >= 0 && fstat(fd, &src) != 0) {
		close(fd); /* not kept: its runs are written from the text, unchecked */
		fd = -1;
	}
	if (opts)
		lim.max_depth = opts->max_depth;
	lim.first_value = first ? ST_PARSE_FIRST_VALUE : 0;
	rc = st__json_parse_lazy(&root, text, len, name, &lim, &style, &problems, map != NULL,
				 opts ? opts->threads : 0, &features, &recs, &n, err);
	if (rc) {
		st__err_file(err, name);
		st_problems_clear(&problems);
		goto done;
	}
	rc = st_state_from_json(out, root, &style, &problems, name, err);
	st_problems_clear(&problems);
	if (rc)
		goto done;
	(*out)->known_absent = ~features & ST_FEATURES_ALL;
	if (n && (*out)->keymap) {
		/* the decoder respelt a key (Go matches keys without case): inside a skeleton, or
		 * above them, where a later key of another case may have replaced (and freed) the
		 * object whose skeletons were recorded: the full load, simply */
		st_state_free(*out);
		*out = NULL;
		free(recs);
		recs = NULL;
		n = 0;
		rc = first ? st__state_load_file_text(out, text, len, name, opts, err)
			   : st_state_load_buffer(out, text, len, name, opts, err);
		goto done;
	}
	if (n) {
		st__spans_src from = {text, len, map, owned, fd, src, opts ? opts->max_depth : 0};
		size_t depth = (*out)->container != (*out)->root ? 4 : 3;
		st__spans *sp = st__spans_new(&from, (*out)->style, depth, recs, n);
		if (!sp) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto done;
		}
		(*out)->lazy = sp;
		return ST_OK;
	}
done:
	if (rc && *out) {
		st_state_free(*out);
		*out = NULL;
	}
	free(recs);
	if (map)
		munmap(map, len);
	if (fd >= 0)
		close(fd);
	free(owned);
	return rc;
}

int st__state_load_lazy_text(st_state **out, char *buf, size_t len, const char *name,
			     const st_load_opts *opts, st_error *err)
{
	int rc = st__load_opts_check(opts, err);
	if (rc != ST_OK) {
		*out = NULL;
		free(buf);
		return rc;
	}
	return load_text(out, buf, len, NULL, -1, buf, name, opts, 0, err);
}

int st__state_load_lazy(st_state **out, const char *path, const st_load_opts *opts,
			st_error *err)
{
	void *map;
	char *buf;
	size_t len;
	int fd = -1;
	st_compression comp = ST_COMPRESS_NONE;
	const char *shown = strcmp(path, "-") ? path : "<stdin>";
	int rc;

	*out = NULL;
	if ((rc = st__load_opts_check(opts, err)) != ST_OK)
		return rc;
	st__phase(NULL);
	if (strcmp(path, "-") != 0 &&
	    st__map_file_fd(path, opts ? opts->max_size : 0, &map, &len, &fd) == 0) {
		rc = load_text(out, map, len, map, fd, NULL, path, opts, 1, err);
	} else {
		rc = st_file_read(path, opts ? opts->max_size : 0, &buf, &len, &comp, err);
		if (rc)
			return rc;
		rc = load_text(out, buf, len, NULL, -1, buf, shown, opts, 1, err);
	}
	if (rc == ST_OK) {
		(*out)->compression = comp;
		if (!strcmp(path, "-")) {
			free((*out)->path);
			(*out)->path = NULL;
		}
		st__phase(st__lazy_count(*out) ? "load: parsed (lazy)" : "load: parsed");
	}
	return rc;
}
