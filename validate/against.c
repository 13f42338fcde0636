/* against.c - two recordings of one run, op by op (see against.h). */
#include "validate/against.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/stats.h"
#include "core/trace.h"
#include "validate/recording.h"
#include "common/inputs.h"

/* A recorded op's place for pairing: its iteration (from the aligned first), kind, index. */
struct slot {
    int iter, kind, op;
};

static int by_slot(const void *x, const void *y)
{
    const struct slot *a = x, *b = y;
    if (a->iter != b->iter) return a->iter < b->iter ? -1 : 1;
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
    return (a->op > b->op) - (a->op < b->op);
}

/* 1 + the largest iteration of a recorded op (0 without any): A's count, which its caller marked
 * (B's is rec_mark_iterations' own answer). */
static int iterations(const struct mdl_program *p)
{
    int n = 0;
    for (int k = 0; k < p->nranks; k++)
        for (int i = 0; i < p->ranks[k].nops; i++) {
            const struct mdl_op *o = &p->ranks[k].ops[i];
            if (o->recorded && o->iter + 1 > n) n = o->iter + 1;
        }
    return n;
}

/* The recorded ops of rank rk in iterations first..first+n-1, ordered by iteration, kind and
 * program order, into s (room for every op); returns their count. */
static int slots(const struct mdl_rank *rk, int first, int n, struct slot *s)
{
    int m = 0;
    for (int i = 0; i < rk->nops; i++) {
        const struct mdl_op *o = &rk->ops[i];
        if (!o->recorded || o->iter < first || o->iter >= first + n) continue;
        s[m++] = (struct slot){o->iter - first, o->kind, i};
    }
    qsort(s, (size_t)m, sizeof *s, by_slot);
    return m;
}

/* B's idle gap before each op of rank rk: its start less the latest end of the earlier ops on
 * its stream (1 s for a stream's first op). */
static void gaps(const struct mdl_rank *rk, double *gap)
{
    double last[256];
    for (int s = 0; s < 256; s++)
        last[s] = -1;
    for (int i = 0; i < rk->nops; i++) {
        const struct mdl_op *o = &rk->ops[i];
        if (!o->recorded) continue;
        gap[i] = last[o->stream] < 0 ? 1 : o->rec_start - last[o->stream];
        if (o->rec_end > last[o->stream]) last[o->stream] = o->rec_end;
    }
}

static int same_call(const struct mdl_op *a, const struct mdl_op *b)
{
    double df = fabs(a->flop - b->flop), db = fabs(a->bytes - b->bytes);
    return df <= 1e-9 * fmax(a->flop, b->flop) && db <= 1e-9 * fmax(a->bytes, b->bytes);
}

/* Pairs rank k's slots sa[0..na) of A with sb[0..nb) of B (both sorted by iteration and kind). */
static int pair_rank(struct agn_result *r, int k, const struct mdl_rank *ra, const struct slot *sa,
                     int na, const struct mdl_rank *rb, const struct slot *sb, int nb,
                     const double *gap)
{
    int i = 0, j = 0;
    while (i < na || j < nb) {
        int c = i >= na                    ? 1
                : j >= nb                  ? -1
                : sa[i].iter != sb[j].iter ? sa[i].iter - sb[j].iter
                                           : sa[i].kind - sb[j].kind;
        if (c < 0) {
            r->only_a[sa[i++].kind]++;
            continue;
        }
        if (c > 0) {
            r->only_b[sb[j++].kind]++;
            continue;
        }
        const struct mdl_op *a = &ra->ops[sa[i].op], *b = &rb->ops[sb[j].op];
        if (!same_call(a, b)) {
            r->mismatched++;
        } else {
            if (tps_grow(&r->pairs, &r->cap, r->npairs + 1, sizeof *r->pairs, 256)) return -1;
            r->pairs[r->npairs++] = (struct agn_pair){k,
                                                      sa[i].op,
                                                      sb[j].op,
                                                      a->kind,
                                                      a->rec_end - a->rec_start,
                                                      b->rec_end - b->rec_start,
                                                      gap[sb[j].op]};
        }
        i++, j++;
    }
    return 0;
}

/* Whether pair x counts in class cls, or (kind >= 0) in that kind's row. */
static int selected(const struct agn_pair *x, int cls, int kind)
{
    if (kind >= 0) return x->kind == kind;
    int back = x->gap_s <= REC_HOST_GAP_S;
    return cls == AGN_ALL || (cls == AGN_BACK_TO_BACK) == back;
}

