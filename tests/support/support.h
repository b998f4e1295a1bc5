/*
 * tests/support/support.h — shared helpers for the cmocka tests: sandboxes,
 * running the real ./joseki and other programs, reading files and fixtures.
 * Tests run from the repository root (tests/run.sh does that).
 */
#ifndef TESTS_SUPPORT_H
#define TESTS_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/types.h>

#include "bookdb/bookdb.h"
#include "shogi/zobrist.h"

/*
 * Plants a record in the book at dir (made when missing): the position spec
 * (startpos, an SFEN, either with moves) with the moves "usi:eval" or
 * "usi:eval:count" in moves (space-separated; eval '-' for none: statistics
 * only, count 1 unless given), thought at depth when depth > 0 (each move's
 * depth), its game statistics wins = count. Replaces a record already there.
 */
void ts_plant(const char *dir, const char *spec, const char *moves, int depth);
/* The record of pos as txn has it (or a new one) in rec, and its move m
 * (appended, zeroed, when the record lacks it). */
BookMove *ts_record_move(BookRecord *rec, BookTxn *txn, const Position *pos, Move m);

/* The first legal move of the position sfen, as USI (usi: at least 8 bytes);
 * fails the test when sfen does not parse or has no legal move. */
void ts_some_move(const char *sfen, char *usi);

/* Creates a fresh directory under $TMPDIR (or /tmp); the caller frees the path. */
char *ts_mkdtemp(void);
/* A fresh empty book (no_sync) at DIR/book, DIR a new ts_mkdtemp directory;
 * ts_book_close frees it and removes DIR. */
typedef struct {
	char *dir;
	char path[4200];
	BookDB *db;
} TsBook;
void ts_book_open(TsBook *b);
void ts_book_close(TsBook *b);
/* Removes a directory tree (rm -rf); accepts NULL. */
void ts_rmtree(const char *path);
/* How many entries a directory holds (. and .. not counted); fails the test
 * when it cannot be read. */
int ts_files_in(const char *dir);
/* Path of the joseki binary under test: $JOSEKI, else "./joseki". */
const char *ts_joseki(void);
/*
 * Runs cmd with /bin/sh -c, stdin from /dev/null; captures stdout and stderr
 * into malloc'd NUL-terminated strings (each out-param may be NULL to discard).
 * Returns the exit status (128+signal if killed), or -1 if it could not run.
 */
int ts_run(const char *cmd, char **out, char **err);
/* As ts_run, but stderr is a terminal (a pseudo-terminal's slave): *tty
 * gets what was written to it (the terminal turns "\n" into "\r\n"). For the
 * progress lines commands write only on a terminal. */
