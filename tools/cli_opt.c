/* tools/cli_opt.c — see cli_opt.h. */
#include "tools/cli_opt.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "shogi/bigmem.h"
#include "shogi/errmsg.h"
#include "shogi/memuse.h"

#define MAX_FLAT 128 /* entries of one command, its fragments included */
#define WIDTH 100    /* usage lines are wrapped here */
#define HELP_COL 26  /* where --help's lines start their text */

typedef struct {
	const CliOpt *o;
	const char *needs; /* its own, else its group's */
	int given;
	bool said_old; /* "--x is an old spelling of --y" said */
} Flat;

typedef struct {
	const CliCmd *cmd;
	Flat f[MAX_FLAT];
	int n;
} Table;

static bool positional(const CliOpt *o)
{
	return o->name[0] != '-';
}

static void flatten(Table *t, const CliOpt *opts, const char *needs)
{
	for (const CliOpt *o = opts; o->kind != CLI_END; o++) {
		if (o->kind == CLI_GROUP) {
			flatten(t, o->group, o->needs ? o->needs : needs);
			continue;
		}
		assert(t->n < MAX_FLAT);
		/* Every option has a help line: one --help does not show is one
		 * the docs cannot be checked against (tests/tools/test_cli.c). */
		assert(o->help || positional(o));
		t->f[t->n++] = (Flat){o, o->needs ? o->needs : needs, 0, false};
	}
}

