// text_checkpoint.c: `text classify` checkpoints (cli/text_checkpoint.h).
#include "cli/text_checkpoint.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

void text_state_free(TextState *s) {
    keras_tokenizer_free(&s->tok);
    free(s->class_values);
    s->class_values = NULL;
}

static const char *side_name(int v) { return v == KERAS_PRE ? "pre" : "post"; }

int text_checkpoint_save(const char *path, const TextState *s, const Block *params,
                         const Block *m, const Block *v, Error *err) {
    enum { N = 48 };
    char buf[N][64];
    SafetensorsMeta meta[N];
    int k = 0;
#define META(key, fmt, val)                                  \
    snprintf(buf[k], sizeof buf[k], fmt, val);               \
    meta[k] = (SafetensorsMeta){key, buf[k]};                \
    k++
    const TextConfig *c = &s->cfg;
    META("text.vocab", "%d", c->vocab);
    META("text.T", "%d", c->T);
    META("text.embed", "%d", c->embed);
    META("text.hidden", "%d", c->hidden);
    META("text.bidirectional", "%d", c->bidirectional);
    META("text.pool", "%s", text_pool_name(c->pool));
    META("text.attn_kind", "%s", attn_kind_name(c->attn_kind));
    META("text.attn_size", "%d", c->attn_size);
    META("text.heads", "%d", c->heads);
    META("text.masked", "%d", c->masked);
    META("text.classes", "%d", c->classes);
    META("text.dropout", "%.9g", (double)c->dropout);
    META("text.rec_dropout", "%.9g", (double)c->rec_dropout);
    META("text.embed_l2", "%.9g", (double)c->embed_l2);
    META("text.bigrams", "%d", c->bigrams);
    META("text.nb", "%d", c->nb);
    META("text.word_scores", "%d", c->word_scores);
    META("text.recurrent_activation", "%s", lstm_gate_act_name(c->gate_act));
    META("text.padding", "%s", side_name(s->padding));
    META("text.truncating", "%s", side_name(s->truncating));
    META("split.valid_share", "%.17g", s->split.valid_share);
    META("split.folds", "%d", s->split.folds);
    META("split.fold", "%d", s->split.fold);
    META("split.fold_seed", "%llu", (unsigned long long)s->split.fold_seed);
    META("split.inner_folds", "%d", s->split.inner_folds);
    META("split.inner_fold", "%d", s->split.inner_fold);
    META("split.inner_tail", "%d", s->split.inner_tail);
    META("train.step", "%ld", s->step);
#undef META
    TrainOptimMeta om;
    train_optim_meta(&om, &s->optim, TRAIN_OPTIM_BETA1);
    for (int i = 0; i < om.n; i++) meta[k++] = om.meta[i];
    // The word list and the class values, each one string.
    size_t wl = 1;
    for (int i = 1; i <= s->tok.n_words; i++) wl += strlen(s->tok.word[i]) + 1;
    char *words = xmalloc(wl), *q = words;
    for (int i = 1; i <= s->tok.n_words; i++) {
        size_t n = strlen(s->tok.word[i]);
        memcpy(q, s->tok.word[i], n);
        q += n;
        *q++ = '\n';
    }
    *q = 0;
    char *values = xmalloc((size_t)c->classes * 13 + 1);
    values[0] = 0;
    for (int i = 0; i < c->classes; i++)
        sprintf(values + strlen(values), "%s%d", i ? "," : "", s->class_values[i]);
    meta[k++] = (SafetensorsMeta){"text.words", words};
    meta[k++] = (SafetensorsMeta){"text.class_values", values};
    meta[k++] = (SafetensorsMeta){"train.data", s->data};
    meta[k++] = (SafetensorsMeta){"format", TEXT_FORMAT};
    CHECK(k <= N);
    int rc = train_checkpoint_save(path, params, m, v, meta, k, err);
    free(words);
    free(values);
    return rc;
}

static int meta_int(const SafetensorsFile *f, const char *path, const char *key, long lo, long hi,
                    int *out, Error *err) {
    long v;
    if (safetensors_meta_long(f, path, key, "a text classifier checkpoint", lo, hi, &v, err))
        return -1;
    *out = (int)v;
    return 0;
}

