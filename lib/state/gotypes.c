/*
 * Pulumi's Go types as encoding/json sees them: the structs (sdk/go/common/apitype/core.go,
 * pkg/cmd/pulumi/operations/import.go) with their JSON field names in declaration order,
 * omitempty and pointer fields, and each field's Go type (its kind and reflect's name, for
 * Go's messages). Used to decode (decode.c) and to write as Go marshals (canon.c).
 */
#include "state/gotypes.h"

#include <stdlib.h>

#define SCALAR(id, kind, name) static const gtype id = {kind, name, NULL, NULL, 0}
#define SLICE(id, name, el) static const gtype id = {GK_SLICE, name, &el, NULL, 0}
#define MAP(id, name, el) static const gtype id = {GK_MAP, name, &el, NULL, 0}
#define STRUCT(id, name, f)                                                                  \
	static const gtype id = {GK_STRUCT, name, NULL, f, sizeof(f) / sizeof(f[0]) - 1};       \
	_Static_assert(sizeof(f) / sizeof(f[0]) - 1 <= 64, "at most 64 fields")

SCALAR(T_ANY, GK_ANY, "interface {}");
SCALAR(T_RAW, GK_RAW, "json.RawMessage");
SCALAR(T_STRING, GK_STRING, "string");
SCALAR(T_QNAME, GK_STRING, "tokens.QName");
SCALAR(T_URN, GK_STRING, "urn.URN");
SCALAR(T_ID, GK_STRING, "resource.ID");
SCALAR(T_TYPE, GK_STRING, "tokens.Type");
SCALAR(T_PKEY, GK_STRING, "resource.PropertyKey");
SCALAR(T_OPTYPE, GK_STRING, "apitype.OperationType");
SCALAR(T_KIND, GK_STRING, "apitype.PluginKind");
SCALAR(T_EXTREF, GK_STRING, "apitype.ExtensionRef");
SCALAR(T_BOOL, GK_BOOL, "bool");
SCALAR(T_INT, GK_INT, "int");
SCALAR(T_FLOAT, GK_FLOAT, "float64");
SCALAR(T_TIME, GK_TIME, "time.Time");
SCALAR(T_TIMEPTR, GK_TIMEPTR, "time.Time");
SCALAR(T_SEMVER, GK_SEMVER, "semver.Version");
SCALAR(T_SEMVERPTR, GK_SEMVERPTR, "semver.Version");
SCALAR(T_PATH, GK_PATH, "resource.PropertyPath");
SCALAR(T_UINT8, GK_UINT8, "uint8");
static const gtype T_BYTES = {GK_BYTES, "[]uint8", &T_UINT8, NULL, 0};
SCALAR(T_CONFIG, GK_CONFIG, "config.Map");
SLICE(T_STRINGS, "[]string", T_STRING);
SLICE(T_URNS, "[]urn.URN", T_URN);
SLICE(T_PKEYS, "[]resource.PropertyKey", T_PKEY);
SLICE(T_PATHS, "[]resource.PropertyPath", T_PATH);
MAP(T_PROPS, "map[string]interface {}", T_ANY);
MAP(T_PROPDEPS, "map[resource.PropertyKey][]urn.URN", T_URNS);
MAP(T_HOOKS, "map[resource.HookType][]string", T_STRINGS);
MAP(T_STRMAP, "map[string]string", T_STRING);
MAP(T_URNMAP, "map[string]urn.URN", T_URN);
MAP(T_PROVINPUTS, "map[string]map[string]interface {}", T_PROPS);

static const gfield F_TIMEOUTS[] = {FLD("create", T_FLOAT, F_OMIT),
	FLD("update", T_FLOAT, F_OMIT), FLD("delete", T_FLOAT, F_OMIT), FLD("read", T_FLOAT, F_OMIT),
	FEND};
STRUCT(T_TIMEOUTS, "resource.CustomTimeouts", F_TIMEOUTS);
static const gfield F_FRAME[] = {FLD("sourcePosition", T_STRING, F_OMIT), FEND};
STRUCT(T_FRAME, "apitype.StackFrameV1", F_FRAME);
SLICE(T_FRAMES, "[]apitype.StackFrameV1", T_FRAME);

