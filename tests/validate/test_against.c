/* test_against.c - two recordings of one run set side by side (`tpsim validate trace A
 * --against B`): the pairing on a hand-made pair of recordings, and the project's own H100
 * recording (validate/data/traces/h100_trace_step: the tracer and the PyTorch profiler in one
 * process) replayed and compared with its profiler trace. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/trace.h"
#include "core/tracemerge.h"
#include "models/program.h"
#include "validate/against.h"
#include "validate/compare.h"
#include "validate/kineto.h"
#include "validate/recording.h"

#include "../testdir.h"

TestSuite(against, .timeout = 120 * TPSIM_TIMEOUT_SCALE);

#define DATA TPSIM_SOURCE_DIR "/validate/data/traces/h100_trace_step"

static void add(struct mdl_program *p, int kind, int name, double flop, double bytes, int group,
                double start, double dur, int iter)
{
    struct mdl_op o = {.kind = (uint8_t)kind,
                       .stream = (uint8_t)(mdl_op_is_coll((enum mdl_op_kind)kind) ? 1 : 0),
                       .name = name,
                       .group = group,
                       .layer = 0,
                       .mb = -1,
                       .dur_s = dur,
                       .flop = flop,
                       .bytes = bytes,
                       .recorded = 1,
                       .rec_start = start,
                       .rec_end = start + dur,
                       .iter = iter};
    cr_assert(ge(int, mdl_program_add(p, 0, &o), 0));
}

/* A, as the tracer records: 3 iterations of two GEMMs and a one-rank all-reduce, each GEMM's
 * events holding more than its kernel. B, as the profiler records the last 2: a memset, the
 * first GEMM right after it (back to back), an opaque kernel, 40 us of idle GPU, the second GEMM;
 * in B's last iteration the second GEMM has other FLOPs (a mismatch). */
Test(against, pairs_by_kind_in_iterations_aligned_at_the_end)
{
    struct mdl_program a, b;
    cr_assert(eq(int, mdl_program_init(&a, 1), 0));
    cr_assert(eq(int, mdl_program_init(&b, 1), 0));
    a.layers = b.layers = 1;
    a.micro_batches = b.micro_batches = 1;
    int one = 0, g = mdl_program_group(&a, 1, &one), ga = mdl_program_name(&a, "gemm"),
        gb = mdl_program_name(&b, "gemm"), k = mdl_program_name(&b, "kernel");
    double t = 0;
    for (int it = 0; it < 3; it++, t += 1e-3) {
        add(&a, MDL_OP_GEMM, ga, 1e9, 0, -1, t, 102e-6, it);
        add(&a, MDL_OP_GEMM, ga, 2e9, 0, -1, t + 200e-6, 80e-6, it);
        add(&a, MDL_OP_ALL_REDUCE, ga, 0, 1e6, g, t + 300e-6, 5e-6, it);
    }
    t = 1e-3;
    for (int it = 0; it < 2; it++, t += 1e-3) {
        add(&b, MDL_OP_COMPUTE, k, 0, 0, -1, t, 1e-6, it);
        add(&b, MDL_OP_GEMM, gb, 1e9, 0, -1, t + 2e-6, 100e-6, it);
        add(&b, MDL_OP_COMPUTE, k, 0, 0, -1, t + 102e-6, 20e-6, it);
        add(&b, MDL_OP_GEMM, gb, it ? 3e9 : 2e9, 0, -1, t + 162e-6, 50e-6, it);
    }
    char d[256], bdir[300];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(bdir, sizeof bdir, d, "b");
    struct tps_error err = {0};
    cr_assert(eq(int, trace_write(&b, NULL, bdir, &err), 0), "%s", err.msg);

    struct agn_result r;
    cr_assert(eq(int, agn_compare(&a, bdir, &r, &err), 0), "%s", err.msg);
    cr_assert(eq(int, r.niters, 2));
    cr_assert(eq(int, r.a_first, 1), "A's last two iterations");
    cr_assert(eq(int, r.b_first, 0));
    cr_assert(eq(int, r.npairs, 3));
    cr_assert(eq(int, r.mismatched, 1), "2e9 against 3e9 FLOPs");
    cr_assert(eq(int, r.only_a[MDL_OP_ALL_REDUCE], 2), "one per paired iteration");
    cr_assert(eq(int, r.only_b[MDL_OP_COMPUTE], 4));
    cr_assert(eq(int, r.kind[MDL_OP_GEMM].n, 3));
    const struct agn_stat *back = &r.cls[AGN_BACK_TO_BACK], *idle = &r.cls[AGN_AFTER_IDLE];
    cr_assert(eq(int, back->n, 2), "1 us after the memset");
    cr_assert(eq(int, idle->n, 1), "40 us after the kernel");
    cr_assert(le(dbl, fabs(back->median_s - 2e-6), 1e-12), "%g", back->median_s);
    cr_assert(le(dbl, fabs(back->median_pct - 2), 1e-9), "%g", back->median_pct);
    cr_assert(le(dbl, fabs(idle->median_s - 30e-6), 1e-12), "%g", idle->median_s);
    cr_assert(le(dbl, fabs(idle->median_pct - 60), 1e-9), "%g", idle->median_pct);
    cr_assert(le(dbl, fabs(r.cls[AGN_ALL].median_s - 2e-6), 1e-12));
    cr_assert(le(dbl, fabs(r.cls[AGN_ALL].max_abs_s - 30e-6), 1e-12));
    for (int p = 0; p < r.npairs; p++) {
        const struct agn_pair *x = &r.pairs[p];
        cr_assert(eq(int, a.ranks[0].ops[x->a_op].iter - 1, b.ranks[0].ops[x->b_op].iter));
    }
    agn_release(&r);

    char empty[300];
    testdir_path(empty, sizeof empty, d, "none");
    cr_assert(ne(int, agn_compare(&a, empty, &r, &err), 0), "no trace there");
    cr_assert(ne(ptr, strstr(err.path, "none"), NULL), "%s", err.path);
    agn_release(&r);
    mdl_program_release(&a);
    mdl_program_release(&b);
    testdir_remove(d);
}

