/* strategy.h - tensor-parallel strategies and their lowering to a per-rank program.
 *
 * 1D tensor parallelism (Megatron-LM, optionally with sequence parallelism) and ATP's 2D tensor
 * parallelism on a d1 x d2 mesh, laid row-first (device = i*d2 + j) or column-first
 * (device = j*d1 + i). 1D is lowered as the mesh (d, 1), so the two coincide there by
 * construction. Lowering emits, for every micro-batch, the forward of every layer then the
 * backward in reverse, with compute durations priced by compute.h; every rank runs the same ops,
 * each axis's collectives on the rank's own row (d2 axis) or column (d1 axis) group.
 * PrimePar's spatial-temporal partitioning (kind primepar, tp = d) keeps every activation
 * sharded on the hidden dim over a ring of d GPUs and runs each linear as d partial GEMMs over
 * d time steps while blocks pass GPU to GPU: forward, the input's blocks rotate and each GPU
 * accumulates its output block in place; backward, the input gradient's partial sums travel
 * round the ring (added to on every hop), then the input's blocks rotate again for the weight
 * gradient. Each shift overlaps the next partial GEMM; there is no all-reduce and no replicated
 * operand, only the layer norms' per-token statistics are all-reduced.
 * Colossal-AI's baselines keep every activation and weight as a block of a q x q mesh (tokens
 * over rows, the hidden dim over columns): 2D (kind summa2d, tp = q^2, Optimus) runs each linear
 * as SUMMA, q steps of a block broadcast along rows and one along columns (backward: broadcasts
 * and reduces to rotating roots); 2.5D (kind tesseract, tp = q^2 x depth) runs SUMMA in each of
 * `depth` slices on 1/depth of the tokens and all-reduces weight gradients over the depth; 3D
 * (kind tp3d, tp = q^3) all-gathers the input and the weight over two axes of a q x q x q cube
 * and reduce-scatters the output over the third (backward: all-gather, two reduce-scatters).
 * Per-sublayer plans (Oases' planner, 1D): the attention and the MLP at their own degrees
 * dividing tp, each sublayer's spare GPUs splitting the micro-batch, tensors all-gathered on the
 * way to a higher degree, weight gradients all-reduced over a sublayer's replicas. PrimePar's
 * mixed partition: rings smaller than tp side by side, each on its share of the micro-batch.
 * Formulas: ../shared/design/strategies.md sections 1, 2, 3, 4, 7 and 8; docs/scenarios.md.
 * Each kind is a row of kind.h's table, in a file of its own (kind_megatron.c, kind_atp.c,
 * kind_primepar.c, kind_block.c); lower.c lowers, strategy.c answers the questions below.
 */
#ifndef MDL_STRATEGY_H
#define MDL_STRATEGY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "device.h"
#include "framework.h"
#include "program.h"
#include "transformer.h"

enum mdl_strategy_kind {
    MDL_STRAT_1D,
    MDL_STRAT_2D,
    MDL_STRAT_PRIMEPAR,
    MDL_STRAT_SUMMA2D,
    MDL_STRAT_TESSERACT,
    MDL_STRAT_TP3D
    /* kinds registered at run time (kind.h) take the values after these */
};
enum mdl_placement { MDL_ROW_FIRST, MDL_COLUMN_FIRST };

/* The settings each kind reads as its own (its file reads, checks and uses them; the scenario
 * refuses them on other kinds, models/kind.h's `keys`). */
