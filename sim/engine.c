/* engine.c - forked SimGrid replay of a per-rank program (see engine.h).
 *
 * Parent: writes the platform XML (routes only for the GPU pairs that talk), forks, reads op
 * times from a pipe, reaps the child; the child dies with the parent (a signal that ends tpsim
 * ends its simulation too). Child: simgrid_init with the GPU-fabric network settings
 * of ../shared/design/simgrid.md (CM02, no cross-traffic, TCP-gamma 0), one actor per (rank,
 * stream); streams are in order, cross-stream dependencies wait on the rank's state, each
 * blocked actor on a condition variable of its own, woken once what it waits for holds. Units:
 * seconds, bytes.
 */
#include "sim/engine.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xbt/log.h>
#include <xbt/sysdep.h>

#include "common/clock.h"
#include "sim/engine_int.h"
#include "sim/sanitize.h"
#include "platforms/simxml.h"

XBT_LOG_NEW_DEFAULT_CATEGORY(tpsim_engine, "tpsim replay engine");

enum { CHILD_OK = 0, CHILD_DEADLOCK = 1, CHILD_SETUP = 2, CHILD_PERIODS = 3 };

struct child_header {
    int status;    /* CHILD_* */
    int event;     /* CHILD_PERIODS: the link event past PLAT_MAX_LINK_PERIODS */
    double end_s;  /* simulated end time */
    char msg[512]; /* error text when status != CHILD_OK */
};

struct actor_arg {
    struct sim_ctx *c;
    int rank;
    int stream;
    struct sim_waiter w;
};

/* ------------------------------------------------------------------ child side */

static int waiter_ready(const struct sim_rank_state *rs, const struct sim_waiter *w)
{
    switch (w->kind) {
    case SIM_WAIT_DONE:
        return rs->done[w->idx];
    case SIM_WAIT_LAUNCH:
        return rs->launched > w->idx;
    case SIM_WAIT_QUEUE:
        return rs->qhead[rs->ops[w->idx].stream % rs->nq] >= w->idx;
    default:
        return rs->started[w->idx] == SIM_STARTED;
    }
}

/* Blocks the calling actor (whose waiter is w) until op idx of rs is done, launched or started
 * (kind). Actors are cooperative (SimGrid switches only at a simcall): nothing runs between the
 * check and the listing, and the condition's mutex needs no locking around a wait (the actor
 * holds its own for good); the waiter leaves the list only once its wait is over (rank_wake), and
 * waits are never undone. */
static void rank_wait(struct sim_rank_state *rs, struct sim_waiter *w, int kind, int idx)
{
    w->kind = kind;
    w->idx = idx;
    if (waiter_ready(rs, w)) return;
    if (!w->cond) {
        w->cond = sg_cond_init();
        w->mtx = sg_mutex_init();
        sg_mutex_lock(w->mtx);           /* for good: only this actor waits on its condition */
        if (waiter_ready(rs, w)) return; /* others ran during the lock */
    }
    w->next = NULL;
    *rs->waiters_tail = w;
    rs->waiters_tail = &w->next;
    while (!waiter_ready(rs, w))
        sg_cond_wait(w->cond, w->mtx);
}

/* After rs changed: wakes the actors whose wait is over, in the order they came. Notifying is a
 * simcall, during which other actors run and may change the list (or, once woken, their own
 * waiter): each batch is taken off the list first, then notified. A waiter notified late, after
 * it went on without it, only wakes to find its new wait not over. */
static void rank_wake(struct sim_rank_state *rs)
{
    enum { BATCH = 32 };
    struct sim_waiter *ready[BATCH];
    int n;
    do {
        n = 0;
        struct sim_waiter **pp = &rs->waiters;
        while (*pp && n < BATCH) {
            struct sim_waiter *w = *pp;
            if (waiter_ready(rs, w)) {
                *pp = w->next;
                ready[n++] = w;
            } else {
                pp = &w->next;
            }
        }
        if (!*pp) rs->waiters_tail = pp;
        for (int i = 0; i < n; i++)
            sg_cond_notify_one(ready[i]->cond);
    } while (n == BATCH);
}

