/* lower.c - lowering a strategy into per-rank ops: the primitives a kind's layer emits with
 * (GEMMs, memory-bound kernels, FlashAttention, collectives over a mesh axis, the attention core,
 * the cross entropy), the driver (micro-batches, layers forward then backward in reverse, Oases'
 * sub-batches, recomputation), the groups every rank's copy of rank 0's ops gets (rows, columns,
 * pillars, PrimePar's ring pairs, per-sublayer groups) and the piecewise emitter whole jobs use.
 * What a layer is made of comes from the kind's row (kind.h). Calls compute.c for durations.
 * Units: elements are converted to bytes with the model dtype; times in s; FLOP counts exact
 * (2mnk per GEMM).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute.h"
#include "kind.h"

/* Host time to launch op: every kernel in eager mode (with flash attention, the attention kernel
 * is a scaled_dot_product_attention call, whose host path is heavier); with CUDA graphs, the
 * first op of each layer's forward or backward launches the graph that holds the rest. */
static double launch_cost(struct mdl_lower *L, const struct mdl_op *op)
{
    int bwd = L->phase == MDL_PHASE_BWD;
    switch (L->fw->launch) {
    case MDL_LAUNCH_EAGER:
        if (op->kind == MDL_OP_ATTN && L->fw->attention == MDL_ATTENTION_FLASH)
            return bwd ? L->dev->flash_bwd_launch_s : L->dev->flash_launch_s;
        return bwd ? L->dev->bwd_launch_s : L->dev->launch_s;
    case MDL_LAUNCH_GRAPHS:
        if (L->graph[0] == L->layer && L->graph[1] == L->mb && L->graph[2] == L->phase) return 0;
        L->graph[0] = L->layer;
        L->graph[1] = L->mb;
        L->graph[2] = L->phase;
        return L->dev->graph_launch_s;
    default:
        return 0;
    }
}

int lw_emit(struct mdl_lower *L, struct mdl_op *op, const char *name)
{
    op->name = mdl_program_name(L->p, name);
    op->layer = L->layer;
    op->mb = L->mb;
    op->phase = L->phase;
    op->launch_s = launch_cost(L, op);
    if (L->ub_call == 2) op->launch_s = 0; /* launched by the call's first op */
    if (L->ub_call == 1) L->ub_call = 2;
    int idx = op->name < 0 ? -1 : mdl_program_add(L->p, L->rank, op);
    if (idx < 0) L->oom = 1;
    if (op->stream == MDL_STREAM_COMPUTE) L->last_comp = idx;
    return idx;
}

static void take_pending(struct mdl_lower *L, struct mdl_op *op)
{
    if (L->pending >= 0) {
        TPS_ASSERT(op->ndeps < MDL_MAX_DEPS);
        op->deps[op->ndeps++] = L->pending;
        L->pending = -1;
    }
    if (L->pending2 >= 0) {
        TPS_ASSERT(op->ndeps < MDL_MAX_DEPS);
        op->deps[op->ndeps++] = L->pending2;
        L->pending2 = -1;
    }
    if (L->after >= 0) {
        TPS_ASSERT(op->ndeps < MDL_MAX_DEPS);
        op->deps[op->ndeps++] = L->after;
        L->after = -1;
    }
}

/* GEMM batch x (m x k)(k x n); kind GEMM or ATTN. */
int lw_gemm(struct mdl_lower *L, enum mdl_op_kind kind, const char *name, double batch, double m,
            double n, double k)
{
    struct mdl_op op = {.kind = (uint8_t)kind, .stream = MDL_STREAM_COMPUTE, .group = -1};
    take_pending(L, &op);
    /* a linear's GEMMs in FP8 with an FP8 model, the attention core's only when asked */
    enum mdl_dtype t =
        lw_fp8(L) && (kind == MDL_OP_GEMM || L->m->fp8_attention) ? MDL_FP8 : L->m->dtype;
    op.flop = mdl_gemm_flop(batch, m, n, k);
    op.bytes = mdl_gemm_bytes(t, batch, m, n, k); /* memory traffic, for re-pricing */
    op.dur_s = mdl_gemm_time(L->dev, t, batch, m, n, k);
    /* beside userbuffers' kernels, on the SMs they leave (Transformer Engine's set_sm_margin) */
    if (L->ub_sms > 0 && L->dev->sms > L->ub_sms)
        op.dur_s *= (double)L->dev->sms / (L->dev->sms - L->ub_sms);
    return lw_emit(L, &op, name);
}

int lw_fp8(const struct mdl_lower *L)
{
    return L->m->fp8 && !L->no_fp8;
}

double lw_fp8_scale(const struct mdl_lower *L)
{
    return lw_fp8(L) ? 1.0 / mdl_dtype_bytes(L->m->dtype) : 1;
}

int lw_fp8_cast(struct mdl_lower *L, const char *name, double elems, int x)
{
    if (!lw_fp8(L)) return x;
    struct mdl_op op = {.kind = MDL_OP_MEM, .stream = MDL_STREAM_COMPUTE, .group = -1};
    take_pending(L, &op);
    op.bytes = elems * (mdl_dtype_bytes(L->m->dtype) + 2); /* read it, write FP8 and FP8^T */
    op.dur_s = mdl_mem_time(L->dev, op.bytes);
    return lw_emit(L, &op, name);
}

/* Memory-bound kernel of kind k touching `elems` elements in total. */
int lw_mem_k(struct mdl_lower *L, enum mdl_mem_kind k, const char *name, double elems)
{
    struct mdl_op op = {.kind = MDL_OP_MEM, .stream = MDL_STREAM_COMPUTE, .group = -1};
    take_pending(L, &op);
    op.bytes = elems * mdl_dtype_bytes(L->m->dtype);
    op.dur_s = mdl_mem_time_kind(L->dev, k, op.bytes);
    return lw_emit(L, &op, name);
}

