/* megatron_sh.c - reading a Megatron-LM launch script's training command (see megatron.h): a
 * small evaluator of the shell such scripts are written in, enough to know the flags. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/readall.h"
#include "validate/megatron.h"

#define MAX_VARS  512
#define MAX_WORDS 4096
#define MAX_DEPTH 32

struct var {
    char name[64];
    char *val; /* owned */
};

/* A command's words: each a malloc'ed string. */
struct words {
    int n;
    char *w[MAX_WORDS];
};

struct sh {
    const char *p, *end; /* the text being read */
    int line;
    struct var vars[MAX_VARS];
    int nvars;
    /* if/elif/else: whether each level runs, and whether a branch of it was taken */
    int depth;
    int active[MAX_DEPTH], taken[MAX_DEPTH];
    int launches;
    struct mg_launch *l;
};

static void note(struct sh *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct sh *s, const char *fmt, ...)
{
    struct mg_launch *l = s->l;
    if (l->nnotes >= MG_MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->notes[l->nnotes++], sizeof l->notes[0], fmt, ap);
    va_end(ap);
}

static const char *var_get(const struct sh *s, const char *name)
{
    for (int i = s->nvars - 1; i >= 0; i--)
        if (!strcmp(s->vars[i].name, name)) return s->vars[i].val;
    return NULL;
}

static int var_set(struct sh *s, const char *name, const char *val, int append)
{
    for (int i = 0; i < s->nvars; i++) {
        if (strcmp(s->vars[i].name, name)) continue;
        size_t a = append ? strlen(s->vars[i].val) : 0;
        char *v = malloc(a + strlen(val) + 2);
        if (!v) return -1;
        snprintf(v, a + strlen(val) + 2, "%s%s%s", append ? s->vars[i].val : "",
                 append && a ? " " : "", val);
        free(s->vars[i].val);
        s->vars[i].val = v;
        return 0;
    }
    if (s->nvars == MAX_VARS || strlen(name) >= sizeof s->vars[0].name) return 0;
    char *v = strdup(val);
    if (!v) return -1;
    snprintf(s->vars[s->nvars].name, sizeof s->vars[0].name, "%s", name);
    s->vars[s->nvars++].val = v;
    return 0;
}

/* A growing string. */
struct buf {
    char *s;
    size_t n, cap;
};

static int put(struct buf *b, const char *t, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *s = realloc(b->s, cap);
        if (!s) return -1;
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->n, t, n);
    b->n += n;
    b->s[b->n] = '\0';
    return 0;
}

static int is_name(int c)
{
    return isalnum(c) || c == '_';
}

static int expand_text(struct sh *s, const char *t, struct buf *out);

/* Integer arithmetic of $((...)): + - * / % and parentheses over numbers and names. */
static long arith_expr(struct sh *s, const char **p, int *ok);
static long arith_atom(struct sh *s, const char **p, int *ok)
{
    while (**p == ' ')
        (*p)++;
    if (**p == '(') {
        (*p)++;
        long v = arith_expr(s, p, ok);
        while (**p == ' ')
            (*p)++;
        if (**p == ')') (*p)++;
        return v;
    }
    if (**p == '-') {
        (*p)++;
        return -arith_atom(s, p, ok);
    }
    if (isdigit((unsigned char)**p)) return strtol(*p, (char **)p, 10);
    if (**p == '$') (*p)++;
    char name[64];
    size_t n = 0;
    while (is_name((unsigned char)**p) && n + 1 < sizeof name)
        name[n++] = *(*p)++;
    name[n] = '\0';
    const char *v = n ? var_get(s, name) : NULL;
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || end == v) *ok = 0;
    return x;
}

static long arith_term(struct sh *s, const char **p, int *ok)
{
    long v = arith_atom(s, p, ok);
    for (;;) {
        while (**p == ' ')
            (*p)++;
        char op = **p;
        if (op != '*' && op != '/' && op != '%') return v;
        (*p)++;
        long r = arith_atom(s, p, ok);
        if (op == '*')
            v *= r;
        else if (r)
            v = op == '/' ? v / r : v % r;
        else
            *ok = 0;
    }
}

static long arith_expr(struct sh *s, const char **p, int *ok)
{
    long v = arith_term(s, p, ok);
    for (;;) {
        while (**p == ' ')
            (*p)++;
        char op = **p;
        if (op != '+' && op != '-') return v;
        (*p)++;
        long r = arith_term(s, p, ok);
        v = op == '+' ? v + r : v - r;
    }
}

