/* shogi/bitboard.c — square sets and the attack tables (filled once). */
#include "shogi/bitboard.h"

#include <string.h>
#ifdef __BMI2__
#include <immintrin.h>
#endif

Bitboard SQ_BB[SQ_NB];
Bitboard FILE_BB[FILE_NB];
Bitboard RANK_BB[RANK_NB];
Bitboard ZONE_BB[COLOR_NB];
Bitboard BB_ALL;
Bitboard BETWEEN_BB[SQ_NB][SQ_NB];
Bitboard LINE_BB[SQ_NB][SQ_NB];
Bitboard PAWN_ATK[COLOR_NB][SQ_NB];
Bitboard KNIGHT_ATK[COLOR_NB][SQ_NB];
Bitboard SILVER_ATK[COLOR_NB][SQ_NB];
Bitboard GOLD_ATK[COLOR_NB][SQ_NB];
Bitboard KING_ATK[SQ_NB];
Bitboard LANCE_STEP_RAY[COLOR_NB][SQ_NB];
Bitboard BISHOP_PSEUDO[SQ_NB];
Bitboard ROOK_PSEUDO[SQ_NB];

/*
 * Sliding attacks. File attacks (lance, rook vertically) use bit arithmetic on
 * the word holding the file. Rook attacks along the rank and bishop attacks are
 * looked up by the occupancy of the relevant squares, gathered with PEXT on
 * each word (a portable bit-gather stands in without BMI2).
 */
typedef struct {
	Bitboard mask;
	uint32_t offset;
	uint8_t shift0; /* number of mask bits in word 0 */
} SliderEntry;

static SliderEntry bishop_entry[SQ_NB], rank_entry[SQ_NB];
static Bitboard bishop_table[20480];
static Bitboard rank_table[SQ_NB * 128];
/* Per square: the word index and the in-word masks above/below within its file. */
static uint8_t file_word[SQ_NB];
static uint64_t file_up[SQ_NB];   /* toward rank a (lower bits) */
static uint64_t file_down[SQ_NB]; /* toward rank i (higher bits) */

static inline uint64_t pext64(uint64_t x, uint64_t m)
{
#ifdef __BMI2__
	return _pext_u64(x, m);
#else
	uint64_t r = 0;
	for (uint64_t bit = 1; m; bit <<= 1) {
		if (x & m & -m) r |= bit;
		m &= m - 1;
	}
	return r;
#endif
}

static inline uint32_t slider_index(const SliderEntry *e, Bitboard occ)
{
	return (uint32_t)(pext64(occ.p[0], e->mask.p[0]) |
	                  (pext64(occ.p[1], e->mask.p[1]) << e->shift0));
}

static inline uint64_t up_attacks(Square sq, uint64_t occ_word)
{
	uint64_t m = file_up[sq];
	uint64_t x = occ_word & m;
	if (!x) return m;
	int p = 63 - __builtin_clzll(x);
	return m & ~((1ULL << p) - 1);
}

static inline uint64_t down_attacks(Square sq, uint64_t occ_word)
{
	uint64_t m = file_down[sq];
	uint64_t x = occ_word & m;
	return (x ^ (x - 1)) & m;
}

static inline Bitboard word_bb(int w, uint64_t v)
{
	return w ? bb_make(0, v) : bb_make(v, 0);
}

Bitboard bb_lance_attacks(Color c, Square sq, Bitboard occ)
{
	int w = file_word[sq];
	return word_bb(w, c == BLACK ? up_attacks(sq, occ.p[w]) : down_attacks(sq, occ.p[w]));
}

Bitboard bb_rook_file_attacks(Square sq, Bitboard occ)
{
	int w = file_word[sq];
	return word_bb(w, up_attacks(sq, occ.p[w]) | down_attacks(sq, occ.p[w]));
}

Bitboard bb_bishop_attacks(Square sq, Bitboard occ)
{
	const SliderEntry *e = &bishop_entry[sq];
	return bishop_table[e->offset + slider_index(e, occ)];
}

Bitboard bb_rook_attacks(Square sq, Bitboard occ)
{
	const SliderEntry *e = &rank_entry[sq];
	return bb_or(rank_table[e->offset + slider_index(e, occ)], bb_rook_file_attacks(sq, occ));
}

