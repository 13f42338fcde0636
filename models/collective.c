/* collective.c - collective algorithm names, tree shapes and closed forms (see collective.h).
 *
 * Per-step schedules, which sim/replay.c replays message by message:
 *   ring all-reduce       2(m-1) steps of S/m to the next member; across machines with c NICs
 *                         each, c rings (NCCL's channels) of S/c at once, each crossing
 *                         between machines on NICs of its own
 *   ring all-gather/RS    m-1 steps of S/m
 *   direct                the same step counts, step j sends to member i+j and receives from i-j
 *   broadcast chain       k+m-2 steps of S/k along root -> root+1 -> ... (k pipeline chunks);
 *                         reduce: the same chain the other way, ending at the root (each
 *                         member adds its own chunk before passing it on)
 *   trees                 reduced up and broadcast down in one pipeline of k chunks per tree
 *                         (k+2H-1 steps, H = tree height): a double binary tree over the
 *                         members carrying S/2 each, or NCCL's tree across machines (chains in
 *                         the machines, double binary trees between their heads, a pair of
 *                         trees per NIC channel carrying S/2P each; mdl_tree_shape)
 *   hierarchical          ring inside each machine, ring across machines on each rail of S/L,
 *                         ring inside again (all-reduce: RS, AR, AG; all-gather: AG rail then
 *                         local; reduce-scatter: RS local then rail)
 * A step costs alpha + (bytes on the most loaded link of the step) / B. A ring step waits for
 * its data only, not for its neighbours' other transfers, so a ring pays its routes' mean
 * latency and bandwidth (ring_alpha_s, ring_bw_Bps) or, when one route is much slower, the
 * queue of rounds on it; the other schedules wait for every message of a step and pay the
 * largest latency (alpha_s). Units: bytes, seconds.
 */
#include "collective.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const mdl_algo_names[MDL_ALGO_N + 1] = {
    "auto", "ring",      "tree",    "direct", "hierarchical", "hierarchical_tree",
    "nvls", "nvls_tree", "collnet", NULL};
const char *const mdl_proto_names[MDL_PROTO_N + 1] = {"auto", "LL", "LL128", "Simple", NULL};
const char *const mdl_gran_names[4] = {"auto", "step", "flow", NULL};

void mdl_nccl_default(struct mdl_nccl *n)
{
    /* Defaults of the same order as NCCL's tuner on NVLink-class fabrics; calibrate them with
     * `tpsim calibrate` (docs/collectives.md). Efficiencies follow the wire formats: LL carries
     * 4 data bytes per 8, LL128 120 per 128. */
    memset(n, 0, sizeof *n);
    const double base[MDL_PROTO_N] = {0, 5e-6, 8e-6, 10e-6};
    const double hop[MDL_PROTO_N] = {0, 0.5e-6, 1e-6, 2e-6};
    const double eff[MDL_PROTO_N] = {0, 0.5, 120.0 / 128.0, 1.0};
    memcpy(n->base_s, base, sizeof base);
    memcpy(n->hop_s, hop, sizeof hop);
    memcpy(n->eff, eff, sizeof eff);
    n->chunk_bytes = 512 << 10; /* NCCL's Simple step: its 4 MiB buffer in 8 slots */
    n->flow_threshold = 32;
    n->nvls_eff = 1;
    n->nvls_tree = true;
    n->nvls_channels = 16;              /* NCCL's NVLS_NCHANNELS_SM90 (src/transport/nvls.cc) */
    n->nvls_chunk_bytes = 128 << 10;    /* NCCL_NVLS_CHUNKSIZE's default */
    n->p2p_net_channels = 2;            /* NCCL_NCHANNELS_PER_NET_PEER's default */
    n->p2p_net_chunk_bytes = 128 << 10; /* NCCL_P2P_NET_CHUNKSIZE's default */
    /* NCCL's per-channel tree bus bandwidth on Ampere (its tuning model, src/graph/tuning.cc:
     * 24.0, 23.6 and 17.8 GB/s over one, two and more machines) is a pair of trees (two
     * channels) at half their bus bandwidth in buffer bytes: a quarter each */
    const double ampere[3] = {24.0e9 / 4, 23.6e9 / 4, 17.8e9 / 4};
    memcpy(n->tree_rate_Bps, ampere, sizeof ampere);
}

