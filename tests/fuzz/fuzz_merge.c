/* fuzz_merge.c - libFuzzer target: tpsim trace-merge on a tracer output directory (two ranks'
 * rank-NNNNN.tps and comms-NNNNN.tps, cut from the input at "=====" lines), then the reader on
 * what it wrote. */
#include "fuzz.h"
#include "models/program.h"
#include "core/trace.h"
#include "core/tracemerge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    const uint8_t *piece[4];
    size_t len[4] = {0};
    int k = fuzz_split(data, n, piece, len, 4);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/rec", fuzz_scratch());
    testdir_remove(dir);
    mkdir(dir, 0700);
    static const char *const names[4] = {"rec/rank-00000.tps", "rec/comms-00000.tps",
                                         "rec/rank-00001.tps", "rec/comms-00001.tps"};
    for (int i = 0; i < 4; i++)
        fuzz_file(names[i], i < k ? piece[i] : (const uint8_t *)"", i < k ? len[i] : 0);
    struct tps_error err = {0};
    char out[700];
    snprintf(out, sizeof out, "%s/merged", dir);
    if (trace_merge(dir, NULL, "dgx-a100", 1, &err) == 0) {
        struct mdl_program p;
        struct tps_error e2 = {0};
        trace_read(out, &p, NULL, 0, &e2);
        mdl_program_release(&p);
    }
    return 0;
}
