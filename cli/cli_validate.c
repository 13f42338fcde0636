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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common/ydoc.h"
#include "models/collective.h"
#include "platforms/spec.h"
#include "cli/cliutil.h"
#include "sim/engine.h"
#include "core/scenario.h"
#include "core/trace.h"
#include "models/compute.h"
#include "validate/calibrate.h"
#include "validate/ncclog.h"
#include "validate/profile.h"

#ifndef TPSIM_REFDATA_DEFAULT
#define TPSIM_REFDATA_DEFAULT "../shared/refdata"
#endif

/* NAME.meta.yaml beside NAME.raw.txt (or beside any LOG: LOG.meta.yaml); "" if none. */
static void meta_path(const char *log, char *out, size_t len)
{
    size_t n = strlen(log);
    if (n > 8 && !strcmp(log + n - 8, ".raw.txt"))
        snprintf(out, len, "%.*s.meta.yaml", (int)(n - 8), log);
    else
        snprintf(out, len, "%s.meta.yaml", log);
    struct stat st;
    if (stat(out, &st) != 0) out[0] = '\0';
}

/* The collective and rank count of a log: options first, then the log, then its meta file. */
static int log_shape(const struct ncl_log *l, const char *path, int *op, int *ranks,
                     struct tps_error *err)
{
    char mp[1024];
    meta_path(path, mp, sizeof mp);
    struct ncl_meta m = {.op = -1};
    if (mp[0]) {
        int rc = ncl_meta_read(mp, &m, err);
        if (rc) return rc;
    }
    if (*op < 0) *op = l->op >= 0 ? l->op : m.op;
    if (*ranks <= 0) *ranks = l->ranks ? l->ranks : m.nodes * m.gpus_per_node;
    if (*op < 0)
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "op",
                             "the log does not say which collective it measured: give --op");
    if (*ranks <= 0)
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "ranks",
                             "the log does not say how many ranks took part: give --ranks");
    return TPS_OK;
}

/* ------------------------------------------------------------------ calibrate */

static const char cal_help[] =
    "usage: tpsim calibrate LOG --platform 'PRESET [key=value ...]' [--op OP] [--ranks N]\n"
    "                       [--algorithm A] [-o FILE]\n"
    "\n"
    "Fits a preset platform to a real nccl-tests log: the bandwidth parameter that bounds the\n"
    "collective (nic_rate across machines, gpu_link on one dgx machine, pcie_rate on PCIe\n"
    "machines) and, per protocol (LL, LL128, Simple), the base latency, per-step latency and\n"
    "bandwidth efficiency. Weighted least squares (GSL) on the closed form of the algorithm; the\n"
    "report gives the fit error and which rows fitted which protocol. The calibrated platform is\n"
    "written to FILE (default: standard output) as a preset file with an nccl: section.\n"
    "\n"
    "options:\n"
    "  --platform SPEC  the preset and parameters describing the system, e.g. 'dgx-a100 nodes=2'\n"
    "  --op OP          collective of the log (default: from the log or LOG's .meta.yaml)\n"
    "  --ranks N        ranks of the log (default: from its device list or .meta.yaml)\n"
    "  --algorithm A    ring | tree | direct | hierarchical (default: the tuner's choice at the\n"
    "                   log's largest size)\n"
    "  -o FILE          write the calibrated platform here\n"
    "  -h, --help       show this help\n";

