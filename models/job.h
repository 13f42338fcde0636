/* job.h - a whole training job: tensor x pipeline x data parallelism, its pipeline schedule,
 * the optimizer, the job's memory per GPU, and its lowering to one program over every GPU.
 *
 * Ranks follow Megatron-LM's order by default: tensor-parallel rank fastest, then data-parallel
 * replica, then pipeline stage (rank = t + tp * (d + dp * s)), so a TP group sits inside a
 * machine and pipeline and data parallelism cross machines; job->order permutes them. Stage s holds
 * layers [s*L/pp, (s+1)*L/pp), or, interleaved, the model chunks c*pp + s of L/(pp*v) layers each;
 * the first holds the embedding and the last the logits and the loss. Stages exchange activations
 * and their gradients as point-to-point messages (each TP rank sends its 1/tp share, Megatron's
 * scatter-gather: the receivers all-gather it back over their TP group unless sequence
 * parallelism already shards it). The schedule (gpipe, 1f1b, interleaved 1f1b) fixes the order
 * of each stage's forward and backward steps; bubbles come out of the replay. After the last
 * backward, each stage's gradients are all-reduced over its data-parallel group (reduce-scatter,
 * optimizer, all-gather with the distributed optimizer, ZeRO-1), the tied embedding's gradient
 * between the first and last stage, and the optimizer step runs as memory-bound work. ZeRO-2
 * reduce-scatters each bucket's gradients after every micro-batch's backward of it, ZeRO-3 also
 * all-gathers each bucket's parameters before every forward and backward of it (on a stream of
 * its own, at most one bucket ahead of the compute).
 * Formulas and sources: docs/jobs.md. Units: seconds, bytes, FLOPs.
 */
#ifndef MDL_JOB_H
#define MDL_JOB_H

#include <stdbool.h>

#include "common/error.h"
#include "device.h"
#include "framework.h"
#include "mesh.h"
#include "program.h"
#include "strategy.h"
#include "transformer.h"

enum mdl_schedule { MDL_SCHED_1F1B, MDL_SCHED_GPIPE, MDL_SCHED_INTERLEAVED };
extern const char *const mdl_schedule_names[]; /* in enum order, NULL-terminated */

/* Order of the parallel dimensions in the global rank, fastest first: Megatron-LM's default
 * tp-dp-pp, its tp-pp-dp mapping, or any other permutation. */
enum mdl_rank_order {
    MDL_ORDER_TP_DP_PP,
    MDL_ORDER_TP_PP_DP,
    MDL_ORDER_DP_TP_PP,
    MDL_ORDER_DP_PP_TP,
    MDL_ORDER_PP_TP_DP,
    MDL_ORDER_PP_DP_TP
};
extern const char *const mdl_rank_order_names[]; /* "tp-dp-pp", ... in enum order */

