/* coll.c - ring collectives as point-to-point messages between SimGrid actors.
 *
 * All-reduce: 2(n-1) steps, all-gather and reduce-scatter: n-1 steps; at each step every member
 * sends S/n bytes to the next member of the ring and receives S/n from the previous one, then
 * waits for both. Before sending, a member waits the route latency alpha (links carry no latency
 * in the generated platforms, see platxml.h). On an uncontended fabric an all-reduce takes
 * 2(n-1) * (alpha + S/(n B)). Units: bytes, seconds.
 */
#include "engine_int.h"

#include <math.h>
#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <xbt/log.h>

XBT_LOG_NEW_DEFAULT_CATEGORY(tpsim_coll, "tpsim ring collectives");

static char token = 't'; /* SimGrid needs a non-NULL payload */

static int ring_steps(enum mdl_op_kind k, int n)
{
    return k == MDL_OP_ALL_REDUCE ? 2 * (n - 1) : n - 1;
}

void sim_coll_run(struct sim_ctx *c, int rank, const struct mdl_op *op)
{
    const struct mdl_group *g = &c->p->groups[op->group];
    int n = g->n;
    if (n <= 1) return;
    int i = c->pos[op->group][rank];
    sg_mailbox_t me = c->mb[op->group][i];
    sg_mailbox_t next = c->mb[op->group][(i + 1) % n];
    double alpha = c->alpha[op->group][i];
    double chunk = op->bytes / n;
    long size = (long)llround(chunk);
    int steps = ring_steps((enum mdl_op_kind)op->kind, n);
    for (int s = 0; s < steps; s++) {
        void *data = NULL;
        sg_comm_t comms[2];
        comms[0] = sg_mailbox_get_async(me, &data);
        if (alpha > 0) sg_actor_sleep_for(alpha);
        comms[1] = sg_mailbox_put_async(next, &token, size);
        sg_comm_wait_all(comms, 2);
        c->bytes_sent[rank] += (double)size;
    }
    XBT_DEBUG("rank %d: %s of %.0f bytes done", rank, mdl_op_kind_name((enum mdl_op_kind)op->kind),
              op->bytes);
}
