/* strategy.h - tensor-parallel strategies and their lowering to a per-rank program.
 *
 * This strategy is 1D tensor parallelism (Megatron-LM), with or without sequence
 * parallelism. Lowering emits, for every micro-batch, the forward of every layer then the
 * backward in reverse, on rank 0..tp-1, with compute durations priced by compute.h.
 * Formulas: ../shared/design/strategies.md sections 1 and 8; op list: docs/workload.md.
 */
#ifndef MDL_STRATEGY_H
#define MDL_STRATEGY_H

#include <stdbool.h>

#include "common/error.h"
#include "device.h"
#include "program.h"
#include "transformer.h"

enum mdl_strategy_kind { MDL_STRAT_1D };

struct mdl_strategy {
    enum mdl_strategy_kind kind;
    int tp;                    /* TP degree d: ranks in the group */
    bool sequence_parallel;    /* AR -> RS + AG; norms and dropout on s/d tokens */
    bool async_grad_allreduce; /* backward input-grad AR overlaps the weight-grad GEMM */
};

/* Checks the strategy against the model (d divides heads, hidden and ffn; and seq with SP).
 * On failure fills err->msg and err->field (relative: "tp"), leaving position to the caller. */
int mdl_strategy_check(const struct mdl_strategy *st, const struct mdl_model *m,
                       struct tps_error *err);

/* Lowers `layers` layers x `micro_batches` micro-batches into *out (initialised here; release
 * it with mdl_program_release even on failure). */
int mdl_strategy_lower(const struct mdl_strategy *st, const struct mdl_model *m,
                       const struct mdl_device *dev, int layers, int micro_batches,
                       struct mdl_program *out, struct tps_error *err);

#endif
