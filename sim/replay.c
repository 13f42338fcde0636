/* replay.c - collective algorithms replayed as point-to-point messages between SimGrid actors.
 *
 * Each rank runs its part of the algorithm chosen for the op (core/tune.c) with the schedules
 * of models/collective.c. Per-step granularity sends every round's messages; flow-level sends,
 * per phase, one message per peer carrying all the phase's bytes after sleeping the phase's
 * latency terms, so an uncontended flow-level phase costs what its per-step twin costs, while
 * shared links still slow it down. A ring step waits for its data only (its latency on the
 * critical path is the ring's mean); the other schedules wait for every message of a step. A
 * protocol costs its base latency once per collective, adds its per-step latency to every route
 * latency, and inflates the bytes on the wire by 1/eff. Route latencies are slept before sending
 * (links carry none, see simxml.h). Units: bytes, seconds.
 */
#include "common/error.h"
#include "sim/engine_int.h"

#include <math.h>
#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/cond.h>
#include <simgrid/mutex.h>
#include <simgrid/engine.h>
#include <stdio.h>
#include <stdlib.h>
#include <xbt/asserts.h>
#include <xbt/log.h>

XBT_LOG_NEW_DEFAULT_CATEGORY(tpsim_coll, "tpsim collectives");

static char token = 't'; /* SimGrid needs a non-NULL payload */

/* Mailbox slots of a member: rings and direct use 0 (hierarchical rails 1); trees (also those
 * across machines of hierarchical_tree, whose rings inside machines keep slot 0) receive from
 * child j of tree t on 2 + 2t + j and from the parent of tree t on 6 + t; ring channels 8 and
 * up. Wires (wire_send): rings use channel 0 (channel ch across machines), trees 2 + t to the
 * parent of tree t and 4 + 2t + j to its child j. */
enum {
    SLOT_MAIN = 0,
    SLOT_RAIL = 1,
    SLOT_UP = 2,
    SLOT_DOWN = 6,
    SLOT_CHAN = 8 /* ring channel ch: SLOT_CHAN + ch */
};
enum { WIRE_UP = 2, WIRE_DOWN = 4 };

struct xfer {
    struct sim_ctx *c;
    int rank, group, stream;
    int machines; /* hierarchical algorithms: machines of the group, else 0 */
    const struct mdl_group *g;
    double hop, eff;  /* protocol per-step latency and efficiency */
    int gran;         /* enum mdl_coll_gran */
    void **sink;      /* receive buffers, cap entries */
    sg_comm_t *comms; /* pending comms, cap entries */
    int ncomms, cap;
};

static sg_mailbox_t mailbox(struct sim_ctx *c, int g, int member, int slot)
{
    sg_mailbox_t *m = &c->mb[g][member * SIM_SLOTS + slot];
    if (!*m) {
        char name[64];
        snprintf(name, sizeof name, "g%d.m%d.s%d", g, member, slot);
        *m = sg_mailbox_by_name(name);
    }
    return *m;
}

