/* shogi/movegen.c — fully legal move generation and perft. */
#include "shogi/movegen.h"

#include "shogi/errmsg.h"

typedef struct {
	const Position *pos;
	Color us, them;
	Square ksq;      /* our king, SQ_NONE if none */
	Bitboard pinned; /* our pieces pinned to our king */
	Bitboard occ;
	Move *out;
	int n;
} Gen;

Bitboard movegen_blockers(const Position *pos, Square ksq, Color sliders, Color blockers,
                          Bitboard occ)
{
	Bitboard r = bb_make(0, 0);
	if (ksq == SQ_NONE) return r;
	Bitboard snipers =
	    bb_or(bb_and(bb_or(pos->by_type[ROOK], pos->by_type[DRAGON]), ROOK_PSEUDO[ksq]),
	          bb_and(bb_or(pos->by_type[BISHOP], pos->by_type[HORSE]), BISHOP_PSEUDO[ksq]));
	snipers =
	    bb_or(snipers, bb_and(pos->by_type[LANCE], LANCE_STEP_RAY[color_flip(sliders)][ksq]));
	snipers = bb_and(snipers, pos->by_color[sliders]);
	Square s;
	BB_FOREACH(s, snipers)
	{
		Bitboard b = bb_and(BETWEEN_BB[ksq][s], occ);
		if (bb_any(b) && !bb_more_than_one(b) && bb_any(bb_and(b, pos->by_color[blockers])))
			r = bb_or(r, b);
	}
	return r;
}

/* Our pieces that stand alone between an enemy slider and our king. */
static inline Bitboard pinned_pieces(const Position *pos, Color us, Square ksq, Bitboard occ)
{
	return movegen_blockers(pos, ksq, color_flip(us), us, occ);
}

/* With out == NULL the generator only counts (perft's bulk counting). */
static inline void add(Gen *g, Move m)
{
	if (g->out) g->out[g->n] = m;
	g->n++;
}

/* Squares where a piece of type pt of colour c could never move again. */
static inline Bitboard dead_squares(Color c, PieceType pt)
{
	if (pt == PAWN || pt == LANCE) return RANK_BB[c == BLACK ? 0 : 8];
	if (pt == KNIGHT) return bb_or(RANK_BB[c == BLACK ? 0 : 8], RANK_BB[c == BLACK ? 1 : 7]);
	return bb_make(0, 0);
}

/* Adds the board moves of the piece on from to each target, with the promotion
 * choices the rules give. */
static void add_piece_moves(Gen *g, Square from, PieceType pt, Bitboard targets)
{
	Color us = g->us;
	if (bb_test(g->pinned, from)) targets = bb_and(targets, LINE_BB[g->ksq][from]);
	Square to;
	bool from_zone = pt_can_promote(pt) && sq_in_zone(us, from);
	if (!g->out) {
		if (!pt_can_promote(pt)) {
			g->n += bb_count(targets);
			return;
		}
		Bitboard promo = from_zone ? targets : bb_and(targets, ZONE_BB[us]);
		g->n += bb_count(promo) + bb_count(bb_andnot(targets, dead_squares(us, pt)));
		return;
	}
	if (!pt_can_promote(pt)) {
		BB_FOREACH(to, targets) add(g, move_make(from, to, false));
		return;
	}
	BB_FOREACH(to, targets)
	{
		if (from_zone || sq_in_zone(us, to)) {
			add(g, move_make(from, to, true));
			int rr = rank_rel(us, sq_rank(to));
			if (((pt == PAWN || pt == LANCE) && rr == 0) || (pt == KNIGHT && rr < 2))
				continue; /* could never move again: promotion is forced */
		}
		add(g, move_make(from, to, false));
	}
}

