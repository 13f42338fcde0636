/* mesh.h - a job's GPUs as a mesh of named parallel dimensions, and ranks to coordinates.
 *
 * Every GPU has a coordinate on each dimension: tensor (tp), context (cp), expert (ep),
 * data (dp) and pipeline (pp) parallelism, of size 1 where the job does not use one. The global
 * rank lays the dimensions in a configurable order, fastest first (Megatron-LM's RankGenerator:
 * "tp-cp-ep-dp-pp" by default): rank = c[o0] + s[o0] * (c[o1] + s[o1] * (...)). A group is asked
 * for by the dimensions it spans: the TP group of a rank spans {tp}, its gradients' group
 * {dp, cp}, and so on; its members come in the order of their coordinates, the fastest
 * spanned dimension first. Plain arithmetic, no allocation.
 */
#ifndef MDL_MESH_H
#define MDL_MESH_H

#include <stdint.h>

enum mdl_dim { MDL_DIM_TP, MDL_DIM_CP, MDL_DIM_EP, MDL_DIM_DP, MDL_DIM_PP, MDL_NDIMS };
extern const char *const mdl_dim_names[]; /* "tp", "cp", "ep", "dp", "pp", NULL */
/* For people: each dimension's label in tables ("TP", "CP", ...) and what its communication is
 * ("tensor-parallel collectives", ...). */
extern const char *const mdl_dim_labels[];
extern const char *const mdl_dim_titles[];
#define MDL_DIM_BIT(d) (1u << (d))

struct mdl_mesh {
    int size[MDL_NDIMS];     /* GPUs along each dimension, 1 when unused */
    int8_t order[MDL_NDIMS]; /* the dimensions, fastest first */
    int stride[MDL_NDIMS];   /* rank step of one along each dimension */
};

/* A mesh of the given sizes laid in `order` (fastest first; NULL: Megatron-LM's tp-cp-ep-dp-pp).
 * Returns 0, or -1 when the order is not a permutation of the dimensions. */
int mdl_mesh_init(struct mdl_mesh *m, const int size[MDL_NDIMS], const int8_t *order);
/* Parses "tp-dp-pp"-like text into a full order: the dimensions it names, fastest first, then
 * those it leaves out in Megatron-LM's order. 0, or -1 on an unknown or repeated name. */
int mdl_mesh_parse_order(const char *text, int8_t order[MDL_NDIMS]);
/* The order as text, every dimension named ("tp-cp-ep-dp-pp"); buf of at least 16 bytes. */
void mdl_mesh_order_text(const int8_t order[MDL_NDIMS], char *buf);
/* GPUs of the mesh: the product of the sizes. */
long mdl_mesh_gpus(const struct mdl_mesh *m);
/* The global rank of a coordinate (coord[d] on dimension d), and back. */
int mdl_mesh_rank(const struct mdl_mesh *m, const int coord[MDL_NDIMS]);
void mdl_mesh_coords(const struct mdl_mesh *m, int rank, int coord[MDL_NDIMS]);
/* The group spanning the dimensions of mask `span` (MDL_DIM_BIT) through `rank`: its members in
 * ranks[] (the product of the spanned sizes of them), member i at the mixed-radix index i of the
 * spanned coordinates, fastest spanned dimension first in the mesh's order. Returns the count;
 * *me receives rank's index among them when not NULL. */
int mdl_mesh_group(const struct mdl_mesh *m, int rank, unsigned span, int *ranks, int *me);

#endif