static int meta_text(const SafetensorsFile *f, const char *path, const char *key,
                     const char **out, Error *err) {
    *out = safetensors_meta(f, key);
    if (!*out) return error_set(err, "%s: not a text classifier checkpoint (no \"%s\" in __metadata__)", path, key);
    return 0;
}

static int side_parse(const char *s, int *v) {
    if (strcmp(s, "pre") == 0) *v = KERAS_PRE;
    else if (strcmp(s, "post") == 0) *v = KERAS_POST;
    else return -1;
    return 0;
}

// text.words into s->tok; text.class_values into s->class_values.
static int read_words(const SafetensorsFile *f, const char *path, TextState *s, Error *err) {
    const char *words, *values;
    if (meta_text(f, path, "text.words", &words, err) ||
        meta_text(f, path, "text.class_values", &values, err))
        return -1;
    int n = 0;
    for (const char *p = words; *p; p++) n += *p == '\n';
    if (n + 1 != s->cfg.vocab)
        return error_set(err, "%s: text.words holds %d words for a vocabulary of %d rows", path, n,
                         s->cfg.vocab);
    char *copy = xstrdup(words);
    const char **list = xmalloc((size_t)(n ? n : 1) * sizeof *list);
    char *p = copy;
    for (int i = 0; i < n; i++) {
        char *nl = strchr(p, '\n');
        *nl = 0;
        list[i] = p;
        p = nl + 1;
    }
    Error e2;
    int rc = keras_tokenizer_from_words(&s->tok, list, n, &e2);
    free(list);
    free(copy);
    if (rc) return error_wrap(err, &e2, "%s: text.words", path);
    s->class_values = xmalloc((size_t)s->cfg.classes * sizeof *s->class_values);
    const char *q = values;
    for (int i = 0; i < s->cfg.classes; i++) {
        char *end;
        long v = strtol(q, &end, 10);
        if (end == q || v < INT_MIN || v > INT_MAX || (i > 0 && v <= s->class_values[i - 1]) ||
            *end != (i + 1 < s->cfg.classes ? ',' : 0))
            return error_set(err, "%s: text.class_values is not %d ascending integers", path,
                             s->cfg.classes);
        s->class_values[i] = (int)v;
        q = end + 1;
    }
    return 0;
}

