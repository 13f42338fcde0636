/* cli_validate.c - `tpsim calibrate` and `tpsim validate nccl`.
 *
 * calibrate: fits a preset platform to one nccl-tests log (validate/calibrate.h) and writes the
 * calibrated platform file. validate nccl: for every log listed in a manifest
 * (scenarios/validation/nccl.yaml), simulates the same collective at every size on the platform
 * the manifest names, prints the per-size error and a summary (median and max |error| on time
 * for sizes of 1 MiB and up) that scores only the logs not used for calibration, and writes data,
 * a gnuplot script and PNG/SVG plots of measured against simulated bus bandwidth.
 */
#include <errno.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common/stats.h"
#include "common/ydoc.h"
#include "models/collective.h"
#include "platforms/spec.h"
#include "cli/cliutil.h"
#include "models/compute.h"
#include "core/scenario.h"
#include "validate/against.h"
#include "validate/compare.h"
#include "validate/e2e.h"
#include "validate/layers.h"
#include "validate/manifest.h"
#include "validate/calibrate.h"
#include "validate/ncclog.h"
#include "validate/profile.h"
#include "common/inputs.h"

#ifndef TPSIM_REFDATA_DEFAULT
#define TPSIM_REFDATA_DEFAULT "../shared/refdata"
#endif

static const char cal_help[] =
    "usage: tpsim calibrate LOG [LOG ...] --platform 'PRESET [key=value ...]' [--op OP]\n"
    "                       [--ranks N] [--algorithm A] [--hold RATE] [-o FILE]\n"
    "\n"
    "Fits a preset platform to real nccl-tests logs: the bandwidth parameter that bounds the\n"
    "collective (nic_rate across machines, gpu_link on one dgx machine, pcie_rate on PCIe\n"
    "machines) and, per protocol (LL, LL128, Simple), the base latency, per-step latency and\n"
    "bandwidth efficiency. Weighted least squares (GSL) on the closed form of the algorithm; the\n"
    "report gives the fit error and which rows fitted which protocol. The calibrated platform is\n"
    "written to FILE (default: standard output) as a preset file with an nccl: section.\n"
    "\n"
    "Several logs (up to 16: other collectives, other rank counts of one system) are fitted at\n"
    "once, one platform for all; when their step counts differ, the base latency and the per-step\n"
    "latency are told apart. Logs inside one machine and across machines (several node counts)\n"
    "are fitted together: a rate each (gpu_link, nic_rate), the protocols shared; the machines'\n"
    "small messages run trees, so only their Simple rows are fitted, each log's route latency\n"
    "taken off at the platform's link latencies. The report gives the fit error per log.\n"
    "\n"
    "options:\n"
    "  --platform SPEC  the preset and parameters describing the system, e.g. 'dgx-a100 nodes=2'\n"
    "  --op OP          collective of a log that does not say (default: from the log or its\n"
    "                   .meta.yaml)\n"
    "  --ranks N        ranks of a log that does not say (default: from its device list or\n"
    "                   .meta.yaml)\n"
    "  --algorithm A    ring | tree | direct | hierarchical | hierarchical_tree (default:\n"
    "                   the tuner's choice at the first log's largest size)\n"
    "  --hold RATE      keep RATE (gpu_link or nic_rate) as --platform gives it, in a fit of\n"
    "                   logs inside one machine beside logs across machines; the other rate\n"
    "                   and the protocols are fitted\n"
    "  -o FILE          write the calibrated platform here\n"
    "  -h, --help       show this help\n";

/* Options whose value is a string, stored by the option's val ('a'..'z') into slots[val-'a']. */
static int store_option(int opt, const char *arg, void *ctx)
{
    if (opt >= 'a' && opt <= 'z') ((const char **)ctx)[opt - 'a'] = arg;
    return 0;
}

int cli_calibrate(int argc, char **argv)
{
    static const struct option longs[] = {
        {"platform", required_argument, NULL, 'p'}, {"op", required_argument, NULL, 'k'},
        {"ranks", required_argument, NULL, 'r'},    {"algorithm", required_argument, NULL, 'a'},
        {"hold", required_argument, NULL, 'd'},     {0}};
    const char *v[26] = {0}, *logs[CAL_MAX_LOGS + 1] = {0};
    int nlogs, rc = cli_parse(argc, argv, 1, "calibrate", cal_help, "o:", longs, store_option, v,
                              logs, CAL_MAX_LOGS + 1, &nlogs);
    if (rc) return rc == CLI_HELP_SHOWN ? 0 : rc;
    _Static_assert(CAL_MAX_LOGS == 16, "the message below names the limit");
    if (nlogs > CAL_MAX_LOGS)
        return cli_usage_error("calibrate", "%s", "at most 16 logs are fitted at once");
    const char *plat = v['p' - 'a'], *outp = v['o' - 'a'];
    int op = -1, ranks = 0, algo = 0;
    if (v['k' - 'a']) {
        enum mdl_op_kind k;
        if (mdl_op_kind_parse(v['k' - 'a'], &k) || !mdl_op_is_coll(k))
            return cli_usage_error("calibrate", "unknown --op '%s'", v['k' - 'a']);
        op = k;
    }
    if (v['r' - 'a']) {
        long r;
        if ((rc = cli_parse_count("calibrate", "--ranks", v['r' - 'a'], 2, 1L << 24, &r)))
            return rc;
        ranks = (int)r;
    }
    if (v['a' - 'a']) {
        enum mdl_coll_algo x;
        if (mdl_algo_parse(v['a' - 'a'], &x))
            return cli_usage_error("calibrate", "unknown --algorithm '%s'", v['a' - 'a']);
        algo = x;
    }
    if (!nlogs) return cli_usage_error("calibrate", "%s", "missing LOG");
    if (!plat) return cli_usage_error("calibrate", "%s", "missing --platform");
    char buf[1024], *words[64];
    int nw = plat_spec_split_words(plat, buf, sizeof buf, words, 64);
    if (nw < 1) return cli_usage_error("calibrate", "%s", "empty --platform");
    if (strchr(words[0], '.'))
        return cli_usage_error("calibrate", "--platform must be a preset with parameters, got '%s'",
                               words[0]);
    struct tps_error err = {0};
    struct ncl_log l[CAL_MAX_LOGS];
    struct cal_input in[CAL_MAX_LOGS];
    int nread = 0;
    for (; !rc && nread < nlogs; nread++) {
        if (ncl_log_read(logs[nread], &l[nread], &err)) {
            rc = -1;
            break;
        }
        in[nread] = (struct cal_input){.log = &l[nread], .op = op, .ranks = ranks};
        rc = man_log_shape(&l[nread], logs[nread], &in[nread].op, &in[nread].ranks, &err);
    }
    struct cal_result r;
    struct cal_options o = {
        .preset = words[0], .nkv = nw - 1, .kv = words + 1, .algo = algo, .hold = v['d' - 'a']};
    if (!rc && outp && tps_output_check(outp, &err)) rc = TPS_EINVAL; /* the logs are read */
    if (!rc) rc = cal_fit(in, nlogs, &o, &r, &err);
    if (rc) {
        for (int k = 0; k < nread; k++)
            ncl_log_release(&l[k]);
        return cli_report_error(&err);
    }
    fprintf(stderr, "tpsim calibrate: %d log%s, %d rows, %s algorithm%s\n", nlogs,
            nlogs > 1 ? "s" : "", r.nrows, mdl_algo_name((enum mdl_coll_algo)r.algo),
            nlogs == 1      ? ""
            : r.joint_steps ? " (base and per-step latency told apart)"
                            : " (one step count: one latency per protocol)");
    fprintf(stderr, "  %s: %.3f GB/s -> %.3f GB/s\n", r.param, r.param_old / 1e9,
            r.param_new / 1e9);
    if (r.ngroups > 1)
        fprintf(stderr, "  %s: %.3f GB/s -> %.3f GB/s\n", r.param2, r.param2_old / 1e9,
                r.param2_new / 1e9);
    if (r.lat_new != r.lat_old)
        fprintf(stderr, "  %s: %.3f us -> %.3f us\n", r.lat_param, r.lat_old * 1e6,
                r.lat_new * 1e6);
    for (int p = MDL_PROTO_LL; p < MDL_PROTO_N; p++) {
        if (!r.nccl.eff[p]) {
            fprintf(stderr, "  %-6s no rows (disabled)\n", mdl_proto_name(p));
            continue;
        }
        fprintf(stderr, "  %-6s base %.2f us, per step %.3f us, efficiency %.3f\n",
                mdl_proto_name(p), r.nccl.base_s[p] * 1e6, r.nccl.hop_s[p] * 1e6, r.nccl.eff[p]);
    }
    for (int k = 0; k < nlogs; k++) {
        const struct cal_log_fit *lf = &r.logs[k];
        fprintf(stderr, "  %s: %s over %d ranks, %d rows, %g latency steps\n", logs[k],
                mdl_op_kind_name((enum mdl_op_kind)in[k].op), in[k].ranks, lf->nrows, lf->steps);
        for (int p = MDL_PROTO_LL; p < MDL_PROTO_N; p++)
            if (lf->first[p] < lf->last[p])
                fprintf(stderr, "    %-6s rows %g..%g B\n", mdl_proto_name(p),
                        l[k].rows[lf->first[p]].bytes, l[k].rows[lf->last[p] - 1].bytes);
        fprintf(stderr, "    fit error: median %.2f%%, max %.2f%%\n", lf->median_err, lf->max_err);
    }
    fprintf(stderr,
            "  fit error on these rows: median %.2f%%, max %.2f%% (calibration data, not "
            "a score)\n",
            r.median_err, r.max_err);
    FILE *f = outp ? fopen(outp, "w") : stdout; /* checked against the logs before the fit */
    if (!f) {
        fprintf(stderr, "tpsim calibrate: %s: %s\n", outp, strerror(errno));
        rc = CLI_EXIT_INPUT;
    } else {
        rc = cal_write(&r, &o, in, nlogs, f);
        if (outp && fclose(f) != 0) rc = -1;
        if (rc) {
            fprintf(stderr, "tpsim calibrate: cannot write %s\n", outp ? outp : "output");
            rc = CLI_EXIT_INPUT;
        }
    }
    for (int k = 0; k < nlogs; k++)
        ncl_log_release(&l[k]);
    return rc;
}

