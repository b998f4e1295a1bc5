/*
 * minimax/mmfile.h — the book graph kept between minimax runs, so that a run
 * after a few thousand new results analyses only what they changed
 * (docs/minimax.md, "Incremental runs" and "The graph file").
 *
 * Two files in the BOOK directory, both derived data (deleting them only
 * makes the next run a whole-book one):
 *   minimax.graph    written once by a whole-book run: every node's key (in
 *                    key order), its flags and (value, depth) after the
 *                    analysis, its moves (edges to book nodes, valued or not,
 *                    and its leaves), the reverse edges, a key directory and a
 *                    one-bit-per-key filter. Mapped read-only: a view keeps
 *                    the states a run changes beside it (an overlay).
 *   minimax.journal  appended by every incremental run: nodes added since,
 *                    replaced move lists, new node states, as checksummed
 *                    batches. Only the length recorded in the book's meta
 *                    counts, so a run killed before its LMDB commit leaves a
 *                    tail that the next run ignores and overwrites.
 * Both carry the stamp of the whole-book run that wrote the graph; the book's
 * meta names the stamp and journal length that belong to its records.
 *
 * Node indices: 0..n-1 are the graph file's nodes (key order), n.. the nodes
 * added by journal entries and by mmfile_add_node, in order of addition.
 */
#ifndef MINIMAX_MMFILE_H
#define MINIMAX_MMFILE_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/keydir.h"
#include "minimax/graph.h"
#include "shogi/keymap.h"
#include "shogi/zobrist.h"

#define MMFILE_GRAPH "minimax.graph"
#define MMFILE_JOURNAL "minimax.journal"

/* Node flags as stored (a byte; independent of the core's bit numbers). */
enum {
	MMF_VALUED = 0x01,   /* the node has a value (a leaf below it) */
	MMF_CHECKED = 0x02,  /* in check and valued: the core's MM_F_CHECKED */
	MMF_LOOP = 0x04,     /* on a perpetual-check loop */
	MMF_CONST = 0x08,    /* settled exactly (on no cycle, nothing cyclic below) */
	MMF_INCHECK = 0x10,  /* the side to move is in check (from the position) */
	MMF_SURVIVOR = 0x20, /* in-check node surviving the loop extraction */
	MMF_WHITE = 0x40,    /* White to move */
	MMF_INNER = 0x80,    /* an inner node of the leaf policy (from the record) */
};

/* Errors (negative). */
enum {
	MMFILE_OK = 0,
	MMFILE_ENOMEM = ERR_MMFILE - 0,
	MMFILE_EIO = ERR_MMFILE - 1, /* cannot read or write (errno in the message) */
	MMFILE_ESTALE =
	    ERR_MMFILE - 2, /* missing, of another run, or damaged: do a whole-book run */
};
const char *mmfile_strerror(int code);

/* Size of the message buffer of the functions below that take one. */
#define MMFILE_ERRLEN 256

/* One replaced move list of the overlay. */
typedef struct {
	uint32_t off, len; /* in MmView.ov_moves */
	uint32_t node;     /* whose list it is */
} MmOvList;

/* A parent link added since the graph file (child <- parent), chained per child. */
typedef struct {
	uint32_t parent;
	uint32_t next; /* next link of the same child, or MM_NONE */
} MmOvParent;

/* A node's state in the overlay. */
typedef struct {
	MmVd vd;
	uint8_t flags;
} MmOvState;

