/*
 * bench/gen: writes a realistic, seeded Pulumi deployment state for benchmarks.
 *
 *   gen N [SEED] [--checkpoint] [--stack NAME] [--project NAME] [--plaintext-secrets]
 *       [--secret-every K] [--small-values K] [--prefix P] > state.json
 *   (--small-values K: each resource's inputs and outputs also carry a map "labels" of K small
 *   values, integers, booleans and short strings: the shape that costs a tree the most memory)
 *   (--prefix P names the resources P-svc-N and P-r-N: a second stack whose names differ)
 *   gen --import-specs N > specs.json   an import file of N resources with outputs
 *
 * The state has a root stack, a handful of providers (default and explicit, several versions),
 * components (one per ~20 resources) holding custom resources, nested inputs and outputs
 * (tags, rules, policies as JSON strings), dependencies and property dependencies on earlier
 * resources, passphrase-shaped secrets (about one resource in ten), created/modified stamps, and
 * a few protected resources. Written as `pulumi stack export` does (4-space indented, newline),
 * or compact in the DIY checkpoint envelope with --checkpoint. About 2.8 KB per resource, so
 * 100,000 resources make a ~285 MB file. Integrity holds: everything points backwards.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static unsigned pick(unsigned n)
{
	return (unsigned)(rnd() % n);
}

static int compact;
static int plaintext_secrets;
static int secret_every = 10;
static int small_values;
static int depth_base;

static void nl(int depth)
{
	if (compact)
		return;
	putchar('\n');
	for (int i = 0; i < depth + depth_base; i++)
		fputs("    ", stdout);
}

static const char *sep(void) { return compact ? ":" : ": "; }

static void hex(char *out, int n)
{
	for (int i = 0; i < n; i++)
		out[i] = "0123456789abcdef"[pick(16)];
	out[n] = '\0';
}

static void b64(char *out, int n)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	for (int i = 0; i < n; i++)
		out[i] = a[pick(64)];
	out[n] = '\0';
}

static const char *const types[] = {"aws:s3/bucket:Bucket", "aws:ec2/instance:Instance",
				    "aws:iam/role:Role", "aws:lambda/function:Function",
				    "aws:ec2/securityGroup:SecurityGroup", "gcp:storage/bucket:Bucket",
				    "random:index/randomPassword:RandomPassword",
				    "aws:rds/instance:Instance"};
static const char *const regions[] = {"us-east-1", "us-west-2", "eu-west-1", "ap-south-1"};

typedef struct gen {
	const char *stack, *project;
	const char *prefix; /* "" or "P-" */
	char **urns;
	int nurns;
	char *providers[6];
	int nprov;
} gen;

