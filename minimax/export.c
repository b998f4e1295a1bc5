/*
 * minimax/export.c — YaneuraOu book export.
 *
 * Sorting 10 million records by their SFEN line must not hold the text in
 * memory: each record's text block ("sfen ..." line and move lines) is
 * appended to a spill file, and only a 16-byte index entry per record (offset,
 * SFEN line length, block length) is kept. The index is sorted comparing the
 * SFEN lines in the memory-mapped spill file (the page cache holds the text,
 * not the heap), then the blocks are copied in order to OUT.tmp, which is
 * renamed to OUT.
 */
#include "minimax/export.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "minimax/bookmm.h"
#include "minimax/graph.h"
#include "shogi/notation.h"

typedef struct {
	uint64_t off;
	uint32_t sfen_len; /* "sfen ..." without the newline */
	uint32_t len;      /* the whole block */
} Entry;

typedef struct {
	Move move, ponder;
	int value, depth;
} OutMove;

#define fail mm_fail

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
		MmVd x = {(int16_t)a->value, (uint16_t)a->depth}, y = {(int16_t)b->value, (uint16_t)b->depth};
		return mm_vd_better(x, y);
	}
	if (a->value != b->value) return a->value > b->value;
	return a->depth > b->depth;
}

/* The moves of rec to write, best first; returns how many. */
static size_t pick_moves(OutMove *out, const BookRecord *rec, const Position *pos, BookTxn *txn,
			 BookRecord *child, const ExportOptions *opt)
{
	bool minimax = rec->flags & BOOKDB_REC_MINIMAX;
	size_t n = 0;
	for (int k = 0; k < rec->nmoves; k++) {
		const BookMove *m = &rec->moves[k];
		if (m->move == MOVE_NONE) continue;
		OutMove o = {m->move, MOVE_NONE, 0, 0};
		bool shallow = (m->flags & BOOKDB_MOVE_EVAL) && m->depth < opt->min_depth;
		if (minimax) {
			if (m->value == BOOKMM_NOVALUE) continue;
			/* A value backed up through a child is not the engine's. */
			if (shallow && m->dist == 0) continue;
			o.value = m->value;
			o.depth = m->dist;
		} else {
			if (!(m->flags & BOOKDB_MOVE_EVAL) || shallow) continue;
			o.value = m->eval;
			o.depth = m->depth;
		}
		size_t p = n++;
		while (p > 0 && out_better(&o, &out[p - 1], minimax)) {
			out[p] = out[p - 1];
			p--;
		}
		out[p] = o;
	}
	if (n == 0) return 0;
	size_t keep = n;
	if (opt->moves != EXPORT_MOVES_ALL) {
		int floor = out[0].value - (opt->moves == EXPORT_MOVES_WINDOW ? opt->window : 0);
		keep = 1;
		while (keep < n && out[keep].value >= floor) keep++;
	}
	if (minimax)
		for (size_t k = 0; k < keep; k++) {
			if (out[k].depth == 0) continue;
			if (bookdb_get_moves(child, txn, pos_key_after(pos, out[k].move)) == 0 &&
			    (child->flags & BOOKDB_REC_MINIMAX))
				out[k].ponder = best_of(child);
		}
	return keep;
}

static int spill_record(FILE *f, Entry *e, uint64_t off, const BookRecord *rec,
			const Position *pos, const OutMove *mv, size_t n)
{
	char sfen[SFEN_MAX];
	size_t sl = sfen_write_ply(pos, rec->min_ply, sfen, sizeof sfen);
	bool minimax = rec->flags & BOOKDB_REC_MINIMAX;
	long start = ftell(f);
	if (fprintf(f, "sfen %.*s\n", (int)sl, sfen) < 0) return -1;
	for (size_t k = 0; k < n; k++) {
		char m[USI_MOVE_MAX], p[USI_MOVE_MAX];
		size_t ml = usi_move_write(mv[k].move, m);
		size_t pl = mv[k].ponder == MOVE_NONE ? 0 : usi_move_write(mv[k].ponder, p);
		int value = mv[k].value;
		/* As peta-shock writes it: same value as the best by another
		 * route is shown one lower, so an engine prefers the best line. */
		if (minimax && k > 0 && value == mv[0].value && mv[k].depth != mv[0].depth) value--;
		if (fprintf(f, "%.*s %.*s %d %d 1\n", (int)ml, m, pl ? (int)pl : 4,
			    pl ? p : "none", value, mv[k].depth) < 0)
			return -1;
	}
	long end = ftell(f);
	if (start < 0 || end < 0) return -1;
	e->off = off;
	e->sfen_len = (uint32_t)(5 + sl);
	e->len = (uint32_t)(end - start);
	return 0;
}

