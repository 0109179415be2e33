/*
 * The writer: the bytes Go's encoding/json produces for Pulumi's types.
 *  - Struct fields in the order held (the reader keeps the file's order, which is Pulumi's for a
 *    file Pulumi wrote); Go maps (property maps, config, propertyDependencies, ...) sorted by
 *    byte order, at every depth for property values.
 *  - Numbers as strconv.AppendFloat(f, 'f' or 'e', -1, 64) with Go's exponent clean-up.
 *  - Strings escaped as Go does: \" \\ \n \r \t (\b \f since Go 1.22), other controls as \u00XX,
 *    U+2028/U+2029 always escaped, <, >, & only with HTML escaping on.
 *  - Indented output as json.Encoder.SetIndent("", unit): "key": value, empty {} and [] inline.
 */
#include "internal.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

void st_style_checkpoint(st_style *s)
{
	ST_ASSERT_ARG_AS(s, "style");
	memset(s, 0, sizeof(*s));
	s->compact = 1;
	memcpy(s->indent, "    ", 5);
	s->short_bf = 1;
}

void st_style_export(st_style *s)
{
	ST_ASSERT_ARG_AS(s, "style");
	memset(s, 0, sizeof(*s));
	s->compact = 0;
	memcpy(s->indent, "    ", 5);
	s->trailing_newline = 1;
	s->short_bf = 1;
}

/* ---- numbers ---- */

/* Shortest decimal digits of |v| that read back as v, and the exponent X with
 * |v| = d1.d2d3... x 10^X. Returns the digit count. */
static int shortest_digits(double v, char digits[20], int *exp10)
{
	char tmp[40];
	/* For normal numbers the correctly rounded 15-digit form, trimmed, is the shortest when it
	 * reads back (doubles are denser than the 15-digit grid); subnormals are sparser, so they
	 * search from one digit. */
	for (int prec = v < 2.2250738585072014e-308 ? 1 : 15; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, v);
		if (prec < 17 && strtod(tmp, NULL) != v)
			continue;
		/* tmp is d[sep]ddddde[+-]XX in the current locale: take digits until 'e'. */
		int n = 0;
		char *p = tmp;
		for (; *p && *p != 'e' && *p != 'E'; p++)
			if (*p >= '0' && *p <= '9')
				digits[n++] = *p;
		*exp10 = atoi(p + 1);
		while (n > 1 && digits[n - 1] == '0')
			n--;
		digits[n] = '\0';
		return n;
	}
	return 0; /* not reached */
}

int st_json_format_number(double v, char *buf, size_t size)
{
	ST_ASSERT_ARG(buf || !size);
	char digits[20], out[64];
	int n, x, len = 0;
	double a;

	if (isnan(v) || isinf(v) || size < 32)
		return -1;
	a = fabs(v);
	if (a < 1e15 && a == floor(a)) {
		/* an integer (-0 keeps its sign, as Go's) */
		char t[24];
		int k = 0;
		unsigned long long u = (unsigned long long)a;
		do {
			t[k++] = (char)('0' + u % 10);
			u /= 10;
		} while (u);
		if (signbit(v))
			buf[len++] = '-';
		while (k)
			buf[len++] = t[--k];
		buf[len] = '\0';
		return len;
	}
	n = shortest_digits(a, digits, &x);
	if (v < 0)
		out[len++] = '-';
	if (a >= 1e-6 && a < 1e21) {
		/* 'f' format */
		if (x >= 0) {
			for (int i = 0; i <= x; i++)
				out[len++] = i < n ? digits[i] : '0';
			if (n > x + 1) {
				out[len++] = '.';
				for (int i = x + 1; i < n; i++)
					out[len++] = digits[i];
			}
		} else {
			out[len++] = '0';
			out[len++] = '.';
			for (int i = 0; i < -x - 1; i++)
				out[len++] = '0';
			for (int i = 0; i < n; i++)
				out[len++] = digits[i];
		}
		out[len] = '\0';
	} else {
		/* 'e' format: d[.ddd]e±XX, then Go drops the leading zero of e-0X. */
		out[len++] = digits[0];
		if (n > 1) {
			out[len++] = '.';
			for (int i = 1; i < n; i++)
				out[len++] = digits[i];
		}
		out[len++] = 'e';
		out[len++] = x < 0 ? '-' : '+';
		int ax = x < 0 ? -x : x;
		if (ax < 10 && x >= 0)
			len += snprintf(out + len, sizeof(out) - (size_t)len, "0%d", ax);
		else
			len += snprintf(out + len, sizeof(out) - (size_t)len, "%d", ax);
	}
	if ((size_t)len >= size)
		return -1;
	memcpy(buf, out, (size_t)len + 1);
	return len;
}

