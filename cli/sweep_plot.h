/* sweep_plot.h - a sweep's CSV as a plot for a paper (`tpsim sweep --plot`): one metric against
 * one swept key, a line per group, small multiples when there are many groups, labels with units
 * from what the keys and metrics mean, the scenario's name as the title; gnuplot draws PNG and SVG.
 */
#ifndef CLI_SWEEP_PLOT_H
#define CLI_SWEEP_PLOT_H

#include "common/error.h"
#include "core/sweep.h"

struct sweep_plot_opts {
    const char *y;     /* a result column (model_tflops_per_gpu by default) */
    const char *x;     /* a swept column (the first by default) */
    const char *group; /* a swept column: one line per value (default: every other column) */
    const char *facet; /* a swept column: one panel per value (default: none, or when more than
                          8 lines, the non-x column with the most values) */
    int logx, logy;
};

/* Checks the options against the sweep before it runs: the metric is a result column, the keys
 * are swept columns, each used once. err names the option. */
int sweep_plot_check(const struct sweep *sw, const struct sweep_plot_opts *o, const char *cols,
                     struct tps_error *err);

/* The column (0-based axis) the x key is: for ordering the rows by curve before drawing. */
int sweep_plot_x(const struct sweep *sw, const struct sweep_plot_opts *o);

/* Writes STEM.gp and draws STEM.png and STEM.svg from data (the CSV, its rows ordered by curve:
 * sweep_plot_x's column last), whose result columns are cols (comma separated, after the point,
 * the swept columns and the status). Returns 1 drawn, 0 script written but gnuplot missing or
 * failed, -1 no script. */
int sweep_plot_draw(const struct sweep *sw, const struct sweep_plot_opts *o, const char *cols,
                    const char *data, const char *stem);

#endif
