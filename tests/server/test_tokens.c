/*
 * tests/server/test_tokens.c — SHA-256 against the FIPS 180 test vectors, and
 * the tokens file (server/tokens.h): add, check, revoke by deleting a line,
 * a damaged version keeping the tokens read before, bad names refused, a file
 * that is not an owner-only regular file refused without blocking.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <sys/stat.h>
#include <unistd.h>

#include "server/sha256.h"
#include "server/tokens.h"
#include "tests/support/support.h"

static void hex(const uint8_t *h, char out[65])
{
	for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", h[i]);
}

static void test_tokens__sha256_matches_the_fips_vectors(void **state)
{
	(void)state;
	static const struct {
		const char *msg, *digest;
	} V[] = {
	    {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	    {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	    {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
	    {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmno"
	     "pqr"
	     "lmnopqrsmnopqrstnopqrstu",
	     "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
	};
	uint8_t h[32];
	char s[65];
	for (size_t i = 0; i < sizeof V / sizeof V[0]; i++) {
		server_sha256(V[i].msg, strlen(V[i].msg), h);
		hex(h, s);
		assert_string_equal(s, V[i].digest);
	}
	/* One million 'a': many blocks. */
	char *m = malloc(1000000);
	memset(m, 'a', 1000000);
	server_sha256(m, 1000000, h);
	hex(h, s);
	assert_string_equal(s, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(m);
}

static void test_tokens__add_check_revoke_and_damage(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], err[TOKENS_ERRLEN];
	snprintf(path, sizeof path, "%s/tokens", dir);
	char t1[TOKENS_TOKEN_LEN + 1], t2[TOKENS_TOKEN_LEN + 1], name[TOKENS_NAME_MAX + 1];
	assert_int_equal(server_tokens_add(path, "node-1", false, t1, err), 0);
	assert_int_equal(server_tokens_add(path, "node_2.x", false, t2, err), 0);
	assert_int_equal(strlen(t1), 64);
	assert_string_not_equal(t1, t2);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* The file holds hashes, never the tokens. */
	size_t len;
	char *file = ts_read_file(path, &len);
	assert_null(strstr(file, t1));
	assert_null(strstr(file, t2));
	ServerTokens *ts;
	assert_int_equal(server_tokens_open(&ts, path, err), 0);
	assert_true(server_tokens_check(ts, t1, name));
	assert_string_equal(name, "node-1");
	assert_true(server_tokens_check(ts, t2, name));
	assert_string_equal(name, "node_2.x");
	t1[10] ^= 1;
	assert_false(server_tokens_check(ts, t1, name));
	t1[10] ^= 1;
	assert_false(server_tokens_check(ts, "", name));
	assert_false(server_tokens_check(ts, NULL, name));
	/* Revoked: the first line deleted; noticed without reopening. */
	char *nl = strchr(file, '\n');
	assert_int_equal(ts_write_file(path, nl + 1, strlen(nl + 1)), 0);
	assert_false(server_tokens_check(ts, t1, name));
	assert_true(server_tokens_check(ts, t2, name));
	/* A damaged file keeps the tokens read before in force (until a version
	 * that parses), and is refused at open. */
	char bad[200];
	snprintf(bad, sizeof bad, "%sgarbage line\n", nl + 1);
	assert_int_equal(ts_write_file(path, bad, strlen(bad)), 0);
	assert_true(server_tokens_check(ts, t2, name));
	assert_false(server_tokens_check(ts, t1, name));
	server_tokens_free(ts);
	assert_int_equal(server_tokens_open(&ts, path, err), TOKENS_EPARSE);
	assert_non_null(strstr(err, ":2:"));
	/* A removed file too; an empty one revokes every token. */
	assert_int_equal(ts_write_file(path, nl + 1, strlen(nl + 1)), 0);
	assert_int_equal(server_tokens_open(&ts, path, err), 0);
	assert_true(server_tokens_check(ts, t2, name));
	unlink(path);
	assert_true(server_tokens_check(ts, t2, name));
	assert_int_equal(ts_write_file(path, "", 0), 0);
	assert_true(server_tokens_check(ts, t2, name)); /* 0644: not a tokens file */
	assert_int_equal(chmod(path, 0600), 0);
	assert_false(server_tokens_check(ts, t2, name));
	server_tokens_free(ts);
	/* Bad names. */
	assert_int_equal(server_tokens_add(path, "", false, t1, err), TOKENS_EINVAL);
	assert_int_equal(server_tokens_add(path, "a b", false, t1, err), TOKENS_EINVAL);
	assert_int_equal(server_tokens_open(&ts, "/nonexistent/tokens", err), TOKENS_EIO);
	/* A name already used: refused, nothing appended. */
	assert_int_equal(server_tokens_add(path, "node_2.x", false, t1, err), 0);
	size_t before;
	free(ts_read_file(path, &before));
	assert_int_equal(server_tokens_add(path, "node_2.x", false, t2, err), TOKENS_EEXIST);
	assert_non_null(strstr(err, "node_2.x"));
	size_t after;
	free(ts_read_file(path, &after));
	assert_int_equal(before, after);
	/* A file others may read is made owner-only by the next add. */
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(server_tokens_add(path, "node-3", false, t2, err), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* A file that does not parse takes no new line. */
	assert_int_equal(ts_write_file(path, "garbage\n", 8), 0);
	assert_int_equal(server_tokens_add(path, "node-4", false, t2, err), TOKENS_EPARSE);
	free(file);
	ts_rmtree(dir);
	free(dir);
}

