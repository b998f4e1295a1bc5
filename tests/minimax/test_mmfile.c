/*
 * tests/minimax/test_mmfile.c — the kept minimax graph (minimax/mmfile.h):
 * mmfile_parents against brute force; a written graph opens with every key,
 * flag, value, move list and parent as written; changes (new nodes, replaced
 * move lists, new states) show at once, survive mmfile_journal_append and a
 * reopen, and a reopen at an older recorded length shows the older state; a
 * tail beyond the recorded length is ignored and overwritten; nothing pending
 * leaves the journal alone; the view never writes the graph file; another
 * stamp, missing or short files and damaged bytes give MMFILE_ESTALE; a
 * folded view is the graph written anew in key order.
 * Every view is compared in full with a model kept by the test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "minimax/mmfile.h"
#include "shogi/bigmem.h"
#include "tests/support/support.h"

/* ---- the model ------------------------------------------------------------------- */

typedef struct {
	MmMove *m;
	uint32_t len;
} MList;

typedef struct {
	size_t n; /* nodes */
	Key *keys;
	uint8_t *flags;
	MmVd *vd;
	MList *moves;
	size_t cap;
} Model;

static void model_reserve(Model *md, size_t n)
{
	if (n <= md->cap) return;
	size_t nc = md->cap ? md->cap * 2 : 64;
	while (nc < n) nc *= 2;
	md->keys = realloc(md->keys, nc * sizeof *md->keys);
	md->flags = realloc(md->flags, nc * sizeof *md->flags);
	md->vd = realloc(md->vd, nc * sizeof *md->vd);
	md->moves = realloc(md->moves, nc * sizeof *md->moves);
	assert_true(md->keys && md->flags && md->vd && md->moves);
	md->cap = nc;
}

static void model_free(Model *md)
{
	for (size_t i = 0; i < md->n; i++) free(md->moves[i].m);
	free(md->keys), free(md->flags), free(md->vd), free(md->moves);
	memset(md, 0, sizeof *md);
}

static void model_copy(Model *dst, const Model *src)
{
	memset(dst, 0, sizeof *dst);
	model_reserve(dst, src->n ? src->n : 1);
	dst->n = src->n;
	memcpy(dst->keys, src->keys, src->n * sizeof *src->keys);
	memcpy(dst->flags, src->flags, src->n);
	memcpy(dst->vd, src->vd, src->n * sizeof *src->vd);
	for (size_t i = 0; i < src->n; i++) {
		dst->moves[i].len = src->moves[i].len;
		dst->moves[i].m = malloc((src->moves[i].len + 1) * sizeof(MmMove));
		assert_non_null(dst->moves[i].m);
		memcpy(dst->moves[i].m, src->moves[i].m, src->moves[i].len * sizeof(MmMove));
	}
}

static bool model_has_key(const Model *md, Key k)
{
	for (size_t i = 0; i < md->n; i++)
		if (key_equal(md->keys[i], k)) return true;
	return false;
}

static int cmp_key(const void *a, const void *b)
{
	return key_cmp(*(const Key *)a, *(const Key *)b);
}

/* Random moves for a node: up to four, edges to distinct nodes below count, leaves. */
static MList random_moves(uint64_t *rng, size_t count)
{
	MList l;
	l.len = (uint32_t)(ts_rand(rng) % 5);
	l.m = malloc((l.len + 1) * sizeof *l.m);
	assert_non_null(l.m);
	for (uint32_t k = 0; k < l.len; k++) {
		uint64_t r = ts_rand(rng);
		l.m[k].move = (uint16_t)r;
		l.m[k].value = (int16_t)(r >> 16);
		l.m[k].next = MM_NONE;
		if (count && (r >> 40) % 3) {
			uint32_t c = (uint32_t)((r >> 44) % count);
			bool dup = false;
			for (uint32_t q = 0; q < k; q++) dup = dup || l.m[q].next == c;
			if (!dup) l.m[k].next = c;
		}
	}
	return l;
}

/* A random graph of n nodes with keys in key order. */
static void model_random(Model *md, size_t n, uint64_t *rng)
{
	memset(md, 0, sizeof *md);
	model_reserve(md, n ? n : 1);
	md->n = n;
	for (size_t i = 0; i < n; i++) {
		md->keys[i] = (Key){ts_rand(rng), ts_rand(rng)};
		if (i == 1) md->keys[i].hi = md->keys[0].hi; /* alike in one half */
	}
	qsort(md->keys, n, sizeof *md->keys, cmp_key);
	for (size_t i = 0; i < n; i++) {
		md->flags[i] = (uint8_t)ts_rand(rng);
		uint64_t r = ts_rand(rng);
		md->vd[i] = (MmVd){(int16_t)r, (uint16_t)(r >> 16)};
		md->moves[i] = random_moves(rng, n);
	}
}

