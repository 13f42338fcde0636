/* sharded.c - the layer of the kinds that shard every activation over the group (PrimePar's
 * ring, Colossal-AI's block meshes): norms, dropout and residual adds on the rank's shard, the
 * attention core on its heads, and the four linears as the kind runs them (kind->linear). A rank
 * normalises and adds all its tokens (PrimePar: the micro-batch's on its 1/d of the hidden dim;
 * the block meshes: its rows' tokens on 1/q).
 */
#include <stdio.h>

#include "kind.h"

/* Layer norm over a hidden dim sharded over the kind's norm axis (PrimePar's ring, a block
 * mesh's row, 3D's third axis): the per-token partial sums of the shard
 * (x and x^2; backward dy and dy*x), their all-reduce (two fp32 per token), then the
 * normalisation of the shard (backward: dx, and in eager mode the weight and bias gradients). */
int lw_ln_sharded(struct mdl_lower *L, const char *name, double tokens, double h_local, int bwd)
{
    char nm[64];
    double f32 = 4.0 / mdl_dtype_bytes(L->m->dtype);
    snprintf(nm, sizeof nm, "%s_stats", name);
    int x = lw_mem_k(L, MDL_MEM_NORM, nm, (bwd ? 2 : 1) * tokens * h_local);
    snprintf(nm, sizeof nm, "ar_%s_stats", name);
    lw_coll(L, MDL_OP_ALL_REDUCE, nm, 2 * f32 * tokens, x, L->kind->norm_axis);
    x = lw_mem_k(L, MDL_MEM_NORM, name, (bwd ? 3 : 2) * tokens * h_local);
    if (bwd && L->fw->kernels == MDL_KERNELS_EAGER) {
        snprintf(nm, sizeof nm, "%s_wgrad", name);
        x = lw_mem_k(L, MDL_MEM_NORM, nm, 2 * tokens * h_local);
    }
    return x;
}

void lw_sharded_attn_fwd(struct mdl_lower *L)
{
    struct mdl_dims D = lw_dims(L);
    double d = D.d1, h = D.h, tok = D.bs;
    lw_ln_sharded(L, "ln1", tok, h / d, 0);
    L->kind->linear(L, "qkv", h, D.q, 0, 0);
    lw_attn_core_fwd(L, &D);
    lw_eager_mem(L, "attn_out_copy", 2 * tok * h / d);
    L->kind->linear(L, "proj", h, h, 1, 0);
    lw_dropout_add(L, "dropout_add", tok * h / d);
}

void lw_sharded_mlp_fwd(struct mdl_lower *L)
{
    struct mdl_dims D = lw_dims(L);
    double d = D.d1, h = D.h, tok = D.bs;
    lw_ln_sharded(L, "ln2", tok, h / d, 0);
    L->kind->linear(L, "fc1", h, D.u, 0, 0);
    lw_mlp_act(L, &D, 0);
    L->kind->linear(L, "fc2", D.f, h, 1, 0);
    lw_dropout_add(L, "dropout_add2", tok * h / d);
}

void lw_sharded_mlp_bwd(struct mdl_lower *L)
{
    struct mdl_dims D = lw_dims(L);
    double d = D.d1, h = D.h, tok = D.bs;
    lw_mem(L, "dropout_add2_bwd", 2 * tok * h / d);
    L->kind->linear(L, "fc2", D.f, h, 1, 1);
    lw_mlp_act(L, &D, 1);
    L->kind->linear(L, "fc1", h, D.u, 0, 1);
    lw_ln_sharded(L, "ln2_bwd", tok, h / d, 1);
    if (L->kind->wgrad) L->kind->wgrad(L, 1);
}

void lw_sharded_attn_bwd(struct mdl_lower *L)
{
    struct mdl_dims D = lw_dims(L);
    double d = D.d1, h = D.h, tok = D.bs;
    if (L->st->selective && !L->st->recompute && L->fw->attention != MDL_ATTENTION_FLASH)
        lw_attn_core_recompute(L);
    lw_mem(L, "dropout_add_bwd", 2 * tok * h / d);
    lw_eager_mem(L, "residual_add_bwd", 3 * tok * h / d);
    L->kind->linear(L, "proj", h, h, 1, 1);
    lw_attn_core_bwd(L, &D);
    lw_eager_mem(L, "qkv_grad_cat", 2 * tok * D.q / d);
    L->kind->linear(L, "qkv", h, D.q, 0, 1);
    lw_ln_sharded(L, "ln1_bwd", tok, h / d, 1);
    lw_eager_mem(L, "residual_add1_bwd", 3 * tok * h / d);
    if (L->kind->wgrad) L->kind->wgrad(L, 0);
}
