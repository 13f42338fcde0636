/* mock_nccl.c - stands in for libnccl in the tracer tests. Collectives "run" on the fake clock of
 * mock_cudart for what a ring costs on two GPUs joined by a 10 GB/s, 1 us link (the platform
 * tests/data/good/mock-platform.yaml): all-reduce 2(n-1)(a + S/(nB)), all-gather
 * (n-1)(a + S/(nB)), send or receive a + S/B. Calls between ncclGroupStart and ncclGroupEnd run
 * concurrently at ncclGroupEnd (both directions of an exchange use their own link direction).
 * ncclCommSplit cannot ask the other ranks their colors: the mock supposes, as the tests call it,
 * that color = parent rank mod MOCK_SPLIT_COLORS (environment, default 2). */
#include <nccl.h>
#include <stdlib.h>

void mock_advance(double s);

struct ncclComm {
    int nranks, rank;
};

#define ALPHA 1e-6
#define BW    1e10

static int in_group;
static double group_time;

static void run(double t)
{
    if (in_group)
        group_time = t > group_time ? t : group_time;
    else
        mock_advance(t);
}

static double esize(ncclDataType_t t)
{
    return t == ncclFloat16 || t == ncclBfloat16 ? 2 : 4;
}

static double ring(int steps, int n, double bytes)
{
    return steps * (ALPHA + bytes / n / BW);
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    (void)id;
    *comm = calloc(1, sizeof **comm);
    (*comm)->nranks = nranks;
    (*comm)->rank = rank;
    return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t *config)
{
    (void)config, (void)id;
    *comm = calloc(1, sizeof **comm);
    (*comm)->nranks = nranks;
    (*comm)->rank = rank;
    return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config)
{
    (void)key, (void)config;
    const char *e = getenv("MOCK_SPLIT_COLORS");
    int colors = e ? atoi(e) : 2;
    if (color == NCCL_SPLIT_NOCOLOR || colors < 1) {
        *newcomm = NULL;
        return ncclSuccess;
    }
    *newcomm = calloc(1, sizeof **newcomm);
    (*newcomm)->nranks = (comm->nranks - color + colors - 1) / colors;
    (*newcomm)->rank = comm->rank / colors;
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    free(comm);
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    free(comm);
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    *count = comm->nranks;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    *rank = comm->rank;
    return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream)
{
    (void)s, (void)r, (void)op, (void)stream;
    run(ring(2 * (comm->nranks - 1), comm->nranks, (double)count * esize(t)));
    return ncclSuccess;
}

ncclResult_t ncclAllGather(const void *s, void *r, size_t count, ncclDataType_t t, ncclComm_t comm,
                           cudaStream_t stream)
{
    (void)s, (void)r, (void)t, (void)stream;
    run(ring(comm->nranks - 1, comm->nranks, (double)count * 4 * comm->nranks));
    return ncclSuccess;
}

ncclResult_t ncclSend(const void *s, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    (void)s, (void)t, (void)peer, (void)comm, (void)stream;
    run(ALPHA + (double)count * 4 / BW);
    return ncclSuccess;
}

ncclResult_t ncclRecv(void *r, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    (void)r, (void)t, (void)peer, (void)comm, (void)stream;
    run(ALPHA + (double)count * 4 / BW);
    return ncclSuccess;
}

ncclResult_t ncclGroupStart(void)
{
    in_group++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
    if (--in_group == 0 && group_time > 0) {
        mock_advance(group_time);
        group_time = 0;
    }
    return ncclSuccess;
}
