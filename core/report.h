/* report.h - what a replay means to a person: iteration time, where it goes, per layer.
 *
 * Built from a program and the op times the engine produced for it (core/timing.h). Per rank,
 * compute time is the union of its compute-stream intervals, and exposed communication time the
 * part of its communication-stream intervals during which no compute runs; both are averaged over
 * ranks (leaving out a folded replica's GPUs, models/program.h, which the others stand for). A
 * layer's forward (or backward) time is, per micro-batch, from the first start to the last end of
 * its ops over all ranks, averaged over micro-batches. Units: seconds, FLOP/s.
 */
#ifndef CORE_REPORT_H
#define CORE_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "common/error.h"
#include "core/timing.h"
#include "models/mesh.h"
#include "models/strategy.h"

struct report_layer {
    double fwd_s; /* forward time of the layer, s */
    double bwd_s; /* backward time of the layer, s */
};

/* Where the iteration goes on a GPU: a partition of [0, iteration_s], so that the parts (means
 * over GPUs) sum to iteration_s. compute: the compute stream busy; comm_s[d]: collectives of
 * dimension d running and no compute (an instant when several dimensions' run counts for the
 * first of TP, CP, EP, DP; a plain run's collectives, which serve no dimension, count as TP;
 * PP's stays 0: its waits, and a job's collectives of no one dimension (the gradient norm over
 * the stages, in which the stages that finish first wait for the last), are the bubble's);
 * host_wait: nothing runs and the op that starts next waited for its rank's host to launch it
 * (eager launches of short kernels); rest: in a job the pipeline bubble (waiting for a stage
 * neighbour, the schedule's fill and drain), in a TP group the GPU idle while another finishes. */
struct report_breakdown {
    double compute_s;
    double comm_s[MDL_NDIMS];
    double host_wait_s;
    double rest_s;
};

/* What an iteration of a whole job means for training (report_set_training). Energy counts the
 * GPUs alone: each at its TDP while it computes and at its idle power otherwise (the TDP when no
 * idle power is given: an upper bound). */
struct report_training {
    int known;     /* a whole job: the figures below are set */
    double tokens; /* per iteration: global batch x sequence */
    double tokens_per_s, tokens_per_s_per_gpu;
    double power_w;      /* one GPU's mean power over the iteration */
    int idle_given;      /* an idle power was given (else the TDP stood in) */
    double train_tokens; /* training.tokens; 0: the three below are 0 */
    double time_to_train_s, gpu_hours, energy_kwh;
    double gpu_hour_price, cost; /* cost.gpu_hour, and the training's cost; 0: none */
};

struct report {
    double iteration_s;    /* simulated time of the whole program */
    double compute_s;      /* mean busy time of the compute stream */
    double comm_s;         /* mean busy time of the communication streams */
    double exposed_comm_s; /* mean communication time not hidden under compute */
    /* A whole job (models/job.h): the communication of each parallel dimension (enum mdl_dim:
     * the ops that serve it, program.h's op dim) not hidden under compute and the bytes a GPU
     * sent for it, means per GPU; and the pipeline bubble: what is left of the iteration when a
     * GPU neither computes nor waits for a collective of any dimension but the pipeline's
     * (waiting for a stage neighbour, or idle in the schedule's fill and drain). */
    int job;
    double exposed_dim_s[MDL_NDIMS];
    double exposed_non_pp_s; /* when a collective of a dimension but the pipeline's runs and no
                                compute: their union (two exposed at once count once) */
    double bytes_dim[MDL_NDIMS];
    int dim_used[MDL_NDIMS];  /* the program has ops serving the dimension */
    double pipeline_bubble_s; /* a job's breakdown.rest_s */
    struct report_breakdown breakdown;
    struct report_training training;
    /* Model FLOPs are fixed by model, batch and sequence (mdl_model_flop); they never depend on
     * the strategy. 0 where unknown (a recorded trace names no model). */
    double model_flop;           /* of the iteration, all ranks together */
    double model_tflops_per_gpu; /* model_flop / iteration / ranks / 1e12 */
    double peak_flops;           /* dense peak FLOP/s of one GPU for the dtype, 0 unknown */
    double mfu;                  /* model FLOP/s per GPU / peak_flops, 0 unknown */
    /* Executed FLOPs: what the ops ran, redundant work (a 2D mesh's replicated attention,
     * recomputation) included. */
    double hardware_flop;
    double hardware_tflops_per_gpu;
    double bytes_sent; /* mean bytes a rank sent in collectives */
    /* Balancing under heterogeneity (models/hetero.h): the fraction of the sharded columns
     * ZERO-resizing left out, and the bytes the migration moved (all ranks). */
    double dropped, migrated_bytes;
    /* Expert parallelism (a mixture of experts): the GPU that spends the least time in the
     * expert all-to-alls, which the others wait for there (it arrives last: its experts got the
     * most tokens), the GPU that spends the most, and how much longer it spends (0: no
     * all-to-all, or every GPU within 5% of the longest). */
    int ep_straggler, ep_waiter;
    double ep_wait_s;
    int nranks;
    int nlayers;
    int micro_batches;
    struct report_layer *layers; /* owned, nlayers entries */
    /* Memory per GPU against the device, when the report comes from a scenario. */
    int has_memory;
    struct mdl_memory memory;
    double device_mem_bytes; /* capacity of one GPU */
    double reserved_bytes;   /* of which a job cannot have (mdl_device_reserved) */
    int memory_fits;         /* memory.total <= device_mem_bytes - reserved_bytes */
};

