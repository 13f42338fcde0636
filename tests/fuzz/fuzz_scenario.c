/* fuzz_scenario.c - libFuzzer target: the scenario loader (YAML, model, device, platform,
 * strategy, run) on arbitrary bytes. Any input must give TPS_OK or an error, never a crash. */
#include "fuzz.h"
#include "core/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    const char *path = fuzz_file("s.yaml", data, n);
    struct scn_scenario s;
    struct tps_error err = {0};
    scn_load(path, &s, &err);
    scn_release(&s);
    return 0;
}
