/* One resource as `pulumi state get` finds it: by URN, by Pulumi's auto-assigned reference
 * identifier (pkg/cmd/pulumi/autonames), or by a unique name; then statetool's other forms. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Pulumi's SanitizeIdent: letters, digits and '_' kept (per rune), everything else '_', a
 * leading digit prefixed with '_'. */
static void sanitize(st_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int first = 1;
	while (*p) {
		unsigned char c = *p;
		size_t w = 1;
		if (c >= 0x80) { /* one '_' per rune (Go ranges over runes) */
			if (c >= 0xf0)
				w = 4;
			else if (c >= 0xe0)
				w = 3;
			else if (c >= 0xc0)
				w = 2;
			for (size_t k = 1; k < w; k++)
				if ((p[k] & 0xc0) != 0x80) {
					w = k;
					break;
				}
			st_buf_addc(b, '_');
		} else if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			st_buf_addc(b, (char)c);
		} else if (c >= '0' && c <= '9') {
			if (first)
				st_buf_addc(b, '_');
			st_buf_addc(b, (char)c);
		} else {
			st_buf_addc(b, '_');
		}
		first = 0;
		p += w;
	}
}

typedef struct aentry {
	const char *urn;
	const char *snippet; /* the snippet's name, or NULL */
} aentry;

static int aentry_cmp(const void *a, const void *b)
{
	return strcmp(((const aentry *)a)->urn, ((const aentry *)b)->urn);
}

static const char *snippet_name(json_t *dep, const char *id)
{
	json_t *sn = json_object_get(dep, "snippets"), *v;
	size_t i;
	json_array_foreach(sn, i, v) {
		const char *u = st_json_str(v, "uuid");
		if (u && !strcmp(u, id))
			return st_json_str(v, "name");
	}
	return NULL;
}

static int sanitized_eq_count(const aentry *e, size_t n, const char *ident)
{
	int c = 0;
	for (size_t i = 0; i < n; i++) {
		if (!e[i].snippet)
			continue;
		st_buf b;
		st_buf_init(&b);
		sanitize(&b, e[i].snippet);
		if (b.data && !strcmp(b.data, ident))
			c++;
		st_buf_free(&b);
	}
	return c;
}

