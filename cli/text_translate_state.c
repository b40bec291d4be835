// text_translate_state.c: `text translate` data, vocabularies and checkpoints
// (cli/text_translate_state.h).
#include "cli/text_translate_state.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "datasets/pairs.h"
#include "seq/vocab.h"

const char *const TRANSLATE_ATTENTIONS[] = {"bahdanau", "luong-dot", "luong-general",
                                            "luong-concat", "local-m", "local-p", "none", NULL};
const char *const TRANSLATE_SPLITS[] = {"train", "valid", "test", NULL};
const char *const TRANSLATE_MODELS[] = {"lstm", "transformer", NULL};

const char *translate_attention_name(const TranslateState *s) {
    return s->model == TRANSLATE_MODEL_TRANSFORMER ? "transformer" : TRANSLATE_ATTENTIONS[s->attention];
}

int translate_tt_finish(TranslateState *s, Error *err) {
    TranslatorConfig *c = &s->cfg;
    s->tt.Vs = c->Vs, s->tt.V = c->dec.V, s->tt.S = c->S, s->tt.max_len = c->max_len;
    if (tt_config_check(&s->tt, err)) return -1;
    // The LSTM's decoder stand-ins: what the commands read of cfg (dec.L = S, attention on).
    c->Es = c->He = c->dec.E = c->dec.attn.A = 1;
    c->dec.H = 2;
    c->dec.nb = 1;
    c->dec.attn.kind = ATTN_ADDITIVE, c->dec.query = DECODER_QUERY_PREVIOUS;
    c->dropout = c->dec.dropout = c->dec.label_smoothing = 0.0f;
    c->dec.input_feeding = 0;
    s->attention = 0;
    translator_config_finish(c);
    return 0;
}

TranslateAttention translate_attention(int i) {
    static const TranslateAttention a[] = {
        {ATTN_ADDITIVE, DECODER_QUERY_PREVIOUS},      {ATTN_DOT, DECODER_QUERY_CURRENT},
        {ATTN_MULTIPLICATIVE, DECODER_QUERY_CURRENT}, {ATTN_ADDITIVE, DECODER_QUERY_CURRENT},
        {ATTN_LOCAL_MONOTONIC, DECODER_QUERY_CURRENT}, {ATTN_LOCAL_PREDICTIVE, DECODER_QUERY_CURRENT},
        {ATTN_NONE, DECODER_QUERY_CURRENT}};
    CHECK(i >= 0 && i < (int)(sizeof a / sizeof a[0]), "attention %d", i);
    return a[i];
}

int translate_attention_parse(const char *name) {
    for (int i = 0; TRANSLATE_ATTENTIONS[i]; i++)
        if (strcmp(name, TRANSLATE_ATTENTIONS[i]) == 0) return i;
    return -1;
}

void translate_state_free(TranslateState *s) {
    if (s->has_bpe) bpe_free(&s->bpe);
    s->has_bpe = false;
}

// ---------------------------------------------------------------------------------------
// Data

// pairs:FILE's split of pair i (a fixed hash: 90 / 5 / 5).
static TranslateSplit file_split_(int i) {
    uint64_t h = rng_mix(0x7A1DA7EULL, (uint64_t)i) % 100;
    return h < 90 ? TRANSLATE_TRAIN : h < 95 ? TRANSLATE_VALID : TRANSLATE_TEST;
}

