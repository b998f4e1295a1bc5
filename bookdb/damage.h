/*
 * bookdb/damage.h — a book damaged below its records, said instead of a crash.
 *
 * LMDB keeps no checksums and trusts every page it reads: a damaged branch or
 * leaf page can send it outside its map (SIGSEGV, SIGBUS) or into one of its
 * own assertions (abort). No reader can get past such a page, and check
 * --repair cannot either; what can be done is to say so, naming the book, and
 * stop (docs/bookdb.md, "A damaged book").
 *
 * bookdb registers every environment it opens: its map and its directory, and
 * an LMDB assertion callback that calls the function given to
 * bookdb_damage_on (which must not return). The front end's SIGSEGV/SIGBUS
 * handler asks bookdb_damage_book whether a fault was LMDB's on a book, and
 * prints bookdb_damage_format's line. The lookups and the formatting are
 * async-signal-safe.
 */
#ifndef BOOKDB_DAMAGE_H
#define BOOKDB_DAMAGE_H

#include <stdbool.h>
#include <stddef.h>

/* The exit status of a process stopped by a book damaged below its records. */
#define BOOKDB_EXIT_DAMAGED 3

/* Called on a failed LMDB assertion in the book at dir; how is LMDB's words
 * ("mdb.c:5921: Assertion 'IS_LEAF(mp)' failed in mdb_cursor_next()"). Must not
 * return (LMDB aborts when it does). */
typedef void (*BookDamageFn)(const char *dir, const char *how);

/* Sets the assertion function (NULL: the default, which writes
 * bookdb_damage_format's line without a command and aborts). */
void bookdb_damage_on(BookDamageFn fn);

/* The book a fault is LMDB's on: the one whose map holds addr, else, when pc
 * lies in liblmdb's code, the book open in this process (or "A or B" when
 * several are; a check --repair output is not a suspect). NULL: neither, the
 * fault is not the book's. Async-signal-safe; the string is static. */
const char *bookdb_damage_book(const void *addr, const void *pc);

/* Writes "joseki: CMD: DIR: the book's database file is damaged below its
 * records (LMDB stopped at a bad page: HOW); ..." and a newline into buf (cmd
 * NULL or empty: without "CMD: "); cut to cap. Returns its length.
 * Async-signal-safe. */
size_t bookdb_damage_format(char *buf, size_t cap, const char *cmd, const char *dir,
                            const char *how);

/* Removes what a check --repair left half-written (its NEW.partial
 * directory), if any. Async-signal-safe. */
void bookdb_damage_cleanup(void);

#endif
