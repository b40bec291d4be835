// `text translate eval` (cli/text_translate.h): greedy (--beam 1) or beam search decoding of
// one split of a model's data; exact match, overall and by source length (buckets of
// TRANSLATE_BUCKET tokens), and alignment accuracy for dates, corpus BLEU and chrF for pairs.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/text_translate.h"
#include "cli/text_translate_state.h"
#include "cli/threads.h"
#include "cli/train_run.h"
#include "core/check.h"
#include "core/gemm.h"
#include "core/text_escape.h"
#include "cli/text_translate_decode.h"
#include "datasets/pairs.h"
#include "seq/sacrebleu.h"

typedef struct {
    const char *model, *root, *misses;
    int split, batch, limit, threads, beam, dates_examples;
    float length_alpha;
    bool json;
} EvalFlags;

// Exact match by source length: bucket k holds sources of k TRANSLATE_BUCKET + 1 ..
// (k + 1) TRANSLATE_BUCKET tokens.
#define TRANSLATE_BUCKET 10
#define TRANSLATE_BUCKETS (4096 / TRANSLATE_BUCKET + 1)

typedef struct {
    int n;                       // pairs decoded
    long exact;                  // hypotheses equal to their target
    int align_hits, align_n;     // dates with attention: target digits and hits
    double bleu, chrf;           // pairs: corpus scores (0..100), else NAN
    int bucket_n[TRANSLATE_BUCKETS], bucket_exact[TRANSLATE_BUCKETS];
} EvalResult;

// Decodes rows i0 .. i0 + nb - 1 of d: greedy (beam 1) or beam search.
static void decode_(TranslateModel *tm, const TranslateData *d, const EvalFlags *f, int i0,
                    int nb, int *out, int *len, float *alpha) {
    const int *src = d->src + (size_t)i0 * d->S, *src_len = d->src_len + i0;
    translate_model_decode(tm, src, src_len, nb, f->beam, f->length_alpha, out, len, alpha);
}

// One line of --misses for each target digit of e whose attention peak (peak, DATES_TARGET_LEN)
// lies outside its span: where it fell, relative to the span (negative: before it), so the
// misses can be told apart by field, format and offset.
static void write_misses(FILE *out, int i, const DateExample *e, const int *peak, int exact) {
    for (int t = 0; t < DATES_TARGET_LEN; t++) {
        const int s = e->span_start[t], x = e->span_end[t], p = peak[t];
        if (s < 0 || (p >= s && p < x)) continue;
        const int offset = p < s ? p - s : p - (x - 1);
        fprintf(out, "%d\t%s\t%s\t%s\t%d\t%c\t%s\t%d\t%d\t%d\t%c\t%d\t%d\n", i,
                DATES_FORMATS[e->format].name, e->src, e->tgt, t, e->tgt[t],
                t < 4 ? "year" : t < 7 ? "month" : "day", s, x, p, e->src[p], offset, exact);
    }
}

