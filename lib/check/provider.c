/*
 * The deployment's secrets provider as Pulumi constructs it when it loads a state, with or
 * without ciphertexts in it (initializeSecretsManager in pkg/resource/stack/deployment.go;
 * OfType in pkg/backend/secrets/providers.go): a type Pulumi does not know, or a state its
 * provider cannot read (pkg/secrets/passphrase, service, cloud: json.Unmarshal into their
 * state structs; the passphrase salt's form), is an error with Pulumi's message. What needs a
 * passphrase, a login or a cloud key to find out is not checked here. A validation rule (the
 * Pulumi CLI's providers), not an integrity one: an edit may put a provider of the library
 * caller's own in (st_secrets_custom).
 */
#include "check/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The provider's own error `msg` (new, NULL: out of memory), as OfType wraps it; at the
 * provider's state (field "state") or the provider (field NULL). */
static void provider_error(ictx *c, const char *type, const char *field, char *msg)
{
	st_buf q, p;
	st_buf_init(&q);
	st_buf_init(&p);
	st__go_quote(&q, type, strlen(type));
	st_buf_printf(&p, "%s/secrets_providers%s%s", c->base, field ? "/" : "",
		      field ? field : "");
	if (q.oom || p.oom || !msg)
		NOMEM(c);
	else
		ERR("secrets/provider", p.data, NULL, "constructing secrets manager of type %s: %s",
		    q.data, msg);
	free(msg);
	st_buf_free(&q);
	st_buf_free(&p);
}

/* The passphrase salt as json.Unmarshal reads localSecretsManagerState {Salt string
 * `json:"salt"`}: each key that folds to "salt", in order (a null leaves the value as it
 * was); NULL when a value of another type stops it (reported). */
static const char *passphrase_salt(ictx *c, json_t *state, int *bad)
{
	const char *salt = "";
	*bad = 0;
	for (void *it = json_object_iter(state); it; it = json_object_iter_next(state, it)) {
		json_t *v = json_object_iter_value(it);
		if (!st__go_key_is(json_object_iter_key(it), json_object_iter_key_len(it), "salt"))
			continue;
		if (json_is_string(v)) {
			salt = json_string_value(v);
		} else if (!json_is_null(v) && !*bad) {
			/* the first such error is the one Unmarshal returns */
			*bad = 1;
			provider_error(c, "passphrase", "state",
				       st_asprintf("unmarshalling state: json: cannot unmarshal %s "
						   "into Go struct field "
						   "localSecretsManagerState.salt of type string",
						   st__go_json_kind(v)));
		}
	}
	return salt;
}

/* symmetricCrypterFromPhraseAndState's checks of the salt before it needs the passphrase. */
static void check_salt(ictx *c, const char *salt)
{
	const char *c1 = strchr(salt, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	char *e;
	if (!c2) {
		provider_error(c, "passphrase", "state",
			       st_strdup("constructing secrets manager: malformed state value"));
		return;
	}
	if (c1 - salt != 2 || memcmp(salt, "v1", 2)) {
		provider_error(c, "passphrase", "state",
			       st_strdup("constructing secrets manager: unknown state version"));
		return;
	}
	if ((e = st__go_base64_error(c1 + 1, (size_t)(c2 - c1 - 1)))) {
		provider_error(c, "passphrase", "state",
			       st_asprintf("constructing secrets manager: %s", e));
		free(e);
	}
}

static void check_provider(ictx *c, json_t *dep)
{
	static const char *const go_state[] = {"passphrase.localSecretsManagerState",
					       "service.serviceSecretsManagerState",
					       "cloud.cloudSecretsManagerState"};
	json_t *sp = json_object_get(dep, "secrets_providers"), *state;
	const char *type = st_json_str(sp, "type");
	int known, bad;

	/* versions 0 to 2 have no secrets_providers; no type: no provider (and no manager) */
	if (c->s->version < 3 || !type || !*type)
		return;
	known = !strcmp(type, "passphrase") ? 0
		: !strcmp(type, "service")  ? 1
		: !strcmp(type, "cloud")    ? 2
					    : -1;
	if (known < 0) {
		st_buf p, q;
		st_buf_init(&p);
		st_buf_init(&q);
		st_buf_printf(&p, "%s/secrets_providers/type", c->base);
		st__go_quote(&q, type, strlen(type));
		if (p.oom || q.oom)
			NOMEM(c);
		else if (!strcmp(type, "b64"))
			WARN("secrets/test-provider", p.data, NULL,
			     "the secrets provider \"b64\" is Pulumi's test provider: statetool reads "
			     "it, the Pulumi CLI does not (no known secrets provider for type %s)",
			     q.data);
		else
			ERR("secrets/provider", p.data, NULL,
			    "no known secrets provider for type %s", q.data);
		st_buf_free(&p);
		st_buf_free(&q);
		return;
	}
	/* json.Unmarshal of the raw state into the provider's struct */
	state = json_object_get(sp, "state");
	if (!state) {
		provider_error(c, type, NULL,
			       st_strdup("unmarshalling state: unexpected end of JSON input"));
		return;
	}
	if (!json_is_object(state) && !json_is_null(state)) {
		provider_error(c, type, "state",
			       st_asprintf("unmarshalling state: json: cannot unmarshal %s into Go "
					   "value of type %s",
					   st__go_json_kind(state), go_state[known]));
		return;
	}
	if (known == 0) {
		const char *salt = passphrase_salt(c, state, &bad);
		if (!bad)
			check_salt(c, salt);
	}
}

int st__secrets_provider_check(st_state *s, st_problems *out)
{
	json_t *dep = st_state_deployment(s);
	ictx c;
	memset(&c, 0, sizeof(c));
	c.s = s;
	c.out = out;
	c.base = st__deployment_pointer(s);
	if (dep)
		check_provider(&c, dep);
	return c.oom ? ST_ENOMEM : ST_OK;
}