/* A folded replica's op waits until the op it mirrors has started. */
static void wait_mirror(struct sim_ctx *c, struct sim_waiter *w, const struct mdl_op *op)
{
    rank_wait(&c->rs[op->mirror_rank], w, SIM_WAIT_START, op->mirror_op);
}

static void wait_deps(struct sim_ctx *c, struct sim_waiter *w, int rank, const struct mdl_op *op)
{
    for (int i = 0; i < op->ndeps; i++)
        rank_wait(&c->rs[rank], w, SIM_WAIT_DONE, op->deps[i]);
}

/* The rank's host: launches its ops in program order, each costing the host its launch_s (a
 * kernel launch from the framework, or a CUDA graph's launch); an op cannot start on the GPU
 * before it is launched. Launches are asynchronous, so short kernels leave the GPU waiting for
 * the host and long ones hide it; the host waits for the GPU only before an op marked
 * host_sync, until every op before it is done. */
static void host_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    struct actor_arg *a = sg_actor_self_get_data();
    const struct mdl_rank *rk = &a->c->p->ranks[a->rank];
    struct sim_rank_state *rs = &a->c->rs[a->rank];
    int done = 0; /* ops [0, done) are known to be done */
    for (int i = 0; i < rk->nops; i++) {
        for (; rk->ops[i].host_sync && done < i; done++)
            rank_wait(rs, &a->w, SIM_WAIT_DONE, done);
        if (rk->ops[i].launch_s > 0) sg_actor_sleep_for(rk->ops[i].launch_s);
        rs->launched = i + 1;
        rank_wake(rs);
    }
}

/* A link slowed for a while (struct plat_link_event): a daemon, so that it ends with the last
 * op. Its SimGrid links: "L<i>" when shared, else "L<i>_UP" and "L<i>_DOWN" (split duplex). */
struct link_event_arg {
    const struct plat_link_event *ev;
    sg_link_t links[2];
    double nominal[2];
    int over; /* ran PLAT_MAX_LINK_PERIODS periods: the simulation was stopped */
};

static void link_event_set(const struct link_event_arg *a, double ratio)
{
    for (int k = 0; k < 2; k++)
        if (a->links[k]) sg_link_set_bandwidth(a->links[k], a->nominal[k] * ratio);
}

static void link_event_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    struct link_event_arg *a = sg_actor_self_get_data();
    sg_actor_daemonize(sg_actor_self());
    long period = 0;
    for (double next = a->ev->from_s;; next += a->ev->every_s) {
        if (++period > PLAT_MAX_LINK_PERIODS) { /* work the input does not bound: stop here */
            a->over = 1;
            sg_actor_kill_all();
            return;
        }
        double now = simgrid_get_clock();
        if (next > now) sg_actor_sleep_for(next - now);
        link_event_set(a, a->ev->ratio);
        sg_actor_sleep_for(a->ev->for_s);
        link_event_set(a, 1);
        if (!(a->ev->every_s > 0)) break;
    }
}

/* Starts one actor per link event of t on host h; 0, or -1 when a link is not found. */
static int link_events_start(const struct plat_topo *t, sg_host_t h, struct link_event_arg *args)
{
    for (int i = 0; i < t->nevents; i++) {
        struct link_event_arg *a = &args[i];
        const struct plat_link_event *ev = &t->events[i];
        char name[2][48];
        a->ev = ev;
        a->over = 0;
        if (t->links[ev->link].shared) {
            snprintf(name[0], sizeof name[0], "L%d", ev->link);
            name[1][0] = 0;
        } else {
            snprintf(name[0], sizeof name[0], "L%d_UP", ev->link);
            snprintf(name[1], sizeof name[1], "L%d_DOWN", ev->link);
        }
        for (int k = 0; k < 2; k++) {
            a->links[k] = name[k][0] ? sg_link_by_name(name[k]) : NULL;
            if (name[k][0] && !a->links[k]) return -1;
            a->nominal[k] = a->links[k] ? sg_link_get_bandwidth(a->links[k]) : 0;
        }
        sg_actor_t actor = sg_actor_init("link-event", h);
        sg_actor_set_data(actor, a);
        sg_actor_start(actor, link_event_actor, 0, NULL);
    }
    return 0;
}

