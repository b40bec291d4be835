// checkpoint.h: comparing two safetensors checkpoints bit for bit, for tests of resuming
// and of crash-safe saving.
#ifndef TESTS_SUPPORT_CHECKPOINT_H
#define TESTS_SUPPORT_CHECKPOINT_H

#include <stddef.h>

// 1 when checkpoints a and b (paths) hold the same tensor names, sizes and float bits (at
// least one tensor), and, when key is non-NULL, the same metadata value under key (both
// present). Otherwise 0, with why (cap bytes) saying what differs or which file failed to
// load.
int checkpoints_identical(const char *a, const char *b, const char *key, char *why, size_t cap);

#endif