int cli_calibrate(int argc, char **argv)
{
    const char *log = NULL, *plat = NULL, *outp = NULL;
    int op = -1, ranks = 0, algo = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            fputs(cal_help, stdout);
            return 0;
        }
        if (a[0] != '-') {
            if (log) return cli_usage_error("calibrate", "unexpected argument '%s'", a);
            log = a;
            continue;
        }
        if (i + 1 >= argc) return cli_usage_error("calibrate", "option '%s' needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--platform"))
            plat = v;
        else if (!strcmp(a, "-o"))
            outp = v;
        else if (!strcmp(a, "--op")) {
            enum mdl_op_kind k;
            if (mdl_op_kind_parse(v, &k) || !mdl_op_is_coll(k))
                return cli_usage_error("calibrate", "unknown --op '%s'", v);
            op = k;
        } else if (!strcmp(a, "--ranks")) {
            char *end;
            ranks = (int)strtol(v, &end, 10);
            if (*end || ranks < 2) return cli_usage_error("calibrate", "bad --ranks '%s'", v);
        } else if (!strcmp(a, "--algorithm")) {
            enum mdl_coll_algo x;
            if (mdl_algo_parse(v, &x))
                return cli_usage_error("calibrate", "unknown --algorithm '%s'", v);
            algo = x;
        } else
            return cli_usage_error("calibrate", "unknown option '%s'", a);
    }
    if (!log) return cli_usage_error("calibrate", "%s", "missing LOG");
    if (!plat) return cli_usage_error("calibrate", "%s", "missing --platform");
    char buf[1024], *words[64];
    int nw = cli_split_words(plat, buf, sizeof buf, words, 64);
    if (nw < 1) return cli_usage_error("calibrate", "%s", "empty --platform");
    if (strchr(words[0], '.'))
        return cli_usage_error("calibrate", "--platform must be a preset with parameters, got '%s'",
                               words[0]);
    struct tps_error err = {0};
    struct ncl_log l;
    if (ncl_log_read(log, &l, &err)) return cli_report_error(&err);
    struct cal_result r;
    struct cal_options o = {.preset = words[0], .nkv = nw - 1, .kv = words + 1, .algo = algo};
    int rc = log_shape(&l, log, &op, &ranks, &err);
    o.op = op;
    o.ranks = ranks;
    if (!rc) rc = cal_fit(&l, &o, &r, &err);
    if (rc) {
        ncl_log_release(&l);
        return cli_report_error(&err);
    }
    fprintf(stderr, "tpsim calibrate: %s, %s over %d ranks, %d rows, %s algorithm\n", log,
            mdl_op_kind_name((enum mdl_op_kind)op), ranks, l.nrows,
            mdl_algo_name((enum mdl_coll_algo)r.algo));
    fprintf(stderr, "  %s: %.3f GB/s -> %.3f GB/s\n", r.param, r.param_old / 1e9,
            r.param_new / 1e9);
    for (int p = MDL_PROTO_LL; p < MDL_PROTO_N; p++) {
        if (r.first[p] == r.last[p]) {
            fprintf(stderr, "  %-6s no rows (defaults kept)\n", mdl_proto_name(p));
            continue;
        }
        fprintf(stderr, "  %-6s rows %g..%g B: base %.2f us, per step %.3f us, efficiency %.3f\n",
                mdl_proto_name(p), l.rows[r.first[p]].bytes, l.rows[r.last[p] - 1].bytes,
                r.nccl.base_s[p] * 1e6, r.nccl.hop_s[p] * 1e6, r.nccl.eff[p]);
    }
    fprintf(stderr,
            "  fit error on these rows: median %.2f%%, max %.2f%% (calibration data, not "
            "a score)\n",
            r.median_err, r.max_err);
    FILE *f = outp ? fopen(outp, "w") : stdout;
    if (!f) {
        fprintf(stderr, "tpsim calibrate: %s: %s\n", outp, strerror(errno));
        ncl_log_release(&l);
        return CLI_EXIT_INPUT;
    }
    rc = cal_write(&r, &o, log, f);
    if (outp && fclose(f) != 0) rc = -1;
    ncl_log_release(&l);
    if (rc) {
        fprintf(stderr, "tpsim calibrate: cannot write %s\n", outp ? outp : "output");
        return CLI_EXIT_INPUT;
    }
    return 0;
}

/* ------------------------------------------------------------------ validate nccl */

static const char val_help[] =
    "usage: tpsim validate nccl [--manifest FILE] [--refdata DIR] [--out DIR] [--markdown FILE]\n"
    "       tpsim validate profile [--profile CSV] [--device PRESET]   (see validate profile -h)\n"
    "       tpsim validate trace TRACE_DIR [--platform P | --scenario S]   (see -h there)\n"
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
    "  -h, --help       show this help\n";

struct vrow {
    double bytes, meas_us, sim_us, meas_bus, sim_bus, err;
    char how[32];
};

