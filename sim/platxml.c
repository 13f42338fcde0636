/* platxml.c - SimGrid XML generation from a topology (see platxml.h). Units in the XML:
 * bandwidth in Bps (bytes/s), latency 0s. */
#include "platxml.h"

int sim_platxml_write(const struct plat_topo *t, const int (*pairs)[2], int npairs, FILE *f,
                      struct tps_error *err)
{
    fprintf(f, "<?xml version='1.0'?>\n"
               "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
               "<platform version=\"4.1\">\n"
               "<zone id=\"tpsim\" routing=\"Full\">\n");
    for (int g = 0; g < t->ngpus; g++)
        fprintf(f, "  <host id=\"%s\" speed=\"1f\"/>\n", t->nodes[t->gpu_node[g]].name);
    for (int l = 0; l < t->nlinks; l++)
        fprintf(
            f, "  <link id=\"L%d\" bandwidth=\"%.17gBps\" latency=\"0s\" sharing_policy=\"%s\"/>\n",
            l, t->links[l].bw_Bps, t->links[l].shared ? "SHARED" : "SPLITDUPLEX");
    for (int n = 0; n < t->nnodes; n++)
        if (t->nodes[n].fwd_Bps > 0)
            fprintf(f,
                    "  <link id=\"F%d\" bandwidth=\"%.17gBps\" latency=\"0s\" "
                    "sharing_policy=\"SHARED\"/>\n",
                    n, t->nodes[n].fwd_Bps);
    for (int i = 0; i < npairs; i++) {
        struct plat_route r;
        if (plat_topo_route(t, pairs[i][0], pairs[i][1], &r) != 0)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, NULL, "no route from gpu%d to gpu%d",
                                 pairs[i][0], pairs[i][1]);
        fprintf(f, "  <route src=\"%s\" dst=\"%s\" symmetrical=\"NO\">\n",
                t->nodes[t->gpu_node[pairs[i][0]]].name, t->nodes[t->gpu_node[pairs[i][1]]].name);
        for (int h = 0; h < r.nhops; h++) {
            const struct plat_hop *hp = &r.hops[h];
            if (hp->link < 0)
                fprintf(f, "    <link_ctn id=\"F%d\"/>\n", hp->node);
            else if (t->links[hp->link].shared)
                fprintf(f, "    <link_ctn id=\"L%d\"/>\n", hp->link);
            else
                fprintf(f, "    <link_ctn id=\"L%d\" direction=\"%s\"/>\n", hp->link,
                        hp->up ? "UP" : "DOWN");
        }
        fprintf(f, "  </route>\n");
    }
    fprintf(f, "</zone>\n</platform>\n");
    if (ferror(f))
        return tps_error_set(err, TPS_EIO, NULL, 0, 0, NULL, "cannot write platform XML");
    return TPS_OK;
}
