// fuzz_util.h: helpers shared by the libFuzzer targets in tests/fuzz/ and by
// tests/test_fuzz_regressions.c, which replays their corpora through the same entry points.
//
// Each target fuzz_NAME.c defines `void fuzz_NAME_one(const uint8_t *data, size_t size)`
// (the whole check of one input) and, unless FUZZ_NO_MAIN is defined, libFuzzer's
// LLVMFuzzerTestOneInput calling it. A violated property (a message that is not one
// line, an output breaking its documented bounds) aborts with a message, so libFuzzer
// keeps the input and the replay test fails.
#ifndef TESTS_FUZZ_FUZZ_UTIL_H
#define TESTS_FUZZ_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "core/block.h"
#include "core/error.h"
#include "core/safetensors.h"

// Aborts with "fuzz property violated: ..." unless cond holds.
void fuzz_require(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// A failure's message: non-empty, one line, and starting with "name:" when name is given.
void fuzz_require_error(const Error *err, const char *name);
// A loaded model's parameters b are the file's: at least one tensor, each found in f by
// name with the same size and the same bits.
void fuzz_require_block_is_file(const Block *b, const SafetensorsFile *f);
// A private temporary folder (made on first use, removed with its contents at exit).
const char *fuzz_tmpdir(void);
// tmpdir/name, in one of a few rotating static buffers.
const char *fuzz_tmp_path(const char *name);
// Writes len bytes to path (aborts on a write error: the machine, not the input, failed).
void fuzz_write_file(const char *path, const void *data, size_t len);

#endif
