/* ncclog.h - reading nccl-tests output (the *_perf programs' tables) and its .meta.yaml.
 *
 * Layouts: the current one (size count type redop root time algbw busbw #wrong, then the
 * in-place group), the older one without the root column and with an error column, and
 * hand-trimmed tables of size/time/algbw/busbw only (sizes may carry '_' separators). The column
 * header line decides the layout. A run's whole output (nccl-tests' "# nThread ..." line before
 * its table) ends with its "# Avg bus bandwidth" line, and one without it was cut short; a table
 * quoted alone (column headers and rows, as posted in a thread) has neither. A table cut short,
 * a row missing out-of-place fields, a field that is not a number, or an algbw that disagrees
 * with size/time is an error naming file, line, column and field. A row whose in-place group is
 * cut off keeps its out-of-place values (partial copies in ../shared/refdata/nccl do that).
 * Units: bytes, microseconds, GB/s.
 */
#ifndef VAL_NCCLOG_H
#define VAL_NCCLOG_H

#include "common/error.h"
#include "models/program.h"

struct ncl_row {
    double bytes, time_us, algbw, busbw; /* out-of-place */
    int line;                            /* 1-based line in the log */
};

struct ncl_log {
    char path[512];
    int layout; /* 0 current, 1 old (no root column), 2 trimmed */
    int nrows;
    struct ncl_row *rows; /* owned */
    int op;               /* enum mdl_op_kind, or -1 when the log does not say */
    int ranks;            /* from the device list or tpsim's header, 0 when unknown */
};

int ncl_log_read(const char *path, struct ncl_log *out, struct tps_error *err);
void ncl_log_release(struct ncl_log *l);

/* The system description beside a log (NAME.meta.yaml for NAME.raw.txt). */
struct ncl_meta {
    char gpu[128];
    int gpus_per_node, nodes;
    int ranks; /* GPUs the log ran on: `gpus_used` (fewer than a node has, say), else
                  nodes x gpus_per_node */
    int op;    /* from `collective: "<op>_perf ..."`, -1 if absent */
};
int ncl_meta_read(const char *path, struct ncl_meta *out, struct tps_error *err);

#endif