static const int DRAW[2] = {-37, 41};

static void model_write(const Model *md, const char *dir, uint64_t stamp)
{
	uint32_t *mstart = malloc((md->n + 1) * sizeof *mstart);
	size_t total = 0;
	for (size_t i = 0; i < md->n; i++) total += md->moves[i].len;
	MmMove *moves = malloc((total + 1) * sizeof *moves);
	assert_true(mstart && moves);
	size_t w = 0;
	for (size_t i = 0; i < md->n; i++) {
		mstart[i] = (uint32_t)w;
		memcpy(moves + w, md->moves[i].m, md->moves[i].len * sizeof *moves);
		w += md->moves[i].len;
	}
	mstart[md->n] = (uint32_t)w;
	uint32_t *pstart, *parents;
	assert_int_equal(mmfile_parents(&pstart, &parents, md->n, mstart, moves), 0);
	char err[MMFILE_ERRLEN] = "";
	int rc = mmfile_write(dir, stamp, DRAW, md->n, md->keys, md->flags, md->vd, mstart, moves,
	                      pstart, parents, err);
	if (rc) fail_msg("mmfile_write: %d %s", rc, err);
	free(mstart), free(moves), bigmem_free(pstart), bigmem_free(parents);
}

/* ---- comparing a view with the model ------------------------------------------------ */

typedef struct {
	uint32_t *got;
	size_t n, cap;
	size_t count;
} Parents;

static int collect_parent(uint32_t p, void *ctx)
{
	Parents *ps = ctx;
	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? ps->cap * 2 : 16;
		ps->got = realloc(ps->got, ps->cap * sizeof *ps->got);
		assert_non_null(ps->got);
	}
	ps->got[ps->n++] = p;
	return 0;
}

static void expect_view(const MmView *v, const Model *md, uint64_t *rng)
{
	assert_int_equal(mmfile_count(v), md->n);
	for (uint32_t i = 0; i < md->n; i++) {
		if (!key_equal(mmfile_key(v, i), md->keys[i])) fail_msg("node %u: another key", i);
		assert_int_equal(mmfile_find(v, md->keys[i]), i);
		assert_int_equal(mmfile_flags(v, i), md->flags[i]);
		MmVd a = mmfile_vd(v, i), b = md->vd[i];
		if (a.value != b.value || a.depth != b.depth)
			fail_msg("node %u: vd (%d, %u), model (%d, %u)", i, a.value, a.depth,
			         b.value, b.depth);
		uint32_t len = 12345;
		const MmMove *m = mmfile_moves(v, i, &len);
		assert_non_null(m);
		if (len != md->moves[i].len)
			fail_msg("node %u: %u moves, model %u", i, len, md->moves[i].len);
		for (uint32_t k = 0; k < len; k++) {
			assert_int_equal(m[k].move, md->moves[i].m[k].move);
			assert_int_equal(m[k].value, md->moves[i].m[k].value);
			assert_int_equal(m[k].next, md->moves[i].m[k].next);
		}
	}
	/* every node with an edge to c is reported among c's parents */
	for (uint32_t c = 0; c < md->n; c++) {
		Parents ps = {0};
		assert_int_equal(mmfile_each_parent(v, c, collect_parent, &ps), 0);
		for (size_t q = 0; q < ps.n; q++) assert_true(ps.got[q] < md->n);
		for (uint32_t p = 0; p < md->n; p++)
			for (uint32_t k = 0; k < md->moves[p].len; k++) {
				if (md->moves[p].m[k].next != c) continue;
				bool seen = false;
				for (size_t q = 0; q < ps.n; q++) seen = seen || ps.got[q] == p;
				if (!seen) fail_msg("node %u: parent %u not reported", c, p);
			}
		free(ps.got);
	}
	/* keys that are not there */
	Key mixed[300];
	uint32_t got[300];
	size_t nm = 0;
	for (int t = 0; t < 200; t++) {
		Key k = {ts_rand(rng), ts_rand(rng)};
		if (t % 2 && md->n) k.hi = md->keys[(size_t)t % md->n].hi;
		if (!model_has_key(md, k)) assert_int_equal(mmfile_find(v, k), MM_NONE);
		mixed[nm++] = k;
		/* ... among keys that are: the graph's and the nodes added since */
		if (md->n && t % 2) mixed[nm++] = md->keys[ts_rand(rng) % md->n];
	}
	/* Looked up together: as one at a time, in every batch length. */
	for (size_t len = 0; len <= nm; len += len < 70 ? 1 : 37) {
		mmfile_find_many(v, mixed, len, got);
		for (size_t i = 0; i < len; i++)
			if (got[i] != mmfile_find(v, mixed[i]))
				fail_msg("batch of %zu, key %zu: %u, one at a time %u", len, i,
				         got[i], mmfile_find(v, mixed[i]));
	}
}