/* ---- strings ---- */

static const char hexdigits[] = "0123456789abcdef";

/* Appends, the common case inline: room in the buffer (st_buf_add grows or flushes it). */
static inline void put(st_buf *b, const void *p, size_t n)
{
	if (b->len + n < b->cap) {
		memcpy(b->data + b->len, p, n);
		b->len += n;
		b->data[b->len] = '\0';
	} else {
		st_buf_add(b, p, n);
	}
}

static inline void putch(st_buf *b, char c)
{
	if (b->len + 1 < b->cap) {
		b->data[b->len++] = c;
		b->data[b->len] = '\0';
	} else {
		st_buf_addc(b, c);
	}
}

/* Which bytes stop the copying of a string: 1 always (control characters, '"', '\\', the
 * first byte of U+2028/U+2029), 2 only when HTML characters are escaped ('<', '>', '&'). */
static const unsigned char stop[256] = {
	[0 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0xe2] = 1, ['<'] = 2, ['>'] = 2, ['&'] = 2,
};

#ifdef __SSE2__
/* The first byte at or after p that stops the copying, sixteen at a time; p itself when fewer
 * than sixteen bytes are left and none of them is one (the caller goes on byte by byte). */
static inline const unsigned char *scan_stop16(const unsigned char *p, const unsigned char *e,
					       int html)
{
	const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
	const __m128i e2 = _mm_set1_epi8((char)0xe2), ctl = _mm_set1_epi8(0x1f);
	const __m128i lt = _mm_set1_epi8('<'), gt = _mm_set1_epi8('>'), amp = _mm_set1_epi8('&');
	while (e - p >= 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
		/* unsigned x <= 0x1f: max(x, 0x1f) == 0x1f */
		__m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, bs)),
					   _mm_or_si128(_mm_cmpeq_epi8(x, e2),
							_mm_cmpeq_epi8(_mm_max_epu8(x, ctl), ctl)));
		if (html)
			hit = _mm_or_si128(hit, _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, lt),
									   _mm_cmpeq_epi8(x, gt)),
							     _mm_cmpeq_epi8(x, amp)));
		int m = _mm_movemask_epi8(hit);
		if (m)
			return p + __builtin_ctz((unsigned)m);
		p += 16;
	}
	return p;
}
#endif

static void write_string(st_buf *b, const char *s, size_t n, const st_style *st)
{
	const unsigned char *p = (const unsigned char *)s, *e = p + n, *run;
	const unsigned mask = st->escape_html ? 3 : 1;

	if (b->len + n + 3 > b->cap && st_buf_reserve(b, n + 2) < 0)
		return;
	/* Most strings need no escape: the quotes and the bytes at once. */
#ifdef __SSE2__
	p = scan_stop16(p, e, st->escape_html);
#endif
	while (p < e && !(stop[*p] & mask))
		p++;
	if (p == e) {
		char *d = b->data + b->len;
		d[0] = '"';
		memcpy(d + 1, s, n);
		d[n + 1] = '"';
		d[n + 2] = '\0';
		b->len += n + 2;
		return;
	}
	putch(b, '"');
	run = (const unsigned char *)s;
	for (;;) {
#ifdef __SSE2__
		p = scan_stop16(p, e, st->escape_html);
#endif
		while (e - p >= 4 && !(stop[p[0]] & mask) && !(stop[p[1]] & mask) &&
		       !(stop[p[2]] & mask) && !(stop[p[3]] & mask))
			p += 4;
		while (p < e && !(stop[*p] & mask))
			p++;
		if (p >= e)
			break;
		unsigned c = *p;
		const char *esc = NULL;
		char u[7];
		if (c == 0xe2) {
			/* U+2028 (e2 80 a8) and U+2029 (e2 80 a9) */
			if (e - p >= 3 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
				put(b, run, (size_t)(p - run));
				put(b, p[2] == 0xa8 ? "\\u2028" : "\\u2029", 6);
				p += 3;
				run = p;
			} else {
				p++;
			}
			continue;
		}
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = st->short_bf ? "\\b" : NULL; break;
		case '\f': esc = st->short_bf ? "\\f" : NULL; break;
		default: break;
		}
		if (!esc) {
			u[0] = '\\';
			u[1] = 'u';
			u[2] = '0';
			u[3] = '0';
			u[4] = hexdigits[c >> 4];
			u[5] = hexdigits[c & 15];
			u[6] = '\0';
			esc = u;
		}
		put(b, run, (size_t)(p - run));
		put(b, esc, strlen(esc));
		p++;
		run = p;
	}
	put(b, run, (size_t)(p - run));
	putch(b, '"');
}

