/*
 * cluster/coord_spot_rules.c — the spot checks' rules (cluster/coord_spot.h):
 * how two results of one position compare, whom a third finds at fault, and
 * the short mate claims a position disproves by itself.
 */
#include "cluster/coord_spot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "search/mate.h"
#include "shogi/errmsg.h"
#include "shogi/movegen.h"

double coord_spot_chance(bool mate, int score)
{
	if (mate) return score > 0 ? 1.0 : 0.0;
	return 1.0 / (1.0 + exp(-score / 600.0));
}

static int line_value(const CoordLine *l)
{
	if (!l->mate) return l->score;
	return l->score > 0 ? VALUE_MATE - l->score : -VALUE_MATE - l->score;
}

static const CoordLine *best_line(const CoordResult *r)
{
	const CoordLine *b = &r->lines[0];
	for (int i = 1; i < r->nlines; i++)
		if (line_value(&r->lines[i]) > line_value(b)) b = &r->lines[i];
	return b;
}

static double chance(const CoordLine *l)
{
	return coord_spot_chance(l->mate, l->score);
}

static void score_text(char *out, size_t n, const CoordLine *l)
{
	if (l->mate)
		snprintf(out, n, "%s %d", l->score > 0 ? "mate in" : "mated in",
		         l->score > 0 ? l->score : -l->score);
	else
		snprintf(out, n, "%+d cp", l->score);
}

static const CoordLine *line_of(const CoordResult *r, const char *move)
{
	for (int i = 0; i < r->nlines; i++)
		if (!strcmp(r->lines[i].move, move)) return &r->lines[i];
	return NULL;
}

/* One way of the best-move rule: a's best move, in b's lines, worse than
 * b's best by more than tol. */
static bool move_refuted(const CoordResult *a, const CoordResult *b, double tol, char *why)
{
	const CoordLine *ba = best_line(a), *bb = best_line(b), *m = line_of(b, ba->move);
	if (!m || chance(bb) - chance(m) <= tol) return false;
	char s1[32], s2[32];
	score_text(s1, sizeof s1, m);
	score_text(s2, sizeof s2, bb);
	if (why)
		snprintf(why, COORD_SPOT_WHYLEN,
		         "best move %s is %s in the other's lines, against %s for %s", ba->move, s1,
		         s2, bb->move);
	return true;
}

/* One way of the mate rule: a mate for a side in x's best, y's best not
 * seeing that side ahead by COORD_SPOT_MATE_CP. */
static bool mate_unseen(const CoordLine *x, const CoordLine *y)
{
	if (!x->mate || y->mate) return false;
	return x->score > 0 ? y->score < COORD_SPOT_MATE_CP : y->score > -COORD_SPOT_MATE_CP;
}

/* The side to move ahead by COORD_SPOT_MATE_CP or a mate (1), behind by as
 * much (-1), or neither (0). */
static int decisive(const CoordLine *l)
{
	int v = line_value(l);
	return v >= COORD_SPOT_MATE_CP ? 1 : v <= -COORD_SPOT_MATE_CP ? -1 : 0;
}

