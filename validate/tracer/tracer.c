/* tracer.c - libtpsim_tracer.so, loaded with LD_PRELOAD into a CUDA program: records NCCL
 * collectives and cuBLAS/cuBLASLt GEMMs, per rank, into tpsim's trace format (version 2).
 *
 * Each intercepted call records a CUDA event on its stream before and after calling the real
 * function, and keeps the pair in memory: nothing waits on the GPU on the critical path. The real
 * function is found with dlsym(RTLD_NEXT) or, when the program loaded the library outside the
 * global search order (PyTorch dlopens its CUDA libraries from its Python packages), in the
 * loaded library whose soname says it defines it (libcublas*, libcublasLt*, libnccl*,
 * libcudart*); a function found nowhere is reported once and the call returns the library's
 * error status. A call made from inside another intercepted call (libcublas calling
 * cublasLtMatmul) is passed through unrecorded, so each GEMM is recorded once. Calls between
 * ncclGroupStart and ncclGroupEnd are launched by ncclGroupEnd, so they share the events recorded
 * around it. At exit the events are resolved (times relative to the rank's first event) and the
 * rank writes DIR/rank-NNNNN.tps and DIR/comms-NNNNN.tps (its communicators: identity, size, its
 * rank in each). `tpsim trace-merge DIR` then builds the groups from all ranks and writes meta.tps.
 *
 * NVTX ranges mark layers and phases: NVTX 2 symbols are interposed, and NVTX 3 (header-only)
 * reaches this library when NVTX_INJECTION64_PATH names it.
 *
 * Environment: TPSIM_TRACE_DIR (required; nothing is recorded without it), TPSIM_TRACE_RECORD
 * (comma list of nccl, gemm; default both), the rank from RANK, OMPI_COMM_WORLD_RANK,
 * PMI_RANK or SLURM_PROCID (default 0), TPSIM_TRACE_RANGE=profiler (record only between
 * cudaProfilerStart and cudaProfilerStop; each window is an iteration). Without a window the
 * first call of each kind and shape is marked warm-up (CUDA loads kernels lazily), and an NVTX
 * range naming an iteration or step starts an iteration. Each op also carries the host time since
 * the previous op's call (launch_s; TPSIM_TRACE_HOST=0 writes 0). Communicators are identified
 * across ranks by a hash of the ncclUniqueId(s) given to ncclCommInitRank, ncclCommInitRankConfig
 * or ncclCommInitRankScalable; a split by a hash of its parent's identity, the color and the
 * parent's split count, which every member computes alike; ncclCommInitAll's get a process-local
 * identity. Compute ops go on stream 0, collectives on stream 1, sends on 2 and receives on 3
 * (named send:PEER / recv:PEER until the merge gives each direction its group). Dependencies are
 * inferred from the recorded times: an op waits for the last op of another stream that ended before
 * it started.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr, dladdr, RTLD_NEXT */
#endif
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <nccl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

/* ------------------------------------------------------------------ state */

enum { K_GEMM, K_ATTN, K_AR, K_AG, K_RS, K_BCAST, K_SENDRECV };
static const char *const kind_name[] = {"gemm",           "attn",      "all_reduce", "all_gather",
                                        "reduce_scatter", "broadcast", "send_recv"};

struct rec {
    int kind;
    int layer; /* from NVTX ranges, -1 if none */
    int phase; /* 0 fwd, 1 bwd, 2 other (NVTX ranges naming forward/backward) */
    char name[24];
    cudaStream_t stream;
    double bytes, flop;
    int comm; /* index in comms[], -1 for GEMMs */
    int peer; /* send/recv: the peer's rank in the communicator */
    cudaEvent_t ev0, ev1;
    int shared_events; /* inside a NCCL group: the group's events, owned by the last member */
    double host_s;     /* host clock at the call, s */
    int iter;          /* iteration (profiler window or NVTX range), -1 if none */
    int warmup;        /* the first call of its kind and shape (outside a profiler window) */
};

struct comm_info {
    ncclComm_t comm; /* NULL once destroyed (the pointer may be reused) */
    uint64_t id;
    int nranks, rank;
    int splits; /* splits made from it so far: a split's identity */
};

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static struct rec *recs;
static int nrecs, caprecs;
static struct comm_info comms[256];
static int ncomms;
static int enabled = -1, want_nccl = 1, want_gemm = 1;
static char outdir[512];
static int group_depth, group_first = -1;
static __thread int inside; /* inside an intercepted call (or one the tracer makes itself) */
/* TPSIM_TRACE_RANGE=profiler: record only inside cudaProfilerStart/Stop windows */
static int range_profiler, in_window, window_count;
static int record_host = 1; /* TPSIM_TRACE_HOST=0: no host times (a host always ahead) */
static int nvtx_iter = -1;  /* iteration from NVTX ranges naming an iteration or step */
/* kinds and shapes seen so far (warm-up marking): a small open-addressing set of hashes */
#define SEEN_CAP 4096
static uint64_t seen[SEEN_CAP];

