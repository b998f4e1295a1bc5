/* tools/cli_ingest.c — options and reports shared by ingest, fetch and import. */
#include "tools/cli_ingest.h"
#include "shogi/errmsg.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ingest/fetch.h"
#include "tools/commands.h"

/* A CliParseFn: "2026-06-01", "2026/06/01" or "20260601" into "20260601";
 * a date that is not one (2026-13-45, 2026-02-30) is refused, as fetch's. */
static int parse_date(void *dst, char *s, char *msg)
{
	(void)msg;
	return fetch_date_parse(dst, s) < 0 ? -1 : 0;
}

void cli_ingest_init(CliIngest *c)
{
	IngestOptions *o = &c->opt;
	ingest_options_init(o);
	const CliOpt t[] = {
	    CLI_REAL("--min-rating", &o->min_rating, -HUGE_VAL, HUGE_VAL, "R",
	             "games whose players are both rated at least R (default: any)",
	             CLI_TAG(&o->has_min_rating, true)),
	    CLI_NUM("--max-ply", &o->max_ply, 1, 10000, "N",
	            "store the moves played up to move N (default 128)"),
	    CLI_FN("--since", o->since, parse_date, "DATE", "a date YYYY-MM-DD",
	           "games played on DATE or later (default: any)"),
	    CLI_FN("--until", o->until, parse_date, "DATE", "a date YYYY-MM-DD",
	           "games played on DATE or earlier (default: any)"),
	    CLI_STR("--event", &o->event_glob, "GLOB",
	            "games whose event matches GLOB (default: any)"),
	    CLI_STR("--time-control", &o->tc_glob, "GLOB",
	            "floodgate games whose name matches GLOB (floodgate-300-10F; default: any)"),
	    CLI_NUM("--mate-clamp", &o->mate_clamp, 0, VALUE_MATE, "CP",
	            "a comment's mate score becomes +-CP (default 2000)..."),
	    CLI_NUM("--mate-plies", &o->mate_plies, 0, 10000, "N",
	            "... unless the game ended in mate within N plies of it (default 16)"),
	    CLI_NUM("--jobs", &o->jobs, 1, 64, "N", "parser threads (default: the cores)"),
	    CLI_TABLE_END,
	};
	_Static_assert(sizeof t == sizeof c->table, "the table's size");
	memcpy(c->table, t, sizeof t);
}

bool cli_progress_wanted(bool quiet)
{
	return !quiet && isatty(2);
}

void cli_ingest_progress(void *ctx, const char *phase, const IngestProgress *p)
{
	(void)ctx;
	double el = p->seconds > 1e-9 ? p->seconds : 1e-9;
	char dir[64];
	if (!strcmp(phase, "walk"))
		fprintf(stderr, "\r  ingest: %llu files looked at (%.0f/s), in %s\033[K",
		        (unsigned long long)p->files, p->files / el,
		        errmsg_escape(dir, sizeof dir, p->dir, strlen(p->dir)));
	else if (!strcmp(phase, "games"))
		fprintf(stderr, "\r  ingest: %llu games read, %llu ingested, %.0f games/s\033[K",
		        (unsigned long long)p->games_read, (unsigned long long)p->games_ingested,
		        p->games_read / el);
	else
		fprintf(stderr, "\r%*s\r", 70, "");
}