/* Random changes through the view and the model alike. */
static void random_changes(MmView *v, Model *md, uint64_t *rng, int ops)
{
	for (int op = 0; op < ops; op++) {
		uint64_t r = ts_rand(rng);
		int kind = (int)(r % 3);
		if (md->n == 0) kind = 0;
		if (kind == 0) {
			Key k;
			do k = (Key){ts_rand(rng), ts_rand(rng)};
			while (model_has_key(md, k));
			uint8_t fl = (r >> 8) & 1 ? (uint8_t)(r >> 16) : 0;
			uint32_t idx = MM_NONE;
			assert_int_equal(mmfile_add_node(v, k, fl, &idx), 0);
			assert_int_equal(idx, md->n);
			model_reserve(md, md->n + 1);
			md->keys[md->n] = k;
			md->flags[md->n] = fl;
			md->vd[md->n] = (MmVd){0, 0};
			md->moves[md->n] = (MList){malloc(sizeof(MmMove)), 0};
			md->n++;
		} else if (kind == 1) {
			uint32_t i = (uint32_t)((r >> 8) % md->n);
			MList l = random_moves(rng, md->n);
			assert_int_equal(mmfile_set_moves(v, i, l.m, l.len), 0);
			free(md->moves[i].m);
			md->moves[i] = l;
		} else {
			uint32_t i = (uint32_t)((r >> 8) % md->n);
			uint64_t s = ts_rand(rng);
			MmVd vd = {(int16_t)s, (uint16_t)(s >> 16)};
			assert_int_equal(mmfile_set_state(v, i, (uint8_t)(s >> 32), vd), 0);
			md->flags[i] = (uint8_t)(s >> 32);
			md->vd[i] = vd;
		}
	}
}

static void open_ok(MmView *v, const char *dir, uint64_t stamp, uint64_t jlen)
{
	char err[MMFILE_ERRLEN] = "";
	int rc = mmfile_open(v, dir, stamp, jlen, err);
	if (rc)
		fail_msg("mmfile_open(%s, len %llu): %d %s", dir, (unsigned long long)jlen, rc,
		         err);
}

static void expect_stale(const char *dir, uint64_t stamp, uint64_t jlen, const char *why)
{
	MmView v;
	char err[MMFILE_ERRLEN] = "";
	int rc = mmfile_open(&v, dir, stamp, jlen, err);
	if (rc != MMFILE_ESTALE) fail_msg("%s: mmfile_open gives %d, not MMFILE_ESTALE", why, rc);
	assert_true(err[0] != '\0');
	mmfile_close(&v); /* safe after a failed open */
}

static char *path_in(const char *dir, const char *name)
{
	size_t len = strlen(dir) + strlen(name) + 2;
	char *p = malloc(len);
	assert_non_null(p);
	snprintf(p, len, "%s/%s", dir, name);
	return p;
}

static size_t file_len(const char *dir, const char *name)
{
	char *p = path_in(dir, name);
	size_t len = 0;
	char *b = ts_read_file(p, &len);
	assert_non_null(b);
	free(b), free(p);
	return len;
}

/* ---- tests ------------------------------------------------------------------------------ */

/* A random graph of n nodes in the moves form: 0..5 moves a node, three in
 * four of them edges. Its moves' count. */
static size_t random_graph(uint64_t *rng, size_t n, uint32_t **mstart_out, MmMove **moves_out)
{
	uint32_t *mstart = malloc((n + 1) * sizeof *mstart);
	MmMove *moves = malloc((6 * n + 1) * sizeof *moves);
	assert_true(mstart && moves);
	size_t w = 0;
	for (size_t i = 0; i < n; i++) {
		mstart[i] = (uint32_t)w;
		int k = (int)(ts_rand(rng) % 6);
		for (int q = 0; q < k; q++) {
			uint64_t r = ts_rand(rng);
			moves[w++] =
			    (MmMove){(uint16_t)q, 0, r % 4 ? (uint32_t)((r >> 8) % n) : MM_NONE};
		}
	}
	mstart[n] = (uint32_t)w;
	*mstart_out = mstart;
	*moves_out = moves;
	return w;
}