/* sim_engine_progress: on, and the child's count of ops done out of its total; the first line
 * waits PROGRESS_AFTER_S of wall time, then one a second. */
#define PROGRESS_AFTER_S 2.0
static int progress_on;
static struct {
    long done, total;
    double next; /* wall clock of the next line */
    int shown;   /* a line is on the terminal */
} prog;

void sim_engine_progress(int on)
{
    progress_on = on;
}

/* Called as ops complete (every 1024th): the clock is read that often, not at every op. */
static void progress_tick(void)
{
    double now = tps_clock_now();
    if (now < prog.next) return;
    prog.next = now + 1;
    fprintf(stderr, "\rtpsim: simulating: %ld of %ld ops done (%.0f%%)", prog.done, prog.total,
            prog.total > 0 ? 100.0 * (double)prog.done / (double)prog.total : 0);
    fflush(stderr);
    prog.shown = 1;
}

static void progress_end(void)
{
    if (prog.shown) fprintf(stderr, "\r%*s\r", 64, "");
    prog.shown = 0;
}

/* Hardware queues (mdl_program.hw_queues): the first op from h on queue q not started yet. */
static int queue_next(const struct sim_rank_state *rs, int nops, int q, int h)
{
    while (h < nops && (rs->begun[h] || rs->ops[h].stream % rs->nq != q))
        h++;
    return h;
}

/* Op i has started: its queue's head moves on, waking the op it stops at. */
static void queue_started(struct sim_rank_state *rs, int nops, int i)
{
    if (!rs->begun) return;
    int q = rs->ops[i].stream % rs->nq;
    rs->begun[i] = 1;
    int h = queue_next(rs, nops, q, rs->qhead[q]);
    if (h != rs->qhead[q]) {
        rs->qhead[q] = h;
        rank_wake(rs);
    }
}

static void stream_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    struct actor_arg *a = sg_actor_self_get_data();
    struct sim_ctx *c = a->c;
    const struct mdl_rank *rk = &c->p->ranks[a->rank];
    struct sim_rank_state *rs = &c->rs[a->rank];
    for (int i = 0; i < rk->nops; i++) {
        const struct mdl_op *op = &rk->ops[i];
        if (op->stream != a->stream) continue;
        rank_wait(rs, &a->w, SIM_WAIT_LAUNCH, i);
        /* with hardware queues: every op launched before it on its queue started, then its deps */
        if (rs->begun) rank_wait(rs, &a->w, SIM_WAIT_QUEUE, i);
        wait_deps(c, &a->w, a->rank, op);
        if (op->mirrored) wait_mirror(c, &a->w, op);
        queue_started(rs, rk->nops, i);
        struct timing_span *ts = timing_op(c->tm, a->rank, i);
        ts->start = simgrid_get_clock();
        if (rs->started && rs->started[i] == SIM_WATCHED) {
            rs->started[i] = SIM_STARTED;
            rank_wake(rs);
        }
        if (mdl_op_is_coll((enum mdl_op_kind)op->kind))
            sim_replay_run(c, a->rank, op);
        else if (op->dur_s > 0)
            sg_actor_sleep_for(op->dur_s);
        ts->end = simgrid_get_clock();
        rs->done[i] = 1;
        rs->ndone++;
        if (progress_on && (++prog.done & 1023) == 0) progress_tick();
        rank_wake(rs);
    }
}

static int host_cmp(const void *a, const void *b)
{
    return strcmp(sg_host_get_name(*(const sg_host_t *)a), sg_host_get_name(*(const sg_host_t *)b));
}

