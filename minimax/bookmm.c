/*
 * minimax/bookmm.c — joseki minimax: what both kinds of run share, and the
 * whole-book run (docs/minimax.md). The incremental run is bookinc.c.
 *
 * The whole-book run reads one snapshot in two passes (keys: the snapshot
 * index, bookdb/index.h, which is also the key -> node map; moves: edges and
 * leaves, on every core), backs the values up with the
 * shared core, writes back the records whose values changed, then keeps the
 * graph for later runs (minimax/mmfile.h) and records in the book which graph
 * that is and how far the change log has been consumed. Nodes are numbered in
 * key order, which is also the order of the write-back, so the writes walk the
 * B-tree sequentially.
 */
#include "minimax/bookmm.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <sys/file.h>
#include <unistd.h>

#include "shogi/be64.h"
#include "shogi/bigmem.h"
#include "shogi/parfor.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "shogi/extsort.h"
#include "shogi/grow.h"
#include "bookdb/index.h"
#include "minimax/bookmm_priv.h"
#include "minimax/graph.h"
#include "minimax/mmfile.h"
#include "shogi/movegen.h"

#define F_VALUED 0x01 /* caller bit of the core's flags: the node has a value */
#define BOOKMM_MAX_THREADS 16
#define PROGRESS_EVERY 65536 /* positions between progress calls */

const char *bookmm_strerror(int code)
{
	switch (code) {
	case BOOKMM_OK:
		return "success";
	case BOOKMM_ENOMEM:
		return "out of memory";
	case BOOKMM_EBOOK:
		return "book error";
	case BOOKMM_ESTOPPED:
		return "stopped";
	case BOOKMM_EWHOLE:
		return "only a whole-book run can answer";
	case BOOKMM_EBUSY:
		return "another minimax run is under way on the book";
	default:
		return "unknown error";
	}
}

#define fail errmsg_set

int16_t bookmm_clamp(int v)
{
	return (int16_t)value_clamp(v);
}

/* ---- the whole-book run: loading ----------------------------------------------- */

typedef struct {
	size_t n;
	/* Node i is the index's record i; its keys outlive the snapshot, the
	 * record bytes do not (only pass 2 reads them). */
	BookIndex *ix;
	const Key *keys;
	const BookKeyDir *kd;
	uint8_t *structure; /* MMF_WHITE / MMF_INCHECK / MMF_INNER */
	uint16_t *ply;      /* per node: its record's min_ply (until the analysis is numbered) */
	uint8_t *inner;     /* per node: an inner node of the leaf policy (pass 2 only) */
	const BookmmPolicy *policy;
	uint32_t *mstart; /* every move: edges to any book node, leaves */
	MmMove *moves;
	size_t nmoves;
	/* The reverse edges, while the valued nodes are found (written into the
	 * graph file's temporary file as soon as they are made: npar of them). */
	uint32_t *pstart, *parents;
	size_t npar;
	bool sorted;       /* the children were looked up in sorted runs (lookups_sorted) */
	uint64_t *rfilter; /* sorted: the keys' sharp filter (keyfilter3), for the requests */
	uint64_t rfilter_mask;
	uint64_t sorted_bytes; /* what those runs wrote to disk */
	size_t shallow;        /* nodes analysed too shallow to be inner (BookmmChildren) */
	/* The analysis: valued nodes, edges to valued nodes, in the analysis
	 * form (graph.h; freed once it is done), its nodes numbered deepest
	 * first (order[j]: the key index of its node j) until it is done; then
	 * its flags and values in key order. */
	MmGraph g;
	uint32_t *order;
	size_t kept_moves, kept_edges;        /* the moves and edges it counts */
	double phase_ms[BOOKMM_PHASES], mark; /* the phases' times; when the last ended */
} BookGraph;

const char *const bookmm_phase_name[BOOKMM_PHASES] = {"index", "inner",    "children", "lookups",
                                                      "moves", "analysis", "write",    "graph"};

/* Phase ph (BOOKMM_PH_*) of b's run ends now: its time is since the last
 * one's end. */
static void phase_end(BookGraph *b, int ph)
{
	double t = clock_ms_f();
	b->phase_ms[ph] += t - b->mark;
	b->mark = t;
}

static void bg_free(BookGraph *b)
{
	mm_graph_free(&b->g);
	bookdb_index_free(b->ix);
	bigmem_free(b->structure);
	bigmem_free(b->ply);
	bigmem_free(b->order);
	bigmem_free(b->inner);
	bigmem_free(b->mstart);
	bigmem_free(b->moves);
	bigmem_free(b->pstart);
	bigmem_free(b->parents);
	bigmem_free(b->rfilter);
}

/* Nearly every legal move leads outside the book: the filter turns those
 * away with one memory access. */
static uint32_t map_find(const void *ctx, Key k)
{
	const BookGraph *b = ctx;
	size_t i = bookdb_keydir_find(b->kd, k);
	return i == BOOKDB_KEYDIR_NONE ? MM_NONE : (uint32_t)i;
}

static bool map_inner(const void *ctx, uint32_t node)
{
	const BookGraph *b = ctx;
	return b->inner[node];
}

/* Pass 1: every key, in key order, and where its record lies in the snapshot. */
static int load_keys(BookGraph *b, const BookmmOptions *opt, BookTxn *txn, char *err)
{
	int rc = bookdb_index_build_until(&b->ix, txn, opt->stop);
	if (rc == BOOKDB_ESTOPPED) return bookmm_stop_error(err, "reading the keys");
	if (rc == BOOKDB_ENOMEM) return fail(err, BOOKMM_ERRLEN, BOOKMM_ENOMEM, "out of memory");
	if (rc < 0)
		return fail(err, BOOKMM_ERRLEN, BOOKMM_EBOOK, "reading the book: %s",
		            bookdb_strerror(rc));
	b->n = bookdb_index_count(b->ix);
	if (b->n >= MM_NONE - 1)
		return fail(err, BOOKMM_ERRLEN, BOOKMM_ENOMEM, "too many positions");
	b->keys = bookdb_index_keys(b->ix);
	b->kd = bookdb_index_dir(b->ix);
	return 0;
}

/*
 * Children looked up in sorted runs. A book whose key index (keys, directory,
 * filter) takes more than half of what the budget gives arrays has it in
 * files (shogi/bigmem.h), and one random lookup a child in it waits on the
 * disk once the book is larger than memory. Then pass 2 is a sort-merge
 * join, as the export's is: every legal move's child that passes the filter
 * is a request (the child's key, the node, the move's slot, the move), sorted
 * by key; the requests meet the keys in key order (the index's pages read
 * once, in order); each one found is an answer (node, slot, the child's node,
 * whether it is inner, the move), sorted by node; the records are read again
 * and meet their answers in node order, their moves decoded alone: the first
 * reading set up each position and left what the second needs of it (the
 * structure bits, and S_MATED), so the second makes no position and no move
 * list. The same graph as the lookups give.
 */
/* A request: key (16, big-endian: byte order is key order), node (4), slot
 * (2), move (2). An answer: node (4), slot (2) (big-endian: byte order is
 * their order), child (4), inner (1), move (2). */
#define REQ_LEN 24
#define ANS_LEN 13
/* A structure bit of the sorted lookups' first reading, for the second: the
 * position has no legal move (cleared by the second: not a stored flag). */
#define S_MATED MMF_VALUED

/* Whether the children are looked up in sorted runs (above). */
static bool lookups_sorted(const BookGraph *b)
{
	uint64_t budget = bigmem_budget();
	const BookKeyDir *kd = b->kd;
	uint64_t index = (uint64_t)kd->n * sizeof(Key) +
	                 bookdb_keydir_dir_len(kd->dir_bits) * sizeof(uint32_t) +
	                 (kd->filter_mask + 1) / 8;
	return budget && index > budget / 4 * 3 / 2;
}

/* Pass 2 of one range of nodes, in a thread of its own: their moves (into its
 * own array) and structure bits, from the snapshot's bytes. */
typedef enum {
	PASS_INNER,    /* only mark which nodes are inner (before the moves) */
	PASS_MOVES,    /* the moves, children looked up in the index */
	PASS_REQUESTS, /* sorted lookups: the children's requests */
	PASS_ANSWERS,  /* sorted lookups: the moves, children from the answers */
} LoadPass;

typedef struct {
	const BookGraph *b;
	uint8_t *structure;
	uint32_t *count; /* moves of node i: count[i - lo] */
	uint32_t lo, hi;
	MmMove *moves;
	size_t nmoves, cap;
	size_t shallow; /* of its nodes, those analysed too shallow to be inner */
	int rc;
	char why[BOOKDB_ERRLEN];  /* rc LOAD_CORRUPT: the record that is not sound */
	atomic_size_t *done;      /* records done by all parts */
	const BookmmOptions *opt; /* progress: reported by the part on the calling thread */
	bool reporter;
	LoadPass pass;
	ExtSort *req, *ans; /* sorted lookups: this part's requests, and the answers to its nodes */
	int err_no;         /* rc LOAD_IO: errno of a sort */
} LoadPart;

