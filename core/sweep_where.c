/* sweep_where.c - a sweep's where: conditions over a point's values (see sweep.h): a small
 * recursive-descent evaluator of numbers and strings. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sweep.h"

struct val {
    int str; /* a string (else a number) */
    double num;
    char s[256];
};

struct ev {
    const struct sweep *sw;
    long point;
    const char *p;
    char why[200]; /* the first problem, "" when none */
};

static void bad(struct ev *e, const char *what)
{
    if (!e->why[0]) snprintf(e->why, sizeof e->why, "%s", what);
}

static void skip(struct ev *e)
{
    while (isspace((unsigned char)*e->p))
        e->p++;
}

static int eat(struct ev *e, const char *op)
{
    skip(e);
    size_t n = strlen(op);
    if (strncmp(e->p, op, n)) return 0;
    /* "<" is not "<=", "!" is not "!=", "=" alone is not "==" */
    if (n == 1 && strchr("<>!", op[0]) && e->p[1] == '=') return 0;
    e->p += n;
    return 1;
}

/* A value as written in the CSV: a number when the whole text is one. */
static void text_val(const char *t, struct val *v)
{
    char *end;
    v->num = strtod(t, &end);
    v->str = end == t || *end;
    snprintf(v->s, sizeof v->s, "%.255s", t);
}

/* The value of name at the point: a key, a zip's key, or `variant`. */
static int lookup(struct ev *e, const char *name, struct val *v)
{
    const struct sweep *sw = e->sw;
    for (int k = 0; k < sw->nkeys; k++) {
        int j = sweep_index(sw, e->point, k);
        char t[512];
        if (sw->kind[k] == SWEEP_ZIP) {
            for (int z = 0; z < sw->nzip; z++) {
                if (strcmp(sw->zip[z], name)) continue;
                /* the z-th of the zip's values "a / b" */
                sweep_value_text(sw, k, j, t, sizeof t);
                char *p = t;
                for (int i = 0; p && i < z; i++)
                    p = strstr(p, " / ") ? strstr(p, " / ") + 3 : NULL;
                if (p && strstr(p, " / ")) *strstr(p, " / ") = '\0';
                text_val(p ? p : "", v);
                return 0;
            }
        } else if (!strcmp(sw->keys[k], name)) {
            sweep_value_text(sw, k, j, t, sizeof t);
            text_val(t, v);
            return 0;
        }
    }
    char msg[200];
    snprintf(msg, sizeof msg, "'%.60s' is not a swept key (a condition reads the swept values)",
             name);
    bad(e, msg);
    return -1;
}

static void expr(struct ev *e, struct val *v);

static void atom(struct ev *e, struct val *v)
{
    memset(v, 0, sizeof *v);
    skip(e);
    char c = *e->p;
    if (c == '(') {
        e->p++;
        expr(e, v);
        if (!eat(e, ")")) bad(e, "a ( without its )");
    } else if (c == '\'' || c == '"') {
        const char *q = strchr(e->p + 1, c);
        if (!q) {
            bad(e, "a string without its closing quote");
            e->p += strlen(e->p);
            return;
        }
        v->str = 1;
        snprintf(v->s, sizeof v->s, "%.*s", (int)(q - e->p - 1), e->p + 1);
        e->p = q + 1;
    } else if (isdigit((unsigned char)c) || c == '.') {
        char *end;
        v->num = strtod(e->p, &end);
        e->p = end;
    } else if (isalpha((unsigned char)c) || c == '_') {
        char name[128];
        size_t n = 0;
        while ((isalnum((unsigned char)*e->p) || *e->p == '_' || *e->p == '.') &&
               n + 1 < sizeof name)
            name[n++] = *e->p++;
        name[n] = '\0';
        lookup(e, name, v);
    } else {
        bad(e, c ? "expected a number, a 'string', a swept key or (" : "a condition cut short");
    }
}

static double num(struct ev *e, const struct val *v)
{
    if (v->str) {
        char msg[200];
        snprintf(msg, sizeof msg, "'%.60s' is not a number", v->s);
        bad(e, msg);
    }
    return v->num;
}

static void unary(struct ev *e, struct val *v)
{
    if (eat(e, "!")) {
        unary(e, v);
        v->num = !num(e, v);
        return;
    }
    if (eat(e, "-")) {
        unary(e, v);
        v->num = -num(e, v);
        return;
    }
    atom(e, v);
}

static void prod(struct ev *e, struct val *v)
{
    unary(e, v);
    for (;;) {
        char op = eat(e, "*") ? '*' : eat(e, "/") ? '/' : eat(e, "%") ? '%' : 0;
        if (!op) return;
        struct val r;
        unary(e, &r);
        double a = num(e, v), b = num(e, &r);
        if (op != '*' && b == 0) bad(e, "a division by zero");
        v->num = op == '*' ? a * b : b == 0 ? 0 : op == '/' ? a / b : fmod(a, b);
        v->str = 0;
    }
}

static void sum(struct ev *e, struct val *v)
{
    prod(e, v);
    for (;;) {
        char op = eat(e, "+") ? '+' : eat(e, "-") ? '-' : 0;
        if (!op) return;
        struct val r;
        prod(e, &r);
        v->num = op == '+' ? num(e, v) + num(e, &r) : num(e, v) - num(e, &r);
        v->str = 0;
    }
}

static void cmp(struct ev *e, struct val *v)
{
    sum(e, v);
    static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
    for (int i = 0; i < 6; i++) {
        if (!eat(e, ops[i])) continue;
        struct val r;
        sum(e, &r);
        int c;
        if (v->str || r.str) { /* strings compare by text; only for == and != */
            if (i > 1) bad(e, "strings compare with == and != only");
            c = strcmp(v->str ? v->s : r.s, v->str && r.str ? r.s : v->str ? r.s : v->s);
            if (v->str != r.str) c = 1; /* a string is never a number */
        } else {
            c = (v->num > r.num) - (v->num < r.num);
        }
        int res[] = {c == 0, c != 0, c <= 0, c >= 0, c<0, c> 0};
        v->num = res[i];
        v->str = 0;
        return;
    }
}

static void and_(struct ev *e, struct val *v)
{
    cmp(e, v);
    while (eat(e, "&&")) {
        struct val r;
        cmp(e, &r);
        v->num = num(e, v) != 0 && num(e, &r) != 0;
        v->str = 0;
    }
}

static void expr(struct ev *e, struct val *v)
{
    and_(e, v);
    while (eat(e, "||")) {
        struct val r;
        and_(e, &r);
        v->num = num(e, v) != 0 || num(e, &r) != 0;
        v->str = 0;
    }
}

int sweep_keep_one(const struct sweep *sw, long point, int w, struct tps_error *err)
{
    struct ev e = {.sw = sw, .point = point, .p = sw->where[w]};
    struct val v;
    expr(&e, &v);
    skip(&e);
    if (!e.why[0] && *e.p) bad(&e, "unexpected text after the condition");
    if (!e.why[0] && v.str) bad(&e, "the condition is a string, not a truth");
    if (e.why[0]) {
        tps_error_set(err, TPS_EINVAL, sw->path, 0, 0, "sweep.where", "'%s': %s", sw->where[w],
                      e.why);
        return -1;
    }
    return v.num != 0;
}

int sweep_keep(const struct sweep *sw, long point, struct tps_error *err)
{
    for (int w = 0; w < sw->nwhere; w++) {
        int r = sweep_keep_one(sw, point, w, err);
        if (r <= 0) return r;
    }
    return 1;
}
