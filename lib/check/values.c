/*
 * Property values as Pulumi deserializes them (DeserializePropertyValue in
 * pkg/resource/stack/deployment.go, asset.Deserialize, archive.Deserialize): every signature's
 * members, with Pulumi's messages. Pulumi refuses to load a state with such a value, after
 * decoding it: these are validation errors, and statetool still loads the state to fix it.
 */
#include "check/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the property walk is: the pointer is only built when a problem is reported. */
static const char *walk_ptr(ictx *c)
{
	if (c->inner)
		return c->inner;
	if (c->wbase) {
		c->ptr.len = 0;
		st_buf_adds(&c->ptr, c->wbase);
	} else {
		ptr_res(c, c->wres, NULL);
	}
	st_buf_addc(&c->ptr, '/');
	st_buf_adds(&c->ptr, c->wfield);
	st_segs_pointer(&c->ptr, &c->segs);
	return c->ptr.data ? c->ptr.data : "";
}

static int walk_push(ictx *c, const char *key, size_t len)
{
	if (st_segs_push(&c->segs, key, len) < 0) {
		NOMEM(c);
		return -1;
	}
	return 0;
}

/* Go's %v of a value in a property map (after Mappable). */
static void go_v(st_buf *b, const json_t *v, int depth)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		st_buf_add(b, json_string_value(v), json_string_length(v));
		break;
	case JSON_TRUE:
		st_buf_adds(b, "true");
		break;
	case JSON_FALSE:
		st_buf_adds(b, "false");
		break;
	case JSON_NULL:
		st_buf_adds(b, "<nil>");
		break;
	case JSON_INTEGER:
	case JSON_REAL: {
		/* strconv.FormatFloat(f, 'g', -1, 64): the shortest digits; %e when the exponent
		 * is below -4 or from 6 up */
		double d = json_number_value(v);
		char t[64];
		int prec = 1, nd, x;
		for (; prec < 17; prec++) {
			snprintf(t, sizeof(t), "%.*e", prec - 1, d);
			if (strtod(t, NULL) == d)
				break;
		}
		snprintf(t, sizeof(t), "%.*e", prec - 1, d);
		x = atoi(strchr(t, 'e') + 1);
		nd = prec;
		if (x >= -4 && x < 6)
			snprintf(t, sizeof(t), "%.*f", nd - 1 - x > 0 ? nd - 1 - x : 0, d);
		st_buf_adds(b, t);
		break;
	}
	case JSON_ARRAY:
		st_buf_addc(b, '[');
		for (size_t i = 0; i < json_array_size(v) && depth < 32; i++) {
			if (i)
				st_buf_addc(b, ' ');
			go_v(b, json_array_get(v, i), depth + 1);
		}
		st_buf_addc(b, ']');
		break;
	case JSON_OBJECT:
		st_buf_adds(b, "map[...]");
		break;
	}
}

/* Go's %T of a value in a property map. */
static const char *go_t(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_STRING: return "string";
	case JSON_TRUE:
	case JSON_FALSE: return "bool";
	case JSON_NULL: return "<nil>";
	case JSON_OBJECT: return "map[string]interface {}";
	case JSON_ARRAY: return "[]interface {}";
	default: return "float64";
	}
}

#define MALFORMED(...) ERR("property/malformed", walk_ptr(c), urn, __VA_ARGS__)

static int is_sig(const json_t *v, const char *sig)
{
	const char *s = json_string_value(json_object_get(v, ST_SIG_KEY));
	return s && !strcmp(s, sig);
}

static void check_secret(ictx *c, json_t *v, const char *urn, int depth);

/* asset.Deserialize: each field present must be a string. */
static void check_asset(ictx *c, json_t *v, const char *urn)
{
	static const char *const f[] = {"hash", "text", "path", "uri"};
	static const char *const name[] = {"hash", "text", "path", "URI"};
	for (int i = 0; i < 4; i++) {
		json_t *x = json_object_get(v, f[i]);
		if (x && !json_is_string(x)) {
			MALFORMED("unexpected asset %s of type %s", name[i], go_t(x));
			return;
		}
	}
}

