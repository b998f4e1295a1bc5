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
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

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
	/* Why games were left out, with what to give. */
	if (g.no_side) {
		char text[400];
		snprintf(text, sizeof text,
		         "%s: %zu game%s skipped: the book's side could not be told (%s): give "
		         "--book-side black|white, or --book-player with a name its player has",
		         name, g.no_side, g.no_side == 1 ? "" : "s",
		         player ? "no player's name, or both, holds the --book-player given"
		                : "no player's name holds +book, as match names the book's side");
		cli_wrap(stderr, text, 0, 2, CLI_CONSOLE_WIDTH);
	}
	if (g.skipped > g.no_side)
		fprintf(stderr, "%s: %zu game%s skipped: no winner and no draw by the rules\n",
		        name, g.skipped - g.no_side, g.skipped - g.no_side == 1 ? "" : "s");
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

/* The book side's book moves a game and its exit ply's median in a row. */
static double row_book_plies(const CycleRow *r)
{
	return r->games ? (double)r->book_moves / r->games : 0;
}

static double row_score(const CycleRow *r)
{
	return r->games ? (r->wins + 0.5 * r->draws) / r->games : 0;
}

static void on_generation(void *ctx, const CycleGenStats *g)
{
	bool json = ((const bool *)ctx)[1];
	if (json) return;
	if (((const bool *)ctx)[0]) fputs("\r\033[K", stderr); /* the step shown, cleared */
	printf("cycle generation %d games %d score %.3f (+%d =%d -%d) queued %zu thought %llu "
	       "avoided_new %zu avoided %zu%s\n",
	       g->generation, g->games, g->score, g->wins, g->draws, g->losses, g->queued,
	       (unsigned long long)g->thought, g->marked, g->avoided,
	       g->resumed ? " (resumed)" : "");
	for (int i = 0; i < g->nrows; i++) {
		const CycleRow *r = &g->rows[i];
		printf(
		    "cycle generation %d opponent %d games %d score %.3f (+%d =%d -%d) book_plies "
		    "%.1f exit_ply %d thought %llu engine_s %.1f avoided_new %llu repeats %llu "
		    "won_lost %llu retried %d retry_wins %d %s\n",
		    r->generation, r->opponent, r->games, row_score(r), r->wins, r->draws,
		    r->losses, row_book_plies(r), r->exit_median, (unsigned long long)r->thought,
		    r->engine_ms / 1e3, (unsigned long long)r->marked,
		    (unsigned long long)r->repeats, (unsigned long long)r->won_lost, r->retried,
		    r->retry_wins, r->name);
	}
	fflush(stdout);
}

static void on_note(void *ctx, const char *note)
{
	if (((const bool *)ctx)[2]) fprintf(stderr, "cycle: %s\n", note);
}

static void on_step(void *ctx, int gen, const char *step)
{
	if (*(bool *)ctx) {
		fprintf(stderr, "\rcycle: generation %d: %-9s", gen, step);
		fflush(stderr);
	}
}

/* The table kept in the book, as text or JSON. */
static int print_table(const char *book, int done, uint64_t generations, bool stopped, bool json)
{
	BookDB *db = NULL;
	char berr[BOOKDB_ERRLEN];
	CycleTable t = {0};
	if (bookdb_open(&db, book, NULL, berr) < 0 || cycle_table_read(&t, db) < 0) {
		joseki_error("cycle: %s: cannot read the table%s%s", book, db ? "" : ": ",
		             db ? "" : berr);
		bookdb_free(db);
		return -1;
	}
	bookdb_free(db);
	if (json) {
		json_t *rows = json_array();
		for (size_t i = 0; i < t.n; i++) {
			const CycleRow *r = &t.rows[i];
			json_array_append_new(
			    rows,
			    json_pack(
			        "{s:i, s:i, s:s, s:i, s:i, s:i, s:i, s:f, s:f, s:{s:i, s:i, s:i, "
			        "s:i}, s:I, s:I, s:I, s:I, s:I, s:f, s:i, s:i}",
			        "generation", r->generation, "opponent", r->opponent, "name",
			        r->name, "games", r->games, "wins", r->wins, "draws", r->draws,
			        "losses", r->losses, "score", row_score(r), "book_plies",
			        row_book_plies(r), "exit_ply", "games", r->exits, "q1", r->exit_q1,
			        "median", r->exit_median, "q3", r->exit_q3, "queued",
			        (json_int_t)r->queued, "thought", (json_int_t)r->thought, "avoided",
			        (json_int_t)r->marked, "repeats", (json_int_t)r->repeats,
			        "won_lost", (json_int_t)r->won_lost, "engine_seconds",
			        r->engine_ms / 1e3, "retried", r->retried, "retry_wins",
			        r->retry_wins));
		}
		json_t *o = json_pack("{s:i, s:I, s:b, s:o}", "generations", done, "of",
		                      (json_int_t)generations, "stopped", stopped, "table", rows);
		char *text = json_dumps(
		    o, JSON_COMPACT | JSON_REAL_PRECISION(10)); /* 0.118, not 0.11799999999999999 */
		if (text) puts(text);
		free(text);
		json_decref(o);
	} else if (t.n) {
		printf("cycle table\n  gen  opp  games  score    +W   =D   -L  book_plies  exit_ply"
		       "  thought  engine_s  avoided  repeats  won_lost  retried  retry_wins  "
		       "opponent\n");
		for (size_t i = 0; i < t.n; i++) {
			const CycleRow *r = &t.rows[i];
			char exit[16] = "-";
			if (r->exits) snprintf(exit, sizeof exit, "%d", r->exit_median);
			printf(
			    "  %3d  %3d  %5d  %.3f  %4d %4d %4d  %10.1f  %8s  %7llu  %8.1f  %7llu  "
			    "%7llu  %8llu  %7d  %10d  %s\n",
			    r->generation, r->opponent, r->games, row_score(r), r->wins, r->draws,
			    r->losses, row_book_plies(r), exit, (unsigned long long)r->thought,
			    r->engine_ms / 1e3, (unsigned long long)r->marked,
			    (unsigned long long)r->repeats, (unsigned long long)r->won_lost,
			    r->retried, r->retry_wins, r->name);
		}
	}
	cycle_table_free(&t);
	return 0;
}

