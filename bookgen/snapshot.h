/*
 * bookgen/snapshot.h — the selector's state kept between runs.
 *
 * A coordinator (or think) that stops cleanly writes its selector's graph
 * (nodes, their bounds, edges, parent links, held records, the key filter)
 * and its plan's state (leaves served, queued leaves) to one file beside
 * the book, stamped with the book's state (bookdb_stamp). The next start
 * over the same, unchanged book reads it back instead of searching the
 * thought part of the book from scratch: it continues where the last run
 * stopped, selecting what that run would have selected next.
 *
 * The file: a header (magic, version, the book's stamp, the section table's
 * place), sections of bytes, and the table (per section a tag, its place,
 * length and a 64-bit hash of its bytes). Written to PATH.tmp and renamed
 * over PATH, so a reader sees a whole file or the last one; a torn or damaged
 * file fails its hashes. Native byte order and layout: a file is read only by
 * the build that wrote it (the selector section checks its structures'
 * sizes), anything else is refused and the run starts from scratch.
 */
#ifndef BOOKGEN_SNAPSHOT_H
#define BOOKGEN_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "bookgen/plan.h"
#include "bookgen/selector.h"
#include "shogi/errors.h"

/* The file's name in the book's directory. */
#define SNAP_FILE "selector.snap"
#define SNAP_ERRLEN 512
/* Why a snapshot of no file the book stamps is not used: another book's, a
 * backup's, or this book's from before more rebuilds than its stamps go back
 * (docs/bookdb.md, "Stamps": the last four files). */
#define SNAP_OTHER_FILE                                                                            \
	"of another book file, or of this book before it was written anew more than four "         \
	"times (compact, a rebuilding minimax --full)"