/* ------------------------------------------------------------------ validate nccl */

static void progress_line(int i, int n, const char *log, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "\r[%d/%d] simulating %-60s", i + 1, n, log);
}

static const char val_help[] =
    "usage: tpsim validate nccl [--manifest FILE] [--refdata DIR] [--out DIR] [--markdown FILE]\n"
    "                           [--json FILE]\n"
    "       tpsim validate profile [--profile CSV] [--device PRESET]   (see validate profile -h)\n"
    "       tpsim validate trace TRACE_DIR [--platform P | --scenario S]   (see -h there)\n"
    "       tpsim validate layers [CSV] [--device D] [--json F]   (see -h there)\n"
    "       tpsim validate e2e [CSV] [--device D] [--platform P] [--json F]   (see -h there)\n"
    "\n"
    "Reads every nccl-tests log the manifest lists (default: the project's\n"
    "scenarios/validation/nccl.yaml; logs are NAME.raw.txt under DIR/nccl, DIR defaulting to the\n"
    "project's ../shared/refdata; both found from any directory), simulates the same\n"
    "collective at every size on the platform the manifest gives for it, and prints per-size\n"
    "time error and a summary: median and max |error| on time for sizes of 1 MiB and up. Logs\n"
    "marked `role: fit` calibrated the platform parameters: they are shown but not scored.\n"
    "Writes DIR_OUT/<log>.dat, DIR_OUT/busbw.gp and, when gnuplot is installed, busbw.png and\n"
    "busbw.svg (measured against simulated bus bandwidth per system). Default --out:\n"
    "validation-out.\n"
    "\n"
    "options:\n"
    "  --manifest FILE  list of logs and platforms (docs/validation.md)\n"
    "  --refdata DIR    reference data directory\n"
    "  --out DIR        where data and plots go\n"
    "  --markdown FILE  also write the result tables as Markdown\n"
    "  --json FILE      also write them as JSON: per log its rows and median and max |error|,\n"
    "                   and evaluation_median_abs_err_pct, evaluation_max_abs_err_pct\n"
    "  -h, --help       show this help\n";

/* The whole result as JSON (docs/output.md). */
static json_t *nccl_json(const struct man_result *res)
{
    json_t *logs = json_array();
    for (int i = 0; i < res->n; i++) {
        const struct man_log *l = &res->logs[i];
        json_t *rows = json_array();
        for (int r = 0; r < l->nrows; r++) {
            const struct man_row *w = &l->rows[r];
            json_array_append_new(rows, json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:s}", "bytes",
                                                  w->bytes, "measured_us", w->meas_us,
                                                  "simulated_us", w->sim_us, "measured_busbw_GBps",
                                                  w->meas_bus, "simulated_busbw_GBps", w->sim_bus,
                                                  "err_pct", w->err, "how", w->how));
        }
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:o}", "log", l->name, "platform",
                              l->platform, "role", l->fit ? "fit" : "eval", "op",
                              mdl_op_kind_name((enum mdl_op_kind)l->op), "ranks", l->ranks,
                              "scored_sizes", l->scored, "rows", rows);
        if (l->scored) {
            json_object_set_new(o, "median_abs_err_pct", json_real(l->median));
            json_object_set_new(o, "max_abs_err_pct", json_real(l->max));
        }
        json_array_append_new(logs, o);
    }
    int nsizes = 0;
    double med = 0, max = 0;
    man_eval_summary(res, &nsizes, &med, &max);
    return json_pack("{s:o, s:i, s:f, s:f}", "logs", logs, "evaluation_sizes", nsizes,
                     "evaluation_median_abs_err_pct", med, "evaluation_max_abs_err_pct", max);
}

static void print_log(FILE *f, const struct man_log *v, int md)
{
    if (md) {
        fprintf(f, "\n### %s (%s, %s over %d ranks)\n\n", v->name, v->fit ? "fit" : "eval",
                mdl_op_kind_name((enum mdl_op_kind)v->op), v->ranks);
        fprintf(f, "Platform: %s.\n\n", v->platform);
        fprintf(f, "| size (B) | measured (us) | simulated (us) | error %% | measured busbw (GB/s) "
                   "| simulated busbw (GB/s) | algorithm/protocol "
                   "|\n|---:|---:|---:|---:|---:|---:|:---|\n");
    } else {
        fprintf(f, "\n== %s [%s] %s over %d ranks on %s\n", v->name,
                v->fit ? "fit: calibration data, not scored" : "eval",
                mdl_op_kind_name((enum mdl_op_kind)v->op), v->ranks, v->platform);
        fprintf(f, "%14s %13s %13s %9s %10s %10s  %s\n", "size(B)", "measured(us)", "simulated(us)",
                "error%", "meas.busbw", "sim.busbw", "algorithm/protocol");
    }
    for (int i = 0; i < v->nrows; i++) {
        const struct man_row *r = &v->rows[i];
        if (md)
            fprintf(f, "| %.0f | %.2f | %.2f | %+.1f | %.2f | %.2f | %s |\n", r->bytes, r->meas_us,
                    r->sim_us, r->err, r->meas_bus, r->sim_bus, r->how);
        else
            fprintf(f, "%14.0f %13.2f %13.2f %+9.1f %10.2f %10.2f  %s\n", r->bytes, r->meas_us,
                    r->sim_us, r->err, r->meas_bus, r->sim_bus, r->how);
    }
}

