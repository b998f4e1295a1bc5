/* tools/cli_ingest.h — options and reports shared by ingest, fetch and import. */
#ifndef TOOLS_CLI_INGEST_H
#define TOOLS_CLI_INGEST_H

#include <stdbool.h>

#include "ingest/ingest.h"
#include "tools/cli_opt.h"

/*
 * The ingest options (ingest_options_init's defaults) and their table, a
 * fragment for ingest's and fetch's (CLI_GROUP(c->table)): the filters
 * --min-rating --max-ply --since --until --event --time-control, the mate
 * scores --mate-clamp --mate-plies, and --jobs. c must stay where it is.
 */
typedef struct {
	IngestOptions opt;
	CliOpt table[10];
} CliIngest;

void cli_ingest_init(CliIngest *c);

/* Prints the summary line (human) or the JSON object (stdout), and the errors
 * (stderr, human mode). 0, or -1 after "joseki: out of memory". */
JOSEKI_MUST_USE int cli_ingest_report(const IngestStats *st, bool json, const char *cmd);

/* True when stderr is a terminal and --quiet was not given. */
bool cli_progress_wanted(bool quiet);

/* An IngestProgressFn for ingest and fetch: one overwritten line on stderr
 * (what is being walked, or the games read), wiped at "done". */
void cli_ingest_progress(void *ctx, const char *phase, const IngestProgress *p);

#endif