/* NVTX ranges open on the host: a range whose message says "layer" then a number sets the layer
 * of the ops recorded inside it; "forward"/"fwd" and "backward"/"bwd" set the phase. */
#define NVTX_DEPTH 64
static int nvtx_depth, nvtx_layer[NVTX_DEPTH], nvtx_phase[NVTX_DEPTH];

typedef cudaError_t (*ev_create_t)(cudaEvent_t *, unsigned int);
typedef cudaError_t (*ev_record_t)(cudaEvent_t, cudaStream_t);
typedef cudaError_t (*ev_sync_t)(cudaEvent_t);
typedef cudaError_t (*ev_elapsed_t)(float *, cudaEvent_t, cudaEvent_t);
typedef cudaError_t (*ev_destroy_t)(cudaEvent_t);
static ev_create_t ev_create;
static ev_record_t ev_record;
static ev_sync_t ev_sync;
static ev_elapsed_t ev_elapsed;
static ev_destroy_t ev_destroy;

/* Libraries whose functions the tracer intercepts, by soname prefix (any major version). */
static const char *const real_libs[] = {"libcublas", "libnccl", "libcudart", NULL};

struct lookup {
    const char *name;
    void *fn;
};

static int own_object(void *f)
{
    Dl_info a, b;
    return dladdr(f, &a) && dladdr((void *)own_object, &b) && a.dli_fbase == b.dli_fbase;
}

/* dl_iterate_phdr callback: the symbol in a loaded library named like the real ones. */
static int lookup_in(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct lookup *l = data;
    const char *path = info->dlpi_name, *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : path;
    if (!base || !base[0]) return 0;
    int match = 0;
    for (int i = 0; real_libs[i] && !match; i++)
        match = !strncmp(base, real_libs[i], strlen(real_libs[i]));
    if (!match) return 0;
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return 0;
    void *f = dlsym(h, l->name);
    if (f && !own_object(f)) { /* the reference is kept: the library outlives the exit handler */
        l->fn = f;
        return 1;
    }
    dlclose(h);
    return 0;
}

/* The real function: next in the global search order, else in the loaded library that defines
 * it. NULL (reported once per name) when neither has it. */
static void *real(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (f) return f;
    struct lookup l = {name, NULL};
    dl_iterate_phdr(lookup_in, &l);
    if (l.fn) return l.fn;
    static pthread_mutex_t report_mtx = PTHREAD_MUTEX_INITIALIZER; /* real() runs under mtx */
    static char reported[64][48];
    static int nreported;
    pthread_mutex_lock(&report_mtx);
    int seen_before = 0;
    for (int i = 0; i < nreported && !seen_before; i++)
        seen_before = !strcmp(reported[i], name);
    if (!seen_before && nreported < 64) snprintf(reported[nreported++], 48, "%s", name);
    pthread_mutex_unlock(&report_mtx);
    if (!seen_before)
        fprintf(stderr, "tpsim tracer: %s not found in the loaded libraries; the call fails\n",
                name);
    return NULL;
}

/* Resolves *slot once it can be found (a library may be loaded later). */
#define RESOLVE(slot, name) ((slot) ? (void *)(slot) : (*(void **)&(slot) = real(name)))

static double host_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *cudart(const char *name)
{
    void *f = dlsym(RTLD_DEFAULT, name);
    if (!f) { /* loaded outside the global search order */
        struct lookup l = {name, NULL};
        dl_iterate_phdr(lookup_in, &l);
        f = l.fn;
    }
    if (!f) { /* a program linked with a static cudart: use the shared one */
        static void *lib;
        if (!lib) lib = dlopen("libcudart.so", RTLD_LAZY | RTLD_GLOBAL);
        if (lib) f = dlsym(lib, name);
    }
    return f;
}

static void write_trace(void);

static int init(void)
{
    if (enabled >= 0) return enabled;
    const char *dir = getenv("TPSIM_TRACE_DIR");
    enabled = dir && dir[0];
    if (!enabled) return 0;
    snprintf(outdir, sizeof outdir, "%s", dir);
    const char *what = getenv("TPSIM_TRACE_RECORD");
    if (what && what[0]) {
        want_nccl = strstr(what, "nccl") != NULL;
        want_gemm = strstr(what, "gemm") != NULL;
    }
    const char *host = getenv("TPSIM_TRACE_HOST");
    record_host = !(host && !strcmp(host, "0"));
    const char *range = getenv("TPSIM_TRACE_RANGE");
    range_profiler = range && !strcmp(range, "profiler");
    if (range && range[0] && !range_profiler)
        fprintf(stderr, "tpsim tracer: TPSIM_TRACE_RANGE=%s is not 'profiler'; recording all\n",
                range);
    ev_create = (ev_create_t)cudart("cudaEventCreateWithFlags");
    ev_record = (ev_record_t)cudart("cudaEventRecord");
    ev_sync = (ev_sync_t)cudart("cudaEventSynchronize");
    ev_elapsed = (ev_elapsed_t)cudart("cudaEventElapsedTime");
    ev_destroy = (ev_destroy_t)cudart("cudaEventDestroy");
    if (!ev_create || !ev_record || !ev_sync || !ev_elapsed || !ev_destroy) {
        fprintf(stderr, "tpsim tracer: CUDA runtime event functions not found, not recording\n");
        enabled = 0;
        return 0;
    }
    atexit(write_trace);
    return 1;
}

