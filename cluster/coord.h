/*
 * cluster/coord.h — the cluster coordinator's work logic (docs/cluster.md):
 * leases of selected leaves handed to remote workers, their results stored,
 * expiry, failed tries, set-aside positions. No HTTP here: server/work_api.c
 * calls these functions from one thread (a Coord is not thread-safe).
 *
 * The coordinator is think without engines: the same selector (sel_select,
 * kif bonus, roots) picks leaves, the same storage (think_store) writes the
 * answers. Every leased, queued or set-aside position is leased in the
 * selector, so no two workers get the same position while a lease lives.
 *
 * State kept in the book's `work` database, in the same write transaction as
 * the results it goes with (one coord_commit after each round of requests):
 *   "N"               u64 BE: the next lease id
 *   "L" + u64 BE id   a lease: i64 LE expiry (unix ms), u8 len + token name,
 *                     u8 len + worker name, u16 LE count (bit 15 set: a
 *                     lease made ahead, nobody's when it was written: see
 *                     coord_make_ahead), then per position u8 state ('P'
 *                     pending, 'D' done, 'R' returned), 16-byte key, u8 len +
 *                     SFEN
 *   "T" + 16-byte key a position's failed tries: u8 tries, u8 set aside (0/1),
 *                     u8 len + last failed worker, u8 len + SFEN
 *   "S", "S" + ...    the selector's journal since its last checkpoint
 *                     (cluster/coord_ckpt.c)
 *   "C", "P", "Q", "U" the spot checks: checks under way, each token's results
 *                     since its last good check, each token's counts and
 *                     quarantine, positions to think again (coord_spot_store.c)
 * So a coordinator killed at any moment and restarted has exactly the leases,
 * tries and results of its last commit. Leases whose positions are all done
 * are deleted at once (a later submission for such a lease id is recognised
 * by the id being below "N": its keys are all analysed, so it is ignored);
 * others are kept until COORD_FORGET_MS after their expiry.
 *
 * Times are unix milliseconds passed in by the caller (tests move the clock).
 */
#ifndef BOOKGEN_COORD_H
#define BOOKGEN_COORD_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "bookdb/minimax_hook.h"
#include "bookgen/plan.h"
#include "search/search.h"
#include "shogi/notation.h"

enum {
	COORD_OK = 0,
	COORD_ENOMEM = ERR_COORD - 0,
	COORD_EINVAL = ERR_COORD - 1,   /* a request the protocol refuses (HTTP 400) */
	COORD_ENOLEASE = ERR_COORD - 2, /* no such lease for this token (HTTP 404) */
	COORD_EBOOK = ERR_COORD - 3,    /* the book failed; the coordinator must restart */
	COORD_EOPTION = ERR_COORD - 4,  /* bad option or root at coord_open */
	COORD_EMINIMAX = ERR_COORD - 5, /* the periodic minimax failed; the coordinator goes on */
	COORD_EQUARANTINE = ERR_COORD - 6, /* the token is in quarantine (HTTP 403) */
};
const char *coord_strerror(int code);

#define COORD_ERRLEN 512
#define COORD_MAX_BATCH 256      /* positions per lease at most */
#define COORD_MAX_LINES 64       /* moves per result at most */
#define COORD_NAME_MAX 64        /* worker and token names, bytes */
#define COORD_ENGINE_MAX 128     /* engine names, bytes */
#define COORD_MAX_TRIES 3        /* failed tries before a position is set aside */
#define COORD_FORGET_MS 86400000 /* a lease is remembered this long after expiry */
/* A worker is live when it was heard from in the last COORD_LIVE_MS (joseki
 * worker sends a heartbeat after COORD_LIVE_MS / 3 without a request) and
 * did not say it left; one gone (left, or silent) is listed COORD_GONE_MS. */
#define COORD_LIVE_MS 60000
#define COORD_GONE_MS 3600000