static const gfield F_RES1[] = {FLD("urn", T_URN, 0), FLD("custom", T_BOOL, 0),
	FLD("delete", T_BOOL, F_OMIT), FLD("id", T_ID, F_OMIT), FLD("type", T_TYPE, 0),
	FLD("inputs", T_PROPS, F_OMIT), FLD("defaults", T_PROPS, F_OMIT),
	FLD("outputs", T_PROPS, F_OMIT), FLD("parent", T_URN, F_OMIT), FLD("protect", T_BOOL, F_OMIT),
	FLD("dependencies", T_URNS, 0), FLD("initErrors", T_STRINGS, 0), FEND};
STRUCT(T_RES1, "apitype.ResourceV1", F_RES1);
static const gfield F_RES2[] = {FLD("urn", T_URN, 0), FLD("custom", T_BOOL, 0),
	FLD("delete", T_BOOL, F_OMIT), FLD("id", T_ID, F_OMIT), FLD("type", T_TYPE, 0),
	FLD("inputs", T_PROPS, F_OMIT), FLD("outputs", T_PROPS, F_OMIT), FLD("parent", T_URN, F_OMIT),
	FLD("protect", T_BOOL, F_OMIT), FLD("external", T_BOOL, F_OMIT),
	FLD("dependencies", T_URNS, F_OMIT), FLD("initErrors", T_STRINGS, F_OMIT),
	FLD("provider", T_STRING, F_OMIT), FEND};
STRUCT(T_RES2, "apitype.ResourceV2", F_RES2);
static const gfield F_RES3[] = {FLD("urn", T_URN, 0), FLD("custom", T_BOOL, 0),
	FLD("delete", T_BOOL, F_OMIT), FLD("id", T_ID, F_OMIT), FLD("type", T_TYPE, 0),
	FLD("inputs", T_PROPS, F_OMIT), FLD("outputs", T_PROPS, F_OMIT), FLD("parent", T_URN, F_OMIT),
	FLD("protect", T_BOOL, F_OMIT), FLD("taint", T_BOOL, F_OMIT), FLD("external", T_BOOL, F_OMIT),
	FLD("dependencies", T_URNS, F_OMIT), FLD("initErrors", T_STRINGS, F_OMIT),
	FLD("provider", T_STRING, F_OMIT), FLD("propertyDependencies", T_PROPDEPS, F_OMIT),
	FLD("pendingReplacement", T_BOOL, F_OMIT), FLD("additionalSecretOutputs", T_PKEYS, F_OMIT),
	FLD("aliases", T_URNS, F_OMIT), FLD("customTimeouts", T_TIMEOUTS, F_OMIT | F_PTR),
	FLD("importID", T_ID, F_OMIT), FLD("retainOnDelete", T_BOOL, F_OMIT),
	FLD("deletedWith", T_URN, F_OMIT), FLD("replaceWith", T_URNS, F_OMIT),
	FLD("created", T_TIMEPTR, F_OMIT | F_PTR), FLD("modified", T_TIMEPTR, F_OMIT | F_PTR),
	FLD("sourcePosition", T_STRING, F_OMIT), FLD("stackTrace", T_FRAMES, F_OMIT),
	FLD("ignoreChanges", T_STRINGS, F_OMIT), FLD("hideDiff", T_PATHS, F_OMIT),
	FLD("replaceOnChanges", T_STRINGS, F_OMIT), FLD("replacementTrigger", T_ANY, F_OMIT),
	FLD("refreshBeforeUpdate", T_BOOL, F_OMIT), FLD("viewOf", T_URN, F_OMIT),
	FLD("resourceHooks", T_HOOKS, F_OMIT), FLD("extensionRef", T_EXTREF, F_OMIT),
	FLD("snippetID", T_STRING, F_OMIT), FEND};
STRUCT(T_RES3, "apitype.ResourceV3", F_RES3);
SLICE(T_RES1S, "[]apitype.ResourceV1", T_RES1);
SLICE(T_RES2S, "[]apitype.ResourceV2", T_RES2);
SLICE(T_RES3S, "[]apitype.ResourceV3", T_RES3);

