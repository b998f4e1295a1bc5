/*
 * joseki replay INPUT... [--json]
 *
 * Replays game records under the rules and reports per game: plies, how it
 * ended by the rules, the winner, the final SFEN and what the record claimed.
 * An INPUT is a game file in any format ingest/kifu.h reads (CSA, KIF, KI2,
 * JKF, USI game lines; several games a file where the format allows), "-"
 * for standard input, or a directory or archive (ingest/walk.h). Writes
 * nothing. Exit 1 when an input cannot be read or a record cannot be parsed
 * (the others are still reported); an illegal move is a result, reported
 * with its line, not a failure.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/kifu.h"
#include "ingest/replay.h"
#include "ingest/walk.h"
#include "shogi/errmsg.h"
#include "shogi/notation.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

typedef struct {
	bool json;
	json_t *games;
	Position *pos;
	int ngames;      /* games replayed */
	int nerrors;     /* records that could not be read or replayed */
	int nunreadable; /* of those, the ones the reader rejected */
	int ncut;   /* of those, records damaged or cut short after moves (replayed to there) */
	int status; /* 1 once an input could not be read or parsed */
	long variations; /* branches of records left unread */
	WalkStats walk;
} Ctx;

/* JSON strings must be UTF-8; records are bytes. Keep printable ASCII only. */
static json_t *jstr(const char *s)
{
	if (!s) return json_null();
	size_t n = strlen(s), cap = 4 * n + 1;
	char *t = malloc(cap);
	if (!t) return json_null();
	/* Valid UTF-8 whatever the record held, so always valid JSON. */
	json_t *j = json_string(errmsg_escape(t, cap, s, n));
	free(t);
	return j ? j : json_null();
}

static void lower_copy(char *out, size_t cap, const char *s, size_t n)
{
	size_t i = 0;
	for (; i < n && i + 1 < cap; i++)
		out[i] = (s[i] >= 'A' && s[i] <= 'Z') ? (char)(s[i] + 32) : s[i];
	out[i] = 0;
}

/* What the record claimed: its % word, else the type of floodgate's summary. */
static const char *recorded_of(const KifuRecord *rec, char *buf, size_t cap)
{
	if (rec->end != GAME_CLAIM_NONE) {
		lower_copy(buf, cap, rec->special, strlen(rec->special));
		return buf;
	}
	if (rec->summary) {
		const char *c = strchr(rec->summary, ':');
		size_t n = c ? (size_t)(c - rec->summary) : strlen(rec->summary);
		lower_copy(buf, cap, rec->summary, n);
		return buf;
	}
	return NULL;
}

static void report(Ctx *c, const char *input, const char *id, const ReplayResult *res,
                   bool have_pos, const char *recorded, int variations, bool warn)
{
	char sfen[SFEN_MAX] = "";
	if (have_pos) sfen_write(c->pos, sfen, sizeof sfen);
	c->ngames++;
	/* The record's own bytes (its name in an archive, its $EVENT, its last
	 * line's word) are shown as text. */
	char in[1024];
	errmsg_escape(in, sizeof in, input, strlen(input));
	if (c->json) {
		json_t *g = json_object();
		json_object_set_new(g, "input", jstr(input));
		json_object_set_new(g, "id", jstr(id));
		json_object_set_new(g, "plies", json_integer(res->plies));
		json_object_set_new(g, "end", json_string(game_end_name(res->end)));
		json_object_set_new(g, "winner", json_string(game_winner_name(res->winner)));
		json_object_set_new(g, "final_sfen", have_pos ? jstr(sfen) : json_null());
		json_object_set_new(g, "recorded", jstr(recorded));
		if (res->error[0])
			json_object_set_new(g, "error",
			                    json_pack("{s:i, s:o}", "line", res->error_line,
			                              "message", jstr(res->error)));
		else
			json_object_set_new(g, "error", json_null());
		if (variations)
			json_object_set_new(g, "variations_skipped", json_integer(variations));
		json_array_append_new(c->games, g);
	} else {
		char ev[400], rd[200];
		printf("%s%s%s: %d plies, %s, winner %s", in, id ? ": " : "",
		       id ? errmsg_escape(ev, sizeof ev, id, strlen(id)) : "", res->plies,
		       game_end_name(res->end), game_winner_name(res->winner));
		if (recorded)
			printf(", recorded %s",
			       errmsg_escape(rd, sizeof rd, recorded, strlen(recorded)));
		if (variations)
			printf(", %d variation%s skipped", variations, variations == 1 ? "" : "s");
		printf("\n");
		if (res->error[0]) printf("  error: line %d: %s\n", res->error_line, res->error);
		if (have_pos) printf("  final: %s\n", sfen);
	}
	if (warn && res->error[0])
		joseki_error("%s:%d: %s (game stopped after %d plies)", in, res->error_line,
		             res->error, res->plies);
}

