/* test_tracer.c - the LD_PRELOAD tracer driven by mock NCCL/CUDA/cuBLAS libraries: what it
 * records (sizes, groups, ordering, timing arithmetic), the merge, and the replay. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/trace.h"

#include "../testdir.h"

/* Each test runs in its own process: its scratch directory, made on first use, goes at the end. */
static char scratch_dir[256];

static void scratch_fini(void)
{
    if (scratch_dir[0]) testdir_remove(scratch_dir);
}

/* scratch_dir/name, in a buffer that lives as long as the test. */
static const char *S(const char *name)
{
    if (!scratch_dir[0]) cr_assert_not_null(testdir_make(scratch_dir, sizeof scratch_dir));
    static char bufs[8][300];
    static int next;
    char *b = bufs[next++ % 8];
    return testdir_path(b, 300, scratch_dir, name);
}

TestSuite(tracer, .timeout = 120 * TPSIM_TIMEOUT_SCALE, .fini = scratch_fini);

static void record(const char *dir)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert(eq(int, system(cmd), 0));
    for (int r = 0; r < 2; r++) {
        /* the mocks' GPU clock is fake, the host's is not: no host times, or a slow (sanitized)
         * host would bound a replay that the fake GPU times alone should reproduce */
        snprintf(cmd, sizeof cmd,
                 "TPSIM_TRACE_HOST=0 RANK=%d TPSIM_TRACE_DIR=%s LD_PRELOAD='%s %s' %s", r, dir,
                 TPSIM_PRELOAD_FIRST, TPSIM_TRACER, TPSIM_MOCK_APP);
        cr_assert(eq(int, system(cmd), 0), "%s", cmd);
    }
    snprintf(cmd, sizeof cmd, "%s trace-merge %s --platform dgx-a100 2>/dev/null", TPSIM_BIN, dir);
    cr_assert(eq(int, system(cmd), 0), "%s", cmd);
}

static void near(double got, double want, const char *what)
{
    /* CUDA reports elapsed times as float milliseconds */
    cr_assert(le(dbl, fabs(got - want), 1e-6 * want + 1e-9), "%s: %.9g, expected %.9g", what, got,
              want);
}

