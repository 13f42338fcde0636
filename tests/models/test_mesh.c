/* test_mesh.c - the mesh of named parallel dimensions: ranks and coordinates in every order,
 * order text, groups by the dimensions they span, and a job's ranks through it. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>

#include "models/job.h"
#include "models/mesh.h"

TestSuite(mesh);

static const int sizes[MDL_NDIMS] = {
    [MDL_DIM_TP] = 2, [MDL_DIM_CP] = 3, [MDL_DIM_EP] = 1, [MDL_DIM_DP] = 2, [MDL_DIM_PP] = 2};

Test(mesh, megatron_order_is_the_default_and_lays_tp_fastest)
{
    struct mdl_mesh m;
    cr_assert(eq(int, mdl_mesh_init(&m, sizes, NULL), 0));
    cr_assert(eq(long, mdl_mesh_gpus(&m), 24));
    char text[16];
    mdl_mesh_order_text(m.order, text);
    cr_assert(eq(str, text, "tp-cp-ep-dp-pp"));
    for (int p = 0; p < 2; p++)
        for (int d = 0; d < 2; d++)
            for (int c = 0; c < 3; c++)
                for (int t = 0; t < 2; t++) {
                    int coord[MDL_NDIMS] = {t, c, 0, d, p};
                    cr_assert(eq(int, mdl_mesh_rank(&m, coord), t + 2 * (c + 3 * (d + 2 * p))));
                }
}

/* Every permutation of the five dimensions, by Heap's algorithm. */
static void each_order(int8_t *a, int k, void (*f)(const int8_t *))
{
    if (k == 1) {
        f(a);
        return;
    }
    for (int i = 0; i < k; i++) {
        each_order(a, k - 1, f);
        int j = k % 2 ? 0 : i;
        int8_t x = a[j];
        a[j] = a[k - 1];
        a[k - 1] = x;
    }
}

static int norders;

static void bijection(const int8_t *order)
{
    struct mdl_mesh m;
    cr_assert(eq(int, mdl_mesh_init(&m, sizes, order), 0));
    char seen[24] = {0};
    for (int r = 0; r < 24; r++) {
        int c[MDL_NDIMS];
        mdl_mesh_coords(&m, r, c);
        for (int d = 0; d < MDL_NDIMS; d++)
            cr_assert(c[d] >= 0 && c[d] < sizes[d]);
        cr_assert(eq(int, mdl_mesh_rank(&m, c), r));
        int ci = ((c[0] * 3 + c[1]) * 1 + c[2]) * 2 * 2 + c[3] * 2 + c[4];
        cr_assert(not(seen[ci]));
        seen[ci] = 1;
    }
    /* the fastest dimension of size > 1 steps the rank by one */
    int k = 0;
    while (sizes[order[k]] == 1)
        k++;
    cr_assert(eq(int, m.stride[order[k]], 1));
    norders++;
}

Test(mesh, ranks_and_coordinates_are_inverse_in_every_order)
{
    int8_t a[MDL_NDIMS] = {0, 1, 2, 3, 4};
    each_order(a, MDL_NDIMS, bijection);
    cr_assert(eq(int, norders, 120));
    struct mdl_mesh m;
    int8_t bad[MDL_NDIMS] = {0, 1, 1, 3, 4};
    cr_assert(eq(int, mdl_mesh_init(&m, sizes, bad), -1));
}

Test(mesh, order_text_names_some_dimensions_and_the_rest_follow_megatrons)
{
    int8_t o[MDL_NDIMS];
    char text[16];
    cr_assert(eq(int, mdl_mesh_parse_order("tp-dp-pp", o), 0));
    mdl_mesh_order_text(o, text);
    cr_assert(eq(str, text, "tp-dp-pp-cp-ep"));
    cr_assert(eq(int, mdl_mesh_parse_order("pp-ep", o), 0));
    mdl_mesh_order_text(o, text);
    cr_assert(eq(str, text, "pp-ep-tp-cp-dp"));
    const char *bad[] = {"", "tp-tp", "tp-", "-tp", "tp--dp", "tp-xx", "tpdp", "TP"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_assert(eq(int, mdl_mesh_parse_order(bad[i], o), -1), "'%s'", bad[i]);
}

Test(mesh, a_group_spans_the_dimensions_asked_for_fastest_first)
{
    struct mdl_mesh m;
    mdl_mesh_init(&m, sizes, NULL);
    int coord[MDL_NDIMS] = {1, 2, 0, 1, 1}, ranks[24], me = -1;
    int r = mdl_mesh_rank(&m, coord);
    /* the gradients' group of context and data parallelism: cp fastest, then dp */
    int n = mdl_mesh_group(&m, r, MDL_DIM_BIT(MDL_DIM_DP) | MDL_DIM_BIT(MDL_DIM_CP), ranks, &me);
    cr_assert(eq(int, n, 6));
    cr_assert(eq(int, me, 2 + 3 * 1));
    cr_assert(eq(int, ranks[me], r));
    for (int i = 0; i < n; i++) {
        int c[MDL_NDIMS];
        mdl_mesh_coords(&m, ranks[i], c);
        cr_assert(eq(int, c[MDL_DIM_TP], 1));
        cr_assert(eq(int, c[MDL_DIM_PP], 1));
        cr_assert(eq(int, c[MDL_DIM_CP], i % 3));
        cr_assert(eq(int, c[MDL_DIM_DP], i / 3));
    }
    /* the TP group: consecutive ranks; spanning nothing: the rank alone */
    n = mdl_mesh_group(&m, r, MDL_DIM_BIT(MDL_DIM_TP), ranks, &me);
    cr_assert(eq(int, n, 2));
    cr_assert(eq(int, ranks[1], ranks[0] + 1));
    cr_assert(eq(int, mdl_mesh_group(&m, r, 0, ranks, &me), 1));
    cr_assert(eq(int, ranks[0], r));
}

Test(mesh, a_jobs_ranks_are_its_meshs)
{
    struct mdl_strategy st = {.kind = MDL_STRAT_1D, .tp = 4};
    struct mdl_job j = {.pp = 3, .dp = 2};
    for (int o = MDL_ORDER_TP_DP_PP; o <= MDL_ORDER_PP_DP_TP; o++) {
        j.order = (enum mdl_rank_order)o;
        struct mdl_mesh m;
        mdl_job_mesh(&j, &st, &m);
        int8_t parsed[MDL_NDIMS];
        cr_assert(eq(int, mdl_mesh_parse_order(mdl_rank_order_names[o], parsed), 0));
        /* the order the scenario names, context parallelism (size 1 here) beside tp */
        int8_t named[MDL_NDIMS];
        int n = 0;
        for (int k = 0; k < MDL_NDIMS; k++)
            if (m.order[k] != MDL_DIM_CP && m.order[k] != MDL_DIM_EP) named[n++] = m.order[k];
        cr_assert(eq(int, n, 3));
        for (int k = 0; k < 3; k++)
            cr_assert(eq(int, named[k], parsed[k]), "%s", mdl_rank_order_names[o]);
        for (int r = 0; r < 24; r++) {
            int s, d, t, c[MDL_NDIMS];
            mdl_job_coords(&j, &st, r, &s, &d, &t);
            mdl_mesh_coords(&m, r, c);
            cr_assert(eq(int, t, c[MDL_DIM_TP]));
            cr_assert(eq(int, d, c[MDL_DIM_DP]));
            cr_assert(eq(int, s, c[MDL_DIM_PP]));
            cr_assert(eq(int, mdl_job_rank(&j, &st, s, d, t), r));
        }
    }
}