static void print_summary(FILE *f, const struct man_result *res, int md)
{
    const struct man_log *v = res->logs;
    if (md)
        fprintf(f, "| log | role | ranks | sizes >= 1 MiB | median abs error %% | max abs error %% "
                   "|\n|:---|:---|---:|---:|---:|---:|\n");
    else
        fprintf(f, "\nSummary (time error for sizes of 1 MiB and up)\n%-48s %-5s %6s %6s %9s %9s\n",
                "log", "role", "ranks", "sizes", "median%", "max%");
    for (int i = 0; i < res->n; i++) {
        if (md)
            fprintf(f, "| %s | %s | %d | %d | %.1f | %.1f |\n", v[i].name,
                    v[i].fit ? "fit" : "eval", v[i].ranks, v[i].scored, v[i].median, v[i].max);
        else
            fprintf(f, "%-48s %-5s %6d %6d %9.1f %9.1f\n", v[i].name, v[i].fit ? "fit" : "eval",
                    v[i].ranks, v[i].scored, v[i].median, v[i].max);
    }
    int nall;
    double med, max;
    man_eval_summary(res, &nall, &med, &max);
    fprintf(f,
            md ? "\n**Evaluation logs only (fit logs excluded): %d sizes of 1 MiB and up, median "
                 "absolute error %.1f%%, max %.1f%%.**\n"
               : "\nevaluation logs only (fit logs excluded): %d sizes >= 1 MiB, median |error| "
                 "%.1f%%, max %.1f%%\n",
            nall, med, max);
}

static const char prof_help[] =
    "usage: tpsim validate profile [--profile CSV] [--device PRESET]\n"
    "\n"
    "Calibrates a device's compute model (GEMM efficiency and overhead, memory-bound efficiency)\n"
    "against a per-sublayer profile in the format of ../shared/refdata/profiles/\n"
    "oases_profile_3090.csv (hidden, tp, bs, attn_fp, attn_bp, mlp_fp, mlp_bp in ms; fp32,\n"
    "sequence 1024) and prints the median and max relative error of the sublayer compute times\n"
    "before and after, and the fitted values to put in a scenario's device: section.\n"
    "\n"
    "options:\n"
    "  --profile CSV    default the project's ../shared/refdata/profiles/oases_profile_3090.csv\n"
    "  --device PRESET  default RTX-3090\n";

static int validate_profile(int argc, char **argv)
{
    static const struct option longs[] = {
        {"profile", required_argument, NULL, 'p'}, {"device", required_argument, NULL, 'd'}, {0}};
    char csvbuf[1024];
    const char *v[26] = {0};
    v['p' - 'a'] = cli_project_path(TPSIM_REFDATA_DEFAULT "/profiles/oases_profile_3090.csv",
                                    csvbuf, sizeof csvbuf);
    v['d' - 'a'] = "RTX-3090";
    int n, rc = cli_parse(argc, argv, 2, "validate profile", prof_help, "", longs, store_option, v,
                          NULL, 0, &n);
    if (rc) return rc == CLI_HELP_SHOWN ? 0 : rc;
    const char *csv = v['p' - 'a'], *dev = v['d' - 'a'];
    struct mdl_device d;
    if (mdl_device_preset(dev, &d) != 0)
        return cli_usage_error("validate profile", "unknown device '%s'", dev);
    struct prof_result r;
    struct tps_error err = {0};
    if (prof_calibrate(csv, &d, &r, &err)) return cli_report_error(&err);
    printf("profile    %s (%d rows x 4 sublayer times)\ndevice     %s, fp32\n", csv, r.rows, dev);
    printf("before     median |error| %.1f%%, max %.1f%% (the preset's compute model)\n",
           r.median_before, r.max_before);
    printf(
        "after      median |error| %.1f%%, max %.1f%% (calibration data: fitted on these rows)\n",
        r.median_after, r.max_after);
    printf("fitted     device: {preset: %s, gemm_efficiency: %.2f, gemm_overhead: %.0fus, "
           "mem_efficiency: %.2f}\n",
           dev, r.eff, r.overhead_s * 1e6, r.mem_eff);
    return 0;
}

/* ------------------------------------------------------------------ validate trace */

static const char trace_help[] =
    "usage: tpsim validate trace TRACE_DIR [--platform SPEC | --scenario S] [--out DIR]\n"
    "                            [--against TRACE_DIR]\n"
    "\n"
    "Replays a recorded trace (tracer output after tpsim trace-merge) on the platform it ran on\n"
    "(--platform, the scenario's platform, or the one the trace records) and compares, op by op,\n"
    "the simulated duration with the recorded one: a table per op kind, per layer, the iteration,\n"
    "and the ten worst ops. With --scenario, every recorded GEMM and memory-bound kernel is also\n"
    "priced by the scenario's device compute model, to check that model against the hardware.\n"
    "Writes DIR/ops.dat and, with gnuplot, DIR/ops.png and ops.svg (recorded against simulated\n"
    "duration per op). Default --out: validation-trace.\n"
    "\n"
    "--against B sets another recording of the same run beside it, op by op: the PyTorch\n"
    "profiler's trace of the process the tracer recorded (tpsim import kineto), say. The ops both\n"
    "hold are paired per rank, kind and iteration (the last iterations of each aligned), and the\n"
    "median difference of their durations is printed, apart for ops B's GPU ran back to back\n"
    "and for ops it was idle before (waiting for the host). Writes DIR/against.dat.\n";

/* `validate trace A --against B`: A's recorded ops paired with B's (agn_compare), summarised. */
static void print_against(const struct agn_result *g)
{
    printf("\nagainst    %s (%d ranks, %d recorded ops): iterations %d-%d here with %d-%d there\n",
           g->against, g->b_ranks, g->b_recorded, g->a_first, g->a_first + g->niters - 1,
           g->b_first, g->b_first + g->niters - 1);
    printf("paired     %d ops", g->npairs);
    for (int k = 0; k < MDL_OP_NKINDS; k++)
        if (g->kind[k].n) printf(", %d %s", g->kind[k].n, mdl_op_kind_name((enum mdl_op_kind)k));
    printf("; %d mismatched (other FLOPs or bytes)\n", g->mismatched);
    for (int side = 0; side < 2; side++) {
        const int *only = side ? g->only_b : g->only_a;
        const char *label = side ? "only there" : "only here ";
        int any = 0;
        for (int k = 0; k < MDL_OP_NKINDS; k++)
            if (only[k])
                printf("%s %d %s", any++ ? "," : label, only[k],
                       mdl_op_kind_name((enum mdl_op_kind)k));
        if (any) printf("\n");
    }
    static const char *const cls[AGN_NCLASS] = {"all", "back to back", "after an idle GPU"};
    printf("\n%-20s %6s %14s %10s %12s\n", "op time here - there", "ops", "median us", "median",
           "max |us|");
    for (int c = 0; c < AGN_NCLASS + MDL_OP_NKINDS; c++) {
        const struct agn_stat *st = c < AGN_NCLASS ? &g->cls[c] : &g->kind[c - AGN_NCLASS];
        if (!st->n) continue;
        printf("%-20s %6d %+14.3f %+9.2f%% %12.3f\n",
               c < AGN_NCLASS ? cls[c] : mdl_op_kind_name((enum mdl_op_kind)(c - AGN_NCLASS)),
               st->n, st->median_s * 1e6, st->median_pct, st->max_abs_s * 1e6);
    }
}

