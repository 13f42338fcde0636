/* kind_primepar.c - PrimePar's spatial-temporal tensor parallelism (kind primepar,
 * strategies.md section 4): every activation sharded on the hidden dim over a ring of d GPUs,
 * each linear run as d partial GEMMs over d time steps while blocks shift round the ring (the
 * layer around the linears is sharded.c's). A ring smaller than tp is PrimePar's mixed
 * partition: tp/ring rings side by side on their shares of the micro-batch, their weight
 * gradients all-reduced across the rings (the third axis).
 */
#include <stdio.h>

#include "kind.h"

/* One ring shift of `elems` elements round PrimePar's ring (lw_shift). */
static int shift(struct mdl_lower *L, const char *name, double elems, int after)
{
    return lw_shift(L, name, elems * mdl_dtype_bytes(L->m->dtype), MDL_GROUP_SHIFT_TO,
                    MDL_GROUP_SHIFT_FROM, MDL_STREAM_SHIFT_SEND, MDL_STREAM_SHIFT_RECV,
                    MDL_OP_DIM(MDL_DIM_TP), after, -1);
}

/* d partial GEMMs named gname, batch 1 x (m x n) @ (n x k) each, while the blocks of `elems`
 * elements they read rotate round the ring: block t + 1 is shifted in (d - 1 shifts, the first
 * once op `have` has completed) while the GEMM of block t runs, and each GEMM waits for its
 * block. Returns the last GEMM. */
static int rotate(struct mdl_lower *L, const char *gname, int have, double elems, double m,
                  double n, double k)
{
    int d = (int)L->d1, g = -1;
    char sname[96];
    snprintf(sname, sizeof sname, "%s_shift", gname);
    for (int t = 0; t < d && !L->oom; t++) {
        int next = t + 1 < d ? shift(L, sname, elems, have) : -1;
        if (t > 0) L->pending = have;
        g = lw_gemm(L, MDL_OP_GEMM, gname, 1, m, n, k);
        have = next;
    }
    return g;
}

/* Forward of a linear (tokens x k) @ (k x n_local) whose input is sharded on k: d partial GEMMs
 * (tokens x k/d) @ (k/d x n_local) accumulated in place in the rank's output block, while the
 * input's blocks (tokens x k/d) rotate round the ring. Returns the last GEMM. */
static int st_forward(struct mdl_lower *L, const char *gname, double tokens, double n_local,
                      double k)
{
    double d = L->d1;
    return rotate(L, gname, L->last_comp, tokens * k / d, tokens, n_local, k / d);
}

/* Backward of that linear. The input gradient (tokens x n_local) @ (n_local x k), sharded on k:
 * the rank computes its partial sums of each block in turn; a block's running sum travels round
 * the ring, gaining each rank's partial on the way (an add once it has arrived), and is complete
 * at its owner after d - 1 shifts, so every shift is in flight during the next partial GEMM.
 * Then the weight gradient (k x tokens) @ (tokens x n_local) as the forward: the input's blocks
 * rotate again (nothing replicated was kept) and each partial GEMM writes one block. */
static void st_backward(struct mdl_lower *L, const char *name, double tokens, double n_local,
                        double k)
{
    int d = (int)L->d1, x = -1, recv = -1, first = -1;
    double block = tokens * k / d;
    char dg[64], wg[64], add[80], sname[80];
    snprintf(dg, sizeof dg, "%s_dgrad", name);
    snprintf(wg, sizeof wg, "%s_wgrad", name);
    snprintf(add, sizeof add, "%s_add", dg);
    snprintf(sname, sizeof sname, "%s_shift", dg);
    for (int t = 0; t < d && !L->oom; t++) {
        x = lw_gemm(L, MDL_OP_GEMM, dg, 1, tokens, k / d, n_local);
        if (t == 0) first = x;
        if (t > 0) {
            L->pending = recv;
            x = lw_mem(L, add, 3 * block);
        }
        if (t + 1 < d) recv = shift(L, sname, block, x);
    }
    rotate(L, wg, first, block, k / d, n_local, tokens);
}

static void linear_pp(struct mdl_lower *L, const char *name, double K, double N, int odd, int bwd)
{
    (void)odd;
    double bs = (double)L->m->micro_batch * L->frac / L->rep * (double)L->m->seq;
    if (bwd)
        st_backward(L, name, bs, N / L->d1, K);
    else
        st_forward(L, name, bs, N / L->d1, K);
}

/* The rings side by side: each sublayer's gradients all-reduced across the rings. */
static void wgrad_pp(struct mdl_lower *L, int mlp)
{
    if (L->d3 > 1 && !L->no_comm)
        lw_wgrad_replicas(L, mlp, L->d1, LW_AXIS_D3, MDL_STREAM_COMM3,
                          mlp ? "ar_mlp_wgrad_rings" : "ar_attn_wgrad_rings");
}

