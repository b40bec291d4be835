// safetensors.h: checkpoints in the safetensors format.
//
// Layout: 8-byte little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "string value", ...}}
// then the raw little-endian tensor data; offsets are relative to the data start.
// Files open in Python with the safetensors library. Only F32 tensors are written;
// the reader accepts F32 (and rejects anything else with a clear message).
// Training state (step, RNG, config) goes in __metadata__ as strings; optimiser
// moments as extra tensors (e.g. "adam.m/NAME").
#ifndef CORE_SAFETENSORS_H
#define CORE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/block.h"
#include "core/error.h"

typedef struct {
    const char *key;
    const char *value;
} SafetensorsMeta;

// Writes every tensor of each block (names prefixed by prefixes[i], "" for none),
// plus metadata, atomically (temporary file, fsync, rename).
int safetensors_save(const char *path, const Block *const *blocks, const char *const *prefixes,
                     int n_blocks, const SafetensorsMeta *meta, int n_meta, Error *err);

typedef struct {
    char name[BLOCK_NAME_LEN + 32];
    int ndim;
    int64_t shape[8];
    size_t numel;
    const float *data;  // points into the file buffer (aligned copy)
} SafetensorsTensor;

typedef struct {
    SafetensorsTensor *tensors;
    int count;
    SafetensorsMeta *meta;  // strings owned by the file
    int n_meta;
    void *buffer_;          // internal
} SafetensorsFile;

// Reads and validates the whole file: header length within the file, JSON well
// formed, every dtype F32, shapes non-negative, offsets inside the data, sizes
// matching shapes, no overlaps. Any violation: -1 with "PATH: reason".
int safetensors_load(SafetensorsFile *f, const char *path, Error *err);
// The same from bytes in memory (copied; the bytes may be freed after the call); name is
// used in messages. Safe on arbitrary bytes (the fuzz target tests/fuzz/fuzz_safetensors.c).
int safetensors_load_memory(SafetensorsFile *f, const unsigned char *bytes, size_t len,
                            const char *name, Error *err);
void safetensors_free(SafetensorsFile *f);
const SafetensorsTensor *safetensors_find(const SafetensorsFile *f, const char *name);
const char *safetensors_meta(const SafetensorsFile *f, const char *key);  // NULL if absent

// Copies every tensor of block b from f (looking up prefix + name), checking shapes.
// Missing tensors or shape mismatches fail naming the tensor.
int safetensors_read_block(Block *b, const char *prefix, const SafetensorsFile *f,
                           const char *path, Error *err);

#endif
