/*
 * tools/tune/tune.c — fits the built-in evaluation's weights (search/eval.h)
 * to games (tools/tune/README.md says how the games are made).
 *
 *   build/tune [--epochs N] [--lambda L] [--scale S] [--lr R] [--ridge R] [--out FILE] GAMES...
 *
 * Each GAMES file holds one game a line as tools/tune/gen_games.py writes it:
 * Black's result, the opening's length, the moves, and the engine's value of
 * every position after the opening. Every such position that is quiet (not in
 * check, the engine's move neither a capture nor a promotion, |value| < 3000)
 * becomes a sample: its features (eval_features) and a target
 *     t = lambda × result + (1 − lambda) × sigmoid(value / S)
 * from the side to move. The weights minimise the mean of
 * (sigmoid(eval / S) − t)² plus a ridge on the positional weights (R samples'
 * worth; Adam steps of --lr cp, full batch) from the
 * material tables alone;
 * every tenth game is held out and its loss printed. Constraints keep the
 * evaluation sane: each further piece in hand is worth at least 10 cp, the
 * material weights stay within 30% of the exchange tables, and the positional
 * weights of a piece stay within a fraction of its material.
 *
 * The result is written as a C source (search/eval_weights.c) with a comment
 * saying how it was made.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/eval.h"
#include "shogi/notation.h"
#include "shogi/position.h"

/* The hand slots of eval.c: the n-th piece of a type is slot base + n - 1. */
static const int HAND_BASE_OF[HAND_PT_NB] = {0, 0, 10, 14, 18, 22, 24, 26};
static const int HAND_SLOTS_OF[HAND_PT_NB] = {0, 10, 4, 4, 4, 2, 2, 4};

/* The bounds' parameters (see set_bounds). */
#define PLACE_FRACTION 0.12
#define HANG_FRACTION 0.15
#define KSQ_LIMIT 20
#define DANGER_LIMIT 40

typedef struct {
	uint32_t first; /* into the feature arrays */
	uint16_t n;
	int8_t sign;  /* +1 Black to move, -1 White */
	float target; /* from the side to move */
} Sample;

static Sample *samples;
static size_t nsamples, capsamples;
static uint16_t *fidx;
static int8_t *fcoef;
static size_t nfeat, capidx, capcoef;
static size_t nheld; /* samples [0, nheld) are held out */

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap) return p;
	size_t c = *cap ? *cap : 4096;
	while (c < need) c *= 2;
	void *q = realloc(p, c * size);
	if (!q) {
		fprintf(stderr, "tune: out of memory\n");
		exit(1);
	}
	*cap = c;
	return q;
}

static double sigmoid(double x)
{
	return 1.0 / (1.0 + exp(-x));
}

static void add_sample(const Position *pos, double target)
{
	static EvalFeatures f;
	eval_features(pos, &f, NULL);
	samples = grow(samples, &capsamples, nsamples + 1, sizeof *samples);
	fidx = grow(fidx, &capidx, nfeat + (size_t)f.n, sizeof *fidx);
	fcoef = grow(fcoef, &capcoef, nfeat + (size_t)f.n, sizeof *fcoef);
	Sample *s = &samples[nsamples++];
	s->first = (uint32_t)nfeat;
	s->n = (uint16_t)f.n;
	s->sign = pos->side == BLACK ? 1 : -1;
	s->target = (float)target;
	memcpy(fidx + nfeat, f.idx, (size_t)f.n * sizeof *fidx);
	memcpy(fcoef + nfeat, f.coef, (size_t)f.n * sizeof *fcoef);
	nfeat += (size_t)f.n;
}

/* One game line; held games go to a separate list merged first later. */
static int load_game(char *line, double lambda, double scale, Position *pos, int *kept)
{
	char *save, *tok;
	char *fields[4];
	int nf = 0;
	for (tok = strtok_r(line, "\t\n", &save); tok && nf < 4;
	     tok = strtok_r(NULL, "\t\n", &save))
		fields[nf++] = tok;
	if (nf < 3) return -1;
	double result = atof(fields[0]);
	int nopen = atoi(fields[1]);
	char *msave, *ssave;
	pos_set_startpos(pos);
	char *sc = nf == 4 ? strtok_r(fields[3], " ", &ssave) : NULL;
	int ply = 0;
	for (char *mv = strtok_r(fields[2], " ", &msave); mv; mv = strtok_r(NULL, " ", &msave)) {
		Move m;
		if (usi_move_parse_legal(&m, pos, mv, strlen(mv), NULL) < 0) return -1;
		if (ply >= nopen) {
			if (!sc) break;
			double v = atof(sc);
			sc = strtok_r(NULL, " ", &ssave);
			bool quiet = move_is_drop(m) ||
			             (pos->board[move_to(m)] == PIECE_NONE && !move_is_promote(m));
			if (!pos_in_check(pos) && quiet && fabs(v) < 3000) {
				double res = pos->side == BLACK ? result : 1.0 - result;
				add_sample(pos, lambda * res + (1 - lambda) * sigmoid(v / scale));
				(*kept)++;
			}
		}
		if (pos_history_len(pos) >= POS_MAX_STATES - 2) break;
		pos_do_move(pos, m);
		ply++;
	}
	return 0;
}

