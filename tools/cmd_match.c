/*
 * joseki match --engine-a builtin|PATH --engine-b builtin|PATH
 *              [--book-a BOOK|none] [--book-b BOOK|none] [--games N]
 *              [--nodes N | --movetime MS | --tc BASE[+INC] | --byoyomi MS]...
 *              [--time-margin MS] [--sprt ELO0,ELO1[,ALPHA,BETA]]
 *              [--openings FILE] [--concurrency N]
 *              [--max-moves N] [--seed S] [--out DIR] [--option-a NAME=VALUE]...
 *              [--option-b NAME=VALUE]... [--json] [--quiet]
 *
 * Games between two engine set-ups (play/match.h, docs/match.md). --tc and
 * --byoyomi given twice are A's, then B's. Progress on stderr when it is a
 * terminal; at the end one summary line (or with --json one object): W/D/L
 * for A, score, Elo difference with its 95% interval, the pairs'
 * pentanomial counts, Elo and LOS, the SPRT's LLR and verdict, book plies
 * and exit plies of each side, where the CSA records went. Ctrl-C / SIGTERM
 * stop after the searches running; the finished games count.
 */
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "play/match.h"
#include "tools/cli_games.h"
#include "tools/commands.h"

#define MATCH_MAX_OPTIONS 64
#define USAGE                                                                                      \
	"usage: joseki match --engine-a builtin|PATH --engine-b builtin|PATH "                     \
	"[--book-a BOOK|none] [--book-b BOOK|none] [--games N] [--nodes N | --movetime MS | "      \
	"--tc BASE[+INC] | --byoyomi MS] [--time-margin MS] [--sprt ELO0,ELO1[,ALPHA,BETA]] "      \
	"[--openings FILE] [--concurrency N] [--max-moves N] [--seed S] [--out DIR] "              \
	"[--option-a NAME=VALUE]... [--option-b NAME=VALUE]... [--json] [--quiet]"

static volatile sig_atomic_t match_stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	match_stop_flag = 1;
}

static int parse_num(uint64_t *out, const char *s, const char *opt, bool zero_ok)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || *s == '-' || (v == 0 && !zero_ok)) {
		joseki_error("match: %s wants a %s number, not '%s'", opt,
		             zero_ok ? "non-negative" : "positive", s);
		return -1;
	}
	*out = v;
	return 0;
}

/* parse_num with an upper bound: "match: OPT at most MAX" beyond it. */
static int parse_upto(uint64_t *out, const char *s, const char *opt, bool zero_ok, uint64_t max)
{
	if (parse_num(out, s, opt, zero_ok) < 0) return -1;
	if (*out > max) {
		joseki_error("match: %s at most %llu", opt, (unsigned long long)max);
		return -1;
	}
	return 0;
}

static json_t *elo_json(double v)
{
	return isfinite(v) ? json_real(round(v * 10) / 10) : json_null();
}

static void elo_text(char *buf, size_t len, double v)
{
	if (isfinite(v))
		snprintf(buf, len, "%+.0f", v);
	else
		snprintf(buf, len, "%sinf", v > 0 ? "+" : "-");
}

static json_t *tc_json(const TimeControl *t)
{
	return json_pack("{s:I, s:I, s:I}", "main_ms", (json_int_t)t->main_ms, "byoyomi_ms",
	                 (json_int_t)t->byoyomi_ms, "inc_ms", (json_int_t)t->inc_ms);
}

static json_t *pairs_json(const MatchPairs *p)
{
	json_t *penta = json_array();
	for (int k = 0; k < MATCH_PENTA_NB; k++)
		json_array_append_new(penta, json_integer(p->penta[k]));
	return json_pack("{s:i, s:o, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:o, s:o, s:o, s:o}",
	                 "count", p->pairs, "pentanomial", penta, "ll", p->penta[MATCH_LL], "ld",
	                 p->penta[MATCH_LD], "dd", p->dd, "wl", p->wl, "wd", p->penta[MATCH_WD],
	                 "ww", p->penta[MATCH_WW], "score", p->score, "elo", elo_json(p->elo),
	                 "elo_low", elo_json(p->elo_low), "elo_high", elo_json(p->elo_high), "los",
	                 isfinite(p->los) ? json_real(round(p->los * 10000) / 10000) : json_null());
}

/* Side s's exit plies: the figures and a histogram {"ply": games}. */
static json_t *exit_json(const MatchResult *r, int s)
{
	const MatchExit *e = &r->exit[s];
	json_t *hist = json_object();
	for (int i = 0; i < r->ngames; i++) {
		const MatchGame *g = &r->games[i];
		if (!g->played || g->exit_ply[s] <= 0) continue;
		char key[16];
		snprintf(key, sizeof key, "%d", g->exit_ply[s]);
		json_t *n = json_object_get(hist, key);
		json_object_set_new(hist, key, json_integer(n ? json_integer_value(n) + 1 : 1));
	}
	return json_pack("{s:i, s:i, s:f, s:i, s:i, s:i, s:i, s:i, s:o}", "games", e->games,
	                 "never", e->never, "mean", e->mean, "min", e->min, "q1", e->q1, "median",
	                 e->median, "q3", e->q3, "max", e->max, "histogram", hist);
}

