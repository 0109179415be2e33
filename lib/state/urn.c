/* URNs, type tokens and provider references, as Pulumi parses and builds them. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define URN_PREFIX "urn:pulumi:"

int st_urn_parse(const char *urn, st_urn *u)
{
	ST_ASSERT_ARG_AS(u, "out");
	const char *p, *a, *b, *c, *dollar;

	memset(u, 0, sizeof(*u));
	if (!urn || strncmp(urn, URN_PREFIX, sizeof(URN_PREFIX) - 1) != 0)
		return ST_EINVAL;
	p = urn + sizeof(URN_PREFIX) - 1;
	a = strstr(p, "::");
	if (!a)
		return ST_EINVAL;
	b = strstr(a + 2, "::");
	if (!b)
		return ST_EINVAL;
	c = strstr(b + 2, "::");
	if (!c)
		return ST_EINVAL;
	u->stack = p;
	u->stack_len = (size_t)(a - p);
	u->project = a + 2;
	u->project_len = (size_t)(b - (a + 2));
	u->qtype = b + 2;
	u->qtype_len = (size_t)(c - (b + 2));
	u->name = c + 2;
	u->name_len = strlen(c + 2);
	dollar = NULL;
	for (const char *q = u->qtype; q < u->qtype + u->qtype_len; q++)
		if (*q == '$')
			dollar = q;
	u->type = dollar ? dollar + 1 : u->qtype;
	u->type_len = (size_t)(u->qtype + u->qtype_len - u->type);
	return ST_OK;
}

int st_urn_valid(const char *urn)
{
	st_urn u;
	return st_urn_parse(urn, &u) == ST_OK;
}

char *st_urn_new(const char *stack, const char *project, const char *parent_qtype,
		 const char *type, const char *name)
{
	ST_ASSERT_ARG(stack);
	ST_ASSERT_ARG(project);
	ST_ASSERT_ARG(type);
	ST_ASSERT_ARG(name);
	if (parent_qtype && *parent_qtype && strcmp(parent_qtype, ST_ROOT_STACK_TYPE) != 0)
		return st_asprintf(URN_PREFIX "%s::%s::%s$%s::%s", stack, project, parent_qtype,
				   type, name);
	return st_asprintf(URN_PREFIX "%s::%s::%s::%s", stack, project, type, name);
}

int st_type_is_provider(const char *type)
{
	static const char prefix[] = "pulumi:providers:";
	return type && strncmp(type, prefix, sizeof(prefix) - 1) == 0 &&
	       type[sizeof(prefix) - 1] != '\0';
}

int st__provider_urn_check(const char *urn, st_error *err)
{
	st_urn u;
	const char *c1, *c2;
	size_t modlen;

	if (st_urn_parse(urn, &u) != ST_OK)
		return st__err(err, ST_EINVAL, "%s is not a valid URN", urn);
	/* tokens.Type: the module is the text up to the second ':' (none without a ':') */
	c1 = memchr(u.type, ':', u.type_len);
	c2 = c1 ? memchr(c1 + 1, ':', (size_t)(u.type + u.type_len - c1 - 1)) : NULL;
	modlen = c2 ? (size_t)(c2 - u.type) : c1 ? u.type_len : 0;
	if (modlen != strlen("pulumi:providers") || strncmp(u.type, "pulumi:providers", modlen))
		return st__err(err, ST_EINVAL,
			       "invalid module in type: expected 'pulumi:providers', got '%.*s'",
			       (int)modlen, u.type);
	if (!c2 || c2 + 1 == u.type + u.type_len)
		return st__err(err, ST_EINVAL, "provider URNs must specify a type name");
	return ST_OK;
}

int st_provider_ref_parse(const char *ref, char **urn_out, char **id_out, st_error *err)
{
	ST_ASSERT_ARG(ref);
	ST_ASSERT_ARG_AS(urn_out, "urn");
	ST_ASSERT_ARG_AS(id_out, "id");
	const char *last = NULL, *p;
	char *urn;
	int rc;

	*urn_out = NULL;
	*id_out = NULL;
	for (p = strstr(ref, "::"); p; p = strstr(p + 1, "::"))
		last = p;
	if (!last)
		return st__err(err, ST_EINVAL, "expected '::' in provider reference '%s'", ref);
	urn = st_strndup(ref, (size_t)(last - ref));
	if (!urn)
		return st__err(err, ST_ENOMEM, "out of memory");
	rc = st__provider_urn_check(urn, err);
	if (rc) {
		free(urn);
		return rc;
	}
	*id_out = st_strdup(last + 2);
	if (!*id_out) {
		free(urn);
		return st__err(err, ST_ENOMEM, "out of memory");
	}
	*urn_out = urn;
	return ST_OK;
}
