/* kind_megatron.c - Megatron-LM's tensor parallelism (kind 1d, optionally with sequence
 * parallelism, per-sublayer degrees as Oases' planner gives them) and the layer it shares with
 * ATP's 2D mesh (kind_atp.c): on a d1 x d2 mesh, activations are sharded on the hidden dim over
 * d2; QKV and FC1 (weights h/d2 x out/d1) reduce partial sums over d2, proj and FC2 (weights
 * in/d1 x h/d2) over d1, and backward mirrors it; heads are split over d1. 1D is the mesh
 * (d, 1). The vocabulary-parallel embedding and logits too. Formulas: strategies.md sections 1,
 * 2 and 8.
 */
#include <stdio.h>

#include "kind.h"

/* ATP's optional all-gather on the hidden dim over the d2 axis. */
static void extra_ag(struct mdl_lower *L, const char *name, double elems, int after)
{
    if (L->st->atp.extra_allgathers) lw_coll(L, MDL_OP_ALL_GATHER, name, elems, after, LW_AXIS_D2);
}

/* Transformer Engine's userbuffers (strategy.tp_comm_overlap), with its default configuration
 * (transformer_engine/pytorch/module/base.py, initialize_ub): the all-gather before QKV and FC1
 * forward, and before the projection's and FC2's data gradients, by ring exchange, 1 SM (the
 * copy engines move the data); the reduce-scatter after the projection and FC2 forward
 * pipelined in 4 pieces, 16 SMs held; QKV's and FC1's backward bulk-overlapped (the input's
 * all-gather under the data gradient, its reduce-scatter under the weight gradient), 16 SMs.
 * The pieces of a ring exchange or a pipelined GEMM are launched by TE's C++ within one call: the
 * host pays one launch for the call (ub_call). */
#define UB_RING_SMS   1
#define UB_SMS        16
#define UB_PIPE_SPLIT 4

static bool ub(const struct mdl_lower *L)
{
    return L->st->tp_comm_overlap && L->d1 > 1 && !L->no_comm;
}

/* PyTorch's async TP (strategy.async_tp: torch.compile's micro-pipeline TP pass fuses each
 * all-gather with the GEMM after it and each GEMM with the reduce-scatter after it;
 * torch/distributed/_symmetric_memory: fused_all_gather_matmul, fused_matmul_reduce_scatter).
 * The peers' shards move between the GPUs' symmetric memory by the copy engines, one peer at a
 * time beside the GEMM of the shard before: no SMs held. */
static bool atp_async(const struct mdl_lower *L)
{
    return L->st->async_tp && L->d1 > 1 && !L->no_comm;
}

/* Whether the all-gather before a column-parallel GEMM is fused into it (ring_ag_gemm): by
 * TE's ring exchange or by async TP. */
static bool fused_ag(const struct mdl_lower *L)
{
    return ub(L) || atp_async(L);
}

/* An all-gathered input times a column-parallel weight, by ring exchange: in step i of tp, the
 * GEMM of the tokens chunk i brought (bs/tp; step 0 the rank's own), while the chunk is passed
 * on to the next rank of the ring and the next one received from the previous; each GEMM waits
 * for its chunk. `chunk` elements per step, in the linear's input dtype (FP8: lw_fp8_scale). */
static int ring_ag_gemm(struct mdl_lower *L, const char *gname, const char *sname, double bs,
                        double n, double k, double chunk)
{
    int t = (int)L->d1, prev = -1, g = -1, ready = lw_ready(L);
    double bytes = chunk * lw_fp8_scale(L) * mdl_dtype_bytes(L->m->dtype);
    L->pending = -1; /* the first GEMM is on the rank's own chunk */
    L->ub_sms = atp_async(L) ? 0 : UB_RING_SMS;
    L->ub_call = 1;
    for (int i = 0; i < t && !L->oom; i++) {
        int next = i + 1 < t ? lw_shift(L, sname, bytes, MDL_GROUP_SHIFT_TO, MDL_GROUP_SHIFT_FROM,
                                        MDL_STREAM_SHIFT_SEND, MDL_STREAM_SHIFT_RECV,
                                        MDL_OP_DIM(MDL_DIM_TP), i ? prev : ready, -1)
                             : -1;
        L->pending = prev;
        g = lw_gemm(L, MDL_OP_GEMM, gname, 1, bs / t, n, k);
        prev = next;
    }
    L->ub_sms = 0;
    L->ub_call = 0;
    return g;
}

