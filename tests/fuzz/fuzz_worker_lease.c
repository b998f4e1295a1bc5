/*
 * tests/fuzz/fuzz_worker_lease.c — libFuzzer target for the worker's lease
 * parser (cluster/worker_wire.c), the one place the worker reads what a
 * coordinator sends. The input is an exact-size heap copy (no NUL), so a read
 * past len is caught; on success the lease must be what the worker relies on:
 * 1..max positions with 32-hex-digit keys and NUL-terminated SFENs, a URL-safe
 * id, a positive budget and MultiPV 1..32.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/worker_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[WORKER_LEASE_ERRLEN];
	WorkerLease l;
	char *copy = malloc(size ? size : 1);
	if (!copy) return 0;
	memcpy(copy, data, size);
	int max = size ? 1 + data[0] % 8 : 1;
	if (worker_lease_parse(&l, copy, size, max, err) == 0) {
		if (l.n < 1 || l.n > max || !l.id[0] || strlen(l.id) >= WORKER_LEASE_ID_MAX)
			abort();
		for (const char *p = l.id; *p; p++)
			if (*p == '/' || *p == '?' || *p == '%' || *p == '.' || *p <= ' ') abort();
		if (l.budget.amount < 1 || l.multipv < 1 || l.multipv > SEARCH_MULTIPV_MAX) abort();
		for (int i = 0; i < l.n; i++)
			if (strlen(l.pos[i].key) != 32 || !l.pos[i].sfen || !l.pos[i].sfen[0])
				abort();
		worker_lease_free(&l);
	} else if (!err[0]) {
		abort();
	}
	free(copy);
	return 0;
}
