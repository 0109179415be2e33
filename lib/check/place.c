/*
 * Is a state where it claims to be? A stack of a DIY backend is named three times: by where its
 * object lies (.pulumi/stacks/PROJECT/STACK.json), by its checkpoint's `stack`, and by the stack
 * and project of every URN. Pulumi reads the first only (pkg/backend/diy: the checkpoint's
 * `stack` is ignored on load and rewritten on save, and nothing compares the URNs), so a copy
 * of another stack's file loads without a word, and the next `pulumi up` sees none of its
 * resources as the program's: it creates them again and deletes the old ones. A backend's
 * object that is an export ({"deployment"}) Pulumi cannot load at all ("failed to load
 * checkpoint: unexpected end of JSON input": the checkpoint member it unmarshals is absent).
 * Rules (README, "Validation rules"):
 *   place/export-in-backend  error    a backend's object is an export, not a checkpoint
 *   place/stack-mismatch     warning  the checkpoint names another stack than its place
 *   place/urn-mismatch       warning  URNs name another stack or project than the place
 * Warnings, because Pulumi loads such a stack; every statetool mutation refuses it.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* The project (may be NULL) and stack of a name: organization/PROJECT/STACK, PROJECT/STACK or
 * STACK. New strings; *stack NULL when out of memory or not such a name. */
static void split_name(const char *q, char **project, char **stack)
{
	const char *s1 = strchr(q, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;

	*project = *stack = NULL;
	if (s2 && !strchr(s2 + 1, '/')) {
		*project = st_strndup(s1 + 1, (size_t)(s2 - s1 - 1));
		*stack = st_strdup(s2 + 1);
	} else if (s1 && !s2) {
		*project = st_strndup(q, (size_t)(s1 - q));
		*stack = st_strdup(s1 + 1);
	} else if (!s1) {
		*stack = st_strdup(q);
	}
	if (*stack && (!**stack || (*project && !**project))) {
		free(*stack);
		*stack = NULL;
	}
	if (!*stack) {
		free(*project);
		*project = NULL;
	}
}

/* Do two names agree: the same stack, and the same project when both have one? */
static int same_name(const char *stack_a, const char *project_a, const char *stack_b,
		     const char *project_b)
{
	return !strcmp(stack_a, stack_b) &&
	       (!project_a || !project_b || !strcmp(project_a, project_b));
}

/* URNs that name another stack or project than `stack`/`project`: one warning with the count
 * and the first. */
static int check_urns(st_state *s, const char *stack, const char *project, const char *whose,
		      st_problems *out)
{
	json_t *res = st_state_resources(s, 0), *r;
	size_t i, bad = 0, first = 0;
	const char *first_urn = NULL;
	st_urn u;

	json_array_foreach(res, i, r) {
		const char *urn = st_json_str(r, "urn");
		if (!urn || st_urn_parse(urn, &u) != ST_OK)
			continue; /* urn/invalid says so */
		if (u.stack_len == strlen(stack) && !strncmp(u.stack, stack, u.stack_len) &&
		    (!project ||
		     (u.project_len == strlen(project) && !strncmp(u.project, project, u.project_len))))
			continue;
		if (!bad++) {
			first = i;
			first_urn = urn;
		}
	}
	if (!bad)
		return ST_OK;
	st_urn_parse(first_urn, &u);
	char *ptr = st_asprintf("%s/resources/%zu/urn", st__deployment_pointer(s), first);
	int rc = st_problems_add(out, ST_SEV_WARNING, "place/urn-mismatch", ptr ? ptr : "",
				 first_urn,
				 "%zu resource URN%s name%s stack '%.*s' of project '%.*s' (the "
				 "first: %s), but %s stack '%s'%s%s%s: Pulumi would see none of "
				 "them in the program's stack",
				 bad, bad == 1 ? "" : "s", bad == 1 ? "s" : "", (int)u.stack_len,
				 u.stack, (int)u.project_len, u.project, first_urn, whose, stack,
				 project ? " of project '" : "", project ? project : "",
				 project ? "'" : "");
	free(ptr);
	return rc;
}

int st__place_misnamed(const st_state *s, const char *place)
{
	const char *cs = st_state_checkpoint_stack(s);
	char *pp = NULL, *ps = NULL, *cp = NULL, *cn = NULL;
	int mis = 0;

	if (!cs || !*cs)
		return 0;
	split_name(place, &pp, &ps);
	split_name(cs, &cp, &cn);
	mis = ps && cn && !same_name(cn, cp, ps, pp);
	free(pp);
	free(ps);
	free(cp);
	free(cn);
	return mis;
}

int st_check_place(st_state *s, const char *place, unsigned flags, st_problems *out,
		   st_error *err)
{
	ST_ASSERT_ARG_AS(s, "state");
	ST_ASSERT_ARG(out);
	if (flags & ~(unsigned)(ST_PLACE_ALL | ST_PLACE_EXPORTS))
		return st__bad_flags(err, flags, ST_PLACE_ALL | ST_PLACE_EXPORTS,
				     "ST_PLACE_ALL and ST_PLACE_EXPORTS");
	const char *cs = st_state_checkpoint_stack(s);
	const char *csptr = st_state_version(s) == 0 ? "/stack" : "/checkpoint/stack";
	char *pp = NULL, *ps = NULL, *cp = NULL, *cn = NULL, *full = NULL;
	int rc = ST_OK, agree = 0;

	if (place) {
		split_name(place, &pp, &ps);
		if (!ps)
			return st__err(err, ST_EINVAL, "'%s' is no stack name", place);
		/* as Pulumi names it: organization/PROJECT/STACK, or STACK (legacy) */
		full = pp ? st_asprintf("organization/%s/%s", pp, ps) : st_strdup(ps);
		if (!full) {
			free(pp);
			free(ps);
			return st__err(err, ST_ENOMEM, "out of memory");
		}
	}
	if (cs && *cs)
		split_name(cs, &cp, &cn);
	if (place && !(flags & ST_PLACE_EXPORTS) && st_state_envelope(s) == ST_ENVELOPE_EXPORT) {
		rc = st_problems_add(out, ST_SEV_ERROR, "place/export-in-backend", "/deployment", NULL,
				     "a DIY backend holds checkpoints ({\"version\", \"checkpoint\"}) "
				     "and this is a stack export ({\"version\", \"deployment\"}): "
				     "Pulumi cannot load it (failed to load checkpoint: unexpected end "
				     "of JSON input); write it as a checkpoint (statetool convert "
				     "--envelope checkpoint)");
		goto out;
	}
	if (place && cn) {
		agree = same_name(cn, cp, ps, pp);
		if (!agree && (rc = st_problems_add(out, ST_SEV_WARNING, "place/stack-mismatch", csptr,
						     NULL,
						     "the checkpoint names stack '%s', but it is the "
						     "state of stack '%s' (where it lies in its "
						     "backend; Pulumi goes by that, and writes '%s' "
						     "at its next save)",
						     cs, full, full)) != ST_OK)
			goto out;
	}
	/* The URNs against the place; when the checkpoint agrees with the place, the integrity
	 * check's urn/stack-mismatch reports them already, unless all are asked for. */
	if (place && (!agree || (flags & ST_PLACE_ALL)))
		rc = check_urns(s, ps, pp, "it is the state of", out);
	else if (!place && cn && (flags & ST_PLACE_ALL))
		rc = check_urns(s, cn, cp, "the checkpoint names", out);
out:
	free(full);
	free(pp);
	free(ps);
	free(cp);
	free(cn);
	return rc == ST_OK ? ST_OK : st__err(err, ST_ENOMEM, "out of memory");
}
