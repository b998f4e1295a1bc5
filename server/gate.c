/* server/gate.c — the accept policy in front of libmicrohttpd (gate.h). */
#include "server/gate.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shogi/clock.h"
#include "shogi/keymap.h"

/* A connection waiting for its first request's head. */
typedef struct Pending {
	int fd;
	struct sockaddr_in sa;
	int64_t t0; /* ms, accepted */
	struct Pending *prev, *next;
} Pending;

struct Gate {
	GateOptions o;
	struct MHD_Daemon *d;
	int lfd, ep, wake;
	bool listening; /* the listening socket is in the epoll set */
	int64_t relisten_ms;
	pthread_t thread;
	bool started;
	pthread_mutex_t mu; /* counts and per_ip */
	KeyMap per_ip;      /* client address -> open connections */
	unsigned open;
	Pending *head, *tail; /* oldest first */
	char *buf;            /* GATE_HEAD_MAX + 1 bytes of peeked head */
};

static Key addr_key(const struct sockaddr_in *sa)
{
	/* Addresses are not random: the map's hi must tell them apart (it does). */
	return (Key){.lo = 0, .hi = (uint64_t)ntohl(sa->sin_addr.s_addr) + 1};
}

/* Counts one more connection from sa: false (nothing counted) when its
 * address or the whole gate is at its limit; *full says which. */
static bool count_add(Gate *g, const struct sockaddr_in *sa, bool *full)
{
	pthread_mutex_lock(&g->mu);
	*full = g->open >= g->o.max_connections;
	uint32_t *v = NULL;
	bool ok = !*full;
	if (ok && g->o.per_ip) {
		int r = keymap_add(&g->per_ip, addr_key(sa), &v);
		if (r < 0) {
			ok = false;
		} else {
			if (*v == KEYMAP_NONE) *v = 0;
			ok = *v < g->o.per_ip;
			if (ok) ++*v;
		}
	}
	if (ok) g->open++;
	pthread_mutex_unlock(&g->mu);
	return ok;
}

static void count_del(Gate *g, const struct sockaddr_in *sa)
{
	pthread_mutex_lock(&g->mu);
	if (g->open) g->open--;
	if (g->o.per_ip) {
		uint32_t *v = keymap_value(&g->per_ip, addr_key(sa));
		if (v && *v > 1)
			--*v;
		else if (v) /* found just above: it is there to delete */
			(void)keymap_del(&g->per_ip, NULL, addr_key(sa), NULL);
	}
	pthread_mutex_unlock(&g->mu);
}

unsigned gate_open_connections(Gate *g)
{
	pthread_mutex_lock(&g->mu);
	unsigned n = g->open;
	pthread_mutex_unlock(&g->mu);
	return n;
}

void gate_notify(Gate *g, struct MHD_Connection *c, bool started)
{
	/* Counted when accepted (the gate's count goes on in libmicrohttpd). */
	if (started || !g) return;
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
		count_del(g, (const struct sockaddr_in *)ci->client_addr);
}

static const char *reason(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 408:
		return "Request Timeout";
	case 414:
		return "URI Too Long";
	case 431:
		return "Request Header Fields Too Large";
	default:
		return "Service Unavailable";
	}
}

/* Answers {"error": msg} (msg: plain ASCII, no quotes) and closes fd. What
 * the client sent meanwhile is read first, so that the close does not reset
 * the connection before the answer is read. */
