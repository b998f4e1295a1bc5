/* bookgen/provisional.c — leaves from the book's own values (provisional.h). */
#include "bookgen/provisional.h"

#include <stdlib.h>
#include <string.h>

#include "bookdb/record.h"
#include "shogi/notation.h"

#define PROV_READS_DEFAULT 4096

typedef struct {
	Move move;
	int value;  /* the mover's view */
	bool cycle; /* the value is a repetition's: no leaf at the end of its line */
	int index;  /* in the record: ties keep its order */
} PMove;

/* A minimax dist that says the value comes from a repetition (docs/minimax.md:
 * 9997 a move into one, 9999 a line that repeats forever). */
#define PROV_CYCLE_DIST 9997

/* One thought position of the line: its moves best first, the next to try. */
typedef struct {
	PMove *mv;
	int n, next;
	Key key;
} Level;

typedef struct {
	Level lv[SEL_MAX_PLY + 1];
	BookRecord rec;
} Walk;

static int by_value(const void *a, const void *b)
{
	const PMove *x = a, *y = b;
	if (x->cycle != y->cycle) return x->cycle ? 1 : -1;
	if (x->value != y->value) return x->value > y->value ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

/* rec's moves worth walking into lv, best first (ties in the record's order),
 * those valued by a repetition last: the selector, which bans a line that
 * repeats, finds its leaf in another. */
static int level_fill(Level *lv, const BookRecord *rec, Key key)
{
	if (!lv->mv && !(lv->mv = malloc(BOOKDB_MAX_MOVES * sizeof *lv->mv))) return SEL_ENOMEM;
	bool mm = rec->flags & BOOKDB_REC_MINIMAX;
	int n = 0;
	for (int i = 0; i < rec->nmoves; i++) {
		const BookMove *bm = &rec->moves[i];
		int v;
		bool cycle = false;
		if (bm->flags & BOOKDB_MOVE_AVOIDED) continue;
		if (mm && bm->value != BOOKDB_NOVALUE) {
			v = bm->value;
			cycle = bm->dist >= PROV_CYCLE_DIST;
		} else if (bookdb_move_analysed(bm)) {
			v = bm->eval;
		} else {
			continue;
		}
		lv->mv[n++] = (PMove){bm->move, v, cycle, i};
	}
	qsort(lv->mv, (size_t)n, sizeof *lv->mv, by_value);
	lv->n = n;
	lv->next = 0;
	lv->key = key;
	return 0;
}

static bool on_line(const Walk *w, int depth, Key k)
{
	for (int i = 0; i <= depth; i++)
		if (key_equal(w->lv[i].key, k)) return true;
	return false;
}

static bool found_already(const SelLeaf *leaves, int found, Key k)
{
	for (int i = 0; i < found; i++)
		if (key_equal(leaves[i].key, k)) return true;
	return false;
}

int prov_leaves(SelLeaf *leaves, Position *pos, int n, BookDB *db, const char *root_sfen, int root,
                ProvTakenFn taken, void *ctx, int max_reads)
{
	if (max_reads <= 0) max_reads = PROV_READS_DEFAULT;
	Position *p = malloc(sizeof *p);
	Walk *w = calloc(1, sizeof *w);
	BookTxn *txn = NULL;
	int rc = p && w ? 0 : SEL_ENOMEM, found = 0, depth = 0, reads = 0;
	if (rc == 0 && sfen_parse(p, root_sfen, NULL, NULL) < 0) rc = SEL_EINVAL;
	if (rc == 0 && bookdb_txn_begin(&txn, db, false) < 0) rc = SEL_EBOOK;
	if (rc == 0) {
		int g = bookdb_get(&w->rec, txn, pos_key(p));
		reads++;
		if (g == BOOKDB_ENOTFOUND || (g == 0 && !(w->rec.flags & BOOKDB_REC_THOUGHT)))
			goto done;
		rc = g == BOOKDB_ECORRUPT ? SEL_ECORRUPT
		     : g < 0              ? SEL_EBOOK
		                          : level_fill(&w->lv[0], &w->rec, pos_key(p));
	}
	while (rc == 0 && found < n && reads < max_reads) {
		Level *lv = &w->lv[depth];
		if (lv->next == lv->n) {
			if (depth == 0) break;
			pos_undo_move(p);
			depth--;
			continue;
		}
		PMove pm = lv->mv[lv->next++];
		if (!pos_is_legal(p, pm.move)) continue;
		pos_do_move(p, pm.move);
		Key k = pos_key(p);
		if (on_line(w, depth, k) || found_already(leaves, found, k) || taken(ctx, k)) {
			pos_undo_move(p);
			continue;
		}
		const uint8_t *val;
		size_t len;
		int g = bookdb_get_raw(&val, &len, txn, k);
		reads++;
		if (g < 0 && g != BOOKDB_ENOTFOUND) {
			rc = SEL_EBOOK;
			break;
		}
		bool thought = g == 0 && len > 0 && (val[0] & BOOKDB_REC_THOUGHT);
		if (!thought) {
			SelLeaf *l = &leaves[found];
			l->root = root;
			l->key = k;
			l->value = depth % 2 == 0 ? pm.value : -pm.value;
			l->nmoves = depth + 1;
			for (int i = 0; i < depth; i++)
				l->moves[i] = w->lv[i].mv[w->lv[i].next - 1].move;
			l->moves[depth] = pm.move;
			pos[found++] = *p;
			pos_undo_move(p);
			continue;
		}
		if (depth + 1 >= SEL_MAX_PLY) {
			pos_undo_move(p);
			continue;
		}
		if (bookdb_record_decode(&w->rec, val, len) < 0) {
			rc = SEL_ECORRUPT;
			break;
		}
		if ((rc = level_fill(&w->lv[depth + 1], &w->rec, k)) < 0) break;
		depth++;
	}
done:
	if (txn) bookdb_txn_abort(txn);
	if (w)
		for (int i = 0; i <= SEL_MAX_PLY; i++) free(w->lv[i].mv);
	free(w);
	free(p);
	return rc < 0 ? rc : found;
}
