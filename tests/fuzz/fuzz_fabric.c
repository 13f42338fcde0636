/* fuzz_fabric.c - libFuzzer target: a multi-job file (jobs sharing one platform: each job's
 * scenario, names, GPU lists and placement, the ops of all jobs together). Any input must give
 * TPS_OK or an error, never a crash. */
#include "fuzz.h"
#include "core/fabric.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    const char *path = fuzz_file("jobs.yaml", data, n);
    struct scn_fabric f;
    struct tps_error err = {0};
    scn_fabric_load(path, &f, &err);
    scn_fabric_release(&f);
    return 0;
}
