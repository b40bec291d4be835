// metrics.c: see metrics.h. The formulas follow coco-caption's bleu_scorer, cider_scorer
// (CIDEr-D) and rouge modules; the arithmetic is done in double.
#include "seq/metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

#define NG 4  // n-gram orders 1..4 for BLEU and CIDEr-D

// --- sentences as integer ids -----------------------------------------------------------

typedef struct {
    int *ids;  // (len)
    int len;
} Sent;

typedef struct {
    Sent *cand;  // (n)
    Sent **refs; // (n)(n_refs)
    int *all;    // one block holding every id
} Corpus;

typedef struct {
    const char *s;
    int *slot;
} InternEntry;

static int cmp_intern(const void *a, const void *b) {
    return strcmp(((const InternEntry *)a)->s, ((const InternEntry *)b)->s);
}

// Maps every token of the corpus to an integer id (equal strings, equal ids) by sorting.
static void corpus_build(Corpus *c, const CaptionPair *items, int n) {
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        CHECK(items[i].cand && items[i].n_refs >= 1 && items[i].refs, "image %d: no references", i);
        total += (size_t)items[i].cand->n;
        for (int r = 0; r < items[i].n_refs; r++) total += (size_t)items[i].refs[r].n;
    }
    c->all = xmalloc((total ? total : 1) * sizeof *c->all);
    c->cand = xmalloc((size_t)n * sizeof *c->cand);
    c->refs = xmalloc((size_t)n * sizeof *c->refs);
    InternEntry *e = xmalloc((total ? total : 1) * sizeof *e);
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        const Tokens *t = items[i].cand;
        c->cand[i] = (Sent){c->all + at, t->n};
        for (int k = 0; k < t->n; k++, at++) e[at] = (InternEntry){t->tok[k], c->all + at};
        c->refs[i] = xmalloc((size_t)items[i].n_refs * sizeof **c->refs);
        for (int r = 0; r < items[i].n_refs; r++) {
            t = &items[i].refs[r];
            c->refs[i][r] = (Sent){c->all + at, t->n};
            for (int k = 0; k < t->n; k++, at++) e[at] = (InternEntry){t->tok[k], c->all + at};
        }
    }
    qsort(e, total, sizeof *e, cmp_intern);
    int id = -1;
    for (size_t k = 0; k < total; k++) {
        if (k == 0 || strcmp(e[k].s, e[k - 1].s) != 0) id++;
        *e[k].slot = id;
    }
    free(e);
}

static void corpus_free(Corpus *c, int n) {
    for (int i = 0; i < n; i++) free(c->refs[i]);
    free(c->refs);
    free(c->cand);
    free(c->all);
}

// --- n-gram counts ------------------------------------------------------------------------

typedef struct {
    int w[NG];  // the words, unused slots -1
    int n;      // order 1..NG
    int count;  // occurrences (or, in the document-frequency table, images)
} Ngram;

static int cmp_ngram_key(const void *a, const void *b) {
    const Ngram *x = a, *y = b;
    if (x->n != y->n) return x->n < y->n ? -1 : 1;
    for (int k = 0; k < x->n; k++)
        if (x->w[k] != y->w[k]) return x->w[k] < y->w[k] ? -1 : 1;
    return 0;
}

// Collapses runs of equal keys in a sorted array, summing counts; returns the new length.
static int ngram_unique(Ngram *g, int m) {
    int u = 0;
    for (int i = 0; i < m; i++) {
        if (u > 0 && cmp_ngram_key(&g[u - 1], &g[i]) == 0) g[u - 1].count += g[i].count;
        else g[u++] = g[i];
    }
    return u;
}

typedef struct {
    Ngram *g;  // (m) sorted by key, unique
    int m;
} NgramSet;

static void ngrams_of(NgramSet *out, const Sent *s) {
    int cap = 0;
    for (int n = 1; n <= NG; n++) cap += s->len - n + 1 > 0 ? s->len - n + 1 : 0;
    out->g = xmalloc((size_t)(cap ? cap : 1) * sizeof *out->g);
    int m = 0;
    for (int n = 1; n <= NG; n++)
        for (int i = 0; i + n <= s->len; i++) {
            Ngram *g = &out->g[m++];
            for (int k = 0; k < NG; k++) g->w[k] = k < n ? s->ids[i + k] : -1;
            g->n = n;
            g->count = 1;
        }
    qsort(out->g, (size_t)m, sizeof *out->g, cmp_ngram_key);
    out->m = ngram_unique(out->g, m);
}