/* An element-wise memory-bound kernel. */
int lw_mem(struct mdl_lower *L, const char *name, double elems)
{
    return lw_mem_k(L, MDL_MEM_ELEMENTWISE, name, elems);
}

/* A memory-bound kernel PyTorch's unfused ops add (kernels: eager); none when fused. */
void lw_eager_mem(struct mdl_lower *L, const char *name, double elems)
{
    if (L->fw->kernels == MDL_KERNELS_EAGER) lw_mem(L, name, elems);
}

int lw_flash(struct mdl_lower *L, const char *name, double bh, double sq, double sk, double hd,
             int bwd, int dense)
{
    struct mdl_op op = {.kind = MDL_OP_ATTN, .stream = MDL_STREAM_COMPUTE, .group = -1};
    take_pending(L, &op);
    double fwd_flop = 4 * bh * sq * sk * hd;
    /* k and v (and their gradients) are kv_heads/heads the size of q with grouped queries, and
     * sk/sq times as many tokens */
    double kv = (double)mdl_model_kv_heads(L->m) / (double)L->m->heads * (sk / sq);
    op.flop = bwd ? 2.5 * fwd_flop : fwd_flop;
    op.bytes = (bwd ? 4 + 4 * kv : 2 + 2 * kv) * bh * sq * hd * mdl_dtype_bytes(L->m->dtype);
    bool fp8 = lw_fp8(L) && L->m->fp8_attention;
    double peak = L->dev->peak_flops[fp8 ? MDL_FP8 : L->m->dtype] * L->dev->flash_eff;
    double tc = L->dev->gemm_overhead_s + op.flop / peak, tm = op.bytes / L->dev->hbm_Bps;
    /* A 16-bit kernel on a device with measured rates: the tiles it computes (the mask or the
     * half block leaves half of the count) at the measured rate of a call of that work, where
     * that is faster. The measured blocks of up to 2,048 tokens time the call, not the tiles
     * (their causal and dense blocks take the same time: docs/context-parallelism.md), so below
     * the point where the two meet the rate fitted on the layers holds. */
    if (L->dev->flash && !fp8 && L->m->dtype != MDL_FP32)
        tc = fmin(tc, mdl_flash_time(L->dev->flash, dense, bwd, op.flop / 2));
    op.dur_s = tc > tm ? tc : tm;
    return lw_emit(L, &op, name);
}

int lw_ready(const struct mdl_lower *L)
{
    return L->pending >= 0 ? L->pending : L->last_comp;
}

static double axis_size(const struct mdl_lower *L, int axis)
{
    return axis == LW_AXIS_D1 ? L->d1 : axis == LW_AXIS_D2 ? L->d2 : L->d3;
}

/* The block meshes give each axis a stream of its own (kind->axis_streams: rows on the TP
 * stream, columns and pillars on the next two), as their communicators are. */
int lw_coll_on(struct mdl_lower *L, enum mdl_op_kind kind, const char *name, double elems,
               int after, int axis, int root)
{
    if (axis_size(L, axis) <= 1 || L->no_comm) return -1;
    int stream = axis == LW_AXIS_D3                             ? MDL_STREAM_COMM3
                 : !L->kind->axis_streams || axis == LW_AXIS_D2 ? MDL_STREAM_COMM
                                                                : MDL_STREAM_COMM2;
    int group = axis == LW_AXIS_D1 && L->axis1 ? L->axis1 : axis;
    struct mdl_op op = {.kind = (uint8_t)kind,
                        .stream = (uint8_t)stream,
                        .dim = MDL_OP_DIM(MDL_DIM_TP),
                        .group = group,
                        .root = (uint16_t)root};
    if (after >= 0) op.deps[op.ndeps++] = after;
    op.bytes = elems * mdl_dtype_bytes(L->m->dtype);
    return lw_emit(L, &op, name);
}

int lw_shift(struct mdl_lower *L, const char *name, double bytes, int to, int from, int send,
             int recv, uint8_t dim, int after, int after2)
{
    struct mdl_op op = {
        .kind = MDL_OP_SEND_RECV, .stream = (uint8_t)send, .dim = dim, .group = to, .bytes = bytes};
    if (after >= 0) op.deps[op.ndeps++] = after;
    if (after2 >= 0) op.deps[op.ndeps++] = after2;
    char nm[64];
    snprintf(nm, sizeof nm, "%s_send", name);
    if (lw_emit(L, &op, nm) < 0) return -1;
    op.stream = (uint8_t)recv;
    op.group = from;
    snprintf(nm, sizeof nm, "%s_recv", name);
    int r = lw_emit(L, &op, nm);
    if (r >= 0) L->p->ranks[L->rank].ops[r].launch_s = 0; /* launched with the send */
    return r;
}

/* Collective over one mesh axis (LW_AXIS_D1: the column, LW_AXIS_D2: the row) on `elems` elements
 * (full size), after op `after`; the next compute op waits for it. None on an axis of size 1. */
int lw_coll(struct mdl_lower *L, enum mdl_op_kind kind, const char *name, double elems, int after,
            int axis)
{
    if (axis_size(L, axis) <= 1 || L->no_comm) return -1;
    TPS_ASSERT(after >= 0 || L->oom);
    int idx = lw_coll_on(L, kind, name, elems, after, axis, 0);
    L->pending = idx;
    return idx;
}

/* The "g" operator of Megatron: AR after a row-parallel linear (RS with SP), over an axis. On
 * the d2 axis (2D only) it is always an all-reduce. */
int lw_reduce_out(struct mdl_lower *L, const char *name, double elems, int after, int axis)
{
    bool rs = mdl_strategy_shards_activations(L->st) && axis == LW_AXIS_D1;
    return lw_coll(L, rs ? MDL_OP_REDUCE_SCATTER : MDL_OP_ALL_REDUCE, name, elems, after, axis);
}

