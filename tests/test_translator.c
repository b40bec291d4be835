// test_translator.c: the encoder-decoder translator (models/translator.h).
//
// - A whole-model gradient check: the teacher-forced loss against central differences
//   (gradcheck.h: eps 1e-3, |analytic - numeric| <= 1e-3 + 1e-2 max(|.|)), every element of
//   every parameter tensor (source embedding, both encoder directions, the shared decoder),
//   on ragged sources (lengths 4 and 2 of 4) for Bahdanau (additive score, query previous),
//   Luong general (multiplicative, query current), Luong concat (additive, query current)
//   and no attention (the final states as the one fixed context); then Luong general and no
//   attention with input feeding (the attentional vector tanh(W_c [z_t; h_{t+1}]) fed on),
//   and the training pass with dropout 0.3 everywhere (masks re-drawn from one seed at every
//   evaluation, so the loss is a function of the weights) and label smoothing 0.1; and a
//   forward-only encoder (Luong concat, Bahdanau with dropout, no attention); and the source
//   embeddings in the annotations (annot_embed: Luong concat; Luong general with input
//   feeding; forward-only Luong concat with dropout 0.3; Bahdanau with dropout 0.3 and
//   label smoothing 0.1): the embedding's gradient comes by both paths (the LSTMs and the
//   annotations); and a reverse-only encoder (Luong concat, with the embeddings and dropout,
//   no attention).
// - A reverse-only encoder has no forward tensors and reads right to left: an earlier token
//   leaves the later annotations as they were.
// - With annot_embed each annotation is the states then its token's embedding (the dropped
//   one while training), so D grows by Es and the layout gains no tensor.
// - A forward-only encoder has no reverse tensors and is causal: a later token leaves the
//   earlier annotations as they were.
// - Greedy decoding through the decoder's step agrees with the teacher-forced pass, with and
//   without input feeding.
// - Beam search (models/translator_beam.h): beam 1 is greedy (the same words and attention);
//   a beam of 4 finds a hypothesis at least as likely as greedy's (raw log-probability, the
//   greedy one's from the teacher-forced loss), scores it as the teacher-forced pass does and
//   keeps its attention, on small random models with ragged sources.
// - The padding of a source (ids past its length) changes nothing: the loss is the same
//   bit for bit whatever the padding ids are.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/check.h"
#include "core/rng.h"
#include "models/translator.h"
#include "models/translator_beam.h"
#include "tests/support/gradcheck.h"
#include "seq/vocab.h"
#include "tests/support/test.h"
#include "tests/support/tiny.h"

enum { NB = TINY_PAIRS_B, NS = TINY_PAIRS_S, ML = TINY_PAIRS_ML };

typedef struct {
    Translator m;
    Block hg;  // the harness's gradients (the layout of m.grads)
    int src[NB * NS], src_len[NB], words[NB * ML], lens[NB];
    int train;  // forward with translator_forward_train, its rng seeded alike every call
} Fix;

// The options beyond the attention: input feeding, a forward-only encoder, dropout (both),
// label smoothing.
typedef struct {
    int feed, forward, embed, reverse;  // embed: annot_embed; reverse: reverse_only
    float dropout, smoothing;
} FixOptions;

static void fix_init_with(Fix *f, AttnKind kind, DecoderQuery query, uint64_t seed,
                          FixOptions o) {
    memset(f, 0, sizeof *f);
    TranslatorConfig c = {.Vs = 7, .Es = 3, .He = 2, .S = NS, .max_len = ML, .dropout = o.dropout,
                          .forward_only = o.forward, .annot_embed = o.embed,
                          .reverse_only = o.reverse,
                          .dec = {.E = 3, .H = 4, .V = 8, .nb = 1, .query = query,
                                  .input_feeding = o.feed, .dropout = o.dropout,
                                  .label_smoothing = o.smoothing,
                                  .attn = {.kind = kind, .A = 3}}};
    f->train = o.dropout > 0.0f || o.smoothing > 0.0f;
    Rng rng;
    rng_seed(&rng, seed);
    translator_init(&f->m, &c, NB, &rng);
    fill_uniform(f->m.params.data, f->m.params.numel, -0.8f, 0.8f, &rng);
    f->hg = f->m.grads;  // the same layout ...
    f->hg.data = xcalloc(f->m.grads.numel, sizeof(float));  // ... its own floats
    tiny_pairs(f->src, f->src_len, f->words, f->lens);
}