/* A GEMM of bs tokens whose output (n wide) is reduce-scattered by PyTorch's async TP
 * (_pipelined_produce_and_all2all): first the rows of each other rank's shard (bs/tp tokens),
 * each pushed to that rank by the copy engine as soon as computed, under the next piece's GEMM;
 * the rank's own shard last; then the tp partial sums of its shard added (a memory-bound kernel
 * reading tp shards and writing one). The pushes go to the next rank of the ring each step: on
 * a switch, as costly as to the rank the step names. The pushes and the sum are named after
 * the collective cname they replace (push_cname, sum_cname). Returns the sum. */
static int push_gemm_rs(struct mdl_lower *L, const char *gname, const char *cname, double bs,
                        double n, double k)
{
    char sname[48], rname[48]; /* the pushes and the sum, named after the collective they replace */
    snprintf(sname, sizeof sname, "push_%s", cname);
    snprintf(rname, sizeof rname, "sum_%s", cname);
    int t = (int)L->d1, recv = -1;
    double shard = bs / t * n; /* elements, in the activations' dtype */
    L->ub_call = 1;
    for (int i = 0; i < t && !L->oom; i++) {
        int g = lw_gemm(L, MDL_OP_GEMM, gname, 1, bs / t, n, k);
        if (i + 1 < t)
            recv = lw_shift(L, sname, shard * mdl_dtype_bytes(L->m->dtype), MDL_GROUP_SHIFT_TO,
                            MDL_GROUP_SHIFT_FROM, MDL_STREAM_SHIFT_SEND, MDL_STREAM_SHIFT_RECV,
                            MDL_OP_DIM(MDL_DIM_TP), g, -1);
    }
    L->ub_call = 0;
    L->pending = recv; /* the last shard in (the receives are in order on their stream) */
    return lw_mem(L, rname, (t + 1) * shard);
}

/* A row-parallel linear whose output is reduce-scattered: TE's pipeline method (4 pieces, each
 * piece's reduce-scatter under the next piece's GEMM, the GEMMs on the SMs the communication
 * leaves), PyTorch's async TP (push_gemm_rs), else Megatron-LM's (lw_linear_reduce). */
static int row_linear(struct mdl_lower *L, const char *gname, const char *cname, double bs,
                      double n, double k)
{
    if (atp_async(L)) return push_gemm_rs(L, gname, cname, bs, n, k);
    if (!ub(L)) return lw_linear_reduce(L, gname, cname, bs, n, k, LW_AXIS_D1);
    L->ub_splits = UB_PIPE_SPLIT;
    L->ub_sms = UB_SMS;
    L->ub_call = 1;
    int x = lw_linear_reduce(L, gname, cname, bs, n, k, LW_AXIS_D1);
    L->ub_splits = 0;
    L->ub_sms = 0;
    L->ub_call = 0;
    return x;
}

static void attn_fwd(struct mdl_lower *L)
{
    struct mdl_dims D = lw_dims(L);
    double d1 = D.d1, d2 = D.d2, h = D.h, bs = D.bs, tok = D.tok;
    int x = lw_mem_k(L, MDL_MEM_NORM, "ln1", 2 * tok * h / d2);
    x = lw_fp8_cast(L, "qkv_fp8_cast", tok * h / d2, x);
    extra_ag(L, "ag_ln1", bs * h, x);
    if (fused_ag(L)) {
        x = ring_ag_gemm(L, "qkv", "ring_ag_attn", bs, D.q / d1, h, tok * h);
    } else {
        if (D.sp) lw_coll(L, MDL_OP_ALL_GATHER, "ag_attn", bs * h * lw_fp8_scale(L), x, LW_AXIS_D1);
        x = lw_linear_reduce(L, "qkv", "ar_qkv", bs, D.q / d1, h / d2, LW_AXIS_D2);
    }
    extra_ag(L, "ag_attn_in", bs * h / d1, x);
    x = lw_attn_core_fwd(L, &D);
    lw_eager_mem(L, "attn_out_copy", 2 * bs * h / d1);
    extra_ag(L, "ag_attn_out", bs * h / d1, x);
    lw_fp8_cast(L, "proj_fp8_cast", bs * h / d1, -1);
    row_linear(L, "proj", "ar_attn", bs, h / d2, h / d1);
    lw_dropout_add(L, "dropout_add", tok * h / d2);
}

