/* inputs.h - the files and directories a command has read, so that none of its outputs is
 * written over one of them (docs/reliability.md).
 *
 * Readers note what they open (tps_input_note: a file, or a directory read as a whole, a
 * recording or a trace); writers ask tps_output_check before they create, truncate, replace or
 * remove an output. Identity is the device and inode, so another spelling of the same path (./x,
 * a symbolic or hard link) is caught. The set is per process, a fixed table without allocation
 * (a command past TPS_INPUTS_MAX notes keeps the first ones). It is a guard of the command line,
 * which turns it on (tps_inputs_guard): a program that links the library and writes what it has
 * read (the tests' round trips) is not refused.
 */
#ifndef TPS_INPUTS_H
#define TPS_INPUTS_H

struct tps_error;

#define TPS_INPUTS_MAX 4096

/* Turns the guard on (1) or off (0, the default), forgetting every input noted so far. */
void tps_inputs_guard(int enable);

/* Notes path (an existing file or directory) as read by this command; does nothing when it
 * cannot be stat'ed or the guard is off. */
void tps_input_note(const char *path);

/* 0 when writing, replacing or removing path touches no input; otherwise TPS_EINVAL with *err
 * naming path and the input it is. A path that does not exist is never an input. */
int tps_output_check(const char *path, struct tps_error *err);

/* Forgets path as an input, before it is removed: a file created later may get its inode. */
void tps_input_forget(const char *path);

#endif
