/* fuzz_sweep.c - libFuzzer target: a scenario's sweep section, the scenario of its first and last
 * points (libyaml's emitter), and the loader on them. */
#include "fuzz.h"
#include "core/scenario.h"
#include "core/sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    const char *path = fuzz_file("sw.yaml", data, n);
    struct sweep sw;
    struct tps_error err = {0};
    if (sweep_load(path, &sw, &err) != 0) return 0;
    long pts[2] = {0, sw.npoints - 1};
    for (int i = 0; i < 2; i++) {
        char out[600];
        snprintf(out, sizeof out, "%s/point.yaml", fuzz_scratch());
        struct tps_error e2 = {0};
        if (sweep_write_point(&sw, pts[i], out, &e2) == 0) {
            struct scn_scenario s;
            scn_load_in(out, path, &s, &e2);
            scn_release(&s);
        }
        char disp[512];
        sweep_display(sw.vals[0][sweep_index(&sw, pts[i], 0)], disp, sizeof disp);
    }
    sweep_release(&sw);
    return 0;
}
