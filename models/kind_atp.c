/* kind_atp.c - ATP's 2D tensor parallelism (kind 2d): the tp GPUs as a d1 x d2 mesh laid
 * row-first (device = i*d2 + j) or column-first (device = j*d1 + i), heads and the MLP split over
 * d1, the hidden dim over d2, with ATP's optional all-gathers over d2 around the norms and the
 * attention. Its layer is Megatron's on the mesh (kind_megatron.c). Formulas: strategies.md
 * section 2.
 */
#include <stdio.h>

#include "kind.h"

static void mesh_2d(const struct mdl_strategy *st, int *d1, int *d2)
{
    *d1 = st->d1;
    *d2 = st->d2;
}

static int check_2d(const struct mdl_strategy *st, const struct mdl_model *m, long *deg,
                    struct tps_error *err)
{
    long d = st->tp, d1 = st->d1, d2 = st->d2;
    if (d1 < 1 || d2 < 1 || d1 * d2 != d)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "mesh",
                             "the mesh d1 x d2 must multiply to tp (%ld), got %ld x %ld", d, d1,
                             d2);
    if (m->heads % d1)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "mesh",
                             "d1 must divide model.heads (%ld), got %ld", m->heads, d1);
    if (m->hidden % d2 || m->hidden % d1)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "mesh",
                             "d1 and d2 must divide model.hidden (%ld), got %ld x %ld", m->hidden,
                             d1, d2);
    if (m->ffn % d1)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "mesh",
                             "d1 must divide model.ffn (%ld), got %ld", m->ffn, d1);
    if (st->sequence_parallel && d2 > 1)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "sequence_parallel",
                             "sequence parallelism is defined for 1D (mesh d x 1) only");
    *deg = d1;
    return TPS_OK;
}

static void describe_2d(const struct mdl_strategy *st, const char *opts, char *buf, size_t len)
{
    snprintf(buf, len, "2d tp=%d mesh %dx%d %s%s%s", st->tp, st->d1, st->d2,
             st->placement == MDL_COLUMN_FIRST ? "column-first" : "row-first",
             st->extra_allgathers ? " +extra all-gathers" : "", opts);
}

const struct mdl_kind mdl_kind_2d = {
    .name = "2d",
    .mesh = mesh_2d,
    .check = check_2d,
    .describe = describe_2d,
    .attn_fwd = lw_mesh_attn_fwd,
    .mlp_fwd = lw_mesh_mlp_fwd,
    .mlp_bwd = lw_mesh_mlp_bwd,
    .attn_bwd = lw_mesh_attn_bwd,
    .embedding = lw_mesh_embedding,
    .logits = lw_mesh_logits,
};
