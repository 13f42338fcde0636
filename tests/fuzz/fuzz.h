/* fuzz.h - helpers shared by the libFuzzer targets: a private scratch directory per process and
 * writing the input (or pieces of it) to files there, since tpsim's readers take paths. */
#ifndef TPSIM_FUZZ_H
#define TPSIM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../testdir.h"

static char fuzz_dir[256];

static inline void fuzz_cleanup(void)
{
    if (fuzz_dir[0]) testdir_remove(fuzz_dir);
}

/* The scratch directory (made on first use, removed at exit). */
static inline const char *fuzz_scratch(void)
{
    if (!fuzz_dir[0]) {
        if (!testdir_make(fuzz_dir, sizeof fuzz_dir)) abort();
        atexit(fuzz_cleanup);
    }
    return fuzz_dir;
}

/* Writes n bytes to scratch/name; returns the path (static buffer per name slot). */
static inline const char *fuzz_file(const char *name, const uint8_t *data, size_t n)
{
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 512, "%s/%s", fuzz_scratch(), name);
    FILE *f = fopen(p, "wb");
    if (!f) abort();
    if (n && fwrite(data, 1, n, f) != n) abort();
    fclose(f);
    return p;
}

/* Splits the input at lines "=====" into at most max pieces; returns the count. */
static inline int fuzz_split(const uint8_t *data, size_t n, const uint8_t **piece, size_t *len,
                             int max)
{
    static const char sep[] = "\n=====\n";
    int k = 0;
    const uint8_t *p = data, *end = data + n;
    while (k < max) {
        const uint8_t *q = k + 1 < max ? memmem(p, (size_t)(end - p), sep, sizeof sep - 1) : NULL;
        piece[k] = p;
        len[k] = (size_t)((q ? q + 1 : end) - p);
        k++;
        if (!q) break;
        p = q + sizeof sep - 1;
    }
    return k;
}

#endif