struct mdl_job {
    int pp, dp;                 /* pipeline stages, data-parallel replicas */
    enum mdl_schedule schedule; /* order of a stage's forward and backward steps */
    int virtual_stages;         /* model chunks per stage (interleaved), else 1 */
    int micro_batches;          /* per replica and iteration: global batch / (dp x micro-batch) */
    int zero;                   /* ZeRO stage over the replicas: 0 none; 1 optimizer state sharded
                                   (Megatron-LM's distributed optimizer: gradients reduce-scattered,
                                   parameters all-gathered after the step); 2 gradients too
                                   (reduce-scattered after every micro-batch's backward); 3
                                   parameters too (all-gathered before every forward and backward) */
    bool untied_embeddings;     /* the logits have their own weights (no embedding all-reduce) */
    bool overlap_grad_reduce;   /* each bucket's gradients reduced as soon as the last backward of
                                   its layers is done, under the rest of the backward */
    enum mdl_rank_order order;  /* how (t, d, s) make the global rank */
    bool overlap_param_gather;  /* distributed optimizer: each bucket's parameters gathered under
                                   the forward (the first micro-batch of each chunk waits for its
                                   buckets) instead of after the optimizer step */
    bool grad_reduce_in_bf16;   /* bf16 training (FP8 included): the gradients accumulated and
                                   reduced in bf16 (Megatron-LM's --grad-reduce-in-bf16, NeMo's
                                   grad_sync_dtype bf16) instead of Megatron-LM's fp32 main
                                   gradients */
    bool fp8_param_gather;      /* FP8 with the distributed optimizer: the layers' weights kept
                                   as FP8 only (no 16-bit copy) and all-gathered in FP8
                                   (Megatron-LM's --fp8-param-gather, NeMo's fp8_params) */
    bool tp_only_amax_red;      /* FP8: delayed scaling's amaxes reduced over the TP group only
                                   (Megatron-LM's --tp-only-amax-red) instead of its amax-reduction
                                   group, a stage's tp x cp x dp GPUs */
    /* Uneven stages (Megatron-LM's --decoder-first-pipeline-num-layers and
     * --decoder-last-pipeline-num-layers): the first and the last stage's layers (0: an even
     * share), the others splitting the rest evenly; or (--account-for-embedding-in-pipeline-
     * split, --account-for-loss-in-pipeline-split) the embedding and the loss counted as one
     * layer each of the first and the last virtual stage, which then hold one layer fewer. */
    int first_stage_layers, last_stage_layers;
    bool account_embedding, account_loss;
    /* The interleaved schedule's point-to-point messages posted as soon as a step computes and
     * waited for only by the next step of the same direction (Megatron-LM's
     * --overlap-p2p-communication; NeMo's overlap_p2p_comm), instead of one batched, blocking
     * call between steps (batch_p2p_comm) */
    bool overlap_p2p_comm;
    /* pipeline.batch_p2p_sync: false (Megatron-LM's batch_p2p_sync, NeMo's sync_batch_comm): a
     * batched call's messages are still waited for by the next step's compute, but the host does
     * not synchronize the device after it, so work in flight on other streams (the data-parallel
     * buckets) is not waited for and the host launches ahead */
    bool batch_p2p_nosync;
};

/* GPUs holding the same weights, over which gradients are reduced and the distributed
 * optimizer shards: dp x cp (Megatron-LM's data-parallel group with context parallelism). */
int mdl_job_grad_replicas(const struct mdl_job *job, const struct mdl_strategy *st);
/* GPUs holding the same experts, over which their gradients are reduced: a stage's tp x cp x dp
 * GPUs over expert_tp x ep. */
int mdl_job_expert_replicas(const struct mdl_job *job, const struct mdl_strategy *st);
/* Parameters per gradient bucket, Megatron-LM's default: max(40 M, 1 M x dp x cp). */
double mdl_job_bucket_params(const struct mdl_job *job, const struct mdl_strategy *st);
/* Whole layers per bucket of a chunk, at least one and at most the chunk's. */
int mdl_job_bucket_layers(const struct mdl_job *job, const struct mdl_strategy *st,
                          const struct mdl_model *m);
/* Bytes of one gradient element as Megatron-LM accumulates and reduces it: fp32 main gradients
 * in bf16 training unless grad_reduce_in_bf16, the training dtype otherwise. */
double mdl_job_grad_bytes(const struct mdl_job *job, const struct mdl_model *m);
/* Bytes of one layer parameter as the replicas gather it: FP8's 1 with fp8_param_gather, the
 * training dtype's otherwise (the embedding's stay 16-bit). */
double mdl_job_gather_bytes(const struct mdl_job *job, const struct mdl_model *m);
/* The memory-bound work around the optimizer of a GPU holding `params` parameters, as the
 * lowering prices it: zeroing the gradients, fp16 unscaling, the norm and Adam (on its shard
 * with the distributed optimizer). */
double mdl_job_update_time(const struct mdl_job *job, const struct mdl_strategy *st,
                           const struct mdl_model *m, const struct mdl_device *dev, double params);

/* Parameters one GPU of stage s holds: its layers' share and the embedding's (first stage, and
 * the last with the logits), whole, before any ZeRO sharding. */
double mdl_job_stage_params(const struct mdl_job *job, const struct mdl_strategy *st,
                            const struct mdl_model *m, int s);

