/* simxml.c - SimGrid XML generation from a topology (see simxml.h). Units in the XML:
 * bandwidth in Bps (bytes/s), latency 0s. */
#include "platforms/simxml.h"

#include <stdlib.h>
#include <string.h>

static void hop_write(const struct plat_topo *t, const struct plat_hop *hp, FILE *f)
{
    if (hp->link < 0)
        fprintf(f, "<link_ctn id=\"F%d\"/>", hp->node);
    else if (t->links[hp->link].shared)
        fprintf(f, "<link_ctn id=\"L%d\"/>", hp->link);
    else
        fprintf(f, "<link_ctn id=\"L%d\" direction=\"%s\"/>", hp->link, hp->up ? "UP" : "DOWN");
}

static void route_write(const struct plat_topo *t, const char *tag, const char *src,
                        const char *dst, const char *extra, const struct plat_hop *h, int n,
                        FILE *f)
{
    fprintf(f, "  <%s src=\"%s\" dst=\"%s\"%s symmetrical=\"NO\">", tag, src, dst, extra);
    for (int i = 0; i < n; i++)
        hop_write(t, &h[i], f);
    fprintf(f, "</%s>\n", tag);
}

static const char *gpu_name(const struct plat_topo *t, int g)
{
    return t->nodes[t->gpu_node[g]].name;
}

/* The links (and forwarding nodes) a route or a link event uses: the only ones written, so
 * that what SimGrid builds grows with the GPUs simulated, not with the platform's size. */
struct used {
    unsigned char *link, *fwd;
    const unsigned char *host; /* NULL: every GPU below nhosts */
};

static bool host_used(const struct used *u, int g)
{
    return !u->host || u->host[g];
}

static void links_write(const struct plat_topo *t, const struct used *u, FILE *f)
{
    for (int l = 0; l < t->nlinks; l++)
        if (u->link[l])
            fprintf(f,
                    "  <link id=\"L%d\" bandwidth=\"%.17gBps\" latency=\"0s\" "
                    "sharing_policy=\"%s\"/>\n",
                    l, t->links[l].bw_Bps, t->links[l].shared ? "SHARED" : "SPLITDUPLEX");
    for (int n = 0; n < t->nnodes; n++)
        if (t->nodes[n].fwd_Bps > 0 && u->fwd[n])
            fprintf(f,
                    "  <link id=\"F%d\" bandwidth=\"%.17gBps\" latency=\"0s\" "
                    "sharing_policy=\"SHARED\"/>\n",
                    n, t->nodes[n].fwd_Bps);
}

/* ------------------------------------------------------------ split of a route by machine */

struct split {
    int ma, mb;  /* machines of source and destination */
    int up, mid; /* hops [0, up) climb out of ma, [up, up+mid) cross the network, rest descend */
};

/* Splits route r from GPU a; returns -1 when it does not leave ma once into the network and
 * enter mb from it (or stay in ma when ma == mb). */
static int route_split(const struct plat_topo *t, int a, const struct plat_route *r,
                       struct split *s)
{
    int v = t->gpu_node[a];
    s->ma = t->nodes[v].machine;
    s->up = s->mid = 0;
    int phase = 0, cls_last = s->ma; /* 0 up, 1 network, 2 down */
    for (int i = 0; i < r->nhops; i++) {
        const struct plat_hop *h = &r->hops[i];
        int node = h->link < 0
                       ? h->node
                       : (t->links[h->link].a == v ? t->links[h->link].b : t->links[h->link].a);
        if (h->link >= 0) v = node;
        int m = t->nodes[node].machine;
        if (phase == 0) {
            if (m == s->ma) {
                s->up = i + 1;
                continue;
            }
            if (m != -1) return -1;
            s->up = i + 1; /* the link into the network still belongs to the source's side */
            phase = 1;
            continue;
        }
        if (phase == 1) {
            if (m == -1) {
                s->mid++;
                continue;
            }
            cls_last = m;
            phase = 2;
            continue;
        }
        if (m != cls_last) return -1;
    }
    s->mb = t->nodes[v].machine;
    if (phase == 0) return s->mb == s->ma ? 0 : -1;
    return phase == 2 && s->mb == cls_last && s->mb != s->ma ? 0 : -1;
}

static int hops_equal(const struct plat_hop *x, const struct plat_hop *y, int n)
{
    for (int i = 0; i < n; i++)
        if (x[i].link != y[i].link || (x[i].link < 0 ? x[i].node != y[i].node : x[i].up != y[i].up))
            return 0;
    return 1;
}

struct zkey {
    int a, b, pair;
};

static int zkey_cmp(const void *x, const void *y)
{
    const struct zkey *p = x, *q = y;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    if (p->b != q->b) return p->b < q->b ? -1 : 1;
    return 0;
}

