/* tune.c - collective tuner and message pairs (see tune.h). Units: bytes, s, bytes/s. */
#include "core/tune.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/hash.h"

int tune_layout(const struct plat_topo *t, const struct mdl_group *g, struct cpl_layout *h)
{
    memset(h, 0, sizeof *h);
    h->machines = 1;
    if (t->xml_path[0] || t->machines < 2 || g->n < 2) return 0;
    int n = g->n, nm = t->machines;
    int *order = malloc((size_t)nm * sizeof *order), *count = calloc((size_t)nm, sizeof *count);
    h->node_of = malloc((size_t)n * sizeof *h->node_of);
    h->local_of = malloc((size_t)n * sizeof *h->local_of);
    h->member = malloc((size_t)n * sizeof *h->member);
    int rc = order && count && h->node_of && h->local_of && h->member ? 0 : -1;
    int nodes = 0;
    for (int m = 0; !rc && m < nm; m++)
        order[m] = -1;
    for (int i = 0; !rc && i < n; i++) {
        int m = t->nodes[t->gpu_node[g->ranks[i]]].machine;
        if (m < 0 || m >= nm) {
            nodes = 0;
            break;
        }
        if (order[m] < 0) order[m] = nodes++;
        h->node_of[i] = order[m];
        h->local_of[i] = count[order[m]]++;
    }
    int machines = nodes > 1 ? nodes : 1, least = nodes ? count[0] : 0, regular = 1;
    for (int j = 1; j < nodes; j++) {
        if (count[j] < least) least = count[j];
        regular &= count[j] == count[0];
    }
    if (!rc && nodes >= 2 && least >= 2) {
        h->first = malloc((size_t)(nodes + 1) * sizeof *h->first);
        rc = h->first ? 0 : -1;
    }
    if (!rc && h->first) {
        h->local = regular ? count[0] : 0;
        h->nodes = nodes;
        h->first[0] = 0;
        for (int j = 0; j < nodes; j++)
            h->first[j + 1] = h->first[j] + count[j];
        for (int i = 0; i < n; i++)
            h->member[h->first[h->node_of[i]] + h->local_of[i]] = i;
        int m0 = t->nodes[t->gpu_node[g->ranks[0]]].machine, nics = 0;
        for (int i = 0; i < t->nnodes; i++)
            nics += t->nodes[i].kind == PLAT_NIC && t->nodes[i].machine == m0;
        h->channels = nics < least ? nics : least;
        int most = t->nccl.channels > 0 ? t->nccl.channels : CPL_MAX_CHANNELS;
        if (h->channels > most) h->channels = most;
        if (h->channels < 2) h->channels = 1;
    }
    free(order);
    free(count);
    /* an irregular layout is kept for its ring channels only */
    if (rc || !h->first || (!h->local && h->channels < 2)) cpl_layout_release(h);
    h->machines = machines;
    return rc;
}

/* Pairs of the ring channels of a group (h->channels >= 2). */
static int channel_pairs(const struct mdl_group *g, const struct cpl_layout *h, int (*out)[2])
{
    int n = g->n, k = 0;
    for (int j = 0; j < h->channels; j++)
        for (int p = 0; p < n; p++, k++) {
            out[k][0] = g->ranks[cpl_channel_member(h, j, p)];
            out[k][1] = g->ranks[cpl_channel_member(h, j, (p + 1) % n)];
        }
    return k;
}

/* Route figures (struct cpl_routes) of a set of concurrent transfers. */
static int path_stats(const struct plat_topo *t, const int (*pairs)[2], int n,
                      struct cpl_routes *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0) return 0;
    size_t slots = 2 * (size_t)t->nlinks + (size_t)t->nnodes;
    int *use = calloc(slots, sizeof *use);
    struct plat_route *r = malloc((size_t)n * sizeof *r);
    if (!use || !r) {
        free(use);
        free(r);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        rc = plat_topo_route(t, pairs[i][0], pairs[i][1], &r[i]);
        for (int h = 0; !rc && h < r[i].nhops; h++) {
            const struct plat_hop *hp = &r[i].hops[h];
            size_t k = hp->link < 0
                           ? 2 * (size_t)t->nlinks + (size_t)hp->node
                           : 2 * (size_t)hp->link + (t->links[hp->link].shared ? 0 : hp->up);
            use[k]++;
        }
    }
    double inv = 0;
    for (int i = 0; i < n && !rc; i++) {
        if (r[i].lat_s > out->lat) out->lat = r[i].lat_s;
        out->mean_lat += r[i].lat_s / n;
        double pb = 0; /* this transfer's share */
        for (int h = 0; h < r[i].nhops; h++) {
            const struct plat_hop *hp = &r[i].hops[h];
            size_t k = hp->link < 0
                           ? 2 * (size_t)t->nlinks + (size_t)hp->node
                           : 2 * (size_t)hp->link + (t->links[hp->link].shared ? 0 : hp->up);
            double cap = hp->link < 0 ? t->nodes[hp->node].fwd_Bps : t->links[hp->link].bw_Bps;
            double share = cap / use[k];
            if (pb == 0 || share < pb) pb = share;
        }
        if (out->bw == 0 || pb < out->bw) out->bw = pb;
        if (pb > 0) inv += 1 / pb / n;
    }
    out->mean_bw = inv > 0 ? 1 / inv : 0;
    free(use);
    free(r);
    return rc;
}