/* Per rank, whether the simulation has anything of it: an op, or a place in a group (a program
 * placed on a few of a platform's GPUs, as a folded chunk is, leaves the others empty). */
static unsigned char *ranks_used(const struct mdl_program *p)
{
    unsigned char *u = calloc((size_t)p->nranks + 1, 1);
    if (!u) return NULL;
    for (int r = 0; r < p->nranks; r++)
        u[r] = p->ranks[r].nops > 0;
    for (int g = 0; g < p->ngroups; g++)
        for (int i = 0; i < p->groups[g].n; i++)
            u[p->groups[g].ranks[i]] = 1;
    return u;
}

/* GPU hosts by name, from one sorted host list (sg_host_by_name searches every zone). */
static int find_hosts(struct sim_ctx *c, const struct plat_topo *t, struct child_header *h)
{
    size_t nh = sg_host_count();
    sg_host_t *all = sg_host_list();
    if (!all) return -1;
    qsort(all, nh, sizeof *all, host_cmp);
    int rc = 0;
    const unsigned char *used = t->xml_path[0] ? NULL : c->used;
    for (int r = 0; r < c->p->nranks && !rc; r++) {
        if (used && !used[r]) continue; /* not on the platform written: nothing of it runs */
        const char *name = t->xml_path[0] ? t->xml_hosts[r] : t->nodes[t->gpu_node[r]].name;
        size_t lo = 0, hi = nh;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (strcmp(sg_host_get_name(all[mid]), name) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < nh && !strcmp(sg_host_get_name(all[lo]), name)) {
            c->hosts[r] = all[lo];
        } else {
            snprintf(h->msg, sizeof h->msg, "host '%s' not found in the platform", name);
            rc = -1;
        }
    }
    xbt_free(all);
    return rc;
}

/* Whether a rank's host must be simulated: some op costs launch time. */
static int host_needed(const struct mdl_rank *rk)
{
    for (int i = 0; i < rk->nops; i++)
        if (rk->ops[i].launch_s > 0 || rk->ops[i].host_sync) return 1;
    return 0;
}

/* Every rank's groups and its index in each (sim_pos), in group order: memory linear in the
 * members of all groups. */
static int members_index(struct sim_ctx *c)
{
    const struct mdl_program *p = c->p;
    size_t total = 0;
    for (int g = 0; g < p->ngroups; g++) {
        for (int i = 0; i < p->groups[g].n; i++)
            c->mstart[p->groups[g].ranks[i] + 1]++;
        total += (size_t)p->groups[g].n;
    }
    for (int r = 0; r < p->nranks; r++)
        c->mstart[r + 1] += c->mstart[r];
    int *next = malloc(((size_t)p->nranks + 1) * sizeof *next);
    c->members = malloc((total + 1) * sizeof *c->members);
    if (!next || !c->members) {
        free(next);
        return -1;
    }
    memcpy(next, c->mstart, (size_t)p->nranks * sizeof *next);
    for (int g = 0; g < p->ngroups; g++)
        for (int i = 0; i < p->groups[g].n; i++)
            c->members[next[p->groups[g].ranks[i]]++] = (struct sim_member){g, i};
    free(next);
    return 0;
}

/* A rank's hardware queues: each queue's head at its first op. */
static int queues_setup(struct sim_rank_state *rs, const struct mdl_rank *rk, int nq)
{
    rs->nq = nq;
    rs->ops = rk->ops;
    rs->begun = calloc((size_t)rk->nops + 1, 1);
    rs->qhead = malloc((size_t)nq * sizeof *rs->qhead);
    if (!rs->begun || !rs->qhead) return -1;
    for (int q = 0; q < nq; q++)
        rs->qhead[q] = queue_next(rs, rk->nops, q, 0);
    return 0;
}