// The raw pairs of one split of a pairs spec (bible-en-es or pairs:FILE).
static int read_pairs_(PairSet *p, const PairsSpec *spec, const char *root, TranslateSplit split,
                       Error *err) {
    if (spec->kind == PAIRS_SPEC_BIBLE) return pairs_read_bible(p, root, TRANSLATE_SPLITS[split], err);
    PairSet all;
    if (pairs_read(&all, spec->file, err)) return -1;
    memset(p, 0, sizeof *p);
    p->src = xmalloc((size_t)all.n * sizeof *p->src);
    p->tgt = xmalloc((size_t)all.n * sizeof *p->tgt);
    for (int i = 0; i < all.n; i++) {
        if (file_split_(i) == split) {
            p->src[p->n] = all.src[i], p->tgt[p->n] = all.tgt[i];
            p->n++;
        } else {
            free(all.src[i]), free(all.tgt[i]);
        }
    }
    free(all.src), free(all.tgt);
    if (p->n == 0) {
        pairs_free(p);
        return error_set(err, "%s: no pair falls in the %s split (the file holds %d)", spec->file,
                         TRANSLATE_SPLITS[split], all.n);
    }
    return 0;
}

int translate_vocab_fit(TranslateState *s, const char *root, Error *err) {
    PairsSpec spec;
    if (pairs_spec_parse(&spec, s->data, err)) return -1;
    if (spec.kind == PAIRS_SPEC_DATES) {
        s->has_bpe = false;
        s->cfg.Vs = 1 + (int)strlen(DATES_SOURCE_ALPHABET);
        s->cfg.dec.V = VOCAB_NSPECIAL + (int)strlen(DATES_TARGET_ALPHABET);
        return 0;
    }
    PairSet p;
    if (read_pairs_(&p, &spec, root, TRANSLATE_TRAIN, err)) return -1;
    const char **texts = xmalloc((size_t)2 * p.n * sizeof *texts);
    for (int i = 0; i < p.n; i++) texts[i] = p.src[i], texts[p.n + i] = p.tgt[i];
    int rc = bpe_learn(&s->bpe, texts, 2 * p.n, s->bpe_merges, 2, s->data, err);
    free(texts);
    pairs_free(&p);
    if (rc) return -1;
    s->has_bpe = true;
    s->cfg.Vs = s->cfg.dec.V = s->bpe.n_vocab;
    return 0;
}

static void data_alloc_(TranslateData *d, int n, int S, int ML) {
    memset(d, 0, sizeof *d);
    d->n = n, d->S = S, d->max_len = ML;
    d->src = xcalloc((size_t)n * S, sizeof(int));
    d->src_len = xcalloc((size_t)n, sizeof(int));
    d->tgt = xcalloc((size_t)n * ML, sizeof(int));
    d->tgt_len = xcalloc((size_t)n, sizeof(int));
    d->src_text = xcalloc((size_t)n, sizeof(char *));
    d->tgt_text = xcalloc((size_t)n, sizeof(char *));
}

int translate_dates_split_size(const TranslateState *s, TranslateSplit split) {
    return split == TRANSLATE_TRAIN ? s->train_size
           : split == TRANSLATE_VALID ? TRANSLATE_DATES_VALID : TRANSLATE_DATES_TEST;
}

void translate_data_read_dates(TranslateData *d, const TranslateState *s, TranslateSplit split,
                               int n) {
    CHECK(n >= 1, "%d date examples", n);
    const int S = s->cfg.S, ML = s->cfg.max_len;
    data_alloc_(d, n, S, ML);
    d->dates = xmalloc((size_t)n * sizeof *d->dates);
    const DateSplit ds = split == TRANSLATE_TRAIN ? DATES_TRAIN : split == TRANSLATE_VALID ? DATES_VALID : DATES_TEST;
    for (int i = 0; i < n; i++) {
        DateExample *e = &d->dates[i];
        dates_example(e, TRANSLATE_DATES_SEED, ds, (uint64_t)i);
        const int ls = e->src_len < S ? e->src_len : S;
        for (int t = 0; t < ls; t++)
            d->src[(size_t)i * S + t] = 1 + dates_char_id(DATES_SOURCE_ALPHABET, e->src[t]);
        d->src_len[i] = ls;
        const int lt = DATES_TARGET_LEN < ML ? DATES_TARGET_LEN : ML;
        for (int t = 0; t < lt; t++)
            d->tgt[(size_t)i * ML + t] = VOCAB_NSPECIAL + dates_char_id(DATES_TARGET_ALPHABET, e->tgt[t]);
        d->tgt_len[i] = lt;
        d->src_text[i] = xstrdup(e->src);
        d->tgt_text[i] = xstrdup(e->tgt);
    }
}

