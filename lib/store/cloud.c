/*
 * The Pulumi Cloud backend: https://api.pulumi.com (or any Pulumi Cloud URL, http:// or
 * https://), reached through the service's REST API as the Pulumi CLI reaches it
 * (pkg/backend/httpstate/client in pulumi/pulumi). See doc/DESIGN.md, "The Pulumi Cloud
 * backend".
 *
 *   list     GET  /api/user/stacks[?continuationToken=T]    pages until no continuationToken
 *   resolve  GET  /api/stacks/ORG/PROJECT/STACK             200: it exists, 404: it does not
 *            GET  /api/user                                 the default organization (githubLogin)
 *   load     GET  /api/stacks/ORG/PROJECT/STACK/export      {"version", "deployment"}
 *   save     POST /api/stacks/ORG/PROJECT                   {"stackName"} when the stack is new
 *            POST /api/stacks/ORG/PROJECT/STACK/import      the deployment, gzip; {"updateId"}
 *                 (sent only once the caller's `proceed` said yes)
 *            GET  /api/stacks/ORG/PROJECT/STACK/update/ID[?continuationToken=T]
 *                 polled until no continuationToken; the status must be "succeeded"
 * Every request: Authorization: token TOKEN, Accept: application/vnd.pulumi+8, User-Agent,
 * Content-Type: application/json. An error's body is {"code", "message"} (apitype.ErrorResponse),
 * shown as Pulumi shows it, "[code] message". GETs are retried (500s, 429 with Retry-After, lost
 * connections); a POST only when the service refused it without acting (429).
 *
 * There is no local lock: the service serialises updates and refuses an import while another
 * update runs (409).
 */
#include "config.h"
#include "http.h"
#include "store_impl.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#define ACCEPT "application/vnd.pulumi+8"
#define POLLS 1200 /* the import's status: polled for up to ~10 minutes */

typedef struct cloud_backend {
	st_backend base;
	st_http *http;
	char *api;    /* the URL without a trailing '/' */
	char *token;  /* wiped when freed */
	char *org;    /* the default organization, once asked for */
} cloud_backend;

int st__backend_is_cloud_url(const char *url)
{
	return url && (!strncmp(url, "https://", 8) || !strncmp(url, "http://", 7));
}

static cloud_backend *as_cloud(st_backend *b)
{
	return b && !strcmp(b->ops->kind, "cloud") ? (cloud_backend *)b : NULL;
}

/* ---- the access token ---- */

/* The credentials file as the Pulumi CLI keeps it: $PULUMI_CREDENTIALS_PATH/credentials.json,
 * else $PULUMI_HOME/credentials.json, else ~/.pulumi/credentials.json. New. */
static char *creds_path(void)
{
	const char *d = getenv("PULUMI_CREDENTIALS_PATH");
	if (d && *d)
		return st_asprintf("%s/credentials.json", d);
	d = getenv("PULUMI_HOME");
	if (d && *d)
		return st_asprintf("%s/credentials.json", d);
	d = getenv("HOME");
	return st_asprintf("%s/.pulumi/credentials.json", d && *d ? d : ".");
}

/* The token for `api`: PULUMI_ACCESS_TOKEN, else accessTokens[api] of the credentials file.
 * *token and *from (where it came from, safe to print) are new. */
