/* test_engine.c - SimGrid replay against closed forms: ring collectives uncontended and on a
 * shared root complex, simulated bytes equal to the 1D volume formula, trace replay equal to the
 * direct run, overlap from the schedule, and SimGrid failures turned into errors. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/strategy.h"
#include "platforms/spec.h"
#include "core/tune.h"
#include "sim/engine.h"
#include "pipeline/pipeline.h"
#include "pipeline/planner.h"
#include "core/report.h"
#include "core/trace.h"
#include "datasheet.h"
#include "tests/testdir.h"

static void setup(void)
{
    gsl_set_error_handler_off();
}

TestSuite(engine, .init = setup, .timeout = 300 * TPSIM_TIMEOUT_SCALE);

/* The DGX presets with their datasheet NVLink (datasheet.h) and NCCL's default protocols: the
 * closed forms below are written with those numbers. */
static void platform(const char *name, int nkv, char **kv, struct plat_topo *t)
{
    struct tps_error err = {0};
    char *all[16];
    int n = 0;
    for (int i = 0; i < nkv && n < 14; i++)
        all[n++] = kv[i];
    n += datasheet_kv(name, (const char **)all + n);
    cr_assert(eq(int, plat_spec_from_args(name, n, all, t, &err), 0), "%s", err.msg);
    mdl_nccl_default(&t->nccl);
    /* these tests check the plain per-step ring: no protocol latencies, no tuner */
    t->nccl.algo = MDL_ALGO_RING;
    t->nccl.proto = MDL_PROTO_SIMPLE;
    t->nccl.gran = MDL_GRAN_STEP;
    t->nccl.base_s[MDL_PROTO_SIMPLE] = t->nccl.hop_s[MDL_PROTO_SIMPLE] = 0;
}

/* GPT-3 1.3B with micro-batch b on A100s of `nodes` DGX A100 machines (plain ring, Simple, no
 * protocol latency: platform() above). */
static void gpt_on_a100(int nodes, long b, struct plat_topo *t, struct mdl_model *m,
                        struct mdl_device *dev)
{
    char arg[32];
    snprintf(arg, sizeof arg, "nodes=%d", nodes);
    char *kv[] = {arg};
    platform("dgx-a100", 1, kv, t);
    mdl_model_preset("gpt3-1.3b", m);
    m->micro_batch = b;
    mdl_device_preset("A100-80GB", dev);
}

/* A collective op of kind k on stream `stream`, group g, `bytes` in all, named nm. */
static struct mdl_op coll_op(enum mdl_op_kind k, int stream, int nm, int g, double bytes)
{
    return (struct mdl_op){.kind = (uint8_t)k,
                           .stream = (uint8_t)stream,
                           .name = nm,
                           .layer = -1,
                           .mb = -1,
                           .group = g,
                           .bytes = bytes};
}

/* Simulated time of one collective over GPUs 0..n-1, rooted at member `root` (a broadcast or a
 * reduce); *sent0 receives rank 0's bytes sent and end[r] rank r's end (each when not NULL). */
static double collective_at(const struct plat_topo *t, enum mdl_op_kind k, int n, double bytes,
                            int root, double *sent0, double *end)
{
    struct mdl_program p;
    mdl_program_init(&p, n);
    int ranks[64];
    for (int r = 0; r < n; r++)
        ranks[r] = r;
    int g = mdl_program_group(&p, n, ranks), nm = mdl_program_name(&p, "c");
    for (int r = 0; r < n; r++) {
        struct mdl_op op = coll_op(k, 1, nm, g, bytes);
        op.root = (uint16_t)root;
        mdl_program_add(&p, r, &op);
    }
    struct timing st;
    struct tps_error err = {0};
    cr_assert(eq(int, pipeline_run_program(&p, t, &st, &err), 0), "%s", err.msg);
    double total = st.end_s;
    if (sent0) *sent0 = st.bytes_sent[0];
    for (int r = 0; end && r < n; r++)
        end[r] = timing_op(&st, r, 0)->end;
    timing_release(&st);
    mdl_program_release(&p);
    return total;
}

static double one_collective(const struct plat_topo *t, enum mdl_op_kind k, int n, double bytes,
                             double *sent0)
{
    return collective_at(t, k, n, bytes, 0, sent0, NULL);
}

static void assert_rel(double got, double expect, double tol, const char *what)
{
    cr_assert(le(dbl, fabs(got - expect) / expect, tol), "%s: simulated %.17g, formula %.17g", what,
              got, expect);
}

Test(engine, ring_all_reduce_uncontended_matches_closed_form)
{
    struct plat_topo t;
    platform("dgx-a100", 0, NULL, &t);
    const double B = 300e9, alpha = 2 * 1.5e-6; /* two NVSwitch links per route */
    const double sizes[] = {1048576.0, 256.0 * 1048576, 1e9};
    for (int n = 2; n <= 8; n *= 2) {
        for (int i = 0; i < 3; i++) {
            double S = sizes[i] * n; /* divisible by n: no rounding of chunks */
            double expect = 2.0 * (n - 1) / n * S / B + 2.0 * (n - 1) * alpha;
            assert_rel(one_collective(&t, MDL_OP_ALL_REDUCE, n, S, NULL), expect, 1e-9,
                       "all_reduce");
        }
    }
    plat_topo_release(&t);
}

