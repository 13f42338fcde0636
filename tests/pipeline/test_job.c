/* test_job.c - whole jobs simulated: the folded layers against op by op, the pipeline's closed
 * form, the report's breakdown. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <string.h>

#include "pipeline/pipeline_int.h"

TestSuite(job, .timeout = 300 * TPSIM_TIMEOUT_SCALE);

/* Loads the scenario into *j as loaded, fold set (the caller may change more before
 * simulate()). */
static void load(const char *path, int fold, struct pipeline_job *j)
{
    struct tps_error err = {0};
    memset(j, 0, sizeof *j);
    cr_assert(eq(int, scn_load(path, &j->scn, &err), 0), "%s", err.msg);
    j->scn.fold = fold;
    j->topo = &j->scn.topo;
}

/* Lowers and simulates *j; returns the iteration time. */
static double simulate(struct pipeline_job *j, struct report *r)
{
    struct tps_error err = {0};
    cr_assert(eq(int, pipeline_lower_job(j, &err), 0), "%s", err.msg);
    cr_assert(eq(int, pipeline_simulate(j, NULL, r, &err), 0), "%s", err.msg);
    return r->iteration_s;
}

/* Releases a simulated job and its report. */
/* Loads `path` (folded or not), sets its ZeRO stage and rank order where >= 0, simulates. */
static double simulate_as(const char *path, int fold, int zero, int order, struct pipeline_job *j,
                          struct report *r)
{
    load(path, fold, j);
    if (zero >= 0) j->scn.job.zero = zero;
    if (order >= 0) j->scn.job.order = order;
    return simulate(j, r);
}

static void done(struct pipeline_job *j, struct report *r)
{
    report_release(r);
    pipeline_release(j);
}

static double run(const char *path, int fold, int schedule, struct pipeline_job *j,
                  struct report *r)
{
    load(path, fold, j);
    if (schedule >= 0) j->scn.job.schedule = (enum mdl_schedule)schedule;
    return simulate(j, r);
}

Test(job, folded_layers_match_the_op_by_op_job_within_one_percent_on_shared_nics)
{
    struct pipeline_job a, b;
    struct report ra, rb;
    double full = run(TPSIM_SOURCE_DIR "/tests/data/good/job-32.yaml", 0, -1, &a, &ra);
    double folded = run(TPSIM_SOURCE_DIR "/tests/data/good/job-32.yaml", 1, -1, &b, &rb);
    cr_assert(eq(int, ra.nranks, 32));
    cr_assert(lt(dbl, b.prog.ranks[0].nops * 10.0, (double)a.prog.ranks[0].nops),
              "folding makes the program much smaller");
    cr_assert(lt(dbl, fabs(folded / full - 1), 0.01), "full %g s, folded %g s", full, folded);
    cr_assert(lt(dbl, fabs(rb.exposed_dim_s[MDL_DIM_TP] / ra.exposed_dim_s[MDL_DIM_TP] - 1), 0.01));
    cr_assert(lt(dbl, fabs(rb.exposed_dim_s[MDL_DIM_DP] / ra.exposed_dim_s[MDL_DIM_DP] - 1), 0.01));
    cr_assert(gt(dbl, ra.exposed_dim_s[MDL_DIM_DP], 0));
    cr_assert(lt(dbl, fabs(rb.model_flop / ra.model_flop - 1), 1e-12));
    done(&a, &ra);
    done(&b, &rb);
}

/* A scenario simulated in memory (validate e2e's path) reports as `run` does: a folded job's
 * iteration, and its chunk's exposed TP collectives as theirs in the breakdown, not as compute. */
Test(job, a_scenario_simulated_in_memory_reports_its_folded_collectives_as_run_does)
{
    struct pipeline_job a;
    struct report ra, rb;
    double t = run(TPSIM_SOURCE_DIR "/tests/data/good/job-32.yaml", 1, -1, &a, &ra);
    struct tps_error err = {0};
    cr_assert(eq(int, pipeline_simulate_scenario(&a.scn, &rb, &err), 0), "%s", err.msg);
    cr_assert(eq(dbl, rb.iteration_s, t));
    cr_assert(gt(dbl, ra.breakdown.comm_s[MDL_DIM_TP], 0));
    cr_assert(eq(dbl, rb.breakdown.comm_s[MDL_DIM_TP], ra.breakdown.comm_s[MDL_DIM_TP]));
    cr_assert(eq(dbl, rb.breakdown.compute_s, ra.breakdown.compute_s));
    cr_assert(eq(dbl, rb.exposed_dim_s[MDL_DIM_TP], ra.exposed_dim_s[MDL_DIM_TP]));
    report_release(&rb);
    done(&a, &ra);
}

