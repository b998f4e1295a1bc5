/*
 * minimax/petashock_graph.c — peta-shock's graph passes (the steps are listed
 * in minimax/petashock.c, which drives them over parts of the file): a record
 * as a node in its Black-to-move form (pass 1), a node's transposition edges
 * in YaneuraOu's order and its listed leaves (pass 2), and a node written with
 * its backed-up values, best first (pass 3). Shared types:
 * minimax/petashock_priv.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minimax/petashock_priv.h"
#include "minimax/yo_order.h"
#include "shogi/grow.h"
#include "shogi/bigmem.h"
#include "shogi/keymap.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"

void ps_nodebuf_free(NodeBuf *b)
{
	bigmem_free(b->flags);
	bigmem_free(b->lstart);
	bigmem_free(b->keys);
	bigmem_free(b->leaves);
	memset(b, 0, sizeof *b);
}

void ps_graph_free(Graph *g)
{
	mm_graph_free(&g->m);
	bigmem_free(g->lstart);
	bigmem_free(g->leaves);
	bigmem_free(g->keys);
	keymap_free(&g->map);
}

/* ---- colour flip ---------------------------------------------------------- */

/* The position rotated 180°, colours, hands and side to move swapped. */
int ps_flip_position(Position *out, const Position *in)
{
	Piece board[SQ_NB];
	for (Square sq = 0; sq < SQ_NB; sq++) {
		Piece p = in->board[sq];
		board[SQ_NB - 1 - sq] = p == PIECE_NONE
		                            ? PIECE_NONE
		                            : piece_make(color_flip(piece_color(p)), piece_type(p));
	}
	Hand hand[COLOR_NB] = {in->hand[WHITE], in->hand[BLACK]};
	return pos_set(out, board, hand, color_flip(in->side), in->game_ply, NULL);
}

static Move flip_move(Move m)
{
	if (m == MOVE_NONE) return m;
	if (move_is_drop(m)) return move_make_drop(move_drop_type(m), SQ_NB - 1 - move_to(m));
	return move_make(SQ_NB - 1 - move_from(m), SQ_NB - 1 - move_to(m), move_is_promote(m));
}

/* ---- pass 1: records, keys, listed moves ----------------------------------- */

/*
 * The key of the position colour-flipped (zobrist.h's definition applied to
 * the flipped board, hands and side), without building the flipped position.
 */
static Key flipped_key(const Position *pos)
{
	Key board = {0, 0}, hand = {0, 0};
	for (Square sq = 0; sq < SQ_NB; sq++) {
		Piece p = pos->board[sq];
		if (p == PIECE_NONE) continue;
		Piece f = piece_make(color_flip(piece_color(p)), piece_type(p));
		board = key_xor(board, ZOB_PSQ[f][SQ_NB - 1 - sq]);
	}
	if (color_flip(pos->side) == WHITE) board = key_xor(board, ZOB_SIDE);
	for (int c = 0; c < COLOR_NB; c++)
		for (int pt = PAWN; pt <= GOLD; pt++) {
			uint64_t n = (uint64_t)hand_count(pos->hand[c], (PieceType)pt);
			Key z = ZOB_HAND[c ^ 1][pt];
			hand.lo += n * z.lo;
			hand.hi += n * z.hi;
		}
	return key_combine(board, hand);
}

int ps_add_node(NodeBuf *b, const Db2016Record *rec)
{
	if (b->n + 2 > b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 1024;
		MmFlags *f = bigmem_realloc(b->flags, nc * sizeof *f);
		if (!f) return PETASHOCK_ENOMEM;
		b->flags = f;
		uint32_t *ls = bigmem_realloc(b->lstart, (nc + 1) * sizeof *ls);
		if (!ls) return PETASHOCK_ENOMEM;
		b->lstart = ls;
		Key *k = bigmem_realloc(b->keys, nc * sizeof *k);
		if (!k) return PETASHOCK_ENOMEM;
		b->keys = k;
		b->cap = nc;
	}
	const Position *pos = rec->pos;
	bool white = pos->side == WHITE;
	size_t i = b->n++;
	/* The map is keyed by the White-to-move form, which is what a move from
	 * a (Black-to-move) node leads to. */
	b->keys[i] = white ? pos_key(pos) : flipped_key(pos);
	b->flags[i] = (MmFlags)((white ? F_WHITE : 0) | (pos_in_check(pos) ? F_CHECKED : 0));
	b->lstart[i] = (uint32_t)b->nleaves;
	if (bigmem_grow((void **)&b->leaves, &b->leaves_cap, b->nleaves + rec->nmoves,
	                sizeof *b->leaves, 1024))
		return PETASHOCK_ENOMEM;
	for (size_t k = 0; k < rec->nmoves; k++) {
		const Db2016Move *m = &rec->moves[k];
		if (m->move == MOVE_NONE) continue;
		int32_t v = value_clamp(m->value);
		PsLeaf l = {white ? flip_move(m->move) : m->move, (int16_t)v};
		b->leaves[b->nleaves++] = l;
	}
	b->lstart[i + 1] = (uint32_t)b->nleaves;
	return 0;
}

