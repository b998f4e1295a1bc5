/*
 * joseki think BOOK [--new] [--engine builtin|PATH] [--usi-option N=V]... [--engines N]
 *                   [--nodes N|--movetime MS|--depth D] [--multipv K]
 *                   [--positions N] [--time S] [--kif-bonus CP] [--quiet]
 *                   [--from-kifu FILE [--max-ply N]] [--extend]
 *                   [--roots FILE | --roots-from-games N [--roots-ply K]]
 *                   [--select cover|pv] [--window CP] [--book-side black|white|both]
 *                   [--opponent builtin|PATH [--opponent-option N=V]... [--opponent-nodes N]
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
 * root_value V commits C exhausted 0|1".
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/bookdb.h"
#include "bookgen/roots.h"
#include "bookgen/probe.h"
#include "bookgen/selector.h"
#include "bookgen/think.h"
#include "ingest/replay.h"
#include "minimax/bookmm.h"
#include "shogi/notation.h"
#include "search/usi_engine.h"
#include "tools/cli_engines.h"
#include "tools/cli_plan.h"
#include "tools/commands.h"

#define THINK_MAX_ENGINES USI_MAX_ENGINES
#define THINK_MAX_OPTIONS 64

/* Set by the signal handler: the only way a handler can talk to the loop. */
static volatile sig_atomic_t think_stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	think_stop_flag = 1;
}

static int collect_root(void *ctx, const Position *pos)
{
	return roots_add_position(ctx, pos);
}

/* The opponent's side of --opponent. */
typedef struct {
	const char *engine;
	UsiOption opts[THINK_MAX_OPTIONS];
	int nopts;
	uint64_t nodes, plies, burst;
} OpponentArgs;

/* Takes argv[*i] (and its value) when it is an --opponent option: 1 taken,
 * 0 not one, -1 bad usage (message said). */
static int opponent_arg(OpponentArgs *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	if (strcmp(a, "--opponent") && strcmp(a, "--opponent-option") &&
	    strcmp(a, "--opponent-nodes") && strcmp(a, "--probe-plies") &&
	    strcmp(a, "--probe-burst"))
		return 0;
	if (*i + 1 >= argc) {
		joseki_error("think: %s wants a value", a);
		return -1;
	}
	char *v = argv[++*i];
	if (!strcmp(a, "--opponent")) {
		o->engine = v;
		return 1;
	}
	if (!strcmp(a, "--opponent-option"))
		return cli_usi_option(o->opts, &o->nopts, THINK_MAX_OPTIONS, v, "think", a) < 0 ? -1
		                                                                                : 1;
	uint64_t *dst = !strcmp(a, "--opponent-nodes") ? &o->nodes
	                : !strcmp(a, "--probe-plies")  ? &o->plies
	                                               : &o->burst;
	return cli_positive(dst, v, "think", a) < 0 ? -1 : 1;
}

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
	if (cli_open_engines(opp, n, oa->engine, oa->opts, oa->nopts, &think_stop_flag,
	                     "think --opponent") < 0)
		goto done;
	ProbeOptions po = {
	    .engines = engines,
	    .opponents = opp,
	    .nworkers = n,
	    .budget = t->budget,
	    .opp_budget = oa->nodes
	                      ? (SearchBudget){.kind = SEARCH_BUDGET_NODES, .amount = oa->nodes}
	                      : t->budget,
	    .multipv = t->multipv,
	    .roots = t->roots,
	    .root_weights = t->root_weights,
	    .nroots = t->nroots,
	    .book_side = side,
	    .max_plies = (int)oa->plies,
	    .burst = (int)oa->burst,
	    .max_positions = t->max_positions,
	    .max_seconds = t->max_seconds,
	    .stop = &think_stop_flag,
	    .minimax = bookmm_hook(NULL),
	    .progress = t->progress,
	};
	ProbeStats st;
	int rc = probe_run(&st, db, &po, err);
	printf("probe thought %llu failed %llu walks %llu restarts %llu opponent_moves %llu lines "
	       "%llu done %llu deepest %d book_plies_per_walk %.1f time_s %.1f per_s %.2f\n",
	       (unsigned long long)st.thought, (unsigned long long)st.failed,
	       (unsigned long long)st.walks, (unsigned long long)st.restarts,
	       (unsigned long long)st.opp_moves, (unsigned long long)st.lines,
	       (unsigned long long)st.done, st.deepest,
	       st.walks ? (double)st.book_plies / (double)st.walks : 0.0, st.seconds,
	       st.seconds > 0 ? (double)st.thought / st.seconds : 0.0);
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