/* Whether GPU a reaches GPU b over NVLink only, through a switch (NVSwitch), not over PCIe or
 * bridges. */
static int nvlink_switched(const struct plat_topo *t, int a, int b)
{
    struct plat_route r;
    if (plat_topo_route(t, a, b, &r)) return 0;
    int switched = 0;
    for (int h = 0; h < r.nhops; h++) {
        const struct plat_hop *hp = &r.hops[h];
        if (hp->link < 0) continue;
        const struct plat_link *l = &t->links[hp->link];
        if (l->level != PLAT_LVL_NVLINK) return 0;
        switched |= t->nodes[hp->up ? l->b : l->a].kind == PLAT_SWITCH;
    }
    return switched;
}

/* Whether group g can run NVLS: the platform enables it, all its members are GPUs of one machine,
 * and they reach each other over NVLink through a switch (NVSwitch), not over PCIe or bridges. */
static int nvls_group(const struct plat_topo *t, const struct mdl_group *g)
{
    if (!t->nccl.nvls || g->n < 2) return 0;
    int m0 = t->nodes[t->gpu_node[g->ranks[0]]].machine;
    for (int i = 1; i < g->n; i++)
        if (t->nodes[t->gpu_node[g->ranks[i]]].machine != m0) return 0;
    for (int i = 1; i < g->n; i++)
        if (!nvlink_switched(t, g->ranks[0], g->ranks[i])) return 0;
    return 1;
}

/* Whether group g, laid out regularly over machines (h), can run NVLS-tree: the platform
 * enables NVLS and NVLS-tree, its machines hold 2..MDL_PIPE_MAX_LOCAL members each, and
 * every member reaches its machine's first over NVLink through a switch. */
static int nvls_tree_group(const struct plat_topo *t, const struct mdl_group *g,
                           const struct cpl_layout *h)
{
    if (!t->nccl.nvls || !t->nccl.nvls_tree || h->local < 2 || h->nodes < 2 ||
        h->local > MDL_PIPE_MAX_LOCAL)
        return 0;
    for (int i = 0; i < g->n; i++) {
        int first = h->member[h->node_of[i] * h->local];
        if (i != first && !nvlink_switched(t, g->ranks[first], g->ranks[i])) return 0;
    }
    return 1;
}

void tune_group_env_release(struct tune_group_env *e)
{
    cpl_layout_release(&e->hier);
}

/* Ring pairs of a group for one of the three phases: 0 flat ring, 1 inside machines, 2 rails;
 * a one-way pair's single message in the flat phase (a send/recv of 2; over more, every member
 * sends to the next: the flat ring's pairs). */
static int ring_pairs(const struct mdl_group *g, const struct cpl_layout *h, int which,
                      bool one_way, int (*out)[2])
{
    int n = g->n, k = 0;
    if (which == 0 && one_way && n == 2) {
        out[0][0] = g->ranks[0];
        out[0][1] = g->ranks[1];
        return 1;
    }
    if (which == 0) {
        for (int i = 0; i < n; i++, k++) {
            out[k][0] = g->ranks[i];
            out[k][1] = g->ranks[(i + 1) % n];
        }
        return k;
    }
    if (!h->local) return 0;
    int L = h->local, N = h->nodes;
    for (int j = 0; j < N; j++)
        for (int l = 0; l < L; l++, k++) {
            out[k][0] = g->ranks[h->member[j * L + l]];
            out[k][1] = which == 1 ? g->ranks[h->member[j * L + (l + 1) % L]]
                                   : g->ranks[h->member[((j + 1) % N) * L + l]];
        }
    return k;
}

