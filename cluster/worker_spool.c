/*
 * cluster/worker_spool.c — the worker's results not yet sent, kept in a file
 * (WorkerOptions.spool, docs/worker.md "The spool") so that a worker killed
 * with SIGKILL, or stopped before the coordinator answered, sends them when
 * it starts again.
 *
 * The file is an append-only journal of lines, each written whole by one
 * write(2) (so a killed process leaves whole lines; a torn last line, after a
 * power cut, is ignored):
 *   R LEASE KEY JSON   a finished result (the submit body's entry, one line)
 *   S LEASE KEY        that result was answered (accepted or refused for good)
 * At start the results with an R and no S become leases in hand (their
 * positions DONE, submitted at once); the file is then rewritten with only
 * those (a temporary file, fsync, rename, fsync of the directory), and so
 * again whenever it grows past SPOOL_COMPACT bytes. Appends are fdatasync'ed
 * at most once a second by the HTTP loop: a SIGKILL loses nothing, a power
 * cut at most the last second. A lock file (SPOOL.lock, flock) keeps two
 * workers from sharing one spool.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "cluster/worker_priv.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"

#define SPOOL_COMPACT (4u << 20)

static int spool_write(Worker *w, const char *s, size_t n)
{
	while (n) {
		ssize_t k = write(w->spool_fd, s, n);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) return -1;
		s += k;
		n -= (size_t)k;
		w->spool_size += (size_t)k;
	}
	w->spool_dirty = true;
	return 0;
}

/* One "R" line of position i of lease l into a malloc'd string. */
static char *r_line(const Lease *l, int i)
{
	char *js = json_dumps(l->res[i], JSON_COMPACT);
	if (!js) return NULL;
	size_t n = strlen(js) + strlen(l->l.id) + KEY_HEX_LEN + 8;
	char *line = malloc(n);
	if (line) snprintf(line, n, "R %s %s %s\n", l->l.id, l->l.pos[i].key, js);
	free(js);
	return line;
}

void wk_spool_done(Worker *w, Lease *l, int i)
{
	if (w->spool_fd < 0) return;
	char *line = r_line(l, i);
	if (!line || spool_write(w, line, strlen(line)) < 0) w->spool_failed = true;
	free(line);
}

void wk_spool_sent(Worker *w, Lease *l, int i)
{
	if (w->spool_fd < 0) return;
	char line[WORKER_LEASE_ID_MAX + KEY_HEX_LEN + 8];
	int n = snprintf(line, sizeof line, "S %s %s\n", l->l.id, l->l.pos[i].key);
	if (spool_write(w, line, (size_t)n) < 0) w->spool_failed = true;
}

static int sync_dir(const char *path)
{
	char *copy = strdup(path);
	if (!copy) return -1;
	int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(copy);
	if (fd < 0) return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

/* Rewrites the spool with the DONE results in hand (lock held): a temporary
 * file, fsync, rename, the directory fsync'ed; then appends go to it. */
static int rewrite(Worker *w)
{
	const char *path = w->opt->spool;
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) return -1;
	int old = w->spool_fd;
	w->spool_fd = fd;
	w->spool_size = 0;
	int rc = 0;
	for (Lease *l = w->leases; l && rc == 0; l = l->next)
		for (int i = 0; i < l->l.n && rc == 0; i++) {
			if (l->state[i] != POS_DONE) continue;
			char *line = r_line(l, i);
			rc = line ? spool_write(w, line, strlen(line)) : -1;
			free(line);
		}
	if (rc == 0) rc = fsync(fd);
	if (rc == 0) rc = rename(tmp, path);
	if (rc == 0) rc = sync_dir(path);
	if (rc < 0) {
		close(fd);
		unlink(tmp);
		w->spool_fd = old;
		return -1;
	}
	if (old >= 0) close(old);
	int afd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	close(fd);
	w->spool_fd = afd;
	w->spool_dirty = false;
	return afd < 0 ? -1 : 0;
}

/* One carried result: added to the carried lease of its id (made when new). */
static int carry(Worker *w, const char *id, const char *key, json_t *res)
{
	Lease *l = w->leases;
	while (l && strcmp(l->l.id, id)) l = l->next;
	if (!l) {
		if (!(l = calloc(1, sizeof *l))) return -1;
		snprintf(l->l.id, sizeof l->l.id, "%s", id);
		l->next = w->leases;
		w->leases = l;
	}
	for (int i = 0; i < l->l.n; i++)
		if (!strcmp(l->l.pos[i].key, key)) { /* a second R: the later one stands */
			json_decref(l->res[i]);
			l->res[i] = res;
			return 0;
		}
	if (l->l.n >= WORKER_LEASE_MAX) return -1;
	int n = l->l.n + 1;
	WorkerLeasePos *pos = realloc(l->l.pos, (size_t)n * sizeof *pos);
	if (pos) l->l.pos = pos;
	int *state = pos ? realloc(l->state, (size_t)n * sizeof *state) : NULL;
	if (state) l->state = state;
	json_t **r = state ? realloc(l->res, (size_t)n * sizeof *r) : NULL;
	if (r) l->res = r;
	double *at = r ? realloc(l->doneat, (size_t)n * sizeof *at) : NULL;
	if (at) l->doneat = at;
	if (!at || !(pos[n - 1].sfen = strdup(""))) return -1;
	snprintf(pos[n - 1].key, sizeof pos[n - 1].key, "%s", key);
	state[n - 1] = POS_DONE;
	r[n - 1] = res;
	at[n - 1] = 0; /* old: due at once */
	l->l.n = n;
	l->unsent++;
	return 0;
}