Test(tracer, records_sizes_groups_order_and_times_of_a_mock_run)
{
    const char *dir = S("tracer-test");
    record(dir);
    struct mdl_program p;
    struct tps_error err = {0};
    char plat[128];
    char merged[400];
    snprintf(merged, sizeof merged, "%s/merged", dir);
    cr_assert(eq(int, trace_read(merged, &p, plat, sizeof plat, &err), 0), "%s", err.msg);
    cr_assert(eq(str, plat, "dgx-a100"));
    cr_assert(eq(int, p.nranks, 2));
    /* the communicator, and one group per send/recv direction */
    cr_assert(eq(int, p.ngroups, 3));
    for (int r = 0; r < 2; r++) {
        const struct mdl_rank *rk = &p.ranks[r];
        cr_assert(eq(int, rk->nops, 6), "rank %d: %d ops", r, rk->nops);
        static const int kinds[6] = {MDL_OP_GEMM,      MDL_OP_ALL_REDUCE, MDL_OP_ATTN,
                                     MDL_OP_SEND_RECV, MDL_OP_SEND_RECV,  MDL_OP_ALL_GATHER};
        for (int i = 0; i < 6; i++)
            cr_assert(eq(int, rk->ops[i].kind, kinds[i]), "rank %d op %d", r, i);
        const struct mdl_op *o = rk->ops;
        /* sizes and FLOPs */
        cr_assert(eq(dbl, o[0].flop, 2.0 * 1024 * 1024 * 1024));
        cr_assert(eq(dbl, o[1].bytes, 1048576));
        cr_assert(eq(dbl, o[2].flop, 2.0 * 128 * 128 * 64 * 16));
        cr_assert(eq(dbl, o[3].bytes, 262144));
        cr_assert(eq(dbl, o[5].bytes, 1000.0 * 4 * 2)); /* all-gather: the gathered size */
        /* streams: compute 0, collectives 1, sends 2, receives 3 */
        cr_assert(eq(int, o[0].stream, 0));
        cr_assert(eq(int, o[1].stream, 1));
        cr_assert(eq(int, o[3].stream, 2));
        cr_assert(eq(int, o[4].stream, 3));
        /* timing arithmetic: the mock's fake clock */
        double sgemm = 1e-6 + 2.0 * 1024 * 1024 * 1024 / 1e13, ar = 2 * (1e-6 + 524288 / 1e10);
        double bgemm = 1e-6 + 2.0 * 128 * 128 * 64 * 16 / 1e13, grp = 1e-6 + 262144 / 1e10;
        near(o[0].rec_end - o[0].rec_start, sgemm, "sgemm");
        near(o[1].rec_start, sgemm, "all-reduce start");
        near(o[1].rec_end - o[1].rec_start, ar, "all-reduce");
        near(o[2].rec_end - o[2].rec_start, bgemm, "batched GEMM");
        near(o[3].rec_end - o[3].rec_start, grp, "grouped send"); /* the group's events */
        near(o[4].rec_end - o[4].rec_start, grp, "grouped recv");
        near(o[0].dur_s, sgemm, "sgemm duration");
        for (int i = 0; i < 6; i++)
            cr_assert(eq(int, o[i].recorded, 1));
        /* NVTX ranges: layer and phase */
        cr_assert(eq(int, o[0].layer, 0));
        cr_assert(eq(int, o[0].phase, MDL_PHASE_FWD));
        cr_assert(eq(int, o[1].layer, 0));
        cr_assert(eq(int, o[2].layer, 1));
        cr_assert(eq(int, o[2].phase, MDL_PHASE_BWD));
        cr_assert(eq(int, o[4].layer, 1));
        cr_assert(eq(int, o[5].layer, -1));
        cr_assert(eq(int, o[5].phase, MDL_PHASE_OTHER));
        /* ordering: dependencies inferred from the times */
        cr_assert(eq(int, o[1].ndeps, 1));
        cr_assert(eq(int, o[1].deps[0], 0), "the all-reduce waits for the GEMM before it");
        cr_assert(eq(int, o[2].deps[0], 1), "the batched GEMM waits for the all-reduce");
    }
    /* the send of rank 0 and the receive of rank 1 share the 0 -> 1 group */
    const struct mdl_group *g = &p.groups[p.ranks[0].ops[3].group];
    cr_assert(eq(int, g->ranks[0], 0));
    cr_assert(eq(int, g->ranks[1], 1));
    cr_assert(eq(int, p.ranks[1].ops[4].group, p.ranks[0].ops[3].group));
    cr_assert(eq(int, p.groups[p.ranks[0].ops[1].group].n, 2));
    mdl_program_release(&p);
}

Test(tracer, merged_trace_replays_on_another_platform)
{
    const char *dir = S("tracer-replay");
    record(dir);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s replay %s --platform pcie-8gpu -q > /dev/null 2>&1", TPSIM_BIN,
             dir);
    cr_assert(eq(int, system(cmd), 0), "%s", cmd);
    snprintf(cmd, sizeof cmd, "%s replay %s > /dev/null 2>&1", TPSIM_BIN, dir);
    cr_assert(eq(int, WEXITSTATUS(system(cmd)), 2), "replay without --platform is a usage error");
}

Test(tracer, merge_rejects_a_communicator_missing_a_rank)
{
    const char *dir = S("tracer-missing");
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "rm -rf %s && RANK=0 TPSIM_TRACE_DIR=%s LD_PRELOAD='%s %s' %s && %s trace-merge %s "
             "2>%s",
             dir, dir, TPSIM_PRELOAD_FIRST, TPSIM_TRACER, TPSIM_MOCK_APP, TPSIM_BIN, dir,
             S("merge.err"));
    cr_assert(eq(int, WEXITSTATUS(system(cmd)), 2));
    FILE *f = fopen(S("merge.err"), "r");
    char line[512] = "";
    cr_assert(ne(ptr, fgets(line, sizeof line, f), NULL));
    fclose(f);
    cr_assert(ne(ptr, strstr(line, "has 2 ranks, but 1 traced it"), NULL), "%s", line);
}

