/* units.c - quantity parsing with unit suffixes (see units.h). Units: bytes, bytes/s, seconds. */
#include "units.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct unit {
    const char *suffix;
    double scale;
};

static int parse_with(const char *text, const struct unit *units, double *out)
{
    if (!text) return -1;
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || !isfinite(v)) return -1;
    while (*end == ' ')
        end++;
    for (const struct unit *u = units; u->suffix; u++) {
        if (strcmp(end, u->suffix) == 0) {
            *out = v * u->scale;
            return 0;
        }
    }
    return -1;
}

int tps_units_size(const char *text, double *bytes)
{
    static const struct unit units[] = {{"", 1},
                                        {"B", 1},
                                        {"KB", 1e3},
                                        {"MB", 1e6},
                                        {"GB", 1e9},
                                        {"TB", 1e12},
                                        {"KiB", 1024.0},
                                        {"MiB", 1048576.0},
                                        {"GiB", 1073741824.0},
                                        {"TiB", 1099511627776.0},
                                        {"K", 1024.0},
                                        {"M", 1048576.0},
                                        {"G", 1073741824.0},
                                        {"T", 1099511627776.0},
                                        {NULL, 0}};
    return parse_with(text, units, bytes);
}

int tps_units_rate(const char *text, double *bytes_per_s)
{
    static const struct unit units[] = {
        {"Bps", 1},     {"KBps", 1e3},   {"MBps", 1e6},    {"GBps", 1e9},    {"TBps", 1e12},
        {"B/s", 1},     {"KB/s", 1e3},   {"MB/s", 1e6},    {"GB/s", 1e9},    {"TB/s", 1e12},
        {"bps", 0.125}, {"Kbps", 125.0}, {"Mbps", 1.25e5}, {"Gbps", 1.25e8}, {"Tbps", 1.25e11},
        {"b/s", 0.125}, {"Kb/s", 125.0}, {"Mb/s", 1.25e5}, {"Gb/s", 1.25e8}, {"Tb/s", 1.25e11},
        {NULL, 0}};
    return parse_with(text, units, bytes_per_s);
}

int tps_units_time(const char *text, double *seconds)
{
    static const struct unit units[] = {{"", 1},      {"s", 1},     {"ms", 1e-3},
                                        {"us", 1e-6}, {"ns", 1e-9}, {NULL, 0}};
    return parse_with(text, units, seconds);
}
