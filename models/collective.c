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
 *   double binary tree    reduce up both trees then broadcast down, each tree carrying S/2 in
 *                         k chunks: 2(k+H-1) steps, H = tree height
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

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const mdl_algo_names[MDL_ALGO_N + 1] = {
    "auto", "ring", "tree", "direct", "hierarchical", "hierarchical_tree", "nvls", NULL};
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
    return (unsigned)g < 3 ? mdl_gran_names[g] : "?";
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

int mdl_coll_chunks(double bytes, double chunk_bytes)
{
    if (!(chunk_bytes > 0)) return 1;
    double k = ceil(bytes / chunk_bytes);
    return k < 1 ? 1 : k > MDL_MAX_CHUNKS ? MDL_MAX_CHUNKS : (int)k;
}

int mdl_tree_chunks(double bytes, double chunk_bytes, int height)
{
    const double floor_bytes[3] = {128 << 10, 64 << 10, 32 << 10};
    const int per_level[3] = {8, 4, 1};
    double c = chunk_bytes, d = height > 1 ? height : 1;
    for (int i = 0; i < 3 && c > 0; i++)
        while (bytes / c < per_level[i] * d && c > floor_bytes[i])
            c /= 2;
    return mdl_coll_chunks(bytes, c);
}

/* position of member i in tree t, and back */
static int tree_pos(int n, int t, int i)
{
    return t == 0 ? i : n - 1 - i;
}

int mdl_tree_links(int n, int tree, int i, int *parent, int children[2])
{
    int p = tree_pos(n, tree, i), nc = 0;
    *parent = p == 0 ? -1 : tree_pos(n, tree, (p - 1) / 2);
    for (int c = 2 * p + 1; c <= 2 * p + 2; c++)
        if (c < n) children[nc++] = tree_pos(n, tree, c);
    return nc;
}

int mdl_tree_height(int n, int tree, int i)
{
    /* the deepest descendant of heap position p lies on its leftmost path */
    int p = tree_pos(n, tree, i), h = 0;
    for (long c = 2L * p + 1; c < n; c = 2 * c + 1)
        h++;
    return h;
}

int mdl_tree_depth(int n, int tree, int i)
{
    int p = tree_pos(n, tree, i), d = 0;
    for (; p > 0; p = (p - 1) / 2)
        d++;
    return d;
}

/* A member's transfers in a tree all-reduce, as (first step, count) events: it sends `count`
 * transfers at steps first .. first+k-1 (and likewise receives). Members with equal events load
 * the links alike, so loads are computed once per distinct signature (O(log^2 n) of them). */
#define TREE_EV 8 /* in: up to 2 children per tree at 2 heights, a parent per tree */
struct tree_sig {
    int out[TREE_EV][2], in[TREE_EV][2];
};

static void sig_add(int ev[TREE_EV][2], int first, int count)
{
    for (int i = 0; i < TREE_EV; i++) {
        if (ev[i][1] && ev[i][0] == first) {
            ev[i][1] += count;
            return;
        }
        if (!ev[i][1]) {
            ev[i][0] = first;
            ev[i][1] = count;
            return;
        }
    }
}

static int sig_cmp(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(struct tree_sig));
}

