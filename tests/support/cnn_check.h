// cnn_check.h: one path of the CNN encoder (vision/cnn.h: cnn_forward, cnn_backward through
// a workspace of some group size and convolution) against a reference, for
// tests/test_vision_conv.c (against the reference ops) and tests/test_winograd.c (Winograd
// against im2col).
//
// A case holds the encoder's weights (cnn_init, biases in [-0.1, 0.2)), a batch of images
// and annotation gradients in [-1, 1), and non-zero starting gradients (g0, dimg0) for the
// backward passes to accumulate onto; the caller fills the reference's results (annot_ref,
// grads_ref, dimg_ref: start grads_ref and dimg_ref from cnn_case_reference_start).
#ifndef TESTS_SUPPORT_CNN_CHECK_H
#define TESTS_SUPPORT_CNN_CHECK_H

#include <stddef.h>

#include "core/block.h"
#include "core/rng.h"
#include "vision/cnn.h"

typedef struct {
    const CnnConfig *cfg;
    int B, S;
    CnnParams p, g, g_ref;
    Block params, grads, grads_ref;
    size_t ni, na;  // floats of the images (B, C, S, S) and of the annotations (B, L, D)
    float *img, *dannot, *annot, *annot_ref, *dimg, *dimg_ref, *g0, *dimg0;
} CnnCase;

// Lays out and fills a case of B images of S x S for cfg from rng.
void cnn_case_init(CnnCase *c, const CnnConfig *cfg, int B, int S, Rng *rng);

// grads_ref and dimg_ref at the starting gradients.
void cnn_case_reference_start(CnnCase *c);

// Fails unless more than a quarter, and not all, of the reference annotations are positive
// (else the ReLUs and pools would not be tried both ways).
void cnn_case_expect_mixed(const CnnCase *c);

// The path of ws: annot first filled from rng in [-fill, fill) (the forward must overwrite
// it), a forward, then two backward passes onto the starting gradients (the second checks
// the forward's activations were left intact); the annotations, every parameter gradient and
// the image gradient must be within tol * (1 + the largest |reference|) of the reference's.
// group names the case in the failures.
void cnn_case_check(CnnCase *c, CnnWorkspace *ws, float fill, float tol, int group, Rng *rng);

void cnn_case_free(CnnCase *c);

#endif
