/*
 * joseki fetch BOOK --from DATE [--to DATE] [--base-url URL] [--cache DIR]
 *              [filters] [--jobs N] [--json] [--quiet]
 *
 * Floodgate's daily archives for a date range into the cache (ingest/fetch.h),
 * then every archive that was read through cleanly into the book
 * (ingest/ingest.h). Exit 0 when every day was fetched or is known to have no
 * archive (404); 1 when a day failed (the others are still ingested) or the
 * book could not be written; 2 on bad usage.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/bookdb.h"
#include "ingest/fetch.h"
#include "ingest/ingest.h"
#include "tools/cli_ingest.h"
#include "tools/commands.h"

/* --from and --to (CliParseFn): the day as typed and as YYYYMMDD. */
typedef struct {
	const char *text;
	char ymd[9];
} Day;

static int parse_day(void *dst, char *v, char *msg)
{
	(void)msg;
	Day *d = dst;
	d->text = v;
	return fetch_date_parse(d->ymd, v);
}

/* --base-url (CliParseFn): http:// or https://. */
static int parse_url(void *dst, char *v, char *msg)
{
	(void)msg;
	if (strncmp(v, "http://", 7) && strncmp(v, "https://", 8)) return -1;
	*(const char **)dst = v;
	return 0;
}

static const char *day_status_name(FetchDayStatus s)
{
	switch (s) {
	case FETCH_DAY_DOWNLOADED:
		return "downloaded";
	case FETCH_DAY_CACHED:
		return "cached";
	case FETCH_DAY_MISSING:
		return "missing";
	case FETCH_DAY_FAILED:
		return "failed";
	}
	return "?";
}

/* The ingest fields of docs/ingest.md plus the per-range counts; fetch errors
 * (one per failed day, input = its URL) come first in "errors". */
static int report_json(const FetchResult *fr, const IngestStats *st)
{
	json_t *o = json_object();
	const struct {
		const char *k;
		uint64_t v;
	} F[] = {
	    {"days", fr->ndays},
	    {"downloaded", fr->downloaded},
	    {"cached", fr->cached},
	    {"missing", fr->missing},
	    {"failed", fr->failed},
	    {"bytes_downloaded", fr->bytes},
	    {"requests", fr->requests},
	    {"games_read", st->games_read},
	    {"games_ingested", st->games_ingested},
	    {"games_skipped", st->games_skipped},
	    {"games_rejected", st->games_rejected},
	    {"duplicates", st->duplicates},
	    {"games_completed", st->games_completed},
	    {"games_unended", st->games_unended},
	    {"positions_added", st->positions_added},
	    {"moves_added", st->moves_added},
	    {"evals_added", st->evals_added},
	    {"errors_total", st->errors_total + fr->failed},
	    {"time_ms", (uint64_t)(st->seconds * 1000)},
	};
	for (size_t i = 0; i < sizeof F / sizeof F[0]; i++)
		json_object_set_new(o, F[i].k, json_integer((json_int_t)F[i].v));
	json_t *days = json_array(), *errs = json_array();
	for (size_t i = 0; i < fr->ndays; i++) {
		const FetchDay *d = &fr->days[i];
		json_t *jd = json_pack("{s:s, s:s, s:I}", "date", d->date, "status",
		                       day_status_name(d->status), "games", (json_int_t)d->entries);
		if (d->message) json_object_set_new(jd, "message", json_string(d->message));
		json_array_append_new(days, jd);
		if (d->status == FETCH_DAY_FAILED)
			json_array_append_new(errs, json_pack("{s:s, s:i, s:s}", "input", d->url,
			                                      "line", 0, "message",
			                                      d->message ? d->message : "failed"));
	}
	for (size_t i = 0; i < st->nerrors; i++) {
		/* messages may quote record bytes that are not UTF-8 */
		json_t *m = json_string(st->errors[i].message);
		if (!m) m = json_string("(message not valid UTF-8)");
		json_array_append_new(errs,
		                      json_pack("{s:s, s:i, s:o}", "input", st->errors[i].input,
		                                "line", st->errors[i].line, "message", m));
	}
	json_object_set_new(o, "day_list", days);
	json_object_set_new(o, "errors", errs);
	return joseki_print_json(o, 0);
}

/* A FetchProgressFn: the day and what has arrived of it, one overwritten
 * line on stderr. */
static void on_progress(void *ctx, const char *phase, const FetchProgress *p)
{
	(void)ctx;
	if (!strcmp(phase, "done")) {
		fputs("\r\033[K", stderr);
		return;
	}
	fprintf(stderr, "\r\033[Kfetch: [%zu/%zu] %.4s-%.2s-%.2s", p->day, p->days, p->date,
	        p->date + 4, p->date + 6);
	if (!strcmp(phase, "download") && p->total_bytes)
		fprintf(stderr, " %lld / %lld KiB", (long long)p->bytes / 1024,
		        (long long)p->total_bytes / 1024);
	else if (!strcmp(phase, "download"))
		fprintf(stderr, " %lld KiB", (long long)p->bytes / 1024);
}

