/* test_kineto.c - `tpsim import kineto` on the shared real PyTorch profiler trace and on small
 * two-rank traces written here: what becomes an op, sizes, groups, iterations, the host's
 * launch times, and bad input. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/trace.h"
#include "validate/compare.h"
#include "validate/kineto.h"

#include "../testcmd.h"
#include "../testdir.h"

TestSuite(kineto, .timeout = 120 * TPSIM_TIMEOUT_SCALE);

static const char *shared_trace = TPSIM_REFDATA "/traces/h100_gpt3_175b_tp8_shard_kineto.json.gz";

Test(kineto, the_shared_trace_imports_and_replays_its_span_within_one_percent)
{
    char d[256], out[300];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(out, sizeof out, d, "kt");
    struct kin_summary s;
    struct tps_error err = {0};
    cr_assert(eq(int, kin_import(&shared_trace, 1, -1, out, "dgx-h100", &s, &err), 0), "%s",
              err.msg);
    /* 83 kernels and the 24 memsets cuBLAS launched; 2 layers of 12 GEMMs and 6 batched ones */
    cr_assert(eq(int, s.ops, 107));
    cr_assert(eq(int, s.gemms, 24));
    cr_assert(eq(int, s.attns, 12));
    cr_assert(eq(int, s.colls, 0), "one-rank all-reduces launch no kernel");
    cr_assert(le(dbl, fabs(s.span_s - 14.368e-3), 0.01e-3), "span %g", s.span_s);
    cr_assert(le(dbl, fabs(s.busy_s - 10.05e-3), 0.01e-3), "busy %g", s.busy_s);
    struct mdl_program p;
    cr_assert(eq(int, trace_read(out, &p, NULL, 0, &err), 0), "%s", err.msg);
    /* the QKV GEMM of the first layer: aten::mm [[2048, 12288], [12288, 4608]] in bf16 */
    const struct mdl_op *o = &p.ranks[0].ops[1];
    cr_assert(eq(int, o->kind, MDL_OP_GEMM));
    cr_assert(eq(dbl, o->flop, 2.0 * 2048 * 12288 * 4608));
    cr_assert(eq(dbl, o->bytes, (2048.0 * 12288 + 12288 * 4608 + 2048 * 4608) * 2));
    cr_assert(gt(dbl, o->launch_s, 0), "the host launch time is kept");
    mdl_program_release(&p);
    /* replayed on the platform it ran on: the recorded span within 1% */
    struct cmp_result r;
    cr_assert(eq(int, cmp_trace(out, NULL, NULL, &r, &err), 0), "%s", err.msg);
    cr_assert(eq(int, r.scored_iters, 1), "the profiler window is one iteration");
    cr_assert(le(dbl, fabs(r.simulated_end_s - r.recorded_end_s), 0.01 * r.recorded_end_s),
              "recorded %g s, replayed %g s", r.recorded_end_s, r.simulated_end_s);
    cmp_release(&r);
    testdir_remove(d);
}

/* One complete ("X") event of a Kineto trace; `args` is the body of its args object. */
static void event(FILE *f, const char *cat, const char *name, double ts, double dur,
                  const char *args)
{
    fprintf(f,
            "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"ts\":%g,\"dur\":%g,\"args\":{%s}},\n",
            cat, name, ts, dur, args);
}

/* A two-rank trace: per profiler step a GEMM launched by aten::addmm and an NCCL all-reduce of
 * 1 Mi bf16 elements launched by record_param_comms (c10d's op), then a memset. */
#define ALL_REDUCE_KERNEL                                                                          \
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"