/* The tracer's recording (1 warm-up + 2 iterations of 2 GPT-3 6.7B layers at a TP=4 shard, H100,
 * PyTorch 2.11, under the profiler too) replayed where it ran, then against the profiler's trace
 * of the same process: the same 72 GEMMs, the tracer's events longer by the events' own 2-3 us
 * where the GPU ran them back to back and by the host's launch where the GPU had waited. */
Test(against, the_h100_recording_replays_and_matches_its_profiler_trace)
{
    char d[256], merged[300], kt[300];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(merged, sizeof merged, d, "merged");
    testdir_path(kt, sizeof kt, d, "kt");
    struct tps_error err = {0};
    cr_assert(eq(int, trace_merge(DATA "/tracer", merged, "dgx-h100", 0, &err), 0), "%s", err.msg);
    struct cmp_result c;
    cr_assert(eq(int, cmp_trace(merged, NULL, NULL, &c, &err), 0), "%s", err.msg);
    cr_assert(eq(int, c.recorded, 132), "48 gemm, 24 attn, 16 all_reduce per 2 iterations");
    cr_assert(eq(int, c.niters, 3));
    cr_assert(eq(int, c.scored_iters, 2));
    cr_assert(eq(int, c.iters[0].warmup, 1), "lazy loading");
    cr_assert(eq(int, c.host_from_gaps, 0), "the tracer measured the host");
    for (int i = 1; i < 3; i++)
        cr_assert(le(dbl, fabs(c.iters[i].simulated_s - c.iters[i].recorded_s),
                     0.01 * c.iters[i].recorded_s),
                  "iteration %d: %g against %g s", i, c.iters[i].simulated_s,
                  c.iters[i].recorded_s);

    const char *files[1] = {DATA "/kineto.json.gz"};
    struct kin_summary s;
    cr_assert(eq(int, kin_import(files, 1, -1, kt, "dgx-h100", &s, &err), 0), "%s", err.msg);
    cr_assert(eq(int, s.gemms, 48));
    cr_assert(eq(int, s.attns, 24));
    struct agn_result r;
    cr_assert(eq(int, agn_compare(&c.prog, kt, &r, &err), 0), "%s", err.msg);
    cr_assert(eq(int, r.a_first, 1), "the profiler recorded the 2 iterations after warm-up");
    cr_assert(eq(int, r.npairs, 72));
    cr_assert(eq(int, r.mismatched, 0), "the same shapes in the same order");
    cr_assert(eq(int, r.only_a[MDL_OP_ALL_REDUCE], 16), "one-rank NCCL launches no kernel");
    cr_assert(eq(int, r.only_b[MDL_OP_COMPUTE], 114));
    const struct agn_stat *back = &r.cls[AGN_BACK_TO_BACK], *idle = &r.cls[AGN_AFTER_IDLE];
    cr_assert(eq(int, back->n + idle->n, 72));
    cr_assert(ge(int, back->n, 20));
    cr_assert(ge(int, idle->n, 20));
    cr_assert(ge(dbl, back->median_s, 1e-6), "%g", back->median_s);
    cr_assert(le(dbl, back->median_s, 4e-6), "%g", back->median_s);
    cr_assert(ge(dbl, idle->median_s, 10e-6), "%g", idle->median_s);
    for (int p = 0; p < r.npairs; p++)
        cr_assert(gt(dbl, r.pairs[p].a_s, r.pairs[p].b_s), "events bracket the kernel");
    agn_release(&r);
    cmp_release(&c);

    /* the tracer alone, without the profiler: the same ops; its faster host leaves stretches
     * where the GPU ran kernels the tracer does not see (norms, softmax, element-wise), which a
     * replay at the measured host times cannot know: it comes out up to 6% short, never long */
    testdir_path(merged, sizeof merged, d, "alone");
    cr_assert(eq(int, trace_merge(DATA "/tracer-alone", merged, "dgx-h100", 0, &err), 0), "%s",
              err.msg);
    cr_assert(eq(int, cmp_trace(merged, NULL, NULL, &c, &err), 0), "%s", err.msg);
    cr_assert(eq(int, c.recorded, 132));
    cr_assert(eq(int, c.scored_iters, 2));
    for (int i = 1; i < 3; i++) {
        cr_assert(le(dbl, c.iters[i].simulated_s, 1.001 * c.iters[i].recorded_s), "iteration %d",
                  i);
        cr_assert(ge(dbl, c.iters[i].simulated_s, 0.94 * c.iters[i].recorded_s), "iteration %d", i);
    }
    cmp_release(&c);
    testdir_remove(d);
}
