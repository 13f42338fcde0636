/* topo.h - plain-data GPU fabric topology: nodes, links, routes and the bandwidth matrix.
 *
 * A topology is a graph of nodes (GPUs, switches, NICs, CPUs/root complexes) joined by links.
 * A full-duplex link has bw_Bps in each direction; a shared link has bw_Bps for both directions
 * together. A node with fwd_Bps > 0 has a finite forwarding capacity shared by all traffic that
 * crosses it (a PCIe root complex, a CPU socket); 0 means a non-blocking crossbar. GPUs never
 * forward traffic. Routes are shortest paths in hops (unique on the trees tpsim builds).
 * Alternatively the topology may stand for a user's SimGrid XML file (xml_path set): then it only
 * knows its GPU host names, and SimGrid resolves the routes. Units: bytes/s, seconds.
 */
#ifndef PLAT_TOPO_H
#define PLAT_TOPO_H

#include <stdbool.h>

#include "common/error.h"
#include "models/collective.h"

enum plat_kind { PLAT_GPU, PLAT_SWITCH, PLAT_NIC, PLAT_CPU };
enum plat_level { PLAT_LVL_NVLINK, PLAT_LVL_PCIE, PLAT_LVL_XSOCKET, PLAT_LVL_NET };

struct plat_node {
    char name[48];  /* unique; GPUs are gpu0..gpuN-1 in GPU order */
    int kind;       /* enum plat_kind */
    int machine;    /* node (server) index the element belongs to, -1 for the network */
    double fwd_Bps; /* forwarding capacity for transit traffic, 0 = unlimited */
};

struct plat_link {
    char name[128]; /* unique */
    int a, b;       /* node indices; direction "up" is a -> b */
    double bw_Bps;  /* per direction (full duplex) or in total (shared) */
    double lat_s;   /* latency */
    bool shared;    /* both directions share bw_Bps */
    int level;      /* enum plat_level, for reports */
};

/* One element of a route: a link in a direction, or a forwarding node (link = -1). */
struct plat_hop {
    int link; /* link index, or -1 for a node's forwarding capacity */
    int node; /* node index when link == -1 */
    bool up;  /* direction a -> b for full-duplex links */
};

#define PLAT_MAX_HOPS 32

struct plat_route {
    int nhops;
    struct plat_hop hops[PLAT_MAX_HOPS];
    double lat_s;  /* sum of link latencies */
    double bw_Bps; /* bottleneck bandwidth of the route alone */
};

/* A GPU pair that exchanges messages, with its route's latency and bandwidth (the tuner lists
 * them; the SimGrid XML gets a route for each). */
struct plat_pair {
    int src, dst;
    double lat_s, bw_Bps;
};

/* Search state reused by every route query (routes are computed on demand). */
/* A route found before: its hops (latency and bandwidth are summed again from the links at each
 * use, so a link changed since stays right). src == dst: an empty slot. */
struct plat_route_memo {
    int src, dst, nhops;
    struct plat_hop hops[PLAT_MAX_HOPS];
};
#define PLAT_ROUTE_MEMO 8192 /* slots, direct-mapped by the pair */

struct plat_scratch {
    unsigned *stamp; /* per node: search generation that reached it */
    int *prev;       /* per node: link it was reached by */
    int *queue;
    unsigned gen;
    struct plat_route_memo *memo; /* PLAT_ROUTE_MEMO slots, allocated on the first route */
};

/* A link slowed for a while (platform.degraded_links with `for`, docs/heterogeneity.md): from
 * from_s on, for for_s, its rate is `ratio` of its own; again every every_s (0: once). */
#define PLAT_MAX_LINK_EVENTS 16
/* A periodic slowdown changes its link twice a period: the work grows with simulated time over
 * the period, which the input does not bound. A simulation stops with an error (located at
 * `every`) past this many periods of one link. */
#define PLAT_MAX_LINK_PERIODS 100000
struct plat_link_event {
    int link;
    double ratio;
    double from_s, for_s, every_s;
    struct tps_error where; /* file, line, column and field of its `every` */
};

struct plat_topo {
    char name[64];  /* preset or file name */
    char desc[256]; /* one-line human description */
    int ngpus;
    int *gpu_node; /* owned: node index of GPU i */
    int nnodes, nodes_cap;
    struct plat_node *nodes; /* owned */
    int nlinks, links_cap;
    struct plat_link *links; /* owned */
    int machines;            /* servers */
    /* NCCL's PXN on a rail-optimised fabric (rail_local > 0): a transfer to another machine's
     * GPU of a different rail first crosses NVLink to the GPU of that rail in its own machine and
     * leaves by that GPU's NIC (rail_local 0: every GPU leaves by its own NIC). GPU g is local
     * g % rail_local of machine g / rail_local; its rail is local / rail_gpus_per_nic. */
    int rail_local, rail_gpus_per_nic;
    struct mdl_nccl nccl; /* collective tuning on this fabric (defaults: mdl_nccl_default) */
    char xml_path[512];   /* user SimGrid XML, "" for generated topologies */
    char **xml_hosts;     /* owned, ngpus host names when xml_path is set */
    int nevents;          /* links slowed for a while, applied by the engine as events */
    struct plat_link_event events[PLAT_MAX_LINK_EVENTS];
    /* adjacency, built by plat_topo_finish() */
    int *adj_start, *adj;         /* owned CSR: links incident to each node */
    struct plat_scratch *scratch; /* owned; makes plat_topo_route() not thread-safe */
};

void plat_topo_init(struct plat_topo *t, const char *name);
void plat_topo_release(struct plat_topo *t);
/* Adds a node / link; return the index or -1 on allocation failure. */
int plat_topo_node(struct plat_topo *t, const char *name, enum plat_kind kind, int machine,
                   double fwd_Bps);
int plat_topo_link(struct plat_topo *t, const char *name, int a, int b, double bw_Bps, double lat_s,
                   bool shared, enum plat_level level);
/* Collects GPUs in node order and builds adjacency; checks that every GPU pair is connected.
 * Call after the last node and link were added. */
int plat_topo_finish(struct plat_topo *t, struct tps_error *err);

/* Route from GPU src to GPU dst (GPU indices). Returns 0, or -1 if unreachable. On fabrics of
 * several machines a route either stays inside one machine or leaves its machine once, crosses
 * network nodes (machine -1) only, and enters the other; it falls back to a plain search.
 * Uses the topology's scratch space: not thread-safe. */
int plat_topo_route(const struct plat_topo *t, int src, int dst, struct plat_route *out);
const char *plat_level_name(enum plat_level l);

#endif