static int rank_of_process(void)
{
    static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID",
                                       NULL};
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && v[0]) return atoi(v);
    }
    return 0;
}

/* Whether a call is recorded now: outside a profiler window nothing is when one is asked for. */
static int recording(void)
{
    return !range_profiler || in_window;
}

/* First call of this kind and shape in the process (under mtx): CUDA loads the kernel then. */
static int first_of_kind(int kind, double flop, double bytes)
{
    uint64_t h = 1469598103934665603ull;
    const double key[3] = {(double)kind, flop, bytes};
    const unsigned char *b = (const unsigned char *)key;
    for (size_t i = 0; i < sizeof key; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    h |= 1; /* 0 marks an empty slot */
    for (size_t i = 0; i < SEEN_CAP; i++) {
        uint64_t *slot = &seen[(h + i) % SEEN_CAP];
        if (*slot == h) return 0;
        if (!*slot) {
            *slot = h;
            return 1;
        }
    }
    return 0; /* the set is full: later kinds count as warm */
}

/* Starts a record (under mtx): event before the real call. */
static struct rec *rec_begin(int kind, const char *name, cudaStream_t stream)
{
    if (!recording()) return NULL;
    if (nrecs == caprecs) {
        int cap = caprecs ? 2 * caprecs : 4096;
        struct rec *r = realloc(recs, (size_t)cap * sizeof *r);
        if (!r) return NULL;
        recs = r;
        caprecs = cap;
    }
    struct rec *r = &recs[nrecs++];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    snprintf(r->name, sizeof r->name, "%s", name);
    r->stream = stream;
    r->comm = -1;
    r->layer = -1;
    r->phase = 2;
    r->host_s = host_now();
    r->iter = range_profiler ? window_count - 1 : nvtx_iter;
    for (int d = nvtx_depth < NVTX_DEPTH ? nvtx_depth : NVTX_DEPTH; d-- > 0;) {
        if (r->layer < 0) r->layer = nvtx_layer[d];
        if (r->phase == 2) r->phase = nvtx_phase[d];
    }
    if (group_depth > 0) { /* launched by ncclGroupEnd */
        r->shared_events = 1;
        if (group_first < 0) group_first = nrecs - 1;
        return r;
    }
    if (ev_create(&r->ev0, cudaEventDefault) != cudaSuccess ||
        ev_create(&r->ev1, cudaEventDefault) != cudaSuccess) {
        nrecs--;
        return NULL;
    }
    ev_record(r->ev0, stream);
    return r;
}

static void rec_end(struct rec *r)
{
    if (r && !r->shared_events) ev_record(r->ev1, r->stream);
}

static size_t dtype_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8:
    case ncclUint8:
        return 1;
    case ncclFloat16:
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= 21000
    case ncclBfloat16:
#endif
        return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
        return 4;
    default:
        return 8;
    }
}

static int comm_index(ncclComm_t comm)
{
    for (int i = ncomms; i-- > 0;)
        if (comms[i].comm == comm) return i;
    if (ncomms == 256 || !comm) return -1;
    static ncclResult_t (*count)(const ncclComm_t, int *), (*urank)(const ncclComm_t, int *);
    RESOLVE(count, "ncclCommCount");
    RESOLVE(urank, "ncclCommUserRank");
    struct comm_info *c = &comms[ncomms];
    c->comm = comm;
    /* process-local unless a constructor named it; the index keeps a reused pointer apart */
    c->id = (uint64_t)(uintptr_t)comm ^ ((uint64_t)ncomms << 48);
    c->nranks = 1;
    c->rank = 0;
    c->splits = 0;
    inside++;
    if (count) count(comm, &c->nranks);
    if (urank) urank(comm, &c->rank);
    inside--;
    return ncomms++;
}

/* ------------------------------------------------------------------ NCCL */

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}
#define FNV_BASIS 1469598103934665603ull

/* Names a new communicator: its identity (the same on every member), size and this rank. */
static void comm_named(ncclComm_t comm, uint64_t id, int nranks, int rank)
{
    if (!comm || !init()) return;
    pthread_mutex_lock(&mtx);
    int c = comm_index(comm);
    if (c >= 0) {
        comms[c].id = id;
        if (nranks > 0) comms[c].nranks = nranks;
        if (rank >= 0) comms[c].rank = rank;
    }
    pthread_mutex_unlock(&mtx);
}

