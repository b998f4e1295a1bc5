/*
 * bookgen/provisional.h — leaves from the book's own values, for while the
 * selector cannot answer yet (docs/cluster.md, "Provisional leaves").
 *
 * The selector's first search from scratch over a large book takes as long
 * as the thought part it must search (minutes at 10⁹ positions). Meanwhile a
 * coordinator can hand out leaves the book's stored values point to: from a
 * root, depth first, at each thought position its moves by their stored
 * value, best first (minimax's per-move value when its last run left one,
 * else the engine's evaluation; a value that comes from a repetition last,
 * as no leaf ends its line), into thought children and out to the first
 * children that are not thought. On a book minimax has valued, the first
 * leaf is the end of the book's principal variation, which is the selector's
 * leaf but for what it counts and the book's values do not (the kif bonus,
 * leases, results since the last minimax run, the path's repetitions). It
 * reads one record a ply, in a read transaction of its own, and uses no
 * selector: it may run while a selector's search is suspended.
 */
#ifndef BOOKGEN_PROVISIONAL_H
#define BOOKGEN_PROVISIONAL_H

#include <stdbool.h>

#include "bookdb/bookdb.h"
#include "bookgen/selector.h"
#include "shogi/position.h"

/* Whether key, a position the book has not thought, is not to be handed out
 * (leased, thought since the last commit, handed out otherwise). */
typedef bool (*ProvTakenFn)(void *ctx, Key key);

/* What a walk asks of its caller (ProvWalk): taken above (NULL: none is
 * skipped so; the caller sorts the leaves out itself); held, when not NULL,
 * whether the book may hold a key (a filter of its keys: false only for a
 * key it does not hold), asked before each read: a child it turns away is
 * a leaf without a read (most children are: on a book larger than memory,
 * each read of a key the book does not hold waits for the disk as long as
 * any other); ahead, when not NULL, is handed the keys of a position's
 * moves as the walk enters it (those held turns away left out), before it
 * reads them one by one (sel_read_ahead: on a book larger than memory the
 * reads are then in flight together); until_ms, when > 0, the clock_ms_f()
 * time at which a call returns with what it has found. */
typedef struct {
	ProvTakenFn taken;
	bool (*held)(void *ctx, Key key);
	void (*ahead)(void *ctx, const Key *keys, size_t n);
	void *ctx;
	int max_reads; /* records read at most a call (0: 4,096) */
	double until_ms;
} ProvAsk;

/*
 * A walk from the root root_sfen (its index root in the leaves), kept
 * between calls. Each prov_next gives up to n leaves more, in the order
 * above: leaves[i] (key, value of the leaf move from the root side's view,
 * the moves from the root) and pos[i] its position. It meets each position
 * once (a transposition's later ways, and a move back into the line walked,
 * are passed over) and skips the leaves ask->taken names, avoided moves,
 * moves with neither a value nor an analysis, lines past SEL_MAX_PLY. Each
 * call goes on where the last stopped, in a read transaction of its own (so
 * it sees what was committed between): n leaves at a time cost the reads of
 * n leaves, not of every leaf handed out before them, and a position
 * thought since a call is not met again. Returns the number found (fewer
 * than n at ask->until_ms or ask->max_reads; 0 for good once every line is
 * tried, or when the root is not thought), SEL_ENOMEM, SEL_EBOOK or
 * SEL_ECORRUPT. prov_open: SEL_EINVAL for a root that does not parse,
 * SEL_ENOMEM.
 */
typedef struct ProvWalk ProvWalk;
JOSEKI_MUST_USE int prov_open(ProvWalk **out, const char *root_sfen, int root);
JOSEKI_MUST_USE int prov_next(ProvWalk *w, SelLeaf *leaves, Position *pos, int n, BookDB *db,
                              const ProvAsk *ask);
/* Whether every line of the walk is tried: prov_next gives no more. */
bool prov_done(const ProvWalk *w);
/* The records its calls did not read, ask->held having turned their keys away. */
uint64_t prov_spared(const ProvWalk *w);
/* The keys of the children a walk would go on to from the record val/len
 * (BOOKDB_MAX_MOVES room in keys): none unless thought, else its moves in
 * the walk's order, those held (when not NULL) turns away left out; their
 * count. For reading ahead below the walk (several lines at once). */
size_t prov_record_children(Key *keys, const uint8_t *val, size_t len,
                            bool (*held)(void *ctx, Key key), void *ctx);
/*
 * How far below the walk to read ahead (a depth of bookdb_prefetch_keys_deep,
 * holding two counts): PROV_AHEAD_DEPTH for the children of a position the
 * walk enters; for the n children (prov_record_children) of a record read
 * ahead at depth, prov_ahead_depth(depth, n), or -1: none. Two branching
 * levels below those children (records with several children to go on to),
 * and along a line of records with one child each up to PROV_AHEAD_CHAIN
 * records, counted anew at each branching level. A book grown by a
 * coordinator is mostly such lines (a result, of one move, is a thought
 * position the next selection goes on from), which the walk goes down a
 * read at a time: read ahead to their ends, many lines' reads are in flight
 * at once. The count bounds a line that comes back on itself.
 */
#define PROV_AHEAD_BRANCH 2
#define PROV_AHEAD_CHAIN 32
#define PROV_AHEAD_DEPTH (PROV_AHEAD_BRANCH << 6 | PROV_AHEAD_CHAIN)
int prov_ahead_depth(int depth, size_t n);
void prov_free(ProvWalk *w);

#endif
