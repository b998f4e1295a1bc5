#include "tests/support/support.h"

#include "bookdb/bookdb.h"
#include "bookdb/record.h"
#include "shogi/clock.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "shogi/rng.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <jansson.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

char *ts_mkdtemp(void)
{
	const char *tmp = getenv("TMPDIR");
	char buf[4096];
	snprintf(buf, sizeof buf, "%s/joseki-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(buf)) return NULL;
	return strdup(buf);
}

void ts_book_open(TsBook *b)
{
	char err[BOOKDB_ERRLEN];
	BookDBOptions opt = {.no_sync = true};
	b->dir = ts_mkdtemp();
	snprintf(b->path, sizeof b->path, "%s/book", b->dir);
	if (bookdb_open(&b->db, b->path, &opt, err)) fail_msg("%s", err);
}

void ts_book_close(TsBook *b)
{
	bookdb_free(b->db);
	ts_rmtree(b->dir);
	free(b->dir);
}

void ts_rmtree(const char *path)
{
	if (!path || !*path) return;
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
	if (system(cmd) != 0) fprintf(stderr, "ts_rmtree: could not remove %s\n", path);
}

int ts_files_in(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
	closedir(d);
	return n;
}

const char *ts_joseki(void)
{
	const char *j = getenv("JOSEKI");
	return j && *j ? j : "./joseki";
}

static char *slurp_fd_len(int fd, size_t *out_len)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	if (!buf) return NULL;
	for (;;) {
		if (len + 1 >= cap) {
			cap *= 2;
			char *n = realloc(buf, cap);
			if (!n) {
				free(buf);
				return NULL;
			}
			buf = n;
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR) continue;
		if (r <= 0) break;
		len += (size_t)r;
	}
	buf[len] = 0;
	if (out_len) *out_len = len;
	return buf;
}

static char *slurp_fd(int fd)
{
	return slurp_fd_len(fd, NULL);
}

int ts_run(const char *cmd, char **out, char **err)
{
	char opath[] = "/tmp/joseki-ts-outXXXXXX", epath[] = "/tmp/joseki-ts-errXXXXXX";
	int ofd = mkstemp(opath), efd = mkstemp(epath);
	if (ofd < 0 || efd < 0) return -1;
	unlink(opath);
	unlink(epath);
	pid_t pid = fork();
	if (pid < 0) return -1;
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);
		dup2(in, 0);
		dup2(ofd, 1);
		dup2(efd, 2);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	lseek(ofd, 0, SEEK_SET);
	lseek(efd, 0, SEEK_SET);
	if (out) *out = slurp_fd(ofd);
	if (err) *err = slurp_fd(efd);
	close(ofd);
	close(efd);
	if (WIFEXITED(status)) return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
	return -1;
}

int ts_run_tty(const char *cmd, char **out, char **tty)
{
	char opath[] = "/tmp/joseki-ts-outXXXXXX";
	int ofd = mkstemp(opath);
	if (ofd < 0) return -1;
	unlink(opath);
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	const char *slave = m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0 ? ptsname(m) : NULL;
	pid_t pid = slave ? fork() : -1;
	if (pid < 0) {
		if (m >= 0) close(m);
		close(ofd);
		return -1;
	}
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY), t = open(slave, O_RDWR | O_NOCTTY);
		if (in < 0 || t < 0) _exit(127);
		dup2(in, 0);
		dup2(ofd, 1);
		dup2(t, 2);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	/* Until the last writer closes the slave: then read gives EIO. */
	size_t len = 0, cap = 4096;
	char *text = malloc(cap);
	for (;;) {
		if (len + 1024 > cap) text = realloc(text, cap *= 2);
		assert_non_null(text);
		ssize_t n = read(m, text + len, cap - len - 1);
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) break;
		len += (size_t)n;
	}
	text[len] = 0;
	close(m);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	lseek(ofd, 0, SEEK_SET);
	if (out) *out = slurp_fd(ofd);
	close(ofd);
	if (tty)
		*tty = text;
	else
		free(text);
	if (WIFEXITED(status)) return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
	return -1;
}

int ts_runf(char **out, char **err, const char *fmt, ...)
{
	char cmd[16384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return ts_run(cmd, out, err);
}

char *ts_read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0) return NULL;
	char *buf = slurp_fd_len(fd, len);
	close(fd);
	return buf;
}

