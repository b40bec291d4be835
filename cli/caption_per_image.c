// caption_per_image.c: see caption_per_image.h.
#include "cli/caption_per_image.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"
#include "core/text_escape.h"
#include "vision/overlay.h"
#include "vision/png.h"

int caption_write_strip(const char *path, const float *chw, int S, const float *alphas, int G,
                        char *const *words, int n, Error *err) {
    const int up = S < 128 ? (128 + S - 1) / S : 1;  // small images shown larger
    const int side = S * up;
    Image base = image_new(3, S, S);
    memcpy(base.data, chw, (size_t)3 * S * S * sizeof(float));
    Image big = image_resize(&base, side, side, RESIZE_BILINEAR);
    Image *tiles = xcalloc((size_t)n + 1, sizeof(Image));
    const char **caps = xcalloc((size_t)n + 1, sizeof(char *));
    tiles[0] = image_clone(&big);
    caps[0] = "";
    for (int k = 0; k < n; k++) {
        tiles[k + 1] = image_clone(&big);
        overlay_attention(&tiles[k + 1], alphas + (size_t)k * G * G, G, G, 0.7f, 1);
        caps[k + 1] = words[k];
    }
    Image strip = caption_strip(tiles, caps, n + 1, 4, 2);
    int r = write_png_image(path, &strip, err);
    for (int k = 0; k <= n; k++) image_free(&tiles[k]);
    free(tiles);
    free(caps);
    image_free(&strip);
    image_free(&big);
    image_free(&base);
    return r;
}

// Indices sorted by CIDEr-D, highest first, ties by index (qsort_r is not C11: a merge sort).
static void sort_by_cider(int *idx, int n, const double *cider) {
    int *tmp = xmalloc((size_t)(n ? n : 1) * sizeof(int));
    for (int width = 1; width < n; width *= 2) {
        for (int lo = 0; lo < n; lo += 2 * width) {
            int mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            int a = lo, b = mid, k = lo;
            while (a < mid && b < hi) {
                int ia = idx[a], ib = idx[b];
                int take_a = cider[ia] > cider[ib] || (cider[ia] == cider[ib] && ia < ib);
                tmp[k++] = take_a ? idx[a++] : idx[b++];
            }
            while (a < mid) tmp[k++] = idx[a++];
            while (b < hi) tmp[k++] = idx[b++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof(int));
    }
    free(tmp);
}

// chosen (n): 1 for the images that get a strip (first K, best K, worst K by CIDEr-D).
static void choose_strips(unsigned char *chosen, const double *cider, int n, int K) {
    memset(chosen, 0, (size_t)n);
    int *idx = xmalloc((size_t)(n ? n : 1) * sizeof(int));
    for (int i = 0; i < n; i++) idx[i] = i;
    sort_by_cider(idx, n, cider);
    for (int k = 0; k < K && k < n; k++) {
        chosen[k] = 1;
        chosen[idx[k]] = 1;
        chosen[idx[n - 1 - k]] = 1;
    }
    free(idx);
}

static int write_strips(const CaptionEvalOutputs *o, const DecodedSplit *d,
                        const unsigned char *chosen, Error *err) {
    if (make_dirs(o->strips, err)) return -1;
    const int S = d->S, L = d->G * d->G;
    float *chw = xmalloc((size_t)3 * S * S * sizeof(float));
    int r = 0;
    for (int i = 0; i < d->n && r == 0; i++) {
        if (!chosen[i]) continue;
        caption_data_picture(d->data, d->split, i, chw);
        Tokens t;
        vocab_decode_tokens(&t, d->vocab, d->tokens + (size_t)i * d->max_len, d->lens[i], 1);
        char path[1200];
        snprintf(path, sizeof path, "%s/%05d.png", o->strips, i);
        r = caption_write_strip(path, chw, S, d->alphas + (size_t)i * d->max_len * L, d->G, t.tok,
                                t.n, err);
        tokens_free(&t);
    }
    free(chw);
    return r;
}

static void write_number(FILE *fp, double v) {
    if (v == v) fprintf(fp, "%.9g", v);
    else fputs("null", fp);
}

static int write_per_image(const CaptionEvalOutputs *o, const DecodedSplit *d,
                           const double *bleu, const double *cider, const unsigned char *chosen,
                           Error *err) {
    AtomicFile af;
    if (atomic_open(&af, o->per_image, err)) return -1;
    FILE *fp = af.fp;
    fprintf(fp, "{\"split\": \"%s\", \"images\": %d, \"beam\": %d,\n \"items\": [", split_name(d->split),
            d->n, o->beam);
    SceneInfo info;
    const char *refs[CAPTION_DATA_MAX_REFS];
    for (int i = 0; i < d->n; i++) {
        fprintf(fp, "%s\n  {\"index\": %d, ", i ? "," : "", i);
        caption_data_write_id(fp, d->data, d->split, i);
        char *text = tokens_join(d->pairs[i].cand);
        fputs(", \"caption\": ", fp);
        text_json_string(fp, text);
        free(text);
        fputs(", \"references\": [", fp);
        int k = caption_data_captions(d->data, d->split, i, refs, CAPTION_DATA_MAX_REFS, &info);
        for (int j = 0; j < k; j++) {
            if (j) fputs(", ", fp);
            text_json_string(fp, refs[j]);
        }
        fputs("], \"bleu4\": ", fp);
        write_number(fp, bleu[(size_t)i * 4 + 3]);
        fputs(", \"cider_d\": ", fp);
        write_number(fp, cider[i]);
        if (d->grounding) {
            GroundingResult g;
            grounding_accuracy(&g, &d->grounding[i], 1);
            fprintf(fp, ", \"object_words\": %d, \"grounded\": %d, \"grounding\": ", g.object_words, g.hits);
            write_number(fp, g.object_words ? g.accuracy : (double)NAN);
        }
        if (d->objects)
            fprintf(fp, ", \"objects_named\": %d, \"objects_true\": %d, \"objects_right\": %d",
                    d->objects[i].named, d->objects[i].truth, d->objects[i].right);
        if (chosen && chosen[i]) fprintf(fp, ", \"strip\": \"%05d.png\"}", i);
        else fputs(", \"strip\": null}", fp);
    }
    fputs("\n]}\n", fp);
    return atomic_commit(&af, err);
}

int caption_per_image_write(const CaptionEvalOutputs *o, const DecodedSplit *d, Error *err) {
    if (!o || (!o->per_image && !o->strips)) return 0;
    CHECK(d->n >= 1 && (!o->strips || d->alphas));
    double *bleu = xmalloc((size_t)d->n * 4 * sizeof(double));
    double *cider = xmalloc((size_t)d->n * sizeof(double));
    metric_bleu_per_image(bleu, d->pairs, d->n);
    metric_cider_d(cider, d->pairs, d->n);
    unsigned char *chosen = NULL;
    int r = 0;
    if (o->strips) {
        chosen = xmalloc((size_t)d->n);
        choose_strips(chosen, cider, d->n, o->strips_each);
        r = write_strips(o, d, chosen, err);
    }
    if (!r && o->per_image) r = write_per_image(o, d, bleu, cider, chosen, err);
    free(chosen);
    free(bleu);
    free(cider);
    return r;
}