static void write_rank(const char *path, int rank, const char *nccl_kernel)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"distributedInfo\": {\"rank\": %d, \"world_size\": 2},\n\"traceEvents\": [\n",
            rank);
    char args[512], step[32];
    for (int s = 0; s < 2; s++) {
        double t = 1000.0 + 1000 * s;
        int x = 10 * s;
        snprintf(step, sizeof step, "ProfilerStep#%d", 7 + s);
        event(f, "user_annotation", step, t, 900, "");
        snprintf(args, sizeof args,
                 "\"External id\":%d,\"Input Dims\":[[256],[128,512],[512,256]],\"Input type\":"
                 "[\"c10::BFloat16\",\"c10::BFloat16\",\"c10::BFloat16\"]",
                 x + 1);
        event(f, "cpu_op", "aten::addmm", t + 10, 20, args);
        snprintf(args, sizeof args, "\"correlation\":%d", x + 2);
        event(f, "cuda_runtime", "cudaLaunchKernel", t + 12, 5, args);
        snprintf(args, sizeof args, "\"External id\":%d,\"correlation\":%d,\"stream\":7", x + 1,
                 x + 2);
        event(f, "kernel", "sm90_xmma_gemm_bf16", t + 20, 100, args);
        snprintf(args, sizeof args,
                 "\"External id\":%d,\"In msg nelems\":1048576,\"dtype\":\"BFloat16\","
                 "\"Group size\":2,\"Process Group Ranks\":[0, 1]",
                 x + 3);
        event(f, "cpu_op", "record_param_comms", t + 30, 20, args);
        snprintf(args, sizeof args, "\"correlation\":%d", x + 4);
        event(f, "cuda_runtime", "cudaLaunchKernelExC", t + 32, 5, args);
        snprintf(args, sizeof args, "\"External id\":%d,\"correlation\":%d,\"stream\":21", x + 3,
                 x + 4);
        event(f, "kernel", nccl_kernel, t + 125, 200, args);
        snprintf(args, sizeof args, "\"External id\":%d,\"correlation\":%d,\"stream\":7", x + 1,
                 x + 5);
        event(f, "gpu_memset", "Memset (Device)", t + 400, 1, args);
    }
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"args\":{}}]}\n");
    fclose(f);
}

Test(kineto, two_ranks_merge_with_groups_sizes_streams_and_profiler_steps)
{
    char d[256], a[300], b[300], out[300];
    cr_assert_not_null(testdir_make(d, sizeof d));
    write_rank(testdir_path(a, sizeof a, d, "r1.json"), 1, ALL_REDUCE_KERNEL);
    write_rank(testdir_path(b, sizeof b, d, "r0.json"), 0, ALL_REDUCE_KERNEL);
    testdir_path(out, sizeof out, d, "kt");
    const char *files[2] = {a, b};
    struct kin_summary s;
    struct tps_error err = {0};
    cr_assert(eq(int, kin_import(files, 2, -1, out, NULL, &s, &err), 0), "%s", err.msg);
    cr_assert(eq(int, s.nranks, 2));
    cr_assert(eq(int, s.colls, 2));
    struct mdl_program p;
    cr_assert(eq(int, trace_read(out, &p, NULL, 0, &err), 0), "%s", err.msg);
    cr_assert(eq(int, p.ngroups, 1));
    cr_assert(eq(int, p.groups[0].n, 2));
    for (int r = 0; r < 2; r++) {
        const struct mdl_op *o = p.ranks[r].ops;
        cr_assert(eq(int, p.ranks[r].nops, 6));
        cr_assert(eq(int, o[0].kind, MDL_OP_GEMM));
        cr_assert(eq(dbl, o[0].flop, 2.0 * 128 * 256 * 512), "addmm's second and third inputs");
        cr_assert(eq(int, o[1].kind, MDL_OP_ALL_REDUCE));
        cr_assert(eq(dbl, o[1].bytes, 1048576.0 * 2));
        cr_assert(eq(int, o[1].stream, 1));
        cr_assert(eq(int, o[1].ndeps, 1), "the all-reduce started after the GEMM ended");
        cr_assert(eq(int, o[2].kind, MDL_OP_COMPUTE), "the memset stays opaque");
        cr_assert(eq(int, o[0].iter, 0), "ProfilerStep#7 is the first iteration");
        cr_assert(eq(int, o[3].iter, 1));
        /* launched at its call + the launch latency (8 us: the smallest call-to-start gap) */
        cr_assert(le(dbl, fabs(o[0].launch_s - 0), 1e-12));
        cr_assert(le(dbl, fabs(o[0].launch_s + o[1].launch_s - 20e-6), 1e-12),
                  "the NCCL launch 20 us after the GEMM's");
        cr_assert(le(dbl, fabs(o[1].rec_start - 105e-6), 1e-12));
    }
    mdl_program_release(&p);
    testdir_remove(d);
}

