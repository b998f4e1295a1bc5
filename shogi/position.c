/* shogi/position.c — set-up, do/undo, keys, attacks, repetition, declaration. */
#include "shogi/position.h"
#include "shogi/errmsg.h"

#include <stdio.h>
#include <string.h>

#include "shogi/movegen.h"

const uint8_t HAND_SHIFT[HAND_PT_NB] = {0,
                                        HAND_SHIFT_PAWN,
                                        HAND_SHIFT_LANCE,
                                        HAND_SHIFT_KNIGHT,
                                        HAND_SHIFT_SILVER,
                                        HAND_SHIFT_BISHOP,
                                        HAND_SHIFT_ROOK,
                                        HAND_SHIFT_GOLD};
const uint8_t HAND_MAX[HAND_PT_NB] = {0, 31, 7, 7, 7, 3, 3, 7};
const uint32_t HAND_MASK[HAND_PT_NB] = {0,
                                        0x1fu << HAND_SHIFT_PAWN,
                                        0x7u << HAND_SHIFT_LANCE,
                                        0x7u << HAND_SHIFT_KNIGHT,
                                        0x7u << HAND_SHIFT_SILVER,
                                        0x3u << HAND_SHIFT_BISHOP,
                                        0x3u << HAND_SHIFT_ROOK,
                                        0x7u << HAND_SHIFT_GOLD};

const char *shogi_strerror(int code)
{
	switch (code) {
	case SHOGI_OK:
		return "success";
	case SHOGI_EPARSE:
		return "malformed input";
	case SHOGI_EILLEGAL:
		return "illegal move or position";
	case SHOGI_ETOOLONG:
		return "game too long";
	case SHOGI_ENOMEM:
		return "out of memory";
	default:
		return "unknown error";
	}
}

void shogi_init(void)
{
	bb_init();
	zobrist_init();
}

static void set_err(char *err, const char *msg)
{
	errmsg_set(err, SHOGI_ERRLEN, 0, "%s", msg);
}

static inline Bitboard golds_of(const Position *pos, Color c)
{
	Bitboard g = bb_or(bb_or(pos->by_type[GOLD], pos->by_type[PRO_PAWN]),
	                   bb_or(bb_or(pos->by_type[PRO_LANCE], pos->by_type[PRO_KNIGHT]),
	                         pos->by_type[PRO_SILVER]));
	return bb_and(g, pos->by_color[c]);
}

Bitboard pos_attackers_to(const Position *pos, Color c, Square sq, Bitboard occ)
{
	Color them = color_flip(c);
	Bitboard own = pos->by_color[c];
	Bitboard r = bb_and(PAWN_ATK[them][sq], pos->by_type[PAWN]);
	r = bb_or(r, bb_and(KNIGHT_ATK[them][sq], pos->by_type[KNIGHT]));
	r = bb_or(r, bb_and(SILVER_ATK[them][sq], pos->by_type[SILVER]));
	r = bb_and(r, own);
	r = bb_or(r, bb_and(GOLD_ATK[them][sq], golds_of(pos, c)));
	Bitboard hdk = bb_or(bb_or(pos->by_type[HORSE], pos->by_type[DRAGON]), pos->by_type[KING]);
	r = bb_or(r, bb_and(bb_and(KING_ATK[sq], hdk), own));
	Bitboard bh = bb_and(bb_or(pos->by_type[BISHOP], pos->by_type[HORSE]), own);
	if (bb_any(bb_and(bh, BISHOP_PSEUDO[sq])))
		r = bb_or(r, bb_and(bb_bishop_attacks(sq, occ), bh));
	Bitboard rd = bb_and(bb_or(pos->by_type[ROOK], pos->by_type[DRAGON]), own);
	Bitboard lances = bb_and(pos->by_type[LANCE], own);
	if (bb_any(bb_and(bb_or(rd, lances), ROOK_PSEUDO[sq]))) {
		r = bb_or(r, bb_and(bb_rook_attacks(sq, occ), rd));
		r = bb_or(r, bb_and(bb_lance_attacks(them, sq, occ), lances));
	}
	return r;
}

static void put_piece(Position *pos, Piece p, Square sq)
{
	pos->board[sq] = p;
	bb_set(&pos->by_color[piece_color(p)], sq);
	bb_set(&pos->by_type[piece_type(p)], sq);
	bb_set(&pos->occupied, sq);
}

