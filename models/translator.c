// translator.c: the encoder-decoder translator on the shared decoder (see translator.h).
#include "models/translator.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "seq/embedding.h"
#include "seq/lstm_seq.h"
#include "seq/vocab.h"

void translator_config_finish(TranslatorConfig *c) {
    CHECK(c->Vs >= 1 && c->Es >= 1 && c->He >= 1 && c->S >= 1 && c->max_len >= 1,
          "translator sizes Vs %d Es %d He %d S %d max_len %d", c->Vs, c->Es, c->He, c->S,
          c->max_len);
    CHECK(c->dropout >= 0.0f && c->dropout < 1.0f && c->dec.dropout >= 0.0f &&
              c->dec.dropout < 1.0f && c->dec.label_smoothing >= 0.0f &&
              c->dec.label_smoothing < 1.0f,
          "translator dropout %g, decoder dropout %g, label smoothing %g", (double)c->dropout,
          (double)c->dec.dropout, (double)c->dec.label_smoothing);
    c->dec.L = c->dec.attn.kind == ATTN_NONE ? 1 : c->S;  // none: the one fixed context
    CHECK((c->forward_only == 0 || c->forward_only == 1) &&
              (c->reverse_only == 0 || c->reverse_only == 1) && !(c->forward_only && c->reverse_only),
          "forward_only %d, reverse_only %d", c->forward_only, c->reverse_only);
    CHECK(c->annot_embed == 0 || (c->annot_embed == 1 && c->dec.attn.kind != ATTN_NONE),
          "annot_embed %d (attention %s)", c->annot_embed, attn_kind_name(c->dec.attn.kind));
    c->dec.D = (c->forward_only || c->reverse_only ? 1 : 2) * c->He + (c->annot_embed ? c->Es : 0);
    c->dec.attn.D = c->dec.D;
    c->dec.attn.H = c->dec.H;
    if (c->dec.nb != c->dec.D) c->dec.nb = 1;
}

static void layout_(Block *b, TranslatorParams *p, const TranslatorConfig *c) {
    memset(p, 0, sizeof *p);
    const int E = c->Es, H = c->He;
    block_add(b, &p->src_embed, "src.embed", 2, c->Vs, E);
    if (!c->reverse_only) {
        block_add(b, &p->fwd_W, "enc.fwd.W", 2, 4 * H, E + H);
        block_add(b, &p->fwd_b, "enc.fwd.b", 1, 4 * H);
    }
    if (!c->forward_only) {
        block_add(b, &p->rev_W, "enc.rev.W", 2, 4 * H, E + H);
        block_add(b, &p->rev_b, "enc.rev.b", 1, 4 * H);
    }
    decoder_params_layout(b, &p->dec, &c->dec);
}

static void fill_uniform_(float *x, size_t n, float r, Rng *rng) {
    for (size_t i = 0; i < n; i++) x[i] = (2.0f * rng_uniform(rng) - 1.0f) * r;
}

