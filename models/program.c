/* program.c - storage of the per-rank op program and its plain-data validity check (see
 * program.h). Units: s, FLOP, bytes. */
#include "program.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"
#include "models/collective.h"

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
    free(p->shadow);
    tps_strindex_release(&p->name_index);
    memset(p, 0, sizeof *p);
}

int mdl_program_add(struct mdl_program *p, int r, const struct mdl_op *op)
{
    struct mdl_rank *rk = &p->ranks[r];
    if (p->max_ops > 0 && ++p->added > p->max_ops) {
        p->over = 1;
        return -1;
    }
    if (tps_grow(&rk->ops, &rk->cap, rk->nops + 1, sizeof *rk->ops, 64)) return -1;
    rk->ops[rk->nops] = *op;
    return rk->nops++;
}

static const char *name_key(const void *ctx, int i)
{
    return ((const struct mdl_program *)ctx)->names[i];
}

int mdl_program_name(struct mdl_program *p, const char *name)
{
    int found = tps_strindex_find(&p->name_index, name, name_key, p);
    if (found >= 0) return found;
    if (tps_grow(&p->names, &p->names_cap, p->nnames + 1, sizeof *p->names, 32)) return -1;
    size_t len = strlen(name) + 1;
    p->names[p->nnames] = malloc(len);
    if (!p->names[p->nnames]) return -1;
    memcpy(p->names[p->nnames], name, len);
    if (tps_strindex_update(&p->name_index, p->nnames + 1, name_key, p)) {
        free(p->names[p->nnames]);
        return -1;
    }
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
    if (tps_grow(&p->groups, &p->groups_cap, p->ngroups + 1, sizeof *p->groups, 16)) return -1;
    int *copy = malloc((size_t)n * sizeof *copy);
    if (!copy) return -1;
    memcpy(copy, ranks, (size_t)n * sizeof *copy);
    p->groups[p->ngroups].n = n;
    p->groups[p->ngroups].ranks = copy;
    return p->ngroups++;
}

int mdl_rank_copy(struct mdl_rank *dst, const struct mdl_rank *src)
{
    dst->ops = malloc(((size_t)src->nops + 1) * sizeof *dst->ops);
    if (!dst->ops) return -1;
    memcpy(dst->ops, src->ops, (size_t)src->nops * sizeof *dst->ops);
    dst->nops = dst->cap = src->nops;
    return 0;
}

int mdl_program_place(struct mdl_program *p, int nranks, int copies, const int *at)
{
    int n = p->nranks, ng = p->ngroups;
    struct mdl_rank *ranks = calloc((size_t)nranks, sizeof *ranks);
    uint8_t *shadow = calloc((size_t)nranks, sizeof *shadow);
    int rc = ranks && shadow && !p->shadow && copies >= 1 ? 0 : -1;
    for (int r = 0; !rc && r < nranks; r++)
        shadow[r] = 1;
    /* copies 1..: their own groups (group g of copy c is ng * c + g) and ops */
    int *mapped = rc ? NULL : malloc((size_t)(n > 0 ? n : 1) * sizeof *mapped);
    if (!mapped) rc = -1;
    for (int c = 1; !rc && c < copies; c++) {
        for (int g = 0; !rc && g < ng; g++) {
            const struct mdl_group *G = &p->groups[g];
            for (int i = 0; i < G->n; i++)
                mapped[i] = at[(size_t)c * n + G->ranks[i]];
            rc = mdl_program_group_add(p, G->n, mapped) < 0;
        }
        for (int r = 0; !rc && r < n; r++) {
            struct mdl_rank *dst = &ranks[at[(size_t)c * n + r]];
            if ((rc = mdl_rank_copy(dst, &p->ranks[r])) != 0) break;
            for (int k = 0; k < dst->nops; k++)
                if (dst->ops[k].group >= 0) dst->ops[k].group += ng * c;
            shadow[at[(size_t)c * n + r]] = 0;
        }
    }
    free(mapped);
    if (rc) {
        for (int r = 0; ranks && r < nranks; r++)
            free(ranks[r].ops);
        free(ranks);
        free(shadow);
        return -1;
    }
    for (int r = 0; r < n; r++) { /* copy 0: the program's own ranks and groups */
        ranks[at[r]] = p->ranks[r];
        shadow[at[r]] = 0;
    }
    for (int g = 0; g < ng; g++)
        for (int i = 0; i < p->groups[g].n; i++)
            p->groups[g].ranks[i] = at[p->groups[g].ranks[i]];
    free(p->ranks);
    p->ranks = ranks;
    p->nranks = nranks;
    p->shadow = shadow;
    return 0;
}