struct vlog {
    char name[160], platform[256];
    int fit, op, ranks, nrows;
    struct vrow *rows;
    double median, max; /* over rows >= 1 MiB, |err| % */
    int scored;         /* rows >= 1 MiB */
};

static void summarize(const double *v, int n, double *median, double *max)
{
    double *s = malloc((size_t)(n + 1) * sizeof *s);
    *median = *max = 0;
    if (!s || n == 0) {
        free(s);
        return;
    }
    memcpy(s, v, (size_t)n * sizeof *s);
    gsl_sort(s, 1, (size_t)n);
    *median = gsl_stats_median_from_sorted_data(s, 1, (size_t)n);
    *max = s[n - 1];
    free(s);
}

/* Simulates one manifest entry. */
static int validate_log(const struct tps_ydoc *d, int entry, int idx, const char *refdata,
                        const char *base, struct vlog *v, struct tps_error *err)
{
    static const char *const keys[] = {"log", "platform", "role", "note", NULL};
    char f[64];
    snprintf(f, sizeof f, "logs[%d]", idx);
    int rc = tps_ydoc_check_map(d, entry, f, keys, err);
    const char *name = NULL, *role = "eval";
    int lid = tps_ydoc_get(d, entry, "log"), pid = tps_ydoc_get(d, entry, "platform");
    int rid = tps_ydoc_get(d, entry, "role");
    if (!rc && !lid) rc = tps_ydoc_fail(d, entry, "log", err, "missing");
    if (!rc && !pid) rc = tps_ydoc_fail(d, entry, "platform", err, "missing");
    if (!rc) rc = tps_ydoc_str(d, lid, "log", &name, err);
    if (!rc && rid) rc = tps_ydoc_str(d, rid, "role", &role, err);
    if (!rc && strcmp(role, "fit") && strcmp(role, "eval"))
        rc = tps_ydoc_fail(d, rid, "role", err, "expected fit or eval, got '%s'", role);
    if (rc) return rc;
    snprintf(v->name, sizeof v->name, "%s", name);
    v->fit = !strcmp(role, "fit");
    char path[1024];
    snprintf(path, sizeof path, "%s/nccl/%s.raw.txt", refdata, name);
    struct ncl_log l;
    if ((rc = ncl_log_read(path, &l, err))) return rc;
    v->op = -1;
    v->ranks = 0;
    rc = log_shape(&l, path, &v->op, &v->ranks, err);
    struct plat_topo t;
    if (!rc)
        rc = plat_spec_parse(d, pid, "platform", base, &t, err);
    else
        plat_topo_init(&t, "");
    if (!rc && v->ranks > t.ngpus)
        rc =
            tps_error_set(err, TPS_EINVAL, d->path, 0, 0, "platform",
                          "%s has %d ranks but its platform only %d GPUs", name, v->ranks, t.ngpus);
    snprintf(v->platform, sizeof v->platform, "%s", t.desc[0] ? t.desc : t.name);
    v->rows = calloc((size_t)l.nrows + 1, sizeof *v->rows);
    if (!rc && !v->rows) rc = tps_error_set(err, TPS_ENOMEM, NULL, 0, 0, NULL, "out of memory");
    double *errs = calloc((size_t)l.nrows + 1, sizeof *errs);
    double factor = mdl_coll_busbw_factor((enum mdl_op_kind)v->op, v->ranks);
    for (int i = 0; !rc && i < l.nrows; i++) {
        const struct ncl_row *m = &l.rows[i];
        if (m->bytes <= 0) continue;
        struct sim_coll_how how = {0};
        double ts = 0;
        rc = sim_collective_time(&t, (enum mdl_op_kind)v->op, v->ranks, m->bytes, &how, &ts, err);
        if (rc) break;
        struct vrow *r = &v->rows[v->nrows++];
        r->bytes = m->bytes;
        r->meas_us = m->time_us;
        r->sim_us = ts * 1e6;
        r->meas_bus = m->busbw;
        r->sim_bus = m->bytes / ts / 1e9 * factor;
        r->err = (r->sim_us - r->meas_us) / r->meas_us * 100;
        snprintf(r->how, sizeof r->how, "%s/%s", mdl_algo_name((enum mdl_coll_algo)how.algo),
                 mdl_proto_name((enum mdl_coll_proto)how.proto));
        if (m->bytes >= 1 << 20 && errs) errs[v->scored++] = fabs(r->err);
    }
    if (!rc) summarize(errs, v->scored, &v->median, &v->max);
    free(errs);
    plat_topo_release(&t);
    ncl_log_release(&l);
    return rc;
}

