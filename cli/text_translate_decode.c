// text_translate_decode.c: see text_translate_decode.h.
#include "cli/text_translate_decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/check.h"
#include "core/gemm.h"
#include "models/translator_beam.h"

void translate_model_path(char *buf, size_t n, const char *path) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) snprintf(buf, n, "%s/model.safetensors", path);
    else snprintf(buf, n, "%s", path);
}

int translate_open_model(TranslateModel *tm, char *path, size_t n, const char *model, int B,
                         int threads, Error *err) {
    gemm_set_threads(threads);
    translate_model_path(path, n, model);
    return translate_model_load(tm, path, B, err);
}

int translate_open_split(TranslateData *d, const TranslateState *st, const char *root,
                         TranslateSplit split, const char *where, Error *err) {
    if (translate_data_read(d, st, root, split, err)) return error_prefix(err, "%s", where);
    if (d->n) return 0;
    translate_data_free(d);
    return error_set(err, "%s: the %s split holds no pairs", st->data, TRANSLATE_SPLITS[split]);
}

void translate_model_decode(TranslateModel *tm, const int *src, const int *src_len, int nb,
                            int beam, float length_alpha, int *out, int *len, float *alpha) {
    if (tm->state.model == TRANSLATE_MODEL_TRANSFORMER)
        tt_decode(&tm->tt, src, src_len, nb, beam, length_alpha, out, len, NULL, alpha);
    else if (beam == 1) translator_greedy(&tm->m, src, src_len, nb, out, len, alpha);
    else translator_beam(&tm->m, src, src_len, nb, beam, length_alpha, out, len, NULL, alpha);
}

void translate_decode_all(TranslateDecoded *r, TranslateModel *tm, const int *src,
                          const int *src_len, int n, int B, bool keep_alpha) {
    const TranslatorConfig *c = &tm->state.cfg;
    const int S = c->S, ML = c->max_len, T = ML + 1, L = c->dec.L;
    const int cap = tm->state.model == TRANSLATE_MODEL_TRANSFORMER ? tm->tt.B : tm->m.B;
    CHECK(B >= 1 && B <= cap, "batch %d, capacity %d", B, cap);
    *r = (TranslateDecoded){.n = n, .max_len = ML, .L = L};
    r->out = xcalloc((size_t)(n ? n : 1) * ML, sizeof(int));
    r->out_len = xcalloc((size_t)(n ? n : 1), sizeof(int));
    if (keep_alpha) r->alpha = xcalloc((size_t)(n ? n : 1) * T * L, sizeof(float));
    float *step_alpha = keep_alpha ? xmalloc((size_t)T * B * L * sizeof(float)) : NULL;
    for (int i0 = 0; i0 < n; i0 += B) {
        const int nb = n - i0 < B ? n - i0 : B;
        translate_model_decode(tm, src + (size_t)i0 * S, src_len + i0, nb, 1, 0.0f,
                               r->out + (size_t)i0 * ML, r->out_len + i0, step_alpha);
        if (!keep_alpha) continue;
        // (T, nb, L) by step -> (nb, T, L) by sentence.
        for (int b = 0; b < nb; b++)
            for (int t = 0; t < T; t++)
                memcpy(r->alpha + ((size_t)(i0 + b) * T + t) * L, step_alpha + ((size_t)t * nb + b) * L,
                       (size_t)L * sizeof(float));
    }
    free(step_alpha);
}

void translate_decoded_free(TranslateDecoded *r) {
    free(r->out), free(r->out_len), free(r->alpha);
    memset(r, 0, sizeof *r);
}

char *translate_decoded_text(const TranslateDecoded *r, const TranslateState *s, int i) {
    return translate_target_text(s, r->out + (size_t)i * r->max_len, r->out_len[i]);
}

// Appends one encoded source to d (capacity *cap).
static void push_source(TranslateData *d, int *cap, const int *ids, int len, const char *text) {
    if (d->n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        d->src = xrealloc(d->src, (size_t)*cap * d->S * sizeof(int));
        d->src_len = xrealloc(d->src_len, (size_t)*cap * sizeof(int));
        d->tgt_len = xrealloc(d->tgt_len, (size_t)*cap * sizeof(int));
        d->src_text = xrealloc(d->src_text, (size_t)*cap * sizeof(char *));
    }
    memcpy(d->src + (size_t)d->n * d->S, ids, (size_t)d->S * sizeof(int));
    d->src_len[d->n] = len;
    d->tgt_len[d->n] = 0;
    d->src_text[d->n] = xstrdup(text);
    d->n++;
}

int translate_read_sources(TranslateData *d, const TranslateState *s, const char *path,
                           Error *err) {
    memset(d, 0, sizeof *d);
    d->S = s->cfg.S, d->max_len = s->cfg.max_len;
    const bool std_in = !path || strcmp(path, "-") == 0;
    const char *name = std_in ? "standard input" : path;
    FILE *in = std_in ? stdin : fopen(path, "rb");
    if (!in) return error_set(err, "%s: cannot open", name);
    int *ids = xmalloc((size_t)d->S * sizeof(int)), cap = 0, rc = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t got;
    long lineno = 0;
    while (rc == 0 && (got = getline(&line, &lcap, in)) >= 0) {
        lineno++;
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
        if ((size_t)got != strlen(line)) rc = error_set(err, "%s: line %ld: a NUL byte", name, lineno);
        else if (strspn(line, " \t") != (size_t)got) {
            int len;
            if (translate_encode_source(s, line, ids, &len, err))
                rc = error_prefix(err, "%s: line %ld", name, lineno);
            else push_source(d, &cap, ids, len, line);
        }
    }
    if (rc == 0 && ferror(in)) rc = error_set(err, "%s: read error", name);
    if (rc == 0 && d->n == 0) rc = error_set(err, "%s: no sentences", name);
    free(line), free(ids);
    if (!std_in) fclose(in);
    if (rc) translate_data_free(d);
    return rc;
}
