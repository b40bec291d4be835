// `text translate eval` (cli/text_translate.h): greedy decoding of one split of a model's
// data; exact match, and alignment accuracy for dates, corpus BLEU and chrF for pairs.
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
#include "seq/sacrebleu.h"

typedef struct {
    const char *model, *root;
    int split, batch, limit, threads;
    bool json;
} EvalFlags;

typedef struct {
    int n;                       // pairs decoded
    long exact;                  // hypotheses equal to their target
    int align_hits, align_n;     // dates with attention: target digits and hits
    double bleu, chrf;           // pairs: corpus scores (0..100), else NAN
} EvalResult;

// Decodes d (the first n pairs) in batches of B; fills res.
static void evaluate(TranslateModel *tm, const TranslateData *d, int n, int B, EvalResult *res) {
    const TranslateState *st = &tm->state;
    const int S = d->S, ML = d->max_len, L = st->cfg.dec.L, T = ML + 1;
    const bool attend = st->cfg.dec.attn.kind != ATTN_NONE;
    int *out = xmalloc((size_t)B * ML * sizeof(int)), *len = xmalloc((size_t)B * sizeof(int));
    float *alpha = xmalloc((size_t)T * B * L * sizeof(float));
    char **hyps = xcalloc((size_t)n, sizeof(char *));
    *res = (EvalResult){.n = n, .bleu = NAN, .chrf = NAN};
    for (int i0 = 0; i0 < n; i0 += B) {
        const int nb = n - i0 < B ? n - i0 : B;
        translator_greedy(&tm->m, d->src + (size_t)i0 * S, d->src_len + i0, nb, out, len, alpha);
        for (int b = 0; b < nb; b++) {
            const int i = i0 + b;
            res->exact += len[b] == d->tgt_len[i] &&
                          memcmp(out + (size_t)b * ML, d->tgt + (size_t)i * ML,
                                 (size_t)len[b] * sizeof(int)) == 0;
            hyps[i] = translate_target_text(st, out + (size_t)b * ML, len[b]);
            if (!d->dates || !attend) continue;
            // Step t's attention peak over the row's source characters.
            int peak[DATES_TARGET_LEN];
            for (int t = 0; t < DATES_TARGET_LEN && t < T; t++) {
                const float *a = alpha + ((size_t)t * nb + b) * L;
                int best = 0;
                for (int s = 1; s < d->src_len[i]; s++)
                    if (a[s] > a[best]) best = s;
                peak[t] = best;
            }
            dates_alignment_count(&d->dates[i], peak, &res->align_hits, &res->align_n);
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

int text_translate_eval_main(int argc, char **argv) {
    EvalFlags f = {.root = "data", .split = TRANSLATE_TEST, .batch = 100, .threads = 1};
    ArgSpec specs[] = {
        {"model", ARG_STRING, &f.model, "a checkpoint of text translate train", .metavar = "FILE", .required = true},
        {"split", ARG_CHOICE, &f.split, "the split of the model's data to decode", .choices = TRANSLATE_SPLITS},
        {"data-root", ARG_STRING, &f.root, "folder holding bible/", .metavar = "DIR"},
        {"batch", ARG_INT, &f.batch, "pairs decoded together", .has_min = true, .min = 1, .has_max = true, .max = TRANSLATE_BATCH_MAX},
        {"limit", ARG_INT, &f.limit, "decode only the split's first N pairs (0: all)", .has_min = true, .min = 0},
        {"threads", ARG_INT, &f.threads, "threads of the matrix products", .has_min = true, .min = 1, .has_max = true, .max = THREADS_MAX},
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
    if (translate_data_read(&d, &tm.state, f.root, (TranslateSplit)f.split, &err)) {
        fprintf(stderr, "text translate eval: %s: the model's data: %s\n", f.model, err.msg);
        translate_model_free(&tm);
        return 1;
    }
    const int n = f.limit && f.limit < d.n ? f.limit : d.n;
    EvalResult r;
    evaluate(&tm, &d, n, f.batch, &r);
    const double em = n ? (double)r.exact / n : NAN;
    const double align = r.align_n ? (double)r.align_hits / r.align_n : NAN;
    char line[256];
    int k = snprintf(line, sizeof line, "%s split, %d pairs: exact match %.2f%%",
                     TRANSLATE_SPLITS[f.split], n, 100.0 * em);
    if (isfinite(align)) k += snprintf(line + k, sizeof line - k, ", alignment accuracy %.2f%%", 100.0 * align);
    if (isfinite(r.bleu)) snprintf(line + k, sizeof line - k, ", BLEU %.2f, chrF %.2f", r.bleu, r.chrf);
    text_write_linef(stderr, "text translate eval: %s (%s attention, greedy)", line,
                     TRANSLATE_ATTENTIONS[tm.state.attention]);
    if (f.json) {
        char a[32], b[32], c[32], e[32];
        printf("{\"split\": \"%s\", \"pairs\": %d, \"attention\": \"%s\", \"exact_match\": %s, "
               "\"alignment_accuracy\": %s, \"bleu\": %s, \"chrf\": %s, \"model\": ",
               TRANSLATE_SPLITS[f.split], n, TRANSLATE_ATTENTIONS[tm.state.attention],
               json_number(a, em), json_number(b, align), json_number(c, r.bleu),
               json_number(e, r.chrf));
        text_json_string(stdout, f.model);
        printf("}\n");
    }
    translate_data_free(&d);
    translate_model_free(&tm);
    return 0;
}
