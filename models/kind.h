/* kind.h - the table of tensor-parallel strategy kinds, and what a kind's file lowers with.
 *
 * A kind (Megatron 1D, ATP's 2D mesh, PrimePar's ring, Colossal-AI's block meshes, or one a
 * program registers) is a row of function pointers and a few flags: its mesh, its checks, its
 * description, its memory terms and the bodies of a layer's attention and MLP, forward and
 * backward, plus the embedding and the logits. strategy.c holds the table and answers
 * strategy.h's questions through it; lower.c drives the lowering (micro-batches, layers, Oases'
 * sub-batches, recomputation, the groups of every rank) and calls the rows' bodies, which emit
 * rank 0's ops with the lw_* primitives below. A new kind is one file defining its row, its
 * declaration here and its line in strategy.c's table; or, from a program or a test alone,
 * mdl_kind_register() at run time. docs/architecture.md, "Adding a strategy kind".
 */
#ifndef MDL_KIND_H
#define MDL_KIND_H

#include <stdbool.h>
#include <stddef.h>

#include "compute.h"
#include "strategy.h"

/* Lowering context for rank 0; the other ranks get identical copies (lower.c). */
struct mdl_lower {
    struct mdl_program *p;
    const struct mdl_model *m;
    const struct mdl_device *dev;
    const struct mdl_strategy *st;
    const struct mdl_kind *kind;
    const struct mdl_framework *fw;
    double d1, d2; /* mesh */
    double d3;     /* the third axis (mdl_strategy_depth), 1 when there is none */
    double frac;   /* share of the micro-batch being lowered: 1, or 1/2 for Oases sub-batches */
    int sub;       /* Oases: current sub-batch */
    int pend[2];   /* Oases: pending collective of each sub-batch */
    int no_comm;   /* lowering a recomputation whose collectives are not repeated */
    int rank;      /* the rank whose ops are emitted */
    int layer, mb; /* current layer and micro-batch */
    uint8_t phase; /* current phase */
    int pending;   /* last collective whose result the next compute op consumes, -1 none */
    int pending2;  /* a second one (SUMMA: the weight block beside the input block) */
    int after;     /* an op of another stream the next compute op waits for (a pipeline
                      receive), -1 none */
    int oom;       /* allocation failure seen */
    int last_comp; /* the last compute op emitted, -1 none */
    int graph[3];  /* CUDA graphs: (layer, micro-batch, phase) of the graph being captured */
    /* per-sublayer plans (1D): the current sublayer runs at degree d1 on 1/rep of the (sub-)
     * batch, its d1-axis collectives on group marker axis1 (0: the whole group) */
    double rep;
    int axis1;
    int layout[2];  /* degree whose layout the activations are in, per Oases sub-batch */
    int glayout[2]; /* and the gradients */
    int nmb;        /* micro-batches lowered (weight gradients are reduced after the last) */
    int ep_rank;    /* expert parallelism: the rank's EP rank (the experts it holds) */
    double share;   /* 1D: the rank's share of its d1 shard (heterogeneity.h's balancing): its
                       columns and heads times share; collectives keep their size */
    int ub_splits;  /* tp_comm_overlap: a linear's GEMM and reduce-scatter in this many pieces
                       (Transformer Engine's pipeline method), 0: the strategy's chunks */
    int ub_sms;     /* tp_comm_overlap: SMs its communication kernels hold beside the GEMMs
                       being lowered (set_sm_margin): the GEMMs run on the rest */
    int ub_call;    /* tp_comm_overlap: 1 while lowering one call into Transformer Engine, whose
                       C++ launches all its pieces: the first op pays the host's launch (then 2),
                       the others none */
    int no_fp8;     /* lowering a linear Transformer Engine does not run (the logits, the
                       router): its GEMMs in the model dtype even when the model is FP8 */
};

/* Shapes of the current (sub-)batch: Oases splits the micro-batch in two sub-batches. */
struct mdl_dims {
    double d1, d2, b, s, h, f, a, bs, tok;
    double q, u, kv; /* QKV and FC1 output widths, key/value heads per head */
    double cp;       /* context parallelism: s is the rank's seq/cp tokens of each sequence */
    bool sp, glu;
};

/* Group markers of rank 0's ops until each rank gets its own row, column or pillar group. */
enum { LW_AXIS_D1 = MDL_GROUP_D1, LW_AXIS_D2 = MDL_GROUP_D2, LW_AXIS_D3 = MDL_GROUP_D3 };

typedef void (*mdl_kind_body)(struct mdl_lower *L);

