/* shogi/apery.c — Apery's book keys, moves and entries (see apery.h). */
#include "shogi/apery.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/grow.h"
#include "shogi/keymap.h"
#include "shogi/movegen.h"

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

/* ---- the walk of a book --------------------------------------------------- */

typedef struct {
	AperyEntry e;
	uint32_t at; /* its index in the file */
} Entry;

static int cmp_entry(const void *a, const void *b)
{
	const Entry *x = a, *y = b;
	if (x->e.key != y->e.key) return x->e.key < y->e.key ? -1 : 1;
	return (x->at > y->at) - (x->at < y->at);
}

/*
 * The book's keys, hashed: the index of each key's first sorted entry (open
 * addressing, at most half full; a slot holds index + 1, 0 when empty). Sized
 * by the keys, not the entries, so that the walk's probes stay in cache.
 */
typedef struct {
	uint64_t *key;
	uint32_t *at;
	size_t mask;
} KeyIndex;

static int key_index_build(KeyIndex *x, const Entry *ent, size_t n)
{
	size_t keys = 0, cap = 16;
	for (size_t i = 0; i < n; i++) keys += !i || ent[i].e.key != ent[i - 1].e.key;
	while (cap < 2 * keys) cap *= 2;
	x->key = malloc(cap * sizeof *x->key);
	x->at = calloc(cap, sizeof *x->at);
	x->mask = cap - 1;
	if (!x->key || !x->at) return -1;
	for (size_t i = 0; i < n; i++) {
		if (i && ent[i].e.key == ent[i - 1].e.key) continue;
		size_t h = (ent[i].e.key * 0x9E3779B97F4A7C15ULL) >> 20 & x->mask;
		while (x->at[h]) h = (h + 1) & x->mask;
		x->key[h] = ent[i].e.key;
		x->at[h] = (uint32_t)i + 1;
	}
	return 0;
}

/* The first sorted entry with key k, or n when there is none. */
static size_t entries_of(const KeyIndex *x, size_t n, uint64_t k)
{
	for (size_t h = (k * 0x9E3779B97F4A7C15ULL) >> 20 & x->mask; x->at[h];
	     h = (h + 1) & x->mask)
		if (x->key[h] == k) return x->at[h] - 1;
	return n;
}

/* A position waiting in the walk: what pos_set needs. */
typedef struct {
	Piece board[SQ_NB];
	Hand hand[COLOR_NB];
	uint8_t side;
	uint16_t ply;
} Pending;

int apery_walk(const AperyEntry *entries, size_t n, apery_pos_fn fn, apery_bad_fn bad, void *ctx,
               AperyWalkStats *st)
{
	AperyWalkStats s = {0};
	if (n > UINT32_MAX - 1) return SHOGI_ENOMEM;
	Entry *ent = malloc((n ? n : 1) * sizeof *ent);
	uint8_t *used = calloc(n ? n : 1, 1);
	Position *pos = malloc(sizeof *pos);
	AperyMove *mv = malloc(MOVEGEN_MAX * sizeof *mv);
	Move *legal = malloc(MOVEGEN_MAX * sizeof *legal);
	Pending *queue = NULL;
	size_t qcap = 0, qhead = 0, qtail = 0;
	KeyMap seen;
	keymap_init_set(&seen, false);
	KeyIndex kx = {0};
	int ret = 0;
	if (!ent || !used || !pos || !mv || !legal) {
		ret = SHOGI_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) ent[i] = (Entry){entries[i], (uint32_t)i};
	qsort(ent, n, sizeof *ent, cmp_entry);
	if (key_index_build(&kx, ent, n) < 0) {
		ret = SHOGI_ENOMEM;
		goto out;
	}
	pos_set_startpos(pos);
	if (keymap_add(&seen, pos_key(pos), NULL) < 0) ret = SHOGI_ENOMEM;
	for (bool first = true; !ret; first = false) {
		if (!first) {
			if (qhead == qtail) break;
			Pending *p = &queue[qhead++];
			if (pos_set(pos, p->board, p->hand, (Color)p->side, p->ply, NULL) != 0)
				continue;
		}
		uint64_t akey = apery_key(pos);
		size_t lo = entries_of(&kx, n, akey), nm = 0;
		for (size_t i = lo; i < n && ent[i].e.key == akey; i++) {
			used[i] = 1;
			Move m = apery_move_decode(ent[i].e.move);
			bool dup = false;
			for (size_t k = 0; k < nm; k++) dup |= mv[k].move == m;
			if (m == MOVE_NONE || !pos_is_legal(pos, m)) {
				s.illegal++;
				if (bad) bad(ctx, pos, &ent[i].e, ent[i].at);
			} else if (!dup && nm < MOVEGEN_MAX) {
				mv[nm++] = (AperyMove){m, ent[i].e.score, ent[i].e.count};
			}
		}
		if (nm) {
			s.positions++;
			if ((ret = fn(ctx, pos, mv, nm))) break;
		}
		/* A position the book does not hold leads on only into ones it holds. */
		bool held = lo < n;
		if (pos->game_ply >= 65535) continue;
		int nl = movegen_legal(pos, legal);
		for (int j = 0; j < nl && !ret; j++) {
			bool book_move = false;
			for (size_t k = 0; k < nm; k++) book_move |= mv[k].move == legal[j];
			bool child_held =
			    entries_of(&kx, n, apery_key_after(pos, akey, legal[j])) < n;
			if (!child_held && !(held && book_move)) continue;
			int added = keymap_add(&seen, pos_key_after(pos, legal[j]), NULL);
			if (added < 0 ||
			    array_grow((void **)&queue, &qcap, qtail + 1, sizeof *queue, 1024)) {
				ret = SHOGI_ENOMEM;
				break;
			}
			if (!added) continue;
			pos_do_move(pos, legal[j]);
			Pending *p = &queue[qtail++];
			memcpy(p->board, pos->board, sizeof p->board);
			p->hand[BLACK] = pos->hand[BLACK];
			p->hand[WHITE] = pos->hand[WHITE];
			p->side = (uint8_t)pos->side;
			p->ply = (uint16_t)pos->game_ply;
			pos_undo_move(pos);
		}
	}
	for (size_t i = 0; i < n; i++) s.unreached += !used[i];
out:
	keymap_free(&seen);
	free(kx.key);
	free(kx.at);
	free(queue);
	free(legal);
	free(mv);
	free(pos);
	free(used);
	free(ent);
	if (st) *st = s;
	return ret;
}
