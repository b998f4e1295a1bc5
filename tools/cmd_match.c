/*
 * joseki match --engine-a builtin|PATH --engine-b builtin|PATH
 *              [--book-a BOOK|none] [--book-b BOOK|none] [--games N]
 *              [--nodes N | --movetime MS] [--openings FILE] [--concurrency N]
 *              [--max-moves N] [--seed S] [--out DIR] [--option-a NAME=VALUE]...
 *              [--option-b NAME=VALUE]... [--json] [--quiet]
 *
 * Games between two engine set-ups (play/match.h, docs/match.md). Progress
 * on stderr when it is a terminal; at the end one summary line (or with
 * --json one object): W/D/L for A, score, Elo difference with its 95%
 * interval, average book plies of each side, where the CSA records went.
 * Ctrl-C / SIGTERM stop after the searches running; the finished games count.
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
	"[--book-a BOOK|none] [--book-b BOOK|none] [--games N] [--nodes N | --movetime MS] "       \
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

static int print_json(const MatchOptions *opt, const MatchResult *r)
{
	json_t *games = json_array();
	for (int i = 0; games && i < r->ngames; i++) {
		const MatchGame *g = &r->games[i];
		if (!g->played) continue;
		char csa[4096];
		if (opt->out_dir)
			snprintf(csa, sizeof csa, "%s/game-%04d.csa", opt->out_dir, i + 1);
		json_array_append_new(
		    games,
		    json_pack("{s:i, s:o, s:s, s:s, s:s, s:s, s:i, s:[i,i], s:i, s:o, s:o, s:o}",
		              "game", i + 1, "opening",
		              g->opening < 0 ? json_null() : json_integer(g->opening + 1),
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
		              opt->out_dir ? json_string(csa) : json_null()));
	}
	json_t *o = json_pack(
	    "{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:f, s:o, s:o, s:o, s:{s:f, s:f}, s:I, s:I, s:f, "
	    "s:o, s:o}",
	    "engine_a", r->name[0], "engine_b", r->name[1], "games", r->ngames, "played", r->played,
	    "wins", r->wins, "draws", r->draws, "losses", r->losses, "score", r->score, "elo",
	    elo_json(r->elo), "elo_low", elo_json(r->elo_low), "elo_high", elo_json(r->elo_high),
	    "book_plies", "a", r->book_plies[0], "b", r->book_plies[1], "engine_moves",
	    (json_int_t)r->engine_moves, "book_moves", (json_int_t)r->book_moves, "seconds",
	    r->seconds, "out", opt->out_dir ? json_string(opt->out_dir) : json_null(), "results",
	    games ? games : json_null());
	return joseki_print_json(o, 0) < 0 ? 1 : 0;
}

static void print_text(const MatchOptions *opt, const MatchResult *r)
{
	char elo[16], lo[16], hi[16];
	elo_text(elo, sizeof elo, r->elo);
	elo_text(lo, sizeof lo, r->elo_low);
	elo_text(hi, sizeof hi, r->elo_high);
	for (int i = 0; i < r->ngames; i++) {
		const MatchGame *g = &r->games[i];
		if (g->played && g->detail[0])
			printf("game %d: %s, %s\n", i + 1, match_end_name(g->end), g->detail);
	}
	printf("match A %s%s vs B %s%s: %d games, A +%d =%d -%d, score %.3f, elo %s [%s, %s] "
	       "(95%%), book plies A %.1f B %.1f, %s%s\n",
	       r->name[0], opt->side[0].book ? "+book" : "", r->name[1],
	       opt->side[1].book ? "+book" : "", r->played, r->wins, r->draws, r->losses, r->score,
	       elo, lo, hi, r->book_plies[0], r->book_plies[1],
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
	int nuo[2] = {0, 0}, nbudgets = 0;
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
		} else if (!strcmp(a, "--games") && has) {
			if (parse_num(&v, argv[++i], a, false) < 0) return 2;
			if (v > 1000000) {
				joseki_error("match: --games at most 1000000");
				return 2;
			}
			opt.games = (int)v;
		} else if (!strcmp(a, "--concurrency") && has) {
			if (parse_num(&v, argv[++i], a, false) < 0) return 2;
			if (v > MATCH_CONCURRENCY_MAX) {
				joseki_error("match: --concurrency at most %d",
				             MATCH_CONCURRENCY_MAX);
				return 2;
			}
			opt.concurrency = (int)v;
		} else if (!strcmp(a, "--max-moves") && has) {
			if (parse_num(&v, argv[++i], a, false) < 0) return 2;
			if (v > MATCH_MAX_MOVES_MAX) {
				joseki_error("match: --max-moves at most %d", MATCH_MAX_MOVES_MAX);
				return 2;
			}
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
	if (nbudgets > 1) {
		joseki_error("match: give one of --nodes, --movetime");
		return 2;
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