static int find_token(const char *api, char **token, char **from, st_error *err)
{
	const char *env = getenv("PULUMI_ACCESS_TOKEN");
	char *path, *data = NULL;
	size_t len = 0;
	int rc;

	*token = *from = NULL;
	if (env && *env) {
		*token = st_strdup(env);
		*from = st_strdup("token from PULUMI_ACCESS_TOKEN");
		return *token && *from ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
	}
	if (!(path = creds_path()))
		return st__err(err, ST_ENOMEM, "out of memory");
	st_error ignored;
	st_error_clear(&ignored);
	rc = st_file_read(path, 1 << 20, &data, &len, NULL, &ignored);
	if (rc == ST_OK) {
		json_error_t je;
		json_t *doc = json_loadb(data, len, 0, &je);
		json_t *toks = doc ? json_object_get(doc, "accessTokens") : NULL;
		json_t *t = toks ? json_object_get(toks, api) : NULL;
		if (!t && toks) { /* the key as Pulumi writes it may end in '/' */
			char *alt = st_asprintf("%s/", api);
			t = alt ? json_object_get(toks, alt) : NULL;
			free(alt);
		}
		if (json_is_string(t) && *json_string_value(t)) {
			*token = st_strdup(json_string_value(t));
			*from = st_asprintf("token from %s", path);
		}
		json_decref(doc);
		sodium_memzero(data, len);
		free(data);
	}
	if (*token && *from) {
		free(path);
		return ST_OK;
	}
	if (*token || *from) {
		free(*token);
		free(*from);
		*token = *from = NULL;
		free(path);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	rc = st__err(err, ST_EAUTH,
		     "pulumi cloud: no access token for %s: set PULUMI_ACCESS_TOKEN or run "
		     "`pulumi login %s` (%s has none for it)",
		     api, api, path);
	free(path);
	return rc;
}

/* ---- requests ---- */

/* `s` percent-encoded for a query string (new). */
static char *escape_q(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = malloc(strlen(s) * 3 + 1), *o = out;
	if (!out)
		return NULL;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = '\0';
	return out;
}

/* The service's error, "[code] message" as Pulumi prints apitype.ErrorResponse, printable
 * characters only, at most 300 of them. New, or NULL. */
static char *error_detail(const st_http_resp *resp)
{
	json_error_t je;
	json_t *doc = resp->len ? json_loadb(resp->body, resp->len, 0, &je) : NULL;
	const char *msg = doc ? st_json_str(doc, "message") : NULL;
	json_t *code = doc ? json_object_get(doc, "code") : NULL;
	char *out;

	if (resp->status == 429)
		out = st_strdup("(pulumi service: request rate-limit exceeded)");
	else if (msg)
		out = st_asprintf("[%lld] %.300s",
				  json_is_integer(code) ? (long long)json_integer_value(code)
							: (long long)resp->status,
				  msg);
	else
		out = NULL;
	json_decref(doc);
	for (char *p = out; p && *p; p++)
		if (iscntrl((unsigned char)*p))
			*p = ' ';
	return out;
}

/* One call: `path` under the API (with its query), `op` and `target` for messages. The answer is
 * in *resp whatever its status when ST_OK; a status other than `ok` is turned into an error
 * (err set, `code` or the one the status maps to), except a 404 when `missing_ok` (then 1). */
static int call(cloud_backend *b, const char *method, const char *path, const char *op,
		const char *target, const void *body, size_t body_len, int gzipped, size_t max,
		long ok, int missing_ok, st_http_resp *resp, st_error *err)
{
	st_http_req r = ST_HTTP_REQ_INIT;
	char *url = st_asprintf("%s%s", b->api, path);
	char *auth = st_asprintf("token %s", b->token);
	int rc = url && auth ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");

	memset(resp, 0, sizeof(*resp));
	r.method = method;
	r.url = url;
	r.op = op;
	r.target = target;
	r.body = body;
	r.body_len = body_len;
	r.max_body = max;
	r.flags = !strcmp(method, "GET") ? ST_HTTP_RETRY : ST_HTTP_RETRY_REFUSED;
	if (rc == ST_OK)
		rc = st__http_hdrs_add(&r.headers, "Authorization", auth, err);
	if (rc == ST_OK)
		rc = st__http_hdrs_add(&r.headers, "Accept", ACCEPT, err);
	if (rc == ST_OK)
		rc = st__http_hdrs_add(&r.headers, "User-Agent", "statetool/" PACKAGE_VERSION, err);
	if (rc == ST_OK)
		rc = st__http_hdrs_add(&r.headers, "Content-Type", "application/json", err);
	if (rc == ST_OK && gzipped)
		rc = st__http_hdrs_add(&r.headers, "Content-Encoding", "gzip", err);
	if (rc == ST_OK)
		rc = st__http_do(b->http, &r, resp, err);
	if (rc == ST_OK && resp->status != ok) {
		if (missing_ok && resp->status == 404) {
			rc = 1;
		} else {
			char *detail = error_detail(resp);
			int code = resp->status == 429 ? ST_EIO : 0;
			rc = st__http_fail(b->http, &r, resp, code, detail, err);
			free(detail);
		}
	}
	if (auth) {
		sodium_memzero(auth, strlen(auth));
		free(auth);
	}
	for (size_t i = 0; i < r.headers.n; i++)
		if (!strcmp(r.headers.v[i].name, "Authorization"))
			sodium_memzero(r.headers.v[i].value, strlen(r.headers.v[i].value));
	st__http_hdrs_free(&r.headers);
	free(url);
	return rc;
}

/* The answer's body as JSON (new), or ST_EFORMAT naming `op`. */
static int answer_json(cloud_backend *b, const st_http_resp *resp, const char *op, json_t **out,
		       st_error *err)
{
	json_error_t je;
	*out = json_loadb(resp->body, resp->len, 0, &je);
	if (!*out || !json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return st__err(err, ST_EFORMAT, "pulumi cloud: %s on %s: the answer is no JSON object",
			       op, b->api);
	}
	return ST_OK;
}

/* ---- names ---- */

/* Pulumi's organization names: what its stack names allow. */
static int org_valid(const char *s) { return st_stack_name_valid(s); }

static int default_org(cloud_backend *b, st_error *err)
{
	st_http_resp resp;
	json_t *doc = NULL;
	int rc;

	if (b->org)
		return ST_OK;
	rc = call(b, "GET", "/api/user", "GetCurrentUser", "", NULL, 0, 0, 0, 200, 0, &resp, err);
	if (rc == ST_OK)
		rc = answer_json(b, &resp, "GetCurrentUser", &doc, err);
	if (rc == ST_OK) {
		const char *login = st_json_str(doc, "githubLogin");
		if (!login || !org_valid(login))
			rc = st__err(err, ST_EFORMAT,
				     "pulumi cloud: %s/api/user names no user (githubLogin)", b->api);
		else if (!(b->org = st_strdup(login)))
			rc = st__err(err, ST_ENOMEM, "out of memory");
	}
	json_decref(doc);
	st__http_resp_free(&resp);
	return rc;
}

/* ORG/PROJECT/STACK, or PROJECT/STACK in the default organization, into its parts (new). */
static int split_ref(cloud_backend *b, const char *ref, char **org, char **project, char **stack,
		     st_error *err)
{
	const char *s1 = ref ? strchr(ref, '/') : NULL;
	const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	int rc;

	*org = *project = *stack = NULL;
	if (!s1 || (s2 && strchr(s2 + 1, '/')))
		return st__err(err, ST_EINVAL,
			       "pulumi cloud: a stack is named ORGANIZATION/PROJECT/STACK (or "
			       "PROJECT/STACK in your default organization), not '%s'",
			       ref ? ref : "");
	if (s2) {
		*org = st_strndup(ref, (size_t)(s1 - ref));
		*project = st_strndup(s1 + 1, (size_t)(s2 - s1 - 1));
		*stack = st_strdup(s2 + 1);
	} else {
		if ((rc = default_org(b, err)) != ST_OK)
			return rc;
		*org = st_strdup(b->org);
		*project = st_strndup(ref, (size_t)(s1 - ref));
		*stack = st_strdup(s1 + 1);
	}
	if (!*org || !*project || !*stack) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
	} else if (!org_valid(*org)) {
		rc = st__err(err, ST_EINVAL, "invalid organization name '%s'", *org);
	} else if (!st_project_name_valid(*project)) {
		rc = st__err(err, ST_EINVAL,
			     "project names may only contain alphanumerics, hyphens, underscores, "
			     "and periods: '%s'",
			     *project);
	} else if (!st_stack_name_valid(*stack)) {
		rc = st__err(err, ST_EINVAL,
			     "stack names are limited to 100 characters and may only contain "
			     "alphanumeric, hyphens, underscores, or periods: '%s'",
			     *stack);
	} else {
		return ST_OK;
	}
	free(*org);
	free(*project);
	free(*stack);
	*org = *project = *stack = NULL;
	return rc;
}