typedef struct {
	SearchBudget budget;  /* sent to workers as the limit */
	int multipv;          /* 1..SEARCH_MULTIPV_MAX */
	double lease_seconds; /* 0: 600 */
	int kif_bonus;
	/* Selection, as think's (bookgen/plan.h): the policy, and the roots with
	 * their shares of the effort. */
	PlanOptions plan;
	const char *const *roots;   /* position specs; NULL/0: the start position */
	const double *root_weights; /* NULL: even */
	int nroots;
	/* The way to the roots, leased before any root's leaves (plan_set_paths). */
	const char *const *paths;
	size_t npaths;
	/* The periodic minimax (the front end passes bookmm_hook()): called after
	 * a commit when minimax_every results or minimax_seconds have passed since
	 * the last call (0: that trigger off). On failure (message in err) the
	 * coordinator goes on. */
	BookMinimaxHook minimax;
	uint64_t minimax_every;
	double minimax_seconds;
	/* sel_load instead of sel_attach: every position's key read at start
	 * (a start of seconds per 10 M positions; no LMDB lookup for a node met
	 * later). Default lazy: positions read as the selector meets them. */
	bool preload;
	/* The selector's memory (sel_trim: key filter, node map, graph), kept
	 * within it after each tick's commit; 0: no limit. */
	uint64_t select_memory;
	/* The history (cluster/coord_history.h): a point every history_seconds
	 * (0: 60; < 0: none), kept in the book's work database. */
	double history_seconds;
	/* Selection in slices (coord_select.c): an acquire selects for at most
	 * this long (0: COORD_SLICE_MS); a search that needs more is suspended
	 * and goes on in the next acquire or between requests
	 * (coord_select_ahead, coord_select_idle), and the acquire answers with
	 * the positions it has (coord_acquire). < 0: every search whole, in the
	 * acquire, and nothing between requests. */
	double select_slice_ms;
	/* A trim of the selector's graph runs in slices of this many ms (0:
	 * COORD_TRIM_SLICE_MS; < 0: at once, in the tick that begins it). */
	double trim_slice_ms;
	/* The stock of leaves selected ahead of the acquires beside the service
	 * (coord_select_ahead): 0, the most asked in one of the last rounds;
	 * N > 0, N; < 0, none (the selection goes on between requests only with
	 * a suspended search, the first one, or what the last acquire lacked). */
	int select_ahead;
	/* Provisional leaves (bookgen/provisional.h): once the selector's first
	 * search has gone on this many ms since the coordinator opened without
	 * a leaf (a search from scratch over a large book), an acquire that
	 * finds the search suspended is answered with the leaves the book's
	 * own values lead to; after that search, an acquire the selection
	 * leaves short for want of time gets the rest so, until the selection
	 * has answered every acquire in full for this many ms (of the now_ms
	 * the acquires are given). 0: never (the acquire waits for the
	 * search). */
	double provisional_after_ms;
	/* The selector's snapshot (bookgen/snapshot.h; NULL: none): read at
	 * coord_open when it is of the book as it is now (then removed, used or
	 * not), written by coord_close. Not with preload. */
	const char *snapshot;
	/* With a snapshot: a checkpoint of the selector every this many seconds
	 * (0: none), so that a start after a crash reads it back with the
	 * results stored since (coord_ckpt.c). */
	double checkpoint_seconds;
	/* Re-analysis (serve --work --reanalyse, bookgen/reanalyse.h): the
	 * positions to lease, in this order, thought or not, instead of the
	 * selector's leaves (the paths too); each result stored by the record
	 * merge rule and marked done for campaign (think_store_again). Not with a
	 * snapshot. */
	const Key *again;
	size_t nagain;
	uint64_t campaign;
	/* Spot checks (coord_spot.c, docs/cluster.md "Spot checks"): the share
	 * of a token's results held back and given to another token's worker
	 * to think again and compare: spot_new_rate for the token's first
	 * spot_new_results results, spot_rate after. Both rates 0: no spot
	 * checks (and no mate claim verified). spot_tolerance: winning chances
	 * (0: COORD_SPOT_TOLERANCE in cluster/coord_spot.h). spot_seed: the
	 * sampling's random stream (0: from the clock). */
	double spot_rate, spot_new_rate;
	uint64_t spot_new_results;
	double spot_tolerance;
	uint64_t spot_seed;
	/* What a quarantine takes out of the book: the token's results since its
	 * last good check, and at least its last spot_keep (a good check vouches
	 * for the results before it only as a sample does). 0: none beyond. */
	uint64_t spot_keep;
} CoordOptions;

