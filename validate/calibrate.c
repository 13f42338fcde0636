/* calibrate.c - platform fit to an nccl-tests log (see calibrate.h). Calls GSL's
 * gsl_fit_wlinear. Units: bytes, seconds, bytes/s. */
#include "calibrate.h"

#include <gsl/gsl_fit.h>
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

static double bw_time(const struct model *m, const struct cal_options *o, int algo, double S)
{
    struct mdl_nccl nc;
    mdl_nccl_default(&nc);
    struct mdl_coll_env e;
    tune_coll_env(&m->ge, &nc, MDL_PROTO_SIMPLE, &e);
    e.base_s = 0;
    e.all.alpha_s = e.intra.alpha_s = e.inter.alpha_s = 0;
    return mdl_coll_time((enum mdl_op_kind)o->op, (enum mdl_coll_algo)algo, S, &e);
}

static double lat_time(const struct model *m, const struct cal_options *o, int algo, double hop)
{
    struct mdl_nccl nc;
    mdl_nccl_default(&nc);
    nc.hop_s[MDL_PROTO_SIMPLE] = hop;
    struct mdl_coll_env e;
    tune_coll_env(&m->ge, &nc, MDL_PROTO_SIMPLE, &e);
    e.base_s = 0;
    return mdl_coll_time((enum mdl_op_kind)o->op, (enum mdl_coll_algo)algo, 0, &e);
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

int cal_fit(const struct ncl_log *lg, const struct cal_options *o, struct cal_result *r,
            struct tps_error *err)
{
    memset(r, 0, sizeof *r);
    int n = lg->nrows;
    if (n < 3)
        return tps_error_set(err, TPS_EINVAL, lg->path, 0, 0, NULL,
                             "calibration needs at least 3 rows, the log has %d", n);
    struct plat_topo t0, t2;
    int rc = build(o, "", 0, &t0, err);
    if (rc) {
        plat_topo_release(&t0);
        return rc;
    }
    if (o->ranks < 2 || o->ranks > t0.ngpus) {
        rc = tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "ranks",
                           "the log has %d ranks, the platform %d GPUs", o->ranks, t0.ngpus);
        plat_topo_release(&t0);
        return rc;
    }
    pick_param(&t0, o->ranks, r->param, &r->param_old, r->lat_param, &r->lat_old);
    r->lat_new = r->lat_old;
    r->nccl = t0.nccl;
    /* a small step: a doubled rate could move the bottleneck to another link */
    const double eps = 1e-3;
    rc = build(o, r->param, (1 + eps) * r->param_old, &t2, err);
    struct plat_topo tz; /* the same with the fitted latency parameter at 0 */
    if (!rc)
        rc = build(o, r->lat_param, 0, &tz, err);
    else
        plat_topo_init(&tz, "");
    int *ranks = malloc((size_t)o->ranks * sizeof *ranks);
    double *buf = calloc((size_t)n * 6, sizeof *buf);
    struct prefix *P = malloc(((size_t)n + 1) * sizeof *P);
    struct model m0 = {0}, m2 = {0}, mz = {0};
    if (!rc && (!ranks || !buf || !P))
        rc = tps_error_set(err, TPS_ENOMEM, NULL, 0, 0, NULL, "no memory");
    for (int i = 0; !rc && i < o->ranks; i++)
        ranks[i] = i;
    struct mdl_group g = {.n = o->ranks, .ranks = ranks};
    if (!rc && !(rc = tune_group_env(&t0, &g, &m0.ge, err))) m0.ready = 1;
    if (!rc && !(rc = tune_group_env(&t2, &g, &m2.ge, err))) m2.ready = 1;
    if (!rc && !(rc = tune_group_env(&tz, &g, &mz.ge, err))) mz.ready = 1;
    r->algo = o->algo;
    if (!rc && !r->algo) {
        enum mdl_coll_algo a = MDL_ALGO_AUTO;
        enum mdl_coll_proto p = MDL_PROTO_SIMPLE;
        if (tune_choose(&m0.ge, &t0.nccl, (enum mdl_op_kind)o->op, lg->rows[n - 1].bytes, &a, &p,
                        err) < 0)
            rc = err->code;
        r->algo = a;
    }
    double *dfix = buf, *dvar = buf + n, *t = buf + 2 * n, *w = buf + 3 * n, *x = buf + 4 * n,
           *y = buf + 5 * n;
    for (int i = 0; !rc && i < n; i++) {
        double S = lg->rows[i].bytes;
        double d0 = bw_time(&m0, o, r->algo, S) - bw_time(&m0, o, r->algo, 0);
        double d2 = bw_time(&m2, o, r->algo, S) - bw_time(&m2, o, r->algo, 0);
        if (!(d0 >= 0)) {
            rc = tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "algorithm",
                               "algorithm '%s' cannot run %s over %d ranks on this platform",
                               mdl_algo_name((enum mdl_coll_algo)r->algo),
                               mdl_op_kind_name((enum mdl_op_kind)o->op), o->ranks);
            break;
        }
        dvar[i] = (d0 - d2) * (1 + eps) / eps;
        dfix[i] = d0 - dvar[i];
        t[i] = lg->rows[i].time_us * 1e-6;
        w[i] = 1 / (t[i] * t[i]);
    }
    /* every split LL [0,i1), LL128 [i1,i2), Simple [i2,n) */
    double best = INFINITY;
    struct seg_fit bf[MDL_PROTO_N] = {{0}};
    int b1 = 0, b2 = 0;
    for (int i2 = 0; !rc && i2 <= n - 3; i2++) {
        for (int i = i2; i < n; i++) {
            x[i] = dvar[i];
            y[i] = t[i] - dfix[i];
        }
        struct seg_fit fs = fit(x, y, w, i2, n);
        if (!fs.ok) continue;
        for (int i = 0; i < i2; i++) {
            x[i] = dfix[i] + dvar[i] * fs.c1;
            y[i] = t[i];
        }
        prefix_build(x, y, w, i2, P);
        for (int i1 = 0; i1 <= i2; i1++) {
            if (i1 == 1 || i2 - i1 == 1) continue; /* a range is empty or has 2+ rows */
            struct seg_fit fl = fit_prefix(P, 0, i1), fm = fit_prefix(P, i1, i2);
            /* efficiencies must be what the wire formats allow: LL carries at most 4 data bytes
             * in 8, LL128 120 in 128; much lower values are noise in latency-bound rows */
            if ((i1 && (!fl.ok || fl.c1 < 2 || fl.c1 > 10)) ||
                (i2 > i1 && (!fm.ok || fm.c1 < 128.0 / 120 - 1e-6 || fm.c1 > 2.5)))
                continue;
            int k = 2 + (i1 ? 2 : 0) + (i2 > i1 ? 2 : 0);
            double rss = fs.rss + fl.rss + fm.rss;
            double crit = n * log(rss / n + 1e-12) + 2 * k;
            if (crit < best - 1e-9) {
                best = crit;
                bf[MDL_PROTO_LL] = fl;
                bf[MDL_PROTO_LL128] = fm;
                bf[MDL_PROTO_SIMPLE] = fs;
                b1 = i1;
                b2 = i2;
            }
        }
    }
    if (!rc && !isfinite(best))
        rc = tps_error_set(err, TPS_EINVAL, lg->path, 0, 0, NULL,
                           "no fit: the times do not grow with size as a collective's do");
    if (!rc) {
        r->first[MDL_PROTO_LL] = 0;
        r->last[MDL_PROTO_LL] = b1;
        r->first[MDL_PROTO_LL128] = b1;
        r->last[MDL_PROTO_LL128] = b2;
        r->first[MDL_PROTO_SIMPLE] = b2;
        r->last[MDL_PROTO_SIMPLE] = n;
        double sigma = 1 / bf[MDL_PROTO_SIMPLE].c1;
        r->param_new = r->param_old * sigma;
        double h = 1e-6, l0 = lat_time(&m0, o, r->algo, 0);
        double steps = (lat_time(&m0, o, r->algo, h) - l0) / h;
        /* route latency on links of the fitted latency parameter, and elsewhere */
        double lfix = lat_time(&mz, o, r->algo, 0), lvar = l0 - lfix;
        /* if the routes alone take longer than a protocol's intercept, shorten the links */
        double lambda = 1;
        for (int p = MDL_PROTO_LL; p < MDL_PROTO_N; p++)
            if (r->first[p] < r->last[p] && lvar > 0)
                lambda = fmin(lambda, (bf[p].c0 - lfix - steps * r->nccl.hop_s[p]) / lvar);
        lambda = fmax(lambda, 0);
        r->lat_new = r->lat_old * lambda;
        l0 = lfix + lvar * lambda;
        for (int p = MDL_PROTO_LL; p < MDL_PROTO_N; p++) {
            if (r->first[p] == r->last[p]) { /* no rows: the protocol was not seen, disable it */
                r->nccl.eff[p] = 0;
                continue;
            }
            r->nccl.eff[p] = p == MDL_PROTO_SIMPLE ? 1 : 1 / bf[p].c1;
            double A = bf[p].c0, base = A - l0 - steps * r->nccl.hop_s[p];
            if (base >= 0) {
                r->nccl.base_s[p] = base;
            } else { /* the steps alone exceed the intercept: lower the per-step latency */
                r->nccl.base_s[p] = 0;
                r->nccl.hop_s[p] = steps > 0 ? fmax(0, (A - l0) / steps) : 0;
            }
        }
        double *e = x;
        for (int i = 0; i < n; i++) {
            int p = i < b1 ? MDL_PROTO_LL : i < b2 ? MDL_PROTO_LL128 : MDL_PROTO_SIMPLE;
            double xi = dfix[i] + dvar[i] / sigma;
            double pred = bf[p].c0 + xi * (p == MDL_PROTO_SIMPLE ? 1 : bf[p].c1);
            e[i] = fabs(pred - t[i]) / t[i] * 100;
        }
        tps_median_max(e, n, &r->median_err, &r->max_err);
        r->nrows = n;
    }
    if (m0.ready) tune_group_env_release(&m0.ge);
    if (m2.ready) tune_group_env_release(&m2.ge);
    if (mz.ready) tune_group_env_release(&mz.ge);
    free(ranks);
    free(buf);
    free(P);
    plat_topo_release(&t0);
    plat_topo_release(&t2);
    plat_topo_release(&tz);
    return rc;
}