int ts_run_tty(const char *cmd, char **out, char **tty);
/* printf-style: builds the command line, then ts_run. */
int ts_runf(char **out, char **err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Reads a whole file into a malloc'd NUL-terminated buffer; NULL on error.
 * *len (may be NULL) gets its length in bytes (binary files too). */
char *ts_read_file(const char *path, size_t *len);
/* Writes a whole file; returns 0 or -1. */
int ts_write_file(const char *path, const char *data, size_t len);
/*
 * Runs a printf-built command (as ts_run), asserts (cmocka) that it exits with
 * expect_rc and prints one JSON object, and returns it (json_decref it).
 * The command and its output are printed when the exit status differs.
 */
struct json_t;
struct json_t *ts_run_json(int expect_rc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The integer member k of o; asserts that it is there. */
long long ts_jint(struct json_t *o, const char *k);

/* Seed for randomised tests: $TEST_SEED if set, else time-based; printed. */
/* A growing buffer for libcurl's write callbacks: ts_collect appends, keeps
 * data NUL-terminated (free data when done). */
typedef struct {
	char *data;
	size_t len;
} TsBuf;
size_t ts_collect(char *p, size_t size, size_t n, void *buf);

/* GET /v1/work/status of the coordinator on 127.0.0.1:port with a worker's
 * token: the object (decref it), or NULL when it could not be read (no
 * answer in 20 s, not 200, not JSON). */
struct json_t *ts_work_status(int port, const char *token);

/* How many times needle (not empty) is in s, not overlapping. */
int ts_occurrences(const char *s, const char *needle);

/* Starts `JOSEKI serve BOOK --listen 127.0.0.1:0 EXTRA` as a child with its
 * stderr in *log; returns the port from its start line (0: it never said). */
int ts_serve_start(pid_t *pid, FILE **log, const char *book, const char *extra);
/* The same, keeping what it said up to its start line, that line included,
 * in said (len bytes, cut short when longer). */
int ts_serve_start_said(pid_t *pid, FILE **log, const char *book, const char *extra, char *said,
                        size_t len);

/* Copies what a child still says on log (ts_serve_start's) into the file
 * path, line by line as it comes, in a thread of its own that owns log from
 * now on: the child never blocks on a full pipe, and what it said is kept
 * for a failure's message (ts_child_said). */
typedef struct TsDrain TsDrain;
TsDrain *ts_log_drain(FILE *log, const char *path);
/* Waits (at most secs: the child's own children may hold the pipe) until the
 * drain has copied everything, once the child has ended, and frees it. */
void ts_log_drain_end(TsDrain *d, double secs);
/* A line for a failure's message about child *pid, whose stderr goes to the
 * file path (through *drain, or NULL): whether it still runs, else how it
 * ended (it is then reaped: *pid and *drain are set to 0 and NULL, the drain
 * ended first) and the last bytes it said. Malloc'd. */
char *ts_child_said(pid_t *pid, TsDrain **drain, const char *path);

/* text with the lines cli_wrap broke joined again (each "\n  " a blank), so
 * that a phrase is found whatever the console's width. Malloc'd. */
char *ts_unwrapped(const char *text);

/* Starts argv[0] (looked up in PATH) as a child: stdin /dev/null, stdout and
 * stderr to the files out and err (NULL: /dev/null), truncated, or appended
 * to when append. Returns its pid (asserts that fork worked). */
pid_t ts_spawn(char *const argv[], const char *out, const char *err, bool append);
/* Runs argv (its output to /dev/null) and kills it with SIGKILL after a
 * random moment in [0, span_ms) drawn from *rng: true when the kill landed,
 * false when the command had ended first (asserting that it ended with 0). */
bool ts_run_killed(char *const argv[], long long span_ms, uint64_t *rng);

/*
 * The real USI engines Debian ships, which tools/install-deps.sh installs:
 * "fairy-stockfish" (/usr/games/fairy-stockfish) or "gpsusi"
 * (/usr/games/gpsusi). Returns the path; fails the test (cmocka) with a
 * message naming the program and the installer when it is not there, so a
 * missing engine is never a silent skip.
 */
const char *ts_real_engine(const char *name);
/*
 * gpsusi writes every setoption to gpsusi.conf in its home directory
 * (/usr/share/gpsshogi-data for Debian's build) and reads it back at the
 * next start, so options leak between runs and between parallel tests.
 * This gives the tests' gpsusi processes a private home under dir (its data
 * files linked from the installed one) through GPSSHOGI_HOME, which child
 * processes inherit.
 */
void ts_gpsshogi_home(const char *dir);

/*
 * Reads every record of the book at dir (read-only) and checks each thought
 * one: at least one engine evaluation, every evaluated move legal in the
 * record's position, its depth 1..max_depth (max_depth 0: any) and its eval
 * within the mate range; the record's think depth 1..max_depth too.
 * Fails the test naming the record otherwise. Returns the thought records;
 * *nonzero (may be NULL) gets the evaluations that are not 0.
 */
long ts_book_check_thought(const char *dir, int max_depth, long *nonzero);

/*
 * Waiting for an event instead of sleeping (each with a deadline, generous:
 * it only bounds a failure, a pass never waits for it).
 *
 * ts_wait_output reads f (a pipe from a child, e.g. ts_serve_start's log)
 * until needle has appeared in what it read; false (the text so far printed
 * on stderr) at EOF or after timeout_ms. What it read is consumed.
 */
bool ts_wait_output(FILE *f, const char *needle, int timeout_ms);
/* The same, keeping what it read: appended to *text (malloc'd, NUL-ended;
 * *len its length), and needle looked for in what this call read. */
bool ts_read_until(FILE *f, char **text, size_t *len, const char *needle, int timeout_ms);
/* Until the file at path (a child's log, its stderr) holds needle at or after
 * byte from (ts_file_size before the event waited for); false (what it holds
 * printed on stderr) after timeout_ms. */
bool ts_wait_file(const char *path, size_t from, const char *needle, int timeout_ms);
/* The size of the file at path, 0 when there is none. */
size_t ts_file_size(const char *path);
/* The pages of the file at path in the page cache now (mincore over a map
 * of it); the file must be there. */
size_t ts_resident_pages(const char *path);
/* XORs the byte at offset off of the file at path with mask (damage for a
 * reader's checks to find); the byte must be there. */
void ts_flip_byte(const char *path, long off, int mask);
/* Until some process holds a flock(2) on path (as /proc/locks shows, without
 * taking the lock itself); false after timeout_ms, or as soon as the child
 * alive (0: none) has ended (it is left for the caller to reap). */
bool ts_wait_flocked(const char *path, pid_t alive, int timeout_ms);
/*
 * A child in a conversation: `sh -c cmd` with its stdin and stdout on pipes
 * (stderr inherited). ts_child_send writes to its stdin; ts_child_wait reads
 * its stdout until needle appears after the previous match (returning it,
 * a pointer into text valid until the next call) or NULL after timeout_ms or
 * at EOF (the output so far printed on stderr); ts_child_end (closing its
 * stdin first if close_stdin) reads the rest until it exits and returns its
 * exit status (128+signal; -1 if it had to be killed after timeout_ms);
 * ts_child_free releases it.
 */
typedef struct {
	pid_t pid;
	int in_fd, out_fd;
	char *text; /* all of its stdout so far, NUL-terminated */
	size_t len, cap, mark;
} TsChild;
int ts_child_start(TsChild *c, const char *cmd);
void ts_child_send(TsChild *c, const char *text);
const char *ts_child_wait(TsChild *c, const char *needle, int timeout_ms);
int ts_child_end(TsChild *c, bool close_stdin, int timeout_ms);
void ts_child_free(TsChild *c);

/*
 * Moves this test process, and every child it starts from then on, into a
 * mount namespace of its own, where it may mount a small tmpfs or a read-only
 * bind mount without root and without touching the machine's mounts (they
 * vanish with the process, even if it crashes): as root a new mount
 * namespace; otherwise, or where root may not mount (a container without
 * CAP_SYS_ADMIN), a user namespace in which this user is root. Call it before
 * starting threads; later calls do nothing. Returns 0, or -1 with the reason
 * in why (n bytes).
 */
int ts_private_mounts(char *why, size_t n);

/*
 * A recorder for a library's progress callback: the test's adapter passes
 * each call's phase and the count that should only grow (ts_progress_note,
 * safe from several threads; the first TS_PROGRESS_MAX calls are kept, all
 * are counted). ts_progress_check asserts (cmocka) that there was a call,
 * that each phase is one of phases (NULL-terminated), that the count never
 * went down within a phase, and that the last call, and only it, was "done".
 * ts_progress_count: the calls of one phase.
 */
#define TS_PROGRESS_MAX 4096
typedef struct {
	pthread_mutex_t mu;
	size_t n; /* calls, including those not kept */
	const char *phase[TS_PROGRESS_MAX];
	uint64_t done[TS_PROGRESS_MAX];
} TsProgress;
TsProgress *ts_progress_new(void); /* free() it */
void ts_progress_note(TsProgress *p, const char *phase, uint64_t done);
size_t ts_progress_count(const TsProgress *p, const char *phase);
void ts_progress_check(const TsProgress *p, const char *const *phases);
/* The count of the last call (the "done"). */
uint64_t ts_progress_last(const TsProgress *p);

/*
 * Sends this process's stderr (fd 2) into a new file at path until
 * ts_stderr_end, which puts it back and returns what was written (malloc'd):
 * to check that a library run without a progress callback prints nothing.
 */
int ts_stderr_begin(const char *path);
char *ts_stderr_end(int saved, const char *path);

/* The key of a position spec ("startpos moves ..."), which must parse. */
Key ts_line_key(const char *line);

unsigned long long ts_seed(const char *test_name);
/* The next number of a splitmix64 stream (state: any 64-bit value, e.g. a seed). */
uint64_t ts_rand(uint64_t *state);
/* For a kill -9 at a random moment of a command that took whole_ms here in
 * full: the span (microseconds, for `sleep 0.%06u`) to draw the moment from,
 * nine tenths of it (at least 1 ms, below a second). */
unsigned ts_kill_span_us(double whole_ms);

/* Whether the book at path book (opened read-only, beside a writer) holds the
 * position of key hex (32 hex digits) as thought. */
bool ts_book_thought(const char *book, const char *hex);

#endif
