/*
 * bookdb/check.h — the store's invariants, record by record, and the repair
 * that copies what is sound of a damaged book into a new one (joseki check).
 *
 * A record is sound when it decodes, holds a legal position whose key is its
 * key, and every stored move is legal there, stored once, with game
 * statistics that add up (wins + draws + losses <= count).
 */
#ifndef BOOKDB_CHECK_H
#define BOOKDB_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "shogi/position.h"
#include "shogi/errors.h"

/* Called once per problem found: the record's key and what is wrong. */
typedef void (*BookCheckFn)(void *ctx, Key key, const char *problem);

/*
 * The problems of one record (key, raw value val of len bytes): reports each
 * through fn (may be NULL) and returns how many. When the record decodes to a
 * legal position with the right key, *moves_only is set (only moves are at
 * fault: a repair keeps the record without them) and rec holds it with the
 * faulty moves removed. rec and pos are scratch space.
 */
JOSEKI_MUST_USE int bookdb_check_record(Key key, const uint8_t *val, size_t len, BookRecord *rec,
                                        Position *pos, bool *moves_only, BookCheckFn fn, void *ctx);

/*
 * What every reader of a record checks of one it decoded, as check does: rec,
 * decoded from the record at key, holds the position pos (which the caller
 * set from it), whose key is key, and every stored move is one of
 * legal[0..nlegal) (pos's legal moves; legal NULL: each move is tested alone,
 * movegen_is_legal, for readers that need no list), stored once, with game
 * statistics that add up. 0, or BOOKDB_ECORRUPT with what is wrong in why (BOOKDB_ERRLEN
 * bytes: "record <key>: ...").
 */
JOSEKI_MUST_USE int bookdb_record_sound(const BookRecord *rec, Key key, const Position *pos,
                                        const Move *legal, int nlegal, char *why);

/*
 * Decodes the record at key (its raw value val, len bytes) into rec, its
 * position into pos and pos's legal moves into legal (MOVEGEN_MAX; *nlegal
 * how many; legal NULL: no list, *nlegal 0, the moves tested one by one),
 * and checks it (bookdb_record_sound). 0, or BOOKDB_ECORRUPT with
 * what is wrong in why (BOOKDB_ERRLEN bytes): a record that does not decode,
 * holds an impossible position, or is not sound.
 */
JOSEKI_MUST_USE int bookdb_record_read(BookRecord *rec, Position *pos, Move *legal, int *nlegal,
                                       Key key, const uint8_t *val, size_t len, char *why);

typedef struct {
	uint64_t records;  /* records read */
	uint64_t bad;      /* records with problems */
	uint64_t problems; /* problems found */
	bool stopped;      /* reading stopped early (the database is damaged past a record) */
	int stop_code;     /* the BOOKDB_* code it stopped with */
	/* The records the database counts (LMDB's own count, kept apart from
	 * its pages), and of them those the pass could not read: damaged pages
	 * below the records can hide records without any error (a leaf page's
	 * header), or stop the pass (stopped). A repair lacks them. */
	uint64_t expected, unread;
	/* With a repair: */
	uint64_t copied;   /* sound records copied as they are */
	uint64_t repaired; /* records copied without their faulty moves */
	uint64_t dropped;  /* records not copied */
	uint64_t games;    /* game ids copied */
	/* The games database: entries read, and those that do not decode or
	 * replay (each reported through fn under key 0, naming the game). */
	uint64_t game_entries, bad_games;
	/* The marks database (bookdb/marks.h): entries read, and those that do
	 * not decode or whose record does not carry the mark (each reported
	 * through fn under the record's key); copied by a repair. */
	uint64_t mark_entries, bad_marks;
	bool merge_unfinished; /* a joseki merge was interrupted (meta "merge") */
	/* A minimax run was killed or stopped before its end (minimax's marks,
	 * meta "mmfull" or "mmrun", docs/minimax.md): the values are in part of
	 * an older run; the next run mends them. */
	bool minimax_unfinished;
} BookCheckStats;

/*
 * Checks every record of db. With repair_dir, also writes every sound record
 * (and every record whose faults are in its moves only, without those moves)
 * and the ids of the ingested games into a new book there (which must not
 * exist yet: BOOKDB_EINVAL with a message), written as repair_dir.partial
 * (a stale one removed first) and renamed at the end; on failure, or when
 * LMDB stops on a bad page of db (bookdb/damage.h), no repair_dir is left.
 * progress (may be NULL; with ctx) gets the records read of those the book
 * holds, every 16,384 records. Without a repair the records are checked on
 * every core, 16,384 read at a time; fn still hears the problems in key
 * order, from the calling thread. Returns 0 when the check ran
 * (st says what it found), or a negative BOOKDB_* code with a message in err
 * (BOOKDB_ERRLEN bytes) that names the book it is about, once ("NEW: exists
 * already ...").
 */
JOSEKI_MUST_USE int bookdb_check(BookCheckStats *st, BookDB *db, const char *repair_dir,
                                 BookCheckFn fn, void *ctx, BookProgressFn progress,
                                 void *progress_ctx, char *err);

#endif
