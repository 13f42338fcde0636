/* fuzz_ncclog.c - libFuzzer target: the nccl-tests log reader (current, old and trimmed
 * layouts) on arbitrary bytes. */
#include "fuzz.h"
#include "validate/ncclog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    const char *path = fuzz_file("log.raw.txt", data, n);
    struct ncl_log l;
    struct tps_error err = {0};
    if (ncl_log_read(path, &l, &err) == 0) ncl_log_release(&l);
    return 0;
}