/* archive.Deserialize: a non-empty path wins, then a URI, then the assets. */
static void check_archive(ictx *c, json_t *v, const char *urn)
{
	json_t *x = json_object_get(v, "hash");
	const char *k;
	json_t *m;
	if (x && !json_is_string(x)) {
		MALFORMED("unexpected archive hash of type %s", go_t(x));
		return;
	}
	for (int i = 0; i < 2; i++) {
		x = json_object_get(v, i ? "uri" : "path");
		if (!x)
			continue;
		if (!json_is_string(x)) {
			MALFORMED("unexpected archive %s of type %s", i ? "URI" : "path", go_t(x));
			return;
		}
		if (json_string_length(x))
			return;
	}
	x = json_object_get(v, "assets");
	if (!x)
		return;
	if (!json_is_object(x)) {
		MALFORMED("unexpected archive contents of type %s", go_t(x));
		return;
	}
	json_object_foreach(x, k, m) {
		if (!is_sig(m, ST_SIG_ASSET) && !is_sig(m, ST_SIG_ARCHIVE)) {
			MALFORMED("archive member '%s' is not an asset or archive", k);
			return;
		}
	}
}

static void check_resref(ictx *c, json_t *v, const char *urn)
{
	json_t *pv = json_object_get(v, "packageVersion"), *id = json_object_get(v, "id");
	if (pv && !json_is_string(pv)) {
		MALFORMED("malformed resource reference: packageVersion must be a string");
	} else if (!json_is_string(json_object_get(v, "urn"))) {
		MALFORMED("malformed resource reference: missing urn");
	} else if (id && !json_is_string(id)) {
		/* the legacy {"V": ...} form of v2.18.0: V null, a string or an object */
		json_t *vv = json_object_get(id, "V");
		if (!json_is_object(id) || !(!vv || json_is_null(vv) || json_is_string(vv) ||
					     json_is_object(vv)))
			MALFORMED("malformed resource reference: id must be a string");
	}
}

/* A byte string's or a float's "value". */
static void check_value_text(ictx *c, json_t *v, const char *urn, int bytes)
{
	json_t *x = json_object_get(v, "value");
	const char *what = bytes ? "byte string" : "float value";
	char *e;
	if (!json_is_string(x)) {
		MALFORMED("malformed %s: missing or non-string 'value' field", what);
		return;
	}
	e = bytes ? st__go_base64_error(json_string_value(x), json_string_length(x))
		  : st__go_parse_hex64_error(json_string_value(x), json_string_length(x), NULL);
	if (e)
		MALFORMED("malformed %s: unable to parse 'value' field: %s", what, e);
	free(e);
}

static void check_sig(ictx *c, json_t *v, json_t *sigv, const char *urn, int depth)
{
	const char *sig = json_string_value(sigv);
	if (sig && !strcmp(sig, ST_SIG_SECRET)) {
		check_secret(c, v, urn, depth);
	} else if (sig && !strcmp(sig, ST_SIG_ASSET)) {
		check_asset(c, v, urn);
	} else if (sig && !strcmp(sig, ST_SIG_ARCHIVE)) {
		check_archive(c, v, urn);
	} else if (sig && !strcmp(sig, ST_SIG_RESREF)) {
		check_resref(c, v, urn);
	} else if (sig && (!strcmp(sig, ST_SIG_BYTESTRING) || !strcmp(sig, ST_SIG_NUMBER))) {
		check_value_text(c, v, urn, !strcmp(sig, ST_SIG_BYTESTRING));
	} else {
		/* no other signature, the output value's included, may be in a state */
		st_buf b;
		st_buf_init(&b);
		go_v(&b, sigv, 0);
		ERR("property/unknown-signature", walk_ptr(c), urn,
		    "unrecognized signature '%s' in property map", b.data ? b.data : "");
		st_buf_free(&b);
	}
}

/* A secret: exactly one of a ciphertext or a plaintext string, not empty. A plaintext is a
 * serialized value, read with a no-op decrypter: its nested secrets' "ciphertexts" are plain
 * JSON too, and every value in it is checked (reported at the secret). */
