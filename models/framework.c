/* framework.c - names and defaults of the framework options (see framework.h). */
#include "models/framework.h"

#include <string.h>

static const char *const launch_names[] = {"none", "eager", "graphs", NULL};
static const char *const kernels_names[] = {"fused", "eager", NULL};
static const char *const attention_names[] = {"core", "flash", NULL};

void mdl_framework_default(struct mdl_framework *fw)
{
    fw->launch = MDL_LAUNCH_EAGER;
    fw->kernels = MDL_KERNELS_FUSED;
    fw->attention = MDL_ATTENTION_CORE;
}

static int parse(const char *const *names, const char *s, int *out)
{
    for (int i = 0; names[i]; i++)
        if (s && !strcmp(s, names[i])) {
            *out = i;
            return 0;
        }
    return -1;
}

const char *mdl_launch_name(enum mdl_launch l)
{
    return launch_names[l];
}

const char *mdl_kernels_name(enum mdl_kernels k)
{
    return kernels_names[k];
}

const char *mdl_attention_name(enum mdl_attention a)
{
    return attention_names[a];
}

int mdl_launch_parse(const char *s, enum mdl_launch *out)
{
    int v;
    if (parse(launch_names, s, &v)) return -1;
    *out = (enum mdl_launch)v;
    return 0;
}

int mdl_kernels_parse(const char *s, enum mdl_kernels *out)
{
    int v;
    if (parse(kernels_names, s, &v)) return -1;
    *out = (enum mdl_kernels)v;
    return 0;
}

int mdl_attention_parse(const char *s, enum mdl_attention *out)
{
    int v;
    if (parse(attention_names, s, &v)) return -1;
    *out = (enum mdl_attention)v;
    return 0;
}