/* A linear (tokens x k) @ (k x n) whose output is reduced over `axis` (all-reduce, or
 * reduce-scatter with sequence parallelism), in `chunks` token chunks: the GEMM of chunk i+1
 * runs while the collective of chunk i is in flight (ATP's chunk-based overlap). Smaller GEMMs
 * are priced as such and every chunk's collective pays its own latency. Returns the last
 * collective (or the last GEMM when the axis has none); the next compute op waits for it. */
int lw_linear_reduce(struct mdl_lower *L, const char *gname, const char *cname, double tokens,
                     double n, double k, int axis)
{
    int splits = L->ub_splits > 0 ? L->ub_splits : L->st->chunks;
    int kc = splits > 1 && !L->no_comm && (axis == LW_AXIS_D1 ? L->d1 : L->d2) > 1 ? splits : 1;
    int g = -1, last = -1;
    for (int c = 0; c < kc; c++) {
        g = lw_gemm(L, MDL_OP_GEMM, gname, 1, tokens / kc, n, k);
        last = lw_reduce_out(L, cname, tokens / kc * n, g, axis);
        L->pending = -1; /* GEMM c+1 does not wait for chunk c's collective */
    }
    L->pending = last; /* the next compute op waits for the last (streams are in order) */
    return last >= 0 ? last : g;
}

struct mdl_dims lw_dims(const struct mdl_lower *L)
{
    const struct mdl_model *m = L->m;
    struct mdl_dims D = {.d1 = L->d1,
                         .d2 = L->d2,
                         .b = (double)m->micro_batch * L->frac / L->rep,
                         .s = (double)m->seq / mdl_strategy_cp(L->st),
                         .cp = mdl_strategy_cp(L->st),
                         .h = (double)m->hidden,
                         .f = (double)m->ffn,
                         .a = (double)m->heads,
                         .q = mdl_model_qkv_width(m),
                         .u = mdl_model_fc1_width(m),
                         .kv = (double)mdl_model_kv_heads(m) / (double)m->heads,
                         .sp = mdl_strategy_shards_activations(L->st),
                         .glu = m->glu};
    if (L->kind->batch_split) {
        /* a rank's whole sequences (rows of the mesh, tesseract's slices, 3D's second axis)
         * and its q-th of the heads and of the hidden dim: d1 = q */
        double q = L->d1;
        D.b /= (double)L->kind->batch_split(L->st, (int)q);
        D.bs = D.b * D.s;
        D.tok = D.bs;
        return D;
    }
    D.bs = D.b * D.s;
    D.tok = D.sp ? D.bs / D.d1 : D.bs; /* tokens held by a rank between the TP regions */
    D.d1 = L->d1 / L->share;           /* the sharded columns and heads: share x d1's shard */
    return D;
}

/* x + dropout(y) on n elements: one fused kernel (read x and y, write the sum), or PyTorch's
 * dropout kernel (read y, write it and a one-byte mask) then the add. */
void lw_dropout_add(struct mdl_lower *L, const char *name, double n)
{
    if (L->fw->kernels != MDL_KERNELS_EAGER) {
        lw_mem(L, name, 3 * n);
        return;
    }
    char nm[64];
    snprintf(nm, sizeof nm, "%s_dropout", name);
    lw_mem(L, nm, 2 * n + n / mdl_dtype_bytes(L->m->dtype));
    snprintf(nm, sizeof nm, "%s_add", name);
    lw_mem(L, nm, 3 * n);
}

/* Layer norm backward over n elements: one fused kernel (read dy and x, write dx), or PyTorch's
 * two (dx, then the weight and bias gradients reading dy and x again). */
int lw_ln_bwd(struct mdl_lower *L, const char *name, double n)
{
    int x = lw_mem_k(L, MDL_MEM_NORM, name, 3 * n);
    if (L->fw->kernels == MDL_KERNELS_EAGER) {
        char nm[64];
        snprintf(nm, sizeof nm, "%s_wgrad", name);
        x = lw_mem_k(L, MDL_MEM_NORM, nm, 2 * n);
    }
    return x;
}

/* Unfused attention with grouped queries: forward, each key/value head repeated for its group of
 * query heads (read 2bs h/d1 * g/a, write 2bs h/d1); backward, the repeated heads' gradients
 * summed back (the same bytes the other way). Nothing with one key/value head per head. */
static void kv_repeat(struct mdl_lower *L, const struct mdl_dims *D, const char *name)
{
    if (D->kv < 1) lw_mem(L, name, 2 * D->bs * D->h / D->d1 * (1 + D->kv));
}

/* Dropout on the attention probabilities (n elements), forward (read them, write the output and
 * a one-byte mask) or backward (read the gradient and the mask, write the gradient): one kernel
 * each way, fused or not (Megatron-LM calls PyTorch's dropout there). */
static void attn_dropout(struct mdl_lower *L, const char *name, double n)
{
    if (L->m->attn_dropout) lw_mem(L, name, 2 * n + n / mdl_dtype_bytes(L->m->dtype));
}

/* The attention core over the rank's a/d1 heads, forward: FlashAttention (dropout, if any, in
 * its kernel), or batched GEMMs with the softmax and the dropout between. Returns the last op. */
int lw_attn_core_fwd(struct mdl_lower *L, const struct mdl_dims *D)
{
    double d1 = D->d1, b = D->b, s = D->s, h = D->h, a = D->a;
    if (D->cp > 1) return lw_cp_attn_fwd(L, D);
    if (L->fw->attention == MDL_ATTENTION_FLASH)
        return lw_flash(L, "flash_attn", b * a / d1, s, s, h / a, 0, 0);
    kv_repeat(L, D, "kv_expand");
    lw_gemm(L, MDL_OP_ATTN, "attn_score", b * a / d1, s, s, h / a);
    lw_eager_mem(L, "attn_scale", 2 * b * (a / d1) * s * s);
    lw_mem_k(L, MDL_MEM_SOFTMAX, "softmax",
             (L->fw->kernels == MDL_KERNELS_EAGER ? 2 : 3) * b * (a / d1) * s * s);
    attn_dropout(L, "attn_dropout", b * (a / d1) * s * s);
    return lw_gemm(L, MDL_OP_ATTN, "attn_ctx", b * a / d1, s, h / a, s);
}

