/* calibrate.c - platform fit to one or several nccl-tests logs (see calibrate.h). Calls GSL's
 * gsl_fit_wlinear (one log's protocol ranges) and gsl_multifit_wlinear (the joint lines).
 * Units: bytes, seconds, bytes/s. */
#include "calibrate.h"

#include <gsl/gsl_fit.h>
#include <gsl/gsl_multifit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/stats.h"
#include "core/tune.h"
#include "platforms/spec.h"

/* Builds the preset with its parameters, `param` replaced by value (bytes/s) when value > 0,
 * or by 0 seconds when value is 0 and param is a latency. */
static int build(const struct cal_options *o, const char *param, double value, struct plat_topo *t,
                 struct tps_error *err)
{
    int is_lat = strstr(param, "latency") != NULL;
    char **kv = malloc(((size_t)o->nkv + 1) * sizeof *kv);
    char extra[64];
    if (!kv) return tps_error_oom(err);
    int n = 0;
    size_t plen = strlen(param);
    for (int i = 0; i < o->nkv; i++)
        if (!(plen && !strncmp(o->kv[i], param, plen) && o->kv[i][plen] == '=')) kv[n++] = o->kv[i];
    if (is_lat) {
        snprintf(extra, sizeof extra, "%s=%.9gus", param, value * 1e6);
        kv[n++] = extra;
    } else if (value > 0) {
        snprintf(extra, sizeof extra, "%s=%.9gGB/s", param, value / 1e9);
        kv[n++] = extra;
    }
    int rc = plat_spec_from_args(o->preset, n, kv, t, err);
    free(kv);
    return rc;
}

/* The bandwidth parameter bounding a collective over ranks 0..n-1, and its current value. */
static void pick_param(const struct plat_topo *t, int n, char *name, double *value, char *lname,
                       double *lat)
{
    int spans = 0;
    for (int r = 1; r < n && r < t->ngpus; r++)
        spans |= t->nodes[t->gpu_node[r]].machine != t->nodes[t->gpu_node[0]].machine;
    const char *pn = spans ? "nic_rate" : !strncmp(t->name, "dgx-", 4) ? "gpu_link" : "pcie_rate";
    snprintf(name, 16, "%s", pn);
    snprintf(lname, 16, "%s",
             spans          ? "net_latency"
             : pn[0] == 'g' ? "nvlink_latency"
                            : "pcie_latency");
    *value = 0;
    for (int l = 0; l < t->nlinks && *value == 0; l++) {
        const struct plat_link *k = &t->links[l];
        int ka = t->nodes[k->a].kind, kb = t->nodes[k->b].kind;
        if ((spans && k->level == PLAT_LVL_NET && (ka == PLAT_NIC || kb == PLAT_NIC)) ||
            (!spans && pn[0] == 'g' && k->level == PLAT_LVL_NVLINK) ||
            (!spans && pn[0] == 'p' && k->level == PLAT_LVL_PCIE &&
             (ka == PLAT_GPU || kb == PLAT_GPU))) {
            *value = k->bw_Bps;
            *lat = k->lat_s;
        }
    }
}

/* Bandwidth-only and latency-only closed forms on a platform. */
struct model {
    struct tune_group_env ge;
    int ready;
};

static double bw_time(const struct model *m, int op, int algo, double S)
{
    struct mdl_nccl nc;
    mdl_nccl_default(&nc);
    struct mdl_coll_env e;
    tune_coll_env(&m->ge, &nc, MDL_PROTO_SIMPLE, &e);
    e.base_s = 0;
    e.all.alpha_s = e.intra.alpha_s = e.inter.alpha_s = 0;
    e.all.ring_alpha_s = e.intra.ring_alpha_s = e.inter.ring_alpha_s = 0;
    e.chan.alpha_s = e.chan.ring_alpha_s = 0;
    e.heads.alpha_s = e.heads.ring_alpha_s = 0;
    return mdl_coll_time((enum mdl_op_kind)op, (enum mdl_coll_algo)algo, S, &e);
}

static double lat_time(const struct model *m, int op, int algo, double hop)
{
    struct mdl_nccl nc;
    mdl_nccl_default(&nc);
    nc.hop_s[MDL_PROTO_SIMPLE] = hop;
    struct mdl_coll_env e;
    tune_coll_env(&m->ge, &nc, MDL_PROTO_SIMPLE, &e);
    e.base_s = 0;
    return mdl_coll_time((enum mdl_op_kind)op, (enum mdl_coll_algo)algo, 0, &e);
}

/* m's closed forms for a collective over GPUs 0..n-1 of t. */
static int model_build(struct model *m, const struct plat_topo *t, int n, struct tps_error *err)
{
    int *ranks = malloc((size_t)n * sizeof *ranks);
    if (!ranks) return tps_error_oom(err);
    for (int i = 0; i < n; i++)
        ranks[i] = i;
    struct mdl_group g = {.n = n, .ranks = ranks};
    int rc = tune_group_env(t, &g, &m->ge, err);
    m->ready = !rc;
    free(ranks);
    return rc;
}

