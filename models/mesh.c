/* mesh.c - ranks and coordinates of a mesh of named parallel dimensions (see mesh.h). */
#include "mesh.h"

#include <stddef.h>
#include <string.h>

const char *const mdl_dim_names[] = {"tp", "cp", "ep", "dp", "pp", NULL};
const char *const mdl_dim_labels[] = {"TP", "CP", "EP", "DP", "PP", NULL};
const char *const mdl_dim_titles[] = {"tensor-parallel collectives",
                                      "context-parallel exchanges",
                                      "expert-parallel dispatch and combine",
                                      "data-parallel gradients and parameters",
                                      "stage neighbours and the tied embedding",
                                      NULL};

static const int8_t megatron_order[MDL_NDIMS] = {MDL_DIM_TP, MDL_DIM_CP, MDL_DIM_EP, MDL_DIM_DP,
                                                 MDL_DIM_PP};

int mdl_mesh_init(struct mdl_mesh *m, const int size[MDL_NDIMS], const int8_t *order)
{
    if (!order) order = megatron_order;
    unsigned seen = 0;
    for (int k = 0; k < MDL_NDIMS; k++) {
        if (order[k] < 0 || order[k] >= MDL_NDIMS || seen & MDL_DIM_BIT(order[k])) return -1;
        seen |= MDL_DIM_BIT(order[k]);
    }
    int stride = 1;
    for (int k = 0; k < MDL_NDIMS; k++) {
        int d = order[k];
        m->order[k] = (int8_t)d;
        m->size[d] = size[d] > 0 ? size[d] : 1;
        m->stride[d] = stride;
        stride *= m->size[d];
    }
    return 0;
}

int mdl_mesh_parse_order(const char *text, int8_t order[MDL_NDIMS])
{
    unsigned seen = 0;
    int n = 0;
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "-");
        int d = 0;
        while (mdl_dim_names[d] &&
               (strlen(mdl_dim_names[d]) != len || strncmp(p, mdl_dim_names[d], len)))
            d++;
        if (!mdl_dim_names[d] || seen & MDL_DIM_BIT(d)) return -1;
        seen |= MDL_DIM_BIT(d);
        order[n++] = (int8_t)d;
        p += len;
        if (*p == '-' && !*++p) return -1; /* a trailing dash */
    }
    if (!n) return -1;
    for (int k = 0; k < MDL_NDIMS; k++)
        if (!(seen & MDL_DIM_BIT(megatron_order[k]))) order[n++] = megatron_order[k];
    return 0;
}

void mdl_mesh_order_text(const int8_t order[MDL_NDIMS], char *buf)
{
    buf[0] = 0;
    for (int k = 0; k < MDL_NDIMS; k++) {
        if (k) strcat(buf, "-");
        strcat(buf, mdl_dim_names[order[k]]);
    }
}

long mdl_mesh_gpus(const struct mdl_mesh *m)
{
    long n = 1;
    for (int d = 0; d < MDL_NDIMS; d++)
        n *= m->size[d];
    return n;
}

int mdl_mesh_rank(const struct mdl_mesh *m, const int coord[MDL_NDIMS])
{
    int rank = 0;
    for (int d = 0; d < MDL_NDIMS; d++)
        rank += coord[d] * m->stride[d];
    return rank;
}

void mdl_mesh_coords(const struct mdl_mesh *m, int rank, int coord[MDL_NDIMS])
{
    for (int d = 0; d < MDL_NDIMS; d++)
        coord[d] = rank / m->stride[d] % m->size[d];
}

int mdl_mesh_group(const struct mdl_mesh *m, int rank, unsigned span, int *ranks, int *me)
{
    int c[MDL_NDIMS], dims[MDL_NDIMS], nd = 0, n = 1;
    mdl_mesh_coords(m, rank, c);
    for (int k = 0; k < MDL_NDIMS; k++)
        if (span & MDL_DIM_BIT(m->order[k])) {
            dims[nd++] = m->order[k];
            n *= m->size[m->order[k]];
        }
    int base = rank, at = 0, step = 1;
    for (int k = 0; k < nd; k++) {
        base -= c[dims[k]] * m->stride[dims[k]];
        at += c[dims[k]] * step;
        step *= m->size[dims[k]];
    }
    for (int i = 0; i < n; i++) {
        int r = base, x = i;
        for (int k = 0; k < nd; k++) {
            r += x % m->size[dims[k]] * m->stride[dims[k]];
            x /= m->size[dims[k]];
        }
        ranks[i] = r;
    }
    if (me) *me = at;
    return n;
}
