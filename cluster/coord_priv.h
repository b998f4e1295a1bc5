/*
 * cluster/coord_priv.h — what the coordinator's two files share: the lease
 * logic (coord.c) and the work database it is kept in (coord_store.c).
 * Not for use outside cluster/coord*.c.
 */
#ifndef BOOKGEN_COORD_PRIV_H
#define BOOKGEN_COORD_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cluster/coord.h"
#include "bookgen/snapshot.h"
#include "bookgen/selector.h"
#include "shogi/keymap.h"
#include "shogi/notation.h"

#define RATE_SECS 60 /* results_per_s: over this many whole seconds */

enum { POS_PENDING = 'P', POS_DONE = 'D', POS_RETURNED = 'R' };
enum { WHERE_QUEUED = 1, WHERE_LEASED, WHERE_ASIDE };

typedef struct {
	Key key;
	uint8_t state;
	bool check; /* a spot check (coord_spot.c), not a position to analyse */
	/* A check become plain work (its token's quarantine): a lease made ahead
	 * released unused queues it rather than give it back to the selection. */
	bool owed;
	char sfen[SFEN_MAX];
} LPos;

/* A lease record's state byte of a spot check's position: the state | this. */
#define LPOS_CHECK 0x80

typedef struct {
	Key key; /* the lease map's key: hi the lease id, lo 0 */
	int64_t expires_ms;
	char token[COORD_NAME_MAX + 1];
	char worker[COORD_NAME_MAX + 1];
	int n, pending;
	bool expired;    /* it expired with positions pending (since this start) */
	uint8_t bind;    /* LEASE_BOUND, or made ahead (coord_make_ahead): LEASE_AHEAD */
	int64_t made_ms; /* LEASE_AHEAD: when it was made */
	LPos *pos;
} Lease;

/* Lease.bind: handed out to its token; made ahead and nobody's yet (in
 * c->ahead); restored unbound from the book (a crash: perhaps handed out,
 * to a worker nobody knows, whose results it takes from any token). */
enum { LEASE_BOUND = 0, LEASE_AHEAD, LEASE_UNKNOWN };
/* The lease record's count field: this bit set for a lease made ahead. */
#define LEASE_REC_AHEAD 0x8000

typedef struct {
	Key key; /* the key map's key */
	uint8_t where, tries;
	uint64_t lease;                /* WHERE_LEASED: the lease holding it */
	char last[COORD_NAME_MAX + 1]; /* the worker whose try failed last ("" none) */
	bool redo; /* its analysis was taken out (spot checks): a "U" record holds it */
	char sfen[SFEN_MAX];
} KeyState;

/* Spot checks (coord_spot.c): a token. */
typedef struct {
	char name[COORD_NAME_MAX + 1];
	uint64_t results;  /* accepted, ever; also numbers them (seq) */
	uint64_t good_seq; /* the last good check's result (0: none) */
	uint64_t passed;
	uint64_t checks;         /* its results compared in a check (as checked or checker) */
	uint64_t strikes;        /* faults found by a third */
	uint64_t strike_at;      /* checks at its last fault (0: none) */
	bool quarantined, dirty; /* dirty: its "Q" record is to be written */
	int64_t quarantined_ms, last_seen_ms;
	uint64_t taken_out;
	char reason[COORD_REASON_MAX + 1]; /* why it is in quarantine */
	char fault[COORD_REASON_MAX + 1];  /* its last fault */
	/* Its results kept for a quarantine to take out, each a "P" record in
	 * the book (coord_spot_store.c) holding its position, read only by a
	 * quarantine: how many, how many of them after its last good check,
	 * and the number of the oldest (0: none). Kept in its "K" record, so
	 * that a start does not read the "P" records. */
	uint64_t kept, unverified, first;
	/* At the start: its "K" record read (the counts above, as of its
	 * results kept_at and results taken out kept_taken). */
	bool kept_known;
	uint64_t kept_at, kept_taken;
} SpotToken;