double mdl_nccl_tree_rate(const struct mdl_nccl *n, int machines, enum mdl_coll_proto p)
{
    double eff = n->eff[p] > 0 ? n->eff[p] : 1;
    return n->tree_rate_Bps[machines <= 1 ? 0 : machines == 2 ? 1 : 2] * eff;
}

bool mdl_p2p_kind(enum mdl_op_kind k)
{
    return k == MDL_OP_SEND_RECV || k == MDL_OP_ALL_TO_ALL;
}

void mdl_nccl_p2p(const struct mdl_nccl *n, bool spans, bool crosses, struct mdl_p2p *out)
{
    out->per_peer = n->p2p_channels;
    out->rate_Bps = n->p2p_channel_Bps;
    out->chunk_bytes = n->chunk_bytes;
    out->step_s = crosses ? 0 : n->hop_s[MDL_PROTO_SIMPLE];
    if (!spans || n->p2p_channels < 1) return;
    int c = n->p2p_net_channels > 0 && n->p2p_net_channels < n->p2p_channels ? n->p2p_net_channels
                                                                             : n->p2p_channels;
    int pow2 = 1;
    while (pow2 < c)
        pow2 *= 2;
    out->per_peer = pow2;
    if (n->p2p_net_chunk_bytes > 0) out->chunk_bytes = n->p2p_net_chunk_bytes;
    double net = n->net_channel_Bps;
    if (crosses && net > 0 && (!(out->rate_Bps > 0) || net < out->rate_Bps)) out->rate_Bps = net;
}

int mdl_nccl_nvls_channels(const struct mdl_nccl *n)
{
    return n->nvls_channels > n->min_ctas ? n->nvls_channels : n->min_ctas;
}

