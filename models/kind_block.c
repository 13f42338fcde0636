/* kind_block.c - Colossal-AI's block meshes (strategies.md section 7): every activation and
 * weight a block of a q x q mesh, tokens over the rows, the hidden dim over the columns. 2D
 * (kind summa2d, tp = q^2, Optimus) runs each linear as SUMMA, q steps of a block broadcast
 * along rows and one along columns (backward: broadcasts and reduces to rotating roots); 2.5D
 * (kind tesseract, tp = q^2 x depth) runs SUMMA in each of `depth` slices on 1/depth of the
 * tokens and all-reduces weight gradients over the depth; 3D (kind tp3d, tp = q^3) all-gathers
 * the input and the weight over two axes of a q x q x q cube and reduce-scatters the output over
 * the third. The layer around the linears is sharded.c's.
 */
#include <stdio.h>

#include "common/ydoc.h"
#include "kind.h"

static const char *const keys_tesseract[] = {"depth", NULL};

/* depth: tesseract's slices, required. */
static int read_tesseract(const struct tps_ydoc *d, int id, struct mdl_strategy *st, int *tp_node,
                          struct tps_error *err)
{
    (void)tp_node;
    int did = tps_ydoc_get(d, id, "depth"), rc;
    long depth = 0;
    if (!did) return tps_ydoc_fail(d, id, "strategy.depth", err, "missing: tesseract's slices");
    if ((rc = tps_ydoc_count(d, did, "strategy.depth", &depth, err))) return rc;
    if (depth > MDL_MAX_TP) return tps_ydoc_fail(d, did, "strategy.depth", err, "too large");
    st->tesseract.depth = (int)depth;
    return TPS_OK;
}

/* q with q^k == n, 0 when there is none. */
static int exact_root(long n, int k)
{
    for (long q = 1; n >= 1; q++) {
        long v = q;
        for (int i = 1; i < k; i++)
            v *= q;
        if (v == n) return (int)q;
        if (v > n) break;
    }
    return 0;
}

/* GPUs a block mesh of side q splits the micro-batch over: its rows (summa2d), its rows and
 * slices (tesseract), its rows and third axis (tp3d). */
static long block_batch_split(const struct mdl_strategy *st, int q)
{
    return st->kind == MDL_STRAT_SUMMA2D     ? q
           : st->kind == MDL_STRAT_TESSERACT ? (long)q * st->tesseract.depth
                                             : (long)q * q;
}

/* Colossal-AI's block meshes (strategies.md section 7). Every activation (tokens x width) and
 * weight (in x out) is a block of the q x q mesh: tokens over the rows (the d1 axis), widths over
 * the columns (the d2 axis). Each linear below keeps Colossal-AI's schedule. */

/* SUMMA Y = X W (T x K by K x N) in q steps: step k broadcasts X's block column k along the rows
 * (root: column k) and W's block row k along the columns (root: row k), then Y_ij += X_ik W_kj,
 * a (T/q x K/q) by (K/q x N/q) GEMM. Step k + 1's blocks are prefetched while step k's GEMM runs,
 * into two buffers: their broadcasts wait for GEMM k - 1 (the input's first for its producer).
 * Returns the last GEMM. */
static int summa_ab(struct mdl_lower *L, const char *name, double T, double K, double N)
{
    double q = L->d1;
    int steps = (int)q, have = L->last_comp, g = -1, prev = -1;
    char bx[80], bw[80];
    snprintf(bx, sizeof bx, "%s_bcast_x", name);
    snprintf(bw, sizeof bw, "%s_bcast_w", name);
    int cx = lw_coll_on(L, MDL_OP_BROADCAST, bx, T * K / (q * q), have, LW_AXIS_D2, 0);
    int cw = lw_coll_on(L, MDL_OP_BROADCAST, bw, K * N / (q * q), -1, LW_AXIS_D1, 0);
    for (int k = 0; k < steps && !L->oom; k++) {
        int nx = -1, nw = -1;
        if (k + 1 < steps) {
            int buf = k >= 1 ? prev : have;
            nx = lw_coll_on(L, MDL_OP_BROADCAST, bx, T * K / (q * q), buf, LW_AXIS_D2, k + 1);
            nw = lw_coll_on(L, MDL_OP_BROADCAST, bw, K * N / (q * q), k >= 1 ? prev : -1,
                            LW_AXIS_D1, k + 1);
        }
        L->pending = cx;
        L->pending2 = cw;
        prev = g = lw_gemm(L, MDL_OP_GEMM, name, 1, T / q, N / q, K / q);
        cx = nx;
        cw = nw;
    }
    return g;
}