static const struct plat_pair *pair_of(const struct sim_ctx *c, int src, int dst)
{
    int lo = 0, hi = c->npairs - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const struct plat_pair *p = &c->pairs[mid];
        if (p->src == src && p->dst == dst) return p;
        if (p->src < src || (p->src == src && p->dst < dst))
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

/* Route latency plus protocol hop latency towards group member m. */
static double alpha_to(const struct xfer *x, int m)
{
    const struct plat_pair *p = pair_of(x->c, x->rank, x->g->ranks[m]);
    return (p ? p->lat_s : 0) + x->hop;
}

/* Route bandwidth times efficiency towards member m (0 when unknown). */
static double bw_to(const struct xfer *x, int m)
{
    const struct plat_pair *p = pair_of(x->c, x->rank, x->g->ranks[m]);
    return p ? p->bw_Bps * x->eff : 0;
}

static int flow_level(const struct xfer *x, int members)
{
    return mdl_coll_flow_level((enum mdl_coll_gran)x->gran, members, x->machines,
                               x->c->p_nccl->flow_threshold);
}

static void post_recv(struct xfer *x, int slot)
{
    int me = x->c->pos[x->group][x->rank];
    x->comms[x->ncomms] =
        sg_mailbox_get_async(mailbox(x->c, x->group, me, slot), &x->sink[x->ncomms]);
    x->ncomms++;
}

static void post_send(struct xfer *x, int member, int slot, double payload)
{
    long size = (long)llround(payload / x->eff);
    x->comms[x->ncomms++] =
        sg_mailbox_put_async(mailbox(x->c, x->group, member, slot), &token, size);
    x->c->tm->bytes_sent[x->rank] += payload;
}

/* Waits for every pending comm. One wait per comm rather than sg_comm_wait_all, which SimGrid
 * 4.1 removed (activity sets replace it): the comms progress together in simulated time either
 * way, so the actor resumes when the last one ends, on SimGrid 3.32 through 4.x alike. */
static void finish(struct xfer *x)
{
    for (int i = 0; i < x->ncomms; i++)
        sg_comm_wait(x->comms[i]);
    x->ncomms = 0;
}

static void sleep_for(double s)
{
    if (s > 0) sg_actor_sleep_for(s);
}

static int ring_member(struct xfer *x, const int *mem, int stride, int m, int chan, int k)
{
    if (chan >= 0) return tune_channel_member(&x->c->hier[x->group], chan, k % m);
    return mem ? mem[(k % m) * stride] : k % m;
}

/* Route figures of a ring (sim_ctx.rings; chan >= 0: ring channel chan, whose id that is),
 * computed once per group. */
static const struct tune_routes *ring_routes(struct xfer *x, const int *mem, int stride, int m,
                                             int chan, int id)
{
    struct tune_routes *rg = &x->c->rings[x->group][id];
    if (isnan(rg->mean_lat)) {
        double lat = 0, inv = 0;
        *rg = (struct tune_routes){0};
        for (int k = 0; k < m; k++) {
            int a = ring_member(x, mem, stride, m, chan, k);
            int b = ring_member(x, mem, stride, m, chan, k + 1);
            const struct plat_pair *p = pair_of(x->c, x->g->ranks[a], x->g->ranks[b]);
            if (!p || !(p->bw_Bps > 0)) continue;
            lat += p->lat_s / m;
            inv += 1 / p->bw_Bps / m;
            if (p->lat_s > rg->lat) rg->lat = p->lat_s;
            if (rg->bw == 0 || p->bw_Bps < rg->bw) rg->bw = p->bw_Bps;
        }
        rg->mean_bw = inv > 0 ? 1 / inv : 0;
        rg->mean_lat = lat;
    }
    return rg;
}

/* A ring's time on routes rg for this op's protocol (mdl_coll_ring); 0 without routes. */
static double ring_time(const struct xfer *x, const struct tune_routes *rg, int steps, double chunk)
{
    struct mdl_coll_path p = tune_coll_path(rg, x->hop, x->eff);
    return p.bw_Bps > 0 ? mdl_coll_ring(steps, chunk, &p) : 0;
}

/* The wire's actor (a daemon): sends each queued message at its time, one after another as a
 * connection carries them (first in, first out, not sharing the link among its own messages);
 * the latency is waited out to an absolute time, so it delays each message without spacing the
 * next ones out. */
static void wire_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    struct sim_wire *w = sg_actor_self_get_data();
    sg_actor_daemonize(sg_actor_self());
    for (;;) {
        sg_mutex_lock(w->mtx);
        while (w->n == 0)
            sg_cond_wait(w->cond, w->mtx);
        struct sim_wire_req r = w->q[w->head++];
        w->n--;
        sg_mutex_unlock(w->mtx);
        if (r.at > simgrid_get_clock()) sg_actor_sleep_until(r.at);
        sg_comm_wait(sg_mailbox_put_async(r.mb, &token, r.size));
    }
}

/* Queues a message of `payload` bytes to member m's mailbox `slot` on the wire of channel ch,
 * leaving `delay` from now. */
