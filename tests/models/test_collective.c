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
    /* long trees keep the 512 KiB step: 64 MiB per tree of height 3 -> 128 chunks, capped */
    cr_assert(eq(int, mdl_tree_chunks(64 * M, 512 * K, 3), MDL_MAX_CHUNKS));
    /* 2 MiB, height 2: 512 KiB gives 4 < 16, 256 KiB 8 < 16, 128 KiB 16 */
    cr_assert(eq(int, mdl_tree_chunks(2 * M, 512 * K, 2), 16));
    /* 256 KiB, height 2: 128 KiB (2 < 16, floor), 64 KiB (4 < 8, floor), then 4 >= 2: 4 chunks */
    cr_assert(eq(int, mdl_tree_chunks(256 * K, 512 * K, 2), 4));
    /* 16 KiB, height 3: down to the 32 KiB floor, one chunk */
    cr_assert(eq(int, mdl_tree_chunks(16 * K, 512 * K, 3), 1));
    /* a chunk set below the floors is kept */
    cr_assert(eq(int, mdl_tree_chunks(1 * M, 16 * K, 2), MDL_MAX_CHUNKS));
}
