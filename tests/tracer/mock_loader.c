/* mock_loader.c - loads a "framework" shared object with dlopen(RTLD_LOCAL), as Python loads
 * PyTorch's extensions, and runs it: mock_loader FRAMEWORK.so RANK NRANKS ITERS. It links no
 * CUDA library itself. With a fourth argument SYMBOL it instead calls the NCCL function SYMBOL
 * through the global scope (the tracer's interposer) and prints its status: a function no loaded
 * library defines. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: mock_loader FRAMEWORK.so RANK NRANKS ITERS [SYMBOL]\n");
        return 2;
    }
    void *fw = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!fw) {
        fprintf(stderr, "mock_loader: %s\n", dlerror());
        return 2;
    }
    if (argc > 5) {
        int (*fn)(void *, int, int, int, void *, void *);
        *(void **)&fn = dlsym(RTLD_DEFAULT, argv[5]);
        if (!fn) return 3;
        printf("%d\n", fn(NULL, 2, 0, 0, NULL, NULL));
        return 0;
    }
    int (*run)(int, int, int);
    *(void **)&run = dlsym(fw, "framework_run");
    if (!run) return 2;
    int rc = run(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    dlclose(fw);
    return rc;
}