struct tps_ydoc;

struct mdl_kind {
    const char *name; /* strategy.kind in a scenario */
    /* The kind's own keys under a scenario's strategy: (NULL-terminated; NULL: none): refused on
     * other kinds. read (NULL: nothing) reads them from map node id into st; a kind whose keys
     * give the TP degree (2d: its mesh) sets st->tp and *tp_node to the node that gives it, so
     * that strategy.tp may be left out. */
    const char *const *keys;
    int (*read)(const struct tps_ydoc *d, int id, struct mdl_strategy *st, int *tp_node,
                struct tps_error *err);
    /* What a whole job (pp, dp, pipeline, training) does not take yet: fills err with a field
     * relative to strategy ("ring") and returns its code; NULL: a job takes any strategy of it. */
    int (*job_check)(const struct mdl_strategy *st, struct tps_error *err);
    bool balances; /* FlexTP's balancing applies (hetero.h: it moves the 1D shard's columns) */
    /* Activations between the TP regions are sharded over the group (as sequence parallelism
     * shards them): pipeline stages send a share, reductions over d1 are reduce-scatters. */
    bool sharded;
    bool sublayers;      /* takes per-sublayer degrees (attention_tp, mlp_tp) */
    bool ring;           /* takes `ring`: the d1 axis is PrimePar's ring of send/recv pairs */
    bool axis_streams;   /* each mesh axis's collectives on a stream of their own (d2: the TP
                            stream, d1 and d3: the next two), as separate communicators are */
    bool depth_replicas; /* the third axis splits the micro-batch (replicas of the d1 x d2 mesh) */
    int norm_axis;       /* sharded kinds: the axis a layer norm's statistics are reduced over */
    bool context;        /* takes context parallelism (strategy.cp): its layer runs the shared
                            attention core (lw_attn_core_*) on D.s = seq/cp tokens */

    /* The mesh (d1, d2), (0, 0) when tp does not make one; the third axis (NULL: 1). */
    void (*mesh)(const struct mdl_strategy *st, int *d1, int *d2);
    int (*depth)(const struct mdl_strategy *st);
    /* GPUs of a block mesh of side q that split the micro-batch (NULL: none, each GPU holds its
     * sequences whole). */
    long (*batch_split)(const struct mdl_strategy *st, int q);
    /* The kind's own checks (mdl_strategy_check runs the common ones around it); sets *d to the
     * degree heads, key/value heads and widths are split over. */
    int (*check)(const struct mdl_strategy *st, const struct mdl_model *m, long *d,
                 struct tps_error *err);
    /* "2d tp=16 mesh 2x8 row-first" followed by opts (the common options). */
    void (*describe)(const struct mdl_strategy *st, const char *opts, char *buf, size_t len);
    /* GPUs one layer's parameters are split over (NULL: tp); bytes of activations the kind keeps
     * beyond the common terms, in 16-bit units (NULL: none). */
    double (*param_shards)(const struct mdl_strategy *st);
    double (*extra_activations)(const struct mdl_strategy *st, const struct mdl_model *m);

    /* A layer's attention and MLP, forward and backward, run on L's current (sub-)batch. */
    mdl_kind_body attn_fwd, mlp_fwd, mlp_bwd, attn_bwd;
    /* The embedding and the logits (with the loss) of L's micro-batch, phase L->phase. */
    mdl_kind_body embedding, logits;
    /* Sharded kinds (sharded.c's layer): a linear (K x N) forward or backward, `odd` counting
     * the layer's linears; the weight gradients of sublayer mlp after the last micro-batch
     * (NULL: nothing). */
    void (*linear)(struct mdl_lower *L, const char *name, double K, double N, int odd, int bwd);
    void (*wgrad)(struct mdl_lower *L, int mlp);

    /* The planner's candidates of this kind (self: the value its strategies' kind field takes)
     * on the base->tp GPUs of a TP group: each one mdl_strategy_candidate(base, self) with the
     * kind's own settings filled in, passed to add (the planner keeps those the model admits);
     * sp: sequence parallelism may be tried. NULL: the planner tries none. Returns add's first
     * nonzero, or 0. */
    int (*candidates)(enum mdl_strategy_kind self, const struct mdl_strategy *base, bool sp,
                      mdl_strategy_add add, void *ctx);
};

/* The built-in kinds (rows of strategy.c's table, in enum mdl_strategy_kind's order). */
extern const struct mdl_kind mdl_kind_1d, mdl_kind_2d, mdl_kind_primepar, mdl_kind_summa2d,
    mdl_kind_tesseract, mdl_kind_tp3d;