int st_state_autonames(st_state *s, json_t **out, st_error *err)
{
	ST_ASSERT_ARG_AS(s, "state");
	ST_ASSERT_ARG(out);
	json_t *dep = st_state_deployment(s), *res = st_state_resources(s, 0), *r;
	json_t *map = json_object();
	aentry *e = calloc(json_array_size(res) + 1, sizeof(*e));
	size_t n = 0, i;
	int rc = ST_OK;

	*out = NULL;
	if (!map || !e)
		goto oom;
	json_array_foreach(res, i, r) {
		const char *urn = st_json_str(r, "urn"), *type = st_json_str(r, "type");
		const char *sid = st_json_str(r, "snippetID");
		if (!urn || st_json_bool(r, "delete") || !type || !strcmp(type, ST_ROOT_STACK_TYPE) ||
		    st_type_is_provider(type))
			continue;
		e[n].urn = urn;
		e[n].snippet = sid && *sid ? snippet_name(dep, sid) : NULL;
		if (e[n].snippet && !*e[n].snippet)
			e[n].snippet = NULL;
		n++;
	}
	qsort(e, n, sizeof(*e), aentry_cmp);
	for (i = 0; i < n && rc == ST_OK; i++) {
		st_buf b;
		st_urn u;
		st_buf_init(&b);
		if (e[i].snippet) {
			sanitize(&b, e[i].snippet);
			if (b.data && sanitized_eq_count(e, n, b.data) == 1 &&
			    !json_object_get(map, b.data)) {
				if (json_object_set_new(map, b.data, json_string(e[i].urn)))
					rc = ST_ENOMEM;
				st_buf_free(&b);
				continue;
			}
			b.len = 0;
		}
		if (e[i].snippet) {
			sanitize(&b, e[i].snippet);
		} else if (st_urn_parse(e[i].urn, &u) == ST_OK) {
			char *name = st_strndup(u.name, u.name_len);
			if (name)
				sanitize(&b, name);
			else
				b.oom = 1;
			free(name);
		}
		char hash[65];
		st_sha256_hex(e[i].urn, strlen(e[i].urn), hash);
		size_t base = b.len, chars;
		for (chars = 6; chars <= 64; chars++) {
			b.len = base;
			st_buf_addc(&b, '_');
			st_buf_add(&b, hash, chars);
			st_buf_addc(&b, '\0');
			if (b.oom || !json_object_get(map, b.data))
				break;
		}
		if (b.oom || json_object_set_new(map, b.data, json_string(e[i].urn)))
			rc = ST_ENOMEM;
		st_buf_free(&b);
	}
	free(e);
	if (rc != ST_OK) {
		json_decref(map);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	*out = map;
	return ST_OK;
oom:
	free(e);
	json_decref(map);
	return st__err(err, ST_ENOMEM, "out of memory");
}

/* The first copy of the URN at index `i` not marked delete: true (or the first copy), with a
 * warning about copies pending deletion. */
static int pick_live(json_t *res, const char *urn, size_t *index, st_changes *warnings)
{
	size_t i, live = (size_t)-1, first = (size_t)-1;
	json_t *r;
	json_array_foreach(res, i, r) {
		const char *u = st_json_str(r, "urn");
		if (!u || strcmp(u, urn))
			continue;
		if (first == (size_t)-1)
			first = i;
		if (live == (size_t)-1 && !st_json_bool(r, "delete"))
			live = i;
	}
	if (live == (size_t)-1) {
		*index = first;
		return ST_OK;
	}
	size_t pending = 0;
	json_array_foreach(res, i, r) {
		const char *u = st_json_str(r, "urn");
		if (u && !strcmp(u, urn) && st_json_bool(r, "delete"))
			pending++;
	}
	if (pending && st_changes_add(warnings, "%zu copy(ies) of this resource are pending "
				      "deletion; showing the live resource (`statetool show --json` "
				      "lists all copies)", pending) != ST_OK)
		return ST_ENOMEM;
	*index = live;
	return ST_OK;
}

/* The distinct URNs whose name is exactly `name`, in state order. */
static int named(json_t *res, const char *name, const char ***out, size_t *count)
{
	size_t i, n = 0;
	json_t *r;
	const char **v = calloc(json_array_size(res) + 1, sizeof(*v));
	if (!v)
		return ST_ENOMEM;
	json_array_foreach(res, i, r) {
		const char *urn = st_json_str(r, "urn");
		st_urn u;
		if (!urn || st_urn_parse(urn, &u) != ST_OK || u.name_len != strlen(name) ||
		    memcmp(u.name, name, u.name_len))
			continue;
		size_t k;
		for (k = 0; k < n && strcmp(v[k], urn); k++)
			;
		if (k == n)
			v[n++] = urn;
	}
	*out = v;
	*count = n;
	return ST_OK;
}

int st_state_get(st_state *s, const char *ref, size_t *index, st_changes *warnings,
		 st_error *err)
{
	ST_ASSERT_ARG_AS(s, "state");
	ST_ASSERT_ARG(ref);
	ST_ASSERT_ARG(index);
	json_t *res = st_state_resources(s, 0), *names = NULL;
	const char **nm = NULL, *refurn;
	size_t nn = 0, *hits = NULL, nh = 0;
	int rc;

	if (st_urn_valid(ref)) {
		if ((rc = st_state_find(s, ref, &hits, &nh, err)) != ST_OK)
			return rc;
		free(hits);
		hits = NULL;
		goto live;
	}
	if (!strncmp(ref, "urn:", 4))
		return st__err(err, ST_EINVAL, "\"%s\" is not a valid resource URN", ref);
	if ((rc = st_state_autonames(s, &names, err)) != ST_OK)
		return rc;
	if (named(res, ref, &nm, &nn) != ST_OK) {
		json_decref(names);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	refurn = json_string_value(json_object_get(names, ref));
	if (refurn) {
		st_buf b;
		st_buf_init(&b);
		for (size_t k = 0; k < nn; k++)
			if (strcmp(nm[k], refurn))
				st_buf_printf(&b, "%s%s", b.len ? "\n    " : "", nm[k]);
		if (b.len) {
			rc = st__err(err, ST_EAMBIGUOUS,
				     "\"%s\" is ambiguous: it is the reference identifier for\n    %s\n"
				     "but also the name of\n    %s\nspecify the resource by URN "
				     "instead", ref, refurn, b.data);
			st_buf_free(&b);
			goto out;
		}
		st_buf_free(&b);
		ref = refurn;
		goto resolved;
	}
	if (nn == 1) {
		ref = nm[0];
		goto resolved;
	}
	if (nn > 1) {
		st_buf b;
		st_buf_init(&b);
		for (size_t k = 0; k < nn; k++)
			st_buf_printf(&b, "%s%s", k ? "\n    " : "", nm[k]);
		rc = st__err(err, ST_EAMBIGUOUS,
			     "%zu resources in the stack are named \"%s\":\n    %s\nspecify one by URN",
			     nn, ref, b.data ? b.data : "");
		st_buf_free(&b);
		goto out;
	}
	/* statetool's other forms: #INDEX, TYPE::NAME and other whole-segment tails */
	if ((rc = st_state_find(s, ref, &hits, &nh, err)) != ST_OK)
		goto out;
	if (ref[0] == '#') {
		*index = hits[0];
		goto out;
	}
	ref = st_json_str(json_array_get(res, hits[0]), "urn");
resolved:
live:
	rc = pick_live(res, ref, index, warnings);
	if (rc != ST_OK)
		rc = st__err(err, ST_ENOMEM, "out of memory");
out:
	free(hits);
	free(nm);
	json_decref(names);
	return rc;
}
