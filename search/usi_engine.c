/*
 * search/usi_engine.c — the external USI engine driver (see usi_engine.h).
 *
 * One UsiEngine owns at most one engine process at a time. Every wait is a
 * poll() against a monotonic deadline, so no engine behaviour can block the
 * caller for longer than the configured limits. Failures inside one attempt
 * are reported upwards as SEARCH_E* codes; analyse() is the only place that
 * decides to kill, restart and retry.
 */
#include "search/usi_engine.h"
#include "search/usi_engine_priv.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "search/usi_info.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/notation.h"
#include "shogi/spec.h"

/* True when line starts with the word w followed by a space or its end. */
static bool starts_word(const char *line, size_t len, const char *w, const char **rest)
{
	size_t n = strlen(w), i;
	for (i = 0; i < len && (line[i] == ' ' || line[i] == '\t'); i++) {
	}
	if (len - i < n || memcmp(line + i, w, n) != 0) return false;
	if (len - i > n && line[i + n] != ' ' && line[i + n] != '\t') return false;
	if (rest) *rest = line + i + n;
	return true;
}

/* Describes how the engine ended after EOF, for the message. */
static int crashed(UsiEngine *e, const char *when)
{
	int status;
	char how[96] = "still running, output closed";
	if (e->pid > 0 && usi_reap_within(e->pid, 50, &status)) {
		usi_describe_status(status, how, sizeof how);
		kill(-e->pid, SIGKILL);
		usi_cpu_note(e, true); /* the last reading: the process is reaped */
		e->pid = -1;
	}
	e->stats.crashes++;
	return usi_fail(e, SEARCH_ECRASH, "%s: engine ended %s (%s)", e->path, when, how);
}

/* Forgets the option names the last process listed. */
static void forget_listed(UsiEngine *e)
{
	for (size_t i = 0; i < e->nlisted; i++) free(e->listed[i]);
	e->nlisted = 0;
}

/*
 * Keeps the name of an "option name N type ..." line (rest: what follows
 * "option"); N may hold blanks ("Debug Log File"), and ends at " type ".
 * Lines without a name are ignored. 0, or -1 when memory runs out.
 */
static int list_option(UsiEngine *e, const char *rest, size_t n)
{
	while (n > 0 && (*rest == ' ' || *rest == '\t')) rest++, n--;
	if (n < 5 || memcmp(rest, "name", 4) != 0 || (rest[4] != ' ' && rest[4] != '\t')) return 0;
	rest += 5, n -= 5;
	while (n > 0 && (*rest == ' ' || *rest == '\t')) rest++, n--;
	size_t w = 0;
	while (w < n && !(w + 6 <= n && (rest[w] == ' ' || rest[w] == '\t') &&
	                  !memcmp(rest + w + 1, "type", 4) &&
	                  (w + 5 == n || rest[w + 5] == ' ' || rest[w + 5] == '\t')))
		w++;
	while (w > 0 && (rest[w - 1] == ' ' || rest[w - 1] == '\t')) w--;
	if (w == 0) return 0;
	char *name = strndup(rest, w);
	if (!name || array_grow((void **)&e->listed, &e->listed_cap, e->nlisted + 1,
	                        sizeof *e->listed, 32) < 0) {
		free(name);
		return -1;
	}
	e->listed[e->nlisted++] = name;
	return 0;
}

/* Reads lines until one starting with word; others are ignored. */
static int wait_for(UsiEngine *e, const char *word, int64_t deadline, const char *when)
{
	const char *line, *rest;
	size_t len;
	for (;;) {
		int r = usi_read_line(e, deadline, &line, &len);
		if (r == SEARCH_ECRASH) return crashed(e, when);
		if (r < 0) return r;
		if (r == LINE_CANCEL)
			return usi_fail(e, SEARCH_ECANCELED,
			                "%s: cancelled while waiting for \"%s\"", e->path, word);
		if (r == LINE_TIMEOUT)
			return usi_fail(e, SEARCH_EHANDSHAKE, "%s: no \"%s\" within %d ms %s",
			                e->path, word, e->cfg.handshake_timeout_ms, when);
		if (r != LINE_OK) continue;
		if (starts_word(line, len, word, NULL)) return 0;
		if (starts_word(line, len, "option", &rest)) {
			if (list_option(e, rest, (size_t)(line + len - rest)) < 0)
				return usi_fail(e, SEARCH_ENOMEM, "%s: out of memory", e->path);
		} else if (starts_word(line, len, "id", &rest)) {
			size_t n = (size_t)(line + len - rest);
			while (n > 0 && *rest == ' ') rest++, n--;
			if (n > 5 && memcmp(rest, "name ", 5) == 0) {
				n -= 5;
				if (n >= sizeof e->name) n = sizeof e->name - 1;
				memcpy(e->name, rest + 5, n);
				e->name[n] = '\0';
			}
		}
	}
}

