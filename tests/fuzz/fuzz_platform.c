/* fuzz_platform.c - libFuzzer target: platform topology files (presets with parameters, explicit
 * graphs, nccl sections, includes of other files in the same directory). */
#include "fuzz.h"
#include "platforms/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    const uint8_t *piece[2];
    size_t len[2];
    int k = fuzz_split(data, n, piece, len, 2);
    fuzz_file("other.yaml", k > 1 ? piece[1] : (const uint8_t *)"", k > 1 ? len[1] : 0);
    const char *path = fuzz_file("p.yaml", piece[0], len[0]);
    struct plat_topo t;
    struct tps_error err = {0};
    plat_spec_from_args(path, 0, NULL, &t, &err);
    plat_topo_release(&t);
    return 0;
}
