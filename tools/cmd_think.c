/*
 * joseki think BOOK [--new] [--engine builtin|PATH] [--usi-option N=V]... [--engines N]
 *                   [--nodes N|--movetime MS|--depth D] [--multipv K]
 *                   [--positions N] [--time S] [--kif-bonus CP] [--quiet]
 *                   [--from-kifu FILE [--max-ply N]] [--extend]
 *                   [--roots FILE | --roots-from-games N [--roots-ply K]]
 *                   [--select cover|pv] [--window CP] [--book-side black|white|both]
 *                   [--opponent builtin|PATH [--opponent-option N=V]... [--opponent-nodes N]
 *                    [--opponent-nodes-jitter PCT] [--opponent-restart]
 *                    [--probe-plies N] [--probe-burst N]]
 *
 * The generation loop (bookgen/think.h). BOOK must hold a book unless --new
 * (which starts one there if there is none). --from-kifu thinks the positions
 * along the games of FILE first (CSA if it ends in .csa, else USI lines), up
 * to --max-ply (128) moves into each game; --extend then the positions just
 * past the end of the book in ingested games. The growth options (roots,
 * policy) are tools/cli_plan.h's. With --opponent the lines that opponent
 * plays from the roots are walked instead (bookgen/probe.h), and the summary
 * line starts "probe". Ctrl-C / SIGTERM stop cleanly: the
 * engines are told to stop, finished answers are committed, exit 0. Ends with
 * one stdout line: "think thought N failed F time_s T per_s R busy_pct B
 * root_value V commits C exhausted 0|1 engine_s E peak_anon_mb M files_mb D
 * root SPEC" (E: the engines' CPU seconds; M, D: joseki_peak_fields; V the value
 * of the first root, "none" when it has none; SPEC: startpos without roots).
 * With --roots or --roots-from-games, the positions on the way to the roots
 * (from their games, or their move lists) are thought first. With
 * --reanalyse (tools/cli_again.h) it thinks its list alone, runs minimax over
 * what that replaced, and ends with one line instead: "reanalyse thought N
 * failed F replaced R left L time_s T per_s R busy_pct B root_value V commits
 * C engine_s E minimax none|incremental|whole-book|deferred|failed
 * peak_anon_mb M files_mb D root SPEC" (V: the book's value of SPEC after
 * that minimax).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bookdb/bookdb.h"
#include "bookdb/query.h"
#include "bookgen/roots.h"
#include "bookgen/probe.h"
#include "bookgen/selector.h"
#include "bookgen/think.h"
#include "ingest/replay.h"
#include "minimax/bookmm.h"
#include "shogi/bigmem.h"
#include "shogi/memuse.h"
#include "shogi/notation.h"
#include "search/usi_engine.h"
#include "tools/cli_again.h"
#include "tools/cli_engines.h"
#include "tools/cli_minimax.h"
#include "tools/cli_plan.h"
#include "tools/commands.h"

/* Set by the signal handler: the only way a handler can talk to the loop. */
static volatile sig_atomic_t think_stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	think_stop_flag = 1;
}

/* What became of the selector's snapshot (ctx: its path), as the run begins. */
static void on_snapshot(void *ctx, bool restored, double ms, const char *note)
{
	if (restored)
		cli_snapshot_restored("think", ctx, ms, note);
	else if (note[0])
		cli_snapshot_unused("think", ctx, note);
}

/* A ThinkProgressFn: a status line on stderr (positions, the book's thought
 * positions or a re-analysis's list left, rate, engines busy, the root's
 * value and PV, ETA); nothing at "done". */
