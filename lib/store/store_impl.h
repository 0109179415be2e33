/*
 * What a store implementation provides (private to lib/store). The generic layer (store.c)
 * validates keys, runs the write protocol (fill, finish, proceed, backup, commit, with the crash
 * points of the tests between the steps) and falls back to read+write for a copy; an
 * implementation only moves bytes. See doc/DESIGN.md, "Storage", "Adding a store".
 */
#ifndef ST_STORE_IMPL_H
#define ST_STORE_IMPL_H

#include "internal.h"

typedef struct st_store_ops {
	const char *scheme;
	/* Whole object into *data (new, NUL-terminated). ST_ENOTFOUND when missing. */
	int (*read)(st_store *s, const char *key, size_t max, char **data, size_t *len,
		    st_store_info *info, st_error *err);
	int (*stat)(st_store *s, const char *key, st_store_info *info, st_error *err);
	/* A write in four steps: begin (nothing visible yet), chunks, finish (the content is
	 * complete and durable, still invisible), commit (it becomes visible, atomically where
	 * the store can; create-only honoured here) or abort (everything undone). commit and
	 * abort free the writer. */
	int (*write_begin)(st_store *s, const char *key, const st_store_write_opts *opts,
			   st_store_writer **w, st_error *err);
	int (*write_chunk)(st_store_writer *w, const void *p, size_t n, st_error *err);
	int (*write_finish)(st_store_writer *w, st_error *err);
	int (*write_commit)(st_store_writer *w, st_error *err);
	void (*write_abort)(st_store_writer *w);
	/* Sorted listing (see st_store_list). */
	int (*list)(st_store *s, const char *prefix, unsigned flags, st_store_entry **out,
		    size_t *count, st_error *err);
	int (*remove)(st_store *s, const char *key, st_error *err);
	/* A copy the store makes itself (may be NULL: read + write). `for_backup` allows a copy
	 * that shares storage with the source (a hard link), since the source is only ever
	 * replaced whole. */
	int (*copy)(st_store *s, const char *src, const char *dst, int for_backup, st_error *err);
	void (*free)(st_store *s);
} st_store_ops;

/* The common head of every store (an implementation's struct begins with it). */
struct st_store {
	const st_store_ops *ops;
	char *url;
};

/* The common head of every writer. */
struct st_store_writer {
	st_store *store;
	/* an implementation whose bytes go to a local file descriptor says so here (else -1):
	 * the state writer then hands its chunks to the disk as it goes */
	int fd;
};

/* The file store: file://PATH and plain paths. */
int st__store_file_open(st_store **out, const char *root, const char *url, st_error *err);

/* The local path of a key in a file store (new), or NULL for any other store: lets the loader
 * map a big plain file instead of reading it. */
char *st__store_local_path(const st_store *s, const char *key);

/* A store for one plain file named by `path`: the file store at its directory. *key (new) is
 * the file's key there. */
int st__store_for_path(st_store **out, char **key, const char *path, st_error *err);

#endif