static void print_log(FILE *f, const struct vlog *v, int md)
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
        const struct vrow *r = &v->rows[i];
        if (md)
            fprintf(f, "| %.0f | %.2f | %.2f | %+.1f | %.2f | %.2f | %s |\n", r->bytes, r->meas_us,
                    r->sim_us, r->err, r->meas_bus, r->sim_bus, r->how);
        else
            fprintf(f, "%14.0f %13.2f %13.2f %+9.1f %10.2f %10.2f  %s\n", r->bytes, r->meas_us,
                    r->sim_us, r->err, r->meas_bus, r->sim_bus, r->how);
    }
}

static void print_summary(FILE *f, const struct vlog *v, int n, int md)
{
    double *all = NULL;
    int nall = 0;
    for (int i = 0; i < n; i++)
        nall += v[i].fit ? 0 : v[i].nrows;
    all = malloc((size_t)(nall + 1) * sizeof *all);
    nall = 0;
    if (md)
        fprintf(f, "| log | role | ranks | sizes >= 1 MiB | median abs error %% | max abs error %% "
                   "|\n|:---|:---|---:|---:|---:|---:|\n");
    else
        fprintf(f, "\nSummary (time error for sizes of 1 MiB and up)\n%-48s %-5s %6s %6s %9s %9s\n",
                "log", "role", "ranks", "sizes", "median%", "max%");
    for (int i = 0; i < n; i++) {
        if (md)
            fprintf(f, "| %s | %s | %d | %d | %.1f | %.1f |\n", v[i].name,
                    v[i].fit ? "fit" : "eval", v[i].ranks, v[i].scored, v[i].median, v[i].max);
        else
            fprintf(f, "%-48s %-5s %6d %6d %9.1f %9.1f\n", v[i].name, v[i].fit ? "fit" : "eval",
                    v[i].ranks, v[i].scored, v[i].median, v[i].max);
        for (int r = 0; all && !v[i].fit && r < v[i].nrows; r++)
            if (v[i].rows[r].bytes >= 1 << 20) all[nall++] = fabs(v[i].rows[r].err);
    }
    double med = 0, max = 0;
    if (all) summarize(all, nall, &med, &max);
    fprintf(f,
            md ? "\n**Evaluation logs only (fit logs excluded): %d sizes of 1 MiB and up, median "
                 "absolute error %.1f%%, max %.1f%%.**\n"
               : "\nevaluation logs only (fit logs excluded): %d sizes >= 1 MiB, median |error| "
                 "%.1f%%, max %.1f%%\n",
            nall, med, max);
    free(all);
}

/* Writes the data files and the gnuplot script into out and runs gnuplot. Returns 0, or -1 after
 * a message naming the file that could not be written. */
