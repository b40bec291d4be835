// plot.c: see plot.h.
#include "vision/plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/check.h"
#include "vision/font.h"
#include "vision/overlay.h"
#include "vision/png.h"

static const float PLOT_COLOURS[8][3] = {
    {0.12f, 0.47f, 0.71f}, {0.89f, 0.35f, 0.05f}, {0.17f, 0.63f, 0.17f}, {0.84f, 0.15f, 0.16f},
    {0.58f, 0.40f, 0.74f}, {0.55f, 0.34f, 0.29f}, {0.89f, 0.47f, 0.76f}, {0.35f, 0.35f, 0.35f},
};

int plot_nice_ticks(double lo, double hi, int max_ticks, double *ticks) {
    CHECK(max_ticks >= 2, "max_ticks = %d", max_ticks);
    if (!(hi > lo) || !isfinite(lo) || !isfinite(hi)) {
        ticks[0] = lo;
        return isfinite(lo) ? 1 : 0;
    }
    double raw = (hi - lo) / (max_ticks - 1);
    double mag = pow(10.0, floor(log10(raw)));
    static const double steps[] = {1, 2, 5, 10, 20};
    double step = 0;
    int count = 0;
    for (int s = 0; s < 5; s++) {
        step = steps[s] * mag;
        double first = ceil(lo / step - 1e-9) * step;
        count = (int)floor((hi - first) / step + 1e-9) + 1;
        if (count <= max_ticks) break;
    }
    double first = ceil(lo / step - 1e-9) * step;
    int n = 0;
    for (int i = 0; i < count && n < max_ticks; i++) {
        double v = first + i * step;
        if (fabs(v) < step * 1e-6) v = 0.0;  // no "-0" or 1e-17 from rounding
        ticks[n++] = v;
    }
    return n;
}

// Log-axis ticks (in log10 units) for [lo, hi]: integer exponents, or 1-2-5 steps when
// fewer than 3 exponents fall inside, or linear nice steps when even those are too few.
static int log_ticks(double lo, double hi, int max_ticks, double *ticks) {
    int n = 0;
    for (double e = ceil(lo); e <= hi + 1e-9 && n < max_ticks; e++) ticks[n++] = e;
    if (n >= 3) {
        if (n == max_ticks && hi - lo > max_ticks) {  // too many decades: thin them
            int stride = (int)ceil((hi - lo) / (max_ticks - 1));
            n = 0;
            for (double e = ceil(lo / stride) * stride; e <= hi + 1e-9 && n < max_ticks; e += stride)
                ticks[n++] = e;
        }
        return n;
    }
    n = 0;
    static const double mult[3] = {1, 2, 5};
    for (double e = floor(lo); e <= ceil(hi) && n < max_ticks; e++)
        for (int k = 0; k < 3 && n < max_ticks; k++) {
            double v = e + log10(mult[k]);
            if (v >= lo - 1e-9 && v <= hi + 1e-9) ticks[n++] = v;
        }
    if (n >= 3) return n;
    // Less than a decade or so: linear nice ticks of the values, placed on the log axis.
    double lin[16];
    int m = plot_nice_ticks(pow(10.0, lo), pow(10.0, hi), max_ticks < 16 ? max_ticks : 16, lin);
    n = 0;
    for (int i = 0; i < m; i++)
        if (lin[i] > 0) ticks[n++] = log10(lin[i]);
    return n;
}

static inline void plot_dot(Image *img, int x, int y, const float rgb[3], int size) {
    fill_rect(img, x, y, x + size - 1, y + size - 1, rgb);
}

// A line of pixel dots (Bresenham) size x size thick, clipped to the rectangle.
static void plot_line(Image *img, int x0, int y0, int x1, int y1, const float rgb[3],
                      int cx0, int cy0, int cx1, int cy1) {
    int dx = abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
    int dy = -abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
    int e = dx + dy;
    for (;;) {
        if (x0 >= cx0 && x0 <= cx1 && y0 >= cy0 && y0 <= cy1) plot_dot(img, x0, y0, rgb, 2);
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * e;
        if (e2 >= dy) e += dy, x0 += sx;
        if (e2 <= dx) e += dx, y0 += sy;
    }
}