/*
 * Engines whose `go` understands only the time controls of the USI
 * specification (btime wtime byoyomi), known by the start of their id name.
 * gpsshogi's gpsusi aborts on `go movetime`, `go nodes` and `go depth`
 * ("unknown option in go") and counts byoyomi in whole seconds (less than a
 * second is no time at all: it never answers by itself).
 */
static const char *const TIME_ONLY[] = {"gpsshogi", "gpsusione"};

static bool known_time_only(const char *name)
{
	for (size_t i = 0; i < sizeof TIME_ONLY / sizeof *TIME_ONLY; i++)
		if (!strncmp(name, TIME_ONLY[i], strlen(TIME_ONLY[i]))) return true;
	return false;
}

/* The byoyomi (ms) a time-only engine is given for a movetime budget: whole
 * seconds, at least one. */
static uint64_t byoyomi_ms(uint64_t movetime)
{
	return movetime < 1000 ? 1000 : movetime / 1000 * 1000;
}

static int ready_and_new_game(UsiEngine *e)
{
	int rc;
	if ((rc = usi_write_all(e, "isready\n", 8)) < 0) return rc;
	if ((rc = wait_for(e, "readyok", clock_ms() + e->cfg.handshake_timeout_ms,
	                   "after isready")) < 0)
		return rc;
	if ((rc = usi_write_all(e, "usinewgame\n", 11)) < 0) return rc;
	e->new_game_pending = false;
	return 0;
}

/* The edit distance of a and b, letters compared without their case (the
 * first 64 bytes of each: option names are short). */
static int distance(const char *a, const char *b)
{
	enum { MAXN = 64 };
	size_t na = strnlen(a, MAXN), nb = strnlen(b, MAXN);
	int row[MAXN + 1];
	for (size_t j = 0; j <= nb; j++) row[j] = (int)j;
	for (size_t i = 1; i <= na; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= nb; j++) {
			int up = row[j];
			int same =
			    tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]);
			int best = diag + !same;
			if (up + 1 < best) best = up + 1;
			if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[nb];
}

/* "A, B, C": the (at most) three names the engine listed nearest to name. */
static void nearest(const UsiEngine *e, const char *name, char *out, size_t len)
{
	size_t pick[3];
	int dist[3], k = 0;
	for (size_t i = 0; i < e->nlisted; i++) {
		int d = distance(name, e->listed[i]);
		/* Insertion into the kept three, the earlier listed first on a tie. */
		int at = k;
		while (at > 0 && dist[at - 1] > d) at--;
		if (at >= 3) continue;
		for (int j = (k < 3 ? k : 2); j > at; j--)
			pick[j] = pick[j - 1], dist[j] = dist[j - 1];
		pick[at] = i;
		dist[at] = d;
		if (k < 3) k++;
	}
	size_t used = 0;
	out[0] = '\0';
	for (int j = 0; j < k && used < len; j++) {
		int r = snprintf(out + used, len - used, "%s%s", j ? ", " : "", e->listed[pick[j]]);
		if (r < 0) break;
		used += (size_t)r;
	}
}

/*
 * Checks the configured options against the names the engine listed: an
 * option it lists in another case is renamed to its spelling (and said
 * through cfg.notice, this once: the name then matches at a restart); one it
 * does not list fails the start with SEARCH_EINVAL.
 */
static int check_options(UsiEngine *e)
{
	for (int i = 0; i < e->cfg.noptions; i++) {
		UsiOption *o = &e->options[i];
		const char *other = NULL;
		bool exact = false;
		for (size_t k = 0; k < e->nlisted && !exact; k++) {
			if (!strcmp(o->name, e->listed[k]))
				exact = true;
			else if (!other && !strcasecmp(o->name, e->listed[k]))
				other = e->listed[k];
		}
		if (exact) continue;
		if (other) {
			char raw[SEARCH_ERRLEN], msg[SEARCH_ERRLEN];
			snprintf(raw, sizeof raw, "%s: option %s sent as %s, the spelling %s lists",
			         e->path, o->name, other, usi_engine_name(e));
			char *name = strdup(other);
			if (!name) return usi_fail(e, SEARCH_ENOMEM, "%s: out of memory", e->path);
			free((char *)o->name);
			o->name = name;
			usi_log_msg(e, "%s", raw);
			if (e->cfg.notice) {
				errmsg_escape(msg, sizeof msg, raw, strlen(raw));
				e->cfg.notice(e->cfg.notice_ctx, msg);
			}
			continue;
		}
		if (!e->nlisted)
			return usi_fail(
			    e, SEARCH_EINVAL,
			    "%s: option %s=%s not taken: the engine (%s) lists no options", e->path,
			    o->name, o->value, usi_engine_name(e));
		char near[160];
		nearest(e, o->name, near, sizeof near);
		return usi_fail(e, SEARCH_EINVAL,
		                "%s: option %s=%s not taken: the engine (%s) lists no %s; the "
		                "nearest it lists: %s",
		                e->path, o->name, o->value, usi_engine_name(e), o->name, near);
	}
	return 0;
}

