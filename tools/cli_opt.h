/*
 * tools/cli_opt.h — one option table for every command.
 *
 * A command declares what it takes as a table of CliOpt entries (the macros
 * below: name, kind, destination, range, usage word, help line) and calls
 * cli_parse once. The parser gives every command the same behaviour and the
 * same words:
 *
 *   - `--opt VALUE` stores the value in the entry's destination; a value may
 *     start with '-' (`--kif-bonus -50`). A flag takes no value.
 *   - Arguments that are not options are the positionals, in table order
 *     (BOOK, OUT, INPUT...); "-" is a positional (standard input).
 *   - `--help` / `-h` prints the usage and one line per option on stdout
 *     (an option's other spelling said on its line), then the docs page.
 *   - A bad value: "joseki: CMD: --opt wants WHAT, not 'X'", a missing one
 *     "joseki: CMD: --opt wants WHAT"; unknown options, missing or extra
 *     positionals, options that need another or exclude each other are said
 *     the same way for every command, each followed by the usage, exit 2.
 *
 * Usage lines are generated from the table. Option groups that several
 * commands share (the growth plan of tools/cli_plan.h, the engines and search
 * budget of tools/cli_engines.h, the game filters of tools/cli_ingest.h) are
 * table fragments, included with CLI_GROUP.
 */
#ifndef TOOLS_CLI_OPT_H
#define TOOLS_CLI_OPT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "shogi/errors.h"

#define CLI_NOMAX ULLONG_MAX /* a count without an upper bound */
#define CLI_MSGLEN 512       /* a CliParseFn's message buffer */
#define CLI_GO (-1)          /* cli_parse: the arguments are good, go on */

typedef enum {
	CLI_END,   /* ends a table */
	CLI_FLAG,  /* no value: stores lo (1) */
	CLI_NUM,   /* a whole number from lo to hi (lo < 0: signed) */
	CLI_REAL,  /* a number from rlo to rhi */
	CLI_STR,   /* the text itself */
	CLI_ENUM,  /* one of the names in meta ("cover|pv"): stores values[k] (or k) */
	CLI_FN,    /* parsed by fn */
	CLI_REST,  /* positional: all the remaining ones (a CliArgs), at least lo */
	CLI_GROUP, /* the entries of another table (a fragment) */
} CliKind;

/* Parses value into dst. 0, or -1 with a message in msg (CLI_MSGLEN bytes;
 * left empty: the parser says "--opt wants WANT, not 'value'"). value may be
 * changed in place (it is the argument's own text). */
typedef int (*CliParseFn)(void *dst, char *value, char *msg);

/* The positionals of a CLI_REST entry, in the order given. */
typedef struct {
	const char **v;
	size_t n;
} CliArgs;

typedef struct CliOpt CliOpt;
struct CliOpt {
	CliKind kind;
	/* "--nodes"; a positional's word ("BOOK"): a name without a leading '-'. */
	const char *name;
	const char *meta; /* the value's word in the usage ("N", "FILE"); ENUM: its names */
	const char *help; /* the line --help shows (every option has one) */
	void *dst;        /* where the value goes */
	size_t size;      /* sizeof *dst: integer destinations of 1, 2, 4 or 8 bytes */
	long long
	    lo; /* NUM: the least; FLAG: the value stored; REST: the fewest; STR: least length */
	unsigned long long hi; /* NUM: the most (CLI_NOMAX: no bound) */
	double rlo, rhi;       /* REAL: the range */
	const int *values;     /* ENUM: the value stored for each name (NULL: its index) */
	CliParseFn fn;         /* FN */
	const char *want;      /* FN: what a value must be, for the message */
	int max;               /* > 0: may be given max times, into dst[0], dst[1]... */
	int *count;            /* with max: how many were given */
	void *tag;             /* when given, tagval is also stored in *tag (tagsize bytes) */
	size_t tagsize;
	int tagval;
	/* Another spelling that means the same ("shrink"); one starting with '-'
	 * is an old spelling kept for scripts, which --help says and which, when
	 * used, says "joseki: CMD: --old is an old spelling of --new" on stderr. */
	const char *alias;
	const char *excl;    /* options with the same word exclude each other */
	const char *needs;   /* the option this one goes with ("--work") */
	bool required;       /* an option that must be given; a positional that may not */
	const CliOpt *group; /* GROUP: the fragment's table; its needs apply to them all */
};

/* A command: its name as typed ("think"), its table, and the docs page(s)
 * that describe it ("docs/bookgen.md"; several separated by ", "), which
 * --help names and whose synopses list the same options (tests/tools/test_cli.c). */
typedef struct {
	const char *name;
	const CliOpt *opts;
	const char *doc;
} CliCmd;

/* Trailing arguments are more designators: .required = true, .excl = "budget"... */
#define CLI_FLAG(n, d, h, ...)                                                                     \
	{                                                                                          \
		.kind = CLI_FLAG, .name = n, .help = h, .dst = d, .size = sizeof *(d), .lo = 1,    \
		__VA_ARGS__                                                                        \
	}
#define CLI_NUM(n, d, l, h_, m, h, ...)                                                            \
	{                                                                                          \
		.kind = CLI_NUM, .name = n, .meta = m, .help = h, .dst = d, .size = sizeof *(d),   \
		.lo = l, .hi = h_, __VA_ARGS__                                                     \
	}
#define CLI_REAL(n, d, l, h_, m, h, ...)                                                           \
	{                                                                                          \
		.kind = CLI_REAL, .name = n, .meta = m, .help = h, .dst = d, .size = sizeof *(d),  \
		.rlo = l, .rhi = h_, __VA_ARGS__                                                   \
	}