static void test_mmfile__parents_are_the_reverse_edges(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_mmfile__parents_are_the_reverse_edges");
	for (int round = 0; round < 200; round++) {
		size_t n = 1 + ts_rand(&rng) % 60;
		uint32_t *mstart;
		MmMove *moves;
		random_graph(&rng, n, &mstart, &moves);
		uint32_t *pstart, *parents;
		assert_int_equal(mmfile_parents(&pstart, &parents, n, mstart, moves), 0);
		assert_int_equal(pstart[0], 0);
		for (uint32_t c = 0; c < n; c++) {
			/* brute force: every edge p -> c, p ascending, with multiplicity */
			uint32_t want[512];
			size_t nw = 0;
			for (uint32_t p = 0; p < n; p++)
				for (uint32_t k = mstart[p]; k < mstart[p + 1]; k++)
					if (moves[k].next == c) want[nw++] = p;
			assert_int_equal(pstart[c + 1] - pstart[c], nw);
			for (size_t q = 0; q < nw; q++)
				assert_int_equal(parents[pstart[c] + q], want[q]);
		}
		free(mstart), free(moves), bigmem_free(pstart), bigmem_free(parents);
	}
	/* Graphs large enough to be cut into ranges on threads (shogi/parfor.h):
	 * the same lists, each in its parents' order, as one pass places them. */
	for (int round = 0; round < 4; round++) {
		size_t n = 5000 + ts_rand(&rng) % 40000;
		uint32_t *mstart;
		MmMove *moves;
		size_t w = random_graph(&rng, n, &mstart, &moves);
		uint32_t *want_start = calloc(n + 1, sizeof *want_start),
		         *want = malloc((w + 1) * 4), *fill = calloc(n + 1, sizeof *fill);
		assert_true(want_start && want && fill);
		for (size_t k = 0; k < w; k++)
			if (moves[k].next != MM_NONE) want_start[moves[k].next + 1]++;
		for (size_t c = 0; c < n; c++) want_start[c + 1] += want_start[c];
		for (uint32_t p = 0; p < n; p++)
			for (uint32_t k = mstart[p]; k < mstart[p + 1]; k++)
				if (moves[k].next != MM_NONE) {
					uint32_t c = moves[k].next;
					want[want_start[c] + fill[c]++] = p;
				}
		uint32_t *pstart, *parents;
		assert_int_equal(mmfile_parents(&pstart, &parents, n, mstart, moves), 0);
		assert_memory_equal(pstart, want_start, (n + 1) * sizeof *pstart);
		assert_memory_equal(parents, want, want_start[n] * sizeof *parents);
		free(want_start), free(want), free(fill);
		free(mstart), free(moves), bigmem_free(pstart), bigmem_free(parents);
	}
}

static void test_mmfile__written_graph_opens_as_written(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_mmfile__written_graph_opens_as_written");
	char *dir = ts_mkdtemp();
	size_t sizes[] = {0, 1, 2, 7, 300, 5000};
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		Model md;
		model_random(&md, sizes[s], &rng);
		uint64_t stamp = ts_rand(&rng);
		model_write(&md, dir, stamp);
		/* the journal starts empty */
		assert_int_equal(file_len(dir, MMFILE_JOURNAL), MMFILE_JOURNAL_EMPTY);
		/* no temporary file is left behind */
		char *tmp = path_in(dir, MMFILE_GRAPH ".tmp");
		assert_null(ts_read_file(tmp, NULL));
		free(tmp);
		MmView v;
		open_ok(&v, dir, stamp, MMFILE_JOURNAL_EMPTY);
		assert_int_equal(v.draw[0], DRAW[0]);
		assert_int_equal(v.draw[1], DRAW[1]);
		expect_view(&v, &md, &rng);
		/* Pages read ahead, every kind for every node (each twice or
		 * more, past the fewest it reads ahead for), change nothing. */
		size_t nt = 2 * MMFILE_TOUCH_MIN + md.n;
		uint32_t *all = malloc(nt * sizeof *all);
		assert_non_null(all);
		for (size_t q = 0; q < nt; q++) all[q] = md.n ? (uint32_t)(q % md.n) : 0;
		if (md.n)
			mmfile_touch(&v, all, nt,
			             MMFILE_TOUCH_STATE | MMFILE_TOUCH_PARENTS |
			                 MMFILE_TOUCH_MOVES | MMFILE_TOUCH_CHILD_STATE);
		free(all);
		expect_view(&v, &md, &rng);
		mmfile_close(&v);
		model_free(&md);
	}
	ts_rmtree(dir);
	free(dir);
}

/* Nodes of the file and nodes added since, in any order and any subset, are
 * put in key order (the incremental run's local numbering and its rewrite
 * walk depend on it), with fewer and more added nodes than the rank
 * lookups take threads for. */