int coord_spot_compare(const CoordResult *a, const CoordResult *b, double tol, char *why)
{
	if (why) why[0] = 0;
	if (a->failed || b->failed || a->nlines < 1 || b->nlines < 1) {
		if (why) snprintf(why, COORD_SPOT_WHYLEN, "a result without a line");
		return COORD_SPOT_APART;
	}
	const CoordLine *ba = best_line(a), *bb = best_line(b);
	char s1[32], s2[32];
	score_text(s1, sizeof s1, ba);
	score_text(s2, sizeof s2, bb);
	int lo = ba->depth < bb->depth ? ba->depth : bb->depth;
	int hi = ba->depth < bb->depth ? bb->depth : ba->depth;
	if (lo > 0 && hi > 2 * lo + 8 && !(ba->mate && bb->mate)) {
		if (why)
			snprintf(why, COORD_SPOT_WHYLEN, "%s at depth %d against %s at depth %d",
			         s1, ba->depth, s2, bb->depth);
		return COORD_SPOT_GROSS;
	}
	if (decisive(ba) * decisive(bb) < 0) {
		if (why) snprintf(why, COORD_SPOT_WHYLEN, "%s against %s", s1, s2);
		return COORD_SPOT_GROSS;
	}
	double wa = chance(ba), wb = chance(bb);
	if (fabs(wa - wb) > tol) {
		if (why)
			snprintf(
			    why, COORD_SPOT_WHYLEN,
			    "%s against %s: winning chances %.2f and %.2f, more than %.2f apart",
			    s1, s2, wa, wb, tol);
		return COORD_SPOT_APART;
	}
	if (mate_unseen(ba, bb) || mate_unseen(bb, ba)) {
		if (why) snprintf(why, COORD_SPOT_WHYLEN, "%s against %s: a mate not seen", s1, s2);
		return COORD_SPOT_APART;
	}
	if (move_refuted(a, b, tol, why) || move_refuted(b, a, tol, why)) return COORD_SPOT_APART;
	return COORD_SPOT_AGREE;
}

/* x only saw less than y and z: no mate where both report one for the same
 * side, its own score on that side. */
static bool saw_less(const CoordResult *x, const CoordResult *y, const CoordResult *z)
{
	const CoordLine *bx = best_line(x), *by = best_line(y), *bz = best_line(z);
	if (bx->mate || !by->mate || !bz->mate || (by->score > 0) != (bz->score > 0)) return false;
	return by->score > 0 ? bx->score > 0 : bx->score < 0;
}

int coord_spot_verdict(const CoordResult *a, const CoordResult *b, const CoordResult *c, double tol,
                       bool *gross, char *why)
{
	char wa[COORD_SPOT_WHYLEN], wb[COORD_SPOT_WHYLEN];
	int ac = coord_spot_compare(a, c, tol, wa), bc = coord_spot_compare(b, c, tol, wb);
	*gross = false;
	if (why) why[0] = 0;
	if (ac != COORD_SPOT_AGREE && bc == COORD_SPOT_AGREE && !saw_less(a, b, c)) {
		*gross = ac == COORD_SPOT_GROSS;
		if (why) snprintf(why, COORD_SPOT_WHYLEN, "%s", wa);
		return 0;
	}
	if (ac == COORD_SPOT_AGREE && bc != COORD_SPOT_AGREE && !saw_less(b, a, c)) {
		*gross = bc == COORD_SPOT_GROSS;
		if (why) snprintf(why, COORD_SPOT_WHYLEN, "%s", wb);
		return 1;
	}
	return -1;
}

int coord_spot_disproves(Position *pos, const CoordResult *r, char *why)
{
	for (int i = 0; i < r->nlines; i++) {
		const CoordLine *l = &r->lines[i];
		if (!l->mate || (l->score != 1 && l->score != 3 && l->score != -2)) continue;
		Move m;
		if (usi_move_parse_legal(&m, pos, l->move, strlen(l->move), NULL) < 0) continue;
		pos_do_move(pos, m);
		bool holds = true;
		if (l->score == 1) {
			holds = movegen_count(pos) == 0;
		} else if (l->score == -2) {
			holds = mate_in_1(pos) != MOVE_NONE;
		} else {
			Move reply[MOVEGEN_MAX];
			int n = movegen_legal(pos, reply);
			for (int k = 0; k < n && holds; k++) {
				pos_do_move(pos, reply[k]);
				holds = mate_in_1(pos) != MOVE_NONE;
				pos_undo_move(pos);
			}
		}
		pos_undo_move(pos);
		if (!holds) {
			int n = l->score > 0 ? l->score : -l->score;
			errmsg_set(why, COORD_SPOT_WHYLEN, 0,
			           "%s, said to %s in %d %s, does not: the position disproves it",
			           l->move, l->score > 0 ? "mate" : "be mated", n,
			           n == 1 ? "ply" : "plies");
			return 1;
		}
	}
	return 0;
}
