// sacrebleu.h: translation scores as sacreBLEU 2.x computes them: corpus BLEU with its
// default 13a tokenizer, chrF, a bootstrap confidence interval (its --confidence / paired
// bootstrap), and BLEU by source-length bucket (Bahdanau et al. 2015, figure 2).
//
// Scores are on sacreBLEU's scale, 0..100 (coco-caption's BLEU in seq/metrics.h is 0..1).
// Input is detokenized UTF-8 text, one hypothesis per sentence and n_refs references per
// sentence laid out refs[i * n_refs + r]; a NULL reference is absent (sacreBLEU's None, for
// a varying number of references); every sentence keeps at least one. An empty hypothesis
// is kept (it adds reference length and no n-grams).
//
// 13a tokenizer (sacrebleu/tokenizers/tokenizer_13a.py and tokenizer_re.py), in order:
//   the line is first right-stripped of whitespace (BLEU._preprocess_segment);
//   "<skipped>" removed; "-\n" removed; "\n" -> " "; then, one pass each in this order,
//   "&quot;" -> '"', "&amp;" -> '&', "&lt;" -> '<', "&gt;" -> '>' (so "&amp;lt;" ends as
//   "<" but "&amp;quot;" as "&quot;"); the line padded with a space each side;
//   every ASCII punctuation character except ' , - . gets a space each side; '.' and ','
//   split off unless between digits ("3.5" and "1,000" stay, "end." splits); '-' after a
//   digit split off ("1990-91" -> "1990 - 91", but "well-known" stays); finally the line is
//   split at runs of whitespace as Python's str.split() sees it (ASCII whitespace, 0x1c-0x1f,
//   U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000) and
//   joined with single spaces. Matching is on bytes; for valid UTF-8 that is the same as
//   Python's matching on code points, since every pattern character is ASCII.
// BLEU (sacrebleu/metrics/bleu.py, defaults: max order 4, smooth "exp", effective order
//   off, mixed case): per sentence the hypothesis length, the closest reference length
//   (ties to the shorter), and per order n the hypothesis n-grams and their matches clipped
//   by the largest count in any one reference; summed over the corpus;
//   BP = exp(1 - ref/sys) when sys < ref (0 when sys = 0); no match at any order -> 0;
//   precision p_n = 100 m_n / t_n, and for m_n = 0 with "exp" smoothing 100 / (2^k t_n)
//   (k counting the zero orders so far); an order with t_n = 0 ends the loop, leaving
//   that and the later p_n at 0, whose log is floored at -9999999999 (so BLEU = 0);
//   BLEU = BP exp(mean of log p_n over max_order orders).
// chrF (sacrebleu/metrics/chrf.py, defaults: chrF2, character order 6, word order 0,
//   whitespace removed, no epsilon smoothing): the text without whitespace, character
//   n-grams over code points (an invalid UTF-8 byte counts as a character of its own), per
//   order the hypothesis count (0 when the reference has no n-gram of that order), the
//   reference count and the clipped matches; with several references, the one whose own
//   chrF is highest (the first on ties); summed over the corpus; precision and recall
//   averaged over the orders where both counts are non-zero; 100 (1+b^2) P R / (b^2 P + R),
//   0 when P + R = 0. eps_smoothing instead averages each order's F (P or R of an empty
//   order = 1e-16), as chrF++.py does. Word n-grams (chrF++) are not implemented.
// Bootstrap (sacrebleu/significance.py): n_samples resamples of the sentences with
//   replacement, each scored on its summed statistics; the interval is sacreBLEU's
//   estimate_ci: sorted scores, lower = the (n_samples/40)-th, upper = the
//   (n_samples - 1 - n_samples/40)-th, ci = (upper - lower) / 2, mean = their mean. The
//   draws come from core/rng (seeded), not numpy, so figures agree with sacreBLEU's to
//   sampling noise only. Paired (_paired_bs_test): both systems on the same resamples;
//   p-value as _compute_p_value: (1 + #{|s - b| - mean|s - b| > |S - B|}) / (n_samples + 1),
//   S and B the scores on all sentences, s and b a resample's.
#ifndef SEQ_SACREBLEU_H
#define SEQ_SACREBLEU_H

#include <stdint.h>

#define SACRE_MAX_ORDER 8

// --- 13a tokenizer ----------------------------------------------------------------------
// The tokenized line (malloc'd, tokens separated by single spaces, "" for none).
char *tokenize_13a(const char *line);

// --- BLEU --------------------------------------------------------------------------------
typedef enum { BLEU_SMOOTH_EXP, BLEU_SMOOTH_NONE, BLEU_SMOOTH_FLOOR, BLEU_SMOOTH_ADD_K } BleuSmooth;

typedef struct {
    int max_order;        // 1..SACRE_MAX_ORDER, default 4
    BleuSmooth smooth;    // default exp
    double smooth_value;  // floor: default 0.1; add-k: default 1 (< 0 picks the default)
    int effective_order;  // default 0
    int tokenize;         // 1: 13a (default); 0: split the text at whitespace as it is
} BleuOptions;

