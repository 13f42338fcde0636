/* test_report.c - interval arithmetic behind compute and exposed-communication time. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "core/report.h"

TestSuite(report);

Test(report, union_merges_overlaps)
{
    double iv[][2] = {{5, 7}, {0, 2}, {1, 3}, {6, 8}};
    cr_assert(eq(dbl, report_interval_union(iv, 4), 6.0));
}

Test(report, exposed_is_comm_outside_compute)
{
    double comm[][2] = {{1, 4}, {6, 9}};
    double comp[][2] = {{0, 2}, {3, 7}};
    /* comm [1,4)+[6,9) = 6; covered by compute: [1,2) [3,4) [6,7) = 3 */
    cr_assert(eq(dbl, report_interval_exposed(comm, 2, comp, 2), 3.0));
}

Test(report, builds_layer_times_from_op_spans)
{
    struct mdl_program p;
    mdl_program_init(&p, 1);
    p.layers = 1;
    p.micro_batches = 1;
    int nm = mdl_program_name(&p, "x");
    struct mdl_op a = {.kind = MDL_OP_GEMM,
                       .stream = 0,
                       .phase = MDL_PHASE_FWD,
                       .name = nm,
                       .layer = 0,
                       .mb = 0,
                       .group = -1,
                       .flop = 2e12};
    struct mdl_op b = a;
    b.phase = MDL_PHASE_BWD;
    mdl_program_add(&p, 0, &a);
    mdl_program_add(&p, 0, &b);
    struct timing st;
    cr_assert(eq(int, timing_init(&st, &p), 0));
    st.end_s = 4;
    *timing_op(&st, 0, 0) = (struct timing_span){0, 1};
    *timing_op(&st, 0, 1) = (struct timing_span){1, 3};
    struct report r;
    cr_assert(eq(int, report_build(&p, &st, &r), 0));
    cr_assert(eq(dbl, r.layers[0].fwd_s, 1.0));
    cr_assert(eq(dbl, r.layers[0].bwd_s, 2.0));
    cr_assert(eq(dbl, r.compute_s, 3.0));
    cr_assert(eq(dbl, r.hardware_flop, 4e12));
    cr_assert(eq(dbl, r.hardware_tflops_per_gpu, 4e12 / 4 / 1e12));
    /* model FLOPs unknown (a recorded trace): no model throughput, no MFU */
    cr_assert(eq(dbl, r.model_flop, 0));
    cr_assert(eq(dbl, r.mfu, 0));
    report_release(&r);
    /* model FLOPs given by the lowering: throughput and MFU from them, not from the ops */
    p.model_flop = 3e12;
    p.peak_flops = 2e12;
    cr_assert(eq(int, report_build(&p, &st, &r), 0));
    cr_assert(eq(dbl, r.model_tflops_per_gpu, 3e12 / 4 / 1e12));
    cr_assert(eq(dbl, r.mfu, 3e12 / 4 / 2e12));
    cr_assert(eq(dbl, r.hardware_tflops_per_gpu, 4e12 / 4 / 1e12));
    report_release(&r);
    timing_release(&st);
    mdl_program_release(&p);
}