/* ---- kinds: which objects are Go structs and which are maps ---- */

static const char *const f_envelope[] = {"version", "features", "checkpoint", "deployment", NULL};
static const char *const f_checkpoint[] = {"stack", "config", "latest", NULL};
static const char *const f_deployment[] = {"manifest", "secrets_providers", "resources",
					   "pending_operations", "metadata", "snippets",
					   "extensions", NULL};
static const char *const f_manifest[] = {"time", "magic", "version", "plugins", NULL};
static const char *const f_plugin[] = {"name", "path", "type", "version", NULL};
static const char *const f_secrets[] = {"type", "state", NULL};
static const char *const f_metadata[] = {"integrity_error", NULL};
static const char *const f_integrity[] = {"version", "command", "error", "env_vars", NULL};
static const char *const f_resource[] = {
	"urn", "custom", "delete", "id", "type", "inputs", "outputs", "parent", "protect",
	"taint", "external", "dependencies", "initErrors", "provider", "propertyDependencies",
	"pendingReplacement", "additionalSecretOutputs", "aliases", "customTimeouts", "importID",
	"retainOnDelete", "deletedWith", "replaceWith", "created", "modified", "sourcePosition",
	"stackTrace", "ignoreChanges", "hideDiff", "replaceOnChanges", "replacementTrigger",
	"refreshBeforeUpdate", "viewOf", "resourceHooks", "extensionRef", "snippetID", NULL};
static const char *const f_operation[] = {"resource", "type", NULL};
static const char *const f_timeouts[] = {"create", "update", "delete", "read", NULL};
static const char *const f_frame[] = {"sourcePosition", NULL};
static const char *const f_snippet[] = {"uuid", "name", "type", "code", "descriptor",
					"references", NULL};
static const char *const f_descriptor[] = {"name", "version", "downloadURL", "parameterization",
					   NULL};
static const char *const f_param[] = {"name", "version", "value", NULL};
static const char *const f_extension[] = {"name", "version", "value", NULL};

const char *const *st_kind_fields(st_kind kind)
{
	switch (kind) {
	case ST_K_ENVELOPE: return f_envelope;
	case ST_K_CHECKPOINT: return f_checkpoint;
	case ST_K_DEPLOYMENT: return f_deployment;
	case ST_K_MANIFEST: return f_manifest;
	case ST_K_PLUGIN: return f_plugin;
	case ST_K_SECRETS_PROVIDER: return f_secrets;
	case ST_K_METADATA: return f_metadata;
	case ST_K_INTEGRITY_ERROR: return f_integrity;
	case ST_K_RESOURCE: return f_resource;
	case ST_K_OPERATION: return f_operation;
	case ST_K_TIMEOUTS: return f_timeouts;
	case ST_K_STACKFRAME: return f_frame;
	case ST_K_SNIPPET: return f_snippet;
	case ST_K_DESCRIPTOR: return f_descriptor;
	case ST_K_PARAMETERIZATION: return f_param;
	case ST_K_EXTENSION: return f_extension;
	default: return NULL;
	}
}

int st_kind_field_always(st_kind kind, const char *key)
{
	switch (kind) {
	case ST_K_RESOURCE:
		return !strcmp(key, "urn") || !strcmp(key, "custom") || !strcmp(key, "type");
	case ST_K_DEPLOYMENT:
		return !strcmp(key, "manifest") || !strcmp(key, "metadata");
	case ST_K_MANIFEST:
		return !strcmp(key, "time") || !strcmp(key, "magic") || !strcmp(key, "version");
	case ST_K_OPERATION:
		return 1;
	case ST_K_ENVELOPE:
		return !strcmp(key, "checkpoint") || !strcmp(key, "deployment");
	case ST_K_CHECKPOINT:
		return !strcmp(key, "stack");
	case ST_K_SECRETS_PROVIDER:
		return !strcmp(key, "type");
	case ST_K_SNIPPET:
		return 1;
	default:
		return 0;
	}
}

