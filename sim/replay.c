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
#include "common/grow.h"
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
#include <string.h>
#include <xbt/asserts.h>
#include <xbt/log.h>

XBT_LOG_NEW_DEFAULT_CATEGORY(tpsim_coll, "tpsim collectives");

static char token = 't'; /* SimGrid needs a non-NULL payload */

/* Mailbox slots of a member: rings and direct use 0 (hierarchical rails 1); ring channels 8 and
 * up; tree t (also the trees across machines of hierarchical_tree, whose rings inside machines
 * keep slot 0) receives from its child j on SLOT_TREE + 4t + j and from its parent on
 * SLOT_TREE + 4t + 3; a tree's flows at flow level all arrive on SLOT_TFLOW. Wires (wire_send):
 * rings use channel 0 (channel ch across machines), tree t 4t to its parent and 4t + 1 + j to
 * its child j; NVLS-tree's flows to the p-th other GPU of the machine on NVLS_WIRE + p; CollNet's
 * on p (scatter) and P + p (gather), P = MDL_PIPE_MAX_LOCAL - 1, and to the network on 2P. */
/* The most distinct peers a tree member exchanges with: its chain neighbours and, heading at
 * most one pair of trees, a parent and two children in each (a flat tree: 6). */
#define TREE_PEERS (2 + 2 * (1 + 2))
#define NVLS_WIRE  8 /* after the wires of a rail's two trees */
_Static_assert(NVLS_WIRE + MDL_PIPE_MAX_LOCAL - 1 <= SIM_WIRES, "NVLS-tree's wires");
_Static_assert(2 * MDL_PIPE_MAX_LOCAL - 1 <= SIM_WIRES, "CollNet's wires");

enum {
    SLOT_MAIN = 0,
    SLOT_RAIL = 1,
    SLOT_NVLS = 2, /* NVLS-tree's flows through the switch */
    SLOT_CN = 3,   /* CollNet's stages: SLOT_CN + stage */
    SLOT_CHAN = 8, /* ring channel ch: SLOT_CHAN + ch */
    SLOT_TREE = 8 + CPL_MAX_CHANNELS,
    SLOT_TFLOW = SLOT_TREE + 4 * MDL_MAX_TREES
};

