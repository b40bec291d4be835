// featcache.h: a feature cache, the annotations of every image of a caption set computed
// once by a frozen pretrained encoder (vision/encoder.h) and stored for decoder-only
// training (Xu et al. 2015 and arctic-captions trained on such precomputed VGG features).
//
// The file is a safetensors file (core/safetensors.h), so it opens in Python too:
//   annotations  (N, L, D) F16 (default) or F32: image i's annotation vectors, position
//                l = gy G + gx as the encoder gives them; zeros for an image that failed
//   status       (N) U8: 1 extracted, 2 the image could not be read (skipped), 0 not yet
//                (only in a partial file)
//   __metadata__ format "attend-features", version "1", encoder (canonical spec, e.g.
//                "vgg19"), encoder.sha256 (of the weights file), encoder.weights (the path
//                as given), encoder.description, preprocess (the transform, in words),
//                image_size, data (the data spec), images (a JSON array of the image ids,
//                in the caption set's order), images.sha256 (of the ids, each followed by
//                "\n"), extraction ("batch=B threads=T group=G": what the bytes depend on),
//                complete ("0" / "1") and annotations.sha256 (of the whole data section,
//                annotations then status; 64 zeros until complete).
// The JSON header is written once, before any data, padded with spaces to a multiple of 8
// bytes so that the data starts aligned; completion overwrites the two fixed-width values
// in place. The data section is the two tensors back to back, nothing else.
//
// Writing: the file grows under PATH.partial; each batch's annotations are written, synced,
// then its status bytes, so after an interruption every image with status 0 is redone and
// nothing else. Reopening the partial file with the same header (byte for byte: the same
// encoder, data, image list, dtype and extraction settings) resumes at the first batch with
// an image not done; the finished file is then byte-identical to an uninterrupted one.
// Completion hashes the data, marks the header and renames PATH.partial to PATH, so a file
// under PATH is always complete.
//
// Reading memory-maps the file (read-only, shared): nothing of the annotations is copied
// into the process's own memory, so a cache larger than RAM (COCO's 123,287 images at
// 14 x 14 x 512 F16 are 24.7 GB) is paged in from disk as batches touch it.
// featcache_verify recomputes the checksum (one pass over the file).
#ifndef DATASETS_FEATCACHE_H
#define DATASETS_FEATCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/safetensors.h"
#include "core/sha256.h"

typedef enum { FEAT_F16 = 0, FEAT_F32 = 1 } FeatDtype;

enum { FEAT_PENDING = 0, FEAT_OK = 1, FEAT_UNREADABLE = 2 };

// What a cache holds and how it was made: everything its header records.
typedef struct {
    const char *encoder;          // canonical spec, e.g. "vgg19"
    const char *encoder_sha256;   // 64 hex digits
    const char *encoder_weights;  // the weights file as named
    const char *encoder_description;
    const char *preprocess;       // the transform, in words
    int image_size;               // S
    const char *data;             // the data spec
    int n;                        // images
    const char *const *ids;       // (n) image ids, the caption set's order
    int L, D;                     // annotations per image (G G) and their size
    FeatDtype dtype;
    int batch, threads, group;    // extraction settings (the bytes depend on them)
} FeatCacheInfo;

// The preprocessing description written into caches and checkpoints for size S.
void featcache_preprocess_text(char *buf, size_t cap, int S);
// "f16" / "f32" (-1 for anything else).
int featcache_dtype_parse(const char *text, FeatDtype *out);
const char *featcache_dtype_name(FeatDtype d);

// IEEE binary16 of x, rounded to nearest (ties to even); overflow gives infinity, NaN
// stays NaN. featcache_f32_to_f16_ref: the same by search over the exact half values
// (slow; tests).
uint16_t featcache_f32_to_f16(float x);
uint16_t featcache_f32_to_f16_ref(float x);

typedef struct {
    int fd;
    char path[1100], partial[1110];
    FeatCacheInfo info;
    size_t header_bytes;  // 8 + the JSON header, padded
    size_t row_bytes;     // one image's annotations
    int64_t n;
    int start;            // the first image this invocation extracts (0, or where it resumes)
    int complete;         // PATH already held this complete cache: nothing to do
    unsigned char *scratch;
} FeatCacheWriter;

