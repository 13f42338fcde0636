/* test_calibrate.c - calibration recovers the parameters of a log tpsim itself generated, and
 * validate nccl scores only the evaluation logs. Runs the tpsim binary (TPSIM_BIN). */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/spec.h"

#include "../testcmd.h"
#include "../testdir.h"

TestSuite(calibrate, .timeout = 120 * TPSIM_TIMEOUT_SCALE);

static void run(const char *cmd)
{
    int st = system(cmd);
    cr_assert(eq(int, st, 0), "command failed (%d): %s", st, cmd);
}

/* Writes a platform with known parameters: the truth a generated log comes from. */
static void write_truth(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(ne(ptr, f, NULL), "%s", path);
    fputs(text, f);
    cr_assert(eq(int, fclose(f), 0));
}

/* The first NVLink link of a platform (its GPU links all alike). */
/* The first link of t at `level` (PLAT_LVL_*). */
static const struct plat_link *link_of(const struct plat_topo *t, int level)
{
    for (int l = 0; l < t->nlinks; l++)
        if (t->links[l].level == level) return &t->links[l];
    cr_assert(false, "no link of level %d", level);
    return NULL;
}

static const struct plat_link *nvlink_of(const struct plat_topo *t)
{
    return link_of(t, PLAT_LVL_NVLINK);
}

static void near(double got, double want, double rel, const char *what)
{
    cr_assert(le(dbl, fabs(got - want), rel * want), "%s: fitted %.6g, generated with %.6g", what,
              got, want);
}

Test(calibrate, recovers_known_parameters_from_a_generated_log)
{
    char d[256], plat[300], log[300], out[300];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(plat, sizeof plat, d, "truth.yaml");
    testdir_path(log, sizeof log, d, "cal.log");
    testdir_path(out, sizeof out, d, "out.yaml");
    write_truth(plat, "preset: dgx-a100\ngpu_link: 200GB/s\nnccl:\n"
                      "  base_latency: {LL: 4us, LL128: 9us, Simple: 15us}\n"
                      "  efficiency: {LL: 0.45, LL128: 0.9, Simple: 1}\n");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s collective --platform %s --algorithm ring --min 8 --max 1G > %s",
             TPSIM_BIN, plat, log);
    run(cmd);
    snprintf(cmd, sizeof cmd,
             "%s calibrate %s --platform dgx-a100 --algorithm ring -o %s 2>/dev/null", TPSIM_BIN,
             log, out);
    run(cmd);
    struct plat_topo t;
    struct tps_error err = {0};
    cr_assert(eq(int, plat_spec_from_args(out, 0, NULL, &t, &err), 0), "%s", err.msg);
    near(nvlink_of(&t)->bw_Bps, 200e9, 0.005, "gpu_link");
    near(t.nccl.base_s[MDL_PROTO_SIMPLE], 15e-6, 0.03, "Simple base latency");
    near(t.nccl.base_s[MDL_PROTO_LL], 4e-6, 0.05, "LL base latency");
    near(t.nccl.eff[MDL_PROTO_LL], 0.45, 0.02, "LL efficiency");
    cr_assert(eq(int, t.nccl.algo, MDL_ALGO_RING));
    plat_topo_release(&t);
    testdir_remove(d);
}

/* nccl-tests times 0-byte calls, which return at once (the H100 all-gather log has three such
 * rows at 0.42-0.46 us): they carry no collective and must not move the fit. */
Test(calibrate, rows_of_zero_bytes_are_left_out)
{
    char d[256], log[300], zlog[300], out[300], zout[300], cmd[2048];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(log, sizeof log, d, "cal.log");
    testdir_path(zlog, sizeof zlog, d, "zero.log");
    testdir_path(out, sizeof out, d, "out.yaml");
    testdir_path(zout, sizeof zout, d, "zout.yaml");
    snprintf(cmd, sizeof cmd,
             "%s collective --platform dgx-a100 --algorithm ring --min 8 --max 1G > %s && "
             "awk '!done && $1 ~ /^[0-9]+$/ { for (i = 0; i < 3; i++) print \"   0   0   float   "
             "sum   -1   0.42   0.00   0.00   N/A\"; done = 1 } { print }' %s > %s",
             TPSIM_BIN, log, log, zlog);
    run(cmd);
    /* the same fit: the files differ only in their header comments (the log's path) */
    snprintf(cmd, sizeof cmd,
             "%s calibrate %s --platform dgx-a100 --algorithm ring 2>/dev/null | grep -v '^#' > %s "
             "&& %s calibrate %s --platform dgx-a100 --algorithm ring 2>/dev/null | grep -v '^#' > "
             "%s && cmp -s %s %s",
             TPSIM_BIN, log, out, TPSIM_BIN, zlog, zout, out, zout);
    run(cmd);
    testdir_remove(d);
}

