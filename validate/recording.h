/* recording.h - what a recorded trace says beyond its ops, as `tpsim validate trace` reads it:
 * which iteration each op belongs to, which ops ran during warm-up, and when the host launched
 * each op.
 *
 * Iterations: a recording marks them (the tracer's profiler windows or NVTX ranges naming an
 * iteration or step, a Kineto import's profiler steps). Failing that, an iteration starts at
 * each return to the first layer's forward, which is all a plain recording shows; without layers
 * the whole recording is one iteration. Warm-up: a recording that marks neither iterations nor
 * warm-up (tracer traces before version 4) gets the first op of each kind, size and group on a
 * rank marked: CUDA loads a kernel on its first call, and NCCL connects a communicator on its
 * first collective.
 *
 * Host launch times: when the recording measured none, they are read from the GPU's idle gaps.
 * An op that started more than REC_HOST_GAP_S after the GPU could have run it (its stream's
 * previous op and its dependencies had ended) waited for the host: its launch is its recorded
 * start. Other ops were launched with the op before them (the host was ahead). Replayed on the
 * platform it was recorded on, the trace then keeps its host-bound stretches; on a faster one the
 * GPU-bound stretches shrink and the host-bound ones do not. Units: seconds.
 */
#ifndef VAL_RECORDING_H
#define VAL_RECORDING_H

#include "models/program.h"

/* Kernels queued back to back start about 1-2 us apart on a GPU (the tracer's events between
 * them included); a longer idle gap means the GPU waited for the host. */
#define REC_HOST_GAP_S 5e-6

/* Marks iterations (and warm-up) where the recording does not; returns the number of
 * iterations (1 + the largest iteration index; 0 without recorded ops), -1 when out of memory. */
int rec_mark_iterations(struct mdl_program *p);

/* Sets launch_s from the idle gaps when no op carries a measured host time; returns 1 when it
 * did, 0 when the recording had host times (or nothing recorded). */
int rec_host_launches(struct mdl_program *p);

#endif
