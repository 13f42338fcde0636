/* kind_atp.c - ATP's 2D tensor parallelism (kind 2d): the tp GPUs as a d1 x d2 mesh laid
 * row-first (device = i*d2 + j) or column-first (device = j*d1 + i), heads and the MLP split over
 * d1, the hidden dim over d2, with ATP's optional all-gathers over d2 around the norms and the
 * attention. Its layer is Megatron's on the mesh (kind_megatron.c). Formulas: strategies.md
 * section 2.
 */
#include <stdio.h>
#include <string.h>

#include "common/ydoc.h"
#include "kind.h"

static const char *const keys_2d[] = {"mesh", "placement", "extra_allgathers", NULL};

/* mesh: [d1, d2] (the TP degree is their product), placement: row-first or column-first. */
static int read_2d(const struct tps_ydoc *d, int id, struct mdl_strategy *st, int *tp_node,
                   struct tps_error *err)
{
    int mid = tps_ydoc_get(d, id, "mesh"), v, rc;
    long dims[2];
    if (!mid) return tps_ydoc_fail(d, id, "strategy.mesh", err, "missing: give [d1, d2]");
    if (!tps_ydoc_is_seq(d, mid) || tps_ydoc_len(d, mid) != 2)
        return tps_ydoc_fail(d, mid, "strategy.mesh", err, "expected [d1, d2]");
    for (int i = 0; i < 2; i++)
        if ((rc = tps_ydoc_count(d, tps_ydoc_seq_at(d, mid, i), "strategy.mesh", &dims[i], err)))
            return rc;
    if (dims[0] > MDL_MAX_TP || dims[1] > MDL_MAX_TP)
        return tps_ydoc_fail(d, mid, "strategy.mesh", err, "too large");
    st->atp.d1 = (int)dims[0];
    st->atp.d2 = (int)dims[1];
    st->atp.placement = MDL_ROW_FIRST;
    if ((v = tps_ydoc_get(d, id, "placement"))) {
        const char *pl;
        if ((rc = tps_ydoc_str(d, v, "strategy.placement", &pl, err))) return rc;
        if (!strcmp(pl, "column-first"))
            st->atp.placement = MDL_COLUMN_FIRST;
        else if (strcmp(pl, "row-first"))
            return tps_ydoc_fail(d, v, "strategy.placement", err,
                                 "expected row-first or column-first, got '%s'", pl);
    }
    st->tp = st->atp.d1 * st->atp.d2;
    *tp_node = mid;
    return TPS_OK;
}

static void mesh_2d(const struct mdl_strategy *st, int *d1, int *d2)
{
    *d1 = st->atp.d1;
    *d2 = st->atp.d2;
}

static int check_2d(const struct mdl_strategy *st, const struct mdl_model *m, long *deg,
                    struct tps_error *err)
{
    long d = st->tp, d1 = st->atp.d1, d2 = st->atp.d2;
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
    snprintf(buf, len, "2d tp=%d mesh %dx%d %s%s%s", st->tp, st->atp.d1, st->atp.d2,
             st->atp.placement == MDL_COLUMN_FIRST ? "column-first" : "row-first",
             st->atp.extra_allgathers ? " +extra all-gathers" : "", opts);
}

/* Every d1 x d2 mesh of the group's d GPUs with d2 > 1 (d1 from d - 1 down), both placements
 * where both axes are longer than 1, with ATP's chunks and Oases' schedule. */
static int candidates_2d(enum mdl_strategy_kind self, const struct mdl_strategy *base, bool sp,
                         mdl_strategy_add add, void *ctx)
{
    (void)sp; /* sequence parallelism is 1D's only */
    int d = base->tp, rc = 0;
    for (int d1 = d - 1; !rc && d1 >= 1; d1--) {
        if (d % d1) continue;
        for (int pl = 0; !rc && pl < (d1 > 1 ? 2 : 1); pl++)
            for (int c = 0; !rc && c < LW_PLAN_NCHUNKS; c++)
                for (int oa = 0; !rc && oa < 2; oa++) {
                    struct mdl_strategy st = mdl_strategy_candidate(base, self);
                    st.atp.d1 = d1;
                    st.atp.d2 = d / d1;
                    st.atp.placement = (enum mdl_placement)pl;
                    st.chunks = lw_plan_chunks[c];
                    st.oases = oa;
                    st.atp.extra_allgathers = base->atp.extra_allgathers;
                    rc = add(ctx, &st);
                }
    }
    return rc;
}

const struct mdl_kind mdl_kind_2d = {
    .name = "2d",
    .candidates = candidates_2d,
    .keys = keys_2d,
    .read = read_2d,
    .mesh = mesh_2d,
    .check = check_2d,
    .describe = describe_2d,
    .context = true,
    LW_MESH_BODIES,
};
