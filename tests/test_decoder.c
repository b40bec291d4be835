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
// - The decoding step over rows padded to L with lengths equals each row alone, both query
//   orders (the captioner's beam search through it is checked in tests/test_sat.c and
//   tests/test_cli_caption.c).
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

// One step's buffers for n rows, with their own memory.
typedef struct {
    DecoderStep s;
    float *mem;
} StepBufs;

static void step_bufs_alloc(StepBufs *b, const DecoderConfig *c, int n) {
    memset(b, 0, sizeof *b);
    const size_t H = c->H, D = c->D, E = c->E, L = c->L;
    const size_t cache = attn_step_cache_floats(&c->attn, n, c->L);
    const size_t sizes[] = {n * H, n * H, n * D, n * L, cache + 1, n * (size_t)c->nb, n * D,
                            n * E, n * (E + D), n * (E + D + H), n * 4 * H, n * E,
                            n * (size_t)c->V};
    float **dst[] = {&b->s.hn, &b->s.cn, &b->s.ctx, &b->s.alpha, &b->s.cache, &b->s.beta,
                     &b->s.z, &b->s.emb, &b->s.xin, &b->s.xh, &b->s.gates, &b->s.o,
                     &b->s.logits};
    size_t total = 0;
    for (int i = 0; i < 13; i++) total += sizes[i];
    b->mem = xcalloc(total, sizeof(float));
    float *q = b->mem;
    for (int i = 0; i < 13; i++) *dst[i] = q, q += sizes[i];
}

// decoder_step_forward over text-like rows padded to L with lengths equals each row alone
// (L = its length), for both query orders: the new states, the attention, z and the logits
// (up to 1e-6 + 1e-5 |ref|: gemm() over other row counts). Padded keys are NaN: never read.
static void test_step_with_lengths_matches_unpadded(void) {
    for (int query = 0; query <= 1; query++) {
        DecoderConfig c = config(1);
        c.query = (DecoderQuery)query;
        const int n = 3, L = c.L, D = c.D, H = c.H;
        const int lengths[3] = {6, 3, 1}, token[3] = {2, 5, 1};
        Block blk = {0};
        DecoderParams p;
        decoder_params_layout(&blk, &p, &c);
        block_alloc(&blk);
        Rng rng;
        rng_seed(&rng, 21 + (uint64_t)query);
        decoder_params_init(&p, &c, &rng);
        float keys[3 * 6 * 4], h[3 * 5], cs[3 * 5], zp[3 * 4];
        for (int i = 0; i < n * L * D; i++) keys[i] = 2.0f * rng_uniform(&rng) - 1.0f;
        for (int b = 0; b < n; b++)
            for (int i = lengths[b] * D; i < L * D; i++) keys[(size_t)b * L * D + i] = NAN;
        for (int i = 0; i < n * H; i++) h[i] = rng_uniform(&rng) - 0.5f, cs[i] = rng_uniform(&rng) - 0.5f;
        for (int i = 0; i < n * D; i++) zp[i] = rng_uniform(&rng) - 0.5f;
        const size_t prep1 = attn_prep_floats(&c.attn, 1, L);
        float *prep = xcalloc((size_t)n * prep1 + 1, sizeof(float));
        for (int b = 0; b < n; b++)  // per row over its own positions (the padding is NaN)
            attn_prepare(prep + (size_t)b * prep1, keys + (size_t)b * L * D, &p.attn, &c.attn, 1,
                         lengths[b]);
        StepBufs all;
        step_bufs_alloc(&all, &c, n);
        all.s.keys = keys, all.s.prep = prep, all.s.lengths = lengths;
        all.s.h = h, all.s.c = cs, all.s.zp = zp;
        decoder_step_forward(&all.s, token, &p, &c, 2, n);
        for (int b = 0; b < n; b++) {
            DecoderConfig c1 = c;
            c1.L = lengths[b];
            StepBufs one;
            step_bufs_alloc(&one, &c1, 1);
            one.s.keys = keys + (size_t)b * L * D, one.s.prep = prep + (size_t)b * prep1;
            one.s.h = h + (size_t)b * H, one.s.c = cs + (size_t)b * H, one.s.zp = zp + (size_t)b * D;
            decoder_step_forward(&one.s, token + b, &p, &c1, 2, 1);
            for (int j = 0; j < H; j++) {
                EXPECT_NEAR(all.s.hn[b * H + j], one.s.hn[j], 1e-6, 1e-5);
                EXPECT_NEAR(all.s.cn[b * H + j], one.s.cn[j], 1e-6, 1e-5);
            }
            for (int i = 0; i < L; i++) {
                if (i < lengths[b]) EXPECT_NEAR(all.s.alpha[b * L + i], one.s.alpha[i], 1e-6, 1e-5);
                else EXPECT(all.s.alpha[b * L + i] == 0.0f, "alpha past the length");
            }
            for (int d = 0; d < D; d++) EXPECT_NEAR(all.s.z[b * D + d], one.s.z[d], 1e-6, 1e-5);
            for (int v = 0; v < c.V; v++)
                EXPECT_NEAR(all.s.logits[b * c.V + v], one.s.logits[v], 1e-6, 1e-5);
            free(one.mem);
        }
        free(all.mem);
        free(prep);
        block_free(&blk);
    }
}

int main(void) {
    RUN(test_layout_names_and_order);
    RUN(test_sat_params_are_the_decoders);
    RUN(test_mean_over_lengths);
    RUN(test_initial_state_and_gate);
    RUN(test_step_with_lengths_matches_unpadded);
    return test_summary();
}