static int created(ncclResult_t res)
{
    return res == ncclSuccess || res == ncclInProgress; /* nonblocking: ready later, same handle */
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    static ncclResult_t (*fn)(ncclComm_t *, int, ncclUniqueId, int);
    if (!RESOLVE(fn, "ncclCommInitRank")) return ncclSystemError;
    int outer = !inside++;
    ncclResult_t res = fn(comm, nranks, id, rank);
    inside--;
    if (outer && created(res))
        comm_named(*comm, fnv(FNV_BASIS, id.internal, sizeof id.internal), nranks, rank);
    return res;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t *config)
{
    static ncclResult_t (*fn)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
    if (!RESOLVE(fn, "ncclCommInitRankConfig")) return ncclSystemError;
    int outer = !inside++;
    ncclResult_t res = fn(comm, nranks, id, rank, config);
    inside--;
    if (outer && created(res))
        comm_named(*comm, fnv(FNV_BASIS, id.internal, sizeof id.internal), nranks, rank);
    return res;
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nid,
                                      ncclUniqueId *ids, ncclConfig_t *config)
{
    static ncclResult_t (*fn)(ncclComm_t *, int, int, int, ncclUniqueId *, ncclConfig_t *);
    if (!RESOLVE(fn, "ncclCommInitRankScalable")) return ncclSystemError;
    int outer = !inside++;
    ncclResult_t res = fn(comm, nranks, rank, nid, ids, config);
    inside--;
    if (outer && created(res)) {
        uint64_t h = FNV_BASIS;
        for (int i = 0; ids && i < nid; i++)
            h = fnv(h, ids[i].internal, sizeof ids[i].internal);
        comm_named(*comm, h, nranks, rank);
    }
    return res;
}

/* One process, several GPUs: the communicators are local to the process (this tracer writes one
 * rank per process, so such a run does not merge into per-GPU ranks). */
ncclResult_t ncclCommInitAll(ncclComm_t *comms_, int ndev, const int *devlist)
{
    static ncclResult_t (*fn)(ncclComm_t *, int, const int *);
    if (!RESOLVE(fn, "ncclCommInitAll")) return ncclSystemError;
    int outer = !inside++;
    ncclResult_t res = fn(comms_, ndev, devlist);
    inside--;
    static int calls;
    int call = calls++;
    if (outer && created(res))
        for (int i = 0; i < ndev; i++) {
            uint64_t h = fnv(fnv(FNV_BASIS, "initall", 7), &call, sizeof call);
            comm_named(comms_[i], h ^ (uint64_t)(uintptr_t)comms_, ndev, i);
        }
    return res;
}

/* Every member of the parent calls ncclCommSplit, in the same order: the parent's identity, its
 * split count and the color name the new communicator alike on all the members that share it. */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config)
{
    static ncclResult_t (*fn)(ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *);
    if (!RESOLVE(fn, "ncclCommSplit")) return ncclSystemError;
    int outer = !inside++;
    ncclResult_t res = fn(comm, color, key, newcomm, config);
    inside--;
    if (!outer || !init()) return res;
    uint64_t h = 0;
    pthread_mutex_lock(&mtx);
    int p = comm_index(comm);
    if (p >= 0) {
        const int32_t key3[3] = {(int32_t)comms[p].splits++, color, 0};
        h = fnv(fnv(FNV_BASIS, &comms[p].id, sizeof comms[p].id), key3, sizeof key3);
    }
    pthread_mutex_unlock(&mtx);
    if (p >= 0 && created(res) && newcomm && *newcomm) comm_named(*newcomm, h, -1, -1);
    return res;
}

/* Destroy or abort: the communicator's entry ends (its pointer may be reused), then the call. */
static ncclResult_t comm_end(ncclResult_t (*fn)(ncclComm_t), ncclComm_t comm)
{
    if (!fn) return ncclSystemError;
    if (comm && enabled > 0) {
        pthread_mutex_lock(&mtx);
        for (int i = 0; i < ncomms; i++)
            if (comms[i].comm == comm) comms[i].comm = NULL;
        pthread_mutex_unlock(&mtx);
    }
    inside++;
    ncclResult_t res = fn(comm);
    inside--;
    return res;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    static ncclResult_t (*fn)(ncclComm_t);
    RESOLVE(fn, "ncclCommDestroy");
    return comm_end(fn, comm);
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    static ncclResult_t (*fn)(ncclComm_t);
    RESOLVE(fn, "ncclCommAbort");
    return comm_end(fn, comm);
}

#define COLL(kind, name, nbytes, call)                                                             \
    do {                                                                                           \
        if (inside || !init() || !want_nccl) return call;                                          \
        pthread_mutex_lock(&mtx);                                                                  \
        struct rec *r = rec_begin(kind, name, stream);                                             \
        int ci = comm_index(comm);                                                                 \
        if (r) {                                                                                   \
            r->comm = ci;                                                                          \
            r->bytes = (double)(nbytes);                                                           \
            r->warmup = !range_profiler && first_of_kind(kind, ci, r->bytes);                      \
        }                                                                                          \
        pthread_mutex_unlock(&mtx);                                                                \
        inside++;                                                                                  \
        ncclResult_t res = call;                                                                   \
        inside--;                                                                                  \
        pthread_mutex_lock(&mtx);                                                                  \
        rec_end(r);                                                                                \
        pthread_mutex_unlock(&mtx);                                                                \
        return res;                                                                                \
    } while (0)

