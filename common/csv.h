/* csv.h - CSV fields as RFC 4180 has them: quoting on write, record splitting on read.
 *
 * A field is quoted when it holds a comma, a double quote, CR or LF; a quote inside is doubled.
 * Records end with LF (a CR before it is dropped); a quoted field may span lines. No allocation:
 * callers give the buffers.
 */
#ifndef TPS_CSV_H
#define TPS_CSV_H

#include <stddef.h>
#include <stdio.h>

/* Appends field `v` to buf (capacity len, *n bytes used, kept NUL-terminated). Returns 0, or -1
 * when it does not fit (buf then holds what fitted). */
int tps_csv_put(char *buf, size_t len, size_t *n, const char *v);

/* Writes field `v` to f, quoted the same way. Returns 0, or -1 when f has an error. Every CSV
 * tpsim writes goes through these two. */
int tps_csv_fput(FILE *f, const char *v);

/* Splits the record that starts at s (the text runs to end) into at most `max` fields, copied
 * NUL-terminated into `store` (storelen bytes) and pointed to by fields[]. Returns the field
 * count with *next set past the record's LF, 0 at end of text, or -1 when the record is cut
 * (no LF, or a quote left open) or does not fit in store or max. */
int tps_csv_record(const char *s, const char *end, char *store, size_t storelen, char **fields,
                   int max, const char **next);

/* The index of the header field named `name` (ASCII case ignored) among fields[0..n), or -1. */
int tps_csv_column(char *const *fields, int n, const char *name);

struct tps_error;
/* The next data record of a table being read: splits the record at *p as tps_csv_record does,
 * moves *p past it and counts it in *line. Returns its field count, 0 at the end of the text,
 * or -1 with err set ("short or cut record" at path:line) when the record is cut or has no more
 * than `last` fields (the rightmost column the reader needs). */
int tps_csv_row(const char **p, const char *end, char *store, size_t storelen, char **fields,
                int max, int last, const char *path, int *line, struct tps_error *err);

#endif
