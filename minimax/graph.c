/*
 * minimax/graph.c — the backward analysis shared by peta-shock and book
 * minimax (see graph.h and docs/minimax.md for the steps).
 */
#include "minimax/graph.h"

#include "shogi/bigmem.h"
#include "shogi/grow.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mm_push_move(MmGraph *g, MmMove m)
{
	if (bigmem_grow((void **)&g->moves, &g->moves_cap, g->nmoves + 1, sizeof *g->moves, 1024) <
	    0)
		return -1;
	g->moves[g->nmoves++] = m;
	return 0;
}

void mm_graph_free(MmGraph *g)
{
	bigmem_free(g->flags);
	bigmem_free(g->vd);
	bigmem_free(g->mstart);
	bigmem_free(g->moves);
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

/* True when some node two plies ahead of i carries the given flag. */
static bool two_ahead(const MmGraph *g, uint32_t i, MmFlags flag)
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

/*
 * A frozen node keeps the LOOP and SURVIVOR flags it was given: a boundary node
 * of an incremental run carries what the whole-book analysis found for it
 * (those flags depend only on the nodes below it, which did not change).
 */
static void extract_check_loops(MmGraph *g, MmStats *st)
{
	for (uint32_t i = 0; i < g->n; i++)
		if ((g->flags[i] & (MM_F_CHECKED | MM_F_FROZEN)) == MM_F_CHECKED)
			g->flags[i] |= MM_F_LOOP;
	for (int s = 0; s < MM_MAX_PLY; s++) {
		size_t dropped = 0;
		for (uint32_t i = 0; i < g->n; i++) {
			if ((g->flags[i] & (MM_F_LOOP | MM_F_FROZEN)) != MM_F_LOOP) continue;
			if (two_ahead(g, i, MM_F_LOOP)) continue;
			g->flags[i] &= (MmFlags)~MM_F_LOOP;
			dropped++;
		}
		if (dropped == 0) break;
	}
	for (uint32_t i = 0; i < g->n; i++)
		if ((g->flags[i] & (MM_F_LOOP | MM_F_FROZEN)) == MM_F_LOOP) {
			g->flags[i] |= MM_F_SURVIVOR;
			st->check_loop1++;
		}
	/* The node between two survivors is on the loop too. Only survivors are
	 * tested two plies ahead, so the result does not depend on visiting order.
	 * A frozen node's children already carry what its survivorship gave them. */
	for (uint32_t i = 0; i < g->n; i++) {
		if ((g->flags[i] & (MM_F_SURVIVOR | MM_F_FROZEN)) != MM_F_SURVIVOR) continue;
		for (uint32_t k = g->mstart[i]; k < g->mstart[i + 1]; k++) {
			uint32_t j = g->moves[k].next;
			if (j == MM_NONE) continue;
			for (uint32_t k2 = g->mstart[j]; k2 < g->mstart[j + 1]; k2++) {
				uint32_t j2 = g->moves[k2].next;
				if (j2 != MM_NONE && (g->flags[j2] & MM_F_SURVIVOR)) {
					/* A frozen child that is not on a loop yet would
					 * become one: its caller must analyse it too. */
					if ((g->flags[j] & (MM_F_FROZEN | MM_F_LOOP)) ==
					    MM_F_FROZEN)
						g->flags[j] |= MM_F_STALE;
					else
						g->flags[j] |= MM_F_LOOP;
					break;
				}
			}
		}
	}
	for (uint32_t i = 0; i < g->n; i++)
		if (g->flags[i] & MM_F_LOOP) st->check_loop2++;
}

/* Path-aware value of a check-loop node: re-entering the path is perpetual check.
 * A frozen node's value is final (no path from it leads back to the others). */
static MmVd dfs_loop(MmGraph *g, uint32_t i)
{
	if ((g->flags[i] & (MM_F_LOOP | MM_F_FROZEN)) != MM_F_LOOP) return g->vd[i];
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
	g->flags[i] &= (MmFlags)~MM_F_PATH;
	return for_parent(g, i, best, false);
}

/* Starting values of a cycle's nodes, as seen by their parents. */
static void init_cycle_node(MmGraph *g, uint32_t i)
{
	/* The parent's draw value: "repeats forever". */
	MmVd v = {g->draw[side_of(g, i) ^ 1], MM_DEPTH_MAX};
	/* On a perpetual-check loop the side in check wins it. */
	if (g->flags[i] & MM_F_LOOP)
		v.value = (int16_t)((g->flags[i] & MM_F_CHECKED) ? -MM_VALUE_MAX : MM_VALUE_MAX);
	g->vd[i] = v;
}

/*
 * Relaxes one component (members in index order): in-place sweeps over its
 * non-loop nodes, each followed by a path-aware walk from every loop node,
 * until a sweep changes nothing or the cap. Returns the sweeps.
 */
static int relax_component(MmGraph *g, const uint32_t *mem, size_t nm)
{
	for (size_t q = 0; q < nm; q++) init_cycle_node(g, mem[q]);
	int sweeps = 0;
	for (int s = 0; s < MM_RELAX_SWEEPS; s++) {
		sweeps++;
		size_t changed = 0;
		for (size_t q = 0; q < nm; q++) {
			uint32_t i = mem[q];
			if (g->flags[i] & MM_F_LOOP) continue;
			MmVd v = for_parent(g, i, best_move(g, i), true);
			if (v.value != g->vd[i].value || v.depth != g->vd[i].depth) changed++;
			g->vd[i] = v;
		}
		for (size_t q = 0; q < nm; q++)
			if (g->flags[mem[q]] & MM_F_LOOP) g->vd[mem[q]] = dfs_loop(g, mem[q]);
		if (changed == 0) break;
	}
	return sweeps;
}

/*
 * The analysis, one strongly connected component at a time, children first
 * (docs/minimax.md): a node on no cycle is settled from its moves in one
 * step — "const" (exact, no ply cap) when everything below it is const, else
 * with the ply cap of a line that went round a cycle; a cycle is relaxed on
 * its own from its starting values, its exits already final. YaneuraOu's
 * sweeps over the whole book reach the same values; with yo_peel, a node that
 * its 256 in-place peel sweeps (in index order) would not reach is not const.
 */
static bool stopped(const MmGraph *g)
{
	return g->stop && atomic_load(g->stop);
}

int mm_backup(MmGraph *g, MmStats *st)
{
	memset(st, 0, sizeof *st);
	size_t n = g->n;
	if (!g->vd) {
		g->vd = bigmem_alloc((n + 1) * sizeof *g->vd);
		if (!g->vd) return -1;
	}
	uint32_t *comp = bigmem_alloc((n + 1) * sizeof *comp);
	if (!comp) return -1;
	long nc = mm_scc(g, comp);
	if (nc == MM_STOPPED) {
		bigmem_free(comp);
		return MM_STOPPED;
	}
	uint32_t *cstart = nc >= 0 ? bigmem_alloc(((size_t)nc + 2) * sizeof *cstart) : NULL;
	uint32_t *mem = bigmem_alloc((n + 1) * sizeof *mem);
	uint16_t *sweep = g->yo_peel ? bigmem_alloc((n + 1) * sizeof *sweep) : NULL;
	if (nc < 0 || !cstart || !mem || (g->yo_peel && !sweep)) {
		bigmem_free(comp), bigmem_free(cstart), bigmem_free(mem), bigmem_free(sweep);
		return -1;
	}
	/* Members of each component, in index order (a counting sort). */
	for (size_t i = 0; i < n; i++) cstart[comp[i] + 2]++;
	for (long c = 0; c < nc; c++) cstart[c + 2] += cstart[c + 1];
	for (uint32_t i = 0; i < n; i++) mem[cstart[comp[i] + 1]++] = i;
	int rc = stopped(g) ? MM_STOPPED : 0;
	if (rc == 0) extract_check_loops(g, st);
	st->peel_sweeps = 1;
	for (long c = 0; c < nc && rc == 0; c++) {
		if ((c & 0xffff) == 0 && stopped(g)) {
			rc = MM_STOPPED;
			break;
		}
		const uint32_t *m = mem + cstart[c];
		size_t nm = cstart[c + 1] - cstart[c];
		uint32_t i = m[0];
		if (g->flags[i] & MM_F_FROZEN) continue;
		if (nm == 1 && !(g->flags[i] & MM_F_LOOP)) {
			bool exact = true;
			unsigned sw = 1;
			for (uint32_t k = g->mstart[i]; k < g->mstart[i + 1] && exact; k++) {
				uint32_t j = g->moves[k].next;
				if (j == MM_NONE) continue;
				if (!(g->flags[j] & MM_F_CONST))
					exact = false;
				else if (sweep && (unsigned)(sweep[j] + (j > i)) > sw)
					sw = (unsigned)(sweep[j] + (j > i));
			}
			if (exact && sweep) {
				if (sw > MM_MAX_PLY) exact = false;
				sweep[i] = (uint16_t)sw;
			}
			g->vd[i] = for_parent(g, i, best_move(g, i), !exact);
			if (exact) {
				g->flags[i] |= MM_F_CONST;
				st->const_nodes++;
				if (sw > (unsigned)st->peel_sweeps) st->peel_sweeps = (int)sw;
			}
			continue;
		}
		int sw = relax_component(g, m, nm);
		if (sw > st->relax_sweeps) st->relax_sweeps = sw;
	}
	bigmem_free(comp), bigmem_free(cstart), bigmem_free(mem), bigmem_free(sweep);
	return rc;
}

/* ---- strongly connected components ------------------------------------------- */

/*
 * Pearce's algorithm ("A space-efficient algorithm for finding strongly
 * connected components", 2016) without recursion: Tarjan's depth-first
 * search, in which one number a node serves for its visit index, its low
 * link and, once its component is complete, the component (counted down
 * from n - 1, above every index still in use, so that an edge into a
 * finished component never lowers a link). Besides comp it needs two stacks
 * of a word a node and one of a word and a byte: 13 bytes a node, where
 * Tarjan's index and low arrays made it 20. The components complete in the
 * same order as Tarjan's and are numbered the same: comp[i] gets node i's
 * component, children first (a component's edges lead only to components
 * with smaller numbers or to itself). Returns the count, -1, or MM_STOPPED
 * when g->stop turned true (checked every 65,536 nodes visited).
 */
long mm_scc(const MmGraph *g, uint32_t *comp)
{
	size_t n = g->n;
	if (n == 0) return 0;
	uint32_t *stack = bigmem_alloc(n * sizeof *stack), *cs = bigmem_alloc(n * sizeof *cs);
	uint32_t *ck = bigmem_alloc(n * sizeof *ck);
	uint8_t *root = bigmem_alloc(n);
	if (!stack || !cs || !ck || !root) {
		bigmem_free(stack), bigmem_free(cs), bigmem_free(ck), bigmem_free(root);
		return -1;
	}
	uint32_t *rindex = comp; /* 0: not visited */
	memset(rindex, 0, n * sizeof *rindex);
	uint32_t index = 1, c = (uint32_t)(n - 1);
	size_t sp = 0, csp = 0;
	bool nstop = false;
	for (uint32_t r = 0; r < n && !nstop; r++) {
		if (rindex[r]) continue;
		cs[csp] = r;
		ck[csp] = g->mstart[r];
		root[csp++] = 1;
		rindex[r] = index++;
		while (csp) {
			uint32_t v = cs[csp - 1];
			if (ck[csp - 1] < g->mstart[v + 1]) {
				uint32_t w = g->moves[ck[csp - 1]++].next;
				if (w == MM_NONE) continue;
				if (!rindex[w]) {
					/* A search that waits on the disk (its arrays in
					 * files) still stops within a moment. */
					if ((index & 0xffff) == 0 && stopped(g)) {
						nstop = true;
						break;
					}
					rindex[w] = index++;
					cs[csp] = w;
					ck[csp] = g->mstart[w];
					root[csp++] = 1;
				} else if (rindex[w] < rindex[v]) {
					rindex[v] = rindex[w];
					root[csp - 1] = 0;
				}
				continue;
			}
			bool is_root = root[--csp];
			if (is_root) {
				/* v and the nodes above it on the stack: one component. */
				index--;
				while (sp && rindex[v] <= rindex[stack[sp - 1]]) {
					rindex[stack[--sp]] = c;
					index--;
				}
				rindex[v] = c--;
			} else {
				stack[sp++] = v;
			}
			if (csp && rindex[v] < rindex[cs[csp - 1]]) {
				rindex[cs[csp - 1]] = rindex[v];
				root[csp - 1] = 0;
			}
		}
	}
	bigmem_free(stack), bigmem_free(cs), bigmem_free(ck), bigmem_free(root);
	if (nstop) return MM_STOPPED;
	/* Completed first: 0. */
	for (size_t i = 0; i < n; i++) comp[i] = (uint32_t)(n - 1) - comp[i];
	return (long)((uint32_t)(n - 1) - c);
}