static void mlp_fwd(struct mdl_lower *L)
{
    struct mdl_dims D = lw_dims(L);
    double d1 = D.d1, d2 = D.d2, h = D.h, f = D.f, bs = D.bs, tok = D.tok;
    int x = lw_mem_k(L, MDL_MEM_NORM, "ln2", 2 * tok * h / d2);
    x = lw_fp8_cast(L, "fc1_fp8_cast", tok * h / d2, x);
    extra_ag(L, "ag_ln2", bs * h, x);
    if (fused_ag(L)) {
        ring_ag_gemm(L, "fc1", "ring_ag_mlp", bs, D.u / d1, h, tok * h);
    } else {
        if (D.sp) lw_coll(L, MDL_OP_ALL_GATHER, "ag_mlp", bs * h * lw_fp8_scale(L), x, LW_AXIS_D1);
        lw_linear_reduce(L, "fc1", "ar_fc1", bs, D.u / d1, h / d2, LW_AXIS_D2);
    }
    lw_mlp_act(L, &D, 0);
    lw_fp8_cast(L, "fc2_fp8_cast", bs * f / d1, -1);
    row_linear(L, "fc2", "ar_mlp", bs, h / d2, f / d1);
    lw_dropout_add(L, "dropout_add2", tok * h / d2);
}

/* Backward of a linear whose input-grad collective runs over `axis`: dgrad, the collective,
 * then wgrad (overlapping the collective unless async_grad_allreduce is off). With sequence
 * parallelism Megatron keeps only this rank's share of the layer's input, so first the
 * all-gather `agname` collects it again for wgrad, beside dgrad (the input-grad collective
 * queues behind it on the stream). */
static void column_bwd(struct mdl_lower *L, const char *dgrad, const char *wgrad, const char *cname,
                       const char *agname, const char *castname, double bs, double n_local,
                       double k, int axis)
{
    int ag = -1;
    if (mdl_strategy_shards_activations(L->st) && axis == LW_AXIS_D1)
        ag = lw_coll_on(L, MDL_OP_ALL_GATHER, agname, bs * k * L->d2 * lw_fp8_scale(L),
                        L->last_comp, axis, 0);
    lw_fp8_cast(L, castname, bs * n_local, -1);
    if (atp_async(L) && axis == LW_AXIS_D1) {
        /* async TP: dgrad fused with its reduce-scatter; the input's all-gather beside it */
        push_gemm_rs(L, dgrad, cname, bs, k, n_local);
        L->pending2 = ag;
        lw_gemm(L, MDL_OP_GEMM, wgrad, 1, n_local, k, bs);
        return;
    }
    /* userbuffers' bulk overlap: the all-gather under dgrad, the reduce-scatter under wgrad */
    L->ub_sms = ub(L) && axis == LW_AXIS_D1 ? UB_SMS : 0;
    int c = lw_linear_reduce(L, dgrad, cname, bs, k, n_local, axis);
    int saved = L->pending;
    L->pending = L->st->async_grad_allreduce ? -1 : c;
    L->pending2 = ag;
    lw_gemm(L, MDL_OP_GEMM, wgrad, 1, n_local, k, bs);
    L->ub_sms = 0;
    if (L->st->async_grad_allreduce) L->pending = saved;
}

/* The data gradient of row-parallel linear `lin` (input n_in wide, over d1) of sublayer `sub`
 * from its output gradient (ready after op x): with sequence parallelism gathered first (by
 * userbuffers' ring under the GEMM with TP overlap: cast to FP8 on the rank's share, gathered in
 * FP8), cast to FP8 for an FP8 model; the partial sums over d2 reduced. */
static void row_dgrad(struct mdl_lower *L, const struct mdl_dims *D, int x, const char *lin,
                      const char *sub, double n_in)
{
    double d1 = D->d1, d2 = D->d2, h = D->h, bs = D->bs, tok = D->tok;
    char cast[48], dgrad[48], ag[48], red[48];
    snprintf(cast, sizeof cast, "%s_grad_fp8_cast", lin);
    snprintf(dgrad, sizeof dgrad, "%s_dgrad", lin);
    if (fused_ag(L)) {
        snprintf(ag, sizeof ag, "ring_ag_%s_bwd", sub);
        lw_fp8_cast(L, cast, tok * h, -1);
        ring_ag_gemm(L, dgrad, ag, bs, n_in / d1, h, tok * h);
        return;
    }
    snprintf(ag, sizeof ag, "ag_%s_bwd", sub);
    snprintf(red, sizeof red, "ar_%s_bwd", lin);
    if (D->sp) lw_coll(L, MDL_OP_ALL_GATHER, ag, bs * h, x, LW_AXIS_D1);
    lw_fp8_cast(L, cast, bs * h / d2, -1);
    lw_linear_reduce(L, dgrad, red, bs, n_in / d1, h / d2, LW_AXIS_D2);
}

