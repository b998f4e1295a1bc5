/* joseki — shogi opening-book builder and server: the command dispatcher. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include <jansson.h>

#include "bookdb/damage.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "shogi/position.h"
#include "tools/commands.h"
#include "shogi/bigmem.h"
#include "shogi/memuse.h"

static const struct {
	const char *name;
	joseki_cmd_fn fn;
	const char *summary;
} COMMANDS[] = {
    {"perft", cmd_perft, "count leaves of the legal-move tree"},
    {"replay", cmd_replay, "replay game records (CSA, KIF, KI2, JKF, USI lines) under the rules"},
    {"ingest", cmd_ingest, "add game records (CSA, KIF, KI2, JKF, USI lines) to the book"},
    {"fetch", cmd_fetch, "download floodgate days and ingest them"},
    {"import", cmd_import, "merge YaneuraOu DB2016 books and Apery binary books"},
    {"query", cmd_query, "the book's answer for one position"},
    {"stats", cmd_stats, "sizes and counts"},
    {"check", cmd_check, "verify the store's invariants (and copy what is sound into a new book)"},
    {"compact", cmd_compact, "rewrite the book without its free pages"},
    {"backup", cmd_backup, "a checked copy of the live book into a new directory"},
    {"serve", cmd_serve,
     "the book over HTTP/JSON, its explorer at /, and with --work the cluster coordinator"},
    {"token", cmd_token, "make a worker token for serve --work (printed once)"},
    {"synth", cmd_synth, "build a synthetic analysed book"},
    {"select", cmd_select, "leaves the selector would send next"},
    {"think", cmd_think, "grow the book"},
    {"minimax", cmd_minimax, "back values up over the book (incremental unless --full)"},
    {"export", cmd_export, "write a YaneuraOu or Apery book, or the tree as a KIF or KI2 record"},
    {"peta-shock", cmd_peta_shock, "YaneuraOu makebook peta_shock"},
    {"usi", cmd_usi, "the built-in engine as a USI engine on stdin/stdout"},
    {"bench", cmd_bench, "fixed-depth search of the bench positions"},
    {"gen-games", cmd_gen_games, "write random floodgate-style games (bench corpus)"},
    {"match", cmd_match, "play games between two set-ups"},
    {"merge", cmd_merge, "merge joseki books into DST"},
    {"extend", cmd_extend, "queue where the book ran out in games as think's first roots"},
    {"prune", cmd_prune, "mark book moves that lose as avoided"},
    {"avoid", cmd_avoid, "mark a book move the book never plays (a hand mark, with a note)"},
    {"prefer", cmd_prefer, "mark a book move the book plays where it is near the best"},
    {"marks", cmd_marks, "list the book's avoided and preferred moves"},
    {"cycle", cmd_cycle, "Shiba's extension/deletion cycle"},
    {"worker", cmd_worker, "think for a coordinator"},
    {"bench-work", cmd_bench_work, "load a coordinator with simulated workers (benchmark)"},
};

void joseki_catch_stop(void (*handler)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void joseki_progress_records(const char *what, uint64_t done, uint64_t total)
{
	fprintf(stderr, "\r%s%llu of %llu records (%llu%%)\033[K", what, (unsigned long long)done,
	        (unsigned long long)total,
	        (unsigned long long)(total && done < total ? done * 100 / total : 100));
	fflush(stderr);
}

void joseki_progress_every(JosekiProgress *p, const char *what, uint64_t done, uint64_t total)
{
	int64_t now = clock_ms();
	if (p->ms && now - p->ms < 200 && done < total) return;
	joseki_progress_records(what, done, total);
	p->ms = now;
}

void joseki_progress_off(JosekiProgress *p)
{
	if (!p->ms) return;
	fflush(stdout);
	fprintf(stderr, "\r\033[K");
	p->ms = 0;
}

void joseki_error(const char *fmt, ...)
{
	/* Escaped as a whole: a message carries what the operator typed (a
	 * path, a position, a name) and what a file or a server said. */
	char small[1024], *msg = small;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof small && (msg = malloc((size_t)n + 1))) {
		va_start(ap, fmt);
		vsnprintf(msg, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	if (!msg) msg = small; /* cut short, but said */
	size_t len = n < 0 ? 0 : strlen(msg), cap = 4 * len + 4;
	char *out = malloc(cap), cut[1024];
	fprintf(stderr, "joseki: %s\n",
	        out ? errmsg_escape(out, cap, msg, len) : errmsg_escape(cut, sizeof cut, msg, len));
	free(out);
	if (msg != small) free(msg);
}

const char *joseki_peak_memory(char *buf, size_t len)
{
	char a[24], f[24];
	BigmemStats bs;
	bigmem_stats(&bs);
	memuse_format(memuse_anon_peak(), a, sizeof a);
	if (bs.file_peak)
		snprintf(buf, len, "%s, %s of arrays in files", a,
		         memuse_format(bs.file_peak, f, sizeof f));
	else
		snprintf(buf, len, "%s", a);
	return buf;
}

const char *joseki_peak_fields(char *buf, size_t len)
{
	BigmemStats bs;
	bigmem_stats(&bs);
	snprintf(buf, len, "peak_anon_mb %llu files_mb %llu",
	         (unsigned long long)(memuse_anon_peak() >> 20),
	         (unsigned long long)(bs.file_peak >> 20));
	return buf;
}

json_t *joseki_with_peak(json_t *o)
{
	BigmemStats bs;
	bigmem_stats(&bs);
	if (o) {
		json_object_set_new(o, "peak_anon_bytes",
		                    json_integer((json_int_t)memuse_anon_peak()));
		json_object_set_new(o, "arrays_in_files_bytes",
		                    json_integer((json_int_t)bs.file_peak));
	}
	return o;
}

int joseki_print_json(json_t *o, size_t flags)
{
	char *text = o ? json_dumps(o, JSON_COMPACT | flags) : NULL;
	json_decref(o);
	if (!text) {
		joseki_error("out of memory");
		return -1;
	}
	puts(text);
	free(text);
	return 0;
}

/*
 * A book damaged below its records (bookdb/damage.h): LMDB follows a bad page
 * out of its map (SIGSEGV, SIGBUS) or fails an assertion. Either is said on
 * one line naming the book and the command, and the process exits
 * BOOKDB_EXIT_DAMAGED, check --repair's half-written book removed. A fault
 * neither in liblmdb's code nor in a book's map is a bug of ours and keeps
 * its default action (a core dump).
 */
static const char *g_command = "";
static char g_line[8192];

static _Noreturn void damaged(const char *dir, const char *how)
{
	bookdb_damage_cleanup();
	size_t n = bookdb_damage_format(g_line, sizeof g_line, g_command, dir, how);
	if (write(STDERR_FILENO, g_line, n) < 0) { /* nowhere else to say it */
	}
	_exit(BOOKDB_EXIT_DAMAGED);
}

static const void *fault_pc(const void *uc)
{
	const ucontext_t *u = uc;
#if defined(__x86_64__) && defined(REG_RIP)
	return (const void *)u->uc_mcontext.gregs[REG_RIP];
#elif defined(__i386__) && defined(REG_EIP)
	return (const void *)u->uc_mcontext.gregs[REG_EIP];
#elif defined(__aarch64__)
	return (const void *)u->uc_mcontext.pc;
#else
	(void)u;
	return NULL; /* only faults inside a book's map are recognised */
#endif
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	/* Only the kernel's own faults: kill -SEGV is no page of a book. */
	const char *dir = si->si_code > 0 ? bookdb_damage_book(si->si_addr, fault_pc(uc)) : NULL;
	if (dir) damaged(dir, sig == SIGBUS ? "SIGBUS" : "SIGSEGV");
	/* Not ours: the default action, at once (a fault again on return). */
	signal(sig, SIG_DFL);
	if (si->si_code <= 0) raise(sig);
}

static void catch_damage(void)
{
	bookdb_damage_on(damaged);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: joseki COMMAND [ARGS...]   (joseki help COMMAND, or joseki COMMAND --help: "
	        "its arguments)\n\n"
	        "commands:\n");
	for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
		fprintf(f, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	/* "help COMMAND" is "COMMAND --help". */
	char *help_argv[] = {argv[0], NULL, "--help", NULL};
	if (!strcmp(argv[1], "help") && argc >= 3) {
		help_argv[1] = argv[2];
		argv = help_argv;
		argc = 3;
	} else if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	           !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	shogi_init();
	g_command = argv[1];
	catch_damage();
	memuse_start();
	/* Large arrays past a quarter of the memory the process may have go
	 * to files ($TMPDIR); the commands with --memory say their budget and
	 * their book's directory. */
	bigmem_configure(memuse_default_budget(), NULL);
	for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
		if (!strcmp(argv[1], COMMANDS[i].name)) {
			int rc = COMMANDS[i].fn(argc - 1, argv + 1);
			/* Arrays past the budget that no file could take stayed in
			 * memory (shogi/bigmem.h): the command went on, and says so. */
			char why[330];
			if (bigmem_failure(why, sizeof why))
				joseki_error("%s: arrays past --memory were kept in memory: %s",
				             argv[1], why);
			return rc;
		}
	joseki_error("unknown command '%s' (try 'joseki help')", argv[1]);
	return 2;
}