Bitboard bb_piece_attacks(Piece p, Square sq, Bitboard occ)
{
	Color c = piece_color(p);
	switch (piece_type(p)) {
	case PAWN:
		return PAWN_ATK[c][sq];
	case LANCE:
		return bb_lance_attacks(c, sq, occ);
	case KNIGHT:
		return KNIGHT_ATK[c][sq];
	case SILVER:
		return SILVER_ATK[c][sq];
	case GOLD:
	case PRO_PAWN:
	case PRO_LANCE:
	case PRO_KNIGHT:
	case PRO_SILVER:
		return GOLD_ATK[c][sq];
	case BISHOP:
		return bb_bishop_attacks(sq, occ);
	case ROOK:
		return bb_rook_attacks(sq, occ);
	case KING:
		return KING_ATK[sq];
	case HORSE:
		return bb_horse_attacks(sq, occ);
	case DRAGON:
		return bb_dragon_attacks(sq, occ);
	default:
		return bb_make(0, 0);
	}
}

static bool on_board(int f, int r)
{
	return f >= 0 && f < 9 && r >= 0 && r < 9;
}

/* Ray walk used only to fill tables: attacks along the given directions. */
static Bitboard ray_attacks(Square sq, Bitboard occ, const int (*dirs)[2], int ndirs)
{
	Bitboard r = bb_make(0, 0);
	for (int d = 0; d < ndirs; d++) {
		int f = sq_file(sq) + dirs[d][0], k = sq_rank(sq) + dirs[d][1];
		while (on_board(f, k)) {
			Square s = sq_make(f, k);
			bb_set(&r, s);
			if (bb_test(occ, s)) break;
			f += dirs[d][0];
			k += dirs[d][1];
		}
	}
	return r;
}

static const int DIAG_DIRS[4][2] = {{1, 1}, {1, -1}, {-1, 1}, {-1, -1}};
static const int RANK_DIRS[2][2] = {{1, 0}, {-1, 0}};
static const int ORTHO_DIRS[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};

/* The squares of the rays whose occupancy matters (the last square of each ray is not). */
static Bitboard relevant_mask(Square sq, const int (*dirs)[2], int ndirs)
{
	Bitboard r = bb_make(0, 0);
	for (int d = 0; d < ndirs; d++) {
		int f = sq_file(sq) + dirs[d][0], k = sq_rank(sq) + dirs[d][1];
		while (on_board(f + dirs[d][0], k + dirs[d][1])) {
			bb_set(&r, sq_make(f, k));
			f += dirs[d][0];
			k += dirs[d][1];
		}
	}
	return r;
}

/* The occupancy subset number idx of mask (bits in p[0] order, then p[1]). */
static Bitboard subset(Bitboard mask, uint32_t idx)
{
	Bitboard r = bb_make(0, 0);
	int bit = 0;
	Square s;
	BB_FOREACH(s, mask)
	{
		if (idx & (1u << bit)) bb_set(&r, s);
		bit++;
	}
	return r;
}

static uint32_t fill_slider(SliderEntry *e, Bitboard *table, uint32_t offset, Square sq,
                            const int (*dirs)[2], int ndirs)
{
	e->mask = relevant_mask(sq, dirs, ndirs);
	e->offset = offset;
	e->shift0 = (uint8_t)__builtin_popcountll(e->mask.p[0]);
	uint32_t n = 1u << bb_count(e->mask);
	for (uint32_t i = 0; i < n; i++) {
		Bitboard occ = subset(e->mask, i);
		table[offset + slider_index(e, occ)] = ray_attacks(sq, occ, dirs, ndirs);
	}
	return offset + n;
}

static Bitboard step_bb(Square sq, const int (*d)[2], int n, Color c)
{
	Bitboard r = bb_make(0, 0);
	int sign = c == BLACK ? 1 : -1;
	for (int i = 0; i < n; i++) {
		int f = sq_file(sq) + d[i][0], k = sq_rank(sq) + sign * d[i][1];
		if (on_board(f, k)) bb_set(&r, sq_make(f, k));
	}
	return r;
}