static const gfield F_OP1[] = {FLD("resource", T_RES2, 0), FLD("type", T_OPTYPE, 0), FEND};
STRUCT(T_OP1, "apitype.OperationV1", F_OP1);
static const gfield F_OP2[] = {FLD("resource", T_RES3, 0), FLD("type", T_OPTYPE, 0), FEND};
STRUCT(T_OP2, "apitype.OperationV2", F_OP2);
SLICE(T_OP1S, "[]apitype.OperationV1", T_OP1);
SLICE(T_OP2S, "[]apitype.OperationV2", T_OP2);

static const gfield F_PLUGIN[] = {FLD("name", T_STRING, 0), FLD("path", T_STRING, 0),
	FLD("type", T_KIND, 0), FLD("version", T_STRING, 0), FEND};
STRUCT(T_PLUGIN, "apitype.PluginInfoV1", F_PLUGIN);
SLICE(T_PLUGINS, "[]apitype.PluginInfoV1", T_PLUGIN);
static const gfield F_MANIFEST[] = {FLD("time", T_TIME, 0), FLD("magic", T_STRING, 0),
	FLD("version", T_STRING, 0), FLD("plugins", T_PLUGINS, F_OMIT), FEND};
STRUCT(T_MANIFEST, "apitype.ManifestV1", F_MANIFEST);
static const gfield F_SECRETS[] = {FLD("type", T_STRING, 0), FLD("state", T_RAW, F_OMIT), FEND};
STRUCT(T_SECRETS, "apitype.SecretsProvidersV1", F_SECRETS);
static const gfield F_INTEGRITY[] = {FLD("version", T_STRING, F_OMIT),
	FLD("command", T_STRING, F_OMIT), FLD("error", T_STRING, F_OMIT),
	FLD("env_vars", T_STRMAP, F_OMIT), FEND};
STRUCT(T_INTEGRITY, "apitype.SnapshotIntegrityErrorMetadataV1", F_INTEGRITY);
static const gfield F_METADATA[] = {FLD("integrity_error", T_INTEGRITY, F_OMIT | F_PTR), FEND};
STRUCT(T_METADATA, "apitype.SnapshotMetadataV1", F_METADATA);
static const gfield F_PARAM[] = {FLD("name", T_STRING, 0), FLD("version", T_SEMVER, 0),
	FLD("value", T_BYTES, 0), FEND};
STRUCT(T_PARAM, "apitype.ParameterizationDescriptorV1", F_PARAM);
static const gfield F_DESCRIPTOR[] = {FLD("name", T_STRING, 0),
	FLD("version", T_SEMVERPTR, F_OMIT | F_PTR), FLD("downloadURL", T_STRING, F_OMIT),
	FLD("parameterization", T_PARAM, F_OMIT | F_PTR), FEND};
STRUCT(T_DESCRIPTOR, "apitype.PackageDescriptorV1", F_DESCRIPTOR);
static const gfield F_SNIPPET[] = {FLD("uuid", T_STRING, 0), FLD("name", T_STRING, 0),
	FLD("type", T_STRING, 0), FLD("code", T_STRING, 0), FLD("descriptor", T_DESCRIPTOR, 0),
	FLD("references", T_STRMAP, F_OMIT), FEND};
STRUCT(T_SNIPPET, "apitype.SnippetV1", F_SNIPPET);
SLICE(T_SNIPPETS, "[]apitype.SnippetV1", T_SNIPPET);
static const gfield F_EXTENSION[] = {FLD("name", T_STRING, 0), FLD("version", T_STRING, 0),
	FLD("value", T_BYTES, 0), FEND};
STRUCT(T_EXTENSION, "apitype.Extension", F_EXTENSION);
MAP(T_EXTENSIONS, "map[apitype.ExtensionRef]apitype.Extension", T_EXTENSION);

static const gfield F_DEP1[] = {FLD("manifest", T_MANIFEST, 0),
	FLD("resources", T_RES1S, F_OMIT), FEND};
STRUCT(T_DEP1, "apitype.DeploymentV1", F_DEP1);
static const gfield F_DEP2[] = {FLD("manifest", T_MANIFEST, 0),
	FLD("resources", T_RES2S, F_OMIT), FLD("pending_operations", T_OP1S, F_OMIT), FEND};