/* Two generated logs of one platform with different step counts (an all-reduce over 8 GPUs:
 * 14 latency steps, an all-gather over 4: 3) tell the base latency from the per-step latency;
 * calibrated together they give back both, which one log cannot. */
Test(calibrate, joint_fit_tells_base_from_per_step_latency)
{
    char d[256], plat[300], ar[300], ag[300], out[300], cmd[2048];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(plat, sizeof plat, d, "truth.yaml");
    testdir_path(ar, sizeof ar, d, "ar.log");
    testdir_path(ag, sizeof ag, d, "ag.log");
    testdir_path(out, sizeof out, d, "out.yaml");
    write_truth(plat, "preset: dgx-a100\ngpu_link: 200GB/s\nnccl:\n"
                      "  base_latency: {LL: 4us, LL128: 9us, Simple: 15us}\n"
                      "  hop_latency: {LL: 0.8us, LL128: 1.6us, Simple: 3.2us}\n"
                      "  efficiency: {LL: 0.45, LL128: 0.9, Simple: 1}\n");
    snprintf(cmd, sizeof cmd,
             "%s collective --platform %s --algorithm ring --min 8 --max 1G > %s && "
             "%s collective --platform %s --algorithm ring --op all_gather --ranks 4 --min 8 "
             "--max 1G > %s",
             TPSIM_BIN, plat, ar, TPSIM_BIN, plat, ag);
    run(cmd);
    snprintf(cmd, sizeof cmd,
             "%s calibrate %s %s --platform dgx-a100 --algorithm ring -o %s 2>/dev/null", TPSIM_BIN,
             ar, ag, out);
    run(cmd);
    struct plat_topo t;
    struct tps_error err = {0};
    cr_assert(eq(int, plat_spec_from_args(out, 0, NULL, &t, &err), 0), "%s", err.msg);
    near(nvlink_of(&t)->bw_Bps, 200e9, 0.005, "gpu_link");
    near(nvlink_of(&t)->lat_s, 0.348e-6, 0.01, "nvlink_latency (kept: the preset's)");
    near(t.nccl.base_s[MDL_PROTO_SIMPLE], 15e-6, 0.05, "Simple base latency");
    near(t.nccl.hop_s[MDL_PROTO_SIMPLE], 3.2e-6, 0.05, "Simple per-step latency");
    near(t.nccl.base_s[MDL_PROTO_LL], 4e-6, 0.05, "LL base latency");
    near(t.nccl.hop_s[MDL_PROTO_LL], 0.8e-6, 0.05, "LL per-step latency");
    near(t.nccl.eff[MDL_PROTO_LL], 0.45, 0.02, "LL efficiency");
    plat_topo_release(&t);
    /* the file says it was fitted on both logs */
    FILE *f = fopen(out, "r");
    cr_assert(ne(ptr, f, NULL));
    char line[512];
    int named = 0, apart = 0;
    while (fgets(line, sizeof line, f)) {
        named += strstr(line, "ar.log: all_reduce over 8 ranks") != NULL ||
                 strstr(line, "ag.log: all_gather over 4 ranks") != NULL;
        apart += strstr(line, "base and per-step latency fitted apart") != NULL;
    }
    fclose(f);
    cr_assert(eq(int, named, 2));
    cr_assert(eq(int, apart, 1));
    testdir_remove(d);
}