int cal_write(const struct cal_result *r, const struct cal_options *o, const char *log_path,
              FILE *f)
{
    fprintf(f, "# Calibrated by `tpsim calibrate` from %s\n", log_path);
    fprintf(f,
            "# (%s over %d ranks, closed form of the %s algorithm; %d rows, fit error median "
            "%.2f%%, max %.2f%%)\n",
            mdl_op_kind_name((enum mdl_op_kind)o->op), o->ranks,
            mdl_algo_name((enum mdl_coll_algo)r->algo), r->nrows, r->median_err, r->max_err);
    fprintf(f,
            "# Rows fitted per protocol: LL %d, LL128 %d, Simple %d. These rows are\n"
            "# calibration data: score the platform on other logs (tpsim validate nccl).\n",
            r->last[1] - r->first[1], r->last[2] - r->first[2], r->last[3] - r->first[3]);
    fprintf(f, "preset: %s\n", o->preset);
    size_t plen = strlen(r->param);
    size_t llen = strlen(r->lat_param);
    for (int i = 0; i < o->nkv; i++) {
        const char *eq = strchr(o->kv[i], '=');
        if (!eq || (!strncmp(o->kv[i], r->param, plen) && o->kv[i][plen] == '=')) continue;
        if (r->lat_new != r->lat_old && !strncmp(o->kv[i], r->lat_param, llen) &&
            o->kv[i][llen] == '=')
            continue;
        fprintf(f, "%.*s: %s\n", (int)(eq - o->kv[i]), o->kv[i], eq + 1);
    }
    fprintf(f, "%s: %.4fGB/s   # fitted; the model's value was %.4f GB/s\n", r->param,
            r->param_new / 1e9, r->param_old / 1e9);
    if (r->lat_new != r->lat_old)
        fprintf(f, "%s: %.4fus   # fitted; the model's value was %.4f us\n", r->lat_param,
                r->lat_new * 1e6, r->lat_old * 1e6);
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