st_kind st_kind_child(st_kind parent, const char *key)
{
	switch (parent) {
	case ST_K_PROPMAP:
		return ST_K_PROPMAP;
	case ST_K_MAP:
	case ST_K_ANY:
	case ST_K_RAW:
	case ST_K_MAP_OF_ARRAY:
		return parent == ST_K_MAP_OF_ARRAY ? ST_K_ANY : parent;
	case ST_K_ENVELOPE:
		if (!strcmp(key, "checkpoint"))
			return ST_K_CHECKPOINT;
		if (!strcmp(key, "deployment"))
			return ST_K_DEPLOYMENT;
		return ST_K_ANY;
	case ST_K_CHECKPOINT:
		if (!strcmp(key, "config"))
			return ST_K_PROPMAP;
		if (!strcmp(key, "latest"))
			return ST_K_DEPLOYMENT;
		return ST_K_ANY;
	case ST_K_DEPLOYMENT:
		if (!strcmp(key, "manifest"))
			return ST_K_MANIFEST;
		if (!strcmp(key, "secrets_providers"))
			return ST_K_SECRETS_PROVIDER;
		if (!strcmp(key, "resources"))
			return ST_K_RESOURCE;
		if (!strcmp(key, "pending_operations"))
			return ST_K_OPERATION;
		if (!strcmp(key, "metadata"))
			return ST_K_METADATA;
		if (!strcmp(key, "snippets"))
			return ST_K_SNIPPET;
		if (!strcmp(key, "extensions"))
			return ST_K_MAP_OF_EXTENSION;
		return ST_K_ANY;
	case ST_K_MANIFEST:
		return !strcmp(key, "plugins") ? ST_K_PLUGIN : ST_K_ANY;
	case ST_K_SECRETS_PROVIDER:
		return ST_K_RAW;
	case ST_K_METADATA:
		return !strcmp(key, "integrity_error") ? ST_K_INTEGRITY_ERROR : ST_K_ANY;
	case ST_K_INTEGRITY_ERROR:
		return !strcmp(key, "env_vars") ? ST_K_MAP : ST_K_ANY;
	case ST_K_RESOURCE:
		if (!strcmp(key, "inputs") || !strcmp(key, "outputs") ||
		    !strcmp(key, "defaults") || !strcmp(key, "replacementTrigger"))
			return ST_K_PROPMAP;
		if (!strcmp(key, "propertyDependencies") || !strcmp(key, "resourceHooks"))
			return ST_K_MAP_OF_ARRAY;
		if (!strcmp(key, "customTimeouts"))
			return ST_K_TIMEOUTS;
		if (!strcmp(key, "stackTrace"))
			return ST_K_STACKFRAME;
		return ST_K_ANY;
	case ST_K_OPERATION:
		return !strcmp(key, "resource") ? ST_K_RESOURCE : ST_K_ANY;
	case ST_K_SNIPPET:
		if (!strcmp(key, "descriptor"))
			return ST_K_DESCRIPTOR;
		if (!strcmp(key, "references"))
			return ST_K_MAP;
		return ST_K_ANY;
	case ST_K_DESCRIPTOR:
		return !strcmp(key, "parameterization") ? ST_K_PARAMETERIZATION : ST_K_ANY;
	case ST_K_MAP_OF_EXTENSION:
		return ST_K_EXTENSION;
	default:
		return ST_K_ANY;
	}
}

static int kind_sorts_keys(st_kind k)
{
	return k == ST_K_MAP || k == ST_K_PROPMAP || k == ST_K_MAP_OF_ARRAY ||
	       k == ST_K_MAP_OF_EXTENSION;
}

/* Members of a map kind: children of the map take the map's element kind; a struct's members
 * take the kind named by their key. Arrays pass their context through. */
static st_kind member_kind(st_kind parent, const char *key)
{
	if (parent == ST_K_MAP_OF_EXTENSION)
		return ST_K_EXTENSION;
	if (parent == ST_K_MAP)
		return ST_K_ANY;
	return st_kind_child(parent, key);
}

/* ---- the walk ---- */

typedef struct member {
	const char *key;
	size_t keylen;
	json_t *value;
} member;

static int cmp_member(const void *a, const void *b)
{
	const member *x = a, *y = b;
	size_t n = x->keylen < y->keylen ? x->keylen : y->keylen;
	int c = memcmp(x->key, y->key, n);
	if (c)
		return c;
	return x->keylen < y->keylen ? -1 : x->keylen > y->keylen;
}

