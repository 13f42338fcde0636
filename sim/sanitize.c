/* sanitize.c - the engine child's accommodation of AddressSanitizer (see sanitize.h).
 *
 * ASan's __asan_handle_no_return unpoisons the stack from the current frame to the thread's
 * stack top; when that span exceeds 64 MiB (a frame on a heap stack, as SimGrid's actors run),
 * it skips the unpoisoning and reports a warning, once per process. Nothing is lost by the skip
 * here: a finished actor's stack is freed, and the allocator unpoisons memory it hands out again.
 * The function below runs one call of it on a stack in static storage (far from the thread's)
 * while standard error points at /dev/null, so the warning is spent there. */
#include "sim/sanitize.h"

#ifdef TPSIM_SANITIZE
#include <fcntl.h>
#include <sanitizer/asan_interface.h>
#include <stdio.h>
#include <ucontext.h>
#include <unistd.h>

static ucontext_t back, probe;
static char probe_stack[64 << 10];

static void probe_main(void)
{
    __asan_handle_no_return();
}

void sim_sanitize_quiet(void)
{
    fflush(stderr);
    int saved = dup(2), nul = open("/dev/null", O_WRONLY);
    if (saved < 0 || nul < 0) {
        if (saved >= 0) close(saved);
        if (nul >= 0) close(nul);
        return;
    }
    dup2(nul, 2);
    close(nul);
    if (getcontext(&probe) == 0) {
        probe.uc_stack.ss_sp = probe_stack;
        probe.uc_stack.ss_size = sizeof probe_stack;
        probe.uc_link = &back;
        makecontext(&probe, probe_main, 0);
        swapcontext(&back, &probe);
    }
    dup2(saved, 2);
    close(saved);
}
#else
void sim_sanitize_quiet(void) {}
#endif