int mdl_program_merge(struct mdl_program *dst, const struct mdl_program *src, const int *at)
{
    for (int r = 0; r < src->nranks; r++)
        if (at[r] < 0 || at[r] >= dst->nranks || dst->ranks[at[r]].nops) return -1;
    if (src->shadow && !dst->shadow && !(dst->shadow = calloc((size_t)dst->nranks, 1))) return -1;
    int *group = malloc(((size_t)src->ngroups + 1) * sizeof *group);
    int *name = malloc(((size_t)src->nnames + 1) * sizeof *name);
    int *mapped = malloc(((size_t)src->nranks + 1) * sizeof *mapped);
    int rc = group && name && mapped ? 0 : -1;
    for (int g = 0; !rc && g < src->ngroups; g++) {
        const struct mdl_group *G = &src->groups[g];
        for (int i = 0; i < G->n; i++)
            mapped[i] = at[G->ranks[i]];
        rc = (group[g] = mdl_program_group_add(dst, G->n, mapped)) < 0;
    }
    for (int k = 0; !rc && k < src->nnames; k++)
        rc = (name[k] = mdl_program_name(dst, src->names[k])) < 0;
    for (int r = 0; !rc && r < src->nranks; r++) {
        struct mdl_rank *d = &dst->ranks[at[r]];
        free(d->ops);
        if ((rc = mdl_rank_copy(d, &src->ranks[r])) != 0) {
            memset(d, 0, sizeof *d);
            break;
        }
        for (int k = 0; k < d->nops; k++) {
            struct mdl_op *op = &d->ops[k];
            if (op->group >= 0) op->group = group[op->group];
            if (op->name >= 0 && op->name < src->nnames) op->name = name[op->name];
            if (op->mirrored) op->mirror_rank = at[op->mirror_rank];
        }
        if (src->shadow) dst->shadow[at[r]] = src->shadow[r];
    }
    free(group);
    free(name);
    free(mapped);
    return rc;
}

static const char *const kind_names[MDL_OP_NKINDS] = {
    "gemm",           "attn",      "mem",        "compute",   "all_reduce", "all_gather",
    "reduce_scatter", "broadcast", "all_to_all", "send_recv", "reduce"};

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

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* A collective as its group's members must all issue it. */
struct coll_sig {
    uint8_t kind;
    uint16_t root;
    double bytes;
};

struct check {
    const struct mdl_program *p;
    int **sorted;          /* each group's ranks, sorted */
    struct coll_sig **ref; /* per group: the collectives of its first member, in order */
    int *nref, *cref;      /* their count and capacity */
    int *count, *stream;   /* per group, for the rank being checked */
    int *mstart, *mgroups; /* CSR: the groups each rank is a member of */
};

static int fail_at(struct mdl_check_at *at, int r, int i, struct tps_error *err, const char *field,
                   const char *msg, ...) __attribute__((format(printf, 6, 7)));

static int fail_at(struct mdl_check_at *at, int r, int i, struct tps_error *err, const char *field,
                   const char *msg, ...)
{
    char buf[400];
    va_list ap;
    va_start(ap, msg);
    vsnprintf(buf, sizeof buf, msg, ap);
    va_end(ap);
    if (at) {
        at->rank = r;
        at->op = i;
    }
    return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, field, "%s", buf);
}

