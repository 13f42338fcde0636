/* program.c - storage of the per-rank op program (see program.h). Units: s, FLOP, bytes. */
#include "program.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"

int mdl_program_init(struct mdl_program *p, int nranks)
{
    memset(p, 0, sizeof *p);
    p->ranks = calloc((size_t)nranks, sizeof *p->ranks);
    if (!p->ranks) return -1;
    p->nranks = nranks;
    return 0;
}

void mdl_program_release(struct mdl_program *p)
{
    for (int r = 0; r < p->nranks; r++)
        free(p->ranks[r].ops);
    free(p->ranks);
    for (int g = 0; g < p->ngroups; g++)
        free(p->groups[g].ranks);
    free(p->groups);
    for (int i = 0; i < p->nnames; i++)
        free(p->names[i]);
    free(p->names);
    memset(p, 0, sizeof *p);
}

int mdl_program_add(struct mdl_program *p, int r, const struct mdl_op *op)
{
    struct mdl_rank *rk = &p->ranks[r];
    if (tps_grow(&rk->ops, &rk->cap, rk->nops + 1, sizeof *rk->ops, 64)) return -1;
    rk->ops[rk->nops] = *op;
    return rk->nops++;
}

int mdl_program_name(struct mdl_program *p, const char *name)
{
    for (int i = 0; i < p->nnames; i++)
        if (strcmp(p->names[i], name) == 0) return i;
    char **names = realloc(p->names, (size_t)(p->nnames + 1) * sizeof *names);
    if (!names) return -1;
    p->names = names;
    size_t len = strlen(name) + 1;
    p->names[p->nnames] = malloc(len);
    if (!p->names[p->nnames]) return -1;
    memcpy(p->names[p->nnames], name, len);
    return p->nnames++;
}

int mdl_program_group(struct mdl_program *p, int n, const int *ranks)
{
    for (int g = 0; g < p->ngroups; g++) {
        if (p->groups[g].n == n && memcmp(p->groups[g].ranks, ranks, (size_t)n * sizeof(int)) == 0)
            return g;
    }
    return mdl_program_group_add(p, n, ranks);
}

int mdl_program_group_add(struct mdl_program *p, int n, const int *ranks)
{
    struct mdl_group *gs = realloc(p->groups, (size_t)(p->ngroups + 1) * sizeof *gs);
    if (!gs) return -1;
    p->groups = gs;
    int *copy = malloc((size_t)n * sizeof *copy);
    if (!copy) return -1;
    memcpy(copy, ranks, (size_t)n * sizeof *copy);
    p->groups[p->ngroups].n = n;
    p->groups[p->ngroups].ranks = copy;
    return p->ngroups++;
}

static const char *const kind_names[MDL_OP_NKINDS] = {
    "gemm",       "attn",           "mem",       "compute",    "all_reduce",
    "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv"};

bool mdl_op_is_coll(enum mdl_op_kind k)
{
    return k >= MDL_OP_ALL_REDUCE && k < MDL_OP_NKINDS;
}

const char *mdl_op_kind_name(enum mdl_op_kind k)
{
    return k < MDL_OP_NKINDS ? kind_names[k] : "?";
}

int mdl_op_kind_parse(const char *name, enum mdl_op_kind *out)
{
    for (int i = 0; i < MDL_OP_NKINDS; i++) {
        if (strcmp(kind_names[i], name) == 0) {
            *out = (enum mdl_op_kind)i;
            return 0;
        }
    }
    return -1;
}

const char *mdl_phase_name(enum mdl_phase ph)
{
    return ph == MDL_PHASE_FWD ? "fwd" : ph == MDL_PHASE_BWD ? "bwd" : "other";
}

double mdl_coll_ring_bytes(enum mdl_op_kind k, int n, double bytes)
{
    if (n <= 1) return 0;
    double f = (double)(n - 1) / n;
    return k == MDL_OP_ALL_REDUCE ? 2.0 * f * bytes : f * bytes;
}

double mdl_program_flop(const struct mdl_program *p)
{
    double sum = 0;
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++)
            sum += p->ranks[r].ops[i].flop;
    return sum;
}