void translator_init(Translator *m, const TranslatorConfig *cfg, int B, Rng *rng) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    translator_config_finish(&m->cfg);
    const TranslatorConfig *c = &m->cfg;
    CHECK(B >= 1, "translator batch %d", B);
    m->B = B;
    layout_(&m->params, &m->p, c);
    layout_(&m->grads, &m->g, c);
    block_alloc(&m->params);
    block_alloc(&m->grads);
    const int E = c->Es, H = c->He, S = c->S, T = c->max_len + 1;
    fill_uniform_(m->p.src_embed, (size_t)c->Vs * E, 0.1f, rng);
    if (!c->reverse_only)
        fill_uniform_(m->p.fwd_W, (size_t)4 * H * (E + H), 1.0f / sqrtf((float)(E + H)), rng);
    if (!c->forward_only)
        fill_uniform_(m->p.rev_W, (size_t)4 * H * (E + H), 1.0f / sqrtf((float)(E + H)), rng);
    for (int j = H; j < 2 * H; j++) {  // forget gates
        if (!c->reverse_only) m->p.fwd_b[j] = 1.0f;
        if (!c->forward_only) m->p.rev_b[j] = 1.0f;
    }
    decoder_params_init(&m->p.dec, &c->dec, rng);
    // Activations: the decoder's, then the encoder's.
    Block *k = &m->acts_block;
    decoder_acts_layout(k, &m->a, &c->dec, T, B);
    const size_t cache = lstm_seq_cache_floats(S, B, E, H);
    block_add(k, &m->x, "enc.x", 3, S, B, E);
    block_add(k, &m->hs_f, "enc.hs_fwd", 3, S, B, H);
    block_add(k, &m->hs_r, "enc.hs_rev", 3, S, B, H);
    block_add(k, &m->cache_f, "enc.cache_fwd", 1, (int)cache);
    block_add(k, &m->cache_r, "enc.cache_rev", 1, (int)cache);
    block_add(k, &m->dhs_f, "enc.dhs_fwd", 3, S, B, H);
    block_add(k, &m->dhs_r, "enc.dhs_rev", 3, S, B, H);
    block_add(k, &m->dx, "enc.dx", 3, S, B, E);
    block_add(k, &m->scratch, "enc.scratch", 1, (int)lstm_seq_scratch_floats(B, E, H));
    const int drop = c->dropout > 0.0f;  // the masks, or one float each
    block_add(k, &m->xmask, "enc.xmask", 3, drop ? S : 1, drop ? B : 1, drop ? E : 1);
    block_add(k, &m->amask, "enc.amask", 3, drop ? B : 1, drop ? c->dec.L : 1, drop ? c->dec.D : 1);
    block_alloc(k);
    decoder_acts_bind(&m->a);
    m->src_t = xcalloc((size_t)S * B + B, sizeof(int));
    m->src_len = m->src_t + (size_t)S * B;
}

void translator_free(Translator *m) {
    decoder_acts_release(&m->a);
    block_free(&m->acts_block);
    block_free(&m->params);
    block_free(&m->grads);
    free(m->src_t);
    memset(m, 0, sizeof *m);
}

// No attention: the decoder reads one annotation per row, the encoder's final states.
static int fixed_context_(const TranslatorConfig *c) { return c->dec.attn.kind == ATTN_NONE; }

static Decoder view_(Translator *m) {
    Decoder d = {.cfg = m->cfg.dec, .p = &m->p.dec, .g = &m->g.dec, .a = &m->a, .T = m->Tb,
                 .B = m->Bb, .annot_grad = 1,
                 .lengths = fixed_context_(&m->cfg) ? NULL : m->src_len};
    return d;
}

// Row b's annotation i (of L = dec.L): encoder position i, or with a fixed context the final
// states, the forward direction's at the row's last token and the reverse one's at its first.
static int fwd_pos_(const Translator *m, int b, int i) {
    return fixed_context_(&m->cfg) ? m->src_len[b] - 1 : i;
}
static int rev_pos_(const Translator *m, int i) { return fixed_context_(&m->cfg) ? 0 : i; }

// Inverted dropout masks: n floats, each 1 / (1 - p) with probability 1 - p, else 0.
static void draw_mask_(float *mask, size_t n, float p, Rng *rng) {
    const float keep = 1.0f - p, scale = 1.0f / keep;
    for (size_t i = 0; i < n; i++) mask[i] = rng_uniform(rng) < keep ? scale : 0.0f;
}

