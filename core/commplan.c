/* commplan.c - a program's communication plan: layouts of groups over machines, ring channels,
 * tree shapes, route paths (see commplan.h). */
#include "core/commplan.h"

#include <stdlib.h>
#include <string.h>

void cpl_layout_release(struct cpl_layout *h)
{
    free(h->node_of);
    free(h->local_of);
    free(h->first);
    free(h->member);
    memset(h, 0, sizeof *h);
}

/* Channel j enters machine `node` at its member j * (m / channels), m its member count. */
static int channel_shift(const struct cpl_layout *h, int j, int node)
{
    int m = h->first[node + 1] - h->first[node];
    return j * (m / h->channels) % m;
}

int cpl_channel_member(const struct cpl_layout *h, int j, int p)
{
    int node = h->node_of[h->member[p]], q = p - h->first[node];
    int m = h->first[node + 1] - h->first[node];
    return h->member[h->first[node] + (q + channel_shift(h, j, node)) % m];
}

int cpl_channel_pos(const struct cpl_layout *h, int j, int i)
{
    int node = h->node_of[i], m = h->first[node + 1] - h->first[node];
    return h->first[node] + (h->local_of[i] - channel_shift(h, j, node) + m) % m;
}

const int *cpl_tree_shape(const struct cpl_layout *h, int n, struct mdl_tree_shape *sh)
{
    if (h->local >= 2 && h->nodes >= 2 &&
        !mdl_tree_shape_machines(sh, h->nodes, h->local, h->channels > 0 ? h->channels : 1))
        return h->member;
    mdl_tree_shape_flat(sh, n);
    return NULL;
}

void cpl_plan_release(struct cpl_plan *pl)
{
    for (int g = 0; pl->layout && g < pl->ngroups; g++)
        cpl_layout_release(&pl->layout[g]);
    free(pl->layout);
    free(pl->pairs);
    memset(pl, 0, sizeof *pl);
}

struct mdl_coll_path cpl_coll_path(const struct cpl_routes *r, double hop, double eff)
{
    return (struct mdl_coll_path){.alpha_s = r->lat + hop,
                                  .bw_Bps = r->bw * eff,
                                  .ring_alpha_s = r->mean_lat + hop,
                                  .ring_bw_Bps = r->mean_bw * eff};
}
