/* program.h - the plain-data program that tpsim replays: per-rank operations on streams.
 *
 * A program has `nranks` ranks (GPUs). Each rank holds an ordered list of ops; each op runs on a
 * stream of its rank (0 = compute, 1.. = communication) and streams are in-order, as CUDA
 * streams are. An op may also wait for up to MDL_MAX_DEPS earlier ops of the same rank (on any
 * stream): that is how a GEMM waits for the all-reduce that produced its input. Collectives
 * name a group; every member rank must issue the group's collectives in the same order.
 * A rank's host launches its ops in program order, each taking the host `launch_s`; ops start
 * on the GPU only once launched (all at once when no op costs launch time).
 * The program owns all its memory (ops, groups, names); mdl_program_release() frees it.
 * Units: seconds, FLOP, bytes.
 */
#ifndef MDL_PROGRAM_H
#define MDL_PROGRAM_H

#include <stdbool.h>
#include <stdint.h>

#include "common/strindex.h"
#include "models/mesh.h"

#define MDL_MAX_DEPS       8
#define MDL_MAX_STREAMS    16
#define MDL_STREAM_COMPUTE 0
#define MDL_STREAM_COMM    1 /* tensor-parallel collectives */
/* Streams of a whole job (models/job.h): data-parallel collectives, and one per pipeline
 * neighbour and direction, so that each is a first-in first-out channel of its own. */
#define MDL_STREAM_DP       2
#define MDL_STREAM_RECV_FWD 3 /* activations from the previous stage */
#define MDL_STREAM_SEND_FWD 4 /* activations to the next stage */
#define MDL_STREAM_RECV_BWD 5 /* gradients from the next stage */
#define MDL_STREAM_SEND_BWD 6 /* gradients to the previous stage */
#define MDL_STREAM_NORM     7 /* the gradient norm's all-reduce over the model's GPUs */
#define MDL_STREAM_GATHER   8 /* ZeRO-3: parameters all-gathered ahead of their use */
/* PrimePar's ring shifts (strategy.h): a block sent to the next member of the TP ring and one
 * received from the previous, each pair posted together as NCCL's grouped send and receive. */
#define MDL_STREAM_SHIFT_SEND 9
#define MDL_STREAM_SHIFT_RECV 10
/* Colossal-AI's 2D, 2.5D and 3D tensor parallelism (strategy.h): the collectives of a second and
 * a third mesh axis, each on a communicator (and so a stream) of its own. */
#define MDL_STREAM_COMM2 11
#define MDL_STREAM_COMM3 12
/* FlexTP's migration (hetero.h): the weights of moved columns and their gradients. */
#define MDL_STREAM_MIGRATE 13
/* Context parallelism (strategy.h): the ring attention's sends and its receives (posted
 * together, NCCL's grouped send and receive), and the CP group's collectives on the send one. */
#define MDL_STREAM_CP_SEND 14
#define MDL_STREAM_CP_RECV 15

/* The parallel dimension a collective serves (struct mdl_op's dim): MDL_OP_DIM(d) for d of enum
 * mdl_dim (models/mesh.h), 0 for none: compute, a recording that does not say, or a collective
 * over several dimensions together (the gradient norm's). Reports break communication down by
 * it (core/report.h), never by stream. */
#define MDL_OP_DIM(d) ((uint8_t)((d) + 1))
#define MDL_OP_DIMS   (MDL_NDIMS + 1) /* values of dim: none, then each dimension */

enum mdl_op_kind {
    MDL_OP_GEMM,           /* matrix multiply (compute stream) */
    MDL_OP_ATTN,           /* attention-core batched GEMM (compute stream) */
    MDL_OP_MEM,            /* memory-bound kernel: norms, softmax, dropout, GeLU, adds */
    MDL_OP_COMPUTE,        /* opaque compute kernel with a recorded duration */
    MDL_OP_ALL_REDUCE,     /* collectives: bytes = full buffer size S */
    MDL_OP_ALL_GATHER,     /* bytes = gathered (full) size */
    MDL_OP_REDUCE_SCATTER, /* bytes = input (full) size */
    MDL_OP_BROADCAST,      /* bytes = buffer size; group member `root` is the root */
    MDL_OP_ALL_TO_ALL,     /* bytes = each rank's whole send buffer (S/n to every member) */
    MDL_OP_SEND_RECV,      /* bytes = message; group of two, member 0 sends to member 1 */
    MDL_OP_REDUCE,         /* bytes = buffer size; summed into group member `root` */
    MDL_OP_NKINDS
};