static void format_tick(char *buf, size_t n, double v, int log_axis) {
    if (log_axis) v = pow(10.0, v);
    snprintf(buf, n, "%.4g", v);
}

void plot_ranges(const PlotSeries *series, int n_series, const PlotOptions *opt, double *xlo,
                 double *xhi, double *ylo, double *yhi) {
    const int log_y = opt && opt->log_y, nonnegative = opt && opt->nonnegative && !log_y;
    // Data range over finite (and, for log_y, positive) points.
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int s = 0; s < n_series; s++)
        for (int i = 0; i < series[s].n; i++) {
            double x = series[s].x[i], y = series[s].y[i];
            if (!isfinite(x) || !isfinite(y) || (log_y && y <= 0)) continue;
            if (log_y) y = log10(y);
            x0 = fmin(x0, x), x1 = fmax(x1, x), y0 = fmin(y0, y), y1 = fmax(y1, y);
        }
    if (!(x0 <= x1)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;  // nothing to draw
    if (x1 - x0 < 1e-12 * fmax(1.0, fabs(x0))) x0 -= 0.5, x1 += 0.5;
    if (y1 - y0 < 1e-12 * fmax(1.0, fabs(y0))) {
        if (nonnegative && y0 >= 0 && y0 < 0.5)
            y0 = 0, y1 = 1;
        else
            y0 -= 0.5, y1 += 0.5;
    }
    double pad = 0.05 * (y1 - y0);
    *xlo = x0, *xhi = x1, *ylo = y0 - pad, *yhi = y1 + pad;
}

// The plot area in pixels and the data ranges it shows (y as log10 on a log scale).
typedef struct {
    int left, right, top, bottom;
    double xlo, xhi, ylo, yhi;
} PlotFrame;

static int frame_px(const PlotFrame *f, double x) {
    return f->left + (int)lrint((x - f->xlo) / (f->xhi - f->xlo) * (f->right - f->left));
}

static int frame_py(const PlotFrame *f, double y) {
    return f->bottom - (int)lrint((y - f->ylo) / (f->yhi - f->ylo) * (f->bottom - f->top));
}

static const float PLOT_BLACK[3] = {0, 0, 0};

// Ticks with their grid lines and labels, the frame, the title and the axis labels.
static void draw_axes(Image *img, const PlotFrame *f, const PlotOptions *o, const double *yt,
                      int nyt, const double *xt, int nxt) {
    static const float grid[3] = {0.88f, 0.88f, 0.88f};
    const int scale = 1;
    char buf[64];
    for (int i = 0; i < nyt; i++) {
        int y = frame_py(f, yt[i]);
        fill_rect(img, f->left, y, f->right, y, grid);
        fill_rect(img, f->left - 4, y, f->left - 1, y, PLOT_BLACK);
        format_tick(buf, sizeof buf, yt[i], o->log_y);
        font_draw_text(img, f->left - 6 - font_text_width(buf, scale), y - 3, buf, scale, PLOT_BLACK);
    }
    for (int i = 0; i < nxt; i++) {
        int x = frame_px(f, xt[i]);
        fill_rect(img, x, f->top, x, f->bottom, grid);
        fill_rect(img, x, f->bottom + 1, x, f->bottom + 4, PLOT_BLACK);
        format_tick(buf, sizeof buf, xt[i], 0);
        font_draw_text(img, x - font_text_width(buf, scale) / 2, f->bottom + 7, buf, scale, PLOT_BLACK);
    }
    draw_rect(img, f->left, f->top, f->right, f->bottom, PLOT_BLACK, 1);
    if (o->title)
        font_draw_text(img, (o->width - font_text_width(o->title, 2)) / 2, 4, o->title, 2, PLOT_BLACK);
    if (o->ylabel) font_draw_text(img, 4, f->top - 11, o->ylabel, scale, PLOT_BLACK);
    if (o->xlabel)
        font_draw_text(img, (f->left + f->right - font_text_width(o->xlabel, scale)) / 2,
                       o->height - 12, o->xlabel, scale, PLOT_BLACK);
}

