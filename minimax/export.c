/*
 * minimax/export.c — YaneuraOu book export.
 *
 * Sorting 10 million records by their SFEN line must not hold the text in
 * memory: each record's text block ("sfen ..." line and move lines) is
 * appended to a spill file, and only a 16-byte index entry per record (offset,
 * SFEN line length, block length) is kept. The entries are sorted comparing the
 * SFEN lines in the memory-mapped spill file (the page cache holds the text,
 * not the heap), then the blocks are copied in order to OUT.tmp, which is
 * renamed to OUT.
 *
 * The book is read through a snapshot index (bookdb/index.h): one pass of
 * keys, then every record and every ponder lookup (the child's best move)
 * from memory. The records are split in key ranges, one thread a core; each
 * part writes and sorts its own spill file, and the parts are merged while
 * OUT is written.
 */
#include "minimax/export.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "minimax/export_priv.h"
#include "shogi/apery.h"
#include "shogi/db2016.h"
#include "shogi/errmsg.h"
#include "bookdb/check.h"
#include "shogi/movegen.h"
#include "shogi/grow.h"
#include "bookdb/index.h"
#include "bookdb/query.h"
#include "minimax/bookmm.h"
#include "minimax/graph.h"
#include "bookdb/query.h"
#include "shogi/notation.h"

const char *export_strerror(int code)
{
	switch (code) {
	case EXPORT_OK:
		return "success";
	case EXPORT_EIO:
		return "the output could not be written";
	case EXPORT_ENOMEM:
		return "out of memory";
	case EXPORT_EBOOK:
		return "the book could not be read";
	case EXPORT_EINVAL:
		return "bad option";
	}
	return "unknown export error";
}

typedef struct {
	uint64_t off;
	uint32_t sfen_len; /* "sfen ..." without the newline */
	uint32_t len;      /* the whole block */
} Entry;

/* One entry of an Apery book, with what orders it: its key, then the
 * position it comes from (to tell two positions one key names), then the
 * move's rank (best first). */
typedef struct {
	uint64_t key, pos_hi;
	uint32_t rank;
	uint16_t move, count;
	int32_t score;
} AperyOut;