struct mdl_atp_opts { /* 2d: ATP's mesh */
    int d1, d2;       /* d1 * d2 == tp (1D: d, 1) */
    enum mdl_placement placement;
    bool extra_allgathers; /* ATP's all-gathers over d2 around norms and attention */
};
struct mdl_sublayer_opts { /* 1d: per-sublayer plans (Oases) */
    int attention_tp;      /* the TP degree of the attention */
    int mlp_tp;            /* and of the MLP, each dividing tp (0: tp). A sublayer of degree
                              t < tp runs on tp/t groups of t consecutive GPUs, each on 1/(tp/t)
                              of the micro-batch; its weights are all-reduced over its tp/t
                              replicas, and an activation moving to a sublayer of higher degree
                              is all-gathered over the GPUs that held its parts */
};
struct mdl_primepar_opts {
    int ring; /* the ring's size (0: tp). A smaller ring is PrimePar's mixed partition: tp/ring
                 rings side by side, each on 1/(tp/ring) of the micro-batch (a spatial split of
                 the batch), their weights' gradients all-reduced across the rings */
};
struct mdl_tesseract_opts {
    int depth; /* the number of q x q slices (tp = q^2 x depth) */
};

/* Context parallelism (Megatron-LM's --context-parallel-size, Transformer Engine's attention):
 * each sequence split into 2 x cp chunks, CP rank i holding chunks i and 2cp - 1 - i (the
 * balanced layout for causal attention), so every GPU of a layer's group (tp x cp of them)
 * holds s/cp tokens of each sequence; everything but the attention core runs on them alone.
 * cp_comm_type says how the attention sees the other ranks' keys and values
 * (docs/context-parallelism.md). */
enum mdl_cp_comm {
    MDL_CP_P2P,        /* ring attention: key/value blocks passed round the CP ring by send and
                          receive, each in flight under the previous block's attention; the
                          backward passes them the other way with their gradients */
    MDL_CP_ALL_GATHER, /* keys and values all-gathered before the attention, their gradients
                          reduce-scattered after its backward */
    MDL_CP_A2A         /* DeepSpeed-Ulysses: all-to-all from a sequence split to a head split
                          before the attention and back after it */
};
extern const char *const mdl_cp_comm_names[]; /* "p2p", "all_gather", "a2a", NULL */

struct mdl_strategy {
    enum mdl_strategy_kind kind;
    int tp;                    /* TP degree d: ranks in the group */
    bool sequence_parallel;    /* 1D: AR -> RS + AG; norms and dropout on s/d tokens */
    bool async_grad_allreduce; /* backward input-grad AR overlaps the weight-grad GEMM */
    int chunks;           /* ATP chunk overlap: each reduced linear in k token chunks, 0/1 off */
    bool tp_comm_overlap; /* 1D with sequence parallelism: Transformer Engine's userbuffers
                             overlap of the TP all-gathers and reduce-scatters with the GEMMs
                             (Megatron-LM's --tp-comm-overlap; docs/fp8.md) */
    bool async_tp;        /* 1D with sequence parallelism: PyTorch's async TP (torch.compile's
                             micro-pipeline TP over symmetric memory; torchtitan's
                             enable_async_tensor_parallel): the same all-gathers and
                             reduce-scatters split per peer, moved by the copy engines */
    bool oases;           /* Oases: two interleaved sub-batches of half the micro-batch */
    bool recompute;       /* recompute each layer's forward before its backward (Oases:
                             without the forward collectives, whose outputs it saved) */
    bool selective;       /* selective recomputation (Korthikanti et al. 2022): only the
                             attention core (scores, softmax, context) is recomputed */
    struct mdl_atp_opts atp;
    struct mdl_sublayer_opts sublayer;
    struct mdl_primepar_opts primepar;
    struct mdl_tesseract_opts tesseract;
    int cp;                   /* context-parallel degree (0 or 1: none) */
    enum mdl_cp_comm cp_comm; /* how the attention crosses the CP group */
    /* Expert parallelism (Megatron-LM's --expert-model-parallel-size and
     * --expert-tensor-parallel-size; models/moe.c, docs/moe.md): a mixture of experts' experts
     * split over ep GPUs, each expert over expert_tp. The expert layers lay the same GPUs out
     * again, expert_tp fastest, then ep, then the expert-data-parallel replicas. */
    int ep;        /* expert-parallel degree (0 or 1: none) */
    int expert_tp; /* the experts' tensor-parallel degree (0: tp) */
};