static void wire_send(struct xfer *x, int ch, int member, int slot, double payload, double delay)
{
    struct sim_wire *w =
        &x->c->wires[(x->rank * MDL_MAX_STREAMS + x->stream) * TUNE_MAX_CHANNELS + ch];
    if (!w->mtx) {
        w->mtx = sg_mutex_init();
        w->cond = sg_cond_init();
        char name[48];
        snprintf(name, sizeof name, "r%d.s%d.c%d.wire", x->rank, x->stream, ch);
        sg_actor_t a = sg_actor_init(name, x->c->hosts[x->rank]);
        sg_actor_set_data(a, w);
        sg_actor_start(a, wire_actor, 0, NULL);
    }
    sg_mutex_lock(w->mtx);
    if (w->n == 0) w->head = 0;
    if (w->head + w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 64;
        struct sim_wire_req *q = realloc(w->q, (size_t)cap * sizeof *q);
        xbt_assert(q, "out of memory");
        w->q = q;
        w->cap = cap;
    }
    w->q[w->head + w->n++] =
        (struct sim_wire_req){simgrid_get_clock() + delay, mailbox(x->c, x->group, member, slot),
                              (long)llround(payload / x->eff)};
    sg_cond_notify_one(w->cond);
    sg_mutex_unlock(w->mtx);
    x->c->tm->bytes_sent[x->rank] += payload;
}

/* Ring of m members (member index of ring position k: mem[k * stride], or k when mem is NULL),
 * this rank at position me, ring id `id` (sim_ctx.rings): `steps` rounds of `chunk` bytes to
 * the next position. A step's message leaves when the previous step's data has arrived and the
 * route's latency has passed (on the wire, so a slow route delays its messages without spacing
 * them out); the critical path crosses every route in turn (mdl_coll_ring), which is what the
 * flow-level form sleeps for, less its own flow's time. */
static void ring(struct xfer *x, const int *mem, int stride, int m, int me, int slot, int steps,
                 double chunk, int id)
{
    if (m < 2 || steps < 1) return;
    int next = mem ? mem[((me + 1) % m) * stride] : (me + 1) % m;
    if (flow_level(x, m)) {
        /* one flow of all the rounds, after sleeping what the ring's time exceeds that flow's
         * own uncontended time by */
        double bw = bw_to(x, next);
        double t = ring_time(x, ring_routes(x, mem, stride, m, -1, id), steps, chunk);
        post_recv(x, slot);
        sleep_for(t - (bw > 0 ? steps * chunk / bw : 0));
        post_send(x, next, slot, steps * chunk);
        finish(x);
        return;
    }
    double a = alpha_to(x, next);
    sg_mailbox_t in = mailbox(x->c, x->group, x->c->pos[x->group][x->rank], slot);
    sg_comm_t recv[2];
    void *sink[2];
    recv[0] = sg_mailbox_get_async(in, &sink[0]);
    wire_send(x, 0, next, slot, chunk, a);
    for (int s = 1; s < steps; s++) {
        recv[s & 1] = sg_mailbox_get_async(in, &sink[s & 1]);
        sg_comm_wait(recv[(s - 1) & 1]); /* the data step s forwards */
        wire_send(x, 0, next, slot, chunk, a);
    }
    sg_comm_wait(recv[(steps - 1) & 1]);
}

/* A ring collective of S bytes across machines in h->channels rings at once (NCCL's channels,
 * tune_channel_member), each of S / channels, on mailbox slots SLOT_CHAN + ch and a wire per
 * channel, its steps as in ring(). */
