// text_translate_score.c: `text translate score` (cli/text_translate_score.h).
#include "cli/text_translate_score.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/text_translate_decode.h"
#include "cli/threads.h"
#include "core/check.h"
#include "core/text_escape.h"
#include "seq/sacrebleu.h"

static int fail(const Error *err) {
    fprintf(stderr, "text translate score: %s\n", err->msg);
    return 1;
}

typedef struct {
    const char *model, *root, *hyps, *baseline_hyps, *write_hyps;
    int split, batch, threads, samples;
    long seed;
    bool json;
} ScoreFlags;

static int parse_flags(ScoreFlags *f, int argc, char **argv, int *code) {
    *f = (ScoreFlags){.root = "data", .split = TRANSLATE_TEST, .batch = 100, .threads = 1,
                      .samples = SACRE_BOOTSTRAP_SAMPLES, .seed = SACRE_BOOTSTRAP_SEED};
    ArgSpec specs[] = {
        {"model", ARG_STRING, &f->model, "a run folder of text translate train (its model.safetensors) or a checkpoint", .metavar = "PATH", .required = true},
        {"split", ARG_CHOICE, &f->split, "the split of the model's data to score", .choices = TRANSLATE_SPLITS},
        {"data-root", ARG_STRING, &f->root, "folder holding bible/", .metavar = "DIR"},
        {"hyps", ARG_STRING, &f->hyps, "outputs to score, one line per pair of the split (default: greedy decoding)", .metavar = "FILE"},
        {"baseline-hyps", ARG_STRING, &f->baseline_hyps, "a baseline's outputs on the same split, one line per pair (e.g. another run's --write-hyps): adds sacreBLEU's paired bootstrap against it (the difference, its 95% interval and the p-value)", .metavar = "FILE"},
        {"write-hyps", ARG_STRING, &f->write_hyps, "write the outputs scored to FILE, one line per pair", .metavar = "FILE"},
        {"samples", ARG_INT, &f->samples, "bootstrap resamples", .has_min = true, .min = 1, .has_max = true, .max = 1000000},
        {"seed", ARG_LONG, &f->seed, "seed of the resampling", .has_min = true, .min = 0},
        {"batch", ARG_INT, &f->batch, "pairs decoded together", .has_min = true, .min = 1, .has_max = true, .max = TRANSLATE_BATCH_MAX},
        {"threads", ARG_INT, &f->threads, "threads of the matrix products", .has_min = true, .min = 1, .has_max = true, .max = THREADS_MAX},
        {"json", ARG_FLAG, &f->json, "print the figures as one JSON object", .given = NULL},
    };
    return args_parse_for_command(argc, argv, specs, ARGS_LEN(specs),
                                  "text translate score --model PATH [flags]", "text translate", code);
}

// The lines of a --hyps or --baseline-hyps file (n of them, malloc'd), or a failure naming
// the file and the count.
static int read_hyps(char **hyps, int n, const char *path, Error *err) {
    FILE *in = fopen(path, "rb");
    if (!in) return error_set(err, "%s: cannot open", path);
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    int k = 0, rc = 0;
    while ((got = getline(&line, &cap, in)) >= 0) {
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
        if (k < n) hyps[k] = xstrdup(line);
        k++;
    }
    if (ferror(in)) rc = error_set(err, "%s: read error", path);
    else if (k != n) rc = error_set(err, "%s: %d lines, but the split holds %d pairs", path, k, n);
    free(line);
    fclose(in);
    return rc;
}

// --write-hyps: hyps (n), one line each.
static int write_hyps(char *const *hyps, int n, const char *path, Error *err) {
    FILE *out = fopen(path, "wb");
    if (!out) return error_set(err, "%s: cannot create", path);
    for (int i = 0; i < n; i++) fprintf(out, "%s\n", hyps[i]);
    if (fclose(out) != 0) return error_set(err, "%s: write error", path);
    return 0;
}

#define N_EDGES 5
static const int EDGES[N_EDGES] = {10, 20, 30, 40, 50};

typedef struct {
    BootstrapResult bleu, chrf;          // with --baseline-hyps, paired against it (diff, p)
    BootstrapResult base_bleu, base_chrf;  // the baseline's own, on the same resamples
    LengthBucket by_length[N_EDGES + 1];
} Scores;

