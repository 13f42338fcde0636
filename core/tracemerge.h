/* tracemerge.h - assembling the per-rank output of the CUDA/NCCL tracer (validate/tracer) into a
 * trace directory that `tpsim run`/`tpsim replay` read: groups from the communicators every rank
 * recorded, and meta.tps. No SimGrid here. */
#ifndef CORE_TRACEMERGE_H
#define CORE_TRACEMERGE_H

#include "common/error.h"

/* Merges the recording in dir into a trace directory `out` (NULL: dir/merged), written beside
 * and renamed into place, so the recording itself is never changed. `platform` (or NULL) is
 * recorded as the trace's platform. Refuses a dir that is a trace already, and an existing
 * `out` unless `force`. */
int trace_merge(const char *dir, const char *out, const char *platform, int force,
                struct tps_error *err);

#endif