/* tune_group_env_set on the groups' layouts hs (borrowed; NULL: computed here). */
static int env_build(const struct plat_topo *t, const struct mdl_group *const *groups, int ng,
                     enum mdl_op_kind kind, const struct cpl_layout *given,
                     struct tune_group_env *e, struct tps_error *err)
{
    bool one_way = kind == MDL_OP_SEND_RECV; /* one message per member */
    memset(e, 0, sizeof *e);
    const struct mdl_group *g = groups[0];
    e->n = g->n;
    if (g->n < 2) return TPS_OK;
    e->nvls = !t->xml_path[0] && nvls_group(t, g);
    if (t->xml_path[0]) {
        /* SimGrid resolves the routes of a user XML: nothing to measure, ring is chosen */
        e->flat.bw = e->intra.bw = e->inter.bw = 1;
        e->flat.mean_bw = e->intra.mean_bw = e->inter.mean_bw = 1;
        return TPS_OK;
    }
    for (int i = 1; i < g->n && !e->spans; i++)
        e->spans = t->nodes[t->gpu_node[g->ranks[i]]].machine !=
                   t->nodes[t->gpu_node[g->ranks[0]]].machine;
    int total = 0;
    for (int k = 0; k < ng; k++)
        total += groups[k]->n * CPL_MAX_CHANNELS;
    int(*pairs)[2] = malloc((size_t)total * sizeof *pairs);
    struct cpl_layout *owned = given ? NULL : calloc((size_t)ng, sizeof *owned);
    const struct cpl_layout *hs = given ? given : owned;
    int rc = pairs && hs ? 0 : -1;
    for (int k = 0; !rc && owned && k < ng; k++)
        rc = tune_layout(t, groups[k], &owned[k]);
    struct cpl_routes *phase[3] = {&e->flat, &e->intra, &e->inter};
    for (int which = 0; !rc && which < 3; which++) {
        if (which && !hs[0].local) break;
        int np = 0;
        for (int k = 0; k < ng; k++) /* every concurrent group shares the links */
            np += ring_pairs(groups[k], &hs[k], which, one_way, pairs + np);
        rc = path_stats(t, (const int(*)[2])pairs, np, phase[which]) ? 1 : 0;
    }
    /* the tree heads (trees run all-reduces only): pair p's head of machine j to j + 1's */
    if (!rc && hs[0].local && kind == MDL_OP_ALL_REDUCE) {
        int np = 0;
        for (int k = 0; k < ng; k++) {
            struct mdl_tree_shape sh;
            const int *M = cpl_tree_shape(&hs[k], groups[k]->n, &sh);
            if (!M) continue;
            int L = hs[k].local, N = hs[k].nodes;
            for (int tr = 0; tr < sh.trees; tr += 2)
                for (int j = 0; j < N; j++, np++) {
                    int h = mdl_tree_head(&sh, tr);
                    pairs[np][0] = groups[k]->ranks[M[j * L + h]];
                    pairs[np][1] = groups[k]->ranks[M[(j + 1) % N * L + h]];
                }
        }
        rc = path_stats(t, (const int(*)[2])pairs, np, &e->heads) ? 1 : 0;
    }
    if (!rc && hs[0].channels > 1) {
        int np = 0;
        for (int k = 0; k < ng; k++)
            if (hs[k].channels > 1) np += channel_pairs(groups[k], &hs[k], pairs + np);
        rc = path_stats(t, (const int(*)[2])pairs, np, &e->chan) ? 1 : 0;
    }
    /* CollNet: the network reduces, between machines of equal member counts (2..16 each, or
     * one) */
    e->collnet =
        !rc && t->nccl.collnet && e->spans &&
        ((hs[0].local >= 2 && hs[0].local <= MDL_PIPE_MAX_LOCAL) || hs[0].machines == g->n);
    if (!rc && hs[0].nodes) {
        e->nvls_tree = nvls_tree_group(t, g, &hs[0]);
        e->hier = (struct cpl_layout){.local = hs[0].local,
                                      .nodes = hs[0].nodes,
                                      .channels = hs[0].channels,
                                      .machines = hs[0].machines};
    } else if (hs) {
        e->hier.machines = hs[0].machines;
    }
    for (int k = 0; owned && k < ng; k++)
        cpl_layout_release(&owned[k]);
    free(owned);
    free(pairs);
    if (rc) {
        tune_group_env_release(e);
        return rc < 0 ? tps_error_oom(err)
                      : tps_error_set(err, TPS_EINVAL, NULL, 0, 0, NULL, "no route inside group");
    }
    return TPS_OK;
}