void bleu_options_default(BleuOptions *o);

// One sentence's sufficient statistics (or a corpus's sum).
typedef struct {
    int64_t hyp_len, ref_len;
    int64_t correct[SACRE_MAX_ORDER], total[SACRE_MAX_ORDER];
} BleuStats;

typedef struct {
    double score;                        // 0..100
    double precisions[SACRE_MAX_ORDER];  // 0..100
    double bp;
    int64_t sys_len, ref_len;
} BleuScore;

// st: one sentence's statistics; refs (n_refs), NULL entries skipped, at least one not.
void bleu_sentence_stats(BleuStats *st, const char *hyp, const char *const *refs, int n_refs,
                         const BleuOptions *o);
// The score of summed statistics (bleu.py compute_bleu); s may be NULL. Returns s->score.
double bleu_from_stats(BleuScore *s, const BleuStats *sum, const BleuOptions *o);
// Corpus BLEU of n sentences; per_sentence (n) receives each one's statistics, or NULL.
double bleu_corpus(BleuScore *s, BleuStats *per_sentence, const char *const *hyps,
                   const char *const *refs, int n, int n_refs, const BleuOptions *o);

// --- chrF --------------------------------------------------------------------------------
typedef struct {
    int char_order;     // 1..SACRE_MAX_ORDER, default 6
    double beta;        // default 2
    int eps_smoothing;  // default 0
    int whitespace;     // 1 keeps whitespace in the character n-grams; default 0
} ChrfOptions;

void chrf_options_default(ChrfOptions *o);

typedef struct {
    int64_t hyp[SACRE_MAX_ORDER], ref[SACRE_MAX_ORDER], match[SACRE_MAX_ORDER];
} ChrfStats;

void chrf_sentence_stats(ChrfStats *st, const char *hyp, const char *const *refs, int n_refs,
                         const ChrfOptions *o);
double chrf_from_stats(const ChrfStats *sum, const ChrfOptions *o);  // 0..100
double chrf_corpus(ChrfStats *per_sentence, const char *const *hyps, const char *const *refs,
                   int n, int n_refs, const ChrfOptions *o);

// --- bootstrap ---------------------------------------------------------------------------
// sacreBLEU's defaults: --confidence-n 1000, SACREBLEU_SEED 12345.
#define SACRE_BOOTSTRAP_SAMPLES 1000
#define SACRE_BOOTSTRAP_SEED 12345
typedef struct {
    double score;   // on all sentences
    double mean;    // over the resamples
    double ci;      // half-width of the 95 % interval: score reads "score (mean +- ci)"
    double lower, upper;
    double p_value; // paired against a baseline; -1 when there is none
    // Paired only (0 otherwise): the difference system - baseline on all sentences, and the
    // mean and 95 % interval of the differences over the same resamples (estimate_ci's order
    // statistics on them). sacreBLEU prints no such interval; it is the paired claim's size.
    double diff, diff_mean, diff_ci, diff_lower, diff_upper;
} BootstrapResult;

// sys (n) statistics; base (n) the baseline's on the same sentences, or NULL. Both
// results use the same resamples; base_out may be NULL. n >= 1, n_samples >= 1. Each
// resample draws its n indices in turn from one stream seeded with seed, so bleu_bootstrap
// and chrf_bootstrap with the same seed and n resample the same sentences (sacreBLEU, too,
// draws one set of indices for all its metrics).
void bleu_bootstrap(BootstrapResult *out, BootstrapResult *base_out, const BleuStats *sys,
                    const BleuStats *base, int n, const BleuOptions *o, int n_samples,
                    uint64_t seed);
void chrf_bootstrap(BootstrapResult *out, BootstrapResult *base_out, const ChrfStats *sys,
                    const ChrfStats *base, int n, const ChrfOptions *o, int n_samples,
                    uint64_t seed);

// --- BLEU by source length ---------------------------------------------------------------
// Bucket k holds the sentences whose source has (edges[k-1], edges[k]] words (edges[-1] =
// -1, so the first bucket starts at 0 words); the last bucket, k = n_edges, everything
// above edges[n_edges - 1] (hi = -1). Edges ascending. Default for Bahdanau et al.'s
// figure: {10, 20, 30, 40, 50}, giving 0-10, 11-20, 21-30, 31-40, 41-50, 51+.
typedef struct {
    int lo, hi;      // source words, inclusive; hi = -1: no upper bound
    int n;           // sentences in the bucket
    double bleu;     // corpus BLEU of the bucket's sentences, 0 when n = 0
} LengthBucket;

// out (n_edges + 1); src_words (n); stats (n) from bleu_sentence_stats / bleu_corpus.
void bleu_by_length(LengthBucket *out, const int *edges, int n_edges, const int *src_words,
                    const BleuStats *stats, int n, const BleuOptions *o);

// Words of text split at whitespace as Python's str.split() does (the source length).
int sacre_word_count(const char *text);

#endif