/* A result held back until another token's worker has thought the same
 * position (stage 1) and, when the two disagree, a third (stage 2). */
typedef struct {
	Key key; /* the check map's key */
	uint8_t stage, tries;
	uint64_t lease;   /* the lease it is in (0: waiting) */
	uint64_t seq;     /* the result's number for its token */
	int64_t since_ms; /* waiting since */
	char token[COORD_NAME_MAX + 1], worker[COORD_NAME_MAX + 1];
	char checker[COORD_NAME_MAX + 1]; /* stage 2: whose check disagreed */
	char sfen[SFEN_MAX];
	CoordResult *orig, *second; /* malloc'd; second: the check (stage 2) */
} SpotCheck;

/* Rounds over which the stock kept ahead is sized (coord_round_begin). */
#define AHEAD_ROUNDS 16
/* The whole seconds over which the acquires' rate sizes the reserve of
 * leases made ahead (coord_make_ahead). */
#define AHEAD_RATE_SECS 2

struct Coord {
	char instance[17];  /* CoordStatus.instance */
	int64_t started_ms; /* unix ms */
	BookDB *db;
	CoordOptions opt;
	Selector *sel;
	BookWriter *w;
	BookRecord *rec;
	/* Re-analysis (opt.again): the next of the list (the selection's side),
	 * a record it reads, the new analysis before the merge, and results
	 * whose analysis won. */
	size_t again_next;
	BookRecord *again_rec, *again_new;
	uint64_t again_replaced;
	Position *pos;
	SearchResult *res;
	SelLeaf *leaf;
	Plan *plan;
	Lease *leases; /* nleases of them, indexed by lease_map */
	size_t nleases, capleases;
	KeyState *keys; /* nkeys of them, indexed by key_map */
	size_t nkeys, capkeys;
	KeyMap lease_map, key_map;
	Key *queue; /* returned positions, oldest first (stale entries skipped) */
	size_t nqueue, capqueue;
	uint64_t queued; /* KeyStates WHERE_QUEUED */
	uint64_t next_id;
	bool broken;
	uint8_t *buf; /* serialisation scratch */
	size_t capbuf;
	CoordWorkerSeen *seen;
	size_t nseen, capseen;
	uint64_t results, failed, mated, minimax_runs, since_minimax;
	/* The book's lines from the way to the roots (co_queue_lines): looked at
	 * after each minimax run, their positions not thought queued. */
	bool lines_due;
	size_t lines_next; /* the next path line of a walk spread over ticks (0: none) */
	uint64_t lines_queued;
	BookRecord *line_rec;
	int64_t last_minimax_ms;
	double select_ms, store_ms, commit_ms, minimax_ms, minimax_last_ms, trim_ms;
	double trim_run_ms; /* the slices of the trim under way */
	/* The results of each of the last RATE_SECS whole seconds and of the
	 * current one (results_per_s). */
	int64_t sec_stamp[RATE_SECS + 1];
	uint32_t sec_count[RATE_SECS + 1];
	int64_t sec_first; /* the second of the first result counted (0: none yet) */
	/* The periodic minimax, on a thread of its own (coord_tick starts it,
	 * collects it when done): it reads its own snapshot and writes in its
	 * own transactions, which LMDB puts between the service's commits. */
	pthread_t mm_thread;
	bool mm_running;
	atomic_bool mm_done;
	atomic_bool mm_stop; /* set at close: a run under way ends at its next check */
	int mm_rc;
	double mm_t0;
	char mm_err[256];
	/* With a hook that offers prepare and apply, the thread only analyses:
	 * its records are written by the service, a share at each tick, in its
	 * own transactions (so the service never waits for LMDB's write lock
	 * behind minimax). mm_out: the thread's plan; mm_plan: being applied. */
	BookMinimaxPlan *mm_out, *mm_plan;
	double apply_ms; /* the service's time applying plans */
	/* The history (coord_history.c): the step being counted (0: none yet),
	 * since when, and the counters at its start. */
	int64_t hist_bucket, hist_since_ms;
	uint64_t hist_results, hist_failed;
	/* The selection in slices (coord_select.c): plan_next on its own
	 * thread; sr_state under sr_mu. The leaves found and leased in the
	 * selector, not handed out yet: sr_n in sr_leaf/sr_sfen (up to sr_want a
	 * slice); the next acquire takes them first. sr_tmp: the selection's
	 * position of the leaf it is looking for (a Position is 57 KB, its
	 * history: the stock keeps each leaf's SFEN, which is all a lease needs;
	 * moving Positions down the stock at each acquire copied megabytes, and
	 * after a checkpoint's fork each of their pages). */
	pthread_t sr_thread;
	bool sr_started, sr_quit;
	int sr_n, sr_want;
	int sr_demand; /* positions the last acquire lacked: selected between requests */
	bool sr_begun; /* a search was begun (the first one runs between requests) */
	pthread_mutex_t sr_mu;
	pthread_cond_t sr_cv;
	int sr_state, sr_rc;
	double sr_until;
	SelLeaf *sr_leaf;
	char (*sr_sfen)[SFEN_MAX];
	Position *sr_tmp;
	/* Slices that ended with the search suspended; acquires answered while
	 * one was (with fewer positions than asked, or none: a 204 with a short
	 * Retry-After). */
	uint64_t sr_slices, sr_busy;
	bool select_busy; /* the last acquire left a search suspended */
	/* Provisional leaves (CoordOptions.provisional_after_ms): sr_answered
	 * once a selection call returned with a leaf or none (written by the
	 * selection thread, read by the service while it waits or is
	 * suspended); open_ms when the coordinator opened; the positions
	 * leased so; prov_over while they are over (none were needed at the
	 * start, or the selection has kept up since: every acquire answered
	 * in full from full_since_ms, -1 when the last one was not, for
	 * provisional_after_ms), until the selection falls behind again
	 * (the positions asked since behind_from_ms, -1 when no span is
	 * begun, win_asked, and those missing for want of time, win_short,
	 * more than an eighth of them after provisional_after_ms: prov_back
	 * counts those times); the walk and its arrays. */
	bool sr_answered, prov_over;
	double open_ms;
	int64_t full_since_ms, behind_from_ms;
	uint64_t provisional, prov_back, win_asked, win_short;
	struct CoPwalk *pwalk; /* the walk, on its thread (coord_pwalk.c) */
	uint64_t pw_spared;    /* reads the key filter spared walks ended before it */
	/* Acquires that found no provisional leaf ready (the walk behind), and
	 * the time they waited for one. */
	uint64_t pw_dry;
	double pw_dry_ms;
	struct PwLeaf *pw_leaf; /* COORD_MAX_BATCH, taken from it */
	double round_until;     /* coord_round_begin: the round's selection ends then (0: none) */
	/* The selection beside the service (coord_select_ahead, co_select_begin):
	 * sr_bg while such a slice was begun and not yet held (written by the
	 * service only); sr_cut asks the thread to stop at its next leaf or
	 * yield; sr_t0/sr_t1 when it began and when the thread stopped. It
	 * selects up to the larger of sr_demand and sr_ahead: the most positions
	 * asked in one of the last AHEAD_ROUNDS rounds. sr_dry: the last slice
	 * found no leaf (not tried again before the next round). */
	bool sr_bg, sr_dry;
	atomic_bool sr_cut;
	double sr_t0, sr_t1, sr_ahead_ms;
	int sr_n0;                /* sr_n when the slice beside the service began */
	uint64_t sr_ahead_leaves; /* leaves found beside the service */
	int sr_ahead, round_asked, round_ring[AHEAD_ROUNDS], round_at;
	/* The selector's snapshot (bookgen/snapshot.h): its path (a copy of
	 * opt.snapshot), and what became of it at the start. */
	char *snap_path;
	char snap_note[SNAP_ERRLEN];
	bool snap_restored;
	double snap_ms;
	uint64_t snap_commits, snap_replayed; /* a checkpoint's start: its journal */
	double snap_replay_ms;
	/* Checkpoints and their journal (coord_ckpt.c): the keys stored since
	 * the last commit; the checkpoint the journal extends (its txnid; 0:
	 * none this run), commits and entries since it; entries of others may
	 * be left; the child writing one, and the counts. */
	Key *sj_keys;
	size_t sj_n, sj_cap;
	uint64_t sj_gen, sj_commits, sj_entry;
	bool sj_stale;
	pid_t ckpt_pid;
	int64_t ckpt_last_ms;
	double ckpt_t0, ckpt_ms, ckpt_fork_ms;
	double ckpt_held_ms; /* making the changes held while the last child wrote */
	uint64_t ckpts, ckpt_failed;
	/* The book's txnid when the last checkpoint written was taken (0: none
	 * this run), and the checkpoints not taken since, the book unchanged. */
	uint64_t ckpt_txnid, ckpt_unchanged;
	/* Leases made ahead (coord_make_ahead): their ids, oldest first, the
	 * first ahead_ready of them committed (they may be handed over); the
	 * sizes asked by this round's acquires; the last acquire's time and
	 * whether the one before was close enough for leases ahead; counts. */
	uint64_t *ahead;
	size_t nahead, capahead, ahead_ready;
	size_t ahead_out; /* the first of them, handed over (coord_ahead_export) */
	int asked[COORD_AHEAD_MAX], nasked;
	/* The acquires of the last whole seconds (ring by second, as sec_*),
	 * sizing the reserve of leases made ahead (ahead_reserve), and the size
	 * the last one asked. */
	int64_t acq_stamp[AHEAD_RATE_SECS + 1];
	uint32_t acq_count[AHEAD_RATE_SECS + 1];
	int ahead_size;
	int ahead_lack; /* leaves the reserve lacked at the last round (at most COORD_MAX_BATCH) */
	int64_t last_acquire_ms;
	bool ahead_on;
	uint64_t ahead_handed, ahead_released;
	/* Spot checks (coord_spot.c): the tokens that sent results, the checks
	 * under way (indexed by check_map), the sampling's random stream, the
	 * counts since start. */
	SpotToken *stok;
	size_t nstok, capstok;
	SpotCheck *checks;
	size_t nchecks, capchecks;
	KeyMap check_map;
	uint64_t spot_rng;
	uint64_t spot_passed, spot_disagreed, spot_undecided, spot_unchecked, spot_disproved,
	    spot_strikes, spot_quarantines, spot_taken_out;
	CoordResult *spot_tmp; /* scratch: a result made canonical */
};