/* Selective recomputation: the attention core's forward again (scores, softmax, context), from
 * the saved q, k and v; FlashAttention's backward recomputes its scores itself. */
void lw_attn_core_recompute(struct mdl_lower *L)
{
    struct mdl_dims D = lw_dims(L);
    double d1 = D.d1, b = D.b, s = D.s, h = D.h, a = D.a;
    kv_repeat(L, &D, "kv_expand_recompute");
    lw_gemm(L, MDL_OP_ATTN, "attn_score_recompute", b * a / d1, s, s, h / a);
    lw_eager_mem(L, "attn_scale_recompute", 2 * b * (a / d1) * s * s);
    lw_mem_k(L, MDL_MEM_SOFTMAX, "softmax_recompute",
             (L->fw->kernels == MDL_KERNELS_EAGER ? 2 : 3) * b * (a / d1) * s * s);
    attn_dropout(L, "attn_dropout_recompute", b * (a / d1) * s * s);
    lw_gemm(L, MDL_OP_ATTN, "attn_ctx_recompute", b * a / d1, s, h / a, s);
}

/* The attention core's backward over the rank's heads; returns the op the next waits for. */
int lw_attn_core_bwd(struct mdl_lower *L, const struct mdl_dims *D)
{
    double d1 = D->d1, b = D->b, s = D->s, h = D->h, a = D->a, bs = D->bs;
    int x;
    if (D->cp > 1) return lw_cp_attn_bwd(L, D);
    if (L->fw->attention == MDL_ATTENTION_FLASH) {
        /* FlashAttention-2's backward as PyTorch runs it: a zeroed fp32 dq accumulator, the row
         * sums of dO * O, the kernel, and dq converted back from fp32 */
        lw_eager_mem(L, "flash_dq_zero", 2 * bs * h / d1);
        lw_eager_mem(L, "flash_dot_do_o", 2 * bs * h / d1);
        x = lw_flash(L, "flash_attn_bwd", b * a / d1, s, s, h / a, 1, 0);
        lw_eager_mem(L, "flash_dq_convert", 3 * bs * h / d1);
        return x;
    }
    lw_gemm(L, MDL_OP_ATTN, "attn_ctx_dgrad", b * a / d1, s, s, h / a);
    lw_gemm(L, MDL_OP_ATTN, "attn_ctx_vgrad", b * a / d1, s, h / a, s);
    attn_dropout(L, "attn_dropout_bwd", b * (a / d1) * s * s);
    lw_eager_mem(L, "softmax_grad_mul", 3 * b * (a / d1) * s * s);
    lw_mem_k(L, MDL_MEM_SOFTMAX, "softmax_bwd", 3 * b * (a / d1) * s * s);
    lw_eager_mem(L, "attn_scale_bwd", 2 * b * (a / d1) * s * s);
    lw_gemm(L, MDL_OP_ATTN, "attn_score_qgrad", b * a / d1, s, h / a, s);
    x = lw_gemm(L, MDL_OP_ATTN, "attn_score_kgrad", b * a / d1, s, h / a, s);
    kv_repeat(L, D, "kv_grad_reduce");
    return x;
}

/* The MLP's activation on the rank's bs x f/d1 block: GeLU (read, write) or SwiGLU, silu(gate) *
 * up reading both halves of FC1's output; backward reads what the forward read and the output
 * gradient, and writes the input gradients. */
void lw_mlp_act(struct mdl_lower *L, const struct mdl_dims *D, int bwd)
{
    double n = D->bs * D->f / D->d1;
    if (D->glu)
        lw_mem(L, bwd ? "swiglu_bwd" : "swiglu", (bwd ? 5 : 3) * n);
    else
        lw_mem(L, bwd ? "gelu_bwd" : "gelu", (bwd ? 3 : 2) * n);
}

/* A sublayer's weight gradients (1/shards of its parameters) all-reduced over the GPUs that
 * hold copies of them (group marker `group`, its own communicator on `stream`), once: after the
 * backward of the last micro-batch (and Oases sub-batch), overlapping what follows. */
void lw_wgrad_replicas(struct mdl_lower *L, int mlp, double shards, int group, int stream,
                       const char *name)
{
    if (L->mb != L->nmb - 1 || (L->st->oases && L->sub != 1) || L->last_comp < 0) return;
    struct mdl_op op = {.kind = MDL_OP_ALL_REDUCE,
                        .stream = (uint8_t)stream,
                        .dim = MDL_OP_DIM(MDL_DIM_TP),
                        .group = group,
                        .bytes = mdl_model_sublayer_params(L->m, mlp) / shards *
                                 mdl_dtype_bytes(L->m->dtype)};
    op.deps[op.ndeps++] = L->last_comp;
    lw_emit(L, &op, name);
}

/* Makes sub-batch i current: each sub-batch waits only for its own collectives. */
static void sub_use(struct mdl_lower *L, int i)
{
    L->pend[L->sub] = L->pending;
    L->sub = i;
    L->pending = L->pend[i];
}

/* Runs two blocks in order, for the whole micro-batch, or (Oases) for sub-batch 0 then 1 of the
 * first block and then of the second, so one sub-batch's collective is in flight while the other
 * computes. */
static void blocks(struct mdl_lower *L, void (*first)(struct mdl_lower *),
                   void (*second)(struct mdl_lower *))
{
    if (!L->st->oases) {
        first(L);
        second(L);
        return;
    }
    for (int i = 0; i < 2; i++) {
        sub_use(L, i);
        first(L);
    }
    for (int i = 0; i < 2; i++) {
        sub_use(L, i);
        second(L);
    }
}