#define LOAD_STOPPED (-2) /* a part's rc when opt->stop ended it */
#define LOAD_CORRUPT (-3) /* a part's rc when a record is not sound (its why says) */
#define LOAD_IO (-4)      /* a part's rc when a sorter failed (err_no says) */

/* Node i's children's keys (c's legal moves from pos), their filter words
 * asked for as each key is made: the misses (some 80 a position, at random
 * in a filter of 2-4 bytes a book position) overlap the work on the next
 * position, which add_requests waits for before it reads them. */
static void child_keys(const LoadPart *p, BookmmChildren *c, const Position *pos)
{
	const BookGraph *b = p->b;
	for (int m = 0; m < c->nl; m++) {
		c->child[m] = pos_key_after(pos, c->legal[m]);
		keyfilter3_prefetch(b->rfilter, b->rfilter_mask, c->child[m]);
	}
}

/* Node i's requests: its inner children that may be book nodes (their keys
 * made by child_keys, a position before). */
static int add_requests(LoadPart *p, const BookmmChildren *c, uint32_t i)
{
	const BookGraph *b = p->b;
	uint8_t r[REQ_LEN];
	if (!c->inner) return 0;
	for (int m = 0; m < c->nl; m++) {
		if (!keyfilter3_maybe(b->rfilter, b->rfilter_mask, c->child[m])) continue;
		key_to_bytes(c->child[m], r);
		be_put(r + 16, i, 4);
		be_put(r + 20, (uint64_t)m, 2);
		be_put(r + 22, c->legal[m], 2);
		if (extsort_add(p->req, r, REQ_LEN) < 0) return -1;
	}
	return 0;
}

/* PASS_ANSWERS for node i: its record's moves alone (its position was set
 * up and checked by the first reading, PASS_REQUESTS, which left its
 * structure bits and S_MATED), and its answers, the part's next ones from *a
 * (*ha: extsort_next's last code), made into its graph moves. Their number,
 * LOAD_CORRUPT, or LOAD_IO (p->err_no says). */
static int answer_edges(LoadPart *p, uint32_t i, const uint8_t *val, size_t len, BookRecord *rec,
                        BookmmChildren *c, const BookmmLookup *lk, const uint8_t **a, int *ha)
{
	if (bookdb_record_decode_moves(rec, val, len) < 0) {
		snprintf(p->why, sizeof p->why, "a record changed between readings");
		return LOAD_CORRUPT;
	}
	BookmmFound f[MOVEGEN_MAX];
	int nf = 0;
	size_t alen;
	for (; *ha == 1 && be_get(*a, 4) <= i; *ha = extsort_next(p->ans, (const void **)a, &alen))
		if (be_get(*a, 4) == i && nf < MOVEGEN_MAX)
			f[nf++] = (BookmmFound){(Move)be_get(*a + 11, 2),
			                        (uint32_t)be_get(*a + 6, 4), (*a)[10] != 0};
	if (*ha < 0) {
		p->err_no = errno;
		return LOAD_IO;
	}
	/* A declined promotion is told by its board, which the moves alone
	 * leave as it was: read the whole record when a move and its
	 * promotion are both there (rare). */
	bool pair = bookmm_promotion_pair(rec, f, nf);
	if (pair && bookdb_record_decode(rec, val, len) < 0) {
		snprintf(p->why, sizeof p->why, "a record changed between readings");
		return LOAD_CORRUPT;
	}
	bookmm_leaves(rec, p->b->policy, c->leafv);
	bool mated = p->structure[i] & S_MATED;
	p->structure[i] &= (uint8_t)~S_MATED;
	/* (The scan above holds for the children used, unless they are none.) */
	int used = p->structure[i] & MMF_INNER ? nf : 0;
	return bookmm_found_edges(p->moves + p->nmoves, rec, c->leafv, mated, lk, f, used,
	                          pair && (used == nf || bookmm_promotion_pair(rec, f, used)));
}

static void *load_part(void *arg)
{
	LoadPart *p = arg;
	const BookGraph *b = p->b;
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	BookmmChildren *c = malloc(sizeof *c);
	/* PASS_REQUESTS: the position before's children, asked for one position
	 * late (child_keys); held is its node, or UINT32_MAX for none. */
	BookmmChildren *prev = p->pass == PASS_REQUESTS ? malloc(sizeof *prev) : NULL;
	uint32_t held = UINT32_MAX;
	p->rc = -1;
	if (!rec || !pos || !c || (p->pass == PASS_REQUESTS && !prev)) goto out;
	/* The records' pages asked for ahead of the pass (a book read at
	 * random: bookdb/index.h). */
	BookIndexAhead ahead = {0};
	if (p->pass == PASS_INNER) {
		for (uint32_t i = p->lo; i < p->hi; i++) {
			if ((i - p->lo) % PROGRESS_EVERY == 0 && bookmm_stopped(p->opt)) {
				p->rc = LOAD_STOPPED;
				goto out;
			}
			const uint8_t *val;
			size_t len;
			bookdb_index_read_ahead(b->ix, &ahead, i, p->hi);
			bookdb_index_raw(&val, &len, b->ix, i);
			b->inner[i] = bookmm_raw_inner(val, len, b->policy, rec);
		}
		p->rc = 0;
		goto out;
	}
	BookmmLookup lk = {map_find, map_inner, b, b->policy, NULL};
	/* PASS_ANSWERS: the next answer to this part's nodes. */
	const uint8_t *a = NULL;
	size_t alen;
	int ha = 0;
	if (p->pass == PASS_ANSWERS) {
		if (extsort_finish(p->ans) < 0 ||
		    (ha = extsort_next(p->ans, (const void **)&a, &alen)) < 0) {
			p->rc = LOAD_IO;
			p->err_no = errno;
			goto out;
		}
	}
	for (uint32_t i = p->lo; i < p->hi; i++) {
		if (p->pass != PASS_REQUESTS &&
		    bigmem_grow((void **)&p->moves, &p->cap, p->nmoves + BOOKMM_NODE_MOVES,
		                sizeof *p->moves, 1024) < 0)
			goto out;
		const uint8_t *val;
		size_t len;
		bookdb_index_read_ahead(b->ix, &ahead, i, p->hi);
		bookdb_index_raw(&val, &len, b->ix, i);
		int n = 0;
		if (p->pass == PASS_ANSWERS) {
			n = answer_edges(p, i, val, len, rec, c, &lk, &a, &ha);
			if (n == LOAD_IO) {
				p->rc = LOAD_IO;
				goto out;
			}
		} else if (p->pass == PASS_MOVES) {
			n = bookmm_record_moves_kd(p->moves + p->nmoves, &p->structure[i],
			                           b->keys[i], val, len, rec, pos, c, &lk, b->kd,
			                           p->why);
			p->shallow += n >= 0 && c->shallow;
		} else {
			uint8_t flags;
			n = bookmm_record_children(c, &flags, b->keys[i], val, len, rec, pos,
			                           b->policy, false, p->why);
			if (n == 0) {
				p->shallow += c->shallow;
				p->structure[i] = flags | (c->nlegal == 0 ? S_MATED : 0);
				if (c->inner) child_keys(p, c, pos);
				if (held != UINT32_MAX && add_requests(p, prev, held) < 0) {
					p->rc = LOAD_IO;
					p->err_no = errno;
					goto out;
				}
				BookmmChildren *t = prev;
				prev = c;
				c = t;
				held = i;
			}
		}
		if (n < 0) {
			p->rc = LOAD_CORRUPT;
			goto out;
		}
		p->nmoves += (size_t)n;
		if (p->pass != PASS_REQUESTS) {
			p->count[i - p->lo] = (uint32_t)n;
			b->ply[i] = rec->min_ply;
		}
		if ((i - p->lo + 1) % PROGRESS_EVERY == 0) {
			size_t d = atomic_fetch_add(p->done, PROGRESS_EVERY) + PROGRESS_EVERY;
			if (p->reporter)
				bookmm_report(p->opt,
				              p->pass == PASS_REQUESTS ? "children" : "moves", d,
				              b->n);
			if (bookmm_stopped(p->opt)) {
				p->rc = LOAD_STOPPED;
				goto out;
			}
		}
	}
	if (held != UINT32_MAX && add_requests(p, prev, held) < 0) {
		p->rc = LOAD_IO;
		p->err_no = errno;
		goto out;
	}
	p->rc = 0;
out:
	free(rec);
	free(pos);
	free(c);
	free(prev);
	return NULL;
}

/* Runs load_part over the parts, one a thread, the first on the calling
 * thread. */