static void model_release(struct model *m)
{
    if (m->ready) tune_group_env_release(&m->ge);
    m->ready = 0;
}

struct seg_fit {
    double c0, c1, rss;
    int ok;
};

/* Weighted fit of y = c0 + c1 x over rows [a, b). */
static struct seg_fit fit(const double *x, const double *y, const double *w, int a, int b)
{
    struct seg_fit f = {0};
    if (b - a < 2) return f;
    double cov00, cov01, cov11;
    gsl_fit_wlinear(x + a, 1, w + a, 1, y + a, 1, (size_t)(b - a), &f.c0, &f.c1, &cov00, &cov01,
                    &cov11, &f.rss);
    f.ok = f.c1 > 0 && isfinite(f.rss);
    return f;
}

/* Prefix sums of w, wx, wy, wxx, wxy, wyy over rows [0, i): any range's weighted fit in O(1),
 * so that trying every split of the rows costs O(n^2), not O(n^3). Centred sums in long double
 * keep the residual accurate. */
struct prefix {
    long double w, wx, wy, wxx, wxy, wyy;
};

static void prefix_build(const double *x, const double *y, const double *w, int n, struct prefix *P)
{
    P[0] = (struct prefix){0};
    for (int i = 0; i < n; i++) {
        long double a = w[i], b = x[i], c = y[i];
        P[i + 1] =
            (struct prefix){P[i].w + a,           P[i].wx + a * b,      P[i].wy + a * c,
                            P[i].wxx + a * b * b, P[i].wxy + a * b * c, P[i].wyy + a * c * c};
    }
}

/* The same fit as fit(), over rows [a, b), from the prefix sums. */
static struct seg_fit fit_prefix(const struct prefix *P, int a, int b)
{
    struct seg_fit f = {0};
    if (b - a < 2) return f;
    long double W = P[b].w - P[a].w, mx = (P[b].wx - P[a].wx) / W, my = (P[b].wy - P[a].wy) / W;
    long double sxx = P[b].wxx - P[a].wxx - W * mx * mx;
    long double sxy = P[b].wxy - P[a].wxy - W * mx * my;
    long double syy = P[b].wyy - P[a].wyy - W * my * my;
    if (!(sxx > 0)) return f;
    long double c1 = sxy / sxx;
    f.c1 = (double)c1;
    f.c0 = (double)(my - c1 * mx);
    f.rss = (double)fmaxl(syy - c1 * sxy, 0);
    f.ok = f.c1 > 0 && isfinite(f.rss);
    return f;
}

/* The wire formats bound what LL and LL128 deliver: LL carries at most 4 data bytes in 8,
 * LL128 120 in 128; much lower values are noise in latency-bound rows. Bounds on 1 / eff. */
static const double inv_eff_lo[MDL_PROTO_N] = {[MDL_PROTO_LL] = 2, [MDL_PROTO_LL128] = 128.0 / 120};
static const double inv_eff_hi[MDL_PROTO_N] = {[MDL_PROTO_LL] = 10, [MDL_PROTO_LL128] = 2.5};

/* Rows with bytes to move: nccl-tests times 0-byte calls, which return at once. */
static int sized_rows(const struct ncl_log *l)
{
    int m = 0;
    for (int i = 0; i < l->nrows; i++)
        m += l->rows[i].bytes > 0;
    return m;
}

/* One log in the closed form's terms. */
struct design {
    struct model m0, m2, mz; /* the platform; its fitted rate raised; its fitted latency at 0 */
    int n;
    double *dfix, *dvar; /* per row: bandwidth time on other links / on the fitted links, s */
    double *t, *w;       /* measured time, s; weight 1 / t^2 */
    int *row;            /* the log's row of each row here (rows of 0 bytes are left out) */
    double steps;        /* latency steps: d time / d per-step latency */
    double lfix, lvar;   /* route latency on other links / on the fitted latency's links, s */
    int b1, b2;          /* LL rows [0, b1), LL128 [b1, b2), Simple [b2, n) */
    int g;               /* the rate parameter the log is bound by: 0 or 1 (a fit across groups) */
    int lo;              /* rows [0, lo) are left out of the fit */
    double route;        /* across groups: the route latency taken off the times first, s */
};

static void design_release(struct design *d)
{
    model_release(&d->m0);
    model_release(&d->m2);
    model_release(&d->mz);
    free(d->dfix);
    free(d->row);
}

/* Prices every row of in's log on the three platforms with algorithm algo (eps: how far t2's
 * rate was raised). */