/* The properties of a custom resource: a bag of realistic fields. */
static void props(gen *g, int i, int depth, int outputs, int secret)
{
	char h[48], b[64];
	putchar('{');
	nl(depth + 1);
	printf("\"arn\"%s\"arn:aws:service:%s:123456789012:res/%s-%d\",", sep(), regions[i % 4],
	       g->project, i);
	nl(depth + 1);
	printf("\"enabled\"%s%s,", sep(), i % 3 ? "true" : "false");
	if (outputs) {
		nl(depth + 1);
		b64(b, 40);
		printf("\"etag\"%s\"%s\",", sep(), b);
		nl(depth + 1);
		printf("\"id\"%s\"res-%d\",", sep(), i);
	}
	if (small_values) {
		nl(depth + 1);
		printf("\"labels\"%s{", sep());
		for (int k = 0; k < small_values; k++) {
			nl(depth + 2);
			printf("\"l%04d\"%s", k, sep());
			if (k % 3 == 0)
				printf("%d", (int)pick(1000));
			else if (k % 3 == 1)
				printf("%s", pick(2) ? "true" : "false");
			else
				printf("\"v%d\"", (int)pick(100));
			printf("%s", k + 1 < small_values ? "," : "");
		}
		nl(depth + 1);
		printf("},");
	}
	nl(depth + 1);
	hex(h, 16);
	printf("\"name\"%s\"%s-%d-%s <%s> & co\",", sep(), g->project, i, h, g->stack);
	nl(depth + 1);
	printf("\"policy\"%s\"{\\\"Version\\\":\\\"2012-10-17\\\",\\\"Statement\\\":[{\\\"Effect\\\":"
	       "\\\"Allow\\\",\\\"Action\\\":[\\\"s3:GetObject\\\",\\\"s3:PutObject\\\"],"
	       "\\\"Resource\\\":\\\"arn:aws:s3:::bucket-%d/*\\\"}]}\",",
	       sep(), i);
	nl(depth + 1);
	printf("\"port\"%s%d,", sep(), 1024 + (int)pick(60000));
	nl(depth + 1);
	printf("\"ratio\"%s%d.%d,", sep(), (int)pick(10), 1 + (int)pick(9));
	nl(depth + 1);
	printf("\"region\"%s\"%s\",", sep(), regions[i % 4]);
	nl(depth + 1);
	printf("\"rules\"%s[", sep());
	for (int r = 0; r < 2; r++) {
		nl(depth + 2);
		printf("{");
		nl(depth + 3);
		printf("\"cidrBlocks\"%s[", sep());
		nl(depth + 4);
		printf("\"10.%d.%d.0/24\"", (int)pick(256), (int)pick(256));
		nl(depth + 3);
		printf("],");
		nl(depth + 3);
		printf("\"fromPort\"%s%d,", sep(), 80 + r);
		nl(depth + 3);
		printf("\"protocol\"%s\"tcp\",", sep());
		nl(depth + 3);
		printf("\"toPort\"%s%d", sep(), 8080 + r);
		nl(depth + 2);
		printf("}%s", r < 1 ? "," : "");
	}
	nl(depth + 1);
	printf("],");
	if (secret) {
		char nonce[20], ct[48];
		b64(nonce, 16);
		b64(ct, 40);
		nl(depth + 1);
		printf("\"secretValue\"%s{", sep());
		nl(depth + 2);
		printf("\"4dabf18193072939515e22adb298388d\"%s\"1b47061264138c4ac30d75fd1eb44270\",",
		       sep());
		nl(depth + 2);
		if (plaintext_secrets)
			printf("\"plaintext\"%s\"\\\"s3cr3t-%d-%s\\\"\"", sep(), i, nonce);
		else
			printf("\"ciphertext\"%s\"v1:%s:%s\"", sep(), nonce, ct);
		nl(depth + 1);
		printf("},");
	}
	nl(depth + 1);
	printf("\"tags\"%s{", sep());
	nl(depth + 2);
	printf("\"Environment\"%s\"%s\",", sep(), g->stack);
	nl(depth + 2);
	printf("\"Owner\"%s\"team-%d\",", sep(), (int)pick(40));
	nl(depth + 2);
	printf("\"Project\"%s\"%s\"", sep(), g->project);
	nl(depth + 1);
	printf("}");
	nl(depth);
	putchar('}');
}

static void str_field(int depth, const char *k, const char *v, int comma)
{
	nl(depth);
	printf("\"%s\"%s\"%s\"%s", k, sep(), v, comma ? "," : "");
}

