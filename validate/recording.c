/* recording.c - iterations, warm-up and host launch times of a recorded trace (see recording.h). */
#include "validate/recording.h"

#include <stdlib.h>

/* Orders two ops as calls, for warm-up: by kind, FLOPs, bytes and group (0: the same call). */
static int call_cmp(const struct mdl_op *x, const struct mdl_op *y)
{
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->flop != y->flop) return x->flop < y->flop ? -1 : 1;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? -1 : 1;
    return (x->group > y->group) - (x->group < y->group);
}

/* Orders a rank's recorded ops (indices) as calls, then in program order. */
static const struct mdl_op *sort_ops; /* qsort has no context argument in C11 */
static int by_call(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b, c = call_cmp(&sort_ops[i], &sort_ops[j]);
    return c ? c : i - j;
}

/* Marks the first op of each kind, size and group (returns -1 when out of memory). */
static int infer_warmup(struct mdl_rank *rk)
{
    int *idx = malloc(((size_t)rk->nops + 1) * sizeof *idx), n = 0;
    if (!idx) return -1;
    for (int i = 0; i < rk->nops; i++)
        if (rk->ops[i].recorded) idx[n++] = i;
    sort_ops = rk->ops;
    qsort(idx, (size_t)n, sizeof *idx, by_call);
    for (int k = 0; k < n; k++)
        rk->ops[idx[k]].warmup =
            (uint8_t)(k == 0 || call_cmp(&rk->ops[idx[k - 1]], &rk->ops[idx[k]]) != 0);
    free(idx);
    return 0;
}

/* An iteration starts at each return to the first layer's forward. */
static void infer_iterations(struct mdl_rank *rk)
{
    int first_layer = -1;
    for (int i = 0; i < rk->nops; i++)
        if (rk->ops[i].layer >= 0 && (first_layer < 0 || rk->ops[i].layer < first_layer))
            first_layer = rk->ops[i].layer;
    int iter = 0, was_first = 0, seen = 0;
    for (int i = 0; i < rk->nops; i++) {
        struct mdl_op *o = &rk->ops[i];
        if (o->layer < 0) { /* outside layers: the iteration it is in */
            o->iter = iter;
            continue;
        }
        int is_first = o->layer == first_layer && o->phase == MDL_PHASE_FWD;
        if (is_first && !was_first && seen) iter++;
        was_first = is_first;
        seen = 1;
        o->iter = iter;
    }
}

int rec_mark_iterations(struct mdl_program *p)
{
    int marked = 0, warm = 0, any = 0;
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++) {
            const struct mdl_op *o = &p->ranks[r].ops[i];
            if (!o->recorded) continue;
            any = 1;
            marked |= o->iter >= 0;
            warm |= o->warmup;
        }
    if (!any) return 0;
    for (int r = 0; r < p->nranks; r++) {
        if (!marked) infer_iterations(&p->ranks[r]);
        if (!marked && !warm && infer_warmup(&p->ranks[r]) != 0) return -1;
    }
    int n = 0;
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++)
            if (p->ranks[r].ops[i].recorded && p->ranks[r].ops[i].iter >= n)
                n = p->ranks[r].ops[i].iter + 1;
    return n;
}

int rec_host_launches(struct mdl_program *p)
{
    int any = 0;
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++) {
            const struct mdl_op *o = &p->ranks[r].ops[i];
            if (o->launch_s > 0) return 0; /* measured */
            any |= o->recorded;
        }
    if (!any) return 0;
    for (int r = 0; r < p->nranks; r++) {
        struct mdl_rank *rk = &p->ranks[r];
        double last_end[MDL_MAX_STREAMS] = {0}, launched = 0;
        for (int i = 0; i < rk->nops; i++) {
            struct mdl_op *o = &rk->ops[i];
            if (!o->recorded) continue;
            double ready = last_end[o->stream];
            for (int d = 0; d < o->ndeps; d++)
                if (rk->ops[o->deps[d]].recorded && rk->ops[o->deps[d]].rec_end > ready)
                    ready = rk->ops[o->deps[d]].rec_end;
            double at = launched;
            if (o->rec_start > ready + REC_HOST_GAP_S && o->rec_start > launched) at = o->rec_start;
            o->launch_s = at - launched;
            launched = at;
            last_end[o->stream] = o->rec_end;
        }
    }
    return 1;
}