static int design_build(struct design *d, const struct cal_input *in, const struct plat_topo *t0,
                        const struct plat_topo *t2, const struct plat_topo *tz, int algo,
                        double eps, struct tps_error *err)
{
    int n = d->n = sized_rows(in->log), rc = 0;
    d->dfix = calloc((size_t)n * 4, sizeof *d->dfix);
    d->row = malloc((size_t)n * sizeof *d->row);
    if (!d->dfix || !d->row) return tps_error_oom(err);
    d->dvar = d->dfix + n;
    d->t = d->dfix + 2 * n;
    d->w = d->dfix + 3 * n;
    rc = model_build(&d->m0, t0, in->ranks, err);
    if (!rc) rc = model_build(&d->m2, t2, in->ranks, err);
    if (!rc) rc = model_build(&d->mz, tz, in->ranks, err);
    for (int i = 0, j = 0; j < in->log->nrows; j++)
        if (in->log->rows[j].bytes > 0) d->row[i++] = j;
    for (int i = 0; !rc && i < n; i++) {
        double S = in->log->rows[d->row[i]].bytes;
        double d0 = bw_time(&d->m0, in->op, algo, S) - bw_time(&d->m0, in->op, algo, 0);
        double d2 = bw_time(&d->m2, in->op, algo, S) - bw_time(&d->m2, in->op, algo, 0);
        if (!(d0 >= 0))
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "algorithm",
                                 "algorithm '%s' cannot run %s over %d ranks on this platform",
                                 mdl_algo_name((enum mdl_coll_algo)algo),
                                 mdl_op_kind_name((enum mdl_op_kind)in->op), in->ranks);
        d->dvar[i] = (d0 - d2) * (1 + eps) / eps;
        d->dfix[i] = d0 - d->dvar[i];
        d->t[i] = in->log->rows[d->row[i]].time_us * 1e-6;
        d->w[i] = 1 / (d->t[i] * d->t[i]);
    }
    if (rc) return rc;
    double h = 1e-6, l0 = lat_time(&d->m0, in->op, algo, 0);
    d->steps = (lat_time(&d->m0, in->op, algo, h) - l0) / h;
    d->lfix = lat_time(&d->mz, in->op, algo, 0);
    d->lvar = l0 - d->lfix;
    return 0;
}

/* Splits d's rows into an LL, an LL128 and a Simple range: every split is tried, each range
 * fitted on its own (Simple first: it gives the rate), and the best information criterion wins.
 * x, y: n scratch values; P: n + 1. Returns 0, or -1 when no split fits. */
static int segment(struct design *d, double *x, double *y, struct prefix *P)
{
    int n = d->n;
    double best = INFINITY;
    for (int i2 = 0; i2 <= n - 3; i2++) {
        for (int i = i2; i < n; i++) {
            x[i] = d->dvar[i];
            y[i] = d->t[i] - d->dfix[i];
        }
        struct seg_fit fs = fit(x, y, d->w, i2, n);
        if (!fs.ok) continue;
        for (int i = 0; i < i2; i++) {
            x[i] = d->dfix[i] + d->dvar[i] * fs.c1;
            y[i] = d->t[i];
        }
        prefix_build(x, y, d->w, i2, P);
        for (int i1 = 0; i1 <= i2; i1++) {
            if (i1 == 1 || i2 - i1 == 1) continue; /* a range is empty or has 2+ rows */
            struct seg_fit fl = fit_prefix(P, 0, i1), fm = fit_prefix(P, i1, i2);
            if ((i1 && (!fl.ok || fl.c1 < inv_eff_lo[MDL_PROTO_LL] ||
                        fl.c1 > inv_eff_hi[MDL_PROTO_LL])) ||
                (i2 > i1 && (!fm.ok || fm.c1 < inv_eff_lo[MDL_PROTO_LL128] - 1e-6 ||
                             fm.c1 > inv_eff_hi[MDL_PROTO_LL128])))
                continue;
            int k = 2 + (i1 ? 2 : 0) + (i2 > i1 ? 2 : 0);
            double rss = fs.rss + fl.rss + fm.rss;
            double crit = n * log(rss / n + 1e-12) + 2 * k;
            if (crit < best - 1e-9) {
                best = crit;
                d->b1 = i1;
                d->b2 = i2;
            }
        }
    }
    return isfinite(best) ? 0 : -1;
}

static int first_row(const struct design *d, int p)
{
    return p == MDL_PROTO_LL ? d->lo : p == MDL_PROTO_LL128 ? d->b1 : d->b2;
}
static int last_row(const struct design *d, int p)
{
    return p == MDL_PROTO_LL ? d->b1 : p == MDL_PROTO_LL128 ? d->b2 : d->n;
}

/* One protocol's line over its rows of every log: y = base + steps * h + c * x, with y = t - dfix
 * and x = dvar for Simple (c = 1 / rate factor: c[g] for the logs bound by rate parameter g),
 * y = t and x = dfix + dvar / sigma[g] for LL and LL128 (c = 1 / efficiency, one for all). Across
 * groups every log's route latency is taken off y first. A coefficient is free unless held. */
struct line {
    double base, h, c, c1; /* c1: Simple's c of the second group */
    int hold_base, hold_h, hold_c;
    int hold_rate[2]; /* Simple: the group's rate is kept (c or c1 at 1) */
    int nrows;
};

/* The slope protocol p's line gives the rows of d: Simple's of d's group, else the one of all. */
static double line_c(const struct line *L, const struct design *d, int p)
{
    return p == MDL_PROTO_SIMPLE && d->g ? L->c1 : L->c;
}

