/* test_collective.c - the ring closed forms of models/collective.c against hand-computed values:
 * the critical path and the queue on the slowest route, rings in channels, and the trees' chunks.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>

#include "models/collective.h"

static void near(double got, double want)
{
    cr_assert(le(dbl, fabs(got - want), 1e-12 * want), "got %.15g want %.15g", got, want);
}

Test(collective, a_ring_costs_its_critical_path_or_the_queue_on_its_slowest_route)
{
    /* routes: largest latency 9 us, mean 5.5 us; slowest 25 GB/s, harmonic mean 100 GB/s */
    struct mdl_coll_path p = {
        .alpha_s = 9e-6, .bw_Bps = 25e9, .ring_alpha_s = 5.5e-6, .ring_bw_Bps = 100e9};
    /* small chunks: 62 steps of mean latency plus chunk at the mean bandwidth */
    near(mdl_coll_ring(62, 1e3, &p), 62 * (5.5e-6 + 1e3 / 100e9));
    /* large chunks: 62 chunks queue on the 25 GB/s route, plus its latency once */
    near(mdl_coll_ring(62, 1e7, &p), 62 * 1e7 / 25e9 + 9e-6);
    /* equal routes: the familiar steps (alpha + chunk / B) */
    struct mdl_coll_path u = {3e-6, 300e9, 3e-6, 300e9};
    near(mdl_coll_ring(14, 1e6, &u), 14 * (3e-6 + 1e6 / 300e9));
}

Test(collective, a_ring_in_channels_is_one_ring_of_s_over_channels_on_their_routes)
{
    struct mdl_coll_env e = {.n = 16, .base_s = 10e-6, .channels = 8};
    e.all = (struct mdl_coll_path){7e-6, 25e9, 7e-6, 25e9};
    e.chan = (struct mdl_coll_path){7e-6, 25e9, 3.5e-6, 100e9};
    double S = 1 << 30;
    near(mdl_coll_time(MDL_OP_ALL_REDUCE, MDL_ALGO_RING, S, &e),
         10e-6 + mdl_coll_ring(30, S / 16 / 8, &e.chan));
    near(mdl_coll_time(MDL_OP_ALL_GATHER, MDL_ALGO_RING, S, &e),
         10e-6 + mdl_coll_ring(15, S / 16 / 8, &e.chan));
    e.channels = 1; /* one ring: the flat routes, all of S */
    near(mdl_coll_time(MDL_OP_ALL_REDUCE, MDL_ALGO_RING, S, &e),
         10e-6 + mdl_coll_ring(30, S / 16, &e.all));
}

Test(collective, a_tree_halves_its_chunk_until_its_levels_fill_the_pipeline)
{
    const double K = 1024, M = 1024 * K;
    /* long trees keep the 512 KiB step: 64 MiB per tree of height 3 -> 128 chunks; 1 GiB
     * would be 2048, capped */
    cr_assert(eq(int, mdl_tree_chunks(64 * M, 512 * K, 3), 128));
    cr_assert(eq(int, mdl_tree_chunks(1024 * M, 512 * K, 3), MDL_MAX_TREE_CHUNKS));
    /* 2 MiB, height 2: 512 KiB gives 4 < 16, 256 KiB 8 < 16, 128 KiB 16 */
    cr_assert(eq(int, mdl_tree_chunks(2 * M, 512 * K, 2), 16));
    /* 256 KiB, height 2: 128 KiB (2 < 16, floor), 64 KiB (4 < 8, floor), then 4 >= 2: 4 chunks */
    cr_assert(eq(int, mdl_tree_chunks(256 * K, 512 * K, 2), 4));
    /* 16 KiB, height 3: down to the 32 KiB floor, one chunk */
    cr_assert(eq(int, mdl_tree_chunks(16 * K, 512 * K, 3), 1));
    /* a chunk set below the floors is kept */
    cr_assert(eq(int, mdl_tree_chunks(1 * M, 16 * K, 2), 64));
}