struct xfer {
    struct sim_ctx *c;
    int rank, group, stream;
    int dim;      /* the op's dimension (program.h): where its bytes are counted */
    int machines; /* hierarchical algorithms: machines of the group, else 0 */
    const struct mdl_group *g;
    int me;           /* the rank's member index in g */
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

static void count_sent(struct xfer *x, double payload)
{
    x->c->tm->bytes_sent[x->rank] += payload;
    x->c->tm->bytes_dim[(size_t)x->rank * MDL_OP_DIMS + (size_t)x->dim] += payload;
}

static void post_recv(struct xfer *x, int slot)
{
    x->comms[x->ncomms] =
        sg_mailbox_get_async(mailbox(x->c, x->group, x->me, slot), &x->sink[x->ncomms]);
    x->ncomms++;
}

static void post_send(struct xfer *x, int member, int slot, double payload)
{
    long size = (long)llround(payload / x->eff);
    x->comms[x->ncomms++] =
        sg_mailbox_put_async(mailbox(x->c, x->group, member, slot), &token, size);
    count_sent(x, payload);
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
    if (chan >= 0) return cpl_channel_member(&x->c->hier[x->group], chan, k % m);
    return mem ? mem[(k % m) * stride] : k % m;
}

/* Route figures of a ring (sim_ctx.rings; chan >= 0: ring channel chan, whose id that is),
 * computed once per group. */
static const struct cpl_routes *ring_routes(struct xfer *x, const int *mem, int stride, int m,
                                            int chan, int id)
{
    struct cpl_routes *rg = &x->c->rings[x->group][id];
    if (isnan(rg->mean_lat)) {
        double lat = 0, inv = 0;
        *rg = (struct cpl_routes){0};
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
static double ring_time(const struct xfer *x, const struct cpl_routes *rg, int steps, double chunk)
{
    struct mdl_coll_path p = cpl_coll_path(rg, x->hop, x->eff);
    return p.bw_Bps > 0 ? mdl_coll_ring(steps, chunk, &p) : 0;
}

/* The wire's actor (a daemon): sends each queued message at its time, one after another as a
 * connection carries them (first in, first out, not sharing the link among its own messages);
 * the latency is waited out to an absolute time, so it delays each message without spacing the
 * next ones out. SimGrid runs one actor at a time and switches only at a simcall, so the queue
 * needs no lock: the wire's actor holds its mutex for good (only to wait on the condition) and
 * a sender notifies it only while it waits. */
static void wire_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    struct sim_wire *w = sg_actor_self_get_data();
    sg_actor_daemonize(sg_actor_self());
    sg_mutex_lock(w->mtx);
    for (;;) {
        while (w->n == 0) {
            w->waiting = 1;
            sg_cond_wait(w->cond, w->mtx);
        }
        struct sim_wire_req r = w->q[w->head++];
        w->n--;
        if (r.at > simgrid_get_clock()) sg_actor_sleep_until(r.at);
        sg_comm_wait(sg_mailbox_put_async(r.mb, &token, r.size));
    }
}

/* Queues a message of `payload` bytes to member m's mailbox `slot` on the wire of channel ch,
 * leaving `delay` from now. */
static void wire_send(struct xfer *x, int ch, int member, int slot, double payload, double delay)
{
    struct sim_wire **ws = &x->c->wires[x->rank * MDL_MAX_STREAMS + x->stream];
    if (!*ws) {
        *ws = calloc(SIM_WIRES, sizeof **ws);
        xbt_assert(*ws, "out of memory");
    }
    struct sim_wire *w = &(*ws)[ch];
    if (!w->mtx) {
        w->mtx = sg_mutex_init();
        w->cond = sg_cond_init();
        char name[48];
        snprintf(name, sizeof name, "r%d.s%d.c%d.wire", x->rank, x->stream, ch);
        sg_actor_t a = sg_actor_init(name, x->c->hosts[x->rank]);
        sg_actor_set_data(a, w);
        sg_actor_start(a, wire_actor, 0, NULL);
    }
    if (w->n == 0) w->head = 0;
    xbt_assert(!tps_grow(&w->q, &w->cap, w->head + w->n + 1, sizeof *w->q, 64), "out of memory");
    w->q[w->head + w->n++] =
        (struct sim_wire_req){simgrid_get_clock() + delay, mailbox(x->c, x->group, member, slot),
                              (long)llround(payload / x->eff)};
    if (w->waiting) {
        w->waiting = 0;
        sg_cond_notify_one(w->cond);
    }
    count_sent(x, payload);
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
    sg_mailbox_t in = mailbox(x->c, x->group, x->me, slot);
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
 * cpl_channel_member), each of S / channels, on mailbox slots SLOT_CHAN + ch and a wire per
 * channel, its steps as in ring(). */
static void ring_channels(struct xfer *x, int me, int steps, double S)
{
    const struct cpl_layout *h = &x->c->hier[x->group];
    int C = h->channels, n = x->g->n, L = h->local, N = h->nodes;
    double chunk = S / n / C;
    int next[CPL_MAX_CHANNELS];
    for (int j = 0; j < C; j++)
        next[j] = cpl_channel_member(h, j, (cpl_channel_pos(h, j, me) + 1) % n);
    if (flow_level(x, n)) {
        /* own: the longest this rank's flows take, those of the channels with the same next
         * member sharing its route (a member that no channel leaves the machine from sends
         * every channel to its neighbour) */
        double t = 0, own = 0;
        for (int j = 0; j < C; j++) {
            double tj = ring_time(x, ring_routes(x, NULL, 1, n, j, 1 + N + L + j), steps, chunk);
            int same = 0;
            for (int i = 0; i < C; i++)
                same += next[i] == next[j];
            double bw = bw_to(x, next[j]), fj = bw > 0 ? same * steps * chunk / bw : 0;
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
    sg_mailbox_t in[CPL_MAX_CHANNELS];
    sg_comm_t q[CPL_MAX_CHANNELS][2], list[CPL_MAX_CHANNELS];
    void *sink[CPL_MAX_CHANNELS][2];
    double a[CPL_MAX_CHANNELS];
    int posted[CPL_MAX_CHANNELS] = {0}, done[CPL_MAX_CHANNELS] = {0}, map[CPL_MAX_CHANNELS];
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

/* NCCL's all-to-all: one group of a send and a receive per peer, launched together and run at
 * once on its point-to-point channels (each channel carries several peers' operations side by
 * side), so every message leaves after its own route's latency and the messages share the links
 * (the GPU's, its NIC's) as SimGrid shares them. The sends go out in order of latency, each
 * after the sleep to its own. */
static void all_to_all(struct xfer *x, int m, int me, double chunk)
{
    if (m > MDL_DIRECT_MAX_N) { /* the tuner never asks; a forced trace op runs in rounds */
        direct(x, m, me, 1, chunk);
        return;
    }
    int order[MDL_DIRECT_MAX_N];
    double lat[MDL_DIRECT_MAX_N];
    int k = 0;
    for (int j = 1; j < m; j++, k++) { /* insertion by latency, ties in peer order */
        double a = alpha_to(x, (me + j) % m);
        int i = k;
        for (; i > 0 && lat[i - 1] > a; i--) {
            lat[i] = lat[i - 1];
            order[i] = order[i - 1];
        }
        lat[i] = a;
        order[i] = (me + j) % m;
        post_recv(x, SLOT_MAIN);
    }
    double slept = 0; /* lat ascends */
    for (int i = 0; i < k; i++) {
        if (lat[i] > slept) {
            sleep_for(lat[i] - slept);
            slept = lat[i];
        }
        post_send(x, order[i], SLOT_MAIN, chunk);
    }
    finish(x);
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

/* Tree loads (mdl_tree_cost), remembered per (shape, k): every rank asks. */
static void tree_cost(struct sim_ctx *c, const struct mdl_tree_shape *sh, int k,
                      struct mdl_tree_cost *tc)
{
    for (int i = 0; i < c->ntree_memo; i++) {
        const struct sim_tree_memo *m = &c->tree_memo[i];
        if (m->k == k && !memcmp(&m->shape, sh, sizeof *sh)) {
            *tc = m->cost;
            return;
        }
    }
    xbt_assert(!mdl_tree_cost(sh, k, tc), "out of memory");
    if (c->ntree_memo < SIM_TREE_MEMO)
        c->tree_memo[c->ntree_memo++] = (struct sim_tree_memo){*sh, k, *tc};
}

/* The receives of one pipelined stage's flows (NVLS-tree's switch stage, CollNet's stages) on
 * one mailbox: `expect` in all, `per` a chunk, at most MDL_NCCL_STEPS chunks' worth outstanding,
 * whichever sender's comes first (the payloads are never read). */
#define RSET_MAX (MDL_NCCL_STEPS * (MDL_PIPE_MAX_LOCAL - 1))
struct rset {
    sg_mailbox_t mb;
    int per, expect, posted, got, out;
    sg_comm_t q[RSET_MAX];
    void *sink[RSET_MAX];
};

static void rset_init(struct rset *r, sg_mailbox_t mb, int per, int chunks)
{
    r->mb = mb;
    r->per = per;
    r->expect = per * chunks;
    r->posted = r->got = r->out = 0;
}

/* Chunks whose flows have all arrived. */
static int rset_chunks(const struct rset *r)
{
    return r->per ? r->got / r->per : 0;
}

/* Posts what may be outstanding and lists the outstanding receives in list/map (map entries
 * tag + index); returns the new count. */
static int rset_list(struct rset *r, sg_comm_t *list, int *map, int cnt, int tag)
{
    for (; r->posted < r->expect && r->out < MDL_NCCL_STEPS * r->per; r->posted++, r->out++)
        r->q[r->out] = sg_mailbox_get_async(r->mb, &r->sink[r->out]);
    for (int j = 0; j < r->out; j++) {
        list[cnt] = r->q[j];
        map[cnt++] = tag + j;
    }
    return cnt;
}

/* Receive j has arrived: it leaves the set. */
static void rset_arrived(struct rset *r, int j)
{
    r->q[j] = r->q[--r->out];
    r->got++;
}

/* What feeds each chunk of NVLS-tree's trees at a member: its portion of the buffer reduced
 * through the switch (nvls_tree). */
struct nvls_feed {
    int peers;                        /* the machine's other GPUs */
    int peer[MDL_PIPE_MAX_LOCAL - 1]; /* their member indices */
    double alpha[MDL_PIPE_MAX_LOCAL - 1];
    double flow; /* bytes to each per portion */
    double eff;  /* NVLS's delivered fraction */
};

/* The per-step pipeline of tree(): driven by arrivals, chunk i goes up once every child's
 * chunk i has arrived, and down once reduced (root) or received from the parent; a receive is
 * outstanding per connection, at most two chunks ahead. With an NVLS feed nf, chunk i of tree t
 * is this member's own only once portion i T + t has come through the switch: every portion
 * sends nf->flow to each other GPU of the machine, at most MDL_NCCL_STEPS portions ahead of the
 * last one received from all of them, and is through once all of theirs have arrived. Each tree's
 * channel at this member forwards one chunk after another, c / rate each (rate 0: at once), up and
 * down apart: a chunk leaves when the channel is through with it (whole) or as it starts on it, and
 * the route's latency follows on the wire (mdl_tree_time). Queue 4t + j: from child j of tree t; 4t
 * + 3: from its parent. Apart from tree() so that the flow-level path, which every rank of a large
 * group runs, keeps a small stack frame. */
static __attribute__((noinline)) void tree_steps(struct xfer *x, int T, int k, double c,
                                                 double rate, bool whole, const int *mem,
                                                 int stride, int me, const int *parent,
                                                 const int *nch, const int (*ch)[MDL_TREE_ARITY],
                                                 const int *at, const struct nvls_feed *nf)
{
#define M(i) (mem ? mem[(i)*stride] : (i))
    enum { NT = MDL_MAX_TREES, A = MDL_TREE_ARITY };
    enum { NQ = 4 * NT };
    sg_mailbox_t in[NQ];
    sg_comm_t q[NQ][2], list[NQ + RSET_MAX];
    void *sink[NQ][2];
    int expect[NQ] = {0}, posted[NQ] = {0}, got[NQ] = {0}, map[NQ + RSET_MAX];
    /* NVLS portions sent, and the flows of every portion from the machine's other GPUs */
    int R = nf ? nf->peers : 0, nv_sent = 0;
    struct rset nv; /* empty for a plain tree */
    rset_init(&nv, nf ? mailbox(x->c, x->group, x->me, SLOT_NVLS) : NULL, R, T * k);
    int up_sent[NT] = {0}, down_sent[NT] = {0};
    double up_free[NT] = {0}, down_free[NT] = {0};           /* when each channel is done */
    double u = rate > 0 ? c / rate : 0, lag = whole ? u : 0; /* from start to leaving */
    for (int t = 0; t < T; t++) {
        for (int j = 0; j < A; j++) {
            expect[4 * t + j] = j < nch[t] ? k : 0;
            in[4 * t + j] = mailbox(x->c, x->group, M(me), SLOT_TREE + 4 * t + j);
        }
        expect[4 * t + 3] = parent[t] >= 0 ? k : 0;
        in[4 * t + 3] = mailbox(x->c, x->group, M(me), SLOT_TREE + 4 * t + 3);
    }
    for (;;) {
        double now = simgrid_get_clock();
        int through = rset_chunks(&nv); /* portions reduced through the switch */
        for (; nf && nv_sent < T * k && nv_sent < through + MDL_NCCL_STEPS; nv_sent++) {
            double e = x->eff;
            x->eff *= nf->eff;
            for (int p = 0; p < R; p++)
                wire_send(x, NVLS_WIRE + p, nf->peer[p], SLOT_NVLS, nf->flow, nf->alpha[p]);
            x->eff = e;
        }
        for (int t = 0; t < T; t++) {
            int reduced = k; /* chunks whose children's parts have all arrived */
            if (nf)          /* and whose own portion is through */
                reduced = through > t ? (through - 1 - t) / T + 1 : 0;
            for (int j = 0; j < nch[t]; j++)
                if (got[4 * t + j] < reduced) reduced = got[4 * t + j];
            for (; parent[t] >= 0 && up_sent[t] < reduced; up_sent[t]++) {
                double start = up_free[t] > now ? up_free[t] : now;
                up_free[t] = start + u;
                wire_send(x, 4 * t, M(parent[t]), SLOT_TREE + 4 * t + at[t], c,
                          start + lag - now + alpha_to(x, M(parent[t])));
            }
            int down = parent[t] >= 0 ? got[4 * t + 3] : reduced;
            for (; nch[t] && down_sent[t] < down; down_sent[t]++) {
                double start = down_free[t] > now ? down_free[t] : now;
                down_free[t] = start + u;
                for (int j = 0; j < nch[t]; j++)
                    wire_send(x, 4 * t + 1 + j, M(ch[t][j]), SLOT_TREE + 4 * t + 3, c,
                              start + lag - now + alpha_to(x, M(ch[t][j])));
            }
        }
        int cnt = 0;
        for (int i = 0; i < 4 * T; i++) {
            for (; posted[i] < expect[i] && posted[i] - got[i] < 2; posted[i]++)
                q[i][posted[i] & 1] = sg_mailbox_get_async(in[i], &sink[i][posted[i] & 1]);
            if (got[i] < expect[i]) {
                list[cnt] = q[i][got[i] & 1];
                map[cnt++] = i;
            }
        }
        cnt = rset_list(&nv, list, map, cnt, NQ);
        if (!cnt) break;
        int i = map[sg_comm_wait_any(list, (size_t)cnt)];
        if (i < NQ)
            got[i]++;
        else
            rset_arrived(&nv, i - NQ);
    }
#undef M
}

/* Tree all-reduce in shape sh (member of shape position i: mem[i * stride], or i when mem is
 * NULL), this rank at position me: each tree carries 1 / trees of the buffer in k chunks,
 * reduced going up and broadcast coming down in one pipeline, as NCCL's trees run (the root
 * sends chunk j down in the step after it has reduced it). Sends go on wires, one per
 * connection, so a route's latency delays a chunk without spacing the next ones out: the
 * pipeline pays latency per level of the tree, bandwidth per chunk. Each tree's channel
 * forwards at most `rate` bytes/s at every member (0: unlimited, as hierarchical_tree's trees
 * on rails run), passing each chunk on whole or as it starts on it (tree_steps). Each tree
 * carries k chunks, or where k < 1 as many as mdl_tree_chunks gives for the platform's chunk. */
static void tree(struct xfer *x, const struct mdl_tree_shape *sh, const int *mem, int stride,
                 int me, double bytes, int k, double rate, bool whole, const struct nvls_feed *nf)
{
#define M(i) (mem ? mem[(i)*stride] : (i))
    enum { NT = MDL_MAX_TREES, A = MDL_TREE_ARITY };
    int T = sh->trees, H = mdl_tree_top(sh);
    if (k < 1) k = mdl_tree_chunks(bytes / T, x->c->p_nccl->chunk_bytes, H);
    double c = bytes / T / k;
    int parent[NT], nch[NT], ch[NT][A], at[NT];
    for (int t = 0; t < T; t++) {
        nch[t] = mdl_tree_links(sh, t, me, &parent[t], ch[t]);
        at[t] = 0; /* this rank's index among its parent's children */
        if (parent[t] >= 0) {
            int pp, pc[A];
            int pn = mdl_tree_links(sh, t, parent[t], &pp, pc);
            for (int j = 0; j < pn; j++)
                if (pc[j] == me) at[t] = j;
        }
    }
    if (flow_level(x, sh->n)) {
        /* one phase: the closed form's time (mdl_tree_time on this member's routes, per class
         * of link) less the bytes of its busiest class at flow load, then one flow per peer
         * carrying every chunk of every tree it exchanges with that peer */
        struct mdl_tree_cost tc;
        tree_cost(x->c, sh, k, &tc);
        int peer[TREE_PEERS], np = 0;
        double load[TREE_PEERS], pa[TREE_PEERS], pb[TREE_PEERS];
        for (int t = 0; t < T; t++)
            for (int j = -1; j < nch[t]; j++) {
                int q = j < 0 ? parent[t] : ch[t][j];
                if (q < 0) continue;
                int u = 0;
                while (u < np && peer[u] != q)
                    u++;
                if (u == np) { /* a new peer: its route, looked up once */
                    xbt_assert(np < TREE_PEERS, "tree member with more than %d peers", TREE_PEERS);
                    peer[np] = q;
                    pa[np] = alpha_to(x, M(q));
                    pb[np] = bw_to(x, M(q));
                    load[np++] = 0;
                }
                load[u] += k * c;
            }
        /* per class, the worst route of this member's peers */
        struct mdl_coll_path path[2];
        memset(path, 0, sizeof path);
        for (int u = 0; u < np; u++) {
            int cl = mdl_tree_crosses(sh, me, peer[u]);
            if (pa[u] > path[cl].alpha_s) path[cl].alpha_s = pa[u];
            if (pb[u] > 0 && (path[cl].bw_Bps == 0 || pb[u] < path[cl].bw_Bps))
                path[cl].bw_Bps = pb[u];
        }
        for (int cl = 0; cl < 2; cl++)
            if (!(path[cl].bw_Bps > 0)) path[cl] = path[1 - cl];
        /* per peer, its own route on its class (the other class at its worst). The flows start
         * together, so that the longest bulk ends when the longest closed form does: where the
         * peers' routes differ (a flat tree across machines: NVLink and network peers), taking
         * the longest of each peer's time less its own bulk would wait an NVLink peer's time
         * before starting the network peers' long flows */
        double most = 0, bulk = 0;
        for (int u = 0; u < np; u++) {
            if (!(pb[u] > 0)) continue;
            int cl = mdl_tree_crosses(sh, me, peer[u]);
            struct mdl_coll_path p[2] = {path[0], path[1]};
            p[cl].alpha_s = pa[u];
            p[cl].bw_Bps = pb[u];
            double tu = mdl_tree_time(&tc, k, c, &p[0], &p[1], rate, whole);
            double bu = mdl_tree_flow_bulk(&tc, k, c, &p[0], &p[1]);
            if (tu > most) most = tu;
            if (bu > bulk) bulk = bu;
        }
        double lat = most - bulk;
        for (int u = 0; u < np; u++)
            post_recv(x, SLOT_TFLOW);
        sleep_for(lat);
        for (int u = 0; u < np; u++)
            post_send(x, M(peer[u]), SLOT_TFLOW, load[u]);
        finish(x);
        return;
    }
    tree_steps(x, T, k, c, rate, whole, mem, stride, me, parent, nch, ch, at, nf);
#undef M
}

/* NVLS-tree all-reduce of S (collective.h, mdl_coll_time): this member's rail runs the flat
 * double binary tree over the machines on the slice S / L, fed chunk by chunk by NVLS inside its
 * machine. SimGrid cannot reduce or multicast inside a switch, so as in nvls() the switch's work
 * is carried by the load it puts on the links: a portion of L c bytes of the buffer (a chunk c
 * of every GPU's slice) puts c (L + 1) on a GPU's link each way (its reads by the reduction and,
 * paid here too, the multicast of the result), as a flow of c (L + 1) / (L - 1) to every other
 * GPU of the machine. The reduction's latency is the flows'; the last chunk's multicast closes
 * the collective. At flow level the NVLS flows of the whole buffer run beside the trees'. */
static void nvls_tree(struct xfer *x, int me, double S, double nvls_eff)
{
    const struct cpl_layout *h = &x->c->hier[x->group];
    int L = h->local, N = h->nodes, j = h->node_of[me], l = h->local_of[me];
    xbt_assert(L >= 2 && L <= MDL_PIPE_MAX_LOCAL, "NVLS-tree over %d GPUs per machine", L);
    struct nvls_feed nf = {.peers = L - 1, .eff = nvls_eff};
    double alpha = 0;
    for (int p = 0; p < L - 1; p++) {
        nf.peer[p] = h->member[j * L + (l + 1 + p) % L];
        nf.alpha[p] = alpha_to(x, nf.peer[p]);
        if (nf.alpha[p] > alpha) alpha = nf.alpha[p];
    }
    struct mdl_tree_shape sh;
    mdl_tree_shape_flat(&sh, N);
    const struct mdl_nccl *ncl = x->c->p_nccl;
    int H = mdl_tree_top(&sh),
        k = mdl_nvls_tree_chunks(S, L, N, mdl_nccl_nvls_channels(ncl), ncl->nvls_chunk_bytes);
    double c = S / L / sh.trees / k;
    nf.flow = c * (L + 1) / (L - 1);
    /* Step level replays every chunk of every member: in a program of many ranks (a job whose
     * data-parallel groups hold several GPUs of each machine, as on an NVL72 rack) their
     * concurrent groups multiply the flows SimGrid shares at each event, so there auto runs it
     * at flow level (docs/collectives.md, Granularity). */
    int many = x->gran == MDL_GRAN_AUTO && x->c->p->nranks > 4 * ncl->flow_threshold;
    if (!flow_level(x, N) && !many) {
        tree(x, &sh, &h->member[l], L, j, S / L, k, 0, true, &nf);
        sleep_for(alpha); /* the last chunk's multicast */
        return;
    }
    /* Flow level: the switch's flows of every portion at once, and the trees' flows from when
     * the first portion would be through; then, as the closed form's other bound, until the last
     * portion would be through (mdl_coll_time: its bytes or its round trips) and its chunk would
     * have climbed and come down the tree on this member's worst tree route. */
    double t0 = simgrid_get_clock(), bw = 0, ta = 0, tb = 0;
    for (int p = 0; p < L - 1; p++) {
        double b = bw_to(x, nf.peer[p]);
        if (b > 0 && (bw == 0 || b < bw)) bw = b;
    }
    for (int t = 0; t < sh.trees; t++) {
        int parent, ch[MDL_TREE_ARITY], nc = mdl_tree_links(&sh, t, j, &parent, ch);
        for (int q = -1; q < nc; q++) {
            int m = q < 0 ? parent : ch[q];
            if (m < 0) continue;
            double a = alpha_to(x, h->member[m * L + l]), b = bw_to(x, h->member[m * L + l]);
            if (a > ta) ta = a;
            if (b > 0 && (tb == 0 || b < tb)) tb = b;
        }
    }
    int P = sh.trees * k;
    double u = bw > 0 ? c * (L + 1) / (bw * nvls_eff) : 0;
    double through = mdl_nvls_portions(P, u, alpha);
    double tail = 2 * H * (ta + (tb > 0 ? c / tb : 0));
    for (int p = 0; p < L - 1; p++)
        post_recv(x, SLOT_NVLS);
    sleep_for(alpha);
    double e = x->eff;
    x->eff *= nvls_eff;
    for (int p = 0; p < L - 1; p++)
        post_send(x, nf.peer[p], SLOT_NVLS, P * nf.flow);
    x->eff = e;
    sleep_for(u);
    tree(x, &sh, &h->member[l], L, j, S / L, k, 0, true, NULL); /* finishes the flows too */
    sleep_for(t0 + alpha + through + tail - simgrid_get_clock());
    sleep_for(alpha); /* the last chunk's multicast */
}

/* CollNet all-reduce of S (collective.h, mdl_coll_time) at member me: L GPUs per machine on
 * N machines, or L = 1 where every member is in a machine of its own. This GPU's slice S / L goes
 * in k chunks of c through three stages, at most MDL_NCCL_STEPS chunks in flight in each: it
 * sends its part of chunk i of every other GPU's slice to that GPU (stage 0), and once theirs of
 * its own have all arrived, the reduced chunk into the network (stage 1); once the machines' sum
 * of it is back, it sends the sum to every other GPU (stage 2), and is done once theirs have all
 * arrived. SimGrid cannot reduce in a switch, so the network's aggregation is carried by its load:
 * a flow of c from every GPU to its rail's next machine, so that each NIC sends the chunk once and
 * gets the sum once, the switches between neighbours carry one stream each way, and the flow
 * waits the longest route latency of the rail (up to the aggregation's top and down). At flow
 * level every stage's flows of the whole slice run at once (the scatter's and the gather's to a
 * peer as one flow); what the network's and the machine's flows took gives a chunk's time in each
 * stage, and the rank then waits for the closed form on those times. */
static void collnet(struct xfer *x, int me, double S)
{
    enum { W = MDL_NCCL_STEPS, P = MDL_PIPE_MAX_LOCAL - 1 };
    const struct cpl_layout *h = &x->c->hier[x->group];
    int L = h->local ? h->local : 1, N = h->local ? h->nodes : x->g->n;
    int j = h->local ? h->node_of[me] : me, l = h->local ? h->local_of[me] : 0;
    xbt_assert(L <= MDL_PIPE_MAX_LOCAL, "CollNet over %d GPUs per machine", L);
    const int *rail = h->local ? &h->member[l] : NULL;
    int stride = h->local ? L : 1, next = rail ? rail[(j + 1) % N * stride] : (j + 1) % N;
    int peer[P], R = L - 1, k = mdl_collnet_chunks(S / L, x->c->p_nccl->chunk_bytes);
    double c = S / L / k, pa[P], aa = 0;
    for (int p = 0; p < R; p++) {
        peer[p] = h->member[j * L + (l + 1 + p) % L];
        pa[p] = alpha_to(x, peer[p]);
        if (pa[p] > aa) aa = pa[p];
    }
    double ab = ring_routes(x, rail, stride, N, -1, rail ? 1 + N + l : 0)->lat + x->hop;
    if (flow_level(x, N)) {
        /* the stages' flows of the whole slice at once, the network's first; what they take
         * (under whatever else shares their links) sets a chunk's time in each stage */
        double t0 = simgrid_get_clock();
        post_recv(x, SLOT_CN + 1);
        for (int p = 0; p < R; p++) /* the scatter's and the gather's in one flow per peer */
            post_recv(x, SLOT_CN);
        sleep_for(aa);
        double ts = simgrid_get_clock(), tb = ts, ta = ts;
        int first = x->ncomms;
        post_send(x, next, SLOT_CN + 1, S / L);
        for (int p = 0; p < R; p++)
            post_send(x, peer[p], SLOT_CN, 2 * S / L);
        int n = x->ncomms, id[2 * MDL_PIPE_MAX_LOCAL];
        sg_comm_t left[2 * MDL_PIPE_MAX_LOCAL];
        for (int i = 0; i < n; i++) {
            left[i] = x->comms[i];
            id[i] = i;
        }
        for (int m = n; m > 0;) {
            int i = (int)sg_comm_wait_any(left, (size_t)m), who = id[i];
            double now = simgrid_get_clock();
            if (who == 0 || who == first) /* the network's, in or out */
                tb = now;
            else
                ta = now;
            left[i] = left[--m];
            id[i] = id[m];
        }
        x->ncomms = 0;
        double ua = (ta - ts) / (2 * k), ub = (tb - ts) / k;
        sleep_for(t0 + mdl_collnet_pipe(k, aa, ua, ab, ub) - simgrid_get_clock());
        return;
    }
    struct rset in[3];
    for (int st = 0; st < 3; st++)
        rset_init(&in[st], mailbox(x->c, x->group, x->me, SLOT_CN + st), st == 1 ? 1 : R, k);
    sg_comm_t list[3 * RSET_MAX];
    int map[3 * RSET_MAX], sent[3] = {0};
    for (;;) {
        int done[3];
        for (int st = 0; st < 3; st++)
            done[st] = st != 1 && !R ? k : rset_chunks(&in[st]);
        /* stage 0 from the start, stage 1 once scattered, stage 2 once summed */
        int ready[3] = {k, done[0], done[1]};
        for (int st = 0; st < 3; st++)
            for (; (st == 1 || R) && sent[st] < ready[st] && sent[st] < done[st] + W; sent[st]++) {
                if (st == 1) {
                    wire_send(x, 2 * P, next, SLOT_CN + 1, c, ab);
                    continue;
                }
                for (int p = 0; p < R; p++)
                    wire_send(x, st / 2 * P + p, peer[p], SLOT_CN + st, c, pa[p]);
            }
        int cnt = 0;
        for (int st = 0; st < 3; st++)
            cnt = rset_list(&in[st], list, map, cnt, st * RSET_MAX);
        if (!cnt) break;
        int i = map[sg_comm_wait_any(list, (size_t)cnt)];
        rset_arrived(&in[i / RSET_MAX], i % RSET_MAX);
    }
}

/* Hierarchical algorithms a (rings or, for HTREE, trees across machines) */
static void hierarchical(struct xfer *x, enum mdl_coll_algo a, enum mdl_op_kind k, int me, double S)
{
    const struct cpl_layout *h = &x->c->hier[x->group];
    int L = h->local, N = h->nodes, j = h->node_of[me], l = h->local_of[me];
    const int *local = &h->member[j * L], *rail = &h->member[l];
    if (k != MDL_OP_ALL_GATHER) ring(x, local, 1, L, l, SLOT_MAIN, L - 1, S / L, 1 + j);
    int rail_steps = k == MDL_OP_ALL_REDUCE ? 2 * (N - 1) : N - 1;
    if (a == MDL_ALGO_HTREE) {
        struct mdl_tree_shape sh;
        mdl_tree_shape_flat(&sh, N);
        tree(x, &sh, rail, L, j, S / L, 0, 0, true, NULL);
    } else
        ring(x, rail, L, N, j, SLOT_RAIL, rail_steps, S / L / N, 1 + N + l);
    if (k != MDL_OP_REDUCE_SCATTER) ring(x, local, 1, L, l, SLOT_MAIN, L - 1, S / L, 1 + j);
}

/* NCCL's point-to-point path for a send of S from member `from` to member `to`: what its
 * channels take beyond the route's own time (mdl_p2p_time), which delays the message. The
 * group is the communicator: over more than one machine every pair runs on its network-peer
 * channels and chunk, a pair across machines at the network channel rate (mdl_nccl_p2p). */
static double p2p_extra(const struct xfer *x, int from, int to, double S)
{
    double bw = bw_to(x, to);
    if (!(bw > 0)) return 0;
    const struct cpl_layout *h = &x->c->hier[x->group];
    bool spans = h->machines > 1,
         crosses = spans && (!h->node_of || h->node_of[from] != h->node_of[to]);
    struct mdl_p2p pp;
    mdl_nccl_p2p(x->c->p_nccl, spans, crosses, &pp);
    return mdl_p2p_move(S, &pp, crosses, bw) - S / bw;
}

/* A collective of latency granularity (collective.h): the group's simulated members (all but a
 * folded replica's shadows, which mirror theirs) meet, then wait the tuner's closed form of the
 * whole group (op->dur_s); no flows. A member is counted as sending what a ring's does. */
static void latency_only(struct sim_ctx *c, int rank, const struct mdl_op *op, int n)
{
    const struct mdl_group *g = &c->p->groups[op->group];
    if (!c->bars[op->group]) {
        unsigned sim = 0;
        for (int i = 0; i < g->n; i++)
            sim += !(c->p->shadow && c->p->shadow[g->ranks[i]]);
        c->bars[op->group] = sg_barrier_init(sim);
    }
    sg_barrier_wait(c->bars[op->group]);
    sleep_for(op->dur_s);
    double f = op->kind == MDL_OP_ALL_REDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
    struct xfer x = {.c = c, .rank = rank, .dim = op->dim};
    count_sent(&x, f * op->bytes);
}

void sim_replay_run(struct sim_ctx *c, int rank, const struct mdl_op *op)
{
    /* mdl_program_check ran in the pipeline: a bad group here is a bug */
    TPS_ASSERT(op->group >= 0 && op->group < c->p->ngroups);
    int me = sim_pos(c, op->group, rank);
    TPS_ASSERT(me >= 0);
    const struct mdl_group *g = &c->p->groups[op->group];
    int n = g->n;
    if (n <= 1) return;
    if (op->gran == MDL_GRAN_LATENCY) {
        latency_only(c, rank, op, n);
        return;
    }
    enum mdl_op_kind k = (enum mdl_op_kind)op->kind;
    struct xfer x = {.c = c,
                     .rank = rank,
                     .group = op->group,
                     .stream = op->stream,
                     .dim = op->dim,
                     .g = g,
                     .me = me};
    const struct mdl_nccl *nc = c->p_nccl;
    int pr = op->proto ? op->proto : MDL_PROTO_SIMPLE;
    x.hop = nc->hop_s[pr];
    x.eff = nc->eff[pr] > 0 ? nc->eff[pr] : 1;
    x.gran = op->gran;
    if (op->algo == MDL_ALGO_HIER || op->algo == MDL_ALGO_HTREE || op->algo == MDL_ALGO_NVLS_TREE)
        x.machines = c->hier[op->group].nodes;
    if (op->algo == MDL_ALGO_COLLNET)
        x.machines = c->hier[op->group].local ? c->hier[op->group].nodes : n;
    /* at most 2 * CPL_MAX_CHANNELS comms pend at once (a ring in channels; a tree member at flow
     * level: 2 * TREE_PEERS), except in a direct exchange or NVLS (2(n-1)), and NVLS-tree and
     * CollNet at flow level (their trees' or network's, and 2(L-1) inside the machine) */
    enum { FIXED = 2 * CPL_MAX_CHANNELS + 2 * TREE_PEERS };
    sg_comm_t comms[FIXED];
    void *sink[FIXED];
    x.cap = op->algo == MDL_ALGO_DIRECT || op->algo == MDL_ALGO_NVLS ? 2 * n + 8
            : op->algo == MDL_ALGO_NVLS_TREE || op->algo == MDL_ALGO_COLLNET
                ? FIXED + 4 * MDL_PIPE_MAX_LOCAL
                : FIXED;
    x.comms = x.cap > FIXED ? malloc((size_t)x.cap * sizeof *x.comms) : comms;
    x.sink = x.cap > FIXED ? malloc((size_t)x.cap * sizeof *x.sink) : sink;
    xbt_assert(x.comms && x.sink, "out of memory");
    bool p2p = mdl_p2p_kind(k) && op->algo == MDL_ALGO_DIRECT && nc->p2p_base_s > 0;
    sleep_for(p2p ? nc->p2p_base_s : nc->base_s[pr]);
    double S = op->bytes;
    switch (op->algo) {
    case MDL_ALGO_TREE: {
        const struct cpl_layout *h = &c->hier[op->group];
        struct mdl_tree_shape sh;
        const int *mem = cpl_tree_shape(h, n, &sh);
        tree(&x, &sh, mem, 1, mem ? h->node_of[me] * h->local + h->local_of[me] : me, S, 0,
             mdl_nccl_tree_rate(nc, h->machines, pr), pr == MDL_PROTO_SIMPLE, NULL);
        break;
    }
    case MDL_ALGO_HIER:
    case MDL_ALGO_HTREE:
        hierarchical(&x, (enum mdl_coll_algo)op->algo, k, me, S);
        break;
    case MDL_ALGO_NVLS:
        x.eff *= nc->nvls_eff > 0 ? nc->nvls_eff : 1;
        nvls(&x, n, me, S);
        break;
    case MDL_ALGO_NVLS_TREE:
        nvls_tree(&x, me, S, nc->nvls_eff > 0 ? nc->nvls_eff : 1);
        break;
    case MDL_ALGO_COLLNET:
        collnet(&x, me, S);
        break;
    case MDL_ALGO_DIRECT:
        if (k == MDL_OP_SEND_RECV && n > 2) {
            /* a shift (nccl-tests' sendrecv_perf): every member sends to the next and receives
             * from the previous at once, each send on NCCL's point-to-point path as below */
            int next = (me + 1) % n;
            post_recv(&x, SLOT_MAIN);
            sleep_for(alpha_to(&x, next) + (p2p ? p2p_extra(&x, me, next, S) : 0));
            post_send(&x, next, SLOT_MAIN, S);
            finish(&x);
        } else if (k == MDL_OP_SEND_RECV || k == MDL_OP_BROADCAST) {
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
                /* NCCL's point-to-point path: what its channels take beyond the route's own
                 * time for S (mdl_p2p_time) delays the message */
                double extra = p2p ? p2p_extra(&x, root, (root + 1) % n, S) : 0;
                for (int j = 1; j < n; j++) {
                    sleep_for(alpha_to(&x, (root + j) % n) + extra);
                    post_send(&x, (root + j) % n, SLOT_MAIN, S);
                    finish(&x);
                }
            }
        } else if (k == MDL_OP_ALL_TO_ALL) {
            all_to_all(&x, n, me, S / n);
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
