/*
 * search/usi_engine.h — the external USI engine driver: one engine process
 * behind the SearchEngine interface (search/search.h).
 *
 * The engine is started by path and arguments with its stdin/stdout on pipes
 * and its stderr appended to a log file, in a process group of its own (so a
 * script engine's children die with it). The driver speaks USI:
 *
 *   usi → id name … / option name N type … / usiok   (handshake timeout)
 *   setoption name N value V       (each configured option, in order)
 *   isready → readyok              (handshake timeout)
 *   usinewgame
 *   setoption name MultiPV value K (whenever K changes)
 *   position startpos|sfen … [moves …]
 *   go nodes N | go movetime MS | go depth D
 *   go btime B wtime W [binc I winc J] [byoyomi Y]   (a clock budget)
 *   info … / bestmove M [ponder P]
 *
 * Every configured option must be one the engine listed (`option name N`):
 * one it did not list fails the start (SEARCH_EINVAL, naming the option, the
 * engine and the names it lists nearest to it), since an engine ignores a
 * setoption it does not know and a mistyped USI_Hash or EvalDir would go
 * unnoticed. A name the engine lists in another case (usi_hash for
 * USI_Hash) is sent in the engine's spelling, which some engines need, and
 * said through the config's notice callback.
 *
 * Engines known by their id name to take only the USI time controls in go
 * (gpsshogi: `go movetime` aborts it) get a movetime budget as
 * `go btime 0 wtime 0 byoyomi MS`, MS in whole seconds (at least 1000); a
 * nodes or depth budget is refused (SEARCH_EINVAL, nothing sent).
 *
 * and keeps, per multipv index, the last final info line (exact score and a
 * PV) seen before bestmove; lowerbound/upperbound lines are ignored.
 *
 * Robustness. Each position has a hard limit: movetime × time_factor +
 * slack_ms; for nodes, nodes / nps_floor seconds × time_factor + slack_ms; for
 * depth, depth_limit_ms; for a clock, what the side to move has (its time,
 * increment and byoyomi) + slack_ms. It counts from the go command. When it passes, the engine is
 * told `stop` and given stop_grace_ms to answer (an answer then is accepted); otherwise it is
 * killed. An engine that exits (EOF on its stdout), hangs, answers a malformed or illegal bestmove,
 * or prints more than max_garbage unreadable lines is logged and killed, a new one is started, and
 * the position is tried once more. (Under a clock a timeout is not retried: the side's time is
 * gone.) If the second attempt fails too, analyse returns that attempt's error code
 * (SEARCH_ETIMEOUT, SEARCH_ECRASH, SEARCH_EILLEGAL, SEARCH_EPROTOCOL,
 * SEARCH_EHANDSHAKE, SEARCH_ESPAWN) and the next call starts a fresh engine,
 * so no position is silently lost and the driver stays usable.
 *
 * Malformed info lines are skipped (counted in SearchResult.malformed and the
 * first few logged); an answer whose only info lines were malformed counts as
 * SEARCH_EPROTOCOL. Writes to a dead engine never raise SIGPIPE: the signal is
 * blocked in the writing thread and a pending one is consumed.
 */
#ifndef SEARCH_USI_ENGINE_H
#define SEARCH_USI_ENGINE_H

#include <signal.h>
#include <stdint.h>

#include "search/search.h"
#include "shogi/errors.h"

typedef struct UsiEngine UsiEngine;

typedef struct {
	const char *name;  /* option name, e.g. "USI_Hash" */
	const char *value; /* option value, e.g. "256" */
} UsiOption;

typedef struct {
	const char *path;         /* program to run (searched in PATH if it has no '/') */
	const char *const *argv;  /* extra arguments, NULL-terminated; may be NULL */
	const UsiOption *options; /* sent with setoption after usiok */
	int noptions;
	const char *log_path;     /* engine stderr and driver messages; NULL: discarded */
	bool log_io;              /* also log every line sent and received */
	int handshake_timeout_ms; /* usi→usiok and isready→readyok; default 30000 */
	double time_factor;       /* hard limit multiplier; default 3.0 */
	int slack_ms;             /* hard limit addition; default 2000 */
	uint64_t nps_floor;       /* nodes budgets: assumed slowest speed; default 100000 */
	int depth_limit_ms;       /* depth budgets: hard limit; default 600000 */
	int stop_grace_ms;        /* after stop, before kill; default 1000 */
	int max_garbage;          /* unreadable lines per search before giving up; default 10000 */
	/*
	 * A new game (usi_engine_new_game) ends the engine process (quit) and the
	 * next search starts a new one, as cutechess-cli's restart=on: for engines
	 * whose play depends on what they searched in earlier games although they
	 * were told usinewgame (fairy-stockfish at a node budget does). The
	 * processes' CPU time is summed as across any restart. Default false.
	 */
	bool restart_each_game;
	/*
	 * Optional cancel flag (e.g. set by a SIGINT handler), polled every 50 ms.
	 * When it becomes non-zero, the engine is told stop, given stop_grace_ms
	 * to answer (and kept if it does, killed otherwise) and the call returns
	 * SEARCH_ECANCELED without retrying. Must outlive the engine.
	 */
	const volatile sig_atomic_t *cancel;
	/*
	 * Optional: called with what an engine's start has to say that is not an
	 * error (an option sent in the engine's spelling of its name), once per
	 * UsiEngine (a restart says nothing again), from the thread that opens
	 * it (usi_engine_open_many: several at once). The message names the
	 * program; foreign bytes in it are escaped. NULL: nothing is said.
	 */
	void (*notice)(void *ctx, const char *msg);
	void *notice_ctx;
} UsiEngineConfig;

