/* test_replay.c - every collective algorithm, per-step and flow-level, against its closed form;
 * the tuner; flow-level contention; zoned platforms at multi-node scale. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <string.h>

#include "models/collective.h"
#include "platforms/spec.h"
#include "core/tune.h"
#include "sim/engine.h"
#include "pipeline/pipeline.h"
#include "datasheet.h"

TestSuite(coll, .timeout = 300 * TPSIM_TIMEOUT_SCALE);

/* Messages carry whole bytes: LL and LL128 round payload/eff, at most a byte per message. */
#define TOL 1e-6

static void platform(const char *spec, struct plat_topo *t)
{
    struct tps_error err = {0};
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    char *kv[10];
    int nkv = 0;
    char *name = strtok(buf, " ");
    for (char *w = strtok(NULL, " "); w && nkv < 8; w = strtok(NULL, " "))
        kv[nkv++] = w;
    /* the DGX presets with their datasheet NVLink (datasheet.h) and NCCL's default protocols,
     * not the values fitted on logs: the closed forms here use them */
    nkv += datasheet_kv(name, (const char **)kv + nkv);
    cr_assert(eq(int, plat_spec_from_args(name, nkv, kv, t, &err), 0), "%s", err.msg);
    bool nvls = t->nccl.nvls;
    double nvls_eff = t->nccl.nvls_eff;
    mdl_nccl_default(&t->nccl);
    t->nccl.nvls = nvls;
    t->nccl.nvls_eff = nvls_eff;
}

/* Simulated time of one collective over ranks 0..n-1 with a forced algorithm/protocol. */
static double sim_one(const struct plat_topo *t, enum mdl_op_kind k, int n, double bytes,
                      enum mdl_coll_algo a, enum mdl_coll_proto pr, enum mdl_coll_gran gran)
{
    struct pipeline_coll_how how = {a, pr, gran};
    struct tps_error err = {0};
    double time = 0;
    cr_assert(eq(int, pipeline_collective(t, k, n, bytes, &how, &time, &err), 0), "%s", err.msg);
    cr_assert(eq(int, how.algo, a));
    return time;
}

/* One all-reduce of S bytes over GPUs 0..n-1 (Simple), per step and at flow level. */
/* A preset with `kv` (e.g. "nodes=8") and its own NCCL settings, fitted ones included (the
 * point-to-point path, the network channels), where platform() puts NCCL's defaults. */
static void preset(const char *name, const char *kv, struct plat_topo *t)
{
    struct tps_error err = {0};
    char *kvs[] = {(char *)kv};
    cr_assert(eq(int, plat_spec_from_args(name, 1, kvs, t, &err), 0), "%s", err.msg);
}

static void step_and_flow(const struct plat_topo *t, int n, double S, enum mdl_coll_algo a,
                          double *step, double *flow)
{
    *step = sim_one(t, MDL_OP_ALL_REDUCE, n, S, a, MDL_PROTO_SIMPLE, MDL_GRAN_STEP);
    *flow = sim_one(t, MDL_OP_ALL_REDUCE, n, S, a, MDL_PROTO_SIMPLE, MDL_GRAN_FLOW);
}

/* Closed form for the same collective, from the routes the planner measures. */
/* The tuner's view of GPUs 0..n-1 (release with tune_group_env_release). */
static void group_env(const struct plat_topo *t, int n, struct tune_group_env *ge)
{
    int *ranks = malloc((size_t)n * sizeof *ranks);
    for (int r = 0; r < n; r++)
        ranks[r] = r;
    struct mdl_group g = {.n = n, .ranks = ranks};
    struct tps_error err = {0};
    cr_assert(eq(int, tune_group_env(t, &g, ge, &err), 0), "%s", err.msg);
    free(ranks);
}

static double formula(const struct plat_topo *t, enum mdl_op_kind k, int n, double bytes,
                      enum mdl_coll_algo a, enum mdl_coll_proto pr)
{
    struct tune_group_env ge;
    group_env(t, n, &ge);
    struct mdl_coll_env e;
    tune_coll_env(&ge, &t->nccl, pr, &e);
    double v = mdl_coll_time(k, a, bytes, &e);
    tune_group_env_release(&ge);
    return v;
}

/* The algorithm the tuner picks for collective k of S bytes over GPUs 0..n-1. */
static enum mdl_coll_algo tuner_algo(const struct plat_topo *t, enum mdl_op_kind k, int n, double S)
{
    struct tune_group_env ge;
    group_env(t, n, &ge);
    struct tps_error err = {0};
    enum mdl_coll_algo a = MDL_ALGO_AUTO;
    enum mdl_coll_proto p = MDL_PROTO_AUTO;
    cr_assert(gt(dbl, tune_choose(&ge, &t->nccl, k, S, &a, &p, &err), 0), "%s", err.msg);
    tune_group_env_release(&ge);
    return a;
}

static void check(const struct plat_topo *t, enum mdl_op_kind k, int n, double S,
                  enum mdl_coll_algo a, enum mdl_coll_proto pr, double tol)
{
    double f = formula(t, k, n, S, a, pr), slack = 0;
    if (a == MDL_ALGO_TREE || a == MDL_ALGO_HTREE || a == MDL_ALGO_NVLS_TREE) {
        /* the trees' pipeline (docs/collectives.md): its closed form takes the longer of the
         * last chunk's path and the busiest member's steps after its first latencies; where a
         * member's links carry several pipelines at once, the simulated path is slowed by that
         * sharing: allow one route latency and two chunk times, on the route and through a
         * tree's channel. The trees of hierarchical_tree carry S / (GPUs per machine) between
         * machines, at no channel rate, and so do NVLS-tree's, whose chunks also wait for
         * their portions through the switch: allow two of those (its portions feed the two trees
         * in turn). */
        bool rails = a == MDL_ALGO_HTREE || a == MDL_ALGO_NVLS_TREE;
        int local = rails ? t->ngpus / t->machines : 1;
        struct plat_route r;
        cr_assert(eq(int, plat_topo_route(t, 0, local == 1 ? 1 : local, &r), 0));
        double b = S / local / 2;
        struct mdl_tree_shape sh;
        mdl_tree_shape_flat(&sh, rails ? t->machines : n);
        int kc = a == MDL_ALGO_NVLS_TREE
                     ? mdl_nvls_tree_chunks(S, local, t->machines, mdl_nccl_nvls_channels(&t->nccl),
                                            t->nccl.nvls_chunk_bytes)
                     : mdl_tree_chunks(b, t->nccl.chunk_bytes, mdl_tree_top(&sh));
        double c = b / kc;
        double rate = a == MDL_ALGO_TREE ? mdl_nccl_tree_rate(&t->nccl, 1, MDL_PROTO_SIMPLE) : 0;
        slack = r.lat_s + t->nccl.hop_s[pr] + 2 * c / (r.bw_Bps * t->nccl.eff[pr]) +
                (rate > 0 ? 2 * c / rate : 0);
        if (a == MDL_ALGO_NVLS_TREE) {
            struct plat_route q;
            cr_assert(eq(int, plat_topo_route(t, 0, 1, &q), 0));
            slack += 2 * c * (local + 1) / (q.bw_Bps * t->nccl.eff[pr] * t->nccl.nvls_eff);
        }
    }
    cr_assert(gt(dbl, f, 0), "%s/%s has no closed form", mdl_op_kind_name(k), mdl_algo_name(a));
    for (int gran = MDL_GRAN_STEP; gran <= MDL_GRAN_FLOW; gran++) {
        double s = sim_one(t, k, n, S, a, pr, (enum mdl_coll_gran)gran);
        cr_assert(le(dbl, fabs(s - f), tol * f + slack),
                  "%s %s %s n=%d S=%.0f %s: simulated %.12g formula %.12g", mdl_op_kind_name(k),
                  mdl_algo_name(a), mdl_proto_name(pr), n, S,
                  mdl_gran_name((enum mdl_coll_gran)gran), s, f);
    }
}

