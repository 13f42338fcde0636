/* gnuplot.h - running a gnuplot script the project wrote (plots of validate and sweep). */
#ifndef TPS_GNUPLOT_H
#define TPS_GNUPLOT_H

/* Runs `gnuplot SCRIPT` with its messages discarded; returns 0 when it ran and succeeded, -1
 * when gnuplot is missing or failed (the caller says that the data are written anyway). */
int tps_gnuplot_run(const char *script);

#include <stdio.h>

/* Writes the gnuplot script `script` that draws one plot twice, into STEM.png and STEM.svg (w x h
 * pixels): body(f, ctx) writes the commands that follow the terminal and output lines, once per
 * image. Then runs gnuplot on it. Returns 1 when gnuplot drew the images, 0 when the script is
 * written but gnuplot is missing or failed, -1 when the script cannot be written. */
int tps_gnuplot_plot(const char *script, const char *stem, int w, int h,
                     void (*body)(FILE *f, void *ctx), void *ctx);

#endif
