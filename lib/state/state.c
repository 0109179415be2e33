/*
 * Deployment states: envelopes, versions and faithful serialization (the features: features.c).
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

/* The writer's one refusal of a loaded state's tree (ST__JSON_BIGNUM). */
#define BIGNUM_UNWRITABLE "the state holds a number beyond the float64 range (json/number-" \
	"range, where Pulumi never decodes it as a number), which statetool cannot write back"

static void state_free_fields(st_state *s)
{
	st__keymap_free(s->keymap); /* before the tree: it holds references into it */
	json_decref(s->root);
	st__spans_free(s->lazy);
	st__prehash_free(s->prehash);
	s->prehash = NULL;
	free(s->path);
	st_problems_clear(&s->load_problems);
}

int st__load_opts_check(const st_load_opts *opts, st_error *err)
{
	int rc;
	if (!opts)
		return ST_OK;
	if ((rc = st__opts_version(opts->version, ST_LOAD_OPTS_VERSION, "st_load_opts", err)))
		return rc;
	return st__threads_check(opts->threads, err);
}

/* first: a file's load (data after the document read as Pulumi reads the envelope). */
static int load_buffer(st_state **out, const void *buf, size_t len, const char *name,
		       const st_load_opts *opts, int mapped, int first, st_error *err)
{
	st_parse_limits lim = ST_PARSE_LIMITS_INIT;
	st_problems problems = {0};
	st_style style;
	json_t *root = NULL;
	unsigned features = ST_FEATURES_ALL;
	int rc;

	*out = NULL;
	if (opts)
		lim.max_depth = opts->max_depth;
	lim.first_value = first ? ST_PARSE_FIRST_VALUE : 0;
	rc = st__json_parse_ex(&root, buf, len, name, &lim, &style, &problems, mapped,
			       opts ? opts->threads : 0, &features, err);
	if (rc) {
		st__err_file(err, name);
		st_problems_clear(&problems);
		return rc;
	}
	rc = st_state_from_json(out, root, &style, &problems, name, err);
	st_problems_clear(&problems); /* empty unless st_state_from_json failed */
	if (rc == ST_OK)
		(*out)->known_absent = ~features & ST_FEATURES_ALL;
	return rc;
}

int st_state_load_buffer(st_state **out, const void *buf, size_t len, const char *name,
			 const st_load_opts *opts, st_error *err)
{
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(buf || !len);
	int rc = st__load_opts_check(opts, err);
	if (rc != ST_OK) {
		*out = NULL;
		return rc;
	}
	return load_buffer(out, buf, len, name, opts, 0, 0, err);
}

int st__state_load_file_text(st_state **out, const void *buf, size_t len, const char *name,
			     const st_load_opts *opts, st_error *err)
{
	return load_buffer(out, buf, len, name, opts, 0, 1, err);
}

int st_state_from_json(st_state **out, json_t *root, const st_style *style,
		       st_problems *problems, const char *name, st_error *err)
{
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(root);
	st_state *s;
	int rc;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		json_decref(root);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	s->root = root;
	if (style)
		s->style = *style;
	else
		st_style_export(&s->style);
	if (problems) {
		s->load_problems = *problems;
		memset(problems, 0, sizeof(*problems));
	}
	rc = st__state_bind(s, err);
	/* the earlier values of duplicate keys were for the decoder */
	st__dropped_free(&s->load_problems);
	if (rc) {
		st__err_file(err, name);
		if (problems) {
			/* what the reader and the decoder found, for the caller to report */
			*problems = s->load_problems;
			memset(&s->load_problems, 0, sizeof(s->load_problems));
		}
		state_free_fields(s);
		free(s);
		return rc;
	}
	if (s->keymap && !s->keymap->n) {
		st__keymap_free(s->keymap);
		s->keymap = NULL;
	}
	if (s->keymap)
		st__keymap_seal(s->keymap, s->root);
	if (name)
		s->path = st_strdup(name);
	*out = s;
	return ST_OK;
}

/* A large plain file is mapped rather than read, and its pages are given back as the parser
 * passes them: peak memory is the tree plus a few megabytes, not the tree plus the file.
 * map_file returns 1 when the file is not a candidate (gzip, zstd, small, not a regular
 * file): the caller then reads it. */
