// caption_evaluate.c: a captioner decoded over a split and scored (cli/caption_evaluate.h).
#include "cli/caption_evaluate.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/caption_objects.h"
#include "core/check.h"
#include "core/fileio.h"
#include "core/progress.h"
#include "core/text_escape.h"
#include "datasets/scenes.h"
#include "models/sat_decode.h"
#include "vision/overlay.h"

void caption_refs_free(CaptionRefs *e) {
    if (e->refs)
        for (int i = 0; i < e->n_caps; i++) tokens_free(&e->refs[i]);
    free(e->first);
    free(e->refs);
    memset(e, 0, sizeof *e);
}

int caption_refs_encode(CaptionRefs *e, const CaptionData *d, Split s, Error *err) {
    memset(e, 0, sizeof *e);
    int n = caption_data_count(d, s);
    e->n_images = n;
    e->first = xcalloc((size_t)n + 1, sizeof(int));
    int cap = n * 5 + 16;
    e->refs = xcalloc((size_t)cap, sizeof(Tokens));
    SceneInfo info;
    const char *texts[CAPTION_DATA_MAX_REFS];
    for (int i = 0; i < n; i++) {
        e->first[i] = e->n_caps;
        int k = caption_data_captions(d, s, i, texts, CAPTION_DATA_MAX_REFS, &info);
        for (int j = 0; j < k; j++) {
            if (e->n_caps == cap) {
                cap *= 2;
                e->refs = xrealloc(e->refs, (size_t)cap * sizeof(Tokens));
            }
            if (tokenize(&e->refs[e->n_caps], texts[j], TOKENIZE_MAX_TOKENS, err)) {
                caption_refs_free(e);
                return error_prefix(err, "%s image %d caption %d", split_name(s), i, j);
            }
            e->n_caps++;
        }
    }
    e->first[n] = e->n_caps;
    return 0;
}

// Over ranks, each rank decodes a contiguous run of whole chunks (a chunk is decoded as one
// process decodes it) and every rank gathers every image's tokens and attention; each then
// scores (cheaply) and rank 0 alone writes. tokens (n, ML), lens (n), alphas (n, ML, L) or
// NULL.
// With ft (--fine-tune), the images go through the encoder and its fine-tuned stage.
static int decode_split(const Dist *dist, SatModel *m, CaptionFineTune *ft, const CaptionData *d,
                        Split s, int n, int beam, float length_alpha, int *tokens, int *lens,
                        float *alphas, SceneInfo *infos, int show_progress, Error *err) {
    const SatConfig *c = &m->cfg;
    const int L = sat_L(c), ML = c->max_len, chunk = m->acts_batch;
    const size_t per = sat_input_floats(c);  // an image, or its annotations
    const int N = dist->size, chunks = (n + chunk - 1) / chunk;
    int *begins = xmalloc(2 * (size_t)N * sizeof *begins), *counts = begins + N;
    for (int r = 0; r < N; r++) {
        int cb, cc;
        dist_share_of(r, N, chunks, &cb, &cc);
        int end = (cb + cc) * chunk < n ? (cb + cc) * chunk : n;
        begins[r] = cb * chunk < n ? cb * chunk : n;
        counts[r] = end - begins[r];
    }
    const int mine0 = begins[dist->rank], mine1 = mine0 + counts[dist->rank];
    float *images = xmalloc((size_t)chunk * per * sizeof(float));
    Progress p;
    if (show_progress) progress_start(&p, "decode", mine1 - mine0, 0);
    for (int i = 0; infos && i < n; i++)  // scenes: every image's objects (grounding, object F1)
        if (i < mine0 || i >= mine1)
            caption_data_image(d, s, i, ft ? caption_finetune_pixels(ft, 0) : images, &infos[i]);
    int bad = 0;  // a cache's annotations that are not finite: stop (a rank alone: the
                  // caller ends the job, cli/train_dist.h train_dist_fail)
    for (int i0 = mine0; i0 < mine1 && !bad; i0 += chunk) {
        int k = mine1 - i0 < chunk ? mine1 - i0 : chunk;
        for (int j = 0; j < k && !bad; j++)
            bad = caption_data_read(d, s, i0 + j,
                                    ft ? caption_finetune_pixels(ft, j) : images + (size_t)j * per,
                                    infos ? &infos[i0 + j] : NULL, err);
        if (bad) break;
        if (ft) caption_finetune_annotate(ft, images, k);
        sat_decode(m, tokens + (size_t)i0 * ML, lens + i0,
                   alphas ? alphas + (size_t)i0 * ML * L : NULL, images, k, beam, length_alpha);
        if (show_progress) progress_update(&p, i0 + k - mine0, "");
    }
    if (show_progress && !bad) progress_end(&p, mine1 - mine0, "");
    else if (show_progress && p.tty) fputc('\n', stderr);  // the bar's line ends before the error's
    free(images);
    if (bad) {
        free(begins);
        return -1;
    }
    int rc = dist_allgather_ranges(dist, tokens, (size_t)ML * sizeof *tokens, begins, counts, err);
    if (rc == 0) rc = dist_allgather_ranges(dist, lens, sizeof *lens, begins, counts, err);
    if (rc == 0 && alphas)
        rc = dist_allgather_ranges(dist, alphas, (size_t)ML * L * sizeof *alphas, begins, counts, err);
    free(begins);
    return rc;
}