int ts_write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f) return -1;
	size_t w = fwrite(data, 1, len, f);
	return fclose(f) == 0 && w == len ? 0 : -1;
}

static int write_proc(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	if (fd < 0) return -1;
	ssize_t w = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return w == (ssize_t)strlen(text) ? 0 : -1;
}

int ts_private_mounts(char *why, size_t n)
{
	static bool done;
	if (done) return 0;
	/* Root: a mount namespace is enough. Elsewhere (or where root lacks
	 * CAP_SYS_ADMIN, as in a container) a user namespace with this user as its
	 * root, which may mount a tmpfs and bind mounts in a mount namespace it owns. */
	if (geteuid() != 0 || unshare(CLONE_NEWNS) != 0) {
		uid_t uid = geteuid();
		gid_t gid = getegid();
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
			snprintf(why, n,
			         "no mount namespace of its own (unshare: %s; user namespaces "
			         "disabled? see sysctl user.max_user_namespaces)",
			         strerror(errno));
			return -1;
		}
		char map[64];
		if (write_proc("/proc/self/setgroups", "deny") != 0 && errno != ENOENT) {
			snprintf(why, n, "/proc/self/setgroups: %s", strerror(errno));
			return -1;
		}
		snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
		if (write_proc("/proc/self/uid_map", map) != 0) {
			snprintf(why, n, "/proc/self/uid_map: %s", strerror(errno));
			return -1;
		}
		snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
		if (write_proc("/proc/self/gid_map", map) != 0) {
			snprintf(why, n, "/proc/self/gid_map: %s", strerror(errno));
			return -1;
		}
	}
	/* Nothing mounted here propagates back to the machine's namespace. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
		snprintf(why, n, "making / private in the new mount namespace: %s",
		         strerror(errno));
		return -1;
	}
	done = true;
	return 0;
}

unsigned long long ts_seed(const char *test_name)
{
	const char *s = getenv("TEST_SEED");
	unsigned long long seed = s && *s ? strtoull(s, NULL, 0) : (unsigned long long)time(NULL);
	fprintf(stderr, "%s: seed %llu (set TEST_SEED to repeat)\n", test_name, seed);
	return seed;
}

json_t *ts_run_json(int expect_rc, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	char *out = NULL, *err = NULL;
	int rc = ts_run(cmd, &out, &err);
	if (rc != expect_rc)
		fprintf(stderr, "command: %s\nstdout: %s\nstderr: %s\n", cmd, out, err);
	assert_int_equal(rc, expect_rc);
	json_t *j = json_loads(out ? out : "", 0, NULL);
	if (!j) fprintf(stderr, "not JSON: %s\n", out);
	assert_non_null(j);
	free(out);
	free(err);
	return j;
}

long long ts_jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	assert_non_null(v);
	return json_integer_value(v);
}

uint64_t ts_rand(uint64_t *state)
{
	return rng_next(state);
}

unsigned ts_kill_span_us(double whole_ms)
{
	double us = whole_ms * 900;
	return us < 1000 ? 1000 : us > 999999 ? 999999 : (unsigned)us;
}

size_t ts_collect(char *p, size_t size, size_t n, void *buf)
{
	TsBuf *b = buf;
	char *d = realloc(b->data, b->len + size * n + 1);
	if (!d) return 0;
	b->data = d;
	memcpy(b->data + b->len, p, size * n);
	b->len += size * n;
	b->data[b->len] = 0;
	return size * n;
}

json_t *ts_work_status(int port, const char *token)
{
	CURL *c = curl_easy_init();
	char url[128], auth[600];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/work/status", port);
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
	struct curl_slist *h = curl_slist_append(NULL, auth);
	TsBuf b = {NULL, 0};
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, ts_collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	long code = 0;
	if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	json_t *j = code == 200 && b.data ? json_loads(b.data, 0, NULL) : NULL;
	free(b.data);
	return j;
}

int ts_occurrences(const char *s, const char *needle)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
	return n;
}

int ts_serve_start(pid_t *pid, FILE **log, const char *book, const char *extra)
{
	return ts_serve_start_said(pid, log, book, extra, NULL, 0);
}

int ts_serve_start_said(pid_t *pid, FILE **log, const char *book, const char *extra, char *said,
                        size_t len)
{
	size_t used = 0;
	if (said && len) said[0] = '\0';
	int fds[2];
	if (pipe(fds) < 0) return 0;
	*pid = fork();
	if (*pid < 0) return 0;
	if (*pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		char cmd[2400];
		snprintf(cmd, sizeof cmd, "exec %s serve %s --listen 127.0.0.1:0 %s", ts_joseki(),
		         book, extra);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	*log = fdopen(fds[0], "r");
	char line[1024];
	while (fgets(line, sizeof line, *log)) {
		size_t n = strlen(line);
		if (said && used + n < len) {
			memcpy(said + used, line, n + 1);
			used += n;
		}
		const char *p = strstr(line, "http://127.0.0.1:");
		if (p && strstr(line, "positions")) return atoi(p + 17);
	}
	return 0;
}

struct TsDrain {
	FILE *log;
	char path[1024];
	pthread_t thread;
};

static void *drain_run(void *arg)
{
	TsDrain *d = arg;
	FILE *out = fopen(d->path, "a");
	char line[1024];
	while (fgets(line, sizeof line, d->log))
		if (out) {
			fputs(line, out);
			fflush(out);
		}
	if (out) fclose(out);
	fclose(d->log);
	return NULL;
}

TsDrain *ts_log_drain(FILE *log, const char *path)
{
	TsDrain *d = calloc(1, sizeof *d);
	assert_non_null(d);
	d->log = log;
	snprintf(d->path, sizeof d->path, "%s", path);
	assert_int_equal(pthread_create(&d->thread, NULL, drain_run, d), 0);
	return d;
}

void ts_log_drain_end(TsDrain *d, double secs)
{
	if (!d) return;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)secs;
	if (pthread_timedjoin_np(d->thread, NULL, &until) == 0)
		free(d);
	else
		pthread_detach(d->thread); /* a grandchild holds the pipe: left to end */
}

