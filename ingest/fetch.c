/* ingest/fetch.c — floodgate's daily archives into a local cache (see fetch.h). */
#include "ingest/fetch.h"
#include "ingest/walk.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"

#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BACKOFF_CAP_MS 60000L

const char *fetch_strerror(int code)
{
	switch (code) {
	case FETCH_OK:
		return "success";
	case FETCH_EINVAL:
		return "bad option or date";
	case FETCH_ENOMEM:
		return "out of memory";
	case FETCH_ECACHE:
		return "the cache directory cannot be created or written";
	case FETCH_ECURL:
		return "libcurl could not be set up";
	case FETCH_EBUSY:
		return "the cache is in use by another joseki fetch";
	default:
		return "unknown fetch error";
	}
}

void fetch_options_init(FetchOptions *opt)
{
	memset(opt, 0, sizeof *opt);
}

void fetch_result_free(FetchResult *res)
{
	if (!res) return;
	for (size_t i = 0; i < res->ndays; i++) {
		free(res->days[i].path);
		free(res->days[i].url);
		free(res->days[i].message);
	}
	free(res->days);
	res->days = NULL;
	res->ndays = 0;
}

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

/* Copies with truncation (header values and sidecar lines are bounded). */
static void copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);
	if (n >= cap) n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

/* ---- dates ---- */

static int days_in_month(int y, int m)
{
	static const int D[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : D[m - 1];
}

int fetch_date_parse(char out[9], const char *s)
{
	char d[9];
	int n = 0;
	if (!s) return FETCH_EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p >= '0' && *p <= '9') {
			if (n == 8) return FETCH_EINVAL;
			d[n++] = *p;
		} else if (*p != '-' && *p != '/') {
			return FETCH_EINVAL;
		}
	}
	if (n != 8) return FETCH_EINVAL;
	d[8] = 0;
	int y = (d[0] - '0') * 1000 + (d[1] - '0') * 100 + (d[2] - '0') * 10 + (d[3] - '0');
	int m = (d[4] - '0') * 10 + (d[5] - '0');
	int dd = (d[6] - '0') * 10 + (d[7] - '0');
	if (y < 1900 || m < 1 || m > 12 || dd < 1 || dd > days_in_month(y, m)) return FETCH_EINVAL;
	memcpy(out, d, 9);
	return FETCH_OK;
}

static time_t date_time(const char d[9])
{
	struct tm tm = {0};
	sscanf(d, "%4d%2d%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	tm.tm_hour = 12; /* noon: stepping by 86400 never lands on a day edge */
	return timegm(&tm);
}

static void date_format(char out[9], time_t t)
{
	struct tm tm;
	gmtime_r(&t, &tm);
	unsigned y = (unsigned)(tm.tm_year + 1900) % 10000u, m = (unsigned)(tm.tm_mon + 1) % 100u,
	         d = (unsigned)tm.tm_mday % 100u;
	snprintf(out, 9, "%04u%02u%02u", y, m, d);
}

long fetch_date_span(const char from[9], const char to[9])
{
	return (long)((date_time(to) - date_time(from)) / 86400) + 1;
}

void fetch_date_today(char out[9])
{
	date_format(out, time(NULL));
}

/* ---- cache files ---- */

static int mkdirs(const char *path)
{
	char *p = strdup(path);
	if (!p) return -1;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/') continue;
		*s = 0;
		if (mkdir(p, 0777) < 0 && errno != EEXIST) {
			free(p);
			return -1;
		}
		*s = '/';
	}
	int rc = mkdir(p, 0777) < 0 && errno != EEXIST ? -1 : 0;
	free(p);
	return rc;
}

/* The validators of one response, as kept in a .meta sidecar. */
typedef struct {
	char url[2048];
	char etag[512];
	char last_modified[128];
} Validators;

static void meta_read(Validators *v, const char *path)
{
	memset(v, 0, sizeof *v);
	FILE *f = fopen(path, "r");
	if (!f) return;
	char line[2600];
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\r\n")] = 0;
		if (!strncmp(line, "url ", 4))
			copy_str(v->url, sizeof v->url, line + 4);
		else if (!strncmp(line, "etag ", 5))
			copy_str(v->etag, sizeof v->etag, line + 5);
		else if (!strncmp(line, "last-modified ", 14))
			copy_str(v->last_modified, sizeof v->last_modified, line + 14);
	}
	fclose(f);
}

