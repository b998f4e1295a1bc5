/*
 * tests/fuzz/fuzz_coord_history.c — libFuzzer target for the decoder of the
 * coordinator's history points (cluster/coord_history.c), which reads what
 * the book's work database holds. The first input byte is the key's length,
 * the key and then the value follow, each an exact-size heap copy (a read past
 * either end is caught). A decoded point must encode back to the same value,
 * with a line of USI move bytes only.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/coord_history.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1) return 0;
	size_t kl = data[0] % 16;
	if (kl > size - 1) kl = size - 1;
	size_t vl = size - 1 - kl;
	uint8_t *k = malloc(kl ? kl : 1), *v = malloc(vl ? vl : 1);
	if (!k || !v) abort();
	memcpy(k, data + 1, kl);
	memcpy(v, data + 1 + kl, vl);
	CoordHistPoint p;
	int rc = coord_hist_decode(&p, k, kl, v, vl);
	if (rc < -1 || rc > 1) abort();
	if (rc == 1) {
		uint8_t back[COORD_HIST_VAL_MAX], key[COORD_HIST_KEY_LEN];
		size_t n = coord_hist_encode(back, &p);
		if (n != vl || memcmp(back, v, n)) abort();
		coord_hist_key(key, p.tier, p.t);
		if (kl != sizeof key || memcmp(key, k, kl)) abort();
		if (strlen(p.pv) > COORD_HIST_PV_MAX || p.tier < 0 || p.tier >= COORD_HIST_TIERS)
			abort();
	}
	free(k);
	free(v);
	return 0;
}