int cli_ingest_report(const IngestStats *st, bool json, const char *cmd)
{
	if (json) {
		json_t *o = json_object();
		/* import: books, not games (the files imported whole; no game
		 * fields, unreached always). */
		bool import = !strcmp(cmd, "import");
		json_object_set_new(o, "files", json_integer((json_int_t)st->files));
		if (!import) {
			json_object_set_new(o, "games_read",
			                    json_integer((json_int_t)st->games_read));
			json_object_set_new(o, "games_ingested",
			                    json_integer((json_int_t)st->games_ingested));
			json_object_set_new(o, "games_skipped",
			                    json_integer((json_int_t)st->games_skipped));
			json_object_set_new(o, "games_rejected",
			                    json_integer((json_int_t)st->games_rejected));
			json_object_set_new(o, "duplicates",
			                    json_integer((json_int_t)st->duplicates));
			json_object_set_new(o, "games_completed",
			                    json_integer((json_int_t)st->games_completed));
			json_object_set_new(o, "games_unended",
			                    json_integer((json_int_t)st->games_unended));
		}
		json_object_set_new(o, "positions_added",
		                    json_integer((json_int_t)st->positions_added));
		json_object_set_new(o, "moves_added", json_integer((json_int_t)st->moves_added));
		json_object_set_new(o, "evals_added", json_integer((json_int_t)st->evals_added));
		json_object_set_new(o, "errors_total", json_integer((json_int_t)st->errors_total));
		json_object_set_new(o, "unreadable", json_integer((json_int_t)st->unreadable));
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
			json_t *fs = json_pack(
			    "{s:I, s:I, s:I, s:I, s:I}", "not_game_files", (json_int_t)w->not_games,
			    "special", (json_int_t)w->special, "links_to_walked_directories",
			    (json_int_t)w->loops, "broken_links", (json_int_t)w->broken, "hidden",
			    (json_int_t)w->hidden);
			/* The first names of each kind, as the text says them. */
			json_t *names = json_array();
			const uint64_t n[WALK_KINDS] = {w->not_games, w->special, w->loops,
			                                w->broken, w->hidden};
			for (int k = 0; k < WALK_KINDS; k++)
				for (uint64_t i = 0; i < n[k] && i < WALK_NAMES_KEPT; i++) {
					json_t *s = json_string(w->left_out[k][i]);
					json_array_append_new(
					    names, s ? s : json_string("(name not UTF-8)"));
				}
			json_object_set_new(fs, "names", names);
			json_object_set_new(o, "files_skipped", fs);
		}
		if (st->walk.refused)
			json_object_set_new(o, "inputs_refused",
			                    json_integer((json_int_t)st->walk.refused));
		if (st->variations)
			json_object_set_new(o, "variations_skipped",
			                    json_integer((json_int_t)st->variations));
		if (st->unreached || import)
			json_object_set_new(o, "unreached",
			                    json_integer((json_int_t)st->unreached));
		if (import)
			json_object_set_new(o, "depth0_positions",
			                    json_integer((json_int_t)st->depth0));
		return joseki_print_json(o, 0);
	}
	char skipped[WALK_KINDS * (WALK_NAMES_KEPT + 1) * WALK_NAME_MAX];
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
	if (st->walk.refused)
		fprintf(stderr,
		        "%s: %llu input%s refused: not game records from the line named on (its "
		        "games before that line are in)\n",
		        cmd, (unsigned long long)st->walk.refused,
		        st->walk.refused == 1 ? "" : "s");
	if (!strcmp(cmd, "import")) {
		if (st->depth0)
			fprintf(stderr,
			        "import: %llu position%s came with no depth (depth 0): minimax "
			        "backs no value up through a position analysed below its "
			        "--min-depth (default 1); to back values up through them: joseki "
			        "minimax BOOK --min-depth 0\n",
			        (unsigned long long)st->depth0, st->depth0 == 1 ? "" : "s");
		printf("import: %llu positions, %llu moves, %llu evaluations added; %llu errors; "
		       "%.1f s\n",
		       (unsigned long long)st->positions_added, (unsigned long long)st->moves_added,
		       (unsigned long long)st->evals_added, (unsigned long long)st->errors_total,
		       st->seconds);
		return 0;
	}
	double gps = st->seconds > 0 ? st->games_read / st->seconds : 0;
	char completed[48] = "";
	if (st->games_completed)
		snprintf(completed, sizeof completed, ", %llu completed",
		         (unsigned long long)st->games_completed);
	printf("%s: %llu files, %llu games read, %llu ingested, %llu skipped, %llu rejected, %llu "
	       "duplicates%s; "
	       "%llu positions, %llu moves, %llu game comments kept; %llu errors; %.1f s (%.0f "
	       "games/s)\n",
	       cmd, (unsigned long long)st->files, (unsigned long long)st->games_read,
	       (unsigned long long)st->games_ingested, (unsigned long long)st->games_skipped,
	       (unsigned long long)st->games_rejected, (unsigned long long)st->duplicates,
	       completed, (unsigned long long)st->positions_added,
	       (unsigned long long)st->moves_added, (unsigned long long)st->evals_added,
	       (unsigned long long)st->errors_total, st->seconds, gps);
	return 0;
}
