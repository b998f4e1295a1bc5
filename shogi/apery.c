/* shogi/apery.c — Apery's book keys, moves and entries (see apery.h). */
#include "shogi/apery.h"

#include <pthread.h>

/* ---- std::mt19937_64 (Matsumoto & Nishimura's 64-bit Mersenne Twister) ---- */

#define MT_N 312
#define MT_M 156

typedef struct {
	uint64_t s[MT_N];
	int i;
} Mt64;

static void mt64_seed(Mt64 *m, uint64_t seed)
{
	m->s[0] = seed;
	for (int i = 1; i < MT_N; i++)
		m->s[i] =
		    6364136223846793005ULL * (m->s[i - 1] ^ (m->s[i - 1] >> 62)) + (uint64_t)i;
	m->i = MT_N;
}

static uint64_t mt64_next(Mt64 *m)
{
	static const uint64_t MATRIX = 0xB5026F5AA96619E9ULL, UPPER = 0xFFFFFFFF80000000ULL,
	                      LOWER = 0x7FFFFFFFULL;
	if (m->i >= MT_N) {
		for (int k = 0; k < MT_N; k++) {
			uint64_t x = (m->s[k] & UPPER) | (m->s[(k + 1) % MT_N] & LOWER);
			m->s[k] = m->s[(k + MT_M) % MT_N] ^ (x >> 1) ^ ((x & 1) ? MATRIX : 0);
		}
		m->i = 0;
	}
	uint64_t x = m->s[m->i++];
	x ^= (x >> 29) & 0x5555555555555555ULL;
	x ^= (x << 17) & 0x71D67FFFEDA60000ULL;
	x ^= (x << 37) & 0xFFF7EEE000000000ULL;
	x ^= x >> 43;
	return x;
}

uint64_t apery_mt64_nth(unsigned n)
{
	Mt64 m;
	mt64_seed(&m, 5489);
	uint64_t x = 0;
	for (unsigned i = 0; i < n; i++) x = mt64_next(&m);
	return x;
}

/* ---- the key's numbers ---------------------------------------------------- */

#define APERY_PIECES 31 /* Apery's piece codes 0 (empty) .. 30 (White's dragon) */
#define APERY_HAND_MAX 18

static uint64_t zob_piece[APERY_PIECES][SQ_NB];
static uint64_t zob_hand[7][APERY_HAND_MAX + 1];
static uint64_t zob_turn;
static pthread_once_t zob_once = PTHREAD_ONCE_INIT;

static void zob_init(void)
{
	Mt64 m;
	mt64_seed(&m, 5489);
	for (int p = 0; p < APERY_PIECES; p++)
		for (int sq = 0; sq < SQ_NB; sq++) zob_piece[p][sq] = mt64_next(&m);
	for (int hp = 0; hp < 7; hp++)
		for (int n = 0; n <= APERY_HAND_MAX; n++) zob_hand[hp][n] = mt64_next(&m);
	zob_turn = mt64_next(&m);
}

/* Apery's hand order: gold comes before bishop and rook. */
static const PieceType HAND_ORDER[7] = {PAWN, LANCE, KNIGHT, SILVER, GOLD, BISHOP, ROOK};

/* The hand and side part of the key for side c to move with hand h. */
static uint64_t hand_side_key(Hand h, Color c)
{
	uint64_t key = c == WHITE ? zob_turn : 0;
	for (int hp = 0; hp < 7; hp++) {
		int n = hand_count(h, HAND_ORDER[hp]);
		key ^= zob_hand[hp][n > APERY_HAND_MAX ? APERY_HAND_MAX : n];
	}
	return key;
}

uint64_t apery_key(const Position *pos)
{
	pthread_once(&zob_once, zob_init);
	uint64_t key = hand_side_key(pos->hand[pos->side], pos->side);
	for (int sq = 0; sq < SQ_NB; sq++)
		if (pos->board[sq] != PIECE_NONE) key ^= zob_piece[pos->board[sq]][sq];
	return key;
}

uint64_t apery_key_after(const Position *pos, uint64_t key, Move m)
{
	pthread_once(&zob_once, zob_init);
	Color us = pos->side, them = color_flip(us);
	/* The side to move changes, and with it the hand the key counts: the
	 * opponent's, which the move leaves alone. */
	key ^= hand_side_key(pos->hand[us], us) ^ hand_side_key(pos->hand[them], them);
	Square to = move_to(m);
	if (move_is_drop(m)) return key ^ zob_piece[piece_make(us, move_drop_type(m))][to];
	Square from = move_from(m);
	Piece p = pos->board[from], cap = pos->board[to];
	Piece after = move_is_promote(m) ? (Piece)(p + PROMOTE) : p;
	key ^= zob_piece[p][from] ^ zob_piece[after][to];
	if (cap != PIECE_NONE) key ^= zob_piece[cap][to];
	return key;
}

/* ---- moves and entries ---------------------------------------------------- */

uint16_t apery_move_encode(Move m)
{
	if (move_is_drop(m)) return (uint16_t)(move_to(m) | ((SQ_NB - 1 + move_drop_type(m)) << 7));
	return (uint16_t)(move_to(m) | (move_from(m) << 7) | (move_is_promote(m) ? 1u << 14 : 0));
}

Move apery_move_decode(uint16_t v)
{
	Square to = v & 0x7f, from = (v >> 7) & 0x7f;
	bool promote = (v >> 14) & 1;
	if (to >= SQ_NB || (v >> 15)) return MOVE_NONE;
	if (from >= SQ_NB) {
		int pt = from - (SQ_NB - 1);
		if (pt < PAWN || pt > GOLD || promote) return MOVE_NONE;
		return move_make_drop((PieceType)pt, to);
	}
	if (from == to) return MOVE_NONE;
	return move_make(from, to, promote);
}

void apery_entry_write(uint8_t out[APERY_ENTRY_SIZE], const AperyEntry *e)
{
	for (int i = 0; i < 8; i++) out[i] = (uint8_t)(e->key >> (8 * i));
	out[8] = (uint8_t)e->move;
	out[9] = (uint8_t)(e->move >> 8);
	out[10] = (uint8_t)e->count;
	out[11] = (uint8_t)(e->count >> 8);
	uint32_t s = (uint32_t)e->score;
	for (int i = 0; i < 4; i++) out[12 + i] = (uint8_t)(s >> (8 * i));
}

void apery_entry_read(AperyEntry *e, const uint8_t in[APERY_ENTRY_SIZE])
{
	e->key = 0;
	for (int i = 0; i < 8; i++) e->key |= (uint64_t)in[i] << (8 * i);
	e->move = (uint16_t)(in[8] | in[9] << 8);
	e->count = (uint16_t)(in[10] | in[11] << 8);
	uint32_t s = 0;
	for (int i = 0; i < 4; i++) s |= (uint32_t)in[12 + i] << (8 * i);
	e->score = (int32_t)s;
}