Test(coll, every_algorithm_matches_its_closed_form_per_step_and_flow_level)
{
    struct plat_topo t;
    platform("dgx-a100", &t);
    const double sizes[] = {4096, 3 << 20, 256 << 20};
    for (int si = 0; si < 3; si++) {
        double S = sizes[si];
        for (int n = 2; n <= 8; n *= 2) {
            check(&t, MDL_OP_ALL_REDUCE, n, S, MDL_ALGO_RING, MDL_PROTO_SIMPLE, TOL);
            check(&t, MDL_OP_ALL_REDUCE, n, S, MDL_ALGO_DIRECT, MDL_PROTO_LL128, TOL);
            check(&t, MDL_OP_ALL_REDUCE, n, S, MDL_ALGO_TREE, MDL_PROTO_SIMPLE, TOL);
            check(&t, MDL_OP_ALL_GATHER, n, S, MDL_ALGO_RING, MDL_PROTO_LL, TOL);
            check(&t, MDL_OP_REDUCE_SCATTER, n, S, MDL_ALGO_DIRECT, MDL_PROTO_SIMPLE, TOL);
            check(&t, MDL_OP_BROADCAST, n, S, MDL_ALGO_RING, MDL_PROTO_SIMPLE, TOL);
            check(&t, MDL_OP_BROADCAST, n, S, MDL_ALGO_DIRECT, MDL_PROTO_SIMPLE, TOL);
            check(&t, MDL_OP_REDUCE, n, S, MDL_ALGO_RING, MDL_PROTO_SIMPLE, TOL);
            check(&t, MDL_OP_ALL_TO_ALL, n, S, MDL_ALGO_DIRECT, MDL_PROTO_SIMPLE, TOL);
            /* 2: one message; 4, 8: a shift, every member to the next */
            check(&t, MDL_OP_SEND_RECV, n, S, MDL_ALGO_DIRECT, MDL_PROTO_SIMPLE, TOL);
        }
        check(&t, MDL_OP_ALL_REDUCE, 7, S, MDL_ALGO_TREE, MDL_PROTO_LL128, TOL);
        check(&t, MDL_OP_SEND_RECV, 3, S, MDL_ALGO_DIRECT, MDL_PROTO_SIMPLE, TOL);
    }
    plat_topo_release(&t);
}

/* nccl-tests' sendrecv_perf over 16 GPUs of two dgx-h100 machines (the preset's NCCL, its
 * point-to-point path): every GPU sends to the next at once, and the two pairs that cross the
 * machines set the time. The communicator spans the machines, so every send runs on NCCL's 2
 * channels per network peer in 128 KiB chunks, and a crossing pair's channels move at most the
 * network channel rate: p2p base + the crossing route's latency + (128 KiB + S/2) / 20.04 GB/s,
 * checked by hand at 64 MiB, and the replay equals its closed form. */
Test(coll, a_send_recv_over_more_than_two_is_a_shift_on_ncclS_point_to_point_path)
{
    struct plat_topo t;
    preset("dgx-h100", "nodes=2", &t);
    const double S = 64 << 20, c = 128 << 10;
    struct plat_route r;
    cr_assert(eq(int, plat_topo_route(&t, 7, 8, &r), 0));
    double want = t.nccl.p2p_base_s + r.lat_s + t.nccl.hop_s[MDL_PROTO_SIMPLE] +
                  (c + S / 2) / t.nccl.net_channel_Bps;
    double f = formula(&t, MDL_OP_SEND_RECV, 16, S, MDL_ALGO_DIRECT, MDL_PROTO_SIMPLE);
    cr_assert(ieee_ulp_eq(dbl, f, want, 8), "formula %.12g want %.12g", f, want);
    check(&t, MDL_OP_SEND_RECV, 16, S, MDL_ALGO_DIRECT, MDL_PROTO_SIMPLE, TOL);
    plat_topo_release(&t);
}

/* NCCL's all-to-all (a send and a receive per peer, launched together): over 64 GPUs of 8
 * dgx-h100 machines with the preset's NCCL, each GPU's 7 messages inside its machine share its
 * NVLink and its 56 others its NIC (2 x 20.04 GB/s), each class after its own latency, after
 * NCCL's point-to-point latency: by hand at 64 MiB, and the replay equals its closed form at
 * 1 MiB (latency-bound) and 512 MiB (the NIC's). */
Test(coll, all_to_all_runs_every_message_at_once_as_nccl_groups_them)
{
    struct plat_topo t;
    preset("dgx-h100", "nodes=8", &t);
    struct plat_route in, out;
    cr_assert(eq(int, plat_topo_route(&t, 0, 1, &in), 0));
    cr_assert(eq(int, plat_topo_route(&t, 0, 8, &out), 0));
    double hop = t.nccl.hop_s[MDL_PROTO_SIMPLE], S = 64 << 20, each = S / 64;
    double a = in.lat_s + hop + 7 * each / in.bw_Bps, b = out.lat_s + hop + 56 * each / out.bw_Bps;
    cr_assert(ieee_ulp_eq(dbl, out.bw_Bps, 2 * 20.04e9, 4));
    double want = t.nccl.p2p_base_s + (a > b ? a : b);
    double f = formula(&t, MDL_OP_ALL_TO_ALL, 64, S, MDL_ALGO_DIRECT, MDL_PROTO_SIMPLE);
    cr_assert(ieee_ulp_eq(dbl, f, want, 8), "formula %.12g want %.12g", f, want);
    cr_assert(gt(dbl, b, a)); /* the NIC's class sets it */
    check(&t, MDL_OP_ALL_TO_ALL, 64, 1 << 20, MDL_ALGO_DIRECT, MDL_PROTO_SIMPLE, TOL);
    check(&t, MDL_OP_ALL_TO_ALL, 64, 512.0 * (1 << 20), MDL_ALGO_DIRECT, MDL_PROTO_SIMPLE, TOL);
    plat_topo_release(&t);
}

Test(coll, hierarchical_matches_its_closed_form_across_nodes)
{
    struct plat_topo t;
    platform("dgx-a100 nodes=4", &t);
    for (double S = 1 << 20; S <= 1 << 30; S *= 32) {
        check(&t, MDL_OP_ALL_TO_ALL, 32, S, MDL_ALGO_DIRECT, MDL_PROTO_SIMPLE, TOL);
        check(&t, MDL_OP_ALL_REDUCE, 32, S, MDL_ALGO_HIER, MDL_PROTO_SIMPLE, TOL);
        check(&t, MDL_OP_ALL_GATHER, 32, S, MDL_ALGO_HIER, MDL_PROTO_SIMPLE, TOL);
        check(&t, MDL_OP_REDUCE_SCATTER, 32, S, MDL_ALGO_HIER, MDL_PROTO_LL128, TOL);
        /* the flat ring mixes NVLink and network routes: its closed form takes the longer of
         * the critical path and the queue on the slowest route, which the pipelined steps
         * approach within a fraction of one step. In one channel: the closed form of rings in
         * several channels splits the NVLink routes evenly among them, which their staggered
         * steps do not need (up to 20% slower than simulated at 32 MiB); their bandwidth is
         * checked in a_ring_across_machines_runs_one_channel_per_nic */
        t.nccl.channels = 1;
        check(&t, MDL_OP_ALL_REDUCE, 32, S, MDL_ALGO_RING, MDL_PROTO_SIMPLE, 5e-3);
        t.nccl.channels = 0;
        check(&t, MDL_OP_ALL_REDUCE, 32, S, MDL_ALGO_HTREE, MDL_PROTO_SIMPLE, TOL);
        check(&t, MDL_OP_ALL_REDUCE, 32, S, MDL_ALGO_HTREE, MDL_PROTO_LL128, TOL);
    }
    plat_topo_release(&t);
    /* trees across 5 machines (not a power of two), two GPUs each */
    platform("dgx-a100 nodes=5", &t);
    check(&t, MDL_OP_ALL_REDUCE, 40, 64 << 20, MDL_ALGO_HTREE, MDL_PROTO_SIMPLE, TOL);
    plat_topo_release(&t);
}