int translate_data_read(TranslateData *d, const TranslateState *s, const char *root,
                        TranslateSplit split, Error *err) {
    memset(d, 0, sizeof *d);
    PairsSpec spec;
    if (pairs_spec_parse(&spec, s->data, err)) return -1;
    if (spec.kind == PAIRS_SPEC_DATES) {
        translate_data_read_dates(d, s, split, translate_dates_split_size(s, split));
        return 0;
    }
    CHECK(s->has_bpe, "pairs without a BPE model");
    PairSet p;
    if (read_pairs_(&p, &spec, root, split, err)) return -1;
    const int S = s->cfg.S, ML = s->cfg.max_len;
    data_alloc_(d, p.n, S, ML);
    for (int i = 0; i < p.n; i++) {
        int *ids, n;
        bpe_encode(&s->bpe, p.src[i], &ids, &n);
        if (n < 1) ids = realloc(ids, sizeof(int)), ids[0] = BPE_UNK, n = 1;
        d->src_len[i] = n < S ? n : S;
        memcpy(d->src + (size_t)i * S, ids, (size_t)d->src_len[i] * sizeof(int));
        free(ids);
        bpe_encode(&s->bpe, p.tgt[i], &ids, &n);
        d->tgt_len[i] = n < ML ? n : ML;
        memcpy(d->tgt + (size_t)i * ML, ids, (size_t)d->tgt_len[i] * sizeof(int));
        free(ids);
        d->src_text[i] = p.src[i], d->tgt_text[i] = p.tgt[i];
        p.src[i] = p.tgt[i] = NULL;
    }
    pairs_free(&p);
    return 0;
}

void translate_data_free(TranslateData *d) {
    for (int i = 0; i < d->n; i++) {
        if (d->src_text) free(d->src_text[i]);
        if (d->tgt_text) free(d->tgt_text[i]);
    }
    free(d->src), free(d->src_len), free(d->tgt), free(d->tgt_len);
    free(d->src_text), free(d->tgt_text), free(d->dates);
    memset(d, 0, sizeof *d);
}

int translate_encode_source(const TranslateState *s, const char *text, int *ids, int *len,
                            Error *err) {
    const int S = s->cfg.S;
    memset(ids, 0, (size_t)S * sizeof(int));
    const char *p = text;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) return error_set(err, "an empty sentence");
    if (s->has_bpe) {
        int *v, n;
        bpe_encode(&s->bpe, text, &v, &n);
        *len = n < S ? n : S;
        memcpy(ids, v, (size_t)*len * sizeof(int));
        free(v);
        return *len > 0 ? 0 : error_set(err, "an empty sentence");
    }
    int n = 0;
    for (const unsigned char *q = (const unsigned char *)text; *q && n < S; q++) {
        const char c = (char)(*q >= 'A' && *q <= 'Z' ? *q - 'A' + 'a' : *q);
        const int id = *q < 128 ? dates_char_id(DATES_SOURCE_ALPHABET, c) : -1;
        if (id < 0)
            return error_set(err, "byte %d ('%c') is not a character the date task writes (%s)",
                             (int)((const char *)q - text) + 1, *q >= 32 && *q < 127 ? *q : '?',
                             DATES_SOURCE_ALPHABET);
        ids[n++] = 1 + id;
    }
    *len = n;
    return 0;
}

char *translate_target_text(const TranslateState *s, const int *ids, int n) {
    if (s->has_bpe) return bpe_decode(&s->bpe, ids, n);
    char *out = xmalloc((size_t)n + 1);
    int k = 0;
    const int na = (int)strlen(DATES_TARGET_ALPHABET);
    for (int i = 0; i < n; i++) {
        const int c = ids[i] - VOCAB_NSPECIAL;
        if (c >= 0 && c < na) out[k++] = DATES_TARGET_ALPHABET[c];
    }
    out[k] = 0;
    return out;
}