static char *default_cache(void)
{
	const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char *p = NULL;
	if (x && x[0] == '/') {
		if (asprintf(&p, "%s/joseki/floodgate", x) < 0) p = NULL;
	} else if (home && home[0]) {
		if (asprintf(&p, "%s/.cache/joseki/floodgate", home) < 0) p = NULL;
	}
	return p;
}

int cmd_fetch(int argc, char **argv)
{
	CliIngest ci;
	cli_ingest_init(&ci);
	IngestOptions *opt = &ci.opt;
	FetchOptions fo;
	fetch_options_init(&fo);
	bool json = false, quiet = false;
	const char *book = NULL, *cache = NULL;
	Day from = {0}, to = {0};
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book (made if there is none)"),
	    CLI_FN("--from", &from, parse_day, "DATE", "a date YYYY-MM-DD", "the first day",
	           .required = true),
	    CLI_FN("--to", &to, parse_day, "DATE", "a date YYYY-MM-DD",
	           "the last day (default: today, UTC)"),
	    CLI_FN("--base-url", &fo.base_url, parse_url, "URL", "an http:// or https:// URL",
	           "where the daily archives are (default floodgate's)"),
	    CLI_STR("--cache", &cache, "DIR",
	            "the archives' cache (default $XDG_CACHE_HOME/joseki/floodgate or "
	            "~/.cache/joseki/floodgate)"),
	    CLI_GROUP(ci.table),
	    CLI_JSON(&json),
	    CLI_QUIET(&quiet),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"fetch", opts, "docs/fetch.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	if (!to.text) fetch_date_today(to.ymd);
	if (strcmp(to.ymd, from.ymd) < 0)
		return cli_usage_error(&cmd, "--to %s is before --from %s",
		                       to.text ? to.text : "(today)", from.text);
	if (fetch_date_span(from.ymd, to.ymd) > FETCH_MAX_DAYS)
		return cli_usage_error(&cmd, "the range %s..%s is longer than %d days", from.ymd,
		                       to.ymd, FETCH_MAX_DAYS);
	const char *env = getenv("JOSEKI_FETCH_BACKOFF_MS");
	if (env && *env) {
		char *end;
		long ms = strtol(env, &end, 10);
		fo.backoff_ms = *end || ms < 0 ? 1000 : ms == 0 ? -1 : ms;
	}
	char *cache_owned = cache ? NULL : default_cache();
	if (!cache) cache = cache_owned;
	if (!cache)
		return cli_usage_error(
		    &cmd, "no cache directory (neither $XDG_CACHE_HOME nor $HOME is set): give "
		          "--cache DIR");
	if (cli_progress_wanted(quiet)) {
		opt->progress = cli_ingest_progress;
		fo.progress = on_progress;
	}
	fo.cache_dir = cache;

	/* the book first: no point downloading into a book that cannot be opened */
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	int rc = bookdb_open(&db, book, NULL, err);
	if (rc < 0) {
		joseki_error("fetch: %s", err);
		free(cache_owned);
		return 1;
	}
	FetchResult fr;
	rc = fetch_days(&fr, from.ymd, to.ymd, &fo);
	if (rc < 0) {
		joseki_error("fetch: %s: %s", cache, fetch_strerror(rc));
		fetch_result_free(&fr);
		bookdb_free(db);
		free(cache_owned);
		return rc == FETCH_EINVAL ? 2 : 1;
	}
	const char **inputs = calloc(fr.ndays + 1, sizeof *inputs);
	size_t ninputs = 0;
	for (size_t i = 0; i < fr.ndays; i++) {
		const FetchDay *d = &fr.days[i];
		if (d->status == FETCH_DAY_FAILED)
			joseki_error("fetch: %s: %s", d->url, d->message ? d->message : "failed");
		else if (d->message)
			fprintf(stderr, "fetch: %s: %s\n", d->url, d->message);
		else if (d->status == FETCH_DAY_MISSING && !json)
			fprintf(stderr, "fetch: %s: not on the server (404): no games that day\n",
			        d->url);
		if (d->path && inputs) inputs[ninputs++] = d->path;
	}
	IngestStats st;
	memset(&st, 0, sizeof st);
	int irc = 0;
	if (!inputs)
		irc = INGEST_ENOMEM;
	else if (ninputs)
		irc = ingest_run(&st, db, inputs, ninputs, opt);
	int status = fr.failed ? 1 : 0;
	if (json) {
		if (report_json(&fr, &st) < 0) status = 1;
	} else {
		char head[200];
		snprintf(head, sizeof head,
		         "fetch: %zu days (%zu downloaded, %zu cached, %zu missing, %zu failed)",
		         fr.ndays, fr.downloaded, fr.cached, fr.missing, fr.failed);
		if (cli_ingest_report(&st, false, head) < 0) status = 1;
	}
	if (irc < 0) {
		joseki_error("fetch: %s (batches committed before the failure are kept)",
		             ingest_strerror(irc));
		status = 1;
	}
	ingest_stats_free(&st);
	free(inputs);
	fetch_result_free(&fr);
	bookdb_free(db);
	free(cache_owned);
	return status;
}