/* ORG/PROJECT/STACK of a reference (new). */
static int qualify(cloud_backend *b, const char *ref, char **qname, st_error *err)
{
	char *o, *p, *s;
	int rc = split_ref(b, ref, &o, &p, &s, err);
	if (rc != ST_OK)
		return rc;
	*qname = st_asprintf("%s/%s/%s", o, p, s);
	free(o);
	free(p);
	free(s);
	return *qname ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}

/* ---- the calls ---- */

static int add_summary(st_stack_info **arr, size_t *n, size_t *cap, json_t *s, st_error *err)
{
	const char *o = st_json_str(s, "orgName"), *p = st_json_str(s, "projectName"),
		   *name = st_json_str(s, "stackName");
	json_t *lu = json_object_get(s, "lastUpdate");

	if (!o || !p || !name)
		return ST_OK; /* not a stack this tool can name */
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		st_stack_info *na = realloc(*arr, nc * sizeof(*na));
		if (!na)
			return st__err(err, ST_ENOMEM, "out of memory");
		*arr = na;
		*cap = nc;
	}
	st_stack_info *i = &(*arr)[*n];
	memset(i, 0, sizeof(*i));
	i->project = st_strdup(p);
	i->name = st_strdup(name);
	i->qname = st_asprintf("%s/%s/%s", o, p, name);
	i->size = -1;
	i->mtime_ns = json_is_integer(lu) ? (long long)json_integer_value(lu) * 1000000000LL : 0;
	(*n)++;
	if (!i->project || !i->name || !i->qname)
		return st__err(err, ST_ENOMEM, "out of memory");
	return ST_OK;
}

