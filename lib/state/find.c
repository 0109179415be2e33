/* Finding resources by URN, name, URN suffix or index, with "did you mean" on a miss. */
#include "internal.h"

#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

/* Unicode lower case as Go's unicode.ToLower, from glibc's tables for C.UTF-8 (whatever the
 * process's locale); ASCII only if that locale is missing. */
static unsigned lower(unsigned r, locale_t loc)
{
	if (r < 0x80)
		return r >= 'A' && r <= 'Z' ? r + 32 : r;
	return loc ? (unsigned)towlower_l((wint_t)r, loc) : r;
}

/* The edit distance of Pulumi's similarURNs: over runes, each compared in lower case. */
static size_t levenshtein(const char *a, const char *b, locale_t loc)
{
	size_t la = strlen(a), lb = strlen(b), d = (size_t)-1;
	unsigned *ra, *rb;
	size_t *row;
	if (la > 512 || lb > 512)
		return (size_t)-1;
	ra = malloc((la + lb + 1) * sizeof(*ra));
	row = malloc((lb + 1) * sizeof(*row));
	if (!ra || !row)
		goto out;
	rb = ra + la;
	la = st__go_runes(a, la, ra);
	lb = st__go_runes(b, lb, rb);
	for (size_t i = 0; i < la; i++)
		ra[i] = lower(ra[i], loc);
	for (size_t j = 0; j < lb; j++)
		rb[j] = lower(rb[j], loc);
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cur = row[j], v = prev + (ra[i - 1] != rb[j - 1]);
			if (row[j] + 1 < v)
				v = row[j] + 1;
			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			row[j] = v;
			prev = cur;
		}
	}
	d = row[lb];
out:
	free(ra);
	free(row);
	return d;
}

static int push(size_t **arr, size_t *n, size_t *cap, size_t v)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		size_t *a = realloc(*arr, c * sizeof(*a));
		if (!a)
			return -1;
		*arr = a;
		*cap = c;
	}
	(*arr)[(*n)++] = v;
	return 0;
}

static const char *urn_name(const char *urn)
{
	st_urn u;
	return st_urn_parse(urn, &u) == ST_OK ? u.name : NULL;
}

/* Is q a tail of the URN made of whole segments: "TYPE::NAME", "QTYPE::NAME",
 * "PROJECT::QTYPE::NAME"...? It starts after a "::" or a '$' of the parent-type chain and holds
 * the whole name and at least one type. A raw character suffix ("ev" of "proj-dev") is none. */
static int whole_tail(const char *urn, const char *q, size_t ql)
{
	size_t ul = strlen(urn), start;
	st_urn u;
	if (ul <= ql || strcmp(urn + ul - ql, q) || st_urn_parse(urn, &u) != ST_OK)
		return 0;
	start = ul - ql;
	if (start + 2 > (size_t)(u.name - urn))
		return 0; /* within the name, or only "::NAME" */
	return (start >= 2 && urn[start - 1] == ':' && urn[start - 2] == ':') ||
	       (urn[start - 1] == '$' && start > (size_t)(u.qtype - urn));
}

/* More than one resource found: the message lists them (up to 20). */
static int ambiguous(json_t *res, const char *q, const size_t *hits, size_t n, st_error *err)
{
	st_buf b;
	st_buf_init(&b);
	for (size_t k = 0; k < n && k < 20; k++) {
		json_t *h = json_array_get(res, hits[k]);
		st_buf_printf(&b, "\n  #%zu %s%s", hits[k], st_json_str(h, "urn"),
			      st_json_bool(h, "delete") ? " (delete: true)" : "");
	}
	if (n > 20)
		st_buf_printf(&b, "\n  ... and %zu more", n - 20);
	st__err(err, ST_EAMBIGUOUS, "'%s' matches %zu resources; give the full URN (or #INDEX):%s",
		q, n, b.data ? b.data : "");
	st_buf_free(&b);
	return ST_EAMBIGUOUS;
}

/* Nothing found: Pulumi's message (resourceNotFoundError), with up to three distinct URNs
 * within its edit distance, max(2, len/4) with len in bytes as Go's len of a string (the
 * distance over runes, case folded, as Pulumi's), nearest first (a name query is
 * also compared with each resource's name). live: only resources not marked delete: true
 * are candidates, as for Pulumi's protect and taint. */