#define MAP_MIN (4u << 20)
int st__map_file(const char *path, size_t max, void **map, size_t *len)
{
	return st__map_file_fd(path, max, map, len, NULL);
}

int st__map_file_fd(const char *path, size_t max, void **map, size_t *len, int *fd_out)
{
	struct stat sb;
	unsigned char magic[4] = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!max)
		max = ST_DEFAULT_MAX_FILE;
	if (fd < 0)
		return 1;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < (off_t)MAP_MIN ||
	    (uint64_t)sb.st_size > (uint64_t)max || pread(fd, magic, 4, 0) != 4 ||
	    (magic[0] == 0x1f && magic[1] == 0x8b) ||
	    (magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd)) {
		close(fd);
		return 1;
	}
	*len = (size_t)sb.st_size;
	*map = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (*map == MAP_FAILED || !fd_out)
		close(fd);
	if (*map == MAP_FAILED)
		return 1;
	if (fd_out)
		*fd_out = fd;
	madvise(*map, *len, MADV_SEQUENTIAL);
	return 0;
}

int st_json_load_file(json_t **out, const char *path, size_t max_size,
		      const st_parse_limits *limits, st_style *style_out, st_problems *problems,
		      st_error *err)
{
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(path);
	void *map;
	char *buf;
	size_t len;
	const char *shown = strcmp(path, "-") ? path : "<stdin>";
	int rc;

	*out = NULL;
	if (limits && (rc = st__opts_version(limits->version, ST_PARSE_LIMITS_VERSION,
					     "st_parse_limits", err)) != ST_OK)
		return rc;
	st__phase(NULL);
	if (strcmp(path, "-") != 0 && st__map_file(path, max_size, &map, &len) == 0) {
		rc = st__json_parse_ex(out, map, len, shown, limits, style_out, problems, 1, 0,
				       NULL, err);
		munmap(map, len);
	} else {
		rc = st_file_read(path, max_size, &buf, &len, NULL, err);
		if (rc)
			return rc;
		rc = st_json_parse(out, buf, len, shown, limits, style_out, problems, err);
		free(buf);
	}
	if (rc)
		st__err_file(err, shown);
	else
		st__phase("load: parsed");
	return rc;
}

static int load_mapped(st_state **out, const char *path, const st_load_opts *opts,
		       st_error *err)
{
	void *map;
	size_t len;
	if (st__map_file(path, opts ? opts->max_size : 0, &map, &len) != 0)
		return 1;
	int rc = load_buffer(out, map, len, path, opts, 1, 1, err);
	munmap(map, len);
	return rc;
}

int st_state_load_file(st_state **out, const char *path, const st_load_opts *opts, st_error *err)
{
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(path);
	char *buf;
	size_t len;
	st_compression comp;
	int rc;

	*out = NULL;
	if ((rc = st__load_opts_check(opts, err)) != ST_OK)
		return rc;
	if (opts && opts->version >= 2 && opts->lazy)
		return st__state_load_lazy(out, path, opts, err);
	st__phase(NULL);
	if (strcmp(path, "-") != 0 && (rc = load_mapped(out, path, opts, err)) != 1) {
		if (rc == ST_OK) {
			(*out)->compression = ST_COMPRESS_NONE;
			st__phase("load: parsed");
		}
		return rc;
	}
	rc = st_file_read(path, opts ? opts->max_size : 0, &buf, &len, &comp, err);
	if (rc)
		return rc;
	rc = st__state_load_file_text(out, buf, len, strcmp(path, "-") ? path : "<stdin>", opts,
				      err);
	free(buf);
	if (rc == ST_OK) {
		(*out)->compression = comp;
		if (!strcmp(path, "-")) {
			free((*out)->path);
			(*out)->path = NULL;
		}
		st__phase("load: read and parsed");
	}
	return rc;
}

