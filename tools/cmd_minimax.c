/*
 * joseki minimax BOOK [--full] [--draw-black CP] [--draw-white CP] [--leaves thought|games]
 *                [--min-depth D] [--min-games N] [--blend W] [--blend-games N] [--game-evals]
 *                [--games-book most-played|winrate [--games-min N]] [--batch N]
 *                [--fold-at SIZE]
 *                [--json] [--quiet]
 *
 * Backs the values up over the book graph and stores them in the records
 * (docs/minimax.md). Without --full, only what changed since the last run is
 * analysed again (and only records whose values changed are rewritten);
 * --full analyses the whole book and rewrites every record.
 */
#include <errno.h>
#include <ctype.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "shogi/bigmem.h"
#include "shogi/clock.h"
#include "shogi/memuse.h"
#include "minimax/bookmm.h"
#include "shogi/position.h"
#include "tools/cli_minimax.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

/* One overwritten stderr line, only on a terminal. */
static void on_progress(void *ctx, const char *phase, size_t done, size_t total)
{
	(void)ctx;
	if (total)
		fprintf(stderr, "\rminimax: %-8s %zu of %zu %s (%zu%%)   ", phase, done, total,
		        strcmp(phase, "lookups") ? "positions" : "children", done * 100 / total);
	else
		fprintf(stderr, "\rminimax: %-8s                                        ", phase);
	fflush(stderr);
}

/* SIGINT/SIGTERM: the run ends at its next check (BookmmOptions.stop). */
static atomic_bool g_stop;
static atomic_int g_signal;
static void on_stop(int sig)
{
	atomic_store(&g_signal, sig);
	atomic_store(&g_stop, true);
}

/* Where the run's values came from, as its summary says it. */
static void values_said(char *out, size_t n, const BookmmPolicy *p)
{
	if (p->games_book != BOOKMM_GAMES_NONE)
		snprintf(out, n, "games alone (%s, moves of at least %u game%s)",
		         p->games_book == BOOKMM_GAMES_WINRATE ? "win rate" : "most played",
		         p->games_min ? p->games_min : 1, p->games_min > 1 ? "s" : "");
	else if (p->game_evals)
		snprintf(out, n, "analyses and game comments");
	else
		snprintf(out, n, "analyses (game comments shown, not values)");
}

/* --fold-at: a size as --memory takes it (a number, K, M, G or T in powers
 * of 1024), but from 1 byte and not bounded by the machine's memory (it is a
 * file's length): 1000, 512K, 64M. */
static int parse_fold_at(void *dst, char *value, char *msg)
{
	(void)msg;
	char *end;
	errno = 0;
	double x = strtod(value, &end);
	if (errno || end == value || !(x >= 0) || value[0] == '-' ||
	    isspace((unsigned char)value[0]))
		return -1;
	const char *units = "kmgt", *u = *end ? strchr(units, tolower((unsigned char)*end)) : NULL;
	if (*end && !u) return -1;
	if (u) {
		for (int k = 0; k <= u - units; k++) x *= 1024;
		end++;
		if (!strcasecmp(end, "b") || !strcasecmp(end, "ib")) end += strlen(end);
	}
	if (*end || x < 1 || x > 9e18) return -1;
	*(uint64_t *)dst = (uint64_t)x;
	return 0;
}

