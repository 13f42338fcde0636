/* collective.h - NCCL-like collective algorithms: names, protocol parameters, tree shapes and
 * closed-form times.
 *
 * Algorithms: ring, double binary tree (all-reduce), direct (pairwise exchange) and hierarchical
 * (inside each machine, then across machines on rails, then inside again). Protocols LL, LL128
 * and Simple differ by a per-collective base latency, a per-step latency and the fraction of the
 * link bandwidth they deliver (LL sends a flag with every 4 data bytes, LL128 one per 120 bytes).
 * The closed forms assume every route of a phase has latency alpha and bandwidth B and that no
 * two transfers share a link except as the algorithm itself loads them; the simulator must match
 * them exactly there (tests/sim/test_replay.c). Units: bytes, seconds, bytes/s.
 */
#ifndef MDL_COLLECTIVE_H
#define MDL_COLLECTIVE_H

#include <stdbool.h>

#include "program.h"

/* NVLS: NVLink SHARP inside one NVSwitch machine (all-reduce only): each GPU reads its slice
 * reduced by the switch from every GPU's buffer and writes it back once, multicast by the switch
 * to all; a GPU's link carries S (1 + 1/n) each way, where a ring's carries 2 S (n-1)/n.
 * HTREE: the hierarchical shape with a double binary tree across machines on each rail (the
 * inter-node structure of NCCL's tree and NVLS-tree algorithms: log2 of the machines in latency
 * steps instead of a ring's 2(N-1)); all-reduce only.
 * NVLS_TREE: NCCL's NVLS-tree across NVSwitch machines with NVLS (all-reduce only): inside each
 * machine NVLS reduces the buffer into one slice per GPU and multicasts the result back; the
 * slices are all-reduced across machines by a double binary tree on each rail (GPU l of every
 * machine), chunk by chunk, so the switch's work and the network's overlap as one pipeline.
 * COLLNET: NCCL's CollNet with in-network reduction (SHARP) in the InfiniBand switches
 * (all-reduce only): each GPU scatters its buffer's slices to the GPUs of its machine, its NIC
 * sends the reduced slice into the network once and gets the machines' sum back once, and it
 * gathers the sum to the others, chunk by chunk in one pipeline */
enum mdl_coll_algo {
    MDL_ALGO_AUTO,
    MDL_ALGO_RING,
    MDL_ALGO_TREE,
    MDL_ALGO_DIRECT,
    MDL_ALGO_HIER,
    MDL_ALGO_HTREE,
    MDL_ALGO_NVLS,
    MDL_ALGO_NVLS_TREE,
    MDL_ALGO_COLLNET
};
enum mdl_coll_proto { MDL_PROTO_AUTO, MDL_PROTO_LL, MDL_PROTO_LL128, MDL_PROTO_SIMPLE };
/* Granularity of a collective's replay (docs/collectives.md, Granularity). MDL_GRAN_LATENCY is
 * set by a lowering, never by a platform or the CLI: a collective of a few bytes whose time is
 * its latency (FP8's amax all-reduces), replayed without flows: its simulated members meet, then
 * wait the tuner's closed-form time of the whole group (a folded replica's shadows, which
 * mirror their replica, neither join nor send). */
enum mdl_coll_gran { MDL_GRAN_AUTO, MDL_GRAN_STEP, MDL_GRAN_FLOW, MDL_GRAN_LATENCY };
#define MDL_ALGO_N       9
#define MDL_PROTO_N      4
#define MDL_MAX_CHUNKS   64 /* pipeline chunks of broadcast chains */
#define MDL_DIRECT_MAX_N 64 /* direct algorithms need a route per pair: small groups only */
#define MDL_MAX_CHANNELS 8  /* ring channels across machines */
/* Chunks of each tree: NCCL's 512 KiB step up to 512 MiB, so that the pipeline's fill (a chunk
 * per level through every channel) stays what NCCL's is. */
#define MDL_MAX_TREE_CHUNKS 1024
/* NVLS-tree's and CollNet's machines: at most this many GPUs each (every GPU exchanges with every
 * other of its machine at once in the replay) */
#define MDL_PIPE_MAX_LOCAL 16
/* Chunks in flight at once on a connection of NVLS-tree's switch stage and CollNet's stages:
 * NCCL's 8 steps per connection */
#define MDL_NCCL_STEPS 8

/* Collective tuning of a platform: what NCCL's tuner and protocols cost there. Per-protocol
 * arrays are indexed by enum mdl_coll_proto (entry 0 unused). */