static void test_mmfile__nodes_are_put_in_key_order(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_mmfile__nodes_are_put_in_key_order");
	char *dir = ts_mkdtemp();
	size_t sizes[] = {0, 1, 50, 3000};
	int adds[] = {0, 5, 300};
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
		for (size_t a = 0; a < sizeof adds / sizeof adds[0]; a++) {
			Model md;
			model_random(&md, sizes[s], &rng);
			uint64_t stamp = ts_rand(&rng);
			model_write(&md, dir, stamp);
			MmView v;
			open_ok(&v, dir, stamp, MMFILE_JOURNAL_EMPTY);
			for (int k = 0; k < adds[a]; k++) {
				Key key;
				do key = (Key){ts_rand(&rng), ts_rand(&rng)};
				while (model_has_key(&md, key));
				uint32_t idx;
				assert_int_equal(mmfile_add_node(&v, key, 0, &idx), 0);
				model_reserve(&md, md.n + 1);
				md.keys[md.n] = key;
				md.flags[md.n] = 0;
				md.vd[md.n] = (MmVd){0, 0};
				md.moves[md.n] = (MList){malloc(sizeof(MmMove)), 0};
				md.n++;
			}
			/* A random subset, shuffled. */
			size_t n = md.n, m = 0;
			uint32_t *nodes = malloc((n + 1) * sizeof *nodes);
			assert_non_null(nodes);
			for (uint32_t i = 0; i < n; i++)
				if (ts_rand(&rng) % 4) nodes[m++] = i;
			for (size_t i = m; i > 1; i--) {
				size_t j = (size_t)(ts_rand(&rng) % i);
				uint32_t t = nodes[i - 1];
				nodes[i - 1] = nodes[j];
				nodes[j] = t;
			}
			size_t added = 0;
			for (size_t i = 0; i < m; i++) added += nodes[i] >= sizes[s];
			assert_int_equal(mmfile_key_order(&v, nodes, m), 0);
			for (size_t i = 1; i < m; i++)
				assert_true(key_cmp(mmfile_key(&v, nodes[i - 1]),
				                    mmfile_key(&v, nodes[i])) < 0);
			size_t added_after = 0;
			for (size_t i = 0; i < m; i++) added_after += nodes[i] >= sizes[s];
			assert_int_equal(added_after, added);
			free(nodes);
			mmfile_close(&v);
			model_free(&md);
		}
	ts_rmtree(dir);
	free(dir);
}

static void test_mmfile__changes_survive_the_journal(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_mmfile__changes_survive_the_journal");
	char *dir = ts_mkdtemp();
	for (int round = 0; round < 20; round++) {
		Model md, at[4];
		uint64_t len[4];
		model_random(&md, (size_t)(ts_rand(&rng) % 200), &rng);
		uint64_t stamp = ts_rand(&rng);
		model_write(&md, dir, stamp);
		model_copy(&at[0], &md);
		len[0] = MMFILE_JOURNAL_EMPTY;
		/* three runs, each opening at the last length and appending a batch */
		for (int run = 1; run < 4; run++) {
			MmView v;
			open_ok(&v, dir, stamp, len[run - 1]);
			expect_view(&v, &md, &rng);
			random_changes(&v, &md, &rng, 1 + (int)(ts_rand(&rng) % 60));
			/* the view shows its own changes at once */
			expect_view(&v, &md, &rng);
			char err[MMFILE_ERRLEN] = "";
			assert_int_equal(
			    mmfile_journal_append(&v, dir, len[run - 1], &len[run], err), 0);
			assert_true(len[run] > len[run - 1]);
			assert_int_equal(file_len(dir, MMFILE_JOURNAL), len[run]);
			mmfile_close(&v);
			model_copy(&at[run], &md);
		}
		/* each recorded length shows the state of its time */
		for (int run = 0; run < 4; run++) {
			MmView v;
			open_ok(&v, dir, stamp, len[run]);
			expect_view(&v, &at[run], &rng);
			mmfile_close(&v);
			model_free(&at[run]);
		}
		model_free(&md);
	}
	ts_rmtree(dir);
	free(dir);
}

/*
 * A run killed before its commit leaves a batch beyond the length the book
 * recorded: the next run, opened at the recorded length, does not see it, and
 * its own batch overwrites it.
 */
static void test_mmfile__an_uncommitted_tail_is_ignored_and_overwritten(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_mmfile__an_uncommitted_tail_is_ignored_and_overwritten");
	char *dir = ts_mkdtemp();
	Model md, killed;
	model_random(&md, 100, &rng);
	uint64_t stamp = 77, la, lb;
	model_write(&md, dir, stamp);
	model_copy(&killed, &md);
	char err[MMFILE_ERRLEN] = "";
	MmView v;
	open_ok(&v, dir, stamp, MMFILE_JOURNAL_EMPTY);
	random_changes(&v, &killed, &rng, 200);
	assert_int_equal(mmfile_journal_append(&v, dir, MMFILE_JOURNAL_EMPTY, &la, err), 0);
	mmfile_close(&v);
	/* the book still says: empty journal */
	open_ok(&v, dir, stamp, MMFILE_JOURNAL_EMPTY);
	expect_view(&v, &md, &rng);
	random_changes(&v, &md, &rng, 5);
	assert_int_equal(mmfile_journal_append(&v, dir, MMFILE_JOURNAL_EMPTY, &lb, err), 0);
	mmfile_close(&v);
	assert_true(lb < la);
	/* the file ends with the new batch: the old tail is gone */
	assert_int_equal(file_len(dir, MMFILE_JOURNAL), lb);
	open_ok(&v, dir, stamp, lb);
	expect_view(&v, &md, &rng);
	mmfile_close(&v);
	model_free(&md);
	model_free(&killed);
	ts_rmtree(dir);
	free(dir);
}