/* The layer's MLP body: the kind's, or a mixture of experts on the layers that have one. */
static mdl_kind_body mlp_body(const struct mdl_lower *L, int bwd)
{
    if (mdl_model_is_moe_layer(L->m, L->layer)) return bwd ? lw_moe_bwd : lw_moe_fwd;
    return bwd ? L->kind->mlp_bwd : L->kind->mlp_fwd;
}

static void layer_fwd(struct mdl_lower *L)
{
    blocks(L, L->kind->attn_fwd, mlp_body(L, 0));
}

/* Backward of a layer, after recomputing its forward when asked: Megatron's full recomputation
 * repeats the forward collectives too; Oases' saves the post-collective outputs, so its
 * recomputation is compute only. */
static void layer_bwd(struct mdl_lower *L)
{
    if (L->st->recompute) {
        /* from the layer's saved input, in the attention's layout */
        L->layout[0] = L->layout[1] = mdl_strategy_sub_tp(L->st, 0);
        L->no_comm = L->st->oases;
        layer_fwd(L);
        L->no_comm = 0;
    }
    blocks(L, mlp_body(L, 1), L->kind->attn_bwd);
}

/* The group of the n mesh devices dev[0..n-1] (in that order), given to each of them in out;
 * ranks is scratch. Returns 1 on allocation failure. */
static int line_group(struct mdl_program *p, const int *base, const int *dev, int n, int *ranks,
                      int *out)
{
    for (int k = 0; k < n; k++)
        ranks[k] = base[dev[k]];
    int g = n > 1 ? mdl_program_group(p, n, ranks) : -1;
    for (int k = 0; k < n; k++)
        out[dev[k]] = g;
    return n > 1 && g < 0;
}

int mdl_strategy_axis_groups(const struct mdl_strategy *st, struct mdl_program *p, const int *base,
                             int *row, int *col, int *pil)
{
    int d1, d2, d3 = mdl_strategy_depth(st);
    mdl_strategy_mesh(st, &d1, &d2);
    int n = d1 > d2 ? d1 : d2, plane = d1 * d2;
    if (d3 > n) n = d3;
    int *ranks = malloc((size_t)n * sizeof *ranks), *dev = malloc((size_t)n * sizeof *dev);
    int rc = ranks && dev ? 0 : -1;
    for (int l = 0; !rc && l < d3; l++) {
        for (int i = 0; !rc && i < d1; i++) { /* row i: the d2 axis */
            for (int j = 0; j < d2; j++)
                dev[j] = l * plane + mdl_strategy_device(st, i, j);
            rc = line_group(p, base, dev, d2, ranks, row);
        }
        for (int j = 0; !rc && j < d2; j++) { /* column j: the d1 axis */
            for (int i = 0; i < d1; i++)
                dev[i] = l * plane + mdl_strategy_device(st, i, j);
            rc = line_group(p, base, dev, d1, ranks, col);
        }
    }
    for (int x = 0; !rc && pil && x < plane; x++) { /* pillar x: the third axis */
        for (int l = 0; l < d3; l++)
            dev[l] = l * plane + x;
        rc = line_group(p, base, dev, d3, ranks, pil);
    }
    free(ranks);
    free(dev);
    return rc;
}

int mdl_strategy_ring_groups(const struct mdl_strategy *st, struct mdl_program *p, const int *base,
                             int *to, int *from)
{
    int d1, d2, d = st->tp;
    mdl_strategy_mesh(st, &d1, &d2);
    /* PrimePar's ring, Transformer Engine's ring exchange (tp_comm_overlap) or PyTorch's
     * async TP's transfers between peers */
    bool ring = (mdl_kind_of(st)->ring || st->tp_comm_overlap || st->async_tp) && d1 > 1;
    for (int i = 0; i < d; i++)
        to[i] = from[i] = -1;
    for (int i = 0; ring && i < d; i++) {
        int next = i / d1 * d1 + (i + 1) % d1; /* rings of d1 consecutive members */
        int pair[2] = {base[i], base[next]};
        /* a communicator of its own: with a ring of 2 both directions join the same two ranks */
        int g = mdl_program_group_add(p, 2, pair);
        if (g < 0) return -1;
        to[i] = g;
        from[next] = g;
    }
    return 0;
}

/* Member r's group among ranks 0..tp-1: those of its block of `block` consecutive ranks that
 * are congruent to r modulo `stride`; -1 when alone, -2 on allocation failure. */
static int stride_group(struct mdl_program *p, int r, int block, int stride)
{
    int ranks[MDL_MAX_TP], n = 0;
    for (int j = r / block * block; j < (r / block + 1) * block; j++)
        if (j % stride == r % stride) ranks[n++] = j;
    if (n < 2) return -1;
    int g = mdl_program_group(p, n, ranks);
    return g < 0 ? -2 : g;
}

/* The replica groups of a sublayer of degree t: rep[r] for each rank, the ranks congruent to r
 * modulo t. Each is a communicator of its own (the weight gradients' stream), apart from the
 * re-layout group, which may hold the same ranks. Returns 0 or -1 on allocation failure. */
static int replica_groups(const struct mdl_strategy *st, struct mdl_program *p, int t, int *rep)
{
    int ranks[MDL_MAX_TP], n = st->tp / t;
    for (int c = 0; c < t; c++) {
        for (int k = 0; k < n; k++)
            ranks[k] = c + k * t;
        int g = n > 1 ? mdl_program_group_add(p, n, ranks) : -1;
        if (n > 1 && g < 0) return -1;
        for (int k = 0; k < n; k++)
            rep[c + k * t] = g;
    }
    return 0;
}

/* The groups of a per-sublayer plan, each indexed by rank, in the order of the markers
 * MDL_GROUP_SUB_ATTN (-15) to MDL_GROUP_RELAYOUT (-19): the sublayers' groups and the re-layout
 * group first, then the replica groups, which must not be found as any of those. Returns 0 or
 * -1 on allocation failure. */