static int write_plots(const char *out, const struct vlog *v, int n)
{
    char path[1200];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s.dat", out, v[i].name);
        FILE *f = fopen(path, "w");
        if (!f) goto fail;
        fprintf(f, "# bytes measured_busbw_GBps simulated_busbw_GBps measured_us simulated_us\n");
        for (int r = 0; r < v[i].nrows; r++)
            fprintf(f, "%.0f %.4f %.4f %.3f %.3f\n", v[i].rows[r].bytes, v[i].rows[r].meas_bus,
                    v[i].rows[r].sim_bus, v[i].rows[r].meas_us, v[i].rows[r].sim_us);
        if (fclose(f) != 0) goto fail;
    }
    snprintf(path, sizeof path, "%s/busbw.gp", out);
    FILE *g = fopen(path, "w");
    if (!g) goto fail;
    int cols = n < 4 ? n : 4, rows = (n + cols - 1) / cols;
    for (int term = 0; term < 2; term++) {
        fprintf(g, "set terminal %s size %d,%d\nset output '%s/busbw.%s'\n",
                term ? "svg" : "pngcairo", 420 * cols, 340 * rows, out, term ? "svg" : "png");
        fprintf(g,
                "set multiplot layout %d,%d title 'nccl-tests bus bandwidth: measured (points) "
                "vs tpsim (line)'\n",
                rows, cols);
        fprintf(g, "set logscale x 2\nset format x '%%.0b%%BB'\nset xtics 256\n"
                   "set xlabel 'message size (bytes)'\n"
                   "set ylabel 'bus bandwidth (GB/s)'\nset key top left\nset grid\n");
        for (int i = 0; i < n; i++)
            fprintf(g,
                    "set title '%s%s' noenhanced\nplot '%s/%s.dat' using 1:2 with points pt 7 "
                    "title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'\n",
                    v[i].name, v[i].fit ? " (fit)" : "", out, v[i].name);
        fprintf(g, "unset multiplot\n");
    }
    if (fclose(g) != 0) goto fail;
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>/dev/null", path);
    int st = system(cmd);
    if (st != 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fprintf(stderr,
                "tpsim validate: gnuplot did not run (install gnuplot-nox); the data and "
                "%s are written\n",
                path);
    else
        fprintf(stderr, "tpsim validate: plots in %s/busbw.png and %s/busbw.svg\n", out, out);
    return 0;
fail:
    fprintf(stderr, "tpsim validate: cannot write %s: %s\n", path, strerror(errno));
    return -1;
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
    char csvbuf[1024];
    const char *csv = cli_project_path(TPSIM_REFDATA_DEFAULT "/profiles/oases_profile_3090.csv",
                                       csvbuf, sizeof csvbuf),
               *dev = "RTX-3090";
    for (int i = 2; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(prof_help, stdout);
            return 0;
        }
        if (i + 1 >= argc)
            return cli_usage_error("validate profile", "option '%s' needs a value", argv[i]);
        if (!strcmp(argv[i], "--profile"))
            csv = argv[++i];
        else if (!strcmp(argv[i], "--device"))
            dev = argv[++i];
        else
            return cli_usage_error("validate profile", "unknown option '%s'", argv[i]);
    }
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
    "\n"
    "Replays a recorded trace (tracer output after tpsim trace-merge) on the platform it ran on\n"
    "(--platform, the scenario's platform, or the one the trace records) and compares, op by op,\n"
    "the simulated duration with the recorded one: a table per op kind, per layer, the iteration,\n"
    "and the ten worst ops. With --scenario, every recorded GEMM and memory-bound kernel is also\n"
    "priced by the scenario's device compute model, to check that model against the hardware.\n"
    "Writes DIR/ops.dat and, with gnuplot, DIR/ops.png and ops.svg (recorded against simulated\n"
    "duration per op). Default --out: validation-trace.\n";

struct top {
    double err_s;
    int rank, op;
};

static int top_cmp(const void *a, const void *b)
{
    const struct top *x = a, *y = b;
    return (fabs(y->err_s) > fabs(x->err_s)) - (fabs(y->err_s) < fabs(x->err_s));
}

