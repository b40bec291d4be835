// scratch.h: a test program's temporary folder, and running a program under test with its
// output captured into files there (tests of bin/draw and bin/caption, file tests).
//
//     Scratch sc;                                  // sc.dir = $TMPDIR/test_cli_draw_XXXXXX
//     if (scratch_open(&sc, "test_cli_draw", "draw")) return 1;
//     int status = scratch_run(&sc, "eval --model %s/run/model.safetensors", sc.dir);
//     char *err = scratch_read(&sc, "stderr.txt", NULL);   // NULL if unreadable
//     ...
//     scratch_remove(sc.dir);
//
// Limits: paths up to 1 KiB; arguments up to 4 KiB (longer ones are cut).
#ifndef TESTS_SUPPORT_SCRATCH_H
#define TESTS_SUPPORT_SCRATCH_H

#include <stddef.h>

typedef struct {
    char dir[256];      // the scratch folder
    char program[600];  // BIN/NAME, BIN being $ATTEND_BIN (default "bin")
    char out_path[600]; // DIR/stdout.txt: the last run's stdout
    char err_path[600]; // DIR/stderr.txt: the last run's stderr
} Scratch;

// Makes a new folder $TMPDIR/PREFIX_XXXXXX (TMPDIR unset or empty: /tmp) and writes its
// path into dir (cap bytes). Returns 0, or -1 after printing why (perror style).
int scratch_make(char *dir, size_t cap, const char *prefix);

// Removes path and everything below it (folders are made writable first, so a test may
// leave read-only folders behind). A missing path is no error.
void scratch_remove(const char *path);

// scratch_make into s->dir, and the paths of program (a name in $ATTEND_BIN, default "bin")
// and of its captured output. Returns 0 or -1 (as scratch_make).
int scratch_open(Scratch *s, const char *prefix, const char *program);
// A copy of s (its folder and output files) that runs another program of $ATTEND_BIN.
Scratch scratch_for_program(const Scratch *s, const char *program);

// Runs "PROGRAM ARGS > DIR/stdout.txt 2> DIR/stderr.txt" through the shell, ARGS formatted
// from fmt. Returns the exit status, or -1 when the program did not exit normally.
int scratch_run(const Scratch *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// The command that starts N ranks on this machine: $ATTEND_MPIRUN, else
// "sh tests/mpirun_local.sh", the one place that knows Open MPI's flags for it (root in a
// container, more ranks than cores, no binding; run from the repository's root, as the
// tests are). Followed by "-np N PROGRAM ARGS".
const char *scratch_mpirun(void);

// Like scratch_run, under "scratch_mpirun() -np NP". Ranks' outputs go to the same files.
// Leak checking is off in the ranks (Open MPI's allocations live until exit).
int scratch_run_mpi(const Scratch *s, int np, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

// Reads a whole file as a 0-terminated string (malloc'd); NULL when it cannot be read.
// *len (if non-NULL) gets its size in bytes (0 on failure).
char *scratch_read_text(const char *path, size_t *len);
// The same for DIR/NAME.
char *scratch_read(const Scratch *s, const char *name, size_t *len);

// Writes text to path, replacing what was there (scratch_write_text, through
// file_write_atomic) or after it (scratch_append_text). Returns 0, or -1 after printing why.
int scratch_write_text(const char *path, const char *text);
int scratch_append_text(const char *path, const char *text);

// Whether DIR/REL exists, REL made from fmt and its arguments.
int scratch_exists(const Scratch *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Number of '\n' in s; 0 for NULL.
int scratch_count_lines(const char *s);

#endif