// Per-sentence statistics of hyps (n) against the split's references.
static void sentence_stats(BleuStats *bs, ChrfStats *cs, char **hyps, const TranslateData *d,
                           const BleuOptions *bo, const ChrfOptions *co) {
    const char *const *h = (const char *const *)hyps, *const *refs = (const char *const *)d->tgt_text;
    bleu_corpus(NULL, bs, h, refs, d->n, 1, bo);
    chrf_corpus(cs, h, refs, d->n, 1, co);
}

// base: the baseline's outputs, or NULL.
static void score(Scores *s, char **hyps, char **base, const TranslateData *d, const ScoreFlags *f) {
    const int n = d->n;
    BleuOptions bo;
    bleu_options_default(&bo);
    ChrfOptions co;
    chrf_options_default(&co);
    BleuStats *bs = xcalloc((size_t)n, sizeof *bs), *base_bs = NULL;
    ChrfStats *cs = xcalloc((size_t)n, sizeof *cs), *base_cs = NULL;
    sentence_stats(bs, cs, hyps, d, &bo, &co);
    if (base) {
        base_bs = xcalloc((size_t)n, sizeof *base_bs);
        base_cs = xcalloc((size_t)n, sizeof *base_cs);
        sentence_stats(base_bs, base_cs, base, d, &bo, &co);
    }
    // The same seed for both metrics and with or without a baseline: the same resamples, so
    // the system's own interval is the unpaired one.
    bleu_bootstrap(&s->bleu, &s->base_bleu, bs, base_bs, n, &bo, f->samples, (uint64_t)f->seed);
    chrf_bootstrap(&s->chrf, &s->base_chrf, cs, base_cs, n, &co, f->samples, (uint64_t)f->seed);
    free(base_bs), free(base_cs);
    int *words = xmalloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) words[i] = sacre_word_count(d->src_text[i]);
    bleu_by_length(s->by_length, EDGES, N_EDGES, words, bs, n, &bo);
    free(words), free(bs), free(cs);
}

// The --json object's paired figures: for each metric M (bleu, chrf) the baseline's score
// baseline_M, the difference M_diff with its resampled mean, 95 % bounds and half-width,
// and sacreBLEU's paired-bootstrap p-value M_p.
static void print_paired_json(const Scores *s, const char *baseline) {
    printf(", \"baseline_hyps\": ");
    text_json_string(stdout, baseline);
    const char *names[2] = {"bleu", "chrf"};
    const BootstrapResult *sys[2] = {&s->bleu, &s->chrf}, *base[2] = {&s->base_bleu, &s->base_chrf};
    for (int m = 0; m < 2; m++) {
        char a[32], b[32], c[32], e[32], g[32], h[32], p[32];
        const BootstrapResult *r = sys[m];
        printf(", \"baseline_%s\": %s, \"%s_diff\": %s, \"%s_diff_mean\": %s, \"%s_diff_lower\": %s, "
               "\"%s_diff_upper\": %s, \"%s_diff_ci\": %s, \"%s_p\": %s",
               names[m], json_number(a, base[m]->score), names[m], json_number(b, r->diff), names[m],
               json_number(c, r->diff_mean), names[m], json_number(e, r->diff_lower), names[m],
               json_number(g, r->diff_upper), names[m], json_number(h, r->diff_ci), names[m],
               json_number(p, r->p_value));
    }
}