static void vsay(const CliCmd *c, const char *fmt, va_list ap)
{
	fprintf(stderr, "joseki: %s: ", c->name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	cli_usage(c, stderr);
}

int cli_parse_memory(void *dst, char *value, char *msg)
{
	uint64_t *b = dst, ram = memuse_ram();
	int rc = memuse_parse_size(value, b);
	if (rc == -2)
		snprintf(msg, CLI_MSGLEN,
		         "--memory %s: under 1M, the least a pass is given (a size such as 256M "
		         "or 8G)",
		         value);
	if (rc < 0) return -1;
	if (ram && *b > ram) {
		char have[32];
		memuse_format(ram, have, sizeof have);
		snprintf(msg, CLI_MSGLEN,
		         "--memory %s: more than the memory this process may have (%s: the "
		         "machine's less what is locked, or its control group's limit); the budget "
		         "is what the command may hold in memory",
		         value, have);
		return -1;
	}
	return 0;
}

/* The files a book directory holds (docs/bookdb.md, "Files"). */
static const char *const BOOK_FILES[] = {"data.mdb",     "lock.mdb",          "writers.lock",
                                         "open.lock",    "selection.lock",    "minimax.graph",
                                         "minimax.lock", "minimax.journal",   "selector.snap",
                                         "tokens",       "minimax.graph.tmp", "data.mdb.compact"};

/* Whether path names one of a book's own files in a book's directory (one
 * holding data.mdb); its directory into dir (dirlen bytes). */
static bool book_file(const char *path, char *dir, size_t dirlen)
{
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	bool known = false;
	for (size_t i = 0; i < sizeof BOOK_FILES / sizeof *BOOK_FILES; i++)
		known |= strcmp(name, BOOK_FILES[i]) == 0;
	if (!known) return false;
	int n = slash ? (int)(slash - path) : 1;
	snprintf(dir, dirlen, "%.*s", n ? n : 1, slash ? path : ".");
	char data[1100];
	snprintf(data, sizeof data, "%s/data.mdb", dir);
	struct stat st;
	return stat(data, &st) == 0 && S_ISREG(st.st_mode);
}

bool cli_book_fresh(const char *path)
{
	char data[1100];
	snprintf(data, sizeof data, "%s/data.mdb", path);
	struct stat st;
	return stat(data, &st) < 0 && errno == ENOENT;
}

int cli_output_file(const CliCmd *c, const char *path)
{
	struct stat st;
	char shown[1024], dir[1024];
	errmsg_escape(shown, sizeof shown, path, strlen(path));
	if (book_file(path, dir, sizeof dir)) {
		char bshown[1024];
		errmsg_escape(bshown, sizeof bshown, dir, strlen(dir));
		fprintf(stderr,
		        "joseki: %s: %s: a file of the book %s: the output would replace it; "
		        "write it elsewhere\n",
		        c->name, shown, bshown);
		return 1;
	}
	int e = bigmem_output_blocked(path);
	if (e == EISDIR) {
		fprintf(stderr, "joseki: %s: %s: cannot write: %s (the output is a file)\n",
		        c->name, shown, strerror(EISDIR));
		return 1;
	}
	if (e) {
		fprintf(stderr, "joseki: %s: %s: cannot write there: %s\n", c->name, shown,
		        strerror(e));
		return 1;
	}
	if (stat(path, &st) < 0 || S_ISREG(st.st_mode)) return 0;
	fprintf(stderr,
	        "joseki: %s: %s: not a regular file (%s): the output, written beside it and "
	        "renamed into place, would replace it\n",
	        c->name, shown,
	        S_ISCHR(st.st_mode)    ? "a character device"
	        : S_ISFIFO(st.st_mode) ? "a pipe"
	                               : "a special file");
	return 1;
}

int cli_usage_error(const CliCmd *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay(c, fmt, ap);
	va_end(ap);
	return 2;
}

/* ENUM's names "a|b|c" as "a, b or c". */
static void names_text(char *buf, size_t len, const char *names)
{
	size_t n = 0, k = 0, total = 1;
	for (const char *p = names; *p; p++) total += *p == '|';
	buf[0] = 0;
	for (const char *p = names;; k++) {
		const char *bar = strchr(p, '|');
		int w = bar ? (int)(bar - p) : (int)strlen(p);
		const char *sep = k == 0 ? "" : k + 1 == total ? " or " : ", ";
		int r = snprintf(buf + n, len - n, "%s%.*s", sep, w, p);
		if (r < 0 || (size_t)r >= len - n) return;
		n += (size_t)r;
		if (!bar) return;
		p = bar + 1;
	}
}

/* What a value of o must be: "a number from 1 to 64", "cover or pv", "FILE". */
static void want_text(char *buf, size_t len, const CliOpt *o)
{
	switch (o->kind) {
	case CLI_NUM:
		if (o->hi != CLI_NOMAX)
			snprintf(buf, len, "a number from %lld to %llu", o->lo, o->hi);
		else if (o->lo == 1)
			snprintf(buf, len, "a positive number");
		else if (o->lo == 0)
			snprintf(buf, len, "a whole number");
		else
			snprintf(buf, len, "a number from %lld up", o->lo);
		return;
	case CLI_REAL:
		if (isfinite(o->rlo) && isfinite(o->rhi))
			snprintf(buf, len, "a number from %g to %g", o->rlo, o->rhi);
		else
			snprintf(buf, len, "a number");
		return;
	case CLI_ENUM:
		names_text(buf, len, o->meta);
		return;
	case CLI_FN:
		snprintf(buf, len, "%s", o->want ? o->want : o->meta);
		return;
	default:
		snprintf(buf, len, "%s", o->meta ? o->meta : "a value");
		return;
	}
}

static int bad_value(const Table *t, const CliOpt *o, const char *v)
{
	char want[200];
	want_text(want, sizeof want, o);
	if (v) return cli_usage_error(t->cmd, "%s wants %s, not '%s'", o->name, want, v);
	return cli_usage_error(t->cmd, "%s wants %s", o->name, want);
}

static void store_int(void *dst, size_t size, unsigned long long v)
{
	switch (size) {
	case 1: {
		uint8_t x = (uint8_t)v;
		memcpy(dst, &x, 1);
		break;
	}
	case 2: {
		uint16_t x = (uint16_t)v;
		memcpy(dst, &x, 2);
		break;
	}
	case 4: {
		uint32_t x = (uint32_t)v;
		memcpy(dst, &x, 4);
		break;
	}
	default:
		assert(size == 8);
		memcpy(dst, &v, 8);
	}
}

/* Decimal digits only (a '-' first when o may be negative), within o's range. */
static int parse_num(const CliOpt *o, const char *s, unsigned long long *out)
{
	bool neg = s[0] == '-' && o->lo < 0;
	const char *p = s + neg;
	unsigned long long u = 0;
	if (*p < '0' || *p > '9') return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (u > (ULLONG_MAX - d) / 10) return -1;
		u = u * 10 + d;
	}
	if (*p) return -1;
	if (neg) {
		/* -u >= lo, that is u <= -lo */
		if (u > (unsigned long long)(-(o->lo + 1)) + 1) return -1;
		*out = 0 - u;
		return 0;
	}
	if (o->lo > 0 && u < (unsigned long long)o->lo) return -1;
	if (u > o->hi) return -1;
	*out = u;
	return 0;
}