static void on_think_progress(void *ctx, const char *phase, const ThinkProgress *p)
{
	const RootList *roots = ctx; /* the value and line printed are the first root's */
	if (!strcmp(phase, "search")) {
		if (!p->filter_ready)
			fprintf(stderr,
			        "think: selecting: building the filter of the book's keys, elapsed "
			        "%.0fs\n",
			        p->seconds);
		else
			fprintf(
			    stderr,
			    "think: selecting: %llu positions of the book searched so far, elapsed "
			    "%.0fs\n",
			    (unsigned long long)p->expanded, p->seconds);
		return;
	}
	if (strcmp(phase, "status")) return;
	double el = p->seconds;
	if (p->again_listed)
		fprintf(stderr, "think: %llu thought again (%llu replaced), left %llu of %llu",
		        (unsigned long long)p->thought, (unsigned long long)p->again_replaced,
		        (unsigned long long)p->again_left, (unsigned long long)p->again_listed);
	else
		fprintf(stderr, "think: %llu thought (%llu in the book)",
		        (unsigned long long)p->thought, (unsigned long long)p->book_thought);
	fprintf(stderr, ", %.1f/s, engines busy %.0f%%, elapsed %.0fs",
	        p->thought / (el > 0 ? el : 1), 100.0 * p->busy, el);
	if (p->has_root) {
		if (roots && roots->n > 1)
			fprintf(stderr, ", root 1 of %zu %+d", roots->n, p->root_value);
		else if (roots && roots->n == 1)
			fprintf(stderr, ", root %+d", p->root_value);
		else
			fprintf(stderr, ", start position %+d", p->root_value);
		if (p->npv) fputs(" pv", stderr);
		for (int j = 0; j < p->npv; j++) {
			char mv[USI_MOVE_MAX];
			usi_move_write(p->pv[j], mv);
			fprintf(stderr, " %s", mv);
		}
	}
	if (p->finishing)
		fprintf(stderr, ", time up: finishing %d search%s under way", p->finishing,
		        p->finishing == 1 ? "" : "es");
	else if (p->eta >= 0)
		fprintf(stderr, ", eta %.0fs", p->eta);
	fputc('\n', stderr);
}

/* A ProbeProgressFn: a status line on stderr (positions, rate, walks, lines
 * done, the deepest walk); nothing at "done". */
static void on_probe_progress(void *ctx, const char *phase, const ProbeProgress *p)
{
	(void)ctx;
	if (strcmp(phase, "status")) return;
	double el = p->seconds;
	fprintf(stderr,
	        "probe: %llu thought, %.1f/s, %llu walks, %llu of %d lines done, deepest %d "
	        "plies, reach %.2f book plies, elapsed %.0fs\n",
	        (unsigned long long)p->thought, p->thought / (el > 0 ? el : 1),
	        (unsigned long long)p->walks, (unsigned long long)p->done, p->lines, p->deepest,
	        p->reach, el);
}

static int collect_root(void *ctx, const Position *pos)
{
	return roots_add_position(ctx, pos);
}

/* The opponent's side of --opponent. */
typedef struct {
	const char *engine;
	UsiOption opts[CLI_MAX_USI_OPTIONS];
	int nopts;
	uint64_t nodes, plies, burst, jitter;
	bool restart;
} OpponentArgs;

