// idx.h: reader for IDX files (the MNIST container), raw or gzip-compressed.
//
// Format (LeCun's MNIST page): 2 zero bytes, a type byte, the number of dimensions,
// then ndim big-endian uint32 sizes, then the data, big-endian, row-major.
// Types: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64.
// Gzip is detected by its magic bytes (1f 8b), never by the file name.
//
// Checks, each failing with one line "NAME: reason" in the Error:
//   - the magic (first two bytes zero), a known type byte, 1 <= ndim <= IDX_MAX_DIMS,
//     no zero-sized dimension;
//   - the total data size is at most IDX_MAX_BYTES (2 GiB), computed without overflow;
//   - the file (after decompression) holds exactly the bytes the header claims:
//     "NAME: truncated: header claims N bytes, file has M" when short,
//     "NAME: trailing data: header claims N bytes, file has M" when long;
//   - gzip data are inflated with a bounded output: the buffer grows with the data
//     actually inflated (up to the header's claim, itself capped), and at most 64 KiB
//     past the claim are inflated to report trailing data, so a gzip bomb cannot
//     exhaust memory or time; a corrupt gzip stream fails with zlib's reason.
// After loading, multi-byte values are in host byte order; use idx_get() to read
// any type as double, or idx->data directly for uint8.
#ifndef DATASETS_IDX_H
#define DATASETS_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define IDX_MAX_DIMS 8
#define IDX_MAX_BYTES ((size_t)2 << 30)  // 2 GiB cap on the data a header may claim

typedef enum {
    IDX_U8 = 0x08,
    IDX_I8 = 0x09,
    IDX_I16 = 0x0B,
    IDX_I32 = 0x0C,
    IDX_F32 = 0x0D,
    IDX_F64 = 0x0E,
} IdxType;

typedef struct {
    IdxType type;
    int ndim;
    int64_t dims[IDX_MAX_DIMS];  // dims[0] is usually the number of items
    size_t count;                // product of dims
    size_t elem_size;            // bytes per element (1, 2, 4 or 8)
    unsigned char *data;         // count * elem_size bytes, host byte order; owned
} Idx;

// Loads PATH (raw or gzip). On failure *out is left empty ({0}) and err names PATH.
int idx_load(Idx *out, const char *path, Error *err);
// Same from memory (raw or gzip bytes); name is used in error messages. Copies.
// Safe on arbitrary bytes (the fuzz target).
int idx_load_memory(Idx *out, const unsigned char *bytes, size_t len, const char *name,
                    Error *err);
void idx_free(Idx *idx);

// Element i (flat, row-major) converted to double, for any type.
double idx_get(const Idx *idx, size_t i);
// Bytes per element for a type byte, or 0 if the type is unknown.
size_t idx_type_size(int type);

// Serialises an array to IDX bytes (big-endian) in a malloc'd buffer: for tests and
// for writing small fixtures. data is count elements in host order.
unsigned char *idx_encode(IdxType type, int ndim, const int64_t *dims, const void *data,
                          size_t *len);

#endif