char *ts_unwrapped(const char *text)
{
	char *u = strdup(text), *o = u;
	if (!u) abort();
	for (const char *p = text; *p; p++) {
		if (p[0] == '\n' && p[1] == ' ' && p[2] == ' ') {
			*o++ = ' ';
			p += 2;
		} else {
			*o++ = *p;
		}
	}
	*o = 0;
	return u;
}

char *ts_child_said(pid_t *pid, TsDrain **drain, const char *path)
{
	char state[100];
	int st = 0;
	pid_t r = *pid > 0 ? waitpid(*pid, &st, WNOHANG) : -1;
	int was = (int)*pid;
	if (r == 0)
		snprintf(state, sizeof state, "still running");
	else if (r == *pid && WIFEXITED(st))
		snprintf(state, sizeof state, "exited with status %d", WEXITSTATUS(st));
	else if (r == *pid && WIFSIGNALED(st))
		snprintf(state, sizeof state, "killed by signal %d", WTERMSIG(st));
	else
		snprintf(state, sizeof state, "not known (waitpid: %s)", strerror(errno));
	if (r == *pid && r > 0) {
		*pid = 0;
		ts_log_drain_end(*drain, 5);
		*drain = NULL;
	}
	size_t len = 0;
	char *text = ts_read_file(path, &len);
	const char *tail = text ? text : "";
	if (len > 2000) tail = text + len - 2000;
	char *out = NULL;
	assert_true(asprintf(&out, "the child %d %s; its stderr (%s) ends:\n%s", was, state, path,
	                     tail) >= 0);
	free(text);
	return out;
}

pid_t ts_spawn(char *const argv[], const char *out, const char *err, bool append)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int flags = O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC);
		int in = open("/dev/null", O_RDONLY);
		int o = open(out ? out : "/dev/null", flags, 0644);
		int e = open(err ? err : "/dev/null", flags, 0644);
		dup2(in, 0);
		dup2(o, 1);
		dup2(e, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

bool ts_run_killed(char *const argv[], long long span_ms, uint64_t *rng)
{
	pid_t pid = ts_spawn(argv, NULL, NULL, false);
	long long ms = (long long)(ts_rand(rng) % (uint64_t)(span_ms > 0 ? span_ms : 1));
	struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&d, NULL);
	kill(pid, SIGKILL);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status)) return true;
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return false;
}

const char *ts_real_engine(const char *name)
{
	static char path[2][64];
	int i = strcmp(name, "gpsusi") == 0;
	snprintf(path[i], sizeof path[i], "/usr/games/%s", name);
	if (access(path[i], X_OK) != 0)
		fail_msg("%s is not installed (%s: %s): tools/install-deps.sh installs Debian's %s",
		         name, path[i], strerror(errno), i ? "gpsshogi" : "fairy-stockfish");
	return path[i];
}

