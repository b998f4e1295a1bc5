/*
 * minimax/graph.c — the backward analysis shared by peta-shock and book
 * minimax (see graph.h and ALGORITHMS.md §7 for the steps).
 */
#include "minimax/graph.h"

#include <stdlib.h>
#include <string.h>

int mm_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap) return 0;
	size_t nc = *cap ? *cap : 1024;
	while (nc < need) nc *= 2;
	void *np = realloc(*p, nc * elem);
	if (!np) return -1;
	*p = np;
	*cap = nc;
	return 0;
}

int mm_push_move(MmGraph *g, MmMove m)
{
	if (mm_grow((void **)&g->moves, &g->moves_cap, g->nmoves + 1, sizeof *g->moves) < 0)
		return -1;
	g->moves[g->nmoves++] = m;
	return 0;
}

void mm_graph_free(MmGraph *g)
{
	free(g->flags);
	free(g->vd);
	free(g->mstart);
	free(g->moves);
	g->flags = NULL;
	g->vd = NULL;
	g->mstart = NULL;
	g->moves = NULL;
}

/* ---- the backward analysis ---------------------------------------------------- */

static inline int side_of(const MmGraph *g, uint32_t i)
{
	return (g->flags[i] & MM_F_WHITE) ? 1 : 0;
}

/* The best move's (value, depth) from node i's own side. */
static inline MmVd best_move(const MmGraph *g, uint32_t i)
{
	MmVd best = {-MM_VALUE_INF, MM_DEPTH_MAX};
	for (uint32_t k = g->mstart[i]; k < g->mstart[i + 1]; k++) {
		MmVd v = mm_move_vd(g, &g->moves[k]);
		if (mm_vd_better(v, best)) best = v;
	}
	return best;
}

/*
 * Node i's best as its parent sees it. A line that repeats forever at the
 * node's own draw value is a repetition: the parent sees its own draw value
 * (with the 0/0 default this is plain negation, as in YaneuraOu).
 */
static inline MmVd for_parent(const MmGraph *g, uint32_t i, MmVd best, bool cap_ply)
{
	unsigned d = best.depth + 1u;
	if (d > MM_DEPTH_MAX) d = MM_DEPTH_MAX;
	/* A line this long only ends in a leaf because it went round a cycle. */
	if (cap_ply && d > MM_MAX_PLY) d = MM_DEPTH_MAX;
	MmVd r = {(int16_t)-best.value, (uint16_t)d};
	if (d == MM_DEPTH_MAX && best.value == g->draw[side_of(g, i)])
		r.value = g->draw[side_of(g, i) ^ 1];
	return r;
}

static int peel(MmGraph *g)
{
	int sweeps = 0;
	for (int s = 0; s < MM_MAX_PLY; s++) {
		size_t settled = 0;
		sweeps++;
		for (uint32_t i = 0; i < g->n; i++) {
			if (g->flags[i] & MM_F_CONST) continue;
			bool ready = true;
			for (uint32_t k = g->mstart[i]; k < g->mstart[i + 1] && ready; k++) {
				uint32_t j = g->moves[k].next;
				if (j != MM_NONE && !(g->flags[j] & MM_F_CONST)) ready = false;
			}
			if (!ready) continue;
			g->vd[i] = for_parent(g, i, best_move(g, i), false);
			g->flags[i] |= MM_F_CONST;
			settled++;
		}
		if (settled == 0) break;
	}
	return sweeps;
}

/* True when some node two plies ahead of i carries the given flag. */
static bool two_ahead(const MmGraph *g, uint32_t i, uint8_t flag)
{
	for (uint32_t k = g->mstart[i]; k < g->mstart[i + 1]; k++) {
		uint32_t j = g->moves[k].next;
		if (j == MM_NONE) continue;
		for (uint32_t k2 = g->mstart[j]; k2 < g->mstart[j + 1]; k2++) {
			uint32_t j2 = g->moves[k2].next;
			if (j2 != MM_NONE && (g->flags[j2] & flag)) return true;
		}
	}
	return false;
}

