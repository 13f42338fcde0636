/* error.c - status code names and the first-error-wins error object (see error.h). */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *tps_strerror(int code)
{
    switch (code) {
    case TPS_OK:
        return "success";
#define X(name, val, msg)                                                                          \
    case TPS_##name:                                                                               \
        return msg;
        TPS_ERRNO_MAP(X)
#undef X
    }
    return "unknown error";
}

const char *tps_errname(int code)
{
    switch (code) {
    case TPS_OK:
        return "OK";
#define X(name, val, msg)                                                                          \
    case TPS_##name:                                                                               \
        return #name;
        TPS_ERRNO_MAP(X)
#undef X
    }
    return "EUNKNOWN";
}

/* Rewrites control characters (a newline, an escape sequence read from a bad input) as \xHH, so
 * that an error is one line and echoes no terminal control codes. */
static void escape_controls(char *s, size_t size)
{
    char tmp[sizeof((struct tps_error *)0)->msg];
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && n + 5 < sizeof tmp; p++) {
        if (*p < 0x20 || *p == 0x7f)
            n += (size_t)snprintf(tmp + n, sizeof tmp - n, "\\x%02x", *p);
        else
            tmp[n++] = (char)*p;
    }
    tmp[n] = '\0';
    snprintf(s, size, "%s", tmp);
}

int tps_error_set(struct tps_error *err, int code, const char *path, int line, int col,
                  const char *field, const char *fmt, ...)
{
    if (!err || err->code != TPS_OK) return code;
    err->code = code;
    snprintf(err->path, sizeof err->path, "%s", path ? path : "");
    err->line = line;
    err->col = col;
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    escape_controls(err->msg, sizeof err->msg);
    escape_controls(err->field, sizeof err->field);
    escape_controls(err->path, sizeof err->path);
    return code;
}

int tps_error_oom(struct tps_error *err)
{
    return tps_error_set(err, TPS_ENOMEM, NULL, 0, 0, NULL, "out of memory");
}

void tps_error_format(const struct tps_error *err, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    if (err->path[0]) {
        n += (size_t)snprintf(buf + n, len - n, "%s:", err->path);
        if (err->line > 0 && n < len)
            n += (size_t)snprintf(buf + n, len - n, "%d:%d:", err->line, err->col);
        if (n < len) n += (size_t)snprintf(buf + n, len - n, " ");
    }
    if (err->field[0] && n < len)
        n += (size_t)snprintf(buf + n, len - n, "field '%s': ", err->field);
    if (n < len) snprintf(buf + n, len - n, "%s", err->msg[0] ? err->msg : tps_strerror(err->code));
}

void tps_names_join(const char *const *names, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (; *names && n < len; names++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", *names);
}

_Noreturn void tps_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "tpsim: BUG: assertion '%s' failed at %s:%d\n", expr, file, line);
    abort();
}