static int child_setup(struct sim_ctx *c, const struct plat_topo *t, struct child_header *h)
{
    const struct mdl_program *p = c->p;
    c->hosts = calloc((size_t)p->nranks, sizeof *c->hosts);
    c->rs = calloc((size_t)p->nranks, sizeof *c->rs);
    c->mb = calloc((size_t)p->ngroups + 1, sizeof *c->mb);
    c->mstart = calloc((size_t)p->nranks + 1, sizeof *c->mstart);
    c->rings = calloc((size_t)p->ngroups + 1, sizeof *c->rings);
    c->wires = calloc((size_t)p->nranks * MDL_MAX_STREAMS, sizeof *c->wires);
    c->bars = calloc((size_t)p->ngroups + 1, sizeof *c->bars);
    if (!c->hosts || !c->rs || !c->mb || !c->mstart || !c->rings || !c->wires || !c->bars)
        return -1;
    if (find_hosts(c, t, h) != 0) return -1;
    for (int r = 0; r < p->nranks; r++) {
        c->rs[r].waiters_tail = &c->rs[r].waiters;
        c->rs[r].done = calloc((size_t)p->ranks[r].nops + 1, 1);
        if (!c->rs[r].done) return -1;
        if (p->hw_queues > 0 && queues_setup(&c->rs[r], &p->ranks[r], p->hw_queues)) return -1;
        c->rs[r].launched = host_needed(&p->ranks[r]) ? 0 : p->ranks[r].nops;
    }
    for (int r = 0; r < p->nranks; r++) /* the ops whose starts other ranks mirror */
        for (int i = 0; i < p->ranks[r].nops; i++) {
            const struct mdl_op *op = &p->ranks[r].ops[i];
            if (!op->mirrored) continue;
            struct sim_rank_state *m = &c->rs[op->mirror_rank];
            if (!m->started &&
                !(m->started = calloc((size_t)p->ranks[op->mirror_rank].nops + 1, 1)))
                return -1;
            m->started[op->mirror_op] = SIM_WATCHED;
        }
    if (members_index(c) != 0) return -1;
    for (int g = 0; g < p->ngroups; g++) {
        const struct mdl_group *gr = &p->groups[g];
        c->mb[g] = calloc((size_t)gr->n * SIM_SLOTS, sizeof *c->mb[g]);
        if (!c->mb[g]) return -1;
        int rings = 1 + c->hier[g].nodes + c->hier[g].local + CPL_MAX_CHANNELS;
        c->rings[g] = malloc((size_t)rings * sizeof *c->rings[g]);
        if (!c->rings[g]) return -1;
        for (int i = 0; i < rings; i++)
            c->rings[g][i].mean_lat = NAN;
    }
    return 0;
}

