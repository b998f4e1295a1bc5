/*
 * cluster/coord_spot.h — spot checks of workers (docs/cluster.md, "Spot
 * checks"): how two results for one position are compared, and whom a third
 * one finds at fault. Pure functions, for the coordinator (coord_spot.c,
 * which samples results, leases their checks and puts tokens in quarantine)
 * and its tests.
 *
 * Two honest searches of one position at one budget differ: another hash, a
 * few more nodes, a tactic one sees and the other does not. What they do not
 * do is disagree by more than that noise, so the comparison is on a scale
 * where noise is small and lies are large: the side to move's winning
 * chance, W(cp) = 1 / (1 + e^(-cp / 600)) (the logistic shogi engines use
 * for evaluations; W(0) = 0.5, W(600) = 0.73, W(1200) = 0.88), a mate for the
 * side to move 1 and a mate against it 0. Two results are apart (beyond
 * what noise does, rarely, at small budgets) when
 *
 *   - their best scores' winning chances differ by more than the tolerance
 *     (COORD_SPOT_TOLERANCE by default: +500 and -500 agree, 0 and
 *     +2000 do not, nor a mate and 0);
 *   - one reports a mate for a side and the other does not see that side
 *     ahead by COORD_SPOT_MATE_CP (a mate and +300);
 *   - one's best move is in the other's lines, scored worse than that
 *     one's best by more than the tolerance (MultiPV > 1);
 *
 * and grossly apart (beyond anything two honest searches at one budget do)
 * when their depths are: the deeper more than twice the other plus 8 (both
 * given, not both mates; honest runs differ by a few plies), or when one sees the side to
 * move ahead by COORD_SPOT_MATE_CP or a mate and the other sees it behind by
 * as much.
 *
 * A result's best is its line of highest value, whatever the order sent.
 */
#ifndef CLUSTER_COORD_SPOT_H
#define CLUSTER_COORD_SPOT_H

#include <stdbool.h>

#include "cluster/coord.h"
#include "shogi/position.h"

#define COORD_SPOT_TOLERANCE 0.45 /* the default tolerance, in winning chances */
#define COORD_SPOT_MATE_CP 1000   /* a mate against less than this disagrees */
#define COORD_SPOT_WHYLEN 256

/* The side to move's winning chance for a score (cp, or a mate in plies,
 * positive when the side to move mates). */
double coord_spot_chance(bool mate, int score);

enum { COORD_SPOT_AGREE = 0, COORD_SPOT_APART = 1, COORD_SPOT_GROSS = 2 };

/* How results a and b of one position compare within tol (winning chances,
 * 0 < tol <= 1): COORD_SPOT_AGREE, COORD_SPOT_APART or COORD_SPOT_GROSS, the
 * first difference found then in why (COORD_SPOT_WHYLEN bytes, may be NULL).
 * A failed result is apart from anything. */
int coord_spot_compare(const CoordResult *a, const CoordResult *b, double tol, char *why);

/*
 * Whom of a (a result checked) and b (its check), which are apart, the third
 * result c of the same position finds at fault: 0 (a), 1 (b), or -1 (nobody:
 * c agrees with both, or with neither). At fault is the one apart from both
 * others while they agree, unless it only saw less: no mate where both
 * others report one for the same side, its score on that side. *gross: the
 * one at fault is grossly apart from c. why (COORD_SPOT_WHYLEN bytes, may be
 * NULL) says how it differs from c.
 */
int coord_spot_verdict(const CoordResult *a, const CoordResult *b, const CoordResult *c, double tol,
                       bool *gross, char *why);

/*
 * Whether a mate claim of r is false in pos: a line said to mate in 1 ply
 * (its move leaves no legal reply), in 3 (every reply allows a mate in 1) or
 * to be mated in 2 (its move allows a mate in 1) that does not. 1 with the
 * line in why (COORD_SPOT_WHYLEN bytes, may be NULL), or 0. Lines that are
 * not legal moves in pos are not judged. pos is restored before it returns.
 */
int coord_spot_disproves(Position *pos, const CoordResult *r, char *why);

#endif