/* Spawns and handshakes; on failure no process is left. */
static int start(UsiEngine *e)
{
	int rc;
	char line[600];

	if ((rc = usi_spawn(e)) < 0) return rc;
	e->searched = false;
	forget_listed(e);
	if ((rc = usi_write_all(e, "usi\n", 4)) < 0) goto err;
	if ((rc = wait_for(e, "usiok", clock_ms() + e->cfg.handshake_timeout_ms, "after usi")) < 0)
		goto err;
	if ((rc = check_options(e)) < 0) goto err;
	for (int i = 0; i < e->cfg.noptions; i++) {
		int n = snprintf(line, sizeof line, "setoption name %s value %s\n",
		                 e->options[i].name, e->options[i].value);
		if (n < 0 || (size_t)n >= sizeof line) {
			rc = usi_fail(e, SEARCH_EINVAL, "%s: option %s too long", e->path,
			              e->options[i].name);
			goto err;
		}
		if ((rc = usi_write_all(e, line, (size_t)n)) < 0) goto err;
	}
	if ((rc = ready_and_new_game(e)) < 0) goto err;
	e->time_only = known_time_only(e->name);
	usi_log_msg(e, "engine ready: %s%s", e->name,
	            e->time_only ? " (go with time controls only: btime wtime byoyomi)" : "");
	return 0;
err:
	usi_kill_engine(e, false);
	return rc;
}

/* ---- one search ---- */

int64_t usi_engine_hard_limit_ms(const UsiEngineConfig *cfg, const SearchBudget *budget, Color us)
{
	double ms;
	switch (budget->kind) {
	case SEARCH_BUDGET_CLOCK: {
		/* The clock is the limit: no factor, only the slack for the pipes. */
		const SearchClock *c = &budget->clock;
		return c->time[us] + c->inc[us] + c->byoyomi + cfg->slack_ms;
	}
	case SEARCH_BUDGET_MOVETIME:
		ms = (double)budget->amount;
		break;
	case SEARCH_BUDGET_NODES:
		ms =
		    (double)budget->amount * 1000.0 / (double)(cfg->nps_floor ? cfg->nps_floor : 1);
		break;
	default:
		return cfg->depth_limit_ms;
	}
	ms = ms * cfg->time_factor + cfg->slack_ms;
	if (ms > 1e12) ms = 1e12;
	return (int64_t)ms;
}

int usi_engine_check_budget(UsiEngine *e, const SearchBudget *budget)
{
	if (!e->time_only || budget->kind == SEARCH_BUDGET_MOVETIME ||
	    budget->kind == SEARCH_BUDGET_CLOCK)
		return 0;
	return usi_fail(e, SEARCH_EINVAL,
	                "%s (%s) takes only time controls (go byoyomi), not a %s "
	                "budget: give it --movetime",
	                e->path, e->name, budget->kind == SEARCH_BUDGET_NODES ? "nodes" : "depth");
}

/*
 * Writes into e->cmd the setoption (when MultiPV changes), position and go
 * commands for one search. The position goes as its root plus the moves
 * that led to it, so the engine sees the game's repetitions.
 */