struct report_meta {
    const char *scenario; /* scenario file or trace dir */
    const char *model;    /* model description */
    const char *device;   /* device preset */
    const char *platform; /* platform description */
    const char *strategy; /* strategy description */
    const char *folding;  /* what a job's simulation folded (pipeline/pipeline.h), or NULL */
    const char *hetero;   /* devices, speed factors and balancing (models/hetero.h), or NULL */
    /* what the figures rest on that no measurement of this device gave, or NULL (a new GPU's
     * GEMM curve carried over from another's fit: mdl_device.assumed_gemm) */
    const char *assumed;
    double params, active_params; /* the model's parameters, and those a token goes through
                                     (mdl_model_params); 0 unknown (a trace names no model) */
};

int report_build(const struct mdl_program *p, const struct timing *tm, struct report *r);
void report_release(struct report *r);
/* Fills r->training for a job of `tokens` per iteration on r->nranks GPUs of tdp_w (computing)
 * and idle_w (otherwise; 0: tdp_w) watts, trained on train_tokens (0: not given) at
 * gpu_hour_price a GPU-hour (0: not given). */
void report_set_training(struct report *r, double tokens, double train_tokens, double tdp_w,
                         double idle_w, double gpu_hour_price);
/* Sets the breakdown's rest (and a job's pipeline bubble) to what its other parts leave of
 * the iteration: after report_build, and after a caller moves time between the parts. */
void report_breakdown_close(struct report *r);
/* The report of nlayers identical layers from reports a and b of the same program with a->nlayers
 * and a->nlayers + 1 of them (at least 3 in b): every additive figure as a's plus one layer's
 * increment (b - a) per added layer, the rates from those; the per-layer times of b's first,
 * middle and last layer. *out is new (release it); TPS_ENOMEM on failure. */
int report_extrapolate(const struct report *a, const struct report *b, int nlayers,
                       struct report *out);
/* Adds the memory per GPU and the device's capacity to the report. */
void report_set_memory(struct report *r, const struct mdl_memory *m, double capacity,
                       double reserved);
/* When the memory does not fit: one warning line naming the need, the capacity and the
 * shortfall (nothing otherwise). */
void report_warn_memory(const struct report *r, const char *device, FILE *f);
void report_print(const struct report *r, const struct report_meta *m, FILE *f);
/* A breakdown as report_json writes it (its "breakdown": compute_s, each dimension's exposed
 * collectives but the pipeline's, host_wait_s, and the rest as pipeline_bubble_s for a whole job
 * or idle_s): a new jansson object, NULL when out of memory. */
struct json_t *report_breakdown_json(const struct report_breakdown *b, bool job);

/* The report as written by report_write_json (a new jansson object, NULL when out of memory). */
struct json_t *report_json(const struct report *r, const struct report_meta *m);
int report_write_json(const struct report *r, const struct report_meta *m, const char *path,
                      struct tps_error *err);
int report_write_csv(const struct report *r, const struct report_meta *m, const char *path,
                     struct tps_error *err);
/* Chrome trace JSON (opens in Perfetto): one process per GPU, one thread per stream. */
int report_write_timeline(const struct mdl_program *p, const struct timing *tm, const char *path,
                          struct tps_error *err);

/* Measure of the union of n intervals [s_i, e_i) and of its intersection with another union.
 * Exposed in the header because tests check the interval arithmetic directly. */
double report_interval_union(double (*iv)[2], int n);
double report_interval_exposed(double (*a)[2], int na, double (*b)[2], int nb);

#endif