static void newline(st_buf *b, const st_style *st, size_t depth)
{
	/* a newline and up to 32 levels of 4-space indentation (the export's) */
	static const char spaces[] = "\n" "                                                  "
				     "                                                  "
				     "                            ";
	_Static_assert(sizeof(spaces) == 2 + 4 * 32, "a newline and 32 levels");
	size_t il = st->indent[0] == ' ' && st->indent[1] == ' ' && st->indent[2] == ' ' &&
				    st->indent[3] == ' ' && !st->indent[4]
			    ? 4
			    : strlen(st->indent);
	if (il == 4 && depth <= 32) {
#ifdef __SSE2__
		if (depth <= 11 && b->len + 49 < b->cap) {
			/* 48 bytes in three stores (no call), 1 + 4 * depth of them kept */
			char *d = b->data + b->len;
			const __m128i *sp = (const __m128i *)(const void *)spaces;
			_mm_storeu_si128((__m128i *)(void *)d, _mm_loadu_si128(sp));
			_mm_storeu_si128((__m128i *)(void *)(d + 16), _mm_loadu_si128(sp + 1));
			_mm_storeu_si128((__m128i *)(void *)(d + 32), _mm_loadu_si128(sp + 2));
			b->len += 1 + 4 * depth;
			b->data[b->len] = '\0';
			return;
		}
#endif
		put(b, spaces, 1 + 4 * depth);
		return;
	}
	if (st_buf_reserve(b, 1 + il * depth) < 0)
		return;
	b->data[b->len++] = '\n';
	for (size_t i = 0; i < depth; i++) {
		memcpy(b->data + b->len, st->indent, il);
		b->len += il;
	}
	b->data[b->len] = '\0';
}

/*
 * One call's switches, passed down the recursion as an argument: the style, the caller's
 * choices (st__json_write's `cfg`), and the array to write on two threads (NULL once it is
 * split, and on the split's own thread).
 */
typedef struct wcall {
	const st_style *st;
	const st__wcfg *cfg;
	const json_t *split;
	/* a lazy state (else NULL); whether the write is in its own style, and the depth of
	 * its resources (where a span is the writer's output) */
	st__spans *lazy;
	int lazy_same;
	size_t lazy_depth;
	int release; /* one thread in document order: the text copied may be given back */
} wcall;

static int write_value(st_buf *b, const json_t *v, wcall *w, st_kind kind, size_t depth);

/* How many resources the writer wrote as their spans (for the tests). */
static unsigned long spans_written;

/*
 * Two threads for a big document: the array st__json_write picked (a state's resources) is
 * written in two halves, the second on another thread into its own buffer, exactly as the
 * loop below would write it (a comma, the newline and indentation, the element), then appended.
 * Only reads the values.
 */

/* How many writes split an array onto a second thread (for the tests). */
unsigned long st__json_write_splits(void)
{
	return st__two_count(ST__T_WRITE);
}

static void core_free(void (*fn)(void *), void *ctx)
{
	if (fn)
		fn(ctx);
}

typedef struct split_job {
	const json_t *arr;
	size_t from;
	const st_style *st;
	st_kind kind;
	size_t depth;
	st_buf out;
	int rc;
	st__two thread;
	void (*core_free)(void *);
	void *core_free_ctx;
	const st__wcfg *cfg; /* the call's, for this thread's half */
	st__spans *lazy;
	int lazy_same;
	size_t lazy_depth;
} split_job;

static void *split_main(void *arg)
{
	split_job *j = arg;
	size_t len = json_array_size(j->arr);
	wcall w = {j->st, j->cfg, NULL, j->lazy, j->lazy_same, j->lazy_depth, 0};
	for (size_t i = j->from; i < len && j->rc == 0; i++) {
		putch(&j->out, ',');
		if (!j->st->compact)
			newline(&j->out, j->st, j->depth + 1);
		j->rc = write_value(&j->out, json_array_get(j->arr, i), &w, j->kind, j->depth + 1);
	}
	core_free(j->core_free, j->core_free_ctx);
	return NULL;
}

