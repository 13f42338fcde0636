/* framework.c - names and defaults of the framework options (see framework.h). */
#include "models/framework.h"

#include <stddef.h>

const char *const mdl_launch_names[] = {"none", "eager", "graphs", NULL};
const char *const mdl_kernels_names[] = {"fused", "eager", NULL};
const char *const mdl_attention_names[] = {"core", "flash", NULL};

void mdl_framework_default(struct mdl_framework *fw)
{
    fw->launch = MDL_LAUNCH_EAGER;
    fw->kernels = MDL_KERNELS_FUSED;
    fw->attention = MDL_ATTENTION_CORE;
    fw->connections = 0; /* a hardware queue per stream */
}
