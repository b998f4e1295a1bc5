/*
 * play/match_stats.c — what a match's results say (see match.h): Elo from the
 * games and from the pairs, LOS, the SPRT's log-likelihood ratio, the exit
 * plies. The formulas are written out in docs/match.md.
 */
#include "play/match.h"

#include <math.h>
#include <string.h>

/* A pair's points for A as a share of 2: LL, LD, DD/WL, WD, WW. */
static const double PAIR_SCORE[MATCH_PENTA_NB] = {0.0, 0.25, 0.5, 0.75, 1.0};
/* The 97.5% quantile of the standard normal: a two-sided 95% interval. */
#define Z95 1.959963984540054

/* Logistic Elo of an expected score; ±INFINITY at 0 and 1. */
static double score_elo(double p)
{
	if (p <= 0) return -INFINITY;
	if (p >= 1) return INFINITY;
	return -400.0 * log10(1.0 / p - 1.0) + 0.0; /* no "-0" */
}

/* The expected score of a logistic Elo difference. */
static double elo_score(double elo)
{
	return 1.0 / (1.0 + pow(10.0, -elo / 400.0));
}

/* Elo of s and of s ± 1.96·se. */
static void elo_interval(double s, double se, double *elo, double *low, double *high)
{
	*elo = score_elo(s);
	*low = score_elo(s - Z95 * se);
	*high = score_elo(s + Z95 * se);
}

void match_elo(int w, int d, int l, double *elo, double *low, double *high)
{
	int n = w + d + l;
	*elo = *low = *high = 0;
	if (n == 0) return;
	double s = (w + 0.5 * d) / n;
	double var = (w * (1 - s) * (1 - s) + d * (0.5 - s) * (0.5 - s) + l * s * s) / n;
	elo_interval(s, sqrt(var / n), elo, low, high);
}

void match_pairs_add(MatchPairs *p, int result1, int result2)
{
	/* Two results in -1..1 sum to -2..2: the class LL..WW. */
	int k = result1 + result2 + 2;
	p->penta[k]++;
	if (k == MATCH_DD_WL) {
		if (result1 == 0)
			p->dd++;
		else
			p->wl++;
	}
	p->pairs++;
}

void match_pairs_finish(MatchPairs *p)
{
	p->score = p->elo = p->elo_low = p->elo_high = 0;
	p->los = NAN;
	int n = p->pairs;
	if (n == 0) return;
	double s = 0, var = 0;
	for (int k = 0; k < MATCH_PENTA_NB; k++) s += p->penta[k] * PAIR_SCORE[k];
	s /= n;
	for (int k = 0; k < MATCH_PENTA_NB; k++)
		var += p->penta[k] * (PAIR_SCORE[k] - s) * (PAIR_SCORE[k] - s);
	var /= n;
	double se = sqrt(var / n);
	p->score = s;
	elo_interval(s, se, &p->elo, &p->elo_low, &p->elo_high);
	if (se > 0)
		p->los = 0.5 * erfc(-(s - 0.5) / (se * sqrt(2.0)));
	else
		p->los = s > 0.5 ? 1.0 : s < 0.5 ? 0.0 : 0.5;
}

/*
 * The distribution nearest to pdf (in likelihood) whose expected pair score
 * is s: q_k = p_k / (1 + x·(a_k − s)), with x the root of Σ p_k (a_k − s) /
 * (1 + x·(a_k − s)) = 0. That sum falls from +∞ to −∞ as x runs over the
 * interval where every denominator is positive (every p_k > 0, a_k spans 0
 * to 1): bisection finds the root to the last bit.
 */