/* The expert-parallel and expert tensor-parallel degrees, at least 1. */
int mdl_strategy_ep(const struct mdl_strategy *st);
int mdl_strategy_etp(const struct mdl_strategy *st);
/* GPUs a plain run of layers lowers: the layer group (mdl_strategy_gpus), or with experts the
 * fewest whole layer groups that hold whole expert groups (lcm(tp x cp, expert_tp x ep)). */
int mdl_strategy_lower_gpus(const struct mdl_strategy *st, const struct mdl_model *m);
/* Mixture of experts' closed forms (models/moe.c), per GPU and micro-batch of one expert layer,
 * with balanced routing: the tokens a GPU routes (its sequence-parallel share of the
 * micro-batch), the bytes it sends in the dispatch all-to-all (its tokens' top_k copies of h
 * elements, the 1/ep for its own experts staying: the combine sends as many back), its
 * parameters (attention, router, shared experts and its experts' shares) and, of them, the
 * experts'. */
double mdl_moe_tokens(const struct mdl_strategy *st, const struct mdl_model *m);
double mdl_moe_dispatch_bytes(const struct mdl_strategy *st, const struct mdl_model *m);
double mdl_moe_layer_params(const struct mdl_strategy *st, const struct mdl_model *m,
                            double *expert);
/* The tokens of a micro-batch's layer that expert parallelism's rank e (of ep) receives in the
 * dispatch on one GPU: its experts' shares of its EP group's routed tokens, or with a capacity
 * factor every expert's capacity. */
double mdl_moe_received(const struct mdl_strategy *st, const struct mdl_model *m, int e);
/* The EP rank whose experts get the most tokens, and its share of them. */
int mdl_moe_hot_rank(const struct mdl_strategy *st, const struct mdl_model *m, double *share);

/* Context parallelism's closed forms for one micro-batch (models/context.c): the bytes of one
 * ring step (the keys and values of a rank's s/cp tokens and its heads: 2 b (s/cp) kv_heads hd
 * / tp elements), and the bytes one GPU sends in one layer's attention, forward and backward
 * (p2p and all_gather: 3 (cp - 1) ring steps; a2a: 2 (cp - 1)/cp of its q, k, v and output).
 * 0 without context parallelism. */
double mdl_cp_step_bytes(const struct mdl_strategy *st, const struct mdl_model *m);
double mdl_cp_layer_bytes(const struct mdl_strategy *st, const struct mdl_model *m);
/* The context-parallel degree: cp, at least 1. */
int mdl_strategy_cp(const struct mdl_strategy *st);
/* GPUs one layer of one micro-batch runs on: tp x cp, a TP group per CP rank (rank k of the
 * group is TP rank k mod tp of CP rank k / tp). */
int mdl_strategy_gpus(const struct mdl_strategy *st);

/* The TP degree of a sublayer (mlp 0: the attention, 1: the MLP): tp unless a per-sublayer plan
 * gives another. */
int mdl_strategy_sub_tp(const struct mdl_strategy *st, int mlp);
/* Whether the attention and the MLP do not both run at degree tp (a per-sublayer plan). */
bool mdl_strategy_is_mixed(const struct mdl_strategy *st);

/* The framework strategy st runs its layers under: fw, with the attention fused (flash) where
 * st has context parallelism, whose ring attention is Transformer Engine's fused kernel (a
 * scenario with strategy.cp >= 2 is loaded so; a planner's CP candidate of a scenario without
 * CP takes it here). */
struct mdl_framework mdl_strategy_framework(const struct mdl_strategy *st,
                                            const struct mdl_framework *fw);

/* Whether activations between the TP regions are sharded over the group (sequence parallelism,
 * PrimePar), so that a pipeline stage sends its share alone. */
bool mdl_strategy_shards_activations(const struct mdl_strategy *st);

/* The kind's scenario name ("1d", "2d", "primepar", "summa2d", "tesseract", "tp3d"), and back:
 * 0, or -1 for an unknown name. */