static void mlp_bwd(struct mdl_lower *L)
{
    struct mdl_dims D = lw_dims(L);
    double d1 = D.d1, d2 = D.d2, h = D.h, f = D.f, bs = D.bs, tok = D.tok;
    int x = lw_mem(L, "dropout_add2_bwd", 2 * tok * h / d2);
    /* FC2 (in f/d1, out h/d2): input-grad partial sums over d2 */
    row_dgrad(L, &D, x, "fc2", "mlp", f);
    lw_gemm(L, MDL_OP_GEMM, "fc2_wgrad", 1, h / d2, f / d1, bs);
    lw_mlp_act(L, &D, 1);
    column_bwd(L, "fc1_dgrad", "fc1_wgrad", "ar_mlp_bwd", "ag_mlp_input_bwd", "fc1_grad_fp8_cast",
               bs, D.u / d1, h / d2, LW_AXIS_D1);
    x = lw_ln_bwd(L, "ln2_bwd", tok * h / d2);
    extra_ag(L, "ag_ln2_bwd", bs * h, x);
}

static void attn_bwd(struct mdl_lower *L)
{
    struct mdl_dims D = lw_dims(L);
    double d1 = D.d1, d2 = D.d2, h = D.h, bs = D.bs, tok = D.tok;
    if (L->st->selective && !L->st->recompute && L->fw->attention != MDL_ATTENTION_FLASH)
        lw_attn_core_recompute(L);
    int x = lw_mem(L, "dropout_add_bwd", 2 * tok * h / d2);
    lw_eager_mem(L, "residual_add_bwd", 3 * tok * h / d2);
    row_dgrad(L, &D, x, "proj", "attn", h);
    x = lw_gemm(L, MDL_OP_GEMM, "proj_wgrad", 1, h / d1, h / d2, bs);
    extra_ag(L, "ag_attn_out_bwd", bs * h / d1, x);
    x = lw_attn_core_bwd(L, &D);
    lw_eager_mem(L, "qkv_grad_cat", 2 * bs * D.q / d1);
    extra_ag(L, "ag_attn_in_bwd", bs * h / d1, x);
    column_bwd(L, "qkv_dgrad", "qkv_wgrad", "ar_attn_bwd", "ag_attn_input_bwd", "qkv_grad_fp8_cast",
               bs, D.q / d1, h / d2, LW_AXIS_D1);
    x = lw_ln_bwd(L, "ln1_bwd", tok * h / d2);
    lw_eager_mem(L, "residual_add1_bwd", 3 * tok * h / d2);
    extra_ag(L, "ag_ln1_bwd", bs * h, x);
}

/* Per-sublayer plans (1D): a sublayer of degree t runs on groups of t consecutive ranks, each
 * group on 1/(tp/t) of the (sub-)batch. Tensors between sublayers are in the layout of the
 * degree that made them: a rank of a degree-t sublayer holds its group's share of the batch.
 * Moving to a lower degree keeps a slice (nothing moves); moving to a higher degree T
 * all-gathers the T/t shares that make up the new group's over the re-layout group, the
 * T-layout tensor's size (tokens x hidden). */
static void relayout(struct mdl_lower *L, int *from, int to, const char *name)
{
    if (to > *from && !L->no_comm) {
        double tokens = (double)L->m->micro_batch * L->frac * to / L->st->tp * (double)L->m->seq;
        int after = lw_ready(L);
        struct mdl_op op = {.kind = MDL_OP_ALL_GATHER,
                            .stream = MDL_STREAM_COMM,
                            .dim = MDL_OP_DIM(MDL_DIM_TP),
                            .group = MDL_GROUP_RELAYOUT,
                            .bytes = tokens * (double)L->m->hidden * mdl_dtype_bytes(L->m->dtype)};
        if (after >= 0) op.deps[op.ndeps++] = after;
        L->pending = lw_emit(L, &op, name);
    }
    *from = to;
}

