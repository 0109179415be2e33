/* Files: gzip, limits, atomic replacement, backups, crashes at every write step. */
#include "testutil.h"

#include <signal.h>
#include <sys/resource.h>

#include <signal.h>
#include <sys/wait.h>
#include <zlib.h>
#include <zstd.h>

static void write_gzip(const char *path, const char *data, size_t len)
{
	gzFile g = gzopen(path, "wb");
	assert_non_null(g);
	assert_int_equal(gzwrite(g, data, (unsigned)len), (int)len);
	gzclose(g);
}

/* st_sha256_hex: the same digests below and above the size where OpenSSL takes over from
 * libsodium (4096 bytes), and for a million bytes (FIPS 180-2's "a" x 1,000,000). */
static void test_sha256(void **state)
{
	(void)state;
	char hex[65];
	unsigned char *b = malloc(1000000);
	assert_non_null(b);
	st_sha256_hex("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	for (size_t i = 0; i < 4096; i++)
		b[i] = (unsigned char)(i * 7);
	st_sha256_hex(b, 4095, hex);
	assert_string_equal(hex, "6f18519264a07cbda54c9b4994ae2255353e34654ecbedb0bc71400fc29516de");
	st_sha256_hex(b, 4096, hex);
	assert_string_equal(hex, "d010f6d76d0eb4dce5d5b5b34014a8a157ec4380a66c24d7d455a9bf652db14a");
	memset(b, 'a', 1000000);
	st_sha256_hex(b, 1000000, hex);
	assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(b);
}

static void test_gzip_read(void **state)
{
	(void)state;
	char *dir = tu_tmpdir(), *p = st_path_join(dir, "s.json.gz");
	const char *text = "{\"version\":3,\"deployment\":null}";
	write_gzip(p, text, strlen(text));
	char *out;
	size_t len;
	st_compression c;
	assert_int_equal(st_file_read(p, 0, &out, &len, &c, NULL), ST_OK);
	assert_int_equal(c, ST_COMPRESS_GZIP);
	assert_string_equal(out, text);
	free(out);
	/* truncated */
	size_t glen = 0;
	char *g = tu_read(p, &glen);
	tu_write(p, g, glen - 10);
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st_file_read(p, 0, &out, &len, &c, &err), ST_EPARSE);
	assert_non_null(strstr(err.message, "truncated gzip data"));
	/* corrupt */
	g[15] ^= 0x55;
	g[16] ^= 0x55;
	tu_write(p, g, glen);
	st_error_clear(&err);
	assert_int_equal(st_file_read(p, 0, &out, &len, &c, &err), ST_EPARSE);
	assert_non_null(strstr(err.message, "gzip"));
	/* bytes after the stream, zero padding too, are refused as Go's gzip reader refuses
	 * them (Pulumi reads a .json.gz with it); a second member is read */
	g[15] ^= 0x55;
	g[16] ^= 0x55;
	char *pad = calloc(1, glen * 2 + 20);
	memcpy(pad, g, glen);
	tu_write(p, pad, glen + 4);
	st_error_clear(&err);
	assert_int_equal(st_file_read(p, 0, &out, &len, &c, &err), ST_EPARSE);
	assert_non_null(strstr(err.message, "4 bytes after the gzip stream at byte"));
	assert_non_null(strstr(err.message, "that are not a whole gzip member (Pulumi's reader "
					    "refuses them: unexpected EOF)"));
	tu_write(p, pad, glen + 20);
	st_error_clear(&err);
	assert_int_equal(st_file_read(p, 0, &out, &len, &c, &err), ST_EPARSE);
	assert_non_null(strstr(err.message, "20 bytes after the gzip stream at byte"));
	assert_non_null(strstr(err.message, "that do not begin a gzip member (Pulumi's reader "
					    "refuses them: gzip: invalid header)"));
	/* (review26 R8) the start of a member's header, cut short: Go's io.ReadFull of the
	 * header, "unexpected EOF"; a member's magic with another method than deflate (8): Go's
	 * "gzip: invalid header" (zlib said "unknown compression method") */
	memcpy(pad + glen, "\x1f\x8b\x08", 3);
	tu_write(p, pad, glen + 3);
	st_error_clear(&err);
	assert_int_equal(st_file_read(p, 0, &out, &len, &c, &err), ST_EPARSE);
	assert_non_null(strstr(err.message, "3 bytes after the gzip stream at byte"));
	assert_non_null(strstr(err.message, "that are not a whole gzip member (Pulumi's reader "
					    "refuses them: unexpected EOF)"));
	pad[glen + 2] = 7;
	tu_write(p, pad, glen + 14);
	st_error_clear(&err);
	assert_int_equal(st_file_read(p, 0, &out, &len, &c, &err), ST_EPARSE);
	assert_non_null(strstr(err.message, "14 bytes after the gzip stream at byte"));
	assert_non_null(strstr(err.message, "that do not begin a gzip member (Pulumi's reader "
					    "refuses them: gzip: invalid header)"));
	memcpy(pad + glen, g, glen);
	tu_write(p, pad, glen * 2);
	assert_int_equal(st_file_read(p, 0, &out, &len, &c, NULL), ST_OK);
	assert_int_equal(len, strlen(text) * 2);
	free(out);
	free(pad);
	free(g);
	free(p);
	tu_rmdir(dir);
}