// Decodes d (the first n pairs) in batches of B; fills res; writes each missed digit's line
// to misses (NULL: none).
static void evaluate(TranslateModel *tm, const TranslateData *d, const EvalFlags *f, int n,
                     EvalResult *res, FILE *misses) {
    const int B = f->batch;
    const TranslateState *st = &tm->state;
    const int ML = d->max_len, L = st->cfg.dec.L, T = ML + 1;
    const bool attend = st->cfg.dec.attn.kind != ATTN_NONE;
    int *out = xmalloc((size_t)B * ML * sizeof(int)), *len = xmalloc((size_t)B * sizeof(int));
    float *alpha = xmalloc((size_t)T * B * L * sizeof(float));
    char **hyps = xcalloc((size_t)n, sizeof(char *));
    memset(res, 0, sizeof *res);
    res->n = n, res->bleu = NAN, res->chrf = NAN;
    for (int i0 = 0; i0 < n; i0 += B) {
        const int nb = n - i0 < B ? n - i0 : B;
        decode_(tm, d, f, i0, nb, out, len, alpha);
        for (int b = 0; b < nb; b++) {
            const int i = i0 + b;
            const int exact = len[b] == d->tgt_len[i] &&
                              memcmp(out + (size_t)b * ML, d->tgt + (size_t)i * ML,
                                     (size_t)len[b] * sizeof(int)) == 0;
            const int k = (d->src_len[i] - 1) / TRANSLATE_BUCKET;
            res->exact += exact;
            res->bucket_n[k]++;
            res->bucket_exact[k] += exact;
            hyps[i] = translate_target_text(st, out + (size_t)b * ML, len[b]);
            if (!d->dates || !attend) continue;
            // Step t's attention peak over the row's source characters (step t wrote
            // target character t).
            int peak[DATES_TARGET_LEN];
            CHECK(T >= DATES_TARGET_LEN, "dates decoded for %d steps", T);
            dates_attention_peaks(peak, alpha + (size_t)b * L, (size_t)nb * L, d->src_len[i]);
            dates_alignment_count(&d->dates[i], peak, &res->align_hits, &res->align_n);
            if (misses) write_misses(misses, i, &d->dates[i], peak, exact);
        }
    }
    if (!d->dates) {
        BleuOptions bo;
        bleu_options_default(&bo);
        BleuScore bs;
        res->bleu = bleu_corpus(&bs, NULL, (const char *const *)hyps,
                                (const char *const *)d->tgt_text, n, 1, &bo);
        ChrfOptions co;
        chrf_options_default(&co);
        res->chrf = chrf_corpus(NULL, (const char *const *)hyps, (const char *const *)d->tgt_text,
                                n, 1, &co);
    }
    for (int i = 0; i < n; i++) free(hyps[i]);
    free(hyps), free(out), free(len), free(alpha);
}

// One line: exact match by source length, each non-empty bucket's share and count.
static void print_buckets(const EvalResult *r) {
    char line[1024];
    int k = snprintf(line, sizeof line, "exact match by source length (tokens):");
    for (int i = 0; i < TRANSLATE_BUCKETS && k < (int)sizeof line - 64; i++)
        if (r->bucket_n[i])
            k += snprintf(line + k, sizeof line - k, " %d-%d %.2f%% (%d)", i * TRANSLATE_BUCKET + 1,
                          (i + 1) * TRANSLATE_BUCKET, 100.0 * r->bucket_exact[i] / r->bucket_n[i],
                          r->bucket_n[i]);
    text_write_linef(stderr, "text translate eval: %s", line);
}

