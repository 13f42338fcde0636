/* topo.c - topology storage, adjacency and shortest-path routing (see topo.h).
 * Routes: breadth-first search in hops, GPUs other than the endpoints never transit.
 * Units: bytes/s, seconds. */
#include "topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"

void plat_topo_init(struct plat_topo *t, const char *name)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->machines = 1;
    mdl_nccl_default(&t->nccl);
}

void plat_topo_release(struct plat_topo *t)
{
    free(t->gpu_node);
    free(t->nodes);
    free(t->links);
    free(t->adj_start);
    free(t->adj);
    if (t->scratch) {
        free(t->scratch->stamp);
        free(t->scratch->prev);
        free(t->scratch->queue);
        free(t->scratch->memo);
        free(t->scratch);
    }
    if (t->xml_hosts)
        for (int i = 0; i < t->ngpus; i++)
            free(t->xml_hosts[i]);
    free(t->xml_hosts);
    memset(t, 0, sizeof *t);
}

int plat_topo_node(struct plat_topo *t, const char *name, enum plat_kind kind, int machine,
                   double fwd_Bps)
{
    if (tps_grow(&t->nodes, &t->nodes_cap, t->nnodes + 1, sizeof *t->nodes, 32)) return -1;
    struct plat_node *n = &t->nodes[t->nnodes];
    memset(n, 0, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", name);
    n->kind = kind;
    n->machine = machine;
    n->fwd_Bps = fwd_Bps;
    return t->nnodes++;
}

int plat_topo_link(struct plat_topo *t, const char *name, int a, int b, double bw_Bps, double lat_s,
                   bool shared, enum plat_level level)
{
    if (tps_grow(&t->links, &t->links_cap, t->nlinks + 1, sizeof *t->links, 32)) return -1;
    struct plat_link *l = &t->links[t->nlinks];
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name);
    l->a = a;
    l->b = b;
    l->bw_Bps = bw_Bps;
    l->lat_s = lat_s;
    l->shared = shared;
    l->level = level;
    return t->nlinks++;
}

static int build_adjacency(struct plat_topo *t)
{
    free(t->adj_start);
    free(t->adj);
    t->adj_start = calloc((size_t)t->nnodes + 1, sizeof *t->adj_start);
    t->adj = malloc((size_t)(2 * t->nlinks + 1) * sizeof *t->adj);
    if (!t->adj_start || !t->adj) return -1;
    for (int i = 0; i < t->nlinks; i++) {
        t->adj_start[t->links[i].a + 1]++;
        t->adj_start[t->links[i].b + 1]++;
    }
    for (int n = 0; n < t->nnodes; n++)
        t->adj_start[n + 1] += t->adj_start[n];
    int *fill = calloc((size_t)t->nnodes, sizeof *fill);
    if (!fill) return -1;
    for (int i = 0; i < t->nlinks; i++) {
        int a = t->links[i].a, b = t->links[i].b;
        t->adj[t->adj_start[a] + fill[a]++] = i;
        t->adj[t->adj_start[b] + fill[b]++] = i;
    }
    free(fill);
    return 0;
}

static int scratch_alloc(struct plat_topo *t)
{
    if (!t->scratch && !(t->scratch = calloc(1, sizeof *t->scratch))) return -1;
    struct plat_scratch *sc = t->scratch;
    free(sc->stamp);
    free(sc->prev);
    free(sc->queue);
    free(sc->memo); /* the routes of the graph before */
    sc->memo = NULL;
    size_t n = (size_t)t->nnodes + 1;
    sc->stamp = calloc(n, sizeof *sc->stamp);
    sc->prev = malloc(n * sizeof *sc->prev);
    sc->queue = malloc(n * sizeof *sc->queue);
    sc->gen = 0;
    return sc->stamp && sc->prev && sc->queue ? 0 : -1;
}

/* Hops from GPU node s0 to every node (-1: unreachable), counting links and the forwarding
 * nodes a route crosses; GPUs other than s0 do not forward. queue holds nnodes entries. */