static void remove_piece(Position *pos, Square sq)
{
	Piece p = pos->board[sq];
	pos->board[sq] = PIECE_NONE;
	bb_clear(&pos->by_color[piece_color(p)], sq);
	bb_clear(&pos->by_type[piece_type(p)], sq);
	bb_clear(&pos->occupied, sq);
}

static Bitboard compute_checkers(const Position *pos)
{
	Square k = pos->king_sq[pos->side];
	if (k == SQ_NONE) return bb_make(0, 0);
	return pos_attackers_to(pos, color_flip(pos->side), k, pos->occupied);
}

/* Bit i of the byte: whether byte i of x is not zero (its high bit, set or
 * carried into), and whether its colour bit (0x10) is set; one multiply
 * gathers the eight. */
static inline uint64_t bytes_nonzero(uint64_t x)
{
	const uint64_t low7 = UINT64_C(0x7f7f7f7f7f7f7f7f);
	uint64_t hi = (x | ((x & low7) + low7)) & ~low7;
	return (hi >> 7) * UINT64_C(0x0102040810204080) >> 56;
}
static inline uint64_t bytes_white(uint64_t x)
{
	return ((x >> 4) & UINT64_C(0x0101010101010101)) * UINT64_C(0x0102040810204080) >> 56;
}

/* The occupied squares of a board and the white pieces' ones, as bitboards,
 * eight squares a load. (A square at a time, the compiler kept the words in
 * memory, each square waiting on the store before it: a quarter of
 * pos_set; and three bitboards set a piece at a time were as much again.)
 * The pieces' codes are checked after: a colour bit is 0x10. */
static void board_masks(const Piece board[SQ_NB], Bitboard *all, Bitboard *white)
{
	uint64_t o[2] = {0, 0}, w[2] = {0, 0};
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	_Static_assert(SQ_NB == 81, "ten words and one square");
	for (int i = 0; i < 10; i++) {
		uint64_t x;
		memcpy(&x, board + 8 * i, 8);
		o[i >> 3] |= bytes_nonzero(x) << (8 * (i & 7));
		w[i >> 3] |= bytes_white(x) << (8 * (i & 7));
	}
	o[1] |= (uint64_t)(board[80] != 0) << 16;
	w[1] |= (uint64_t)((board[80] >> 4) & 1) << 16;
#else
	for (int sq = 0; sq < SQ_NB; sq++) {
		o[sq >> 6] |= (uint64_t)(board[sq] != 0) << (sq & 63);
		w[sq >> 6] |= (uint64_t)((board[sq] >> 4) & 1) << (sq & 63);
	}
#endif
	/* Bitboards hold squares 0-62 in their first word, 63-80 in the second. */
	const uint64_t first = (UINT64_C(1) << 63) - 1;
	*all = bb_make(o[0] & first, o[0] >> 63 | o[1] << 1);
	*white = bb_make(w[0] & first, w[0] >> 63 | w[1] << 1);
}