_Static_assert(BOOKMM_MAX_THREADS <= PARFOR_MAX, "a part a thread");
static void run_part(void *ctx, size_t lo, size_t hi, int t)
{
	(void)t;
	for (size_t i = lo; i < hi; i++) load_part((LoadPart *)ctx + i);
}

static void run_parts(LoadPart *parts, int nt, LoadPass pass)
{
	for (int t = 0; t < nt; t++) {
		parts[t].pass = pass;
		parts[t].rc = -1;
	}
	parfor((size_t)nt, nt, run_part, parts);
}

/* The parts' requests (each sorted by key) meet the keys: an answer for each
 * child that is a book node, to the part that holds the node asking. 0,
 * LOAD_STOPPED, or LOAD_IO with *err_no. */
static int join_requests(BookGraph *b, LoadPart *parts, int nt, const BookmmOptions *opt,
                         int *err_no)
{
	const uint8_t *r[BOOKMM_MAX_THREADS];
	int h[BOOKMM_MAX_THREADS];
	size_t len, total = 0, done = 0;
	for (int t = 0; t < nt; t++) {
		ExtSortStats ss;
		if (extsort_finish(parts[t].req) < 0) goto io;
		extsort_stats(parts[t].req, &ss);
		total += ss.records;
		if ((h[t] = extsort_next(parts[t].req, (const void **)&r[t], &len)) < 0) goto io;
	}
	bookmm_report(opt, "lookups", 0, total);
	/* The requests come in key order, and so do the keys: the keys are
	 * walked beside them (j), read once in order, where looking each one
	 * up read the key filter at random. */
	size_t j = 0;
	for (;;) {
		int t = -1;
		for (int u = 0; u < nt; u++)
			if (h[u] == 1 && (t < 0 || memcmp(r[u], r[t], REQ_LEN) < 0)) t = u;
		if (t < 0) break;
		Key k = key_from_bytes(r[t]);
		while (j < b->n && key_cmp(b->keys[j], k) < 0) j++;
		if (j < b->n && key_cmp(b->keys[j], k) == 0) {
			uint32_t node = (uint32_t)be_get(r[t] + 16, 4);
			int to = 0;
			while (to + 1 < nt && node >= parts[to + 1].lo) to++;
			uint8_t a[ANS_LEN];
			memcpy(a, r[t] + 16, 6);
			be_put(a + 6, j, 4);
			a[10] = (b->structure[j] & MMF_INNER) != 0;
			memcpy(a + 11, r[t] + 22, 2);
			if (extsort_add(parts[to].ans, a, ANS_LEN) < 0) goto io;
		}
		if ((h[t] = extsort_next(parts[t].req, (const void **)&r[t], &len)) < 0) goto io;
		if (++done % PROGRESS_EVERY == 0) {
			bookmm_report(opt, "lookups", done, total);
			if (bookmm_stopped(opt)) return LOAD_STOPPED;
		}
	}
	/* The requests are done with: their runs' disk back. */
	for (int t = 0; t < nt; t++) {
		ExtSortStats ss;
		extsort_stats(parts[t].req, &ss);
		b->sorted_bytes += ss.disk_bytes;
		extsort_free(parts[t].req);
		parts[t].req = NULL;
	}
	return 0;
io:
	*err_no = errno;
	return LOAD_IO;
}

/* Pass 2: the moves of every node, the ranges in parallel (one per core);
 * dir: where sorted runs go. */
static int load_moves(BookGraph *b, const BookmmOptions *opt, const char *dir, char *err)
{
	size_t n = b->n;
	b->sorted = lookups_sorted(b);
	/* Sorted lookups: the keys' sharp filter, made first so that it is
	 * memory's while the budget holds it (anonymous, huge pages: bigmem.h),
	 * the others past it files. Each position asks it of some 80 children
	 * at random, where the others are read in order; in a file's 4 KiB
	 * pages each of those reads also misses the TLB (a read at random,
	 * 80 asked for at once, measured on the development machine: of 256 MiB
	 * 10.5 ns in a file, 9.6 in huge pages; of 2 GiB 38 and 31 ns). */
	if (b->sorted) {
		unsigned w = keyfilter3_log2(n);
		b->rfilter_mask = ((uint64_t)1 << w) - 1;
		b->rfilter = bigmem_alloc(((size_t)1 << w) * sizeof *b->rfilter);
		if (!b->rfilter) return fail(err, BOOKMM_ERRLEN, BOOKMM_ENOMEM, "out of memory");
		for (size_t i = 0; i < n; i++)
			keyfilter3_add(b->rfilter, b->rfilter_mask, b->keys[i]);
	}
	b->structure = bigmem_alloc(n + 1);
	/* Sorted lookups need no inner marks of their own: the first reading
	 * leaves every node's in its structure bits (MMF_INNER), before the
	 * join reads them. */
	b->inner = b->sorted ? NULL : bigmem_alloc(n + 1);
	b->mstart = bigmem_alloc((n + 2) * sizeof *b->mstart);
	b->ply = bigmem_alloc((n + 1) * sizeof *b->ply);
	if (!b->structure || (!b->sorted && !b->inner) || !b->mstart || !b->ply)
		return fail(err, BOOKMM_ERRLEN, BOOKMM_ENOMEM, "out of memory");
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int nt = ncpu < 1 ? 1 : ncpu > BOOKMM_MAX_THREADS ? BOOKMM_MAX_THREADS : (int)ncpu;
	if (n < 10000) nt = 1;
	LoadPart parts[BOOKMM_MAX_THREADS];
	memset(parts, 0, sizeof parts);
	atomic_size_t done;
	atomic_init(&done, 0);
	int rc = 0, err_no = 0;
	/* Each sorter's share: a quarter of the budget (the rest is the
	 * arrays'), for the parts' requests and answers. */
	uint64_t share = bigmem_budget() / 4 / (uint64_t)(2 * nt);
	for (int t = 0; t < nt; t++) {
		LoadPart *p = &parts[t];
		p->b = b;
		p->done = &done;
		p->opt = opt;
		p->reporter = t == 0;
		p->structure = b->structure;
		p->lo = (uint32_t)(n * (size_t)t / (size_t)nt);
		p->hi = (uint32_t)(n * (size_t)(t + 1) / (size_t)nt);
		/* Each part's counts go straight into mstart, shifted by one. */
		p->count = b->mstart + 1 + p->lo;
		if (b->sorted && (extsort_open(&p->req, dir, share, extsort_cmp_bytes,
		                               (void *)(uintptr_t)REQ_LEN) < 0 ||
		                  extsort_open(&p->ans, dir, share, extsort_cmp_bytes,
		                               (void *)(uintptr_t)6) < 0))
			rc = -1;
	}
	/* The policy's inner marks first (every part's moves read the others'). */
	if (rc == 0 && !b->sorted && b->policy->leaves != BOOKMM_LEAVES_GAMES) {
		run_parts(parts, nt, PASS_INNER);
		for (int t = 0; t < nt; t++)
			if (parts[t].rc < 0) rc = rc == LOAD_STOPPED ? rc : parts[t].rc;
		phase_end(b, BOOKMM_PH_INNER);
	}
	if (rc == 0 && b->sorted) {
		run_parts(parts, nt, PASS_REQUESTS);
		bigmem_free(b->rfilter);
		b->rfilter = NULL;
		for (int t = 0; t < nt; t++) {
			if (parts[t].rc == LOAD_IO && !err_no) err_no = parts[t].err_no;
			if (parts[t].rc < 0) rc = rc == LOAD_STOPPED ? rc : parts[t].rc;
		}
		phase_end(b, BOOKMM_PH_CHILDREN);
		if (rc == 0) rc = join_requests(b, parts, nt, opt, &err_no);
		phase_end(b, BOOKMM_PH_LOOKUPS);
		atomic_store(&done, 0);
	}
	if (rc == 0) run_parts(parts, nt, b->sorted ? PASS_ANSWERS : PASS_MOVES);
	size_t total = 0;
	const char *corrupt = NULL;
	for (int t = 0; t < nt; t++) {
		if (parts[t].rc == LOAD_IO && !err_no) err_no = parts[t].err_no;
		if (parts[t].rc < 0) rc = rc == LOAD_STOPPED ? rc : parts[t].rc;
		if (parts[t].rc == LOAD_CORRUPT && !corrupt) corrupt = parts[t].why;
		total += parts[t].nmoves;
		b->shallow += parts[t].shallow;
	}
	for (int t = 0; t < nt; t++) {
		ExtSortStats ss;
		if (parts[t].ans) {
			extsort_stats(parts[t].ans, &ss);
			b->sorted_bytes += ss.disk_bytes;
		}
		if (parts[t].req) {
			extsort_stats(parts[t].req, &ss);
			b->sorted_bytes += ss.disk_bytes;
		}
		extsort_free(parts[t].req);
		extsort_free(parts[t].ans);
		parts[t].req = parts[t].ans = NULL;
	}
	if (corrupt) {
		for (int t = 0; t < nt; t++) bigmem_free(parts[t].moves);
		return fail(err, BOOKMM_ERRLEN, BOOKMM_EBOOK, "reading the book: %s%s", corrupt,
		            BOOKMM_DAMAGED);
	}
	/* Moves are numbered in 32 bits (the graph's move starts, its file's):
	 * some 2 a position in books (an edge to each child, about one a
	 * position, and the best leaf), so past 2 billion positions. */
	if (rc == 0 && total >= MM_NONE) {
		for (int t = 0; t < nt; t++) bigmem_free(parts[t].moves);
		return fail(err, BOOKMM_ERRLEN, BOOKMM_EBOOK,
		            "the book's graph has %zu moves, more than the %u its numbering holds",
		            total, (unsigned)MM_NONE - 1);
	}
	/* The parts' arrays joined: the first grown to hold the others (not a
	 * second copy of every move), each freed once copied. */
	if (rc == 0) {
		MmMove *all = bigmem_realloc(parts[0].moves, (total + 1) * sizeof *all);
		if (!all) {
			rc = -1;
		} else {
			parts[0].moves = NULL;
			b->moves = all;
		}
	}
	if (rc == 0) {
		b->nmoves = parts[0].nmoves;
		for (int t = 1; t < nt; t++) {
			memcpy(b->moves + b->nmoves, parts[t].moves,
			       parts[t].nmoves * sizeof *b->moves);
			b->nmoves += parts[t].nmoves;
			bigmem_free(parts[t].moves);
			parts[t].moves = NULL;
		}
		b->mstart[0] = 0;
		for (size_t i = 0; i < n; i++) b->mstart[i + 1] += b->mstart[i];
	}
	for (int t = 0; t < nt; t++) bigmem_free(parts[t].moves);
	if (rc == LOAD_STOPPED) return bookmm_stop_error(err, "reading the moves");
	if (rc == LOAD_IO && err_no != ENOMEM)
		return fail(err, BOOKMM_ERRLEN, BOOKMM_EBOOK,
		            "looking the children up in sorted runs in %s: %s",
		            bigmem_temp_dir(dir), strerror(err_no));
	return rc < 0 ? fail(err, BOOKMM_ERRLEN, BOOKMM_ENOMEM, "out of memory") : 0;
}