/* Point-to-point ops a shadow GPU of the program keeps, -1 when no GPU is a shadow. */
static int shadow_p2p(const struct mdl_program *p)
{
    for (int r = 0; p->shadow && r < p->nranks; r++) {
        if (!p->shadow[r]) continue;
        int n = 0;
        for (int i = 0; i < p->ranks[r].nops; i++)
            n += p->ranks[r].ops[i].kind == MDL_OP_SEND_RECV;
        return n;
    }
    return -1;
}

Test(job, folded_replicas_mirror_the_traffic_they_share_within_two_percent)
{
    /* two NICs: each replica has its own; one NIC: two replicas' messages meet on it, and so do
     * the data-parallel rings of both stages, which the mirrored replicas run 1.8% faster than
     * replicas in full (docs/jobs.md) */
    const char *paths[] = {TPSIM_SOURCE_DIR "/tests/data/good/job-32.yaml",
                           TPSIM_SOURCE_DIR "/tests/data/good/job-32-nic.yaml"};
    for (int k = 0; k < 2; k++) {
        struct pipeline_job a, b, c;
        struct report ra, rb, rc;
        double full = run(paths[k], 0, -1, &a, &ra);
        double folded = run(paths[k], 1, -1, &b, &rb);
        /* the same folded layers with every replica in full */
        load(paths[k], 1, &c);
        c.full_replicas = 1;
        simulate(&c, &rc);
        cr_assert(eq(ptr, c.prog.shadow, NULL));
        cr_assert(eq(int, shadow_p2p(&b.prog), k == 0 ? 0 : 2 * 8), "k %d", k);
        cr_assert(ne(ptr, strstr(b.folding, k == 0 ? "over replicas" : "shares links"), NULL), "%s",
                  b.folding);
        cr_assert(lt(dbl, fabs(folded / full - 1), 0.02), "full %g s, folded %g s", full, folded);
        cr_assert(lt(dbl, fabs(folded / rc.iteration_s - 1), 0.02), "%g vs %g", folded,
                  rc.iteration_s);
        cr_assert(lt(dbl, fabs(rb.compute_s / rc.compute_s - 1), 1e-9));
        cr_assert(lt(dbl, fabs(rb.hardware_flop / rc.hardware_flop - 1), 1e-9));
        cr_assert(eq(int, rb.nranks, 32));
        done(&a, &ra);
        done(&b, &rb);
        done(&c, &rc);
    }
}

Test(job, overlapped_buckets_hide_part_of_the_data_parallel_time)
{
    const char *path = TPSIM_SOURCE_DIR "/tests/data/good/job-32-overlap.yaml";
    struct pipeline_job a, b, c;
    struct report ra, rb, rc;
    double full = run(path, 0, -1, &a, &ra);
    double folded = run(path, 1, -1, &b, &rb);
    cr_assert(lt(dbl, fabs(folded / full - 1), 0.01), "full %g s, folded %g s", full, folded);
    /* the same job without overlap: everything after the backward */
    load(path, 0, &c);
    c.scn.job.overlap_grad_reduce = c.scn.job.overlap_param_gather = false;
    simulate(&c, &rc);
    cr_assert(lt(dbl, full, rc.iteration_s * 0.99), "overlap %g s, after the backward %g s", full,
              rc.iteration_s);
    cr_assert(lt(dbl, ra.exposed_dim_s[MDL_DIM_DP], rc.exposed_dim_s[MDL_DIM_DP]));
    /* the data-parallel traffic is the same, only its time moves */
    cr_assert(lt(dbl, fabs(ra.bytes_sent / rc.bytes_sent - 1), 1e-9), "%g vs %g", ra.bytes_sent,
              rc.bytes_sent);
    done(&a, &ra);
    done(&b, &rb);
    done(&c, &rc);
}

/* ZeRO-1, 2 and 3 on machines whose NICs replicas share: folded layers and replicas within 1% of
 * op by op, and each stage's extra per-micro-batch traffic costs time (ZeRO-1 < 2 < 3 on this
 * fabric). */
Test(job, zero_stages_fold_within_one_percent_and_pay_for_their_traffic)
{
    const char *path = TPSIM_SOURCE_DIR "/tests/data/good/job-32.yaml";
    double prev = 0, bytes[4] = {0};
    for (int z = 1; z <= 3; z++) {
        struct pipeline_job a, b;
        struct report ra, rb;
        double full = simulate_as(path, 0, z, -1, &a, &ra);
        double folded = simulate_as(path, 1, z, -1, &b, &rb);
        cr_assert(ne(ptr, b.prog.shadow, NULL), "replicas folded");
        cr_assert(lt(dbl, fabs(folded / full - 1), 0.01), "zero %d: full %g s, folded %g s", z,
                  full, folded);
        cr_assert(gt(dbl, full, prev * 1.02), "zero %d: %g s after %g s", z, full, prev);
        prev = full;
        bytes[z] = ra.bytes_sent;
        done(&a, &ra);
        done(&b, &rb);
    }
    /* 1.45 since sequence parallelism's backward re-gathers joined the TP traffic in both */
    cr_assert(gt(dbl, bytes[2], bytes[1] * 1.4), "every micro-batch reduce-scatters");
    cr_assert(gt(dbl, bytes[3], bytes[2] * 1.2), "and gathers twice (TP traffic is in both)");
}