/* Row i of d on protocol p's line: the x of its slope. */
static double line_x(const struct design *d, int i, int p, const double *sigma)
{
    return p == MDL_PROTO_SIMPLE ? d->dvar[i] : d->dfix[i] + d->dvar[i] / sigma[d->g];
}

/* Weighted least squares (GSL gsl_multifit_wlinear) of the line's free coefficients over the
 * rows of protocol p in every design. X, Y, W: scratch of at least 3 x rows, rows, rows. */
static int line_fit(const struct design *ds, int nd, int ng, int p, const double *sigma,
                    struct line *L, double *X, double *Y, double *W)
{
    int simple = p == MDL_PROTO_SIMPLE, two = simple && ng > 1; /* a rate per group */
    int free0 = !L->hold_c && !(simple && L->hold_rate[0]);
    int free1 = !L->hold_c && two && !L->hold_rate[1];
    int m = 0, np = !L->hold_base + !L->hold_h + free0 + free1;
    for (int k = 0; k < nd; k++) {
        const struct design *d = &ds[k];
        for (int i = first_row(d, p); i < last_row(d, p); i++) {
            double x = line_x(d, i, p, sigma);
            double y = (p == MDL_PROTO_SIMPLE ? d->t[i] - d->dfix[i] : d->t[i]) - d->route;
            /* held coefficients move to the left-hand side */
            int kept = simple && L->hold_rate[d->g];
            y -= (L->hold_base ? L->base : 0) + (L->hold_h ? d->steps * L->h : 0) +
                 (L->hold_c || kept ? line_c(L, d, p) * x : 0);
            int j = 0;
            if (!L->hold_base) X[m * np + j++] = 1;
            if (!L->hold_h) X[m * np + j++] = d->steps;
            if (free0) X[m * np + j++] = d->g ? 0 : x;
            if (free1) X[m * np + j++] = d->g ? x : 0;
            Y[m] = y;
            W[m] = d->w[i];
            m++;
        }
    }
    L->nrows = m;
    if (np == 0) return 0;
    if (m < np) return -1;
    gsl_matrix_const_view Xv = gsl_matrix_const_view_array(X, (size_t)m, (size_t)np);
    gsl_vector_const_view Yv = gsl_vector_const_view_array(Y, (size_t)m);
    gsl_vector_const_view Wv = gsl_vector_const_view_array(W, (size_t)m);
    gsl_vector *c = gsl_vector_alloc((size_t)np);
    gsl_matrix *cov = gsl_matrix_alloc((size_t)np, (size_t)np);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc((size_t)m, (size_t)np);
    double chisq;
    int rc = c && cov && ws
                 ? gsl_multifit_wlinear(&Xv.matrix, &Wv.vector, &Yv.vector, c, cov, &chisq, ws)
                 : -1;
    if (!rc) {
        int j = 0;
        if (!L->hold_base) L->base = gsl_vector_get(c, (size_t)j++);
        if (!L->hold_h) L->h = gsl_vector_get(c, (size_t)j++);
        if (free0) L->c = gsl_vector_get(c, (size_t)j++);
        if (free1) L->c1 = gsl_vector_get(c, (size_t)j++);
    }
    gsl_vector_free(c);
    gsl_matrix_free(cov);
    gsl_multifit_linear_free(ws);
    return rc ? -1 : 0;
}

/* Fits protocol p's line, holding what the data cannot carry: a slope outside the wire format's
 * bounds (held at the bound), a negative per-step latency or too few rows for it (held at
 * h_model) and, when the steps vary, a negative base (held at 0). With one step count (`vary`
 * 0) there is no per-step slope: h is held at h_one (0: base is the whole intercept, as with one
 * log; across groups the model's hop latency, the routes being off the times). */
static int line_solve(const struct design *ds, int nd, int ng, int p, const double *sigma, int vary,
                      double h_one, double h_model, struct line *L, double *X, double *Y, double *W)
{
    int held[2] = {L->hold_rate[0], L->hold_rate[1]};
    *L = (struct line){.h = vary ? h_model : h_one,
                       .hold_h = !vary,
                       .c = 1,
                       .c1 = 1,
                       .hold_rate = {held[0], held[1]}};
    for (int tries = 0; tries < 4; tries++) {
        if (line_fit(ds, nd, ng, p, sigma, L, X, Y, W)) {
            if (L->hold_h) return -1;
            L->hold_h = 1; /* too few rows for a slope per step */
            L->h = h_model;
            continue;
        }
        if (!L->hold_c && p != MDL_PROTO_SIMPLE &&
            (L->c < inv_eff_lo[p] - 1e-6 || L->c > inv_eff_hi[p])) {
            L->c = fmin(fmax(L->c, inv_eff_lo[p]), inv_eff_hi[p]);
            L->hold_c = 1;
            continue;
        }
        if (!L->hold_h && L->h < 0) {
            L->h = h_model;
            L->hold_h = 1;
            continue;
        }
        if (vary && !L->hold_base && L->base < 0) {
            L->base = 0;
            L->hold_base = 1;
            continue;
        }
        break;
    }
    return L->c > 0 && (p != MDL_PROTO_SIMPLE || ng < 2 || L->c1 > 0) ? 0 : -1;
}