static void ring_channels(struct xfer *x, int me, int steps, double S)
{
    const struct tune_hier *h = &x->c->hier[x->group];
    int C = h->channels, n = x->g->n, L = h->local, N = h->nodes;
    double chunk = S / n / C;
    int next[TUNE_MAX_CHANNELS];
    for (int j = 0; j < C; j++)
        next[j] = tune_channel_member(h, j, (tune_channel_pos(h, j, me) + 1) % n);
    if (flow_level(x, n)) {
        double t = 0, own = 0;
        for (int j = 0; j < C; j++) {
            double tj = ring_time(x, ring_routes(x, NULL, 1, n, j, 1 + N + L + j), steps, chunk);
            double bw = bw_to(x, next[j]), fj = bw > 0 ? steps * chunk / bw : 0;
            if (tj > t) t = tj;
            if (fj > own) own = fj;
            post_recv(x, SLOT_CHAN + j);
        }
        sleep_for(t - own);
        for (int j = 0; j < C; j++)
            post_send(x, next[j], SLOT_CHAN + j, steps * chunk);
        finish(x);
        return;
    }
    /* the channels advance independently: whichever's data arrives first is forwarded first */
    sg_mailbox_t in[TUNE_MAX_CHANNELS];
    sg_comm_t q[TUNE_MAX_CHANNELS][2], list[TUNE_MAX_CHANNELS];
    void *sink[TUNE_MAX_CHANNELS][2];
    double a[TUNE_MAX_CHANNELS];
    int posted[TUNE_MAX_CHANNELS] = {0}, done[TUNE_MAX_CHANNELS] = {0}, map[TUNE_MAX_CHANNELS];
    for (int j = 0; j < C; j++) {
        in[j] = mailbox(x->c, x->group, me, SLOT_CHAN + j);
        a[j] = alpha_to(x, next[j]);
        for (; posted[j] < steps && posted[j] < 2; posted[j]++)
            q[j][posted[j] & 1] = sg_mailbox_get_async(in[j], &sink[j][posted[j] & 1]);
        wire_send(x, j, next[j], SLOT_CHAN + j, chunk, a[j]);
    }
    for (;;) {
        int cnt = 0;
        for (int j = 0; j < C; j++)
            if (done[j] < steps) {
                list[cnt] = q[j][done[j] & 1];
                map[cnt++] = j;
            }
        if (!cnt) break;
        int j = map[sg_comm_wait_any(list, (size_t)cnt)];
        done[j]++;
        if (done[j] < steps) wire_send(x, j, next[j], SLOT_CHAN + j, chunk, a[j]);
        for (; posted[j] < steps && posted[j] - done[j] < 2; posted[j]++)
            q[j][posted[j] & 1] = sg_mailbox_get_async(in[j], &sink[j][posted[j] & 1]);
    }
}

/* Pairwise exchange: `rounds` times, m-1 steps where member me sends `chunk` to me+j and
 * receives from me-j. */
static void direct(struct xfer *x, int m, int me, int rounds, double chunk)
{
    if (flow_level(x, m)) {
        double lat = 0;
        for (int j = 1; j < m; j++)
            lat += alpha_to(x, (me + j) % m);
        for (int j = 1; j < m; j++)
            post_recv(x, SLOT_MAIN);
        sleep_for(rounds * lat);
        for (int j = 1; j < m; j++)
            post_send(x, (me + j) % m, SLOT_MAIN, rounds * chunk);
        finish(x);
        return;
    }
    for (int r = 0; r < rounds; r++)
        for (int j = 1; j < m; j++) {
            post_recv(x, SLOT_MAIN);
            sleep_for(alpha_to(x, (me + j) % m));
            post_send(x, (me + j) % m, SLOT_MAIN, chunk);
            finish(x);
        }
}

/* NVLS all-reduce of S bytes over m members of one NVSwitch machine. SimGrid cannot reduce or
 * multicast inside a switch, so the switch's work is carried by what it does to the links: each
 * GPU sends S (1 + 1/m) up its link (its buffer read by the reductions, its reduced slice written
 * once) and receives as much (the reduced slice, the others' multicasts), here as one flow to
 * every other member through the switch; the reduction and the multicast are the two latency
 * steps. Contention with other traffic on those links is then SimGrid's. */
static void nvls(struct xfer *x, int m, int me, double S)
{
    double lat = 0;
    for (int j = 1; j < m; j++) {
        double a = alpha_to(x, (me + j) % m);
        if (a > lat) lat = a;
        post_recv(x, SLOT_MAIN);
    }
    sleep_for(2 * lat);
    for (int j = 1; j < m; j++)
        post_send(x, (me + j) % m, SLOT_MAIN, S * (m + 1) / m / (m - 1));
    finish(x);
}