// ---------------------------------------------------------------------------------------
// Checkpoints

int translate_checkpoint_save(const char *path, const TranslateState *s, const Block *params,
                              const Block *m, const Block *v, Error *err) {
    enum { N = 40 };
    char buf[N][64];
    SafetensorsMeta meta[N];
    int k = 0;
#define META(key, fmt, val)                    \
    snprintf(buf[k], sizeof buf[k], fmt, val); \
    meta[k] = (SafetensorsMeta){key, buf[k]};  \
    k++
    const TranslatorConfig *c = &s->cfg;
    const TtConfig *t = &s->tt;
    META("translate.model", "%s", TRANSLATE_MODELS[s->model]);
    META("translate.src_vocab", "%d", c->Vs);
    META("translate.tgt_vocab", "%d", c->dec.V);
    META("translate.max_src", "%d", c->S);
    META("translate.max_len", "%d", c->max_len);
    META("translate.train_size", "%d", s->train_size);
    META("translate.bpe_merges", "%d", s->bpe_merges);
    if (s->model == TRANSLATE_MODEL_TRANSFORMER) {
        META("translate.d_model", "%d", t->d_model);
        META("translate.heads", "%d", t->heads);
        META("translate.d_ff", "%d", t->d_ff);
        META("translate.enc_layers", "%d", t->enc_layers);
        META("translate.dec_layers", "%d", t->dec_layers);
        META("translate.post_ln", "%d", t->post_ln);
        META("translate.positions", "%d", tt_positions(t));
        META("translate.map_layer", "%d", t->map_layer);
        META("translate.warmup", "%d", s->warmup);
        META("translate.dropout", "%.9g", (double)t->dropout);
        META("translate.label_smoothing", "%.9g", (double)t->label_smoothing);
    } else {
        META("translate.attention", "%s", TRANSLATE_ATTENTIONS[s->attention]);
        META("translate.embed", "%d", c->Es);
        META("translate.hidden", "%d", c->He);
        META("translate.dec_embed", "%d", c->dec.E);
        META("translate.dec_hidden", "%d", c->dec.H);
        META("translate.attn_size", "%d", c->dec.attn.A);
        META("translate.window", "%d", c->dec.attn.window);
        META("translate.input_feeding", "%d", c->dec.input_feeding);
        META("translate.forward_only", "%d", c->forward_only);
        META("translate.reverse_only", "%d", c->reverse_only);
        META("translate.annot_embed", "%d", c->annot_embed);
        META("translate.dropout", "%.9g", (double)c->dropout);
        META("translate.label_smoothing", "%.9g", (double)c->dec.label_smoothing);
    }
    META("train.step", "%ld", s->step);
#undef META
    TrainOptimMeta om;
    train_optim_meta(&om, &s->optim, TRAIN_OPTIM_BETA1 | TRAIN_OPTIM_LR_DECAY);
    for (int i = 0; i < om.n; i++) meta[k++] = om.meta[i];
    char *bpe = s->has_bpe ? bpe_to_text(&s->bpe) : NULL;
    if (bpe) meta[k++] = (SafetensorsMeta){"translate.bpe", bpe};
    meta[k++] = (SafetensorsMeta){"train.data", s->data};
    meta[k++] = (SafetensorsMeta){"format", TRANSLATE_FORMAT};
    CHECK(k <= N);
    int rc = train_checkpoint_save(path, params, m, v, meta, k, err);
    free(bpe);
    return rc;
}

static int meta_int_(const SafetensorsFile *f, const char *path, const char *key, long lo,
                     long hi, int *out, Error *err) {
    long v;
    if (safetensors_meta_long(f, path, key, "a text translate checkpoint", lo, hi, &v, err))
        return -1;
    *out = (int)v;
    return 0;
}