/*
 * The analysis's numbering: deepest first (min_ply descending, key order
 * within a ply). A book's moves lead one ply deeper, nearly all of them: in
 * this order a node's children were numbered just before it, so the cycle
 * search, which starts from each node in turn, finds them done, and the
 * nodes it reads at once lie together (two plies' worth), where in key order
 * they lie anywhere in arrays that may be larger than memory. pos[i] gets
 * key index i's number (b->order, the other way, is made from it once the
 * graph is: not both at once). 0 or -1.
 */
static int number_deepest_first(BookGraph *b, uint32_t **posp)
{
	size_t n = b->n;
	uint32_t *pos = bigmem_alloc((n + 1) * sizeof *pos);
	size_t *at = calloc(UINT16_MAX + 2, sizeof *at);
	if (!pos || !at) {
		bigmem_free(pos), free(at);
		return -1;
	}
	for (size_t i = 0; i < n; i++) at[b->ply[i]]++;
	size_t start = 0;
	for (long p = UINT16_MAX; p >= 0; p--) {
		size_t c = at[p];
		at[p] = start;
		start += c;
	}
	for (uint32_t i = 0; i < n; i++) pos[i] = (uint32_t)at[b->ply[i]]++;
	free(at);
	bigmem_free(b->ply);
	b->ply = NULL;
	*posp = pos;
	return 0;
}

/* The analysis form's loops over the nodes in key order (build_analysis,
 * number_by_key), in ranges on threads (shogi/parfor.h): each node's number
 * is its own (pos is a permutation), so the ranges write apart, and their
 * reads and writes at random wait on memory side by side. */
typedef struct {
	BookGraph *b;
	const MmFlags *kf; /* valued marks, key order */
	const uint32_t *pos;
	size_t leaves[PARFOR_MAX]; /* leaves kept, a range each */
	MmFlags *nf;               /* number_by_key: flags and values in key order */
	MmVd *nv;
} FormCtx;

/* Each node's flags, best leaf and count of edges, at its number. */
static void form_flags(void *arg, size_t lo, size_t hi, int t)
{
	FormCtx *x = arg;
	BookGraph *b = x->b;
	MmGraph *g = &b->g;
	const MmFlags *kf = x->kf;
	const uint32_t *pos = x->pos;
	size_t leaves = 0;
	for (size_t i = lo; i < hi; i++) {
		MmFlags f = kf[i] & F_VALUED;
		if (b->structure[i] & MMF_WHITE) f |= MM_F_WHITE;
		if (!(f & F_VALUED)) {
			/* Settled out of the way: nothing leads here. */
			g->flags[pos[i]] = f | MM_F_CONST | MM_F_FROZEN;
			continue;
		}
		if (b->structure[i] & MMF_INCHECK) f |= MM_F_CHECKED;
		g->flags[pos[i]] = f;
		uint32_t ne = 0;
		for (uint32_t k = b->mstart[i]; k < b->mstart[i + 1]; k++) {
			uint32_t c = b->moves[k].next;
			if (c == MM_NONE) {
				leaves++;
				mm_leaf_add(g, pos[i], b->moves[k].value);
			} else {
				ne += (kf[c] & F_VALUED) != 0;
			}
		}
		g->estart[pos[i] + 1] = ne;
	}
	x->leaves[t] = leaves;
}

/* Each valued node's edges, to its children's numbers. */
static void form_edges(void *arg, size_t lo, size_t hi, int t)
{
	(void)t;
	FormCtx *x = arg;
	BookGraph *b = x->b;
	MmGraph *g = &b->g;
	for (size_t i = lo; i < hi; i++) {
		if (!(x->kf[i] & F_VALUED)) continue;
		uint32_t w = g->estart[x->pos[i]];
		for (uint32_t k = b->mstart[i]; k < b->mstart[i + 1]; k++) {
			uint32_t c = b->moves[k].next;
			if (c != MM_NONE && (x->kf[c] & F_VALUED)) g->edge[w++] = x->pos[c];
		}
	}
}

/* The numbering the other way: order[number] = key index. */
static void form_order(void *arg, size_t lo, size_t hi, int t)
{
	(void)t;
	FormCtx *x = arg;
	for (size_t i = lo; i < hi; i++) x->b->order[x->pos[i]] = (uint32_t)i;
}

/* The flags and values put back in key order. */
static void form_by_key(void *arg, size_t lo, size_t hi, int t)
{
	(void)t;
	FormCtx *x = arg;
	const BookGraph *b = x->b;
	for (size_t j = lo; j < hi; j++) {
		x->nf[b->order[j]] = b->g.flags[j];
		x->nv[b->order[j]] = b->g.vd[j];
	}
}

/*
 * The analysis graph. A node has a value when it has a leaf or an edge to a
 * node with a value (found from the leaves up, through the reverse edges).
 * Edges to nodes without one are left out (a position nobody evaluated says
 * nothing), and those nodes are frozen out of the analysis. It is the
 * analysis form (graph.h), numbered deepest first (number_deepest_first):
 * a node's children and its best leaf, where the moves (the write-back's, the
 * graph file's) wait in key order; the reverse edges are freed (the graph
 * file's thread makes them anew). Its cycles are relaxed in key order
 * (g->rank), as they would be in the key order's numbering.
 * Memory: 16 bytes a node (flags, values, edge starts, best leaves, order)
 * and 4 an edge; while it is made, 2 more a node.
 */
