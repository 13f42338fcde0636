/* gnuplot.h - running a gnuplot script the project wrote (plots of validate and sweep). */
#ifndef TPS_GNUPLOT_H
#define TPS_GNUPLOT_H

/* Runs `gnuplot SCRIPT` with its messages discarded; returns 0 when it ran and succeeded, -1
 * when gnuplot is missing or failed (the caller says that the data are written anyway). */
int tps_gnuplot_run(const char *script);

#endif