/* Enters sublayer `mlp` (0: attention, 1: MLP) forward or backward: its degree, its batch
 * share, its group, and the tensor it reads moved into its layout. */
static void sub_enter(struct mdl_lower *L, int mlp, int bwd)
{
    if (!mdl_strategy_is_mixed(L->st)) return;
    int t = mdl_strategy_sub_tp(L->st, mlp);
    L->d1 = t;
    L->rep = (double)L->st->tp / t;
    L->axis1 = t == L->st->tp ? 0 : mlp ? MDL_GROUP_SUB_MLP : MDL_GROUP_SUB_ATTN;
    if (bwd)
        relayout(L, &L->glayout[L->sub], t, mlp ? "relayout_mlp_bwd" : "relayout_attn_bwd");
    else
        relayout(L, &L->layout[L->sub], t, mlp ? "relayout_mlp" : "relayout_attn");
}

/* Leaves it; a sublayer of degree below tp all-reduces its weight gradients over its replicas
 * (wgrad_replicas). */
static void sub_leave(struct mdl_lower *L, int mlp, int bwd)
{
    if (!mdl_strategy_is_mixed(L->st)) return;
    int t = mdl_strategy_sub_tp(L->st, mlp);
    L->d1 = L->st->tp;
    L->rep = 1;
    L->axis1 = 0;
    if (bwd && t < L->st->tp)
        lw_wgrad_replicas(L, mlp, t, mlp ? MDL_GROUP_REP_MLP : MDL_GROUP_REP_ATTN, MDL_STREAM_COMM2,
                          mlp ? "ar_mlp_wgrad_replicas" : "ar_attn_wgrad_replicas");
}

/* Sublayer `mlp` forward or backward (f) at its own degree, for per-sublayer plans. */
static void sub_run(struct mdl_lower *L, int mlp, int bwd, void (*f)(struct mdl_lower *))
{
    sub_enter(L, mlp, bwd);
    f(L);
    sub_leave(L, mlp, bwd);
}

void lw_mesh_attn_fwd(struct mdl_lower *L)
{
    sub_run(L, 0, 0, attn_fwd);
}

void lw_mesh_mlp_fwd(struct mdl_lower *L)
{
    sub_run(L, 1, 0, mlp_fwd);
}

void lw_mesh_mlp_bwd(struct mdl_lower *L)
{
    sub_run(L, 1, 1, mlp_bwd);
}

void lw_mesh_attn_bwd(struct mdl_lower *L)
{
    sub_run(L, 0, 1, attn_bwd);
}

void lw_mesh_embedding(struct mdl_lower *L)
{
    struct mdl_dims D = lw_whole_dims(L);
    double d2 = D.d2, h = D.h, bs = D.bs, tok = D.tok;
    if (L->phase == MDL_PHASE_FWD) {
        /* each rank looks up the tokens of its vocabulary rows (zeros elsewhere); the partial
         * embeddings are summed over the group (reduce-scattered with sequence parallelism) */
        int x = lw_mem(L, "embedding", 2 * bs * h / d2);
        lw_reduce_out(L, "ar_embedding", bs * h / d2, x, LW_AXIS_D1);
        lw_dropout_add(L, "embedding_position_dropout", tok * h / d2);
    } else {
        int x = lw_mem(L, "embedding_dropout_bwd", 2 * tok * h / d2);
        if (D.sp) lw_coll(L, MDL_OP_ALL_GATHER, "ag_embedding_bwd", bs * h, x, LW_AXIS_D1);
        lw_mem(L, "embedding_wgrad", 3 * bs * h / d2); /* scatter-add into the weight gradient */
    }
}

/* The logits split by the vocabulary over d1 (a column-parallel linear), then the loss. */
void lw_mesh_logits(struct mdl_lower *L)
{
    struct mdl_dims D = lw_whole_dims(L);
    double d1 = D.d1, d2 = D.d2, h = D.h, bs = D.bs, tok = D.tok, v = (double)L->m->vocab;
    if (L->phase == MDL_PHASE_FWD) {
        int x = lw_mem_k(L, MDL_MEM_NORM, "final_ln", 2 * tok * h / d2);
        if (D.sp) lw_coll(L, MDL_OP_ALL_GATHER, "ag_logits", bs * h, x, LW_AXIS_D1);
        lw_linear_reduce(L, "logits", "ar_logits", bs, v / d1, h / d2, LW_AXIS_D2);
        lw_ce_fwd(L, bs, d1, LW_AXIS_D1);
    } else {
        lw_ce_bwd(L, bs, d1);
        column_bwd(L, "logits_dgrad", "logits_wgrad", "ar_logits_bwd", "ag_logits_input_bwd",
                   "logits_grad_fp8_cast", bs, v / d1, h / d2, LW_AXIS_D1);
        lw_ln_bwd(L, "final_ln_bwd", tok * h / d2);
    }
}