// Input feeding, a forward-only or reverse-only encoder, the embeddings in the annotations, dropout and label
// smoothing; a checkpoint from before them has none.
static int read_training_options_(const SafetensorsFile *f, const char *path,
                                  TranslatorConfig *c, Error *err) {
    c->dec.input_feeding = c->forward_only = c->reverse_only = c->annot_embed = 0;
    c->dropout = c->dec.label_smoothing = 0.0f;
    if (safetensors_meta(f, "translate.input_feeding") &&
        meta_int_(f, path, "translate.input_feeding", 0, 1, &c->dec.input_feeding, err))
        return -1;
    if (safetensors_meta(f, "translate.forward_only") &&
        meta_int_(f, path, "translate.forward_only", 0, 1, &c->forward_only, err))
        return -1;
    if (safetensors_meta(f, "translate.reverse_only") &&
        meta_int_(f, path, "translate.reverse_only", 0, 1, &c->reverse_only, err))
        return -1;
    if (c->forward_only && c->reverse_only)
        return error_set(err, "%s: translate.forward_only and translate.reverse_only both set", path);
    if (safetensors_meta(f, "translate.annot_embed") &&
        meta_int_(f, path, "translate.annot_embed", 0, 1, &c->annot_embed, err))
        return -1;
    if (safetensors_meta(f, "translate.dropout") &&
        safetensors_meta_float(f, path, "translate.dropout", &c->dropout, err))
        return -1;
    if (safetensors_meta(f, "translate.label_smoothing") &&
        safetensors_meta_float(f, path, "translate.label_smoothing", &c->dec.label_smoothing, err))
        return -1;
    if (c->dropout < 0.0f || c->dropout >= 1.0f || c->dec.label_smoothing < 0.0f ||
        c->dec.label_smoothing >= 1.0f)
        return error_set(err, "%s: translate.dropout %g and translate.label_smoothing %g must lie "
                         "in [0, 1)", path, (double)c->dropout, (double)c->dec.label_smoothing);
    c->dec.dropout = c->dropout;
    return 0;
}

// The Transformer's sizes, dropout, smoothing and schedule.
static int read_transformer_(const SafetensorsFile *f, const char *path, TranslateState *s,
                             Error *err) {
    TtConfig *t = &s->tt;
    memset(t, 0, sizeof *t);
    if (meta_int_(f, path, "translate.d_model", 1, 65536, &t->d_model, err) ||
        meta_int_(f, path, "translate.heads", 1, 65536, &t->heads, err) ||
        meta_int_(f, path, "translate.d_ff", 1, 1 << 20, &t->d_ff, err) ||
        meta_int_(f, path, "translate.enc_layers", 1, TRANSFORMER_MAX_LAYERS, &t->enc_layers, err) ||
        meta_int_(f, path, "translate.dec_layers", 1, TRANSFORMER_MAX_LAYERS, &t->dec_layers, err) ||
        meta_int_(f, path, "translate.post_ln", 0, 1, &t->post_ln, err) ||
        meta_int_(f, path, "translate.positions", 1, 1 << 20, &t->positions, err) ||
        meta_int_(f, path, "translate.map_layer", -1, TRANSFORMER_MAX_LAYERS, &t->map_layer, err) ||
        meta_int_(f, path, "translate.warmup", 0, INT_MAX, &s->warmup, err) ||
        safetensors_meta_float(f, path, "translate.dropout", &t->dropout, err) ||
        safetensors_meta_float(f, path, "translate.label_smoothing", &t->label_smoothing, err))
        return -1;
    return translate_tt_finish(s, err) ? error_prefix(err, "%s", path) : 0;
}