// Each series as a line through its finite points (a gap at any other), a lone point as a dot.
static void draw_series(Image *img, const PlotFrame *f, const PlotSeries *series, int n_series,
                        int log_y) {
    for (int s = 0; s < n_series; s++) {
        const float *col = PLOT_COLOURS[s % 8];
        int have_prev = 0, px = 0, py = 0;
        for (int i = 0; i < series[s].n; i++) {
            double x = series[s].x[i], y = series[s].y[i];
            if (!isfinite(x) || !isfinite(y) || (log_y && y <= 0)) {
                have_prev = 0;
                continue;
            }
            if (log_y) y = log10(y);
            int cx = frame_px(f, x), cy = frame_py(f, y);
            if (have_prev)
                plot_line(img, px, py, cx, cy, col, f->left + 1, f->top + 1, f->right - 2, f->bottom - 2);
            else if (i + 1 >= series[s].n || !isfinite(series[s].y[i + 1]))
                plot_dot(img, cx, cy, col, 3);  // an isolated point stays visible
            px = cx, py = cy, have_prev = 1;
        }
    }
}

// The named series' legend, top-right inside the plot area.
static void draw_legend(Image *img, const PlotFrame *f, const PlotSeries *series, int n_series) {
    const int scale = 1;
    int entries = 0, legend_w = 0;
    for (int s = 0; s < n_series; s++)
        if (series[s].name) {
            entries++;
            int wdt = font_text_width(series[s].name, scale);
            if (wdt > legend_w) legend_w = wdt;
        }
    if (entries == 0) return;
    static const float white[3] = {1, 1, 1};
    int bw = legend_w + 28, bh = entries * 12 + 6;
    int bx = f->right - bw - 6, by = f->top + 6;
    fill_rect(img, bx, by, bx + bw, by + bh, white);
    draw_rect(img, bx, by, bx + bw, by + bh, PLOT_BLACK, 1);
    int k = 0;
    for (int s = 0; s < n_series; s++) {
        if (!series[s].name) continue;
        int y = by + 5 + 12 * k++;
        fill_rect(img, bx + 5, y + 2, bx + 18, y + 3, PLOT_COLOURS[s % 8]);
        font_draw_text(img, bx + 23, y, series[s].name, scale, PLOT_BLACK);
    }
}

Image plot_render(const PlotSeries *series, int n_series, const PlotOptions *opt) {
    PlotOptions o = opt ? *opt : (PlotOptions){0};
    if (o.width <= 0) o.width = 640;
    if (o.height <= 0) o.height = 400;
    CHECK(o.width >= 160 && o.height >= 120, "plot too small: %d x %d", o.width, o.height);
    Image img = image_new(3, o.height, o.width);
    for (size_t i = 0; i < (size_t)3 * o.width * o.height; i++) img.data[i] = 1.0f;

    PlotFrame f;
    plot_ranges(series, n_series, &o, &f.xlo, &f.xhi, &f.ylo, &f.yhi);
    double yt[16], xt[16];
    int nyt = o.log_y ? log_ticks(f.ylo, f.yhi, 8, yt) : plot_nice_ticks(f.ylo, f.yhi, 8, yt);
    int nxt = plot_nice_ticks(f.xlo, f.xhi, 8, xt);
    // The plot area: room on the left for the widest y label, above for the title.
    int label_w = 0;
    char buf[64];
    for (int i = 0; i < nyt; i++) {
        format_tick(buf, sizeof buf, yt[i], o.log_y);
        int wdt = font_text_width(buf, 1);
        if (wdt > label_w) label_w = wdt;
    }
    f.left = label_w + 14, f.right = o.width - 12;
    f.top = o.title || o.ylabel ? 30 : 12, f.bottom = o.height - (o.xlabel ? 36 : 24);
    CHECK(f.right - f.left > 20 && f.bottom - f.top > 20, "plot too small for its labels");

    draw_axes(&img, &f, &o, yt, nyt, xt, nxt);
    draw_series(&img, &f, series, n_series, o.log_y);
    draw_legend(&img, &f, series, n_series);
    return img;
}

int plot_write_png(const char *path, const PlotSeries *series, int n_series,
                   const PlotOptions *opt, Error *err) {
    Image img = plot_render(series, n_series, opt);
    int rc = write_png_image(path, &img, err);
    image_free(&img);
    return rc;
}
