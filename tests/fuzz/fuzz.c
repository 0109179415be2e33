/*
 * Fuzz targets. Built two ways:
 *   - by scripts/fuzz with clang -fsanitize=fuzzer,address,undefined -DFUZZ_TARGET=NAME: one
 *     libFuzzer binary per target;
 *   - by `make check` as tests/fuzz_regress (any compiler): runs a target over files, so every
 *     seed and every past finding stays a regression test.
 *
 * A target aborts (with a message) when an invariant breaks; crashes and sanitizer reports are
 * findings too.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "internal.h"
#include "statetool.h"

#define CHECK(cond, ...)                                                                      \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			fprintf(stderr, "fuzz invariant broken at %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                                         \
			fputc('\n', stderr);                                                  \
			abort();                                                              \
		}                                                                             \
	} while (0)

static char *cstr(const uint8_t *d, size_t n)
{
	char *s = malloc(n + 1);
	if (s) {
		memcpy(s, d, n);
		s[n] = '\0';
	}
	return s;
}

/* load: any bytes as a state file (plain or gzip, either envelope, any version). */
static int t_load(const uint8_t *d, size_t n)
{
	st_state *s = NULL;
	st_error err;
	st_error_clear(&err);
	if (st_state_load_buffer(&s, d, n, "fuzz", NULL, &err) == ST_OK) {
		CHECK(s != NULL, "load returned OK without a state");
		st_state_free(s);
	} else {
		CHECK(s == NULL, "load failed but returned a state");
		CHECK(err.message[0] != '\0', "load failed without a message");
	}
	return 0;
}

/* validate: schemas and integrity rules over whatever loads. */
static int t_validate(const uint8_t *d, size_t n)
{
	static st_schema *schema;
	st_state *s = NULL;
	st_problems p = {0};
	st_validate_opts o = ST_VALIDATE_OPTS_INIT;
	if (!schema && st_schema_builtin(&schema, NULL) != ST_OK)
		abort();
	if (st_state_load_buffer(&s, d, n, "fuzz", NULL, NULL) != ST_OK)
		return 0;
	o.schema = schema;
	CHECK(st_validate(s, &o, &p, NULL) == ST_OK, "validate did not run");
	for (size_t i = 0; i < p.count; i++)
		CHECK(p.items[i].rule && p.items[i].message, "a problem without rule or message");
	st_problems_clear(&p);
	st_state_free(s);
	return 0;
}

/* import: the `pulumi import --file` checker and a dry import into an empty state. */
static int t_import(const uint8_t *d, size_t n)
{
	json_t *doc = NULL;
	st_problems p = {0};
	if (st_json_parse(&doc, (const char *)d, n, "fuzz", NULL, NULL, NULL, NULL) != ST_OK)
		return 0;
	st_validate_import_file(doc, NULL, &p, NULL);
	st_problems_clear(&p);
	if (st_import_check(doc, "dev", "proj", NULL, &p, NULL) == ST_OK && p.errors == 0) {
		st_state *s = NULL;
		if (st_state_new(&s, NULL) == ST_OK) {
			st_import_opts io = ST_IMPORT_OPTS_INIT;
			st_import_report r = {0};
			st_problems ip = {0};
			io.no_read = 1;
			io.dest_stack = "proj/dev";
			st_import(s, NULL, doc, &io, &r, &ip, NULL);
			st_problems_clear(&ip);
			st_import_report_clear(&r);
			st_state_free(s);
		}
	}
	st_problems_clear(&p);
	json_decref(doc);
	return 0;
}