Test(collective, nvls_tree_chunks_as_nccl_sizes_them_per_channel)
{
    const double K = 1024, M = 1024 * K;
    /* 16 channels x 8 GPUs = 128 pipelines of 128 KiB on 2 machines: 1 GiB in 64 chunks */
    cr_assert(eq(int, mdl_nvls_tree_chunks(1024 * M, 8, 2, 16, 128 * K), 64));
    /* 64 MiB is not under 4 x 128 x 128 KiB: 128 KiB, 4 chunks; 32 MiB is: 64 KiB, 4 chunks */
    cr_assert(eq(int, mdl_nvls_tree_chunks(64 * M, 8, 2, 16, 128 * K), 4));
    cr_assert(eq(int, mdl_nvls_tree_chunks(32 * M, 8, 2, 16, 128 * K), 4));
    /* 4 MiB is under 128 x 64 KiB: 32 KiB, one chunk */
    cr_assert(eq(int, mdl_nvls_tree_chunks(4 * M, 8, 2, 16, 128 * K), 1));
    /* from 4 machines at most 64 KiB: 1 GiB in 128 */
    cr_assert(eq(int, mdl_nvls_tree_chunks(1024 * M, 8, 4, 16, 128 * K), 128));
    /* 24 channels (NCCL_MIN_CTAS=24) on 8 machines: ceil(1 GiB / (24 x 8 x 64 KiB)) */
    cr_assert(eq(int, mdl_nvls_tree_chunks(1024 * M, 8, 8, 24, 128 * K), 86));
    /* capped: 32 GiB on 2 machines would be 2048 */
    cr_assert(eq(int, mdl_nvls_tree_chunks(32768 * M, 8, 2, 16, 128 * K), MDL_MAX_TREE_CHUNKS));
}

/* Every tree of a shape: one root, each other member its parent's child, heights and depths
 * consistent with the links; returns the root. */
static int tree_check(const struct mdl_tree_shape *s, int t)
{
    int root = -1, top = 0;
    for (int i = 0; i < s->n; i++) {
        int parent, ch[MDL_TREE_ARITY];
        int nc = mdl_tree_links(s, t, i, &parent, ch);
        cr_assert(le(int, nc, MDL_TREE_ARITY));
        if (parent < 0) {
            cr_assert(eq(int, root, -1), "tree %d has two roots", t);
            root = i;
            cr_assert(eq(int, mdl_tree_depth(s, t, i), 0));
        } else {
            int pp, pc[MDL_TREE_ARITY], found = 0;
            int pn = mdl_tree_links(s, t, parent, &pp, pc);
            for (int j = 0; j < pn; j++)
                found |= pc[j] == i;
            cr_assert(found, "member %d is not a child of its parent %d in tree %d", i, parent, t);
            cr_assert(eq(int, mdl_tree_depth(s, t, i), mdl_tree_depth(s, t, parent) + 1));
        }
        int h = 0;
        for (int j = 0; j < nc; j++) {
            int hc = mdl_tree_height(s, t, ch[j]) + 1;
            if (hc > h) h = hc;
        }
        cr_assert(eq(int, mdl_tree_height(s, t, i), h), "member %d of tree %d", i, t);
        if (h > top) top = h;
    }
    cr_assert(ge(int, root, 0));
    cr_assert(eq(int, mdl_tree_top(s), top));
    return root;
}

Test(collective, ncclS_tree_chains_each_machine_and_joins_the_heads_across_machines)
{
    for (int N = 2; N <= 9; N += 7)
        for (int L = 2; L <= 8; L *= 2)
            for (int P = 1; P <= L && P <= 4; P *= 2) {
                struct mdl_tree_shape s;
                cr_assert(eq(int, mdl_tree_shape_machines(&s, N, L, P), 0));
                cr_assert(eq(int, s.trees, 2 * P));
                for (int t = 0; t < s.trees; t++) {
                    int h = mdl_tree_head(&s, t), root = tree_check(&s, t);
                    /* both trees of a pair enter every machine at the same member; tree A's root
                     * is machine 0's head, tree B's machine N-1's (N even, the mirror) or
                     * machine 1's (N odd, the shift), as NCCL's ncclGetDtreeRoots */
                    cr_assert(eq(int, h, mdl_tree_head(&s, t ^ 1)));
                    cr_assert(eq(int, root, (t % 2 ? (N % 2 ? 1 : N - 1) : 0) * L + h));
                    /* the trees' height: a chain through L members, then log2 of the power of
                     * two at or above the machines (2: 1; 9: 4) */
                    cr_assert(eq(int, mdl_tree_top(&s), L - 1 + (N == 2 ? 1 : 4)));
                    for (int i = 0; i < s.n; i++) {
                        int parent, ch[MDL_TREE_ARITY];
                        int nc = mdl_tree_links(&s, t, i, &parent, ch);
                        /* only heads cross machines: to the parent machine's head and to up to
                         * two child machines' heads */
                        for (int j = -1; j < nc; j++) {
                            int q = j < 0 ? parent : ch[j];
                            if (q < 0 || q / L == i / L) continue;
                            cr_assert(eq(int, i % L, h));
                            cr_assert(eq(int, q % L, h));
                        }
                    }
                }
                /* pairs enter machines at distinct members */
                for (int p = 1; p < P; p++)
                    cr_assert(ne(int, mdl_tree_head(&s, 2 * p), mdl_tree_head(&s, 2 * p - 2)));
            }
    struct mdl_tree_shape s;
    cr_assert(eq(int, mdl_tree_shape_machines(&s, 4, 2, 3), -1)); /* more pairs than members */
    mdl_tree_shape_flat(&s, 7);
    cr_assert(eq(int, tree_check(&s, 0), 0));
    cr_assert(eq(int, tree_check(&s, 1), 1));
}