// Training with dropout: the masks of the source embeddings, the annotations and (the
// decoder's) h before the deep output, drawn in that order from rng; steps past a row's
// end get 1 (no loss reads them).
static void draw_masks_(Translator *m, Rng *rng) {
    const TranslatorConfig *c = &m->cfg;
    const int B = m->Bb, H = c->dec.H;
    DecoderActs *a = &m->a;
    if (c->dropout > 0.0f) {
        draw_mask_(m->xmask, (size_t)c->S * B * c->Es, c->dropout, rng);
        draw_mask_(m->amask, (size_t)B * c->dec.L * c->dec.D, c->dropout, rng);
    }
    if (c->dec.dropout <= 0.0f) return;
    for (int t = 0; t < m->Tb; t++)
        for (int b = 0; b < a->active[t]; b++) {
            float *mask = a->dmask + (decoder_srow(a, t) + b) * H;
            if (t < a->steps[b]) draw_mask_(mask, (size_t)H, c->dec.dropout, rng);
            else for (int i = 0; i < H; i++) mask[i] = 1.0f;
        }
}

// The encoder over rows 0..B-1 (src (B, S), src_len (B)) and the decoder's start: the
// annotations (B, L, D), their mean, h_0, c_0 and the attention's preparation. With
// m->dropping the masks (draw_masks_) scale the embeddings and the annotations.
static void encode_(Translator *m, const int *src, const int *src_len, int B) {
    const TranslatorConfig *c = &m->cfg;
    const int S = c->S, E = c->Es, H = c->He, D = c->dec.D;
    CHECK(B >= 1 && B <= m->B, "batch %d, capacity %d", B, m->B);
    DecoderActs *a = &m->a;
    for (int b = 0; b < B; b++) {
        CHECK(src_len[b] >= 1 && src_len[b] <= S, "source length %d", src_len[b]);
        m->src_len[b] = src_len[b];
        for (int t = 0; t < S; t++) m->src_t[(size_t)t * B + b] = src[(size_t)b * S + t];
    }
    m->Bb = B;
    // Both directions (or the forward one) over each row's length, states as annotations
    // (B, S, D), with annot_embed each position's embedding after them.
    embedding_forward(m->x, m->src_t, m->p.src_embed, S * B, E);
    if (m->dropping)
        for (size_t i = 0; i < (size_t)S * B * E; i++) m->x[i] *= m->xmask[i];
    if (!c->reverse_only)
        lstm_seq_forward(m->hs_f, m->cache_f, m->x, m->p.fwd_W, m->p.fwd_b, m->src_len, NULL,
                         NULL, 0, S, B, E, H);
    if (!c->forward_only)
        lstm_seq_forward(m->hs_r, m->cache_r, m->x, m->p.rev_W, m->p.rev_b, m->src_len, NULL,
                         NULL, 1, S, B, E, H);
    const int L = c->dec.L;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < L; i++) {
            float *row = a->annot + ((size_t)b * L + i) * D;
            const int tf = fwd_pos_(m, b, i), tr = rev_pos_(m, i);
            const int nf = c->reverse_only ? 0 : H;  // the forward state's floats
            if (!c->reverse_only)
                memcpy(row, m->hs_f + ((size_t)tf * B + b) * H, (size_t)H * sizeof(float));
            if (!c->forward_only)
                memcpy(row + nf, m->hs_r + ((size_t)tr * B + b) * H, (size_t)H * sizeof(float));
            if (c->annot_embed)
                memcpy(row + D - E, m->x + ((size_t)i * B + b) * E, (size_t)E * sizeof(float));
        }
    if (m->dropping)
        for (size_t i = 0; i < (size_t)B * L * D; i++) a->annot[i] *= m->amask[i];
    const int *lengths = fixed_context_(c) ? NULL : m->src_len;
    decoder_mean_annotations(a->mean_a, a->annot, lengths, B, L, D);
    decoder_initial_state(a->hs, a->cs, a->mean_a, &m->p.dec, B, D, c->dec.H);
    attn_prepare(a->prep, a->annot, &m->p.dec.attn, &c->dec.attn, B, L);
}