static int build_analysis(BookGraph *b)
{
	size_t n = b->n;
	MmGraph *g = &b->g;
	g->n = n;
	MmFlags *kf = bigmem_alloc((n + 1) * sizeof *kf); /* in key order */
	uint32_t *queue = bigmem_alloc((n + 1) * sizeof *queue), *pos = NULL;
	if (!kf || !queue) {
		bigmem_free(kf), bigmem_free(queue);
		return -1;
	}
	size_t qn = 0;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t k = b->mstart[i]; k < b->mstart[i + 1]; k++)
			if (b->moves[k].next == MM_NONE) {
				kf[i] |= F_VALUED;
				queue[qn++] = i;
				break;
			}
	for (size_t h = 0; h < qn; h++) {
		uint32_t c = queue[h];
		for (uint32_t k = b->pstart[c]; k < b->pstart[c + 1]; k++) {
			uint32_t p = b->parents[k];
			if (kf[p] & F_VALUED) continue;
			kf[p] |= F_VALUED;
			queue[qn++] = p;
		}
	}
	bigmem_free(queue);
	bigmem_free(b->pstart);
	bigmem_free(b->parents);
	b->pstart = b->parents = NULL;
	if (number_deepest_first(b, &pos) < 0) {
		bigmem_free(kf);
		return -1;
	}
	g->flags = bigmem_alloc((n + 1) * sizeof *g->flags);
	g->vd = bigmem_alloc((n + 1) * sizeof *g->vd);
	g->estart = bigmem_alloc((n + 2) * sizeof *g->estart);
	g->leaf = bigmem_alloc((n + 1) * sizeof *g->leaf);
	if (!g->flags || !g->vd || !g->estart || !g->leaf) {
		bigmem_free(kf), bigmem_free(pos);
		return -1;
	}
	int nt = parfor_threads(n, PARFOR_MIN_ITEMS);
	FormCtx x = {.b = b, .kf = kf, .pos = pos};
	parfor(n, nt, form_flags, &x);
	for (int t = 0; t < nt; t++) b->kept_moves += x.leaves[t];
	for (size_t j = 0; j < n; j++) g->estart[j + 1] += g->estart[j];
	b->kept_edges = g->estart[n];
	b->kept_moves += b->kept_edges;
	g->edge = bigmem_alloc((b->kept_edges + 1) * sizeof *g->edge);
	if (!g->edge) {
		bigmem_free(kf), bigmem_free(pos);
		return -1;
	}
	parfor(n, nt, form_edges, &x);
	bigmem_free(kf);
	b->order = bigmem_alloc((n + 1) * sizeof *b->order);
	if (!b->order) {
		bigmem_free(pos);
		return -1;
	}
	parfor(n, nt, form_order, &x);
	bigmem_free(pos);
	g->rank = b->order;
	return 0;
}

/* Once the analysis is done: its form goes, and its flags and values are put
 * in key order (what the write-back and the graph file read). 0 or -1. */
static int number_by_key(BookGraph *b)
{
	MmGraph *g = &b->g;
	mm_graph_free_edges(g);
	g->rank = NULL;
	FormCtx x = {.b = b,
	             .nf = bigmem_alloc((b->n + 1) * sizeof *x.nf),
	             .nv = bigmem_alloc((b->n + 1) * sizeof *x.nv)};
	if (!x.nf || !x.nv) {
		bigmem_free(x.nf), bigmem_free(x.nv);
		return -1;
	}
	parfor(b->n, parfor_threads(b->n, PARFOR_MIN_ITEMS), form_by_key, &x);
	bigmem_free(g->flags), bigmem_free(g->vd), bigmem_free(b->order);
	g->flags = x.nf;
	g->vd = x.nv;
	b->order = NULL;
	return 0;
}

/*
 * The graph file, written (minimax.graph.tmp) by a thread of its own while
 * the records are written back (after the analysis both only read the
 * graph), or before them when arrays are in files (bookmm_full). It takes the
 * place of the old file once the records are written (keep_graph), so that a
 * run stopped or failed before then leaves the old graph and its state as
 * they were.
 */
typedef struct {
	BookGraph *b;
	const char *dir;
	uint64_t stamp;
	atomic_bool quit;         /* the run failed or stopped: give up */
	const atomic_bool *until; /* what it gives up on: &quit, or the run's stop */
	int rc;                   /* 0, BOOKMM_ENOMEM or BOOKMM_EBOOK (msg says) */
	char msg[MMFILE_ERRLEN];
} GraphFile;

static void *graph_file_main(void *arg)
{
	GraphFile *f = arg;
	BookGraph *b = f->b;
	const MmGraph *g = &b->g;
	uint8_t *ff = bigmem_alloc(b->n + 1);
	f->rc = BOOKMM_ENOMEM;
	snprintf(f->msg, sizeof f->msg, "out of memory");
	if (!ff) return NULL;
	for (size_t i = 0; i < b->n; i++) ff[i] = bookmm_file_flags(g->flags[i], b->structure[i]);
	int draw[2] = {g->draw[BLACK], g->draw[WHITE]};
	/* The reverse edges are in the file already (bookmm_full). */
	int rc = mmfile_write_tmp(f->dir, f->stamp, draw, b->n, b->keys, ff, g->vd, b->mstart,
	                          b->moves, NULL, NULL, b->npar, f->until, f->msg);
	bigmem_free(ff);
	f->rc = rc == 0 ? 0 : rc == MMFILE_ENOMEM ? BOOKMM_ENOMEM : BOOKMM_EBOOK;
	return NULL;
}

/* ---- the whole-book run: write-back and the kept graph -------------------------- */

/* The edges of node i as the record stores their values (the analysis
 * graph's: none for a node without a value, none into one), read from the
 * whole graph; returns how many. */
static int node_edges(BookmmEdge *edges, const BookGraph *b, uint32_t i)
{
	const MmGraph *g = &b->g;
	int ne = 0;
	if (!(g->flags[i] & F_VALUED)) return 0;
	for (uint32_t k = b->mstart[i]; k < b->mstart[i + 1]; k++) {
		const MmMove *m = &b->moves[k];
		if (m->next == MM_NONE || !(g->flags[m->next] & F_VALUED)) continue;
		MmFlags cf = g->flags[m->next];
		edges[ne++] = (BookmmEdge){
		    m->move, bookmm_stored_vd(g->vd[m->next], cf & MM_F_LOOP, cf & MM_F_CHECKED)};
	}
	return ne;
}

/* How many nodes ahead of the one written its children's values are asked
 * for: the nodes are in key order and their children anywhere, so each of
 * node_edges' reads of a child misses the caches (waited for one by one,
 * they took a third of the rebuild's writing at 10 M positions). */
#define EDGES_AHEAD 16

/* Starts fetching what node_edges will read of node i's children (i may be
 * past the last node). Changes nothing. */
static void prefetch_edges(const BookGraph *b, uint32_t i)
{
	const MmGraph *g = &b->g;
	if (i >= g->n) return;
	for (uint32_t k = b->mstart[i]; k < b->mstart[i + 1]; k++) {
		uint32_t c = b->moves[k].next;
		if (c == MM_NONE) continue;
		__builtin_prefetch(&g->flags[c]);
		__builtin_prefetch(&g->vd[c]);
	}
}

/* Records a write transaction of a run without --full rewrites at most. */
#define WRITE_PENDING 256

typedef struct {
	const BookGraph *b;
	BookWriter *w;
	BookRecord *rec;
	uint8_t *buf;
	BookmmEdge *edges;
	const BookmmOptions *opt;
	uint32_t *pending; /* nodes whose records change, not rewritten yet */
	uint32_t at;       /* the node rewrite_node rewrites */
	size_t npending, cap;
	size_t rewritten;
	uint64_t bytes; /* of the records rewritten */
} WriteBack;

/* The new bytes of node wb->at's record from its newest bytes (raw), for
 * bookdb_rewrite; 0 when unchanged, or not a record (joseki check reports it). */
static int rewrite_node(void *ctx, const uint8_t *raw, size_t len, uint8_t *out)
{
	WriteBack *wb = ctx;
	const MmGraph *g = &wb->b->g;
	uint32_t i = wb->at;
	int ne = node_edges(wb->edges, wb->b, i);
	int n = bookmm_rewrite(out, raw, len, wb->rec, g->flags[i] & F_VALUED, wb->edges, ne,
	                       wb->opt->full, &wb->opt->policy);
	return n > 0 ? n : 0;
}

/* Rewrites the pending records, each from its newest version (a writer
 * beside may have stored a result since the scan's snapshot: a change the
 * log holds for the next run), in one write transaction, committed. The
 * pending nodes are in key order: bookdb_rewrite walks one cursor. */
static int write_pending(WriteBack *wb)
{
	int rc = 0;
	for (size_t j = 0; j < wb->npending && rc == 0; j++) {
		wb->at = wb->pending[j];
		rc = bookdb_writer_rewrite(wb->w, wb->b->keys[wb->at], rewrite_node, wb, wb->buf);
		if (rc == BOOKDB_ENOTFOUND) { /* deleted since: nothing to store */
			rc = 0;
		} else if (rc > 0) {
			wb->rewritten++;
			wb->bytes += (uint64_t)rc;
			rc = 0;
		}
	}
	wb->npending = 0;
	return rc < 0 ? rc : bookdb_writer_flush(wb->w);
}

/* bookdb_rebuild_rewrite's function: the records in key order, the graph's
 * nodes too; a record not in the graph (stored since the scan) stays as it
 * is, and so does one whose values did not change (without full). wb->bytes
 * counts every record's bytes in the new file. */
