/* engine_int.h - state shared by engine.c and coll.c inside the simulation child process.
 * Never included outside sim/. */
#ifndef SIM_ENGINE_INT_H
#define SIM_ENGINE_INT_H

#include <simgrid/cond.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/mutex.h>

#include "models/program.h"

struct sim_rank_state {
    sg_mutex_t mtx; /* guards done[] for cond waits */
    sg_cond_t cond; /* signalled whenever an op of this rank completes */
    uint8_t *done;  /* per op: completed */
    int ndone;      /* ops completed */
};

struct sim_ctx {
    struct mdl_program *p;
    sg_host_t *hosts;          /* per rank */
    sg_mailbox_t **mb;         /* [group][member]: where that member receives */
    double **alpha;            /* [group][member]: latency to add before sending to next, s */
    int **pos;                 /* [group][rank]: member index of rank, -1 if not a member */
    struct sim_rank_state *rs; /* per rank */
    double *bytes_sent;        /* per rank, bytes */
};

/* Runs collective `op` of `rank` to completion (blocking the calling actor). */
void sim_coll_run(struct sim_ctx *c, int rank, const struct mdl_op *op);

#endif