/* The split array (out of line: write_value's frame stays small for deep nesting). */
__attribute__((noinline)) static int write_array_split(st_buf *b, const json_t *v, wcall *w,
						       st_kind kind, size_t depth)
{
	const st_style *st = w->st;
	size_t len = json_array_size(v), end = len;
	split_job job;
	int split = 0;

	w->split = NULL;
	memset(&job, 0, sizeof(job));
	job.arr = v;
	job.from = len / 2;
	job.st = st;
	job.kind = kind;
	job.depth = depth;
	job.core_free = w->cfg->on_core_free;
	job.core_free_ctx = w->cfg->on_core_free_ctx;
	job.cfg = w->cfg;
	job.lazy = w->lazy;
	job.lazy_same = w->lazy_same;
	job.lazy_depth = w->lazy_depth;
	st_buf_init(&job.out);
	/* the writer recurses once per nesting level, as on the calling thread */
	if (st__two_start(&job.thread, ST__T_WRITE, split_main, &job, 16u << 20)) {
		split = 1;
		end = job.from;
	}
	if (!split)
		core_free(job.core_free, job.core_free_ctx);
	putch(b, '[');
	for (size_t i = 0; i < end; i++) {
		if (i)
			putch(b, ',');
		if (!st->compact)
			newline(b, st, depth + 1);
		if (write_value(b, json_array_get(v, i), w, kind, depth + 1) < 0) {
			if (split) {
				st__two_join(&job.thread);
				st_buf_free(&job.out);
			}
			return -1;
		}
	}
	if (split) {
		st__two_join(&job.thread);
		if (job.rc < 0 || job.out.oom) {
			if (job.out.oom)
				b->oom = 1;
			st_buf_free(&job.out);
			return -1;
		}
		st_buf_add_block(b, job.out.data, job.out.len);
		st_buf_free(&job.out);
	}
	if (!st->compact)
		newline(b, st, depth);
	putch(b, ']');
	return 0;
}

static int write_object(st_buf *b, const json_t *obj, wcall *w, st_kind kind, size_t depth)
{
	const st_style *st = w->st;
	size_t n = json_object_size(obj), i = 0;
	member stackm[32], *m = stackm;
	int sorts = kind_sorts_keys(kind), sorted = 1, rc = 0;
	/* keys the load respelt, written as they were (the state is unchanged) */
	const st__keymap *keys = w->cfg->keys;
	int respelt = keys && st__keymap_has(keys, obj);

	if (n == 0) {
		put(b, "{}", 2);
		return 0;
	}
	if (n > 32) {
		m = malloc(n * sizeof(*m));
		if (!m) {
			b->oom = 1;
			return -1;
		}
	}
	/* the iterator itself (jansson's foreach macros go through the key at each step); the
	 * order checked only where it may change */
	for (void *it = json_object_iter((json_t *)obj); it && i < n;
	     it = json_object_iter_next((json_t *)obj, it)) {
		m[i].key = json_object_iter_key(it);
		m[i].keylen = json_object_iter_key_len(it);
		m[i].value = json_object_iter_value(it);
		if (sorts && i > 0 && sorted && cmp_member(&m[i - 1], &m[i]) > 0)
			sorted = 0;
		i++;
	}
	n = i;
	if (!sorted)
		qsort(m, n, sizeof(*m), cmp_member);
	putch(b, '{');
	for (i = 0; i < n && rc == 0; i++) {
		if (i)
			putch(b, ',');
		if (!st->compact)
			newline(b, st, depth + 1);
		if (respelt) {
			size_t ol;
			const char *orig = st__keymap_lookup(keys, obj, m[i].key, &ol);
			if (orig)
				write_string(b, orig, ol, st);
			else
				write_string(b, m[i].key, m[i].keylen, st);
		} else {
			write_string(b, m[i].key, m[i].keylen, st);
		}
		put(b, st->compact ? ":" : ": ", st->compact ? 1 : 2);
		/* Keys may hold NUL (jansson *n calls); kinds only match plain keys, and only
		 * objects and arrays (of objects) have a use for one. */
		if (json_is_object(m[i].value) || json_is_array(m[i].value))
			rc = write_value(b, m[i].value, w,
					 strlen(m[i].key) == m[i].keylen
						 ? member_kind(kind, m[i].key)
						 : ST_K_ANY,
					 depth + 1);
		else
			rc = write_value(b, m[i].value, w, ST_K_ANY, depth + 1);
	}
	if (!st->compact)
		newline(b, st, depth);
	putch(b, '}');
	if (m != stackm)
		free(m);
	return rc;
}

/*
 * A resource of a lazy state: a registered skeleton is written as the full resource it
 * stands for. In the state's style at the resources' depth that is its span, proven to be
 * these bytes; elsewhere (another style or envelope) the span parsed and walked: never the
 * skeleton itself, which lacks the values. Out of line: write_value's frame stays small.
 */