static int sub_groups(const struct mdl_strategy *st, struct mdl_program *p, int *g[5])
{
    int ta = mdl_strategy_sub_tp(st, 0), tm = mdl_strategy_sub_tp(st, 1);
    int big = ta > tm ? ta : tm, small = ta > tm ? tm : ta;
    for (int r = 0; r < st->tp; r++) {
        g[0][r] = stride_group(p, r, ta, 1);
        g[1][r] = stride_group(p, r, tm, 1);
        g[4][r] = stride_group(p, r, big, small);
        if (g[0][r] == -2 || g[1][r] == -2 || g[4][r] == -2) return -1;
    }
    return replica_groups(st, p, ta, g[2]) || replica_groups(st, p, tm, g[3]) ? -1 : 0;
}

/* Context parallelism's groups of the tp x cp GPUs of the layer group from rank `at` (rank at + k:
 * TP rank k mod tp of CP rank k / tp), each a communicator of its own: every TP rank's ring
 * forward (to, from) and backward (bto, bfrom), and its CP group. 0, or -1 on allocation
 * failure. */
static int cp_groups(const struct mdl_strategy *st, struct mdl_program *p, int at, int *g[5])
{
    int tp = st->tp, n = mdl_strategy_gpus(st), cp = mdl_strategy_cp(st);
    for (int k = 0; k < n; k++) {
        int r = at + k, next = at + (k + tp) % n, pair[2] = {r, next};
        int fw = mdl_program_group_add(p, 2, pair);
        pair[0] = next;
        pair[1] = r;
        int bw = mdl_program_group_add(p, 2, pair);
        if (fw < 0 || bw < 0) return -1;
        g[0][r] = g[1][next] = fw; /* r sends forward to next, which receives it */
        g[2][next] = g[3][r] = bw; /* next sends backward to r, which receives it */
    }
    int *ranks = malloc((size_t)cp * sizeof *ranks), rc = ranks ? 0 : -1;
    for (int t = 0; !rc && t < tp; t++) {
        for (int c = 0; c < cp; c++)
            ranks[c] = at + t + tp * c;
        int grp = mdl_program_group_add(p, cp, ranks);
        if (grp < 0) rc = -1;
        for (int c = 0; c < cp; c++)
            g[4][at + t + tp * c] = grp;
    }
    free(ranks);
    return rc;
}

/* The group of the n ranks base[first + stride k], a communicator of its own, given to each of
 * them in out (nothing when n is 1); ranks is scratch. 0, or -1 on allocation failure. */
static int stride_line(struct mdl_program *p, const int *base, int first, int n, int stride,
                       int *ranks, int *out)
{
    if (n < 2) return 0;
    for (int k = 0; k < n; k++)
        ranks[k] = base[first + stride * k];
    int g = mdl_program_group_add(p, n, ranks);
    for (int k = 0; k < n; k++)
        out[first + stride * k] = g;
    return g < 0 ? -1 : 0;
}

int mdl_strategy_expert_groups(const struct mdl_strategy *st, struct mdl_program *p,
                               const int *base, int n, int *ep_g, int *etp_g, int *edp_g)
{
    int ep = mdl_strategy_ep(st), etp = mdl_strategy_etp(st), el = ep * etp;
    int *ranks = malloc((size_t)n * sizeof *ranks), rc = ranks ? 0 : -1;
    for (int r = 0; r < n; r++) {
        ep_g[r] = etp_g[r] = -1;
        if (edp_g) edp_g[r] = -1;
    }
    for (int r = 0; !rc && r < n; r++) {
        int et = r % etp, ee = r / etp % ep, ed = r / el;
        if (ee == 0) /* the first member makes each group */
            rc = stride_line(p, base, et + el * ed, ep, etp, ranks, ep_g);
        if (!rc && et == 0) rc = stride_line(p, base, etp * (ee + ep * ed), etp, 1, ranks, etp_g);
    }
    for (int i = 0; !rc && edp_g && i < el; i++)
        rc = stride_line(p, base, i, n / el, el, ranks, edp_g);
    free(ranks);
    return rc;
}

/* Gives each rank a copy of rank 0's ops (unless every rank was lowered: `lowered`) with its own
 * row and column groups (those of its CP rank's TP group), its CP groups and its expert groups. */