int pos_set(Position *pos, const Piece board[SQ_NB], const Hand hand[COLOR_NB], Color side,
            int game_ply, char *err)
{
	char msg[SHOGI_ERRLEN];
	memset(pos, 0, offsetof(Position, states));
	pos->side = side;
	pos->game_ply = game_ply > 0 ? game_ply : 1;
	pos->king_sq[BLACK] = pos->king_sq[WHITE] = SQ_NONE;
	Key bk = {0, 0}, hk = {0, 0};
	int total[PT_NB] = {0};
	/* The occupied squares first, without a branch, then those alone: a
	 * branch on every square mispredicts on about half of them (the book's
	 * whole-book passes set up every position it holds). */
	Bitboard white;
	board_masks(board, &pos->occupied, &white);
	pos->by_color[WHITE] = white;
	pos->by_color[BLACK] = bb_andnot(pos->occupied, white);
	memcpy(pos->board, board, sizeof pos->board);
	for (Bitboard bits = pos->occupied; bb_any(bits);) {
		Square sq = bb_pop(&bits);
		Piece p = board[sq];
		PieceType pt = piece_type(p);
		Color c = piece_color(p);
		if (pt == PT_NONE || pt >= PT_NB || (p & 0xe0)) {
			set_err(err, "invalid piece code on the board");
			return SHOGI_EILLEGAL;
		}
		if (pt == KING) {
			if (pos->king_sq[c] != SQ_NONE) {
				set_err(err, c == BLACK ? "two black kings" : "two white kings");
				return SHOGI_EILLEGAL;
			}
			pos->king_sq[c] = sq;
		}
		bb_set(&pos->by_type[pt], sq);
		bk = key_xor(bk, ZOB_PSQ[p][sq]);
		total[pt_unpromote(pt)]++; /* kings too, in their own slot */
	}
	/* Pieces that can never move, on the bitboards at once (a test a piece,
	 * on its type, mispredicted often): the first such square named. */
	Bitboard stuck = bb_make(0, 0);
	for (int c = 0; c < COLOR_NB; c++) {
		Bitboard last = RANK_BB[c == BLACK ? 0 : 8];
		Bitboard last2 = bb_or(last, RANK_BB[c == BLACK ? 1 : 7]);
		Bitboard pl = bb_or(pos->by_type[PAWN], pos->by_type[LANCE]);
		stuck = bb_or(stuck,
		              bb_and(pos->by_color[c],
		                     bb_or(bb_and(pl, last), bb_and(pos->by_type[KNIGHT], last2))));
	}
	if (bb_any(stuck)) {
		Square sq = bb_lsb(stuck);
		PieceType pt = piece_type(board[sq]);
		snprintf(msg, sizeof msg, "%s on %d%c can never move",
		         pt == PAWN    ? "pawn"
		         : pt == LANCE ? "lance"
		                       : "knight",
		         sq_file(sq) + 1, 'a' + sq_rank(sq));
		set_err(err, msg);
		return SHOGI_EILLEGAL;
	}
	for (int c = 0; c < COLOR_NB; c++) {
		pos->hand[c] = hand[c];
		for (int pt = PAWN; pt <= GOLD; pt++) {
			/* n additions of the same value, mod 2^64 lane by lane. */
			uint64_t n = (uint64_t)hand_count(hand[c], (PieceType)pt);
			hk.lo += n * ZOB_HAND[c][pt].lo;
			hk.hi += n * ZOB_HAND[c][pt].hi;
		}
		if (hand[c] & ~(HAND_MASK[1] | HAND_MASK[2] | HAND_MASK[3] | HAND_MASK[4] |
		                HAND_MASK[5] | HAND_MASK[6] | HAND_MASK[7])) {
			set_err(err, "invalid hand");
			return SHOGI_EILLEGAL;
		}
	}
	for (int pt = PAWN; pt <= GOLD; pt++) {
		total[pt] +=
		    hand_count(hand[BLACK], (PieceType)pt) + hand_count(hand[WHITE], (PieceType)pt);
		if (total[pt] > HAND_MAX[pt]) {
			static const char *const NAMES[] = {"",        "pawns",   "lances",
			                                    "knights", "silvers", "bishops",
			                                    "rooks",   "golds"};
			snprintf(msg, sizeof msg, "too many %s (%d, at most %d)", NAMES[pt],
			         total[pt], HAND_MAX[pt]);
			set_err(err, msg);
			return SHOGI_EILLEGAL;
		}
	}
	for (int c = 0; c < COLOR_NB; c++)
		for (int f = 0; f < FILE_NB; f++)
			if (bb_more_than_one(bb_and(pos_pieces(pos, (Color)c, PAWN), FILE_BB[f]))) {
				snprintf(msg, sizeof msg, "two %s pawns on file %d (nifu)",
				         c == BLACK ? "black" : "white", f + 1);
				set_err(err, msg);
				return SHOGI_EILLEGAL;
			}
	if (side == WHITE) bk = key_xor(bk, ZOB_SIDE);
	pos->nstates = 1;
	PosState *st = &pos->states[0];
	memset(st, 0, sizeof *st);
	st->board_key = bk;
	st->hand_key = hk;
	st->checkers = compute_checkers(pos);
	return SHOGI_OK;
}

const uint8_t SET_COUNT[PT_NB] = {0, 18, 4, 4, 4, 2, 2, 4, 2};