int tune_group_env(const struct plat_topo *t, const struct mdl_group *g, struct tune_group_env *e,
                   struct tps_error *err)
{
    return tune_group_env_set(t, &g, 1, MDL_OP_ALL_REDUCE, e, err);
}

int tune_group_env_set(const struct plat_topo *t, const struct mdl_group *const *groups, int ng,
                       enum mdl_op_kind kind, struct tune_group_env *e, struct tps_error *err)
{
    return env_build(t, groups, ng, kind, NULL, e, err);
}

struct tune_env_entry {
    uint64_t hash;
    int shape, ng, nranks;
    int *members; /* ng sizes, then the ranks of every group */
    struct tune_group_env env;
};

/* What of a collective's kind env_build looks at. */
static int env_shape(enum mdl_op_kind kind)
{
    return kind == MDL_OP_SEND_RECV ? 1 : kind == MDL_OP_ALL_REDUCE ? 2 : 0;
}

/* The key of groups[0..ng-1] under `shape`: sizes then ranks in `out` (NULL: only counted).
 * Returns the number of ints. */
static int env_key(const struct mdl_group *const *groups, int ng, int *out)
{
    int k = 0;
    for (int i = 0; i < ng; i++) {
        if (out) out[k] = groups[i]->n;
        k++;
    }
    for (int i = 0; i < ng; i++)
        for (int j = 0; j < groups[i]->n; j++, k++)
            if (out) out[k] = groups[i]->ranks[j];
    return k;
}

static int memo_rehash(struct tune_env_memo *m, int nslot)
{
    int *slot = malloc((size_t)nslot * sizeof *slot);
    if (!slot) return -1;
    for (int i = 0; i < nslot; i++)
        slot[i] = -1;
    for (int i = 0; i < m->n; i++) {
        size_t at = (size_t)m->v[i].hash & (size_t)(nslot - 1);
        while (slot[at] >= 0)
            at = (at + 1) & (size_t)(nslot - 1);
        slot[at] = i;
    }
    free(m->slot);
    m->slot = slot;
    m->nslot = nslot;
    return 0;
}

int tune_group_env_memo(struct tune_env_memo *m, const struct plat_topo *t,
                        const struct mdl_group *const *groups, int ng, enum mdl_op_kind kind,
                        const struct tune_group_env **e, struct tps_error *err)
{
    /* room first, so that the probe ends at the slot a new entry takes */
    if (tps_grow(&m->v, &m->cap, m->n + 1, sizeof *m->v, 64) ||
        ((m->n + 1) * 2 > m->nslot && memo_rehash(m, m->nslot ? 2 * m->nslot : 256)))
        return tps_error_oom(err);
    int shape = env_shape(kind), nk = env_key(groups, ng, NULL);
    int *key = malloc((size_t)nk * sizeof *key);
    if (!key) return tps_error_oom(err);
    env_key(groups, ng, key);
    uint64_t h = TPS_FNV_OFFSET;
    tps_fnv1a(&h, &shape, sizeof shape);
    tps_fnv1a(&h, key, (size_t)nk * sizeof *key);
    size_t at = (size_t)h & (size_t)(m->nslot - 1);
    for (; m->slot[at] >= 0; at = (at + 1) & (size_t)(m->nslot - 1)) {
        const struct tune_env_entry *x = &m->v[m->slot[at]];
        if (x->hash == h && x->shape == shape && x->ng == ng && x->nranks == nk &&
            !memcmp(x->members, key, (size_t)nk * sizeof *key)) {
            free(key);
            *e = &x->env;
            return TPS_OK;
        }
    }
    struct tune_env_entry *x = &m->v[m->n];
    int rc = tune_group_env_set(t, groups, ng, kind, &x->env, err);
    if (rc) {
        free(key);
        return rc;
    }
    x->hash = h;
    x->shape = shape;
    x->ng = ng;
    x->nranks = nk;
    x->members = key;
    m->slot[at] = m->n++;
    *e = &x->env;
    return TPS_OK;
}

void tune_env_memo_release(struct tune_env_memo *m)
{
    for (int i = 0; i < m->n; i++) {
        tune_group_env_release(&m->v[i].env);
        free(m->v[i].members);
    }
    free(m->v);
    free(m->slot);
    memset(m, 0, sizeof *m);
}

