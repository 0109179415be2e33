/*
 * How a backend uses libstatetool: load a state (any envelope, plain or gzip), look at its
 * resources, change one, and save it back atomically in Pulumi's own bytes, under the lock.
 *
 *   backend_example STATE URN     protect the resource URN in STATE and save
 *
 * Build: cc backend_example.c $(pkg-config --cflags --libs statetool)
 */
#include <statetool.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	st_error err;
	st_state *state = NULL;
	st_lock *lock = NULL;
	size_t *hits = NULL, count = 0;
	int status = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: %s STATE URN\n", argv[0]);
		return 2;
	}
	st_error_clear(&err);

	/* 1. Lock first: nobody else may write between our load and our save. */
	if (st_lock_file(&lock, argv[1], &err) != ST_OK)
		goto fail;

	/* 2. Load. The state owns every json_t it hands out (borrowed references). */
	if (st_state_load_file(&state, argv[1], NULL, &err) != ST_OK)
		goto fail;
	printf("%s: envelope %s, version %d, %zu resources\n", argv[1],
	       st_state_envelope(state) == ST_ENVELOPE_EXPORT ? "export" : "checkpoint",
	       st_state_version(state), json_array_size(st_state_resources(state, 0)));

	/* 3. Find the resource (exact URN, name, URN suffix or #index) and edit it. */
	if (st_state_find(state, argv[2], &hits, &count, &err) != ST_OK)
		goto fail;
	for (size_t i = 0; i < count; i++) {
		json_t *r = json_array_get(st_state_resources(state, 0), hits[i]);
		json_object_set_new(r, "protect", json_true());
	}
	st_state_touch(state);

	/* 4. Save: atomic replace, previous file kept as STATE.bak, compression kept. */
	if (st_state_save(state, NULL, NULL, &err) != ST_OK)
		goto fail;
	printf("protected %zu resource(s)\n", count);
	status = 0;
	goto out;
fail:
	fprintf(stderr, "error: %s%s%s\n", err.file[0] ? err.file : "", err.file[0] ? ": " : "",
		err.message);
out:
	free(hits);
	st_state_free(state);
	st_lock_release(lock, NULL);
	return status;
}