static void mesh_1d(const struct mdl_strategy *st, int *d1, int *d2)
{
    *d1 = st->tp;
    *d2 = 1;
}

/* Per-sublayer degrees: each divides tp, runs without sequence parallelism, and splits the
 * micro-batch (and Oases' sub-batches) over its replicas. */
static int check_1d(const struct mdl_strategy *st, const struct mdl_model *m, long *deg,
                    struct tps_error *err)
{
    long d = st->tp;
    for (int mlp = 0; mlp < 2; mlp++) {
        int t = mlp ? st->sublayer.mlp_tp : st->sublayer.attention_tp;
        const char *f = mlp ? "mlp_tp" : "attention_tp";
        if (t == 0) continue;
        if (t < 1 || d % t)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, f, "must divide tp (%ld), got %d", d,
                                 t);
        if (t != d && st->sequence_parallel)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, f,
                                 "a sublayer of degree below tp does not combine with "
                                 "sequence parallelism");
        long split = d / t * (st->oases ? 2 : 1);
        if (m->micro_batch % split)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, f,
                                 "degree %d splits the micro-batch over %ld replicas%s: "
                                 "model.micro_batch (%ld) must be a multiple of %ld",
                                 t, d / t, st->oases ? " and Oases' two sub-batches" : "",
                                 m->micro_batch, split);
    }
    *deg = d;
    return TPS_OK;
}

static void describe_1d(const struct mdl_strategy *st, const char *opts, char *buf, size_t len)
{
    if (mdl_strategy_is_mixed(st))
        snprintf(buf, len, "1d tp=%d attention tp=%d x%d, mlp tp=%d x%d%s", st->tp,
                 mdl_strategy_sub_tp(st, 0), st->tp / mdl_strategy_sub_tp(st, 0),
                 mdl_strategy_sub_tp(st, 1), st->tp / mdl_strategy_sub_tp(st, 1), opts);
    else
        snprintf(buf, len, "1d tp=%d%s%s", st->tp,
                 st->sequence_parallel ? " +sequence-parallel" : "", opts);
}

const int lw_plan_chunks[LW_PLAN_NCHUNKS] = {1, 2, 4, 8};

/* Megatron on the whole group, with and without sequence parallelism, ATP's chunks and Oases'
 * schedule; then Oases' per-sublayer plans: the attention and the MLP each at a degree dividing
 * d (not both d), with Megatron's schedule or Oases'. */
static int candidates_1d(enum mdl_strategy_kind self, const struct mdl_strategy *base, bool sp,
                         mdl_strategy_add add, void *ctx)
{
    int d = base->tp, rc = 0;
    for (int s = 0; !rc && s <= sp; s++)
        for (int c = 0; !rc && c < LW_PLAN_NCHUNKS; c++)
            for (int oa = 0; !rc && oa < 2; oa++) {
                struct mdl_strategy st = mdl_strategy_candidate(base, self);
                st.sequence_parallel = s;
                st.chunks = lw_plan_chunks[c];
                st.oases = oa;
                rc = add(ctx, &st);
            }
    for (int ta = 1; !rc && ta <= d; ta++)
        for (int tm = 1; !rc && tm <= d; tm++)
            for (int oa = 0; !rc && oa < 2; oa++) {
                if (d % ta || d % tm || (ta == d && tm == d)) continue;
                struct mdl_strategy st = mdl_strategy_candidate(base, self);
                st.sublayer.attention_tp = ta;
                st.sublayer.mlp_tp = tm;
                st.oases = oa;
                rc = add(ctx, &st);
            }
    return rc;
}

const struct mdl_kind mdl_kind_1d = {
    .candidates = candidates_1d,
    .name = "1d",
    .sublayers = true,
    .balances = true,
    .mesh = mesh_1d,
    .check = check_1d,
    .describe = describe_1d,
    .context = true,
    LW_MESH_BODIES,
};