void ts_gpsshogi_home(const char *dir)
{
	char home[1024], data[1100];
	snprintf(home, sizeof home, "%s/gpsshogi-home", dir);
	snprintf(data, sizeof data, "%s/data", home);
	if (mkdir(home, 0755) < 0 && errno != EEXIST) fail_msg("%s: %s", home, strerror(errno));
	if (symlink("/usr/share/gpsshogi-data/data", data) < 0 && errno != EEXIST)
		fail_msg("%s: %s", data, strerror(errno));
	setenv("GPSSHOGI_HOME", home, 1);
}

long ts_book_check_thought(const char *dir, int max_depth, long *nonzero)
{
	BookDB *db = NULL;
	BookDBOptions o = {.read_only = true};
	char err[BOOKDB_ERRLEN];
	if (bookdb_open(&db, dir, &o, err) < 0) fail_msg("%s", err);
	BookTxn *t = NULL;
	BookIter *it = NULL;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(bookdb_iter_open(&it, t), 0);
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	long thought = 0, nz = 0;
	Key k;
	const uint8_t *val;
	size_t len;
	int rc;
	while ((rc = bookdb_iter_next(it, &k, &val, &len)) == 1) {
		char hex[KEY_HEX_LEN], perr[SHOGI_ERRLEN];
		key_to_hex(k, hex);
		if (bookdb_record_decode(rec, val, len) < 0)
			fail_msg("record %s: undecodable", hex);
		if (!(rec->flags & BOOKDB_REC_THOUGHT)) continue;
		thought++;
		if (bookdb_record_position(pos, rec, perr) < 0)
			fail_msg("record %s: %s", hex, perr);
		int evals = 0, best_depth = 0, best_eval = -VALUE_INFINITE;
		for (int i = 0; i < rec->nmoves; i++) {
			const BookMove *m = &rec->moves[i];
			if (!(m->flags & BOOKDB_MOVE_EVAL) || m->source != BOOKDB_SOURCE_ENGINE)
				continue;
			char mv[USI_MOVE_MAX];
			usi_move_write(m->move, mv);
			if (!pos_is_legal(pos, m->move))
				fail_msg("record %s: engine move %s is not legal there", hex, mv);
			if (m->depth < 1 || (max_depth && m->depth > max_depth))
				fail_msg("record %s: move %s has depth %d (1..%d wanted)", hex, mv,
				         m->depth, max_depth ? max_depth : 255);
			if (m->eval <= -VALUE_MATE || m->eval >= VALUE_MATE)
				fail_msg("record %s: move %s has eval %d", hex, mv, m->eval);
			if (m->eval > best_eval) best_eval = m->eval, best_depth = m->depth;
			evals++;
			nz += m->eval != 0;
		}
		if (!evals) fail_msg("record %s is thought but holds no engine evaluation", hex);
		if (rec->think_depth < 1 || (max_depth && rec->think_depth > max_depth))
			fail_msg("record %s: think depth %d (best line depth %d)", hex,
			         rec->think_depth, best_depth);
	}
	assert_int_equal(rc, 0);
	free(rec);
	free(pos);
	bookdb_iter_free(it);
	bookdb_txn_abort(t);
	bookdb_free(db);
	if (nonzero) *nonzero = nz;
	return thought;
}

/* Appends what fd has to say within timeout_ms (-1: until EOF) to the
 * NUL-terminated *text; returns 1 if something came, 0 on timeout, -1 at EOF or
 * on an error. */
static int read_some(int fd, char **text, size_t *len, size_t *cap, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int r = poll(&p, 1, timeout_ms);
	if (r == 0) return 0;
	if (r < 0) return errno == EINTR ? 0 : -1;
	if (*len + 4096 + 1 > *cap) {
		size_t ncap = (*cap ? *cap * 2 : 8192) + 4096;
		char *t = realloc(*text, ncap);
		if (!t) return -1;
		*text = t;
		*cap = ncap;
	}
	ssize_t n = read(fd, *text + *len, 4096);
	if (n < 0) return errno == EINTR || errno == EAGAIN ? 0 : -1;
	if (n == 0) return -1;
	*len += (size_t)n;
	(*text)[*len] = 0;
	return 1;
}