static int validate_trace(int argc, char **argv)
{
    const char *dir = NULL, *plat = NULL, *scn_path = NULL, *out = "validation-trace";
    for (int i = 2; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(trace_help, stdout);
            return 0;
        }
        if (argv[i][0] != '-') {
            if (dir) return cli_usage_error("validate trace", "unexpected argument '%s'", argv[i]);
            dir = argv[i];
            continue;
        }
        if (i + 1 >= argc)
            return cli_usage_error("validate trace", "option '%s' needs a value", argv[i]);
        if (!strcmp(argv[i], "--platform"))
            plat = argv[++i];
        else if (!strcmp(argv[i], "--scenario"))
            scn_path = argv[++i];
        else if (!strcmp(argv[i], "--out"))
            out = argv[++i];
        else
            return cli_usage_error("validate trace", "unknown option '%s'", argv[i]);
    }
    if (!dir) return cli_usage_error("validate trace", "%s", "missing TRACE_DIR");
    struct tps_error err = {0};
    struct mdl_program p;
    char recorded_plat[512], dirbuf[1024];
    struct scn_scenario s;
    dir = cli_trace_dir(dir, dirbuf, sizeof dirbuf);
    int have_scn = 0, rc = trace_read(dir, &p, recorded_plat, sizeof recorded_plat, &err);
    struct plat_topo own; /* the platform, unless the scenario's is used */
    plat_topo_init(&own, "");
    const struct plat_topo *tp = &own;
    if (!rc && scn_path) {
        rc = scn_load(scn_path, &s, &err);
        have_scn = 1;
    }
    const char *spec = plat ? plat : recorded_plat;
    if (!rc && !plat && have_scn) {
        tp = &s.topo;
    } else if (!rc) {
        if (!spec[0])
            rc = tps_error_set(&err, TPS_EINVAL, dir, 0, 0, "platform",
                               "the trace records no platform: give --platform or --scenario");
        else
            rc = cli_platform(spec, &own, &err);
    }
    int recorded = 0;
    for (int r = 0; !rc && r < p.nranks; r++)
        for (int i = 0; i < p.ranks[r].nops; i++)
            recorded += p.ranks[r].ops[i].recorded;
    if (!rc && !recorded)
        rc = tps_error_set(&err, TPS_EINVAL, dir, 0, 0, "rec_start",
                           "the trace has no recorded times (it was not written by the tracer)");
    struct sim_stats st = {0};
    if (!rc) rc = sim_engine_run(&p, tp, &st, &err);
    int code = rc ? cli_report_error(&err) : 0;
    if (!rc) {
        /* per kind */
        double rec_k[MDL_OP_NKINDS] = {0}, sim_k[MDL_OP_NKINDS] = {0}, mod_k[MDL_OP_NKINDS] = {0};
        int n_k[MDL_OP_NKINDS] = {0}, ntop = 0;
        double rec_end = 0, sim_end = st.end_s;
        struct top *tops = calloc((size_t)recorded + 1, sizeof *tops);
        char path[1024];
        if (mkdir(out, 0777) != 0 && errno != EEXIST)
            rc =
                tps_error_set(&err, TPS_EIO, out, 0, 0, NULL, "cannot create: %s", strerror(errno));
        snprintf(path, sizeof path, "%s/ops.dat", out);
        FILE *dat = rc ? NULL : fopen(path, "w");
        if (!rc && !dat)
            rc =
                tps_error_set(&err, TPS_EIO, path, 0, 0, NULL, "cannot write: %s", strerror(errno));
        if (dat) fprintf(dat, "# rank op kind recorded_s simulated_s model_s\n");
        for (int r = 0; r < p.nranks; r++)
            for (int i = 0; i < p.ranks[r].nops; i++) {
                const struct mdl_op *o = &p.ranks[r].ops[i];
                if (!o->recorded) continue;
                double rd = o->rec_end - o->rec_start, sd = o->t_end - o->t_start, md = -1;
                if (o->rec_end > rec_end) rec_end = o->rec_end;
                if (have_scn && !mdl_op_is_coll((enum mdl_op_kind)o->kind))
                    md = o->kind == MDL_OP_MEM
                             ? mdl_mem_time(&s.device, o->bytes)
                             : mdl_gemm_time_wb(&s.device, s.model.dtype, o->flop, o->bytes);
                n_k[o->kind]++;
                rec_k[o->kind] += rd;
                sim_k[o->kind] += sd;
                if (md >= 0) mod_k[o->kind] += md;
                if (tops) tops[ntop++] = (struct top){sd - rd, r, i};
                if (dat)
                    fprintf(dat, "%d %d %s %.9g %.9g %.9g\n", r, i,
                            mdl_op_kind_name((enum mdl_op_kind)o->kind), rd, sd, md);
            }
        if (dat && fclose(dat) != 0 && !rc)
            rc = tps_error_set(&err, TPS_EIO, path, 0, 0, NULL, "cannot write");
        printf("trace      %s (%d ranks, %d recorded ops)\nplatform   %s\n", dir, p.nranks,
               recorded, tp->desc[0] ? tp->desc : spec);
        printf("iteration  recorded %.6f ms, simulated %.6f ms, error %+.2f%%\n\n", rec_end * 1e3,
               sim_end * 1e3, rec_end > 0 ? (sim_end - rec_end) / rec_end * 100 : 0);
        printf("%-16s %6s %14s %14s %8s%s\n", "kind", "ops", "recorded ms", "simulated ms", "error",
               have_scn ? "   compute model ms  error" : "");
        for (int k = 0; k < MDL_OP_NKINDS; k++) {
            if (!n_k[k]) continue;
            printf("%-16s %6d %14.6f %14.6f %+7.2f%%", mdl_op_kind_name((enum mdl_op_kind)k),
                   n_k[k], rec_k[k] * 1e3, sim_k[k] * 1e3,
                   rec_k[k] > 0 ? (sim_k[k] - rec_k[k]) / rec_k[k] * 100 : 0);
            if (have_scn && !mdl_op_is_coll((enum mdl_op_kind)k))
                printf("   %15.6f %+7.2f%%", mod_k[k] * 1e3,
                       rec_k[k] > 0 ? (mod_k[k] - rec_k[k]) / rec_k[k] * 100 : 0);
            printf("\n");
        }
        /* per layer: from the first start to the last end of its ops, over ranks */
        printf("\n%-8s %14s %14s %8s\n", "layer", "recorded ms", "simulated ms", "error");
        for (int l = -1; l < p.layers; l++) {
            double r0 = 1e300, r1 = -1, s0 = 1e300, s1 = -1;
            for (int r = 0; r < p.nranks; r++)
                for (int i = 0; i < p.ranks[r].nops; i++) {
                    const struct mdl_op *o = &p.ranks[r].ops[i];
                    if (o->layer != l || !o->recorded) continue;
                    r0 = fmin(r0, o->rec_start), r1 = fmax(r1, o->rec_end);
                    s0 = fmin(s0, o->t_start), s1 = fmax(s1, o->t_end);
                }
            if (r1 < 0) continue;
            printf("%-8d %14.6f %14.6f %+7.2f%%\n", l, (r1 - r0) * 1e3, (s1 - s0) * 1e3,
                   r1 > r0 ? ((s1 - s0) - (r1 - r0)) / (r1 - r0) * 100 : 0);
        }
        if (tops) {
            qsort(tops, (size_t)ntop, sizeof *tops, top_cmp);
            printf("\nworst ops (simulated - recorded):\n");
            for (int k = 0; k < ntop && k < 10; k++) {
                const struct mdl_op *o = &p.ranks[tops[k].rank].ops[tops[k].op];
                double rd = o->rec_end - o->rec_start;
                printf("  rank %d op %d %-14s %-16s recorded %10.3f us, simulated %10.3f us "
                       "(%+.1f%%)\n",
                       tops[k].rank, tops[k].op, mdl_op_kind_name((enum mdl_op_kind)o->kind),
                       p.names[o->name], rd * 1e6, (rd + tops[k].err_s) * 1e6,
                       rd > 0 ? tops[k].err_s / rd * 100 : 0);
            }
        }
        free(tops);
        snprintf(path, sizeof path, "%s/ops.gp", out);
        FILE *g = fopen(path, "w");
        if (g) {
            for (int term = 0; term < 2; term++)
                fprintf(
                    g,
                    "set terminal %s size 640,560\nset output '%s/ops.%s'\nset logscale xy\n"
                    "set xlabel 'recorded duration (s)'\nset ylabel 'simulated duration (s)'\n"
                    "set key top left\nset grid\nset title 'tpsim validate trace: %s' noenhanced\n"
                    "plot '%s/ops.dat' using 4:($4 > 0 && $5 > 0 ? $5 : 1/0) with points pt 7 "
                    "title 'ops', x with lines title 'equal'\n",
                    term ? "svg" : "pngcairo", out, term ? "svg" : "png", dir, out);
            fclose(g);
            char cmd[1200];
            snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>/dev/null", path);
            if (system(cmd) != 0)
                fprintf(stderr, "tpsim validate trace: gnuplot did not run; %s is written\n", path);
        }
    }
    sim_stats_release(&st);
    mdl_program_release(&p);
    if (have_scn) scn_release(&s);
    plat_topo_release(&own);
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
    if (strcmp(argv[1], "nccl"))
        return cli_usage_error(
            "validate", "unknown subcommand '%s' (expected nccl, profile or trace)", argv[1]);
    char mbuf[1024], rbuf[1024];
    const char *manifest = cli_project_path("scenarios/validation/nccl.yaml", mbuf, sizeof mbuf),
               *refdata = cli_project_path(TPSIM_REFDATA_DEFAULT, rbuf, sizeof rbuf);
    const char *out = "validation-out", *md = NULL;
    for (int i = 2; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(val_help, stdout);
            return 0;
        }
        if (i + 1 >= argc) return cli_usage_error("validate", "option '%s' needs a value", argv[i]);
        const char *v = argv[++i];
        if (!strcmp(argv[i - 1], "--manifest"))
            manifest = v;
        else if (!strcmp(argv[i - 1], "--refdata"))
            refdata = v;
        else if (!strcmp(argv[i - 1], "--out"))
            out = v;
        else if (!strcmp(argv[i - 1], "--markdown"))
            md = v;
        else
            return cli_usage_error("validate", "unknown option '%s'", argv[i - 1]);
    }
    struct tps_error err = {0};
    struct tps_ydoc d;
    if (tps_ydoc_load_file(&d, manifest, &err)) return cli_report_error(&err);
    int root = tps_ydoc_root(&d), logs = tps_ydoc_get(&d, root, "logs");
    static const char *const keys[] = {"description", "logs", NULL};
    int rc = tps_ydoc_is_map(&d, root) ? tps_ydoc_check_map(&d, root, "", keys, &err)
                                       : tps_ydoc_fail(&d, root, "", &err, "expected a mapping");
    if (!rc && (!logs || !tps_ydoc_is_seq(&d, logs)))
        rc = tps_ydoc_fail(&d, logs ? logs : root, "logs", &err, "expected a list of logs");
    /* the output directory first: a bad --out fails before minutes of simulation */
    if (!rc && mkdir(out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "tpsim validate: cannot create %s: %s\n", out, strerror(errno));
        tps_ydoc_release(&d);
        return CLI_EXIT_INPUT;
    }
    int n = rc ? 0 : tps_ydoc_len(&d, logs);
    struct vlog *v = calloc((size_t)n + 1, sizeof *v);
    char base[512];
    plat_path_dir(manifest, base, sizeof base);
    int tty = isatty(2);
    for (int i = 0; !rc && i < n; i++) {
        if (tty)
            fprintf(stderr, "\r[%d/%d] simulating %-60s", i + 1, n,
                    tps_ydoc_text(&d, tps_ydoc_get(&d, tps_ydoc_seq_at(&d, logs, i), "log"))
                        ? tps_ydoc_text(&d, tps_ydoc_get(&d, tps_ydoc_seq_at(&d, logs, i), "log"))
                        : "?");
        rc = validate_log(&d, tps_ydoc_seq_at(&d, logs, i), i, refdata, base, &v[i], &err);
    }
    if (tty) fprintf(stderr, "\n");
    int code = rc ? cli_report_error(&err) : 0;
    if (!rc) {
        for (int i = 0; i < n; i++)
            print_log(stdout, &v[i], 0);
        print_summary(stdout, v, n, 0);
        if (mkdir(out, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "tpsim validate: cannot create %s: %s\n", out, strerror(errno));
            code = CLI_EXIT_INPUT;
        } else if (write_plots(out, v, n) != 0) {
            code = CLI_EXIT_INPUT;
        }
        FILE *f = md ? fopen(md, "w") : NULL;
        if (md && !f) {
            fprintf(stderr, "tpsim validate: cannot write %s: %s\n", md, strerror(errno));
            code = CLI_EXIT_INPUT;
        }
        if (f) {
            print_summary(f, v, n, 1);
            for (int i = 0; i < n; i++)
                print_log(f, &v[i], 1);
            if (fclose(f) != 0) {
                fprintf(stderr, "tpsim validate: cannot write %s: %s\n", md, strerror(errno));
                code = CLI_EXIT_INPUT;
            }
        }
    }
    for (int i = 0; i < n; i++)
        free(v[i].rows);
    free(v);
    tps_ydoc_release(&d);
    return code;
}