/* SUMMA's two backward products, each in q steps with one operand broadcast and the partial
 * product reduced to the step's root, prefetching the next broadcast (it waits for GEMM k - 1)
 * and keeping two partial buffers (GEMM k waits for reduce k - 2). dX = dY W^T: W's block row k
 * broadcast along the columns, (T/q x N/q) by (N/q x K/q), reduced along the row into column k;
 * dW = X^T dY: X's block column k broadcast along the rows, (K/q x T/q) by (T/q x N/q), reduced
 * along the column into row k. Colossal-AI waits for every reduce before returning: the result
 * is the last reduce (the last GEMM without one). */
static int summa_bwd_pass(struct mdl_lower *L, const char *name, const char *grad, char operand,
                          double bcast_elems, double m, double n, double k, int bcast_axis,
                          int reduce_axis)
{
    char gname[80], bname[96], rname[96];
    snprintf(gname, sizeof gname, "%s_%s", name, grad);
    snprintf(bname, sizeof bname, "%s_bcast_%c", gname, operand);
    snprintf(rname, sizeof rname, "%s_reduce", gname);
    double q = L->d1;
    int steps = (int)q, prev = -1, red[2] = {-1, -1}, last = -1;
    int cb = lw_coll_on(L, MDL_OP_BROADCAST, bname, bcast_elems, -1, bcast_axis, 0);
    for (int t = 0; t < steps && !L->oom; t++) {
        int nb = t + 1 < steps ? lw_coll_on(L, MDL_OP_BROADCAST, bname, bcast_elems,
                                            t >= 1 ? prev : -1, bcast_axis, t + 1)
                               : -1;
        L->pending = cb;
        L->pending2 = red[t % 2];
        prev = last = lw_gemm(L, MDL_OP_GEMM, gname, 1, m, n, k);
        int r = lw_coll_on(L, MDL_OP_REDUCE, rname, m * n, prev, reduce_axis, t);
        red[t % 2] = r;
        if (r >= 0) last = r;
        cb = nb;
    }
    return last;
}

/* 3D's linear (Bian et al.; Colossal-AI's Linear3D) on the q x q x q cube: X (T x K) is
 * all-gathered over the `in` axis to a (T/q x K/q) block, W over the d2 axis to (K/q x N/q), and
 * the (T/q x N/q) partial product is reduce-scattered over the `out` axis; consecutive linears
 * swap `in` and `out` (odd: in = d3, out = d1), so that each output lies as the next input
 * expects. Backward: dY all-gathered over `out`, dX = dY W^T reduce-scattered over `in` while
 * dW = X^T dY runs, then dW reduce-scattered over d2; the forward's gathered X and W are saved. */
