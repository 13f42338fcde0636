/* locate.h - placing an error of a later stage (lowering, folding, planning, simulating) in the
 * scenario file it came from. Those stages know a field ("tp", "strategy.tp", "jobs[1].layers")
 * but not the file; the command that read the file locates the error before printing it, so that
 * every error names the file, line, column and field (docs/reliability.md). */
#ifndef CORE_LOCATE_H
#define CORE_LOCATE_H

#include "common/error.h"

/* When err names no file (or names `path` without a line): names `path`, and the line and
 * column of err's field in it. A field is a dotted path from the root ("strategy.tp",
 * "jobs[1].strategy.tp"); a bare key ("tp") is looked for in each section of a scenario, within
 * the job a "jobs[i]" prefix names. A key the file does not hold (a preset's value) is placed at
 * the nearest section the file holds. Leaves err alone when the file cannot be read. */
void scn_error_locate(const char *path, struct tps_error *err);

#endif