static int rebuild_node(void *ctx, Key key, const uint8_t *raw, size_t len, uint8_t *out)
{
	WriteBack *wb = ctx;
	const BookGraph *b = wb->b;
	while (wb->at < b->n && key_cmp(b->keys[wb->at], key) < 0) {
		if (++wb->at % PROGRESS_EVERY == 0) {
			bookmm_report(wb->opt, "writing", wb->at, b->n);
			if (bookmm_stopped(wb->opt)) return BOOKDB_ESTOPPED;
		}
	}
	int n = 0;
	if (wb->at < b->n && key_cmp(b->keys[wb->at], key) == 0) {
		prefetch_edges(b, wb->at + EDGES_AHEAD);
		n = rewrite_node(wb, raw, len, out);
	}
	wb->bytes += n > 0 ? (uint64_t)n : (uint64_t)len;
	return n;
}

/* A whole-book run's write-back as a rebuild of the book (bookdb_rebuild_rewrite):
 * 1 when another writer has the book open (then in place), 0 done, or a
 * negative code. */
static int write_rebuilt(BookmmStats *st, BookGraph *b, BookDB *db, const BookmmOptions *opt,
                         char *err)
{
	WriteBack wb = {.b = b, .opt = opt};
	wb.rec = malloc(sizeof *wb.rec);
	wb.edges = malloc(BOOKMM_NODE_MOVES * sizeof *wb.edges);
	char berr[BOOKDB_ERRLEN] = "";
	uint64_t rewritten = 0;
	int rc = BOOKDB_ENOMEM;
	bookmm_report(opt, "writing", 0, b->n);
	if (wb.rec && wb.edges)
		rc = bookdb_rebuild_rewrite(db, rebuild_node, &wb, &rewritten, &st->bytes_before,
		                            &st->bytes_after, berr);
	free(wb.rec);
	free(wb.edges);
	if (rc == BOOKDB_EBUSY && !berr[0]) {
		st->rebuild_busy = true;
		return 1;
	}
	if (rc == BOOKDB_ESTOPPED) return bookmm_stop_error(err, "writing the records");
	if (rc < 0)
		return fail(err, BOOKMM_ERRLEN, rc == BOOKDB_ENOMEM ? BOOKMM_ENOMEM : BOOKMM_EBOOK,
		            "writing the book: %s", berr[0] ? berr : bookdb_strerror(rc));
	st->rebuilt = true;
	st->rewritten += (size_t)rewritten;
	st->record_bytes += wb.bytes;
	return 0;
}

/*
 * Writes the values back. Without --full most records are unchanged: each is
 * compared in a read snapshot (renewed every PROGRESS_EVERY records, so that
 * none pins old pages for long), and only those that change are rewritten, up
 * to WRITE_PENDING in a write transaction. Scanning inside the write
 * transaction, as before, held LMDB's lock for seconds between two commits on
 * a large book (a coordinator beside waited up to 10 s). With --full every
 * record is rewritten, opt->batch a transaction.
 */
static int write_back(BookmmStats *st, BookGraph *b, BookDB *db, const BookmmOptions *opt,
                      char *err)
{
	const MmGraph *g = &b->g;
	size_t batch = opt->batch ? opt->batch : BOOKMM_BATCH;
	WriteBack wb = {.b = b, .opt = opt, .cap = opt->full ? batch : WRITE_PENDING};
	BookTxn *rd = NULL;
	uint64_t compared = 0;
	wb.rec = malloc(sizeof *wb.rec);
	wb.buf = malloc(BOOKDB_RECORD_MAX);
	wb.edges = malloc(BOOKMM_NODE_MOVES * sizeof *wb.edges);
	wb.pending = malloc(wb.cap * sizeof *wb.pending);
	int rc = BOOKDB_ENOMEM;
	bool was_stopped = false;
	if (!wb.rec || !wb.buf || !wb.edges || !wb.pending ||
	    (rc = bookdb_writer_new(&wb.w, db, batch)) < 0)
		goto out;
	/* Values are not input: the change log must not see them. */
	bookdb_writer_set_tracking(wb.w, false);
	for (uint32_t i = 0; i < g->n; i++) {
		if (i % PROGRESS_EVERY == 0) {
			bookmm_report(opt, "writing", i, g->n);
			/* What is written stays, as after a kill here: the mark
			 * the run put (BOOKMM_META_FULLRUN) makes the next run a
			 * whole-book one, which rewrites every record. */
			if ((was_stopped = bookmm_stopped(opt))) break;
			bookdb_txn_abort(rd);
			rd = NULL;
			if (!opt->full && (rc = bookdb_txn_begin(&rd, db, false)) < 0) goto out;
		}
		if (rd) {
			const uint8_t *raw;
			size_t len;
			rc = bookdb_get_raw(&raw, &len, rd, b->keys[i]);
			if (rc == BOOKDB_ENOTFOUND) continue;
			if (rc < 0) goto out;
			int ne = node_edges(wb.edges, b, i);
			int n = bookmm_rewrite(wb.buf, raw, len, wb.rec, g->flags[i] & F_VALUED,
			                       wb.edges, ne, false, &opt->policy);
			/* Every record's bytes as they will be (what the book's records
			 * take: docs/minimax.md, bytes_per_position). */
			compared += n > 0 ? (uint64_t)n : (uint64_t)len;
			if (n <= 0) continue;
		}
		wb.pending[wb.npending++] = i;
		if (wb.npending == wb.cap && (rc = write_pending(&wb)) < 0) goto out;
	}
	rc = write_pending(&wb);
	st->rewritten += wb.rewritten;
	st->record_bytes += opt->full ? wb.bytes : compared;
out:
	bookdb_txn_abort(rd);
	bookdb_writer_free(wb.w);
	free(wb.rec);
	free(wb.buf);
	free(wb.edges);
	free(wb.pending);
	if (rc < 0)
		return fail(err, BOOKMM_ERRLEN, rc == BOOKDB_ENOMEM ? BOOKMM_ENOMEM : BOOKMM_EBOOK,
		            "writing the book: %s", bookdb_strerror(rc));
	return was_stopped ? bookmm_stop_error(err, "writing the records") : 0;
}