static void test_gzip_bomb_and_zstd(void **state)
{
	(void)state;
	char *dir = tu_tmpdir(), *p = st_path_join(dir, "bomb.json.gz");
	size_t n = 50 << 20;
	char *zeros = calloc(1, n);
	write_gzip(p, zeros, n);
	free(zeros);
	char *out;
	size_t len;
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st_file_read(p, 1 << 20, &out, &len, NULL, &err), ST_ELIMIT);
	assert_non_null(strstr(err.message, "inflates beyond the limit of 1048576 bytes"));
	free(p);
	p = st_path_join(dir, "z.json.zst");
	{
		/* real zstd, written by libzstd: two frames and a skippable frame, as Go's
		 * reader takes them */
		const char *a = "{\"version\":3,", *b = "\"deployment\":null}";
		char z[512];
		size_t za = ZSTD_compress(z, 200, a, strlen(a), 3), zb;
		static const unsigned char skip[] = {0x50, 0x2a, 0x4d, 0x18, 2, 0, 0, 0, 'h', 'i'};
		assert_false(ZSTD_isError(za));
		memcpy(z + za, skip, sizeof(skip));
		za += sizeof(skip);
		zb = ZSTD_compress(z + za, 200, b, strlen(b), 19);
		assert_false(ZSTD_isError(zb));
		tu_write(p, z, za + zb);
		st_compression c;
		assert_int_equal(st_file_read(p, 0, &out, &len, &c, NULL), ST_OK);
		assert_int_equal(c, ST_COMPRESS_ZSTD);
		assert_string_equal(out, "{\"version\":3,\"deployment\":null}");
		free(out);
		/* truncated inside the last frame */
		tu_write(p, z, za + zb - 3);
		st_error_clear(&err);
		assert_int_equal(st_file_read(p, 0, &out, &len, &c, &err), ST_EPARSE);
		assert_non_null(strstr(err.message, "truncated zstd data"));
		/* only a magic number */
		tu_write(p, "\x28\xb5\x2f\xfd\x00\x00", 6);
		st_error_clear(&err);
		assert_int_equal(st_file_read(p, 0, &out, &len, NULL, &err), ST_EPARSE);
		assert_non_null(strstr(err.message, "zstd data"));
		/* a bomb */
		char *zeros8 = calloc(1, 8 << 20), *zz = malloc(ZSTD_compressBound(8 << 20));
		size_t zn = ZSTD_compress(zz, ZSTD_compressBound(8 << 20), zeros8, 8 << 20, 3);
		tu_write(p, zz, zn);
		st_error_clear(&err);
		assert_int_equal(st_file_read(p, 1 << 20, &out, &len, NULL, &err), ST_ELIMIT);
		assert_non_null(strstr(err.message, "decompresses beyond the limit of 1048576 bytes"));
		assert_int_equal(st_file_read(p, 0, &out, &len, NULL, NULL), ST_OK);
		assert_int_equal(len, 8 << 20);
		free(out);
		free(zeros8);
		free(zz);
	}
	st_error_clear(&err);
	assert_int_equal(st_file_read(dir, 0, &out, &len, NULL, &err), ST_EIO);
	assert_non_null(strstr(err.message, "is a directory"));
	free(p);
	tu_rmdir(dir);
}

