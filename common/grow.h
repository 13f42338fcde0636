/* grow.h - growing a malloc'ed array by doubling: the one place that does it. */
#ifndef TPS_GROW_H
#define TPS_GROW_H

#include <stddef.h>

/* Makes room for `need` elements of `elem` bytes in the array *buf points to (buf is a pointer
 * to the array pointer; *cap its capacity), doubling from `first`. Returns 0, or -1 with the
 * array unchanged when memory runs out. */
int tps_grow(void *buf, int *cap, int need, size_t elem, int first);

#endif
