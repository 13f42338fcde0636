/* simxml.h - turns a plain-data topology into a SimGrid platform XML file.
 *
 * Links: a SPLITDUPLEX link per full-duplex link, a SHARED link per shared link and per
 * forwarding node (root complex, socket). Only the GPU pairs that exchange messages get routes.
 * One machine: a single zone with routing="Full" and a host per GPU. Several machines: a zone per
 * machine (its GPUs, a gateway router, its routes), zone routes across the network between them,
 * and every link declared first in a zone of its own so that SimGrid finds links by name in
 * constant time; this keeps loading linear in the machine count (../shared/design/simgrid.md).
 * All link latencies are written as 0: the engine adds each route's latency itself before a
 * message, so that max-min sharing treats every flow alike (SimGrid weights flows by route
 * latency otherwise).
 */
#ifndef PLAT_SIMXML_H
#define PLAT_SIMXML_H

#include <stdio.h>

#include "common/error.h"
#include "platforms/topo.h"

/* Writes the platform for the npairs (src, dst) GPU pairs, and fills their lat_s and bw_Bps:
 * hosts for GPUs 0..nhosts-1 (the ranks simulated; with `used`, only those g with used[g]), the
 * links their routes and the link events use. Unused parts of the platform are left out:
 * SimGrid's setup grows faster than linearly in hosts (and in machine zones), and a
 * 65,536-machine preset simulated on a few GPUs must not pay for the rest. */
int plat_simxml_write(const struct plat_topo *t, struct plat_pair *pairs, int npairs, int nhosts,
                      const unsigned char *used, FILE *f, struct tps_error *err);

#endif