static double W[EVAL_NFEATURES], G[EVAL_NFEATURES], H[EVAL_NFEATURES], M1[EVAL_NFEATURES],
    M2[EVAL_NFEATURES];
static double LO[EVAL_NFEATURES], HI[EVAL_NFEATURES], BEST[EVAL_NFEATURES];

static double predict(const Sample *s)
{
	double v = 0;
	for (uint32_t i = s->first; i < s->first + s->n; i++)
		if (fidx[i] != EVF_TEMPO) v += fcoef[i] * W[fidx[i]];
	return s->sign * v + W[EVF_TEMPO];
}

static double loss_and_grad(size_t from, size_t to, double scale, bool grad)
{
	double loss = 0;
	for (size_t k = from; k < to; k++) {
		const Sample *s = &samples[k];
		double p = sigmoid(predict(s) / scale);
		double e = p - s->target;
		loss += e * e;
		if (!grad) continue;
		double d = p * (1 - p) / scale, g = 2 * e * d, h = 2 * d * d;
		for (uint32_t i = s->first; i < s->first + s->n; i++) {
			if (fidx[i] == EVF_TEMPO) {
				G[EVF_TEMPO] += g;
				H[EVF_TEMPO] += h;
			} else {
				G[fidx[i]] += g * s->sign * fcoef[i];
				H[fidx[i]] += h * fcoef[i] * fcoef[i];
			}
		}
	}
	return to > from ? loss / (double)(to - from) : 0;
}

/*
 * The box every weight stays in. A piece's own features (its place, its place
 * by the kings, hanging) stay within a fraction of its material, and the king
 * squares' within a few tens of cp, so that a piece is always worth having:
 * removing one never helps its side (tests/search/test_eval.c checks it).
 */
static void set_bounds(void)
{
	for (int i = 0; i < EVAL_NFEATURES; i++) LO[i] = -400, HI[i] = 400;
	for (int pt = PAWN; pt < PT_NB; pt++) {
		double m = EVAL_PIECE_VALUE[pt];
		LO[EVF_MAT + pt] = 0.8 * m;
		HI[EVF_MAT + pt] = 1.3 * m;
		if (pt == KING) LO[EVF_MAT + pt] = HI[EVF_MAT + pt] = 0;
		double lim = pt == KING ? 300 : PLACE_FRACTION * m;
		int t = pt - 1;
		for (int j = 0; j < 45; j++) {
			LO[EVF_PSQ + t * 45 + j] = LO[EVF_KOWN + t * 45 + j] =
			    LO[EVF_KOPP + t * 45 + j] = -lim;
			HI[EVF_PSQ + t * 45 + j] = HI[EVF_KOWN + t * 45 + j] =
			    HI[EVF_KOPP + t * 45 + j] = lim;
		}
		if (pt != KING) {
			for (int side = 0; side < 2; side++) {
				LO[EVF_HANG + side * 14 + t] = -HANG_FRACTION * m;
				HI[EVF_HANG + side * 14 + t] = 0;
			}
		}
	}
	/* Hand: each further piece adds at least 10 cp (bounded per slot). */
	for (int i = 0; i < 40; i++) LO[EVF_HAND + i] = 10, HI[EVF_HAND + i] = 1500;
	for (int i = 0; i < 5 * 27; i++) LO[EVF_KSQ + i] = -KSQ_LIMIT, HI[EVF_KSQ + i] = KSQ_LIMIT;
	for (int i = 0; i < 5; i++) LO[EVF_KEDGE + i] = -100, HI[EVF_KEDGE + i] = 100;
	for (int i = 0; i < 45; i++)
		LO[EVF_KDANGER + i] = -DANGER_LIMIT, HI[EVF_KDANGER + i] = DANGER_LIMIT;
	for (int i = 0; i < 5 * 16; i++) LO[EVF_MOB + i] = -100, HI[EVF_MOB + i] = 100;
	for (int i = 0; i < 32; i++) LO[EVF_KZONE + i] = -300, HI[EVF_KZONE + i] = 300;
	LO[EVF_TEMPO] = 0, HI[EVF_TEMPO] = 100;
}

