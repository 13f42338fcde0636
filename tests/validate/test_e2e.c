/* test_e2e.c - validate e2e: the table's rows simulated as whole jobs, bad tables refused. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../testdir.h"
#include "validate/e2e.h"

#define TABLE TPSIM_REFDATA "/e2e/korthikanti2022_table5_iteration_time_via_calculon.csv"

TestSuite(e2e, .timeout = 300 * TPSIM_TIMEOUT_SCALE);

/* e2e_run on table `csv` (rows of at most max_gpus GPUs; 0: all) with the A100-80GB preset on
 * dgx-a100 machines, in fp16. */
static int run_runs(const char *csv, const char *runs, long max_gpus, struct e2e_result *r,
                    struct tps_error *err)
{
    struct mdl_device d;
    cr_assert(eq(int, mdl_device_preset("A100-80GB", &d), 0));
    return e2e_run(csv, runs, &d, "dgx-a100", MDL_FP16, max_gpus, NULL, NULL, r, err);
}

static int run_table(const char *csv, long max_gpus, struct e2e_result *r, struct tps_error *err)
{
    return run_runs(csv, NULL, max_gpus, r, err);
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

/* Writes `text` to dir/name into path (300 bytes). */
static void write_file(const char *dir, const char *name, const char *text, char *path)
{
    snprintf(path, 300, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* Runs e2e on a table of `text`, with a runs table of `runs` unless NULL, in a directory of its
 * own; the run must fail, *err says why (its path's file name in *file, 16 bytes). */
static void run_refused_with(const char *text, const char *runs, struct tps_error *err, char *file)
{
    char dir[256], path[300], rpath[300];
    testdir_make(dir, sizeof dir);
    write_file(dir, "t.csv", text, path);
    if (runs) write_file(dir, "runs.csv", runs, rpath);
    struct e2e_result r;
    cr_assert(ne(int, run_runs(path, runs ? rpath : NULL, 0, &r, err), 0));
    const char *slash = strrchr(err->path, '/');
    if (file) snprintf(file, 16, "%.15s", slash ? slash + 1 : err->path);
    e2e_release(&r);
    testdir_remove(dir);
}

static void run_refused(const char *text, struct tps_error *err)
{
    run_refused_with(text, NULL, err, NULL);
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

#define RUNS TPSIM_SOURCE_DIR "/scenarios/validation/megatron-2021-weak-scaling-runs.csv"

/* With the runs table of Megatron-LM's own script (examples/sc21/run_table_1.sh), the rows of at
 * most 128 GPUs run as they were run: 16 sequences per micro-batch (one micro-batch per replica),
 * PyTorch's DDP reducing the gradients under the backward, the TP all-reduce after the backward
 * GEMMs; their measured times do not change, and each simulates within 10%. */
Test(e2e, a_runs_table_sets_how_the_weak_scaling_rows_ran)
{
    struct e2e_result r, plain;
    struct tps_error err = {0};
    cr_assert(eq(int, run_runs(WEAK, RUNS, 128, &r, &err), 0), "%s", err.msg);
    cr_assert(eq(int, run_table(WEAK, 128, &plain, &err), 0), "%s", err.msg);
    cr_assert(eq(int, r.n, 3));
    for (int i = 0; i < r.n; i++) {
        cr_assert(eq(long, r.rows[i].micro_batch, 16));
        cr_assert(eq(long, r.rows[i].interleave, 1));
        cr_assert(r.rows[i].overlap_grad_reduce);
        cr_assert(not(r.rows[i].async_grad_allreduce));
        cr_assert(not(plain.rows[i].overlap_grad_reduce));
        cr_assert(plain.rows[i].async_grad_allreduce);
        cr_assert(eq(dbl, r.rows[i].measured_s, plain.rows[i].measured_s));
        cr_assert(ne(dbl, r.rows[i].simulated_s, plain.rows[i].simulated_s));
        cr_assert(lt(dbl, fabs(r.rows[i].err_pct), 10), "%s: %g%%", r.rows[i].name,
                  r.rows[i].err_pct);
    }
    e2e_release(&r);
    e2e_release(&plain);
}

#define WEAK_HEAD                                                                                  \
    "model_size,hidden_size,num_layers,num_params_billion,model_parallel_size,num_gpus,"           \
    "batch_size,achieved_tflops_per_gpu,pct_of_theoretical_peak,achieved_aggregate_pflops"
#define WEAK_ROW "1B,1024,4,1,16,16,8,100,32,1.6\n"

/* A runs table is checked cell by cell against the rows it describes, and refused at its own
 * file, line, column and field: a bad value, a micro-batch that does not divide a replica's
 * sequences, an interleaving the pipeline cannot take, a model the table does not have. */
Test(e2e, a_runs_table_is_refused_at_its_own_cells)
{
    struct tps_error err = {0};
    char file[16];
    run_refused_with(WEAK_HEAD "\n" WEAK_ROW, "# comment\nmodel_size,ddp\n1B,fast\n", &err, file);
    cr_assert(eq(str, file, "runs.csv"));
    cr_assert(eq(int, err.line, 3));
    cr_assert(eq(int, err.col, 2));
    cr_assert(eq(str, err.field, "ddp"), "%s", err.msg);

    memset(&err, 0, sizeof err);
    run_refused_with(WEAK_HEAD "\n" WEAK_ROW, "model_size,micro_batch\n1B,3\n", &err, file);
    cr_assert(eq(str, file, "runs.csv"));
    cr_assert(eq(int, err.line, 2));
    cr_assert(eq(str, err.field, "micro_batch"), "%s", err.msg);

    memset(&err, 0, sizeof err);
    run_refused_with(WEAK_HEAD "\n" WEAK_ROW, "model_size,pipeline_interleaving\n1B,4\n", &err,
                     file);
    cr_assert(eq(str, file, "runs.csv"));
    cr_assert(eq(str, err.field, "pipeline_interleaving"), "%s", err.msg);

    memset(&err, 0, sizeof err);
    run_refused_with(WEAK_HEAD "\n" WEAK_ROW, "model_size,micro_batch\n1B,1\n2B,1\n", &err, file);
    cr_assert(eq(str, file, "runs.csv"));
    cr_assert(eq(int, err.line, 3));
    cr_assert(eq(str, err.field, "model_size"), "%s", err.msg);

    memset(&err, 0, sizeof err);
    run_refused_with(WEAK_HEAD "\n" WEAK_ROW, "model_size,micro_batch\n1B,1\n1B,2\n", &err, file);
    cr_assert(eq(int, err.line, 3));
    cr_assert(eq(str, err.field, "model_size"), "%s", err.msg);

    /* a runs table belongs to a weak-scaling table */
    memset(&err, 0, sizeof err);
    run_refused_with("model,attn_heads,hidden,num_layers,seq_len,num_gpus,tensor_par,pipeline_par,"
                     "data_par,global_batch,micro_batch,pipeline_interleaving,recompute_mode,"
                     "iteration_time_s\n"
                     "m,16,1024,8,512,8,8,1,1,4,1,1,full_recompute,1.0\n",
                     "model_size,micro_batch\nm,1\n", &err, file);
    cr_assert(eq(str, file, "t.csv"));
    cr_assert(eq(str, err.field, "header"), "%s", err.msg);
}

/* The same settings may be columns of the weak-scaling table itself: read there, refused there. */
Test(e2e, a_weak_scaling_table_may_carry_its_settings)
{
    struct tps_error err = {0};
    char file[16];
    run_refused_with(WEAK_HEAD ",attn_heads\n1B,1024,4,1,16,16,8,100,32,1.6,12\n", NULL, &err,
                     file);
    cr_assert(eq(str, file, "t.csv"));
    cr_assert(eq(int, err.line, 2));
    cr_assert(eq(int, err.col, 11));
    cr_assert(eq(str, err.field, "attn_heads"), "%s", err.msg);
}

static void count_progress(int i, const char *name, void *ctx)
{
    (void)i;
    (void)name;
    ++*(int *)ctx;
}

/* Every row is read and checked before any is simulated: a runs table wrong for the sixth row
 * (76B: 56 sequences per replica) is refused before the first row's minutes of simulation. */
Test(e2e, a_bad_cell_in_a_late_row_is_refused_before_any_row_runs)
{
    char dir[256], path[300];
    testdir_make(dir, sizeof dir);
    write_file(dir, "runs.csv", "model_size,micro_batch\n1.7B,16\n76B,3\n", path);
    struct mdl_device d;
    cr_assert(eq(int, mdl_device_preset("A100-80GB", &d), 0));
    struct e2e_result r;
    struct tps_error err = {0};
    int calls = 0;
    cr_assert(ne(int,
                 e2e_run(WEAK, path, &d, "dgx-a100", MDL_FP16, 0, count_progress, &calls, &r, &err),
                 0));
    cr_assert(eq(int, calls, 0));
    cr_assert(eq(int, err.line, 3));
    cr_assert(eq(str, err.field, "micro_batch"), "%s", err.msg);
    e2e_release(&r);
    testdir_remove(dir);
}

/* A table's optional context_par column: a row of tp 2 x cp 2 x pp 1 x dp 2 on 8 GPUs runs with
 * context parallelism (its simulated time differs from the same row without it, whose degrees
 * then do not multiply to its GPUs and which is refused). */
Test(e2e, the_context_par_column_runs_rows_with_context_parallelism)
{
    char dir[256], path[300];
    testdir_make(dir, sizeof dir);
    write_file(dir, "cp.csv",
               "model,attn_heads,hidden,num_layers,seq_len,num_gpus,tensor_par,context_par,"
               "pipeline_par,data_par,global_batch,micro_batch,pipeline_interleaving,"
               "recompute_mode,iteration_time_s\n"
               "m,16,2048,4,8192,8,2,2,1,2,4,1,1,selective_recompute,1.0\n"
               "m,16,2048,4,8192,8,2,1,1,4,4,1,1,selective_recompute,1.0\n",
               path);
    struct e2e_result r;
    struct tps_error err = {0};
    cr_assert(eq(int, run_table(path, 0, &r, &err), 0), "%s", err.msg);
    cr_assert(eq(int, r.n, 2));
    cr_assert(eq(long, r.rows[0].cp, 2));
    cr_assert(eq(long, r.rows[1].cp, 1));
    cr_assert(gt(dbl, r.rows[0].simulated_s, 0));
    cr_assert(ne(dbl, r.rows[0].simulated_s, r.rows[1].simulated_s));
    e2e_release(&r);
    struct tps_error e2 = {0};
    run_refused("model,attn_heads,hidden,num_layers,seq_len,num_gpus,tensor_par,context_par,"
                "pipeline_par,data_par,global_batch,micro_batch,pipeline_interleaving,"
                "recompute_mode,iteration_time_s\n"
                "m,16,2048,4,8192,8,2,2,1,4,4,1,1,full_recompute,1.0\n",
                &e2);
    cr_assert(eq(str, e2.field, "num_gpus"), "%s", e2.msg);
    cr_assert(ne(int, strstr(e2.msg, "context_par x") != NULL, 0), "%s", e2.msg);
    testdir_remove(dir);
}

#define DGXC      TPSIM_REFDATA "/e2e/dgxc_bench_eos_h100_gpt3_nemotron4.csv"
#define DGXC_RUNS TPSIM_SOURCE_DIR "/scenarios/validation/dgxc-recipes-runs.csv"
#define LONGCTX   TPSIM_REFDATA "/e2e/nemo_long_context_cp_llama2_7b_h100_fp8.csv"
#define LONG_RUNS TPSIM_SOURCE_DIR "/scenarios/validation/nemo-long-context-runs.csv"

/* e2e_run of an H100 table on dgx-h100 machines (each row's own precision). */
static int run_h100(const char *csv, const char *runs, long max_gpus, struct e2e_result *r,
                    struct tps_error *err)
{
    struct mdl_device d;
    cr_assert(eq(int, mdl_device_preset("H100-SXM", &d), 0));
    return e2e_run(csv, runs, &d, "dgx-h100", MDL_BF16, max_gpus, NULL, NULL, r, err);
}

/* The DGX Cloud recipes' 16-GPU rows (Nemotron-4 15B, both releases, BF16 and FP8) run as their
 * recipes ran: TP overlap from the runs table, FP8 from the precision; each within 10%, and FP8's
 * step time against BF16's within 10% of the measured ratio. */
Test(e2e, the_dgx_cloud_recipes_16_gpu_rows_and_their_fp8_speedup)
{
    struct e2e_result r;
    struct tps_error err = {0};
    cr_assert(eq(int, run_h100(DGXC, DGXC_RUNS, 16, &r, &err), 0), "%s", err.msg);
    cr_assert(eq(int, r.n, 4));
    for (int i = 0; i < r.n; i++) {
        const struct e2e_row *w = &r.rows[i];
        cr_assert(ne(int, w->recipe, 0));
        cr_assert(ne(int, w->tp_comm_overlap, 0), "%s", w->name);
        cr_assert(ne(int, w->distributed_optimizer, 0));
        cr_assert(lt(dbl, fabs(w->err_pct), 10), "%s: %+.1f%%", w->name, w->err_pct);
    }
    /* the runs table's switches: Nemotron-4 15B reduces fp32 gradients; v25.04 (NeMo 2.0)
     * keeps FP8 weights, v24.11.1 does not */
    for (int i = 0; i < r.n; i++)
        cr_assert(eq(int, r.rows[i].grad_reduce_in_bf16, 0), "%s", r.rows[i].name);
    cr_assert(eq(int, r.rows[1].fp8_param_gather, 0));
    cr_assert(ne(int, r.rows[3].fp8_param_gather, 0));
    /* rows 0, 1: v24.11.1 BF16, FP8; rows 2, 3: v25.04 */
    for (int k = 0; k < 4; k += 2) {
        cr_assert(eq(int, r.rows[k].fp8, 0));
        cr_assert(ne(int, r.rows[k + 1].fp8, 0));
        double meas = r.rows[k + 1].measured_s / r.rows[k].measured_s;
        double sim = r.rows[k + 1].simulated_s / r.rows[k].simulated_s;
        cr_assert(lt(dbl, fabs(sim / meas - 1), 0.10), "%g vs %g", sim, meas);
    }
    e2e_release(&r);
}

/* grad_reduce_in_bf16 from a runs table (every table row needs a runs row, the larger ones
 * too): the same 16-GPU rows with bf16 gradients need 2 bytes per parameter less (the gradient
 * buffer), and the switch is on every row of the model. */
Test(e2e, a_runs_tables_bf16_gradients_shrink_the_recipes_memory)
{
    static const char runs[] =
        "release,model,recompute,tp_comm_overlap,distributed_optimizer,overlap_grad_reduce,"
        "overlap_param_gather,untied_embeddings,grad_reduce_in_bf16,fp8_param_gather\n"
        "v24.11.1,Nemotron4-15B,none,true,true,true,true,true,true,false\n"
        "v25.04,Nemotron4-15B,none,true,true,true,true,true,true,true\n"
        "v24.11.1,GPT3-175B,none,true,true,true,true,false,true,true\n"
        "v25.04,GPT3-175B,none,true,true,true,true,false,true,true\n"
        "v24.11.1,Nemotron4-340B,selective,false,true,true,true,true,true,false\n"
        "v25.04,Nemotron4-340B,none,true,true,true,true,true,true,true\n";
    char dir[256], rpath[300];
    testdir_make(dir, sizeof dir);
    write_file(dir, "runs.csv", runs, rpath);
    struct e2e_result a, b;
    struct tps_error err = {0};
    cr_assert(eq(int, run_h100(DGXC, DGXC_RUNS, 16, &a, &err), 0), "%s", err.msg);
    cr_assert(eq(int, run_h100(DGXC, rpath, 16, &b, &err), 0), "%s", err.msg);
    cr_assert(eq(int, a.n, b.n));
    for (int i = 0; i < b.n; i++) {
        cr_assert(ne(int, b.rows[i].grad_reduce_in_bf16, 0), "%s", b.rows[i].name);
        cr_assert(lt(dbl, b.rows[i].memory_gb, a.rows[i].memory_gb), "%s", b.rows[i].name);
    }
    e2e_release(&a);
    e2e_release(&b);
    testdir_remove(dir);
}

/* A recipe table's bad cells and runs rows are refused where they are. */
Test(e2e, a_recipe_tables_bad_precision_and_unknown_runs_row_are_refused)
{
    static const char hdr[] =
        "release,model,precision,num_gpus,seq_len,num_layers,hidden,ffn,heads,"
        "kv_heads,vocab,tp,pp,cp,vp,dp,mbs,gbs,step_time_s\n";
    char text[512];
    snprintf(text, sizeof text, "%sr1,M,FP4,8,1024,4,1024,4096,16,16,1000,2,1,1,,4,1,8,1.0\n", hdr);
    struct tps_error err = {0};
    run_refused(text, &err);
    cr_assert(eq(int, err.line, 2));
    cr_assert(eq(int, err.col, 3));
    cr_assert(eq(str, err.field, "precision"), "%s", err.msg);
    snprintf(text, sizeof text, "%sr1,M,BF16,8,1024,4,1024,4096,16,16,1000,2,1,1,,4,1,8,1.0\n",
             hdr);
    struct tps_error e2 = {0};
    char file[16];
    run_refused_with(text, "release,model,tp_comm_overlap\nr1,N,true\n", &e2, file);
    cr_assert(eq(str, e2.field, "model"), "%s", e2.msg);
    cr_assert(eq(str, file, "t.csv"), "%s", e2.msg);
    struct tps_error e3 = {0};
    run_refused_with(text, "release,model,tp_comm_overlap\nr1,M,maybe\n", &e3, file);
    cr_assert(eq(str, e3.field, "tp_comm_overlap"), "%s", e3.msg);
    cr_assert(eq(str, file, "runs.csv"));
    cr_assert(eq(int, e3.line, 2));
}

/* overlap_p2p_comm and batch_p2p_sync from a runs table reach the job of a recipe row: the same
 * 16-GPU row (pp 4, vp 2) with the messages overlapped runs faster; a row without interleaving
 * is run without it (Megatron-LM overlaps the interleaved schedule alone). */
Test(e2e, a_runs_tables_overlapped_point_to_point_speeds_an_interleaved_row)
{
    static const char table[] =
        "release,model,precision,num_gpus,seq_len,num_layers,hidden,ffn,heads,"
        "kv_heads,vocab,tp,pp,cp,vp,dp,mbs,gbs,step_time_s\n"
        "r1,M,BF16,16,2048,8,2048,8192,16,16,51200,2,4,1,2,2,1,16,1.0\n"
        "r1,N,BF16,16,2048,8,2048,8192,16,16,51200,2,4,1,,2,1,16,1.0\n";
    char dir[256], tpath[300], on[300], off[300];
    testdir_make(dir, sizeof dir);
    write_file(dir, "t.csv", table, tpath);
    write_file(dir, "on.csv", "release,model,overlap_p2p_comm\nr1,M,true\nr1,N,true\n", on);
    write_file(dir, "off.csv", "release,model,overlap_p2p_comm\nr1,M,false\nr1,N,false\n", off);
    struct e2e_result a, b;
    struct tps_error err = {0};
    cr_assert(eq(int, run_h100(tpath, off, 0, &a, &err), 0), "%s", err.msg);
    cr_assert(eq(int, run_h100(tpath, on, 0, &b, &err), 0), "%s", err.msg);
    cr_assert(eq(int, a.n, 2));
    cr_assert(eq(int, b.n, 2));
    cr_assert(ne(int, b.rows[0].overlap_p2p_comm, 0));
    cr_assert(lt(dbl, b.rows[0].simulated_s, a.rows[0].simulated_s), "%g vs %g",
              b.rows[0].simulated_s, a.rows[0].simulated_s);
    cr_assert(eq(dbl, b.rows[1].simulated_s, a.rows[1].simulated_s), "no interleaving: the same");
    /* batch_p2p_sync false (NeMo's sync_batch_comm false): the batched calls of the row without
     * interleaving no longer synchronize the device; empty: true */
    char nosync[300];
    write_file(dir, "nosync.csv", "release,model,batch_p2p_sync\nr1,M,\nr1,N,false\n", nosync);
    struct e2e_result c;
    cr_assert(eq(int, run_h100(tpath, nosync, 0, &c, &err), 0), "%s", err.msg);
    cr_assert(eq(int, c.n, 2));
    cr_assert(eq(int, c.rows[0].batch_p2p_nosync, 0));
    cr_assert(eq(dbl, c.rows[0].simulated_s, a.rows[0].simulated_s));
    cr_assert(ne(int, c.rows[1].batch_p2p_nosync, 0));
    cr_assert(lt(dbl, c.rows[1].simulated_s, a.rows[1].simulated_s), "%g vs %g",
              c.rows[1].simulated_s, a.rows[1].simulated_s);
    e2e_release(&a);
    e2e_release(&b);
    e2e_release(&c);
    testdir_remove(dir);
}

/* The long-context table's step times come from NeMo's Llama FLOP formula over the published
 * TFLOP/s: its 4-GPU row (4K tokens, 1,024 sequences, 768 TFLOP/s per GPU) by hand. */
Test(e2e, the_long_context_rows_take_their_time_from_nemos_flop_formula)
{
    struct e2e_result r;
    struct tps_error err = {0};
    cr_assert(eq(int, run_h100(LONGCTX, LONG_RUNS, 4, &r, &err), 0), "%s", err.msg);
    cr_assert(eq(int, r.n, 1));
    double s = 4096, L = 32, h = 4096, B = 1024;
    double F = B * s * L * h * h * (12 + 12 + 18 * 11008 / h + 12 * s / h + 6 * 32000 / (L * h));
    cr_assert(ieee_ulp_eq(dbl, r.rows[0].measured_s, F / (768e12 * 4), 8), "%g",
              r.rows[0].measured_s);
    cr_assert(ne(int, r.rows[0].fp8, 0));
    cr_assert(ne(int, r.rows[0].glu, 0));
    cr_assert(gt(dbl, r.rows[0].simulated_s, 0));
    e2e_release(&r);
}