/* Stores v (NULL for a flag) into o's destination, the given-th time. */
static int take(const Table *t, const CliOpt *o, char *v, int given)
{
	void *dst = (char *)o->dst + (o->max ? o->size * (size_t)given : 0);
	switch (o->kind) {
	case CLI_FLAG:
		store_int(dst, o->size, (unsigned long long)o->lo);
		break;
	case CLI_NUM: {
		unsigned long long u;
		if (parse_num(o, v, &u) < 0) return bad_value(t, o, v);
		store_int(dst, o->size, u);
		break;
	}
	case CLI_REAL: {
		char *end;
		double d = strtod(v, &end);
		/* Decimal only: strtod also reads "0x10", "inf", " 1". */
		if (!*v || *end || v[strspn(v, "0123456789.eE+-")] || !isfinite(d) || d < o->rlo ||
		    d > o->rhi)
			return bad_value(t, o, v);
		assert(o->size == sizeof d);
		memcpy(dst, &d, sizeof d);
		break;
	}
	case CLI_STR:
		if (strlen(v) < (size_t)o->lo) return bad_value(t, o, v);
		assert(o->size == sizeof v);
		memcpy(dst, &v, sizeof v);
		break;
	case CLI_ENUM: {
		size_t vlen = strlen(v);
		int k = 0;
		const char *p = o->meta;
		for (;; k++) {
			const char *bar = strchr(p, '|');
			size_t w = bar ? (size_t)(bar - p) : strlen(p);
			if (w == vlen && !strncmp(p, v, w)) break;
			if (!bar) return bad_value(t, o, v);
			p = bar + 1;
		}
		store_int(dst, o->size,
		          (unsigned long long)(long long)(o->values ? o->values[k] : k));
		break;
	}
	case CLI_FN: {
		char msg[CLI_MSGLEN] = "";
		if (o->fn(dst, v, msg) < 0) {
			if (!msg[0]) return bad_value(t, o, v);
			return cli_usage_error(t->cmd, "%s", msg);
		}
		break;
	}
	default:
		assert(!"not a value kind");
	}
	if (o->max && o->count) *o->count = given + 1;
	if (o->tag) store_int(o->tag, o->tagsize, (unsigned long long)(long long)o->tagval);
	return 0;
}

static int find(const Table *t, const char *a)
{
	for (int k = 0; k < t->n; k++) {
		const CliOpt *o = t->f[k].o;
		if (o->kind == CLI_REST || positional(o)) continue;
		if (!strcmp(a, o->name) || (o->alias && !strcmp(a, o->alias))) return k;
	}
	return -1;
}

/* After the arguments: needs, exclusions, required options. */
static int check(const Table *t)
{
	for (int k = 0; k < t->n; k++) {
		const Flat *e = &t->f[k];
		if (!e->given || !e->needs) continue;
		int j = find(t, e->needs);
		assert(j >= 0);
		if (!t->f[j].given)
			return cli_usage_error(t->cmd, "%s needs %s", e->o->name, e->needs);
	}
	for (int k = 0; k < t->n; k++) {
		const char *x = t->f[k].o->excl;
		if (!t->f[k].given || !x) continue;
		for (int j = k + 1; j < t->n; j++) {
			if (!t->f[j].given || !t->f[j].o->excl || strcmp(t->f[j].o->excl, x))
				continue;
			char list[300];
			size_t n = 0;
			for (int i = 0; i < t->n; i++) {
				if (!t->f[i].o->excl || strcmp(t->f[i].o->excl, x)) continue;
				int r = snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "",
				                 t->f[i].o->name);
				if (r > 0 && (size_t)r < sizeof list - n) n += (size_t)r;
			}
			return cli_usage_error(t->cmd,
			                       "give only one of %s (%s and %s were both given)",
			                       list, t->f[k].o->name, t->f[j].o->name);
		}
	}
	for (int k = 0; k < t->n; k++) {
		const CliOpt *o = t->f[k].o;
		if (o->required && !positional(o) && !t->f[k].given)
			return cli_usage_error(t->cmd, "%s is needed", o->name);
	}
	return 0;
}