// The optimiser's settings; train.lr_decay (the learning rate's factor per epoch) is 1 in a
// checkpoint from before it.
static int read_optim_(const SafetensorsFile *f, const char *path, TranslateState *s, Error *err) {
    s->optim.lr_decay = 1.0f;
    const unsigned with = TRAIN_OPTIM_BETA1 |
                          (safetensors_meta(f, "train.lr_decay") ? TRAIN_OPTIM_LR_DECAY : 0u);
    return train_optim_read(f, path, with, TRANSLATE_BATCH_MAX, &s->optim, err);
}

// The LSTM's sizes, attention and options.
static int read_lstm_(const SafetensorsFile *f, const char *path, TranslateState *s, Error *err) {
    TranslatorConfig *c = &s->cfg;
    const char *att = safetensors_meta(f, "translate.attention");
    if (!att || (s->attention = translate_attention_parse(att)) < 0)
        return error_set(err, "%s: translate.attention '%s' is not one this program knows", path,
                         att ? att : "missing");
    if (meta_int_(f, path, "translate.embed", 1, 65536, &c->Es, err) ||
        meta_int_(f, path, "translate.hidden", 1, 65536, &c->He, err) ||
        meta_int_(f, path, "translate.dec_embed", 1, 65536, &c->dec.E, err) ||
        meta_int_(f, path, "translate.dec_hidden", 1, 131072, &c->dec.H, err) ||
        meta_int_(f, path, "translate.attn_size", 1, 65536, &c->dec.attn.A, err) ||
        meta_int_(f, path, "translate.window", 0, 4096, &c->dec.attn.window, err))
        return -1;
    if (read_training_options_(f, path, c, err)) return -1;
    const TranslateAttention a = translate_attention(s->attention);
    c->dec.attn.kind = a.kind, c->dec.query = a.query, c->dec.nb = 1;
    if (c->dec.input_feeding && a.query != DECODER_QUERY_CURRENT)
        return error_set(err, "%s: translate.input_feeding with %s attention, which queries the "
                         "previous state", path, att);
    if (a.kind == ATTN_DOT &&
        (c->forward_only || c->reverse_only || c->annot_embed || c->dec.H != 2 * c->He))
        return error_set(err, "%s: luong-dot needs translate.dec_hidden %d = 2 x translate.hidden %d "
                         "and both directions, without translate.annot_embed", path, c->dec.H,
                         c->He);
    if (c->annot_embed && a.kind == ATTN_NONE)
        return error_set(err, "%s: translate.annot_embed with attention none (one fixed context, "
                         "no token to embed)", path);
    translator_config_finish(c);
    return 0;
}

// The model kind: "translate.model", or the LSTM for a checkpoint from before it.
static int read_model_kind_(const SafetensorsFile *f, const char *path, TranslateState *s,
                            Error *err) {
    const char *kind = safetensors_meta(f, "translate.model");
    s->model = TRANSLATE_MODEL_LSTM;
    if (!kind) return 0;
    for (int i = 0; TRANSLATE_MODELS[i]; i++)
        if (strcmp(kind, TRANSLATE_MODELS[i]) == 0) return s->model = i, 0;
    return error_set(err, "%s: translate.model '%s' is not one this program knows (lstm, "
                     "transformer)", path, kind);
}