/* The report's breakdown by parallel dimension (the op's dim, never its stream): every byte a GPU
 * sends is some dimension's but the gradient norm's few; a 1F1B job with TP, PP and DP uses those
 * three and no other; the bubble is what compute and the non-pipeline dimensions leave; ZeRO-3's
 * parameter gathers are data-parallel traffic (the TP traffic stays the same). */
Test(job, the_breakdown_by_dimension_adds_up_and_counts_zero3_gathers_as_dp)
{
    const char *path = TPSIM_SOURCE_DIR "/tests/data/good/job-32.yaml";
    struct pipeline_job a, b;
    struct report ra, rb;
    simulate_as(path, 0, 1, -1, &a, &ra);
    simulate_as(path, 0, 3, -1, &b, &rb);
    for (int z = 0; z < 2; z++) {
        const struct report *r = z ? &rb : &ra;
        double sum = 0;
        for (int d = 0; d < MDL_NDIMS; d++) {
            sum += r->bytes_dim[d];
            /* each is part of the exposed time (they may overlap one another) */
            cr_assert(le(dbl, r->exposed_dim_s[d], r->exposed_comm_s * 1.000001 + 1e-12));
        }
        cr_assert(le(dbl, sum, r->bytes_sent), "%g of %g", sum, r->bytes_sent);
        cr_assert(lt(dbl, r->bytes_sent - sum, 1e3), "only the norm's bytes are no dimension's");
        cr_assert(eq(int, r->dim_used[MDL_DIM_TP], 1));
        cr_assert(eq(int, r->dim_used[MDL_DIM_PP], 1));
        cr_assert(eq(int, r->dim_used[MDL_DIM_DP], 1));
        cr_assert(eq(int, r->dim_used[MDL_DIM_CP] + r->dim_used[MDL_DIM_EP], 0));
        cr_assert(gt(dbl, r->exposed_dim_s[MDL_DIM_PP], 0));
        /* the bubble leaves out the exposed TP and DP time as one union: two exposed at once
         * count once, so the bubble is never negative */
        double tp = r->exposed_dim_s[MDL_DIM_TP], dp = r->exposed_dim_s[MDL_DIM_DP];
        cr_assert(le(dbl, r->exposed_non_pp_s, (tp + dp) * (1 + 1e-12)));
        cr_assert(ge(dbl, r->exposed_non_pp_s, (tp > dp ? tp : dp) * (1 - 1e-12)));
        /* the bubble is what the breakdown's other parts leave of the iteration: compute, the
         * exposed TP and DP time, the waits for the host's launches */
        const struct report_breakdown *bd = &r->breakdown;
        double parts = bd->compute_s + bd->host_wait_s;
        for (int d = 0; d < MDL_NDIMS; d++)
            parts += bd->comm_s[d];
        cr_assert(eq(dbl, bd->comm_s[MDL_DIM_PP], 0));
        cr_assert(lt(dbl, fabs(r->pipeline_bubble_s - (r->iteration_s - parts)), 1e-12));
        cr_assert(eq(dbl, r->pipeline_bubble_s, bd->rest_s));
        cr_assert(ge(dbl, r->pipeline_bubble_s, 0));
        /* compute and the exposed non-pipeline time as the report counts them, less the
         * chunks' host waits the breakdown takes out of compute */
        cr_assert(le(dbl, r->pipeline_bubble_s,
                     (r->iteration_s - r->compute_s - r->exposed_non_pp_s) * (1 + 1e-12)));
    }
    cr_assert(lt(dbl, fabs(rb.bytes_dim[MDL_DIM_TP] / ra.bytes_dim[MDL_DIM_TP] - 1), 1e-9));
    cr_assert(gt(dbl, rb.bytes_dim[MDL_DIM_DP], ra.bytes_dim[MDL_DIM_DP] * 1.4), "%g vs %g",
              rb.bytes_dim[MDL_DIM_DP], ra.bytes_dim[MDL_DIM_DP]);
    done(&a, &ra);
    done(&b, &rb);
}

/* A rank order that puts TP groups across machines (dp-tp-pp: every replica's TP ring crosses
 * the shared NICs): the fold runs every replica's TP group of the stage at once and matches the
 * op-by-op job within 1%; TP groups of different stages meeting on links (pp-dp-tp) are flagged
 * as an inexact fold. */