void tune_coll_env(const struct tune_group_env *ge, const struct mdl_nccl *nc,
                   enum mdl_coll_proto p, struct mdl_coll_env *out)
{
    memset(out, 0, sizeof *out);
    out->n = ge->n;
    out->local = ge->hier.local;
    out->nodes = ge->hier.nodes;
    out->base_s = nc->base_s[p];
    out->chunk_bytes = nc->chunk_bytes;
    out->nvls_channels = mdl_nccl_nvls_channels(nc);
    out->nvls_chunk_bytes = nc->nvls_chunk_bytes;
    out->nvls = ge->nvls;
    out->nvls_eff = nc->nvls_eff;
    out->nvls_tree = ge->nvls_tree;
    out->collnet = ge->collnet;
    out->machines = ge->hier.machines;
    double hop = nc->hop_s[p], eff = nc->eff[p];
    out->all = cpl_coll_path(&ge->flat, hop, eff);
    out->intra = cpl_coll_path(&ge->intra, hop, eff);
    out->inter = cpl_coll_path(&ge->inter, hop, eff);
    out->channels = ge->hier.channels > 1 ? ge->hier.channels : 1;
    out->chan = cpl_coll_path(&ge->chan, hop, eff);
    out->pairs = ge->hier.channels > 1 ? ge->hier.channels : 1;
    out->heads = cpl_coll_path(&ge->heads, hop, eff);
    out->tree_rate_Bps = mdl_nccl_tree_rate(nc, ge->hier.machines, p);
    out->tree_whole = p == MDL_PROTO_SIMPLE;
    out->p2p_base_s = nc->p2p_base_s;
    /* a pair across machines, or a shift whose slowest pair crosses them */
    mdl_nccl_p2p(nc, ge->hier.machines > 1, ge->hier.machines > 1, &out->p2p);
}

/* Whether the tuner considers algorithm a for collective k on its own: the algorithms NCCL
 * chooses among. All-reduce: ring or, across machines, NCCL's tree (chains inside machines,
 * trees between them; inside one machine NCCL's tree is a chain, which tpsim does not model, so
 * rings run there), or NVLS inside one NVSwitch machine; all-gather, reduce-scatter and
 * broadcast: ring; all-to-all and send/recv: point to point (direct). hierarchical (rings on
 * rails), hierarchical_tree (its trees on rails between phases inside machines) and direct
 * all-reduce/gather/scatter are not NCCL's: they run only when a platform or an op asks. */
static bool nccl_candidate(const struct tune_group_env *ge, enum mdl_op_kind k, int a)
{
    switch (k) {
    case MDL_OP_ALL_REDUCE:
        return a == MDL_ALGO_RING || (ge->spans && a == MDL_ALGO_TREE) ||
               (a == MDL_ALGO_NVLS && ge->nvls) || (a == MDL_ALGO_NVLS_TREE && ge->nvls_tree) ||
               (a == MDL_ALGO_COLLNET && ge->collnet);
    case MDL_OP_ALL_TO_ALL:
    case MDL_OP_SEND_RECV:
        return a == MDL_ALGO_DIRECT;
    default:
        return a == MDL_ALGO_RING;
    }
}