static int nranks_of(ncclComm_t comm)
{
    pthread_mutex_lock(&mtx);
    int c = comm_index(comm), n = c >= 0 ? comms[c].nranks : 1;
    pthread_mutex_unlock(&mtx);
    return n;
}

ncclResult_t ncclAllReduce(const void *s, void *r_, size_t count, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream)
{
    static ncclResult_t (*fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                              cudaStream_t);
    if (!RESOLVE(fn, "ncclAllReduce")) return ncclSystemError;
    COLL(K_AR, "all_reduce", count * dtype_size(t), fn(s, r_, count, t, op, comm, stream));
}

ncclResult_t ncclAllGather(const void *s, void *r_, size_t count, ncclDataType_t t, ncclComm_t comm,
                           cudaStream_t stream)
{
    static ncclResult_t (*fn)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                              cudaStream_t);
    if (!RESOLVE(fn, "ncclAllGather")) return ncclSystemError;
    if (inside || !init() || !want_nccl) return fn(s, r_, count, t, comm, stream);
    size_t n = (size_t)nranks_of(comm);
    COLL(K_AG, "all_gather", count * dtype_size(t) * n, fn(s, r_, count, t, comm, stream));
}

ncclResult_t ncclReduceScatter(const void *s, void *r_, size_t count, ncclDataType_t t,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    static ncclResult_t (*fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                              cudaStream_t);
    if (!RESOLVE(fn, "ncclReduceScatter")) return ncclSystemError;
    if (inside || !init() || !want_nccl) return fn(s, r_, count, t, op, comm, stream);
    size_t n = (size_t)nranks_of(comm);
    COLL(K_RS, "reduce_scatter", count * dtype_size(t) * n, fn(s, r_, count, t, op, comm, stream));
}

ncclResult_t ncclBroadcast(const void *s, void *r_, size_t count, ncclDataType_t t, int root,
                           ncclComm_t comm, cudaStream_t stream)
{
    static ncclResult_t (*fn)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                              cudaStream_t);
    if (!RESOLVE(fn, "ncclBroadcast")) return ncclSystemError;
    COLL(K_BCAST, "broadcast", count * dtype_size(t), fn(s, r_, count, t, root, comm, stream));
}

ncclResult_t ncclSend(const void *s, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    static ncclResult_t (*fn)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    if (!RESOLVE(fn, "ncclSend")) return ncclSystemError;
    char name[24];
    snprintf(name, sizeof name, "send:%d", peer);
    COLL(K_SENDRECV, name, count * dtype_size(t), fn(s, count, t, peer, comm, stream));
}

ncclResult_t ncclRecv(void *r_, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    static ncclResult_t (*fn)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    if (!RESOLVE(fn, "ncclRecv")) return ncclSystemError;
    char name[24];
    snprintf(name, sizeof name, "recv:%d", peer);
    COLL(K_SENDRECV, name, count * dtype_size(t), fn(r_, count, t, peer, comm, stream));
}

ncclResult_t ncclGroupStart(void)
{
    static ncclResult_t (*fn)(void);
    if (!RESOLVE(fn, "ncclGroupStart")) return ncclSystemError;
    if (!inside && init()) {
        pthread_mutex_lock(&mtx);
        group_depth++;
        pthread_mutex_unlock(&mtx);
    }
    inside++;
    ncclResult_t res = fn();
    inside--;
    return res;
}

ncclResult_t ncclGroupEnd(void)
{
    static ncclResult_t (*fn)(void);
    if (!RESOLVE(fn, "ncclGroupEnd")) return ncclSystemError;
    if (inside || !init()) return fn();
    pthread_mutex_lock(&mtx);
    int outer = --group_depth == 0 && group_first >= 0;
    cudaEvent_t e0 = NULL, e1 = NULL;
    cudaStream_t s = outer ? recs[group_first].stream : NULL;
    if (outer && ev_create(&e0, cudaEventDefault) == cudaSuccess &&
        ev_create(&e1, cudaEventDefault) == cudaSuccess)
        ev_record(e0, s);
    pthread_mutex_unlock(&mtx);
    inside++;
    ncclResult_t res = fn();
    inside--;
    pthread_mutex_lock(&mtx);
    if (outer && e1) {
        ev_record(e1, s);
        for (int i = group_first; i < nrecs; i++) {
            recs[i].ev0 = e0;
            recs[i].ev1 = e1;
        }
        recs[nrecs - 1].shared_events = 2; /* this one destroys the pair */
    }
    if (outer) group_first = -1;
    pthread_mutex_unlock(&mtx);
    return res;
}

/* ------------------------------------------------------------------ NVTX */

/* A range whose message starts with "iteration", "iter", "step" or "ProfilerStep" starts an
 * iteration (outside profiler windows, which are iterations themselves). */