/* Marks c broken (no later commit) and says what failed in err; returns
 * COORD_EBOOK. */
int co_broken(Coord *c, char *err, const char *what, int rc);

/* coord_select.c. A step's result besides plan_next's: the slice ended with
 * the search suspended; no slice was running (co_select_hold). */
#define CO_SELECT_BUSY 2
#define CO_SELECT_NONE 3
/* The selection thread (none when opt.select_slice_ms < 0). 0 or COORD_ENOMEM. */
int co_select_start(Coord *c);
void co_select_stop(Coord *c);
/* A slice of selection: up to want leaves (in all, with those in sr_leaf
 * already) for ms (< 0: no limit), the suspended search first. Returns
 * CO_SELECT_BUSY when the slice ended inside a search (suspended), else 1
 * (the slice ended with a leaf), 0 (no more leaves now), or a negative
 * SEL_* code. The leaves found (sr_n) are leased in the selector. */
int co_select_step(Coord *c, double ms, int want);
/* A search is suspended, waiting for its next slice. */
bool co_select_paused(const Coord *c);
/* A slice beside the service: up to want leaves, with no time limit; returns
 * at once. Until co_select_hold the service must not touch the selector, the
 * plan or sr_*. Nothing when one is running or there is no thread. */
void co_select_begin(Coord *c, int want);
/* Stops the slice co_select_begin began (at its next leaf or yield) and waits
 * for it: then as co_select_step's result, or CO_SELECT_NONE when none was
 * begun. */