Test(engine, ring_all_gather_and_reduce_scatter_match_closed_form)
{
    struct plat_topo t;
    platform("dgx-h100", 0, NULL, &t);
    const double B = 450e9, alpha = 3e-6, S = 8.0 * 64 * 1048576;
    double expect = 7.0 / 8 * S / B + 7 * alpha;
    assert_rel(one_collective(&t, MDL_OP_ALL_GATHER, 8, S, NULL), expect, 1e-9, "all_gather");
    assert_rel(one_collective(&t, MDL_OP_REDUCE_SCATTER, 8, S, NULL), expect, 1e-9,
               "reduce_scatter");
    plat_topo_release(&t);
}

Test(engine, ring_sharing_the_root_complex_is_slower_by_the_shared_link_arithmetic)
{
    /* pcie-8gpu: GPUs 0-3 under switch 0, 4-7 under switch 1. The ring hops 3->4 and 7->0 both
     * cross the root complex, which forwards at one x16 link's rate B: each gets B/2, and the
     * 2(n-1) rounds queue there one after another. Their routes have 4 links of latency, the
     * others 2; the queue pays its own route's latency once, the others hide behind it. */
    struct plat_topo t;
    platform("pcie-8gpu", 0, NULL, &t);
    const int n = 8;
    const double B = 31e9, lat = 1.5e-6, S = n * 32.0 * 1048576;
    double contended = 2.0 * (n - 1) * (S / n) / (B / 2) + 4 * lat;
    double uncontended = 2.0 * (n - 1) / n * S / B + 2.0 * (n - 1) * 2 * lat;
    double sim = one_collective(&t, MDL_OP_ALL_REDUCE, n, S, NULL);
    assert_rel(sim, contended, 1e-9, "contended ring");
    cr_assert(gt(dbl, sim, 1.9 * uncontended));
    /* four GPUs under one switch never touch the root complex: uncontended formula */
    double four = 2.0 * 3 / 4 * S / B + 2.0 * 3 * 2 * lat;
    assert_rel(one_collective(&t, MDL_OP_ALL_REDUCE, 4, S, NULL), four, 1e-9, "one switch");
    plat_topo_release(&t);
}

static void lower(int d, bool sp, bool async, int layers, int mbs, struct mdl_program *p)
{
    struct mdl_model m;
    struct mdl_device dev;
    mdl_model_preset("gpt3-6.7b", &m);
    mdl_device_preset("A100-80GB", &dev);
    struct mdl_strategy st = {
        .kind = MDL_STRAT_1D, .tp = d, .sequence_parallel = sp, .async_grad_allreduce = async};
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, layers, mbs, p, &err), 0), "%s",
              err.msg);
}

Test(engine, simulated_bytes_equal_the_1d_volume_formula)
{
    struct plat_topo t;
    platform("dgx-a100", 0, NULL, &t);
    for (int sp = 0; sp <= 1; sp++) {
        struct mdl_program p;
        lower(8, sp, true, 2, 1, &p);
        struct timing st;
        struct tps_error err = {0};
        cr_assert(eq(int, pipeline_run_program(&p, &t, &st, &err), 0), "%s", err.msg);
        double b = 1, s = 2048, h = 4096, d = 8;
        /* 2 layers, 2-byte bf16; sequence parallelism gathers two inputs again in backward */
        double expect = 2 * (sp ? 10 : 8) * b * s * h * (d - 1) / d * 2;
        for (int r = 0; r < 8; r++)
            cr_assert(eq(dbl, st.bytes_sent[r], expect), "sp=%d rank %d: %.0f", sp, r,
                      st.bytes_sent[r]);
        timing_release(&st);
        mdl_program_release(&p);
    }
    plat_topo_release(&t);
}

/* Simulates p on t; keeps the op times in *keep (NULL: released). */
static double run_program_keep(struct mdl_program *p, const struct plat_topo *t,
                               struct timing *keep)
{
    struct timing st;
    struct tps_error err = {0};
    cr_assert(eq(int, pipeline_run_program(p, t, &st, &err), 0), "%s", err.msg);
    double end = st.end_s;
    if (keep)
        *keep = st;
    else
        timing_release(&st);
    return end;
}

static double run_program(struct mdl_program *p, const struct plat_topo *t)
{
    return run_program_keep(p, t, NULL);
}

/* Bytes one rank of a block mesh sends per layer of GPT-3 1.3B-like shapes (bf16, MHA, ffn 4h),
 * strategies.md section 7: SUMMA 3(q-1)/q^2 (7Th + 12h^2) on its slice's T tokens, Tesseract's
 * weight gradients all-reduced over the depth besides, 3D (q-1)/q (32Th + 24h^2)/q^2; and the
 * four layer norms' statistics (2 fp32 per local token) all-reduced over q ranks. */
static double block_volume(enum mdl_strategy_kind k, double q, double depth, double T, double h)
{
    double f32 = 2, v, local;
    if (k == MDL_STRAT_TP3D) {
        v = (q - 1) / q * (32 * T * h + 24 * h * h) / (q * q);
        local = T / (q * q);
    } else {
        double Ts = T / depth;
        v = 3 * (q - 1) / (q * q) * (7 * Ts * h + 12 * h * h);
        v += 2 * (depth - 1) / depth * 12 * h * h / (q * q);
        local = Ts / q;
    }
    v += 4 * 2 * (q - 1) / q * 2 * f32 * local;
    return 2 * v;
}

