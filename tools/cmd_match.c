/*
 * joseki match --engine-a builtin|PATH --engine-b builtin|PATH
 *              [--book-a BOOK|none] [--book-b BOOK|none] [--games N]
 *              [--nodes N | --movetime MS | --tc BASE[+INC] | --byoyomi MS]...
 *              [--time-margin MS] [--sprt ELO0,ELO1[,ALPHA,BETA]]
 *              [--openings FILE] [--concurrency N]
 *              [--nodes-jitter PCT] [--max-moves N] [--seed S] [--out DIR] [--option-a
 * NAME=VALUE]...
 *              [--option-b NAME=VALUE]... [--restart-engines] [--json] [--quiet]
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

#include "play/games.h"
#include "play/match.h"
#include "tools/cli_engines.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

static volatile sig_atomic_t match_stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	match_stop_flag = 1;
}

/* --tc (CliParseFn): A's, then B's. */
/* A MatchProgressFn: a line on stderr per report (games, score, rate, the
 * SPRT, the time left); nothing at "done". */
static void on_progress(void *ctx, const char *phase, const MatchProgress *p)
{
	(void)ctx;
	if (strcmp(phase, "game")) return;
	const MatchResult *r = p->res;
	double el = p->seconds;
	fprintf(stderr, "match: %d/%d games, A +%d =%d -%d, score %.3f, %.1f moves/s", p->done,
	        p->games, r->wins, r->draws, r->losses, r->played ? r->score : 0.0,
	        el > 0 ? (double)(r->engine_moves + r->book_moves) / el : 0.0);
	if (p->sprt)
		fprintf(stderr, ", LLR %.2f [%.2f, %.2f] after %d pairs", r->llr, r->llr_lower,
		        r->llr_upper, r->pairs.pairs);
	if (p->done > 0 && p->done < p->games && !p->decided)
		fprintf(stderr, ", eta %.0fs", el / p->done * (p->games - p->done));
	if (p->decided) fprintf(stderr, ", SPRT: %s", r->verdict == MATCH_SPRT_H1 ? "H1" : "H0");
	fputc('\n', stderr);
	fflush(stderr);
}

static int parse_tc(void *dst, char *value, char *msg)
{
	char err[MATCH_ERRLEN];
	if (match_tc_parse(dst, value, err) < 0) {
		snprintf(msg, CLI_MSGLEN, "%s", err);
		return -1;
	}
	return 0;
}

