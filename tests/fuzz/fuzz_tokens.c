/*
 * tests/fuzz/fuzz_tokens.c — libFuzzer target for the tokens file's reader
 * (server/tokens.c), which reads a file an operator edits by hand. The input
 * is the file's content, written to an owner-only temporary file; the reader
 * must accept it or refuse it with a message naming the file, and a token
 * whose digest is nowhere in it (64 zeros') is never admitted.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/sha256.h"
#include "server/tokens.h"
#include "tests/fuzz/fuzz_tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	static int fd = -1;
	if (fd < 0) {
		snprintf(path, sizeof path, "/tmp/fuzz_tokens.XXXXXX");
		if ((fd = mkstemp(path)) < 0) abort();
		fuzz_tmp_at_exit(path, 0);
	}
	if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size ||
	    fchmod(fd, 0600) < 0)
		abort();
	ServerTokens *t = NULL;
	char err[TOKENS_ERRLEN] = "";
	int rc = server_tokens_open(&t, path, err);
	if (rc == 0) {
		if (!t) abort();
		char name[TOKENS_NAME_MAX + 1];
		static const char ZEROS[] =
		    "0000000000000000000000000000000000000000000000000000000000000000";
		uint8_t h[SERVER_SHA256_LEN];
		char hex[2 * SERVER_SHA256_LEN + 1];
		server_sha256(ZEROS, 64, h);
		for (int i = 0; i < SERVER_SHA256_LEN; i++) snprintf(hex + 2 * i, 3, "%02x", h[i]);
		/* (Its digest anywhere in the file, a comment included: no verdict.) */
		bool admitted = server_tokens_check(t, ZEROS, name);
		if (admitted && !memmem(data, size, hex, 64)) abort();
		server_tokens_free(t);
	} else if (t || !strstr(err, path) ||
	           (rc != TOKENS_EPARSE && rc != TOKENS_EFILE && rc != TOKENS_EIO)) {
		abort();
	}
	return 0;
}