static void route_hops(const struct plat_topo *t, int s0, int *hops, int *queue)
{
    for (int i = 0; i < t->nnodes; i++)
        hops[i] = -1;
    int head = 0, tail = 0;
    hops[s0] = 0;
    queue[tail++] = s0;
    while (head < tail) {
        int u = queue[head++];
        if (u != s0 && t->nodes[u].kind == PLAT_GPU) continue;
        int fwd = u != s0 && t->nodes[u].fwd_Bps > 0;
        for (int e = t->adj_start[u]; e < t->adj_start[u + 1]; e++) {
            const struct plat_link *l = &t->links[t->adj[e]];
            int v = l->a == u ? l->b : l->a;
            if (hops[v] < 0) {
                hops[v] = hops[u] + 1 + fwd;
                queue[tail++] = v;
            }
        }
    }
}

/* Every GPU must be reachable from GPU 0 (links are undirected), and every GPU pair's shortest
 * route must fit in PLAT_MAX_HOPS hops, or the collectives that use it could not be routed. When
 * no GPU is more than PLAT_MAX_HOPS/2 from GPU 0, no pair is more than PLAT_MAX_HOPS apart (a
 * route can pass where GPU 0's would), so one search suffices: that is every preset. Otherwise
 * the lengths are checked from every GPU, unless that would cost more than 1e8 steps. */
static int check_routes(const struct plat_topo *t, struct tps_error *err)
{
    int *hops = malloc((size_t)t->nnodes * sizeof *hops);
    int *queue = malloc((size_t)t->nnodes * sizeof *queue);
    int rc = hops && queue ? TPS_OK : tps_error_oom(err);
    int every = 0;
    for (int g = 0; !rc && g < (every ? t->ngpus : 1); g++) {
        route_hops(t, t->gpu_node[g], hops, queue);
        for (int h = 0; !rc && h < t->ngpus; h++) {
            int d = hops[t->gpu_node[h]];
            if (g == 0 && 2 * d > PLAT_MAX_HOPS)
                every = (double)t->ngpus * (t->nnodes + 2.0 * t->nlinks) <= 1e8;
            if (d < 0)
                rc = tps_error_set(err, TPS_EINVAL, NULL, 0, 0, NULL, "no route between %s and %s",
                                   t->nodes[t->gpu_node[g]].name, t->nodes[t->gpu_node[h]].name);
            else if (d > PLAT_MAX_HOPS)
                rc = tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "links",
                                   "the route from %s to %s crosses %d links and forwarding "
                                   "nodes, more than %d",
                                   t->nodes[t->gpu_node[g]].name, t->nodes[t->gpu_node[h]].name, d,
                                   PLAT_MAX_HOPS);
        }
    }
    free(hops);
    free(queue);
    return rc;
}

int plat_topo_finish(struct plat_topo *t, struct tps_error *err)
{
    if (t->xml_path[0]) return TPS_OK;
    int n = 0;
    for (int i = 0; i < t->nnodes; i++)
        n += t->nodes[i].kind == PLAT_GPU;
    free(t->gpu_node);
    t->gpu_node = malloc((size_t)(n ? n : 1) * sizeof *t->gpu_node);
    if (!t->gpu_node || build_adjacency(t) != 0 || scratch_alloc(t) != 0) return tps_error_oom(err);
    t->ngpus = 0;
    for (int i = 0; i < t->nnodes; i++)
        if (t->nodes[i].kind == PLAT_GPU) t->gpu_node[t->ngpus++] = i;
    if (t->ngpus == 0)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, NULL, "platform has no GPU");
    return check_routes(t, err);
}

/* Breadth-first search from s in the scratch arrays (stamped, so a search costs what it visits).
 * mode ROUTE_ANY: any node may forward except GPUs; stops once d is discovered.
 * mode ROUTE_IN: only nodes of `machine` are entered; stops at d.
 * mode ROUTE_OUT: only nodes of `machine` are expanded; stops at the first network node (machine
 * -1) discovered, returned in *d.
 * mode ROUTE_NET: only network nodes are entered; stops at d.
 * Returns 0 when the target was found. */
