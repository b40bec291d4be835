// test_decoder.c: the shared attention decoder (models/decoder.h).
//
// - The parameter layout: the captioner's checkpoint names in the captioner's order, after
//   what the model registered before them, with the shapes of the config; SatParams's
//   decoder views are these (models/sat.h registers nothing else but its encoder).
// - The mean annotation over each row's length: the plain mean of its first lengths[b]
//   positions (padding never read, so NaN there changes nothing); lengths NULL equals
//   lengths all L bit for bit.
// - The initial state and the gate against plain loops in double (|fast - ref| <= 1e-6 +
//   1e-5 |ref|; tanh_fast differs from tanh by 4e-7).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/check.h"
#include "core/rng.h"
#include "models/decoder.h"
#include "models/sat.h"
#include "tests/support/test.h"

static DecoderConfig config(int nb) {
    DecoderConfig c = {.L = 6, .D = 4, .E = 3, .H = 5, .V = 7, .nb = nb,
                       .attn = {.kind = ATTN_ADDITIVE, .D = 4, .H = 5, .A = 3},
                       .query = DECODER_QUERY_CURRENT};
    return c;
}

static void test_layout_names_and_order(void) {
    const char *names[] = {"pre", "init.W_h", "init.b_h", "init.W_c", "init.b_c", "embed",
                           "lstm.W", "lstm.b", "attn.W_k", "attn.W_q", "attn.b", "attn.w",
                           "gate.W", "gate.b", "out.L_h", "out.L_z", "out.L_o", "out.b_o"};
    const int n = (int)(sizeof names / sizeof names[0]);
    DecoderConfig c = config(4);
    Block b = {0};
    float *pre;
    block_add(&b, &pre, "pre", 1, 3);
    DecoderParams p;
    decoder_params_layout(&b, &p, &c);
    EXPECT(b.count == n, "%d tensors, want %d", b.count, n);
    for (int k = 0; k < n && k < b.count; k++)
        EXPECT(strcmp(b.tensors[k].name, names[k]) == 0, "tensor %d is %s, want %s", k,
               b.tensors[k].name, names[k]);
    const DecoderConfig *k = &c;
    const size_t numel[] = {3, (size_t)k->H * k->D, k->H, (size_t)k->H * k->D, k->H,
                            (size_t)k->V * k->E, (size_t)4 * k->H * (k->E + k->D + k->H),
                            4 * (size_t)k->H, (size_t)k->attn.A * k->D, (size_t)k->attn.A * k->H,
                            k->attn.A, k->attn.A, (size_t)k->nb * k->H, k->nb,
                            (size_t)k->E * k->H, (size_t)k->E * k->D, (size_t)k->V * k->E, k->V};
    for (int i = 0; i < n && i < b.count; i++)
        EXPECT(b.tensors[i].numel == numel[i], "%s: %zu floats, want %zu", names[i],
               b.tensors[i].numel, numel[i]);
    block_alloc(&b);
    EXPECT(p.W_h0 == b.data + b.tensors[1].offset && p.b_o == b.data + b.tensors[n - 1].offset,
           "the views point at their tensors");
    Rng rng;
    rng_seed(&rng, 3);
    decoder_params_init(&p, &c, &rng);
    for (int j = 0; j < c.H; j++) EXPECT(p.lstm_b[c.H + j] == 1.0f, "forget gate bias %g", p.lstm_b[c.H + j]);
    for (int j = 0; j < c.H; j++) EXPECT(p.b_h0[j] == 0.0f && p.b_c0[j] == 0.0f, "initial-state bias");
    block_free(&b);
}

// A captioner on features registers no encoder: its Block is the decoder's alone.
static void test_sat_params_are_the_decoders(void) {
    SatConfig sc;
    sat_config_default(&sc);
    sc.feat_L = 9, sc.feat_D = 6, sc.E = 4, sc.H = 5, sc.V = 11, sc.max_len = 4;
    sc.attn.A = 3;
    Error err = {0};
    CHECK(sat_config_finish(&sc, &err) == 0, "config: %s", err.msg);
    Block sb = {0}, db = {0};
    SatParams sp;
    DecoderParams dp;
    sat_params_layout(&sb, &sp, &sc);
    DecoderConfig dc = sat_decoder_config(&sc);
    EXPECT(dc.L == 9 && dc.D == 6 && dc.E == 4 && dc.H == 5 && dc.V == 11 && dc.nb == 1,
           "sat_decoder_config: L %d D %d E %d H %d V %d nb %d", dc.L, dc.D, dc.E, dc.H, dc.V,
           dc.nb);
    decoder_params_layout(&db, &dp, &dc);
    EXPECT(sb.count == db.count && sb.numel == db.numel, "captioner %d tensors %zu floats, "
           "decoder %d tensors %zu floats", sb.count, sb.numel, db.count, db.numel);
    for (int k = 0; k < sb.count && k < db.count; k++)
        EXPECT(strcmp(sb.tensors[k].name, db.tensors[k].name) == 0 &&
                   sb.tensors[k].offset == db.tensors[k].offset,
               "tensor %d: %s, decoder's %s", k, sb.tensors[k].name, db.tensors[k].name);
    block_free(&sb);
    block_free(&db);
}