static int cmp_apery(const void *a, const void *b)
{
	const AperyOut *x = a, *y = b;
	if (x->key != y->key) return x->key < y->key ? -1 : 1;
	if (x->pos_hi != y->pos_hi) return x->pos_hi < y->pos_hi ? -1 : 1;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

#define fail errmsg_set

/* strcmp order of two lines that contain no NUL (a prefix sorts first). */
static int cmp_entries(const void *a, const void *b, void *ctx)
{
	const char *base = ctx;
	const Entry *x = a, *y = b;
	uint32_t n = x->sfen_len < y->sfen_len ? x->sfen_len : y->sfen_len;
	int c = memcmp(base + x->off, base + y->off, n);
	if (c) return c;
	return (x->sfen_len > y->sfen_len) - (x->sfen_len < y->sfen_len);
}

/* The best move of a minimaxed record (MOVE_NONE if none has a value). */
static Move best_of(const BookRecord *r)
{
	Move best = MOVE_NONE;
	MmVd bv = {-MM_VALUE_INF, MM_DEPTH_MAX};
	for (int k = 0; k < r->nmoves; k++) {
		const BookMove *m = &r->moves[k];
		if (m->value == BOOKMM_NOVALUE) continue;
		MmVd v = {m->value, m->dist};
		if (best == MOVE_NONE || mm_vd_better(v, bv)) {
			best = m->move;
			bv = v;
		}
	}
	return best;
}

static bool out_better(const OutMove *a, const OutMove *b, bool minimax)
{
	if (minimax) {
		MmVd x = {(int16_t)a->value, (uint16_t)a->depth},
		     y = {(int16_t)b->value, (uint16_t)b->depth};
		return mm_vd_better(x, y);
	}
	if (a->value != b->value) return a->value > b->value;
	return a->depth > b->depth;
}

/* The search depth of rec's analysis: its think depth, else its deepest
 * analysed move's, else 0. */
static int analysis_depth(const BookRecord *rec)
{
	if ((rec->flags & BOOKDB_REC_THOUGHT) && rec->think_depth) return rec->think_depth;
	int d = 0;
	for (int k = 0; k < rec->nmoves; k++)
		if (bookdb_move_analysed(&rec->moves[k]) && rec->moves[k].depth > d)
			d = rec->moves[k].depth;
	return d;
}

/* The count field of the moves kept (ExportOptions.count). */
static void set_counts(OutMove *out, size_t n, const BookRecord *rec, const ExportOptions *opt)
{
	uint32_t below = 1;
	for (size_t k = n; k-- > 0;) {
		const BookMove *m = &rec->moves[out[k].k];
		uint32_t games = (m->flags & BOOKDB_MOVE_STATS) ? m->count : 0;
		uint32_t c = opt->count == EXPORT_COUNT_ONE ? 1 : games ? games : 1;
		/* VALUE: never fewer than the move ranked below it. */
		if (opt->count == EXPORT_COUNT_VALUE && c < below) c = below;
		out[k].count = c;
		below = c;
	}
}

size_t export_pick(OutMove *out, const BookRecord *rec, const Position *pos, const BookIndex *ix,
                   BookRecord *child, const ExportOptions *opt, unsigned how)
{
	bool minimax = rec->flags & BOOKDB_REC_MINIMAX;
	size_t n = 0;
	for (int k = 0; k < rec->nmoves; k++) {
		const BookMove *m = &rec->moves[k];
		if (m->move == MOVE_NONE) continue;
		if ((m->flags & BOOKDB_MOVE_AVOIDED) && !opt->with_avoided) continue;
		if (opt->min_games &&
		    (!(m->flags & BOOKDB_MOVE_STATS) || m->count < opt->min_games))
			continue;
		OutMove o = {m->move, MOVE_NONE, 0, 0, 0, 1, k};
		bool shallow = (m->flags & BOOKDB_MOVE_EVAL) && m->depth < opt->min_depth;
		if (minimax) {
			if (m->value == BOOKMM_NOVALUE) continue;
			/* A value backed up through a child is not the engine's. */
			if (shallow && m->dist == 0) continue;
			o.value = m->value;
			o.depth = m->dist;
			/* A leaf's own analysis (not a game comment, nor games alone). */
			o.field = opt->depth_field == EXPORT_DEPTH_DISTANCE ? m->dist
			          : m->dist == 0 && !(rec->flags & BOOKDB_REC_GAMES) &&
			                  bookdb_move_analysed(m)
			              ? m->depth
			              : 0;
		} else {
			/* Before minimax: the move's own analysis, never a game comment
			 * (and none in a games-only book). */
			if (!bookdb_move_valued(rec, m) || shallow) continue;
			o.value = m->eval;
			o.depth = o.field = m->depth;
		}
		size_t p = n++;
		while (p > 0 && out_better(&o, &out[p - 1], minimax)) {
			out[p] = out[p - 1];
			p--;
		}
		out[p] = o;
	}
	if (n == 0) return 0;
	/* A preferred move within its window of the best is the one played. */
	for (size_t p = 1; p < n && (rec->flags & BOOKDB_REC_PREFER); p++) {
		const BookMove *m = &rec->moves[out[p].k];
		if (!(m->flags & BOOKDB_MOVE_PREFERRED) ||
		    !bookdb_prefer_fits(out[p].value, out[0].value, m->prefer_window))
			continue;
		OutMove pm = out[p];
		if (how & PICK_KEEP_ABOVE) {
			memmove(&out[1], &out[0], p * sizeof *out);
		} else {
			memmove(&out[1], &out[p + 1], (n - p - 1) * sizeof *out);
			n -= p;
		}
		out[0] = pm;
		break;
	}
	size_t keep = n;
	if (!(how & PICK_ALL) && opt->moves != EXPORT_MOVES_ALL) {
		int floor = out[0].value - (opt->moves == EXPORT_MOVES_WINDOW ? opt->window : 0);
		keep = 1;
		while (opt->moves == EXPORT_MOVES_WINDOW && keep < n && out[keep].value >= floor)
			keep++;
	}
	if (minimax)
		for (size_t k = 0; k < keep; k++) {
			if (out[k].depth == 0) continue;
			if (bookdb_index_get_moves(child, ix, pos_key_after(pos, out[k].move)) != 0)
				continue;
			if (child->flags & BOOKDB_REC_MINIMAX) out[k].ponder = best_of(child);
			/* Backed up: the depth of the analysis of the position it
			 * leads to, whose value it is (its deepest move's when the
			 * record does not say). */
			if (opt->depth_field == EXPORT_DEPTH_SEARCH &&
			    !(rec->flags & BOOKDB_REC_GAMES))
				out[k].field = analysis_depth(child);
		}
	set_counts(out, keep, rec, opt);
	return keep;
}

int export_root_keys(Key *keys, const ExportOptions *opt, char *err)
{
	Position *pos = malloc(sizeof *pos);
	if (!pos) return fail(err, EXPORT_ERRLEN, EXPORT_ENOMEM, "out of memory");
	char perr[SHOGI_ERRLEN];
	for (int r = 0; r < opt->nroots; r++) {
		if (position_parse(pos, opt->roots[r], perr) < 0) {
			free(pos);
			return fail(err, EXPORT_ERRLEN, EXPORT_EINVAL, "root %d '%s': %s", r + 1,
			            opt->roots[r], perr);
		}
		keys[r] = pos_key(pos);
	}
	free(pos);
	return 0;
}

/* With roots: which records (by index position) a game from them reaches
 * through the moves written (the other side's: every reply written with
 * PICK_ALL), up to opt->max_ply: the walk's met records (w->seen NULL
 * without roots). Breadth first. 0, or a negative EXPORT_E* code with err. */
static int reach_from_roots(BookWalk *w, size_t *reached, const BookIndex *ix,
                            const ExportOptions *opt, char *err)
{
	*w = (BookWalk){0};
	*reached = 0;
	if (opt->nroots <= 0) return 0;
	Key *keys = malloc((size_t)opt->nroots * sizeof *keys);
	BookRecord *rec = malloc(sizeof *rec), *child = malloc(sizeof *child);
	Position *pos = malloc(sizeof *pos);
	OutMove *mv = malloc(BOOKDB_MAX_MOVES * sizeof *mv);
	int rc = 0;
	if (!keys || !rec || !child || !pos || !mv || bookdb_walk_init(w, ix) < 0) {
		rc = fail(err, EXPORT_ERRLEN, EXPORT_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = export_root_keys(keys, opt, err)) < 0) goto done;
	for (int r = 0; r < opt->nroots; r++) {
		size_t i = bookdb_index_find(ix, keys[r]);
		if (i == BOOKDB_INDEX_NONE) {
			rc = fail(err, EXPORT_ERRLEN, EXPORT_EINVAL,
			          "root %d '%s' is not in the book", r + 1, opt->roots[r]);
			goto done;
		}
		bookdb_walk_meet(w, i);
	}
	size_t i;
	while (bookdb_walk_next(w, &i)) {
		const uint8_t *val;
		size_t len;
		bookdb_index_raw(&val, &len, ix, i);
		if (bookdb_record_decode(rec, val, len) < 0) continue;
		if (opt->max_ply > 0 && rec->min_ply >= opt->max_ply) continue;
		if (bookdb_record_position(pos, rec, NULL) < 0) continue;
		unsigned how = export_side_ours(opt, pos->side) ? 0 : PICK_ALL;
		size_t k = export_pick(mv, rec, pos, ix, child, opt, how);
		for (size_t j = 0; j < k; j++)
			bookdb_walk_meet(w, bookdb_index_find(ix, pos_key_after(pos, mv[j].move)));
	}
	*reached = w->tail;
done:
	if (rc < 0) bookdb_walk_free(w);
	free(keys);
	free(rec);
	free(child);
	free(pos);
	free(mv);
	return rc;
}

/* What YaneuraOu's defaults would leave out of this position's best move. */
static void yo_count(ExportStats *st, const BookRecord *rec, const Position *pos,
                     const OutMove *best)
{
	int side = pos->side == WHITE;
	int limit = side ? EXPORT_YO_WHITE_LIMIT : EXPORT_YO_BLACK_LIMIT;
	if (st->positions == 0) { /* the first: the extremes start here */
		st->depth_lo = best->field;
		st->value_lo[0] = st->value_lo[1] = INT_MAX;
	}
	if (best->field < st->depth_lo) st->depth_lo = best->field;
	if (best->value < st->value_lo[side]) st->value_lo[side] = best->value;
	if (rec->min_ply > st->ply_hi) st->ply_hi = rec->min_ply;
	st->yo_shallow += best->field < EXPORT_YO_DEPTH_LIMIT;
	st->yo_below[side] += best->value < limit;
	st->yo_late += rec->min_ply > EXPORT_YO_BOOK_MOVES;
}

static int spill_record(FILE *f, Entry *e, uint64_t off, const BookRecord *rec, const Position *pos,
                        const OutMove *mv, size_t n)
{
	char line[DB2016_LINE_MAX];
	size_t sl = db2016_format_sfen(line, pos, rec->min_ply);
	bool minimax = rec->flags & BOOKDB_REC_MINIMAX;
	long start = ftell(f);
	if (fwrite(line, 1, sl, f) != sl) return -1;
	for (size_t k = 0; k < n; k++) {
		int value = mv[k].value;
		/* As peta-shock writes it: same value as the best by another
		 * route is shown one lower, so an engine prefers the best line. */
		if (minimax && k > 0 && value == mv[0].value && mv[k].depth != mv[0].depth) value--;
		size_t ml = db2016_format_move_count(line, mv[k].move, mv[k].ponder, value,
		                                     mv[k].field, (int)mv[k].count);
		if (fwrite(line, 1, ml, f) != ml) return -1;
	}
	long end = ftell(f);
	if (start < 0 || end < 0) return -1;
	e->off = off;
	e->sfen_len = (uint32_t)(sl - 1); /* "sfen ..." without the newline */
	e->len = (uint32_t)(end - start);
	return 0;
}

#define EXPORT_MAX_THREADS 16

/* One key range of the records: its own spill file, entries and counts. */
typedef struct {
	const BookIndex *ix;
	const ExportOptions *opt;
	const BookWalk *reach; /* with roots: the records reached (else seen NULL: all) */
	size_t lo, hi;
	char *spill_path;
	FILE *spill;
	char *map;
	size_t map_len;
	Entry *idx;
	size_t cap;
	ExportStats st;          /* records, positions (= entries), moves, minimaxed */
	int rc;                  /* 0, EXPORT_ENOMEM, EXPORT_EIO or EXPORT_EBOOK */
	int err_no;              /* errno of the failed write (EXPORT_EIO) */
	char why[BOOKDB_ERRLEN]; /* EXPORT_EBOOK: the record that is not sound */
	atomic_size_t *done;     /* records read by all parts */
	size_t total;
	bool reporter; /* the part on the calling thread reports progress */
	bool apery;    /* an Apery book: entries kept in memory, no spill file */
	AperyOut *ap;
	size_t nap, apcap;
} Part;

#define PROGRESS_EVERY 65536

/* Writes a part's blocks to its spill file, then maps it and sorts its entries. */
static void *run_part(void *arg)
{
	Part *p = arg;
	BookRecord *rec = malloc(sizeof *rec), *child = malloc(sizeof *child);
	Position *pos = malloc(sizeof *pos);
	OutMove *mv = malloc(BOOKDB_MAX_MOVES * sizeof *mv);
	uint64_t off = 0;
	p->rc = EXPORT_ENOMEM;
	if (!rec || !child || !pos || !mv) goto out;
	p->rc = EXPORT_EIO;
	if (!p->apery && !(p->spill = fopen(p->spill_path, "w+b"))) goto out;
	if (p->spill) setvbuf(p->spill, NULL, _IOFBF, 1 << 20);
	for (size_t i = p->lo; i < p->hi; i++) {
		const uint8_t *val;
		size_t len;
		bookdb_index_raw(&val, &len, p->ix, i);
		p->st.records++;
		if (p->st.records % PROGRESS_EVERY == 0) {
			size_t d = atomic_fetch_add(p->done, PROGRESS_EVERY) + PROGRESS_EVERY;
			if (p->reporter && p->opt->progress)
				p->opt->progress(p->opt->progress_ctx, "reading", d, p->total);
		}
		if (p->reach->seen && !bookdb_walk_met(p->reach, i)) continue;
		/* A record that is not sound fails the export (as joseki check would
		 * find it): a damaged book must not pass for a smaller one. */
		Move legal[MOVEGEN_MAX];
		int nlegal;
		if (bookdb_record_read(rec, pos, legal, &nlegal, bookdb_index_keys(p->ix)[i], val,
		                       len, p->why) < 0) {
			p->rc = EXPORT_EBOOK;
			goto out;
		}
		if (p->opt->max_ply > 0 && rec->min_ply > p->opt->max_ply) continue;
		if (rec->min_ply < p->opt->min_ply) continue;
		if (!export_side_ours(p->opt, pos->side)) continue;
		size_t n = export_pick(mv, rec, pos, p->ix, child, p->opt, 0);
		if (n == 0) continue;
		yo_count(&p->st, rec, pos, &mv[0]);
		p->st.from_games += (rec->flags & BOOKDB_REC_GAMES) != 0;
		if (p->apery) {
			if (array_grow((void **)&p->ap, &p->apcap, p->nap + n, sizeof *p->ap,
			               1024) < 0) {
				p->rc = EXPORT_ENOMEM;
				goto out;
			}
			uint64_t key = apery_key(pos);
			for (size_t k = 0; k < n; k++)
				p->ap[p->nap++] = (AperyOut){
				    key,
				    pos_key(pos).hi,
				    (uint32_t)k,
				    apery_move_encode(mv[k].move),
				    (uint16_t)(mv[k].count > UINT16_MAX ? UINT16_MAX : mv[k].count),
				    mv[k].value};
			p->st.positions++;
			p->st.moves += n;
			if (rec->flags & BOOKDB_REC_MINIMAX) p->st.minimaxed++;
			continue;
		}
		if (array_grow((void **)&p->idx, &p->cap, p->st.positions + 1, sizeof *p->idx,
		               1024) < 0) {
			p->rc = EXPORT_ENOMEM;
			goto out;
		}
		if (spill_record(p->spill, &p->idx[p->st.positions], off, rec, pos, mv, n) < 0)
			goto out;
		off += p->idx[p->st.positions].len;
		p->st.positions++;
		p->st.moves += n;
		if (rec->flags & BOOKDB_REC_MINIMAX) p->st.minimaxed++;
	}
	if (p->apery) {
		qsort(p->ap, p->nap, sizeof *p->ap, cmp_apery);
		p->rc = 0;
		goto out;
	}
	if (fflush(p->spill) != 0) goto out;
	p->map_len = off;
	if (off) {
		p->map = mmap(NULL, off, PROT_READ, MAP_PRIVATE, fileno(p->spill), 0);
		if (p->map == MAP_FAILED) {
			p->map = NULL;
			p->rc = EXPORT_ENOMEM;
			goto out;
		}
		qsort_r(p->idx, p->st.positions, sizeof *p->idx, cmp_entries, p->map);
	}
	p->rc = 0;
out:
	if (p->rc == EXPORT_EIO) p->err_no = errno;
	free(rec);
	free(child);
	free(pos);
	free(mv);
	return NULL;
}

/* The parts' sorted entries merged into OUT (a linear scan of the heads: few parts). */
static bool write_merged(FILE *out, Part *parts, int np, const ExportOptions *opt, size_t total)
{
	size_t at[EXPORT_MAX_THREADS] = {0};
	for (size_t k = 0;; k++) {
		if (opt->progress && k % PROGRESS_EVERY == 0)
			opt->progress(opt->progress_ctx, "writing", k, total);
		int best = -1;
		for (int t = 0; t < np; t++) {
			if (at[t] >= parts[t].st.positions) continue;
			if (best < 0) {
				best = t;
				continue;
			}
			const Entry *x = &parts[t].idx[at[t]], *y = &parts[best].idx[at[best]];
			uint32_t n = x->sfen_len < y->sfen_len ? x->sfen_len : y->sfen_len;
			int c = memcmp(parts[t].map + x->off, parts[best].map + y->off, n);
			if (c < 0 || (c == 0 && x->sfen_len < y->sfen_len)) best = t;
		}
		if (best < 0) return true;
		const Entry *e = &parts[best].idx[at[best]++];
		if (fwrite(parts[best].map + e->off, 1, e->len, out) != e->len) return false;
	}
}

/* The parts' sorted Apery entries merged into OUT: 16 bytes each, by key. Of
 * two positions one key names, the first (the smaller joseki key) is kept. */
static bool write_merged_apery(FILE *out, Part *parts, int np, const ExportOptions *opt,
                               ExportStats *st)
{
	size_t at[EXPORT_MAX_THREADS] = {0};
	uint64_t last_key = 0, last_pos = 0;
	bool any = false;
	for (size_t k = 0;; k++) {
		if (opt->progress && k % PROGRESS_EVERY == 0)
			opt->progress(opt->progress_ctx, "writing", k, st->moves);
		int best = -1;
		for (int t = 0; t < np; t++)
			if (at[t] < parts[t].nap &&
			    (best < 0 ||
			     cmp_apery(&parts[t].ap[at[t]], &parts[best].ap[at[best]]) < 0))
				best = t;
		if (best < 0) return true;
		const AperyOut *a = &parts[best].ap[at[best]++];
		if (any && a->key == last_key && a->pos_hi != last_pos) {
			st->collisions++;
			continue;
		}
		any = true;
		last_key = a->key;
		last_pos = a->pos_hi;
		uint8_t buf[APERY_ENTRY_SIZE];
		AperyEntry e = {a->key, a->move, a->count, a->score};
		apery_entry_write(buf, &e);
		if (fwrite(buf, 1, sizeof buf, out) != sizeof buf) return false;
		st->entries++;
	}
}

static int export_run(ExportStats *stats, BookDB *db, const char *out_path,
                      const ExportOptions *opt, bool apery, char *err)
{
	const size_t errlen = EXPORT_ERRLEN;
	ExportStats st;
	memset(&st, 0, sizeof st);
	Part parts[EXPORT_MAX_THREADS];
	memset(parts, 0, sizeof parts);
	size_t plen = strlen(out_path) + 32;
	char *tmp_path = malloc(plen);
	FILE *out = NULL;
	BookTxn *txn = NULL;
	BookIndex *ix = NULL;
	BookWalk reach = {0};
	int rc = 0, np = 0;
	if (!tmp_path) {
		rc = fail(err, errlen, EXPORT_ENOMEM, "out of memory");
		goto done;
	}
	snprintf(tmp_path, plen, "%s.tmp", out_path);
	if ((rc = bookdb_txn_begin(&txn, db, false)) == 0) rc = bookdb_index_build(&ix, txn);
	if (rc < 0) {
		rc = fail(err, errlen, rc == BOOKDB_ENOMEM ? EXPORT_ENOMEM : EXPORT_EBOOK,
		          "cannot read the book: %s", bookdb_strerror(rc));
		goto done;
	}
	size_t n = bookdb_index_count(ix);
	if ((rc = reach_from_roots(&reach, &st.reached, ix, opt, err)) < 0) goto done;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	np = ncpu < 1 ? 1 : (int)ncpu;
	if (n < 20000) np = 1;
	if (opt->threads > 0) np = opt->threads;
	if (np > EXPORT_MAX_THREADS) np = EXPORT_MAX_THREADS;
	pthread_t tid[EXPORT_MAX_THREADS];
	bool started[EXPORT_MAX_THREADS] = {false};
	atomic_size_t done;
	atomic_init(&done, 0);
	for (int t = 0; t < np; t++) {
		Part *p = &parts[t];
		p->ix = ix;
		p->opt = opt;
		p->reach = &reach;
		p->done = &done;
		p->total = n;
		p->reporter = t == 0;
		p->apery = apery;
		p->lo = n * (size_t)t / (size_t)np;
		p->hi = n * (size_t)(t + 1) / (size_t)np;
		p->rc = EXPORT_ENOMEM;
		if (!(p->spill_path = malloc(plen))) continue;
		snprintf(p->spill_path, plen, "%s.spill%d", out_path, t);
		if (t > 0 && pthread_create(&tid[t], NULL, run_part, p) == 0) started[t] = true;
	}
	if (parts[0].spill_path) run_part(&parts[0]);
	for (int t = 1; t < np; t++) {
		if (started[t])
			pthread_join(tid[t], NULL);
		else if (parts[t].spill_path)
			run_part(&parts[t]);
	}
	for (int t = 0; t < np; t++) {
		if (parts[t].rc < 0 && rc == 0)
			rc =
			    parts[t].rc == EXPORT_EIO
			        ? fail(err, errlen, EXPORT_EIO, "%s: cannot write there: %s",
			               out_path, strerror(parts[t].err_no))
			    : parts[t].rc == EXPORT_EBOOK
			        ? fail(err, errlen, EXPORT_EBOOK,
			               "%s; the book is damaged: joseki check lists what, --repair "
			               "copies what is sound",
			               parts[t].why)
			        : fail(err, errlen, EXPORT_ENOMEM, "out of memory");
		st.records += parts[t].st.records;
		st.positions += parts[t].st.positions;
		st.moves += parts[t].st.moves;
		st.minimaxed += parts[t].st.minimaxed;
		const ExportStats *q = &parts[t].st;
		if (q->positions == 0) continue;
		bool first = st.positions == q->positions;
		if (first || q->depth_lo < st.depth_lo) st.depth_lo = q->depth_lo;
		for (int c = 0; c < 2; c++) {
			if (first || q->value_lo[c] < st.value_lo[c])
				st.value_lo[c] = q->value_lo[c];
			st.yo_below[c] += q->yo_below[c];
		}
		if (q->ply_hi > st.ply_hi) st.ply_hi = q->ply_hi;
		st.yo_shallow += q->yo_shallow;
		st.from_games += q->from_games;
		st.yo_late += q->yo_late;
	}
	if (rc < 0) goto done;
	out = fopen(tmp_path, "wb");
	if (!out) {
		rc = fail(err, errlen, EXPORT_EIO, "%s: cannot write there: %s", out_path,
		          strerror(errno));
		goto done;
	}
	setvbuf(out, NULL, _IOFBF, 1 << 20);
	char header[DB2016_LINE_MAX];
	size_t hl = db2016_format_header(header, st.positions);
	bool bad = apery ? !write_merged_apery(out, parts, np, opt, &st)
	                 : fwrite(header, 1, hl, out) != hl ||
	                       !write_merged(out, parts, np, opt, st.positions);
	FILE *o = out;
	out = NULL;
	int werr = bad ? errno : 0;
	if (fclose(o) != 0 || bad) {
		rc = fail(err, errlen, EXPORT_EIO, "%s: write error: %s", out_path,
		          strerror(werr ? werr : errno));
		goto done;
	}
	if (rename(tmp_path, out_path) != 0) {
		rc = fail(err, errlen, EXPORT_EIO, "%s: cannot put the written book in place: %s",
		          out_path, strerror(errno));
		goto done;
	}
	rc = 0;
done:
	for (int t = 0; t < np; t++) {
		Part *p = &parts[t];
		if (p->map) munmap(p->map, p->map_len);
		if (p->spill) fclose(p->spill);
		if (p->spill_path) unlink(p->spill_path);
		free(p->spill_path);
		free(p->idx);
		free(p->ap);
	}
	if (out) fclose(out);
	if (rc < 0 && tmp_path) unlink(tmp_path);
	bookdb_index_free(ix);
	bookdb_txn_abort(txn);
	free(tmp_path);
	bookdb_walk_free(&reach);
	if (stats) *stats = st;
	return rc;
}

int export_yaneuraou(ExportStats *stats, BookDB *db, const char *out_path, const ExportOptions *opt,
                     char *err)
{
	return export_run(stats, db, out_path, opt, false, err);
}

int export_apery(ExportStats *stats, BookDB *db, const char *out_path, const ExportOptions *opt,
                 char *err)
{
	return export_run(stats, db, out_path, opt, true, err);
}