Test(tracer, replay_on_the_recorded_platform_reproduces_the_recorded_time)
{
    /* the mocks cost what a ring costs on mock-platform.yaml: replaying there must give back the
     * recorded iteration within 1% */
    const char *dir = S("tracer-same");
    record(dir);
    struct mdl_program p;
    struct tps_error err = {0};
    char merged[400];
    snprintf(merged, sizeof merged, "%s/merged", dir);
    cr_assert(eq(int, trace_read(merged, &p, NULL, 0, &err), 0), "%s", err.msg);
    double recorded = 0;
    for (int r = 0; r < p.nranks; r++)
        for (int i = 0; i < p.ranks[r].nops; i++)
            if (p.ranks[r].ops[i].rec_end > recorded) recorded = p.ranks[r].ops[i].rec_end;
    mdl_program_release(&p);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s replay %s --platform %s/tests/data/good/mock-platform.yaml --json %s -q > "
             "/dev/null",
             TPSIM_BIN, dir, TPSIM_SOURCE_DIR, S("same.json"));
    cr_assert(eq(int, system(cmd), 0), "%s", cmd);
    FILE *f = fopen(S("same.json"), "r");
    char buf[8192] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    char *it = strstr(buf, "\"iteration_time_s\"");
    cr_assert(ne(ptr, it, NULL));
    double sim = strtod(strchr(it, ':') + 1, NULL);
    cr_assert(le(dbl, fabs(sim - recorded), 0.01 * recorded), "replayed %.9g s, recorded %.9g s",
              sim, recorded);
}

/* Runs `validate trace` on recording dir against the mock platform; returns its output, open. */
static FILE *validate_on_mock_platform(const char *dir, const char *name)
{
    char cmd[1024], txt[64];
    snprintf(txt, sizeof txt, "%s.txt", name);
    snprintf(cmd, sizeof cmd,
             "%s validate trace %s --platform %s/tests/data/good/mock-platform.yaml --out %s > "
             "%s 2>/dev/null",
             TPSIM_BIN, dir, TPSIM_SOURCE_DIR, S(name), S(txt));
    cr_assert(eq(int, system(cmd), 0), "%s", cmd);
    FILE *f = fopen(S(txt), "r");
    cr_assert_not_null(f);
    return f;
}

Test(tracer, validate_trace_compares_every_op_and_names_the_worst)
{
    const char *dir = S("tracer-validate");
    record(dir);
    char cmd[1024];
    FILE *f = validate_on_mock_platform(dir, "vt");
    char line[512];
    int iter = 0, worst = 0, kinds = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "whole      recorded")) { /* one of each op: all warm-up */
            iter = 1;
            cr_assert(ne(ptr, strstr(line, "error +0.0"), NULL), "%s", line);
        }
        worst += strstr(line, "worst ops") != NULL;
        kinds += !strncmp(line, "warm-up    12 ops", 17); /* its one iteration loads kernels */
    }
    fclose(f);
    cr_assert(eq(int, iter, 1));
    cr_assert(eq(int, worst, 1));
    cr_assert(eq(int, kinds, 1), "the mock program makes each call once: warm-up");
    /* a trace without recorded times is refused with a clear message */
    snprintf(cmd, sizeof cmd,
             "%s trace %s/scenarios/quickstart.yaml -o %s > /dev/null && %s validate trace %s "
             "2>&1 | grep -q 'no recorded times'",
             TPSIM_BIN, TPSIM_SOURCE_DIR, S("vt-model"), TPSIM_BIN, S("vt-model"));
    cr_assert(eq(int, system(cmd), 0));
}

/* The recording is never changed: merging twice is refused (or redone with --force), and the
 * replay works after either. */
Test(tracer, merge_keeps_the_recording_and_refuses_to_merge_twice)
{
    const char *dir = S("tracer-twice");
    record(dir);
    char cmd[2048], before[600], after[600];
    snprintf(before, sizeof before, "cat %s/rank-00000.tps | md5sum", dir);
    FILE *f = popen(before, "r");
    cr_assert(ne(ptr, fgets(before, sizeof before, f), NULL));
    pclose(f);
    snprintf(cmd, sizeof cmd, "%s trace-merge %s 2>/dev/null", TPSIM_BIN, dir);
    cr_assert(eq(int, WEXITSTATUS(system(cmd)), 2), "a second merge must be refused");
    snprintf(cmd, sizeof cmd, "%s trace-merge %s --force --platform dgx-a100 2>/dev/null",
             TPSIM_BIN, dir);
    cr_assert(eq(int, system(cmd), 0));
    snprintf(cmd, sizeof cmd, "cat %s/rank-00000.tps | md5sum", dir);
    f = popen(cmd, "r");
    cr_assert(ne(ptr, fgets(after, sizeof after, f), NULL));
    pclose(f);
    cr_assert(eq(str, before, after), "the recording changed");
    snprintf(cmd, sizeof cmd, "%s run %s -q", TPSIM_BIN, dir);
    cr_assert(eq(int, system(cmd), 0), "%s", cmd);
    /* a merged trace directory itself is not a recording */
    snprintf(cmd, sizeof cmd, "%s trace-merge %s/merged 2>/dev/null", TPSIM_BIN, dir);
    cr_assert(eq(int, WEXITSTATUS(system(cmd)), 2));
}