static void fix_init(Fix *f, AttnKind kind, DecoderQuery query, uint64_t seed) {
    fix_init_with(f, kind, query, seed, (FixOptions){0});
}

static void fix_free(Fix *f) {
    free(f->hg.data);
    translator_free(&f->m);
}

static void fix_forward(void *ctx, float *out) {
    Fix *f = ctx;
    Rng rng;
    rng_seed(&rng, 77);
    out[0] = (float)(f->train ? translator_forward_train(&f->m, f->src, f->src_len, f->words,
                                                         f->lens, NB, &rng)
                              : translator_forward(&f->m, f->src, f->src_len, f->words, f->lens, NB));
}

static void fix_backward(void *ctx, const float *dout) {
    Fix *f = ctx;
    float loss;
    fix_forward(f, &loss);
    memset(f->m.grads.data, 0, f->m.grads.numel * sizeof(float));
    translator_backward(&f->m);
    for (size_t i = 0; i < f->m.grads.numel; i++) f->hg.data[i] += f->m.grads.data[i] * dout[0];
}

static void test_whole_model_gradcheck(void) {
    static const struct {
        const char *name;
        AttnKind kind;
        DecoderQuery query;
        FixOptions o;
    } cases[] = {{"Bahdanau (additive, query previous)", ATTN_ADDITIVE, DECODER_QUERY_PREVIOUS, {0}},
                 {"Luong general (multiplicative, query current)", ATTN_MULTIPLICATIVE,
                  DECODER_QUERY_CURRENT, {0}},
                 {"Luong concat (additive, query current)", ATTN_ADDITIVE, DECODER_QUERY_CURRENT,
                  {0}},
                 {"no attention", ATTN_NONE, DECODER_QUERY_CURRENT, {0}},
                 {"Luong general, input feeding", ATTN_MULTIPLICATIVE, DECODER_QUERY_CURRENT,
                  {.feed = 1}},
                 {"no attention, input feeding", ATTN_NONE, DECODER_QUERY_CURRENT, {.feed = 1}},
                 {"Bahdanau, dropout 0.3, label smoothing 0.1", ATTN_ADDITIVE,
                  DECODER_QUERY_PREVIOUS, {.dropout = 0.3f, .smoothing = 0.1f}},
                 {"Luong concat, input feeding, dropout 0.3", ATTN_ADDITIVE,
                  DECODER_QUERY_CURRENT, {.feed = 1, .dropout = 0.3f}},
                 {"Luong concat, forward-only encoder", ATTN_ADDITIVE, DECODER_QUERY_CURRENT,
                  {.forward = 1}},
                 {"Bahdanau, forward-only encoder, dropout 0.3", ATTN_ADDITIVE,
                  DECODER_QUERY_PREVIOUS, {.forward = 1, .dropout = 0.3f}},
                 {"no attention, forward-only encoder", ATTN_NONE, DECODER_QUERY_CURRENT,
                  {.forward = 1}},
                 {"Luong concat, embeddings in the annotations", ATTN_ADDITIVE,
                  DECODER_QUERY_CURRENT, {.embed = 1}},
                 {"Luong general, embeddings in the annotations, input feeding",
                  ATTN_MULTIPLICATIVE, DECODER_QUERY_CURRENT, {.embed = 1, .feed = 1}},
                 {"Luong concat, forward-only, embeddings in the annotations, dropout 0.3",
                  ATTN_ADDITIVE, DECODER_QUERY_CURRENT,
                  {.forward = 1, .embed = 1, .dropout = 0.3f}},
                 {"Bahdanau, embeddings in the annotations, dropout 0.3, smoothing 0.1",
                  ATTN_ADDITIVE, DECODER_QUERY_PREVIOUS,
                  {.embed = 1, .dropout = 0.3f, .smoothing = 0.1f}},
                 {"Luong concat, reverse-only encoder", ATTN_ADDITIVE, DECODER_QUERY_CURRENT,
                  {.reverse = 1}},
                 {"Luong concat, reverse-only, embeddings in the annotations, dropout 0.3",
                  ATTN_ADDITIVE, DECODER_QUERY_CURRENT,
                  {.reverse = 1, .embed = 1, .dropout = 0.3f}},
                 {"no attention, reverse-only encoder", ATTN_NONE, DECODER_QUERY_CURRENT,
                  {.reverse = 1}}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        Fix f;
        fix_init_with(&f, cases[k].kind, cases[k].query, 90 + k, cases[k].o);
        GradcheckOp op = {.ctx = &f, .forward = fix_forward, .backward = fix_backward,
                          .n_out = 1, .eps = 1e-3, .atol = 1e-3, .rtol = 1e-2};
        EXPECT(gradcheck_block(cases[k].name, op, &f.m.params, &f.hg, 100 + k) == 0,
               "%s: gradient check failed", cases[k].name);
        fix_free(&f);
    }
}