static int not_found(json_t *res, const char *q, int live, st_error *err)
{
	size_t best[3] = {0}, bestd[3] = {(size_t)-1, (size_t)-1, (size_t)-1};
	size_t lim = strlen(q) / 4 > 2 ? strlen(q) / 4 : 2;
	locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	st_buf b;
	size_t i;
	json_t *r;
	json_array_foreach(res, i, r) {
		const char *urn = st_json_str(r, "urn"), *name;
		size_t d;
		int seen = 0;
		if (!urn || (live && st_json_bool(r, "delete")))
			continue;
		for (int k = 0; k < 3 && bestd[k] != (size_t)-1; k++)
			seen |= !strcmp(urn, st_json_str(json_array_get(res, best[k]), "urn"));
		if (seen)
			continue;
		d = levenshtein(q, urn, loc);
		if ((name = urn_name(urn)) && levenshtein(q, name, loc) < d)
			d = levenshtein(q, name, loc);
		for (int k = 0; k < 3 && d <= lim; k++) {
			if (d < bestd[k]) {
				for (int m = 2; m > k; m--) {
					bestd[m] = bestd[m - 1];
					best[m] = best[m - 1];
				}
				bestd[k] = d;
				best[k] = i;
				break;
			}
		}
	}
	if (loc)
		freelocale(loc);
	st_buf_init(&b);
	for (int k = 0; k < 3 && bestd[k] != (size_t)-1; k++)
		st_buf_printf(&b, "%s\n  %s", k == 0 ? "\nDid you mean:" : "",
			      st_json_str(json_array_get(res, best[k]), "urn"));
	st__err(err, ST_ENOTFOUND,
		"No such resource \"%s\" exists in the current state%s\nTo list the "
		"resource URNs in the state, run `statetool list`",
		q, b.data ? b.data : "");
	st_buf_free(&b);
	return ST_ENOTFOUND;
}

/* Whether the hits are copies of one URN (delete: true), which are one resource, as an exact
 * URN is. */
static int one_urn(json_t *res, const size_t *hits, size_t n)
{
	const char *first = st_json_str(json_array_get(res, hits[0]), "urn");
	size_t same = 1;
	while (same < n && !strcmp(first, st_json_str(json_array_get(res, hits[same]), "urn")))
		same++;
	return same == n;
}

int st_state_find(st_state *s, const char *q, size_t **out, size_t *count, st_error *err)
{
	ST_ASSERT_ARG_AS(s, "state");
	ST_ASSERT_ARG_AS(q, "query");
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(count);
	return st_state_find_ex(s, q, 0, out, count, err);
}

int st_state_find_ex(st_state *s, const char *q, unsigned flags, size_t **out, size_t *count,
		     st_error *err)
{
	ST_ASSERT_ARG_AS(s, "state");
	ST_ASSERT_ARG_AS(q, "query");
	ST_ASSERT_ARG(out);
	ST_ASSERT_ARG(count);
	if (flags & ~(unsigned)(ST_FIND_LIVE))
		return st__bad_flags(err, flags, ST_FIND_LIVE, "0 or ST_FIND_LIVE");
	int live = !!(flags & ST_FIND_LIVE);
	json_t *res = st_state_resources(s, 0), *r;
	size_t i, n = 0, cap = 0, *hits = NULL;
	size_t nres = json_array_size(res);
	int rc;

	*out = NULL;
	*count = 0;
	if (q[0] == '#' && q[1]) {
		char *end;
		unsigned long long idx = strtoull(q + 1, &end, 10);
		if (*end || idx >= nres)
			return st__err(err, ST_ENOTFOUND, "no resource at index %s (the state has "
				       "%zu resources)", q + 1, nres);
		if (live && st_json_bool(json_array_get(res, idx), "delete"))
			return st__err(err, ST_EREFUSED,
				       "#%llu is a copy marked delete: true (%s), which the next update "
				       "deletes; it is never changed here",
				       idx, st_json_str(json_array_get(res, idx), "urn"));
		if (push(&hits, &n, &cap, (size_t)idx) < 0)
			return st__err(err, ST_ENOMEM, "out of memory");
		*out = hits;
		*count = 1;
		return ST_OK;
	}
	/* Exact URN (lengths compared first: jansson keeps them). */
	size_t qlen = strlen(q);
	json_array_foreach(res, i, r) {
		json_t *uv = json_object_get(r, "urn");
		if (json_is_string(uv) && json_string_length(uv) == qlen &&
		    !(live && st_json_bool(r, "delete")) &&
		    !memcmp(json_string_value(uv), q, qlen) &&
		    push(&hits, &n, &cap, i) < 0)
			goto oom;
	}
	/* Name, then URN suffix. */
	for (int pass = 0; pass < 2 && n == 0; pass++) {
		json_array_foreach(res, i, r) {
			const char *urn = st_json_str(r, "urn"), *name;
			if (!urn || (live && st_json_bool(r, "delete")))
				continue;
			if (pass == 0) {
				name = urn_name(urn);
				if (name && !strcmp(name, q) && push(&hits, &n, &cap, i) < 0)
					goto oom;
			} else if (whole_tail(urn, q, qlen) && push(&hits, &n, &cap, i) < 0) {
				goto oom;
			}
		}
		if (n > 1 && !one_urn(res, hits, n)) {
			rc = ambiguous(res, q, hits, n, err);
			free(hits);
			return rc;
		}
		if (n > 1)
			break;
	}
	if (n == 0) {
		free(hits);
		return not_found(res, q, live, err);
	}
	*out = hits;
	*count = n;
	return ST_OK;
oom:
	free(hits);
	return st__err(err, ST_ENOMEM, "out of memory");
}