Test(engine, block_meshes_send_the_closed_form_volume_per_rank)
{
    struct plat_topo t;
    struct mdl_model m;
    struct mdl_device dev;
    gpt_on_a100(2, 8, &t, &m, &dev);
    const struct {
        enum mdl_strategy_kind kind;
        int tp, depth;
    } cases[] = {{MDL_STRAT_SUMMA2D, 4, 0},
                 {MDL_STRAT_SUMMA2D, 16, 0},
                 {MDL_STRAT_TESSERACT, 8, 2},
                 {MDL_STRAT_TESSERACT, 16, 4},
                 {MDL_STRAT_TP3D, 8, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct mdl_strategy st = {
            .kind = cases[c].kind, .tp = cases[c].tp, .tesseract.depth = cases[c].depth};
        int q, q2;
        mdl_strategy_mesh(&st, &q, &q2);
        struct mdl_program p;
        struct tps_error err = {0};
        cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, 2, 1, &p, &err), 0), "%s",
                  err.msg);
        struct timing tm;
        run_program_keep(&p, &t, &tm);
        double expect =
            2 * block_volume(st.kind, q, st.tesseract.depth > 0 ? st.tesseract.depth : 1,
                             (double)m.micro_batch * m.seq, m.hidden);
        char desc[128];
        mdl_strategy_describe(&st, desc, sizeof desc);
        for (int r = 0; r < st.tp; r++)
            cr_assert(le(dbl, fabs(tm.bytes_sent[r] - expect), 1e-9 * expect),
                      "%s rank %d: sent %.0f, formula %.0f", desc, r, tm.bytes_sent[r], expect);
        timing_release(&tm);
        mdl_program_release(&p);
    }
    plat_topo_release(&t);
}

/* Writes a to a trace, reads it back and checks the replay is the same, op by op. */
static void round_trip(struct mdl_program *a, const struct plat_topo *t)
{
    struct mdl_program b;
    char dir[] = "/tmp/tpsim-replay-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    struct tps_error err = {0};
    cr_assert(eq(int, trace_write(a, "dgx-a100", dir, &err), 0));
    cr_assert(eq(int, trace_read(dir, &b, NULL, 0, &err), 0), "%s", err.msg);
    struct timing sa, sb;
    double ta = run_program_keep(a, t, &sa), tb = run_program_keep(&b, t, &sb);
    cr_assert(eq(dbl, ta, tb));
    for (int r = 0; r < a->nranks; r++)
        for (int i = 0; i < a->ranks[r].nops; i++) {
            cr_assert(eq(int, a->ranks[r].ops[i].root, b.ranks[r].ops[i].root));
            cr_assert(eq(dbl, timing_op(&sa, r, i)->start, timing_op(&sb, r, i)->start));
            cr_assert(eq(dbl, timing_op(&sa, r, i)->end, timing_op(&sb, r, i)->end));
        }
    timing_release(&sa);
    timing_release(&sb);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert(eq(int, system(cmd), 0));
    mdl_program_release(&b);
}

Test(engine, trace_written_then_replayed_equals_the_direct_run)
{
    struct plat_topo t;
    platform("dgx-a100", 0, NULL, &t);
    struct mdl_program a;
    lower(8, true, true, 3, 2, &a);
    round_trip(&a, &t);
    mdl_program_release(&a);
    /* SUMMA's broadcasts and reduces name their roots (group:root in the trace) */
    struct mdl_model m;
    struct mdl_device dev;
    mdl_model_preset("gpt3-1.3b", &m);
    m.micro_batch = 4;
    mdl_device_preset("A100-80GB", &dev);
    struct mdl_strategy st = {.kind = MDL_STRAT_SUMMA2D, .tp = 4};
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, 1, 1, &a, &err), 0), "%s", err.msg);
    round_trip(&a, &t);
    mdl_program_release(&a);
    plat_topo_release(&t);
}

Test(engine, broadcast_starts_and_reduce_ends_at_its_root)
{
    struct plat_topo t;
    platform("dgx-a100", 0, NULL, &t);
    double S = 64 << 20, b[8], r[8], b0[8];
    for (int root = 0; root < 4; root++) {
        double tb = collective_at(&t, MDL_OP_BROADCAST, 4, S, root, NULL, b);
        double tr = collective_at(&t, MDL_OP_REDUCE, 4, S, root, NULL, r);
        collective_at(&t, MDL_OP_BROADCAST, 4, S, 0, NULL, b0);
        /* the chain is the same length from any root on a switch, and a reduce is a broadcast
         * run backwards: the same time */
        cr_assert(eq(dbl, tb, tr));
        for (int m = 0; m < 4; m++) {
            int at = (m - root + 4) % 4; /* place in the broadcast's chain */
            cr_assert(eq(dbl, b[m], b0[at]), "broadcast root %d member %d", root, m);
            cr_assert(le(dbl, r[m], r[root]), "reduce root %d ends last", root);
        }
        cr_assert(eq(dbl, r[root], tr));
        cr_assert(lt(dbl, r[(root + 1) % 4], r[root]), "the chain starts after the root");
        cr_assert(lt(dbl, b[root], b[(root + 3) % 4]), "the chain's last member ends last");
    }
    plat_topo_release(&t);
}

Test(engine, without_communication_time_is_the_sum_of_compute)
{
    struct plat_topo t;
    platform("dgx-a100", 0, NULL, &t);
    struct mdl_program p;
    lower(1, false, true, 2, 1, &p);
    double sum = 0;
    for (int i = 0; i < p.ranks[0].nops; i++)
        sum += p.ranks[0].ops[i].dur_s;
    assert_rel(run_program(&p, &t), sum, 1e-12, "tp=1");
    mdl_program_release(&p);
    plat_topo_release(&t);
}

