/* server/tokens.c — bearer tokens: hashes in a file, re-read on change (tokens.h). */
#include "server/tokens.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/sha256.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"

typedef struct {
	uint8_t hash[SERVER_SHA256_LEN];
	char name[TOKENS_NAME_MAX + 1];
	bool read_only; /* " read" after the name */
} Entry;

struct ServerTokens {
	pthread_mutex_t mu;
	char *path;
	struct stat st; /* of the version last looked at (read or not) */
	Entry *e;       /* the tokens in force: the last version that read */
	size_t n, cap;
	bool failing; /* the version last looked at did not read */
	ServerTokensLogFn log;
	void *log_ctx;
};

const char *server_tokens_strerror(int code)
{
	switch (code) {
	case TOKENS_OK:
		return "success";
	case TOKENS_EIO:
		return "the tokens file cannot be read or written";
	case TOKENS_EPARSE:
		return "a line of the tokens file is not '<sha256 hex> <name> [read]'";
	case TOKENS_EINVAL:
		return "a token name wants 1..64 letters, digits, '.', '_' or '-'";
	case TOKENS_EEXIST:
		return "a token of that name exists";
	case TOKENS_EFILE:
		return "the tokens file is not a regular file of at most 1 MiB";
	case TOKENS_EPERM:
		return "the tokens file is not owner-only or not this user's";
	}
	return "unknown tokens error";
}

static bool name_ok(const char *s, size_t n)
{
	if (n < 1 || n > TOKENS_NAME_MAX) return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			return false;
	}
	return true;
}

static int hexval(char ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

static const char *kind_of(mode_t m)
{
	return S_ISDIR(m)    ? "a directory"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
	       : S_ISFIFO(m) ? "a FIFO"
	       : S_ISSOCK(m) ? "a socket"
	                     : "not a regular file";
}

/*
 * What makes an open file (st: its fstat) acceptable as the tokens file: a
 * regular file of at most TOKENS_FILE_MAX bytes, this user's, with no
 * permission for anyone else. 0, or TOKENS_EFILE / TOKENS_EPERM with the
 * command that fixes it in err.
 */
static int file_ok(const char *path, const struct stat *st, char *err)
{
	if (!S_ISREG(st->st_mode))
		return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EFILE,
		                  "%s: %s, not a tokens file (a regular file)", path,
		                  kind_of(st->st_mode));
	if (st->st_size > TOKENS_FILE_MAX)
		return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EFILE,
		                  "%s: %lld bytes, more than a tokens file holds (at most %d)",
		                  path, (long long)st->st_size, TOKENS_FILE_MAX);
	if (st->st_uid != geteuid())
		return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EPERM,
		                  "%s: owned by user %u, not by this one (%u), who may change it; "
		                  "run: chown %u %s",
		                  path, (unsigned)st->st_uid, (unsigned)geteuid(),
		                  (unsigned)geteuid(), path);
	if (st->st_mode & 077)
		return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EPERM,
		                  "%s: mode %04o lets other users %s it; run: chmod 600 %s", path,
		                  (unsigned)(st->st_mode & 07777),
		                  st->st_mode & 022 ? "change (add a token to)" : "read", path);
	return 0;
}

/* The lines of buf[0..len) as entries (*e, *n, *cap: the caller's array). */
static int parse(const char *path, const char *buf, size_t len, Entry **e, size_t *n, size_t *cap,
                 char *err)
{
	*n = 0;
	int lineno = 0;
	for (size_t off = 0; off < len;) {
		const char *line = buf + off;
		const char *nl = memchr(line, '\n', len - off);
		size_t ll = nl ? (size_t)(nl - line) : len - off;
		off += ll + (nl != NULL);
		lineno++;
		while (ll && line[ll - 1] == '\r') ll--;
		if (!ll || line[0] == '#') continue;
		Entry x = {0};
		size_t nlen = ll > 65 ? ll - 65 : 0;
		if (nlen > 5 && !memcmp(line + ll - 5, " read", 5)) {
			x.read_only = true;
			nlen -= 5;
		}
		bool ok = ll > 65 && line[64] == ' ' && name_ok(line + 65, nlen);
		for (int i = 0; ok && i < 32; i++) {
			int hi = hexval(line[2 * i]), lo = hexval(line[2 * i + 1]);
			ok = hi >= 0 && lo >= 0;
			x.hash[i] = (uint8_t)(hi << 4 | lo);
		}
		if (!ok)
			return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EPARSE,
			                  "%s:%d: not '<64 lowercase hex digits> <name> [read]'",
			                  path, lineno);
		memcpy(x.name, line + 65, nlen);
		if (array_grow((void **)e, cap, *n + 1, sizeof **e, 16))
			return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO, "%s: out of memory",
			                  path);
		(*e)[(*n)++] = x;
	}
	return 0;
}