size_t ts_file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

size_t ts_resident_pages(const char *path)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = ((size_t)st.st_size + page - 1) / page;
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(map != MAP_FAILED);
	unsigned char *in = malloc(pages);
	assert_non_null(in);
	assert_int_equal(mincore(map, (size_t)st.st_size, in), 0);
	size_t n = 0;
	for (size_t i = 0; i < pages; i++) n += in[i] & 1;
	free(in);
	munmap(map, (size_t)st.st_size);
	close(fd);
	return n;
}

void ts_flip_byte(const char *path, long off, int mask)
{
	FILE *f = fopen(path, "r+b");
	assert_non_null(f);
	assert_int_equal(fseek(f, off, SEEK_SET), 0);
	int ch = fgetc(f);
	assert_true(ch != EOF);
	assert_int_equal(fseek(f, off, SEEK_SET), 0);
	fputc(ch ^ mask, f);
	assert_int_equal(fclose(f), 0);
}

bool ts_wait_file(const char *path, size_t from, const char *needle, int timeout_ms)
{
	int64_t end = clock_ms() + timeout_ms;
	for (;;) {
		size_t len = 0;
		char *text = ts_read_file(path, &len);
		bool found = text && len >= from && strstr(text + from, needle);
		if (found || clock_ms() > end) {
			if (!found)
				fprintf(
				    stderr,
				    "ts_wait_file: no \"%s\" in %s within %d ms; it holds:\n%s\n",
				    needle, path, timeout_ms,
				    text ? text + (len >= from ? from : len) : "");
			free(text);
			return found;
		}
		free(text);
		usleep(20000);
	}
}

bool ts_read_until(FILE *f, char **text, size_t *len, const char *needle, int timeout_ms)
{
	/* What stdio has buffered already is read first, then the descriptor. */
	int fd = fileno(f);
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	size_t from = *len, cap = *text ? *len + 1 : 0;
	bool found = false;
	int64_t end = clock_ms() + timeout_ms;
	for (;;) {
		int c;
		while ((c = getc(f)) != EOF) {
			if (*len + 2 > cap) {
				cap = cap ? cap * 2 : 4096;
				char *t = realloc(*text, cap);
				assert_non_null(t);
				*text = t;
			}
			(*text)[(*len)++] = (char)c;
			(*text)[*len] = 0;
			if (c == '\n' && strstr(*text + from, needle)) break;
		}
		if (*text && strstr(*text + from, needle)) {
			found = true;
			break;
		}
		if (feof(f) || (ferror(f) && errno != EAGAIN)) break;
		clearerr(f);
		int64_t left = end - clock_ms();
		if (left <= 0) break;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		poll(&p, 1, (int)left);
	}
	clearerr(f);
	fcntl(fd, F_SETFL, fl);
	return found;
}

bool ts_wait_output(FILE *f, const char *needle, int timeout_ms)
{
	char *text = NULL;
	size_t len = 0;
	bool found = ts_read_until(f, &text, &len, needle, timeout_ms);
	if (!found)
		fprintf(stderr, "ts_wait_output: no \"%s\" within %d ms; got:\n%s\n", needle,
		        timeout_ms, text ? text : "");
	free(text);
	return found;
}

