/* test_ydoc.c - YAML document accessors report 1-based line/column and the field. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "common/ydoc.h"

TestSuite(ydoc);

Test(ydoc, reports_unknown_key_with_position)
{
    struct tps_ydoc d;
    struct tps_error err = {0};
    cr_assert(
        eq(int, tps_ydoc_load_string(&d, "a: 1\nsub:\n  b: 2\n  zz: 3\n", "t.yaml", &err), 0));
    static const char *const keys[] = {"b", NULL};
    int sub = tps_ydoc_get(&d, tps_ydoc_root(&d), "sub");
    cr_assert(eq(int, tps_ydoc_check_map(&d, sub, "sub", keys, &err), TPS_EINVAL));
    cr_assert(eq(str, err.path, "t.yaml"));
    cr_assert(eq(int, err.line, 4));
    cr_assert(eq(int, err.col, 3));
    cr_assert(eq(str, err.field, "sub.zz"));
    tps_ydoc_release(&d);
}

Test(ydoc, reports_syntax_error_position)
{
    struct tps_ydoc d;
    struct tps_error err = {0};
    cr_assert(eq(int, tps_ydoc_load_string(&d, "a: [1, 2\nb: 3\n", "t.yaml", &err), TPS_ESYNTAX));
    cr_assert(gt(int, err.line, 0));
    cr_assert(gt(int, err.col, 0));
    tps_ydoc_release(&d);
}

Test(ydoc, typed_readers_reject_wrong_types)
{
    struct tps_ydoc d;
    struct tps_error err = {0};
    cr_assert(eq(int, tps_ydoc_load_string(&d, "n: abc\nm: [1]\nz: 0\n", "t.yaml", &err), 0));
    int root = tps_ydoc_root(&d);
    long v;
    cr_assert(eq(int, tps_ydoc_long(&d, tps_ydoc_get(&d, root, "n"), "n", &v, &err), TPS_EINVAL));
    cr_assert(eq(int, err.line, 1));
    cr_assert(eq(int, err.col, 4));
    struct tps_error e2 = {0};
    cr_assert(eq(int, tps_ydoc_long(&d, tps_ydoc_get(&d, root, "m"), "m", &v, &e2), TPS_EINVAL));
    cr_assert(eq(int, e2.line, 2));
    struct tps_error e3 = {0};
    cr_assert(eq(int, tps_ydoc_count(&d, tps_ydoc_get(&d, root, "z"), "z", &v, &e3), TPS_EINVAL));
    cr_assert(eq(int, e3.line, 3));
    tps_ydoc_release(&d);
}

Test(ydoc, rejects_duplicate_keys)
{
    struct tps_ydoc d;
    struct tps_error err = {0};
    cr_assert(eq(int, tps_ydoc_load_string(&d, "a: 1\na: 2\n", "t.yaml", &err), 0));
    static const char *const keys[] = {"a", NULL};
    cr_assert(eq(int, tps_ydoc_check_map(&d, tps_ydoc_root(&d), "", keys, &err), TPS_EINVAL));
    cr_assert(eq(int, err.line, 2));
    tps_ydoc_release(&d);
}