/* The trees NCCL draws in src/graph/trees.cc: 12 members (mirror) and 13 (shift). */
Test(collective, the_double_binary_tree_is_ncclS)
{
    struct {
        int n, t, member, parent, nc, c0, c1;
    } rows[] = {
        /* 12, tree 0: 0 - 8; 8 - 4, 10; 4 - 2, 6; 10 - 9, 11; 2 - 1, 3 */
        {12, 0, 0, -1, 1, 8, -1},
        {12, 0, 8, 0, 2, 4, 10},
        {12, 0, 4, 8, 2, 2, 6},
        {12, 0, 10, 8, 2, 9, 11},
        {12, 0, 3, 2, 0, -1, -1},
        /* 12, tree 1 (the mirror): 11 - 3; 3 - 7, 1; 7 - 9, 5; 1 - 2, 0 */
        {12, 1, 11, -1, 1, 3, -1},
        {12, 1, 3, 11, 2, 7, 1},
        {12, 1, 1, 3, 2, 2, 0},
        /* 13, tree 0: 12's only child is 10; 13, tree 1 (the shift): 1 - 9; 9 - 5, 0; 0 - 11 */
        {13, 0, 12, 8, 1, 10, -1},
        {13, 1, 1, -1, 1, 9, -1},
        {13, 1, 9, 1, 2, 5, 0},
        {13, 1, 0, 9, 1, 11, -1},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        struct mdl_tree_shape s;
        mdl_tree_shape_flat(&s, rows[r].n);
        int parent, ch[MDL_TREE_ARITY];
        int nc = mdl_tree_links(&s, rows[r].t, rows[r].member, &parent, ch);
        cr_assert(eq(int, parent, rows[r].parent), "row %zu", r);
        cr_assert(eq(int, nc, rows[r].nc), "row %zu", r);
        if (nc > 0) cr_assert(eq(int, ch[0], rows[r].c0), "row %zu", r);
        if (nc > 1) cr_assert(eq(int, ch[1], rows[r].c1), "row %zu", r);
    }
    /* over 4 machines the inner machine of each tree has a parent and two children: machine 2
     * in tree 0 (0 - 2; 2 - 1, 3), machine 1 in tree 1; so each machine sends 4 of the two
     * trees' 8 halves per chunk pair, where a heap (root with two children) sent at most 3 */
    struct mdl_tree_shape s;
    mdl_tree_shape_flat(&s, 4);
    tree_check(&s, 0);
    tree_check(&s, 1);
    struct mdl_tree_cost c;
    cr_assert(eq(int, mdl_tree_cost(&s, 1, &c), 0));
    cr_assert(eq(int, c.flow[1], 4));
}