/* Writes the zoned platform; returns 1 when the routes do not fit zones (caller writes flat). */
static int write_zoned(const struct plat_topo *t, const struct plat_pair *pairs, int n,
                       const struct plat_route *routes, int nhosts, const struct used *use, FILE *f)
{
    int M = t->machines;
    struct split *sp = malloc((size_t)(n + 1) * sizeof *sp);
    int *up_of = malloc((size_t)t->ngpus * sizeof *up_of); /* pair whose up part GPU uses */
    int *down_of =
        malloc((size_t)t->ngpus * sizeof *down_of); /* pair whose down part ends at GPU */
    struct zkey *zk = malloc((size_t)(n + 1) * sizeof *zk);
    int *first = calloc((size_t)M + 1, sizeof *first),
        *gpus = malloc((size_t)t->ngpus * sizeof *gpus);
    int *ifirst = calloc((size_t)M + 1, sizeof *ifirst),
        *intra = malloc((size_t)(n + 1) * sizeof *intra);
    int rc = sp && up_of && down_of && zk && first && gpus && ifirst && intra ? 0 : -1;
    for (int g = 0; !rc && g < t->ngpus; g++) {
        up_of[g] = down_of[g] = -1;
        int m = t->nodes[t->gpu_node[g]].machine;
        if (m < 0 || m >= M) rc = 1;
    }
    int nz = 0;
    for (int i = 0; !rc && i < n; i++) {
        const struct plat_route *r = &routes[i];
        if (route_split(t, pairs[i].src, r, &sp[i])) {
            rc = 1;
            break;
        }
        if (sp[i].ma == sp[i].mb) continue;
        int a = pairs[i].src, b = pairs[i].dst, u = up_of[a], d = down_of[b];
        if (u >= 0 && (sp[u].up != sp[i].up || !hops_equal(routes[u].hops, r->hops, sp[i].up)))
            rc = 1;
        int dn = r->nhops - sp[i].up - sp[i].mid;
        if (d >= 0 &&
            (routes[d].nhops - sp[d].up - sp[d].mid != dn ||
             !hops_equal(routes[d].hops + routes[d].nhops - dn, r->hops + r->nhops - dn, dn)))
            rc = 1;
        if (u < 0) up_of[a] = i;
        if (d < 0) down_of[b] = i;
        zk[nz++] = (struct zkey){sp[i].ma, sp[i].mb, i};
    }
    if (!rc && nz) qsort(zk, (size_t)nz, sizeof *zk, zkey_cmp);
    for (int i = 1; !rc && i < nz; i++) {
        if (zkey_cmp(&zk[i], &zk[i - 1])) continue;
        const struct split *x = &sp[zk[i].pair], *y = &sp[zk[i - 1].pair];
        if (x->mid != y->mid || !hops_equal(routes[zk[i].pair].hops + x->up,
                                            routes[zk[i - 1].pair].hops + y->up, x->mid))
            rc = 1;
    }
    if (rc == 0) {
        /* the GPUs simulated, grouped by machine */
        for (int g = 0; g < nhosts; g++)
            if (host_used(use, g)) first[t->nodes[t->gpu_node[g]].machine + 1]++;
        for (int m = 0; m < M; m++)
            first[m + 1] += first[m];
        for (int i = 0; i < n; i++)
            if (sp[i].ma == sp[i].mb) ifirst[sp[i].ma + 1]++;
        for (int m = 0; m < M; m++)
            ifirst[m + 1] += ifirst[m];
        int *fill = calloc((size_t)M, sizeof *fill), *ifill = calloc((size_t)M, sizeof *ifill);
        if (!fill || !ifill) rc = -1;
        for (int g = 0; !rc && g < nhosts; g++) {
            if (!host_used(use, g)) continue;
            int m = t->nodes[t->gpu_node[g]].machine;
            gpus[first[m] + fill[m]++] = g;
        }
        for (int i = 0; !rc && i < n; i++)
            if (sp[i].ma == sp[i].mb) intra[ifirst[sp[i].ma] + ifill[sp[i].ma]++] = i;
        free(fill);
        free(ifill);
    }
    if (rc == 0) {
        fprintf(f, "<zone id=\"tpsim\" routing=\"Full\">\n<zone id=\"links\" routing=\"None\">\n");
        links_write(t, use, f);
        /* SimGrid forbids empty zone routes: machines joined by a single switch cross a
         * no-op link of their own instead (one per source machine, so that it does not tie
         * every flow of the fabric into one max-min system) */
        for (int m = 0; m < M; m++)
            if (first[m] < first[m + 1])
                fprintf(f,
                        "  <link id=\"X%d\" bandwidth=\"1e18Bps\" latency=\"0s\" "
                        "sharing_policy=\"FATPIPE\"/>\n",
                        m);
        fprintf(f, "</zone>\n");
        /* pairs are sorted by source: the intra-machine ones of machine m are found by source */
        for (int m = 0; m < M; m++) {
            if (first[m] == first[m + 1]) continue;
            char gw[32];
            snprintf(gw, sizeof gw, "gw%d", m);
            fprintf(f, "<zone id=\"m%d\" routing=\"Full\">\n", m);
            for (int k = first[m]; k < first[m + 1]; k++)
                fprintf(f, "  <host id=\"%s\" speed=\"1f\"/>\n", gpu_name(t, gpus[k]));
            fprintf(f, "  <router id=\"%s\"/>\n", gw);
            for (int k = first[m]; k < first[m + 1]; k++) {
                int g = gpus[k];
                if (up_of[g] >= 0)
                    route_write(t, "route", gpu_name(t, g), gw, "", routes[up_of[g]].hops,
                                sp[up_of[g]].up, f);
                if (down_of[g] >= 0) {
                    const struct plat_route *r = &routes[down_of[g]];
                    int dn = r->nhops - sp[down_of[g]].up - sp[down_of[g]].mid;
                    route_write(t, "route", gw, gpu_name(t, g), "", r->hops + r->nhops - dn, dn, f);
                }
            }
            for (int k = ifirst[m]; k < ifirst[m + 1]; k++) {
                int i = intra[k];
                route_write(t, "route", gpu_name(t, pairs[i].src), gpu_name(t, pairs[i].dst), "",
                            routes[i].hops, routes[i].nhops, f);
            }
            fprintf(f, "</zone>\n");
        }
        for (int i = 0; i < nz; i++) {
            if (i && !zkey_cmp(&zk[i], &zk[i - 1])) continue;
            const struct split *x = &sp[zk[i].pair];
            char src[32], dst[32], extra[96];
            snprintf(src, sizeof src, "m%d", x->ma);
            snprintf(dst, sizeof dst, "m%d", x->mb);
            snprintf(extra, sizeof extra, " gw_src=\"gw%d\" gw_dst=\"gw%d\"", x->ma, x->mb);
            if (x->mid)
                route_write(t, "zoneRoute", src, dst, extra, routes[zk[i].pair].hops + x->up,
                            x->mid, f);
            else
                fprintf(f,
                        "  <zoneRoute src=\"%s\" dst=\"%s\"%s symmetrical=\"NO\"><link_ctn "
                        "id=\"X%d\"/></zoneRoute>\n",
                        src, dst, extra, x->ma);
        }
        fprintf(f, "</zone>\n");
    }
    free(sp);
    free(up_of);
    free(down_of);
    free(zk);
    free(first);
    free(gpus);
    free(ifirst);
    free(intra);
    return rc;
}