int co_select_hold(Coord *c);

/* coord_store.c: a string as the work records keep it, u8 length then its
 * bytes (at most 255): the bytes written; read back into out (cap bytes
 * with the NUL), *p moved past it, or -1 when it does not fit. */
int co_put_str(uint8_t *p, const char *s);
int co_get_str(char *out, size_t cap, const uint8_t **p, const uint8_t *end);

/* coord_store.c: the work database, written through c->w (committed with the
 * results by coord_commit). Each returns 0 or co_broken's code. */
int co_lease_put(Coord *c, const Lease *l, char *err);
int co_lease_del_rec(Coord *c, uint64_t id, char *err);
int co_next_id_put(Coord *c, char *err);
/* The tries record of ks (deleted when it has no tries). */
int co_keyrec_put(Coord *c, const KeyState *ks, char *err);
/* At open: the leases, the counter and the tries records read back. */
int co_restore(Coord *c, char *err);
/* At open: the roots queued in the book (joseki extend) go to the front of
 * the queue, in queue order, so they are handed out before anything the
 * selector picks; those already thought, leased or known are skipped. The
 * selector holds them as leased while they wait. */
int co_queue_extended(Coord *c, char *err);
/* The book's lines from the positions on the way to the roots (as `think`
 * follows them: docs/bookgen.md, "The way to the roots"), once those are
 * thought: the first position of each line that is not thought, within the
 * roots' depth, goes to the queue (unless thought, leased or known), so that
 * a game from the start meets analysed choices. Walks the lines for about
 * budget_ms (at least a few of them), the rest at the next call (lines_due
 * stays set): the service thread's requests wait meanwhile. 0, or
 * COORD_ENOMEM / COORD_EBOOK with err. */