static int tp3d_linear(struct mdl_lower *L, const char *name, double T, double K, double N, int odd,
                       int bwd)
{
    double q = L->d1, q2 = q * q;
    int in = odd ? LW_AXIS_D3 : LW_AXIS_D1, out = odd ? LW_AXIS_D1 : LW_AXIS_D3;
    char nm[96];
    if (!bwd) {
        snprintf(nm, sizeof nm, "%s_ag_x", name);
        int ax = lw_coll_on(L, MDL_OP_ALL_GATHER, nm, T * K / q2, L->last_comp, in, 0);
        snprintf(nm, sizeof nm, "%s_ag_w", name);
        int aw = lw_coll_on(L, MDL_OP_ALL_GATHER, nm, K * N / q2, -1, LW_AXIS_D2, 0);
        L->pending = ax;
        L->pending2 = aw;
        int g = lw_gemm(L, MDL_OP_GEMM, name, 1, T / q, N / q, K / q);
        snprintf(nm, sizeof nm, "%s_rs_y", name);
        int rs = lw_coll_on(L, MDL_OP_REDUCE_SCATTER, nm, T * N / q2, g, out, 0);
        L->pending = rs;
        return rs >= 0 ? rs : g;
    }
    snprintf(nm, sizeof nm, "%s_ag_dy", name);
    L->pending = lw_coll_on(L, MDL_OP_ALL_GATHER, nm, T * N / q2, L->last_comp, out, 0);
    snprintf(nm, sizeof nm, "%s_dgrad", name);
    int dx = lw_gemm(L, MDL_OP_GEMM, nm, 1, T / q, K / q, N / q);
    snprintf(nm, sizeof nm, "%s_rs_dx", name);
    int rx = lw_coll_on(L, MDL_OP_REDUCE_SCATTER, nm, T * K / q2, dx, in, 0);
    snprintf(nm, sizeof nm, "%s_wgrad", name);
    int dw = lw_gemm(L, MDL_OP_GEMM, nm, 1, K / q, N / q, T / q);
    snprintf(nm, sizeof nm, "%s_rs_dw", name);
    lw_coll_on(L, MDL_OP_REDUCE_SCATTER, nm, K * N / q2, dw, LW_AXIS_D2, 0);
    L->pending = rx;
    return rx >= 0 ? rx : dw;
}

/* Tokens of the micro-batch (or Oases' share) one SUMMA runs on: tesseract's slice has 1/depth
 * of them. */
static double block_tokens(const struct mdl_lower *L)
{
    double bs = (double)L->m->micro_batch * L->frac * (double)L->m->seq;
    return L->st->kind == MDL_STRAT_TESSERACT ? bs / L->d3 : bs;
}

/* A linear of a block mesh, forward or backward; `odd` counts the linears of a layer (3D's
 * axis swap). Tesseract all-reduces each weight gradient block over the depth, overlapped with
 * what follows. Returns the op the next compute op waits for (also left in L->pending). */
static int block_linear(struct mdl_lower *L, const char *name, double K, double N, int odd, int bwd)
{
    double T = block_tokens(L), q = L->d1;
    if (L->st->kind == MDL_STRAT_TP3D) return tp3d_linear(L, name, T, K, N, odd, bwd);
    if (!bwd) return summa_ab(L, name, T, K, N);
    L->pending = summa_bwd_pass(L, name, "dgrad", 'w', K * N / (q * q), T / q, K / q, N / q,
                                LW_AXIS_D1, LW_AXIS_D2);
    int w = summa_bwd_pass(L, name, "wgrad", 'x', T * K / (q * q), K / q, N / q, T / q, LW_AXIS_D2,
                           LW_AXIS_D1);
    if (L->st->kind == MDL_STRAT_TESSERACT) {
        char r[96];
        snprintf(r, sizeof r, "%s_ar_wgrad_depth", name);
        lw_coll_on(L, MDL_OP_ALL_REDUCE, r, K * N / (q * q), w, LW_AXIS_D3, 0);
    }
    L->pending = w;
    return w;
}

static void linear_block(struct mdl_lower *L, const char *name, double K, double N, int odd,
                         int bwd)
{
    block_linear(L, name, K, N, odd, bwd);
}

/* tpsim's layout for the block meshes: the table split by the hidden dim as the layers' input
 * is (q ways) and replicated over the other axes, so the lookup of the rank's tokens is local
 * and the table's gradient is all-reduced over the replicas. */
static void embedding_block(struct mdl_lower *L)
{
    struct mdl_dims D = lw_whole_dims(L);
    double h = D.h, tok = D.tok, q = D.d1;
    if (L->phase == MDL_PHASE_FWD) {
        lw_mem(L, "embedding", 2 * tok * h / q);
        lw_dropout_add(L, "embedding_position_dropout", tok * h / q);
    } else {
        lw_mem(L, "embedding_dropout_bwd", 2 * tok * h / q);
        int x = lw_mem(L, "embedding_wgrad", 3 * tok * h / q);
        double v = (double)L->m->vocab;
        bool cube = L->st->kind == MDL_STRAT_TP3D;
        x = lw_coll_on(L, MDL_OP_ALL_REDUCE, "ar_embedding_wgrad", v * h / q, x, LW_AXIS_D1, 0);
        if (cube)
            lw_coll_on(L, MDL_OP_ALL_REDUCE, "ar_embedding_wgrad2", v * h / q, x, LW_AXIS_D2, 0);
        if (L->st->kind == MDL_STRAT_TESSERACT)
            lw_coll_on(L, MDL_OP_ALL_REDUCE, "ar_embedding_wgrad_depth", v * h / q, x, LW_AXIS_D3,
                       0);
    }
}