static int parse_name(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

const char *mdl_algo_name(enum mdl_coll_algo a)
{
    return (unsigned)a < MDL_ALGO_N ? mdl_algo_names[a] : "?";
}
const char *mdl_proto_name(enum mdl_coll_proto p)
{
    return (unsigned)p < MDL_PROTO_N ? mdl_proto_names[p] : "?";
}
const char *mdl_gran_name(enum mdl_coll_gran g)
{
    return (unsigned)g < 3 ? mdl_gran_names[g] : g == MDL_GRAN_LATENCY ? "latency" : "?";
}
int mdl_algo_parse(const char *s, enum mdl_coll_algo *out)
{
    int i = parse_name(s, mdl_algo_names, MDL_ALGO_N);
    if (i < 0) return -1;
    *out = (enum mdl_coll_algo)i;
    return 0;
}
int mdl_proto_parse(const char *s, enum mdl_coll_proto *out)
{
    int i = parse_name(s, mdl_proto_names, MDL_PROTO_N);
    if (i < 0) return -1;
    *out = (enum mdl_coll_proto)i;
    return 0;
}
int mdl_gran_parse(const char *s, enum mdl_coll_gran *out)
{
    int i = parse_name(s, mdl_gran_names, 3);
    if (i < 0) return -1;
    *out = (enum mdl_coll_gran)i;
    return 0;
}

bool mdl_coll_supports(enum mdl_op_kind k, enum mdl_coll_algo a)
{
    switch (k) {
    case MDL_OP_ALL_REDUCE:
        return a != MDL_ALGO_AUTO;
    case MDL_OP_ALL_GATHER:
    case MDL_OP_REDUCE_SCATTER:
        return a == MDL_ALGO_RING || a == MDL_ALGO_DIRECT || a == MDL_ALGO_HIER;
    case MDL_OP_BROADCAST:
        return a == MDL_ALGO_RING || a == MDL_ALGO_DIRECT;
    case MDL_OP_REDUCE: /* NCCL's reduce is a ring algorithm only */
        return a == MDL_ALGO_RING;
    case MDL_OP_ALL_TO_ALL:
    case MDL_OP_SEND_RECV:
        return a == MDL_ALGO_DIRECT;
    default:
        return false;
    }
}

bool mdl_coll_flow_level(enum mdl_coll_gran g, int members, int machines, int threshold)
{
    return g == MDL_GRAN_FLOW ||
           (g != MDL_GRAN_STEP && (members > threshold || machines > threshold));
}

/* ceil(bytes / chunk_bytes) clamped to 1..most. */
static int chunks_of(double bytes, double chunk_bytes, int most)
{
    if (!(chunk_bytes > 0)) return 1;
    double k = ceil(bytes / chunk_bytes);
    return k < 1 ? 1 : k > most ? most : (int)k;
}

int mdl_p2p_channels(int per_peer, double bytes, double chunk_bytes, bool across)
{
    if (per_peer < 2) return 1;
    int n = per_peer / 2;
    double most = across ? chunk_bytes : 32 * chunk_bytes;
    while (bytes / n > most && n <= per_peer / 2)
        n *= 2;
    return n;
}

double mdl_p2p_time(double S, int channels, double chunk_bytes, double bw, double rate,
                    double step_s)
{
    double t = S / bw;
    if (!(rate > 0) || channels < 1) return t;
    double share = S / channels, first = share < chunk_bytes ? share : chunk_bytes;
    double ch = (first + share) / rate + chunks_of(share, chunk_bytes, INT_MAX) * step_s;
    return ch > t ? ch : t;
}

double mdl_p2p_move(double S, const struct mdl_p2p *p, bool across, double bw)
{
    int ch = mdl_p2p_channels(p->per_peer, S, p->chunk_bytes, across);
    return mdl_p2p_time(S, ch, p->chunk_bytes, bw, p->rate_Bps, p->step_s);
}

int mdl_coll_chunks(double bytes, double chunk_bytes)
{
    return chunks_of(bytes, chunk_bytes, MDL_MAX_CHUNKS);
}

int mdl_tree_chunks(double bytes, double chunk_bytes, int height)
{
    const double floor_bytes[3] = {128 << 10, 64 << 10, 32 << 10};
    const int per_level[3] = {8, 4, 1};
    double c = chunk_bytes, d = height > 1 ? height : 1;
    for (int i = 0; i < 3 && c > 0; i++)
        while (bytes / c < per_level[i] * d && c > floor_bytes[i])
            c /= 2;
    return chunks_of(bytes, c, MDL_MAX_TREE_CHUNKS);
}

int mdl_nvls_tree_chunks(double S, int L, int N, int channels, double chunk_bytes)
{
    const double step[4] = {256 << 10, 128 << 10, 64 << 10, 32 << 10};
    const int times[4] = {32, 16, 4, 1};
    double c = chunk_bytes > 0 ? chunk_bytes : 128 << 10;
    if (N >= 4 && c > 64 << 10) c = 64 << 10;
    int ch = channels > 0 ? channels : 1;
    double ops = (double)ch * (L > 0 ? L : 1);
    for (int i = 0; i < 4; i++)
        if (S < times[i] * ops * c && c > step[i]) c = step[i];
    return chunks_of(S / (ops * c), 1, MDL_MAX_TREE_CHUNKS);
}

/* NCCL's double binary tree over N members (src/graph/trees.cc: ncclGetBtree, ncclGetDtree).
 * Tree 0 (kind 0) is NCCL's binary tree over positions 0..N-1: position p, its lowest set bit
 * b, has the parent (p ^ b) | 2b, or p ^ b where that is N or more, and the children p - b/2
 * and the first of p + b/2, p + b/4, ..., p + 1 below N; the root 0 has a single child, the
 * power of two just below N. A member's position in tree 1 (kind 1) is its mirror N-1-v when N
 * is even and its shift v-1 (mod N) when N is odd, so that tree 1's inner members are tree 0's
 * leaves (with odd N, member 0 is inner in both). Position of member v in tree `kind`, and
 * back. */
static int bt_pos(int N, int kind, int v)
{
    if (kind == 0) return v;
    return N % 2 ? (v - 1 + N) % N : N - 1 - v;
}

static int bt_member(int N, int kind, int p)
{
    if (kind == 0) return p;
    return N % 2 ? (p + 1) % N : N - 1 - p;
}

/* Lowest set bit of position p; for the root, the power of two at or above N. */
static int bt_bit(int N, int p)
{
    int b = 1;
    while (b < N && !(b & p))
        b <<= 1;
    return b;
}

/* Parent member of v in tree `kind` (-1 at the root) and its child members (0..2). */
static int bt_links(int N, int kind, int v, int *parent, int children[2])
{
    int p = bt_pos(N, kind, v), b = bt_bit(N, p), nc = 0;
    if (p == 0) {
        *parent = -1;
        if (N > 1) children[nc++] = bt_member(N, kind, b >> 1);
        return nc;
    }
    int up = (p ^ b) | (b << 1);
    *parent = bt_member(N, kind, up < N ? up : p ^ b);
    if (b > 1) children[nc++] = bt_member(N, kind, p - b / 2);
    for (int lb = b / 2; lb > 0; lb /= 2)
        if (p + lb < N) {
            children[nc++] = bt_member(N, kind, p + lb);
            break;
        }
    return nc;
}

/* Height: log2 of the position's lowest set bit (its first child's subtree is complete, the
 * second's no higher), the root's log2 of the power of two at or above N. */
static int bt_height(int N, int kind, int v)
{
    int h = 0;
    for (int b = bt_bit(N, bt_pos(N, kind, v)); b > 1; b >>= 1)
        h++;
    return h;
}

static int bt_depth(int N, int kind, int v)
{
    int d = 0, parent, ch[2];
    for (bt_links(N, kind, v, &parent, ch); parent >= 0; bt_links(N, kind, parent, &parent, ch))
        d++;
    return d;
}

void mdl_tree_shape_flat(struct mdl_tree_shape *s, int n)
{
    *s = (struct mdl_tree_shape){.n = n, .local = 1, .trees = 2};
}

int mdl_tree_shape_machines(struct mdl_tree_shape *s, int nodes, int local, int pairs)
{
    if (nodes < 1 || local < 1 || pairs < 1 || pairs > local || pairs > MDL_MAX_TREES / 2)
        return -1;
    *s = (struct mdl_tree_shape){.n = nodes * local, .local = local, .trees = 2 * pairs};
    return 0;
}

int mdl_tree_head(const struct mdl_tree_shape *s, int t)
{
    return t / 2 * s->local / (s->trees / 2);
}

/* Machine, node tree and chain position of member i in tree t. */
struct tree_at {
    int N, L, v, kind, h, q;
};

static struct tree_at tree_at(const struct mdl_tree_shape *s, int t, int i)
{
    struct tree_at a = {.L = s->local, .N = s->n / s->local, .kind = t % 2};
    a.v = i / a.L;
    a.h = mdl_tree_head(s, t);
    a.q = (i % a.L - a.h + a.L) % a.L;
    return a;
}

int mdl_tree_links(const struct mdl_tree_shape *s, int t, int i, int *parent,
                   int children[MDL_TREE_ARITY])
{
    struct tree_at a = tree_at(s, t, i);
    int nc = 0, base = a.v * a.L;
    *parent = -1;
    if (a.q > 0) *parent = base + (a.h + a.q - 1) % a.L;
    if (a.q < a.L - 1) children[nc++] = base + (a.h + a.q + 1) % a.L; /* along the chain */
    if (a.q == 0) {                                                   /* the machine's head */
        int pv, cv[2];
        int ncv = bt_links(a.N, a.kind, a.v, &pv, cv);
        if (pv >= 0) *parent = pv * a.L + a.h;
        for (int j = 0; j < ncv; j++)
            children[nc++] = cv[j] * a.L + a.h;
    }
    return nc;
}

int mdl_tree_height(const struct mdl_tree_shape *s, int t, int i)
{
    struct tree_at a = tree_at(s, t, i);
    return a.q > 0 ? a.L - 1 - a.q : a.L - 1 + bt_height(a.N, a.kind, a.v);
}

int mdl_tree_depth(const struct mdl_tree_shape *s, int t, int i)
{
    struct tree_at a = tree_at(s, t, i);
    return bt_depth(a.N, a.kind, a.v) + a.q;
}

int mdl_tree_top(const struct mdl_tree_shape *s)
{
    int N = s->n / s->local;
    return s->local - 1 + bt_height(N, 0, 0);
}

int mdl_tree_crosses(const struct mdl_tree_shape *s, int i, int j)
{
    return s->local < 2 || i / s->local != j / s->local;
}

/* What decides a machine's transfers in the node trees: per tree kind, its height, depth,
 * child machines and their heights. Machines with equal keys load their members alike. */
struct node_key {
    int k[2][5];
};

static int key_cmp(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(struct node_key));
}

