/* tools/cli_ingest.h — options and reports shared by ingest, fetch and import. */
#ifndef TOOLS_CLI_INGEST_H
#define TOOLS_CLI_INGEST_H

#include <stdbool.h>

#include "ingest/ingest.h"

/*
 * Consumes argv[*i] (and its value) if it is a filter or ingest option
 * (--min-rating --max-ply --since --until --event --time-control --jobs).
 * Returns 1 when consumed (advancing *i past the value), 0 when not an
 * ingest option, 2 on a bad value (message printed).
 */
int cli_ingest_option(IngestOptions *opt, int argc, char **argv, int *i, const char *cmd);

/* Prints the summary line (human) or the JSON object (stdout), and the errors
 * (stderr, human mode). */
void cli_ingest_report(const IngestStats *st, bool json, const char *cmd);

/* True when stderr is a terminal and --quiet was not given. */
bool cli_progress_wanted(bool quiet);

#endif