static void test_padding_changes_nothing(void) {
    for (int none = 0; none <= 1; none++) {
        Fix f;
        fix_init(&f, none ? ATTN_NONE : ATTN_ADDITIVE, DECODER_QUERY_PREVIOUS, 95);
        float a, b;
        fix_forward(&f, &a);
        f.src[NS + 2] = 6, f.src[NS + 3] = 1;  // row 1's padding (length 2)
        fix_forward(&f, &b);
        EXPECT(a == b, "loss %.9g with other padding, %.9g before", b, a);
        fix_free(&f);
    }
}

// No attention: one annotation per row, the forward direction's state at the row's last
// token beside the reverse direction's at its first.
static void test_fixed_context_is_the_final_states(void) {
    Fix f;
    fix_init(&f, ATTN_NONE, DECODER_QUERY_CURRENT, 96);
    EXPECT(f.m.cfg.dec.L == 1, "no attention: L = %d", f.m.cfg.dec.L);
    float loss;
    fix_forward(&f, &loss);
    const int H = f.m.cfg.He;
    for (int b = 0; b < NB; b++) {
        const float *row = f.m.a.annot + (size_t)b * 2 * H;
        const float *fw = f.m.hs_f + ((size_t)(f.src_len[b] - 1) * NB + b) * H;
        const float *rv = f.m.hs_r + (size_t)b * H;
        EXPECT(memcmp(row, fw, (size_t)H * sizeof(float)) == 0, "row %d: not f at its end", b);
        EXPECT(memcmp(row + H, rv, (size_t)H * sizeof(float)) == 0, "row %d: not r at 0", b);
    }
    fix_free(&f);
}

// A forward-only encoder: no reverse tensors, annotations of He that are the forward LSTM's
// states, and causal: changing row 0's last token leaves its earlier annotations bit for bit
// (a bidirectional encoder's change, the check that the test can see a difference).
static void test_forward_only_encoder_is_causal(void) {
    for (int forward = 1; forward >= 0; forward--) {
        Fix f;
        fix_init_with(&f, ATTN_ADDITIVE, DECODER_QUERY_CURRENT, 97, (FixOptions){.forward = forward});
        const int H = f.m.cfg.He, D = f.m.cfg.dec.D;
        EXPECT(D == (forward ? H : 2 * H), "forward only %d: D = %d", forward, D);
        EXPECT((block_find(&f.m.params, "enc.rev.W") == NULL) == forward, "enc.rev.W in the layout: %d",
               block_find(&f.m.params, "enc.rev.W") != NULL);
        float loss;
        fix_forward(&f, &loss);
        float before[NS * 4];
        memcpy(before, f.m.a.annot, (size_t)NS * D * sizeof(float));  // row 0's annotations
        if (forward)
            for (int i = 0; i < NS; i++)
                EXPECT(memcmp(f.m.a.annot + (size_t)i * D, f.m.hs_f + (size_t)i * NB * H,
                              (size_t)H * sizeof(float)) == 0, "annotation %d is not f_%d", i, i);
        f.src[NS - 1] = f.src[NS - 1] == 3 ? 5 : 3;
        fix_forward(&f, &loss);
        const int same = memcmp(before, f.m.a.annot, (size_t)(NS - 1) * D * sizeof(float)) == 0;
        EXPECT(same == forward, "forward only %d: the earlier annotations %s", forward,
               same ? "kept" : "changed");
        fix_free(&f);
    }
}