static void print_scores(const Scores *s, const TranslateData *d, const TranslateState *st,
                         const ScoreFlags *f, const char *model) {
    char line[1024];
    int k = snprintf(line, sizeof line, "%s split, %d pairs (%s): BLEU %.2f (%.2f +- %.2f), chrF %.2f "
                     "(%.2f +- %.2f), 95 %% bootstrap over %d resamples; BLEU by source words:",
                     TRANSLATE_SPLITS[f->split], d->n, f->hyps ? "--hyps" : "greedy", s->bleu.score,
                     s->bleu.mean, s->bleu.ci, s->chrf.score, s->chrf.mean, s->chrf.ci, f->samples);
    for (int b = 0; b <= N_EDGES && k < (int)sizeof line; b++) {
        const LengthBucket *l = &s->by_length[b];
        char hi[16];
        snprintf(hi, sizeof hi, l->hi < 0 ? "+" : "-%d", l->hi);
        k += snprintf(line + k, sizeof line - k, " %d%s %.2f (%d)", l->lo, hi, l->bleu, l->n);
    }
    text_write_linef(stderr, "text translate score: %s", line);
    if (f->baseline_hyps)
        text_write_linef(stderr, "text translate score: against %s (BLEU %.2f, chrF %.2f), paired "
                         "bootstrap: BLEU %+.2f [%+.2f, %+.2f] p = %.4f, chrF %+.2f [%+.2f, %+.2f] p = %.4f",
                         f->baseline_hyps, s->base_bleu.score, s->base_chrf.score, s->bleu.diff,
                         s->bleu.diff_lower, s->bleu.diff_upper, s->bleu.p_value, s->chrf.diff,
                         s->chrf.diff_lower, s->chrf.diff_upper, s->chrf.p_value);
    if (!f->json) return;
    char a[32], b[32], c[32], e[32], g[32], h[32];
    printf("{\"split\": \"%s\", \"pairs\": %d, \"attention\": \"%s\", \"decoding\": \"%s\", "
           "\"bleu\": %s, \"bleu_mean\": %s, \"bleu_ci\": %s, \"chrf\": %s, \"chrf_mean\": %s, "
           "\"chrf_ci\": %s, \"samples\": %d, \"by_length\": [",
           TRANSLATE_SPLITS[f->split], d->n, translate_attention_name(st),
           f->hyps ? "hyps" : "greedy", json_number(a, s->bleu.score), json_number(b, s->bleu.mean),
           json_number(c, s->bleu.ci), json_number(e, s->chrf.score), json_number(g, s->chrf.mean),
           json_number(h, s->chrf.ci), f->samples);
    for (int i = 0; i <= N_EDGES; i++) {
        const LengthBucket *l = &s->by_length[i];
        printf("%s{\"lo\": %d, \"hi\": %d, \"sentences\": %d, \"bleu\": %s}", i ? ", " : "", l->lo, l->hi,
               l->n, json_number(a, l->bleu));
    }
    printf("]");
    if (f->baseline_hyps) print_paired_json(s, f->baseline_hyps);
    printf(", \"model\": ");
    text_json_string(stdout, model);
    printf("}\n");
}

int text_translate_score_main(int argc, char **argv) {
    ScoreFlags f;
    int code;
    if (parse_flags(&f, argc, argv, &code)) return code;
    char path[1100], where[1200];
    Error err;
    TranslateModel tm;
    if (translate_open_model(&tm, path, sizeof path, f.model, f.batch, f.threads, &err))
        return fail(&err);
    snprintf(where, sizeof where, "%s: the model's data", path);
    TranslateData d;
    if (translate_open_split(&d, &tm.state, f.root, (TranslateSplit)f.split, where, &err)) {
        translate_model_free(&tm);
        return fail(&err);
    }
    char **hyps = xcalloc((size_t)d.n, sizeof(char *));
    char **base = f.baseline_hyps ? xcalloc((size_t)d.n, sizeof(char *)) : NULL;
    int rc = f.hyps ? read_hyps(hyps, d.n, f.hyps, &err) : 0;
    if (rc == 0 && base) rc = read_hyps(base, d.n, f.baseline_hyps, &err);
    if (rc == 0 && !f.hyps) {
        TranslateDecoded r;
        translate_decode_all(&r, &tm, d.src, d.src_len, d.n, f.batch, false);
        for (int i = 0; i < d.n; i++) hyps[i] = translate_decoded_text(&r, &tm.state, i);
        translate_decoded_free(&r);
    }
    if (rc == 0 && f.write_hyps) rc = write_hyps(hyps, d.n, f.write_hyps, &err);
    if (rc == 0) {
        Scores s;
        score(&s, hyps, base, &d, &f);
        print_scores(&s, &d, &tm.state, &f, path);
    }
    for (int i = 0; i < d.n; i++) {
        free(hyps[i]);
        if (base) free(base[i]);
    }
    free(hyps), free(base);
    translate_data_free(&d);
    translate_model_free(&tm);
    return rc ? fail(&err) : 0;
}