Test(job, rank_orders_move_the_groups_and_the_fold_follows)
{
    const char *path = TPSIM_SOURCE_DIR "/tests/data/good/job-32.yaml";
    struct pipeline_job a, b, c, d;
    struct report ra, rb, rc, rd;
    double megatron = run(path, 0, -1, &a, &ra);
    double full = simulate_as(path, 0, -1, MDL_ORDER_DP_TP_PP, &b, &rb);
    double folded = simulate_as(path, 1, -1, MDL_ORDER_DP_TP_PP, &c, &rc);
    cr_assert(gt(dbl, full, megatron * 1.5), "TP over NICs: %g s against %g s", full, megatron);
    cr_assert(lt(dbl, fabs(folded / full - 1), 0.01), "full %g s, folded %g s", full, folded);
    cr_assert(eq(int, c.fold.inexact, 0));
    simulate_as(path, 1, -1, MDL_ORDER_PP_DP_TP, &d, &rd);
    cr_assert(eq(int, d.fold.inexact, 1));
    cr_assert(ne(ptr, strstr(d.folding, "inexact"), NULL), "%s", d.folding);
    done(&a, &ra);
    done(&b, &rb);
    done(&c, &rc);
    done(&d, &rd);
}

Test(job, one_f_one_b_and_gpipe_take_m_plus_p_minus_1_steps)
{
    struct pipeline_job j;
    struct report r;
    for (int sched = MDL_SCHED_1F1B; sched <= MDL_SCHED_GPIPE; sched++) {
        double t = run(TPSIM_SOURCE_DIR "/tests/data/good/job-pipe.yaml", 1, sched, &j, &r);
        double step = j.fold.fwd_s + j.fold.bwd_s, p = 4, m = 8, tail = 0;
        for (int i = 0; i < j.prog.ranks[0].nops; i++) /* zeroing, norm, optimizer */
            if (j.prog.ranks[0].ops[i].phase == MDL_PHASE_OTHER &&
                j.prog.ranks[0].ops[i].stream == MDL_STREAM_COMPUTE)
                tail += j.prog.ranks[0].ops[i].dur_s;
        /* what remains beyond the closed form is the stages' transfers of 4 MiB, each as long
         * as one alone: Megatron-LM's calls block, and between two steps of the same direction
         * one sends and then receives, so up to four per step lie on the critical path */
        struct pipeline_coll_how how = {0};
        double xfer;
        struct tps_error err = {0};
        cr_assert(eq(int,
                     pipeline_collective(j.topo, MDL_OP_SEND_RECV, 2, 2.0 * 1024 * 1024 * 2, &how,
                                         &xfer, &err),
                     0),
                  "%s", err.msg);
        double lo = (m + p - 1) * step + tail, hi = lo + 4 * (m + p - 1) * xfer;
        cr_assert(gt(dbl, t, lo), "%g <= %g", t, lo);
        cr_assert(lt(dbl, t, hi), "%g >= %g", t, hi);
        /* the bubble is the (p - 1) steps of fill and drain, and the transfers */
        double bub = (p - 1) * step;
        cr_assert(gt(dbl, r.pipeline_bubble_s, bub), "%g vs %g", r.pipeline_bubble_s, bub);
        cr_assert(lt(dbl, r.pipeline_bubble_s, bub + 4 * (m + p - 1) * xfer), "%g vs %g",
                  r.pipeline_bubble_s, bub);
        report_release(&r);
        pipeline_release(&j);
    }
}

Test(job, interleaving_shrinks_the_bubble_by_the_virtual_stages)
{
    struct pipeline_job a, b;
    struct report ra, rb;
    double plain =
        run(TPSIM_SOURCE_DIR "/tests/data/good/job-pipe.yaml", 1, MDL_SCHED_1F1B, &a, &ra);
    /* two chunks of one layer per stage instead of one of two */
    struct tps_error err = {0};
    memset(&b, 0, sizeof b);
    cr_assert(
        eq(int, scn_load(TPSIM_SOURCE_DIR "/tests/data/good/job-pipe.yaml", &b.scn, &err), 0));
    b.scn.job.schedule = MDL_SCHED_INTERLEAVED;
    b.scn.job.virtual_stages = 2;
    b.topo = &b.scn.topo;
    cr_assert(eq(int, pipeline_lower_job(&b, &err), 0), "%s", err.msg);
    cr_assert(eq(int, pipeline_simulate(&b, NULL, &rb, &err), 0), "%s", err.msg);
    double step = b.fold.fwd_s + b.fold.bwd_s, p = 4;
    /* the fill and drain are (p - 1) chunk steps of half the layers: half 1F1B's */
    cr_assert(gt(dbl, rb.pipeline_bubble_s, (p - 1) * step), "%g", rb.pipeline_bubble_s);
    cr_assert(lt(dbl, rb.pipeline_bubble_s, 0.75 * ra.pipeline_bubble_s), "%g vs %g",
              rb.pipeline_bubble_s, ra.pipeline_bubble_s);
    cr_assert(lt(dbl, rb.iteration_s, plain));
    done(&a, &ra);
    done(&b, &rb);
}

