/* test_pool.c - core/pool.c: forked workers, items wanted, skipped at their turn, failed. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/pool.h"

struct ctx {
    int *ran;     /* shared with the workers: [i] set by item i's worker */
    int asked[8]; /* in this process: item i's turn came (skip asked) */
};

static void work(long i, void *c)
{
    struct ctx *x = c;
    x->ran[i] = 1;
    if (i == 6) _exit(3); /* a worker that fails */
}

static int want(long i, void *c)
{
    (void)c;
    return i != 1;
}

/* every item from 3 on is skipped once item 0 has run */
static int skip(long i, void *c)
{
    struct ctx *x = c;
    x->asked[i] = 1;
    return i >= 3 && i != 6 && x->ran[0];
}

Test(pool, skips_an_item_at_its_turn_as_finished_without_a_worker)
{
    struct ctx x = {0};
    x.ran =
        mmap(NULL, 8 * sizeof *x.ran, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert(ne(ptr, x.ran, MAP_FAILED));
    struct pool_ops ops = {.want = want, .work = work, .skip = skip};
    long failed = pool_run(8, 1, &ops, &x);
    cr_assert(eq(long, failed, 1), "item 6's worker fails");
    int ran[8] = {1, 0, 1, 0, 0, 0, 1, 0};
    for (int i = 0; i < 8; i++) {
        cr_assert(eq(int, x.ran[i], ran[i]), "item %d", i);
        cr_assert(eq(int, x.asked[i], i != 1), "item %d: skip asked only of wanted items", i);
    }
    munmap(x.ran, 8 * sizeof *x.ran);
}