static void mle_expected(double q[MATCH_PENTA_NB], const double p[MATCH_PENTA_NB], double s)
{
	double lo = -1.0 / (1.0 - s), hi = 1.0 / s;
	for (int it = 0; it < 200; it++) {
		double x = 0.5 * (lo + hi);
		if (x <= lo || x >= hi) break;
		double f = 0;
		for (int k = 0; k < MATCH_PENTA_NB; k++) {
			double d = PAIR_SCORE[k] - s;
			f += p[k] * d / (1.0 + x * d);
		}
		if (f > 0)
			lo = x;
		else
			hi = x;
	}
	double x = 0.5 * (lo + hi);
	for (int k = 0; k < MATCH_PENTA_NB; k++) q[k] = p[k] / (1.0 + x * (PAIR_SCORE[k] - s));
}

double match_sprt_llr(const int penta[MATCH_PENTA_NB], double elo0, double elo1)
{
	double c[MATCH_PENTA_NB], n = 0;
	int real = 0;
	for (int k = 0; k < MATCH_PENTA_NB; k++) {
		real += penta[k];
		c[k] = penta[k] > 0 ? penta[k] : 1e-3; /* fishtest's regularisation */
		n += c[k];
	}
	if (real == 0) return 0;
	double p[MATCH_PENTA_NB], q0[MATCH_PENTA_NB], q1[MATCH_PENTA_NB];
	for (int k = 0; k < MATCH_PENTA_NB; k++) p[k] = c[k] / n;
	mle_expected(q0, p, elo_score(elo0));
	mle_expected(q1, p, elo_score(elo1));
	double llr = 0;
	for (int k = 0; k < MATCH_PENTA_NB; k++) llr += p[k] * (log(q1[k]) - log(q0[k]));
	return n * llr;
}

void match_sprt_bounds(const MatchSprt *s, double *lower, double *upper)
{
	*lower = log(s->beta / (1.0 - s->alpha));
	*upper = log((1.0 - s->beta) / s->alpha);
}

/* The nearest-rank p-quantile of the n values counted in hist (n >= 1). */
static int quantile(const int *hist, int nbins, int n, double p)
{
	int rank = (int)ceil(p * n), seen = 0;
	if (rank < 1) rank = 1;
	for (int v = 0; v < nbins; v++)
		if ((seen += hist[v]) >= rank) return v;
	return nbins - 1;
}

void match_exit_stats(MatchExit *out, const MatchResult *r, int s)
{
	/* An exit ply is a move number of the record: 1..MATCH_MAX_MOVES_MAX. */
	enum { NBINS = MATCH_MAX_MOVES_MAX + 1 };
	int hist[NBINS] = {0};
	memset(out, 0, sizeof *out);
	double sum = 0;
	for (int i = 0; i < r->ngames; i++) {
		const MatchGame *g = &r->games[i];
		if (!g->played) continue;
		int e = g->exit_ply[s];
		if (e <= 0) {
			out->never++;
			continue;
		}
		hist[e < NBINS ? e : NBINS - 1]++;
		out->games++;
		sum += e;
	}
	int n = out->games;
	if (n == 0) return;
	out->mean = sum / n;
	out->min = quantile(hist, NBINS, n, 0);
	out->q1 = quantile(hist, NBINS, n, 0.25);
	out->median = quantile(hist, NBINS, n, 0.5);
	out->q3 = quantile(hist, NBINS, n, 0.75);
	out->max = quantile(hist, NBINS, n, 1);
}

void match_exit_eval_stats(MatchExitEval *out, const MatchResult *r, int s)
{
	memset(out, 0, sizeof *out);
	double sum = 0, sq = 0;
	for (int i = 0; i < r->ngames; i++) {
		const MatchGame *g = &r->games[i];
		if (!g->played || !g->has_exit_eval[s]) continue;
		out->n++;
		sum += g->exit_eval[s];
		sq += (double)g->exit_eval[s] * g->exit_eval[s];
	}
	if (out->n == 0) return;
	out->mean = sum / out->n;
	if (out->n < 2) return;
	double var = (sq - out->n * out->mean * out->mean) / (out->n - 1);
	out->se = var > 0 ? sqrt(var / out->n) : 0;
}