/* urn: the URN, NewURN and provider-reference parsers. */
static int t_urn(const uint8_t *d, size_t n)
{
	char *s = cstr(d, n), *u = NULL, *id = NULL;
	st_urn urn;
	if (!s)
		return 0;
	if (st_urn_parse(s, &urn) == 0) {
		CHECK(st_urn_valid(s), "parse accepted what valid refuses");
		CHECK(urn.stack >= s && urn.name + urn.name_len <= s + strlen(s), "parts out of bounds");
		/* rebuilding from the parts gives the same URN */
		char *stack = strndup(urn.stack, urn.stack_len), *proj = strndup(urn.project, urn.project_len);
		char *q = strndup(urn.qtype, urn.qtype_len), *name = strndup(urn.name, urn.name_len);
		char *again = st_urn_new(stack, proj, NULL, q, name);
		CHECK(again && strcmp(again, s) == 0, "NewURN of the parts differs: %s", again);
		free(again);
		free(stack);
		free(proj);
		free(q);
		free(name);
	}
	(void)st_type_is_provider(s);
	st_error err;
	st_error_clear(&err);
	if (st_provider_ref_parse(s, &u, &id, &err) == ST_OK) {
		CHECK(u && id, "a parsed reference without URN or ID");
		CHECK(strlen(u) + 2 + strlen(id) == strlen(s), "reference parts do not add up");
	} else {
		CHECK(err.message[0], "reference refused without a message");
	}
	free(u);
	free(id);
	free(s);
	return 0;
}

/* secrets: ciphertext decoding by the passphrase and b64 managers, and provider states. */
static int t_secrets(const uint8_t *d, size_t n)
{
	static st_secrets *pass, *b64;
	char *s = cstr(d, n), *pt = NULL;
	size_t len = 0;
	if (!s)
		return 0;
	if (!pass) {
		json_t *sp = json_pack("{s:s}", "type", "b64");
		if (st_secrets_new_passphrase(&pass, "fuzz", 4, NULL) != ST_OK ||
		    st_secrets_open(&b64, sp, NULL, 0, NULL) != ST_OK)
			abort();
		json_decref(sp);
	}
	if (st_secrets_decrypt(pass, s, &pt, &len, NULL) == ST_OK) {
		char *ct = NULL, *pt2 = NULL;
		size_t len2 = 0;
		/* what decrypts encrypts and decrypts back to the same bytes */
		CHECK(st_secrets_encrypt(pass, pt, len, &ct, NULL) == ST_OK, "re-encrypt failed");
		CHECK(st_secrets_decrypt(pass, ct, &pt2, &len2, NULL) == ST_OK, "round trip failed");
		CHECK(len2 == len && memcmp(pt, pt2, len) == 0, "round trip changed the plaintext");
		st_secret_free(pt2, len2);
		free(ct);
		st_secret_free(pt, len);
	}
	pt = NULL;
	if (st_secrets_decrypt(b64, s, &pt, &len, NULL) == ST_OK)
		st_secret_free(pt, len);
	/* a secrets_providers document, opened locked (no key derivation) */
	json_t *doc = NULL;
	if (st_json_parse(&doc, s, n, "fuzz", NULL, NULL, NULL, NULL) == ST_OK) {
		st_secrets *m = NULL;
		if (st_secrets_open(&m, doc, NULL, 0, NULL) == ST_OK)
			st_secrets_free(m);
		json_decref(doc);
	}
	free(s);
	return 0;
}

/* roundtrip: the Go-compatible writer. Parse, write, parse again: equal documents; writing
 * twice gives equal bytes; a loaded state dumps to bytes that load and dump identically. */
