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
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shogi/clock.h"
#include "shogi/grow.h"
#include "shogi/keymap.h"

/* Where a connection is. */
typedef enum {
	C_WAITING,   /* here: its first request's head not whole yet */
	C_HANDED,    /* given to libmicrohttpd, which has not taken it yet */
	C_READING,   /* libmicrohttpd reads a request, head or body */
	C_ANSWERING, /* the server answers a whole request: no deadline */
	C_IDLE,      /* kept alive between requests */
	C_SHED,      /* closed by the gate while libmicrohttpd held it: counts released */
	C_DEAD,      /* dropped while waiting: freed after the events at hand */
} ConnState;

typedef struct Addr Addr;

typedef struct Conn {
	int fd;
	struct sockaddr_in sa;
	Addr *a; /* its address's record while it counts (NULL once shed) */
	ConnState state;
	bool later;                 /* a request of it was answered: the next is a later one */
	int64_t t0;                 /* ms, accepted */
	int64_t deadline;           /* ms: closed then unless answered (0: none) */
	struct Conn *prev, *next;   /* the waiting queue (oldest first) or the held list */
	struct Conn *aprev, *anext; /* its address's connections */
} Conn;

/* A client address with connections open. */
struct Addr {
	uint32_t ip;  /* host order */
	uint32_t idx; /* in Gate.addrs */
	unsigned n;   /* connections open */
	Conn *conns;
	Addr *bprev, *bnext; /* the addresses with as many connections open */
};

struct Gate {
	GateOptions o;
	struct MHD_Daemon *d;
	int lfd, ep, wake;
	bool listening; /* the listening socket is in the epoll set */
	int64_t relisten_ms;
	pthread_t thread;
	bool started;
	atomic_bool stopping;
	Conn *dead;         /* dropped connections an event at hand may still name */
	pthread_mutex_t mu; /* everything below (and the connections' fields) */
	KeyMap per_ip;      /* client address -> its index in addrs */
	Addr **addrs;       /* the addresses with connections open */
	size_t naddrs, caddrs;
	Addr **bucket; /* bucket[k]: the addresses with k connections open */
	unsigned top;  /* the most connections one address has open */
	unsigned open;
	Conn *head, *tail; /* waiting here, oldest first */
	Conn *held;        /* in libmicrohttpd */
	Conn **byfd;       /* the connection of a descriptor, from accept to close */
	size_t nbyfd;
	int64_t next_due; /* no held connection's deadline is earlier */
	int64_t wake_at;  /* when the gate's thread wakes next */
	char *buf;        /* GATE_HEAD_MAX + 1 bytes of peeked head */
};

static Key addr_key(uint32_t ip)
{
	/* Addresses are not random: the map's hi must tell them apart (it does). */
	return (Key){.lo = 0, .hi = (uint64_t)ip + 1};
}

static Addr *addr_of(Gate *g, uint32_t ip)
{
	uint32_t *v = keymap_value(&g->per_ip, addr_key(ip));
	return v ? g->addrs[*v] : NULL;
}

static void bucket_unlink(Gate *g, Addr *a)
{
	if (a->bprev)
		a->bprev->bnext = a->bnext;
	else
		g->bucket[a->n] = a->bnext;
	if (a->bnext) a->bnext->bprev = a->bprev;
}

static void bucket_push(Gate *g, Addr *a)
{
	a->bprev = NULL;
	a->bnext = g->bucket[a->n];
	if (a->bnext) a->bnext->bprev = a;
	g->bucket[a->n] = a;
}

/* Counts one more connection, c, from its address (mutex held): 0, or 1
 * when the gate is full, 2 when the address has its share (nothing counted
 * then). */
