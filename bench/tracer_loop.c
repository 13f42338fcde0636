/* tracer_loop.c - N all-reduces and N GEMMs against the mock libraries of tests/tracer, to time
 * the tracer's cost per intercepted call (bench/tracer_overhead.sh). */
#include <cublas_v2.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    ncclUniqueId id;
    memset(&id, 1, sizeof id);
    ncclComm_t comm;
    ncclCommInitRank(&comm, 2, id, 0);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        ncclAllReduce(NULL, NULL, 1024, ncclFloat32, ncclSum, comm, NULL);
        cublasSgemm_v2(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, NULL, NULL, 64, NULL, 64, NULL,
                       NULL, 64);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
    printf("%.1f ns per call\n", s / (2.0 * n) * 1e9);
    ncclCommDestroy(comm);
    return 0;
}
