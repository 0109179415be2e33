/*
 * Rewriting a stack configuration file (Pulumi.<stack>.yaml) for a new passphrase. The file is
 * read with libyaml, as Pulumi reads it with a YAML parser (workspace.LoadProjectStack): every
 * `secure` value of `config` is found whatever its style, and each value that changes is
 * rewritten at its exact byte span, so comments, order and styles stay as they were.
 */
#include "internal.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_DEPTH 64

/* A scalar (or alias) as the parser found it: byte span [start, end), quotes included. */
typedef struct span {
	size_t start, end;
	size_t line, col; /* 1-based, of the value */
	int style;        /* yaml_scalar_style_t; -1 for an alias */
	int props;        /* an anchor or a tag precedes the value inside the span */
	char *value;      /* new */
} span;

typedef struct level {
	int mapping, want_key, is_key; /* is_key: this collection is a key of its parent */
	size_t pairs;
	char *key; /* the current pair's key (new), NULL when it is no scalar */
	size_t key_start, key_col;
	int cand; /* a `secure` key with a scalar or alias value: cand_span */
	span cand_span;
	/* a mapping's keys so far, as yaml.v3 tells a duplicate (kind and value): a kind letter
	 * then the value, each key new in its slot's p, the line of its first use in a */
	st_strmap keys;
} level;

typedef struct secure {
	span s;
	char *key;   /* the config key it belongs to (new) */
	char *fresh; /* its new ciphertext once re-encrypted (new) */
} secure;

typedef struct scan {
	const char *text;
	size_t len, bom;
	size_t cur_char, cur_byte; /* char index -> byte offset cursor */
	level lv[MAX_DEPTH];
	int depth, root_seen, root_block, doc_done;
	int has_salt, has_first_key;
	span salt;
	size_t salt_key; /* where the key `encryptionsalt` starts */
	size_t first_key, first_col;
	size_t drop[2][2]; /* byte ranges of secretsprovider / encryptedkey lines */
	unsigned other;
	secure *sec;
	size_t nsec, cap;
} scan;

static void span_free(span *s)
{
	free(s->value);
	s->value = NULL;
}

static void keys_free(level *l)
{
	for (size_t i = 0; l->keys.slots && i < l->keys.cap; i++)
		if (l->keys.slots[i].hash)
			free(l->keys.slots[i].p);
	st_strmap_free(&l->keys);
}

static void scan_free(scan *sc)
{
	for (int i = 0; i < sc->depth; i++) {
		free(sc->lv[i].key);
		span_free(&sc->lv[i].cand_span);
		keys_free(&sc->lv[i]);
	}
	for (size_t i = 0; i < sc->nsec; i++) {
		span_free(&sc->sec[i].s);
		free(sc->sec[i].key);
		free(sc->sec[i].fresh);
	}
	free(sc->sec);
	span_free(&sc->salt);
}

/* libyaml counts characters (a CR and an LF each one), not bytes: walk the UTF-8 text. */
static size_t byte_at(scan *sc, size_t idx)
{
	if (idx < sc->cur_char) {
		sc->cur_char = 0;
		sc->cur_byte = sc->bom;
	}
	while (sc->cur_char < idx && sc->cur_byte < sc->len) {
		sc->cur_byte++;
		while (sc->cur_byte < sc->len && ((unsigned char)sc->text[sc->cur_byte] & 0xC0) == 0x80)
			sc->cur_byte++;
		sc->cur_char++;
	}
	return sc->cur_byte;
}

static int oom(st_error *err)
{
	return st__err(err, ST_ENOMEM, "out of memory");
}

static int at(st_error *err, int rc, size_t line, size_t col)
{
	if (err && !err->line) {
		err->line = (int)line;
		err->column = (int)col;
	}
	return rc;
}