/* The network rate of a platform file (its first link between machines), bytes/s. */
static double nic_of(const char *path)
{
    struct plat_topo t;
    struct tps_error err = {0};
    cr_assert(eq(int, plat_spec_from_args(path, 0, NULL, &t, &err), 0), "%s", err.msg);
    double nic = link_of(&t, PLAT_LVL_NET)->bw_Bps;
    plat_topo_release(&t);
    return nic;
}

/* Logs of one machine beside a log across two machines, generated on a platform with known
 * parameters, fitted together with the NVLink rate kept (--hold gpu_link): the machine's logs
 * give back the protocols' costs (the network's log alone has one step count and, here, Simple
 * rows only), and the network's log its rate, the same as fitted on that log alone. (Both read
 * 32.1 GB/s from a log simulated at 30: the ring's closed form across machines with one NIC each
 * is slower than its simulation by 15/14, docs/validation.md.) */
Test(calibrate, joint_fit_across_machines_gives_back_the_network_rate)
{
    char d[256], plat[300], l8[300], l4[300], l16[300], out[300], cmd[4096];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(plat, sizeof plat, d, "truth.yaml");
    testdir_path(l8, sizeof l8, d, "ar8.log");
    testdir_path(l4, sizeof l4, d, "ar4.log");
    testdir_path(l16, sizeof l16, d, "ar16.log");
    testdir_path(out, sizeof out, d, "out.yaml");
    write_truth(plat, "preset: dgx-a100\nnodes: 2\nnics_per_node: 1\ngpu_link: 200GB/s\n"
                      "nic_rate: 30GB/s\nnccl:\n  algorithm: ring\n"
                      "  base_latency: {LL: 4us, LL128: 9us, Simple: 25us}\n"
                      "  hop_latency: {LL: 0.8us, LL128: 1.6us, Simple: 1.2us}\n"
                      "  efficiency: {LL: 0.45, LL128: 0.9, Simple: 1}\n");
    snprintf(cmd, sizeof cmd,
             "%s collective --platform %s --ranks 8 --min 8 --max 1G > %s && "
             "%s collective --platform %s --ranks 4 --min 8 --max 1G > %s && "
             "%s collective --platform %s --ranks 16 --min 8 --max 1G > %s",
             TPSIM_BIN, plat, l8, TPSIM_BIN, plat, l4, TPSIM_BIN, plat, l16);
    run(cmd);
    snprintf(cmd, sizeof cmd,
             "%s calibrate %s %s %s --algorithm ring --hold gpu_link --platform 'dgx-a100 "
             "nodes=2 nics_per_node=1 gpu_link=200GB/s' -o %s 2>/dev/null",
             TPSIM_BIN, l8, l4, l16, out);
    run(cmd);
    struct plat_topo t;
    struct tps_error err = {0};
    cr_assert(eq(int, plat_spec_from_args(out, 0, NULL, &t, &err), 0), "%s", err.msg);
    near(nvlink_of(&t)->bw_Bps, 200e9, 1e-6, "gpu_link (kept)");
    near(t.nccl.base_s[MDL_PROTO_LL], 4e-6, 0.05, "LL base latency");
    near(t.nccl.hop_s[MDL_PROTO_LL], 0.8e-6, 0.05, "LL per-step latency");
    near(t.nccl.eff[MDL_PROTO_LL], 0.45, 0.02, "LL efficiency");
    near(t.nccl.eff[MDL_PROTO_LL128], 0.9, 0.03, "LL128 efficiency");
    plat_topo_release(&t);
    char one[300];
    testdir_path(one, sizeof one, d, "one.yaml");
    snprintf(cmd, sizeof cmd,
             "%s calibrate %s --algorithm ring --platform 'dgx-a100 nodes=2 nics_per_node=1 "
             "gpu_link=200GB/s' -o %s 2>/dev/null",
             TPSIM_BIN, l16, one);
    run(cmd);
    near(nic_of(out), nic_of(one), 0.01, "nic_rate (as from the network's log alone)");
    /* keeping a rate of a fit that has only one is a usage error, exit 2 */
    char msg[4096];
    snprintf(cmd, sizeof cmd, "%s calibrate %s --hold gpu_link --platform dgx-a100 2>&1 >/dev/null",
             TPSIM_BIN, l8);
    cr_assert(eq(int, testcmd_run(msg, sizeof msg, cmd), 2), "%s", msg);
    cr_assert(ne(ptr, strstr(msg, "--hold gpu_link"), NULL), "%s", msg);
    testdir_remove(d);
}

