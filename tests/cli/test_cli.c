/* test_cli.c - the tpsim command line: exit codes, one-line errors for bad input, --help on
 * every command, JSON outputs, and trace + replay through the binary. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../testcmd.h"
#include "../testdir.h"

TestSuite(cli, .timeout = 300 * TPSIM_TIMEOUT_SCALE);

/* Runs "tpsim ARGS" and returns its exit status; output (stdout+stderr or stderr only) into out. */
static int tpsim(char *out, size_t len, const char *args, int stderr_only)
{
    char cmd[4096 + 64];
    snprintf(cmd, sizeof cmd, "%s %s %s", TPSIM_BIN, args,
             stderr_only ? "2>&1 >/dev/null" : "2>&1");
    return testcmd_run(out, len, cmd);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

Test(cli, bad_scenarios_exit_2_with_one_line_naming_file_line_column_field)
{
    static const char *const files[][2] = {
        {"unknown_key.yaml", ":6:3: field 'strategy.pipeline'"},
        {"wrong_type.yaml", ":5:7: field 'strategy.tp'"},
        {"negative_size.yaml", ":3:11: field 'model.hidden'"},
        {"zero_size.yaml", ":3:16: field 'model.micro_batch'"},
        {"tp_too_large.yaml", ":6:7: field 'strategy.tp'"},
        {"syntax.yaml", ":4:9: invalid YAML"},
        {"unknown_model.yaml", ":1:8: field 'model': unknown model preset 'gpt5' (expected one of: "
                               "gpt3-1.3b, "},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char args[512], out[4096];
        snprintf(args, sizeof args, "run %s/tests/data/bad/%s", TPSIM_SOURCE_DIR, files[i][0]);
        cr_assert(eq(int, tpsim(out, sizeof out, args, 1), 2), "%s: %s", files[i][0], out);
        cr_assert(eq(int, count_lines(out), 1), "%s: '%s'", files[i][0], out);
        cr_assert(strstr(out, files[i][0]) != NULL, "%s", out);
        cr_assert(strstr(out, files[i][1]) != NULL, "%s", out);
    }
}

Test(cli, help_everywhere)
{
    const char *cmds[] = {
        "--help",           "run --help",           "trace --help", "collective --help",
        "platform --help",  "platform show --help", "plan --help",  "sweep --help",
        "calibrate --help", "validate --help"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char out[8192];
        cr_assert(eq(int, tpsim(out, sizeof out, cmds[i], 0), 0), "%s", cmds[i]);
        cr_assert(strstr(out, "usage:") != NULL, "%s", cmds[i]);
    }
    char out[1024];
    cr_assert(eq(int, tpsim(out, sizeof out, "frobnicate", 0), 2));
    cr_assert(eq(int, tpsim(out, sizeof out, "run --bogus x.yaml", 0), 2));
}

Test(cli, run_writes_json_with_the_documented_keys)
{
    char d[256], json[300], tl[300];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(json, sizeof json, d, "run.json");
    testdir_path(tl, sizeof tl, d, "tl.json");
    char args[1024], out[8192];
    snprintf(args, sizeof args, "run %s/tests/data/good/tiny.yaml --json %s --timeline %s",
             TPSIM_SOURCE_DIR, json, tl);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    cr_assert(strstr(out, "iteration time") != NULL);
    cr_assert(strstr(out, "model TFLOP/s/GPU") != NULL);
    cr_assert(strstr(out, "memory per GPU") != NULL);
    json_error_t e;
    json_t *j = json_load_file(json, 0, &e);
    cr_assert_not_null(j, "%s", e.text);
    const char *keys[] = {"iteration_time_s", "compute_time_s",          "exposed_comm_time_s",
                          "model_flop",       "model_tflops_per_gpu",    "mfu",
                          "hardware_flop",    "hardware_tflops_per_gpu", "memory_gb_per_gpu"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        cr_assert(json_object_get(j, keys[i]) && json_is_number(json_object_get(j, keys[i])), "%s",
                  keys[i]);
    cr_assert(ne(int, json_is_boolean(json_object_get(j, "memory_fits")), 0));
    cr_assert(ne(int, json_is_object(json_object_get(j, "memory")), 0));
    double mfu = json_number_value(json_object_get(j, "mfu"));
    cr_assert(gt(dbl, mfu, 0));
    cr_assert(lt(dbl, mfu, 1));
    json_t *layers = json_object_get(j, "layers");
    cr_assert(eq(sz, json_array_size(layers), 2));
    cr_assert(gt(dbl, json_number_value(json_object_get(json_array_get(layers, 0), "fwd_s")), 0));
    cr_assert(gt(dbl, json_number_value(json_object_get(json_array_get(layers, 1), "bwd_s")), 0));
    json_decref(j);
    json_t *t = json_load_file(tl, 0, &e);
    cr_assert_not_null(t, "%s", e.text);
    cr_assert(gt(sz, json_array_size(json_object_get(t, "traceEvents")), 100));
    json_decref(t);
    testdir_remove(d);
}

/* A whole job's report by parallel dimension, as docs/output.md says: the text names the
 * dimensions its ops serve; JSON has <dim>_exposed_comm_s and <dim>_bytes_sent_per_gpu for every
 * dimension; the CSV ends with one column per dimension and the bubble; the timeline marks each
 * collective with its dimension. */
Test(cli, run_reports_a_job_by_dimension_in_text_json_csv_and_timeline)
{
    char d[256], json[300], csv[300], tl[300];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(json, sizeof json, d, "run.json");
    testdir_path(csv, sizeof csv, d, "run.csv");
    testdir_path(tl, sizeof tl, d, "tl.json");
    char args[1400], out[8192];
    snprintf(args, sizeof args,
             "run %s/tests/data/good/job-pipe.yaml --json %s --csv %s --timeline %s",
             TPSIM_SOURCE_DIR, json, csv, tl);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    cr_assert(strstr(out, "of which PP") != NULL, "%s", out);
    cr_assert(strstr(out, "of which TP") == NULL, "tp 1: no TP collectives");
    json_error_t e;
    json_t *j = json_load_file(json, 0, &e);
    cr_assert_not_null(j, "%s", e.text);
    const char *dims[] = {"tp", "cp", "ep", "dp", "pp"};
    for (int k = 0; k < 5; k++) {
        char key[64];
        snprintf(key, sizeof key, "%s_exposed_comm_s", dims[k]);
        cr_assert(ne(int, json_is_number(json_object_get(j, key)), 0), "%s", key);
        snprintf(key, sizeof key, "%s_bytes_sent_per_gpu", dims[k]);
        cr_assert(ne(int, json_is_number(json_object_get(j, key)), 0), "%s", key);
    }
    cr_assert(gt(dbl, json_number_value(json_object_get(j, "pp_bytes_sent_per_gpu")), 0));
    cr_assert(eq(dbl, json_number_value(json_object_get(j, "tp_bytes_sent_per_gpu")), 0));
    json_decref(j);
    FILE *f = fopen(csv, "r");
    cr_assert_not_null(f);
    char head[1024], row[1024];
    cr_assert_not_null(fgets(head, sizeof head, f));
    cr_assert_not_null(fgets(row, sizeof row, f));
    fclose(f);
    cr_assert(strstr(head,
                     ",tp_exposed_comm_s,cp_exposed_comm_s,ep_exposed_comm_s,"
                     "dp_exposed_comm_s,pp_exposed_comm_s,pipeline_bubble_s,"
                     "breakdown_compute_s,breakdown_tp_s,breakdown_cp_s,breakdown_ep_s,"
                     "breakdown_dp_s,breakdown_host_wait_s,breakdown_rest_s,tokens_per_s,"
                     "tokens_per_s_per_gpu,time_to_train_s,gpu_hours,energy_kwh,cost\n") != NULL,
              "%s", head);
    int commas = 0;
    for (const char *c = row; *c; c++)
        commas += *c == ',';
    cr_assert(eq(int, commas, 31), "%s", row);
    /* a job's row has every value, but what training.tokens and cost.gpu_hour would give */
    cr_assert(strstr(row, ",,") != NULL && strstr(row, ",,") == strstr(row, ",,,,\n"), "%s", row);
    json_t *t = json_load_file(tl, 0, &e);
    cr_assert_not_null(t, "%s", e.text);
    json_t *ev = json_object_get(t, "traceEvents");
    int pp = 0;
    for (size_t i = 0; i < json_array_size(ev); i++) {
        const char *dim = json_string_value(
            json_object_get(json_object_get(json_array_get(ev, i), "args"), "dim"));
        if (dim) {
            cr_assert(eq(str, (char *)dim, "pp"), "only pipeline collectives here");
            pp++;
        }
    }
    cr_assert(gt(int, pp, 0));
    json_decref(t);
    testdir_remove(d);
}

/* Writes text to dir/name and returns the path (static buffer per call site is the caller's). */
static const char *write_file(char *path, size_t len, const char *dir, const char *name,
                              const char *text)
{
    testdir_path(path, len, dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

Test(cli, memory_that_does_not_fit_is_reported_with_the_shortfall)
{
    char d[256], scn[300], json[300], args[1024], out[8192];
    cr_assert_not_null(testdir_make(d, sizeof d));
    write_file(scn, sizeof scn, d, "big.yaml",
               "model: gpt3-175b\ndevice: A100-80GB\nplatform: dgx-a100\nstrategy: {tp: 2}\n"
               "run: {layers: 1}\n");
    testdir_path(json, sizeof json, d, "big.json");
    snprintf(args, sizeof args, "run %s --json %s", scn, json);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    cr_assert(strstr(out, "warning: does not fit in memory") != NULL, "%s", out);
    cr_assert(strstr(out, "GB short") != NULL, "%s", out);
    cr_assert(strstr(out, "DOES NOT FIT") != NULL, "%s", out);
    json_error_t e;
    json_t *j = json_load_file(json, 0, &e);
    cr_assert_not_null(j, "%s", e.text);
    cr_assert(ne(int, json_is_false(json_object_get(j, "memory_fits")), 0));
    /* 175e9 parameters x 16 bytes over 2 GPUs, far beyond 80 GiB */
    double gb = json_number_value(json_object_get(j, "memory_gb_per_gpu"));
    cr_assert(gt(dbl, gb, 1300));
    json_t *m = json_object_get(j, "memory");
    double sum = 0;
    const char *parts[] = {"weights_gb", "gradients_gb", "optimizer_gb", "activations_gb"};
    for (int i = 0; i < 4; i++)
        sum += json_number_value(json_object_get(m, parts[i]));
    cr_assert(ieee_ulp_eq(dbl, sum, gb, 8), "%g vs %g", sum, gb);
    cr_assert(eq(dbl, json_number_value(json_object_get(m, "device_gb")), 80 * 1.073741824));
    json_decref(j);
    testdir_remove(d);
}

Test(cli, plan_ranks_only_what_fits_unless_asked)
{
    char d[256], scn[300], json[300], args[1024];
    static char out[65536];
    cr_assert_not_null(testdir_make(d, sizeof d));
    /* GPT-3 13B at TP=2 on a 24 GB RTX 4090: no candidate fits (~105 GB of states per GPU) */
    write_file(scn, sizeof scn, d, "small.yaml",
               "model: gpt3-13b\ndevice: RTX-4090\nplatform: dgx-a100\nstrategy: {tp: 2}\n"
               "run: {layers: 1}\n");
    snprintf(args, sizeof args, "plan %s --simulate 1", scn);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 1), 2), "%s", out);
    cr_assert(strstr(out, "--ignore-memory") != NULL, "%s", out);
    testdir_path(json, sizeof json, d, "plan.json");
    snprintf(args, sizeof args, "plan %s --simulate 1 --ignore-memory --json %s", scn, json);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    json_error_t e;
    json_t *j = json_load_file(json, 0, &e);
    cr_assert_not_null(j, "%s", e.text);
    json_t *rows = json_object_get(j, "rows");
    cr_assert(gt(sz, json_array_size(rows), 1));
    cr_assert(ne(int, json_is_false(json_object_get(json_array_get(rows, 0), "memory_fits")), 0));
    /* only the best is simulated: the others have no simulated time (null, not 0) */
    cr_assert(ne(int, json_is_number(json_object_get(json_array_get(rows, 0), "simulated_s")), 0));
    cr_assert(ne(int, json_is_null(json_object_get(json_array_get(rows, 1), "simulated_s")), 0));
    json_decref(j);
    /* at TP=8 on a 40 GB A100, 1D fits (about 36 GB) and the 2x4 meshes do not (their
     * attention scores are sharded over 2 GPUs only): those are dropped and counted */
    write_file(scn, sizeof scn, d, "fits.yaml",
               "model: gpt3-13b\ndevice: A100-40GB\nplatform: dgx-a100\nstrategy: {tp: 8}\n"
               "run: {layers: 1}\n");
    snprintf(args, sizeof args, "plan %s --simulate 1 --json %s", scn, json);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    j = json_load_file(json, 0, &e);
    cr_assert_not_null(j, "%s", e.text);
    rows = json_object_get(j, "rows");
    cr_assert(gt(dbl, json_number_value(json_object_get(j, "dropped_for_memory")), 0));
    cr_assert(gt(sz, json_array_size(rows), 0));
    for (size_t i = 0; i < json_array_size(rows); i++)
        cr_assert(
            ne(int, json_is_true(json_object_get(json_array_get(rows, i), "memory_fits")), 0));
    json_decref(j);
    testdir_remove(d);
}

/* A TP layer scenario with Transformer Engine's or PyTorch's TP overlap plans with it: the TP
 * planner tries sequence parallelism, and on it the overlap the scenario runs, beside the other
 * kinds (before, every candidate inherited the overlap without sequence parallelism and was
 * refused: "no strategy ... fits"; then they ran without it). --async-tp asks for PyTorch's
 * on a scenario that sets neither. */
Test(cli, plan_of_a_scenario_with_a_tp_overlap_searches_it)
{
    static char out[65536];
    static const char *const opts[] = {"--set strategy.tp_comm_overlap=true",
                                       "--set strategy.async_tensor_parallel=true", "--async-tp"};
    static const char *const want[] = {"1d tp=8 +sequence-parallel +tp-comm-overlap",
                                       "1d tp=8 +sequence-parallel +async-tp",
                                       "1d tp=8 +sequence-parallel +async-tp"};
    for (int i = 0; i < 3; i++) {
        char args[512];
        snprintf(args, sizeof args,
                 "plan %s/scenarios/tp-overlap-gpt3-175b-h100.yaml %s --simulate 0 --top 0",
                 TPSIM_SOURCE_DIR, opts[i]);
        cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
        cr_assert(ne(ptr, strstr(out, want[i]), NULL), "%s: %s", opts[i], out);
        cr_assert(eq(ptr, strstr(out, "not among the candidates"), NULL), "%s", out);
    }
}

/* --async-tp widens a job's plan too: its JSON rows say which run PyTorch's async TP. */
Test(cli, plan_async_tp_on_a_job)
{
    static char out[65536];
    char args[512];
    char d[256], json[300];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(json, sizeof json, d, "plan.json");
    snprintf(args, sizeof args,
             "plan %s/tests/data/good/job-32.yaml --async-tp --simulate 0 --top 1 --json %s",
             TPSIM_SOURCE_DIR, json);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    json_error_t e;
    json_t *j = json_load_file(json, 0, &e), *rows = json_object_get(j, "rows"), *r;
    cr_assert_not_null(j, "%s", e.text);
    size_t i, async = 0;
    json_array_foreach(rows, i, r)
    {
        const char *desc = json_string_value(json_object_get(r, "configuration"));
        async += desc && strstr(desc, "+async-tp +sp") != NULL;
    }
    cr_assert(gt(sz, async, 0), "no async TP row among %zu", json_array_size(rows));
    json_decref(j);
}

Test(cli, plan_on_a_job_ranks_whole_job_configurations)
{
    char d[256], json[300], args[1024];
    static char out[65536];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(json, sizeof json, d, "plan.json");
    snprintf(args, sizeof args, "plan %s/tests/data/good/job-32.yaml --top 5 --json %s",
             TPSIM_SOURCE_DIR, json);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    cr_assert(strstr(out, "32 GPUs, global batch 32") != NULL, "%s", out);
    cr_assert(strstr(out, "best: tp ") != NULL, "%s", out);
    json_error_t e;
    json_t *j = json_load_file(json, 0, &e);
    cr_assert_not_null(j, "%s", e.text);
    cr_assert(eq(int, (int)json_integer_value(json_object_get(j, "gpus")), 32));
    json_t *rows = json_object_get(j, "rows");
    cr_assert(gt(sz, json_array_size(rows), 5), "every row, not only the printed ones");
    json_t *r0 = json_array_get(rows, 0), *r1 = json_array_get(rows, 1);
    cr_assert(ne(int, json_is_number(json_object_get(r0, "simulated_s")), 0), "the best simulated");
    cr_assert(ne(int, json_is_null(json_object_get(r1, "simulated_s")), 0));
    long tp = (long)json_integer_value(json_object_get(r0, "tp"));
    long pp = (long)json_integer_value(json_object_get(r0, "pp"));
    long dp = (long)json_integer_value(json_object_get(r0, "dp"));
    long cp = (long)json_integer_value(json_object_get(r0, "cp"));
    long gpus = tp * cp * pp * dp;
    cr_assert(eq(long, gpus, 32));
    cr_assert_not_null(json_string_value(json_object_get(r0, "schedule")));
    cr_assert_not_null(json_string_value(json_object_get(r0, "recompute")));
    json_decref(j);
    testdir_remove(d);
}

Test(cli, trace_then_run_directory_prints_the_same_times)
{
    char dir[256];
    cr_assert_not_null(testdir_make(dir, sizeof dir));
    char args[1024], direct[8192], replay[8192], out[1024];
    snprintf(args, sizeof args, "trace %s/tests/data/good/tiny.yaml -o %s/t", TPSIM_SOURCE_DIR,
             dir);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    snprintf(args, sizeof args, "run %s/tests/data/good/tiny.yaml", TPSIM_SOURCE_DIR);
    cr_assert(eq(int, tpsim(direct, sizeof direct, args, 0), 0));
    snprintf(args, sizeof args, "run %s/t", dir);
    cr_assert(eq(int, tpsim(replay, sizeof replay, args, 0), 0), "%s", replay);
    /* the same times and throughputs (the trace carries the model FLOPs and the peak); memory
     * is the scenario's, which a trace does not carry */
    const char *a = strstr(direct, "iteration time"), *b = strstr(replay, "iteration time");
    cr_assert(a && b);
    const char *am = strstr(a, "memory per GPU"), *at = strstr(a, "time per layer");
    cr_assert(am && at && !strstr(b, "memory per GPU"));
    cr_assert(eq(int, strncmp(a, b, (size_t)(am - a)), 0), "%s\n---\n%s", a, b);
    cr_assert(eq(str, (char *)at, (char *)b + (am - a)));
    testdir_remove(dir);
}

Test(cli, trace_of_a_folded_job_writes_every_replica_in_full)
{
    char d[256], scn[300], args[1024], out[4096];
    cr_assert_not_null(testdir_make(d, sizeof d));
    write_file(scn, sizeof scn, d, "job.yaml",
               "model: {preset: gpt3-1.3b, micro_batch: 1}\ndevice: A100-80GB\n"
               "platform: {preset: dgx-a100, nodes: 2}\nstrategy: {tp: 2, pp: 2, dp: 4}\n"
               "training: {global_batch: 8}\nrun: {fold: true}\n");
    /* run folds the replicas ... */
    snprintf(args, sizeof args, "run %s", scn);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    cr_assert(strstr(out, "replicas: 1..3 mirror replica 0") != NULL, "%s", out);
    /* ... the trace holds every GPU's own ops, and replays to the same iteration time */
    snprintf(args, sizeof args, "trace %s -o %s/t", scn, d);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    cr_assert(strstr(out, "wrote 16 rank file(s)") != NULL, "%s", out);
    char direct[8192], replay[8192];
    snprintf(args, sizeof args, "run %s", scn);
    cr_assert(eq(int, tpsim(direct, sizeof direct, args, 0), 0));
    snprintf(args, sizeof args, "run %s/t", d);
    cr_assert(eq(int, tpsim(replay, sizeof replay, args, 0), 0), "%s", replay);
    double a = atof(strstr(direct, "iteration time") + 14);
    double b = atof(strstr(replay, "iteration time") + 14);
    cr_assert(lt(dbl, fabs(a / b - 1), 0.01), "%g vs %g", a, b);
    testdir_remove(d);
}

Test(cli, collective_json_has_nccl_tests_columns)
{
    char d[256], json[300];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(json, sizeof json, d, "coll.json");
    char args[512], out[8192];
    snprintf(
        args, sizeof args,
        "collective --platform dgx-a100 --op all_reduce --ranks 8 --min 1M --max 16M --json %s",
        json);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    json_error_t e;
    json_t *j = json_load_file(json, 0, &e);
    cr_assert_not_null(j);
    json_t *rows = json_object_get(j, "rows");
    cr_assert(eq(sz, json_array_size(rows), 5));
    json_t *r = json_array_get(rows, 4);
    double bytes = json_number_value(json_object_get(r, "bytes"));
    double t = json_number_value(json_object_get(r, "time_s"));
    double alg = json_number_value(json_object_get(r, "algbw_GBps"));
    double bus = json_number_value(json_object_get(r, "busbw_GBps"));
    cr_assert(eq(dbl, bytes, 16.0 * 1048576));
    cr_assert(ieee_ulp_eq(dbl, alg, bytes / t / 1e9, 4));
    cr_assert(ieee_ulp_eq(dbl, bus, alg * 2 * 7 / 8, 4));
    cr_assert(eq(str, (char *)json_string_value(json_object_get(r, "granularity")), "step"));
    json_decref(j);
    testdir_remove(d);
}

Test(cli, collective_reduce_runs_the_broadcast_chain_backwards_and_only_as_a_ring)
{
    static char red[8192], bc[8192];
    const char *args = "collective --platform dgx-a100 --op %s --ranks 8 --bytes 64MiB";
    char cmd[256];
    snprintf(cmd, sizeof cmd, args, "reduce");
    cr_assert(eq(int, tpsim(red, sizeof red, cmd, 0), 0), "%s", red);
    snprintf(cmd, sizeof cmd, args, "broadcast");
    cr_assert(eq(int, tpsim(bc, sizeof bc, cmd, 0), 0), "%s", bc);
    /* the same time, so the same bus bandwidth (nccl-tests: algbw for both) */
    cr_assert(strstr(red, "Avg bus bandwidth") != NULL);
    cr_assert(eq(str, strstr(red, "Avg bus bandwidth"), strstr(bc, "Avg bus bandwidth")));
    cr_assert(
        eq(int,
           tpsim(red, sizeof red,
                 "collective --platform dgx-a100 --op reduce --algorithm tree --bytes 1MiB", 0),
           2));
    cr_assert(strstr(red, "cannot run reduce") != NULL, "%s", red);
}

Test(cli, platform_show_prints_the_matrix_and_rejects_bad_params)
{
    static char out[65536];
    cr_assert(eq(int, tpsim(out, sizeof out, "platform show pcie-8gpu sockets=2", 0), 0), "%s",
              out);
    cr_assert(strstr(out, "GPU-to-GPU bandwidth") != NULL);
    cr_assert(strstr(out, "20.0") != NULL); /* the socket interconnect shows in the matrix */
    cr_assert(eq(int, tpsim(out, sizeof out, "platform show pcie-8gpu pcie_gen=9", 0), 2));
    cr_assert(strstr(out, "pcie_gen") != NULL, "%s", out);
    cr_assert(eq(int, tpsim(out, sizeof out, "platform show nosuch", 0), 2));
    /* the words, and the one-word form --platform takes */
    cr_assert(eq(int, tpsim(out, sizeof out, "platform show gb200-nvl72 racks=2", 0), 0), "%s",
              out);
    cr_assert(strstr(out, "GPUs 144,") != NULL, "%s", out);
    cr_assert(strstr(out, "x2 racks of 72 GPUs (one NVLink domain each)") != NULL, "%s", out);
    cr_assert(strstr(out, "racks (NVLink domains) 2") != NULL, "%s", out);
    cr_assert(eq(int, tpsim(out, sizeof out, "platform show \"gb200-nvl72 racks=2\"", 0), 0), "%s",
              out);
    cr_assert(strstr(out, "GPUs 144,") != NULL, "%s", out);
}

static int file_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    int n = 0, c;
    while (f && (c = fgetc(f)) != EOF)
        n += c == '\n';
    if (f) fclose(f);
    return n;
}

