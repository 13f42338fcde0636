/* csv.c - RFC 4180 quoting and record splitting, and reading a table row by row (see csv.h). */
#include "csv.h"

#include "error.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

int tps_csv_fput(FILE *f, const char *v)
{
    int quote = strpbrk(v, ",\"\r\n") != NULL;
    if (quote) fputc('"', f);
    for (const char *p = v; *p; p++) {
        if (*p == '"') fputc('"', f);
        fputc(*p, f);
    }
    if (quote) fputc('"', f);
    return ferror(f) ? -1 : 0;
}

int tps_csv_put(char *buf, size_t len, size_t *n, const char *v)
{
    int quote = strpbrk(v, ",\"\r\n") != NULL;
    size_t need = strlen(v) + (quote ? 2 : 0);
    for (const char *p = v; quote && *p; p++)
        need += *p == '"';
    if (*n + need + 1 > len) {
        if (*n < len) buf[*n] = '\0';
        return -1;
    }
    if (quote) buf[(*n)++] = '"';
    for (const char *p = v; *p; p++) {
        if (*p == '"') buf[(*n)++] = '"';
        buf[(*n)++] = *p;
    }
    if (quote) buf[(*n)++] = '"';
    buf[*n] = '\0';
    return 0;
}

int tps_csv_record(const char *s, const char *end, char *store, size_t storelen, char **fields,
                   int max, const char **next)
{
    if (s >= end) return 0;
    size_t o = 0;
    int nf = 0, inq = 0, start = 1;
    for (const char *p = s; p < end; p++) {
        if (start) {
            if (nf >= max || o >= storelen) return -1;
            fields[nf++] = store + o;
            start = 0;
            if (*p == '"') {
                inq = 1;
                continue;
            }
        }
        char c = *p;
        if (inq) {
            if (c == '"' && p + 1 < end && p[1] == '"') {
                p++;
            } else if (c == '"') {
                inq = 0;
                continue;
            }
        } else if (c == ',' || c == '\n') {
            if (o > 0 && store[o - 1] == '\r' && c == '\n') o--;
            if (o >= storelen) return -1;
            store[o++] = '\0';
            if (c == '\n') {
                *next = p + 1;
                return nf;
            }
            start = 1;
            continue;
        }
        if (o + 1 >= storelen) return -1;
        store[o++] = c;
    }
    return -1; /* no LF: cut */
}

int tps_csv_column(char *const *fields, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcasecmp(fields[i], name)) return i;
    return -1;
}

int tps_csv_row(const char **p, const char *end, char *store, size_t storelen, char **fields,
                int max, int last, const char *path, int *line, struct tps_error *err)
{
    if (*p >= end) return 0;
    const char *next;
    ++*line;
    int nf = tps_csv_record(*p, end, store, storelen, fields, max, &next);
    if (nf == 0) return 0;
    if (nf < 0 || nf <= last) {
        tps_error_set(err, TPS_EINVAL, path, *line, 1, NULL, "short or cut record");
        return -1;
    }
    *p = next;
    return nf;
}