/* Reads the expansion at *pp (just after '$') into out; *pp moves past it. */
static int expand_dollar(struct sh *s, const char **pp, const char *end, struct buf *out)
{
    const char *p = *pp;
    if (p + 1 < end && p[0] == '(' && p[1] == '(') { /* $((arithmetic)) */
        int depth = 0;
        const char *q = p + 2;
        for (; q < end; q++) {
            if (*q == '(') depth++;
            if (*q == ')' && depth-- == 0) break;
        }
        char raw[256];
        snprintf(raw, sizeof raw, "%.*s", (int)(q - p - 2), p + 2);
        struct buf x = {0}; /* ${N} and $N inside, expanded first */
        if (expand_text(s, raw, &x)) return -1;
        char expr[256];
        snprintf(expr, sizeof expr, "%s", x.s ? x.s : "");
        free(x.s);
        const char *e = expr;
        int ok = 1;
        long v = arith_expr(s, &e, &ok);
        char t[32];
        snprintf(t, sizeof t, "%ld", v);
        if (!ok) note(s, "line %d: $((%s)) not evaluated", s->line, expr);
        *pp = q + 2 <= end ? q + 2 : end;
        return ok ? put(out, t, strlen(t)) : 0;
    }
    if (p < end && *p == '(') { /* $(command): its output is not known */
        int depth = 0;
        const char *q = p;
        for (; q < end; q++) {
            if (*q == '(') depth++;
            if (*q == ')' && --depth == 0) break;
        }
        note(s, "line %d: the output of $(%.*s) is not known", s->line,
             (int)(q - p - 1 < 60 ? q - p - 1 : 60), p + 1);
        *pp = q < end ? q + 1 : end;
        return 0;
    }
    if (p < end && *p == '{') {
        const char *q = p + 1;
        int depth = 1;
        for (; q < end; q++) {
            if (*q == '{') depth++;
            if (*q == '}' && --depth == 0) break;
        }
        char in[512];
        snprintf(in, sizeof in, "%.*s", (int)(q - p - 1), p + 1);
        *pp = q < end ? q + 1 : end;
        char name[64];
        size_t n = 0;
        const char *r = in;
        if (*r == '#') return 0; /* a length: not needed for flags */
        while (is_name((unsigned char)*r) && n + 1 < sizeof name)
            name[n++] = *r++;
        name[n] = '\0';
        if (*r == '[') r = strchr(r, ']') ? strchr(r, ']') + 1 : r + strlen(r); /* [@] [*] */
        const char *v = var_get(s, name);
        if (!strncmp(r, ":-", 2) || !strncmp(r, ":=", 2) || *r == '-' || *r == '=') {
            int colon = *r == ':';
            const char *def = r + 1 + colon;
            if (!v || (colon && !v[0])) return expand_text(s, def, out);
        } else if (*r == '+' || !strncmp(r, ":+", 2)) {
            return v ? expand_text(s, r + 1 + (*r == ':'), out) : 0;
        }
        return v ? put(out, v, strlen(v)) : 0;
    }
    char name[64];
    size_t n = 0;
    if (p < end && (isdigit((unsigned char)*p) || *p == '@' || *p == '*' || *p == '#')) {
        *pp = p + 1; /* the script's own arguments: none */
        return 0;
    }
    while (p < end && is_name((unsigned char)*p) && n + 1 < sizeof name)
        name[n++] = *p++;
    name[n] = '\0';
    *pp = p;
    if (!n) return put(out, "$", 1);
    const char *v = var_get(s, name);
    return v ? put(out, v, strlen(v)) : 0;
}

/* The text with its expansions and quotes evaluated (a default value, a word). */
static int expand_text(struct sh *s, const char *t, struct buf *out)
{
    const char *p = t, *end = t + strlen(t);
    int rc = 0;
    while (!rc && p < end) {
        if (*p == '$') {
            p++;
            rc = expand_dollar(s, &p, end, out);
        } else if (*p == '"' || *p == '\'') {
            p++; /* quotes inside a default: dropped */
        } else {
            rc = put(out, p++, 1);
        }
    }
    return rc;
}

enum tok { T_WORD, T_SEP, T_AND, T_OR, T_PIPE, T_END };

/* Reads one token: a word (quotes and expansions evaluated) into *out, or a separator.
 * array_open: the word ended with "=(" (an array assignment follows). */
