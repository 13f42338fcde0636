/* megatron.h - a Megatron-LM launch as a tpsim scenario (`tpsim import megatron`).
 *
 * Two steps. Reading: the flags of the command that runs a training script (the words after a
 * word ending in .py, pretrain_gpt.py as Megatron-LM's examples launch it) from a shell script,
 * with what such scripts use evaluated: assignments (NAME=v, NAME=(...), NAME+=(...), export),
 * expansions ($N, ${N}, ${N:-d}, ${N-d}, ${N+x}, ${N[@]}, $((arithmetic))), quotes, comments,
 * line continuations, eval, and if/elif/else on [ ] or [[ ]] tests of strings and integers
 * (a test it cannot decide, a file's existence, is false and noted); a command's output
 * ($(...), `...`) and loops are not run (noted). The launcher's own flags (torchrun's
 * --nproc_per_node and --nnodes, srun's --nodes and --ntasks-per-node) give the GPUs. Or the
 * flags themselves, as arguments. Mapping: each Megatron-LM flag tpsim models becomes its
 * scenario key (one table, megatron.c); every other flag is listed as ignored.
 */
#ifndef VALIDATE_MEGATRON_H
#define VALIDATE_MEGATRON_H

#include "common/error.h"

struct mg_flag {
    char name[64];   /* "--tensor-model-parallel-size" */
    char value[256]; /* "" when the flag takes none */
    int has_value;
    int line; /* in the script, 0 for arguments */
};

#define MG_MAX_FLAGS 512
#define MG_MAX_NOTES 16

struct mg_launch {
    char source[512]; /* the script, or "arguments" */
    int nflags;
    struct mg_flag flags[MG_MAX_FLAGS];
    long nproc_per_node, nnodes; /* the launcher's, 0 when not given */
    int nnotes;                  /* what the reading could not evaluate */
    char notes[MG_MAX_NOTES][160];
};

/* Reads the training command of the script at path. An error when it has none. */
int mg_read_script(const char *path, struct mg_launch *l, struct tps_error *err);
/* Reads flags given as arguments ("--num-layers", "32", "--swiglu", "--seq-length=4096"). */
int mg_read_args(int argc, const char *const *argv, struct mg_launch *l, struct tps_error *err);

struct mg_opts {
    const char *name;     /* the scenario's name */
    const char *device;   /* device preset (default H100-SXM) */
    const char *platform; /* platform preset (default dgx-h100) with nodes added when absent */
    int gpus_per_node;    /* of that platform (default 8) */
    long gpus;            /* all GPUs; 0: the launcher's, else what the parallel sizes need */
};

/* The scenario as YAML text (*yaml, malloc'ed) and the flags it ignores, comma separated
 * (*ignored, malloc'ed, "" for none), and what it assumed or could not take, one per line
 * (*notes, malloc'ed). An error names the flag whose value is wrong. */
int mg_scenario(const struct mg_launch *l, const struct mg_opts *o, char **yaml, char **ignored,
                char **notes, struct tps_error *err);

#endif