static const char sweep_scn[] =
    "model: gpt3-1.3b\ndevice: A100-80GB\nplatform: dgx-a100\nstrategy: {tp: 2}\n"
    "run: {layers: 4}\nsweep:\n  strategy.tp: [1, 2, 3, 4, 8]\n"
    "  platform.nodes: {from: 1, to: 4, factor: 2}\n  strategy.chunks: [1, 2]\n";

/* The whole file as a string (caller frees). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strdup(buf);
}

Test(cli, killed_sweep_resumed_gives_the_rows_of_an_uninterrupted_one)
{
    char d[256], scn[300], full_csv[300], cut_csv[300], cmd[2048];
    cr_assert_not_null(testdir_make(d, sizeof d));
    write_file(scn, sizeof scn, d, "sweep.yaml", sweep_scn);
    testdir_path(full_csv, sizeof full_csv, d, "full.csv");
    testdir_path(cut_csv, sizeof cut_csv, d, "cut.csv");
    snprintf(cmd, sizeof cmd, "%s sweep %s -j 2 -o %s 2>/dev/null", TPSIM_BIN, scn, full_csv);
    cr_assert(eq(int, system(cmd), 0));
    char *full = slurp(full_csv);
    cr_assert(eq(int, file_lines(full_csv), 31));
    /* rows come in point order: a rerun writes the same bytes */
    cr_assert(eq(int, system(cmd), 0));
    char *again = slurp(full_csv);
    cr_assert(eq(str, again, full));
    free(again);
    /* start again, kill the whole process group once a few rows are in */
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        freopen("/dev/null", "w", stderr);
        execl(TPSIM_BIN, TPSIM_BIN, "sweep", scn, "-j", "1", "-o", cut_csv, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    for (int i = 0; i < 3000 && file_lines(cut_csv) < 6; i++)
        usleep(2000);
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
    int kept = file_lines(cut_csv);
    cr_assert(lt(int, kept, 31), "the sweep finished before it was killed");
    /* and a row cut in the middle, as a kill during a write would leave */
    FILE *f = fopen(cut_csv, "a");
    fputs("29,8,4,ok,0.00", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s sweep %s -j 2 -o %s --resume 2>/dev/null", TPSIM_BIN, scn,
             cut_csv);
    cr_assert(eq(int, system(cmd), 0));
    char *resumed = slurp(cut_csv);
    cr_assert(eq(str, resumed, full));
    free(full);
    free(resumed);
    testdir_remove(d);
}