static int ngram_count_in(const NgramSet *set, const Ngram *key) {
    const Ngram *hit = bsearch(key, set->g, (size_t)set->m, sizeof *set->g, cmp_ngram_key);
    return hit ? hit->count : 0;
}

// Per image: the candidate's and each reference's n-gram sets.
typedef struct {
    NgramSet cand;
    NgramSet *refs;  // (n_refs)
    int n_refs;
} ImageNgrams;

static ImageNgrams *image_ngrams(const Corpus *c, const CaptionPair *items, int n) {
    ImageNgrams *im = xmalloc((size_t)n * sizeof *im);
    for (int i = 0; i < n; i++) {
        ngrams_of(&im[i].cand, &c->cand[i]);
        im[i].n_refs = items[i].n_refs;
        im[i].refs = xmalloc((size_t)im[i].n_refs * sizeof *im[i].refs);
        for (int r = 0; r < im[i].n_refs; r++) ngrams_of(&im[i].refs[r], &c->refs[i][r]);
    }
    return im;
}

static void image_ngrams_free(ImageNgrams *im, int n) {
    for (int i = 0; i < n; i++) {
        free(im[i].cand.g);
        for (int r = 0; r < im[i].n_refs; r++) free(im[i].refs[r].g);
        free(im[i].refs);
    }
    free(im);
}

// --- BLEU ---------------------------------------------------------------------------------

// One image's BLEU-1..4 from its own counts, as bleu_scorer's per-image list: the running
// product of (correct_k + tiny) / (guess_k + small) to the power 1/k, times the image's
// brevity penalty exp(1 - r/c) when c < r (r its closest reference length).
static void bleu_of_counts(double *out, const int *correct, const int *guess, int testlen,
                           int reflen) {
    const double tiny = 1e-15, small = 1e-9;
    double prod = 1.0, ratio = (testlen + tiny) / (reflen + small);
    for (int k = 0; k < NG; k++) {
        prod *= (correct[k] + tiny) / (guess[k] + small);
        out[k] = pow(prod, 1.0 / (k + 1));
        if (ratio < 1) out[k] *= exp(1.0 - 1.0 / ratio);
    }
}

// Corpus BLEU-1..4 into bleu (4) when not NULL; each image's own BLEU-1..4 into
// per_image (n, 4) when not NULL. The corpus sums are of integer counts, so they do not
// depend on whether per-image scores are asked for.
static void bleu_from(double *bleu, double *per_image, const Corpus *c, const ImageNgrams *im,
                      int n) {
    const double tiny = 1e-15, small = 1e-9;  // bleu_scorer's constants
    double correct[NG] = {0}, guess[NG] = {0};
    double testlen = 0, reflen = 0;
    for (int i = 0; i < n; i++) {
        int len = c->cand[i].len;
        // closest reference length, ties to the shorter
        int best = -1;
        for (int r = 0; r < im[i].n_refs; r++) {
            int l = c->refs[i][r].len;
            if (best < 0 || abs(l - len) < abs(best - len) ||
                (abs(l - len) == abs(best - len) && l < best))
                best = l;
        }
        int mine_correct[NG] = {0}, mine_guess[NG];
        for (int k = 0; k < NG; k++) mine_guess[k] = len - k > 0 ? len - k : 0;
        for (int j = 0; j < im[i].cand.m; j++) {
            const Ngram *g = &im[i].cand.g[j];
            int maxref = 0;
            for (int r = 0; r < im[i].n_refs; r++) {
                int cr = ngram_count_in(&im[i].refs[r], g);
                if (cr > maxref) maxref = cr;
            }
            mine_correct[g->n - 1] += g->count < maxref ? g->count : maxref;
        }
        testlen += len;
        reflen += best;
        for (int k = 0; k < NG; k++) {
            correct[k] += mine_correct[k];
            guess[k] += mine_guess[k];
        }
        if (per_image) bleu_of_counts(per_image + (size_t)i * NG, mine_correct, mine_guess, len, best);
    }
    if (!bleu) return;
    double prod = 1.0;
    double ratio = (testlen + tiny) / (reflen + small);
    for (int k = 0; k < NG; k++) {
        prod *= (correct[k] + tiny) / (guess[k] + small);
        bleu[k] = pow(prod, 1.0 / (k + 1));
        if (ratio < 1) bleu[k] *= exp(1.0 - 1.0 / ratio);
    }
}

