/*
 * Lazy states: the side table of the resources a lazy load left as skeletons (lib/json/skim.c
 * proves their text canonical), the load itself with its fallback to the full load, and
 * inflation. The contract is in lib/internal.h ("Lazy states") and doc/DESIGN.md.
 */
#include "internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct st__lazy {
	const char *text; /* the state's source text: `map` or `owned` */
	size_t len;
	void *map;        /* a private file mapping (munmap), or NULL */
	size_t map_len;
	char *owned;      /* a read buffer (free), or NULL */
	int fd;           /* the mapped file, open (runs of spans are copied from it), or -1 */
	struct stat src;  /* fd's size and modification time before the parse */
	size_t max_depth;
	st__lazy_rec *v;  /* document order; res NULL once inflated */
	size_t n, live;
	size_t *slots;    /* open addressing by skeleton address: index + 1, 0 empty */
	size_t mask;
	st_style style;   /* the text's style, and the depth of the resources in it */
	size_t depth;
	size_t released;  /* the mapping's pages before this offset were given back */
};

void st__lazy_free(st__lazy *lz)
{
	if (!lz)
		return;
	if (lz->map)
		munmap(lz->map, lz->map_len);
	if (lz->fd >= 0)
		close(lz->fd);
	free(lz->owned);
	free(lz->v);
	free(lz->slots);
	free(lz);
}

static size_t slot_of(const st__lazy *lz, const json_t *res)
{
	uint64_t h = (uint64_t)(uintptr_t)res * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 20) & lz->mask;
}

/* The record of a registered skeleton, or NULL. */
static st__lazy_rec *find(const st__lazy *lz, const json_t *res)
{
	if (!lz || !res)
		return NULL;
	for (size_t i = slot_of(lz, res);; i = (i + 1) & lz->mask) {
		size_t k = lz->slots[i];
		if (!k)
			return NULL;
		if (lz->v[k - 1].res == res)
			return &lz->v[k - 1];
	}
}

static int build_slots(st__lazy *lz)
{
	size_t cap = 16;
	while (cap < 2 * lz->n)
		cap *= 2;
	lz->slots = calloc(cap, sizeof(*lz->slots));
	if (!lz->slots)
		return -1;
	lz->mask = cap - 1;
	for (size_t k = 0; k < lz->n; k++) {
		size_t i = slot_of(lz, lz->v[k].res);
		while (lz->slots[i])
			i = (i + 1) & lz->mask;
		lz->slots[i] = k + 1;
	}
	lz->live = lz->n;
	return 0;
}

int st__lazy_span(const st_state *s, const json_t *res, const char **p, size_t *len)
{
	const st__lazy_rec *r = find(s->lazy, res);
	if (!r)
		return 0;
	*p = s->lazy->text + r->off;
	*len = r->len;
	return 1;
}

int st__lazy_where(const st_state *s, st_style *style, size_t *depth)
{
	if (!s->lazy)
		return 0;
	*style = s->lazy->style;
	*depth = s->lazy->depth;
	return 1;
}

void st__lazy_passed(const st_state *s, const char *p)
{
	st__lazy *lz = s->lazy;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), base, to;

	if (!lz || !lz->map || p < lz->text || p > lz->text + lz->len)
		return;
	base = (uintptr_t)lz->map;
	to = ((uintptr_t)p & ~(page - 1)) - base;
	if (to < lz->released)
		lz->released = 0; /* another write from the start: its pages came back */
	if (to - lz->released >= (8u << 20) &&
	    madvise((void *)(base + lz->released), to - lz->released, MADV_DONTNEED) == 0)
		lz->released = to;
}

int st__lazy_source(const st_state *s, const char *p, int *fd, off_t *off)
{
	const st__lazy *lz = s ? s->lazy : NULL;
	if (!lz || lz->fd < 0 || p < lz->text || p > lz->text + lz->len)
		return 0;
	*fd = lz->fd;
	*off = (off_t)(p - lz->text);
	return 1;
}

const char *st__lazy_file_text(const st_state *s, size_t *len)
{
	const st__lazy *lz = s ? s->lazy : NULL;
	if (!lz || lz->fd < 0)
		return NULL;
	*len = lz->len;
	return lz->text;
}

int st__lazy_unchanged(const st_state *s, st_error *err)
{
	const st__lazy *lz = s ? s->lazy : NULL;
	struct stat now;
	if (!lz || lz->fd < 0)
		return ST_OK;
	if (fstat(lz->fd, &now) != 0) {
		int e = errno;
		st__err_file(err, s->path);
		return st__err(err, ST_EIO, "cannot stat '%s': %s",
			       s->path ? s->path : "the state file", strerror(e));
	}
	if (now.st_size == lz->src.st_size &&
	    now.st_mtim.tv_sec == lz->src.st_mtim.tv_sec &&
	    now.st_mtim.tv_nsec == lz->src.st_mtim.tv_nsec)
		return ST_OK;
	return st__lazy_rewritten(s, err);
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
	if (s && !s->prehash && s->lazy && s->lazy->fd >= 0)
		s->prehash = st__prehash_start(s->lazy->fd);
}

size_t st__lazy_count(const st_state *s)
{
	return s->lazy ? s->lazy->live : 0;
}

/* The full resource of record r: its span parsed, the skeleton's members (as decoded) in the
 * text's order with the parsed inputs and outputs among them. *out is new. */
static int inflate_rec(const st__lazy *lz, const st__lazy_rec *r, json_t **out, st_error *err)
{
	st_parse_limits lim = ST_PARSE_LIMITS_INIT;
	json_t *full = NULL, *obj;
	int rc;

	lim.max_depth = lz->max_depth;
	rc = st__json_parse_ex(&full, lz->text + r->off, r->len, NULL, &lim, NULL, NULL, 0, 1, NULL,
			       err);
	if (rc)
		return rc;
	obj = json_object();
	for (void *it = json_object_iter(full); obj && it; it = json_object_iter_next(full, it)) {
		const char *k = json_object_iter_key(it);
		json_t *v = json_object_get(r->res, k);
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
	st__lazy_rec *r = find(s->lazy, json_array_get(resources, index));
	json_t *full = NULL;
	int rc;

	if (!r)
		return ST_OK;
	if ((rc = inflate_rec(s->lazy, r, &full, err)) != ST_OK)
		return rc;
	if (json_array_set_new(resources, index, full) < 0)
		return st__err(err, ST_ENOMEM, "out of memory");
	r->res = NULL; /* the slot stays; no live skeleton has that record any more */
	s->lazy->live--;
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
	for (size_t i = 0; i < json_array_size(resources) && s->lazy->live && rc == ST_OK; i++)
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
	st__lazy *lz = NULL;
	struct stat src;
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
		lz = calloc(1, sizeof(*lz));
		if (!lz) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto done;
		}
		lz->text = text;
		lz->len = len;
		lz->map = map;
		lz->map_len = len;
		lz->owned = owned;
		lz->fd = fd;
		lz->src = src;
		lz->max_depth = opts ? opts->max_depth : 0;
		lz->style = (*out)->style;
		lz->depth = (*out)->container != (*out)->root ? 4 : 3;
		lz->v = recs;
		lz->n = n;
		recs = NULL;
		if (build_slots(lz) < 0) {
			lz->map = NULL;
			lz->owned = NULL;
			lz->fd = -1;
			st__lazy_free(lz);
			lz = NULL;
			rc = st__err(err, ST_ENOMEM, "out of memory");
			goto done;
		}
		(*out)->lazy = lz;
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
