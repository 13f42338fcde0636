/* strategy.c - lowering of 1D tensor parallelism (Megatron-LM, optional sequence parallelism)
 * into per-rank ops: four GEMMs, attention core, memory-bound kernels and ring collectives,
 * forward and backward. Calls compute.c for durations. Units: elements are converted to bytes
 * with the model dtype; times in s; FLOP counts exact (2mnk per GEMM).
 */
#include "strategy.h"

#include <stdlib.h>
#include <string.h>

#include "compute.h"

int mdl_strategy_check(const struct mdl_strategy *st, const struct mdl_model *m,
                       struct tps_error *err)
{
    long d = st->tp;
    if (d < 1) return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp", "must be at least 1");
    if (m->heads % d)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp",
                             "must divide model.heads (%ld), got %ld", m->heads, d);
    if (m->hidden % m->heads)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp",
                             "model.heads (%ld) must divide model.hidden (%ld)", m->heads,
                             m->hidden);
    if (m->ffn % d)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp",
                             "must divide model.ffn (%ld), got %ld", m->ffn, d);
    if (st->sequence_parallel && m->seq % d)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp",
                             "with sequence parallelism must divide model.seq (%ld), got %ld",
                             m->seq, d);
    return TPS_OK;
}

/* Lowering context for rank 0; the other ranks get identical copies. */
struct lower {
    struct mdl_program *p;
    const struct mdl_model *m;
    const struct mdl_device *dev;
    const struct mdl_strategy *st;
    int group;     /* the TP group */
    int layer, mb; /* current layer and micro-batch */
    uint8_t phase; /* current phase */
    int pending;   /* last collective whose result the next compute op consumes, -1 none */
    int oom;       /* allocation failure seen */
};

static int emit(struct lower *L, struct mdl_op *op, const char *name)
{
    op->name = mdl_program_name(L->p, name);
    op->layer = L->layer;
    op->mb = L->mb;
    op->phase = L->phase;
    int idx = op->name < 0 ? -1 : mdl_program_add(L->p, 0, op);
    if (idx < 0) L->oom = 1;
    return idx;
}

static void take_pending(struct lower *L, struct mdl_op *op)
{
    if (L->pending >= 0) {
        op->deps[op->ndeps++] = L->pending;
        L->pending = -1;
    }
}

/* GEMM batch x (m x k)(k x n); kind GEMM or ATTN. */
static int gemm(struct lower *L, enum mdl_op_kind kind, const char *name, double batch, double m,
                double n, double k)
{
    struct mdl_op op = {.kind = (uint8_t)kind, .stream = MDL_STREAM_COMPUTE, .group = -1};
    take_pending(L, &op);
    op.flop = mdl_gemm_flop(batch, m, n, k);
    op.dur_s = mdl_gemm_time(L->dev, L->m->dtype, batch, m, n, k);
    return emit(L, &op, name);
}

/* Memory-bound kernel touching `elems` elements in total. */
static int mem(struct lower *L, const char *name, double elems)
{
    struct mdl_op op = {.kind = MDL_OP_MEM, .stream = MDL_STREAM_COMPUTE, .group = -1};
    take_pending(L, &op);
    op.bytes = elems * mdl_dtype_bytes(L->m->dtype);
    op.dur_s = mdl_mem_time(L->dev, op.bytes);
    return emit(L, &op, name);
}

/* Collective over the TP group on `elems` elements (full size), after op `after`. The next
 * compute op waits for it unless `deferred`. */
static int coll(struct lower *L, enum mdl_op_kind kind, const char *name, double elems, int after)
{
    if (L->st->tp == 1) return -1;
    struct mdl_op op = {.kind = (uint8_t)kind, .stream = MDL_STREAM_COMM, .group = L->group};
    op.deps[op.ndeps++] = after;
    op.bytes = elems * mdl_dtype_bytes(L->m->dtype);
    int idx = emit(L, &op, name);
    L->pending = idx;
    return idx;
}

/* The "g" operator of Megatron: AR after a row-parallel linear (RS with SP). */
static int reduce_out(struct lower *L, const char *name, double elems, int after)
{
    return coll(L, L->st->sequence_parallel ? MDL_OP_REDUCE_SCATTER : MDL_OP_ALL_REDUCE, name,
                elems, after);
}

static void layer_fwd(struct lower *L)
{
    const struct mdl_model *m = L->m;
    double d = L->st->tp, b = (double)m->micro_batch, s = (double)m->seq, h = (double)m->hidden;
    double f = (double)m->ffn, a = (double)m->heads, bs = b * s;
    bool sp = L->st->sequence_parallel;
    double tok = sp ? bs / d : bs; /* tokens held by a rank between the TP regions */
    int x;

    x = mem(L, "ln1", 2 * tok * h);
    if (sp) coll(L, MDL_OP_ALL_GATHER, "ag_attn", bs * h, x);
    gemm(L, MDL_OP_GEMM, "qkv", 1, bs, 3 * h / d, h);
    gemm(L, MDL_OP_ATTN, "attn_score", b * a / d, s, s, h / a);
    mem(L, "softmax", 3 * b * (a / d) * s * s);
    gemm(L, MDL_OP_ATTN, "attn_ctx", b * a / d, s, h / a, s);
    x = gemm(L, MDL_OP_GEMM, "proj", 1, bs, h, h / d);
    reduce_out(L, "ar_attn", bs * h, x);
    mem(L, "dropout_add", 3 * tok * h);
    x = mem(L, "ln2", 2 * tok * h);
    if (sp) coll(L, MDL_OP_ALL_GATHER, "ag_mlp", bs * h, x);
    gemm(L, MDL_OP_GEMM, "fc1", 1, bs, f / d, h);
    mem(L, "gelu", 2 * bs * f / d);
    x = gemm(L, MDL_OP_GEMM, "fc2", 1, bs, h, f / d);
    reduce_out(L, "ar_mlp", bs * h, x);
    mem(L, "dropout_add2", 3 * tok * h);
}