/* ------------------------------------------------------------------ a framework's loading */

/* Runs the mock framework (dlopen RTLD_LOCAL, as Python loads PyTorch's CUDA extension) on
 * nranks ranks under the tracer, with extra environment `env`, and merges the recording. */
static void record_framework(const char *dir, int nranks, int iters, const char *env)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert(eq(int, system(cmd), 0));
    for (int r = 0; r < nranks; r++) {
        snprintf(cmd, sizeof cmd, "%s RANK=%d TPSIM_TRACE_DIR=%s LD_PRELOAD='%s %s' %s %s %d %d %d",
                 env, r, dir, TPSIM_PRELOAD_FIRST, TPSIM_TRACER, TPSIM_MOCK_LOADER,
                 TPSIM_MOCK_FRAMEWORK, r, nranks, iters);
        /* the tracer of 2026-11 called the NULL it got from dlsym(RTLD_NEXT): SIGSEGV here */
        cr_assert(eq(int, system(cmd), 0), "%s", cmd);
    }
    snprintf(cmd, sizeof cmd, "%s trace-merge %s 2>/dev/null", TPSIM_BIN, dir);
    cr_assert(eq(int, system(cmd), 0), "%s", cmd);
}

static void read_merged(const char *dir, struct mdl_program *p)
{
    char merged[400];
    struct tps_error err = {0};
    snprintf(merged, sizeof merged, "%s/merged", dir);
    cr_assert(eq(int, trace_read(merged, p, NULL, 0, &err), 0), "%s", err.msg);
}

Test(tracer, records_a_framework_that_loads_the_cuda_libraries_locally_each_gemm_once)
{
    const char *dir = S("tracer-framework");
    record_framework(dir, 2, 3, "");
    struct mdl_program p;
    read_merged(dir, &p);
    for (int r = 0; r < 2; r++) {
        const struct mdl_rank *rk = &p.ranks[r];
        /* per iteration: GemmEx (run by cuBLAS through cublasLtMatmul: recorded once), a direct
         * cublasLtMatmul, an all-reduce, a second GemmEx, an all-reduce */
        cr_assert(eq(int, rk->nops, 15), "rank %d: %d ops", r, rk->nops);
        static const char *const names[5] = {"gemm_ex", "lt_matmul", "all_reduce", "gemm_ex",
                                             "all_reduce"};
        for (int i = 0; i < 15; i++)
            cr_assert(eq(str, p.names[rk->ops[i].name], (char *)names[i % 5]), "op %d", i);
        const struct mdl_op *o = rk->ops;
        cr_assert(eq(dbl, o[0].flop, 2.0 * 512 * 256 * 1024));
        cr_assert(eq(dbl, o[0].bytes, (512.0 * 1024 + 1024 * 256 + 512 * 256) * 2));
        cr_assert(eq(dbl, o[1].flop, 2.0 * 256 * 64 * 128), "m, n, k from the Lt layouts");
        cr_assert(eq(dbl, o[3].flop, 2.0 * 1024 * 256 * 256));
        /* the nested call ran once: the GEMM took what one mock GEMM costs */
        near(o[0].rec_end - o[0].rec_start, 1e-6 + 2.0 * 512 * 256 * 1024 / 1e13, "gemm_ex");
        /* NVTX 2 ranges through the framework: layer and phase */
        cr_assert(eq(int, o[0].layer, 0));
        cr_assert(eq(int, o[0].phase, MDL_PHASE_FWD));
        cr_assert(eq(int, o[3].phase, MDL_PHASE_BWD));
        /* host time between calls, measured: never negative, 0 for the first */
        cr_assert(eq(dbl, o[0].launch_s, 0));
        for (int i = 0; i < 15; i++)
            cr_assert(ge(dbl, o[i].launch_s, 0));
    }
    mdl_program_release(&p);
}