/* The messages of a ServerTokens' re-reads. */
typedef struct {
	int n;
	char last[TOKENS_ERRLEN + 200];
} Said;

static void said(void *ctx, const char *msg)
{
	Said *s = ctx;
	s->n++;
	snprintf(s->last, sizeof s->last, "%s", msg);
}

/* what, when it is a path from the root, else dir/what. */
static void path_in(char *out, size_t n, const char *dir, const char *what)
{
	if (what[0] == '/')
		snprintf(out, n, "%s", what);
	else
		snprintf(out, n, "%s/%s", dir, what);
}

/* Replaces path by a symbolic link to target. */
static void link_to(const char *path, const char *target)
{
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink(target, path), 0);
}

/*
 * The tokens file must be an owner-only regular file of this user, of at most
 * TOKENS_FILE_MAX bytes: anything else is refused at open, naming the file and
 * the command that fixes it. A file that others may write lets them add a
 * token; a FIFO, /dev/zero or a directory in its place hung the reader (a FIFO
 * at open, /dev/zero read for ever under the lock every request waits for) or
 * admitted nobody, silently. Opened without blocking, each is refused at once.
 */
static void test_tokens__a_file_that_is_not_an_owner_only_regular_file_is_refused(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], other[700], err[TOKENS_ERRLEN];
	snprintf(path, sizeof path, "%s/tokens", dir);
	char tok[TOKENS_TOKEN_LEN + 1];
	assert_int_equal(server_tokens_add(path, "w1", false, tok, err), 0);
	ServerTokens *ts = NULL;
	/* Others may change it, or read it: refused, with the chmod to run. */
	static const mode_t MODES[] = {0666, 0644, 0640, 0604, 0620};
	for (size_t i = 0; i < sizeof MODES / sizeof *MODES; i++) {
		assert_int_equal(chmod(path, MODES[i]), 0);
		assert_int_equal(server_tokens_open(&ts, path, err), TOKENS_EPERM);
		assert_null(ts);
		char want[700];
		snprintf(want, sizeof want, "run: chmod 600 %s", path);
		if (!strstr(err, want) || !strstr(err, path)) fail_msg("'%s'", err);
	}
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(server_tokens_open(&ts, path, err), 0);
	server_tokens_free(ts);
	/* A directory, a device, a FIFO: refused at once, saying what it is. */
	static const struct {
		const char *what, *says;
	} NOT_FILES[] = {
	    {"dir", "a directory"}, {"/dev/zero", "a character device"}, {"fifo", "a FIFO"}};
	snprintf(other, sizeof other, "%s/dir", dir);
	assert_int_equal(mkdir(other, 0700), 0);
	snprintf(other, sizeof other, "%s/fifo", dir);
	assert_int_equal(mkfifo(other, 0600), 0);
	for (size_t i = 0; i < sizeof NOT_FILES / sizeof *NOT_FILES; i++) {
		char p[700];
		path_in(p, sizeof p, dir, NOT_FILES[i].what);
		assert_int_equal(server_tokens_open(&ts, p, err), TOKENS_EFILE);
		if (!strstr(err, NOT_FILES[i].says) || !strstr(err, p)) fail_msg("'%s'", err);
		/* token add neither blocks, nor changes its mode, nor appends. */
		struct stat before, after;
		assert_int_equal(stat(p, &before), 0);
		assert_int_equal(server_tokens_add(p, "w2", false, tok, err), TOKENS_EFILE);
		assert_int_equal(stat(p, &after), 0);
		assert_int_equal(before.st_mode, after.st_mode);
	}
	/* Larger than a tokens file can be. */
	snprintf(other, sizeof other, "%s/big", dir);
	char *big = malloc(TOKENS_FILE_MAX + 2);
	memset(big, '#', TOKENS_FILE_MAX + 1);
	big[TOKENS_FILE_MAX + 1] = '\n';
	assert_int_equal(ts_write_file(other, big, TOKENS_FILE_MAX + 2), 0);
	free(big);
	assert_int_equal(chmod(other, 0600), 0);
	assert_int_equal(server_tokens_open(&ts, other, err), TOKENS_EFILE);
	assert_non_null(strstr(err, "bytes"));
	/* Another user's (where this test may give a file away: as root). */
	if (geteuid() == 0) {
		assert_int_equal(chown(path, 4321, 4321), 0);
		assert_int_equal(server_tokens_open(&ts, path, err), TOKENS_EPERM);
		assert_non_null(strstr(err, "run: chown 0 "));
		assert_int_equal(server_tokens_add(path, "w2", false, tok, err), TOKENS_EPERM);
		assert_int_equal(chown(path, 0, 0), 0);
	}
	ts_rmtree(dir);
	free(dir);
}

