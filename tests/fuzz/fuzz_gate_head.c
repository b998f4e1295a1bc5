/*
 * tests/fuzz/fuzz_gate_head.c — libFuzzer target for the server gate's look at
 * a connection's first request head (server/gate.h, gate_check_head), which
 * reads whatever a client sends before libmicrohttpd does. The input is an
 * exact-size heap copy (no NUL), so a read past len is caught; the answer must
 * be 0 (wait), 1 (hand over) or 400/411/414/431/501 with a message, and a whole head
 * (1) needs an empty line within the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/gate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size ? size : 1);
	if (!copy) return 0;
	memcpy(copy, data, size);
	const char *msg = NULL;
	int r = gate_check_head(copy, size, &msg);
	if (r != 0 && r != 1 && r != 400 && r != 411 && r != 414 && r != 431 && r != 501) abort();
	if (r > 1 && (!msg || !msg[0])) abort();
	if (r == 1 && !memmem(copy, size, "\n\n", 2) && !memmem(copy, size, "\n\r\n", 3)) abort();
	if (r == 0 && size > GATE_HEAD_MAX + 1) abort(); /* a head that long is refused */
	free(copy);
	return 0;
}