static int names_iteration(const char *msg)
{
    static const char *const starts[] = {"iter", "step", "profilerstep", NULL};
    while (msg && (*msg == ' ' || *msg == '#' || *msg == '['))
        msg++;
    for (int i = 0; msg && starts[i]; i++)
        if (!strncasecmp(msg, starts[i], strlen(starts[i]))) return 1;
    return 0;
}

static int nvtx_push(const char *msg)
{
    pthread_mutex_lock(&mtx);
    if (!range_profiler && names_iteration(msg)) nvtx_iter++;
    int d = nvtx_depth++;
    if (d < NVTX_DEPTH) {
        nvtx_layer[d] = -1;
        nvtx_phase[d] = 2;
        for (const char *p = msg; p && *p; p++) {
            if (!strncasecmp(p, "layer", 5)) {
                const char *q = p + 5;
                for (int k = 0; k < 8 && *q && (*q < '0' || *q > '9'); k++)
                    q++;
                if (*q >= '0' && *q <= '9') nvtx_layer[d] = atoi(q);
            }
            if (!strncasecmp(p, "backward", 8) || !strncasecmp(p, "bwd", 3)) nvtx_phase[d] = 1;
            if (!strncasecmp(p, "forward", 7) || !strncasecmp(p, "fwd", 3)) nvtx_phase[d] = 0;
        }
    }
    pthread_mutex_unlock(&mtx);
    return d;
}

static int nvtx_pop(void)
{
    pthread_mutex_lock(&mtx);
    int d = nvtx_depth > 0 ? --nvtx_depth : -1;
    pthread_mutex_unlock(&mtx);
    return d;
}

/* NVTX 2 (libnvToolsExt.so): plain symbols, interposed. */
int nvtxRangePushA(const char *msg)
{
    static int (*fn)(const char *);
    if (!fn) *(void **)&fn = dlsym(RTLD_NEXT, "nvtxRangePushA");
    if (init()) nvtx_push(msg);
    return fn ? fn(msg) : nvtx_depth - 1;
}

int nvtxRangePop(void)
{
    static int (*fn)(void);
    if (!fn) *(void **)&fn = dlsym(RTLD_NEXT, "nvtxRangePop");
    if (init()) nvtx_pop();
    return fn ? fn() : nvtx_depth;
}

/* NVTX 3 is header-only: it calls an injection library named by NVTX_INJECTION64_PATH (point it
 * at this library), which fills its core callback table. ABI constants of nvtxTypes.h:
 * NVTX_ETID_CALLBACKS 1, NVTX_CB_MODULE_CORE 1, RangePushA 9, RangePop 11. */
typedef void (*nvtx_fn)(void);
struct nvtx_callbacks {
    size_t struct_size;
    int (*get_module_table)(int module, nvtx_fn ***table, unsigned int *size);
};

static int nvtx3_push(const char *msg)
{
    return init() ? nvtx_push(msg) : 0;
}

static int nvtx3_pop(void)
{
    return init() ? nvtx_pop() : 0;
}

int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t));
int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t))
{
    const struct nvtx_callbacks *cb = get_export_table ? get_export_table(1) : NULL;
    nvtx_fn **table = NULL;
    unsigned int size = 0;
    if (!cb || !cb->get_module_table || !cb->get_module_table(1, &table, &size) || size <= 11)
        return 0;
    *table[9] = (nvtx_fn)(void (*)(void))nvtx3_push;
    *table[11] = (nvtx_fn)(void (*)(void))nvtx3_pop;
    return 1;
}

/* ------------------------------------------------------------------ profiler window */

cudaError_t cudaProfilerStart(void)
{
    static cudaError_t (*fn)(void);
    RESOLVE(fn, "cudaProfilerStart");
    if (init()) {
        pthread_mutex_lock(&mtx);
        if (!in_window) window_count++;
        in_window = 1;
        pthread_mutex_unlock(&mtx);
    }
    return fn ? fn() : cudaSuccess; /* no profiler attached: nothing to start */
}

cudaError_t cudaProfilerStop(void)
{
    static cudaError_t (*fn)(void);
    RESOLVE(fn, "cudaProfilerStop");
    if (init()) {
        pthread_mutex_lock(&mtx);
        in_window = 0;
        pthread_mutex_unlock(&mtx);
    }
    return fn ? fn() : cudaSuccess;
}

/* ------------------------------------------------------------------ cuBLAS */

static size_t cuda_type_size(cudaDataType t)
{
    switch (t) {
    case CUDA_R_8I:
    case CUDA_R_8U:
    case CUDA_R_8F_E4M3:
    case CUDA_R_8F_E5M2:
        return 1;
    case CUDA_R_16F:
    case CUDA_R_16BF:
        return 2;
    case CUDA_R_32F:
    case CUDA_R_32I:
        return 4;
    default:
        return 8;
    }
}