#define COORD_SLICE_MS 20

/* Who is asking (the token's name authenticates; the worker fields inform). */
typedef struct {
	const char *token; /* the token's name from the tokens file */
	/* The worker's name. NULL on a submit or an abort: the lease's worker,
	 * and no worker of its own in the status (an abort's empty body). */
	const char *name;
	/* The worker process's random id (may be NULL): two workers given the
	 * same name stay two in the status. */
	const char *instance;
	const char *engine;
	uint64_t nps;
} CoordWorker;

typedef struct {
	Key key;
	char sfen[SFEN_MAX];
} CoordPos;

typedef struct {
	uint64_t id;
	int64_t expires_ms;
	int n;
	CoordPos pos[COORD_MAX_BATCH];
} CoordLease;

/* One multipv line of a result, as the worker sent it. */
typedef struct {
	char move[USI_MOVE_MAX + 8]; /* USI text (checked against the position here) */
	bool mate;
	int score; /* cp, or mate distance in plies (positive: side to move mates) */
	int depth;
	uint64_t nodes;
} CoordLine;

typedef struct {
	Key key;
	bool failed; /* a failed try (no lines) */
	int nlines;
	CoordLine lines[COORD_MAX_LINES];
} CoordResult;

#define COORD_INSTANCE_MAX 32 /* a worker instance id, bytes */

typedef struct {
	char name[COORD_NAME_MAX + 1];
	char token[COORD_NAME_MAX + 1];
	char instance[COORD_INSTANCE_MAX + 1];
	char engine[COORD_ENGINE_MAX + 1];
	uint64_t nps;
	int64_t last_seen_ms;
	bool left; /* it said it stopped (a heartbeat with leaving) */
} CoordWorkerSeen;

typedef struct {
	Key key;
	char sfen[SFEN_MAX];
	int tries;
} CoordAside;

#define COORD_REASON_MAX 255 /* why a token is in quarantine, bytes */

/* A token's spot checks (kept in the book). */
typedef struct {
	char token[COORD_NAME_MAX + 1];
	uint64_t results;    /* results of it accepted, ever */
	uint64_t passed;     /* checks of its results that agreed */
	uint64_t compared;   /* its results compared in checks (checked, or checking) */
	uint64_t strikes;    /* its results a third check found at fault */
	uint64_t unverified; /* results stored since its last good check */
	uint64_t kept;       /* results a quarantine would take out: those, and its last ones */
	uint64_t held;       /* results held back for a check now */
	bool quarantined;
	int64_t quarantined_ms;            /* since when (unix ms) */
	uint64_t taken_out;                /* its results taken out of the book then */
	char reason[COORD_REASON_MAX + 1]; /* why it is in quarantine */
	char fault[COORD_REASON_MAX + 1];  /* its last fault ("" none) */
} CoordTokenTrust;

