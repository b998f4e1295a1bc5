/*
 * ingest/fetch.h — floodgate's daily archives, downloaded into a local cache.
 *
 * A date range becomes one request per day for <base>/daily/wdoorYYYYMMDD.7z,
 * made one after another over a single libcurl handle (one connection, kept
 * alive: floodgate is a volunteer-run server). The cache directory holds
 *
 *   daily/wdoorYYYYMMDD.7z         a complete archive (only ever renamed into place)
 *   daily/wdoorYYYYMMDD.7z.meta    its validators: "url", "etag", "last-modified" lines
 *   daily/wdoorYYYYMMDD.7z.part    an interrupted download
 *   daily/wdoorYYYYMMDD.7z.part.meta  the validators of the response being downloaded
 *   .lock                          flock()ed for the whole run
 *
 * A cached archive is revalidated with If-None-Match / If-Modified-Since (a 304
 * keeps it); a leftover .part is continued with a Range request guarded by
 * If-Range (a 200 instead of a 206 restarts it). A 404 means floodgate has no
 * archive for that day. 5xx, 408, 429 and connection errors are retried with
 * exponential back-off. Every archive, downloaded or cached, is read through
 * libarchive to the end before it is handed to the ingest pipeline; one that
 * cannot be read is deleted from the cache (a rerun downloads it again), so a
 * truncated archive never gets half-ingested.
 */
#ifndef INGEST_FETCH_H
#define INGEST_FETCH_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef JOSEKI_VERSION
#define JOSEKI_VERSION "0.1"
#endif

#define FETCH_DEFAULT_BASE_URL "http://wdoor.c.u-tokyo.ac.jp/shogi/x/"
#define FETCH_USER_AGENT "joseki/" JOSEKI_VERSION " (+opening-book builder)"
/* A range longer than this is refused (a typo in a year, not a real request). */
#define FETCH_MAX_DAYS 20000

/* Error codes (negative). */
enum {
	FETCH_OK = 0,
	FETCH_EINVAL = ERR_FETCH - 0, /* bad option or date */
	FETCH_ENOMEM = ERR_FETCH - 1,
	FETCH_ECACHE = ERR_FETCH - 2, /* the cache directory cannot be created, locked or written */
	FETCH_ECURL = ERR_FETCH - 3,  /* libcurl could not be set up */
	FETCH_EBUSY = ERR_FETCH - 4,  /* another fetch holds the cache's lock */
};
const char *fetch_strerror(int code);

/*
 * Progress of fetch_days, for FetchOptions.progress. Phases: "day" as each
 * day begins, "download" while its archive arrives (about five times a
 * second), and one "done" at the end.
 */
typedef struct {
	size_t day, days;     /* "day", "download": the day (1-based) of days */
	const char *date;     /* its "YYYYMMDD" */
	uint64_t bytes;       /* "download": in the .part so far (a resumed part included) */
	uint64_t total_bytes; /* "download": the whole archive's size, 0 when not known */
} FetchProgress;
typedef void (*FetchProgressFn)(void *ctx, const char *phase, const FetchProgress *p);

typedef struct {
	const char *base_url;  /* NULL: FETCH_DEFAULT_BASE_URL; a missing trailing '/' is added */
	const char *cache_dir; /* required; created when missing */
	int max_attempts;      /* per day, the first one included (0: 5) */
	long backoff_ms; /* wait before the first retry, doubled each time (0: 1000; < 0: none) */
	long connect_timeout_s;   /* 0: 30 */
	long low_speed_limit;     /* bytes/s below which ... (0: 512) */
	long low_speed_time_s;    /* ... for this long a transfer is abandoned (0: 60) */
	FetchProgressFn progress; /* NULL: quiet */
	void *progress_ctx;
} FetchOptions;

void fetch_options_init(FetchOptions *opt);

typedef enum {
	FETCH_DAY_DOWNLOADED, /* fetched (whole or resumed) in this run */
	FETCH_DAY_CACHED,     /* the cached copy is current (304) */
	FETCH_DAY_MISSING,    /* 404: no games that day */
	FETCH_DAY_FAILED,     /* see message; nothing from that day is ingested */
} FetchDayStatus;

typedef struct {
	char date[9]; /* "YYYYMMDD" */
	FetchDayStatus status;
	char *path; /* verified archive in the cache (DOWNLOADED, CACHED), else NULL */
	char *url;
	char *message;    /* FAILED: what went wrong and what was done about it */
	uint64_t entries; /* .csa entries in the archive */
} FetchDay;

typedef struct {
	FetchDay *days;
	size_t ndays;
	size_t downloaded, cached, missing, failed;
	uint64_t bytes;    /* body bytes received in this run */
	uint64_t requests; /* HTTP requests made */
} FetchResult;

/* Frees the days (not the struct). Accepts NULL. */
void fetch_result_free(FetchResult *res);

/*
 * "2026-06-01", "2026/06/01" or "20260601" → "20260601". Returns FETCH_EINVAL
 * unless it is a real calendar date (years 1900-9999).
 */
JOSEKI_MUST_USE int fetch_date_parse(char out[9], const char *s);

/* Days from..to inclusive (both valid "YYYYMMDD"); <= 0 when to is before from. */
long fetch_date_span(const char from[9], const char to[9]);

/* Today's date (UTC) as "YYYYMMDD". */
void fetch_date_today(char out[9]);

/*
 * Brings the archives of every day from..to (inclusive, "YYYYMMDD") into the
 * cache. Problems with single days are not failures: they are counted and
 * described in res->days. Returns 0, or a negative code when nothing could be
 * tried at all (bad range, cache unusable, libcurl unusable); res is then
 * still valid to free. Not thread-safe with respect to curl_global_init: call
 * it from a program's main thread (or after curl_global_init).
 */
JOSEKI_MUST_USE int fetch_days(FetchResult *res, const char *from, const char *to,
                               const FetchOptions *opt);

/* Size of fetch_verify_archive's message buffer. */
#define FETCH_ERRLEN 512

/*
 * Reads an archive to its end through libarchive (every entry's data, so
 * truncation and CRC errors surface). Returns the number of .csa entries
 * (>= 0), or -1 with a message in err (FETCH_ERRLEN bytes).
 */
long fetch_verify_archive(const char *path, char *err);

#endif
