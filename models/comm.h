/* comm.h - a job's communicators: asked for by the mesh dimensions they span, made once per
 * distinct group by a registry, each on its stream.
 *
 * A communicator spec says which GPUs talk, in terms of the mesh (models/mesh.h): the group
 * spanning a set of dimensions through a rank ({dp}, {tp, pp}, every dimension), a pair of a rank
 * and its neighbour along one dimension (the next pipeline stage, in either direction), or the
 * two ends of one dimension (the first and the last stage); and which dimension its collectives
 * serve (program.h's op dim) and on which stream they run. A lowering names a communicator in its
 * ops by a marker, a negative group number the registry hands out (or, for a kind's own sub-axes,
 * strategy.h's MDL_GROUP_* markers, whose groups the kind's code sets rank by rank). Once the
 * mesh is known, mdl_comms_make creates each spec's groups on the program, one per distinct
 * member set (nothing for a group of one GPU), and mdl_comms_group tells each rank's group for a
 * marker. No stream or marker is fixed here: the lowering's table of specs says them.
 */
#ifndef MDL_COMM_H
#define MDL_COMM_H

#include <stdbool.h>
#include <stdint.h>

#include "models/mesh.h"
#include "models/program.h"

enum mdl_comm_shape {
    MDL_COMM_SPAN,  /* the group spanning the dimensions `dims` through the rank */
    MDL_COMM_PAIR,  /* along `dims` (one dimension): the rank `from` steps away, then the one `to`
                       steps away (one of them 0: the rank itself), wrapping round when `wrap` */
    MDL_COMM_ENDS,  /* along `dims` (one dimension): its first and last rank, which alone have it */
    MDL_COMM_GIVEN, /* groups the lowering sets rank by rank (mdl_comms_set): a kind's sub-axes */
};

struct mdl_comm_spec {
    const char *name; /* for people: "dp", "pp send fwd", ... */
    enum mdl_comm_shape shape;
    unsigned dims;   /* MDL_DIM_BIT mask (a SPAN of none makes no group) */
    int8_t from, to; /* MDL_COMM_PAIR */
    bool wrap;       /* MDL_COMM_PAIR */
    bool own;        /* a communicator of its own: a new group even where one with the same
                        members exists (SPAN; PAIR and ENDS groups always are) */
    int share;       /* PAIR: specs of the same nonzero share use one group per ordered pair
                        (the sender's "to next" is the receiver's "from previous"); each
                        direction of a neighbour pair is a family of its own */
    uint8_t stream;  /* of its ops */
    uint8_t dim;     /* op dim of its collectives (program.h) */
};

/* Specs per registry; markers run from -2 down to -(MDL_COMMS_MAX + 1). */
#define MDL_COMMS_MAX 32

struct mdl_comms {
    int n;
    struct mdl_comm_spec spec[MDL_COMMS_MAX];
    int8_t index[MDL_COMMS_MAX + 2]; /* [-marker]: the spec, -1 none */
    int nranks;                      /* after mdl_comms_alloc */
    int *group[MDL_COMMS_MAX];       /* owned, per rank: the group it uses, -1 none */
};

void mdl_comms_init(struct mdl_comms *c);
void mdl_comms_release(struct mdl_comms *c);
/* Adds a spec; marker 0 takes the next free marker, else that one (a kind's MDL_GROUP_*).
 * Returns the marker, or 0 when the table is full or the marker taken. */
int mdl_comms_add(struct mdl_comms *c, const struct mdl_comm_spec *s, int marker);
/* The spec a marker names, or NULL when g is no marker of the registry (a real group). */
const struct mdl_comm_spec *mdl_comms_spec(const struct mdl_comms *c, int g);
/* Sizes the per-rank tables for nranks ranks (every group -1); 0 or -1 when out of memory. */
int mdl_comms_alloc(struct mdl_comms *c, int nranks);
/* Gives rank r group g (-1: none, as on a mesh axis of size 1) for a MDL_COMM_GIVEN marker. */
void mdl_comms_set(struct mdl_comms *c, int marker, int r, int g);
/* Makes the groups of every spec but the given ones on p for the ranks of mesh m (after
 * mdl_comms_alloc with m's GPUs), in the order of the specs. 0, or -1 when out of memory. */
int mdl_comms_make(struct mdl_comms *c, struct mdl_program *p, const struct mdl_mesh *m);
/* The spec index marker g names, or -1 when g is no marker of the registry (a real group). */
static inline int mdl_comms_index(const struct mdl_comms *c, int g)
{
    return g <= -2 && g >= -(MDL_COMMS_MAX + 1) ? c->index[-g] : -1;
}
/* The group rank r uses for g: its group for a marker, g itself for a real group. */
static inline int mdl_comms_group(const struct mdl_comms *c, int r, int g)
{
    int i = mdl_comms_index(c, g);
    return i >= 0 ? c->group[i][r] : g;
}
/* Whether marker g names a spanning communicator whose span includes dimension d. */
bool mdl_comms_spans(const struct mdl_comms *c, int g, enum mdl_dim d);

#endif