/*
 * Reads the tokens file at path into *e, *n (*cap: its capacity; the
 * caller's array, replaced only in part on failure): opened without blocking,
 * looked at (file_ok) before a byte is read, then read whole (at most
 * TOKENS_FILE_MAX bytes, however it grows meanwhile). *st (may be NULL) gets
 * the file's fstat when it could be opened.
 */
static int read_tokens(const char *path, struct stat *st, Entry **e, size_t *n, size_t *cap,
                       char *err)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO, "%s: %s", path, strerror(errno));
	struct stat sb;
	int rc = 0;
	char *buf = NULL;
	size_t len = 0;
	if (fstat(fd, &sb) < 0)
		rc = errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO, "%s: %s", path, strerror(errno));
	if (rc == 0 && st) *st = sb;
	if (rc == 0) rc = file_ok(path, &sb, err);
	if (rc == 0 && !(buf = malloc(TOKENS_FILE_MAX + 1)))
		rc = errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO, "%s: out of memory", path);
	while (rc == 0) {
		ssize_t r = read(fd, buf + len, TOKENS_FILE_MAX + 1 - len);
		if (r < 0 && errno == EINTR) continue;
		if (r < 0)
			rc = errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO, "%s: %s", path,
			                strerror(errno));
		if (r <= 0) break;
		len += (size_t)r;
		if (len > TOKENS_FILE_MAX)
			rc = errmsg_set(err, TOKENS_ERRLEN, TOKENS_EFILE,
			                "%s: more than %d bytes, more than a tokens file holds",
			                path, TOKENS_FILE_MAX);
	}
	close(fd);
	if (rc == 0 && memchr(buf, 0, len))
		rc = errmsg_set(err, TOKENS_ERRLEN, TOKENS_EPARSE,
		                "%s: a NUL byte: not a tokens file (text lines)", path);
	if (rc == 0) rc = parse(path, buf, len, e, n, cap, err);
	free(buf);
	return rc;
}