Test(engine, overlap_comes_from_the_schedule)
{
    struct plat_topo t;
    char *kv[] = {"pcie_gen=3"};
    platform("pcie-8gpu", 1, kv, &t);
    struct mdl_program sync, async;
    lower(8, false, false, 2, 1, &sync);
    lower(8, false, true, 2, 1, &async);
    struct timing st;
    double ts = run_program(&sync, &t), ta = run_program_keep(&async, &t, &st);
    struct report r;
    report_build(&async, &st, &r);
    /* the overlapped schedule is faster, but no faster than its compute or its communication */
    cr_assert(lt(dbl, ta, ts));
    cr_assert(ge(dbl, ta, r.compute_s));
    cr_assert(ge(dbl, ta, r.comm_s));
    cr_assert(le(dbl, ta, r.compute_s + r.comm_s + 1e-12));
    cr_assert(lt(dbl, r.exposed_comm_s, r.comm_s));
    report_release(&r);
    timing_release(&st);
    mdl_program_release(&sync);
    mdl_program_release(&async);
    plat_topo_release(&t);
}

/* Two ranks all-reduce 64 MiB on stream 1 while rank 0 runs a 50 us kernel on stream 0, marked
 * host_sync or not, with no launch cost anywhere. Returns the kernel's end; *ar its all-reduce's.
 */
static double kernel_beside_all_reduce(bool sync, double *ar)
{
    struct plat_topo t;
    platform("dgx-a100", 0, NULL, &t);
    struct mdl_program p;
    cr_assert(eq(int, mdl_program_init(&p, 2), 0));
    int g01[] = {0, 1};
    int g = mdl_program_group(&p, 2, g01), nm = mdl_program_name(&p, "k");
    struct mdl_op a = coll_op(MDL_OP_ALL_REDUCE, 1, nm, g, 64.0 * 1024 * 1024);
    struct mdl_op k = {.kind = MDL_OP_MEM,
                       .name = nm,
                       .group = -1,
                       .layer = -1,
                       .mb = -1,
                       .dur_s = 50e-6,
                       .host_sync = sync};
    cr_assert(ge(int, mdl_program_add(&p, 0, &a), 0));
    cr_assert(ge(int, mdl_program_add(&p, 0, &k), 0));
    cr_assert(ge(int, mdl_program_add(&p, 1, &a), 0));
    struct timing st;
    run_program_keep(&p, &t, &st);
    *ar = timing_op(&st, 0, 0)->end;
    double end = timing_op(&st, 0, 1)->end;
    timing_release(&st);
    mdl_program_release(&p);
    plat_topo_release(&t);
    return end;
}

Test(engine, a_host_sync_holds_back_a_kernel_without_launch_costs)
{
    double ar, end = kernel_beside_all_reduce(false, &ar);
    cr_assert(gt(dbl, ar, 100e-6), "the all-reduce outlasts the kernel: %g s", ar);
    cr_assert(le(dbl, fabs(end - 50e-6), 1e-12), "alone, it runs at once: %g s", end);
    end = kernel_beside_all_reduce(true, &ar);
    cr_assert(le(dbl, fabs(end - (ar + 50e-6)), 1e-12), "synced, it follows: %g s (%g)", end, ar);
}

Test(engine, mismatched_collective_order_is_reported_as_deadlock)
{
    struct plat_topo t;
    platform("dgx-a100", 0, NULL, &t);
    struct mdl_program p;
    mdl_program_init(&p, 4);
    int g01[] = {0, 1}, g012[] = {0, 1, 2};
    int ga = mdl_program_group(&p, 2, g01), gb = mdl_program_group(&p, 3, g012);
    int nm = mdl_program_name(&p, "c");
    struct mdl_op a = coll_op(MDL_OP_ALL_REDUCE, 1, nm, ga, 1e6);
    struct mdl_op b = a;
    b.group = gb;
    mdl_program_add(&p, 0, &a);
    mdl_program_add(&p, 0, &b);
    mdl_program_add(&p, 1, &b); /* rank 1 issues them in the other order */
    mdl_program_add(&p, 1, &a);
    mdl_program_add(&p, 2, &b);
    struct timing st;
    struct tps_error err = {0};
    cr_assert(eq(int, pipeline_run_program(&p, &t, &st, &err), TPS_ESIM));
    cr_assert(strstr(err.msg, "deadlock") != NULL, "%s", err.msg);
    timing_release(&st);
    mdl_program_release(&p);
    plat_topo_release(&t);
}

/* n kernels of dur[i] seconds on one rank, each launched by the host in launch_s, kernel
 * `sync` (-1: none) marked host_sync. Returns the end. */
static double run_kernels(int n, const double *dur, double launch_s, int sync)
{
    struct plat_topo t;
    platform("dgx-a100", 0, NULL, &t);
    struct mdl_program p;
    cr_assert(eq(int, mdl_program_init(&p, 1), 0));
    p.layers = 1;
    p.micro_batches = 1;
    int nm = mdl_program_name(&p, "k");
    for (int i = 0; i < n; i++) {
        struct mdl_op op = {.kind = MDL_OP_MEM,
                            .stream = 0,
                            .name = nm,
                            .group = -1,
                            .layer = 0,
                            .mb = 0,
                            .dur_s = dur[i],
                            .launch_s = launch_s,
                            .host_sync = i == sync};
        cr_assert(ge(int, mdl_program_add(&p, 0, &op), 0));
    }
    double end = run_program(&p, &t);
    mdl_program_release(&p);
    plat_topo_release(&t);
    return end;
}