int co_queue_lines(Coord *c, double budget_ms, char *err);

/* coord_history.c: at the end of each history step, a point of the state
 * into the book's work database (through c->w: committed with the next
 * commit). 0 or co_broken's code. */
int co_history_tick(Coord *c, int64_t now_ms, char *err);

/* coord_ckpt.c: the journal (the keys of a commit's results) and the
 * checkpoints (docs in the file). co_journal_note after each result stored,
 * co_journal_write before each commit; co_journal_check and _replay bring a
 * checkpoint's selector up to date at the start; co_release_strays after the
 * work state is restored. */
int co_journal_note(Coord *c, Key k);
int co_journal_write(Coord *c, char *err);
void co_checkpoint_reap(Coord *c, bool wait);
/* Whether a checkpoint's child is still writing (its end taken in if it is
 * over). Meanwhile the selection and the trim wait: the child writes the
 * selector's memory as it was at the fork, and every page the parent writes
 * until it exits is copied (a search's visits and a trim touch most of the
 * graph's); the service hands out its stock and the walk's leaves. */
bool co_checkpoint_running(Coord *c);
/* No search now: a checkpoint's child writing, or a trim of the selector's
 * graph under way (coord_trim_on): the acquires take the stock and the
 * walk's leaves. */
bool co_select_frozen(Coord *c);
int co_journal_check(Coord *c, const BookStamp *snap, const BookStamp *book, char *err);
int co_journal_replay(Coord *c, uint64_t gen, char *err);
int co_release_strays(Coord *c, size_t *released);
/* coord.c: the selector's snapshot written for the book state st. */
int co_snapshot_write(Coord *c, const BookStamp *st, unsigned flags, char *err);
/* coord.c: the selection beside the service stopped (co_select_hold) and its
 * result taken in; 0 or COORD_EBOOK (c broken). */
int co_select_take_in(Coord *c, char *err);

