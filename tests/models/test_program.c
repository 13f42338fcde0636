/* test_program.c - mdl_program_check as plain data: each rule it states, and where it points. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>

#include "common/error.h"
#include "models/program.h"

/* Two ranks in one group, each: a GEMM, then an all-reduce that waits for it. */
static void two_ranks(struct mdl_program *p)
{
    cr_assert(eq(int, mdl_program_init(p, 2), 0));
    int ranks[] = {0, 1};
    int g = mdl_program_group(p, 2, ranks), nm = mdl_program_name(p, "x");
    for (int r = 0; r < 2; r++) {
        struct mdl_op gemm = {.kind = MDL_OP_GEMM,
                              .stream = 0,
                              .name = nm,
                              .group = -1,
                              .layer = 0,
                              .mb = 0,
                              .dur_s = 1e-3};
        struct mdl_op ar = {.kind = MDL_OP_ALL_REDUCE,
                            .stream = 1,
                            .name = nm,
                            .group = g,
                            .layer = 0,
                            .mb = 0,
                            .bytes = 1e6,
                            .ndeps = 1,
                            .deps = {0}};
        cr_assert(ge(int, mdl_program_add(p, r, &gemm), 0));
        cr_assert(ge(int, mdl_program_add(p, r, &ar), 0));
    }
}

/* Checks p, expecting a failure on `field` at (rank, op). */
static void expect_fail(struct mdl_program *p, const char *field, int rank, int op)
{
    struct tps_error err = {0};
    struct mdl_check_at at;
    cr_assert(ne(int, mdl_program_check(p, &at, &err), 0), "accepted, expected %s", field);
    cr_assert(eq(str, err.field, (char *)field), "%s: %s", err.field, err.msg);
    cr_assert(eq(int, at.rank, rank), "%s", err.msg);
    cr_assert(eq(int, at.op, op), "%s", err.msg);
    mdl_program_release(p);
}

Test(program_check, accepts_a_well_formed_program)
{
    struct mdl_program p;
    two_ranks(&p);
    struct tps_error err = {0};
    struct mdl_check_at at;
    cr_assert(eq(int, mdl_program_check(&p, &at, &err), 0), "%s", err.msg);
    cr_assert(eq(int, at.rank, -1));
    mdl_program_release(&p);
}

Test(program_check, dependency_on_a_later_op)
{
    struct mdl_program p;
    two_ranks(&p);
    p.ranks[1].ops[1].deps[0] = 1; /* itself */
    expect_fail(&p, "deps", 1, 1);
}

Test(program_check, compute_op_on_a_communication_stream)
{
    struct mdl_program p;
    two_ranks(&p);
    p.ranks[0].ops[0].stream = 1;
    expect_fail(&p, "stream", 0, 0);
}

Test(program_check, collective_on_the_compute_stream)
{
    struct mdl_program p;
    two_ranks(&p);
    p.ranks[1].ops[1].stream = 0;
    expect_fail(&p, "stream", 1, 1);
}

Test(program_check, a_dimension_on_a_compute_op_or_out_of_range)
{
    struct mdl_program p;
    two_ranks(&p);
    p.ranks[0].ops[1].dim = MDL_OP_DIM(MDL_DIM_DP);
    p.ranks[1].ops[1].dim = MDL_OP_DIM(MDL_DIM_DP); /* collectives may serve one */
    p.ranks[0].ops[0].dim = MDL_OP_DIM(MDL_DIM_TP);
    expect_fail(&p, "dim", 0, 0);
    two_ranks(&p);
    p.ranks[1].ops[1].dim = MDL_OP_DIMS;
    expect_fail(&p, "dim", 1, 1);
}

Test(program_check, unknown_group)
{
    struct mdl_program p;
    two_ranks(&p);
    p.ranks[0].ops[1].group = 7;
    expect_fail(&p, "group", 0, 1);
}

Test(program_check, rank_outside_its_collectives_group)
{
    struct mdl_program p;
    two_ranks(&p);
    int only0[] = {0};
    int g = mdl_program_group(&p, 1, only0);
    p.ranks[1].ops[1].group = g;
    struct tps_error err = {0};
    cr_assert(ne(int, mdl_program_check(&p, NULL, &err), 0));
    cr_assert(eq(str, err.field, "group"), "%s", err.msg);
    mdl_program_release(&p);
}

Test(program_check, members_disagree_on_a_collectives_size)
{
    struct mdl_program p;
    two_ranks(&p);
    p.ranks[1].ops[1].bytes = 2e6;
    struct tps_error err = {0};
    cr_assert(ne(int, mdl_program_check(&p, NULL, &err), 0));
    cr_assert(eq(str, err.field, "bytes"), "%s", err.msg);
    mdl_program_release(&p);
}

Test(program_check, a_member_issues_fewer_collectives)
{
    struct mdl_program p;
    two_ranks(&p);
    p.ranks[1].nops = 1; /* rank 1 never joins the all-reduce */
    struct tps_error err = {0};
    cr_assert(ne(int, mdl_program_check(&p, NULL, &err), 0));
    cr_assert(eq(str, err.field, "group"), "%s", err.msg);
    p.ranks[1].nops = 2;
    mdl_program_release(&p);
}