/* Backward of a column-parallel linear: dgrad, then the input-grad collective, then wgrad
 * (overlapping the collective unless async_grad_allreduce is off). */
static void column_bwd(struct lower *L, const char *dgrad, const char *wgrad, const char *cname,
                       double bs, double n_local, double k)
{
    int x = gemm(L, MDL_OP_GEMM, dgrad, 1, bs, k, n_local);
    int c = reduce_out(L, cname, bs * k, x);
    int saved = L->pending;
    L->pending = L->st->async_grad_allreduce ? -1 : c;
    gemm(L, MDL_OP_GEMM, wgrad, 1, n_local, k, bs);
    if (L->st->async_grad_allreduce) L->pending = saved;
}

static void layer_bwd(struct lower *L)
{
    const struct mdl_model *m = L->m;
    double d = L->st->tp, b = (double)m->micro_batch, s = (double)m->seq, h = (double)m->hidden;
    double f = (double)m->ffn, a = (double)m->heads, bs = b * s;
    bool sp = L->st->sequence_parallel;
    double tok = sp ? bs / d : bs;
    int x;

    x = mem(L, "dropout_add2_bwd", 2 * tok * h);
    if (sp) coll(L, MDL_OP_ALL_GATHER, "ag_mlp_bwd", bs * h, x);
    gemm(L, MDL_OP_GEMM, "fc2_dgrad", 1, bs, f / d, h);
    gemm(L, MDL_OP_GEMM, "fc2_wgrad", 1, h, f / d, bs);
    mem(L, "gelu_bwd", 3 * bs * f / d);
    column_bwd(L, "fc1_dgrad", "fc1_wgrad", "ar_mlp_bwd", bs, f / d, h);
    mem(L, "ln2_bwd", 3 * tok * h);
    x = mem(L, "dropout_add_bwd", 2 * tok * h);
    if (sp) coll(L, MDL_OP_ALL_GATHER, "ag_attn_bwd", bs * h, x);
    gemm(L, MDL_OP_GEMM, "proj_dgrad", 1, bs, h / d, h);
    gemm(L, MDL_OP_GEMM, "proj_wgrad", 1, h / d, h, bs);
    gemm(L, MDL_OP_ATTN, "attn_ctx_dgrad", b * a / d, s, s, h / a);
    gemm(L, MDL_OP_ATTN, "attn_ctx_vgrad", b * a / d, s, h / a, s);
    mem(L, "softmax_bwd", 3 * b * (a / d) * s * s);
    gemm(L, MDL_OP_ATTN, "attn_score_qgrad", b * a / d, s, h / a, s);
    gemm(L, MDL_OP_ATTN, "attn_score_kgrad", b * a / d, s, h / a, s);
    column_bwd(L, "qkv_dgrad", "qkv_wgrad", "ar_attn_bwd", bs, 3 * h / d, h);
    mem(L, "ln1_bwd", 3 * tok * h);
}

int mdl_strategy_lower(const struct mdl_strategy *st, const struct mdl_model *m,
                       const struct mdl_device *dev, int layers, int micro_batches,
                       struct mdl_program *out, struct tps_error *err)
{
    if (mdl_program_init(out, st->tp) != 0)
        return tps_error_set(err, TPS_ENOMEM, NULL, 0, 0, NULL, "out of memory");
    int rc = mdl_strategy_check(st, m, err);
    if (rc) return rc;
    out->layers = layers;
    out->micro_batches = micro_batches;
    int ranks[4096];
    if (st->tp > 4096)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp", "at most 4096, got %d", st->tp);
    for (int r = 0; r < st->tp; r++)
        ranks[r] = r;
    struct lower L = {.p = out, .m = m, .dev = dev, .st = st, .pending = -1};
    L.group = mdl_program_group(out, st->tp, ranks);
    if (L.group < 0) L.oom = 1;
    for (int mb = 0; mb < micro_batches && !L.oom; mb++) {
        L.mb = mb;
        L.phase = MDL_PHASE_FWD;
        for (int l = 0; l < layers; l++) {
            L.layer = l;
            layer_fwd(&L);
        }
        L.phase = MDL_PHASE_BWD;
        for (int l = layers - 1; l >= 0; l--) {
            L.layer = l;
            layer_bwd(&L);
        }
    }
    for (int r = 1; r < st->tp && !L.oom; r++) {
        struct mdl_rank *dst = &out->ranks[r], *src = &out->ranks[0];
        dst->ops = malloc((size_t)src->nops * sizeof *dst->ops);
        if (!dst->ops) {
            L.oom = 1;
            break;
        }
        memcpy(dst->ops, src->ops, (size_t)src->nops * sizeof *dst->ops);
        dst->nops = dst->cap = src->nops;
    }
    if (L.oom) return tps_error_set(err, TPS_ENOMEM, NULL, 0, 0, NULL, "out of memory");
    return TPS_OK;
}
