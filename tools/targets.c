/* Resources named on the command line, as handles of an edit session. */
#include "cli.h"

#include <stdlib.h>

int cli_find_handles(st_edit *e, st_state *s, char *const *queries, int n, int all, int how,
		     st_handle **out, size_t *count)
{
	size_t *idx = NULL, k = 0;
	st_handle *h;
	st_error err;
	int rc;

	*out = NULL;
	*count = 0;
	/* (the session has done nothing yet: its indexes are the state's) */
	if (all)
		k = json_array_size(st_state_resources(s, 0));
	else if ((rc = cli_find(s, queries, n, how, &idx, &k)) != EXIT_OK)
		return rc;
	h = calloc(k + 1, sizeof(*h));
	if (!h) {
		free(idx);
		cli_errorf("out of memory");
		return EXIT_FAIL;
	}
	st_error_clear(&err);
	for (size_t i = 0; i < k; i++)
		if (st_edit_handle_at(e, all ? i : idx[i], &h[i], &err) != ST_OK) {
			cli_error(&err);
			free(idx);
			free(h);
			return EXIT_FAIL;
		}
	free(idx);
	*out = h;
	*count = k;
	return EXIT_OK;
}

int cli_commit_save(cli_target *t, st_edit *e, int always, st_diff *d, st_problems *probs,
		    int *written, st_error *err)
{
	st_write_opts wo = ST_WRITE_OPTS_INIT;
	wo.backup = !t->filter;
	wo.threads = cli_threads;
	if (t->backend && !t->filter)
		return st_edit_commit_save_stack(e, t->backend, t->qname, always, d, probs, written,
						 err);
	/* filter mode: always written (the pipe gets the state even when nothing changed) */
	return st_edit_commit_save(e, cli_save_path(t), &wo, always || t->filter, d, probs,
				   written, err);
}