/* Of them, the experts' (0 for a dense model): reduced over the expert replicas. */
double mdl_job_stage_expert_params(const struct mdl_job *job, const struct mdl_strategy *st,
                                   const struct mdl_model *m, int s);

/* Checks the job against the strategy and model (layers divide into stages and chunks, the
 * interleaved schedule's micro-batch count a multiple of pp). Fills err->msg and err->field
 * (relative: "pp", "virtual_stages", "micro_batches"). */
int mdl_job_check(const struct mdl_job *job, const struct mdl_strategy *st,
                  const struct mdl_model *m, struct tps_error *err);

/* GPUs of the job: tp x cp x pp x dp. */
long mdl_job_gpus(const struct mdl_job *job, const struct mdl_strategy *st);
/* The job's GPUs as a mesh (mesh.h): tp x dp x pp, laid in job->order. */
void mdl_job_mesh(const struct mdl_job *job, const struct mdl_strategy *st, struct mdl_mesh *out);
/* Global rank of GPU t of the layer's group (TP rank t mod tp of CP rank t / tp, strategy.h's
 * mdl_strategy_gpus) of replica d in stage s, by job->order (tp-cp-dp-pp: t + tp cp (d + dp s)). */
int mdl_job_rank(const struct mdl_job *job, const struct mdl_strategy *st, int s, int d, int t);
/* The same on the job's mesh (mdl_job_mesh), built once for many ranks. */
int mdl_job_mesh_rank(const struct mdl_mesh *mesh, const struct mdl_strategy *st, int s, int d,
                      int t);
/* The stage, replica and index in the layer's group of a global rank (mdl_job_rank's inverse). */
void mdl_job_coords(const struct mdl_job *job, const struct mdl_strategy *st, int rank, int *s,
                    int *d, int *t);
/* Layers of model chunk c of stage s (virtual stage c pp + s): L / (pp x virtual_stages), or as
 * the uneven split gives them; *first (when not NULL) receives the first of them. */
int mdl_job_chunk_range(const struct mdl_job *job, const struct mdl_model *m, int s, int c,
                        int *first);
/* The most layers one model chunk holds (every chunk's count with an even split). */
int mdl_job_chunk_layers(const struct mdl_job *job, const struct mdl_model *m);

/* FP8's delayed scaling (Transformer Engine): after a chunk's forward, and after its backward,
 * the amaxes its FP8 GEMMs recorded are all-reduced (max) over the amax-reduction group before
 * the compute goes on. mdl_job_amax_ranks: that group's GPUs (a stage's tp x cp x dp, or tp with
 * tp_only_amax_red), 0 in 16-bit training. mdl_job_amax_bytes: the amaxes of `layers` layers
 * from layer `first`, 4 bytes each: 3 per GEMM forward (input, weight, output), 2 backward. */
int mdl_job_amax_ranks(const struct mdl_job *job, const struct mdl_strategy *st,
                       const struct mdl_model *m);
double mdl_job_amax_bytes(const struct mdl_strategy *st, const struct mdl_model *m, int first,
                          int layers, bool fwd);

/* Layers folded into one op: a chunk's forward and backward, simulated once with its TP
 * collectives on the fabric (pipeline/), replayed as one compute op each. */
struct mdl_job_fold {
    double fwd_s, bwd_s;       /* a chunk of one micro-batch: forward, backward (recompute in) */
    double fwd_flop, bwd_flop; /* executed FLOPs of one TP rank in them */
    double tp_comm_s;          /* its collectives' busy time (TP, and CP's), forward and backward */
    double tp_exposed_s;       /* the part of it not under compute */
    double tp_bytes;           /* the bytes one GPU sends in them */
    int layers;                /* the layers the chunk simulated held (0: a chunk's) */
    double cp_exposed_s;       /* of which context parallelism's: exposed time, */
    double cp_bytes;           /* and bytes */
    double ep_exposed_s;       /* of which expert parallelism's: exposed time, */
    double ep_bytes;           /* bytes, */
    double ep_wait_s;          /* and the longest wait for the straggler (report.h) */
    int ep_straggler;          /* the straggler's global rank, */
    int ep_waiter;             /* and the GPU that waited longest */
    int inexact;               /* TP groups of different stages share links: their collectives
                                  meet at times the folded chunk does not see */
    double split_s[MDL_NDIMS]; /* tp_exposed_s by dimension as the report's breakdown splits it */
    double host_wait_s;        /* the chunk's GPU waiting for its host's launches */
};