/* Written to a temporary name and renamed, so a sidecar is whole or absent. */
static int meta_write(const char *path, const Validators *v)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) return -1;
	FILE *f = fopen(tmp, "w");
	if (!f) return -1;
	fprintf(f, "url %s\netag %s\nlast-modified %s\n", v->url, v->etag, v->last_modified);
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

static bool file_size(const char *path, uint64_t *size)
{
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) return false;
	*size = (uint64_t)st.st_size;
	return true;
}

/* ---- archive check ---- */

long fetch_verify_archive(const char *path, char *err)
{
	struct archive *a = archive_read_new();
	if (!a) return errmsg_set(err, FETCH_ERRLEN, -1, "out of memory");
	/* Floodgate's daily archives are 7z; anything else (an HTML error page
	 * served with 200, say) is not one. */
	archive_read_support_format_7zip(a);
	long n = -1;
	if (archive_read_open_filename(a, path, 1 << 16) != ARCHIVE_OK) {
		errmsg_set(err, FETCH_ERRLEN, -1, "not a readable 7z archive: %s",
		           walk_archive_why(a));
		goto out;
	}
	long count = 0;
	for (;;) {
		struct archive_entry *e;
		int r = archive_read_next_header(a, &e);
		if (r == ARCHIVE_EOF) break;
		if (r < ARCHIVE_WARN) {
			errmsg_set(err, FETCH_ERRLEN, -1,
			           "archive unreadable after %ld entries: %s", count,
			           walk_archive_why(a));
			goto out;
		}
		const char *name = archive_entry_pathname(e);
		size_t len = name ? strlen(name) : 0;
		bool csa = archive_entry_filetype(e) == AE_IFREG && len > 4 &&
		           !strcmp(name + len - 4, ".csa");
		const void *buf;
		size_t sz;
		la_int64_t off;
		while ((r = archive_read_data_block(a, &buf, &sz, &off)) == ARCHIVE_OK) {
		}
		if (r != ARCHIVE_EOF) {
			char q[200];
			errmsg_set(err, FETCH_ERRLEN, -1, "entry '%s' unreadable: %s",
			           name ? errmsg_escape(q, sizeof q, name, len) : "?",
			           walk_archive_why(a));
			goto out;
		}
		if (csa) count++;
	}
	n = count;
out:
	archive_read_free(a);
	return n;
}

/* ---- one transfer ---- */

typedef struct {
	const char *part_path, *pmeta_path, *url;
	FILE *part;
	uint64_t offset;    /* bytes already in .part (the Range start), 0 for none */
	long status;        /* of the response being received */
	long long cr_start; /* Content-Range start, -1 when absent */
	long retry_after;   /* Retry-After in seconds, -1 when absent */
	bool body_started, saving, bad_range;
	int write_errno;
	uint64_t received;
	Validators got;
	/* progress */
	const FetchOptions *opt;
	FetchProgress prog;
	int64_t last_shown; /* clock_ms() of the last progress call */
} Xfer;

static void trim(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\r' || s[n - 1] == '\n' || s[n - 1] == ' ')) s[--n] = 0;
}

static size_t on_header(char *p, size_t sz, size_t n, void *u)
{
	Xfer *x = u;
	size_t len = sz * n;
	char line[2048];
	snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
	trim(line);
	if (!strncmp(line, "HTTP/", 5)) {
		/* each response (a redirect, then the real one) starts afresh */
		const char *sp = strchr(line, ' ');
		x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		x->cr_start = -1;
		x->retry_after = -1;
		x->body_started = false;
		memset(x->got.etag, 0, sizeof x->got.etag);
		memset(x->got.last_modified, 0, sizeof x->got.last_modified);
		return len;
	}
	char *colon = strchr(line, ':');
	if (!colon) return len;
	*colon = 0;
	const char *v = colon + 1;
	while (*v == ' ' || *v == '\t') v++;
	if (!strcasecmp(line, "ETag"))
		copy_str(x->got.etag, sizeof x->got.etag, v);
	else if (!strcasecmp(line, "Last-Modified"))
		copy_str(x->got.last_modified, sizeof x->got.last_modified, v);
	else if (!strcasecmp(line, "Retry-After")) {
		char *end;
		long secs = strtol(v, &end, 10); /* the HTTP-date form is left to the back-off */
		if (end != v && !*end && secs >= 0) x->retry_after = secs;
	} else if (!strcasecmp(line, "Content-Range")) {
		long long a;
		if (sscanf(v, "bytes %lld-", &a) == 1) x->cr_start = a;
	}
	return len;
}