// A reverse-only encoder: no forward tensors, annotations of He that are the reverse
// LSTM's states, and anti-causal: changing row 0's first token leaves its later
// annotations bit for bit (the forward-only encoder's change, the check that the test can
// see a difference); with no attention its one annotation is the reverse state at 0.
static void test_reverse_only_encoder(void) {
    for (int reverse = 1; reverse >= 0; reverse--) {
        Fix f;
        fix_init_with(&f, ATTN_ADDITIVE, DECODER_QUERY_CURRENT, 99,
                      (FixOptions){.reverse = reverse, .forward = !reverse});
        const int H = f.m.cfg.He, D = f.m.cfg.dec.D;
        EXPECT(D == H, "reverse only %d: D = %d", reverse, D);
        EXPECT((block_find(&f.m.params, "enc.fwd.W") == NULL) == reverse &&
                   (block_find(&f.m.params, "enc.rev.W") == NULL) == !reverse,
               "reverse only %d: the layout's directions", reverse);
        float loss;
        fix_forward(&f, &loss);
        float before[NS * 4];
        memcpy(before, f.m.a.annot, (size_t)NS * D * sizeof(float));  // row 0's annotations
        if (reverse)
            for (int i = 0; i < NS; i++)
                EXPECT(memcmp(f.m.a.annot + (size_t)i * D, f.m.hs_r + (size_t)i * NB * H,
                              (size_t)H * sizeof(float)) == 0, "annotation %d is not r_%d", i, i);
        f.src[0] = f.src[0] == 4 ? 5 : 4;
        fix_forward(&f, &loss);
        const int same = memcmp(before + D, f.m.a.annot + D, (size_t)(NS - 1) * D * sizeof(float)) == 0;
        EXPECT(same == reverse, "reverse only %d: the later annotations %s", reverse,
               same ? "kept" : "changed");
        fix_free(&f);
    }
    Fix f;
    fix_init_with(&f, ATTN_NONE, DECODER_QUERY_CURRENT, 100, (FixOptions){.reverse = 1});
    float loss;
    fix_forward(&f, &loss);
    const int H = f.m.cfg.He;
    for (int b = 0; b < NB; b++)
        EXPECT(memcmp(f.m.a.annot + (size_t)b * H, f.m.hs_r + (size_t)b * H,
                      (size_t)H * sizeof(float)) == 0, "row %d: the fixed context is not r_0", b);
    fix_free(&f);
}

// annot_embed: each annotation is [f_i; r_i; x_i] (or [f_i; x_i]) with x_i the embedding
// the LSTMs read (with dropout, the masked one, then the annotation's own mask on the
// whole row), D = (2 or 1) He + Es, and the layout is the one without it. Past a row's
// length the annotations are padding (the attention reads none); only positions inside are
// compared.
static void test_annot_embed_layout(void) {
    for (int k = 0; k < 3; k++) {
        const int forward = k == 1, drop = k == 2;
        Fix f, plain;
        fix_init_with(&f, ATTN_ADDITIVE, DECODER_QUERY_CURRENT, 98,
                      (FixOptions){.forward = forward, .embed = 1, .dropout = drop ? 0.5f : 0.0f});
        fix_init_with(&plain, ATTN_ADDITIVE, DECODER_QUERY_CURRENT, 98,
                      (FixOptions){.forward = forward, .dropout = drop ? 0.5f : 0.0f});
        const int H = f.m.cfg.He, E = f.m.cfg.Es, D = f.m.cfg.dec.D, S = (forward ? 1 : 2) * H;
        EXPECT(D == S + E, "case %d: D = %d, states %d + embedding %d", k, D, S, E);
        EXPECT(f.m.params.count == plain.m.params.count, "case %d: %d tensors, %d without",
               k, f.m.params.count, plain.m.params.count);
        float loss;
        fix_forward(&f, &loss);
        int zeros = 0;
        for (int b = 0; b < NB; b++)
            for (int i = 0; i < f.src_len[b]; i++) {
                const float *row = f.m.a.annot + ((size_t)b * NS + i) * D;
                const float *x = f.m.x + ((size_t)i * NB + b) * E;
                const float *am = f.m.amask + ((size_t)b * NS + i) * D;
                for (int e = 0; e < E; e++) {
                    const float want = drop ? x[e] * am[S + e] : x[e];
                    EXPECT(row[S + e] == want, "case %d row %d position %d: embedding %d is %g, "
                           "x %g", k, b, i, e, row[S + e], want);
                    zeros += drop && row[S + e] == 0.0f;
                }
                const float *fw = f.m.hs_f + ((size_t)i * NB + b) * H;
                for (int h = 0; h < H; h++)
                    EXPECT(row[h] == (drop ? fw[h] * am[h] : fw[h]), "case %d row %d position "
                           "%d: state %d is %g, f %g", k, b, i, h, row[h], fw[h]);
            }
        if (drop) EXPECT(zeros > 0, "dropout 0.5 dropped none of the annotations' embeddings");
        fix_free(&f);
        fix_free(&plain);
    }
}

