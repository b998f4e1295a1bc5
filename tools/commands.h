/*
 * tools/commands.h — the joseki subcommands. Each lives in tools/cmd_<name>.c
 * and is a thin front end over the modules: parse arguments, call the library,
 * print. A command returns the process exit status: 0 success, 1 failure
 * (message on stderr starting "joseki: "), 2 bad usage; any command stops
 * with 3 when LMDB meets a book damaged below its records (bookdb/damage.h,
 * the handler in joseki.c).
 */
#ifndef TOOLS_COMMANDS_H
#define TOOLS_COMMANDS_H

#include <stdint.h>

#include "shogi/errors.h"
typedef int (*joseki_cmd_fn)(int argc, char **argv); /* argv[0] is the subcommand */

/* Set by `serve --work` for its whole-book `joseki minimax` child to its own
 * pid: the child stops (as on SIGTERM) when that process dies. */
#define JOSEKI_PARENT_ENV "JOSEKI_STOP_WITH_PARENT"

JOSEKI_MUST_USE int cmd_perft(int argc, char **argv);
JOSEKI_MUST_USE int cmd_replay(int argc, char **argv);
JOSEKI_MUST_USE int cmd_ingest(int argc, char **argv);
JOSEKI_MUST_USE int cmd_fetch(int argc, char **argv);
JOSEKI_MUST_USE int cmd_import(int argc, char **argv);
JOSEKI_MUST_USE int cmd_query(int argc, char **argv);
JOSEKI_MUST_USE int cmd_stats(int argc, char **argv);
JOSEKI_MUST_USE int cmd_check(int argc, char **argv);
JOSEKI_MUST_USE int cmd_compact(int argc, char **argv);
JOSEKI_MUST_USE int cmd_backup(int argc, char **argv);
JOSEKI_MUST_USE int cmd_serve(int argc, char **argv);
JOSEKI_MUST_USE int cmd_token(int argc, char **argv);
JOSEKI_MUST_USE int cmd_bench_work(int argc, char **argv);
JOSEKI_MUST_USE int cmd_synth(int argc, char **argv);
JOSEKI_MUST_USE int cmd_select(int argc, char **argv);
JOSEKI_MUST_USE int cmd_think(int argc, char **argv);
JOSEKI_MUST_USE int cmd_minimax(int argc, char **argv);
JOSEKI_MUST_USE int cmd_export(int argc, char **argv);
JOSEKI_MUST_USE int cmd_peta_shock(int argc, char **argv);
JOSEKI_MUST_USE int cmd_usi(int argc, char **argv);
JOSEKI_MUST_USE int cmd_bench(int argc, char **argv);
JOSEKI_MUST_USE int cmd_gen_games(int argc, char **argv);
JOSEKI_MUST_USE int cmd_match(int argc, char **argv);
JOSEKI_MUST_USE int cmd_merge(int argc, char **argv);
JOSEKI_MUST_USE int cmd_extend(int argc, char **argv);
JOSEKI_MUST_USE int cmd_prune(int argc, char **argv);
JOSEKI_MUST_USE int cmd_avoid(int argc, char **argv);
JOSEKI_MUST_USE int cmd_prefer(int argc, char **argv);
JOSEKI_MUST_USE int cmd_marks(int argc, char **argv);
JOSEKI_MUST_USE int cmd_cycle(int argc, char **argv);
JOSEKI_MUST_USE int cmd_worker(int argc, char **argv);

/* Installs handler for SIGINT and SIGTERM (a command's clean stop on Ctrl-C). */
void joseki_catch_stop(void (*handler)(int));

/* Prints "joseki: <message>\n" on stderr (printf-style), the message
 * escaped (errmsg_escape: no control byte of a typed path or name, or of a
 * file's text, reaches the terminal raw). */
void joseki_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A progress line of records on stderr, over the one before: "\r<what>N of M
 * records (P%)", the rest of the terminal line cleared (P 100 from done ==
 * total on, and when total is 0). */
void joseki_progress_records(const char *what, uint64_t done, uint64_t total);

/* That line kept to one every 200 ms (and always at done == total), and
 * taken off the terminal before other output: ms is when it was last
 * written (0: it is not on). */
typedef struct {
	int64_t ms;
} JosekiProgress;
void joseki_progress_every(JosekiProgress *p, const char *what, uint64_t done, uint64_t total);
/* Takes the line off (stdout flushed first, so that what it printed stays
 * above); nothing when it is not on. */
void joseki_progress_off(JosekiProgress *p);

/* Prints o as one line of compact JSON on stdout (dump flags added to
 * JSON_COMPACT) and releases it; o may be NULL (a failed json_pack). Returns
 * 0, or -1 after "joseki: out of memory" on stderr. */
struct json_t;
JOSEKI_MUST_USE int joseki_print_json(struct json_t *o, size_t flags);

/* The process's peak anonymous memory so far (shogi/memuse.h: the sampler
 * runs from the command's start), as a summary line says it ("212 MiB"), and
 * when arrays went past the budget into files, the most held there ("212 MiB,
 * 1.2 GiB of arrays in files"), in buf (JOSEKI_PEAK_LEN bytes); and into o as
 * "peak_anon_bytes" and "arrays_in_files_bytes" (o may be NULL). */
#define JOSEKI_PEAK_LEN 80
const char *joseki_peak_memory(char *buf, size_t len);
/* The same figures as a summary line's fields, in MiB: "peak_anon_mb M
 * files_mb F" (F 0 when no array went to a file), in buf (JOSEKI_PEAK_LEN
 * bytes). */
const char *joseki_peak_fields(char *buf, size_t len);
struct json_t *joseki_with_peak(struct json_t *o);

/* Says on stderr ("joseki: CMD: --openings: ...") when some of the n openings
 * read from path reach a position an earlier one reaches: their games repeat
 * its games, and a match is fewer games than it looks (tools/cmd_match.c). */
void joseki_openings_note(const char *cmd, const char *path, const char *const *openings, int n);

#endif