/* A record that could not be read: reported as a game with an error. */
static void report_unreadable(Ctx *c, const char *input, int line, const char *msg)
{
	ReplayResult res;
	memset(&res, 0, sizeof res);
	res.error_line = line;
	snprintf(res.error, sizeof res.error, "%s", msg);
	c->nerrors++;
	c->nunreadable++;
	if (c->json) {
		report(c, input, NULL, &res, false, NULL, 0, false);
		c->ngames--; /* listed, but not a replayed game */
	}
	char in[1024];
	joseki_error("%s:%d: %s (record skipped)",
	             errmsg_escape(in, sizeof in, input, strlen(input)), line, msg);
}

/* Reads and replays the games of one input file (or part of it, from line on). */
static void run_file(Ctx *c, const char *input, const void *buf, size_t len, KifuFormat format,
                     int line)
{
	KifuReader *r;
	if (kifu_reader_open_mem_as(&r, buf, len, input, format) != 0) {
		joseki_error("replay: out of memory");
		c->status = 1;
		return;
	}
	kifu_reader_first_line(r, line);
	int before = c->nerrors;
	for (;;) {
		KifuRecord *rec;
		int rc = kifu_reader_next(r, &rec);
		if (rc == 0) break;
		if (rc == KIFU_EPARSE) {
			/* The reader's message already names input:line. */
			const char *m = kifu_reader_error(r);
			char prefix[64];
			int eline = kifu_reader_error_line(r);
			int k = snprintf(prefix, sizeof prefix, ":%d: ", eline);
			size_t skip = strlen(input) <= strlen(m) ? strlen(input) : 0;
			const char *at = strstr(m + skip, prefix);
			report_unreadable(c, input, eline, at ? at + k : m);
			continue;
		}
		if (rc < 0) {
			char in[1024];
			joseki_error("replay: %s: %s",
			             errmsg_escape(in, sizeof in, input, strlen(input)),
			             kifu_strerror(rc));
			c->status = 1;
			break;
		}
		ReplayResult res;
		char recbuf[32];
		int prc = replay_kifu(&res, c->pos, rec, NULL, NULL);
		/* A record damaged or cut short after moves is replayed to there
		 * and shown, and fails the run as one the reader rejected. */
		if (prc != 0 || rec->cut) c->nerrors++;
		c->ncut += prc == 0 && rec->cut;
		c->variations += rec->variations;
		report(c, input, rec->event, &res, prc == 0,
		       recorded_of(rec, recbuf, sizeof recbuf), rec->variations, true);
		kifu_record_free(rec);
	}
	kifu_reader_free(r);
	if (c->nerrors != before) c->status = 1;
}

/* One file (or part) of the walk (walk.h): its games, or why it could not be read. */
static int on_file(void *ctx, WalkFile *f)
{
	Ctx *c = ctx;
	if (!f->buf) {
		const char *why = f->error ? f->error : strerror(f->errnum ? f->errnum : ENOMEM);
		if (f->line > 0)
			joseki_error("%s:%d: %s", f->name ? f->name : "?", f->line, why);
		else
			joseki_error("%s: %s (input skipped)", f->name ? f->name : "?", why);
		c->status = 1;
	} else if (!f->name) {
		joseki_error("replay: out of memory");
		c->status = 1;
	} else {
		run_file(c, f->name, f->buf, f->len, f->format, f->line);
	}
	free(f->name);
	free(f->buf);
	free(f->error);
	return 0;
}

int cmd_replay(int argc, char **argv)
{
	Ctx c = {0};
	CliArgs inputs = {0};
	const CliOpt opts[] = {
	    CLI_REST("INPUT", &inputs, 1,
	             "game records (CSA, KIF, KI2, JKF, USI lines), directories, archives, -"),
	    CLI_FLAG("--json", &c.json, "one JSON object: the games"),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"replay", opts, "docs/csa.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	c.pos = malloc(sizeof *c.pos);
	c.games = json_array();
	if (!c.pos || !c.games) {
		joseki_error("replay: out of memory");
		return 1;
	}
	WalkOptions wo = {.file = on_file, .ctx = &c};
	(void)walk_inputs(inputs.v, inputs.n, &wo, &c.walk); /* on_file never stops it */
	int status = c.status;
	if (c.json) {
		json_t *root = json_pack("{s:o}", "games", c.games);
		json_dumpf(root, stdout, JSON_INDENT(1));
		fputc('\n', stdout);
		json_decref(root);
	} else {
		printf("replayed %d games, %d unreadable records", c.ngames, c.nunreadable);
		if (c.ncut) printf(", %d cut short", c.ncut);
		printf("\n");
		json_decref(c.games);
	}
	char skipped[WALK_KINDS * (WALK_NAMES_KEPT + 1) * WALK_NAME_MAX];
	if (walk_skipped_text(&c.walk, skipped, sizeof skipped))
		fprintf(stderr, "replay: left out: %s\n", skipped);
	if (c.variations)
		fprintf(stderr,
		        "replay: %ld variations (branches of KIF/KI2/JKF records) not read\n",
		        c.variations);
	free(c.pos);
	return status;
}