// Greedy decoding through decoder_step_forward agrees with the teacher-forced forward fed
// its own words: at each step the forward's most likely word (the specials but <end> left
// out) is the word greedy chose, its attention rows sum to 1 over the source, and greedy's
// step t weights are the forward's for target t (its row t: one row, decoder_pack_rows).
static void test_greedy_matches_teacher_forcing(void) {
    static const AttnKind kinds[] = {ATTN_ADDITIVE, ATTN_MULTIPLICATIVE, ATTN_NONE,
                                     ATTN_MULTIPLICATIVE, ATTN_NONE, ATTN_ADDITIVE};
    static const DecoderQuery queries[] = {DECODER_QUERY_PREVIOUS, DECODER_QUERY_CURRENT,
                                           DECODER_QUERY_CURRENT, DECODER_QUERY_CURRENT,
                                           DECODER_QUERY_CURRENT, DECODER_QUERY_CURRENT};
    for (int k = 0; k < 6; k++) {  // the last: forward-only, embeddings in the annotations
        Fix f;
        fix_init_with(&f, kinds[k], queries[k], 300 + k,
                      (FixOptions){.feed = k >= 3 && k < 5, .forward = k == 5, .embed = k == 5});
        const int V = f.m.cfg.dec.V, L = f.m.cfg.dec.L;
        for (int b = 0; b < NB; b++) {
            int out[ML], len;
            float alpha[(ML + 1) * NS];
            translator_greedy(&f.m, f.src + b * NS, f.src_len + b, 1, out, &len, alpha);
            EXPECT(len >= 0 && len <= ML, "kind %d row %d: length %d", k, b, len);
            for (int t = 0; t <= len; t++) {
                double sum = 0;
                for (int i = 0; i < L; i++) sum += alpha[t * L + i];
                EXPECT(fabs(sum - 1.0) < 1e-5, "kind %d row %d step %d: attention sums to %g", k, b, t, sum);
            }
            translator_forward(&f.m, f.src + b * NS, f.src_len + b, out, &len, 1);
            for (int t = 0; t <= len; t++) {
                const float *p = f.m.a.probs + (size_t)t * V;  // one row: step t's is row t
                int best = VOCAB_END;
                for (int v = VOCAB_NSPECIAL; v < V; v++)
                    if (p[v] > p[best]) best = v;
                const int want = t < len ? out[t] : VOCAB_END;
                // Greedy's step t recorded the weights the training pass used for target t.
                for (int i = 0; i < L; i++)
                    EXPECT(fabsf(alpha[t * L + i] - f.m.a.alpha[(size_t)t * L + i]) < 1e-6f,
                           "kind %d row %d step %d: greedy's attention %g, the forward's %g", k, b,
                           t, alpha[t * L + i], f.m.a.alpha[(size_t)t * L + i]);
                EXPECT(best == want || (t == ML && want == VOCAB_END), "kind %d row %d step %d: forward's %d, greedy's %d",
                       k, b, t, best, want);
            }
        }
        fix_free(&f);
    }
}


// A small random model for the search tests: 4 sentences of up to 6 tokens, 9 words.
static void beam_model_make(Translator *m, AttnKind kind, DecoderQuery query, int feed,
                            uint64_t seed) {
    TranslatorConfig c = {.Vs = 7, .Es = 4, .He = 3, .S = 6, .max_len = 5,
                          .dec = {.E = 4, .H = 6, .V = 9, .nb = 1, .query = query,
                                  .input_feeding = feed, .attn = {.kind = kind, .A = 4}}};
    Rng rng;
    rng_seed(&rng, seed);
    translator_init(m, &c, 4, &rng);
    fill_uniform(m->params.data, m->params.numel, -1.5f, 1.5f, &rng);
    m->p.dec.b_o[VOCAB_END] += 1.0f;  // most hypotheses end before the limit
}

static const int BEAM_SRC[4 * 6] = {1, 2, 3, 4, 5, 6, 3, 3, 1, 0, 0, 0,
                                    6, 5, 0, 0, 0, 0, 2, 4, 6, 1, 3, 0};
static const int BEAM_LEN[4] = {6, 3, 2, 5};

