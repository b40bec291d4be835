// safetensors.h: checkpoints in the safetensors format.
//
// Layout: 8-byte little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "string value", ...}}
// then the raw little-endian tensor data; offsets are relative to the data start.
// Files open in Python with the safetensors library. Only F32 tensors are written (a
// checkpoint is always F32). The reader accepts the floating dtypes F32, F16 and BF16
// (F16 and BF16 widened to float on reading, exactly: every such value is a float) and
// the integer dtypes I8, U8, I16, U16, I32, U32, I64, U64 and BOOL, whose bytes are
// checked for size but not kept (data NULL: e.g. batch norm's num_batches_tracked in a
// PyTorch state_dict); anything else (F64, F8_*) is refused with a clear message.
// Training state (step, RNG, config) goes in __metadata__ as strings; optimiser
// moments as extra tensors (e.g. "adam.m/NAME").
//
// Two ways to read: safetensors_load reads every tensor into memory; safetensors_open
// reads and validates only the header (the same checks) and keeps the file open, so that
// a caller that wants a few tensors of a large file (the classifier-free part of an
// ImageNet network, vision/encoder.h) reads each with safetensors_read_floats.
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

typedef enum {
    ST_F32, ST_F16, ST_BF16,                                    // floating: read as float
    ST_I8, ST_U8, ST_I16, ST_U16, ST_I32, ST_U32, ST_I64, ST_U64, ST_BOOL  // integer: skipped
} SafetensorsDtype;

// Whether tensors of this dtype read as floats (F32, F16, BF16).
static inline int safetensors_dtype_is_float(SafetensorsDtype d) { return d <= ST_BF16; }
// "F32", "F16", ... as in the header.
const char *safetensors_dtype_name(SafetensorsDtype d);

typedef struct {
    char name[BLOCK_NAME_LEN + 32];
    int ndim;
    int64_t shape[8];
    size_t numel;
    SafetensorsDtype dtype;  // as stored in the file
    size_t offset;           // byte offset of its data from the start of the data section
    const float *data;       // safetensors_load: the values as floats (an aligned copy; F16 and
                             // BF16 widened); NULL for integer dtypes and after safetensors_open
} SafetensorsTensor;

typedef struct {
    SafetensorsTensor *tensors;
    int count;
    SafetensorsMeta *meta;  // strings owned by the file
    int n_meta;
    void *buffer_;          // internal
} SafetensorsFile;

// Reads and validates the whole file: header length within the file, JSON well
// formed, every dtype one of those above, shapes non-negative, offsets inside the data,
// sizes matching shapes and dtypes, no overlaps. Any violation: -1 with "PATH: reason".
int safetensors_load(SafetensorsFile *f, const char *path, Error *err);
// The same from bytes in memory (copied; the bytes may be freed after the call); name is
// used in messages. Safe on arbitrary bytes (the fuzz target tests/fuzz/fuzz_safetensors.c).
int safetensors_load_memory(SafetensorsFile *f, const unsigned char *bytes, size_t len,
                            const char *name, Error *err);
// Reads and validates the header only (every check of safetensors_load but reading the
// data); the file stays open until safetensors_free. Every tensor's data is NULL: read
// them with safetensors_read_floats. The memory variant copies the bytes, as above.
int safetensors_open(SafetensorsFile *f, const char *path, Error *err);
int safetensors_open_memory(SafetensorsFile *f, const unsigned char *bytes, size_t len,
                            const char *name, Error *err);
// dst (t->numel floats) = tensor t of f (opened or loaded), widened to float. -1 with
// "PATH: tensor 'NAME': reason" when t is an integer tensor or the read fails (a file
// that changed since it was opened), and with "PATH: tensor 'NAME' holds NaN or inf"
// when a value read is not a finite number (weights never are).
int safetensors_read_floats(float *dst, const SafetensorsFile *f, const SafetensorsTensor *t,
                            Error *err);
void safetensors_free(SafetensorsFile *f);

// IEEE 754 half (binary16) and bfloat16 bits to float: exact (subnormals, infinities and
// NaNs included). The _ref versions compute the value arithmetically, for the tests.
float safetensors_f16_to_f32(uint16_t h);
float safetensors_bf16_to_f32(uint16_t h);
float safetensors_f16_to_f32_ref(uint16_t h);
const SafetensorsTensor *safetensors_find(const SafetensorsFile *f, const char *name);
const char *safetensors_meta(const SafetensorsFile *f, const char *key);  // NULL if absent
// Metadata read as numbers; each failure is one line naming path, key and value. A missing
// key reads "PATH: not KIND (no "KEY" in __metadata__)" (KIND e.g. "a DRAW checkpoint"),
// or "PATH: no "KEY" in __metadata__" when kind is NULL. Integers outside [lo, hi] fail
// (LONG_MIN, LONG_MAX: any); floats must be finite.
int safetensors_meta_long(const SafetensorsFile *f, const char *path, const char *key,
                          const char *kind, long lo, long hi, long *out, Error *err);
int safetensors_meta_float(const SafetensorsFile *f, const char *path, const char *key,
                           float *out, Error *err);
int safetensors_meta_double(const SafetensorsFile *f, const char *path, const char *key,
                            double *out, Error *err);

// Copies every tensor of block b from f (looking up prefix + name), checking shapes.
// Missing tensors, shape mismatches, integer tensors and values that are NaN or infinite
// fail naming the tensor. f must come from safetensors_load.
int safetensors_read_block(Block *b, const char *prefix, const SafetensorsFile *f,
                           const char *path, Error *err);
// The checks of safetensors_read_block alone, on a layout not yet allocated (f opened or
// loaded): call it before block_alloc, so that a file whose metadata claims a huge model
// is refused by what its tensors hold rather than by a failed allocation.
int safetensors_check_block(const Block *b, const char *prefix, const SafetensorsFile *f,
                            const char *path, Error *err);
// A layout not yet allocated, filled from f: checked (safetensors_check_block), then
// allocated and read. On failure b is freed (block_free: its layout too).
int safetensors_alloc_read_block(Block *b, const char *prefix, const SafetensorsFile *f,
                                 const char *path, Error *err);

#endif