/*
 * King safety can only get worse for its king with more enemy attacks, fewer
 * defenders, more undefended attacked squares, more pressure on the squares
 * near it or more enemy pieces in hand, and a slider's reach never hurts it:
 * each such chain is made monotone after every step (each entry clamped by
 * its neighbour in the chain, in order).
 */
static void make_monotone(void)
{
	for (int cls = 0; cls < 5; cls++)
		for (int occ = 0; occ < 3; occ++) {
			double *k = &W[EVF_KSQ + cls * 27 + occ * 9];
			for (int def = 0; def < 3; def++)
				for (int att = 1; att < 3; att++)
					if (k[att * 3 + def] > k[(att - 1) * 3 + def])
						k[att * 3 + def] = k[(att - 1) * 3 + def];
			for (int att = 0; att < 3; att++)
				for (int def = 1; def < 3; def++)
					if (k[att * 3 + def] < k[att * 3 + def - 1])
						k[att * 3 + def] = k[att * 3 + def - 1];
		}
	for (int i = 1; i < 32; i++)
		if (W[EVF_KZONE + i] > W[EVF_KZONE + i - 1])
			W[EVF_KZONE + i] = W[EVF_KZONE + i - 1];
	/* A slider's reach never hurts it. */
	for (int k = 0; k < 5; k++)
		for (int i = 1; i < 16; i++)
			if (W[EVF_MOB + k * 16 + i] < W[EVF_MOB + k * 16 + i - 1])
				W[EVF_MOB + k * 16 + i] = W[EVF_MOB + k * 16 + i - 1];
	double *d = &W[EVF_KDANGER];
	for (int n = 0; n < 9; n++)
		for (int b = 0; b < 5; b++) {
			if (n > 0 && d[n * 5 + b] > d[(n - 1) * 5 + b])
				d[n * 5 + b] = d[(n - 1) * 5 + b];
			if (b > 0 && d[n * 5 + b] > d[n * 5 + b - 1])
				d[n * 5 + b] = d[n * 5 + b - 1];
		}
}

static void write_weights(const char *path, int argc, char **argv, double lambda, double scale,
                          int epochs, size_t n, double train, double held)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "tune: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	fprintf(f,
	        "/*\n * search/eval_weights.c — the evaluation's weights (search/eval.h), made by\n"
	        " * tools/tune (do not edit by hand):\n *\n *   build/tune");
	for (int i = 1; i < argc; i++) fprintf(f, " %s", argv[i]);
	fprintf(
	    f,
	    "\n *\n * lambda %.2f, scale %.0f, %d epochs over %zu quiet positions; loss %.6f on\n"
	    " * the training games, %.6f on the held-out tenth. The games come from\n"
	    " * tools/tune/gen_games.py (tools/tune/README.md says how to make them again).\n */\n",
	    lambda, scale, epochs, n, train, held);
	fprintf(f,
	        "#include \"search/eval.h\"\n\nconst int16_t EVAL_WEIGHTS[EVAL_NFEATURES] = {\n");
	for (int i = 0; i < EVAL_NFEATURES; i++) {
		long v = lround(W[i]);
		fprintf(f, "%s%ld,", i % 12 == 0 ? "\t" : " ", v);
		if (i % 12 == 11 || i == EVAL_NFEATURES - 1) fprintf(f, "\n");
	}
	fprintf(f, "};\n");
	fclose(f);
}