// Opens PATH for writing the cache that info describes: a complete PATH with the same
// settings gives complete = 1 (nothing to do); PATH.partial with the same header resumes
// (start = the first image of the first batch not done); otherwise a new PATH.partial.
// A PATH or PATH.partial made with other settings is refused, naming the first setting
// that differs (remove it, or give another PATH); a PATH.partial of these settings but not
// of their size is refused as truncated (remove it and extract again).
int featcache_writer_open(FeatCacheWriter *w, const char *path, const FeatCacheInfo *info,
                          Error *err);
// The extraction settings recorded in PATH.partial, so that a resumed run can reuse them
// (the bytes depend on them): 1 and *batch, *threads, *group set when PATH.partial exists
// and records them; 0 otherwise.
int featcache_partial_settings(const char *path, int *batch, int *threads, int *group);
// The data spec recorded in PATH, or else in PATH.partial, into buf (cap bytes): 1 when
// one of them exists and records one that fits, 0 otherwise. (A caller whose --data names
// the same files another way can write that text into its FeatCacheInfo, so that the
// header comparison of featcache_writer_open sees the same setting.)
int featcache_recorded_data(const char *path, char *buf, size_t cap);
// Stores images first .. first + count - 1: annot (count, L, D), status (count) of
// FEAT_OK / FEAT_UNREADABLE (an unreadable image's annotations are stored as zeros).
// The annotations are synced to disk before the status bytes are written. Annotations
// holding NaN or infinity, or (F16) a value beyond half precision's 65504, are refused
// naming the image (nothing of that batch is marked done).
int featcache_writer_put(FeatCacheWriter *w, int first, int count, const float *annot,
                         const unsigned char *status, Error *err);
// Every image must be done: hashes the data, marks the header complete, syncs and
// renames PATH.partial to PATH.
int featcache_writer_finish(FeatCacheWriter *w, Error *err);
// Closes without finishing (PATH.partial stays, to be resumed).
void featcache_writer_close(FeatCacheWriter *w);

typedef struct {
    SafetensorsFile st;           // the header (metadata strings live here)
    const unsigned char *base;    // the whole file (mapped, or the caller's bytes)
    size_t len;
    int mapped;
    char name[1100];
    int n, L, D, image_size;
    FeatDtype dtype;
    const unsigned char *annot;   // (n, L, D) in dtype
    const unsigned char *status;  // (n)
    const char *encoder, *encoder_sha256, *encoder_weights, *preprocess, *data, *sha256;
    int complete;
    char **ids;                   // (n) parsed from the header's image list
} FeatCache;

// Opens and checks a cache: a safetensors file with the format, version, metadata and the
// two tensors above (shapes agreeing with each other and the image list, dtypes F16/F32
// and U8), complete. One line "PATH: reason" otherwise. The data are mapped, not read.
int featcache_open(FeatCache *c, const char *path, Error *err);
// The same over bytes in memory (not copied: they must outlive c); partial caches are
// accepted here when allow_partial (the fuzz target reads both kinds).
int featcache_open_memory(FeatCache *c, const unsigned char *bytes, size_t len, const char *name,
                          int allow_partial, Error *err);
void featcache_close(FeatCache *c);
// Recomputes the data's SHA-256 against the header's; "PATH: checksum mismatch ..." if not.
int featcache_verify(const FeatCache *c, Error *err);
// out (L, D) = image i's annotations as floats. featcache_read also counts the values
// that are NaN or infinite as it converts them (nothing writes such a cache, but a file
// damaged on disk holds them) and fails naming the cache and the image, "PATH: image ID
// (I of N): K of its L*D annotation values are NaN or infinite (...)"; out is filled
// either way. featcache_get does not check.
int featcache_read(const FeatCache *c, int i, float *out, Error *err);
void featcache_get(const FeatCache *c, int i, float *out);
static inline int featcache_status(const FeatCache *c, int i) { return c->status[i]; }

#endif
