// translator_beam.c: beam search over the translator's decoder step (see translator_beam.h).
#include "models/translator_beam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "seq/beam.h"
#include "seq/vocab.h"

// The search's model: every row's state, written by the step. The rows read their
// sentence's keys and attention prep where the encoder left them (m->a.annot, m->a.prep;
// attn_forward_shared), by sent2.
typedef struct {
    Translator *m;
    int B, R, t;                 // sentences, row capacity (B beam), steps taken
    float *h, *c, *zp;           // (R, H), (R, H), (R, D): the last call's rows
    float *h2, *c2, *zp2;        // the same, gathered from the parents
    float *hn, *cn;              // (R, H) the call's new states
    float *ctx, *al, *cache, *beta, *z, *feed, *emb, *xin, *xh, *gates, *o, *logits;
    float *alpha_hist;           // (max_len + 1, R, L): each call's attention by row
    int *sent, *sent2, *len;     // (R) each row's sentence (last call's, gathered), length
    PackedMatrix lstm_Wt;        // the decoder LSTM's weights, packed once for every step
    float *mem;
    int *ints;                   // sent, sent2 and len's memory
} BeamModel;

static void beam_model_init(BeamModel *d, Translator *m, int B, int beam) {
    const DecoderConfig *c = &m->cfg.dec;
    const int L = c->L, D = c->D, E = c->E, H = c->H, V = c->V, I = E + D;
    const int R = B * beam, T = m->cfg.max_len + 1;
    const size_t prep1 = attn_prep_floats(&c->attn, 1, L);
    CHECK(attn_prep_floats(&c->attn, B, L) == (size_t)B * prep1, "attention prep not per sentence");
    memset(d, 0, sizeof *d);
    d->m = m, d->B = B, d->R = R;
    struct {
        float **dst;
        size_t n;
    } bufs[] = {{&d->h, (size_t)R * H}, {&d->c, (size_t)R * H}, {&d->zp, (size_t)R * D},
                {&d->h2, (size_t)R * H}, {&d->c2, (size_t)R * H}, {&d->zp2, (size_t)R * D},
                {&d->hn, (size_t)R * H}, {&d->cn, (size_t)R * H}, {&d->ctx, (size_t)R * D},
                {&d->al, (size_t)R * L}, {&d->cache, attn_step_cache_floats(&c->attn, R, L) + 1},
                {&d->beta, (size_t)R * c->nb}, {&d->z, (size_t)R * D}, {&d->feed, (size_t)R * D},
                {&d->emb, (size_t)R * E}, {&d->xin, (size_t)R * I}, {&d->xh, (size_t)R * (I + H)},
                {&d->gates, (size_t)R * 4 * H}, {&d->o, (size_t)R * E}, {&d->logits, (size_t)R * V},
                {&d->alpha_hist, (size_t)T * R * L}};
    const int n = (int)(sizeof bufs / sizeof bufs[0]);
    size_t total = 0;
    for (int i = 0; i < n; i++) total += bufs[i].n;
    d->mem = xcalloc(total, sizeof(float));  // zp zero: z_{-1}
    float *q = d->mem;
    for (int i = 0; i < n; i++) *bufs[i].dst = q, q += bufs[i].n;
    d->ints = xcalloc((size_t)3 * R, sizeof(int));
    d->sent = d->ints, d->sent2 = d->ints + R, d->len = d->ints + 2 * R;
    // The first call's parents are the sentences: their h_0, c_0 in rows 0..B-1.
    memcpy(d->h, m->a.hs, (size_t)B * H * sizeof(float));
    memcpy(d->c, m->a.cs, (size_t)B * H * sizeof(float));
    for (int b = 0; b < B; b++) d->sent[b] = b;
    decoder_pack_lstm(&d->lstm_Wt, &m->p.dec, c);
}

static void beam_model_free(BeamModel *d) {
    packed_free(&d->lstm_Wt);
    free(d->mem);
    free(d->ints);
}