double tune_choose(const struct tune_group_env *ge, const struct mdl_nccl *nc, enum mdl_op_kind k,
                   double bytes, enum mdl_coll_algo *algo, enum mdl_coll_proto *proto,
                   struct tps_error *err)
{
    /* an op's own choice is binding; the platform's applies where it can run the collective
     * (forcing ring for all-reduces must not break a send/recv) */
    enum mdl_coll_algo fa = *algo;
    if (!fa && nc->algo && mdl_coll_supports(k, (enum mdl_coll_algo)nc->algo))
        fa = (enum mdl_coll_algo)nc->algo;
    enum mdl_coll_proto fp = *proto ? *proto : (enum mdl_coll_proto)nc->proto;
    double best = -1;
    for (int a = MDL_ALGO_RING; a < MDL_ALGO_N; a++) {
        if (fa ? a != (int)fa : !nccl_candidate(ge, k, a)) continue;
        /* without routes to measure (user XML) only the ring is predictable */
        if (!fa && ge->flat.bw == 1 && ge->flat.lat == 0 && a != MDL_ALGO_RING &&
            mdl_coll_supports(k, MDL_ALGO_RING))
            continue;
        for (int p = MDL_PROTO_LL; p < MDL_PROTO_N; p++) {
            if ((fp && p != (int)fp) || !(nc->eff[p] > 0)) continue; /* 0 disables */
            if ((a == MDL_ALGO_NVLS || a == MDL_ALGO_NVLS_TREE || a == MDL_ALGO_COLLNET ||
                 (mdl_p2p_kind(k) && nc->p2p_base_s > 0)) &&
                p != MDL_PROTO_SIMPLE)
                continue; /* NVLS, CollNet and NCCL's point-to-point path run Simple */
            struct mdl_coll_env e;
            tune_coll_env(ge, nc, (enum mdl_coll_proto)p, &e);
            double tm = mdl_coll_time(k, (enum mdl_coll_algo)a, bytes, &e);
            /* a tie (to rounding) keeps the earlier algorithm: ring before direct */
            if (tm >= 0 && (best < 0 || tm < best * (1 - 1e-12))) {
                best = tm;
                *algo = (enum mdl_coll_algo)a;
                *proto = (enum mdl_coll_proto)p;
            }
        }
    }
    if (best < 0) {
        const char *why = "";
        if (fa && !mdl_coll_supports(k, fa))
            why = " (it does not implement that collective)";
        else if (fa == MDL_ALGO_HIER || fa == MDL_ALGO_HTREE)
            why = " (it needs at least 2 machines with the same number of members, 2 or more "
                  "each)";
        else if (fa == MDL_ALGO_DIRECT || (!fa && k == MDL_OP_ALL_TO_ALL))
            why = " (direct, how all_to_all runs, needs a group of at most 64 ranks)";
        else if (fa == MDL_ALGO_NVLS)
            why = " (NVLS needs 'nvls: true' in the platform's nccl section, the Simple protocol "
                  "and a group inside one NVSwitch machine)";
        else if (fa == MDL_ALGO_NVLS_TREE)
            why = " (NVLS-tree needs 'nvls: true' and 'nvls_tree: true' in the platform's nccl "
                  "section, the Simple protocol, and a group of 2 or more NVSwitch machines with "
                  "the same number of members, 2 to 16 each)";
        else if (fa == MDL_ALGO_COLLNET)
            why = " (CollNet needs 'collnet: true' in the platform's nccl section, the Simple "
                  "protocol, and a group over 2 or more machines with the same number of members, "
                  "1 to 16 each)";
        tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "algorithm",
                      "algorithm '%s' cannot run %s over %d ranks%s",
                      fa ? mdl_algo_name(fa) : "auto", mdl_op_kind_name(k), ge->n, why);
    }
    return best;
}

/* A tuner decision, reused by every op of the group with the same collective and size. */
struct choice {
    int kind, algo, proto;
    double bytes;
    int out_algo, out_proto;
    double t; /* its closed-form time */
};

static int plan_pairs(const struct mdl_program *p, struct cpl_plan *plan, struct tps_error *err);

/* Every group's layout, once, into the plan. */
static int plan_layouts(const struct mdl_program *p, const struct plat_topo *t,
                        struct cpl_plan *plan, struct tps_error *err)
{
    memset(plan, 0, sizeof *plan);
    if (!(plan->layout = calloc((size_t)p->ngroups + 1, sizeof *plan->layout)))
        return tps_error_oom(err);
    plan->ngroups = p->ngroups;
    for (int g = 0; g < p->ngroups; g++)
        if (tune_layout(t, &p->groups[g], &plan->layout[g]) != 0) return tps_error_oom(err);
    return TPS_OK;
}