static int check_groups(struct check *C, struct tps_error *err)
{
    const struct mdl_program *p = C->p;
    for (int g = 0; g < p->ngroups; g++) {
        if (p->groups[g].n < 1)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "group", "group %d has no rank", g);
        C->sorted[g] = malloc((size_t)p->groups[g].n * sizeof **C->sorted);
        if (!C->sorted[g]) return tps_error_oom(err);
        memcpy(C->sorted[g], p->groups[g].ranks, (size_t)p->groups[g].n * sizeof **C->sorted);
        qsort(C->sorted[g], (size_t)p->groups[g].n, sizeof **C->sorted, int_cmp);
        for (int m = 0; m < p->groups[g].n; m++) {
            int r = C->sorted[g][m];
            if (r < 0 || r >= p->nranks)
                return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "group",
                                     "group %d names rank %d, outside 0..%d", g, r, p->nranks - 1);
            if (m && r == C->sorted[g][m - 1])
                return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "group",
                                     "group %d names rank %d twice", g, r);
        }
    }
    return TPS_OK;
}

/* One rank's ops; `first` says whether this pass records the reference collectives of the
 * groups the rank leads (pass 1) or compares against them (pass 2). */
static int check_rank(struct check *C, int r, int first, struct mdl_check_at *at,
                      struct tps_error *err)
{
    const struct mdl_program *p = C->p;
    for (int e = C->mstart[r]; e < C->mstart[r + 1]; e++) { /* the rank's groups only */
        C->count[C->mgroups[e]] = 0;
        C->stream[C->mgroups[e]] = -1;
    }
    for (int i = 0; i < p->ranks[r].nops; i++) {
        const struct mdl_op *op = &p->ranks[r].ops[i];
        int coll = mdl_op_is_coll((enum mdl_op_kind)op->kind);
        if (first) {
            if (op->kind >= MDL_OP_NKINDS || op->stream >= MDL_MAX_STREAMS)
                return fail_at(at, r, i, err, "stream", "bad kind or stream");
            if (coll != (op->stream != MDL_STREAM_COMPUTE))
                return fail_at(at, r, i, err, "stream", "%s ops run on %s",
                               coll ? "collective" : "compute",
                               coll ? "a communication stream (1..12)" : "stream 0");
            if (op->dim >= MDL_OP_DIMS || (op->dim && !coll))
                return fail_at(at, r, i, err, "dim", "a dimension only collectives serve");
            if (op->ndeps > MDL_MAX_DEPS)
                return fail_at(at, r, i, err, "deps", "more than %d dependencies", MDL_MAX_DEPS);
            for (int d = 0; d < op->ndeps; d++)
                if (op->deps[d] < 0 || op->deps[d] >= i)
                    return fail_at(at, r, i, err, "deps", "depends on op %d, not an earlier op",
                                   op->deps[d]);
            if (op->mirrored) {
                int mr = op->mirror_rank, mo = op->mirror_op;
                if (mr < 0 || mr >= p->nranks || mr == r || (p->shadow && p->shadow[mr]) ||
                    mo < 0 || mo >= p->ranks[mr].nops)
                    return fail_at(at, r, i, err, "mirror",
                                   "mirrors op %d of rank %d, which is no op of a rank simulated "
                                   "in full",
                                   mo, mr);
                const struct mdl_op *m = &p->ranks[mr].ops[mo];
                if (m->kind != op->kind || m->bytes != op->bytes)
                    return fail_at(at, r, i, err, "mirror",
                                   "mirrors op %d of rank %d, which is another kind or size", mo,
                                   mr);
            }
        }
        if (!coll) continue;
        int g = op->group;
        if (g < 0 || g >= p->ngroups) return fail_at(at, r, i, err, "group", "unknown group %d", g);
        const struct mdl_group *G = &p->groups[g];
        if (first) {
            if (!bsearch(&r, C->sorted[g], (size_t)G->n, sizeof(int), int_cmp))
                return fail_at(at, r, i, err, "group", "rank %d is not in group %d", r, g);
            if (op->kind == MDL_OP_SEND_RECV && G->n < 2)
                return fail_at(at, r, i, err, "group",
                               "send_recv needs a group of at least 2 ranks, group %d has %d", g,
                               G->n);
            if (op->root >= G->n)
                return fail_at(at, r, i, err, "root", "root %d of a group of %d ranks", op->root,
                               G->n);
            if (C->stream[g] >= 0 && C->stream[g] != op->stream)
                return fail_at(at, r, i, err, "stream",
                               "group %d is used from streams %d and %d: its collectives would "
                               "deadlock",
                               g, C->stream[g], op->stream);
            C->stream[g] = op->stream;
            /* a collective of latency granularity is its simulated members' alone: a folded
             * replica's shadows leave it out (collective.h) */
            if (op->gran == MDL_GRAN_LATENCY) continue;
            if (G->ranks[0] == r) {
                if (tps_grow(&C->ref[g], &C->cref[g], C->nref[g] + 1, sizeof **C->ref, 16))
                    return tps_error_oom(err);
                C->ref[g][C->nref[g]++] = (struct coll_sig){op->kind, op->root, op->bytes};
            }
            continue;
        }
        if (op->gran == MDL_GRAN_LATENCY) continue;
        int k = C->count[g]++;
        if (G->ranks[0] == r) continue;
        if (k >= C->nref[g])
            return fail_at(at, r, i, err, "group",
                           "issues more collectives on group %d than its rank %d (%d)", g,
                           G->ranks[0], C->nref[g]);
        const struct coll_sig *x = &C->ref[g][k];
        if (x->kind == op->kind && x->bytes == op->bytes && x->root != op->root)
            return fail_at(at, r, i, err, "root",
                           "collective %d of group %d has root %d here, but %d on rank %d", k, g,
                           op->root, x->root, G->ranks[0]);
        /* an all-to-all's members send their own buffers (all-to-all-v: a mixture of experts'
         * dispatch under skewed routing) */
        bool own = op->kind == MDL_OP_ALL_TO_ALL;
        if (x->kind != op->kind || (x->bytes != op->bytes && !own))
            return fail_at(at, r, i, err, "bytes",
                           "collective %d of group %d is %s of %.17g bytes here, but %s of %.17g "
                           "bytes on rank %d: the members of a group issue the same collectives",
                           k, g, mdl_op_kind_name((enum mdl_op_kind)op->kind), op->bytes,
                           mdl_op_kind_name((enum mdl_op_kind)x->kind), x->bytes, G->ranks[0]);
    }
    if (first) return TPS_OK;
    /* and no fewer than the group's first member: a rank left out would hang its peers */
    for (int e = C->mstart[r]; e < C->mstart[r + 1]; e++) {
        int g = C->mgroups[e];
        if (C->count[g] < C->nref[g])
            return fail_at(at, r, p->ranks[r].nops ? p->ranks[r].nops - 1 : -1, err, "group",
                           "issues %d collectives on group %d, its rank %d issues %d: the members "
                           "of a group issue the same collectives",
                           C->count[g], g, p->groups[g].ranks[0], C->nref[g]);
    }
    return TPS_OK;
}