static enum tok next_token(struct sh *s, struct buf *out, int *array_open)
{
    out->n = 0;
    if (out->s) out->s[0] = '\0';
    *array_open = 0;
    const char *p = s->p, *end = s->end;
    for (;;) { /* blanks, comments, line continuations */
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
            p++;
        if (p + 1 < end && p[0] == '\\' && p[1] == '\n') {
            p += 2;
            s->line++;
            continue;
        }
        if (p < end && *p == '#') {
            while (p < end && *p != '\n')
                p++;
        }
        break;
    }
    if (p >= end) {
        s->p = p;
        return T_END;
    }
    if (*p == '\n' || *p == ';') {
        if (*p == '\n') s->line++;
        s->p = p + 1 + (p + 1 < end && *p == ';' && p[1] == ';');
        return T_SEP;
    }
    if (*p == '&' || *p == '|') {
        enum tok t = p + 1 < end && p[1] == *p ? (*p == '&' ? T_AND : T_OR) : T_PIPE;
        s->p = p + (t == T_PIPE ? 1 : 2) + (p + 1 < end && p[1] == '&' && *p == '|');
        if (t == T_PIPE && *p == '&') t = T_SEP; /* a background job */
        return t;
    }
    if (*p == '(' || *p == ')') {
        put(out, p, 1);
        s->p = p + 1;
        return T_WORD;
    }
    while (p < end && !strchr(" \t\r\n;&|()", *p)) {
        if (*p == '\\' && p + 1 < end) {
            if (p[1] == '\n')
                s->line++;
            else
                put(out, p + 1, 1);
            p += 2;
        } else if (*p == '\'') {
            const char *q = memchr(p + 1, '\'', (size_t)(end - p - 1));
            q = q ? q : end;
            for (const char *c = p + 1; c < q; c++)
                s->line += *c == '\n';
            put(out, p + 1, (size_t)(q - p - 1));
            p = q < end ? q + 1 : end;
        } else if (*p == '"') {
            p++;
            while (p < end && *p != '"') {
                if (*p == '\\' && p + 1 < end && strchr("\"\\$`\n", p[1])) {
                    if (p[1] != '\n')
                        put(out, p + 1, 1);
                    else
                        s->line++;
                    p += 2;
                } else if (*p == '$') {
                    p++;
                    expand_dollar(s, &p, end, out);
                } else {
                    if (*p == '\n') s->line++;
                    put(out, p++, 1);
                }
            }
            p += p < end;
        } else if (*p == '$') {
            p++;
            expand_dollar(s, &p, end, out);
        } else if (*p == '`') {
            const char *q = memchr(p + 1, '`', (size_t)(end - p - 1));
            note(s, "line %d: the output of `...` is not known", s->line);
            p = q ? q + 1 : end;
        } else {
            put(out, p++, 1);
        }
    }
    if (p < end && *p == '(' && out->n > 1 && out->s[out->n - 1] == '=') {
        *array_open = 1;
        p++;
    }
    s->p = p;
    if (!out->s) put(out, "", 0);
    return T_WORD;
}

static void words_free(struct words *w)
{
    for (int i = 0; i < w->n; i++)
        free(w->w[i]);
    w->n = 0;
}

static int words_add(struct words *w, const char *t)
{
    if (w->n == MAX_WORDS) return 0;
    char *c = strdup(t);
    if (!c) return -1;
    w->w[w->n++] = c;
    return 0;
}

/* Whether w is an assignment NAME=... (or NAME+=...); its name length into *n. */
static int assignment(const char *w, size_t *n, int *append)
{
    size_t i = 0;
    if (!isalpha((unsigned char)w[0]) && w[0] != '_') return 0;
    while (is_name((unsigned char)w[i]))
        i++;
    *append = w[i] == '+' && w[i + 1] == '=';
    *n = i;
    return w[i + *append] == '=';
}

/* Evaluates one test: [ A OP B ], [ -z A ], [ ! T ] (words between the brackets). 1, 0, or
 * -1 when it cannot tell. */