static int span_of(scan *sc, const yaml_event_t *ev, span *out, st_error *err)
{
	memset(out, 0, sizeof(*out));
	out->start = byte_at(sc, ev->start_mark.index);
	out->end = byte_at(sc, ev->end_mark.index);
	out->line = ev->start_mark.line + 1;
	out->col = ev->start_mark.column + 1;
	if (ev->type == YAML_ALIAS_EVENT) {
		out->style = -1;
		return ST_OK;
	}
	out->style = (int)ev->data.scalar.style;
	out->props = ev->data.scalar.anchor || ev->data.scalar.tag;
	out->value = st_strndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
	return out->value ? ST_OK : oom(err);
}

/* Inside `config`, at a mapping below the config mapping itself. */
static const char *config_key(const scan *sc)
{
	if (sc->depth < 3 || !sc->lv[0].key || strcmp(sc->lv[0].key, "config"))
		return NULL;
	return sc->lv[1].key ? sc->lv[1].key : "";
}

/* From the start of the key's line to the end of the value's line (its comment with it). */
static int drop_range(scan *sc, const span *v, size_t i, st_error *err)
{
	level *r = &sc->lv[0];
	size_t s = r->key_start - r->key_col, e = v->end;
	for (size_t k = s; k < r->key_start; k++)
		if (sc->text[k] != ' ')
			s = SIZE_MAX;
	while (e < sc->len && (sc->text[e] == ' ' || sc->text[e] == '\t'))
		e++;
	if (e < sc->len && sc->text[e] == '#')
		while (e < sc->len && sc->text[e] != '\n')
			e++;
	if (e < sc->len && sc->text[e] == '\r')
		e++;
	if (s == SIZE_MAX || !sc->root_block || (e < sc->len && sc->text[e] != '\n'))
		return at(err,
			  st__err(err, ST_EUNSUPPORTED,
				  "'%s' is not on a line of its own: remove it by hand (the passphrase "
				  "provider replaces it, as Pulumi does)",
				  r->key),
			  v->line, v->col);
	sc->drop[i][0] = s;
	sc->drop[i][1] = e < sc->len ? e + 1 : e;
	sc->other |= i ? ST_CONFIG_ENCRYPTEDKEY : ST_CONFIG_SECRETSPROVIDER;
	return ST_OK;
}

/* A scalar or alias value of the top-level mapping. */
static int root_value(scan *sc, const yaml_event_t *ev, st_error *err)
{
	const char *k = sc->lv[0].key;
	span v;
	int rc = ST_OK, i = -1;

	if (!k)
		return ST_OK;
	if (!strcmp(k, "secretsprovider"))
		i = 0;
	else if (!strcmp(k, "encryptedkey"))
		i = 1;
	else if (strcmp(k, "encryptionsalt"))
		return ST_OK;
	if ((rc = span_of(sc, ev, &v, err)) != ST_OK)
		return rc;
	if (i >= 0) {
		rc = drop_range(sc, &v, (size_t)i, err);
		span_free(&v);
		return rc;
	}
	span_free(&sc->salt);
	sc->salt = v;
	sc->has_salt = 1;
	sc->salt_key = sc->lv[0].key_start;
	return ST_OK;
}

/* A key of mapping `p`: a second use of one (the same kind and value) is refused, as yaml.v3
 * refuses it for Pulumi ("mapping key ... already defined"): with two `encryptionsalt` (or two
 * `config`, or one config key twice) what the file means is not one thing, and rewriting one of
 * them would leave the other. `kind`: 's' scalar, 'a' alias, 'm' mapping, 'q' sequence. */
static int key_seen(level *p, char kind, const char *v, size_t n,
		    const yaml_mark_t *mark, st_error *err)
{
	char *k = malloc(n + 2);
	int created;
	st_strmap_slot *sl;

	if (!k)
		return oom(err);
	k[0] = kind;
	memcpy(k + 1, v, n);
	k[n + 1] = '\0';
	if (!(sl = st_strmap_putn(&p->keys, k, n + 1, &created))) {
		free(k);
		return oom(err);
	}
	if (created) {
		sl->p = k;
		sl->a = mark->line + 1;
		return ST_OK;
	}
	free(k);
	return at(err,
		  st__err(err, ST_EFORMAT,
			  "mapping key '%.*s' already defined at line %zu: Pulumi refuses the file "
			  "(nothing was changed)",
			  (int)(n > 200 ? 200 : n), v, sl->a),
		  mark->line + 1, mark->column + 1);
}

