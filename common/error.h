/* error.h - tpsim's status codes and the error object that carries their context.
 *
 * Every function that can fail on user input returns an int status (0 = OK, negative = TPS_E*)
 * and takes a `struct tps_error *err` as its last argument. The first error recorded wins; a
 * successful call leaves `err` untouched. Recording an error never allocates: all fields are
 * fixed-size buffers. Lines and columns are 1-based (0 = unknown).
 */
#ifndef TPS_ERROR_H
#define TPS_ERROR_H

#include <stddef.h>

#define TPS_ERRNO_MAP(X)                                                                           \
    X(EINVAL, -1, "invalid input")                                                                 \
    X(ESYNTAX, -2, "syntax error")                                                                 \
    X(EIO, -3, "input/output error")                                                               \
    X(ENOMEM, -4, "out of memory")                                                                 \
    X(ESIM, -5, "simulation failed")

enum tps_status {
    TPS_OK = 0,
#define X(name, val, msg) TPS_##name = val,
    TPS_ERRNO_MAP(X)
#undef X
};

struct tps_error {
    int code;        /* TPS_E* or TPS_OK */
    char path[512];  /* file the error is about, "" if none */
    int line;        /* 1-based line, 0 if unknown */
    int col;         /* 1-based column, 0 if unknown */
    char field[128]; /* dotted field path, e.g. "strategy.tp", "" if none */
    char msg[512];   /* human-readable message: lowercase, no full stop */
};

const char *tps_strerror(int code);
const char *tps_errname(int code);

/* Records an error unless one is already recorded. Returns `code` so callers can
 * `return tps_error_set(...)`. `path` and `field` may be NULL. */
int tps_error_set(struct tps_error *err, int code, const char *path, int line, int col,
                  const char *field, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* The one out-of-memory error: sets "out of memory" (TPS_ENOMEM) and returns TPS_ENOMEM. */
int tps_error_oom(struct tps_error *err);

/* Renders "path:line:col: field 'f': msg" into buf. */
void tps_error_format(const struct tps_error *err, char *buf, size_t len);

/* Joins a NULL-terminated list of names as "a, b, c" into buf (for "expected one of" messages). */
void tps_names_join(const char *const *names, char *buf, size_t len);

/* Bugs, not errors: aborts with file:line. Never use to validate input. */
#define TPS_ASSERT(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) tps_assert_fail(#cond, __FILE__, __LINE__);                                   \
    } while (0)
_Noreturn void tps_assert_fail(const char *expr, const char *file, int line);

#endif
