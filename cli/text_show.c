// text_show.c: `text classify show` (cli/text_show.h).
#include "cli/text_show.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/html.h"
#include "cli/text_eval.h"
#include "core/check.h"
#include "core/fileio.h"
#include "core/text_escape.h"
#include "vision/font.h"
#include "vision/overlay.h"
#include "vision/png.h"

static int fail(const Error *err) {
    fprintf(stderr, "text classify: %s\n", err->msg);
    return 1;
}

typedef struct {
    const char *model, *data, *root, *out;
    int split, count;
} ShowFlags;

static int parse_flags(ShowFlags *f, int argc, char **argv, int *code) {
    *f = (ShowFlags){.root = "data", .count = 40};
    ArgSpec specs[] = {
        {"model", ARG_STRING, &f->model, "checkpoint (DIR/model.safetensors)", .metavar = "PATH", .required = true},
        {"out", ARG_STRING, &f->out, "output folder (attention.html, attention.png)", .metavar = "DIR", .required = true},
        {"data", ARG_STRING, &f->data, "sentences to show (default: the model's own data spec)", .metavar = "SPEC"},
        {"data-root", ARG_STRING, &f->root, "folder holding sentiment/", .metavar = "DIR"},
        {"split", ARG_CHOICE, &f->split, "valid, train or all (as eval)", .choices = TEXT_SPLITS},
        {"count", ARG_INT, &f->count, "sentences shown, the misclassified first", .has_min = true, .min = 1, .has_max = true, .max = 100000},
    };
    return args_parse_for_command(argc, argv, specs, ARGS_LEN(specs),
                                  "text classify show --model PATH --out DIR [flags]", "text classify", code);
}

// What the model made of one sentence.
typedef struct {
    int index;     // in the encoded split
    int pred, label;
    float prob;    // of the predicted class
    float *alpha;  // (T)
} Seen;

static int cmp_seen(const void *pa, const void *pb) {
    const Seen *a = pa, *b = pb;
    int wa = a->pred != a->label, wb = b->pred != b->label;
    if (wa != wb) return wb - wa;                     // mistakes first
    if (wa && a->prob != b->prob) return a->prob < b->prob ? 1 : -1;  // the surest first
    return a->index - b->index;
}

// The largest weight on a word and the share on the padding, of sentence s.
static void weights_of(const Seen *s, const int *ids, int T, float *max, float *pad) {
    *max = 0.0f, *pad = 0.0f;
    for (int t = 0; t < T; t++) {
        if (ids[t] == 0) *pad += s->alpha[t];
        else if (s->alpha[t] > *max) *max = s->alpha[t];
    }
}

static int write_html(const char *path, const char *model, const char *split,
                      const TextSplitData *d, const Seen *seen, int n, int wrong, Error *err) {
    const TextState *st = &d->m.state;
    const int T = st->cfg.T;
    AtomicFile af;
    if (atomic_open(&af, path, err)) return -1;
    FILE *fp = af.fp;
    html_page_begin(fp, "text classify show");
    fputs("<style>.w{padding:1px 3px;margin:1px;border-radius:3px;display:inline-block}"
          ".s{margin:0.6em 0}.bad{color:#a00}</style>\n", fp);
    html_section(fp, "words", "The words the model reads");
    fputs("<p>", fp);
    html_textf(fp, "Model %s (%s pooling%s), data %s, split %s: %d sentences, %d misclassified; "
               "the first %d below, the mistakes first. Each word is shaded by its weight in the "
               "pooling, scaled to the sentence's largest.", model,
               text_pool_name(st->cfg.pool), st->cfg.masked ? ", masked" : ", padding not masked",
               d->spec, split, d->e.n, wrong, n);
    fputs("</p>\n", fp);
    for (int i = 0; i < n; i++) {
        const Seen *s = &seen[i];
        const int *ids = d->e.ids + (size_t)s->index * T;
        float mx, pad;
        weights_of(s, ids, T, &mx, &pad);
        fprintf(fp, "<div class=\"s%s\" data-label=\"%d\" data-pred=\"%d\">", s->pred != s->label ? " bad" : "",
                st->class_values[s->label], st->class_values[s->pred]);
        html_textf(fp, "label %d, says %d (%.1f%%)%s: ", st->class_values[s->label],
                   st->class_values[s->pred], 100.0 * s->prob, s->pred != s->label ? ", wrong" : "");
        for (int t = 0; t < T; t++) {
            if (ids[t] == 0) continue;
            float v = mx > 0 ? s->alpha[t] / mx : 0.0f;
            fprintf(fp, "<span class=\"w\" title=\"%.4f\" style=\"background:rgba(255,140,0,%.3f)\">",
                    s->alpha[t], v);
            html_text(fp, st->tok.word[ids[t]]);
            fputs("</span>", fp);
        }
        if (pad > 0.0005f) html_textf(fp, " (padding: %.1f%% of the weight)", 100.0 * pad);
        fputs("</div>\n", fp);
    }
    html_section_end(fp);
    html_page_end(fp, NULL);
    return atomic_commit(&af, err);
}

