/*
 * search/usi_info.h — parser for one USI `info` line, as docs/search.md ("USI
 * engine output") describes it:
 *
 *   info depth 11 seldepth 13 multipv 1 score cp 2 nodes 100135 nps 1472573
 *        hashfull 12 time 68 pv 1g1f 8c8d 8g8f
 *
 * `score cp N` or `score mate N` (N in plies, negative: the side to move is
 * mated; `mate +`/`mate -` without a number, and `mate -0`, are accepted),
 * optionally followed by `lowerbound`/`upperbound` (such a line is not
 * final); `string` swallows the rest of the line; `pv` is last and runs to the
 * end of the line. Unknown keywords are skipped one token at a time, so an
 * engine's extensions do not make its output unreadable.
 *
 * The parser reads exactly len bytes (no NUL needed), never allocates and
 * never crashes; it is what tests/fuzz/fuzz_usi_info.c exercises.
 */
#ifndef SEARCH_USI_INFO_H
#define SEARCH_USI_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shogi/types.h"
#include "shogi/errors.h"

/* Longest PV kept; further moves are dropped and pv_truncated is set. */
#define USI_INFO_PV_MAX 64
/* Error-message buffer length (NUL included). */
#define USI_INFO_ERRLEN 160

/* Bits of UsiInfo.fields: which keywords the line carried. */
enum {
	USI_INFO_DEPTH = 1u << 0,
	USI_INFO_SELDEPTH = 1u << 1,
	USI_INFO_TIME = 1u << 2,
	USI_INFO_NODES = 1u << 3,
	USI_INFO_NPS = 1u << 4,
	USI_INFO_HASHFULL = 1u << 5,
	USI_INFO_MULTIPV = 1u << 6,
	USI_INFO_SCORE = 1u << 7,
	USI_INFO_PV = 1u << 8,
	USI_INFO_STRING = 1u << 9,
	USI_INFO_CURRMOVE = 1u << 10,
};

typedef enum {
	USI_BOUND_EXACT = 0,
	USI_BOUND_LOWER = 1, /* "lowerbound": the true score is at least this */
	USI_BOUND_UPPER = 2, /* "upperbound": the true score is at most this */
} UsiBound;

typedef struct {
	unsigned fields; /* USI_INFO_* bits */
	int depth;
	int seldepth;
	int multipv; /* 1 when absent */
	int hashfull;
	uint64_t time_ms;
	uint64_t nodes;
	uint64_t nps;
	/* Score, when fields has USI_INFO_SCORE. */
	bool mate;
	bool mate_unknown; /* "mate +" / "mate -": distance not given */
	int mate_plies;    /* as printed; sign in mated for "-0" */
	bool mated;        /* the side to move is mated */
	int cp;            /* centipawns as printed, clamped to int */
	int value;         /* cp clamped, or search_mate_value() of the mate */
	UsiBound bound;
	Move currmove;
	/* Principal variation (syntax checked only; legality is the caller's). */
	int pv_len;
	bool pv_truncated;
	Move pv[USI_INFO_PV_MAX];
	/* "string" text: points into the parsed line, not NUL-terminated. */
	const char *string;
	size_t string_len;
} UsiInfo;

/*
 * Parses line[0..len) (a trailing "\r" or "\n" is ignored). Returns 0 with
 * *out filled, or SEARCH_EPROTOCOL with a message in err (USI_INFO_ERRLEN
 * bytes, may be NULL) naming the offending token and its byte offset:
 * the line does not start with "info", a known keyword lacks its number, a
 * number is out of range, a score is malformed, a bound comes before any
 * score, or the pv is empty or starts with a word that is neither a USI move
 * nor one of the words engines put there ("resign", "win", "rep_draw", ...).
 * The PV stops at the first later word that is not a move. On error *out is
 * undefined.
 */
JOSEKI_MUST_USE int usi_info_parse(UsiInfo *out, const char *line, size_t len, char *err);

/*
 * True when the line can stand as the result for its multipv index: it has
 * an exact score (no lowerbound/upperbound) and a PV of at least one move.
 */
bool usi_info_is_final(const UsiInfo *info);

#endif
