/* fuzz_job.c - libFuzzer target: a whole-job scenario (strategy pp/dp, pipeline, training):
 * the loader, the job's op count (mdl_job_ops, which bounds its own work), and, for a job small
 * enough to lower in a fuzzer's time, its op-by-op lowering and the replay's plain-data check.
 * Any input must give TPS_OK or an error, never a crash. */
#include "fuzz.h"
#include "core/scenario.h"
#include "models/job.h"
#include "models/program.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    const char *path = fuzz_file("job.yaml", data, n);
    struct scn_scenario s;
    struct tps_error err = {0};
    if (scn_load(path, &s, &err) == TPS_OK && s.is_job) {
        double ops = mdl_job_ops(&s.job, &s.strategy, &s.model, &s.device, &s.framework, NULL);
        if (ops > 0 && ops <= 2e5) {
            struct mdl_program p = {0};
            struct mdl_check_at at;
            if (mdl_job_lower(&s.job, &s.strategy, &s.model, &s.device, &s.framework, NULL,
                              MDL_REPLICAS_FULL, &p, &err) == TPS_OK)
                mdl_program_check(&p, &at, &err);
            mdl_program_release(&p);
        }
    }
    scn_release(&s);
    return 0;
}