// One row of the picture: the verdict, then each word on a box of its weight's heat colour.
static Image picture_row(const TextSplitData *d, const Seen *s, int width, int scale) {
    const TextState *st = &d->m.state;
    const int T = st->cfg.T, ch = FONT_CELL_H * scale, pad_x = 2 * scale;
    const int *ids = d->e.ids + (size_t)s->index * T;
    float mx, pad;
    weights_of(s, ids, T, &mx, &pad);
    char head[96];
    snprintf(head, sizeof head, "%s%d says %d (%.0f%%): ", s->pred != s->label ? "WRONG " : "",
             st->class_values[s->label], st->class_values[s->pred], 100.0 * s->prob);
    // Lay out first to know the height.
    int lines = 1, x = font_text_width(head, scale);
    for (int t = 0; t < T; t++) {
        if (!ids[t]) continue;
        int w = font_text_width(st->tok.word[ids[t]], scale) + 2 * pad_x;
        if (x + w > width && x > 0) lines++, x = 0;
        x += w + scale;
    }
    Image img = image_new(3, lines * (ch + 2 * scale) + scale, width);
    for (size_t i = 0; i < (size_t)3 * img.h * img.w; i++) img.data[i] = 1.0f;
    const float black[3] = {0, 0, 0}, red[3] = {0.75f, 0, 0};
    int y = scale;
    x = font_draw_text(&img, 0, y + scale, head, scale, s->pred != s->label ? red : black);
    for (int t = 0; t < T; t++) {
        if (!ids[t]) continue;
        const char *w = st->tok.word[ids[t]];
        int ww = font_text_width(w, scale) + 2 * pad_x;
        if (x + ww > width && x > 0) y += ch + 2 * scale, x = 0;
        float rgb[3], v = mx > 0 ? s->alpha[t] / mx : 0.0f;
        colormap_heat(rgb, 0.25f + 0.75f * v);
        for (int k = 0; k < 3; k++) rgb[k] = 1.0f - v * (1.0f - rgb[k]);  // faint for small weights
        fill_rect(&img, x, y, x + ww - 1, y + ch + scale - 1, rgb);
        font_draw_text(&img, x + pad_x, y + scale, w, scale, black);
        x += ww + scale;
    }
    return img;
}

static int write_png(const char *path, const TextSplitData *d, const Seen *seen, int n, Error *err) {
    Image *rows = xcalloc((size_t)n, sizeof *rows);
    for (int i = 0; i < n; i++) rows[i] = picture_row(d, &seen[i], 1200, 2);
    Image all = stack_vertical(rows, n, 4);
    for (int i = 0; i < n; i++) image_free(&rows[i]);
    free(rows);
    int rc = write_png_image(path, &all, err);
    image_free(&all);
    return rc;
}

int text_show_main(int argc, char **argv) {
    ShowFlags f;
    int code;
    if (parse_flags(&f, argc, argv, &code)) return code;
    Error err;
    TextSplitData d;
    if (text_open_split(&d, f.model, f.data, f.root, f.split, &err)) return fail(&err);
    const TextState *st = &d.m.state;
    const int N = d.e.n, T = st->cfg.T, B = N < 100 ? N : 100;
    Seen *seen = xcalloc((size_t)N, sizeof *seen);
    float *alpha = xmalloc((size_t)N * T * sizeof *alpha);
    TextActs a;
    text_acts_alloc(&a, &st->cfg, B);
    int wrong = 0;
    for (int start = 0; start < N; start += B) {
        int nb = N - start < B ? N - start : B;
        text_forward(&a, &d.m.p, &st->cfg, d.e.ids + (size_t)start * T, d.e.lengths + start, NULL,
                     nb, NULL, NULL);
        for (int b = 0; b < nb; b++) {
            Seen *s = &seen[start + b];
            s->index = start + b;
            s->label = d.e.labels[start + b];
            s->pred = text_predicted(&a, &st->cfg, b, &s->prob);
            s->alpha = alpha + (size_t)(start + b) * T;
            memcpy(s->alpha, a.alpha + (size_t)b * T, (size_t)T * sizeof(float));
            wrong += s->pred != s->label;
        }
    }
    text_acts_free(&a);
    qsort(seen, (size_t)N, sizeof *seen, cmp_seen);
    int n = f.count < N ? f.count : N, rc = make_dirs(f.out, &err);
    char html[1100], png[1100];
    snprintf(html, sizeof html, "%s/attention.html", f.out);
    snprintf(png, sizeof png, "%s/attention.png", f.out);
    if (rc == 0) rc = write_html(html, f.model, TEXT_SPLITS[f.split], &d, seen, n, wrong, &err);
    if (rc == 0) rc = write_png(png, &d, seen, n, &err);
    if (rc == 0)
        text_write_linef(stderr, "text classify show: %d of %d sentences (%d misclassified); wrote %s and %s",
                         n, N, wrong, html, png);
    free(seen);
    free(alpha);
    text_split_data_free(&d);
    return rc ? fail(&err) : 0;
}
