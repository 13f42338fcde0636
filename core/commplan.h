/* commplan.h - the plan of a program's communication, as the tuner hands it to the engine: per
 * group, how its members lie over machines (the layout every algorithm across machines follows:
 * ring channels, trees, rails), and the GPU pairs that exchange messages. Plain data, read-only
 * once built: tune_program (core/tune.h) builds it, sim/ replays with it, and nothing here knows
 * the topology. Also the route figures of a set of transfers and the closed-form path they give
 * under a protocol, which the tuner and the replay price alike.
 */
#ifndef CORE_COMMPLAN_H
#define CORE_COMMPLAN_H

#include "models/collective.h"
#include "models/program.h"

/* Machine layout of a group for the algorithms across machines: ring channels (any layout
 * whose machines hold 2 or more members each), NCCL's tree, NVLS-tree, CollNet and the
 * hierarchical ones (regular layouts: `local` members in every machine). */
struct cpl_layout {
    int local, nodes; /* members per machine (0 when machines hold different counts) and
                       * machines; both 0 on one machine, or when irregular without channels */
    int *node_of;     /* owned, per member: machine order (0..nodes-1) */
    int *local_of;    /* owned, per member: index among its machine's members */
    int *first;       /* owned, [node]: position of the machine's first member in machine
                       * order ([nodes]: n); node * local when regular */
    int *member;      /* owned, [first[node] + l]: member index */
    int channels;     /* rings a ring collective across the machines runs at once (NCCL's
                       * channels): one per NIC of a machine, at most the fewest members of a
                       * machine, the platform's nccl.channels and CPL_MAX_CHANNELS; 1 inside
                       * one machine or with one NIC */
    int machines;     /* distinct machines of the group's members (1 on a user XML) */
};
#define CPL_MAX_CHANNELS MDL_MAX_CHANNELS
void cpl_layout_release(struct cpl_layout *h);
/* Member at position p (0..n-1) of ring channel j (h->channels >= 2): machine after machine,
 * the members of a machine holding m of them from its (j * (m / channels))-th on, so that
 * channel j enters every machine at that member and leaves the one before from the member before
 * it: with one NIC per m / channels members, every NIC carries one channel each way. Machines
 * may hold different counts (12 GPUs as 8 + 4). */
int cpl_channel_member(const struct cpl_layout *h, int j, int p);
/* The position of member i in ring channel j (the inverse of cpl_channel_member). */
int cpl_channel_pos(const struct cpl_layout *h, int j, int i);
/* The shape of the group's tree all-reduce (mdl_tree_shape): NCCL's tree across machines, a
 * pair of trees per ring channel, where the layout is regular over 2 or more machines (returns
 * h->member: shape position j * local + l is member h->member[j * local + l]); else a flat
 * double binary tree over the n members (returns NULL: position i is member i). */
const int *cpl_tree_shape(const struct cpl_layout *h, int n, struct mdl_tree_shape *sh);

/* Route figures of one phase's transfers, protocol-free: the largest latency and the smallest
 * bandwidth (what a step waiting for all its messages costs), and the mean latency and the
 * harmonic mean bandwidth (what a ring step costs on its critical path, which crosses every
 * route in turn). Bandwidths are what a transfer gets when every link is split among the
 * transfers crossing it. */
struct cpl_routes {
    double lat, bw;
    double mean_lat, mean_bw;
};
/* The closed-form path of routes r under a protocol's per-step latency and efficiency. */
struct mdl_coll_path cpl_coll_path(const struct cpl_routes *r, double hop, double eff);

/* What the engine replays a tuned program with. */
struct cpl_plan {
    int ngroups;
    struct cpl_layout *layout; /* owned, per group of the program */
    int (*pairs)[2];           /* owned: unique (src, dst) rank pairs that exchange messages
                                  under the chosen algorithms, sorted */
    int npairs;
};
void cpl_plan_release(struct cpl_plan *pl);

#endif