/* The groups each rank belongs to, as CSR arrays. */
static int build_membership(struct check *C, struct tps_error *err)
{
    const struct mdl_program *p = C->p;
    C->mstart = calloc((size_t)p->nranks + 2, sizeof *C->mstart);
    size_t total = 0;
    for (int g = 0; g < p->ngroups; g++)
        total += (size_t)p->groups[g].n;
    C->mgroups = malloc((total + 1) * sizeof *C->mgroups);
    if (!C->mstart || !C->mgroups) return tps_error_oom(err);
    for (int g = 0; g < p->ngroups; g++)
        for (int m = 0; m < p->groups[g].n; m++)
            C->mstart[p->groups[g].ranks[m] + 2]++;
    for (int r = 0; r < p->nranks; r++)
        C->mstart[r + 2] += C->mstart[r + 1];
    for (int g = 0; g < p->ngroups; g++)
        for (int m = 0; m < p->groups[g].n; m++)
            C->mgroups[C->mstart[p->groups[g].ranks[m] + 1]++] = g;
    return TPS_OK;
}

int mdl_program_check(const struct mdl_program *p, struct mdl_check_at *at, struct tps_error *err)
{
    if (at) at->rank = at->op = -1;
    size_t ng = (size_t)p->ngroups + 1;
    struct check C = {.p = p,
                      .sorted = calloc(ng, sizeof *C.sorted),
                      .ref = calloc(ng, sizeof *C.ref),
                      .nref = calloc(ng, sizeof *C.nref),
                      .cref = calloc(ng, sizeof *C.cref),
                      .count = calloc(ng, sizeof *C.count),
                      .stream = calloc(ng, sizeof *C.stream)};
    int rc = C.sorted && C.ref && C.nref && C.cref && C.count && C.stream ? check_groups(&C, err)
                                                                          : tps_error_oom(err);
    if (!rc) rc = build_membership(&C, err);
    for (int pass = 1; pass <= 2; pass++)
        for (int r = 0; !rc && r < p->nranks; r++)
            rc = check_rank(&C, r, pass == 1, at, err);
    for (int g = 0; g < p->ngroups; g++) {
        if (C.sorted) free(C.sorted[g]);
        if (C.ref) free(C.ref[g]);
    }
    free(C.sorted);
    free(C.ref);
    free(C.nref);
    free(C.cref);
    free(C.count);
    free(C.stream);
    free(C.mstart);
    free(C.mgroups);
    return rc;
}