struct mdl_nccl {
    double base_s[MDL_PROTO_N]; /* launch and synchronisation cost per collective */
    double hop_s[MDL_PROTO_N];  /* per step, added to the route latency */
    double eff[MDL_PROTO_N];    /* delivered fraction of link bandwidth, (0, 1]; 0 disables */
    double chunk_bytes;         /* pipeline chunk of trees and broadcast chains */
    int flow_threshold;         /* phases over more ranks than this run flow-level */
    int channels;               /* most rings a ring runs at once across machines (NCCL's
                                 * channels, one per NIC); 0: up to MDL_MAX_CHANNELS */
    int algo, proto, gran;      /* forced choices, or *_AUTO */
    bool nvls;                  /* NVLink SHARP in the NVSwitch machines (Hopper and later) */
    double nvls_eff;            /* fraction of the ring's link bandwidth NVLS delivers, (0, 1] */
    bool nvls_tree;             /* with nvls, NVLS-tree across machines (default true) */
    bool collnet;               /* the network's switches reduce (SHARP): CollNet across machines */
    /* The most one tree forwards per second in each direction at a member: every tree runs on
     * its own NCCL channel, one thread block that reduces and forwards its chunks going up and
     * copies them on going down. Per machine count of the group: [0] one, [1] two, [2] more
     * (NCCL measures the three apart); 0: unlimited. */
    double tree_rate_Bps[3];
    /* Across machines: the most one channel (one thread block and its network connection)
     * moves per direction, 0: unlimited; and NCCL_MIN_CTAS, the fewest channels (0: NCCL's
     * own, two per NIC). */
    double net_channel_Bps;
    int min_ctas;
    /* Send/receive (NCCL's point-to-point path, not a collective's protocols): its latency per
     * operation (0: the protocol's base_s, as a collective), and its channels: p2p_channels per
     * peer (NCCL's "p2p channels per peer"), each moving at most p2p_channel_Bps (0: no limit)
     * in chunk_bytes steps (mdl_p2p_channels, mdl_p2p_time). */
    double p2p_base_s, p2p_channel_Bps;
    int p2p_channels;
    /* Across machines NCCL gives a peer NCCL_NCHANNELS_PER_NET_PEER channels (default 2), each a
     * network connection (net_channel_Bps), moving NCCL_P2P_NET_CHUNKSIZE chunks (default 128
     * KiB) (mdl_nccl_p2p). */
    int p2p_net_channels;
    double p2p_net_chunk_bytes;
    /* NVLS-tree's chunking (NCCL's NCCL_NVLS_NCHANNELS, raised to min_ctas, and
     * NCCL_NVLS_CHUNKSIZE): its channels, each a pipeline of its own share of every GPU's slice,
     * and the chunk they move (mdl_nvls_tree_chunks). */
    int nvls_channels;
    double nvls_chunk_bytes;
};

void mdl_nccl_default(struct mdl_nccl *n);
/* A tree's channel rate under protocol p on a group over `machines` machines: tree_rate_Bps's
 * bucket times p's efficiency (1 where it is 0, as a forced protocol runs). */
double mdl_nccl_tree_rate(const struct mdl_nccl *n, int machines, enum mdl_coll_proto p);

/* How NCCL moves a send between two peers: its channels per peer, the most one of them moves (0:
 * no limit), the chunk it moves in, and what a channel waits after each chunk before the next
 * (step_s). */
struct mdl_p2p {
    int per_peer;
    double rate_Bps, chunk_bytes, step_s;
};

/* Whether NCCL runs collective k on its point-to-point path (grouped sends and receives):
 * send/recv and all-to-all. On a platform with that path (p2p_base_s > 0) they pay its latency
 * and run Simple. */
bool mdl_p2p_kind(enum mdl_op_kind k);

/* A send's mdl_p2p in a communicator over one machine or more (spans), between a pair on one
 * machine or two (crosses). One machine: p2p_channels at p2p_channel_Bps in chunk_bytes
 * (NCCL_P2P_NVL_CHUNKSIZE's 512 KiB). Over more: NCCL gives a remote peer
 * NCCL_NCHANNELS_PER_NET_PEER channels (p2p_net_channels; src/graph/paths.cc,
 * ncclTopoGetNchannels) and every peer of the communicator the fewest any peer has, to a power of
 * two (ncclTopoComputeP2pChannels), and every send chunks of NCCL_P2P_NET_CHUNKSIZE
 * (p2p_net_chunk_bytes, 128 KiB: src/init.cc); a channel between machines is one thread block and
 * its network connection, which moves at most net_channel_Bps as a collective's channel does
 * (and p2p_channel_Bps, where both are set). p2p_channels 0 (no point-to-point fit) stays 0.
 * Between GPUs of one machine NCCL's P2P transport writes each chunk into the peer's memory and,
 * as its Simple protocol does at every step, fences those writes system-wide before it posts the
 * chunk's step (src/device/prims_simple.h, postPeer: fence_acq_rel_sys), before the channel's
 * next chunk: step_s is the protocol's per-step latency, hop_s[Simple], as a ring step pays it.
 * Across machines the thread block writes into its own memory, whose fence waits on no remote
 * link, and the proxy sends: no step_s. */