bool ts_wait_flocked(const char *path, pid_t alive, int timeout_ms)
{
	struct stat st;
	int64_t end = clock_ms() + timeout_ms;
	while (clock_ms() < end) {
		siginfo_t si = {0};
		if (alive > 0 &&
		    waitid(P_PID, (id_t)alive, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == alive)
			return false; /* it has ended (not reaped: the caller waits for it) */
		if (stat(path, &st) == 0) {
			/* "1: FLOCK  ADVISORY  READ 1234 08:01:5678 0 EOF"; a waiter's line
			 * reads "1: -> FLOCK ..." and holds nothing. */
			FILE *f = fopen("/proc/locks", "r");
			char line[256];
			bool held = false;
			while (f && !held && fgets(line, sizeof line, f)) {
				char kind[16];
				unsigned maj, min;
				unsigned long long ino;
				if (sscanf(line, "%*s %15s %*s %*s %*d %x:%x:%llu", kind, &maj,
				           &min, &ino) == 4 &&
				    !strcmp(kind, "FLOCK"))
					held = ino == (unsigned long long)st.st_ino &&
					       makedev(maj, min) == st.st_dev;
			}
			if (f) fclose(f);
			if (held) return true;
		}
		usleep(5000);
	}
	return false;
}

int ts_child_start(TsChild *c, const char *cmd)
{
	memset(c, 0, sizeof *c);
	int in[2], out[2];
	if (pipe(in) < 0) return -1;
	if (pipe(out) < 0) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	c->pid = fork();
	if (c->pid < 0) return -1;
	if (c->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in_fd = in[1];
	c->out_fd = out[0];
	c->text = calloc(1, 1);
	c->cap = 1;
	return 0;
}

void ts_child_send(TsChild *c, const char *text)
{
	size_t n = strlen(text);
	assert_true(c->in_fd >= 0);
	assert_int_equal(write(c->in_fd, text, n), (ssize_t)n);
}

const char *ts_child_wait(TsChild *c, const char *needle, int timeout_ms)
{
	int64_t end = clock_ms() + timeout_ms;
	for (;;) {
		const char *hit = strstr(c->text + c->mark, needle);
		if (hit) {
			c->mark = (size_t)(hit - c->text) + strlen(needle);
			return hit;
		}
		int64_t left = end - clock_ms();
		if (left <= 0 || read_some(c->out_fd, &c->text, &c->len, &c->cap, (int)left) < 0) {
			fprintf(stderr,
			        "ts_child_wait: no \"%s\" within %d ms; output so far:\n%s\n",
			        needle, timeout_ms, c->text);
			return NULL;
		}
	}
}

int ts_child_end(TsChild *c, bool close_stdin, int timeout_ms)
{
	if (close_stdin && c->in_fd >= 0) {
		close(c->in_fd);
		c->in_fd = -1;
	}
	int64_t end = clock_ms() + timeout_ms;
	int status = 0, rc = -1;
	bool eof = false;
	for (;;) {
		int64_t left = end - clock_ms();
		if (left <= 0) {
			kill(c->pid, SIGKILL);
			waitpid(c->pid, &status, 0);
			fprintf(stderr, "ts_child_end: still running after %d ms: killed\n",
			        timeout_ms);
			break;
		}
		if (!eof)
			eof = read_some(c->out_fd, &c->text, &c->len, &c->cap,
			                (int)(left < 50 ? left : 50)) < 0;
		else
			usleep(2000);
		if (eof && waitpid(c->pid, &status, WNOHANG) == c->pid) {
			rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			break;
		}
	}
	close(c->out_fd);
	c->out_fd = -1;
	return rc;
}

void ts_child_free(TsChild *c)
{
	if (c->in_fd >= 0) close(c->in_fd);
	if (c->out_fd >= 0) close(c->out_fd);
	free(c->text);
	memset(c, 0, sizeof *c);
	c->in_fd = c->out_fd = -1;
}

TsProgress *ts_progress_new(void)
{
	TsProgress *p = calloc(1, sizeof *p);
	assert_non_null(p);
	pthread_mutex_init(&p->mu, NULL);
	return p;
}

void ts_progress_note(TsProgress *p, const char *phase, uint64_t done)
{
	pthread_mutex_lock(&p->mu);
	if (p->n < TS_PROGRESS_MAX) {
		p->phase[p->n] = phase;
		p->done[p->n] = done;
	}
	p->n++;
	pthread_mutex_unlock(&p->mu);
}

size_t ts_progress_count(const TsProgress *p, const char *phase)
{
	size_t k = 0;
	for (size_t i = 0; i < p->n && i < TS_PROGRESS_MAX; i++) k += !strcmp(p->phase[i], phase);
	return k;
}

uint64_t ts_progress_last(const TsProgress *p)
{
	assert_true(p->n > 0 && p->n <= TS_PROGRESS_MAX);
	return p->done[p->n - 1];
}

void ts_progress_check(const TsProgress *p, const char *const *phases)
{
	assert_true(p->n > 0);
	assert_true(p->n <= TS_PROGRESS_MAX);
	for (size_t i = 0; i < p->n; i++) {
		bool known = false;
		for (size_t k = 0; phases[k]; k++) known = known || !strcmp(p->phase[i], phases[k]);
		if (!known) fail_msg("progress call %zu: unexpected phase \"%s\"", i, p->phase[i]);
		/* the count of this phase never went down */
		for (size_t j = 0; j < i; j++)
			if (!strcmp(p->phase[j], p->phase[i]) && p->done[j] > p->done[i])
				fail_msg("progress call %zu (%s): %llu after %llu", i, p->phase[i],
				         (unsigned long long)p->done[i],
				         (unsigned long long)p->done[j]);
		assert_int_equal(!strcmp(p->phase[i], "done"), i == p->n - 1);
	}
}

int ts_stderr_begin(const char *path)
{
	fflush(stderr);
	int saved = dup(2);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(saved >= 0 && fd >= 0);
	assert_int_equal(dup2(fd, 2), 2);
	close(fd);
	return saved;
}

char *ts_stderr_end(int saved, const char *path)
{
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	char *text = ts_read_file(path, NULL);
	assert_non_null(text);
	return text;
}

void ts_some_move(const char *sfen, char *usi)
{
	Position *pos = malloc(sizeof *pos);
	Move mv[MOVEGEN_MAX];
	assert_non_null(pos);
	assert_int_equal(sfen_parse(pos, sfen, NULL, NULL), 0);
	assert_true(movegen_legal(pos, mv) > 0);
	usi_move_write(mv[0], usi);
	free(pos);
}

BookMove *ts_record_move(BookRecord *rec, BookTxn *txn, const Position *pos, Move m)
{
	if (bookdb_get(rec, txn, pos_key(pos)) != 0) bookdb_record_init(rec, pos);
	int k = 0;
	while (k < rec->nmoves && rec->moves[k].move != m) k++;
	if (k == rec->nmoves) {
		memset(&rec->moves[k], 0, sizeof rec->moves[k]);
		rec->moves[k].move = m;
		rec->nmoves++;
	}
	return &rec->moves[k];
}

void ts_plant(const char *dir, const char *spec, const char *moves, int depth)
{
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	assert_non_null(pos);
	assert_non_null(rec);
	if (position_parse(pos, spec, NULL) != 0) fail_msg("bad position %s", spec);
	bookdb_record_init(rec, pos);
	if (depth > 0) {
		rec->flags = BOOKDB_REC_THOUGHT;
		rec->think_depth = (uint8_t)depth;
	}
	char *copy = strdup(moves), *save = NULL;
	for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		char usi[16], ev[16] = "-";
		unsigned count = 0;
		if (sscanf(t, "%15[^:]:%15[^:]:%u", usi, ev, &count) < 1)
			fail_msg("bad move %s", t);
		BookMove *m = &rec->moves[rec->nmoves++];
		memset(m, 0, sizeof *m);
		if (usi_move_parse_legal(&m->move, pos, usi, strlen(usi), NULL) != 0)
			fail_msg("%s is not legal in %s", usi, spec);
		if (strcmp(ev, "-")) {
			m->flags |= BOOKDB_MOVE_EVAL;
			m->eval = (int16_t)atoi(ev);
			m->depth = (uint8_t)(depth > 0 ? depth : 1);
		} else if (!count) {
			count = 1;
		}
		if (count) {
			m->flags |= BOOKDB_MOVE_STATS;
			m->count = m->wins = count;
		}
	}
	free(copy);
	BookDB *db;
	if (bookdb_open(&db, dir, NULL, NULL) != 0) fail_msg("cannot open %s", dir);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
	assert_int_equal(bookdb_put(t, pos_key(pos), rec), 0);
	assert_int_equal(bookdb_txn_commit(t), 0);
	bookdb_free(db);
	free(rec);
	free(pos);
}

Key ts_line_key(const char *line)
{
	Position *pos = malloc(sizeof *pos);
	char err[SHOGI_ERRLEN];
	assert_non_null(pos);
	if (position_parse(pos, line, err) < 0) fail_msg("%s: %s", line, err);
	Key k = pos_key(pos);
	free(pos);
	return k;
}

bool ts_book_thought(const char *book, const char *hex)
{
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	BookDBOptions ro = {.read_only = true};
	assert_int_equal(bookdb_open(&db, book, &ro, err), 0);
	BookTxn *t;
	BookRecord *rec = malloc(sizeof *rec);
	Key k;
	assert_int_equal(key_from_hex(&k, hex), 0);
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	bool th = bookdb_get(rec, t, k) == 0 && (rec->flags & BOOKDB_REC_THOUGHT);
	bookdb_txn_abort(t);
	bookdb_free(db);
	free(rec);
	return th;
}