int mdl_program_shard(const struct mdl_program *in, int rank, struct mdl_program *out)
{
    if (mdl_program_init(out, 1) != 0) return -1;
    out->layers = in->layers;
    out->micro_batches = in->micro_batches;
    out->model_flop = in->model_flop / (in->nranks > 0 ? in->nranks : 1);
    out->peak_flops = in->peak_flops;
    out->hw_queues = in->hw_queues;
    const struct mdl_rank *rk = &in->ranks[rank];
    /* new index of each op (-1: dropped), and the deps a dropped op stands for */
    int *map = malloc(((size_t)rk->nops + 1) * sizeof *map);
    struct deps {
        int n;
        int32_t d[MDL_MAX_DEPS];
    } *via = malloc(((size_t)rk->nops + 1) * sizeof *via);
    int rc = map && via ? 0 : -1;
    for (int i = 0; !rc && i < rk->nops; i++) {
        const struct mdl_op *op = &rk->ops[i];
        struct deps nd = {0};
        for (int k = 0; k < op->ndeps; k++) {
            int d = op->deps[k];
            const struct deps *src = map[d] >= 0 ? &(struct deps){1, {map[d]}} : &via[d];
            for (int j = 0; j < src->n; j++) {
                int dup = 0;
                for (int q = 0; q < nd.n; q++)
                    dup |= nd.d[q] == src->d[j];
                if (!dup && nd.n < MDL_MAX_DEPS) nd.d[nd.n++] = src->d[j];
            }
        }
        if (mdl_op_is_coll((enum mdl_op_kind)op->kind)) {
            map[i] = -1;
            via[i] = nd;
            continue;
        }
        struct mdl_op c = *op;
        c.ndeps = (uint8_t)nd.n;
        memcpy(c.deps, nd.d, sizeof nd.d);
        c.name = mdl_program_name(out, in->names[op->name]);
        map[i] = c.name < 0 ? -1 : mdl_program_add(out, 0, &c);
        if (map[i] < 0) rc = -1;
    }
    free(map);
    free(via);
    return rc;
}