int tune_program(struct mdl_program *p, const struct plat_topo *t, struct cpl_plan *plan,
                 struct tps_error *err)
{
    if (plan && plan_layouts(p, t, plan, err)) {
        cpl_plan_release(plan);
        return err->code;
    }
    for (int g = 0; g < p->ngroups; g++) {
        const struct mdl_group *grp = &p->groups[g];
        struct tune_group_env ge;
        int env_ready = 0, rc = 0, nch = 0, cap = 0;
        struct choice *ch = NULL;
        /* a group's collectives are on its members only (mdl_program_check) */
        for (int m = 0; m < p->groups[g].n && !rc; m++) {
            int r = p->groups[g].ranks[m];
            for (int i = 0; i < p->ranks[r].nops && !rc; i++) {
                struct mdl_op *op = &p->ranks[r].ops[i];
                if (op->group != g || !mdl_op_is_coll((enum mdl_op_kind)op->kind)) continue;
                if (!op->gran) op->gran = (uint8_t)t->nccl.gran;
                /* a collective of latency granularity takes its closed form: tuned always */
                bool lat = op->gran == MDL_GRAN_LATENCY;
                if (op->algo && op->proto && !lat) continue;
                int c = 0;
                while (c < nch && (ch[c].kind != op->kind || ch[c].bytes != op->bytes ||
                                   ch[c].algo != op->algo || ch[c].proto != op->proto))
                    c++;
                if (c == nch) {
                    if (!env_ready && (rc = env_build(t, &grp, 1, MDL_OP_ALL_REDUCE,
                                                      plan ? &plan->layout[g] : NULL, &ge, err)))
                        break;
                    env_ready = 1;
                    enum mdl_coll_algo a = (enum mdl_coll_algo)op->algo;
                    enum mdl_coll_proto pr = (enum mdl_coll_proto)op->proto;
                    double tc = tune_choose(&ge, &t->nccl, (enum mdl_op_kind)op->kind, op->bytes,
                                            &a, &pr, err);
                    if (tc < 0) {
                        if (p->groups[g].n >= 2) {
                            rc = err->code;
                            break;
                        }
                        a = MDL_ALGO_RING;
                        pr = MDL_PROTO_SIMPLE;
                        tc = 0;
                    }
                    if (tps_grow(&ch, &cap, nch + 1, sizeof *ch, 8)) {
                        rc = tps_error_oom(err);
                        break;
                    }
                    ch[nch++] =
                        (struct choice){op->kind, op->algo, op->proto, op->bytes, a, pr, tc};
                }
                op->algo = (uint8_t)ch[c].out_algo;
                op->proto = (uint8_t)ch[c].out_proto;
                if (lat) op->dur_s = ch[c].t;
            }
        }
        free(ch);
        if (env_ready) tune_group_env_release(&ge);
        if (rc) {
            if (plan) cpl_plan_release(plan);
            return rc;
        }
    }
    int rc = plan ? plan_pairs(p, plan, err) : TPS_OK;
    if (rc) cpl_plan_release(plan);
    return rc;
}

/* ------------------------------------------------------------------ message pairs */

struct pairs {
    int n, cap;
    int (*v)[2];
    int oom;
};

static void pair_add(struct pairs *ps, int a, int b)
{
    if (a == b || ps->oom) return;
    if (tps_grow(&ps->v, &ps->cap, ps->n + 1, sizeof *ps->v, 256)) {
        ps->oom = 1;
        return;
    }
    ps->v[ps->n][0] = a;
    ps->v[ps->n][1] = b;
    ps->n++;
}

static int pair_cmp(const void *x, const void *y)
{
    const int *a = x, *b = y;
    return a[0] != b[0] ? (a[0] > b[0]) - (a[0] < b[0]) : (a[1] > b[1]) - (a[1] < b[1]);
}