static size_t on_body(char *p, size_t sz, size_t n, void *u)
{
	Xfer *x = u;
	size_t len = sz * n;
	if (!x->body_started) {
		x->body_started = true;
		if (x->status == 200 || x->status == 206) {
			if (x->status == 206 && x->cr_start != (long long)x->offset) {
				x->bad_range = true; /* not the bytes we asked for: start over */
				return 0;
			}
			/* a 200 to a Range request is the whole file again: restart */
			x->part = fopen(x->part_path, x->status == 206 ? "ab" : "wb");
			if (!x->part) {
				x->write_errno = errno;
				return 0;
			}
			if (x->status == 200) {
				copy_str(x->got.url, sizeof x->got.url, x->url);
				meta_write(x->pmeta_path, &x->got);
			}
			x->saving = true;
		}
	}
	if (!x->saving) return len; /* an error page: not kept */
	if (fwrite(p, 1, len, x->part) != len) {
		x->write_errno = errno ? errno : EIO;
		return 0;
	}
	x->received += len;
	return len;
}

static int on_progress(void *u, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
	(void)ultotal;
	(void)ulnow;
	Xfer *x = u;
	int64_t now = clock_ms();
	if (now - x->last_shown < 200) return 0;
	x->last_shown = now;
	x->prog.bytes = x->offset + (uint64_t)(dlnow > 0 ? dlnow : 0);
	x->prog.total_bytes = dltotal > 0 ? x->offset + (uint64_t)dltotal : 0;
	x->opt->progress(x->opt->progress_ctx, "download", &x->prog);
	return 0;
}

/* Errors worth another attempt: the network or the server, not the request. */
static bool curl_transient(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return true;
	default:
		return false;
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
	}
}

static void set_message(FetchDay *day, char *msg)
{
	free(day->message);
	day->message = msg;
}

/*
 * One day: request (conditional or ranged), retry, classify. Leaves day->status
 * and, for DOWNLOADED/CACHED, day->path (not yet verified).
 */