void metric_bleu(double *bleu, const CaptionPair *items, int n) {
    CHECK(n >= 1);
    Corpus c;
    corpus_build(&c, items, n);
    ImageNgrams *im = image_ngrams(&c, items, n);
    bleu_from(bleu, NULL, &c, im, n);
    image_ngrams_free(im, n);
    corpus_free(&c, n);
}

void metric_bleu_per_image(double *per_image, const CaptionPair *items, int n) {
    CHECK(n >= 1);
    Corpus c;
    corpus_build(&c, items, n);
    ImageNgrams *im = image_ngrams(&c, items, n);
    bleu_from(NULL, per_image, &c, im, n);
    image_ngrams_free(im, n);
    corpus_free(&c, n);
}

// --- CIDEr-D ------------------------------------------------------------------------------

// TF-IDF weights of one sentence: w (m) aligned with set->g, norms per order, length.
typedef struct {
    double *w;
    double norm[NG];
    int length;  // bigram count, as cider_scorer's counts2vec
} TfIdf;

static void tfidf_of(TfIdf *t, const NgramSet *set, const NgramSet *df, double log_n) {
    t->w = xmalloc((size_t)(set->m ? set->m : 1) * sizeof *t->w);
    double sq[NG] = {0};
    t->length = 0;
    for (int j = 0; j < set->m; j++) {
        const Ngram *g = &set->g[j];
        int d = ngram_count_in(df, g);
        t->w[j] = g->count * (log_n - log(d > 1 ? (double)d : 1.0));
        sq[g->n - 1] += t->w[j] * t->w[j];
        if (g->n == 2) t->length += g->count;
    }
    for (int k = 0; k < NG; k++) t->norm[k] = sqrt(sq[k]);
}

// Sum over orders of the clipped cosine similarity times the length penalty, divided by NG.
static double cider_pair(const NgramSet *cs, const TfIdf *ct, const NgramSet *rs,
                         const TfIdf *rt) {
    const double sigma = 6.0;
    double val[NG] = {0};
    for (int j = 0; j < cs->m; j++) {
        const Ngram *g = &cs->g[j];
        const Ngram *hit = bsearch(g, rs->g, (size_t)rs->m, sizeof *rs->g, cmp_ngram_key);
        if (!hit) continue;
        double vr = rt->w[hit - rs->g], vc = ct->w[j];
        val[g->n - 1] += (vc < vr ? vc : vr) * vr;
    }
    double delta = (double)(ct->length - rt->length);
    double penalty = exp(-(delta * delta) / (2 * sigma * sigma));
    double sum = 0;
    for (int k = 0; k < NG; k++) {
        double denom = ct->norm[k] * rt->norm[k];
        sum += (denom != 0 ? val[k] / denom : 0.0) * penalty;
    }
    return sum / NG;
}

double metric_cider_d(double *per_image, const CaptionPair *items, int n) {
    CHECK(n >= 1);
    Corpus c;
    corpus_build(&c, items, n);
    ImageNgrams *im = image_ngrams(&c, items, n);

    // Document frequency: in how many images' reference sets each n-gram occurs.
    size_t total = 0;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < im[i].n_refs; r++) total += (size_t)im[i].refs[r].m;
    NgramSet df = {xmalloc((total ? total : 1) * sizeof(Ngram)), 0};
    for (int i = 0; i < n; i++) {
        int start = df.m;
        for (int r = 0; r < im[i].n_refs; r++) {
            memcpy(df.g + df.m, im[i].refs[r].g, (size_t)im[i].refs[r].m * sizeof(Ngram));
            df.m += im[i].refs[r].m;
        }
        Ngram *mine = df.g + start;
        int m = df.m - start;
        qsort(mine, (size_t)m, sizeof *mine, cmp_ngram_key);
        m = ngram_unique(mine, m);  // one entry per distinct n-gram of this image
        for (int k = 0; k < m; k++) mine[k].count = 1;
        df.m = start + m;
    }
    qsort(df.g, (size_t)df.m, sizeof *df.g, cmp_ngram_key);
    df.m = ngram_unique(df.g, df.m);

    double log_n = log((double)n), total_score = 0;
    for (int i = 0; i < n; i++) {
        TfIdf ct;
        tfidf_of(&ct, &im[i].cand, &df, log_n);
        double s = 0;
        for (int r = 0; r < im[i].n_refs; r++) {
            TfIdf rt;
            tfidf_of(&rt, &im[i].refs[r], &df, log_n);
            s += cider_pair(&im[i].cand, &ct, &im[i].refs[r], &rt);
            free(rt.w);
        }
        free(ct.w);
        s = s / im[i].n_refs * 10.0;
        if (per_image) per_image[i] = s;
        total_score += s;
    }
    free(df.g);
    image_ngrams_free(im, n);
    corpus_free(&c, n);
    return total_score / n;
}

