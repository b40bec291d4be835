// draw_eval_record.h: each image's figures of a `draw eval` (--per-image FILE), kept in a
// file as its batches finish: a table of the images for the researcher, and the state of an
// evaluation cut off (a kill, a session's end), which goes on from its last whole batch
// when run again with the same FILE instead of from the first image (a K = 1,000 IW
// estimate runs one to two hours on one thread). Run again once finished, it reads the
// figures and computes nothing.
//
// The file is text, rewritten atomically after each batch (cli/draw_eval.c):
//
//     draw eval per-image figures
//     weights-sha256 5a0c31f2...    the weights evaluated (the average where it is used)
//     images 1000                   the images evaluated (the first N of the split)
//     images-sha256 0d4e9a17...     their pixels
//     samples 1000                  K
//     seed 1                        the noise seed
//     batch 100
//     done 300                      images finished: whole batches, or all
//     image reconstruction kl iw    the columns, then one line per finished image:
//     0 53.1... 29.0... 78.2...     reconstruction and KL (nats, means over the K passes),
//     ...                           IW estimate (0 for K = 1); doubles to 17 digits
//
// An image's figures depend on the weights, its pixels and its noise (seeded with the seed,
// the pass and its index), so the evaluation goes on where it stopped and ends with the
// uninterrupted one's figures; on other threads or ranks than before, up to the last bits
// (a GEMM may sum in another order for another share of a batch). A file of another
// evaluation is refused, never mixed in.
#ifndef CLI_DRAW_EVAL_RECORD_H
#define CLI_DRAW_EVAL_RECORD_H

#include <stddef.h>

#include "core/error.h"
#include "core/sha256.h"

// What an evaluation is: the header's lines (the digests in lower-case hex).
typedef struct {
    char weights_sha256[SHA256_HEX_CHARS + 1], images_sha256[SHA256_HEX_CHARS + 1];
    int images, samples, batch;
    long seed;
} DrawEvalIdentity;

// The figures of one evaluation's images (fig: (images, 3), reconstruction, KL, IW
// estimate), of which the first `done` are finished.
typedef struct {
    const char *path;
    DrawEvalIdentity id;
    int done;
    double *fig;
} DrawEvalRecord;

// hex: the SHA-256 (core/sha256.h) of n floats' bytes.
void draw_eval_digest(char hex[SHA256_HEX_CHARS + 1], const float *x, size_t n);

// Allocates fig for id's images (zeros). With read (rank 0), takes the finished images from
// path if it exists; a file that is not such a record, or one of another evaluation, is an
// error naming it and the reason (the figures stay zeros, path untouched).
int draw_eval_record_open(DrawEvalRecord *p, const char *path, const DrawEvalIdentity *id,
                           int read, Error *err);
// Rewrites path atomically with the first `done` images' figures (rank 0).
int draw_eval_record_save(DrawEvalRecord *p, int done, Error *err);
void draw_eval_record_free(DrawEvalRecord *p);

#endif