static int fetch_one(FetchDay *day, CURL *h, const char *final, const FetchOptions *opt,
                     FetchResult *res, const FetchProgress *prog)
{
	char part[4096], pmeta[4096], meta[4096];
	snprintf(part, sizeof part, "%s.part", final);
	snprintf(pmeta, sizeof pmeta, "%s.part.meta", final);
	snprintf(meta, sizeof meta, "%s.meta", final);
	int attempts = opt->max_attempts > 0 ? opt->max_attempts : 5;
	long backoff = opt->backoff_ms == 0 ? 1000 : opt->backoff_ms;
	char *last_error = NULL;
	for (int attempt = 1; attempt <= attempts; attempt++) {
		Xfer x = {.part_path = part,
		          .pmeta_path = pmeta,
		          .url = day->url,
		          .cr_start = -1,
		          .retry_after = -1,
		          .opt = opt,
		          .prog = *prog};
		struct curl_slist *hdrs = NULL;
		char hb[700], range[32];
		uint64_t psize = 0, fsize;
		Validators v;
		bool resuming = file_size(part, &psize) && psize > 0;
		if (resuming) {
			meta_read(&v, pmeta);
			if (strcmp(v.url, day->url)) {
				/* begun from another URL (--base-url changed): not ours to continue
				 */
				unlink(part);
				unlink(pmeta);
				resuming = false;
			}
		}
		curl_easy_setopt(h, CURLOPT_RANGE, NULL);
		if (resuming) {
			/* If-Range: should the archive have changed since, the server
			 * sends it whole (200) and the .part is restarted */
			x.offset = psize;
			snprintf(range, sizeof range, "%llu-", (unsigned long long)psize);
			curl_easy_setopt(h, CURLOPT_RANGE, range);
			if (v.last_modified[0] || (v.etag[0] && strncmp(v.etag, "W/", 2))) {
				/* If-Range takes a strong validator only */
				bool strong = v.etag[0] && strncmp(v.etag, "W/", 2);
				snprintf(hb, sizeof hb, "If-Range: %s",
				         strong ? v.etag : v.last_modified);
				hdrs = curl_slist_append(hdrs, hb);
			}
		} else if (file_size(final, &fsize)) {
			meta_read(&v, meta);
			if (!strcmp(v.url, day->url)) {
				if (v.etag[0]) {
					snprintf(hb, sizeof hb, "If-None-Match: %s", v.etag);
					hdrs = curl_slist_append(hdrs, hb);
				}
				if (v.last_modified[0]) {
					snprintf(hb, sizeof hb, "If-Modified-Since: %s",
					         v.last_modified);
					hdrs = curl_slist_append(hdrs, hb);
				}
			}
		}
		char cerr[CURL_ERROR_SIZE] = "";
		curl_easy_setopt(h, CURLOPT_URL, day->url);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
		curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, opt->progress ? 0L : 1L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, &x);
		CURLcode c = curl_easy_perform(h);
		res->requests++;
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
		curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
		curl_slist_free_all(hdrs);
		res->bytes += x.received;
		bool write_ok = true;
		if (x.part) {
			/* durable before it can be renamed into place */
			write_ok = fflush(x.part) == 0 && fsync(fileno(x.part)) == 0;
			if (fclose(x.part) != 0) write_ok = false;
			if (!write_ok && !x.write_errno) x.write_errno = errno ? errno : EIO;
		}
		free(last_error);
		last_error = NULL;
		bool retry_now = false; /* without waiting: our own state was the problem */
		if (x.bad_range) {
			unlink(part);
			unlink(pmeta);
			last_error =
			    xprintf("the server answered a Range request with other bytes");
			retry_now = true;
		} else if (x.write_errno) {
			set_message(day,
			            xprintf("cannot write %s: %s", part, strerror(x.write_errno)));
			day->status = FETCH_DAY_FAILED;
			return 0;
		} else if (c != CURLE_OK) {
			last_error = xprintf("%s", cerr[0] ? cerr : curl_easy_strerror(c));
			if (!curl_transient(c)) break;
		} else if (x.status == 200 || x.status == 206) {
			if (!x.part) { /* an empty body: still a (useless) file */
				FILE *f = fopen(part, "wb");
				if (f) fclose(f);
				if (x.status == 200) {
					copy_str(x.got.url, sizeof x.got.url, day->url);
					meta_write(pmeta, &x.got);
				}
			}
			if (rename(part, final) < 0) {
				set_message(day,
				            xprintf("cannot rename %s: %s", part, strerror(errno)));
				day->status = FETCH_DAY_FAILED;
				return 0;
			}
			if (rename(pmeta, meta) < 0)
				unlink(meta); /* no validators: no conditional request */
			day->status = FETCH_DAY_DOWNLOADED;
			day->path = strdup(final);
			return day->path ? 0 : FETCH_ENOMEM;
		} else if (x.status == 304) {
			day->status = FETCH_DAY_CACHED;
			day->path = strdup(final);
			return day->path ? 0 : FETCH_ENOMEM;
		} else if (x.status == 404 || x.status == 410) {
			day->status = FETCH_DAY_MISSING;
			return 0;
		} else if (x.status == 416 && resuming) {
			/* the .part is not a prefix of what the server has (any more) */
			unlink(part);
			unlink(pmeta);
			last_error = xprintf("HTTP 416 for a resumed download");
			retry_now = true;
		} else if (x.status >= 500 || x.status == 408 || x.status == 429) {
			last_error = xprintf("HTTP %ld", x.status);
		} else {
			last_error = xprintf("HTTP %ld", x.status);
			break;
		}
		/* a server's Retry-After wins over a shorter back-off of ours */
		if (attempt < attempts && !retry_now && (backoff > 0 || x.retry_after > 0)) {
			long ms = backoff > 0 ? backoff : 0;
			for (int k = 1; k < attempt && ms < BACKOFF_CAP_MS; k++) ms *= 2;
			if (x.retry_after > 0 && x.retry_after * 1000 > ms)
				ms = x.retry_after < BACKOFF_CAP_MS / 1000 ? x.retry_after * 1000
				                                           : BACKOFF_CAP_MS;
			sleep_ms(ms < BACKOFF_CAP_MS ? ms : BACKOFF_CAP_MS);
		}
		if (attempt == attempts) {
			char *m = xprintf("%s (after %d attempts)",
			                  last_error ? last_error : "error", attempts);
			free(last_error);
			last_error = m;
		}
	}
	/* Could not talk to the server: a cached complete copy is still good. */
	uint64_t psize = 0, fsize;
	if (file_size(final, &fsize) && !(file_size(part, &psize) && psize > 0)) {
		day->status = FETCH_DAY_CACHED;
		day->path = strdup(final);
		set_message(day, xprintf("not revalidated (%s); using the cached copy",
		                         last_error ? last_error : "error"));
		free(last_error);
		return day->path ? 0 : FETCH_ENOMEM;
	}
	day->status = FETCH_DAY_FAILED;
	if (file_size(part, &psize) && psize > 0)
		set_message(day, xprintf("%s; %llu bytes kept in %s, a rerun continues from there",
		                         last_error ? last_error : "error",
		                         (unsigned long long)psize, part));
	else
		set_message(day, xprintf("%s", last_error ? last_error : "error"));
	free(last_error);
	return 0;
}