static int validate_trace(int argc, char **argv)
{
    static const struct option longs[] = {{"platform", required_argument, NULL, 'p'},
                                          {"scenario", required_argument, NULL, 's'},
                                          {"out", required_argument, NULL, 'o'},
                                          {"against", required_argument, NULL, 'g'},
                                          {0}};
    const char *v[26] = {0}, *dir = NULL;
    v['o' - 'a'] = "validation-trace";
    int n, rc = cli_parse(argc, argv, 2, "validate trace", trace_help, "", longs, store_option, v,
                          &dir, 1, &n);
    if (rc) return rc == CLI_HELP_SHOWN ? 0 : rc;
    const char *plat = v['p' - 'a'], *scn_path = v['s' - 'a'], *out = v['o' - 'a'];
    if (!dir) return cli_usage_error("validate trace", "%s", "missing TRACE_DIR");
    struct tps_error err = {0};
    struct cmp_result r;
    rc = cmp_trace(dir, plat, scn_path, &r, &err);
    int plotted = 0;
    if (!rc) rc = cmp_write(&r, out, &plotted, &err);
    /* --against: the second recording is read and paired before anything is printed */
    struct agn_result g = {0};
    if (!rc && v['g' - 'a']) {
        char path[1200];
        snprintf(path, sizeof path, "%s/against.dat", out);
        rc = agn_compare(&r.prog, v['g' - 'a'], &g, &err);
        if (!rc) rc = agn_write(&g, path, &err);
    }
    if (rc) {
        agn_release(&g);
        cmp_release(&r);
        return cli_report_error(&err);
    }
    printf("trace      %s (%d ranks, %d recorded ops)\nplatform   %s\n", r.trace, r.nranks,
           r.recorded, r.platform);
    double rec = r.recorded_end_s, sim = r.simulated_end_s;
    printf("whole      recorded %.6f ms, simulated %.6f ms, error %+.2f%% (first op to last, "
           "warm-up included)\n",
           rec * 1e3, sim * 1e3, rec > 0 ? (sim - rec) / rec * 100 : 0);
    printf("host       %s\n", r.host_from_gaps
                                  ? "launch times read from the GPU's idle gaps (none measured)"
                                  : "launch times as recorded");
    if (r.scored_iters) {
        rec = r.iter_recorded_s, sim = r.iter_simulated_s;
        printf("iteration  recorded %.6f ms, simulated %.6f ms, error %+.2f%% (median of %d "
               "after warm-up; max |error| %.2f%%)\n",
               rec * 1e3, sim * 1e3, rec > 0 ? (sim - rec) / rec * 100 : 0, r.scored_iters,
               r.iter_max_abs_err_pct);
    } else {
        printf("iteration  none to compare: every iteration holds warm-up ops\n");
    }
    if (r.warmup_ops)
        printf("warm-up    %d ops left out of the tables below (iterations with first calls: lazy "
               "loading)\n",
               r.warmup_ops);
    printf("\n%-14s %14s %14s %8s\n", "iteration", "recorded ms", "simulated ms", "error");
    for (int i = 0; i < r.niters; i++) {
        const struct cmp_iter *it = &r.iters[i];
        if (it->recorded_s <= 0) continue;
        printf("%-4d%-10s %14.6f %14.6f %+7.2f%%\n", it->iter, it->warmup ? " warm-up" : "",
               it->recorded_s * 1e3, it->simulated_s * 1e3,
               (it->simulated_s - it->recorded_s) / it->recorded_s * 100);
    }
    printf("\n");
    printf("%-16s %6s %14s %14s %8s%s\n", "kind", "ops", "recorded ms", "simulated ms", "error",
           r.has_model ? "   compute model ms  error" : "");
    for (int k = 0; k < MDL_OP_NKINDS; k++) {
        const struct cmp_kind *ck = &r.kind[k];
        if (!ck->n) continue;
        printf("%-16s %6d %14.6f %14.6f %+7.2f%%", mdl_op_kind_name((enum mdl_op_kind)k), ck->n,
               ck->recorded_s * 1e3, ck->simulated_s * 1e3,
               ck->recorded_s > 0 ? (ck->simulated_s - ck->recorded_s) / ck->recorded_s * 100 : 0);
        if (r.has_model && !mdl_op_is_coll((enum mdl_op_kind)k))
            printf("   %15.6f %+7.2f%%", ck->model_s * 1e3,
                   ck->recorded_s > 0 ? (ck->model_s - ck->recorded_s) / ck->recorded_s * 100 : 0);
        printf("\n");
    }
    if (r.layer_iter >= 0) printf("\nlayers in iteration %d:", r.layer_iter);
    printf("\n%-8s %14s %14s %8s\n", "layer", "recorded ms", "simulated ms", "error");
    for (int i = 0; i < r.nlayers; i++) {
        const struct cmp_layer *l = &r.layers[i];
        printf("%-8d %14.6f %14.6f %+7.2f%%\n", l->layer, l->recorded_s * 1e3, l->simulated_s * 1e3,
               l->recorded_s > 0 ? (l->simulated_s - l->recorded_s) / l->recorded_s * 100 : 0);
    }
    printf("\nworst ops (simulated - recorded):\n");
    for (int k = 0; k < r.nworst && k < 10; k++) {
        const struct cmp_op *o = &r.worst[k];
        double e = o->simulated_s - o->recorded_s;
        printf("  rank %d op %d %-14s %-16s recorded %10.3f us, simulated %10.3f us (%+.1f%%)\n",
               o->rank, o->op, mdl_op_kind_name((enum mdl_op_kind)o->kind), o->name,
               o->recorded_s * 1e6, o->simulated_s * 1e6,
               o->recorded_s > 0 ? e / o->recorded_s * 100 : 0);
    }
    if (!plotted)
        fprintf(stderr, "tpsim validate trace: gnuplot did not run; %s/ops.gp is written\n", out);
    if (v['g' - 'a']) print_against(&g);
    agn_release(&g);
    cmp_release(&r);
    return 0;
}

/* ------------------------------------------------------------------ validate layers */

static const char layers_help[] =
    "usage: tpsim validate layers [CSV] [--device PRESET] [--set KEY=VALUE ...]\n"
    "                             [--gemm-table TABLE] [--kernels KERNELS_CSV] [--json FILE]\n"
    "                             [--plot DIR]\n"
    "\n"
    "For each row of a layer-times CSV in the format of ../shared/refdata/layers/\n"
    "h100_megatron_1d_layer_times.csv (default: that file), simulates the row's shard (one rank\n"
    "of 1D tensor parallelism at degree tp, alone on one GPU, no communication) as eager PyTorch\n"
    "ran it: unfused kernels, the row's attention (bmm or flash) and execution (eager: every\n"
    "kernel launched by the host; graphs: one CUDA graph per layer forward and backward). Prints\n"
    "measured against simulated forward and backward time per layer, each row's error on their\n"
    "sum, and the median and max |error|. With the optional columns fwd_s_min and bwd_s_min it\n"
    "prints each row's spread, (median - min) / median; with spread_reps (rows measured in\n"
    "several processes, as validate/data/layers/h100_megatron_1d_layer_times_rerun.csv) the\n"
    "spread between the processes too.\n"
    "\n"
    "options:\n"
    "  --device PRESET  the device (default H100-SXM)\n"
    "  --set KEY=VALUE  change one of the device's parameters as a scenario's device: section\n"
    "                   would (gemm_efficiency=0.75, launch_overhead=30us); repeatable\n"
    "  --gemm-table T   price GEMMs by interpolating a measured GEMM table (format of\n"
    "                   ../shared/refdata/gemm), the roofline beyond it\n"
    "  --plot DIR       write DIR/layers.dat and, with gnuplot, DIR/layers.png and .svg\n"
    "                   (simulated against measured time per row)\n"
    "  --kernels CSV    compare kernel by kernel instead, for a layer-kernels CSV (format of\n"
    "                   ../shared/refdata/layers/h100_megatron_1d_layer_kernels.csv), summarised\n"
    "                   per op and phase\n"
    "  --json FILE      write {rows: [{name, tp, batch, attn, execution, measured_s,\n"
    "                   simulated_s, err_pct, ...}], median_abs_err_pct, max_abs_err_pct}\n"
    "  -h, --help       show this help\n";

