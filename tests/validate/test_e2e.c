/* test_e2e.c - validate e2e: the table's rows simulated as whole jobs, bad tables refused. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdio.h>

#include "../testdir.h"
#include "validate/e2e.h"

#define TABLE TPSIM_REFDATA "/e2e/korthikanti2022_table5_iteration_time_via_calculon.csv"

TestSuite(e2e, .timeout = 300 * TPSIM_TIMEOUT_SCALE);

Test(e2e, the_8_gpu_rows_simulate_within_ten_percent_and_full_recompute_costs_more)
{
    struct mdl_device d;
    cr_assert(eq(int, mdl_device_preset("A100-80GB", &d), 0));
    struct e2e_result r;
    struct tps_error err = {0};
    cr_assert(eq(int, e2e_run(TABLE, &d, "dgx-a100", MDL_FP16, 8, NULL, NULL, &r, &err), 0), "%s",
              err.msg);
    cr_assert(eq(int, r.n, 2));
    cr_assert(eq(int, r.skipped, 6));
    for (int i = 0; i < 2; i++) {
        cr_assert(lt(dbl, fabs(r.rows[i].err_pct), 10), "%s: %g%%", r.rows[i].name,
                  r.rows[i].err_pct);
        /* model TFLOP/s from the same model FLOPs: their ratio is the times' ratio */
        double q = r.rows[i].simulated_tflops / r.rows[i].measured_tflops;
        cr_assert(lt(dbl, fabs(q * r.rows[i].simulated_s / r.rows[i].measured_s - 1), 1e-9));
    }
    /* full recomputation (row 0) against sequence parallelism + selective (row 1): measured
     * 1.29x; the simulation keeps the order and the ratio within 10% */
    double ratio = r.rows[0].simulated_s / r.rows[1].simulated_s;
    cr_assert(gt(dbl, ratio, 1.29 * 0.9), "%g", ratio);
    cr_assert(lt(dbl, ratio, 1.29 * 1.1), "%g", ratio);
    e2e_release(&r);
}

Test(e2e, a_row_whose_degrees_do_not_multiply_to_its_gpus_is_refused_at_its_line)
{
    char dir[256], path[300];
    testdir_make(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/t.csv", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f != NULL);
    fputs("model,attn_heads,hidden,num_layers,seq_len,num_gpus,tensor_par,pipeline_par,data_par,"
          "global_batch,micro_batch,pipeline_interleaving,recompute_mode,iteration_time_s\n"
          "m,16,1024,8,512,8,2,2,1,4,1,1,full_recompute,1.0\n",
          f);
    fclose(f);
    struct mdl_device d;
    mdl_device_preset("A100-80GB", &d);
    struct e2e_result r;
    struct tps_error err = {0};
    cr_assert(ne(int, e2e_run(path, &d, "dgx-a100", MDL_FP16, 0, NULL, NULL, &r, &err), 0));
    cr_assert(eq(int, err.line, 2));
    cr_assert(eq(str, err.field, "num_gpus"), "%s", err.msg);
    e2e_release(&r);
    testdir_remove(dir);
}
