/* test_comm.c - the communicator registry: markers handed out and kept, groups made once per
 * distinct member set from the mesh (spans, neighbour pairs, ends), none for one GPU, and the
 * group each rank takes for a marker. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "models/comm.h"

TestSuite(comm);

/* tp 2 x cp 3 x dp 2 x pp 2 = 24 GPUs in Megatron's order. */
static void mesh24(struct mdl_mesh *m)
{
    int size[MDL_NDIMS] = {
        [MDL_DIM_TP] = 2, [MDL_DIM_CP] = 3, [MDL_DIM_EP] = 1, [MDL_DIM_DP] = 2, [MDL_DIM_PP] = 2};
    cr_assert(eq(int, mdl_mesh_init(m, size, NULL), 0));
}

Test(comm, markers_are_handed_out_and_a_given_one_is_kept_once)
{
    struct mdl_comms c;
    mdl_comms_init(&c);
    struct mdl_comm_spec s = {.name = "x", .shape = MDL_COMM_SPAN, .dims = MDL_DIM_BIT(MDL_DIM_DP)};
    cr_assert(eq(int, mdl_comms_add(&c, &s, -3), -3));
    cr_assert(eq(int, mdl_comms_add(&c, &s, -3), 0), "taken");
    cr_assert(eq(int, mdl_comms_add(&c, &s, 0), -2));
    cr_assert(eq(int, mdl_comms_add(&c, &s, 0), -4));
    cr_assert(eq(ptr, (void *)mdl_comms_spec(&c, 5), NULL), "a real group is no marker");
    cr_assert(eq(ptr, (void *)mdl_comms_spec(&c, -5), NULL));
    cr_assert(eq(str, (char *)mdl_comms_spec(&c, -4)->name, "x"));
    cr_assert(mdl_comms_spans(&c, -2, MDL_DIM_DP));
    cr_assert(not(mdl_comms_spans(&c, -2, MDL_DIM_TP)));
    mdl_comms_release(&c);
}

Test(comm, each_distinct_group_is_made_once_and_every_member_takes_it)
{
    struct mdl_mesh m;
    mesh24(&m);
    struct mdl_program p;
    cr_assert(eq(int, mdl_program_init(&p, 24), 0));
    struct mdl_comms c;
    mdl_comms_init(&c);
    unsigned dpcp = MDL_DIM_BIT(MDL_DIM_DP) | MDL_DIM_BIT(MDL_DIM_CP);
    struct mdl_comm_spec grads = {.name = "dp-cp", .shape = MDL_COMM_SPAN, .dims = dpcp};
    struct mdl_comm_spec same = {.name = "dp-cp again", .shape = MDL_COMM_SPAN, .dims = dpcp};
    struct mdl_comm_spec own = {"dp-cp own", MDL_COMM_SPAN, dpcp, .own = true};
    struct mdl_comm_spec ep = {
        .name = "ep (size 1)", .shape = MDL_COMM_SPAN, .dims = MDL_DIM_BIT(MDL_DIM_EP)};
    struct mdl_comm_spec none = {.name = "nothing", .shape = MDL_COMM_SPAN, .dims = 0};
    int a = mdl_comms_add(&c, &grads, 0), b = mdl_comms_add(&c, &same, 0);
    int o = mdl_comms_add(&c, &own, 0), e = mdl_comms_add(&c, &ep, 0);
    int z = mdl_comms_add(&c, &none, 0);
    cr_assert(eq(int, mdl_comms_alloc(&c, 24), 0));
    cr_assert(eq(int, mdl_comms_make(&c, &p, &m), 0));
    /* 24 / 6 = 4 groups of 6, shared by the spec with the same span; 4 more of its own */
    cr_assert(eq(int, p.ngroups, 8));
    for (int r = 0; r < 24; r++) {
        int g = mdl_comms_group(&c, r, a);
        cr_assert(ge(int, g, 0));
        cr_assert(eq(int, p.groups[g].n, 6));
        int coord[MDL_NDIMS], mine[MDL_NDIMS];
        mdl_mesh_coords(&m, r, mine);
        for (int k = 0; k < 6; k++) { /* members differ from r in dp and cp only */
            mdl_mesh_coords(&m, p.groups[g].ranks[k], coord);
            cr_assert(eq(int, coord[MDL_DIM_TP], mine[MDL_DIM_TP]));
            cr_assert(eq(int, coord[MDL_DIM_PP], mine[MDL_DIM_PP]));
        }
        cr_assert(eq(int, mdl_comms_group(&c, r, b), g));
        cr_assert(ne(int, mdl_comms_group(&c, r, o), g));
        cr_assert(eq(int, mdl_comms_group(&c, r, e), -1), "a group of one GPU is none");
        cr_assert(eq(int, mdl_comms_group(&c, r, z), -1));
        cr_assert(eq(int, mdl_comms_group(&c, r, 3), 3), "a real group stays itself");
    }
    mdl_comms_release(&c);
    mdl_program_release(&p);
}