int plat_simxml_write(const struct plat_topo *t, struct plat_pair *pairs, int npairs, int nhosts,
                      const unsigned char *used, FILE *f, struct tps_error *err)
{
    struct plat_route *routes = malloc((size_t)(npairs + 1) * sizeof *routes);
    struct used u = {calloc((size_t)t->nlinks + 1, 1), calloc((size_t)t->nnodes + 1, 1), used};
    if (!routes || !u.link || !u.fwd) {
        free(routes);
        free(u.link);
        free(u.fwd);
        return tps_error_oom(err);
    }
    if (nhosts > t->ngpus) nhosts = t->ngpus;
    for (int i = 0; i < t->nevents; i++) /* the engine finds a slowed link by its name */
        u.link[t->events[i].link] = 1;
    for (int i = 0; i < npairs; i++) {
        if (plat_topo_route(t, pairs[i].src, pairs[i].dst, &routes[i]) != 0) {
            free(routes);
            free(u.link);
            free(u.fwd);
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, NULL, "no route from gpu%d to gpu%d",
                                 pairs[i].src, pairs[i].dst);
        }
        for (int h = 0; h < routes[i].nhops; h++) {
            const struct plat_hop *hp = &routes[i].hops[h];
            if (hp->link < 0)
                u.fwd[hp->node] = 1;
            else
                u.link[hp->link] = 1;
        }
        pairs[i].lat_s = routes[i].lat_s;
        pairs[i].bw_Bps = routes[i].bw_Bps;
    }
    fprintf(f, "<?xml version='1.0'?>\n"
               "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
               "<platform version=\"4.1\">\n");
    int rc = t->machines > 1 ? write_zoned(t, pairs, npairs, routes, nhosts, &u, f) : 1;
    if (rc < 0) {
        free(routes);
        free(u.link);
        free(u.fwd);
        return tps_error_oom(err);
    }
    if (rc == 1) {
        fprintf(f, "<zone id=\"tpsim\" routing=\"Full\">\n");
        for (int g = 0; g < nhosts; g++)
            if (host_used(&u, g)) fprintf(f, "  <host id=\"%s\" speed=\"1f\"/>\n", gpu_name(t, g));
        links_write(t, &u, f);
        for (int i = 0; i < npairs; i++)
            route_write(t, "route", gpu_name(t, pairs[i].src), gpu_name(t, pairs[i].dst), "",
                        routes[i].hops, routes[i].nhops, f);
        fprintf(f, "</zone>\n");
    }
    fprintf(f, "</platform>\n");
    free(routes);
    free(u.link);
    free(u.fwd);
    if (ferror(f))
        return tps_error_set(err, TPS_EIO, NULL, 0, 0, NULL, "cannot write platform XML");
    return TPS_OK;
}