/* The logits are one more linear of the mesh, its width the vocabulary. */
static void logits_block(struct mdl_lower *L)
{
    struct mdl_dims D = lw_whole_dims(L);
    double d1 = D.d1, h = D.h, tok = D.tok, v = (double)L->m->vocab;
    int ce_axis = L->st->kind == MDL_STRAT_TP3D ? LW_AXIS_D1 : LW_AXIS_D2;
    if (L->phase == MDL_PHASE_FWD) {
        lw_ln_sharded(L, "final_ln", tok, h / d1, 0);
        block_linear(L, "logits", h, v, 0, 0);
        lw_ce_fwd(L, tok, d1, ce_axis);
    } else {
        lw_ce_bwd(L, tok, d1);
        block_linear(L, "logits", h, v, 0, 1);
        lw_ln_sharded(L, "final_ln_bwd", tok, h / d1, 1);
    }
}

static void mesh_summa2d(const struct mdl_strategy *st, int *d1, int *d2)
{
    *d1 = *d2 = exact_root(st->tp, 2);
}

static void mesh_tesseract(const struct mdl_strategy *st, int *d1, int *d2)
{
    *d1 = *d2 = st->tesseract.depth >= 1 && st->tp % st->tesseract.depth == 0
                    ? exact_root(st->tp / st->tesseract.depth, 2)
                    : 0;
}

static void mesh_tp3d(const struct mdl_strategy *st, int *d1, int *d2)
{
    *d1 = *d2 = exact_root(st->tp, 3);
}

static int depth_tesseract(const struct mdl_strategy *st)
{
    return st->tesseract.depth;
}

static int depth_tp3d(const struct mdl_strategy *st)
{
    int q, q2;
    mesh_tp3d(st, &q, &q2);
    return q;
}

static int check_block(const struct mdl_strategy *st, const struct mdl_model *m, long *deg,
                       struct tps_error *err)
{
    const struct mdl_kind *K = mdl_kind_of(st);
    int q, q2;
    K->mesh(st, &q, &q2);
    const char *k = K->name;
    if (st->kind == MDL_STRAT_TESSERACT && st->tesseract.depth < 1)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "depth", "must be at least 1");
    if (q < 1)
        return tps_error_set(
            err, TPS_EINVAL, NULL, 0, 0, "tp",
            st->kind == MDL_STRAT_SUMMA2D ? "must be a square q x q for kind summa2d, got %ld"
            : st->kind == MDL_STRAT_TP3D  ? "must be a cube q x q x q for kind tp3d, got %ld"
                                          : "must be q x q x depth for kind tesseract, got %ld",
            (long)st->tp);
    if (st->sequence_parallel || st->chunks > 1 || st->oases || st->atp.extra_allgathers) {
        const char *f = st->sequence_parallel ? "sequence_parallel"
                        : st->chunks > 1      ? "chunks"
                        : st->oases           ? "oases"
                                              : "extra_allgathers";
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, f,
                             "does not apply to kind %s (its activations are blocks of the mesh)",
                             k);
    }
    /* the rows (and slices, and 3D's third axis) split the micro-batch: attention needs whole
     * sequences */
    long rows = block_batch_split(st, q);
    if (m->micro_batch % rows)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp",
                             "kind %s splits the micro-batch over %ld GPUs: model.micro_batch "
                             "(%ld) must be a multiple of it",
                             k, rows, m->micro_batch);
    if (m->hidden % q)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp",
                             "the mesh side q = %d must divide model.hidden (%ld)", q, m->hidden);
    *deg = q; /* heads, key/value heads and the MLP are split over q */
    return TPS_OK;
}