static int cmp_info(const void *a, const void *b)
{
	const st_stack_info *x = a, *y = b;
	return strcmp(x->qname, y->qname);
}

static int cloud_list(st_backend *bb, st_stack_info **out, size_t *count, st_error *err)
{
	cloud_backend *b = (cloud_backend *)bb;
	st_stack_info *arr = NULL;
	size_t n = 0, cap = 0;
	char *token = NULL;
	int rc = ST_OK;

	*out = NULL;
	*count = 0;
	for (int page = 0; rc == ST_OK; page++) {
		st_http_resp resp;
		json_t *doc = NULL, *stacks, *v;
		size_t i;
		char *path;

		if (page > 100000) {
			rc = st__err(err, ST_EFORMAT, "pulumi cloud: ListStacks on %s never ends",
				     b->api);
			break;
		}
		if (token) {
			char *q = escape_q(token);
			path = q ? st_asprintf("/api/user/stacks?continuationToken=%s", q) : NULL;
			free(q);
		} else {
			path = st_strdup("/api/user/stacks");
		}
		if (!path) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			break;
		}
		rc = call(b, "GET", path, "ListStacks", "", NULL, 0, 0, 0, 200, 0, &resp, err);
		free(path);
		if (rc == ST_OK)
			rc = answer_json(b, &resp, "ListStacks", &doc, err);
		st__http_resp_free(&resp);
		if (rc != ST_OK)
			break;
		stacks = json_object_get(doc, "stacks");
		json_array_foreach(stacks, i, v)
			if (rc == ST_OK && json_is_object(v))
				rc = add_summary(&arr, &n, &cap, v, err);
		free(token);
		token = NULL;
		const char *t = st_json_str(doc, "continuationToken");
		if (rc == ST_OK && t && *t && !(token = st_strdup(t)))
			rc = st__err(err, ST_ENOMEM, "out of memory");
		json_decref(doc);
		if (!token)
			break;
	}
	free(token);
	if (rc != ST_OK) {
		st_stack_infos_free(arr, n);
		return rc;
	}
	if (n)
		qsort(arr, n, sizeof(*arr), cmp_info);
	*out = arr;
	*count = n;
	return ST_OK;
}

static int stack_exists(cloud_backend *b, const char *qname, int *exists, st_error *err)
{
	st_http_resp resp;
	char *path = st_asprintf("/api/stacks/%s", qname);
	int rc;

	if (!path)
		return st__err(err, ST_ENOMEM, "out of memory");
	rc = call(b, "GET", path, "GetStack", qname, NULL, 0, 0, 0, 200, 1, &resp, err);
	free(path);
	st__http_resp_free(&resp);
	if (rc == 1) {
		*exists = 0;
		return ST_OK;
	}
	*exists = rc == ST_OK;
	return rc;
}

static int cloud_resolve(st_backend *bb, const char *ref, char **qname, int *exists,
			 st_error *err)
{
	cloud_backend *b = (cloud_backend *)bb;
	int ex = 0, rc;

	*qname = NULL;
	if ((rc = qualify(b, ref, qname, err)) != ST_OK)
		return rc;
	if ((rc = stack_exists(b, *qname, &ex, err)) != ST_OK) {
		free(*qname);
		*qname = NULL;
		return rc;
	}
	if (exists)
		*exists = ex;
	return ST_OK;
}

