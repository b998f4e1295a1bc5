/*
 * tests/fuzz/fuzz_mmfile.c — libFuzzer target for minimax's kept graph
 * (minimax/mmfile.c): the graph file and the journal are read back by every
 * incremental run, so damaged bytes must give MMFILE_ESTALE (or a view that
 * only ever hands out in-range nodes), never a crash or a read out of bounds.
 *
 * A small valid graph is written once. Input byte 0 chooses what the rest
 * becomes: even, the payload of a journal batch (with a correct checksum, so
 * the entries themselves are what is tested), appended after a valid batch;
 * odd, bytes written over the graph file at an offset taken from the input.
 * Whatever opens is then walked: every node's key is found again, its moves
 * and parents are in range; mmfile_keys reads the same files (the keys a lazy
 * selector's filter is filled from) and, when the view opens, gives as many.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "minimax/mmfile.h"
#include "tests/fuzz/fuzz_tmp.h"
#include "shogi/bigmem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N 6

static char dir[64], graph[128], journal[128];
static uint8_t *graph_bytes;
static size_t graph_len;

static int walk_parent(uint32_t p, void *ctx)
{
	const MmView *v = ctx;
	if (p >= mmfile_count(v)) abort();
	return 0;
}

static void walk(MmView *v)
{
	for (uint32_t i = 0; i < mmfile_count(v); i++) {
		uint32_t len;
		const MmMove *m = mmfile_moves(v, i, &len);
		for (uint32_t k = 0; m && k < len; k++)
			if (m[k].next != MM_NONE && m[k].next >= mmfile_count(v)) abort();
		uint32_t f = mmfile_find(v, mmfile_key(v, i));
		if (f != MM_NONE && f >= mmfile_count(v)) abort();
		(void)mmfile_each_parent(v, i, walk_parent, v);
		(void)mmfile_flags(v, i);
		(void)mmfile_vd(v, i);
	}
}

/* A little graph: a chain with a cycle and a leaf, in key order. */
static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/fuzz_mmfile_%ld", (long)getpid());
	mkdir(dir, 0777);
	fuzz_tmp_at_exit(dir, 1);
	snprintf(graph, sizeof graph, "%s/%s", dir, MMFILE_GRAPH);
	snprintf(journal, sizeof journal, "%s/%s", dir, MMFILE_JOURNAL);
	Key keys[N];
	uint8_t flags[N];
	MmVd vd[N];
	uint32_t mstart[N + 1];
	MmMove moves[2 * N];
	size_t nm = 0;
	for (int i = 0; i < N; i++) {
		keys[i] = (Key){(uint64_t)i * 0x9e3779b97f4a7c15ULL, (uint64_t)i << 60};
		flags[i] = MMF_VALUED;
		vd[i] = (MmVd){(int16_t)(i * 10), (uint16_t)i};
		mstart[i] = (uint32_t)nm;
		moves[nm++] = (MmMove){(uint16_t)(100 + i), 0, (uint32_t)((i + 1) % N)};
		if (i == 3) moves[nm++] = (MmMove){7, -50, MM_NONE};
	}
	mstart[N] = (uint32_t)nm;
	uint32_t *pstart, *parents;
	int draw[2] = {0, 0};
	if (mmfile_parents(&pstart, &parents, N, mstart, moves) ||
	    mmfile_write(dir, 42, draw, N, keys, flags, vd, mstart, moves, pstart, parents, NULL))
		abort();
	bigmem_free(pstart);
	bigmem_free(parents);
	FILE *f = fopen(graph, "rb");
	struct stat st;
	if (!f || stat(graph, &st) < 0) abort();
	graph_len = (size_t)st.st_size;
	graph_bytes = malloc(graph_len);
	if (!graph_bytes || fread(graph_bytes, 1, graph_len, f) != graph_len) abort();
	fclose(f);
}

static void count_keys(void *ctx, const Key *keys, size_t n)
{
	(void)keys;
	*(size_t *)ctx += n;
}

static void write_file(const char *path, const void *p, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || (len && fwrite(p, 1, len, f) != len) || fclose(f)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!graph_bytes) setup();
	if (size < 1 || size > 1 << 14) return 0;
	write_file(graph, graph_bytes, graph_len);
	MmView v;
	uint64_t jlen = MMFILE_JOURNAL_EMPTY;
	char err[MMFILE_ERRLEN];
	/* A journal with one valid batch: a new node with moves and a state. */
	if (mmfile_open(&v, dir, 42, jlen, err)) abort();
	uint32_t x;
	MmMove mv[2] = {{5, 0, 0}, {6, 30, MM_NONE}};
	if (mmfile_add_node(&v, (Key){1, 2}, MMF_WHITE, &x) || mmfile_set_moves(&v, x, mv, 2) ||
	    mmfile_set_state(&v, 0, MMF_VALUED | MMF_CONST, (MmVd){5, 1}) ||
	    mmfile_journal_append(&v, dir, jlen, &jlen, err))
		abort();
	mmfile_close(&v);
	if (data[0] % 2 == 0) {
		/* One more batch: the input as entries, checksummed by a real run. */
		if (mmfile_open(&v, dir, 42, jlen, err)) abort();
		free(v.pending);
		v.pending = malloc(size);
		if (!v.pending) abort();
		memcpy(v.pending, data + 1, size - 1);
		v.pending_len = v.pending_cap = size - 1;
		uint64_t len2;
		if (mmfile_journal_append(&v, dir, jlen, &len2, err)) abort();
		mmfile_close(&v);
		jlen = len2;
	} else if (size >= 3) {
		/* Bytes over the graph file somewhere. */
		size_t off = ((size_t)data[1] << 8 | data[2]) % graph_len;
		size_t n = size - 3 < graph_len - off ? size - 3 : graph_len - off;
		uint8_t *g = malloc(graph_len);
		if (!g) abort();
		memcpy(g, graph_bytes, graph_len);
		memcpy(g + off, data + 3, n);
		write_file(graph, g, graph_len);
		free(g);
	}
	/* The keys alone (mmfile_keys) read the same files without a crash, and
	 * when the view opens, they are its nodes' keys, as many. */
	size_t nkeys = 0;
	int krc = mmfile_keys(dir, 42, jlen, count_keys, &nkeys, err);
	if (mmfile_open(&v, dir, 42, jlen, err) == 0) {
		walk(&v);
		if (krc != 0 || nkeys != mmfile_count(&v)) abort();
		mmfile_close(&v);
	}
	return 0;
}