static void extract_check_loops(MmGraph *g, MmStats *st)
{
	for (uint32_t i = 0; i < g->n; i++)
		if (g->flags[i] & MM_F_CHECKED) g->flags[i] |= MM_F_LOOP;
	for (int s = 0; s < MM_MAX_PLY; s++) {
		size_t dropped = 0;
		for (uint32_t i = 0; i < g->n; i++) {
			if (!(g->flags[i] & MM_F_LOOP)) continue;
			if (two_ahead(g, i, MM_F_LOOP)) continue;
			g->flags[i] &= (uint8_t)~MM_F_LOOP;
			dropped++;
		}
		if (dropped == 0) break;
	}
	for (uint32_t i = 0; i < g->n; i++)
		if (g->flags[i] & MM_F_LOOP) {
			g->flags[i] |= MM_F_SURVIVOR;
			st->check_loop1++;
		}
	/* The node between two survivors is on the loop too. Only survivors are
	 * tested two plies ahead, so the result does not depend on visiting order. */
	for (uint32_t i = 0; i < g->n; i++) {
		if (!(g->flags[i] & MM_F_SURVIVOR)) continue;
		for (uint32_t k = g->mstart[i]; k < g->mstart[i + 1]; k++) {
			uint32_t j = g->moves[k].next;
			if (j == MM_NONE) continue;
			for (uint32_t k2 = g->mstart[j]; k2 < g->mstart[j + 1]; k2++) {
				uint32_t j2 = g->moves[k2].next;
				if (j2 != MM_NONE && (g->flags[j2] & MM_F_SURVIVOR)) {
					g->flags[j] |= MM_F_LOOP;
					break;
				}
			}
		}
	}
	for (uint32_t i = 0; i < g->n; i++)
		if (g->flags[i] & MM_F_LOOP) st->check_loop2++;
}

static void init_cycle_nodes(MmGraph *g)
{
	for (uint32_t i = 0; i < g->n; i++) {
		if (g->flags[i] & MM_F_CONST) continue;
		/* Start at the parent's draw value ("repeats forever"). */
		MmVd v = {g->draw[side_of(g, i) ^ 1], MM_DEPTH_MAX};
		/* As seen by the parent: the side in check on a loop wins it. */
		if (g->flags[i] & MM_F_LOOP)
			v.value = (int16_t)((g->flags[i] & MM_F_CHECKED) ? -MM_VALUE_MAX : MM_VALUE_MAX);
		g->vd[i] = v;
	}
}

/* One in-place sweep over the relaxed nodes (listed in index order). */
static size_t relax_once(MmGraph *g, const uint32_t *list, size_t nl)
{
	size_t changed = 0;
	for (size_t q = 0; q < nl; q++) {
		uint32_t i = list[q];
		MmVd v = for_parent(g, i, best_move(g, i), true);
		if (v.value != g->vd[i].value || v.depth != g->vd[i].depth) changed++;
		g->vd[i] = v;
	}
	return changed;
}

/* Path-aware value of a check-loop node: re-entering the path is perpetual check. */
static MmVd dfs_loop(MmGraph *g, uint32_t i)
{
	if (!(g->flags[i] & MM_F_LOOP)) return g->vd[i];
	if (g->flags[i] & MM_F_PATH) {
		MmVd v = (g->flags[i] & MM_F_CHECKED) ? (MmVd){-MM_VALUE_MAX, MM_DEPTH_PCHECK}
						    : (MmVd){MM_VALUE_MAX, MM_DEPTH_PCHECKED};
		return v;
	}
	g->flags[i] |= MM_F_PATH;
	MmVd best = {-MM_VALUE_INF, 0};
	for (uint32_t k = g->mstart[i]; k < g->mstart[i + 1]; k++) {
		const MmMove *m = &g->moves[k];
		MmVd v;
		if (m->next == MM_NONE) {
			v.value = m->value;
			v.depth = 0;
		} else {
			v = dfs_loop(g, m->next);
		}
		if (mm_vd_better(v, best)) best = v;
	}
	g->flags[i] &= (uint8_t)~MM_F_PATH;
	return for_parent(g, i, best, false);
}

static int relax(MmGraph *g)
{
	/* The sweeps touch only unsettled nodes: list them (and the loop
	 * nodes) once rather than test every node's flags every sweep. */
	size_t nr = 0, nloop = 0;
	for (uint32_t i = 0; i < g->n; i++) {
		if (g->flags[i] & MM_F_LOOP) nloop++;
		else if (!(g->flags[i] & MM_F_CONST)) nr++;
	}
	uint32_t *list = malloc((nr + nloop + 1) * sizeof *list);
	if (!list) return -1;
	uint32_t *loops = list + nr;
	size_t a = 0, b = 0;
	for (uint32_t i = 0; i < g->n; i++) {
		if (g->flags[i] & MM_F_LOOP) loops[b++] = i;
		else if (!(g->flags[i] & MM_F_CONST)) list[a++] = i;
	}
	int sweeps = 0;
	for (int s = 0; s < MM_RELAX_SWEEPS; s++) {
		sweeps++;
		size_t changed = relax_once(g, list, nr);
		for (size_t q = 0; q < nloop; q++) g->vd[loops[q]] = dfs_loop(g, loops[q]);
		if (changed == 0) break;
	}
	free(list);
	return sweeps;
}