Test(collective, a_tree_costs_its_chains_and_its_links_between_machines_apart)
{
    /* 2 machines of 4, one pair: a chain of 4 in each machine, the heads joined. Tree A: machine
     * 0's head is the root, machine 1's head its child; B the other way. Per chunk the heads
     * exchange one transfer each way per tree, so the links between machines carry at most 2
     * per step and 2 in all per member and direction (the flows) */
    struct mdl_tree_shape s;
    cr_assert(eq(int, mdl_tree_shape_machines(&s, 2, 4, 1), 0));
    struct mdl_tree_cost c;
    cr_assert(eq(int, mdl_tree_cost(&s, 1, &c), 0));
    cr_assert(eq(int, c.levels[0], 3));
    cr_assert(eq(int, c.levels[1], 1));
    cr_assert(eq(int, c.flow[1], 2));
    /* a middle member of the chain sends up and down in both trees: 4 transfers */
    cr_assert(eq(int, c.flow[0], 4));
    /* time: with one chunk the path dominates: 2 (3 chain + 1 link) levels */
    struct mdl_coll_path chain = {1e-6, 100e9, 1e-6, 100e9}, link = {5e-6, 10e9, 5e-6, 10e9};
    double t = mdl_tree_time(&c, 1, 1e3, &chain, &link, 0, true);
    near(t, 2 * (3 * (1e-6 + 1e3 / 100e9) + (5e-6 + 1e3 / 10e9)));
}

/* NCCL's point-to-point split (enqueue.cc, calcP2pChunkSize, for a pair): half the channels per
 * peer, doubled while a share exceeds 32 chunks inside a machine (one chunk across machines),
 * at most all of them; a channel takes its first chunk twice (both copies) and then the rest of
 * its share at its rate, never less than the route's time. The Leonardo pair: 8 channels per
 * peer, 512 KiB chunks: 4 channels up to 64 MiB, 8 from 128 MiB. */
Test(collective, a_send_runs_in_ncclS_point_to_point_channels_at_their_rate)
{
    const double K = 1024, M = K * K, c = 512 * K;
    cr_assert(eq(int, mdl_p2p_channels(8, 8, c, false), 4));
    cr_assert(eq(int, mdl_p2p_channels(8, 64 * M, c, false), 4));
    cr_assert(eq(int, mdl_p2p_channels(8, 128 * M, c, false), 8));
    cr_assert(eq(int, mdl_p2p_channels(8, 8192 * M, c, false), 8));
    cr_assert(eq(int, mdl_p2p_channels(8, 2 * M, c, true), 4));
    cr_assert(eq(int, mdl_p2p_channels(8, 4 * M, c, true), 8));
    cr_assert(eq(int, mdl_p2p_channels(1, 64 * M, c, false), 1));
    const double bw = 73.56e9, r = 16.05e9, st = 1.7966e-6;
    /* 64 MiB: 4 channels of 16 MiB, each (0.5 + 16) MiB at 16.05 GB/s */
    cr_assert(ieee_ulp_eq(dbl, mdl_p2p_time(64 * M, 4, c, bw, r, 0), (c + 16 * M) / r, 4));
    /* and with a step latency, once after each of a channel's 32 chunks */
    cr_assert(
        ieee_ulp_eq(dbl, mdl_p2p_time(64 * M, 4, c, bw, r, st), (c + 16 * M) / r + 32 * st, 4));
    /* 1 MiB: 256 KiB shares, each through both copies, one chunk */
    cr_assert(ieee_ulp_eq(dbl, mdl_p2p_time(1 * M, 4, c, bw, r, 0), 2 * 256 * K / r, 4));
    cr_assert(ieee_ulp_eq(dbl, mdl_p2p_time(1 * M, 4, c, bw, r, st), 2 * 256 * K / r + st, 4));
    /* 128 MiB on 8 channels: the route's time (16 MiB a channel: 1.02 ms with its 32 steps, the
     * route 1.82 ms) */
    cr_assert(ieee_ulp_eq(dbl, mdl_p2p_time(128 * M, 8, c, bw, r, st), 128 * M / bw, 4));
    cr_assert(ieee_ulp_eq(dbl, mdl_p2p_time(1 * M, 4, c, bw, 0, st), M / bw, 4));
}

/* The step latency a send's channel pays after each chunk: the Simple protocol's per-step latency
 * between GPUs of one machine (the P2P transport's fence over NVLink), none across machines. */
Test(collective, a_send_inside_a_machine_pays_the_simple_step_latency_per_chunk)
{
    struct mdl_nccl n;
    mdl_nccl_default(&n);
    n.p2p_channels = 8;
    n.hop_s[MDL_PROTO_SIMPLE] = 1.7966e-6;
    n.net_channel_Bps = 20.04e9;
    struct mdl_p2p p;
    mdl_nccl_p2p(&n, false, false, &p);
    cr_assert(eq(dbl, p.step_s, 1.7966e-6));
    mdl_nccl_p2p(&n, true, false, &p); /* a pair in one machine of a wider communicator */
    cr_assert(eq(dbl, p.step_s, 1.7966e-6));
    mdl_nccl_p2p(&n, true, true, &p);
    cr_assert(eq(dbl, p.step_s, 0));
}

