/* test_cli.c - the tpsim command line: exit codes, one-line errors for bad input, --help on
 * every command, JSON outputs, and trace + replay through the binary. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(cli, .timeout = 300);

/* Runs "tpsim ARGS" and returns its exit status; output (stdout+stderr or stderr only) into out. */
static int tpsim(char *out, size_t len, const char *args, int stderr_only)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s %s", TPSIM_BIN, args,
             stderr_only ? "2>&1 >/dev/null" : "2>&1");
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    size_t n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
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
    char json[] = "/tmp/tpsim-run-XXXXXX.json", tl[] = "/tmp/tpsim-tl-XXXXXX.json";
    close(mkstemps(json, 5));
    close(mkstemps(tl, 5));
    char args[1024], out[8192];
    snprintf(args, sizeof args, "run %s/tests/data/good/tiny.yaml --json %s --timeline %s",
             TPSIM_SOURCE_DIR, json, tl);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    cr_assert(strstr(out, "iteration time") != NULL);
    json_error_t e;
    json_t *j = json_load_file(json, 0, &e);
    cr_assert_not_null(j, "%s", e.text);
    const char *keys[] = {"iteration_time_s", "compute_time_s", "exposed_comm_time_s",
                          "tflops_per_gpu"};
    for (int i = 0; i < 4; i++)
        cr_assert(json_object_get(j, keys[i]) && json_is_number(json_object_get(j, keys[i])), "%s",
                  keys[i]);
    json_t *layers = json_object_get(j, "layers");
    cr_assert(eq(sz, json_array_size(layers), 2));
    cr_assert(gt(dbl, json_number_value(json_object_get(json_array_get(layers, 0), "fwd_s")), 0));
    cr_assert(gt(dbl, json_number_value(json_object_get(json_array_get(layers, 1), "bwd_s")), 0));
    json_decref(j);
    json_t *t = json_load_file(tl, 0, &e);
    cr_assert_not_null(t, "%s", e.text);
    cr_assert(gt(sz, json_array_size(json_object_get(t, "traceEvents")), 100));
    json_decref(t);
    remove(json);
    remove(tl);
}

Test(cli, trace_then_run_directory_prints_the_same_times)
{
    char dir[] = "/tmp/tpsim-cli-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char args[1024], direct[8192], replay[8192], out[1024];
    snprintf(args, sizeof args, "trace %s/tests/data/good/tiny.yaml -o %s", TPSIM_SOURCE_DIR, dir);
    cr_assert(eq(int, tpsim(out, sizeof out, args, 0), 0), "%s", out);
    snprintf(args, sizeof args, "run %s/tests/data/good/tiny.yaml", TPSIM_SOURCE_DIR);
    cr_assert(eq(int, tpsim(direct, sizeof direct, args, 0), 0));
    snprintf(args, sizeof args, "run %s", dir);
    cr_assert(eq(int, tpsim(replay, sizeof replay, args, 0), 0), "%s", replay);
    const char *a = strstr(direct, "iteration time"), *b = strstr(replay, "iteration time");
    cr_assert(a && b);
    cr_assert(eq(str, (char *)a, (char *)b));
    snprintf(args, sizeof args, "rm -rf '%s'", dir);
    cr_assert(eq(int, system(args), 0));
}

Test(cli, collective_json_has_nccl_tests_columns)
{
    char json[] = "/tmp/tpsim-coll-XXXXXX.json";
    close(mkstemps(json, 5));
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
    json_decref(j);
    remove(json);
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
}

/* Sorted data rows of a sweep CSV (header dropped) as one string. */
static char *sorted_rows(const char *csv)
{
    FILE *f = fopen(csv, "r");
    cr_assert(ne(ptr, f, NULL));
    char *rows[256], line[4096];
    int n = 0;
    cr_assert(ne(ptr, fgets(line, sizeof line, f), NULL)); /* header */
    while (n < 256 && fgets(line, sizeof line, f))
        rows[n++] = strdup(line);
    fclose(f);
    for (int i = 0; i < n; i++) /* insertion sort by point index */
        for (int j = i; j > 0 && atol(rows[j]) < atol(rows[j - 1]); j--) {
            char *t = rows[j];
            rows[j] = rows[j - 1];
            rows[j - 1] = t;
        }
    size_t len = 1;
    for (int i = 0; i < n; i++)
        len += strlen(rows[i]);
    char *all = calloc(len, 1);
    for (int i = 0; i < n; i++) {
        strcat(all, rows[i]);
        free(rows[i]);
    }
    return all;
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

Test(cli, killed_sweep_resumed_gives_the_rows_of_an_uninterrupted_one)
{
    const char *scn = "/tmp/tpsim-sweep-test.yaml";
    FILE *f = fopen(scn, "w");
    fputs("model: gpt3-1.3b\ndevice: A100-80GB\nplatform: dgx-a100\nstrategy: {tp: 2}\n"
          "run: {layers: 4}\nsweep:\n  strategy.tp: [1, 2, 3, 4, 8]\n"
          "  platform.nodes: {from: 1, to: 4, factor: 2}\n  strategy.chunks: [1, 2]\n",
          f);
    fclose(f);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s sweep %s -j 2 -o /tmp/tpsim-sweep-full.csv 2>/dev/null",
             TPSIM_BIN, scn);
    cr_assert(eq(int, system(cmd), 0));
    char *full = sorted_rows("/tmp/tpsim-sweep-full.csv");
    cr_assert(eq(int, file_lines("/tmp/tpsim-sweep-full.csv"), 31));
    /* start again, kill the whole process group once a few rows are in */
    remove("/tmp/tpsim-sweep-cut.csv");
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        execl(TPSIM_BIN, TPSIM_BIN, "sweep", scn, "-j", "1", "-o", "/tmp/tpsim-sweep-cut.csv",
              (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    for (int i = 0; i < 3000 && file_lines("/tmp/tpsim-sweep-cut.csv") < 6; i++)
        usleep(2000);
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
    int kept = file_lines("/tmp/tpsim-sweep-cut.csv");
    cr_assert(lt(int, kept, 31), "the sweep finished before it was killed");
    /* and a row cut in the middle, as a kill during a write would leave */
    f = fopen("/tmp/tpsim-sweep-cut.csv", "a");
    fputs("29,8,4,ok,0.00", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s sweep %s -j 2 -o /tmp/tpsim-sweep-cut.csv --resume 2>/dev/null",
             TPSIM_BIN, scn);
    cr_assert(eq(int, system(cmd), 0));
    char *resumed = sorted_rows("/tmp/tpsim-sweep-cut.csv");
    cr_assert(eq(str, resumed, full));
    free(full);
    free(resumed);
    remove(scn);
    remove("/tmp/tpsim-sweep-full.csv");
    remove("/tmp/tpsim-sweep-cut.csv");
}