int server_tokens_open(ServerTokens **out, const char *path, char *err)
{
	*out = NULL;
	ServerTokens *t = calloc(1, sizeof *t);
	if (!t || !(t->path = strdup(path))) {
		free(t);
		return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO, "%s: out of memory", path);
	}
	pthread_mutex_init(&t->mu, NULL);
	int rc = read_tokens(t->path, &t->st, &t->e, &t->n, &t->cap, err);
	if (rc < 0) {
		server_tokens_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

void server_tokens_free(ServerTokens *t)
{
	if (!t) return;
	pthread_mutex_destroy(&t->mu);
	free(t->e);
	free(t->path);
	free(t);
}

void server_tokens_set_log(ServerTokens *t, ServerTokensLogFn log, void *ctx)
{
	pthread_mutex_lock(&t->mu);
	t->log = log;
	t->log_ctx = ctx;
	pthread_mutex_unlock(&t->mu);
}

static bool same_version(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mode == b->st_mode && a->st_uid == b->st_uid &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Under t->mu: the file read again when it is not the version last looked
 * at; a version that does not read leaves the tokens in force and is said
 * once (the next look finds it the same version). */
static void refresh(ServerTokens *t)
{
	struct stat st;
	char err[TOKENS_ERRLEN];
	int rc = 0;
	/* stat, not open: it cannot block on a FIFO, and a gone file is a failed
	 * version as any other. */
	if (stat(t->path, &st) < 0) {
		if (t->failing && !t->st.st_ino) return; /* still gone: said already */
		memset(&t->st, 0, sizeof t->st);
		rc = errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO, "%s: %s", t->path, strerror(errno));
	} else {
		if (same_version(&st, &t->st)) return;
		Entry *e = NULL;
		size_t n = 0, cap = 0;
		t->st = st; /* (what the open found, when it could) */
		rc = read_tokens(t->path, &t->st, &e, &n, &cap, err);
		if (rc == 0) {
			free(t->e);
			t->e = e;
			t->n = n;
			t->cap = cap;
			if (t->failing && t->log) {
				char msg[TOKENS_ERRLEN];
				errmsg_set(msg, sizeof msg, 0, "%s: read again: %zu tokens",
				           t->path, n);
				t->log(t->log_ctx, msg);
			}
			t->failing = false;
			return;
		}
		free(e);
	}
	t->failing = true;
	if (t->log) {
		char msg[TOKENS_ERRLEN + 96];
		errmsg_set(msg, sizeof msg, 0, "%s; the tokens read before (%zu) stay in force",
		           err, t->n);
		t->log(t->log_ctx, msg);
	}
}

bool server_tokens_check(ServerTokens *t, const char *token, char *name)
{
	return server_tokens_check_ro(t, token, name, NULL);
}

bool server_tokens_check_ro(ServerTokens *t, const char *token, char *name, bool *read_only)
{
	uint8_t h[SERVER_SHA256_LEN];
	size_t len = token ? strnlen(token, 256) : 0;
	if (read_only) *read_only = false;
	if (!len || len >= 256) return false;
	server_sha256(token, len, h);
	pthread_mutex_lock(&t->mu);
	refresh(t);
	/* Every entry is compared in full: the time does not say which matched. */
	size_t found = SIZE_MAX;
	for (size_t i = 0; i < t->n; i++) {
		uint8_t d = 0;
		for (int k = 0; k < SERVER_SHA256_LEN; k++) d |= (uint8_t)(h[k] ^ t->e[i].hash[k]);
		size_t match = (size_t)0 - (size_t)(d == 0); /* all ones when equal */
		found = (found & ~match) | (i & match);
	}
	bool ok = found != SIZE_MAX;
	if (ok && name) memcpy(name, t->e[found].name, sizeof t->e[found].name);
	if (read_only) *read_only = ok && t->e[found].read_only;
	pthread_mutex_unlock(&t->mu);
	return ok;
}

int server_tokens_add(const char *path, const char *name, bool read_only, char *token, char *err)
{
	size_t nl = strlen(name);
	char shown[128];
	if (!name_ok(name, nl))
		return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EINVAL,
		                  "token name '%s': 1..64 letters, digits, '.', '_' or '-'",
		                  errmsg_escape(shown, sizeof shown, name, nl));
	uint8_t raw[32];
	size_t got = 0;
	while (got < sizeof raw) {
		ssize_t r = getrandom(raw + got, sizeof raw - got, 0);
		if (r < 0 && errno == EINTR) continue;
		if (r < 0)
			return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO, "getrandom: %s",
			                  strerror(errno));
		got += (size_t)r;
	}
	static const char HEX[] = "0123456789abcdef";
	for (int i = 0; i < 32; i++) {
		token[2 * i] = HEX[raw[i] >> 4];
		token[2 * i + 1] = HEX[raw[i] & 15];
	}
	token[TOKENS_TOKEN_LEN] = 0;
	uint8_t h[SERVER_SHA256_LEN];
	server_sha256(token, TOKENS_TOKEN_LEN, h);
	char line[64 + 1 + TOKENS_NAME_MAX + 7];
	for (int i = 0; i < 32; i++) {
		line[2 * i] = HEX[h[i] >> 4];
		line[2 * i + 1] = HEX[h[i] & 15];
	}
	int len =
	    64 + snprintf(line + 64, sizeof line - 64, " %s%s\n", name, read_only ? " read" : "");
	/* Without blocking (a FIFO), and looked at before anything is changed:
	 * a device or another user's file is never made owner-only. */
	int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EISDIR)
		return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EFILE,
		                  "%s: a directory, not a tokens file (a regular file)", path);
	if (fd < 0)
		return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO, "%s: %s", path, strerror(errno));
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) < 0)
		rc = errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO, "%s: %s", path, strerror(errno));
	if (rc == 0) {
		rc = file_ok(path, &st, err);
		/* The file names who may work: readable by others it tells them
		 * whose hashes to attack, writable it lets them add a token. An
		 * existing file of this user's is made owner-only first. */
		if (rc == TOKENS_EPERM && st.st_uid == geteuid()) {
			rc = 0;
			if (fchmod(fd, st.st_mode & 0700) < 0)
				rc = errmsg_set(
				    err, TOKENS_ERRLEN, TOKENS_EIO,
				    "%s: open to others and cannot be made owner-only: %s", path,
				    strerror(errno));
		}
	}
	/* A name names one token: revoking by name must not be ambiguous. */
	Entry *e = NULL;
	size_t n = 0, cap = 0;
	if (rc == 0) rc = read_tokens(path, NULL, &e, &n, &cap, err);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (!strcmp(e[i].name, name))
			rc = errmsg_set(
			    err, TOKENS_ERRLEN, TOKENS_EEXIST,
			    "%s: a token named '%s' is there already (delete its line to "
			    "replace it)",
			    path, name);
	free(e);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	ssize_t w = write(fd, line, (size_t)len);
	int werr = errno;
	if (w != len || fsync(fd) < 0) {
		close(fd);
		return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO, "%s: %s", path,
		                  w < 0 ? strerror(werr) : "short write");
	}
	close(fd);
	return 0;
}