/* Fills *cfg with the defaults above and no path. */
void usi_engine_config_init(UsiEngineConfig *cfg);

/*
 * Starts the engine and completes the handshake. The config's strings are
 * copied. Returns 0 with *out set, or SEARCH_EINVAL (no path, bad option
 * text, an option the engine does not list), SEARCH_ESPAWN, SEARCH_EHANDSHAKE, SEARCH_ECRASH,
 * SEARCH_EIO or SEARCH_ENOMEM with a message in err (SEARCH_ERRLEN bytes, may be NULL); *out is
 * NULL then and no process is left behind.
 */
JOSEKI_MUST_USE int usi_engine_open(UsiEngine **out, const UsiEngineConfig *cfg, char *err);

/* Sends quit, waits stop_grace_ms, kills what is left. Accepts NULL. */
void usi_engine_free(UsiEngine *e);

/* The engine as a SearchEngine; search_free() on it is usi_engine_free(). */
SearchEngine *usi_engine_search(UsiEngine *e);

/* See search_analyse(). */
JOSEKI_MUST_USE int usi_engine_analyse(UsiEngine *e, SearchResult *out, const Position *pos,
                                       const SearchBudget *budget, int multipv);

/*
 * Parses a position spec (docs/shogi.md: SFEN, startpos, "... moves ...") and
 * analyses it. SEARCH_EINVAL with a message naming the spec when it does not
 * parse.
 */
JOSEKI_MUST_USE int usi_engine_analyse_spec(UsiEngine *e, SearchResult *out, const char *spec,
                                            const SearchBudget *budget, int multipv);

/* usinewgame before the next position (after isready/readyok); with
 * restart_each_game, in a new engine process. */
void usi_engine_new_game(UsiEngine *e);

/* "id name" of the running engine, or the path if it gave none. */
const char *usi_engine_name(const UsiEngine *e);
/* Message of the last failure, "" if none. */
const char *usi_engine_last_error(const UsiEngine *e);
/* Whether the running engine takes budget: SEARCH_EINVAL (the message in
 * usi_engine_last_error) for an engine that takes only time controls
 * (gpsshogi) given nodes or a depth, else 0. What analyse refuses, told
 * before a search (a caller that must change nothing before it knows). */
JOSEKI_MUST_USE int usi_engine_check_budget(UsiEngine *e, const SearchBudget *budget);
/* pid of the current engine process, or -1 when none is running. */
JOSEKI_MUST_USE int usi_engine_pid(const UsiEngine *e);

typedef struct {
	uint64_t positions; /* analyse calls that succeeded */
	uint64_t failures;  /* analyse calls that failed after the retry */
	uint64_t retries;   /* positions tried a second time */
	uint64_t starts;    /* engine processes started (the first included) */
	uint64_t crashes;   /* EOF or exit while working */
	uint64_t timeouts;  /* hard limit passed (stopped or killed) */
	uint64_t kills;     /* processes killed with SIGKILL */
	uint64_t illegal;   /* illegal best moves */
	uint64_t protocol;  /* unreadable answers */
	uint64_t malformed; /* malformed lines skipped */
} UsiEngineStats;

void usi_engine_stats(UsiEngineStats *out, const UsiEngine *e);

/*
 * The hard limit in milliseconds the driver allows for one search with this
 * budget under cfg, us to move (a clock budget's limit is us's; the others
 * do not depend on it). Exposed for tests and for `think` to print.
 */
int64_t usi_engine_hard_limit_ms(const UsiEngineConfig *cfg, const SearchBudget *budget, Color us);

/*
 * Driver overhead figure: analyses pos count times with budget and returns
 * the mean wall time per position in microseconds in *us_per_position.
 * With an engine that answers instantly this is the driver's own cost per
 * analysed position (pipes, parsing, legality checks). See docs/notes/search.md,
 * "Driver overhead".
 */
JOSEKI_MUST_USE int usi_engine_bench_overhead(double *us_per_position, UsiEngine *e,
                                              const Position *pos, const SearchBudget *budget,
                                              int multipv, int count);

#define USI_MAX_ENGINES 1024

/*
 * Starts n (1..USI_MAX_ENGINES) engines with cfg, their handshakes side by
 * side (an engine that loads a big evaluation file takes seconds: `think
 * --engines 8` waits for the slowest, not for the sum). Each engine is then
 * used by one thread at a time (think gives one to each of its workers).
 * Returns 0 with out[0..n) set, or SEARCH_EINVAL for n, or the first failing
 * engine's error (message in err naming which, "engine 2 of 8: ...",
 * unless every engine failed alike); then
 * every out[i] is NULL and no process is left.
 */
JOSEKI_MUST_USE int usi_engine_open_many(UsiEngine **out, const UsiEngineConfig *cfg, int n,
                                         char *err);

#endif