typedef struct {
	/* This coordinator process: its random id, new at each start (a client
	 * that sees it change knows the coordinator restarted, whatever its
	 * counters say), and when it started (unix ms). */
	char instance[17];
	int64_t started_ms;
	uint64_t queue;            /* positions returned and waiting for a worker */
	uint64_t leases_live;      /* leases with pending positions, not expired */
	uint64_t leases_expired;   /* kept leases that expired with positions pending (since
	                            * this start, or pending past their expiry) */
	uint64_t leases_returned;  /* kept leases closed otherwise (an abort, a failed entry),
	                            * and those restored not pending */
	uint64_t leases_ahead;     /* leases made ahead, waiting for an acquire (not live) */
	uint64_t leases_unclaimed; /* made ahead, read back unbound after a crash (perhaps
	                            * handed out), not expired, no result yet (not live) */
	uint64_t acquired_ahead;   /* acquires answered with a lease made ahead, since start */
	uint64_t ahead_released;   /* leases made ahead released unused, since start */
	uint64_t results;          /* results stored since start */
	uint64_t failed;           /* failed tries since start (entries and expiries) */
	uint64_t mated;            /* positions without a legal move valued by the coordinator */
	uint64_t lines_queued;     /* positions of the book's lines queued (co_queue_lines) */
	/* Re-analysis (again): results whose analysis replaced the record's, and
	 * list positions not handed out yet. */
	bool again;
	uint64_t again_replaced, again_left;
	double results_per_s; /* over the last 60 s */
	uint64_t minimax_runs;
	bool minimax_running; /* a run is going on (beside the service) */
	uint64_t book_thought;
	/* The selector: nodes held, the memory its budget counts
	 * (SelStats.used_bytes) and the budget (CoordOptions.select_memory),
	 * record bytes held, trims that dropped nodes and the nodes they
	 * dropped, and the time they took (ms); of the bytes, the part made
	 * for the book at the start (SelStats.fixed_bytes: the key filter and
	 * node map), the graph having the rest of the budget. */
	uint64_t select_nodes, select_bytes, select_budget, select_record_bytes, select_trims,
	    select_trimmed, select_fixed;
	/* The selector's work since start (SelStats): nodes expanded, visits,
	 * records read from the book by its searches, and the searches a stored
	 * bound answered (of them, bounds that depend on the path); of the
	 * expansions, those of nodes a trim had taken the edges of; the nodes
	 * made again for keys a trim dropped; the bounds changes cleared; the
	 * book's keys in the key filter, and the filters made again as the
	 * book outgrew them. */
	uint64_t select_expansions, select_visits, select_fetches, select_fetch_misses,
	    select_tt_hits, select_path_hits, select_reexpansions, select_remade,
	    select_invalidated, filter_keys, filter_regrows;
	double trim_ms;
	/* The calls that worked on a trim (SelStats.trim_slices), and whether
	 * one is under way (sel_trimming). */
	uint64_t trim_slices;
	bool trimming;
	/* Searches that began with every bound cleared: a change to a node new
	 * after a trim (SelStats.trim_clears). */
	uint64_t trim_clears;
	/* Results below a part a trim dropped that reached the bounds above
	 * through the dropped positions (SelStats.walk_ups). */
	uint64_t trim_walks;
	/* Where the coordinator's time went since start, ms. */
	double select_ms, store_ms, commit_ms, minimax_ms, last_minimax_ms;
	/* Selection in slices: searches suspended at a slice's end; acquires
	 * that ended with one suspended (fewer positions than asked, or none). */
	uint64_t select_slices, select_short;
	/* Selecting beside the service (coord_select_ahead): time, leaves found. */
	double select_ahead_ms;
	uint64_t select_ahead_leaves;
	uint64_t selected; /* leaves selected now, waiting for an acquire */
	/* Positions leased as provisional leaves (opt.provisional_after_ms);
	 * whether the selector has answered yet (its first search done), and
	 * whether provisional leaves are over for the run (none were needed,
	 * or the selection has kept up with the acquires since). */
	uint64_t provisional;
	bool select_answered, provisional_over;
	/* The times they were back, the selection behind the acquires for
	 * opt.provisional_after_ms after they were over. */
	uint64_t provisional_back;
	/* Records of children the walk did not read, the selector's key filter
	 * having ruled them out (not in the book: leaves). */
	uint64_t provisional_spared;
	/* Acquires that found no provisional leaf walked ready (the walk behind
	 * the workers: on a book larger than memory, the disk), and the time
	 * they waited for one (up to a slice each). */
	uint64_t provisional_dry;
	double provisional_dry_ms;
	/* Provisional leaves walked and waiting to be taken (-1 before the
	 * walk began, 0 after it ended). */
	int provisional_ready;
	double minimax_apply_ms; /* the service writing minimax's records (in minimax_ms too) */
	/* The start: the selector restored from the snapshot; else why not ("" when
	 * there was none; owned by the Coord, valid while it lives). */
	bool snapshot_restored;
	const char *snapshot_note;
	/* Checkpoints written and failed since the start, and those not taken
	 * (the book unchanged since the last one written); the last one's writing,
	 * the time the service spent in the last one's fork, and making the
	 * selector's changes held while its child wrote, ms. */
	uint64_t checkpoints, checkpoints_failed, checkpoints_unchanged;
	double checkpoint_ms, checkpoint_fork_ms, checkpoint_held_ms;
	size_t naside;
	CoordAside *aside; /* malloc'd, naside of them */
	size_t nworkers;
	CoordWorkerSeen *workers; /* malloc'd: live (heard from in the last COORD_LIVE_MS) */
	size_t ngone;
	CoordWorkerSeen *gone; /* malloc'd: gone in the last COORD_GONE_MS (left, or silent) */
	/* Spot checks: on or not, the options, the checks now (waiting for a
	 * worker, leased, waiting for a third opinion after a disagreement) and
	 * since start (agreed, disagreed, decided against nobody, given up for
	 * want of another token, short mate claims disproved by the
	 * coordinator, faults found by a third, tokens put in quarantine,
	 * results taken out). */
	bool spot;
	double spot_rate, spot_new_rate, spot_tolerance;
	uint64_t spot_new_results;
	uint64_t spot_waiting, spot_leased, spot_deciding;
	uint64_t spot_passed, spot_disagreed, spot_undecided, spot_unchecked, spot_disproved,
	    spot_strikes, spot_quarantines, spot_taken_out;
	size_t ntokens;
	CoordTokenTrust *tokens; /* malloc'd: every token that asked for work or sent a result */
} CoordStatus;