int cmd_think(int argc, char **argv)
{
	const char *book = NULL, *engine = "builtin", *kifu = NULL;
	uint64_t max_ply = 128;
	UsiOption uopts[THINK_MAX_OPTIONS];
	int nuopts = 0, quiet = 0, extend = 0, fresh = 0;
	uint64_t nengines = 1, multipv = 8, positions = 0, seconds = 0, amount = 0;
	long kif_bonus = SEL_KIF_BONUS_DEFAULT;
	SearchBudgetKind kind = SEARCH_BUDGET_NODES;
	int nbudgets = 0;
	CliPlan cp;
	cli_plan_init(&cp);
	OpponentArgs oa = {0};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has = i + 1 < argc;
		int taken = cli_plan_arg(&cp, argc, argv, &i, "think");
		if (!taken) taken = opponent_arg(&oa, argc, argv, &i);
		if (taken < 0) return 2;
		if (taken) continue;
		if (!strcmp(a, "--quiet"))
			quiet = 1;
		else if (!strcmp(a, "--new"))
			fresh = 1;
		else if (!strcmp(a, "--extend"))
			extend = 1;
		else if (!strcmp(a, "--engine") && has)
			engine = argv[++i];
		else if (!strcmp(a, "--from-kifu") && has)
			kifu = argv[++i];
		else if (!strcmp(a, "--max-ply") && has) {
			if (cli_positive(&max_ply, argv[++i], "think", a) < 0) return 2;
		} else if (!strcmp(a, "--usi-option") && has) {
			if (cli_usi_option(uopts, &nuopts, THINK_MAX_OPTIONS, argv[++i], "think",
			                   a) < 0)
				return 2;
		} else if (!strcmp(a, "--engines") && has) {
			if (cli_positive(&nengines, argv[++i], "think", a) < 0) return 2;
			if (nengines > THINK_MAX_ENGINES) {
				joseki_error("think: --engines at most %d", THINK_MAX_ENGINES);
				return 2;
			}
		} else if ((!strcmp(a, "--nodes") || !strcmp(a, "--movetime") ||
		            !strcmp(a, "--depth")) &&
		           has) {
			if (cli_positive(&amount, argv[++i], "think", a) < 0) return 2;
			kind = a[2] == 'n'   ? SEARCH_BUDGET_NODES
			       : a[2] == 'm' ? SEARCH_BUDGET_MOVETIME
			                     : SEARCH_BUDGET_DEPTH;
			nbudgets++;
		} else if (!strcmp(a, "--multipv") && has) {
			if (cli_positive(&multipv, argv[++i], "think", a) < 0) return 2;
			if (multipv > SEARCH_MULTIPV_MAX) {
				joseki_error("think: --multipv at most %d", SEARCH_MULTIPV_MAX);
				return 2;
			}
		} else if (!strcmp(a, "--positions") && has) {
			if (cli_positive(&positions, argv[++i], "think", a) < 0) return 2;
		} else if (!strcmp(a, "--time") && has) {
			if (cli_positive(&seconds, argv[++i], "think", a) < 0) return 2;
		} else if (!strcmp(a, "--kif-bonus") && has) {
			char *end;
			kif_bonus = strtol(argv[++i], &end, 10);
			if (*end || kif_bonus < -VALUE_MATE || kif_bonus > VALUE_MATE) {
				joseki_error("think: --kif-bonus wants centipawns, not '%s'",
				             argv[i]);
				return 2;
			}
		} else if (a[0] == '-' && a[1]) {
			joseki_error("think: unknown or incomplete option '%s'", a);
			return 2;
		} else if (!book) {
			book = a;
		} else {
			joseki_error("think: unexpected argument '%s'", a);
			return 2;
		}
	}
	if (!book) {
		joseki_error("usage: joseki think BOOK [--new] [--engine builtin|PATH] "
		             "[--usi-option N=V]... "
		             "[--engines N] [--nodes N|--movetime MS|--depth D] [--multipv K] "
		             "[--positions N] [--time S] " CLI_PLAN_USAGE);
		return 2;
	}
	if (cli_plan_check(&cp, "think") < 0) return 2;
	if (!oa.engine && (oa.nopts || oa.nodes || oa.plies || oa.burst)) {
		joseki_error("think: the --opponent options need --opponent");
		return 2;
	}
	if (oa.engine && (kifu || extend)) {
		joseki_error(
		    "think: --opponent walks the roots; --from-kifu and --extend do not go "
		    "with it");
		return 2;
	}
	if (nbudgets > 1) {
		joseki_error("think: give one of --nodes, --movetime, --depth");
		return 2;
	}
	if (!nbudgets) amount = 100000;

	int ret = 1;
	BookDB *db = NULL;
	RootList kl = {0}, roots = {0};
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
	BookDBOptions bo = {.must_exist = !fresh};
	int orc = bookdb_open(&db, book, &bo, err);
	if (orc < 0) {
		joseki_error("think: %s%s", err,
		             orc == BOOKDB_ENOBOOK ? " (think --new starts a new book there)" : "");
		goto done;
	}
	if (cli_plan_roots(&cp, &roots, db, quiet, "think") < 0) goto done;
	if (extend) {
		char rerr[ROOTS_ERRLEN];
		if (roots_from_extension(&kl, db, rerr) < 0) {
			joseki_error("think: --extend: %s", rerr);
			goto done;
		}
	}
	if (cli_open_engines(engines, (int)nengines, engine, uopts, nuopts, &think_stop_flag,
	                     "think") < 0)
		goto done;
	ThinkOptions opt = {
	    .engines = engines,
	    .nengines = (int)nengines,
	    .budget = {.kind = kind, .amount = amount},
	    .multipv = (int)multipv,
	    .max_positions = positions,
	    .max_seconds = (double)seconds,
	    .stop = &think_stop_flag,
	    .kif_bonus = (int)kif_bonus,
	    .roots = (const char *const *)roots.specs,
	    .root_weights = roots.weights,
	    .nroots = (int)roots.n,
	    .plan = cp.plan,
	    .progress = quiet ? NULL : stderr,
	    .first = (const char *const *)kl.specs,
	    .nfirst = kl.n,
	};
	if (oa.engine) {
		ret = run_probe(db, &oa, engines, (int)nengines, &opt, cp.plan.book_side);
		goto done;
	}
	ThinkStats st;
	int rc = think_run(&st, db, &opt, err);
	printf("think thought %llu failed %llu time_s %.1f per_s %.2f busy_pct %.0f root_value %d "
	       "commits %llu exhausted %d\n",
	       (unsigned long long)st.thought, (unsigned long long)st.failed, st.seconds,
	       st.seconds > 0 ? st.thought / st.seconds : 0.0, st.busy_pct,
	       st.root_known ? st.root_value : 0, (unsigned long long)st.commits, st.exhausted);
	if (rc < 0) {
		joseki_error("%s: %s", book, err[0] ? err : think_strerror(rc));
		goto done;
	}
	ret = 0;
done:
	for (uint64_t i = 0; i < nengines; i++) search_free(engines[i]);
	free(engines);
	roots_free(&kl);
	roots_free(&roots);
	bookdb_free(db);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	return ret;
}