/* job-pipe (every op replayed) without and with a point-to-point switch (set), interleaved over 2
 * chunks a stage or not: the switch shortens the iteration and leaves the compute as it was. */
static void p2p_switch_both(bool interleaved, void (*set)(struct mdl_job *),
                            struct pipeline_job j[2], struct report r[2])
{
    for (int o = 0; o < 2; o++) {
        load(TPSIM_SOURCE_DIR "/tests/data/good/job-pipe.yaml", 0, &j[o]);
        if (interleaved) {
            j[o].scn.job.schedule = MDL_SCHED_INTERLEAVED;
            j[o].scn.job.virtual_stages = 2;
        }
        if (o) set(&j[o].scn.job);
        simulate(&j[o], &r[o]);
    }
    cr_assert(lt(dbl, r[1].iteration_s, r[0].iteration_s), "%g vs %g", r[1].iteration_s,
              r[0].iteration_s);
    cr_assert(lt(dbl, fabs(r[1].compute_s - r[0].compute_s), 1e-12 * r[0].compute_s));
}

static void no_sync(struct mdl_job *j)
{
    j->batch_p2p_nosync = true;
}

static void overlap_p2p(struct mdl_job *j)
{
    j->overlap_p2p_comm = true;
}

/* pipeline.batch_p2p_sync: false: the batched calls no longer synchronize the device, so the
 * host need not launch each step's first kernels after the call's messages are done: less time
 * waiting for the host, a shorter iteration, the same compute. */
Test(job, batched_calls_without_the_synchronize_keep_the_host_ahead)
{
    struct pipeline_job j[2];
    struct report r[2];
    p2p_switch_both(false, no_sync, j, r);
    cr_assert(lt(dbl, r[1].breakdown.host_wait_s, r[0].breakdown.host_wait_s), "%g vs %g",
              r[1].breakdown.host_wait_s, r[0].breakdown.host_wait_s);
    for (int o = 0; o < 2; o++)
        done(&j[o], &r[o]);
}

/* Megatron-LM's overlapped point-to-point communication on the interleaved schedule: the
 * messages of one direction fly under the other direction's step and no call synchronizes the
 * device, so the same job, every op replayed, takes less time and less of it is exposed PP; the
 * compute is the same. */
Test(job, overlapped_point_to_point_hides_messages_of_the_interleaved_schedule)
{
    struct pipeline_job j[2];
    struct report r[2];
    p2p_switch_both(true, overlap_p2p, j, r);
    double *pp[2] = {&r[0].exposed_dim_s[MDL_DIM_PP], &r[1].exposed_dim_s[MDL_DIM_PP]};
    cr_assert(lt(dbl, *pp[1], *pp[0]), "%g vs %g", *pp[1], *pp[0]);
    for (int o = 0; o < 2; o++)
        done(&j[o], &r[o]);
}

/* Context parallelism in a whole job: the folded job (a chunk's ring attention simulated once,
 * CP ranks 1.. mirroring CP rank 0) within one percent of every op replayed, the CP exchanges
 * counted as CP in both, and the bytes the closed form gives. */
Test(job, context_parallel_jobs_fold_within_one_percent_and_report_cp)
{
    const char *path = TPSIM_SOURCE_DIR "/tests/data/good/cp-job.yaml";
    struct pipeline_job a, b;
    struct report ra, rb;
    double full = simulate_as(path, 0, -1, -1, &a, &ra);
    double folded = simulate_as(path, 1, -1, -1, &b, &rb);
    cr_assert(lt(dbl, fabs(folded / full - 1), 0.01), "folded %.6g s, op by op %.6g s", folded,
              full);
    cr_assert(ne(int, b.prog.shadow != NULL, 0), "the CP ranks and replicas are shadows");
    for (int k = 0; k < 2; k++) {
        const struct report *r = k ? &rb : &ra;
        cr_assert(ne(int, r->dim_used[MDL_DIM_CP], 0));
        /* 4 layers over 2 stages, 4 micro-batches a replica: 8 layer passes a GPU */
        double want = 8 * mdl_cp_layer_bytes(&a.scn.strategy, &a.scn.model);
        cr_assert(lt(dbl, fabs(r->bytes_dim[MDL_DIM_CP] / want - 1), 1e-9), "%s: %.6g vs %.6g",
                  k ? "folded" : "op by op", r->bytes_dim[MDL_DIM_CP], want);
    }
    done(&a, &ra);
    done(&b, &rb);
}