/* think --opponent: the probes (bookgen/probe.h), one opponent per engine. */
static int run_probe(BookDB *db, const OpponentArgs *oa, SearchEngine **engines, int n,
                     const ThinkOptions *t, PlanSide side)
{
	SearchEngine **opp = calloc((size_t)n, sizeof *opp);
	char err[THINK_ERRLEN];
	int ret = 1;
	if (!opp) {
		joseki_error("out of memory");
		return 1;
	}
	if (cli_open_engines(opp, n, oa->engine, oa->opts, oa->nopts, oa->restart, &think_stop_flag,
	                     "think --opponent") < 0)
		goto done;
	/* The way to the roots first, as think without --opponent thinks it. */
	ThinkStats ts = {0};
	if (t->npaths) {
		if (think_paths(&ts, db, t, err) < 0) {
			joseki_error("%s", err[0] ? err : "think: the way to the roots failed");
			goto done;
		}
		if (t->progress)
			fprintf(stderr, "think: %llu positions on the way to the roots thought\n",
			        (unsigned long long)ts.thought);
		if (think_stop_flag) {
			ret = 0;
			goto done;
		}
	}
	ProbeOptions po = {
	    .engines = engines,
	    .opponents = opp,
	    .nworkers = n,
	    .budget = t->budget,
	    .opp_budget = oa->nodes
	                      ? (SearchBudget){.kind = SEARCH_BUDGET_NODES, .amount = oa->nodes}
	                      : t->budget,
	    .opp_jitter = (int)oa->jitter,
	    .seed = 0x6a6f73656b69ULL,
	    .multipv = t->multipv,
	    .roots = t->roots,
	    .root_weights = t->root_weights,
	    .nroots = t->nroots,
	    .book_side = side,
	    .max_plies = (int)oa->plies,
	    .burst = (int)oa->burst,
	    .max_positions =
	        t->max_positions
	            ? (t->max_positions > ts.thought ? t->max_positions - ts.thought : 1)
	            : 0,
	    .max_seconds = t->max_seconds
	                       ? (t->max_seconds > ts.seconds ? t->max_seconds - ts.seconds : 0.001)
	                       : 0,
	    .max_engine_seconds = t->max_engine_seconds
	                              ? (t->max_engine_seconds > ts.engine_seconds
	                                     ? t->max_engine_seconds - ts.engine_seconds
	                                     : 0.001)
	                              : 0,
	    .stop = &think_stop_flag,
	    .minimax = bookmm_hook(NULL),
	    .progress = t->progress ? on_probe_progress : NULL,
	    .status_report_ms = t->status_report_ms,
	};
	ProbeStats st;
	int rc = probe_run(&st, db, &po, err);
	char mem[JOSEKI_PEAK_LEN];
	printf(
	    "probe thought %llu failed %llu walks %llu restarts %llu opponent_moves %llu "
	    "opponent_cached %llu opponent_replayed %llu opponent_differ %llu opponent_added %llu "
	    "lines %llu done %llu deepest %d book_plies_per_walk %.1f reach %.2f time_s %.1f "
	    "per_s %.2f "
	    "engine_s %.1f %s\n",
	    (unsigned long long)(st.thought + ts.thought),
	    (unsigned long long)(st.failed + ts.failed), (unsigned long long)st.walks,
	    (unsigned long long)st.restarts, (unsigned long long)st.opp_moves,
	    (unsigned long long)st.opp_cached, (unsigned long long)st.opp_replayed,
	    (unsigned long long)st.opp_differ, (unsigned long long)st.opp_added,
	    (unsigned long long)st.lines, (unsigned long long)st.done, st.deepest,
	    st.walks ? (double)st.book_plies / (double)st.walks : 0.0, st.reach, st.seconds,
	    st.seconds > 0 ? (double)st.thought / st.seconds : 0.0, st.engine_seconds,
	    joseki_peak_fields(mem, sizeof mem));
	if (rc < 0) {
		joseki_error("%s", err[0] ? err : think_strerror(rc));
		goto done;
	}
	ret = 0;
done:
	for (int i = 0; i < n; i++) search_free(opp[i]);
	free(opp);
	return ret;
}

/* A root's value for the summary: the number, or "none" when it has none. */
static void value_text(char out[16], bool known, int value)
{
	if (known)
		snprintf(out, 16, "%d", value);
	else
		snprintf(out, 16, "none");
}

/* The book's value of the position spec for its side to move
 * (bookdb_position_value: minimax's, before any minimax its analysis's).
 * False when the book has no valued move there (or cannot be read). */
static bool book_value(int *value, BookDB *db, const char *spec)
{
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	BookTxn *t;
	bool known = false;
	if (pos && rec && position_parse(pos, spec, NULL) == 0 &&
	    bookdb_txn_begin(&t, db, false) == 0) {
		known = bookdb_query(rec, t, pos) == 1 && bookdb_position_value(value, rec);
		bookdb_txn_abort(t);
	}
	free(pos);
	free(rec);
	return known;
}

/* think_run's error: "joseki: think: BOOK: ..." (its messages begin with
 * "think: "). */
static void think_error(const char *book, const char *err, int rc)
{
	const char *m = err[0] ? err : think_strerror(rc);
	if (!strncmp(m, "think: ", 7)) m += 7;
	joseki_error("think: %s: %s", book, m);
}

/* The end of think --reanalyse: minimax over what the new analyses replaced,
 * then the one summary line, with the book's value of the root (spec) after
 * it. rc, err: think_run's. The exit status: 0, or 1 after a message. */
static int reanalyse_end(BookDB *db, const char *book, const ThinkStats *st, int rc,
                         const char *err, const char *spec, bool quiet)
{
	BookmmStats mm;
	bool busy = false;
	char mmerr[BOOKMM_ERRLEN];
	int mrc = 0;
	const char *how = "none";
	if (rc >= 0 && st->again_replaced) {
		mrc = cli_minimax_after(&mm, &busy, db, "think", !quiet && isatty(2), mmerr);
		how = mrc < 0          ? "failed"
		      : busy           ? "deferred"
		      : mm.incremental ? "incremental"
		                       : "whole-book";
	}
	int v = 0;
	char value[16];
	bool known = book_value(&v, db, spec);
	value_text(value, known, v);
	/* The root the value is of, last (its spec has spaces). */
	char mem[JOSEKI_PEAK_LEN];
	printf("reanalyse thought %llu failed %llu replaced %llu left %llu time_s %.1f per_s %.2f "
	       "busy_pct %.0f root_value %s commits %llu engine_s %.1f minimax %s %s root %s\n",
	       (unsigned long long)st->thought, (unsigned long long)st->failed,
	       (unsigned long long)st->again_replaced, (unsigned long long)st->again_left,
	       st->seconds, st->seconds > 0 ? st->thought / st->seconds : 0.0, st->busy_pct, value,
	       (unsigned long long)st->commits, st->engine_seconds, how,
	       joseki_peak_fields(mem, sizeof mem), spec);
	if (rc < 0) {
		think_error(book, err, rc);
		return 1;
	}
	if (mrc < 0) {
		joseki_error("think: the analyses are stored; minimax: %s: %s", book, mmerr);
		return 1;
	}
	return 0;
}