/* ---- pass 2: transposition edges ------------------------------------------------ */

/*
 * found[i] = keymap_find(m, keys, ks[i]) for i < n, in three sweeps that each
 * start the next one's memory reads first (filter words, then the home slots
 * of the keys that pass), so the cache misses of a node's lookups overlap.
 */
static void find_many(const KeyMap *m, const Key *keys, const Key *ks, int n, uint32_t *found)
{
	if (m->filter && m->cap) {
		for (int i = 0; i < n; i++)
			__builtin_prefetch(&m->filter[keyfilter_word(ks[i], m->filter_mask)]);
		for (int i = 0; i < n; i++)
			if (keyfilter_maybe(m->filter, m->filter_mask, ks[i]))
				__builtin_prefetch(&m->slot[keymap_home(m, ks[i].hi)]);
	}
	for (int i = 0; i < n; i++) found[i] = keymap_find(m, keys, ks[i]);
}

/* keymap_put of keys[0..n-1] in order (a later duplicate wins): the map sized
 * once, each home slot fetched a few keys ahead. */
int ps_put_all(KeyMap *m, const Key *keys, size_t n)
{
	enum { AHEAD = 8 };
	keymap_init(m, sizeof *keys);
	if (keymap_reserve(m, keys, n) < 0) return -1;
	for (size_t i = 0; i < n; i++) {
		if (i + AHEAD < n) __builtin_prefetch(&m->slot[keymap_home(m, keys[i + AHEAD].hi)]);
		if (keymap_put(m, keys, (uint32_t)i) < 0) return -1;
	}
	return 0;
}

/* cand[0..ne) (ne >= 2) in YaneuraOu's order: as its legal-move list has
 * them (ps_yo_place). */
static void order_edges(const Position *bpos, const Move *legal, int n, EdgeCand *cand, int ne,
                        uint64_t *seen)
{
	Move order[YO_LIST_MAX];
	int no = yo_legal_order(order, bpos, legal, n, seen);
	for (int k = 0; k < ne; k++) cand[k].rank = (uint32_t)ps_yo_place(order, no, cand[k].move);
	for (int k = 1; k < ne; k++) {
		EdgeCand c = cand[k];
		int p = k;
		while (p > 0 && cand[p - 1].rank > c.rank) {
			cand[p] = cand[p - 1];
			p--;
		}
		cand[p] = c;
	}
}

int ps_put_moves(const Graph *g, uint32_t i, const Position *bpos, const Move *legal, int n,
                 EdgeCand *cand, int ne, EdgeBuf *eb)
{
	if (ne >= 2 && bpos) order_edges(bpos, legal, n, cand, ne, eb->seen);
	const PsLeaf *lv = g->leaves ? g->leaves + g->lstart[i] : NULL; /* none: nl is 0 */
	size_t nl = g->lstart[i + 1] - g->lstart[i];
	if (bigmem_grow((void **)&eb->moves, &eb->cap, eb->n + (size_t)ne + nl, sizeof *eb->moves,
	                1024))
		return PETASHOCK_ENOMEM;
	PsMove *base = eb->moves + eb->n;
	size_t cnt = 0;
	for (int k = 0; k < ne; k++) {
		bool listed = false;
		for (size_t l = 0; l < nl; l++)
			if (lv[l].move == cand[k].move) listed = true;
		if (!listed) eb->converged++;
		PsMove pm = {cand[k].move, 0, cand[k].next};
		base[cnt++] = pm;
	}
	/* Listed moves that are not edges stay leaves; a move listed twice keeps
	 * its first line. */
	for (size_t l = 0; l < nl; l++) {
		bool dup = false;
		for (size_t k = 0; k < cnt && !dup; k++)
			if (base[k].move == lv[l].move) dup = true;
		if (dup) continue;
		PsMove pm = {lv[l].move, lv[l].value, PS_NONE};
		base[cnt++] = pm;
	}
	eb->n += cnt;
	g->m.mstart[i + 1] = (uint32_t)eb->n;
	return 0;
}

int petashock_mark_cmp(const void *a, const void *b)
{
	const PetashockMark *x = a, *y = b;
	int c = key_cmp(x->key, y->key);
	return c ? c : (x->move > y->move) - (x->move < y->move);
}