static void gen_board_moves(Gen *g, Bitboard targets)
{
	const Position *pos = g->pos;
	Bitboard pieces = bb_andnot(pos->by_color[g->us], pos->by_type[KING]);
	Square from;
	BB_FOREACH(from, pieces)
	{
		Piece p = pos->board[from];
		Bitboard atk = bb_and(bb_piece_attacks(p, from, g->occ), targets);
		if (bb_any(atk)) add_piece_moves(g, from, piece_type(p), atk);
	}
}

static void gen_king_moves(Gen *g, Bitboard targets)
{
	if (g->ksq == SQ_NONE) return;
	const Position *pos = g->pos;
	Bitboard occ = g->occ;
	bb_clear(&occ, g->ksq); /* the king does not shield squares behind it */
	Square to;
	BB_FOREACH(to, bb_and(KING_ATK[g->ksq], targets))
	{
		if (!bb_any(pos_attackers_to(pos, g->them, to, occ)))
			add(g, move_make(g->ksq, to, false));
	}
}

/* True when dropping our pawn on to (in front of their king) mates: uchifuzume. */
static bool pawn_drop_mates(const Gen *g, Square to)
{
	const Position *pos = g->pos;
	Color us = g->us, them = g->them;
	Square tk = pos->king_sq[them];
	Bitboard occ = g->occ;
	bb_set(&occ, to);
	/* A defender other than the king may take the pawn, unless pinned. */
	Bitboard defenders = bb_andnot(pos_attackers_to(pos, them, to, occ), pos->by_type[KING]);
	if (bb_any(defenders)) {
		Bitboard their_pinned = pinned_pieces(pos, them, tk, occ);
		if (bb_any(bb_andnot(defenders, their_pinned))) return false;
	}
	/* The king escapes to any square we do not attack (the pawn included). */
	Bitboard kocc = occ;
	bb_clear(&kocc, tk);
	Square s;
	BB_FOREACH(s, bb_andnot(KING_ATK[tk], pos->by_color[them]))
	{
		if (s == to) {
			if (!bb_any(pos_attackers_to(pos, us, to, kocc))) return false;
			continue;
		}
		if (!bb_any(pos_attackers_to(pos, us, s, kocc))) return false;
	}
	return true;
}

static void gen_drops(Gen *g, Bitboard targets)
{
	const Position *pos = g->pos;
	Color us = g->us;
	Hand h = pos->hand[us];
	if (!h) return;
	/* Ranks where a dropped piece could never move: rank_rel 0, and 1 for knights. */
	Bitboard far1 = RANK_BB[us == BLACK ? 0 : 8];
	Bitboard far2 = bb_or(far1, RANK_BB[us == BLACK ? 1 : 7]);
	Square to;
	if (hand_has(h, PAWN)) {
		Bitboard t = bb_andnot(targets, far1);
		Bitboard pawns = pos_pieces(pos, us, PAWN);
		for (int f = 0; f < FILE_NB; f++)
			if (bb_any(bb_and(pawns, FILE_BB[f]))) t = bb_andnot(t, FILE_BB[f]);
		Square tk = pos->king_sq[g->them];
		Square front = SQ_NONE;
		if (tk != SQ_NONE) {
			Bitboard fr = PAWN_ATK[g->them][tk];
			if (bb_any(fr)) front = bb_lsb(fr);
		}
		if (!g->out) {
			g->n += bb_count(t);
			if (front != SQ_NONE && bb_test(t, front) && pawn_drop_mates(g, front))
				g->n--;
		} else {
			BB_FOREACH(to, t)
			{
				if (to == front && pawn_drop_mates(g, to)) continue;
				add(g, move_make_drop(PAWN, to));
			}
		}
	}
	PieceType others[6];
	int no = 0;
	if (hand_has(h, SILVER)) others[no++] = SILVER;
	if (hand_has(h, GOLD)) others[no++] = GOLD;
	if (hand_has(h, BISHOP)) others[no++] = BISHOP;
	if (hand_has(h, ROOK)) others[no++] = ROOK;
	bool lance = hand_has(h, LANCE), knight = hand_has(h, KNIGHT);
	if (!g->out) {
		if (lance) g->n += bb_count(bb_andnot(targets, far1));
		if (knight) g->n += bb_count(bb_andnot(targets, far2));
		g->n += no * bb_count(targets);
		return;
	}
	if (lance || knight) {
		BB_FOREACH(to, bb_andnot(targets, far1))
		{
			if (lance) add(g, move_make_drop(LANCE, to));
			if (knight && !bb_test(far2, to)) add(g, move_make_drop(KNIGHT, to));
		}
	}
	if (no) {
		BB_FOREACH(to, targets)
		{
			for (int i = 0; i < no; i++) add(g, move_make_drop(others[i], to));
		}
	}
}