/* A sweep point is written to a temporary file, but its relative paths read as in the scenario
 * it came from. */
Test(cli, sweep_points_resolve_relative_paths_against_the_scenario)
{
    char d[256], scn[300], plat[300], csv[300], cmd[2048], out[8192];
    cr_assert_not_null(testdir_make(d, sizeof d));
    write_file(plat, sizeof plat, d, "fabric.yaml", "preset: dgx-a100\ngpu_link: 100GB/s\n");
    write_file(scn, sizeof scn, d, "rel.yaml",
               "model: gpt3-1.3b\ndevice: A100-80GB\nplatform: {file: fabric.yaml}\n"
               "strategy: {tp: 2}\nrun: {layers: 1}\nsweep:\n  strategy.tp: [2, 4]\n");
    testdir_path(csv, sizeof csv, d, "rel.csv");
    snprintf(cmd, sizeof cmd, "cd / && %s sweep %s -j 1 -o %s", TPSIM_BIN, scn, csv);
    FILE *f = popen(cmd, "r");
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    cr_assert(eq(int, pclose(f), 0), "%s", out);
    char *rows = slurp(csv);
    cr_assert(strstr(rows, ",error,") == NULL, "%s", rows);
    free(rows);
    testdir_remove(d);
}

Test(cli, killed_parent_leaves_no_orphan_appending_rows)
{
    char d[256], scn[300], csv[300], cmd[2048];
    cr_assert_not_null(testdir_make(d, sizeof d));
    write_file(scn, sizeof scn, d, "sweep.yaml", sweep_scn);
    testdir_path(csv, sizeof csv, d, "s.csv");
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stderr);
        execl(TPSIM_BIN, TPSIM_BIN, "sweep", scn, "-j", "2", "-o", csv, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 3000 && file_lines(csv) < 4; i++)
        usleep(2000);
    kill(pid, SIGKILL); /* the parent alone */
    waitpid(pid, NULL, 0);
    snprintf(cmd, sizeof cmd, "%s sweep %s -j 2 -o %s --resume 2>/dev/null", TPSIM_BIN, scn, csv);
    cr_assert(eq(int, system(cmd), 0));
    usleep(200000); /* an orphan would append after the resume */
    cr_assert(eq(int, file_lines(csv), 31));
    testdir_remove(d);
}

