/* inputs.c - the set of a command's inputs, by device and inode, that outputs are checked
 * against (inputs.h). */
#include "inputs.h"

#include <string.h>
#include <sys/stat.h>

#include "error.h"

struct input {
    dev_t dev;
    ino_t ino;
    int whole; /* path was not cut to fit: it can be stat'ed again */
    char path[256];
};

static struct input inputs[TPS_INPUTS_MAX];
static int ninputs, on;

void tps_inputs_guard(int enable)
{
    on = enable;
    ninputs = 0;
}

/* The index of the input with sb's device and inode, or -1. */
static int slot(const struct stat *sb)
{
    for (int i = 0; i < ninputs; i++)
        if (inputs[i].dev == sb->st_dev && inputs[i].ino == sb->st_ino) return i;
    return -1;
}

/* Whether input in is no longer there under its name: removed since, it may have left its inode
 * to a new file. */
static int gone(const struct input *in)
{
    struct stat now;
    return in->whole &&
           (stat(in->path, &now) != 0 || now.st_dev != in->dev || now.st_ino != in->ino);
}

void tps_input_note(const char *path)
{
    struct stat sb;
    if (!on || !path || stat(path, &sb) != 0) return;
    int i = slot(&sb);
    if (i >= 0 && !gone(&inputs[i])) return; /* noted already */
    if (i < 0 && ninputs == TPS_INPUTS_MAX) return;
    struct input *in = &inputs[i >= 0 ? i : ninputs++];
    in->dev = sb.st_dev;
    in->ino = sb.st_ino;
    in->whole = strlen(path) < sizeof in->path;
    strncpy(in->path, path, sizeof in->path - 1);
    in->path[sizeof in->path - 1] = '\0';
}

int tps_output_check(const char *path, struct tps_error *err)
{
    struct stat sb;
    int i = on && stat(path, &sb) == 0 ? slot(&sb) : -1;
    if (i < 0 || gone(&inputs[i])) return TPS_OK;
    const struct input *in = &inputs[i];
    return tps_error_set(err, TPS_EINVAL, path, 0, 0, NULL,
                         "is %s this command reads (%s): write the output elsewhere",
                         S_ISDIR(sb.st_mode) ? "a directory" : "a file", in->path);
}

void tps_input_forget(const char *path)
{
    struct stat sb;
    int i = path && stat(path, &sb) == 0 ? slot(&sb) : -1;
    if (i >= 0) inputs[i] = inputs[--ninputs];
}
