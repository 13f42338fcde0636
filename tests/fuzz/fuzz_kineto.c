/* fuzz_kineto.c - libFuzzer target: `tpsim import kineto` on the input as a PyTorch profiler trace
 * (JSON; gzip is zlib's own reader). */
#include "fuzz.h"
#include "validate/kineto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    const char *in = fuzz_file("trace.json", data, n);
    static char out[600];
    snprintf(out, sizeof out, "%s/out", fuzz_scratch());
    struct kin_summary s;
    struct tps_error err = {0};
    kin_import(&in, 1, -1, out, NULL, &s, &err);
    return 0;
}
