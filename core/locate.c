/* locate.c - placing a later stage's error in its scenario file (see locate.h). */
#include "core/locate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ydoc.h"

/* The sections a bare key may belong to, in the order a key is looked for. */
static const char *const sections[] = {"strategy",  "training", "pipeline", "run",         "model",
                                       "framework", "device",   "platform", "collectives", NULL};

/* Where a bare key the file does not hold comes from: its section (a preset's value). */
static const struct {
    const char *key, *section;
} homes[] = {{"layers", "model"},
             {"micro_batches", "training"},
             {"global_batch", "training"},
             {"tp", "strategy"},
             {"dp", "strategy"},
             {"pp", "strategy"},
             {"cp", "strategy"},
             {"ep", "strategy"},
             {"fold", "run"},
             {"seq", "model"},
             {"hidden", "model"},
             {"experts", "model"}};

/* Follows one dotted segment ("jobs[2]" or "tp") from node `at`; 0 when absent. */
static int step(const struct tps_ydoc *d, int at, const char *seg, size_t len)
{
    char key[128];
    if (len >= sizeof key) return 0;
    memcpy(key, seg, len);
    key[len] = '\0';
    char *br = strchr(key, '[');
    long idx = -1;
    if (br) {
        char *end;
        idx = strtol(br + 1, &end, 10);
        if (*end != ']' || idx < 0) return 0;
        *br = '\0';
    }
    int v = key[0] ? tps_ydoc_get(d, at, key) : at;
    if (v && idx >= 0) v = idx < tps_ydoc_len(d, v) ? tps_ydoc_seq_at(d, v, (int)idx) : 0;
    return v;
}

/* The node of dotted `field` from `at`: the deepest node found along it (*whole: all of it). */
static int resolve(const struct tps_ydoc *d, int at, const char *field, int *whole)
{
    const char *s = field;
    *whole = 0;
    while (*s) {
        size_t len = strcspn(s, ".");
        int v = step(d, at, s, len);
        if (!v) return at;
        at = v;
        s += len;
        if (*s == '.') s++;
    }
    *whole = 1;
    return at;
}

void scn_error_locate(const char *path, struct tps_error *err)
{
    if (!path || !path[0] || err->code == TPS_OK || err->line > 0) return;
    if (err->path[0] && strcmp(err->path, path)) return; /* another file's error */
    snprintf(err->path, sizeof err->path, "%s", path);
    if (!err->field[0]) return;
    struct tps_ydoc d;
    struct tps_error e = {0};
    if (tps_ydoc_load_file(&d, path, &e)) return;
    int root = tps_ydoc_root(&d), base = root, whole = 0;
    const char *rest = err->field, *dot = strchr(rest, '.');
    if (!strncmp(rest, "jobs[", 5) && dot) { /* a job's field: looked for from the job's node */
        char head[64];
        snprintf(head, sizeof head, "%.*s", (int)(dot - rest), rest);
        int j = resolve(&d, root, head, &whole);
        if (whole) base = j, rest = dot + 1;
    }
    int at = resolve(&d, base, rest, &whole);
    for (int i = 0; !whole && !strchr(rest, '.') && sections[i]; i++) {
        int v = tps_ydoc_get(&d, tps_ydoc_get(&d, base, sections[i]), rest);
        if (v) at = v, whole = 1;
    }
    for (size_t i = 0; !whole && at == base && i < sizeof homes / sizeof homes[0]; i++)
        if (!strcmp(rest, homes[i].key) && tps_ydoc_get(&d, base, homes[i].section))
            at = tps_ydoc_get(&d, base, homes[i].section);
    if (at && at != root) {
        tps_ydoc_fail(&d, at, "", &e, "here");
        if (!strcmp(e.path, path)) { /* not a --set assignment */
            err->line = e.line;
            err->col = e.col;
        }
    }
    tps_ydoc_release(&d);
}
