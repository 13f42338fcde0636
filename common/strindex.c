/* strindex.c - hash index over externally stored names (see strindex.h). */
#include "strindex.h"

#include <stdlib.h>
#include <string.h>

static unsigned hash(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Where `name` is, or the empty slot where it would go. */
static int slot_of(const struct tps_strindex *x, const char *name, tps_strindex_key key,
                   const void *ctx)
{
    unsigned mask = (unsigned)x->cap - 1, i = hash(name) & mask;
    while (x->slot[i] && strcmp(key(ctx, x->slot[i] - 1), name) != 0)
        i = (i + 1) & mask;
    return (int)i;
}

int tps_strindex_find(const struct tps_strindex *x, const char *name, tps_strindex_key key,
                      const void *ctx)
{
    if (!x->cap) return -1;
    int i = slot_of(x, name, key, ctx);
    return x->slot[i] ? x->slot[i] - 1 : -1;
}

int tps_strindex_update(struct tps_strindex *x, int n, tps_strindex_key key, const void *ctx)
{
    if (2 * n > x->cap) { /* grow and index everything again */
        int cap = x->cap ? x->cap : 64;
        while (2 * n > cap)
            cap *= 2;
        int *slot = calloc((size_t)cap, sizeof *slot);
        if (!slot) return -1;
        free(x->slot);
        x->slot = slot;
        x->cap = cap;
        x->n = 0;
    }
    for (; x->n < n; x->n++) {
        int i = slot_of(x, key(ctx, x->n), key, ctx);
        if (!x->slot[i]) x->slot[i] = x->n + 1;
    }
    return 0;
}

void tps_strindex_release(struct tps_strindex *x)
{
    free(x->slot);
    x->slot = NULL;
    x->cap = x->n = 0;
}