/* The kind of the book's mark on (key, m), 0 for none. */
static int mark_of(const PetashockOptions *o, Key key, Move m)
{
	if (!o->nmarks) return 0;
	const PetashockMark want = {key, (uint16_t)m, 0};
	const PetashockMark *hit =
	    bsearch(&want, o->marks, o->nmarks, sizeof *o->marks, petashock_mark_cmp);
	return hit ? hit->kind : 0;
}

bool ps_left_out(const Graph *g, const PetashockOptions *opt, uint32_t i, const Position *real,
                 const Position *bpos, const Move *legal, int n, Move m)
{
	if (!opt->book_rules) return false;
	/* A move the input lists was written on purpose. */
	for (uint32_t l = g->lstart[i]; l < g->lstart[i + 1]; l++)
		if (g->leaves[l].move == m) return false;
	bool white = real->side == WHITE;
	Key key = pos_key(real);
	int kind = mark_of(opt, key, white ? flip_move(m) : m);
	if (kind == PETASHOCK_AVOIDED) return true;
	if (kind == PETASHOCK_PREFERRED || move_is_drop(m) || move_is_promote(m)) return false;
	PieceType t = piece_type(bpos->board[move_from(m)]);
	if (t != PAWN && t != BISHOP && t != ROOK) return false;
	Move mp = move_make(move_from(m), move_to(m), true);
	bool promotes = false;
	for (int k = 0; k < n && !promotes; k++) promotes = legal[k] == mp;
	return promotes && mark_of(opt, key, white ? flip_move(mp) : mp) != PETASHOCK_AVOIDED;
}

int ps_add_edges(const Graph *g, const PetashockOptions *opt, uint32_t i, const Position *real,
                 const Position *bpos, EdgeBuf *eb)
{
	Move legal[MOVEGEN_MAX];
	EdgeCand cand[MOVEGEN_MAX];
	int n = movegen_legal(bpos, legal), ne = 0;
	Key child[MOVEGEN_MAX];
	uint32_t found[MOVEGEN_MAX];
	for (int k = 0; k < n; k++) child[k] = pos_key_after(bpos, legal[k]);
	find_many(&g->map, g->keys, child, n, found);
	for (int k = 0; k < n; k++) {
		if (found[k] == PS_NONE) continue;
		if (ps_left_out(g, opt, i, real, bpos, legal, n, legal[k]))
			eb->left_out++;
		else
			cand[ne++] = (EdgeCand){0, legal[k], found[k]};
	}
	return ps_put_moves(g, i, bpos, legal, n, cand, ne, eb);
}

/* ---- pass 3: output ----------------------------------------------------------------- */

int ps_write_node(FILE *f, const Graph *g, uint32_t i, const char *sfen, size_t sfen_len,
                  bool shrink, OutMove *buf)
{
	if (fwrite("sfen ", 1, 5, f) != 5 || fwrite(sfen, 1, sfen_len, f) != sfen_len ||
	    fputc('\n', f) == EOF)
		return PETASHOCK_EIO;
	size_t n = 0;
	for (uint32_t k = g->m.mstart[i]; k < g->m.mstart[i + 1]; k++) {
		const PsMove *m = &g->m.moves[k];
		OutMove o = {m->move, mm_move_vd(&g->m, m)};
		/* A move into a perpetual-check loop where the opponent is in check
		 * must not win a tie against an equal exit. */
		if (m->next != PS_NONE && (g->m.flags[m->next] & F_LOOP) &&
		    (g->m.flags[m->next] & F_CHECKED))
			o.vd.depth = PS_DEPTH_PCHECK;
		/* Insertion sort: stable, like the reference's sort on short lists. */
		size_t p = n++;
		while (p > 0 && mm_vd_better(o.vd, buf[p - 1].vd)) {
			buf[p] = buf[p - 1];
			p--;
		}
		buf[p] = o;
	}
	bool white = g->m.flags[i] & F_WHITE;
	char line[DB2016_LINE_MAX];
	for (size_t k = 0; k < n; k++) {
		Vd v = buf[k].vd;
		if (shrink && v.value != buf[0].vd.value) continue;
		/* Same value as the best by another route: shown one lower so that
		 * an engine reading the book prefers the best line. */
		int value = v.value;
		if (k > 0 && v.value == buf[0].vd.value && v.depth != buf[0].vd.depth) value--;
		Move m = white ? flip_move(buf[k].move) : buf[k].move;
		size_t len = db2016_format_move(line, m, MOVE_NONE, value, v.depth);
		if (fwrite(line, 1, len, f) != len) return PETASHOCK_EIO;
	}
	return 0;
}