static int build_commands(UsiEngine *e, size_t *len, const Position *pos,
                          const SearchBudget *budget, int multipv)
{
	char *p = e->cmd, *end = e->cmd + sizeof e->cmd;
	int nmoves = pos_history_len(pos);
	const char *kind;

	for (int i = 1; i <= nmoves; i++)
		if (pos->states[i].move == MOVE_NONE || pos->states[i].move == MOVE_NULL)
			return usi_fail(e, SEARCH_EINVAL,
			                "position history holds a null move at ply %d", i);
	if (multipv != e->cur_multipv)
		p += snprintf(p, (size_t)(end - p), "setoption name MultiPV value %d\n", multipv);
	p += snprintf(p, (size_t)(end - p), "position ");
	memcpy(&e->scratch, pos, sizeof *pos);
	size_t n = position_spec_of_game(p, (size_t)(end - p), &e->scratch);
	if (n >= (size_t)(end - p)) return usi_fail(e, SEARCH_EINVAL, "position command too long");
	p += n;
	switch (budget->kind) {
	case SEARCH_BUDGET_NODES:
		kind = "nodes";
		break;
	case SEARCH_BUDGET_MOVETIME:
		kind = "movetime";
		break;
	case SEARCH_BUDGET_CLOCK:
		kind = NULL;
		break;
	default:
		kind = "depth";
		break;
	}
	int rc = usi_engine_check_budget(e, budget);
	if (rc < 0) return rc;
	if (e->time_only && kind) {
		p += snprintf(p, (size_t)(end - p), "\ngo btime 0 wtime 0 byoyomi %llu\n",
		              (unsigned long long)byoyomi_ms(budget->amount));
	} else if (kind) {
		p += snprintf(p, (size_t)(end - p), "\ngo %s %llu\n", kind,
		              (unsigned long long)budget->amount);
	} else {
		/* go btime B wtime W [binc I winc J] [byoyomi Y]: the increments when
		 * either side has one, the byoyomi when the side to move has one or
		 * there is no increment (sudden death is "byoyomi 0"). */
		const SearchClock *c = &budget->clock;
		bool inc = c->inc[BLACK] > 0 || c->inc[WHITE] > 0;
		p += snprintf(p, (size_t)(end - p), "\ngo btime %lld wtime %lld",
		              (long long)c->time[BLACK], (long long)c->time[WHITE]);
		if (inc)
			p += snprintf(p, (size_t)(end - p), " binc %lld winc %lld",
			              (long long)c->inc[BLACK], (long long)c->inc[WHITE]);
		if (c->byoyomi > 0 || !inc)
			p += snprintf(p, (size_t)(end - p), " byoyomi %lld", (long long)c->byoyomi);
		p += snprintf(p, (size_t)(end - p), "\n");
	}
	if (p >= end) return usi_fail(e, SEARCH_EINVAL, "position command too long");
	*len = (size_t)(p - e->cmd);
	return 0;
}

/* Turns the kept info lines into result lines: legal PVs, distinct moves. */
static void collect_lines(UsiEngine *e, SearchResult *out, const Position *pos, int multipv)
{
	for (int k = 0; k < multipv; k++) {
		const UsiInfo *in = &e->slots[k];
		SearchLine *l = &out->lines[out->nlines];
		bool dup = false;

		if (!e->have[k]) continue;
		if (!pos_is_legal(pos, in->pv[0])) {
			char mv[USI_MOVE_MAX];
			usi_move_write(in->pv[0], mv);
			usi_log_msg(e, "multipv %d starts with the illegal move %s; line dropped",
			            k + 1, mv);
			out->malformed++;
			continue;
		}
		for (int j = 0; j < out->nlines; j++) dup |= out->lines[j].move == in->pv[0];
		if (dup) continue;
		memset(l, 0, sizeof *l);
		l->move = in->pv[0];
		usi_move_write(l->move, l->usi);
		l->multipv = k + 1;
		l->value = in->value;
		l->mate = in->mate;
		if (in->mate)
			l->mate_plies =
			    in->mated ? -(VALUE_MATE - (-in->value)) : VALUE_MATE - in->value;
		l->depth = in->depth;
		l->seldepth = in->seldepth;
		l->nodes = in->nodes;
		/* Keep the PV as far as it stays legal. */
		int n = 0;
		while (n < in->pv_len && n < SEARCH_PV_MAX &&
		       e->scratch.nstates < POS_MAX_STATES - 1 &&
		       pos_is_legal(&e->scratch, in->pv[n])) {
			pos_do_move(&e->scratch, in->pv[n]);
			l->pv[n] = in->pv[n];
			n++;
		}
		for (int i = 0; i < n; i++) pos_undo_move(&e->scratch);
		l->pv_len = n;
		out->nlines++;
	}
}

/*
 * The caller gave up on this search: stop it and wait for the bestmove that
 * ends it, so the engine stays in step and can be kept; kill it otherwise.
 */
static int cancel_search(UsiEngine *e)
{
	const char *line;
	size_t len;
	int64_t deadline = clock_ms() + e->cfg.stop_grace_ms;
	bool answered = false;

	usi_log_msg(e, "search cancelled; sending stop");
	if (usi_write_all(e, "stop\n", 5) == 0) {
		e->draining = true;
		for (;;) {
			int r = usi_read_line(e, deadline, &line, &len);
			if (r < 0 || r == LINE_TIMEOUT) break;
			if (r == LINE_OK && starts_word(line, len, "bestmove", NULL)) {
				answered = true;
				break;
			}
		}
		e->draining = false;
	}
	if (!answered) usi_kill_engine(e, false);
	return usi_fail(e, SEARCH_ECANCELED, "%s: search cancelled", e->path);
}