int export_yaneuraou(ExportStats *stats, BookDB *db, const char *out_path,
		     const ExportOptions *opt, char *err, size_t errlen)
{
	ExportStats st;
	memset(&st, 0, sizeof st);
	size_t plen = strlen(out_path) + 16;
	char *tmp_path = malloc(plen), *spill_path = malloc(plen);
	BookRecord *rec = malloc(sizeof *rec), *child = malloc(sizeof *child);
	Position *pos = malloc(sizeof *pos);
	OutMove *mv = malloc(BOOKDB_MAX_MOVES * sizeof *mv);
	Entry *idx = NULL;
	size_t idx_cap = 0;
	FILE *spill = NULL, *out = NULL;
	BookTxn *txn = NULL;
	BookIter *it = NULL;
	char *map = MAP_FAILED;
	size_t map_len = 0;
	int rc = 0;
	if (!tmp_path || !spill_path || !rec || !child || !pos || !mv) {
		rc = fail(err, errlen, EXPORT_ENOMEM, "out of memory");
		goto done;
	}
	snprintf(tmp_path, plen, "%s.tmp", out_path);
	snprintf(spill_path, plen, "%s.spill", out_path);
	spill = fopen(spill_path, "w+b");
	if (!spill) {
		rc = fail(err, errlen, EXPORT_EIO, "%s: cannot create", spill_path);
		goto done;
	}
	setvbuf(spill, NULL, _IOFBF, 1 << 20);
	if ((rc = bookdb_txn_begin(&txn, db, false)) == 0) rc = bookdb_iter_open(&it, txn);
	if (rc < 0) {
		rc = fail(err, errlen, EXPORT_EBOOK, "cannot read the book: %s", bookdb_strerror(rc));
		goto done;
	}
	Key key;
	const uint8_t *val;
	size_t len;
	uint64_t off = 0;
	while ((rc = bookdb_iter_next(it, &key, &val, &len)) == 1) {
		st.records++;
		if (bookdb_record_decode(rec, val, len) < 0) continue; /* joseki check reports it */
		if (opt->max_ply > 0 && rec->min_ply > opt->max_ply) continue;
		if (bookdb_record_position(pos, rec, NULL) < 0) continue;
		size_t n = pick_moves(mv, rec, pos, txn, child, opt);
		if (n == 0) continue;
		if (mm_grow((void **)&idx, &idx_cap, st.positions + 1, sizeof *idx) < 0) {
			rc = fail(err, errlen, EXPORT_ENOMEM, "out of memory");
			goto done;
		}
		if (spill_record(spill, &idx[st.positions], off, rec, pos, mv, n) < 0) {
			rc = fail(err, errlen, EXPORT_EIO, "%s: write error", spill_path);
			goto done;
		}
		off += idx[st.positions].len;
		st.positions++;
		st.moves += n;
		if (rec->flags & BOOKDB_REC_MINIMAX) st.minimaxed++;
	}
	if (rc < 0) {
		rc = fail(err, errlen, EXPORT_EBOOK, "reading the book: %s", bookdb_strerror(rc));
		goto done;
	}
	bookdb_iter_free(it);
	it = NULL;
	bookdb_txn_abort(txn);
	txn = NULL;
	if (fflush(spill) != 0) {
		rc = fail(err, errlen, EXPORT_EIO, "%s: write error", spill_path);
		goto done;
	}
	map_len = off;
	if (map_len) {
		map = mmap(NULL, map_len, PROT_READ, MAP_PRIVATE, fileno(spill), 0);
		if (map == MAP_FAILED) {
			rc = fail(err, errlen, EXPORT_ENOMEM, "%s: cannot map", spill_path);
			goto done;
		}
		qsort_r(idx, st.positions, sizeof *idx, cmp_entries, map);
	}
	out = fopen(tmp_path, "wb");
	if (!out) {
		rc = fail(err, errlen, EXPORT_EIO, "%s: cannot create", tmp_path);
		goto done;
	}
	setvbuf(out, NULL, _IOFBF, 1 << 20);
	bool bad = fprintf(out, "#YANEURAOU-DB2016 1.00\n# NOE:%zu\n", st.positions) < 0;
	for (size_t k = 0; k < st.positions && !bad; k++)
		bad = fwrite(map + idx[k].off, 1, idx[k].len, out) != idx[k].len;
	FILE *o = out;
	out = NULL;
	if (fclose(o) != 0 || bad) {
		rc = fail(err, errlen, EXPORT_EIO, "%s: write error", tmp_path);
		goto done;
	}
	if (rename(tmp_path, out_path) != 0) {
		rc = fail(err, errlen, EXPORT_EIO, "%s: cannot rename to %s", tmp_path, out_path);
		goto done;
	}
	rc = 0;
done:
	if (map != MAP_FAILED) munmap(map, map_len);
	if (spill) fclose(spill);
	if (spill_path) unlink(spill_path);
	if (out) fclose(out);
	if (rc < 0 && tmp_path) unlink(tmp_path);
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	free(tmp_path);
	free(spill_path);
	free(rec);
	free(child);
	free(pos);
	free(mv);
	free(idx);
	if (stats) *stats = st;
	return rc;
}
