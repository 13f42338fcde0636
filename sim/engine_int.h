/* engine_int.h - state shared by engine.c and replay.c inside the simulation child process.
 * Never included outside sim/. */
#ifndef SIM_ENGINE_INT_H
#define SIM_ENGINE_INT_H

#include <simgrid/barrier.h>
#include <simgrid/cond.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/mutex.h>

#include "core/timing.h"
#include "core/commplan.h"
#include "models/program.h"
#include "platforms/topo.h"

/* Mailboxes per group member (replay.c): rings and ring channels, then 4 per tree (3 children
 * and the parent), then one for a tree's flows at flow level. */
#define SIM_SLOTS (8 + CPL_MAX_CHANNELS + 4 * MDL_MAX_TREES + 1)
/* Wires per rank stream: a ring channel each, or 4 per tree (to the parent, to 3 children). */
#define SIM_WIRES (4 * MDL_MAX_TREES)

enum { SIM_WATCHED = 1, SIM_STARTED = 2 };

/* What an actor blocked on a rank's state waits for: op idx done, launched, or started. */
enum { SIM_WAIT_DONE, SIM_WAIT_LAUNCH, SIM_WAIT_START, SIM_WAIT_QUEUE };

/* An actor blocked on a rank's state, on its own condition variable: woken only once what it
 * waits for holds (a condition shared by the rank's actors woke each of them at every op). */
struct sim_waiter {
    sg_cond_t cond; /* created on the actor's first wait */
    sg_mutex_t mtx; /* cond's, held by the actor from its first wait on */
    int kind;       /* SIM_WAIT_* */
    int idx;        /* the op */
    struct sim_waiter *next;
};

struct sim_rank_state {
    struct sim_waiter *waiters; /* blocked on this rank, in the order they came */
    struct sim_waiter **waiters_tail;
    uint8_t *done;    /* per op: completed */
    uint8_t *started; /* per op, on ranks whose ops others mirror (else NULL): 0, SIM_WATCHED
                         (mirrored, not started yet) or SIM_STARTED */
    int ndone;        /* ops completed */
    /* Hardware queues (mdl_program.hw_queues > 0, else NULL): per op, started; per queue, its
     * first op not started yet (the op a SIM_WAIT_QUEUE waiter of that index waits to be). */
    uint8_t *begun;
    int *qhead;
    int nq;
    const struct mdl_op *ops;
    int launched; /* ops 0..launched-1 have been launched by the rank's host */
};

/* A rank stream's wire: the sends of its rings, each leaving at its own time (data ready plus
 * the route latency), so that many can be under way at once (replay.c). Created on first use. */
struct sim_wire_req {
    double at;       /* when the message leaves */
    sg_mailbox_t mb; /* where it goes */
    long size;       /* bytes on the wire */
};
struct sim_wire {
    sg_mutex_t mtx;
    sg_cond_t cond;
    struct sim_wire_req *q; /* pending, q[head .. head + n) */
    int head, n, cap;
    int waiting; /* the wire's actor waits on cond for a message */
};

#define SIM_TREE_MEMO 16
struct sim_tree_memo {
    struct mdl_tree_shape shape;
    int k;
    struct mdl_tree_cost cost;
};

/* A rank's membership of a group: its index among the group's members. */
struct sim_member {
    int group, pos;
};

struct sim_ctx {
    const struct mdl_program *p;
    const unsigned char *used; /* per rank: on the platform written (runs an op or is in a group) */
    struct timing *tm;         /* op times and bytes sent, written here */
    sg_host_t *hosts;          /* per rank */
    const struct mdl_nccl *p_nccl; /* the platform's collective tuning */
    sg_mailbox_t **mb;             /* [group][member * SIM_SLOTS + slot], created on first use */
    const struct plat_pair *pairs; /* sorted by (src, dst) */
    int npairs;
    const struct cpl_layout *hier; /* per group: machine layout (the plan's, commplan.h) */
    int *mstart;                   /* [rank .. rank + 1): the rank's entries of members */
    struct sim_member *members;    /* every rank's groups, by rank, each rank's by group */
    struct sim_rank_state *rs;     /* per rank */
    struct sim_wire **wires;       /* [rank * MDL_MAX_STREAMS + stream]: SIM_WIRES wires, allocated
                                    * on the stream's first send on a wire */
    struct cpl_routes **rings;     /* [group][ring]: route figures of a ring (0 the flat ring, 1 + j
                                    * the ring inside machine j, 1 + nodes + l rail l, 1 + nodes +
                                    * local + ch ring channel ch; each transfer alone), mean_lat
                                    * NaN until computed */
    sg_bar_t *bars; /* [group]: its simulated members' barrier (collectives of latency
                     * granularity), created on first use */
    struct sim_tree_memo tree_memo[SIM_TREE_MEMO];
    int ntree_memo;
};

/* The member index of rank r in group g, -1 if not a member: a binary search of the rank's
 * groups (a table of groups x ranks grew as the square of the GPUs). */
static inline int sim_pos(const struct sim_ctx *c, int g, int r)
{
    int lo = c->mstart[r], hi = c->mstart[r + 1];
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (c->members[mid].group < g)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->mstart[r + 1] && c->members[lo].group == g ? c->members[lo].pos : -1;
}

/* Runs collective `op` of `rank` to completion (blocking the calling actor). */
void sim_replay_run(struct sim_ctx *c, int rank, const struct mdl_op *op);

#endif
