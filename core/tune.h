/* tune.h - how each collective of a program runs on a platform: the tuner.
 *
 * For a group of GPUs the planner measures the routes each algorithm would use (latency, and
 * bandwidth once the algorithm's own concurrent transfers share the links) and, like NCCL's
 * tuner, picks the algorithm and protocol with the smallest closed-form time
 * (models/collective.h) unless the platform or scenario forces them. For a whole program it
 * also lays every group over the machines and lists the GPU pairs that exchange messages (which
 * is all the platform XML needs): the plan the engine replays with (commplan.h). No SimGrid here.
 * Units: bytes, seconds, bytes/s.
 */
#ifndef CORE_TUNE_H
#define CORE_TUNE_H

#include "common/error.h"
#include "core/commplan.h"
#include "models/collective.h"
#include "models/program.h"
#include "platforms/topo.h"

/* The machine layout of group g on t (commplan.h): 0, or -1 on allocation failure. */
int tune_layout(const struct plat_topo *t, const struct mdl_group *g, struct cpl_layout *h);

/* Route figures of a group, protocol-free. */
struct tune_group_env {
    int n;
    struct cpl_layout hier;  /* the group's layout: its counts only (the arrays are NULL) */
    struct cpl_routes flat;  /* ring neighbours */
    struct cpl_routes intra; /* inside machines (hierarchical) */
    struct cpl_routes inter; /* rails across machines (hierarchical) */
    struct cpl_routes chan;  /* the ring channels across machines, all at once */
    struct cpl_routes heads; /* the tree heads of consecutive machines, every pair at once */
    int nvls;                /* the platform has NVLS and the group lies in one NVSwitch machine */
    int nvls_tree;           /* ... or NVLS-tree runs across the group's NVSwitch machines */
    int collnet;             /* CollNet runs across the group's machines (the network reduces) */
    int spans;               /* the group's members lie in more than one machine */
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

/* Environments already built, by their groups' members and what of the kind shapes them (a
 * send/recv's one message, an all-reduce's tree heads): a planner asks for the same groups
 * candidate after candidate. Zero-initialise; one platform per memo. */
struct tune_env_memo {
    struct tune_env_entry *v;
    int n, cap;
    int *slot; /* open addressing over v, nslot a power of two; -1 empty */
    int nslot;
};
/* tune_group_env_set through the memo: *e is the memo's (valid until tune_env_memo_release). */
int tune_group_env_memo(struct tune_env_memo *m, const struct plat_topo *t,
                        const struct mdl_group *const *groups, int ng, enum mdl_op_kind kind,
                        const struct tune_group_env **e, struct tps_error *err);
void tune_env_memo_release(struct tune_env_memo *m);
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

/* Fills algo/proto/gran of every collective op of p (keeping values already set) and, when plan
 * is not NULL, the communication plan the engine replays with (commplan.h: every group's layout,
 * computed once, and the message pairs of the algorithms chosen; release it with
 * cpl_plan_release; nothing to release on failure). */
int tune_program(struct mdl_program *p, const struct plat_topo *t, struct cpl_plan *plan,
                 struct tps_error *err);

#endif