/* The row of a strategy's kind (its kind must be built in or registered). */
const struct mdl_kind *mdl_kind_of(const struct mdl_strategy *st);
/* The rows in table order: the i-th, NULL past the last. */
const struct mdl_kind *mdl_kind_at(int i);
/* Adds a kind to the table (its name must be new): returns the value its strategies' kind field
 * takes, or -1 when the name is taken or the table is full (MDL_MAX_KINDS). The row is
 * borrowed for the program's life. */
#define MDL_MAX_KINDS 32
int mdl_kind_register(const struct mdl_kind *k);

/* Lowering primitives (lower.c): each appends one op of rank L->rank with the current layer,
 * micro-batch and phase and its host launch cost, and returns its index (-1 on allocation
 * failure, recorded in L->oom). A compute op first takes the pending collectives (L->pending,
 * L->pending2) and L->after as dependencies. */
int lw_emit(struct mdl_lower *L, struct mdl_op *op, const char *name);
/* GEMM batch x (m x k)(k x n); kind MDL_OP_GEMM or MDL_OP_ATTN. */
int lw_gemm(struct mdl_lower *L, enum mdl_op_kind kind, const char *name, double batch, double m,
            double n, double k);
/* Memory-bound kernel of kind k touching `elems` elements in total; lw_mem: element-wise;
 * lw_eager_mem: one PyTorch's unfused ops add (none when fused). */
int lw_mem_k(struct mdl_lower *L, enum mdl_mem_kind k, const char *name, double elems);
/* FP8 (model.fp8, docs/fp8.md): whether the linear GEMMs being lowered run in FP8; the
 * cast-transpose kernel Transformer Engine runs on a linear's `elems`-element 16-bit input (or
 * output gradient) before its FP8 GEMMs (reads 2 bytes per element, writes the FP8 copy and its
 * transpose, 1 byte each); returns it, or `x` when the linear is not FP8. lw_fp8_scale: the
 * size of an FP8 linear input against the model dtype's (0.5; 1 when not FP8), for the
 * all-gathers that carry it. */
int lw_fp8(const struct mdl_lower *L);
int lw_fp8_cast(struct mdl_lower *L, const char *name, double elems, int x);
double lw_fp8_scale(const struct mdl_lower *L);
int lw_mem(struct mdl_lower *L, const char *name, double elems);
void lw_eager_mem(struct mdl_lower *L, const char *name, double elems);
/* What the next op working on the current tensor waits for: the pending collective that made
 * it, or else the last compute op. */
int lw_ready(const struct mdl_lower *L);
/* Collective over one mesh axis on `elems` elements (full size) rooted at member `root`, once
 * op `after` (-1: none) has completed; none (-1) on an axis of size 1 or in a recomputation
 * without collectives. lw_coll: rooted at 0, and the next compute op waits for it. */
int lw_coll_on(struct mdl_lower *L, enum mdl_op_kind kind, const char *name, double elems,
               int after, int axis, int root);
int lw_coll(struct mdl_lower *L, enum mdl_op_kind kind, const char *name, double elems, int after,
            int axis);
/* Megatron's "g": the all-reduce after a row-parallel linear (reduce-scatter over d1 when the
 * kind or sequence parallelism shards activations). */
int lw_reduce_out(struct mdl_lower *L, const char *name, double elems, int after, int axis);
/* A linear (tokens x k) @ (k x n) whose output is reduced over `axis`, in ATP's token chunks
 * when strategy.chunks asks; returns the last collective (or GEMM). */
int lw_linear_reduce(struct mdl_lower *L, const char *gname, const char *cname, double tokens,
                     double n, double k, int axis);
/* Shapes of the current (sub-)batch; lw_whole_dims: of the whole micro-batch. */
struct mdl_dims lw_dims(const struct mdl_lower *L);
struct mdl_dims lw_whole_dims(struct mdl_lower *L);
/* x + dropout(y) on n elements; layer norm backward on n; the MLP's activation. */
void lw_dropout_add(struct mdl_lower *L, const char *name, double n);
int lw_ln_bwd(struct mdl_lower *L, const char *name, double n);
void lw_mlp_act(struct mdl_lower *L, const struct mdl_dims *D, int bwd);
/* Fused attention (FlashAttention) of bh batch x heads, sq queries by sk keys of head dim hd,
 * forward (4 bh sq sk hd FLOPs: two GEMMs, scores never leave the chip; q, k, v read and o
 * written) or backward (2.5 times the forward's FLOPs: the scores recomputed, five GEMMs; q, k,
 * v, o, do read and dq, dk, dv written), at the device's flash efficiency of that count, or, on
 * a device with measured rates (device.h, mdl_flash_curve) where they are faster, the half of it
 * the kernel computes at the measured rate of a causal block (dense 0) or of a dense half block
 * (dense 1: a ring step of context parallelism) of that work. Grouped-query attention reads each
 * key/value head once for its group of query heads. */