static void node_key(int N, int v, struct node_key *key)
{
    memset(key, 0, sizeof *key);
    for (int kind = 0; kind < 2; kind++) {
        int pv, cv[2];
        int nc = bt_links(N, kind, v, &pv, cv);
        int *k = key->k[kind];
        k[0] = bt_height(N, kind, v);
        k[1] = bt_depth(N, kind, v);
        k[2] = nc;
        for (int j = 0; j < nc; j++)
            k[3 + j] = bt_height(N, kind, cv[j]) + 1;
    }
}

/* Adds `count` transfers per chunk from step `first` on (k chunks) to a difference array. */
static void ev_add(int *d, int first, int count, int k)
{
    d[first] += count;
    d[first + k] -= count;
}

int mdl_tree_cost(const struct mdl_tree_shape *s, int k, struct mdl_tree_cost *out)
{
    memset(out, 0, sizeof *out);
    int L = s->local, N = s->n / L, H = mdl_tree_top(s), steps = k + 2 * H - 1;
    out->levels[0] = L - 1;
    out->levels[1] = H - (L - 1);
    /* one machine per distinct node key stands for all the machines with that key: sorted by
     * key (which leads struct machine), the first of each run */
    struct machine {
        struct node_key key;
        int v;
    } *ms = malloc((size_t)N * sizeof *ms);
    int *rep = malloc((size_t)N * sizeof *rep);
    /* per class: out and in transfers per step (difference arrays, then prefix sums) */
    int *d = calloc(4 * ((size_t)steps + k + 1), sizeof *d);
    int *best = calloc(2 * (size_t)steps, sizeof *best);
    if (!ms || !rep || !d || !best) {
        free(ms);
        free(rep);
        free(d);
        free(best);
        return -1;
    }
    for (int v = 0; v < N; v++) {
        node_key(N, v, &ms[v].key);
        ms[v].v = v;
    }
    qsort(ms, (size_t)N, sizeof *ms, key_cmp);
    int nrep = 0;
    for (int v = 0; v < N; v++)
        if (v == 0 || key_cmp(&ms[v], &ms[v - 1])) rep[nrep++] = ms[v].v;
    free(ms);
    size_t span = (size_t)steps + k + 1;
    for (int r = 0; r < nrep; r++)
        for (int l = 0; l < L; l++) {
            int i = rep[r] * L + l;
            memset(d, 0, 4 * span * sizeof *d);
            int *ev[2][2] = {{d, d + span}, {d + 2 * span, d + 3 * span}}; /* [class][out, in] */
            int tot[2][2] = {{0, 0}, {0, 0}};
            for (int t = 0; t < s->trees; t++) {
                int parent, ch[MDL_TREE_ARITY];
                int nc = mdl_tree_links(s, t, i, &parent, ch);
                int hi = mdl_tree_height(s, t, i), di = mdl_tree_depth(s, t, i);
                if (parent >= 0) { /* up to the parent; down from it */
                    int c = mdl_tree_crosses(s, i, parent);
                    ev_add(ev[c][0], hi, 1, k);
                    ev_add(ev[c][1], H + di - 1, 1, k);
                    tot[c][0]++;
                    tot[c][1]++;
                }
                for (int j = 0; j < nc; j++) { /* up from each child; down to them */
                    int c = mdl_tree_crosses(s, i, ch[j]);
                    ev_add(ev[c][1], mdl_tree_height(s, t, ch[j]), 1, k);
                    ev_add(ev[c][0], H + di, 1, k);
                    tot[c][0]++;
                    tot[c][1]++;
                }
            }
            for (int c = 0; c < 2; c++) {
                int o = 0, n = 0;
                for (int st = 0; st < steps; st++) {
                    o += ev[c][0][st];
                    n += ev[c][1][st];
                    int m = o > n ? o : n;
                    if (m > best[c * steps + st]) best[c * steps + st] = m;
                }
                for (int w = 0; w < 2; w++)
                    if (tot[c][w] > out->flow[c]) out->flow[c] = tot[c][w];
            }
        }
    for (int c = 0; c < 2; c++)
        for (int st = 0; st < steps; st++)
            out->sum[c] += best[c * steps + st];
    free(rep);
    free(d);
    free(best);
    return 0;
}

