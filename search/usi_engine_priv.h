/*
 * search/usi_engine_priv.h — what the USI driver's two files share:
 * usi_proc.c (the engine process, its pipes, lines in and out, the log) and
 * usi_engine.c (the protocol: handshake, searches, retries). Not for use
 * outside search/.
 */
#ifndef SEARCH_USI_ENGINE_PRIV_H
#define SEARCH_USI_ENGINE_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "search/usi_engine.h"
#include "search/usi_info.h"
#include "shogi/notation.h"

/* Longest engine output line kept; longer lines are skipped as garbage. */
#define USI_RBUF 65536
/* Position command: "position sfen <SFEN> moves" + up to POS_MAX_STATES moves. */
#define USI_CMD_MAX (64 + SFEN_MAX + POS_MAX_STATES * 6 + 128)
/* Malformed lines quoted in the log per search (the rest are only counted). */
#define USI_LOG_MALFORMED 3

struct UsiEngine {
	SearchEngine base; /* first: a SearchEngine * is a UsiEngine * */
	UsiEngineConfig cfg;
	char *path;
	char **argv; /* argv[0] = path, NULL-terminated */
	UsiOption *options;
	char *log_path;
	/* The option names the running engine listed after usi ("option name
	 * N type ..."), to check the configured ones against (usi_engine.c). */
	char **listed;
	size_t nlisted, listed_cap;

	int log_fd;    /* driver messages; -1 when not logging */
	int stderr_fd; /* what the engine's stderr goes to */
	pid_t pid;     /* -1 when no process */
	/* CPU time: of the processes that ended, and the last reading of the
	 * running one (usi_cpu_note). */
	int64_t cpu_ended_ms, cpu_seen_ms;
	int to_fd;   /* engine stdin */
	int from_fd; /* engine stdout */
	int cur_multipv;
	bool new_game_pending;
	bool searched; /* the running process has been sent a go (restart_each_game) */
	/* The engine's go takes only the USI time controls (btime wtime
	 * byoyomi): known by its id name (usi_engine.c, KNOWN_QUIRKS). */
	bool time_only;

	char name[128];
	char err[SEARCH_ERRLEN];
	UsiEngineStats stats;

	char rbuf[USI_RBUF];
	size_t rstart, rend;
	bool discarding; /* inside an overlong line */
	bool draining;   /* reading the answer to a cancel's stop: ignore the flag */

	char cmd[USI_CMD_MAX];
	Position scratch;
	UsiInfo info;
	UsiInfo slots[SEARCH_MULTIPV_MAX];
	bool have[SEARCH_MULTIPV_MAX];
};

enum { LINE_TIMEOUT = 0, LINE_OK = 1, LINE_OVERLONG = 2, LINE_CANCEL = 3 };

/* usi_proc.c */

/* A driver message to the log (one write() a line, with a timestamp). */
void usi_log_msg(UsiEngine *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sets the engine's last error (and logs it); returns rc. */
int usi_fail(UsiEngine *e, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "exit status N" / "killed by signal N" of a wait status. */
void usi_describe_status(int status, char *out, size_t len);
/* Reaps pid within ms milliseconds; true with *status when it ended. */
bool usi_reap_within(pid_t pid, int ms, int *status);
/* The CPU time (ms) process pid and the children it reaped have used, from
 * /proc; -1 when it cannot be read (the process is gone). */
int64_t usi_proc_cpu_ms(pid_t pid);
/* Reads the running process's CPU time into e->cpu_seen_ms (the last reading
 * stays when it cannot be read); ended: the process is ending, and what it
 * used moves to e->cpu_ended_ms. */
void usi_cpu_note(UsiEngine *e, bool ended);
/* Ends the process group (quit and a grace period first when polite). */
void usi_kill_engine(UsiEngine *e, bool polite);
/* Starts the engine process with its pipes; SEARCH_ESPAWN/EIO on failure. */
int usi_spawn(UsiEngine *e);
/* Writes buf whole (a dead engine is SEARCH_ECRASH, never SIGPIPE). */
int usi_write_all(UsiEngine *e, const char *buf, size_t len);
/* The next line before deadline: LINE_OK with *line and *len, LINE_TIMEOUT,
 * LINE_OVERLONG (skipped), LINE_CANCEL, or SEARCH_ECRASH / SEARCH_EIO. */
int usi_read_line(UsiEngine *e, int64_t deadline, const char **line, size_t *len);

#endif