/* --opponent-option belongs to the --opponent before it: the parser counts
 * the --opponents given so far here. */
typedef struct {
	UsiOption o;
	int owner;
} OppOption;

static const int *opponents_given;

static int opp_option(void *dst, char *value, char *msg)
{
	OppOption *o = dst;
	if (*opponents_given == 0) {
		snprintf(msg, CLI_MSGLEN, "--opponent-option goes after the --opponent it is for");
		return -1;
	}
	o->owner = *opponents_given - 1;
	return cli_usi_option(&o->o, value, msg);
}

int cmd_cycle(int argc, char **argv)
{
	enum { MAX_ENGINES = 256, MAX_OPP_OPTIONS = 4 * CLI_MAX_USI_OPTIONS };
	static const int DELETES[] = {CYCLE_DELETE_LAST, CYCLE_DELETE_ALL, CYCLE_DELETE_NONE};
	static const int EXTENDS[] = {CYCLE_EXTEND_LOST, CYCLE_EXTEND_ALL, CYCLE_EXTEND_NONE};
	const char *book = NULL, *openings_path = NULL, *opp_path[CYCLE_OPPONENTS_MAX] = {0};
	static OppOption opp_opts[MAX_OPP_OPTIONS];
	int nopp = 0, nopp_opts = 0, delete_rule = CYCLE_DELETE_LAST,
	    extend_rule = CYCLE_EXTEND_LOST;
	uint64_t generations = 0, games = 0, nodes = 0, movetime = 0, concurrency = 1,
	         max_moves = 0, seed = 0, probe_plies = 0, retries = 0;
	uint64_t think_nodes = 10000, positions = 0, seconds = 0, plies = 8, min_games = 1;
	double engine_seconds = 0;
	int multipv = 4;
	double max_winrate = 0.30;
	bool quiet = false, probe = false, restart = false, json = false;
	CliEngines ce;
	cli_engines_init(&ce, MAX_ENGINES, NULL);
	CliPlan cp;
	cli_plan_init(&cp);
	opponents_given = &nopp;
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book"),
	    CLI_NUM("--generations", &generations, 1, 100000, "G", "generations to run",
	            .required = true),
	    CLI_NUM("--games", &games, 1, 1000000, "N", "match games a generation, per opponent",
	            .required = true),
	    CLI_STR("--opponent", opp_path, "builtin|PATH",
	            "an opponent (repeatable; default one built-in engine)",
	            CLI_MANY(&nopp, CYCLE_OPPONENTS_MAX)),
	    CLI_FN("--opponent-option", opp_opts, opp_option, "NAME=VALUE", "NAME=VALUE",
	           "a USI option (setoption) for the --opponent before it, repeatable (default: "
	           "none)",
	           CLI_MANY(&nopp_opts, MAX_OPP_OPTIONS)),
	    CLI_NUM("--nodes", &nodes, 1, 1000000000, "N",
	            "the match's nodes a move (default 10000)"),
	    CLI_NUM("--movetime", &movetime, 1, 86400000, "MS",
	            "the match's milliseconds a move instead of --nodes, for an engine that takes "
	            "only time controls (gpsshogi; its games then vary with the machine's load) "
	            "(default: none)"),
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
	    CLI_REAL("--engine-seconds", &engine_seconds, 0, 1e9, "S",
	             "think's engine time a generation, the engines' own CPU time (default: no "
	             "limit)"),
	    CLI_NUM("--multipv", &multipv, 1, SEARCH_MULTIPV_MAX, "K",
	            "think's best moves a position (default 4)"),
	    CLI_NUM("--plies", &plies, 0, POS_MAX_STATES, "N",
	            "extend: the plies queued after the book ran out (default 8)"),
	    CLI_ENUM("--delete", &delete_rule, "last|all|none", DELETES,
	             "prune: each lost game's last decision, or every losing move (default last)"),
	    CLI_NUM("--retries", &retries, 0, 1000, "N",
	            "--delete last: rounds a generation of playing the lost games again where the "
	            "book now plays them differently (default 0)"),
	    CLI_ENUM("--extend", &extend_rule, "lost|all|none", EXTENDS,
	             "the games the book follows further (default lost)"),
	    CLI_REAL("--max-winrate", &max_winrate, 0, 1, "R",
	             "prune: a move loses badly scoring at most R against an opponent (default "
	             "0.30)"),
	    CLI_NUM("--min-games", &min_games, 0, 1000000000, "N",
	            "prune: ... over at least N games against it (default 1)"),
	    CLI_FLAG("--probe", &probe,
	             "think walks the lines the opponents play (think --opponent)"),
	    CLI_NUM("--probe-plies", &probe_plies, 1, POS_MAX_STATES - 1, "N",
	            "--probe: a walk's plies from its opening (default 32)", .needs = "--probe"),
	    CLI_FLAG("--restart-engines", &restart,
	             "the match's engines and the probe's opponents: a new process every game"),
	    CLI_JSON(&json),
	    CLI_QUIET(&quiet),
	    CLI_GROUP(cp.table),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"cycle", opts, "docs/cycle.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	if (retries > 0 && delete_rule != CYCLE_DELETE_LAST)
		return cli_usage_error(&cmd,
		                       "--retries plays lost games again after --delete last's "
		                       "backtracking: it needs --delete last");
	if (nodes && movetime)
		return cli_usage_error(&cmd, "give the match --nodes or --movetime, not both");
	if (!nodes && !movetime) nodes = 10000;
	/* The match's budget, the probe's opponents' too. */
	SearchBudget match_budget = {.kind =
	                                 movetime ? SEARCH_BUDGET_MOVETIME : SEARCH_BUDGET_NODES,
	                             .amount = movetime ? movetime : nodes};
	int nengines = (int)ce.n;
	if (!positions && !seconds && !(engine_seconds > 0)) positions = 100;
	if (nopp == 0) opp_path[nopp++] = "builtin";
	/* Each opponent with its own options, in the order given. */
	static UsiOption oopts[MAX_OPP_OPTIONS];
	MatchSide sides[CYCLE_OPPONENTS_MAX];
	int no = 0;
	for (int j = 0; j < nopp; j++) {
		sides[j] =
		    (MatchSide){.engine = opp_path[j], .options = oopts + no, .restart = restart};
		for (int k = 0; k < nopp_opts; k++)
			if (opp_opts[k].owner == j) oopts[no++] = opp_opts[k].o;
		sides[j].noptions = (int)(oopts + no - sides[j].options);
	}
	shogi_init();
	/* A missing book is an error, as for think, extend and prune (a mistyped
	 * name cycled for hours into a new book). */
	{
		BookDB *db = NULL;
		char berr[BOOKDB_ERRLEN];
		BookDBOptions existing = {.must_exist = true};
		int orc = bookdb_open(&db, book, &existing, berr);
		if (orc < 0) {
			joseki_error("cycle: %s%s", berr,
			             orc == BOOKDB_ENOBOOK && !strstr(berr, "(")
			                 ? " (joseki ingest, import or think --new makes one)"
			                 : "");
			return 1;
		}
		bookdb_free(db);
	}
	char **openings = NULL;
	int nopenings = 0, ret = 1, rc, sel_fd = -1;
	char err[CYCLE_ERRLEN > MATCH_ERRLEN ? CYCLE_ERRLEN : MATCH_ERRLEN];
	if (openings_path && (nopenings = match_openings_read(&openings, openings_path, err)) < 0) {
		joseki_error("cycle: --openings: %s", err);
		return 1;
	}
	if (openings_path && !quiet)
		joseki_openings_note("cycle", openings_path, (const char *const *)openings,
		                     nopenings);
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
	/* A search at a node budget stopped at the driver's hard limit (a busy
	 * machine) is another search than the same line gets the next time: the
	 * USI engines are allowed as slow as 5,000 nodes a second. */
	UsiEngineConfig usi;
	usi_engine_config_init(&usi);
	usi.nps_floor = 5000;
	cli_usi_notices(&usi, "cycle");
	SearchEngine *engines[MAX_ENGINES] = {0}, **opponents = NULL;
	cycle_stop_flag = 0;
	joseki_catch_stop(on_signal);
	if (cli_open_engines_cfg(engines, nengines, ce.path, ce.opts, ce.nopts, false,
	                         &cycle_stop_flag, "cycle", &usi) < 0)
		goto done;
	/* --probe: think walks each opponent's lines, the opponent asked as the
	 * match asks it (its engine and options, the match's budget). */
	if (probe) {
		opponents = calloc((size_t)nopp * (size_t)nengines, sizeof *opponents);
		if (!opponents) {
			joseki_error("out of memory");
			goto done;
		}
		for (int j = 0; j < nopp; j++)
			if (cli_open_engines_cfg(opponents + (size_t)j * (size_t)nengines, nengines,
			                         sides[j].engine, sides[j].options,
			                         sides[j].noptions, restart, &cycle_stop_flag,
			                         "cycle --probe", &usi) < 0)
				goto done;
	}
	/* The rule that keeps won lines needs a book side whose move in a
	 * position is the same whatever it searched before (docs/cycle.md). */
	if (!quiet && ce.path && strcmp(ce.path, "builtin"))
		fprintf(
		    stderr,
		    "cycle: the book side's engine %s is a USI engine: its move in a position "
		    "depends on what it searched before in the game (its hash, its histories), "
		    "so a won line the book plays again may not replay as a win, while the marks "
		    "that keep it stay (docs/cycle.md, \"Against an opponent that plays the same "
		    "game\"); the built-in engine searches each move afresh\n",
		    ce.path);
	bool ctx[3] = {!quiet && !json && isatty(2), json, !quiet};
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
	                     sides[0]},
	            .games = (int)games,
	            .budget = match_budget,
	            .openings = (const char *const *)openings,
	            .nopenings = nopenings,
	            .concurrency = (int)concurrency,
	            .max_moves = (int)max_moves,
	            .seed = (uint64_t)seed,
	            .usi = &usi,
	        },
	    .opponents = sides,
	    .nopponents = nopp,
	    .prune = {.max_winrate = max_winrate, .min_games = (uint32_t)min_games},
	    .delete_rule = (CycleDelete)delete_rule,
	    .retries = (int)retries,
	    .extend_rule = (CycleExtend)extend_rule,
	    .plies = (int)plies,
	    .think =
	        {
	            .engines = engines,
	            .nengines = nengines,
	            .budget = {.kind = SEARCH_BUDGET_NODES, .amount = (uint64_t)think_nodes},
	            .multipv = multipv,
	            .max_positions = (uint64_t)positions,
	            .max_seconds = (double)seconds,
	            .max_engine_seconds = engine_seconds,
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
	    .probe = {.opponents = opponents,
	              .opp_budget = match_budget,
	              .book_side = cp.plan.book_side,
	              .max_plies = (int)probe_plies,
	              .max_moves = (int)max_moves},
	    .minimax = bookmm_hook(NULL),
	    .stop = &cycle_stop_flag,
	    .on_generation = on_generation,
	    .on_step = on_step,
	    .on_note = on_note,
	    .ctx = ctx,
	};
	int done;
	bool stopped;
	/* The book's selection is this cycle's alone (its think's). */
	char lerr[BOOKDB_ERRLEN];
	struct stat bs;
	if (stat(book, &bs) == 0 && bookdb_selection_lock(&sel_fd, book, "cycle", lerr) < 0) {
		joseki_error("cycle: %s", lerr);
		goto done;
	}
	rc = cycle_run(&done, &stopped, &opt, err);
	if (ctx[0]) fputs("\r\033[K", stderr);
	if (rc < 0) {
		joseki_error("cycle: %s: %s", book, err);
		goto done;
	}
	if (print_table(book, done, generations, stopped, json) < 0) goto done;
	if (!json)
		printf("cycle generations %d of %llu%s\n", done, (unsigned long long)generations,
		       stopped ? " (stopped: run the same command to resume)" : "");
	ret = 0;
done:
	if (sel_fd >= 0) close(sel_fd);
	for (int i = 0; i < MAX_ENGINES; i++) search_free(engines[i]);
	for (int i = 0; opponents && i < nopp * nengines; i++) search_free(opponents[i]);
	free(opponents);
	match_openings_free(openings, nopenings);
	roots_free(&roots);
	roots_free(&paths);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	return ret;
}