const char *mdl_strategy_kind_name(enum mdl_strategy_kind k);
int mdl_strategy_kind_parse(const char *name, enum mdl_strategy_kind *out);
/* Mesh of a strategy: (tp, 1) for 1D, (ring, 1) for PrimePar, (q, q) for the block meshes;
 * (0, 0) when tp is no square (summa2d), no square times the depth (tesseract) or no cube
 * (tp3d). */
void mdl_strategy_mesh(const struct mdl_strategy *st, int *d1, int *d2);
/* The third axis: tesseract's depth, tp3d's q, PrimePar's rings side by side (tp/ring), 1
 * otherwise. */
int mdl_strategy_depth(const struct mdl_strategy *st);
/* Device id of mesh position (i, j) of slice 0 under the strategy's placement (slice l adds
 * l x d1 x d2). */
int mdl_strategy_device(const struct mdl_strategy *st, int i, int j);

/* One-line description: "2d tp=16 mesh 2x8 row-first +2-chunk overlap". */
void mdl_strategy_describe(const struct mdl_strategy *st, char *buf, size_t len);
/* Memory one GPU needs for training, bytes, by kind (formulas in docs/compute-model.md). */
struct mdl_memory {
    double weights;     /* the GPU's shard of the parameters in the training dtype */
    double gradients;   /* their gradients, same dtype */
    double optimizer;   /* Adam: fp32 master weights, momentum and variance (12 B/param in mixed
                           precision; 8 B/param, no master copy, when training in fp32) */
    double activations; /* saved for backward: one micro-batch through `layers` layers */
    double total;       /* the sum */
};

/* Bytes one micro-batch keeps for backward in one layer on one GPU: all of them (*full), or,
 * under full recomputation, the layer's input alone (*input). */
void mdl_strategy_layer_activations(const struct mdl_strategy *st, const struct mdl_model *m,
                                    const struct mdl_framework *fw, double *full, double *input);
/* Bytes of one layer's FP8 weight copies on one GPU (0 unless the model is FP8). */
double mdl_strategy_fp8_weight_bytes(const struct mdl_strategy *st, const struct mdl_model *m);
/* Parameters of one layer held by one GPU. */
double mdl_strategy_layer_params(const struct mdl_strategy *st, const struct mdl_model *m);
/* The weights, gradients and Adam state of `params` parameters in dtype dt, the state split
 * over optimizer_shards GPUs (mixed precision 2 + 2 + 12 B per parameter, fp32 4 + 4 + 8). */
void mdl_memory_params(double params, enum mdl_dtype dt, double optimizer_shards,
                       struct mdl_memory *out);
/* Fills *out for `layers` layers of the model under the strategy and returns out->total. */
double mdl_strategy_memory(const struct mdl_strategy *st, const struct mdl_model *m,
                           const struct mdl_framework *fw, int layers, struct mdl_memory *out);

/* Checks the strategy against the model (d1 divides heads and ffn, d2 hidden; seq with SP).
 * On failure fills err->msg and err->field (relative: "tp"), leaving position to the caller. */
int mdl_strategy_check(const struct mdl_strategy *st, const struct mdl_model *m,
                       struct tps_error *err);

/* The most ops a lowered program may hold, all ranks together, unless the environment variable
 * TPSIM_MAX_OPS says otherwise: 20 million ops, about 2.4 GB of program (docs/reliability.md). */
/* Largest TP degree (and mesh side) a strategy may have. */
#define MDL_MAX_TP 4096

#define MDL_MAX_OPS_DEFAULT 20000000.0
double mdl_max_ops(void);
/* TPS_OK when a program of nops ops is within mdl_max_ops(); else an error on `field` that
 * names both and ends with `hint` (what to do instead). */
int mdl_ops_check(double nops, const char *field, const char *hint, struct tps_error *err);
/* An op count as errors print it: "2.23e+07", or "more than 2e+07" for a count that stopped at
 * the limit (mdl_job_ops' infinity). Returns buf. */
const char *mdl_ops_text(double nops, char *buf, size_t len);

/* The number of ops (all ranks) the lowering of `layers` x `micro_batches` would produce,
 * counted exactly by lowering one layer of one micro-batch, without allocating the rest. -1 when
 * the strategy does not fit the model. */
