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
#include "play/games.h"
#include "bookgen/selector.h"
#include "minimax/bookmm.h"
#include "shogi/position.h"
#include "tools/cli_engines.h"
#include "tools/cli_plan.h"
#include "tools/commands.h"

/* extend and prune: BOOK GAMES... and their options; prune --undo. */
static int games_cmd(int argc, char **argv, bool prune)
{
	static const int SIDES[] = {BLACK, WHITE};
	const char *book = NULL, *player = NULL;
	CliArgs paths = {0};
	int ret = 2, side = -1;
	bool undo = false;
	uint64_t plies = 8, min_games = 2;
	CyclePruneOptions po = {.max_winrate = 0.30};
	BookDB *db = NULL;
	CycleGameList g = {0};
	char err[CYCLE_ERRLEN], berr[BOOKDB_ERRLEN];
	const CliOpt common[] = {
	    CLI_ARG("BOOK", &book, "the book"),
	    CLI_REST("GAMES", &paths, !prune, "CSA files or directories of them (match --out)"),
	    CLI_ENUM("--book-side", &side, "black|white", SIDES,
	             "the book's side in every game (default: by --book-player)"),
	    CLI_STR("--book-player", &player, "STR",
	            "the book's side is the player whose name holds STR (default +book)", .lo = 1),
	    CLI_TABLE_END,
	};
	const CliOpt extend_opts[] = {
	    CLI_GROUP(common),
	    CLI_NUM("--plies", &plies, 0, POS_MAX_STATES, "N",
	            "queue the N plies after the book ran out too (default 8)"),
	    CLI_TABLE_END,
	};
	const CliOpt prune_opts[] = {
	    CLI_GROUP(common),
	    CLI_REAL("--max-winrate", &po.max_winrate, 0, 1, "R",
	             "mark the moves after which the book scored at most R (default 0.30)"),
	    CLI_NUM("--min-games", &min_games, 0, 1000000000, "N",
	            "... over at least N games (default 2)"),
	    CLI_FLAG("--undo", &undo, "clear every mark prune made (no GAMES)"),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {prune ? "prune" : "extend", prune ? prune_opts : extend_opts,
	                    "docs/cycle.md"};
	const char *name = cmd.name;
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	if (undo ? paths.n > 0 : paths.n == 0)
		return cli_usage_error(&cmd, undo ? "--undo takes no GAMES" : "no GAMES given");
	shogi_init();
	ret = 1;
	for (size_t i = 0; i < paths.n; i++)
		if (cycle_game_list_read(&g, paths.v[i], side, player, err) < 0) {
			joseki_error("%s: %s", name, err);
			goto out;
		}
	/* A missing book is an error, not a new empty book. */
	BookDBOptions existing = {.must_exist = true};
	if (bookdb_open(&db, book, &existing, berr) < 0) {
		db = NULL;
		joseki_error("%s: %s", name, berr);
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
		joseki_error("%s: %s: %s", name, book, err);
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
	cycle_game_list_free(&g);
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
	enum { MAX_ENGINES = 256 };
	const char *book = NULL, *opponent = "builtin", *openings_path = NULL;
	uint64_t generations = 0, games = 0, nodes = 10000, concurrency = 1, max_moves = 0,
	         seed = 0;
	uint64_t think_nodes = 10000, positions = 0, seconds = 0, plies = 8, min_games = 2;
	int multipv = 4;
	double max_winrate = 0.30;
	bool quiet = false, probe = false, restart = false;
	CliEngines ce;
	cli_engines_init(&ce, MAX_ENGINES, NULL);
	UsiOption oppo[CLI_MAX_USI_OPTIONS];
	int noppo = 0;
	CliPlan cp;
	cli_plan_init(&cp);
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book"),
	    CLI_NUM("--generations", &generations, 1, 100000, "G", "generations to run",
	            .required = true),
	    CLI_NUM("--games", &games, 1, 1000000, "N", "match games a generation",
	            .required = true),
	    CLI_STR("--opponent", &opponent, "builtin|PATH",
	            "the match's opponent (default builtin)"),
	    CLI_FN("--opponent-option", oppo, cli_usi_option, "NAME=VALUE", "NAME=VALUE",
	           "a USI option for the opponent's engine, repeatable (default: none)",
	           CLI_MANY(&noppo, CLI_MAX_USI_OPTIONS)),
	    CLI_NUM("--nodes", &nodes, 1, 1000000000, "N",
	            "the match's nodes a move (default 10000)"),
	    CLI_STR("--openings", &openings_path, "FILE",
	            "the match's openings (and think's roots unless given; default: the start "
	            "position)"),
	    CLI_NUM("--concurrency", &concurrency, 1, 64, "N",
	            "games played side by side (default 1)"),
	    CLI_NUM("--max-moves", &max_moves, 0, 1000, "N",
	            "a game is a draw after N moves (default 320)"),
	    CLI_NUM("--seed", &seed, 0, 1L << 30, "S", "the match's openings order (default 0)"),
	    CLI_GROUP(ce.table),
	    CLI_NUM("--think-nodes", &think_nodes, 1, 1000000000, "N",
	            "think's nodes a position (default 10000)"),
	    CLI_NUM("--positions", &positions, 0, 1000000000, "N",
	            "positions think adds a generation (default 100)"),
	    CLI_NUM("--time", &seconds, 0, 100000000, "S",
	            "think's seconds a generation (default: no limit)"),
	    CLI_NUM("--multipv", &multipv, 1, SEARCH_MULTIPV_MAX, "K",
	            "think's best moves a position (default 4)"),
	    CLI_NUM("--plies", &plies, 0, POS_MAX_STATES, "N",
	            "extend: the plies queued after the book ran out (default 8)"),
	    CLI_REAL("--max-winrate", &max_winrate, 0, 1, "R",
	             "prune: the book's score below which a move is avoided (default 0.30)"),
	    CLI_NUM("--min-games", &min_games, 0, 1000000000, "N",
	            "prune: ... over at least N games (default 2)"),
	    CLI_FLAG("--probe", &probe, "think walks the opponent's lines (think --opponent)"),
	    CLI_FLAG("--restart-engines", &restart,
	             "the match's engines and the probe's opponents: a new process every game"),
	    CLI_QUIET(&quiet),
	    CLI_GROUP(cp.table),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"cycle", opts, "docs/cycle.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	int nengines = (int)ce.n;
	if (!positions && !seconds) positions = 100;
	shogi_init();
	char **openings = NULL;
	int nopenings = 0, ret = 1, rc;
	char err[CYCLE_ERRLEN > MATCH_ERRLEN ? CYCLE_ERRLEN : MATCH_ERRLEN];
	if (openings_path && (nopenings = match_openings_read(&openings, openings_path, err)) < 0) {
		joseki_error("cycle: --openings: %s", err);
		return 1;
	}
	/* Think's roots: --roots / --roots-from-games, else the openings; and
	 * the way to them, thought first. */
	RootList roots = {0}, paths = {0};
	if (cp.roots_file || cp.from_games) {
		BookDB *db = NULL;
		char berr[BOOKDB_ERRLEN];
		if (bookdb_open(&db, book, NULL, berr) < 0) {
			joseki_error("cycle: %s", berr);
			match_openings_free(openings, nopenings);
			return 1;
		}
		rc = cli_plan_roots(&cp, &roots, db, quiet, "cycle", &paths);
		bookdb_free(db);
		if (rc < 0) {
			match_openings_free(openings, nopenings);
			roots_free(&roots);
			roots_free(&paths);
			return 1;
		}
	} else if (nopenings && !cp.roots_only) {
		RootList ol = {.specs = openings, .n = (size_t)nopenings};
		char rerr[ROOTS_ERRLEN];
		if (roots_paths_of_specs(&paths, &ol, rerr) < 0) {
			joseki_error("cycle: --openings: %s", rerr);
			match_openings_free(openings, nopenings);
			roots_free(&paths);
			return 1;
		}
	}
	SearchEngine *engines[MAX_ENGINES] = {0}, *opponents[MAX_ENGINES] = {0};
	cycle_stop_flag = 0;
	joseki_catch_stop(on_signal);
	if (cli_open_engines(engines, nengines, ce.path, ce.opts, ce.nopts, false, &cycle_stop_flag,
	                     "cycle") < 0)
		goto done;
	/* --probe: think walks the opponent's lines, the opponent asked as the
	 * match asks it (its engine, the match's budget). */
	if (probe && cli_open_engines(opponents, nengines, opponent, oppo, noppo, restart,
	                              &cycle_stop_flag, "cycle --probe") < 0)
		goto done;
	bool progress = !quiet && isatty(2);
	BookMinimaxHook line_hook = bookmm_hook(NULL);
	CycleOptions opt = {
	    .book = book,
	    .generations = (int)generations,
	    .match =
	        {
	            /* The book side plays (out of book) with the engine think uses. */
	            .side = {{.engine = ce.path,
	                      .options = ce.opts,
	                      .noptions = ce.nopts,
	                      .restart = restart},
	                     {.engine = opponent,
	                      .options = oppo,
	                      .noptions = noppo,
	                      .restart = restart}},
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
	            .nengines = nengines,
	            .budget = {.kind = SEARCH_BUDGET_NODES, .amount = (uint64_t)think_nodes},
	            .multipv = multipv,
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
	            .paths = (const char *const *)paths.specs,
	            .npaths = paths.n,
	            .minimax = &line_hook,
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
	printf("cycle generations %d of %llu%s\n", done, (unsigned long long)generations,
	       stopped ? " (stopped: run the same command to resume)" : "");
	ret = 0;
done:
	for (int i = 0; i < MAX_ENGINES; i++) {
		search_free(engines[i]);
		search_free(opponents[i]);
	}
	match_openings_free(openings, nopenings);
	roots_free(&roots);
	roots_free(&paths);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	return ret;
}