/* A node of the parent level is complete (as value: the pair is complete). */
static void value_done(scan *sc)
{
	if (!sc->depth)
		return;
	level *p = &sc->lv[sc->depth - 1];
	if (p->mapping) {
		p->pairs++;
		p->want_key = 1;
		free(p->key);
		p->key = NULL;
	}
}

static int on_scalar(scan *sc, const yaml_event_t *ev, st_error *err)
{
	level *p = sc->depth ? &sc->lv[sc->depth - 1] : NULL;
	if (!p) {
		sc->root_seen = 1;
		return at(err, st__err(err, ST_EFORMAT, "not a stack configuration (a YAML mapping)"),
			  ev->start_mark.line + 1, ev->start_mark.column + 1);
	}
	if (p->mapping && p->want_key) {
		p->want_key = 0;
		if (sc->depth == 1 && !sc->has_first_key) {
			sc->has_first_key = 1;
			sc->first_key = byte_at(sc, ev->start_mark.index);
			sc->first_col = ev->start_mark.column;
		}
		p->key_start = byte_at(sc, ev->start_mark.index);
		p->key_col = ev->start_mark.column;
		int rc = ev->type == YAML_SCALAR_EVENT
				 ? key_seen(p, 's', (const char *)ev->data.scalar.value,
					    ev->data.scalar.length, &ev->start_mark, err)
				 : key_seen(p, 'a', (const char *)ev->data.alias.anchor,
					    strlen((const char *)ev->data.alias.anchor),
					    &ev->start_mark, err);
		if (rc != ST_OK)
			return rc;
		if (ev->type == YAML_SCALAR_EVENT &&
		    !(p->key = st_strndup((const char *)ev->data.scalar.value,
					  ev->data.scalar.length)))
			return oom(err);
		return ST_OK;
	}
	int rc = ST_OK;
	if (sc->depth == 1 && p->mapping)
		rc = root_value(sc, ev, err);
	else if (p->mapping && p->key && !strcmp(p->key, "secure") && config_key(sc)) {
		span_free(&p->cand_span);
		p->cand = 1;
		rc = span_of(sc, ev, &p->cand_span, err);
	}
	value_done(sc);
	return rc;
}

static int on_start(scan *sc, const yaml_event_t *ev, st_error *err)
{
	level *p = sc->depth ? &sc->lv[sc->depth - 1] : NULL;
	int mapping = ev->type == YAML_MAPPING_START_EVENT;
	if (!p && !mapping)
		return at(err, st__err(err, ST_EFORMAT, "not a stack configuration (a YAML mapping)"),
			  ev->start_mark.line + 1, ev->start_mark.column + 1);
	if (sc->depth == MAX_DEPTH)
		return at(err, st__err(err, ST_ELIMIT, "nested deeper than %d levels", MAX_DEPTH),
			  ev->start_mark.line + 1, ev->start_mark.column + 1);
	level *l = &sc->lv[sc->depth++];
	memset(l, 0, sizeof(*l));
	l->mapping = mapping;
	l->want_key = mapping;
	if (p && p->mapping && p->want_key) {
		p->want_key = 0; /* a collection as a key: no key name */
		l->is_key = 1;
		int rc = key_seen(p, mapping ? 'm' : 'q', "", 0, &ev->start_mark, err);
		if (rc != ST_OK)
			return rc;
	}
	if (!p) {
		sc->root_seen = 1;
		sc->root_block = ev->data.mapping_start.style != YAML_FLOW_MAPPING_STYLE;
	}
	return ST_OK;
}

/* A mapping of the single key `secure` with a string value is a secure value (Pulumi's
 * config object); with other keys it is an ordinary object. */