double mdl_strategy_ops(const struct mdl_strategy *st, const struct mdl_model *m,
                        const struct mdl_device *dev, const struct mdl_framework *fw, long layers,
                        long micro_batches);

/* fw (NULL: a zeroed framework: no host, fused kernels, attention as batched GEMMs) says which
 * kernels a layer runs and what launching each costs the host (framework.h). */
/* Lowers `layers` layers x `micro_batches` micro-batches into *out (initialised here; release
 * it with mdl_program_release even on failure). */
int mdl_strategy_lower(const struct mdl_strategy *st, const struct mdl_model *m,
                       const struct mdl_device *dev, const struct mdl_framework *fw, int layers,
                       int micro_batches, struct mdl_program *out, struct tps_error *err);

/* Rank 0's ops alone (a one-rank program in *out, initialised here: release it even on failure,
 * its collectives naming group markers) as mdl_strategy_lower orders them, on device dev, with
 * the rank computing `share` of its 1D shard (its columns and heads; 1: the plain shard). The ops
 * are those of every rank of the strategy one for one, only their times, FLOPs and bytes differ:
 * heterogeneity.h re-prices ranks with it. 0, or -1 on allocation failure. */
int mdl_strategy_lower_share(const struct mdl_strategy *st, const struct mdl_model *m,
                             const struct mdl_device *dev, const struct mdl_framework *fw,
                             int layers, int micro_batches, double share, struct mdl_program *out);

/* Piecewise lowering, for whole jobs (models/job.h). An emitter appends one rank's ops to a
 * program: a range of layers forward or backward for one micro-batch, or the embedding and the
 * logits of the model. Its collectives name the group markers MDL_GROUP_D1 (the rank's
 * column, the d1 axis: the whole group in 1D) and MDL_GROUP_D2 (its row), which the caller
 * replaces with real groups (mdl_strategy_axis_groups). */
#define MDL_GROUP_D1 (-2)
#define MDL_GROUP_D2 (-3)
/* The third axis of a block mesh (tesseract's depth, tp3d's third side): the rank's pillar. */
#define MDL_GROUP_D3 (-14)
/* PrimePar's ring: the pair (this rank, the next member), on which it sends, and the pair
 * (the previous member, this rank), on which it receives (mdl_strategy_ring_groups). */
#define MDL_GROUP_SHIFT_TO   (-12)
#define MDL_GROUP_SHIFT_FROM (-13)
/* Per-sublayer plans (1D): the rank's attention and MLP groups (t consecutive ranks), their
 * replica groups (the tp/t ranks at the same place in each group: weight gradients are
 * all-reduced there) and the re-layout group (the ranks of the larger-degree sublayer's group
 * at the same place in the smaller-degree sublayer's groups: activations and gradients moving
 * to the larger degree are all-gathered there). Lowering of a TP group alone; whole jobs do not
 * take per-sublayer plans. */
#define MDL_GROUP_SUB_ATTN (-15)
#define MDL_GROUP_SUB_MLP  (-16)
#define MDL_GROUP_REP_ATTN (-17)
#define MDL_GROUP_REP_MLP  (-18)
#define MDL_GROUP_RELAYOUT (-19)
/* Context parallelism: the pairs (this rank, the next CP rank) and (the previous CP rank, this
 * rank) of the ring attention's forward, the pairs (this rank, the previous) and (the next,
 * this rank) of its backward, and the rank's whole CP group (all-gather, all-to-all). Every
 * TP rank has a ring of its own, through the same TP rank of each CP rank. */
#define MDL_GROUP_CP_TO        (-20)
#define MDL_GROUP_CP_FROM      (-21)
#define MDL_GROUP_CP_BACK_TO   (-22)
#define MDL_GROUP_CP_BACK_FROM (-23)
#define MDL_GROUP_CP           (-24)
/* Expert parallelism: the rank's EP group (the dispatch and combine all-to-alls) and its expert
 * tensor-parallel group. */