/* How the data-parallel replicas are lowered. Replicas run the same program at the same times
 * on a symmetric fabric, so replica 0 can stand for the others: their GPUs become shadows
 * (mdl_program.shadow) with no compute, whose communication ops mirror replica 0's (they start
 * when its op starts). */
enum mdl_replicas {
    MDL_REPLICAS_FULL,   /* every replica op by op */
    MDL_REPLICAS_MIRROR, /* the others mirror all of replica 0's communication: their traffic
                            loads the links they share with it */
    MDL_REPLICAS_SHARED, /* the others keep only the collectives over several replicas (data
                            parallel, the optimizer's norm): for a fabric on which no link carries
                            more traffic of several replicas' own than it can */
    MDL_REPLICAS_GROUPS  /* the groups of MDL_REPLICAS_FULL, no ops but the templates' */
};

/* Lowers one iteration of the whole job into *out (initialised here; release it even on
 * failure). fold NULL: every layer op by op; else each chunk's layers as fold says. rep: how
 * replicas 1.. are lowered. MDL_REPLICAS_GROUPS: out->groups as MDL_REPLICAS_FULL makes them,
 * the ops of each stage's first GPU only (the others have none): for a check of the groups. */
int mdl_job_lower(const struct mdl_job *job, const struct mdl_strategy *st,
                  const struct mdl_model *m, const struct mdl_device *dev,
                  const struct mdl_framework *fw, const struct mdl_job_fold *fold,
                  enum mdl_replicas rep, struct mdl_program *out, struct tps_error *err);

/* Ops the lowering would make (all ranks), from one micro-batch's stages without allocating
 * every rank (an upper bound within the few ops of the iteration's start and end); -1 when the
 * job does not fit the model. */
double mdl_job_ops(const struct mdl_job *job, const struct mdl_strategy *st,
                   const struct mdl_model *m, const struct mdl_device *dev,
                   const struct mdl_framework *fw, const struct mdl_job_fold *fold);

/* What simulating the job op by op costs, in op-members: mdl_job_ops with each op weighed by
 * the GPUs it takes part with (a collective over 128 replicas costs 128 compute ops: each member
 * steps through it). The same bound and -1 as mdl_job_ops. */
double mdl_job_cost(const struct mdl_job *job, const struct mdl_strategy *st,
                    const struct mdl_model *m, const struct mdl_device *dev,
                    const struct mdl_framework *fw, const struct mdl_job_fold *fold);

/* Model FLOPs of one iteration, all GPUs: every layer and the logits, forward and backward, of
 * every micro-batch of every replica. Never depends on the strategy or the schedule. */
double mdl_job_model_flop(const struct mdl_job *job, const struct mdl_model *m);

/* Memory of the GPU that needs the most (the stage with the most weights and micro-batches in
 * flight): its weights, gradients, optimizer state (sharded over dp with the distributed
 * optimizer) and the activations its schedule keeps at its peak. Returns out->total. */
double mdl_job_memory(const struct mdl_job *job, const struct mdl_strategy *st,
                      const struct mdl_model *m, const struct mdl_framework *fw,
                      struct mdl_memory *out);

/* The most micro-batch chunks stage s keeps activations for at once under the schedule. */
int mdl_job_in_flight(const struct mdl_job *job, int s);
/* The forwards stage s runs before its first backward (1F1B and interleaved: Megatron-LM's
 * warm-up, at most the whole schedule). */
int mdl_job_warmup_steps(const struct mdl_job *job, int s);

/* One step of a stage's schedule: the forward or backward of one model chunk for one
 * micro-batch. */
struct mdl_job_step {
    enum mdl_phase phase;
    int chunk, mb;
};
/* Fills steps[0 .. 2 x v x micro_batches) with stage s's steps in the order it runs them. */
void mdl_job_schedule(const struct mdl_job *job, int s, struct mdl_job_step *steps);

#endif