// The vocabularies against the data: the date task's alphabets, or the BPE model.
static int read_vocabulary_(const SafetensorsFile *f, const char *path, TranslateState *s,
                            Error *err) {
    TranslatorConfig *c = &s->cfg;
    PairsSpec spec;
    if (pairs_spec_parse(&spec, s->data, err)) return error_prefix(err, "%s: train.data", path);
    const char *bpe = safetensors_meta(f, "translate.bpe");
    const int dates_vs = 1 + (int)strlen(DATES_SOURCE_ALPHABET);
    const int dates_v = VOCAB_NSPECIAL + (int)strlen(DATES_TARGET_ALPHABET);
    if (spec.kind == PAIRS_SPEC_DATES && (c->Vs != dates_vs || c->dec.V != dates_v))
        return error_set(err, "%s: vocabularies of %d and %d for the date task (its are %d and %d)",
                         path, c->Vs, c->dec.V, dates_vs, dates_v);
    if (spec.kind == PAIRS_SPEC_DATES) return 0;
    if (!bpe) return error_set(err, "%s: no \"translate.bpe\" in __metadata__ for data %s", path, s->data);
    Error e2;
    if (bpe_from_text(&s->bpe, bpe, strlen(bpe), "translate.bpe", &e2))
        return error_wrap(err, &e2, "%s", path);
    s->has_bpe = true;
    if (s->bpe.n_vocab != c->Vs || s->bpe.n_vocab != c->dec.V) {
        translate_state_free(s);
        return error_set(err, "%s: translate.bpe holds %d pieces for vocabularies of %d and %d",
                         path, s->bpe.n_vocab, c->Vs, c->dec.V);
    }
    return 0;
}

int translate_checkpoint_read_state(const SafetensorsFile *f, const char *path,
                                    TranslateState *s, Error *err) {
    memset(s, 0, sizeof *s);
    const char *fmt = safetensors_meta(f, "format");
    if (!fmt || strcmp(fmt, TRANSLATE_FORMAT) != 0)
        return error_set(err, "%s: not a text translate checkpoint (format '%s', expected %s)",
                         path, fmt ? fmt : "missing", TRANSLATE_FORMAT);
    TranslatorConfig *c = &s->cfg;
    const char *data = safetensors_meta(f, "train.data");
    if (!data) return error_set(err, "%s: not a text translate checkpoint (no \"train.data\" in __metadata__)", path);
    if (read_model_kind_(f, path, s, err) ||
        meta_int_(f, path, "translate.src_vocab", 1, 10000000, &c->Vs, err) ||
        meta_int_(f, path, "translate.tgt_vocab", VOCAB_NSPECIAL + 1, 10000000, &c->dec.V, err) ||
        meta_int_(f, path, "translate.max_src", 1, 4096, &c->S, err) ||
        meta_int_(f, path, "translate.max_len", 1, 4096, &c->max_len, err) ||
        meta_int_(f, path, "translate.train_size", 0, INT_MAX, &s->train_size, err) ||
        meta_int_(f, path, "translate.bpe_merges", 0, BPE_MAX_MERGES, &s->bpe_merges, err) ||
        safetensors_meta_long(f, path, "train.step", "a text translate checkpoint", 0, LONG_MAX,
                              &s->step, err) ||
        read_optim_(f, path, s, err))
        return -1;
    if (s->model == TRANSLATE_MODEL_TRANSFORMER ? read_transformer_(f, path, s, err)
                                                : read_lstm_(f, path, s, err))
        return -1;
    snprintf(s->data, sizeof s->data, "%s", data);
    return read_vocabulary_(f, path, s, err);
}

int translate_model_load(TranslateModel *tm, const char *path, int B, Error *err) {
    memset(tm, 0, sizeof *tm);
    SafetensorsFile f;
    if (safetensors_load(&f, path, err)) return -1;
    int rc = translate_checkpoint_read_state(&f, path, &tm->state, err);
    if (rc == 0) {
        Rng rng;
        rng_seed(&rng, 1);
        const bool tt = tm->state.model == TRANSLATE_MODEL_TRANSFORMER;
        if (tt) tt_init(&tm->tt, &tm->state.tt, B, &rng);
        else translator_init(&tm->m, &tm->state.cfg, B, &rng);
        rc = train_checkpoint_read(tt ? &tm->tt.params : &tm->m.params, NULL, NULL, &f, path, err);
        if (rc) translate_model_free(tm);
    }
    safetensors_free(&f);
    return rc;
}

void translate_model_free(TranslateModel *tm) {
    if (tm->state.model == TRANSLATE_MODEL_TRANSFORMER) tt_free(&tm->tt);
    else translator_free(&tm->m);
    translate_state_free(&tm->state);
}
