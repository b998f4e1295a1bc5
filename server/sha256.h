/*
 * server/sha256.h — SHA-256 (FIPS 180-4), for the work API's token hashes
 * (server/tokens.h). Checked against the FIPS test vectors in
 * tests/server/test_tokens.c.
 */
#ifndef SERVER_SHA256_H
#define SERVER_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SERVER_SHA256_LEN 32

void server_sha256(const void *data, size_t len, uint8_t out[SERVER_SHA256_LEN]);

#endif
