/* profile.c - device calibration against a per-sublayer profile (see profile.h). */
#include "profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/readall.h"
#include "common/stats.h"
#include "models/compute.h"
#include "models/strategy.h"
#include "pipeline/pipeline.h"
#include "common/inputs.h"

#define MAX_OPS 64

/* One sublayer of one profile row: its measured time and the compute ops that make it. */
struct sub {
    double measured_s;
    int nops;
    unsigned char gemm[MAX_OPS]; /* GEMM or attention op (else memory-bound) */
    double flop[MAX_OPS], bytes[MAX_OPS];
};

/* MLP ops are ln2, fc1, gelu, fc2 and dropout_add2, with their _bwd/_dgrad/_wgrad forms. */
static int is_mlp(const char *name)
{
    static const char *const mlp[] = {"ln2", "fc1", "gelu", "fc2", "dropout_add2", NULL};
    for (int i = 0; mlp[i]; i++)
        if (!strncmp(name, mlp[i], strlen(mlp[i]))) return 1;
    return 0;
}

static double price(const struct mdl_device *d, const struct sub *s)
{
    double t = 0;
    for (int i = 0; i < s->nops; i++)
        t += s->gemm[i] ? mdl_gemm_time_wb(d, MDL_FP32, s->flop[i], s->bytes[i])
                        : mdl_mem_time(d, s->bytes[i]);
    return t;
}

static void errors(const struct mdl_device *d, const struct sub *subs, int n, double *e,
                   double *median, double *max)
{
    for (int i = 0; i < n; i++)
        e[i] = fabs(price(d, &subs[i]) - subs[i].measured_s) / subs[i].measured_s * 100;
    tps_median_max(e, n, median, max);
}

/* Lowers one layer of the row's shape and splits its compute ops into the 4 sublayers. */
static int lower_row(const struct mdl_device *dev, long hidden, long tp, long bs,
                     const double ms[4], struct sub out[4], struct tps_error *err)
{
    struct mdl_model m = {.layers = 1,
                          .hidden = hidden,
                          .heads = hidden / 64,
                          .ffn = 4 * hidden,
                          .seq = 1024,
                          .micro_batch = bs,
                          .dtype = MDL_FP32};
    snprintf(m.name, sizeof m.name, "profile");
    struct scn_scenario one = {
        .model = m,
        .device = *dev,
        .strategy = {.kind = MDL_STRAT_1D, .tp = (int)tp, .async_grad_allreduce = true},
        .layers = 1,
        .micro_batches = 1};
    struct mdl_program p;
    int rc = pipeline_lower(&one, NULL, 0, 0, &p, err);
    for (int k = 0; k < 4; k++) {
        memset(&out[k], 0, sizeof out[k]);
        out[k].measured_s = ms[k] * 1e-3;
    }
    for (int i = 0; !rc && i < p.ranks[0].nops; i++) {
        const struct mdl_op *op = &p.ranks[0].ops[i];
        if (mdl_op_is_coll((enum mdl_op_kind)op->kind)) continue;
        /* profile columns: attn_fp, attn_bp, mlp_fp, mlp_bp */
        int k = (is_mlp(p.names[op->name]) ? 2 : 0) + (op->phase == MDL_PHASE_BWD);
        struct sub *s = &out[k];
        if (s->nops == MAX_OPS) continue;
        s->gemm[s->nops] = op->kind == MDL_OP_GEMM || op->kind == MDL_OP_ATTN;
        s->flop[s->nops] = op->flop;
        s->bytes[s->nops] = op->bytes;
        s->nops++;
    }
    mdl_program_release(&p);
    return rc;
}

int prof_calibrate(const char *csv, struct mdl_device *dev, struct prof_result *r,
                   struct tps_error *err)
{
    memset(r, 0, sizeof *r);
    FILE *f = fopen(csv, "r");
    if (!f) return tps_error_set(err, TPS_EIO, csv, 0, 0, NULL, "cannot open: %m");
    tps_input_note(csv);
    char line[1024];
    int lineno = 0, n = 0, cap = 0, rc = TPS_OK;
    struct sub *subs = NULL;
    if (!fgets(line, sizeof line, f) ||
        strncmp(line + tps_bom_len(line), "hidden,tp,bs,attn_fp,attn_bp,mlp_fp,mlp_bp", 42))
        rc = tps_error_set(err, TPS_ESYNTAX, csv, 1, 1, "header",
                           "expected the columns hidden,tp,bs,attn_fp,attn_bp,mlp_fp,mlp_bp,...");
    lineno = 1;
    while (!rc && fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '\n' || line[0] == '#') continue;
        long hidden, tp, bs;
        double ms[4];
        int used = 0;
        if (sscanf(line, "%ld,%ld,%ld,%lf,%lf,%lf,%lf%n", &hidden, &tp, &bs, &ms[0], &ms[1], &ms[2],
                   &ms[3], &used) != 7 ||
            hidden < 64 || tp < 1 || bs < 1 || !(ms[0] > 0) || !(ms[1] > 0) || !(ms[2] > 0) ||
            !(ms[3] > 0)) {
            rc = tps_error_set(err, TPS_ESYNTAX, csv, lineno, 1, "row",
                               "expected hidden,tp,bs and four positive times in ms");
            break;
        }
        if (hidden % 64 || (hidden / 64) % tp) continue; /* not a shape 1D TP can take */
        if (tps_grow(&subs, &cap, n + 4, sizeof *subs, 64)) {
            rc = tps_error_oom(err);
            break;
        }
        if ((rc = lower_row(dev, hidden, tp, bs, ms, &subs[n], err))) break;
        n += 4;
        r->rows++;
    }
    fclose(f);
    if (!rc && n == 0) rc = tps_error_set(err, TPS_EINVAL, csv, lineno, 1, NULL, "no usable row");
    double *e = rc ? NULL : malloc((size_t)n * sizeof *e);
    if (!rc && !e) rc = tps_error_oom(err);
    if (!rc) {
        errors(dev, subs, n, e, &r->median_before, &r->max_before);
        struct mdl_device d = *dev, best = *dev;
        double bmed = INFINITY, bmax = INFINITY;
        for (double eff = 0.20; eff <= 1.0001; eff += 0.01)
            for (double mem = 0.20; mem <= 1.0001; mem += 0.02)
                for (int o = 0; o < 6; o++) {
                    static const double ov[6] = {0, 2e-6, 5e-6, 10e-6, 20e-6, 40e-6};
                    d.gemm_eff_max = eff;
                    d.mem_eff = mem;
                    d.gemm_overhead_s = ov[o];
                    double med, max;
                    errors(&d, subs, n, e, &med, &max);
                    if (med < bmed - 1e-12 || (med < bmed + 1e-12 && max < bmax)) {
                        bmed = med;
                        bmax = max;
                        best = d;
                    }
                }
        *dev = best;
        r->median_after = bmed;
        r->max_after = bmax;
        r->eff = best.gemm_eff_max;
        r->mem_eff = best.mem_eff;
        r->overhead_s = best.gemm_overhead_s;
    }
    free(e);
    free(subs);
    return rc;
}