int pos_check_game(const Position *pos, char *err)
{
	static const char *const COLOR_NAME[] = {"black", "white"};
	bool no_black = pos->king_sq[BLACK] == SQ_NONE, no_white = pos->king_sq[WHITE] == SQ_NONE;
	if (no_black || no_white)
		return errmsg_set(
		    err, SHOGI_ERRLEN, SHOGI_EILLEGAL,
		    "%s: both kings must be on the board (a book holds game positions)",
		    no_black && no_white ? "no kings"
		    : no_black           ? "no black king"
		                         : "no white king");
	int total[PT_NB] = {0};
	for (Square sq = 0; sq < SQ_NB; sq++)
		if (pos->board[sq]) total[pt_unpromote(piece_type(pos->board[sq]))]++;
	for (int pt = PAWN; pt <= KING; pt++) {
		if (pt != KING)
			total[pt] += hand_count(pos->hand[BLACK], (PieceType)pt) +
			             hand_count(pos->hand[WHITE], (PieceType)pt);
		if (total[pt] > SET_COUNT[pt]) {
			static const char *const NAMES[] = {"",        "pawns",   "lances",
			                                    "knights", "silvers", "bishops",
			                                    "rooks",   "golds",   "kings"};
			return errmsg_set(err, SHOGI_ERRLEN, SHOGI_EILLEGAL,
			                  "%d %s (board and hands, promoted counted): a set has %d",
			                  total[pt], NAMES[pt], SET_COUNT[pt]);
		}
	}
	Color them = color_flip(pos->side);
	if (pos_attacked(pos, pos->side, pos->king_sq[them]))
		return errmsg_set(err, SHOGI_ERRLEN, SHOGI_EILLEGAL,
		                  "the %s king is in check with %s to move (it could be captured)",
		                  COLOR_NAME[them], COLOR_NAME[pos->side]);
	return SHOGI_OK;
}

void pos_set_startpos(Position *pos)
{
	Piece board[SQ_NB] = {0};
	static const PieceType BACK[9] = {LANCE, KNIGHT, SILVER, GOLD, KING,
	                                  GOLD,  SILVER, KNIGHT, LANCE};
	for (int f = 0; f < 9; f++) {
		board[sq_make(f, 0)] = piece_make(WHITE, BACK[f]);
		board[sq_make(f, 2)] = piece_make(WHITE, PAWN);
		board[sq_make(f, 6)] = piece_make(BLACK, PAWN);
		board[sq_make(f, 8)] = piece_make(BLACK, BACK[f]);
	}
	board[sq_make(1, 1)] = piece_make(WHITE, BISHOP); /* 2b */
	board[sq_make(7, 1)] = piece_make(WHITE, ROOK);   /* 8b */
	board[sq_make(7, 7)] = piece_make(BLACK, BISHOP); /* 8h */
	board[sq_make(1, 7)] = piece_make(BLACK, ROOK);   /* 2h */
	Hand hand[2] = {0, 0};
	(void)pos_set(pos, board, hand, BLACK, 1, NULL); /* the start position is legal */
}

Piece pos_moved_piece(const Position *pos, Move m)
{
	if (move_is_drop(m)) return piece_make(pos->side, move_drop_type(m));
	return pos->board[move_from(m)];
}

void pos_do_move(Position *pos, Move m)
{
	const PosState *prev = &pos->states[pos->nstates - 1];
	PosState *st = &pos->states[pos->nstates++];
	Color us = pos->side, them = color_flip(us);
	Key bk = prev->board_key, hk = prev->hand_key;
	Square to = move_to(m);
	Piece captured = PIECE_NONE;
	if (move_is_drop(m)) {
		PieceType pt = move_drop_type(m);
		Piece p = piece_make(us, pt);
		pos->hand[us] = hand_sub(pos->hand[us], pt);
		hk = key_sub(hk, ZOB_HAND[us][pt]);
		put_piece(pos, p, to);
		bk = key_xor(bk, ZOB_PSQ[p][to]);
	} else {
		Square from = move_from(m);
		Piece p = pos->board[from];
		captured = pos->board[to];
		if (captured) {
			PieceType cpt = pt_unpromote(piece_type(captured));
			remove_piece(pos, to);
			bk = key_xor(bk, ZOB_PSQ[captured][to]);
			pos->hand[us] = hand_add(pos->hand[us], cpt);
			hk = key_add(hk, ZOB_HAND[us][cpt]);
		}
		remove_piece(pos, from);
		bk = key_xor(bk, ZOB_PSQ[p][from]);
		Piece np = move_is_promote(m) ? (Piece)(p + PROMOTE) : p;
		put_piece(pos, np, to);
		bk = key_xor(bk, ZOB_PSQ[np][to]);
		if (piece_type(p) == KING) pos->king_sq[us] = to;
	}
	pos->side = them;
	pos->game_ply++;
	st->board_key = key_xor(bk, ZOB_SIDE);
	st->hand_key = hk;
	st->move = m;
	st->captured = captured;
	st->pad = 0;
	st->checkers = compute_checkers(pos);
	st->cont_check[us] = (int16_t)(bb_any(st->checkers) ? prev->cont_check[us] + 1 : 0);
	st->cont_check[them] = prev->cont_check[them];
}