enum { ROUTE_ANY, ROUTE_IN, ROUTE_OUT, ROUTE_NET };

static int bfs(const struct plat_topo *t, int s, int *d, int mode, int machine)
{
    struct plat_scratch *sc = t->scratch;
    if (++sc->gen == 0) {
        memset(sc->stamp, 0, (size_t)t->nnodes * sizeof *sc->stamp);
        sc->gen = 1;
    }
    int head = 0, tail = 0;
    sc->stamp[s] = sc->gen;
    sc->prev[s] = -1;
    sc->queue[tail++] = s;
    while (head < tail) {
        int u = sc->queue[head++];
        if (u != s && t->nodes[u].kind == PLAT_GPU) continue; /* GPUs do not forward */
        for (int e = t->adj_start[u]; e < t->adj_start[u + 1]; e++) {
            const struct plat_link *l = &t->links[t->adj[e]];
            int v = l->a == u ? l->b : l->a, m = t->nodes[v].machine;
            if (sc->stamp[v] == sc->gen) continue;
            if ((mode == ROUTE_IN && m != machine) || (mode == ROUTE_NET && m != -1)) continue;
            if (mode == ROUTE_OUT && m != machine && m != -1) continue;
            sc->stamp[v] = sc->gen;
            sc->prev[v] = t->adj[e];
            if (mode == ROUTE_OUT ? m == -1 : v == *d) {
                *d = v;
                return 0;
            }
            if (mode != ROUTE_OUT || m != -1) sc->queue[tail++] = v;
        }
    }
    return -1;
}

/* Appends the hops of the path s -> e found by the last search, in order, to out; forwarding
 * nodes strictly between s and e are included. */
static int walk(const struct plat_topo *t, int s, int e, struct plat_route *out)
{
    const struct plat_scratch *sc = t->scratch;
    struct plat_hop rev[PLAT_MAX_HOPS];
    int n = 0;
    for (int v = e; v != s;) {
        const struct plat_link *l = &t->links[sc->prev[v]];
        int u = l->a == v ? l->b : l->a;
        if (n + 2 > PLAT_MAX_HOPS) return -1;
        rev[n++] = (struct plat_hop){.link = sc->prev[v], .node = -1, .up = (l->a == u)};
        if (u != s && t->nodes[u].fwd_Bps > 0) rev[n++] = (struct plat_hop){.link = -1, .node = u};
        v = u;
    }
    if (out->nhops + n > PLAT_MAX_HOPS) return -1;
    for (int i = n - 1; i >= 0; i--)
        out->hops[out->nhops++] = rev[i];
    return 0;
}

static int add_fwd(const struct plat_topo *t, int node, struct plat_route *out)
{
    if (t->nodes[node].fwd_Bps <= 0) return 0;
    if (out->nhops + 1 > PLAT_MAX_HOPS) return -1;
    out->hops[out->nhops++] = (struct plat_hop){.link = -1, .node = node};
    return 0;
}

/* Route between two machines: up from a to its network entry, across the network, and down to
 * b along the reverse of b's way up. */
static int route_across(const struct plat_topo *t, int s, int d, struct plat_route *out)
{
    int xa = -1, xb = -1;
    if (bfs(t, s, &xa, ROUTE_OUT, t->nodes[s].machine) || walk(t, s, xa, out)) return -1;
    struct plat_route down = {0};
    if (bfs(t, d, &xb, ROUTE_OUT, t->nodes[d].machine) || walk(t, d, xb, &down)) return -1;
    if (add_fwd(t, xa, out)) return -1;
    if (xa != xb) {
        int target = xb;
        if (bfs(t, xa, &target, ROUTE_NET, -1) || walk(t, xa, xb, out) || add_fwd(t, xb, out))
            return -1;
    }
    if (out->nhops + down.nhops > PLAT_MAX_HOPS) return -1;
    for (int i = down.nhops - 1; i >= 0; i--) {
        struct plat_hop h = down.hops[i];
        h.up = !h.up;
        out->hops[out->nhops++] = h;
    }
    return 0;
}