/* ---- the range ---- */

int fetch_days(FetchResult *res, const char *from, const char *to, const FetchOptions *opt)
{
	memset(res, 0, sizeof *res);
	char a[9], b[9];
	if (fetch_date_parse(a, from) < 0 || fetch_date_parse(b, to) < 0 || !opt->cache_dir)
		return FETCH_EINVAL;
	time_t t0 = date_time(a), t1 = date_time(b);
	if (t1 < t0) return FETCH_EINVAL;
	size_t n = (size_t)((t1 - t0) / 86400) + 1;
	if (n > FETCH_MAX_DAYS) return FETCH_EINVAL;
	res->days = calloc(n, sizeof *res->days);
	if (!res->days) return FETCH_ENOMEM;
	res->ndays = n;

	const char *base = opt->base_url ? opt->base_url : FETCH_DEFAULT_BASE_URL;
	const char *slash = base[0] && base[strlen(base) - 1] == '/' ? "" : "/";
	char *daily = xprintf("%s/daily", opt->cache_dir);
	char *lockp = xprintf("%s/.lock", opt->cache_dir);
	CURL *h = NULL;
	int lockfd = -1, rc = FETCH_OK;
	if (!daily || !lockp) {
		rc = FETCH_ENOMEM;
		goto out;
	}
	if (mkdirs(daily) < 0) {
		rc = FETCH_ECACHE;
		goto out;
	}
	/* two fetches sharing a cache would write the same .part files */
	lockfd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (lockfd < 0) {
		rc = FETCH_ECACHE;
		goto out;
	}
	if (flock(lockfd, LOCK_EX | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ? FETCH_EBUSY : FETCH_ECACHE;
		goto out;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || !(h = curl_easy_init())) {
		rc = FETCH_ECURL;
		goto out;
	}
	curl_easy_setopt(h, CURLOPT_USERAGENT, FETCH_USER_AGENT);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT,
	                 opt->connect_timeout_s > 0 ? opt->connect_timeout_s : 30L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT,
	                 opt->low_speed_limit > 0 ? opt->low_speed_limit : 512L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
	                 opt->low_speed_time_s > 0 ? opt->low_speed_time_s : 60L);

	for (size_t i = 0; i < n; i++) {
		FetchDay *day = &res->days[i];
		date_format(day->date, t0 + (time_t)i * 86400);
		day->url = xprintf("%s%sdaily/wdoor%s.7z", base, slash, day->date);
		char *final = xprintf("%s/wdoor%s.7z", daily, day->date);
		FetchProgress prog = {.day = i + 1, .days = n, .date = day->date};
		if (!day->url || !final) {
			free(final);
			rc = FETCH_ENOMEM;
			goto out;
		}
		if (opt->progress) opt->progress(opt->progress_ctx, "day", &prog);
		rc = fetch_one(day, h, final, opt, res, &prog);
		if (rc < 0) {
			free(final);
			goto out;
		}
		if (day->path) {
			char err[FETCH_ERRLEN];
			long entries = fetch_verify_archive(day->path, err);
			if (entries < 0) {
				/* gone from the cache, so the next run fetches it afresh */
				char meta[4200];
				snprintf(meta, sizeof meta, "%s.meta", final);
				unlink(final);
				unlink(meta);
				set_message(day, xprintf("%s (%s); removed from the cache, a rerun "
				                         "downloads it again",
				                         err,
				                         day->status == FETCH_DAY_DOWNLOADED
				                             ? "as downloaded"
				                             : "cached copy"));
				free(day->path);
				day->path = NULL;
				day->status = FETCH_DAY_FAILED;
			} else {
				day->entries = (uint64_t)entries;
			}
		}
		free(final);
		switch (day->status) {
		case FETCH_DAY_DOWNLOADED:
			res->downloaded++;
			break;
		case FETCH_DAY_CACHED:
			res->cached++;
			break;
		case FETCH_DAY_MISSING:
			res->missing++;
			break;
		case FETCH_DAY_FAILED:
			res->failed++;
			break;
		}
	}
	rc = FETCH_OK;
out:
	if (opt->progress) opt->progress(opt->progress_ctx, "done", &(FetchProgress){.days = n});
	if (h) curl_easy_cleanup(h);
	if (lockfd >= 0) close(lockfd);
	free(daily);
	free(lockp);
	return rc;
}