/* The positionals argv[1..npos] into the positional entries, in order. */
static int place(Table *t, char **argv, int npos)
{
	int p = 1;
	for (int k = 0; k < t->n; k++) {
		const CliOpt *o = t->f[k].o;
		if (!positional(o)) continue;
		if (o->kind == CLI_REST) {
			CliArgs *r = o->dst;
			r->v = (const char **)argv + p;
			r->n = (size_t)(npos + 1 - p);
			if (r->n < (size_t)o->lo)
				return cli_usage_error(t->cmd, "no %s given", o->name);
			t->f[k].given = (int)r->n;
			p = npos + 1;
			continue;
		}
		if (p > npos) {
			if (o->required) return cli_usage_error(t->cmd, "no %s given", o->name);
			continue;
		}
		if (take(t, o, argv[p++], 0)) return 2;
		t->f[k].given = 1;
	}
	if (p <= npos) return cli_usage_error(t->cmd, "unexpected argument '%s'", argv[p]);
	return 0;
}

static void help(const Table *t);

int cli_parse(const CliCmd *c, int argc, char **argv)
{
	Table *t = malloc(sizeof *t);
	if (!t) {
		fprintf(stderr, "joseki: out of memory\n");
		return 1;
	}
	t->cmd = c;
	t->n = 0;
	flatten(t, c->opts, NULL);
	int npos = 0, rc = CLI_GO;
	for (int i = 1; i < argc && rc == CLI_GO; i++) {
		char *a = argv[i];
		int k = find(t, a);
		if (k < 0 && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
			help(t);
			rc = 0;
		} else if (k < 0 && a[0] == '-' && a[1]) {
			rc = cli_usage_error(c, "unknown option '%s'", a);
		} else if (k < 0) {
			argv[1 + npos++] = a; /* i >= 1 + npos: a slot already read */
		} else {
			Flat *e = &t->f[k];
			const CliOpt *o = e->o;
			char *v = NULL;
			/* An old spelling works and says so, once: scripts move on. */
			if (o->alias && o->alias[0] == '-' && !strcmp(a, o->alias) &&
			    !e->said_old) {
				fprintf(stderr, "joseki: %s: %s is an old spelling of %s\n",
				        c->name, o->alias, o->name);
				e->said_old = true;
			}
			if (o->kind != CLI_FLAG && i + 1 >= argc)
				rc = bad_value(t, o, NULL);
			else if (o->max && e->given >= o->max)
				rc = cli_usage_error(c, "%s at most %d times", o->name, o->max);
			else {
				if (o->kind != CLI_FLAG) v = argv[++i];
				if (take(t, o, v, o->max ? e->given : 0)) rc = 2;
				e->given++;
			}
		}
	}
	if (rc == CLI_GO && (place(t, argv, npos) || check(t))) rc = 2;
	free(t);
	return rc;
}

/* ---- usage ---- */

typedef struct {
	FILE *f;
	int col, indent;
} Line;

static void put_item(Line *l, const char *item)
{
	int len = (int)strlen(item);
	if (l->col + 1 + len > WIDTH && l->col > l->indent) {
		fprintf(l->f, "\n%*s", l->indent, "");
		l->col = l->indent;
	} else {
		fputc(' ', l->f);
		l->col++;
	}
	fputs(item, l->f);
	l->col += len;
}