// Each decoded word's attention peak and each scene's object boxes, for the grounding
// accuracy (seq/metrics.h) and the per-image outputs.
typedef struct {
    GroundingImage *images;  // (n)
    GroundingWord *words;    // (n, max_len)
    GroundingBox *boxes;     // (n, SCENES_MAX_OBJECTS)
} SplitGrounding;

static void split_grounding(SplitGrounding *g, const Vocab *vocab, const SatConfig *c,
                            const int *tokens, const int *lens, const float *alphas,
                            const SceneInfo *infos, int n) {
    const int S = c->image_size, L = sat_L(c), ML = c->max_len, G = sat_grid(c);
    g->images = xcalloc((size_t)n, sizeof(GroundingImage));
    g->words = xcalloc((size_t)n * ML, sizeof(GroundingWord));
    g->boxes = xcalloc((size_t)n * SCENES_MAX_OBJECTS, sizeof(GroundingBox));
    for (int i = 0; i < n; i++) {
        GroundingImage *gi = &g->images[i];
        gi->words = g->words + (size_t)i * ML;
        gi->boxes = g->boxes + (size_t)i * SCENES_MAX_OBJECTS;
        gi->n_words = lens[i];
        for (int k = 0; k < lens[i]; k++) {
            GroundingWord *w = &g->words[(size_t)i * ML + k];
            int id = tokens[(size_t)i * ML + k];
            w->word = vocab->words[id];
            w->is_object = id >= VOCAB_NSPECIAL && scenes_word_is_object(w->word);
            attention_peak(&w->peak_x, &w->peak_y, alphas + ((size_t)i * ML + k) * L, G, G,
                           (float)S, (float)S);
        }
        gi->n_boxes = infos[i].n_objects;
        for (int o = 0; o < infos[i].n_objects; o++) {
            const SceneObject *ob = &infos[i].objects[o];
            GroundingBox *b = &g->boxes[(size_t)i * SCENES_MAX_OBJECTS + o];
            b->name = ob->word;
            // Pixel (0, 0) covers [0, 1): a box of pixels x0..x1-1 spans [x0, x1].
            b->x0 = (float)ob->x0;
            b->y0 = (float)ob->y0;
            b->x1 = (float)ob->x1;
            b->y1 = (float)ob->y1;
        }
    }
}

static void split_grounding_free(SplitGrounding *g) {
    free(g->images), free(g->words), free(g->boxes);
}

