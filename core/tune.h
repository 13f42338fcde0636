/* tune.h - how each collective of a program runs on a platform: the tuner.
 *
 * For a group of GPUs the planner measures the routes each algorithm would use (latency, and
 * bandwidth once the algorithm's own concurrent transfers share the links) and, like NCCL's
 * tuner, picks the algorithm and protocol with the smallest closed-form time
 * (models/collective.h) unless the platform or scenario forces them. It also lists the GPU
 * pairs that exchange messages, which is all the platform XML needs. No SimGrid here.
 * Units: bytes, seconds, bytes/s.
 */
#ifndef CORE_TUNE_H
#define CORE_TUNE_H

#include "common/error.h"
#include "models/collective.h"
#include "models/program.h"
#include "platforms/topo.h"

/* Machine layout of a group for the algorithms across machines: ring channels (any layout
 * whose machines hold 2 or more members each), NCCL's tree, NVLS-tree, CollNet and the
 * hierarchical ones (regular layouts: `local` members in every machine). */
struct tune_hier {
    int local, nodes; /* members per machine (0 when machines hold different counts) and
                       * machines; both 0 on one machine, or when irregular without channels */
    int *node_of;     /* owned, per member: machine order (0..nodes-1) */
    int *local_of;    /* owned, per member: index among its machine's members */
    int *first;       /* owned, [node]: position of the machine's first member in machine
                       * order ([nodes]: n); node * local when regular */
    int *member;      /* owned, [first[node] + l]: member index */
    int channels;     /* rings a ring collective across the machines runs at once (NCCL's
                       * channels): one per NIC of a machine, at most the fewest members of a
                       * machine, the platform's nccl.channels and TUNE_MAX_CHANNELS; 1 inside
                       * one machine or with one NIC */
    int machines;     /* distinct machines of the group's members (1 on a user XML) */
};
#define TUNE_MAX_CHANNELS MDL_MAX_CHANNELS
int tune_hier_layout(const struct plat_topo *t, const struct mdl_group *g, struct tune_hier *h);
/* Member at position p (0..n-1) of ring channel j (h->channels >= 2): machine after machine,
 * the members of a machine holding m of them from its (j * (m / channels))-th on, so that
 * channel j enters every machine at that member and leaves the one before from the member before
 * it: with one NIC per m / channels members, every NIC carries one channel each way. Machines
 * may hold different counts (12 GPUs as 8 + 4). */
int tune_channel_member(const struct tune_hier *h, int j, int p);
/* The position of member i in ring channel j (the inverse of tune_channel_member). */
int tune_channel_pos(const struct tune_hier *h, int j, int i);
void tune_hier_release(struct tune_hier *h);
/* The shape of the group's tree all-reduce (mdl_tree_shape): NCCL's tree across machines, a
 * pair of trees per ring channel, where the layout is regular over 2 or more machines (returns
 * h->member: shape position j * local + l is member h->member[j * local + l]); else a flat
 * double binary tree over the n members (returns NULL: position i is member i). */
const int *tune_tree_shape(const struct tune_hier *h, int n, struct mdl_tree_shape *sh);

/* Route figures of one phase's transfers, protocol-free: the largest latency and the smallest
 * bandwidth (what a step waiting for all its messages costs), and the mean latency and the
 * harmonic mean bandwidth (what a ring step costs on its critical path, which crosses every
 * route in turn). Bandwidths are what a transfer gets when every link is split among the
 * transfers crossing it. */
struct tune_routes {
    double lat, bw;
    double mean_lat, mean_bw;
};

/* Route figures of a group, protocol-free. */
struct tune_group_env {
    int n;
    struct tune_hier hier;
    struct tune_routes flat;  /* ring neighbours */
    struct tune_routes intra; /* inside machines (hierarchical) */
    struct tune_routes inter; /* rails across machines (hierarchical) */
    struct tune_routes chan;  /* the ring channels across machines, all at once */
    struct tune_routes heads; /* the tree heads of consecutive machines, every pair at once */
    int nvls;                 /* the platform has NVLS and the group lies in one NVSwitch machine */
    int nvls_tree;            /* ... or NVLS-tree runs across the group's NVSwitch machines */
    int collnet;              /* CollNet runs across the group's machines (the network reduces) */
    int spans;                /* the group's members lie in more than one machine */
};
int tune_group_env(const struct plat_topo *t, const struct mdl_group *g, struct tune_group_env *e,
                   struct tps_error *err);
/* The same when groups[1..ng-1] run the same collective, of kind `kind`, at the same time on
 * other ranks (the other rows or columns of a mesh, the other pairs of a ring shift): links are
 * split among all their transfers. A send/recv group carries one message, member 0 to member 1;
 * the others are measured as rings over their members. */
int tune_group_env_set(const struct plat_topo *t, const struct mdl_group *const *groups, int ng,
                       enum mdl_op_kind kind, struct tune_group_env *e, struct tps_error *err);
void tune_group_env_release(struct tune_group_env *e);
/* The closed-form path of routes r under a protocol's per-step latency and efficiency. */
struct mdl_coll_path tune_coll_path(const struct tune_routes *r, double hop, double eff);
/* The closed-form environment of protocol p on that group. */
void tune_coll_env(const struct tune_group_env *ge, const struct mdl_nccl *nc,
                   enum mdl_coll_proto p, struct mdl_coll_env *out);

/* Chooses algorithm and protocol for collective k of `bytes`. A choice already in *algo or *proto
 * is binding; nc's apply when those are AUTO (its algorithm only for collectives it runs).
 * Returns the predicted time, or -1 with *err set when a forced algorithm cannot run this
 * collective on this group. */
double tune_choose(const struct tune_group_env *ge, const struct mdl_nccl *nc, enum mdl_op_kind k,
                   double bytes, enum mdl_coll_algo *algo, enum mdl_coll_proto *proto,
                   struct tps_error *err);

/* Fills algo/proto/gran of every collective op of p (keeping values already set). */
int tune_program(struct mdl_program *p, const struct plat_topo *t, struct tps_error *err);

/* Unique (src, dst) rank pairs that exchange messages under the chosen algorithms, sorted.
 * *pairs is malloc'ed. */
int tune_pairs(const struct mdl_program *p, const struct plat_topo *t, int (**pairs)[2],
               int *npairs, struct tps_error *err);

#endif
