/* platxml.h - turns a plain-data topology into a SimGrid platform XML file.
 *
 * One zone with routing="Full": a host per GPU, a SPLITDUPLEX link per full-duplex link, a
 * SHARED link per shared link and per forwarding node (root complex, socket), and an explicit
 * route for each requested (src, dst) GPU pair. All link latencies are written as 0: the engine
 * adds each route's latency itself before a message, so that max-min sharing treats every flow
 * alike (SimGrid weights flows by route latency otherwise: ../shared/design/simgrid.md).
 */
#ifndef SIM_PLATXML_H
#define SIM_PLATXML_H

#include <stdio.h>

#include "common/error.h"
#include "platforms/topo.h"

/* pairs holds npairs (src, dst) GPU index pairs. */
int sim_platxml_write(const struct plat_topo *t, const int (*pairs)[2], int npairs, FILE *f,
                      struct tps_error *err);

#endif
