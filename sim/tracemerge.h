/* tracemerge.h - assembling the per-rank output of the CUDA/NCCL tracer (validate/tracer) into a
 * trace directory that `tpsim run`/`tpsim replay` read: groups from the communicators every rank
 * recorded, and meta.tps. No SimGrid here. */
#ifndef SIM_TRACEMERGE_H
#define SIM_TRACEMERGE_H

#include "common/error.h"

/* Merges dir in place; `platform` (or NULL) is recorded as the trace's platform. */
int sim_trace_merge(const char *dir, const char *platform, struct tps_error *err);

#endif
