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
	struct stat st; /* of the version loaded */
	bool valid;     /* the file as loaded parsed */
	Entry *e;
	size_t n, cap;
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

/* Parses the file into t's entries (replacing them). */
static int load(ServerTokens *t, char *err)
{
	t->n = 0;
	t->valid = false;
	FILE *f = fopen(t->path, "r");
	if (!f)
		return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO, "%s: %s", t->path,
		                  strerror(errno));
	if (fstat(fileno(f), &t->st) < 0) {
		fclose(f);
		return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO, "%s: %s", t->path,
		                  strerror(errno));
	}
	char line[512];
	int lineno = 0, rc = 0;
	while (fgets(line, sizeof line, f)) {
		lineno++;
		size_t len = strlen(line);
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
		if (!len || line[0] == '#') continue;
		Entry e = {0};
		size_t nl = len > 65 ? len - 65 : 0;
		if (nl > 5 && !strcmp(line + len - 5, " read")) {
			e.read_only = true;
			nl -= 5;
		}
		bool ok = len > 65 && line[64] == ' ' && name_ok(line + 65, nl);
		for (int i = 0; ok && i < 32; i++) {
			int hi = hexval(line[2 * i]), lo = hexval(line[2 * i + 1]);
			ok = hi >= 0 && lo >= 0;
			e.hash[i] = (uint8_t)(hi << 4 | lo);
		}
		if (!ok) {
			rc = errmsg_set(err, TOKENS_ERRLEN, TOKENS_EPARSE,
			                "%s:%d: not '<64 lowercase hex digits> <name> [read]'",
			                t->path, lineno);
			break;
		}
		memcpy(e.name, line + 65, nl);
		if (array_grow((void **)&t->e, &t->cap, t->n + 1, sizeof *t->e, 16)) {
			rc = errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO, "%s: out of memory",
			                t->path);
			break;
		}
		t->e[t->n++] = e;
	}
	fclose(f);
	if (rc < 0) t->n = 0;
	t->valid = rc == 0;
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
	int rc = load(t, err);
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

bool server_tokens_check(ServerTokens *t, const char *token, char *name)
{
	return server_tokens_check_ro(t, token, name, NULL);
}

bool server_tokens_check_ro(ServerTokens *t, const char *token, char *name, bool *read_only)
{
	uint8_t h[SERVER_SHA256_LEN];
	size_t len = token ? strnlen(token, 256) : 0;
	if (!len || len >= 256) return false;
	server_sha256(token, len, h);
	pthread_mutex_lock(&t->mu);
	struct stat st;
	if (stat(t->path, &st) < 0) {
		t->valid = false;
		t->n = 0;
		memset(&t->st, 0, sizeof t->st);
	} else if (st.st_ino != t->st.st_ino || st.st_size != t->st.st_size ||
	           st.st_mtim.tv_sec != t->st.st_mtim.tv_sec ||
	           st.st_mtim.tv_nsec != t->st.st_mtim.tv_nsec || st.st_dev != t->st.st_dev) {
		load(t, NULL);
	}
	/* Every entry is compared in full: the time does not say which matched. */
	size_t found = SIZE_MAX;
	for (size_t i = 0; i < t->n; i++) {
		uint8_t d = 0;
		for (int k = 0; k < SERVER_SHA256_LEN; k++) d |= (uint8_t)(h[k] ^ t->e[i].hash[k]);
		size_t match = (size_t)0 - (size_t)(d == 0); /* all ones when equal */
		found = (found & ~match) | (i & match);
	}
	bool ok = t->valid && found != SIZE_MAX;
	if (ok && name) memcpy(name, t->e[found].name, sizeof t->e[found].name);
	if (read_only) *read_only = ok && t->e[found].read_only;
	pthread_mutex_unlock(&t->mu);
	return ok;
}

int server_tokens_add(const char *path, const char *name, bool read_only, char *token, char *err)
{
	size_t nl = strlen(name);
	if (!name_ok(name, nl))
		return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EINVAL,
		                  "token name '%.80s': 1..64 letters, digits, '.', '_' or '-'",
		                  name);
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
	int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO, "%s: %s", path, strerror(errno));
	/* The file names who may work: readable by others it tells them whose
	 * hashes to attack. An existing file is made owner-only first. */
	struct stat st;
	if (fstat(fd, &st) < 0 || ((st.st_mode & 077) && fchmod(fd, st.st_mode & 0700) < 0)) {
		int e = errno;
		close(fd);
		return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO,
		                  "%s: readable by others and cannot be made owner-only: %s", path,
		                  strerror(e));
	}
	/* A name names one token: revoking by name must not be ambiguous. */
	ServerTokens cur = {.path = (char *)path};
	int rc = load(&cur, err);
	for (size_t i = 0; rc == 0 && i < cur.n; i++)
		if (!strcmp(cur.e[i].name, name))
			rc = errmsg_set(
			    err, TOKENS_ERRLEN, TOKENS_EEXIST,
			    "%s: a token named '%s' is there already (delete its line to "
			    "replace it)",
			    path, name);
	free(cur.e);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	ssize_t w = write(fd, line, (size_t)len);
	int e = errno;
	if (w != len || fsync(fd) < 0) {
		close(fd);
		return errmsg_set(err, TOKENS_ERRLEN, TOKENS_EIO, "%s: %s", path,
		                  w < 0 ? strerror(e) : "short write");
	}
	close(fd);
	return 0;
}