Test(tracer, split_communicators_merge_into_the_framework_subgroups)
{
    const char *dir = S("tracer-split");
    record_framework(dir, 4, 1, "MOCK_SPLIT_COLORS=2");
    struct mdl_program p;
    read_merged(dir, &p);
    cr_assert(eq(int, p.nranks, 4));
    /* op 2 all-reduces on the split (color rank % 2), op 4 on the world */
    for (int r = 0; r < 4; r++) {
        const struct mdl_group *sub = &p.groups[p.ranks[r].ops[2].group];
        const struct mdl_group *world = &p.groups[p.ranks[r].ops[4].group];
        cr_assert(eq(int, world->n, 4));
        cr_assert(eq(int, sub->n, 2), "rank %d's subgroup has %d ranks", r, sub->n);
        cr_assert(eq(int, sub->ranks[0], r % 2));
        cr_assert(eq(int, sub->ranks[1], r % 2 + 2));
    }
    cr_assert(ne(int, p.ranks[0].ops[2].group, p.ranks[1].ops[2].group), "two subgroups");
    mdl_program_release(&p);
}

Test(tracer, marks_iterations_and_warm_up_or_records_only_the_profiler_windows)
{
    const char *dir = S("tracer-iters");
    record_framework(dir, 2, 3, "");
    struct mdl_program p;
    read_merged(dir, &p);
    /* NVTX "iteration N" ranges; the first call of each kind and shape is warm-up */
    for (int i = 0; i < 15; i++) {
        const struct mdl_op *o = &p.ranks[0].ops[i];
        cr_assert(eq(int, o->iter, i / 5), "op %d", i);
        cr_assert(eq(int, o->warmup, i < 5), "op %d", i);
    }
    mdl_program_release(&p);
    /* TPSIM_TRACE_RANGE=profiler: iterations 1 and 2 ran inside cudaProfilerStart/Stop */
    dir = S("tracer-window");
    record_framework(dir, 2, 3, "MOCK_PROFILE=1 TPSIM_TRACE_RANGE=profiler");
    read_merged(dir, &p);
    cr_assert(eq(int, p.ranks[0].nops, 10));
    for (int i = 0; i < 10; i++) {
        cr_assert(eq(int, p.ranks[0].ops[i].iter, i / 5), "op %d: each window an iteration", i);
        cr_assert(eq(int, p.ranks[0].ops[i].warmup, 0));
    }
    mdl_program_release(&p);
}

Test(tracer, a_function_no_loaded_library_defines_fails_with_the_library_status)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "TPSIM_TRACE_DIR=%s LD_PRELOAD='%s %s' %s %s 0 2 0 ncclCommInitRankScalable "
             ">%s 2>%s",
             S("tracer-missing-fn"), TPSIM_PRELOAD_FIRST, TPSIM_TRACER, TPSIM_MOCK_LOADER,
             TPSIM_MOCK_FRAMEWORK, S("status.out"), S("status.err"));
    cr_assert(eq(int, system(cmd), 0), "%s", cmd);
    char line[512] = "";
    FILE *f = fopen(S("status.out"), "r");
    cr_assert(ne(ptr, fgets(line, sizeof line, f), NULL));
    fclose(f);
    cr_assert(eq(int, atoi(line), 2), "status %s: expected ncclSystemError (2)", line);
    f = fopen(S("status.err"), "r");
    cr_assert(ne(ptr, fgets(line, sizeof line, f), NULL));
    fclose(f);
    cr_assert(ne(ptr, strstr(line, "ncclCommInitRankScalable not found"), NULL), "%s", line);
}

Test(tracer, validate_trace_compares_iterations_after_warm_up)
{
    const char *dir = S("tracer-validate-iters");
    record_framework(dir, 2, 4, "TPSIM_TRACE_HOST=0"); /* fake GPU clock, real host clock */
    FILE *f = validate_on_mock_platform(dir, "vti");
    char line[512];
    int median = 0, host = 0, warm = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "iteration  recorded", 19)) {
            median = 1;
            cr_assert(ne(ptr, strstr(line, "median of 3 after warm-up"), NULL), "%s", line);
            /* the mocks cost what the mock platform simulates */
            double rec, sim;
            cr_assert(
                eq(int, sscanf(line, "iteration  recorded %lf ms, simulated %lf", &rec, &sim), 2));
            cr_assert(le(dbl, fabs(sim - rec), 1e-4 * rec), "%s", line);
        }
        host += !strncmp(line, "host       launch times read from the GPU's idle gaps", 52);
        warm += !strncmp(line, "0    warm-up", 12);
    }
    fclose(f);
    cr_assert(eq(int, median, 1));
    cr_assert(eq(int, host, 1));
    cr_assert(eq(int, warm, 1), "iteration 0 holds the first calls");
}