#ifndef TPSIM_SANITIZE
/* The figures README.md quotes for the 70B-class job on 1,024 H100 and docs/jobs.md for Llama 3
 * 70B on 512 (memory with Megatron-LM's fp32 main gradients). Not under the sanitizers. */
Test(job, the_70b_jobs_give_the_documented_figures, .timeout = 600)
{
    struct pipeline_job j;
    struct report r;
    double t =
        simulate_as(TPSIM_SOURCE_DIR "/scenarios/job-70b-1024-h100.yaml", -1, -1, -1, &j, &r);
    cr_assert(lt(dbl, fabs(t - 5.07) / 5.07, 1e-3), "%.4f s", t);
    cr_assert(lt(dbl, fabs(r.model_tflops_per_gpu - 340) / 340, 2e-3), "%.1f TFLOP/s",
              r.model_tflops_per_gpu);
    cr_assert(lt(dbl, fabs(j.mem.total / 1e9 - 20.6) / 20.6, 2e-3), "%.2f GB", j.mem.total / 1e9);
    cr_assert(lt(dbl, fabs(r.exposed_dim_s[MDL_DIM_TP] - 0.79) / 0.79, 1e-2), "%.3f s",
              r.exposed_dim_s[MDL_DIM_TP]);
    cr_assert(lt(dbl, fabs(r.exposed_dim_s[MDL_DIM_DP] - 0.14) / 0.14, 5e-2), "%.3f s",
              r.exposed_dim_s[MDL_DIM_DP]);
    cr_assert(lt(dbl, fabs(r.exposed_dim_s[MDL_DIM_PP] - 0.35) / 0.35, 2e-2), "%.3f s",
              r.exposed_dim_s[MDL_DIM_PP]);
    cr_assert(lt(dbl, fabs(r.pipeline_bubble_s - 0.38) / 0.38, 2e-2), "%.3f s",
              r.pipeline_bubble_s);
    done(&j, &r);
    t = simulate_as(TPSIM_SOURCE_DIR "/scenarios/job-llama3-70b-512-h100.yaml", -1, -1, -1, &j, &r);
    cr_assert(lt(dbl, fabs(t - 4.35284) / 4.35284, 1e-5), "%.6f s", t);
    cr_assert(lt(dbl, fabs(r.model_tflops_per_gpu - 423) / 423, 2e-3), "%.1f TFLOP/s",
              r.model_tflops_per_gpu);
    cr_assert(lt(dbl, fabs(j.mem.total / 1e9 - 23.0) / 23.0, 2e-3), "%.2f GB", j.mem.total / 1e9);
    done(&j, &r);
}

/* docs/jobs.md, "The same job on other hardware": the Llama 3 70B job of 512 GPUs on H200, B200
 * and GB200 NVL72 racks (iteration, model TFLOP/s per GPU, exposed communication, bubble). */
Test(job, the_llama3_70b_job_on_h200_b200_and_gb200_gives_the_documented_figures, .timeout = 300)
{
    static const struct {
        const char *v;
        double t, tf, exposed, bubble;
    } rows[] = {{"h200", 4.30702, 427, 1.563, 0.534},
                {"b200", 2.33899, 787, 0.992, 0.347},
                {"gb200", 2.25274, 817, 0.907, 0.386}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/scenarios/job-llama3-70b-512-%s.yaml", TPSIM_SOURCE_DIR,
                 rows[i].v);
        struct pipeline_job j;
        struct report r;
        double t = simulate_as(path, -1, -1, -1, &j, &r);
        cr_assert(lt(dbl, fabs(t - rows[i].t) / rows[i].t, 1e-5), "%s: %.6f s", rows[i].v, t);
        cr_assert(lt(dbl, fabs(r.model_tflops_per_gpu - rows[i].tf) / rows[i].tf, 2e-3),
                  "%s: %.1f TFLOP/s", rows[i].v, r.model_tflops_per_gpu);
        cr_assert(lt(dbl, fabs(r.exposed_comm_s - rows[i].exposed) / rows[i].exposed, 2e-3),
                  "%s: %.4f s exposed", rows[i].v, r.exposed_comm_s);
        cr_assert(lt(dbl, fabs(r.pipeline_bubble_s - rows[i].bubble) / rows[i].bubble, 2e-3),
                  "%s: %.4f s bubble", rows[i].v, r.pipeline_bubble_s);
        done(&j, &r);
    }
}

/* The figures README.md quotes for Llama 3 405B on 16,384 H100 (TP 8, CP 16, PP 16 interleaved,
 * DP 8, 131,072 tokens, 126 layers over uneven stages). Not under the sanitizers: 16,384 GPUs
 * take tens of minutes there. */