#define MDL_GROUP_EP  (-25)
#define MDL_GROUP_ETP (-26)

/* The planner's candidates (pipeline/planner.c): every kind's in table order (models/kind.h),
 * each passed to add, which returns nonzero to stop (that value is returned; 0 otherwise).
 * mdl_strategy_candidate: the base strategy as kind k with every kind's own settings cleared
 * (mesh, per-sublayer degrees, ring, depth, chunks, Oases, sequence parallelism): what a
 * candidate starts from; recomputation and the gradient overlap stay the base's. */
typedef int (*mdl_strategy_add)(void *ctx, const struct mdl_strategy *st);
int mdl_strategy_candidates(const struct mdl_strategy *base, bool sp, mdl_strategy_add add,
                            void *ctx);
struct mdl_strategy mdl_strategy_candidate(const struct mdl_strategy *base,
                                           enum mdl_strategy_kind k);

struct mdl_emitter;

/* NULL on allocation failure. The program, model, device and framework are borrowed. */
struct mdl_emitter *mdl_emitter_new(const struct mdl_strategy *st, const struct mdl_model *m,
                                    const struct mdl_device *dev, const struct mdl_framework *fw,
                                    struct mdl_program *p, int rank);
void mdl_emitter_free(struct mdl_emitter *E);

/* Layers [first, first + n) of micro-batch mb, forward (in order) or backward (in reverse, each
 * recomputed first as the strategy says). The first compute op also waits for op `after` of the
 * rank (-1: none). Returns the index of the last op emitted, -1 on allocation failure. */
int mdl_emitter_layers(struct mdl_emitter *E, enum mdl_phase ph, int first, int n, int mb,
                       int after);

/* The vocabulary-parallel embedding (first stage) or the logits and the cross-entropy loss
 * (last stage) of micro-batch mb, forward or backward, over model->vocab; nothing when the
 * model has no vocabulary. Same `after` and return value as mdl_emitter_layers (`after` itself
 * when nothing is emitted). */
int mdl_emitter_embedding(struct mdl_emitter *E, enum mdl_phase ph, int mb, int after);
int mdl_emitter_logits(struct mdl_emitter *E, enum mdl_phase ph, int mb, int after);

/* Any op, as the emitter would give it (name, layer -1, micro-batch mb, phase, launch cost);
 * returns its index or -1. */
int mdl_emitter_op(struct mdl_emitter *E, struct mdl_op *op, const char *name, int mb,
                   enum mdl_phase ph);

/* The row, column and pillar groups of the TP group whose members are ranks base[0..tp-1]
 * (member i at mesh device i): row[i], col[i] and pil[i] receive the groups of base[i] (-1 on an
 * axis of size 1; pil may be NULL for kinds of two axes). A row's members are in column order,
 * a column's in row order, so that a broadcast's root is the index along the axis. Returns 0
 * or -1 on allocation failure. */
int mdl_strategy_axis_groups(const struct mdl_strategy *st, struct mdl_program *p, const int *base,
                             int *row, int *col, int *pil);

/* Expert parallelism's groups over ranks base[0..n-1] (laid out expert_tp fastest, then ep, then
 * the expert-data-parallel replicas), each a communicator of its own: each member's EP group in
 * ep_g, expert-TP group in etp_g and, unless edp_g is NULL, expert-data-parallel group in edp_g
 * (made after the others); -1 for a group of one. 0, or -1 on allocation failure. */
int mdl_strategy_expert_groups(const struct mdl_strategy *st, struct mdl_program *p,
                               const int *base, int n, int *ep_g, int *etp_g, int *edp_g);

/* PrimePar's ring over ranks base[0..tp-1] (member i at mesh device i): to[i] receives the
 * pair group (base[i], base[i+1]) and from[i] the pair (base[i-1], base[i]), indices modulo
 * tp; -1 for other kinds or tp 1. Returns 0 or -1 on allocation failure. */
int mdl_strategy_ring_groups(const struct mdl_strategy *st, struct mdl_program *p, const int *base,
                             int *to, int *from);

#endif