enum mdl_phase { MDL_PHASE_FWD, MDL_PHASE_BWD, MDL_PHASE_OTHER };

struct mdl_op {
    uint8_t kind;               /* enum mdl_op_kind */
    uint8_t stream;             /* 0 compute, 1.. communication */
    uint8_t phase;              /* enum mdl_phase */
    uint8_t ndeps;              /* entries used in deps */
    uint8_t dim;                /* collectives: MDL_OP_DIM(the dimension served), 0 none */
    uint8_t algo, proto, gran;  /* collectives: enum mdl_coll_{algo,proto,gran} (collective.h);
                                   0 = let the tuner choose (core/tune.h) */
    int32_t name;               /* index into program names */
    int32_t layer;              /* transformer layer, -1 if none */
    int32_t mb;                 /* micro-batch index, -1 if none */
    int32_t group;              /* collective group, -1 for compute */
    int32_t deps[MDL_MAX_DEPS]; /* earlier op indices of the same rank */
    double dur_s;               /* compute duration, s (compute ops) */
    double flop;                /* FLOPs this op executes (GEMM and attention ops) */
    double bytes;               /* collective full size, or bytes a compute op moves */
    double launch_s;            /* host time to launch this op (a kernel launched by the framework,
                                   or the CUDA graph it opens); 0: launched with the op before it.
                                   An op cannot start before its rank's host has launched it. */
    double rec_start, rec_end;  /* recorded by the tracer on real hardware, s (if recorded) */
    uint8_t recorded;           /* rec_start/rec_end hold measured times */
    uint8_t warmup;             /* recorded during warm-up (a kernel's first, lazily loaded call) */
    uint8_t host_sync;          /* the host launches this op only once every op before it is done
                                   (a blocking call: its requests waited on, the device
                                   synchronized) */
    uint16_t root;              /* broadcast and reduce: the root's index among the group's
                                   members (0 otherwise) */
    int32_t iter;               /* iteration the op belongs to; -1 when a recording does not say */
    /* A folded replica's op (models/job.h): it stands for the same op of an identical replica
     * that is simulated in full, and starts once that op (op mirror_op of rank mirror_rank, a
     * rank that is no shadow) has started, and after the op before it on its stream. */
    uint8_t mirrored;
    int32_t mirror_rank, mirror_op;
};

struct mdl_rank {
    int nops, cap;      /* ops used and allocated */
    struct mdl_op *ops; /* owned */
};

struct mdl_group {
    int n;      /* member count */
    int *ranks; /* owned; ring order */
};

struct mdl_program {
    int nranks;
    struct mdl_rank *ranks; /* owned, nranks entries */
    int ngroups, groups_cap;
    struct mdl_group *groups; /* owned */
    int nnames, names_cap;
    char **names;                   /* owned interned op names */
    struct tps_strindex name_index; /* owned: names -> index */
    int layers;                     /* transformer layers in the program */
    int micro_batches;              /* micro-batches in the program */
    double model_flop; /* model FLOPs of the iteration (mdl_model_flop), 0 when unknown */
    double peak_flops; /* dense peak FLOP/s of one GPU for the dtype, 0 when unknown */
    int hw_queues;     /* the GPU's hardware queues the streams share (stream s on queue s mod
                          hw_queues, kernels started in launch order per queue); 0: a queue per
                          stream (mdl_framework.connections) */
    /* Balancing under heterogeneity (hetero.h): the fraction of all sharded columns left out
     * (ZERO-resizing; 0 otherwise) and the bytes the migration moved. */
    double dropped, migrated_bytes;
    /* Owned, nranks entries, or NULL: 1 for the GPU of a folded replica, whose ops only mirror
     * those of a replica simulated in full (its traffic on shared links); reports average over
     * the other GPUs, which stand for it. */
    uint8_t *shadow;
    /* A count's bound (mdl_job_ops): when max_ops > 0, an add past max_ops ops in all fails and
     * sets over, so that counting a program never takes more than the bound it is checked
     * against. */
    double max_ops, added;
    int over;
};