static int assign_groups(const struct mdl_strategy *st, const struct mdl_model *m,
                         struct mdl_program *out, bool lowered)
{
    int n = mdl_strategy_lower_gpus(st, m), tp = st->tp, lg = mdl_strategy_gpus(st);
    size_t sz = (size_t)n * sizeof(int);
    int *base = malloc(sz), *row = malloc(sz), *col = malloc(sz), *to = malloc(sz);
    int *from = malloc(sz), *pil = malloc(sz);
    int rc = base && row && col && to && from && pil ? 0 : -1;
    for (int r = 0; !rc && r < n; r++)
        base[r] = r;
    for (int c = 0; !rc && c < n / tp; c++) {
        rc = mdl_strategy_axis_groups(st, out, base + c * tp, row + c * tp, col + c * tp,
                                      pil + c * tp);
        if (!rc) rc = mdl_strategy_ring_groups(st, out, base + c * tp, to + c * tp, from + c * tp);
    }
    int *sub[5], *cpg[5], *epg = malloc(sz), *etpg = malloc(sz);
    if (!epg || !etpg) rc = -1;
    for (int i = 0; i < 5; i++) {
        if (!(sub[i] = malloc(sz))) rc = -1;
        if (!(cpg[i] = malloc(sz))) rc = -1;
    }
    if (!rc && mdl_strategy_is_mixed(st)) rc = sub_groups(st, out, sub);
    for (int at = 0; !rc && lg > tp && at < n; at += lg)
        rc = cp_groups(st, out, at, cpg);
    /* the expert markers appear only with experts */
    if (!rc && m->moe.experts > 0)
        rc = mdl_strategy_expert_groups(st, out, base, n, epg, etpg, NULL);
    /* rank 0 last: the others copy its ops while they still name the axes */
    for (int r = n - 1; !rc && r >= 0; r--) {
        struct mdl_rank *dst = &out->ranks[r];
        if (r > 0 && !lowered && mdl_rank_copy(dst, &out->ranks[0])) rc = -1;
        for (int k = 0; !rc && k < dst->nops; k++) {
            int g = dst->ops[k].group;
            if (g == LW_AXIS_D1)
                dst->ops[k].group = col[r];
            else if (g == LW_AXIS_D2)
                dst->ops[k].group = row[r];
            else if (g == LW_AXIS_D3)
                dst->ops[k].group = pil[r];
            else if (g == MDL_GROUP_SHIFT_TO)
                dst->ops[k].group = to[r];
            else if (g == MDL_GROUP_SHIFT_FROM)
                dst->ops[k].group = from[r];
            else if (g <= MDL_GROUP_SUB_ATTN && g >= MDL_GROUP_RELAYOUT)
                dst->ops[k].group = sub[MDL_GROUP_SUB_ATTN - g][r];
            else if (g <= MDL_GROUP_CP_TO && g >= MDL_GROUP_CP)
                dst->ops[k].group = cpg[MDL_GROUP_CP_TO - g][r];
            else if (g == MDL_GROUP_EP)
                dst->ops[k].group = epg[r];
            else if (g == MDL_GROUP_ETP)
                dst->ops[k].group = etpg[r];
        }
    }
    free(epg);
    free(etpg);
    for (int i = 0; i < 5; i++) {
        free(sub[i]);
        free(cpg[i]);
    }
    free(to);
    free(from);
    free(pil);
    free(base);
    free(row);
    free(col);
    return rc;
}

static void lower_init(struct mdl_lower *L, const struct mdl_strategy *st,
                       const struct mdl_model *m, const struct mdl_device *dev,
                       const struct mdl_framework *fw, struct mdl_program *out, int rank)
{
    static const struct mdl_framework host_free = {0};
    *L = (struct mdl_lower){.p = out,
                            .m = m,
                            .dev = dev,
                            .st = st,
                            .kind = mdl_kind_of(st),
                            .fw = fw ? fw : &host_free,
                            .rank = rank,
                            .pending = -1,
                            .pending2 = -1,
                            .after = -1,
                            .last_comp = -1,
                            .graph = {-2, -2, -2}};
    int d1, d2;
    mdl_strategy_mesh(st, &d1, &d2);
    L->d1 = d1;
    L->d2 = d2;
    L->d3 = mdl_strategy_depth(st);
    L->frac = st->oases ? 0.5 : 1;
    L->pend[0] = L->pend[1] = -1;
    L->rep = L->kind->depth_replicas ? L->d3 : 1;
    L->nmb = 1;
    L->share = 1;
    L->layout[0] = L->layout[1] = L->glayout[0] = L->glayout[1] = st->tp;
}

/* Lowers one rank's ops (no groups per rank); see mdl_strategy_lower. */
static int lower_rank(const struct mdl_strategy *st, const struct mdl_model *m,
                      const struct mdl_device *dev, const struct mdl_framework *fw, int layers,
                      int micro_batches, double share, struct mdl_program *out, int rank)
{
    struct mdl_lower L;
    lower_init(&L, st, m, dev, fw, out, rank);
    L.ep_rank = rank / mdl_strategy_etp(st) % mdl_strategy_ep(st);
    L.nmb = micro_batches;
    L.share = share;
    for (int mb = 0; mb < micro_batches && !L.oom; mb++) {
        L.mb = mb;
        /* the layers' input and the loss's gradient: whole on every rank */
        L.layout[0] = L.layout[1] = L.glayout[0] = L.glayout[1] = st->tp;
        L.phase = MDL_PHASE_FWD;
        for (int l = 0; l < layers && !L.oom; l++) {
            L.layer = l;
            layer_fwd(&L);
        }
        L.phase = MDL_PHASE_BWD;
        for (int l = layers - 1; l >= 0 && !L.oom; l--) {
            L.layer = l;
            layer_bwd(&L);
        }
    }
    return L.oom ? -1 : 0;
}

double mdl_strategy_ops(const struct mdl_strategy *st, const struct mdl_model *m,
                        const struct mdl_device *dev, const struct mdl_framework *fw, long layers,
                        long micro_batches)
{
    struct tps_error e = {0};
    if (mdl_strategy_check(st, m, &e) != 0) return -1;
    struct mdl_program p;
    if (mdl_program_init(&p, st->tp) != 0) return -1;
    /* one layer: with a mixture of experts, an expert layer (more ops than a dense one) */
    struct mdl_model one = *m;
    one.moe.first_dense_layers = 0;
    int rc = lower_rank(st, &one, dev, fw, 1, 1, 1, &p, 0);
    double n = rc ? -1
                  : (double)p.ranks[0].nops * (double)mdl_strategy_lower_gpus(st, m) *
                        (double)layers * (double)micro_batches;
    mdl_program_release(&p);
    return n;
}

