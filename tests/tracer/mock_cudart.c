/* mock_cudart.c - stands in for libcudart in the tracer tests: events read a fake clock that the
 * mock NCCL and cuBLAS advance by known amounts (mock_advance). Single stream, serial. */
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <stdlib.h>

static double clock_s; /* fake GPU time, s */

void mock_advance(double s);
void mock_advance(double s)
{
    clock_s += s;
}

struct CUevent_st {
    double t;
    int recorded;
};

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
    (void)flags;
    *e = calloc(1, sizeof **e);
    return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    (void)s;
    e->t = clock_s;
    e->recorded = 1;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    return e->recorded ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    *ms = (float)((b->t - a->t) * 1e3);
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    free(e);
    return cudaSuccess;
}

cudaError_t cudaProfilerStart(void)
{
    return cudaSuccess;
}

cudaError_t cudaProfilerStop(void)
{
    return cudaSuccess;
}

/* NVTX 2 stand-ins (libnvToolsExt), so that the mock program can mark layers. */
int nvtxRangePushA(const char *msg);
int nvtxRangePop(void);
static int depth;
int nvtxRangePushA(const char *msg)
{
    (void)msg;
    return depth++;
}
int nvtxRangePop(void)
{
    return --depth;
}