int text_checkpoint_read_state(const SafetensorsFile *f, const char *path, TextState *s,
                               Error *err) {
    memset(s, 0, sizeof *s);
    const char *fmt = safetensors_meta(f, "format");
    if (!fmt || strcmp(fmt, TEXT_FORMAT) != 0)
        return error_set(err, "%s: not a text classifier checkpoint (format '%s', expected %s)",
                         path, fmt ? fmt : "missing", TEXT_FORMAT);
    TextConfig *c = &s->cfg;
    const char *pool, *kind, *pad, *trunc, *data;
    long step;
    if (meta_int(f, path, "text.vocab", 1, 50000000, &c->vocab, err) ||
        meta_int(f, path, "text.T", 1, 4096, &c->T, err) ||
        meta_int(f, path, "text.embed", 1, 65536, &c->embed, err) ||
        meta_int(f, path, "text.hidden", 1, 65536, &c->hidden, err) ||
        meta_int(f, path, "text.bidirectional", 0, 1, &c->bidirectional, err) ||
        meta_int(f, path, "text.attn_size", 0, 65536, &c->attn_size, err) ||
        meta_int(f, path, "text.heads", 0, 4096, &c->heads, err) ||
        meta_int(f, path, "text.masked", 0, 1, &c->masked, err) ||
        meta_int(f, path, "text.classes", 2, 1000000, &c->classes, err) ||
        safetensors_meta_float(f, path, "text.dropout", &c->dropout, err) ||
        safetensors_meta_float(f, path, "text.rec_dropout", &c->rec_dropout, err) ||
        safetensors_meta_float(f, path, "text.embed_l2", &c->embed_l2, err) ||
        meta_text(f, path, "text.pool", &pool, err) || meta_text(f, path, "text.attn_kind", &kind, err) ||
        meta_text(f, path, "text.padding", &pad, err) ||
        meta_text(f, path, "text.truncating", &trunc, err) ||
        safetensors_meta_double(f, path, "split.valid_share", &s->split.valid_share, err) ||
        meta_int(f, path, "split.folds", 0, 1000000, &s->split.folds, err) ||
        meta_int(f, path, "split.fold", 0, 1000000, &s->split.fold, err) ||
        safetensors_meta_long(f, path, "train.step", "a text classifier checkpoint", 0, LONG_MAX,
                              &step, err) ||
        meta_text(f, path, "train.data", &data, err))
        return -1;
    // text.bigrams came with the bag of words: a checkpoint without it has none.
    if (safetensors_meta(f, "text.bigrams") &&
        meta_int(f, path, "text.bigrams", 0, 1 << 24, &c->bigrams, err))
        return -1;
    // split.inner_folds and split.inner_fold came later: a checkpoint without them has none.
    if ((safetensors_meta(f, "split.inner_folds") &&
         meta_int(f, path, "split.inner_folds", 0, 1000000, &s->split.inner_folds, err)) ||
        (safetensors_meta(f, "split.inner_fold") &&
         meta_int(f, path, "split.inner_fold", 0, 1000000, &s->split.inner_fold, err)))
        return -1;
    // split.inner_tail came later still: a checkpoint without it deals every training sentence.
    if (safetensors_meta(f, "split.inner_tail") &&
        meta_int(f, path, "split.inner_tail", 0, 1000000, &s->split.inner_tail, err))
        return -1;
    // text.nb came with the naive-Bayes scaling: a checkpoint without it has none.
    if (safetensors_meta(f, "text.nb") && meta_int(f, path, "text.nb", 0, 1, &c->nb, err)) return -1;
    // text.word_scores came with the word scores: a checkpoint without it has none.
    if (safetensors_meta(f, "text.word_scores") &&
        meta_int(f, path, "text.word_scores", 0, 1, &c->word_scores, err))
        return -1;
    // text.recurrent_activation came with the hard-sigmoid gates: without it, sigmoid.
    const char *ra = safetensors_meta(f, "text.recurrent_activation");
    if (ra && lstm_gate_act_parse(ra, &c->gate_act))
        return error_set(err, "%s: text.recurrent_activation '%s' is not sigmoid or hard_sigmoid",
                         path, ra);
    const char *fs = safetensors_meta(f, "split.fold_seed");
    s->split.fold_seed = fs ? strtoull(fs, NULL, 10) : 0;
    s->step = step;
    if (text_pool_parse(pool, &c->pool) || attn_kind_parse(kind, &c->attn_kind) ||
        side_parse(pad, &s->padding) || side_parse(trunc, &s->truncating))
        return error_set(err, "%s: text.pool '%s', text.attn_kind '%s', text.padding '%s' or "
                              "text.truncating '%s' is not one this program knows",
                         path, pool, kind, pad, trunc);
    if (!(s->split.valid_share >= 0 && s->split.valid_share < 1))
        return error_set(err, "%s: split.valid_share %g is not in [0, 1)", path, s->split.valid_share);
    Error e2;
    if (text_config_check(c, &e2)) return error_wrap(err, &e2, "%s", path);
    if (train_optim_read(f, path, TRAIN_OPTIM_BETA1, TEXT_BATCH_MAX, &s->optim, err)) return -1;
    snprintf(s->data, sizeof s->data, "%s", data);
    if (read_words(f, path, s, err)) {
        text_state_free(s);
        return -1;
    }
    return 0;
}

int text_model_load(TextModel *m, const char *path, Error *err) {
    memset(m, 0, sizeof *m);
    SafetensorsFile f;
    if (safetensors_load(&f, path, err)) return -1;
    int rc = text_checkpoint_read_state(&f, path, &m->state, err);
    if (rc == 0) {
        text_layout(&m->params, &m->p, &m->state.cfg);
        // checked before the allocation: the metadata may claim any size
        rc = safetensors_alloc_read_block(&m->params, "", &f, path, err);
        if (rc) text_state_free(&m->state);
    }
    safetensors_free(&f);
    return rc;
}

void text_model_free(TextModel *m) {
    text_state_free(&m->state);
    block_free(&m->params);
}