// The teacher-forced pass; rng NULL: evaluation, else training (dropout, smoothing).
static double forward_(Translator *m, const int *src, const int *src_len, const int *words,
                       const int *lens, int B, Rng *rng) {
    const TranslatorConfig *c = &m->cfg;
    DecoderActs *a = &m->a;
    CHECK(B >= 1 && B <= m->B, "batch %d, capacity %d", B, m->B);
    m->Tb = decoder_pack_rows(a, words, lens, B, c->max_len);
    m->Bb = B;
    m->dropping = rng && c->dropout > 0.0f;
    if (rng) draw_masks_(m, rng);
    encode_(m, src, src_len, B);
    // The shared decoder over the encoder's states.
    const Decoder d = view_(m);
    embedding_forward(a->emb, a->in_tok, m->p.dec.embed, a->off[m->Tb], c->dec.E);
    decoder_forward_steps(&d, 0);
    double loss = decoder_output_forward(&d, rng != NULL);
    if (c->dec.lambda > 0.0f) loss += decoder_doubly_stochastic(&d);
    return loss / B;
}

double translator_forward(Translator *m, const int *src, const int *src_len, const int *words,
                          const int *lens, int B) {
    return forward_(m, src, src_len, words, lens, B, NULL);
}

double translator_forward_train(Translator *m, const int *src, const int *src_len,
                                const int *words, const int *lens, int B, Rng *rng) {
    CHECK(rng, "translator_forward_train without its rng");
    return forward_(m, src, src_len, words, lens, B, rng);
}

void translator_encode(Translator *m, const int *src, const int *src_len, int B) {
    m->dropping = 0;
    encode_(m, src, src_len, B);
}

void translator_greedy(Translator *m, const int *src, const int *src_len, int B, int *out,
                       int *out_len, float *alpha) {
    const TranslatorConfig *c = &m->cfg;
    const DecoderConfig *dc = &c->dec;
    const int L = dc->L, D = dc->D, E = dc->E, H = dc->H, V = dc->V, I = E + D;
    const int ML = c->max_len, T = ML + 1;
    m->dropping = 0;
    encode_(m, src, src_len, B);
    const DecoderActs *a = &m->a;
    // Each step's buffers for B rows; h, c start as h_0, c_0; z_{-1} = 0.
    const size_t nH = (size_t)B * H, nD = (size_t)B * D;
    const size_t cache = attn_step_cache_floats(&dc->attn, B, L);
    const size_t total = 4 * nH + 4 * nD + (size_t)B * L + cache + (size_t)B * dc->nb +
                         (size_t)B * E * 2 + (size_t)B * I + (size_t)B * (I + H) +
                         (size_t)B * 4 * H + (size_t)B * V;
    float *buf = xcalloc(total, sizeof(float)), *q = buf;
#define TAKE(n) (q += (n), q - (n))
    float *h = TAKE(nH), *cc = TAKE(nH), *hn = TAKE(nH), *cn = TAKE(nH);
    float *zp = TAKE(nD), *z = TAKE(nD), *ctx = TAKE(nD), *feed = TAKE(nD);
    float *al = TAKE((size_t)B * L);
    float *ch = TAKE(cache), *beta = TAKE((size_t)B * dc->nb), *emb = TAKE((size_t)B * E);
    float *xin = TAKE((size_t)B * I), *xh = TAKE((size_t)B * (I + H));
    float *gates = TAKE((size_t)B * 4 * H), *o = TAKE((size_t)B * E), *logits = TAKE((size_t)B * V);
#undef TAKE
    memcpy(h, a->hs, nH * sizeof(float));
    memcpy(cc, a->cs, nH * sizeof(float));
    int *token = xmalloc((size_t)B * sizeof(int));
    for (int b = 0; b < B; b++) token[b] = VOCAB_START, out_len[b] = -1;
    const int after = dc->query == DECODER_QUERY_CURRENT;
    // The LSTM's weights packed once for every step, as translator_beam does (so that its
    // beam 1 gives these words and weights).
    PackedMatrix lstm_Wt;
    decoder_pack_lstm(&lstm_Wt, &m->p.dec, dc);
    for (int t = 0; t < T; t++) {
        const DecoderStep s = {.keys = a->annot, .prep = a->prep,
                               .lengths = fixed_context_(c) ? NULL : m->src_len, .h = h, .c = cc,
                               .zp = zp, .hn = hn, .cn = cn, .ctx = ctx, .alpha = al,
                               .cache = ch, .beta = beta, .z = z, .feed = feed, .emb = emb, .xin = xin,
                               .xh = xh, .gates = gates, .o = o, .logits = logits,
                               .lstm_Wt = &lstm_Wt};
        decoder_step_forward(&s, token, &m->p.dec, dc, t, B);
        if (alpha) memcpy(alpha + (size_t)t * B * L, al, (size_t)B * L * sizeof(float));
        for (int b = 0; b < B; b++) {
            const float *lg = logits + (size_t)b * V;
            int best = VOCAB_END;  // the specials other than <end> are never written
            for (int v = VOCAB_NSPECIAL; v < V; v++)
                if (lg[v] > lg[best]) best = v;
            if (t == ML) best = VOCAB_END;
            token[b] = best;
            if (out_len[b] < 0) {
                if (best == VOCAB_END) out_len[b] = t;
                else out[(size_t)b * ML + t] = best;
            }
        }
        float *tmp;
        tmp = h, h = hn, hn = tmp;
        tmp = cc, cc = cn, cn = tmp;
        if (after) tmp = zp, zp = z, z = tmp;
    }
    packed_free(&lstm_Wt);
    free(token);
    free(buf);
}

