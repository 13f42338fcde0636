/* mock_app.c - a two-rank "training step" against the mock libraries: run once per rank with
 * RANK=0 and RANK=1 under LD_PRELOAD=libtpsim_tracer.so. */
#include <cublas_v2.h>
#include <nccl.h>
#include <stdlib.h>

int nvtxRangePushA(const char *msg); /* NVTX 2 (the mock provides it) */
int nvtxRangePop(void);
#include <string.h>

int main(void)
{
    const char *rs = getenv("RANK");
    int rank = rs ? atoi(rs) : 0;
    ncclUniqueId id;
    memset(&id, 7, sizeof id); /* both ranks name the same communicator */
    ncclComm_t comm;
    ncclCommInitRank(&comm, 2, id, rank);
    nvtxRangePushA("forward layer 0");
    cublasSgemm_v2(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 1024, 1024, 1024, NULL, NULL, 1024, NULL, 1024,
                   NULL, NULL, 1024);
    ncclAllReduce(NULL, NULL, 262144, ncclFloat32, ncclSum, comm, NULL); /* 1 MiB */
    nvtxRangePop();
    nvtxRangePushA("backward");
    nvtxRangePushA("TransformerLayer.1");
    cublasGemmStridedBatchedEx(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 128, 128, 64, NULL, NULL, CUDA_R_32F,
                               128, 0, NULL, CUDA_R_32F, 64, 0, NULL, NULL, CUDA_R_32F, 128, 0, 16,
                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    ncclGroupStart();
    ncclSend(NULL, 65536, ncclFloat32, 1 - rank, comm, NULL);
    ncclRecv(NULL, 65536, ncclFloat32, 1 - rank, comm, NULL);
    ncclGroupEnd();
    nvtxRangePop();
    nvtxRangePop();
    ncclAllGather(NULL, NULL, 1000, ncclFloat32, comm, NULL);
    ncclCommDestroy(comm);
    return 0;
}
