/* hash.h - FNV-1a, 64 bits: the identities tpsim writes beside its outputs (a sweep's id, a
 * split's points hash, a plan's identity), stable across builds and machines. Header-only. */
#ifndef TPS_HASH_H
#define TPS_HASH_H

#include <stddef.h>
#include <stdint.h>

#define TPS_FNV_OFFSET 14695981039346656037ULL

/* Folds n bytes at p into *h (start from TPS_FNV_OFFSET). */
static inline void tps_fnv1a(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        *h = (*h ^ s[i]) * 1099511628211ULL;
}

#endif
