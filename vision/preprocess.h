// preprocess.h: torchvision's ImageNet transform, the input the pretrained encoders
// (vision/encoder.h) were trained on:
//     Resize(resize)      the shorter side to `resize` pixels, the longer to
//                         int(resize * long / short) (truncated, as torchvision computes it),
//                         bilinear with antialiasing
//     CenterCrop(S)       the S x S centre, top = round((h - S) / 2) with Python's rounding
//                         (halves to even), left alike
//     ToTensor            RGB in [0, 1] (grey images repeat their one channel, as PIL's
//                         convert("RGB") does)
//     Normalize           (x - mean) / std per channel, mean (0.485, 0.456, 0.406),
//                         std (0.229, 0.224, 0.225)
// The standard evaluation is Resize(256) + CenterCrop(224); imagenet_resize_for(S) keeps
// that ratio for other sizes (512 for 448).
//
// The resize is PIL's antialiased bilinear filter (Pillow's ImagingResample, which
// torchvision's tensor F.resize(antialias=True) follows): along each axis, with scale =
// in / out and support = max(scale, 1), output i averages inputs j around centre
// c = (i + 0.5) scale with weights max(0, 1 - |j + 0.5 - c| / support), normalised to
// sum 1, on the range j in [int(c - support + 0.5), int(c + support + 0.5)) cut to the image.
// Computed in floating point: tests/test_preprocess.c checks it against torchvision's
// tensor transform (within 2e-5 after normalisation, float rounding: 0.001 of an 8-bit
// level; 1.0e-5 seen) and against the PIL pipeline, which
// rounds to 8 bits after each pass (within 1.5/255 before normalisation; 0.88/255 seen). Only
// the pixels the crop keeps are computed.
//
// Decoding is not part of this: vision/image.h decodes with stb_image, whose JPEG decoder
// can differ from libjpeg's (PIL's) by a level or two per pixel; PNGs decode identically.
#ifndef VISION_PREPROCESS_H
#define VISION_PREPROCESS_H

#include "vision/image.h"

extern const float IMAGENET_MEAN[3], IMAGENET_STD[3];

// round(S * 256 / 224): 256 for 224, 512 for 448.
int imagenet_resize_for(int S);
// The size Resize(resize) gives an h x w image (*rh, *rw).
void imagenet_resized_size(int *rh, int *rw, int h, int w, int resize);

// out (3, S, S) from img (1 or 3 channels, values in [0, 1]); resize >= S. CHECKs the sizes.
void imagenet_preprocess(float *out, const Image *img, int S, int resize);

// The antialiased bilinear resize of src (c, sh, sw) to (rh, rw), cropped: dst (c, oh, ow)
// gets rows top .. top + oh and columns left .. left + ow of the resized image.
void resize_aa_crop(float *dst, const float *src, int c, int sh, int sw, int rh, int rw,
                    int top, int left, int oh, int ow);
// Plain loops (each output pixel's weights from the formula above, double sums).
void resize_aa_crop_ref(float *dst, const float *src, int c, int sh, int sw, int rh, int rw,
                        int top, int left, int oh, int ow);

#endif
