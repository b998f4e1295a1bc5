/*
 * search/usi_proc.c — the engine process of the USI driver: spawning it in its
 * own process group with pipes, killing it, writing and reading lines with
 * deadlines, and the log (usi_engine_priv.h). The protocol is usi_engine.c.
 */
#include "search/usi_engine_priv.h"
#include "shogi/errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shogi/clock.h"

/* ---- logging and errors ---- */

static void log_vmsg(UsiEngine *e, const char *fmt, va_list ap)
{
	char msg[1024], stamp[32];
	struct timespec ts;
	struct tm tm;
	int n;

	if (e->log_fd < 0) return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
	n = snprintf(msg, sizeof msg, "%s.%03ldZ joseki usi-driver [%s pid %d]: ", stamp,
	             ts.tv_nsec / 1000000, e->path, (int)e->pid);
	if (n < 0 || (size_t)n >= sizeof msg) return;
	vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
	n = (int)strlen(msg);
	if ((size_t)n < sizeof msg - 1)
		msg[n++] = '\n';
	else
		msg[sizeof msg - 2] = '\n', n = (int)sizeof msg - 1;
	/* One write per message keeps lines whole in a log shared with stderr. */
	if (write(e->log_fd, msg, (size_t)n) < 0) {
		/* nothing sensible to do: the log is best effort */
	}
}

void usi_log_msg(UsiEngine *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(e, fmt, ap);
	va_end(ap);
}

/* Records the failure message (and logs it); returns rc. */
int usi_fail(UsiEngine *e, int rc, const char *fmt, ...)
{
	/* An engine's bytes quoted in it (a bestmove, an info line) are shown
	 * as text, whatever the engine wrote. */
	char raw[sizeof e->err];
	va_list ap;
	va_start(ap, fmt);
	errmsg_vset(raw, sizeof raw, rc, fmt, ap);
	va_end(ap);
	errmsg_escape(e->err, sizeof e->err, raw, strlen(raw));
	usi_log_msg(e, "%s", e->err);
	return rc;
}

/* ---- process management ---- */

static void close_fd(int *fd)
{
	if (*fd >= 0) close(*fd);
	*fd = -1;
}

void usi_describe_status(int status, char *out, size_t len)
{
	if (WIFEXITED(status))
		snprintf(out, len, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(out, len, "killed by signal %d (%s)", WTERMSIG(status),
		         strsignal(WTERMSIG(status)));
	else
		snprintf(out, len, "status %d", status);
}

/* Waits up to ms for the process to exit; true with *status when it did. */
bool usi_reap_within(pid_t pid, int ms, int *status)
{
	int64_t deadline = clock_ms() + ms;
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid) return true;
		if (r < 0 && errno != EINTR)
			return true; /* not our child any more (SIGCHLD ignored): nothing to reap */
		if (clock_ms() >= deadline) return false;
		struct timespec ts = {0, 2 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

int64_t usi_proc_cpu_ms(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0) return -1;
	buf[n] = 0;
	/* pid (comm) state ppid ...: the name may hold spaces and parentheses,
	 * so the fields are counted from its last ')'; utime, stime, cutime and
	 * cstime are fields 14-17 (proc(5)), in clock ticks. */
	const char *p = strrchr(buf, ')');
	long long f[4];
	long hz = sysconf(_SC_CLK_TCK);
	if (!p || hz <= 0 ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld %lld %lld", &f[0],
	           &f[1], &f[2], &f[3]) != 4)
		return -1;
	return (f[0] + f[1] + f[2] + f[3]) * 1000 / hz;
}

void usi_cpu_note(UsiEngine *e, bool ended)
{
	int64_t c = e->pid > 0 ? usi_proc_cpu_ms(e->pid) : -1;
	if (c >= 0) e->cpu_seen_ms = c;
	if (ended) {
		e->cpu_ended_ms += e->cpu_seen_ms;
		e->cpu_seen_ms = 0;
	}
}

/*
 * Ends the engine process and its process group. With polite, the engine
 * gets "quit" and stop_grace_ms first. Always leaves no process and no fds.
 */
