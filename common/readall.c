/* readall.c - whole-file reads (see readall.h). */
#include "readall.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/inputs.h"

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

size_t tps_bom_len(const char *text)
{
    const unsigned char *u = (const unsigned char *)text; /* stops at a NUL: no byte past it */
    return u && u[0] == 0xef && u[1] == 0xbb && u[2] == 0xbf ? 3 : 0;
}

char *tps_read_file(const char *path, size_t max, const char *what, size_t *len,
                    struct tps_error *err)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot open: %s", strerror(errno));
        return NULL;
    }
    tps_input_note(path);
    char *text = tps_read_all(fd, max, len);
    int e = errno;
    close(fd);
    if (text) {
        size_t bom = tps_bom_len(text);
        if (bom) {
            memmove(text, text + bom, *len - bom + 1); /* with the NUL */
            *len -= bom;
        }
        return text;
    }
    if (e == EFBIG)
        tps_error_set(err, TPS_EINVAL, path, 0, 0, NULL, "larger than %zu MiB: not %s", max >> 20,
                      what);
    else if (e == ENOMEM)
        tps_error_oom(err);
    else
        tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot read: %s",
                      e == EISDIR ? "a directory" : strerror(e));
    return NULL;
}
