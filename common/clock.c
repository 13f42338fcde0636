/* clock.c - the monotonic wall clock (see clock.h). */
#include "common/clock.h"

#include <time.h>

double tps_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
