/* fuzz_trace.c - libFuzzer target: the trace reader on a directory of meta.tps and two rank files
 * cut from the input at "=====" lines. */
#include "fuzz.h"
#include "models/program.h"
#include "core/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    const uint8_t *piece[3];
    size_t len[3] = {0};
    int k = fuzz_split(data, n, piece, len, 3);
    static const char *const names[3] = {"meta.tps", "rank-00000.tps", "rank-00001.tps"};
    for (int i = 0; i < 3; i++)
        fuzz_file(names[i], i < k ? piece[i] : (const uint8_t *)"", i < k ? len[i] : 0);
    struct mdl_program p;
    struct tps_error err = {0};
    char plat[256];
    trace_read(fuzz_scratch(), &p, plat, sizeof plat, &err);
    mdl_program_release(&p); /* released even on failure, as trace.h says */
    return 0;
}
