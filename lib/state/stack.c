/*
 * Which stack a state belongs to, and its root stack resource (pulumi:pulumi:Stack), in one
 * place: the names from an override, the checkpoint, a DIY backend path or the URNs; the
 * root stack found and created as Pulumi's stack.CreateRootStackResource does.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

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

static int split_names(const char *s, char **stack, char **project)
{
	const char *a = strchr(s, '/');
	const char *b = a ? strchr(a + 1, '/') : NULL;
	if (b) { /* organization/project/stack */
		*project = st_strndup(a + 1, (size_t)(b - a - 1));
		*stack = st_strdup(b + 1);
	} else if (a) {
		*project = st_strndup(s, (size_t)(a - s));
		*stack = st_strdup(a + 1);
	} else {
		return -1;
	}
	return *stack && *project && **stack && **project ? 0 : -1;
}

int st_stack_names(const st_state *s, const char *override, const char *path, char **stack,
		   char **project, st_error *err)
{
	ST_ASSERT_ARG(s);
	const char *cp;
	json_t *res, *r;
	size_t i;

	*stack = *project = NULL;
	if (override) {
		if (split_names(override, stack, project) < 0 || !st_stack_name_valid(*stack) ||
		    !st_project_name_valid(*project)) {
			free(*stack);
			free(*project);
			*stack = *project = NULL;
			return st__err(err, ST_EINVAL, "'%s' is not PROJECT/STACK", override);
		}
		return ST_OK;
	}
	cp = st_state_checkpoint_stack(s);
	if (cp && strchr(cp, '/') && split_names(cp, stack, project) == 0)
		return ST_OK;
	free(*stack);
	free(*project);
	*stack = *project = NULL;
	if (path) {
		const char *m = strstr(path, "/.pulumi/stacks/");
		if (m) {
			const char *p = m + 16, *slash = strchr(p, '/'), *dot;
			if (slash && !strchr(slash + 1, '/') && (dot = strstr(slash + 1, ".json"))) {
				*project = st_strndup(p, (size_t)(slash - p));
				*stack = st_strndup(slash + 1, (size_t)(dot - slash - 1));
				if (*project && *stack)
					return ST_OK;
				free(*stack);
				free(*project);
				*stack = *project = NULL;
			}
		}
	}
	res = st_state_resources((st_state *)s, 0);
	const char *found = NULL;
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
		*stack = st_strndup(pu.stack, pu.stack_len);
		*project = st_strndup(pu.project, pu.project_len);
		return ST_OK;
	}
	cp = st_state_checkpoint_stack(s);
	if (cp && *cp)
		return st__err(err, ST_ENOTFOUND, "its checkpoint's stack '%s' names no project",
			       cp);
	return st__err(err, ST_ENOTFOUND, "it has no resources and no name of its own");
}

