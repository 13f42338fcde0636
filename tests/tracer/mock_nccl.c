/* mock_nccl.c - stands in for libnccl in the tracer tests: every collective "runs" for
 * 2 us + bytes / 10 GB/s on the fake clock of mock_cudart; group calls run at ncclGroupEnd. */
#include <nccl.h>
#include <stdlib.h>

void mock_advance(double s);

struct ncclComm {
    int nranks, rank;
};

static int in_group;
static double group_bytes;

static void run(double bytes)
{
    if (in_group)
        group_bytes += bytes;
    else
        mock_advance(2e-6 + bytes / 1e10);
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    (void)id;
    *comm = calloc(1, sizeof **comm);
    (*comm)->nranks = nranks;
    (*comm)->rank = rank;
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
    (void)s, (void)r, (void)t, (void)op, (void)comm, (void)stream;
    run((double)count * 4);
    return ncclSuccess;
}

ncclResult_t ncclAllGather(const void *s, void *r, size_t count, ncclDataType_t t, ncclComm_t comm,
                           cudaStream_t stream)
{
    (void)s, (void)r, (void)t, (void)stream;
    run((double)count * 4 * comm->nranks);
    return ncclSuccess;
}

ncclResult_t ncclSend(const void *s, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    (void)s, (void)t, (void)peer, (void)comm, (void)stream;
    run((double)count * 4);
    return ncclSuccess;
}

ncclResult_t ncclRecv(void *r, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    (void)r, (void)t, (void)peer, (void)comm, (void)stream;
    run((double)count * 4);
    return ncclSuccess;
}

ncclResult_t ncclGroupStart(void)
{
    in_group++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
    if (--in_group == 0 && group_bytes > 0) {
        mock_advance(2e-6 + group_bytes / 1e10);
        group_bytes = 0;
    }
    return ncclSuccess;
}
