/*
 * minimax/petashock.h — a drop-in for YaneuraOu's "makebook peta_shock": reads
 * a DB2016 book, backs the values up over the book graph (transpositions,
 * repetition cycles and perpetual-check loops handled as YaneuraOu does, see
 * docs/minimax.md and docs/peta-shock.md), and writes the minimaxed book.
 *
 * The graph is held compactly: nodes and moves in flat arrays, a hash table
 * from 128-bit key to node index while the edges are found (or, past the
 * memory budget, a join on disk in buckets of keys instead:
 * minimax/petashock_disk.c); the input is streamed (read three times:
 * records and moves, transposition edges, SFEN lines for the output), never
 * held as text; each of these passes runs over parts of the file in
 * parallel.
 */
#ifndef MINIMAX_PETASHOCK_H
#define MINIMAX_PETASHOCK_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shogi/db2016.h"

/* Error codes (all negative); the message buffer says which file and why. */
enum {
	PETASHOCK_OK = 0,
	PETASHOCK_EIO = ERR_PETASHOCK - 0,     /* input unreadable or output unwritable */
	PETASHOCK_ENOMEM = ERR_PETASHOCK - 1,  /* out of memory */
	PETASHOCK_ECHANGED = ERR_PETASHOCK - 2 /* the input changed between passes */
};
const char *petashock_strerror(int code);

/* Progress: phase is "reading", "edges", "joining" (the edges on disk: keys
 * of the buckets joined so far), "peel", "relax" or "writing"; done counts
 * records (or sweeps for peel and relax). Called every so often. */
typedef void (*PetashockProgressFn)(void *ctx, const char *phase, size_t done);

/* A move a joseki book marks (joseki avoid, prefer, prune): the position's
 * key and the move as the book holds them (its own side to move). */
typedef struct {
	Key key;
	uint16_t move;
	uint8_t kind; /* PETASHOCK_AVOIDED or PETASHOCK_PREFERRED */
} PetashockMark;

enum { PETASHOCK_AVOIDED = 1, PETASHOCK_PREFERRED = 2 }; /* bookdb/marks.h's kinds */

/* The order PetashockOptions.marks is sorted in: by key, then by move (a
 * qsort comparator). */
int petashock_mark_cmp(const void *a, const void *b);

typedef struct {
	bool shrink;       /* write only the moves with the best value */
	Db2016WarnFn warn; /* bad input lines are reported here (may be NULL) */
	void *warn_ctx;
	PetashockProgressFn progress; /* may be NULL */
	void *progress_ctx;
	/* Threads reading, linking and writing parts of the file side by side
	 * (0: one per core, at most one per 4 MiB of input; at most 8). The
	 * output is the same for any number. Callbacks come from the calling
	 * thread only. */
	int threads;
	/* Pass 2 (the edges) on disk in this many buckets of keys, whatever the
	 * budget (tests); 0: on disk only when the key map would not fit the
	 * memory budget (shogi/bigmem.h's). */
	unsigned disk_buckets;
	/* A joseki book's rules (--book): a transposition edge the input does
	 * not list is not added when the book marks its move avoided (in marks,
	 * sorted by key, then move), or when it is a declined promotion (a pawn,
	 * bishop or rook left unpromoted where the promotion is legal and not
	 * avoided) the book does not mark preferred: what joseki's export left
	 * out on purpose stays out. */
	bool book_rules;
	const PetashockMark *marks;
	size_t nmarks;
} PetashockOptions;

typedef struct {
	size_t nodes;           /* records read (= records written) */
	size_t moves;           /* moves of the graph (edges and leaves) */
	size_t edges;           /* moves leading to a book node */
	size_t converged_moves; /* edges not listed in the input (transpositions) */
	size_t left_out;        /* transposition edges the book's rules left out (book_rules) */
	size_t const_nodes;     /* settled by the acyclic peel */
	size_t in_check;        /* nodes whose side to move is in check */
	size_t check_loop1;     /* in-check nodes on perpetual-check loops */
	size_t check_loop2;     /* all nodes on perpetual-check loops */
	int peel_sweeps;        /* sweeps of the acyclic peel */
	int relax_sweeps;       /* sweeps of the relaxation */
	size_t warnings;        /* input lines reported and skipped */
	unsigned buckets;       /* pass 2 on disk in this many buckets of keys (0: in memory) */
	uint64_t disk_bytes;    /* written to its temporary files */
	/* Wall time of each phase in ms: reading the records, finding the edges,
	 * the back-up, writing the output. */
	double read_ms, edges_ms, analyse_ms, write_ms;
} PetashockStats;

/*
 * Reads in_path, writes out_path (through a temporary file renamed at the
 * end, so a failed run leaves no partial output). stats may be NULL. On
 * failure returns a negative PETASHOCK_E* code with a message naming the file
 * in err (PETASHOCK_ERRLEN bytes).
 */
#define PETASHOCK_ERRLEN 512
JOSEKI_MUST_USE int petashock_run(PetashockStats *stats, const char *in_path, const char *out_path,
                                  const PetashockOptions *opt, char *err);

#endif
