/* engine.h - replays a program on a platform with SimGrid, in a child process.
 *
 * sim_engine_run() forks; the child loads the platform into SimGrid, starts one actor per
 * (rank, stream), replays every op (compute ops sleep their duration, collectives run as ring
 * messages through SimGrid's network model with contention), and sends the op times back through
 * a pipe. A SimGrid abort or a crash of the child becomes an error here, never a crash of the
 * caller. Rank r runs on GPU r of the topology. Units: seconds, bytes.
 */
#ifndef SIM_ENGINE_H
#define SIM_ENGINE_H

#include "common/error.h"
#include "models/program.h"
#include "platforms/topo.h"

struct sim_stats {
    double end_s;       /* simulated time when the last op ended */
    double *bytes_sent; /* per rank bytes sent by collectives; owned, nranks entries */
    int nranks;
};

/* Fills t_start/t_end of every op of *p and *st (release with sim_stats_release). */
int sim_engine_run(struct mdl_program *p, const struct plat_topo *t, struct sim_stats *st,
                   struct tps_error *err);
void sim_stats_release(struct sim_stats *st);

/* How a lone collective runs: enum mdl_coll_{algo,proto,gran} values, 0 = tuner's choice. */
struct sim_coll_how {
    int algo, proto, gran;
};

/* Simulates one collective k of `bytes` over GPUs 0..ranks-1 and stores its time; *how gives
 * forced choices and receives those made. */
int sim_collective_time(const struct plat_topo *t, enum mdl_op_kind k, int ranks, double bytes,
                        struct sim_coll_how *how, double *time_s, struct tps_error *err);

#endif
