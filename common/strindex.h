/* strindex.h - a hash index over names that live elsewhere (an array of entries): name -> entry
 * number in O(1), so that interning op names or looking up topology nodes stays linear in the
 * input. Open addressing with linear probing, FNV-1a hashing; the index never owns the names. */
#ifndef TPS_STRINDEX_H
#define TPS_STRINDEX_H

/* The name of entry i of the indexed array. */
typedef const char *(*tps_strindex_key)(const void *ctx, int i);

struct tps_strindex {
    int *slot; /* owned: entry + 1, 0 empty */
    int cap;   /* a power of two, at least twice the entries */
    int n;     /* entries indexed: 0..n-1 */
};

/* The entry named `name`, or -1. */
int tps_strindex_find(const struct tps_strindex *x, const char *name, tps_strindex_key key,
                      const void *ctx);
/* Indexes entries x->n..n-1 (appended to the array since the last call); an entry whose name
 * is already indexed keeps the first. 0, or -1 when memory runs out. */
int tps_strindex_update(struct tps_strindex *x, int n, tps_strindex_key key, const void *ctx);
void tps_strindex_release(struct tps_strindex *x);

#endif