void mdl_nccl_p2p(const struct mdl_nccl *n, bool spans, bool crosses, struct mdl_p2p *out);

/* NVLS's channels: nvls_channels, raised to min_ctas as NCCL raises them to NCCL_MIN_CTAS. */
int mdl_nccl_nvls_channels(const struct mdl_nccl *n);

/* The names, NULL-terminated, in enum order. */
extern const char *const mdl_algo_names[];
extern const char *const mdl_proto_names[];
extern const char *const mdl_gran_names[];

const char *mdl_algo_name(enum mdl_coll_algo a);
const char *mdl_proto_name(enum mdl_coll_proto p);
const char *mdl_gran_name(enum mdl_coll_gran g);
int mdl_algo_parse(const char *s, enum mdl_coll_algo *out);
int mdl_proto_parse(const char *s, enum mdl_coll_proto *out);
int mdl_gran_parse(const char *s, enum mdl_coll_gran *out);

/* Whether algorithm `a` implements collective `k` (send_recv: direct only; broadcast: ring
 * chain or direct; all-to-all: direct; trees: all-reduce only). */
bool mdl_coll_supports(enum mdl_op_kind k, enum mdl_coll_algo a);

/* Whether a phase over `members` ranks runs flow-level under granularity g: always with flow,
 * never with step; with auto when the phase has more than `threshold` members, or when its
 * hierarchical collective spans more than `threshold` machines (machines: 0 for the others), since
 * per-step rings inside thousands of machines cost CPU in proportion to the GPUs and, uncontended,
 * give the same time. */
bool mdl_coll_flow_level(enum mdl_coll_gran g, int members, int machines, int threshold);

/* Latency and bandwidth of the routes a phase uses. */
struct mdl_coll_path {
    double alpha_s; /* largest route latency plus the protocol's per-step latency */
    double bw_Bps;  /* route bandwidth times the protocol efficiency */
    /* A ring step waits for its data only, so the path through its steps crosses every route
     * in turn: the mean route latency plus the protocol's per-step latency, and the harmonic
     * mean bandwidth times the efficiency. */
    double ring_alpha_s, ring_bw_Bps;
};

/* What the closed forms need to know about a group on a platform. */
struct mdl_coll_env {
    int n;                    /* ranks */
    int local, nodes;         /* hierarchical: local * nodes == n with nodes >= 2, else 0 */
    int machines;             /* distinct machines of the members */
    struct mdl_coll_path all; /* ring neighbour (flat) routes */
    struct mdl_coll_path intra, inter; /* inside a machine; between machines on a rail */
    int channels;                      /* rings a ring runs at once across machines (>= 1) */
    struct mdl_coll_path chan;         /* their routes, when channels >= 2 */
    int pairs;                         /* tree pairs across machines (one per NIC channel) */
    struct mdl_coll_path heads;        /* routes between machines' tree heads, all at once */
    double base_s;                     /* per-collective latency */
    int nvls;                          /* the group may run NVLS (one NVSwitch machine) */
    int nvls_tree;                     /* ... or NVLS-tree (local GPUs in each of nodes NVLS
                                        * machines) */
    int collnet;                       /* ... or CollNet (local GPUs in each of nodes machines,
                                        * or one in each of n) */
    double nvls_eff;                   /* its delivered fraction of the path's bandwidth */
    double chunk_bytes;                /* pipeline chunk */
    int nvls_channels;                 /* NVLS-tree's channels and chunk (mdl_nccl) */
    double nvls_chunk_bytes;
    double tree_rate_Bps; /* a tree channel's rate under the protocol
                           * (mdl_nccl_tree_rate); 0: none */
    bool tree_whole;      /* a chunk passes a channel whole (Simple) */
    double p2p_base_s;    /* send/receive (mdl_nccl, mdl_nccl_p2p) */
    struct mdl_p2p p2p;
};