/* validate layers --kernels: the per-kind table (and JSON). */
static int validate_kernels(const char *csv, const struct mdl_device *d, const char *dev,
                            const char *json)
{
    struct tps_error err = {0};
    struct lay_kresult r;
    if (lay_kernels(csv, d, &r, &err)) {
        lay_kresult_release(&r);
        return cli_report_error(&err);
    }
    printf("kernels    %s (%d rows)\ndevice     %s\n\n", csv, r.n, dev);
    printf("%-12s %-6s %5s %12s %12s %10s\n", "op", "phase", "rows", "median err", "median |err|",
           "max |err|");
    json_t *kinds = json_array();
    for (int i = 0; i < r.nkinds; i++) {
        const struct lay_kind *k = &r.kinds[i];
        printf("%-12s %-6s %5d %+11.1f%% %11.1f%% %9.1f%%\n", k->op, k->phase, k->n,
               k->median_err_pct, k->median_abs_err_pct, k->max_abs_err_pct);
        json_array_append_new(kinds,
                              json_pack("{s:s, s:s, s:i, s:f, s:f, s:f}", "op", k->op, "phase",
                                        k->phase, "rows", k->n, "median_err_pct", k->median_err_pct,
                                        "median_abs_err_pct", k->median_abs_err_pct,
                                        "max_abs_err_pct", k->max_abs_err_pct));
    }
    const struct lay_repeat *rp = &r.repeat;
    if (rp->shapes)
        printf("\nrepeatability: %d GEMM shapes measured more than once (%d rows) lie a median "
               "%.1f%% (max %.1f%%)\nfrom their shape's median time\n",
               rp->shapes, rp->rows, rp->median_pct, rp->max_pct);
    int code = 0;
    if (json)
        code = cli_write_json(json_pack("{s:s, s:s, s:o, s:{s:i, s:i, s:f, s:f}}", "csv", csv,
                                        "device", dev, "kinds", kinds, "repeatability", "shapes",
                                        rp->shapes, "rows", rp->rows, "median_pct", rp->median_pct,
                                        "max_pct", rp->max_pct),
                              json, "validate layers");
    else
        json_decref(kinds);
    lay_kresult_release(&r);
    return code;
}

struct layers_opts {
    const char *v[26];
    const char *set[32];
    int nset;
};

static int layers_option(int opt, const char *arg, void *ctx)
{
    struct layers_opts *o = ctx;
    if (opt == 's') {
        if (o->nset == 32) return cli_usage_error("validate layers", "%s", "at most 32 --set");
        o->set[o->nset++] = arg;
        return 0;
    }
    return store_option(opt, arg, o->v);
}

static int validate_layers(int argc, char **argv)
{
    static const struct option longs[] = {{"device", required_argument, NULL, 'd'},
                                          {"json", required_argument, NULL, 'j'},
                                          {"set", required_argument, NULL, 's'},
                                          {"gemm-table", required_argument, NULL, 'g'},
                                          {"kernels", required_argument, NULL, 'k'},
                                          {"plot", required_argument, NULL, 'p'},
                                          {0}};
    char csvbuf[1024];
    struct layers_opts o = {.v = {0}};
    const char **v = o.v, *csv = NULL;
    v['d' - 'a'] = "H100-SXM";
    int n, rc = cli_parse(argc, argv, 2, "validate layers", layers_help, "", longs, layers_option,
                          &o, &csv, 1, &n);
    if (rc) return rc == CLI_HELP_SHOWN ? 0 : rc;
    if (csv && v['k' - 'a'])
        return cli_usage_error("validate layers", "%s", "give CSV or --kernels, not both");
    if (!csv)
        csv = cli_project_path(TPSIM_REFDATA_DEFAULT "/layers/h100_megatron_1d_layer_times.csv",
                               csvbuf, sizeof csvbuf);
    struct mdl_device d;
    if (mdl_device_preset(v['d' - 'a'], &d) != 0)
        return cli_usage_error("validate layers", "unknown device '%s'", v['d' - 'a']);
    struct tps_error err = {0};
    for (int i = 0; i < o.nset; i++)
        if (scn_device_set(&d, MDL_BF16, o.set[i], &err)) return cli_report_error(&err);
    struct mdl_gemm_table tab = {0};
    if (v['g' - 'a']) {
        if (mdl_gemm_table_load(v['g' - 'a'], MDL_BF16, &tab, &err)) {
            mdl_gemm_table_release(&tab);
            return cli_report_error(&err);
        }
        d.gemm_table = &tab;
    }
    if (v['k' - 'a']) {
        rc = validate_kernels(v['k' - 'a'], &d, v['d' - 'a'], v['j' - 'a']);
        mdl_gemm_table_release(&tab);
        return rc;
    }
    struct lay_result res;
    if ((rc = lay_run(csv, &d, &res, &err)) != 0) {
        lay_release(&res);
        mdl_gemm_table_release(&tab);
        return cli_report_error(&err);
    }
    printf("layers     %s (%d rows)\ndevice     %s", csv, res.n, v['d' - 'a']);
    if (tab.points) printf(", GEMMs from %s (%d shapes)", tab.path, tab.points);
    printf("\n\n");
    printf("%-10s %3s %5s %-5s %-6s %10s %10s %10s %10s %8s %7s%s\n", "model", "tp", "batch",
           "attn", "exec", "meas fwd", "sim fwd", "meas bwd", "sim bwd", "error", "spread",
           res.has_reps ? "  spread" : "");
    printf("%-10s %3s %5s %-5s %-6s %10s %10s %10s %10s %8s %7s%s\n", "", "", "", "", "", "ms",
           "ms", "ms", "ms", "fwd+bwd", "meas", res.has_reps ? "   procs" : "");
    json_t *rows = json_array();
    for (int i = 0; i < res.n; i++) {
        const struct lay_row *w = &res.rows[i];
        printf("%-10s %3ld %5ld %-5s %-6s %10.3f %10.3f %10.3f %10.3f %+7.1f%%", w->name, w->tp,
               w->batch, w->attn, w->execution, w->meas_fwd_s * 1e3, w->sim_fwd_s * 1e3,
               w->meas_bwd_s * 1e3, w->sim_bwd_s * 1e3, w->err_pct);
        if (w->spread_pct >= 0)
            printf(" %6.1f%%", w->spread_pct);
        else
            printf(" %7s", "-");
        if (w->reps_spread_pct >= 0)
            printf(" %6.1f%%", w->reps_spread_pct);
        else if (res.has_reps)
            printf(" %7s", "-");
        printf("\n");
        json_t *row = json_pack(
            "{s:s, s:i, s:i, s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "name", w->name, "tp",
            (int)w->tp, "batch", (int)w->batch, "attn", w->attn, "execution", w->execution,
            "measured_s", w->meas_fwd_s + w->meas_bwd_s, "simulated_s", w->sim_fwd_s + w->sim_bwd_s,
            "err_pct", w->err_pct, "measured_fwd_s", w->meas_fwd_s, "simulated_fwd_s", w->sim_fwd_s,
            "measured_bwd_s", w->meas_bwd_s, "simulated_bwd_s", w->sim_bwd_s);
        if (w->spread_pct >= 0) json_object_set_new(row, "spread_pct", json_real(w->spread_pct));
        if (w->reps_spread_pct >= 0)
            json_object_set_new(row, "reps_spread_pct", json_real(w->reps_spread_pct));
        json_array_append_new(rows, row);
    }
    printf("\nmedian |error| %.1f%%, max %.1f%% over %d rows (forward + backward per layer)\n",
           res.median_abs_err_pct, res.max_abs_err_pct, res.n);
    if (res.median_spread_pct >= 0)
        printf("the measurement's own spread, (median - min) / median per row: median %.1f%%\n",
               res.median_spread_pct);
    if (res.has_reps)
        printf("spread procs: the processes' medians, (slowest - fastest) / median per row\n");
    int code = 0, plotted = 0;
    if (v['p' - 'a']) {
        if (lay_write_plot(&res, v['p' - 'a'], &plotted, &err))
            code = cli_report_error(&err);
        else if (plotted)
            fprintf(stderr, "tpsim validate layers: plot in %s/layers.png and %s/layers.svg\n",
                    v['p' - 'a'], v['p' - 'a']);
        else
            fprintf(stderr,
                    "tpsim validate layers: gnuplot did not run; %s/layers.dat is written\n",
                    v['p' - 'a']);
    }
    if (!code && v['j' - 'a']) {
        json_t *top = json_pack("{s:s, s:s, s:o, s:f, s:f}", "csv", csv, "device", v['d' - 'a'],
                                "rows", rows, "median_abs_err_pct", res.median_abs_err_pct,
                                "max_abs_err_pct", res.max_abs_err_pct);
        if (res.median_spread_pct >= 0)
            json_object_set_new(top, "median_spread_pct", json_real(res.median_spread_pct));
        code = cli_write_json(top, v['j' - 'a'], "validate layers");
    } else
        json_decref(rows);
    lay_release(&res);
    mdl_gemm_table_release(&tab);
    return code;
}