static int count_add(Gate *g, Conn *c)
{
	if (g->open >= g->o.max_connections) return 1;
	uint32_t ip = ntohl(c->sa.sin_addr.s_addr), *v = NULL;
	Addr *a = addr_of(g, ip);
	if (!a) {
		if (array_grow((void **)&g->addrs, &g->caddrs, g->naddrs + 1, sizeof *g->addrs,
		               64) ||
		    !(a = calloc(1, sizeof *a)))
			return 1;
		if (keymap_add(&g->per_ip, addr_key(ip), &v) < 0) {
			free(a);
			return 1;
		}
		a->ip = ip;
		a->idx = *v = (uint32_t)g->naddrs;
		g->addrs[g->naddrs++] = a;
	} else if (g->o.per_ip && a->n >= g->o.per_ip) {
		return 2;
	} else {
		bucket_unlink(g, a);
	}
	a->n++;
	bucket_push(g, a);
	if (a->n > g->top) g->top = a->n;
	c->a = a;
	c->aprev = NULL;
	c->anext = a->conns;
	if (a->conns) a->conns->aprev = c;
	a->conns = c;
	g->open++;
	return 0;
}

/* Stops counting c (mutex held). */
static void count_del(Gate *g, Conn *c)
{
	Addr *a = c->a;
	if (!a) return;
	c->a = NULL;
	if (c->aprev)
		c->aprev->anext = c->anext;
	else
		a->conns = c->anext;
	if (c->anext) c->anext->aprev = c->aprev;
	g->open--;
	bucket_unlink(g, a);
	if (a->n == g->top && !g->bucket[a->n]) g->top--;
	if (--a->n) {
		bucket_push(g, a);
		return;
	}
	/* Its last: the record goes, the last one takes its place. */
	Addr *last = g->addrs[--g->naddrs];
	g->addrs[a->idx] = last;
	last->idx = a->idx;
	uint32_t *v = keymap_value(&g->per_ip, addr_key(last->ip));
	if (v) *v = last->idx;
	(void)keymap_del(&g->per_ip, NULL, addr_key(a->ip), NULL); /* it is there */
	free(a);
}

unsigned gate_open_connections(Gate *g)
{
	pthread_mutex_lock(&g->mu);
	unsigned n = g->open;
	pthread_mutex_unlock(&g->mu);
	return n;
}

static const char *reason(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 408:
		return "Request Timeout";
	case 411:
		return "Length Required";
	case 414:
		return "URI Too Long";
	case 431:
		return "Request Header Fields Too Large";
	case 501:
		return "Not Implemented";
	default:
		return "Service Unavailable";
	}
}

/* Sends {"error": msg} (msg: plain ASCII, no quotes) with status on fd, as
 * far as the socket takes it at once, and reads what the client sent
 * meanwhile, so that a close does not reset the connection before the
 * answer is read. */