double mdl_tree_time(const struct mdl_tree_cost *tc, int k, double c,
                     const struct mdl_coll_path *chain, const struct mdl_coll_path *tree,
                     double rate, bool whole)
{
    double tc0 = tc->levels[0] ? c / chain->bw_Bps : 0, tc1 = c / tree->bw_Bps;
    double a0 = tc->levels[0] ? chain->alpha_s : 0;
    double u = rate > 0 ? c / rate : 0; /* a channel's time per chunk */
    double step = tc0 > tc1 ? tc0 : tc1;
    if (u > step) step = u;
    int levels = tc->levels[0] + tc->levels[1];
    double path = 2 * (tc->levels[0] * (a0 + tc0) + tc->levels[1] * (tree->alpha_s + tc1)) +
                  (whole ? 2 * levels * u : 0) + (k - 1) * step;
    double b0 = tc->levels[0] ? tc->sum[0] * tc0 : 0, b1 = tc->sum[1] * tc1;
    double busy = tc->levels[0] * a0 + tc->levels[1] * tree->alpha_s + (b0 > b1 ? b0 : b1);
    return path > busy ? path : busy;
}

/* The flow-level twin of mdl_tree_time: what a member's flows take beyond the bulk of its
 * busiest class (flows of one connection carry all its chunks). */