int movegen(const Position *pos, GenType type, Move *out)
{
	Gen g;
	g.pos = pos;
	g.us = pos->side;
	g.them = color_flip(g.us);
	g.ksq = pos->king_sq[g.us];
	g.occ = pos->occupied;
	g.out = out;
	g.n = 0;
	g.pinned = pinned_pieces(pos, g.us, g.ksq, pos->occupied);
	Bitboard empty = bb_not(pos->occupied);
	Bitboard enemy = pos->by_color[g.them];
	Bitboard board_targets = type == GEN_CAPTURES ? enemy
	                         : type == GEN_QUIETS ? empty
	                                              : bb_or(empty, enemy);
	/* A king is never captured: in a set-up position where the side not to
	 * move stands in check, taking it is not offered. */
	board_targets = bb_andnot(board_targets, pos_pieces(pos, g.them, KING));
	Bitboard drop_targets = type == GEN_CAPTURES ? bb_make(0, 0) : empty;
	Bitboard checkers = pos_st(pos)->checkers;
	if (bb_any(checkers)) {
		gen_king_moves(&g, board_targets);
		if (bb_more_than_one(checkers)) return g.n;
		Square c = bb_lsb(checkers);
		Bitboard between = BETWEEN_BB[g.ksq][c];
		Bitboard block = bb_or(between, checkers);
		/* Pinned pieces can never resolve a check. */
		Bitboard pinned = g.pinned;
		g.pinned = bb_make(0, 0);
		Bitboard pieces =
		    bb_andnot(bb_andnot(pos->by_color[g.us], pos->by_type[KING]), pinned);
		Bitboard t = bb_and(board_targets, block);
		Square from;
		BB_FOREACH(from, pieces)
		{
			Piece p = pos->board[from];
			Bitboard atk = bb_and(bb_piece_attacks(p, from, g.occ), t);
			if (bb_any(atk)) add_piece_moves(&g, from, piece_type(p), atk);
		}
		gen_drops(&g, bb_and(drop_targets, between));
		return g.n;
	}
	gen_board_moves(&g, board_targets);
	gen_king_moves(&g, board_targets);
	gen_drops(&g, drop_targets);
	return g.n;
}