int mm_backup(MmGraph *g, MmStats *st)
{
	memset(st, 0, sizeof *st);
	if (!g->vd) {
		g->vd = malloc((g->n + 1) * sizeof *g->vd);
		if (!g->vd) return -1;
	}
	st->peel_sweeps = peel(g);
	for (size_t k = 0; k < g->n; k++)
		if (g->flags[k] & MM_F_CONST) st->const_nodes++;
	extract_check_loops(g, st);
	init_cycle_nodes(g);
	st->relax_sweeps = relax(g);
	return st->relax_sweeps < 0 ? -1 : 0;
}

/* ---- key map ------------------------------------------------------------------ */

static inline size_t key_slot(Key k, size_t mask)
{
	uint64_t h = k.lo ^ (k.hi * 0x9e3779b97f4a7c15ULL);
	h ^= h >> 29;
	return (size_t)h & mask;
}

static inline uint32_t key_fp(Key k)
{
	return (uint32_t)(k.hi >> 32);
}

/* Rebuilds the table at twice the size from the nodes' keys. */
static int map_rehash(MmKeyMap *m, const Key *keys)
{
	size_t nc = m->cap ? m->cap * 2 : 1024;
	MmSlot *ns = malloc(nc * sizeof *ns);
	if (!ns) return -1;
	memset(ns, 0xff, nc * sizeof *ns);
	for (size_t i = 0; i < m->cap; i++) {
		MmSlot sl = m->slots[i];
		if (sl.idx == MM_NONE) continue;
		size_t s = key_slot(keys[sl.idx], nc - 1);
		while (ns[s].idx != MM_NONE) s = (s + 1) & (nc - 1);
		ns[s] = sl;
	}
	free(m->slots);
	m->slots = ns;
	m->cap = nc;
	return 0;
}

int mm_map_put(MmKeyMap *m, const Key *keys, uint32_t idx)
{
	if ((m->n + 1) * 2 > m->cap && map_rehash(m, keys) < 0) return -1;
	Key k = keys[idx];
	uint32_t fp = key_fp(k);
	size_t mask = m->cap - 1, s = key_slot(k, mask);
	while (m->slots[s].idx != MM_NONE) {
		if (m->slots[s].fp == fp && key_equal(keys[m->slots[s].idx], k)) {
			m->slots[s].idx = idx;
			return 0;
		}
		s = (s + 1) & mask;
	}
	m->slots[s].idx = idx;
	m->slots[s].fp = fp;
	m->n++;
	return 0;
}

int mm_map_build_filter(MmKeyMap *m, const Key *keys, size_t n)
{
	size_t bits = 1024;
	while (bits < n * 8) bits *= 2;
	free(m->bloom);
	m->bloom = calloc(bits / 64, sizeof *m->bloom);
	if (!m->bloom) return -1;
	m->bloom_mask = bits - 1;
	for (size_t i = 0; i < n; i++) {
		size_t b = (size_t)keys[i].hi & m->bloom_mask;
		m->bloom[b >> 6] |= 1ULL << (b & 63);
	}
	return 0;
}

uint32_t mm_map_get(const MmKeyMap *m, const Key *keys, Key k)
{
	if (!m->cap) return MM_NONE;
	size_t b = (size_t)k.hi & m->bloom_mask;
	if (!(m->bloom[b >> 6] & (1ULL << (b & 63)))) return MM_NONE;
	uint32_t fp = key_fp(k);
	size_t mask = m->cap - 1, s = key_slot(k, mask);
	while (m->slots[s].idx != MM_NONE) {
		if (m->slots[s].fp == fp && key_equal(keys[m->slots[s].idx], k))
			return m->slots[s].idx;
		s = (s + 1) & mask;
	}
	return MM_NONE;
}

void mm_map_free(MmKeyMap *m)
{
	free(m->slots);
	free(m->bloom);
	memset(m, 0, sizeof *m);
}