/* GET .../export: the deployment's bytes (new) and a name for messages (new). */
static int export_bytes(cloud_backend *b, const char *ref, size_t max, char **data, size_t *len,
			char **name, st_error *err)
{
	st_http_resp resp;
	char *qname = NULL, *path = NULL;
	int rc;

	*data = *name = NULL;
	*len = 0;
	if ((rc = qualify(b, ref, &qname, err)) != ST_OK)
		return rc;
	if (!(path = st_asprintf("/api/stacks/%s/export", qname)) ||
	    !(*name = st_asprintf("%s/%s", b->api, qname))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
	} else {
		rc = call(b, "GET", path, "ExportStack", qname, NULL, 0, 0, max, 200, 0, &resp, err);
		if (rc == ST_OK) {
			*data = resp.body;
			*len = resp.len;
			resp.body = NULL;
		}
		st__http_resp_free(&resp);
	}
	free(path);
	free(qname);
	if (rc != ST_OK) {
		free(*name);
		*name = NULL;
	}
	return rc;
}

int st__backend_export(st_backend *b, const char *stack, size_t max, char **data, size_t *len,
		       char **where, st_error *err)
{
	*data = *where = NULL;
	*len = 0;
	if (!as_cloud(b))
		return st__err(err, ST_EUNSUPPORTED, "backend '%s' is no Pulumi Cloud", b->url);
	return export_bytes((cloud_backend *)b, stack, max, data, len, where, err);
}

static int cloud_load(st_backend *bb, const char *ref, const st_load_opts *opts, st_state **out,
		      st_error *err)
{
	char *data = NULL, *name = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	rc = export_bytes((cloud_backend *)bb, ref, opts ? opts->max_size : 0, &data, &len, &name,
			  err);
	if (rc == ST_OK)
		rc = st_state_load_buffer(out, data, len, name, opts, err);
	free(data);
	free(name);
	return rc;
}

int st__cloud_load_json(st_backend *bb, const char *ref, size_t max_size, json_t **out,
			st_style *style, st_problems *problems, char **where, st_error *err)
{
	char *data = NULL, *name = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	rc = export_bytes((cloud_backend *)bb, ref, max_size, &data, &len, &name, err);
	if (rc == ST_OK)
		rc = st_json_parse(out, data, len, name, NULL, style, problems, err);
	free(data);
	if (rc == ST_OK && where)
		*where = name;
	else
		free(name);
	return rc;
}

/* Creates a stack that does not exist yet (POST /api/stacks/ORG/PROJECT {"stackName"}). */
static int create_stack(cloud_backend *b, const char *qname, st_error *err)
{
	char *o = NULL, *p = NULL, *s = NULL, *path = NULL, *body = NULL;
	st_http_resp resp;
	int rc = split_ref(b, qname, &o, &p, &s, err);

	if (rc != ST_OK)
		return rc;
	json_t *req = json_pack("{s:s}", "stackName", s);
	if (!req || !(body = json_dumps(req, JSON_COMPACT)) ||
	    !(path = st_asprintf("/api/stacks/%s/%s", o, p))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
	} else {
		rc = call(b, "POST", path, "CreateStack", qname, body, strlen(body), 0, 0, 200, 0,
			  &resp, err);
		st__http_resp_free(&resp);
	}
	json_decref(req);
	free(body);
	free(path);
	free(o);
	free(p);
	free(s);
	return rc;
}

static void pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0)
		;
}

/* Waits for an import to end, as the CLI's waitForUpdate does: GET .../update/ID until the
 * answer has no continuationToken; then its status must be "succeeded". *ended is 1 once that
 * status was read (a failure before it leaves the import's outcome unknown). */