// Row r continues row parent[r] of the last call: its state and sentence (and so its
// source length, keys and prep).
static void gather_parents_(BeamModel *d, int n, const int *parent) {
    const Translator *m = d->m;
    const DecoderConfig *c = &m->cfg.dec;
    const int D = c->D, H = c->H;
    for (int r = 0; r < n; r++) {
        const int q = parent[r], s = d->sent[q];
        d->sent2[r] = s;
        d->len[r] = m->src_len[s];
        memcpy(d->h2 + (size_t)r * H, d->h + (size_t)q * H, (size_t)H * sizeof(float));
        memcpy(d->c2 + (size_t)r * H, d->c + (size_t)q * H, (size_t)H * sizeof(float));
        memcpy(d->zp2 + (size_t)r * D, d->zp + (size_t)q * D, (size_t)D * sizeof(float));
    }
}

static void beam_step_(void *ctx, int n, const int *parent, const int *token, float *logprobs) {
    BeamModel *d = ctx;
    const TranslatorConfig *tc = &d->m->cfg;
    const DecoderConfig *c = &tc->dec;
    CHECK(n >= 1 && n <= d->R && d->t <= tc->max_len, "rows %d of %d, step %d", n, d->R, d->t);
    gather_parents_(d, n, parent);
    const DecoderStep s = {.keys = d->m->a.annot, .prep = d->m->a.prep, .src = d->sent2,
                           .n_src = d->B, .lengths = c->attn.kind == ATTN_NONE ? NULL : d->len, .h = d->h2,
                           .c = d->c2, .zp = d->zp2, .hn = d->hn, .cn = d->cn, .ctx = d->ctx,
                           .alpha = d->al, .cache = d->cache, .beta = d->beta, .z = d->z,
                           .feed = d->feed, .emb = d->emb, .xin = d->xin, .xh = d->xh,
                           .gates = d->gates, .o = d->o, .logits = d->logits,
                           .lstm_Wt = &d->lstm_Wt};
    decoder_step_forward(&s, token, &d->m->p.dec, c, d->t, n);
    memcpy(d->alpha_hist + (size_t)d->t * d->R * c->L, d->al, (size_t)n * c->L * sizeof(float));
    static const int never[] = {VOCAB_PAD, VOCAB_START, VOCAB_UNK};  // the specials but <end>
    beam_word_logprobs(logprobs, d->logits, n, c->V, never, 3);
    // The new states become this call's rows (query previous never reads zp).
    float *f;
    f = d->h, d->h = d->hn, d->hn = f;
    f = d->c, d->c = d->cn, d->cn = f;
    f = d->zp, d->zp = d->z, d->z = f;
    int *i = d->sent;
    d->sent = d->sent2, d->sent2 = i;
    d->t++;
}

void translator_beam(Translator *m, const int *src, const int *src_len, int B, int beam,
                     float length_alpha, int *out, int *out_len, float *score, float *alpha) {
    const TranslatorConfig *c = &m->cfg;
    const int ML = c->max_len, T = ML + 1, L = c->dec.L;
    CHECK(beam >= 1 && B >= 1 && B <= m->B, "beam %d, batch %d of %d", beam, B, m->B);
    translator_encode(m, src, src_len, B);
    BeamModel d;
    beam_model_init(&d, m, B, beam);
    int *tok = xmalloc((size_t)2 * B * T * sizeof(int)), *rows = tok + (size_t)B * T;
    int *len = xmalloc((size_t)B * sizeof(int));
    float *sc = xmalloc((size_t)B * sizeof(float));
    const BeamConfig bc = {.beam = beam, .max_len = T, .length_alpha = length_alpha,
                           .start_id = VOCAB_START, .end_id = VOCAB_END, .V = c->dec.V};
    beam_search(tok, len, sc, rows, B, &d, beam_step_, &bc);
    if (alpha) memset(alpha, 0, (size_t)T * B * L * sizeof(float));
    for (int b = 0; b < B; b++) {
        // A hypothesis that reached the limit without <end> keeps its first max_len words.
        const int n = len[b] < ML ? len[b] : ML;
        out_len[b] = n;
        memcpy(out + (size_t)b * ML, tok + (size_t)b * T, (size_t)n * sizeof(int));
        if (score) score[b] = sc[b];
        for (int t = 0; alpha && t < len[b] && t < T; t++)
            memcpy(alpha + ((size_t)t * B + b) * L,
                   d.alpha_hist + ((size_t)t * d.R + rows[(size_t)b * T + t]) * L,
                   (size_t)L * sizeof(float));
    }
    free(tok), free(len), free(sc);
    beam_model_free(&d);
}
