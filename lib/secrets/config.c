/* Rewriting a stack configuration file (Pulumi.<stack>.yaml) for a new passphrase. */
#include "internal.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- stack configuration files ---- */

int st_config_rekey(const char *path, st_secrets *from, st_secrets *to, size_t *count,
		    st_error *err)
{
	ST_ASSERT_ARG(from);
	ST_ASSERT_ARG(to);
	char *text = NULL, *line, *nl;
	size_t len = 0, n = 0;
	st_buf out;
	int rc, saw_salt = 0;

	if (count)
		*count = 0;
	rc = st_file_read(path, 16 << 20, &text, &len, NULL, err);
	if (rc)
		return rc;
	st_buf_init(&out);
	for (line = text; line < text + len; line = nl) {
		char *eol = memchr(line, '\n', (size_t)(text + len - line));
		nl = eol ? eol + 1 : text + len;
		size_t ll = (size_t)(nl - line);
		char *salt = NULL, *sec = NULL;
		/* encryptionsalt: v1:... (top level) */
		char *p = line;
		while (p < nl && (*p == ' ' || *p == '\t'))
			p++;
		if (!strncmp(p, "encryptionsalt:", 15) && p == line) {
			salt = p;
		} else {
			char *q = p;
			while (q + 7 < nl && strncmp(q, "secure:", 7))
				q++;
			if (q + 7 < nl && !strncmp(q, "secure:", 7))
				sec = q;
		}
		if (salt) {
			const char *ns = st_secrets_encryptionsalt(to);
			st_buf_add(&out, line, (size_t)(salt - line));
			st_buf_printf(&out, "encryptionsalt: %s", ns ? ns : "");
			if (eol)
				st_buf_add(&out, eol, (size_t)(nl - eol));
			saw_salt = 1;
			continue;
		}
		if (sec) {
			char *v = sec + 7, *ve, *pt = NULL, *ct = NULL, *val;
			size_t ptlen = 0;
			while (v < nl && (*v == ' ' || *v == '\t'))
				v++;
			ve = v;
			while (ve < nl && *ve != '\n' && *ve != '\r' && *ve != ' ' && *ve != '}' &&
			       *ve != '"' && *ve != '\'')
				ve++;
			if (ve == v) {
				st_buf_add(&out, line, ll);
				continue;
			}
			val = st_strndup(v, (size_t)(ve - v));
			rc = val ? st_secrets_decrypt(from, val, &pt, &ptlen, err) : ST_ENOMEM;
			if (rc == ST_OK)
				rc = st_secrets_encrypt(to, pt, ptlen, &ct, err);
			st_secret_free(pt, ptlen);
			free(val);
			if (rc) {
				st__err_file(err, path);
				free(ct);
				goto fail;
			}
			st_buf_add(&out, line, (size_t)(v - line));
			st_buf_adds(&out, ct);
			st_buf_add(&out, ve, (size_t)(nl - ve));
			free(ct);
			n++;
			continue;
		}
		st_buf_add(&out, line, ll);
	}
	if (!saw_salt) {
		/* Pulumi writes encryptionsalt first. */
		st_buf b2;
		st_buf_init(&b2);
		st_buf_printf(&b2, "encryptionsalt: %s\n", st_secrets_encryptionsalt(to));
		st_buf_add(&b2, out.data ? out.data : "", out.len);
		st_buf_free(&out);
		out = b2;
	}
	if (out.oom) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto fail;
	}
	{
		st_write_opts wo = ST_WRITE_OPTS_INIT;
		wo.backup = 1;
		rc = st_file_write_atomic(path, out.data, out.len, &wo, err);
	}
	if (rc == ST_OK && count)
		*count = n;
fail:
	sodium_memzero(text, len);
	free(text);
	st_buf_free(&out);
	return rc;
}