typedef struct Coord Coord;

/* Loads the selector over db (opened read-write; it must outlive the Coord),
 * restores the leases and tries kept in the book. 0 or a negative code with a
 * message in err (COORD_ERRLEN bytes, may be NULL). */
JOSEKI_MUST_USE int coord_open(Coord **out, BookDB *db, const CoordOptions *opt, char *err);
/* Commits what is pending and frees c; a failed commit is not reported
 * (coord_commit first, where it must be). Accepts NULL. */
void coord_free(Coord *c);
/* Stops c cleanly: the selection stopped, what is pending committed, with
 * opt.snapshot the selector's state written there for the next start (its
 * stamp the book's after that commit; *save_ms, may be NULL: how long the
 * writing took), then a minimax run under way waited for (its writes
 * dropped, mended by the next run), and c freed. 0, or a negative code with err (a failed commit,
 * or the snapshot not written: the next start then searches from scratch). Accepts NULL. */
JOSEKI_MUST_USE int coord_close(Coord *c, double *save_ms, char *err);
/* A checkpoint now (what the tick does every opt.checkpoint_seconds): after
 * a commit, a child process writes the snapshot while c goes on. 1 when one
 * was begun, 0 when not now (one being written, a search suspended, no
 * snapshot path) or not needed (the book's txnid that of the last one
 * written: nothing committed since), or a negative code (the commit failed). coord_checkpoint_wait
 * waits for the child: 0, or COORD_EBOOK when it failed. */
JOSEKI_MUST_USE int coord_checkpoint(Coord *c, int64_t now_ms, char *err);
JOSEKI_MUST_USE int coord_checkpoint_wait(Coord *c);
/* What became of the snapshot at coord_open: true when the selector was
 * restored from it (*ms: how long that took); note says why not otherwise
 * ("" when there was none or none was asked for). */
bool coord_snapshot_restored(const Coord *c, const char **note, double *ms);

/* Up to max (1..COORD_MAX_BATCH) positions in a new lease: returned positions
 * first (not to the worker whose try of them failed last while another worker
 * was heard from in the last minute), then new leaves,
 * as many as its slice of selection found (opt.select_slice_ms).
 * Returns the count (0: no work now, or none yet: coord_select_busy; no lease
 * made) or a negative code. The lease is durable only after coord_commit. */
JOSEKI_MUST_USE int coord_acquire(Coord *c, CoordLease *out, const CoordWorker *w, int max,
                                  int64_t now_ms, char *err);