static int ev_cmp(const void *a, const void *b)
{
    const int *x = a, *y = b;
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

static int ev_at(const int ev[TREE_EV][2], int s, int k)
{
    int n = 0;
    for (int i = 0; i < TREE_EV && ev[i][1]; i++)
        if (s - ev[i][0] >= 0 && s - ev[i][0] < k) n += ev[i][1];
    return n;
}

static int ev_total(const int ev[TREE_EV][2])
{
    int n = 0;
    for (int i = 0; i < TREE_EV; i++)
        n += ev[i][1];
    return n;
}

int mdl_tree_load(int n, int k, int *flow_load)
{
    int H = mdl_tree_height(n, 0, 0), steps = k + 2 * H - 1;
    struct tree_sig *sg = calloc((size_t)n + 1, sizeof *sg);
    if (!sg) {
        *flow_load = 4;
        return 4 * steps;
    }
    /* events: going up, i sends at height(i) to its parent, which receives then; coming down,
     * i sends at H + depth(i) to its children, each receiving then */
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < n; i++) {
            int parent, ch[2];
            int nc = mdl_tree_links(n, t, i, &parent, ch);
            if (parent >= 0) {
                int h = mdl_tree_height(n, t, i);
                sig_add(sg[i].out, h, 1);
                sig_add(sg[parent].in, h, 1);
            }
            if (nc) {
                int d = H + mdl_tree_depth(n, t, i);
                sig_add(sg[i].out, d, nc);
                for (int c = 0; c < nc; c++)
                    sig_add(sg[ch[c]].in, d, 1);
            }
        }
    for (int i = 0; i < n; i++) {
        qsort(sg[i].out, TREE_EV, sizeof sg[i].out[0], ev_cmp);
        qsort(sg[i].in, TREE_EV, sizeof sg[i].in[0], ev_cmp);
        /* empty events (count 0) sort first: move them last for ev_at's early stop */
        struct tree_sig z = {0};
        int o = 0, q = 0;
        for (int e = 0; e < TREE_EV; e++) {
            if (sg[i].out[e][1]) memcpy(z.out[o++], sg[i].out[e], sizeof z.out[0]);
            if (sg[i].in[e][1]) memcpy(z.in[q++], sg[i].in[e], sizeof z.in[0]);
        }
        sg[i] = z;
    }
    qsort(sg, (size_t)n, sizeof *sg, sig_cmp);
    int u = 0;
    for (int i = 0; i < n; i++)
        if (u == 0 || sig_cmp(&sg[i], &sg[u - 1])) sg[u++] = sg[i];
    int sum = 0, fl = 0;
    for (int s = 0; s < steps; s++) {
        int m = 0;
        for (int i = 0; i < u; i++) {
            int o = ev_at(sg[i].out, s, k), r = ev_at(sg[i].in, s, k);
            if (o > m) m = o;
            if (r > m) m = r;
        }
        sum += m;
    }
    for (int i = 0; i < u; i++) {
        int o = ev_total(sg[i].out), r = ev_total(sg[i].in);
        if (o > fl) fl = o;
        if (r > fl) fl = r;
    }
    free(sg);
    *flow_load = fl;
    return sum;
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

double mdl_tree_time(int H, int k, int sum, double c, double alpha, double bw)
{
    double path = 2 * H * alpha + (k + 2 * H - 1) * c / bw, busy = H * alpha + sum * c / bw;
    return path > busy ? path : busy;
}

/* Double binary tree all-reduce of S over m members on path p: each tree carries S/2 in
 * pipelined chunks, reduced going up and broadcast coming down as soon as the root has it;
 * latency is paid per level (2H), bandwidth per step at its most loaded member. */
static double tree(int m, double S, double chunk_bytes, const struct mdl_coll_path *p)
{
    int H = mdl_tree_height(m, 0, 0), fl;
    int ch = mdl_tree_chunks(S / 2, chunk_bytes, H);
    double c = S / 2 / ch;
    return mdl_tree_time(H, ch, mdl_tree_load(m, ch, &fl), c, p->alpha_s, p->bw_Bps);
}

static double hier(enum mdl_op_kind k, enum mdl_coll_algo a, double S, const struct mdl_coll_env *e)
{
    int L = e->local, N = e->nodes;
    if (L < 2 || N < 2 || L * N != e->n) return -1;
    double rs_local = ring(L - 1, L, S, &e->intra);
    if (a == MDL_ALGO_HTREE)
        return k == MDL_OP_ALL_REDUCE ? 2 * rs_local + tree(N, S / L, e->chunk_bytes, &e->inter)
                                      : -1;
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
        if (m > MDL_DIRECT_MAX_N) return -1;
        if (k == MDL_OP_SEND_RECV)
            t = m == 2 ? p->alpha_s + S / p->bw_Bps : -1;
        else if (k == MDL_OP_BROADCAST)
            t = (m - 1) * (p->alpha_s + S / p->bw_Bps);
        else /* every step waits for all its messages: the slowest route sets its pace */
            t = (k == MDL_OP_ALL_REDUCE ? 2 * (m - 1) : m - 1) * (p->alpha_s + S / m / p->bw_Bps);
        break;
    case MDL_ALGO_TREE:
        t = tree(m, S, e->chunk_bytes, p);
        break;
    case MDL_ALGO_HIER:
    case MDL_ALGO_HTREE:
        t = hier(k, a, S, e);
        break;
    case MDL_ALGO_NVLS: /* the reduction through the switch, then its multicast: two steps */
        if (!e->nvls || !(e->nvls_eff > 0)) return -1;
        t = 2 * p->alpha_s + S * (m + 1) / m / (p->bw_Bps * e->nvls_eff);
        break;
    default:
        return -1;
    }
    return t < 0 ? -1 : e->base_s + t;
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