int text_translate_eval_main(int argc, char **argv) {
    EvalFlags f = {.root = "data", .split = TRANSLATE_TEST, .batch = 100, .threads = 1, .beam = 1,
                   .length_alpha = 0.7f};
    ArgSpec specs[] = {
        {"model", ARG_STRING, &f.model, "a checkpoint of text translate train", .metavar = "FILE", .required = true},
        {"split", ARG_CHOICE, &f.split, "the split of the model's data to decode", .choices = TRANSLATE_SPLITS},
        {"data-root", ARG_STRING, &f.root, "folder holding bible/", .metavar = "DIR"},
        {"batch", ARG_INT, &f.batch, "pairs decoded together", .has_min = true, .min = 1, .has_max = true, .max = TRANSLATE_BATCH_MAX},
        {"beam", ARG_INT, &f.beam, "beam width (1: greedy)", .has_min = true, .min = 1, .has_max = true, .max = 64},
        {"length-alpha", ARG_FLOAT, &f.length_alpha, "beam search: hypotheses scored by log p / length^X", .has_min = true, .min = 0, .has_max = true, .max = 4},
        {"limit", ARG_INT, &f.limit, "decode only the split's first N pairs (0: all)", .has_min = true, .min = 0},
        {"threads", ARG_INT, &f.threads, "threads of the matrix products", .has_min = true, .min = 1, .has_max = true, .max = THREADS_MAX},
        {"dates-examples", ARG_INT, &f.dates_examples, "dates: decode the split's first N examples in place of its own size (valid 500, test 1,000): examples are a pure function of the split and index and no source is in two splits, so a larger N extends the split, e.g. to count more long sources (0: the split's size)", .has_min = true, .min = 0, .has_max = true, .max = 1000000},
        {"misses", ARG_STRING, &f.misses, "dates: write each target digit whose attention peak misses its span to FILE (tab-separated, a header first)", .metavar = "FILE"},
        {"json", ARG_FLAG, &f.json, "print the figures as one JSON object", .given = NULL},
    };
    int code;
    if (args_parse_for_command(argc, argv, specs, ARGS_LEN(specs),
                               "text translate eval --model FILE [flags]", "text translate", &code))
        return code;
    gemm_set_threads(f.threads);
    TranslateModel tm;
    TranslateData d;
    Error err;
    if (translate_model_load(&tm, f.model, f.batch, &err)) {
        fprintf(stderr, "text translate eval: %s\n", err.msg);
        return 1;
    }
    PairsSpec spec;
    const bool dates = pairs_spec_parse(&spec, tm.state.data, &err) == 0 && spec.kind == PAIRS_SPEC_DATES;
    if (f.dates_examples && !dates) {
        fprintf(stderr, "text translate eval: %s: --dates-examples: the model was trained on %s, "
                "not the date task\n", f.model, tm.state.data);
        translate_model_free(&tm);
        return 1;
    }
    if (f.dates_examples)
        translate_data_read_dates(&d, &tm.state, (TranslateSplit)f.split, f.dates_examples);
    else if (translate_data_read(&d, &tm.state, f.root, (TranslateSplit)f.split, &err)) {
        fprintf(stderr, "text translate eval: %s: the model's data: %s\n", f.model, err.msg);
        translate_model_free(&tm);
        return 1;
    }
    const int n = f.limit && f.limit < d.n ? f.limit : d.n;
    FILE *misses = NULL;
    if (f.misses && !(misses = fopen(f.misses, "w"))) {
        fprintf(stderr, "text translate eval: %s: cannot create\n", f.misses);
        translate_data_free(&d);
        translate_model_free(&tm);
        return 1;
    }
    if (misses)
        fputs("example\tformat\tsource\ttarget\tchar\tdigit\tfield\tspan_start\tspan_end\tpeak"
              "\tpeak_char\toffset\texact\n", misses);
    EvalResult r;
    evaluate(&tm, &d, &f, n, &r, misses);
    if (misses && fclose(misses) != 0) {
        fprintf(stderr, "text translate eval: %s: write error\n", f.misses);
        translate_data_free(&d);
        translate_model_free(&tm);
        return 1;
    }
    const double em = n ? (double)r.exact / n : NAN;
    const double align = r.align_n ? (double)r.align_hits / r.align_n : NAN;
    char line[256];
    int k = snprintf(line, sizeof line, "%s split, %d pairs: exact match %.2f%%",
                     TRANSLATE_SPLITS[f.split], n, 100.0 * em);
    if (isfinite(align)) k += snprintf(line + k, sizeof line - k, ", alignment accuracy %.2f%%", 100.0 * align);
    if (isfinite(r.bleu)) snprintf(line + k, sizeof line - k, ", BLEU %.2f, chrF %.2f", r.bleu, r.chrf);
    char how[64] = "greedy";
    if (f.beam > 1) snprintf(how, sizeof how, "beam %d, length alpha %g", f.beam, f.length_alpha);
    text_write_linef(stderr, "text translate eval: %s (%s attention, %s)", line,
                     translate_attention_name(&tm.state), how);
    print_buckets(&r);
    if (f.json) {
        char a[32], b[32], c[32], e[32];
        printf("{\"split\": \"%s\", \"pairs\": %d, \"attention\": \"%s\", \"exact_match\": %s, "
               "\"alignment_accuracy\": %s, \"bleu\": %s, \"chrf\": %s, \"model\": ",
               TRANSLATE_SPLITS[f.split], n, translate_attention_name(&tm.state),
               json_number(a, em), json_number(b, align), json_number(c, r.bleu),
               json_number(e, r.chrf));
        text_json_string(stdout, f.model);
        printf(", \"beam\": %d, \"length_alpha\": %s, \"by_source_length\": [", f.beam,
               json_number(a, f.length_alpha));
        for (int k = 0, first = 1; k < TRANSLATE_BUCKETS; k++) {
            if (!r.bucket_n[k]) continue;
            printf("%s{\"from\": %d, \"to\": %d, \"pairs\": %d, \"exact_match\": %s}",
                   first ? "" : ", ", k * TRANSLATE_BUCKET + 1, (k + 1) * TRANSLATE_BUCKET,
                   r.bucket_n[k], json_number(b, (double)r.bucket_exact[k] / r.bucket_n[k]));
            first = 0;
        }
        printf("]}\n");
    }
    translate_data_free(&d);
    translate_model_free(&tm);
    return 0;
}
