/* mock_cublas.c - stands in for libcublas in the tracer tests: a GEMM "runs" for
 * 1 us + FLOPs / 10 TFLOP/s on the fake clock of mock_cudart. */
#include <cublas_v2.h>

void mock_advance(double s);

cublasStatus_t cublasGetStream_v2(cublasHandle_t h, cudaStream_t *s)
{
    (void)h;
    *s = NULL;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const float *alpha, const float *A, int lda,
                              const float *B, int ldb, const float *beta, float *C, int ldc)
{
    (void)h, (void)ta, (void)tb, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta;
    (void)C, (void)ldc;
    mock_advance(1e-6 + 2.0 * m * n * k / 1e13);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType at,
                                          int lda, long long int sa, const void *B, cudaDataType bt,
                                          int ldb, long long int sb, const void *beta, void *C,
                                          cudaDataType ct, int ldc, long long int sc, int batch,
                                          cublasComputeType_t comp, cublasGemmAlgo_t algo)
{
    (void)h, (void)ta, (void)tb, (void)alpha, (void)A, (void)at, (void)lda, (void)sa, (void)B;
    (void)bt, (void)ldb, (void)sb, (void)beta, (void)C, (void)ct, (void)ldc, (void)sc, (void)comp;
    (void)algo;
    mock_advance(1e-6 + 2.0 * m * n * k * batch / 1e13);
    return CUBLAS_STATUS_SUCCESS;
}
