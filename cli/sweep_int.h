/* sweep_int.h - what cli_sweep.c (one machine's sweep) and sweep_shard.c (shards, their merge and
 * status, SLURM arrays) share inside cli/. */
#ifndef CLI_SWEEP_INT_H
#define CLI_SWEEP_INT_H

#include <stddef.h>

#include "core/shard.h"
#include "core/sweep.h"

/* The sweep CSV's header line (with its LF). */
void sweepcli_header(const struct sweep *sw, char *out, size_t len);
/* Point i's number and values as its row starts ("12,8,1024"); returns the length. */
size_t sweepcli_row_start(const struct sweep *sw, long i, char *line, size_t len);
/* A new temporary file for a point's scenario, its name into tmp (64 bytes); 0, or -1. */
int sweepcli_point_file(char *tmp);

/* Part of a sweep a run does: the points owner[] gives `shard` (NULL: every point). */
struct sweepcli_part {
    const int *owner;
    int shard, nshards;
};

struct sweep_plot_opts;
/* Runs the sweep's points (those of part, when given) into csv with `jobs` workers, keeping the
 * CSV's rows of this sweep when resume is set; draws the plot when asked (a whole sweep).
 * Returns the exit status. */
int sweepcli_run(const struct sweep *sw, const char *csv, int jobs, int resume,
                 const struct sweepcli_part *part, int want_plot, const struct sweep_plot_opts *po);

/* Shards: the split of sw into nshards (the manifest in dir, made or checked, into *m), then the
 * run of shard `shard` (-1: none, only the split). Returns the exit status. */
int sweepcli_shard(const struct sweep *sw, const char *dir, int shard, int nshards, int jobs,
                   int resume);

/* `--slurm`: the split into nshards in dir, an sbatch array script running each shard (only the
 * unfinished ones with resume), submitted with sbatch_args when submit is set. */
int sweepcli_slurm(const struct sweep *sw, const char *dir, int nshards, int jobs, int resume,
                   const char *sbatch_args, int submit);

/* `tpsim sweep merge DIR` and `tpsim sweep status DIR` (argv[0] is the subcommand). */
int sweepcli_merge(int argc, char **argv);
int sweepcli_status(int argc, char **argv);

#endif
