/* plansim.c - a plan's chosen candidates simulated, several at a time (see plansim.h). */
#include "pipeline/plansim.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/pool.h"

/* A worker's answer, in shared memory, followed by its row. */
struct slot {
    int done; /* the worker wrote rc, err and the row */
    int rc;
    struct tps_error err;
};

struct work {
    const struct plansim *ps;
    const int *todo; /* row index of each item (NULL: item i is row i) */
    unsigned char *shared;
    size_t stride;
    unsigned char *skipped; /* pruning: [n], item i left out at its turn (dyn_skip) */
};

/* Bytes before a slot's row: the slot, rounded up so that the row is aligned as malloc's are. */
#define SLOT_HEAD ((sizeof(struct slot) + 15) / 16 * 16)

static void *row_at(const struct plansim *ps, int k)
{
    return (unsigned char *)ps->rows + (size_t)k * ps->size;
}

static struct slot *slot_at(const struct work *w, long i)
{
    return (struct slot *)(w->shared + (size_t)i * w->stride);
}

static int item_row(const struct work *w, long i)
{
    return w->todo ? w->todo[i] : (int)i;
}

static void work_item(long i, void *ctx)
{
    struct work *w = ctx;
    struct slot *s = slot_at(w, i);
    void *row = (unsigned char *)s + SLOT_HEAD;
    memcpy(row, row_at(w->ps, item_row(w, i)), w->ps->size);
    s->rc = w->ps->simulate(w->ps->ctx, item_row(w, i), row, &s->err);
    __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE); /* read by dyn_skip while others run */
}

/* Simulates rows todo[0..m-1] on ps->jobs workers; a row whose worker died is simulated here. */
static int run_parallel(const struct plansim *ps, const int *todo, int m, struct tps_error *err)
{
    size_t stride = SLOT_HEAD + (ps->size + 15) / 16 * 16;
    unsigned char *shared =
        mmap(NULL, stride * (size_t)m, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) return -1;
    struct work w = {.ps = ps, .todo = todo, .shared = shared, .stride = stride};
    struct pool_ops ops = {.work = work_item};
    pool_run(m, ps->jobs, &ops, &w);
    int rc = 0;
    for (int i = 0; i < m && !rc; i++) {
        struct slot *s = slot_at(&w, i);
        if (!s->done) { /* the worker died: once more here, for its error */
            rc = ps->simulate(ps->ctx, todo[i], row_at(ps, todo[i]), err);
            continue;
        }
        memcpy(row_at(ps, todo[i]), (unsigned char *)s + SLOT_HEAD, ps->size);
        if ((rc = s->rc)) *err = s->err;
    }
    munmap(shared, stride * (size_t)m);
    return rc;
}

static double field_d(const void *row, size_t off)
{
    double x;
    memcpy(&x, (const unsigned char *)row + off, sizeof x);
    return x;
}

/* Row i of the plan (row) is pruned when its bound reaches the best simulated time so far: marked
 * so, and skipped in how. */
static bool prune_row(const struct plansim *ps, int *how, int i, void *row, double best)
{
    const int one = 1;
    if (!(best > 0 && field_d(row, ps->bound_off) >= best)) return false;
    memcpy((unsigned char *)row + ps->pruned_off, &one, sizeof one);
    if (how) how[i] = PLAN_SKIP;
    return true;
}

/* The best simulated time with row time t (0 or less: none) added. */
static double better(double best, double t)
{
    return t > 0 && (best <= 0 || t < best) ? t : best;
}

/* Pruning on several workers: item i, its turn come, is left out when a finished row before it
 * prunes it (its bound at least that row's simulated time). */
static int dyn_skip(long i, void *ctx)
{
    struct work *w = ctx;
    double best = 0;
    for (long k = 0; k < i; k++) {
        const struct slot *s = slot_at(w, k);
        if (!w->skipped[k] && __atomic_load_n(&s->done, __ATOMIC_ACQUIRE) && !s->rc)
            best = better(best, field_d((const unsigned char *)s + SLOT_HEAD, w->ps->sim_off));
    }
    w->skipped[i] = best > 0 && field_d(row_at(w->ps, (int)i), w->ps->bound_off) >= best;
    return w->skipped[i];
}

/* plansim_run with pruning (plansim.h): on several workers, every row simulated unless a finished
 * row before it prunes it at its turn; then, in the rows' order, each kept or pruned by the rows
 * before it as simulating in turn would (one simulated in the meantime may lose it), and a row
 * with no worker's answer simulated here (in turn, on one worker; or its worker died). */
static int run_pruned(const struct plansim *ps, int *how, struct tps_error *err)
{
    struct work w = {.ps = ps, .stride = SLOT_HEAD + (ps->size + 15) / 16 * 16};
    size_t bytes = w.stride * (size_t)ps->n;
    if (ps->jobs > 1 && ps->n > 1) {
        w.shared = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        w.skipped = calloc((size_t)ps->n, 1);
        if (w.shared == MAP_FAILED || !w.skipped) {
            if (w.shared != MAP_FAILED) munmap(w.shared, bytes);
            free(w.skipped);
            return tps_error_oom(err);
        }
        struct pool_ops ops = {.work = work_item, .skip = dyn_skip};
        pool_run(ps->n, ps->jobs, &ops, &w);
    }
    double best = 0;
    int rc = 0;
    for (int i = 0; i < ps->n && !rc; i++) {
        void *row = row_at(ps, i);
        if (how) how[i] = PLAN_SIMULATE;
        if (prune_row(ps, how, i, row, best)) continue;
        const struct slot *s = w.shared ? slot_at(&w, i) : NULL;
        if (s && !w.skipped[i] && s->done) {
            memcpy(row, (const unsigned char *)s + SLOT_HEAD, ps->size);
            if ((rc = s->rc)) *err = s->err;
        } else {
            rc = ps->simulate(ps->ctx, i, row, err);
        }
        if (!rc) best = better(best, field_d(row, ps->sim_off));
    }
    if (w.shared) munmap(w.shared, bytes);
    free(w.skipped);
    return rc;
}

int plansim_run(const struct plansim *ps, int *how, struct tps_error *err)
{
    if (ps->prune && !ps->hook) return run_pruned(ps, how, err);
    const struct plan_hook *h = ps->hook;
    int *todo = malloc(((size_t)ps->n + 1) * sizeof *todo), m = 0, rc = 0;
    if (!todo) return tps_error_oom(err);
    for (int k = 0; k < ps->n && !rc; k++) {
        void *row = row_at(ps, k);
        const char *desc = (const char *)row + ps->desc_off;
        int w = h ? h->before(h->ctx, k, desc, row, err) : PLAN_SIMULATE;
        if (how) how[k] = w;
        if (w < 0)
            rc = err->code ? err->code : TPS_EINVAL;
        else if (w == PLAN_SIMULATE)
            todo[m++] = k;
    }
    if (!rc && m > 1 && ps->jobs > 1) {
        if ((rc = run_parallel(ps, todo, m, err)) < 0) rc = tps_error_oom(err);
    } else {
        for (int i = 0; i < m && !rc; i++)
            rc = ps->simulate(ps->ctx, todo[i], row_at(ps, todo[i]), err);
    }
    for (int i = 0; i < m && !rc && h && h->after; i++) {
        const void *row = row_at(ps, todo[i]);
        rc = h->after(h->ctx, todo[i], (const char *)row + ps->desc_off, row, err);
    }
    free(todo);
    return rc;
}
