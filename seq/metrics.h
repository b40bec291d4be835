// metrics.h: caption metrics as the coco-caption toolkit computes them (BLEU-1..4,
// CIDEr-D, ROUGE-L), and attention grounding accuracy.
//
// Input: per image, a candidate token list and one or more reference token lists,
// already tokenised (seq/tokenizer.h) with <start>/<end>/<pad> removed. A "<unk>" in a
// candidate is an ordinary token that no reference contains, so it earns no credit.
// All scores are in 0..1 except CIDEr-D, in 0..10 (reported as coco-caption does, not x100;
// good COCO models score about 1).
//
// BLEU-n (coco-caption bleu_scorer, option "closest"): clipped n-gram matches and
//   candidate n-gram counts summed over the corpus; per image the reference length
//   closest to the candidate length (ties to the shorter); brevity penalty
//   exp(1 - r/c) once, when c < r; BLEU-n = BP * exp(mean_k log((m_k + tiny) /
//   (g_k + small))) with tiny = 1e-15, small = 1e-9 as bleu_scorer does.
// CIDEr-D (coco-caption cider_scorer): n = 1..4; TF-IDF vectors with term frequency
//   the raw n-gram count and idf = log(N_images) - log(max(1, df)), df = the
//   number of images whose references contain the n-gram (references of the set being
//   scored); per n, sum over n-grams of min(vec_cand, vec_ref) * vec_ref, divided by the
//   two vector norms (0 when a norm is 0, e.g. a one-image corpus where every idf is 0),
//   times exp(-(len_c - len_r)^2 / (2 * 6^2)) where, as in cider_scorer, a caption's
//   "length" is its number of BIGRAMS (words - 1); averaged over n, summed over references
//   and divided by their number, times 10; the corpus score is the mean over images.
// ROUGE-L (coco-caption rouge): per image, LCS with each reference; prec_max and
//   rec_max are the maxima over references of LCS/len_c and LCS/len_r; score =
//   (1 + beta^2) P R / (R + beta^2 P) with beta = 1.2 (0 if P or R is 0); corpus = mean.
//   rouge.py splits captions on " ", so an empty caption is one empty word: an empty
//   candidate scores 1 when some reference is empty too, else 0; a reference that is
//   empty gives any other candidate LCS 0.
#ifndef SEQ_METRICS_H
#define SEQ_METRICS_H

#include "seq/tokenizer.h"

// One image: a candidate and its references (borrowed).
typedef struct {
    const Tokens *cand;  // the generated caption
    const Tokens *refs;  // (n_refs) reference captions, n_refs >= 1
    int n_refs;
} CaptionPair;

typedef struct {
    double bleu[4];   // BLEU-1..4, 0..1
    double cider_d;   // CIDEr-D
    double rouge_l;   // ROUGE-L, 0..1
} CaptionScores;

// bleu (4): corpus BLEU-1..4 over n images (n >= 1).
void metric_bleu(double *bleu, const CaptionPair *items, int n);

// per_image (n, 4): each image's own BLEU-1..4, the per-image list coco-caption's
// bleu_scorer returns beside the corpus score (compute_score's second value): the same
// formula on the image's counts alone, its brevity penalty from its own closest
// reference length. Their mean is not the corpus BLEU.
void metric_bleu_per_image(double *per_image, const CaptionPair *items, int n);

// Corpus CIDEr-D; per_image (n) receives each image's score, or NULL.
double metric_cider_d(double *per_image, const CaptionPair *items, int n);

// Corpus ROUGE-L; per_image (n) or NULL.
double metric_rouge_l(double *per_image, const CaptionPair *items, int n);

// All three at once.
void caption_scores(CaptionScores *s, const CaptionPair *items, int n);

// Length of the longest common subsequence of a (na) and b (nb) (token strings).
int lcs_length(char *const *a, int na, char *const *b, int nb);

// --- grounding -------------------------------------------------------------------------
// Does the attention look at the object a word names? For each generated word that
// names an object, take the position of its attention map's peak; it is a hit when the
// peak lies inside (borders included) a box of an object with the same name in that
// image. Accuracy = hits / object words (0 when there are no object words).
// Coordinates: any one system per image (e.g. pixels with x to the right, y down);
// attention_peak() maps a map's argmax cell to its centre in pixel coordinates.

typedef struct {
    const char *name;        // object name, compared with the word (strcmp)
    float x0, y0, x1, y1;    // box, x0 <= x1, y0 <= y1, borders inside
} GroundingBox;

typedef struct {
    const char *word;        // the generated word
    int is_object;           // 1 if the word names an object (decided by the caller)
    float peak_x, peak_y;    // its attention peak
} GroundingWord;

typedef struct {
    const GroundingWord *words;  // (n_words)
    int n_words;
    const GroundingBox *boxes;   // (n_boxes)
    int n_boxes;
} GroundingImage;

typedef struct {
    int object_words;  // words with is_object
    int hits;          // of those, peaks inside a box of the same name
    double accuracy;   // hits / object_words, 0 if none
} GroundingResult;

void grounding_accuracy(GroundingResult *r, const GroundingImage *images, int n);

// alpha (gh * gw) row-major attention map over a gh x gw grid laid over an image of
// img_w x img_h pixels: the centre of the first maximal cell, x = (j + 0.5) * img_w / gw,
// y = (i + 0.5) * img_h / gh.
void attention_peak(float *px, float *py, const float *alpha, int gh, int gw, float img_w,
                    float img_h);

#endif