Test(kineto, bad_input_names_the_file_line_and_column)
{
    char d[256], path[300], out[300];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(path, sizeof path, d, "bad.json");
    testdir_path(out, sizeof out, d, "kt");
    FILE *f = fopen(path, "w");
    fputs("{\"traceEvents\": [\n  {\"ph\": \"X\",, }\n]}\n", f);
    fclose(f);
    const char *files[1] = {path};
    struct kin_summary s;
    struct tps_error err = {0};
    cr_assert(ne(int, kin_import(files, 1, -1, out, NULL, &s, &err), 0));
    cr_assert(eq(int, err.line, 2));
    cr_assert(gt(int, err.col, 0));
    cr_assert(ne(ptr, strstr(err.path, "bad.json"), NULL));
    f = fopen(path, "w");
    fputs("{\"events\": []}\n", f);
    fclose(f);
    struct tps_error e2 = {0};
    cr_assert(ne(int, kin_import(files, 1, -1, out, NULL, &s, &e2), 0));
    cr_assert(eq(str, e2.field, "traceEvents"));
    /* through the command: exit 2, one line naming the file, nothing written */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s import kineto %s -o %s 2>/dev/null", TPSIM_BIN, path, out);
    cr_assert(eq(int, WEXITSTATUS(system(cmd)), 2));
    FILE *o = fopen(out, "r");
    cr_assert(eq(ptr, o, NULL), "a failed import writes nothing");
    /* an unknown format, a missing file, a bad --rank: usage or input errors, exit 2 */
    static const char *const bad[] = {"import foo x.json", "import kineto /nonexistent.json",
                                      "import kineto --rank -1 x.json", "import"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s %s 2>/dev/null", TPSIM_BIN, bad[i]);
        cr_assert(eq(int, WEXITSTATUS(system(cmd)), 2), "%s", bad[i]);
    }
    testdir_remove(d);
}

Test(kineto, a_reduce_kernel_is_a_reduce_not_an_all_reduce_or_a_reduce_scatter)
{
    const char *kernels[] = {
        "ncclDevKernel_Reduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"};
    const int kinds[] = {MDL_OP_REDUCE, MDL_OP_REDUCE_SCATTER};
    for (int k = 0; k < 2; k++) {
        char d[256], a[300], b[300], out[300];
        cr_assert_not_null(testdir_make(d, sizeof d));
        write_rank(testdir_path(a, sizeof a, d, "r1.json"), 1, kernels[k]);
        write_rank(testdir_path(b, sizeof b, d, "r0.json"), 0, kernels[k]);
        testdir_path(out, sizeof out, d, "kt");
        const char *files[2] = {a, b};
        struct kin_summary s;
        struct tps_error err = {0};
        cr_assert(eq(int, kin_import(files, 2, -1, out, NULL, &s, &err), 0), "%s", err.msg);
        struct mdl_program p;
        cr_assert(eq(int, trace_read(out, &p, NULL, 0, &err), 0), "%s", err.msg);
        cr_assert(eq(int, p.ranks[0].ops[1].kind, kinds[k]), "%s", kernels[k]);
        mdl_program_release(&p);
        testdir_remove(d);
    }
}

/* A one-kernel trace: rank `rank` (as JSON text), the kernel's name (JSON-escaped) and an NCCL
 * all-reduce sized `nelems` (JSON text) when not NULL. */
static void write_small(const char *path, const char *rank, const char *kernel, const char *nelems)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"distributedInfo\": {\"rank\": %s}, \"traceEvents\": [\n", rank);
    fprintf(f,
            "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\",\"ts\":100,\"dur\":5,"
            "\"args\":{\"stream\":7}}",
            kernel);
    if (nelems)
        fprintf(f,
                ",\n{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"c10d::allreduce_\",\"ts\":99,"
                "\"dur\":4,\"args\":{\"External id\":9,\"In msg nelems\":%s,\"dtype\":"
                "\"BFloat16\"}},\n{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":"
                "\"ncclDevKernel_AllReduce_Sum_bf16_RING_LL\",\"ts\":110,\"dur\":5,"
                "\"args\":{\"stream\":9,\"External id\":9}}",
                nelems);
    fputs("]}\n", f);
    fclose(f);
}