/*
 * A re-read that fails — the file replaced by a link to /dev/zero, a FIFO or a
 * directory, opened to others, cut in the middle of a line, removed — keeps the
 * tokens read before in force, never blocks, and is said once per version of
 * the file however many requests meet it; a version that reads again is said
 * too and its tokens are the ones in force. (A link to /dev/zero spun a
 * request thread for ever, holding the lock every other request waited for.)
 */
static void test_tokens__a_reread_that_fails_keeps_the_tokens_and_says_so_once(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], good[700], err[TOKENS_ERRLEN];
	snprintf(path, sizeof path, "%s/tokens", dir);
	snprintf(good, sizeof good, "%s/tokens.good", dir);
	char t1[TOKENS_TOKEN_LEN + 1], t2[TOKENS_TOKEN_LEN + 1], name[TOKENS_NAME_MAX + 1];
	assert_int_equal(server_tokens_add(path, "w1", false, t1, err), 0);
	ServerTokens *ts;
	assert_int_equal(server_tokens_open(&ts, path, err), 0);
	Said s = {0};
	server_tokens_set_log(ts, said, &s);
	char fifo[700], sub[700];
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	snprintf(sub, sizeof sub, "%s/sub", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	/* The versions that fail, one after the other. */
	static const struct {
		const char *link, *says;
	} BAD[] = {{"/dev/zero", "a character device"}, {"fifo", "a FIFO"}, {"sub", "a directory"}};
	assert_int_equal(rename(path, good), 0);
	assert_int_equal(symlink(good, path), 0);
	for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
		char target[700];
		path_in(target, sizeof target, dir, BAD[i].link);
		link_to(path, target);
		int before = s.n;
		for (int k = 0; k < 50; k++) {
			assert_true(server_tokens_check(ts, t1, name));
			assert_string_equal(name, "w1");
		}
		assert_int_equal(s.n, before + 1);
		if (!strstr(s.last, BAD[i].says) ||
		    !strstr(s.last, "tokens read before (1) stay in force"))
			fail_msg("'%s'", s.last);
	}
	/* Opened to others: refused, the chmod said, the token it holds not taken. */
	link_to(path, good);
	assert_true(server_tokens_check(ts, t1, name));
	assert_int_equal(s.n, 4); /* "read again" */
	assert_non_null(strstr(s.last, "read again: 1 tokens"));
	assert_int_equal(server_tokens_add(good, "w2", false, t2, err), 0);
	assert_int_equal(chmod(good, 0666), 0);
	for (int k = 0; k < 50; k++) {
		assert_true(server_tokens_check(ts, t1, name));
		assert_false(server_tokens_check(ts, t2, name));
	}
	assert_int_equal(s.n, 5);
	assert_non_null(strstr(s.last, "run: chmod 600"));
	assert_int_equal(chmod(good, 0600), 0);
	assert_true(server_tokens_check(ts, t2, name));
	assert_string_equal(name, "w2");
	assert_int_equal(s.n, 6);
	/* Cut in the middle of its last line (a write under way). */
	size_t len;
	char *text = ts_read_file(good, &len);
	assert_int_equal(ts_write_file(good, text, len - 20), 0);
	for (int k = 0; k < 10; k++) assert_true(server_tokens_check(ts, t2, name));
	assert_int_equal(s.n, 7);
	assert_non_null(strstr(s.last, ":2: not"));
	/* Removed. */
	assert_int_equal(unlink(path), 0);
	for (int k = 0; k < 10; k++) assert_true(server_tokens_check(ts, t1, name));
	assert_int_equal(s.n, 8);
	assert_non_null(strstr(s.last, "No such file"));
	/* Back, whole. */
	assert_int_equal(ts_write_file(good, text, len), 0);
	assert_int_equal(symlink(good, path), 0);
	assert_true(server_tokens_check(ts, t2, name));
	assert_int_equal(s.n, 9);
	free(text);
	server_tokens_free(ts);
	ts_rmtree(dir);
	free(dir);
}