double mdl_tree_flow_bulk(const struct mdl_tree_cost *tc, int k, double c,
                          const struct mdl_coll_path *chain, const struct mdl_coll_path *tree)
{
    double b0 = tc->levels[0] ? tc->flow[0] * k * c / chain->bw_Bps : 0;
    double b1 = tc->flow[1] * k * c / tree->bw_Bps;
    return b0 > b1 ? b0 : b1;
}

double mdl_coll_ring(int steps, double chunk, const struct mdl_coll_path *p)
{
    double path = steps * (p->ring_alpha_s + chunk / p->ring_bw_Bps);
    double queue = steps * chunk / p->bw_Bps + p->alpha_s;
    return path > queue ? path : queue;
}

static double ring(int steps, int m, double bytes, const struct mdl_coll_path *p)
{
    return mdl_coll_ring(steps, bytes / m, p);
}

/* Tree all-reduce of S in shape sh (chains on path `chain`, tree links on path `tree`): each of
 * its trees carries S / trees in pipelined chunks, reduced going up and broadcast coming down as
 * soon as the root has it; latency is paid per level, bandwidth per step at its most loaded
 * member. */
static double tree_k(const struct mdl_tree_shape *sh, double S, int k,
                     const struct mdl_coll_path *chain, const struct mdl_coll_path *link,
                     double rate, bool whole)
{
    double b = S / sh->trees;
    struct mdl_tree_cost tc;
    if (mdl_tree_cost(sh, k, &tc)) return -1;
    return mdl_tree_time(&tc, k, b / k, chain, link, rate, whole);
}

static double tree(const struct mdl_tree_shape *sh, double S, double chunk_bytes,
                   const struct mdl_coll_path *chain, const struct mdl_coll_path *link, double rate,
                   bool whole)
{
    int k = mdl_tree_chunks(S / sh->trees, chunk_bytes, mdl_tree_top(sh));
    return tree_k(sh, S, k, chain, link, rate, whole);
}

static double hier(enum mdl_op_kind k, enum mdl_coll_algo a, double S, const struct mdl_coll_env *e)
{
    int L = e->local, N = e->nodes;
    if (L < 2 || N < 2 || L * N != e->n) return -1;
    double rs_local = ring(L - 1, L, S, &e->intra);
    if (a == MDL_ALGO_HTREE) {
        struct mdl_tree_shape sh;
        mdl_tree_shape_flat(&sh, N);
        double tr = tree(&sh, S / L, e->chunk_bytes, &e->inter, &e->inter, 0, true);
        return k == MDL_OP_ALL_REDUCE && tr >= 0 ? 2 * rs_local + tr : -1;
    }
    switch (k) {
    case MDL_OP_ALL_REDUCE:
        return 2 * rs_local + ring(2 * (N - 1), N, S / L, &e->inter);
    case MDL_OP_ALL_GATHER:
    case MDL_OP_REDUCE_SCATTER:
        return rs_local + ring(N - 1, N, S / L, &e->inter);
    default:
        return -1;
    }
}

/* NVLS-tree all-reduce of S (collective.h): per rail, the flat double binary tree over the
 * machines carries the slice S / L in k chunks per tree; the chunks' NVLS portions (L c bytes of
 * the buffer each, a GPU's link carrying c (L + 1) of them each way) come through the switch one
 * after another, each chunk entering its tree once its portion is reduced, and the last one's
 * multicast closes. The longer of the trees behind the first portion and the portions behind
 * which the last chunk climbs and comes down its tree. */
