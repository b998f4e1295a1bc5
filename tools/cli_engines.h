/* tools/cli_engines.h — the engine and number options shared by think and worker. */
#ifndef TOOLS_CLI_ENGINES_H
#define TOOLS_CLI_ENGINES_H

#include <signal.h>
#include <stdint.h>

#include "search/search.h"
#include "search/usi_engine.h"

/* Parses s as a positive decimal number into *out. 0, or -1 after
 * "joseki: CMD: OPT wants a positive number, not 'S'" on stderr. */
int cli_positive(uint64_t *out, const char *s, const char *cmd, const char *opt);

/*
 * Takes arg ("NAME=VALUE", split in place) as the next of at most max USI
 * options. 0, or -1 after "joseki: CMD: FLAG wants NAME=VALUE ..." on stderr.
 */
int cli_usi_option(UsiOption *opts, int *n, int max, char *arg, const char *cmd, const char *flag);

/*
 * Starts n engines: "builtin" (in-process, 16 MB hash each) or the USI
 * program at path engine with the options (handshakes side by side); cancel
 * is polled by every engine (the command's stop flag). 0, or -1 after a
 * message on stderr; engines[] may then hold some engines: search_free each.
 */
int cli_open_engines(SearchEngine **engines, int n, const char *engine, const UsiOption *opts,
                     int nopts, const volatile sig_atomic_t *cancel, const char *cmd);

#endif
