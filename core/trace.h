/* trace.h - tpsim's versioned text trace format: a directory with meta.tps and one
 * rank-NNNNN.tps file per rank (docs/trace-format.md). The model writes it, the tracer of
 * validate/ (through trace-merge) too, and `tpsim run` replays either alike. Doubles are written
 * with 17 significant digits so a written-then-read program is bit-identical.
 */
#ifndef TRACE_H
#define TRACE_H

#include "common/error.h"
#include "models/program.h"

#define TRACE_VERSION 5 /* reads 1 to 5 (3 adds launch_s, 4 iter and warmup, 5 sync) */

/* Bounds a trace's meta.tps must respect (docs/trace-format.md): layers, micro-batches, and
 * their product, for which reports keep a time span each. */
#define TRACE_MAX_LAYERS (1 << 20)
#define TRACE_MAX_SPANS  (1 << 22)
/* Bounds of the numbers an op holds (docs/trace-format.md): beyond them a replay overflows. The
 * reader refuses them and the writer never writes them. */
#define TRACE_MAX_SECONDS 1e6
#define TRACE_MAX_BYTES   1e18
#define TRACE_MAX_FLOP    1e24
#define TRACE_MAX_FLOPS   1e18 /* FLOP/s */

/* Whether byte c may stand in an op's name: a name is one token of the format (no blank), and it
 * reaches the terminal (no control byte). */
int trace_name_byte_ok(int c);

/* Writes *p into directory dir (created if needed). `platform` is the platform spec line to
 * record ("dgx-a100 nodes=2", or a file path), or NULL. */
int trace_write(const struct mdl_program *p, const char *platform, const char *dir,
                struct tps_error *err);

/* Reads a trace directory into *p (initialised here; release it even on failure). If
 * platform is not NULL it receives the recorded platform spec ("" if none). */
int trace_read(const char *dir, struct mdl_program *p, char *platform, size_t platform_len,
               struct tps_error *err);

/* The line of meta.tps in dir that starts with `key` ("ranks"), or 0: for errors that only a
 * replay's platform reveals (more ranks than GPUs). */
int trace_meta_line(const char *dir, const char *key);

/* The trace directory to read for `input`: input itself, or input/merged when input is a
 * tracer recording that trace-merge has merged (no meta.tps of its own). Uses buf. */
const char *trace_dir_resolve(const char *input, char *buf, size_t len);

#endif
