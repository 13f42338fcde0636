/* test_shard.c - splitting a sweep over shards: the longest-processing-time assignment worked
 * by hand, the I/N parser, and the manifest: written once, read back, another split refused. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>

#include "../testdir.h"
#include "core/shard.h"

TestSuite(shard);

/* Costs 5 4 3 3 2 1 (and one left out) on 2 shards, most expensive first, each to the lighter
 * shard (ties: the lower): 5->0, 4->1, 3->1 (4 < 5), 3->0 (5 < 7), 2->1 (7 < 8), 1->0 (8 < 9):
 * loads 9 and 9. */
Test(shard, longest_first_to_the_lightest_shard_as_worked_by_hand)
{
    double cost[] = {5, 4, 3, -1, 3, 2, 1};
    int owner[7], want[] = {0, 1, 1, -1, 0, 1, 0};
    cr_assert(eq(int, shard_assign(7, cost, 2, owner), 0));
    for (int i = 0; i < 7; i++)
        cr_assert(eq(int, owner[i], want[i]), "point %d", i);
}

/* Equal costs deal the points round-robin in point order; more shards than points leave some
 * empty; within one point's cost of balanced on a random set. */
Test(shard, equal_costs_round_robin_and_balance_within_one_point)
{
    double cost[10];
    int owner[10];
    for (int i = 0; i < 10; i++)
        cost[i] = 1;
    cr_assert(eq(int, shard_assign(10, cost, 3, owner), 0));
    for (int i = 0; i < 10; i++)
        cr_assert(eq(int, owner[i], i % 3));
    cr_assert(eq(int, shard_assign(2, cost, 5, owner), 0));
    cr_assert(eq(int, owner[0], 0));
    cr_assert(eq(int, owner[1], 1));
    enum { N = 1000, K = 7 };
    static double c[N];
    static int o[N];
    double load[K] = {0}, big = 0;
    srand(42);
    for (int i = 0; i < N; i++) {
        c[i] = rand() % 1000 + 1;
        big = c[i] > big ? c[i] : big;
    }
    cr_assert(eq(int, shard_assign(N, c, K, o), 0));
    for (int i = 0; i < N; i++)
        load[o[i]] += c[i];
    double lo = load[0], hi = load[0];
    for (int k = 1; k < K; k++) {
        lo = load[k] < lo ? load[k] : lo;
        hi = load[k] > hi ? load[k] : hi;
    }
    cr_assert(le(dbl, hi - lo, big), "loads %.0f..%.0f", lo, hi);
}

Test(shard, parse_takes_i_of_n_from_zero)
{
    int i, n;
    struct tps_error err = {0};
    cr_assert(eq(int, shard_parse("3/8", "--shard", &i, &n, &err), 0));
    cr_assert(eq(int, i, 3));
    cr_assert(eq(int, n, 8));
    const char *bad[] = {"8/8", "-1/4", "1/0", "1", "a/2", "1/2x", "1/100001", ""};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        memset(&err, 0, sizeof err);
        cr_assert(ne(int, shard_parse(bad[k], "--shard", &i, &n, &err), 0), "'%s'", bad[k]);
        cr_assert(eq(str, err.field, "--shard"));
    }
}

static void fill(struct shard_manifest *m, const char *id, int nshards)
{
    memset(m, 0, sizeof *m);
    static char *rows[3] = {"0,1", NULL, "2,4"};
    static int owner[3] = {0, -1, 1};
    static double cost[3] = {10, -1, 20};
    snprintf(m->scenario, sizeof m->scenario, "/x/s.yaml");
    snprintf(m->name, sizeof m->name, "s");
    snprintf(m->sweep_id, sizeof m->sweep_id, "%s", id);
    m->npoints = 3;
    m->nshards = nshards;
    m->header = "point,strategy.tp,status,sweep_id";
    m->owner = owner;
    m->cost = cost;
    m->row = rows;
    shard_points_hash(id, rows, 3, m->points_hash);
}

Test(shard, manifest_written_once_read_back_and_another_split_refused)
{
    char d[256], sub[300];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(sub, sizeof sub, d, "shards");
    struct shard_manifest m, found, back;
    struct tps_error err = {0};
    fill(&m, "00000000000000aa", 2);
    cr_assert(eq(int, shard_manifest_save(sub, &m, &found, &err), 0), "%s", err.msg);
    cr_assert_null(found.header, "nothing was there before");
    cr_assert(eq(int, shard_manifest_load(sub, &back, &err), 0), "%s", err.msg);
    cr_assert(eq(str, back.points_hash, m.points_hash));
    cr_assert(eq(int, back.owner[2], 1));
    cr_assert_null(back.row[1]);
    cr_assert(eq(str, back.row[2], "2,4"));
    cr_assert(eq(dbl, back.cost[0], 10));
    shard_manifest_release(&back);
    /* the same split again: the one there is taken */
    cr_assert(eq(int, shard_manifest_save(sub, &m, &found, &err), 0), "%s", err.msg);
    cr_assert(eq(str, found.sweep_id, "00000000000000aa"));
    shard_manifest_release(&found);
    /* another shard count, another sweep: refused, naming the field */
    fill(&m, "00000000000000aa", 3);
    memset(&err, 0, sizeof err);
    cr_assert(ne(int, shard_manifest_save(sub, &m, &found, &err), 0));
    cr_assert(eq(str, err.field, "shards"));
    shard_manifest_release(&found);
    fill(&m, "00000000000000bb", 2);
    memset(&err, 0, sizeof err);
    cr_assert(ne(int, shard_manifest_save(sub, &m, &found, &err), 0));
    cr_assert(eq(str, err.field, "sweep_id"));
    cr_assert(ne(ptr, strstr(err.path, "sweep.json"), NULL));
    shard_manifest_release(&found);
    testdir_remove(d);
}