/* The logits are a spatial-temporal linear too, vocabulary-parallel out. */
static void logits_pp(struct mdl_lower *L)
{
    struct mdl_dims D = lw_whole_dims(L);
    double d1 = D.d1, h = D.h, bs = D.bs, v = (double)L->m->vocab;
    if (L->phase == MDL_PHASE_FWD) {
        lw_ln_sharded(L, "final_ln", bs, h / d1, 0);
        st_forward(L, "logits", bs, v / d1, h);
        lw_ce_fwd(L, bs, d1, LW_AXIS_D1);
    } else {
        lw_ce_bwd(L, bs, d1);
        st_backward(L, "logits", bs, v / d1, h);
        lw_ln_sharded(L, "final_ln_bwd", bs, h / d1, 1);
    }
}

static void mesh_pp(const struct mdl_strategy *st, int *d1, int *d2)
{
    *d1 = st->primepar.ring > 0 ? st->primepar.ring : st->tp;
    *d2 = 1;
}

static int depth_pp(const struct mdl_strategy *st)
{
    int d1, d2;
    mesh_pp(st, &d1, &d2);
    return d1 > 0 && st->tp % d1 == 0 ? st->tp / d1 : 1;
}

static int check_pp(const struct mdl_strategy *st, const struct mdl_model *m, long *deg,
                    struct tps_error *err)
{
    long d = st->tp;
    if (st->primepar.ring) {
        if (st->primepar.ring < 1 || d % st->primepar.ring)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "ring",
                                 "must divide tp (%ld), got %d", d, st->primepar.ring);
        if (m->micro_batch % (d / st->primepar.ring))
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "ring",
                                 "%ld rings split the micro-batch: model.micro_batch (%ld) must be "
                                 "a multiple of %ld",
                                 d / st->primepar.ring, m->micro_batch, d / st->primepar.ring);
        d = st->primepar.ring; /* heads, key/value heads and widths are split over the ring */
    }
    if (st->sequence_parallel)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "sequence_parallel",
                             "applies to kind 1d only (primepar shards every activation)");
    if (st->chunks > 1 || st->oases)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, st->oases ? "oases" : "chunks",
                             "applies to kinds 1d and 2d only (primepar overlaps each "
                             "linear's shifts itself)");
    *deg = d;
    return TPS_OK;
}

static void describe_pp(const struct mdl_strategy *st, const char *opts, char *buf, size_t len)
{
    int rings = depth_pp(st);
    if (rings > 1)
        snprintf(buf, len, "primepar tp=%d (%d rings of %d, spatial-temporal)%s", st->tp, rings,
                 st->tp / rings, opts);
    else
        snprintf(buf, len, "primepar tp=%d (spatial-temporal ring)%s", st->tp, opts);
}

/* Each ring holds all the layer's parameters. */
static double param_shards_pp(const struct mdl_strategy *st)
{
    return (double)st->tp / depth_pp(st);
}

static int job_check_pp(const struct mdl_strategy *st, struct tps_error *err)
{
    if (depth_pp(st) > 1)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "ring",
                             "PrimePar's rings side by side apply to a TP group alone, not yet "
                             "to a whole job (pp, dp, pipeline or training)");
    return TPS_OK;
}

/* The ring over the group's d GPUs, and the mixed partitions: rings of every size from 2 that
 * divides d, side by side on shares of the micro-batch. */
static int candidates_pp(enum mdl_strategy_kind self, const struct mdl_strategy *base, bool sp,
                         mdl_strategy_add add, void *ctx)
{
    (void)sp;
    int d = base->tp, rc = 0;
    for (int ring = d; !rc && ring >= 2; ring--) {
        struct mdl_strategy st = mdl_strategy_candidate(base, self);
        st.primepar.ring = ring == d ? 0 : ring;
        if (d % ring == 0) rc = add(ctx, &st);
    }
    return rc;
}

const struct mdl_kind mdl_kind_primepar = {
    .name = "primepar",
    .candidates = candidates_pp,
    .sharded = true,
    .ring = true,
    .depth_replicas = true,
    .norm_axis = LW_AXIS_D1,
    .mesh = mesh_pp,
    .depth = depth_pp,
    .check = check_pp,
    .describe = describe_pp,
    .param_shards = param_shards_pp,
    .job_check = job_check_pp,
    .attn_fwd = lw_sharded_attn_fwd,
    .mlp_fwd = lw_sharded_mlp_fwd,
    .mlp_bwd = lw_sharded_mlp_bwd,
    .attn_bwd = lw_sharded_attn_bwd,
    .embedding = lw_mesh_embedding,
    .logits = logits_pp,
    .linear = linear_pp,
    .wgrad = wgrad_pp,
};
