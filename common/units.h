/* units.h - parsing of quantities with units: sizes (bytes), rates (bytes/s) and times (s).
 *
 * Sizes: "4096", "1.5GB" (decimal: KB MB GB TB), "256MiB" (binary: KiB MiB GiB TiB), and the
 * nccl-tests shorthands "8K", "8M", "8G" (binary). Rates: "300GBps", "300GB/s", "200Gbps",
 * "200Gb/s" (bits are divided by 8). Times: "1.5us", "2ms", "3ns", "0.1s", or a plain number of
 * seconds. All functions return 0 on success, -1 if the text is not a valid quantity.
 */
#ifndef TPS_UNITS_H
#define TPS_UNITS_H

int tps_units_size(const char *text, double *bytes);
int tps_units_rate(const char *text, double *bytes_per_s);
int tps_units_time(const char *text, double *seconds);

#endif
