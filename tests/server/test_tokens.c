/*
 * tests/server/test_tokens.c — SHA-256 against the FIPS 180 test vectors, and
 * the tokens file (server/tokens.h): add, check, revoke by deleting a line,
 * a damaged file admitting nobody, bad names refused.
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
	/* A damaged file admits nobody until it is fixed. */
	char bad[200];
	snprintf(bad, sizeof bad, "%sgarbage line\n", nl + 1);
	assert_int_equal(ts_write_file(path, bad, strlen(bad)), 0);
	assert_false(server_tokens_check(ts, t2, name));
	server_tokens_free(ts);
	assert_int_equal(server_tokens_open(&ts, path, err), TOKENS_EPARSE);
	assert_non_null(strstr(err, ":2:"));
	/* A removed file too. */
	assert_int_equal(ts_write_file(path, nl + 1, strlen(nl + 1)), 0);
	assert_int_equal(server_tokens_open(&ts, path, err), 0);
	assert_true(server_tokens_check(ts, t2, name));
	unlink(path);
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