static json_t *side_int(int v)
{
	return v > 0 ? json_integer(v) : json_null();
}

static int print_json(const MatchOptions *opt, const MatchResult *r)
{
	bool clocked = opt->budget.kind == SEARCH_BUDGET_CLOCK;
	json_t *games = json_array();
	for (int i = 0; games && i < r->ngames; i++) {
		const MatchGame *g = &r->games[i];
		if (!g->played) continue;
		char csa[4096];
		if (opt->out_dir)
			snprintf(csa, sizeof csa, "%s/game-%04d.csa", opt->out_dir, i + 1);
		json_t *o = json_pack(
		    "{s:i, s:o, s:s, s:s, s:s, s:s, s:i, s:[i,i], s:i, s:o, s:o, s:o}", "game",
		    i + 1, "opening", g->opening < 0 ? json_null() : json_integer(g->opening + 1),
		    "a_color", g->a_color == BLACK ? "black" : "white", "result",
		    g->result > 0   ? "win"
		    : g->result < 0 ? "loss"
		                    : "draw",
		    "end", match_end_name(g->end), "winner",
		    g->winner == BLACK   ? "black"
		    : g->winner == WHITE ? "white"
		                         : "draw",
		    "plies", g->plies, "book_plies", g->book_plies[0], g->book_plies[1],
		    "engine_moves", g->engine_moves, "error",
		    g->detail[0] ? json_string(g->detail) : json_null(), "moves",
		    g->usi ? json_string(g->usi) : json_null(), "csa",
		    opt->out_dir ? json_string(csa) : json_null());
		json_object_set_new(o, "pair", json_integer(i / 2 + 1));
		json_object_set_new(
		    o, "exit_plies",
		    json_pack("[o,o]", side_int(g->exit_ply[0]), side_int(g->exit_ply[1])));
		json_object_set_new(
		    o, "time_ms",
		    json_pack("[I,I]", (json_int_t)g->time_ms[0], (json_int_t)g->time_ms[1]));
		json_object_set_new(o, "clock_ms",
		                    clocked ? json_pack("[I,I]", (json_int_t)g->clock_ms[0],
		                                        (json_int_t)g->clock_ms[1])
		                            : json_null());
		json_array_append_new(games, o);
	}
	json_t *o = json_pack(
	    "{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:f, s:o, s:o, s:o, s:{s:f, s:f}, s:I, s:I, s:f, "
	    "s:o}",
	    "engine_a", r->name[0], "engine_b", r->name[1], "games", r->ngames, "played", r->played,
	    "wins", r->wins, "draws", r->draws, "losses", r->losses, "score", r->score, "elo",
	    elo_json(r->elo), "elo_low", elo_json(r->elo_low), "elo_high", elo_json(r->elo_high),
	    "book_plies", "a", r->book_plies[0], "b", r->book_plies[1], "engine_moves",
	    (json_int_t)r->engine_moves, "book_moves", (json_int_t)r->book_moves, "seconds",
	    r->seconds, "out", opt->out_dir ? json_string(opt->out_dir) : json_null());
	json_object_set_new(o, "pairs", pairs_json(&r->pairs));
	json_object_set_new(o, "exit_plies",
	                    json_pack("{s:o, s:o}", "a", exit_json(r, 0), "b", exit_json(r, 1)));
	json_object_set_new(o, "time_control",
	                    clocked ? json_pack("{s:o, s:o, s:i}", "a", tc_json(&opt->clock[0]),
	                                        "b", tc_json(&opt->clock[1]), "margin_ms",
	                                        opt->time_margin_ms)
	                            : json_null());
	const MatchSprt *t = opt->sprt;
	json_object_set_new(o, "sprt",
	                    t ? json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:o}", "elo0",
	                                  t->elo0, "elo1", t->elo1, "alpha", t->alpha, "beta",
	                                  t->beta, "llr", round(r->llr * 1000) / 1000, "lower",
	                                  r->llr_lower, "upper", r->llr_upper, "pairs",
	                                  r->pairs.pairs, "verdict",
	                                  r->verdict == MATCH_SPRT_H1   ? json_string("H1")
	                                  : r->verdict == MATCH_SPRT_H0 ? json_string("H0")
	                                                                : json_null())
	                      : json_null());
	json_object_set_new(o, "results", games ? games : json_null());
	return joseki_print_json(o, 0) < 0 ? 1 : 0;
}