Test(coll, trees_across_machines_keep_their_bandwidth_as_machines_double)
{
    /* one NIC per machine, 32 MiB: a member of a double binary tree over 4 or more machines
     * sends and receives S/2 per tree per level it serves, reduction and broadcast at once, so
     * its bus bandwidth stays near the NIC's from 4 to 16 machines (NCCL's trees), less the
     * pipeline's fill over 2H levels (28, 21 and 20 GB/s). Reduced then broadcast in turn, in
     * one 4 MiB chunk per tree, it halved per doubling (on ABCI's platform file: 21, 13 and 9 GB/s
     * on 4, 8 and 16 machines). */
    double busbw[3];
    for (int i = 0; i < 3; i++) {
        char spec[64];
        snprintf(spec, sizeof spec, "dgx-a100 nodes=%d nics_per_node=1", 4 << i);
        struct plat_topo t;
        platform(spec, &t);
        int n = t.ngpus;
        double S = 32 << 20;
        double s =
            sim_one(&t, MDL_OP_ALL_REDUCE, n, S, MDL_ALGO_HTREE, MDL_PROTO_SIMPLE, MDL_GRAN_STEP);
        busbw[i] = 2.0 * (n - 1) / n * S / s;
        plat_topo_release(&t);
    }
    cr_assert(gt(dbl, busbw[2], 0.7 * busbw[0]), "busbw %g on 4 machines, %g on 16", busbw[0],
              busbw[2]);
    cr_assert(gt(dbl, busbw[1], 0.7 * busbw[0]), "busbw %g on 4 machines, %g on 8", busbw[0],
              busbw[1]);
    cr_assert(gt(dbl, busbw[2], 0.9 * busbw[1]), "busbw %g on 8 machines, %g on 16", busbw[1],
              busbw[2]);
}

Test(coll, a_ring_pays_each_routes_latency_in_turn_not_the_slowest_at_every_step)
{
    /* 8 bytes over 4 DGX A100 machines: 28 NVSwitch routes (two links of 1.5 us) and 4 network
     * routes (7 us), plus Simple's per-step latency h on each. A step leaves when its data has
     * arrived and its route's latency has passed, so the last data to arrive has crossed 62
     * consecutive routes going back around the ring: twice around, less the two routes it did
     * not cross, at best two NVSwitch routes. Before, every step paid the slowest route. */
    struct plat_topo t;
    platform("dgx-a100 nodes=4", &t);
    double h = t.nccl.hop_s[MDL_PROTO_SIMPLE], base = t.nccl.base_s[MDL_PROTO_SIMPLE];
    double lap = 28 * (3e-6 + h) + 4 * (7e-6 + h);
    double expect = base + 2 * lap - 2 * (3e-6 + h);
    double s =
        sim_one(&t, MDL_OP_ALL_REDUCE, 32, 8, MDL_ALGO_RING, MDL_PROTO_SIMPLE, MDL_GRAN_STEP);
    cr_assert(le(dbl, fabs(s - expect), 1e-12), "simulated %.12g expected %.12g", s, expect);
    cr_assert(lt(dbl, s, base + 62 * (7e-6 + h) - 150e-6));
    /* the closed form and the flow-level ring: 62 mean route latencies */
    double mean = base + 62 * lap / 32;
    double f = formula(&t, MDL_OP_ALL_REDUCE, 32, 8, MDL_ALGO_RING, MDL_PROTO_SIMPLE);
    cr_assert(le(dbl, fabs(f - mean), 1e-9), "formula %.12g expected %.12g", f, mean);
    double fl =
        sim_one(&t, MDL_OP_ALL_REDUCE, 32, 8, MDL_ALGO_RING, MDL_PROTO_SIMPLE, MDL_GRAN_FLOW);
    cr_assert(le(dbl, fabs(fl - mean), 1e-9), "flow-level %.12g expected %.12g", fl, mean);
    plat_topo_release(&t);
}

Test(coll, a_ring_across_machines_runs_one_channel_per_nic)
{
    /* dgx-a100: 8 HDR NICs per machine (25 GB/s each). A ring all-reduce of 1 GiB over two
     * machines in 8 channels, each crossing between the machines on NICs of its own: the bus
     * bandwidth (2(n-1)/n S / t) reaches the 8 NICs' 200 GB/s, less the latency terms; in one
     * channel, one NIC's 25 GB/s. */
    struct plat_topo t;
    platform("dgx-a100 nodes=2", &t);
    double S = 1 << 30, f = 2.0 * 15 / 16;
    for (int gran = MDL_GRAN_STEP; gran <= MDL_GRAN_FLOW; gran++) {
        double tm = sim_one(&t, MDL_OP_ALL_REDUCE, 16, S, MDL_ALGO_RING, MDL_PROTO_SIMPLE,
                            (enum mdl_coll_gran)gran);
        double busbw = f * S / tm;
        cr_assert(ge(dbl, busbw, 0.99 * 200e9), "8 channels: %.4g GB/s", busbw / 1e9);
        cr_assert(le(dbl, busbw, 200e9), "8 channels: %.4g GB/s", busbw / 1e9);
    }
    t.nccl.channels = 1;
    double one =
        f * S /
        sim_one(&t, MDL_OP_ALL_REDUCE, 16, S, MDL_ALGO_RING, MDL_PROTO_SIMPLE, MDL_GRAN_STEP);
    cr_assert(ge(dbl, one, 0.99 * 25e9), "one channel: %.4g GB/s", one / 1e9);
    cr_assert(le(dbl, one, 25e9), "one channel: %.4g GB/s", one / 1e9);
    plat_topo_release(&t);
}

Test(coll, a_ring_in_fewer_channels_than_members_is_as_fast_at_flow_level_as_per_step)
{
    /* two dgx-a100 machines with 2 or 4 NICs: 2 or 4 channels, and members that no channel
     * leaves the machine from send every channel's flow to their neighbour at once. At flow
     * level those flows share the route and must start early enough: 1 GiB takes what it takes
     * per step (2 and 4 NICs' 25 GB/s of bus bandwidth), not a neighbour's flows later */
    const char *specs[] = {"dgx-a100 nodes=2 nics_per_node=2", "dgx-a100 nodes=2 nics_per_node=4"};
    for (int i = 0; i < 2; i++) {
        struct plat_topo t;
        platform(specs[i], &t);
        double S = 1 << 30;
        double step, flow;
        step_and_flow(&t, 16, S, MDL_ALGO_RING, &step, &flow);
        double busbw = 2.0 * 15 / 16 * S / flow, nic = (2 << i) * 25e9;
        cr_assert(le(dbl, fabs(flow - step), 0.01 * step), "%s: flow %g step %g", specs[i], flow,
                  step);
        cr_assert(ge(dbl, busbw, 0.99 * nic), "%s: %.4g GB/s", specs[i], busbw / 1e9);
        plat_topo_release(&t);
    }
}