static int t_roundtrip(const uint8_t *d, size_t n)
{
	json_t *a = NULL, *b = NULL;
	st_style style;
	char *o1 = NULL, *o2 = NULL, *o3 = NULL;
	size_t l1, l2, l3;
	if (st_json_parse(&a, (const char *)d, n, "fuzz", NULL, &style, NULL, NULL) == ST_OK) {
		CHECK(st_json_dump(a, &style, &o1, &l1, NULL) == ST_OK, "dump failed");
		CHECK(st_json_dump(a, &style, &o2, &l2, NULL) == ST_OK, "second dump failed");
		CHECK(l1 == l2 && memcmp(o1, o2, l1) == 0, "two dumps differ");
		CHECK(st_json_parse(&b, o1, l1, "again", NULL, NULL, NULL, NULL) == ST_OK,
		      "our own output does not parse: %.200s", o1);
		CHECK(st__json_equal(a, b), "the document changed in a round trip");
		CHECK(st_json_dump(b, &style, &o3, &l3, NULL) == ST_OK, "third dump failed");
		CHECK(l3 == l1 && memcmp(o3, o1, l1) == 0, "the second generation differs");
		free(o1);
		free(o2);
		free(o3);
		json_decref(a);
		json_decref(b);
	}
	st_state *s = NULL, *s2 = NULL;
	if (st_state_load_buffer(&s, d, n, "fuzz", NULL, NULL) == ST_OK) {
		if (st_state_dump(s, NULL, &o1, &l1, NULL) == ST_OK) {
			CHECK(st_state_load_buffer(&s2, o1, l1, "again", NULL, NULL) == ST_OK,
			      "a dumped state does not load");
			CHECK(st_state_dump(s2, NULL, &o2, &l2, NULL) == ST_OK, "second dump failed");
			CHECK(l1 == l2 && memcmp(o1, o2, l1) == 0, "state bytes changed in a round trip");
			free(o1);
			free(o2);
			st_state_free(s2);
		}
		st_state_free(s);
	}
	return 0;
}


/* diff: statetool's reader against jansson's on the same bytes. Both accept and agree, or both
 * refuse, or statetool accepts for one of Go's documented leniencies that jansson lacks. */
static int t_diff(const uint8_t *d, size_t n)
{
	json_t *ours = NULL, *theirs;
	json_error_t je;
	int ok_ours = st_json_parse(&ours, (const char *)d, n, "fuzz", NULL, NULL, NULL, NULL) == ST_OK;
	theirs = json_loadb((const char *)d, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (theirs) {
		/* jansson accepted: so must we, with the same value; except a number beyond
		 * float64 (Go and statetool refuse it; jansson keeps a huge integer's digits only
		 * when it fits int64, so that cannot happen) */
		/* one deliberate difference this way: jansson ends its input at a NUL byte outside
		 * a string ("8\0" is 8); Go and statetool refuse the NUL */
		if (!ok_ours && memchr(d, 0, n)) {
			json_decref(theirs);
			return 0;
		}
		CHECK(ok_ours, "jansson accepts what statetool refuses");
		CHECK(st__json_equal(ours, theirs), "statetool and jansson read different values");
	} else if (ok_ours) {
		/* the deliberate differences (README, "The JSON reader") */
		static const char *const lenient[] = {
			"Invalid UTF-8",       /* Go replaces invalid UTF-8 with U+FFFD */
			"unable to decode byte", /* likewise, raw bytes */
			"invalid Unicode",     /* lone surrogates: U+FFFD */
			"too big integer",     /* Go: any integer literal is a float64 */
			"too big negative integer",
			"maximum parsing depth", /* jansson stops at 2048, Go at 10000 */
			"real number overflow",  /* cannot happen: we refuse it too */
			NULL};
		int known = 0;
		for (size_t i = 0; lenient[i]; i++)
			if (strstr(je.text, lenient[i]))
				known = 1;
		CHECK(known, "statetool accepts what jansson refuses for an undocumented reason: %s",
		      je.text);
	}
	json_decref(ours);
	json_decref(theirs);
	return 0;
}

/* split: the reader on two threads (forced at any size) against the reader on one: the same
 * value, error, position and warnings. */
static int split_parse(const uint8_t *d, size_t n, int threads, json_t **v, st_error *err,
		       st_problems *probs)
{
	int rc;
	st_error_clear(err);
	st_set_threads(threads ? 2 : 1, NULL);
	st__json_split_test(16);
	rc = st_json_parse(v, (const char *)d, n, "fuzz", NULL, NULL, probs, err);
	st_set_threads(0, NULL);
	st__json_split_test(0);
	return rc;
}

static int t_split(const uint8_t *d, size_t n)
{
	json_t *a = NULL, *b = NULL;
	st_error ea, eb;
	st_problems pa = {0}, pb = {0};
	int ra = split_parse(d, n, 0, &a, &ea, &pa), rb = split_parse(d, n, 1, &b, &eb, &pb);
	CHECK(ra == rb, "one thread: %d, two: %d", ra, rb);
	CHECK(!strcmp(ea.message, eb.message), "messages differ: '%s' / '%s'", ea.message,
	      eb.message);
	CHECK(ea.line == eb.line && ea.column == eb.column && ea.offset == eb.offset,
	      "error positions differ: %d:%d / %d:%d", ea.line, ea.column, eb.line, eb.column);
	CHECK((a == NULL) == (b == NULL), "one returned a value, the other none");
	if (a) {
		char *da = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
		char *db = json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);
		CHECK(da && db && !strcmp(da, db), "the values differ");
		free(da);
		free(db);
	}
	CHECK(pa.count == pb.count, "warnings: %zu / %zu", pa.count, pb.count);
	for (size_t i = 0; i < pa.count; i++)
		CHECK(!strcmp(pa.items[i].pointer, pb.items[i].pointer) &&
			      !strcmp(pa.items[i].message, pb.items[i].message),
		      "warning %zu differs: %s / %s", i, pa.items[i].pointer, pb.items[i].pointer);
	st_problems_clear(&pa);
	st_problems_clear(&pb);
	json_decref(a);
	json_decref(b);
	return 0;
}