static void test_atomic_write_backup_mode(void **state)
{
	(void)state;
	char *dir = tu_tmpdir(), *p = st_path_join(dir, "s.json"), *bak = NULL;
	st_write_opts wo = ST_WRITE_OPTS_INIT;
	wo.backup = 1;
	struct stat sb;
	assert_int_equal(st_file_write_atomic(p, "old", 3, &wo, NULL), ST_OK);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0644);
	assert_int_equal(asprintf(&bak, "%s.bak", p) > 0, 1);
	assert_int_equal(access(bak, F_OK), -1); /* nothing to back up yet */
	chmod(p, 0600);
	assert_int_equal(st_file_write_atomic(p, "new", 3, &wo, NULL), ST_OK);
	char *c = tu_read(p, NULL), *b = tu_read(bak, NULL);
	assert_string_equal(c, "new");
	assert_string_equal(b, "old");
	free(c);
	free(b);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	/* gzip output reads back */
	wo.compression = ST_COMPRESS_GZIP;
	assert_int_equal(st_file_write_atomic(p, "{}", 2, &wo, NULL), ST_OK);
	char *out;
	size_t len;
	st_compression comp;
	assert_int_equal(st_file_read(p, 0, &out, &len, &comp, NULL), ST_OK);
	assert_int_equal(comp, ST_COMPRESS_GZIP);
	assert_string_equal(out, "{}");
	free(out);
	/* a symbolic link is never written through */
	char *link = st_path_join(dir, "link.json");
	assert_int_equal(symlink(p, link), 0);
	st_error err;
	st_error_clear(&err);
	assert_int_equal(st_file_write_atomic(link, "x", 1, NULL, &err), ST_EREFUSED);
	assert_non_null(strstr(err.message, "symbolic link"));
	assert_int_equal(st_file_read(p, 0, &out, &len, NULL, NULL), ST_OK);
	assert_string_equal(out, "{}");
	free(out);
	/* no directory */
	char *nodir = st_path_join(dir, "missing/s.json");
	st_error_clear(&err);
	assert_int_equal(st_file_write_atomic(nodir, "x", 1, NULL, &err), ST_EIO);
	assert_non_null(strstr(err.message, "cannot create a temporary file"));
	free(nodir);
	free(link);
	free(bak);
	free(p);
	tu_rmdir(dir);
}

/* The crash tests' step hook: SIGKILL at step *ctx of a write. */
static void kill_at_step(void *ctx, const char *op, int step)
{
	if (!strcmp(op, "write") && step == *(int *)ctx)
		kill(getpid(), SIGKILL);
}

/* SIGKILL at each step of the write (the step hook of st_set_hooks): the file is always
 * exactly old or exactly new. */
static void test_crash_at_each_step(void **state)
{
	(void)state;
	for (int step = 1; step <= 4; step++) {
		char *dir = tu_tmpdir(), *p = st_path_join(dir, "s.json");
		st_write_opts wo = ST_WRITE_OPTS_INIT;
		wo.backup = 1;
		assert_int_equal(st_file_write_atomic(p, "OLD-CONTENT", 11, &wo, NULL), ST_OK);
		pid_t pid = fork();
		if (pid == 0) {
			st_hooks h = ST_HOOKS_INIT;
			h.step = kill_at_step;
			h.ctx = &step;
			st_set_hooks(&h, NULL);
			st_file_write_atomic(p, "NEW-CONTENT-LONGER", 18, &wo, NULL);
			_exit(0);
		}
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));
		assert_int_equal(WTERMSIG(status), SIGKILL);
		char *c = tu_read(p, NULL);
		if (step <= 3)
			assert_string_equal(c, "OLD-CONTENT");
		else
			assert_string_equal(c, "NEW-CONTENT-LONGER");
		free(c);
		free(p);
		tu_rmdir(dir);
	}
}

/* A state big enough for the two-thread writer: `n` resources with nested properties. */
static char *big_state_text(int n)
{
	st_buf b;
	st_buf_init(&b);
	st_buf_adds(&b, "{\n    \"version\": 3,\n    \"deployment\": {\n        \"manifest\": {},\n"
			"        \"resources\": [\n");
	for (int i = 0; i < n; i++)
		st_buf_printf(&b,
			      "            {\n                \"urn\": \"urn:pulumi:dev::p::t:m:R::r-%d\",\n"
			      "                \"custom\": false,\n                \"type\": \"t:m:R\",\n"
			      "                \"inputs\": {\n                    \"a\": [\n"
			      "                        1.5,\n                        \"x<&>\\u2028\"\n"
			      "                    ],\n                    \"b\": {}\n                }\n"
			      "            }%s\n",
			      i, i + 1 < n ? "," : "");
	st_buf_adds(&b, "        ]\n    }\n}\n");
	return st_buf_take(&b, NULL);
}

/* Saving streams the text to the file, the resources written on two threads: the bytes are
 * those of st_state_dump on one thread, and of the file read. A write that fails part way
 * (the file size limit) leaves the old file and no temporary file. */