int st_state_new(st_state **out, st_error *err)
{
	ST_ASSERT_ARG(out);
	st_state *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return st__err(err, ST_ENOMEM, "out of memory");
	s->root = json_pack("{s:f,s:n}", "version", 3.0, "deployment");
	if (!s->root) {
		free(s);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	s->container = s->root;
	s->envelope = ST_ENVELOPE_EXPORT;
	s->version = 3;
	st_style_export(&s->style);
	*out = s;
	return ST_OK;
}

void st_state_free(st_state *s)
{
	if (!s)
		return;
	state_free_fields(s);
	free(s);
}

st_envelope st_state_envelope(const st_state *s)
{
	ST_ASSERT_ARG_AS(s, "state");
	return s->envelope;
}

int st_state_version(const st_state *s)
{
	ST_ASSERT_ARG_AS(s, "state");
	return s->version;
}

json_t *st_state_root(const st_state *s)
{
	ST_ASSERT_ARG_AS(s, "state");
	return s->root;
}

const char *st_state_path(const st_state *s)
{
	ST_ASSERT_ARG_AS(s, "state");
	return s->path;
}

st_style *st_state_style(st_state *s)
{
	ST_ASSERT_ARG_AS(s, "state");
	return &s->style;
}

st_compression st_state_compression(const st_state *s)
{
	ST_ASSERT_ARG_AS(s, "state");
	return s->compression;
}

void st_state_set_compression(st_state *s, st_compression c)
{
	ST_ASSERT_ARG_AS(s, "state");
	s->compression = c;
}

const st_problems *st_state_load_problems(const st_state *s)
{
	ST_ASSERT_ARG_AS(s, "state");
	return &s->load_problems;
}

json_t *st_state_features(const st_state *s)
{
	ST_ASSERT_ARG_AS(s, "state");
	json_t *f = json_object_get(s->root, "features");
	return json_is_array(f) ? f : NULL;
}

json_t *st_state_deployment(const st_state *s)
{
	ST_ASSERT_ARG_AS(s, "state");
	json_t *d = json_object_get(s->container,
				    s->envelope == ST_ENVELOPE_EXPORT ? "deployment" : "latest");
	return json_is_object(d) ? d : NULL;
}

const char *st_state_checkpoint_stack(const st_state *s)
{
	ST_ASSERT_ARG_AS(s, "state");
	if (s->envelope != ST_ENVELOPE_CHECKPOINT)
		return NULL;
	return st_json_str(s->container, "stack");
}

/* A zero DeploymentV3, as Pulumi writes one for an empty stack. */
static json_t *new_deployment(void)
{
	json_t *d = json_object(), *m = json_object();
	if (!d || !m) {
		json_decref(d);
		json_decref(m);
		return NULL;
	}
	json_object_set_new(m, "time", json_string("0001-01-01T00:00:00Z"));
	json_object_set_new(m, "magic", json_string(""));
	json_object_set_new(m, "version", json_string(""));
	json_object_set_new(d, "manifest", m);
	json_object_set_new(d, "metadata", json_object());
	return d;
}

json_t *st_state_resources(st_state *s, int create)
{
	ST_ASSERT_ARG_AS(s, "state");
	json_t *d = st_state_deployment(s), *r;

	if (!d) {
		if (!create)
			return NULL;
		d = new_deployment();
		if (!d)
			return NULL;
		json_object_set_new(s->container,
				    s->envelope == ST_ENVELOPE_EXPORT ? "deployment" : "latest", d);
	}
	r = json_object_get(d, "resources");
	if (json_is_array(r))
		return r;
	if (!create)
		return NULL;
	r = json_array();
	if (!r || st_obj_set_ordered(d, ST_K_DEPLOYMENT, "resources", r) < 0)
		return NULL;
	return r;
}

void st_state_touch(st_state *s)
{
	ST_ASSERT_ARG_AS(s, "state");
	st_state t;

	/* Nothing is known absent any more: the next features scan looks at every resource. */
	s->known_absent = 0;
	/* The envelope, version and the object holding the deployment, read again from the tree
	 * (a binding of a blank state borrowing the root, so a tree that is no longer a state
	 * leaves the old ones). */
	memset(&t, 0, sizeof(t));
	t.root = s->root;
	if (st__state_bind(&t, NULL) == ST_OK) {
		s->envelope = t.envelope;
		s->version = t.version;
		s->container = t.container;
	}
	st__keymap_free(t.keymap);
	st_problems_clear(&t.load_problems);
}

/* Finds organization/<project>/<stack> from the root stack resource, or any resource. */
static char *derive_stack_qname(st_state *s)
{
	json_t *res = st_state_resources(s, 0), *r;
	size_t i;
	const char *fallback = NULL;

	json_array_foreach(res, i, r) {
		const char *urn = st_json_str(r, "urn");
		const char *type = st_json_str(r, "type");
		if (!urn || !st_urn_valid(urn))
			continue;
		if (!fallback)
			fallback = urn;
		if (type && !strcmp(type, ST_ROOT_STACK_TYPE) && !st_json_str(r, "parent")) {
			fallback = urn;
			break;
		}
	}
	if (fallback) {
		st_urn u;
		st_urn_parse(fallback, &u);
		return st_asprintf("organization/%.*s/%.*s", (int)u.project_len, u.project,
				   (int)u.stack_len, u.stack);
	}
	return NULL;
}

int st_state_set_envelope(st_state *s, st_envelope envelope, const char *stack, st_error *err)
{
	ST_ASSERT_ARG_AS(s, "state");
	if (envelope != ST_ENVELOPE_EXPORT && envelope != ST_ENVELOPE_CHECKPOINT)
		return st__err(err, ST_EINVAL,
			       "unknown envelope %d (the envelopes are ST_ENVELOPE_EXPORT and "
			       "ST_ENVELOPE_CHECKPOINT)",
			       (int)envelope);
	json_t *dep, *root, *features;
	int version;

	if (envelope == s->envelope && !(envelope == ST_ENVELOPE_CHECKPOINT && s->version == 0)) {
		if (stack && envelope == ST_ENVELOPE_CHECKPOINT)
			json_object_set_new(s->container, "stack", json_string(stack));
		return ST_OK;
	}
	dep = st_state_deployment(s);
	version = s->version == 0 ? 1 : s->version;
	features = st_state_features(s);
	root = json_object();
	if (!root)
		return st__err(err, ST_ENOMEM, "out of memory");
	json_object_set_new(root, "version", json_real(version));
	if (features && version >= 4)
		json_object_set(root, "features", features);
	if (envelope == ST_ENVELOPE_EXPORT) {
		json_object_set(root, "deployment", dep ? dep : json_null());
		json_decref(s->root);
		s->root = root;
		s->container = root;
		st_style_export(&s->style);
	} else {
		char *qname = stack ? st_strdup(stack) : NULL;
		json_t *cp;
		if (!qname && s->envelope == ST_ENVELOPE_CHECKPOINT)
			qname = st_strdup(st_state_checkpoint_stack(s) ? st_state_checkpoint_stack(s)
								       : "");
		if (!qname)
			qname = derive_stack_qname(s);
		if (!qname) {
			json_decref(root);
			return st__err(err, ST_EINVAL,
				       "cannot tell the stack's name for the checkpoint envelope: "
				       "the state has no resources to take it from");
		}
		cp = json_object();
		json_object_set_new(cp, "stack", json_string(qname));
		free(qname);
		if (s->version == 0 || s->envelope == ST_ENVELOPE_CHECKPOINT) {
			json_t *config = json_object_get(s->container, "config");
			if (config)
				json_object_set(cp, "config", config);
		}
		if (dep)
			json_object_set(cp, "latest", dep);
		json_object_set_new(root, "checkpoint", cp);
		json_decref(s->root);
		s->root = root;
		s->container = cp;
		st_style_checkpoint(&s->style);
	}
	s->envelope = envelope;
	s->version = version;
	return ST_OK;
}

/* st_state_dump with the writer's choices (cfg may be NULL). */
static int dump_cfg(const st_state *s, const st_style *style, const st__wcfg *cfg, char **out,
		    size_t *len, st_error *err)
{
	st__wcfg wc = {0, NULL, NULL, NULL, NULL};
	st_buf b;
	int rc;

	if ((rc = st__lazy_unchanged(s, err)) != ST_OK)
		return rc;
	if (cfg)
		wc = *cfg;
	st_buf_init(&b);
	wc.keys = st__state_keymap(s);
	wc.spans = s->lazy;
	rc = st__json_write(&b, s->root, style ? style : &s->style,
			    s->version == 0 ? ST_K_CHECKPOINT : ST_K_ENVELOPE, &wc);
	if (rc == ST_OK && (rc = st__lazy_unchanged(s, err)) != ST_OK) {
		st_buf_free(&b);
		return rc;
	}
	if (rc) {
		st_buf_free(&b);
		return st__err(err, rc, rc == ST_ENOMEM ? "out of memory" : BIGNUM_UNWRITABLE);
	}
	*out = st_buf_take(&b, len);
	return *out ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}

int st_state_dump(const st_state *s, const st_style *style, char **out, size_t *len,
		  st_error *err)
{
	ST_ASSERT_ARG_AS(s, "state");
	ST_ASSERT_ARG(out);
	return dump_cfg(s, style, NULL, out, len, err);
}

int st__state_dump_cfg(const st_state *s, const st__wcfg *cfg, char **out, size_t *len,
		       st_error *err)
{
	return dump_cfg(s, NULL, cfg, out, len, err);
}

const st__keymap *st__state_keymap(const st_state *s)
{
	unsigned char now[32];
	if (!s->keymap)
		return NULL;
	st__keymap_digest(s->root, now);
	return memcmp(now, s->keymap->digest, sizeof(now)) ? NULL : s->keymap;
}

void st_magic_for_version(const char *version, char buf[65])
{
	ST_ASSERT_ARG(buf);
	if (!version || !*version) {
		buf[0] = '\0';
		return;
	}
	st_sha256_hex(version, strlen(version), buf);
}

void st_state_fix_magic(st_state *s)
{
	ST_ASSERT_ARG_AS(s, "state");
	json_t *dep = st_state_deployment(s), *m;
	const char *ver;
	char magic[65];

	if (!dep || !json_is_object(m = json_object_get(dep, "manifest")))
		return;
	ver = st_json_str(m, "version");
	st_magic_for_version(ver, magic);
	if (!json_object_get(m, "magic") && !magic[0])
		return;
	if (st_json_str(m, "magic") && !strcmp(st_json_str(m, "magic"), magic))
		return; /* right already: the state is not touched */
	json_object_set_new(m, "magic", json_string(magic));
}

/* The state's text straight into fd, a few MiB held at a time (see internal.h). */
typedef struct stream_ctx {
	int fd;
	st_store_writer *w; /* instead of fd: a store's writer */
	st_error *err;
	off_t off; /* where the next bytes go */
	int werrno;
	void (*also)(void *ctx, const char *p, size_t n);
	void *also_ctx;
	const st__wcfg *cfg;
	const st_state *s; /* the state written (its source file for runs of spans) */
} stream_ctx;

static int sink_fd(void *ctx, const char *p, size_t n)
{
	stream_ctx *c = ctx;
	if (c->w)
		return st_store_writer_write(c->w, p, n, c->err) == ST_OK ? 0 : -1;
	if (st__write_full(c->fd, p, n) < 0) {
		c->werrno = errno;
		return -1;
	}
#ifdef SYNC_FILE_RANGE_WRITE
	/* The disk starts on these bytes now, while the rest is made: the fsync before the
	 * rename then waits for the last few chunks, not the whole file. (Not every file
	 * system can: an error only means the fsync does it all.) */
	(void)sync_file_range(c->fd, c->off, (off_t)n, SYNC_FILE_RANGE_WRITE);
#endif
	c->off += (off_t)n;
	if (c->also)
		c->also(c->also_ctx, p, n);
	return 0;
}

/* A run of a lazy state's spans (with the separators between them: the source's own bytes):
 * to a local file copied inside the kernel from the state's source file when it was mapped
 * from one, else written from the text in one call; then the mapping's pages before its end
 * are given back. */
static unsigned long runs_out;

unsigned long st__state_runs(void)
{
	return __atomic_load_n(&runs_out, __ATOMIC_RELAXED);
}

static int sink_run(void *ctx, const char *p, size_t n)
{
	stream_ctx *c = ctx;
	int fd, rc;
	off_t off;

	__atomic_add_fetch(&runs_out, 1, __ATOMIC_RELAXED);
	/* in slices: a writer's tap (the journal's hash) reads the bytes, and the pages it
	 * brought in go back slice by slice */
	for (size_t done = 0, k; done < n; done += k) {
		k = n - done < (16u << 20) ? n - done : (16u << 20);
		if (c->w && st__lazy_source(c->s, p + done, &fd, &off))
			rc = st__store_writer_copy(c->w, fd, off, p + done, k, c->err) == ST_OK
				     ? 0
				     : -1;
		else
			rc = sink_fd(ctx, p + done, k);
		if (rc < 0)
			return rc;
		st__lazy_passed(c->s, p + done + k);
	}
	return 0;
}

static int stream(const st_state *s, stream_ctx *cx, st_error *err);

int st__state_stream(const st_state *s, int fd, void (*also)(void *ctx, const char *p, size_t n),
		     void *also_ctx, const st__wcfg *cfg, st_error *err)
{
	stream_ctx c = {fd, NULL, NULL, 0, 0, also, also_ctx, cfg, s};
	return stream(s, &c, err);
}

int st__state_stream_to(const st_state *s, st_store_writer *w, const st__wcfg *cfg,
			st_error *err)
{
	stream_ctx c = {-1, w, err, 0, 0, NULL, NULL, cfg, s};
	return stream(s, &c, err);
}

static int stream(const st_state *s, stream_ctx *cx, st_error *err)
{
	stream_ctx c = *cx;
	st__wcfg wc = {0, NULL, NULL, NULL, NULL};
	st_buf b;
	int rc;

	if ((rc = st__lazy_unchanged(s, err)) != ST_OK)
		return rc;
	if (c.cfg)
		wc = *c.cfg;
	wc.keys = st__state_keymap(s); /* keys respelt on load, put back as written */
	wc.spans = s->lazy;            /* a lazy state's spans */
	st_buf_init(&b);
	b.sink = sink_fd;
	b.run_sink = sink_run;
	b.sink_ctx = &c;
	rc = st__json_write(&b, s->root, &s->style,
			    s->version == 0 ? ST_K_CHECKPOINT : ST_K_ENVELOPE, &wc);
	if (rc == ST_OK)
		st_buf_flush(&b);
	if (b.sink_failed) {
		st_buf_free(&b);
		errno = c.werrno;
		return c.w && err && err->code ? err->code : ST_EIO;
	}
	st_buf_free(&b);
	if (rc)
		return st__err(err, rc, rc == ST_ENOMEM ? "out of memory" : BIGNUM_UNWRITABLE);
	return st__lazy_unchanged(s, err); /* runs copied from the file: still its bytes? */
}

/* A state and the writer's choices, for a store's fill callback. */
typedef struct fill_ctx {
	const st_state *s;
	const st__wcfg *cfg;
} fill_ctx;

static int fill_state(void *ctx, st_store_writer *w, st_error *err)
{
	fill_ctx *f = ctx;
	return st__state_stream_to(f->s, w, f->cfg, err);
}

int st__write_opts_check(const st_write_opts *opts, st_error *err)
{
	int rc;
	if (!opts)
		return ST_OK;
	if ((rc = st__opts_version(opts->version, ST_WRITE_OPTS_VERSION, "st_write_opts", err)))
		return rc;
	return st__threads_check(opts->threads, err);
}

int st__state_save_checked(st_state *s, const char *path, const st_write_opts *opts,
			   int (*proceed)(void *ctx), void *proceed_ctx, const st__wcfg *cfg,
			   st_error *err)
{
	st_write_opts wo = ST_WRITE_OPTS_INIT;
	st__wcfg wc = {0, NULL, NULL, NULL, NULL};
	char *data;
	size_t len;
	int rc;

	if ((rc = st__write_opts_check(opts, err)) != ST_OK)
		return rc;
	if (!path)
		path = s->path;
	if (!path)
		return st__err(err, ST_EINVAL, "no file to save to");
	if (opts) /* only the fields of the caller's version: a version 1 struct is shorter */
		memcpy(&wo, opts, opts->version >= 2 ? sizeof(wo)
						     : offsetof(st_write_opts, exact_mode));
	else
		wo.backup = 1;
	wo.compression = s->compression;
	if (cfg)
		wc = *cfg;
	if (!wc.threads)
		wc.threads = wo.threads;
	st_state_fix_magic(s);
	if (wo.compression == ST_COMPRESS_NONE) {
		fill_ctx f = {s, &wc};
		return st__file_write_atomic_fill(path, fill_state, &f, proceed, proceed_ctx, &wo,
						  err);
	}
	/* compressed: the whole text first (st__file_write_atomic_checked compresses it) */
	rc = dump_cfg(s, NULL, &wc, &data, &len, err);
	if (rc)
		return rc;
	rc = st__file_write_atomic_checked(path, data, len, proceed, proceed_ctx, &wo, err);
	free(data);
	return rc;
}

int st_state_save(st_state *s, const char *path, const st_write_opts *opts, st_error *err)
{
	ST_ASSERT_ARG_AS(s, "state");
	return st__state_save_checked(s, path, opts, NULL, NULL, NULL, err);
}
