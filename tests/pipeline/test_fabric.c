/* test_fabric.c - jobs sharing a platform (pipeline/fabric.h): two transfers through one NIC
 * each take twice as long as alone and through NICs of their own as long; jobs that share a NIC
 * slow each other and jobs that share no link do not; a job alone is the plain run of its
 * scenario; a seeded straggler run is bit-identical. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdio.h>

#include "pipeline/fabric.h"
#include "pipeline/pipeline_int.h"
#include "platforms/spec.h"
#include "tests/testdir.h"

TestSuite(fabric, .timeout = 300 * TPSIM_TIMEOUT_SCALE);

/* One all-reduce of `bytes` between two GPUs. */
static void one_all_reduce(struct mdl_program *p, double bytes)
{
    cr_assert(eq(int, mdl_program_init(p, 2), 0));
    int ranks[] = {0, 1};
    int g = mdl_program_group(p, 2, ranks), nm = mdl_program_name(p, "ar");
    for (int r = 0; r < 2; r++) {
        struct mdl_op ar = {.kind = MDL_OP_ALL_REDUCE,
                            .stream = MDL_STREAM_COMM,
                            .name = nm,
                            .group = g,
                            .layer = -1,
                            .mb = -1,
                            .bytes = bytes};
        cr_assert(ge(int, mdl_program_add(p, r, &ar), 0));
    }
}

/* The time of job a's all-reduce (GPUs 0 and 8) on `platform`, alone or beside job b's (GPUs 1
 * and 9). */
static double all_reduce_time(const char *platform, int with_b)
{
    struct plat_topo t;
    struct tps_error err = {0};
    cr_assert(eq(int, plat_spec_from_line(platform, &t, &err), 0), "%s", err.msg);
    struct mdl_program all, a, b;
    one_all_reduce(&a, 1e9);
    one_all_reduce(&b, 1e9);
    int at_a[] = {0, 8}, at_b[] = {1, 9};
    cr_assert(eq(int, mdl_program_init(&all, t.ngpus), 0));
    cr_assert(eq(int, mdl_program_merge(&all, &a, at_a), 0));
    if (with_b) cr_assert(eq(int, mdl_program_merge(&all, &b, at_b), 0));
    struct timing tm, mine;
    cr_assert(eq(int, pipeline_run_program(&all, &t, &tm, &err), 0), "%s", err.msg);
    cr_assert(eq(int, timing_gather(&tm, &a, at_a, &mine), 0));
    double s = mine.end_s;
    if (with_b) { /* the two are symmetric */
        struct timing theirs;
        cr_assert(eq(int, timing_gather(&tm, &b, at_b, &theirs), 0));
        cr_expect(eq(dbl, theirs.end_s, s));
        timing_release(&theirs);
    }
    timing_release(&mine);
    timing_release(&tm);
    mdl_program_release(&all);
    mdl_program_release(&a);
    mdl_program_release(&b);
    plat_topo_release(&t);
    return s;
}

Test(fabric, one_nic_per_server_halves_what_each_of_two_transfers_gets)
{
    double alone = all_reduce_time("dgx-a100 nodes=2 nics_per_node=1", 0);
    double shared = all_reduce_time("dgx-a100 nodes=2 nics_per_node=1", 1);
    /* 1 GB is bandwidth-bound: two flows through one NIC take twice as long, less the part of
     * the time that is latency */
    cr_expect(ge(dbl, shared / alone, 1.9), "%.6f against %.6f", shared, alone);
    cr_expect(le(dbl, shared / alone, 2.0 + 1e-9), "%.6f against %.6f", shared, alone);
    /* a NIC per GPU: nothing is shared */
    double own = all_reduce_time("dgx-a100 nodes=2", 0);
    cr_expect(eq(dbl, all_reduce_time("dgx-a100 nodes=2", 1), own));
}

/* Writes a scenario of jobs to dir/name and returns its path in path. */
static void write_file(const char *dir, const char *name, const char *text, char *path, size_t len)
{
    testdir_path(path, len, dir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f != NULL);
    fputs(text, f);
    fclose(f);
}

static const char job_text[] = "    model: {preset: gpt3-13b, micro_batch: 1}\n"
                               "    device: A100-80GB\n"
                               "    strategy: {kind: 1d, tp: 8}\n"
                               "    run: {layers: 1}\n";

/* Two TP groups of 8, each on four GPUs of each of two servers, with `nics` NICs per server. */
static void two_groups(int nics, struct fabric_run *r)
{
    char dir[256], path[512], text[2048];
    cr_assert(testdir_make(dir, sizeof dir) != NULL);
    snprintf(text, sizeof text,
             "platform: {preset: dgx-a100, nodes: 2, nics_per_node: %d}\njobs:\n"
             "  - name: a\n    gpus: [0-3, 8-11]\n%s  - name: b\n    gpus: [4-7, 12-15]\n%s",
             nics, job_text, job_text);
    write_file(dir, "f.yaml", text, path, sizeof path);
    struct tps_error err = {0};
    cr_assert(eq(int, fabric_load(path, -1, r, &err), 0), "%s", err.msg);
    cr_assert(eq(int, fabric_simulate(r, NULL, &err), 0), "%s", err.msg);
    testdir_remove(dir);
}