/* A read-only token (" read" after its name): checked as any other, its name
 * without the word, and said to be read-only; a worker token is not. A name
 * "read" alone is still a name. */
static void test_tokens__read_only_tokens_say_so(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], err[TOKENS_ERRLEN];
	snprintf(path, sizeof path, "%s/tokens", dir);
	char tw[TOKENS_TOKEN_LEN + 1], tr[TOKENS_TOKEN_LEN + 1], tn[TOKENS_TOKEN_LEN + 1];
	char name[TOKENS_NAME_MAX + 1];
	assert_int_equal(server_tokens_add(path, "worker-1", false, tw, err), 0);
	assert_int_equal(server_tokens_add(path, "dashboard", true, tr, err), 0);
	assert_int_equal(server_tokens_add(path, "read", false, tn, err), 0);
	char *file = ts_read_file(path, NULL);
	assert_non_null(strstr(file, " dashboard read\n"));
	free(file);
	ServerTokens *ts;
	assert_int_equal(server_tokens_open(&ts, path, err), 0);
	bool ro = true;
	assert_true(server_tokens_check_ro(ts, tw, name, &ro));
	assert_false(ro);
	assert_string_equal(name, "worker-1");
	assert_true(server_tokens_check_ro(ts, tr, name, &ro));
	assert_true(ro);
	assert_string_equal(name, "dashboard");
	assert_true(server_tokens_check_ro(ts, tn, name, &ro));
	assert_false(ro);
	assert_string_equal(name, "read");
	tr[3] ^= 1;
	assert_false(server_tokens_check_ro(ts, tr, name, &ro));
	assert_false(ro);
	server_tokens_free(ts);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tokens__sha256_matches_the_fips_vectors),
	    cmocka_unit_test(test_tokens__add_check_revoke_and_damage),
	    cmocka_unit_test(test_tokens__read_only_tokens_say_so),
	    cmocka_unit_test(test_tokens__a_file_that_is_not_an_owner_only_regular_file_is_refused),
	    cmocka_unit_test(test_tokens__a_reread_that_fails_keeps_the_tokens_and_says_so_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