/* A joint calibration takes at most 16 logs: a 17th is a usage error naming the limit, exit 2. */
Test(calibrate, joint_fit_names_its_limit_of_logs)
{
    char cmd[8192], out[4096];
    int n = snprintf(cmd, sizeof cmd, "%s calibrate", TPSIM_BIN);
    for (int k = 0; k < 17; k++)
        n += snprintf(cmd + n, sizeof cmd - (size_t)n, " %s/nccl/h100_hgx_4gpu_all_reduce.raw.txt",
                      TPSIM_REFDATA);
    snprintf(cmd + n, sizeof cmd - (size_t)n, " --platform dgx-h100 2>&1");
    int code = testcmd_run(out, sizeof out, cmd);
    cr_assert(eq(int, code, 2), "%s", out);
    cr_assert(ne(ptr, strstr(out, "at most 16 logs are fitted at once"), NULL), "%s", out);
}

/* Run from a directory outside the repository: the manifest and the reference data are found
 * from the project, not the current directory. */
Test(calibrate, validate_scores_only_the_evaluation_logs, .timeout = 600 * TPSIM_TIMEOUT_SCALE)
{
    char d[256], txt[300], cmd[1024];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(txt, sizeof txt, d, "val.txt");
    snprintf(cmd, sizeof cmd, "cd %s && %s validate nccl --out val --json v.json > %s 2>/dev/null",
             d, TPSIM_BIN, txt);
    run(cmd);
    FILE *f = fopen(txt, "r");
    cr_assert(ne(ptr, f, NULL));
    char line[512];
    int fit = 0, eval = 0, summary = 0;
    while (fgets(line, sizeof line, f)) {
        fit += strstr(line, "[fit: calibration data, not scored]") != NULL;
        eval += strstr(line, "[eval]") != NULL;
        summary += strstr(line, "evaluation logs only (fit logs excluded)") != NULL;
    }
    fclose(f);
    cr_assert(eq(int, fit, 9));
    cr_assert(eq(int, eval, 8));
    cr_assert(eq(int, summary, 1));
    /* the JSON says the same: 17 logs, 9 of them fit, and the evaluation median is the median of
     * the evaluation logs' |error| at 1 MiB and up */
    char js[300];
    json_error_t je;
    json_t *j = json_load_file(testdir_path(js, sizeof js, d, "v.json"), 0, &je);
    cr_assert_not_null(j, "%s", je.text);
    json_t *logs = json_object_get(j, "logs");
    cr_assert(eq(sz, json_array_size(logs), 17));
    double e[512];
    int n = 0, nfit = 0;
    for (size_t i = 0; i < json_array_size(logs); i++) {
        json_t *l = json_array_get(logs, i);
        int is_fit = !strcmp(json_string_value(json_object_get(l, "role")), "fit");
        nfit += is_fit;
        cr_assert_not_null(json_object_get(l, "median_abs_err_pct"));
        json_t *rows = json_object_get(l, "rows");
        for (size_t r = 0; r < json_array_size(rows) && !is_fit && n < 512; r++) {
            json_t *w = json_array_get(rows, r);
            if (json_real_value(json_object_get(w, "bytes")) >= 1048576)
                e[n++] = fabs(json_real_value(json_object_get(w, "err_pct")));
        }
    }
    cr_assert(eq(int, nfit, 9));
    cr_assert(eq(int, (int)json_integer_value(json_object_get(j, "evaluation_sizes")), n));
    for (int a = 0; a < n; a++) /* sort, then the median */
        for (int b = a + 1; b < n; b++)
            if (e[b] < e[a]) {
                double t = e[a];
                e[a] = e[b];
                e[b] = t;
            }
    double med = n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
    cr_assert(ieee_ulp_eq(dbl, json_real_value(json_object_get(j, "evaluation_median_abs_err_pct")),
                          med, 16));
    cr_assert(ieee_ulp_eq(dbl, json_real_value(json_object_get(j, "evaluation_max_abs_err_pct")),
                          e[n - 1], 16));
    json_decref(j);
    testdir_remove(d);
}