/* Broadcast from member 0 along the chain 0 -> 1 -> ... -> m-1 in k chunks. */
static void chain(struct xfer *x, int m, int me, double bytes, int root, int toward_root)
{
    int k = mdl_coll_chunks(bytes, x->c->p_nccl->chunk_bytes);
    double c = bytes / k;
    /* place in the chain, which runs in ring order: a broadcast's from the root, a reduce's
     * from the member after the root round to the root itself */
    int dist = (me - root + m) % m, at = toward_root ? (dist + m - 1) % m : dist;
    int next = (me + 1) % m;
    int sends = at <= m - 2, recvs = at >= 1;
    if (flow_level(x, m)) {
        if (recvs) post_recv(x, SLOT_MAIN);
        if (sends) {
            double bw = bw_to(x, next);
            sleep_for((k + m - 2) * alpha_to(x, next) + (bw > 0 ? (m - 2) * c / bw : 0));
            post_send(x, next, SLOT_MAIN, bytes);
        }
        finish(x);
        return;
    }
    for (int s = 0; s < k + m - 2; s++) {
        int r = recvs && s - (at - 1) >= 0 && s - (at - 1) < k;
        int w = sends && s - at >= 0 && s - at < k;
        if (r) post_recv(x, SLOT_MAIN);
        if (w) {
            sleep_for(alpha_to(x, next));
            post_send(x, next, SLOT_MAIN, c);
        }
        finish(x);
    }
}

/* Tree loads (mdl_tree_load), remembered per (n, k): every rank asks. */
static int tree_load(struct sim_ctx *c, int n, int k, int *flow_load)
{
    for (int i = 0; i < c->ntree_memo; i++) {
        const struct sim_tree_memo *m = &c->tree_memo[i];
        if (m->n == n && m->k == k) {
            *flow_load = m->flow;
            return m->sum;
        }
    }
    int sum = mdl_tree_load(n, k, flow_load);
    if (c->ntree_memo < SIM_TREE_MEMO)
        c->tree_memo[c->ntree_memo++] = (struct sim_tree_memo){n, k, sum, *flow_load};
    return sum;
}

/* Double binary tree all-reduce over n members (member of tree position i: mem[i * stride], or i
 * when mem is NULL), this rank at position me: each tree carries half the buffer in k chunks,
 * reduced going up and broadcast coming down in one pipeline, as NCCL's trees run (the root
 * sends chunk j down in the step after it has reduced it). Sends go on wires, one per
 * connection, so a route's latency delays a chunk without spacing the next ones out: the
 * pipeline pays latency per level of the tree, bandwidth per chunk. */