/* coord_pwalk.c: provisional leaves (bookgen/provisional.h) walked from the
 * plan's roots on a thread of its own, kept ready (key and SFEN) for the
 * service thread, which sorts out those leased or thought meanwhile.
 * co_pwalk_start: 0 or SEL_ENOMEM. co_pwalk_take: up to max leaves ready,
 * waiting up to wait_ms for the first when none is (the walk just begun):
 * their count, 0 when none is ready or every line is walked, or the walk's
 * SEL_* error. co_pwalk_stop: stops it, waits, frees (NULL: nothing). */
typedef struct PwLeaf {
	Key key;
	char sfen[SFEN_MAX];
} PwLeaf;
typedef struct CoPwalk CoPwalk;
int co_pwalk_start(CoPwalk **out, BookDB *db, const Plan *plan);
int co_pwalk_take(CoPwalk *p, PwLeaf *out, int max, double wait_ms);
/* Pauses the walk (it walks no more until resumed) or resumes it, dropping
 * the leaves it kept; -1 when the walk has ended (every line walked, or an
 * error): a new one must be started. */
int co_pwalk_pause(CoPwalk *p, bool paused);
int co_pwalk_ready(CoPwalk *p); /* leaves in the ring; -1 for NULL */
void co_pwalk_stop(CoPwalk *p);
/* The selector's key filter for the walk (each handed over replaces the
 * last: a regrown filter; the walk asks it before each read, and reads no
 * record of a key it turns away): the selector must outlive the walk.
 * True once the walk reads f alone: f handed over (now or before) and every
 * reader that began before done, so that the filters before it may be freed
 * (sel_free_retired); false for NULL, or while the last handover's readers
 * are not done (a new f then waits for a later call). On one thread.
 * co_pwalk_spared: the reads it spared. */
bool co_pwalk_set_filter(CoPwalk *p, const SelKeyFilter *f);
uint64_t co_pwalk_spared(const CoPwalk *p);
/* A reader of the walk's filter, counted as the walk's own batches are:
 * co_pwalk_read_begin gives the filter (false, and no reader, when none was
 * handed over), which stays the caller's to read until co_pwalk_read_end(p,
 * its token): a handover meanwhile says false until then. Each record the
 * walk reads ahead is such a reader, and so are the tests' readers caught
 * in the middle of a handover. */
bool co_pwalk_read_begin(CoPwalk *p, SelKeyFilter *f, unsigned *token);
void co_pwalk_read_end(CoPwalk *p, unsigned token);

/* coord_spot.c: spot checks (docs in the file). co_spot_on: checks are on.
 * co_spot_seen: the token asked for work. co_spot_take: checks for the
 * token into l (before anything else; NULL: for any token, a lease made
 * ahead). co_spot_result: a checked result of
 * lease l's position i, stored or held back. co_spot_answer: a check's
 * answer; 0 when it is no check any more (then the caller stores it).
 * co_spot_return: a check's lease ended without its answer (tried: a failed
 * try). co_spot_disproved: 1 when a mate claim of r is false in c->pos (why
 * filled, COORD_SPOT_WHYLEN bytes). co_spot_quarantine: the token refused
 * from now on, its latest results taken out and queued again.
 * co_spot_tick: checks given up for want of a token. co_spot_restored:
 * after co_restore, the checks' give-up clocks start at the first tick.
 * co_spot_check_held: k's result is held for a check. co_spot_token: the
 * token's state (create: a new one when unknown; NULL when memory runs out
 * or, without create, unknown). co_spot_check: the check of k, or NULL. */
bool co_spot_on(const Coord *c);
void co_spot_seen(Coord *c, const char *token, int64_t now);
int co_spot_take(Coord *c, Lease *l, int max, const char *token, char *err);
int co_spot_result(Coord *c, Lease *l, int i, const CoordResult *r, const CoordWorker *w,
                   int64_t now, char *err);