static int search_once(UsiEngine *e, SearchResult *out, const Position *pos, int multipv,
                       size_t cmd_len, int64_t limit_ms)
{
	int64_t t0, deadline, stop_deadline = 0;
	bool stopped = false;
	int garbage = 0, malformed = 0, rc;
	const char *line, *rest;
	size_t len;
	char ierr[USI_INFO_ERRLEN];

	if (e->pid <= 0 && (rc = start(e)) < 0) return rc;
	if (e->new_game_pending && (rc = ready_and_new_game(e)) < 0) {
		if (rc == SEARCH_ECANCELED)
			usi_kill_engine(e, false); /* a readyok may still come: out of step */
		return rc;
	}
	/* The time and the hard limit count from the position and go, not from
	 * the new game's isready (a clock does not run during it). */
	t0 = clock_ms();
	deadline = t0 + limit_ms;
	e->searched = true;
	if ((rc = usi_write_all(e, e->cmd, cmd_len)) < 0)
		return rc == SEARCH_ECRASH ? crashed(e, "before the search") : rc;
	e->cur_multipv = multipv;
	memset(e->have, 0, sizeof e->have);
	memset(out, 0, offsetof(SearchResult, lines));
	memset(&out->bestmove, 0, sizeof *out - offsetof(SearchResult, bestmove));
	/* e->scratch holds the root after build_commands; PVs are walked from pos. */
	memcpy(&e->scratch, pos, sizeof *pos);

	for (;;) {
		int r = usi_read_line(e, stopped ? stop_deadline : deadline, &line, &len);
		if (r == SEARCH_ECRASH) return crashed(e, "during the search");
		if (r < 0) return r;
		if (r == LINE_CANCEL) return cancel_search(e);
		if (r == LINE_TIMEOUT) {
			if (stopped)
				return usi_fail(
				    e, SEARCH_ETIMEOUT,
				    "%s: no bestmove within %lld ms plus %d ms after stop", e->path,
				    (long long)limit_ms, e->cfg.stop_grace_ms);
			e->stats.timeouts++;
			usi_log_msg(e, "hard limit of %lld ms passed; sending stop",
			            (long long)limit_ms);
			if ((rc = usi_write_all(e, "stop\n", 5)) < 0)
				return rc == SEARCH_ECRASH ? crashed(e, "at stop") : rc;
			stopped = true;
			stop_deadline = clock_ms() + e->cfg.stop_grace_ms;
			continue;
		}
		if (r == LINE_OVERLONG) {
			garbage++;
		} else if (starts_word(line, len, "info", NULL)) {
			if (usi_info_parse(&e->info, line, len, ierr) < 0) {
				if (malformed++ < USI_LOG_MALFORMED)
					usi_log_msg(e, "malformed output skipped: %s", ierr);
			} else {
				if (e->info.nodes > out->nodes) out->nodes = e->info.nodes;
				if (usi_info_is_final(&e->info) && e->info.multipv <= multipv) {
					int k = e->info.multipv - 1;
					memcpy(&e->slots[k], &e->info, sizeof e->info);
					e->have[k] = true;
				}
			}
		} else if (starts_word(line, len, "bestmove", &rest)) {
			break;
		} else {
			garbage++;
		}
		if (garbage + malformed > e->cfg.max_garbage) {
			e->stats.protocol++;
			return usi_fail(e, SEARCH_EPROTOCOL, "%s: more than %d unreadable lines",
			                e->path, e->cfg.max_garbage);
		}
	}
	out->malformed = malformed;
	e->stats.malformed += (uint64_t)malformed;

	/* bestmove <move|resign|win> [ponder <move>] */
	size_t rlen = (size_t)(line + len - rest), i = 0, n;
	while (i < rlen && (rest[i] == ' ' || rest[i] == '\t')) i++;
	for (n = 0; i + n < rlen && rest[i + n] != ' ' && rest[i + n] != '\t'; n++) {
	}
	const char *tok = rest + i;
	if (n == 6 && memcmp(tok, "resign", 6) == 0) {
		out->resign = true;
	} else if (n == 3 && memcmp(tok, "win", 3) == 0) {
		out->win = true;
	} else {
		char serr[SHOGI_ERRLEN];
		rc = usi_move_parse_legal(&out->bestmove, pos, tok, n, serr);
		if (rc == SHOGI_EILLEGAL) {
			e->stats.illegal++;
			return usi_fail(e, SEARCH_EILLEGAL, "%s: illegal bestmove \"%.*s\": %s",
			                e->path, (int)(n > 16 ? 16 : n), tok, serr);
		}
		if (rc < 0) {
			e->stats.protocol++;
			return usi_fail(e, SEARCH_EPROTOCOL, "%s: unreadable bestmove \"%.*s\"",
			                e->path, (int)(n > 16 ? 16 : n), tok);
		}
		usi_move_write(out->bestmove, out->bestmove_usi);
	}
	collect_lines(e, out, pos, multipv);
	if (out->nlines == 0 && out->malformed > 0 && !out->resign && !out->win) {
		e->stats.protocol++;
		return usi_fail(e, SEARCH_EPROTOCOL, "%s: bestmove after only malformed info lines",
		                e->path);
	}
	out->time_ms = (int)(clock_ms() - t0);
	usi_cpu_note(e, false);
	return 0;
}