void translator_backward(Translator *m) {
    const TranslatorConfig *c = &m->cfg;
    const int S = c->S, E = c->Es, H = c->He, D = c->dec.D, B = m->Bb;
    const Decoder d = view_(m);
    const int L = c->dec.L;
    decoder_backward(&d, 0.0f, 0);  // into m->g.dec and a.dannot (B, L, D)
    if (m->dropping)
        for (size_t i = 0; i < (size_t)B * L * D; i++) m->a.dannot[i] *= m->amask[i];
    memset(m->dhs_f, 0, (size_t)S * B * H * sizeof(float));
    memset(m->dhs_r, 0, (size_t)S * B * H * sizeof(float));
    for (int b = 0; b < B; b++)
        for (int i = 0; i < L; i++) {
            const float *row = m->a.dannot + ((size_t)b * L + i) * D;
            float *df = m->dhs_f + ((size_t)fwd_pos_(m, b, i) * B + b) * H;
            float *dr = m->dhs_r + ((size_t)rev_pos_(m, i) * B + b) * H;
            const int nf = c->reverse_only ? 0 : H;
            if (!c->reverse_only)
                for (int h = 0; h < H; h++) df[h] += row[h];
            if (!c->forward_only)
                for (int h = 0; h < H; h++) dr[h] += row[nf + h];
        }
    memset(m->dx, 0, (size_t)S * B * E * sizeof(float));
    if (c->annot_embed)  // the annotations' embeddings: the same x the LSTMs read
        for (int b = 0; b < B; b++)
            for (int i = 0; i < L; i++) {
                const float *row = m->a.dannot + ((size_t)b * L + i) * D + D - E;
                float *dx = m->dx + ((size_t)i * B + b) * E;
                for (int e = 0; e < E; e++) dx[e] += row[e];
            }
    if (!c->reverse_only)
        lstm_seq_backward(m->dx, m->g.fwd_W, m->g.fwd_b, m->dhs_f, m->cache_f, m->p.fwd_W,
                          m->src_len, NULL, NULL, 0, m->scratch, S, B, E, H);
    if (!c->forward_only)
        lstm_seq_backward(m->dx, m->g.rev_W, m->g.rev_b, m->dhs_r, m->cache_r, m->p.rev_W,
                          m->src_len, NULL, NULL, 1, m->scratch, S, B, E, H);
    if (m->dropping)
        for (size_t i = 0; i < (size_t)S * B * E; i++) m->dx[i] *= m->xmask[i];
    embedding_backward(m->g.src_embed, m->dx, m->src_t, S * B, E);
}
