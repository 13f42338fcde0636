/* sanitize.h - what the engine's child does differently in a sanitizer build (TPSIM_SANITIZE). */
#ifndef TPSIM_SIM_SANITIZE_H
#define TPSIM_SIM_SANITIZE_H

/* SimGrid runs each actor on a stack of its own (raw contexts), which ASan does not know of:
 * the first C++ exception thrown on one (SimGrid ends every actor with one) makes ASan print,
 * once per process, that it ignores the unpoisoning of a stack it cannot bound. Spends that one
 * warning with standard error on /dev/null, so that a sanitizer build prints what a normal
 * build prints. Nothing in a normal build. */
void sim_sanitize_quiet(void);

#endif