static int on_end(scan *sc, st_error *err)
{
	level *l = &sc->lv[sc->depth - 1];
	int rc = ST_OK, is_key = l->is_key;
	if (l->mapping && l->cand && l->pairs == 1) {
		const char *k = config_key(sc);
		if (sc->nsec == sc->cap) {
			size_t nc = sc->cap ? 2 * sc->cap : 8;
			secure *ns = realloc(sc->sec, nc * sizeof(*ns));
			if (!ns)
				return oom(err);
			sc->sec = ns;
			sc->cap = nc;
		}
		secure *s = &sc->sec[sc->nsec];
		s->fresh = NULL;
		if (!(s->key = st_strdup(k ? k : "")))
			return oom(err);
		s->s = l->cand_span;
		memset(&l->cand_span, 0, sizeof(l->cand_span));
		sc->nsec++;
	}
	free(l->key);
	span_free(&l->cand_span);
	keys_free(l);
	sc->depth--;
	if (!is_key)
		value_done(sc);
	return rc;
}

static int on_event(scan *sc, const yaml_event_t *ev, st_error *err)
{
	if (sc->doc_done)
		return ST_OK; /* Pulumi reads the first document */
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
	case YAML_ALIAS_EVENT: return on_scalar(sc, ev, err);
	case YAML_MAPPING_START_EVENT:
	case YAML_SEQUENCE_START_EVENT: return on_start(sc, ev, err);
	case YAML_MAPPING_END_EVENT:
	case YAML_SEQUENCE_END_EVENT: return on_end(sc, err);
	case YAML_DOCUMENT_END_EVENT: sc->doc_done = 1; return ST_OK;
	default: return ST_OK;
	}
}