static int wait_update(cloud_backend *b, const char *qname, const char *id, int *ended,
		       st_error *err)
{
	char *token = NULL;
	long delay = 50;
	int rc = ST_OK;

	*ended = 0;
	for (int n = 0;; n++) {
		st_http_resp resp;
		json_t *doc = NULL;
		char *path, *q = token ? escape_q(token) : NULL;

		if (n >= POLLS) {
			rc = st__err(err, ST_EIO, "pulumi cloud: the update has not ended after %d polls",
				     POLLS);
			break;
		}
		path = token ? (q ? st_asprintf("/api/stacks/%s/update/%s?continuationToken=%s",
						qname, id, q)
				  : NULL)
			     : st_asprintf("/api/stacks/%s/update/%s", qname, id);
		free(q);
		if (!path) {
			rc = st__err(err, ST_ENOMEM, "out of memory");
			break;
		}
		rc = call(b, "GET", path, "GetUpdateEvents", qname, NULL, 0, 0, 0, 200, 0, &resp,
			  err);
		free(path);
		if (rc == ST_OK)
			rc = answer_json(b, &resp, "GetUpdateEvents", &doc, err);
		st__http_resp_free(&resp);
		if (rc != ST_OK)
			break;
		const char *t = st_json_str(doc, "continuationToken");
		free(token);
		token = NULL;
		if (!t) {
			const char *status = st_json_str(doc, "status");
			*ended = 1;
			if (!status || strcmp(status, "succeeded"))
				rc = st__err(err, ST_EIO,
					     "pulumi cloud: import unsuccessful: status %.40s "
					     "(stack '%s' on %s)",
					     status ? status : "unknown", qname, b->api);
			json_decref(doc);
			break;
		}
		if (!(token = st_strdup(t))) {
			json_decref(doc);
			rc = st__err(err, ST_ENOMEM, "out of memory");
			break;
		}
		json_decref(doc);
		pause_ms(delay);
		if (delay < 1000)
			delay *= 2;
	}
	free(token);
	return rc;
}

/* The import `id` was accepted: its end, or (its result unread: the poll failed, ran out of
 * time or of memory) ST_EOUTCOME, for the service may have applied it. Not ST_EIO: a caller
 * must not take the stack for unchanged (a move would then ask to delete what is gone). */
static int import_result(cloud_backend *b, const char *qname, const char *id, st_error *err)
{
	st_error why;
	int ended, rc;

	st_error_clear(&why);
	if ((rc = wait_update(b, qname, id, &ended, &why)) == ST_OK || ended)
		return rc == ST_OK ? ST_OK : st__err_copy(err, &why);
	const char *m = why.message;
	if (!strncmp(m, "pulumi cloud: ", 14))
		m += 14;
	return st__err(err, ST_EOUTCOME,
		       "pulumi cloud: the import into '%s' was sent (update %.64s) but its result "
		       "could not be read, so the stack may or may not have changed (`pulumi stack "
		       "history --stack %s` or `statetool list` tells): %s",
		       qname, id, qname, m[0] ? m : st_strerror(rc));
}

static int cloud_save(st_backend *bb, const char *ref, st_state *s,
		      const st_backend_save_opts *opts, const st__wcfg *cfg, st_error *err)
{
	cloud_backend *b = (cloud_backend *)bb;
	char *qname = NULL, *text = NULL, *z = NULL, *path = NULL;
	size_t tlen = 0, zlen = 0;
	st_http_resp resp;
	json_t *doc = NULL;
	int exists = 0, rc;

	/* no .bak (opts->no_backup does not matter): the service keeps every version */
	if ((rc = qualify(b, ref, &qname, err)) != ST_OK)
		return rc;
	if (st_state_envelope(s) != ST_ENVELOPE_EXPORT &&
	    (rc = st_state_set_envelope(s, ST_ENVELOPE_EXPORT, NULL, err)) != ST_OK)
		goto out;
	st_state_fix_magic(s);
	if ((rc = st__state_dump_cfg(s, cfg, &text, &tlen, err)) != ST_OK ||
	    (rc = st__compress_bytes(ST_COMPRESS_GZIP, text, tlen, &z, &zlen, err)) != ST_OK ||
	    (rc = stack_exists(b, qname, &exists, err)) != ST_OK)
		goto out;
	if (!exists && (rc = create_stack(b, qname, err)) != ST_OK)
		goto out;
	/* the caller's last word (the check of an edit's result, run while the bytes were
	 * made): anything but ST_OK and nothing is sent */
	if (opts && opts->proceed && (rc = opts->proceed(opts->proceed_ctx)) != ST_OK)
		goto out;
	if (!(path = st_asprintf("/api/stacks/%s/import", qname))) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto out;
	}
	rc = call(b, "POST", path, "ImportStack", qname, z, zlen, 1, 0, 200, 0, &resp, err);
	if (rc == ST_OK)
		rc = answer_json(b, &resp, "ImportStack", &doc, err);
	st__http_resp_free(&resp);
	if (rc == ST_OK) {
		const char *id = st_json_str(doc, "updateId");
		if (!id || !*id || strchr(id, '/') || strchr(id, '?'))
			rc = st__err(err, ST_EFORMAT,
				     "pulumi cloud: ImportStack '%s' on %s: no updateId in the answer",
				     qname, b->api);
		else
			rc = import_result(b, qname, id, err);
	}
