/*
 * joseki replay INPUT... [--json]
 *
 * Replays game records under the rules and reports per game: plies, how it
 * ended by the rules, the winner, the final SFEN and what the record claimed.
 * An INPUT is a CSA file (several records separated by "/" allowed), a file
 * of USI games, one per line ("startpos moves ...", "sfen ... moves ...",
 * or "<id>\t<moves from the start position>"; '#' lines are comments),
 * "-" for standard input, or a directory (its *.csa files, recursively). Writes nothing. Exit 1
 * when an input cannot be read or a record cannot be parsed (the others are still reported); an
 * illegal move is a result, reported with its line, not a failure.
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ingest/csa.h"
#include "ingest/replay.h"
#include "shogi/notation.h"
#include "tools/commands.h"

#define USAGE "usage: joseki replay INPUT... [--json]"

typedef struct {
	bool json;
	json_t *games;
	Position *pos;
	int ngames;      /* games replayed */
	int nerrors;     /* records that could not be read or replayed */
	int nunreadable; /* of those, the ones the reader rejected */
} Ctx;

/* JSON strings must be UTF-8; records are bytes. Keep printable ASCII only. */
static json_t *jstr(const char *s)
{
	if (!s) return json_null();
	size_t n = strlen(s);
	char *t = malloc(n + 1);
	if (!t) return json_null();
	for (size_t i = 0; i < n; i++) t[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	t[n] = 0;
	json_t *j = json_string(t);
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
static const char *recorded_of(const CsaRecord *rec, char *buf, size_t cap)
{
	if (rec->end != CSA_END_NONE) {
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
                   bool have_pos, const char *recorded, bool warn)
{
	char sfen[SFEN_MAX] = "";
	if (have_pos) sfen_write(c->pos, sfen, sizeof sfen);
	c->ngames++;
	if (c->json) {
		json_t *g = json_object();
		json_object_set_new(g, "input", jstr(input));
		json_object_set_new(g, "id", jstr(id));
		json_object_set_new(g, "plies", json_integer(res->plies));
		json_object_set_new(g, "end", json_string(replay_end_name(res->end)));
		json_object_set_new(g, "winner", json_string(replay_winner_name(res->winner)));
		json_object_set_new(g, "final_sfen", have_pos ? jstr(sfen) : json_null());
		json_object_set_new(g, "recorded", jstr(recorded));
		if (res->error[0])
			json_object_set_new(g, "error",
			                    json_pack("{s:i, s:o}", "line", res->error_line,
			                              "message", jstr(res->error)));
		else
			json_object_set_new(g, "error", json_null());
		json_array_append_new(c->games, g);
	} else {
		printf("%s%s%s: %d plies, %s, winner %s", input, id ? ": " : "", id ? id : "",
		       res->plies, replay_end_name(res->end), replay_winner_name(res->winner));
		if (recorded) printf(", recorded %s", recorded);
		printf("\n");
		if (res->error[0]) printf("  error: line %d: %s\n", res->error_line, res->error);
		if (have_pos) printf("  final: %s\n", sfen);
	}
	if (warn && res->error[0])
		joseki_error("%s:%d: %s (game stopped after %d plies)", input, res->error_line,
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
		report(c, input, NULL, &res, false, NULL, false);
		c->ngames--; /* listed, but not a replayed game */
	}
	joseki_error("%s:%d: %s (record skipped)", input, line, msg);
}

static int run_csa(Ctx *c, const char *input, const void *buf, size_t len)
{
	CsaReader *r;
	if (csa_reader_open_mem(&r, buf, len, input) != 0) {
		joseki_error("replay: out of memory");
		return -1;
	}
	for (;;) {
		CsaRecord *rec;
		int rc = csa_reader_next(r, &rec);
		if (rc == 0) break;
		if (rc == CSA_EPARSE) {
			/* The reader's message already names input:line. */
			const char *m = csa_reader_error(r);
			char prefix[64];
			int line = csa_reader_error_line(r);
			int k = snprintf(prefix, sizeof prefix, ":%d: ", line);
			const char *at = strstr(m + strlen(input), prefix);
			report_unreadable(c, input, line, at ? at + k : m);
			continue;
		}
		if (rc < 0) {
			joseki_error("replay: %s: %s", input, csa_strerror(rc));
			csa_reader_free(r);
			return -1;
		}
		ReplayResult res;
		char recbuf[32];
		int prc = replay_csa(&res, c->pos, rec, NULL, NULL);
		if (prc != 0) c->nerrors++;
		report(c, input, rec->event, &res, prc == 0,
		       recorded_of(rec, recbuf, sizeof recbuf), true);
		csa_record_free(rec);
	}
	csa_reader_free(r);
	return 0;
}

static int run_usi(Ctx *c, const char *input, const char *buf, size_t len)
{
	size_t off = 0;
	int line = 0;
	while (off < len) {
		const char *s = buf + off;
		const char *nl = memchr(s, '\n', len - off);
		size_t n = nl ? (size_t)(nl - s) : len - off;
		off += n + (nl ? 1 : 0);
		line++;
		size_t i = 0;
		while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) i++;
		if (i == n || s[i] == '#') continue;
		/* "<id>\t<moves>": the id is what precedes the first tab. */
		char id[128] = "";
		const char *tab = memchr(s, '\t', n);
		const char *game = s;
		size_t glen = n;
		if (tab) {
			size_t k = (size_t)(tab - s);
			snprintf(id, sizeof id, "%.*s",
			         (int)(k < sizeof id - 1 ? k : sizeof id - 1), s);
			game = tab + 1;
			glen = n - k - 1;
		}
		ReplayResult res;
		int rc = replay_usi(&res, c->pos, game, glen, line, NULL, NULL);
		if (rc != 0) c->nerrors++;
		report(c, input, id[0] ? id : NULL, &res, rc == 0, NULL, true);
	}
	return 0;
}

/* USI game lists start (after comments) with a position word or "<id>\t". */
static bool looks_usi(const char *buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		const char *s = buf + off;
		const char *nl = memchr(s, '\n', len - off);
		size_t n = nl ? (size_t)(nl - s) : len - off;
		off += n + 1;
		while (n && (*s == ' ' || *s == '\r')) s++, n--;
		if (!n || *s == '#') continue;
		if (memchr(s, '\t', n)) return true;
		return (n >= 8 && !memcmp(s, "startpos", 8)) ||
		       (n >= 5 && !memcmp(s, "sfen ", 5)) || (n >= 9 && !memcmp(s, "position ", 9));
	}
	return false;
}

/* Reads and replays one input: a file, "-", or a directory (its *.csa files,
 * recursively, in name order). Returns 0, or 1 when something could not be
 * read or parsed. */
static int run_input(Ctx *c, const char *input)
{
	bool is_stdin = !strcmp(input, "-");
	struct stat st;
	if (!is_stdin && stat(input, &st) == 0 && S_ISDIR(st.st_mode)) {
		struct dirent **names;
		int n = scandir(input, &names, NULL, alphasort);
		if (n < 0) {
			joseki_error("%s: %s (input skipped)", input, strerror(errno));
			return 1;
		}
		int status = 0;
		for (int i = 0; i < n; i++) {
			const char *nm = names[i]->d_name;
			size_t nl = strlen(nm);
			char *path = NULL;
			if (nm[0] != '.' && asprintf(&path, "%s/%s", input, nm) >= 0) {
				struct stat sub;
				bool dir = stat(path, &sub) == 0 && S_ISDIR(sub.st_mode);
				if (dir || (nl > 4 && !strcmp(nm + nl - 4, ".csa")))
					status |= run_input(c, path);
			}
			free(path);
			free(names[i]);
		}
		free(names);
		return status;
	}
	FILE *f = is_stdin ? stdin : fopen(input, "rb");
	if (!f) {
		joseki_error("%s: %s (input skipped)", input, strerror(errno));
		return 1;
	}
	size_t len = 0;
	void *data;
	int rrc = csa_read_all(&data, &len, f);
	int saved = errno;
	if (!is_stdin) fclose(f);
	char *buf = data;
	if (rrc) {
		joseki_error("%s: cannot read: %s (input skipped)", input,
		             rrc == CSA_EIO ? strerror(saved) : csa_strerror(rrc));
		return 1;
	}
	size_t nl = strlen(input);
	bool csa = nl >= 4 && !strcmp(input + nl - 4, ".csa");
	int before = c->nerrors;
	int rc = (!csa && looks_usi(buf, len)) ? run_usi(c, input, buf, len)
	                                       : run_csa(c, input, buf, len);
	free(buf);
	return (rc != 0 || c->nerrors != before) ? 1 : 0;
}

int cmd_replay(int argc, char **argv)
{
	Ctx c = {0};
	int ninputs = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			c.json = true;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("%s\n", USAGE);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			joseki_error("replay: unknown option '%s'\n" USAGE, argv[i]);
			return 2;
		} else
			ninputs++;
	}
	if (!ninputs) {
		joseki_error("replay: no INPUT given\n" USAGE);
		return 2;
	}
	c.pos = malloc(sizeof *c.pos);
	c.games = json_array();
	if (!c.pos || !c.games) {
		joseki_error("replay: out of memory");
		return 1;
	}
	int status = 0;
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-' && argv[i][1]) continue;
		if (run_input(&c, argv[i]) != 0) status = 1;
	}
	if (c.json) {
		json_t *root = json_pack("{s:o}", "games", c.games);
		json_dumpf(root, stdout, JSON_INDENT(1));
		fputc('\n', stdout);
		json_decref(root);
	} else {
		printf("replayed %d games, %d unreadable records\n", c.ngames, c.nunreadable);
		json_decref(c.games);
	}
	free(c.pos);
	return status;
}