static int child_write(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static _Noreturn void child_main(const struct mdl_program *p, const struct plat_topo *t,
                                 const struct cpl_plan *plan, const char *xml,
                                 const unsigned char *on_platform, const struct plat_pair *pairs,
                                 int npairs, struct timing *tm, int fd)
{
    /* Stacks are mmap'ed with a guard page, touched only as used; past ~30k actors the
     * mappings run out (simgrid.md), so large runs drop the guard and use small stacks, which
     * SimGrid then allocates zeroed (stack-size * actors of memory). */
    long actors = 0;
    for (int r = 0; r < p->nranks; r++) {
        int used[MDL_MAX_STREAMS] = {0};
        for (int i = 0; i < p->ranks[r].nops; i++)
            used[p->ranks[r].ops[i].stream] = 1;
        for (int s = 0; s < MDL_MAX_STREAMS; s++)
            actors += used[s];
        actors += host_needed(&p->ranks[r]);
    }
    char *argv[16] = {"tpsim",
                      "--cfg=network/model:CM02",
                      "--cfg=network/crosstraffic:0",
                      "--cfg=network/TCP-gamma:0",
                      "--log=root.thres:warning",
                      "--log=tpsim_engine.thres:error"};
    int argc = 6;
#ifdef TPSIM_SANITIZE
    /* raw contexts as in a normal build (threads, ASan's usual remedy, made a simulation 15
     * times slower and the sanitizer suite 5); 256 KiB stacks, as ASan fills and poisons every
     * stack it allocates */
    argv[argc++] = "--cfg=contexts/stack-size:256";
    sim_sanitize_quiet();
#endif
    if (actors > 30000) {
        argv[argc++] = "--cfg=contexts/guard-size:0";
        argv[argc++] = "--cfg=contexts/stack-size:64";
        /* each stack its own mapping: calloc then leaves its pages untouched (zero already)
         * until the actor uses them, where from the heap it cleared all 64 KiB of each */
        mallopt(M_MMAP_THRESHOLD, 60 * 1024);
        mallopt(M_TOP_PAD, 0);
        malloc_trim(0);
    }
    simgrid_init(&argc, argv);
    double t0 = tps_clock_now();
    simgrid_load_platform(xml);
    /* a generated platform is not needed once loaded: a killed run leaves no file behind */
    if (!t->xml_path[0] && !getenv("TPSIM_KEEP_PLATFORM")) unlink(xml);
    double t1 = tps_clock_now();
    struct child_header h = {.status = CHILD_OK};
    struct sim_ctx c = {.p = p,
                        .used = on_platform,
                        .tm = tm,
                        .p_nccl = &t->nccl,
                        .pairs = pairs,
                        .npairs = npairs,
                        .hier = plan->layout};
    if (child_setup(&c, t, &h) != 0) {
        h.status = CHILD_SETUP;
        if (!h.msg[0]) snprintf(h.msg, sizeof h.msg, "out of memory");
        child_write(fd, &h, sizeof h);
        _exit(0);
    }
    int nact = 0;
    struct actor_arg *args = calloc((size_t)p->nranks * (MDL_MAX_STREAMS + 1), sizeof *args);
    for (int r = 0; r < p->nranks; r++) {
        if (c.rs[r].launched < p->ranks[r].nops) { /* the rank's host launches its ops */
            char name[32];
            snprintf(name, sizeof name, "r%d.host", r);
            args[nact] = (struct actor_arg){.c = &c, .rank = r, .stream = -1};
            sg_actor_t a = sg_actor_init(name, c.hosts[r]);
            sg_actor_set_data(a, &args[nact++]);
            sg_actor_start(a, host_actor, 0, NULL);
        }
        int used[MDL_MAX_STREAMS] = {0};
        for (int i = 0; i < p->ranks[r].nops; i++)
            used[p->ranks[r].ops[i].stream] = 1;
        for (int s = 0; s < MDL_MAX_STREAMS; s++) {
            if (!used[s]) continue;
            char name[32];
            snprintf(name, sizeof name, "r%d.s%d", r, s);
            args[nact] = (struct actor_arg){.c = &c, .rank = r, .stream = s};
            sg_actor_t a = sg_actor_init(name, c.hosts[r]);
            sg_actor_set_data(a, &args[nact++]);
            sg_actor_start(a, stream_actor, 0, NULL);
        }
    }
    struct link_event_arg events[PLAT_MAX_LINK_EVENTS];
    if (!t->xml_path[0] && t->nevents && p->nranks > 0 &&
        link_events_start(t, c.hosts[0], events) != 0) {
        h.status = CHILD_SETUP;
        snprintf(h.msg, sizeof h.msg, "a slowed link is missing from the generated platform");
        child_write(fd, &h, sizeof h);
        _exit(0);
    }
    double t2 = tps_clock_now();
    if (progress_on) {
        for (int r = 0; r < p->nranks; r++)
            prog.total += p->ranks[r].nops;
        prog.next = t2 + PROGRESS_AFTER_S;
    }
    simgrid_run();
    progress_end();
    if (getenv("TPSIM_TIMING"))
        fprintf(stderr,
                "tpsim timing: SimGrid load %.3f s, setup and actors %.3f s, simulation %.3f s\n",
                t1 - t0, t2 - t1, tps_clock_now() - t2);
    h.end_s = simgrid_get_clock();
    for (int i = 0; i < t->nevents && !t->xml_path[0] && p->nranks > 0; i++)
        if (events[i].over && h.status == CHILD_OK) {
            h.status = CHILD_PERIODS;
            h.event = i;
            snprintf(h.msg, sizeof h.msg,
                     "%d periods of the slowed link took the simulation only to %.3g s (a run "
                     "holds at most %d): give a longer period",
                     PLAT_MAX_LINK_PERIODS, h.end_s, PLAT_MAX_LINK_PERIODS);
        }
    for (int r = 0; r < p->nranks && h.status == CHILD_OK; r++) {
        if (c.rs[r].ndone == p->ranks[r].nops) continue;
        h.status = CHILD_DEADLOCK;
        for (int i = 0; i < p->ranks[r].nops; i++) {
            if (c.rs[r].done[i]) continue;
            const struct mdl_op *op = &p->ranks[r].ops[i];
            snprintf(h.msg, sizeof h.msg,
                     "deadlock: rank %d never completed op %d (%s '%s', layer %d); the ranks of a "
                     "group must issue its collectives in the same order",
                     r, i, mdl_op_kind_name((enum mdl_op_kind)op->kind), p->names[op->name],
                     op->layer);
            break;
        }
    }
    int ok = child_write(fd, &h, sizeof h);
    if (h.status != CHILD_OK) _exit(ok == 0 ? 0 : 3); /* the parent reads only the header */
    if (ok == 0) ok = child_write(fd, tm->span, tm->first[p->nranks] * sizeof *tm->span);
    if (ok == 0) ok = child_write(fd, tm->bytes_sent, (size_t)p->nranks * sizeof(double));
    if (ok == 0)
        ok = child_write(fd, tm->bytes_dim, (size_t)p->nranks * MDL_OP_DIMS * sizeof(double));
    _exit(ok == 0 ? 0 : 3);
}

/* ------------------------------------------------------------------ parent side */

static int read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Writes the platform XML for the pairs the plan's algorithms use; *pairs receives them with
 * their route latency and bandwidth (sorted by source, then destination). */
static int write_platform(const struct cpl_plan *plan, int nranks, const unsigned char *used,
                          const struct plat_topo *t, char *path, struct plat_pair **pairs,
                          int *npairs, struct tps_error *err)
{
    int n = plan->npairs, rc;
    *pairs = malloc((size_t)(n + 1) * sizeof **pairs);
    if (!*pairs) return tps_error_oom(err);
    for (int i = 0; i < n; i++)
        (*pairs)[i] = (struct plat_pair){.src = plan->pairs[i][0], .dst = plan->pairs[i][1]};
    *npairs = n;
    if (t->xml_path[0]) return TPS_OK;
    snprintf(path, 64, "/tmp/tpsim-platform-XXXXXX");
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        rc = tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot create: %s", strerror(errno));
        if (fd >= 0) close(fd);
        return rc;
    }
    rc = plat_simxml_write(t, *pairs, n, nranks, used, f, err);
    if (fclose(f) != 0 && rc == TPS_OK)
        rc = tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write");
    return rc;
}