/* The channels NCCL splits a send of `bytes` over (enqueue.cc, calcP2pChunkSize, for a pair):
 * half the channels per peer, doubled (up to all of them) while a channel's share would exceed
 * the largest piece, 32 chunks inside a machine and one chunk across machines. */
int mdl_p2p_channels(int per_peer, double bytes, double chunk_bytes, bool across);

/* The time a send of S spends moving, on a route of bandwidth bw split over `channels` channels
 * of at most `rate` each (0: no limit): the route's time, or a channel's: its first chunk
 * through both copies of NCCL's pipeline (the sender's into the transport's buffer, the
 * receiver's out of it), then the rest of its share, and step_s after each of its chunks. */
double mdl_p2p_time(double S, int channels, double chunk_bytes, double bw, double rate,
                    double step_s);

/* mdl_p2p_time of p over the channels mdl_p2p_channels gives a send of S: what the closed form
 * and the replay both charge. */
double mdl_p2p_move(double S, const struct mdl_p2p *p, bool across, double bw);

/* Pipeline chunks for `bytes`: ceil(bytes / chunk) clamped to 1..MDL_MAX_CHUNKS. */
int mdl_coll_chunks(double bytes, double chunk_bytes);

/* Pipeline chunks of a tree of the given height carrying `bytes`: as NCCL does for its trees,
 * the chunk (from chunk_bytes) halves while the tree would get fewer than 8 chunks per level
 * (down to 128 KiB), 4 per level (64 KiB), 1 per level (32 KiB); then ceil(bytes / chunk)
 * clamped to 1..MDL_MAX_TREE_CHUNKS. */
int mdl_tree_chunks(double bytes, double chunk_bytes, int height);

/* Chunks of each tree of NVLS-tree's all-reduce of S over N machines of L GPUs: NCCL (enqueue.cc,
 * calcCollChunking) runs `channels` pipelines, half on each tree, each carrying its share of a
 * GPU's slice in chunks of NCCL_NVLS_CHUNKSIZE (at most 64 KiB from 4 machines,
 * NCCL_NVLSTREE_MAX_CHUNKSIZE's default), halved to 256, 128, 64 and 32 KiB while S is under 32,
 * 16, 4 and 1 times channels x L chunks. A tree's pipeline here moves its channels' chunks
 * together, at the rail's rate: as many chunks as one channel's, clamped to 1..MDL_MAX_TREE_CHUNKS.
 */
int mdl_nvls_tree_chunks(double S, int L, int N, int channels, double chunk_bytes);

/* Chunks of each GPU's slice of `bytes` in CollNet: ceil(bytes / chunk) clamped to
 * 1..MDL_MAX_TREE_CHUNKS. */
int mdl_collnet_chunks(double bytes, double chunk_bytes);

/* NVLS-tree's switch stage: when the last of P portions is through, each taking u on the links
 * and a round trip of alpha + u, at most MDL_NCCL_STEPS in flight: after all their bytes, or,
 * where a round trip outlasts MDL_NCCL_STEPS portions' bytes, a round trip per MDL_NCCL_STEPS. */
double mdl_nvls_portions(int P, double u, double alpha);

/* CollNet's pipeline of k chunks, base latency aside: the scatter and the gather inside the
 * machine (ua a chunk each on a GPU's link, latency aa; both 0 with one GPU per machine) and the
 * network (ub, ab). The first chunk passes every stage; then a chunk per step, the scatter and
 * the gather sharing the link, no stage faster than its round trip per MDL_NCCL_STEPS chunks. */
double mdl_collnet_pipe(int k, double aa, double ua, double ab, double ub);

/* The shape of a tree all-reduce. A flat double binary tree over n members (local 1, 2
 * trees: NCCL's, tree 0 its binary tree over members 0..n-1, whose root 0 has one child and
 * whose inner members have a parent and two children, tree 1 the same over the members mirrored
 * (n even) or shifted by one (n odd), so that tree 1's inner members are tree 0's leaves), or
 * NCCL's tree across machines (local >= 2 members per machine, member i on machine i / local at
 * local index i % local): in every machine a chain through its members, between machines that
 * double binary tree over the machines joining the chains' first members (the heads), as NCCL's
 * trees run (NCCL_TOPO_PATTERN_TREE: all of a machine's network traffic of a tree on its head).
 * Trees come in pairs, one per NIC channel: tree 2p over the machines as tree 0, tree 2p+1 as
 * tree 1, and both enter every machine at local index p * local / pairs and chain on through
 * local + 1, local + 2, ... (mod local). Each tree carries 1 / trees of the buffer. */