/* Drops the carried result (id, key) after its "S" line. */
static void uncarry(Worker *w, const char *id, const char *key)
{
	for (Lease *l = w->leases; l; l = l->next) {
		if (strcmp(l->l.id, id)) continue;
		for (int i = 0; i < l->l.n; i++)
			if (l->state[i] == POS_DONE && !strcmp(l->l.pos[i].key, key)) {
				json_decref(l->res[i]);
				l->res[i] = NULL;
				l->state[i] = POS_SENT;
				l->unsent--;
			}
	}
}

int wk_spool_parse(char *line, size_t n, char **id, char **key, json_t **res)
{
	*id = *key = NULL;
	*res = NULL;
	if (!n || line[n - 1] != '\n') return -1;
	line[n - 1] = 0;
	if (n < 4 || line[1] != ' ' || memchr(line, 0, n - 1)) return 0;
	char *k = strchr(line + 2, ' ');
	if (!k) return 0;
	*k++ = 0;
	char *js = strchr(k, ' ');
	if (js) *js++ = 0;
	if (strlen(k) != KEY_HEX_LEN - 1 || !line[2] || strlen(line + 2) >= WORKER_LEASE_ID_MAX)
		return 0;
	for (const char *p = k; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return 0;
	if (line[0] == 'S' && !js) {
		*id = line + 2;
		*key = k;
		return 'S';
	}
	if (line[0] != 'R' || !js) return 0;
	json_t *r = json_loads(js, 0, NULL);
	/* What a submit needs of it: the object of this key. */
	if (!json_is_object(r) || !json_is_string(json_object_get(r, "key")) ||
	    strcmp(json_string_value(json_object_get(r, "key")), k)) {
		json_decref(r);
		return 0;
	}
	*id = line + 2;
	*key = k;
	*res = r;
	return 'R';
}

int wk_spool_open(Worker *w)
{
	const char *path = w->opt->spool;
	w->spool_fd = -1;
	if (!path) return 0;
	char lock[4200];
	snprintf(lock, sizeof lock, "%s.lock", path);
	w->spool_lock = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (w->spool_lock < 0)
		return errmsg_set(w->err, WORKER_ERRLEN, WORKER_EINVAL, "spool %s: %s", lock,
		                  strerror(errno));
	if (flock(w->spool_lock, LOCK_EX | LOCK_NB) < 0)
		return errmsg_set(w->err, WORKER_ERRLEN, WORKER_EINVAL,
		                  "spool %s: in use by another worker (%s)", path, strerror(errno));
	FILE *f = fopen(path, "r");
	if (!f && errno != ENOENT)
		return errmsg_set(w->err, WORKER_ERRLEN, WORKER_EINVAL, "spool %s: %s", path,
		                  strerror(errno));
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;
	while (f && rc == 0 && (n = getline(&line, &cap, f)) > 0) {
		char *id, *key;
		json_t *res;
		int kind = wk_spool_parse(line, (size_t)n, &id, &key, &res);
		if (kind < 0) break; /* a torn last line */
		if (kind == 'S') uncarry(w, id, key);
		if (kind == 'R' && carry(w, id, key, res) < 0) {
			json_decref(res);
			rc = -1;
		}
	}
	free(line);
	if (f) fclose(f);
	if (rc < 0)
		return errmsg_set(w->err, WORKER_ERRLEN, WORKER_ENOMEM, "spool %s: %s", path,
		                  "out of memory");
	wk_drop_finished(w);
	for (Lease *l = w->leases; l; l = l->next) w->out->carried += (uint64_t)l->unsent;
	if (rewrite(w) < 0)
		return errmsg_set(w->err, WORKER_ERRLEN, WORKER_EINVAL, "spool %s: %s", path,
		                  strerror(errno));
	return 0;
}

void wk_spool_tend(Worker *w, double now)
{
	if (w->spool_fd < 0) return;
	pthread_mutex_lock(&w->mu);
	if (w->spool_size > SPOOL_COMPACT) {
		if (rewrite(w) < 0) w->spool_failed = true;
	} else if (w->spool_dirty && now - w->spool_synced >= 1000) {
		if (fdatasync(w->spool_fd) < 0) w->spool_failed = true;
		w->spool_dirty = false;
		w->spool_synced = now;
	}
	if (w->spool_failed && !w->spool_said && w->opt->log) {
		fprintf(w->opt->log,
		        "worker: spool %s: a write failed (%s); unsent results are "
		        "kept in memory only\n",
		        w->opt->spool, strerror(errno));
		w->spool_said = true;
	}
	pthread_mutex_unlock(&w->mu);
}

void wk_spool_close(Worker *w)
{
	if (w->spool_fd >= 0) {
		fdatasync(w->spool_fd);
		close(w->spool_fd);
	}
	if (w->spool_lock >= 0) close(w->spool_lock);
	w->spool_fd = w->spool_lock = -1;
}