/* Row i of d as protocol p's line prices it, s. */
static double line_time(const struct design *d, int i, int p, const struct line *L,
                        const double *sigma)
{
    return L->base + d->steps * L->h + line_c(L, d, p) * line_x(d, i, p, sigma) + d->route +
           (p == MDL_PROTO_SIMPLE ? d->dfix[i] : 0);
}

/* Moves each log's protocol ranges to the split its rows fit best under the joint lines (the
 * weighted squared residual, as the lines were fitted on); protocols without a line get no rows,
 * and a range has no rows or 3 and more (fewer cannot carry a line of its own).
 * r: 3 x (n + 1) scratch. Returns how many logs changed. */
static int resegment(struct design *ds, int nd, const struct line *L, const double *sigma,
                     double *r)
{
    int changed = 0;
    for (int k = 0; k < nd; k++) {
        struct design *d = &ds[k];
        int n = d->n;
        if (d->lo) continue; /* its range is fixed */
        double *c[MDL_PROTO_N] = {NULL, r, r + n + 1, r + 2 * (n + 1)};
        for (int p = MDL_PROTO_LL; p < MDL_PROTO_N; p++) {
            c[p][0] = 0;
            for (int i = 0; i < n; i++) {
                double e = d->t[i] - line_time(d, i, p, &L[p], sigma);
                c[p][i + 1] = L[p].nrows ? c[p][i] + d->w[i] * e * e : 0;
            }
        }
        double best = INFINITY;
        int b1 = d->b1, b2 = d->b2;
        for (int i2 = 0; i2 <= n - 3; i2++) /* Simple keeps 3 rows or more */
            for (int i1 = 0; i1 <= i2; i1++) {
                if ((i1 && i1 < 3) || (i2 > i1 && i2 - i1 < 3) || (i1 && !L[MDL_PROTO_LL].nrows) ||
                    (i2 > i1 && !L[MDL_PROTO_LL128].nrows))
                    continue;
                double s = (i1 ? c[MDL_PROTO_LL][i1] : 0) +
                           (i2 > i1 ? c[MDL_PROTO_LL128][i2] - c[MDL_PROTO_LL128][i1] : 0) +
                           c[MDL_PROTO_SIMPLE][n] - c[MDL_PROTO_SIMPLE][i2];
                if (s < best * (1 - 1e-12)) { /* INFINITY stays INFINITY */
                    best = s;
                    b1 = i1;
                    b2 = i2;
                }
            }
        if (isfinite(best) && (b1 != d->b1 || b2 != d->b2)) {
            d->b1 = b1;
            d->b2 = b2;
            changed++;
        }
    }
    return changed;
}

