// plot.h: line plots as PNG files (loss curves and the like), drawn with the built-in
// font: several named series of (x, y) points, axes with "nice" tick labels, a legend.
//
// Non-finite points are skipped (a gap in the line). With log_y, values <= 0 are
// skipped and the y axis is log10 with ticks at powers of ten (and 2, 5 between when
// the range is small, plain "nice" steps within a decade). Colours cycle through 8.
#ifndef VISION_PLOT_H
#define VISION_PLOT_H

#include "core/error.h"
#include "vision/image.h"

typedef struct {
    const char *name;   // legend label (NULL: no entry)
    const float *x;     // (n)
    const float *y;     // (n)
    int n;
} PlotSeries;

typedef struct {
    const char *title;   // may be NULL
    const char *xlabel;  // may be NULL
    const char *ylabel;  // may be NULL
    int width, height;   // pixels; 0 -> 640 x 400
    int log_y;
    int nonnegative;     // the values cannot be negative (a share, a score): see plot_ranges
} PlotOptions;

// Renders the plot into a new RGB image. opt may be NULL (defaults).
Image plot_render(const PlotSeries *series, int n_series, const PlotOptions *opt);
// Renders and writes a PNG atomically.
int plot_write_png(const char *path, const PlotSeries *series, int n_series,
                   const PlotOptions *opt, Error *err);

// The ranges of the axes plot_render draws (y in log10 units with log_y): the finite points'
// range, widened by 0.5 each way when it is flat, then padded by 5% of its height each way.
// With opt->nonnegative (and no log_y), a flat series at a value in [0, 0.5) gets [0, 1]
// before the padding instead, so that a curve of zeros shows as 0 on a 0..1 axis, not as
// the middle of one from -0.4 to 0.4. No points: [0, 1] for both.
void plot_ranges(const PlotSeries *series, int n_series, const PlotOptions *opt, double *xlo,
                 double *xhi, double *ylo, double *yhi);

// Tick positions for the range [lo, hi]: at most max_ticks "nice" values (1, 2, 5 x 10^k
// steps) inside the range, written to ticks; returns how many.
int plot_nice_ticks(double lo, double hi, int max_ticks, double *ticks);

#endif