static void check_secret(ictx *c, json_t *v, const char *urn, int depth)
{
	json_t *ct = json_object_get(v, "ciphertext"), *pt = json_object_get(v, "plaintext");
	int cok = json_is_string(ct), pok = json_is_string(pt);
	const char *text;
	if (cok == pok || !json_string_length(cok ? ct : pt)) {
		ERR("secrets/malformed", walk_ptr(c), urn,
		    "malformed secret value: exactly one of `ciphertext` or `plaintext` must be "
		    "supplied");
		return;
	}
	if (cok && !c->inner) {
		if (!c->ciphertexts++ && !(c->first_cipher_ptr = st_strdup(walk_ptr(c))))
			NOMEM(c);
		if (c->secrets_type && !strcmp(c->secrets_type, "passphrase")) {
			const char *t = json_string_value(ct);
			const char *a = strchr(t, ':');
			const char *b = a ? strchr(a + 1, ':') : NULL;
			if (strncmp(t, "v1:", 3) || !b || strchr(b + 1, ':'))
				WARN("secrets/ciphertext-format", walk_ptr(c), urn,
				     "ciphertext is not in the passphrase provider's "
				     "'v1:NONCE:CIPHERTEXT' form");
		}
		return;
	}
	if (pok && !c->inner)
		WARN("secrets/plaintext", walk_ptr(c), urn,
		     "secret stored as plaintext (as `pulumi stack export --show-secrets` writes "
		     "it); `statetool secrets encrypt` encrypts it");
	text = json_string_value(pok ? pt : ct);
	{
		json_t *inner = NULL;
		st_error perr;
		st_error_clear(&perr);
		if (st_json_parse(&inner, text, strlen(text), NULL, NULL, NULL, NULL, &perr) !=
		    ST_OK) {
			if (perr.code == ST_ENOMEM)
				NOMEM(c);
			else
				ERR("secrets/malformed", walk_ptr(c), urn, "%s", perr.message);
			return;
		}
		if (json_is_object(inner) || json_is_array(inner)) {
			/* problems inside are reported at the secret */
			char *at = st_strdup(walk_ptr(c));
			const char *saved = c->inner;
			if (!at) {
				NOMEM(c);
			} else {
				c->inner = at;
				st__check_value(c, inner, urn, depth + 1);
				c->inner = saved;
			}
			free(at);
		}
		json_decref(inner);
	}
}

/* Walks a property value: every member first (Pulumi deserializes an object's members before
 * it looks at its signature), then the signature. */
void st__check_value(ictx *c, json_t *v, const char *urn, int depth)
{
	if (depth > ST_DEFAULT_MAX_DEPTH)
		return;
	if (json_is_array(v)) {
		size_t i;
		json_t *e;
		if (walk_push(c, NULL, 0) < 0)
			return;
		json_array_foreach(v, i, e) {
			if (json_is_array(e) || json_is_object(e)) {
				c->segs.v[c->segs.n - 1].len = i;
				st__check_value(c, e, urn, depth + 1);
			}
		}
		c->segs.n--;
	} else if (json_is_object(v)) {
		/* Looking for the signature key among the keys is cheaper than hashing it for
		 * every object of every property tree (few keys are 32 bytes long). */
		json_t *sigv = NULL, *e;
		int nested = 0;
		/* the iterator itself: jansson's foreach macros go through the key for each step */
		for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
			e = json_object_iter_value(it);
			if (json_object_iter_key_len(it) == sizeof(ST_SIG_KEY) - 1 &&
			    !memcmp(json_object_iter_key(it), ST_SIG_KEY, sizeof(ST_SIG_KEY) - 1))
				sigv = e;
			else
				nested |= json_is_array(e) || json_is_object(e);
		}
		if (nested) {
			if (walk_push(c, NULL, 0) < 0)
				return;
			for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
				e = json_object_iter_value(it);
				if (json_is_array(e) || json_is_object(e)) {
					c->segs.v[c->segs.n - 1].key = json_object_iter_key(it);
					c->segs.v[c->segs.n - 1].len = json_object_iter_key_len(it);
					st__check_value(c, e, urn, depth + 1);
				}
			}
			c->segs.n--;
		}
		if (sigv)
			check_sig(c, v, sigv, urn, depth);
	}
}
