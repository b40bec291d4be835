// error.h: the status of a recoverable failure (bad input, a missing file, a full disk).
//
// Functions that can fail on input return int: 0 on success, -1 on failure with
// err->msg filled as one line naming the file and the reason, e.g.
//     "data/train.idx: truncated: header claims 47040000 bytes, file has 1024"
// Callers pass the Error up unchanged or prefix context; the CLI prints err->msg
// on one line to stderr and exits non-zero. err may be NULL to ignore the message.
#ifndef CORE_ERROR_H
#define CORE_ERROR_H

typedef struct {
    char msg[512];
} Error;

// Formats the message into err (if non-NULL) and returns -1, so a failure reads
//     return error_set(err, "%s: bad magic %08x", path, magic);
int error_set(Error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Prepends "prefix: " to an existing message; returns -1.
int error_prefix(Error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