/* Section tags. */
#define SNAP_TAG(a, b, c, d)                                                                       \
	((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

typedef struct SnapWriter SnapWriter;
typedef struct SnapReader SnapReader;

/* snap_create's flags. SNAP_WRITE_BEHIND: the file goes to the disk as it is
 * written, SNAP_BEHIND_CHUNK bytes at a time, past the page cache (O_DIRECT;
 * where the file system refuses it, through the cache, the writer waiting
 * for each chunk but the last before it writes more and dropping it, so that
 * the snapshot never holds more than two chunks of dirty pages or of cache):
 * a checkpoint written beside a service that reads a book larger than memory
 * neither throttles its commits on dirty pages nor takes the memory its book
 * is cached in. */
#define SNAP_WRITE_BEHIND 1u
#define SNAP_BEHIND_CHUNK (8u << 20)

/* A new snapshot for the book state stamp, written to path.tmp (flags: 0 or
 * SNAP_WRITE_BEHIND). 0 or SEL_EIO / SEL_ENOMEM with err (SNAP_ERRLEN bytes)
 * naming the file. */
JOSEKI_MUST_USE int snap_create(SnapWriter **out, const char *path, const BookStamp *stamp,
                                unsigned flags, char *err);
/* Begins section tag (the previous one ends). */
JOSEKI_MUST_USE int snap_section(SnapWriter *w, uint32_t tag);
/* Appends n bytes to the current section. */
JOSEKI_MUST_USE int snap_write(SnapWriter *w, const void *p, size_t n);
/* Writes the table and the header, and renames the file into place; frees w
 * either way (on failure nothing replaces path). 0 or SEL_EIO with err. */
JOSEKI_MUST_USE int snap_commit(SnapWriter *w, char *err);
/* Drops an unfinished snapshot (its temporary file removed). Accepts NULL. */
void snap_abort(SnapWriter *w);

/*
 * Opens the snapshot at path for the book state stamp: its header and table
 * read and checked. SEL_ENOSNAP when there is none, SEL_ESTALE when it is of
 * another state of the book (or another book), SEL_ESNAP when it is damaged or
 * of another build, SEL_EIO / SEL_ENOMEM; err says which and where.
 */
JOSEKI_MUST_USE int snap_open(SnapReader **out, const char *path, const BookStamp *stamp,
                              char *err);
/* The same whatever the file's stamp, and the stamp it was written for (a
 * caller that can bring an older snapshot up to date: the coordinator's
 * checkpoints). */
JOSEKI_MUST_USE int snap_open_any(SnapReader **out, const char *path, char *err);
/* The stamp r was written for, as db's data file reads it into *out: when
 * the book was written anew since from the file r names (compact, a
 * whole-book minimax), carried over (bookdb_stamp_carry) and true; else as
 * it is, false. */
bool snap_stamp_in(BookStamp *out, const SnapReader *r, BookDB *db);
/* Whether section tag is there, and its length. */
bool snap_has(const SnapReader *r, uint32_t tag, uint64_t *len);
/* Reads the whole of section tag (len bytes, its length) into buf and checks
 * its hash. 0, or SEL_ESNAP (absent, another length, a wrong hash) / SEL_EIO
 * with err. */
JOSEKI_MUST_USE int snap_read(SnapReader *r, uint32_t tag, void *buf, uint64_t len, char *err);
void snap_close(SnapReader *r);
/* A section to be read later, by another thread, after snap_close (its own
 * descriptor of the file, which may be unlinked meanwhile). */
typedef struct {
	int fd; /* -1: none */
	uint64_t off, len, hash;
} SnapSection;
/* Section tag (len bytes, its length) kept in *out to be read later: 0, or
 * SEL_ESNAP (absent, another length) / SEL_EIO with err. */
JOSEKI_MUST_USE int snap_section_take(SnapSection *out, SnapReader *r, uint32_t tag, uint64_t len,
                                      char *err);
/* Reads the whole of it into buf and checks its hash: 0, SEL_EIO, SEL_ESNAP. */
JOSEKI_MUST_USE int snap_section_read(const SnapSection *sec, void *buf);
void snap_section_close(SnapSection *sec);

/*
 * The selector's sections. sel_snapshot_write: s between calls (no search
 * suspended), lazy (sel_attach; the key filter waited for if still being
 * built); SEL_EINVAL when not (nothing written). sel_restore instead of sel_attach, on a selector
 * fresh from sel_new: the graph as written, over db (which must be the book
 * it was written from: the stamp says so), no roots (plan_new adds them
 * again). On failure the selector must be freed.
 */
JOSEKI_MUST_USE int sel_snapshot_write(Selector *s, SnapWriter *w);
/* Whether sel_snapshot_write can write s now without waiting for anything
 * (no call suspended, the key filter built and joined, none being made
 * again): a forked child, which has no other thread, may call it then. */
bool sel_snapshot_ready(const Selector *s);
/* Waits until the key filter of a lazy selector is built and joins its
 * thread (between calls; nothing to wait for otherwise). A search stopped
 * while it waited for the filter leaves it building: sel_snapshot_ready is
 * then false until this (or the next call) has waited. A filter being made
 * again beside the one in use (a regrow) is not waited for: joined if made,
 * else sel_snapshot_write writes the one in use (sel_snapshot_ready false
 * meanwhile). */
void sel_snapshot_wait(Selector *s);
JOSEKI_MUST_USE int sel_restore(Selector *s, BookDB *db, SnapReader *r, char *err);

/*
 * Brings a selector restored from a snapshot stamped from (sel_restore) up
 * to the book as it is now, when another writer (an ingest, a think without
 * the snapshot, a merge) committed since — from must be of this book's file
 * (the caller compared it with bookdb_stamp's, as it must before restoring
 * anyway), and behind it: the book's change log holds the
 * key of every record written since from's sequence number on, unless a
 * minimax run consumed entries past it, the log overflowed, or it was not on
 * when the snapshot was written. Each record written is given to the
 * selector as a result is (docs/bookgen.md, "Restarting"). Minimax's own
 * write-back is not logged and changes nothing the selector reads (values,
 * not evaluations or moves). 0, SEL_ESTALE with err when the log cannot say
 * (or says more than a search from scratch would read: more positions than
 * the graph holds), or another SEL_E* code; on failure the selector must be
 * freed.
 */
typedef struct {
	uint64_t entries; /* log entries read */
	uint64_t keys;    /* distinct positions written */
	uint64_t changed; /* nodes of the graph given their new record */
	uint64_t added;   /* thought positions new to the graph, under expanded nodes */
	uint64_t parents; /* expanded nodes built again for them */
} SelCatchUp;
JOSEKI_MUST_USE int sel_catch_up(Selector *s, const BookStamp *from, SelCatchUp *out, char *err);
/* What a catch-up did, for a note: "caught up with the book: N positions
 * written since, M of them in the graph, K new to it" (len bytes). */
void sel_catch_up_note(char *out, size_t len, const SelCatchUp *cu);
/* What a start says of a snapshot of the file the book was written anew from
 * (bookdb_stamp_carry). */
#define SNAP_CARRIED "written before the book was written anew (compact, a whole-book minimax)"

/*
 * The plan's section: its options, roots and weights, and per (root, colour)
 * the leaves served and those queued. plan_restore on a plan fresh from
 * plan_new over the restored selector: SEL_ESNAP with err when the options
 * or roots differ from the snapshot's (the run was started otherwise).
 */
JOSEKI_MUST_USE int plan_snapshot_write(const Plan *p, SnapWriter *w);
JOSEKI_MUST_USE int plan_restore(Plan *p, SnapReader *r, char *err);

/* The 64-bit hash of the sections (exposed for the tests). */
uint64_t snap_hash(const void *p, size_t n);

#endif
