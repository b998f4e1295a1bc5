/*
 * shogi/clock.h — the one clock of the tree: monotonic wall time (progress
 * lines, deadlines, benchmarks) and the process's CPU time (benchmarks).
 */
#ifndef SHOGI_CLOCK_H
#define SHOGI_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds on the monotonic clock (an arbitrary origin). */
static inline int64_t clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Milliseconds on the monotonic clock, whole (deadlines) or exact (timings). */
static inline int64_t clock_ms(void)
{
	return clock_ns() / 1000000;
}

static inline double clock_ms_f(void)
{
	return (double)clock_ns() / 1e6;
}

static inline double clock_s(void)
{
	return (double)clock_ns() / 1e9;
}

/* Milliseconds since the epoch (CLOCK_REALTIME), whole: times a user or
 * another process reads (a status's "started", a worker's last_seen). */
static inline int64_t clock_unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The CLOCK_REALTIME instant ms milliseconds from now, for the absolute
 * deadline pthread_cond_timedwait wants. */
static inline struct timespec clock_realtime_in(int64_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* Milliseconds of CPU time the calling thread used. */
static inline double clock_thread_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Milliseconds of CPU time this process used. */
static inline double clock_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

#endif