STRUCT(T_DEP2, "apitype.DeploymentV2", F_DEP2);
static const gfield F_DEP3[] = {FLD("manifest", T_MANIFEST, 0),
	FLD("secrets_providers", T_SECRETS, F_OMIT | F_PTR), FLD("resources", T_RES3S, F_OMIT),
	FLD("pending_operations", T_OP2S, F_OMIT), FLD("metadata", T_METADATA, 0),
	FLD("snippets", T_SNIPPETS, F_OMIT), FLD("extensions", T_EXTENSIONS, F_OMIT), FEND};
STRUCT(T_DEP3, "apitype.DeploymentV3", F_DEP3);

static const gfield F_CP1[] = {FLD("stack", T_QNAME, 0), FLD("config", T_CONFIG, F_OMIT),
	FLD("latest", T_DEP1, F_OMIT | F_PTR), FEND};
STRUCT(T_CP1, "apitype.CheckpointV1", F_CP1);
static const gfield F_CP2[] = {FLD("stack", T_QNAME, 0), FLD("config", T_CONFIG, F_OMIT),
	FLD("latest", T_DEP2, F_OMIT | F_PTR), FEND};
STRUCT(T_CP2, "apitype.CheckpointV2", F_CP2);
static const gfield F_CP3[] = {FLD("stack", T_QNAME, 0), FLD("config", T_CONFIG, F_OMIT),
	FLD("latest", T_DEP3, F_OMIT | F_PTR), FEND};
STRUCT(T_CP3, "apitype.CheckpointV3", F_CP3);

static const gfield F_VERSIONED[] = {FLD("version", T_INT, 0),
	FLD("features", T_STRINGS, F_OMIT), FLD("checkpoint", T_RAW, 0), FEND};
STRUCT(T_VERSIONED, "apitype.VersionedCheckpoint", F_VERSIONED);
static const gfield F_UNTYPED[] = {FLD("version", T_INT, F_OMIT),
	FLD("features", T_STRINGS, F_OMIT), FLD("deployment", T_RAW, F_OMIT), FEND};
STRUCT(T_UNTYPED, "apitype.UntypedDeployment", F_UNTYPED);

static const gfield F_IPARAM[] = {FLD("pluginName", T_STRING, 0),
	FLD("pluginVersion", T_STRING, 0), FLD("value", T_BYTES, 0), FEND};
STRUCT(T_IPARAM, "operations.importParameterization", F_IPARAM);
static const gfield F_IEXT[] = {FLD("name", T_STRING, 0), FLD("version", T_STRING, 0),
	FLD("value", T_BYTES, 0), FEND};
STRUCT(T_IEXT, "operations.importExtension", F_IEXT);
static const gfield F_ISPEC[] = {FLD("type", T_TYPE, 0), FLD("name", T_STRING, 0),
	FLD("id", T_ID, 0), FLD("parent", T_STRING, 0), FLD("provider", T_STRING, 0),
	FLD("version", T_STRING, 0), FLD("pluginDownloadUrl", T_STRING, 0),
	FLD("properties", T_STRINGS, 0), FLD("component", T_BOOL, 0), FLD("remote", T_BOOL, 0),
	FLD("inputs", T_PROPS, 0), FLD("outputs", T_PROPS, 0), FLD("logicalName", T_STRING, 0),
	FLD("parameterization", T_IPARAM, 0), FLD("extension", T_IEXT, 0), FEND};
STRUCT(T_ISPEC, "operations.importSpec", F_ISPEC);
SLICE(T_ISPECS, "[]operations.importSpec", T_ISPEC);
static const gfield F_IMPORT[] = {FLD("nameTable", T_URNMAP, 0), FLD("resources", T_ISPECS, 0),
	FLD("providerInputs", T_PROVINPUTS, 0), FEND};
STRUCT(T_IMPORT, "operations.importFile", F_IMPORT);