static void test_mmfile__nothing_pending_leaves_the_journal_alone(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_mmfile__nothing_pending_leaves_the_journal_alone");
	char *dir = ts_mkdtemp();
	Model md;
	model_random(&md, 50, &rng);
	model_write(&md, dir, 5);
	char *jpath = path_in(dir, MMFILE_JOURNAL);
	size_t l0;
	char *before = ts_read_file(jpath, &l0);
	assert_non_null(before);
	MmView v;
	open_ok(&v, dir, 5, MMFILE_JOURNAL_EMPTY);
	uint64_t nl = 999;
	char err[MMFILE_ERRLEN] = "";
	assert_int_equal(mmfile_journal_append(&v, dir, MMFILE_JOURNAL_EMPTY, &nl, err), 0);
	assert_int_equal(nl, MMFILE_JOURNAL_EMPTY);
	/* and a second append after a real one adds nothing either */
	uint32_t idx;
	assert_int_equal(mmfile_add_node(&v, (Key){1, 1}, 0, &idx), 0);
	uint64_t l1, l2;
	assert_int_equal(mmfile_journal_append(&v, dir, MMFILE_JOURNAL_EMPTY, &l1, err), 0);
	assert_true(l1 > MMFILE_JOURNAL_EMPTY);
	assert_int_equal(mmfile_journal_append(&v, dir, l1, &l2, err), 0);
	assert_int_equal(l2, l1);
	assert_int_equal(file_len(dir, MMFILE_JOURNAL), l1);
	mmfile_close(&v);
	size_t lj;
	char *after = ts_read_file(jpath, &lj);
	assert_int_equal(lj, l1);
	assert_memory_equal(before, after, l0); /* the header is as it was */
	free(before), free(after), free(jpath);
	model_free(&md);
	ts_rmtree(dir);
	free(dir);
}

/* The graph file is mapped privately: a view's changes never reach it. */
static void test_mmfile__a_view_never_writes_the_graph_file(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_mmfile__a_view_never_writes_the_graph_file");
	char *dir = ts_mkdtemp();
	Model md;
	model_random(&md, 400, &rng);
	model_write(&md, dir, 9);
	char *gpath = path_in(dir, MMFILE_GRAPH);
	size_t l0, l1;
	char *before = ts_read_file(gpath, &l0);
	MmView v;
	open_ok(&v, dir, 9, MMFILE_JOURNAL_EMPTY);
	Model mod;
	model_copy(&mod, &md);
	random_changes(&v, &mod, &rng, 500);
	for (uint32_t i = 0; i < 400; i++)
		assert_int_equal(mmfile_set_state(&v, i, 0xff, (MmVd){-1, 1}), 0);
	mmfile_close(&v);
	char *after = ts_read_file(gpath, &l1);
	assert_int_equal(l0, l1);
	assert_memory_equal(before, after, l0);
	/* reopened without the journal batch (none was appended): as written */
	open_ok(&v, dir, 9, MMFILE_JOURNAL_EMPTY);
	expect_view(&v, &md, &rng);
	mmfile_close(&v);
	free(before), free(after), free(gpath);
	model_free(&md);
	model_free(&mod);
	ts_rmtree(dir);
	free(dir);
}

static void overwrite_byte(const char *dir, const char *name, size_t off, uint8_t x)
{
	char *p = path_in(dir, name);
	size_t len;
	char *b = ts_read_file(p, &len);
	assert_non_null(b);
	assert_true(off < len);
	b[off] ^= (char)x;
	assert_int_equal(ts_write_file(p, b, len), 0);
	free(b), free(p);
}

static void truncate_file(const char *dir, const char *name, size_t len)
{
	char *p = path_in(dir, name);
	size_t l;
	char *b = ts_read_file(p, &l);
	assert_non_null(b);
	assert_true(len <= l);
	assert_int_equal(ts_write_file(p, b, len), 0);
	free(b), free(p);
}

