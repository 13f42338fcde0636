/* mock_cublas.c - stands in for libcublas in the tracer tests: a GEMM "runs" for
 * 1 us + FLOPs / 10 TFLOP/s on the fake clock of mock_cudart (cublasGemmEx through mock_cublaslt).
 */
#include <cublasLt.h>
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

/* cublasGemmEx runs through cublasLt, as the real libcublas does for most GEMMs: the tracer must
 * record it once. */
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType at,
                            int lda, const void *B, cudaDataType bt, int ldb, const void *beta,
                            void *C, cudaDataType ct, int ldc, cublasComputeType_t comp,
                            cublasGemmAlgo_t algo)
{
    (void)h, (void)tb, (void)lda, (void)bt, (void)ldb, (void)ct, (void)ldc, (void)comp, (void)algo;
    cublasLtMatmulDescOpaque_t desc = {{(uint64_t)ta}};
    cublasLtMatrixLayoutOpaque_t a = {{ta == CUBLAS_OP_N ? (uint64_t)m : (uint64_t)k,
                                       ta == CUBLAS_OP_N ? (uint64_t)k : (uint64_t)m, (uint64_t)at,
                                       1}};
    cublasLtMatrixLayoutOpaque_t b = {{(uint64_t)k, (uint64_t)n, (uint64_t)at, 1}};
    cublasLtMatrixLayoutOpaque_t d = {{(uint64_t)m, (uint64_t)n, (uint64_t)at, 1}};
    return cublasLtMatmul(NULL, &desc, alpha, A, &a, B, &b, beta, C, &d, C, &d, NULL, NULL, 0,
                          NULL);
}