const gtype *st__go_type(st__groot r)
{
	switch (r) {
	case ST__G_VERSIONED: return &T_VERSIONED;
	case ST__G_UNTYPED: return &T_UNTYPED;
	case ST__G_CHECKPOINT_V1: return &T_CP1;
	case ST__G_CHECKPOINT_V2: return &T_CP2;
	case ST__G_CHECKPOINT_V3: return &T_CP3;
	case ST__G_DEPLOYMENT_V1: return &T_DEP1;
	case ST__G_DEPLOYMENT_V2: return &T_DEP2;
	case ST__G_DEPLOYMENT_V3: return &T_DEP3;
	case ST__G_IMPORT: return &T_IMPORT;
	}
	return &T_ANY;
}


int st__go_is_resource(const gtype *t)
{
	return t == &T_RES1 || t == &T_RES2 || t == &T_RES3;
}

/* ---- a null Go takes for the zero value ---- */

/* The field of struct t a key names: exact first, then as Go folds it. */
static const gfield *field_of(const gtype *t, const char *k, size_t kl)
{
	for (size_t i = 0; i < t->nfields; i++)
		if (t->fields[i].len == kl && !memcmp(k, t->fields[i].name, kl))
			return &t->fields[i];
	for (size_t i = 0; i < t->nfields; i++)
		if (st__go_key_is(k, kl, t->fields[i].name))
			return &t->fields[i];
	return NULL;
}

/* What a json.RawMessage member of an envelope is decoded into later (NULL: not known here). */
static const gtype *raw_target(const gfield *f, int version)
{
	if (!strcmp(f->name, "deployment"))
		return st__go_type(version <= 1   ? ST__G_DEPLOYMENT_V1
				   : version == 2 ? ST__G_DEPLOYMENT_V2
						  : ST__G_DEPLOYMENT_V3);
	if (!strcmp(f->name, "checkpoint"))
		return st__go_type(version <= 1   ? ST__G_CHECKPOINT_V1
				   : version == 2 ? ST__G_CHECKPOINT_V2
						  : ST__G_CHECKPOINT_V3);
	return NULL;
}

/* One token of a JSON Pointer (from just after its '/'), unescaped into tok (of `cap` bytes,
 * NUL-terminated); its end in *next. -1 when it does not fit. */
static int pointer_token(const char *p, const char **next, char *tok, size_t cap)
{
	size_t n = 0;
	for (; *p && *p != '/'; p++) {
		char ch = *p;
		if (ch == '~' && (p[1] == '0' || p[1] == '1'))
			ch = *++p == '0' ? '~' : '/';
		if (n + 1 >= cap)
			return -1;
		tok[n++] = ch;
	}
	tok[n] = '\0';
	*next = p;
	return (int)n;
}

const char *st__go_null_zero(const json_t *doc, st__groot root, int version,
			     const char *pointer)
{
	const gtype *t = st__go_type(root);
	const json_t *v = doc;
	const char *p = pointer;
	char tok[512];

	while (v && *p == '/') {
		int n = pointer_token(p + 1, &p, tok, sizeof(tok));
		char *end;
		if (n < 0)
			return NULL;
		if (t->k == GK_STRUCT && json_is_object(v)) {
			const gfield *f = field_of(t, tok, (size_t)n);
			if (!f)
				return NULL;
			v = json_object_getn(v, tok, (size_t)n);
			t = f->t->k == GK_RAW ? raw_target(f, version) : f->t;
		} else if (t->k == GK_MAP && json_is_object(v)) {
			v = json_object_getn(v, tok, (size_t)n);
			t = t->elem;
		} else if ((t->k == GK_SLICE || t->k == GK_BYTES) && json_is_array(v) && n &&
			   tok[0] >= '0' && tok[0] <= '9') {
			unsigned long i = strtoul(tok, &end, 10);
			v = *end ? NULL : json_array_get(v, i);
			t = t->elem;
		} else {
			return NULL;
		}
		if (!t)
			return NULL;
	}
	/* Go stores nothing for a null, except into an interface (nil, a value of its own), a
	 * json.RawMessage (decoded later), and a type whose UnmarshalJSON refuses "null"
	 * (semver.Version: decode.c's walk_text) */
	if (*p || !json_is_null(v) || t->k == GK_ANY || t->k == GK_RAW || t->k == GK_SEMVER)
		return NULL;
	return t->go;
}