int main(int argc, char **argv)
{
	gen g = {0};
	int n = 1000, checkpoint = 0, ncomp, i;
	char root[256], buf[1024];

	g.stack = "dev";
	g.prefix = "";
	g.project = "bench";
	if (argc == 3 && !strcmp(argv[1], "--import-specs")) {
		int k = atoi(argv[2]);
		printf("{\"resources\":[");
		for (i = 0; i < k; i++)
			printf("%s{\"type\":\"aws:s3/bucket:Bucket\",\"name\":\"imported-%d\","
			       "\"id\":\"imp-%d\",\"version\":\"6.0.0\",\"outputs\":{\"arn\":"
			       "\"arn:aws:s3:::imp-%d\",\"bucket\":\"imp-%d\"}}",
			       i ? "," : "", i, i, i, i);
		printf("]}\n");
		return 0;
	}
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--plaintext-secrets"))
			plaintext_secrets = 1;
		else if (!strcmp(argv[i], "--secret-every") && i + 1 < argc)
			secret_every = atoi(argv[++i]) > 0 ? atoi(argv[i]) : 1;
		else if (!strcmp(argv[i], "--small-values") && i + 1 < argc)
			small_values = atoi(argv[++i]) > 0 ? atoi(argv[i]) : 0;
		else if (!strcmp(argv[i], "--checkpoint"))
			checkpoint = 1;
		else if (!strcmp(argv[i], "--stack") && i + 1 < argc)
			g.stack = argv[++i];
		else if (!strcmp(argv[i], "--project") && i + 1 < argc)
			g.project = argv[++i];
		else if (!strcmp(argv[i], "--prefix") && i + 1 < argc) {
			static char pfx[64];
			snprintf(pfx, sizeof(pfx), "%s-", argv[++i]);
			g.prefix = pfx;
		}
		else if (i == 1)
			n = atoi(argv[i]);
		else
			rng_state ^= strtoull(argv[i], NULL, 10) * 0x9e3779b97f4a7c15ULL + 1;
	}
	compact = checkpoint;
	g.urns = calloc((size_t)n + 16, sizeof(char *));
	snprintf(root, sizeof(root), "urn:pulumi:%s::%s::pulumi:pulumi:Stack::%s-%s", g.stack,
		 g.project, g.project, g.stack);

	if (checkpoint)
		printf("{\"version\":3,\"checkpoint\":{\"stack\":\"organization/%s/%s\",\"latest\":{",
		       g.project, g.stack);
	else
		printf("{\n    \"version\": 3,\n    \"deployment\": {");
	depth_base = checkpoint ? 0 : 1;
	nl(1);
	printf("\"manifest\"%s{", sep());
	str_field(2, "time", "2026-11-01T10:00:00.123456789Z", 1);
	/* sha256("v3.200.0") */
	str_field(2, "magic", "fab95cc1ec33ad4842e4ce440b669bd522c568e8a7a8934e58ff24ba38128033", 1);
	str_field(2, "version", "v3.200.0", 0);
	nl(1);
	printf("},");
	nl(1);
	printf("\"secrets_providers\"%s{", sep());
	str_field(2, "type", "passphrase", 1);
	nl(2);
	printf("\"state\"%s{", sep());
	str_field(3, "salt", "v1:AQIDBAUGBwg=:v1:AAECAwQFBgcICQoL:IYoikRHf10peey65kizoQjW7FClwEA==", 0);
	nl(2);
	printf("}");
	nl(1);
	printf("},");
	nl(1);
	printf("\"resources\"%s[", sep());

	/* root stack */
	nl(2);
	printf("{");
	str_field(3, "urn", root, 1);
	nl(3);
	printf("\"custom\"%sfalse,", sep());
	str_field(3, "type", "pulumi:pulumi:Stack", 1);
	str_field(3, "created", "2026-01-01T00:00:00Z", 1);
	str_field(3, "modified", "2026-01-01T00:00:00Z", 0);
	nl(2);
	printf("}");

	/* providers */
	static const char *const pk[] = {"aws", "aws", "gcp", "random", "aws", "kubernetes"};
	static const char *const pv[] = {"6.0.0", "6.12.1", "7.2.0", "4.16.0", "6.0.0", "4.11.0"};
	g.nprov = 6;
	for (int p = 0; p < g.nprov; p++) {
		char name[64], id[40];
		snprintf(name, sizeof(name), p == 4 ? "explicit-eu" : "default_%s", pv[p]);
		for (char *c = name; *c; c++)
			if (*c == '.')
				*c = '_';
		snprintf(buf, sizeof(buf), "urn:pulumi:%s::%s::pulumi:providers:%s::%s", g.stack,
			 g.project, pk[p], name);
		snprintf(id, sizeof(id), "%08x-0000-4000-8000-%012x", (unsigned)pick(1u << 31), p);
		g.providers[p] = malloc(strlen(buf) + strlen(id) + 3);
		sprintf(g.providers[p], "%s::%s", buf, id);
		printf(",");
		nl(2);
		printf("{");
		str_field(3, "urn", buf, 1);
		nl(3);
		printf("\"custom\"%strue,", sep());
		str_field(3, "id", id, 1);
		snprintf(buf, sizeof(buf), "pulumi:providers:%s", pk[p]);
		str_field(3, "type", buf, 1);
		nl(3);
		printf("\"inputs\"%s{", sep());
		str_field(4, "region", regions[p % 4], 1);
		str_field(4, "version", pv[p], 0);
		nl(3);
		printf("},");
		nl(3);
		printf("\"outputs\"%s{", sep());
		str_field(4, "region", regions[p % 4], 1);
		str_field(4, "version", pv[p], 0);
		nl(3);
		printf("},");
		str_field(3, "created", "2026-01-01T00:00:00Z", 1);
		str_field(3, "modified", "2026-01-01T00:00:00Z", 0);
		nl(2);
		printf("}");
	}

	/* components and their children */
	ncomp = n / 20 + 1;
	int made = 0, comp = -1;
	char comp_urn[512] = "", comp_qt[256] = "";
	for (i = 0; made < n; i++) {
		int is_comp = made % 20 == 0 && comp + 1 < ncomp;
		printf(",");
		nl(2);
		printf("{");
		if (is_comp) {
			comp++;
			snprintf(comp_qt, sizeof(comp_qt), "bench:index:Service");
			snprintf(comp_urn, sizeof(comp_urn), "urn:pulumi:%s::%s::%s::%ssvc-%d",
				 g.stack, g.project, comp_qt, g.prefix, comp);
			str_field(3, "urn", comp_urn, 1);
			nl(3);
			printf("\"custom\"%sfalse,", sep());
			str_field(3, "type", comp_qt, 1);
			str_field(3, "parent", root, 1);
			str_field(3, "created", "2026-02-01T00:00:00Z", 1);
			str_field(3, "modified", "2026-02-01T00:00:00Z", 0);
			g.urns[g.nurns++] = strdup(comp_urn);
		} else {
			const char *ty = types[pick(8)];
			int p = (int)pick(5);
			int secret = made % secret_every == 3 % secret_every;
			char urn[1024], id[64];
			snprintf(urn, sizeof(urn), "urn:pulumi:%s::%s::%s$%s::%sr-%d", g.stack,
				 g.project, comp_qt, ty, g.prefix, made);
			str_field(3, "urn", urn, 1);
			nl(3);
			printf("\"custom\"%strue,", sep());
			snprintf(id, sizeof(id), "res-%d-%08x", made, (unsigned)pick(1u << 31));
			str_field(3, "id", id, 1);
			str_field(3, "type", ty, 1);
			nl(3);
			printf("\"inputs\"%s", sep());
			props(&g, made, 3, 0, secret);
			printf(",");
			nl(3);
			printf("\"outputs\"%s", sep());
			props(&g, made, 3, 1, secret);
			printf(",");
			str_field(3, "parent", comp_urn, 1);
			if (made % 50 == 7) {
				nl(3);
				printf("\"protect\"%strue,", sep());
			}
			/* dependencies on up to three earlier resources */
			int nd = g.nurns ? (int)pick(4) : 0;
			const char *deps[3];
			for (int d = 0; d < nd; d++)
				deps[d] = g.urns[pick((unsigned)g.nurns)];
			if (nd) {
				nl(3);
				printf("\"dependencies\"%s[", sep());
				for (int d = 0; d < nd; d++) {
					nl(4);
					printf("\"%s\"%s", deps[d], d + 1 < nd ? "," : "");
				}
				nl(3);
				printf("],");
			}
			str_field(3, "provider", g.providers[p], 1);
			nl(3);
			printf("\"propertyDependencies\"%s{", sep());
			static const char *const keys[] = {"arn", "name", "tags"};
			for (int k = 0; k < 3; k++) {
				nl(4);
				printf("\"%s\"%s[", keys[k], sep());
				if (nd && k == 1) {
					nl(5);
					printf("\"%s\"", deps[0]);
					nl(4);
				}
				printf("]%s", k < 2 ? "," : "");
			}
			nl(3);
			printf("},");
			str_field(3, "created", "2026-03-01T12:00:00Z", 1);
			str_field(3, "modified", "2026-03-02T12:00:00Z", 0);
			g.urns[g.nurns++] = strdup(urn);
		}
		nl(2);
		printf("}");
		made++;
	}
	nl(1);
	printf("],");
	nl(1);
	printf("\"metadata\"%s{}", sep());
	if (checkpoint) {
		printf("}}}");
	} else {
		printf("\n    }\n}\n");
	}
	return 0;
}