void usi_kill_engine(UsiEngine *e, bool polite)
{
	int status = 0;
	char how[96];
	bool reaped = false;

	if (e->pid <= 0) goto out;
	usi_cpu_note(e, true);
	if (polite && e->to_fd >= 0 && usi_write_all(e, "quit\n", 5) == 0)
		reaped = usi_reap_within(e->pid, e->cfg.stop_grace_ms, &status);
	else
		reaped = usi_reap_within(e->pid, 0, &status);
	/* The group too: a script engine's children must not outlive it. */
	kill(-e->pid, SIGKILL);
	if (!reaped) {
		kill(e->pid, SIGKILL);
		e->stats.kills++;
		while (waitpid(e->pid, &status, 0) < 0 && errno == EINTR) {
		}
		usi_describe_status(status, how, sizeof how);
		usi_log_msg(e, "engine killed (%s)", how);
	} else if (!polite) {
		usi_describe_status(status, how, sizeof how);
		usi_log_msg(e, "engine had ended (%s)", how);
	}
	e->pid = -1;
out:
	close_fd(&e->to_fd);
	close_fd(&e->from_fd);
	e->rstart = e->rend = 0;
	e->discarding = false;
	e->cur_multipv = 0;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return -1;
	return 0;
}

int usi_spawn(UsiEngine *e)
{
	int in[2] = {-1, -1}, outp[2] = {-1, -1}, st[2] = {-1, -1};
	int errnum = 0, rc = SEARCH_EIO;
	ssize_t n;
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0) {
		rc = usi_fail(e, SEARCH_EIO, "%s: pipe: %s", e->path, strerror(errno));
		goto err;
	}
	pid = fork();
	if (pid < 0) {
		rc = usi_fail(e, SEARCH_ESPAWN, "%s: fork: %s", e->path, strerror(errno));
		goto err;
	}
	if (pid == 0) {
		/* Child: only async-signal-safe calls until exec. */
		sigset_t none;
		setpgid(0, 0);
		if (dup2(in[0], 0) < 0 || dup2(outp[1], 1) < 0 || dup2(e->stderr_fd, 2) < 0)
			_exit(127);
		signal(SIGPIPE, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execvp(e->path, e->argv);
		errnum = errno;
		if (write(st[1], &errnum, sizeof errnum) < 0) {
			/* the parent then sees EOF and an exit status of 127 */
		}
		_exit(127);
	}
	setpgid(pid, pid); /* also in the parent, so kill(-pid) works at once */
	close_fd(&in[0]);
	close_fd(&outp[1]);
	close_fd(&st[1]);
	do n = read(st[0], &errnum, sizeof errnum);
	while (n < 0 && errno == EINTR);
	close_fd(&st[0]);
	e->pid = pid;
	e->to_fd = in[1];
	e->from_fd = outp[0];
	e->rstart = e->rend = 0;
	e->discarding = false;
	e->cur_multipv = 0;
	if (n == (ssize_t)sizeof errnum) {
		usi_kill_engine(e, false);
		return usi_fail(e, SEARCH_ESPAWN, "%s: cannot execute: %s", e->path,
		                strerror(errnum));
	}
	if (set_nonblock(e->to_fd) < 0 || set_nonblock(e->from_fd) < 0) {
		usi_kill_engine(e, false);
		return usi_fail(e, SEARCH_EIO, "%s: fcntl: %s", e->path, strerror(errno));
	}
	e->stats.starts++;
	usi_log_msg(e, "engine started");
	return 0;
err:
	close_fd(&in[0]);
	close_fd(&in[1]);
	close_fd(&outp[0]);
	close_fd(&outp[1]);
	close_fd(&st[0]);
	close_fd(&st[1]);
	return rc;
}

/* ---- line I/O ---- */

/*
 * Writes buf to the engine. SIGPIPE is blocked in this thread for the
 * duration, and one raised by our write is consumed, so a dead engine is an
 * error code, never a dead joseki.
 */