bool movegen_is_legal(const Position *pos, Move m)
{
	if (m == MOVE_NONE || m == MOVE_NULL) return false;
	Square to = move_to(m);
	if (to >= SQ_NB) return false;
	Color us = pos->side, them = color_flip(us);
	Square ksq = pos->king_sq[us];
	Bitboard checkers = pos_st(pos)->checkers;
	if (bb_any(checkers) && bb_more_than_one(checkers) &&
	    (move_is_drop(m) || move_from(m) != ksq))
		return false;
	if (move_is_drop(m)) {
		PieceType pt = move_drop_type(m);
		if (pt < PAWN || pt > GOLD || move_is_promote(m)) return false;
		if (!hand_has(pos->hand[us], pt) || pos->board[to] != PIECE_NONE) return false;
		if (bb_test(dead_squares(us, pt), to)) return false;
		if (bb_any(checkers) && !bb_test(BETWEEN_BB[ksq][bb_lsb(checkers)], to))
			return false;
		if (pt != PAWN) return true;
		if (bb_any(bb_and(pos_pieces(pos, us, PAWN), FILE_BB[sq_file(to)]))) return false;
		Square tk = pos->king_sq[them];
		if (tk == SQ_NONE || !bb_test(PAWN_ATK[them][tk], to)) return true;
		Gen g = {.pos = pos, .us = us, .them = them, .ksq = ksq, .occ = pos->occupied};
		return !pawn_drop_mates(&g, to);
	}
	Square from = move_from(m);
	if (from >= SQ_NB) return false;
	Piece p = pos->board[from];
	if (p == PIECE_NONE || piece_color(p) != us) return false;
	Piece cap = pos->board[to];
	if (cap != PIECE_NONE && (piece_color(cap) == us || piece_type(cap) == KING)) return false;
	if (!bb_test(bb_piece_attacks(p, from, pos->occupied), to)) return false;
	PieceType pt = piece_type(p);
	if (move_is_promote(m)) {
		if (!pt_can_promote(pt) || !(sq_in_zone(us, from) || sq_in_zone(us, to)))
			return false;
	} else if (bb_test(dead_squares(us, pt), to)) {
		return false;
	}
	if (pt == KING) {
		Bitboard occ = pos->occupied;
		bb_clear(&occ, from);
		return !bb_any(pos_attackers_to(pos, them, to, occ));
	}
	if (ksq == SQ_NONE) return true;
	if (bb_any(checkers)) {
		Square c = bb_lsb(checkers);
		if (!bb_test(bb_or(BETWEEN_BB[ksq][c], checkers), to)) return false;
		return !bb_test(pinned_pieces(pos, us, ksq, pos->occupied), from);
	}
	/* Only a piece on a line with its king can be pinned. */
	if (!bb_any(LINE_BB[ksq][from]) || bb_test(LINE_BB[ksq][from], to)) return true;
	return !bb_test(pinned_pieces(pos, us, ksq, pos->occupied), from);
}

int movegen_count(const Position *pos)
{
	return movegen(pos, GEN_ALL, NULL);
}

uint64_t perft(Position *pos, int depth)
{
	if (depth <= 1) return depth == 1 ? (uint64_t)movegen_count(pos) : 1;
	Move buf[MOVEGEN_MAX];
	int n = movegen(pos, GEN_ALL, buf);
	uint64_t total = 0;
	for (int i = 0; i < n; i++) {
		pos_do_move(pos, buf[i]);
		total += perft(pos, depth - 1);
		pos_undo_move(pos);
	}
	return total;
}

const char *const PIECE_ENGLISH[PT_NB] = {"",
                                          "pawn",
                                          "lance",
                                          "knight",
                                          "silver",
                                          "bishop",
                                          "rook",
                                          "gold",
                                          "king",
                                          "promoted pawn",
                                          "promoted lance",
                                          "promoted knight",
                                          "promoted silver",
                                          "horse",
                                          "dragon"};

static const char *color_name(Color c)
{
	return c == BLACK ? "Black" : "White";
}

/* A square as USI writes it ("7g") into out. */
static const char *sq_name(Square sq, char out[3])
{
	out[0] = (char)('1' + sq_file(sq));
	out[1] = (char)('a' + sq_rank(sq));
	out[2] = 0;
	return out;
}

#define WHY(...) errmsg_set(err, SHOGI_ERRLEN, SHOGI_EILLEGAL, __VA_ARGS__)

