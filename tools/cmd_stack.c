/* statetool stack rename: a stack of a DIY backend under a new name (pulumi stack rename). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
	"usage: statetool stack rename [--backend URL] [--keep old|new] --stack NAME NEW_NAME\n"
	"\n"
	"Rename a stack of a DIY backend (any store), as `pulumi stack rename` does: NEW_NAME is\n"
	"a stack name or organization/NAME (the same project, as Pulumi reads both),\n"
	"PROJECT/NAME or organization/PROJECT/NAME (another project; the legacy layout has no\n"
	"projects). Every URN of the state that names the\n"
	"stack (and its project) is rewritten with Pulumi's rules: resources and pending\n"
	"operations, parents, dependencies, property dependencies, deletedWith, replaceWith,\n"
	"aliases, viewOf, provider references, and inside inputs and outputs the resource\n"
	"references, output values and plaintext secrets; the root stack resource becomes\n"
	"PROJECT-NAME; the checkpoint names the new stack. The history files move and are\n"
	"renamed as Pulumi renames them; the tags file and the backups follow the stack too\n"
	"(Pulumi leaves them behind), unchanged: restore --generation and diff take one as\n"
	"the rename makes it while the old name has no stack but its .bak. The old object is\n"
	"kept as its .bak.\n"
	"\n"
	"Both stacks are locked (Pulumi's locks: Pulumi refuses to update either meanwhile); a\n"
	"NEW_NAME that is taken is refused (\"a stack named ... already exists\"). A marker\n"
	"naming both stacks and both locks (<stack>.json.statetool-rename) lies beside each\n"
	"while the rename runs; the new object is written before the old one is removed. After\n"
	"an interruption, this command again, or any statetool command that loads either stack\n"
	"(unlock too, unless --force), first ends the rename (a note says so): completed when\n"
	"the new stack holds exactly what the rename makes of the old one (the rename's own\n"
	"locks removed), undone when the new stack was never written; refused (exit 1,\n"
	"nothing written) while another lock is on either stack, and when the new stack was\n"
	"written since: the message says which holds what, and --keep chooses.\n"
	"\n"
	"Options:\n"
	"  --backend URL        the backend (default $PULUMI_BACKEND_URL)\n"
	"  -s, --stack NAME     the stack to rename (NAME, PROJECT/NAME or\n"
	"                       organization/PROJECT/NAME; Pulumi's organization/NAME means\n"
	"                       the project Pulumi runs in, which statetool does not know:\n"
	"                       refused, name the project)\n"
	"  --keep old|new       for an interrupted rename of these stacks whose new stack was\n"
	"                       written since: old writes the old stack's state, renamed, over\n"
	"                       the new one's; new keeps the new stack as it is; either way the\n"
	"                       rename completes and the other state is kept as its .bak\n"
	"                       (ignored when there is nothing to choose)\n"
	"  -h, --help           show this help\n"
	"\n"
	"Prints \"Renamed OLD to NEW\" (Pulumi's words). pulumi stack rename also renames the\n"
	"project's Pulumi.<stack>.yaml; statetool changes the backend only and says so (a\n"
	"note on stderr): rename that file yourself. Exit status 0, 1 when the rename\n"
	"failed, 2 on a usage error.\n";

static int stack_rename(int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"stack", required_argument, NULL, 's'},
		{"keep", required_argument, NULL, 'k'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	const char *url = NULL, *stack = NULL;
	st_backend *b = NULL;
	char *oq = NULL, *nq = NULL;
	st_changes ch = {0};
	st_error err;
	unsigned keep = 0;
	int c, rc = EXIT_OK;

	st_error_clear(&err);
	while ((c = cli_getopt(argc, argv, "hs:", opts)) != -1) {
		switch (c) {
		case OPT_BACKEND: url = optarg; break;
		case 's': stack = optarg; break;
		case 'k':
			if (strcmp(optarg, "old") && strcmp(optarg, "new"))
				return cli_usage("stack rename", "--keep takes old or new");
			keep = !strcmp(optarg, "old") ? ST_RENAME_KEEP_OLD : ST_RENAME_KEEP_NEW;
			break;
		case 'h': return cli_help(help);
		default: return cli_usage("stack rename", "bad option");
		}
	}
	if (argc - optind != 1)
		return cli_usage("stack rename", "expected the new name (and --stack NAME)");
	if (!stack)
		return cli_usage("stack rename", "--stack NAME names the stack to rename");
	if ((rc = cli_backend_open(&b, url)) != EXIT_OK)
		return rc;
	int src = st_backend_resolve(b, stack, &oq, NULL, &err);
	if (src == ST_OK)
		src = st_backend_rename_stack_ex(b, stack, argv[optind], keep, &nq, &ch, &err);
	for (size_t i = 0; i < ch.count; i++)
		fprintf(stderr, "%s: note: %s\n", cli_prog, ch.lines[i]);
	st_changes_clear(&ch);
	if (src != ST_OK) {
		cli_error(&err);
		rc = err.code == ST_EINVAL ? EXIT_USAGE : EXIT_FAIL;
	} else {
		/* Pulumi's stack rename also renames the project's Pulumi.<stack>.yaml; statetool
		 * has no project folder, so it says so (the config holds the passphrase's salt) */
		const char *os = strrchr(oq, '/'), *ns = strrchr(nq, '/');
		os = os ? os + 1 : oq;
		ns = ns ? ns + 1 : nq;
		const char *both[2] = {oq, nq};
		printf("Renamed %s to %s\n", oq, nq);
		cli_index_stacks(b, both, 2);
		if (strcmp(os, ns))
			fprintf(stderr,
				"statetool: note: rename the project's Pulumi.%s.yaml to "
				"Pulumi.%s.yaml, as pulumi stack rename does (statetool changes the "
				"backend only; the file holds the stack's config and encryptionsalt)\n",
				os, ns);
	}
	free(oq);
	free(nq);
	st_backend_free(b);
	return rc;
}

int cmd_stack(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "rename"))
		return stack_rename(argc - 1, argv + 1);
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return cli_help(help);
	return cli_usage("stack", "expected `stack rename`");
}
