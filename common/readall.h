/* readall.h - reading a whole file descriptor into memory, in growing steps, up to a limit. */
#ifndef TPS_READALL_H
#define TPS_READALL_H

#include <stddef.h>

/* Reads fd from its current position to the end into a malloc'ed, NUL-terminated buffer of
 * *len bytes. Returns NULL with errno set on failure: EFBIG when there are more than `max`
 * bytes, ENOMEM, or the read's own error (EISDIR for a directory). */
char *tps_read_all(int fd, size_t max, size_t *len);

#endif
