/* datasheet.h - the DGX presets as their datasheets give NVLink (300 and 450 GB/s per GPU,
 * 1.5 us per link) rather than the rates fitted on nccl-tests logs: the engine and replay tests
 * write their closed forms with those numbers. */
#ifndef TESTS_SIM_DATASHEET_H
#define TESTS_SIM_DATASHEET_H

#include <string.h>

/* Stores the key=value parameters that pin a preset's NVLink to its datasheet in kv[0..1];
 * returns how many (0 for a preset without NVLink). */
static inline int datasheet_kv(const char *preset, const char **kv)
{
    if (strncmp(preset, "dgx-", 4)) return 0;
    kv[0] = !strncmp(preset, "dgx-h100", 8) ? "gpu_link=450GB/s" : "gpu_link=300GB/s";
    kv[1] = "nvlink_latency=1.5us";
    return 2;
}

#endif