static void tree(struct xfer *x, const int *mem, int n, int stride, int me, double bytes)
{
#define M(i) (mem ? mem[(i)*stride] : (i))
    int H = mdl_tree_height(n, 0, 0);
    int k = mdl_tree_chunks(bytes / 2, x->c->p_nccl->chunk_bytes, H);
    double c = bytes / 2 / k;
    int parent[2], nch[2], ch[2][2], at[2];
    for (int t = 0; t < 2; t++) {
        nch[t] = mdl_tree_links(n, t, me, &parent[t], ch[t]);
        at[t] = 0; /* this rank's index among its parent's children */
        if (parent[t] >= 0) {
            int pp, pc[2];
            int pn = mdl_tree_links(n, t, parent[t], &pp, pc);
            at[t] = pn == 2 && pc[1] == me;
        }
    }
    if (flow_level(x, n)) {
        /* one phase: the closed form's time (mdl_coll_time) less the bulk bytes at flow load,
         * then every transfer of the pipeline as one flow */
        int fl, sum = tree_load(x->c, n, k, &fl);
        double lat = 0;
        for (int t = 0; t < 2; t++)
            for (int j = -1; j < nch[t]; j++) {
                int peer = j < 0 ? parent[t] : ch[t][j];
                if (peer < 0) continue;
                double bw = bw_to(x, M(peer)), a = alpha_to(x, M(peer));
                if (!(bw > 0)) continue;
                double l = mdl_tree_time(H, k, sum, c, a, bw) - fl * k * c / bw;
                if (l > lat) lat = l;
            }
        for (int t = 0; t < 2; t++) {
            for (int j = 0; j < nch[t]; j++)
                post_recv(x, SLOT_UP + 2 * t + j);
            if (parent[t] >= 0) post_recv(x, SLOT_DOWN + t);
        }
        sleep_for(lat);
        for (int t = 0; t < 2; t++) {
            if (parent[t] >= 0) post_send(x, M(parent[t]), SLOT_UP + 2 * t + at[t], k * c);
            for (int j = 0; j < nch[t]; j++)
                post_send(x, M(ch[t][j]), SLOT_DOWN + t, k * c);
        }
        finish(x);
        return;
    }
    /* a pipeline driven by arrivals: chunk i goes up once every child's chunk i has arrived,
     * and down once reduced (root) or received from the parent; a receive is outstanding per
     * connection, at most two chunks ahead */
    enum { NQ = 6 };
    sg_mailbox_t in[NQ];
    sg_comm_t q[NQ][2], list[NQ];
    void *sink[NQ][2];
    int expect[NQ] = {0}, posted[NQ] = {0}, got[NQ] = {0}, map[NQ];
    int up_sent[2] = {0, 0}, down_sent[2] = {0, 0};
    for (int t = 0; t < 2; t++) {
        for (int j = 0; j < 2; j++) {
            expect[2 * t + j] = j < nch[t] ? k : 0;
            in[2 * t + j] = mailbox(x->c, x->group, M(me), SLOT_UP + 2 * t + j);
        }
        expect[4 + t] = parent[t] >= 0 ? k : 0;
        in[4 + t] = mailbox(x->c, x->group, M(me), SLOT_DOWN + t);
    }
    for (;;) {
        for (int t = 0; t < 2; t++) {
            int reduced = k; /* chunks whose children's parts have all arrived */
            for (int j = 0; j < nch[t]; j++)
                if (got[2 * t + j] < reduced) reduced = got[2 * t + j];
            for (; parent[t] >= 0 && up_sent[t] < reduced; up_sent[t]++)
                wire_send(x, WIRE_UP + t, M(parent[t]), SLOT_UP + 2 * t + at[t], c,
                          alpha_to(x, M(parent[t])));
            int down = parent[t] >= 0 ? got[4 + t] : reduced;
            for (; nch[t] && down_sent[t] < down; down_sent[t]++)
                for (int j = 0; j < nch[t]; j++)
                    wire_send(x, WIRE_DOWN + 2 * t + j, M(ch[t][j]), SLOT_DOWN + t, c,
                              alpha_to(x, M(ch[t][j])));
        }
        int cnt = 0;
        for (int i = 0; i < NQ; i++) {
            for (; posted[i] < expect[i] && posted[i] - got[i] < 2; posted[i]++)
                q[i][posted[i] & 1] = sg_mailbox_get_async(in[i], &sink[i][posted[i] & 1]);
            if (got[i] < expect[i]) {
                list[cnt] = q[i][got[i] & 1];
                map[cnt++] = i;
            }
        }
        if (!cnt) break;
        got[map[sg_comm_wait_any(list, (size_t)cnt)]]++;
    }
#undef M
}

/* Hierarchical algorithms a (rings or, for HTREE, trees across machines) */
static void hierarchical(struct xfer *x, enum mdl_coll_algo a, enum mdl_op_kind k, int me, double S)
{
    const struct tune_hier *h = &x->c->hier[x->group];
    int L = h->local, N = h->nodes, j = h->node_of[me], l = h->local_of[me];
    const int *local = &h->member[j * L], *rail = &h->member[l];
    if (k != MDL_OP_ALL_GATHER) ring(x, local, 1, L, l, SLOT_MAIN, L - 1, S / L, 1 + j);
    int rail_steps = k == MDL_OP_ALL_REDUCE ? 2 * (N - 1) : N - 1;
    if (a == MDL_ALGO_HTREE)
        tree(x, rail, N, L, j, S / L);
    else
        ring(x, rail, L, N, j, SLOT_RAIL, rail_steps, S / L / N, 1 + N + l);
    if (k != MDL_OP_REDUCE_SCATTER) ring(x, local, 1, L, l, SLOT_MAIN, L - 1, S / L, 1 + j);
}

