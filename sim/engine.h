/* engine.h - replays a tuned program on a platform with SimGrid, in a child process.
 *
 * sim_engine_run() forks; the child loads the platform into SimGrid, starts one actor per
 * (rank, stream), replays every op (compute ops sleep their duration, collectives run their
 * tuned algorithm as messages through SimGrid's network model with contention), and sends the
 * op times back through a pipe. The engine only reads the program and its communication plan:
 * checking it (mdl_program_check), choosing how each collective runs and laying its groups over
 * the machines (tune_program, which returns the plan) happen before, in the pipeline
 * (pipeline/pipeline.h); nothing here includes the tuner. A SimGrid abort or a crash of the child
 * becomes an error here, never a crash of the caller. Rank r runs on GPU r of the topology. Units:
 * seconds, bytes.
 */
#ifndef SIM_ENGINE_H
#define SIM_ENGINE_H

#include "common/error.h"
#include "core/commplan.h"
#include "core/timing.h"
#include "models/program.h"
#include "platforms/topo.h"

/* Whether a simulation that runs for more than a couple of seconds reports, once a second on
 * stderr, how many of its ops are done (one line rewritten in place, cleared at the end): for a
 * terminal, where one simulation runs at a time. Off by default. Counted as ops complete, it
 * adds no event to the simulation: the results are the same either way. */
void sim_engine_progress(int on);

/* Simulates p (checked, every collective tuned) on t with the plan tune_program gave and fills
 * *tm (release it with timing_release, even on failure). */
int sim_engine_run(const struct mdl_program *p, const struct plat_topo *t,
                   const struct cpl_plan *plan, struct timing *tm, struct tps_error *err);

#endif