#define CLI_STR(n, d, m, h, ...)                                                                   \
	{                                                                                          \
		.kind = CLI_STR, .name = n, .meta = m, .help = h, .dst = d, .size = sizeof *(d),   \
		__VA_ARGS__                                                                        \
	}
#define CLI_ENUM(n, d, names, vals, h, ...)                                                        \
	{                                                                                          \
		.kind = CLI_ENUM, .name = n, .meta = names, .help = h, .dst = d,                   \
		.size = sizeof *(d), .values = vals, __VA_ARGS__                                   \
	}
#define CLI_FN(n, d, f, m, w, h, ...)                                                              \
	{                                                                                          \
		.kind = CLI_FN, .name = n, .meta = m, .help = h, .dst = d, .size = sizeof *(d),    \
		.fn = f, .want = w, __VA_ARGS__                                                    \
	}
/* Positionals: a required word, a required number, all the rest. */
#define CLI_ARG(n, d, h, ...)                                                                      \
	{                                                                                          \
		.kind = CLI_STR, .name = n, .help = h, .dst = d, .size = sizeof *(d),              \
		.required = true, __VA_ARGS__                                                      \
	}
#define CLI_ARG_NUM(n, d, l, h_, h, ...)                                                           \
	{                                                                                          \
		.kind = CLI_NUM, .name = n, .help = h, .dst = d, .size = sizeof *(d), .lo = l,     \
		.hi = h_, .required = true, __VA_ARGS__                                            \
	}
#define CLI_REST(n, d, fewest, h, ...)                                                             \
	{                                                                                          \
		.kind = CLI_REST, .name = n, .help = h, .dst = d, .size = sizeof *(d),             \
		.lo = fewest, __VA_ARGS__                                                          \
	}
/* Extras: "when given, also store v in *p"; "may be given up to m times, *n of them". */
#define CLI_TAG(p, v) .tag = (p), .tagsize = sizeof *(p), .tagval = (v)
#define CLI_MANY(n, m) .max = (m), .count = (n)
#define CLI_GROUP(t, ...)                                                                          \
	{                                                                                          \
		.kind = CLI_GROUP, .group = t, __VA_ARGS__                                         \
	}
#define CLI_TABLE_END                                                                              \
	{                                                                                          \
		.kind = CLI_END                                                                    \
	}
/* The two flags most commands take, said the same way. */
#define CLI_JSON(d) CLI_FLAG("--json", d, "one JSON object instead of the summary line")
#define CLI_QUIET(d) CLI_FLAG("--quiet", d, "no progress line")

/* `--memory SIZE` (shogi/memuse.h: `256M`, `8G`; at least 1 MiB) into a
 * uint64_t of bytes, said the same way by every command with a whole-book
 * pass; its default (a quarter of the memory joseki may have) is the command's
 * to set. */
int cli_parse_memory(void *dst, char *value, char *msg);
/* What "the memory joseki may have" is, for the help of every --memory. */
#define CLI_MEMORY_MAY_HAVE                                                                        \
	"the memory joseki may have: RAM less locked memory, or its control group's limit"
/* how: what the command keeps on disk past SIZE. */
#define CLI_MEMORY_HOW(d, how)                                                                     \
	CLI_FN("--memory", d, cli_parse_memory, "SIZE", "a size such as 256M or 8G, at least 1M",  \
	       "memory the pass's large arrays may use before it works on disk, in " how           \
	       " (the book's mapped pages and small buffers not counted; at least 1M; default a "  \
	       "quarter of " CLI_MEMORY_MAY_HAVE ")")
#define CLI_MEMORY(d) CLI_MEMORY_HOW(d, "sorted runs or arrays in files")

/*
 * Parses argv[1..argc-1] (argv[0] is the command) against c's table: stores
 * the values given, leaves the destinations of options not given as they
 * were (the defaults), and checks positionals, required options, needs and
 * exclusions. Positionals are moved to the front of argv (CLI_REST points
 * into it). Returns CLI_GO when the command should go on, else its exit
 * status: 0 after --help, 2 after a usage error (said on stderr).
 */
JOSEKI_MUST_USE int cli_parse(const CliCmd *c, int argc, char **argv);

/* For a command's own checks after cli_parse: prints "joseki: CMD: <message>"
 * and the usage on stderr, returns 2. */
int cli_usage_error(const CliCmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* For a command that writes its output file beside path and renames it into
 * place, what would stop it at the end, found before the work (an export of
 * a large book takes half an hour): a path that names a device or a pipe
 * (/dev/null), which would be replaced, a directory, or one whose directory
 * is missing or cannot be written in. Says why on stderr ("joseki: CMD: PATH:
 * ...") and returns 1; 0 when path is a regular file or nothing yet, in a
 * directory that can take a new file. */
int cli_output_file(const CliCmd *c, const char *path);

/* Whether path holds no book yet (no data.mdb): a command that makes one
 * can take it away again when nothing went in (bookdb_remove_new). */
bool cli_book_fresh(const char *path);

/* The usage lines ("usage: joseki CMD BOOK [--opt N]...", wrapped at 100
 * columns) on f. */
void cli_usage(const CliCmd *c, FILE *f);

/* Console lines fit this many columns (a terminal's 120, docs/STYLE.md). */
#define CLI_CONSOLE_WIDTH 120

/*
 * text on f, from column col of the current line on (what is before it is
 * the caller's), wrapped at blanks to width columns, each further line
 * indented by indent blanks, ended with a newline. A number stays on the
 * line of the word after it ("59.7 MiB"); a word longer than the room stays
 * whole.
 */
void cli_wrap(FILE *f, const char *text, int col, int indent, int width);

#endif