Test(job, llama3_405b_on_16384_gpus_gives_the_documented_figures, .timeout = 900)
{
    struct pipeline_job j;
    struct report r;
    double t = simulate_as(TPSIM_SOURCE_DIR "/scenarios/job-llama3-405b-16k-h100.yaml", -1, -1, -1,
                           &j, &r);
    double tf = r.model_tflops_per_gpu;
    cr_assert(lt(dbl, fabs(t - 13.82) / 13.82, 5e-4), "%.4f s", t);
    cr_assert(lt(dbl, fabs(tf - 420) / 420, 2e-3), "%.1f TFLOP/s", tf);
    cr_assert(lt(dbl, fabs(r.pipeline_bubble_s - 2.62) / 2.62, 2e-3), "%.3f s",
              r.pipeline_bubble_s);
    cr_assert(lt(dbl, fabs(j.mem.total / 1e9 - 91.9) / 91.9, 1e-3), "%.2f GB", j.mem.total / 1e9);
    cr_assert(lt(dbl, fabs(j.mem.activations / 1e9 - 72.5) / 72.5, 1e-3), "%.2f GB",
              j.mem.activations / 1e9);
    cr_assert(lt(dbl, fabs(j.mem.gradients / 1e9 - 12.8) / 12.8, 5e-3), "%.2f GB",
              j.mem.gradients / 1e9);
    done(&j, &r);
}
#endif

/* Ops of rank r named `name` and the size of the group of the last of them. */
static int named_ops(const struct mdl_program *p, int r, const char *name, int *group_n)
{
    int n = 0;
    for (int i = 0; i < p->ranks[r].nops; i++) {
        const struct mdl_op *o = &p->ranks[r].ops[i];
        if (strcmp(p->names[o->name], name)) continue;
        n++;
        *group_n = o->group >= 0 ? p->groups[o->group].n : 0;
    }
    return n;
}

Test(job, a_mixture_of_experts_folds_as_it_runs_op_by_op)
{
    /* Mixtral 8x7B cut to 4 layers on 16 GPUs (TP 2, EP 4, PP 2, DP 4): the folded layers (on
     * the first two replicas, which hold whole EP groups) against every all-to-all replayed in
     * the job; the experts' gradients reduced over their 2 expert replicas, the dense ones over
     * the 4 data-parallel replicas */
    struct pipeline_job a, b;
    struct report ra, rb;
    double full = run(TPSIM_SOURCE_DIR "/tests/data/good/moe-job.yaml", 0, -1, &a, &ra);
    double folded = run(TPSIM_SOURCE_DIR "/tests/data/good/moe-job.yaml", 1, -1, &b, &rb);
    cr_assert(lt(dbl, fabs(folded / full - 1), 0.01), "full %g s, folded %g s", full, folded);
    cr_assert(gt(dbl, ra.exposed_dim_s[MDL_DIM_EP], 0));
    cr_assert(lt(dbl, fabs(rb.exposed_dim_s[MDL_DIM_EP] / ra.exposed_dim_s[MDL_DIM_EP] - 1), 0.01));
    cr_assert(lt(dbl, fabs(rb.bytes_dim[MDL_DIM_EP] / ra.bytes_dim[MDL_DIM_EP] - 1), 1e-9));
    int gn = 0;
    cr_assert(eq(int, named_ops(&a.prog, 0, "rs_expert_grads_dp", &gn), 1));
    cr_assert(eq(int, gn, 2));
    cr_assert(eq(int, named_ops(&a.prog, 0, "rs_grads_dp", &gn), 1));
    cr_assert(eq(int, gn, 4));
    cr_assert(gt(int, named_ops(&a.prog, 0, "a2a_dispatch", &gn), 0));
    cr_assert(eq(int, gn, 4));
    cr_assert(lt(dbl, fabs(rb.model_flop / ra.model_flop - 1), 1e-12));
    done(&a, &ra);
    done(&b, &rb);
}

Test(job, skewed_routing_is_slower_and_the_report_names_the_straggler)
{
    /* one layer group pair on one machine: balanced, then expert 5 taking half the copies (EP
     * rank 2 of 4: GPUs 2 of the plain run); the others wait for it at the combine */
    struct pipeline_job a, b;
    struct report ra, rb;
    double even = run(TPSIM_SOURCE_DIR "/tests/data/good/moe-layer.yaml", -1, -1, &a, &ra);
    load(TPSIM_SOURCE_DIR "/tests/data/good/moe-layer.yaml", -1, &b);
    for (int e = 0; e < 8; e++)
        b.scn.model.moe.share[e] = e == 5 ? 0.5f : 0.5f / 7;
    b.scn.model.moe.skewed = true;
    double skew = simulate(&b, &rb);
    cr_assert(gt(dbl, skew, 1.2 * even), "balanced %g s, skewed %g s", even, skew);
    cr_assert(eq(dbl, ra.ep_wait_s, 0));
    cr_assert(gt(dbl, rb.ep_wait_s, 0.1 * (skew - even)));
    cr_assert(eq(int, rb.ep_straggler, 2));
    cr_assert(ne(int, rb.ep_waiter, 2));
    done(&a, &ra);
    done(&b, &rb);
}