/* Leases made ahead, so that an acquire needs no commit of its own, nor the
 * thread that calls these (server/work_api.c answers it from the request's
 * own thread): after a round's requests and before its commit,
 * coord_make_ahead makes one new lease for each acquire of the round (of the
 * size it asked), then more of the size the last one asked until those
 * waiting would answer the acquires of COORD_AHEAD_COVER_MS at the rate of
 * the last whole seconds (a reserve: the acquires a stall of the service
 * thread meets are answered all the same), up to COORD_AHEAD_MAX waiting,
 * from the leaves the selection has ready, while acquires come often (the
 * last two COORD_AHEAD_GAP_MS apart or less). Once committed, coord_ahead_export
 * hands them over; the caller hands each out to an acquire of at most its
 * size while coord_ahead_ok (returned positions go first, through
 * coord_acquire, and no token may be in quarantine) to a token it does not
 * exclude (coord_ahead_excludes: a lease made ahead holds up to
 * COORD_AHEAD_CHECKS spot checks waiting, of any token but the one
 * acquiring), and tells c with coord_bind (the binding is
 * written with the next commit), or gives it back with coord_ahead_release
 * (its positions go back to the selection, its checks to those waiting):
 * after COORD_AHEAD_KEEP_MS
 * unused. Those not handed over are released by coord_tick after as long,
 * and every one left by coord_close. A lease made ahead is nobody's: a
 * submission to it is refused. One a crash left unbound (made ahead, perhaps
 * handed out) is read back unclaimed: its results are taken from any token,
 * which it then belongs to; its positions go to nobody else; it expires as
 * usual (COORD_AHEAD_KEEP_MS after the lease time). coord_make_ahead: 0 or
 * COORD_EBOOK with err. coord_ahead_export: up to max into out (expires_ms 0),
 * with the tokens each excludes, their count. coord_bind: 0, COORD_EQUARANTINE (the token was put
 * in quarantine since: the lease released), COORD_EINVAL (id is none handed over) or COORD_EBOOK.
 */
#define COORD_AHEAD_MAX 256
#define COORD_AHEAD_GAP_MS 500
#define COORD_AHEAD_KEEP_MS 6000
#define COORD_AHEAD_COVER_MS 3000
#define COORD_AHEAD_CHECKS 4
typedef struct {
	CoordLease lease;
	int nexclude;
	char exclude[COORD_AHEAD_CHECKS * 2][COORD_NAME_MAX + 1];
} CoordAhead;
JOSEKI_MUST_USE int coord_make_ahead(Coord *c, int64_t now_ms, char *err);
int coord_ahead_export(Coord *c, CoordAhead *out, int max);
bool coord_ahead_excludes(const CoordAhead *a, const char *token);
bool coord_ahead_ok(const Coord *c);
JOSEKI_MUST_USE int coord_bind(Coord *c, uint64_t id, const CoordWorker *w, int max,
                               int64_t expires_ms, int64_t now_ms, char *err);
JOSEKI_MUST_USE int coord_ahead_release(Coord *c, uint64_t id, int64_t now_ms, char *err);

/* Applies a submission for lease id: every result is checked first (key in the
 * lease, moves legal in its position, values in range); any problem returns
 * COORD_EINVAL with a message and changes nothing. Results for positions
 * already analysed are ignored; late ones (lease expired) are taken. Returns
 * the number of results accepted: stored, held back for a spot check, or
 * answering one. With spot checks on, a result claiming a mate in 1 or 3
 * plies (or being mated in 2) that the position disproves puts the token in
 * quarantine: COORD_EQUARANTINE, nothing of the body written. */
JOSEKI_MUST_USE int coord_submit(Coord *c, uint64_t id, const CoordWorker *w,
                                 const CoordResult *res, size_t n, int64_t now_ms, char *err);

/* Reads into memory, in the calling thread, the records coord_submit of these
 * results will read and write: on a book larger than memory each is a read
 * from disk. A request's own thread calls it before it hands the submission
 * to the thread that calls coord_submit, so that the reads of many
 * submissions are under way at once and none holds up the others' round.
 * Reads the book only: safe beside any other call on c (not beside
 * coord_close). */
void coord_submit_warm(Coord *c, const CoordResult *res, size_t n);

/* A worker's heartbeat: it is alive (what it says of itself noted, as with
 * every request), or with leaving, it stops now and is shown gone at once. */
void coord_heartbeat(Coord *c, const CoordWorker *w, bool leaving, int64_t now_ms);