// --- ROUGE-L ------------------------------------------------------------------------------

int lcs_length(char *const *a, int na, char *const *b, int nb) {
    int *prev = xcalloc((size_t)nb + 1, sizeof *prev);
    int *cur = xcalloc((size_t)nb + 1, sizeof *cur);
    for (int i = 1; i <= na; i++) {
        cur[0] = 0;
        for (int j = 1; j <= nb; j++) {
            if (strcmp(a[i - 1], b[j - 1]) == 0) cur[j] = prev[j - 1] + 1;
            else cur[j] = prev[j] > cur[j - 1] ? prev[j] : cur[j - 1];
        }
        int *t = prev;
        prev = cur;
        cur = t;
    }
    int r = prev[nb];
    free(prev);
    free(cur);
    return r;
}

double metric_rouge_l(double *per_image, const CaptionPair *items, int n) {
    CHECK(n >= 1);
    const double beta = 1.2;
    double total = 0;
    for (int i = 0; i < n; i++) {
        const Tokens *cand = items[i].cand;
        CHECK(cand && items[i].n_refs >= 1 && items[i].refs, "image %d: no references", i);
        double prec_max = 0, rec_max = 0;
        for (int r = 0; r < items[i].n_refs; r++) {
            const Tokens *ref = &items[i].refs[r];
            // rouge.py splits on " ": an empty caption is one empty word, which matches
            // only another empty caption's.
            int l = cand->n == 0 || ref->n == 0 ? (cand->n == ref->n)
                                                : lcs_length(cand->tok, cand->n, ref->tok, ref->n);
            double p = (double)l / (cand->n ? cand->n : 1);
            double q = (double)l / (ref->n ? ref->n : 1);
            if (p > prec_max) prec_max = p;
            if (q > rec_max) rec_max = q;
        }
        double s = 0;
        if (prec_max != 0 && rec_max != 0)
            s = (1 + beta * beta) * prec_max * rec_max / (rec_max + beta * beta * prec_max);
        if (per_image) per_image[i] = s;
        total += s;
    }
    return total / n;
}

void caption_scores(CaptionScores *s, const CaptionPair *items, int n) {
    metric_bleu(s->bleu, items, n);
    s->cider_d = metric_cider_d(NULL, items, n);
    s->rouge_l = metric_rouge_l(NULL, items, n);
}

// --- grounding ----------------------------------------------------------------------------

void grounding_accuracy(GroundingResult *r, const GroundingImage *images, int n) {
    CHECK(r && n >= 0 && (n == 0 || images));
    r->object_words = 0;
    r->hits = 0;
    for (int i = 0; i < n; i++) {
        const GroundingImage *im = &images[i];
        for (int w = 0; w < im->n_words; w++) {
            const GroundingWord *gw = &im->words[w];
            if (!gw->is_object) continue;
            r->object_words++;
            for (int b = 0; b < im->n_boxes; b++) {
                const GroundingBox *box = &im->boxes[b];
                if (strcmp(box->name, gw->word) == 0 && gw->peak_x >= box->x0 &&
                    gw->peak_x <= box->x1 && gw->peak_y >= box->y0 && gw->peak_y <= box->y1) {
                    r->hits++;
                    break;
                }
            }
        }
    }
    r->accuracy = r->object_words ? (double)r->hits / r->object_words : 0.0;
}

void attention_peak(float *px, float *py, const float *alpha, int gh, int gw, float img_w,
                    float img_h) {
    CHECK(gh >= 1 && gw >= 1);
    int best = 0;
    for (int k = 1; k < gh * gw; k++)
        if (alpha[k] > alpha[best]) best = k;
    int i = best / gw, j = best % gw;
    *px = (j + 0.5f) * img_w / gw;
    *py = (i + 0.5f) * img_h / gh;
}
