/* kineto.h - `tpsim import kineto`: PyTorch profiler (Kineto) traces to tpsim's trace format.
 *
 * A Kineto trace is Chrome trace-event JSON (optionally gzip'ed): GPU activity (`kernel`,
 * `gpu_memcpy`, `gpu_memset`: stream, start and duration), the host's launches (`cuda_runtime`,
 * `cuda_driver`, linked to their kernel by correlation id), the aten and c10d ops with their
 * recorded shapes and dtypes (`cpu_op`, `user_annotation`, linked by External id), and user
 * annotations. Each GPU event becomes one op with its recorded times:
 * - a kernel launched by aten::mm/addmm/matmul/linear is a `gemm`, by aten::bmm/baddbmm an
 *   `attn` (batched) GEMM, with FLOPs and bytes from the launching op's shapes and dtype;
 * - an NCCL kernel (ncclKernel_* / ncclDevKernel_*) is the collective its name says, sized from
 *   the launching c10d op (In msg nelems and dtype, or its input's shape); its group is the
 *   process group's ranks when the trace names them, else every imported rank;
 * - anything else is an opaque `compute` op with its measured duration.
 * Compute ops go on stream 0 and collectives on streams 1..3 by CUDA stream. Dependencies are
 * inferred as the tracer does: an op waits for the last op of another stream that ended before
 * it started. The host: each op's launch is its launch call's time plus the trace's launch
 * latency (the smallest gap from a launch call to its kernel's start), so a replay keeps the
 * host-bound gaps. Layers and phases come from annotations naming a layer and forward/backward,
 * iterations from ProfilerStep#N (else the file is one iteration, its profiler window). Units:
 * seconds (the JSON's microseconds converted).
 */
#ifndef VAL_KINETO_H
#define VAL_KINETO_H

#include "common/error.h"

/* Bounds on what a profiler trace may ask for (docs/reliability.md). */
#define KIN_MAX_RANK     ((1 << 20) - 1) /* distributedInfo.rank and --rank */
#define KIN_MAX_JSON_MIB 256             /* JSON text per file, decompressed */
#define KIN_MAX_GROUPS   4096            /* distinct process groups per import */

struct kin_summary {
    int nranks;              /* files imported */
    int ops, gemms, attns;   /* ops written, GEMMs and batched GEMMs among them */
    int colls, opaque;       /* collectives, opaque compute kernels */
    double span_s, busy_s;   /* first GPU event to last, and GPU busy time, rank 0 */
    double launch_latency_s; /* rank 0's launch latency */
};

/* Imports files[0..n) (one rank each; `rank` >= 0 overrides a single file's rank) into the
 * trace directory `out`, recording `platform` (or NULL). */
int kin_import(const char *const *files, int n, int rank, const char *out, const char *platform,
               struct kin_summary *sum, struct tps_error *err);

#endif
