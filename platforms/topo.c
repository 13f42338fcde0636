/* topo.c - topology storage, adjacency and shortest-path routing (see topo.h).
 * Routes: breadth-first search in hops, GPUs other than the endpoints never transit.
 * Units: bytes/s, seconds. */
#include "topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void plat_topo_init(struct plat_topo *t, const char *name)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->machines = 1;
}

void plat_topo_release(struct plat_topo *t)
{
    free(t->gpu_node);
    free(t->nodes);
    free(t->links);
    free(t->adj_start);
    free(t->adj);
    if (t->xml_hosts)
        for (int i = 0; i < t->ngpus; i++)
            free(t->xml_hosts[i]);
    free(t->xml_hosts);
    memset(t, 0, sizeof *t);
}

int plat_topo_node(struct plat_topo *t, const char *name, enum plat_kind kind, int machine,
                   double fwd_Bps)
{
    if (t->nnodes == t->nodes_cap) {
        int cap = t->nodes_cap ? 2 * t->nodes_cap : 32;
        struct plat_node *n = realloc(t->nodes, (size_t)cap * sizeof *n);
        if (!n) return -1;
        t->nodes = n;
        t->nodes_cap = cap;
    }
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
    if (t->nlinks == t->links_cap) {
        int cap = t->links_cap ? 2 * t->links_cap : 32;
        struct plat_link *l = realloc(t->links, (size_t)cap * sizeof *l);
        if (!l) return -1;
        t->links = l;
        t->links_cap = cap;
    }
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

int plat_topo_finish(struct plat_topo *t, struct tps_error *err)
{
    if (t->xml_path[0]) return TPS_OK;
    int n = 0;
    for (int i = 0; i < t->nnodes; i++)
        n += t->nodes[i].kind == PLAT_GPU;
    free(t->gpu_node);
    t->gpu_node = malloc((size_t)(n ? n : 1) * sizeof *t->gpu_node);
    if (!t->gpu_node || build_adjacency(t) != 0)
        return tps_error_set(err, TPS_ENOMEM, NULL, 0, 0, NULL, "out of memory");
    t->ngpus = 0;
    for (int i = 0; i < t->nnodes; i++)
        if (t->nodes[i].kind == PLAT_GPU) t->gpu_node[t->ngpus++] = i;
    if (t->ngpus == 0)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, NULL, "platform has no GPU");
    /* every GPU must reach GPU 0 and GPU 0 every GPU */
    struct plat_route r;
    for (int g = 1; g < t->ngpus; g++) {
        if (plat_topo_route(t, 0, g, &r) != 0 || plat_topo_route(t, g, 0, &r) != 0)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, NULL, "no route between %s and %s",
                                 t->nodes[t->gpu_node[0]].name, t->nodes[t->gpu_node[g]].name);
    }
    return TPS_OK;
}

int plat_topo_route(const struct plat_topo *t, int src, int dst, struct plat_route *out)
{
    memset(out, 0, sizeof *out);
    if (src == dst) return 0;
    int s = t->gpu_node[src], d = t->gpu_node[dst];
    int *prev_link = malloc((size_t)t->nnodes * sizeof *prev_link);
    int *queue = malloc((size_t)t->nnodes * sizeof *queue);
    if (!prev_link || !queue) {
        free(prev_link);
        free(queue);
        return -1;
    }
    for (int i = 0; i < t->nnodes; i++)
        prev_link[i] = -2;
    prev_link[s] = -1;
    int head = 0, tail = 0;
    queue[tail++] = s;
    while (head < tail && prev_link[d] == -2) {
        int u = queue[head++];
        if (u != s && t->nodes[u].kind == PLAT_GPU) continue; /* GPUs do not forward */
        for (int e = t->adj_start[u]; e < t->adj_start[u + 1]; e++) {
            const struct plat_link *l = &t->links[t->adj[e]];
            int v = l->a == u ? l->b : l->a;
            if (prev_link[v] != -2) continue;
            prev_link[v] = t->adj[e];
            queue[tail++] = v;
        }
    }
    int rc = -1;
    if (prev_link[d] != -2) {
        /* walk back from d, collecting hops in reverse */
        struct plat_hop rev[PLAT_MAX_HOPS];
        int n = 0, v = d;
        rc = 0;
        while (v != s) {
            const struct plat_link *l = &t->links[prev_link[v]];
            int u = l->a == v ? l->b : l->a;
            if (n + 2 > PLAT_MAX_HOPS) {
                rc = -1;
                break;
            }
            rev[n++] = (struct plat_hop){.link = prev_link[v], .node = -1, .up = (l->a == u)};
            if (u != s && t->nodes[u].fwd_Bps > 0)
                rev[n++] = (struct plat_hop){.link = -1, .node = u};
            v = u;
        }
        out->bw_Bps = 0;
        for (int i = 0; rc == 0 && i < n; i++) {
            struct plat_hop h = rev[n - 1 - i];
            out->hops[out->nhops++] = h;
            double bw = h.link >= 0 ? t->links[h.link].bw_Bps : t->nodes[h.node].fwd_Bps;
            if (h.link >= 0) out->lat_s += t->links[h.link].lat_s;
            if (out->bw_Bps == 0 || bw < out->bw_Bps) out->bw_Bps = bw;
        }
    }
    free(prev_link);
    free(queue);
    return rc;
}

const char *plat_level_name(enum plat_level l)
{
    static const char *n[] = {"nvlink", "pcie", "xsocket", "net"};
    return l <= PLAT_LVL_NET ? n[l] : "?";
}
