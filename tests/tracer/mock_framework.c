/* mock_framework.c - a shared object standing in for a framework's CUDA extension (PyTorch's
 * libtorch_cuda.so): it links the mock cuBLAS, NCCL and CUDA runtime, and the test program
 * loads it with dlopen(RTLD_LOCAL), so those libraries are not in the global search order.
 *
 * framework_run(rank, nranks, iters): a world communicator (ncclCommInitRankConfig), split by
 * color rank % 2 into two subgroups (ncclCommSplit, as torch.distributed.new_group does); then
 * per iteration, inside NVTX ranges "iteration N" and "layer 0 forward/backward": a cublasGemmEx
 * (which the mock cuBLAS runs through cublasLtMatmul), a direct cublasLtMatmul, an all-reduce on
 * the subgroup, a second GEMM shape and an all-reduce on the world. With MOCK_PROFILE set, each
 * iteration after the first runs inside cudaProfilerStart/Stop. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_profiler_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nvtxRangePushA(const char *msg); /* NVTX 2 (mock_cudart provides it) */
int nvtxRangePop(void);

int framework_run(int rank, int nranks, int iters);
int framework_run(int rank, int nranks, int iters)
{
    ncclUniqueId id;
    memset(&id, 9, sizeof id);
    ncclComm_t world, sub;
    if (ncclCommInitRankConfig(&world, nranks, id, rank, NULL) != ncclSuccess) return 1;
    if (ncclCommSplit(world, rank % 2, rank, &sub, NULL) != ncclSuccess) return 1;
    int profile = getenv("MOCK_PROFILE") != NULL;
    for (int it = 0; it < iters; it++) {
        char name[32];
        snprintf(name, sizeof name, "iteration %d", it);
        if (profile && it > 0) cudaProfilerStart();
        nvtxRangePushA(name);
        nvtxRangePushA("layer 0 forward");
        cublasGemmEx(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 512, 256, 1024, NULL, NULL, CUDA_R_16BF, 512,
                     NULL, CUDA_R_16BF, 1024, NULL, NULL, CUDA_R_16BF, 512, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT);
        cublasLtMatmulDescOpaque_t desc = {{CUBLAS_OP_N}};
        cublasLtMatrixLayoutOpaque_t a = {{256, 128, CUDA_R_16BF, 1}},
                                     b = {{128, 64, CUDA_R_16BF, 1}},
                                     d = {{256, 64, CUDA_R_16BF, 1}};
        cublasLtMatmul(NULL, &desc, NULL, NULL, &a, NULL, &b, NULL, NULL, &d, NULL, &d, NULL, NULL,
                       0, NULL);
        ncclAllReduce(NULL, NULL, 131072, ncclBfloat16, ncclSum, sub, NULL);
        nvtxRangePop();
        nvtxRangePushA("layer 0 backward");
        cublasGemmEx(NULL, CUBLAS_OP_T, CUBLAS_OP_N, 1024, 256, 256, NULL, NULL, CUDA_R_16BF, 256,
                     NULL, CUDA_R_16BF, 256, NULL, NULL, CUDA_R_16BF, 1024, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT);
        ncclAllReduce(NULL, NULL, 262144, ncclBfloat16, ncclSum, world, NULL);
        nvtxRangePop();
        nvtxRangePop();
        if (profile && it > 0) cudaProfilerStop();
    }
    ncclCommDestroy(sub);
    ncclCommDestroy(world);
    return 0;
}