/* What the engine takes for granted but checks cheaply, since a violation would hang or crash
 * the simulation: ranks fit on the platform, every collective was tuned, and the plan is the
 * program's. */
static int check_preconditions(const struct mdl_program *p, const struct plat_topo *t,
                               const struct cpl_plan *plan, struct tps_error *err)
{
    if (plan->ngroups != p->ngroups || (p->ngroups && !plan->layout))
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, NULL,
                             "internal: the communication plan is not this program's (%d groups, "
                             "the program has %d)",
                             plan->ngroups, p->ngroups);
    if (p->nranks > t->ngpus)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, NULL,
                             "the program has %d ranks but the platform only %d GPUs", p->nranks,
                             t->ngpus);
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++) {
            const struct mdl_op *op = &p->ranks[r].ops[i];
            if (mdl_op_is_coll((enum mdl_op_kind)op->kind) &&
                (op->algo == MDL_ALGO_AUTO || op->proto == MDL_PROTO_AUTO))
                return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, NULL,
                                     "internal: collective op %d of rank %d was not tuned", i, r);
        }
    return TPS_OK;
}

int sim_engine_run(const struct mdl_program *p, const struct plat_topo *t,
                   const struct cpl_plan *plan, struct timing *tm, struct tps_error *err)
{
    memset(tm, 0, sizeof *tm);
    int rc = check_preconditions(p, t, plan, err);
    if (rc) return rc;
    double w1 = tps_clock_now();
    char tmp[64] = "";
    const char *xml = t->xml_path[0] ? t->xml_path : tmp;
    struct plat_pair *pairs = NULL;
    int npairs = 0;
    unsigned char *used = ranks_used(p);
    if (!used) return tps_error_oom(err);
    rc = write_platform(plan, p->nranks, used, t, tmp, &pairs, &npairs, err);
    if (rc) {
        if (tmp[0]) unlink(tmp);
        free(pairs);
        free(used);
        return rc;
    }
    int fds[2];
    if (timing_init(tm, p) != TPS_OK || pipe(fds) != 0) {
        if (tmp[0]) unlink(tmp);
        free(pairs);
        free(used);
        return tps_error_set(err, TPS_EIO, NULL, 0, 0, NULL, "cannot start the simulation");
    }
    if (getenv("TPSIM_TIMING"))
        fprintf(stderr, "tpsim timing: routes and platform XML %.3f s (%d pairs)\n",
                tps_clock_now() - w1, npairs);
    fflush(NULL);
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        if (tmp[0]) unlink(tmp);
        free(pairs);
        free(used);
        return tps_error_set(err, TPS_EIO, NULL, 0, 0, NULL, "fork failed: %s", strerror(errno));
    }
    if (pid == 0) {
        /* the simulation dies with tpsim: a signal that ends the parent leaves no orphan */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(4);
        close(fds[0]);
        child_main(p, t, plan, xml, used, pairs, npairs, tm, fds[1]);
    }
    close(fds[1]);
    struct child_header h;
    int got = read_all(fds[0], &h, sizeof h) == 0;
    if (got && h.status == CHILD_OK)
        got = read_all(fds[0], tm->span, tm->first[p->nranks] * sizeof *tm->span) == 0;
    if (got && h.status == CHILD_OK)
        got = read_all(fds[0], tm->bytes_sent, (size_t)p->nranks * sizeof(double)) == 0;
    if (got && h.status == CHILD_OK)
        got =
            read_all(fds[0], tm->bytes_dim, (size_t)p->nranks * MDL_OP_DIMS * sizeof(double)) == 0;
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (tmp[0] && !getenv("TPSIM_KEEP_PLATFORM")) unlink(tmp);
    if (tmp[0] && getenv("TPSIM_KEEP_PLATFORM"))
        fprintf(stderr, "tpsim: platform kept in %s\n", tmp);
    free(pairs);
    free(used);
    if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFSIGNALED(status))
            return tps_error_set(err, TPS_ESIM, t->xml_path[0] ? t->xml_path : NULL, 0, 0, NULL,
                                 "SimGrid aborted the simulation (signal %d); its own message is "
                                 "printed above",
                                 WTERMSIG(status));
        return tps_error_set(err, TPS_ESIM, t->xml_path[0] ? t->xml_path : NULL, 0, 0, NULL,
                             "the simulation process failed (exit status %d); SimGrid's message "
                             "is printed above",
                             WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    if (h.status == CHILD_PERIODS && h.event >= 0 && h.event < t->nevents) {
        const struct tps_error *w = &t->events[h.event].where;
        return tps_error_set(err, TPS_EINVAL, w->path[0] ? w->path : NULL, w->line, w->col,
                             w->field[0] ? w->field : NULL, "%s", h.msg);
    }
    if (h.status != CHILD_OK) return tps_error_set(err, TPS_ESIM, NULL, 0, 0, NULL, "%s", h.msg);
    tm->end_s = h.end_s;
    return TPS_OK;
}