struct mdl_tree_shape {
    int n;     /* members */
    int local; /* members per machine (>= 2: NCCL's tree), or 1 (flat) */
    int trees; /* 2, or twice the pairs */
};
#define MDL_MAX_TREES  (2 * MDL_MAX_CHANNELS)
#define MDL_TREE_ARITY 3 /* the next member of the chain and two child machines' heads */
void mdl_tree_shape_flat(struct mdl_tree_shape *s, int n);
/* -1 unless 1 <= pairs <= local and pairs <= MDL_MAX_TREES / 2. */
int mdl_tree_shape_machines(struct mdl_tree_shape *s, int nodes, int local, int pairs);
/* Local index at which tree t enters every machine. */
int mdl_tree_head(const struct mdl_tree_shape *s, int t);
/* Parent of member i in tree t (-1 at the root) and its children (returns how many, 0..3:
 * the chain's next member first, then child machines' heads). */
int mdl_tree_links(const struct mdl_tree_shape *s, int t, int i, int *parent,
                   int children[MDL_TREE_ARITY]);
/* Height of member i in tree t (0 for leaves), its depth (0 at the root), and the trees'
 * height H (all trees of a shape have the same). */
int mdl_tree_height(const struct mdl_tree_shape *s, int t, int i);
int mdl_tree_depth(const struct mdl_tree_shape *s, int t, int i);
int mdl_tree_top(const struct mdl_tree_shape *s);
/* The class of the link between members i and j: 1 when it crosses machines (every link of a
 * flat tree), 0 along a chain inside one. */
int mdl_tree_crosses(const struct mdl_tree_shape *s, int i, int j);
/* Loads of a tree all-reduce with k chunks per tree, reduced going up and broadcast coming
 * down in one pipeline (chunk j leaves member i for its parent at step j + height(i), for its
 * children at step j + H + depth(i); k + 2H - 1 steps), per class of link: [0] along the
 * chains inside machines, [1] the tree links (between machines; every link of a flat tree):
 * sum: for each step, the most transfers one member sends or receives in it on that class,
 * summed over the steps (the per-step cost is sum * chunk / B); flow: the most one member sends
 * or receives in all (the flow-level cost of the bytes); levels: the chain and tree levels on
 * the path from a leaf to the root. */
struct mdl_tree_cost {
    int sum[2], flow[2], levels[2];
};
int mdl_tree_cost(const struct mdl_tree_shape *s, int k, struct mdl_tree_cost *out);
/* The pipelined trees' time for chunks of c bytes (k per tree) on the chain and tree-link
 * paths, with each tree's channel forwarding at most `rate` bytes/s (0: unlimited): a member's
 * channel takes c / rate for each chunk it sends on (going up, every member but the root; going
 * down, the root and every member with children), one chunk after another. With `whole`
 * (Simple, whose steps are flagged whole), a chunk leaves once its channel is through with it;
 * else (LL, LL128: a flag per line) it leaves as the channel starts on it. The longer of the
 * last chunk's path over every level up and down and the busiest member's steps after its first
 * latencies (on the busier class). */
double mdl_tree_time(const struct mdl_tree_cost *tc, int k, double c,
                     const struct mdl_coll_path *chain, const struct mdl_coll_path *tree,
                     double rate, bool whole);
/* Bytes time of a member's flows at flow level: its busiest class's flows, one per connection
 * carrying its k chunks. */
double mdl_tree_flow_bulk(const struct mdl_tree_cost *tc, int k, double c,
                          const struct mdl_coll_path *chain, const struct mdl_coll_path *tree);

/* Closed-form time of collective k of `bytes` (full buffer, as in struct mdl_op) with
 * algorithm a; -1 when a does not implement k or the group does not suit it. */
double mdl_coll_time(enum mdl_op_kind k, enum mdl_coll_algo a, double bytes,
                     const struct mdl_coll_env *e);

/* A ring of `steps` rounds of `chunk` bytes on path p: the longer of its critical path through
 * every route in turn and the rounds its slowest route carries one after another (plus that
 * route's latency once: the others hide behind the queue there). The two agree when all routes
 * are alike. */
double mdl_coll_ring(int steps, double chunk, const struct mdl_coll_path *p);

/* Bus bandwidth factor of nccl-tests: busbw = algbw * factor. */
double mdl_coll_busbw_factor(enum mdl_op_kind k, int n);

#endif