/* Across machines a send gets NCCL_NCHANNELS_PER_NET_PEER channels per peer (2 by default,
 * rounded up to a power of two, never more than the pair's own), each a network connection at
 * the platform's network channel rate (the lower of it and the point-to-point channel rate where
 * both are set), in NCCL_P2P_NET_CHUNKSIZE chunks (128 KiB); inside a machine the pair's
 * channels, rate and 512 KiB chunk stay. dgx-h100's values: 32 p2p channels, no p2p channel
 * rate, 20.04 GB/s per network channel; dgx-a100's: 16.05 GB/s per p2p channel, no network
 * channel rate. */
Test(collective, a_send_across_machines_runs_on_ncclS_channels_per_network_peer)
{
    const double K = 1024, M = K * K;
    struct mdl_nccl n;
    mdl_nccl_default(&n);
    n.p2p_channels = 32;
    n.net_channel_Bps = 20.04e9;
    struct mdl_p2p p;
    mdl_nccl_p2p(&n, false, false, &p);
    cr_assert(eq(int, p.per_peer, 32));
    cr_assert(eq(dbl, p.rate_Bps, 0));
    cr_assert(eq(dbl, p.chunk_bytes, 512 * K));
    mdl_nccl_p2p(&n, true, true, &p);
    cr_assert(eq(int, p.per_peer, 2));
    cr_assert(eq(dbl, p.rate_Bps, 20.04e9));
    cr_assert(eq(dbl, p.chunk_bytes, 128 * K));
    /* a pair inside a machine of a communicator over more: the communicator's channels and
     * chunk, its own rate */
    mdl_nccl_p2p(&n, true, false, &p);
    cr_assert(eq(int, p.per_peer, 2));
    cr_assert(eq(dbl, p.rate_Bps, 0));
    cr_assert(eq(dbl, p.chunk_bytes, 128 * K));
    n.p2p_net_channels = 3; /* NCCL rounds up to a power of two */
    mdl_nccl_p2p(&n, true, true, &p);
    cr_assert(eq(int, p.per_peer, 4));
    n.p2p_net_channels = 64; /* never more than the pair's */
    mdl_nccl_p2p(&n, true, true, &p);
    cr_assert(eq(int, p.per_peer, 32));
    n.p2p_net_channels = 2;
    n.p2p_channel_Bps = 16.05e9; /* both set: the lower */
    mdl_nccl_p2p(&n, true, true, &p);
    cr_assert(eq(dbl, p.rate_Bps, 16.05e9));
    n.net_channel_Bps = 0; /* dgx-a100: the p2p channel's */
    mdl_nccl_p2p(&n, true, true, &p);
    cr_assert(eq(dbl, p.rate_Bps, 16.05e9));
    n.p2p_channels = 0; /* no point-to-point fit: nothing to split */
    mdl_nccl_p2p(&n, true, true, &p);
    cr_assert(eq(int, p.per_peer, 0));

    /* A pipeline message of GPT-3 175B at TP 4 with sequence parallelism (2048/4 x 12288 bf16,
     * 12 MiB) between two dgx-h100 machines: 2 channels (12 MiB > one 128 KiB chunk), each its
     * first chunk twice and the rest of its 6 MiB at 20.04 GB/s, 6.5 us over the NIC's 40.08 GB/s
     * alone */
    const double c = 128 * K, S = 12 * M;
    cr_assert(eq(int, mdl_p2p_channels(2, S, c, true), 2));
    const struct mdl_p2p net = {.per_peer = 2, .rate_Bps = 20.04e9, .chunk_bytes = c};
    cr_assert(ieee_ulp_eq(dbl, mdl_p2p_move(S, &net, true, 40.08e9), (c + 6 * M) / 20.04e9, 4));
    /* 128 KiB: one channel, its one chunk through both copies */
    cr_assert(eq(int, mdl_p2p_channels(2, 128 * K, c, true), 1));
    cr_assert(
        ieee_ulp_eq(dbl, mdl_p2p_move(128 * K, &net, true, 40.08e9), 2 * 128 * K / 20.04e9, 4));
}
