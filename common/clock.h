/* clock.h - the monotonic wall clock that progress lines and TPSIM_TIMING measure with. */
#ifndef TPS_CLOCK_H
#define TPS_CLOCK_H

/* Seconds on the monotonic clock (CLOCK_MONOTONIC): only differences mean anything. */
double tps_clock_now(void);

#endif