void pos_do_null_move(Position *pos)
{
	const PosState *prev = &pos->states[pos->nstates - 1];
	PosState *st = &pos->states[pos->nstates++];
	*st = *prev;
	st->board_key = key_xor(prev->board_key, ZOB_SIDE);
	st->move = MOVE_NULL;
	st->captured = PIECE_NONE;
	pos->side = color_flip(pos->side);
	pos->game_ply++;
	st->checkers = compute_checkers(pos);
}

void pos_undo_move(Position *pos)
{
	PosState *st = &pos->states[--pos->nstates];
	Move m = st->move;
	pos->side = color_flip(pos->side);
	pos->game_ply--;
	if (m == MOVE_NULL) return;
	Color us = pos->side;
	Square to = move_to(m);
	if (move_is_drop(m)) {
		remove_piece(pos, to);
		pos->hand[us] = hand_add(pos->hand[us], move_drop_type(m));
		return;
	}
	Square from = move_from(m);
	Piece np = pos->board[to];
	Piece p = move_is_promote(m) ? (Piece)(np - PROMOTE) : np;
	remove_piece(pos, to);
	put_piece(pos, p, from);
	if (piece_type(p) == KING) pos->king_sq[us] = from;
	if (st->captured) {
		put_piece(pos, st->captured, to);
		pos->hand[us] = hand_sub(pos->hand[us], pt_unpromote(piece_type(st->captured)));
	}
}

Key pos_key_after(const Position *pos, Move m)
{
	const PosState *st = pos_st(pos);
	Color us = pos->side;
	Key bk = key_xor(st->board_key, ZOB_SIDE), hk = st->hand_key;
	Square to = move_to(m);
	if (move_is_drop(m)) {
		PieceType pt = move_drop_type(m);
		hk = key_sub(hk, ZOB_HAND[us][pt]);
		bk = key_xor(bk, ZOB_PSQ[piece_make(us, pt)][to]);
	} else {
		Square from = move_from(m);
		Piece p = pos->board[from], cap = pos->board[to];
		if (cap) {
			bk = key_xor(bk, ZOB_PSQ[cap][to]);
			hk = key_add(hk, ZOB_HAND[us][pt_unpromote(piece_type(cap))]);
		}
		Piece np = move_is_promote(m) ? (Piece)(p + PROMOTE) : p;
		bk = key_xor(key_xor(bk, ZOB_PSQ[p][from]), ZOB_PSQ[np][to]);
	}
	return key_combine(bk, hk);
}

bool pos_gives_check(const Position *pos, Move m)
{
	Color us = pos->side, them = color_flip(us);
	Square ksq = pos->king_sq[them];
	if (ksq == SQ_NONE) return false;
	Square to = move_to(m);
	Piece np;
	Bitboard occ = pos->occupied;
	if (move_is_drop(m)) {
		np = piece_make(us, move_drop_type(m));
		bb_set(&occ, to);
	} else {
		Square from = move_from(m);
		np = pos->board[from];
		if (move_is_promote(m)) np = (Piece)(np + PROMOTE);
		bb_clear(&occ, from);
		bb_set(&occ, to);
	}
	if (bb_test(bb_piece_attacks(np, to, occ), ksq)) return true;
	if (move_is_drop(m)) return false;
	/* Discovered check: a slider of ours now sees the king. */
	Bitboard own = pos->by_color[us];
	bb_clear(&own, move_from(m));
	Bitboard bh = bb_and(bb_or(pos->by_type[BISHOP], pos->by_type[HORSE]), own);
	Bitboard rd = bb_and(bb_or(pos->by_type[ROOK], pos->by_type[DRAGON]), own);
	Bitboard l = bb_and(pos->by_type[LANCE], own);
	if (bb_any(bb_and(bb_bishop_attacks(ksq, occ), bh))) return true;
	if (bb_any(bb_and(bb_rook_attacks(ksq, occ), rd))) return true;
	if (bb_any(bb_and(bb_lance_attacks(them, ksq, occ), l))) return true;
	return false;
}