static void test_streamed_save(void **state)
{
	(void)state;
	char *dir = tu_tmpdir(), *p = st_path_join(dir, "big.json");
	char *text = big_state_text(3000), *dumped = NULL, *saved;
	size_t len = strlen(text), dlen = 0, slen = 0;
	st_state *s = NULL;
	st_error err;

	assert_int_equal(st_state_load_buffer(&s, text, len, "big.json", NULL, NULL), ST_OK);
	st_set_threads(1, NULL);
	unsigned long runs = st__two_count(ST__T_WRITE);
	assert_int_equal(st_state_dump(s, NULL, &dumped, &dlen, NULL), ST_OK);
	assert_int_equal(st__two_count(ST__T_WRITE), runs);
	st_set_threads(2, NULL);
	assert_int_equal(st_state_save(s, p, NULL, NULL), ST_OK);
	st_set_threads(0, NULL);
	/* the save wrote the resources on two threads */
	assert_int_equal(st__two_count(ST__T_WRITE), runs + 1);
	assert_int_equal(dlen, len);
	assert_memory_equal(dumped, text, len); /* a Pulumi-style file survives byte for byte */
	saved = tu_read(p, &slen);
	assert_int_equal(slen, len);
	assert_memory_equal(saved, text, len);
	free(saved);

	/* a failing write: the limit stops the file at 256 KiB, part way through */
	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 256 * 1024;
	signal(SIGXFSZ, SIG_IGN);
	json_object_set_new(json_array_get(st_state_resources(s, 0), 0), "protect", json_true());
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	st_error_clear(&err);
	int rc = st_state_save(s, p, NULL, &err);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(rc, ST_EIO);
	assert_non_null(strstr(err.message, "cannot write"));
	assert_non_null(strstr(err.message, "File too large"));
	saved = tu_read(p, &slen);
	assert_int_equal(slen, len);
	assert_memory_equal(saved, text, len); /* untouched */
	free(saved);
	{
		assert_int_equal(tu_count_entries(dir, ""), 1); /* no temporary file left */
	}
	st_state_free(s);
	free(dumped);
	free(text);
	free(p);
	tu_rmdir(dir);
}

/* A pair write (move) streams each uncompressed state into its staged file, hashed as it is
 * written: the files hold exactly st_state_dump's bytes; a compressed one still works; nothing
 * staged or journaled is left. */
static void test_pair_write_streamed(void **state)
{
	(void)state;
	char *dir = tu_tmpdir(), *pa = st_path_join(dir, "a.json"), *pb = st_path_join(dir, "b.json.gz");
	char *text = big_state_text(1500), *da = NULL, *db = NULL, *got;
	size_t len = strlen(text), la, lb, glen;
	st_state *a = NULL, *b = NULL;
	st_compression comp;

	assert_int_equal(st_state_load_buffer(&a, text, len, "a.json", NULL, NULL), ST_OK);
	assert_int_equal(st_state_load_buffer(&b, text, len, "b.json", NULL, NULL), ST_OK);
	st_state_set_compression(b, ST_COMPRESS_GZIP);
	json_object_set_new(json_array_get(st_state_resources(a, 0), 3), "protect", json_true());
	assert_int_equal(st_state_save(a, pa, NULL, NULL), ST_OK); /* something to replace */
	json_object_set_new(json_array_get(st_state_resources(a, 0), 4), "protect", json_true());
	assert_int_equal(st_state_save_pair("move", a, pa, b, pb, NULL), ST_OK);
	assert_int_equal(st_state_dump(a, NULL, &da, &la, NULL), ST_OK);
	assert_int_equal(st_state_dump(b, NULL, &db, &lb, NULL), ST_OK);
	got = tu_read(pa, &glen);
	assert_int_equal(glen, la);
	assert_memory_equal(got, da, la);
	free(got);
	assert_int_equal(st_file_read(pb, 0, &got, &glen, &comp, NULL), ST_OK);
	assert_int_equal(comp, ST_COMPRESS_GZIP);
	assert_int_equal(glen, lb);
	assert_memory_equal(got, db, lb);
	free(got);
	{
		assert_int_equal(tu_count_entries(dir, "statetool"), 0);
	}
	st_state_free(a);
	st_state_free(b);
	free(da);
	free(db);
	free(text);
	free(pa);
	free(pb);
	tu_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256),
		cmocka_unit_test(test_gzip_read),
		cmocka_unit_test(test_gzip_bomb_and_zstd),
		cmocka_unit_test(test_atomic_write_backup_mode),
		cmocka_unit_test(test_crash_at_each_step),
		cmocka_unit_test(test_streamed_save),
		cmocka_unit_test(test_pair_write_streamed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