int usi_engine_analyse(UsiEngine *e, SearchResult *out, const Position *pos,
                       const SearchBudget *budget, int multipv)
{
	size_t cmd_len = 0;
	int64_t limit_ms;
	int rc = 0;

	e->err[0] = '\0';
	if (!out || !pos || !search_budget_ok(budget, pos->side))
		return usi_fail(e, SEARCH_EINVAL, "analyse: bad budget");
	if (multipv < 1 || multipv > SEARCH_MULTIPV_MAX)
		return usi_fail(e, SEARCH_EINVAL, "analyse: MultiPV %d not in 1..%d", multipv,
		                SEARCH_MULTIPV_MAX);
	if (pos->nstates < 1 || pos->nstates > POS_MAX_STATES)
		return usi_fail(e, SEARCH_EINVAL, "analyse: position has no state");
	if (e->cfg.cancel && *e->cfg.cancel)
		return usi_fail(e, SEARCH_ECANCELED, "%s: search cancelled", e->path);
	if ((rc = build_commands(e, &cmd_len, pos, budget, multipv)) < 0) return rc;
	SearchBudget sent = *budget; /* a time-only engine's byoyomi may be longer */
	if (e->time_only && sent.kind == SEARCH_BUDGET_MOVETIME)
		sent.amount = byoyomi_ms(budget->amount);
	limit_ms = usi_engine_hard_limit_ms(&e->cfg, &sent, pos->side);

	for (int attempt = 1; attempt <= 2; attempt++) {
		rc = search_once(e, out, pos, multipv, cmd_len, limit_ms);
		if (rc == 0) {
			out->attempts = attempt;
			e->stats.positions++;
			return 0;
		}
		if (rc == SEARCH_ECANCELED)
			return rc; /* not the engine's fault: no retry, not a failure */
		if (rc == SEARCH_EINVAL || rc == SEARCH_ENOMEM) break;
		/* Past its clock the side's time is gone: a second try cannot help. */
		bool last =
		    attempt == 2 || (rc == SEARCH_ETIMEOUT && budget->kind == SEARCH_BUDGET_CLOCK);
		usi_log_msg(e, "attempt %d failed (%s); engine %s", attempt, search_strerror(rc),
		            last ? "restarted, position failed" : "restarted, position retried");
		usi_kill_engine(e, false);
		if (last) break;
		e->stats.retries++;
	}
	e->stats.failures++;
	return rc;
}

int usi_engine_analyse_spec(UsiEngine *e, SearchResult *out, const char *spec,
                            const SearchBudget *budget, int multipv)
{
	char serr[SHOGI_ERRLEN];
	int rc;

	if (!spec || position_parse(&e->scratch, spec, serr) < 0)
		return usi_fail(e, SEARCH_EINVAL, "position \"%.60s\": %s", spec ? spec : "(null)",
		                spec ? serr : "missing");
	/* analyse overwrites scratch: hand it a copy on the heap (a Position is big). */
	Position *pos = malloc(sizeof *pos);
	if (!pos) return usi_fail(e, SEARCH_ENOMEM, "out of memory");
	memcpy(pos, &e->scratch, sizeof *pos);
	rc = usi_engine_analyse(e, out, pos, budget, multipv);
	free(pos);
	return rc;
}

void usi_engine_new_game(UsiEngine *e)
{
	if (e->cfg.restart_each_game && e->pid > 0 && e->searched) usi_kill_engine(e, true);
	e->new_game_pending = true;
}

const char *usi_engine_name(const UsiEngine *e)
{
	return e->name[0] ? e->name : e->path;
}

const char *usi_engine_last_error(const UsiEngine *e)
{
	return e->err;
}

int usi_engine_pid(const UsiEngine *e)
{
	return e->pid > 0 ? (int)e->pid : -1;
}

void usi_engine_stats(UsiEngineStats *out, const UsiEngine *e)
{
	*out = e->stats;
}

