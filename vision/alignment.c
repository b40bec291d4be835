// alignment.c: see alignment.h.
#include "vision/alignment.h"

#include <string.h>

#include "core/check.h"
#include "vision/font.h"

void alignment_label(char *buf, size_t n, const char *label) {
    CHECK(n >= 1);
    size_t k = 0;
    int chars = 0;
    for (const unsigned char *p = (const unsigned char *)label; *p && chars < ALIGN_LABEL_MAX; chars++) {
        char c = '?';
        if (*p >= 32 && *p < 127) c = (char)*p++;
        else {
            p++;
            while ((*p & 0xC0) == 0x80) p++;  // the rest of a UTF-8 character
        }
        if (k + 1 < n) buf[k++] = c;
    }
    buf[k] = 0;
}

static int widest(const char *const *labels, int n, int scale) {
    int best = 0;
    for (int i = 0; i < n; i++) {
        char b[4 * ALIGN_LABEL_MAX + 1];
        alignment_label(b, sizeof b, labels[i] ? labels[i] : "");
        const int w = font_text_width(b, scale);
        if (w > best) best = w;
    }
    return best;
}

void alignment_layout(AlignLayout *l, const char *const *src, int cols, const char *const *tgt,
                      int rows, int scale) {
    CHECK(rows >= 1 && cols >= 1 && scale >= 1, "rows %d, cols %d, scale %d", rows, cols, scale);
    const int pad = 3 * scale;
    l->cell = ALIGN_CELL_PX(scale);
    l->left = widest(tgt, rows, scale) + 2 * pad;
    l->top = widest(src, cols, scale) + 2 * pad;
    l->w = l->left + cols * l->cell;
    l->h = l->top + rows * l->cell;
}

// Writes label upwards (read bottom to top) in the column of x0 .. x0 + cell - 1, its
// last character ending at y_bottom.
static void draw_upwards(Image *img, const char *label, int x0, int cell, int y_bottom, int scale) {
    const int tw = font_text_width(label, scale), th = FONT_CELL_H * scale;
    if (tw == 0) return;
    Image t = image_new(1, th, tw);
    for (size_t i = 0; i < (size_t)th * tw; i++) t.data[i] = 1.0f;
    const float black[3] = {0, 0, 0};
    font_draw_text(&t, 0, 0, label, scale, black);
    const int off = (cell - th) / 2 + scale;  // centred, the glyph's spacing row outside
    // Turned a quarter left: text pixel (ty, tx) goes to (y_bottom - tx, x0 + off + ty).
    for (int ty = 0; ty < th; ty++)
        for (int tx = 0; tx < tw; tx++) {
            const int y = y_bottom - tx, x = x0 + off + ty;
            if (y >= 0 && y < img->h && x >= 0 && x < img->w)
                *image_at(img, 0, y, x) = t.data[(size_t)ty * tw + tx];
        }
    image_free(&t);
}

Image alignment_picture(const float *weights, int stride, const char *const *src, int cols,
                        const char *const *tgt, int rows, int scale) {
    CHECK(stride >= cols, "stride %d < cols %d", stride, cols);
    AlignLayout l;
    alignment_layout(&l, src, cols, tgt, rows, scale);
    Image img = image_new(1, l.h, l.w);
    for (size_t i = 0; i < (size_t)l.h * l.w; i++) img.data[i] = 1.0f;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            float w = weights[(size_t)i * stride + j];
            w = w < 0 ? 0 : w > 1 ? 1 : w;
            for (int y = l.top + i * l.cell; y < l.top + (i + 1) * l.cell; y++)
                for (int x = l.left + j * l.cell; x < l.left + (j + 1) * l.cell; x++)
                    *image_at(&img, 0, y, x) = 1.0f - w;
        }
    const float black[3] = {0, 0, 0};
    const int pad = 3 * scale;
    char b[4 * ALIGN_LABEL_MAX + 1];
    for (int i = 0; i < rows; i++) {
        alignment_label(b, sizeof b, tgt[i] ? tgt[i] : "");
        const int x = l.left - pad - font_text_width(b, scale);  // right-aligned to the grid
        font_draw_text(&img, x, l.top + i * l.cell + (l.cell - FONT_CELL_H * scale) / 2 + scale,
                       b, scale, black);
    }
    for (int j = 0; j < cols; j++) {
        alignment_label(b, sizeof b, src[j] ? src[j] : "");
        draw_upwards(&img, b, l.left + j * l.cell, l.cell, l.top - pad - 1, scale);
    }
    return img;
}