/* What became of the selector's snapshot at the end (path; NULL: none), on
 * stderr (how it was read is said as the run begins: on_snapshot). */
static void print_snapshot(const ThinkStats *st, const char *path)
{
	if (!path) return;
	if (st->snap_saved)
		fprintf(stderr, "think: the selector saved to %s in %.2f s\n", path,
		        st->save_ms / 1000);
	else if (st->save_note[0])
		fprintf(stderr, "think: the selector not saved to %s: %s\n", path, st->save_note);
}

int cmd_think(int argc, char **argv)
{
	const char *book = NULL, *kifu = NULL;
	uint64_t memory = memuse_default_budget();
	CliAgain again;
	cli_again_init(&again);
	uint64_t max_ply = 128, positions = 0, seconds = 0, engine_seconds = 0;
	bool quiet = false, extend = false, fresh = false, no_snapshot = false;
	bool status_given = false;
	double status_s = 1;
	int kif_bonus = SEL_KIF_BONUS_DEFAULT;
	CliEngines ce;
	cli_engines_init(&ce, USI_MAX_ENGINES, NULL);
	CliBudget cb;
	cli_budget_init(&cb, 8);
	CliPlan cp;
	cli_plan_init(&cp);
	OpponentArgs oa = {0};
	const CliOpt opponent[] = {
	    CLI_FN("--opponent-option", oa.opts, cli_usi_option, "NAME=VALUE", "NAME=VALUE",
	           "a USI option for the opponent's engine, repeatable (default: none)",
	           CLI_MANY(&oa.nopts, CLI_MAX_USI_OPTIONS)),
	    CLI_NUM("--opponent-nodes", &oa.nodes, 1, CLI_NOMAX, "N",
	            "the opponent's nodes a move (default: think's budget)"),
	    CLI_NUM("--opponent-nodes-jitter", &oa.jitter, 0, 50, "PCT",
	            "each opponent search's nodes drawn within PCT percent (as match "
	            "--nodes-jitter): each walk samples a game (default 0)"),
	    CLI_FLAG("--opponent-restart", &oa.restart,
	             "a new opponent process for every walk's game (as match --restart-engines)"),
	    CLI_NUM("--probe-plies", &oa.plies, 1, CLI_NOMAX, "N",
	            "walk the lines N plies deep (default 32)"),
	    CLI_NUM("--probe-burst", &oa.burst, 1, CLI_NOMAX, "N",
	            "positions thought along a walk before the next (default 8)"),
	    CLI_TABLE_END,
	};
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book (a new one with --new)"),
	    CLI_FLAG("--new", &fresh, "start a new book at BOOK if there is none"),
	    CLI_MEMORY_HOW(&memory, "arrays in files beside the book past three quarters of it; "
	                            "the selector's graph trimmed to half of it"),
	    CLI_GROUP(ce.table),
	    CLI_GROUP(cb.table),
	    CLI_NUM("--positions", &positions, 1, CLI_NOMAX, "N",
	            "stop after N positions (default: no limit)"),
	    CLI_NUM("--time", &seconds, 1, CLI_NOMAX, "S",
	            "stop after S seconds (default: no limit)"),
	    CLI_NUM("--engine-seconds", &engine_seconds, 1, CLI_NOMAX, "S",
	            "stop when the engines have used S seconds of CPU in all (default: no limit)"),
	    CLI_NUM("--kif-bonus", &kif_bonus, -VALUE_MATE, VALUE_MATE, "CP",
	            "the selector's bonus for moves played in games (default 100)"),
	    CLI_QUIET(&quiet),
	    CLI_REAL("--status-seconds", &status_s, 0.1, 86400, "S",
	             "the progress line on stderr every S seconds (default 1 on a terminal, "
	             "else 60)",
	             CLI_TAG(&status_given, true)),
	    CLI_STR("--from-kifu", &kifu, "FILE",
	            "think the positions along FILE's games first (any game file, directory or "
	            "archive ingest reads; default: none)"),
	    CLI_NUM("--max-ply", &max_ply, 1, CLI_NOMAX, "N",
	            "... up to N moves into each game (default 128)", .needs = "--from-kifu"),
	    CLI_FLAG("--extend", &extend,
	             "think first where ingested games leave the book (extend's queue)"),
	    CLI_GROUP(cp.table),
	    CLI_FLAG("--no-snapshot", &no_snapshot,
	             "neither read nor write the selector's snapshot (BOOK/" SNAP_FILE ")"),
	    CLI_STR("--opponent", &oa.engine, "builtin|PATH",
	            "walk the lines this opponent plays from the roots instead (default: none)"),
	    CLI_GROUP(opponent, .needs = "--opponent"),
	    CLI_GROUP(again.table),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"think", opts, "docs/bookgen.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	if (oa.engine && (kifu || extend))
		return cli_usage_error(
		    &cmd, "--opponent walks the roots; --from-kifu and --extend do not go with it");
	if (again.on && (oa.engine || kifu || extend || fresh))
		return cli_usage_error(&cmd,
		                       "--reanalyse thinks the book's own positions again; "
		                       "--opponent, --from-kifu, --extend and --new do not go "
		                       "with it");
	if (oa.jitter && !oa.nodes && cb.budget.kind != SEARCH_BUDGET_NODES)
		return cli_usage_error(&cmd, "--opponent-nodes-jitter needs a nodes budget for the "
		                             "opponent (--opponent-nodes N, or --nodes N)");
	uint64_t nengines = ce.n;

	int ret = 1, sel_fd = -1;
	BookDB *db = NULL;
	RootList kl = {0}, roots = {0}, paths = {0};
	SearchEngine **engines = calloc(nengines, sizeof *engines);
	char err[THINK_ERRLEN > BOOKDB_ERRLEN ? THINK_ERRLEN : BOOKDB_ERRLEN];
	if (!engines) {
		joseki_error("out of memory");
		return 1;
	}
	think_stop_flag = 0;
	joseki_catch_stop(on_signal);

	if (kifu) {
		char rerr[REPLAY_ERRLEN];
		int rc = replay_file_positions(kifu, max_ply > 100000 ? 100000 : (int)max_ply,
		                               collect_root, &kl, rerr);
		if (rc) {
			joseki_error("think: %s", rc == ROOTS_ENOMEM ? "out of memory" : rerr);
			goto done;
		}
	}
	/* A mistyped path is not a new book: that takes --new. */
	BookDBOptions bo = {.must_exist = !fresh, .random = true};
	int orc = bookdb_open(&db, book, &bo, err);
	if (orc < 0) {
		joseki_error("think: %s%s", err,
		             orc == BOOKDB_ENOBOOK && !strstr(err, "(a file:")
		                 ? " (think --new starts a new book there)"
		                 : "");
		goto done;
	}
	/* The book's selection is this run's alone (its selector.snap too). */
	if (bookdb_selection_lock(&sel_fd, book, "think", err) < 0) {
		joseki_error("think: %s", err);
		goto done;
	}
	/* The selector's and minimax's arrays past the budget: files beside the
	 * book, as minimax's own. */
	bigmem_configure(memory, bookdb_dir(db));
	if (cli_plan_roots(&cp, &roots, db, quiet, "think", &paths) < 0) goto done;
	if (!quiet)
		for (size_t r = 0; r < roots.n; r++)
			fprintf(stderr, "think: root %zu: %s\n", r + 1, roots.specs[r]);
	if (extend) {
		char rerr[ROOTS_ERRLEN];
		if (roots_from_extension(&kl, db, rerr) < 0) {
			joseki_error("think: --extend: %s", rerr);
			goto done;
		}
	}
	if (cli_open_engines(engines, (int)nengines, ce.path, ce.opts, ce.nopts, false,
	                     &think_stop_flag, "think") < 0)
		goto done;
	BookMinimaxHook keys = bookmm_hook(NULL);
	/* The line from the start, followed after minimax: an incremental run,
	 * or a whole-book one on a book small enough for it to take a moment. */
	uint64_t nrec = 0;
	BookTxn *ctxn;
	if (bookdb_txn_begin(&ctxn, db, false) == 0) {
		if (bookdb_count(&nrec, ctxn, BOOKDB_POS) < 0) nrec = UINT64_MAX;
		bookdb_txn_abort(ctxn);
	}
	BookmmOptions line_mm = {.no_whole = nrec > 1000000};
	BookMinimaxHook line_hook = bookmm_hook(&line_mm);
	char spath[BOOKDB_PATH_LEN];
	snprintf(spath, sizeof spath, "%s/%s", book, SNAP_FILE);
	/* The progress line once a second on a terminal; a log gets one a minute. */
	double report_ms = (status_given ? status_s : isatty(2) ? 1 : 60) * 1000;
	ThinkOptions opt = {
	    .engines = engines,
	    .nengines = (int)nengines,
	    .budget = cb.budget,
	    .multipv = cb.multipv,
	    .max_positions = positions,
	    .max_seconds = (double)seconds,
	    .max_engine_seconds = (double)engine_seconds,
	    .stop = &think_stop_flag,
	    .kif_bonus = kif_bonus,
	    .roots = (const char *const *)roots.specs,
	    .root_weights = roots.weights,
	    .nroots = (int)roots.n,
	    .plan = cp.plan,
	    .progress = quiet ? NULL : on_think_progress,
	    .progress_ctx = &roots,
	    .on_snapshot = on_snapshot,
	    .snapshot_ctx = spath,
	    .status_report_ms = report_ms,
	    .search_report_ms = report_ms,
	    .first = (const char *const *)kl.specs,
	    .nfirst = kl.n,
	    .paths = (const char *const *)paths.specs,
	    .npaths = paths.n,
	    .minimax = &line_hook,
	    .keys = &keys,
	    .snapshot = no_snapshot ? NULL : spath,
	    .select_memory = memory / 2,
	};
	if (oa.engine) {
		ret = run_probe(db, &oa, engines, (int)nengines, &opt, cp.plan.book_side);
		goto done;
	}
	if (again.on) {
		if (cli_again_prepare(&again, db, &roots, quiet, "think") < 0) goto done;
		/* Its list and nothing else: no queue, no line, no snapshot. */
		opt.again = again.keys;
		opt.nagain = again.n;
		opt.campaign = again.campaign;
		opt.first = opt.paths = NULL;
		opt.nfirst = opt.npaths = 0;
		opt.minimax = NULL;
		opt.snapshot = NULL;
	}
	ThinkStats st;
	int rc = think_run(&st, db, &opt, err);
	if (st.search_stopped && !quiet)
		fprintf(stderr, "think: stopped part-way through a search of the selector's%s\n",
		        opt.snapshot ? " (kept with it in the snapshot)" : "");
	print_snapshot(&st, opt.snapshot);
	const char *spec = roots.n ? roots.specs[0] : "startpos";
	if (again.on) {
		/* The values follow the new analyses; one line says it all. */
		ret = reanalyse_end(db, book, &st, rc, err, spec, quiet);
		goto done;
	}
	char value[16];
	value_text(value, st.root_known, st.root_value);
	/* The root the value is of, last (its spec has spaces). */
	char mem[JOSEKI_PEAK_LEN];
	printf("think thought %llu failed %llu time_s %.1f per_s %.2f busy_pct %.0f root_value %s "
	       "commits %llu exhausted %d engine_s %.1f %s root %s\n",
	       (unsigned long long)st.thought, (unsigned long long)st.failed, st.seconds,
	       st.seconds > 0 ? st.thought / st.seconds : 0.0, st.busy_pct, value,
	       (unsigned long long)st.commits, st.exhausted, st.engine_seconds,
	       joseki_peak_fields(mem, sizeof mem), spec);
	if (rc < 0) {
		think_error(book, err, rc);
		goto done;
	}
	/* think backs values up only to follow the book's lines: what it
	 * analysed since is minimax's to back up. */
	if (!quiet && st.thought) {
		fflush(stdout); /* (after the summary, where both go to one file) */
		cli_minimax_backlog("think", db, book);
	}
	ret = 0;
done:
	if (sel_fd >= 0) close(sel_fd);
	cli_again_free(&again);
	for (uint64_t i = 0; i < nengines; i++) search_free(engines[i]);
	free(engines);
	roots_free(&kl);
	roots_free(&roots);
	roots_free(&paths);
	bookdb_free(db);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	return ret;
}
