/* timing.c - op times of a simulated program (see timing.h). */
#include "core/timing.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"

int timing_init(struct timing *tm, const struct mdl_program *p)
{
    memset(tm, 0, sizeof *tm);
    tm->nranks = p->nranks;
    tm->first = malloc(((size_t)p->nranks + 1) * sizeof *tm->first);
    tm->bytes_sent = calloc((size_t)p->nranks + 1, sizeof *tm->bytes_sent);
    tm->bytes_dim = calloc(((size_t)p->nranks + 1) * MDL_OP_DIMS, sizeof *tm->bytes_dim);
    if (!tm->first || !tm->bytes_sent || !tm->bytes_dim) goto oom;
    size_t n = 0;
    for (int r = 0; r < p->nranks; r++) {
        tm->first[r] = n;
        n += (size_t)p->ranks[r].nops;
    }
    tm->first[p->nranks] = n;
    tm->span = calloc(n + 1, sizeof *tm->span);
    if (!tm->span) goto oom;
    return TPS_OK;
oom:
    timing_release(tm);
    return TPS_ENOMEM;
}

void timing_release(struct timing *tm)
{
    free(tm->first);
    free(tm->span);
    free(tm->bytes_sent);
    free(tm->bytes_dim);
    memset(tm, 0, sizeof *tm);
}

int timing_gather(const struct timing *all, const struct mdl_program *p, const int *at,
                  struct timing *tm)
{
    int rc = timing_init(tm, p);
    if (rc) return rc;
    for (int r = 0; r < p->nranks; r++) {
        size_t n = (size_t)p->ranks[r].nops;
        if (all->first[at[r] + 1] - all->first[at[r]] != n) {
            timing_release(tm);
            return TPS_EINVAL;
        }
        memcpy(&tm->span[tm->first[r]], &all->span[all->first[at[r]]], n * sizeof *tm->span);
        tm->bytes_sent[r] = all->bytes_sent[at[r]];
        memcpy(&tm->bytes_dim[(size_t)r * MDL_OP_DIMS],
               &all->bytes_dim[(size_t)at[r] * MDL_OP_DIMS], MDL_OP_DIMS * sizeof *tm->bytes_dim);
        for (size_t i = 0; i < n; i++)
            if (tm->span[tm->first[r] + i].end > tm->end_s)
                tm->end_s = tm->span[tm->first[r] + i].end;
    }
    return TPS_OK;
}