Test(coll, an_irregular_group_across_machines_runs_a_channel_per_member_of_its_smaller_machine)
{
    /* 12 GPUs of two dgx-a100 machines (8 + 4) and 10 (8 + 2): the ring runs in as many channels
     * as the smaller machine has members (each enters and leaves it on a GPU of its own, so on a
     * NIC of its own), not in one channel through one NIC: 4 and 2 NICs' 25 GB/s of bus
     * bandwidth at 1 GiB, per step and at flow level, as the closed form says. Every channel
     * visits each member once, machine after machine. */
    struct plat_topo t;
    platform("dgx-a100 nodes=2", &t);
    double S = 1 << 30;
    const int ns[] = {12, 10}, want[] = {4, 2};
    for (int c = 0; c < 2; c++) {
        int n = ns[c];
        struct tune_group_env ge;
        group_env(&t, n, &ge);
        cr_assert(eq(int, ge.hier.channels, want[c]), "%d GPUs: %d channels", n, ge.hier.channels);
        /* the layout the plan gives the engine (the environment keeps its counts) */
        int ranks[16];
        for (int r = 0; r < n; r++)
            ranks[r] = r;
        struct mdl_group g = {.n = n, .ranks = ranks};
        struct cpl_layout lay;
        cr_assert(eq(int, tune_layout(&t, &g, &lay), 0));
        const struct cpl_layout *h = &lay;
        cr_assert(eq(int, h->channels, want[c]), "%d GPUs: %d channels", n, h->channels);
        cr_assert(eq(int, h->local, 0));
        for (int j = 0; j < h->channels; j++) {
            int seen[16] = {0};
            for (int p = 0; p < n; p++) {
                int i = cpl_channel_member(h, j, p);
                cr_assert(eq(int, cpl_channel_pos(h, j, i), p));
                cr_assert(eq(int, h->node_of[i], p < 8 ? 0 : 1));
                seen[i]++;
            }
            for (int i = 0; i < n; i++)
                cr_assert(eq(int, seen[i], 1));
        }
        tune_group_env_release(&ge);
        cpl_layout_release(&lay);
        double f = formula(&t, MDL_OP_ALL_REDUCE, n, S, MDL_ALGO_RING, MDL_PROTO_SIMPLE);
        double nic = want[c] * 25e9, bus = 2.0 * (n - 1) / n * S;
        cr_assert(ge(dbl, bus / f, 0.99 * nic), "%d GPUs: formula %.4g GB/s", n, bus / f / 1e9);
        cr_assert(le(dbl, bus / f, nic), "%d GPUs: formula %.4g GB/s", n, bus / f / 1e9);
        for (int gran = MDL_GRAN_STEP; gran <= MDL_GRAN_FLOW; gran++) {
            double tm = sim_one(&t, MDL_OP_ALL_REDUCE, n, S, MDL_ALGO_RING, MDL_PROTO_SIMPLE,
                                (enum mdl_coll_gran)gran);
            cr_assert(le(dbl, fabs(tm - f), 0.01 * f), "%d GPUs gran %d: %g formula %g", n, gran,
                      tm, f);
        }
    }
    plat_topo_release(&t);
}

Test(coll, a_flat_tree_across_machines_takes_at_flow_level_what_it_takes_per_step)
{
    /* 12 GPUs of two dgx-a100 machines (8 + 4) all-reduce on a flat double binary tree: a member
     * whose peers lie on NVLink and across machines starts its flows together, so that the
     * longest (across machines) ends with the closed form's time; it used to wait the NVLink
     * peer's closed form less that peer's short bulk first (37.6 ms at 256 MiB, 23.4 per step) */
    struct plat_topo t;
    platform("dgx-a100 nodes=2", &t);
    double S = 256 << 20;
    double step, flow;
    step_and_flow(&t, 12, S, MDL_ALGO_TREE, &step, &flow);
    cr_assert(le(dbl, fabs(flow - step), 0.05 * step), "flow %g step %g", flow, step);
    plat_topo_release(&t);
}

Test(coll, hierarchical_tree_pays_log_machines_latency_steps_not_a_ring_of_them)
{
    /* small all-reduce on 64 machines: the ring across machines takes 2 * 63 latency steps, the
     * trees 2 * (1 + height) with height log2(64) = 6 */
    struct plat_topo t;
    platform("dgx-a100 nodes=64", &t);
    double S = 64 << 10;
    double ring = formula(&t, MDL_OP_ALL_REDUCE, 512, S, MDL_ALGO_HIER, MDL_PROTO_LL);
    double tree = formula(&t, MDL_OP_ALL_REDUCE, 512, S, MDL_ALGO_HTREE, MDL_PROTO_LL);
    cr_assert(lt(dbl, 4 * tree, ring), "tree %g ring %g", tree, ring);
    /* the tuner takes a tree there: NCCL's, whose trees between machines have the same height */
    enum mdl_coll_algo a = tuner_algo(&t, MDL_OP_ALL_REDUCE, 512, S);
    cr_assert(eq(int, a, MDL_ALGO_TREE), "%s", mdl_algo_name(a));
    plat_topo_release(&t);
}

Test(coll, ncclS_tree_across_machines_matches_its_closed_form)
{
    /* NCCL's tree across machines (chains inside, the heads joined by double binary trees, a
     * pair of trees per NIC): flow level is the closed form on uncontended routes; per step,
     * within 8% from 64 MiB. At 1-3 MiB the few chunks of the trees meet on the NVLink ports
     * every chain shares, which the closed form's path does not charge: the simulation is up to
     * a third slower there (docs/collectives.md) */
    const char *specs[] = {"dgx-a100 nodes=2", "dgx-a100 nodes=3 nics_per_node=2",
                           "dgx-a100 nodes=4 nics_per_node=1"};
    for (int i = 0; i < 3; i++) {
        struct plat_topo t;
        platform(specs[i], &t);
        int n = t.ngpus;
        const double sizes[] = {3 << 20, 64 << 20, 1 << 30};
        for (int z = 0; z < 3; z++) {
            double S = sizes[z];
            double f = formula(&t, MDL_OP_ALL_REDUCE, n, S, MDL_ALGO_TREE, MDL_PROTO_SIMPLE);
            double step = sim_one(&t, MDL_OP_ALL_REDUCE, n, S, MDL_ALGO_TREE, MDL_PROTO_SIMPLE,
                                  MDL_GRAN_STEP);
            double flow = sim_one(&t, MDL_OP_ALL_REDUCE, n, S, MDL_ALGO_TREE, MDL_PROTO_SIMPLE,
                                  MDL_GRAN_FLOW);
            cr_assert(le(dbl, fabs(flow - f), 1e-6 * f), "%s %.0f: flow %g formula %g", specs[i], S,
                      flow, f);
            double tol = S >= 64 << 20 ? 0.08 : 0.35;
            cr_assert(le(dbl, fabs(step - f), tol * f), "%s %.0f: step %g formula %g", specs[i], S,
                      step, f);
        }
        plat_topo_release(&t);
    }
}

Test(coll, ncclS_tree_on_two_machines_sends_half_what_a_ring_sends_out_of_each)
{
    /* one HDR NIC per machine, 2 machines: in the pair of trees each machine's head sends S/2
     * down (the root of one tree) and S/2 up (the child in the other), S per direction, where a
     * ring sends 2(n-1)/n S out of every machine; the NIC (25 GB/s) bounds both, so the tree
     * takes about S / 25 GB/s and the ring 1.94 times that (with the trees' channels
     * unlimited: they are not what this measures) */
    struct plat_topo t;
    platform("dgx-a100 nodes=2 nics_per_node=1", &t);
    memset(t.nccl.tree_rate_Bps, 0, sizeof t.nccl.tree_rate_Bps);
    double S = 1 << 30;
    double tree =
        sim_one(&t, MDL_OP_ALL_REDUCE, 16, S, MDL_ALGO_TREE, MDL_PROTO_SIMPLE, MDL_GRAN_STEP);
    double ring =
        sim_one(&t, MDL_OP_ALL_REDUCE, 16, S, MDL_ALGO_RING, MDL_PROTO_SIMPLE, MDL_GRAN_STEP);
    cr_assert(le(dbl, fabs(tree - S / 25e9), 0.03 * S / 25e9), "tree %g s", tree);
    cr_assert(gt(dbl, ring / tree, 1.8), "ring %g tree %g", ring, tree);
    /* small messages: the chain (7 hops each way) and one hop between the machines, where the
     * ring takes 30 steps */
    double small_tree =
        sim_one(&t, MDL_OP_ALL_REDUCE, 16, 8, MDL_ALGO_TREE, MDL_PROTO_LL, MDL_GRAN_STEP);
    double small_ring =
        sim_one(&t, MDL_OP_ALL_REDUCE, 16, 8, MDL_ALGO_RING, MDL_PROTO_LL, MDL_GRAN_STEP);
    cr_assert(lt(dbl, small_tree, 0.7 * small_ring), "tree %g ring %g", small_tree, small_ring);
    plat_topo_release(&t);
}