static void test_mmfile__stale_or_damaged_files_are_refused(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_mmfile__stale_or_damaged_files_are_refused");
	char *dir = ts_mkdtemp(), *other = ts_mkdtemp();
	Model md;
	model_random(&md, 120, &rng);
	model_write(&md, dir, 1000);
	model_write(&md, other, 2000);
	MmView v;
	open_ok(&v, dir, 1000, MMFILE_JOURNAL_EMPTY);
	random_changes(&v, &md, &rng, 40);
	uint64_t len;
	char err[MMFILE_ERRLEN] = "";
	assert_int_equal(mmfile_journal_append(&v, dir, MMFILE_JOURNAL_EMPTY, &len, err), 0);
	mmfile_close(&v);
	open_ok(&v, dir, 1000, len);
	mmfile_close(&v);

	expect_stale(dir, 1001, len, "another stamp");
	expect_stale(dir, 1000, MMFILE_JOURNAL_EMPTY - 1, "a journal length inside the header");
	expect_stale(dir, 1000, len + 1, "a journal shorter than recorded");
	expect_stale(dir, 1000, len - 1, "a length that cuts a batch");
	/* a journal of another graph */
	char *j1 = path_in(dir, MMFILE_JOURNAL), *j2 = path_in(other, MMFILE_JOURNAL);
	size_t l2;
	char *jb = ts_read_file(j2, &l2);
	char *mine = ts_read_file(j1, NULL);
	assert_int_equal(ts_write_file(j1, jb, l2), 0);
	expect_stale(dir, 1000, MMFILE_JOURNAL_EMPTY, "the journal of another graph");
	assert_int_equal(ts_write_file(j1, mine, len), 0);
	open_ok(&v, dir, 1000, len);
	mmfile_close(&v);
	/* a damaged batch: each byte of the first batch's length, checksum and
	 * payload in turn */
	for (size_t off = MMFILE_JOURNAL_EMPTY; off < len; off += 1 + off % 7) {
		overwrite_byte(dir, MMFILE_JOURNAL, off, 0x20);
		expect_stale(dir, 1000, len, "a damaged journal batch");
		overwrite_byte(dir, MMFILE_JOURNAL, off, 0x20);
	}
	open_ok(&v, dir, 1000, len);
	mmfile_close(&v);
	/* damaged graph header: magic, version, header size */
	size_t header_bytes[] = {0, 7, 8, 12};
	for (size_t q = 0; q < sizeof header_bytes / sizeof header_bytes[0]; q++) {
		overwrite_byte(dir, MMFILE_GRAPH, header_bytes[q], 0x01);
		expect_stale(dir, 1000, len, "a damaged graph header");
		overwrite_byte(dir, MMFILE_GRAPH, header_bytes[q], 0x01);
	}
	/* a graph file of version 1, whose filter set one bit a key: 2 ^ 3 */
	overwrite_byte(dir, MMFILE_GRAPH, 8, 0x03);
	expect_stale(dir, 1000, len, "a graph file of version 1");
	overwrite_byte(dir, MMFILE_GRAPH, 8, 0x03);
	/* a graph file cut short, or of header size only */
	size_t gl = file_len(dir, MMFILE_GRAPH);
	char *gpath = path_in(dir, MMFILE_GRAPH);
	char *gb = ts_read_file(gpath, NULL);
	truncate_file(dir, MMFILE_GRAPH, gl - 8);
	expect_stale(dir, 1000, len, "a graph file cut short");
	truncate_file(dir, MMFILE_GRAPH, 100);
	expect_stale(dir, 1000, len, "a graph file shorter than its header");
	assert_int_equal(ts_write_file(gpath, gb, gl), 0);
	open_ok(&v, dir, 1000, len);
	expect_view(&v, &md, &rng);
	mmfile_close(&v);
	/* missing files */
	assert_int_equal(remove(j1), 0);
	expect_stale(dir, 1000, len, "no journal");
	assert_int_equal(remove(gpath), 0);
	expect_stale(dir, 1000, MMFILE_JOURNAL_EMPTY, "no graph file");
	free(j1), free(j2), free(jb), free(mine), free(gpath), free(gb);
	model_free(&md);
	ts_rmtree(dir);
	ts_rmtree(other);
	free(dir);
	free(other);
}

/* The model renumbered in key order, as a graph file written anew holds it. */
static void model_key_order(Model *md)
{
	size_t n = md->n;
	Key *sorted = malloc((n + 1) * sizeof *sorted);
	uint32_t *num = malloc((n + 1) * sizeof *num);
	assert_true(sorted && num);
	memcpy(sorted, md->keys, n * sizeof *sorted);
	qsort(sorted, n, sizeof *sorted, cmp_key);
	for (size_t i = 0; i < n; i++) {
		Key *at = bsearch(&md->keys[i], sorted, n, sizeof *sorted, cmp_key);
		assert_non_null(at);
		num[i] = (uint32_t)(at - sorted);
	}
	Model out;
	memset(&out, 0, sizeof out);
	model_reserve(&out, n ? n : 1);
	out.n = n;
	for (size_t i = 0; i < n; i++) {
		uint32_t t = num[i];
		out.keys[t] = md->keys[i];
		out.flags[t] = md->flags[i];
		out.vd[t] = md->vd[i];
		out.moves[t] = md->moves[i];
		for (uint32_t k = 0; k < out.moves[t].len; k++)
			if (out.moves[t].m[k].next != MM_NONE)
				out.moves[t].m[k].next = num[out.moves[t].m[k].next];
	}
	free(md->keys), free(md->flags), free(md->vd), free(md->moves);
	*md = out;
	free(sorted), free(num);
}