/* The GPU whose NIC a transfer from GPU src to GPU dst of another machine leaves by under
 * NCCL's PXN, or src. */
static int pxn_proxy(const struct plat_topo *t, int src, int dst)
{
    int L = t->rail_local, per = t->rail_gpus_per_nic;
    if (L < 1 || per < 1 || (src % L) / per == (dst % L) / per) return src;
    return src / L * L + (dst % L) / per * per;
}

/* The memo slot of pair (src, dst), or NULL when out of memory. */
static struct plat_route_memo *memo_slot(const struct plat_topo *t, int src, int dst)
{
    struct plat_scratch *sc = t->scratch;
    if (!sc->memo && !(sc->memo = calloc(PLAT_ROUTE_MEMO, sizeof *sc->memo))) return NULL;
    unsigned h = ((unsigned)src * 2654435761u) ^ ((unsigned)dst * 40503u);
    return &sc->memo[(h ^ (h >> 15)) & (PLAT_ROUTE_MEMO - 1)];
}

/* The hops of the route from GPU src to GPU dst (src != dst), searched. */
static int route_search(const struct plat_topo *t, int src, int dst, struct plat_route *out)
{
    int s = t->gpu_node[src], d = t->gpu_node[dst];
    int ms = t->nodes[s].machine, md = t->nodes[d].machine;
    int rc = -1;
    if (t->machines > 1 && ms >= 0 && md >= 0) {
        /* multi-machine fabrics: paths stay inside a machine, or leave it once for the network
         * (linear cost at any scale, where a plain search would scan every NIC of a core) */
        int p = ms == md ? d : t->gpu_node[pxn_proxy(t, src, dst)];
        if (ms == md || p != s) {
            /* inside the machine; or over NVLink into the PXN proxy's memory, which its NIC
             * reads */
            int target = p;
            rc = bfs(t, s, &target, ROUTE_IN, ms) == 0 ? walk(t, s, p, out) : -1;
            if (!rc && ms != md) rc = route_across(t, p, d, out);
        } else {
            rc = route_across(t, s, d, out);
        }
        if (rc) memset(out, 0, sizeof *out);
    }
    if (rc) {
        int target = d;
        rc = bfs(t, s, &target, ROUTE_ANY, 0) == 0 ? walk(t, s, d, out) : -1;
    }
    return rc;
}

int plat_topo_route(const struct plat_topo *t, int src, int dst, struct plat_route *out)
{
    memset(out, 0, sizeof *out);
    if (src == dst) return 0;
    if (!t->scratch) return -1;
    /* the planners ask for the same pairs candidate after candidate: each searched once */
    struct plat_route_memo *m = memo_slot(t, src, dst);
    if (m && m->src == src && m->dst == dst && m->src != m->dst) {
        out->nhops = m->nhops;
        memcpy(out->hops, m->hops, (size_t)m->nhops * sizeof *out->hops);
    } else {
        if (route_search(t, src, dst, out)) {
            memset(out, 0, sizeof *out);
            return -1;
        }
        if (m) {
            m->src = src;
            m->dst = dst;
            m->nhops = out->nhops;
            memcpy(m->hops, out->hops, (size_t)out->nhops * sizeof *out->hops);
        }
    }
    out->lat_s = 0;
    out->bw_Bps = 0;
    for (int i = 0; i < out->nhops; i++) {
        const struct plat_hop *h = &out->hops[i];
        double bw = h->link >= 0 ? t->links[h->link].bw_Bps : t->nodes[h->node].fwd_Bps;
        if (h->link >= 0) out->lat_s += t->links[h->link].lat_s;
        if (out->bw_Bps == 0 || bw < out->bw_Bps) out->bw_Bps = bw;
    }
    return 0;
}

const char *plat_level_name(enum plat_level l)
{
    static const char *n[] = {"nvlink", "pcie", "xsocket", "net"};
    return l <= PLAT_LVL_NET ? n[l] : "?";
}
