/* compare.h - a recorded trace against its simulation, op by op (`tpsim validate trace`).
 *
 * The trace (tracer output after trace-merge) is replayed through the pipeline on the platform
 * it ran on, and each recorded op's simulated duration is set beside its recorded one: totals
 * per op kind, spans per layer (first start to last end over ranks), the whole iteration, and
 * every op for the worst list, and each iteration (validate/recording.h: iterations, warm-up and
 * the host's launch times, replayed as they were recorded). Warm-up ops are left out of the
 * per-kind sums and the worst list. With a scenario, each recorded GEMM and memory-bound kernel
 * is also priced by the scenario device's compute model. Units: seconds.
 */
#ifndef VAL_COMPARE_H
#define VAL_COMPARE_H

#include "common/error.h"
#include "models/program.h"

struct cmp_kind {
    int n;              /* recorded ops of this kind */
    double recorded_s;  /* sum of recorded durations */
    double simulated_s; /* sum of simulated durations */
    double model_s;     /* sum of the compute model's durations (compute kinds, with a scenario) */
};

struct cmp_layer {
    int layer;          /* -1: ops outside layers */
    double recorded_s;  /* first recorded start to last recorded end, over ranks */
    double simulated_s; /* the same, simulated */
};

struct cmp_iter {
    int iter;           /* iteration index */
    int warmup;         /* it holds warm-up ops: not in the summary */
    double recorded_s;  /* first recorded start to last recorded end, over ranks */
    double simulated_s; /* the same, simulated */
};

struct cmp_op {
    int rank, op;
    int kind;         /* enum mdl_op_kind */
    const char *name; /* the op's name (owned by the result's program) */
    double recorded_s, simulated_s;
    double model_s; /* -1 when not priced */
    int warmup;     /* recorded during warm-up */
};

struct cmp_result {
    char trace[1024];     /* the directory read */
    char platform[1100];  /* the platform it ran on */
    int nranks, recorded; /* ranks, recorded ops */
    int has_model;        /* a scenario priced the compute ops */
    double recorded_end_s, simulated_end_s;
    struct cmp_kind kind[MDL_OP_NKINDS];
    int nlayers;
    struct cmp_layer *layers; /* owned: layers with recorded ops, in order */
    int layer_iter;           /* the iteration the layers are timed in; -1: the whole trace */
    int nops;
    struct cmp_op *ops;   /* owned: every recorded op, in program order (rank, then op) */
    struct cmp_op *worst; /* owned: ops after warm-up, largest |simulated - recorded| first */
    int nworst;
    int warmup_ops;     /* recorded ops left out as warm-up */
    int host_from_gaps; /* launch times read from the GPU's idle gaps (none measured) */
    int niters;
    struct cmp_iter *iters;                   /* owned: every iteration, in order */
    int scored_iters;                         /* iterations without warm-up */
    double iter_recorded_s, iter_simulated_s; /* medians over the scored iterations */
    double iter_max_abs_err_pct;              /* the largest |error| of a scored iteration */
    struct mdl_program prog;                  /* owned: the trace */
};

/* Compares trace `dir` replayed on `platform` (a --platform line; NULL: the scenario's, else the
 * recorded one). `scenario` (or NULL) prices compute ops. Release *r even on failure. */
int cmp_trace(const char *dir, const char *platform, const char *scenario, struct cmp_result *r,
              struct tps_error *err);
void cmp_release(struct cmp_result *r);

/* Writes out/ops.dat (rank op kind recorded_s simulated_s model_s) and out/ops.gp, and plots it
 * with gnuplot into out/ops.png and ops.svg; *plotted (may be NULL) says whether gnuplot ran. */
int cmp_write(const struct cmp_result *r, const char *out, int *plotted, struct tps_error *err);

#endif