/* ------------------------------------------------------------------ validate e2e */

static const char e2e_help[] =
    "usage: tpsim validate e2e [CSV] [--runs FILE] [--device PRESET] [--platform PRESET]\n"
    "                          [--dtype T] [--max-gpus N] [--json FILE]\n"
    "\n"
    "For each row of an end-to-end table in the format of ../shared/refdata/e2e/\n"
    "korthikanti2022_table5_iteration_time_via_calculon.csv, simulates one\n"
    "training iteration of the whole job: every GPU of tensor_par x pipeline_par x data_par on\n"
    "enough machines of the platform, the row's micro-batch, global batch, pipeline\n"
    "interleaving and recompute mode (full; or selective, with sequence parallelism when the\n"
    "mode names seq_par), vocabulary 51,200, Megatron-LM's fused kernels and its GPT layer's\n"
    "dropout on the attention probabilities. Prints measured against simulated iteration time\n"
    "and model TFLOP/s per GPU, each row's error, and the median and max |error|.\n"
    "\n"
    "A table in the format of ../shared/refdata/e2e/megatron_readme_2021_a100_weak_scaling.csv\n"
    "(Megatron-LM's weak-scaling runs: model_parallel_size, num_gpus, batch_size and the achieved\n"
    "TFLOP/s per GPU) is read too: tensor parallel inside a machine, pipeline parallel beyond,\n"
    "data parallel over the rest; full recomputation, sequence 2048; the measured time is\n"
    "Narayanan et al. 2021's FLOP count over the achieved FLOP/s (docs/validation.md). How each\n"
    "row was run comes from its optional columns or from a runs table (--runs), by model_size:\n"
    "attn_heads (default: head dimension 128), micro_batch (1), pipeline_interleaving (1),\n"
    "ddp (torch: gradients reduced under the backward; local, the default: after it) and\n"
    "async_grad_allreduce (true, the default: the TP input gradient's all-reduce beside the\n"
    "weight-gradient GEMM; false: after it, as Megatron-LM's code before late 2021).\n"
    "\n"
    "A table of production recipes in the format of ../shared/refdata/e2e/\n"
    "dgxc_bench_eos_h100_gpt3_nemotron4.csv (each row's model shape, degrees, batch, precision\n"
    "BF16 or FP8 and step time) runs each row in its precision on H100-SXM GPUs in dgx-h100\n"
    "machines (unless --device, --platform), with FlashAttention and sequence parallelism; its\n"
    "runs table (--runs) gives, by release and model, recompute, tp_comm_overlap,\n"
    "distributed_optimizer, overlap_grad_reduce, overlap_param_gather, untied_embeddings,\n"
    "grad_reduce_in_bf16, fp8_param_gather (FP8 rows), virtual_stages, overlap_p2p_comm\n"
    "(interleaved rows) and batch_p2p_sync (empty: true). The FP8/BF16\n"
    "step-time ratio of every configuration measured in both follows the rows. A table in the\n"
    "format of ../shared/refdata/e2e/\n"
    "nemo_long_context_cp_llama2_7b_h100_fp8.csv (a model preset, degrees with CP, batch,\n"
    "precision and model TFLOP/s per GPU) is read too: its step times are NeMo's Llama FLOP\n"
    "formula over the TFLOP/s of all GPUs (docs/validation.md); its runs table is keyed by model.\n"
    "\n"
    "Without CSV, every table of ../shared/refdata/e2e above is run, each on its own GPUs and\n"
    "with its runs table under scenarios/validation (the weak-scaling one with the settings of\n"
    "Megatron-LM's examples/sc21/run_table_1.sh; several minutes on 2 cores), then the median\n"
    "and max |error| over all their rows.\n"
    "\n"
    "options:\n"
    "  --runs FILE        how a weak-scaling, recipe or TFLOP/s table's rows were run (above)\n"
    "  --device PRESET    the GPU (default: the table's, A100-80GB or H100-SXM)\n"
    "  --platform PRESET  the machines (default: the table's, dgx-a100 or dgx-h100); nodes=\n"
    "                     follows from num_gpus\n"
    "  --dtype T          training dtype of the A100 tables: fp16 (default, as their runs),\n"
    "                     bf16 or fp32 (a recipe or TFLOP/s table's rows give their own)\n"
    "  --max-gpus N       only the rows of at most N GPUs (the largest take minutes)\n"
    "  --json FILE        write {rows: [{table, name, gpus, tp, pp, dp, micro_batch,\n"
    "                     virtual_stages, measured_s,\n"
    "                     simulated_s, err_pct, measured_tflops_per_gpu,\n"
    "                     simulated_tflops_per_gpu, memory_gb_per_gpu, breakdown: {compute_s,\n"
    "                     tp_s, cp_s, ep_s, dp_s, host_wait_s, pipeline_bubble_s} as run\n"
    "                     --json's}], tables: [{csv, rows,\n"
    "                     median_abs_err_pct, max_abs_err_pct}], median_abs_err_pct,\n"
    "                     max_abs_err_pct} (the last two over every row)\n"
    "  -h, --help         show this help\n";

static void e2e_progress(int i, const char *name, void *ctx)
{
    (void)ctx;
    if (isatty(2)) fprintf(stderr, "\r[%d] simulating %-60s", i + 1, name);
}

/* Prints one table's rows and summary; appends its rows to `rows` (JSON, each with its table)
 * and their |error| to abs_err (at *nerr). */
/* A recipe table's FP8 rows against the BF16 rows of the same release, model and GPUs: the
 * measured and the simulated step-time ratio FP8 / BF16, and how far apart they are. */