static int test_eval(char **w, int n)
{
    if (n >= 1 && !strcmp(w[0], "!")) {
        int r = test_eval(w + 1, n - 1);
        return r < 0 ? r : !r;
    }
    if (n == 2 && (!strcmp(w[0], "-z") || !strcmp(w[0], "-n")))
        return (w[1][0] == '\0') == (w[0][1] == 'z');
    if (n == 1) return w[0][0] != '\0';
    if (n == 0) return 0; /* an empty expansion: [ -z $X ] with X unset reads as [ -z ] */
    if (n != 3) return -1;
    const char *op = w[1];
    if (!strcmp(op, "=") || !strcmp(op, "==")) return !strcmp(w[0], w[2]);
    if (!strcmp(op, "!=")) return strcmp(w[0], w[2]) != 0;
    static const char *const ops[] = {"-eq", "-ne", "-gt", "-lt", "-ge", "-le"};
    char *e1, *e2;
    long a = strtol(w[0], &e1, 10), b = strtol(w[2], &e2, 10);
    if (*e1 || *e2 || e1 == w[0] || e2 == w[2]) return -1;
    int r[] = {a == b, a != b, a > b, a < b, a >= b, a <= b};
    for (int i = 0; i < 6; i++)
        if (!strcmp(op, ops[i])) return r[i];
    return -1;
}

/* The condition of an if/elif: tests joined by && and || (left to right). -1 unknown. */
static int cond_eval(struct words *c, int from)
{
    int acc = -2, op = 0; /* op: 0 none, 1 and, 2 or */
    for (int i = from; i < c->n;) {
        if (!strcmp(c->w[i], "&&") || !strcmp(c->w[i], "||")) {
            op = c->w[i][0] == '&' ? 1 : 2;
            i++;
            continue;
        }
        int r = -1, j = i;
        if (!strcmp(c->w[i], "[") || !strcmp(c->w[i], "[[") || !strcmp(c->w[i], "test")) {
            const char *close = !strcmp(c->w[i], "[[") ? "]]" : "]";
            for (j = i + 1; j < c->n && strcmp(c->w[j], close); j++)
                ;
            r = test_eval(c->w + i + 1, j - i - 1);
            j++;
        } else {
            while (j < c->n && strcmp(c->w[j], "&&") && strcmp(c->w[j], "||"))
                j++; /* a command's status: not known */
        }
        if (acc == -2)
            acc = r;
        else if (op == 1)
            acc = acc == 0 || r == 0 ? 0 : acc < 0 || r < 0 ? -1 : 1;
        else if (op == 2)
            acc = acc == 1 || r == 1 ? 1 : acc < 0 || r < 0 ? -1 : 0;
        i = j;
    }
    return acc == -2 ? -1 : acc;
}

static int run_command(struct sh *s, struct words *c, int eval_depth);

/* Records the flags of a training command: the launcher's before the script, Megatron-LM's after
 * it (each word split at blanks, as the shell splits an unquoted expansion). */
static int launch(struct sh *s, struct words *c, int py)
{
    struct mg_launch *l = s->l;
    if (s->launches++) note(s, "line %d: a second training command: its flags are read", s->line);
    l->nflags = 0;
    struct words w = {0};
    for (int i = 0; i < c->n; i++) {
        char *save = NULL, *t = c->w[i];
        if (i == py) {
            if (words_add(&w, "\x01")) return -1; /* where the script's own flags start */
            continue;
        }
        for (char *x = strtok_r(t, " \t\n", &save); x; x = strtok_r(NULL, " \t\n", &save))
            if (words_add(&w, x)) return -1;
    }
    int script = 0, line = s->line;
    for (int i = 0; i < w.n; i++) {
        if (!strcmp(w.w[i], "\x01")) {
            script = 1;
            continue;
        }
        if (strncmp(w.w[i], "--", 2) || !w.w[i][2]) continue;
        char name[64], value[256] = "";
        const char *eq = strchr(w.w[i], '=');
        int has = 0;
        snprintf(name, sizeof name, "%.*s", (int)(eq ? eq - w.w[i] : (long)strlen(w.w[i])), w.w[i]);
        if (eq) {
            snprintf(value, sizeof value, "%s", eq + 1);
            has = 1;
        } else if (i + 1 < w.n && strncmp(w.w[i + 1], "--", 2) && strcmp(w.w[i + 1], "\x01")) {
            snprintf(value, sizeof value, "%s", w.w[++i]);
            has = 1;
        }
        if (!script) { /* the launcher's: torchrun, srun */
            long v = strtol(value, NULL, 10);
            if (!strcmp(name, "--nproc_per_node") || !strcmp(name, "--nproc-per-node") ||
                !strcmp(name, "--ntasks-per-node"))
                l->nproc_per_node = v;
            if (!strcmp(name, "--nnodes") || !strcmp(name, "--nodes")) l->nnodes = v;
            continue;
        }
        if (l->nflags == MG_MAX_FLAGS) break;
        struct mg_flag *f = &l->flags[l->nflags++];
        snprintf(f->name, sizeof f->name, "%s", name);
        snprintf(f->value, sizeof f->value, "%s", value);
        f->has_value = has;
        f->line = line;
    }
    words_free(&w);
    return 0;
}