Test(kineto, the_importer_bounds_what_a_trace_asks_for_and_never_writes_a_trace_run_refuses)
{
    char d[256], path[300], out[300], cmd[1400], text[4096];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(path, sizeof path, d, "t.json");
    testdir_path(out, sizeof out, d, "kt");
    /* ranks out of 0..KIN_MAX_RANK: located refusals (they once wrote out of bounds) */
    static const char *const ranks[] = {"-1", "1000000000", "2147483647", "1.5"};
    for (size_t i = 0; i < sizeof ranks / sizeof ranks[0]; i++) {
        write_small(path, ranks[i], "k", NULL);
        snprintf(cmd, sizeof cmd, "%s import kineto %s -o %s 2>&1", TPSIM_BIN, path, out);
        cr_assert(eq(int, testcmd_run(text, sizeof text, cmd), 2), "rank %s", ranks[i]);
        cr_assert(ne(ptr, strstr(text, "t.json: field 'distributedInfo.rank'"), NULL), "%s", text);
    }
    /* sizes beyond what a trace holds: refused at the event, nothing written */
    write_small(path, "0", "k", "1e308");
    cr_assert(eq(int, testcmd_run(text, sizeof text, cmd), 2));
    cr_assert(ne(ptr, strstr(text, "t.json: field 'traceEvents[2]'"), NULL), "%s", text);
    cr_assert(eq(int, access(out, F_OK), -1), "nothing is written");
    /* a kernel name holding the format's separators is one token: no op is injected, and what
     * the import wrote replays */
    write_small(path, "0", "evil\\n7 0 compute fwd 0 -1 x 1 0 0 -1 - 0 0 0 0 0 0\\r\\tz", NULL);
    snprintf(cmd, sizeof cmd, "%s import kineto %s -o %s >/dev/null 2>&1", TPSIM_BIN, path, out);
    cr_assert(eq(int, testcmd_run(text, sizeof text, cmd), 0));
    struct mdl_program p;
    char plat[64];
    struct tps_error err = {0};
    cr_assert(eq(int, trace_read(out, &p, plat, sizeof plat, &err), 0), "%s", err.msg);
    cr_assert(eq(int, p.ranks[0].nops, 1), "one kernel, one op");
    cr_assert(eq(ptr, strpbrk(p.names[p.ranks[0].ops[0].name], " \t\r\n"), NULL));
    mdl_program_release(&p);
    snprintf(cmd, sizeof cmd, "%s run %s --platform dgx-h100 >/dev/null 2>&1", TPSIM_BIN, out);
    cr_assert(eq(int, testcmd_run(text, sizeof text, cmd), 0));
    /* a file that inflates past the bound stops at the bound (a gzip bomb grew to 6 GB) */
    testdir_path(path, sizeof path, d, "big.json");
    FILE *f = fopen(path, "w");
    fputs("{\"traceEvents\": [", f);
    for (int i = 0; i < (3 << 20) / 64; i++)
        fputs("                                                                ", f);
    fputs("]}\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "TPSIM_MAX_JSON_MIB=2 %s import kineto %s -o %s/k2 2>&1", TPSIM_BIN,
             path, d);
    cr_assert(eq(int, testcmd_run(text, sizeof text, cmd), 2));
    cr_assert(ne(ptr, strstr(text, "more than 2 MiB of JSON"), NULL), "%s", text);
    /* a tracer recording is not a place to write a trace: its rank files stay as they are */
    char rec[300], rank0[400];
    testdir_path(rec, sizeof rec, d, "rec");
    cr_assert(eq(int, mkdir(rec, 0777), 0));
    snprintf(rank0, sizeof rank0, "%s/rank-00000.tps", rec);
    f = fopen(rank0, "w");
    fputs("recorded\n", f);
    fclose(f);
    testdir_path(path, sizeof path, d, "t.json");
    write_small(path, "0", "k", NULL);
    snprintf(cmd, sizeof cmd, "%s import kineto %s -o %s 2>&1", TPSIM_BIN, path, rec);
    cr_assert(eq(int, testcmd_run(text, sizeof text, cmd), 2));
    cr_assert(ne(ptr, strstr(text, "holds a tracer recording"), NULL), "%s", text);
    f = fopen(rank0, "r");
    cr_assert(eq(str, fgets(text, sizeof text, f), "recorded\n"));
    fclose(f);
    testdir_remove(d);
}