static double nvls_tree(double S, const struct mdl_coll_env *e)
{
    int L = e->local, N = e->nodes;
    if (!e->nvls_tree || !(e->nvls_eff > 0) || L < 2 || L > MDL_PIPE_MAX_LOCAL || N < 2 ||
        L * N != e->n)
        return -1;
    struct mdl_tree_shape sh;
    mdl_tree_shape_flat(&sh, N);
    double b = S / L / sh.trees;
    int H = mdl_tree_top(&sh),
        k = mdl_nvls_tree_chunks(S, L, N, e->nvls_channels, e->nvls_chunk_bytes);
    double c = b / k, tr = tree_k(&sh, S / L, k, &e->inter, &e->inter, 0, true);
    if (tr < 0) return -1;
    double u = c * (L + 1) / (e->intra.bw_Bps * e->nvls_eff); /* a portion through the switch */
    double first = u + tr;
    double last = mdl_nvls_portions(sh.trees * k, u, e->intra.alpha_s) +
                  2 * H * (e->inter.alpha_s + c / e->inter.bw_Bps);
    return 2 * e->intra.alpha_s + (first > last ? first : last);
}

double mdl_nvls_portions(int P, double u, double alpha)
{
    int W = MDL_NCCL_STEPS;
    double bytes = P * u, trips = u + (P - 1) / W * (alpha + u) + (P - 1) % W * u;
    return bytes > trips ? bytes : trips;
}

int mdl_collnet_chunks(double bytes, double chunk_bytes)
{
    return chunks_of(bytes, chunk_bytes, MDL_MAX_TREE_CHUNKS);
}

double mdl_collnet_pipe(int k, double aa, double ua, double ab, double ub)
{
    int W = MDL_NCCL_STEPS;
    double step = 2 * ua > ub ? 2 * ua : ub;
    if ((aa + ua) / W > step) step = (aa + ua) / W;
    if ((ab + ub) / W > step) step = (ab + ub) / W;
    return 2 * aa + ab + 2 * ua + ub + (k - 1) * step;
}

/* CollNet all-reduce of S (collective.h): L GPUs in each of N machines (L = 1: the group's
 * members each in its own machine, on the flat routes), each GPU's slice S / L in k chunks c
 * through three stages: its parts of the others' slices to them ((L-1) c on its link each way),
 * the reduced chunk into the network and the machines' sum back (c on its NIC each way), the sum
 * to the others ((L-1) c again). The first chunk passes every stage; then a chunk per step, the
 * scatter and the gather sharing the GPU's link, and no stage faster than its round trip per
 * MDL_NCCL_STEPS chunks. */
static double collnet(double S, const struct mdl_coll_env *e)
{
    int L = 1;
    const struct mdl_coll_path *net = &e->all;
    if (!e->collnet) return -1;
    if (e->local >= 2 && e->nodes >= 2 && e->local * e->nodes == e->n) {
        L = e->local;
        net = &e->inter;
    } else if (e->machines != e->n || e->n < 2) {
        return -1;
    }
    if (L > MDL_PIPE_MAX_LOCAL) return -1;
    int k = mdl_collnet_chunks(S / L, e->chunk_bytes);
    double c = S / L / k;
    double ua = L > 1 ? (L - 1) * c / e->intra.bw_Bps : 0, aa = L > 1 ? e->intra.alpha_s : 0;
    return mdl_collnet_pipe(k, aa, ua, net->alpha_s, c / net->bw_Bps);
}

/* NCCL's all-to-all of S per member (S/m to each peer), every message at once: each class of
 * link carries its messages side by side after its latency, inside a machine the other L - 1
 * members' on the chain paths, between machines the m - L others' on the rail paths (one class
 * of m - 1 on a single machine or an irregular layout). */
static double all_to_all(double S, const struct mdl_coll_env *e)
{
    int m = e->n;
    if (e->local >= 2 && e->nodes >= 2) {
        int L = e->local;
        double in = e->intra.alpha_s + (L - 1) * (S / m) / e->intra.bw_Bps;
        double out = e->inter.alpha_s + (m - L) * (S / m) / e->inter.bw_Bps;
        return in > out ? in : out;
    }
    return e->all.alpha_s + (m - 1) * (S / m) / e->all.bw_Bps;
}

