/*
 * joseki extend BOOK GAMES... [--plies N] [--book-side black|white] [--book-player STR]
 * joseki prune BOOK GAMES... [--max-winrate R] [--min-games N] [--book-side ...]
 *              [--book-player STR] | joseki prune BOOK --undo
 * joseki cycle BOOK --generations G --games N [match options] [think options]
 *
 * Shiba's extension/deletion cycle (play/cycle.h, docs/bookgen.md "The
 * cycle"). extend queues, as roots in the book that think takes first, where
 * the book side's book ran out in the games and the next plies; prune marks as
 * avoided the book moves after which the book side scored too little; cycle
 * runs match → prune → extend → think → minimax G times, one line a
 * generation, resumable after Ctrl-C. GAMES are CSA files or directories of
 * them (as match --out writes).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bookdb/bookdb.h"
#include "play/cycle.h"
#include "bookgen/selector.h"
#include "minimax/bookmm.h"
#include "shogi/position.h"
#include "tools/cli_engines.h"
#include "tools/cli_games.h"
#include "tools/cli_plan.h"
#include "tools/commands.h"

#define EXTEND_USAGE                                                                               \
	"usage: joseki extend BOOK GAMES... [--plies N] [--book-side black|white] "                \
	"[--book-player STR]"
#define PRUNE_USAGE                                                                                \
	"usage: joseki prune BOOK GAMES... [--max-winrate R] [--min-games N] "                     \
	"[--book-side black|white] [--book-player STR] | joseki prune BOOK --undo"
#define CYCLE_USAGE                                                                                \
	"usage: joseki cycle BOOK --generations G --games N [--opponent builtin|PATH] "            \
	"[--nodes N] [--openings FILE] [--concurrency N] [--max-moves N] [--seed S] "              \
	"[--engine builtin|PATH] [--engines N] [--usi-option NAME=VALUE]... "                      \
	"[--think-nodes N] [--positions N] [--time S] [--multipv K] [--plies N] "                  \
	"[--max-winrate R] [--min-games N] [--probe] [--quiet] " CLI_PLAN_USAGE

static int parse_count(long *out, const char *s, const char *cmd, const char *opt, long max)
{
	char *end;
	long v = s ? strtol(s, &end, 10) : -1;
	if (!s || !*s || *end || v < 0 || v > max) {
		joseki_error("%s: %s wants a number from 0 to %ld, not '%s'", cmd, opt, max,
		             s ? s : "");
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_rate(double *out, const char *s, const char *cmd)
{
	char *end;
	double v = s ? strtod(s, &end) : -1;
	if (!s || !*s || *end || !(v >= 0 && v <= 1)) {
		joseki_error("%s: --max-winrate wants a rate from 0 to 1, not '%s'", cmd,
		             s ? s : "");
		return -1;
	}
	*out = v;
	return 0;
}

/* extend and prune: BOOK GAMES... and their options; prune --undo. */
static int games_cmd(int argc, char **argv, bool prune)
{
	const char *cmd = prune ? "prune" : "extend", *usage = prune ? PRUNE_USAGE : EXTEND_USAGE;
	const char *book = NULL, *player = NULL;
	char **paths = calloc((size_t)argc, sizeof *paths);
	int npaths = 0, ret = 2, side = -1;
	bool undo = false;
	long plies = 8, min_games = 2;
	CyclePruneOptions po = {.max_winrate = 0.30};
	BookDB *db = NULL;
	CliGames g = {0};
	char err[CYCLE_ERRLEN], berr[BOOKDB_ERRLEN];
	if (!paths) return 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool ok = true;
		if (!strcmp(a, "--book-side")) {
			ok = v && (!strcmp(v, "black") || !strcmp(v, "white"));
			side = ok && v[0] == 'w' ? WHITE : BLACK;
			i++;
		} else if (!strcmp(a, "--book-player")) {
			ok = v && *v;
			player = v;
			i++;
		} else if (!prune && !strcmp(a, "--plies")) {
			ok = parse_count(&plies, v, cmd, a, POS_MAX_STATES) == 0;
			i++;
		} else if (prune && !strcmp(a, "--min-games")) {
			ok = parse_count(&min_games, v, cmd, a, 1000000000) == 0;
			i++;
		} else if (prune && !strcmp(a, "--max-winrate")) {
			ok = parse_rate(&po.max_winrate, v, cmd) == 0;
			i++;
		} else if (prune && !strcmp(a, "--undo")) {
			undo = true;
		} else if (a[0] == '-' && a[1]) {
			ok = false;
		} else if (!book)
			book = a;
		else
			paths[npaths++] = (char *)a;
		if (!ok) {
			joseki_error("%s: bad or incomplete option '%s'\n%s", cmd, a, usage);
			goto out;
		}
	}
	if (!book || (undo ? npaths > 0 : npaths == 0)) {
		joseki_error("%s", usage);
		goto out;
	}
	shogi_init();
	ret = 1;
	for (int i = 0; i < npaths; i++)
		if (cli_games_read(&g, paths[i], side, player, cmd) < 0) goto out;
	/* A missing book is an error, not a new empty book. */
	BookDBOptions existing = {.must_exist = true};
	if (bookdb_open(&db, book, &existing, berr) < 0) {
		db = NULL;
		joseki_error("%s: %s", cmd, berr);
		goto out;
	}
	po.min_games = (uint32_t)min_games;
	CyclePruneStats ps;
	CycleExtendStats es;
	size_t cleared;
	int rc = undo    ? cycle_prune_undo(&cleared, db, err)
	         : prune ? cycle_prune(&ps, db, g.games, g.n, &po, err)
	                 : cycle_extend(&es, db, g.games, g.n, (int)plies, err);
	if (rc < 0) {
		joseki_error("%s: %s: %s", cmd, book, err);
		goto out;
	}
	if (undo)
		printf("prune undo cleared %zu\n", cleared);
	else if (prune)
		printf("prune games %zu skipped %zu moves %zu marked %zu avoided %zu\n", ps.games,
		       g.skipped, ps.moves, ps.marked, ps.avoided);
	else
		printf("extend games %zu skipped %zu ran_out %zu queued %zu pending %zu\n",
		       es.games, g.skipped, es.ran_out, es.queued, es.pending);
	ret = 0;
