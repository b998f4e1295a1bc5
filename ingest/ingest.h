/*
 * ingest/ingest.h — game records into the book.
 *
 * Inputs are game records in any format ingest/kifu.h reads (CSA, KIF, KI2,
 * JKF, USI game lines): files, directories and archives as ingest/walk.h
 * walks them, and "-" for standard input. A feeder thread
 * reads the inputs in order, `jobs` threads parse and replay the games, and
 * the calling thread is the one writer: it applies the games to the book in
 * input order (so the result does not depend on the thread count), batching
 * many games per LMDB transaction. A game and its "seen" mark are committed
 * in the same transaction, so a crash never leaves a game half-ingested and a
 * rerun skips exactly what was committed.
 *
 * Per move played (up to max_ply) the position before it gets: the move, one
 * more count, and a win, draw or loss for the mover by the result the rules
 * decide (ingest/replay.h). A floodgate "'** <score>" comment (CSA) becomes the
 * engine evaluation of the move it follows (Black-relative score turned to the
 * mover's view; mates mapped to ±VALUE_MATE_IN_MAX; "'** 0" alone is a book
 * move, not an evaluation).
 */
#ifndef INGEST_INGEST_H
#define INGEST_INGEST_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "ingest/walk.h"

/* Error codes (negative). */
enum {
	INGEST_OK = 0,
	INGEST_EIO = ERR_INGEST - 0, /* an input could not be read at all */
	INGEST_ENOMEM = ERR_INGEST - 1,
	INGEST_EBOOK = ERR_INGEST - 2,  /* the book refused a write (message in the stats errors) */
	INGEST_EINVAL = ERR_INGEST - 3, /* bad option */
};
const char *ingest_strerror(int code);

/* Evaluation sources stored with the book's moves (BookMove.source). */
#define INGEST_SOURCE_CSA BOOKDB_SOURCE_GAME      /* a "'**" comment in a game record */
#define INGEST_SOURCE_IMPORT BOOKDB_SOURCE_IMPORT /* an imported YaneuraOu book */

/*
 * Progress of ingest_run, for IngestOptions.progress. Phases: "walk" while
 * the inputs are listed (files, dir), "games" as results are written
 * (games_read, games_ingested), and one "done" when the run ends (whatever
 * its outcome). Calls come from the thread walking the inputs and the one
 * writing the book, one at a time, at most one each progress_interval_s
 * between them (the first at once), and the "done".
 */
typedef struct {
	uint64_t files;          /* "walk", "done": files looked at so far */
	const char *dir;         /* "walk": the directory being read, else NULL */
	uint64_t games_read;     /* "games", "done" */
	uint64_t games_ingested; /* "games", "done" */
	double seconds;          /* since ingest_run began */
} IngestProgress;
typedef void (*IngestProgressFn)(void *ctx, const char *phase, const IngestProgress *p);

typedef struct {
	bool has_min_rating;
	double min_rating;       /* both players' floodgate ratings at least this */
	int max_ply;             /* store moves played at move numbers <= max_ply (default 128) */
	int mate_clamp;          /* a comment's mate score becomes ±mate_clamp (default 2000)... */
	int mate_plies;          /* ...unless the game ended in mate on the board within this many
	                            plies, won by the side the score favours (default 16) */
	char since[9], until[9]; /* "YYYYMMDD" bounds on the game date, inclusive ("" = none) */
	const char *event_glob;  /* fnmatch pattern on $EVENT (NULL = any) */
	const char
	    *tc_glob; /* fnmatch pattern on the floodgate game name, e.g. "floodgate-300-10F" */
	int jobs;     /* parser threads (0: the number of cores) */
	size_t batch_games;        /* games per transaction (0: 2000) */
	IngestProgressFn progress; /* NULL: quiet */
	void *progress_ctx;
	double progress_interval_s; /* between progress calls at least (0: 0.25) */
} IngestOptions;

void ingest_options_init(IngestOptions *opt);

#define INGEST_MAX_ERRORS 100
typedef struct {
	char *input; /* input name ("dir/x.csa", "a.7z:2026/x.csa", "-") */
	int line;    /* 0 when there is no line */
	char *message;
} IngestError;

typedef struct {
	uint64_t
	    files; /* files looked at: regular files in the directories walked, and those named */
	WalkStats walk;      /* what the walk read and left out (walk.files == files) */
	uint64_t variations; /* branches of KIF/KI2/JKF records left unread (the main lines are) */
	uint64_t games_read, games_ingested, games_skipped, games_rejected, duplicates;
	/* Games in the book unfinished (a truncated record) that a record of them
	 * with a result completed: not among games_ingested or duplicates. */
	uint64_t games_completed;
	/* Of games_ingested, the floodgate games (known by their ids) whose
	 * record stops without an end or a result (cut short, or a game still
	 * being played): counted without one, until a whole record of them
	 * completes them. */
	uint64_t games_unended;
	uint64_t positions_added, moves_added, evals_added;
	uint64_t plies_stored;
	uint64_t unreached; /* import of an Apery book: entries no book line reaches */
	/* import: positions the file gave at depth 0 (no move with a depth: a
	 * YaneuraOu line without one, every Apery entry), which minimax takes as
	 * leaves under its default --min-depth 1 */
	uint64_t depth0;
	uint64_t errors_total; /* all errors, also those beyond the list's cap */
	/* Inputs that could not be read at all (missing, unreadable, a damaged
	 * archive): listed in errors too, and a failure for the command, where
	 * a malformed record in a readable file is not. */
	uint64_t unreadable;
	size_t nerrors;
	IngestError errors[INGEST_MAX_ERRORS];
	double seconds;
} IngestStats;

/* Frees the error strings (not the struct). Accepts NULL. */
void ingest_stats_free(IngestStats *st);

/*
 * Ingests inputs into db (opened read-write). Problems with single records or
 * inputs are not failures: they are counted and listed in stats->errors and
 * the run goes on (an input that could not be read is also counted in
 * stats->unreadable, for the command's exit status). Returns 0, or a negative code when the book
 * could not be written (the last committed batch stays; nothing half-written).
 */
JOSEKI_MUST_USE int ingest_run(IngestStats *stats, BookDB *db, const char *const *inputs,
                               size_t ninputs, const IngestOptions *opt);

#endif