/* "9 [7, 12]": the median exit ply and its quartiles; "-" when never. */
static void exit_text(char *buf, size_t len, const MatchExit *e)
{
	if (e->games == 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%d [%d, %d]", e->median, e->q1, e->q3);
}

static void print_text(const MatchOptions *opt, const MatchResult *r)
{
	char elo[16], lo[16], hi[16], pairs[160] = "", sprt[96] = "", ex[2][48];
	elo_text(elo, sizeof elo, r->elo);
	elo_text(lo, sizeof lo, r->elo_low);
	elo_text(hi, sizeof hi, r->elo_high);
	for (int i = 0; i < r->ngames; i++) {
		const MatchGame *g = &r->games[i];
		if (g->played && g->detail[0])
			printf("game %d: %s, %s\n", i + 1, match_end_name(g->end), g->detail);
	}
	const MatchPairs *p = &r->pairs;
	if (p->pairs > 0) {
		char pe[16], pl[16], ph[16];
		elo_text(pe, sizeof pe, p->elo);
		elo_text(pl, sizeof pl, p->elo_low);
		elo_text(ph, sizeof ph, p->elo_high);
		snprintf(
		    pairs, sizeof pairs,
		    ", %d pairs LL-LD-DD-WD-WW %d-%d-%d-%d-%d, pair elo %s [%s, %s], LOS %.1f%%",
		    p->pairs, p->penta[0], p->penta[1], p->penta[2], p->penta[3], p->penta[4], pe,
		    pl, ph, 100 * p->los);
	}
	if (r->sprt)
		snprintf(sprt, sizeof sprt, ", LLR %.2f [%.2f, %.2f] %s", r->llr, r->llr_lower,
		         r->llr_upper,
		         r->verdict == MATCH_SPRT_H1   ? "H1"
		         : r->verdict == MATCH_SPRT_H0 ? "H0"
		                                       : "no verdict");
	for (int s = 0; s < 2; s++) exit_text(ex[s], sizeof ex[s], &r->exit[s]);
	printf("match A %s%s vs B %s%s: %d games, A +%d =%d -%d, score %.3f, elo %s [%s, %s] "
	       "(95%%)%s%s, book plies A %.1f B %.1f, exit ply A %s B %s, %s%s\n",
	       r->name[0], opt->side[0].book ? "+book" : "", r->name[1],
	       opt->side[1].book ? "+book" : "", r->played, r->wins, r->draws, r->losses, r->score,
	       elo, lo, hi, pairs, sprt, r->book_plies[0], r->book_plies[1], ex[0], ex[1],
	       opt->out_dir ? "games in " : "games not written", opt->out_dir ? opt->out_dir : "");
}

static int add_option(UsiOption *opts, int *n, char *arg)
{
	char *eq = strchr(arg, '=');
	if (!eq || eq == arg || *n >= MATCH_MAX_OPTIONS) {
		joseki_error("match: an engine option wants NAME=VALUE, not '%s'", arg);
		return -1;
	}
	*eq = 0;
	opts[*n].name = arg;
	opts[(*n)++].value = eq + 1;
	return 0;
}

int cmd_match(int argc, char **argv)
{
	MatchOptions opt = {
	    .games = 2, .concurrency = 1, .budget = {.kind = SEARCH_BUDGET_NODES, .amount = 10000}};
	UsiOption uo[2][MATCH_MAX_OPTIONS];
	int nuo[2] = {0, 0}, nbudgets = 0, ntc = 0, nbyo = 0;
	TimeControl tc[2] = {{0}};
	int64_t byo[2] = {0, 0};
	MatchSprt sprt;
	char perr[MATCH_ERRLEN];
	opt.time_margin_ms = MATCH_TIME_MARGIN_DEFAULT;
	const char *openings_path = NULL;
	bool json = false, quiet = false;
	uint64_t v;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has = i + 1 < argc;
		if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--quiet")) {
			quiet = true;
		} else if ((!strcmp(a, "--engine-a") || !strcmp(a, "--engine-b")) && has) {
			opt.side[a[9] == 'b'].engine = argv[++i];
		} else if ((!strcmp(a, "--book-a") || !strcmp(a, "--book-b")) && has) {
			i++;
			opt.side[a[7] == 'b'].book = strcmp(argv[i], "none") ? argv[i] : NULL;
		} else if ((!strcmp(a, "--option-a") || !strcmp(a, "--option-b")) && has) {
			int s = a[9] == 'b';
			if (add_option(uo[s], &nuo[s], argv[++i]) < 0) return 2;
		} else if ((!strcmp(a, "--nodes") || !strcmp(a, "--movetime")) && has) {
			if (parse_num(&opt.budget.amount, argv[++i], a, false) < 0) return 2;
			opt.budget.kind =
			    a[2] == 'n' ? SEARCH_BUDGET_NODES : SEARCH_BUDGET_MOVETIME;
			nbudgets++;
		} else if ((!strcmp(a, "--tc") || !strcmp(a, "--byoyomi")) && has &&
		           (a[2] == 't' ? ntc : nbyo) == 2) {
			joseki_error("match: %s at most twice (A's, then B's)", a);
			return 2;
		} else if (!strcmp(a, "--tc") && has) {
			if (match_tc_parse(&tc[ntc++], argv[++i], perr) < 0) {
				joseki_error("match: %s", perr);
				return 2;
			}
		} else if (!strcmp(a, "--byoyomi") && has) {
			if (parse_upto(&v, argv[++i], a, true, MATCH_TIME_MAX_MS) < 0) return 2;
			byo[nbyo++] = (int64_t)v;
		} else if (!strcmp(a, "--time-margin") && has) {
			if (parse_upto(&v, argv[++i], a, true, 600000) < 0) return 2;
			opt.time_margin_ms = (int)v;
		} else if (!strcmp(a, "--sprt") && has) {
			if (match_sprt_parse(&sprt, argv[++i], perr) < 0) {
				joseki_error("match: %s", perr);
				return 2;
			}
			opt.sprt = &sprt;
		} else if (!strcmp(a, "--games") && has) {
			if (parse_upto(&v, argv[++i], a, false, 1000000) < 0) return 2;
			opt.games = (int)v;
		} else if (!strcmp(a, "--concurrency") && has) {
			if (parse_upto(&v, argv[++i], a, false, MATCH_CONCURRENCY_MAX) < 0)
				return 2;
			opt.concurrency = (int)v;
		} else if (!strcmp(a, "--max-moves") && has) {
			if (parse_upto(&v, argv[++i], a, false, MATCH_MAX_MOVES_MAX) < 0) return 2;
			opt.max_moves = (int)v;
		} else if (!strcmp(a, "--seed") && has) {
			if (parse_num(&opt.seed, argv[++i], a, true) < 0) return 2;
		} else if (!strcmp(a, "--openings") && has) {
			openings_path = argv[++i];
		} else if (!strcmp(a, "--out") && has) {
			opt.out_dir = argv[++i];
		} else {
			joseki_error("match: unknown or incomplete argument '%s'\n%s", a, USAGE);
			return 2;
		}
	}
	if (!opt.side[0].engine || !opt.side[1].engine) {
		joseki_error("match: --engine-a and --engine-b are needed\n%s", USAGE);
		return 2;
	}
	if (nbudgets > 1 || (nbudgets && (ntc || nbyo))) {
		joseki_error("match: give one of --nodes, --movetime, or clocks (--tc, --byoyomi)");
		return 2;
	}
	if (ntc || nbyo) {
		opt.budget = (SearchBudget){.kind = SEARCH_BUDGET_CLOCK};
		for (int s = 0; s < 2; s++) {
			/* Given once: both sides'; twice: A's, then B's. */
			TimeControl *c = &opt.clock[s];
			if (ntc) *c = tc[s < ntc ? s : 0];
			if (nbyo) c->byoyomi_ms = byo[s < nbyo ? s : 0];
			if (c->inc_ms > 0 && c->byoyomi_ms > 0) {
				joseki_error(
				    "match: clock %c has both an increment and a byoyomi: give "
				    "one",
				    s ? 'B' : 'A');
				return 2;
			}
			if (c->main_ms + c->inc_ms + c->byoyomi_ms < 1) {
				joseki_error("match: clock %c gives no time", s ? 'B' : 'A');
				return 2;
			}
		}
	}
	for (int s = 0; s < 2; s++) {
		opt.side[s].options = uo[s];
		opt.side[s].noptions = nuo[s];
	}
	char err[MATCH_ERRLEN];
	char **openings = NULL;
	if (openings_path) {
		int n = cli_openings_read(&openings, openings_path, "match");
		if (n < 0) return 1;
		opt.openings = (const char *const *)openings;
		opt.nopenings = n;
	}
	if (!quiet && isatty(STDERR_FILENO)) opt.progress = stderr;
	match_stop_flag = 0;
	opt.cancel = &match_stop_flag;
	joseki_catch_stop(on_signal);

	MatchResult r;
	int rc = match_run(&r, &opt, err);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	int ret = 0;
	if (rc < 0) {
		joseki_error("match: %s", err);
		ret = 1;
	} else {
		if (match_stop_flag)
			joseki_error("match: interrupted after %d of %d games", r.played, r.ngames);
		ret = json ? print_json(&opt, &r) : (print_text(&opt, &r), 0);
		match_result_free(&r);
	}
	cli_openings_free(openings, opt.nopenings);
	return ret;
}