Test(coll, a_trees_channel_forwards_at_most_its_rate)
{
    /* 2 machines, one NIC each: one pair of trees, each tree's channel at 5.9 GB/s (NCCL's
     * Ampere figure for two machines, a quarter per tree), far below the NIC. 256 MiB: each tree
     * carries 128 MiB in k = 256 chunks of 512 KiB, which its channels pass one after another, a
     * chunk per level to fill the pipeline (2 x 8 levels: 7 along the chain, 1 between the
     * machines): (k + 16 - 1) chunk times, per step and at flow level; twice the rate, half */
    struct plat_topo t;
    platform("dgx-a100 nodes=2 nics_per_node=1", &t);
    double S = 256 << 20, rate = mdl_nccl_tree_rate(&t.nccl, 2, MDL_PROTO_SIMPLE), c = 512 << 10;
    cr_assert(eq(dbl, rate, 23.6e9 / 4));
    double want = (256 + 16 - 1) * c / rate;
    for (int gran = MDL_GRAN_STEP; gran <= MDL_GRAN_FLOW; gran++) {
        double tree = sim_one(&t, MDL_OP_ALL_REDUCE, 16, S, MDL_ALGO_TREE, MDL_PROTO_SIMPLE, gran);
        cr_assert(le(dbl, fabs(tree - want), 0.02 * want), "%s: tree %g s, want %g",
                  mdl_gran_name((enum mdl_coll_gran)gran), tree, want);
    }
    for (int i = 0; i < 3; i++)
        t.nccl.tree_rate_Bps[i] = 2 * rate;
    double fast =
        sim_one(&t, MDL_OP_ALL_REDUCE, 16, S, MDL_ALGO_TREE, MDL_PROTO_SIMPLE, MDL_GRAN_STEP);
    cr_assert(le(dbl, fabs(fast - want / 2), 0.02 * want / 2), "tree %g s", fast);
    plat_topo_release(&t);
}

Test(coll, the_tuner_takes_ncclS_tree_across_machines_where_it_is_faster_than_the_ring)
{
    /* 16 machines of 8 GPUs (8 NICs each): a ring of 128 GPUs pays 254 steps, the trees 2 x (7
     * + 4) levels, so 1 MiB runs on the trees; at 1 GiB their channels (16 trees x 4.45 GB/s
     * over more than two machines) are slower than the ring, which runs */
    struct plat_topo t;
    platform("dgx-a100 nodes=16", &t);
    cr_assert(eq(int, tuner_algo(&t, MDL_OP_ALL_REDUCE, 128, 1 << 20), MDL_ALGO_TREE));
    cr_assert(eq(int, tuner_algo(&t, MDL_OP_ALL_REDUCE, 128, 1 << 30), MDL_ALGO_RING));
    /* inside one machine the ring (NCCL's tree there is a chain, not modelled) */
    cr_assert(eq(int, tuner_algo(&t, MDL_OP_ALL_REDUCE, 8, 1 << 20), MDL_ALGO_RING));
    plat_topo_release(&t);
}

Test(coll, flow_level_still_slows_down_on_shared_links)
{
    /* pcie-8gpu: the ring's hops 3->4 and 7->0 share the root complex */
    struct plat_topo t;
    platform("pcie-8gpu", &t);
    double S = 256 << 20;
    double step, flow;
    step_and_flow(&t, 8, S, MDL_ALGO_RING, &step, &flow);
    /* uncontended: each route alone would carry B; two flows share the root complex at B */
    struct plat_route r;
    cr_assert(eq(int, plat_topo_route(&t, 0, 1, &r), 0));
    double alone = t.nccl.base_s[MDL_PROTO_SIMPLE] +
                   14 * (r.lat_s + t.nccl.hop_s[MDL_PROTO_SIMPLE]) + 14.0 / 8 * S / r.bw_Bps;
    cr_assert(gt(dbl, flow, 1.8 * alone), "flow %.6g vs uncontended %.6g", flow, alone);
    cr_assert(le(dbl, fabs(flow - step) / step, 0.01), "flow %.9g step %.9g", flow, step);
    plat_topo_release(&t);
}

