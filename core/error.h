// error.h: the status of a recoverable failure (bad input, a missing file, a full disk).
//
// Functions that can fail on input return int: 0 on success, -1 on failure with
// err->msg filled as one line naming the file and the reason, e.g.
//     "data/train.idx: truncated: header claims 47040000 bytes, file has 1024"
// Callers pass the Error up unchanged or prefix context; the CLI prints err->msg
// on one line to stderr and exits non-zero. err may be NULL to ignore the message.
//
// Escaping happens here, once: error_set and error_prefix write what they format in
// core/text_escape.h's field form, so a message naming a path or quoting a name read from a
// file is one line of valid UTF-8 whatever the name holds, and printers write err->msg as
// it is (never through text_write_line again, which would escape it twice). A message is
// therefore never formatted into another with "%s" (its backslashes would double): wrap it
// with error_wrap or error_prefix.
#ifndef CORE_ERROR_H
#define CORE_ERROR_H

typedef struct {
    char msg[512];
} Error;

// Formats the message into err (if non-NULL) and returns -1, so a failure reads
//     return error_set(err, "%s: bad magic %08x", path, magic);
int error_set(Error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Prepends "prefix: " to an existing message (the prefix in the field form, the message as
// it is); returns -1.
int error_prefix(Error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// err = "prefix: " + inner's message (inner may be err's own Error copy); returns -1.
int error_wrap(Error *err, const Error *inner, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