bool pos_is_legal(const Position *pos, Move m)
{
	/* The same answer as a search of movegen_legal's list, without
	 * generating it (tests/shogi/test_movegen.c holds the two together for
	 * every 16-bit value). */
	return movegen_is_legal(pos, m);
}

int pos_repetition_count(const Position *pos, int *first_ply_back)
{
	const PosState *cur = pos_st(pos);
	Key k = pos_key(pos);
	int n = 0;
	for (int i = pos->nstates - 3; i >= 0; i -= 2) {
		const PosState *s = &pos->states[i];
		if (s->move == MOVE_NULL ||
		    (i + 1 < pos->nstates && pos->states[i + 1].move == MOVE_NULL))
			break;
		if (key_equal(key_combine(s->board_key, s->hand_key), k)) {
			n++;
			if (first_ply_back) *first_ply_back = (int)(cur - s);
		}
	}
	return n;
}

RepResult pos_repetition(const Position *pos)
{
	int back = 0;
	if (pos_repetition_count(pos, &back) < 3) return REP_NONE;
	/* The span holds back moves, back / 2 by each side. */
	const PosState *st = pos_st(pos);
	Color last = color_flip(pos->side); /* the side that just moved */
	if (st->cont_check[last] * 2 >= back)
		return last == BLACK ? REP_BLACK_LOSES : REP_WHITE_LOSES;
	Color other = pos->side;
	if (st->cont_check[other] * 2 >= back)
		return other == BLACK ? REP_BLACK_LOSES : REP_WHITE_LOSES;
	return REP_DRAW;
}

int pos_declaration_points(const Position *pos, Color c, int *pieces_in_camp)
{
	Bitboard camp = bb_and(pos->by_color[c], ZONE_BB[c]);
	int points = 0, pieces = 0;
	Square sq;
	BB_FOREACH(sq, camp)
	{
		PieceType pt = pt_unpromote(piece_type(pos->board[sq]));
		if (pt == KING) continue;
		pieces++;
		points += (pt == BISHOP || pt == ROOK) ? 5 : 1;
	}
	for (int pt = PAWN; pt <= GOLD; pt++)
		points += hand_count(pos->hand[c], (PieceType)pt) *
		          ((pt == BISHOP || pt == ROOK) ? 5 : 1);
	if (pieces_in_camp) *pieces_in_camp = pieces;
	return points;
}

bool pos_declaration_ok(const Position *pos)
{
	Color us = pos->side;
	Square k = pos->king_sq[us];
	if (k == SQ_NONE || !sq_in_zone(us, k) || pos_in_check(pos)) return false;
	int pieces;
	int points = pos_declaration_points(pos, us, &pieces);
	return pieces >= 10 && points >= (us == BLACK ? 28 : 27);
}

bool pos_is_ok(const Position *pos)
{
	Bitboard occ = bb_make(0, 0);
	for (Square sq = 0; sq < SQ_NB; sq++) {
		Piece p = pos->board[sq];
		if (!p) {
			if (bb_test(pos->occupied, sq)) return false;
			continue;
		}
		if (!bb_test(pos->by_color[piece_color(p)], sq)) return false;
		if (!bb_test(pos->by_type[piece_type(p)], sq)) return false;
		if (piece_type(p) == KING && pos->king_sq[piece_color(p)] != sq) return false;
		bb_set(&occ, sq);
	}
	if (!bb_equal(occ, pos->occupied)) return false;
	if (!bb_equal(bb_or(pos->by_color[0], pos->by_color[1]), occ)) return false;
	Key bk = {0, 0}, hk = {0, 0};
	for (Square sq = 0; sq < SQ_NB; sq++)
		if (pos->board[sq]) bk = key_xor(bk, ZOB_PSQ[pos->board[sq]][sq]);
	if (pos->side == WHITE) bk = key_xor(bk, ZOB_SIDE);
	for (int c = 0; c < 2; c++)
		for (int pt = PAWN; pt <= GOLD; pt++)
			for (int i = 0; i < hand_count(pos->hand[c], (PieceType)pt); i++)
				hk = key_add(hk, ZOB_HAND[c][pt]);
	return key_equal(bk, pos_st(pos)->board_key) && key_equal(hk, pos_st(pos)->hand_key);
}