/* n kernels of d seconds, each launched by the host in launch_s. */
static double launched_kernels(int n, double d, double launch_s)
{
    double dur[32];
    cr_assert(le(int, n, 32));
    for (int i = 0; i < n; i++)
        dur[i] = d;
    return run_kernels(n, dur, launch_s, -1);
}

Test(engine, the_host_launches_kernels_in_order)
{
    /* short kernels wait for the host: n launches, then the last kernel */
    double L = 10e-6, n = 20;
    double got = launched_kernels((int)n, 2e-6, L);
    cr_assert(le(dbl, fabs(got - (n * L + 2e-6)), 1e-12), "short kernels: %.9g", got);
    /* long kernels hide the host: the first launch, then the kernels back to back */
    got = launched_kernels((int)n, 50e-6, L);
    cr_assert(le(dbl, fabs(got - (L + n * 50e-6)), 1e-12), "long kernels: %.9g", got);
    /* no launch cost: the kernels alone */
    got = launched_kernels((int)n, 50e-6, 0);
    cr_assert(le(dbl, fabs(got - n * 50e-6), 1e-12), "no host: %.9g", got);
}

/* A kernel of 1 ms, then one of 50 us, each launched in 10 us. */
Test(engine, a_host_sync_waits_for_every_op_before_it)
{
    /* without it the second kernel was launched while the first ran, and follows it at once */
    double L = 10e-6, dur[2] = {1e-3, 50e-6}, got = run_kernels(2, dur, L, -1);
    cr_assert(le(dbl, fabs(got - (L + 1e-3 + 50e-6)), 1e-12), "no sync: %.9g", got);
    /* with it the host launches the second only once the first is done */
    got = run_kernels(2, dur, L, 1);
    cr_assert(le(dbl, fabs(got - (L + 1e-3 + L + 50e-6)), 1e-12), "sync: %.9g", got);
}

Test(engine, refuses_a_program_whose_collectives_were_not_tuned_or_another_programs_plan)
{
    struct plat_topo t;
    platform("dgx-a100", 0, NULL, &t);
    struct mdl_program p;
    lower(8, false, true, 1, 1, &p);
    struct timing st;
    struct tps_error err = {0};
    /* the engine decides nothing: the tuner runs before, in the pipeline */
    /* the plan of the same program, tuned apart: the ops of p are still untuned */
    struct mdl_program q;
    lower(8, false, true, 1, 1, &q);
    struct cpl_plan plan;
    cr_assert(eq(int, tune_program(&q, &t, &plan, &err), 0), "%s", err.msg);
    cr_assert(eq(int, sim_engine_run(&p, &t, &plan, &st, &err), TPS_EINVAL));
    cr_assert(strstr(err.msg, "not tuned") != NULL, "%s", err.msg);
    timing_release(&st);
    cpl_plan_release(&plan);
    mdl_program_release(&q);
    /* nor does it replay with another program's plan */
    struct mdl_program one;
    lower(1, false, true, 1, 1, &one);
    memset(&err, 0, sizeof err);
    cr_assert(eq(int, tune_program(&one, &t, &plan, &err), 0), "%s", err.msg);
    cr_assert(eq(int, sim_engine_run(&p, &t, &plan, &st, &err), TPS_EINVAL));
    cr_assert(strstr(err.msg, "not this program's") != NULL, "%s", err.msg);
    timing_release(&st);
    cpl_plan_release(&plan);
    mdl_program_release(&one);
    memset(&err, 0, sizeof err);
    cr_assert(eq(int, tune_program(&p, &t, &plan, &err), 0), "%s", err.msg);
    cr_assert(eq(int, plan.ngroups, p.ngroups));
    cr_assert(gt(int, plan.npairs, 0));
    cr_assert(eq(int, sim_engine_run(&p, &t, &plan, &st, &err), 0), "%s", err.msg);
    cr_assert(gt(dbl, st.end_s, 0));
    timing_release(&st);
    cpl_plan_release(&plan);
    mdl_program_release(&p);
    plat_topo_release(&t);
}

Test(engine, simgrid_abort_becomes_an_error)
{
    char path[] = "/tmp/tpsim-bad-XXXXXX.xml";
    int fd = mkstemps(path, 4);
    FILE *f = fdopen(fd, "w");
    /* a platform SimGrid refuses: the route names a link that does not exist */
    fputs("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
          "<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">\n"
          "<host id=\"a\" speed=\"1f\"/><host id=\"b\" speed=\"1f\"/>\n"
          "<route src=\"a\" dst=\"b\"><link_ctn id=\"nope\"/></route>\n"
          "</zone></platform>\n",
          f);
    fclose(f);
    struct plat_topo t;
    platform(path, 0, NULL, &t);
    cr_assert(eq(int, t.ngpus, 2));
    struct mdl_program p;
    mdl_program_init(&p, 2);
    int ranks[] = {0, 1};
    int g = mdl_program_group(&p, 2, ranks), nm = mdl_program_name(&p, "c");
    for (int r = 0; r < 2; r++) {
        struct mdl_op op = coll_op(MDL_OP_ALL_REDUCE, 1, nm, g, 1e6);
        mdl_program_add(&p, r, &op);
    }
    struct timing st;
    struct tps_error err = {0};
    cr_assert(eq(int, pipeline_run_program(&p, &t, &st, &err), TPS_ESIM));
    cr_assert(strstr(err.msg, "SimGrid") != NULL, "%s", err.msg);
    timing_release(&st);
    mdl_program_release(&p);
    plat_topo_release(&t);
    remove(path);
}

