/* readall.c - whole-file reads (see readall.h). */
#include "readall.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

char *tps_read_all(int fd, size_t max, size_t *len)
{
    size_t cap = 0, n = 0;
    char *buf = NULL;
    for (;;) {
        if (n + 1 >= cap) {
            if (n > max) break;
            size_t ncap = cap ? 2 * cap : 16384;
            if (ncap > max + 2) ncap = max + 2; /* one byte past max tells "too large" */
            char *b = n + 1 < ncap ? realloc(buf, ncap) : NULL;
            if (!b) {
                if (n + 1 >= ncap) break; /* at the limit */
                free(buf);
                errno = ENOMEM;
                return NULL;
            }
            buf = b;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            errno = e;
            return NULL;
        }
        if (r == 0) {
            buf[n] = '\0';
            *len = n;
            return buf;
        }
        n += (size_t)r;
    }
    free(buf);
    errno = EFBIG;
    return NULL;
}