#ifndef TPSIM_SANITIZE
/* The figures docs/moe.md quotes for Mixtral 8x22B on 256 H100 (NeMo's recipe shape: TP 2, CP 2,
 * PP 4 interleaved x14, EP 8, DP 16). */
Test(job, mixtral_8x22b_on_256_gpus_gives_the_documented_figures)
{
    struct pipeline_job j;
    struct report r;
    double t = simulate_as(TPSIM_SOURCE_DIR "/scenarios/job-mixtral-8x22b-ep8-256-h100.yaml", -1,
                           -1, -1, &j, &r);
    cr_assert(lt(dbl, fabs(t - 4.9361) / 4.9361, 5e-4), "%.4f s", t);
    cr_assert(lt(dbl, fabs(r.model_tflops_per_gpu - 416.0) / 416.0, 1e-3), "%.1f TFLOP/s",
              r.model_tflops_per_gpu);
    cr_assert(lt(dbl, fabs(r.exposed_dim_s[MDL_DIM_EP] - 0.634) / 0.634, 2e-3), "%.3f s",
              r.exposed_dim_s[MDL_DIM_EP]);
    cr_assert(lt(dbl, fabs(r.bytes_dim[MDL_DIM_EP] / 1e9 - 39.46) / 39.46, 1e-3), "%.2f GB",
              r.bytes_dim[MDL_DIM_EP] / 1e9);
    cr_assert(lt(dbl, fabs(j.mem.total / 1e9 - 45.4) / 45.4, 2e-3), "%.2f GB", j.mem.total / 1e9);
    done(&j, &r);
}
#endif

Test(job, auto_folding_weighs_each_op_by_the_gpus_of_its_group)
{
    /* one micro-batch: the count from the stage templates is exact, so it equals the op-by-op
     * program's, op for op */
    struct pipeline_job j;
    struct report r = {0};
    struct tps_error err = {0};
    load(TPSIM_SOURCE_DIR "/tests/data/good/job-dp128.yaml", -1, &j);
    const struct scn_scenario *s = &j.scn;
    double ops = mdl_job_ops(&s->job, &s->strategy, &s->model, &s->device, &s->framework, NULL);
    double cost = mdl_job_cost(&s->job, &s->strategy, &s->model, &s->device, &s->framework, NULL);
    struct mdl_program p;
    cr_assert(eq(int,
                 mdl_job_lower(&s->job, &s->strategy, &s->model, &s->device, &s->framework, NULL,
                               MDL_REPLICAS_FULL, &p, &err),
                 0),
              "%s", err.msg);
    double n = 0, members = 0;
    for (int k = 0; k < p.nranks; k++)
        for (int i = 0; i < p.ranks[k].nops; i++) {
            int g = p.ranks[k].ops[i].group;
            n += 1;
            members += g >= 0 ? p.groups[g].n : 1;
        }
    mdl_program_release(&p);
    cr_assert(eq(dbl, ops, n));
    cr_assert(eq(dbl, cost, members));
    /* under a million ops, but the 128-member collectives make it cost more than a million */
    cr_assert(lt(dbl, ops, 1e6));
    cr_assert(gt(dbl, cost, 1e6));
    simulate(&j, &r);
    cr_assert(ne(ptr, strstr(j.folding, "layers:"), NULL), "auto did not fold: '%s'", j.folding);
    done(&j, &r);
}

/* FP8's amax all-reduce after every chunk's forward and backward holds the compute: over the
 * stage's tp x dp GPUs it takes longer than over the TP group alone (tp_only_amax_red), and the
 * iteration with it is longer by that, the compute the same. */
Test(job, fp8_amax_reductions_hold_the_compute_longer_over_a_larger_group)
{
    struct pipeline_job j[2];
    struct report r[2];
    for (int o = 0; o < 2; o++) {
        load(TPSIM_SOURCE_DIR "/tests/data/good/plan-fp8.yaml", 1, &j[o]);
        j[o].scn.job.tp_only_amax_red = o;
        simulate(&j[o], &r[o]);
    }
    cr_assert(gt(dbl, r[0].iteration_s, r[1].iteration_s), "%g vs %g", r[0].iteration_s,
              r[1].iteration_s);
    cr_assert(lt(dbl, fabs(r[1].compute_s - r[0].compute_s), 1e-12 * r[0].compute_s));
    for (int o = 0; o < 2; o++)
        done(&j[o], &r[o]);
}