/* A CSV another sweep holds is refused (exit 2) once the short wait for a just-killed sweep's
 * lock has passed, and left as it was. */
Test(cli, a_csv_being_written_by_another_sweep_is_refused)
{
    char d[256], scn[300], csv[300], cmd[2048], out[4096];
    cr_assert_not_null(testdir_make(d, sizeof d));
    write_file(scn, sizeof scn, d, "sweep.yaml", sweep_scn);
    write_file(csv, sizeof csv, d, "s.csv", "held\n");
    int fd = open(csv, O_RDWR);
    cr_assert(fd >= 0 && flock(fd, LOCK_EX) == 0);
    snprintf(cmd, sizeof cmd, "sweep %s -j 1 -o %s --resume", scn, csv);
    cr_assert(eq(int, tpsim(out, sizeof out, cmd, 1), 2), "%s", out);
    cr_assert(strstr(out, "being written by another sweep") != NULL, "%s", out);
    close(fd);
    char *kept = slurp(csv);
    cr_assert(eq(str, kept, "held\n"));
    free(kept);
    testdir_remove(d);
}

/* A lock let go within the wait (a sweep killed a moment ago, its last worker being torn down)
 * does not stop the next sweep. */
Test(cli, a_lock_let_go_within_the_wait_is_waited_for)
{
    char d[256], scn[300], csv[300], cmd[2048], out[4096];
    cr_assert_not_null(testdir_make(d, sizeof d));
    write_file(scn, sizeof scn, d, "sweep.yaml",
               "model: gpt3-1.3b\ndevice: A100-80GB\nplatform: dgx-a100\nstrategy: {tp: 2}\n"
               "run: {layers: 1}\nsweep:\n  strategy.tp: [1, 2]\n");
    write_file(csv, sizeof csv, d, "s.csv", "");
    int fd = open(csv, O_RDWR);
    cr_assert(fd >= 0 && flock(fd, LOCK_EX) == 0);
    pid_t pid = fork();
    if (pid == 0) { /* holds the lock 0.3 s more, then dies with it */
        usleep(300000);
        _exit(0);
    }
    close(fd); /* the child's copy of the open file keeps the lock */
    snprintf(cmd, sizeof cmd, "sweep %s -j 1 -o %s --resume", scn, csv);
    cr_assert(eq(int, tpsim(out, sizeof out, cmd, 1), 0), "%s", out);
    waitpid(pid, NULL, 0);
    cr_assert(eq(int, file_lines(csv), 3));
    testdir_remove(d);
}

Test(cli, resume_refuses_a_foreign_csv_and_reruns_changed_values)
{
    char d[256], scn[300], other[300], csv[300], cmd[2048], out[4096];
    cr_assert_not_null(testdir_make(d, sizeof d));
    write_file(scn, sizeof scn, d, "a.yaml",
               "model: gpt3-1.3b\ndevice: A100-80GB\nplatform: dgx-a100\nstrategy: {tp: 2}\n"
               "run: {layers: 2}\nsweep:\n  strategy.tp: [1, 2]\n");
    testdir_path(csv, sizeof csv, d, "a.csv");
    snprintf(cmd, sizeof cmd, "sweep %s -j 1 -o %s", scn, csv);
    cr_assert(eq(int, tpsim(out, sizeof out, cmd, 0), 0), "%s", out);
    char *original = slurp(csv);
    /* another scenario with the same swept keys: its rows are not this sweep's */
    write_file(other, sizeof other, d, "b.yaml",
               "model: gpt3-2.7b\ndevice: A100-80GB\nplatform: dgx-a100\nstrategy: {tp: 2}\n"
               "run: {layers: 2}\nsweep:\n  strategy.tp: [1, 2]\n");
    snprintf(cmd, sizeof cmd, "sweep %s -j 1 -o %s --resume", other, csv);
    cr_assert(eq(int, tpsim(out, sizeof out, cmd, 1), 2), "%s", out);
    cr_assert(strstr(out, "another sweep definition") != NULL, "%s", out);
    /* other keys: the header differs */
    write_file(other, sizeof other, d, "c.yaml",
               "model: gpt3-1.3b\ndevice: A100-80GB\nplatform: dgx-a100\nstrategy: {tp: 2}\n"
               "run: {layers: 2}\nsweep:\n  strategy.chunks: [1, 2]\n");
    snprintf(cmd, sizeof cmd, "sweep %s -j 1 -o %s --resume", other, csv);
    cr_assert(eq(int, tpsim(out, sizeof out, cmd, 1), 2), "%s", out);
    cr_assert(strstr(out, "header") != NULL, "%s", out);
    char *after_refusal = slurp(csv);
    cr_assert(eq(str, after_refusal, original), "a refused resume changed the file");
    /* the same sweep with its values edited: the new value runs, the kept one does not */
    write_file(scn, sizeof scn, d, "a.yaml",
               "model: gpt3-1.3b\ndevice: A100-80GB\nplatform: dgx-a100\nstrategy: {tp: 2}\n"
               "run: {layers: 2}\nsweep:\n  strategy.tp: [2, 4]\n");
    snprintf(cmd, sizeof cmd, "sweep %s -j 1 -o %s --resume", scn, csv);
    cr_assert(eq(int, tpsim(out, sizeof out, cmd, 1), 0), "%s", out);
    cr_assert(strstr(out, "(1 to run)") != NULL, "%s", out);
    char *after = slurp(csv);
    cr_assert(strstr(after, "\n0,2,ok,") != NULL, "%s", after);
    cr_assert(strstr(after, "\n1,4,ok,") != NULL, "%s", after);
    cr_assert(strstr(after, ",1,ok,") == NULL, "%s", after);
    free(original);
    free(after_refusal);
    free(after);
    testdir_remove(d);
}