static int run_words(struct sh *s, struct words *c, int from, int to, int eval_depth)
{
    struct words part = {0};
    int rc = 0;
    for (int i = from; !rc && i < to; i++)
        rc = words_add(&part, c->w[i]);
    if (!rc) rc = run_command(s, &part, eval_depth);
    words_free(&part);
    return rc;
}

/* Runs one command (words, separators && || | kept as words) where the if-stack allows. */
static int run_command(struct sh *s, struct words *c, int eval_depth)
{
    if (!c->n) return 0;
    int lead = 0; /* keywords that open a block's body */
    while (lead < c->n && (!strcmp(c->w[lead], "then") || !strcmp(c->w[lead], "do") ||
                           !strcmp(c->w[lead], "{") || !strcmp(c->w[lead], "}")))
        lead++;
    if (lead == c->n) return 0;
    const char *w0 = c->w[lead];
    int on = s->depth == 0 || s->active[s->depth - 1];
    if (!strcmp(w0, "if") || !strcmp(w0, "for") || !strcmp(w0, "while") || !strcmp(w0, "until") ||
        !strcmp(w0, "case")) {
        if (s->depth == MAX_DEPTH) return 0;
        int r = 0;
        if (!strcmp(w0, "if") && on) {
            r = cond_eval(c, lead + 1);
            if (r < 0) note(s, "line %d: a condition not evaluated (taken as false)", s->line);
        } else if (on) {
            note(s, "line %d: a %s block is not run", s->line, w0);
        }
        s->active[s->depth] = on && r == 1;
        s->taken[s->depth] = r == 1 || !on;
        s->depth++;
        return 0;
    }
    if (!strcmp(w0, "elif") || !strcmp(w0, "else")) {
        if (!s->depth) return 0;
        int parent = s->depth == 1 || s->active[s->depth - 2], r = 1;
        if (!strcmp(w0, "elif") && parent && !s->taken[s->depth - 1]) {
            r = cond_eval(c, lead + 1);
            if (r < 0) note(s, "line %d: a condition not evaluated (taken as false)", s->line);
        }
        s->active[s->depth - 1] = parent && !s->taken[s->depth - 1] && r == 1;
        s->taken[s->depth - 1] |= s->active[s->depth - 1];
        if (!strcmp(w0, "else") && lead + 1 < c->n) return run_words(s, c, lead + 1, c->n, 0);
        return 0;
    }
    if (!strcmp(w0, "fi") || !strcmp(w0, "done") || !strcmp(w0, "esac")) {
        if (s->depth) s->depth--;
        return 0;
    }
    if (!on) return 0;
    /* a list: the parts between && and || run in turn (their status is not known) */
    for (int i = lead; i < c->n; i++)
        if (!strcmp(c->w[i], "&&") || !strcmp(c->w[i], "||") || !strcmp(c->w[i], "|")) {
            int rc = run_words(s, c, lead, i, eval_depth);
            if (rc || !strcmp(c->w[i], "|")) return rc; /* a pipe's later parts read its output */
            return run_words(s, c, i + 1, c->n, eval_depth);
        }
    int i = lead;
    if (!strcmp(w0, "export") || !strcmp(w0, "local") || !strcmp(w0, "declare") ||
        !strcmp(w0, "readonly"))
        i++;
    size_t n;
    int append, only_assignments = 1;
    for (int k = i; k < c->n; k++) {
        if (c->w[k][0] == '-' && k == i) continue; /* declare -a */
        if (!assignment(c->w[k], &n, &append)) {
            only_assignments = 0;
            break;
        }
    }
    for (; i < c->n && assignment(c->w[i], &n, &append); i++) {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)n, c->w[i]);
        if (var_set(s, name, c->w[i] + n + 1 + append, append)) return -1;
    }
    if (only_assignments || i >= c->n) return 0;
    if (!strcmp(c->w[i], "eval") && eval_depth < 2) { /* the joined words, read again */
        struct buf t = {0};
        for (int k = i + 1; k < c->n; k++) /* an unquoted expansion's newlines split words */
            for (const char *x = c->w[k];; x++)
                if (put(&t, *x == '\n' || !*x ? " " : x, 1) || !*x) break;
        if (!t.s) return 0;
        struct sh sub = *s;
        sub.p = t.s ? t.s : "";
        sub.end = sub.p + t.n;
        sub.depth = 0;
        int rc = 0;
        struct words cw = {0};
        struct buf tok = {0};
        for (;;) {
            int arr;
            enum tok k = next_token(&sub, &tok, &arr);
            if (k == T_WORD) rc = words_add(&cw, tok.s);
            if (k == T_AND || k == T_OR || k == T_PIPE)
                rc = words_add(&cw, k == T_AND ? "&&" : k == T_OR ? "||" : "|");
            if (k == T_SEP || k == T_END) {
                if (!rc) rc = run_command(&sub, &cw, eval_depth + 1);
                words_free(&cw);
            }
            if (rc || k == T_END) break;
        }
        free(tok.s);
        free(t.s);
        memcpy(s->vars, sub.vars, sizeof s->vars);
        s->nvars = sub.nvars;
        s->launches = sub.launches;
        return rc;
    }
    for (int k = i; k < c->n; k++) { /* a training command runs a Python script */
        size_t len = strlen(c->w[k]);
        if (len > 3 && !strcmp(c->w[k] + len - 3, ".py")) return launch(s, c, k);
    }
    return 0;
}