__attribute__((noinline)) static int write_skeleton(st_buf *b, const json_t *v, wcall *w,
						    size_t depth)
{
	const char *span;
	size_t sl;
	json_t *full = NULL;
	int rc;

	if (!st__spans_span(w->lazy, v, &span, &sl))
		return write_object(b, v, w, ST_K_RESOURCE, depth);
	if (w->lazy_same && depth == w->lazy_depth) {
		__atomic_add_fetch(&spans_written, 1, __ATOMIC_RELAXED);
		/* with a sink, adjacent spans and the separators between them go out as one
		 * run, in place (copied from the source file when it can be: its pages in
		 * the mapping are not needed for that) */
		if (b->sink)
			st_buf_add_span(b, span, sl);
		else
			put(b, span, sl);
		if (w->release)
			st__spans_passed(w->lazy, span + sl);
		return 0;
	}
	if (st_json_parse(&full, span, sl, "resource", NULL, NULL, NULL, NULL) != ST_OK) {
		b->oom = 1; /* (proven well-formed: only memory can fail) */
		return -1;
	}
	rc = write_object(b, full, w, ST_K_RESOURCE, depth);
	json_decref(full);
	return rc;
}

static int write_value(st_buf *b, const json_t *v, wcall *w, st_kind kind, size_t depth)
{
	const st_style *st = w->st;
	char num[40];
	int n;

	if (b->oom)
		return -1;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		if (kind == ST_K_RESOURCE && w->lazy)
			return write_skeleton(b, v, w, depth);
		return write_object(b, v, w, kind, depth);
	case JSON_ARRAY: {
		size_t len = json_array_size(v);
		if (len == 0) {
			put(b, "[]", 2);
			return 0;
		}
		if (v == w->split)
			return write_array_split(b, v, w, kind, depth);
		putch(b, '[');
		for (size_t i = 0; i < len; i++) {
			if (i)
				putch(b, ',');
			if (!st->compact)
				newline(b, st, depth + 1);
			if (write_value(b, json_array_get(v, i), w, kind, depth + 1) < 0)
				return -1;
		}
		if (!st->compact)
			newline(b, st, depth);
		putch(b, ']');
		return 0;
	}
	case JSON_STRING:
		write_string(b, json_string_value(v), json_string_length(v), st);
		return 0;
	case JSON_REAL:
	case JSON_INTEGER:
		if (st__json_is_bignum(v))
			return -1; /* its literal is not kept */
		n = st_json_format_number(json_number_value(v), num, sizeof(num));
		if (n < 0)
			return -1;
		put(b, num, (size_t)n);
		return 0;
	case JSON_TRUE:
		put(b, "true", 4);
		return 0;
	case JSON_FALSE:
		put(b, "false", 5);
		return 0;
	case JSON_NULL:
		put(b, "null", 4);
		return 0;
	}
	return -1;
}

/* The biggest array among the members of objects near the top (a state's resources); whether
 * it is big enough to be worth a second thread is ST__T_WRITE's threshold. */

static const json_t *big_array(const json_t *v, int depth, const json_t *best)
{
	const char *k;
	json_t *m;
	if (json_is_array(v))
		return json_array_size(v) > 0 &&
				       (!best || json_array_size(v) > json_array_size(best))
			       ? v
			       : best;
	if (!json_is_object(v) || depth > 3)
		return best;
	json_object_foreach((json_t *)v, k, m)
		best = big_array(m, depth + 1, best);
	return best;
}

static int same_style(const st_style *a, const st_style *b)
{
	return a->compact == b->compact && !strcmp(a->indent, b->indent) &&
	       a->escape_html == b->escape_html && a->short_bf == b->short_bf;
}

unsigned long st__json_write_spans(void)
{
	return __atomic_load_n(&spans_written, __ATOMIC_RELAXED);
}