int mdl_program_init(struct mdl_program *p, int nranks);
void mdl_program_release(struct mdl_program *p);

/* Appends a copy of *op to rank r; returns its index, or -1 on allocation failure (or past
 * max_ops, with over set). */
int mdl_program_add(struct mdl_program *p, int r, const struct mdl_op *op);
/* Interns a name; returns its index or -1 on allocation failure. */
int mdl_program_name(struct mdl_program *p, const char *name);
/* Adds (or finds an identical) group; `ranks` is copied. Returns its index or -1. */
int mdl_program_group(struct mdl_program *p, int n, const int *ranks);
/* Adds a group even if an identical one exists (two communicators over the same ranks). */
int mdl_program_group_add(struct mdl_program *p, int n, const int *ranks);

/* Copies src's ops into dst (its own array, one slot spare); 0, or -1 on allocation failure. */
int mdl_rank_copy(struct mdl_rank *dst, const struct mdl_rank *src);

/* Places `copies` copies of the program on a program of nranks ranks: rank r of copy c goes to
 * rank at[c x nranks_before + r] (all distinct, below nranks), each copy with its own groups;
 * the ranks left without ops become shadows, so that reports average over the placed ones. For a
 * program without shadows; 0, or -1 (the program unchanged but for groups added) on failure. */
int mdl_program_place(struct mdl_program *p, int nranks, int copies, const int *at);

/* Copies every rank r of src onto rank at[r] of dst (ranks that have no ops yet, all distinct),
 * with src's groups added to dst's (their members mapped through at) and its names interned:
 * several programs placed side by side on one platform (jobs sharing it, pipeline/fabric.h).
 * Dependencies stay as they are (the ranks start empty); mirrored ops follow their rank. Returns
 * 0, or -1 (a rank out of range or not empty, or out of memory; dst then holds what was copied). */
int mdl_program_merge(struct mdl_program *dst, const struct mdl_program *src, const int *at);

bool mdl_op_is_coll(enum mdl_op_kind k);
const char *mdl_op_kind_name(enum mdl_op_kind k);
int mdl_op_kind_parse(const char *name, enum mdl_op_kind *out);
const char *mdl_phase_name(enum mdl_phase ph);

/* Bytes one rank sends in a ring collective of full size `bytes` over n ranks:
 * all-reduce 2(n-1)/n * S, all-gather and reduce-scatter (n-1)/n * S. */
double mdl_coll_ring_bytes(enum mdl_op_kind k, int n, double bytes);

/* Where mdl_program_check found a problem: the op (rank and index), or -1. */
struct mdl_check_at {
    int rank, op;
};

struct tps_error;

/* Checks that a program can be replayed, as plain data: groups name distinct ranks in range;
 * every op's stream is valid and its dependencies are earlier ops; compute ops are on stream 0
 * and collectives on a communication stream; a collective's rank belongs to its group, a
 * send/recv group has two ranks, a rank uses a group from one stream only; the members of a
 * group issue the same collectives (kind and size) in the same order; and a mirrored op names an
 * op of the same kind and size on a rank that is no shadow. On failure fills err
 * (field and message, no position) and, when an op is at fault, *at (may be NULL). */
int mdl_program_check(const struct mdl_program *p, struct mdl_check_at *at, struct tps_error *err);

/* One rank's compute alone: rank `rank`'s compute ops of `in`, in order, without its
 * collectives (as the rank runs with no other rank to talk to). A dependency on a dropped
 * collective becomes a dependency on what that collective waited for. *out is initialised here
 * (release it even on failure); returns 0, or -1 when out of memory. */
int mdl_program_shard(const struct mdl_program *in, int rank, struct mdl_program *out);

/* Executed FLOPs: the sum over all ops of all ranks (replicated work and recomputation
 * included). The model FLOPs are p->model_flop. */
double mdl_program_flop(const struct mdl_program *p);

#endif