double mdl_coll_time(enum mdl_op_kind k, enum mdl_coll_algo a, double S,
                     const struct mdl_coll_env *e)
{
    int m = e->n;
    if (!mdl_coll_supports(k, a) || m < 1) return -1;
    if (m == 1) return 0;
    const struct mdl_coll_path *p = &e->all;
    double t = -1;
    switch (a) {
    case MDL_ALGO_RING:
        if (k == MDL_OP_BROADCAST || k == MDL_OP_REDUCE) { /* the chain, either way */
            int ch = mdl_coll_chunks(S, e->chunk_bytes);
            t = (ch + m - 2) * (p->alpha_s + S / ch / p->bw_Bps);
        } else { /* across machines, each channel a ring of S / channels */
            int c = e->channels > 1 ? e->channels : 1;
            t = ring(k == MDL_OP_ALL_REDUCE ? 2 * (m - 1) : m - 1, m, S / c, c > 1 ? &e->chan : p);
        }
        break;
    case MDL_ALGO_DIRECT:
        /* every pair's route, except a send/recv's: a message, or a shift's one per member */
        if (m > MDL_DIRECT_MAX_N && k != MDL_OP_SEND_RECV) return -1;
        if (k == MDL_OP_SEND_RECV) {
            /* one message, or over more than 2 members every member's to the next at once (a
             * shift, as nccl-tests' sendrecv_perf runs): the slowest pair's. NCCL's
             * point-to-point path where the platform has one */
            t = p->alpha_s + (e->p2p_base_s > 0
                                  ? mdl_p2p_move(S, &e->p2p, e->machines > 1, p->bw_Bps)
                                  : S / p->bw_Bps);
        } else if (k == MDL_OP_BROADCAST)
            t = (m - 1) * (p->alpha_s + S / p->bw_Bps);
        else if (k == MDL_OP_ALL_TO_ALL)
            t = all_to_all(S, e);
        else /* every step waits for all its messages: the slowest route sets its pace */
            t = (k == MDL_OP_ALL_REDUCE ? 2 * (m - 1) : m - 1) * (p->alpha_s + S / m / p->bw_Bps);
        break;
    case MDL_ALGO_TREE: {
        /* NCCL's tree across machines (chains inside, trees between their heads), else a flat
         * double binary tree over the members */
        struct mdl_tree_shape sh;
        if (e->local >= 2 && e->nodes >= 2 &&
            !mdl_tree_shape_machines(&sh, e->nodes, e->local, e->pairs > 0 ? e->pairs : 1)) {
            t = tree(&sh, S, e->chunk_bytes, &e->intra, &e->heads, e->tree_rate_Bps, e->tree_whole);
        } else {
            mdl_tree_shape_flat(&sh, m);
            t = tree(&sh, S, e->chunk_bytes, p, p, e->tree_rate_Bps, e->tree_whole);
        }
        break;
    }
    case MDL_ALGO_HIER:
    case MDL_ALGO_HTREE:
        t = hier(k, a, S, e);
        break;
    case MDL_ALGO_NVLS: /* the reduction through the switch, then its multicast: two steps */
        if (!e->nvls || !(e->nvls_eff > 0)) return -1;
        t = 2 * p->alpha_s + S * (m + 1) / m / (p->bw_Bps * e->nvls_eff);
        break;
    case MDL_ALGO_NVLS_TREE:
        t = nvls_tree(S, e);
        break;
    case MDL_ALGO_COLLNET:
        t = collnet(S, e);
        break;
    default:
        return -1;
    }
    if (t < 0) return -1;
    return (mdl_p2p_kind(k) && e->p2p_base_s > 0 ? e->p2p_base_s : e->base_s) + t;
}

double mdl_coll_busbw_factor(enum mdl_op_kind k, int n)
{
    if (n <= 1) return 0;
    switch (k) {
    case MDL_OP_ALL_REDUCE:
        return 2.0 * (n - 1) / n;
    case MDL_OP_ALL_GATHER:
    case MDL_OP_REDUCE_SCATTER:
    case MDL_OP_ALL_TO_ALL:
        return (double)(n - 1) / n;
    default:
        return 1;
    }
}
