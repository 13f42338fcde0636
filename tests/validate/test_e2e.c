/* test_e2e.c - validate e2e: the table's rows simulated as whole jobs, bad tables refused. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdio.h>

#include "../testdir.h"
#include "validate/e2e.h"

#define TABLE TPSIM_REFDATA "/e2e/korthikanti2022_table5_iteration_time_via_calculon.csv"

TestSuite(e2e, .timeout = 300 * TPSIM_TIMEOUT_SCALE);

/* e2e_run on table `csv` (rows of at most max_gpus GPUs; 0: all) with the A100-80GB preset on
 * dgx-a100 machines, in fp16. */
static int run_table(const char *csv, long max_gpus, struct e2e_result *r, struct tps_error *err)
{
    struct mdl_device d;
    cr_assert(eq(int, mdl_device_preset("A100-80GB", &d), 0));
    return e2e_run(csv, &d, "dgx-a100", MDL_FP16, max_gpus, NULL, NULL, r, err);
}

Test(e2e, the_8_gpu_rows_simulate_within_ten_percent_and_full_recompute_costs_more)
{
    struct e2e_result r;
    struct tps_error err = {0};
    cr_assert(eq(int, run_table(TABLE, 8, &r, &err), 0), "%s", err.msg);
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

/* Runs e2e on a table of `text` in a directory of its own; the run must fail, *err says why. */
static void run_refused(const char *text, struct tps_error *err)
{
    char dir[256], path[300];
    testdir_make(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/t.csv", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f != NULL);
    fputs(text, f);
    fclose(f);
    struct e2e_result r;
    cr_assert(ne(int, run_table(path, 0, &r, err), 0));
    e2e_release(&r);
    testdir_remove(dir);
}

Test(e2e, a_row_whose_degrees_do_not_multiply_to_its_gpus_is_refused_at_its_line)
{
    struct tps_error err = {0};
    run_refused("model,attn_heads,hidden,num_layers,seq_len,num_gpus,tensor_par,pipeline_par,"
                "data_par,global_batch,micro_batch,pipeline_interleaving,recompute_mode,"
                "iteration_time_s\n"
                "m,16,1024,8,512,8,2,2,1,4,1,1,full_recompute,1.0\n",
                &err);
    cr_assert(eq(int, err.line, 2));
    cr_assert(eq(str, err.field, "num_gpus"), "%s", err.msg);
}

/* A table saved by a spreadsheet, with a UTF-8 byte-order mark, reads as without one: the same
 * row is refused at the same cell, not the header at its first column. */
Test(e2e, a_byte_order_mark_before_the_header_is_skipped)
{
    struct tps_error err = {0};
    run_refused("\xef\xbb\xbf"
                "model,attn_heads,hidden,num_layers,seq_len,num_gpus,tensor_par,pipeline_par,"
                "data_par,global_batch,micro_batch,pipeline_interleaving,recompute_mode,"
                "iteration_time_s\n"
                "m,16,1024,8,512,8,2,2,1,4,1,1,full_recompute,1.0\n",
                &err);
    cr_assert(eq(int, err.line, 2), "%s", err.msg);
    cr_assert(eq(str, err.field, "num_gpus"), "%s", err.msg);
}

#define WEAK TPSIM_REFDATA "/e2e/megatron_readme_2021_a100_weak_scaling.csv"

/* The weak-scaling table: tensor parallel inside a DGX A100 (at most 8), pipeline parallel beyond,
 * data parallel over the rest; the measured time is Narayanan et al.'s FLOP count (with the
 * recomputed forward) over the achieved FLOP/s of all GPUs. The rows of at most 128 GPUs. */
Test(e2e, the_weak_scaling_rows_map_to_jobs_and_their_measured_times)
{
    struct e2e_result r;
    struct tps_error err = {0};
    cr_assert(eq(int, run_table(WEAK, 128, &r, &err), 0), "%s", err.msg);
    cr_assert(eq(int, r.n, 3));
    cr_assert(eq(int, r.skipped, 7));
    /* 1.7B: model_parallel_size 1 on 32 GPUs, batch 512 */
    cr_assert(eq(long, r.rows[0].tp, 1));
    cr_assert(eq(long, r.rows[0].pp, 1));
    cr_assert(eq(long, r.rows[0].dp, 32));
    cr_assert(eq(long, r.rows[0].micro_batch, 1));
    double B = 512, s = 2048, l = 24, h = 2304, V = 51200;
    double flop = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    cr_assert(lt(dbl, fabs(r.rows[0].measured_s / (flop / (137e12 * 32)) - 1), 1e-12));
    /* 7.5B: model_parallel_size 4 on 128 GPUs */
    cr_assert(eq(long, r.rows[2].tp, 4));
    cr_assert(eq(long, r.rows[2].pp, 1));
    cr_assert(eq(long, r.rows[2].dp, 32));
    for (int i = 0; i < r.n; i++)
        cr_assert(lt(dbl, fabs(r.rows[i].err_pct), 15), "%s: %g%%", r.rows[i].name,
                  r.rows[i].err_pct);
    e2e_release(&r);
}

/* A weak-scaling row whose model-parallel size does not split into tensor x pipeline degrees
 * over 8-GPU machines is refused at its line and column. */
Test(e2e, a_weak_scaling_row_that_cannot_be_split_is_refused_at_its_cell)
{
    struct tps_error err = {0};
    run_refused("model_size,hidden_size,num_layers,num_params_billion,model_parallel_size,num_gpus,"
                "batch_size,achieved_tflops_per_gpu,pct_of_theoretical_peak,"
                "achieved_aggregate_pflops\n"
                "1B,2048,8,1,12,24,64,100,32,2.4\n",
                &err);
    cr_assert(eq(int, err.line, 2));
    cr_assert(eq(int, err.col, 5));
    cr_assert(eq(str, err.field, "model_parallel_size"), "%s", err.msg);
}