static int parse_sprt(void *dst, char *value, char *msg)
{
	char err[MATCH_ERRLEN];
	if (match_sprt_parse(dst, value, err) < 0) {
		snprintf(msg, CLI_MSGLEN, "%s", err);
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
		    "end", game_end_name(g->end), "winner",
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
		    o, "exit_evals",
		    json_pack("[o,o]",
		              g->has_exit_eval[0] ? json_integer(g->exit_eval[0]) : json_null(),
		              g->has_exit_eval[1] ? json_integer(g->exit_eval[1]) : json_null()));
		json_object_set_new(
		    o, "time_ms",
		    json_pack("[I,I]", (json_int_t)g->time_ms[0], (json_int_t)g->time_ms[1]));
		json_object_set_new(o, "clock_ms",
		                    clocked ? json_pack("[I,I]", (json_int_t)g->clock_ms[0],
		                                        (json_int_t)g->clock_ms[1])
		                            : json_null());
		json_t *ec = json_array();
		for (int s = 0; s < 2; s++)
			json_array_append_new(
			    ec, clocked && g->exit_clock_ms[s][0] >= 0
			            ? json_pack("[I,I]", (json_int_t)g->exit_clock_ms[s][0],
			                        (json_int_t)g->exit_clock_ms[s][1])
			            : json_null());
		json_object_set_new(o, "exit_clock_ms", ec);
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
	json_object_set_new(o, "nodes_jitter", json_integer(opt->nodes_jitter));
	json_object_set_new(o, "exit_plies",
	                    json_pack("{s:o, s:o}", "a", exit_json(r, 0), "b", exit_json(r, 1)));
	json_t *ee = json_object();
	for (int s = 0; s < 2; s++) {
		const MatchExitEval *e = &r->exit_eval[s];
		json_object_set_new(ee, s ? "b" : "a",
		                    e->n ? json_pack("{s:i, s:f, s:f}", "games", e->n, "mean",
		                                     round(e->mean * 10) / 10, "se",
		                                     round(e->se * 10) / 10)
		                         : json_null());
	}
	json_object_set_new(ee, "gain",
	                    r->exit_eval[0].n && r->exit_eval[1].n
	                        ? json_pack("{s:f, s:f}", "mean", round(r->exit_gain * 10) / 10,
	                                    "se", round(r->exit_gain_se * 10) / 10)
	                        : json_null());
	json_object_set_new(o, "exit_evals", ee);
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

/* Fewer games than this: the interval is said to say little. */
#define MATCH_FEW_GAMES 10

static void print_text(const MatchOptions *opt, const MatchResult *r)
{
	char elo[16], lo[16], hi[16], pairs[160] = "", sprt[96] = "", ex[2][48];
	elo_text(elo, sizeof elo, r->elo);
	elo_text(lo, sizeof lo, r->elo_low);
	elo_text(hi, sizeof hi, r->elo_high);
	for (int i = 0; i < r->ngames; i++) {
		const MatchGame *g = &r->games[i];
		if (g->played && g->detail[0])
			printf("game %d: %s, %s\n", i + 1, game_end_name(g->end), g->detail);
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
	char gain[96] = "";
	if (r->exit_eval[0].n && r->exit_eval[1].n)
		snprintf(gain, sizeof gain,
		         ", exit eval A %+.0f B %+.0f: gain %+.0f [%+.0f, %+.0f] cp (95%%)",
		         r->exit_eval[0].mean, r->exit_eval[1].mean, r->exit_gain,
		         r->exit_gain - 1.96 * r->exit_gain_se,
		         r->exit_gain + 1.96 * r->exit_gain_se);
	/* No game, no figure (it said "score 0.000, elo +0 [+0, +0]"). */
	char score[16] = "-";
	if (r->played)
		snprintf(score, sizeof score, "%.3f", r->score);
	else
		strcpy(elo, "-"), strcpy(lo, "-"), strcpy(hi, "-");
	printf("match A %s%s vs B %s%s: %d games, A +%d =%d -%d, score %s, elo %s [%s, %s] "
	       "(95%%)%s%s, book plies A %.1f B %.1f, exit ply A %s B %s%s, %s%s\n",
	       r->name[0], opt->side[0].book ? "+book" : "", r->name[1],
	       opt->side[1].book ? "+book" : "", r->played, r->wins, r->draws, r->losses, score,
	       elo, lo, hi, pairs, sprt, r->book_plies[0], r->book_plies[1], ex[0], ex[1], gain,
	       opt->out_dir ? "games in " : "games not written", opt->out_dir ? opt->out_dir : "");
}

void joseki_openings_note(const char *cmd, const char *path, const char *const *openings, int n)
{
	int a, b, same = match_openings_repeated(openings, n, &a, &b);
	if (same <= 0) return;
	joseki_error("%s: --openings: %d of the %d openings of %s reach the position an earlier "
	             "one reaches (the first: opening %d, as opening %d): they play its games "
	             "again, so the games are fewer than they look",
	             cmd, same, n, path, b + 1, a + 1);
}

int cmd_match(int argc, char **argv)
{
	MatchOptions opt = {
	    .games = 2, .concurrency = 1, .budget = {.kind = SEARCH_BUDGET_NODES, .amount = 10000}};
	UsiOption uo[2][CLI_MAX_USI_OPTIONS];
	int nuo[2] = {0, 0}, ntc = 0, nbyo = 0;
	TimeControl tc[2] = {{0}};
	int64_t byo[2] = {0, 0};
	MatchSprt sprt;
	opt.time_margin_ms = MATCH_TIME_MARGIN_DEFAULT;
	UsiEngineConfig usi;
	usi_engine_config_init(&usi);
	cli_usi_notices(&usi, "match");
	opt.usi = &usi;
	const char *openings_path = NULL, *book[2] = {NULL, NULL};
	bool json = false, quiet = false, restart = false;
	int kind = -1; /* the kind of --nodes or --movetime when given */
	bool sprt_on = false;
	const CliOpt opts[] = {
	    CLI_STR("--engine-a", &opt.side[0].engine, "builtin|PATH", "A's engine",
	            .required = true),
	    CLI_STR("--engine-b", &opt.side[1].engine, "builtin|PATH", "B's engine",
	            .required = true),
	    CLI_STR("--book-a", &book[0], "BOOK|none",
	            "A plays from this book while it can (default: none)"),
	    CLI_STR("--book-b", &book[1], "BOOK|none",
	            "B plays from this book while it can (default: none)"),
	    CLI_NUM("--games", &opt.games, 1, 1000000, "N", "games, in pairs (default 2)"),
	    CLI_NUM("--nodes", &opt.budget.amount, 1, CLI_NOMAX, "N",
	            "nodes a move (default 10000)", CLI_TAG(&kind, SEARCH_BUDGET_NODES),
	            .excl = "budget"),
	    CLI_NUM("--nodes-jitter", &opt.nodes_jitter, 0, 50, "PCT",
	            "each search's nodes drawn within ±PCT% of --nodes (from the seed; default 0)",
	            .needs = "--nodes"),
	    CLI_NUM("--movetime", &opt.budget.amount, 1, CLI_NOMAX, "MS",
	            "milliseconds a move (instead of the default --nodes)",
	            CLI_TAG(&kind, SEARCH_BUDGET_MOVETIME), .excl = "budget"),
	    CLI_FN("--tc", tc, parse_tc, "BASE[+INC]", "a time control",
	           "clocks: main time and increment (given twice: A's, then B's; default: no "
	           "clocks)",
	           CLI_MANY(&ntc, 2)),
	    CLI_NUM("--byoyomi", byo, 0, MATCH_TIME_MAX_MS, "MS",
	            "clocks: byoyomi (given twice: A's, then B's; default: none)",
	            CLI_MANY(&nbyo, 2)),
	    CLI_NUM("--time-margin", &opt.time_margin_ms, 0, 600000, "MS",
	            "clocks: how far past its clock a move may end before the side loses on "
	            "time (default 100)"),
	    CLI_FN("--sprt", &sprt, parse_sprt, "ELO0,ELO1[,ALPHA,BETA]", "ELO0,ELO1[,ALPHA,BETA]",
	           "stop at the SPRT's verdict (default: play every game)",
	           CLI_TAG(&sprt_on, true)),
	    CLI_STR("--openings", &openings_path, "FILE",
	            "the openings, each played both ways (default: the start position)"),
	    CLI_NUM("--concurrency", &opt.concurrency, 1, MATCH_CONCURRENCY_MAX, "N",
	            "games played side by side (default 1)"),
	    CLI_NUM("--max-moves", &opt.max_moves, 1, MATCH_MAX_MOVES_MAX, "N",
	            "a game is a draw after N moves (default 320)"),
	    CLI_NUM("--seed", &opt.seed, 0, CLI_NOMAX, "S", "the openings' order (default 0)"),
	    CLI_STR("--out", &opt.out_dir, "DIR",
	            "write each game's CSA record into DIR (default: none written)"),
	    CLI_FN("--option-a", uo[0], cli_usi_option, "NAME=VALUE", "NAME=VALUE",
	           "a USI option for A's engine, repeatable (default: none)",
	           CLI_MANY(&nuo[0], CLI_MAX_USI_OPTIONS)),
	    CLI_FN("--option-b", uo[1], cli_usi_option, "NAME=VALUE", "NAME=VALUE",
	           "a USI option for B's engine, repeatable (default: none)",
	           CLI_MANY(&nuo[1], CLI_MAX_USI_OPTIONS)),
	    CLI_FLAG("--restart-engines", &restart,
	             "a new process for every game (engines whose state outlives usinewgame)"),
	    CLI_JSON(&json),
	    CLI_QUIET(&quiet),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"match", opts, "docs/match.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	for (int s = 0; s < 2; s++)
		opt.side[s].book = book[s] && strcmp(book[s], "none") ? book[s] : NULL;
	if (kind >= 0 && (ntc || nbyo))
		return cli_usage_error(
		    &cmd, "give only one of --nodes, --movetime, or clocks (--tc, --byoyomi)");
	if (kind >= 0) opt.budget.kind = (SearchBudgetKind)kind;
	if (sprt_on) opt.sprt = &sprt;
	if (ntc || nbyo) {
		opt.budget = (SearchBudget){.kind = SEARCH_BUDGET_CLOCK};
		for (int s = 0; s < 2; s++) {
			/* Given once: both sides'; twice: A's, then B's. */
			TimeControl *c = &opt.clock[s];
			if (ntc) *c = tc[s < ntc ? s : 0];
			if (nbyo) c->byoyomi_ms = byo[s < nbyo ? s : 0];
			if (c->inc_ms > 0 && c->byoyomi_ms > 0)
				return cli_usage_error(
				    &cmd, "clock %c has both an increment and a byoyomi: give one",
				    s ? 'B' : 'A');
			if (c->main_ms + c->inc_ms + c->byoyomi_ms < 1)
				return cli_usage_error(&cmd, "clock %c gives no time",
				                       s ? 'B' : 'A');
		}
	}
	for (int s = 0; s < 2; s++) {
		opt.side[s].options = uo[s];
		opt.side[s].noptions = nuo[s];
		opt.side[s].restart = restart;
	}
	char err[MATCH_ERRLEN];
	char **openings = NULL;
	if (openings_path) {
		int n = match_openings_read(&openings, openings_path, err);
		if (n < 0) {
			joseki_error("match: --openings: %s", err);
			return 1;
		}
		opt.openings = (const char *const *)openings;
		opt.nopenings = n;
		if (!quiet) joseki_openings_note("match", openings_path, opt.openings, n);
	}
	if (!quiet && isatty(STDERR_FILENO)) opt.progress = on_progress;
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
		fflush(stdout); /* (the notes below after it, where both go to one file) */
		/* The interval and LOS come from the games' own spread: a few games
		 * give one of no width (two draws: elo +0 [+0, +0]), not certainty. */
		if (r.played == 0)
			joseki_error("match: no game was played: no result");
		else if (r.played < MATCH_FEW_GAMES)
			joseki_error(
			    "match: %d game%s: too few for the interval and LOS to say much "
			    "(they come from the games' own spread); play %d or more",
			    r.played, r.played == 1 ? "" : "s", 10 * MATCH_FEW_GAMES);
		/* A book that gave no move in any game checked nothing. */
		for (int sd = 0; sd < 2; sd++)
			if (opt.side[sd].book && r.played > 0 && r.book_plies[sd] == 0)
				joseki_error("match: %c's book %s gave no move in any game: the "
				             "openings lie outside it (query it on an opening's "
				             "position; docs/match.md)",
				             'A' + sd, book[sd]);
		/* ... or none in every game of one colour: half the games then
		 * measured nothing of it, which the means above do not show (the
		 * other side's first moves all went outside it). */
		for (int sd = 0; sd < 2; sd++) {
			if (!opt.side[sd].book || r.book_plies[sd] == 0) continue;
			for (int col = BLACK; col <= WHITE; col++) {
				int games = 0, used = 0;
				for (int i = 0; i < r.ngames; i++) {
					const MatchGame *g = &r.games[i];
					Color mine = sd == 0 ? g->a_color : (Color)(g->a_color ^ 1);
					if (!g->played || (int)mine != col) continue;
					games++;
					used += g->book_plies[sd] > 0;
				}
				if (games > 0 && used == 0)
					joseki_error(
					    "match: %c's book %s gave no move in any of its %d "
					    "game%s as %s: those games measured its engine alone "
					    "(%s)",
					    'A' + sd, book[sd], games, games == 1 ? "" : "s",
					    col == BLACK ? "Black" : "White",
					    col == WHITE && !opt.nopenings
					        ? "the other side's first moves lie outside it"
					        : "the positions it met lie outside it");
			}
		}
		match_result_free(&r);
	}
	match_openings_free(openings, opt.nopenings);
	return ret;
}
