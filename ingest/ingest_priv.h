/*
 * ingest/ingest_priv.h — what the ingest pipeline's files share: the units,
 * games and results passed between threads (the ring of WINDOW slots in Pipe),
 * and the helpers every stage uses. feed.c walks the inputs (files,
 * directories, archives, stdin) into units; parse.c turns units into games
 * (replayed, filtered, identified); ingest.c applies games in batches and runs
 * the whole. Not for use outside ingest/.
 */
#ifndef INGEST_INGEST_PRIV_H
#define INGEST_INGEST_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ingest/ingest.h"
#include "ingest/replay.h"
#include "ingest/walk.h"
#include "shogi/position.h"

/* ---- pipeline data ---------------------------------------------------- */

/* One input file's bytes, or a part of them (a file, an archive entry, or
 * stdin; walk.h). */
typedef struct {
	char *name;
	char *buf;
	size_t len;
	int line;          /* buf's first line in the input; with error the line it names */
	KifuFormat format; /* the input's, sniffed from its start */
	char *error;       /* the input (or its rest) could not be read: reported, nothing parsed */
} Unit;

/* One move played, as the writer needs it. */
typedef struct {
	Key key; /* the position before the move */
	Move move;
	uint16_t ply; /* move number of that position */
	int16_t eval; /* mover's view */
	bool has_eval;
	uint8_t mover; /* Color of the side making the move */
	uint8_t packed_len;
	uint8_t packed[BOOKDB_PACKED_MAX];
} Ply;

enum { GAME_INGEST, GAME_SKIP, GAME_REJECT };

typedef struct {
	char *id; /* dedupe id ("id:<floodgate id>" or "h:<hash>") */
	int status;
	GameWinner winner;
	int variations;   /* branches of the record left unread */
	uint32_t counted; /* plies an unfinished record of it counted before (it completes it) */
	bool unended;     /* a floodgate record that stops without an end (cut short, or live) */
	Ply *plies;
	size_t nplies;
} Game;

typedef struct {
	char *input;
	int line;
	char *message;
} PendingError;

typedef struct {
	Game *games;
	size_t ngames, cap;
	PendingError *errors;
	size_t nerrors, ecap;
	bool done;
} Result;

typedef struct {
	const IngestOptions *opt;
	const char *const *inputs;
	size_t ninputs;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* Units and their results by sequence number; a ring of WINDOW slots. */
	Unit *units;
	Result *results;
	size_t window;
	size_t produced; /* units made by the feeder */
	size_t taken;    /* units taken by parsers */
	size_t consumed; /* results the writer has applied */
	/* Input bytes of the units not yet applied, and the most there may be
	 * (units wait in the feeder beyond it: the games parsed from them are
	 * held until the writer applies them). */
	size_t inflight, inflight_max;
	bool feed_done;
	bool abort;
	/* Progress (opt->progress): both the feeder walking the inputs and the
	 * writer report, at most one call each opt->progress_interval_s between
	 * them, one at a time (progress_mu). */
	double t0, last_progress;
	pthread_mutex_t progress_mu;
	uint64_t files_seen;
	WalkStats walk; /* the feeder's; read by the writer once the feeder is done */
} Pipe;

#define WINDOW 256
/* Input bytes in flight: this many parts (walk.h) a parser thread, and some. */
#define INFLIGHT_PARTS_PER_JOB 2
#define INFLIGHT_PARTS_MIN 8

/* Memory ran out somewhere in the pipeline (ingest.c: the run then fails with
 * INGEST_ENOMEM; what could not be kept is dropped). */
void ing_out_of_memory(void);
/* strdup / asprintf that call ing_out_of_memory() and return NULL on failure. */
char *ing_strdup(const char *s);
char *ing_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Calls opt->progress with phase and what is in pr (seconds filled in) when
 * its turn has come, or always when force; nothing when it is NULL. */
void ing_progress(Pipe *p, const char *phase, IngestProgress *pr, bool force);
/* The threads: one feeder (feed.c), opt->jobs parsers (parse.c). */
void *ing_feeder_main(void *arg);
void *ing_parser_main(void *arg);

#endif