void sim_replay_run(struct sim_ctx *c, int rank, const struct mdl_op *op)
{
    /* mdl_program_check ran in the pipeline: a bad group here is a bug */
    TPS_ASSERT(op->group >= 0 && op->group < c->p->ngroups);
    TPS_ASSERT(c->pos[op->group][rank] >= 0);
    const struct mdl_group *g = &c->p->groups[op->group];
    int n = g->n;
    if (n <= 1) return;
    int me = c->pos[op->group][rank];
    enum mdl_op_kind k = (enum mdl_op_kind)op->kind;
    struct xfer x = {.c = c, .rank = rank, .group = op->group, .stream = op->stream, .g = g};
    const struct mdl_nccl *nc = c->p_nccl;
    int pr = op->proto ? op->proto : MDL_PROTO_SIMPLE;
    x.hop = nc->hop_s[pr];
    x.eff = nc->eff[pr] > 0 ? nc->eff[pr] : 1;
    x.gran = op->gran;
    if (op->algo == MDL_ALGO_HIER || op->algo == MDL_ALGO_HTREE)
        x.machines = c->hier[op->group].nodes;
    /* at most 2 * TUNE_MAX_CHANNELS comms pend at once, except in a direct exchange (2(n-1)) */
    enum { FIXED = 2 * TUNE_MAX_CHANNELS + 4 };
    sg_comm_t comms[FIXED];
    void *sink[FIXED];
    x.cap = op->algo == MDL_ALGO_DIRECT || op->algo == MDL_ALGO_NVLS ? 2 * n + 8 : FIXED;
    x.comms = x.cap > FIXED ? malloc((size_t)x.cap * sizeof *x.comms) : comms;
    x.sink = x.cap > FIXED ? malloc((size_t)x.cap * sizeof *x.sink) : sink;
    xbt_assert(x.comms && x.sink, "out of memory");
    sleep_for(nc->base_s[pr]);
    double S = op->bytes;
    switch (op->algo) {
    case MDL_ALGO_TREE:
        tree(&x, NULL, n, 1, me, S);
        break;
    case MDL_ALGO_HIER:
    case MDL_ALGO_HTREE:
        hierarchical(&x, (enum mdl_coll_algo)op->algo, k, me, S);
        break;
    case MDL_ALGO_NVLS:
        x.eff *= nc->nvls_eff > 0 ? nc->nvls_eff : 1;
        nvls(&x, n, me, S);
        break;
    case MDL_ALGO_DIRECT:
        if (k == MDL_OP_SEND_RECV || k == MDL_OP_BROADCAST) {
            /* the root sends the whole buffer to every other member, one after another */
            int root = op->root;
            if (me != root) {
                post_recv(&x, SLOT_MAIN);
                finish(&x);
            } else if (flow_level(&x, n)) {
                double lat = 0;
                for (int j = 1; j < n; j++)
                    lat += alpha_to(&x, (root + j) % n);
                sleep_for(lat);
                for (int j = 1; j < n; j++)
                    post_send(&x, (root + j) % n, SLOT_MAIN, S);
                finish(&x);
            } else {
                for (int j = 1; j < n; j++) {
                    sleep_for(alpha_to(&x, (root + j) % n));
                    post_send(&x, (root + j) % n, SLOT_MAIN, S);
                    finish(&x);
                }
            }
        } else {
            direct(&x, n, me, k == MDL_OP_ALL_REDUCE ? 2 : 1, S / n);
        }
        break;
    default:
        if (k == MDL_OP_BROADCAST || k == MDL_OP_REDUCE)
            chain(&x, n, me, S, op->root, k == MDL_OP_REDUCE);
        else if (c->hier[op->group].channels > 1)
            ring_channels(&x, me, k == MDL_OP_ALL_REDUCE ? 2 * (n - 1) : n - 1, S);
        else
            ring(&x, NULL, 1, n, me, SLOT_MAIN, k == MDL_OP_ALL_REDUCE ? 2 * (n - 1) : n - 1, S / n,
                 0);
    }
    if (x.comms != comms) free(x.comms);
    if (x.sink != sink) free(x.sink);
    XBT_DEBUG("rank %d: %s of %.0f bytes done", rank, mdl_op_kind_name(k), op->bytes);
}
