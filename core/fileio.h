// fileio.h: checked file reading and crash-safe writing.
//
// Writing goes to "PATH.tmp.PID", is flushed and fsynced, then renamed over PATH
// (and the folder fsynced), so a crash or a full disk never leaves a half-written
// file under the real name: the previous file stays intact.
#ifndef CORE_FILEIO_H
#define CORE_FILEIO_H

#include <stddef.h>
#include <stdio.h>

#include "core/error.h"

// Reads a whole file into a malloc'd buffer (plus a terminating 0 byte not counted
// in *len). Fails if the file is larger than max_bytes (0 = no limit).
int file_read_all(const char *path, unsigned char **data, size_t *len, size_t max_bytes,
                  Error *err);

// Opens a regular file (not a folder, pipe or device) for reading in binary mode, for
// readers that stream it; *size gets its size in bytes. On failure *fp is NULL and err
// says "PATH: cannot open: REASON" or "PATH: not a regular file".
int file_open_regular(FILE **fp, size_t *size, const char *path, Error *err);

typedef struct {
    FILE *fp;
    char path[1024];
    char tmp[1100];
} AtomicFile;

// Opens the temporary file for writing.
int atomic_open(AtomicFile *f, const char *path, Error *err);
// Flushes, fsyncs, closes and renames into place. On any failure (e.g. disk full)
// removes the temporary and leaves the old file untouched.
int atomic_commit(AtomicFile *f, Error *err);
// Gives up: closes and removes the temporary.
void atomic_abort(AtomicFile *f);
// Removes DIR/NAME.tmp.PID files that a killed process left behind: temporaries of
// atomic_open whose process PID no longer exists. Never touches a final name or the
// temporaries of a running process (this one included).
void atomic_remove_stale(const char *dir);
// One-shot: writes len bytes atomically.
int file_write_atomic(const char *path, const void *data, size_t len, Error *err);

// mkdir -p; fails with a message naming the folder.
int make_dirs(const char *path, Error *err);
int file_exists(const char *path);

#endif