static void e2e_print_ratios(const struct e2e_result *res)
{
    int n = 0;
    double *dev = malloc((size_t)(res->n + 1) * sizeof *dev);
    if (!dev) return;
    for (int i = 0; i < res->n; i++) {
        const struct e2e_row *f = &res->rows[i];
        if (!f->recipe || !f->fp8) continue;
        for (int j = 0; j < res->n; j++) {
            const struct e2e_row *b = &res->rows[j];
            if (b->fp8 || b->gpus != f->gpus || strcmp(b->release, f->release) ||
                strncmp(b->name, f->name, strlen(f->name) - strlen(strstr(f->name, "FP8"))))
                continue;
            double meas = f->measured_s / b->measured_s, sim = f->simulated_s / b->simulated_s;
            if (n == 0)
                printf("\n%-42s %5s %10s %10s %8s\n", "FP8 / BF16 step time", "gpus", "measured",
                       "simulated", "error");
            dev[n] = fabs(sim / meas - 1) * 100;
            printf("%-42.*s %5ld %10.3f %10.3f %+7.1f%%\n",
                   (int)(strlen(f->name) - strlen(strstr(f->name, "FP8"))), f->name, f->gpus, meas,
                   sim, (sim / meas - 1) * 100);
            n++;
        }
    }
    if (n > 0) {
        double median, max;
        tps_median_max(dev, n, &median, &max);
        printf("\nFP8/BF16 ratio: median |error| %.1f%%, max %.1f%% over %d pairs\n", median, max,
               n);
    }
    free(dev);
}

static void e2e_print(const char *csv, const struct e2e_result *res, const char *device,
                      const char *platform, const char *dtype, long max_gpus, json_t *rows,
                      double *abs_err, int *nerr)
{
    if (res->skipped) printf("(%d rows above --max-gpus %ld left out)\n", res->skipped, max_gpus);
    bool recipe = res->n > 0 && res->rows[0].recipe;
    printf("end-to-end %s (%d rows)\ndevice     %s on %s machines, %s\n\n", csv, res->n, device,
           platform, recipe ? "each row's precision (BF16, or FP8 over it)" : dtype);
    if (res->n == 0) return;
    printf("%-42s %5s %3s %3s %3s %3s %3s %10s %10s %8s %9s %9s %8s\n", "model and mode", "gpus",
           "tp", "pp", "dp", "mb", "v", "measured", "simulated", "error", "meas.", "sim.",
           "memory");
    printf("%-42s %5s %3s %3s %3s %3s %3s %10s %10s %8s %9s %9s %8s\n", "", "", "", "", "", "", "",
           "s", "s", "", "TFLOP/s", "TFLOP/s", "GB/GPU");
    for (int i = 0; i < res->n; i++) {
        const struct e2e_row *w = &res->rows[i];
        printf("%-42s %5ld %3ld %3ld %3ld %3ld %3ld %10.3f %10.3f %+7.1f%% %9.1f %9.1f %7.1f%s\n",
               w->name, w->gpus, w->tp, w->pp, w->dp, w->micro_batch, w->interleave, w->measured_s,
               w->simulated_s, w->err_pct, w->measured_tflops, w->simulated_tflops, w->memory_gb,
               w->memory_fits ? "" : "!");
        json_t *row = json_pack(
            "{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:b}", "table",
            csv, "name", w->name, "gpus", (int)w->gpus, "tp", (int)w->tp, "pp", (int)w->pp, "dp",
            (int)w->dp, "micro_batch", (int)w->micro_batch, "virtual_stages", (int)w->interleave,
            "measured_s", w->measured_s, "simulated_s", w->simulated_s, "err_pct", w->err_pct,
            "measured_tflops_per_gpu", w->measured_tflops, "simulated_tflops_per_gpu",
            w->simulated_tflops, "memory_gb_per_gpu", w->memory_gb, "memory_fits", w->memory_fits);
        /* where the simulated iteration goes, as `run --json` says it */
        json_object_set_new(row, "breakdown", report_breakdown_json(&w->breakdown, true));
        /* the context-parallel degree, where a row has one (the table's context_par column) */
        if (w->cp > 1) json_object_set_new(row, "cp", json_integer(w->cp));
        /* a recipe's precision and TP overlap */
        if (w->recipe) {
            json_object_set_new(row, "precision", json_string(w->fp8 ? "fp8" : "bf16"));
            json_object_set_new(row, "tp_comm_overlap", json_boolean(w->tp_comm_overlap));
        }
        json_array_append_new(rows, row);
        abs_err[(*nerr)++] = fabs(w->err_pct);
    }
    printf(
        "\nmedian |error| %.1f%%, max %.1f%% over %d rows (iteration time; model TFLOP/s per GPU "
        "from the model's FLOPs, the same for measured and simulated)\n",
        res->median_abs_err_pct, res->max_abs_err_pct, res->n);
    e2e_print_ratios(res);
}

/* The tables `validate e2e` runs without an argument, under the reference data's e2e/: the runs
 * table of each (NULL: none), under the project, and the GPUs and machines each was measured on
 * (what --device and --platform give when a CSV is named). */
static const struct e2e_table {
    const char *csv, *runs, *device, *platform;
} e2e_tables[] = {
    {"korthikanti2022_table5_iteration_time_via_calculon.csv", NULL, "A100-80GB", "dgx-a100"},
    {"megatron_readme_2021_a100_weak_scaling.csv",
     "scenarios/validation/megatron-2021-weak-scaling-runs.csv", "A100-80GB", "dgx-a100"},
    {"dgxc_bench_eos_h100_gpt3_nemotron4.csv", "scenarios/validation/dgxc-recipes-runs.csv",
     "H100-SXM", "dgx-h100"},
    {"nemo_long_context_cp_llama2_7b_h100_fp8.csv",
     "scenarios/validation/nemo-long-context-runs.csv", "H100-SXM", "dgx-h100"},
};
#define E2E_NTABLES ((int)(sizeof e2e_tables / sizeof e2e_tables[0]))

