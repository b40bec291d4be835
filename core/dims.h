// dims.h: products of dimensions, checked against what the toolkit's kernels index.
//
// The kernels index a tensor with int arithmetic (row * stride + column) and hand its
// sides and strides to OpenBLAS's int interface (M, N, K, lda < 2^31), so every tensor a
// set-up allocates must hold at most DIMS_MAX floats: then every product of its sides, and
// every offset into it, fits an int. A set-up states each tensor's size as named terms and
// refuses, in one line naming them, a configuration whose product passes DIMS_MAX:
//
//     DimTerm t[] = {{B, "--batch"}, {L, "annotation positions (from --image-size 1024)"},
//                    {A, "--attn-dim"}};
//     if (dims_check(err, "the attention's precomputed keys", t, DIMS_LEN(t))) return -1;
//     // "--batch 1 x 262144 annotation positions (from --image-size 1024) x --attn-dim 8192
//     //  = 2147483648 floats (the attention's precomputed keys) exceeds 2147483647, the
//     //  most one tensor may hold"
//
// A term named "--flag" prints as "--flag VALUE", any other as "VALUE name".
#ifndef CORE_DIMS_H
#define CORE_DIMS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define DIMS_MAX ((int64_t)INT_MAX)

typedef struct {
    int64_t n;         // >= 0
    const char *name;  // "--batch", or a phrase such as "annotation positions (from ...)"
} DimTerm;

#define DIMS_LEN(terms) ((int)(sizeof(terms) / sizeof((terms)[0])))

// *out = a * b and true; false (*out untouched) when the product wraps size_t.
bool dims_mul(size_t *out, size_t a, size_t b);

// The product of the n terms, or UINT64_MAX when it passes what 64 bits hold.
uint64_t dims_product(const DimTerm *terms, int n);

// 0 when the product of the n terms is at most DIMS_MAX; else -1 with err (see above);
// what names the tensor, in parentheses after the product.
int dims_check(Error *err, const char *what, const DimTerm *terms, int n);

#endif
