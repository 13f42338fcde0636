/* jobplan.h - the planner over whole jobs behind `tpsim plan` on a job scenario.
 *
 * For the job's N GPUs and global batch, jobplan_run enumerates every (tp, pp, dp) with
 * tp x pp x dp = N (tp within one machine and dividing the heads, pp dividing the layers), every
 * micro-batch size (1, 2, 4, 8) that divides the batch per replica, the 1F1B schedule and the
 * interleaved one (virtual stages dividing the layers per stage, up to 8), recomputation (none,
 * selective, full), 1D TP with and without sequence parallelism, and the training knobs the
 * scenario does not pin (jobplan_knobs: the ZeRO stage, 0 and 1 with pipeline stages, 0 to 3
 * without; overlap_grad_reduce where the stage leaves the reduction to the end;
 * overlap_param_gather with the distributed optimizer; and overlap_p2p_comm on interleaved
 * candidates); the scenario's model, platform and
 * device are kept. On the job shapes of the JOBPLAN_KIND_BASES best
 * predicted 1D candidates (tp > 1) it then tries the other TP kinds: ATP's 2D meshes
 * d1 x d2 = tp in both placements, ATP's chunk overlap (2 and 4 chunks) and Oases' schedule.
 * Candidates whose memory per GPU (mdl_job_memory) does not fit are dropped. The rest are ranked by
 * a closed form:
 *
 *   T = (M v + p - 1)(t_f + t_b) + M t_logits + 2 (p - 1) t_p2p + M v t_gather
 *       + t_dp + t_optimizer
 *
 * with t_f, t_b one chunk's forward and backward (a layer's from planner_predict_phases, times
 * its layers), t_logits the last stage's logits and loss per micro-batch, t_p2p one message
 * between stages on its route, t_gather the all-gather of a received message over the TP
 * mesh's columns (1D: the TP group) where activations are not sharded, t_dp the stage's gradient
 * reduction (and parameter gather) over its replicas, all of one stage's groups at once (tuner's
 * closed form; overlapped, what the chunks' compute does not cover, at least the last bucket),
 * and t_optimizer the memory-bound step. A candidate with context parallelism runs its attention
 * fused (mdl_strategy_framework). The best are then simulated as whole jobs
 * (layers and replicas folded, pipeline.h), and the best of them again with FP8 and with the TP
 * overlap toggled (jobplan_info.buys). Units: seconds, bytes.
 */
#ifndef PIPELINE_JOBPLAN_H
#define PIPELINE_JOBPLAN_H

#include "common/error.h"
#include "core/scenario.h"
#include "models/job.h"
#include "pipeline/planhook.h"

/* The training knobs the planner searches besides the shape, in the order of their SCN_PIN_*
 * bits (core/scenario.h): a job scenario pins one by giving its key under `training:`
 * (distributed_optimizer pins zero too), or overlap_p2p_comm under `pipeline:`. */
enum { JOBPLAN_NKNOBS = 4 };
extern const char *const jobplan_knobs[JOBPLAN_NKNOBS];
/* Knob k's value in job j (zero: its stage; the others 0 or 1). */
int jobplan_knob(const struct mdl_job *j, int k);

/* How many of the best predicted 1D candidates get the other TP kinds tried on their shape. */
#define JOBPLAN_KIND_BASES 8

struct jobplan_opts {
    int simulate;      /* how many of the best predictions to simulate (0: none) */
    int ignore_memory; /* keep candidates that do not fit in the device's memory */
    int async_tp;      /* also search PyTorch's async TP (as where the scenario sets it) */
    const struct plan_hook *hook; /* who simulates the chosen candidates (NULL: the planner) */
    int jobs;                     /* simulations at a time, in forked workers (<= 1: in turn) */
};

struct jobplan_row {
    struct mdl_strategy st; /* TP kind and degree, sequence parallelism, recomputation */
    struct mdl_job job;     /* pp, dp, schedule, virtual stages, micro-batches per replica */
    int micro_batch;        /* sequences per micro-batch */
    char desc[256];
    double predicted_s;              /* per iteration */
    double bound_s;                  /* per iteration, below which it cannot simulate: a stage's
                                        share of the layers' compute-stream kernels (0: none) */
    int pruned;                      /* not simulated: its bound is above a better candidate's
                                        simulated time */
    double simulated_s;              /* per iteration, or 0 when not simulated */
    double bubble_s;                 /* simulated: pipeline bubble, mean per GPU */
    double compute_s;                /* simulated: the breakdown's compute, mean per GPU */
    double exposed_dim_s[MDL_NDIMS]; /* simulated: each dimension's exposed communication */
    int dim_used[MDL_NDIMS];         /* simulated: the job has ops serving the dimension */
    struct mdl_memory mem;           /* the GPU that needs the most */
    int fits;
};

/* What Transformer Engine's two switches buy the best simulated configuration: it simulated again
 * with FP8 toggled (the candidates are ranked in the scenario's precision: FP8 changes the
 * numerics) and with the TP overlap toggled (a best with PyTorch's async TP: with it off). */
enum { JOBPLAN_BUY_FP8, JOBPLAN_BUY_TP_OVERLAP, JOBPLAN_NBUYS };
struct jobplan_buy {
    int tried;          /* the switch applies to the best configuration and it was simulated */
    int on;             /* the variant has the switch on (the best has it off) */
    int async_tp;       /* JOBPLAN_BUY_TP_OVERLAP: the switch is async TP's, not TE's */
    double simulated_s; /* the variant's iteration */
};

struct jobplan_info {
    int gpus;          /* N */
    long global_batch; /* sequences per iteration */
    int candidates;    /* enumerated */
    int dropped;       /* left out: they do not fit in memory */
    int pruned;        /* of those chosen to simulate, left unsimulated by their bound */
    double model_flop; /* of one iteration: the same for every candidate */
    struct jobplan_buy buys[JOBPLAN_NBUYS];
};

/* Fills *rows (malloc'ed; simulated ones first by simulated time, then the rest by prediction)
 * and *info for job scenario s. Fails when no candidate fits, naming the smallest need. */
int jobplan_run(const struct scn_scenario *s, const struct jobplan_opts *o,
                struct jobplan_row **rows, int *nrows, struct jobplan_info *info,
                struct tps_error *err);

/* Simulates row w of scenario s as a whole job, its layers and replicas folded, and fills its
 * simulated time, bubble and each dimension's exposed communication. */
int jobplan_simulate(const struct scn_scenario *s, struct jobplan_row *w, struct tps_error *err);

#endif