/* Why drop m breaks the rules (movegen_is_legal's order, a reason each). */
static int why_drop(const Position *pos, Move m, char *err)
{
	Color us = pos->side;
	PieceType pt = move_drop_type(m);
	Square to = move_to(m);
	char t[3];
	sq_name(to, t);
	if (pt < PAWN || pt > GOLD || move_is_promote(m)) return WHY("no such drop");
	if (!hand_has(pos->hand[us], pt))
		return WHY("%s has no %s in hand", color_name(us), PIECE_ENGLISH[pt]);
	Piece on = pos->board[to];
	if (on != PIECE_NONE)
		return WHY("%s is not empty: %s's %s is there", t, color_name(piece_color(on)),
		           PIECE_ENGLISH[piece_type(on)]);
	if (bb_test(dead_squares(us, pt), to))
		return WHY("a %s dropped on %s could never move", PIECE_ENGLISH[pt], t);
	if (pt == PAWN && bb_any(bb_and(pos_pieces(pos, us, PAWN), FILE_BB[sq_file(to)])))
		return WHY("%s has an unpromoted pawn on file %d already (two pawns, nifu)",
		           color_name(us), sq_file(to) + 1);
	if (bb_any(pos_st(pos)->checkers))
		return WHY("%s's king is in check, and the drop does not stop it", color_name(us));
	return WHY("a pawn dropped to give mate (uchifuzume)");
}

/* Why board move m breaks the rules. */
static int why_board(const Position *pos, Move m, char *err)
{
	Color us = pos->side, them = color_flip(us);
	Square from = move_from(m), to = move_to(m), ksq = pos->king_sq[us];
	if (from >= SQ_NB) return WHY("no such move");
	char f[3], t[3];
	sq_name(from, f);
	sq_name(to, t);
	Piece p = pos->board[from];
	if (p == PIECE_NONE) return WHY("there is no piece on %s", f);
	PieceType pt = piece_type(p);
	if (piece_color(p) != us)
		return WHY("the %s on %s is %s's, and %s is to move", PIECE_ENGLISH[pt], f,
		           color_name(them), color_name(us));
	if (!bb_test(bb_piece_attacks(p, from, pos->occupied), to))
		return bb_test(bb_piece_attacks(p, from, bb_make(0, 0)), to)
		           ? WHY("the %s on %s cannot move to %s: the way is blocked",
		                 PIECE_ENGLISH[pt], f, t)
		           : WHY("the %s on %s cannot move to %s", PIECE_ENGLISH[pt], f, t);
	Piece cap = pos->board[to];
	if (cap != PIECE_NONE && piece_color(cap) == us)
		return WHY("the %s on %s cannot take %s's own %s on %s", PIECE_ENGLISH[pt], f,
		           color_name(us), PIECE_ENGLISH[piece_type(cap)], t);
	if (cap != PIECE_NONE && piece_type(cap) == KING)
		return WHY("a king is never taken (%s's king on %s)", color_name(them), t);
	if (move_is_promote(m) && !pt_can_promote(pt))
		return WHY("a %s cannot promote", PIECE_ENGLISH[pt]);
	if (move_is_promote(m) && !(sq_in_zone(us, from) || sq_in_zone(us, to)))
		return WHY("the %s on %s cannot promote: neither %s nor %s is in %s's promotion "
		           "zone",
		           PIECE_ENGLISH[pt], f, f, t, color_name(us));
	if (!move_is_promote(m) && bb_test(dead_squares(us, pt), to))
		return WHY("the %s must promote on %s (it could never move again)",
		           PIECE_ENGLISH[pt], t);
	if (pt == KING) return WHY("the king would be in check on %s", t);
	if (ksq != SQ_NONE && bb_more_than_one(pos_st(pos)->checkers))
		return WHY("%s's king is in double check: only the king can move", color_name(us));
	return WHY("it leaves %s's king in check", color_name(us));
}

int movegen_why_illegal(const Position *pos, Move m, char *err)
{
	if (movegen_is_legal(pos, m)) return SHOGI_OK;
	if (movegen_count(pos) == 0)
		return WHY("the game is over: %s, to move, %s", color_name(pos->side),
		           pos_in_check(pos) ? "is checkmated" : "has no legal move");
	if (m == MOVE_NONE || m == MOVE_NULL || move_to(m) >= SQ_NB) return WHY("no such move");
	return move_is_drop(m) ? why_drop(pos, m, err) : why_board(pos, m, err);
}
