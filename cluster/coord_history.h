/*
 * cluster/coord_history.h — the coordinator's time series (docs/cluster.md,
 * "Watching a run"): one point a step (a minute by default) with the results
 * and failed tries of the step, the book's positions and thought positions,
 * the root's value and line as the selector sees them, the workers and their
 * nodes/s, the queue, the live leases and the set-aside positions. Kept in
 * the book's `work` database, written by the coordinator in the same
 * transactions as its results, so it survives restarts; read by
 * GET /v1/work/history (server/history_api.c) in a read transaction of its
 * own, also by a plain `joseki serve`.
 *
 * Three tiers keep the size bounded and the past coarser:
 *   tier 0   one point a step          the last COORD_HIST_KEEP0 points (48 h of minutes)
 *   tier 1   one point 15 steps        the last COORD_HIST_KEEP1 points (30 days)
 *   tier 2   one point 360 steps       the last COORD_HIST_KEEP2 points (2 years)
 * A coarser point is made from the finer points of its span once the span is
 * over: results, failed tries and seconds covered are summed, the rest is as
 * at the span's end (workers: the most seen). At most some 8,700 points of
 * at most 170 bytes.
 *
 * Layout (work database):
 *   key   "H", u8 tier, u64 BE t          t: unix seconds at the end of the
 *                                          point's span (a multiple of it)
 *   value u8 version (1 or 2), u32 LE span_s (seconds of coordinator time
 *         the point covers: up to its step, less after a start), u64 LE
 *         results, failed, positions, thought, nps; i32 LE root value
 *         (INT32_MIN: none); u32 LE workers, queue, leases, aside; u8 pv
 *         length, pv (USI moves separated by spaces); version 2 only: u8 the
 *         number of roots (1..255, more said as 255), u8 root length (1..),
 *         the first root's SFEN, whose value and line the point gives
 *         (version 1, written before: the root was not recorded)
 */
#ifndef CLUSTER_COORD_HISTORY_H
#define CLUSTER_COORD_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "shogi/errors.h"

#define COORD_HIST_TIERS 3
#define COORD_HIST_FACTOR1 15  /* steps in a tier-1 point */
#define COORD_HIST_FACTOR2 360 /* steps in a tier-2 point */
#define COORD_HIST_KEEP0 2880  /* points kept a tier */
#define COORD_HIST_KEEP1 2880
#define COORD_HIST_KEEP2 2920
#define COORD_HIST_PV_MOVES 12  /* moves of the root's line kept */
#define COORD_HIST_PV_MAX 96    /* bytes of the line */
#define COORD_HIST_ROOT_MAX 159 /* bytes of the root's SFEN (SFEN_MAX less its NUL) */
#define COORD_HIST_KEY_LEN 10
#define COORD_HIST_V1_FIXED (1 + 4 + 5 * 8 + 4 + 4 * 4 + 1) /* all but the line */
#define COORD_HIST_VAL_MAX (COORD_HIST_V1_FIXED + COORD_HIST_PV_MAX + 2 + COORD_HIST_ROOT_MAX)
#define COORD_HIST_NO_ROOT INT32_MIN

typedef struct {
	int tier;                    /* 0 finest */
	int64_t t;                   /* unix seconds at the end of the span */
	uint32_t span_s;             /* seconds of coordinator time covered */
	uint64_t results, failed;    /* during the span */
	uint64_t positions, thought; /* the book's, at the end */
	int32_t root_value;          /* root side's view; COORD_HIST_NO_ROOT: none */
	uint32_t workers, queue, leases, aside;
	uint64_t nps;                   /* the workers' nodes/s together */
	char pv[COORD_HIST_PV_MAX + 1]; /* the root's line (USI moves) */
	/* The root the value and line are of: the first of nroots (SFEN; "" and
	 * 0: not recorded, a point of an older build). */
	char root[COORD_HIST_ROOT_MAX + 1];
	int nroots;
} CoordHistPoint;

/* The key of p (COORD_HIST_KEY_LEN bytes). */
void coord_hist_key(uint8_t out[COORD_HIST_KEY_LEN], int tier, int64_t t);
/* Encodes p's value into out (COORD_HIST_VAL_MAX bytes); returns its length. */
size_t coord_hist_encode(uint8_t *out, const CoordHistPoint *p);
/*
 * Decodes a work-database entry into p: 1 when it is a history point, 0 when
 * the key is not one ("H" prefix), -1 when it is but does not decode (wrong
 * lengths, version, tier, a line with other bytes than USI moves and
 * spaces, a root with other bytes than an SFEN's). Any bytes may be passed
 * (fuzzed: tests/fuzz/fuzz_coord_history.c). A point without a root encodes
 * as version 1, one with a root as version 2: a decoded point encodes back
 * to the same bytes.
 */
JOSEKI_MUST_USE int coord_hist_decode(CoordHistPoint *p, const uint8_t *key, size_t klen,
                                      const uint8_t *val, size_t vlen);

/* The span of a tier's points in seconds, for a step of step_s seconds. */
int64_t coord_hist_span(int tier, int step_s);

/*
 * The points in txn's work database, finest first where tiers overlap: every
 * tier-0 point, then the tier-1 points older than the oldest tier-0 point,
 * the tier-2 points older than the oldest of those; oldest first, those with
 * t >= since (unix seconds) only. *out is malloc'd (free it; NULL when none).
 * Points that do not decode are skipped and counted in *bad (may be NULL).
 * Returns the count or a negative BOOKDB_ code.
 */
JOSEKI_MUST_USE int coord_history_read(CoordHistPoint **out, BookTxn *txn, int64_t since,
                                       size_t *bad);

/*
 * Stores p (tier 0) in the write transaction txn and keeps the tiers: a
 * point already stored under the same key (a coordinator restarted within a
 * step) is merged into p first; then the coarser points of spans that are
 * over are made, and points past their tier's keep are deleted. step_s: the
 * step p was taken at. 0 or a negative BOOKDB_ code (the transaction must
 * then be aborted).
 */
JOSEKI_MUST_USE int coord_history_put(BookTxn *txn, CoordHistPoint *p, int step_s);

#endif