/* Returns the lease's pending positions to the queue (no failed try). */
JOSEKI_MUST_USE int coord_abort(Coord *c, uint64_t id, const CoordWorker *w, int64_t now_ms,
                                char *err);

/* Expires leases (each pending position: a failed try; back to the queue or,
 * at COORD_MAX_TRIES, set aside), forgets old leases, commits, and starts the
 * minimax when due, on a thread of its own: the hook runs beside the
 * coordinator (its own snapshot) and a later tick collects it. With a hook
 * that offers prepare and apply (minimax's own), the thread only analyses and
 * the ticks write its records, COORD_APPLY_MS of them each, in the service's
 * transactions; otherwise the run writes in its own transactions, which LMDB
 * orders between the coordinator's commits. Call about every 100 ms. Returns
 * 0; COORD_EBOOK (the Coord is broken); or COORD_EMINIMAX when a minimax run
 * that ended failed (message in err): everything else was done and
 * committed, the Coord goes on. */
JOSEKI_MUST_USE int coord_tick(Coord *c, int64_t now_ms, char *err);

/*
 * Between requests, in the caller's time (coord_select_ahead's form that
 * waits: what a test or a single-threaded caller drives step by step): when
 * the selection has work to go on with (a search suspended, the first search
 * not begun, or positions the last acquire lacked), a slice of it (ms, at
 * most opt.select_slice_ms). The leaves it finds wait for the next acquire.
 * 0 or COORD_EBOOK (message in err).
 */
JOSEKI_MUST_USE int coord_select_idle(Coord *c, double ms, char *err);
/*
 * The selection goes on beside the caller, on its own thread, until the next
 * call of this Coord (any but coord_commit, which may run meanwhile, and
 * this one): a search suspended, the first search, the positions the last
 * acquire lacked, and a stock of leaves ahead of the next acquires (as many
 * as the most asked in one of the last rounds, coord_round_begin). Those
 * leaves were selected before the results that come meanwhile: the price of
 * answering from stock. Returns at once; nothing without the thread
 * (opt.select_slice_ms < 0) or when there is nothing to do.
 */
void coord_select_ahead(Coord *c);
/* A round of requests begins (the service's): its acquires select for
 * opt.select_slice_ms in all, not each (without it, each acquire has its
 * own), and the round before sizes the stock kept ahead. */
void coord_round_begin(Coord *c);
/* The last acquire ended with a search suspended: an acquire answered with
 * no position should be tried again soon, not after a no-work wait. */
bool coord_select_busy(const Coord *c);
/* The service's time for a minimax run's records at a tick. */
#define COORD_APPLY_MS 5.0
/* A trim of the selector's graph (its memory past --memory's share) runs in
 * slices of this many ms (CoordOptions.trim_slice_ms): coord_tick begins one and takes a slice, and
 * so does coord_trim_on between ticks, until it ends (sel_trim_slice). Until then the selector's
 * graph is still: no search runs (the acquires take the stock and the walk's leaves, as while a
 * checkpoint's child lives) and its changes are kept, then made. */
#define COORD_TRIM_SLICE_MS 20.0
/* A slice of the trim under way, if one is (after a round's answers). */
void coord_trim_on(Coord *c);

/* Waits for a minimax run in progress and writes all of it (coord_free
 * waits too, and drops what is not written). 0, COORD_EMINIMAX with its
 * message, or COORD_EBOOK. */
JOSEKI_MUST_USE int coord_minimax_wait(Coord *c, char *err);

/* Commits the pending writes (the work state and results of the requests
 * applied since the last commit). */
JOSEKI_MUST_USE int coord_commit(Coord *c, char *err);

/* A snapshot of the state; free with coord_status_free. */
JOSEKI_MUST_USE int coord_status(Coord *c, CoordStatus *out, int64_t now_ms);
void coord_status_free(CoordStatus *st);

/* Whether token is in quarantine (spot checks): then err (COORD_ERRLEN, may
 * be NULL) says since when and why, and every request of it is refused
 * (coord_acquire, coord_submit and coord_abort return COORD_EQUARANTINE). */
bool coord_quarantined(Coord *c, const char *token, char *err);

/* The limits workers are to use (from the options). */
const CoordOptions *coord_options(const Coord *c);

#endif
