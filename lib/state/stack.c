/*
 * Which stack a state belongs to, and its root stack resource (pulumi:pulumi:Stack), in one
 * place: the names from an override, the checkpoint, a DIY backend path or the URNs; the
 * root stack found and created as Pulumi's stack.CreateRootStackResource does; and which names
 * a stack and a project may have (the DIY backend's rules: letters, digits, '-', '_', '.').
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static int name_chars_ok(const char *s, size_t max)
{
	size_t n = 0;
	if (!s || !*s)
		return 0;
	if (!strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	for (; s[n]; n++) {
		char c = s[n];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return 0;
	}
	return n <= max;
}

int st_stack_name_valid(const char *name) { return name_chars_ok(name, 100); }
int st_project_name_valid(const char *name) { return name_chars_ok(name, 100); }

int st__is_root_stack(const json_t *r)
{
	const char *t = st_json_str(r, "type"), *p = st_json_str(r, "parent");
	return t && !strcmp(t, ST_ROOT_STACK_TYPE) && (!p || !*p);
}

json_t *st__root_stack_new(const char *stack, const char *project)
{
	char *urn = st_asprintf("urn:pulumi:%s::%s::" ST_ROOT_STACK_TYPE "::%s-%s", stack, project,
				project, stack);
	json_t *r = json_object();
	if (!urn || !r || json_object_set_new(r, "urn", json_string(urn)) ||
	    json_object_set_new(r, "custom", json_false()) ||
	    json_object_set_new(r, "type", json_string(ST_ROOT_STACK_TYPE))) {
		free(urn);
		json_decref(r);
		return NULL;
	}
	free(urn);
	return r;
}

/* Both names as new strings, or ST_ENOMEM (neither kept). */
static int both(char **stack, const char *st, size_t stn, char **project, const char *pr,
		size_t prn)
{
	*stack = st_strndup(st, stn);
	*project = st_strndup(pr, prn);
	if (*stack && *project)
		return ST_OK;
	free(*stack);
	free(*project);
	*stack = *project = NULL;
	return ST_ENOMEM;
}

/* "project/stack" or "organization/project/stack": ST_OK, -1 when it is neither (or a name is
 * empty), ST_ENOMEM. */
static int split_names(const char *s, char **stack, char **project)
{
	const char *a = strchr(s, '/');
	const char *b = a ? strchr(a + 1, '/') : NULL;
	int rc;
	if (b) /* organization/project/stack */
		rc = both(stack, b + 1, strlen(b + 1), project, a + 1, (size_t)(b - a - 1));
	else if (a)
		rc = both(stack, a + 1, strlen(a + 1), project, s, (size_t)(a - s));
	else
		return -1;
	if (rc == ST_OK && (!**stack || !**project)) {
		free(*stack);
		free(*project);
		*stack = *project = NULL;
		rc = -1;
	}
	return rc;
}

int st_stack_names(const st_state *s, const char *override, const char *path, char **stack,
		   char **project, st_error *err)
{
	ST_ASSERT_ARG_AS(s, "state");
	ST_ASSERT_ARG(stack);
	ST_ASSERT_ARG(project);
	const char *cp, *found = NULL;
	json_t *res, *r;
	size_t i;
	int rc;

	*stack = *project = NULL;
	if (override) {
		rc = split_names(override, stack, project);
		if (rc == ST_OK && st_stack_name_valid(*stack) && st_project_name_valid(*project))
			return ST_OK;
		free(*stack);
		free(*project);
		*stack = *project = NULL;
		if (rc == ST_ENOMEM)
			return st__err(err, rc, "out of memory");
		return st__err(err, ST_EINVAL, "'%s' is not PROJECT/STACK", override);
	}
	cp = st_state_checkpoint_stack(s);
	if (cp && strchr(cp, '/') && (rc = split_names(cp, stack, project)) != -1)
		return rc == ST_OK ? ST_OK : st__err(err, rc, "out of memory");
	if (path) {
		const char *m = strstr(path, "/.pulumi/stacks/");
		if (m) {
			const char *p = m + 16, *slash = strchr(p, '/'), *dot;
			if (slash && !strchr(slash + 1, '/') && (dot = strstr(slash + 1, ".json"))) {
				rc = both(stack, slash + 1, (size_t)(dot - slash - 1), project, p,
					  (size_t)(slash - p));
				return rc == ST_OK ? ST_OK : st__err(err, rc, "out of memory");
			}
		}
	}
	res = st_state_resources((st_state *)s, 0);
	json_array_foreach(res, i, r) {
		const char *u = st_json_str(r, "urn");
		if (!u || !st_urn_valid(u))
			continue;
		if (!found)
			found = u;
		if (st__is_root_stack(r)) {
			found = u;
			break;
		}
	}
	if (found) {
		st_urn pu;
		st_urn_parse(found, &pu);
		rc = both(stack, pu.stack, pu.stack_len, project, pu.project, pu.project_len);
		return rc == ST_OK ? ST_OK : st__err(err, rc, "out of memory");
	}
	cp = st_state_checkpoint_stack(s);
	if (cp && *cp)
		return st__err(err, ST_ENOTFOUND, "its checkpoint's stack '%s' names no project",
			       cp);
	return st__err(err, ST_ENOTFOUND, "it has no resources and no name of its own");
}