static void gemm_rec(const char *name, cudaStream_t stream, double m, double n, double k,
                     double batch, double esize, struct rec **out)
{
    *out = NULL;
    if (inside || !init() || !want_gemm) return;
    pthread_mutex_lock(&mtx);
    struct rec *r = rec_begin(batch > 1 ? K_ATTN : K_GEMM, name, stream);
    if (r) {
        r->flop = 2 * m * n * k * batch;
        r->bytes = batch * (m * k + k * n + m * n) * esize;
        r->warmup = !range_profiler && first_of_kind(r->kind, r->flop, r->bytes);
    }
    *out = r;
    pthread_mutex_unlock(&mtx);
}

static void gemm_done(struct rec *r)
{
    if (!r) return;
    pthread_mutex_lock(&mtx);
    rec_end(r);
    pthread_mutex_unlock(&mtx);
}

static cudaStream_t handle_stream(cublasHandle_t h)
{
    static cublasStatus_t (*fn)(cublasHandle_t, cudaStream_t *);
    RESOLVE(fn, "cublasGetStream_v2");
    cudaStream_t s = NULL;
    if (fn) {
        inside++;
        fn(h, &s);
        inside--;
    }
    return s;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const float *alpha, const float *A, int lda,
                              const float *B, int ldb, const float *beta, float *C, int ldc)
{
    static cublasStatus_t (*fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                const float *, const float *, int, const float *, int,
                                const float *, float *, int);
    if (!RESOLVE(fn, "cublasSgemm_v2")) return CUBLAS_STATUS_NOT_INITIALIZED;
    struct rec *r;
    gemm_rec("sgemm", inside ? NULL : handle_stream(h), m, n, k, 1, 4, &r);
    inside++;
    cublasStatus_t st = fn(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    inside--;
    gemm_done(r);
    return st;
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType at,
                            int lda, const void *B, cudaDataType bt, int ldb, const void *beta,
                            void *C, cudaDataType ct, int ldc, cublasComputeType_t comp,
                            cublasGemmAlgo_t algo)
{
    static cublasStatus_t (*fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                const void *, const void *, cudaDataType, int, const void *,
                                cudaDataType, int, const void *, void *, cudaDataType, int,
                                cublasComputeType_t, cublasGemmAlgo_t);
    if (!RESOLVE(fn, "cublasGemmEx")) return CUBLAS_STATUS_NOT_INITIALIZED;
    struct rec *r;
    gemm_rec("gemm_ex", inside ? NULL : handle_stream(h), m, n, k, 1, (double)cuda_type_size(at),
             &r);
    (void)bt;
    inside++;
    cublasStatus_t st =
        fn(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, comp, algo);
    inside--;
    gemm_done(r);
    return st;
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType at,
                                          int lda, long long int sa, const void *B, cudaDataType bt,
                                          int ldb, long long int sb, const void *beta, void *C,
                                          cudaDataType ct, int ldc, long long int sc, int batch,
                                          cublasComputeType_t comp, cublasGemmAlgo_t algo)
{
    static cublasStatus_t (*fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                const void *, const void *, cudaDataType, int, long long int,
                                const void *, cudaDataType, int, long long int, const void *,
                                void *, cudaDataType, int, long long int, int, cublasComputeType_t,
                                cublasGemmAlgo_t);
    if (!RESOLVE(fn, "cublasGemmStridedBatchedEx")) return CUBLAS_STATUS_NOT_INITIALIZED;
    struct rec *r;
    gemm_rec("gemm_batched", inside ? NULL : handle_stream(h), m, n, k, batch,
             (double)cuda_type_size(at), &r);
    inside++;
    cublasStatus_t st = fn(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct,
                           ldc, sc, batch, comp, algo);
    inside--;
    gemm_done(r);
    return st;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lh, cublasLtMatmulDesc_t desc, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t ad, const void *B,
                              cublasLtMatrixLayout_t bd, const void *beta, const void *C,
                              cublasLtMatrixLayout_t cd, void *D, cublasLtMatrixLayout_t dd,
                              const cublasLtMatmulAlgo_t *algo, void *ws, size_t wss,
                              cudaStream_t stream)
{
    static cublasStatus_t (*fn)(
        cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *, cublasLtMatrixLayout_t,
        const void *, cublasLtMatrixLayout_t, const void *, const void *, cublasLtMatrixLayout_t,
        void *, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t);
    static cublasStatus_t (*attr)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, void *,
                                  size_t, size_t *);
    static cublasStatus_t (*dattr)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, void *,
                                   size_t, size_t *);
    if (!RESOLVE(fn, "cublasLtMatmul")) return CUBLAS_STATUS_NOT_INITIALIZED;
    RESOLVE(attr, "cublasLtMatrixLayoutGetAttribute");
    RESOLVE(dattr, "cublasLtMatmulDescGetAttribute");
    struct rec *r = NULL;
    if (!inside && attr && dattr) {
        uint64_t arows = 0, acols = 0, drows = 0, dcols = 0;
        int32_t batch = 1, ta = CUBLAS_OP_N;
        uint32_t type = CUDA_R_16F;
        size_t w;
        inside++;
        attr(ad, CUBLASLT_MATRIX_LAYOUT_ROWS, &arows, sizeof arows, &w);
        attr(ad, CUBLASLT_MATRIX_LAYOUT_COLS, &acols, sizeof acols, &w);
        attr(ad, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof type, &w);
        attr(dd, CUBLASLT_MATRIX_LAYOUT_ROWS, &drows, sizeof drows, &w);
        attr(dd, CUBLASLT_MATRIX_LAYOUT_COLS, &dcols, sizeof dcols, &w);
        attr(dd, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch, &w);
        dattr(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta, &w);
        inside--;
        double k = ta == CUBLAS_OP_N ? (double)acols : (double)arows;
        gemm_rec("lt_matmul", stream, (double)drows, (double)dcols, k, batch > 1 ? batch : 1,
                 (double)cuda_type_size((cudaDataType)type), &r);
    }
    inside++;
    cublasStatus_t st =
        fn(lh, desc, alpha, A, ad, B, bd, beta, C, cd, D, dd, algo, ws, wss, stream);
    inside--;
    gemm_done(r);
    return st;
}