out:
	bookdb_free(db);
	cli_games_free(&g);
	free(paths);
	return ret;
}

int cmd_extend(int argc, char **argv)
{
	return games_cmd(argc, argv, false);
}

int cmd_prune(int argc, char **argv)
{
	return games_cmd(argc, argv, true);
}

/* ---- cycle ---- */

static volatile sig_atomic_t cycle_stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	cycle_stop_flag = 1;
}

static void on_generation(void *ctx, const CycleGenStats *g)
{
	(void)ctx;
	printf("cycle generation %d games %d score %.3f (+%d =%d -%d) queued %zu thought %llu "
	       "avoided_new %zu avoided %zu%s\n",
	       g->generation, g->games, g->score, g->wins, g->draws, g->losses, g->queued,
	       (unsigned long long)g->thought, g->marked, g->avoided,
	       g->resumed ? " (resumed)" : "");
	fflush(stdout);
}

static void on_step(void *ctx, int gen, const char *step)
{
	if (*(bool *)ctx) {
		fprintf(stderr, "\rcycle: generation %d: %-8s", gen, step);
		fflush(stderr);
	}
}

int cmd_cycle(int argc, char **argv)
{
	const char *book = NULL, *opponent = "builtin", *openings_path = NULL,
	           *engine_path = "builtin";
	enum { MAX_ENGINES = 256, MAX_OPTIONS = 64 };
	UsiOption uopts[MAX_OPTIONS];
	int nuopts = 0;
	long nengines = 1;
	long generations = 0, games = 0, nodes = 10000, concurrency = 1, max_moves = 0, seed = 0;
	long think_nodes = 10000, positions = 0, seconds = 0, multipv = 4, plies = 8, min_games = 2;
	double max_winrate = 0.30;
	bool quiet = false, probe = false;
	CliPlan cp;
	cli_plan_init(&cp);
	const struct {
		const char *name;
		long *dst, max;
	} NUMS[] = {
	    {"--generations", &generations, 100000},
	    {"--games", &games, 1000000},
	    {"--nodes", &nodes, 1000000000},
	    {"--concurrency", &concurrency, 64},
	    {"--max-moves", &max_moves, 1000},
	    {"--seed", &seed, 1L << 30},
	    {"--think-nodes", &think_nodes, 1000000000},
	    {"--positions", &positions, 1000000000},
	    {"--time", &seconds, 100000000},
	    {"--multipv", &multipv, SEARCH_MULTIPV_MAX},
	    {"--plies", &plies, POS_MAX_STATES},
	    {"--min-games", &min_games, 1000000000},
	    {"--engines", &nengines, MAX_ENGINES},
	};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		size_t k;
		int taken = cli_plan_arg(&cp, argc, argv, &i, "cycle");
		if (taken < 0) return 2;
		if (taken) continue;
		for (k = 0; k < sizeof NUMS / sizeof *NUMS; k++)
			if (!strcmp(a, NUMS[k].name)) break;
		if (k < sizeof NUMS / sizeof *NUMS) {
			if (parse_count(NUMS[k].dst, v, "cycle", a, NUMS[k].max) < 0) return 2;
			i++;
		} else if (!strcmp(a, "--max-winrate")) {
			if (parse_rate(&max_winrate, v, "cycle") < 0) return 2;
			i++;
		} else if ((!strcmp(a, "--opponent") || !strcmp(a, "--openings")) && v) {
			*(a[3] == 'p' && a[4] == 'p' ? &opponent : &openings_path) = v;
			i++;
		} else if (!strcmp(a, "--engine") && v) {
			engine_path = v;
			i++;
		} else if (!strcmp(a, "--usi-option") && v) {
			if (cli_usi_option(uopts, &nuopts, MAX_OPTIONS, argv[++i], "cycle", a) < 0)
				return 2;
		} else if (!strcmp(a, "--quiet"))
			quiet = true;
		else if (!strcmp(a, "--probe"))
			probe = true;
		else if (a[0] == '-' && a[1]) {
			joseki_error("cycle: unknown or incomplete option '%s'\n" CYCLE_USAGE, a);
			return 2;
		} else if (!book)
			book = a;
		else {
			joseki_error("cycle: unexpected argument '%s'\n" CYCLE_USAGE, a);
			return 2;
		}
	}
	if (!book || generations < 1 || games < 1 || nodes < 1 || think_nodes < 1 ||
	    concurrency < 1 || multipv < 1 || nengines < 1) {
		joseki_error(
		    "cycle: BOOK, --generations >= 1 and --games >= 1 are needed\n" CYCLE_USAGE);
		return 2;
	}
	if (cli_plan_check(&cp, "cycle") < 0) return 2;
	if (!positions && !seconds) positions = 100;
	shogi_init();
	char **openings = NULL;
	int nopenings = 0, ret = 1, rc;
	char err[CYCLE_ERRLEN > MATCH_ERRLEN ? CYCLE_ERRLEN : MATCH_ERRLEN];
	if (openings_path && (nopenings = cli_openings_read(&openings, openings_path, "cycle")) < 0)
		return 1;
	/* Think's roots: --roots / --roots-from-games, else the openings. */
	RootList roots = {0};
	if (cp.roots_file || cp.from_games) {
		BookDB *db = NULL;
		char berr[BOOKDB_ERRLEN];
		if (bookdb_open(&db, book, NULL, berr) < 0) {
			joseki_error("cycle: %s", berr);
			cli_openings_free(openings, nopenings);
			return 1;
		}
		rc = cli_plan_roots(&cp, &roots, db, quiet, "cycle");
		bookdb_free(db);
		if (rc < 0) {
			cli_openings_free(openings, nopenings);
			return 1;
		}
	}
	SearchEngine *engines[MAX_ENGINES] = {0}, *opponents[MAX_ENGINES] = {0};
	cycle_stop_flag = 0;
	joseki_catch_stop(on_signal);
	if (cli_open_engines(engines, (int)nengines, engine_path, uopts, nuopts, &cycle_stop_flag,
	                     "cycle") < 0)
		goto done;
	/* --probe: think walks the opponent's lines, the opponent asked as the
	 * match asks it (its engine, the match's budget). */
	if (probe && cli_open_engines(opponents, (int)nengines, opponent, NULL, 0, &cycle_stop_flag,
	                              "cycle --probe") < 0)
		goto done;
	bool progress = !quiet && isatty(2);
	CycleOptions opt = {
	    .book = book,
	    .generations = (int)generations,
	    .match =
	        {
	            /* The book side plays (out of book) with the engine think uses. */
	            .side = {{.engine = engine_path, .options = uopts, .noptions = nuopts},
	                     {.engine = opponent}},
	            .games = (int)games,
	            .budget = {.kind = SEARCH_BUDGET_NODES, .amount = (uint64_t)nodes},
	            .openings = (const char *const *)openings,
	            .nopenings = nopenings,
	            .concurrency = (int)concurrency,
	            .max_moves = (int)max_moves,
	            .seed = (uint64_t)seed,
	        },
	    .prune = {.max_winrate = max_winrate, .min_games = (uint32_t)min_games},
	    .plies = (int)plies,
	    .think =
	        {
	            .engines = engines,
	            .nengines = (int)nengines,
	            .budget = {.kind = SEARCH_BUDGET_NODES, .amount = (uint64_t)think_nodes},
	            .multipv = (int)multipv,
	            .max_positions = (uint64_t)positions,
	            .max_seconds = (double)seconds,
	            .stop = &cycle_stop_flag,
	            .kif_bonus = SEL_KIF_BONUS_DEFAULT,
	            /* The selector searches from the roots given, else from the
	               openings the games start from. */
	            .roots = (const char *const *)(roots.n ? roots.specs : openings),
	            .root_weights = roots.n ? roots.weights : NULL,
	            .nroots = roots.n ? (int)roots.n : nopenings,
	            .plan = cp.plan,
	        },
	    .probe = {.opponents = probe ? opponents : NULL,
	              .opp_budget = {.kind = SEARCH_BUDGET_NODES, .amount = (uint64_t)nodes},
	              .book_side = cp.plan.book_side},
	    .minimax = bookmm_hook(NULL),
	    .stop = &cycle_stop_flag,
	    .on_generation = on_generation,
	    .on_step = on_step,
	    .ctx = &progress,
	};
	int done;
	bool stopped;
	rc = cycle_run(&done, &stopped, &opt, err);
	if (progress) fputs("\r\033[K", stderr);
	if (rc < 0) {
		joseki_error("cycle: %s: %s", book, err);
		goto done;
	}
	printf("cycle generations %d of %ld%s\n", done, generations,
	       stopped ? " (stopped: run the same command to resume)" : "");
	ret = 0;
done:
	for (int i = 0; i < MAX_ENGINES; i++) {
		search_free(engines[i]);
		search_free(opponents[i]);
	}
	cli_openings_free(openings, nopenings);
	roots_free(&roots);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	return ret;
}