/* Time of a 2D mesh (gpt3-13b, 2 layers) on two DGX A100 nodes, with the simulated bytes. */
static double mesh_time(const struct plat_topo *t, int d1, int d2, enum mdl_placement pl,
                        double *sent0)
{
    struct mdl_model m;
    struct mdl_device dev;
    mdl_model_preset("gpt3-13b", &m);
    mdl_device_preset("A100-80GB", &dev);
    struct mdl_strategy st = {.kind = MDL_STRAT_2D,
                              .tp = d1 * d2,
                              .async_grad_allreduce = true,
                              .atp.d1 = d1,
                              .atp.d2 = d2,
                              .atp.placement = pl};
    struct mdl_program p;
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, 2, 1, &p, &err), 0), "%s", err.msg);
    struct timing s;
    cr_assert(eq(int, pipeline_run_program(&p, t, &s, &err), 0), "%s", err.msg);
    double end = s.end_s;
    *sent0 = s.bytes_sent[0];
    timing_release(&s);
    mdl_program_release(&p);
    return end;
}

Test(engine, row_first_wins_exactly_when_the_heavier_d2_axis_stays_in_a_node)
{
    /* Row-first keeps the d2 axis inside a node (d2 <= 8), column-first the d1 axis. Across
     * the two nodes only IB remains and, with rings in one channel, each GPU's own NIC, so
     * the placement that keeps the axis moving more bytes per GPU (d2: 2(d2-1)/d2 * 12bsh/d1,
     * d1: 2(d1-1)/d1 * 4bsh/d2) inside a node wins. (In several channels a ring across the
     * nodes spreads its bytes over its members' NICs: test_replay.c.) */
    struct plat_topo t;
    char *kv[] = {"nodes=2"};
    platform("dgx-a100", 1, kv, &t);
    t.nccl.channels = 1;
    const int meshes[][2] = {{2, 8}, {4, 4}, {8, 2}};
    double bsh = 2048.0 * 5120;
    for (int k = 0; k < 3; k++) {
        int d1 = meshes[k][0], d2 = meshes[k][1];
        double v2 = 2.0 * (d2 - 1) / d2 * 12 * bsh / d1, v1 = 2.0 * (d1 - 1) / d1 * 4 * bsh / d2;
        double sr, sc;
        double row = mesh_time(&t, d1, d2, MDL_ROW_FIRST, &sr);
        double col = mesh_time(&t, d1, d2, MDL_COLUMN_FIRST, &sc);
        cr_assert(eq(dbl, sr, sc), "the placement moves no bytes itself");
        cr_assert(ieee_ulp_eq(dbl, sr, 2 * 2 * (v1 + v2), 16), "%dx%d: sent %.0f", d1, d2, sr);
        cr_assert(eq(int, row<col, v2> v1), "%dx%d: row-first %.6g s, column-first %.6g s", d1, d2,
                  row, col);
    }
    plat_topo_release(&t);
}

/* Busy time of rank 0's compute ops and of its collectives as simulated. */
static void busy_times(const struct mdl_program *p, const struct timing *tm, double *compute,
                       double *comm)
{
    *compute = *comm = 0;
    for (int i = 0; i < p->ranks[0].nops; i++) {
        const struct mdl_op *op = &p->ranks[0].ops[i];
        if (mdl_op_is_coll((enum mdl_op_kind)op->kind))
            *comm += timing_op(tm, 0, i)->end - timing_op(tm, 0, i)->start;
        else
            *compute += op->dur_s;
    }
}

/* Lowers one layer of st, simulates it, and checks it against the hand-computed schedule:
 * in-order streams, dependencies, closed-form collectives, computed without SimGrid
 * (pipeline/planner.c). Returns the simulated time and rank 0's busy times. */
static void hand_schedule(const struct mdl_strategy *st, const struct mdl_model *m,
                          const struct mdl_device *dev, const struct plat_topo *t, double *sim,
                          double *compute, double *comm)
{
    struct mdl_program p;
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_lower(st, m, dev, NULL, 1, 1, &p, &err), 0), "%s", err.msg);
    double ref = planner_predict(&p, t, &err);
    struct timing tm;
    *sim = run_program_keep(&p, t, &tm);
    busy_times(&p, &tm, compute, comm);
    timing_release(&tm);
    char desc[128];
    mdl_strategy_describe(st, desc, sizeof desc);
    cr_assert(le(dbl, fabs(*sim - ref), 1e-9 * ref), "%s: %.12g vs %.12g", desc, *sim, ref);
    mdl_program_release(&p);
}

Test(engine, chunked_and_oases_overlap_follow_the_hand_computed_schedule)
{
    struct plat_topo t;
    struct mdl_model m;
    struct mdl_device dev;
    gpt_on_a100(1, 1, &t, &m, &dev);
    const int meshes[][2] = {{2, 1}, {4, 1}, {2, 2}};
    for (int k = 0; k < 3; k++)
        for (int chunks = 1; chunks <= 4; chunks *= 2) {
            int d1 = meshes[k][0], d2 = meshes[k][1];
            struct mdl_strategy st = {.kind = MDL_STRAT_2D,
                                      .tp = d1 * d2,
                                      .atp.d1 = d1,
                                      .atp.d2 = d2,
                                      .async_grad_allreduce = true,
                                      .chunks = chunks};
            double sim, compute, comm;
            hand_schedule(&st, &m, &dev, &t, &sim, &compute, &comm);
            double lo = compute > comm ? compute : comm;
            cr_assert(ge(dbl, sim, lo * (1 - 1e-12)), "k=%d: below max(compute, comm)", chunks);
            cr_assert(le(dbl, sim, (compute + comm) * (1 + 1e-12)), "k=%d: above the sum", chunks);
        }
    plat_topo_release(&t);
}

