/* tools/cli_ingest.c — options and reports shared by ingest, fetch and import. */
#include "tools/cli_ingest.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/commands.h"

/* "2026-06-01", "2026/06/01" or "20260601" → "20260601". */
static int parse_date(char out[9], const char *s)
{
	int n = 0;
	for (const char *p = s; *p; p++) {
		if (*p >= '0' && *p <= '9') {
			if (n == 8) return -1;
			out[n++] = *p;
		} else if (*p != '-' && *p != '/') {
			return -1;
		}
	}
	out[n] = 0;
	return n == 8 ? 0 : -1;
}

int cli_ingest_option(IngestOptions *opt, int argc, char **argv, int *i, const char *cmd)
{
	const char *a = argv[*i];
	static const char *const WITH_VALUE[] = {"--min-rating", "--max-ply",    "--since",
	                                         "--until",      "--event",      "--time-control",
	                                         "--jobs",       "--mate-clamp", "--mate-plies"};
	bool known = false;
	for (size_t k = 0; k < sizeof WITH_VALUE / sizeof WITH_VALUE[0]; k++)
		if (!strcmp(a, WITH_VALUE[k])) known = true;
	if (!known) return 0;
	if (*i + 1 >= argc) {
		joseki_error("%s: %s needs a value", cmd, a);
		return 2;
	}
	const char *v = argv[++*i];
	char *end;
	if (!strcmp(a, "--min-rating")) {
		opt->min_rating = strtod(v, &end);
		opt->has_min_rating = true;
		if (*end || end == v) goto bad;
	} else if (!strcmp(a, "--max-ply")) {
		long n = strtol(v, &end, 10);
		if (*end || n <= 0 || n > 10000) goto bad;
		opt->max_ply = (int)n;
	} else if (!strcmp(a, "--mate-clamp") || !strcmp(a, "--mate-plies")) {
		long n = strtol(v, &end, 10);
		if (*end || end == v || n < 0 || n > (a[7] == 'c' ? VALUE_MATE : 10000)) goto bad;
		if (a[7] == 'c')
			opt->mate_clamp = (int)n;
		else
			opt->mate_plies = (int)n;
	} else if (!strcmp(a, "--jobs")) {
		long n = strtol(v, &end, 10);
		if (*end || n <= 0 || n > 64) goto bad;
		opt->jobs = (int)n;
	} else if (!strcmp(a, "--since")) {
		if (parse_date(opt->since, v) < 0) goto bad;
	} else if (!strcmp(a, "--until")) {
		if (parse_date(opt->until, v) < 0) goto bad;
	} else if (!strcmp(a, "--event")) {
		opt->event_glob = v;
	} else if (!strcmp(a, "--time-control")) {
		opt->tc_glob = v;
	}
	return 1;
bad:
	joseki_error("%s: bad value '%s' for %s", cmd, v, a);
	return 2;
}

bool cli_progress_wanted(bool quiet)
{
	return !quiet && isatty(2);
}

void cli_ingest_report(const IngestStats *st, bool json, const char *cmd)
{
	if (json) {
		json_t *o = json_object();
		json_object_set_new(o, "files", json_integer((json_int_t)st->files));
		json_object_set_new(o, "games_read", json_integer((json_int_t)st->games_read));
		json_object_set_new(o, "games_ingested",
		                    json_integer((json_int_t)st->games_ingested));
		json_object_set_new(o, "games_skipped",
		                    json_integer((json_int_t)st->games_skipped));
		json_object_set_new(o, "games_rejected",
		                    json_integer((json_int_t)st->games_rejected));
		json_object_set_new(o, "duplicates", json_integer((json_int_t)st->duplicates));
		json_object_set_new(o, "positions_added",
		                    json_integer((json_int_t)st->positions_added));
		json_object_set_new(o, "moves_added", json_integer((json_int_t)st->moves_added));
		json_object_set_new(o, "evals_added", json_integer((json_int_t)st->evals_added));
		json_object_set_new(o, "errors_total", json_integer((json_int_t)st->errors_total));
		json_object_set_new(o, "time_ms", json_integer((json_int_t)(st->seconds * 1000)));
		json_t *errs = json_array();
		for (size_t i = 0; i < st->nerrors; i++) {
			json_t *e = json_object();
			json_object_set_new(e, "input", json_string(st->errors[i].input));
			json_object_set_new(e, "line", json_integer(st->errors[i].line));
			/* messages may quote record bytes that are not UTF-8 */
			json_t *m = json_string(st->errors[i].message);
			if (!m) m = json_string("(message not valid UTF-8)");
			json_object_set_new(e, "message", m);
			json_array_append_new(errs, e);
		}
		json_object_set_new(o, "errors", errs);
		/* What the walk left out and the branches not read, when there are any. */
		if (walk_skipped(&st->walk)) {
			const WalkStats *w = &st->walk;
			json_object_set_new(
			    o, "files_skipped",
			    json_pack("{s:I, s:I, s:I, s:I, s:I}", "not_game_files",
			              (json_int_t)w->not_games, "special", (json_int_t)w->special,
			              "links_to_walked_directories", (json_int_t)w->loops,
			              "broken_links", (json_int_t)w->broken, "hidden",
			              (json_int_t)w->hidden));
		}
		if (st->variations)
			json_object_set_new(o, "variations_skipped",
			                    json_integer((json_int_t)st->variations));
		if (st->unreached)
			json_object_set_new(o, "unreached",
			                    json_integer((json_int_t)st->unreached));
		joseki_print_json(o, 0);
		return;
	}
	char skipped[256];
	if (walk_skipped_text(&st->walk, skipped, sizeof skipped))
		fprintf(stderr, "%s: left out: %s\n", cmd, skipped);
	if (st->variations)
		fprintf(stderr, "%s: %llu variations (branches of KIF/KI2/JKF records) not read\n",
		        cmd, (unsigned long long)st->variations);
	for (size_t i = 0; i < st->nerrors; i++) {
		if (st->errors[i].line > 0)
			fprintf(stderr, "%s:%d: %s\n", st->errors[i].input, st->errors[i].line,
			        st->errors[i].message);
		else
			fprintf(stderr, "%s: %s\n", st->errors[i].input, st->errors[i].message);
	}
	if (st->errors_total > st->nerrors)
		fprintf(stderr, "(%llu more errors not shown)\n",
		        (unsigned long long)(st->errors_total - st->nerrors));
	if (!strcmp(cmd, "import")) {
		printf("import: %llu positions, %llu moves, %llu evaluations added; %llu errors; "
		       "%.1f s\n",
		       (unsigned long long)st->positions_added, (unsigned long long)st->moves_added,
		       (unsigned long long)st->evals_added, (unsigned long long)st->errors_total,
		       st->seconds);
		return;
	}
	double gps = st->seconds > 0 ? st->games_read / st->seconds : 0;
	printf("%s: %llu files, %llu games read, %llu ingested, %llu skipped, %llu rejected, %llu "
	       "duplicates; "
	       "%llu positions, %llu moves, %llu evaluations added; %llu errors; %.1f s (%.0f "
	       "games/s)\n",
	       cmd, (unsigned long long)st->files, (unsigned long long)st->games_read,
	       (unsigned long long)st->games_ingested, (unsigned long long)st->games_skipped,
	       (unsigned long long)st->games_rejected, (unsigned long long)st->duplicates,
	       (unsigned long long)st->positions_added, (unsigned long long)st->moves_added,
	       (unsigned long long)st->evals_added, (unsigned long long)st->errors_total,
	       st->seconds, gps);
}