static void describe_block(const struct mdl_strategy *st, const char *opts, char *buf, size_t len)
{
    int q, q2;
    mdl_kind_of(st)->mesh(st, &q, &q2);
    if (st->kind == MDL_STRAT_SUMMA2D)
        snprintf(buf, len, "summa2d tp=%d (%dx%d SUMMA)%s", st->tp, q, q, opts);
    else if (st->kind == MDL_STRAT_TESSERACT)
        snprintf(buf, len, "tesseract tp=%d (%dx%d x depth %d)%s", st->tp, q, q,
                 st->tesseract.depth, opts);
    else
        snprintf(buf, len, "tp3d tp=%d (%dx%dx%d cube)%s", st->tp, q, q, q, opts);
}

/* Tesseract's slices each hold all the layer's parameters: a split over q^2 GPUs. */
static double param_shards_tesseract(const struct mdl_strategy *st)
{
    return st->tesseract.depth >= 1 ? (double)st->tp / st->tesseract.depth : (double)st->tp;
}

/* 3D keeps each linear's input and weight as all-gathered for its backward (the backward
 * gathers neither again): the inputs of QKV, projection and FC1 (2sbh each) and of FC2 (2sbf)
 * at 1/q^2 rather than 1/q^3, and the layer's weight matrices at 1/q^2. */
static double extra_activations_tp3d(const struct mdl_strategy *st, const struct mdl_model *m)
{
    int d1, d2;
    mesh_tp3d(st, &d1, &d2);
    if (d1 <= 0) return 0;
    double h = (double)m->hidden, s = (double)m->seq, b = (double)m->micro_batch;
    double f = (double)m->ffn;
    double q2 = (double)d1 * d1, q3 = q2 * d1;
    double qw = mdl_model_qkv_width(m), u = mdl_model_fc1_width(m);
    return 2 * s * b * (3 * h + f) * (1 / q2 - 1 / q3) + 2 * (h * qw + h * h + h * u + f * h) / q2;
}

/* The block meshes over the group's d GPUs (the planner keeps those where d is a square or a
 * cube): SUMMA and 3D one each (candidates_whole); tesseract at every depth from 2 that divides d
 * (depth 1 is SUMMA). */
static int candidates_whole(enum mdl_strategy_kind self, const struct mdl_strategy *base, bool sp,
                            mdl_strategy_add add, void *ctx)
{
    (void)sp;
    struct mdl_strategy st = mdl_strategy_candidate(base, self);
    return base->tp > 1 ? add(ctx, &st) : 0;
}

static int candidates_tesseract(enum mdl_strategy_kind self, const struct mdl_strategy *base,
                                bool sp, mdl_strategy_add add, void *ctx)
{
    (void)sp;
    int d = base->tp, rc = 0;
    for (int depth = 2; !rc && depth <= d; depth++) {
        struct mdl_strategy st = mdl_strategy_candidate(base, self);
        st.tesseract.depth = depth;
        if (d % depth == 0) rc = add(ctx, &st);
    }
    return rc;
}

#define BLOCK_KIND                                                                                 \
    .sharded = true, .axis_streams = true, .batch_split = block_batch_split, .check = check_block, \
    .describe = describe_block, .attn_fwd = lw_sharded_attn_fwd, .mlp_fwd = lw_sharded_mlp_fwd,    \
    .mlp_bwd = lw_sharded_mlp_bwd, .attn_bwd = lw_sharded_attn_bwd, .embedding = embedding_block,  \
    .logits = logits_block, .linear = linear_block

const struct mdl_kind mdl_kind_summa2d = {
    BLOCK_KIND,
    .name = "summa2d",
    .candidates = candidates_whole,
    .norm_axis = LW_AXIS_D2,
    .mesh = mesh_summa2d,
};

const struct mdl_kind mdl_kind_tesseract = {
    BLOCK_KIND,
    .name = "tesseract",
    .candidates = candidates_tesseract,
    .keys = keys_tesseract,
    .read = read_tesseract,
    .norm_axis = LW_AXIS_D2,
    .mesh = mesh_tesseract,
    .depth = depth_tesseract,
    .param_shards = param_shards_tesseract,
};

const struct mdl_kind mdl_kind_tp3d = {
    BLOCK_KIND,
    .name = "tp3d",
    .candidates = candidates_whole,
    .norm_axis = LW_AXIS_D3,
    .mesh = mesh_tp3d,
    .depth = depth_tp3d,
    .extra_activations = extra_activations_tp3d,
};