int mdl_strategy_lower(const struct mdl_strategy *st, const struct mdl_model *m,
                       const struct mdl_device *dev, const struct mdl_framework *fw, int layers,
                       int micro_batches, struct mdl_program *out, struct tps_error *err)
{
    int n = mdl_strategy_lower_gpus(st, m);
    if (mdl_program_init(out, n) != 0) return tps_error_oom(err);
    int rc = mdl_strategy_check(st, m, err);
    if (rc) return rc;
    out->layers = layers;
    out->micro_batches = micro_batches;
    /* the layer groups side by side that hold whole expert groups each run the micro-batches */
    out->model_flop = mdl_model_flop(m, layers, micro_batches) * (n / mdl_strategy_gpus(st));
    out->peak_flops = dev->peak_flops[mdl_model_gemm_dtype(m)];
    out->hw_queues = fw ? fw->connections : 0;
    if ((rc = mdl_ops_check(mdl_strategy_ops(st, m, dev, fw, layers, micro_batches), "layers",
                            "simulate fewer layers or micro-batches", err)))
        return rc;
    /* skewed routing: each rank's experts get their own tokens, so every rank is lowered */
    bool each = m->moe.skewed && mdl_strategy_ep(st) > 1;
    for (int r = 0; r < (each ? n : 1); r++)
        if (lower_rank(st, m, dev, fw, layers, micro_batches, 1, out, r) != 0)
            return tps_error_oom(err);
    if (assign_groups(st, m, out, each) != 0) return tps_error_oom(err);
    return TPS_OK;
}

int mdl_strategy_lower_share(const struct mdl_strategy *st, const struct mdl_model *m,
                             const struct mdl_device *dev, const struct mdl_framework *fw,
                             int layers, int micro_batches, double share, struct mdl_program *out)
{
    if (mdl_program_init(out, 1) != 0) return -1;
    return lower_rank(st, m, dev, fw, layers, micro_batches, share, out, 0);
}

struct mdl_emitter {
    struct mdl_lower L;
};

struct mdl_emitter *mdl_emitter_new(const struct mdl_strategy *st, const struct mdl_model *m,
                                    const struct mdl_device *dev, const struct mdl_framework *fw,
                                    struct mdl_program *p, int rank)
{
    struct mdl_emitter *E = malloc(sizeof *E);
    if (E) lower_init(&E->L, st, m, dev, fw, p, rank);
    return E;
}

void mdl_emitter_free(struct mdl_emitter *E)
{
    free(E);
}

/* Starts a piece: its first compute op waits for `after`; returns the rank's op count. */
static int piece_begin(struct mdl_lower *L, enum mdl_phase ph, int mb, int layer, int after)
{
    L->phase = (uint8_t)ph;
    L->mb = mb;
    L->layer = layer;
    L->after = after;
    return L->p->ranks[L->rank].nops;
}

/* The last op of a piece that started at op count n0, or `after` when it emitted nothing. */
static int piece_end(struct mdl_lower *L, int n0, int after)
{
    if (L->oom) return -1;
    int n = L->p->ranks[L->rank].nops;
    return n > n0 ? n - 1 : after;
}

int mdl_emitter_layers(struct mdl_emitter *E, enum mdl_phase ph, int first, int n, int mb,
                       int after)
{
    struct mdl_lower *L = &E->L;
    int n0 = piece_begin(L, ph, mb, first, after);
    for (int i = 0; i < n && !L->oom; i++) {
        L->layer = ph == MDL_PHASE_BWD ? first + n - 1 - i : first + i;
        if (ph == MDL_PHASE_BWD)
            layer_bwd(L);
        else
            layer_fwd(L);
    }
    return piece_end(L, n0, after);
}

/* Shapes of the whole micro-batch: Oases splits the layers, not the embedding or the logits. */
struct mdl_dims lw_whole_dims(struct mdl_lower *L)
{
    double frac = L->frac;
    L->frac = 1;
    struct mdl_dims D = lw_dims(L);
    L->frac = frac;
    return D;
}

int mdl_emitter_embedding(struct mdl_emitter *E, enum mdl_phase ph, int mb, int after)
{
    struct mdl_lower *L = &E->L;
    int n0 = piece_begin(L, ph, mb, -1, after);
    if (L->m->vocab <= 0) return after;
    L->kind->embedding(L);
    return piece_end(L, n0, after);
}

int mdl_emitter_logits(struct mdl_emitter *E, enum mdl_phase ph, int mb, int after)
{
    struct mdl_lower *L = &E->L;
    int n0 = piece_begin(L, ph, mb, -1, after);
    if (L->m->vocab <= 0) return after;
    L->no_fp8++; /* Megatron-LM's output layer is its own linear, not Transformer Engine's */
    L->kind->logits(L);
    L->no_fp8--;
    return piece_end(L, n0, after);
}

/* Vocabulary-parallel cross entropy: the row maximum, the sum of exponentials and the target's
 * logit are all-reduced over the vocabulary's axis as fp32, one value per token. */
void lw_ce_fwd(struct mdl_lower *L, double bs, double d1, int axis)
{
    double v = (double)L->m->vocab;
    double f32 = 4.0 / mdl_dtype_bytes(L->m->dtype); /* elements of the dtype per fp32 value */
    int x = lw_mem_k(L, MDL_MEM_SOFTMAX, "cross_entropy_max", bs * v / d1);
    lw_coll(L, MDL_OP_ALL_REDUCE, "ar_ce_max", bs * f32, x, axis);
    x = lw_mem_k(L, MDL_MEM_SOFTMAX, "cross_entropy_exp", (1 + 2 * f32) * bs * v / d1);
    lw_coll(L, MDL_OP_ALL_REDUCE, "ar_ce_sum", 2 * bs * f32, x, axis);
    lw_mem(L, "cross_entropy_loss", 2 * bs * f32);
}

void lw_ce_bwd(struct mdl_lower *L, double bs, double d1)
{
    double v = (double)L->m->vocab;
    double f32 = 4.0 / mdl_dtype_bytes(L->m->dtype);
    lw_mem(L, "cross_entropy_bwd", (f32 + 1) * bs * v / d1);
}

int mdl_emitter_op(struct mdl_emitter *E, struct mdl_op *op, const char *name, int mb,
                   enum mdl_phase ph)
{
    struct mdl_lower *L = &E->L;
    L->phase = (uint8_t)ph;
    L->mb = mb;
    L->layer = -1;
    return lw_emit(L, op, name);
}
