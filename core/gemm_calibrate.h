// gemm_calibrate.h: the measurement that picks each class's kernel (core/gemm_choice.h).
//
// For every class, a few products of the shapes the models use, on `threads` threads,
// through every kernel that serves the class and runs on this CPU:
//   small  12 x 100 x 100 and 12 x 12 x 100 (A B^T): DRAW's read filterbank, N 12, 100 px
//   rows   64 x 1024 x 512 and 50 x 520 x 1024: LSTM gates, batch 64; DRAW's backward;
//          32 x 1800 x 2824: a quarter of the captioner's 1800-unit LSTM gates over a
//          data-parallel worker's 32 rows ([word; context; h] of 512 + 512 + 1800)
//   large  1024 x 196 x 256, 256 x 196 x 1024 and 256 x 196 x 256: ResNet's bottleneck
//          at 14 x 14 (its 1 x 1 expansion and reduction, and one of Winograd's 16
//          products), the layer that runs 23 of ResNet-101's 33 blocks
//   step   50 x 1024 x 520 with W^T packed, and 50 x 520 x 1024 with W: DRAW's encoder;
//          32 x 1800 x 2824 with W^T packed: the captioner's LSTM as above
// Each kernel's time is the median of 7 rounds (the kernels taking turns in every round, so
// that a burst of load elsewhere hits them alike), each round at least about 10 ms of
// calls. The fastest kernel wins unless prefer's kernel (the table's, core/gemm_choice.h)
// is within 10 % of it: a kernel of the table keeps its class, and the results their bits
// of before, unless another one is clearly faster. On a 2-core AMD EPYC (Zen 3) the rounds
// of one kernel spread by 10-20 %, while on the models' shapes at one thread OpenBLAS's Zen
// and HASWELL kernels differ by 0.5-9 % (bench/RESULTS.md): a smaller margin would pick by
// the noise. The whole calibration takes about a second per thread count. allowed: which
// kernels may take part.
#ifndef CORE_GEMM_CALIBRATE_H
#define CORE_GEMM_CALIBRATE_H

#include <stdbool.h>

#include "core/gemm_choice.h"

typedef struct {
    GemmChoice choice;
    double gflops[GEMM_CLASSES][GEMM_KERNELS];  // 0: not measured
} GemmCalibration;

// allowed[k]: kernel k may take part. Threads: OpenBLAS's (blas_set_threads is called).
GemmCalibration gemm_calibrate(int threads, CpuIsa isa, const bool allowed[GEMM_KERNELS],
                               const GemmChoice *prefer);

#endif