/* "--name META" (or the positional's word) into buf. */
static void words(char *buf, size_t len, const CliOpt *o)
{
	if (o->kind == CLI_ENUM && positional(o))
		snprintf(buf, len, "%s", o->meta);
	else if (o->kind == CLI_REST)
		snprintf(buf, len, "%s...", o->name);
	else if (o->kind == CLI_FLAG || !o->meta || positional(o))
		snprintf(buf, len, "%s", o->name);
	else
		snprintf(buf, len, "%s %s", o->name, o->meta);
}

static void usage_of(const Table *t, FILE *f)
{
	char head[128], item[512], w[256];
	snprintf(head, sizeof head, "usage: joseki %s", t->cmd->name);
	Line l = {f, (int)strlen(head), (int)strlen(head) + 1};
	fputs(head, f);
	for (int pass = 0; pass < 2; pass++) {
		for (int k = 0; k < t->n; k++) {
			const CliOpt *o = t->f[k].o;
			if (!o->help || positional(o) != (pass == 0)) continue;
			words(w, sizeof w, o);
			bool optional = positional(o)
			                    ? (o->kind == CLI_REST ? o->lo == 0 : !o->required)
			                    : !o->required;
			if (o->excl) {
				/* A run of options that exclude each other: [--a A|--b B]. */
				size_t n = (size_t)snprintf(item, sizeof item, "[%s", w);
				while (k + 1 < t->n && t->f[k + 1].o->excl && t->f[k + 1].o->help &&
				       !strcmp(t->f[k + 1].o->excl, o->excl)) {
					words(w, sizeof w, t->f[++k].o);
					if (n < sizeof item)
						n += (size_t)snprintf(item + n, sizeof item - n,
						                      "|%s", w);
				}
				if (n < sizeof item) snprintf(item + n, sizeof item - n, "]");
			} else if (optional) {
				snprintf(item, sizeof item, "[%s]%s", w, o->max > 1 ? "..." : "");
			} else {
				snprintf(item, sizeof item, "%s", w);
			}
			put_item(&l, item);
		}
	}
	fputc('\n', f);
}

void cli_usage(const CliCmd *c, FILE *f)
{
	Table *t = malloc(sizeof *t);
	if (!t) return;
	t->cmd = c;
	t->n = 0;
	flatten(t, c->opts, NULL);
	usage_of(t, f);
	free(t);
}

void cli_wrap(FILE *f, const char *text, int col, int indent, int width)
{
	const char *p = text;
	while (*p) {
		int room = width - col, n = (int)strlen(p);
		if (n > room) {
			/* The last blank that fits, but not one between a number and
			 * its unit or noun ("59.7 MiB", "1024980 edges": one grep
			 * finds them on one line); a word longer than the room stays
			 * whole. */
			int cut = room > 0 ? room : 0;
			while (cut > 0 && (p[cut] != ' ' || (isdigit((unsigned char)p[cut - 1]) &&
			                                     isalpha((unsigned char)p[cut + 1]))))
				cut--;
			if (cut == 0) cut = (int)strcspn(p, " ");
			n = cut;
		}
		fprintf(f, "%.*s\n", n, p);
		p += n;
		while (*p == ' ') p++;
		if (*p) fprintf(f, "%*s", indent, "");
		col = indent;
	}
}

/* text from column col on, wrapped at WIDTH with HELP_COL's indent. */
static void help_text(const char *text, int col)
{
	cli_wrap(stdout, text, col, HELP_COL, WIDTH);
}

static void help(const Table *t)
{
	char w[256], text[1024];
	usage_of(t, stdout);
	fputc('\n', stdout);
	for (int k = 0; k < t->n; k++) {
		const CliOpt *o = t->f[k].o;
		if (!o->help) continue;
		words(w, sizeof w, o);
		int len = (int)strlen(w);
		if (o->alias && o->alias[0] == '-')
			snprintf(text, sizeof text, "%s (%s is its old spelling, still taken)",
			         o->help, o->alias);
		else
			snprintf(text, sizeof text, "%s", o->help);
		if (len > HELP_COL - 4)
			printf("  %s\n%*s", w, HELP_COL, "");
		else
			printf("  %-*s", HELP_COL - 2, w);
		help_text(text, HELP_COL);
	}
	if (t->cmd->doc) printf("\nThe command in full: %s (joseki's source tree)\n", t->cmd->doc);
}