static void test_mean_over_lengths(void) {
    const int B = 3, L = 5, D = 4;
    float annot[3 * 5 * 4], out[3 * 4], full[3 * 4], out_null[3 * 4];
    Rng rng;
    rng_seed(&rng, 9);
    for (int i = 0; i < B * L * D; i++) annot[i] = 2.0f * rng_uniform(&rng) - 1.0f;
    const int lengths[3] = {5, 2, 1};
    float padded[3 * 5 * 4];
    memcpy(padded, annot, sizeof annot);
    for (int b = 0; b < B; b++)
        for (int l = lengths[b]; l < L; l++)
            for (int d = 0; d < D; d++) padded[((size_t)b * L + l) * D + d] = NAN;
    decoder_mean_annotations(out, padded, lengths, B, L, D);
    for (int b = 0; b < B; b++)
        for (int d = 0; d < D; d++) {
            double s = 0.0;
            for (int l = 0; l < lengths[b]; l++) s += annot[((size_t)b * L + l) * D + d];
            EXPECT_NEAR(out[b * D + d], s / lengths[b], 1e-6, 1e-5);
        }
    const int all[3] = {L, L, L};
    decoder_mean_annotations(full, annot, all, B, L, D);
    decoder_mean_annotations(out_null, annot, NULL, B, L, D);
    EXPECT(memcmp(full, out_null, sizeof full) == 0, "lengths all L differ from NULL");
}

static void test_initial_state_and_gate(void) {
    for (int nb = 1; nb <= 4; nb += 3) {
        DecoderConfig c = config(nb);
        const int B = 2, D = c.D, H = c.H;
        Block b = {0};
        DecoderParams p;
        decoder_params_layout(&b, &p, &c);
        block_alloc(&b);
        Rng rng;
        rng_seed(&rng, 11);
        decoder_params_init(&p, &c, &rng);
        for (size_t i = 0; i < b.numel; i++) b.data[i] = 2.0f * rng_uniform(&rng) - 1.0f;
        float mean[2 * 4], h0[2 * 5], c0[2 * 5], q[2 * 5], ctx[2 * 4], beta[2 * 4], z[2 * 4];
        for (int i = 0; i < B * D; i++) mean[i] = 2.0f * rng_uniform(&rng) - 1.0f;
        for (int i = 0; i < B * D; i++) ctx[i] = 2.0f * rng_uniform(&rng) - 1.0f;
        for (int i = 0; i < B * H; i++) q[i] = 2.0f * rng_uniform(&rng) - 1.0f;
        decoder_initial_state(h0, c0, mean, &p, B, D, H);
        decoder_gate_forward(beta, z, q, ctx, &p, B, H, D, nb);
        for (int r = 0; r < B; r++) {
            for (int j = 0; j < H; j++) {
                double sh = p.b_h0[j], sc = p.b_c0[j];
                for (int d = 0; d < D; d++) {
                    sh += (double)p.W_h0[j * D + d] * mean[r * D + d];
                    sc += (double)p.W_c0[j * D + d] * mean[r * D + d];
                }
                EXPECT_NEAR(h0[r * H + j], tanh(sh), 1e-6, 1e-5);
                EXPECT_NEAR(c0[r * H + j], tanh(sc), 1e-6, 1e-5);
            }
            for (int k = 0; k < nb; k++) {
                double s = p.b_beta[k];
                for (int j = 0; j < H; j++) s += (double)p.W_beta[k * H + j] * q[r * H + j];
                EXPECT_NEAR(beta[r * nb + k], 1.0 / (1.0 + exp(-s)), 1e-6, 1e-5);
            }
            for (int d = 0; d < D; d++)
                EXPECT_NEAR(z[r * D + d], (double)beta[r * nb + (nb == 1 ? 0 : d)] * ctx[r * D + d],
                            1e-7, 1e-6);
        }
        block_free(&b);
    }
}

int main(void) {
    RUN(test_layout_names_and_order);
    RUN(test_sat_params_are_the_decoders);
    RUN(test_mean_over_lengths);
    RUN(test_initial_state_and_gate);
    return test_summary();
}
