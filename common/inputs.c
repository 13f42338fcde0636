/* inputs.c - the set of a command's inputs, by device and inode, that outputs are checked
 * against (inputs.h). */
#include "inputs.h"

#include <string.h>
#include <sys/stat.h>

#include "error.h"

struct input {
    dev_t dev;
    ino_t ino;
    int dir;   /* a directory: a recording or a trace */
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

static void note(const char *path, int dir)
{
    struct stat sb;
    if (!on || !path || stat(path, &sb) != 0) return;
    for (int i = 0; i < ninputs; i++)
        if (inputs[i].dev == sb.st_dev && inputs[i].ino == sb.st_ino) {
            inputs[i].dir |= dir;
            return;
        }
    if (ninputs == TPS_INPUTS_MAX) return;
    struct input *in = &inputs[ninputs++];
    in->dev = sb.st_dev;
    in->ino = sb.st_ino;
    in->dir = dir;
    in->whole = strlen(path) < sizeof in->path;
    strncpy(in->path, path, sizeof in->path - 1);
    in->path[sizeof in->path - 1] = '\0';
}

void tps_input_note(const char *path)
{
    note(path, 0);
}

void tps_input_note_dir(const char *dir)
{
    note(dir, 1);
}

void tps_inputs_clear(void)
{
    ninputs = 0;
}

/* The input that is the file sb describes: the same device and inode, and the input still
 * there under its name (an input removed since may have left its inode to a new file). */
static const struct input *find(const struct stat *sb)
{
    for (int i = 0; i < ninputs; i++) {
        const struct input *in = &inputs[i];
        struct stat now;
        if (in->dev != sb->st_dev || in->ino != sb->st_ino) continue;
        if (in->whole &&
            (stat(in->path, &now) != 0 || now.st_dev != in->dev || now.st_ino != in->ino))
            continue;
        return in;
    }
    return NULL;
}

int tps_output_check(const char *path, struct tps_error *err)
{
    struct stat sb;
    if (!on) return TPS_OK;
    const struct input *in = stat(path, &sb) == 0 ? find(&sb) : NULL;
    if (!in) return 0;
    return tps_error_set(err, TPS_EINVAL, path, 0, 0, NULL,
                         "is %s this command reads (%s): write the output elsewhere",
                         in->dir ? "a directory" : "a file", in->path);
}

void tps_input_forget(const char *path)
{
    struct stat sb;
    if (!path || stat(path, &sb) != 0) return;
    for (int i = 0; i < ninputs; i++)
        if (inputs[i].dev == sb.st_dev && inputs[i].ino == sb.st_ino) {
            inputs[i] = inputs[--ninputs];
            return;
        }
}
