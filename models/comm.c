/* comm.c - a job's communicators: specs, markers and their groups, made once (see comm.h). */
#include "models/comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/strindex.h"

void mdl_comms_init(struct mdl_comms *c)
{
    memset(c, 0, sizeof *c);
    memset(c->index, -1, sizeof c->index);
}

void mdl_comms_release(struct mdl_comms *c)
{
    for (int i = 0; i < c->n; i++)
        free(c->group[i]);
    mdl_comms_init(c);
}

int mdl_comms_add(struct mdl_comms *c, const struct mdl_comm_spec *s, int marker)
{
    if (c->n == MDL_COMMS_MAX) return 0;
    for (int m = -2; !marker && m >= -(MDL_COMMS_MAX + 1); m--)
        if (c->index[-m] < 0) marker = m;
    if (marker > -2 || marker < -(MDL_COMMS_MAX + 1) || mdl_comms_index(c, marker) >= 0) return 0;
    c->spec[c->n] = *s;
    c->index[-marker] = (int8_t)c->n++;
    return marker;
}

const struct mdl_comm_spec *mdl_comms_spec(const struct mdl_comms *c, int g)
{
    int i = mdl_comms_index(c, g);
    return i >= 0 ? &c->spec[i] : NULL;
}

bool mdl_comms_spans(const struct mdl_comms *c, int g, enum mdl_dim d)
{
    const struct mdl_comm_spec *s = mdl_comms_spec(c, g);
    return s && s->shape == MDL_COMM_SPAN && (s->dims & MDL_DIM_BIT(d));
}

int mdl_comms_alloc(struct mdl_comms *c, int nranks)
{
    c->nranks = nranks;
    for (int i = 0; i < c->n; i++) {
        free(c->group[i]);
        if (!(c->group[i] = malloc(((size_t)nranks + 1) * sizeof *c->group[i]))) return -1;
        for (int r = 0; r < nranks; r++)
            c->group[i][r] = -1;
    }
    return 0;
}

void mdl_comms_set(struct mdl_comms *c, int marker, int r, int g)
{
    c->group[mdl_comms_index(c, marker)][r] = g;
}

/* The one dimension of a pair or ends spec. */
static int one_dim(unsigned dims)
{
    for (int d = 0; d < MDL_NDIMS; d++)
        if (dims & MDL_DIM_BIT(d)) return d;
    return 0;
}

/* Each spanning group once, from its first member (every spanned coordinate 0). */
static int make_span(struct mdl_comms *c, int i, struct mdl_program *p, const struct mdl_mesh *m,
                     int *ranks)
{
    const struct mdl_comm_spec *s = &c->spec[i];
    for (int r = 0; r < c->nranks; r++) {
        int coord[MDL_NDIMS], first = 1;
        mdl_mesh_coords(m, r, coord);
        for (int d = 0; d < MDL_NDIMS; d++)
            if ((s->dims & MDL_DIM_BIT(d)) && coord[d]) first = 0;
        if (!first) continue;
        int n = mdl_mesh_group(m, r, s->dims, ranks, NULL);
        if (n < 2) continue;
        int g = s->own ? mdl_program_group_add(p, n, ranks) : mdl_program_group(p, n, ranks);
        if (g < 0) return -1;
        for (int k = 0; k < n; k++)
            c->group[i][ranks[k]] = g;
    }
    return 0;
}

/* The rank `step` places along dimension d from rank r, or -1 past an end (wrap: round). */
static int step_from(const struct mdl_mesh *m, int r, int d, int step, bool wrap)
{
    int coord[MDL_NDIMS];
    mdl_mesh_coords(m, r, coord);
    int x = coord[d] + step, n = m->size[d];
    if (wrap) x = ((x % n) + n) % n;
    if (x < 0 || x >= n) return -1;
    coord[d] = x;
    return mdl_mesh_rank(m, coord);
}

/* Pair groups: one per ordered pair and share (a spec of its own when share is 0). */
struct pairs {
    struct pair {
        char key[32]; /* "share:a:b" */
        int group;
    } * v;
    int n, cap;
    struct tps_strindex index;
};

static const char *pair_key(const void *ctx, int i)
{
    return ((const struct pairs *)ctx)->v[i].key;
}

static int make_pair(struct mdl_comms *c, int i, struct mdl_program *p, const struct mdl_mesh *m,
                     struct pairs *P)
{
    const struct mdl_comm_spec *s = &c->spec[i];
    int d = one_dim(s->dims);
    for (int r = 0; r < c->nranks; r++) {
        int a = step_from(m, r, d, s->from, s->wrap), b = step_from(m, r, d, s->to, s->wrap);
        if (a < 0 || b < 0 || a == b) continue;
        char key[32];
        snprintf(key, sizeof key, "%d:%d:%d", s->share ? s->share : -1 - i, a, b);
        int k = tps_strindex_find(&P->index, key, pair_key, P);
        if (k < 0) {
            int pair[2] = {a, b};
            if (tps_grow(&P->v, &P->cap, P->n + 1, sizeof *P->v, 64) ||
                (P->v[P->n].group = mdl_program_group_add(p, 2, pair)) < 0)
                return -1;
            memcpy(P->v[P->n].key, key, sizeof key);
            k = P->n++;
            if (tps_strindex_update(&P->index, P->n, pair_key, P)) return -1;
        }
        c->group[i][r] = P->v[k].group;
    }
    return 0;
}

/* The two ends of dimension d, from the first of them. */
static int make_ends(struct mdl_comms *c, int i, struct mdl_program *p, const struct mdl_mesh *m)
{
    int d = one_dim(c->spec[i].dims);
    for (int r = 0; r < c->nranks && m->size[d] > 1; r++) {
        int coord[MDL_NDIMS];
        mdl_mesh_coords(m, r, coord);
        if (coord[d]) continue;
        int ends[2] = {r, step_from(m, r, d, m->size[d] - 1, false)};
        int g = mdl_program_group_add(p, 2, ends);
        if (g < 0) return -1;
        c->group[i][ends[0]] = c->group[i][ends[1]] = g;
    }
    return 0;
}

int mdl_comms_make(struct mdl_comms *c, struct mdl_program *p, const struct mdl_mesh *m)
{
    int *ranks = malloc(((size_t)c->nranks + 1) * sizeof *ranks), rc = ranks ? 0 : -1;
    struct pairs P = {0};
    for (int i = 0; !rc && i < c->n; i++) {
        switch (c->spec[i].shape) {
        case MDL_COMM_SPAN:
            rc = make_span(c, i, p, m, ranks);
            break;
        case MDL_COMM_PAIR:
            rc = make_pair(c, i, p, m, &P);
            break;
        case MDL_COMM_ENDS:
            rc = make_ends(c, i, p, m);
            break;
        case MDL_COMM_GIVEN:
            break;
        }
    }
    free(ranks);
    free(P.v);
    tps_strindex_release(&P.index);
    return rc;
}