uint64_t bookmm_new_stamp(void)
{
	uint64_t s = 0;
	int fd = open("/dev/urandom", O_RDONLY);
	if (fd >= 0) {
		if (read(fd, &s, sizeof s) != (ssize_t)sizeof s) s = 0;
		close(fd);
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	s ^=
	    (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 40);
	return s ? s : 1;
}

/* Keeps the graph file f wrote for later runs and records it, the consumed
 * change log and the summary in the book, in one transaction. */
static int keep_graph(const BookmmStats *st, const GraphFile *f, BookDB *db,
                      const BookmmOptions *opt, uint64_t seq, char *err)
{
	const MmGraph *g = &f->b->g;
	BookmmState s = {.stamp = f->stamp,
	                 .journal_len = MMFILE_JOURNAL_EMPTY,
	                 .seq = seq,
	                 .draw = {g->draw[BLACK], g->draw[WHITE]},
	                 .policy = bookmm_policy_norm(&opt->policy),
	                 .positions = st->positions,
	                 .valued = st->valued,
	                 .settled = st->settled,
	                 .moves = st->moves,
	                 .edges = st->edges};
	char msg[MMFILE_ERRLEN];
	if (f->rc) return fail(err, BOOKMM_ERRLEN, f->rc, "keeping the graph: %s", f->msg);
	int rc = mmfile_commit(f->dir, f->stamp, msg);
	if (rc < 0) return fail(err, BOOKMM_ERRLEN, BOOKMM_EBOOK, "keeping the graph: %s", msg);
	BookTxn *txn;
	if ((rc = bookdb_txn_begin(&txn, db, true)) < 0) goto bad;
	bookdb_txn_set_tracking(txn, false);
	/* Every record is as this run computed it: an incremental run stopped
	 * midway (bookinc.c, "mmrun") is over. */
	if ((rc = bookdb_changes_consume(txn, seq)) < 0 || (rc = bookmm_state_put(txn, &s)) < 0 ||
	    (rc = bookmm_summary_put(txn, st, opt)) < 0 ||
	    ((rc = bookdb_kv_del(txn, BOOKDB_META, BOOKMM_META_RUNNING,
	                         strlen(BOOKMM_META_RUNNING))) < 0 &&
	     rc != BOOKDB_ENOTFOUND) ||
	    ((rc = bookdb_kv_del(txn, BOOKDB_META, BOOKMM_META_FULLRUN,
	                         strlen(BOOKMM_META_FULLRUN))) < 0 &&
	     rc != BOOKDB_ENOTFOUND)) {
		bookdb_txn_abort(txn);
		goto bad;
	}
	if ((rc = bookdb_txn_commit(txn)) < 0) goto bad;
	return 0;
bad:
	return fail(err, BOOKMM_ERRLEN, BOOKMM_EBOOK, "writing the book: %s", bookdb_strerror(rc));
}

/* The start position's best value for Black, if it is a valued node. */
static void root_value(BookmmStats *st, const BookGraph *b)
{
	const MmGraph *g = &b->g;
	Position *start = malloc(sizeof *start);
	if (!start) return;
	pos_set_startpos(start);
	uint32_t r = map_find(b, pos_key(start));
	free(start);
	if (r == MM_NONE || !(g->flags[r] & F_VALUED)) return;
	MmVd best = {-MM_VALUE_INF, MM_DEPTH_MAX};
	for (uint32_t k = b->mstart[r]; k < b->mstart[r + 1]; k++) {
		const MmMove *m = &b->moves[k];
		if (m->next != MM_NONE && !(g->flags[m->next] & F_VALUED)) continue;
		MmVd v = m->next == MM_NONE
		             ? (MmVd){m->value, 0}
		             : bookmm_stored_vd(g->vd[m->next], g->flags[m->next] & MM_F_LOOP,
		                                g->flags[m->next] & MM_F_CHECKED);
		if (mm_vd_better(v, best)) best = v;
	}
	st->has_root = true;
	st->root_value = best.value;
}

int bookmm_full(BookmmStats *stats, BookDB *db, const char *dir, const BookmmOptions *opt,
                char *err)
{
	BookmmStats st = *stats;
	BookGraph b;
	memset(&b, 0, sizeof b);
	b.policy = &opt->policy;
	/* A graph file a killed run left half-written (the lock: no other run
	 * is writing one): its disk back before this run needs it. */
	mmfile_discard(dir);
	/* The change log is on before the snapshot is taken, so that whatever
	 * is written after it is logged for the next run. An overflowed log is
	 * emptied and on again too: this run reads every record the snapshot
	 * holds, and a log left overflowed would stay so whenever another writer
	 * (a coordinator's workers) writes during the run, making every later
	 * run a whole-book one. With it, the mark of a whole-book run under
	 * way: a run that never
	 * reaches its end (killed, stopped) may have consumed the log the kept
	 * state counts on, or written records under other draw values or
	 * another policy; the next run is then a whole-book one. */
	BookTxn *txn = NULL;
	BookChangesInfo ci;
	int rc = bookdb_txn_begin(&txn, db, true);
	if (rc == 0) rc = bookdb_changes_info(&ci, txn);
	bool hole = rc == 0 && ci.state != BOOKDB_CHANGES_ON, hole_before = false;
	if (hole)
		rc = ci.state == BOOKDB_CHANGES_OFF ? bookdb_changes_enable(txn)
		                                    : bookdb_changes_consume(txn, ci.seq);
	/* A hole an earlier stopped run left is there until a run ends. */
	if (rc == 0 && (rc = bookmm_fullrun_pending(txn, &hole_before)) > 0) rc = 0;
	hole |= hole_before;
	if (rc == 0) {
		bookdb_txn_set_tracking(txn, false);
		rc = bookdb_kv_put(txn, BOOKDB_META, BOOKMM_META_FULLRUN,
		                   strlen(BOOKMM_META_FULLRUN), hole ? "1" : "0", 1);
	}
	if (rc == 0) {
		rc = bookdb_txn_commit(txn);
		txn = NULL;
	}
	bookdb_txn_abort(txn);
	txn = NULL;
	/* Both passes read one snapshot, so that a writer adding positions
	 * meanwhile (joseki think) changes nothing under them; its changes stay
	 * in the change log for the next run. */
	if (rc == 0) rc = bookdb_txn_begin(&txn, db, false);
	if (rc == 0) rc = bookdb_changes_info(&ci, txn);
	if (rc < 0) {
		bookdb_txn_abort(txn);
		rc = fail(err, BOOKMM_ERRLEN, BOOKMM_EBOOK, "cannot read the book: %s",
		          bookdb_strerror(rc));
		goto done;
	}
	bookmm_report(opt, "index", 0, 0);
	b.mark = clock_ms_f();
	rc = load_keys(&b, opt, txn, err);
	phase_end(&b, BOOKMM_PH_INDEX);
	if (rc == 0) rc = load_moves(&b, opt, dir, err);
	phase_end(&b, BOOKMM_PH_MOVES);
	bookdb_txn_abort(txn);
	/* The records are read: their addresses and the inner marks go. */
	if (b.ix) bookdb_index_drop_records(b.ix);
	bigmem_free(b.inner);
	b.inner = NULL;
	if (rc < 0) goto done;
	if (bookmm_stopped(opt)) {
		rc = bookmm_stop_error(err, "building the graph");
		goto done;
	}
	if (mmfile_parents(&b.pstart, &b.parents, b.n, b.mstart, b.moves) < 0) {
		rc = fail(err, BOOKMM_ERRLEN, BOOKMM_ENOMEM, "out of memory");
		goto done;
	}
	/* The reverse edges are the graph file's too: written now, while they
	 * are in memory, not made again for it (at 10 M positions with the
	 * arrays in files, 5-7 s of a 65 s run). */
	b.npar = b.pstart[b.n];
	char why[MMFILE_ERRLEN];
	if (mmfile_tmp_parents(dir, b.n, b.mstart[b.n], b.pstart, b.parents, opt->stop, why)) {
		rc = bookmm_stopped(opt)
		         ? bookmm_stop_error(err, "writing the graph")
		         : fail(err, BOOKMM_ERRLEN, BOOKMM_EBOOK, "writing the graph: %s", why);
		goto done;
	}
	if (build_analysis(&b) < 0) {
		rc = fail(err, BOOKMM_ERRLEN, BOOKMM_ENOMEM, "out of memory");
		goto done;
	}
	MmGraph *g = &b.g;
	g->draw[BLACK] = bookmm_clamp(opt->draw_black);
	g->draw[WHITE] = bookmm_clamp(opt->draw_white);
	MmStats ms;
	bookmm_report(opt, "analysis", 0, 0);
	g->stop = opt->stop;
	if ((rc = mm_backup(g, &ms)) == MM_STOPPED) {
		rc = bookmm_stop_error(err, "analysing");
		goto done;
	}
	if (rc < 0 || number_by_key(&b) < 0) {
		rc = fail(err, BOOKMM_ERRLEN, BOOKMM_ENOMEM, "out of memory");
		goto done;
	}
	st.positions = g->n;
	st.moves = b.kept_moves;
	st.edges = b.kept_edges;
	for (uint32_t i = 0; i < g->n; i++) {
		if (!(g->flags[i] & F_VALUED)) continue;
		st.valued++;
		if (g->flags[i] & MM_F_CONST) st.settled++;
	}
	st.cyclic = st.valued - st.settled;
	st.sweeps = ms.peel_sweeps + ms.relax_sweeps;
	st.unsettled_cycles = ms.unsettled_cycles;
	st.unsettled = ms.unsettled_nodes;
	st.changed = st.affected = st.positions;
	st.lookups_sorted = b.sorted;
	st.sorted_bytes = b.sorted_bytes;
	st.shallow = b.shallow;
	root_value(&st, &b);
	phase_end(&b, BOOKMM_PH_ANALYSIS);
	GraphFile gf = {.b = &b, .dir = dir, .stamp = bookmm_new_stamp()};
	atomic_init(&gf.quit, false);
	gf.until = &gf.quit;
	pthread_t gt;
	/* The graph file is written beside the records while the arrays are
	 * memory's. When some are in files the two passes, each reading its
	 * arrays at random (the reverse edges made, the children's values),
	 * would take the page cache from each other (on the 10 M synth book in
	 * 240 MB: the write-back at a fifth after ten minutes; one after the
	 * other, 9 s and 19 s): the file comes first. */
	BigmemStats bs;
	bigmem_stats(&bs);
	bool threaded = bs.file_bytes == 0 && pthread_create(&gt, NULL, graph_file_main, &gf) == 0;
	if (!threaded) {
		bookmm_report(opt, "graph", 0, 0);
		if (opt->stop) gf.until = opt->stop;
		graph_file_main(&gf);
		if (bookmm_stopped(opt))
			rc = bookmm_stop_error(err, "writing the graph");
		else if (gf.rc)
			rc = fail(err, BOOKMM_ERRLEN, gf.rc, "writing the graph: %s", gf.msg);
		if (rc != 0) goto done;
		phase_end(&b, BOOKMM_PH_GRAPH);
	}
	/* Written anew, the book needs room for a copy beside it until the
	 * rename: about its file's size, a tenth more when the records grow,
	 * and the graph file being written beside (some 54 bytes a position).
	 * Without that room the records are rewritten in place, which needs
	 * room for a batch's pages. */
	bool rebuild = (opt->full || opt->rebuild) && !opt->in_place;
	if (rebuild) {
		uint64_t need = bookdb_file_size(db) / 10 * 11 +
		                (threaded ? (uint64_t)b.n * 64 : 0) + ((uint64_t)16 << 20);
		uint64_t room = bookdb_free_bytes(db);
		if (room < need) {
			rebuild = false;
			st.rebuild_no_room = true;
			st.room_free = room;
			st.room_needed = need;
		}
	}
	rc = rebuild ? write_rebuilt(&st, &b, db, opt, err) : 1;
	if (rc == 1) rc = write_back(&st, &b, db, opt, err);
	phase_end(&b, BOOKMM_PH_WRITE);
	if (rc != 0) atomic_store(&gf.quit, true);
	if (threaded) {
		bookmm_report(opt, "graph", 0, 0);
		pthread_join(gt, NULL);
	}
	if (rc == 0) rc = keep_graph(&st, &gf, db, opt, ci.seq, err);
	phase_end(&b, BOOKMM_PH_GRAPH);
	memcpy(st.phase_ms, b.phase_ms, sizeof st.phase_ms);
done:
	/* A failed or stopped run's temporary graph file goes (the old file
	 * stays, with the state the book records for it). */
	if (rc != 0) mmfile_discard(dir);
	bg_free(&b);
	*stats = st;
	return rc;
}

/* The incremental run when it can answer, else the whole book (which writes
 * itself); with plan, the incremental run's writes are left in *plan. err:
 * BOOKMM_ERRLEN bytes. */
static int run_or_full(BookMinimaxPlan **plan, BookmmStats *stats, BookDB *db,
                       const BookmmOptions *opt, char *err)
{
	static const BookmmOptions defaults; /* outlives a plan made with it */
	if (!opt) opt = &defaults;
	BookmmStats st;
	memset(&st, 0, sizeof st);
	if (stats) *stats = st;
	const char *dir = bookdb_dir(db);
	/* One run at a time on a book (another process's too: a coordinator's
	 * and a `joseki minimax`, or a whole-book child left running by a
	 * coordinator killed): two would append to one journal, and an older
	 * whole-book run ending after a newer one would record its older state
	 * over a log the newer one had consumed. */
	char lpath[BOOKDB_PATH_LEN + 16];
	snprintf(lpath, sizeof lpath, "%s/minimax.lock", dir);
	int lock = open(lpath, O_RDWR | O_CREAT | O_CLOEXEC, 0664);
	if (lock < 0)
		return errmsg_set(err, BOOKMM_ERRLEN, BOOKMM_EBOOK, "%s: %s", lpath,
		                  strerror(errno));
	if (flock(lock, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		/* The holder wrote its process id (a coordinator's periodic
		 * run, or a joseki minimax). */
		char holder[24] = "";
		ssize_t n = e == EWOULDBLOCK ? pread(lock, holder, sizeof holder - 1, 0) : -1;
		holder[n > 0 ? n : 0] = 0;
		long pid = strtol(holder, NULL, 10);
		char by[48] = "";
		if (pid > 0) snprintf(by, sizeof by, ", held by process %ld", pid);
		close(lock);
		return e == EWOULDBLOCK
		           ? errmsg_set(err, BOOKMM_ERRLEN, BOOKMM_EBUSY,
		                        "another minimax run is under way on this book (%s%s): "
		                        "try again when it ends",
		                        lpath, by)
		           : errmsg_set(err, BOOKMM_ERRLEN, BOOKMM_EBOOK, "%s: %s", lpath,
		                        strerror(e));
	}
	char pidline[24];
	int pl = snprintf(pidline, sizeof pidline, "%ld\n", (long)getpid());
	/* (Held whatever these do: only the holder's id would be missing.) */
	if (ftruncate(lock, 0) == 0) (void)!pwrite(lock, pidline, (size_t)pl, 0);
	char why[BOOKMM_ERRLEN] = "--full";
	int rc = BOOKMM_EFULL;
	if (!opt->full)
		rc = plan ? bookmm_inc_prepare(plan, &st, db, dir, opt, why)
		          : bookmm_incremental(&st, db, dir, opt, why);
	if (rc == BOOKMM_EFULL && bookmm_stopped(opt)) {
		rc = bookmm_stop_error(err, "starting");
	} else if (rc == BOOKMM_EFULL && opt->no_whole) {
		snprintf(st.full_reason, sizeof st.full_reason, "%.*s",
		         (int)sizeof st.full_reason - 1, why);
		rc = errmsg_set(err, BOOKMM_ERRLEN, BOOKMM_EWHOLE, "%s", why);
	} else if (rc == BOOKMM_EFULL) {
		memset(&st, 0, sizeof st);
		snprintf(st.full_reason, sizeof st.full_reason, "%.*s",
		         (int)sizeof st.full_reason - 1, why);
		rc = bookmm_full(&st, db, dir, opt, err);
	} else if (rc < 0) {
		errmsg_set(err, BOOKMM_ERRLEN, rc, "%s", why);
	}
	if (stats) *stats = st;
	if (plan && *plan)
		bookmm_plan_keep_lock(*plan, lock);
	else
		close(lock);
	return rc;
}

int bookmm_run(BookmmStats *stats, BookDB *db, const BookmmOptions *opt, char *err)
{
	return run_or_full(NULL, stats, db, opt, err);
}

static int hook_run(void *ctx, BookDB *db, char *err, size_t errlen)
{
	char msg[BOOKMM_ERRLEN];
	if (bookmm_run(NULL, db, ctx, msg) < 0) return errmsg_set(err, errlen, -1, "%s", msg);
	return 0;
}

/*
 * The book's keys as txn sees them: the graph file and journal of the last
 * run (as the book's state names them), and every key the change log holds
 * since that run's snapshot. While the log is on, it holds every write
 * since (it only goes back on from an overflow when a run consumed
 * everything, and minimax's own rewrites, which are not logged, add no key).
 */
static int hook_keys(void *ctx, BookDB *db, BookTxn *txn,
                     void (*add)(void *actx, const Key *keys, size_t n), void *actx)
{
	(void)ctx;
	BookmmState st;
	BookChangesInfo ci;
	char err[MMFILE_ERRLEN];
	bool hole;
	if (bookmm_state_get(&st, txn) < 0 || bookdb_changes_info(&ci, txn) < 0 ||
	    ci.state != BOOKDB_CHANGES_ON || bookmm_fullrun_pending(txn, &hole) < 0 || hole ||
	    mmfile_keys(bookdb_dir(db), st.stamp, st.journal_len, add, actx, err) < 0)
		return -1;
	BookChangesIter *it = NULL;
	uint64_t seq;
	Key k;
	int rc = bookdb_changes_iter_open(&it, txn, st.seq + 1);
	while (rc == 0 && (rc = bookdb_changes_iter_next(it, &seq, &k)) == 1) {
		add(actx, &k, 1);
		rc = 0;
	}
	bookdb_changes_iter_free(it);
	return rc < 0 ? -1 : 0;
}

int bookmm_prepare(BookMinimaxPlan **plan, BookmmStats *stats, BookDB *db, const BookmmOptions *opt,
                   char *err)
{
	*plan = NULL;
	return run_or_full(plan, stats, db, opt, err);
}

static int hook_prepare(void *ctx, BookDB *db, const atomic_bool *stop, BookMinimaxPlan **plan,
                        char *err, size_t errlen)
{
	static const BookmmOptions defaults;
	BookmmOptions o = ctx ? *(const BookmmOptions *)ctx : defaults;
	if (stop) o.stop = stop;
	char msg[BOOKMM_ERRLEN];
	int rc = bookmm_prepare(plan, NULL, db, &o, msg);
	/* Other failures keep their BOOKMM_E* code (serve's prepare looks for
	 * BOOKMM_EWHOLE). */
	if (rc < 0)
		return errmsg_set(err, errlen, rc == BOOKMM_ESTOPPED ? BOOK_MINIMAX_STOPPED : rc,
		                  "%s", msg);
	return 0;
}

static int hook_apply(BookMinimaxPlan *plan, BookTxn *txn, size_t max, char *err, size_t errlen)
{
	char msg[BOOKMM_ERRLEN];
	int rc = bookmm_plan_apply(plan, txn, max, msg);
	if (rc < 0) return errmsg_set(err, errlen, -1, "%s", msg);
	return rc;
}

/* Behind, or never backed up at all over analyses (a coordinator's first
 * run then does the whole book). */
static bool hook_pending(void *ctx, BookDB *db)
{
	(void)ctx;
	if (bookmm_pending(db)) return true;
	BookTxn *txn;
	if (bookdb_txn_begin(&txn, db, false) < 0) return false;
	bool never = bookmm_never_ran(txn);
	bookdb_txn_abort(txn);
	return never;
}

BookMinimaxHook bookmm_hook(const BookmmOptions *opt)
{
	return (BookMinimaxHook){.run = hook_run,
	                         .ctx = (void *)opt,
	                         .pending = hook_pending,
	                         .keys = hook_keys,
	                         .prepare = hook_prepare,
	                         .apply = hook_apply,
	                         .plan_free = bookmm_plan_free};
}
