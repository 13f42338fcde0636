/* readall.h - reading a whole file descriptor into memory, in growing steps, up to a limit. */
#ifndef TPS_READALL_H
#define TPS_READALL_H

#include <stddef.h>

/* Reads fd from its current position to the end into a malloc'ed, NUL-terminated buffer of
 * *len bytes. Returns NULL with errno set on failure: EFBIG when there are more than `max`
 * bytes, ENOMEM, or the read's own error (EISDIR for a directory). */
char *tps_read_all(int fd, size_t max, size_t *len);

struct tps_error;

/* The length of the UTF-8 byte-order mark (EF BB BF) that text starts with, as spreadsheets save
 * CSV: 3, or 0 when there is none. */
size_t tps_bom_len(const char *text);

/* The whole file at path, as tps_read_all reads it, less a leading UTF-8 byte-order mark, or
 * NULL with *err set: cannot open, cannot read (a directory is named as such), out of memory,
 * or larger than `max` bytes ("larger than N MiB: not WHAT"). */
char *tps_read_file(const char *path, size_t max, const char *what, size_t *len,
                    struct tps_error *err);

#endif