static int read_text(struct sh *s)
{
    struct words c = {0};
    struct buf tok = {0};
    int rc = 0, line0 = s->line;
    for (;;) {
        int arr;
        enum tok k = next_token(s, &tok, &arr);
        if (k == T_WORD && arr) { /* NAME=( elements ... ): one word of the joined elements */
            struct buf v = {0};
            rc = put(&v, tok.s, tok.n);
            for (int first = 1; !rc;) {
                int a2;
                enum tok e = next_token(s, &tok, &a2);
                if (e == T_END || (e == T_WORD && !strcmp(tok.s, ")"))) break;
                if (e != T_WORD) continue; /* newlines inside the list */
                if (!first) rc = put(&v, " ", 1);
                if (!rc) rc = put(&v, tok.s, tok.n);
                first = 0;
            }
            if (!rc) rc = words_add(&c, v.s);
            free(v.s);
        } else if (k == T_WORD) {
            if (!c.n) line0 = s->line;
            rc = words_add(&c, tok.s);
        } else if (k == T_AND || k == T_OR || k == T_PIPE) {
            rc = words_add(&c, k == T_AND ? "&&" : k == T_OR ? "||" : "|");
        } else {
            int keep = s->line;
            s->line = line0;
            if (!rc) rc = run_command(s, &c, 0);
            s->line = keep;
            words_free(&c);
        }
        if (rc || k == T_END) break;
    }
    words_free(&c);
    free(tok.s);
    return rc;
}

static void sh_free(struct sh *s)
{
    for (int i = 0; i < s->nvars; i++)
        free(s->vars[i].val);
}

int mg_read_script(const char *path, struct mg_launch *l, struct tps_error *err)
{
    memset(l, 0, sizeof *l);
    snprintf(l->source, sizeof l->source, "%s", path);
    size_t len = 0;
    char *text = tps_read_file(path, 1 << 20, "a Megatron-LM launch script", &len, err);
    if (!text) return err->code ? err->code : TPS_EIO;
    static struct sh s; /* large: not on the stack */
    memset(&s, 0, sizeof s);
    s.p = text;
    s.end = text + len;
    s.line = 1;
    s.l = l;
    int rc = read_text(&s) ? tps_error_oom(err) : TPS_OK;
    int launches = s.launches;
    sh_free(&s);
    free(text);
    if (!rc && !launches)
        rc = tps_error_set(err, TPS_EINVAL, path, 0, 0, NULL,
                           "no command that runs a training script (a word ending in .py, "
                           "pretrain_gpt.py as Megatron-LM launches it)");
    return rc;
}

int mg_read_args(int argc, const char *const *argv, struct mg_launch *l, struct tps_error *err)
{
    memset(l, 0, sizeof *l);
    snprintf(l->source, sizeof l->source, "arguments");
    static struct sh s;
    memset(&s, 0, sizeof s);
    s.l = l;
    struct words c = {0};
    int rc = words_add(&c, "pretrain_gpt.py");
    for (int i = 0; !rc && i < argc; i++)
        rc = words_add(&c, argv[i]);
    if (!rc) rc = launch(&s, &c, 0);
    words_free(&c);
    sh_free(&s);
    return rc ? tps_error_oom(err) : TPS_OK;
}
