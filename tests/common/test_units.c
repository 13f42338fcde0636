/* test_units.c - quantity parsing: sizes, rates, times. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "common/stats.h"
#include "common/units.h"

TestSuite(units);

Test(units, parses_sizes_decimal_binary_and_shorthand)
{
    double v;
    cr_assert(eq(int, tps_units_size("4096", &v), 0));
    cr_assert(eq(dbl, v, 4096));
    cr_assert(eq(int, tps_units_size("1.5GB", &v), 0));
    cr_assert(eq(dbl, v, 1.5e9));
    cr_assert(eq(int, tps_units_size("256MiB", &v), 0));
    cr_assert(eq(dbl, v, 256.0 * 1048576));
    cr_assert(eq(int, tps_units_size("8G", &v), 0));
    cr_assert(eq(dbl, v, 8.0 * 1073741824));
}

Test(units, parses_rates_in_bytes_and_bits)
{
    double v;
    cr_assert(eq(int, tps_units_rate("300GBps", &v), 0));
    cr_assert(eq(dbl, v, 300e9));
    cr_assert(eq(int, tps_units_rate("200Gbps", &v), 0));
    cr_assert(eq(dbl, v, 25e9));
    cr_assert(eq(int, tps_units_rate("31 GB/s", &v), 0));
    cr_assert(eq(dbl, v, 31e9));
}

Test(units, parses_times)
{
    double v;
    cr_assert(eq(int, tps_units_time("1.5us", &v), 0));
    cr_assert(ieee_ulp_eq(dbl, v, 1.5e-6, 4));
    cr_assert(eq(int, tps_units_time("2ms", &v), 0));
    cr_assert(ieee_ulp_eq(dbl, v, 2e-3, 4));
}

Test(units, rejects_garbage)
{
    double v;
    cr_assert(eq(int, tps_units_size("12 furlongs", &v), -1));
    cr_assert(eq(int, tps_units_rate("fast", &v), -1));
    cr_assert(eq(int, tps_units_time("1.5 fortnights", &v), -1));
    cr_assert(eq(int, tps_units_size("", &v), -1));
}

Test(stats, median_and_max_of_odd_even_and_empty_samples)
{
    double odd[] = {3, 1, 2}, even[] = {4, 1, 3, 2}, med = -1, max = -1;
    tps_median_max(odd, 3, &med, &max);
    cr_assert(eq(dbl, med, 2));
    cr_assert(eq(dbl, max, 3));
    tps_median_max(even, 4, &med, NULL);
    cr_assert(eq(dbl, med, 2.5));
    cr_assert(eq(dbl, even[0], 1)); /* sorted in place */
    tps_median_max(NULL, 0, &med, &max);
    cr_assert(eq(dbl, med, 0));
    cr_assert(eq(dbl, max, 0));
}
