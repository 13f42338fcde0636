/* planner.h - the strategy planner behind `tpsim plan`.
 *
 * For a scenario's model, platform and TP degree d, the planner enumerates 1D, every 2D mesh
 * d1 x d2 = d in both placements, ATP chunk overlap (k = 1, 2, 4, 8), Oases on and off, and
 * optionally sequence parallelism. It ranks them analytically: one layer is lowered, and rank
 * 0's ops are list-scheduled on their in-order streams with closed-form collective times
 * (planner_predict). It then simulates the best candidates with SimGrid. Layers are
 * identical, so one layer (forward and backward) is simulated once and scaled by layers x
 * micro-batches. Memory per GPU comes from mdl_strategy_memory; candidates that do not fit in
 * the device's memory are dropped unless asked. Units: seconds, bytes.
 */
#ifndef PIPELINE_PLANNER_H
#define PIPELINE_PLANNER_H

#include "common/error.h"
#include "models/program.h"
#include "platforms/topo.h"
#include "core/scenario.h"

/* Rank 0's schedule with every op in order on its stream, after its dependencies and its launch
 * by the host (launch costs summed in program order), compute ops
 * lasting their duration and collectives their closed form (algorithm and protocol from the
 * tuner, filled into the ops). Returns the end time, or -1 with *err set. */
double planner_predict(struct mdl_program *p, const struct plat_topo *t, struct tps_error *err);
/* The same, with the end of the last forward op in *fwd_s (may be NULL). */
double planner_predict_phases(struct mdl_program *p, const struct plat_topo *t, double *fwd_s,
                              struct tps_error *err);

struct planner_opts {
    int sequence_parallel; /* also try 1D with sequence parallelism */
    int simulate;          /* how many of the best predictions to simulate (0: none) */
    int ignore_memory;     /* keep candidates that do not fit in the device's memory */
};

struct planner_row {
    struct mdl_strategy st;
    char desc[160];
    double predicted_s;    /* per iteration (layers x micro-batches) */
    double simulated_s;    /* per iteration, or 0 when not simulated */
    struct mdl_memory mem; /* per GPU */
    int fits;              /* mem.total <= the device's memory */
};

/* What planner_run did besides the rows. */
struct planner_info {
    int candidates;    /* enumerated */
    int dropped;       /* left out because they do not fit in memory */
    double model_flop; /* model FLOPs of one iteration (layers x micro-batches) */
};

/* qsort order of two rows by their predicted and simulated times (0: not simulated): the
 * simulated ones first, by simulated time, then the rest by prediction. */
int planner_result_cmp(double xp, double xs, double yp, double ys);

/* Fills *rows (malloc'ed, sorted: simulated ones by simulated time, then the rest by prediction)
 * with the candidates that fit in the device's memory (all of them with o->ignore_memory), and
 * *info. When none fits, fails naming the smallest need. */
int planner_run(const struct scn_scenario *s, const struct planner_opts *o,
                struct planner_row **rows, int *nrows, struct planner_info *info,
                struct tps_error *err);

#endif