static int validate_e2e(int argc, char **argv)
{
    static const struct option longs[] = {{"device", required_argument, NULL, 'd'},
                                          {"platform", required_argument, NULL, 'p'},
                                          {"dtype", required_argument, NULL, 't'},
                                          {"json", required_argument, NULL, 'j'},
                                          {"max-gpus", required_argument, NULL, 'g'},
                                          {"runs", required_argument, NULL, 'r'},
                                          {0}};
    char csvbuf[E2E_NTABLES][1024], runbuf[E2E_NTABLES][1024];
    const char *v[26] = {0}, *csv = NULL, *csvs[E2E_NTABLES], *runs[E2E_NTABLES] = {0};
    const char *devs[E2E_NTABLES], *plats[E2E_NTABLES];
    long max_gpus = 0;
    v['t' - 'a'] = "fp16";
    int n, rc = cli_parse(argc, argv, 2, "validate e2e", e2e_help, "", longs, store_option, v, &csv,
                          1, &n);
    if (rc) return rc == CLI_HELP_SHOWN ? 0 : rc;
    int ntables = csv ? 1 : E2E_NTABLES;
    csvs[0] = csv;
    runs[0] = v['r' - 'a'];
    if (!csv && v['r' - 'a'])
        return cli_usage_error("validate e2e",
                               "%s goes with the CSV it describes (without a CSV, "
                               "each table has its own)",
                               "--runs");
    for (int k = 0; !csv && k < E2E_NTABLES; k++) {
        char rel[256];
        snprintf(rel, sizeof rel, "%s/e2e/%s", TPSIM_REFDATA_DEFAULT, e2e_tables[k].csv);
        csvs[k] = cli_project_path(rel, csvbuf[k], sizeof csvbuf[k]);
        runs[k] = e2e_tables[k].runs
                      ? cli_project_path(e2e_tables[k].runs, runbuf[k], sizeof runbuf[k])
                      : NULL;
        devs[k] = e2e_tables[k].device;
        plats[k] = e2e_tables[k].platform;
    }
    struct tps_error err = {0};
    if (csv) { /* a named table: measured where a table of its format was */
        enum e2e_format fmt;
        if (e2e_format_of(csv, &fmt, &err)) return cli_report_error(&err);
        int k = fmt == E2E_RECIPE || fmt == E2E_TFLOPS ? 2 : 0;
        devs[0] = e2e_tables[k].device;
        plats[0] = e2e_tables[k].platform;
    }
    struct mdl_device d[E2E_NTABLES];
    for (int k = 0; k < ntables; k++) {
        if (v['d' - 'a']) devs[k] = v['d' - 'a'];
        if (v['p' - 'a']) plats[k] = v['p' - 'a'];
        if (mdl_device_preset(devs[k], &d[k]) != 0)
            return cli_usage_error("validate e2e", "unknown device '%s'", devs[k]);
    }
    enum mdl_dtype dt;
    if (mdl_dtype_parse(v['t' - 'a'], &dt) != 0)
        return cli_usage_error("validate e2e", "unknown dtype '%s' (expected fp16, bf16 or fp32)",
                               v['t' - 'a']);
    if (v['g' - 'a'] &&
        (rc = cli_parse_count("validate e2e", "--max-gpus", v['g' - 'a'], 1, 100000000, &max_gpus)))
        return rc;
    struct e2e_result res[E2E_NTABLES];
    memset(res, 0, sizeof res);
    for (int k = 0; k < ntables; k++) { /* the tables are inputs: no output goes over one */
        tps_input_note(csvs[k]);
        if (runs[k]) tps_input_note(runs[k]);
    }
    if (v['j' - 'a'] && tps_output_check(v['j' - 'a'], &err)) return cli_report_error(&err);
    /* every table is read and simulated before anything is printed: an error prints nothing */
    for (int k = 0; !rc && k < ntables; k++) {
        if (ntables > 1 && isatty(2))
            fprintf(stderr, "\rtable %d of %d: %s\n", k + 1, ntables, csvs[k]);
        rc = e2e_run(csvs[k], runs[k], &d[k], plats[k], dt, max_gpus, e2e_progress, NULL, &res[k],
                     &err);
        if (isatty(2)) fprintf(stderr, "\r%80s\r", "");
    }
    int total = 0;
    for (int k = 0; k < ntables; k++)
        total += res[k].n;
    if (!rc && total == 0)
        rc = tps_error_set(&err, TPS_EINVAL, NULL, 0, 0, "--max-gpus",
                           "no row of %s has at most %ld GPUs", ntables > 1 ? "any table" : csvs[0],
                           max_gpus);
    double *abs_err = rc ? NULL : malloc((size_t)total * sizeof *abs_err);
    if (!rc && !abs_err) rc = tps_error_oom(&err);
    if (rc) {
        for (int k = 0; k < ntables; k++)
            e2e_release(&res[k]);
        free(abs_err);
        return cli_report_error(&err);
    }
    json_t *rows = json_array(), *tables = json_array();
    int nerr = 0;
    for (int k = 0; k < ntables; k++) {
        if (k) printf("\n");
        e2e_print(csvs[k], &res[k], devs[k], plats[k], v['t' - 'a'], max_gpus, rows, abs_err,
                  &nerr);
        json_array_append_new(tables,
                              json_pack("{s:s, s:i, s:f, s:f}", "csv", csvs[k], "rows", res[k].n,
                                        "median_abs_err_pct", res[k].median_abs_err_pct,
                                        "max_abs_err_pct", res[k].max_abs_err_pct));
    }
    double median, max;
    tps_median_max(abs_err, nerr, &median, &max);
    if (ntables > 1)
        printf("\nall %d tables: median |error| %.1f%%, max %.1f%% over %d rows\n", ntables, median,
               max, nerr);
    int code = 0;
    if (v['j' - 'a']) {
        json_t *top =
            json_pack("{s:s, s:s, s:s, s:o, s:o, s:f, s:f}", "csv", ntables > 1 ? "all" : csvs[0],
                      "device", ntables > 1 && !v['d' - 'a'] ? "per table" : devs[0], "platform",
                      ntables > 1 && !v['p' - 'a'] ? "per table" : plats[0], "tables", tables,
                      "rows", rows, "median_abs_err_pct", median, "max_abs_err_pct", max);
        code = cli_write_json(top, v['j' - 'a'], "validate e2e");
    } else {
        json_decref(rows);
        json_decref(tables);
    }
    for (int k = 0; k < ntables; k++)
        e2e_release(&res[k]);
    free(abs_err);
    return code;
}

int cli_validate(int argc, char **argv)
{
    if (argc < 2 || cli_is_help(argv[1])) {
        fputs(val_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_INPUT : 0;
    }
    if (!strcmp(argv[1], "profile")) return validate_profile(argc, argv);
    if (!strcmp(argv[1], "trace")) return validate_trace(argc, argv);
    if (!strcmp(argv[1], "layers")) return validate_layers(argc, argv);
    if (!strcmp(argv[1], "e2e")) return validate_e2e(argc, argv);
    if (strcmp(argv[1], "nccl"))
        return cli_usage_error(
            "validate", "unknown subcommand '%s' (expected nccl, profile, trace, layers or e2e)",
            argv[1]);
    static const struct option longs[] = {
        {"manifest", required_argument, NULL, 'm'}, {"refdata", required_argument, NULL, 'r'},
        {"out", required_argument, NULL, 'o'},      {"markdown", required_argument, NULL, 'd'},
        {"json", required_argument, NULL, 'j'},     {0}};
    char mbuf[1024], rbuf[1024];
    const char *v[26] = {0};
    v['m' - 'a'] = cli_project_path("scenarios/validation/nccl.yaml", mbuf, sizeof mbuf);
    v['r' - 'a'] = cli_project_path(TPSIM_REFDATA_DEFAULT, rbuf, sizeof rbuf);
    v['o' - 'a'] = "validation-out";
    int n, rc = cli_parse(argc, argv, 2, "validate", val_help, "", longs, store_option, v, NULL, 0,
                          &n);
    if (rc) return rc == CLI_HELP_SHOWN ? 0 : rc;
    const char *manifest = v['m' - 'a'], *refdata = v['r' - 'a'], *out = v['o' - 'a'],
               *md = v['d' - 'a'];
    /* the output directory first: a bad --out fails before minutes of simulation */
    if (mkdir(out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "tpsim validate: cannot create %s: %s\n", out, strerror(errno));
        return CLI_EXIT_INPUT;
    }
    struct tps_error err = {0};
    struct man_result res;
    int tty = isatty(2);
    rc = man_run(manifest, refdata, tty ? progress_line : NULL, NULL, &res, &err);
    if (tty) fprintf(stderr, "\n");
    int code = rc ? cli_report_error(&err) : 0;
    if (!rc) {
        for (int i = 0; i < res.n; i++)
            print_log(stdout, &res.logs[i], 0);
        print_summary(stdout, &res, 0);
        int plotted = 0;
        if (man_write(&res, out, &plotted, &err) != TPS_OK)
            code = cli_report_error(&err);
        else if (plotted)
            fprintf(stderr, "tpsim validate: plots in %s/busbw.png and %s/busbw.svg\n", out, out);
        else
            fprintf(stderr,
                    "tpsim validate: gnuplot did not run (install gnuplot-nox); the data and "
                    "%s/busbw.gp are written\n",
                    out);
        int bad = cli_output_ok(md);
        FILE *f = md && !bad ? fopen(md, "w") : NULL;
        if (bad)
            code = bad;
        else if (md && !f) {
            fprintf(stderr, "tpsim validate: cannot write %s: %s\n", md, strerror(errno));
            code = CLI_EXIT_INPUT;
        }
        if (f) {
            print_summary(f, &res, 1);
            for (int i = 0; i < res.n; i++)
                print_log(f, &res.logs[i], 1);
            if (fclose(f) != 0) {
                fprintf(stderr, "tpsim validate: cannot write %s: %s\n", md, strerror(errno));
                code = CLI_EXIT_INPUT;
            }
        }
        if (!code && v['j' - 'a']) code = cli_write_json(nccl_json(&res), v['j' - 'a'], "validate");
    }
    man_release(&res);
    return code;
}