int usi_engine_bench_overhead(double *us_per_position, UsiEngine *e, const Position *pos,
                              const SearchBudget *budget, int multipv, int count)
{
	SearchResult *res = malloc(sizeof *res);
	int64_t t0;
	int rc = 0;

	if (!res) return SEARCH_ENOMEM;
	if (count < 1) count = 1;
	t0 = (clock_ns() / 1000);
	for (int i = 0; i < count && rc == 0; i++)
		rc = usi_engine_analyse(e, res, pos, budget, multipv);
	if (rc == 0) *us_per_position = (double)((clock_ns() / 1000) - t0) / count;
	free(res);
	return rc;
}

/* ---- SearchEngine vtable ---- */

static int ops_analyse(SearchEngine *se, SearchResult *out, const Position *pos,
                       const SearchBudget *budget, int multipv)
{
	return usi_engine_analyse((UsiEngine *)se, out, pos, budget, multipv);
}
static void ops_new_game(SearchEngine *se)
{
	usi_engine_new_game((UsiEngine *)se);
}
static void ops_free(SearchEngine *se)
{
	usi_engine_free((UsiEngine *)se);
}
static const char *ops_name(const SearchEngine *se)
{
	return usi_engine_name((const UsiEngine *)se);
}
static const char *ops_last_error(const SearchEngine *se)
{
	return usi_engine_last_error((const UsiEngine *)se);
}

/* The reading taken when its last search ended (usi_cpu_note): the searches'
 * callers ask right after one, so /proc is read once a search, not twice. */
static int64_t ops_cpu_ms(const SearchEngine *se)
{
	const UsiEngine *e = (const UsiEngine *)se;
	return e->cpu_ended_ms + e->cpu_seen_ms;
}

static const SearchEngineOps usi_engine_ops = {
    .analyse = ops_analyse,
    .new_game = ops_new_game,
    .free = ops_free,
    .name = ops_name,
    .last_error = ops_last_error,
    .cpu_ms = ops_cpu_ms,
};

SearchEngine *usi_engine_search(UsiEngine *e)
{
	return &e->base;
}

/* ---- construction ---- */

void usi_engine_config_init(UsiEngineConfig *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->handshake_timeout_ms = 30000;
	cfg->time_factor = 3.0;
	cfg->slack_ms = 2000;
	cfg->nps_floor = 100000;
	cfg->depth_limit_ms = 600000;
	cfg->stop_grace_ms = 1000;
	cfg->max_garbage = 10000;
}

static bool one_line(const char *s)
{
	return s && !strpbrk(s, "\r\n");
}

void usi_engine_free(UsiEngine *e)
{
	if (!e) return;
	usi_kill_engine(e, true);
	if (e->log_fd >= 0) close(e->log_fd);
	if (e->stderr_fd >= 0 && e->stderr_fd != e->log_fd) close(e->stderr_fd);
	if (e->argv)
		for (char **a = e->argv; *a; a++) free(*a);
	free(e->argv);
	for (int i = 0; e->options && i < e->cfg.noptions; i++) {
		free((char *)e->options[i].name);
		free((char *)e->options[i].value);
	}
	free(e->options);
	forget_listed(e);
	free(e->listed);
	free(e->path);
	free(e->log_path);
	free(e);
}