Test(cli, sweep_of_only_failing_points_exits_non_zero_and_does_not_blame_gnuplot)
{
    char d[256], scn[300], csv[300], cmd[2048], out[8192];
    cr_assert_not_null(testdir_make(d, sizeof d));
    write_file(scn, sizeof scn, d, "bad.yaml",
               "model: gpt3-1.3b\ndevice: A100-80GB\nplatform: dgx-a100\nstrategy: {tp: 2}\n"
               "run: {layers: 2}\nsweep:\n  strategy.tp: [3, 5]\n"
               "  name: [\"it's, \\\"x\\\"\"]\n");
    testdir_path(csv, sizeof csv, d, "bad.csv");
    snprintf(cmd, sizeof cmd, "sweep %s -j 1 -o %s --plot", scn, csv);
    cr_assert(eq(int, tpsim(out, sizeof out, cmd, 1), 2), "%s", out);
    cr_assert(strstr(out, "every point failed") != NULL, "%s", out);
    cr_assert(strstr(out, "nothing to plot") != NULL, "%s", out);
    cr_assert(strstr(out, "gnuplot") == NULL, "%s", out);
    /* values and messages keep their apostrophes, commas and quotes, quoted as RFC 4180 says */
    char *rows = slurp(csv);
    cr_assert(strstr(rows, "\n0,3,\"it's, \"\"x\"\"\",error,,,,,,,,,,,,,,,,,,,,,,,\"strategy.tp: "
                           "must divide model.heads (16), got 3\",") != NULL,
              "%s", rows);
    free(rows);
    /* and --resume reads them back: nothing to run */
    snprintf(cmd, sizeof cmd, "sweep %s -j 1 -o %s --resume", scn, csv);
    tpsim(out, sizeof out, cmd, 1);
    cr_assert(strstr(out, "(0 to run)") != NULL, "%s", out);
    testdir_remove(d);
}

Test(cli, options_parse_alike_in_every_command)
{
    char d[256], json[300], args[1024], out[4096];
    cr_assert_not_null(testdir_make(d, sizeof d));
    /* --opt=VALUE is the same as --opt VALUE */
    testdir_path(json, sizeof json, d, "r.json");
    snprintf(args, sizeof args, "run %s/scenarios/quickstart.yaml -q --json=%s", TPSIM_SOURCE_DIR,
             json);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    cr_assert(eq(int, access(json, R_OK), 0));
    /* one line for each kind of usage error, exit 2 */
    static const char *const bad[][2] = {
        {"sweep x.yaml --bogus", "unknown option '--bogus'"},
        {"plan x.yaml --top", "option '--top' needs a value"},
        {"trace a.yaml b.yaml -o x", "unexpected argument 'b.yaml'"},
        {"validate layers --device Z80", "unknown device 'Z80'"},
        {"validate layers a.csv --kernels b.csv", "give CSV or --kernels, not both"},
        {"validate e2e --max-gpus 3", "no row of any table has at most 3 GPUs"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert(eq(int, tpsim(out, sizeof out, bad[i][0], 1), 2), "%s", bad[i][0]);
        cr_assert(strstr(out, bad[i][1]) != NULL, "%s: %s", bad[i][0], out);
    }
    /* the main help lists every command of the table */
    cr_assert(eq(int, tpsim(out, sizeof out, "--help", 0), 0));
    cr_assert(strstr(out, "validate nccl|profile|trace") != NULL, "%s", out);
    testdir_remove(d);
}

/* Without a CSV, validate e2e runs every table of the reference data, each on its own GPUs, and
 * summarises all rows; a table with no row under --max-gpus says how many it left out. (16 GPUs:
 * the 32-GPU rows take minutes under the sanitizers.) */
Test(cli, validate_e2e_without_a_table_runs_every_table)
{
    char d[256], json[300], args[600], out[16384];
    cr_assert_not_null(testdir_make(d, sizeof d));
    snprintf(json, sizeof json, "%s/e2e.json", d);
    snprintf(args, sizeof args, "validate e2e --max-gpus 16 --json %s", json);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    cr_assert(ne(ptr, strstr(out, "all 4 tables: median |error|"), NULL), "%s", out);
    /* the DGX Cloud recipes on H100s, with their FP8/BF16 ratios */
    cr_assert(ne(ptr, strstr(out, "H100-SXM on dgx-h100 machines"), NULL), "%s", out);
    cr_assert(ne(ptr, strstr(out, "FP8/BF16 ratio: median |error|"), NULL), "%s", out);
    json_error_t je;
    json_t *j = json_load_file(json, 0, &je);
    cr_assert(ne(ptr, j, NULL), "%s", je.text);
    json_t *tables = json_object_get(j, "tables"), *rows = json_object_get(j, "rows");
    cr_assert(eq(sz, json_array_size(tables), 4));
    /* the two 8-GPU rows of Korthikanti et al.'s table, none of the weak scaling (32 GPUs and
     * up), the 16-GPU Nemotron-4 15B rows of both releases in BF16 and FP8, the long-context
     * table's 4- to 16-GPU rows */
    static const int per_table[] = {2, 0, 4, 3};
    for (size_t k = 0; k < 4; k++)
        cr_assert(eq(int,
                     (int)json_integer_value(json_object_get(json_array_get(tables, k), "rows")),
                     per_table[k]));
    cr_assert(ne(ptr, strstr(out, "(10 rows above --max-gpus 16 left out)"), NULL), "%s", out);
    cr_assert(eq(sz, json_array_size(rows), 9));
    cr_assert(ne(
        ptr,
        strstr(json_string_value(json_object_get(json_array_get(rows, 2), "table")), "dgxc_bench"),
        NULL));
    double worst = 0;
    for (size_t i = 0; i < 9; i++) {
        json_t *row = json_array_get(rows, i);
        worst = fmax(worst, fabs(json_real_value(json_object_get(row, "err_pct"))));
        /* where each row's simulated iteration goes, in parts that add up to it */
        json_t *bd = json_object_get(row, "breakdown");
        cr_assert(ne(ptr, bd, NULL));
        static const char *const parts[] = {
            "compute_s", "tp_s", "cp_s", "ep_s", "dp_s", "host_wait_s", "pipeline_bubble_s"};
        double sum = 0;
        for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
            json_t *v = json_object_get(bd, parts[k]);
            cr_assert(ne(ptr, v, NULL), "%s", parts[k]);
            sum += json_real_value(v);
        }
        double t = json_real_value(json_object_get(row, "simulated_s"));
        cr_assert(gt(dbl, json_real_value(json_object_get(bd, "compute_s")), 0.5 * t));
        cr_assert(lt(dbl, fabs(sum - t), 1e-6 * t), "row %zu: parts %.9g, iteration %.9g", i, sum,
                  t);
    }
    cr_assert(eq(dbl, json_real_value(json_object_get(j, "max_abs_err_pct")), worst));
    json_decref(j);
    testdir_remove(d);
}