out:
	json_decref(doc);
	free(path);
	free(text);
	free(z);
	free(qname);
	return rc;
}

static int cloud_lock(st_backend *bb, const char *ref, st_lock **out, st_error *err)
{
	(void)bb;
	(void)ref;
	return out ? st__lock_none(out, err) : ST_OK;
}

static int cloud_unlock(st_backend *bb, const char *ref, int *removed, st_error *err)
{
	(void)ref;
	if (removed)
		*removed = 0;
	return st__err(err, ST_EUNSUPPORTED,
		       "a Pulumi Cloud stack (%s) has no lock statetool could remove: the service "
		       "serialises updates itself (`pulumi cancel` stops one in progress)",
		       bb->url);
}

static void cloud_free(st_backend *bb)
{
	cloud_backend *b = (cloud_backend *)bb;
	st__http_free(b->http);
	if (b->token) {
		sodium_memzero(b->token, strlen(b->token));
		free(b->token);
	}
	free(b->api);
	free(b->org);
	free(b->base.url);
	free(b);
}

static const st_backend_ops cloud_ops = {
	"cloud", cloud_list, cloud_resolve, cloud_load, cloud_save, cloud_lock, cloud_unlock,
	cloud_free,
};

/* A URL for a message: its user and password replaced by *** and its query and fragment
 * left out, either of which may hold a token (new). */
static char *url_shown(const char *url)
{
	const char *host = strstr(url, "://"), *end, *at = NULL;
	host = host ? host + 3 : url;
	end = host + strcspn(host, "?#");
	/* Go splits the user information off at the last '@'; any '@' is taken for one (a
	 * password may hold a '/'): more is masked than needed, never less */
	for (const char *p = host; p < end; p++)
		if (*p == '@')
			at = p;
	if (at)
		return st_asprintf("%.*s***%.*s%s", (int)(host - url), url, (int)(end - at), at,
				   *end ? "?..." : "");
	return st_asprintf("%.*s%s", (int)(end - url), url, *end ? "?..." : "");
}

int st__cloud_open(st_backend **out, const char *url, st_error *err)
{
	cloud_backend *b = calloc(1, sizeof(*b));
	char *from = NULL;
	size_t n;
	int rc;

	*out = NULL;
	if (!b || !(b->base.url = st_strdup(url)) || !(b->api = st_strdup(url))) {
		if (b)
			free(b->base.url);
		free(b);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	b->base.ops = &cloud_ops;
	for (n = strlen(b->api); n > 0 && b->api[n - 1] == '/'; n--)
		b->api[n - 1] = '\0';
	if (strpbrk(b->api + (b->api[4] == 's' ? 8 : 7), "?#@") || !b->api[b->api[4] == 's' ? 8 : 7]) {
		char *shown = url_shown(url);
		rc = st__err(err, ST_EINVAL,
			     "pulumi cloud: '%s' is no service URL (https://HOST[:PORT][/PATH]; a "
			     "user, password or query is not read: the token comes from "
			     "PULUMI_ACCESS_TOKEN or `pulumi login`)",
			     shown ? shown : "?");
		free(shown);
		goto fail;
	}
	if ((rc = find_token(b->api, &b->token, &from, err)) != ST_OK)
		goto fail;
	char *note = st_asprintf("backend %s, %s", b->api, from);
	free(from);
	if (!note) {
		rc = st__err(err, ST_ENOMEM, "out of memory");
		goto fail;
	}
	rc = st__http_new(&b->http, "pulumi cloud", NULL, err);
	if (rc == ST_OK)
		rc = st__http_set_note(b->http, note, err);
	free(note);
	if (rc != ST_OK)
		goto fail;
	*out = &b->base;
	return ST_OK;
fail:
	cloud_free(&b->base);
	return rc;
}

/* A backend of this kind, else NULL (for diy.c's DIY-only calls). */
int st__backend_is_cloud(const st_backend *b)
{
	return as_cloud((st_backend *)b) != NULL;
}

char *st__cloud_identity(const st_backend *bb)
{
	const cloud_backend *b = (const cloud_backend *)bb;
	st_buf s;

	st_buf_init(&s);
	st__identity_endpoint(&s, b->api);
	return st_buf_take(&s, NULL);
}