typedef struct {
	/* The graph file, mapped read-only. */
	void *map;
	size_t map_len;
	uint64_t stamp;
	int draw[2];
	size_t n;
	const Key *keys;
	BookKeyDir kd; /* the file's key directory and filter over keys */
	const uint8_t *flags;
	const MmVd *vd;
	const uint32_t *mstart;
	const MmMove *moves;
	size_t nmoves;
	const uint32_t *pstart;
	const uint32_t *parents;
	size_t nparents;
	/* Nodes added since: index n + j. */
	size_t nnew, new_cap;
	Key *new_keys;
	uint8_t *new_flags;
	MmVd *new_vd;
	KeyMap new_map; /* new_keys[j] -> j */
	/* States changed since, of the graph file's nodes: a bit per node (NULL
	 * until the first), then node -> index in ov_state. Writing them into a
	 * private map copied a page for each one touched (a run at 10⁸ nodes
	 * spent a fifth of its time in the kernel's page tables). */
	uint64_t *ov_bits;
	MmOvState *ov_state;
	size_t ov_nstate, ov_state_cap;
	KeyMap state_of; /* as list_of */
	/* Replaced move lists (any node): node -> index in lists. */
	MmMove *ov_moves;
	size_t ov_nmoves, ov_moves_cap;
	MmOvList *lists;
	size_t nlists, lists_cap;
	KeyMap list_of; /* a set keyed by node (mmfile.c node_key), values */
	/* Parent links added since (the graph file's reverse edges do not have
	 * them): child -> its first link in ov_par. */
	MmOvParent *ov_par;
	size_t ov_npar, ov_par_cap;
	KeyMap first_parent; /* as list_of */
	/* A bit a graph-file node (NULL until the first): its moves replaced
	 * (list_of has it), a parent link added to it (first_parent has it), so
	 * that the nodes without either, nearly all, are not looked up. */
	uint64_t *list_bits, *link_bits;
	/* What this run changed, for mmfile_journal_append. */
	uint8_t *pending;
	size_t pending_len, pending_cap;
	/* The header (length, CRC) of the last batch this view appended ({0, 0}:
	 * none): it ends at the journal length the append returned. */
	uint32_t appended[2];
} MmView;

/*
 * The reverse edges of n nodes' moves (next = child node or MM_NONE for a
 * leaf): the parents of node c are (*parents)[(*pstart)[c] .. (*pstart)[c+1]),
 * in increasing order. The caller frees both. 0 or MMFILE_ENOMEM.
 */
JOSEKI_MUST_USE int mmfile_parents(uint32_t **pstart, uint32_t **parents, size_t n,
                                   const uint32_t *mstart, const MmMove *moves);

/*
 * Writes dir/minimax.graph (through a temporary file, fsync'ed, renamed) and an
 * empty dir/minimax.journal with the given stamp. keys are in key order; flags
 * are MMF_* bytes; mstart/moves are every node's moves, pstart/parents their
 * reverse edges (mmfile_parents). Returns 0, MMFILE_ENOMEM or MMFILE_EIO
 * (message in err).
 */
JOSEKI_MUST_USE int mmfile_write(const char *dir, uint64_t stamp, const int draw[2], size_t n,
                                 const Key *keys, const uint8_t *flags, const MmVd *vd,
                                 const uint32_t *mstart, const MmMove *moves,
                                 const uint32_t *pstart, const uint32_t *parents, char *err);

/* mmfile_write in two steps, for a writer that has more to do before the
 * new graph may replace the old one: mmfile_write_tmp writes and fsyncs
 * dir/minimax.graph.tmp (removed on failure; it gives up, MMFILE_EIO, as soon
 * as *stop turns true: stop may be NULL); mmfile_commit renames it over
 * dir/minimax.graph and writes the empty journal; mmfile_discard removes it
 * instead (also one a killed run left). With pstart NULL, the npar reverse
 * edges are in the temporary file already (mmfile_tmp_parents), and the
 * rest is written around them. */
JOSEKI_MUST_USE int mmfile_write_tmp(const char *dir, uint64_t stamp, const int draw[2], size_t n,
                                     const Key *keys, const uint8_t *flags, const MmVd *vd,
                                     const uint32_t *mstart, const MmMove *moves,
                                     const uint32_t *pstart, const uint32_t *parents, size_t npar,
                                     const atomic_bool *stop, char *err);
/* Begins dir/minimax.graph.tmp with the reverse edges of a graph of n nodes
 * and nmoves moves, where its layout puts them, for a writer that has them
 * long before the rest (a whole-book minimax run: they are its first use of
 * them, not made again for the file); mmfile_write_tmp with pstart NULL
 * writes the rest. 0 or MMFILE_EIO (message in err; the file removed). */
JOSEKI_MUST_USE int mmfile_tmp_parents(const char *dir, size_t n, size_t nmoves,
                                       const uint32_t *pstart, const uint32_t *parents,
                                       const atomic_bool *stop, char *err);
JOSEKI_MUST_USE int mmfile_commit(const char *dir, uint64_t stamp, char *err);
void mmfile_discard(const char *dir);