Test(engine, primepar_ring_shifts_follow_the_hand_computed_schedule)
{
    struct plat_topo t;
    struct mdl_model m;
    struct mdl_device dev;
    gpt_on_a100(1, 1, &t, &m, &dev);
    for (int d = 2; d <= 8; d *= 2) {
        struct mdl_strategy st = {.kind = MDL_STRAT_PRIMEPAR,
                                  .tp = d,
                                  .atp.d1 = d,
                                  .atp.d2 = 1,
                                  .async_grad_allreduce = true};
        double sim, compute, comm;
        hand_schedule(&st, &m, &dev, &t, &sim, &compute, &comm);
        cr_assert(ge(dbl, sim, compute * (1 - 1e-12)), "d=%d: below the compute", d);
    }
    plat_topo_release(&t);
}

/* Context parallelism's ring attention on one DGX A100 (GPT-3 1.3B, 2,048 tokens): the
 * simulated layer equals the hand-computed schedule (each block's send and receive posted with
 * the step before it, every step waiting for its block), and each block's transfer over NVLink
 * hides under the step before it, so the forward's cp steps run back to back. */
Test(engine, ring_attention_follows_the_hand_computed_schedule)
{
    struct plat_topo t;
    struct mdl_model m;
    struct mdl_device dev;
    gpt_on_a100(1, 1, &t, &m, &dev);
    const int cfg[][2] = {{1, 2}, {1, 4}, {1, 8}, {2, 4}};
    for (int k = 0; k < 4; k++) {
        for (int comm = 0; comm < 3; comm++) {
            int tp = cfg[k][0], cp = cfg[k][1];
            struct mdl_strategy st = {.kind = MDL_STRAT_1D,
                                      .tp = tp,
                                      .atp = {.d1 = tp, .d2 = 1},
                                      .async_grad_allreduce = true,
                                      .cp = cp,
                                      .cp_comm = (enum mdl_cp_comm)comm};
            double sim, compute, comm_s;
            hand_schedule(&st, &m, &dev, &t, &sim, &compute, &comm_s);
            cr_assert(ge(dbl, sim, compute * (1 - 1e-12)), "tp %d cp %d", tp, cp);
            if (comm != MDL_CP_P2P) continue;
            struct mdl_program p;
            struct tps_error err = {0};
            cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, 1, 1, &p, &err), 0));
            struct timing tm;
            run_program_keep(&p, &t, &tm);
            double first = -1, last = 0, step = 0;
            for (int i = 0; i < p.ranks[0].nops; i++) {
                const struct mdl_op *o = &p.ranks[0].ops[i];
                if (strcmp(p.names[o->name], "cp_attn") || o->phase != MDL_PHASE_FWD) continue;
                const struct timing_span *ts = timing_op(&tm, 0, i);
                if (first < 0) first = ts->start;
                last = ts->end;
                step = o->dur_s;
            }
            cr_assert(ieee_ulp_eq(dbl, last - first, cp * step, 64), "cp %d: %.9g vs %d x %.9g", cp,
                      last - first, cp, step);
            timing_release(&tm);
            mdl_program_release(&p);
        }
    }
    plat_topo_release(&t);
}

/* A per-sublayer plan at degree 1 is data parallelism inside the group: every GPU runs one
 * GPU's layers on 1/8 of the micro-batch, with no collective until its weight gradients; those
 * are all-reduced over the 8 replicas on their own stream, overlapping the rest of the
 * backward, so only the last one (the first layer's attention) outlasts the compute. */
Test(engine, a_degree_1_plan_is_data_parallel_with_only_the_last_gradient_all_reduce_exposed)
{
    struct plat_topo t;
    struct mdl_model m, m1;
    struct mdl_device dev;
    gpt_on_a100(1, 8, &t, &m, &dev);
    m1 = m;
    m1.micro_batch = 1;
    struct mdl_strategy st = {.kind = MDL_STRAT_1D,
                              .tp = 8,
                              .sublayer.attention_tp = 1,
                              .sublayer.mlp_tp = 1,
                              .async_grad_allreduce = true};
    struct mdl_strategy one = {.kind = MDL_STRAT_1D, .tp = 1, .async_grad_allreduce = true};
    struct mdl_program p, p1;
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, 2, 1, &p, &err), 0), "%s", err.msg);
    cr_assert(eq(int, mdl_strategy_lower(&one, &m1, &dev, NULL, 2, 1, &p1, &err), 0));
    double compute = 0, single = run_program(&p1, &t);
    int ars = 0;
    for (int i = 0; i < p.ranks[0].nops; i++) {
        const struct mdl_op *op = &p.ranks[0].ops[i];
        if (mdl_op_is_coll((enum mdl_op_kind)op->kind)) {
            cr_assert(eq(int, op->kind, MDL_OP_ALL_REDUCE));
            cr_assert(eq(int, p.groups[op->group].n, 8));
            ars++;
        } else {
            compute += op->dur_s;
        }
    }
    cr_assert(eq(int, ars, 4), "one gradient all-reduce per sublayer and layer");
    assert_rel(compute, single, 1e-12, "one GPU's compute on 1/8 of the micro-batch");
    double last = one_collective(&t, MDL_OP_ALL_REDUCE, 8,
                                 mdl_model_sublayer_params(&m, 0) * mdl_dtype_bytes(m.dtype), NULL);
    assert_rel(run_program(&p, &t), single + last, 1e-9, "compute, then the last all-reduce");
    mdl_program_release(&p);
    mdl_program_release(&p1);
    plat_topo_release(&t);
}

