// fileio.h: checked file reading and crash-safe writing.
//
// Reading opens regular files only: a folder, a FIFO, a socket or a device is refused with
// "PATH: not a regular file" before it is opened (a FIFO would block the reader forever).
//
// Writing goes to "PATH.tmp.HOST.PID" (HOST: this machine's name, characters other than
// letters, digits, '-' and '_' made '_'), created afresh (never through a symbolic link,
// never into a file that is there), flushed and fsynced, then renamed over PATH (and the
// folder fsynced), so a crash or a full disk never leaves a half-written file under the
// real name: the previous file stays intact. Processes on other machines writing into a
// shared folder use other names.
#ifndef CORE_FILEIO_H
#define CORE_FILEIO_H

#include <stddef.h>
#include <stdio.h>

#include "core/error.h"

// Reads a whole regular file into a malloc'd buffer (plus a terminating 0 byte not
// counted in *len). Fails if the file is larger than max_bytes (0 = no limit), or is not a
// regular file (as file_open_regular).
int file_read_all(const char *path, unsigned char **data, size_t *len, size_t max_bytes,
                  Error *err);

// Opens a regular file (not a folder, pipe or device) for reading in binary mode, for
// readers that stream it; *size gets its size in bytes. On failure *fp is NULL and err
// says "PATH: cannot open: REASON" or "PATH: not a regular file".
int file_open_regular(FILE **fp, size_t *size, const char *path, Error *err);
// The same as a descriptor opened with flags (O_RDONLY or O_RDWR; blocking), for readers
// that map or pread it; *fd is -1 on failure.
int file_open_regular_fd(int *fd, size_t *size, const char *path, int flags, Error *err);

typedef struct {
    FILE *fp;
    char path[1024];
    char tmp[1100];
} AtomicFile;

// Opens the temporary file for writing.
int atomic_open(AtomicFile *f, const char *path, Error *err);
// Flushes, fsyncs, closes and renames into place. On any failure (e.g. disk full)
// removes the temporary and leaves the old file untouched; the message says "(the previous
// file is unchanged)" when there is one.
int atomic_commit(AtomicFile *f, Error *err);
// Gives up: closes and removes the temporary.
void atomic_abort(AtomicFile *f);
// Removes DIR/NAME.tmp.HOST.PID files that a killed process of this host left behind:
// regular files named as atomic_open names them here, whose process PID no longer exists.
// Never touches a final name, a link, a folder, another host's temporaries or those of a
// running process (this one included).
void atomic_remove_stale(const char *dir);
// One-shot: writes len bytes atomically.
int file_write_atomic(const char *path, const void *data, size_t len, Error *err);

// fsyncs the folder holding path, so that a rename into it survives a crash (a file
// system that cannot sync folders is no error).
int file_sync_parent(const char *path, Error *err);

// mkdir -p; fails with a message naming the folder.
int make_dirs(const char *path, Error *err);
int file_exists(const char *path);

#endif