static void answer_close(Gate *g, int fd, int status, const char *msg)
{
	char out[512];
	size_t blen = strlen(msg) + 13;
	int n =
	    snprintf(out, sizeof out,
	             "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: "
	             "%zu\r\nConnection: close\r\n%s\r\n{\"error\":\"%s\"}\n",
	             status, reason(status), blen, status == 503 ? "Retry-After: 5\r\n" : "", msg);
	if (n > 0 && (size_t)n < sizeof out)
		(void)!send(fd, out, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	for (int i = 0; i < 64 && recv(fd, g->buf, GATE_HEAD_MAX, MSG_DONTWAIT) > 0; i++) continue;
	shutdown(fd, SHUT_WR);
	close(fd);
	if (g->o.on_status) g->o.on_status(g->o.ctx, status);
}

static void unlink_pending(Gate *g, Pending *p)
{
	if (p->prev)
		p->prev->next = p->next;
	else
		g->head = p->next;
	if (p->next)
		p->next->prev = p->prev;
	else
		g->tail = p->prev;
	epoll_ctl(g->ep, EPOLL_CTL_DEL, p->fd, NULL);
}

/* Drops a waiting connection: answered (status > 0) or closed quietly. */
static void drop(Gate *g, Pending *p, int status, const char *msg)
{
	unlink_pending(g, p);
	if (status)
		answer_close(g, p->fd, status, msg);
	else
		close(p->fd);
	count_del(g, &p->sa);
	free(p);
}

static bool tchar(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* Whether [s, e) starts with name (case-insensitive) followed by ':'. */
static bool header_is(const char *s, const char *e, const char *name)
{
	size_t n = strlen(name);
	return (size_t)(e - s) > n && !strncasecmp(s, name, n) && s[n] == ':';
}

int gate_check_head(const char *b, size_t n, const char **msg)
{
	size_t i = 0;
	while (i + 1 < n && b[i] == '\r' && b[i + 1] == '\n') i += 2; /* empty lines first */
	const char *line = b + i, *end = b + n;
	const char *nl = memchr(line, '\n', (size_t)(end - line));
	if (!nl) {
		if ((size_t)(end - line) > GATE_URL_MAX + 32) {
			*msg = "request line longer than 8 KB";
			return 414;
		}
		return 0;
	}
	/* The request line: METHOD SP TARGET SP HTTP/1.x */
	const char *le = nl > line && nl[-1] == '\r' ? nl - 1 : nl, *p = line;
	while (p < le && tchar((unsigned char)*p)) p++;
	const char *target = p + 1, *t = target;
	if (p == line || p >= le || *p != ' ') goto bad_line;
	while (t < le && (unsigned char)*t > ' ' && *t != 0x7f) t++;
	if (t == target || t >= le || *t != ' ') goto bad_line;
	if ((size_t)(t - target) > GATE_URL_MAX) {
		*msg = "request URL longer than 8 KB";
		return 414;
	}
	if (le - (t + 1) != 8 || strncmp(t + 1, "HTTP/1.", 7) || (t[8] != '0' && t[8] != '1'))
		goto bad_line;
	/* The header lines, up to the empty one. */
	bool length = false, chunked = false;
	for (line = nl + 1;; line = nl + 1) {
		nl = line < end ? memchr(line, '\n', (size_t)(end - line)) : NULL;
		if (!nl) {
			if (n > GATE_HEAD_MAX) {
				*msg = "request head larger than 24 KB";
				return 431;
			}
			return 0;
		}
		le = nl > line && nl[-1] == '\r' ? nl - 1 : nl;
		if (le == line) break;
		for (p = line; p < le && tchar((unsigned char)*p); p++) continue;
		if (p == line || p >= le || *p != ':') {
			*msg = "malformed header line (a name and a colon wanted)";
			return 400;
		}
		for (const char *q = p + 1; q < le; q++)
			if (((unsigned char)*q < ' ' && *q != '\t') || *q == 0x7f) {
				*msg = "control character in a header";
				return 400;
			}
		if (header_is(line, le, "Content-Length")) {
			const char *v = p + 1, *ve = le;
			while (v < ve && (*v == ' ' || *v == '\t')) v++;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
			bool digits = ve > v && ve - v <= 15;
			for (const char *q = v; q < ve && digits; q++)
				digits = *q >= '0' && *q <= '9';
			if (!digits || length) {
				*msg = length ? "Content-Length given twice"
				              : "Content-Length must be a plain number of bytes";
				return 400;
			}
			length = true;
		} else if (header_is(line, le, "Transfer-Encoding")) {
			chunked = true;
		}
	}
	if (length && chunked) {
		*msg = "both Content-Length and Transfer-Encoding";
		return 400;
	}
	return 1;
bad_line:
	*msg = "malformed request line (METHOD /path HTTP/1.1 wanted)";
	return 400;
}

/* Data (or an end) on a waiting connection; ev: the epoll events. */
static void examine(Gate *g, Pending *p, uint32_t ev)
{
	ssize_t n = recv(p->fd, g->buf, GATE_HEAD_MAX + 1, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
	if (n <= 0) {
		drop(g, p, 0, NULL);
		return;
	}
	const char *msg = NULL;
	int r = gate_check_head(g->buf, (size_t)n, &msg);
	if (r == 0 && (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
		drop(g, p, 0, NULL); /* the client will send no more: the head stays partial */
		return;
	}
	if (r == 0) return;
	if (r != 1) {
		drop(g, p, r, msg);
		return;
	}
	unlink_pending(g, p);
	struct sockaddr_in sa = p->sa;
	int fd = p->fd;
	free(p);
	if (MHD_add_connection(g->d, fd, (struct sockaddr *)&sa, sizeof sa) != MHD_YES)
		count_del(g, &sa); /* libmicrohttpd closed it */
}

/* The connection that waited longest makes room; false when none waits. */
static bool shed_oldest(Gate *g)
{
	if (!g->head) return false;
	drop(g, g->head, 503, "the server is full; this connection sent no request in time");
	return true;
}

static void accept_all(Gate *g, int64_t now)
{
	for (int k = 0; k < 256; k++) {
		struct sockaddr_in sa;
		socklen_t sl = sizeof sa;
		int fd = accept4(g->lfd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if ((errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			     errno == ENOMEM) &&
			    !shed_oldest(g)) {
				/* Out of descriptors with nothing to shed: stop listening
				 * for a moment instead of spinning on the socket. */
				epoll_ctl(g->ep, EPOLL_CTL_DEL, g->lfd, NULL);
				g->listening = false;
				g->relisten_ms = now + 100;
			}
			return;
		}
		bool full;
		if (!count_add(g, &sa, &full)) {
			if (full && shed_oldest(g) && count_add(g, &sa, &full)) goto take;
			answer_close(g, fd, 503,
			             full ? "the server is full"
			                  : "too many connections from this address");
			continue;
		}
	take:;
		/* Edge-triggered: a peek leaves the bytes in the socket, so a
		 * level-triggered watch would report a partial head again and again
		 * (a spin over every trickling connection); an edge is new data. */
		Pending *p = calloc(1, sizeof *p);
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = p};
		if (!p || epoll_ctl(g->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			free(p);
			close(fd);
			count_del(g, &sa);
			continue;
		}
		p->fd = fd;
		p->sa = sa;
		p->t0 = now;
		p->prev = g->tail;
		if (g->tail)
			g->tail->next = p;
		else
			g->head = p;
		g->tail = p;
	}
}

static void *gate_main(void *arg)
{
	Gate *g = arg;
	struct epoll_event ev[64];
	for (;;) {
		int64_t now = clock_ms();
		int timeout = 1000;
		if (g->head) {
			int64_t left = g->head->t0 + g->o.head_ms - now;
			timeout = left < 0 ? 0 : left < timeout ? (int)left : timeout;
		}
		if (!g->listening) timeout = timeout < 100 ? timeout : 100;
		int n = epoll_wait(g->ep, ev, 64, timeout);
		now = clock_ms();
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == &g->wake) return NULL;
			if (ev[i].data.ptr == &g->lfd)
				accept_all(g, now);
			else
				examine(g, ev[i].data.ptr, ev[i].events);
		}
		while (g->head && now - g->head->t0 >= (int64_t)g->o.head_ms)
			drop(g, g->head, 408, "the request head did not arrive in time");
		if (!g->listening && now >= g->relisten_ms) {
			struct epoll_event le = {.events = EPOLLIN, .data.ptr = &g->lfd};
			g->listening = epoll_ctl(g->ep, EPOLL_CTL_ADD, g->lfd, &le) == 0;
			if (!g->listening) g->relisten_ms = now + 100;
		}
	}
}

int gate_start(Gate **out, int fd, struct MHD_Daemon *d, const GateOptions *opt)
{
	*out = NULL;
	Gate *g = calloc(1, sizeof *g);
	if (!g) return -1;
	g->o = *opt;
	if (!g->o.head_ms) g->o.head_ms = GATE_HEAD_MS;
	g->d = d;
	g->lfd = fd;
	g->ep = epoll_create1(EPOLL_CLOEXEC);
	g->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	g->buf = malloc(GATE_HEAD_MAX + 1);
	pthread_mutex_init(&g->mu, NULL);
	keymap_init_set(&g->per_ip, true);
	struct epoll_event le = {.events = EPOLLIN, .data.ptr = &g->lfd},
	                   we = {.events = EPOLLIN, .data.ptr = &g->wake};
	int fl = fcntl(fd, F_GETFL);
	/* Set before the thread starts, which reads them (and the server's
	 * connection callbacks read *out): pthread_create orders these writes
	 * before anything the thread does. */
	g->listening = true;
	g->started = true;
	*out = g;
	if (g->ep < 0 || g->wake < 0 || !g->buf || fl < 0 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    epoll_ctl(g->ep, EPOLL_CTL_ADD, fd, &le) < 0 ||
	    epoll_ctl(g->ep, EPOLL_CTL_ADD, g->wake, &we) < 0 ||
	    pthread_create(&g->thread, NULL, gate_main, g) != 0) {
		int e = errno;
		*out = NULL;
		if (g->ep >= 0) close(g->ep);
		if (g->wake >= 0) close(g->wake);
		free(g->buf);
		keymap_free(&g->per_ip);
		pthread_mutex_destroy(&g->mu);
		free(g);
		errno = e;
		return -1;
	}
	return 0;
}

void gate_stop(Gate *g)
{
	if (!g || !g->started) return;
	uint64_t one = 1;
	(void)!write(g->wake, &one, sizeof one);
	pthread_join(g->thread, NULL);
	g->started = false;
	while (g->head) drop(g, g->head, 503, "shutting down");
	close(g->lfd);
	close(g->ep);
	close(g->wake);
}

void gate_free(Gate *g)
{
	if (!g) return;
	gate_stop(g);
	free(g->buf);
	keymap_free(&g->per_ip);
	pthread_mutex_destroy(&g->mu);
	free(g);
}
