/* testdir.h - a private scratch directory per test: tests never share fixed names in /tmp, so
 * two checkouts can run the suite at once. Header-only; for tests. */
#ifndef TPSIM_TESTDIR_H
#define TPSIM_TESTDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Creates $TMPDIR/tpsim-test-XXXXXX (or under /tmp) into dir (at least 256 bytes). */
static inline char *testdir_make(char *dir, size_t len)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, len, "%s/tpsim-test-XXXXXX", t && t[0] && strlen(t) < 200 ? t : "/tmp");
    return mkdtemp(dir);
}

static inline int testdir_rm1(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
    (void)sb;
    (void)flag;
    (void)f;
    return remove(p);
}

/* Removes the directory and everything in it. */
static inline void testdir_remove(const char *dir)
{
    nftw(dir, testdir_rm1, 16, FTW_DEPTH | FTW_PHYS);
}

/* dir "/" name into out. */
static inline const char *testdir_path(char *out, size_t len, const char *dir, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
    return out;
}

#endif