/* Parses text[0..len) into sc (zeroed by the caller; scan_free after, also on failure). */
static int scan_text(scan *sc, const char *text, size_t len, st_error *err)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int rc = ST_OK, done = 0;

	sc->text = text;
	sc->len = len;
	if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
		sc->bom = 3;
	sc->cur_byte = sc->bom;
	if (len >= 2 && (((unsigned char)text[0] == 0xFE && (unsigned char)text[1] == 0xFF) ||
			 ((unsigned char)text[0] == 0xFF && (unsigned char)text[1] == 0xFE)))
		return st__err(err, ST_EUNSUPPORTED, "not UTF-8 (a UTF-16 file is not rewritten)");
	if (!yaml_parser_initialize(&p))
		return oom(err);
	/* the parser reads past the BOM (index 0 is the character after it, as byte_at counts);
	 * given the BOM with the encoding forced it would count the BOM as a character */
	yaml_parser_set_input_string(&p, (const unsigned char *)text + sc->bom, len - sc->bom);
	yaml_parser_set_encoding(&p, YAML_UTF8_ENCODING);
	while (rc == ST_OK && !done) {
		if (!yaml_parser_parse(&p, &ev)) {
			rc = at(err,
				st__err(err, ST_EPARSE, "not valid YAML: %s",
					p.problem ? p.problem : "parse error"),
				p.problem_mark.line + 1, p.problem_mark.column + 1);
			break;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		rc = on_event(sc, &ev, err);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	return rc;
}

typedef struct edit {
	size_t start, end;
	char *text; /* new; NULL: the range is removed */
} edit;

static int edit_cmp(const void *a, const void *b)
{
	const edit *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* at one place an insertion goes before a removed line */
	return (x->end > x->start) - (y->end > y->start);
}

/* The replacement of a scalar in its own style: plain, 'single' or "double" quoted. */
static char *restyle(const span *s, const char *value)
{
	if (s->style == YAML_SINGLE_QUOTED_SCALAR_STYLE)
		return st_asprintf("'%s'", value);
	if (s->style == YAML_DOUBLE_QUOTED_SCALAR_STYLE)
		return st_asprintf("\"%s\"", value);
	return st_strdup(value);
}

static int in_place(const span *s, const char *key, st_error *err)
{
	if (s->style == -1 || s->props ||
	    (s->style != YAML_PLAIN_SCALAR_STYLE && s->style != YAML_SINGLE_QUOTED_SCALAR_STYLE &&
	     s->style != YAML_DOUBLE_QUOTED_SCALAR_STYLE))
		return at(err,
			  st__err(err, ST_EUNSUPPORTED,
				  "config '%s': a secure value written as %s is not rewritten in "
				  "place: write it as `secure: v1:...` (nothing was changed)",
				  key,
				  s->style == -1 ? "an alias"
				  : s->props	 ? "an anchored or tagged scalar"
						 : "a block scalar (| or >)"),
			  s->line, s->col);
	return ST_OK;
}

/* The secure value's new ciphertext (kept as sv->fresh), in its style (*out). */
static int recrypt(secure *sv, st_secrets *from, st_secrets *to, char **out, st_error *err)
{
	char *pt = NULL, *ct = NULL;
	size_t ptlen = 0;
	st_error e2;
	int rc;

	*out = NULL;
	if ((rc = in_place(&sv->s, sv->key, err)) != ST_OK)
		return rc;
	st_error_clear(&e2);
	rc = st_secrets_decrypt(from, sv->s.value, &pt, &ptlen, &e2);
	if (rc == ST_OK) {
		rc = st_secrets_encrypt(to, pt, ptlen, &ct, err);
		st_secret_free(pt, ptlen);
	} else {
		rc = st__err(err, rc, "config '%s': secure value does not decrypt (%s)", sv->key,
			     e2.message[0] ? e2.message : st_strerror(rc));
	}
	if (rc != ST_OK)
		return at(err, rc, sv->s.line, sv->s.col);
	*out = restyle(&sv->s, ct);
	sv->fresh = ct;
	return *out ? ST_OK : oom(err);
}

/* The salt's edit: in place, or a new first key of the top-level mapping. */
static int salt_edit(scan *sc, st_secrets *to, edit *e, st_error *err)
{
	const char *ns = st_secrets_encryptionsalt(to);
	if (!ns)
		ns = "";
	if (sc->has_salt && sc->salt.style == YAML_PLAIN_SCALAR_STYLE && !sc->salt.props &&
	    sc->salt.value && !sc->salt.value[0]) {
		/* `encryptionsalt:` with no value (Pulumi: none): the value follows the key */
		if (sc->len - sc->salt_key < 15 || memcmp(sc->text + sc->salt_key, "encryptionsalt:", 15))
			return at(err,
				  st__err(err, ST_EUNSUPPORTED,
					  "an empty encryptionsalt under a quoted key is not "
					  "rewritten in place (nothing was changed)"),
				  sc->salt.line, sc->salt.col);
		e->start = sc->salt_key;
		e->end = sc->salt_key + 15;
		e->text = st_asprintf("encryptionsalt: %s", ns);
	} else if (sc->has_salt) {
		if (sc->salt.style == -1 || sc->salt.props ||
		    (sc->salt.style != YAML_PLAIN_SCALAR_STYLE &&
		     sc->salt.style != YAML_SINGLE_QUOTED_SCALAR_STYLE &&
		     sc->salt.style != YAML_DOUBLE_QUOTED_SCALAR_STYLE))
			return at(err,
				  st__err(err, ST_EUNSUPPORTED,
					  "encryptionsalt is not written as a one-line scalar: it "
					  "is not rewritten in place (nothing was changed)"),
				  sc->salt.line, sc->salt.col);
		e->start = sc->salt.start;
		e->end = sc->salt.end;
		e->text = restyle(&sc->salt, ns);
	} else if (!sc->root_seen || !sc->has_first_key) {
		/* no mapping (comments only) or an empty one: Pulumi writes encryptionsalt first */
		if (sc->root_seen && !sc->root_block)
			return st__err(err, ST_EUNSUPPORTED, "an empty flow mapping ({}) at the top is "
							     "not rewritten: write the file in block style");
		e->start = e->end = 0;
		e->text = st_asprintf("encryptionsalt: %s\n", ns);
	} else if (sc->root_block) {
		size_t ls = sc->first_key - sc->first_col, k = ls;
		while (k < sc->first_key && sc->text[k] == ' ')
			k++;
		e->start = e->end = k == sc->first_key ? ls : sc->first_key;
		e->text = k == sc->first_key
				  ? st_asprintf("%*sencryptionsalt: %s\n", (int)sc->first_col, "", ns)
				  : st_asprintf("encryptionsalt: %s\n%*s", ns, (int)sc->first_col, "");
	} else {
		e->start = e->end = sc->first_key;
		e->text = st_asprintf("encryptionsalt: %s, ", ns);
	}
	return e->text ? ST_OK : oom(err);
}

/* Every edit; *rewritten counts the secure values re-encrypted. */
static int build_edits(scan *sc, st_secrets *from, st_secrets *to, edit **out, size_t *nout,
		       size_t *rewritten, st_error *err)
{
	edit *ed = calloc(sc->nsec + 3, sizeof(*ed));
	size_t n = 0;
	int rc = ST_OK;

	if (!ed)
		return oom(err);
	for (size_t i = 0; i < sc->nsec && rc == ST_OK; i++) {
		ed[n].start = sc->sec[i].s.start;
		ed[n].end = sc->sec[i].s.end;
		rc = recrypt(&sc->sec[i], from, to, &ed[n].text, err);
		n++;
		if (rc == ST_OK)
			++*rewritten;
	}
	if (rc == ST_OK)
		rc = salt_edit(sc, to, &ed[n++], err);
	for (size_t i = 0; i < 2 && rc == ST_OK; i++)
		if (sc->drop[i][1] > sc->drop[i][0]) {
			ed[n].start = sc->drop[i][0];
			ed[n++].end = sc->drop[i][1];
		}
	qsort(ed, n, sizeof(*ed), edit_cmp);
	*out = ed;
	*nout = n;
	return rc;
}

static void edits_free(edit *ed, size_t n)
{
	for (size_t i = 0; ed && i < n; i++)
		free(ed[i].text);
	free(ed);
}

int st_config_scan(const char *text, size_t len, const char *name, char **salt, unsigned *other,
		   st_error *err)
{
	ST_ASSERT_ARG(text || !len);
	ST_ASSERT_ARG(salt);
	scan sc;
	int rc;

	memset(&sc, 0, sizeof(sc));
	*salt = NULL;
	if (other)
		*other = 0;
	rc = scan_text(&sc, text ? text : "", len, err);
	/* an empty encryptionsalt is none, as to Pulumi, and so is a YAML null (~, null) */
	int none = !sc.has_salt || !sc.salt.value || !sc.salt.value[0] ||
		   (sc.salt.style == YAML_PLAIN_SCALAR_STYLE &&
		    (!strcmp(sc.salt.value, "~") || !strcmp(sc.salt.value, "null") ||
		     !strcmp(sc.salt.value, "Null") || !strcmp(sc.salt.value, "NULL")));
	if (rc == ST_OK && !none && !(*salt = st_strdup(sc.salt.value)))
		rc = oom(err);
	if (rc == ST_OK && other)
		*other = sc.other;
	if (rc && name)
		st__err_file(err, name);
	scan_free(&sc);
	return rc;
}

int st__config_readback(const char *text, size_t len, const char *salt,
			 const char *const *vals, size_t n, st_error *err)
{
	scan sc;
	size_t i = 0;
	int rc;

	memset(&sc, 0, sizeof(sc));
	rc = scan_text(&sc, text, len, NULL);
	if (rc == ST_OK && sc.nsec == n)
		for (; i < n && sc.sec[i].s.value && !strcmp(sc.sec[i].s.value, vals[i]); i++)
			;
	if (rc != ST_OK || sc.nsec != n || i < n || !sc.has_salt || !sc.salt.value ||
	    strcmp(sc.salt.value, salt ? salt : "") || sc.other)
		rc = st__err(err, ST_EUNSUPPORTED,
			     "the rewritten file does not read back as written (%s): nothing was "
			     "changed; please report this with the file's layout (not its values)",
			     rc != ST_OK	    ? "not valid YAML"
			     : sc.nsec != n ? "another count of secure values"
			     : i < n	    ? "a secure value not the new one"
			     : sc.other	    ? "another provider's key left"
					    : "not the new encryptionsalt");
	scan_free(&sc);
	return rc;
}

/* st__config_readback of the text made for the values of `sc` and the salt of `to`. */
static int readback(const scan *sc, const char *text, size_t len, st_secrets *to, st_error *err)
{
	const char **vals = calloc(sc->nsec ? sc->nsec : 1, sizeof(*vals));
	int rc;

	if (!vals)
		return oom(err);
	for (size_t i = 0; i < sc->nsec; i++)
		vals[i] = sc->sec[i].fresh ? sc->sec[i].fresh : "";
	rc = st__config_readback(text, len, st_secrets_encryptionsalt(to), vals, sc->nsec, err);
	free(vals);
	return rc;
}

int st_config_rekey_text(const char *text, size_t len, const char *name, st_secrets *from,
			 st_secrets *to, char **out_text, size_t *out_len, size_t *count, st_error *err)
{
	ST_ASSERT_ARG(from);
	ST_ASSERT_ARG(to);
	ST_ASSERT_ARG(out_text);
	ST_ASSERT_ARG(text || !len);
	scan sc;
	edit *ed = NULL;
	size_t ne = 0, pos = 0, n = 0;
	st_buf out;
	int rc;

	*out_text = NULL;
	if (out_len)
		*out_len = 0;
	if (count)
		*count = 0;
	if (!text)
		text = "";
	memset(&sc, 0, sizeof(sc));
	st_buf_init(&out);
	rc = scan_text(&sc, text, len, err);
	if (rc == ST_OK)
		rc = build_edits(&sc, from, to, &ed, &ne, &n, err);
	for (size_t i = 0; rc == ST_OK && i < ne; i++) {
		if (ed[i].start < pos)
			ed[i].start = pos; /* an insertion at a removed line: after it */
		st_buf_add(&out, text + pos, ed[i].start - pos);
		if (ed[i].text)
			st_buf_adds(&out, ed[i].text);
		if (ed[i].end > pos)
			pos = ed[i].end;
	}
	if (rc == ST_OK)
		st_buf_add(&out, text + pos, len - pos);
	if (rc == ST_OK && out.oom)
		rc = oom(err);
	/* never the salt without every secure value: the text made reads back with the new salt
	 * and, in order, exactly the new ciphertexts (a span off by a character, as a BOM once
	 * made it, would otherwise write a file nobody can open) */
	if (rc == ST_OK)
		rc = readback(&sc, out.data ? out.data : "", out.len, to, err);
	if (rc == ST_OK && !(*out_text = st_buf_take(&out, out_len)) && !(*out_text = strdup("")))
		rc = oom(err);
	if (rc == ST_OK && count)
		*count = n;
	if (rc && name)
		st__err_file(err, name);
	edits_free(ed, ne);
	scan_free(&sc);
	st_buf_free(&out);
	return rc;
}

int st_config_rekey(const char *path, st_secrets *from, st_secrets *to, size_t *count,
		    st_error *err)
{
	ST_ASSERT_ARG(from);
	ST_ASSERT_ARG(to);
	ST_ASSERT_ARG(path);
	char *text = NULL, *out = NULL;
	size_t len = 0, out_len = 0;
	int rc;

	if (count)
		*count = 0;
	if ((rc = st_file_read(path, 16 << 20, &text, &len, NULL, err)) != ST_OK)
		return rc;
	rc = st_config_rekey_text(text, len, path, from, to, &out, &out_len, count, err);
	if (rc == ST_OK) {
		st_write_opts wo = ST_WRITE_OPTS_INIT;
		wo.backup = 1;
		rc = st_file_write_atomic(path, out, out_len, &wo, err);
		if (rc && count)
			*count = 0;
	}
	sodium_memzero(text, len);
	free(text);
	free(out);
	return rc;
}