Test(fabric, jobs_sharing_a_nic_slow_each_other_and_jobs_sharing_no_link_do_not)
{
    struct fabric_run r;
    two_groups(1, &r);
    cr_assert(eq(int, r.njobs, 2));
    for (int i = 0; i < 2; i++) {
        const struct fabric_job_run *J = &r.jobs[i];
        cr_expect(gt(dbl, J->slowdown, 1.2), "job %d: %.4f", i, J->slowdown);
        cr_expect(lt(dbl, J->slowdown, 2.0), "job %d: %.4f", i, J->slowdown);
        cr_expect(eq(dbl, J->slowdown, J->shared.iteration_s / J->alone.iteration_s));
        /* what slowed is the communication: the compute is the same (to the rounding of its
         * sum, whose order follows the events) */
        cr_expect(gt(dbl, J->shared.exposed_comm_s, J->alone.exposed_comm_s));
        cr_expect(le(dbl, fabs(J->shared.compute_s / J->alone.compute_s - 1), 1e-12));
        cr_expect(eq(dbl, J->shared.model_flop, J->alone.model_flop));
    }
    cr_expect(eq(dbl, r.jobs[0].slowdown, r.jobs[1].slowdown), "the two are symmetric");
    cr_expect(eq(dbl, r.tm.end_s, r.jobs[0].shared.iteration_s));
    fabric_release(&r);
    two_groups(8, &r); /* a NIC per GPU */
    for (int i = 0; i < 2; i++)
        cr_expect(eq(dbl, r.jobs[i].slowdown, 1.0), "job %d: %.17g", i, r.jobs[i].slowdown);
    fabric_release(&r);
}

/* A fabric of one job on `device` against the plain scenario on the same platform. */
static void alone_against_plain(const char *device)
{
    char dir[256], path[512], plain[512], text[4096];
    cr_assert(testdir_make(dir, sizeof dir) != NULL);
    snprintf(text, sizeof text,
             "platform: {preset: dgx-a100, nodes: 2, nics_per_node: 1}\njobs:\n  - name: a\n"
             "    model: {preset: gpt3-13b, micro_batch: 1, dtype: fp16}\n    device: %s\n"
             "    strategy: {kind: 1d, tp: 8}\n    run: {layers: 1}\n",
             device);
    write_file(dir, "f.yaml", text, path, sizeof path);
    snprintf(text, sizeof text,
             "platform: {preset: dgx-a100, nodes: 2, nics_per_node: 1}\n"
             "model: {preset: gpt3-13b, micro_batch: 1, dtype: fp16}\ndevice: %s\n"
             "strategy: {kind: 1d, tp: 8}\nrun: {layers: 1}\n",
             device);
    write_file(dir, "s.yaml", text, plain, sizeof plain);
    struct fabric_run r;
    struct tps_error err = {0};
    cr_assert(eq(int, fabric_load(path, -1, &r, &err), 0), "%s", err.msg);
    cr_assert(eq(int, fabric_simulate(&r, NULL, &err), 0), "%s", err.msg);
    struct pipeline_job j;
    struct timing tm;
    struct report rep;
    cr_assert(eq(int, pipeline_load_scenario(plain, NULL, &j, &err), 0), "%s", err.msg);
    cr_assert(eq(int, pipeline_simulate(&j, &tm, &rep, &err), 0), "%s", err.msg);
    cr_expect(eq(int, r.jobs[0].gpus[0], 0));
    /* a device's GEMM table is the job's own, moved with it */
    cr_expect(r.jobs[0].pj->scn.device.gemm_table ==
              (j.scn.device.gemm_table ? &r.jobs[0].pj->scn.gemm : NULL));
    cr_expect(eq(dbl, r.jobs[0].alone.iteration_s, rep.iteration_s), "%s", device);
    cr_expect(eq(dbl, r.jobs[0].shared.iteration_s, rep.iteration_s), "%s", device);
    cr_expect(eq(dbl, r.jobs[0].shared.exposed_comm_s, rep.exposed_comm_s), "%s", device);
    cr_expect(eq(dbl, r.jobs[0].slowdown, 1.0));
    report_release(&rep);
    timing_release(&tm);
    pipeline_release(&j);
    fabric_release(&r);
    testdir_remove(dir);
}

Test(fabric, a_job_alone_is_the_plain_run_of_its_scenario)
{
    alone_against_plain("A100-80GB");
    /* a device calibrated with a GEMM table (the scenario owns the table its device reads) */
    alone_against_plain("{preset: A100-80GB, gemm_table: " TPSIM_SOURCE_DIR
                        "/../shared/refdata/gemm/a100_sxm4_80gb_azure_ndv4_cublaslt_fp16.csv}");
}

/* A job with noisy GPUs beside a plain one: each seed bit-identical across runs. */
static double noisy(long seed)
{
    char dir[256], path[512], text[2048];
    cr_assert(testdir_make(dir, sizeof dir) != NULL);
    snprintf(text, sizeof text,
             "platform: {preset: dgx-a100, nodes: 2, nics_per_node: 1}\njobs:\n"
             "  - name: a\n    gpus: [0-3, 8-11]\n%s"
             "    stragglers: {noise: lognormal, sigma: 0.3, seed: 7}\n"
             "  - name: b\n    gpus: [4-7, 12-15]\n%s",
             job_text, job_text);
    write_file(dir, "f.yaml", text, path, sizeof path);
    struct fabric_run r;
    struct tps_error err = {0};
    cr_assert(eq(int, fabric_load(path, seed, &r, &err), 0), "%s", err.msg);
    cr_assert(eq(int, fabric_simulate(&r, NULL, &err), 0), "%s", err.msg);
    cr_assert(r.jobs[0].pj->hetero[0] != 0, "job a is noisy");
    cr_assert(r.jobs[1].pj->hetero[0] == 0, "job b is not");
    double t = r.jobs[1].shared.iteration_s;
    fabric_release(&r);
    testdir_remove(dir);
    return t;
}

Test(fabric, a_seeded_straggler_beside_another_job_is_bit_identical)
{
    double a = noisy(-1), b = noisy(-1), c = noisy(8);
    cr_expect(eq(dbl, a, b));
    cr_expect(not(eq(dbl, a, c)), "another seed, another time for the job beside it");
}
