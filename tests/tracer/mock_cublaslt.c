/* mock_cublaslt.c - stands in for libcublasLt in the tracer tests: a matmul "runs" for
 * 1 us + FLOPs / 10 TFLOP/s on the fake clock of mock_cudart. A layout is
 * {rows, cols, type, batch} in its first four words, a descriptor {transa} in its first. */
#include <cublasLt.h>
#include <string.h>

void mock_advance(double s);

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t attr, void *buf,
                                                size_t size, size_t *written)
{
    uint64_t v = attr == CUBLASLT_MATRIX_LAYOUT_ROWS          ? l->data[0]
                 : attr == CUBLASLT_MATRIX_LAYOUT_COLS        ? l->data[1]
                 : attr == CUBLASLT_MATRIX_LAYOUT_TYPE        ? l->data[2]
                 : attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT ? l->data[3]
                                                              : 0;
    /* rows and cols are 64-bit, type and batch count 32-bit */
    if (size == sizeof(uint64_t)) {
        memcpy(buf, &v, sizeof v);
    } else {
        uint32_t w = (uint32_t)v;
        memcpy(buf, &w, sizeof w);
    }
    *written = size;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr, void *buf,
                                              size_t size, size_t *written)
{
    int32_t v = attr == CUBLASLT_MATMUL_DESC_TRANSA ? (int32_t)d->data[0] : 0;
    memcpy(buf, &v, sizeof v < size ? sizeof v : size);
    *written = size;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lh, cublasLtMatmulDesc_t desc, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t ad, const void *B,
                              cublasLtMatrixLayout_t bd, const void *beta, const void *C,
                              cublasLtMatrixLayout_t cd, void *D, cublasLtMatrixLayout_t dd,
                              const cublasLtMatmulAlgo_t *algo, void *ws, size_t wss,
                              cudaStream_t stream)
{
    (void)lh, (void)alpha, (void)A, (void)B, (void)bd, (void)beta, (void)C, (void)cd, (void)D;
    (void)algo, (void)ws, (void)wss, (void)stream;
    double k = desc->data[0] == CUBLAS_OP_N ? (double)ad->data[1] : (double)ad->data[0];
    double batch = dd->data[3] ? (double)dd->data[3] : 1;
    mock_advance(1e-6 + 2.0 * (double)dd->data[0] * (double)dd->data[1] * k * batch / 1e13);
    return CUBLAS_STATUS_SUCCESS;
}
