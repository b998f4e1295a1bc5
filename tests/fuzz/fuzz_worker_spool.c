/*
 * tests/fuzz/fuzz_worker_spool.c — libFuzzer target for the worker spool's
 * line reader (cluster/worker_spool.c, wk_spool_parse), which reads back a
 * file a killed worker (or a power cut) may have left in any state. The input
 * is one line in an exact-size heap copy; an 'R' must give an object whose
 * "key" is the line's 32-hex-digit key, an 'S' a key and a lease id, both
 * pointing into the line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/worker_priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size ? size : 1);
	if (!copy) return 0;
	memcpy(copy, data, size);
	char *id, *key;
	json_t *res;
	int kind = wk_spool_parse(copy, size, &id, &key, &res);
	if (kind == 'R' || kind == 'S') {
		if (!id || !key || strlen(key) != 32 || !id[0] || strlen(id) >= WORKER_LEASE_ID_MAX)
			abort();
		if (id < copy || key < copy || key >= copy + size) abort();
		if (kind == 'R' &&
		    (!res || strcmp(json_string_value(json_object_get(res, "key")), key)))
			abort();
		json_decref(res);
	} else if (kind != 0 && kind != -1) {
		abort();
	} else if (res) {
		abort();
	}
	free(copy);
	return 0;
}
