/* Rewriting a stack configuration file (Pulumi.<stack>.yaml) for a new passphrase. */
#include "internal.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- stack configuration files ---- */

int st_config_rekey_text(const char *text, size_t len, const char *name, st_secrets *from,
			 st_secrets *to, char **out_text, size_t *out_len, size_t *count, st_error *err)
{
	ST_ASSERT_ARG(from);
	ST_ASSERT_ARG(to);
	ST_ASSERT_ARG(out_text);
	const char *line, *nl;
	size_t n = 0;
	st_buf out;
	int rc = ST_OK, saw_salt = 0;

	*out_text = NULL;
	if (out_len)
		*out_len = 0;
	if (count)
		*count = 0;
	st_buf_init(&out);
	for (line = text; line < text + len; line = nl) {
		const char *eol = memchr(line, '\n', (size_t)(text + len - line));
		nl = eol ? eol + 1 : text + len;
		size_t ll = (size_t)(nl - line);
		const char *salt = NULL, *sec = NULL;
		/* encryptionsalt: v1:... (top level) */
		const char *p = line;
		while (p < nl && (*p == ' ' || *p == '\t'))
			p++;
		if (p == line && (size_t)(nl - p) >= 15 && !memcmp(p, "encryptionsalt:", 15)) {
			salt = p;
		} else {
			const char *q = p;
			while (q + 7 < nl && memcmp(q, "secure:", 7))
				q++;
			if (q + 7 < nl && !memcmp(q, "secure:", 7))
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
			const char *v = sec + 7, *ve;
			char *pt = NULL, *ct = NULL, *val;
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
			rc = val ? st_secrets_decrypt(from, val, &pt, &ptlen, err)
				 : st__err(err, ST_ENOMEM, "out of memory");
			if (rc == ST_OK)
				rc = st_secrets_encrypt(to, pt, ptlen, &ct, err);
			st_secret_free(pt, ptlen);
			free(val);
			if (rc) {
				if (name)
					st__err_file(err, name);
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
		const char *ns = st_secrets_encryptionsalt(to);
		st_buf_printf(&b2, "encryptionsalt: %s\n", ns ? ns : "");
		st_buf_add(&b2, out.data ? out.data : "", out.len);
		st_buf_free(&out);
		out = b2;
	}
	if (out.oom) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto fail;
	}
	if (!(*out_text = st_buf_take(&out, out_len)) && !(*out_text = strdup(""))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto fail;
	}
	if (count)
		*count = n;
	return ST_OK;
fail:
	st_buf_free(&out);
	return rc;
}

int st_config_rekey(const char *path, st_secrets *from, st_secrets *to, size_t *count,
		    st_error *err)
{
	ST_ASSERT_ARG(from);
	ST_ASSERT_ARG(to);
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