Test(program_check, group_with_a_rank_out_of_range)
{
    struct mdl_program p;
    two_ranks(&p);
    p.groups[0].ranks[1] = 5;
    struct tps_error err = {0};
    cr_assert(ne(int, mdl_program_check(&p, NULL, &err), 0));
    cr_assert(eq(str, err.field, "group"), "%s", err.msg);
    mdl_program_release(&p);
}

Test(program_shard, keeps_one_ranks_compute_and_waits_through_dropped_collectives)
{
    struct mdl_program p, s;
    two_ranks(&p);
    /* rank 1: a third op, a GEMM after the all-reduce */
    struct mdl_op g = {.kind = MDL_OP_GEMM,
                       .stream = 0,
                       .name = 0,
                       .group = -1,
                       .layer = 0,
                       .mb = 0,
                       .dur_s = 1e-3,
                       .ndeps = 1,
                       .deps = {1}};
    cr_assert(ge(int, mdl_program_add(&p, 1, &g), 0));
    cr_assert(eq(int, mdl_program_shard(&p, 1, &s), 0));
    cr_assert(eq(int, s.nranks, 1));
    cr_assert(eq(int, s.ngroups, 0));
    cr_assert(eq(int, s.ranks[0].nops, 2));
    /* the GEMM waited for the all-reduce, which waited for op 0: it now waits for op 0 */
    cr_assert(eq(int, s.ranks[0].ops[1].ndeps, 1));
    cr_assert(eq(int, s.ranks[0].ops[1].deps[0], 0));
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_program_check(&s, NULL, &err), 0), "%s", err.msg);
    mdl_program_release(&s);
    mdl_program_release(&p);
}

/* Two copies of a two-rank program on six ranks: each copy on its ranks with a group of its own,
 * the ranks left over shadows, and the result still a well-formed program. */
Test(program_place, copies_get_their_own_ranks_and_groups)
{
    struct mdl_program p;
    two_ranks(&p);
    int at[] = {4, 1, 2, 5};
    cr_assert(eq(int, mdl_program_place(&p, 6, 2, at), 0));
    cr_assert(eq(int, p.nranks, 6));
    cr_assert(eq(int, p.ngroups, 2));
    cr_assert(eq(int, p.groups[0].ranks[0], 4));
    cr_assert(eq(int, p.groups[0].ranks[1], 1));
    cr_assert(eq(int, p.groups[1].ranks[0], 2));
    cr_assert(eq(int, p.groups[1].ranks[1], 5));
    static const int shadow[] = {1, 0, 0, 1, 0, 0};
    for (int r = 0; r < 6; r++) {
        cr_assert(eq(int, p.shadow[r], shadow[r]), "rank %d", r);
        cr_assert(eq(int, p.ranks[r].nops, shadow[r] ? 0 : 2), "rank %d", r);
    }
    cr_assert(eq(int, p.ranks[2].ops[1].group, 1));
    cr_assert(eq(int, p.ranks[4].ops[1].group, 0));
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_program_check(&p, NULL, &err), 0), "%s", err.msg);
    mdl_program_release(&p);
}

/* Two two-rank programs side by side on five ranks (jobs sharing a platform): each rank's ops
 * land on its GPU with groups of their own over the mapped ranks and names interned once; a rank
 * already holding ops or out of range is refused. */
Test(program_merge, programs_land_on_their_ranks_with_their_own_groups)
{
    struct mdl_program all, a, b;
    cr_assert(eq(int, mdl_program_init(&all, 5), 0));
    two_ranks(&a);
    two_ranks(&b);
    int at_a[] = {3, 0}, at_b[] = {1, 4};
    cr_assert(eq(int, mdl_program_merge(&all, &a, at_a), 0));
    cr_assert(eq(int, mdl_program_merge(&all, &b, at_b), 0));
    cr_assert(eq(int, all.ngroups, 2));
    cr_assert(eq(int, all.groups[0].ranks[0], 3));
    cr_assert(eq(int, all.groups[0].ranks[1], 0));
    cr_assert(eq(int, all.groups[1].ranks[0], 1));
    cr_assert(eq(int, all.groups[1].ranks[1], 4));
    cr_assert(eq(int, all.nnames, 1));
    static const int nops[] = {2, 2, 0, 2, 2}, group[] = {0, 1, -1, 0, 1};
    for (int r = 0; r < 5; r++) {
        cr_assert(eq(int, all.ranks[r].nops, nops[r]), "rank %d", r);
        if (nops[r]) {
            cr_assert(eq(int, all.ranks[r].ops[1].group, group[r]), "rank %d", r);
            cr_assert(eq(int, all.ranks[r].ops[1].deps[0], 0));
            cr_assert(eq(str, all.names[all.ranks[r].ops[0].name], "x"));
        }
    }
    cr_assert(all.shadow == NULL, "no program had shadows");
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_program_check(&all, NULL, &err), 0), "%s", err.msg);
    int taken[] = {2, 3}, outside[] = {2, 5};
    cr_assert(eq(int, mdl_program_merge(&all, &a, taken), -1), "rank 3 holds ops");
    cr_assert(eq(int, mdl_program_merge(&all, &a, outside), -1), "rank 5 is outside");
    cr_assert(eq(int, all.ranks[2].nops, 0), "a refused merge copies nothing");
    mdl_program_release(&all);
    mdl_program_release(&a);
    mdl_program_release(&b);
}
