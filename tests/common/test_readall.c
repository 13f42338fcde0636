/* test_readall.c - whole files into memory: a spreadsheet's byte-order mark is dropped. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>

#include "../testdir.h"
#include "common/error.h"
#include "common/readall.h"

TestSuite(readall);

Test(readall, a_byte_order_mark_is_told_and_dropped)
{
    cr_assert(eq(sz,
                 tps_bom_len("\xef\xbb\xbf"
                             "a,b"),
                 3));
    cr_assert(eq(sz, tps_bom_len("a,b"), 0));
    cr_assert(eq(sz, tps_bom_len("\xef\xbb"), 0)); /* cut short: stops at the NUL */
    cr_assert(eq(sz, tps_bom_len(""), 0));
    char dir[256], path[300];
    cr_assert(testdir_make(dir, sizeof dir) != NULL);
    testdir_path(path, sizeof path, dir, "t.csv");
    FILE *f = fopen(path, "w");
    cr_assert(f != NULL);
    fputs("\xef\xbb\xbf"
          "model,hidden\n",
          f);
    fclose(f);
    size_t len = 0;
    struct tps_error err = {0};
    char *text = tps_read_file(path, 1 << 20, "a table", &len, &err);
    cr_assert(text != NULL, "%s", err.msg);
    cr_assert(eq(str, text, "model,hidden\n"));
    cr_assert(eq(sz, len, 13));
    free(text);
    testdir_remove(dir);
}
