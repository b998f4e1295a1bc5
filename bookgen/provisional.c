/* bookgen/provisional.c — leaves from the book's own values (provisional.h). */
#include "bookgen/provisional.h"

#include <stdlib.h>
#include <string.h>

#include "bookdb/query.h"
#include "bookdb/record.h"
#include "shogi/clock.h"
#include "shogi/keymap.h"
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
static int level_fill(Level *lv, const BookRecord *rec)
{
	if (!lv->mv && !(lv->mv = malloc(BOOKDB_MAX_MOVES * sizeof *lv->mv))) return SEL_ENOMEM;
	bool mm = rec->flags & BOOKDB_REC_MINIMAX;
	int n = 0;
	for (int i = 0; i < rec->nmoves; i++) {
		const BookMove *bm = &rec->moves[i];
		int v;
		bool cycle = false;
		if ((bm->flags & BOOKDB_MOVE_AVOIDED) || bookdb_move_declined(rec, bm)) continue;
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
	return 0;
}

/* seen: the positions the walk has met, thought (entered once: on the line
 * or walked already, by another order of the same moves) or not (handed
 * out, or taken): none is met twice, and the walk is as long as the part of
 * the book it covers, not as the number of its lines. */
struct ProvWalk {
	Walk w;
	Position p;
	KeyMap seen;
	char *sfen;
	int root, depth;
	bool begun, done;
	uint64_t spared; /* reads ask->held spared */
};

int prov_open(ProvWalk **out, const char *root_sfen, int root)
{
	*out = NULL;
	ProvWalk *pw = calloc(1, sizeof *pw);
	if (!pw || !(pw->sfen = strdup(root_sfen))) {
		free(pw);
		return SEL_ENOMEM;
	}
	if (sfen_parse(&pw->p, root_sfen, NULL, NULL) < 0) {
		prov_free(pw);
		return SEL_EINVAL;
	}
	pw->root = root;
	keymap_init_set(&pw->seen, false);
	*out = pw;
	return 0;
}

bool prov_done(const ProvWalk *pw)
{
	return pw->done;
}

uint64_t prov_spared(const ProvWalk *pw)
{
	return pw->spared;
}

void prov_free(ProvWalk *pw)
{
	if (!pw) return;
	for (int i = 0; i <= SEL_MAX_PLY; i++) free(pw->w.lv[i].mv);
	keymap_free(&pw->seen);
	free(pw->sfen);
	free(pw);
}

/* The root's moves (its record read), or done when it is not thought. */
static int walk_begin(ProvWalk *pw, BookTxn *txn)
{
	pw->begun = true;
	Key k = pos_key(&pw->p);
	int g = bookdb_get(&pw->w.rec, txn, k);
	if (g == BOOKDB_ENOTFOUND || (g == 0 && !(pw->w.rec.flags & BOOKDB_REC_THOUGHT))) {
		pw->done = true;
		return 0;
	}
	if (g < 0) return g == BOOKDB_ECORRUPT ? SEL_ECORRUPT : SEL_EBOOK;
	if (keymap_add(&pw->seen, k, NULL) < 0) return SEL_ENOMEM;
	return level_fill(&pw->w.lv[0], &pw->w.rec);
}

/* The keys of level lv's moves from p into keys, those held (when not
 * NULL) turns away left out; their count. */
static size_t level_keys(Key *keys, const Level *lv, const Position *p,
                         bool (*held)(void *ctx, Key key), void *ctx)
{
	size_t n = 0;
	for (int i = 0; i < lv->n; i++) {
		if (!pos_is_legal(p, lv->mv[i].move)) continue;
		keys[n] = pos_key_after(p, lv->mv[i].move);
		n += !held || held(ctx, keys[n]);
	}
	return n;
}

/* The keys of level lv's moves from p, to the caller's read-ahead. */
static void level_ahead(const ProvAsk *ask, const Level *lv, const Position *p)
{
	if (!ask->ahead || lv->n == 0) return;
	Key keys[BOOKDB_MAX_MOVES];
	size_t n = level_keys(keys, lv, p, ask->held, ask->ctx);
	if (n) ask->ahead(ask->ctx, keys, n);
}

size_t prov_record_children(Key *keys, const uint8_t *val, size_t len,
                            bool (*held)(void *ctx, Key key), void *ctx)
{
	if (!len || !(val[0] & BOOKDB_REC_THOUGHT)) return 0;
	BookRecord *rec = malloc(sizeof *rec);
	Position *p = malloc(sizeof *p);
	Level lv = {0};
	size_t n = 0;
	if (rec && p && bookdb_record_decode(rec, val, len) == 0 &&
	    bookdb_record_position(p, rec, NULL) == 0 && level_fill(&lv, rec) == 0)
		n = level_keys(keys, &lv, p, held, ctx);
	free(lv.mv);
	free(rec);
	free(p);
	return n;
}

int prov_ahead_depth(int depth, size_t n)
{
	int branch = depth >> 6, chain = depth & 63;
	if (n == 1 && chain > 0) return branch << 6 | (chain - 1);
	if (n > 1 && branch > 0) return (branch - 1) << 6 | PROV_AHEAD_CHAIN;
	return -1;
}

int prov_next(ProvWalk *pw, SelLeaf *leaves, Position *pos, int n, BookDB *db, const ProvAsk *ask)
{
	int max_reads = ask->max_reads > 0 ? ask->max_reads : PROV_READS_DEFAULT;
	if (pw->done) return 0;
	BookTxn *txn = NULL;
	if (bookdb_txn_begin(&txn, db, false) < 0) return SEL_EBOOK;
	Walk *w = &pw->w;
	Position *p = &pw->p;
	int rc = 0, found = 0, reads = 0;
	if (!pw->begun) {
		rc = walk_begin(pw, txn);
		reads++;
		if (rc == 0 && !pw->done) level_ahead(ask, &w->lv[0], p);
	}
	while (rc == 0 && !pw->done && found < n && reads < max_reads) {
		if (ask->until_ms > 0 && reads % 8 == 0 && clock_ms_f() >= ask->until_ms) break;
		int depth = pw->depth;
		Level *lv = &w->lv[depth];
		if (lv->next == lv->n) {
			if (depth == 0) {
				pw->done = true;
				break;
			}
			pos_undo_move(p);
			pw->depth--;
			continue;
		}
		PMove pm = lv->mv[lv->next++];
		if (!pos_is_legal(p, pm.move)) continue;
		pos_do_move(p, pm.move);
		Key k = pos_key(p);
		if (keymap_has(&pw->seen, k)) {
			pos_undo_move(p);
			continue;
		}
		const uint8_t *val = NULL;
		size_t len = 0;
		int g = BOOKDB_ENOTFOUND;
		if (!ask->held || ask->held(ask->ctx, k)) {
			g = bookdb_get_raw(&val, &len, txn, k);
			reads++;
		} else {
			pw->spared++;
		}
		if (g < 0 && g != BOOKDB_ENOTFOUND) {
			pos_undo_move(p);
			lv->next--; /* tried again at the next call */
			rc = SEL_EBOOK;
			break;
		}
		bool thought = g == 0 && len > 0 && (val[0] & BOOKDB_REC_THOUGHT);
		if (keymap_add(&pw->seen, k, NULL) < 0) {
			pos_undo_move(p);
			lv->next--;
			rc = SEL_ENOMEM;
			break;
		}
		if (!thought && ask->taken && ask->taken(ask->ctx, k)) {
			pos_undo_move(p);
			continue;
		}
		if (!thought) {
			SelLeaf *l = &leaves[found];
			l->root = pw->root;
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
			pos_undo_move(p);
			rc = SEL_ECORRUPT;
			break;
		}
		if ((rc = level_fill(&w->lv[depth + 1], &w->rec)) < 0) {
			pos_undo_move(p);
			break;
		}
		level_ahead(ask, &w->lv[depth + 1], p);
		pw->depth++;
	}
	bookdb_txn_abort(txn);
	return rc < 0 ? rc : found;
}