int main(int argc, char **argv)
{
	int epochs = 300;
	double lambda = 0.2, scale = 600, lr = 2, ridge = 30;
	const char *out = "search/eval_weights.c";
	int first_file = 1;
	for (; first_file < argc && argv[first_file][0] == '-'; first_file += 2) {
		if (first_file + 1 >= argc) {
			fprintf(stderr, "tune: %s needs a value\n", argv[first_file]);
			return 2;
		}
		const char *a = argv[first_file], *v = argv[first_file + 1];
		if (!strcmp(a, "--epochs"))
			epochs = atoi(v);
		else if (!strcmp(a, "--lambda"))
			lambda = atof(v);
		else if (!strcmp(a, "--scale"))
			scale = atof(v);
		else if (!strcmp(a, "--lr"))
			lr = atof(v);
		else if (!strcmp(a, "--out"))
			out = v;
		else if (!strcmp(a, "--ridge"))
			ridge = atof(v);
		else {
			fprintf(stderr, "usage: tune [--epochs N] [--lambda L] [--scale S] [--lr "
			                "R] [--ridge R] [--out FILE] GAMES...\n");
			return 2;
		}
	}
	if (first_file >= argc) {
		fprintf(stderr, "usage: tune [--epochs N] [--lambda L] [--scale S] [--lr R] "
		                "[--ridge R] [--out FILE] GAMES...\n");
		return 2;
	}
	shogi_init();
	Position *pos = malloc(sizeof *pos);
	/* Two passes over the files: held-out games first, so they are [0, nheld). */
	for (int pass = 0; pass < 2; pass++) {
		long game = 0;
		int kept = 0;
		for (int i = first_file; i < argc; i++) {
			FILE *f = fopen(argv[i], "r");
			if (!f) {
				fprintf(stderr, "tune: %s: %s\n", argv[i], strerror(errno));
				free(pos);
				return 1;
			}
			char *line = NULL;
			size_t cap = 0;
			while (getline(&line, &cap, f) > 0) {
				bool held = game++ % 10 == 0;
				if (held != (pass == 0)) continue;
				if (load_game(line, lambda, scale, pos, &kept) < 0)
					fprintf(stderr, "tune: %s: game %ld skipped (bad line)\n",
					        argv[i], game);
			}
			free(line);
			fclose(f);
		}
		if (pass == 0) nheld = nsamples;
		fprintf(stderr, "tune: %s: %ld games, %d positions\n",
		        pass ? "training" : "held out", game, kept);
	}
	set_bounds();
	/* The start: the exchange tables' material, each hand piece at its hand
	 * value, everything else zero (so a run depends on its games alone). */
	memset(W, 0, sizeof W);
	for (int pt = PAWN; pt < PT_NB; pt++) W[EVF_MAT + pt] = EVAL_PIECE_VALUE[pt];
	for (int i = 0; i < 40; i++) W[EVF_HAND + i] = LO[EVF_HAND + i];
	for (int pt = PAWN; pt <= GOLD; pt++)
		for (int i = 0; i < HAND_SLOTS_OF[pt]; i++)
			W[EVF_HAND + HAND_BASE_OF[pt] + i] = EVAL_HAND_VALUE[pt];
	W[EVF_TEMPO] = 20;
	/* The ridge, in samples' worth of curvature (a sample at p = 1/2). */
	double r = ridge * 2 * (0.25 / scale) * (0.25 / scale);
	double train = 0, held = 0, best_held = 1e9, best_train = 0;
	int best_ep = 0;
	memcpy(BEST, W, sizeof W);
	for (int ep = 1; ep <= epochs; ep++) {
		memset(G, 0, sizeof G);
		memset(H, 0, sizeof H);
		train = loss_and_grad(nheld, nsamples, scale, true);
		for (int i = 0; i < EVAL_NFEATURES; i++) {
			/* Adam on the loss plus the ridge (positional weights only),
			 * which holds back the weights the data say little about. */
			bool pos_w = i >= EVF_PSQ && i != EVF_TEMPO;
			double g = G[i] + (pos_w ? 2 * r * W[i] : 0);
			M1[i] = 0.9 * M1[i] + 0.1 * g;
			M2[i] = 0.999 * M2[i] + 0.001 * g * g;
			double mh = M1[i] / (1 - pow(0.9, ep)), vh = M2[i] / (1 - pow(0.999, ep));
			W[i] -= lr * mh / (sqrt(vh) + 1e-12);
			if (W[i] < LO[i]) W[i] = LO[i];
			if (W[i] > HI[i]) W[i] = HI[i];
		}
		make_monotone();
		if (ep % 10 == 0 || ep == epochs) {
			held = loss_and_grad(0, nheld, scale, false);
			fprintf(stderr, "epoch %d: train %.6f held %.6f\n", ep, train, held);
			if (held < best_held) {
				best_held = held;
				best_train = train;
				best_ep = ep;
				memcpy(BEST, W, sizeof W);
			}
		}
	}
	/* The weights of the epoch that did best on the held-out games. */
	memcpy(W, BEST, sizeof W);
	held = best_held;
	train = best_train;
	epochs = best_ep;
	write_weights(out, argc, argv, lambda, scale, epochs, nsamples, train, held);
	fprintf(stderr, "tune: wrote %s\n", out);
	free(pos);
	return 0;
}