int usi_write_all(UsiEngine *e, const char *buf, size_t len)
{
	sigset_t pipe_set, old, pending;
	bool was_pending, broken = false;
	int rc = 0;
	int64_t deadline = clock_ms() + (e->cfg.stop_grace_ms > 1000 ? e->cfg.stop_grace_ms : 1000);

	if (e->to_fd < 0) return SEARCH_ECRASH;
	for (size_t i = 0, j; e->cfg.log_io && i < len; i = j + 1) {
		for (j = i; j < len && buf[j] != '\n'; j++) {
		}
		usi_log_msg(e, "> %.*s", (int)(j - i), buf + i);
	}
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);
	while (len > 0) {
		ssize_t n = write(e->to_fd, buf, len);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR) continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd p = {.fd = e->to_fd, .events = POLLOUT};
			int64_t left = deadline - clock_ms();
			if (left <= 0) {
				rc = usi_fail(e, SEARCH_ETIMEOUT,
				              "%s: engine does not read its input", e->path);
				break;
			}
			if (poll(&p, 1, (int)left) < 0 && errno != EINTR) {
				rc = usi_fail(e, SEARCH_EIO, "%s: poll: %s", e->path,
				              strerror(errno));
				break;
			}
			continue;
		}
		if (n < 0 && errno == EPIPE) {
			broken = true;
			rc = usi_fail(e, SEARCH_ECRASH, "%s: engine closed its input (exited?)",
			              e->path);
		} else {
			rc = usi_fail(e, SEARCH_EIO, "%s: write: %s", e->path, strerror(errno));
		}
		break;
	}
	if (broken && !was_pending) {
		struct timespec zero = {0, 0};
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/*
 * Reads one line (without its line break) before deadline. Returns LINE_OK
 * with *line and *len pointing into the read buffer (valid until the next call),
 * LINE_OVERLONG for a line that did not fit (skipped), LINE_TIMEOUT,
 * LINE_CANCEL when the caller's cancel flag is up (unless draining), or
 * SEARCH_ECRASH on end of file / SEARCH_EIO.
 */
int usi_read_line(UsiEngine *e, int64_t deadline, const char **line, size_t *len)
{
	for (;;) {
		char *start = e->rbuf + e->rstart;
		char *nl = memchr(start, '\n', e->rend - e->rstart);
		if (nl) {
			size_t n = (size_t)(nl - start);
			e->rstart += n + 1;
			if (e->discarding) {
				e->discarding = false;
				return LINE_OVERLONG;
			}
			if (n > 0 && start[n - 1] == '\r') n--;
			*line = start;
			*len = n;
			if (e->cfg.log_io)
				usi_log_msg(e, "< %.*s", (int)(n > 900 ? 900 : n), start);
			return LINE_OK;
		}
		if (e->rstart > 0) {
			memmove(e->rbuf, start, e->rend - e->rstart);
			e->rend -= e->rstart;
			e->rstart = 0;
		}
		if (e->rend == sizeof e->rbuf) {
			e->discarding = true;
			e->rend = 0;
		}
		int64_t left = deadline - clock_ms();
		if (left <= 0) return LINE_TIMEOUT;
		if (e->cfg.cancel && *e->cfg.cancel && !e->draining) return LINE_CANCEL;
		/* With a cancel flag, wake up often enough to notice it. */
		int64_t slice = e->cfg.cancel ? 50 : 1000000;
		struct pollfd p = {.fd = e->from_fd, .events = POLLIN};
		int pr = poll(&p, 1, (int)(left < slice ? left : slice));
		if (pr < 0) {
			if (errno == EINTR) continue;
			return usi_fail(e, SEARCH_EIO, "%s: poll: %s", e->path, strerror(errno));
		}
		if (pr == 0) continue; /* the deadline check above decides */
		ssize_t n = read(e->from_fd, e->rbuf + e->rend, sizeof e->rbuf - e->rend);
		if (n > 0) {
			e->rend += (size_t)n;
			continue;
		}
		if (n == 0) return SEARCH_ECRASH;
		if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
		return usi_fail(e, SEARCH_EIO, "%s: read: %s", e->path, strerror(errno));
	}
}