/*
 * A view folded into a new graph file (mmfile_fold: the file, the journal's
 * changes and the view's own) is byte for byte the file mmfile_write makes of
 * the same graph numbered in key order, with an empty journal of the new
 * stamp; it opens as that graph. A fold stopped part way leaves the old files
 * as they were and no temporary file.
 */
static void test_mmfile__a_folded_view_is_the_graph_written_anew(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_mmfile__a_folded_view_is_the_graph_written_anew");
	char *dir = ts_mkdtemp(), *other = ts_mkdtemp();
	char *gpath = path_in(dir, MMFILE_GRAPH), *tpath = path_in(dir, MMFILE_GRAPH ".tmp");
	char *opath = path_in(other, MMFILE_GRAPH);
	for (int round = 0; round < 24; round++) {
		Model md;
		model_random(&md, (size_t)(ts_rand(&rng) % 200), &rng);
		uint64_t stamp = ts_rand(&rng), jlen = MMFILE_JOURNAL_EMPTY;
		model_write(&md, dir, stamp);
		char err[MMFILE_ERRLEN] = "";
		MmView v;
		for (int run = 0; run < (int)(ts_rand(&rng) % 3); run++) {
			open_ok(&v, dir, stamp, jlen);
			random_changes(&v, &md, &rng, 1 + (int)(ts_rand(&rng) % 60));
			assert_int_equal(mmfile_journal_append(&v, dir, jlen, &jlen, err), 0);
			mmfile_close(&v);
		}
		open_ok(&v, dir, stamp, jlen);
		if (round % 2) random_changes(&v, &md, &rng, 1 + (int)(ts_rand(&rng) % 60));
		if (round % 6 == 5) {
			/* stopped: nothing changes */
			atomic_bool stop = true;
			size_t before = file_len(dir, MMFILE_GRAPH);
			assert_int_equal(mmfile_fold(&v, dir, stamp + 1, &stop, err), MMFILE_EIO);
			assert_true(err[0] != '\0');
			assert_int_equal(file_len(dir, MMFILE_GRAPH), before);
			assert_null(fopen(tpath, "rb"));
			mmfile_close(&v);
			if (!(round % 2)) {
				open_ok(&v, dir, stamp, jlen);
				expect_view(&v, &md, &rng);
				mmfile_close(&v);
			}
			model_free(&md);
			continue;
		}
		uint64_t stamp2 = stamp ^ 0x5a5a;
		int rc = mmfile_fold(&v, dir, stamp2, NULL, err);
		if (rc) fail_msg("mmfile_fold: %d %s", rc, err);
		mmfile_close(&v);
		assert_null(fopen(tpath, "rb"));
		assert_int_equal(file_len(dir, MMFILE_JOURNAL), MMFILE_JOURNAL_EMPTY);
		model_key_order(&md);
		model_write(&md, other, stamp2);
		size_t la = 0, lb = 0;
		char *a = ts_read_file(gpath, &la), *b = ts_read_file(opath, &lb);
		assert_true(a && b);
		assert_int_equal(la, lb);
		for (size_t i = 0; i < la; i++)
			if (a[i] != b[i])
				fail_msg("round %d: byte %zu of %zu differs", round, i, la);
		free(a), free(b);
		expect_stale(dir, stamp, MMFILE_JOURNAL_EMPTY, "the old stamp after a fold");
		open_ok(&v, dir, stamp2, MMFILE_JOURNAL_EMPTY);
		expect_view(&v, &md, &rng);
		mmfile_close(&v);
		model_free(&md);
	}
	free(gpath), free(tpath), free(opath);
	ts_rmtree(dir);
	ts_rmtree(other);
	free(dir);
	free(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mmfile__parents_are_the_reverse_edges),
	    cmocka_unit_test(test_mmfile__written_graph_opens_as_written),
	    cmocka_unit_test(test_mmfile__nodes_are_put_in_key_order),
	    cmocka_unit_test(test_mmfile__changes_survive_the_journal),
	    cmocka_unit_test(test_mmfile__an_uncommitted_tail_is_ignored_and_overwritten),
	    cmocka_unit_test(test_mmfile__nothing_pending_leaves_the_journal_alone),
	    cmocka_unit_test(test_mmfile__a_view_never_writes_the_graph_file),
	    cmocka_unit_test(test_mmfile__stale_or_damaged_files_are_refused),
	    cmocka_unit_test(test_mmfile__a_folded_view_is_the_graph_written_anew),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