// The COCO results file: [{"image_id": ..., "caption": "..."}, ...], written atomically.
static int write_results_json(const char *path, const CaptionData *d, Split s,
                              const Tokens *cands, int n, Error *err) {
    AtomicFile af;
    if (atomic_open(&af, path, err)) return -1;
    fputc('[', af.fp);
    for (int i = 0; i < n; i++) {
        char *text = tokens_join(&cands[i]);
        fprintf(af.fp, "%s\n{", i ? "," : "");
        caption_data_write_id(af.fp, d, s, i);
        fprintf(af.fp, ", \"caption\": ");
        text_json_string(af.fp, text);
        fputc('}', af.fp);
        free(text);
    }
    fprintf(af.fp, "\n]\n");
    return atomic_commit(&af, err);
}

// Decodes over the ranks (decode_split), then scores and writes on every rank alike.
int caption_evaluate_with_outputs(CaptionEvalResult *res, const Dist *dist, SatModel *m,
                                  CaptionFineTune *ft, const Vocab *vocab, const CaptionData *d,
                                  Split s, const CaptionRefs *refs, int n, int beam,
                                  float length_alpha, const char *results_path,
                                  const CaptionEvalOutputs *outputs, int show_progress,
                                  Error *err) {
    const SatConfig *c = &m->cfg;
    const int S = c->image_size, L = sat_L(c), ML = c->max_len;
    const int G = sat_grid(c);
    int *tokens = xmalloc((size_t)n * ML * sizeof(int));
    int *lens = xmalloc((size_t)n * sizeof(int));
    int keep_alphas = caption_data_is_scenes(d) || (outputs && outputs->strips);
    float *alphas = keep_alphas ? xmalloc((size_t)n * ML * L * sizeof(float)) : NULL;
    SceneInfo *infos = caption_data_is_scenes(d) ? xmalloc((size_t)n * sizeof(SceneInfo)) : NULL;
    if (decode_split(dist, m, ft, d, s, n, beam, length_alpha, tokens, lens, alphas, infos,
                     show_progress && dist_is_root(dist), err)) {
        free(tokens), free(lens), free(alphas), free(infos);
        return -1;
    }
    Tokens *cands = xcalloc((size_t)n, sizeof(Tokens));
    CaptionPair *pairs = xcalloc((size_t)n, sizeof(CaptionPair));
    for (int i = 0; i < n; i++) {
        vocab_decode_tokens(&cands[i], vocab, tokens + (size_t)i * ML, lens[i], 0);
        pairs[i].cand = &cands[i];
        pairs[i].refs = &refs->refs[refs->first[i]];
        pairs[i].n_refs = refs->first[i + 1] - refs->first[i];
    }
    caption_scores(&res->scores, pairs, n);
    res->n = n;
    res->has_grounding = caption_data_is_scenes(d);
    res->has_objects = caption_data_is_scenes(d);
    SplitGrounding g = {0};
    ObjectCounts *objects = NULL;  // (n) each caption's objects named, true and right
    if (caption_data_is_scenes(d)) {
        split_grounding(&g, vocab, c, tokens, lens, alphas, infos, n);
        grounding_accuracy(&res->grounding, g.images, n);
        objects = xmalloc((size_t)n * sizeof *objects);
        caption_objects_of_scenes(objects, cands, infos, n);
        object_f1(&res->objects, objects, n);
    }
    DecodedSplit decoded = {d, s, n, pairs, g.images, objects, vocab, tokens, lens, alphas, ML, G, S};
    const bool root = dist_is_root(dist);  // the others wrote nothing
    int r = root ? caption_per_image_write(outputs, &decoded, err) : 0;
    split_grounding_free(&g);
    free(objects);
    if (!r && results_path && root) r = write_results_json(results_path, d, s, cands, n, err);
    for (int i = 0; i < n; i++) tokens_free(&cands[i]);
    free(cands);
    free(pairs);
    free(tokens);
    free(lens);
    free(alphas);
    free(infos);
    return r;
}

int caption_evaluate(CaptionEvalResult *res, const Dist *dist, SatModel *m, CaptionFineTune *ft,
                     const Vocab *vocab, const CaptionData *d, Split s, const CaptionRefs *refs,
                     int n, int beam, float length_alpha, const char *results_path,
                     int show_progress, Error *err) {
    return caption_evaluate_with_outputs(res, dist, m, ft, vocab, d, s, refs, n, beam,
                                         length_alpha, results_path, NULL, show_progress, err);
}
