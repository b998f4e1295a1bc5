/* shogi/zobrist.c — the fixed key tables (part of the on-disk format). */
#include "shogi/zobrist.h"

#include "shogi/rng.h"

#include <endian.h>
#include <stdio.h>
#include <string.h>

Key ZOB_PSQ[PIECE_NB][SQ_NB];
Key ZOB_HAND[COLOR_NB][HAND_PT_NB];
Key ZOB_SIDE;

void zobrist_init(void)
{
	static bool done;
	if (done) return;
	uint64_t s = 0x4a4f53454b490001ULL; /* "JOSEKI", version 1 */
	ZOB_SIDE.lo = rng_next(&s);
	ZOB_SIDE.hi = rng_next(&s);
	for (int c = 0; c < COLOR_NB; c++)
		for (int pt = PAWN; pt < PT_NB; pt++)
			for (int sq = 0; sq < SQ_NB; sq++) {
				Key *k = &ZOB_PSQ[piece_make((Color)c, (PieceType)pt)][sq];
				k->lo = rng_next(&s);
				k->hi = rng_next(&s);
			}
	for (int c = 0; c < COLOR_NB; c++)
		for (int pt = PAWN; pt <= GOLD; pt++) {
			ZOB_HAND[c][pt].lo = rng_next(&s);
			ZOB_HAND[c][pt].hi = rng_next(&s);
		}
	done = true;
}

void key_to_hex(Key k, char out[KEY_HEX_LEN])
{
	snprintf(out, KEY_HEX_LEN, "%016llx%016llx", (unsigned long long)k.hi,
	         (unsigned long long)k.lo);
}

int key_from_hex(Key *out, const char *hex)
{
	uint64_t v[2] = {0, 0};
	for (int i = 0; i < 32; i++) {
		char ch = hex[i];
		int d;
		if (ch >= '0' && ch <= '9')
			d = ch - '0';
		else if (ch >= 'a' && ch <= 'f')
			d = ch - 'a' + 10;
		else if (ch >= 'A' && ch <= 'F')
			d = ch - 'A' + 10;
		else
			return -1;
		v[i / 16] = (v[i / 16] << 4) | (uint64_t)d;
	}
	if (hex[32] != 0) return -1;
	out->hi = v[0];
	out->lo = v[1];
	return 0;
}

/* Two byte-swapped words, not a byte loop: every cursor step over the book
 * converts one key. */
void key_to_bytes(Key k, uint8_t out[16])
{
	uint64_t hi = htobe64(k.hi), lo = htobe64(k.lo);
	memcpy(out, &hi, 8);
	memcpy(out + 8, &lo, 8);
}

Key key_from_bytes(const uint8_t in[16])
{
	uint64_t hi, lo;
	memcpy(&hi, in, 8);
	memcpy(&lo, in + 8, 8);
	Key k = {be64toh(lo), be64toh(hi)};
	return k;
}