/* docs/validation.md, "Presets out of the box": the NVSwitch presets as shipped are within 10%
 * median on every log of their systems (the InfiniBand rows are explained there, not held to it) */
Test(calibrate, nvswitch_presets_out_of_the_box_within_ten_percent_median,
     .timeout = 600 * TPSIM_TIMEOUT_SCALE)
{
    char d[256], js[300], cmd[1024];
    cr_assert_not_null(testdir_make(d, sizeof d));
    snprintf(cmd, sizeof cmd,
             "cd %s && %s validate nccl --manifest %s/scenarios/validation/presets.yaml --out val "
             "--json v.json > /dev/null 2>&1",
             d, TPSIM_BIN, TPSIM_SOURCE_DIR);
    run(cmd);
    json_error_t je;
    json_t *j = json_load_file(testdir_path(js, sizeof js, d, "v.json"), 0, &je);
    cr_assert_not_null(j, "%s", je.text);
    json_t *logs = json_object_get(j, "logs");
    int nvswitch = 0, h100_nodes = 0;
    for (size_t i = 0; i < json_array_size(logs); i++) {
        json_t *l = json_array_get(logs, i);
        const char *name = json_string_value(json_object_get(l, "log"));
        cr_assert_not_null(name);
        /* the multi-node H100 logs (docs/validation.md, "Multi-node H100"): the Ring-forced and
         * 8-node logs fit nic_latency and net_channel_rate and come within 2% and 13% median,
         * the 2- and 4-node defaults within 14%; the tuned 8-node run (two queue pairs per
         * connection, not modelled) is not held to it */
        if (strstr(name, "gjaion") && !strstr(name, "8node_64gpu_ib400_all_reduce_minctas24")) {
            double med = json_number_value(json_object_get(l, "median_abs_err_pct"));
            cr_assert(le(dbl, med, strstr(name, "ring") ? 2.0 : 14.0), "%s: %.1f%%", name, med);
            h100_nodes++;
        }
        if (strstr(name, "node_16gpu") || strstr(name, "node_32gpu") ||
            strstr(name, "node_64gpu") || strstr(name, "3node"))
            continue; /* across nodes */
        double med = json_number_value(json_object_get(l, "median_abs_err_pct"));
        cr_assert(le(dbl, med, 10.0), "%s: %.1f%%", name, med);
        nvswitch++;
    }
    cr_assert(eq(int, nvswitch, 6));
    cr_assert(eq(int, h100_nodes, 4));
    json_decref(j);
    testdir_remove(d);
}

/* A platform with NVLS fitted on its 4-GPU ring logs must not pin the ring: the file leaves the
 * algorithm to the tuner, which runs NVLS on 8 GPUs. */
Test(calibrate, an_nvls_platform_keeps_the_tuner)
{
    char d[256], ar[300], out[300], coll[300], cmd[2048];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(ar, sizeof ar, d, "ar.log");
    testdir_path(out, sizeof out, d, "out.yaml");
    testdir_path(coll, sizeof coll, d, "coll.txt");
    snprintf(cmd, sizeof cmd,
             "%s collective --platform dgx-h100 --ranks 4 --algorithm ring --min 8 --max 1G > %s "
             "&& %s calibrate %s --platform dgx-h100 -o %s 2>/dev/null && "
             "%s collective --platform %s --bytes 4G > %s",
             TPSIM_BIN, ar, TPSIM_BIN, ar, out, TPSIM_BIN, out, coll);
    run(cmd);
    struct plat_topo t;
    struct tps_error err = {0};
    cr_assert(eq(int, plat_spec_from_args(out, 0, NULL, &t, &err), 0), "%s", err.msg);
    cr_assert(eq(int, t.nccl.algo, MDL_ALGO_AUTO));
    cr_assert(t.nccl.nvls);
    plat_topo_release(&t);
    char text[4096];
    FILE *f = fopen(coll, "r");
    cr_assert_not_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    cr_assert(ne(ptr, strstr(text, "nvls/Simple"), NULL), "%s", text);
    testdir_remove(d);
}