int usi_engine_open(UsiEngine **out, const UsiEngineConfig *cfg, char *err)
{
	UsiEngine *e;
	int rc = SEARCH_ENOMEM, nargs = 0;

	*out = NULL;
	if (err) err[0] = '\0';
	if (!cfg || !cfg->path || !cfg->path[0]) {
		return errmsg_set(err, SEARCH_ERRLEN, SEARCH_EINVAL,
		                  "usi engine: no program path given");
	}
	e = calloc(1, sizeof *e);
	if (!e) goto nomem;
	e->base.ops = &usi_engine_ops;
	e->cfg = *cfg;
	e->pid = -1;
	e->to_fd = e->from_fd = e->log_fd = e->stderr_fd = -1;
	if (e->cfg.stop_grace_ms < 0) e->cfg.stop_grace_ms = 0;
	if (e->cfg.time_factor < 1.0) e->cfg.time_factor = 1.0;
	if (e->cfg.max_garbage < 0) e->cfg.max_garbage = 0;
	if (!(e->path = strdup(cfg->path))) goto nomem;
	while (cfg->argv && cfg->argv[nargs]) nargs++;
	if (!(e->argv = calloc((size_t)nargs + 2, sizeof *e->argv))) goto nomem;
	if (!(e->argv[0] = strdup(cfg->path))) goto nomem;
	for (int i = 0; i < nargs; i++)
		if (!(e->argv[i + 1] = strdup(cfg->argv[i]))) goto nomem;
	e->cfg.argv = NULL;
	if (cfg->noptions > 0) {
		if (!(e->options = calloc((size_t)cfg->noptions, sizeof *e->options))) goto nomem;
		for (int i = 0; i < cfg->noptions; i++) {
			if (!one_line(cfg->options[i].name) || !one_line(cfg->options[i].value) ||
			    !cfg->options[i].name[0]) {
				snprintf(
				    e->err, sizeof e->err,
				    "usi engine %s: option %d has an empty name or a line break",
				    cfg->path, i + 1);
				e->cfg.noptions = i;
				rc = SEARCH_EINVAL;
				goto fail;
			}
			e->options[i].name = strdup(cfg->options[i].name);
			e->options[i].value = strdup(cfg->options[i].value);
			if (!e->options[i].name || !e->options[i].value) {
				e->cfg.noptions = i + 1;
				goto nomem;
			}
		}
	} else {
		e->cfg.noptions = 0;
	}
	e->cfg.options = NULL;
	if (cfg->log_path) {
		if (!(e->log_path = strdup(cfg->log_path))) goto nomem;
		e->log_fd = open(cfg->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (e->log_fd < 0) {
			errmsg_set(e->err, sizeof e->err, 0, "usi engine log %s: %s", cfg->log_path,
			           strerror(errno));
			rc = SEARCH_EIO;
			goto fail;
		}
		e->stderr_fd = e->log_fd;
	} else {
		e->stderr_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (e->stderr_fd < 0) {
			errmsg_set(e->err, sizeof e->err, 0, "/dev/null: %s", strerror(errno));
			rc = SEARCH_EIO;
			goto fail;
		}
	}
	e->cfg.log_path = NULL;
	e->cfg.path = NULL;
	if ((rc = start(e)) < 0) goto fail;
	*out = e;
	return 0;
nomem:
	rc = SEARCH_ENOMEM;
	if (e) errmsg_set(e->err, sizeof e->err, 0, "usi engine: out of memory");
fail:
	if (err) errmsg_set(err, SEARCH_ERRLEN, 0, "%s", e ? e->err : "usi engine: out of memory");
	usi_engine_free(e);
	return rc;
}

/* ---- several engines ---- */

typedef struct {
	const UsiEngineConfig *cfg;
	UsiEngine *e;
	int rc;
	char err[SEARCH_ERRLEN];
} OpenJob;

static void *open_thread(void *arg)
{
	OpenJob *j = arg;
	j->rc = usi_engine_open(&j->e, j->cfg, j->err);
	return NULL;
}

int usi_engine_open_many(UsiEngine **out, const UsiEngineConfig *cfg, int n, char *err)
{
	if (n < 1 || n > USI_MAX_ENGINES)
		return errmsg_set(err, SEARCH_ERRLEN, SEARCH_EINVAL, "%d engines is not in 1..%d",
		                  n, USI_MAX_ENGINES);
	for (int i = 0; i < n; i++) out[i] = NULL;
	OpenJob *jobs = calloc((size_t)n, sizeof *jobs);
	pthread_t *th = calloc((size_t)n, sizeof *th);
	if (!jobs || !th) {
		free(jobs);
		free(th);
		return errmsg_set(err, SEARCH_ERRLEN, SEARCH_ENOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		jobs[i].cfg = cfg;
		jobs[i].rc = SEARCH_EIO;
		snprintf(jobs[i].err, sizeof jobs[i].err, "could not start a thread");
	}
	/* Handshakes can take seconds (evaluation files): do them side by side. */
	int started = 0;
	for (; started < n; started++)
		if (pthread_create(&th[started], NULL, open_thread, &jobs[started]) != 0) break;
	for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
	/* Which engine failed is said unless every one failed alike (an option
	 * none of them takes, a program that is not there). */
	bool alike = true;
	for (int i = 1; i < n && alike; i++)
		alike = jobs[i].rc == jobs[0].rc && !strcmp(jobs[i].err, jobs[0].err);
	int rc = 0;
	for (int i = 0; i < n; i++)
		if (jobs[i].rc < 0 && rc == 0)
			rc = alike ? errmsg_set(err, SEARCH_ERRLEN, jobs[i].rc, "%s", jobs[i].err)
			           : errmsg_set(err, SEARCH_ERRLEN, jobs[i].rc,
			                        "engine %d of %d: %s", i + 1, n, jobs[i].err);
	for (int i = 0; i < n; i++) {
		if (rc < 0)
			usi_engine_free(jobs[i].e);
		else
			out[i] = jobs[i].e;
	}
	free(jobs);
	free(th);
	return rc;
}