void bb_init(void)
{
	static bool done;
	if (done) return;
	for (Square s = 0; s < SQ_NB; s++)
		SQ_BB[s] = s < 63 ? bb_make(1ULL << s, 0) : bb_make(0, 1ULL << (s - 63));
	BB_ALL = bb_make(0, 0);
	for (Square s = 0; s < SQ_NB; s++) {
		BB_ALL = bb_or(BB_ALL, SQ_BB[s]);
		bb_set(&FILE_BB[sq_file(s)], s);
		bb_set(&RANK_BB[sq_rank(s)], s);
		if (sq_in_zone(BLACK, s)) bb_set(&ZONE_BB[BLACK], s);
		if (sq_in_zone(WHITE, s)) bb_set(&ZONE_BB[WHITE], s);
	}
	/* Black's "forward" is toward rank a: rank delta -1. */
	static const int PAWN_D[1][2] = {{0, -1}};
	static const int KNIGHT_D[2][2] = {{1, -2}, {-1, -2}};
	static const int SILVER_D[5][2] = {{0, -1}, {1, -1}, {-1, -1}, {1, 1}, {-1, 1}};
	static const int GOLD_D[6][2] = {{0, -1}, {1, -1}, {-1, -1}, {1, 0}, {-1, 0}, {0, 1}};
	static const int KING_D[8][2] = {{0, -1}, {1, -1}, {-1, -1}, {1, 0},
	                                 {-1, 0}, {0, 1},  {1, 1},   {-1, 1}};
	for (Square s = 0; s < SQ_NB; s++) {
		for (int c = 0; c < 2; c++) {
			PAWN_ATK[c][s] = step_bb(s, PAWN_D, 1, (Color)c);
			KNIGHT_ATK[c][s] = step_bb(s, KNIGHT_D, 2, (Color)c);
			SILVER_ATK[c][s] = step_bb(s, SILVER_D, 5, (Color)c);
			GOLD_ATK[c][s] = step_bb(s, GOLD_D, 6, (Color)c);
		}
		KING_ATK[s] = step_bb(s, KING_D, 8, BLACK);
		int w = s >= 63, base = w ? 63 : 0, b = s - base, f0 = sq_file(s) * 9 - base;
		file_word[s] = (uint8_t)w;
		file_up[s] = ((1ULL << b) - 1) & ~((1ULL << f0) - 1);
		file_down[s] = ((1ULL << (f0 + 9)) - 1) & ~((2ULL << b) - 1);
		LANCE_STEP_RAY[BLACK][s] = word_bb(w, file_up[s]);
		LANCE_STEP_RAY[WHITE][s] = word_bb(w, file_down[s]);
	}
	uint32_t off = 0;
	for (Square s = 0; s < SQ_NB; s++)
		off = fill_slider(&bishop_entry[s], bishop_table, off, s, DIAG_DIRS, 4);
	off = 0;
	for (Square s = 0; s < SQ_NB; s++)
		off = fill_slider(&rank_entry[s], rank_table, off, s, RANK_DIRS, 2);
	Bitboard empty = bb_make(0, 0);
	for (Square s = 0; s < SQ_NB; s++) {
		BISHOP_PSEUDO[s] = ray_attacks(s, empty, DIAG_DIRS, 4);
		ROOK_PSEUDO[s] = ray_attacks(s, empty, ORTHO_DIRS, 4);
	}
	static const int ALL_DIRS[8][2] = {{1, 0}, {-1, 0}, {0, 1},  {0, -1},
	                                   {1, 1}, {1, -1}, {-1, 1}, {-1, -1}};
	for (Square a = 0; a < SQ_NB; a++) {
		for (int d = 0; d < 8; d++) {
			Bitboard between = bb_make(0, 0);
			int f = sq_file(a) + ALL_DIRS[d][0], k = sq_rank(a) + ALL_DIRS[d][1];
			while (on_board(f, k)) {
				Square b = sq_make(f, k);
				BETWEEN_BB[a][b] = between;
				bb_set(&between, b);
				f += ALL_DIRS[d][0];
				k += ALL_DIRS[d][1];
			}
			/* full line through a in direction d (both ways) */
			Bitboard line = SQ_BB[a];
			for (int sign = -1; sign <= 1; sign += 2) {
				f = sq_file(a) + sign * ALL_DIRS[d][0];
				k = sq_rank(a) + sign * ALL_DIRS[d][1];
				while (on_board(f, k)) {
					bb_set(&line, sq_make(f, k));
					f += sign * ALL_DIRS[d][0];
					k += sign * ALL_DIRS[d][1];
				}
			}
			f = sq_file(a) + ALL_DIRS[d][0];
			k = sq_rank(a) + ALL_DIRS[d][1];
			while (on_board(f, k)) {
				LINE_BB[a][sq_make(f, k)] = line;
				f += ALL_DIRS[d][0];
				k += ALL_DIRS[d][1];
			}
		}
	}
	done = true;
}
