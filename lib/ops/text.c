/* A resource as `pulumi state get` prints it on a terminal: Type, URN, ID, then its inputs and
 * outputs as Pulumi's display.PrintObject prints a property map (pkg/backend/display/
 * object_diff.go), without colours. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIG_ASSET "c44067f5952c0a294b673a41bacd8c17"
#define SIG_ARCHIVE "0def7320c3a5731c473e5ecbe6d01bc7"
#define SIG_RESREF "5cf8f73096256a8f31e491e813e4eb8e"
#define SIG_OUTPUT "d0e6a833031e9bbcd3f4e8bde6ca49a4"
#define EMPTY_HASH "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

typedef struct printer {
	st_buf *b;
	unsigned flags;
	st_secrets *secrets;
	st_error *err;
	int rc;
} printer;

static void indent(printer *p, int n)
{
	for (int i = 0; i < n; i++)
		st_buf_adds(p->b, "    ");
}

/* Go's %g of a float64 with the shortest precision: %e form when the exponent is < -4 or
 * >= 6, else plain decimals. */
static void go_g(st_buf *b, double v)
{
	char tmp[48], digits[24];
	int prec, nd = 0, exp;
	for (prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	const char *q = tmp;
	if (*q == '-') {
		st_buf_addc(b, '-');
		q++;
	}
	for (; *q && *q != 'e'; q++)
		if (*q >= '0' && *q <= '9')
			digits[nd++] = *q;
	exp = atoi(q + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	if (exp < -4 || exp >= 6) {
		st_buf_addc(b, digits[0]);
		if (nd > 1) {
			st_buf_addc(b, '.');
			st_buf_adds(b, digits + 1);
		}
		st_buf_printf(b, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
	} else if (exp < 0) {
		st_buf_adds(b, "0.");
		for (int k = 0; k < -exp - 1; k++)
			st_buf_addc(b, '0');
		st_buf_adds(b, digits);
	} else {
		for (int k = 0; k <= exp || k < nd; k++) {
			if (k == exp + 1)
				st_buf_addc(b, '.');
			st_buf_addc(b, k < nd ? digits[k] : '0');
		}
	}
}

static void value(printer *p, const json_t *v, int ind, int plain);

static void prop_value(printer *p, const json_t *v, int ind, int plain)
{
	value(p, v, ind, plain);
	st_buf_addc(p->b, '\n');
}

static int keycmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static size_t runes(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void title(printer *p, int ind, const char *name, size_t align)
{
	indent(p, ind);
	st_buf_adds(p->b, name);
	for (size_t k = runes(name); k < align; k++)
		st_buf_addc(p->b, ' ');
	st_buf_adds(p->b, ": ");
}

/* Keys sorted bytewise; the width counts every key, internal ones (__...) included, which are
 * not printed. */
static void object(printer *p, const json_t *obj, int ind, int plain)
{
	size_t n = json_object_size(obj), k = 0, maxkey = 0;
	const char **keys = malloc((n + 1) * sizeof(*keys));
	const char *key;
	json_t *v;
	if (!keys) {
		p->b->oom = 1;
		return;
	}
	json_object_foreach((json_t *)obj, key, v) {
		keys[k++] = key;
		if (strlen(key) > maxkey)
			maxkey = strlen(key);
	}
	qsort(keys, n, sizeof(*keys), keycmp);
	for (k = 0; k < n; k++) {
		if (!strncmp(keys[k], "__", 2))
			continue;
		title(p, ind, keys[k], maxkey);
		prop_value(p, json_object_get(obj, keys[k]), ind, plain);
	}
	free(keys);
}

static void quoted(printer *p, const char *s)
{
	st__go_quote(p->b, s, strlen(s));
}

static const char *short_hash(const json_t *v, char buf[8])
{
	const char *h = st_json_str(v, "hash");
	snprintf(buf, 8, "%s", h ? h : "");
	return buf;
}

static void asset(printer *p, const json_t *v, int ind)
{
	const char *text = st_json_str(v, "text"), *path = st_json_str(v, "path");
	const char *uri = st_json_str(v, "uri"), *hash = st_json_str(v, "hash");
	char h[8];
	short_hash(v, h);
	if (path && *path) {
		st_buf_printf(p->b, "asset(file:%s) { %s }", h, path);
	} else if (uri && *uri) {
		st_buf_printf(p->b, "asset(uri:%s) { %s }", h, uri);
	} else if ((text && *text) || !hash || !*hash || !strcmp(hash, EMPTY_HASH)) {
		st_buf_printf(p->b, "asset(text:%s) {\n", h);
		const char *t = text ? text : "";
		for (;;) {
			const char *nl = strchr(t, '\n');
			size_t len = nl ? (size_t)(nl - t) : strlen(t);
			indent(p, ind);
			st_buf_adds(p->b, "    ");
			st_buf_add(p->b, t, len);
			st_buf_addc(p->b, '\n');
			if (!nl)
				break;
			t = nl + 1;
		}
		indent(p, ind);
		st_buf_addc(p->b, '}');
	} else {
		st_buf_printf(p->b, "asset(unknown:%s) { }", h);
	}
}

static void archive(printer *p, const json_t *v, int ind)
{
	const char *path = st_json_str(v, "path"), *uri = st_json_str(v, "uri");
	const char *hash = st_json_str(v, "hash");
	json_t *assets = json_object_get(v, "assets");
	char h[8];
	short_hash(v, h);
	if (path && *path) {
		st_buf_printf(p->b, "archive(file:%s) { %s }", h, path);
	} else if (uri && *uri) {
		st_buf_printf(p->b, "archive(uri:%s) { %s }", h, uri);
	} else if (json_object_size(assets) || !hash || !*hash) {
		size_t n = json_object_size(assets), k = 0;
		const char **keys = malloc((n + 1) * sizeof(*keys)), *key;
		json_t *a;
		if (!keys) {
			p->b->oom = 1;
			return;
		}
		json_object_foreach(assets, key, a)
			keys[k++] = key;
		qsort(keys, n, sizeof(*keys), keycmp);
		st_buf_printf(p->b, "archive(assets:%s) {\n", h);
		for (k = 0; k < n; k++) {
			indent(p, ind);
			st_buf_adds(p->b, "    ");
			quoted(p, keys[k]);
			st_buf_adds(p->b, ": ");
			prop_value(p, json_object_get(assets, keys[k]), ind + 1, 0);
		}
		free(keys);
		indent(p, ind);
		st_buf_addc(p->b, '}');
	} else {
		st_buf_printf(p->b, "archive(%s) { }", h);
	}
}

/* A secret's element: its plaintext, or its ciphertext decrypted. NULL when it cannot be
 * shown (p->rc set). */
static json_t *secret_element(printer *p, const json_t *v)
{
	const char *pt = st_json_str(v, "plaintext"), *ct = st_json_str(v, "ciphertext");
	char *plain = NULL;
	size_t len = 0;
	json_t *el = NULL;
	if (pt) {
		if (st_json_parse(&el, pt, strlen(pt), NULL, NULL, NULL, NULL, p->err) != ST_OK)
			p->rc = p->err && p->err->code ? p->err->code : ST_EFORMAT;
		return el;
	}
	if (!ct) {
		p->rc = st__err(p->err, ST_EFORMAT, "a secret has neither plaintext nor ciphertext");
		return NULL;
	}
	if (!p->secrets) {
		p->rc = st__err(p->err, ST_EPASSPHRASE, "the resource holds encrypted secrets: "
				"its secrets manager is needed to show them");
		return NULL;
	}
	if ((p->rc = st_secrets_decrypt(p->secrets, ct, &plain, &len, p->err)) != ST_OK)
		return NULL;
	if (st_json_parse(&el, plain, len, NULL, NULL, NULL, NULL, p->err) != ST_OK)
		p->rc = ST_EFORMAT;
	st_secret_free(plain, len);
	return el;
}

/* A string holding a whole JSON array or object: Pulumi shows it decoded, "(json) ...". */
static int json_string_shown(printer *p, const char *s, int ind)
{
	size_t n = strlen(s);
	while (n && strchr(" \t\r\n\v\f", s[n - 1]))
		n--;
	while (n && strchr(" \t\r\n\v\f", *s)) {
		s++;
		n--;
	}
	if (!n || (*s != '{' && *s != '['))
		return 0;
	json_t *v = NULL;
	st_error perr;
	st_error_clear(&perr);
	if (st_json_parse(&v, s, n, NULL, NULL, NULL, NULL, &perr) != ST_OK) {
		if (perr.code != ST_ENOMEM)
			return 0; /* not JSON: the string as it is */
		p->rc = st__err(p->err, ST_ENOMEM, "out of memory"); /* not a reason to show less */
		return 1;
	}
	st_buf_adds(p->b, "(json) ");
	prop_value(p, v, ind, 1);
	json_decref(v);
	return 1;
}

static void value(printer *p, const json_t *v, int ind, int plain)
{
	const char *sig = plain ? NULL : st_json_str(v, ST_SIG_KEY);
	if (p->rc != ST_OK)
		return;
	if (sig && !strcmp(sig, ST_SIG_SECRET)) {
		if (!(p->flags & ST_TEXT_SHOW_SECRETS)) {
			st_buf_adds(p->b, "[secret]");
			return;
		}
		json_t *el = secret_element(p, v);
		if (el)
			value(p, el, ind, 0);
		json_decref(el);
	} else if (sig && !strcmp(sig, SIG_ASSET)) {
		asset(p, v, ind);
	} else if (sig && !strcmp(sig, SIG_ARCHIVE)) {
		archive(p, v, ind);
	} else if (sig && !strcmp(sig, SIG_RESREF)) {
		json_t *id = json_object_get(v, "id");
		const char *pv = st_json_str(v, "packageVersion");
		st_buf_adds(p->b, "{\n");
		title(p, ind + 1, "URN", 3);
		quoted(p, st_json_str(v, "urn") ? st_json_str(v, "urn") : "");
		st_buf_addc(p->b, '\n');
		title(p, ind + 1, "ID", 3);
		if (id)
			prop_value(p, id, ind + 1, 0);
		else
			st_buf_adds(p->b, "<null>\n");
		title(p, ind + 1, "PackageVersion", 3);
		quoted(p, pv ? pv : "");
		st_buf_addc(p->b, '\n');
		indent(p, ind);
		st_buf_addc(p->b, '}');
	} else if (sig && !strcmp(sig, SIG_OUTPUT)) {
		json_t *el = json_object_get(v, "value");
		if (json_is_true(json_object_get(v, "secret")) &&
		    !(p->flags & ST_TEXT_SHOW_SECRETS))
			st_buf_adds(p->b, "[secret]");
		else if (el)
			value(p, el, ind, 0);
		else
			st_buf_adds(p->b, "[unknown]");
	} else if (json_is_object(v)) {
		if (!json_object_size(v)) {
			st_buf_adds(p->b, "{}");
			return;
		}
		st_buf_adds(p->b, "{\n");
		object(p, v, ind + 1, plain);
		indent(p, ind);
		st_buf_addc(p->b, '}');
	} else if (json_is_array(v)) {
		size_t i;
		json_t *el;
		if (!json_array_size(v)) {
			st_buf_adds(p->b, "[]");
			return;
		}
		st_buf_adds(p->b, "[\n");
		json_array_foreach((json_t *)v, i, el) {
			indent(p, ind);
			st_buf_printf(p->b, "    [%zu]: ", i);
			prop_value(p, el, ind + 1, plain);
		}
		indent(p, ind);
		st_buf_addc(p->b, ']');
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		if (!plain && !strcmp(s, ST_UNKNOWN_ID))
			st_buf_adds(p->b, "[unknown]");
		else if (!json_string_shown(p, s, ind))
			st__go_quote(p->b, s, json_string_length(v));
	} else if (json_is_number(v)) {
		double d = json_number_value(v);
		if (trunc(d) == d)
			st_buf_printf(p->b, "%.0f", d);
		else
			go_g(p->b, d);
	} else if (json_is_boolean(v)) {
		st_buf_adds(p->b, json_is_true(v) ? "true" : "false");
	} else {
		st_buf_adds(p->b, "<null>");
	}
}

int st_resource_text(const json_t *resource, unsigned flags, st_secrets *secrets, char **out,
		     size_t *len, st_error *err)
{
	ST_ASSERT_ARG(resource);
	ST_ASSERT_ARG(out);
	if (flags & ~(unsigned)(ST_TEXT_SHOW_SECRETS))
		return st__bad_flags(err, flags, ST_TEXT_SHOW_SECRETS, "0 or ST_TEXT_SHOW_SECRETS");
	st_buf b;
	printer p = {&b, flags, secrets, err, ST_OK};
	const char *type = st_json_str(resource, "type"), *urn = st_json_str(resource, "urn");
	const char *id = st_json_str(resource, "id");
	static const char *const sections[2][2] = {{"inputs", "Inputs"}, {"outputs", "Outputs"}};

	*out = NULL;
	if (len)
		*len = 0;
	if (!json_is_object(resource))
		return st__err(err, ST_EINVAL, "a resource must be an object");
	st_buf_init(&b);
	st_buf_printf(&b, "Type: %s\nURN:  %s\n", type ? type : "", urn ? urn : "");
	if (id && *id)
		st_buf_printf(&b, "ID:   %s\n", id);
	if (st_json_bool(resource, "delete"))
		st_buf_adds(&b, "Pending deletion: yes\n");
	for (int k = 0; k < 2 && p.rc == ST_OK; k++) {
		json_t *props = json_object_get(resource, sections[k][0]);
		if (!json_object_size(props))
			continue;
		st_buf_printf(&b, "%s:\n", sections[k][1]);
		object(&p, props, 1, 0);
		st_buf_addc(&b, '\n');
	}
	if (p.rc != ST_OK) {
		st_buf_free(&b);
		return p.rc;
	}
	if (b.oom) {
		st_buf_free(&b);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	*out = st_buf_take(&b, len);
	return ST_OK;
}

/* ---- the resource as `pulumi state get --output json` prints it ----
 * Pulumi's renderResourceStateJSON: {"id","inputs","outputs","pendingDeletion"?,"type","urn"},
 * the properties through display.MassageSecrets and stack.SerializeProperties (a Go map each:
 * keys sorted at every level). */

static json_t *pj_value(printer *p, const json_t *v);

/* An object with its keys sorted (a Go map), each value through pj_value; `top`: a property
 * map, whose internal keys ("__...") Pulumi leaves out. */
static json_t *pj_object(printer *p, const json_t *obj, int top)
{
	size_t n = json_object_size(obj), k = 0;
	const char **keys = malloc((n + 1) * sizeof(*keys)), *key;
	json_t *o = json_object(), *v;
	if (!keys || !o) {
		free(keys);
		json_decref(o);
		return NULL;
	}
	json_object_foreach((json_t *)obj, key, v)
		keys[k++] = key;
	qsort(keys, n, sizeof(*keys), keycmp);
	for (k = 0; k < n; k++) {
		if (top && !strncmp(keys[k], "__", 2))
			continue;
		json_t *m = pj_value(p, json_object_get(obj, keys[k]));
		if (!m || json_object_set_new(o, keys[k], m)) {
			json_decref(o);
			o = NULL;
			break;
		}
	}
	free(keys);
	return o;
}

/* A secret as Pulumi serializes one it shows: {sig, "plaintext": its element as json.Marshal
 * writes it (compact, HTML escaped)}. */
static json_t *pj_shown_secret(printer *p, const json_t *el)
{
	st_style st = {1, "", 1, 0, 1};
	json_t *m = pj_value(p, el), *o = NULL;
	char *text = NULL;
	size_t len = 0;
	if (m && (p->rc = st_json_dump(m, &st, &text, &len, p->err)) == ST_OK)
		o = json_pack("{s:s, s:s%}", ST_SIG_KEY, ST_SIG_SECRET, "plaintext", text, len);
	free(text);
	json_decref(m);
	return o;
}

static json_t *pj_value(printer *p, const json_t *v)
{
	const char *sig = st_json_str(v, ST_SIG_KEY);
	if (p->rc != ST_OK)
		return NULL;
	if (sig && !strcmp(sig, ST_SIG_SECRET)) {
		if (!(p->flags & ST_TEXT_SHOW_SECRETS))
			return json_string("[secret]");
		json_t *el = secret_element(p, v), *m = el ? pj_value(p, el) : NULL;
		json_decref(el);
		return m;
	}
	if (sig && !strcmp(sig, ST_SIG_BYTESTRING)) { /* bytes that are not UTF-8: b"BASE64" */
		const char *b64 = st_json_str(v, "value");
		char *s = NULL;
		if (asprintf(&s, "b\"%s\"", b64 ? b64 : "") < 0)
			return NULL;
		json_t *r = json_string(s);
		free(s);
		return r;
	}
	if (sig && !strcmp(sig, ST_SIG_RESREF)) {
		const char *urn = st_json_str(v, "urn"), *pv = st_json_str(v, "packageVersion");
		json_t *o = json_pack("{s:s, s:s, s:s}", ST_SIG_KEY, ST_SIG_RESREF, "packageVersion",
				      pv ? pv : "", "urn", urn ? urn : "");
		const char *id = st_json_str(v, "id");
		if (o && id && json_object_set_new(o, "id", json_string(id))) {
			json_decref(o);
			return NULL;
		}
		json_t *sorted = o ? pj_object(p, o, 0) : NULL;
		json_decref(o);
		return sorted;
	}
	if (sig && !strcmp(sig, ST_SIG_OUTPUT)) {
		json_t *el = json_object_get(v, "value");
		int secret = json_is_true(json_object_get(v, "secret"));
		if (secret && !(p->flags & ST_TEXT_SHOW_SECRETS))
			return json_string("[secret]");
		if (!el) { /* unknown: Pulumi's computed placeholder */
			json_t *u = json_string(ST_UNKNOWN_ID);
			if (!secret)
				return u;
			json_t *o = pj_shown_secret(p, u);
			json_decref(u);
			return o;
		}
		return secret ? pj_shown_secret(p, el) : pj_value(p, el);
	}
	if (json_is_object(v))
		return pj_object(p, v, 0);
	if (json_is_array(v)) {
		json_t *a = json_array(), *el;
		size_t i;
		if (!a)
			return NULL;
		json_array_foreach((json_t *)v, i, el) {
			json_t *m = pj_value(p, el);
			if (!m || json_array_append_new(a, m)) {
				json_decref(a);
				return NULL;
			}
		}
		return a;
	}
	return json_deep_copy(v);
}

int st_resource_json(const json_t *resource, unsigned flags, st_secrets *secrets, json_t **out,
		     st_error *err)
{
	ST_ASSERT_ARG(resource);
	ST_ASSERT_ARG(out);
	if (flags & ~(unsigned)(ST_TEXT_SHOW_SECRETS))
		return st__bad_flags(err, flags, ST_TEXT_SHOW_SECRETS, "0 or ST_TEXT_SHOW_SECRETS");
	printer p = {NULL, flags, secrets, err, ST_OK};
	const char *id = st_json_str(resource, "id"), *type = st_json_str(resource, "type");
	const char *urn = st_json_str(resource, "urn");
	static const char *const sections[2] = {"inputs", "outputs"};
	json_t *o;
	int bad = 0;

	*out = NULL;
	if (!json_is_object(resource))
		return st__err(err, ST_EINVAL, "a resource must be an object");
	if (!(o = json_object()) || json_object_set_new(o, "id", json_string(id ? id : "")))
		bad = 1;
	for (int k = 0; k < 2 && !bad; k++) {
		json_t *props = json_object_get(resource, sections[k]), *m;
		m = json_is_object(props) ? pj_object(&p, props, 1) : json_object();
		bad = !m || json_object_set_new(o, sections[k], m);
	}
	if (!bad && st_json_bool(resource, "delete"))
		bad = json_object_set_new(o, "pendingDeletion", json_true()) != 0;
	if (!bad)
		bad = json_object_set_new(o, "type", json_string(type ? type : "")) ||
		      json_object_set_new(o, "urn", json_string(urn ? urn : ""));
	if (bad) {
		json_decref(o);
		return p.rc != ST_OK ? p.rc : st__err(err, ST_ENOMEM, "out of memory");
	}
	*out = o;
	return ST_OK;
}