int st__json_write(st_buf *b, const json_t *v, const st_style *style, st_kind kind,
		   const st__wcfg *cfg)
{
	static const st__wcfg defaults;
	const json_t *big;
	st_style lst;
	unsigned long spans;
	wcall w;
	int rc;

	w.lazy_depth = 0;
	if (!cfg)
		cfg = &defaults;
	big = big_array(v, 0, NULL);
	w.st = style;
	w.cfg = cfg;
	/* a lazy state: its spans are the writer's output in their style at their depth */
	w.lazy = st__spans_where(cfg->spans, &lst, &w.lazy_depth) ? cfg->spans : NULL;
	w.lazy_same = w.lazy && same_style(style, &lst);
	w.split = big && st__two_worth(ST__T_WRITE, json_array_size(big), cfg->threads) ? big
											: NULL;
	/* a lazy state whose resources are mostly spans: copying them is the disk's pace, and
	 * a second thread would only hold half the text in its buffer */
	if (w.split && w.lazy_same && st__spans_count(w.lazy) * 2 > json_array_size(w.split))
		w.split = NULL;
	w.release = w.lazy_same && !w.split;
	if (!w.split)
		core_free(cfg->on_core_free, cfg->on_core_free_ctx);
	spans = st__json_write_spans();
	rc = write_value(b, v, &w, kind, 0);
	if (rc < 0 || b->oom)
		return b->oom ? ST_ENOMEM : ST_EINVAL;
	if (w.lazy && st__json_write_spans() != spans)
		st__phase("write: unchanged resources copied from the file read");
	if (style->trailing_newline)
		putch(b, '\n');
	return b->oom ? ST_ENOMEM : ST_OK;
}

/* One value as it stands at `depth` inside a document (no split, no trailing newline): what
 * the lazy load (lib/json/skim.c) compares a resource's members with. */
int st__json_write_at(st_buf *b, const json_t *v, const st_style *style, st_kind kind,
		      size_t depth)
{
	static const st__wcfg defaults;
	wcall w = {style, &defaults, NULL, NULL, 0, 0, 0};
	int rc = write_value(b, v, &w, kind, depth);
	if (rc < 0 || b->oom)
		return b->oom ? ST_ENOMEM : ST_EINVAL;
	return ST_OK;
}

/* st_json_dump and st_json_dump_at: `value` at `depth`; at depth 0 through st__json_write (a big
 * array split onto a second thread), with the style's trailing newline when `whole`. */
static int dump(const json_t *value, const st_style *style, size_t depth, int whole, char **out,
		size_t *len, st_error *err)
{
	st_buf b;
	st_style s;
	int rc;

	if (style)
		s = *style;
	else
		st_style_export(&s);
	if (!whole)
		s.trailing_newline = 0;
	st_buf_init(&b);
	rc = depth ? st__json_write_at(&b, value, &s, ST_K_ANY, depth)
		   : st__json_write(&b, value, &s, ST_K_ANY, NULL);
	if (rc) {
		st_buf_free(&b);
		return st__err(err, rc, rc == ST_ENOMEM ? "out of memory" :
					      "value cannot be written as JSON (NaN, infinity, or a "
					      "number beyond float64 the reader kept in place)");
	}
	*out = st_buf_take(&b, len);
	return *out ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}

int st_json_dump(const json_t *value, const st_style *style, char **out, size_t *len,
		 st_error *err)
{
	ST_ASSERT_ARG(value);
	ST_ASSERT_ARG(out);
	return dump(value, style, 0, 1, out, len, err);
}

int st_json_dump_at(const json_t *value, const st_style *style, size_t depth, char **out,
		    size_t *len, st_error *err)
{
	ST_ASSERT_ARG(value);
	ST_ASSERT_ARG(out);
	return dump(value, style, depth, 0, out, len, err);
}

/* ---- canonical field order ---- */

static int field_rank(const char *const *fields, const char *key)
{
	for (int i = 0; fields[i]; i++)
		if (!strcmp(fields[i], key))
			return i;
	return -1;
}

int st_obj_set_ordered(json_t *obj, st_kind kind, const char *key, json_t *value)
{
	const char *const *fields = st_kind_fields(kind);
	int rank, rc;
	const char *k;
	json_t *v, *tail;
	void *tmp;

	if (!value)
		return -1;
	if (json_object_get(obj, key) || !fields || (rank = field_rank(fields, key)) < 0)
		return json_object_set_new(obj, key, value);
	/* Move every known key that ranks after `key` behind it, keeping their order: first a
	 * copy of them (obj is untouched if that fails), then out, the new key in, and back. */
	tail = json_object();
	if (!tail) {
		json_decref(value);
		return -1;
	}
	json_object_foreach(obj, k, v) {
		if (field_rank(fields, k) > rank && json_object_set(tail, k, v)) {
			json_decref(tail);
			json_decref(value);
			return -1;
		}
	}
	json_object_foreach_safe(obj, tmp, k, v) {
		if (json_object_get(tail, k))
			json_object_del(obj, k);
	}
	rc = json_object_set_new(obj, key, value);
	json_object_foreach(tail, k, v) {
		if (json_object_set(obj, k, v))
			rc = -1; /* obj lost a member: the caller must discard it */
	}
	json_decref(tail);
	return rc;
}
