/* jsonget [KEY...]: reads standard input, which must be exactly one JSON document (nothing
 * after it but white space), and prints the value at each KEY (a dotted path of object keys:
 * error.code), one a line: a string as it is, anything else as compact JSON. Exit 1 (with a
 * message) when the input is not one JSON document or a KEY is missing. For the CLI tests. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *at(json_t *v, const char *path)
{
	char key[256];
	while (v && *path) {
		size_t n = strcspn(path, ".");
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		v = json_object_get(v, key);
		path += n + (path[n] == '.');
	}
	return v;
}

int main(int argc, char **argv)
{
	json_error_t e;
	json_t *doc = json_loadf(stdin, 0, &e);
	int rc = 0;

	if (!doc) {
		fprintf(stderr, "jsonget: not one JSON document: %s (line %d)\n", e.text, e.line);
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		json_t *v = at(doc, argv[i]);
		if (!v) {
			fprintf(stderr, "jsonget: no '%s'\n", argv[i]);
			rc = 1;
		} else if (json_is_string(v)) {
			puts(json_string_value(v));
		} else {
			char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
			puts(s ? s : "?");
			free(s);
		}
	}
	json_decref(doc);
	return rc;
}
