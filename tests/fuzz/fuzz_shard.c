/* fuzz_shard.c - libFuzzer target: a sweep split's manifest (DIR/sweep.json, core/shard.h), which
 * `sweep merge`, `status` and every later shard read. Any input must give TPS_OK or an error,
 * never a crash. */
#include "fuzz.h"
#include "core/shard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    fuzz_file("sweep.json", data, n);
    struct shard_manifest m;
    struct tps_error err = {0};
    shard_manifest_load(fuzz_scratch(), &m, &err);
    shard_manifest_release(&m);
    return 0;
}