/* Bytes of an empty journal (its header): the journal length after mmfile_write. */
#define MMFILE_JOURNAL_EMPTY 32

/*
 * Maps dir/minimax.graph and replays dir/minimax.journal up to journal_len
 * bytes. MMFILE_ESTALE (with the reason in err) when a file is missing, has
 * another stamp, or does not check out; v is then empty (mmfile_close is still
 * safe). The view must be closed with mmfile_close.
 */
JOSEKI_MUST_USE int mmfile_open(MmView *v, const char *dir, uint64_t stamp, uint64_t journal_len,
                                char *err);
void mmfile_close(MmView *v);

/*
 * Every key of dir's graph file (stamp) and of the nodes its journal adds up
 * to journal_len, without building a view (the graph's keys section read
 * once, the journal's node entries): add(ctx, keys, n) is called with them
 * in batches. The files are checked as mmfile_open checks them. 0, or
 * MMFILE_ESTALE / MMFILE_ENOMEM (message in err); some keys may have been
 * passed before a failure.
 */
JOSEKI_MUST_USE int mmfile_keys(const char *dir, uint64_t stamp, uint64_t journal_len,
                                void (*add)(void *ctx, const Key *keys, size_t n), void *ctx,
                                char *err);

static inline size_t mmfile_count(const MmView *v)
{
	return v->n + v->nnew;
}
static inline Key mmfile_key(const MmView *v, uint32_t i)
{
	return i < v->n ? v->keys[i] : v->new_keys[i - v->n];
}
/* The overlay's state of file node i (its bit set). */
const MmOvState *mmfile_ov_state(const MmView *v, uint32_t i);
/* Bit i of a view's bits a node (none set while bits is NULL). */
static inline bool mmfile_bit(const uint64_t *bits, uint32_t i)
{
	return bits && (bits[i >> 6] >> (i & 63) & 1);
}
static inline bool mmfile_overlaid(const MmView *v, uint32_t i)
{
	return mmfile_bit(v->ov_bits, i);
}
static inline uint8_t mmfile_flags(const MmView *v, uint32_t i)
{
	if (i >= v->n) return v->new_flags[i - v->n];
	return mmfile_overlaid(v, i) ? mmfile_ov_state(v, i)->flags : v->flags[i];
}
static inline MmVd mmfile_vd(const MmView *v, uint32_t i)
{
	if (i >= v->n) return v->new_vd[i - v->n];
	return mmfile_overlaid(v, i) ? mmfile_ov_state(v, i)->vd : v->vd[i];
}

/* The bytes v holds in memory beside the mapped file: the changes since it
 * (the journal's and its own), their maps and bits. */
size_t mmfile_overlay_bytes(const MmView *v);

/* The node of key k, or MM_NONE. */
uint32_t mmfile_find(const MmView *v, Key k);
/* False when k is certainly not a node: not added, and turned away by the
 * graph file's filter (memory only: no page of the keys or directory read). */
bool mmfile_may_hold(const MmView *v, Key k);
/* mmfile_find of n keys, out[i] for k[i]: the kept graph's filter and
 * directory asked for together (bookdb_keydir_find_many). */
void mmfile_find_many(const MmView *v, const Key *k, size_t n, uint32_t *out);
/* The same, by MMFILE_TOUCH_THREADS threads each taking a run of the keys
 * (fewer than MMFILE_THREADS_FROM keys: on the calling thread). Keys in key
 * order read the graph file's key and directory pages in the file's order,
 * several at a time. */
void mmfile_find_threads(const MmView *v, const Key *k, size_t n, uint32_t *out);
/*
 * Brings the graph file's pages that a walk over nodes[0..n) is about to read
 * into memory, several reads from the disk at once: a few threads
 * (MMFILE_TOUCH_THREADS) read one byte of each such page, so that on a graph
 * larger than memory the walk's own reads, one after another, then find
 * them there (a cold incremental run at 10^8 positions in 8 GB waited 29 s on
 * its walk over parents alone, one page at a time). what: MMFILE_TOUCH_*
 * bits. Changes nothing, and is a hint only: pages may be evicted again. Does
 * nothing for fewer than MMFILE_TOUCH_MIN nodes.
 */