Test(cli, validate_layers_json_and_its_bad_input)
{
    char d[256], json[300], args[1024], out[8192];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(json, sizeof json, d, "l.json");
    snprintf(args, sizeof args,
             "validate layers %s/layers/h100_megatron_1d_layer_times.csv --json %s", TPSIM_REFDATA,
             json);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    json_error_t je;
    json_t *j = json_load_file(json, 0, &je);
    cr_assert(ne(ptr, j, NULL), "%s", je.text);
    int has_median = json_is_real(json_object_get(j, "median_abs_err_pct"));
    int has_max = json_is_real(json_object_get(j, "max_abs_err_pct"));
    cr_assert(has_median && has_max);
    json_t *row = json_array_get(json_object_get(j, "rows"), 0);
    static const char *const keys[] = {"name",       "tp",          "batch",
                                       "measured_s", "simulated_s", "err_pct"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        cr_assert(ne(ptr, json_object_get(row, keys[i]), NULL), "rows[0].%s", keys[i]);
    json_decref(j);
    /* --set changes a device parameter as a scenario would: a host 10x slower is slower */
    snprintf(args, sizeof args,
             "validate layers %s/layers/h100_megatron_1d_layer_times.csv --set "
             "launch_overhead=400us --json %s",
             TPSIM_REFDATA, json);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    j = json_load_file(json, 0, &je);
    row = json_array_get(json_object_get(j, "rows"), 3); /* gpt3-1.3b tp 8, host-bound */
    cr_assert(gt(dbl, json_real_value(json_object_get(row, "err_pct")), 100));
    json_decref(j);
    /* bad input: one line naming where, exit 2 */
    static const char *const bad[][2] = {
        {"validate layers --set foo=1", "field 'device.foo': unknown key 'foo'"},
        {"validate layers --set launch_overhead", "expected KEY=VALUE"},
        {"validate layers --set launch_overhead=fast", "field 'device.launch_overhead'"},
        {"validate layers --gemm-table /nonexistent.csv", "/nonexistent.csv: cannot open"},
        {"validate layers /nonexistent.csv", "/nonexistent.csv: cannot open"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert(eq(int, tpsim(out, sizeof out, bad[i][0], 1), 2), "%s: %s", bad[i][0], out);
        cr_assert(strstr(out, bad[i][1]) != NULL, "%s: %s", bad[i][0], out);
        cr_assert(eq(int, count_lines(out), 1), "%s: %s", bad[i][0], out);
    }
    testdir_remove(d);
}

/* run --seeds N: one row per seed in JSON, their mean and quantiles; --seed S alone gives the
 * same time as seed S of the sweep; bad counts and traces are usage errors. */
Test(cli, run_seeds_summarises_each_seed_and_seed_alone_matches_it)
{
    char d[256], scn[300], json[300], args[1024], out[16384];
    cr_assert_not_null(testdir_make(d, sizeof d));
    write_file(scn, sizeof scn, d, "noise.yaml",
               "model: {preset: gpt3-1.3b, micro_batch: 1}\ndevice: A100-80GB\n"
               "platform: dgx-a100\nstrategy: {tp: 4, balance: zero_resize}\n"
               "stragglers: {noise: stall, sigma: 0.1, stall_probability: 0.2, stall_factor: 3, "
               "per: iteration, seed: 5}\nrun: {layers: 2}\n");
    testdir_path(json, sizeof json, d, "seeds.json");
    snprintf(args, sizeof args, "run %s --seeds 5 --json %s", scn, json);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    cr_assert(strstr(out, "5 seeds: mean") != NULL, "%s", out);
    json_error_t e;
    json_t *j = json_load_file(json, 0, &e);
    cr_assert_not_null(j, "%s", e.text);
    json_t *runs = json_object_get(j, "seeds");
    cr_assert(eq(sz, json_array_size(runs), 5));
    double sum = 0, lo = INFINITY, hi = 0, t7 = 0;
    for (size_t i = 0; i < 5; i++) {
        json_t *r = json_array_get(runs, i);
        cr_assert(eq(int, (int)json_integer_value(json_object_get(r, "seed")), 5 + (int)i));
        double t = json_number_value(json_object_get(r, "iteration_time_s"));
        sum += t;
        lo = fmin(lo, t);
        hi = fmax(hi, t);
        if (i == 2) t7 = t;
    }
    json_t *sm = json_object_get(j, "iteration_time_s");
    cr_expect(ieee_ulp_eq(dbl, json_number_value(json_object_get(sm, "mean")), sum / 5, 8));
    cr_expect(eq(dbl, json_number_value(json_object_get(sm, "min")), lo));
    cr_expect(eq(dbl, json_number_value(json_object_get(sm, "max")), hi));
    double p50 = json_number_value(json_object_get(sm, "p50"));
    cr_expect(p50 >= lo && p50 <= hi);
    cr_expect(hi > lo, "a 20%% stall chance over 4 GPUs and 5 seeds varies the time");
    json_decref(j);
    /* --seed 7 alone: the third row */
    testdir_path(json, sizeof json, d, "one.json");
    snprintf(args, sizeof args, "run %s --seed 7 -q --json %s", scn, json);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    j = json_load_file(json, 0, &e);
    cr_assert_not_null(j, "%s", e.text);
    cr_expect(eq(dbl, json_number_value(json_object_get(j, "iteration_time_s")), t7));
    cr_expect(
        strstr(json_string_value(json_object_get(json_object_get(j, "meta"), "heterogeneity")),
               "seed 7") != NULL);
    json_decref(j);
    snprintf(args, sizeof args, "run %s --seeds 0", scn);
    cr_expect(eq(int, tpsim(out, sizeof out, args, 1), 2), "%s", out);
    snprintf(args, sizeof args, "run %s --seeds 2 --csv %s/x.csv", scn, d);
    cr_expect(eq(int, tpsim(out, sizeof out, args, 1), 2), "%s", out);
    testdir_remove(d);
}

/* run on a scenario of several jobs: the table, JSON with each job's GPUs, slowdown and both
 * reports, CSV with one row per job, a timeline of every GPU; --seeds and other commands that
 * take one scenario are refused with the reason. */
Test(cli, run_jobs_sharing_a_platform)
{
    char d[256], json[300], csv[300], tl[300], args[2048], out[16384];
    const char *scn = TPSIM_SOURCE_DIR "/tests/data/good/fabric-two-jobs.yaml";
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(json, sizeof json, d, "f.json");
    testdir_path(csv, sizeof csv, d, "f.csv");
    testdir_path(tl, sizeof tl, d, "tl.json");
    snprintf(args, sizeof args, "run %s --json %s --csv %s --timeline %s", scn, json, csv, tl);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    cr_assert(strstr(out, "job tp-across") != NULL, "%s", out);
    cr_assert(strstr(out, "slowdown") != NULL, "%s", out);
    json_error_t e;
    json_t *j = json_load_file(json, 0, &e);
    cr_assert_not_null(j, "%s", e.text);
    json_t *jobs = json_object_get(j, "jobs");
    cr_assert(eq(sz, json_array_size(jobs), 2));
    double end = 0;
    for (size_t i = 0; i < 2; i++) {
        json_t *J = json_array_get(jobs, i);
        cr_assert(eq(sz, json_array_size(json_object_get(J, "gpus")), 8));
        double alone =
            json_number_value(json_object_get(json_object_get(J, "alone"), "iteration_time_s"));
        double shared =
            json_number_value(json_object_get(json_object_get(J, "shared"), "iteration_time_s"));
        cr_expect(gt(dbl, alone, 0));
        cr_expect(ge(dbl, shared, alone));
        cr_expect(
            ieee_ulp_eq(dbl, json_number_value(json_object_get(J, "slowdown")), shared / alone, 4));
        end = fmax(end, shared);
    }
    cr_expect(eq(int,
                 (int)json_integer_value(
                     json_array_get(json_object_get(json_array_get(jobs, 1), "gpus"), 0)),
                 4));
    cr_expect(eq(dbl, json_number_value(json_object_get(j, "iteration_time_s")), end));
    json_decref(j);
    FILE *f = fopen(csv, "r");
    cr_assert_not_null(f);
    char line[512];
    int rows = 0;
    while (fgets(line, sizeof line, f))
        rows++;
    fclose(f);
    cr_expect(eq(int, rows, 3), "a header and one row per job");
    j = json_load_file(tl, 0, &e);
    cr_assert_not_null(j, "%s", e.text);
    json_decref(j);
    snprintf(args, sizeof args, "run %s --seeds 2", scn);
    cr_expect(eq(int, tpsim(out, sizeof out, args, 1), 2), "%s", out);
    cr_expect(strstr(out, "--seeds") != NULL, "%s", out);
    snprintf(args, sizeof args, "trace %s -o %s/t", scn, d);
    cr_expect(eq(int, tpsim(out, sizeof out, args, 1), 2), "%s", out);
    cr_expect(strstr(out, "field 'jobs'") != NULL, "%s", out);
    testdir_remove(d);
}

/* A layer group with context parallelism (tp 2 x cp 4 on 8 GPUs): the TP planner's MFU is over
 * the 8 GPUs the strategy uses (it divided by tp alone), and the timeline names the threads of
 * the streams a GPU uses (the CP ring's among them) and no others. */
Test(cli, context_parallel_plan_counts_every_gpu_and_the_timeline_names_used_streams)
{
    char d[256], json[300], tl[300], args[1024], out[8192];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(json, sizeof json, d, "plan.json");
    testdir_path(tl, sizeof tl, d, "tl.json");
    snprintf(args, sizeof args, "plan %s/tests/data/good/cp-layer.yaml --simulate 1 --json %s",
             TPSIM_SOURCE_DIR, json);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    json_error_t e;
    json_t *j = json_load_file(json, 0, &e), *row;
    cr_assert_not_null(j, "%s", e.text);
    size_t i;
    json_array_foreach(json_object_get(j, "rows"), i, row)
    {
        double mfu = json_number_value(json_object_get(row, "mfu"));
        cr_assert(lt(dbl, mfu, 1.0), "row %zu: MFU %.3f", i, mfu);
    }
    json_decref(j);
    snprintf(args, sizeof args, "run %s/tests/data/good/cp-layer.yaml --timeline %s -q",
             TPSIM_SOURCE_DIR, tl);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    j = json_load_file(tl, 0, &e);
    cr_assert_not_null(j, "%s", e.text);
    int ring = 0, unused = 0;
    json_t *ev;
    json_array_foreach(json_object_get(j, "traceEvents"), i, ev)
    {
        const char *nm = json_string_value(json_object_get(ev, "name"));
        if (!nm || strcmp(nm, "thread_name")) continue;
        const char *t = json_string_value(json_object_get(json_object_get(ev, "args"), "name"));
        ring += t && !strcmp(t, "cp ring send");
        unused += t && !strcmp(t, "migration");
    }
    cr_assert(eq(int, ring, 8), "every GPU's ring thread");
    cr_assert(eq(int, unused, 0), "no thread for a stream no GPU uses");
    json_decref(j);
    testdir_remove(d);
}

/* A Ring all-reduce over 2 dgx-h100 machines crosses the network 4 times on its critical path
 * (30 steps, a lap and most of a second): each crossing pays nic_latency at both ends, so the
 * preset's 10.76 us add 8 x 10.76 us to a latency-bound size. */
static double coll_time(const char *dir, const char *platform)
{
    char js[512], cmd[1024];
    static char out[8192];
    testdir_path(js, sizeof js, dir, "c.json");
    snprintf(cmd, sizeof cmd,
             "collective --platform \"%s\" --algorithm ring --protocol LL128 --bytes 1MiB "
             "--json %s",
             platform, js);
    cr_assert(eq(int, tpsim(out, sizeof out, cmd, 0), 0), "%s", out);
    json_error_t je;
    json_t *j = json_load_file(js, 0, &je);
    cr_assert_not_null(j, "%s", je.text);
    double t =
        json_real_value(json_object_get(json_array_get(json_object_get(j, "rows"), 0), "time_s"));
    json_decref(j);
    return t;
}

Test(cli, a_ring_across_machines_pays_the_network_transport_latency_per_crossing_end)
{
    char d[256];
    cr_assert_not_null(testdir_make(d, sizeof d));
    double with = coll_time(d, "dgx-h100 nodes=2");
    double without = coll_time(d, "dgx-h100 nodes=2 nic_latency=0");
    cr_assert(ieee_ulp_eq(dbl, with - without, 8 * 10.76e-6, 1 << 20), "%g", with - without);
    testdir_remove(d);
}

/* The replay charges a send what NCCL's point-to-point path takes (docs/collectives.md,
 * "Send/receive"): on the Leonardo pair's platform 64 MiB goes over 4 channels of 16 MiB, each
 * its first 512 KiB chunk and its share at 16.59 GB/s and the Simple step (1.7966 us) after each
 * of its 32 chunks, after the send's 10.2854 us, the NVLink's 0.348 us and one Simple step;
 * without the channel rate, at the link's 73.56 GB/s. */
Test(cli, a_send_replays_ncclS_point_to_point_channels)
{
    char d[256], js[512], cmd[1024];
    static char out[8192];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(js, sizeof js, d, "s.json");
    snprintf(cmd, sizeof cmd,
             "collective --platform %s/platforms/a100-sxm4-4gpu-nvlink.yaml --op send_recv "
             "--ranks 2 --bytes 64MiB --json %s",
             TPSIM_SOURCE_DIR, js);
    cr_assert(eq(int, tpsim(out, sizeof out, cmd, 0), 0), "%s", out);
    json_error_t je;
    json_t *j = json_load_file(js, 0, &je);
    cr_assert_not_null(j, "%s", je.text);
    double t =
        json_real_value(json_object_get(json_array_get(json_object_get(j, "rows"), 0), "time_s"));
    json_decref(j);
    const double M = 1048576;
    double want = 10.2854e-6 + 0.348e-6 + 1.7966e-6 + (0.5 * M + 16 * M) / 16.59e9 + 32 * 1.7966e-6;
    cr_assert(le(dbl, fabs(t - want), 1e-9 * want), "%.12g s, want %.12g", t, want);
    cr_assert(gt(dbl, want, 1.7966e-6 + 0.348e-6 + 10.2854e-6 + 64 * M / 73.56e9)); /* it binds */
    testdir_remove(d);
}

/* One all-reduce row of `tpsim collective` on platform: time, bus bandwidth and algorithm. */
static void coll_row(const char *dir, const char *platform, const char *extra, double *busbw,
                     char *algo, size_t algo_len)
{
    char js[512], cmd[1024];
    static char out[16384];
    testdir_path(js, sizeof js, dir, "row.json");
    snprintf(cmd, sizeof cmd, "collective --platform \"%s\" --bytes 1GiB %s --json %s", platform,
             extra, js);
    cr_assert(eq(int, tpsim(out, sizeof out, cmd, 0), 0), "%s", out);
    json_error_t je;
    json_t *j = json_load_file(js, 0, &je);
    cr_assert_not_null(j, "%s", je.text);
    json_t *r = json_array_get(json_object_get(j, "rows"), 0);
    *busbw = json_number_value(json_object_get(r, "busbw_GBps"));
    snprintf(algo, algo_len, "%s", json_string_value(json_object_get(r, "algorithm")));
    json_decref(j);
}

/* A 1 GiB all-reduce over one GB200 NVL72 rack stays in its NVLink domain: NVLS, at
 * 2(n-1)/(n+1) of the NVLink rate NVLS delivers (689.28 GB/s x 0.886 x 0.74 / 0.85), less its
 * latency; over two racks it crosses the scale-out network, whose 8 rings of channels move at
 * most 2 x 20.04 GB/s each through a NIC. */
Test(cli, an_nvl72_rack_all_reduces_on_nvlink_and_two_racks_cross_the_network)
{
    char d[256], algo[32];
    cr_assert_not_null(testdir_make(d, sizeof d));
    double one, two, ring;
    coll_row(d, "gb200-nvl72", "", &one, algo, sizeof algo);
    cr_assert(eq(str, algo, "nvls"));
    double n = 72, bound = 2 * (n - 1) / (n + 1) * 689.28 * 0.886 * 0.74 / 0.85;
    cr_assert(le(dbl, one, bound), "%.2f GB/s, bound %.2f", one, bound);
    cr_assert(ge(dbl, one, 0.98 * bound), "%.2f GB/s, bound %.2f", one, bound);
    coll_row(d, "gb200-nvl72", "--algorithm ring --protocol Simple", &ring, algo, sizeof algo);
    cr_assert(le(dbl, ring, 689.28));
    cr_assert(ge(dbl, ring, 0.75 * 689.28), "%.2f GB/s", ring); /* more than any NIC path */
    coll_row(d, "gb200-nvl72 racks=2", "", &two, algo, sizeof algo);
    cr_assert(ne(str, algo, "nvls"));
    cr_assert(le(dbl, two, 8 * 2 * 20.04 * 1.0001), "%.2f GB/s (%s)", two, algo);
    cr_assert(lt(dbl, two, one / 2));
    testdir_remove(d);
}

/* A ring all-reduce of 1 GiB over 2 dgx-h100 machines: its 8 channels cross between the
 * machines on their rails (NCCL's PXN on a rail-optimised network). Oversubscribed 4:1 leaves
 * with one machine each send every crossing through a quarter of the NICs' rate (8 x 50 / 4 =
 * 100 GB/s for 8 channels of 40.08): the ring slows by 320.6 / 100; a rail-optimised network with
 * both machines on each rail's leaf keeps it there at the non-blocking time; a third tier whose
 * spines are oversubscribed 4:1 above one-leaf pods slows it as the leaves did. */
Test(cli, oversubscribed_tiers_slow_a_ring_that_crosses_them_and_rails_keep_it_below_them)
{
    char d[256], algo[32];
    cr_assert_not_null(testdir_make(d, sizeof d));
    double flat, rail, leaf, spine;
    const char *ring = "--algorithm ring --protocol Simple";
    coll_row(d, "dgx-h100 nodes=2", ring, &flat, algo, sizeof algo);
    coll_row(d, "dgx-h100 nodes=2 fabric=rail leaf_ports=2 oversubscription=4", ring, &rail, algo,
             sizeof algo);
    coll_row(d, "dgx-h100 nodes=2 leaf_ports=8 oversubscription=4", ring, &leaf, algo, sizeof algo);
    coll_row(d, "dgx-h100 nodes=2 leaf_ports=8 pod_leaves=1 spine_oversubscription=4", ring, &spine,
             algo, sizeof algo);
    cr_assert(le(dbl, fabs(rail - flat) / flat, 1e-3), "rail %.2f vs %.2f GB/s", rail, flat);
    cr_assert(le(dbl, fabs(leaf / flat - 100 / 320.64), 0.02), "leaf %.2f vs %.2f", leaf, flat);
    cr_assert(le(dbl, fabs(spine - leaf) / leaf, 1e-3), "spine %.2f vs leaf %.2f", spine, leaf);
    testdir_remove(d);
}

/* `compare:` plans the job once per setting (its device and platform replacing the scenario's)
 * and ranks the settings by their best configuration's iteration; a setting where nothing fits
 * stays in the table, last, with its reason. */
Test(cli, plan_compare_ranks_each_setting_by_its_best_configuration)
{
    char d[256], js[512], cmd[1024];
    static char out[65536];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(js, sizeof js, d, "c.json");
    snprintf(cmd, sizeof cmd, "plan %s/tests/data/good/plan-compare.yaml --json %s",
             TPSIM_SOURCE_DIR, js);
    cr_assert(eq(int, tpsim(out, sizeof out, cmd, 0), 0), "%s", out);
    cr_assert_not_null(strstr(out, "compare    3 settings"), "%s", out);
    json_error_t je;
    json_t *j = json_load_file(js, 0, &je);
    cr_assert_not_null(j, "%s", je.text);
    json_t *c = json_object_get(j, "compare");
    cr_assert(eq(sz, json_array_size(c), 3));
    json_t *a = json_array_get(c, 0), *b = json_array_get(c, 1), *x = json_array_get(c, 2);
    cr_assert(eq(str, (char *)json_string_value(json_object_get(a, "device")), "B200"));
    cr_assert(eq(str, (char *)json_string_value(json_object_get(a, "setting")),
                 "B200 on dgx-b200 nodes=4"));
    cr_assert(eq(str, (char *)json_string_value(json_object_get(b, "setting")), "H100"));
    double ta = json_number_value(json_object_get(a, "iteration_s"));
    double tb = json_number_value(json_object_get(b, "iteration_s"));
    cr_assert(gt(dbl, ta, 0));
    cr_assert(lt(dbl, ta, tb));
    cr_assert(json_object_get(a, "simulated") == json_true());
    cr_assert(eq(str, (char *)json_string_value(json_object_get(x, "setting")), "tiny"));
    cr_assert_not_null(strstr(json_string_value(json_object_get(x, "error")), "none of the"));
    json_decref(j);
    testdir_remove(d);
}

/* An output naming one of the command's inputs (by any spelling: device and inode) is refused
 * with exit 2 and one located line, before anything is written: the input is left as it was. */
static void refused_keeps(const char *args, const char *input)
{
    char out[4096];
    char *before = slurp(input);
    cr_assert_not_null(before, "%s", input);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 1), 2), "%s: %s", args, out);
    cr_assert(strstr(out, "this command reads") != NULL, "%s: %s", args, out);
    cr_assert(eq(int, count_lines(out), 1), "%s: %s", args, out);
    char *after = slurp(input);
    cr_assert(after && !strcmp(before, after), "%s changed %s", args, input);
    free(before);
    free(after);
}