int lw_flash(struct mdl_lower *L, const char *name, double bh, double sq, double sk, double hd,
             int bwd, int dense);
/* A block of `bytes` sent on pair group marker `to` (stream `send`) and one received on `from`
 * (stream `recv`), posted together (NCCL's grouped send and receive: one launch) once the ops
 * `after` and `after2` (-1: none) have completed; dim is the op dim they serve. Returns the
 * receive, which the op using the block waits for. */
int lw_shift(struct mdl_lower *L, const char *name, double bytes, int to, int from, int send,
             int recv, uint8_t dim, int after, int after2);
/* Context parallelism's attention (context.c), the rank's s/cp queries against every key:
 * forward and backward, by strategy.cp_comm_type. */
int lw_cp_attn_fwd(struct mdl_lower *L, const struct mdl_dims *D);
int lw_cp_attn_bwd(struct mdl_lower *L, const struct mdl_dims *D);
/* The attention core over the rank's a/d1 heads: forward, selective recomputation, backward. */
int lw_attn_core_fwd(struct mdl_lower *L, const struct mdl_dims *D);
void lw_attn_core_recompute(struct mdl_lower *L);
int lw_attn_core_bwd(struct mdl_lower *L, const struct mdl_dims *D);
/* A layer norm over a hidden dim sharded over the kind's norm_axis (its statistics
 * all-reduced). */
int lw_ln_sharded(struct mdl_lower *L, const char *name, double tokens, double h_local, int bwd);
/* Vocabulary-parallel cross entropy on bs tokens, the vocabulary split over `axis`, forward
 * (after the logits) or backward (before them). */
void lw_ce_fwd(struct mdl_lower *L, double bs, double d1, int axis);
void lw_ce_bwd(struct mdl_lower *L, double bs, double d1);
/* A sublayer's weight gradients (1/shards of its parameters) all-reduced over group marker
 * `group` on `stream` after the last micro-batch's backward. */
void lw_wgrad_replicas(struct mdl_lower *L, int mlp, double shards, int group, int stream,
                       const char *name);

/* A mixture of experts as a layer's MLP (moe.c), forward and backward, in place of the kind's
 * mlp_fwd and mlp_bwd on the layers that have one; the tensors it keeps for the backward per
 * GPU and micro-batch, in 16-bit units (strategy.c's activation terms). */
void lw_moe_fwd(struct mdl_lower *L);
void lw_moe_bwd(struct mdl_lower *L);
double lw_moe_activations(const struct mdl_strategy *st, const struct mdl_model *m);

/* ATP's chunk counts the planner tries on Megatron's mesh kinds (1: no chunks). */
#define LW_PLAN_NCHUNKS 4
extern const int lw_plan_chunks[LW_PLAN_NCHUNKS];

/* Megatron's layer on a d1 x d2 mesh (kind_megatron.c), shared by 1D and ATP's 2D, and its
 * embedding (PrimePar's too) and logits. */
void lw_mesh_attn_fwd(struct mdl_lower *L);
void lw_mesh_mlp_fwd(struct mdl_lower *L);
void lw_mesh_mlp_bwd(struct mdl_lower *L);
void lw_mesh_attn_bwd(struct mdl_lower *L);
void lw_mesh_embedding(struct mdl_lower *L);
void lw_mesh_logits(struct mdl_lower *L);
/* The row fields of a kind whose layer is Megatron's on the mesh (1d, 2d). */
#define LW_MESH_BODIES                                                                             \
    .attn_fwd = lw_mesh_attn_fwd, .mlp_fwd = lw_mesh_mlp_fwd, .mlp_bwd = lw_mesh_mlp_bwd,          \
    .attn_bwd = lw_mesh_attn_bwd, .embedding = lw_mesh_embedding, .logits = lw_mesh_logits
/* The layer of kinds that shard every activation (sharded.c): only kind->linear differs. */
void lw_sharded_attn_fwd(struct mdl_lower *L);
void lw_sharded_mlp_fwd(struct mdl_lower *L);
void lw_sharded_mlp_bwd(struct mdl_lower *L);
void lw_sharded_attn_bwd(struct mdl_lower *L);

#endif