static void test_beam_one_is_greedy(void) {
    static const AttnKind kinds[] = {ATTN_ADDITIVE, ATTN_MULTIPLICATIVE, ATTN_NONE};
    static const DecoderQuery queries[] = {DECODER_QUERY_PREVIOUS, DECODER_QUERY_CURRENT,
                                           DECODER_QUERY_CURRENT};
    for (int k = 0; k < 3; k++) {
        Translator m;
        beam_model_make(&m, kinds[k], queries[k], k == 1, 400 + k);
        const int ML = m.cfg.max_len, L = m.cfg.dec.L;
        int g[4 * 5], gl[4], b[4 * 5], bl[4];
        float ga[6 * 4 * 6], ba[6 * 4 * 6];
        translator_greedy(&m, BEAM_SRC, BEAM_LEN, 4, g, gl, ga);
        translator_beam(&m, BEAM_SRC, BEAM_LEN, 4, 1, 0.0f, b, bl, NULL, ba);
        for (int r = 0; r < 4; r++) {
            EXPECT(gl[r] == bl[r] && memcmp(g + r * ML, b + r * ML, (size_t)gl[r] * sizeof(int)) == 0,
                   "kind %d row %d: beam 1 gave %d words, greedy %d (or other words)", k, r, bl[r], gl[r]);
            for (int t = 0; t < gl[r]; t++)  // the words' steps (beam keeps no <end>'s)
                for (int i = 0; i < L; i++)
                    EXPECT(ga[(t * 4 + r) * L + i] == ba[(t * 4 + r) * L + i],
                           "kind %d row %d step %d: attention %.9g, greedy's %.9g", k, r, t,
                           ba[(t * 4 + r) * L + i], ga[(t * 4 + r) * L + i]);
        }
        translator_free(&m);
    }
}

static void test_beam_beats_greedy(void) {
    int checked = 0, better = 0;
    for (int k = 0; k < 6; k++) {
        Translator m;
        beam_model_make(&m, k % 2 ? ATTN_MULTIPLICATIVE : ATTN_ADDITIVE,
                        k % 2 ? DECODER_QUERY_CURRENT : DECODER_QUERY_PREVIOUS, k % 2, 500 + k);
        const int ML = m.cfg.max_len;
        int g[4 * 5], gl[4], b[4 * 5], bl[4];
        float score[4], ba[6 * 4 * 6];
        const int L = m.cfg.dec.L;
        translator_beam(&m, BEAM_SRC, BEAM_LEN, 4, 4, 0.0f, b, bl, score, ba);
        translator_greedy(&m, BEAM_SRC, BEAM_LEN, 4, g, gl, NULL);
        for (int r = 0; r < 4; r++) {
            if (gl[r] == ML || bl[r] == ML) continue;  // at the limit: no <end> to score
            const double greedy_lp = -translator_forward(&m, BEAM_SRC + r * 6, BEAM_LEN + r,
                                                         g + r * ML, gl + r, 1);
            const double beam_lp = -translator_forward(&m, BEAM_SRC + r * 6, BEAM_LEN + r,
                                                       b + r * ML, bl + r, 1);
            EXPECT(fabs(beam_lp - score[r]) < 1e-4, "model %d row %d: the search's score %g, the forward's %g",
                   k, r, score[r], beam_lp);
            // The attention kept for each word is its hypothesis's (the forward's row t).
            for (int t = 0; t < bl[r]; t++)
                for (int i = 0; i < L; i++)
                    EXPECT(fabsf(ba[(t * 4 + r) * L + i] - m.a.alpha[(size_t)t * L + i]) < 1e-5f,
                           "model %d row %d step %d: beam's attention %g, the forward's %g", k, r, t,
                           ba[(t * 4 + r) * L + i], m.a.alpha[(size_t)t * L + i]);
            EXPECT(beam_lp >= greedy_lp - 1e-5, "model %d row %d: beam 4 log p %g < greedy's %g", k, r,
                   beam_lp, greedy_lp);
            checked++;
            better += beam_lp > greedy_lp + 1e-5;
        }
        translator_free(&m);
    }
    EXPECT(checked >= 8, "only %d rows ended before the limit", checked);
    EXPECT(better >= 1, "beam 4 never beat greedy in %d rows: the search is not searching", checked);
}

int main(void) {
    RUN(test_whole_model_gradcheck);
    RUN(test_padding_changes_nothing);
    RUN(test_fixed_context_is_the_final_states);
    RUN(test_forward_only_encoder_is_causal);
    RUN(test_reverse_only_encoder);
    RUN(test_annot_embed_layout);
    RUN(test_greedy_matches_teacher_forcing);
    RUN(test_beam_one_is_greedy);
    RUN(test_beam_beats_greedy);
    return test_summary();
}