/* Fills *st from the pairs of class cls or kind (v: room for every pair). */
static void summarise(const struct agn_result *r, int cls, int kind, double *v, struct agn_stat *st)
{
    int n = 0, m;
    st->max_abs_s = 0;
    for (int p = 0; p < r->npairs; p++) {
        const struct agn_pair *x = &r->pairs[p];
        if (!selected(x, cls, kind)) continue;
        v[n++] = x->a_s - x->b_s;
        st->max_abs_s = fmax(st->max_abs_s, fabs(x->a_s - x->b_s));
    }
    st->n = n;
    tps_median_max(v, n, &st->median_s, NULL);
    m = 0;
    for (int p = 0; p < r->npairs; p++) {
        const struct agn_pair *x = &r->pairs[p];
        if (selected(x, cls, kind) && x->b_s > 0) v[m++] = (x->a_s - x->b_s) / x->b_s * 100;
    }
    tps_median_max(v, m, &st->median_pct, NULL);
}

int agn_compare(const struct mdl_program *a, const char *b_dir, struct agn_result *r,
                struct tps_error *err)
{
    memset(r, 0, sizeof *r);
    char buf[1200];
    const char *dir = trace_dir_resolve(b_dir, buf, sizeof buf);
    snprintf(r->against, sizeof r->against, "%s", dir);
    struct mdl_program b;
    int ib = 0, rc = trace_read(dir, &b, NULL, 0, err);
    if (!rc && (ib = rec_mark_iterations(&b)) < 0) rc = tps_error_oom(err);
    if (!rc) {
        r->b_ranks = b.nranks;
        for (int k = 0; k < b.nranks; k++)
            for (int i = 0; i < b.ranks[k].nops; i++)
                r->b_recorded += b.ranks[k].ops[i].recorded;
        if (!r->b_recorded)
            rc = tps_error_set(err, TPS_EINVAL, dir, 0, 0, "rec_start",
                               "the trace has no recorded times: nothing to compare with");
    }
    int ia = iterations(a);
    r->niters = ia < ib ? ia : ib;
    r->a_first = ia - r->niters;
    r->b_first = ib - r->niters;
    int ranks = a->nranks < b.nranks ? a->nranks : b.nranks;
    for (int k = 0; !rc && k < ranks; k++) {
        const struct mdl_rank *ra = &a->ranks[k], *rb = &b.ranks[k];
        struct slot *sa = malloc(((size_t)ra->nops + 1) * sizeof *sa);
        struct slot *sb = malloc(((size_t)rb->nops + 1) * sizeof *sb);
        double *gap = calloc((size_t)rb->nops + 1, sizeof *gap);
        if (!sa || !sb || !gap) rc = tps_error_oom(err);
        if (!rc) {
            int na = slots(ra, r->a_first, r->niters, sa),
                nb = slots(rb, r->b_first, r->niters, sb);
            gaps(rb, gap);
            if (pair_rank(r, k, ra, sa, na, rb, sb, nb, gap)) rc = tps_error_oom(err);
        }
        free(sa);
        free(sb);
        free(gap);
    }
    mdl_program_release(&b);
    if (rc) return rc;
    double *v = malloc(((size_t)r->npairs + 1) * sizeof *v);
    if (!v) return tps_error_oom(err);
    for (int c = 0; c < AGN_NCLASS; c++)
        summarise(r, c, -1, v, &r->cls[c]);
    for (int k = 0; k < MDL_OP_NKINDS; k++)
        summarise(r, AGN_ALL, k, v, &r->kind[k]);
    free(v);
    return TPS_OK;
}

void agn_release(struct agn_result *r)
{
    free(r->pairs);
    memset(r, 0, sizeof *r);
}

int agn_write(const struct agn_result *r, const char *path, struct tps_error *err)
{
    if (tps_output_check(path, err)) return TPS_EINVAL;
    FILE *f = fopen(path, "w");
    if (!f)
        return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write: %s", strerror(errno));
    fprintf(f, "# rank a_op b_op kind a_s b_s gap_s (A: the trace, B: %s)\n", r->against);
    for (int p = 0; p < r->npairs; p++) {
        const struct agn_pair *x = &r->pairs[p];
        fprintf(f, "%d %d %d %s %.9g %.9g %.9g\n", x->rank, x->a_op, x->b_op,
                mdl_op_kind_name((enum mdl_op_kind)x->kind), x->a_s, x->b_s, x->gap_s);
    }
    if (fclose(f) != 0) return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write");
    return TPS_OK;
}
