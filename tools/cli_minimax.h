/*
 * tools/cli_minimax.h — the minimax a command runs after its own writes
 * (merge, avoid, prefer): incremental over what changed, or the whole book
 * when it must, and left to the run under way when another one holds the
 * book (a coordinator's), which reads the writes from the change log.
 */
#ifndef TOOLS_CLI_MINIMAX_H
#define TOOLS_CLI_MINIMAX_H

#include <stdbool.h>

#include "bookdb/bookdb.h"
#include "minimax/bookmm.h"
#include "shogi/errors.h"

/*
 * Runs minimax with the default options over db; prefix names the command
 * on the progress line (shown when progress). *busy: another run held the
 * book, nothing was done (returns 0). 0, or < 0 with the message in err
 * (BOOKMM_ERRLEN).
 */
JOSEKI_MUST_USE int cli_minimax_after(BookmmStats *st, bool *busy, BookDB *db, const char *prefix,
                                      bool progress, char *err);

/* Says on stderr, when the book took writes since its last minimax run,
 * how many and that `joseki minimax BOOK` backs them up (before an export), the command on a
 * line of its own:
 * "joseki: CMD: BOOK: N writes of positions since its last minimax run, ...";
 * "... no minimax run has backed its analyses up yet; ..." for a book with
 * thought positions that no run has gone over. Nothing when there are none or
 * it cannot tell. */
void cli_minimax_backlog(const char *cmd, BookDB *db, const char *book);

/* After a whole-book run over db (st): what the book takes a position
 * (*per_pos) and what its records would take in full pages (*packed: their
 * bytes, a key and LMDB's node and pointer each, 3 % of slack); 0 each after
 * an incremental run, or when the book cannot be read. */
void cli_minimax_space(double *per_pos, double *packed, BookDB *db, const BookmmStats *st);

#define CLI_MINIMAX_LINE 512
/* A run's notes for its summary, each a line (indented) from line[nl] on:
 * the book rebuilt, or rewritten in place and why, and then the compact
 * that would pack it; the children looked up in sorted runs, the journal
 * folded. Returns nl and the lines added. */
int cli_minimax_notes(char line[][CLI_MINIMAX_LINE], int nl, const BookmmStats *st, double per_pos,
                      double packed);

#endif