Test(cli, no_output_is_written_over_an_input)
{
    char dir[256], s[300], sw[300], log[300], args[2048], out[4096];
    cr_assert_not_null(testdir_make(dir, sizeof dir));
    char *tiny = slurp(TPSIM_SOURCE_DIR "/tests/data/good/tiny.yaml");
    cr_assert_not_null(tiny);
    write_file(s, sizeof s, dir, "s.yaml", tiny);
    free(tiny);
    snprintf(args, sizeof args, "run %s --json %s", s, s);
    refused_keeps(args, s);
    snprintf(args, sizeof args, "run %s -q --csv %s/./s.yaml", s, dir); /* another spelling */
    refused_keeps(args, s);
    snprintf(args, sizeof args, "plan %s --json %s", s, s);
    refused_keeps(args, s);
    /* a sweep's CSV over its own scenario */
    write_file(sw, sizeof sw, dir, "sweep.yaml", sweep_scn);
    snprintf(args, sizeof args, "sweep %s -o %s", sw, sw);
    refused_keeps(args, sw);
    /* a file of a trace the run replays */
    snprintf(args, sizeof args, "trace %s -o %s/t", s, dir);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    char rank[400];
    snprintf(rank, sizeof rank, "%s/t/rank-00000.tps", dir);
    snprintf(args, sizeof args, "run %s/t -q --json %s", dir, rank);
    refused_keeps(args, rank);
    /* a recording merged onto itself with --force keeps its rank files */
    snprintf(args, sizeof args, "cp -r %s/traces/h100_gpt3_175b_tp8_shard_tpsim_tracer %s/rec",
             TPSIM_REFDATA, dir);
    cr_assert(eq(int, system(args), 0));
    snprintf(rank, sizeof rank, "%s/rec/rank-00000.tps", dir);
    snprintf(args, sizeof args, "trace-merge %s/rec -o %s/rec --force", dir, dir);
    refused_keeps(args, rank);
    /* calibrate's platform file over the log it fits */
    snprintf(args, sizeof args,
             "cp %s/nccl/a100_8gpu_nvswitch_all_reduce_stas00.raw.txt %s/log.txt", TPSIM_REFDATA,
             dir);
    cr_assert(eq(int, system(args), 0));
    testdir_path(log, sizeof log, dir, "log.txt");
    snprintf(args, sizeof args, "calibrate %s --platform dgx-a100 --ranks 8 -o %s", log, log);
    refused_keeps(args, log);
    testdir_remove(dir);
}