/* ------------------------------------------------------------------ output */

static int mkdir_p(const char *dir)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

static void write_trace(void)
{
    pthread_mutex_lock(&mtx);
    int rank = rank_of_process();
    double *t0 = calloc((size_t)nrecs + 1, sizeof *t0), *t1 = calloc((size_t)nrecs + 1, sizeof *t1);
    int *stream_of = calloc((size_t)nrecs + 1, sizeof *stream_of);
    if (!t0 || !t1 || !stream_of || mkdir_p(outdir) != 0) {
        fprintf(stderr, "tpsim tracer: cannot write the trace to %s\n", outdir);
        pthread_mutex_unlock(&mtx);
        return;
    }
    cudaEvent_t base = nrecs ? recs[0].ev0 : NULL;
    for (int i = 0; i < nrecs; i++) {
        struct rec *r = &recs[i];
        float a = 0, b = 0;
        if (r->ev1) ev_sync(r->ev1);
        if (base && r->ev0) ev_elapsed(&a, base, r->ev0);
        if (base && r->ev1) ev_elapsed(&b, base, r->ev1);
        t0[i] = a * 1e-3;
        t1[i] = b * 1e-3 > t0[i] ? b * 1e-3 : t0[i];
        /* collectives on stream 1; sends on 2 and receives on 3, so that the two directions of
         * an exchange grouped by ncclGroupStart/End cannot wait for each other on replay */
        if (r->kind > K_ATTN) stream_of[i] = r->kind != K_SENDRECV ? 1 : r->name[0] == 's' ? 2 : 3;
    }
    char path[700];
    snprintf(path, sizeof path, "%s/rank-%05d.tps", outdir, rank);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f,
                "tpsim-trace 4 rank %d\n# recorded by libtpsim_tracer.so; groups are local "
                "communicator indices until `tpsim trace-merge`; launch_s is the host time since "
                "the previous call\n",
                rank);
        fprintf(f, "# id stream kind phase layer mb name dur_s flop bytes group deps rec_start "
                   "rec_end launch_s iter warmup\n");
        for (int i = 0; i < nrecs; i++) {
            const struct rec *r = &recs[i];
            /* the last op of another stream that ended before this one started */
            int dep = -1;
            for (int j = i - 1; j >= 0; j--)
                if (stream_of[j] != stream_of[i] && t1[j] <= t0[i]) {
                    dep = j;
                    break;
                }
            static const char *const phase[] = {"fwd", "bwd", "other"};
            fprintf(f, "%d %d %s %s %d -1 %s %.17g %.17g %.17g %d ", i, stream_of[i],
                    kind_name[r->kind], phase[r->phase], r->layer, r->name, t1[i] - t0[i], r->flop,
                    r->bytes, r->kind <= K_ATTN ? -1 : r->comm);
            if (dep >= 0)
                fprintf(f, "%d", dep);
            else
                fputc('-', f);
            double host = i && record_host ? r->host_s - recs[i - 1].host_s : 0;
            fprintf(f, " %.17g %.17g %.17g %d %d\n", t0[i], t1[i], host > 0 ? host : 0, r->iter,
                    r->warmup);
        }
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/comms-%05d.tps", outdir, rank);
    f = fopen(path, "w");
    if (f) {
        fprintf(f, "# local-id identity nranks rank-in-communicator\n");
        for (int c = 0; c < ncomms; c++)
            fprintf(f, "comm %d %016llx %d %d\n", c, (unsigned long long)comms[c].id,
                    comms[c].nranks, comms[c].rank);
        fclose(f);
    }
    for (int i = 0; i < nrecs; i++) {
        if (recs[i].shared_events == 1) continue;
        if (recs[i].ev0) ev_destroy(recs[i].ev0);
        if (recs[i].ev1) ev_destroy(recs[i].ev1);
    }
    free(t0);
    free(t1);
    free(stream_of);
    free(recs);
    recs = NULL;
    nrecs = caprecs = 0;
    pthread_mutex_unlock(&mtx);
}