int cal_fit(const struct cal_input *in, int nin, const struct cal_options *o, struct cal_result *r,
            struct tps_error *err)
{
    memset(r, 0, sizeof *r);
    if (nin < 1 || nin > CAL_MAX_LOGS)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, NULL,
                             "calibration takes 1 to %d logs, got %d", CAL_MAX_LOGS, nin);
    int total = 0, maxn = 0;
    for (int k = 0; k < nin; k++) {
        int m = sized_rows(in[k].log);
        maxn = m > maxn ? m : maxn;
        if (m < 3)
            return tps_error_set(err, TPS_EINVAL, in[k].log->path, 0, 0, NULL,
                                 "calibration needs at least 3 rows of more than 0 bytes, the "
                                 "log has %d",
                                 m);
        total += m;
    }
    struct plat_topo t0, t2[2], tz[2];
    for (int g = 0; g < 2; g++) {
        plat_topo_init(&t2[g], "");
        plat_topo_init(&tz[g], "");
    }
    int rc = build(o, "", 0, &t0, err);
    struct design ds[CAL_MAX_LOGS];
    memset(ds, 0, sizeof ds);
    for (int k = 0; !rc && k < nin; k++) {
        char pn[16], ln[16];
        double pv = 0, lv = 0;
        if (in[k].ranks < 2 || in[k].ranks > t0.ngpus) {
            rc = tps_error_set(err, TPS_EINVAL, in[k].log->path, 0, 0, "ranks",
                               "the log has %d ranks, the platform %d GPUs", in[k].ranks, t0.ngpus);
            break;
        }
        pick_param(&t0, in[k].ranks, pn, &pv, ln, &lv);
        if (k == 0) {
            memcpy(r->param, pn, sizeof r->param);
            memcpy(r->lat_param, ln, sizeof r->lat_param);
            r->param_old = pv;
            r->lat_old = lv;
            r->ngroups = 1;
        } else if (!strcmp(pn, r->param)) {
            ds[k].g = 0;
        } else if (r->ngroups == 1 || !strcmp(pn, r->param2)) {
            /* a second group: inside the machine and across machines (one platform, several
             * node counts), each with its own rate, sharing the protocols */
            if (r->ngroups == 1) {
                memcpy(r->param2, pn, sizeof r->param2);
                memcpy(r->lat_param2, ln, sizeof r->lat_param2);
                r->param2_old = pv;
                r->ngroups = 2;
            }
            ds[k].g = 1;
        } else {
            rc = tps_error_set(err, TPS_EINVAL, in[k].log->path, 0, 0, NULL,
                               "this log is bound by %s, %s by %s and another by %s: a joint fit "
                               "takes two of them at most, calibrate them apart",
                               pn, in[0].log->path, r->param, r->param2);
        }
    }
    if (!rc) {
        r->lat_new = r->lat_old;
        r->nccl = t0.nccl;
    }
    /* a small step: a doubled rate could move the bottleneck to another link */
    const double eps = 1e-3;
    for (int g = 0; !rc && g < r->ngroups; g++) {
        plat_topo_release(&t2[g]);
        rc = build(o, g ? r->param2 : r->param, (1 + eps) * (g ? r->param2_old : r->param_old),
                   &t2[g], err);
        if (!rc) {
            plat_topo_release(&tz[g]);
            rc = build(o, g ? r->lat_param2 : r->lat_param, 0, &tz[g], err);
        }
    }
    r->algo = o->algo;
    r->forced = o->algo != 0;
    if (!rc && !r->algo) { /* the tuner's choice for the first log's largest size */
        struct model m = {0};
        enum mdl_coll_algo a = MDL_ALGO_AUTO;
        enum mdl_coll_proto p = MDL_PROTO_SIMPLE;
        rc = model_build(&m, &t0, in[0].ranks, err);
        if (!rc && tune_choose(&m.ge, &t0.nccl, (enum mdl_op_kind)in[0].op,
                               in[0].log->rows[in[0].log->nrows - 1].bytes, &a, &p, err) < 0)
            rc = err->code;
        /* NVLS moves the bytes at its own efficiency over the same links: the links and the
         * protocols are fitted on the ring NCCL runs beside it (nvls_efficiency stays) */
        r->algo = a == MDL_ALGO_NVLS ? MDL_ALGO_RING : a;
        model_release(&m);
    }
    double *scratch = malloc(((size_t)2 * maxn + (size_t)6 * total) * sizeof *scratch);
    struct prefix *P = malloc(((size_t)maxn + 1) * sizeof *P);
    if (!rc && (!scratch || !P)) rc = tps_error_oom(err);
    int mixed = r->ngroups > 1, hold[2] = {0, 0};
    if (!rc && o->hold) {
        hold[0] = !strcmp(o->hold, r->param);
        hold[1] = mixed && !strcmp(o->hold, r->param2);
        r->held = hold[0] ? 1 : hold[1] ? 2 : 0;
        if (!r->held)
            rc = tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "hold",
                               "--hold %s: the logs are bound by %s%s%s, the rates a fit can keep",
                               o->hold, r->param, mixed ? " and " : "", mixed ? r->param2 : "");
        else if (!mixed)
            rc = tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "hold",
                               "--hold %s: with one rate to fit there is nothing left to fit it "
                               "on; --hold keeps one of two rates (logs inside one machine and "
                               "across machines together)",
                               o->hold);
    }
    for (int k = 0; !rc && k < nin; k++) {
        rc = design_build(&ds[k], &in[k], &t0, &t2[ds[k].g], &tz[ds[k].g], r->algo, eps, err);
        if (!rc && segment(&ds[k], scratch, scratch + maxn, P))
            rc = tps_error_set(err, TPS_EINVAL, in[k].log->path, 0, 0, NULL,
                               "no fit: the times do not grow with size as a collective's do");
        /* across groups the routes differ per log (NVLink inside, the network across): each
         * log's own route latency comes off its times, the link latencies stay the platform's */
        if (!rc && mixed) ds[k].route = ds[k].lfix + ds[k].lvar;
        /* across machines only the Simple rows: NCCL's small messages there run trees, whose
         * latency a ring's closed form does not describe */
        if (!rc && mixed && ds[k].g) ds[k].lo = ds[k].b1 = ds[k].b2;
    }
    /* the per-step latency can be told from the base only when the logs' step counts differ */
    double smin = INFINITY, smax = -INFINITY, rfix = 0, rvar = 0;
    for (int k = 0; !rc && k < nin; k++) {
        smin = fmin(smin, ds[k].steps);
        smax = fmax(smax, ds[k].steps);
        if (ds[k].steps > 0) {
            rfix += ds[k].lfix / ds[k].steps / nin;
            rvar += ds[k].lvar / ds[k].steps / nin;
        }
    }
    int vary = !rc && smax - smin > 0.5;
    r->joint_steps = vary;
    struct line L[MDL_PROTO_N] = {{0}};
    double *X = scratch + 2 * maxn, *Y = X + 4 * total, *W = Y + total, sigma[2] = {1, 1};
    /* fit the lines on the ranges; with several logs, move the ranges to where the joint lines
     * fit them best and fit again, until the ranges stay (each round lowers the residual) */
    for (int round = 0; !rc && round < 20; round++) {
        for (int p = MDL_PROTO_N - 1; !rc && p >= MDL_PROTO_LL; p--) { /* Simple first: rate */
            int rows = 0;
            for (int k = 0; k < nin; k++)
                rows += last_row(&ds[k], p) - first_row(&ds[k], p);
            L[p] = (struct line){.hold_rate = {hold[0], hold[1]}};
            if (!rows) continue;
            /* across groups the routes are off the times: the per-step latency is the hop's,
             * held at 0 when the data put it below */
            double h_model = r->nccl.hop_s[p] + rfix + rvar;
            if (line_solve(ds, nin, r->ngroups, p, sigma, vary, mixed ? r->nccl.hop_s[p] : 0,
                           mixed ? 0 : h_model, &L[p], X, Y, W))
                rc = tps_error_set(err, TPS_EINVAL, in[0].log->path, 0, 0, NULL,
                                   "no fit of the %s rows", mdl_proto_name(p));
            else if (p == MDL_PROTO_SIMPLE) {
                sigma[0] = 1 / L[p].c;
                sigma[1] = mixed ? 1 / L[p].c1 : 1;
            }
        }
        if (rc || nin == 1 || !resegment(ds, nin, L, sigma, X)) break;
    }
    if (!rc) {
        r->param_new = r->param_old * sigma[0];
        r->param2_new = r->param2_old * sigma[1];
        /* if the routes alone take longer than a protocol's latency, shorten their links (not
         * across groups: there the routes were taken off and the latencies stay) */
        double lambda = 1, steps = ds[0].steps, lfix = ds[0].lfix, lvar = ds[0].lvar;
        for (int p = MDL_PROTO_LL; p < MDL_PROTO_N && !mixed; p++) {
            if (!L[p].nrows) continue;
            if (vary && rvar > 0)
                lambda = fmin(lambda, (L[p].h - rfix) / rvar);
            else if (!vary && lvar > 0)
                lambda = fmin(lambda, (L[p].base - lfix - steps * r->nccl.hop_s[p]) / lvar);
        }
        lambda = fmax(lambda, 0);
        r->lat_new = r->lat_old * lambda;
        for (int p = MDL_PROTO_LL; p < MDL_PROTO_N; p++) {
            if (!L[p].nrows) { /* no rows: the protocol was not seen, disable it */
                r->nccl.eff[p] = 0;
                continue;
            }
            r->nccl.eff[p] = p == MDL_PROTO_SIMPLE ? 1 : 1 / L[p].c;
            if (mixed) {
                r->nccl.base_s[p] = L[p].base;
                r->nccl.hop_s[p] = fmax(0, L[p].h);
                continue;
            }
            if (vary) {
                r->nccl.base_s[p] = L[p].base;
                r->nccl.hop_s[p] = fmax(0, L[p].h - rfix - lambda * rvar);
                continue;
            }
            double l0 = lfix + lvar * lambda, base = L[p].base - l0 - steps * r->nccl.hop_s[p];
            if (base >= 0) {
                r->nccl.base_s[p] = base;
            } else { /* the steps alone exceed the intercept: lower the per-step latency */
                r->nccl.base_s[p] = 0;
                r->nccl.hop_s[p] = steps > 0 ? fmax(0, (L[p].base - l0) / steps) : 0;
            }
        }
        /* each row as the written platform's closed form prices it */
        double *all = X, *e = Y;
        int m = 0;
        r->nlogs = nin;
        for (int k = 0; k < nin; k++) {
            const struct design *d = &ds[k];
            struct cal_log_fit *lf = &r->logs[k];
            lf->steps = d->steps;
            int mk = 0;
            for (int i = d->lo; i < d->n; i++) {
                int p = i < d->b1 ? MDL_PROTO_LL : i < d->b2 ? MDL_PROTO_LL128 : MDL_PROTO_SIMPLE;
                double x = d->dfix[i] + d->dvar[i] / sigma[d->g];
                double pred = r->nccl.base_s[p] + d->lfix + lambda * d->lvar +
                              d->steps * r->nccl.hop_s[p] + x / r->nccl.eff[p];
                e[mk++] = all[m++] = fabs(pred - d->t[i]) / d->t[i] * 100;
            }
            for (int p = MDL_PROTO_LL; p < MDL_PROTO_N; p++) {
                int a = first_row(d, p), b = last_row(d, p);
                lf->first[p] = a < b ? d->row[a] : 0;
                lf->last[p] = a < b ? d->row[b - 1] + 1 : 0;
            }
            tps_median_max(e, mk, &lf->median_err, &lf->max_err);
            lf->nrows = mk;
        }
        tps_median_max(all, m, &r->median_err, &r->max_err);
        r->nrows = m;
    }
    for (int k = 0; k < nin; k++)
        design_release(&ds[k]);
    free(scratch);
    free(P);
    plat_topo_release(&t0);
    for (int g = 0; g < 2; g++) {
        plat_topo_release(&t2[g]);
        plat_topo_release(&tz[g]);
    }
    return rc;
}