/* Seeds are 32 bits: --seeds may not run past the largest, and the last one allowed runs. */
Test(cli, seeds_past_the_largest_seed_are_refused)
{
    char args[1024], out[4096];
    snprintf(args, sizeof args, "run %s/tests/data/good/tiny.yaml --seed 4294967295 --seeds 3",
             TPSIM_SOURCE_DIR);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 1), 2), "%s", out);
    cr_assert(strstr(out, "4294967297 pass 4294967295") != NULL, "%s", out);
    cr_assert(eq(int, count_lines(out), 1), "%s", out);
    snprintf(args, sizeof args, "run %s/tests/data/good/tiny.yaml --seed 4294967293 --seeds 3",
             TPSIM_SOURCE_DIR);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    cr_assert(strstr(out, "4294967293 to 4294967295") != NULL, "%s", out);
}

/* Names reach the terminal and CSV cells: a control character is refused where it is written,
 * and a comma or quote in a job's name is quoted in the CSV (RFC 4180), not a column more. */
Test(cli, names_never_carry_control_characters_and_csv_cells_are_quoted)
{
    char d[256], s[300], csv[300], args[2048], out[16384];
    cr_assert_not_null(testdir_make(d, sizeof d));
    char *tiny = slurp(TPSIM_SOURCE_DIR "/tests/data/good/tiny.yaml");
    char text[8192];
    char *nm = strstr(tiny, "name: tiny");
    cr_assert_not_null(nm);
    snprintf(text, sizeof text, "%.*sname: \"a\\eb\"%s", (int)(nm - tiny), tiny,
             nm + strlen("name: tiny"));
    write_file(s, sizeof s, d, "esc.yaml", text);
    snprintf(args, sizeof args, "run %s", s);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 1), 2), "%s", out);
    cr_assert(strstr(out, "field 'name': a name may not hold a control character (\\x1b)") != NULL,
              "%s", out);
    cr_assert(eq(int, count_lines(out), 1), "%s", out);
    free(tiny);
    /* a job named with a comma and a quote, written to the CSV as one quoted cell */
    char *two = slurp(TPSIM_SOURCE_DIR "/tests/data/good/fabric-two-jobs.yaml");
    char *at = strstr(two, "name: tp-across");
    cr_assert_not_null(at, "the fixture names its job tp-across");
    snprintf(text, sizeof text, "%.*sname: 'tp, \"across\"'%s", (int)(at - two), two,
             at + strlen("name: tp-across"));
    write_file(s, sizeof s, d, "two.yaml", text);
    testdir_path(csv, sizeof csv, d, "two.csv");
    snprintf(args, sizeof args, "run %s -q --csv %s", s, csv);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    char *rows = slurp(csv);
    cr_assert(strstr(rows, "\n\"tp, \"\"across\"\"\",") != NULL, "%s", rows);
    free(rows);
    free(two);
    testdir_remove(d);
}

/* Asserts that two files hold the same text. */
static void assert_same_file(const char *x, const char *y)
{
    char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    FILE *fa = fopen(x, "r"), *fb = fopen(y, "r");
    cr_assert(fa && fb);
    cr_assert(gt(sz, getdelim(&a, &na, 0, fa), 0));
    cr_assert(gt(sz, getdelim(&b, &nb, 0, fb), 0));
    cr_assert(eq(str, a, b), "%s and %s differ", x, y);
    fclose(fa);
    fclose(fb);
    free(a);
    free(b);
}

Test(cli, plan_simulates_on_several_cores_the_plan_of_one)
{
    char d[256], scn[300], json[2][300], args[1024];
    static char out[2][65536];
    cr_assert_not_null(testdir_make(d, sizeof d));
    write_file(scn, sizeof scn, d, "tp8.yaml",
               "model: gpt3-1.3b\ndevice: A100-80GB\nplatform: dgx-a100\nstrategy: {tp: 8}\n"
               "run: {layers: 6}\n");
    for (int k = 0; k < 2; k++) {
        char name[32];
        snprintf(name, sizeof name, "plan-%d.json", k);
        testdir_path(json[k], sizeof json[k], d, name);
        snprintf(args, sizeof args, "plan %s -j %d --simulate 5 --json %s", scn, k ? 3 : 1,
                 json[k]);
        cr_assert(eq(int, tpsim(out[k], sizeof out[k], args, 0), 0), "%s", out[k]);
    }
    cr_assert(eq(str, out[0], out[1]));
    cr_assert(strstr(out[0], "5 simulated") != NULL, "%s", out[0]);
    assert_same_file(json[0], json[1]);
    /* a job plan's simulations too (its progress lines on stderr may come in any order) */
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args,
                 "%s plan %s/tests/data/good/job-32.yaml -j %d --simulate 3 --json %s 2>/dev/null",
                 TPSIM_BIN, TPSIM_SOURCE_DIR, k ? 2 : 1, json[k]);
        cr_assert(eq(int, testcmd_run(out[k], sizeof out[k], args), 0), "%s", out[k]);
    }
    cr_assert(eq(str, out[0], out[1]));
    assert_same_file(json[0], json[1]);
    /* a count out of range: one line, exit 2 */
    snprintf(args, sizeof args, "plan %s -j 0", scn);
    cr_assert(eq(int, tpsim(out[0], sizeof out[0], args, 1), 2), "%s", out[0]);
    cr_assert(strstr(out[0], "bad -j '0' (1 to 1024)") != NULL, "%s", out[0]);
    testdir_remove(d);
}