Test(coll, tuner_picks_latency_bound_protocols_for_small_and_simple_for_large)
{
    struct plat_topo t;
    platform("dgx-a100", &t);
    int ranks[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    struct mdl_group g = {.n = 8, .ranks = ranks};
    struct tune_group_env ge;
    struct tps_error err = {0};
    cr_assert(eq(int, tune_group_env(&t, &g, &ge, &err), 0));
    enum mdl_coll_algo a = MDL_ALGO_AUTO;
    enum mdl_coll_proto p = MDL_PROTO_AUTO;
    cr_assert(gt(dbl, tune_choose(&ge, &t.nccl, MDL_OP_ALL_REDUCE, 1024, &a, &p, &err), 0));
    cr_assert(eq(int, p, MDL_PROTO_LL));
    a = MDL_ALGO_AUTO;
    p = MDL_PROTO_AUTO;
    cr_assert(gt(dbl, tune_choose(&ge, &t.nccl, MDL_OP_ALL_REDUCE, 1 << 30, &a, &p, &err), 0));
    cr_assert(eq(int, p, MDL_PROTO_SIMPLE));
    /* a forced algorithm that cannot run the collective is an error naming it */
    a = MDL_ALGO_TREE;
    p = MDL_PROTO_AUTO;
    cr_assert(lt(dbl, tune_choose(&ge, &t.nccl, MDL_OP_ALL_GATHER, 1024, &a, &p, &err), 0));
    cr_assert(ne(ptr, strstr(err.msg, "tree"), NULL), "%s", err.msg);
    cr_assert(ne(ptr, strstr(err.msg, "does not implement"), NULL), "%s", err.msg);
    a = MDL_ALGO_HTREE; /* all-reduce only */
    p = MDL_PROTO_AUTO;
    memset(&err, 0, sizeof err);
    cr_assert(lt(dbl, tune_choose(&ge, &t.nccl, MDL_OP_ALL_GATHER, 1024, &a, &p, &err), 0));
    cr_assert(ne(ptr, strstr(err.msg, "'hierarchical_tree' cannot run all_gather"), NULL), "%s",
              err.msg);
    /* a platform-wide algorithm applies where it can: send/recv still gets direct */
    struct mdl_nccl nc = t.nccl;
    nc.algo = MDL_ALGO_RING;
    a = MDL_ALGO_AUTO;
    p = MDL_PROTO_AUTO;
    cr_assert(gt(dbl, tune_choose(&ge, &nc, MDL_OP_ALL_REDUCE, 1 << 30, &a, &p, &err), 0));
    cr_assert(eq(int, a, MDL_ALGO_RING));
    tune_group_env_release(&ge);
    int pair[2] = {0, 1};
    struct mdl_group g2 = {.n = 2, .ranks = pair};
    cr_assert(eq(int, tune_group_env(&t, &g2, &ge, &err), 0));
    a = MDL_ALGO_AUTO;
    p = MDL_PROTO_AUTO;
    cr_assert(gt(dbl, tune_choose(&ge, &nc, MDL_OP_SEND_RECV, 4096, &a, &p, &err), 0), "%s",
              err.msg);
    cr_assert(eq(int, a, MDL_ALGO_DIRECT));
    tune_group_env_release(&ge);
    plat_topo_release(&t);
}

Test(coll, multi_node_platform_is_zoned_and_matches_the_flat_closed_form)
{
    /* 64 nodes, oversubscribed leaves: the zoned XML must give the routes the topology gives */
    struct plat_topo t;
    platform("dgx-h100 nodes=64 oversubscription=2 leaf_ports=16", &t);
    double S = 64 << 20;
    double f = formula(&t, MDL_OP_ALL_REDUCE, 512, S, MDL_ALGO_HIER, MDL_PROTO_SIMPLE);
    double s =
        sim_one(&t, MDL_OP_ALL_REDUCE, 512, S, MDL_ALGO_HIER, MDL_PROTO_SIMPLE, MDL_GRAN_AUTO);
    cr_assert(le(dbl, fabs(s - f) / f, TOL), "simulated %.12g formula %.12g", s, f);
    plat_topo_release(&t);
}

Test(coll, auto_granularity_goes_flow_level_past_the_threshold_in_members_or_machines)
{
    cr_assert_not(mdl_coll_flow_level(MDL_GRAN_AUTO, 8, 0, 32));
    cr_assert(mdl_coll_flow_level(MDL_GRAN_AUTO, 33, 0, 32));
    cr_assert_not(mdl_coll_flow_level(MDL_GRAN_AUTO, 8, 32, 32)); /* inside one of 32 machines */
    cr_assert(mdl_coll_flow_level(MDL_GRAN_AUTO, 8, 33, 32));     /* inside one of 33 */
    cr_assert_not(mdl_coll_flow_level(MDL_GRAN_STEP, 64, 64, 32));
    cr_assert(mdl_coll_flow_level(MDL_GRAN_FLOW, 2, 0, 32));
    /* and the rings take the same time either way, uncontended: 40 machines of 8 GPUs */
    struct plat_topo t;
    platform("dgx-a100 nodes=40", &t);
    double S = 64 << 20;
    double step =
        sim_one(&t, MDL_OP_ALL_REDUCE, 320, S, MDL_ALGO_HIER, MDL_PROTO_SIMPLE, MDL_GRAN_STEP);
    double aut =
        sim_one(&t, MDL_OP_ALL_REDUCE, 320, S, MDL_ALGO_HIER, MDL_PROTO_SIMPLE, MDL_GRAN_AUTO);
    cr_assert(le(dbl, fabs(step - aut), TOL * step), "step %.12g auto %.12g", step, aut);
    plat_topo_release(&t);
}

Test(coll, nvls_matches_its_closed_form_and_moves_s_times_1_plus_1_over_n_per_link)
{
    /* NVLS on the datasheet H100 box: each GPU's link carries S (1 + 1/n) each way, at the
     * link's rate times nvls_efficiency, after two latency steps (the switch's reduction and
     * its multicast) */
    struct plat_topo t;
    platform("dgx-h100", &t);
    cr_assert(t.nccl.nvls);
    const double sizes[] = {4096, 3 << 20, 256 << 20};
    for (int si = 0; si < 3; si++)
        for (int n = 2; n <= 8; n *= 2)
            check(&t, MDL_OP_ALL_REDUCE, n, sizes[si], MDL_ALGO_NVLS, MDL_PROTO_SIMPLE, TOL);
    double S = 1 << 30, e = t.nccl.nvls_eff;
    double expect = t.nccl.base_s[MDL_PROTO_SIMPLE] + 2 * (3e-6 + t.nccl.hop_s[MDL_PROTO_SIMPLE]) +
                    S * 9 / 8 / (450e9 * e);
    double s = sim_one(&t, MDL_OP_ALL_REDUCE, 8, S, MDL_ALGO_NVLS, MDL_PROTO_SIMPLE, MDL_GRAN_AUTO);
    cr_assert(le(dbl, fabs(s - expect), 1e-6 * expect), "simulated %.9g expected %.9g", s, expect);
    plat_topo_release(&t);
}

Test(coll, nvls_runs_where_an_nvswitch_reduces_and_wins_at_eight_gpus)
{
    struct plat_topo h, a, h2, off;
    struct tps_error err = {0};
    /* the presets as shipped (fitted values) */
    char *kv2[] = {"nodes=2"};
    cr_assert(eq(int, plat_spec_from_args("dgx-h100", 0, NULL, &h, &err), 0), "%s", err.msg);
    cr_assert(eq(int, plat_spec_from_args("dgx-a100", 0, NULL, &a, &err), 0), "%s", err.msg);
    cr_assert(eq(int, plat_spec_from_args("dgx-h100", 1, kv2, &h2, &err), 0), "%s", err.msg);
    cr_assert(eq(int, plat_spec_from_args("dgx-h100", 0, NULL, &off, &err), 0), "%s", err.msg);
    off.nccl.nvls = false;
    double G = 1 << 30;
    /* 2(n-1)/(n+1) of NVLS's per-link rate against the ring's one: NVLS from 8 GPUs, the ring
     * on 2 */
    cr_assert(eq(int, tuner_algo(&h, MDL_OP_ALL_REDUCE, 8, G), MDL_ALGO_NVLS));
    cr_assert(eq(int, tuner_algo(&h, MDL_OP_ALL_REDUCE, 2, G), MDL_ALGO_RING));
    /* inside one machine NCCL's tree is a chain, not modelled: no binary tree there, even for
     * the small sizes where one would win */
    cr_assert(eq(int, tuner_algo(&a, MDL_OP_ALL_REDUCE, 8, 1024), MDL_ALGO_RING));
    /* only all-reduce; no NVLS on A100, across machines, or when the platform turns it off */
    cr_assert(eq(int, tuner_algo(&h, MDL_OP_ALL_GATHER, 8, G), MDL_ALGO_RING));
    cr_assert(ne(int, tuner_algo(&a, MDL_OP_ALL_REDUCE, 8, G), MDL_ALGO_NVLS));
    cr_assert(ne(int, tuner_algo(&h2, MDL_OP_ALL_REDUCE, 16, G), MDL_ALGO_NVLS));
    cr_assert(ne(int, tuner_algo(&off, MDL_OP_ALL_REDUCE, 8, G), MDL_ALGO_NVLS));
    /* the preset reaches the 475 GB/s bus bandwidth real 8-GPU H100 logs show at 4 GiB */
    struct pipeline_coll_how how = {0};
    double time = 0, S = 4.0 * G;
    cr_assert(eq(int, pipeline_collective(&h, MDL_OP_ALL_REDUCE, 8, S, &how, &time, &err), 0), "%s",
              err.msg);
    double busbw = S / time * mdl_coll_busbw_factor(MDL_OP_ALL_REDUCE, 8);
    cr_assert(le(dbl, fabs(busbw - 475e9), 0.01 * 475e9), "busbw %.1f GB/s", busbw / 1e9);
    /* forcing NVLS where it cannot run is an error, not a silent ring */
    how = (struct pipeline_coll_how){MDL_ALGO_NVLS, 0, 0};
    cr_assert(ne(int, pipeline_collective(&a, MDL_OP_ALL_REDUCE, 8, S, &how, &time, &err), 0));
    cr_assert(ne(ptr, strstr(err.msg, "NVLS needs"), NULL), "%s", err.msg);
    plat_topo_release(&h);
    plat_topo_release(&a);
    plat_topo_release(&h2);
    plat_topo_release(&off);
}

Test(coll, nvls_tree_matches_its_closed_form_across_nvswitch_machines)
{
    /* the datasheet H100 boxes, 2 and 4 of them: from latency-bound to the switch's and the
     * NICs' bandwidth (check: per step within a route latency and two chunk times on the tree,
     * and two portions through the switch; flow level as closed) */
    for (int nodes = 2; nodes <= 4; nodes *= 2) {
        char spec[48];
        snprintf(spec, sizeof spec, "dgx-h100 nodes=%d", nodes);
        struct plat_topo t;
        platform(spec, &t);
        const double sizes[] = {4096, 3 << 20, 256 << 20, 1 << 30};
        for (int si = 0; si < 4; si++)
            check(&t, MDL_OP_ALL_REDUCE, t.ngpus, sizes[si], MDL_ALGO_NVLS_TREE, MDL_PROTO_SIMPLE,
                  TOL);
        plat_topo_release(&t);
    }
    /* 2 machines at 1 GiB, bound by the switch or the NICs: a GPU's link carries S (1 + 1/8)
     * each way at 450 GB/s times the efficiencies, its NIC its slice S/8 each way (half up one
     * tree, half down the other) at the rate NCCL's 2 channels reach (2 x 20.04 GB/s, the
     * slower since 2026-11-27), after the reduction's and the multicast's latency, plus the last
     * chunk's way up and down its 2-machine tree: a tree's 8 channels' chunks of 128 KiB (NCCL's
     * NVLS chunk), 1 MiB of each GPU's slice */
    struct plat_topo t;
    platform("dgx-h100 nodes=2", &t);
    double S = 1 << 30, e = t.nccl.nvls_eff * t.nccl.eff[MDL_PROTO_SIMPLE];
    double s =
        sim_one(&t, MDL_OP_ALL_REDUCE, 16, S, MDL_ALGO_NVLS_TREE, MDL_PROTO_SIMPLE, MDL_GRAN_STEP);
    struct plat_route in, out; /* to the machine's next GPU; to the next machine's first */
    cr_assert(eq(int, plat_topo_route(&t, 0, 1, &in), 0));
    cr_assert(eq(int, plat_topo_route(&t, 0, 8, &out), 0));
    double hop = t.nccl.hop_s[MDL_PROTO_SIMPLE], c = 1 << 20;
    double sw = S * 9 / 8 / (450e9 * e), nic = S / 8 / (out.bw_Bps * t.nccl.eff[MDL_PROTO_SIMPLE]);
    cr_assert(ieee_ulp_eq(dbl, out.bw_Bps, 2 * 20.04e9, 4));
    double expect = t.nccl.base_s[MDL_PROTO_SIMPLE] + 2 * (in.lat_s + hop) + (sw > nic ? sw : nic) +
                    2 * (out.lat_s + hop + c / (out.bw_Bps * t.nccl.eff[MDL_PROTO_SIMPLE]));
    cr_assert(le(dbl, fabs(s - expect), 2e-3 * expect), "simulated %.9g expected %.9g", s, expect);
    plat_topo_release(&t);
}

Test(coll, the_tuner_takes_nvls_tree_across_nvswitch_machines_where_it_wins)
{
    struct plat_topo h2, off, a2;
    struct tps_error err = {0};
    char *kv2[] = {"nodes=2"};
    cr_assert(eq(int, plat_spec_from_args("dgx-h100", 1, kv2, &h2, &err), 0), "%s", err.msg);
    cr_assert(eq(int, plat_spec_from_args("dgx-h100", 1, kv2, &off, &err), 0), "%s", err.msg);
    cr_assert(eq(int, plat_spec_from_args("dgx-a100", 1, kv2, &a2, &err), 0), "%s", err.msg);
    off.nccl.nvls_tree = false;
    double G = 1 << 30;
    /* at 1 GiB the switch halves what leaves each GPU for the NICs: NVLS-tree; at 64 KiB its
     * two switch steps lose to NCCL's tree */
    cr_assert(eq(int, tuner_algo(&h2, MDL_OP_ALL_REDUCE, 16, G), MDL_ALGO_NVLS_TREE));
    cr_assert(ne(int, tuner_algo(&h2, MDL_OP_ALL_REDUCE, 16, 64 << 10), MDL_ALGO_NVLS_TREE));
    /* all-reduce only; not inside one machine (NVLS), not without NVLS, not when turned off */
    cr_assert(eq(int, tuner_algo(&h2, MDL_OP_ALL_GATHER, 16, G), MDL_ALGO_RING));
    cr_assert(eq(int, tuner_algo(&h2, MDL_OP_ALL_REDUCE, 8, G), MDL_ALGO_NVLS));
    cr_assert(ne(int, tuner_algo(&off, MDL_OP_ALL_REDUCE, 16, G), MDL_ALGO_NVLS_TREE));
    cr_assert(ne(int, tuner_algo(&a2, MDL_OP_ALL_REDUCE, 16, G), MDL_ALGO_NVLS_TREE));
    /* faster than the ring and NCCL's tree there, as the switch and the NICs share the work */
    double nt = sim_one(&h2, MDL_OP_ALL_REDUCE, 16, G, MDL_ALGO_NVLS_TREE, 0, 0);
    double ring = sim_one(&h2, MDL_OP_ALL_REDUCE, 16, G, MDL_ALGO_RING, 0, 0);
    cr_assert(lt(dbl, nt, 0.9 * ring), "nvls_tree %.9g ring %.9g", nt, ring);
    /* forcing it where it cannot run is an error that says what it needs */
    struct pipeline_coll_how how = {MDL_ALGO_NVLS_TREE, 0, 0};
    cr_assert(ne(int, pipeline_collective(&off, MDL_OP_ALL_REDUCE, 16, G, &how, &nt, &err), 0));
    cr_assert(ne(ptr, strstr(err.msg, "NVLS-tree needs"), NULL), "%s", err.msg);
    cr_assert(ne(int, pipeline_collective(&a2, MDL_OP_ALL_REDUCE, 16, G, &how, &nt, &err), 0));
    cr_assert(ne(int, pipeline_collective(&h2, MDL_OP_ALL_REDUCE, 8, G, &how, &nt, &err), 0));
    plat_topo_release(&h2);
    plat_topo_release(&off);
    plat_topo_release(&a2);
}

Test(coll, collnet_matches_its_closed_form_across_machines)
{
    /* datasheet A100 boxes with 8 NICs, and with one NIC that the 8 rails share: per step
     * within the first chunk's way through the three stages (scatter, network, gather), flow
     * level as closed */
    const char *specs[] = {"dgx-a100 nodes=2", "dgx-a100 nodes=4",
                           "dgx-a100 nodes=4 nics_per_node=1"};
    for (int i = 0; i < 3; i++) {
        struct plat_topo t;
        platform(specs[i], &t);
        t.nccl.collnet = true;
        struct tune_group_env ge;
        group_env(&t, t.ngpus, &ge);
        struct mdl_coll_env e;
        tune_coll_env(&ge, &t.nccl, MDL_PROTO_SIMPLE, &e);
        tune_group_env_release(&ge);
        const double sizes[] = {4096, 3 << 20, 256 << 20, 1 << 30};
        for (int si = 0; si < 4; si++) {
            double S = sizes[si], L = 8;
            double c = S / L / mdl_collnet_chunks(S / L, t.nccl.chunk_bytes);
            double fill = 2 * (L - 1) * c / e.intra.bw_Bps + c / e.inter.bw_Bps;
            double f = mdl_coll_time(MDL_OP_ALL_REDUCE, MDL_ALGO_COLLNET, S, &e);
            cr_assert(gt(dbl, f, 0));
            for (int gran = MDL_GRAN_STEP; gran <= MDL_GRAN_FLOW; gran++) {
                double s = sim_one(&t, MDL_OP_ALL_REDUCE, t.ngpus, S, MDL_ALGO_COLLNET,
                                   MDL_PROTO_SIMPLE, (enum mdl_coll_gran)gran);
                double tol = TOL * f + (gran == MDL_GRAN_STEP ? fill : 0);
                cr_assert(le(dbl, fabs(s - f), tol), "%s S=%.0f %s: simulated %.9g formula %.9g",
                          specs[i], S, mdl_gran_name((enum mdl_coll_gran)gran), s, f);
            }
        }
        /* one NIC per machine binds: it sends S once and gets the sum once (a ring's would
         * carry 2(N-1)/N S each way) */
        if (i == 2) {
            double S = 1 << 30, nic = 25e9 * t.nccl.eff[MDL_PROTO_SIMPLE];
            double s = sim_one(&t, MDL_OP_ALL_REDUCE, t.ngpus, S, MDL_ALGO_COLLNET,
                               MDL_PROTO_SIMPLE, MDL_GRAN_STEP);
            cr_assert(le(dbl, fabs(s - S / nic), 0.01 * S / nic), "simulated %.9g, S/NIC %.9g", s,
                      S / nic);
        }
        plat_topo_release(&t);
    }
    /* one GPU in each of 4 machines (a data-parallel group): the network stage alone */
    struct plat_topo t;
    platform("dgx-a100 nodes=4", &t);
    t.nccl.collnet = true;
    int members[] = {0, 8, 16, 24};
    struct mdl_group g = {.n = 4, .ranks = members};
    struct tune_group_env ge;
    struct tps_error err = {0};
    cr_assert(eq(int, tune_group_env(&t, &g, &ge, &err), 0), "%s", err.msg);
    struct mdl_coll_env e;
    tune_coll_env(&ge, &t.nccl, MDL_PROTO_SIMPLE, &e);
    tune_group_env_release(&ge);
    for (double S = 4096; S <= 1 << 30; S *= 512) {
        double f = mdl_coll_time(MDL_OP_ALL_REDUCE, MDL_ALGO_COLLNET, S, &e);
        cr_assert(gt(dbl, f, 0));
        for (int gran = MDL_GRAN_STEP; gran <= MDL_GRAN_FLOW; gran++) {
            struct pipeline_coll_how how = {MDL_ALGO_COLLNET, MDL_PROTO_SIMPLE, gran};
            double s = 0;
            cr_assert(
                eq(int,
                   pipeline_collective_on(&t, MDL_OP_ALL_REDUCE, members, 4, S, &how, &s, &err), 0),
                "%s", err.msg);
            cr_assert(le(dbl, fabs(s - f), TOL * f), "S=%.0f: simulated %.9g formula %.9g", S, s,
                      f);
        }
    }
    plat_topo_release(&t);
}

Test(coll, the_tuner_takes_collnet_only_where_the_network_reduces)
{
    struct plat_topo a, on;
    struct tps_error err = {0};
    char *kv[] = {"nodes=4", "nics_per_node=1"};
    cr_assert(eq(int, plat_spec_from_args("dgx-a100", 2, kv, &a, &err), 0), "%s", err.msg);
    cr_assert(eq(int, plat_spec_from_args("dgx-a100", 2, kv, &on, &err), 0), "%s", err.msg);
    cr_assert(eq(int, a.nccl.collnet, 0));
    on.nccl.collnet = true;
    double G = 1 << 30;
    /* off unless the platform says its switches reduce */
    cr_assert(ne(int, tuner_algo(&a, MDL_OP_ALL_REDUCE, 32, G), MDL_ALGO_COLLNET));
    /* on, it halves what the one NIC carries against the ring: chosen at 1 GiB; not inside one
     * machine, not for other collectives */
    cr_assert(eq(int, tuner_algo(&on, MDL_OP_ALL_REDUCE, 32, G), MDL_ALGO_COLLNET));
    cr_assert(ne(int, tuner_algo(&on, MDL_OP_ALL_REDUCE, 8, G), MDL_ALGO_COLLNET));
    cr_assert(eq(int, tuner_algo(&on, MDL_OP_ALL_GATHER, 32, G), MDL_ALGO_RING));
    double cn = sim_one(&on, MDL_OP_ALL_REDUCE, 32, G, MDL_ALGO_COLLNET, 0, 0);
    double ring = sim_one(&on, MDL_OP_ALL_REDUCE, 32, G, MDL_ALGO_RING, 0, 0);
    cr_assert(lt(dbl, cn, 0.6 * ring), "collnet %.9g ring %.9g", cn, ring);
    /* forced where the switches do not reduce: an error that says what it needs */
    struct pipeline_coll_how how = {MDL_ALGO_COLLNET, 0, 0};
    cr_assert(ne(int, pipeline_collective(&a, MDL_OP_ALL_REDUCE, 32, G, &how, &cn, &err), 0));
    cr_assert(ne(ptr, strstr(err.msg, "CollNet needs"), NULL), "%s", err.msg);
    cr_assert(ne(int, pipeline_collective(&on, MDL_OP_ALL_REDUCE, 8, G, &how, &cn, &err), 0));
    plat_topo_release(&a);
    plat_topo_release(&on);
}

static bool same_routes(const struct cpl_routes *a, const struct cpl_routes *b)
{
    return a->lat == b->lat && a->bw == b->bw && a->mean_lat == b->mean_lat &&
           a->mean_bw == b->mean_bw;
}

/* Field by field (the padding of two equal environments may differ). */
static bool same_env(const struct tune_group_env *a, const struct tune_group_env *b)
{
    return a->n == b->n && a->hier.local == b->hier.local && a->hier.nodes == b->hier.nodes &&
           a->hier.channels == b->hier.channels && a->hier.machines == b->hier.machines &&
           same_routes(&a->flat, &b->flat) && same_routes(&a->intra, &b->intra) &&
           same_routes(&a->inter, &b->inter) && same_routes(&a->chan, &b->chan) &&
           same_routes(&a->heads, &b->heads) && a->nvls == b->nvls &&
           a->nvls_tree == b->nvls_tree && a->collnet == b->collnet && a->spans == b->spans;
}

Test(coll, a_remembered_collective_environment_is_the_one_built_for_its_groups)
{
    struct tps_error err = {0};
    struct plat_topo t;
    cr_assert(eq(int, plat_spec_from_line("dgx-a100 nodes=4", &t, &err), 0), "%s", err.msg);
    int r0[8], r1[8];
    for (int i = 0; i < 8; i++) {
        r0[i] = 4 * i;     /* one GPU of each ... */
        r1[i] = 4 * i + 1; /* ... and the next, across the 4 machines */
    }
    struct mdl_group g0 = {.n = 8, .ranks = r0}, g1 = {.n = 8, .ranks = r1};
    const struct mdl_group *set[2] = {&g0, &g1};
    struct tune_env_memo m = {0};
    enum mdl_op_kind kinds[] = {MDL_OP_ALL_REDUCE, MDL_OP_ALL_GATHER, MDL_OP_REDUCE_SCATTER};
    const struct tune_group_env *seen[3];
    for (int k = 0; k < 3; k++)
        for (int twice = 0; twice < 2; twice++) {
            const struct tune_group_env *e;
            struct tune_group_env want;
            cr_assert(eq(int, tune_group_env_memo(&m, &t, set, 2, kinds[k], &e, &err), 0));
            cr_assert(eq(int, tune_group_env_set(&t, set, 2, kinds[k], &want, &err), 0));
            cr_assert(same_env(e, &want), "kind %d", k);
            tune_group_env_release(&want);
            if (!twice) seen[k] = e;
            cr_assert(eq(ptr, (void *)e, (void *)seen[k]), "asked again: the same entry");
        }
    /* an all-gather and a reduce-scatter see the same links; an all-reduce adds its trees */
    cr_assert(eq(ptr, (void *)seen[1], (void *)seen[2]));
    cr_assert(ne(ptr, (void *)seen[0], (void *)seen[1]));
    cr_assert(eq(int, m.n, 2));
    tune_env_memo_release(&m);
    plat_topo_release(&t);
}