/* sim_engine_progress counts ops as they complete and adds no event: a run of several thousand
 * ops (a tick every 1,024) ends at the same time, every op at the same times, with it on as off;
 * a run this short prints nothing (the first line waits 2 s of wall time). */
Test(engine, progress_reporting_changes_no_result)
{
    struct plat_topo t;
    struct mdl_model m;
    struct mdl_device dev;
    gpt_on_a100(1, 1, &t, &m, &dev);
    enum { N = 4, OPS = 3000 };
    struct mdl_program p;
    mdl_program_init(&p, N);
    int ranks[N] = {0, 1, 2, 3};
    int g = mdl_program_group(&p, N, ranks), nk = mdl_program_name(&p, "k"),
        nc = mdl_program_name(&p, "c");
    for (int r = 0; r < N; r++)
        for (int i = 0; i < OPS; i++) {
            struct mdl_op op = {
                .name = nk, .layer = -1, .mb = -1, .group = -1, .dur_s = 1e-6 * (1 + (i + r) % 7)};
            if (i % 100 == 99) op = coll_op(MDL_OP_ALL_REDUCE, 1, nc, g, 1 << 20);
            mdl_program_add(&p, r, &op);
        }
    char d[256], log[300];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(log, sizeof log, d, "stderr.txt");
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(log, "w");
    cr_assert_not_null(f);
    dup2(fileno(f), 2);
    struct timing st[2];
    struct tps_error err = {0};
    for (int k = 0; k < 2; k++) {
        sim_engine_progress(k);
        cr_assert(eq(int, pipeline_run_program(&p, &t, &st[k], &err), 0), "%s", err.msg);
    }
    sim_engine_progress(0);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    long size = ftell(f) >= 0 ? (fseek(f, 0, SEEK_END), ftell(f)) : -1;
    fclose(f);
    cr_assert(eq(long, size, 0), "a short run printed progress");
    cr_assert(eq(dbl, st[0].end_s, st[1].end_s));
    for (int r = 0; r < N; r++)
        for (int i = 0; i < OPS; i++) {
            const struct timing_span *a = timing_op(&st[0], r, i), *b = timing_op(&st[1], r, i);
            cr_assert(a->start == b->start && a->end == b->end, "rank %d op %d", r, i);
        }
    for (int k = 0; k < 2; k++)
        timing_release(&st[k]);
    mdl_program_release(&p);
}

/* framework.cuda_device_max_connections (mdl_program.hw_queues): streams share the GPU's hardware
 * queues, stream s on queue s mod N, each starting its kernels in launch order. Rank ops: a 1 ms
 * kernel (stream 0), a collective on stream 1 that needs it, then one on stream 2 that needs
 * nothing. A queue per stream (unset, or 3): the stream-2 collective starts at once; one queue:
 * it waits until the stream-1 collective, launched before it, has started (after the kernel); two
 * queues: stream 2 shares the kernel's queue, whose kernel started at once, so it starts at once
 * too. */
Test(engine, hardware_queues_start_kernels_in_launch_order)
{
    struct plat_topo t;
    struct mdl_model m;
    struct mdl_device dev;
    gpt_on_a100(1, 1, &t, &m, &dev);
    static const int queues[] = {0, 3, 1, 2};
    static const double want[] = {0, 0, 1e-3, 0};
    for (int k = 0; k < 4; k++) {
        struct mdl_program p;
        mdl_program_init(&p, 2);
        p.hw_queues = queues[k];
        int ranks[2] = {0, 1};
        int g1 = mdl_program_group_add(&p, 2, ranks), g2 = mdl_program_group_add(&p, 2, ranks);
        int nk = mdl_program_name(&p, "k"), nc = mdl_program_name(&p, "c");
        for (int r = 0; r < 2; r++) {
            struct mdl_op k0 = {.name = nk, .layer = -1, .mb = -1, .group = -1, .dur_s = 1e-3};
            struct mdl_op c1 = coll_op(MDL_OP_ALL_REDUCE, 1, nc, g1, 4096),
                          c2 = coll_op(MDL_OP_ALL_REDUCE, 2, nc, g2, 4096);
            c1.deps[c1.ndeps++] = 0; /* the kernel */
            mdl_program_add(&p, r, &k0);
            mdl_program_add(&p, r, &c1);
            mdl_program_add(&p, r, &c2);
        }
        struct timing st;
        struct tps_error err = {0};
        cr_assert(eq(int, pipeline_run_program(&p, &t, &st, &err), 0), "%s", err.msg);
        for (int r = 0; r < 2; r++) {
            double s1 = timing_op(&st, r, 1)->start, s2 = timing_op(&st, r, 2)->start;
            cr_assert(eq(dbl, s1, 1e-3), "queues %d rank %d: stream 1 at %g", queues[k], r, s1);
            cr_assert(lt(dbl, fabs(s2 - want[k]), 1e-12), "queues %d rank %d: stream 2 at %g",
                      queues[k], r, s2);
        }
        timing_release(&st);
        mdl_program_release(&p);
    }
}