typedef struct target {
	const char *name;
	int (*fn)(const uint8_t *, size_t);
} target;

static const target targets[] = {
	{"load", t_load},     {"validate", t_validate},   {"import", t_import}, {"urn", t_urn},
	{"secrets", t_secrets}, {"roundtrip", t_roundtrip}, {"diff", t_diff},
	{"split", t_split},
};

#ifdef FUZZ_TARGET
#define STR2(x) #x
#define STR(x) STR2(x)
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static const target *t;
	if (!t) {
		for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
			if (!strcmp(targets[i].name, STR(FUZZ_TARGET)))
				t = &targets[i];
		if (!t)
			abort();
	}
	return t->fn(d, n);
}
#else
static size_t run_path(const target *t, const char *path)
{
	struct stat sb;
	size_t count = 0;
	if (stat(path, &sb) != 0)
		return 0;
	if (S_ISDIR(sb.st_mode)) {
		DIR *dir = opendir(path);
		struct dirent *e;
		if (!dir)
			return 0;
		while ((e = readdir(dir))) {
			if (e->d_name[0] == '.')
				continue;
			char *p = st_asprintf("%s/%s", path, e->d_name);
			count += run_path(t, p);
			free(p);
		}
		closedir(dir);
		return count;
	}
	if (sb.st_size > 64 << 20)
		return 0;
	FILE *f = fopen(path, "rb");
	uint8_t *buf = malloc((size_t)sb.st_size + 1);
	size_t n = f && buf ? fread(buf, 1, (size_t)sb.st_size, f) : 0;
	if (f)
		fclose(f);
	t->fn(buf, n);
	free(buf);
	return 1;
}

/* fuzz_regress TARGET PATH...: runs TARGET over every file under the paths. */
int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: fuzz_regress TARGET PATH...\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		if (strcmp(targets[i].name, argv[1]) != 0)
			continue;
		size_t count = 0;
		for (int a = 2; a < argc; a++)
			count += run_path(&targets[i], argv[a]);
		printf("fuzz_regress %s: %zu inputs, no invariant broken\n", argv[1], count);
		return count ? 0 : 1;
	}
	fprintf(stderr, "fuzz_regress: no target '%s'\n", argv[1]);
	return 2;
}
#endif
