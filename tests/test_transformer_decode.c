// test_transformer_decode.c: incremental decoding (seq/transformer_decode.h) against the full
// causal pass of the decoder stack (seq/transformer.h tf_decoder_forward), for pre-LN with the
// final norm and post-LN without, two layers, memory lengths 5 and 3: every step's output
// equals row t of the full pass, and each layer's cross-attention weights equal the full
// pass's row t, within 1e-5 + 1e-4 |full| (the same sums in other orders: GEMMs of other
// sizes). Also: a second sequence decoded with the same state after tf_decode_start on a new
// memory matches its own full pass (the first one's cached positions are never read); after
// tf_decode_gather (beam search's parent rows: images swapped and doubled) every row goes on
// as its parent's image's full pass.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/rng.h"
#include "seq/transformer.h"
#include "seq/transformer_decode.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"

enum { B = 2, T = 5, S = 6, D = 8, H = 2, F = 12 };
static const int mem_lengths[B] = {6, 3};

typedef struct {
    TransformerConfig c;
    Block params, acts, state;
    TfDecoderParams p;
    TfStackActs x;
    TfDecodeState s;
    float in[B * T * D], mem[B * S * D];
} Dec;

static void dec_init(Dec *d, int post_ln, uint64_t seed) {
    memset(d, 0, sizeof *d);
    d->c = transformer_config_default(D, H, F, 2, T);
    d->c.dropout = 0.1f;  // no effect: decoding and the NULL-rng pass draw no masks
    d->c.post_ln = post_ln, d->c.final_norm = !post_ln;
    tf_decoder_params_layout(&d->params, &d->p, &d->c, "dec");
    tf_decoder_acts_layout(&d->acts, &d->x, &d->c, B, T, S, "dec");
    tf_decode_layout(&d->state, &d->s, &d->c, 2 * B, T, S, "decode");  // room for gather's rows
    block_alloc(&d->params), block_alloc(&d->acts), block_alloc(&d->state);
    Rng rng;
    rng_seed(&rng, seed);
    tf_decoder_params_init(&d->p, &d->c, &rng);
    for (size_t i = 0; i < d->params.numel; i++) d->params.data[i] += 0.1f * (rng_uniform(&rng) - 0.5f);
    fill_uniform(d->in, B * T * D, -1, 1, &rng);
    fill_uniform(d->mem, B * S * D, -1, 1, &rng);
}

static void dec_free(Dec *d) {
    block_free(&d->params), block_free(&d->acts), block_free(&d->state);
}

static void check_steps(Dec *d) {
    tf_decoder_forward(&d->x, d->in, d->mem, NULL, mem_lengths, &d->p, &d->c, NULL);
    tf_decode_start(&d->s, d->mem, B, &d->p, &d->c);
    float xt[B * D], out[B * D];
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < B; b++) memcpy(xt + b * D, d->in + (b * T + t) * D, D * sizeof(float));
        tf_decode_step(out, &d->s, xt, B, t, mem_lengths, &d->p, &d->c);
        for (int b = 0; b < B; b++)
            for (int k = 0; k < D; k++) EXPECT_NEAR(out[b * D + k], d->x.out[(b * T + t) * D + k], 1e-5, 1e-4);
        for (int l = 0; l < d->c.layers; l++) {
            const float *full = transformer_decoder_cross_weights(&d->x, l);
            for (int b = 0; b < B; b++)
                for (int j = 0; j < S; j++)
                    EXPECT_NEAR(d->s.cross_weights[l][b * S + j], full[(b * T + t) * S + j], 1e-6, 1e-5);
        }
    }
}

static void test_decode_pre_ln_equals_full_pass(void) {
    Dec d;
    dec_init(&d, 0, 1);
    check_steps(&d);
    dec_free(&d);
}

static void test_decode_post_ln_equals_full_pass(void) {
    Dec d;
    dec_init(&d, 1, 2);
    check_steps(&d);
    dec_free(&d);
}

// A second sequence decoded with the same state after a new start: the first one's cached
// positions are overwritten step by step, never read (step t sees 0..t only).
static void test_decode_reuses_state(void) {
    Dec d;
    dec_init(&d, 0, 3);
    check_steps(&d);
    for (int i = 0; i < B * T * D; i++) d.in[i] = -d.in[i];
    for (int i = 0; i < B * S * D; i++) d.mem[i] *= 0.5f;
    check_steps(&d);
    dec_free(&d);
}

// Beam search's reordering: after steps 0..2 of both images, rows {1, 0, 0, 1} (four rows,
// each image twice, swapped) continue from their parents; steps 3.. of row r must equal the
// full pass of image parent[r].
static void test_decode_gather(void) {
    enum { N = 2 * B, T0 = 3 };
    static const int parent[N] = {1, 0, 0, 1};
    Dec d;
    dec_init(&d, 0, 4);
    tf_decoder_forward(&d.x, d.in, d.mem, NULL, mem_lengths, &d.p, &d.c, NULL);
    tf_decode_start(&d.s, d.mem, B, &d.p, &d.c);
    float xt[N * D], out[N * D];
    for (int t = 0; t < T0; t++) {
        for (int b = 0; b < B; b++) memcpy(xt + b * D, d.in + (b * T + t) * D, D * sizeof(float));
        tf_decode_step(out, &d.s, xt, B, t, mem_lengths, &d.p, &d.c);
    }
    tf_decode_gather(&d.s, N, parent, T0, &d.c);
    int lengths[N];
    for (int r = 0; r < N; r++) lengths[r] = mem_lengths[parent[r]];
    for (int t = T0; t < T; t++) {
        for (int r = 0; r < N; r++) memcpy(xt + r * D, d.in + (parent[r] * T + t) * D, D * sizeof(float));
        tf_decode_step(out, &d.s, xt, N, t, lengths, &d.p, &d.c);
        for (int r = 0; r < N; r++)
            for (int k = 0; k < D; k++)
                EXPECT_NEAR(out[r * D + k], d.x.out[(parent[r] * T + t) * D + k], 1e-5, 1e-4);
    }
    dec_free(&d);
}

int main(void) {
    RUN(test_decode_pre_ln_equals_full_pass);
    RUN(test_decode_post_ln_equals_full_pass);
    RUN(test_decode_reuses_state);
    RUN(test_decode_gather);
    return test_summary();
}