int cmd_minimax(int argc, char **argv)
{
	static const int GAMES_BOOKS[] = {BOOKMM_GAMES_MOST_PLAYED, BOOKMM_GAMES_WINRATE};
	const char *book = NULL;
	bool json = false, quiet = false;
	BookmmOptions opt;
	memset(&opt, 0, sizeof opt);
	uint64_t min_depth = 0, memory = memuse_default_budget();
	bool min_depth_given = false;
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book"),
	    CLI_FLAG("--full", &opt.full, "analyse the whole book and rewrite every record"),
	    CLI_FLAG("--in-place", &opt.in_place,
	             "when the run is a whole-book one (--full, a book's first run): rewrite the "
	             "records where they are, not into a new file with full pages (an "
	             "incremental run writes in place anyway)"),
	    CLI_NUM("--draw-black", &opt.draw_black, -VALUE_MATE, VALUE_MATE, "CP",
	            "a draw's value for Black (default 0)"),
	    CLI_NUM("--draw-white", &opt.draw_white, -VALUE_MATE, VALUE_MATE, "CP",
	            "a draw's value for White (default 0)"),
	    CLI_ENUM("--leaves", &opt.policy.leaves, "thought|games", NULL,
	             "the leaves: thought positions (default) or where the games end"),
	    CLI_NUM("--min-depth", &min_depth, 0, 255, "D",
	            "thought: the least think depth of an inner position (default 1; 0: any)",
	            CLI_TAG(&min_depth_given, true)),
	    CLI_NUM("--min-games", &opt.policy.min_games, 0, 1000000000, "N",
	            "... or the least games through it (default: none)"),
	    CLI_REAL("--blend", &opt.policy.blend, 0, 1, "W",
	             "the weight of the win rate in a leaf (default 0: none)"),
	    CLI_NUM("--blend-games", &opt.policy.blend_games, 0, 1000000000, "N",
	            "the least games of a move for the blend (default 10)"),
	    CLI_FLAG("--game-evals", &opt.policy.game_evals,
	             "game comments ('** in CSA) count as evaluations too (default: shown, "
	             "never values)"),
	    CLI_ENUM("--games-book", &opt.policy.games_book, "most-played|winrate", GAMES_BOOKS,
	             "a book from games alone: each position's most played move, or every "
	             "move by its win rate; no analysis is a value (default: none, values from "
	             "analyses)"),
	    CLI_NUM("--games-min", &opt.policy.games_min, 1, 1000000000, "N",
	            "... the least games of a book move (default 1)", .needs = "--games-book"),
	    /* A writer running beside (think, the coordinator) waits for LMDB's lock
	     * at most one batch. */
	    CLI_NUM("--batch", &opt.batch, 1, 100000000, "N",
	            "records a write transaction (default 10000; incremental: as many as 250 ms "
	            "writes, at most 16384)"),
	    CLI_FN("--fold-at", &opt.fold_at, parse_fold_at, "SIZE",
	           "a size such as 64M or 512K, from 1 byte",
	           "an incremental run first folds the kept graph's journal into a new graph "
	           "file when it is longer than SIZE (default: a quarter of the graph file, 1M "
	           "at least), or when the changes it holds in memory take more than a quarter "
	           "of --memory"),
	    CLI_MEMORY(&memory),
	    CLI_JSON(&json),
	    CLI_QUIET(&quiet),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"minimax", opts, "docs/minimax.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	if (opt.policy.games_book != BOOKMM_GAMES_NONE &&
	    (opt.policy.game_evals || opt.policy.leaves != BOOKMM_LEAVES_THOUGHT ||
	     min_depth_given || opt.policy.min_games || opt.policy.blend > 0 ||
	     opt.policy.blend_games))
		return cli_usage_error(&cmd, "--games-book values moves by their games alone: "
		                             "--game-evals, --leaves, --min-depth, --min-games "
		                             "and --blend do not go with it");
	if (min_depth_given) opt.policy.min_depth = min_depth ? (int)min_depth : BOOKMM_ANY_DEPTH;
	/* Nothing else of the book is open here: a whole-book run, --full or
	 * not, writes it anew when no other writer has it. */
	opt.rebuild = true;
	shogi_init();
	double t0 = clock_ms_f();
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	/* A missing book is an error, not a new empty book. */
	/* Read at random: a book larger than memory is read in passes that ask for
	 * their pages ahead themselves (bookdb/bookdb.h), not through the kernel's
	 * read-around, which reads megabytes at each jump of a book grown by small
	 * writes. */
	BookDBOptions existing = {.must_exist = true, .random = true};
	if (bookdb_open(&db, book, &existing, err) < 0) {
		joseki_error("minimax: %s", err);
		return 1;
	}
	bigmem_configure(memory, bookdb_dir(db));
	BookmmStats st;
	char msg[BOOKMM_ERRLEN];
	/* Progress on a terminal: only a whole-book run takes long enough to show. */
	bool progress = !quiet && isatty(2);
	if (progress) opt.progress = on_progress;
	opt.stop = &g_stop;
	joseki_catch_stop(on_stop);
	/* A coordinator's whole-book child (tools/cmd_serve.c) stops as if
	 * sent SIGTERM when the coordinator dies, kill -9 included, rather than
	 * writing on beside the next one. */
	const char *parent = getenv(JOSEKI_PARENT_ENV);
	if (parent) {
		(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != (pid_t)strtol(parent, NULL, 10)) raise(SIGTERM); /* gone already */
	}
	int rc = bookmm_run(&st, db, &opt, msg);
	if (progress && !st.incremental) fputs("\r\033[K", stderr);
	double per_pos = 0, packed = 0;
	if (rc == 0) cli_minimax_space(&per_pos, &packed, db, &st);
	bookdb_free(db);
	if (rc == BOOKMM_ESTOPPED) {
		int sig = atomic_load(&g_signal);
		joseki_error("minimax: %s: %s by %s; nothing is lost: the next run does what this "
		             "one did not%s",
		             book, msg, sig == SIGINT ? "SIGINT" : "SIGTERM",
		             st.incremental || !st.full_reason[0] ? "" : " (the whole book again)");
		return 128 + sig;
	}
	if (rc < 0) {
		joseki_error("minimax: %s: %s", book, msg);
		return 1;
	}
	double ms = clock_ms_f() - t0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	char root[16] = "none", values[96];
	if (st.has_root) snprintf(root, sizeof root, "%d", st.root_value);
	values_said(values, sizeof values, &opt.policy);
	if (json) {
		json_t *reason = json_string(st.full_reason); /* NULL if not UTF-8 (a path) */
		json_t *o = json_pack(
		    "{s:I,s:I,s:I,s:I,s:I,s:I,s:i,s:I,s:b,s:I,s:I,s:o,s:o,s:I,s:I}", "positions",
		    (json_int_t)st.positions, "valued", (json_int_t)st.valued, "moves",
		    (json_int_t)st.moves, "edges", (json_int_t)st.edges, "settled",
		    (json_int_t)st.settled, "cyclic", (json_int_t)st.cyclic, "sweeps", st.sweeps,
		    "rewritten", (json_int_t)st.rewritten, "incremental", st.incremental, "changed",
		    (json_int_t)st.changed, "affected", (json_int_t)st.affected, "full_reason",
		    reason ? reason : json_string("(not UTF-8)"), "root_value",
		    st.has_root ? json_integer(st.root_value) : json_null(), "time_ms",
		    (json_int_t)(ms + 0.5), "peak_rss_bytes", (json_int_t)ru.ru_maxrss * 1024);
		json_object_set_new(o, "values", json_string(values));
		json_object_set_new(o, "unsettled", json_integer((json_int_t)st.unsettled));
		json_object_set_new(o, "unsettled_cycles",
		                    json_integer((json_int_t)st.unsettled_cycles));
		json_object_set_new(o, "bytes_per_position",
		                    per_pos > 0 ? json_real(per_pos) : json_null());
		json_object_set_new(o, "packed_bytes_per_position",
		                    packed > 0 ? json_real(packed) : json_null());
		json_object_set_new(o, "rebuilt", json_boolean(st.rebuilt));
		json_object_set_new(o, "file_bytes_before",
		                    st.rebuilt ? json_integer((json_int_t)st.bytes_before)
		                               : json_null());
		json_object_set_new(o, "file_bytes_after",
		                    st.rebuilt ? json_integer((json_int_t)st.bytes_after)
		                               : json_null());
		json_object_set_new(o, "lookups_sorted", json_boolean(st.lookups_sorted));
		json_object_set_new(o, "sorted_bytes", json_integer((json_int_t)st.sorted_bytes));
		json_object_set_new(o, "folded_bytes", json_integer((json_int_t)st.folded_bytes));
		json_object_set_new(o, "shallow_leaves",
		                    st.incremental ? json_null()
		                                   : json_integer((json_int_t)st.shallow));
		/* An incremental run's parts (whole-book runs: null). */
		const char *part[3] = {"read_ms", "analysis_ms", "write_ms"};
		double part_ms[3] = {st.read_ms, st.analysis_ms, st.write_ms};
		for (int k = 0; k < 3; k++)
			json_object_set_new(o, part[k],
			                    st.incremental
			                        ? json_integer((json_int_t)(part_ms[k] + 0.5))
			                        : json_null());
		/* A whole-book run's phases (incremental runs: null). */
		json_t *ph = st.incremental ? json_null() : json_object();
		for (int k = 0; !st.incremental && k < BOOKMM_PHASES; k++)
			json_object_set_new(ph, bookmm_phase_name[k],
			                    json_integer((json_int_t)(st.phase_ms[k] + 0.5)));
		json_object_set_new(o, "phases_ms", ph);
		joseki_with_peak(o);
		return joseki_print_json(o, JSON_REAL_PRECISION(6)) < 0 ? 1 : 0;
	}
	/* The summary in lines that fit the console (a coordinator's whole-book
	 * child writes it among serve's lines): the graph, the run, the values. */
	char line[12][CLI_MINIMAX_LINE];
	snprintf(line[0], sizeof line[0],
	         "minimax: %zu positions (%zu valued: %zu settled, %zu on or above cycles)%s",
	         st.positions, st.valued, st.settled, st.cyclic, st.incremental ? ";" : ",");
	if (st.incremental) {
		snprintf(
		    line[1], sizeof line[1],
		    "  incremental: %zu changed, %zu analysed again, %zu records rewritten, root "
		    "value %s, %.0f ms;",
		    st.changed, st.affected, st.rewritten, root, ms);
	} else {
		size_t n = strlen(line[0]);
		snprintf(line[0] + n, sizeof line[0] - n, " %zu graph moves (%zu edges),", st.moves,
		         st.edges);
		snprintf(line[1], sizeof line[1],
		         "  %d sweep%s, %zu records rewritten, root value %s, %.0f ms (whole book: "
		         "%s);",
		         st.sweeps, st.sweeps == 1 ? "" : "s", st.rewritten, root, ms,
		         st.full_reason);
	}
	char peak[JOSEKI_PEAK_LEN];
	snprintf(line[2], sizeof line[2], "  values from %s; peak memory %s", values,
	         joseki_peak_memory(peak, sizeof peak));
	int nl = 3;
	if (st.incremental && st.changed)
		snprintf(line[nl++], sizeof line[3],
		         "  its parts: changes read %.0f ms, subgraph analysed %.0f ms, records "
		         "written %.0f ms",
		         st.read_ms, st.analysis_ms, st.write_ms);
	nl = cli_minimax_notes(line, nl, &st, per_pos, packed);
	/* Imported positions with no depth (Apery, some DB2016 lines) are 0
	 * deep: under the default least depth 1 every one is a leaf, and a book
	 * of them backs nothing up. */
	if (!st.incremental && st.shallow)
		snprintf(
		    line[nl++], sizeof line[0],
		    "  %zu position%s analysed shallower than --min-depth %d (imported with no "
		    "depth: 0): leaves, their analyses their values, nothing backed up through "
		    "them; --min-depth 0 backs values up through every analysed position",
		    st.shallow, st.shallow == 1 ? "" : "s",
		    opt.policy.min_depth > 0 ? opt.policy.min_depth : 1);
	for (int i = 0; i < nl; i++) cli_wrap(stdout, line[i], 0, 2, CLI_CONSOLE_WIDTH);
	return 0;
}