static void group_pairs(const struct mdl_group *g, const struct cpl_layout *layout, int kind,
                        int algo, struct pairs *ps)
{
    int n = g->n;
    const int *R = g->ranks;
    if (n < 2) return;
    switch (algo) {
    case MDL_ALGO_NVLS: /* through the switch: every GPU's link carries its share to every other */
    case MDL_ALGO_DIRECT:
        if (algo == MDL_ALGO_DIRECT && kind == MDL_OP_SEND_RECV && n > 2) {
            for (int i = 0; i < n; i++) /* a shift: every member to the next */
                pair_add(ps, R[i], R[(i + 1) % n]);
        } else if (algo == MDL_ALGO_DIRECT &&
                   (kind == MDL_OP_SEND_RECV || kind == MDL_OP_BROADCAST)) {
            for (int i = 1; i < n; i++)
                pair_add(ps, R[0], R[i]);
        } else {
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++)
                    pair_add(ps, R[i], R[j]);
        }
        break;
    case MDL_ALGO_COLLNET: { /* every member of a machine; the next machine on its rail */
        const struct cpl_layout h = *layout;
        int L = h.local ? h.local : 1, N = h.local ? h.nodes : n;
        for (int j = 0; j < N; j++)
            for (int l = 0; l < L; l++) {
                int me = h.local ? R[h.member[j * L + l]] : R[j];
                for (int q = 1; q < L; q++)
                    pair_add(ps, me, R[h.member[j * L + (l + q) % L]]);
                pair_add(ps, me, h.local ? R[h.member[(j + 1) % N * L + l]] : R[(j + 1) % N]);
            }
        break;
    }
    case MDL_ALGO_TREE: {
        const struct cpl_layout h = *layout;
        struct mdl_tree_shape sh;
        const int *M = cpl_tree_shape(&h, n, &sh); /* shape position -> member */
        for (int tr = 0; tr < sh.trees; tr++)
            for (int i = 0; i < n; i++) {
                int parent, ch[MDL_TREE_ARITY];
                mdl_tree_links(&sh, tr, i, &parent, ch);
                if (parent >= 0) {
                    int a = R[M ? M[i] : i], b = R[M ? M[parent] : parent];
                    pair_add(ps, a, b);
                    pair_add(ps, b, a);
                }
            }
        break;
    }
    case MDL_ALGO_HIER:
    case MDL_ALGO_HTREE:
    case MDL_ALGO_NVLS_TREE: {
        const struct cpl_layout h = *layout;
        int L = h.local, N = h.nodes;
        for (int j = 0; j < N; j++)
            for (int l = 0; l < L; l++) {
                int me = R[h.member[j * L + l]];
                /* NVLS-tree: every member of the machine, through the switch */
                for (int q = 1; q < (algo == MDL_ALGO_NVLS_TREE ? L : 2); q++)
                    pair_add(ps, me, R[h.member[j * L + (l + q) % L]]);
                if (algo == MDL_ALGO_HIER) {
                    pair_add(ps, me, R[h.member[((j + 1) % N) * L + l]]);
                    continue;
                }
                struct mdl_tree_shape rail;
                mdl_tree_shape_flat(&rail, N);
                for (int tr = 0; tr < 2; tr++) { /* the rail's trees over the machines */
                    int parent, ch[MDL_TREE_ARITY];
                    mdl_tree_links(&rail, tr, j, &parent, ch);
                    if (parent < 0) continue;
                    pair_add(ps, me, R[h.member[parent * L + l]]);
                    pair_add(ps, R[h.member[parent * L + l]], me);
                }
            }
        break;
    }
    default: /* ring (in channels across machines) and broadcast chain */
        if (kind != MDL_OP_BROADCAST && kind != MDL_OP_REDUCE) {
            const struct cpl_layout h = *layout;
            int(*cp)[2] = h.channels > 1 ? malloc((size_t)n * h.channels * sizeof *cp) : NULL;
            int np = cp ? channel_pairs(g, &h, cp) : 0;
            for (int i = 0; i < np; i++)
                pair_add(ps, cp[i][0], cp[i][1]);
            if (h.channels > 1 && !cp) ps->oom = 1;
            int done = h.channels > 1;
            free(cp);
            if (done) break;
        }
        for (int i = 0; i < n; i++)
            pair_add(ps, R[i], R[(i + 1) % n]);
    }
}

/* The plan's message pairs, from every group's layout under the algorithms chosen. */
static int plan_pairs(const struct mdl_program *p, struct cpl_plan *plan, struct tps_error *err)
{
    struct pairs ps = {0};
    /* one entry per (group, kind, algorithm) in use */
    unsigned char *seen = calloc((size_t)p->ngroups * MDL_OP_NKINDS * MDL_ALGO_N + 1, 1);
    if (!seen) return tps_error_oom(err);
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++) {
            const struct mdl_op *op = &p->ranks[r].ops[i];
            if (!mdl_op_is_coll((enum mdl_op_kind)op->kind) || op->group < 0) continue;
            size_t key = ((size_t)op->group * MDL_OP_NKINDS + op->kind) * MDL_ALGO_N + op->algo;
            if (seen[key]) continue;
            seen[key] = 1;
            group_pairs(&p->groups[op->group], &plan->layout[op->group], op->kind, op->algo, &ps);
        }
    free(seen);
    if (ps.oom) {
        free(ps.v);
        return tps_error_oom(err);
    }
    if (ps.n) qsort(ps.v, (size_t)ps.n, sizeof *ps.v, pair_cmp);
    int u = 0;
    for (int i = 0; i < ps.n; i++)
        if (u == 0 || pair_cmp(ps.v[i], ps.v[u - 1]) != 0) memcpy(ps.v[u++], ps.v[i], sizeof *ps.v);
    plan->pairs = ps.v;
    plan->npairs = u;
    return TPS_OK;
}