/* Pipeline neighbours over pp 4: the sender's pair to the next stage is the receiver's pair from
 * the previous; the backward pairs are others; with wrap the last stage talks to the first;
 * the ends are the first and last stage alone. */
Test(comm, neighbour_pairs_are_shared_by_both_ends_and_wrap_only_when_asked)
{
    int size[MDL_NDIMS] = {[MDL_DIM_TP] = 2, [MDL_DIM_PP] = 4};
    struct mdl_mesh m;
    mdl_mesh_init(&m, size, NULL);
    unsigned P = MDL_DIM_BIT(MDL_DIM_PP);
    for (int wrap = 0; wrap < 2; wrap++) {
        struct mdl_program p;
        mdl_program_init(&p, 8);
        struct mdl_comms c;
        mdl_comms_init(&c);
        struct mdl_comm_spec to = {"to", MDL_COMM_PAIR, P, 0, 1, wrap, .share = 1};
        struct mdl_comm_spec from = {"from", MDL_COMM_PAIR, P, -1, 0, wrap, .share = 1};
        struct mdl_comm_spec back = {"back", MDL_COMM_PAIR, P, 0, -1, wrap, .share = 2};
        struct mdl_comm_spec ends = {.name = "ends", .shape = MDL_COMM_ENDS, .dims = P};
        int t = mdl_comms_add(&c, &to, 0), f = mdl_comms_add(&c, &from, 0);
        int k = mdl_comms_add(&c, &back, 0), e = mdl_comms_add(&c, &ends, 0);
        mdl_comms_alloc(&c, 8);
        cr_assert(eq(int, mdl_comms_make(&c, &p, &m), 0));
        int hops = wrap ? 4 : 3; /* per TP rank and direction */
        cr_assert(eq(int, p.ngroups, 2 * (2 * hops) + 2));
        for (int r = 0; r < 8; r++) {
            int s = r / 2, next = (r + 2) % 8, g = mdl_comms_group(&c, r, t);
            if (s == 3 && !wrap) {
                cr_assert(eq(int, g, -1));
                continue;
            }
            cr_assert(eq(int, p.groups[g].ranks[0], r));
            cr_assert(eq(int, p.groups[g].ranks[1], next));
            cr_assert(eq(int, mdl_comms_group(&c, next, f), g), "the receiver's pair");
            cr_assert(ne(int, mdl_comms_group(&c, next, k), g), "backward: a pair of its own");
        }
        for (int r = 0; r < 8; r++) {
            int g = mdl_comms_group(&c, r, e), s = r / 2;
            cr_assert(eq(int, g >= 0, s == 0 || s == 3));
            if (s == 0) cr_assert(eq(int, p.groups[g].ranks[1], r + 6));
        }
        mdl_comms_release(&c);
        mdl_program_release(&p);
    }
}
