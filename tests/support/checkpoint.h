// checkpoint.h: comparing two safetensors checkpoints bit for bit, for tests of resuming
// and of crash-safe saving; rewriting one's metadata or a value, for tests of what a loader
// refuses.
#ifndef TESTS_SUPPORT_CHECKPOINT_H
#define TESTS_SUPPORT_CHECKPOINT_H

#include <stddef.h>

// 1 when checkpoints a and b (paths) hold the same tensor names, sizes and float bits (at
// least one tensor), and, when key is non-NULL, the same metadata value under key (both
// present). Otherwise 0, with why (cap bytes) saying what differs or which file failed to
// load.
int checkpoints_identical(const char *a, const char *b, const char *key, char *why, size_t cap);

// Copies checkpoint src to dst (which may be src) with metadata key set to value (added if
// absent), or with value NULL removed. The tensors are copied as float32. 0, or -1 after a
// failed EXPECT naming what failed.
int checkpoint_rewrite_meta(const char *src, const char *dst, const char *key, const char *value);
// Copies checkpoint src to dst (which may be src) with the first value of tensor set to x
// (a NaN, say), the rest and the metadata unchanged. 0, or -1 after a failed EXPECT.
int checkpoint_set_value(const char *src, const char *dst, const char *tensor, float x);

#endif