enum {
	MMFILE_TOUCH_STATE = 1,       /* the nodes' flags and values */
	MMFILE_TOUCH_PARENTS = 2,     /* their reverse edges */
	MMFILE_TOUCH_MOVES = 4,       /* their moves */
	MMFILE_TOUCH_CHILD_STATE = 8, /* the flags of the children their moves lead to */
};
#define MMFILE_TOUCH_THREADS 8
#define MMFILE_TOUCH_MIN 256
/* Keys under which a lookup on threads (mmfile_find_threads,
 * mmfile_key_order) stays on the calling thread. */
#define MMFILE_THREADS_FROM 64
void mmfile_touch(const MmView *v, const uint32_t *nodes, size_t n, unsigned what);
/* The same for node i alone, on the calling thread (a caller that is a
 * thread of its own already). */
void mmfile_touch_node(const MmView *v, uint32_t i, unsigned what);

/*
 * Puts nodes[0..n) (none twice) in key order without comparing the graph
 * file's keys: its nodes are numbered in key order, and a node added since
 * is placed by its rank among them (bookdb_keydir_rank: a directory entry
 * and a bucket, looked up by MMFILE_TOUCH_THREADS threads) and then its own
 * key. Compared key to key, a sort read a file node's key (at random in a
 * section of gigabytes) for each comparison with an added node: 11 s of a
 * cold incremental run at 10^8 positions. 0, or MMFILE_ENOMEM (nodes then
 * in some order).
 */
JOSEKI_MUST_USE int mmfile_key_order(const MmView *v, uint32_t *nodes, size_t n);

/* Node i's moves (*len of them); a pointer into the view, valid until it changes. */
const MmMove *mmfile_moves(const MmView *v, uint32_t i, uint32_t *len);

/*
 * Calls fn(parent, ctx) for every node with an edge to i (graph file and
 * overlay); stops early and returns fn's value when it is non-zero.
 */
JOSEKI_MUST_USE int mmfile_each_parent(const MmView *v, uint32_t i,
                                       int (*fn)(uint32_t parent, void *ctx), void *ctx);

/* Changes, recorded for the journal. Each returns 0, MMFILE_ENOMEM, or
 * MMFILE_ESTALE for a node index (or a move's next node) past the graph's end,
 * nothing recorded then. */
JOSEKI_MUST_USE int mmfile_add_node(MmView *v, Key k, uint8_t flags, uint32_t *idx);
JOSEKI_MUST_USE int mmfile_set_moves(MmView *v, uint32_t i, const MmMove *moves, uint32_t len);
JOSEKI_MUST_USE int mmfile_set_state(MmView *v, uint32_t i, uint8_t flags, MmVd vd);

/*
 * Appends the changes made since mmfile_open as one checksummed batch at
 * offset journal_len of dir/minimax.journal and fsyncs it; *new_len gets the
 * journal's new length (the caller records it in the book in the same
 * transaction as the records it belongs to). Nothing pending: *new_len =
 * journal_len and the file is untouched.
 */
JOSEKI_MUST_USE int mmfile_journal_append(MmView *v, const char *dir, uint64_t journal_len,
                                          uint64_t *new_len, char *err);

/* Whether dir's journal, journal_len bytes long as the book records it,
 * still ends with the batch v appended last (v->appended; true when v
 * appended none): a run whose commit failed may have had its batch
 * overwritten by another run's since. */
bool mmfile_journal_ends_with(const MmView *v, const char *dir, uint64_t journal_len);

/*
 * Folds the view (the graph file, the journal's changes and the view's own)
 * into a new graph file of the given stamp with an empty journal, numbered in
 * key order as a whole-book run's file, without analysing anything: every
 * node, state, move and reverse edge as the view has them. The old file is
 * read once, in order; the new one, dir/minimax.graph.tmp, section beside
 * section, each in order through a buffer (the filter through a map of its
 * section, its blocks allocated first), fsync'ed and renamed
 * (mmfile_commit). v is left as it was, in the old numbering: close it and
 * open the new file. 0, MMFILE_ENOMEM, MMFILE_EIO (also when *stop turns
 * true; stop may be NULL) or MMFILE_ESTALE (the view does not add up), the
 * message in err; on failure before the rename the old files are untouched.
 */
JOSEKI_MUST_USE int mmfile_fold(const MmView *v, const char *dir, uint64_t stamp,
                                const atomic_bool *stop, char *err);

#endif