int cal_write(const struct cal_result *r, const struct cal_options *o, const struct cal_input *in,
              int nin, FILE *f)
{
    const char *algo = mdl_algo_name((enum mdl_coll_algo)r->algo);
    if (nin == 1) {
        const struct cal_log_fit *lf = &r->logs[0];
        fprintf(f, "# Calibrated by `tpsim calibrate` from %s\n", in[0].log->path);
        fprintf(f,
                "# (%s over %d ranks, closed form of the %s algorithm; %d rows, fit error median "
                "%.2f%%, max %.2f%%)\n",
                mdl_op_kind_name((enum mdl_op_kind)in[0].op), in[0].ranks, algo, r->nrows,
                r->median_err, r->max_err);
        fprintf(f,
                "# Rows fitted per protocol: LL %d, LL128 %d, Simple %d. These rows are\n"
                "# calibration data: score the platform on other logs (tpsim validate nccl).\n",
                lf->last[1] - lf->first[1], lf->last[2] - lf->first[2], lf->last[3] - lf->first[3]);
    } else {
        fprintf(f,
                "# Calibrated by `tpsim calibrate` on %d logs at once (closed form of the %s\n"
                "# algorithm; %s; %d rows, fit error median %.2f%%, max %.2f%%):\n",
                nin, algo,
                r->ngroups > 1   ? "one machine and several together, a rate each, the "
                                   "protocols shared"
                : r->joint_steps ? "base and per-step latency fitted apart"
                                 : "one step count, so one latency per protocol",
                r->nrows, r->median_err, r->max_err);
        for (int k = 0; k < nin; k++) {
            const struct cal_log_fit *lf = &r->logs[k];
            fprintf(f,
                    "#   %s: %s over %d ranks, %d rows (LL %d, LL128 %d, Simple %d), median "
                    "%.2f%%, max %.2f%%\n",
                    in[k].log->path, mdl_op_kind_name((enum mdl_op_kind)in[k].op), in[k].ranks,
                    lf->nrows, lf->last[1] - lf->first[1], lf->last[2] - lf->first[2],
                    lf->last[3] - lf->first[3], lf->median_err, lf->max_err);
        }
        fprintf(f, "# These rows are calibration data: score the platform on other logs (tpsim "
                   "validate nccl).\n");
    }
    fprintf(f, "preset: %s\n", o->preset);
    size_t plen = strlen(r->param);
    size_t llen = strlen(r->lat_param);
    for (int i = 0; i < o->nkv; i++) {
        const char *eq = strchr(o->kv[i], '=');
        size_t p2len = strlen(r->param2);
        if (!eq || (!strncmp(o->kv[i], r->param, plen) && o->kv[i][plen] == '=') ||
            (p2len && !strncmp(o->kv[i], r->param2, p2len) && o->kv[i][p2len] == '='))
            continue;
        if (r->lat_new != r->lat_old && !strncmp(o->kv[i], r->lat_param, llen) &&
            o->kv[i][llen] == '=')
            continue;
        fprintf(f, "%.*s: %s\n", (int)(eq - o->kv[i]), o->kv[i], eq + 1);
    }
    for (int g = 0; g < r->ngroups; g++) {
        const char *name = g ? r->param2 : r->param;
        double now = g ? r->param2_new : r->param_new, was = g ? r->param2_old : r->param_old;
        if (r->held == g + 1)
            fprintf(f, "%s: %.4fGB/s   # kept (--hold)\n", name, now / 1e9);
        else
            fprintf(f, "%s: %.4fGB/s   # fitted; the model's value was %.4f GB/s\n", name,
                    now / 1e9, was / 1e9);
    }
    if (r->lat_new != r->lat_old)
        fprintf(f, "%s: %.4fus   # fitted; the model's value was %.4f us\n", r->lat_param,
                r->lat_new * 1e6, r->lat_old * 1e6);
    /* pinning the fitted algorithm would take NVLS away from the 8-GPU all-reduces of an NVLS
     * machine fitted on a ring: there the tuner keeps choosing */
    if (r->nccl.nvls && !r->forced)
        fprintf(f,
                "nccl:\n  algorithm: auto   # the fit assumed %s; NVLS where the tuner finds "
                "it faster\n",
                mdl_algo_name((enum mdl_coll_algo)r->algo));
    else
        fprintf(f, "nccl:\n  algorithm: %s   # the closed form the fit assumed\n",
                mdl_algo_name((enum mdl_coll_algo)r->algo));
    const char *names[3] = {"base_latency", "hop_latency", "efficiency"};
    for (int k = 0; k < 3; k++) {
        fprintf(f, "  %s: {", names[k]);
        for (int p = MDL_PROTO_LL; p < MDL_PROTO_N; p++) {
            const double *v = k == 0 ? r->nccl.base_s : k == 1 ? r->nccl.hop_s : r->nccl.eff;
            if (k < 2)
                fprintf(f, "%s%s: %.4fus", p > 1 ? ", " : "", mdl_proto_name(p), v[p] * 1e6);
            else
                fprintf(f, "%s%s: %.4f", p > 1 ? ", " : "", mdl_proto_name(p), v[p]);
        }
        fprintf(f, "}\n");
    }
    return ferror(f) ? -1 : 0;
}
