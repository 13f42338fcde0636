/* planner.h - the strategy planner behind `tpsim plan`.
 *
 * For a scenario's model, platform and TP degree d, the planner enumerates 1D, every 2D mesh
 * d1 x d2 = d in both placements, ATP chunk overlap (k = 1, 2, 4, 8), Oases on and off,
 * PrimePar, the block meshes that d allows (summa2d, tesseract, tp3d) and optionally sequence
 * parallelism. It ranks them analytically: one layer is lowered, rank 0's ops are
 * list-scheduled on their in-order streams with closed-form collective times (planner_predict)
 * and the layer's time is scaled by layers x micro-batches. It then simulates the best
 * candidates with SimGrid over every layer and micro-batch, the layers folded as `run` folds
 * them (pipeline_simulate_layers: 3 and 4 layers simulated; the fold is kept even where the
 * middle layers did not take quite the same time, and the row says how far apart they were), so
 * 96 layers plan in about the time of 12; the scenario's run.fold: false replays every layer.
 * Memory per GPU comes from mdl_strategy_memory; candidates that do not fit in the
 * device's memory are dropped unless asked. Units: seconds, bytes.
 */
#ifndef PIPELINE_PLANNER_H
#define PIPELINE_PLANNER_H

#include "common/error.h"
#include "models/program.h"
#include "platforms/topo.h"
#include "core/scenario.h"
#include "pipeline/planhook.h"

/* Rank 0's schedule with every op in order on its stream, after its dependencies and its launch
 * by the host (launch costs summed in program order), compute ops
 * lasting their duration and collectives their closed form (algorithm and protocol from the
 * tuner, filled into the ops). Returns the end time, or -1 with *err set. */
double planner_predict(struct mdl_program *p, const struct plat_topo *t, struct tps_error *err);
/* The same, with the end of the last forward op in *fwd_s (may be NULL). */
double planner_predict_phases(struct mdl_program *p, const struct plat_topo *t, double *fwd_s,
                              struct tps_error *err);

/* The compute-stream kernels of program p's GPU that has the most, s: no schedule of p runs
 * faster (a planner's lower bound). */
double planner_compute_bound(const struct mdl_program *p);

/* A fold whose middle layers ended at most this far apart (relative to a layer's time) is
 * exact: the engine's timing precision, not the schedule. */
#define PLANNER_FOLD_EXACT 1e-6

struct planner_opts {
    int sequence_parallel; /* also try 1D with sequence parallelism */
    int async_tp;      /* on its 1D candidates with sequence parallelism, PyTorch's async TP too */
    int simulate;      /* how many of the best predictions to simulate (0: none) */
    int ignore_memory; /* keep candidates that do not fit in the device's memory */
    const struct plan_hook *hook; /* who simulates the chosen candidates (NULL: the planner) */
    int jobs;                     /* simulations at a time, in forked workers (<= 1: in turn) */
};

struct planner_row {
    struct mdl_strategy st;
    char desc[160];
    double predicted_s;    /* per iteration (layers x micro-batches) */
    double simulated_s;    /* per iteration, or 0 when not simulated */
    double bound_s;        /* per iteration, below which it cannot simulate: the busiest GPU's
                              compute-stream kernels (0: none) */
    int pruned;            /* not simulated: its bound is above a better candidate's simulated
                              time */
    double fold_spread;    /* simulated with the layers folded: how far apart the middle layers
                              ended, relative (pipeline_simulate_layers); -1 every layer run */
    struct mdl_memory mem; /* per GPU */
    int fits;              /* mem.total <= the device's memory */
};

/* What planner_run did besides the rows. */
struct planner_info {
    int candidates;      /* enumerated */
    int dropped;         /* left out because they do not fit in memory */
    int pruned;          /* of those chosen to simulate, left unsimulated by their bound */
    double model_flop;   /* model FLOPs of one iteration (layers x micro-batches) */
    int folded;          /* how many of the simulated ones had their layers folded */
    int inexact;         /* of which the middle layers ended more than PLANNER_FOLD_EXACT apart */
    double worst_spread; /* the largest fold_spread */
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
