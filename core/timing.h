/* timing.h - what a simulation produced: when every op of a program started and ended, the
 * simulated end, and the bytes each rank sent (in all, and for each parallel dimension).
 *
 * The engine fills a timing for a program it only reads; reports, timelines and the trace
 * comparison read the two side by side (op i of rank r is timing_op(tm, r, i)). Plain data, no
 * SimGrid. Units: seconds, bytes.
 */
#ifndef CORE_TIMING_H
#define CORE_TIMING_H

#include <stddef.h>

#include "models/program.h"

struct timing_span {
    double start, end; /* simulated start and end of an op, s */
};

struct timing {
    double end_s; /* simulated time when the last op ended */
    int nranks;
    size_t *first;            /* owned, nranks + 1 entries: rank r's ops start at first[r] */
    struct timing_span *span; /* owned, first[nranks] entries */
    double *bytes_sent;       /* owned, per rank: bytes sent by collectives */
    double *bytes_dim;        /* owned, nranks x MDL_OP_DIMS: [r * MDL_OP_DIMS + op dim] the part of
                                 bytes_sent[r] sent for each dimension (program.h) */
};

/* Sizes *tm for program p (every time 0). Returns 0 or TPS_ENOMEM (tm is then empty). */
int timing_init(struct timing *tm, const struct mdl_program *p);
void timing_release(struct timing *tm);
/* The times of program p from those of a larger program `all` in which rank r of p ran as rank
 * at[r] with the same ops (mdl_program_merge): *tm is sized for p, its end the last end of p's
 * ops. Returns 0, TPS_ENOMEM, or TPS_EINVAL when a rank's op count differs (tm then empty). */
int timing_gather(const struct timing *all, const struct mdl_program *p, const int *at,
                  struct timing *tm);

static inline struct timing_span *timing_op(const struct timing *tm, int rank, int op)
{
    return &tm->span[tm->first[rank] + (size_t)op];
}

#endif