int co_spot_answer(Coord *c, Lease *l, int i, const CoordResult *r, const CoordWorker *w,
                   int64_t now, char *err);
int co_spot_return(Coord *c, uint64_t lease, Key k, bool tried, int64_t now, char *err);
int co_spot_disproved(Coord *c, const CoordResult *r, char *why);
int co_spot_quarantine(Coord *c, const char *token, const char *reason, int64_t now, char *err);
int co_spot_tick(Coord *c, int64_t now, char *err);
void co_spot_restored(Coord *c);
bool co_spot_check_held(Coord *c, Key k);
SpotToken *co_spot_token(Coord *c, const char *name, bool create);
SpotCheck *co_spot_check(Coord *c, Key k);
int co_spot_status(Coord *c, CoordStatus *out);
void co_spot_free(Coord *c);

/* coord_spot_store.c: the spot checks' records (layouts there), written
 * through c->w; each returns 0 or co_broken's code. co_prov_key: the "P"
 * key of the token's result seq into out, its length. co_redo_del: the "U"
 * record of a position thought again deleted (its result stored).
 * co_spot_flush: the tokens' records before a commit. co_spot_restore: a
 * "C", "P", "Q" or "U" record at open: 1 when it was one, 0 when not, or
 * COORD_ENOMEM / COORD_EBOOK (it does not decode). */
int co_work_put(Coord *c, const void *k, size_t kl, const void *v, size_t vl, char *err);
int co_work_del(Coord *c, const void *k, size_t kl, char *err);
/* At the start, after the work state: the "P" records counted for each
 * token without a "K" record as of its results (written by a build that
 * keeps none). 0 or COORD_EBOOK. */
int co_spot_count_kept(Coord *c, BookTxn *t);
/* The numbers of token's "P" records from seq on, through the writer's
 * transaction, in order, each with its position, to fn until it returns
 * non-zero (returned); 0 at the end, or co_broken's code. */
int co_prov_each(Coord *c, const char *token, uint64_t seq,
                 int (*fn)(void *ctx, uint64_t seq, Key key), void *ctx, char *err);
int co_check_put(Coord *c, const SpotCheck *k, char *err);
size_t co_prov_key(uint8_t *out, const char *token, uint64_t seq);
int co_redo_put(Coord *c, const KeyState *ks, char *err);
int co_redo_del(Coord *c, Key k, char *err);
int co_spot_flush(Coord *c, char *err);
int co_spot_restore(Coord *c, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl);

/* coord.c: a checked result stored (think_store) in the position sfen,
 * its KeyState forgotten. */
int co_store(Coord *c, const char *sfen, const CoordResult *r, int64_t now, char *err);
/* coord.c: k's KeyState (if any) forgotten, its tries and redo records
 * deleted: its result was stored or held back. */
int co_key_done(Coord *c, Key k, char *err);
/* coord.c: the lease's pending positions returned (abort, quarantine). */
int co_lease_return(Coord *c, Lease *l, int64_t now, char *err);
Lease *co_lease_get(Coord *c, uint64_t id);
/* coord.c: the dense arrays indexed by a key map (an element starts with
 * its Key): add (NULL when memory runs out) and delete (the last moves in). */
void *co_dense_add(KeyMap *m, void **arr, size_t *cap, size_t *n, size_t size, Key k);
void co_dense_del(KeyMap *m, void *arr, size_t *n, size_t size, size_t i);

/* coord.c: the in-memory state. */
KeyState *co_key_get(Coord *c, Key k);
/* A new KeyState for k (not held), or NULL when memory runs out. KeyState
 * pointers last until the next co_key_new or key_forget. */
KeyState *co_key_new(Coord *c, Key k);
int co_queue_push(Coord *c, KeyState *ks);
/* Keeps the lease l, built outside the array (its id not held): the kept
 * copy, or NULL when memory runs out (l is then still the caller's). */
Lease *co_lease_keep(Coord *c, const Lease *l);

#endif
