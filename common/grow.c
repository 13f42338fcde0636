/* grow.c - array growth by doubling (see grow.h). */
#include "grow.h"

#include <stdlib.h>
#include <string.h>

int tps_grow(void *buf, int *cap, int need, size_t elem, int first)
{
    if (need <= *cap) return 0;
    int c = *cap ? *cap : first;
    while (c < need)
        c *= 2;
    void *old;
    memcpy(&old, buf, sizeof old);
    void *p = realloc(old, (size_t)c * elem);
    if (!p) return -1;
    memcpy(buf, &p, sizeof p);
    *cap = c;
    return 0;
}