static void answer(Gate *g, int fd, int status, const char *msg)
{
	char out[512];
	size_t blen = strlen(msg) + 13;
	/* As the server's own answers are: not to be cached, CORS unless off. */
	int n = snprintf(out, sizeof out,
	                 "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: "
	                 "%zu\r\nConnection: close\r\nCache-Control: no-store\r\n%s%s\r\n"
	                 "{\"error\":\"%s\"}\n",
	                 status, reason(status), blen,
	                 g->o.cors ? "Access-Control-Allow-Origin: *\r\n" : "",
	                 status == 503 ? "Retry-After: 5\r\n" : "", msg);
	if (n > 0 && (size_t)n < sizeof out)
		(void)!send(fd, out, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	for (int i = 0; i < 64 && recv(fd, g->buf, GATE_HEAD_MAX, MSG_DONTWAIT) > 0; i++) continue;
	if (g->o.on_status) g->o.on_status(g->o.ctx, status);
}

/* Answers a connection the gate holds and closes it. */
static void answer_close(Gate *g, int fd, int status, const char *msg)
{
	answer(g, fd, status, msg);
	shutdown(fd, SHUT_WR);
	close(fd);
}

static void list_unlink(Conn **head, Conn **tail, Conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		*head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else if (tail)
		*tail = c->prev;
	c->prev = c->next = NULL;
}

static void held_push(Gate *g, Conn *c)
{
	c->prev = NULL;
	c->next = g->held;
	if (g->held) g->held->prev = c;
	g->held = c;
}

/* Forgets a connection (mutex held): its counts (unless shed), its
 * descriptor's record; then frees it, or, waiting here, keeps it dead until
 * the events at hand are done (one of them may name it). */
static void conn_free(Gate *g, Conn *c, bool in_queue)
{
	if (in_queue)
		list_unlink(&g->head, &g->tail, c);
	else
		list_unlink(&g->held, NULL, c);
	count_del(g, c); /* nothing when it was shed */
	if ((size_t)c->fd < g->nbyfd && g->byfd[c->fd] == c) g->byfd[c->fd] = NULL;
	if (in_queue) {
		c->state = C_DEAD;
		c->next = g->dead;
		g->dead = c;
	} else {
		free(c);
	}
}

/* Drops a waiting connection (mutex held): answered (status > 0) or closed
 * quietly. */
static void drop(Gate *g, Conn *c, int status, const char *msg)
{
	epoll_ctl(g->ep, EPOLL_CTL_DEL, c->fd, NULL);
	if (status)
		answer_close(g, c->fd, status, msg);
	else
		close(c->fd);
	conn_free(g, c, true);
}

/* Closes a connection libmicrohttpd holds (mutex held: it cannot close the
 * descriptor meanwhile, gate_notify waits for the mutex): answered first
 * when status > 0 (a request was under way), then shut down both ways, which
 * libmicrohttpd sees as the client's end and closes. Its counts are released
 * now, for the connection that needs the room. */
static void shed(Gate *g, Conn *c, int status, const char *msg)
{
	if (status) answer(g, c->fd, status, msg);
	shutdown(c->fd, SHUT_RDWR);
	c->state = C_SHED;
	c->deadline = 0;
	count_del(g, c);
}

/* A deadline set from another thread: the gate's thread wakes for it when it
 * would sleep past it (mutex held). */
static void note_due(Gate *g, int64_t due)
{
	if (due >= g->next_due) return;
	g->next_due = due;
	if (due < g->wake_at && g->started) {
		uint64_t one = 1;
		g->wake_at = due;
		(void)!write(g->wake, &one, sizeof one);
	}
}

static bool tchar(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static bool name_is(const char *s, size_t n, const char *name)
{
	return strlen(name) == n && !strncasecmp(s, name, n);
}

void gate_field(GateFields *f, const char *name, size_t nlen, const char *v, size_t vlen)
{
	f->fields++;
	while (vlen && (*v == ' ' || *v == '\t')) v++, vlen--;
	while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t')) vlen--;
	if (name_is(name, nlen, "Content-Length")) {
		bool digits = vlen && vlen <= 15;
		for (size_t i = 0; i < vlen && digits; i++) digits = v[i] >= '0' && v[i] <= '9';
		f->bad_length |= !digits;
		f->lengths++;
	} else if (name_is(name, nlen, "Transfer-Encoding")) {
		f->codings++;
		f->chunked |= name_is(v, vlen, "chunked");
	} else if (name_is(name, nlen, "Authorization")) {
		f->auths++;
	} else if (name_is(name, nlen, "Cookie")) {
		/* libmicrohttpd keeps each cookie, split at ';' and ','. */
		f->cookies++;
		for (size_t i = 0; i < vlen; i++) f->cookies += v[i] == ';' || v[i] == ',';
	}
}

int gate_fields_verdict(const GateFields *f, const char **msg)
{
	if (f->fields > GATE_FIELDS_MAX) {
		*msg = "more than 100 header fields";
		return 431;
	}
	if (f->cookies > GATE_COOKIES_MAX) {
		*msg = "more than 100 cookies";
		return 431;
	}
	if (f->bad_length || f->lengths > 1) {
		*msg = f->bad_length ? "Content-Length must be a plain number of bytes"
		                     : "Content-Length given twice";
		return 400;
	}
	if (f->lengths && f->codings) {
		*msg = "both Content-Length and Transfer-Encoding";
		return 400;
	}
	if (f->auths > 1) {
		*msg = "Authorization given twice";
		return 400;
	}
	if (f->codings == 1 && f->chunked) {
		*msg =
		    "a request body needs a Content-Length (chunked transfer coding is not taken)";
		return 411;
	}
	if (f->codings) {
		*msg =
		    "transfer coding not implemented (a body is sent as is, with Content-Length)";
		return 501;
	}
	return 0;
}

int gate_check_head(const char *b, size_t n, const char **msg)
{
	size_t i = 0;
	while (i + 1 < n && b[i] == '\r' && b[i + 1] == '\n') i += 2; /* empty lines first */
	const char *line = b + i, *end = b + n;
	const char *nl = memchr(line, '\n', (size_t)(end - line));
	if (!nl) {
		if ((size_t)(end - line) > GATE_URL_MAX + 32) {
			*msg = "request line too long (over 8 KB)";
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
		*msg = "request URL too long (over 8 KB)";
		return 414;
	}
	if (le - (t + 1) != 8 || strncmp(t + 1, "HTTP/1.", 7) || (t[8] != '0' && t[8] != '1'))
		goto bad_line;
	/* libmicrohttpd keeps each URL parameter (split at '&'); past a
	 * thousand it stopped answering. */
	const char *q = memchr(target, '?', (size_t)(t - target));
	unsigned params = q ? 1 : 0;
	for (; q && q < t; q++) params += *q == '&';
	if (params > GATE_PARAMS_MAX) {
		*msg = "request URL with more than 100 parameters";
		return 414;
	}
	/* The header fields, up to the empty line. */
	GateFields f = {0};
	for (line = nl + 1;; line = nl + 1) {
		nl = line < end ? memchr(line, '\n', (size_t)(end - line)) : NULL;
		if (!nl) {
			if (n > GATE_HEAD_MAX) {
				*msg = "request head too large (over 24 KB)";
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
		for (const char *c = p + 1; c < le; c++)
			if (((unsigned char)*c < ' ' && *c != '\t') || *c == 0x7f) {
				*msg = "control character in a header";
				return 400;
			}
		gate_field(&f, line, (size_t)(p - line), p + 1, (size_t)(le - p - 1));
	}
	int st = gate_fields_verdict(&f, msg);
	return st ? st : 1;
bad_line:
	*msg = "malformed request line (METHOD /path HTTP/1.1 wanted)";
	return 400;
}

/* Data (or an end) on a waiting connection; ev: the epoll events. */
static void examine(Gate *g, Conn *c, uint32_t ev)
{
	if (c->state != C_WAITING) return; /* dropped by an earlier event at hand */
	ssize_t n = recv(c->fd, g->buf, GATE_HEAD_MAX + 1, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
	pthread_mutex_lock(&g->mu);
	if (n <= 0) {
		drop(g, c, 0, NULL);
		pthread_mutex_unlock(&g->mu);
		return;
	}
	const char *msg = NULL;
	int r = gate_check_head(g->buf, (size_t)n, &msg);
	if (r == 0 && (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		drop(g, c, 0, NULL); /* the client will send no more: the head stays partial */
	else if (r > 1)
		drop(g, c, r, msg);
	if (r != 1) {
		pthread_mutex_unlock(&g->mu);
		return;
	}
	/* libmicrohttpd's from here; the deadline of the whole request stands
	 * (its body may still be on its way). */
	epoll_ctl(g->ep, EPOLL_CTL_DEL, c->fd, NULL);
	list_unlink(&g->head, &g->tail, c);
	c->state = C_HANDED;
	held_push(g, c);
	if (c->deadline < g->next_due) g->next_due = c->deadline;
	int fd = c->fd;
	struct sockaddr_in sa = c->sa;
	pthread_mutex_unlock(&g->mu);
	/* Not under the mutex: libmicrohttpd's threads take it in gate_notify. */
	if (MHD_add_connection(g->d, fd, (struct sockaddr *)&sa, sizeof sa) != MHD_YES) {
		/* libmicrohttpd closed it; only this thread accepts, so the
		 * descriptor is not anyone else's yet. */
		pthread_mutex_lock(&g->mu);
		if ((size_t)fd < g->nbyfd && g->byfd[fd] == c) conn_free(g, c, false);
		pthread_mutex_unlock(&g->mu);
	}
}

/* The connection to shed for one from an address that holds `mine`
 * (UINT32_MAX: unknown): one of the busiest address's when that holds two or
 * more connections more (its connection waiting here longest, else one idle
 * between requests, else one still sending a request; a request being
 * answered never), else the connection waiting here longest; NULL when none
 * may go. Mutex held. */
static Conn *victim(Gate *g, unsigned mine)
{
	if (mine != UINT32_MAX && g->top >= mine + 2) {
		for (Addr *a = g->bucket[g->top]; a; a = a->bnext) {
			Conn *best = NULL;
			for (Conn *c = a->conns; c; c = c->anext) {
				static const int RANK[] = {
				    [C_WAITING] = 3, [C_IDLE] = 2, [C_READING] = 1};
				int r = c->state <= C_IDLE ? RANK[c->state] : 0,
				    br = best ? RANK[best->state] : 0;
				if (r && (r > br || (r == br && c->t0 < best->t0))) best = c;
			}
			if (best) return best;
		}
	}
	return g->head;
}

/* Makes room for a connection from an address holding `mine` (mutex held):
 * false when nothing could be shed. */
static bool make_room(Gate *g, unsigned mine)
{
	Conn *v = victim(g, mine);
	if (!v) return false;
	static const char FULL[] = "the server is full; this connection made room for another";
	if (v->state == C_WAITING)
		drop(g, v, 503, FULL);
	else
		shed(g, v, v->state == C_READING ? 503 : 0, FULL);
	return true;
}

/* Records fd as c's (mutex held): a record left there is of a descriptor
 * libmicrohttpd closed without telling (it failed to take a connection),
 * forgotten now. */
static int byfd_set(Gate *g, int fd, Conn *c)
{
	if ((size_t)fd >= g->nbyfd) {
		size_t old = g->nbyfd;
		if (array_grow((void **)&g->byfd, &g->nbyfd, (size_t)fd + 1, sizeof *g->byfd, 1024))
			return -1;
		memset(g->byfd + old, 0, (g->nbyfd - old) * sizeof *g->byfd);
	}
	if (g->byfd[fd]) conn_free(g, g->byfd[fd], false);
	g->byfd[fd] = c;
	return 0;
}

/* Whether the client closed c's connection (its end read, nothing left
 * unread): a peek, which leaves whatever was sent for its reader. */
static bool peer_closed(Gate *g, const Conn *c)
{
	return recv(c->fd, g->buf, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* Frees the room of an address's connections that its client has closed
 * but that are still counted (mutex held): one waiting here whose close
 * this thread has not read yet; one in libmicrohttpd, which has sent its
 * answer but not yet said so, or keeps it alive, shut down (it closes it at
 * its next look). A client that closes a connection and opens another at
 * once is not refused for the one it closed. (One that half-closes, waiting
 * for its answer with its end sent, may lose it to another of its own when
 * its address is at its limit.) Whether any was freed. */
static bool reclaim_closed(Gate *g, Addr *a)
{
	bool any = false;
	for (Conn *c = a ? a->conns : NULL, *next; c; c = next) {
		next = c->anext;
		if (c->state == C_HANDED || c->state == C_SHED || !peer_closed(g, c)) continue;
		any = true;
		if (c->state == C_WAITING)
			drop(g, c, 0, NULL);
		else
			shed(g, c, 0, NULL);
	}
	return any;
}

static void accept_all(Gate *g, int64_t now)
{
	for (int k = 0; k < 256; k++) {
		struct sockaddr_in sa;
		socklen_t sl = sizeof sa;
		int fd = accept4(g->lfd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		pthread_mutex_lock(&g->mu);
		if (fd < 0) {
			if ((errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			     errno == ENOMEM) &&
			    !make_room(g, UINT32_MAX)) {
				/* Out of descriptors with nothing to shed: stop listening
				 * for a moment instead of spinning on the socket. */
				epoll_ctl(g->ep, EPOLL_CTL_DEL, g->lfd, NULL);
				g->listening = false;
				g->relisten_ms = now + 100;
			}
			pthread_mutex_unlock(&g->mu);
			return;
		}
		Conn *c = calloc(1, sizeof *c);
		int why = 1;
		if (c) {
			c->sa = sa;
			why = count_add(g, c);
			Addr *a = addr_of(g, ntohl(sa.sin_addr.s_addr));
			if (why == 2 && reclaim_closed(g, a)) {
				why = count_add(g, c);
				a = addr_of(
				    g, ntohl(sa.sin_addr.s_addr)); /* the old record may be gone */
			}
			if (why == 1 && make_room(g, a ? a->n : 0)) why = count_add(g, c);
		}
		if (why) {
			free(c);
			c = NULL;
		}
		if (c) {
			c->fd = fd;
			c->t0 = now;
			c->deadline = now + g->o.request_ms;
			c->state = C_WAITING;
			c->prev = g->tail;
			if (g->tail)
				g->tail->next = c;
			else
				g->head = c;
			g->tail = c;
		}
		/* Edge-triggered: a peek leaves the bytes in the socket, so a
		 * level-triggered watch would report a partial head again and again
		 * (a spin over every trickling connection); an edge is new data. */
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = c};
		if (c && (byfd_set(g, fd, c) < 0 || epoll_ctl(g->ep, EPOLL_CTL_ADD, fd, &ev) < 0)) {
			if ((size_t)fd < g->nbyfd) g->byfd[fd] = NULL;
			conn_free(g, c, true);
			close(fd);
		}
		pthread_mutex_unlock(&g->mu);
		if (why)
			answer_close(g, fd, 503,
			             why == 1 ? "the server is full"
			                      : "too many connections from this address");
	}
}

/* Closes the held connections past their deadlines and finds the next
 * deadline (mutex held). */
static void expire_held(Gate *g, int64_t now)
{
	int64_t due = INT64_MAX;
	for (Conn *c = g->held; c; c = c->next) {
		if (!c->deadline) continue;
		if (now < c->deadline) {
			if (c->deadline < due) due = c->deadline;
		} else if (c->state == C_HANDED) {
			due = due < now + 20 ? due : now + 20; /* again once libmicrohttpd has it */
		} else if (c->state == C_READING) {
			shed(g, c, 408, "the request did not arrive whole in time");
		} else {
			shed(g, c, 0, NULL); /* idle too long: no request was under way */
		}
	}
	g->next_due = due;
}

static void *gate_main(void *arg)
{
	Gate *g = arg;
	struct epoll_event ev[64];
	for (;;) {
		int64_t now = clock_ms();
		pthread_mutex_lock(&g->mu);
		while (g->head && now >= g->head->deadline)
			drop(g, g->head, 408, "the request's head did not arrive whole in time");
		if (now >= g->next_due) expire_held(g, now);
		int64_t wake = now + 1000;
		if (g->head && g->head->deadline < wake) wake = g->head->deadline;
		if (g->next_due < wake) wake = g->next_due;
		if (!g->listening && g->relisten_ms < wake) wake = g->relisten_ms;
		g->wake_at = wake;
		for (Conn *d; (d = g->dead);) {
			g->dead = d->next;
			free(d);
		}
		pthread_mutex_unlock(&g->mu);
		int n = epoll_wait(g->ep, ev, 64, wake > now ? (int)(wake - now) : 0);
		now = clock_ms();
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == &g->wake) {
				uint64_t v;
				(void)!read(g->wake, &v, sizeof v);
				if (atomic_load(&g->stopping)) return NULL;
			} else if (ev[i].data.ptr == &g->lfd) {
				accept_all(g, now);
			} else {
				examine(g, ev[i].data.ptr, ev[i].events);
			}
		}
		if (!g->listening && now >= g->relisten_ms) {
			struct epoll_event le = {.events = EPOLLIN, .data.ptr = &g->lfd};
			g->listening = epoll_ctl(g->ep, EPOLL_CTL_ADD, g->lfd, &le) == 0;
			if (!g->listening) g->relisten_ms = now + 100;
		}
	}
}

void gate_notify(Gate *g, struct MHD_Connection *mc, void **socket_ctx, bool started)
{
	if (!g) return;
	pthread_mutex_lock(&g->mu);
	if (started) {
		const union MHD_ConnectionInfo *ci =
		    MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
		int fd = ci ? ci->connect_fd : -1;
		Conn *c = fd >= 0 && (size_t)fd < g->nbyfd ? g->byfd[fd] : NULL;
		if (c && c->state == C_HANDED) {
			c->state = C_READING; /* its first request's head is there */
			*socket_ctx = c;
		}
	} else if (*socket_ctx) {
		/* Before libmicrohttpd closes the descriptor: the gate, which
		 * waits for the mutex, never shuts down a descriptor reused. */
		conn_free(g, *socket_ctx, false);
		*socket_ctx = NULL;
	}
	pthread_mutex_unlock(&g->mu);
}

void gate_request(Gate *g, struct MHD_Connection *mc, GateReqEvent ev)
{
	if (!g) return;
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	Conn *c = ci ? ci->socket_context : NULL;
	if (!c) return;
	int64_t now = clock_ms();
	pthread_mutex_lock(&g->mu);
	if (c->state != C_SHED) {
		switch (ev) {
		case GATE_REQ_BEGIN:
			/* A first request's deadline counts from the accept. */
			c->state = C_READING;
			if (c->later) {
				c->deadline = now + g->o.request_ms;
				note_due(g, c->deadline);
			}
			break;
		case GATE_REQ_ANSWER:
			c->state = C_ANSWERING;
			c->deadline = 0;
			c->later = true;
			break;
		case GATE_REQ_DONE:
			c->state = C_IDLE;
			c->later = true;
			c->deadline = now + g->o.keepalive_ms;
			note_due(g, c->deadline);
			break;
		}
	}
	pthread_mutex_unlock(&g->mu);
}

int gate_start(Gate **out, int fd, struct MHD_Daemon *d, const GateOptions *opt)
{
	*out = NULL;
	Gate *g = calloc(1, sizeof *g);
	if (!g) return -1;
	g->o = *opt;
	if (!g->o.request_ms) g->o.request_ms = GATE_REQUEST_MS;
	if (!g->o.keepalive_ms) g->o.keepalive_ms = GATE_KEEPALIVE_MS;
	g->d = d;
	g->lfd = fd;
	g->next_due = INT64_MAX;
	g->ep = epoll_create1(EPOLL_CLOEXEC);
	g->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	g->buf = malloc(GATE_HEAD_MAX + 1);
	g->bucket = calloc((size_t)g->o.max_connections + 1, sizeof *g->bucket);
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
	if (g->ep < 0 || g->wake < 0 || !g->buf || !g->bucket || fl < 0 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    epoll_ctl(g->ep, EPOLL_CTL_ADD, fd, &le) < 0 ||
	    epoll_ctl(g->ep, EPOLL_CTL_ADD, g->wake, &we) < 0 ||
	    pthread_create(&g->thread, NULL, gate_main, g) != 0) {
		int e = errno;
		*out = NULL;
		if (g->ep >= 0) close(g->ep);
		if (g->wake >= 0) close(g->wake);
		free(g->buf);
		free(g->bucket);
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
	atomic_store(&g->stopping, true);
	(void)!write(g->wake, &one, sizeof one);
	pthread_join(g->thread, NULL);
	pthread_mutex_lock(&g->mu);
	g->started = false; /* no more wakes: the eventfd closes below */
	while (g->head) drop(g, g->head, 503, "shutting down");
	for (Conn *d; (d = g->dead);) {
		g->dead = d->next;
		free(d);
	}
	pthread_mutex_unlock(&g->mu);
	close(g->lfd);
	close(g->ep);
	close(g->wake);
}

void gate_free(Gate *g)
{
	if (!g) return;
	gate_stop(g);
	/* libmicrohttpd has stopped: what it held is closed and forgotten. */
	while (g->held) {
		Conn *c = g->held;
		g->held = c->next;
		free(c);
	}
	for (size_t i = 0; i < g->naddrs; i++) free(g->addrs[i]);
	free(g->addrs);
	free(g->buf);
	free(g->bucket);
	free(g->byfd);
	keymap_free(&g->per_ip);
	pthread_mutex_destroy(&g->mu);
	free(g);
}
